/* store_manifest.h - a file's manifest: what a reader needs to find,
 * check and decrypt the file's chunks, encrypted under the file's manifest
 * key, Merkle-rooted and signed by the owner.  The root is the file's id.
 *
 * Body (msgpack, the plaintext):
 *   [version, nonce (16), root_version, mode, size, [cdc min, avg, max],
 *    [ec_k, ec_n], [[cid (32), plain size, cipher size, wrapped key (72),
 *    shares root (32)]...]]
 * The shares root SR is the root over the chunk's erasure-coded shares'
 * roots (weft/store_proto.h): a reader checks every share it fetches
 * against it.
 * The nonce and root version are what the key tree needs (with the chunk
 * count, which fixes the tree's depth); chunk i's wrapped key opens with
 * leaf key i (weft/store_keys.h, weft/store_chunk.h).
 *
 * Envelope (msgpack, what is stored and sent):
 *   [version, owner (32), signature (64), sealed (bin)]
 *   sealed    = nonce (24) || XChaCha20-Poly1305(body) under the manifest
 *               key, AAD "weft.store.v1.manifest-body" || 0x00 || owner
 *   id        = weft_merkle_root(sealed): the file's id (its manifest root)
 *   signature = Ed25519 by owner over "weft.store.v1.manifest-sig" ||
 *               0x00 || id
 * A keyless node checks an envelope (weft_manifest_verify) as it checks a
 * chunk, and learns the owner, the id and the sealed length, nothing else.
 *
 * Bounds.  The decoders trust no count: the envelope's length is checked
 * against max_chunks before any hashing, the chunk count against
 * max_chunks and against the bytes present before anything is allocated,
 * the signature before decryption; every size is checked (each chunk
 * 1..cdc max bytes of plaintext, cipher = plain + WEFT_CHUNK_OVERHEAD, the
 * plaintext sizes adding up to size), and nothing may follow the last
 * field. */
#ifndef WEFT_STORE_MANIFEST_H
#define WEFT_STORE_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"
#include "weft/merkle.h"
#include "weft/mp.h"
#include "weft/store_cdc.h"
#include "weft/store_chunk.h"
#include "weft/store_keys.h"

#define WEFT_MANIFEST_VERSION 1
/* The default bound on a manifest's chunks (16 TiB of 1 MiB chunks). */
#define WEFT_MANIFEST_MAX_CHUNKS ((uint32_t)1 << 24)
/* Erasure parameters are carried, not used here: 1 <= k <= n <= this. */
#define WEFT_MANIFEST_MAX_SHARES 255

struct weft_manifest {
	/* nonce and root_version: set by the owner; id and owner: by
	 * weft_manifest_open (after weft_manifest_seal, the owner copies
	 * them in). */
	struct weft_file_ref file;
	enum weft_chunk_mode mode;
	uint64_t size;                     /* plaintext bytes: the sum of plain[] */
	struct weft_cdc_params chunking;   /* resolved: no zero field */
	uint32_t ec_k, ec_n;               /* erasure code: k of n shares */
	uint32_t nchunks;
	/* Per chunk, in file order (arrays of nchunks, owned by the manifest): */
	uint8_t (*cid)[WEFT_MERKLE_HASH];
	uint32_t *plain;                   /* plaintext size */
	uint32_t *cipher;                  /* stored (blob) size */
	uint8_t (*wrapped)[WEFT_CHUNK_WRAPPED_LEN];
	uint8_t (*sr)[WEFT_MERKLE_HASH];   /* shares root */
};

/* Zeroes m and gives it arrays for nchunks chunks (zeroed; aborts on OOM).
 * Free with weft_manifest_free. */
void weft_manifest_init(struct weft_manifest *m, uint32_t nchunks);
/* Frees m's arrays and zeroes m; accepts a zeroed m. */
void weft_manifest_free(struct weft_manifest *m);

/* Appends m's body to w after the decoder's checks.  0, or WEFT_EINVAL
 * with *why (may be NULL) naming what is inconsistent. */
int weft_manifest_encode(const struct weft_manifest *m, struct weft_mpw *w, const char **why);
/* Decodes a body into m (initialised here: weft_manifest_free it after a
 * success; nothing to free after a failure), at most max_chunks chunks.
 * m->file.id and owner are left zero.  0, or WEFT_EDECODE (malformed or
 * inconsistent), WEFT_EUNSUPPORTED (another version) or WEFT_ETOOBIG (too
 * many chunks) with *why (may be NULL). */
int weft_manifest_decode(struct weft_manifest *m, const uint8_t *body, size_t len, uint32_t max_chunks,
			 const char **why);

/* Seals an encoded body: *env (malloc'd, the caller frees it) of *envlen
 * bytes, signed by owner, and the file's id. */
void weft_manifest_seal(uint8_t **env, size_t *envlen, uint8_t id[WEFT_MERKLE_HASH], const uint8_t *body,
			size_t len, const struct weft_key *manifest_key, const struct weft_identity *owner);

/* The keyless check of an envelope: its shape, its id (computed) and the
 * owner's signature over it.  0 with id and owner set, or WEFT_EDECODE /
 * WEFT_EUNSUPPORTED (malformed, another version) or WEFT_ECRYPTO (bad
 * signature), with *why (may be NULL). */
int weft_manifest_verify(uint8_t id[WEFT_MERKLE_HASH], uint8_t owner[WEFT_PK_LEN], const uint8_t *env, size_t len,
			 const char **why);

/* Opens an envelope into m: refuses it (WEFT_ETOOBIG) when longer than
 * max_chunks chunks could make it, verifies it, refuses another id than
 * want_id (WEFT_ECORRUPT) or another owner than want_owner (WEFT_ECRYPTO)
 * when these are not NULL, decrypts the body under manifest_key
 * (WEFT_ECRYPTO when it does not open) and decodes it as
 * weft_manifest_decode does; m->file.id and owner are then the envelope's.
 * 0 (weft_manifest_free m after), or the code with *why (may be NULL). */
int weft_manifest_open(struct weft_manifest *m, const uint8_t *env, size_t len, const uint8_t *want_id,
		       const uint8_t *want_owner, const struct weft_key *manifest_key, uint32_t max_chunks,
		       const char **why);

/* Checks a decoded grant against the opened manifest of its file: the
 * same file (id, owner, nonce, root version), chunk count, and chunk range
 * exactly the chunks holding its byte range.  0, or WEFT_EINVAL with *why
 * (may be NULL). */
int weft_manifest_check_grant(const struct weft_manifest *m, const struct weft_grant *g, const char **why);

#endif
