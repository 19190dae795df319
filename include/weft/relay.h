/* relay.h - relays for directed topologies: an env wrapper that lets a
 * protocol written for a complete network (every node talks to every
 * other) run where each node reaches only some nodes directly.
 * docs/protocols/relay.md explains the envelope, the graph condition and
 * what a Byzantine relay can do.
 *
 * The protocol parameter `topology` (genesis params) is "complete" (the
 * default: no relay, the protocol gets the host's env itself) or
 * {"directed": L}, L[i] listing the nodes i can send to.  With a directed
 * topology the relayed protocol runs behind weft_relay_env(): a unicast to
 * an out-neighbour leaves unchanged; a multicast, or a unicast to a node we
 * cannot reach, leaves as a signed envelope flooded to our out-neighbours,
 * which verify it, drop copies they have seen, forward it once and deliver
 * it when it is for them.  Incoming messages go through
 * weft_relay_on_message(), which hands the relayed protocol each message as
 * coming from its origin.
 *
 * init refuses a graph in which some f nodes can cut one honest node off
 * from another (weft's protocols need every pair of honest nodes to talk).
 * The struct lives inside its owner's state (the wrapper must not move). */
#ifndef WEFT_RELAY_H
#define WEFT_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/mp.h"
#include "weft/proto.h"

/* The first byte of an envelope: 0xc1 is reserved in msgpack, so no
 * msgpack message and no weft channel byte (at most WEFT_CHILD_MAX_CHANNEL,
 * used below 0x90) starts with it. */
#define WEFT_RELAY_MARKER 0xc1
/* Sequence numbers of one origin a node remembers (its replay window). */
#define WEFT_RELAY_WINDOW 4096

struct weft_relay_window;

struct weft_relay {
	struct weft_env_wrap wrap;      /* what the relayed protocol sees; first member */
	struct weft_env *env;           /* the host's */
	bool active;                    /* a directed topology was given */
	uint32_t *out;                  /* our out-neighbours, ascending */
	uint32_t nout;
	bool *reach;                    /* reach[v]: v is an out-neighbour */
	uint64_t next_seq;              /* our next envelope's sequence number */
	uint64_t reserved;              /* sequence numbers below this are recorded in kv */
	struct weft_relay_window *seen; /* per origin */
	struct weft_mpw scratch;        /* the envelope being sent */
	/* Envelopes made, forwarded, delivered to the relayed protocol,
	 * dropped as already seen (or older than the window), refused
	 * (malformed or wrongly signed). */
	uint64_t originated, forwarded, delivered, duplicates, refused;
};

/* Reads params' `topology` (env->n lists) and, when it is directed, checks
 * it and sets up the wrapper around env.  0, or WEFT_EINVAL with the reason
 * logged (event "relay.topology").  r must be zeroed; free with
 * weft_relay_destroy even when init failed. */
int weft_relay_init(struct weft_relay *r, struct weft_env *env, const uint8_t *params, size_t plen);
void weft_relay_destroy(struct weft_relay *r);

/* The env to give the relayed protocol: the wrapper, or the host's env
 * when there is no directed topology.  Valid as long as r. */
struct weft_env *weft_relay_env(struct weft_relay *r);

/* One incoming message from neighbour `from`.  An envelope is checked,
 * forwarded and, when it is for us, handed to on_message(state, origin,
 * payload); anything else goes to on_message(state, from, msg) as is.
 * Returns on_message's result, 0 for a copy already seen, or a negative
 * code for an envelope refused (the host counts it against `from`). */
int weft_relay_on_message(struct weft_relay *r, uint32_t from, const uint8_t *msg, size_t len,
			  int (*on_message)(void *state, uint32_t from, const uint8_t *msg, size_t len), void *state);

/* Writes the relay's counters as one key/value pair ("relay": {...}, no
 * map header) into w and returns 1; writes nothing and returns 0 when
 * there is no directed topology. */
uint32_t weft_relay_info_fields(const struct weft_relay *r, struct weft_mpw *w);

#endif
