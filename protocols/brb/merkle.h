/* merkle.h - a small BLAKE2b-256 Merkle tree for the coded broadcast: the
 * root over n leaves, the proof (authentication path) of leaf i, and its
 * verification against a root.
 *
 * Shape.  A leaf's node is H(0x00 || leaf), an inner node is
 * H(0x01 || left || right), so a leaf can never pass for an inner node.
 * Level 0 holds the n leaf nodes; every level with an odd number of nodes
 * (other than the root level) is padded with one node of 32 zero bytes
 * (BRB_MERKLE_PAD), then paired up.  Every leaf therefore sits at depth
 * brb_merkle_depth(n) = ceil(log2 n) (0 for one leaf), and every proof has
 * exactly that many hashes: the siblings from the leaf up to the root.
 *
 * Everything here is deterministic and allocation-bounded by n; verify
 * never allocates and never trusts its inputs (index, proof length). */
#ifndef WEFT_BRB_MERKLE_H
#define WEFT_BRB_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#define BRB_MERKLE_HASH 32
/* Depth bound: n < 2^32 leaves. */
#define BRB_MERKLE_MAX_DEPTH 32

/* A built tree.  Owns its node array; free with brb_merkle_free. */
struct brb_merkle {
	uint32_t n;                                 /* leaves */
	uint32_t depth;                             /* ceil(log2 n) */
	uint8_t (*node)[BRB_MERKLE_HASH];           /* every level, leaves first */
	size_t off[BRB_MERKLE_MAX_DEPTH + 1];       /* first node of each level */
	uint32_t width[BRB_MERKLE_MAX_DEPTH + 1];   /* nodes of each level, before padding */
};

/* ceil(log2 n): the proof length for a tree of n >= 1 leaves (0 for n <= 1). */
uint32_t brb_merkle_depth(uint32_t n);

/* H(0x00 || data). */
void brb_merkle_leaf_hash(uint8_t out[BRB_MERKLE_HASH], const void *data, size_t len);

/* Builds the tree over n >= 1 leaves (leaves[i] of lens[i] bytes).  0, or
 * WEFT_EINVAL for n == 0 (t is then empty; brb_merkle_free accepts it).
 * The leaves are hashed at once; t does not keep pointers to them. */
int brb_merkle_build(struct brb_merkle *t, uint32_t n, const uint8_t *const *leaves, const size_t *lens);
void brb_merkle_free(struct brb_merkle *t);

/* The root of a built tree. */
void brb_merkle_root(const struct brb_merkle *t, uint8_t out[BRB_MERKLE_HASH]);

/* Writes the t->depth sibling hashes of leaf i (i < t->n), leaf level
 * first, into proof.  0, or WEFT_EINVAL when i is out of range. */
int brb_merkle_proof(const struct brb_merkle *t, uint32_t i, uint8_t (*proof)[BRB_MERKLE_HASH]);

/* Checks that leaf (len bytes) is leaf i of a tree of n leaves with the
 * given root, using a proof of plen hashes.  0 when it is; WEFT_EINVAL
 * when i >= n, n == 0 or plen != brb_merkle_depth(n); WEFT_ECRYPTO when the
 * path does not lead to root (or a padding position holds a non-pad hash). */
int brb_merkle_verify(const uint8_t root[BRB_MERKLE_HASH], uint32_t n, uint32_t i, const void *leaf, size_t len,
		      const uint8_t (*proof)[BRB_MERKLE_HASH], uint32_t plen);

/* Convenience: the root over n leaves without keeping the tree.  0 or WEFT_EINVAL. */
int brb_merkle_root_of(uint8_t out[BRB_MERKLE_HASH], uint32_t n, const uint8_t *const *leaves, const size_t *lens);

#endif
