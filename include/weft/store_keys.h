/* store_keys.h - the owner's key tree: every storage key of an owner derives
 * from one 32-byte root secret, by labelled, versioned derivation; and range
 * grants, which hand over the minimum set of subtree keys that decrypt
 * exactly the chunks covering a byte range of one file.
 *
 * Derivation (docs/storage.md, "Key tree").  One function everywhere:
 *   KDF(K, label, comp) = BLAKE2b(key = K, 32 bytes;
 *                                 message = label || 0x00 || comp)
 * with a 32-byte output unless said otherwise.  A label is an ASCII string
 * without NUL, so (label, comp) is recovered from the message and distinct
 * labels never collide.  From the root R:
 *   V(v)      = KDF(R,    "weft.store.v1.root-version", be32(v))
 *   F         = KDF(V(v), "weft.store.v1.file",         nonce)  16-byte nonce
 *   purpose   = KDF(V(v), "weft.store.v1.convergence" or
 *                         "weft.store.v1.chunker",      "")
 *   M         = KDF(F,    "weft.store.v1.manifest",     "")
 *   T(D, 0)   = KDF(F,    "weft.store.v1.tree",         u8(D))
 *   T(l-1, i) = KDF(T(l, i >> 1), "weft.store.v1.node", u8(l-1) || be32(i))
 *   leaf key of chunk c = T(0, c)
 * The chunk tree of a file of n chunks is the perfect binary tree of depth
 * D = ceil(log2 n) (0 for one chunk); level 0 holds the leaves, node
 * (l, i) covers chunks [i * 2^l, (i + 1) * 2^l).  Rotation is a new root
 * version v: new files take their keys from V(v + 1), old manifests name
 * their version, so old files stay readable from the same root.
 *
 * Memory.  A struct weft_key lives in sodium_malloc memory (guard pages,
 * locked) and is wiped by weft_key_free; so does a whole struct weft_grant.
 * Intermediate keys on the stack are wiped before a function returns.
 * Callers handle struct weft_key only through pointers from weft_key_new
 * or weft_key_random. */
#ifndef WEFT_STORE_KEYS_H
#define WEFT_STORE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"
#include "weft/merkle.h"

#define WEFT_KEY_LEN 32
#define WEFT_FILE_NONCE_LEN 16
/* Files have fewer than 2^32 chunks, so trees are at most 32 deep. */
#define WEFT_KEY_TREE_MAX_DEPTH 32

/* A 32-byte secret.  Allocated only by weft_key_new / weft_key_random. */
struct weft_key {
	uint8_t b[WEFT_KEY_LEN];
};

/* A zeroed key in sodium_malloc memory; never NULL (aborts on OOM).  The
 * caller owns it until weft_key_free. */
struct weft_key *weft_key_new(void);
/* A key of 32 random bytes (a new root secret, a group convergence
 * secret); never NULL. */
struct weft_key *weft_key_random(void);
/* Wipes and frees k; accepts NULL. */
void weft_key_free(struct weft_key *k);

/* KDF(k, label, comp[0..complen)) into out[0..outlen), 16 <= outlen <= 64
 * (BLAKE2b's output length is a parameter of the hash: a 24-byte output is
 * not a prefix of the 32-byte one).  label must not contain NUL. */
void weft_key_derive(uint8_t *out, size_t outlen, const struct weft_key *k, const char *label, const void *comp,
		     size_t complen);

/* The key of one file: F for root version `version` and the file's random
 * per-put nonce. */
void weft_key_file(struct weft_key *out, const struct weft_key *root, uint32_t version,
		   const uint8_t nonce[WEFT_FILE_NONCE_LEN]);

/* Per-owner secrets of one root version that are not per file. */
enum weft_key_purpose {
	WEFT_KEY_CONVERGENCE, /* convergent encryption secret (weft/store_chunk.h) */
	WEFT_KEY_CHUNKER,     /* the CDC gear-table key (weft/store_cdc.h) */
};
void weft_key_purpose(struct weft_key *out, const struct weft_key *root, uint32_t version,
		      enum weft_key_purpose purpose);

/* The manifest key M of a file key. */
void weft_key_manifest(struct weft_key *out, const struct weft_key *file_key);

/* ceil(log2 n): the depth of the chunk tree of n chunks (0 for n <= 1). */
uint32_t weft_key_tree_depth(uint32_t nchunks);

/* The leaf key of chunk c of a file of nchunks chunks: the key that wraps
 * chunk c's content key.  0, or WEFT_EINVAL when c >= nchunks. */
int weft_key_leaf(struct weft_key *out, const struct weft_key *file_key, uint32_t nchunks, uint32_t c);

/* ---- range grants --------------------------------------------------------- */

/* The chunks [*first, *end) holding bytes [a, b) of a file whose chunks
 * have the plaintext sizes sizes[0..n) (each at least 1).  0, or
 * WEFT_EINVAL when a >= b or b is past the sum of the sizes. */
int weft_grant_chunk_range(const uint32_t *sizes, uint32_t n, uint64_t a, uint64_t b, uint32_t *first,
			   uint32_t *end);

/* Which file a grant (or manifest) is about. */
struct weft_file_ref {
	uint8_t id[WEFT_MERKLE_HASH];       /* the manifest root: the id users see */
	uint8_t owner[WEFT_PK_LEN];         /* the owner's Ed25519 key, signer of the manifest */
	uint8_t nonce[WEFT_FILE_NONCE_LEN]; /* the random per-put nonce keys derive from */
	uint32_t root_version;              /* the root version keys derive from */
};

/* Level 0 holds leaves: node (level, index) covers the chunks
 * [index << level, (index + 1) << level). */
struct weft_grant_node {
	uint32_t level;
	uint32_t index;
};

/* A canonical cover has at most 2 nodes per level below the top, and
 * a full tree's cover is its top: at most 2 * 32 nodes. */
#define WEFT_GRANT_MAX_NODES (2 * WEFT_KEY_TREE_MAX_DEPTH)
#define WEFT_GRANT_VERSION 1
/* The longest encoded grant: 163 bytes of fixed fields, 41 per node. */
#define WEFT_GRANT_MAX_BYTES 3072
#define WEFT_GRANT_PREFIX "weft-grant:"
/* The longest capability string, with its NUL: the prefix, then the
 * encoded grant in unpadded base64url. */
#define WEFT_GRANT_STRING_MAX (sizeof(WEFT_GRANT_PREFIX) - 1 + (WEFT_GRANT_MAX_BYTES * 4 + 2) / 3 + 1)

/* Read access to bytes [a, b) of a file: the manifest key, and the keys of
 * the canonical (minimum) cover of the chunks [first, end) that hold those
 * bytes, sorted by position.  A grant of [0, size) is the file's read
 * capability (its cover is the tree's top).  The grant of an empty file
 * (nchunks 0) holds only the manifest key: first = end = a = b = 0.
 * Allocated in sodium_malloc memory as a whole; free with weft_grant_free. */
struct weft_grant {
	struct weft_file_ref file;
	uint32_t nchunks;
	uint32_t first, end;        /* chunks [first, end) */
	uint64_t a, b;              /* bytes [a, b) */
	uint32_t nnodes;
	struct weft_grant_node node[WEFT_GRANT_MAX_NODES];
	struct weft_key manifest_key;
	struct weft_key node_key[WEFT_GRANT_MAX_NODES];
};

/* The grant for bytes [a, b) of the file with key file_key, identity
 * *file and chunk sizes sizes[0..n).  0 and *out (the caller's until
 * weft_grant_free), or WEFT_EINVAL (and *out NULL) when the range is empty
 * or past the end (a = b = 0 is allowed only for an empty file). */
int weft_grant_make(struct weft_grant **out, const struct weft_key *file_key, const struct weft_file_ref *file,
		    const uint32_t *sizes, uint32_t n, uint64_t a, uint64_t b);
/* Wipes and frees g; accepts NULL. */
void weft_grant_free(struct weft_grant *g);

/* The leaf key of chunk c from the grant.  0, or WEFT_EPERM when c is not
 * in [g->first, g->end): a grant derives nothing outside its range. */
int weft_grant_leaf(struct weft_key *out, const struct weft_grant *g, uint32_t c);

/* Binary form, msgpack: [version, id, owner, nonce, root_version, nchunks,
 * first, end, a, b, manifest_key, [[level, index, key]...]].  Writes at
 * most WEFT_GRANT_MAX_BYTES into out (secret: the caller wipes it) and
 * returns the length. */
size_t weft_grant_encode(const struct weft_grant *g, uint8_t out[WEFT_GRANT_MAX_BYTES]);
/* Decodes and checks a binary grant: the version, every field's type and
 * size, no trailing bytes, first < end <= nchunks and a < b (or the
 * empty file's all-zero ranges), the node count (WEFT_ETOOBIG past
 * WEFT_GRANT_MAX_NODES, before anything is read), each node's level within
 * the tree's depth, and that the nodes are exactly the canonical cover of
 * [first, end) in order.  The byte range against the chunk sizes needs the
 * manifest: weft_manifest_check_grant.  0 and *out (free with
 * weft_grant_free), or WEFT_EDECODE / WEFT_EUNSUPPORTED (another version)
 * / WEFT_ETOOBIG with *why (may be NULL) naming the problem. */
int weft_grant_decode(struct weft_grant **out, const uint8_t *buf, size_t len, const char **why);

/* The capability string "weft-grant:" + unpadded base64url of the binary
 * form, NUL-terminated, into out (a secret: the caller wipes it). */
void weft_grant_format(const struct weft_grant *g, char out[WEFT_GRANT_STRING_MAX]);
/* Parses a capability string (NUL-terminated); as weft_grant_decode, and
 * WEFT_EDECODE for a wrong prefix, bad base64url or a string too long. */
int weft_grant_parse(struct weft_grant **out, const char *s, const char **why);

#endif
