/* chunk.c - chunk encryption in random or convergent mode, content-key
 * wrapping and CIDs (weft/store_chunk.h): XChaCha20-Poly1305 from
 * libsodium, keys from the key tree's one KDF, CIDs from weft/merkle.h. */
#include <sodium.h>
#include <stdbool.h>
#include <string.h>

#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/store_chunk.h"
#include "weft/store_keys.h"

#define LABEL_CHUNK "weft.store.v1.chunk"
#define LABEL_WRAP "weft.store.v1.wrap"
#define LABEL_CONVERGENT_KEY "weft.store.v1.convergent-key"
#define LABEL_CONVERGENT_NONCE "weft.store.v1.convergent-nonce"

_Static_assert(WEFT_CHUNK_NONCE_LEN == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "XChaCha20 nonce");
_Static_assert(WEFT_CHUNK_TAG_LEN == crypto_aead_xchacha20poly1305_ietf_ABYTES, "Poly1305 tag");
_Static_assert(WEFT_KEY_LEN == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "XChaCha20 key");

/* AADs: label with its NUL, the mode byte, and for a wrap the CID. */
#define CHUNK_AAD_LEN (sizeof(LABEL_CHUNK) + 1)
#define WRAP_AAD_LEN (sizeof(LABEL_WRAP) + 1 + WEFT_MERKLE_HASH)

static bool mode_valid(enum weft_chunk_mode mode)
{
	switch (mode) {
	case WEFT_CHUNK_RANDOM:
	case WEFT_CHUNK_CONVERGENT:
		return true;
	}
	return false;
}

static void chunk_aad(uint8_t aad[CHUNK_AAD_LEN], enum weft_chunk_mode mode)
{
	memcpy(aad, LABEL_CHUNK, sizeof(LABEL_CHUNK));
	aad[sizeof(LABEL_CHUNK)] = (uint8_t)mode;
}

static void wrap_aad(uint8_t aad[WRAP_AAD_LEN], enum weft_chunk_mode mode, const uint8_t cid[WEFT_MERKLE_HASH])
{
	memcpy(aad, LABEL_WRAP, sizeof(LABEL_WRAP));
	aad[sizeof(LABEL_WRAP)] = (uint8_t)mode;
	memcpy(aad + sizeof(LABEL_WRAP) + 1, cid, WEFT_MERKLE_HASH);
}

int weft_chunk_seal(enum weft_chunk_mode mode, const struct weft_key *convergence, const struct weft_key *leaf,
		    const void *pt, size_t len, uint8_t *blob, uint8_t cid[WEFT_MERKLE_HASH],
		    uint8_t wrapped[WEFT_CHUNK_WRAPPED_LEN])
{
	if (len == 0 || len > WEFT_CHUNK_MAX || !mode_valid(mode) ||
	    (mode == WEFT_CHUNK_CONVERGENT && convergence == NULL))
		return WEFT_EINVAL;
	struct weft_key content;
	if (mode == WEFT_CHUNK_CONVERGENT) {
		weft_key_derive(content.b, WEFT_KEY_LEN, convergence, LABEL_CONVERGENT_KEY, pt, len);
		weft_key_derive(blob, WEFT_CHUNK_NONCE_LEN, &content, LABEL_CONVERGENT_NONCE, NULL, 0);
	} else {
		randombytes_buf(content.b, WEFT_KEY_LEN);
		randombytes_buf(blob, WEFT_CHUNK_NONCE_LEN);
	}
	uint8_t aad[WRAP_AAD_LEN > CHUNK_AAD_LEN ? WRAP_AAD_LEN : CHUNK_AAD_LEN];
	chunk_aad(aad, mode);
	crypto_aead_xchacha20poly1305_ietf_encrypt(blob + WEFT_CHUNK_NONCE_LEN, NULL, pt, len, aad, CHUNK_AAD_LEN,
						   NULL, blob, content.b);
	weft_merkle_root(cid, blob, len + WEFT_CHUNK_OVERHEAD);

	wrap_aad(aad, mode, cid);
	randombytes_buf(wrapped, WEFT_CHUNK_NONCE_LEN);
	crypto_aead_xchacha20poly1305_ietf_encrypt(wrapped + WEFT_CHUNK_NONCE_LEN, NULL, content.b, WEFT_KEY_LEN, aad,
						   WRAP_AAD_LEN, NULL, wrapped, leaf->b);
	sodium_memzero(&content, sizeof(content));
	return 0;
}

int weft_chunk_unwrap(struct weft_key *out, enum weft_chunk_mode mode, const struct weft_key *leaf,
		      const uint8_t cid[WEFT_MERKLE_HASH], const uint8_t wrapped[WEFT_CHUNK_WRAPPED_LEN])
{
	uint8_t aad[WRAP_AAD_LEN];
	wrap_aad(aad, mode, cid);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(out->b, NULL, NULL, wrapped + WEFT_CHUNK_NONCE_LEN,
						       WEFT_KEY_LEN + WEFT_CHUNK_TAG_LEN, aad, WRAP_AAD_LEN, wrapped,
						       leaf->b) != 0) {
		sodium_memzero(out, sizeof(*out));
		return WEFT_ECRYPTO;
	}
	return 0;
}

int weft_chunk_verify(const uint8_t cid[WEFT_MERKLE_HASH], const uint8_t *blob, size_t len)
{
	uint8_t root[WEFT_MERKLE_HASH];
	weft_merkle_root(root, blob, len);
	return memcmp(root, cid, WEFT_MERKLE_HASH) == 0 ? 0 : WEFT_ECORRUPT;
}

int weft_chunk_open(void *pt, enum weft_chunk_mode mode, const struct weft_key *content, const uint8_t *blob,
		    size_t len)
{
	if (len <= WEFT_CHUNK_OVERHEAD || len - WEFT_CHUNK_OVERHEAD > WEFT_CHUNK_MAX)
		return WEFT_ECORRUPT;
	uint8_t aad[CHUNK_AAD_LEN];
	chunk_aad(aad, mode);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, NULL, NULL, blob + WEFT_CHUNK_NONCE_LEN,
						       len - WEFT_CHUNK_NONCE_LEN, aad, CHUNK_AAD_LEN, blob,
						       content->b) != 0) {
		sodium_memzero(pt, len - WEFT_CHUNK_OVERHEAD);
		return WEFT_ECRYPTO;
	}
	return 0;
}

int weft_chunk_decrypt(void *pt, enum weft_chunk_mode mode, const struct weft_key *content,
		       const uint8_t cid[WEFT_MERKLE_HASH], const uint8_t *blob, size_t len)
{
	if (len <= WEFT_CHUNK_OVERHEAD || len - WEFT_CHUNK_OVERHEAD > WEFT_CHUNK_MAX || weft_chunk_verify(cid, blob, len))
		return WEFT_ECORRUPT;
	return weft_chunk_open(pt, mode, content, blob, len);
}
