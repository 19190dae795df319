/* tests/fuzz/mp.c - libFuzzer target for the bounded MessagePack reader.
 *
 * On arbitrary input it runs weft_mp_frame_len, weft_mp_skip and an
 * independent recursive walk built on weft_mp_read alone, and abort()s when
 * they disagree about whether the input starts with a complete object or
 * about its length.  The walk also re-encodes what it reads through the
 * writer, and the copy must parse back to a complete object.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes one object of every type (nested
 * ones too) and exits.  Build and run: make fuzz-mp (tests/fuzz/README). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/err.h"
#include "weft/mp.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/* Reads one object and everything nested in it through weft_mp_read,
 * copying it to w.  Same depth rule as skip: every container is a level. */
static int walk(struct weft_mp_reader *r, struct weft_mpw *w, int depth)
{
	const uint8_t *start = r->p;
	struct weft_mp_obj o;
	uint64_t n = 0;
	int rc = weft_mp_read(r, &o);

	if (rc) {
		check(rc == WEFT_EDECODE && r->err == rc && r->p == start);
		return rc;
	}
	switch (o.type) {
	case WEFT_MP_NIL:
		weft_mpw_nil(w);
		return 0;
	case WEFT_MP_BOOL:
		weft_mpw_bool(w, o.v.b);
		return 0;
	case WEFT_MP_UINT:
		weft_mpw_uint(w, o.v.u);
		return 0;
	case WEFT_MP_INT:
		check(o.v.i < 0);
		weft_mpw_int(w, o.v.i);
		return 0;
	case WEFT_MP_FLOAT:
		weft_mpw_double(w, o.v.f);
		return 0;
	case WEFT_MP_STR:
		check(o.v.s.bytes + o.v.s.len == r->p);
		weft_mpw_strn(w, (const char *)o.v.s.bytes, o.v.s.len);
		return 0;
	case WEFT_MP_BIN:
		check(o.v.s.bytes + o.v.s.len == r->p);
		weft_mpw_bin(w, o.v.s.bytes, o.v.s.len);
		return 0;
	case WEFT_MP_EXT:
		check(o.v.s.bytes + o.v.s.len == r->p);
		weft_mpw_raw(w, start, (size_t)(r->p - start));
		return 0;
	case WEFT_MP_ARRAY:
		n = o.v.count;
		check(n <= weft_mp_remaining(r));
		weft_mpw_array(w, o.v.count);
		break;
	case WEFT_MP_MAP:
		n = 2 * (uint64_t)o.v.count;
		check(n <= weft_mp_remaining(r));
		weft_mpw_map(w, o.v.count);
		break;
	}
	if (depth >= WEFT_MP_MAX_DEPTH)
		return WEFT_EDECODE;
	for (uint64_t i = 0; i < n; i++)
		if ((rc = walk(r, w, depth + 1)) != 0)
			return rc;
	return 0;
}

/* Typed reads and peeks in sequence until something fails. */
static void typed(const uint8_t *data, size_t size)
{
	struct weft_mp_reader r;
	int guard = 0;

	weft_mp_reader_init(&r, data, size);
	while (weft_mp_remaining(&r) > 0 && guard++ < 256) {
		int t = weft_mp_peek_type(&r);
		bool nil = weft_mp_peek_nil(&r);
		size_t before = weft_mp_remaining(&r);
		uint64_t u;
		int64_t i;
		uint32_t u32, n;
		const char *s;
		const uint8_t *b;
		bool bo;
		uint8_t fixed[32];
		struct weft_mp_obj o;
		int rc = 0;

		check(nil == (t == WEFT_MP_NIL));
		switch (data[size - before] % 12) {
		case 0: rc = weft_mp_read_nil(&r); break;
		case 1: rc = weft_mp_read_bool(&r, &bo); break;
		case 2: rc = weft_mp_read_uint(&r, &u); break;
		case 3: rc = weft_mp_read_u32(&r, &u32); break;
		case 4: rc = weft_mp_read_int(&r, &i); break;
		case 5: rc = weft_mp_read_str(&r, &s, &n); break;
		case 6: rc = weft_mp_read_bin(&r, &b, &n); break;
		case 7: rc = weft_mp_read_bin_fixed(&r, fixed, 32); break;
		case 8: rc = weft_mp_read_array(&r, &n); break;
		case 9: rc = weft_mp_read_map(&r, &n); break;
		case 10: rc = weft_mp_skip(&r); break;
		case 11:
			rc = weft_mp_read(&r, &o);
			if (rc == 0)
				check((int)o.type == t);
			break;
		}
		if (rc) {
			/* Sticky, nothing consumed, later calls fail the same way. */
			check(rc == WEFT_EDECODE && r.err == rc && weft_mp_remaining(&r) == before);
			check(weft_mp_read_nil(&r) == rc && weft_mp_skip(&r) == rc);
			check(weft_mp_peek_type(&r) == -1 && !weft_mp_peek_nil(&r));
			return;
		}
		check(t >= 0 && weft_mp_remaining(&r) < before);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct weft_mp_reader r;
	struct weft_mpw w;
	size_t fl_inf = 0, fl_exact = 0, fl, skip_len = 0, walk_len = 0;
	int rc_inf, rc_exact, rc_skip, rc_walk, rc;

	rc_inf = weft_mp_frame_len(data, size, SIZE_MAX, &fl_inf);
	check(rc_inf == 0 || rc_inf == WEFT_EAGAIN || rc_inf == WEFT_EDECODE);
	rc_exact = weft_mp_frame_len(data, size, size, &fl_exact);
	/* With max = size, running out of bytes means too big, never EAGAIN. */
	check(rc_exact == 0 || rc_exact == WEFT_EDECODE || rc_exact == WEFT_ETOOBIG);

	weft_mp_reader_init(&r, data, size);
	rc_skip = weft_mp_skip(&r);
	if (rc_skip == 0)
		skip_len = size - weft_mp_remaining(&r);
	else
		check(rc_skip == WEFT_EDECODE && weft_mp_remaining(&r) == size);

	weft_mpw_init(&w);
	weft_mp_reader_init(&r, data, size);
	rc_walk = walk(&r, &w, 0);
	if (rc_walk == 0)
		walk_len = size - weft_mp_remaining(&r);

	/* All four agree on "complete object of this length". */
	check((rc_skip == 0) == (rc_walk == 0));
	check((rc_skip == 0) == (rc_inf == 0));
	check((rc_skip == 0) == (rc_exact == 0));
	if (rc_skip == 0) {
		check(skip_len == walk_len && skip_len == fl_inf && skip_len == fl_exact);
		check(skip_len >= 1 && skip_len <= size);
		/* Every shorter limit is too big; a cut-short buffer is incomplete. */
		check(weft_mp_frame_len(data, size, skip_len - 1, &fl) == WEFT_ETOOBIG);
		check(weft_mp_frame_len(data, skip_len - 1, SIZE_MAX, &fl) == WEFT_EAGAIN);
		check(weft_mp_frame_len(data, skip_len - 1, skip_len, &fl) == WEFT_EAGAIN);
		check(weft_mp_frame_len(data, skip_len / 2, SIZE_MAX, &fl) == WEFT_EAGAIN);

		/* The re-encoded copy is one complete object again. */
		check(w.len > 0);
		rc = weft_mp_frame_len(w.buf, w.len, SIZE_MAX, &fl);
		check(rc == 0 && fl == w.len);
		weft_mp_reader_init(&r, w.buf, w.len);
		check(weft_mp_skip(&r) == 0 && weft_mp_remaining(&r) == 0);
	} else if (rc_inf == WEFT_EDECODE) {
		/* Malformed can't become acceptable with a smaller limit. */
		check(rc_exact == WEFT_EDECODE || rc_exact == WEFT_ETOOBIG);
	} else {
		/* Incomplete without a limit: with max = size it is too big. */
		check(rc_inf == WEFT_EAGAIN);
		check(rc_exact == WEFT_ETOOBIG);
	}
	weft_mpw_free(&w);

	typed(data, size);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("WEFT_FUZZ_SEEDS");
	struct weft_mpw w;
	if (dir == NULL)
		return 0;
	weft_mpw_init(&w);
	/* Scalars of every width. */
	weft_mpw_array(&w, 12);
	weft_mpw_nil(&w);
	weft_mpw_bool(&w, true);
	weft_mpw_uint(&w, 5);
	weft_mpw_uint(&w, 200);
	weft_mpw_uint(&w, 70000);
	weft_mpw_uint(&w, UINT64_MAX);
	weft_mpw_int(&w, -3);
	weft_mpw_int(&w, -200);
	weft_mpw_int(&w, INT64_MIN);
	weft_mpw_double(&w, 1.5);
	weft_mpw_raw(&w, "\xca\x3f\xc0\x00\x00", 5); /* float32 */
	weft_mpw_raw(&w, "\xd6\x01\x00\x00\x00\x00", 6); /* fixext 4 */
	pf_write_file(dir, "scalars", w.buf, w.len);
	/* Strings and binaries around the 8/16-bit length boundaries. */
	weft_mpw_reset(&w);
	static char big[300];
	memset(big, 'x', sizeof(big));
	weft_mpw_map(&w, 3);
	weft_mpw_strn(&w, big, 31);
	weft_mpw_strn(&w, big, 32);
	weft_mpw_strn(&w, big, 256);
	weft_mpw_bin(&w, big, 255);
	weft_mpw_str(&w, "");
	weft_mpw_bin(&w, big, 0);
	pf_write_file(dir, "strings", w.buf, w.len);
	/* Nesting, 16-bit counts, a message as protocols send them. */
	weft_mpw_reset(&w);
	for (int i = 0; i < 8; i++)
		weft_mpw_array(&w, 1);
	weft_mpw_map(&w, 1);
	weft_mpw_uint(&w, 1);
	weft_mpw_array(&w, 20);
	for (int i = 0; i < 20; i++)
		weft_mpw_uint(&w, (uint64_t)i);
	pf_write_file(dir, "nested", w.buf, w.len);
	weft_mpw_reset(&w);
	weft_mpw_array(&w, 5);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 2);
	weft_mpw_uint(&w, 7);
	weft_mpw_bin(&w, "payload", 7);
	pf_write_file(dir, "message", w.buf, w.len);
	weft_mpw_free(&w);
	exit(0);
}
