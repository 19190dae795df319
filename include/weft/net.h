/* net.h - the peer transport: authenticated, encrypted TCP links between the
 * members of a committee, on libevent.
 *
 * One link per peer pair.  Both sides dial, the lower-indexed node at once
 * and the higher one only after a grace delay; when both connections
 * complete the handshake, the one dialled by the lower index wins on both
 * sides (a deterministic tie-break) and the other is closed.  A broken link
 * is redialled with exponential backoff and jitter.
 *
 * Messages to a peer are queued per peer (also while it is disconnected),
 * batched into secure-channel records, and written as the socket drains.
 * weft_net_send reports WEFT_EAGAIN above the queue's high-water mark (the
 * message is still queued: slow down) and drops past its hard maximum
 * (counted), so a slow peer shows up as backpressure, never as unbounded
 * memory.
 *
 * Inside a record, messages are framed as u32 length || u8 type || payload
 * (type 0 protocol message, 1 ping, 2 pong).  A message longer than
 * max_frame, a record that fails authentication, a malformed frame, a
 * handshake or a record left incomplete past its timeout: each drops the
 * link, is logged with the peer's address and key, and counts against the
 * peer.  The node keeps serving everyone else. */
#ifndef WEFT_NET_H
#define WEFT_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"
#include "weft/mp.h"

struct event_base;
struct weft_nf;
struct weft_net;

struct weft_net_peer_addr {
	const char *host;
	uint16_t port;
};

struct weft_net_opts {
	struct event_base *base;
	const struct weft_identity *self;
	uint32_t self_index;
	uint32_t n;
	const uint8_t (*keys)[WEFT_PK_LEN];        /* n committee keys */
	const struct weft_net_peer_addr *addrs;    /* n addresses */
	const char *listen_host;                   /* NULL: addrs[self_index] */
	uint16_t listen_port;
	size_t max_frame;
	size_t queue_hwm;
	size_t queue_max;
	uint32_t handshake_timeout_ms;
	uint32_t idle_timeout_ms;
	uint32_t keepalive_ms;
	uint32_t reconnect_min_ms;
	uint32_t reconnect_max_ms;
	struct weft_nf *faults;                    /* NULL: no fault layer */
	/* A protocol message from peer `from` (valid during the call). */
	void (*on_message)(void *ctx, uint32_t from, const uint8_t *msg, size_t len);
	void *ctx;
};

/* Binds the listener and starts dialling.  0, or a negative code (the
 * address in use, say) with a log line naming the address. */
int weft_net_start(struct weft_net **out, const struct weft_net_opts *opts);
void weft_net_stop(struct weft_net *net); /* accepts NULL */

/* Queues msg for peer `to` (a copy is taken).  0; WEFT_EAGAIN when queued
 * but over the high-water mark; WEFT_ETOOBIG when longer than max_frame;
 * WEFT_EINVAL for a bad index or ourselves; WEFT_ECLOSED when dropped
 * because the queue is at its maximum. */
int weft_net_send(struct weft_net *net, uint32_t to, const void *msg, size_t len);

enum weft_net_state {
	WEFT_NET_CONNECTING,   /* dialling or handshaking */
	WEFT_NET_CONNECTED,
	WEFT_NET_BACKOFF,      /* waiting to redial */
};

struct weft_net_peer_stats {
	enum weft_net_state state;
	uint64_t bytes_in, bytes_out;      /* on the wire */
	uint64_t frames_in, frames_out;    /* protocol messages */
	uint64_t queued_bytes;             /* waiting to be written */
	uint64_t dropped;                  /* messages dropped at the queue maximum */
	uint64_t misbehaviour;             /* malformed, unauthenticated or oversized input, timeouts */
	uint64_t connects;                 /* links established */
	uint64_t rtt_us;                   /* last keepalive round trip; 0: not measured yet */
};

int weft_net_peer_stats(const struct weft_net *net, uint32_t peer, struct weft_net_peer_stats *out);
unsigned int weft_net_connected(const struct weft_net *net);
const char *weft_net_state_name(enum weft_net_state s);
/* Refused connections (keys outside the committee, failed handshakes). */
uint64_t weft_net_refused(const struct weft_net *net);

#endif
