/* erasure.c - the systematic Reed-Solomon code of weft/erasure.h on top of
 * ISA-L: encoding multiplies the data by the parity rows of the Cauchy
 * matrix; rebuilding any shares from k others multiplies those k by the
 * inverse of their rows, times the wanted rows.  One routine (solve) does
 * every rebuild, whether of data shares (decode) or of one share (repair). */
#include <isa-l/erasure_code.h>
#include <stdlib.h>
#include <string.h>

#include "weft/erasure.h"
#include "weft/err.h"
#include "weft/util.h"

/* ISA-L takes lengths as int: longer shares go through in pieces. */
#define RUN_CHUNK ((size_t)1 << 30)

int weft_rs_init(struct weft_rs *rs, uint32_t n, uint32_t k)
{
	memset(rs, 0, sizeof(*rs));
	if (k < 1 || k > n || n > WEFT_RS_MAX_N)
		return WEFT_EINVAL;
	rs->n = n;
	rs->k = k;
	rs->matrix = weft_xmalloc((size_t)n * k);
	gf_gen_cauchy1_matrix(rs->matrix, (int)n, (int)k);
	if (n > k) {
		rs->tables = weft_xmalloc((size_t)32 * k * (n - k));
		ec_init_tables((int)k, (int)(n - k), rs->matrix + (size_t)k * k, rs->tables);
	}
	return 0;
}

void weft_rs_free(struct weft_rs *rs)
{
	free(rs->matrix);
	free(rs->tables);
	memset(rs, 0, sizeof(*rs));
}

/* dst[0..rows) = the rows of tables (ISA-L's, for k sources) times
 * src[0..k), over len bytes. */
static void run(const uint8_t *tables, uint32_t k, uint32_t rows, const uint8_t *const *src, uint8_t *const *dst,
		size_t len)
{
	uint8_t *s[WEFT_RS_MAX_N], *d[WEFT_RS_MAX_N];
	for (size_t off = 0; off < len; off += RUN_CHUNK) {
		size_t m = len - off < RUN_CHUNK ? len - off : RUN_CHUNK;
		for (uint32_t r = 0; r < k; r++)
			s[r] = (uint8_t *)src[r] + off; /* ISA-L only reads its sources */
		for (uint32_t r = 0; r < rows; r++)
			d[r] = dst[r] + off;
		ec_encode_data((int)m, (int)k, (int)rows, (uint8_t *)tables, s, d);
	}
}

void weft_rs_encode(const struct weft_rs *rs, uint8_t *const *shares, size_t len)
{
	if (rs->n == rs->k || len == 0)
		return;
	run(rs->tables, rs->k, rs->n - rs->k, (const uint8_t *const *)shares, shares + rs->k, len);
}

/* Checks idx[0..k) (each < n, distinct) and sets at[j] to the r with
 * idx[r] == j, or -1 for the shares not among them.  0 or WEFT_EINVAL. */
static int positions(const struct weft_rs *rs, const uint32_t *idx, int at[WEFT_RS_MAX_N])
{
	for (uint32_t j = 0; j < rs->n; j++)
		at[j] = -1;
	for (uint32_t r = 0; r < rs->k; r++) {
		if (idx[r] >= rs->n || at[idx[r]] >= 0)
			return WEFT_EINVAL;
		at[idx[r]] = (int)r;
	}
	return 0;
}

/* out[w] = share want[w] (for w < nwant), computed from the k shares
 * frags[r] = share idx[r]: (rows want of the matrix) x (rows idx)^-1 x
 * frags.  0, or WEFT_ESTATE (nothing written) when rows idx are singular. */
static int solve(const struct weft_rs *rs, const uint32_t *idx, const uint8_t *const *frags, size_t len,
		 const uint32_t *want, uint32_t nwant, uint8_t *const *out)
{
	uint32_t k = rs->k;
	uint8_t *sub = weft_xmalloc((size_t)k * k), *inv = weft_xmalloc((size_t)k * k);
	for (uint32_t r = 0; r < k; r++)
		memcpy(sub + (size_t)r * k, rs->matrix + (size_t)idx[r] * k, k);
	int rc = gf_invert_matrix(sub, inv, (int)k) == 0 ? 0 : WEFT_ESTATE;
	if (rc == 0) {
		uint8_t *coef = weft_xmalloc((size_t)nwant * k), *tbl = weft_xmalloc((size_t)32 * k * nwant);
		for (uint32_t w = 0; w < nwant; w++) {
			const uint8_t *row = rs->matrix + (size_t)want[w] * k;
			for (uint32_t c = 0; c < k; c++) {
				uint8_t acc = 0;
				for (uint32_t m = 0; m < k; m++)
					acc ^= gf_mul(row[m], inv[(size_t)m * k + c]);
				coef[(size_t)w * k + c] = acc;
			}
		}
		ec_init_tables((int)k, (int)nwant, coef, tbl);
		run(tbl, k, nwant, frags, out, len);
		free(coef);
		free(tbl);
	}
	free(sub);
	free(inv);
	return rc;
}

static void copy_share(uint8_t *dst, const uint8_t *src, size_t len)
{
	if (dst != src && len)
		memcpy(dst, src, len);
}

int weft_rs_decode(const struct weft_rs *rs, const uint32_t *idx, const uint8_t *const *frags, size_t len,
		   uint8_t *const *data)
{
	int at[WEFT_RS_MAX_N];
	int rc = positions(rs, idx, at);
	if (rc != 0 || len == 0)
		return rc;
	uint32_t want[WEFT_RS_MAX_N], nwant = 0;
	uint8_t *out[WEFT_RS_MAX_N];
	for (uint32_t j = 0; j < rs->k; j++) {
		if (at[j] < 0) {
			want[nwant] = j;
			out[nwant++] = data[j];
		}
	}
	/* the missing ones first: frags stay intact while they are read */
	if (nwant > 0 && (rc = solve(rs, idx, frags, len, want, nwant, out)) != 0)
		return rc;
	for (uint32_t j = 0; j < rs->k; j++)
		if (at[j] >= 0)
			copy_share(data[j], frags[at[j]], len);
	return 0;
}

int weft_rs_rebuild(const struct weft_rs *rs, const uint32_t *idx, const uint8_t *const *frags, size_t len,
		    uint32_t j, uint8_t *out)
{
	int at[WEFT_RS_MAX_N];
	int rc = positions(rs, idx, at);
	if (rc != 0 || j >= rs->n)
		return rc != 0 ? rc : WEFT_EINVAL;
	if (len == 0)
		return 0;
	if (at[j] >= 0) {
		copy_share(out, frags[at[j]], len);
		return 0;
	}
	return solve(rs, idx, frags, len, &j, 1, &out);
}
