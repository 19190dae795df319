/* mp.h - bounded MessagePack reader and growable writer.
 *
 * The reader never allocates and never trusts a declared length or count:
 * every string/binary length is checked against the bytes actually present,
 * and every array/map count against the bytes that could still hold that
 * many elements (each element takes at least one byte), before the caller
 * sees it.  weft_mp_skip and weft_mp_frame_len bound nesting at
 * WEFT_MP_MAX_DEPTH containers (each container, empty or not, is a level;
 * 32 is allowed); hand-written decoders are bounded by their own structure.
 * Errors are sticky: after the first failure every further read returns the
 * same error and consumes nothing (r->p stays at the object that failed), so
 * a decoder may read a whole message and check r->err once at the end.
 *
 * Strings and binaries returned by the reader point into the input buffer
 * and stay valid as long as that buffer does.
 *
 * The writer packs through msgpack-c's packer into a buffer it owns; it
 * aborts on out-of-memory (never returns NULL) like every weft _new(). */
#ifndef WEFT_MP_H
#define WEFT_MP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_MP_MAX_DEPTH 32

enum weft_mp_type {
	WEFT_MP_NIL,
	WEFT_MP_BOOL,
	WEFT_MP_UINT,   /* non-negative integer (any msgpack int encoding >= 0) */
	WEFT_MP_INT,    /* negative integer */
	WEFT_MP_FLOAT,  /* float32 or float64, widened to double */
	WEFT_MP_STR,
	WEFT_MP_BIN,
	WEFT_MP_ARRAY,
	WEFT_MP_MAP,
	WEFT_MP_EXT,
};

/* One decoded header.  For STR/BIN/EXT the payload has been consumed and
 * bytes/len describe it; for ARRAY/MAP only the header has been consumed and
 * count says how many elements (map: key/value pairs) follow. */
struct weft_mp_obj {
	enum weft_mp_type type;
	union {
		bool b;
		uint64_t u;
		int64_t i;
		double f;
		struct {
			const uint8_t *bytes;
			uint32_t len;
			int8_t ext_type;
		} s;
		uint32_t count;
	} v;
};

struct weft_mp_reader {
	const uint8_t *p;
	const uint8_t *end;
	int err; /* 0, or the first error (WEFT_EDECODE) */
};

void weft_mp_reader_init(struct weft_mp_reader *r, const void *buf, size_t len);
/* Bytes not yet consumed. */
size_t weft_mp_remaining(const struct weft_mp_reader *r);

/* Reads one object header (see struct weft_mp_obj).  0 or WEFT_EDECODE. */
int weft_mp_read(struct weft_mp_reader *r, struct weft_mp_obj *o);
/* Skips one complete object including nested elements.  0 or WEFT_EDECODE. */
int weft_mp_skip(struct weft_mp_reader *r);

/* Typed reads: fail with WEFT_EDECODE when the next object has another type
 * (or an integer does not fit).  Strings are not NUL-terminated. */
int weft_mp_read_nil(struct weft_mp_reader *r);
int weft_mp_read_bool(struct weft_mp_reader *r, bool *out);
int weft_mp_read_uint(struct weft_mp_reader *r, uint64_t *out);
int weft_mp_read_u32(struct weft_mp_reader *r, uint32_t *out);
int weft_mp_read_int(struct weft_mp_reader *r, int64_t *out);
int weft_mp_read_str(struct weft_mp_reader *r, const char **s, uint32_t *len);
int weft_mp_read_bin(struct weft_mp_reader *r, const uint8_t **b, uint32_t *len);
/* A binary of exactly len bytes, copied to out (e.g. a 32-byte digest). */
int weft_mp_read_bin_fixed(struct weft_mp_reader *r, void *out, size_t len);
int weft_mp_read_array(struct weft_mp_reader *r, uint32_t *count);
int weft_mp_read_map(struct weft_mp_reader *r, uint32_t *count);
/* True when the next object is nil (consumes nothing). */
bool weft_mp_peek_nil(const struct weft_mp_reader *r);
/* Type of the next object without consuming it; -1 at end or on error. */
int weft_mp_peek_type(const struct weft_mp_reader *r);

/* Finds where the first complete msgpack object in buf ends.
 * Returns 0 and sets *frame_len when buf starts with a complete object,
 * WEFT_EAGAIN when more bytes are needed, WEFT_EDECODE when the bytes can
 * never form a valid object (reserved byte 0xc1, nesting deeper than
 * WEFT_MP_MAX_DEPTH), WEFT_ETOOBIG when the object would be longer than max
 * (detected from declared lengths and counts, before the bytes arrive). */
int weft_mp_frame_len(const void *buf, size_t len, size_t max, size_t *frame_len);

/* A resumable frame finder for a stream (an RPC connection): feed it the
 * buffered bytes of the current frame, always from the frame's first byte,
 * as more arrive; it remembers how far it got, so a frame that arrives in
 * small pieces is examined once, not once per piece.  It finds only the
 * frame's extent (nesting is not bounded here: the frame's decoder bounds
 * it with weft_mp_skip and can answer the error).  Zero it, or call
 * weft_mp_framer_reset, before the first byte of a frame.  Returns as
 * weft_mp_frame_len; after any result but WEFT_EAGAIN it is reset. */
struct weft_mp_framer {
	size_t pos;
	uint64_t pending;
	unsigned depth;
	uint64_t left[WEFT_MP_MAX_DEPTH];
};
void weft_mp_framer_reset(struct weft_mp_framer *f);
int weft_mp_framer_next(struct weft_mp_framer *f, const void *buf, size_t len, size_t max, size_t *frame_len);

struct weft_mpw {
	uint8_t *buf;
	size_t len;
	size_t cap;
};

void weft_mpw_init(struct weft_mpw *w);
void weft_mpw_free(struct weft_mpw *w);   /* frees the buffer; w reusable */
void weft_mpw_reset(struct weft_mpw *w);  /* len = 0, keeps capacity */
/* Hands the buffer to the caller (free() it); w is left empty.  Returns
 * NULL with *len = 0 when nothing was written. */
uint8_t *weft_mpw_steal(struct weft_mpw *w, size_t *len);

void weft_mpw_nil(struct weft_mpw *w);
void weft_mpw_bool(struct weft_mpw *w, bool v);
void weft_mpw_uint(struct weft_mpw *w, uint64_t v);
void weft_mpw_int(struct weft_mpw *w, int64_t v);
void weft_mpw_double(struct weft_mpw *w, double v);
void weft_mpw_str(struct weft_mpw *w, const char *s);          /* NUL-terminated */
/* strn and bin abort() for lengths above UINT32_MAX (a caller bug). */
void weft_mpw_strn(struct weft_mpw *w, const char *s, size_t len);
void weft_mpw_bin(struct weft_mpw *w, const void *b, size_t len);
void weft_mpw_array(struct weft_mpw *w, uint32_t count);
void weft_mpw_map(struct weft_mpw *w, uint32_t count);
/* Appends already-encoded msgpack bytes verbatim. */
void weft_mpw_raw(struct weft_mpw *w, const void *b, size_t len);

#endif
