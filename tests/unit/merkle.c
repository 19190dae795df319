/* merkle.c - unit tests of the coded broadcast's BLAKE2b Merkle tree
 * (protocols/brb/merkle.h): roots recomputed by hand for small trees,
 * domain separation of leaves and inner nodes, proofs of every leaf for
 * n = 1..20, tampered leaves, proofs and indices rejected, and the proof
 * length bound ceil(log2 n). */
#include <stdlib.h>
#include <string.h>

#include "../../protocols/brb/merkle.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"

#define MAXN 20

static uint8_t leafbuf[MAXN][64];
static const uint8_t *leaves[MAXN];
static size_t lens[MAXN];

static void make_leaves(uint32_t n, uint8_t salt)
{
	for (uint32_t i = 0; i < n; i++) {
		lens[i] = 1 + (i * 7 + salt) % 60; /* lengths differ on purpose */
		for (size_t b = 0; b < lens[i]; b++)
			leafbuf[i][b] = (uint8_t)(i * 31 + b + salt);
		leaves[i] = leafbuf[i];
	}
}

/* H(prefix || a || b) written out by hand, independent of merkle.c. */
static void h2(uint8_t out[32], uint8_t prefix, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	uint8_t buf[1 + 64 + 64];
	buf[0] = prefix;
	memcpy(buf + 1, a, alen);
	if (blen)
		memcpy(buf + 1 + alen, b, blen);
	weft_hash(out, buf, 1 + alen + blen);
}

static uint32_t ceil_log2(uint32_t n)
{
	uint32_t d = 0;
	while ((1u << d) < n)
		d++;
	return d;
}

int main(void)
{
	weft_crypto_init();
	struct brb_merkle t;
	uint8_t root[32], want[32];
	static const uint8_t zero[32];

	/* Depths. */
	static const uint32_t depth_n[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 255, 256, 257};
	static const uint32_t depth_d[] = {0, 0, 1, 2, 2, 3, 3, 3, 4, 4, 5, 8, 8, 9};
	bool depth_ok = true;
	for (size_t i = 0; i < sizeof(depth_n) / sizeof(depth_n[0]); i++)
		depth_ok = depth_ok && brb_merkle_depth(depth_n[i]) == depth_d[i];
	ok(depth_ok, "brb_merkle_depth is ceil(log2 n) (0 for n <= 1)");

	/* Hand-computed roots. */
	make_leaves(3, 0);
	uint8_t l0[32], l1[32], l2[32], a[32], b[32];
	h2(l0, 0x00, leaves[0], lens[0], NULL, 0);
	h2(l1, 0x00, leaves[1], lens[1], NULL, 0);
	h2(l2, 0x00, leaves[2], lens[2], NULL, 0);
	is_int(brb_merkle_build(&t, 1, leaves, lens), 0, "tree over one leaf");
	brb_merkle_root(&t, root);
	is_mem(root, l0, 32, "one leaf: root = H(0x00 || leaf)");
	brb_merkle_free(&t);
	brb_merkle_build(&t, 2, leaves, lens);
	brb_merkle_root(&t, root);
	h2(want, 0x01, l0, 32, l1, 32);
	is_mem(root, want, 32, "two leaves: root = H(0x01 || H(0x00||l0) || H(0x00||l1))");
	brb_merkle_free(&t);
	brb_merkle_build(&t, 3, leaves, lens);
	brb_merkle_root(&t, root);
	h2(a, 0x01, l0, 32, l1, 32);
	h2(b, 0x01, l2, 32, zero, 32);
	h2(want, 0x01, a, 32, b, 32);
	is_mem(root, want, 32, "three leaves: the odd level is padded with a zero node");
	uint8_t proof[8][32];
	brb_merkle_proof(&t, 2, proof);
	ok(memcmp(proof[0], zero, 32) == 0 && memcmp(proof[1], a, 32) == 0,
	   "proof of leaf 2 of 3: pad, then H(l0, l1)");
	memset(proof[0], 0x11, 32);
	is_int(brb_merkle_verify(root, 3, 2, leaves[2], lens[2], (const uint8_t(*)[32])proof, 2), WEFT_ECRYPTO,
	       "a non-pad hash in a padding position is rejected");
	uint8_t r2[32];
	brb_merkle_root_of(r2, 3, leaves, lens);
	is_mem(r2, root, 32, "brb_merkle_root_of gives the built tree's root");
	brb_merkle_free(&t);
	is_int(brb_merkle_build(&t, 0, leaves, lens), WEFT_EINVAL, "no tree over zero leaves");
	brb_merkle_free(&t);
	is_int(brb_merkle_verify(root, 0, 0, leaves[0], lens[0], NULL, 0), WEFT_EINVAL, "verify with n = 0: refused");

	/* Domain separation: a 64-byte leaf equal to two child hashes. */
	uint8_t two[64];
	memcpy(two, l0, 32);
	memcpy(two + 32, l1, 32);
	const uint8_t *one_leaf[1] = {two};
	size_t one_len[1] = {64};
	brb_merkle_root_of(r2, 1, one_leaf, one_len);
	h2(want, 0x01, l0, 32, l1, 32);
	ok(memcmp(r2, want, 32) != 0, "a leaf holding l0 || l1 does not hash like the inner node over them");

	/* Every leaf of every tree for n = 1..20. */
	for (uint32_t n = 1; n <= MAXN; n++) {
		make_leaves(n, (uint8_t)n);
		brb_merkle_build(&t, n, leaves, lens);
		brb_merkle_root(&t, root);
		uint32_t d = ceil_log2(n);
		bool all = t.depth == d, leaf_bad = true, proof_bad = true, index_bad = true, len_bad = true;
		bool range = true;
		for (uint32_t i = 0; i < n; i++) {
			uint8_t p[8][32];
			const uint8_t(*cp)[32] = (const uint8_t(*)[32])p;
			all = all && brb_merkle_proof(&t, i, p) == 0;
			all = all && brb_merkle_verify(root, n, i, leaves[i], lens[i], cp, d) == 0;
			/* tampered leaf: each byte in turn, and a shorter leaf */
			uint8_t tl[64];
			memcpy(tl, leaves[i], lens[i]);
			for (size_t byte = 0; byte < lens[i]; byte++) {
				tl[byte] ^= 0x80;
				leaf_bad = leaf_bad &&
					   brb_merkle_verify(root, n, i, tl, lens[i], cp, d) == WEFT_ECRYPTO;
				tl[byte] ^= 0x80;
			}
			leaf_bad = leaf_bad && brb_merkle_verify(root, n, i, tl, lens[i] - 1, cp, d) == WEFT_ECRYPTO;
			/* tampered proof: a bit of each hash */
			for (uint32_t l = 0; l < d; l++) {
				p[l][l % 32] ^= 1;
				proof_bad = proof_bad && brb_merkle_verify(root, n, i, leaves[i], lens[i], cp, d) != 0;
				p[l][l % 32] ^= 1;
			}
			/* another index for the same leaf and proof */
			for (uint32_t j = 0; j < n; j++)
				if (j != i)
					index_bad = index_bad &&
						    brb_merkle_verify(root, n, j, leaves[i], lens[i], cp, d) != 0;
			range = range && brb_merkle_verify(root, n, n, leaves[i], lens[i], cp, d) == WEFT_EINVAL &&
				brb_merkle_verify(root, n, UINT32_MAX, leaves[i], lens[i], cp, d) == WEFT_EINVAL;
			/* a proof one hash too long or too short */
			len_bad = len_bad &&
				  brb_merkle_verify(root, n, i, leaves[i], lens[i], cp, d + 1) == WEFT_EINVAL;
			if (d > 0)
				len_bad = len_bad &&
					  brb_merkle_verify(root, n, i, leaves[i], lens[i], cp, d - 1) == WEFT_EINVAL;
		}
		ok(all, "n = %u: depth %u, the proof of every leaf verifies", n, d);
		ok(leaf_bad, "n = %u: every tampered leaf is rejected", n);
		ok(proof_bad, "n = %u: every tampered proof hash is rejected", n);
		ok(index_bad, "n = %u: a leaf's proof fails at every other index", n);
		ok(range, "n = %u: index >= n refused", n);
		ok(len_bad, "n = %u: proofs of depth +- 1 hashes refused (length bound ceil(log2 n))", n);
		is_int(brb_merkle_proof(&t, n, (uint8_t(*)[32])leafbuf), WEFT_EINVAL, "n = %u: no proof for leaf n", n);
		/* Another tree over the same leaves in another order has another root. */
		if (n > 1) {
			const uint8_t *sw = leaves[0];
			size_t swl = lens[0];
			leaves[0] = leaves[n - 1], lens[0] = lens[n - 1];
			leaves[n - 1] = sw, lens[n - 1] = swl;
			brb_merkle_root_of(r2, n, leaves, lens);
			ok(memcmp(r2, root, 32) != 0, "n = %u: swapping two leaves changes the root", n);
		}
		brb_merkle_free(&t);
	}
	brb_merkle_free(&t); /* freeing an emptied tree again is fine */
	return done_testing();
}
