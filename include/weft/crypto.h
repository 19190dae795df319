/* crypto.h - hashing (BLAKE2b-256), Ed25519 identities, hex helpers.
 *
 * Thin, allocation-free wrappers around libsodium, except the identity whose
 * secret key lives in sodium_malloc memory (guard pages, locked) and is wiped
 * with sodium_memzero when freed. */
#ifndef WEFT_CRYPTO_H
#define WEFT_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_HASH_LEN 32
#define WEFT_PK_LEN 32
#define WEFT_SIG_LEN 64
#define WEFT_SEED_LEN 32

/* Must be called once before any other weft function that uses crypto. */
int weft_crypto_init(void);

void weft_hash(uint8_t out[WEFT_HASH_LEN], const void *data, size_t len);

/* Incremental BLAKE2b-256. */
struct weft_hasher {
	_Alignas(64) unsigned char state[384];
};
void weft_hasher_init(struct weft_hasher *h);
void weft_hasher_update(struct weft_hasher *h, const void *data, size_t len);
void weft_hasher_final(struct weft_hasher *h, uint8_t out[WEFT_HASH_LEN]);

struct weft_identity {
	uint8_t pk[WEFT_PK_LEN];
	unsigned char *sk; /* 64 bytes, sodium_malloc'd */
};

/* New random identity; never NULL.  Free with weft_identity_free(). */
struct weft_identity *weft_identity_generate(void);
/* Deterministic identity from a 32-byte seed (tests, simulator). */
struct weft_identity *weft_identity_from_seed(const uint8_t seed[WEFT_SEED_LEN]);
/* Loads a key file written by weft_identity_save: 0 and *out, or
 * WEFT_NOTFOUND when the file does not exist, WEFT_EDECODE when it is not a
 * key file, WEFT_EPERM when it is readable by group or others. */
int weft_identity_load(const char *path, struct weft_identity **out);
/* Writes the seed as hex to path with mode 0600, atomically
 * (weft_write_file_atomic): 0 or a weft error code, path unchanged on error. */
int weft_identity_save(const struct weft_identity *id, const char *path);
void weft_identity_free(struct weft_identity *id); /* accepts NULL */

void weft_sign(const struct weft_identity *id, uint8_t sig[WEFT_SIG_LEN],
	       const void *msg, size_t len);
/* 0 when valid, WEFT_ECRYPTO otherwise. */
int weft_verify(const uint8_t pk[WEFT_PK_LEN], const uint8_t sig[WEFT_SIG_LEN],
		const void *msg, size_t len) __attribute__((warn_unused_result));

/* Lower-case hex of len bytes into out (2*len+1 bytes, NUL-terminated). */
void weft_hex_encode(char *out, const uint8_t *in, size_t len);
/* Exactly 2*len hex digits; 0 or WEFT_EDECODE. */
int weft_hex_decode(uint8_t *out, size_t len, const char *hex, size_t hexlen);

#endif
