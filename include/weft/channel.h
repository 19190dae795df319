/* channel.h - weft's off-ledger payment channels (protocols/channel):
 * multi-party hyperedge channels after COALESCE, settling on the ledger
 * (weft/ledger.h "channel settlement").  docs/protocols/channels.md is the
 * specification and the safety argument.
 *
 * A channel is a hyperedge of 2..WEFT_CHANNEL_MAX members, each a BIP340
 * key hosted by a committee node (a node hosts any number: its wallets).
 * Members pay each other with signatures alone:
 *
 *   payment   the sender j proposes (j, seq, prev, refs, to, amount): seq
 *             is j's previous seq + 1 and prev that payment's hash, so the
 *             payments of one sender form a chain; refs [(k, s, hash)...] count
 *             as j's incoming every payment to j in k's chain up to s not
 *             counted before.  The receiver checks, from payments it holds,
 *             that j's balance (deposit + counted incoming - outgoing)
 *             covers the amount, consents (its signature) or refuses at
 *             once; the sender sends the finalized payment to every
 *             member, and every member checks it again and applies it.
 *   root      periodically a member proposes a cut (a seq per chain) of
 *             the payments it holds; every member recomputes the balances
 *             at that cut and signs (version, balances, frontier) with the
 *             ledger's root hash, at most one root per version.  A root
 *             counts once all members signed it: it is what a unilateral
 *             close posts (channel.commit) and what a dispute answers with.
 *
 * Signatures: the payment hash is BLAKE2b-256 keyed "weft/channel-pay/v1"
 * over chain || id || from || seq || prev || refs || to || amount (and,
 * for a conditional kind, kind || secret || cond) (so a consent names the
 * hyperedge, the proposer, its sequence and parents and cannot be
 * replayed); the sender signs it, the receiver signs the same
 * hash keyed "weft/channel-consent/v1".  Roots use the ledger's
 * weft_ledger_channel_root_sighash; the frontier is BLAKE2b-256 keyed
 * "weft/channel-frontier/v1" over (be64 seq || head hash) per chain.
 *
 * The protocol runs as a child of the node stack (protocols/node) on its
 * own channel byte.  It needs two host services: the wallets
 * (WEFT_WALLET_SERVICE: signatures with hosted keys) and, optionally, the
 * event sink (WEFT_EVENT_SERVICE: payment and state notifications, released
 * by the host after the step commits).  Ledger transactions it makes
 * (open, close, commit, dispute, settle) go up as deliveries for the node
 * to submit; the node tells it what the ledger executed (command
 * "channel.ledger") and lends it the ledger for reads (service
 * WEFT_LEDGER_SERVICE). */
#ifndef WEFT_CHANNEL_H
#define WEFT_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/ledger.h"
#include "weft/proto.h"

#define WEFT_CHANNEL_MAX WEFT_LEDGER_CHANNEL_MAX
#define WEFT_CHANNEL_PROTO_VERSION 1
/* Refs one payment may carry (a sender counts the rest of its incoming in
 * its next payment); payments one fetch answer holds. */
#define WEFT_CHANNEL_REFS_MAX 16
#define WEFT_CHANNEL_FETCH_MAX 256

/* ---- host services ---- */

#define WEFT_WALLET_SERVICE "wallets"
#define WEFT_EVENT_SERVICE "events"
#define WEFT_LEDGER_SERVICE "ledger"

/* The keys a node hosts.  sign: 0 with key's BIP340 signature of msg,
 * WEFT_NOTFOUND when the node does not host key.  verify: 0 or
 * WEFT_ECRYPTO (the simulator may stand in a cheap scheme for both). */
struct weft_wallet_service {
	void *ctx;
	int (*sign)(void *ctx, const uint8_t key[WEFT_LEDGER_KEY_LEN], const uint8_t msg[32],
		    uint8_t sig[WEFT_LEDGER_SIG_LEN]);
	int (*verify)(void *ctx, const uint8_t key[WEFT_LEDGER_KEY_LEN], const uint8_t msg[32],
		      const uint8_t sig[WEFT_LEDGER_SIG_LEN]);
	/* Optional (NULL: this host sells no service): key's adaptor
	 * pre-signature of msg under T (weft/adaptor.h); 0, or WEFT_NOTFOUND
	 * when the node does not host key. */
	int (*presign)(void *ctx, const uint8_t key[WEFT_LEDGER_KEY_LEN], const uint8_t msg[32], const uint8_t T[33],
		       uint8_t presig[65]);
};

/* Notifications: event is one msgpack map {"event": "payment" | "root" |
 * "open" | "close" | "dispute" | "settled" | "evidence", "channel": hex,
 * ...}.  The host releases them once the step that emitted them is
 * durable, as it does messages. */
struct weft_event_service {
	void *ctx;
	void (*emit)(void *ctx, const uint8_t *event, size_t len);
};

/* ---- wire pieces (wire.c), public for tests and fuzzing ---- */

/* A parent in another member's chain: its payment seq and hash. */
struct weft_channel_ref {
	uint32_t member;
	uint64_t seq;
	uint8_t hash[32];
};

/* What a payment does (its kind):
 *   PAY     moves amount from `from` to `to` at once;
 *   LOCK    takes amount from `from` under a hash lock: secret is the lock
 *           hash (weft_ledger_lock_hash of a preimage), cond the ledger
 *           height at which it expires;
 *   UNLOCK  pays `from`'s lock of seq cond to its payee `to`: secret is the
 *           preimage;
 *   REFUND  gives `from`'s lock of seq cond back to `from` (to: the lock's
 *           payee, whose consent is the agreement; secret zeros).
 * The lock's amount and payee are repeated in an UNLOCK or REFUND.  A
 * plain payment encodes as before locks existed (8 fields). */
enum weft_channel_kind {
	WEFT_CHANNEL_PAY = 0,
	WEFT_CHANNEL_LOCK = 1,
	WEFT_CHANNEL_UNLOCK = 2,
	WEFT_CHANNEL_REFUND = 3,
};

/* A payment as its sender signed it, and the receiver's consent. */
struct weft_channel_payment {
	uint32_t from;
	uint64_t seq;                              /* 1, 2, ... per sender */
	uint8_t prev[32];                          /* hash of from's payment seq-1; zeros for seq 1 */
	uint32_t nrefs;
	struct weft_channel_ref refs[WEFT_CHANNEL_REFS_MAX]; /* ascending members, never from */
	uint32_t to;
	uint64_t amount;
	uint8_t kind;                              /* enum weft_channel_kind */
	uint8_t secret[32];                        /* LOCK: the hash; UNLOCK: the preimage */
	uint64_t cond;                             /* LOCK: the expiry height; UNLOCK, REFUND: the lock's seq */
	uint8_t sig[WEFT_LEDGER_SIG_LEN];          /* from's signature of the hash */
	uint8_t consent[WEFT_LEDGER_SIG_LEN];      /* to's consent; zeros in a proposal */
};

/* The payment hash (see above); chain from weft_ledger_chain. */
void weft_channel_payment_hash(const uint8_t chain[32], const uint8_t id[32], const struct weft_channel_payment *p,
			       uint8_t hash[32]);
/* What the receiver signs to consent: the hash keyed "weft/channel-consent/v1". */
void weft_channel_consent_hash(const uint8_t pay_hash[32], uint8_t msg[32]);
/* [from, seq, prev, [[member, seq, hash]...], to, amount, sig, consent]
 * and, for a kind other than PAY, kind, secret (bin 32), cond. */
void weft_channel_payment_encode(const struct weft_channel_payment *p, struct weft_mpw *w);
/* Reads one payment from r for a channel of n members: 0, or WEFT_EDECODE
 * (members out of range, from == to, amount 0, refs not ascending or
 * naming from, seq 0, an unknown kind, a lock's seq not before seq, a
 * REFUND with a secret). */
int weft_channel_payment_read(struct weft_mp_reader *r, uint32_t n, struct weft_channel_payment *p);

/* The frontier of a cut: per member, the seq of its chain's last payment
 * in the cut and that payment's hash. */
void weft_channel_frontier(uint32_t n, const uint64_t *seq, const uint8_t (*head)[32], uint8_t frontier[32]);

extern const struct weft_proto_ops weft_channel_service;

#endif
