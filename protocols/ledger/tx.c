/* tx.c - the ledger's transactions (weft/ledger.h): BIP340 keys and
 * signatures over libsecp256k1, the `transfer` wire format with its bounded,
 * canonical decoder, the signature hash, outcome names, and the stateless
 * checks shared by the mempool (weft_ledger_precheck) and execution.
 *
 * Verification uses secp256k1_context_static, which needs no allocation
 * and no randomisation (weft_ledger_init runs secp256k1_selftest first).
 * Operations on secret keys use a context created for the call: signing
 * blinds it with a seed derived from the caller's randomness; public key
 * derivation, which has none to draw on, leaves it unblinded.  Secret
 * material copied to the stack (keypairs, seeds) is wiped before
 * returning.  Nothing here calls the OS: randomness comes from the caller,
 * and the only caller that signs is the client (weft-cli). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <sodium.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/ledger.h"

#include "kinds.h"

#define SIGHASH_KEY "weft/transfer/v1"
#define BLIND_KEY "weft/ledger/blind/v1"

/* ---- keys and signatures ---- */

/* A context for secret-key operations, blinded with seed32 when not NULL
 * (a context that cannot be created or blinded is out of memory: abort,
 * as every weft allocation does). */
static secp256k1_context *secret_context(const uint8_t *seed32)
{
	secp256k1_context *ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);

	if (!ctx)
		abort();
	if (seed32 && !secp256k1_context_randomize(ctx, seed32))
		abort();
	return ctx;
}

int weft_ledger_pubkey(const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN], uint8_t xonly[WEFT_LEDGER_KEY_LEN])
{
	secp256k1_context *ctx = secret_context(NULL);
	secp256k1_keypair kp;
	secp256k1_xonly_pubkey pk;
	int rc = WEFT_EINVAL;

	if (secp256k1_keypair_create(ctx, &kp, seckey) && secp256k1_keypair_xonly_pub(ctx, &pk, NULL, &kp) &&
	    secp256k1_xonly_pubkey_serialize(ctx, xonly, &pk))
		rc = 0;
	sodium_memzero(&kp, sizeof(kp));
	secp256k1_context_destroy(ctx);
	return rc;
}

int weft_ledger_pubkey_check(const uint8_t xonly[WEFT_LEDGER_KEY_LEN])
{
	secp256k1_xonly_pubkey pk;

	return secp256k1_xonly_pubkey_parse(secp256k1_context_static, &pk, xonly) ? 0 : WEFT_EINVAL;
}

int weft_ledger_schnorr_sign(const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN], const uint8_t msg[32],
			     const uint8_t aux_rand[32], uint8_t sig[WEFT_LEDGER_SIG_LEN])
{
	uint8_t seed[32];
	secp256k1_context *ctx;
	secp256k1_keypair kp;
	int rc = WEFT_EINVAL;

	/* The blinding seed and BIP340's aux_rand come from the same caller
	 * randomness, separated by a keyed hash. */
	crypto_generichash(seed, sizeof(seed), aux_rand, 32, (const unsigned char *)BLIND_KEY,
			   sizeof(BLIND_KEY) - 1);
	ctx = secret_context(seed);
	if (secp256k1_keypair_create(ctx, &kp, seckey) && secp256k1_schnorrsig_sign32(ctx, sig, msg, &kp, aux_rand))
		rc = 0;
	sodium_memzero(&kp, sizeof(kp));
	sodium_memzero(seed, sizeof(seed));
	secp256k1_context_destroy(ctx);
	return rc;
}

struct weft_ledger_signer {
	secp256k1_context *ctx;    /* blinded once, at creation */
	secp256k1_keypair kp;
};

int weft_ledger_signer_new(const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN], const uint8_t seed[32],
			   struct weft_ledger_signer **out)
{
	struct weft_ledger_signer *s = sodium_malloc(sizeof(*s));
	if (s == NULL)
		abort();
	s->ctx = secret_context(seed);
	if (!secp256k1_keypair_create(s->ctx, &s->kp, seckey)) {
		weft_ledger_signer_free(s);
		return WEFT_EINVAL;
	}
	*out = s;
	return 0;
}

int weft_ledger_signer_sign(struct weft_ledger_signer *s, const uint8_t msg[32], const uint8_t aux_rand[32],
			    uint8_t sig[WEFT_LEDGER_SIG_LEN])
{
	return secp256k1_schnorrsig_sign32(s->ctx, sig, msg, &s->kp, aux_rand) ? 0 : WEFT_EINVAL;
}

void weft_ledger_signer_free(struct weft_ledger_signer *s)
{
	if (s == NULL)
		return;
	secp256k1_context_destroy(s->ctx);
	sodium_free(s); /* wipes the keypair */
}

int weft_ledger_schnorr_verify(const uint8_t xonly[WEFT_LEDGER_KEY_LEN], const uint8_t msg[32],
			       const uint8_t sig[WEFT_LEDGER_SIG_LEN])
{
	secp256k1_xonly_pubkey pk;

	if (!secp256k1_xonly_pubkey_parse(secp256k1_context_static, &pk, xonly))
		return WEFT_ECRYPTO;
	return secp256k1_schnorrsig_verify(secp256k1_context_static, sig, msg, 32, &pk) ? 0 : WEFT_ECRYPTO;
}

/* ---- the transfer wire format ---- */

void weft_ledger_transfer_encode(const struct weft_ledger_transfer *t, struct weft_mpw *w)
{
	weft_mpw_array(w, 7);
	weft_mpw_str(w, WEFT_LEDGER_TRANSFER_TAG);
	weft_mpw_uint(w, WEFT_LEDGER_TRANSFER_VERSION);
	weft_mpw_bin(w, t->from, sizeof(t->from));
	weft_mpw_bin(w, t->to, sizeof(t->to));
	weft_mpw_uint(w, t->amount);
	weft_mpw_uint(w, t->nonce);
	weft_mpw_bin(w, t->sig, sizeof(t->sig));
}

/* True when the bytes are exactly what weft_ledger_transfer_encode writes
 * for t: one encoding per transfer, so that its digest names it. */
static bool canonical(const struct weft_ledger_transfer *t, const uint8_t *tx, size_t len)
{
	struct weft_mpw w;
	bool same;

	weft_mpw_init(&w);
	weft_ledger_transfer_encode(t, &w);
	same = w.len == len && memcmp(w.buf, tx, len) == 0;
	weft_mpw_free(&w);
	return same;
}

int weft_ledger_transfer_decode(const uint8_t *tx, size_t len, struct weft_ledger_transfer *t)
{
	static const char tag[] = WEFT_LEDGER_TRANSFER_TAG;
	struct weft_mp_reader r;
	struct weft_ledger_transfer d;
	uint32_t count, slen;
	uint64_t version;
	const char *s;

	/* Opaque unless it opens with [ "weft.transfer", ... */
	weft_mp_reader_init(&r, tx, len);
	if (weft_mp_peek_type(&r) != WEFT_MP_ARRAY || weft_mp_read_array(&r, &count) < 0 || count == 0)
		return WEFT_NOTFOUND;
	if (weft_mp_peek_type(&r) != WEFT_MP_STR || weft_mp_read_str(&r, &s, &slen) < 0 ||
	    slen != sizeof(tag) - 1 || memcmp(s, tag, slen) != 0)
		return WEFT_NOTFOUND;

	if (count != 7)
		return WEFT_EDECODE;
	weft_mp_read_uint(&r, &version);
	weft_mp_read_bin_fixed(&r, d.from, sizeof(d.from));
	weft_mp_read_bin_fixed(&r, d.to, sizeof(d.to));
	weft_mp_read_uint(&r, &d.amount);
	weft_mp_read_uint(&r, &d.nonce);
	weft_mp_read_bin_fixed(&r, d.sig, sizeof(d.sig));
	if (r.err < 0 || version != WEFT_LEDGER_TRANSFER_VERSION || weft_mp_remaining(&r) != 0 ||
	    !canonical(&d, tx, len))
		return WEFT_EDECODE;
	*t = d;
	return 0;
}

void weft_ledger_transfer_sighash(const struct weft_ledger_transfer *t, uint8_t msg[32])
{
	uint8_t buf[2 * WEFT_LEDGER_KEY_LEN + 16];

	memcpy(buf, t->from, WEFT_LEDGER_KEY_LEN);
	memcpy(buf + WEFT_LEDGER_KEY_LEN, t->to, WEFT_LEDGER_KEY_LEN);
	weft_be64_put(buf + 2 * WEFT_LEDGER_KEY_LEN, t->amount);
	weft_be64_put(buf + 2 * WEFT_LEDGER_KEY_LEN + 8, t->nonce);
	crypto_generichash(msg, 32, buf, sizeof(buf), (const unsigned char *)SIGHASH_KEY, sizeof(SIGHASH_KEY) - 1);
}

int weft_ledger_transfer_verify(const struct weft_ledger_transfer *t)
{
	uint8_t msg[32];

	weft_ledger_transfer_sighash(t, msg);
	return weft_ledger_schnorr_verify(t->from, msg, t->sig);
}

int weft_ledger_transfer_sign(struct weft_ledger_transfer *t, const uint8_t seckey[WEFT_LEDGER_SECKEY_LEN],
			      const uint8_t aux_rand[32])
{
	struct weft_ledger_transfer s = *t;
	uint8_t msg[32];
	int rc = weft_ledger_pubkey(seckey, s.from);

	if (rc < 0)
		return rc;
	weft_ledger_transfer_sighash(&s, msg);
	rc = weft_ledger_schnorr_sign(seckey, msg, aux_rand, s.sig);
	if (rc < 0)
		return rc;
	*t = s;
	return 0;
}

/* ---- outcomes and stateless checks ---- */

const char *weft_ledger_outcome_name(enum weft_ledger_outcome o)
{
	switch (o) {
	case WEFT_LEDGER_APPLIED:
		return "applied";
	case WEFT_LEDGER_OPAQUE:
		return "opaque";
	case WEFT_LEDGER_MALFORMED:
		return "malformed";
	case WEFT_LEDGER_ZERO_AMOUNT:
		return "zero_amount";
	case WEFT_LEDGER_SELF_TRANSFER:
		return "self_transfer";
	case WEFT_LEDGER_BAD_RECIPIENT:
		return "bad_recipient";
	case WEFT_LEDGER_BAD_SIGNATURE:
		return "bad_signature";
	case WEFT_LEDGER_BAD_NONCE:
		return "bad_nonce";
	case WEFT_LEDGER_INSUFFICIENT_FUNDS:
		return "insufficient_funds";
	case WEFT_LEDGER_BALANCE_OVERFLOW:
		return "balance_overflow";
	case WEFT_LEDGER_BAD_MEMBERS:
		return "bad_members";
	case WEFT_LEDGER_CHANNEL_EXISTS:
		return "channel_exists";
	case WEFT_LEDGER_CHANNEL_UNKNOWN:
		return "channel_unknown";
	case WEFT_LEDGER_CHANNEL_CLOSED:
		return "channel_closed";
	case WEFT_LEDGER_NOT_CONSERVED:
		return "not_conserved";
	case WEFT_LEDGER_ALREADY_CLOSING:
		return "already_closing";
	case WEFT_LEDGER_NOT_CLOSING:
		return "not_closing";
	case WEFT_LEDGER_STALE_ROOT:
		return "stale_root";
	case WEFT_LEDGER_TOO_EARLY:
		return "too_early";
	case WEFT_LEDGER_TOO_LATE:
		return "too_late";
	case WEFT_LEDGER_LOCK_UNKNOWN:
		return "lock_unknown";
	case WEFT_LEDGER_BAD_SECRET:
		return "bad_secret";
	}
	return "unknown";
}

/* Cheapest first; the signature last. */
int weft_ledger_transfer_check(const struct weft_ledger_transfer *t, enum weft_ledger_outcome *why)
{
	*why = WEFT_LEDGER_APPLIED;
	if (t->amount == 0)
		*why = WEFT_LEDGER_ZERO_AMOUNT;
	else if (memcmp(t->from, t->to, WEFT_LEDGER_KEY_LEN) == 0)
		*why = WEFT_LEDGER_SELF_TRANSFER;
	else if (weft_ledger_pubkey_check(t->to) < 0)
		*why = WEFT_LEDGER_BAD_RECIPIENT;
	else if (weft_ledger_transfer_verify(t) < 0)
		return *why = WEFT_LEDGER_BAD_SIGNATURE, WEFT_ECRYPTO;
	return *why == WEFT_LEDGER_APPLIED ? 0 : WEFT_EINVAL;
}

int weft_ledger_transfer_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_transfer t;
	int rc = weft_ledger_transfer_decode(tx, len, &t);

	if (rc == WEFT_NOTFOUND) {
		*why = WEFT_LEDGER_OPAQUE;
		return rc;
	}
	if (rc < 0) {
		*why = WEFT_LEDGER_MALFORMED;
		return rc;
	}
	return weft_ledger_transfer_check(&t, why);
}

/* ---- what every kind's decoder shares (kinds.h) ---- */

int ledger_kind_open(struct weft_mp_reader *r, const uint8_t *tx, size_t len, const char *tag, uint32_t fields,
		     uint64_t version)
{
	uint32_t count, slen;
	const char *s;
	uint64_t v;
	weft_mp_reader_init(r, tx, len);
	if (weft_mp_peek_type(r) != WEFT_MP_ARRAY || weft_mp_read_array(r, &count) < 0 || count == 0)
		return WEFT_NOTFOUND;
	if (weft_mp_peek_type(r) != WEFT_MP_STR || weft_mp_read_str(r, &s, &slen) < 0 || slen != strlen(tag) ||
	    memcmp(s, tag, slen) != 0)
		return WEFT_NOTFOUND;
	if (count != fields || weft_mp_read_uint(r, &v) != 0 || v != version)
		return WEFT_EDECODE;
	return 0;
}

bool ledger_same_bytes(const struct weft_mpw *w, const uint8_t *tx, size_t len)
{
	return w->len == len && memcmp(w->buf, tx, len) == 0;
}
