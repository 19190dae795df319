/* util.c - unit tests for the shared helpers of src/lib: weft/util.h
 * (weft_parse_u64 and weft_parse_u64n on every edge: empty, sign, spaces,
 * leading zeros, 2^64 - 1 and 2^64; the x-allocators, and the abort on an
 * overflowing size; weft_write_file_atomic: content, exact mode whatever the
 * umask, no temporary file left, overwrite, relative paths, failures that
 * leave the target alone), weft/rng.h (known answers for fixed seeds,
 * computed independently of this code from the published xoshiro256** and
 * splitmix64 algorithms) and weft/bytes.h (byte layout of each codec). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/rng.h"
#include "weft/util.h"

static char *tmp;

/* The whole file at path into buf (at most cap bytes); its length, or -1. */
static long read_bytes(const char *path, void *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap);
	close(fd);
	return n;
}

static unsigned file_mode(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0xffffffffu;
}

/* s with control and non-ASCII bytes as \xNN, for test names (static buffer). */
static const char *printable(const char *s)
{
	static char out[256];
	size_t o = 0;
	for (; *s && o + 5 < sizeof(out); s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

/* ---- weft_parse_u64 ---- */

static void test_parse_u64(void)
{
	static const struct {
		const char *s;
		uint64_t want;
	} good[] = {
		{"0", 0},
		{"7", 7},
		{"10", 10},
		{"4294967296", UINT64_C(4294967296)},
		{"1844674407370955161", UINT64_C(1844674407370955161)},   /* 19 digits */
		{"18446744073709551614", UINT64_MAX - 1},
		{"18446744073709551615", UINT64_MAX},                     /* 2^64 - 1 */
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 12345;
		int rc = weft_parse_u64(good[i].s, &v);
		ok(rc == 0 && v == good[i].want, "parse_u64('%s') = %llu (rc %d, got %llu)", good[i].s,
		   (unsigned long long)good[i].want, rc, (unsigned long long)v);
	}

	static const char *const bad[] = {
		"",                      /* empty */
		"-1", "+1", "-0",        /* signs */
		" 1", "1 ", "\t1", "1\n", "1 2", /* spaces */
		"00", "01", "007",       /* leading zeros */
		"0x10", "1e3", "1.0", "1_000", "a", "1a", "１", /* not decimal digits (the last is U+FF11) */
		"18446744073709551616",  /* 2^64 */
		"18446744073709551620",
		"99999999999999999999",
		"184467440737095516150", /* 21 digits */
		"100000000000000000000000000000000000000",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 777;
		int rc = weft_parse_u64(bad[i], &v);
		ok(rc == WEFT_EINVAL && v == 777, "parse_u64('%s') is WEFT_EINVAL and leaves out alone (rc %d)",
		   printable(bad[i]), rc);
	}

	/* The counted form reads exactly len bytes. */
	uint64_t v = 777;
	ok(weft_parse_u64n("1234", 2, &v) == 0 && v == 12, "parse_u64n('1234', 2) = 12");
	ok(weft_parse_u64n("12..34", 2, &v) == 0 && v == 12, "parse_u64n stops at len, not at a non-digit");
	v = 777;
	ok(weft_parse_u64n("1\0" "2", 3, &v) == WEFT_EINVAL && v == 777, "parse_u64n: a NUL inside is not a digit");
	ok(weft_parse_u64n("5", 0, &v) == WEFT_EINVAL && v == 777, "parse_u64n: length 0 is empty");
	ok(weft_parse_u64n("184467440737095516159", 20, &v) == 0 && v == UINT64_MAX,
	   "parse_u64n: 2^64 - 1 as the prefix of a longer string");
}

/* ---- allocation ---- */

/* Runs fn in a child; true when the child died of SIGABRT after writing
 * "out of memory" to its stderr. */
static bool aborts_oom(void (*fn)(void))
{
	int fds[2];
	if (pipe(fds) < 0)
		abort();
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		signal(SIGABRT, SIG_DFL);
		fn();
		_exit(0);
	}
	close(fds[1]);
	char msg[256] = {0};
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(msg) - 1 && (n = read(fds[0], msg + got, sizeof(msg) - 1 - got)) > 0)
		got += (size_t)n;
	close(fds[0]);
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return false;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(msg, "out of memory") != NULL;
}

static void realloc_overflow(void)
{
	(void)weft_xrealloc(NULL, SIZE_MAX / 2 + 1, 2);
}

static void test_alloc(void)
{
	unsigned char *p = weft_xmalloc(0);
	ok(p != NULL, "xmalloc(0) is not NULL");
	free(p);

	uint32_t *z = weft_xcalloc(1000, sizeof(*z));
	bool zero = true;
	for (int i = 0; i < 1000; i++)
		zero = zero && z[i] == 0;
	ok(zero, "xcalloc zeroes");
	free(z);
	p = weft_xcalloc(0, 0);
	ok(p != NULL, "xcalloc(0, 0) is not NULL");
	free(p);

	uint64_t *a = weft_xrealloc(NULL, 4, sizeof(*a));
	for (int i = 0; i < 4; i++)
		a[i] = (uint64_t)i * 3;
	a = weft_xrealloc(a, 100000, sizeof(*a));
	a[99999] = 5;
	ok(a[0] == 0 && a[3] == 9 && a[99999] == 5, "xrealloc from NULL, then grown, keeps the contents");
	a = weft_xrealloc(a, 0, sizeof(*a));
	ok(a != NULL, "xrealloc to 0 elements is not NULL");
	free(a);

	char *s = weft_xstrdup("weft\xc3\xa9");
	ok(s && strcmp(s, "weft\xc3\xa9") == 0, "xstrdup copies");
	free(s);
	s = weft_xstrdup("");
	ok(s && s[0] == '\0', "xstrdup of the empty string");
	free(s);

	ok(aborts_oom(realloc_overflow), "xrealloc with nmemb * size overflowing: 'out of memory' and SIGABRT");
}

/* ---- weft_write_file_atomic ---- */

static void test_write_atomic(void)
{
	char *path = tu_path(tmp, "data.bin");
	uint8_t data[300], back[400];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);

	/* The mode is exact whatever the umask. */
	mode_t old = umask(0077);
	is_int(weft_write_file_atomic(path, data, sizeof(data), 0644), 0, "write 300 bytes (NULs included)");
	umask(old);
	ok(read_bytes(path, back, sizeof(back)) == (long)sizeof(data) && memcmp(back, data, sizeof(data)) == 0,
	   "the file holds exactly the bytes written");
	is_int(file_mode(path), 0644, "mode 0644 despite umask 077");
	is_int(tu_dir_count(tmp, "data.bin.tmp"), 0, "no temporary file left");

	/* Overwrite: new content, new mode, same path. */
	old = umask(0);
	is_int(weft_write_file_atomic(path, "secret\n", 7, 0600), 0, "overwrite with mode 0600");
	umask(old);
	ok(read_bytes(path, back, sizeof(back)) == 7 && memcmp(back, "secret\n", 7) == 0, "overwritten content");
	is_int(file_mode(path), 0600, "mode 0600 despite umask 0");
	is_int(tu_dir_count(tmp, "data.bin"), 1, "one file, no temporary left after the overwrite");

	/* Empty content. */
	is_int(weft_write_file_atomic(path, "", 0, 0640), 0, "write 0 bytes");
	ok(read_bytes(path, back, sizeof(back)) == 0 && file_mode(path) == 0640, "an empty file with mode 0640");

	/* A relative path (no slash: the directory synced is "."). */
	char cwd[4096];
	if (getcwd(cwd, sizeof(cwd)) == NULL || chdir(tmp) != 0)
		abort();
	is_int(weft_write_file_atomic("rel.txt", "r\n", 2, 0644), 0, "write to a relative path");
	if (chdir(cwd) != 0)
		abort();
	char *rel = tu_path(tmp, "rel.txt");
	ok(read_bytes(rel, back, sizeof(back)) == 2 && memcmp(back, "r\n", 2) == 0, "relative path written");
	free(rel);

	/* Failures leave the target alone and no temporary file. */
	char *missing = tu_path(tmp, "no-such-dir/x");
	is_int(weft_write_file_atomic(missing, "x", 1, 0644), WEFT_ENOENT, "missing directory: WEFT_ENOENT");
	free(missing);
	char *dir = tu_path(tmp, "a-dir");
	if (mkdir(dir, 0755) != 0)
		abort();
	int rc = weft_write_file_atomic(dir, "x", 1, 0644);
	ok(rc < 0, "a directory as the target fails (%s)", weft_strerror(rc));
	struct stat st;
	ok(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "and the directory is still there");
	is_int(tu_dir_count(tmp, "a-dir.tmp"), 0, "and its temporary file is removed");
	free(dir);
	free(path);
}

/* ---- weft/rng.h ---- */

static void test_rng(void)
{
	/* Expected values: the reference algorithms run independently (in
	 * Python) on the same seeds. */
	static const uint64_t seed0[5] = {
		UINT64_C(0x99ec5f36cb75f2b4), UINT64_C(0xbf6e1f784956452a), UINT64_C(0x1a5f849d4933e6e0),
		UINT64_C(0x6aa594f1262d2d2c), UINT64_C(0xbba5ad4a1f842e59),
	};
	static const uint64_t seed42[5] = {
		UINT64_C(0x15780b2e0c2ec716), UINT64_C(0x6104d9866d113a7e), UINT64_C(0xae17533239e499a1),
		UINT64_C(0xecb8ad4703b360a1), UINT64_C(0xfde6dc7fe2ec5e64),
	};
	struct weft_rng r;

	weft_rng_seed(&r, 0);
	ok(r.s[0] == UINT64_C(0xe220a8397b1dcdaf) && r.s[1] == UINT64_C(0x6e789e6aa1b965f4) &&
		   r.s[2] == UINT64_C(0x06c45d188009454f) && r.s[3] == UINT64_C(0xf88bb8a8724c81ec),
	   "seed 0: the state is splitmix64's first four outputs");
	bool same = true;
	for (int i = 0; i < 5; i++)
		same = same && weft_rng_next(&r) == seed0[i];
	ok(same, "seed 0: the first five xoshiro256** outputs");
	weft_rng_seed(&r, 42);
	same = true;
	for (int i = 0; i < 5; i++)
		same = same && weft_rng_next(&r) == seed42[i];
	ok(same, "seed 42: the first five outputs");

	static const uint64_t below10[10] = {0, 3, 6, 9, 9, 7, 7, 8, 7, 5};
	weft_rng_seed(&r, 42);
	same = true;
	for (int i = 0; i < 10; i++)
		same = same && weft_rng_below(&r, 10) == below10[i];
	ok(same, "seed 42: below(10) x 10 = 0 3 6 9 9 7 7 8 7 5 (multiply-shift)");
	weft_rng_seed(&r, 42);
	uint64_t b1 = weft_rng_below(&r, (UINT64_C(1) << 63) + 1), b2 = weft_rng_below(&r, (UINT64_C(1) << 63) + 1);
	ok(b1 == UINT64_C(9147776489032658738) && b2 == UINT64_C(7099593415032875292),
	   "seed 42: below(2^63 + 1) rejects and redraws as the reference does");
	weft_rng_seed(&r, 42);
	double u1 = weft_rng_unit(&r), u2 = weft_rng_unit(&r);
	ok(u1 == (double)(UINT64_C(0x15780b2e0c2ec716) >> 11) * 0x1.0p-53 &&
		   u2 == (double)(UINT64_C(0x6104d9866d113a7e) >> 11) * 0x1.0p-53,
	   "unit: the top 53 bits of each output over 2^53 (%.17g %.17g)", u1, u2);

	uint8_t buf[13];
	static const uint8_t want[13] = {0x16, 0xc7, 0x2e, 0x0c, 0x2e, 0x0b, 0x78, 0x15, 0x7e, 0x3a, 0x11, 0x6d, 0x86};
	weft_rng_seed(&r, 42);
	weft_rng_bytes(&r, buf, sizeof(buf));
	uint64_t one = 1;
	if (*(uint8_t *)&one == 1)
		is_mem(buf, want, sizeof(buf), "bytes: outputs in host (little-endian) order, a partial last word");
	else
		skip(1, "big-endian host: weft_rng_bytes writes host order");

	/* normal: a sanity check of the distribution over many draws. */
	weft_rng_seed(&r, 7);
	double sum = 0, sq = 0;
	for (int i = 0; i < 100000; i++) {
		double x = weft_rng_normal(&r);
		sum += x;
		sq += x * x;
	}
	double mean = sum / 100000, var = sq / 100000 - mean * mean;
	ok(mean > -0.02 && mean < 0.02 && var > 0.97 && var < 1.03, "normal: mean %.4f, variance %.4f", mean, var);
}

/* ---- weft/bytes.h ---- */

static void test_bytes(void)
{
	uint8_t b[9] = {0};

	weft_be16_put(b + 1, 0x0102);
	ok(b[1] == 0x01 && b[2] == 0x02 && weft_be16_get(b + 1) == 0x0102, "be16 at an odd address");
	weft_be32_put(b + 1, UINT32_C(0x01020304));
	ok(memcmp(b + 1, "\x01\x02\x03\x04", 4) == 0 && weft_be32_get(b + 1) == UINT32_C(0x01020304), "be32");
	weft_be64_put(b + 1, UINT64_C(0x0102030405060708));
	ok(memcmp(b + 1, "\x01\x02\x03\x04\x05\x06\x07\x08", 8) == 0 &&
		   weft_be64_get(b + 1) == UINT64_C(0x0102030405060708),
	   "be64");
	weft_le64_put(b + 1, UINT64_C(0x0102030405060708));
	ok(memcmp(b + 1, "\x08\x07\x06\x05\x04\x03\x02\x01", 8) == 0 &&
		   weft_le64_get(b + 1) == UINT64_C(0x0102030405060708),
	   "le64");
	weft_be64_put(b, UINT64_MAX);
	ok(weft_be64_get(b) == UINT64_MAX && weft_be32_get(b) == UINT32_MAX && weft_be16_get(b) == 0xffff,
	   "all ones round trip");
}

/* weft_json_escape: what a trace line's msg holds, and the cut. */
static void test_json_escape(void)
{
	char out[64];
	weft_json_escape(out, sizeof(out), "round=2 err=\"bad\" path=a\\b\n\x01");
	is_str(out, "round=2 err=\\\"bad\\\" path=a\\\\b\\u000a\\u0001", "quotes, backslashes, controls escaped");
	weft_json_escape(out, 8, "abcdefghij");
	is_str(out, "abcdefg", "cut to the buffer, NUL-terminated");
	weft_json_escape(out, 4, "ab\"c");
	is_str(out, "ab", "an escape that does not fit is left out whole");
	weft_json_escape(out, 1, "x");
	is_str(out, "", "a one-byte buffer holds the empty string");
}

int main(void)
{
	tmp = tu_tmpdir("util");
	test_json_escape();
	test_parse_u64();
	test_alloc();
	test_write_atomic();
	test_rng();
	test_bytes();
	tu_rmtree(tmp);
	free(tmp);
	return done_testing();
}
