/* erasure.c - unit tests of the Reed-Solomon code (weft/erasure.h): the
 * matrix and the parity checked against GF(2^8) arithmetic written out here
 * (the bytes are a wire and disk format), round trips for codes from
 * (1, 1) to (255, 85), decoding from every k-subset and rebuilding every
 * share for n <= 8, odd and tiny lengths, decoding in place, and bad
 * arguments refused with nothing written. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/erasure.h"
#include "weft/err.h"

/* ---- reference arithmetic, independent of ISA-L ---- */

static uint8_t ref_mul(uint8_t a, uint8_t b)
{
	uint8_t p = 0;
	while (b) {
		if (b & 1)
			p ^= a;
		b >>= 1;
		a = (uint8_t)((a << 1) ^ (a & 0x80 ? 0x1d : 0)); /* x^8 = x^4 + x^3 + x^2 + 1 */
	}
	return p;
}

/* Inverses by search, filled once by main. */
static uint8_t inv_table[256];

static void ref_inv_init(void)
{
	for (unsigned a = 1; a < 256; a++)
		for (unsigned b = 1; b < 256; b++)
			if (ref_mul((uint8_t)a, (uint8_t)b) == 1)
				inv_table[a] = (uint8_t)b;
}

static uint8_t ref_inv(uint8_t a)
{
	return inv_table[a];
}

/* The code's generator entry (i, j): identity on top, 1 / (i ^ j) below. */
static uint8_t ref_coef(uint32_t i, uint32_t j, uint32_t k)
{
	return i < k ? (uint8_t)(i == j) : ref_inv((uint8_t)(i ^ j));
}

/* ---- helpers ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

/* A codeword: n shares of len bytes, random data, parity by weft_rs_encode. */
struct word {
	uint32_t n, k;
	size_t len;
	uint8_t *buf;
	uint8_t *share[WEFT_RS_MAX_N];
};

static void word_make(struct word *w, const struct weft_rs *rs, size_t len)
{
	w->n = rs->n, w->k = rs->k, w->len = len;
	w->buf = calloc(rs->n, len ? len : 1);
	for (uint32_t j = 0; j < rs->n; j++)
		w->share[j] = w->buf + (size_t)j * len;
	for (size_t b = 0; b < (size_t)rs->k * len; b++)
		w->buf[b] = (uint8_t)rnd();
	weft_rs_encode(rs, w->share, len);
}

/* Parity as the reference computes it equals the encoded one. */
static bool word_matches_ref(const struct word *w)
{
	for (uint32_t i = w->k; i < w->n; i++)
		for (size_t b = 0; b < w->len; b++) {
			uint8_t acc = 0;
			for (uint32_t j = 0; j < w->k; j++)
				acc ^= ref_mul(ref_coef(i, j, w->k), w->share[j][b]);
			if (acc != w->share[i][b])
				return false;
		}
	return true;
}

/* Decodes w from shares idx[0..k) into fresh buffers and compares with the
 * data; then rebuilds every share from the same ones.  0 when all agree. */
static int check_subset(const struct weft_rs *rs, const struct word *w, const uint32_t *idx, bool rebuild_all)
{
	const uint8_t *frags[WEFT_RS_MAX_N];
	uint8_t *out[WEFT_RS_MAX_N];
	uint8_t *buf = malloc((size_t)w->k * w->len + 1), *one = malloc(w->len + 1);
	int bad = 0;
	for (uint32_t r = 0; r < w->k; r++)
		frags[r] = w->share[idx[r]], out[r] = buf + (size_t)r * w->len;
	if (weft_rs_decode(rs, idx, frags, w->len, out) != 0 || memcmp(buf, w->buf, (size_t)w->k * w->len) != 0)
		bad = 1;
	for (uint32_t j = 0; rebuild_all && !bad && j < w->n; j++)
		if (weft_rs_rebuild(rs, idx, frags, w->len, j, one) != 0 || memcmp(one, w->share[j], w->len) != 0)
			bad = 1;
	free(buf);
	free(one);
	return bad;
}

/* k distinct indices < n, uniformly, in random order. */
static void random_subset(uint32_t n, uint32_t k, uint32_t *idx)
{
	uint32_t all[WEFT_RS_MAX_N];
	for (uint32_t j = 0; j < n; j++)
		all[j] = j;
	for (uint32_t r = 0; r < k; r++) {
		uint32_t p = r + rnd() % (n - r), t = all[r];
		all[r] = all[p], all[p] = t;
		idx[r] = all[r];
	}
}

/* ---- tests ---- */

static void test_init(void)
{
	struct weft_rs rs;
	static const uint32_t bad[][2] = {{0, 0}, {1, 0}, {3, 4}, {256, 85}, {256, 256}};
	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		memset(&rs, 0xa5, sizeof(rs));
		int rc = weft_rs_init(&rs, bad[t][0], bad[t][1]);
		ok(rc == WEFT_EINVAL && rs.matrix == NULL && rs.tables == NULL && rs.n == 0,
		   "init n=%u k=%u refused, rs zeroed", bad[t][0], bad[t][1]);
		weft_rs_free(&rs);
	}
	struct weft_rs z = {0};
	weft_rs_free(&z);
	ok(weft_rs_init(&rs, 5, 5) == 0 && rs.tables == NULL, "n == k: no parity tables");
	weft_rs_free(&rs);
	weft_rs_free(&rs);
	ok(rs.matrix == NULL, "free zeroes, and twice is fine");
}

static void test_matrix(void)
{
	static const uint32_t codes[][2] = {{1, 1}, {4, 2}, {7, 3}, {255, 85}, {255, 1}, {255, 254}};
	for (size_t t = 0; t < sizeof(codes) / sizeof(codes[0]); t++) {
		uint32_t n = codes[t][0], k = codes[t][1];
		struct weft_rs rs;
		weft_rs_init(&rs, n, k);
		bool same = true;
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t j = 0; j < k; j++)
				same = same && rs.matrix[(size_t)i * k + j] == ref_coef(i, j, k);
		ok(same, "(%u, %u): identity on top, 1 / (i ^ j) below", n, k);
		weft_rs_free(&rs);
	}
}

/* Parity against the reference for many lengths: ISA-L takes vector paths
 * for long buffers and a byte loop for the tail. */
static void test_encode_ref(void)
{
	static const uint32_t codes[][2] = {{2, 1}, {4, 2}, {7, 3}, {10, 4}, {16, 11}, {255, 85}};
	static const size_t lens[] = {1, 2, 3, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1001};
	for (size_t t = 0; t < sizeof(codes) / sizeof(codes[0]); t++) {
		struct weft_rs rs;
		weft_rs_init(&rs, codes[t][0], codes[t][1]);
		bool good = true;
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			if (rs.n == 255 && lens[l] > 64)
				continue; /* the reference is slow; the vector path is covered above */
			struct word w;
			word_make(&w, &rs, lens[l]);
			if (!word_matches_ref(&w)) {
				diag("(%u, %u) len %zu: parity differs from the reference", rs.n, rs.k, lens[l]);
				good = false;
			}
			free(w.buf);
		}
		ok(good, "(%u, %u): parity equals the GF(2^8) reference, lengths 1 .. 1001", rs.n, rs.k);
		weft_rs_free(&rs);
	}
}

/* Round trips: the systematic shares, the last k (all parity when n >= 2k)
 * and random subsets in random order, for several lengths. */
static void test_round_trips(void)
{
	static const uint32_t codes[][2] = {{1, 1}, {2, 1}, {3, 3}, {4, 2}, {7, 3}, {7, 7}, {10, 4},
					     {31, 11}, {255, 1}, {255, 85}, {255, 255}};
	static const size_t lens[] = {1, 5, 64, 333};
	for (size_t t = 0; t < sizeof(codes) / sizeof(codes[0]); t++) {
		uint32_t n = codes[t][0], k = codes[t][1];
		struct weft_rs rs;
		weft_rs_init(&rs, n, k);
		int bad = 0;
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			struct word w;
			uint32_t idx[WEFT_RS_MAX_N];
			word_make(&w, &rs, lens[l]);
			for (uint32_t r = 0; r < k; r++)
				idx[r] = r;
			bad += check_subset(&rs, &w, idx, n <= 31);
			for (uint32_t r = 0; r < k; r++)
				idx[r] = n - k + r;
			bad += check_subset(&rs, &w, idx, n <= 31);
			for (int s = 0; s < 5; s++) {
				random_subset(n, k, idx);
				bad += check_subset(&rs, &w, idx, n <= 31);
			}
			free(w.buf);
		}
		ok(bad == 0, "(%u, %u): decode (and rebuild of every share for n <= 31) round trips", n, k);
		weft_rs_free(&rs);
	}
}

/* Every k-subset of every code with n <= 8: decode, and rebuild each share. */
static void test_all_subsets(void)
{
	int codes = 0, subsets = 0, bad = 0;
	for (uint32_t n = 1; n <= 8; n++)
		for (uint32_t k = 1; k <= n; k++) {
			struct weft_rs rs;
			struct word w;
			weft_rs_init(&rs, n, k);
			word_make(&w, &rs, 3 + n);
			codes++;
			for (uint32_t mask = 0; mask < 1u << n; mask++) {
				if ((uint32_t)__builtin_popcount(mask) != k)
					continue;
				uint32_t idx[8], got = 0;
				for (uint32_t j = 0; j < n; j++)
					if (mask >> j & 1)
						idx[got++] = j;
				subsets++;
				if (check_subset(&rs, &w, idx, true)) {
					diag("(%u, %u) subset mask %#x fails", n, k, mask);
					bad++;
				}
			}
			free(w.buf);
			weft_rs_free(&rs);
		}
	ok(bad == 0, "every k-subset of %d codes (n <= 8, %d subsets): decode and rebuild of every share", codes,
	   subsets);
}

/* (255, 85): each single share rebuilt from a random 85 equals the encoded one. */
static void test_rebuild_big(void)
{
	struct weft_rs rs;
	struct word w;
	uint32_t idx[WEFT_RS_MAX_N];
	const uint8_t *frags[WEFT_RS_MAX_N];
	uint8_t out[40];
	int bad = 0;
	weft_rs_init(&rs, 255, 85);
	word_make(&w, &rs, sizeof(out));
	for (uint32_t j = 0; j < rs.n; j++) {
		random_subset(rs.n, rs.k, idx);
		for (uint32_t r = 0; r < rs.k; r++)
			frags[r] = w.share[idx[r]];
		if (weft_rs_rebuild(&rs, idx, frags, w.len, j, out) != 0 || memcmp(out, w.share[j], w.len) != 0)
			bad++;
	}
	ok(bad == 0, "(255, 85): every share rebuilt from a random 85 of the others");
	free(w.buf);
	weft_rs_free(&rs);
}

/* Decoding in place: data[j] is the buffer of share j when that is present. */
static void test_in_place(void)
{
	struct weft_rs rs;
	struct word w;
	weft_rs_init(&rs, 7, 3);
	word_make(&w, &rs, 21);
	uint8_t *want = malloc(3 * w.len);
	memcpy(want, w.buf, 3 * w.len);
	/* share 1 was lost; shares 0 and 2 stay where they are, 5 is parity */
	uint8_t *lost = w.share[1];
	memset(lost, 0xee, w.len);
	uint32_t idx[3] = {2, 5, 0};
	const uint8_t *frags[3] = {w.share[2], w.share[5], w.share[0]};
	int rc = weft_rs_decode(&rs, idx, frags, w.len, w.share);
	ok(rc == 0 && memcmp(w.buf, want, 3 * w.len) == 0, "decode in place into the shares' own buffers");
	memset(lost, 0xee, w.len);
	rc = weft_rs_rebuild(&rs, idx, frags, w.len, 2, w.share[2]);
	ok(rc == 0 && memcmp(w.share[2], want + 2 * w.len, w.len) == 0, "rebuild of a present share into itself");
	free(want);
	free(w.buf);
	weft_rs_free(&rs);
}

static void test_bad_indices(void)
{
	struct weft_rs rs;
	struct word w;
	uint8_t out0[9], out1[9], out2[9], one[9];
	uint8_t *out[3] = {out0, out1, out2};
	weft_rs_init(&rs, 7, 3);
	word_make(&w, &rs, sizeof(one));
	static const uint32_t bad[][3] = {{0, 0, 1}, {4, 5, 4}, {1, 2, 7}, {7, 8, 9}, {0, 1, UINT32_MAX}};
	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		const uint8_t *frags[3];
		for (uint32_t r = 0; r < 3; r++)
			frags[r] = w.share[bad[t][r] % 7];
		memset(out0, 0x77, 9), memset(out1, 0x77, 9), memset(out2, 0x77, 9), memset(one, 0x77, 9);
		int rc = weft_rs_decode(&rs, bad[t], frags, w.len, out);
		int rc2 = weft_rs_rebuild(&rs, bad[t], frags, w.len, 6, one);
		bool untouched = true;
		for (int b = 0; b < 9; b++)
			untouched = untouched && out0[b] == 0x77 && out1[b] == 0x77 && out2[b] == 0x77 && one[b] == 0x77;
		ok(rc == WEFT_EINVAL && rc2 == WEFT_EINVAL && untouched, "idx {%u, %u, %u} refused, nothing written",
		   bad[t][0], bad[t][1], bad[t][2]);
	}
	uint32_t idx[3] = {0, 3, 6};
	const uint8_t *frags[3] = {w.share[0], w.share[3], w.share[6]};
	is_int(weft_rs_rebuild(&rs, idx, frags, w.len, 7, one), WEFT_EINVAL, "rebuild of share n refused");
	is_int(weft_rs_decode(&rs, idx, frags, 0, out), 0, "length 0 decodes to nothing");
	uint8_t before[7 * 9];
	memcpy(before, w.buf, sizeof(before));
	weft_rs_encode(&rs, w.share, 0);
	is_mem(w.buf, before, sizeof(before), "length 0 encodes to nothing");
	free(w.buf);
	weft_rs_free(&rs);
}

int main(void)
{
	ref_inv_init();
	test_init();
	test_matrix();
	test_encode_ref();
	test_round_trips();
	test_all_subsets();
	test_rebuild_big();
	test_in_place();
	test_bad_indices();
	return done_testing();
}
