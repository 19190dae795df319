/* merkle.h - BLAKE2b-256 Merkle trees for the chunk store: a chunk's CID
 * over its 4 KiB ciphertext sub-blocks, share roots and manifest roots over
 * lists of 32-byte digests, inclusion proofs and their verification.
 *
 * Shape (RFC 6962 / RFC 9162 section 2.1, with BLAKE2b-256 as the hash):
 *   a byte string is cut into blocks of WEFT_MERKLE_BLOCK bytes, the last
 *   one possibly shorter; n = ceil(len / 4096) blocks (0 for no bytes);
 *   leaf      = H(0x00 || block)
 *   node      = H(0x01 || left || right)
 *   root(0)   = H("")            (the empty string's hash)
 *   root(1)   = the leaf
 *   root(n)   = node(root(first k leaves), root(the other n - k)), where k
 *               is the largest power of two below n.
 * A list of 32-byte digests is the same tree with each digest as a whole
 * block: leaf = H(0x00 || digest).  The 0x00 / 0x01 prefixes keep a leaf
 * from passing for an inner node.
 *
 * A proof for block i of n is the list of sibling hashes from the leaf's
 * sibling up to the root's children, as RFC 9162's audit path: its length
 * depends on (i, n) (weft_merkle_path_len) and is at most 64.  Verification
 * never allocates and trusts nothing in the proof: an index not below the
 * count, a count of 0, or a path of any other length than the one (i, n)
 * requires, is rejected before any hashing.
 *
 * The count must come from a trusted source (the owner's signed manifest,
 * the chunk's known size), never from the prover.  The root commits to it
 * (trees of different sizes have different roots), but one proof
 * authenticates it only as far as the leaf's path depends on it: block 1
 * has the same path in trees of 5, 6, 7 and 8 blocks.
 *
 * Nothing here allocates: the streaming builder keeps one BLAKE2b state for
 * the block being fed and one hash per level, O(log n) in all. */
#ifndef WEFT_MERKLE_H
#define WEFT_MERKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"

#define WEFT_MERKLE_BLOCK 4096
#define WEFT_MERKLE_HASH 32
/* A tree has fewer than 2^64 leaves, so no path is longer than this. */
#define WEFT_MERKLE_MAX_PATH 64

/* A streaming root computation over a byte string.  Caller-owned; it holds
 * no pointers, so it may be copied to fork the computation. */
struct weft_merkle {
	struct weft_hasher leaf;    /* H(0x00 || the current block so far) */
	size_t fill;                /* bytes of the current block fed */
	size_t block;               /* block size (4096; 32 for digest lists) */
	uint64_t count;             /* complete leaves pushed */
	unsigned depth;             /* entries of stack */
	/* Roots of complete subtrees, largest first: entry j covers 2^b leaves
	 * for the j-th highest set bit b of count. */
	uint8_t stack[WEFT_MERKLE_MAX_PATH][WEFT_MERKLE_HASH];
};

/* leaf = H(0x00 || block[0..len)). */
void weft_merkle_leaf_hash(uint8_t out[WEFT_MERKLE_HASH], const void *block, size_t len);

/* ceil(len / 4096): the number of blocks (leaves) of a byte string. */
uint64_t weft_merkle_blocks(uint64_t len);

/* Starts the root of a new byte string. */
void weft_merkle_init(struct weft_merkle *m);

/* Feeds the next len bytes of the string, in pieces of any size: the root
 * is the same however the string is split across calls.  Each byte is
 * hashed once, as it is fed; nothing is buffered. */
void weft_merkle_update(struct weft_merkle *m, const void *data, size_t len);

/* Writes the root of everything fed and returns the number of blocks.
 * m must be initialised again before reuse. */
uint64_t weft_merkle_final(struct weft_merkle *m, uint8_t root[WEFT_MERKLE_HASH]);

/* One-shot: the root of data[0..len); returns the number of blocks. */
uint64_t weft_merkle_root(uint8_t root[WEFT_MERKLE_HASH], const void *data, size_t len);

/* The root over n 32-byte digests (leaves H(0x00 || digest)); n may be 0. */
void weft_merkle_root_digests(uint8_t root[WEFT_MERKLE_HASH], const uint8_t (*digests)[WEFT_MERKLE_HASH], size_t n);

/* The length of the proof of leaf index in a tree of count leaves, or -1
 * when index >= count. */
int weft_merkle_path_len(uint64_t count, uint64_t index);

/* The proof of block index of data[0..len): writes *plen sibling hashes,
 * nearest the leaf first, into path (room for WEFT_MERKLE_MAX_PATH).
 * Hashes all of data once.  0, or WEFT_EINVAL when index is not below the
 * block count. */
int weft_merkle_proof(const void *data, size_t len, uint64_t index, uint8_t (*path)[WEFT_MERKLE_HASH],
		      unsigned *plen);

/* The same for leaf index of a list of n digests. */
int weft_merkle_proof_digests(const uint8_t (*digests)[WEFT_MERKLE_HASH], size_t n, uint64_t index,
			      uint8_t (*path)[WEFT_MERKLE_HASH], unsigned *plen);

/* Whether leaf (a leaf hash, weft_merkle_leaf_hash of the block) is leaf
 * index of a tree of count leaves with the given root, by the plen hashes
 * of path.  False when index >= count, or plen differs from
 * weft_merkle_path_len(count, index), or the path does not lead to root. */
bool weft_merkle_verify(const uint8_t root[WEFT_MERKLE_HASH], uint64_t count, uint64_t index,
			const uint8_t leaf[WEFT_MERKLE_HASH], const uint8_t (*path)[WEFT_MERKLE_HASH], unsigned plen);

/* weft_merkle_verify of the leaf hash of block[0..len), which must be at
 * most WEFT_MERKLE_BLOCK bytes (for a digest list, the digest itself). */
bool weft_merkle_verify_block(const uint8_t root[WEFT_MERKLE_HASH], uint64_t count, uint64_t index,
			      const void *block, size_t len, const uint8_t (*path)[WEFT_MERKLE_HASH],
			      unsigned plen);

#endif
