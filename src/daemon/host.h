/* host.h - weftd's protocol host: runs a proto.h state machine with an env
 * backed by the peer transport (net/), libevent timers and LMDB, enforcing
 * "persist before send": every send and delivery of a callback is held
 * until the callback's kv writes are committed; a commit that fails rolls
 * the protocols back to the store and pauses the node until it can write.  Also runs the simulator's Byzantine
 * strategies in a real daemon (weftd --byzantine). */
#ifndef WEFT_DAEMON_HOST_H
#define WEFT_DAEMON_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft/kv.h"
#include "weft/mp.h"
#include "weft/proto.h"

struct event_base;
struct weft_net;
struct weft_rpc_server;
struct weft_identity;
struct weft_host;
struct weft_share_service;
struct weft_wallet_service;

enum weft_byzantine {
	WEFT_BYZ_NONE,
	WEFT_BYZ_OMISSION,      /* runs, but sends nothing */
	WEFT_BYZ_CORRUPT,     /* flips one byte of every message it sends */
	WEFT_BYZ_EQUIVOCATE,  /* a twin fed different requests speaks to the upper half of the peers */
};

/* Parses "silent", "corrupt", "equivocate" (and "none").  0 or WEFT_EINVAL. */
int weft_byzantine_parse(const char *s, enum weft_byzantine *out);
const char *weft_byzantine_name(enum weft_byzantine b);

struct weft_host_opts {
	struct event_base *base;
	const struct weft_proto_ops *ops;
	const uint8_t *params;       /* protocol parameters (msgpack map) or NULL */
	size_t plen;
	uint32_t self, n;
	const uint8_t (*keys)[32];   /* committee keys, for verify */
	const struct weft_identity *id;
	struct weft_kv *kv;
	struct weft_net *net;        /* NULL for a one-node committee */
	struct weft_rpc_server *rpc; /* notifications; may be set later */
	const struct weft_share_service *shares; /* the storage service's share store, or NULL */
	const struct weft_wallet_service *wallets; /* the keys of the channel members hosted here, or NULL */
	/* Events protocols emit (weft/channel.h WEFT_EVENT_SERVICE), called
	 * once the step that emitted them is durable; NULL: dropped. */
	void (*on_event)(void *arg, const uint8_t *event, size_t len);
	void *event_arg;
	enum weft_byzantine byzantine;
	/* weftd --trace: the protocol trace (NDJSON, host.c), or NULL. */
	FILE *trace;
	/* Called when a protocol cannot be rebuilt from its store (the node
	 * should stop with an error). */
	void (*on_fatal)(void *arg, int rc);
	void *fatal_arg;
};

int weft_host_start(struct weft_host **out, const struct weft_host_opts *opts);
void weft_host_stop(struct weft_host *h); /* accepts NULL */
void weft_host_set_rpc(struct weft_host *h, struct weft_rpc_server *rpc);

/* A message from the transport. */
void weft_host_on_message(void *host, uint32_t from, const uint8_t *msg, size_t len);
/* An application request (RPC proto.request); reply gets the protocol's map. */
int weft_host_request(struct weft_host *h, const uint8_t *req, size_t len, struct weft_mpw *reply);
/* Several requests in one step (one kv transaction): rcs[i] and replies[i]
 * (initialised writers) get each one's result.  The twin of --byzantine
 * equivocate does not see them.  0 or WEFT_EUNSUPPORTED. */
int weft_host_request_many(struct weft_host *h, size_t count, const uint8_t *const *reqs, const size_t *lens,
			   struct weft_mpw *replies, int *rcs);
/* A read-only question to the protocol (its query op): 0 with one value in
 * reply, WEFT_NOTFOUND when the protocol has no such question, or an error. */
int weft_host_query(struct weft_host *h, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply);
/* Commits the steps of the open group now (peer messages and timers of
 * this event loop turn share one commit; see host.c "group commit"), and
 * lets their messages go: before a write of the share store's own, which
 * must not join them.  0, or the commit's error.  Accepts NULL. */
int weft_host_flush(struct weft_host *h);
/* A command to the protocol (its command op, e.g. "store.place"), run as
 * a step: 0 with one value in reply, WEFT_NOTFOUND when the protocol has
 * no such command, the store's error while the node is paused, or the
 * command's error. */
int weft_host_command(struct weft_host *h, const char *what, const uint8_t *arg, size_t alen,
		      struct weft_mpw *reply);
/* Several commands in one step (one kv commit, one share-store commit):
 * replies[i] (initialised writers) and rcs[i] get each one's result.
 * 0, or the step's store error (then every rcs[i] that was 0 holds it). */
int weft_host_commands(struct weft_host *h, size_t count, const char *const *whats, const struct weft_mpw *args,
		       struct weft_mpw *replies, int *rcs);
/* {protocol, delivered, rejected, ...metrics, state: protocol info} */
void weft_host_info(struct weft_host *h, struct weft_mpw *w);
/* Just the protocol's own info map. */
void weft_host_proto_info(struct weft_host *h, struct weft_mpw *w);
uint64_t weft_host_delivered(const struct weft_host *h);
/* The store: 0 when writes commit, or the error (disk full, map full) that
 * paused the node; it resumes by itself once a probe write commits. */
int weft_host_store_error(const struct weft_host *h);
uint64_t weft_host_failed_commits(const struct weft_host *h);
/* {state: ok|paused, failed_commits, [error, advice, paused_ms]} */
void weft_host_store_info(const struct weft_host *h, struct weft_mpw *w);
/* Calls fn for each protocol metric (for /metrics). */
void weft_host_metrics(const struct weft_host *h, void (*fn)(void *arg, const char *name, int64_t v), void *arg);

#endif
