/* tests/fuzz/adaptor.c - libFuzzer target for BIP340 Schnorr adaptor
 * signatures (src/lib/adaptor.c, weft/adaptor.h).
 *
 * Input: mode (1 byte), then material read as: secret key (32), message
 * (32), t (32), aux (32), then a forged pre-signature (65), signature (64)
 * and T (33), zeros past the end.
 *   honest part  with the key, message, t and aux: when presign succeeds,
 *                preverify must accept, adapt must give a signature that
 *                BIP340 verification accepts, and extract must give t back;
 *                mode bit 0 flips bit (mode >> 1) of the pre-signature
 *                first, after which preverify must refuse it.
 *   forged part  the forged pre-signature, signature and T against the
 *                honest key and message: whenever preverify accepts it
 *                and adapt with t succeeds, t·G must be T and extract must
 *                give t back; whenever extract gives some t', t'·G is T.
 * abort()s on any violation.  With WEFT_FUZZ_SEEDS=DIR it writes seeds and
 * exits.  Build and run: make fuzz-adaptor (tests/fuzz/README). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/adaptor.h"
#include "weft/crypto.h"
#include "weft/ledger.h"

#define MATERIAL (32 * 4 + 65 + 64 + 33)

static void honest(uint8_t mode, const uint8_t *m)
{
	const uint8_t *sk = m, *msg = m + 32, *t = m + 64, *aux = m + 96;
	uint8_t pk[32], T[33], pre[65], sig[64], back[32];
	if (weft_ledger_pubkey(sk, pk) != 0 || weft_adaptor_point(t, T) != 0 ||
	    weft_adaptor_presign(sk, msg, T, aux, pre) != 0)
		return;
	if (mode & 1) {
		unsigned bit = (mode >> 1) % (65 * 8);
		pre[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		pf_check(weft_adaptor_preverify(pre, pk, msg, T) != 0, "a flipped pre-signature refused");
		return;
	}
	pf_check(weft_adaptor_preverify(pre, pk, msg, T) == 0, "an honest pre-signature pre-verifies");
	pf_check(weft_adaptor_adapt(pre, t, pk, msg, sig) == 0, "an honest pre-signature adapts");
	pf_check(weft_ledger_schnorr_verify(pk, msg, sig) == 0, "the adapted signature verifies");
	pf_check(weft_adaptor_extract(pre, sig, T, back) == 0 && memcmp(back, t, 32) == 0, "t extracted");
}

static void forged(const uint8_t *m)
{
	const uint8_t *sk = m, *msg = m + 32, *t = m + 64, *pre = m + 128, *fsig = m + 193, *T = m + 257;
	uint8_t pk[32], sig[64], back[32], P[33];
	if (weft_ledger_pubkey(sk, pk) != 0)
		return;
	if (weft_adaptor_preverify(pre, pk, msg, T) == 0 && weft_adaptor_adapt(pre, t, pk, msg, sig) == 0) {
		pf_check(weft_adaptor_point(t, P) == 0 && memcmp(P, T, 33) == 0, "a pre-verified adapt implies t·G = T");
		pf_check(weft_adaptor_extract(pre, sig, T, back) == 0 && memcmp(back, t, 32) == 0, "and t extracts");
	}
	if (weft_adaptor_extract(pre, fsig, T, back) == 0)
		pf_check(weft_adaptor_point(back, P) == 0 && memcmp(P, T, 33) == 0, "an extracted t is T's");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t m[MATERIAL] = {0};
	if (size < 1)
		return 0;
	memcpy(m, data + 1, size - 1 < MATERIAL ? size - 1 : MATERIAL);
	honest(data[0], m);
	forged(m);
	return 0;
}

static void write_seeds(const char *dir)
{
	uint8_t seed[1 + MATERIAL];
	for (int mode = 0; mode < 4; mode++) {
		char name[32];
		for (size_t i = 0; i < sizeof(seed); i++)
			seed[i] = (uint8_t)(i * 53 + mode * 7 + 1);
		seed[0] = (uint8_t)(mode == 1 ? 1 : mode == 3 ? 0x81 : 0);
		if (mode == 2) { /* a forged part that is an honest pre-signature of the key and message */
			uint8_t *m = seed + 1, pk[32];
			if (weft_ledger_pubkey(m, pk) == 0 && weft_adaptor_point(m + 64, m + 257) == 0)
				weft_adaptor_presign(m, m + 32, m + 257, m + 96, m + 128);
			weft_adaptor_adapt(m + 128, m + 64, pk, m + 32, m + 193);
		}
		snprintf(name, sizeof(name), "mode%d", mode);
		pf_write_file(dir, name, seed, sizeof(seed));
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	pf_check(weft_crypto_init() == 0, "crypto init");
	if (getenv("WEFT_FUZZ_SEEDS"))
		write_seeds(getenv("WEFT_FUZZ_SEEDS"));
	return 0;
}
