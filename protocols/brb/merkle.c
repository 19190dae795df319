/* merkle.c - the BLAKE2b-256 Merkle tree of merkle.h: leaves hashed with a
 * 0x00 prefix, inner nodes with 0x01, odd levels padded with a zero node. */
#include <stdlib.h>
#include <string.h>

#include "merkle.h"
#include "weft/crypto.h"
#include "weft/err.h"

static const uint8_t pad_node[BRB_MERKLE_HASH];

uint32_t brb_merkle_depth(uint32_t n)
{
	uint32_t d = 0;
	while (d < BRB_MERKLE_MAX_DEPTH && ((uint64_t)1 << d) < n)
		d++;
	return d;
}

void brb_merkle_leaf_hash(uint8_t out[BRB_MERKLE_HASH], const void *data, size_t len)
{
	static const uint8_t prefix = 0x00;
	struct weft_hasher h;
	weft_hasher_init(&h);
	weft_hasher_update(&h, &prefix, 1);
	weft_hasher_update(&h, data, len);
	weft_hasher_final(&h, out);
}

static void inner_hash(uint8_t out[BRB_MERKLE_HASH], const uint8_t *left, const uint8_t *right)
{
	static const uint8_t prefix = 0x01;
	struct weft_hasher h;
	weft_hasher_init(&h);
	weft_hasher_update(&h, &prefix, 1);
	weft_hasher_update(&h, left, BRB_MERKLE_HASH);
	weft_hasher_update(&h, right, BRB_MERKLE_HASH);
	weft_hasher_final(&h, out);
}

int brb_merkle_build(struct brb_merkle *t, uint32_t n, const uint8_t *const *leaves, const size_t *lens)
{
	memset(t, 0, sizeof(*t));
	if (n == 0)
		return WEFT_EINVAL;
	t->n = n;
	t->depth = brb_merkle_depth(n);
	/* Level sizes, each padded to even below the root. */
	size_t total = 0;
	uint32_t w = n;
	for (uint32_t l = 0; l <= t->depth; l++) {
		t->off[l] = total;
		t->width[l] = w;
		total += l < t->depth ? w + (w & 1) : w;
		w = (w + 1) / 2;
	}
	t->node = calloc(total, BRB_MERKLE_HASH);
	if (t->node == NULL)
		abort();
	for (uint32_t i = 0; i < n; i++)
		brb_merkle_leaf_hash(t->node[i], leaves[i], lens[i]);
	for (uint32_t l = 0; l < t->depth; l++) {
		uint8_t (*lvl)[BRB_MERKLE_HASH] = t->node + t->off[l];
		uint8_t (*up)[BRB_MERKLE_HASH] = t->node + t->off[l + 1];
		if (t->width[l] & 1)
			memcpy(lvl[t->width[l]], pad_node, BRB_MERKLE_HASH);
		for (uint32_t i = 0; i < t->width[l + 1]; i++)
			inner_hash(up[i], lvl[2 * i], lvl[2 * i + 1]);
	}
	return 0;
}

void brb_merkle_free(struct brb_merkle *t)
{
	free(t->node);
	memset(t, 0, sizeof(*t));
}

void brb_merkle_root(const struct brb_merkle *t, uint8_t out[BRB_MERKLE_HASH])
{
	memcpy(out, t->node[t->off[t->depth]], BRB_MERKLE_HASH);
}

int brb_merkle_proof(const struct brb_merkle *t, uint32_t i, uint8_t (*proof)[BRB_MERKLE_HASH])
{
	if (i >= t->n)
		return WEFT_EINVAL;
	for (uint32_t l = 0; l < t->depth; l++, i >>= 1)
		memcpy(proof[l], t->node[t->off[l] + (i ^ 1)], BRB_MERKLE_HASH);
	return 0;
}

int brb_merkle_verify(const uint8_t root[BRB_MERKLE_HASH], uint32_t n, uint32_t i, const void *leaf, size_t len,
		      const uint8_t (*proof)[BRB_MERKLE_HASH], uint32_t plen)
{
	if (n == 0 || i >= n || plen != brb_merkle_depth(n))
		return WEFT_EINVAL;
	uint8_t h[BRB_MERKLE_HASH];
	brb_merkle_leaf_hash(h, leaf, len);
	uint32_t w = n;
	for (uint32_t l = 0; l < plen; l++, i >>= 1, w = (w + 1) / 2) {
		if ((i & 1) == 0 && i + 1 == w && memcmp(proof[l], pad_node, BRB_MERKLE_HASH) != 0)
			return WEFT_ECRYPTO; /* the last node of an odd level pairs with the pad only */
		if (i & 1)
			inner_hash(h, proof[l], h);
		else
			inner_hash(h, h, proof[l]);
	}
	return memcmp(h, root, BRB_MERKLE_HASH) == 0 ? 0 : WEFT_ECRYPTO;
}

int brb_merkle_root_of(uint8_t out[BRB_MERKLE_HASH], uint32_t n, const uint8_t *const *leaves, const size_t *lens)
{
	struct brb_merkle t;
	int rc = brb_merkle_build(&t, n, leaves, lens);
	if (rc == 0)
		brb_merkle_root(&t, out);
	brb_merkle_free(&t);
	return rc;
}
