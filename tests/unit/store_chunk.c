/* store_chunk.c - TAP tests of chunk encryption (storage/chunk.c,
 * weft/store_chunk.h): round trips in both modes and at sub-block
 * boundaries, in place; the documented construction recomputed with
 * libsodium; every tampering (ciphertext, tag, nonce, wrapped key, wrong
 * content key, leaf key, mode or CID) refused; a rewrite of the same
 * position with other content gets another key and nonce in both modes,
 * and random mode never repeats one; convergent dedup within one secret
 * and not across secrets; a keyless party verifying blobs and single 4 KiB
 * sub-blocks by Merkle proof against the CID. */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/store_chunk.h"
#include "weft/store_keys.h"

struct sealed {
	uint8_t *blob;
	size_t len;
	uint8_t cid[WEFT_MERKLE_HASH];
	uint8_t wrapped[WEFT_CHUNK_WRAPPED_LEN];
};

static int seal(struct sealed *s, enum weft_chunk_mode mode, const struct weft_key *conv, const struct weft_key *leaf,
		const uint8_t *pt, size_t len)
{
	s->len = len + WEFT_CHUNK_OVERHEAD;
	s->blob = malloc(s->len);
	return weft_chunk_seal(mode, conv, leaf, pt, len, s->blob, s->cid, s->wrapped);
}

/* Unwraps and decrypts; 0 when the plaintext comes back equal to pt. */
static int open_chunk(const struct sealed *s, enum weft_chunk_mode mode, const struct weft_key *leaf, const uint8_t *pt)
{
	struct weft_key *ck = weft_key_new();
	size_t len = s->len - WEFT_CHUNK_OVERHEAD;
	uint8_t *out = malloc(len);
	int rc = weft_chunk_unwrap(ck, mode, leaf, s->cid, s->wrapped);
	if (rc == 0)
		rc = weft_chunk_decrypt(out, mode, ck, s->cid, s->blob, s->len);
	if (rc == 0 && memcmp(out, pt, len) != 0)
		rc = -1;
	free(out);
	weft_key_free(ck);
	return rc;
}

static void test_round_trips(void)
{
	static const size_t sizes[] = {1, 4096 - 40, 4096 - 39, 4096, 8192, 100000, 1 << 20};
	struct weft_key *leaf = weft_key_random(), *conv = weft_key_random();
	uint8_t *pt = malloc(1 << 20);
	randombytes_buf(pt, 1 << 20);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int m = WEFT_CHUNK_RANDOM; m <= WEFT_CHUNK_CONVERGENT; m++) {
			struct sealed s;
			ok(seal(&s, m, conv, leaf, pt, sizes[i]) == 0 && open_chunk(&s, m, leaf, pt) == 0 &&
				   weft_chunk_verify(s.cid, s.blob, s.len) == 0,
			   "%s mode, %zu bytes: sealed, verified, unwrapped and decrypted",
			   m == WEFT_CHUNK_RANDOM ? "random" : "convergent", sizes[i]);
			free(s.blob);
		}
	}
	/* In place: pt at blob + 24. */
	uint8_t *blob = malloc(5000 + WEFT_CHUNK_OVERHEAD), cid[32], wrapped[WEFT_CHUNK_WRAPPED_LEN];
	memcpy(blob + WEFT_CHUNK_NONCE_LEN, pt, 5000);
	ok(weft_chunk_seal(WEFT_CHUNK_CONVERGENT, conv, leaf, blob + WEFT_CHUNK_NONCE_LEN, 5000, blob, cid, wrapped) == 0,
	   "sealed in place");
	struct sealed s = {.blob = blob, .len = 5000 + WEFT_CHUNK_OVERHEAD};
	memcpy(s.cid, cid, 32);
	memcpy(s.wrapped, wrapped, sizeof(wrapped));
	ok(open_chunk(&s, WEFT_CHUNK_CONVERGENT, leaf, pt) == 0, "and opens");
	struct sealed t;
	ok(seal(&t, WEFT_CHUNK_CONVERGENT, conv, leaf, pt, 5000) == 0 && memcmp(t.blob, blob, t.len) == 0,
	   "the same bytes as out of place");
	free(t.blob);
	free(blob);

	uint8_t out[64];
	is_int(weft_chunk_seal(WEFT_CHUNK_RANDOM, NULL, leaf, pt, 0, out, cid, wrapped), WEFT_EINVAL, "empty chunk refused");
	is_int(weft_chunk_seal(WEFT_CHUNK_RANDOM, NULL, leaf, pt, (size_t)WEFT_CHUNK_MAX + 1, out, cid, wrapped),
	       WEFT_EINVAL, "chunk over WEFT_CHUNK_MAX refused");
	is_int(weft_chunk_seal(WEFT_CHUNK_CONVERGENT, NULL, leaf, pt, 10, out, cid, wrapped), WEFT_EINVAL,
	       "convergent mode without a secret refused");
	is_int(weft_chunk_seal((enum weft_chunk_mode)3, conv, leaf, pt, 10, out, cid, wrapped), WEFT_EINVAL,
	       "unknown mode refused");
	struct weft_key *ck = weft_key_new();
	is_int(weft_chunk_decrypt(out, WEFT_CHUNK_RANDOM, ck, cid, out, WEFT_CHUNK_OVERHEAD), WEFT_ECORRUPT,
	       "a blob of 40 bytes is no chunk");
	weft_key_free(ck);
	weft_key_free(leaf);
	weft_key_free(conv);
	free(pt);
}

/* The header's construction, with libsodium alone. */
static void test_construction(void)
{
	struct weft_key *leaf = weft_key_random(), *conv = weft_key_random();
	uint8_t pt[3000], key[32], nonce[24], want_cid[32], aad[64], out[3000], ck[32];
	randombytes_buf(pt, sizeof(pt));
	struct sealed s;
	seal(&s, WEFT_CHUNK_CONVERGENT, conv, leaf, pt, sizeof(pt));

	crypto_generichash_state st;
	crypto_generichash_init(&st, conv->b, 32, 32);
	crypto_generichash_update(&st, (const uint8_t *)"weft.store.v1.convergent-key", 29);
	crypto_generichash_update(&st, pt, sizeof(pt));
	crypto_generichash_final(&st, key, 32);
	crypto_generichash(nonce, 24, (const uint8_t *)"weft.store.v1.convergent-nonce", 31, key, 32);
	is_mem(s.blob, nonce, 24, "convergent nonce = 24-byte KDF(content key, convergent-nonce, \"\"), first in the blob");
	memcpy(aad, "weft.store.v1.chunk", 20);
	aad[20] = WEFT_CHUNK_CONVERGENT;
	ok(crypto_aead_xchacha20poly1305_ietf_decrypt(out, NULL, NULL, s.blob + 24, s.len - 24, aad, 21, s.blob, key) ==
			   0 &&
		   memcmp(out, pt, sizeof(pt)) == 0,
	   "blob = nonce || XChaCha20-Poly1305(KDF(S, convergent-key, pt)), AAD label || 0 || mode");
	weft_merkle_root(want_cid, s.blob, s.len);
	is_mem(s.cid, want_cid, 32, "CID = the Merkle root of the whole blob");
	memcpy(aad, "weft.store.v1.wrap", 19);
	aad[19] = WEFT_CHUNK_CONVERGENT;
	memcpy(aad + 20, s.cid, 32);
	ok(crypto_aead_xchacha20poly1305_ietf_decrypt(ck, NULL, NULL, s.wrapped + 24, 48, aad, 52, s.wrapped, leaf->b) ==
			   0 &&
		   memcmp(ck, key, 32) == 0,
	   "wrapped = wnonce || XChaCha20-Poly1305(content key) under the leaf key, AAD label || 0 || mode || CID");
	free(s.blob);
	weft_key_free(leaf);
	weft_key_free(conv);
}

/* weft_chunk_open: the same decryption without the CID check; the AEAD
 * still refuses every flipped bit. */
static void test_open(void)
{
	struct weft_key *leaf = weft_key_random(), *ck = weft_key_new(), *bad = weft_key_random();
	uint8_t pt[9000], *out = malloc(sizeof(pt));
	randombytes_buf(pt, sizeof(pt));
	struct sealed s;
	seal(&s, WEFT_CHUNK_RANDOM, NULL, leaf, pt, sizeof(pt));
	weft_chunk_unwrap(ck, WEFT_CHUNK_RANDOM, leaf, s.cid, s.wrapped);
	ok(weft_chunk_open(out, WEFT_CHUNK_RANDOM, ck, s.blob, s.len) == 0 && memcmp(out, pt, sizeof(pt)) == 0,
	   "open: decrypts a good blob");
	bool refused = true;
	for (size_t i = 0; i < s.len; i += 97) {
		s.blob[i] ^= 0x04;
		refused &= weft_chunk_open(out, WEFT_CHUNK_RANDOM, ck, s.blob, s.len) == WEFT_ECRYPTO;
		s.blob[i] ^= 0x04;
	}
	ok(refused, "open: a flipped bit anywhere in the blob is refused by the tag");
	is_int(weft_chunk_open(out, WEFT_CHUNK_RANDOM, bad, s.blob, s.len), WEFT_ECRYPTO, "open: wrong content key");
	is_int(weft_chunk_open(out, WEFT_CHUNK_CONVERGENT, ck, s.blob, s.len), WEFT_ECRYPTO, "open: wrong mode");
	is_int(weft_chunk_open(out, WEFT_CHUNK_RANDOM, ck, s.blob, WEFT_CHUNK_OVERHEAD), WEFT_ECORRUPT,
	       "open: a blob with no ciphertext");
	free(s.blob);
	free(out);
	weft_key_free(leaf);
	weft_key_free(ck);
	weft_key_free(bad);
}

static void test_tampering(void)
{
	struct weft_key *leaf = weft_key_random(), *other = weft_key_random(), *conv = weft_key_random();
	struct weft_key *ck = weft_key_new(), *bad = weft_key_random();
	uint8_t pt[10000], *out = malloc(sizeof(pt)), cid2[32];
	randombytes_buf(pt, sizeof(pt));
	for (int m = WEFT_CHUNK_RANDOM; m <= WEFT_CHUNK_CONVERGENT; m++) {
		const char *mn = m == WEFT_CHUNK_RANDOM ? "random" : "convergent";
		enum weft_chunk_mode mode = m, wrong = m == WEFT_CHUNK_RANDOM ? WEFT_CHUNK_CONVERGENT : WEFT_CHUNK_RANDOM;
		struct sealed s;
		seal(&s, mode, conv, leaf, pt, sizeof(pt));
		ok(weft_chunk_unwrap(ck, mode, leaf, s.cid, s.wrapped) == 0, "%s: unwraps", mn);

		/* Flipped bits: nonce, ciphertext (first, middle, last block), tag. */
		static const size_t at[] = {0, 23, 24, 5000, 9000, 10023, 10024, 10039};
		bool corrupt = true, crypto = true;
		for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
			s.blob[at[i]] ^= 0x10;
			corrupt &= weft_chunk_decrypt(out, mode, ck, s.cid, s.blob, s.len) == WEFT_ECORRUPT;
			/* A blob and CID both replaced: the AEAD still refuses. */
			weft_merkle_root(cid2, s.blob, s.len);
			crypto &= weft_chunk_decrypt(out, mode, ck, cid2, s.blob, s.len) == WEFT_ECRYPTO;
			s.blob[at[i]] ^= 0x10;
		}
		ok(corrupt, "%s: a flipped nonce, ciphertext or tag bit fails the CID check", mn);
		ok(crypto, "%s: and fails to decrypt even under a matching CID", mn);
		is_int(weft_chunk_decrypt(out, mode, ck, s.cid, s.blob, s.len - 1), WEFT_ECORRUPT, "%s: truncated blob", mn);
		is_int(weft_chunk_decrypt(out, mode, bad, s.cid, s.blob, s.len), WEFT_ECRYPTO, "%s: wrong content key", mn);
		is_int(weft_chunk_decrypt(out, wrong, ck, s.cid, s.blob, s.len), WEFT_ECRYPTO, "%s: wrong mode", mn);
		is_int(weft_chunk_unwrap(ck, mode, other, s.cid, s.wrapped), WEFT_ECRYPTO, "%s: wrong leaf key", mn);
		is_int(weft_chunk_unwrap(ck, wrong, leaf, s.cid, s.wrapped), WEFT_ECRYPTO, "%s: unwrap in the wrong mode", mn);
		is_int(weft_chunk_unwrap(ck, mode, leaf, cid2, s.wrapped), WEFT_ECRYPTO, "%s: unwrap for another CID", mn);
		bool wrap = true;
		for (size_t i = 0; i < WEFT_CHUNK_WRAPPED_LEN; i++) {
			s.wrapped[i] ^= 1;
			wrap &= weft_chunk_unwrap(ck, mode, leaf, s.cid, s.wrapped) == WEFT_ECRYPTO;
			s.wrapped[i] ^= 1;
		}
		ok(wrap, "%s: every flipped bit of the wrapped key refused", mn);
		free(s.blob);
	}
	free(out);
	weft_key_free(leaf);
	weft_key_free(other);
	weft_key_free(conv);
	weft_key_free(ck);
	weft_key_free(bad);
}

static void test_no_reuse(void)
{
	struct weft_key *leaf = weft_key_random(), *conv = weft_key_random();
	struct weft_key *k1 = weft_key_new(), *k2 = weft_key_new();
	uint8_t a[4096], b[4096];
	randombytes_buf(a, sizeof(a));
	memcpy(b, a, sizeof(b));
	b[100] ^= 1; /* the same position rewritten with other content */
	for (int m = WEFT_CHUNK_RANDOM; m <= WEFT_CHUNK_CONVERGENT; m++) {
		const char *mn = m == WEFT_CHUNK_RANDOM ? "random" : "convergent";
		struct sealed x, y;
		seal(&x, m, conv, leaf, a, sizeof(a));
		seal(&y, m, conv, leaf, b, sizeof(b));
		weft_chunk_unwrap(k1, m, leaf, x.cid, x.wrapped);
		weft_chunk_unwrap(k2, m, leaf, y.cid, y.wrapped);
		ok(memcmp(k1->b, k2->b, 32) != 0, "%s: other content at the same position (same leaf key): another key", mn);
		ok(memcmp(x.blob, y.blob, WEFT_CHUNK_NONCE_LEN) != 0, "%s: and another nonce", mn);
		ok(memcmp(x.wrapped, y.wrapped, WEFT_CHUNK_NONCE_LEN) != 0, "%s: and another wrapping nonce", mn);
		free(x.blob);
		free(y.blob);
	}
	/* Random mode: the same content at the same position, many times. */
	enum { N = 1000 };
	uint8_t(*keys)[32] = malloc(N * 32), (*nonces)[24] = malloc(N * 24);
	for (int i = 0; i < N; i++) {
		struct sealed s;
		seal(&s, WEFT_CHUNK_RANDOM, NULL, leaf, a, 64);
		weft_chunk_unwrap(k1, WEFT_CHUNK_RANDOM, leaf, s.cid, s.wrapped);
		memcpy(keys[i], k1->b, 32);
		memcpy(nonces[i], s.blob, 24);
		free(s.blob);
	}
	bool distinct = true;
	for (int i = 0; i < N && distinct; i++)
		for (int j = i + 1; j < N && distinct; j++)
			distinct = memcmp(keys[i], keys[j], 32) != 0 && memcmp(nonces[i], nonces[j], 24) != 0;
	ok(distinct, "random mode: %d seals of the same chunk at the same position: no key or nonce repeats", N);
	free(keys);
	free(nonces);
	weft_key_free(leaf);
	weft_key_free(conv);
	weft_key_free(k1);
	weft_key_free(k2);
}

static void test_dedup(void)
{
	struct weft_key *l1 = weft_key_random(), *l2 = weft_key_random();
	struct weft_key *s1 = weft_key_random(), *s2 = weft_key_random();
	uint8_t pt[20000];
	randombytes_buf(pt, sizeof(pt));
	struct sealed x, y, z, r1, r2;
	seal(&x, WEFT_CHUNK_CONVERGENT, s1, l1, pt, sizeof(pt));
	seal(&y, WEFT_CHUNK_CONVERGENT, s1, l2, pt, sizeof(pt));
	seal(&z, WEFT_CHUNK_CONVERGENT, s2, l1, pt, sizeof(pt));
	ok(memcmp(x.cid, y.cid, 32) == 0 && memcmp(x.blob, y.blob, x.len) == 0,
	   "convergent: same plaintext and secret, other files: same blob and CID (dedup)");
	ok(open_chunk(&x, WEFT_CHUNK_CONVERGENT, l1, pt) == 0 && open_chunk(&y, WEFT_CHUNK_CONVERGENT, l2, pt) == 0,
	   "each file opens the shared blob with its own leaf key");
	is_int(open_chunk(&y, WEFT_CHUNK_CONVERGENT, l1, pt), WEFT_ECRYPTO, "but not with the other file's");
	ok(memcmp(x.cid, z.cid, 32) != 0, "another convergence secret: another CID");
	seal(&r1, WEFT_CHUNK_RANDOM, NULL, l1, pt, sizeof(pt));
	seal(&r2, WEFT_CHUNK_RANDOM, NULL, l1, pt, sizeof(pt));
	ok(memcmp(r1.cid, r2.cid, 32) != 0, "random mode: the same plaintext twice, two CIDs");
	free(x.blob);
	free(y.blob);
	free(z.blob);
	free(r1.blob);
	free(r2.blob);
	weft_key_free(l1);
	weft_key_free(l2);
	weft_key_free(s1);
	weft_key_free(s2);
}

/* A node without keys: the blob against the CID, and one sub-block
 * against it by its Merkle proof. */
static void test_keyless(void)
{
	struct weft_key *leaf = weft_key_random();
	size_t len = 3 * 4096 + 1000;
	uint8_t *pt = malloc(len);
	randombytes_buf(pt, len);
	struct sealed s;
	seal(&s, WEFT_CHUNK_RANDOM, NULL, leaf, pt, len);
	is_int(weft_chunk_verify(s.cid, s.blob, s.len), 0, "keyless: the blob matches its CID");
	bool all = true;
	for (size_t i = 0; i < s.len; i += 509) {
		s.blob[i] ^= 0x80;
		all &= weft_chunk_verify(s.cid, s.blob, s.len) == WEFT_ECORRUPT;
		s.blob[i] ^= 0x80;
	}
	ok(all, "keyless: a flipped byte anywhere (nonce included) is caught");
	is_int(weft_chunk_verify(s.cid, s.blob, s.len - 1), WEFT_ECORRUPT, "keyless: a truncated blob is caught");

	uint64_t blocks = weft_merkle_blocks(s.len);
	uint8_t path[WEFT_MERKLE_MAX_PATH][WEFT_MERKLE_HASH];
	unsigned plen;
	bool proofs = blocks == 4;
	for (uint64_t i = 0; i < blocks; i++) {
		size_t off = i * 4096, n = s.len - off < 4096 ? s.len - off : 4096;
		proofs &= weft_merkle_proof(s.blob, s.len, i, path, &plen) == 0 &&
			  weft_merkle_verify_block(s.cid, blocks, i, s.blob + off, n, path, plen);
		s.blob[off] ^= 1;
		proofs &= !weft_merkle_verify_block(s.cid, blocks, i, s.blob + off, n, path, plen);
		s.blob[off] ^= 1;
	}
	ok(proofs, "keyless: each 4 KiB sub-block verifies alone against the CID, and not when altered");
	free(s.blob);
	free(pt);
	weft_key_free(leaf);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		skip_all("libsodium init failed");
	test_round_trips();
	test_construction();
	test_tampering();
	test_open();
	test_no_reuse();
	test_dedup();
	test_keyless();
	return done_testing();
}
