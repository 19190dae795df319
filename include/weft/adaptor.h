/* adaptor.h - BIP340 Schnorr adaptor signatures on libsecp256k1 0.2's
 * public API (src/lib/adaptor.c).  A pre-signature on message m under the
 * adaptor point T = t·G verifies against the signer's key and T without
 * t; whoever learns t turns it into an ordinary BIP340 signature (adapt),
 * and whoever holds the pre-signature and sees that signature learns t
 * (extract).  Atomic service channels (issue 17) pay for a result with
 * this: the provider is paid only by publishing what reveals t, the key
 * of the result.
 *
 *   pre-signature  R (33 bytes, compressed, R = k·G + T) || s' (32 bytes),
 *                  s' = k + e·d with e = BIP340's challenge of (x(R), P, m)
 *                  and k negated when R has an odd y;
 *   signature      x(R) || s' + t (R even) or s' - t (R odd).
 *
 * The nonce k is a tagged hash ("weft/adaptor/nonce") of the secret key
 * masked by hashed fresh randomness (aux), T, the public key and m: a
 * pre-signature never shares its nonce with another of a different T or
 * message.  Every adapted signature is checked with
 * secp256k1_schnorrsig_verify before it is returned.  Secret scalars live
 * in sodium_malloc'd memory and are wiped. */
#ifndef WEFT_ADAPTOR_H
#define WEFT_ADAPTOR_H

#include <stdint.h>

#define WEFT_ADAPTOR_POINT_LEN 33
#define WEFT_ADAPTOR_PRESIG_LEN 65

/* T = t·G, compressed: 0, or WEFT_EINVAL for t = 0 or t >= n. */
int weft_adaptor_point(const uint8_t t[32], uint8_t T[WEFT_ADAPTOR_POINT_LEN]);

/* A pre-signature of msg by seckey under T; aux: 32 fresh random bytes.
 * 0, or WEFT_EINVAL (a bad secret key, a T that is not a point, a nonce
 * or challenge out of range: with probability about 2^-128, try other
 * aux). */
int weft_adaptor_presign(const uint8_t seckey[32], const uint8_t msg[32], const uint8_t T[WEFT_ADAPTOR_POINT_LEN],
			 const uint8_t aux[32], uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN]);

/* 0 when presig is a pre-signature of msg by the x-only key under T, else
 * WEFT_ECRYPTO (also for malformed keys, points and scalars). */
int weft_adaptor_preverify(const uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN], const uint8_t xonly[32],
			   const uint8_t msg[32], const uint8_t T[WEFT_ADAPTOR_POINT_LEN]);

/* The BIP340 signature of msg by xonly that presig and t make: 0, or
 * WEFT_ECRYPTO when it does not verify (t is not T's secret, presig not
 * for this key and message). */
int weft_adaptor_adapt(const uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN], const uint8_t t[32], const uint8_t xonly[32],
		       const uint8_t msg[32], uint8_t sig[64]);

/* t from a pre-signature and the signature adapted from it: 0 with t·G =
 * T, or WEFT_ECRYPTO (another nonce, or a signature not adapted from
 * presig under T). */
int weft_adaptor_extract(const uint8_t presig[WEFT_ADAPTOR_PRESIG_LEN], const uint8_t sig[64],
			 const uint8_t T[WEFT_ADAPTOR_POINT_LEN], uint8_t t[32]);

#endif
