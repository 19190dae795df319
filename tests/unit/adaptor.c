/* adaptor.c - tests of BIP340 Schnorr adaptor signatures (src/lib/
 * adaptor.c, weft/adaptor.h):
 *   vectors     for the keys and messages of BIP340's test vectors 0-3
 *               (their published signatures verify first), a pre-signature
 *               under a random T pre-verifies, adapts into a signature
 *               that secp256k1_schnorrsig_verify accepts, and gives t back;
 *   round trips 3000 random keys, messages and secrets, with keys and
 *               nonce points of both y parities counted;
 *   negatives   the wrong T, message or key; every byte of a pre-signature
 *               flipped; adapting with the wrong t; extracting from a plain
 *               signature, from a signature of another pre-signature, or
 *               under another T; T and t that are not a point and a
 *               scalar; a pre-signature whose s' is 0 or n;
 *   nonces      another T, another message or other aux give another R;
 *               the same inputs give the same pre-signature. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../lib/bip340.h"
#include "../tap.h"
#include "weft/adaptor.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"


/* The group order n. */
static const char *const order_hex = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141";

static void hex(uint8_t *out, size_t len, const char *h)
{
	if (weft_hex_decode(out, len, h, strlen(h)) != 0)
		abort();
}

/* A random valid scalar. */
static void scalar(uint8_t out[32])
{
	uint8_t T[WEFT_ADAPTOR_POINT_LEN];
	do
		randombytes_buf(out, 32);
	while (weft_adaptor_point(out, T) != 0);
}

static void test_vectors(void)
{
	for (size_t v = 0; v < sizeof(bip340_vectors) / sizeof(bip340_vectors[0]); v++) {
		uint8_t sk[32], pk[32], aux[32], msg[32], sig[64], t[32], T[33], pre[65], got[64], back[32];
		hex(sk, 32, bip340_vectors[v].sk);
		hex(pk, 32, bip340_vectors[v].pk);
		hex(aux, 32, bip340_vectors[v].aux);
		hex(msg, 32, bip340_vectors[v].msg);
		hex(sig, 64, bip340_vectors[v].sig);
		is_int(weft_ledger_schnorr_verify(pk, msg, sig), 0, "vector %zu: the published signature verifies", v);
		scalar(t);
		is_int(weft_adaptor_point(t, T), 0, "vector %zu: T = t·G", v);
		is_int(weft_adaptor_presign(sk, msg, T, aux, pre), 0, "vector %zu: pre-signed under T", v);
		is_int(weft_adaptor_preverify(pre, pk, msg, T), 0, "vector %zu: pre-verifies against the key and T", v);
		ok(weft_adaptor_adapt(pre, t, pk, msg, got) == 0 && weft_ledger_schnorr_verify(pk, msg, got) == 0,
		   "vector %zu: adapted, the signature verifies as BIP340", v);
		ok(weft_adaptor_extract(pre, got, T, back) == 0 && memcmp(back, t, 32) == 0,
		   "vector %zu: t extracted from the pre-signature and the signature", v);
	}
}

static void test_round_trips(void)
{
	enum { ROUNDS = 3000 };
	int good = 0, r_odd = 0, p_odd = 0;
	for (int i = 0; i < ROUNDS; i++) {
		uint8_t sk[32], pk[32], msg[32], aux[32], t[32], T[33], pre[65], sig[64], back[32];
		scalar(sk);
		scalar(t);
		randombytes_buf(msg, sizeof(msg));
		randombytes_buf(aux, sizeof(aux));
		uint8_t full[33];
		if (weft_ledger_pubkey(sk, pk) != 0 || weft_adaptor_point(t, T) != 0 || weft_adaptor_point(sk, full) != 0)
			continue;
		p_odd += full[0] == 0x03;
		if (weft_adaptor_presign(sk, msg, T, aux, pre) != 0)
			continue;
		r_odd += pre[0] == 0x03;
		if (weft_adaptor_preverify(pre, pk, msg, T) == 0 && weft_adaptor_adapt(pre, t, pk, msg, sig) == 0 &&
		    weft_ledger_schnorr_verify(pk, msg, sig) == 0 && weft_adaptor_extract(pre, sig, T, back) == 0 &&
		    memcmp(back, t, 32) == 0)
			good++;
	}
	is_int(good, ROUNDS, "round trips: %d random keys, messages and secrets all pre-verify, adapt, verify and "
			     "extract", ROUNDS);
	ok(r_odd > ROUNDS / 4 && r_odd < 3 * ROUNDS / 4, "round trips: nonce points of both parities (%d odd)", r_odd);
	ok(p_odd > ROUNDS / 4 && p_odd < 3 * ROUNDS / 4, "round trips: keys of both parities (%d odd)", p_odd);
}

static void test_negatives(void)
{
	uint8_t sk[32], pk[32], sk2[32], pk2[32], msg[32], msg2[32], aux[32], t[32], t2[32], T[33], T2[33];
	uint8_t pre[65], pre2[65], sig[64], plain[64], back[32];
	scalar(sk);
	scalar(sk2);
	scalar(t);
	scalar(t2);
	randombytes_buf(msg, 32);
	randombytes_buf(msg2, 32);
	randombytes_buf(aux, 32);
	weft_ledger_pubkey(sk, pk);
	weft_ledger_pubkey(sk2, pk2);
	weft_adaptor_point(t, T);
	weft_adaptor_point(t2, T2);
	is_int(weft_adaptor_presign(sk, msg, T, aux, pre), 0, "negatives: a pre-signature");
	is_int(weft_adaptor_preverify(pre, pk, msg, T2), WEFT_ECRYPTO, "another T: does not pre-verify");
	is_int(weft_adaptor_preverify(pre, pk, msg2, T), WEFT_ECRYPTO, "another message: does not pre-verify");
	is_int(weft_adaptor_preverify(pre, pk2, msg, T), WEFT_ECRYPTO, "another key: does not pre-verify");
	uint8_t Tneg[33];
	memcpy(Tneg, T, 33);
	Tneg[0] ^= 0x01; /* -T: the same x, the other y */
	is_int(weft_adaptor_preverify(pre, pk, msg, Tneg), WEFT_ECRYPTO, "-T (T's parity flipped): does not pre-verify");
	int flips = 0;
	for (int i = 0; i < 65; i++) {
		uint8_t bad[65];
		memcpy(bad, pre, 65);
		bad[i] ^= (uint8_t)(1u << (i % 8));
		flips += weft_adaptor_preverify(bad, pk, msg, T) == WEFT_ECRYPTO;
	}
	is_int(flips, 65, "a bit of each of the 65 bytes flipped: none pre-verifies");
	is_int(weft_adaptor_adapt(pre, t2, pk, msg, sig), WEFT_ECRYPTO, "adapted with the wrong t: refused");
	is_int(weft_adaptor_adapt(pre, t, pk, msg2, sig), WEFT_ECRYPTO, "adapted for another message: refused");
	is_int(weft_adaptor_adapt(pre, t, pk, msg, sig), 0, "adapted with t");
	is_int(weft_adaptor_extract(pre, sig, T2, back), WEFT_ECRYPTO, "extracted under another T: refused");
	is_int(weft_ledger_schnorr_sign(sk, msg, aux, plain), 0, "a plain BIP340 signature of the same message");
	is_int(weft_adaptor_extract(pre, plain, T, back), WEFT_ECRYPTO, "extracted from it: refused (another nonce)");
	is_int(weft_adaptor_presign(sk, msg, T, msg2, pre2), 0, "a second pre-signature (other aux)");
	uint8_t sig2[64];
	is_int(weft_adaptor_adapt(pre2, t, pk, msg, sig2), 0, "... adapted");
	is_int(weft_adaptor_extract(pre, sig2, T, back), WEFT_ECRYPTO,
	       "extracting from the first with the second's signature: refused");
	uint8_t tampered[64];
	memcpy(tampered, sig, 64);
	tampered[63] ^= 1;
	is_int(weft_adaptor_extract(pre, tampered, T, back), WEFT_ECRYPTO, "extracting from a tampered signature: refused");

	uint8_t zero[32] = {0}, n[32], Tbad[33];
	hex(n, 32, order_hex);
	is_int(weft_adaptor_point(zero, Tbad), WEFT_EINVAL, "t = 0: no point");
	is_int(weft_adaptor_point(n, Tbad), WEFT_EINVAL, "t = n: no point");
	memcpy(Tbad, T, 33);
	Tbad[0] = 0x04;
	is_int(weft_adaptor_presign(sk, msg, Tbad, aux, pre2), WEFT_EINVAL, "T with prefix 0x04: refused");
	is_int(weft_adaptor_preverify(pre, pk, msg, Tbad), WEFT_ECRYPTO, "... and it pre-verifies nothing");
	memset(Tbad + 1, 0xff, 32);
	Tbad[0] = 0x02;
	is_int(weft_adaptor_presign(sk, msg, Tbad, aux, pre2), WEFT_EINVAL, "T of x = 2^256 - 1 (not on the curve): refused");
	is_int(weft_adaptor_presign(zero, msg, T, aux, pre2), WEFT_EINVAL, "a secret key of 0: refused");
	uint8_t bad[65];
	memcpy(bad, pre, 65);
	memset(bad + 33, 0, 32);
	is_int(weft_adaptor_preverify(bad, pk, msg, T), WEFT_ECRYPTO, "s' = 0: does not pre-verify");
	memcpy(bad + 33, n, 32);
	is_int(weft_adaptor_preverify(bad, pk, msg, T), WEFT_ECRYPTO, "s' = n: does not pre-verify");
	is_int(weft_adaptor_adapt(bad, t, pk, msg, sig), WEFT_ECRYPTO, "... nor adapts");
	memcpy(bad, pre, 65);
	bad[0] = 0x04;
	is_int(weft_adaptor_extract(bad, sig, T, back), WEFT_ECRYPTO, "a pre-signature with R prefix 0x04: extracts nothing");
}

static void test_nonces(void)
{
	uint8_t sk[32], msg[32], msg2[32], aux[32], aux2[32], t[32], t2[32], T[33], T2[33];
	uint8_t a[65], b[65], c[65], d[65], e[65];
	scalar(sk);
	scalar(t);
	scalar(t2);
	randombytes_buf(msg, 32);
	randombytes_buf(msg2, 32);
	randombytes_buf(aux, 32);
	randombytes_buf(aux2, 32);
	weft_adaptor_point(t, T);
	weft_adaptor_point(t2, T2);
	weft_adaptor_presign(sk, msg, T, aux, a);
	weft_adaptor_presign(sk, msg, T2, aux, b);
	weft_adaptor_presign(sk, msg2, T, aux, c);
	weft_adaptor_presign(sk, msg, T, aux2, d);
	weft_adaptor_presign(sk, msg, T, aux, e);
	/* R - T is k·G: compare the nonces, not R (which has T in it) */
	ok(memcmp(a + 33, b + 33, 32) != 0 && memcmp(a, b, 33) != 0, "another T: another nonce");
	ok(memcmp(a, c, 33) != 0, "another message: another nonce");
	ok(memcmp(a, d, 33) != 0, "other aux (fresh randomness): another nonce");
	ok(memcmp(a, e, 65) == 0, "the same key, message, T and aux: the same pre-signature");
}

int main(void)
{
	if (weft_crypto_init() != 0)
		skip_all("libsodium init failed");
	test_vectors();
	test_round_trips();
	test_negatives();
	test_nonces();
	return done_testing();
}
