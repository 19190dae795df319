/* rng.c - xoshiro256** (Blackman and Vigna), seeded through splitmix64
 * (weft/rng.h): the one deterministic generator of the tree, behind the
 * simulator (a seed fixes a whole run), the runtime fault layer's verdicts
 * and the peer redial jitter. */
#include <math.h>
#include <string.h>

#include "weft/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void weft_rng_seed(struct weft_rng *r, uint64_t seed)
{
	/* splitmix64 is a bijection of its counter, so at most one of the four
	 * words is zero and the state is never all zeros. */
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t weft_rng_next(struct weft_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t weft_rng_below(struct weft_rng *r, uint64_t bound)
{
	/* Lemire's multiply-shift with rejection. */
	__uint128_t m = (__uint128_t)weft_rng_next(r) * bound;
	uint64_t low = (uint64_t)m;
	if (low < bound) {
		uint64_t threshold = -bound % bound;
		while (low < threshold) {
			m = (__uint128_t)weft_rng_next(r) * bound;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double weft_rng_unit(struct weft_rng *r)
{
	return (double)(weft_rng_next(r) >> 11) * 0x1.0p-53;
}

double weft_rng_normal(struct weft_rng *r)
{
	double u1 = weft_rng_unit(r), u2 = weft_rng_unit(r);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void weft_rng_bytes(struct weft_rng *r, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len >= 8) {
		uint64_t v = weft_rng_next(r);
		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = weft_rng_next(r);
		memcpy(p, &v, len);
	}
}
