/* chan.h - the payment channel service's shared state (protocols/channel):
 * what channel.c (messages, open, roots, close, the ledger) and paydag.c
 * (each member's chain of payments, checks and balances) both use. */
#ifndef WEFT_PROTOCOLS_CHANNEL_CHAN_H
#define WEFT_PROTOCOLS_CHANNEL_CHAN_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/channel.h"

/* Message types: [1, type, channel id, ...]. */
enum {
	MSG_OPEN = 1,      /* nonce, opener, [[key, host, deposit]...] */
	MSG_OPEN_SIGS = 2, /* stage (0 root 0, 1 open), [[member, sig]...] */
	MSG_ROOT0 = 3,     /* [sig x n]: root 0 signed by all */
	MSG_PROPOSE = 4,   /* payment (consent zeros) */
	MSG_CONSENT = 5,   /* from, seq, hash, consent */
	MSG_REFUSE = 6,    /* from, seq, hash, reason */
	MSG_FINAL = 7,     /* payment */
	MSG_FETCH = 8,     /* member, first seq, last seq */
	MSG_PAYS = 9,      /* [payment...] */
	MSG_ROOT_ASK = 10, /* version, [[seq, head]...], proposer's sig */
	MSG_ROOT_SIGS = 11, /* version, root hash, [[member, sig]...] */
	MSG_ROOT_NACK = 12, /* version, reason */
	MSG_ROOT_ALL = 13, /* version, [[seq, head]...], [sig x n] */
	MSG_CLOSE_ASK = 14, /* version */
	MSG_CLOSE_SIGS = 15, /* version, [[member, sig]...] */
	MSG_CLOSE_NACK = 16, /* version, reason */
	MSG_HEADS = 17,    /* [seq x n]: the chains a member's node holds, to the opener's */
	MSG_TYPES = 18,
};

/* A channel's life at this node. */
enum ch_status {
	CH_SIGNING = 1,  /* open proposed: root 0 and the open being signed */
	CH_OPENING = 2,  /* root 0 all-signed: waiting for the ledger's open */
	CH_ACTIVE = 3,   /* open on the ledger: payments flow */
	CH_CLOSING = 4,  /* a close signed here or a root posted on the ledger: no more payments */
	CH_CLOSED = 5,   /* settled on the ledger */
	CH_FAILED = 6,   /* the ledger refused the open */
};

/* One applied payment of a chain (its seq is its index + 1). */
struct pay {
	uint32_t to;
	uint64_t amount;
	uint8_t hash[32];
};

/* A member's chain of payments as this node holds it. */
struct chain {
	struct pay *p;
	uint64_t np, cap;
	uint64_t out, in;          /* sent and counted received, up to the head */
	uint64_t *counted;         /* [n]: the seq of each other chain counted up to */
	uint64_t *last_to;         /* [n]: the last seq of this chain paying member k */
	bool equivocated;          /* evidence of two payments of one seq is kept */
};

/* A root: a cut of the chains, the balances there, the members' signatures. */
struct root {
	uint64_t version;
	uint64_t seq[WEFT_CHANNEL_MAX];
	uint8_t head[WEFT_CHANNEL_MAX][32];
	uint64_t balance[WEFT_CHANNEL_MAX];
	uint8_t sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
	bool have[WEFT_CHANNEL_MAX];
	uint8_t hash[32];          /* weft_ledger_channel_root_sighash */
	uint8_t frontier[32];
};

/* A payment a hosted member proposed, waiting for the receiver (and,
 * once consented, for the payments ahead of it to be finalized). */
struct proposal {
	struct weft_channel_payment p;
	uint8_t hash[32];
	uint64_t started_us, sent_us;
	bool consented;            /* p.consent holds the receiver's */
};

/* A member's payments in flight, oldest first: a chain ahead of the
 * chain held (seq np+1, np+2, ...). */
struct pipe {
	struct proposal *q;
	uint32_t nq, cap;
};

/* A consent given here for a payment not yet finalized. */
struct given {
	uint32_t payer;
	uint64_t seq;
	uint64_t since_us;
};

/* A message waiting for payments being fetched: kept until they arrive
 * or channel_pay_timeout_ms passes, at most STASH_MAX of them and
 * STASH_BYTES in all per channel (the oldest go first). */
struct stashed {
	uint32_t from;
	uint32_t member;           /* rerun in (member, seq) order: a chain's payments ascending */
	uint64_t seq;
	uint8_t *msg;
	size_t len;
	uint64_t since_us;
};
#define STASH_MAX 4096
/* The most payments a member may have in flight (channel_pipeline). */
#define CHANNEL_PIPELINE_MAX 1024
#define STASH_BYTES ((size_t)16 << 20)

struct chan {
	uint8_t id[32];
	uint8_t nonce[WEFT_LEDGER_CHANNEL_NONCE_LEN];
	uint32_t n, opener;
	uint8_t key[WEFT_CHANNEL_MAX][WEFT_LEDGER_KEY_LEN];
	uint32_t host[WEFT_CHANNEL_MAX];
	uint64_t deposit[WEFT_CHANNEL_MAX];
	bool ours[WEFT_CHANNEL_MAX];
	uint32_t hosts[WEFT_CHANNEL_MAX]; /* the distinct member hosts, in member order */
	uint32_t nhosts;
	uint64_t received[WEFT_CHANNEL_MAX]; /* every payment to each member held here */
	uint8_t status;            /* enum ch_status */
	uint64_t close_version;    /* a cooperative close signed here: its root version + 1; 0 none */
	struct chain chain[WEFT_CHANNEL_MAX];
	struct root latest;        /* the newest root all members signed */
	struct root signing;       /* the root this node's members signed last (version > latest) */
	bool signed_pending;       /* signing holds a root signed here and not yet all-signed */
	struct root build;         /* the opener: a root or root 0 being collected */
	bool building;
	uint64_t build_started_us;
	uint8_t open_sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
	bool open_have[WEFT_CHANNEL_MAX];
	bool open_sent;            /* the opener submitted the open */
	uint8_t close_sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
	bool close_have[WEFT_CHANNEL_MAX];
	bool closer;               /* this node asked for the cooperative close */
	uint64_t close_asked_us;
	struct pipe pipe[WEFT_CHANNEL_MAX];
	struct proposal twin;      /* strategy "equivocate": the double of a payment */
	bool has_twin;
	struct given *given;       /* consents outstanding */
	uint32_t ngiven, givencap;
	struct stashed *stash;
	uint32_t nstash, stashcap;
	size_t stash_bytes;
	bool unstashing;
	uint64_t fetch_upto[WEFT_CHANNEL_MAX]; /* the last fetch asked per chain, and when */
	uint64_t fetch_us[WEFT_CHANNEL_MAX];
	uint64_t rooted;           /* payments in latest */
	uint64_t applied;          /* payments held */
	uint64_t last_root_us;     /* when latest changed */
	uint64_t disputed_version; /* the root version this node last posted on the ledger */
	uint64_t settle_due_us, settle_sent_us;
	uint64_t commit_sent_us;   /* a fallback commit posted (retried only if it did not land) */
	bool commit_seen;          /* a root was posted on the ledger (commit or dispute executed) */
	uint64_t heads_sent_us;    /* our heads last told to the opener's node */
	uint32_t evidence;
	/* the root signatures seen per member at signing's version (evidence of two roots of one version) */
	uint64_t seen_version[WEFT_CHANNEL_MAX];
	uint8_t seen_hash[WEFT_CHANNEL_MAX][32];
	uint8_t seen_sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
};

struct local_msg {
	uint8_t *msg;
	size_t len;
};

struct svc {
	struct weft_env *env;
	const struct weft_wallet_service *wallets;
	const struct weft_event_service *events;
	uint8_t chain_key[32];     /* weft_ledger_chain of params.chain_id */
	struct chan **ch;
	size_t nch, chcap;
	uint64_t tick_us, root_us, pay_timeout_us;
	uint64_t root_every;       /* unrooted payments that make a root at once */
	uint32_t pipeline;         /* payments in flight per member */
	bool ticking;
	bool unsafe_no_chain_check;  /* params.channel_unsafe = "no_chain" (broken variant) */
	bool post_stale;           /* strategy "stale": unilateral closes post root 0 */
	bool overspend;            /* strategy "overspend": proposals beyond the balance */
	bool equivocate;           /* strategy "equivocate": a second payment of the same seq */
	struct weft_mpw out;       /* scratch message writer */
	struct local_msg *loc;     /* messages between members of this node, run before the step ends */
	size_t nloc, loccap;
};

/* ---- paydag.c ---- */

/* The balance of member j at the head of what this node holds:
 * deposit + counted incoming - outgoing. */
uint64_t paydag_balance(const struct chan *c, uint32_t j);
/* Every payment to j this node holds, counted by j's chain or not. */
uint64_t paydag_received(const struct chan *c, uint32_t j);
/* Incoming payments to j beyond counted (what j's chain, and the payments
 * it has in flight, counted): the refs j's next payment would carry (their
 * count) and what they add. */
uint32_t paydag_refs(const struct chan *c, uint32_t j, const uint64_t *counted, struct weft_channel_ref *refs,
		     uint64_t *adds);

/* A member's chain as held, extended by payments not applied yet (the
 * member's own in flight, or those a proposal names ahead of itself). */
struct paytail {
	uint32_t member;
	uint64_t np;
	uint8_t head[32];
	uint64_t in, out;
	uint64_t *counted;         /* [n], owned */
};
void paydag_tail_init(const struct chan *c, uint32_t j, struct paytail *t);
void paydag_tail_free(struct paytail *t);
/* Extends t by p (hash h), unchecked: the member's own payments. */
void paydag_tail_extend(const struct chan *c, struct paytail *t, const struct weft_channel_payment *p,
			const uint8_t h[32]);
/* paydag_check against t, which a success extends by p. */
int paydag_tail_check(struct svc *s, struct chan *c, struct paytail *t, const struct weft_channel_payment *p,
		      const uint8_t h[32], unsigned sigs, const char **why, uint32_t *missing, uint64_t *upto);
/* Checks payment p (hash h) against what this node holds, as its receiver
 * or any member would.  0; WEFT_NOTFOUND when a parent is missing (*missing
 * names a chain and *upto the seq needed); or a negative code with a
 * static *why ("overspend", "equivocation", "bad_signature", "stale",
 * "conflict", ...).  sigs: which signatures to check too, CHECK_SENDER
 * and CHECK_CONSENT for a finalized payment (a proposal has neither: the
 * sender signs once the receiver consented; a receiver compares the
 * consent with the one it gave).  A payment with a seq already held is
 * equivocation only when its sender's signature is checked. */
enum { CHECK_NONE = 0, CHECK_SENDER = 1, CHECK_CONSENT = 2, CHECK_ALL = 3 };
int paydag_check(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const uint8_t h[32],
		 unsigned sigs, const char **why, uint32_t *missing, uint64_t *upto);
/* Applies a checked payment: memory and kv ('p' record). */
int paydag_apply(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const uint8_t h[32]);
/* The payment (from, seq) as stored: 0, WEFT_NOTFOUND. */
int paydag_load(struct svc *s, struct chan *c, uint32_t from, uint64_t seq, struct weft_channel_payment *p);
/* Rebuilds the chains from kv (init). */
int paydag_restore(struct svc *s, struct chan *c);
/* Balances at a cut that extends latest (seq per member): 0, or
 * WEFT_EINVAL when the cut is not held, not closed under refs or
 * overspends. */
int paydag_balances_at(const struct chan *c, const uint64_t *seq, uint64_t *balance);
void paydag_free(struct chan *c);
/* Keeps evidence that member j signed two payments of one seq. */
void paydag_evidence(struct svc *s, struct chan *c, const struct weft_channel_payment *a,
		     const struct weft_channel_payment *b);

/* ---- channel.c, for paydag.c ---- */
void chan_key(uint8_t *k, char tag, const uint8_t id[32]);
void chan_event_payment(struct svc *s, struct chan *c, const char *status, uint32_t from, uint64_t seq, uint32_t to,
			uint64_t amount, const char *reason);
void chan_emit_evidence(struct svc *s, struct chan *c, const char *kind, uint32_t member);

#endif
