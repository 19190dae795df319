/* cdc.c - FastCDC content-defined chunking with normalised chunking and a
 * key-derived gear table (weft/store_cdc.h).
 *
 * A chunk's lengths fall into five regions, scanned by separate loops so
 * that the inner loop tests one fixed mask:
 *   [0, min - 64)    skipped: no cut can fall here, nothing is hashed;
 *   [min - 64, min - 1)  hashed only: fills the 64-bit window;
 *   [min - 1, avg)   hashed and tested against mask_s (cut lengths min..avg);
 *   [avg, max - 1)   hashed and tested against mask_l (cut lengths avg+1..max-1);
 *   max - 1          the byte that makes the chunk max long: a forced cut.
 * "Length" here is the number of bytes of the chunk before the byte being
 * looked at; a cut after that byte gives a chunk one longer.  The state
 * carries the hash and the length across calls, so a stream split anywhere
 * gives the same cuts as one buffer. */
#include <sodium.h>
#include <stdlib.h>

#include "weft/err.h"
#include "weft/store_cdc.h"

/* The gear hash shifts one bit per byte: after 64 bytes a byte has left h. */
#define WINDOW 64
/* Mask bits are spread over bits [64 - SPREAD, 63]. */
#define SPREAD 48

/* Label of the XChaCha20 nonce that turns an owner key into a gear table. */
static const char GEAR_NONCE[crypto_stream_xchacha20_NONCEBYTES] = "weft.store.cdc.gear.v1";

struct weft_cdc {
	uint64_t gear[256];
	uint64_t mask_s; /* avg_bits + 2 one-bits: lengths up to avg */
	uint64_t mask_l; /* avg_bits - 2 one-bits: lengths past avg */
	uint64_t min, avg, max;
};

int weft_cdc_params_check(struct weft_cdc_params *p)
{
	if (p->avg == 0)
		p->avg = WEFT_CDC_DEFAULT_AVG;
	if (p->min == 0)
		p->min = p->avg / 4;
	if (p->max == 0 && p->avg <= WEFT_CDC_MAX_MAX / 8)
		p->max = p->avg * 8;
	if ((p->avg & (p->avg - 1)) != 0)
		return WEFT_EINVAL;
	if (p->min < WEFT_CDC_MIN_MIN || p->min >= p->avg || p->avg >= p->max || p->max > WEFT_CDC_MAX_MAX)
		return WEFT_EINVAL;
	return 0;
}

/* A mask of n one-bits (n <= SPREAD) spread evenly over the high bits,
 * the first at bit 63.  With drop_four it leaves out the bits of index
 * j = (2k + 1) * n / 8, k = 0..3: the mask then has n - 4 bits, a subset
 * of the n-bit one. */
static uint64_t spread_mask(unsigned n, bool drop_four)
{
	uint64_t m = 0;
	for (unsigned j = 0; j < n; j++) {
		bool dropped = false;
		for (unsigned k = 0; drop_four && k < 4; k++)
			dropped |= j == (2 * k + 1) * n / 8;
		if (!dropped)
			m |= (uint64_t)1 << (63 - j * SPREAD / n);
	}
	return m;
}

int weft_cdc_new(struct weft_cdc **out, const uint8_t key[WEFT_CDC_KEY_LEN], const struct weft_cdc_params *p)
{
	struct weft_cdc_params q = p ? *p : (struct weft_cdc_params){ 0, 0, 0 };
	uint8_t stream[256 * 8];
	unsigned bits = 0;

	*out = NULL;
	if (weft_cdc_params_check(&q) != 0)
		return WEFT_EINVAL;
	struct weft_cdc *c = sodium_malloc(sizeof(*c));
	if (c == NULL)
		abort();
	crypto_stream_xchacha20(stream, sizeof(stream), (const unsigned char *)GEAR_NONCE, key);
	for (size_t i = 0; i < 256; i++) {
		uint64_t g = 0;
		for (size_t b = 0; b < 8; b++)
			g |= (uint64_t)stream[i * 8 + b] << (8 * b);
		c->gear[i] = g;
	}
	sodium_memzero(stream, sizeof(stream));
	while (((uint32_t)1 << bits) < q.avg)
		bits++;
	/* min >= 64 and min < avg give bits >= 7; avg < max <= 64 MiB gives
	 * bits <= 25, so both masks fit the spread. */
	c->mask_s = spread_mask(bits + 2, false);
	c->mask_l = spread_mask(bits + 2, true);
	c->min = q.min;
	c->avg = q.avg;
	c->max = q.max;
	*out = c;
	return 0;
}

void weft_cdc_free(struct weft_cdc *c)
{
	sodium_free(c); /* wipes, and accepts NULL */
}

void weft_cdc_params(const struct weft_cdc *c, struct weft_cdc_params *out)
{
	out->min = (uint32_t)c->min;
	out->avg = (uint32_t)c->avg;
	out->max = (uint32_t)c->max;
}

/* Hashes p[0..n) into *h without testing for cuts. */
static void roll(const uint64_t gear[256], const uint8_t *p, size_t n, uint64_t *h)
{
	uint64_t x = *h;
	for (size_t i = 0; i < n; i++)
		x = (x << 1) + gear[p[i]];
	*h = x;
}

/* Hashes p[0..n) into *h, stopping after the first byte that leaves the
 * bits of mask zero.  Returns the bytes hashed, and whether it stopped on
 * such a byte in *hit. */
static size_t roll_cut(const uint64_t gear[256], const uint8_t *p, size_t n, uint64_t *h, uint64_t mask,
		       bool *hit)
{
	uint64_t x = *h;
	for (size_t i = 0; i < n; i++) {
		x = (x << 1) + gear[p[i]];
		if ((x & mask) == 0) {
			*h = x;
			*hit = true;
			return i + 1;
		}
	}
	*h = x;
	*hit = false;
	return n;
}

static size_t min_sz(uint64_t a, size_t b)
{
	return a < b ? (size_t)a : b;
}

size_t weft_cdc_update(const struct weft_cdc *c, struct weft_cdc_state *s, const void *data, size_t len, bool *cut)
{
	const uint8_t *p = data;
	uint64_t have = s->len, h = s->hash;
	size_t i = 0;
	bool hit = false;

	while (i < len && !hit) {
		size_t n;
		if (have < c->min - WINDOW) {
			n = min_sz(c->min - WINDOW - have, len - i);
		} else if (have < c->min - 1) {
			n = min_sz(c->min - 1 - have, len - i);
			roll(c->gear, p + i, n, &h);
		} else if (have < c->avg) {
			n = roll_cut(c->gear, p + i, min_sz(c->avg - have, len - i), &h, c->mask_s, &hit);
		} else if (have < c->max - 1) {
			n = roll_cut(c->gear, p + i, min_sz(c->max - 1 - have, len - i), &h, c->mask_l, &hit);
		} else {
			n = 1;
			hit = true;
		}
		i += n;
		have += n;
	}
	*cut = hit;
	if (hit) {
		s->len = 0;
		s->hash = 0;
	} else {
		s->len = have;
		s->hash = h;
	}
	return i;
}

uint64_t weft_cdc_finish(struct weft_cdc_state *s)
{
	uint64_t n = s->len;
	s->len = 0;
	s->hash = 0;
	return n;
}
