/* erasure.h - a systematic Reed-Solomon code over GF(2^8) (ISA-L's Cauchy
 * matrix), shared by everything in weft that splits data into n shares any k
 * of which rebuild it: the coded broadcast (protocols/brb/coded.c) and the
 * storage service.  Pure computation on caller-owned buffers: no I/O, no
 * state beyond the code's matrix and tables (protocols/erasure.c).
 *
 * The code: shares 0..k-1 are the data itself (the top k rows of the n x k
 * encoding matrix are the identity), shares k..n-1 are parity, row i >= k
 * being ISA-L's gf_gen_cauchy1_matrix row 1 / (i ^ j) over the polynomial
 * 0x11d.  Any k distinct rows form an invertible matrix, so any k shares
 * rebuild the data.  The bytes are a wire and disk format: the same (n, k)
 * always gives the same shares, and changing the matrix breaks every
 * stored fragment and every peer. */
#ifndef WEFT_ERASURE_H
#define WEFT_ERASURE_H

#include <stddef.h>
#include <stdint.h>

/* The largest n of a code over GF(2^8); callers may size arrays of share
 * pointers with it. */
#define WEFT_RS_MAX_N 255

/* One (n, k) code.  Fields are read-only after weft_rs_init; matrix and
 * tables are owned by the struct and private to erasure.c.  A const code
 * may be used by several threads at once. */
struct weft_rs {
	uint32_t n, k;    /* shares, of which data: 1 <= k <= n <= WEFT_RS_MAX_N */
	uint8_t *matrix;  /* n x k encoding matrix, row-major, identity on top */
	uint8_t *tables;  /* ISA-L tables of the n - k parity rows (NULL when n == k) */
};

/* Sets up the (n, k) code in rs.  0, or WEFT_EINVAL (rs zeroed) unless
 * 1 <= k <= n <= WEFT_RS_MAX_N.  Aborts on out-of-memory.  Free with
 * weft_rs_free. */
int weft_rs_init(struct weft_rs *rs, uint32_t n, uint32_t k);
/* Releases what weft_rs_init allocated and zeroes rs; accepts a zeroed rs
 * (or one whose init failed) and may be called twice. */
void weft_rs_free(struct weft_rs *rs);

/* Computes the parity: shares[0..k) are the data (read), shares[k..n) are
 * written; each share is len bytes and no two overlap.  A no-op when
 * n == k or len == 0. */
void weft_rs_encode(const struct weft_rs *rs, uint8_t *const *shares, size_t len);

/* Rebuilds the k data shares from k shares of one codeword: frags[r] holds
 * share idx[r] (len bytes), for r < k, in any order.  Writes data[j]
 * (len bytes) for every j < k: a data share present among frags is copied,
 * the others are computed.  No data[j] overlaps a frags[r], except that
 * data[j] may be the very buffer frags[r] with idx[r] == j (decoding in
 * place: it is left as it is).  0; WEFT_EINVAL (nothing written) when an
 * idx[r] is >= n or appears twice; WEFT_ESTATE (nothing written) when the
 * rows are singular, which a Cauchy code never is.  Aborts on out-of-memory. */
int weft_rs_decode(const struct weft_rs *rs, const uint32_t *idx, const uint8_t *const *frags, size_t len,
		   uint8_t *const *data);

/* Rebuilds the single share j (data or parity, j < n) into out (len bytes)
 * from k shares as for weft_rs_decode: for repairing one lost share without
 * decoding the rest.  out overlaps no frags[r] (or is frags[r] itself when
 * idx[r] == j).  The same results as weft_rs_decode, plus WEFT_EINVAL when
 * j >= n. */
int weft_rs_rebuild(const struct weft_rs *rs, const uint32_t *idx, const uint8_t *const *frags, size_t len,
		    uint32_t j, uint8_t *out);

#endif
