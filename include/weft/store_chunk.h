/* store_chunk.h - chunk encryption: XChaCha20-Poly1305 under a per-chunk
 * content key, in one of two modes, the content key wrapped under the
 * chunk's leaf key (weft/store_keys.h), and the chunk's content address.
 *
 * Modes (docs/storage.md, "Modes").
 *   random      content key and nonce are fresh random bytes per chunk:
 *               no two chunks share either, and equal plaintexts give
 *               unrelated ciphertexts (no dedup, nothing to confirm).
 *   convergent  content key = KDF(S, "weft.store.v1.convergent-key", pt)
 *               under a convergence secret S (the owner's, or a group's,
 *               Tahoe-style), nonce = KDF(key, "weft.store.v1.convergent-
 *               nonce", "") with a 24-byte output: equal plaintext under one
 *               secret gives equal bytes and CID (dedup within the group);
 *               other content gives another key and nonce.
 * Neither mode derives a key or nonce from a position: rewriting a chunk
 * with other content changes both.  The content AAD is the label
 * "weft.store.v1.chunk", a 0x00 and the mode byte, so a chunk never opens
 * under the other mode.
 *
 * The blob.  What a node stores, and the CID addresses, is every byte of
 *   blob = nonce (24) || ciphertext (len) || tag (16)
 * and CID = weft_merkle_root(blob) (weft/merkle.h: BLAKE2b-256 RFC 6962
 * tree over the blob's 4 KiB sub-blocks), so a keyless node verifies every
 * byte it holds, the nonce included, and can prove any sub-block.
 *
 * The wrapped key (72 bytes) = wnonce (24, random) || XChaCha20-Poly1305 of
 * the content key under the leaf key, AAD "weft.store.v1.wrap" || 0x00 ||
 * mode || CID: it unwraps only for that chunk, mode and leaf key.
 *
 * The content key is held on the stack while a chunk is sealed and wiped
 * before return; weft_chunk_unwrap hands it out in a struct weft_key. */
#ifndef WEFT_STORE_CHUNK_H
#define WEFT_STORE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "weft/merkle.h"
#include "weft/store_keys.h"

#define WEFT_CHUNK_NONCE_LEN 24
#define WEFT_CHUNK_TAG_LEN 16
#define WEFT_CHUNK_OVERHEAD (WEFT_CHUNK_NONCE_LEN + WEFT_CHUNK_TAG_LEN)
#define WEFT_CHUNK_WRAPPED_LEN (WEFT_CHUNK_NONCE_LEN + WEFT_KEY_LEN + WEFT_CHUNK_TAG_LEN)
/* The largest plaintext of one chunk (the CDC's largest max). */
#define WEFT_CHUNK_MAX ((uint32_t)64 << 20)

/* Values are the mode byte of AADs and manifests. */
enum weft_chunk_mode {
	WEFT_CHUNK_RANDOM = 1,
	WEFT_CHUNK_CONVERGENT = 2,
};

/* Encrypts pt[0..len), 1 <= len <= WEFT_CHUNK_MAX, into
 * blob[0..len + WEFT_CHUNK_OVERHEAD) (pt may be blob + WEFT_CHUNK_NONCE_LEN:
 * in place; no other overlap), writes the blob's CID and the content key
 * wrapped under leaf.  convergence is the secret of convergent mode (NULL
 * in random mode).  0, or WEFT_EINVAL for a bad length, mode or a missing
 * convergence secret. */
int weft_chunk_seal(enum weft_chunk_mode mode, const struct weft_key *convergence, const struct weft_key *leaf,
		    const void *pt, size_t len, uint8_t *blob, uint8_t cid[WEFT_MERKLE_HASH],
		    uint8_t wrapped[WEFT_CHUNK_WRAPPED_LEN]);

/* The content key of the chunk with this CID, from its wrapped key.  0, or
 * WEFT_ECRYPTO when leaf, mode, CID or wrapped bytes are not the ones it
 * was sealed with (out is then zeroed). */
int weft_chunk_unwrap(struct weft_key *out, enum weft_chunk_mode mode, const struct weft_key *leaf,
		      const uint8_t cid[WEFT_MERKLE_HASH], const uint8_t wrapped[WEFT_CHUNK_WRAPPED_LEN]);

/* Checks blob[0..len) against cid, then decrypts it into
 * pt[0..len - WEFT_CHUNK_OVERHEAD).  0; WEFT_ECORRUPT when the blob is not
 * the CID's (or too short or long to be a chunk); WEFT_ECRYPTO when it does
 * not decrypt under this content key and mode (pt is then zeroed). */
int weft_chunk_decrypt(void *pt, enum weft_chunk_mode mode, const struct weft_key *content,
		       const uint8_t cid[WEFT_MERKLE_HASH], const uint8_t *blob, size_t len);

/* weft_chunk_decrypt without the CID check, for a blob already known to
 * be the CID's: rebuilt by the storage service from shares it checked
 * against the manifest's shares root (weft/store_proto.h), which binds
 * the CID as strongly; a blob of unknown origin goes through
 * weft_chunk_decrypt.  The AEAD tag is checked either way.  0,
 * WEFT_ECORRUPT (a length no chunk has) or WEFT_ECRYPTO. */
int weft_chunk_open(void *pt, enum weft_chunk_mode mode, const struct weft_key *content, const uint8_t *blob,
		    size_t len);
/* The keyless check a storing node makes: 0 when blob[0..len) is the
 * content with this CID, else WEFT_ECORRUPT. */
int weft_chunk_verify(const uint8_t cid[WEFT_MERKLE_HASH], const uint8_t *blob, size_t len);

#endif
