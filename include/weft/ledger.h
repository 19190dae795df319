/* ledger.h - weft's ledger: a deterministic state machine fed by the
 * committee's ordered transaction stream (protocols/ledger/).
 *
 * Accounts are keyed by secp256k1 x-only public keys (BIP340) and hold a
 * balance and the next nonce; genesis allocations come from the protocol
 * parameters.  The ledger executes `transfer`s and the channel settlement
 * transactions (open, cooperative close, unilateral close, dispute,
 * settle), signed with BIP340 Schnorr; every other ordered transaction is opaque data that
 * the ledger counts but does not interpret.  docs/ledger.md is the
 * specification: wire format, signature hash, execution rules, outcomes and
 * the ledger hash.
 *
 * Transactions (tx.c) are pure functions.  The state machine (state.c) is
 * sans-IO: it keeps its state only in the kv store of the protocol env that
 * hosts it, under keys starting with 'A' (accounts), 'H' (height and
 * hash) and 'C' (channels); the hosting protocol keeps its own keys under
 * other first bytes.
 *
 * Determinism: executing the same sequence of transactions over the same
 * genesis gives the same kv state, height and hash on every node (checked
 * uint64 arithmetic, no dependence on memory layout or iteration order).
 *
 * Secret keys passed in are only read; callers keep them in sodium_malloc
 * memory and wipe them.  Functions keep no pointer to their arguments. */
#ifndef WEFT_LEDGER_H
#define WEFT_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/app.h"
#include "weft/mp.h"
#include "weft/proto.h"

#define WEFT_LEDGER_KEY_LEN 32     /* x-only public key */
#define WEFT_LEDGER_SECKEY_LEN 32
#define WEFT_LEDGER_SIG_LEN 64     /* BIP340 signature */
#define WEFT_LEDGER_TRANSFER_TAG "weft.transfer"
#define WEFT_LEDGER_TRANSFER_VERSION 1
/* The longest encoded transfer (amount and nonce above 2^32). */
#define WEFT_LEDGER_TRANSFER_MAX_LEN 168

/* ---- keys and signatures (tx.c) ---- */

/* The x-only public key of a secret key: 0, or WEFT_EINVAL when seckey is
 * not a valid secret key (zero or not below the group order). */
int weft_ledger_pubkey(const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN], uint8_t xonly[WEFT_LEDGER_KEY_LEN]);
/* 0 when xonly is a valid x-only public key (the x coordinate of a curve
 * point), WEFT_EINVAL otherwise. */
int weft_ledger_pubkey_check(const uint8_t xonly[WEFT_LEDGER_KEY_LEN]);
/* BIP340 signature of the 32-byte msg.  aux_rand is BIP340's auxiliary
 * randomness (fresh random bytes, e.g. from randombytes_buf; the signature
 * stays secure if it is not random); it also seeds the blinding of the
 * signing context.  0, or WEFT_EINVAL for an invalid secret key. */
int weft_ledger_schnorr_sign(const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN], const uint8_t msg[32],
			     const uint8_t aux_rand[32], uint8_t sig[WEFT_LEDGER_SIG_LEN]);
/* A signer for many signatures with one key (a wallet): the keypair and a
 * context blinded once with seed, in sodium_malloc memory that
 * weft_ledger_signer_free wipes.  A third of weft_ledger_schnorr_sign's
 * work per signature.  new: 0, or WEFT_EINVAL for an invalid secret key. */
struct weft_ledger_signer;
int weft_ledger_signer_new(const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN], const uint8_t seed[32],
			   struct weft_ledger_signer **out);
int weft_ledger_signer_sign(struct weft_ledger_signer *s, const uint8_t msg[32], const uint8_t aux_rand[32],
			    uint8_t sig[WEFT_LEDGER_SIG_LEN]);
void weft_ledger_signer_free(struct weft_ledger_signer *s);
/* BIP340 verification: 0, or WEFT_ECRYPTO for a bad signature or a key
 * that is not a valid x-only public key. */
int weft_ledger_schnorr_verify(const uint8_t xonly[WEFT_LEDGER_KEY_LEN], const uint8_t msg[32],
			       const uint8_t sig[WEFT_LEDGER_SIG_LEN]);

/* ---- transfer transactions (tx.c) ---- */

struct weft_ledger_transfer {
	uint8_t from[WEFT_LEDGER_KEY_LEN];
	uint8_t to[WEFT_LEDGER_KEY_LEN];
	uint64_t amount;
	uint64_t nonce;    /* must equal the sender's next nonce */
	uint8_t sig[WEFT_LEDGER_SIG_LEN];
};

/* Wire form (canonical msgpack, smallest encodings, nothing after it):
 *   ["weft.transfer", 1, from (bin 32), to (bin 32), amount (uint),
 *    nonce (uint), sig (bin 64)]
 * Decoding: 0 and *t; WEFT_NOTFOUND when tx is not a ledger transaction at
 * all (it does not start with an array whose first element is the string
 * "weft.transfer": opaque data); WEFT_EDECODE when it claims to be one but
 * is malformed, has another version, trailing bytes or a non-canonical
 * encoding. */
int weft_ledger_transfer_decode(const uint8_t *tx, size_t len, struct weft_ledger_transfer *t);
void weft_ledger_transfer_encode(const struct weft_ledger_transfer *t, struct weft_mpw *w);
/* The message signed: BLAKE2b-256 keyed with "weft/transfer/v1" over
 * from || to || amount || nonce (integers as 8 bytes big-endian). */
void weft_ledger_transfer_sighash(const struct weft_ledger_transfer *t, uint8_t msg[32]);
/* 0 when sig is from's BIP340 signature of the sighash, else WEFT_ECRYPTO. */
int weft_ledger_transfer_verify(const struct weft_ledger_transfer *t);
/* Sets t->from to seckey's public key and t->sig to its signature over the
 * other fields (see weft_ledger_schnorr_sign for aux_rand).  0, or
 * WEFT_EINVAL for an invalid secret key (t unchanged). */
int weft_ledger_transfer_sign(struct weft_ledger_transfer *t, const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN],
			      const uint8_t aux_rand[32]);

/* ---- execution outcomes (tx.c) ----
 * The values are part of the ledger hash: never renumber them. */
enum weft_ledger_outcome {
	WEFT_LEDGER_APPLIED = 0,            /* the transfer moved the funds */
	WEFT_LEDGER_OPAQUE = 1,             /* not a ledger transaction: no state change */
	WEFT_LEDGER_MALFORMED = 2,          /* claims to be a transfer, does not decode */
	WEFT_LEDGER_ZERO_AMOUNT = 3,        /* amount 0 */
	WEFT_LEDGER_SELF_TRANSFER = 4,      /* from == to */
	WEFT_LEDGER_BAD_RECIPIENT = 5,      /* to is not a valid x-only public key */
	WEFT_LEDGER_BAD_SIGNATURE = 6,
	WEFT_LEDGER_BAD_NONCE = 7,          /* nonce is not the sender's next nonce */
	WEFT_LEDGER_INSUFFICIENT_FUNDS = 8, /* the sender's balance is below amount */
	WEFT_LEDGER_BALANCE_OVERFLOW = 9,   /* the recipient's balance would pass 2^64 - 1 */
	WEFT_LEDGER_BAD_MEMBERS = 10,       /* a channel's members repeat or are not valid keys */
	WEFT_LEDGER_CHANNEL_EXISTS = 11,    /* an open of a channel id already used */
	WEFT_LEDGER_CHANNEL_UNKNOWN = 12,   /* a close of a channel never opened */
	WEFT_LEDGER_CHANNEL_CLOSED = 13,    /* a close of a channel already closed */
	WEFT_LEDGER_NOT_CONSERVED = 14,     /* a close whose balances do not add up to the deposits */
	WEFT_LEDGER_ALREADY_CLOSING = 15,   /* a commit on a channel already closing (dispute instead) */
	WEFT_LEDGER_NOT_CLOSING = 16,       /* a dispute or settle of a channel that is not closing */
	WEFT_LEDGER_STALE_ROOT = 17,        /* a dispute with a version not above the posted one */
	WEFT_LEDGER_TOO_EARLY = 18,         /* a settle before the challenge period ended */
	WEFT_LEDGER_TOO_LATE = 19,          /* a dispute after the challenge period ended, a claim after its lock's expiry */
	WEFT_LEDGER_LOCK_UNKNOWN = 20,      /* a claim whose preimage opens no unclaimed lock of the posted root */
	WEFT_LEDGER_BAD_SECRET = 21,        /* a service channel claim whose secret is not its state's point's */
};

/* "applied", "opaque", "malformed", "zero_amount", "self_transfer",
 * "bad_recipient", "bad_signature", "bad_nonce", "insufficient_funds",
 * "balance_overflow", "bad_members", "channel_exists", "channel_unknown",
 * "channel_closed", "not_conserved", "already_closing", "not_closing",
 * "stale_root", "too_early", "too_late", "lock_unknown", "bad_secret";
 * "unknown" for any other value.
 * Static strings. */
const char *weft_ledger_outcome_name(enum weft_ledger_outcome o);

/* The checks of execution that need no state, on a decoded transfer:
 * amount, sender and recipient, signature.  0 (*why = APPLIED: state
 * decides), WEFT_EINVAL (*why = ZERO_AMOUNT, SELF_TRANSFER or
 * BAD_RECIPIENT) or WEFT_ECRYPTO (*why = BAD_SIGNATURE). */
int weft_ledger_transfer_check(const struct weft_ledger_transfer *t, enum weft_ledger_outcome *why);

/* The transfer kind's stateless checks (tx.c): WEFT_NOTFOUND when tx is
 * not a transfer, otherwise as weft_ledger_precheck. */
int weft_ledger_transfer_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why);

/* The stateless checks of execution, for a transaction submitted to the
 * mempool, by the kind that claims it (state.c: the table of kinds):
 * decoding, amount, sender and recipient, signature.  Returns 0
 * for a transfer that may execute (state decides: nonce and funds),
 * WEFT_NOTFOUND for opaque data (*why = OPAQUE), or a negative code with
 * the outcome execution would give in *why: WEFT_EDECODE (MALFORMED),
 * WEFT_EINVAL (ZERO_AMOUNT, SELF_TRANSFER, BAD_RECIPIENT) or WEFT_ECRYPTO
 * (BAD_SIGNATURE).  *why is APPLIED when 0 is returned. */
int weft_ledger_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why);

/* ---- channel settlement (channel.c; docs/ledger.md "Channels") ----
 * A channel locks deposits of 2 to WEFT_LEDGER_CHANNEL_MAX members on the
 * ledger; its members pay each other off the ledger (protocols/channel)
 * and settle here.  Every signature is each member's BIP340 signature over
 * a tagged hash that includes the committee's chain (weft_ledger_chain),
 * so nothing signed for one committee, channel or state replays on another.
 *
 *   open  ["weft.channel.open", 2, nonce (bin 16),
 *          [[member (bin 32), deposit (uint)]...], [sig (bin 64)...]]
 *         one signature per member, in member order, over
 *         open_sighash = BLAKE2b-256 keyed "weft/channel-open/v1" over
 *           chain || nonce || count (1 byte) || (member || be64 deposit)...
 *         The channel's id is the same hash keyed "weft/channel-id/v1".
 *   close ["weft.channel.close", 2, id (bin 32), [balance (uint)...],
 *          [sig (bin 64)...]]  the cooperative close: one balance and one
 *         signature per member, over close_sighash = BLAKE2b-256 keyed
 *         "weft/channel-close/v1" over chain || id || count ||
 *         be64 balance...; the balances must add up to the deposits. */
/* At most 255: counts are one byte in the signature hashes and records.
 * 150 members (the COALESCE experiment) make a 10 KB root. */
#define WEFT_LEDGER_CHANNEL_MAX 255
#define WEFT_LEDGER_CHANNEL_NONCE_LEN 16
#define WEFT_LEDGER_CHANNEL_OPEN_TAG "weft.channel.open"
#define WEFT_LEDGER_CHANNEL_CLOSE_TAG "weft.channel.close"
#define WEFT_LEDGER_CHANNEL_COMMIT_TAG "weft.channel.commit"
#define WEFT_LEDGER_CHANNEL_DISPUTE_TAG "weft.channel.dispute"
#define WEFT_LEDGER_CHANNEL_SETTLE_TAG "weft.channel.settle"
#define WEFT_LEDGER_CHANNEL_CLAIM_TAG "weft.channel.claim"
/* Version 2: roots carry hash locks (conditional payments), and claims. */
#define WEFT_LEDGER_CHANNEL_VERSION 2
/* The locks one root may carry (a count of two bytes in its hash). */
#define WEFT_LEDGER_CHANNEL_LOCKS_MAX 256
/* The challenge period when params.channel_challenge (ledger heights)
 * does not say. */
#define WEFT_LEDGER_CHANNEL_CHALLENGE 1000

struct weft_ledger_channel_open {
	uint8_t nonce[WEFT_LEDGER_CHANNEL_NONCE_LEN];
	uint32_t n;
	uint8_t member[WEFT_LEDGER_CHANNEL_MAX][WEFT_LEDGER_KEY_LEN];
	uint64_t deposit[WEFT_LEDGER_CHANNEL_MAX];
	uint8_t sig[WEFT_LEDGER_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
};

struct weft_ledger_channel_close {
	uint8_t id[32];
	uint32_t n;
	uint64_t balance[WEFT_LEDGER_CHANNEL_MAX];
	uint8_t sig[WEFT_LEDGER_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
};

/* A hash lock: amount taken from payer's balance, paid to payee if the
 * preimage of hash is shown on the ledger (a claim) before the height
 * expiry, back to payer otherwise.  hash = weft_ledger_lock_hash(preimage). */
struct weft_ledger_channel_lock {
	uint32_t payer, payee;
	uint64_t amount;
	uint8_t hash[32];
	uint64_t expiry;
};

/* A root: the state all members signed off the ledger, version v, the
 * balances (in member order), the hash locks open at that state and the
 * payment DAG's frontier (opaque to the ledger).  Unilateral close and
 * dispute carry one:
 *   ["weft.channel.commit" | "weft.channel.dispute", 2, id (bin 32),
 *    version (uint), [balance (uint) x n],
 *    [[payer, payee, amount, hash (bin 32), expiry]...], frontier (bin 32),
 *    [sig (bin 64) x n]]
 * root_sighash = BLAKE2b-256 keyed "weft/channel-root/v1" over
 *   chain || id || be64 version || n (1 byte) || be64 balance... ||
 *   be16 locks || (payer (1) || payee (1) || be64 amount || hash ||
 *   be64 expiry)... || frontier.
 * The balances and the locks' amounts add up to the deposits.
 * Settle: ["weft.channel.settle", 2, id (bin 32)], signed by nobody.
 * Claim: ["weft.channel.claim", 2, id (bin 32), preimage (bin 32)], signed
 * by nobody (the preimage is the proof): marks the posted root's locks of
 * its hash claimed if their expiry is still ahead. */
struct weft_ledger_channel_root {
	uint8_t id[32];
	uint64_t version;
	uint32_t n;
	uint64_t balance[WEFT_LEDGER_CHANNEL_MAX];
	uint32_t nlocks;
	struct weft_ledger_channel_lock lock[WEFT_LEDGER_CHANNEL_LOCKS_MAX];
	uint8_t frontier[32];
	uint8_t sig[WEFT_LEDGER_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
};

/* The 32-byte chain of a committee: BLAKE2b-256 keyed "weft/chain/v1"
 * over its chain id (the genesis file's chain_id; "" when none). */
void weft_ledger_chain(const char *chain_id, size_t len, uint8_t chain[32]);
/* Canonical encodings; decoders as weft_ledger_transfer_decode:
 * WEFT_NOTFOUND when tx is not of the kind, WEFT_EDECODE when it claims to
 * be and is malformed (counts of 2..MAX, one signature per member, nothing
 * after it, the canonical encoding). */
void weft_ledger_channel_open_encode(const struct weft_ledger_channel_open *o, struct weft_mpw *w);
int weft_ledger_channel_open_decode(const uint8_t *tx, size_t len, struct weft_ledger_channel_open *o);
void weft_ledger_channel_close_encode(const struct weft_ledger_channel_close *c, struct weft_mpw *w);
int weft_ledger_channel_close_decode(const uint8_t *tx, size_t len, struct weft_ledger_channel_close *c);
/* tag: WEFT_LEDGER_CHANNEL_COMMIT_TAG or _DISPUTE_TAG. */
void weft_ledger_channel_root_encode(const char *tag, const struct weft_ledger_channel_root *t, struct weft_mpw *w);
int weft_ledger_channel_root_decode(const char *tag, const uint8_t *tx, size_t len, struct weft_ledger_channel_root *t);
void weft_ledger_channel_settle_encode(const uint8_t id[32], struct weft_mpw *w);
int weft_ledger_channel_settle_decode(const uint8_t *tx, size_t len, uint8_t id[32]);
/* A root's locks, [[payer, payee, amount, hash, expiry]...]: written, and
 * read for a channel of n members (0, or WEFT_EDECODE: more than
 * LOCKS_MAX, a member out of range, payer == payee, an amount of 0). */
void weft_ledger_channel_locks_encode(struct weft_mpw *w, const struct weft_ledger_channel_lock *lock, uint32_t count);
int weft_ledger_channel_locks_read(struct weft_mp_reader *r, uint32_t n, struct weft_ledger_channel_lock *lock,
				   uint32_t *count);
void weft_ledger_channel_claim_encode(const uint8_t id[32], const uint8_t preimage[32], struct weft_mpw *w);
int weft_ledger_channel_claim_decode(const uint8_t *tx, size_t len, uint8_t id[32], uint8_t preimage[32]);
/* The lock hash of a preimage: BLAKE2b-256 keyed "weft/channel-lock/v1". */
void weft_ledger_lock_hash(const uint8_t preimage[32], uint8_t hash[32]);
void weft_ledger_channel_root_sighash(const uint8_t chain[32], const struct weft_ledger_channel_root *t,
				      uint8_t msg[32]);
void weft_ledger_channel_open_sighash(const uint8_t chain[32], const struct weft_ledger_channel_open *o,
				      uint8_t msg[32]);
void weft_ledger_channel_id(const uint8_t chain[32], const struct weft_ledger_channel_open *o, uint8_t id[32]);
void weft_ledger_channel_close_sighash(const uint8_t chain[32], const struct weft_ledger_channel_close *c,
				       uint8_t msg[32]);
/* The stateless checks of an open: distinct valid members, deposits of at
 * least 1 adding up without overflow, every signature.  0, or WEFT_EINVAL
 * (*why BAD_MEMBERS / ZERO_AMOUNT / BALANCE_OVERFLOW) or WEFT_ECRYPTO
 * (*why BAD_SIGNATURE). */
int weft_ledger_channel_open_check(const uint8_t chain[32], const struct weft_ledger_channel_open *o,
				   enum weft_ledger_outcome *why);

/* ---- atomic service channels (asc.c; docs/ledger.md "Service channels") ----
 * A client deposits once for a provider's service (A402's channel); each
 * paid request moves an amount from the client to the provider in a state
 * both sign, the provider's signature first as an adaptor pre-signature
 * under a point T whose secret t is the key of the result (weft/adaptor.h).
 *
 *   open   ["weft.asc.open", 1, nonce (bin 16), client (bin 32), provider
 *          (bin 32), deposit, timeout, sig (bin 64)]: the client's
 *          signature over open_sighash = BLAKE2b-256 keyed "weft/asc-open/v1"
 *          over chain || nonce || client || provider || be64 deposit ||
 *          be64 timeout; the id is the same hash keyed "weft/asc-id/v1".
 *          The channel expires `timeout` heights after the open's.
 *   state  [seq, free, locked, provider, status, point (bin 33), request
 *          (bin 32)]: the client's free and locked amounts and the
 *          provider's (adding up to the deposit), A402's status, the point
 *          T of the round that made it (zeros: none), the request's hash;
 *          signed over state_sighash = BLAKE2b-256 keyed "weft/asc-state/v1"
 *          over chain || id || be64 seq || be64 free || be64 locked ||
 *          be64 provider || status || point || request.
 *   close  ["weft.asc.close", 1, id, state, client sig, provider sig]: a
 *          state of status CLOSED signed by both pays free + locked to the
 *          client and provider to the provider.
 *   claim  ["weft.asc.claim", 1, id, state, client sig, provider sig, t (bin
 *          32)]: before the expiry, the provider posts a state the client
 *          signed, with its own signature (the adapted pre-signature) and
 *          t with t·G = point: paid out as a close, and t is public.
 *   refund ["weft.asc.refund", 1, id]: from the expiry on, anyone may post
 *          it: the whole deposit goes back to the client (a provider that
 *          wants its pay claims before). */
#define WEFT_LEDGER_ASC_OPEN_TAG "weft.asc.open"
#define WEFT_LEDGER_ASC_CLOSE_TAG "weft.asc.close"
#define WEFT_LEDGER_ASC_CLAIM_TAG "weft.asc.claim"
#define WEFT_LEDGER_ASC_REFUND_TAG "weft.asc.refund"
#define WEFT_LEDGER_ASC_VERSION 1
#define WEFT_LEDGER_ASC_POINT_LEN 33
/* A402's state status. */
enum { WEFT_LEDGER_ASC_OPEN = 1, WEFT_LEDGER_ASC_LOCKED = 2, WEFT_LEDGER_ASC_PENDING = 3, WEFT_LEDGER_ASC_CLOSED = 4 };

struct weft_ledger_asc_open {
	uint8_t nonce[WEFT_LEDGER_CHANNEL_NONCE_LEN];
	uint8_t client[WEFT_LEDGER_KEY_LEN], provider[WEFT_LEDGER_KEY_LEN];
	uint64_t deposit, timeout;
	uint8_t sig[WEFT_LEDGER_SIG_LEN];
};

struct weft_ledger_asc_state {
	uint64_t seq, free, locked, provider;
	uint8_t status;
	uint8_t point[WEFT_LEDGER_ASC_POINT_LEN];
	uint8_t request[32];
};

/* close and claim: the state, both signatures, and (claim) t. */
struct weft_ledger_asc_final {
	uint8_t id[32];
	struct weft_ledger_asc_state st;
	uint8_t client_sig[WEFT_LEDGER_SIG_LEN], provider_sig[WEFT_LEDGER_SIG_LEN];
	uint8_t secret[32];
};

void weft_ledger_asc_open_encode(const struct weft_ledger_asc_open *o, struct weft_mpw *w);
int weft_ledger_asc_open_decode(const uint8_t *tx, size_t len, struct weft_ledger_asc_open *o);
void weft_ledger_asc_open_sighash(const uint8_t chain[32], const struct weft_ledger_asc_open *o, uint8_t msg[32]);
void weft_ledger_asc_id(const uint8_t chain[32], const struct weft_ledger_asc_open *o, uint8_t id[32]);
void weft_ledger_asc_state_sighash(const uint8_t chain[32], const uint8_t id[32], const struct weft_ledger_asc_state *st,
				   uint8_t msg[32]);
/* The state's wire form, alone (the off-ledger protocol sends it too). */
void weft_ledger_asc_state_encode(const struct weft_ledger_asc_state *st, struct weft_mpw *w);
int weft_ledger_asc_state_read(struct weft_mp_reader *r, struct weft_ledger_asc_state *st);
/* tag: WEFT_LEDGER_ASC_CLOSE_TAG (no secret) or _CLAIM_TAG. */
void weft_ledger_asc_final_encode(const char *tag, const struct weft_ledger_asc_final *f, struct weft_mpw *w);
int weft_ledger_asc_final_decode(const char *tag, const uint8_t *tx, size_t len, struct weft_ledger_asc_final *f);
void weft_ledger_asc_refund_encode(const uint8_t id[32], struct weft_mpw *w);
int weft_ledger_asc_refund_decode(const uint8_t *tx, size_t len, uint8_t id[32]);

/* A service channel's record (read inside a callback of the ledger's
 * env): 0 with *st; WEFT_NOTFOUND; or WEFT_ECORRUPT / a kv error. */
struct weft_ledger_asc_record {
	uint8_t status;                /* WEFT_LEDGER_CH_OPEN or _CLOSED */
	uint8_t client[WEFT_LEDGER_KEY_LEN], provider[WEFT_LEDGER_KEY_LEN];
	uint64_t deposit, expires;     /* the height from which a refund is accepted */
};

/* ---- the state machine (state.c) ---- */

struct weft_ledger {
	struct weft_env *env;          /* borrowed: the host protocol's env */
	uint64_t height;               /* transactions executed, opaque ones included */
	uint8_t hash[32];              /* the ledger hash after them */
	uint8_t genesis[32];           /* the hash of the genesis allocations */
	uint8_t chain[32];             /* weft_ledger_chain of params.chain_id */
	uint64_t challenge;            /* params.channel_challenge: heights a unilateral close waits */
	bool head_unsaved;             /* height and hash moved since the head record was written */
};

/* Loads the ledger from env's kv, or creates it there.  params is the
 * hosting protocol's parameter map (msgpack, may be NULL); its optional
 * "balances" member is a map from 64-hex-digit x-only public keys to
 * amounts of 1 to 2^64 - 1 (uint, or a string of decimal digits for amounts
 * JSON cannot hold).  When kv holds no ledger yet the allocations are
 * written (height 0, hash = genesis hash); otherwise the stored state is
 * loaded and the allocations must hash to the genesis it was built from.
 * Must run inside a callback of env (the host's init).  0, WEFT_EINVAL
 * for malformed balances (a bad key or amount, the same account twice),
 * WEFT_ECONFIG when they differ from the stored state's genesis,
 * WEFT_ECORRUPT for a damaged stored record, or a kv error.  Reasons are
 * logged through env. */
int weft_ledger_init(struct weft_ledger *l, struct weft_env *env, const uint8_t *params, size_t plen);

/* Executes the next ordered transaction: digest is the BLAKE2b-256 of its
 * bytes (the caller's).  Writes the changed accounts to kv in the env's
 * current callback, advances height and hash in memory, sets *outcome,
 * counts it (metric "ledger.<outcome>") and logs why a transfer was
 * rejected.  Every transaction advances height and hash; only APPLIED
 * changes accounts.  Returns 0, or a negative kv code (or WEFT_ECORRUPT)
 * when the state could not be read or written: then l is unchanged, the
 * callback's kv writes must be discarded and the host must stop executing
 * (the node cannot follow).  The head record (height, hash) is written by
 * weft_ledger_end_batch, once per batch of ordered transactions. */
int weft_ledger_apply(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
		      enum weft_ledger_outcome *outcome);

/* The account of key: 0 with its balance and next nonce, WEFT_NOTFOUND
 * when it has never held funds (balance 0, next nonce 0), or
 * WEFT_ECORRUPT / a kv error.  Reads kv: call inside a callback of env. */
int weft_ledger_account(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t *balance,
			uint64_t *next_nonce);
/* A channel's record (read inside a callback of the ledger's env): 0 with
 * *st; WEFT_NOTFOUND; or WEFT_ECORRUPT / a kv error. */
struct weft_ledger_channel_state {
	uint8_t status;                /* WEFT_LEDGER_CH_OPEN, _CLOSING or _CLOSED */
	uint32_t n;
	uint64_t total;                /* the deposits */
	uint8_t member[WEFT_LEDGER_CHANNEL_MAX][WEFT_LEDGER_KEY_LEN];
	/* closing: the posted root and when it settles */
	uint64_t version, deadline;
	uint64_t balance[WEFT_LEDGER_CHANNEL_MAX];
	uint32_t nlocks;
	struct weft_ledger_channel_lock lock[WEFT_LEDGER_CHANNEL_LOCKS_MAX];
	bool claimed[WEFT_LEDGER_CHANNEL_LOCKS_MAX]; /* its preimage was claimed before its expiry */
};
enum { WEFT_LEDGER_CH_OPEN = 1, WEFT_LEDGER_CH_CLOSED = 2, WEFT_LEDGER_CH_CLOSING = 3 };
int weft_ledger_channel(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_channel_state *st);
int weft_ledger_asc(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_asc_record *r);

/* The end of a batch of ordered transactions (one anchor's history), in
 * the callback that applied them: writes the head record when it moved.
 * 0, or a negative kv code (as for weft_ledger_apply). */
int weft_ledger_end_batch(struct weft_ledger *l);

/* Forgets env; the state stays in kv.  l may be initialised again. */
/* Re-reads the head (height, hash) after the records were replaced by a
 * snapshot (state sync): 0, WEFT_ECONFIG when they come from another
 * genesis, WEFT_ECORRUPT, or a kv error. */
int weft_ledger_reload(struct weft_ledger *l);
/* The first bytes of the ledger's kv keys ("AHCU"): what a snapshot carries. */
#define WEFT_LEDGER_STATE_PREFIXES "AHCU"
void weft_ledger_destroy(struct weft_ledger *l);

/* ---- the ledger as the ordered stream's application (app.c) ---- */

/* Fills app with callbacks over l (admission: weft_ledger_precheck, opaque
 * data admitted; execution: weft_ledger_apply).  l must outlive app. */
void weft_ledger_app(struct weft_ledger *l, struct weft_app *app);
/* "ledger.balance" with arg a bin(32) account: {account (hex), exists,
 * balance, nonce}.  WEFT_NOTFOUND for any other question. */
int weft_ledger_query(struct weft_ledger *l, const char *what, const uint8_t *arg, size_t alen,
		      struct weft_mpw *reply);
/* The RPC methods the ledger answers (ledger.balance, ledger.transfer). */
extern const struct weft_proto_method weft_ledger_methods[];
/* Writes ledger_hash (hex) and ledger_height as map pairs; returns 2. */
uint32_t weft_ledger_info_fields(const struct weft_ledger *l, struct weft_mpw *w);

#endif
