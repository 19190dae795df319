/* json.c - conversions between jansson JSON values and msgpack (weft/json.h):
 * JSON is written with the weft_mpw writer; msgpack is read with the bounded
 * weft_mp reader and turned into JSON.  msgpack has types JSON lacks (bin,
 * ext, uint64 above INT64_MAX, non-UTF-8 strings, non-string map keys);
 * json.h lists how each is shown.
 *
 * Both directions recurse at most WEFT_MP_MAX_DEPTH containers deep and never
 * allocate from a declared count: the reader has already checked each count
 * against the bytes present, and JSON containers grow as elements arrive.
 *
 * Also the JSON paths ('$.faults[2].kind') that the strict parsers of
 * weft-sim scenarios and weft-campaign manifests put in their errors. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"
#include "weft/json.h"
#include "weft/mp.h"
#include "weft/util.h"

/* ---- JSON -> msgpack ---- */

int weft_json_to_mp(struct weft_mpw *w, const json_t *v, unsigned int depth)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		/* jansson iterates only through non-const pointers; nothing is
		 * modified here. */
		json_t *obj = (json_t *)v;
		const char *key;
		size_t klen;
		json_t *val;
		size_t n = json_object_size(obj);
		if (depth >= WEFT_MP_MAX_DEPTH || n > UINT32_MAX)
			return WEFT_ETOOBIG;
		weft_mpw_map(w, (uint32_t)n);
		/* Keys may hold NUL bytes (jansson 2.14): use their stored length. */
		json_object_keylen_foreach(obj, key, klen, val) {
			if (klen > UINT32_MAX)
				return WEFT_ETOOBIG;
			weft_mpw_strn(w, key, klen);
			int rc = weft_json_to_mp(w, val, depth + 1);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		if (depth >= WEFT_MP_MAX_DEPTH || n > UINT32_MAX)
			return WEFT_ETOOBIG;
		weft_mpw_array(w, (uint32_t)n);
		for (size_t i = 0; i < n; i++) {
			int rc = weft_json_to_mp(w, json_array_get(v, i), depth + 1);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	case JSON_STRING: {
		size_t n = json_string_length(v);
		if (n > UINT32_MAX)
			return WEFT_ETOOBIG;
		weft_mpw_strn(w, json_string_value(v), n);
		return 0;
	}
	case JSON_INTEGER: {
		json_int_t i = json_integer_value(v);
		if (i >= 0)
			weft_mpw_uint(w, (uint64_t)i);
		else
			weft_mpw_int(w, (int64_t)i);
		return 0;
	}
	case JSON_REAL:
		weft_mpw_double(w, json_real_value(v));
		return 0;
	case JSON_TRUE:
		weft_mpw_bool(w, true);
		return 0;
	case JSON_FALSE:
		weft_mpw_bool(w, false);
		return 0;
	case JSON_NULL:
		weft_mpw_nil(w);
		return 0;
	}
	return WEFT_EINVAL;
}

/* ---- helpers ---- */

int weft_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned char c = p[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0; /* continuation byte, 0xc0/0xc1 or 0xf5.. */
		}
		if (len - i - 1 < n)
			return 0;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000))
			return 0; /* overlong */
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

/* jansson returns NULL only on out-of-memory for these constructors once the
 * input is known to be valid; weft aborts on OOM. */
static json_t *must(json_t *v)
{
	if (!v)
		abort();
	return v;
}

json_t *weft_json_hex_string(const void *bytes, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = bytes;
	char *s = weft_xmalloc(2 + 2 * len + 1);

	s[0] = '0';
	s[1] = 'x';
	for (size_t i = 0; i < len; i++) {
		s[2 + 2 * i] = digits[b[i] >> 4];
		s[3 + 2 * i] = digits[b[i] & 0x0f];
	}
	s[2 + 2 * len] = '\0';
	json_t *v = must(json_stringn_nocheck(s, 2 + 2 * len));
	free(s);
	return v;
}

/* A str payload as JSON: itself when it is UTF-8, hex otherwise. */
static json_t *str_to_json(const uint8_t *bytes, uint32_t len)
{
	if (weft_utf8_valid((const char *)bytes, len))
		return must(json_stringn_nocheck((const char *)bytes, len));
	return weft_json_hex_string(bytes, len);
}

static json_t *uint_to_json(uint64_t u)
{
	if (u <= (uint64_t)INT64_MAX)
		return must(json_integer((json_int_t)u));
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, u);
	return must(json_stringn_nocheck(buf, (size_t)n));
}

static json_t *float_to_json(double f)
{
	if (isnan(f))
		return must(json_string("NaN"));
	if (isinf(f))
		return must(json_string(f > 0 ? "Infinity" : "-Infinity"));
	return must(json_real(f));
}

/* ---- msgpack -> JSON ---- */

static int mp_to_json(struct weft_mp_reader *r, json_t **out, unsigned int depth);

/* The longest JSON text a non-string map key may turn into.  A key that is
 * a map holding a map key is written with that inner key's text escaped in
 * it, which doubles its quotes and backslashes: without a bound, each level
 * of nesting doubles the work and the memory, and a 100-byte frame of
 * nested one-pair maps asks for gigabytes.  Keys that JSON cannot show as a
 * short text fail as too big. */
#define MAX_KEY_TEXT 256

/* Turns a converted map key into the text used as the JSON object key.
 * Sets *key and *klen; *owned is a buffer to free (or NULL).  0, or
 * WEFT_ETOOBIG for a key whose text would exceed MAX_KEY_TEXT bytes. */
static int key_text(json_t *k, const char **key, size_t *klen, char **owned)
{
	*owned = NULL;
	if (json_is_string(k)) {
		*key = json_string_value(k);
		*klen = json_string_length(k);
		return 0;
	}
	*owned = json_dumps(k, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!*owned)
		abort();
	*key = *owned;
	*klen = strlen(*owned);
	if (*klen > MAX_KEY_TEXT) {
		free(*owned);
		*owned = NULL;
		return WEFT_ETOOBIG;
	}
	return 0;
}

static int map_to_json(struct weft_mp_reader *r, uint32_t count, json_t **out, unsigned int depth)
{
	json_t *obj = must(json_object());

	for (uint32_t i = 0; i < count; i++) {
		json_t *k = NULL, *v = NULL;
		const char *key = NULL;
		size_t klen = 0;
		char *owned = NULL;
		int rc;

		rc = mp_to_json(r, &k, depth + 1);
		if (rc == 0)
			rc = key_text(k, &key, &klen, &owned);
		if (rc == 0)
			rc = mp_to_json(r, &v, depth + 1);
		if (rc < 0) {
			free(owned);
			json_decref(k);
			json_decref(obj);
			return rc;
		}
		/* Valid UTF-8 by construction: strings were checked, hex and
		 * json_dumps output are ASCII/UTF-8. */
		if (json_object_setn_new_nocheck(obj, key, klen, v) < 0)
			abort();
		free(owned);
		json_decref(k);
	}
	*out = obj;
	return 0;
}

static int array_to_json(struct weft_mp_reader *r, uint32_t count, json_t **out, unsigned int depth)
{
	json_t *arr = must(json_array());

	for (uint32_t i = 0; i < count; i++) {
		json_t *v;
		int rc = mp_to_json(r, &v, depth + 1);
		if (rc < 0) {
			json_decref(arr);
			return rc;
		}
		if (json_array_append_new(arr, v) < 0)
			abort();
	}
	*out = arr;
	return 0;
}

/* depth: containers enclosing the value about to be read. */
static int mp_to_json(struct weft_mp_reader *r, json_t **out, unsigned int depth)
{
	struct weft_mp_obj o;
	int rc;

	*out = NULL;
	rc = weft_mp_read(r, &o);
	if (rc < 0)
		return rc;
	switch (o.type) {
	case WEFT_MP_NIL:
		*out = must(json_null());
		return 0;
	case WEFT_MP_BOOL:
		*out = must(json_boolean(o.v.b));
		return 0;
	case WEFT_MP_UINT:
		*out = uint_to_json(o.v.u);
		return 0;
	case WEFT_MP_INT:
		*out = must(json_integer((json_int_t)o.v.i));
		return 0;
	case WEFT_MP_FLOAT:
		*out = float_to_json(o.v.f);
		return 0;
	case WEFT_MP_STR:
		*out = str_to_json(o.v.s.bytes, o.v.s.len);
		return 0;
	case WEFT_MP_BIN:
		*out = weft_json_hex_string(o.v.s.bytes, o.v.s.len);
		return 0;
	case WEFT_MP_EXT: {
		/* Its JSON is an object: a container, so the depth limit holds
		 * for it as for a map (else the JSON would not convert back). */
		if (depth >= WEFT_MP_MAX_DEPTH)
			return WEFT_ETOOBIG;
		json_t *e = must(json_object());
		if (json_object_set_new(e, "ext_type", must(json_integer(o.v.s.ext_type))) < 0 ||
		    json_object_set_new(e, "data", weft_json_hex_string(o.v.s.bytes, o.v.s.len)) < 0)
			abort();
		*out = e;
		return 0;
	}
	case WEFT_MP_ARRAY:
		if (depth >= WEFT_MP_MAX_DEPTH)
			return WEFT_ETOOBIG;
		return array_to_json(r, o.v.count, out, depth);
	case WEFT_MP_MAP:
		if (depth >= WEFT_MP_MAX_DEPTH)
			return WEFT_ETOOBIG;
		return map_to_json(r, o.v.count, out, depth);
	}
	return WEFT_EDECODE;
}

int weft_mp_to_json(struct weft_mp_reader *r, json_t **out)
{
	int rc = mp_to_json(r, out, 0);
	if (rc == 0 && r->err < 0) {
		/* Defensive: the reader's errors are sticky; never hand out a
		 * value built after one. */
		json_decref(*out);
		*out = NULL;
		rc = r->err;
	}
	return rc;
}

int weft_mp_buf_to_json(const void *buf, size_t len, json_t **out)
{
	struct weft_mp_reader r;

	weft_mp_reader_init(&r, buf, len);
	int rc = weft_mp_to_json(&r, out);
	if (rc == 0 && weft_mp_remaining(&r) != 0) {
		json_decref(*out);
		*out = NULL;
		rc = WEFT_EDECODE;
	}
	return rc;
}

static const char *path_done(char *buf, int k)
{
	if (k < 0 || k >= WEFT_JSON_PATH_MAX)
		memcpy(buf + WEFT_JSON_PATH_MAX - 4, "...", 4);
	return buf;
}

const char *weft_json_path_key(char *buf, const char *path, const char *key)
{
	return path_done(buf, snprintf(buf, WEFT_JSON_PATH_MAX, "%s.%s", path, key));
}

const char *weft_json_path_index(char *buf, const char *path, size_t i)
{
	return path_done(buf, snprintf(buf, WEFT_JSON_PATH_MAX, "%s[%zu]", path, i));
}
