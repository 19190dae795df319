/* merkle.c - the RFC 6962-shaped BLAKE2b-256 Merkle trees of weft/merkle.h.
 *
 * Roots are computed in one left-to-right pass with a stack of complete
 * subtree roots (a binary counter: pushing a leaf merges the equal-sized
 * subtrees it completes), then folded right to left, which is exactly the
 * "split at the largest power of two below n" shape.  Proofs walk the same
 * split from the top: at each level the subtree not holding the leaf is
 * rooted with a fresh builder over its own bytes, so a proof hashes each
 * block once.  A digest list is the byte-string tree with 32-byte blocks
 * over the concatenated digests. */
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/merkle.h"

static const uint8_t LEAF_PREFIX = 0x00;

/* out = H(0x01 || l || r); out may alias l or r. */
static void node_hash(uint8_t out[WEFT_MERKLE_HASH], const uint8_t l[WEFT_MERKLE_HASH],
		      const uint8_t r[WEFT_MERKLE_HASH])
{
	uint8_t buf[1 + 2 * WEFT_MERKLE_HASH];
	buf[0] = 0x01;
	memcpy(buf + 1, l, WEFT_MERKLE_HASH);
	memcpy(buf + 1 + WEFT_MERKLE_HASH, r, WEFT_MERKLE_HASH);
	weft_hash(out, buf, sizeof(buf));
}

void weft_merkle_leaf_hash(uint8_t out[WEFT_MERKLE_HASH], const void *block, size_t len)
{
	struct weft_hasher h;
	weft_hasher_init(&h);
	weft_hasher_update(&h, &LEAF_PREFIX, 1);
	weft_hasher_update(&h, block, len);
	weft_hasher_final(&h, out);
}

uint64_t weft_merkle_blocks(uint64_t len)
{
	return len / WEFT_MERKLE_BLOCK + (len % WEFT_MERKLE_BLOCK != 0);
}

static void init_blocks(struct weft_merkle *m, size_t block)
{
	m->fill = 0;
	m->block = block;
	m->count = 0;
	m->depth = 0;
}

void weft_merkle_init(struct weft_merkle *m)
{
	init_blocks(m, WEFT_MERKLE_BLOCK);
}

/* Appends a leaf hash, merging every subtree it completes. */
static void push_leaf(struct weft_merkle *m, const uint8_t leaf[WEFT_MERKLE_HASH])
{
	uint8_t node[WEFT_MERKLE_HASH];
	memcpy(node, leaf, WEFT_MERKLE_HASH);
	for (uint64_t c = m->count; c & 1; c >>= 1)
		node_hash(node, m->stack[--m->depth], node);
	memcpy(m->stack[m->depth++], node, WEFT_MERKLE_HASH);
	m->count++;
}

static void end_block(struct weft_merkle *m)
{
	uint8_t leaf[WEFT_MERKLE_HASH];
	weft_hasher_final(&m->leaf, leaf);
	push_leaf(m, leaf);
	m->fill = 0;
}

void weft_merkle_update(struct weft_merkle *m, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len > 0) {
		if (m->fill == 0) {
			weft_hasher_init(&m->leaf);
			weft_hasher_update(&m->leaf, &LEAF_PREFIX, 1);
		}
		size_t n = m->block - m->fill;
		if (n > len)
			n = len;
		weft_hasher_update(&m->leaf, p, n);
		m->fill += n;
		p += n;
		len -= n;
		if (m->fill == m->block)
			end_block(m);
	}
}

uint64_t weft_merkle_final(struct weft_merkle *m, uint8_t root[WEFT_MERKLE_HASH])
{
	if (m->fill > 0)
		end_block(m);
	if (m->count == 0) {
		weft_hash(root, "", 0);
		return 0;
	}
	uint8_t node[WEFT_MERKLE_HASH];
	memcpy(node, m->stack[m->depth - 1], WEFT_MERKLE_HASH);
	for (unsigned j = m->depth - 1; j-- > 0;)
		node_hash(node, m->stack[j], node);
	memcpy(root, node, WEFT_MERKLE_HASH);
	return m->count;
}

uint64_t weft_merkle_root(uint8_t root[WEFT_MERKLE_HASH], const void *data, size_t len)
{
	struct weft_merkle m;
	weft_merkle_init(&m);
	weft_merkle_update(&m, data, len);
	return weft_merkle_final(&m, root);
}

void weft_merkle_root_digests(uint8_t root[WEFT_MERKLE_HASH], const uint8_t (*digests)[WEFT_MERKLE_HASH], size_t n)
{
	struct weft_merkle m;
	init_blocks(&m, WEFT_MERKLE_HASH);
	weft_merkle_update(&m, digests, n * WEFT_MERKLE_HASH);
	weft_merkle_final(&m, root);
}

/* The largest power of two below n (n >= 2). */
static uint64_t split(uint64_t n)
{
	return (uint64_t)1 << (63 - __builtin_clzll(n - 1));
}

/* Walks from the root down to leaf index (< count).  Returns the path
 * length L and sets bit d of *right (d = 0 nearest the leaf) when the
 * sibling at that step of the path is the right-hand subtree. */
static unsigned shape(uint64_t count, uint64_t index, uint64_t *right)
{
	uint64_t lo = 0, hi = count, dirs = 0;
	unsigned len = 0;
	while (hi - lo > 1) {
		uint64_t k = split(hi - lo);
		bool left = index < lo + k;
		dirs = dirs << 1 | left;
		if (left)
			hi = lo + k;
		else
			lo += k;
		len++;
	}
	*right = dirs;
	return len;
}

int weft_merkle_path_len(uint64_t count, uint64_t index)
{
	uint64_t dirs;
	if (index >= count)
		return -1;
	return (int)shape(count, index, &dirs);
}

/* The root of leaves [lo, hi) of the tree with the given block size over
 * data[0..len). */
static void subtree_root(uint8_t out[WEFT_MERKLE_HASH], const uint8_t *data, size_t len, size_t block,
			 uint64_t lo, uint64_t hi)
{
	struct weft_merkle m;
	size_t end = hi * block < len ? hi * block : len;
	init_blocks(&m, block);
	weft_merkle_update(&m, data + lo * block, end - lo * block);
	weft_merkle_final(&m, out);
}

static int proof_blocks(const uint8_t *data, size_t len, size_t block, uint64_t index,
			uint8_t (*path)[WEFT_MERKLE_HASH], unsigned *plen)
{
	uint64_t count = len / block + (len % block != 0), dirs;
	*plen = 0;
	if (index >= count)
		return WEFT_EINVAL;
	unsigned d = shape(count, index, &dirs);
	uint64_t lo = 0, hi = count;
	*plen = d;
	while (hi - lo > 1) {
		uint64_t k = split(hi - lo);
		d--;
		if (index < lo + k) {
			subtree_root(path[d], data, len, block, lo + k, hi);
			hi = lo + k;
		} else {
			subtree_root(path[d], data, len, block, lo, lo + k);
			lo += k;
		}
	}
	return 0;
}

int weft_merkle_proof(const void *data, size_t len, uint64_t index, uint8_t (*path)[WEFT_MERKLE_HASH],
		      unsigned *plen)
{
	return proof_blocks(data, len, WEFT_MERKLE_BLOCK, index, path, plen);
}

int weft_merkle_proof_digests(const uint8_t (*digests)[WEFT_MERKLE_HASH], size_t n, uint64_t index,
			      uint8_t (*path)[WEFT_MERKLE_HASH], unsigned *plen)
{
	return proof_blocks((const uint8_t *)digests, n * WEFT_MERKLE_HASH, WEFT_MERKLE_HASH, index, path, plen);
}

bool weft_merkle_verify(const uint8_t root[WEFT_MERKLE_HASH], uint64_t count, uint64_t index,
			const uint8_t leaf[WEFT_MERKLE_HASH], const uint8_t (*path)[WEFT_MERKLE_HASH], unsigned plen)
{
	uint64_t dirs;
	uint8_t node[WEFT_MERKLE_HASH];

	if (index >= count || plen > WEFT_MERKLE_MAX_PATH || shape(count, index, &dirs) != plen)
		return false;
	memcpy(node, leaf, WEFT_MERKLE_HASH);
	for (unsigned d = 0; d < plen; d++) {
		if (dirs >> d & 1)
			node_hash(node, node, path[d]);
		else
			node_hash(node, path[d], node);
	}
	return memcmp(node, root, WEFT_MERKLE_HASH) == 0;
}

bool weft_merkle_verify_block(const uint8_t root[WEFT_MERKLE_HASH], uint64_t count, uint64_t index,
			      const void *block, size_t len, const uint8_t (*path)[WEFT_MERKLE_HASH],
			      unsigned plen)
{
	uint8_t leaf[WEFT_MERKLE_HASH];
	if (len > WEFT_MERKLE_BLOCK)
		return false;
	weft_merkle_leaf_hash(leaf, block, len);
	return weft_merkle_verify(root, count, index, leaf, path, plen);
}
