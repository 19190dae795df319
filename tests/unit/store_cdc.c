/* tests/unit/store_cdc.c - TAP tests for content-defined chunking
 * (storage/cdc.c, weft/store_cdc.h): parameter defaults and validation,
 * identical cut points whatever the sizes of the buffers fed (1 byte to
 * 3 MiB, fixed and random), min and max respected, the mean chunk size
 * near avg on random data, dedup resilience when bytes are inserted at the
 * front or in the middle of 32 MiB, different owner keys cutting at
 * different places, and the degenerate streams (empty, shorter than min,
 * constant bytes).  Data comes from libsodium's deterministic generator,
 * so every run sees the same bytes. */
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/store_cdc.h"

#define MiB ((size_t)1 << 20)
#define KiB ((size_t)1 << 10)

static uint8_t key_a[WEFT_CDC_KEY_LEN], key_b[WEFT_CDC_KEY_LEN];

/* A list of chunk lengths. */
struct cuts {
	size_t n;
	uint64_t *len;
};

static void cuts_free(struct cuts *k)
{
	free(k->len);
	k->len = NULL;
	k->n = 0;
}

static void random_bytes(uint8_t *p, size_t len, uint8_t tag)
{
	uint8_t seed[randombytes_SEEDBYTES] = { tag };
	randombytes_buf_deterministic(p, len, seed);
}

/* Chunks p[0..len) with c, fed in buffers of step bytes (step 0: random
 * sizes from 1 byte to 3 MiB, from the generator seeded with len). */
static struct cuts chunk(const struct weft_cdc *c, const uint8_t *p, size_t len, size_t step)
{
	struct weft_cdc_params pr;
	weft_cdc_params(c, &pr);
	struct cuts k = { 0, calloc(len / pr.min + 2, sizeof(uint64_t)) };
	struct weft_cdc_state s = { 0 };
	uint64_t since = 0;
	uint32_t rnd = (uint32_t)len | 1;
	size_t off = 0;

	if (k.len == NULL)
		abort();
	while (off < len) {
		size_t want = step;
		if (want == 0) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 17;
			rnd ^= rnd << 5;
			/* Mostly small reads, sometimes large ones. */
			want = 1 + (rnd % 8 == 0 ? rnd % (3 * MiB) : rnd % 5000);
		}
		if (want > len - off)
			want = len - off;
		const uint8_t *q = p + off;
		size_t left = want;
		while (left > 0) {
			bool cut;
			size_t n = weft_cdc_update(c, &s, q, left, &cut);
			since += n;
			q += n;
			left -= n;
			if (cut) {
				k.len[k.n++] = since;
				since = 0;
			} else if (left != 0) {
				abort(); /* without a cut the whole buffer is taken */
			}
		}
		off += want;
	}
	uint64_t last = weft_cdc_finish(&s);
	if (last != since)
		abort();
	if (last)
		k.len[k.n++] = last;
	return k;
}

static bool cuts_equal(const struct cuts *a, const struct cuts *b)
{
	return a->n == b->n && memcmp(a->len, b->len, a->n * sizeof(uint64_t)) == 0;
}

static uint64_t cuts_sum(const struct cuts *k)
{
	uint64_t t = 0;
	for (size_t i = 0; i < k->n; i++)
		t += k->len[i];
	return t;
}

static struct weft_cdc *make(const uint8_t *key, uint32_t min, uint32_t avg, uint32_t max)
{
	struct weft_cdc_params p = { min, avg, max };
	struct weft_cdc *c;
	if (weft_cdc_new(&c, key, &p) != 0)
		abort();
	return c;
}

static int cmp_hash(const void *a, const void *b)
{
	return memcmp(a, b, WEFT_HASH_LEN);
}

/* The digests of p's chunks, sorted. */
static uint8_t (*chunk_hashes(const uint8_t *p, const struct cuts *k))[WEFT_HASH_LEN]
{
	uint8_t (*h)[WEFT_HASH_LEN] = calloc(k->n + 1, WEFT_HASH_LEN);
	uint64_t off = 0;
	if (h == NULL)
		abort();
	for (size_t i = 0; i < k->n; i++) {
		weft_hash(h[i], p + off, k->len[i]);
		off += k->len[i];
	}
	qsort(h, k->n, WEFT_HASH_LEN, cmp_hash);
	return h;
}

/* How many chunks of b also are chunks of a (same bytes). */
static size_t shared_chunks(const uint8_t *pa, const struct cuts *a, const uint8_t *pb, const struct cuts *b)
{
	uint8_t (*ha)[WEFT_HASH_LEN] = chunk_hashes(pa, a);
	uint8_t (*hb)[WEFT_HASH_LEN] = chunk_hashes(pb, b);
	size_t shared = 0;
	for (size_t i = 0; i < b->n; i++)
		shared += bsearch(hb[i], ha, a->n, WEFT_HASH_LEN, cmp_hash) != NULL;
	free(ha);
	free(hb);
	return shared;
}

/* Chunk end offsets of k in a sorted array. */
static uint64_t *ends(const struct cuts *k)
{
	uint64_t *e = calloc(k->n + 1, sizeof(uint64_t)), off = 0;
	if (e == NULL)
		abort();
	for (size_t i = 0; i < k->n; i++)
		e[i] = off += k->len[i];
	return e;
}

static void test_params(void)
{
	struct weft_cdc_params p = { 0, 0, 0 };
	struct weft_cdc *c = (struct weft_cdc *)1;

	ok(weft_cdc_params_check(&p) == 0 && p.avg == MiB && p.min == 256 * KiB && p.max == 8 * MiB,
	   "defaults: avg 1 MiB, min avg / 4, max avg * 8");
	p = (struct weft_cdc_params){ 0, 64 * KiB, 0 };
	ok(weft_cdc_params_check(&p) == 0 && p.min == 16 * KiB && p.max == 512 * KiB,
	   "min and max default from the given avg");
	p = (struct weft_cdc_params){ 64, 128, 129 };
	ok(weft_cdc_params_check(&p) == 0, "the smallest valid sizes: 64 < 128 < 129");
	p = (struct weft_cdc_params){ 1000, 32 * MiB, 64 * MiB };
	ok(weft_cdc_params_check(&p) == 0, "avg 32 MiB with max 64 MiB is valid");

	static const struct {
		uint32_t min, avg, max;
		const char *why;
	} bad[] = {
		{ 0, 3000, 0, "avg not a power of two" },
		{ 1000, 1000, 0, "avg 1000 (not a power of two) with min 1000" },
		{ 63, 128, 256, "min below 64" },
		{ 4096, 4096, 8192, "min == avg" },
		{ 8192, 4096, 16384, "min > avg" },
		{ 1024, 4096, 4096, "max == avg" },
		{ 1024, 4096, 2048, "max < avg" },
		{ 1024, 4096, 64 * MiB + 1, "max above 64 MiB" },
		{ 0, 16 * MiB, 0, "avg 16 MiB: the default max (128 MiB) is too big" },
		{ 0, (uint32_t)1 << 31, 0, "avg 2 GiB" },
		{ 64, 64, 0, "avg 64 with min 64" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = (struct weft_cdc_params){ bad[i].min, bad[i].avg, bad[i].max };
		int rc = weft_cdc_params_check(&p);
		p = (struct weft_cdc_params){ bad[i].min, bad[i].avg, bad[i].max };
		c = (struct weft_cdc *)1;
		int rc2 = weft_cdc_new(&c, key_a, &p);
		ok(rc == WEFT_EINVAL && rc2 == WEFT_EINVAL && c == NULL, "rejected: %s", bad[i].why);
	}

	is_int(weft_cdc_new(&c, key_a, NULL), 0, "weft_cdc_new with NULL params");
	weft_cdc_params(c, &p);
	ok(p.min == 256 * KiB && p.avg == MiB && p.max == 8 * MiB, "NULL params resolve to the defaults");
	weft_cdc_free(c);
	weft_cdc_free(NULL);
	ok(1, "weft_cdc_free accepts NULL");
}

static void test_feeding(const uint8_t *data, size_t len)
{
	struct weft_cdc *c = make(key_a, 16 * KiB, 64 * KiB, 512 * KiB);
	struct cuts ref = chunk(c, data, len, len);
	ok(ref.n > 100 && cuts_sum(&ref) == len, "64 KiB avg, 16 MiB in one buffer: %zu chunks covering every byte",
	   ref.n);
	static const size_t steps[] = { 1, 7, 63, 64, 65, 4095, 4096, 65537, MiB, 3 * MiB, 0 };
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct cuts k = chunk(c, data, len, steps[i]);
		if (steps[i])
			ok(cuts_equal(&ref, &k), "fed in %zu-byte buffers: the same cut points", steps[i]);
		else
			ok(cuts_equal(&ref, &k), "fed in random-sized buffers (1 B .. 3 MiB): the same cut points");
		cuts_free(&k);
	}
	struct weft_cdc *again = make(key_a, 16 * KiB, 64 * KiB, 512 * KiB);
	struct cuts k = chunk(again, data, len, 12345);
	ok(cuts_equal(&ref, &k), "a second chunker from the same key cuts at the same places");
	cuts_free(&k);
	weft_cdc_free(again);

	/* With default parameters too, 1-byte reads against one buffer. */
	struct weft_cdc *d;
	weft_cdc_new(&d, key_a, NULL);
	struct cuts r1 = chunk(d, data, len, len), r2 = chunk(d, data, len, 1), r3 = chunk(d, data, len, 0);
	ok(cuts_equal(&r1, &r2) && cuts_equal(&r1, &r3) && r1.n >= 8,
	   "default parameters: one buffer, 1-byte and random reads agree (%zu chunks)", r1.n);
	cuts_free(&r1);
	cuts_free(&r2);
	cuts_free(&r3);
	weft_cdc_free(d);
	cuts_free(&ref);
	weft_cdc_free(c);
}

/* Sizes on random data: within [min, max] except the last, the mean
 * within 25% of avg, and both extremes reached for a narrow range. */
static void test_sizes(const uint8_t *data, size_t len)
{
	static const uint32_t avgs[] = { 4096, 64 * KiB, MiB };
	for (size_t a = 0; a < sizeof(avgs) / sizeof(avgs[0]); a++) {
		struct weft_cdc *c = make(key_a, 0, avgs[a], 0);
		struct weft_cdc_params p;
		weft_cdc_params(c, &p);
		struct cuts k = chunk(c, data, len, 0);
		bool bounded = true;
		for (size_t i = 0; i + 1 < k.n; i++)
			bounded &= k.len[i] >= p.min && k.len[i] <= p.max;
		bounded &= k.len[k.n - 1] <= p.max;
		ok(bounded, "avg %u: every chunk but the last within [%u, %u]", p.avg, p.min, p.max);
		double mean = (double)(len - k.len[k.n - 1]) / (double)(k.n - 1);
		ok(mean >= 0.75 * p.avg && mean <= 1.25 * p.avg, "avg %u: mean chunk size %.0f over %zu chunks, within 25%%",
		   p.avg, mean, k.n - 1);
		cuts_free(&k);
		weft_cdc_free(c);
	}

	/* min 64, avg 4096, max 8192: the large mask has 10 bits, so a chunk
	 * survives the 4096 bytes past avg with odds e^-4, and some reach max;
	 * the small mask has 14 bits, but over 4000 bytes some cut early. */
	struct weft_cdc *c = make(key_a, 64, 4096, 8192);
	struct cuts k = chunk(c, data, len, 0);
	size_t at_max = 0, near_min = 0, below = 0, above = 0;
	for (size_t i = 0; i + 1 < k.n; i++) {
		at_max += k.len[i] == 8192;
		near_min += k.len[i] < 256;
		below += k.len[i] < 64;
		above += k.len[i] > 8192;
	}
	ok(at_max > 0 && near_min > 0 && below == 0 && above == 0,
	   "min 64, max 8192: %zu chunks cut at max, %zu under 256 bytes, none outside [64, 8192]", at_max, near_min);
	cuts_free(&k);

	/* A chunk is never cut before min, even where the hash would allow it:
	 * no chunk of the min-64 chunker above ends at a length below 64, and
	 * with min 3000 none ends below 3000. */
	struct weft_cdc *m = make(key_a, 3000, 4096, 8192);
	k = chunk(m, data, len, 0);
	bool ge = true;
	for (size_t i = 0; i + 1 < k.n; i++)
		ge &= k.len[i] >= 3000 && k.len[i] <= 8192;
	ok(ge, "min 3000: no chunk but the last is shorter");
	cuts_free(&k);
	weft_cdc_free(m);
	weft_cdc_free(c);
}

static void test_degenerate(void)
{
	struct weft_cdc *c = make(key_a, 1024, 4096, 16384);
	struct weft_cdc_state s = { 0 };
	bool cut = true;

	is_int((long long)weft_cdc_update(c, &s, "", 0, &cut), 0, "an empty buffer: nothing taken");
	ok(!cut, "an empty buffer: no cut");
	is_int((long long)weft_cdc_finish(&s), 0, "an empty stream has no last chunk");

	uint8_t small[1000];
	random_bytes(small, sizeof(small), 9);
	size_t n = weft_cdc_update(c, &s, small, sizeof(small), &cut);
	ok(n == sizeof(small) && !cut, "1000 bytes with min 1024: no cut");
	is_int((long long)weft_cdc_finish(&s), 1000, "the stream is one short last chunk");
	ok(s.len == 0 && s.hash == 0, "finish resets the state");

	/* Constant bytes: the hash settles to one value, so every chunk has
	 * the same length (a cut at the first allowed place, or max). */
	size_t zlen = 1 << 20;
	uint8_t *zeros = calloc(zlen, 1);
	struct cuts k = chunk(c, zeros, zlen, 777);
	bool same = k.n >= 2;
	for (size_t i = 1; i + 1 < k.n; i++)
		same &= k.len[i] == k.len[0];
	ok(same && k.len[0] >= 1024 && k.len[0] <= 16384, "1 MiB of zeros: %zu chunks, all %llu bytes", k.n,
	   (unsigned long long)k.len[0]);
	cuts_free(&k);
	free(zeros);
	weft_cdc_free(c);
}

/* Inserting bytes: only the chunks around the insertion change. */
static void test_dedup(const uint8_t *data, size_t len)
{
	static const uint32_t avgs[] = { 64 * KiB, MiB };
	static const size_t inserts[] = { 1, 100, 5000 };
	uint8_t *edited = malloc(len + 5000);
	uint8_t extra[5000];
	random_bytes(extra, sizeof(extra), 77);

	for (size_t a = 0; a < sizeof(avgs) / sizeof(avgs[0]); a++) {
		struct weft_cdc *c = make(key_a, 0, avgs[a], 0);
		struct cuts orig = chunk(c, data, len, 0);
		for (size_t i = 0; i < sizeof(inserts) / sizeof(inserts[0]); i++) {
			size_t ins = inserts[i];
			memcpy(edited, extra, ins);
			memcpy(edited + ins, data, len);
			struct cuts k = chunk(c, edited, len + ins, 0);
			size_t shared = shared_chunks(data, &orig, edited, &k);
			ok(shared * 10 >= orig.n * 9 && orig.n - shared <= 2,
			   "avg %u, %zu bytes inserted at the front of 32 MiB: %zu of %zu chunks shared", avgs[a], ins,
			   shared, orig.n);
			cuts_free(&k);
		}
		/* 100 bytes in the middle: the chunks before it are untouched too. */
		memcpy(edited, data, len / 2);
		memcpy(edited + len / 2, extra, 100);
		memcpy(edited + len / 2 + 100, data + len / 2, len / 2);
		struct cuts k = chunk(c, edited, len + 100, 0);
		size_t shared = shared_chunks(data, &orig, edited, &k);
		ok(orig.n - shared <= 2, "avg %u, 100 bytes inserted in the middle: %zu of %zu chunks shared", avgs[a],
		   shared, orig.n);
		cuts_free(&k);
		cuts_free(&orig);
		weft_cdc_free(c);
	}
	free(edited);
}

/* Another owner's key cuts the same data elsewhere. */
static void test_keys(const uint8_t *data, size_t len)
{
	struct weft_cdc *a = make(key_a, 0, 64 * KiB, 0), *b = make(key_b, 0, 64 * KiB, 0);
	struct cuts ka = chunk(a, data, len, 0), kb = chunk(b, data, len, 0);
	uint64_t *ea = ends(&ka), *eb = ends(&kb);
	size_t common = 0, i = 0, j = 0;
	while (i + 1 < ka.n && j + 1 < kb.n) {
		if (ea[i] == eb[j]) {
			common++;
			i++;
			j++;
		} else if (ea[i] < eb[j]) {
			i++;
		} else {
			j++;
		}
	}
	ok(!cuts_equal(&ka, &kb) && common * 20 < ka.n,
	   "two keys on the same 32 MiB: %zu and %zu chunks, %zu cut points in common", ka.n, kb.n, common);
	size_t shared = shared_chunks(data, &ka, data, &kb);
	ok(shared * 20 < ka.n, "two keys: %zu chunks with the same bytes", shared);

	/* One bit of key difference is enough. */
	uint8_t key_c[WEFT_CDC_KEY_LEN];
	memcpy(key_c, key_a, sizeof(key_c));
	key_c[31] ^= 0x80;
	struct weft_cdc *c = make(key_c, 0, 64 * KiB, 0);
	struct cuts kc = chunk(c, data, len, 0);
	ok(!cuts_equal(&ka, &kc), "a key differing in one bit cuts elsewhere");
	cuts_free(&kc);
	weft_cdc_free(c);
	free(ea);
	free(eb);
	cuts_free(&ka);
	cuts_free(&kb);
	weft_cdc_free(a);
	weft_cdc_free(b);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	random_bytes(key_a, sizeof(key_a), 1);
	random_bytes(key_b, sizeof(key_b), 2);

	size_t len = 32 * MiB;
	uint8_t *data = malloc(len);
	if (data == NULL)
		return 1;
	random_bytes(data, len, 3);

	test_params();
	test_degenerate();
	test_feeding(data, 16 * MiB);
	test_sizes(data, len);
	test_dedup(data, len);
	test_keys(data, len);
	free(data);
	return done_testing();
}
