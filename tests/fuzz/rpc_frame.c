/* tests/fuzz/rpc_frame.c - libFuzzer target for the pieces of the RPC
 * request path that need no server (the server itself: rpc_server.c):
 * the input is a byte stream as a client sends it.
 *
 * 1. Framing.  The stream is cut into frames with the resumable framer
 *    (weft_mp_framer_next, max 4096) fed in growing pieces as a socket
 *    would deliver them (piece sizes taken from the stream), checked
 *    against weft_mp_frame_len on the same bytes: a resumed scan must give
 *    what a scan from scratch gives, and the framer (which does not bound
 *    nesting) must agree with weft_mp_frame_len whenever that did not
 *    refuse the bytes.
 * 2. Requests.  Each frame is read as a MessagePack-RPC message,
 *    [0, msgid, method, params] / [2, method, params], with the bounded
 *    reader, as the server's decoder does.
 * 3. JSON (src/lib/json.c, weft-cli's view of params and results): every
 *    frame converts to JSON (weft_mp_buf_to_json) and back
 *    (weft_json_to_mp), and the JSON of the copy must equal the first
 *    JSON: one conversion reaches a fixed point.  Every str in a frame is
 *    checked with weft_utf8_valid against a reference UTF-8 validator.
 * abort()s on any disagreement.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes request streams and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/protofuzz.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/mp.h"

#define MAX_FRAME 4096

/* Reference validator: RFC 3629 (no overlongs, surrogates, > U+10FFFF). */
static int utf8_ref(const uint8_t *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		uint8_t c = s[i];
		size_t n;
		uint32_t cp, min;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return 0;
		}
		if (len - i <= n)
			return 0;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

/* Checks every str in one value against the reference. */
static int walk_strs(struct weft_mp_reader *r, int depth)
{
	struct weft_mp_obj o;
	uint64_t n = 0;
	if (weft_mp_read(r, &o) != 0)
		return -1;
	if (o.type == WEFT_MP_STR)
		pf_check(!weft_utf8_valid((const char *)o.v.s.bytes, o.v.s.len) ==
				 !utf8_ref(o.v.s.bytes, o.v.s.len),
			 "weft_utf8_valid agrees with the reference");
	if (o.type == WEFT_MP_ARRAY)
		n = o.v.count;
	if (o.type == WEFT_MP_MAP)
		n = 2 * (uint64_t)o.v.count;
	if (n && depth >= WEFT_MP_MAX_DEPTH)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		if (walk_strs(r, depth + 1) != 0)
			return -1;
	return 0;
}

/* Reads one message as the server would; returns its kind or -1. */
static int read_message(const uint8_t *f, size_t len)
{
	struct weft_mp_reader r;
	uint32_t count, plen;
	uint64_t type, msgid;
	const char *method;
	weft_mp_reader_init(&r, f, len);
	if (weft_mp_read_array(&r, &count) || count < 3 || count > 4 || weft_mp_read_uint(&r, &type))
		return -1;
	if (type == 0 && (count != 4 || weft_mp_read_uint(&r, &msgid)))
		return -1;
	if (type == 2 && count != 3)
		return -1;
	if (weft_mp_peek_type(&r) == WEFT_MP_BIN) {
		const uint8_t *b;
		if (weft_mp_read_bin(&r, &b, &plen))
			return -1;
	} else if (weft_mp_read_str(&r, &method, &plen)) {
		return -1;
	}
	if (weft_mp_read_array(&r, &plen))
		return -1;
	/* Named parameters: one map of str keys. */
	if (plen == 1 && weft_mp_peek_type(&r) == WEFT_MP_MAP) {
		uint32_t pairs;
		pf_check(weft_mp_read_map(&r, &pairs) == 0, "peeked map reads");
		for (uint32_t i = 0; i < pairs; i++) {
			const char *k;
			uint32_t kl;
			if (weft_mp_read_str(&r, &k, &kl) || weft_mp_skip(&r))
				return -1;
		}
	} else {
		for (uint32_t i = 0; i < plen; i++)
			if (weft_mp_skip(&r))
				return -1;
	}
	return weft_mp_remaining(&r) == 0 ? (int)type : -1;
}

/* json_equal, but for keys with NUL bytes too (jansson's looks keys up
 * with strlen). */
static bool same_json(const json_t *a, const json_t *b)
{
	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_object(a)) {
		const char *k;
		size_t kl;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_keylen_foreach((json_t *)a, k, kl, v) {
			json_t *w = json_object_getn(b, k, kl);
			if (w == NULL || !same_json(v, w))
				return false;
		}
		return true;
	}
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same_json(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	return json_equal(a, b);
}

static void check_json(const uint8_t *f, size_t len)
{
	json_t *j = NULL, *j2 = NULL;
	struct weft_mp_reader r;
	int rc = weft_mp_buf_to_json(f, len, &j);
	pf_check(rc == 0 || rc == WEFT_EDECODE || rc == WEFT_ETOOBIG, "mp -> JSON result");
	pf_check((rc == 0) == (j != NULL), "a JSON value exactly on success");
	weft_mp_reader_init(&r, f, len);
	walk_strs(&r, 0);
	if (rc != 0)
		return;
	struct weft_mpw w;
	weft_mpw_init(&w);
	rc = weft_json_to_mp(&w, j, 0);
	pf_check(rc == 0, "the JSON of a msgpack value converts back");
	pf_check(pf_one_value(w.buf, w.len), "into one msgpack value");
	rc = weft_mp_buf_to_json(w.buf, w.len, &j2);
	pf_check(rc == 0 && same_json(j, j2), "mp -> JSON -> mp -> JSON is the first JSON");
	json_decref(j);
	json_decref(j2);
	weft_mpw_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		const uint8_t *s = data + off;
		size_t avail = size - off, fl = 0, fl2 = 0, fl3 = 0, have = 0, step = 1 + s[0] % 17;
		struct weft_mp_framer fr;
		int rc;
		weft_mp_framer_reset(&fr);
		/* The bytes arrive in pieces; the framer keeps its place. */
		do {
			have = have + step < avail ? have + step : avail;
			step = step * 2 + 1;
			struct weft_mp_framer fresh;
			weft_mp_framer_reset(&fresh);
			rc = weft_mp_framer_next(&fr, s, have, MAX_FRAME, &fl);
			int rc2 = weft_mp_framer_next(&fresh, s, have, MAX_FRAME, &fl2);
			pf_check(rc == rc2 && (rc != 0 || fl == fl2), "a resumed scan is a scan from scratch");
			int rc3 = weft_mp_frame_len(s, have, MAX_FRAME, &fl3);
			pf_check(rc3 == WEFT_EDECODE || (rc == rc3 && (rc != 0 || fl == fl3)),
				 "the framer agrees with weft_mp_frame_len");
			pf_check(rc == 0 || rc == WEFT_EAGAIN || rc == WEFT_EDECODE || rc == WEFT_ETOOBIG, "framer result");
		} while (rc == WEFT_EAGAIN && have < avail);
		if (rc != 0)
			break; /* the server closes the connection (or waits for more) */
		pf_check(fl >= 1 && fl <= have && fl <= MAX_FRAME, "a frame within what arrived");
		uint8_t *f = malloc(fl);
		pf_check(f != NULL, "malloc");
		memcpy(f, s, fl);
		read_message(f, fl);
		check_json(f, fl);
		free(f);
		off += fl;
	}
	return 0;
}

static void request(struct weft_mpw *w, uint64_t id, const char *method, int kind)
{
	weft_mpw_array(w, 4);
	weft_mpw_uint(w, 0);
	weft_mpw_uint(w, id);
	weft_mpw_str(w, method);
	switch (kind) {
	case 0:
		weft_mpw_array(w, 0);
		break;
	case 1: /* positional */
		weft_mpw_array(w, 3);
		weft_mpw_uint(w, 42);
		weft_mpw_str(w, "h\xc3\xa9llo");
		weft_mpw_bin(w, "\x00\x01\xff", 3);
		break;
	case 2: /* named, with every type */
		weft_mpw_array(w, 1);
		weft_mpw_map(w, 7);
		weft_mpw_str(w, "u");
		weft_mpw_uint(w, UINT64_MAX);
		weft_mpw_str(w, "i");
		weft_mpw_int(w, -5);
		weft_mpw_str(w, "b");
		weft_mpw_bool(w, true);
		weft_mpw_str(w, "f");
		weft_mpw_double(w, 0.5);
		weft_mpw_str(w, "n");
		weft_mpw_nil(w);
		weft_mpw_str(w, "bad");
		weft_mpw_strn(w, "\xed\xa0\x80", 3);
		weft_mpw_str(w, "nest");
		weft_mpw_map(w, 1);
		weft_mpw_uint(w, 7);
		weft_mpw_array(w, 1);
		weft_mpw_raw(w, "\xd4\x01\x02", 3); /* fixext 1 */
		break;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("WEFT_FUZZ_SEEDS");
	if (dir == NULL)
		return 0;
	struct weft_mpw w;
	weft_mpw_init(&w);
	request(&w, 1, "status", 0);
	pf_write_file(dir, "status", w.buf, w.len);
	weft_mpw_reset(&w);
	request(&w, 7, "brb.broadcast", 1);
	request(&w, 8, "tx.status", 2);
	weft_mpw_array(&w, 3); /* a notification */
	weft_mpw_uint(&w, 2);
	weft_mpw_str(&w, "event");
	weft_mpw_array(&w, 0);
	pf_write_file(dir, "pipelined", w.buf, w.len);
	weft_mpw_reset(&w);
	weft_mpw_array(&w, 4); /* a response from a client, and a bin method name */
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 3);
	weft_mpw_nil(&w);
	weft_mpw_map(&w, 0);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 4);
	weft_mpw_bin(&w, "status", 6);
	weft_mpw_array(&w, 0);
	pf_write_file(dir, "odd", w.buf, w.len);
	weft_mpw_free(&w);
	exit(0);
}
