/* tests/unit/store_merkle.c - TAP tests for the chunk store's Merkle trees
 * (storage/merkle.c, weft/merkle.h): roots of 0, 1, 2, 3 and 5 blocks and
 * of digest lists recomputed by hand here with libsodium directly, path
 * lengths, proofs of every block of trees of 1..40 blocks and of digest
 * lists, rejection of a flipped bit in the block, the path, the index or
 * the count, adversarial paths (too long, too short, over 64 hashes, count
 * 0, index past the end), and the streaming builder against the one-shot
 * root for random split points.  (tests/unit/merkle.c tests the coded
 * broadcast's tree in protocols/brb, a different shape.) */
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/merkle.h"

#define B WEFT_MERKLE_BLOCK
#define HL WEFT_MERKLE_HASH
#define MAXB 40

typedef uint8_t hash_t[HL];

/* H(prefix || a || b), written out with libsodium, independent of merkle.c. */
static void h(uint8_t out[HL], uint8_t prefix, const void *a, size_t alen, const void *b, size_t blen)
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, HL);
	crypto_generichash_update(&st, &prefix, 1);
	crypto_generichash_update(&st, a, alen);
	crypto_generichash_update(&st, b, blen);
	crypto_generichash_final(&st, out, HL);
}

static void node(uint8_t out[HL], const uint8_t l[HL], const uint8_t r[HL])
{
	h(out, 0x01, l, HL, r, HL);
}

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

static void fill(uint8_t *p, size_t len, uint8_t tag)
{
	uint8_t seed[randombytes_SEEDBYTES] = { tag, 0x4d };
	randombytes_buf_deterministic(p, len, seed);
}

/* The leaf hashes of data[0..len) by hand. */
static size_t hand_leaves(hash_t *out, const uint8_t *data, size_t len)
{
	size_t n = 0;
	for (size_t off = 0; off < len; off += B, n++)
		h(out[n], 0x00, data + off, len - off < B ? len - off : B, "", 0);
	return n;
}

static void test_small(const uint8_t *data)
{
	hash_t root, want, l[8], a, b, c;
	uint8_t path[WEFT_MERKLE_MAX_PATH][HL];
	unsigned plen = 99;

	/* No bytes: RFC 6962's empty tree, H(""). */
	crypto_generichash(want, HL, (const uint8_t *)"", 0, NULL, 0);
	is_int((long long)weft_merkle_root(root, data, 0), 0, "no bytes: 0 blocks");
	is_mem(root, want, HL, "no bytes: root = H(\"\")");
	weft_merkle_root_digests(root, NULL, 0);
	is_mem(root, want, HL, "no digests: root = H(\"\")");
	ok(weft_merkle_proof(data, 0, 0, path, &plen) == WEFT_EINVAL && plen == 0, "no proof in the empty tree");
	is_int(weft_merkle_path_len(0, 0), -1, "path_len(0, 0) = -1");

	ok(weft_merkle_blocks(0) == 0 && weft_merkle_blocks(1) == 1 && weft_merkle_blocks(B) == 1 &&
		   weft_merkle_blocks(B + 1) == 2 && weft_merkle_blocks(5 * B - 7) == 5,
	   "weft_merkle_blocks = ceil(len / 4096)");

	/* 1 block, short and full. */
	hand_leaves(l, data, 100);
	is_int((long long)weft_merkle_root(root, data, 100), 1, "100 bytes: 1 block");
	is_mem(root, l[0], HL, "1 block: root = H(0x00 || block)");
	weft_merkle_leaf_hash(a, data, 100);
	is_mem(a, l[0], HL, "weft_merkle_leaf_hash = H(0x00 || block)");
	hand_leaves(l, data, B);
	weft_merkle_root(root, data, B);
	is_mem(root, l[0], HL, "4096 bytes: one full block");

	/* 2 blocks: 4096 + 10 bytes. */
	hand_leaves(l, data, B + 10);
	node(want, l[0], l[1]);
	is_int((long long)weft_merkle_root(root, data, B + 10), 2, "4106 bytes: 2 blocks");
	is_mem(root, want, HL, "2 blocks: root = H(0x01 || l0 || l1)");

	/* 3 blocks: split at 2. */
	hand_leaves(l, data, 2 * B + 1);
	node(a, l[0], l[1]);
	node(want, a, l[2]);
	is_int((long long)weft_merkle_root(root, data, 2 * B + 1), 3, "8193 bytes: 3 blocks");
	is_mem(root, want, HL, "3 blocks: root = node(node(l0, l1), l2)");
	ok(weft_merkle_proof(data, 2 * B + 1, 2, path, &plen) == 0 && plen == 1 && memcmp(path[0], a, HL) == 0,
	   "3 blocks: the proof of block 2 is [node(l0, l1)]");
	ok(weft_merkle_proof(data, 2 * B + 1, 1, path, &plen) == 0 && plen == 2 && memcmp(path[0], l[0], HL) == 0 &&
		   memcmp(path[1], l[2], HL) == 0,
	   "3 blocks: the proof of block 1 is [l0, l2]");

	/* 5 blocks: split at 4, then the 4 in halves. */
	hand_leaves(l, data, 4 * B + 3000);
	node(a, l[0], l[1]);
	node(b, l[2], l[3]);
	node(c, a, b);
	node(want, c, l[4]);
	is_int((long long)weft_merkle_root(root, data, 4 * B + 3000), 5, "19384 bytes: 5 blocks");
	is_mem(root, want, HL, "5 blocks: root = node(node(node(l0, l1), node(l2, l3)), l4)");
	ok(weft_merkle_proof(data, 4 * B + 3000, 4, path, &plen) == 0 && plen == 1 && memcmp(path[0], c, HL) == 0,
	   "5 blocks: the proof of block 4 is [root of blocks 0..3]");
	ok(weft_merkle_proof(data, 4 * B + 3000, 2, path, &plen) == 0 && plen == 3 && memcmp(path[0], l[3], HL) == 0 &&
		   memcmp(path[1], a, HL) == 0 && memcmp(path[2], l[4], HL) == 0,
	   "5 blocks: the proof of block 2 is [l3, node(l0, l1), l4]");
	ok(weft_merkle_verify_block(want, 5, 2, data + 2 * B, B, (const hash_t *)path, 3),
	   "5 blocks: block 2 verifies against the hand-computed root");
	ok(weft_merkle_proof(data, 4 * B + 3000, 5, path, &plen) == WEFT_EINVAL, "5 blocks: no proof of block 5");

	/* Digest lists: the digest is the whole leaf. */
	hash_t d[5], dl[5];
	fill(d[0], sizeof(d), 5);
	for (int i = 0; i < 5; i++)
		h(dl[i], 0x00, d[i], HL, "", 0);
	weft_merkle_root_digests(root, (const hash_t *)d, 1);
	is_mem(root, dl[0], HL, "1 digest: root = H(0x00 || digest)");
	weft_merkle_root_digests(root, (const hash_t *)d, 3);
	node(a, dl[0], dl[1]);
	node(want, a, dl[2]);
	is_mem(root, want, HL, "3 digests: root = node(node(d0, d1), d2) over H(0x00 || d)");
	weft_merkle_root_digests(root, (const hash_t *)d, 5);
	node(a, dl[0], dl[1]);
	node(b, dl[2], dl[3]);
	node(c, a, b);
	node(want, c, dl[4]);
	is_mem(root, want, HL, "5 digests: the same shape as 5 blocks");

	/* Domain separation: a 64-byte block holding l0 || l1 is not node(l0, l1). */
	hand_leaves(l, data, B + 10);
	uint8_t two[2 * HL];
	memcpy(two, l[0], HL);
	memcpy(two + HL, l[1], HL);
	weft_merkle_root(root, two, sizeof(two));
	node(want, l[0], l[1]);
	ok(memcmp(root, want, HL) != 0, "a block holding l0 || l1 does not hash like node(l0, l1)");
}

static void test_path_len(void)
{
	static const struct {
		uint64_t n, i;
		int len;
	} t[] = {
		{ 1, 0, 0 }, { 2, 0, 1 }, { 2, 1, 1 }, { 3, 0, 2 }, { 3, 2, 1 }, { 4, 3, 2 }, { 5, 0, 3 }, { 5, 4, 1 },
		{ 6, 4, 2 }, { 7, 6, 2 }, { 8, 7, 3 }, { 9, 8, 1 }, { 9, 0, 4 }, { 1000, 999, 8 }, { 1000, 0, 10 },
		{ UINT64_MAX, 0, 64 }, { UINT64_MAX, UINT64_MAX - 1, 63 }, { (uint64_t)1 << 63, 5, 63 },
		{ 5, 5, -1 }, { 0, 0, -1 }, { UINT64_MAX, UINT64_MAX, -1 },
	};
	bool all = true;
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		int got = weft_merkle_path_len(t[k].n, t[k].i);
		if (got != t[k].len) {
			diag("path_len(%llu, %llu) = %d, expected %d", (unsigned long long)t[k].n,
			     (unsigned long long)t[k].i, got, t[k].len);
			all = false;
		}
	}
	ok(all, "path lengths of RFC 6962 trees, up to 64 for 2^64 - 1 leaves");
}

static unsigned ceil_log2(uint64_t n)
{
	unsigned d = 0;
	while (((uint64_t)1 << d) < n)
		d++;
	return d;
}

/* The sides of leaf i's siblings in a tree of n leaves (i < n), from the
 * root down, one bit per level (1: the sibling is on the right), led by a
 * 1 bit so that paths of different lengths differ: RFC 6962's split,
 * written out again here. */
static uint64_t path_sides(uint64_t n, uint64_t i)
{
	uint64_t lo = 0, hi = n, sides = 1;
	while (hi - lo > 1) {
		uint64_t k = 1;
		while (k * 2 < hi - lo)
			k *= 2;
		sides = sides << 1 | (i < lo + k);
		if (i < lo + k)
			hi = lo + k;
		else
			lo += k;
	}
	return sides;
}

/* Proofs of every block of trees of 1..MAXB blocks (last block of varying
 * length), every tamper rejected. */
static void test_all_proofs(uint8_t *data)
{
	bool verified = true, lens_ok = true, block_bad = true, path_bad = true, index_bad = true, shape_count_bad = true;
	bool leaf_ok = true, short_bad = true, long_bad = true, big_bad = true;
	size_t nproofs = 0, same_shape_counts = 0, count_flips = 0;

	for (uint64_t n = 1; n <= MAXB; n++) {
		size_t len = (size_t)(n - 1) * B + 1 + (size_t)(n * 997) % B;
		hash_t root;
		weft_merkle_root(root, data, len);
		for (uint64_t i = 0; i < n; i++) {
			uint8_t path[WEFT_MERKLE_MAX_PATH + 2][HL];
			const hash_t *cp = (const hash_t *)path;
			unsigned plen = 0;
			uint8_t *blk = data + i * B;
			size_t blen = i + 1 < n ? B : len - (size_t)i * B;
			hash_t leaf;

			nproofs++;
			if (weft_merkle_proof(data, len, i, path, &plen) != 0) {
				verified = false;
				continue;
			}
			lens_ok &= (int)plen == weft_merkle_path_len(n, i) && plen <= ceil_log2(n);
			verified &= weft_merkle_verify_block(root, n, i, blk, blen, cp, plen);
			weft_merkle_leaf_hash(leaf, blk, blen);
			leaf_ok &= weft_merkle_verify(root, n, i, leaf, cp, plen);

			/* A flipped bit anywhere in the block. */
			size_t bit = rnd() % (blen * 8);
			blk[bit / 8] ^= (uint8_t)(1 << bit % 8);
			block_bad &= !weft_merkle_verify_block(root, n, i, blk, blen, cp, plen);
			blk[bit / 8] ^= (uint8_t)(1 << bit % 8);
			/* The block cut short or extended by a byte. */
			short_bad &= !weft_merkle_verify_block(root, n, i, blk, blen - 1, cp, plen);
			if (blen < B)
				long_bad &= !weft_merkle_verify_block(root, n, i, blk, blen + 1, cp, plen);

			/* A flipped bit in the path: every bit up to 12 blocks, then
			 * one random bit of each hash. */
			for (unsigned d = 0; d < plen; d++) {
				for (unsigned t = 0; t < (n <= 12 ? HL * 8 : 1); t++) {
					unsigned pb = n <= 12 ? t : rnd() % (HL * 8);
					path[d][pb / 8] ^= (uint8_t)(1 << pb % 8);
					path_bad &= !weft_merkle_verify(root, n, i, leaf, cp, plen);
					path[d][pb / 8] ^= (uint8_t)(1 << pb % 8);
				}
			}

			/* Every flipped bit of the index (within 64 bits). */
			for (unsigned b = 0; b < 64; b++)
				index_bad &= !weft_merkle_verify(root, n, i ^ ((uint64_t)1 << b), leaf, cp, plen);

			/* Every flipped bit of the count: rejected whenever it changes
			 * the leaf's path (its length or the side of a sibling).  A
			 * count with the same path for this leaf (leaf 0 of 5 and of
			 * 7) cannot be told apart by this proof: RFC 6962 proofs take
			 * the count from a trusted source. */
			uint64_t own = path_sides(n, i);
			for (unsigned b = 0; b < 64; b++) {
				uint64_t m = n ^ ((uint64_t)1 << b);
				bool accepted = weft_merkle_verify(root, m, i, leaf, cp, plen);
				bool same = (int)plen == weft_merkle_path_len(m, i) && path_sides(m, i) == own;
				count_flips++;
				same_shape_counts += same;
				shape_count_bad &= same ? accepted : !accepted;
			}

			/* One hash too many, one too few. */
			memset(path[plen], 0xab, HL);
			big_bad &= !weft_merkle_verify(root, n, i, leaf, cp, plen + 1);
			if (plen > 0)
				big_bad &= !weft_merkle_verify(root, n, i, leaf, cp, plen - 1);
		}
	}
	ok(lens_ok, "%zu proofs over trees of 1..%d blocks: lengths = path_len <= ceil(log2 n)", nproofs, MAXB);
	ok(verified, "every block of every tree verifies against its root");
	ok(leaf_ok, "weft_merkle_verify with the leaf hash agrees");
	ok(block_bad, "a flipped bit in the block: rejected");
	ok(short_bad && long_bad, "the block one byte shorter or longer: rejected");
	ok(path_bad, "a flipped bit in the path (every bit of every hash up to 12 blocks): rejected");
	ok(index_bad, "every flipped bit of the index: rejected");
	ok(shape_count_bad,
	   "every flipped bit of the count that changes the leaf's path is rejected (%zu of %zu flips keep the path: "
	   "the count must come from a trusted source)",
	   same_shape_counts, count_flips);
	ok(big_bad, "a path one hash too long or too short: rejected");
}

static void test_digest_proofs(void)
{
	hash_t d[MAXB];
	bool all = true, bad = true;
	fill(d[0], sizeof(d), 9);
	for (size_t n = 1; n <= MAXB; n++) {
		hash_t root;
		weft_merkle_root_digests(root, (const hash_t *)d, n);
		for (size_t i = 0; i < n; i++) {
			uint8_t path[WEFT_MERKLE_MAX_PATH][HL];
			unsigned plen;
			hash_t leaf, other;
			all &= weft_merkle_proof_digests((const hash_t *)d, n, i, path, &plen) == 0;
			all &= weft_merkle_verify_block(root, n, i, d[i], HL, (const hash_t *)path, plen);
			weft_merkle_leaf_hash(leaf, d[i], HL);
			all &= weft_merkle_verify(root, n, i, leaf, (const hash_t *)path, plen);
			memcpy(other, d[i], HL);
			other[i % HL] ^= 0x10;
			bad &= !weft_merkle_verify_block(root, n, i, other, HL, (const hash_t *)path, plen);
			/* The raw digest is not the leaf: it must be hashed with 0x00. */
			bad &= n == 1 || !weft_merkle_verify(root, n, i, d[i], (const hash_t *)path, plen);
		}
		unsigned plen = 7;
		all &= weft_merkle_proof_digests((const hash_t *)d, n, n, NULL, &plen) == WEFT_EINVAL && plen == 0;
	}
	ok(all, "digest lists of 1..%d: every leaf's proof verifies (as a block and as a leaf hash)", MAXB);
	ok(bad, "digest lists: a changed digest, or the digest passed as its own leaf hash, is rejected");
}

static void test_adversarial(const uint8_t *data)
{
	uint8_t path[WEFT_MERKLE_MAX_PATH + 8][HL];
	hash_t root, leaf;
	unsigned plen;

	size_t len = 5 * B;
	weft_merkle_root(root, data, len);
	weft_merkle_proof(data, len, 1, path, &plen);
	weft_merkle_leaf_hash(leaf, data + B, B);
	ok(weft_merkle_verify(root, 5, 1, leaf, (const hash_t *)path, plen), "the genuine proof of block 1 of 5");
	ok(!weft_merkle_verify(root, 0, 0, leaf, (const hash_t *)path, plen), "count 0: rejected");
	ok(!weft_merkle_verify(root, 5, 5, leaf, (const hash_t *)path, plen), "index == count: rejected");
	ok(!weft_merkle_verify(root, 5, UINT64_MAX, leaf, (const hash_t *)path, plen), "index 2^64 - 1: rejected");
	ok(!weft_merkle_verify(root, 4, 1, leaf, (const hash_t *)path, plen), "count 4 for a tree of 5: rejected");
	/* Block 1 has the same path in trees of 5..8 blocks: the proof cannot
	 * tell those counts apart (RFC 6962), the caller's count must be right. */
	ok(weft_merkle_verify(root, 6, 1, leaf, (const hash_t *)path, plen),
	   "count 6 for block 1 of a tree of 5: accepted (the same path; counts come from a trusted source)");
	uint8_t p4[WEFT_MERKLE_MAX_PATH][HL];
	unsigned plen4;
	hash_t leaf4;
	weft_merkle_proof(data, len, 4, p4, &plen4);
	weft_merkle_leaf_hash(leaf4, data + 4 * B, B);
	ok(weft_merkle_verify(root, 5, 4, leaf4, (const hash_t *)p4, plen4) &&
		   !weft_merkle_verify(root, 6, 4, leaf4, (const hash_t *)p4, plen4) &&
		   !weft_merkle_verify(root, 9, 4, leaf4, (const hash_t *)p4, plen4) &&
		   !weft_merkle_verify(root, 8, 4, leaf4, (const hash_t *)p4, plen4),
	   "block 4 of 5 verifies; counts 6, 8 and 9 (other paths) are rejected");
	memset(path, 0x5a, sizeof(path));
	ok(!weft_merkle_verify(root, 5, 1, leaf, (const hash_t *)path, WEFT_MERKLE_MAX_PATH + 1),
	   "a path of 65 hashes: rejected");
	ok(!weft_merkle_verify(root, 5, 1, leaf, (const hash_t *)path, UINT32_MAX), "a path of 2^32 - 1 hashes: rejected");
	ok(!weft_merkle_verify(root, UINT64_MAX, 0, leaf, (const hash_t *)path, WEFT_MERKLE_MAX_PATH),
	   "a forged 64-hash path in a tree of 2^64 - 1 leaves: rejected");
	ok(!weft_merkle_verify(root, UINT64_MAX, 0, leaf, (const hash_t *)path, WEFT_MERKLE_MAX_PATH + 1),
	   "65 hashes in a tree of 2^64 - 1 leaves: rejected");
	ok(!weft_merkle_verify_block(root, 1, 0, data, B + 1, NULL, 0), "a block over 4096 bytes: rejected");
	/* A one-block tree: the root is the leaf, the path is empty. */
	weft_merkle_root(root, data, 10);
	weft_merkle_leaf_hash(leaf, data, 10);
	ok(weft_merkle_verify(root, 1, 0, leaf, NULL, 0) && !weft_merkle_verify(root, 1, 0, leaf, (const hash_t *)path, 1),
	   "one block: the empty path verifies, a path of one hash does not");
	/* The root itself passed as a leaf of a larger tree with an empty path. */
	weft_merkle_root(root, data, 3 * B);
	ok(!weft_merkle_verify(root, 3, 0, root, NULL, 0), "the root as leaf 0 with an empty path: rejected");
}

static void test_streaming(const uint8_t *data, size_t max)
{
	bool same = true, counts = true;
	for (int t = 0; t < 200; t++) {
		size_t len = t < 10 ? (size_t)t * B + (size_t)t : rnd() % max;
		hash_t one, streamed;
		uint64_t n1 = weft_merkle_root(one, data, len);
		struct weft_merkle m;
		weft_merkle_init(&m);
		size_t off = 0;
		while (off < len) {
			uint32_t r = rnd();
			size_t piece = r % 4 == 0 ? r % 7 : r % 4 == 1 ? B - (r % 3) : r % 3 * B + r % 100;
			if (piece > len - off)
				piece = len - off;
			weft_merkle_update(&m, data + off, piece);
			off += piece;
		}
		uint64_t n2 = weft_merkle_final(&m, streamed);
		same &= memcmp(one, streamed, HL) == 0;
		counts &= n1 == n2 && n1 == weft_merkle_blocks(len);
	}
	ok(same, "200 random lengths and split points: streamed root = one-shot root");
	ok(counts, "streamed and one-shot block counts agree with weft_merkle_blocks");

	/* A copy of the builder forks the computation. */
	struct weft_merkle m, fork;
	hash_t r1, r2, want;
	weft_merkle_init(&m);
	weft_merkle_update(&m, data, 3 * B + 100);
	fork = m;
	weft_merkle_update(&m, data + 3 * B + 100, 5000);
	weft_merkle_update(&fork, data + 3 * B + 100, 5000);
	weft_merkle_final(&m, r1);
	weft_merkle_final(&fork, r2);
	weft_merkle_root(want, data, 3 * B + 5100);
	ok(memcmp(r1, want, HL) == 0 && memcmp(r2, want, HL) == 0, "a copied builder continues independently");

	/* 1 MiB one byte at a time. */
	weft_merkle_init(&m);
	for (size_t i = 0; i < ((size_t)1 << 20); i++)
		weft_merkle_update(&m, data + i, 1);
	weft_merkle_final(&m, r1);
	weft_merkle_root(want, data, (size_t)1 << 20);
	ok(memcmp(r1, want, HL) == 0, "1 MiB fed a byte at a time: the same root");
}

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	size_t max = (size_t)MAXB * B + (1 << 20);
	uint8_t *data = malloc(max);
	if (data == NULL)
		return 1;
	fill(data, max, 1);

	test_small(data);
	test_path_len();
	test_all_proofs(data);
	test_digest_proofs();
	test_adversarial(data);
	test_streaming(data, max);
	free(data);
	return done_testing();
}
