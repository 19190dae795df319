/* mp.c - bounded MessagePack reader and growable writer (see weft/mp.h).
 *
 * The reader is the one place where untrusted bytes from peers and RPC
 * clients become values, so it is written to be obviously bounded: it never
 * allocates, every declared length is compared with the bytes present before
 * the read position moves, and skip/frame_len/the framer walk nested
 * objects with counters (no recursion), so their cost is linear in the bytes
 * examined and their stack use is fixed.
 *
 * One header decoder (decode_head) serves weft_mp_read, the typed reads,
 * the peeks, weft_mp_skip, weft_mp_frame_len and the framer, so they cannot disagree
 * about what a byte means.
 *
 * Reader invariant on failure: r->p is left at the start of the object that
 * could not be read (a failed read or skip consumes nothing), and r->err
 * holds the first error; every later call returns it.
 *
 * The writer packs through msgpack-c's packer (smallest encodings) into a
 * buffer it owns, growing it by doubling; it aborts on out-of-memory. */
#include "weft/mp.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"

/* Stores a signed value as UINT when it is >= 0, as INT otherwise, so that
 * the object's type never depends on the encoding the sender chose. */
static inline void set_signed(struct weft_mp_obj *o, int64_t v)
{
	if (v >= 0) {
		o->type = WEFT_MP_UINT;
		o->v.u = (uint64_t)v;
	} else {
		o->type = WEFT_MP_INT;
		o->v.i = v;
	}
}

static inline void set_span(struct weft_mp_obj *o, enum weft_mp_type t, const uint8_t *bytes,
			    uint32_t len, int8_t ext_type)
{
	o->type = t;
	o->v.s.bytes = bytes;
	o->v.s.len = len;
	o->v.s.ext_type = ext_type;
}

/* Decodes the object header at p, where n >= 1 bytes are available.
 * Always sets *hlen to the size of the header (first byte, length/count
 * fields, ext type, and the whole value for scalars).  Returns
 *   0            header complete; o filled.  For STR/BIN/EXT, v.s.len is the
 *                declared payload length and v.s.bytes = p + *hlen, but the
 *                payload itself has NOT been checked against n;
 *   WEFT_EAGAIN  fewer than *hlen bytes available (o unspecified);
 *   WEFT_EDECODE reserved byte 0xc1. */
static inline int decode_head(const uint8_t *p, size_t n, struct weft_mp_obj *o, size_t *hlen)
{
	uint8_t c = p[0];

	*hlen = 1;
	if (c <= 0x7f) {
		o->type = WEFT_MP_UINT;
		o->v.u = c;
		return 0;
	}
	if (c >= 0xe0) {
		o->type = WEFT_MP_INT;
		o->v.i = (int8_t)c;
		return 0;
	}
	if (c <= 0x8f) {
		o->type = WEFT_MP_MAP;
		o->v.count = c & 0x0f;
		return 0;
	}
	if (c <= 0x9f) {
		o->type = WEFT_MP_ARRAY;
		o->v.count = c & 0x0f;
		return 0;
	}
	if (c <= 0xbf) {
		set_span(o, WEFT_MP_STR, p + 1, c & 0x1f, 0);
		return 0;
	}

/* The header is k bytes long; give up unless all k are here. */
#define NEED(k)                          \
	do {                             \
		*hlen = (k);             \
		if (n < (k))             \
			return WEFT_EAGAIN; \
	} while (0)

	switch (c) {
	case 0xc0:
		o->type = WEFT_MP_NIL;
		return 0;
	case 0xc1:
		return WEFT_EDECODE;
	case 0xc2:
	case 0xc3:
		o->type = WEFT_MP_BOOL;
		o->v.b = c == 0xc3;
		return 0;
	case 0xc4:
		NEED(2);
		set_span(o, WEFT_MP_BIN, p + 2, p[1], 0);
		return 0;
	case 0xc5:
		NEED(3);
		set_span(o, WEFT_MP_BIN, p + 3, weft_be16_get(p + 1), 0);
		return 0;
	case 0xc6:
		NEED(5);
		set_span(o, WEFT_MP_BIN, p + 5, weft_be32_get(p + 1), 0);
		return 0;
	case 0xc7:
		NEED(3);
		set_span(o, WEFT_MP_EXT, p + 3, p[1], (int8_t)p[2]);
		return 0;
	case 0xc8:
		NEED(4);
		set_span(o, WEFT_MP_EXT, p + 4, weft_be16_get(p + 1), (int8_t)p[3]);
		return 0;
	case 0xc9:
		NEED(6);
		set_span(o, WEFT_MP_EXT, p + 6, weft_be32_get(p + 1), (int8_t)p[5]);
		return 0;
	case 0xca: {
		uint32_t bits;
		float f;
		NEED(5);
		bits = weft_be32_get(p + 1);
		memcpy(&f, &bits, sizeof f);
		o->type = WEFT_MP_FLOAT;
		o->v.f = f;
		return 0;
	}
	case 0xcb: {
		uint64_t bits;
		double d;
		NEED(9);
		bits = weft_be64_get(p + 1);
		memcpy(&d, &bits, sizeof d);
		o->type = WEFT_MP_FLOAT;
		o->v.f = d;
		return 0;
	}
	case 0xcc:
		NEED(2);
		o->type = WEFT_MP_UINT;
		o->v.u = p[1];
		return 0;
	case 0xcd:
		NEED(3);
		o->type = WEFT_MP_UINT;
		o->v.u = weft_be16_get(p + 1);
		return 0;
	case 0xce:
		NEED(5);
		o->type = WEFT_MP_UINT;
		o->v.u = weft_be32_get(p + 1);
		return 0;
	case 0xcf:
		NEED(9);
		o->type = WEFT_MP_UINT;
		o->v.u = weft_be64_get(p + 1);
		return 0;
	case 0xd0:
		NEED(2);
		set_signed(o, (int8_t)p[1]);
		return 0;
	case 0xd1:
		NEED(3);
		set_signed(o, (int16_t)weft_be16_get(p + 1));
		return 0;
	case 0xd2:
		NEED(5);
		set_signed(o, (int32_t)weft_be32_get(p + 1));
		return 0;
	case 0xd3:
		NEED(9);
		set_signed(o, (int64_t)weft_be64_get(p + 1));
		return 0;
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xd7:
	case 0xd8:
		/* fixext 1, 2, 4, 8, 16: type byte, then 1 << (c - 0xd4) bytes. */
		NEED(2);
		set_span(o, WEFT_MP_EXT, p + 2, 1u << (c - 0xd4), (int8_t)p[1]);
		return 0;
	case 0xd9:
		NEED(2);
		set_span(o, WEFT_MP_STR, p + 2, p[1], 0);
		return 0;
	case 0xda:
		NEED(3);
		set_span(o, WEFT_MP_STR, p + 3, weft_be16_get(p + 1), 0);
		return 0;
	case 0xdb:
		NEED(5);
		set_span(o, WEFT_MP_STR, p + 5, weft_be32_get(p + 1), 0);
		return 0;
	case 0xdc:
		NEED(3);
		o->type = WEFT_MP_ARRAY;
		o->v.count = weft_be16_get(p + 1);
		return 0;
	case 0xdd:
		NEED(5);
		o->type = WEFT_MP_ARRAY;
		o->v.count = weft_be32_get(p + 1);
		return 0;
	case 0xde:
		NEED(3);
		o->type = WEFT_MP_MAP;
		o->v.count = weft_be16_get(p + 1);
		return 0;
	case 0xdf:
		NEED(5);
		o->type = WEFT_MP_MAP;
		o->v.count = weft_be32_get(p + 1);
		return 0;
	}
#undef NEED
	/* Unreachable: every byte value is covered above. */
	return WEFT_EDECODE;
}

/* ---- reader -------------------------------------------------------------- */

static inline int fail(struct weft_mp_reader *r, int code)
{
	if (!r->err)
		r->err = code;
	return r->err;
}

void weft_mp_reader_init(struct weft_mp_reader *r, const void *buf, size_t len)
{
	r->p = buf;
	r->end = len ? r->p + len : r->p; /* no arithmetic on a NULL buf */
	r->err = 0;
}

size_t weft_mp_remaining(const struct weft_mp_reader *r)
{
	return (size_t)(r->end - r->p);
}

int weft_mp_read(struct weft_mp_reader *r, struct weft_mp_obj *o)
{
	size_t n, hlen;

	if (r->err)
		return r->err;
	n = (size_t)(r->end - r->p);
	if (n == 0 || decode_head(r->p, n, o, &hlen) != 0)
		return fail(r, WEFT_EDECODE);
	n -= hlen;
	switch (o->type) {
	case WEFT_MP_STR:
	case WEFT_MP_BIN:
	case WEFT_MP_EXT:
		if (o->v.s.len > n)
			return fail(r, WEFT_EDECODE);
		hlen += o->v.s.len;
		break;
	case WEFT_MP_ARRAY:
		/* Each element takes at least one byte. */
		if (o->v.count > n)
			return fail(r, WEFT_EDECODE);
		break;
	case WEFT_MP_MAP:
		if (2 * (uint64_t)o->v.count > n)
			return fail(r, WEFT_EDECODE);
		break;
	case WEFT_MP_NIL:
	case WEFT_MP_BOOL:
	case WEFT_MP_UINT:
	case WEFT_MP_INT:
	case WEFT_MP_FLOAT:
		break;
	}
	r->p += hlen;
	return 0;
}

/* Walks the first object in buf[0..n), which must not be longer than max
 * bytes, resuming where an earlier call on the same buffer start stopped
 * (s->pos is always an element boundary, so bytes before it are never
 * examined again and a frame that arrives in pieces costs linear time).
 * s->pending counts the elements not yet started at all levels (root
 * included); since every element takes at least one byte, pos + pending <=
 * max holds between elements or the object is provably too big.  With
 * bound_depth, s->left[d] counts the elements of the d-th open container
 * not yet started, and more than WEFT_MP_MAX_DEPTH open containers (each
 * container, even an empty one, is a level) is an error; without it only
 * the object's extent is found.
 *
 * Returns 0 and *out (s is reset), WEFT_EAGAIN (more bytes needed; s keeps
 * its place), WEFT_EDECODE (0xc1, too deep) or WEFT_ETOOBIG (cannot fit). */
static int scan(struct weft_mp_framer *s, const uint8_t *buf, size_t n, size_t max, bool bound_depth, size_t *out)
{
	struct weft_mp_obj o;
	size_t hlen;
	uint64_t room, k;

	if (max == 0)
		return WEFT_ETOOBIG;
	if (s->pending == 0) {
		s->pos = 0;
		s->depth = 0;
		s->pending = 1;
	}
	for (;;) {
		size_t pos = s->pos;
		if (pos >= n)
			return WEFT_EAGAIN;
		int rc = decode_head(buf + pos, n - pos, &o, &hlen);
		if (rc == WEFT_EDECODE)
			return rc;
		/* This element starts here; the bytes it may use leave one for
		 * each of the others still pending (>= 1 by the invariant). */
		uint64_t pending = s->pending - 1;
		room = (uint64_t)(max - pos) - pending;
		if (hlen > room)
			return WEFT_ETOOBIG;
		if (rc != 0)
			return WEFT_EAGAIN;
		pos += hlen;
		room -= hlen;
		k = 0;
		switch (o.type) {
		case WEFT_MP_STR:
		case WEFT_MP_BIN:
		case WEFT_MP_EXT:
			if (o.v.s.len > room)
				return WEFT_ETOOBIG;
			if (o.v.s.len > n - pos)
				return WEFT_EAGAIN;
			pos += o.v.s.len;
			break;
		case WEFT_MP_ARRAY:
		case WEFT_MP_MAP:
			if (bound_depth && s->depth == WEFT_MP_MAX_DEPTH)
				return WEFT_EDECODE;
			k = o.type == WEFT_MP_MAP ? 2 * (uint64_t)o.v.count : o.v.count;
			if (k > room)
				return WEFT_ETOOBIG;
			break;
		case WEFT_MP_NIL:
		case WEFT_MP_BOOL:
		case WEFT_MP_UINT:
		case WEFT_MP_INT:
		case WEFT_MP_FLOAT:
			break;
		}
		/* The element is whole: commit it to the state. */
		if (bound_depth) {
			if (s->depth > 0)
				s->left[s->depth - 1]--;
			if (k > 0)
				s->left[s->depth++] = k;
			/* Close every container whose last element has now
			 * started and (being on top) finished. */
			while (s->depth > 0 && s->left[s->depth - 1] == 0)
				s->depth--;
		}
		s->pending = pending + k;
		s->pos = pos;
		if (s->pending == 0) {
			*out = pos;
			return 0;
		}
	}
}

int weft_mp_skip(struct weft_mp_reader *r)
{
	struct weft_mp_framer s = {0};
	size_t n, len;

	if (r->err)
		return r->err;
	n = (size_t)(r->end - r->p);
	/* With max = n, "too big" and "incomplete" both mean truncated. */
	if (scan(&s, r->p, n, n, true, &len) != 0)
		return fail(r, WEFT_EDECODE);
	r->p += len;
	return 0;
}

int weft_mp_frame_len(const void *buf, size_t len, size_t max, size_t *frame_len)
{
	struct weft_mp_framer s = {0};
	size_t n = len < max ? len : max;
	int rc;

	if (n == 0)
		return max == 0 ? WEFT_ETOOBIG : WEFT_EAGAIN;
	rc = scan(&s, buf, n, max, true, frame_len);
	/* Out of bytes at max: the object needs more than max.  (scan's own
	 * bounds make this unreachable; kept as a guard.) */
	if (rc == WEFT_EAGAIN && n >= max)
		rc = WEFT_ETOOBIG;
	return rc;
}

void weft_mp_framer_reset(struct weft_mp_framer *f)
{
	f->pending = 0;
}

int weft_mp_framer_next(struct weft_mp_framer *f, const void *buf, size_t len, size_t max, size_t *frame_len)
{
	size_t n = len < max ? len : max;
	int rc = scan(f, buf, n, max, false, frame_len);
	if (rc == WEFT_EAGAIN && n >= max)
		rc = WEFT_ETOOBIG;
	if (rc != WEFT_EAGAIN)
		f->pending = 0;
	return rc;
}

/* Typed reads.  On a type mismatch or an integer that does not fit, the
 * sticky error is set and r->p is put back at the start of the offending
 * object: nothing is consumed (not that it matters to a caller, since every
 * later read fails with the same error). */

static inline int read_type(struct weft_mp_reader *r, struct weft_mp_obj *o, enum weft_mp_type t)
{
	const uint8_t *start = r->p;
	int rc = weft_mp_read(r, o);

	if (rc)
		return rc;
	if (o->type != t) {
		r->p = start;
		return fail(r, WEFT_EDECODE);
	}
	return 0;
}

int weft_mp_read_nil(struct weft_mp_reader *r)
{
	struct weft_mp_obj o;

	return read_type(r, &o, WEFT_MP_NIL);
}

int weft_mp_read_bool(struct weft_mp_reader *r, bool *out)
{
	struct weft_mp_obj o;
	int rc = read_type(r, &o, WEFT_MP_BOOL);

	if (rc == 0)
		*out = o.v.b;
	return rc;
}

int weft_mp_read_uint(struct weft_mp_reader *r, uint64_t *out)
{
	struct weft_mp_obj o;
	int rc = read_type(r, &o, WEFT_MP_UINT);

	if (rc == 0)
		*out = o.v.u;
	return rc;
}

int weft_mp_read_u32(struct weft_mp_reader *r, uint32_t *out)
{
	const uint8_t *start = r->p;
	uint64_t v;
	int rc = weft_mp_read_uint(r, &v);

	if (rc)
		return rc;
	if (v > UINT32_MAX) {
		r->p = start;
		return fail(r, WEFT_EDECODE);
	}
	*out = (uint32_t)v;
	return 0;
}

int weft_mp_read_int(struct weft_mp_reader *r, int64_t *out)
{
	const uint8_t *start = r->p;
	struct weft_mp_obj o;
	int rc = weft_mp_read(r, &o);

	if (rc)
		return rc;
	if (o.type == WEFT_MP_INT) {
		*out = o.v.i;
		return 0;
	}
	if (o.type == WEFT_MP_UINT && o.v.u <= INT64_MAX) {
		*out = (int64_t)o.v.u;
		return 0;
	}
	r->p = start;
	return fail(r, WEFT_EDECODE);
}

int weft_mp_read_str(struct weft_mp_reader *r, const char **s, uint32_t *len)
{
	struct weft_mp_obj o;
	int rc = read_type(r, &o, WEFT_MP_STR);

	if (rc == 0) {
		*s = (const char *)o.v.s.bytes;
		*len = o.v.s.len;
	}
	return rc;
}

int weft_mp_read_bin(struct weft_mp_reader *r, const uint8_t **b, uint32_t *len)
{
	struct weft_mp_obj o;
	int rc = read_type(r, &o, WEFT_MP_BIN);

	if (rc == 0) {
		*b = o.v.s.bytes;
		*len = o.v.s.len;
	}
	return rc;
}

int weft_mp_read_bin_fixed(struct weft_mp_reader *r, void *out, size_t len)
{
	const uint8_t *start = r->p;
	struct weft_mp_obj o;
	int rc = read_type(r, &o, WEFT_MP_BIN);

	if (rc)
		return rc;
	if (o.v.s.len != len) {
		r->p = start;
		return fail(r, WEFT_EDECODE);
	}
	if (len)
		memcpy(out, o.v.s.bytes, len);
	return 0;
}

int weft_mp_read_array(struct weft_mp_reader *r, uint32_t *count)
{
	struct weft_mp_obj o;
	int rc = read_type(r, &o, WEFT_MP_ARRAY);

	if (rc == 0)
		*count = o.v.count;
	return rc;
}

int weft_mp_read_map(struct weft_mp_reader *r, uint32_t *count)
{
	struct weft_mp_obj o;
	int rc = read_type(r, &o, WEFT_MP_MAP);

	if (rc == 0)
		*count = o.v.count;
	return rc;
}

bool weft_mp_peek_nil(const struct weft_mp_reader *r)
{
	return !r->err && r->p < r->end && *r->p == 0xc0;
}

/* Decided from the header alone: a string whose payload is cut short still
 * peeks as WEFT_MP_STR, and the read that follows fails. */
int weft_mp_peek_type(const struct weft_mp_reader *r)
{
	struct weft_mp_obj o;
	size_t hlen;

	if (r->err || r->p >= r->end)
		return -1;
	if (decode_head(r->p, (size_t)(r->end - r->p), &o, &hlen) != 0)
		return -1;
	return (int)o.type;
}

/* ---- writer -------------------------------------------------------------- */

#define MPW_MIN_CAP 64

static void mpw_append(struct weft_mpw *w, const void *b, size_t len)
{
	if (len == 0)
		return;
	if (len > w->cap - w->len) {
		size_t need = w->len + len;
		size_t cap = w->cap ? w->cap : MPW_MIN_CAP;
		uint8_t *nb;

		if (need < w->len) /* size_t overflow */
			abort();
		while (cap < need) {
			if (cap > SIZE_MAX / 2) {
				cap = need;
				break;
			}
			cap *= 2;
		}
		nb = realloc(w->buf, cap);
		if (!nb)
			abort();
		w->buf = nb;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, b, len);
	w->len += len;
}

static int mpw_write_cb(void *data, const char *buf, size_t len)
{
	mpw_append(data, buf, len);
	return 0;
}

static inline void mpw_packer(struct weft_mpw *w, msgpack_packer *pk)
{
	msgpack_packer_init(pk, w, mpw_write_cb);
}

void weft_mpw_init(struct weft_mpw *w)
{
	w->buf = NULL;
	w->len = 0;
	w->cap = 0;
}

void weft_mpw_free(struct weft_mpw *w)
{
	free(w->buf);
	weft_mpw_init(w);
}

void weft_mpw_reset(struct weft_mpw *w)
{
	w->len = 0;
}

/* Returns NULL (and *len = 0) when nothing has been written since the last
 * init/reset/steal, freeing any buffer w held; otherwise the malloc'd buffer
 * of *len bytes, which the caller frees.  Either way w is left empty and
 * reusable, as after weft_mpw_init. */
uint8_t *weft_mpw_steal(struct weft_mpw *w, size_t *len)
{
	uint8_t *b = w->buf;

	*len = w->len;
	if (w->len == 0) {
		free(b);
		b = NULL;
	}
	weft_mpw_init(w);
	return b;
}

void weft_mpw_nil(struct weft_mpw *w)
{
	msgpack_packer pk;

	mpw_packer(w, &pk);
	msgpack_pack_nil(&pk);
}

void weft_mpw_bool(struct weft_mpw *w, bool v)
{
	msgpack_packer pk;

	mpw_packer(w, &pk);
	if (v)
		msgpack_pack_true(&pk);
	else
		msgpack_pack_false(&pk);
}

void weft_mpw_uint(struct weft_mpw *w, uint64_t v)
{
	msgpack_packer pk;

	mpw_packer(w, &pk);
	msgpack_pack_uint64(&pk, v);
}

void weft_mpw_int(struct weft_mpw *w, int64_t v)
{
	msgpack_packer pk;

	mpw_packer(w, &pk);
	msgpack_pack_int64(&pk, v);
}

void weft_mpw_double(struct weft_mpw *w, double v)
{
	msgpack_packer pk;

	mpw_packer(w, &pk);
	msgpack_pack_double(&pk, v);
}

void weft_mpw_str(struct weft_mpw *w, const char *s)
{
	weft_mpw_strn(w, s, strlen(s));
}

/* Lengths above UINT32_MAX cannot be encoded; msgpack-c would silently
 * truncate them, so they abort instead (a caller bug, never peer input). */
void weft_mpw_strn(struct weft_mpw *w, const char *s, size_t len)
{
	msgpack_packer pk;

	if (len > UINT32_MAX)
		abort();
	mpw_packer(w, &pk);
	msgpack_pack_str(&pk, len);
	msgpack_pack_str_body(&pk, s, len);
}

void weft_mpw_bin(struct weft_mpw *w, const void *b, size_t len)
{
	msgpack_packer pk;

	if (len > UINT32_MAX)
		abort();
	mpw_packer(w, &pk);
	msgpack_pack_bin(&pk, len);
	msgpack_pack_bin_body(&pk, b, len);
}

void weft_mpw_array(struct weft_mpw *w, uint32_t count)
{
	msgpack_packer pk;

	mpw_packer(w, &pk);
	msgpack_pack_array(&pk, count);
}

void weft_mpw_map(struct weft_mpw *w, uint32_t count)
{
	msgpack_packer pk;

	mpw_packer(w, &pk);
	msgpack_pack_map(&pk, count);
}

void weft_mpw_raw(struct weft_mpw *w, const void *b, size_t len)
{
	mpw_append(w, b, len);
}
