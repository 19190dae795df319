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
	MSG_UNLOCK_ASK = 18, /* payer, lock seq, preimage: a lock's payee to its payer's node */
	MSG_REFUND_ASK = 19, /* payer, lock seq: a lock's payee gives it up */
	/* atomic service channels (asc.c), [1, type, asc id, ...] */
	MSG_ASC_OPEN = 20,    /* nonce, client, provider, deposit, timeout, client sig, client host */
	MSG_ASC_REQUEST = 21, /* seq, service, payload, price */
	MSG_ASC_OFFER = 22,   /* seq, state, pre-signature, encrypted result, evidence sig */
	MSG_ASC_ACCEPT = 23,  /* seq, client sig */
	MSG_ASC_REVEAL = 24,  /* seq, t */
	MSG_ASC_REFUSE = 25,  /* seq, reason */
	MSG_ASC_CLOSE_ASK = 26, /* state (CLOSED), sig */
	MSG_ASC_CLOSE_SIG = 27, /* seq, sig */
	MSG_TYPES = 28,
};

/* The hops a conditional payment goes on through after its payee: in
 * channel `channel`, from the payee's key (a member there too) to member
 * key `to`, amount, expiring at height expiry.  PROPOSE of a LOCK carries
 * them as a third field [[channel, to, amount, expiry]...]. */
#define ROUTE_MAX 8
struct hop {
	uint8_t channel[32];
	uint8_t to[WEFT_LEDGER_KEY_LEN];
	uint64_t amount, expiry;
};
struct route {
	uint32_t n;
	struct hop hop[ROUTE_MAX];
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
	uint8_t kind;              /* enum weft_channel_kind */
	uint8_t hash[32];
};

/* A LOCK of a chain and what became of it. */
struct lockrec {
	uint64_t seq;              /* the LOCK's seq in its payer's chain */
	uint32_t to;
	uint64_t amount;
	uint8_t hash[32];
	uint64_t expiry;
	uint64_t resolved;         /* the seq of its UNLOCK or REFUND; 0 while open */
	uint64_t acted_us;         /* lock.c: when this node last acted on it (asked, proposed) */
	uint32_t tries;
};

/* A member's chain of payments as this node holds it. */
struct chain {
	struct pay *p;
	uint64_t np, cap;
	uint64_t out, in;          /* sent and counted received, up to the head */
	uint64_t *counted;         /* [n]: the seq of each other chain counted up to */
	uint64_t *last_to;         /* [n]: the last seq of this chain paying member k */
	bool equivocated;          /* evidence of two payments of one seq is kept */
	struct lockrec *locks;     /* every LOCK of the chain, by seq */
	uint32_t nlocks, lockcap, open_locks;
};

/* A root: a cut of the chains, the balances there, the members' signatures. */
struct root {
	uint64_t version;
	uint64_t seq[WEFT_CHANNEL_MAX];
	uint8_t head[WEFT_CHANNEL_MAX][32];
	uint64_t balance[WEFT_CHANNEL_MAX];
	uint32_t nlocks;           /* the locks open at the cut, by (payer, seq) */
	struct weft_ledger_channel_lock lock[WEFT_LEDGER_CHANNEL_LOCKS_MAX];
	uint8_t sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
	bool have[WEFT_CHANNEL_MAX];
	uint8_t hash[32];          /* weft_ledger_channel_root_sighash */
	uint8_t frontier[32];
};

/* A payment a hosted member proposed, waiting for the receiver (and,
 * once consented, for the payments ahead of it to be finalized). */
struct proposal {
	struct weft_channel_payment p;
	struct route route;        /* a LOCK's hops after its payee */
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
	uint64_t claim_sent_us;    /* lock.c: claims last posted */
	bool commit_seen;          /* a root was posted on the ledger (commit or dispute executed) */
	uint64_t heads_sent_us;    /* our heads last told to the opener's node */
	uint32_t evidence;
	/* the root signatures seen per member at signing's version (evidence of two roots of one version) */
	uint64_t seen_version[WEFT_CHANNEL_MAX];
	uint8_t seen_hash[WEFT_CHANNEL_MAX][32];
	uint8_t seen_sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
};

/* An atomic service channel as a node hosting its client or provider
 * holds it (asc.c). */
enum asc_status { ASC_OPENING = 1, ASC_ACTIVE = 2, ASC_CLOSING = 3, ASC_CLOSED = 4, ASC_FAILED = 5 };
enum asc_phase { R_NONE = 0, R_REQUESTED = 1, R_OFFERED = 2, R_ACCEPTED = 3 };
#define ASC_SERVICE_MAX 64
#define ASC_PAYLOAD_MAX (64u << 10)
#define ASC_RESULT_MAX (256u << 10)

/* The round in progress (seq = latest.seq + 1): a request, its offer, the
 * client's signature.  The provider keeps t from the offer on; the client
 * learns it from the reveal (or from a claim on the ledger). */
struct asc_round {
	uint8_t phase;             /* enum asc_phase */
	uint64_t price, started_us, sent_us;
	char service[ASC_SERVICE_MAX + 1];
	uint8_t *payload;
	uint32_t plen;
	uint8_t req[32];           /* the request hash */
	struct weft_ledger_asc_state st;
	uint8_t presig[65], evidence[WEFT_LEDGER_SIG_LEN], csig[WEFT_LEDGER_SIG_LEN], t[32];
	uint8_t *enc;              /* the encrypted result */
	uint32_t elen;
};

struct asc {
	uint8_t id[32];
	struct weft_ledger_asc_open open;
	uint32_t client_host, provider_host;
	bool client_here, provider_here;
	uint8_t status;            /* enum asc_status */
	uint64_t expires;          /* from the ledger's record, once open */
	struct weft_ledger_asc_state latest; /* signed by both (seq 0: the deposit, unsigned) */
	uint8_t latest_csig[WEFT_LEDGER_SIG_LEN], latest_psig[WEFT_LEDGER_SIG_LEN], latest_t[32];
	struct asc_round r;
	struct weft_ledger_asc_state closing; /* a cooperative close being signed */
	uint8_t close_sig[WEFT_LEDGER_SIG_LEN];
	bool close_asked;
	uint64_t ledger_sent_us;   /* a claim, refund or close last submitted */
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
	struct asc **asc;          /* asc.c */
	size_t nasc, asccap;
	uint64_t tick_us, root_us, pay_timeout_us;
	uint64_t root_every;       /* unrooted payments that make a root at once */
	uint32_t pipeline;         /* payments in flight per member */
	bool ticking;
	bool unsafe_no_chain_check;  /* params.channel_unsafe = "no_chain" (broken variant) */
	bool post_stale;           /* strategy "stale": unilateral closes post root 0 */
	bool overspend;            /* strategy "overspend": proposals beyond the balance */
	bool equivocate;           /* strategy "equivocate": a second payment of the same seq */
	bool withhold;             /* strategy "withhold": unlock asks ignored */
	uint64_t lock_delta;       /* heights between a lock's expiry and the next hop's (channel_lock_delta) */
	struct weft_mpw out;       /* scratch message writer */
	struct local_msg *loc;     /* messages between members of this node, run before the step ends */
	size_t nloc, loccap;
};

/* ---- paydag.c ---- */

/* The balance of member j at the head of what this node holds:
 * deposit + counted incoming - outgoing. */
uint64_t paydag_balance(const struct chan *c, uint32_t j);
/* Every payment to j this node holds (and every lock refunded to j),
 * counted by j's chain or not. */
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
	uint32_t open_locks;       /* the chain's open locks at the tail */
	uint64_t *resolving;       /* the locks an UNLOCK or REFUND of the tail resolved, owned */
	uint32_t nresolving, resolvingcap;
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
/* Balances and open locks at a cut that extends latest (seq per member)
 * into r (balance, nlocks, lock): 0, or WEFT_EINVAL when the cut is not
 * held or overspends. */
int paydag_balances_at(const struct chan *c, const uint64_t *seq, struct root *r);
/* The open locks one member may have: at most 16, and the channel's
 * members' together at most a root's WEFT_LEDGER_CHANNEL_LOCKS_MAX. */
uint32_t paydag_lock_cap(const struct chan *c);
/* Member j's LOCK of seq, or NULL. */
struct lockrec *paydag_lock(const struct chan *c, uint32_t j, uint64_t seq);
void paydag_free(struct chan *c);
/* Keeps evidence that member j signed two payments of one seq. */
void paydag_evidence(struct svc *s, struct chan *c, const struct weft_channel_payment *a,
		     const struct weft_channel_payment *b);

/* ---- lock.c: conditional payments across channels ---- */

/* The hops in r (PROPOSE's third field): 0 or WEFT_EDECODE. */
int lock_route_read(struct weft_mp_reader *r, struct route *rt);
void lock_route_write(struct weft_mpw *w, const struct route *rt);
/* Before our member consents to p (to it): NULL, or why it refuses.  A
 * consent to a LOCK that goes on keeps its route (lock_keep_route). */
const char *lock_consent_check(struct svc *s, struct chan *c, const struct weft_channel_payment *p,
			       const struct route *rt);
int lock_keep_route(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const struct route *rt);
/* A payment p applied here (finalized, or received): a preimage it shows is
 * kept. */
int lock_applied(struct svc *s, struct chan *c, const struct weft_channel_payment *p);
/* Every tick: forwards, reveals, unlocks, refunds, closes and claims due. */
void lock_tick(struct svc *s, struct chan *c);
int lock_on_unlock_ask(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r);
int lock_on_refund_ask(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r);
/* A claim the ledger executed: its preimage is kept. */
int lock_on_claim(struct svc *s, const uint8_t preimage[32]);
/* channel.invoice: a new preimage for member key, its hash in *hash. */
int lock_invoice(struct svc *s, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t amount, uint8_t hash[32]);
/* The preimage of hash if this node knows it. */
bool lock_preimage(struct svc *s, const uint8_t hash[32], uint8_t preimage[32]);

/* ---- asc.c: atomic service channels ---- */

int asc_restore(struct svc *s);
/* Messages of types MSG_ASC_*, after [1, type, id]. */
int asc_handle(struct svc *s, uint32_t from, int type, const uint8_t id[32], struct weft_mp_reader *r);
/* Commands "asc.*" (WEFT_NOTFOUND for any other), queries "asc.list" and
 * "asc.info". */
int asc_command(struct svc *s, const char *what, struct weft_mp_reader *r, struct weft_mpw *reply);
int asc_query(struct svc *s, const char *what, struct weft_mp_reader *r, struct weft_mpw *reply);
/* A service channel transaction the ledger executed: 0 when it is not one. */
int asc_on_ledger(struct svc *s, const uint8_t *tx, size_t len, uint8_t outcome);
void asc_tick(struct svc *s);
void asc_free(struct svc *s);

/* ---- channel.c, for paydag.c, lock.c and asc.c ---- */
void chan_send_host(struct svc *s, uint32_t host, const char *kind);
void chan_event_end(struct svc *s, struct weft_mpw *w);
void chan_arm_tick(struct svc *s);
struct chan *chan_find(struct svc *s, const uint8_t id[32]);
struct weft_mpw *chan_msg_begin(struct svc *s, const struct chan *c, int type, uint32_t fields);
void chan_send_member(struct svc *s, const struct chan *c, uint32_t m, const char *kind);
/* Proposes a payment of member `from` hosted here (after those it has in
 * flight): kind, secret, cond as in weft_channel_payment; rt the hops of
 * a LOCK (NULL: none).  0 with *seq, or an error and a static *why. */
int chan_propose(struct svc *s, struct chan *c, uint32_t from, uint32_t to, uint64_t amount, uint8_t kind,
		 const uint8_t secret[32], uint64_t cond, const struct route *rt, uint64_t *seq, const char **why);
/* A proposal of payer's in flight resolving its lock of seq lock_seq. */
bool chan_resolving(const struct chan *c, uint32_t payer, uint64_t lock_seq);
/* A proposal of payer's in flight locking under hash. */
bool chan_locking(const struct chan *c, uint32_t payer, const uint8_t hash[32]);
/* A unilateral close with the newest root (channel.close force). */
int chan_force_close(struct svc *s, struct chan *c);
void chan_build_root(struct svc *s, struct chan *c);
void chan_submit(struct svc *s, const struct weft_mpw *tx);
/* The ledger's height, 0 when the node lends none. */
uint64_t chan_height(struct svc *s);
void chan_key(uint8_t *k, char tag, const uint8_t id[32]);
void chan_event_payment(struct svc *s, struct chan *c, const char *status, uint32_t from, uint64_t seq, uint32_t to,
			uint64_t amount, const char *reason);
void chan_emit_evidence(struct svc *s, struct chan *c, const char *kind, uint32_t member);

#endif
