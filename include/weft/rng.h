/* rng.h - weft's deterministic pseudo-random generator: xoshiro256**
 * (Blackman and Vigna) seeded through splitmix64 (src/lib/rng.c).  The same
 * seed gives the same sequence on every run, which the simulator and the
 * runtime fault layer rely on; it is not a cryptographic generator (keys
 * and nonces come from libsodium's randombytes). */
#ifndef WEFT_RNG_H
#define WEFT_RNG_H

#include <stddef.h>
#include <stdint.h>

/* The state; owned and placed by the caller (no allocation). */
struct weft_rng {
	uint64_t s[4];
};

/* Fills the state with four splitmix64 outputs of seed: any seed, 0
 * included, gives a valid (not all-zero) state. */
void weft_rng_seed(struct weft_rng *r, uint64_t seed);
/* The next 64 random bits. */
uint64_t weft_rng_next(struct weft_rng *r);
/* Uniform in [0, bound), without modulo bias (Lemire's multiply-shift with
 * rejection); bound > 0. */
uint64_t weft_rng_below(struct weft_rng *r, uint64_t bound);
/* Uniform in [0, 1), 53 random bits. */
double weft_rng_unit(struct weft_rng *r);
/* Standard normal (Box-Muller, two draws per value). */
double weft_rng_normal(struct weft_rng *r);
/* len random bytes into buf: successive outputs in the host's byte order. */
void weft_rng_bytes(struct weft_rng *r, void *buf, size_t len);

#endif
