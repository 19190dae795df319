/* crypto.c - unit tests for include/weft/crypto.h: BLAKE2b-256 against
 * known vectors (one-shot and incremental), Ed25519 identities against RFC
 * 8032 test vector 1, sign/verify and its failures, the identity key file
 * (round trip, mode 0600, refusing group/other-readable files, missing and
 * malformed files) and the hex helpers. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"

static char *tmp;

/* Decodes a hex literal of exactly 2*len digits; aborts on a typo. */
static void unhex(uint8_t *out, size_t len, const char *hex)
{
	if (weft_hex_decode(out, len, hex, strlen(hex)) != 0)
		abort();
}

/* Writes exactly len bytes to path with the given mode. */
static void write_mode(const char *path, const char *data, size_t len, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) != 0 || close(fd) != 0)
		abort();
}

/* Python's hashlib.blake2b(..., digest_size=32), computed independently. */
#define BLAKE2B256_EMPTY "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"
#define BLAKE2B256_ABC "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319"

/* RFC 8032 section 7.1, TEST 1. */
#define RFC8032_SK "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
#define RFC8032_PK "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
#define RFC8032_SIG                                                                                               \
	"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"

static void test_hash(void)
{
	uint8_t got[WEFT_HASH_LEN], want[WEFT_HASH_LEN];
	char hex[2 * WEFT_HASH_LEN + 1];

	weft_hash(got, "", 0);
	weft_hex_encode(hex, got, sizeof(got));
	is_str(hex, BLAKE2B256_EMPTY, "BLAKE2b-256(\"\")");
	weft_hash(got, "abc", 3);
	weft_hex_encode(hex, got, sizeof(got));
	is_str(hex, BLAKE2B256_ABC, "BLAKE2b-256(\"abc\")");

	/* Incremental over every split of a longer input equals one-shot. */
	uint8_t data[1000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 7);
	weft_hash(want, data, sizeof(data));
	static const size_t splits[] = {0, 1, 127, 128, 129, 500, 999, 1000};
	int same = 0;
	for (size_t s = 0; s < sizeof(splits) / sizeof(splits[0]); s++) {
		struct weft_hasher h;
		weft_hasher_init(&h);
		weft_hasher_update(&h, data, splits[s]);
		weft_hasher_update(&h, data + splits[s], sizeof(data) - splits[s]);
		weft_hasher_final(&h, got);
		same += memcmp(got, want, sizeof(got)) == 0;
	}
	is_int(same, (int)(sizeof(splits) / sizeof(splits[0])), "incremental hash equals one-shot for every split");

	/* Byte at a time, with empty updates in between. */
	struct weft_hasher h;
	weft_hasher_init(&h);
	for (size_t i = 0; i < sizeof(data); i++) {
		weft_hasher_update(&h, data + i, 1);
		weft_hasher_update(&h, data, 0);
	}
	weft_hasher_final(&h, got);
	is_mem(got, want, sizeof(got), "byte-at-a-time hash equals one-shot");

	weft_hasher_init(&h);
	weft_hasher_update(&h, "a", 1);
	weft_hasher_update(&h, "bc", 2);
	weft_hasher_final(&h, got);
	unhex(want, sizeof(want), BLAKE2B256_ABC);
	is_mem(got, want, sizeof(got), "incremental \"a\" + \"bc\" is BLAKE2b-256(\"abc\")");

	weft_hasher_init(&h);
	weft_hasher_final(&h, got);
	unhex(want, sizeof(want), BLAKE2B256_EMPTY);
	is_mem(got, want, sizeof(got), "incremental with no update is BLAKE2b-256(\"\")");

	weft_hash(got, "abd", 3);
	unhex(want, sizeof(want), BLAKE2B256_ABC);
	ok(memcmp(got, want, sizeof(got)) != 0, "a different input gives a different hash");
}

static void test_identity_vector(void)
{
	uint8_t seed[WEFT_SEED_LEN], pk[WEFT_PK_LEN], sig[WEFT_SIG_LEN], want_sig[WEFT_SIG_LEN];
	unhex(seed, sizeof(seed), RFC8032_SK);
	unhex(pk, sizeof(pk), RFC8032_PK);
	unhex(want_sig, sizeof(want_sig), RFC8032_SIG);

	struct weft_identity *id = weft_identity_from_seed(seed);
	ok(id != NULL && id->sk != NULL, "identity from seed");
	is_mem(id->pk, pk, sizeof(pk), "RFC 8032 test 1: public key from the secret");
	weft_sign(id, sig, "", 0);
	is_mem(sig, want_sig, sizeof(sig), "RFC 8032 test 1: signature of the empty message");
	is_int(weft_verify(pk, want_sig, "", 0), 0, "RFC 8032 test 1: the published signature verifies");

	struct weft_identity *again = weft_identity_from_seed(seed);
	is_mem(again->pk, id->pk, sizeof(pk), "the same seed gives the same key again");
	weft_identity_free(again);
	weft_identity_free(id);
	weft_identity_free(NULL);
	ok(1, "weft_identity_free(NULL) is harmless");
}

static void test_sign_verify(void)
{
	struct weft_identity *a = weft_identity_generate(), *b = weft_identity_generate();
	ok(memcmp(a->pk, b->pk, WEFT_PK_LEN) != 0, "two generated identities differ");

	static const char msg[] = "transfer 10 to node 3";
	uint8_t sig[WEFT_SIG_LEN], bad[WEFT_SIG_LEN], pk[WEFT_PK_LEN];
	char m2[sizeof(msg)];
	weft_sign(a, sig, msg, sizeof(msg) - 1);
	is_int(weft_verify(a->pk, sig, msg, sizeof(msg) - 1), 0, "sign/verify round trip");
	is_int(weft_verify(b->pk, sig, msg, sizeof(msg) - 1), WEFT_ECRYPTO, "another key does not verify");

	/* Flip every bit of the message, signature and key in turn. */
	int failed = 0, total = 0;
	for (size_t i = 0; i < sizeof(msg) - 1; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(m2, msg, sizeof(msg));
			m2[i] ^= (char)(1 << bit);
			failed += weft_verify(a->pk, sig, m2, sizeof(msg) - 1) == WEFT_ECRYPTO;
			total++;
		}
	}
	is_int(failed, total, "every flipped message bit fails with WEFT_ECRYPTO (%d cases)", total);
	failed = total = 0;
	for (size_t i = 0; i < WEFT_SIG_LEN; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(bad, sig, sizeof(sig));
			bad[i] ^= (uint8_t)(1 << bit);
			failed += weft_verify(a->pk, bad, msg, sizeof(msg) - 1) == WEFT_ECRYPTO;
			total++;
		}
	}
	is_int(failed, total, "every flipped signature bit fails with WEFT_ECRYPTO (%d cases)", total);
	failed = total = 0;
	for (size_t i = 0; i < WEFT_PK_LEN; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(pk, a->pk, sizeof(pk));
			pk[i] ^= (uint8_t)(1 << bit);
			failed += weft_verify(pk, sig, msg, sizeof(msg) - 1) == WEFT_ECRYPTO;
			total++;
		}
	}
	is_int(failed, total, "every flipped key bit fails with WEFT_ECRYPTO (%d cases)", total);
	is_int(weft_verify(a->pk, sig, msg, sizeof(msg) - 2), WEFT_ECRYPTO, "a truncated message fails");
	memset(bad, 0, sizeof(bad));
	is_int(weft_verify(a->pk, bad, msg, sizeof(msg) - 1), WEFT_ECRYPTO, "an all-zero signature fails");
	memset(pk, 0, sizeof(pk));
	is_int(weft_verify(pk, sig, msg, sizeof(msg) - 1), WEFT_ECRYPTO, "an all-zero key fails");

	/* Signatures are deterministic. */
	weft_sign(a, bad, msg, sizeof(msg) - 1);
	is_mem(bad, sig, sizeof(sig), "signing twice gives the same signature");
	weft_identity_free(a);
	weft_identity_free(b);
}

static void test_key_file(void)
{
	char *path = tu_path(tmp, "identity.key");
	struct weft_identity *id = weft_identity_generate(), *back = NULL;
	struct stat st;

	is_int(weft_identity_save(id, path), 0, "save identity");
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "key file has mode 0600 (%o)",
	   (unsigned)(st.st_mode & 0777));
	is_int(tu_dir_count(tmp, "identity.key.tmp"), 0, "no temporary file left behind");
	char *tmpfile = tu_path(tmp, "identity.key.tmp");
	is_int(weft_identity_load(path, &back), 0, "load identity");
	ok(back && memcmp(back->pk, id->pk, WEFT_PK_LEN) == 0, "loaded key has the same public key");
	uint8_t sig[WEFT_SIG_LEN];
	if (back)
		weft_sign(back, sig, "x", 1);
	ok(back && weft_verify(id->pk, sig, "x", 1) == 0, "loaded key signs for the saved public key");
	weft_identity_free(back);
	back = NULL;

	/* The format: tag, 64 hex digits of the seed, newline. */
	char *text = tu_read_file(path);
	ok(text && strncmp(text, "weft-ed25519-seed ", 18) == 0 && strlen(text) == 18 + 64 + 1 &&
		   text[82] == '\n',
	   "key file is 'weft-ed25519-seed <64 hex>\\n'");
	char good[128];
	snprintf(good, sizeof(good), "%s", text ? text : "");
	free(text);

	/* Saving over an existing file, even an open one with a bad mode, leaves 0600. */
	chmod(path, 0644);
	struct weft_identity *other = weft_identity_generate();
	write_mode(tmpfile, "junk", 4, 0644);
	is_int(weft_identity_save(other, path), 0, "save over an existing key and a stale .tmp");
	is_int(tu_dir_count(tmp, "identity.key.tmp"), 1, "no temporary file left beside the stale one");
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "replaced key file has mode 0600 (%o)",
	   (unsigned)(st.st_mode & 0777));
	is_int(weft_identity_load(path, &back), 0, "load the replaced key");
	ok(back && memcmp(back->pk, other->pk, WEFT_PK_LEN) == 0, "the replaced key is the new one");
	weft_identity_free(back);
	back = NULL;
	weft_identity_free(other);

	/* Permissions. */
	char *f = tu_path(tmp, "perm.key");
	write_mode(f, good, strlen(good), 0644);
	back = NULL;
	is_int(weft_identity_load(f, &back), WEFT_EPERM, "mode 0644 is refused with WEFT_EPERM");
	ok(back == NULL, "and *out is not set");
	write_mode(f, good, strlen(good), 0640);
	is_int(weft_identity_load(f, &back), WEFT_EPERM, "mode 0640 is refused with WEFT_EPERM");
	write_mode(f, good, strlen(good), 0604);
	is_int(weft_identity_load(f, &back), WEFT_EPERM, "mode 0604 is refused with WEFT_EPERM");
	write_mode(f, good, strlen(good), 0400);
	is_int(weft_identity_load(f, &back), 0, "mode 0400 is accepted");
	weft_identity_free(back);
	back = NULL;
	free(f);

	/* Missing. */
	f = tu_path(tmp, "missing.key");
	is_int(weft_identity_load(f, &back), WEFT_NOTFOUND, "missing file gives WEFT_NOTFOUND");
	ok(back == NULL, "and *out is not set");
	free(f);

	/* Malformed files, all mode 0600. */
	f = tu_path(tmp, "bad.key");
	struct {
		const char *what;
		char text[160];
		size_t len;
	} bad[12];
	int nbad = 0;
	bad[nbad].what = "empty file";
	bad[nbad++].len = 0;
	bad[nbad].what = "truncated (half the digits)";
	memcpy(bad[nbad].text, good, 50);
	bad[nbad++].len = 50;
	bad[nbad].what = "truncated (no newline)";
	memcpy(bad[nbad].text, good, 82);
	bad[nbad++].len = 82;
	bad[nbad].what = "one digit short";
	memcpy(bad[nbad].text, good, 81);
	bad[nbad].text[81] = '\n';
	bad[nbad++].len = 82;
	bad[nbad].what = "trailing garbage";
	memcpy(bad[nbad].text, good, 83);
	memcpy(bad[nbad].text + 83, "extra\n", 6);
	bad[nbad++].len = 89;
	bad[nbad].what = "non-hex digit";
	memcpy(bad[nbad].text, good, 83);
	bad[nbad].text[40] = 'g';
	bad[nbad++].len = 83;
	bad[nbad].what = "space inside the digits";
	memcpy(bad[nbad].text, good, 83);
	bad[nbad].text[20] = ' ';
	bad[nbad++].len = 83;
	bad[nbad].what = "wrong tag";
	memcpy(bad[nbad].text, good, 83);
	memcpy(bad[nbad].text, "weft-x25519-seed ", 17);
	bad[nbad++].len = 83;
	bad[nbad].what = "no tag";
	memcpy(bad[nbad].text, good + 18, 65);
	bad[nbad++].len = 65;
	bad[nbad].what = "binary seed";
	memset(bad[nbad].text, 0xab, 32);
	bad[nbad++].len = 32;
	for (int i = 0; i < nbad; i++) {
		write_mode(f, bad[i].text, bad[i].len, 0600);
		back = NULL;
		int rc = weft_identity_load(f, &back);
		ok(rc == WEFT_EDECODE && back == NULL, "%s: WEFT_EDECODE (rc %d)", bad[i].what, rc);
		weft_identity_free(back);
	}
	/* Upper-case digits are still a valid seed. */
	char upper[128];
	snprintf(upper, sizeof(upper), "%s", good);
	for (int i = 18; i < 82; i++)
		if (upper[i] >= 'a' && upper[i] <= 'f')
			upper[i] = (char)(upper[i] - 'a' + 'A');
	write_mode(f, upper, strlen(upper), 0600);
	back = NULL;
	is_int(weft_identity_load(f, &back), 0, "upper-case hex digits load");
	weft_identity_free(back);
	free(f);

	/* Saving where it cannot be written. */
	f = tu_path(tmp, "no-such-dir/identity.key");
	ok(weft_identity_save(id, f) < 0, "save into a missing directory is a negative code");
	free(f);

	weft_identity_free(id);
	free(tmpfile);
	free(path);
}

static void test_hex(void)
{
	const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
	char hex[2 * sizeof(bytes) + 2];
	memset(hex, 'X', sizeof(hex));
	weft_hex_encode(hex, bytes, sizeof(bytes));
	is_str(hex, "00017f80abff", "hex encode is lower case and NUL-terminated");
	ok(hex[sizeof(hex) - 1] == 'X', "hex encode writes no more than 2*len+1 bytes");
	weft_hex_encode(hex, bytes, 0);
	is_str(hex, "", "hex encode of nothing is the empty string");

	uint8_t out[sizeof(bytes) + 1];
	memset(out, 0xee, sizeof(out));
	is_int(weft_hex_decode(out, sizeof(bytes), "00017f80abff", 12), 0, "hex decode");
	is_mem(out, bytes, sizeof(bytes), "hex decode gives the bytes back");
	is_int(out[sizeof(bytes)], 0xee, "hex decode writes no more than len bytes");
	is_int(weft_hex_decode(out, sizeof(bytes), "00017F80ABFF", 12), 0, "hex decode accepts upper case");
	is_mem(out, bytes, sizeof(bytes), "upper case decodes to the same bytes");
	is_int(weft_hex_decode(out, 0, "", 0), 0, "hex decode of nothing");

	static const struct {
		const char *hex;
		size_t len;
		const char *what;
	} bad[] = {
		{"00017f80abf", 6, "odd number of digits"},
		{"00017f80ab", 6, "too short"},
		{"00017f80abff00", 6, "too long"},
		{"00017f80abfg", 6, "bad digit 'g'"},
		{"0x017f80abff", 6, "bad digit 'x'"},
		{"00017f80ab f", 6, "space"},
		{"00017f80ab-f", 6, "minus sign"},
		{"00017f80ab:f", 6, "':' (just after '9')"},
		{"00017f80ab@f", 6, "'@' (just before 'A')"},
		{"00017f80ab`f", 6, "'`' (just before 'a')"},
		{"00017f80abGf", 6, "'G' (just after 'F')"},
		{"0", 0, "one digit for no bytes"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		is_int(weft_hex_decode(out, bad[i].len, bad[i].hex, strlen(bad[i].hex)), WEFT_EDECODE,
		       "hex decode: %s is WEFT_EDECODE", bad[i].what);
	/* A NUL inside the counted digits is a bad digit, not an early end. */
	is_int(weft_hex_decode(out, 2, "ab\0d", 4), WEFT_EDECODE, "hex decode: embedded NUL is WEFT_EDECODE");

	/* Round trip of every byte value. */
	uint8_t all[256], back[256];
	char allhex[513];
	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	weft_hex_encode(allhex, all, sizeof(all));
	ok(weft_hex_decode(back, sizeof(back), allhex, strlen(allhex)) == 0 && memcmp(back, all, 256) == 0,
	   "every byte value survives encode/decode");
}

int main(void)
{
	is_int(weft_crypto_init(), 0, "weft_crypto_init");
	is_int(weft_crypto_init(), 0, "weft_crypto_init twice is fine");
	tmp = tu_tmpdir("crypto");
	test_hash();
	test_identity_vector();
	test_sign_verify();
	test_key_file();
	test_hex();
	tu_rmtree(tmp);
	free(tmp);
	return done_testing();
}
