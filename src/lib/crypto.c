/* crypto.c - BLAKE2b-256 hashing, Ed25519 identities and hex helpers over
 * libsodium.  Identity secrets live only in sodium_malloc memory; the key
 * file holds the 32-byte seed as hex, mode 0600, written atomically. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/util.h"

_Static_assert(sizeof(crypto_generichash_state) <= sizeof(((struct weft_hasher *)0)->state),
	       "weft_hasher too small for libsodium's state");

int weft_crypto_init(void)
{
	return sodium_init() < 0 ? WEFT_ECRYPTO : 0;
}

void weft_hash(uint8_t out[WEFT_HASH_LEN], const void *data, size_t len)
{
	crypto_generichash(out, WEFT_HASH_LEN, data, len, NULL, 0);
}

void weft_hasher_init(struct weft_hasher *h)
{
	crypto_generichash_init((crypto_generichash_state *)h->state, NULL, 0, WEFT_HASH_LEN);
}

void weft_hasher_update(struct weft_hasher *h, const void *data, size_t len)
{
	crypto_generichash_update((crypto_generichash_state *)h->state, data, len);
}

void weft_hasher_final(struct weft_hasher *h, uint8_t out[WEFT_HASH_LEN])
{
	crypto_generichash_final((crypto_generichash_state *)h->state, out, WEFT_HASH_LEN);
}

static struct weft_identity *identity_alloc(void)
{
	struct weft_identity *id = calloc(1, sizeof(*id));
	if (id == NULL)
		abort();
	id->sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
	if (id->sk == NULL)
		abort();
	return id;
}

struct weft_identity *weft_identity_generate(void)
{
	struct weft_identity *id = identity_alloc();
	crypto_sign_keypair(id->pk, id->sk);
	return id;
}

struct weft_identity *weft_identity_from_seed(const uint8_t seed[WEFT_SEED_LEN])
{
	struct weft_identity *id = identity_alloc();
	crypto_sign_seed_keypair(id->pk, id->sk, seed);
	return id;
}

void weft_identity_free(struct weft_identity *id)
{
	if (id == NULL)
		return;
	sodium_free(id->sk); /* wipes before freeing */
	free(id);
}

/* Key file: "weft-ed25519-seed <64 hex digits>\n". */
#define KEYFILE_TAG "weft-ed25519-seed "
#define KEYFILE_LEN (sizeof(KEYFILE_TAG) - 1 + 2 * WEFT_SEED_LEN + 1)

int weft_identity_load(const char *path, struct weft_identity **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? WEFT_NOTFOUND : weft_err_from_errno(errno);
	struct stat st;
	if (fstat(fd, &st) < 0 || (st.st_mode & 077) != 0) {
		close(fd);
		return WEFT_EPERM;
	}
	char *buf = sodium_malloc(KEYFILE_LEN + 1);
	if (buf == NULL)
		abort();
	ssize_t n = read(fd, buf, KEYFILE_LEN + 1);
	close(fd);
	int rc = WEFT_EDECODE;
	uint8_t *seed = sodium_malloc(WEFT_SEED_LEN);
	if (seed == NULL)
		abort();
	size_t tag = sizeof(KEYFILE_TAG) - 1;
	if (n == (ssize_t)KEYFILE_LEN && memcmp(buf, KEYFILE_TAG, tag) == 0 && buf[KEYFILE_LEN - 1] == '\n' &&
	    weft_hex_decode(seed, WEFT_SEED_LEN, buf + tag, 2 * WEFT_SEED_LEN) == 0) {
		*out = weft_identity_from_seed(seed);
		rc = 0;
	}
	sodium_free(seed);
	sodium_free(buf);
	return rc;
}

int weft_identity_save(const struct weft_identity *id, const char *path)
{
	char *buf = sodium_malloc(KEYFILE_LEN + 1);
	if (buf == NULL)
		abort();
	size_t tag = sizeof(KEYFILE_TAG) - 1;
	memcpy(buf, KEYFILE_TAG, tag);
	/* The libsodium secret key is seed || public key. */
	weft_hex_encode(buf + tag, id->sk, WEFT_SEED_LEN);
	buf[KEYFILE_LEN - 1] = '\n';
	int rc = weft_write_file_atomic(path, buf, KEYFILE_LEN, 0600);
	sodium_free(buf);
	return rc;
}

void weft_sign(const struct weft_identity *id, uint8_t sig[WEFT_SIG_LEN], const void *msg, size_t len)
{
	crypto_sign_detached(sig, NULL, msg, len, id->sk);
}

int weft_verify(const uint8_t pk[WEFT_PK_LEN], const uint8_t sig[WEFT_SIG_LEN], const void *msg, size_t len)
{
	return crypto_sign_verify_detached(sig, msg, len, pk) == 0 ? 0 : WEFT_ECRYPTO;
}

void weft_hex_encode(char *out, const uint8_t *in, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int weft_hex_decode(uint8_t *out, size_t len, const char *hex, size_t hexlen)
{
	if (hexlen != 2 * len)
		return WEFT_EDECODE;
	for (size_t i = 0; i < len; i++) {
		int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return WEFT_EDECODE;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
