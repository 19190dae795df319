/* cli_json.c - TAP tests of weft-cli's internals: JSON -> msgpack and
 * msgpack -> JSON conversion (json_mp.c), command-line parameter parsing
 * (args.c) and the RPC client (src/lib/rpc_client.c) against a scripted fake server
 * forked on a socket in a temporary directory. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/mp.h"
#include "weft/rpc_client.h"

#include "../../src/cli/cli.h"
#include "../lib/testutil.h"
#include "../tap.h"

/* ---- helpers ---- */

/* Compact, order-preserving JSON text of v (static buffer). */
static const char *jtext(json_t *v)
{
	static char buf[4096];
	char *s;

	if (!v)
		return "(NULL)";
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
	snprintf(buf, sizeof(buf), "%s", s ? s : "(dump failed)");
	free(s);
	return buf;
}

/* Encodes the JSON text as msgpack and compares with the expected bytes. */
static void to_mp(const char *json, const void *want, size_t wlen)
{
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	struct weft_mpw w;
	int rc;

	weft_mpw_init(&w);
	rc = v ? weft_json_to_mp(&w, v, 0) : -1;
	if (!ok(rc == 0 && w.len == wlen, "json->mp %s: %zu bytes", json, wlen))
		diag("rc %d, %zu bytes", rc, w.len);
	else
		is_mem(w.buf, want, wlen, "json->mp %s: bytes", json);
	weft_mpw_free(&w);
	json_decref(v);
}

/* Decodes the msgpack bytes and compares the compact JSON text. */
static void from_mp(const void *mp, size_t len, const char *want, const char *name)
{
	json_t *v = NULL;
	int rc = weft_mp_buf_to_json(mp, len, &v);

	if (rc != 0) {
		ok(0, "mp->json %s", name);
		diag("rc %d (%s)", rc, weft_strerror(rc));
		return;
	}
	is_str(jtext(v), want, "mp->json %s", name);
	json_decref(v);
}

static void from_mp_fails(const void *mp, size_t len, int want, const char *name)
{
	json_t *v = (json_t *)1;
	int rc = weft_mp_buf_to_json(mp, len, &v);

	is_int(rc, want, "mp->json rejects %s", name);
	ok(v == NULL, "mp->json %s: no value", name);
}

#define B(...) ((const uint8_t[]){ __VA_ARGS__ }), sizeof((const uint8_t[]){ __VA_ARGS__ })

/* ---- JSON -> msgpack ---- */

static void test_json_to_mp(void)
{
	to_mp("null", B(0xc0));
	to_mp("true", B(0xc3));
	to_mp("false", B(0xc2));
	to_mp("0", B(0x00));
	to_mp("127", B(0x7f));
	to_mp("300", B(0xcd, 0x01, 0x2c));
	to_mp("-1", B(0xff));
	to_mp("-33", B(0xd0, 0xdf));
	to_mp("9223372036854775807", B(0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
	to_mp("-9223372036854775808", B(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0));
	to_mp("1.5", B(0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0));
	to_mp("\"abc\"", B(0xa3, 'a', 'b', 'c'));
	to_mp("\"a\\u0000b\"", B(0xa3, 'a', 0, 'b'));
	to_mp("[]", B(0x90));
	to_mp("{}", B(0x80));
	to_mp("{\"b\":[true],\"a\":1}", B(0x82, 0xa1, 'b', 0x91, 0xc3, 0xa1, 'a', 0x01));

	/* A key with a NUL byte keeps its full length. */
	json_t *o = json_object();
	json_object_setn_new(o, "k\0z", 3, json_integer(1));
	struct weft_mpw w;
	weft_mpw_init(&w);
	is_int(weft_json_to_mp(&w, o, 0), 0, "json->mp key with NUL");
	ok(w.len == 6 && memcmp(w.buf, "\x81\xa3k\0z\x01", 6) == 0, "json->mp key with NUL: bytes");
	weft_mpw_free(&w);
	json_decref(o);

	/* Depth: 32 nested containers fit, 33 do not; depth counts the
	 * containers already around the value. */
	json_t *deep = json_array();
	for (int i = 1; i < WEFT_MP_MAX_DEPTH; i++) {
		json_t *outer = json_array();
		json_array_append_new(outer, deep);
		deep = outer;
	}
	weft_mpw_init(&w);
	is_int(weft_json_to_mp(&w, deep, 0), 0, "json->mp %d nested arrays", WEFT_MP_MAX_DEPTH);
	size_t flen = 0;
	is_int(weft_mp_frame_len(w.buf, w.len, 1 << 20, &flen), 0, "the bounded reader accepts that nesting");
	weft_mpw_reset(&w);
	is_int(weft_json_to_mp(&w, deep, 1), WEFT_ETOOBIG, "json->mp: the same inside one more container");
	json_t *deeper = json_array();
	json_array_append_new(deeper, deep);
	weft_mpw_reset(&w);
	is_int(weft_json_to_mp(&w, deeper, 0), WEFT_ETOOBIG, "json->mp %d nested arrays", WEFT_MP_MAX_DEPTH + 1);
	weft_mpw_free(&w);
	json_decref(deeper);
}

/* ---- msgpack -> JSON ---- */

static void test_mp_to_json(void)
{
	from_mp(B(0xc0), "null", "nil");
	from_mp(B(0xc3), "true", "true");
	from_mp(B(0xc2), "false", "false");
	from_mp(B(0x05), "5", "fixint");
	from_mp(B(0xe0), "-32", "negative fixint");
	from_mp(B(0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), "9223372036854775807", "INT64_MAX");
	from_mp(B(0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0), "\"9223372036854775808\"", "uint64 above INT64_MAX");
	from_mp(B(0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), "\"18446744073709551615\"", "UINT64_MAX");
	from_mp(B(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0), "-9223372036854775808", "INT64_MIN");
	from_mp(B(0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0), "1.5", "float64");
	from_mp(B(0xca, 0x3f, 0xc0, 0, 0), "1.5", "float32");
	from_mp(B(0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0), "\"NaN\"", "NaN");
	from_mp(B(0xcb, 0xff, 0xf0, 0, 0, 0, 0, 0, 0), "\"-Infinity\"", "-infinity");
	from_mp(B(0xa3, 'a', 'b', 'c'), "\"abc\"", "str");
	from_mp(B(0xa0), "\"\"", "empty str");
	from_mp(B(0xa6, 'h', 0xc3, 0xa9, 0xe2, 0x82, 0xac), "\"h\xc3\xa9\xe2\x82\xac\"", "UTF-8 str");
	from_mp(B(0xa4, 0xf0, 0x9f, 0x98, 0x80), "\"\xf0\x9f\x98\x80\"", "4-byte UTF-8 str");
	from_mp(B(0xa3, 'a', 0, 'b'), "\"a\\u0000b\"", "str with NUL");
	from_mp(B(0xa2, 0xc3, 0x28), "\"0xc328\"", "invalid UTF-8 str as hex");
	from_mp(B(0xa2, 0xc0, 0x80), "\"0xc080\"", "overlong UTF-8 as hex");
	from_mp(B(0xa3, 0xed, 0xa0, 0x80), "\"0xeda080\"", "surrogate as hex");
	from_mp(B(0xa4, 0xf4, 0x90, 0x80, 0x80), "\"0xf4908080\"", "code point above U+10FFFF as hex");
	from_mp(B(0xa1, 0xe2), "\"0xe2\"", "truncated UTF-8 as hex");
	from_mp(B(0xc4, 0x03, 0x01, 0xab, 0xff), "\"0x01abff\"", "bin");
	from_mp(B(0xc4, 0x00), "\"0x\"", "empty bin");
	from_mp(B(0xd4, 0x05, 0xaa), "{\"ext_type\":5,\"data\":\"0xaa\"}", "fixext1");
	from_mp(B(0xc7, 0x02, 0xff, 0x01, 0x02), "{\"ext_type\":-1,\"data\":\"0x0102\"}", "ext8 type -1");
	from_mp(B(0x93, 0x01, 0xa1, 'x', 0x90), "[1,\"x\",[]]", "array");
	from_mp(B(0x83, 0xa1, 'z', 0x01, 0xa1, 'a', 0x02, 0xa1, 'm', 0x03), "{\"z\":1,\"a\":2,\"m\":3}",
		"map keeps key order");
	from_mp(B(0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02), "{\"a\":2}", "repeated key: last value");
	from_mp(B(0x82, 0x01, 0xa1, 'a', 0xc0, 0xa1, 'b'), "{\"1\":\"a\",\"null\":\"b\"}", "int and nil keys");
	from_mp(B(0x81, 0xc4, 0x01, 0xab, 0x01), "{\"0xab\":1}", "bin key");
	from_mp(B(0x81, 0x92, 0x01, 0x02, 0xc3), "{\"[1,2]\":true}", "array key as compact JSON");
	from_mp(B(0x81, 0x81, 0xa1, 'k', 0x01, 0xc2), "{\"{\\\"k\\\":1}\":false}", "map key as compact JSON");
	from_mp(B(0x81, 0xa2, 0xc3, 0x28, 0x01), "{\"0xc328\":1}", "invalid UTF-8 key as hex");
	from_mp(B(0x81, 0xa3, 'a', 0, 'b', 0x01), "{\"a\\u0000b\":1}", "key with NUL");

	from_mp_fails(B(0x92, 0x01), WEFT_EDECODE, "a truncated array");
	from_mp_fails(B(0xdd, 0xff, 0xff, 0xff, 0xff, 0x01), WEFT_EDECODE, "an array count larger than the input");
	from_mp_fails(B(0xdf, 0x7f, 0xff, 0xff, 0xff), WEFT_EDECODE, "a map count larger than the input");
	from_mp_fails(B(0xdb, 0xff, 0xff, 0xff, 0xff, 'a'), WEFT_EDECODE, "a str length larger than the input");
	from_mp_fails(B(0xc1), WEFT_EDECODE, "the reserved byte 0xc1");
	from_mp_fails(B(0x01, 0x02), WEFT_EDECODE, "trailing bytes");
	from_mp_fails(B(0x81, 0xa1, 'a'), WEFT_EDECODE, "a map missing its value");

	/* Nesting: WEFT_MP_MAX_DEPTH containers convert, one more does not. */
	uint8_t deep[WEFT_MP_MAX_DEPTH + 2];
	memset(deep, 0x91, sizeof(deep));
	deep[WEFT_MP_MAX_DEPTH] = 0xc0;
	json_t *v = NULL;
	is_int(weft_mp_buf_to_json(deep, WEFT_MP_MAX_DEPTH + 1, &v), 0, "mp->json %d nested arrays",
	       WEFT_MP_MAX_DEPTH);
	json_decref(v);
	deep[WEFT_MP_MAX_DEPTH] = 0x91;
	deep[WEFT_MP_MAX_DEPTH + 1] = 0xc0;
	from_mp_fails(deep, sizeof(deep), WEFT_ETOOBIG, "nesting deeper than WEFT_MP_MAX_DEPTH");

	/* An ext becomes a JSON object, a container: inside WEFT_MP_MAX_DEPTH
	 * arrays it would be one level too deep to convert back (found by
	 * tests/fuzz/rpc_frame), so it is refused like a map there, and fits
	 * one level up. */
	uint8_t ext[WEFT_MP_MAX_DEPTH + 3];
	memset(ext, 0x91, sizeof(ext));
	memcpy(ext + WEFT_MP_MAX_DEPTH, (uint8_t[]){0xd4, 0x05, 0x2a}, 3); /* fixext1, type 5 */
	from_mp_fails(ext, sizeof(ext), WEFT_ETOOBIG, "an ext inside WEFT_MP_MAX_DEPTH arrays");
	v = NULL;
	is_int(weft_mp_buf_to_json(ext + 1, sizeof(ext) - 1, &v), 0, "an ext inside %d arrays converts",
	       WEFT_MP_MAX_DEPTH - 1);
	struct weft_mpw back;
	weft_mpw_init(&back);
	is_int(v ? weft_json_to_mp(&back, v, 0) : -1, 0, "... and its JSON converts back");
	weft_mpw_free(&back);
	json_decref(v);

	/* Map keys that are maps with map keys: each level escapes the text of
	 * the one inside, doubling it; the key text is bounded (a 61-byte
	 * frame used to ask for about 2^30 bytes; found by tests/fuzz/rpc_frame). */
	uint8_t keys[30 + 31];
	memset(keys, 0x81, 30);
	memset(keys + 30, 0xc0, 31);
	from_mp_fails(keys, sizeof(keys), WEFT_ETOOBIG, "map keys nested 30 deep: too big, at once");

	/* A reader positioned in a larger buffer reads exactly one value. */
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, "\x92\x01\x02\xc3", 4);
	is_int(weft_mp_to_json(&r, &v), 0, "mp->json reads one value from a reader");
	is_str(jtext(v), "[1,2]", "mp->json from a reader: value");
	is_int((long long)weft_mp_remaining(&r), 1, "mp->json from a reader: the rest is left");
	json_decref(v);

	/* Round trip. */
	const char *doc = "{\"s\":\"t\\u00e9xt\",\"n\":-5,\"u\":42,\"f\":0.25,\"l\":[null,true,false,[],{}],"
			  "\"o\":{\"z\":\"\",\"a\":[1,[2,[3]]]}}";
	json_t *in = json_loads(doc, 0, NULL), *out = NULL;
	struct weft_mpw w;
	weft_mpw_init(&w);
	is_int(weft_json_to_mp(&w, in, 0), 0, "round trip: encode");
	is_int(weft_mp_buf_to_json(w.buf, w.len, &out), 0, "round trip: decode");
	ok(out && json_equal(in, out), "round trip: equal");
	is_str(jtext(out), jtext(in), "round trip: same order");
	weft_mpw_free(&w);
	json_decref(in);
	json_decref(out);

	json_t *h = weft_json_hex_string("\x00\x10\xfe", 3);
	is_str(json_string_value(h), "0x0010fe", "hex string");
	json_decref(h);
	ok(weft_utf8_valid("", 0), "utf8: empty");
	ok(!weft_utf8_valid("\xf5\x80\x80\x80", 4), "utf8: 0xf5 lead byte");
	ok(!weft_utf8_valid("\xe0\x9f\xbf", 3), "utf8: overlong 3-byte");
	ok(weft_utf8_valid("\xef\xbf\xbf", 3), "utf8: U+FFFF");
}

/* ---- parameters ---- */

static void params_ok(int argc, char *const argv[], const char *want, const char *name)
{
	json_t *p = NULL;
	char err[256];
	int rc = weft_cli_parse_params(argc, argv, &p, err, sizeof(err));

	if (rc != 0) {
		ok(0, "params %s", name);
		diag("rc %d: %s", rc, err);
		return;
	}
	is_str(jtext(p), want, "params %s", name);
	json_decref(p);
}

static void params_bad(int argc, char *const argv[], const char *needle, const char *name)
{
	json_t *p = (json_t *)1;
	char err[256];
	int rc = weft_cli_parse_params(argc, argv, &p, err, sizeof(err));

	is_int(rc, WEFT_EINVAL, "params reject %s", name);
	ok(p == NULL, "params %s: no value", name);
	if (!ok(strstr(err, needle) != NULL, "params %s: the message names '%s'", name, needle))
		diag("message: %s", err);
}

#define ARGV(...) (int)(sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *)), (char *[]){ __VA_ARGS__ }

static void test_params(void)
{
	params_ok(0, NULL, "[]", "none");
	params_ok(ARGV("{\"a\":1,\"b\":[2]}"), "[{\"a\":1,\"b\":[2]}]", "JSON object -> named");
	params_ok(ARGV("[1,\"x\",null]"), "[1,\"x\",null]", "JSON array -> positional");
	params_ok(ARGV("{}"), "[{}]", "empty object");
	params_ok(ARGV("[]"), "[]", "empty array");
	params_ok(ARGV("n=5", "neg=-2.5", "t=true", "f=false", "z=null"),
		  "[{\"n\":5,\"neg\":-2.5,\"t\":true,\"f\":false,\"z\":null}]", "key=JSON scalars");
	params_ok(ARGV("q=\"42\"", "s=hello world", "e=", "eq=a=b"),
		  "[{\"q\":\"42\",\"s\":\"hello world\",\"e\":\"\",\"eq\":\"a=b\"}]", "key=string");
	params_ok(ARGV("l=[1,2]", "o={\"x\":{}}"), "[{\"l\":[1,2],\"o\":{\"x\":{}}}]", "key=JSON containers");
	params_ok(ARGV("zip=007", "hex=0xff", "big=18446744073709551616"),
		  "[{\"zip\":\"007\",\"hex\":\"0xff\",\"big\":\"18446744073709551616\"}]",
		  "not-quite-JSON values stay strings");
	params_ok(ARGV("b=2", "a=1", "c=3"), "[{\"b\":2,\"a\":1,\"c\":3}]", "argument order kept");
	params_ok(ARGV("nul=\"a\\u0000b\""), "[{\"nul\":\"a\\u0000b\"}]", "a quoted value with NUL");
	params_ok(ARGV("k=\xc3\xa9t\xc3\xa9"), "[{\"k\":\"\xc3\xa9t\xc3\xa9\"}]", "UTF-8 value");
}

static void test_params_errors(void)
{
	params_bad(ARGV("verbose"), "verbose", "a bare word");
	params_bad(ARGV("a=1", "oops"), "oops", "a bare word after pairs");
	params_bad(ARGV("a=1", "a=2"), "'a'", "a repeated key");
	params_bad(ARGV("=1"), "=1", "an empty key");
	params_bad(ARGV("{\"a\":"), "JSON object", "a broken JSON object");
	params_bad(ARGV("[1,"), "JSON array", "a broken JSON array");
	params_bad(ARGV("{\"a\":1} x"), "JSON object", "text after a JSON object");
	params_bad(ARGV("{\"a\":1}", "b=2"), "{\"a\":1}", "a JSON object that is not alone");
	params_bad(ARGV("k=\xff"), "'k'", "a value that is not UTF-8");
	params_bad(ARGV("\xff=1"), "UTF-8", "a key that is not UTF-8");
}

/* ---- the RPC client against a fake server ---- */

static char sock_dir[64], sock_path[128];
static pid_t server_pid;

static void write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void reply_head(struct weft_mpw *w, uint64_t msgid)
{
	weft_mpw_array(w, 4);
	weft_mpw_uint(w, 1);
	weft_mpw_uint(w, msgid);
}

/* Answers one request according to its method name.  Returns 0 to keep the
 * connection, 1 to close it, 2 to stop the server. */
static int serve_request(int fd, const uint8_t *frame, size_t len)
{
	struct weft_mp_reader r;
	struct weft_mpw w;
	uint32_t n;
	uint64_t type, msgid;
	const char *m;
	uint32_t mlen;
	char method[64];
	int ret = 0;

	weft_mp_reader_init(&r, frame, len);
	weft_mp_read_array(&r, &n);
	weft_mp_read_uint(&r, &type);
	weft_mp_read_uint(&r, &msgid);
	weft_mp_read_str(&r, &m, &mlen);
	if (r.err || n != 4 || type != 0 || mlen >= sizeof(method))
		return 1;
	memcpy(method, m, mlen);
	method[mlen] = '\0';
	const uint8_t *params = r.p;
	size_t plen = weft_mp_remaining(&r);

	weft_mpw_init(&w);
	if (strcmp(method, "echo") == 0) {
		reply_head(&w, msgid);
		weft_mpw_nil(&w);
		weft_mpw_raw(&w, params, plen);
		write_all(fd, w.buf, w.len);
	} else if (strcmp(method, "fail") == 0) {
		reply_head(&w, msgid);
		weft_mpw_map(&w, 2);
		weft_mpw_str(&w, "code");
		weft_mpw_int(&w, -32601);
		weft_mpw_str(&w, "message");
		weft_mpw_str(&w, "no such method");
		weft_mpw_nil(&w);
		write_all(fd, w.buf, w.len);
	} else if (strcmp(method, "slow") == 0) {
		/* A notification, a stale reply, then the reply byte by byte. */
		weft_mpw_array(&w, 3);
		weft_mpw_uint(&w, 2);
		weft_mpw_str(&w, "tick");
		weft_mpw_array(&w, 1);
		weft_mpw_uint(&w, 7);
		reply_head(&w, msgid + 1000);
		weft_mpw_nil(&w);
		weft_mpw_str(&w, "stale");
		reply_head(&w, msgid);
		weft_mpw_nil(&w);
		weft_mpw_map(&w, 1);
		weft_mpw_str(&w, "ok");
		weft_mpw_bin(&w, "\x01\x02", 2);
		for (size_t i = 0; i < w.len; i++) {
			write_all(fd, w.buf + i, 1);
			usleep(200);
		}
	} else if (strcmp(method, "close") == 0) {
		ret = 1;
	} else if (strcmp(method, "garbage") == 0) {
		write_all(fd, "\xc1", 1);
	} else if (strcmp(method, "huge") == 0) {
		write_all(fd, "\x94\x01\x01\xc0\xdb\x7f\xff\xff\xff", 9);
	} else if (strcmp(method, "notarray") == 0) {
		write_all(fd, "\xa2hi", 3);
	} else if (strcmp(method, "silent") == 0) {
		/* no answer */
	} else if (strcmp(method, "quit") == 0) {
		reply_head(&w, msgid);
		weft_mpw_nil(&w);
		weft_mpw_str(&w, "bye");
		write_all(fd, w.buf, w.len);
		ret = 2;
	} else {
		ret = 1;
	}
	weft_mpw_free(&w);
	return ret;
}

static void serve(int lfd)
{
	static uint8_t buf[1 << 16];
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			_exit(1);
		size_t len = 0;
		int state = 0;
		while (state == 0) {
			ssize_t n = read(fd, buf + len, sizeof(buf) - len);
			if (n <= 0)
				break;
			len += (size_t)n;
			size_t flen;
			while (state == 0 && weft_mp_frame_len(buf, len, sizeof(buf), &flen) == 0) {
				state = serve_request(fd, buf, flen);
				memmove(buf, buf + flen, len - flen);
				len -= flen;
			}
		}
		close(fd);
		if (state == 2)
			_exit(0);
	}
}

static int start_server(void)
{
	snprintf(sock_dir, sizeof(sock_dir), "/tmp/weft-cli-test.XXXXXX");
	if (!mkdtemp(sock_dir))
		return -1;
	snprintf(sock_path, sizeof(sock_path), "%s/rpc.sock", sock_dir);
	int lfd = tu_unix_listen(sock_path);
	if (lfd < 0)
		return -1;
	fflush(stdout);
	server_pid = fork();
	if (server_pid < 0)
		return -1;
	if (server_pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		serve(lfd);
		_exit(0);
	}
	close(lfd);
	return 0;
}

static void stop_server(void)
{
	json_t *res = NULL, *err = NULL;
	int status = -1;

	is_int(weft_rpc_client_call_once(sock_path, "quit", NULL, 5000, &res, &err), 0, "quit");
	json_decref(res);
	json_decref(err);
	if (waitpid(server_pid, &status, 0) != server_pid) {
		kill(server_pid, SIGKILL);
		waitpid(server_pid, &status, 0);
	}
	unlink(sock_path);
	rmdir(sock_dir);
}

static int notes;
static char note_text[4200];

static void on_notify(const char *method, json_t *params, void *arg)
{
	notes++;
	snprintf(note_text, sizeof(note_text), "%s %s", method, jtext(params));
	(void)arg;
}

static void test_client(void)
{
	json_t *res = NULL, *err = NULL, *params;
	struct weft_rpc_client *c;
	int rc, e = 0;

	rc = weft_rpc_client_connect(&c, "/nonexistent/weft/rpc.sock", 1000, &e);
	ok(rc < 0 && c == NULL, "connect to a missing socket fails");
	is_int(e, ENOENT, "connect failure reports errno ENOENT");

	char longpath[200];
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	rc = weft_rpc_client_connect(&c, longpath, 1000, &e);
	is_int(rc, WEFT_EINVAL, "connect: a path too long for sun_path");
	is_int(e, ENAMETOOLONG, "connect: ENAMETOOLONG");

	if (start_server() < 0) {
		diag("cannot start the fake server: %s", strerror(errno));
		skip(23, "no fake server");
		return;
	}

	/* One-shot call, named params echoed back. */
	char err_text[256];
	weft_cli_parse_params(ARGV("a=1", "b=x", "c=[true]"), &params, err_text, sizeof(err_text));
	rc = weft_rpc_client_call_once(sock_path, "echo", params, 5000, &res, &err);
	is_int(rc, 0, "echo: call");
	ok(err == NULL, "echo: no error");
	is_str(jtext(res), "[{\"a\":1,\"b\":\"x\",\"c\":[true]}]", "echo: params came back");
	json_decref(res);
	json_decref(params);

	/* One connection, many calls. */
	is_int(weft_rpc_client_connect(&c, sock_path, 5000, &e), 0, "connect");
	weft_rpc_client_set_notify(c, on_notify, NULL);

	rc = weft_rpc_client_call(c, "fail", NULL, 5000, &res, &err);
	is_int(rc, 0, "fail: call completes");
	ok(res == NULL, "fail: no result");
	is_str(jtext(err), "{\"code\":-32601,\"message\":\"no such method\"}", "fail: the error map");
	json_decref(err);

	rc = weft_rpc_client_call(c, "slow", NULL, 5000, &res, &err);
	is_int(rc, 0, "slow: call across a notification, a stale reply and 1-byte writes");
	is_str(jtext(res), "{\"ok\":\"0x0102\"}", "slow: the result");
	is_int(notes, 1, "slow: one notification");
	is_str(note_text, "tick [7]", "slow: the notification");
	json_decref(res);

	json_t *bad = json_object();
	is_int(weft_rpc_client_call(c, "echo", bad, 5000, &res, &err), WEFT_EINVAL, "params must be an array");
	json_decref(bad);

	rc = weft_rpc_client_call(c, "silent", NULL, 200, &res, &err);
	is_int(rc, WEFT_ETIMEDOUT, "silent: times out");
	ok(res == NULL && err == NULL, "silent: nothing returned");
	params = json_loads("[\"still\", \"usable\"]", 0, NULL);
	rc = weft_rpc_client_call(c, "echo", params, 5000, &res, &err);
	is_int(rc, 0, "after a timeout the connection still works");
	is_str(jtext(res), "[\"still\",\"usable\"]", "after a timeout: the right reply");
	json_decref(res);
	json_decref(params);

	rc = weft_rpc_client_call(c, "close", NULL, 5000, &res, &err);
	is_int(rc, WEFT_ECLOSED, "close: the server hung up");
	is_int(weft_rpc_client_call(c, "echo", NULL, 5000, &res, &err), WEFT_ESTATE, "a dead connection refuses calls");
	weft_rpc_client_close(c);

	is_int(weft_rpc_client_call_once(sock_path, "garbage", NULL, 5000, &res, &err), WEFT_EPROTO, "garbage: malformed reply");
	is_int(weft_rpc_client_call_once(sock_path, "huge", NULL, 5000, &res, &err), WEFT_EPROTO,
	       "huge: a frame over 64 MiB is refused early");
	is_int(weft_rpc_client_call_once(sock_path, "notarray", NULL, 5000, &res, &err), WEFT_EPROTO, "a reply that is not an array");

	/* Params too deep for a request. */
	json_t *deep = json_array();
	for (int i = 1; i < WEFT_MP_MAX_DEPTH; i++) {
		json_t *outer = json_array();
		json_array_append_new(outer, deep);
		deep = outer;
	}
	is_int(weft_rpc_client_call_once(sock_path, "echo", deep, 5000, &res, &err), WEFT_ETOOBIG, "params nested too deep");
	json_decref(deep);

	stop_server();
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_json_to_mp();
	test_mp_to_json();
	test_params();
	test_params_errors();
	test_client();
	return done_testing();
}
