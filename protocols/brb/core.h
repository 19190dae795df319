/* core.h - what the four Byzantine reliable broadcast protocols (bracha,
 * echo, coded, amortized) share: the per-sender window of open instances,
 * vote tallies that count each voter once, persistence of our own votes and
 * of what was delivered, delivery with garbage collection, and catch-up.
 *
 * Instances.  An instance is (sender, seq); each node's broadcasts are
 * numbered 0, 1, 2 ...  Only seqs in [low, low + window) of a sender are
 * open, where low is the first seq not yet delivered from it, so a
 * Byzantine sender can hold at most `window` instances of memory; input
 * for older seqs is ignored (already delivered), for newer ones rejected
 * and counted ("beyond window").  A delivered instance is freed at once;
 * what remains is the sender's delivered set (weft/seqset.h), persisted.
 *
 * Messages.  Every BRB message is a msgpack array
 *     [1, type, sender, seq, ...fields]
 * Types 0..15 belong to the protocol; 16 and 17 are the core's catch-up.
 *
 * kv.  The core's keys start with a lower-case letter ("s", "d", "v", "p");
 * a protocol keeps its own keys under upper-case first letters.
 *
 * Votes.  A tally counts one vote per voter per vote kind, whatever digest
 * it names (a second, different vote from the same voter is ignored and
 * counted as equivocation); the protocol asks for the digest that reached
 * a threshold.  Our own votes are persisted (brb_vote_put) before they are
 * sent, in the same callback, and consulted (brb_vote_get) before voting,
 * so a restarted node never votes twice or differently.
 *
 * Catch-up.  Every resend_ms each node multicasts STATUS (per sender its
 * delivered watermark and a bitmap of what it delivered in the window above
 * it, since a Byzantine sender may leave an instance nobody delivers) and
 * asks the protocol to resend its votes for instances open longer than that
 * (brb_proto.resend).  A node that sees a peer missing an instance it
 * delivered sends DELIVERED(sender, seq, payload), for the instances it
 * still retains (the last `retain` per sender, kept in kv).  A node
 * delivers a (sender, seq) it missed once f+1 distinct peers reported the
 * same digest and it holds a payload with that digest: at least one of them
 * is honest and delivered it, so agreement is kept.  This restores totality
 * after a crash-recover or a healed partition, where messages were lost. */
#ifndef WEFT_BRB_CORE_H
#define WEFT_BRB_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"
#include "weft/brb.h"
#include "weft/proto.h"
#include "weft/seqset.h"

#define BRB_VERSION 1

#define BRB_MSG_STATUS 16
#define BRB_MSG_DELIVERED 17

/* Vote kinds, for tallies and persisted votes. */
enum brb_vote_kind {
	BRB_VOTE_ECHO = 0,
	BRB_VOTE_READY = 1,
	BRB_VOTE_CATCHUP = 2, /* DELIVERED reports (core) */
	BRB_VOTE_KINDS = 3,
};

/* Votes for one kind in one instance: who voted, and per digest how many. */
struct brb_tally {
	uint8_t *voted;           /* n bits */
	struct brb_tally_entry {
		uint8_t digest[WEFT_DIGEST_LEN];
		uint32_t count;
	} *entries;
	uint32_t nentries;
};

/* The part of every protocol's instance the core manages; a protocol's
 * instance struct starts with it. */
struct brb_inst {
	uint32_t sender;
	uint64_t seq;
	uint64_t opened_us;       /* for resends */
	struct brb_tally tally[BRB_VOTE_KINDS];
};

struct brb_core;

/* What a protocol gives the core. */
struct brb_proto {
	size_t inst_size;   /* sizeof its instance struct (>= sizeof(struct brb_inst)) */
	/* Frees what the protocol hung on an instance (not the struct itself). */
	void (*inst_clear)(struct brb_core *c, struct brb_inst *i);
	/* Re-sends our votes for an instance open longer than resend_ms. */
	void (*resend)(struct brb_core *c, struct brb_inst *i);
	/* Optional: peer's STATUS shows it lacks (sender, seq), which we
	 * delivered at least resend_ms ago (the core also offers the payload). */
	void (*peer_lacks)(struct brb_core *c, uint32_t peer, uint32_t sender, uint64_t seq);
	/* Optional: i was just created (by any message, a DELIVERED report
	 * too): put back our persisted votes for it, after a restart. */
	void (*inst_restore)(struct brb_core *c, struct brb_inst *i);
	/* Optional: i is delivered, on any path (the protocol's own or the
	 * core's catch-up), and about to be freed: keep what laggards need. */
	void (*inst_delivered)(struct brb_core *c, struct brb_inst *i);
};

struct brb_sender_state {
	struct weft_seqset delivered;
	struct brb_inst **open;   /* window slots, indexed seq % window */
	struct brb_recent {       /* when recent seqs were delivered, indexed seq % window */
		uint64_t seq;
		uint64_t at_us;
	} *recent;
};

struct brb_core {
	struct weft_env *env;
	const struct brb_proto *proto;
	void *owner;               /* the protocol's state */
	uint32_t n, f, self;
	uint32_t echo_quorum;      /* ceil((n + f + 1) / 2) */
	uint32_t ready_quorum;     /* f + 1: READY amplification, catch-up */
	uint32_t deliver_quorum;   /* 2f + 1 */
	uint64_t max_payload;      /* params.max_payload, default 4 MiB */
	uint32_t window;           /* params.window, default 64 */
	uint32_t retain;           /* params.retain, default 128 */
	weft_brb_payload_fn payload_get; /* the parent keeps delivered payloads (retain_from), or NULL */
	void *payload_ctx;
	weft_brb_digest_fn digest_fn;    /* the parent names payloads (digest_with), or NULL: BLAKE2b */
	void *digest_ctx;
	uint64_t resend_us;        /* params.resend_ms, default 500 */
	uint64_t next_seq;         /* our next broadcast */
	struct brb_sender_state *senders;
	uint64_t *answered_us;     /* per peer: 1 + when we last answered its STATUS; 0 never */
	struct weft_mpw out;       /* scratch for encoding */
	/* counters (also reported as env metrics) */
	uint64_t delivered, rejected, beyond_window, duplicates, equivocations, caught_up;
};

/* Sets the core up (thresholds, params, persisted state).  0 or
 * WEFT_EINVAL (bad params, n < 1). */
int brb_core_init(struct brb_core *c, struct weft_env *env, const uint8_t *params, size_t plen,
		  const struct brb_proto *proto, void *owner);
void brb_core_destroy(struct brb_core *c);
/* Arms the catch-up timer (call from the protocol's start). */
void brb_core_start(struct brb_core *c);
/* The core's timer ids are >= BRB_TIMER_BASE; protocols use smaller ones. */
#define BRB_TIMER_BASE (UINT64_C(1) << 40)
/* Handles the core's timers; false when the id is not the core's. */
bool brb_core_on_timer(struct brb_core *c, uint64_t id);

/* Allocates our next instance number and persists the counter. */
uint64_t brb_next_seq(struct brb_core *c);
/* Starts one of our broadcasts of len bytes: 0 and *seq (allocated and
 * persisted), WEFT_ETOOBIG over max_payload, or WEFT_EAGAIN when `window`
 * of our broadcasts are still undelivered (backpressure to the client). */
int brb_own_begin(struct brb_core *c, size_t len, uint64_t *seq);

/* Reads [1, type, sender, seq] of a message; 0 or WEFT_EDECODE.  The
 * reader is left at the first protocol field. */
int brb_read_header(struct weft_mp_reader *r, const uint8_t *msg, size_t len, uint32_t n, uint32_t *count,
		    uint64_t *type, uint32_t *sender, uint64_t *seq);
/* Starts a message [1, type, sender, seq, ...] of `fields` more fields in c->out. */
void brb_write_header(struct brb_core *c, uint64_t type, uint32_t sender, uint64_t seq, uint32_t fields);

/* Instance lookup.  Returns the open instance (created when create is
 * set), or NULL with *why set: 1 already delivered (ignore), 2 beyond the
 * window (reject, counted). */
struct brb_inst *brb_inst_get(struct brb_core *c, uint32_t sender, uint64_t seq, bool create, int *why);
bool brb_is_delivered(const struct brb_core *c, uint32_t sender, uint64_t seq);

/* Adds voter's vote for digest; returns the digest's new count, or 0 when
 * voter had voted already (a repeat, or an equivocation: counted). */
uint32_t brb_tally_add(struct brb_core *c, struct brb_tally *t, uint32_t voter, const uint8_t digest[WEFT_DIGEST_LEN]);
/* The digest with at least `quorum` votes, or NULL. */
const uint8_t *brb_tally_reached(const struct brb_tally *t, uint32_t quorum);
/* Count for one digest. */
uint32_t brb_tally_count(const struct brb_tally *t, const uint8_t digest[WEFT_DIGEST_LEN]);

/* Our persisted vote of kind for (sender, seq): 0 and digest, or WEFT_NOTFOUND. */
int brb_vote_get(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		 uint8_t digest[WEFT_DIGEST_LEN]);
int brb_vote_put(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		 const uint8_t digest[WEFT_DIGEST_LEN]);
/* The same with bytes the protocol keeps beside the digest (the coded
 * BRB's own fragment and proof, resent after a restart).  *extra points
 * into the kv's value: valid until the next kv call. */
int brb_vote_get_extra(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		       uint8_t digest[WEFT_DIGEST_LEN], const uint8_t **extra, size_t *extra_len);
int brb_vote_put_extra(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		       const uint8_t digest[WEFT_DIGEST_LEN], const uint8_t *extra, size_t extra_len);

/* The digest of sender's payload for instance seq: the parent's
 * (weft_brb_ops.digest_with), else BLAKE2b-256. */
void brb_payload_digest(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t *data, size_t len,
			uint8_t out[WEFT_DIGEST_LEN]);

/* Delivers (data with its digest, or an invalid verdict when data is
 * NULL): persists the delivered set and (for catch-up) the payload,
 * upcalls, frees the instance.  i may be NULL for an instance that was
 * never opened here. */
void brb_deliver(struct brb_core *c, struct brb_inst *i, uint32_t sender, uint64_t seq, const uint8_t *data,
		 size_t len, const uint8_t *digest, bool invalid);

/* Gives up on sender's instances below `below`: they count as delivered
 * without an upcall (open ones are freed, later input for them ignored),
 * and when sender is us, our next broadcast is numbered at least `below`.
 * For a layer above that obtained those payloads another way or no longer
 * wants them (the DAG's range fetch and garbage collection).  Every BRB
 * protocol's state begins with its struct brb_core, so a parent hosting one
 * reaches it as the child's state. */
void brb_skip(struct brb_core *c, uint32_t sender, uint64_t below);

/* A payload we delivered and still retain: 0 with *data (valid until the
 * next kv call), *len and *invalid, or WEFT_NOTFOUND. */
int brb_retained_get(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t **data, size_t *len,
		     bool *invalid);

/* Handles the core's own messages (STATUS, DELIVERED).  Returns 1 when the
 * message was not the core's, 0 when handled, negative when rejected (and
 * counted in c->rejected, as malformed input is). */
int brb_core_on_message(struct brb_core *c, uint32_t from, const uint8_t *msg, size_t len);

/* Counts rejected peer input (c->rejected, metric brb.rejected); returns rc. */
int brb_reject(struct brb_core *c, int rc);

/* Writes the core's counters into an info map being built: adds 8 pairs. */
void brb_core_info(struct brb_core *c, struct weft_mpw *w);

/* ---- the family's shared Byzantine strategy ----
 * "equivocate" (weft-sim's adversary fault, weftd --byzantine): the
 * protocol's honest code on an env wrapper that sends the payload of our
 * own broadcasts' first message ([1, 0, us, seq, payload]: SEND, PROPOSE)
 * with its last byte flipped to an audience (params.adversary.audience;
 * default: the upper half of the other nodes) and unchanged to everyone
 * else: two payloads for one instance, which Agreement must survive.
 * coded, whose first message carries fragments, has strategies of its own. */
struct brb_equivocate {
	struct weft_env_wrap wrap; /* what the protocol runs on */
	uint8_t *audience;         /* n flags */
	struct weft_mpw out;
};

/* Sets q up around env: 0, or WEFT_EINVAL for a bad audience. */
int brb_equivocate_init(struct brb_equivocate *q, struct weft_env *env, const uint8_t *params, size_t plen);
void brb_equivocate_free(struct brb_equivocate *q);

/* Defines PREFIX##_strategies[], the strategy "equivocate" of the protocol
 * whose state is struct STATE and whose ops are PREFIX##_init, _start ... */
#define BRB_EQUIVOCATE_STRATEGY(PREFIX, STATE)                                                                   \
	struct PREFIX##_equivocating {                                                                           \
		struct STATE honest; /* first: the honest ops take this state as theirs */                      \
		struct brb_equivocate q;                                                                         \
	};                                                                                                       \
	static int PREFIX##_equivocate_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen) \
	{                                                                                                        \
		struct PREFIX##_equivocating *s = state;                                                         \
		int rc = brb_equivocate_init(&s->q, env, params, plen);                                          \
		return rc ? rc : PREFIX##_init(&s->honest, &s->q.wrap.env, params, plen);                        \
	}                                                                                                        \
	static void PREFIX##_equivocate_destroy(void *state)                                                     \
	{                                                                                                        \
		PREFIX##_destroy(state);                                                                         \
		brb_equivocate_free(&((struct PREFIX##_equivocating *)state)->q);                                \
	}                                                                                                        \
	static const struct weft_proto_ops PREFIX##_equivocate_ops = {                                           \
		.abi = WEFT_PROTO_ABI, .name = #PREFIX "/equivocate",                                            \
		.state_size = sizeof(struct PREFIX##_equivocating), .init = PREFIX##_equivocate_init,           \
		.start = PREFIX##_start, .on_message = PREFIX##_on_message, .on_timer = PREFIX##_on_timer,       \
		.on_request = PREFIX##_on_request, .info = PREFIX##_info, .destroy = PREFIX##_equivocate_destroy, \
	};                                                                                                       \
	static const struct weft_proto_strategy PREFIX##_strategies[] = {                                        \
		{"equivocate", "the first message of our broadcasts carries another payload (its last byte "   \
			       "flipped) to an audience (default: the upper half of the other nodes)",          \
		 &PREFIX##_equivocate_ops},                                                                      \
		{NULL, NULL, NULL},                                                                              \
	}

#endif
