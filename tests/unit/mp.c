/* tests/unit/mp.c - TAP tests for the bounded MessagePack reader and writer.
 *
 * Round trips at every encoding boundary, exact bytes for known encodings,
 * hand-written float/ext inputs, hostile headers (huge declared counts and
 * lengths), truncation at every prefix, 0xc1, nesting limits, sticky errors
 * and typed-read mismatches. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/mp.h"

#include "../tap.h"

#define MIB ((size_t)1 << 20)

/* Checks the writer's output equals want[0..n). */
static void check_bytes(const struct weft_mpw *w, const uint8_t *want, size_t n, const char *what)
{
	if (!is_int((long long)w->len, (long long)n, "%s: encoded length", what))
		return;
	is_mem(w->buf, want, n, "%s: encoded bytes", what);
}

/* Reads the one object in buf and checks frame_len and skip agree on it. */
static void check_whole(const uint8_t *buf, size_t len, const char *what)
{
	struct weft_mp_reader r;
	size_t fl = 0;
	int rc = weft_mp_frame_len(buf, len, MIB * 2, &fl);

	ok(rc == 0 && fl == len, "%s: frame_len = %zu (rc %d, got %zu)", what, len, rc, fl);
	weft_mp_reader_init(&r, buf, len);
	ok(weft_mp_skip(&r) == 0 && weft_mp_remaining(&r) == 0, "%s: skip consumes it all", what);
}

/* ---- integers ------------------------------------------------------------ */

struct uint_case {
	uint64_t v;
	size_t len;
	uint8_t first;
};

static void test_uint(void)
{
	static const struct uint_case cases[] = {
		{ 0, 1, 0x00 },
		{ 127, 1, 0x7f },
		{ 128, 2, 0xcc },
		{ 255, 2, 0xcc },
		{ 256, 3, 0xcd },
		{ 65535, 3, 0xcd },
		{ 65536, 5, 0xce },
		{ UINT32_MAX, 5, 0xce },
		{ (uint64_t)UINT32_MAX + 1, 9, 0xcf },
		{ UINT64_MAX, 9, 0xcf },
	};
	struct weft_mpw w;

	weft_mpw_init(&w);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct uint_case *c = &cases[i];
		struct weft_mp_reader r;
		uint64_t got = 0;
		int rc;

		weft_mpw_reset(&w);
		weft_mpw_uint(&w, c->v);
		ok(w.len == c->len && w.buf[0] == c->first, "uint %" PRIu64 ": %zu bytes, first 0x%02x", c->v,
		   c->len, c->first);
		weft_mp_reader_init(&r, w.buf, w.len);
		is_int(weft_mp_peek_type(&r), WEFT_MP_UINT, "uint %" PRIu64 ": peeks as UINT", c->v);
		rc = weft_mp_read_uint(&r, &got);
		ok(rc == 0 && got == c->v && weft_mp_remaining(&r) == 0, "uint %" PRIu64 ": reads back", c->v);
		check_whole(w.buf, w.len, "uint");
	}
	weft_mpw_free(&w);
}

struct int_case {
	int64_t v;
	size_t len;
	uint8_t first;
};

static void test_int(void)
{
	static const struct int_case cases[] = {
		{ -1, 1, 0xff },
		{ -32, 1, 0xe0 },
		{ -33, 2, 0xd0 },
		{ -128, 2, 0xd0 },
		{ -129, 3, 0xd1 },
		{ -32768, 3, 0xd1 },
		{ -32769, 5, 0xd2 },
		{ INT32_MIN, 5, 0xd2 },
		{ (int64_t)INT32_MIN - 1, 9, 0xd3 },
		{ INT64_MIN, 9, 0xd3 },
		/* Non-negative values go out as the unsigned forms. */
		{ 0, 1, 0x00 },
		{ 127, 1, 0x7f },
		{ 128, 2, 0xcc },
		{ 65536, 5, 0xce },
		{ INT64_MAX, 9, 0xcf },
	};
	struct weft_mpw w;

	weft_mpw_init(&w);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct int_case *c = &cases[i];
		struct weft_mp_reader r;
		struct weft_mp_obj o;
		int64_t got = 0;
		int rc;

		weft_mpw_reset(&w);
		weft_mpw_int(&w, c->v);
		ok(w.len == c->len && w.buf[0] == c->first, "int %" PRId64 ": %zu bytes, first 0x%02x", c->v,
		   c->len, c->first);
		weft_mp_reader_init(&r, w.buf, w.len);
		rc = weft_mp_read_int(&r, &got);
		ok(rc == 0 && got == c->v && weft_mp_remaining(&r) == 0, "int %" PRId64 ": reads back", c->v);
		weft_mp_reader_init(&r, w.buf, w.len);
		rc = weft_mp_read(&r, &o);
		ok(rc == 0 && o.type == (c->v < 0 ? WEFT_MP_INT : WEFT_MP_UINT) &&
			   (c->v < 0 ? o.v.i == c->v : o.v.u == (uint64_t)c->v),
		   "int %" PRId64 ": generic read gives the right type and value", c->v);
		check_whole(w.buf, w.len, "int");
	}
	weft_mpw_free(&w);
}

/* Signed encodings of non-negative values, and unsigned encodings read as
 * int, from hand-written bytes. */
static void test_int_cross(void)
{
	static const uint8_t i8pos[] = { 0xd0, 0x05 };
	static const uint8_t i16pos[] = { 0xd1, 0x01, 0x00 };
	static const uint8_t i32pos[] = { 0xd2, 0x00, 0x01, 0x00, 0x00 };
	static const uint8_t i64pos[] = { 0xd3, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t i8neg[] = { 0xd0, 0xff };
	static const uint8_t i16neg[] = { 0xd1, 0xff, 0x7f };
	static const uint8_t u8[] = { 0xcc, 0xc8 };
	static const uint8_t u64big[] = { 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0 };
	struct weft_mp_reader r;
	uint64_t u = 0;
	int64_t i = 0;
	uint32_t u32 = 0;

	weft_mp_reader_init(&r, i8pos, sizeof i8pos);
	ok(weft_mp_read_uint(&r, &u) == 0 && u == 5, "read_uint accepts int8 5");
	weft_mp_reader_init(&r, i16pos, sizeof i16pos);
	ok(weft_mp_read_uint(&r, &u) == 0 && u == 256, "read_uint accepts int16 256");
	weft_mp_reader_init(&r, i32pos, sizeof i32pos);
	ok(weft_mp_read_u32(&r, &u32) == 0 && u32 == 65536, "read_u32 accepts int32 65536");
	weft_mp_reader_init(&r, i64pos, sizeof i64pos);
	ok(weft_mp_read_uint(&r, &u) == 0 && u == INT64_MAX, "read_uint accepts int64 INT64_MAX");
	weft_mp_reader_init(&r, i8neg, sizeof i8neg);
	is_int(weft_mp_read_uint(&r, &u), WEFT_EDECODE, "read_uint rejects int8 -1");
	weft_mp_reader_init(&r, i16neg, sizeof i16neg);
	ok(weft_mp_read_int(&r, &i) == 0 && i == -129, "read_int reads int16 -129");
	weft_mp_reader_init(&r, u8, sizeof u8);
	ok(weft_mp_read_int(&r, &i) == 0 && i == 200, "read_int reads uint8 200");
	weft_mp_reader_init(&r, u64big, sizeof u64big);
	is_int(weft_mp_read_int(&r, &i), WEFT_EDECODE, "read_int rejects uint64 2^63");
	is_int(weft_mp_remaining(&r), sizeof u64big, "a failed typed read consumes nothing");
	weft_mp_reader_init(&r, u64big, sizeof u64big);
	ok(weft_mp_read_uint(&r, &u) == 0 && u == (uint64_t)1 << 63, "read_uint reads uint64 2^63");
}

static void test_u32(void)
{
	struct weft_mpw w;
	struct weft_mp_reader r;
	uint32_t v = 7;

	weft_mpw_init(&w);
	weft_mpw_uint(&w, UINT32_MAX);
	weft_mpw_uint(&w, (uint64_t)UINT32_MAX + 1);
	weft_mpw_int(&w, -1);
	weft_mp_reader_init(&r, w.buf, w.len);
	ok(weft_mp_read_u32(&r, &v) == 0 && v == UINT32_MAX, "read_u32 accepts 2^32-1");
	v = 7;
	is_int(weft_mp_read_u32(&r, &v), WEFT_EDECODE, "read_u32 rejects 2^32");
	is_int(v, 7, "read_u32 leaves *out alone on overflow");
	is_int(r.err, WEFT_EDECODE, "overflow sets the sticky error");
	weft_mp_reader_init(&r, w.buf + 14, w.len - 14);
	is_int(weft_mp_read_u32(&r, &v), WEFT_EDECODE, "read_u32 rejects -1");
	weft_mpw_free(&w);
}

/* ---- strings, binaries --------------------------------------------------- */

struct span_case {
	size_t n;
	size_t hdr;
	uint8_t first;
};

static void test_str(void)
{
	static const struct span_case cases[] = {
		{ 0, 1, 0xa0 },	    { 31, 1, 0xbf },	 { 32, 2, 0xd9 },    { 255, 2, 0xd9 },
		{ 256, 3, 0xda },   { 65535, 3, 0xda }, { 65536, 5, 0xdb },
	};
	char *src = malloc(65536);
	struct weft_mpw w;

	for (size_t i = 0; i < 65536; i++)
		src[i] = (char)('a' + i % 26);
	weft_mpw_init(&w);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct span_case *c = &cases[i];
		struct weft_mp_reader r;
		const char *s = NULL;
		uint32_t len = 1;

		weft_mpw_reset(&w);
		weft_mpw_strn(&w, src, c->n);
		ok(w.len == c->hdr + c->n && w.buf[0] == c->first, "str %zu: header %zu bytes, first 0x%02x", c->n,
		   c->hdr, c->first);
		weft_mp_reader_init(&r, w.buf, w.len);
		is_int(weft_mp_peek_type(&r), WEFT_MP_STR, "str %zu: peeks as STR", c->n);
		ok(weft_mp_read_str(&r, &s, &len) == 0 && len == c->n && weft_mp_remaining(&r) == 0 &&
			   s == (const char *)w.buf + c->hdr && memcmp(s, src, c->n) == 0,
		   "str %zu: reads back, pointing into the input", c->n);
		check_whole(w.buf, w.len, "str");
	}
	weft_mpw_reset(&w);
	weft_mpw_str(&w, "abc");
	check_bytes(&w, (const uint8_t[]){ 0xa3, 'a', 'b', 'c' }, 4, "str \"abc\"");
	weft_mpw_free(&w);
	free(src);
}

static void test_bin(void)
{
	static const struct span_case cases[] = {
		{ 0, 2, 0xc4 }, { 255, 2, 0xc4 }, { 256, 3, 0xc5 }, { 65535, 3, 0xc5 }, { 65536, 5, 0xc6 },
	};
	uint8_t *src = malloc(65536);
	struct weft_mpw w;

	for (size_t i = 0; i < 65536; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	weft_mpw_init(&w);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct span_case *c = &cases[i];
		struct weft_mp_reader r;
		const uint8_t *b = NULL;
		uint32_t len = 1;

		weft_mpw_reset(&w);
		weft_mpw_bin(&w, src, c->n);
		ok(w.len == c->hdr + c->n && w.buf[0] == c->first, "bin %zu: header %zu bytes, first 0x%02x", c->n,
		   c->hdr, c->first);
		weft_mp_reader_init(&r, w.buf, w.len);
		ok(weft_mp_read_bin(&r, &b, &len) == 0 && len == c->n && weft_mp_remaining(&r) == 0 &&
			   b == w.buf + c->hdr && memcmp(b, src, c->n) == 0,
		   "bin %zu: reads back, pointing into the input", c->n);
		check_whole(w.buf, w.len, "bin");
	}
	weft_mpw_reset(&w);
	weft_mpw_bin(&w, "\x01\x02", 2);
	check_bytes(&w, (const uint8_t[]){ 0xc4, 0x02, 0x01, 0x02 }, 4, "bin 01 02");

	/* read_bin_fixed: exact length copies, another length fails. */
	{
		uint8_t digest[32], out[32];
		struct weft_mp_reader r;

		for (int i = 0; i < 32; i++)
			digest[i] = (uint8_t)(0xa0 + i);
		weft_mpw_reset(&w);
		weft_mpw_bin(&w, digest, 32);
		weft_mp_reader_init(&r, w.buf, w.len);
		memset(out, 0, sizeof out);
		ok(weft_mp_read_bin_fixed(&r, out, 32) == 0 && memcmp(out, digest, 32) == 0 &&
			   weft_mp_remaining(&r) == 0,
		   "read_bin_fixed copies a 32-byte binary");
		weft_mp_reader_init(&r, w.buf, w.len);
		is_int(weft_mp_read_bin_fixed(&r, out, 31), WEFT_EDECODE, "read_bin_fixed rejects 32 bytes for 31");
		weft_mp_reader_init(&r, w.buf, w.len);
		is_int(weft_mp_read_bin_fixed(&r, out, 33), WEFT_EDECODE, "read_bin_fixed rejects 32 bytes for 33");
	}
	weft_mpw_free(&w);
	free(src);
}

/* ---- containers ---------------------------------------------------------- */

static void test_containers(void)
{
	static const struct span_case cases[] = {
		{ 0, 1, 0 },	 { 15, 1, 0 },	    { 16, 3, 0 },
		{ 65535, 3, 0 }, { 65536, 5, 0 },
	};
	static const uint8_t arr_first[] = { 0x90, 0x9f, 0xdc, 0xdc, 0xdd };
	static const uint8_t map_first[] = { 0x80, 0x8f, 0xde, 0xde, 0xdf };
	struct weft_mpw w;

	weft_mpw_init(&w);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = cases[i].n, hdr = cases[i].hdr;
		struct weft_mp_reader r;
		uint32_t count = 0, bad = 0;

		/* Array of n small uints. */
		weft_mpw_reset(&w);
		weft_mpw_array(&w, (uint32_t)n);
		ok(w.len == hdr && w.buf[0] == arr_first[i], "array %zu: header %zu bytes, first 0x%02x", n, hdr,
		   arr_first[i]);
		for (size_t j = 0; j < n; j++)
			weft_mpw_uint(&w, j & 0x7f);
		weft_mp_reader_init(&r, w.buf, w.len);
		is_int(weft_mp_peek_type(&r), WEFT_MP_ARRAY, "array %zu: peeks as ARRAY", n);
		ok(weft_mp_read_array(&r, &count) == 0 && count == n, "array %zu: count reads back", n);
		for (size_t j = 0; j < count; j++) {
			uint64_t v;
			if (weft_mp_read_uint(&r, &v) != 0 || v != (j & 0x7f))
				bad++;
		}
		ok(bad == 0 && r.err == 0 && weft_mp_remaining(&r) == 0, "array %zu: elements read back", n);
		check_whole(w.buf, w.len, "array");

		/* Map of n (uint -> nil) pairs. */
		weft_mpw_reset(&w);
		weft_mpw_map(&w, (uint32_t)n);
		ok(w.len == hdr && w.buf[0] == map_first[i], "map %zu: header %zu bytes, first 0x%02x", n, hdr,
		   map_first[i]);
		for (size_t j = 0; j < n; j++) {
			weft_mpw_uint(&w, j);
			weft_mpw_nil(&w);
		}
		weft_mp_reader_init(&r, w.buf, w.len);
		ok(weft_mp_read_map(&r, &count) == 0 && count == n, "map %zu: count reads back", n);
		bad = 0;
		for (size_t j = 0; j < count; j++) {
			uint64_t k;
			if (weft_mp_read_uint(&r, &k) != 0 || k != j || weft_mp_read_nil(&r) != 0)
				bad++;
		}
		ok(bad == 0 && r.err == 0 && weft_mp_remaining(&r) == 0, "map %zu: pairs read back", n);
		check_whole(w.buf, w.len, "map");
	}

	weft_mpw_reset(&w);
	weft_mpw_array(&w, 16);
	check_bytes(&w, (const uint8_t[]){ 0xdc, 0x00, 0x10 }, 3, "array header 16");
	weft_mpw_reset(&w);
	weft_mpw_map(&w, 65536);
	check_bytes(&w, (const uint8_t[]){ 0xdf, 0x00, 0x01, 0x00, 0x00 }, 5, "map header 65536");

	/* Counts are checked against the bytes present. */
	{
		static const uint8_t arr3[] = { 0x93, 0x01, 0x02 };
		static const uint8_t map2_3[] = { 0x82, 0x01, 0x02, 0x03 };
		static const uint8_t map2_4[] = { 0x82, 0x01, 0x02, 0x03, 0x04 };
		struct weft_mp_reader r;
		uint32_t count;

		weft_mp_reader_init(&r, arr3, sizeof arr3);
		is_int(weft_mp_read_array(&r, &count), WEFT_EDECODE, "array of 3 with 2 bytes left is rejected");
		weft_mp_reader_init(&r, map2_3, sizeof map2_3);
		is_int(weft_mp_read_map(&r, &count), WEFT_EDECODE, "map of 2 pairs with 3 bytes left is rejected");
		weft_mp_reader_init(&r, map2_4, sizeof map2_4);
		ok(weft_mp_read_map(&r, &count) == 0 && count == 2, "map of 2 pairs with 4 bytes left is read");
	}
	weft_mpw_free(&w);
}

/* ---- scalars: nil, bool, floats, ext ------------------------------------- */

static void test_scalars(void)
{
	struct weft_mpw w;
	struct weft_mp_reader r;
	bool b = false;

	weft_mpw_init(&w);
	weft_mpw_nil(&w);
	weft_mpw_bool(&w, true);
	weft_mpw_bool(&w, false);
	check_bytes(&w, (const uint8_t[]){ 0xc0, 0xc3, 0xc2 }, 3, "nil true false");
	weft_mp_reader_init(&r, w.buf, w.len);
	ok(weft_mp_peek_nil(&r), "peek_nil sees nil");
	is_int(weft_mp_peek_type(&r), WEFT_MP_NIL, "peek_type NIL");
	is_int(weft_mp_remaining(&r), 3, "peeks consume nothing");
	ok(weft_mp_read_nil(&r) == 0, "read_nil");
	ok(!weft_mp_peek_nil(&r), "peek_nil is false on a bool");
	ok(weft_mp_read_bool(&r, &b) == 0 && b == true, "read_bool true");
	ok(weft_mp_read_bool(&r, &b) == 0 && b == false, "read_bool false");
	is_int(weft_mp_peek_type(&r), -1, "peek_type at the end is -1");
	ok(!weft_mp_peek_nil(&r), "peek_nil at the end is false");
	is_int(weft_mp_read_nil(&r), WEFT_EDECODE, "reading past the end fails");

	/* Known encodings. */
	weft_mpw_reset(&w);
	weft_mpw_uint(&w, 256);
	check_bytes(&w, (const uint8_t[]){ 0xcd, 0x01, 0x00 }, 3, "uint 256");
	weft_mpw_reset(&w);
	weft_mpw_int(&w, -33);
	check_bytes(&w, (const uint8_t[]){ 0xd0, 0xdf }, 2, "int -33");
	weft_mpw_reset(&w);
	weft_mpw_int(&w, INT64_MIN);
	check_bytes(&w, (const uint8_t[]){ 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0 }, 9, "int INT64_MIN");
	weft_mpw_reset(&w);
	weft_mpw_uint(&w, UINT64_MAX);
	check_bytes(&w, (const uint8_t[]){ 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, 9,
		    "uint UINT64_MAX");
	weft_mpw_reset(&w);
	weft_mpw_double(&w, 1.5);
	check_bytes(&w, (const uint8_t[]){ 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0 }, 9, "double 1.5");

	/* Floats from hand-written bytes. */
	{
		static const uint8_t f32[] = { 0xca, 0x3f, 0xc0, 0x00, 0x00 };	/* 1.5f */
		static const uint8_t f32n[] = { 0xca, 0xc2, 0xf6, 0xe9, 0x79 }; /* -123.456f */
		static const uint8_t f64[] = { 0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18 }; /* pi */
		static const uint8_t f32inf[] = { 0xca, 0x7f, 0x80, 0x00, 0x00 };
		struct weft_mp_obj o;

		weft_mp_reader_init(&r, f32, sizeof f32);
		ok(weft_mp_read(&r, &o) == 0 && o.type == WEFT_MP_FLOAT && o.v.f == 1.5 &&
			   weft_mp_remaining(&r) == 0,
		   "float32 1.5");
		weft_mp_reader_init(&r, f32n, sizeof f32n);
		ok(weft_mp_read(&r, &o) == 0 && o.type == WEFT_MP_FLOAT && o.v.f == (double)-123.456f,
		   "float32 -123.456 widened exactly");
		weft_mp_reader_init(&r, f64, sizeof f64);
		ok(weft_mp_read(&r, &o) == 0 && o.type == WEFT_MP_FLOAT && o.v.f == 3.141592653589793,
		   "float64 pi");
		weft_mp_reader_init(&r, f32inf, sizeof f32inf);
		ok(weft_mp_read(&r, &o) == 0 && o.type == WEFT_MP_FLOAT && isinf(o.v.f) && o.v.f > 0,
		   "float32 +inf");
		weft_mp_reader_init(&r, f64, 8);
		is_int(weft_mp_read(&r, &o), WEFT_EDECODE, "float64 cut short is rejected");
	}
	/* Double round trips. */
	{
		static const double vals[] = { 0.0, -0.0, 1e-300, -2.5, DBL_MAX, 1.0 / 3.0 };
		int bad = 0;
		for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
			struct weft_mp_obj o;
			weft_mpw_reset(&w);
			weft_mpw_double(&w, vals[i]);
			weft_mp_reader_init(&r, w.buf, w.len);
			if (weft_mp_read(&r, &o) != 0 || o.type != WEFT_MP_FLOAT ||
			    memcmp(&o.v.f, &vals[i], sizeof(double)) != 0)
				bad++;
		}
		is_int(bad, 0, "doubles round-trip bit for bit");
	}
	weft_mpw_free(&w);
}

struct ext_case {
	const char *name;
	const uint8_t *bytes;
	size_t len;
	int8_t type;
	uint32_t plen;
	size_t hdr;
};

static void test_ext(void)
{
	static const uint8_t fx1[] = { 0xd4, 0x05, 0xaa };
	static const uint8_t fx2[] = { 0xd5, 0xfe, 0x01, 0x02 };
	static const uint8_t fx4[] = { 0xd6, 0xff, 0x5f, 0x00, 0x00, 0x01 }; /* timestamp32 */
	static const uint8_t fx8[] = { 0xd7, 0x01, 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t fx16[] = { 0xd8, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const uint8_t e8[] = { 0xc7, 0x03, 0x80, 'x', 'y', 'z' };
	static const uint8_t e8z[] = { 0xc7, 0x00, 0x02 };
	static uint8_t e16[4 + 300];
	static uint8_t e32[6 + 70000];
	struct ext_case cases[] = {
		{ "fixext1", fx1, sizeof fx1, 5, 1, 2 },
		{ "fixext2", fx2, sizeof fx2, -2, 2, 2 },
		{ "fixext4", fx4, sizeof fx4, -1, 4, 2 },
		{ "fixext8", fx8, sizeof fx8, 1, 8, 2 },
		{ "fixext16", fx16, sizeof fx16, 127, 16, 2 },
		{ "ext8", e8, sizeof e8, -128, 3, 3 },
		{ "ext8 empty", e8z, sizeof e8z, 2, 0, 3 },
		{ "ext16", e16, sizeof e16, 9, 300, 4 },
		{ "ext32", e32, sizeof e32, -7, 70000, 6 },
	};

	e16[0] = 0xc8;
	weft_be16_put(e16 + 1, 300);
	e16[3] = 9;
	e32[0] = 0xc9;
	weft_be32_put(e32 + 1, 70000);
	e32[5] = (uint8_t)-7;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct ext_case *c = &cases[i];
		struct weft_mp_reader r;
		struct weft_mp_obj o;

		weft_mp_reader_init(&r, c->bytes, c->len);
		ok(weft_mp_read(&r, &o) == 0 && o.type == WEFT_MP_EXT && o.v.s.ext_type == c->type &&
			   o.v.s.len == c->plen && o.v.s.bytes == c->bytes + c->hdr && weft_mp_remaining(&r) == 0,
		   "%s: type %d, %u payload bytes", c->name, c->type, c->plen);
		check_whole(c->bytes, c->len, c->name);
		weft_mp_reader_init(&r, c->bytes, c->len - 1);
		is_int(weft_mp_read(&r, &o), WEFT_EDECODE, "%s: cut short is rejected", c->name);
	}
	{
		struct weft_mp_reader r;
		const char *s;
		uint32_t n;
		weft_mp_reader_init(&r, fx1, sizeof fx1);
		is_int(weft_mp_read_str(&r, &s, &n), WEFT_EDECODE, "read_str on an ext fails");
	}
}

/* ---- hostile input -------------------------------------------------------- */

static void test_hostile(void)
{
	/* 14 bytes claiming a map of 2^32-1 pairs, and a str32 of 4 GiB - 1. */
	static const uint8_t bigmap[14] = { 0xdf, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	static const uint8_t bigstr[14] = { 0xdb, 0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i' };
	static const uint8_t bigarr[5] = { 0xdd, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t bigbin[5] = { 0xc6, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t bigext[6] = { 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01 };
	struct weft_mp_reader r;
	struct weft_mp_obj o;
	uint32_t count;
	const char *s;
	size_t fl = 12345;

	/* The reader has no allocator to call: a failure here is a pure bounds
	 * check, so "nothing allocated" holds by construction. */
	weft_mp_reader_init(&r, bigmap, sizeof bigmap);
	is_int(weft_mp_read(&r, &o), WEFT_EDECODE, "map32 of 2^32-1 pairs in 14 bytes: read fails");
	weft_mp_reader_init(&r, bigmap, sizeof bigmap);
	is_int(weft_mp_read_map(&r, &count), WEFT_EDECODE, "map32 of 2^32-1 pairs: read_map fails");
	weft_mp_reader_init(&r, bigmap, sizeof bigmap);
	is_int(weft_mp_skip(&r), WEFT_EDECODE, "map32 of 2^32-1 pairs: skip fails");
	is_int(weft_mp_remaining(&r), 14, "failed skip consumes nothing");
	is_int(weft_mp_frame_len(bigmap, sizeof bigmap, MIB, &fl), WEFT_ETOOBIG,
	       "map32 of 2^32-1 pairs: frame_len says too big");
	is_int(weft_mp_frame_len(bigmap, 5, MIB, &fl), WEFT_ETOOBIG,
	       "map32 of 2^32-1 pairs: too big from the 5-byte header alone");
	is_int(fl, 12345, "frame_len leaves *frame_len alone on error");

	weft_mp_reader_init(&r, bigstr, sizeof bigstr);
	is_int(weft_mp_read(&r, &o), WEFT_EDECODE, "str32 of 4 GiB in 14 bytes: read fails");
	weft_mp_reader_init(&r, bigstr, sizeof bigstr);
	is_int(weft_mp_read_str(&r, &s, &count), WEFT_EDECODE, "str32 of 4 GiB: read_str fails");
	weft_mp_reader_init(&r, bigstr, sizeof bigstr);
	is_int(weft_mp_skip(&r), WEFT_EDECODE, "str32 of 4 GiB: skip fails");
	is_int(weft_mp_frame_len(bigstr, sizeof bigstr, MIB, &fl), WEFT_ETOOBIG,
	       "str32 of 4 GiB: frame_len says too big");
	is_int(weft_mp_frame_len(bigstr, 5, MIB, &fl), WEFT_ETOOBIG, "str32 of 4 GiB: too big from the header");

	is_int(weft_mp_frame_len(bigarr, 5, MIB, &fl), WEFT_ETOOBIG, "array32 of 2^32-1: too big from the header");
	is_int(weft_mp_frame_len(bigbin, 5, MIB, &fl), WEFT_ETOOBIG, "bin32 of 4 GiB: too big from the header");
	is_int(weft_mp_frame_len(bigext, 6, MIB, &fl), WEFT_ETOOBIG, "ext32 of 4 GiB: too big from the header");
	/* Without the limit they are merely incomplete. */
	is_int(weft_mp_frame_len(bigmap, sizeof bigmap, SIZE_MAX, &fl), WEFT_EAGAIN,
	       "map32 of 2^32-1 pairs with no limit: incomplete");

	/* A huge count nested deep inside: the sum of pending elements counts. */
	{
		static const uint8_t nested[] = { 0x92, 0xdc, 0xff, 0xff, 0x01 };
		is_int(weft_mp_frame_len(nested, sizeof nested, 1000, &fl), WEFT_ETOOBIG,
		       "array16 of 65535 inside an array, max 1000: too big");
		is_int(weft_mp_frame_len(nested, sizeof nested, 65535 + 4, &fl), WEFT_ETOOBIG,
		       "needs 1+3+65535+1 bytes: max one short is too big");
		is_int(weft_mp_frame_len(nested, sizeof nested, 65535 + 5, &fl), WEFT_EAGAIN,
		       "needs 1+3+65535+1 bytes: max exact is just incomplete");
	}
}

/* ---- frame_len ------------------------------------------------------------ */

static void test_frame_len(void)
{
	/* [uint16 x3] = 10 bytes. */
	static const uint8_t a3[] = { 0x93, 0xcd, 1, 0, 0xcd, 2, 0, 0xcd, 3, 0 };
	static const uint8_t two[] = { 0x01, 0xa1, 'x' };
	size_t fl = 0;

	ok(weft_mp_frame_len(a3, sizeof a3, 10, &fl) == 0 && fl == 10, "object of exactly max bytes fits");
	is_int(weft_mp_frame_len(a3, sizeof a3, 9, &fl), WEFT_ETOOBIG, "object of max+1 bytes is too big");
	is_int(weft_mp_frame_len(a3, 6, 10, &fl), WEFT_EAGAIN, "6 of 10 bytes, max 10: incomplete");
	is_int(weft_mp_frame_len(a3, 6, 6, &fl), WEFT_ETOOBIG, "6 of 10 bytes, max 6: too big (len >= max)");
	is_int(weft_mp_frame_len(a3, 5, 6, &fl), WEFT_ETOOBIG,
	       "5 of 10 bytes, max 6: the next header cannot fit");
	is_int(weft_mp_frame_len(a3, 0, 10, &fl), WEFT_EAGAIN, "empty buffer: incomplete");
	is_int(weft_mp_frame_len(a3, 0, 0, &fl), WEFT_ETOOBIG, "max 0: too big");
	ok(weft_mp_frame_len(two, sizeof two, 100, &fl) == 0 && fl == 1, "trailing bytes are not part of the frame");
	ok(weft_mp_frame_len(two, sizeof two, 1, &fl) == 0 && fl == 1, "a 1-byte object fits max 1");
	ok(weft_mp_frame_len(a3, sizeof a3, SIZE_MAX, &fl) == 0 && fl == 10, "max SIZE_MAX works");
}

/* ---- resumable framer ------------------------------------------------------ */

static void test_framer(void)
{
	struct weft_mpw w;
	struct weft_mp_framer f = {0};
	uint8_t blob[5000];
	size_t fl = 0, whole = 0;
	int rc = WEFT_EAGAIN;

	memset(blob, 0x33, sizeof blob);
	weft_mpw_init(&w);
	/* [0, 7, "status", [{"k": bin(5000)}, [1, [2, [3]]]]] then a second frame. */
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 7);
	weft_mpw_str(&w, "status");
	weft_mpw_array(&w, 2);
	weft_mpw_map(&w, 1);
	weft_mpw_str(&w, "k");
	weft_mpw_bin(&w, blob, sizeof blob);
	weft_mpw_array(&w, 2);
	weft_mpw_uint(&w, 1);
	weft_mpw_array(&w, 2);
	weft_mpw_uint(&w, 2);
	weft_mpw_array(&w, 1);
	weft_mpw_uint(&w, 3);
	whole = w.len;
	weft_mpw_uint(&w, 9);

	/* One byte at a time: only the last byte completes it, and the
	 * framer's place never goes back. */
	size_t last_pos = 0, back = 0, early = 0;
	for (size_t have = 1; have <= whole; have++) {
		rc = weft_mp_framer_next(&f, w.buf, have, 1 << 20, &fl);
		if (rc == WEFT_EAGAIN) {
			back += f.pos < last_pos;
			last_pos = f.pos;
		} else if (have < whole) {
			early++;
		}
	}
	ok(rc == 0 && fl == whole, "framer: fed a byte at a time, finds the frame at its last byte (%zu)", fl);
	is_int(early, 0, "framer: no result before the last byte");
	is_int(back, 0, "framer: its place only moves forward");
	ok(weft_mp_framer_next(&f, w.buf + whole, w.len - whole, 10, &fl) == 0 && fl == 1,
	   "framer: reset after a frame, finds the next one");
	is_int(weft_mp_framer_next(&f, w.buf, w.len, whole - 1, &fl), WEFT_ETOOBIG, "framer: max - 1 is too big");
	is_int(weft_mp_framer_next(&f, "\xc1", 1, 10, &fl), WEFT_EDECODE, "framer: 0xc1 is never msgpack");

	/* 100 nested arrays: too deep for skip and frame_len, but the framer
	 * finds the extent so the server can answer the error. */
	uint8_t deep[101];
	memset(deep, 0x91, 100);
	deep[100] = 0xc0;
	weft_mp_framer_reset(&f);
	ok(weft_mp_framer_next(&f, deep, sizeof deep, 1000, &fl) == 0 && fl == sizeof deep,
	   "framer: 100 nested arrays: extent found (%zu)", fl);
	is_int(weft_mp_frame_len(deep, sizeof deep, 1000, &fl), WEFT_EDECODE, "frame_len: 100 nested arrays too deep");
	weft_mpw_free(&w);
}

/* A walk over everything through weft_mp_read alone. */
static int read_walk(struct weft_mp_reader *r, int depth)
{
	struct weft_mp_obj o;
	uint64_t n;
	int rc = weft_mp_read(r, &o);

	if (rc)
		return rc;
	if (o.type != WEFT_MP_ARRAY && o.type != WEFT_MP_MAP)
		return 0;
	if (depth >= WEFT_MP_MAX_DEPTH)
		return WEFT_EDECODE;
	n = o.type == WEFT_MP_MAP ? 2 * (uint64_t)o.v.count : o.v.count;
	for (uint64_t i = 0; i < n; i++)
		if ((rc = read_walk(r, depth + 1)) != 0)
			return rc;
	return 0;
}

static void test_truncation(void)
{
	static const uint8_t ext[] = { 0xd6, 0xff, 0, 0, 0, 1 };
	uint8_t blob[300];
	struct weft_mpw w;
	size_t fl = 0;
	int bad_frame = 0, bad_skip = 0, bad_walk = 0;

	memset(blob, 0x5a, sizeof blob);
	weft_mpw_init(&w);
	/* [1, "hello", {"k": [true, nil, -5], 7: {}}, bin(300), 3.25, ext, [[[]]], -70000] */
	weft_mpw_array(&w, 8);
	weft_mpw_uint(&w, 1);
	weft_mpw_str(&w, "hello");
	weft_mpw_map(&w, 2);
	weft_mpw_str(&w, "k");
	weft_mpw_array(&w, 3);
	weft_mpw_bool(&w, true);
	weft_mpw_nil(&w);
	weft_mpw_int(&w, -5);
	weft_mpw_uint(&w, 7);
	weft_mpw_map(&w, 0);
	weft_mpw_bin(&w, blob, sizeof blob);
	weft_mpw_double(&w, 3.25);
	weft_mpw_raw(&w, ext, sizeof ext);
	weft_mpw_raw(&w, "\x91\x91\x90", 3);
	weft_mpw_int(&w, -70000);

	check_whole(w.buf, w.len, "nested message");
	{
		struct weft_mp_reader r;
		weft_mp_reader_init(&r, w.buf, w.len);
		ok(read_walk(&r, 0) == 0 && weft_mp_remaining(&r) == 0, "nested message: read walk covers it");
	}
	for (size_t n = 0; n < w.len; n++) {
		struct weft_mp_reader r;

		if (weft_mp_frame_len(w.buf, n, MIB, &fl) != WEFT_EAGAIN)
			bad_frame++;
		weft_mp_reader_init(&r, w.buf, n);
		if (weft_mp_skip(&r) != WEFT_EDECODE || weft_mp_remaining(&r) != n)
			bad_skip++;
		weft_mp_reader_init(&r, w.buf, n);
		if (read_walk(&r, 0) != WEFT_EDECODE)
			bad_walk++;
	}
	is_int(bad_frame, 0, "every proper prefix (%zu of them): frame_len says incomplete", w.len);
	is_int(bad_skip, 0, "every proper prefix: skip fails and consumes nothing");
	is_int(bad_walk, 0, "every proper prefix: a read walk fails");

	/* With the frame limit equal to the prefix length it is too big. */
	bad_frame = 0;
	for (size_t n = 1; n < w.len; n++)
		if (weft_mp_frame_len(w.buf, n, n, &fl) != WEFT_ETOOBIG)
			bad_frame++;
	is_int(bad_frame, 0, "every proper prefix with max = its length: too big");
	weft_mpw_free(&w);
}

/* ---- 0xc1, depth, sticky errors, type mismatches ------------------------- */

static void test_reserved(void)
{
	static const uint8_t c1[] = { 0xc1 };
	static const uint8_t in_arr[] = { 0x92, 0x01, 0xc1 };
	static const uint8_t in_str[] = { 0xa2, 0xc1, 0xc1 };
	struct weft_mp_reader r;
	struct weft_mp_obj o;
	size_t fl;

	weft_mp_reader_init(&r, c1, 1);
	is_int(weft_mp_peek_type(&r), -1, "0xc1: peek_type -1");
	is_int(weft_mp_read(&r, &o), WEFT_EDECODE, "0xc1: read fails");
	weft_mp_reader_init(&r, c1, 1);
	is_int(weft_mp_skip(&r), WEFT_EDECODE, "0xc1: skip fails");
	is_int(weft_mp_frame_len(c1, 1, MIB, &fl), WEFT_EDECODE, "0xc1: frame_len says malformed");
	is_int(weft_mp_frame_len(in_arr, sizeof in_arr, MIB, &fl), WEFT_EDECODE,
	       "0xc1 inside an array: frame_len says malformed");
	weft_mp_reader_init(&r, in_arr, sizeof in_arr);
	is_int(weft_mp_skip(&r), WEFT_EDECODE, "0xc1 inside an array: skip fails");
	ok(weft_mp_frame_len(in_str, sizeof in_str, MIB, &fl) == 0 && fl == 3, "0xc1 inside a string is data");
}

static void test_depth(void)
{
	enum { DEEP = 100000 };
	uint8_t *buf = malloc(DEEP + 1);
	struct weft_mp_reader r;
	size_t fl = 0;
	int d;

	/* 32 nested arrays around a 1: accepted. */
	memset(buf, 0x91, 32);
	buf[32] = 0x01;
	ok(weft_mp_frame_len(buf, 33, MIB, &fl) == 0 && fl == 33, "depth 32: frame_len accepts");
	weft_mp_reader_init(&r, buf, 33);
	ok(weft_mp_skip(&r) == 0 && weft_mp_remaining(&r) == 0, "depth 32: skip accepts");
	/* 33: rejected. */
	memset(buf, 0x91, 33);
	buf[33] = 0x01;
	is_int(weft_mp_frame_len(buf, 34, MIB, &fl), WEFT_EDECODE, "depth 33: frame_len rejects");
	is_int(weft_mp_frame_len(buf, 33, MIB, &fl), WEFT_EDECODE, "depth 33: rejected before the end arrives");
	weft_mp_reader_init(&r, buf, 34);
	is_int(weft_mp_skip(&r), WEFT_EDECODE, "depth 33: skip rejects");
	/* An empty container counts as a level. */
	memset(buf, 0x91, 31);
	buf[31] = 0x90;
	ok(weft_mp_frame_len(buf, 32, MIB, &fl) == 0 && fl == 32, "31 arrays around [] (32 levels): accepted");
	memset(buf, 0x91, 32);
	buf[32] = 0x80;
	is_int(weft_mp_frame_len(buf, 33, MIB, &fl), WEFT_EDECODE, "32 arrays around {} (33 levels): rejected");
	/* Maps: {0: {0: ... 1}} */
	for (d = 0; d < 32; d++) {
		buf[2 * d] = 0x81;
		buf[2 * d + 1] = 0x00;
	}
	buf[64] = 0x01;
	ok(weft_mp_frame_len(buf, 65, MIB, &fl) == 0 && fl == 65, "32 nested maps: accepted");
	weft_mp_reader_init(&r, buf, 65);
	ok(weft_mp_skip(&r) == 0 && weft_mp_remaining(&r) == 0, "32 nested maps: skip accepts");
	buf[64] = 0x81;
	buf[65] = 0x00;
	buf[66] = 0x01;
	is_int(weft_mp_frame_len(buf, 67, MIB, &fl), WEFT_EDECODE, "33 nested maps: rejected");
	/* Wide but shallow nesting, closing levels and reopening. */
	{
		static const uint8_t wide[] = { 0x93, 0x92, 0x91, 0x01, 0x02, 0x91, 0x91, 0x03, 0x04 };
		ok(weft_mp_frame_len(wide, sizeof wide, MIB, &fl) == 0 && fl == sizeof wide,
		   "[[[1],2],[[3]],4] frame_len");
		weft_mp_reader_init(&r, wide, sizeof wide);
		ok(weft_mp_skip(&r) == 0 && weft_mp_remaining(&r) == 0, "[[[1],2],[[3]],4] skip");
	}
	/* Very deep input: no recursion to blow the stack. */
	memset(buf, 0x91, DEEP);
	buf[DEEP] = 0x01;
	is_int(weft_mp_frame_len(buf, DEEP + 1, 2 * MIB, &fl), WEFT_EDECODE, "depth 100000: frame_len rejects");
	weft_mp_reader_init(&r, buf, DEEP + 1);
	is_int(weft_mp_skip(&r), WEFT_EDECODE, "depth 100000: skip rejects");
	free(buf);
}

static void test_sticky(void)
{
	static const uint8_t in[] = { 0xc0, 0x01, 0xa1, 'x' };
	struct weft_mp_reader r;
	struct weft_mp_obj o;
	bool b;
	uint64_t u;

	weft_mp_reader_init(&r, in, sizeof in);
	is_int(weft_mp_read_bool(&r, &b), WEFT_EDECODE, "read_bool on nil fails");
	is_int(r.err, WEFT_EDECODE, "error is recorded in r->err");
	is_int(weft_mp_remaining(&r), 4, "the failed read consumed nothing");
	is_int(weft_mp_read_nil(&r), WEFT_EDECODE, "a later valid read_nil still fails");
	is_int(weft_mp_read(&r, &o), WEFT_EDECODE, "read fails after an error");
	is_int(weft_mp_skip(&r), WEFT_EDECODE, "skip fails after an error");
	is_int(weft_mp_peek_type(&r), -1, "peek_type is -1 after an error");
	ok(!weft_mp_peek_nil(&r), "peek_nil is false after an error");
	is_int(weft_mp_remaining(&r), 4, "nothing consumed after the error");

	/* First error kept: a planted code survives a later failure. */
	weft_mp_reader_init(&r, in, sizeof in);
	r.err = WEFT_ETOOBIG;
	is_int(weft_mp_read_uint(&r, &u), WEFT_ETOOBIG, "the first error is returned, not a new one");
	is_int(r.err, WEFT_ETOOBIG, "the first error is kept");

	/* Normal sequence for contrast. */
	weft_mp_reader_init(&r, in, sizeof in);
	ok(weft_mp_read_nil(&r) == 0 && weft_mp_read_uint(&r, &u) == 0 && u == 1 && weft_mp_skip(&r) == 0 &&
		   weft_mp_remaining(&r) == 0 && r.err == 0,
	   "nil, 1, \"x\" read in sequence");
	weft_mp_reader_init(&r, NULL, 0);
	is_int(weft_mp_read(&r, &o), WEFT_EDECODE, "an empty (NULL) buffer reads as an error");
}

static void test_mismatch(void)
{
	struct weft_mpw w;
	struct weft_mp_reader r;
	const uint8_t *bp;
	const char *sp;
	uint32_t n;
	uint64_t u;
	int64_t i;
	bool b;

	weft_mpw_init(&w);
	weft_mpw_str(&w, "s");	   /* 0 .. 2 */
	weft_mpw_bin(&w, "b", 1);  /* 2 .. 5 */
	weft_mpw_map(&w, 0);	   /* 5 */
	weft_mpw_array(&w, 0);	   /* 6 */
	weft_mpw_double(&w, 1.0); /* 7 .. 16 */
	weft_mpw_int(&w, -1);	   /* 16 */

#define AT(off) weft_mp_reader_init(&r, w.buf + (off), w.len - (off))
	AT(0);
	is_int(weft_mp_read_bin(&r, &bp, &n), WEFT_EDECODE, "read_bin on a str");
	AT(2);
	is_int(weft_mp_read_str(&r, &sp, &n), WEFT_EDECODE, "read_str on a bin");
	AT(5);
	is_int(weft_mp_read_array(&r, &n), WEFT_EDECODE, "read_array on a map");
	AT(6);
	is_int(weft_mp_read_map(&r, &n), WEFT_EDECODE, "read_map on an array");
	AT(7);
	is_int(weft_mp_read_int(&r, &i), WEFT_EDECODE, "read_int on a float");
	AT(7);
	is_int(weft_mp_read_uint(&r, &u), WEFT_EDECODE, "read_uint on a float");
	AT(16);
	is_int(weft_mp_read_bool(&r, &b), WEFT_EDECODE, "read_bool on an int");
	AT(16);
	is_int(weft_mp_read_nil(&r), WEFT_EDECODE, "read_nil on an int");
	AT(0);
	is_int(weft_mp_read_bin_fixed(&r, &u, 1), WEFT_EDECODE, "read_bin_fixed on a str");
#undef AT
	weft_mpw_free(&w);
}

/* ---- writer --------------------------------------------------------------- */

static void test_writer(void)
{
	struct weft_mpw w;
	uint8_t *b;
	size_t len = 99;
	int bad = 0;

	weft_mpw_init(&w);
	b = weft_mpw_steal(&w, &len);
	ok(b == NULL && len == 0, "steal of a fresh writer: NULL, 0");

	weft_mpw_raw(&w, "\x92\x01", 2);
	weft_mpw_uint(&w, 2);
	b = weft_mpw_steal(&w, &len);
	ok(len == 3 && b && memcmp(b, "\x92\x01\x02", 3) == 0, "raw bytes then a uint, stolen");
	ok(w.buf == NULL && w.len == 0 && w.cap == 0, "steal leaves the writer empty");
	free(b);

	weft_mpw_nil(&w);
	weft_mpw_reset(&w);
	ok(w.len == 0 && w.cap > 0, "reset keeps the capacity");
	b = weft_mpw_steal(&w, &len);
	ok(b == NULL && len == 0 && w.buf == NULL, "steal after reset: NULL, 0, buffer freed");

	/* Growth: many small writes keep every byte. */
	for (uint32_t k = 0; k < 100000; k++)
		weft_mpw_uint(&w, k);
	{
		struct weft_mp_reader r;
		weft_mp_reader_init(&r, w.buf, w.len);
		for (uint32_t k = 0; k < 100000; k++) {
			uint32_t v;
			if (weft_mp_read_u32(&r, &v) != 0 || v != k)
				bad++;
		}
		ok(bad == 0 && weft_mp_remaining(&r) == 0, "100000 uints written through growth read back");
	}
	weft_mpw_free(&w);
	ok(w.buf == NULL && w.len == 0 && w.cap == 0, "free leaves the writer reusable");
	weft_mpw_free(&w);
	weft_mpw_str(&w, "");
	check_bytes(&w, (const uint8_t[]){ 0xa0 }, 1, "empty str after free");
	weft_mpw_free(&w);
}

int main(void)
{
	test_uint();
	test_int();
	test_int_cross();
	test_u32();
	test_str();
	test_bin();
	test_containers();
	test_scalars();
	test_ext();
	test_hostile();
	test_frame_len();
	test_framer();
	test_truncation();
	test_reserved();
	test_depth();
	test_sticky();
	test_mismatch();
	test_writer();
	return done_testing();
}
