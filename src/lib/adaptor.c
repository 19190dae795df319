/* adaptor.c - BIP340 Schnorr adaptor signatures (weft/adaptor.h) with the
 * public API of libsecp256k1 0.2 only: scalars through the seckey_*
 * calls, points through the pubkey_* calls, hashes through
 * secp256k1_tagged_sha256.  The construction is the one of BIP340's
 * "Adaptor Signatures" section, with the pre-signature laid out as the
 * secp256k1-zkp adaptor module lays it out (R33 || s'). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <sodium.h>

#include "weft/adaptor.h"
#include "weft/err.h"

#define NONCE_TAG "weft/adaptor/nonce"
#define AUX_TAG "BIP0340/aux"
#define CHALLENGE_TAG "BIP0340/challenge"
#define BLIND_TAG "weft/adaptor/blind"

/* The secret scalars of one call, in sodium_malloc'd memory. */
struct secrets {
	secp256k1_keypair kp;
	uint8_t d[32], k[32], t[32], masked[32 + 33 + 32 + 32];
};

static struct secrets *secrets_new(void)
{
	struct secrets *x = sodium_malloc(sizeof(*x));
	if (x == NULL)
		abort();
	return x;
}

static void secrets_free(struct secrets *x)
{
	sodium_free(x); /* wipes */
}

/* A context for point multiplications by secrets (blinded when seed). */
static secp256k1_context *context(const uint8_t *seed32)
{
	secp256k1_context *ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
	if (ctx == NULL || (seed32 && !secp256k1_context_randomize(ctx, seed32)))
		abort();
	return ctx;
}

/* BIP340's challenge e of (x(R), P, m) as a scalar: 0, or -1 when the
 * hash is not below n (or is 0). */
static int challenge(const secp256k1_context *ctx, const uint8_t R33[33], const uint8_t P32[32],
		     const uint8_t msg[32], uint8_t e[32])
{
	uint8_t in[96];
	memcpy(in, R33 + 1, 32);
	memcpy(in + 32, P32, 32);
	memcpy(in + 64, msg, 32);
	if (!secp256k1_tagged_sha256(ctx, e, (const unsigned char *)CHALLENGE_TAG, sizeof(CHALLENGE_TAG) - 1, in,
				     sizeof(in)))
		return -1;
	return secp256k1_ec_seckey_verify(ctx, e) ? 0 : -1;
}

int weft_adaptor_point(const uint8_t t[32], uint8_t T[WEFT_ADAPTOR_POINT_LEN])
{
	secp256k1_context *ctx = context(NULL);
	secp256k1_pubkey p;
	size_t len = WEFT_ADAPTOR_POINT_LEN;
	int rc = secp256k1_ec_pubkey_create(ctx, &p, t) &&
				 secp256k1_ec_pubkey_serialize(ctx, T, &len, &p, SECP256K1_EC_COMPRESSED)
			 ? 0
			 : WEFT_EINVAL;
	secp256k1_context_destroy(ctx);
	return rc;
}

int weft_adaptor_presign(const uint8_t seckey[32], const uint8_t msg[32], const uint8_t T[WEFT_ADAPTOR_POINT_LEN],
			 const uint8_t aux[32], uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN])
{
	uint8_t seed[32], P32[32], R33[33], e[32], s[32];
	secp256k1_pubkey Tp, R0, R;
	const secp256k1_pubkey *both[2] = {&R0, &Tp};
	secp256k1_xonly_pubkey P;
	int parity = 0;
	size_t len = sizeof(R33);
	crypto_generichash(seed, sizeof(seed), aux, 32, (const unsigned char *)BLIND_TAG, sizeof(BLIND_TAG) - 1);
	secp256k1_context *ctx = context(seed);
	struct secrets *x = secrets_new();
	int rc = WEFT_EINVAL;
	if (!secp256k1_ec_pubkey_parse(ctx, &Tp, T, WEFT_ADAPTOR_POINT_LEN) || !secp256k1_keypair_create(ctx, &x->kp, seckey) ||
	    !secp256k1_keypair_xonly_pub(ctx, &P, &parity, &x->kp) || !secp256k1_xonly_pubkey_serialize(ctx, P32, &P) ||
	    !secp256k1_keypair_sec(ctx, x->d, &x->kp))
		goto out;
	/* d such that d·G has an even y, as BIP340 signs. */
	if (parity && !secp256k1_ec_seckey_negate(ctx, x->d))
		goto out;
	/* k = H_nonce((d xor H_aux(aux)) || T || P || m) */
	if (!secp256k1_tagged_sha256(ctx, x->masked, (const unsigned char *)AUX_TAG, sizeof(AUX_TAG) - 1, aux, 32))
		goto out;
	for (int i = 0; i < 32; i++)
		x->masked[i] ^= x->d[i];
	memcpy(x->masked + 32, T, 33);
	memcpy(x->masked + 65, P32, 32);
	memcpy(x->masked + 97, msg, 32);
	if (!secp256k1_tagged_sha256(ctx, x->k, (const unsigned char *)NONCE_TAG, sizeof(NONCE_TAG) - 1, x->masked,
				     sizeof(x->masked)) ||
	    !secp256k1_ec_seckey_verify(ctx, x->k))
		goto out;
	/* R = k·G + T; an odd R is signed as -R: k negated. */
	if (!secp256k1_ec_pubkey_create(ctx, &R0, x->k) || !secp256k1_ec_pubkey_combine(ctx, &R, both, 2) ||
	    !secp256k1_ec_pubkey_serialize(ctx, R33, &len, &R, SECP256K1_EC_COMPRESSED))
		goto out;
	if (R33[0] == 0x03 && !secp256k1_ec_seckey_negate(ctx, x->k))
		goto out;
	if (challenge(ctx, R33, P32, msg, e) != 0)
		goto out;
	/* s' = k + e·d */
	memcpy(s, x->d, 32);
	if (!secp256k1_ec_seckey_tweak_mul(ctx, s, e) || !secp256k1_ec_seckey_tweak_add(ctx, s, x->k))
		goto out;
	memcpy(presig, R33, 33);
	memcpy(presig + 33, s, 32);
	rc = 0;
out:
	secrets_free(x);
	sodium_memzero(seed, sizeof(seed));
	secp256k1_context_destroy(ctx);
	return rc;
}

int weft_adaptor_preverify(const uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN], const uint8_t xonly[32],
			   const uint8_t msg[32], const uint8_t T[WEFT_ADAPTOR_POINT_LEN])
{
	uint8_t P33[33], e[32], a[33], b[33];
	secp256k1_pubkey P, R, Tp, S, want;
	const secp256k1_pubkey *terms[3] = {&R, &Tp, &P};
	size_t alen = sizeof(a), blen = sizeof(b);
	secp256k1_context *ctx = context(NULL);
	int rc = WEFT_ECRYPTO;
	P33[0] = 0x02;
	memcpy(P33 + 1, xonly, 32);
	if (!secp256k1_ec_pubkey_parse(ctx, &P, P33, 33) || !secp256k1_ec_pubkey_parse(ctx, &R, presig, 33) ||
	    !secp256k1_ec_pubkey_parse(ctx, &Tp, T, WEFT_ADAPTOR_POINT_LEN) || (presig[0] != 0x02 && presig[0] != 0x03) ||
	    challenge(ctx, presig, xonly, msg, e) != 0)
		goto out;
	/* s'·G == R - T + e·P (R even), or -R + T + e·P (R odd) */
	if (!secp256k1_ec_pubkey_tweak_mul(ctx, &P, e) || !secp256k1_ec_pubkey_create(ctx, &S, presig + 33))
		goto out;
	if (presig[0] == 0x02 ? !secp256k1_ec_pubkey_negate(ctx, &Tp) : !secp256k1_ec_pubkey_negate(ctx, &R))
		goto out;
	if (!secp256k1_ec_pubkey_combine(ctx, &want, terms, 3) ||
	    !secp256k1_ec_pubkey_serialize(ctx, a, &alen, &want, SECP256K1_EC_COMPRESSED) ||
	    !secp256k1_ec_pubkey_serialize(ctx, b, &blen, &S, SECP256K1_EC_COMPRESSED))
		goto out;
	rc = memcmp(a, b, sizeof(a)) == 0 ? 0 : WEFT_ECRYPTO;
out:
	secp256k1_context_destroy(ctx);
	return rc;
}

int weft_adaptor_adapt(const uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN], const uint8_t t[32], const uint8_t xonly[32],
		       const uint8_t msg[32], uint8_t sig[64])
{
	uint8_t s[32];
	secp256k1_xonly_pubkey P;
	struct secrets *x = secrets_new();
	int rc = WEFT_ECRYPTO;
	memcpy(x->t, t, 32);
	memcpy(s, presig + 33, 32);
	/* s = s' + t (R even) or s' - t (R odd) */
	if ((presig[0] == 0x03 && !secp256k1_ec_seckey_negate(secp256k1_context_static, x->t)) ||
	    !secp256k1_ec_seckey_tweak_add(secp256k1_context_static, s, x->t))
		goto out;
	memcpy(sig, presig + 1, 32);
	memcpy(sig + 32, s, 32);
	if (secp256k1_xonly_pubkey_parse(secp256k1_context_static, &P, xonly) &&
	    secp256k1_schnorrsig_verify(secp256k1_context_static, sig, msg, 32, &P))
		rc = 0;
out:
	if (rc != 0)
		memset(sig, 0, 64);
	secrets_free(x);
	return rc;
}

int weft_adaptor_extract(const uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN], const uint8_t sig[64],
			 const uint8_t T[WEFT_ADAPTOR_POINT_LEN], uint8_t t[32])
{
	uint8_t neg[32], got[33];
	secp256k1_pubkey p;
	size_t len = sizeof(got);
	struct secrets *x = secrets_new();
	secp256k1_context *ctx = context(NULL);
	int rc = WEFT_ECRYPTO;
	if (memcmp(sig, presig + 1, 32) != 0 || (presig[0] != 0x02 && presig[0] != 0x03))
		goto out;
	/* t = s - s', negated for an odd R */
	memcpy(neg, presig + 33, 32);
	memcpy(x->t, sig + 32, 32);
	if (!secp256k1_ec_seckey_negate(ctx, neg) || !secp256k1_ec_seckey_tweak_add(ctx, x->t, neg) ||
	    (presig[0] == 0x03 && !secp256k1_ec_seckey_negate(ctx, x->t)))
		goto out;
	if (!secp256k1_ec_pubkey_create(ctx, &p, x->t) ||
	    !secp256k1_ec_pubkey_serialize(ctx, got, &len, &p, SECP256K1_EC_COMPRESSED) ||
	    memcmp(got, T, WEFT_ADAPTOR_POINT_LEN) != 0)
		goto out;
	memcpy(t, x->t, 32);
	rc = 0;
out:
	secrets_free(x);
	secp256k1_context_destroy(ctx);
	return rc;
}
