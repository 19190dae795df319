/* ledger_tx.c - tests of the ledger's transactions (protocols/ledger/tx.c):
 * BIP340 keys and signatures against vectors 0-3 of the BIP's
 * test-vectors.csv, the transfer wire format (round trip, opaque data,
 * malformed and non-canonical encodings), the signature hash against a
 * known answer, signing and tampering, the stateless checks and the
 * outcome names. */
#include <stdlib.h>
#include <string.h>

#include "../lib/bip340.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"


static void hex(uint8_t *out, size_t len, const char *h)
{
	if (weft_hex_decode(out, len, h, strlen(h)) != 0)
		abort();
}

static void test_vectors(void)
{
	for (size_t v = 0; v < sizeof(bip340_vectors) / sizeof(bip340_vectors[0]); v++) {
		uint8_t sk[32], pk[32], aux[32], msg[32], sig[64], got[64], gotpk[32];
		hex(sk, 32, bip340_vectors[v].sk);
		hex(pk, 32, bip340_vectors[v].pk);
		hex(aux, 32, bip340_vectors[v].aux);
		hex(msg, 32, bip340_vectors[v].msg);
		hex(sig, 64, bip340_vectors[v].sig);

		ok(weft_ledger_pubkey(sk, gotpk) == 0 && memcmp(gotpk, pk, 32) == 0, "vector %zu: public key", v);
		ok(weft_ledger_pubkey_check(pk) == 0, "vector %zu: public key is valid", v);
		ok(weft_ledger_schnorr_sign(sk, msg, aux, got) == 0 && memcmp(got, sig, 64) == 0,
		   "vector %zu: signature", v);
		is_int(weft_ledger_schnorr_verify(pk, msg, sig), 0, "vector %zu: verifies", v);
		sig[v * 9] ^= 0x01;
		is_int(weft_ledger_schnorr_verify(pk, msg, sig), WEFT_ECRYPTO, "vector %zu: a flipped bit fails", v);
		sig[v * 9] ^= 0x01;
		msg[31] ^= 0x80;
		is_int(weft_ledger_schnorr_verify(pk, msg, sig), WEFT_ECRYPTO, "vector %zu: another message fails",
		       v);
	}
}

static void test_keys(void)
{
	uint8_t sk[32] = {0}, pk[32], five[32] = {0}, ff[32], msg[32] = {0}, sig[64] = {0};

	is_int(weft_ledger_pubkey(sk, pk), WEFT_EINVAL, "secret key 0 is invalid");
	/* The group order n is not a valid secret key either. */
	hex(sk, 32, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141");
	is_int(weft_ledger_pubkey(sk, pk), WEFT_EINVAL, "secret key n is invalid");
	is_int(weft_ledger_schnorr_sign(sk, msg, msg, sig), WEFT_EINVAL, "signing with n fails");
	five[31] = 5; /* 5^3 + 7 is not a square mod p */
	memset(ff, 0xff, sizeof(ff)); /* above p */
	is_int(weft_ledger_pubkey_check(five), WEFT_EINVAL, "x = 5 is not on the curve");
	is_int(weft_ledger_pubkey_check(ff), WEFT_EINVAL, "x >= p is not a key");
	is_int(weft_ledger_schnorr_verify(ff, msg, sig), WEFT_ECRYPTO, "verifying with an invalid key fails");
}

/* A transfer from vector 0's key to vector 1's. */
static void sample(struct weft_ledger_transfer *t, uint8_t sk[32])
{
	memset(t, 0, sizeof(*t));
	hex(sk, 32, bip340_vectors[0].sk);
	hex(t->from, 32, bip340_vectors[0].pk);
	hex(t->to, 32, bip340_vectors[1].pk);
	t->amount = 1000;
	t->nonce = 7;
}

static int decode_hex(const char *h, struct weft_ledger_transfer *t)
{
	uint8_t buf[512];
	size_t len = strlen(h) / 2;
	hex(buf, len, h);
	return weft_ledger_transfer_decode(buf, len, t);
}

static void test_sighash_and_sign(void)
{
	struct weft_ledger_transfer t, u;
	uint8_t sk[32], msg[32], want[32], aux[32] = {0}, bad[32] = {0};

	sample(&t, sk);
	weft_ledger_transfer_sighash(&t, msg);
	hex(want, 32, "82285a0fb9319e3d9d9205b3cd8af2db0bd42b460020f647183f2e73779063be");
	is_mem(msg, want, 32, "sighash: known answer (keyed BLAKE2b-256 over from, to, amount, nonce)");
	for (int f = 0; f < 4; f++) {
		u = t;
		if (f == 0)
			u.from[0] ^= 1;
		else if (f == 1)
			u.to[31] ^= 1;
		else if (f == 2)
			u.amount++;
		else
			u.nonce++;
		uint8_t m2[32];
		weft_ledger_transfer_sighash(&u, m2);
		ok(memcmp(m2, msg, 32) != 0, "sighash covers field %d", f);
	}

	memset(t.from, 0, sizeof(t.from));
	is_int(weft_ledger_transfer_sign(&t, sk, aux), 0, "sign");
	hex(want, 32, bip340_vectors[0].pk);
	is_mem(t.from, want, 32, "sign sets from to the signer's key");
	is_int(weft_ledger_transfer_verify(&t), 0, "the signature verifies");
	for (int f = 0; f < 5; f++) {
		u = t;
		if (f == 0)
			u.from[5] ^= 0x10;
		else if (f == 1)
			u.to[5] ^= 0x10;
		else if (f == 2)
			u.amount ^= 1;
		else if (f == 3)
			u.nonce ^= 1;
		else
			u.sig[40] ^= 0x10;
		is_int(weft_ledger_transfer_verify(&u), WEFT_ECRYPTO, "tampered field %d fails", f);
	}
	u = t;
	hex(u.from, 32, bip340_vectors[1].pk);
	is_int(weft_ledger_transfer_verify(&u), WEFT_ECRYPTO, "another key's claim fails");

	u = t;
	ok(weft_ledger_transfer_sign(&u, bad, aux) == WEFT_EINVAL && memcmp(&u, &t, sizeof(t)) == 0,
	   "signing with an invalid key fails and leaves the transfer unchanged");

	/* Another aux_rand gives another, equally valid signature. */
	memset(aux, 0x42, sizeof(aux));
	u = t;
	ok(weft_ledger_transfer_sign(&u, sk, aux) == 0 && memcmp(u.sig, t.sig, 64) != 0 &&
	   weft_ledger_transfer_verify(&u) == 0, "aux_rand changes the signature, which still verifies");
}

static void test_wire(void)
{
	struct weft_ledger_transfer t, d;
	struct weft_mpw w;
	uint8_t sk[32], aux[32] = {0};
	static const char prefix[] = "\x97\xad" "weft.transfer" "\x01\xc4\x20";

	sample(&t, sk);
	weft_ledger_transfer_sign(&t, sk, aux);
	weft_mpw_init(&w);
	weft_ledger_transfer_encode(&t, &w);
	ok(w.len > sizeof(prefix) - 1 && memcmp(w.buf, prefix, sizeof(prefix) - 1) == 0,
	   "encoding opens with [\"weft.transfer\", 1, bin 32 ...");
	is_int((long long)w.len, 1 + 14 + 1 + 34 + 34 + 3 + 1 + 66, "encoded length with small integers");
	memset(&d, 0, sizeof(d));
	is_int(weft_ledger_transfer_decode(w.buf, w.len, &d), 0, "decodes");
	ok(memcmp(&d, &t, sizeof(t)) == 0, "round trip gives the same transfer");

	/* Truncations: before the tag is complete the bytes are not a
	 * transfer; after it, a malformed one. */
	bool all = true;
	for (size_t cut = 0; cut < w.len; cut++) {
		int rc = weft_ledger_transfer_decode(w.buf, cut, &d);
		int want = cut < 15 ? WEFT_NOTFOUND : WEFT_EDECODE;
		if (rc != want) {
			diag("cut at %zu: %d, want %d", cut, rc, want);
			all = false;
		}
	}
	ok(all, "every truncation is opaque (inside the tag) or EDECODE (after it)");

	uint8_t buf[256];
	memcpy(buf, w.buf, w.len);
	buf[w.len] = 0xc0;
	is_int(weft_ledger_transfer_decode(buf, w.len + 1, &d), WEFT_EDECODE, "a trailing byte is EDECODE");

	/* Every single-byte change decodes to a transfer, opaque data or
	 * EDECODE, and a transfer only when it re-encodes to those bytes. */
	all = true;
	for (size_t i = 0; i < w.len; i++) {
		for (int x = 1; x < 256; x <<= 1) {
			memcpy(buf, w.buf, w.len);
			buf[i] ^= (uint8_t)x;
			int rc = weft_ledger_transfer_decode(buf, w.len, &d);
			if (rc == 0) {
				struct weft_mpw w2;
				weft_mpw_init(&w2);
				weft_ledger_transfer_encode(&d, &w2);
				if (w2.len != w.len || memcmp(w2.buf, buf, w.len) != 0)
					all = false;
				weft_mpw_free(&w2);
			} else if (rc != WEFT_NOTFOUND && rc != WEFT_EDECODE) {
				all = false;
			}
		}
	}
	ok(all, "single-bit changes: transfer (canonical), opaque or EDECODE, nothing else");
	weft_mpw_free(&w);

	t.amount = UINT64_MAX;
	t.nonce = UINT64_MAX;
	weft_mpw_init(&w);
	weft_ledger_transfer_encode(&t, &w);
	is_int((long long)w.len, WEFT_LEDGER_TRANSFER_MAX_LEN, "the largest transfer is WEFT_LEDGER_TRANSFER_MAX_LEN");
	ok(weft_ledger_transfer_decode(w.buf, w.len, &d) == 0 && d.amount == UINT64_MAX && d.nonce == UINT64_MAX,
	   "amount and nonce 2^64 - 1 round-trip");
	weft_mpw_free(&w);
}

/* Hex of a transfer whose fields after the tag are FIELDS. */
#define TAG "ad" "776566742e7472616e73666572"
#define K32 "c420" "0000000000000000000000000000000000000000000000000000000000000000"
#define S64 "c440" "0000000000000000000000000000000000000000000000000000000000000000" \
	    "0000000000000000000000000000000000000000000000000000000000000000"

static void test_opaque_and_malformed(void)
{
	static const struct {
		const char *hex, *what;
		int rc;
	} cases[] = {
		{"", "empty", WEFT_NOTFOUND},
		{"68656c6c6f", "plain text", WEFT_NOTFOUND},
		{"2a", "a msgpack integer", WEFT_NOTFOUND},
		{"90", "an empty array", WEFT_NOTFOUND},
		{"91" "2a", "an array of an integer", WEFT_NOTFOUND},
		{"92" "a3666f6f" "01", "an array with another tag", WEFT_NOTFOUND},
		{"91" "ac776566742e7472616e73666572", "a tag one byte short", WEFT_NOTFOUND},
		{"97" "c40d776566742e7472616e73666572" "01", "the tag as bin", WEFT_NOTFOUND},
		{"81" TAG "01", "a map", WEFT_NOTFOUND},
		{"dc", "a truncated array header", WEFT_NOTFOUND},
		{"91" TAG, "only the tag", WEFT_EDECODE},
		{"96" TAG "01" K32 K32 "01" "00", "six elements", WEFT_EDECODE},
		{"98" TAG "01" K32 K32 "01" "00" S64 "c0", "eight elements", WEFT_EDECODE},
		{"97" TAG "02" K32 K32 "01" "00" S64, "version 2", WEFT_EDECODE},
		{"97" TAG "00" K32 K32 "01" "00" S64, "version 0", WEFT_EDECODE},
		{"97" TAG "01" "c41f" "00000000000000000000000000000000000000000000000000000000000000" K32 "01" "00"
		 S64, "from of 31 bytes", WEFT_EDECODE},
		{"97" TAG "01" "a2" "6162" K32 "01" "00" S64, "from as a string", WEFT_EDECODE},
		{"97" TAG "01" K32 K32 "ff" "00" S64, "a negative amount", WEFT_EDECODE},
		{"97" TAG "01" K32 K32 "c0" "00" S64, "a nil amount", WEFT_EDECODE},
		{"97" TAG "01" K32 K32 "01" "cb3ff0000000000000" S64, "a float nonce", WEFT_EDECODE},
		{"97" TAG "01" K32 K32 "01" "00" K32, "a 32-byte signature", WEFT_EDECODE},
		{"97" TAG "01" K32 K32 "cf0000000000000005" "00" S64, "amount 5 as uint64 (not canonical)",
		 WEFT_EDECODE},
		{"97" TAG "01" K32 K32 "01" "cc05" S64, "nonce 5 as uint8 (not canonical)", WEFT_EDECODE},
		{"97" "d90d776566742e7472616e73666572" "01" K32 K32 "01" "00" S64, "the tag as str8 (not canonical)",
		 WEFT_EDECODE},
		{"dc0007" TAG "01" K32 K32 "01" "00" S64, "array16 header (not canonical)", WEFT_EDECODE},
		{"97" TAG "01" "c5" "0020" "0000000000000000000000000000000000000000000000000000000000000000" K32
		 "01" "00" S64, "from as bin16 (not canonical)", WEFT_EDECODE},
		{"97" TAG "01" K32 K32 "01" "00" S64, "all-zero fields (well-formed)", 0},
	};
	struct weft_ledger_transfer t;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_int(decode_hex(cases[i].hex, &t), cases[i].rc, "decode %s", cases[i].what);
}

static void test_precheck(void)
{
	struct weft_ledger_transfer t, u;
	struct weft_mpw w;
	enum weft_ledger_outcome why;
	uint8_t sk[32], aux[32] = {0};

	sample(&t, sk);
	weft_ledger_transfer_sign(&t, sk, aux);
	weft_mpw_init(&w);

	weft_ledger_transfer_encode(&t, &w);
	ok(weft_ledger_precheck(w.buf, w.len, &why) == 0 && why == WEFT_LEDGER_APPLIED, "a good transfer passes");
	ok(weft_ledger_precheck((const uint8_t *)"hello", 5, &why) == WEFT_NOTFOUND && why == WEFT_LEDGER_OPAQUE,
	   "opaque data: NOTFOUND, opaque");
	ok(weft_ledger_precheck(w.buf, w.len - 1, &why) == WEFT_EDECODE && why == WEFT_LEDGER_MALFORMED,
	   "truncated: EDECODE, malformed");

	u = t;
	u.amount = 0;
	weft_ledger_transfer_sign(&u, sk, aux);
	weft_mpw_reset(&w);
	weft_ledger_transfer_encode(&u, &w);
	ok(weft_ledger_precheck(w.buf, w.len, &why) == WEFT_EINVAL && why == WEFT_LEDGER_ZERO_AMOUNT,
	   "amount 0: EINVAL, zero_amount");

	u = t;
	memcpy(u.to, u.from, 32);
	weft_ledger_transfer_sign(&u, sk, aux);
	weft_mpw_reset(&w);
	weft_ledger_transfer_encode(&u, &w);
	ok(weft_ledger_precheck(w.buf, w.len, &why) == WEFT_EINVAL && why == WEFT_LEDGER_SELF_TRANSFER,
	   "to == from: EINVAL, self_transfer");

	u = t;
	memset(u.to, 0, 32);
	u.to[31] = 5;
	weft_ledger_transfer_sign(&u, sk, aux);
	weft_mpw_reset(&w);
	weft_ledger_transfer_encode(&u, &w);
	ok(weft_ledger_precheck(w.buf, w.len, &why) == WEFT_EINVAL && why == WEFT_LEDGER_BAD_RECIPIENT,
	   "recipient off the curve: EINVAL, bad_recipient");

	u = t;
	u.amount++;
	weft_mpw_reset(&w);
	weft_ledger_transfer_encode(&u, &w);
	ok(weft_ledger_precheck(w.buf, w.len, &why) == WEFT_ECRYPTO && why == WEFT_LEDGER_BAD_SIGNATURE,
	   "changed after signing: ECRYPTO, bad_signature");

	u = t;
	u.amount = 0;
	ok(weft_ledger_transfer_check(&u, &why) == WEFT_EINVAL && why == WEFT_LEDGER_ZERO_AMOUNT,
	   "transfer_check: the cheap checks come before the signature");
	weft_mpw_free(&w);
}

static void test_names(void)
{
	static const char *const names[] = {"applied",       "opaque",        "malformed", "zero_amount",
					    "self_transfer", "bad_recipient", "bad_signature", "bad_nonce",
					    "insufficient_funds", "balance_overflow", "bad_members", "channel_exists",
					    "channel_unknown", "channel_closed", "not_conserved", "already_closing",
					    "not_closing", "stale_root", "too_early", "too_late", "lock_unknown", "bad_secret"};
	bool all = true;

	for (int o = 0; o < 22; o++)
		if (strcmp(weft_ledger_outcome_name((enum weft_ledger_outcome)o), names[o]) != 0)
			all = false;
	ok(all, "outcome names 0..21");
	is_str(weft_ledger_outcome_name((enum weft_ledger_outcome)22), "unknown", "an unknown outcome");
}

int main(void)
{
	if (weft_crypto_init() != 0)
		abort();
	test_vectors();
	test_keys();
	test_sighash_and_sign();
	test_wire();
	test_opaque_and_malformed();
	test_precheck();
	test_names();
	return done_testing();
}
