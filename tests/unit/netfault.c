/* tests/unit/netfault.c - TAP tests for the runtime fault layer's rule
 * engine (net/netfault.c).
 *
 * Parameters are written in a small test notation, e.g.
 * {action:delay,peers:[1,2],delay_ms:100}, turned into msgpack by enc()
 * below (bare words are strings; nil/true/false/nan are what they say;
 * f32:X is a float32).  Covers every valid form of fault.set's parameters,
 * every invalid one (the message must name the parameter), hostile bytes,
 * add/clear/list/count, judging per action, composition, expiry,
 * determinism and weft_nf_corrupt. */
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/netfault.h"

#include "../tap.h"

/* ---- the test notation ---------------------------------------------------- */

static const char *enc_value(const char *s, struct weft_mpw *w);

static void spec_fail(const char *s)
{
	diag("bad test spec at '%s'", s);
	abort();
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ')
		s++;
	return s;
}

/* Encodes the elements of a container up to close; *count gets how many
 * (pairs for a map). */
static const char *enc_elems(const char *s, char close, bool pairs, struct weft_mpw *sub, uint32_t *count)
{
	*count = 0;
	s = skip_ws(s);
	if (*s == close)
		return s + 1;
	for (;;) {
		s = enc_value(s, sub);
		if (pairs) {
			s = skip_ws(s);
			if (*s != ':')
				spec_fail(s);
			s = enc_value(s + 1, sub);
		}
		(*count)++;
		s = skip_ws(s);
		if (*s == close)
			return s + 1;
		if (*s != ',')
			spec_fail(s);
		s++;
	}
}

static void put_f32(struct weft_mpw *w, float f)
{
	uint32_t bits;
	uint8_t b[5];

	memcpy(&bits, &f, sizeof bits);
	b[0] = 0xca;
	weft_be32_put(b + 1, bits);
	weft_mpw_raw(w, b, sizeof b);
}

static const char *enc_number(const char *s, struct weft_mpw *w, bool f32)
{
	const char *e = s;
	bool is_float = false;

	if (*e == '-')
		e++;
	while (isdigit((unsigned char)*e) || *e == '.' || *e == 'e' || *e == 'E' ||
	       ((*e == '-' || *e == '+') && (e[-1] == 'e' || e[-1] == 'E'))) {
		if (!isdigit((unsigned char)*e))
			is_float = true;
		e++;
	}
	if (e == s)
		spec_fail(s);
	if (f32)
		put_f32(w, strtof(s, NULL));
	else if (is_float)
		weft_mpw_double(w, strtod(s, NULL));
	else if (*s == '-')
		weft_mpw_int(w, strtoll(s, NULL, 10));
	else
		weft_mpw_uint(w, strtoull(s, NULL, 10));
	return e;
}

static const char *enc_value(const char *s, struct weft_mpw *w)
{
	struct weft_mpw sub;
	uint32_t count;
	const char *e;

	s = skip_ws(s);
	if (*s == '{' || *s == '[') {
		bool map = *s == '{';

		weft_mpw_init(&sub);
		s = enc_elems(s + 1, map ? '}' : ']', map, &sub, &count);
		if (map)
			weft_mpw_map(w, count);
		else
			weft_mpw_array(w, count);
		if (sub.len)
			weft_mpw_raw(w, sub.buf, sub.len);
		weft_mpw_free(&sub);
		return s;
	}
	if (*s == '"') {
		e = strchr(s + 1, '"');
		if (!e)
			spec_fail(s);
		weft_mpw_strn(w, s + 1, (size_t)(e - s - 1));
		return e + 1;
	}
	if (strncmp(s, "f32:", 4) == 0)
		return enc_number(s + 4, w, true);
	if (*s == '-' || isdigit((unsigned char)*s))
		return enc_number(s, w, false);
	e = s;
	while (isalnum((unsigned char)*e) || *e == '_')
		e++;
	if (e == s)
		spec_fail(s);
	if (e - s == 3 && strncmp(s, "nil", 3) == 0)
		weft_mpw_nil(w);
	else if (e - s == 4 && strncmp(s, "true", 4) == 0)
		weft_mpw_bool(w, true);
	else if (e - s == 5 && strncmp(s, "false", 5) == 0)
		weft_mpw_bool(w, false);
	else if (e - s == 3 && strncmp(s, "nan", 3) == 0)
		weft_mpw_double(w, NAN);
	else
		weft_mpw_strn(w, s, (size_t)(e - s));
	return e;
}

/* Encodes spec into w (reset first). */
static void enc(struct weft_mpw *w, const char *spec)
{
	const char *end;

	weft_mpw_reset(w);
	end = skip_ws(enc_value(spec, w));
	if (*end)
		spec_fail(end);
}

static struct weft_mpw W;

static int parse(struct weft_nf *nf, const char *spec, uint64_t now, struct weft_nf_rule *r, char *err,
		 size_t errlen)
{
	enc(&W, spec);
	return weft_nf_parse_rule(nf, W.buf, W.len, now, r, err, errlen);
}

/* Parses spec (which must be valid) and adds the rule; returns its id. */
static uint32_t add(struct weft_nf *nf, const char *spec, uint64_t now)
{
	struct weft_nf_rule r;
	char err[256];

	if (parse(nf, spec, now, &r, err, sizeof err) != 0) {
		diag("test rule %s rejected: %s", spec, err);
		return 0;
	}
	if (weft_nf_add(nf, &r) != 0) {
		diag("test rule %s not added", spec);
		return 0;
	}
	return r.id;
}

/* ---- parsing: valid forms ------------------------------------------------- */

static void test_parse_valid(void)
{
	struct weft_nf *nf = weft_nf_new(4, 1);
	struct weft_nf *big = weft_nf_new(100, 1);
	struct weft_nf_rule r;
	char err[256];
	char spec[1024];
	size_t o;
	int rc;

	rc = parse(nf, "{action:drop}", 1000, &r, err, sizeof err);
	is_int(rc, 0, "{action:drop} parses");
	ok(r.action == WEFT_NF_DROP && r.dir == WEFT_NF_BOTH && r.npeers == 0 && r.probability == 1.0 &&
		   r.delay_ms == 0 && r.jitter_ms == 0 && r.expires_ms == 0,
	   "defaults: both directions, every peer, p = 1, no delay, no expiry");
	is_str(err, "", "no error message on success");

	static const struct {
		const char *spec;
		enum weft_nf_action action;
	} actions[] = {
		{ "{action:drop}", WEFT_NF_DROP },
		{ "{action:omission}", WEFT_NF_DROP },
		{ "{action:silent}", WEFT_NF_DROP },
		{ "{action:delay,delay_ms:10}", WEFT_NF_DELAY },
		{ "{action:duplicate}", WEFT_NF_DUPLICATE },
		{ "{action:reorder,delay_ms:10}", WEFT_NF_REORDER },
		{ "{action:corrupt}", WEFT_NF_CORRUPT },
		{ "{action:partition}", WEFT_NF_PARTITION },
	};
	for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
		rc = parse(nf, actions[i].spec, 0, &r, err, sizeof err);
		ok(rc == 0 && r.action == actions[i].action, "%s parses to the right action", actions[i].spec);
	}

	rc = parse(nf, "{action:drop,peers:[3,0]}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.npeers == 2 && r.peers[0] == 3 && r.peers[1] == 0, "peers [3,0] kept in order");
	rc = parse(nf, "{action:drop,direction:in}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.dir == WEFT_NF_IN, "direction in");
	rc = parse(nf, "{action:drop,direction:out}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.dir == WEFT_NF_OUT, "direction out");
	rc = parse(nf, "{action:drop,direction:both}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.dir == WEFT_NF_BOTH, "direction both");
	rc = parse(nf, "{action:partition,direction:in,peers:[1]}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.dir == WEFT_NF_BOTH, "partition forces both directions");

	rc = parse(nf, "{action:drop,probability:0.25}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.probability == 0.25, "probability float64 0.25");
	rc = parse(nf, "{action:drop,probability:f32:0.5}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.probability == 0.5, "probability float32 0.5");
	rc = parse(nf, "{action:drop,probability:1}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.probability == 1.0, "probability uint 1");
	rc = parse(nf, "{action:drop,probability:1.0}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.probability == 1.0, "probability float 1.0");
	rc = parse(nf, "{action:drop,probability:1e-9}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.probability == 1e-9, "tiny probability 1e-9");

	rc = parse(nf, "{action:delay,delay_ms:100,jitter_ms:20}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.delay_ms == 100 && r.jitter_ms == 20, "delay_ms 100, jitter_ms 20");
	rc = parse(nf, "{jitter_ms:100,delay_ms:100,action:delay}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.delay_ms == 100 && r.jitter_ms == 100, "any key order; jitter_ms = delay_ms allowed");
	rc = parse(nf, "{action:delay,delay_ms:600000}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.delay_ms == 600000, "delay_ms at the limit 600000");
	rc = parse(nf, "{action:delay,delay_ms:5,jitter_ms:0}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.jitter_ms == 0, "explicit jitter_ms 0");
	rc = parse(nf, "{action:drop,delay_ms:0,jitter_ms:0}", 0, &r, err, sizeof err);
	ok(rc == 0, "delay_ms/jitter_ms 0 accepted for drop (as fault.list writes them)");
	rc = parse(nf, "{action:drop,duration_ms:5000}", 12345, &r, err, sizeof err);
	ok(rc == 0 && r.expires_ms == 17345, "duration_ms: expires_ms = now_ms + duration_ms");
	rc = parse(nf,
		   "{action:reorder,peers:[1,2,3],direction:out,probability:0.75,delay_ms:40,duration_ms:1}",
		   7, &r, err, sizeof err);
	ok(rc == 0 && r.action == WEFT_NF_REORDER && r.npeers == 3 && r.dir == WEFT_NF_OUT &&
		   r.probability == 0.75 && r.delay_ms == 40 && r.expires_ms == 8,
	   "every parameter at once");
	enc(&W, "{action:drop}");
	rc = weft_nf_parse_rule(nf, W.buf, W.len, 0, &r, NULL, 0);
	is_int(rc, 0, "err may be NULL");

	/* 64 peers is the limit. */
	o = (size_t)snprintf(spec, sizeof spec, "{action:drop,peers:[");
	for (int i = 0; i < 64; i++)
		o += (size_t)snprintf(spec + o, sizeof spec - o, "%s%d", i ? "," : "", i + 10);
	snprintf(spec + o, sizeof spec - o, "]}");
	rc = parse(big, spec, 0, &r, err, sizeof err);
	ok(rc == 0 && r.npeers == 64 && r.peers[63] == 73, "64 peers accepted");
	rc = parse(big, "{action:drop,peers:[99]}", 0, &r, err, sizeof err);
	ok(rc == 0 && r.peers[0] == 99, "peer n - 1 accepted");

	weft_nf_free(nf);
	weft_nf_free(big);
}

/* ---- parsing: invalid forms ----------------------------------------------- */

struct bad_case {
	const char *spec;
	const char *want; /* substring of the message */
	uint64_t now;
};

static void test_parse_invalid(void)
{
	static const struct bad_case cases[] = {
		{ "[1,2]", "params: expected a map", 0 },
		{ "drop", "params: expected a map", 0 },
		{ "nil", "params", 0 },
		{ "{}", "action: required", 0 },
		{ "{peers:[1]}", "action: required", 0 },
		{ "{action:1}", "action: expected one of", 0 },
		{ "{action:nil}", "action", 0 },
		{ "{action:explode}", "'explode'", 0 },
		{ "{action:DROP}", "action: unknown fault 'DROP' (expected one of omission, delay", 0 },
		{ "{action:crash}", "'crash' is a weft-sim fault", 0 },
		{ "{action:twins}", "not a fault of the transport fault layer", 0 },
		{ "{action:\"\"}", "action", 0 },
		{ "{action:[drop]}", "action: expected one of", 0 },
		{ "{action:drop,speed:1}", "unknown parameter 'speed'", 0 },
		{ "{action:drop,peer:[1]}", "unknown parameter 'peer'", 0 },
		{ "{action:drop,\"\":1}", "unknown parameter ''", 0 },
		{ "{1:2,action:drop}", "parameter names must be strings", 0 },
		{ "{action:drop,action:drop}", "duplicate parameter 'action'", 0 },
		{ "{action:drop,peers:[1],peers:[2]}", "duplicate parameter 'peers'", 0 },
		{ "{action:drop,peers:1}", "peers: expected an array", 0 },
		{ "{action:drop,peers:nil}", "peers: expected an array", 0 },
		{ "{action:drop,peers:{a:1}}", "peers: expected an array", 0 },
		{ "{action:drop,peers:[]}", "peers: expected at least one", 0 },
		{ "{action:drop,peers:[0,x]}", "peers[1]: expected a node index", 0 },
		{ "{action:drop,peers:[-1]}", "peers[0]: expected a node index", 0 },
		{ "{action:drop,peers:[1.0]}", "peers[0]: expected a node index (unsigned integer), got 1.0", 0 },
		{ "{action:drop,peers:[[1]]}", "peers[0]: expected a node index", 0 },
		{ "{action:drop,peers:[0,1,9]}", "peers[2]: 9 is not a node index (n = 4)", 0 },
		{ "{action:drop,peers:[4]}", "peers[0]: 4 is not a node index (n = 4)", 0 },
		{ "{action:drop,peers:[18446744073709551615]}", "peers[0]: 18446744073709551615 is not", 0 },
		{ "{action:drop,peers:[1,2,1]}", "peers[2]: 1 is listed twice", 0 },
		{ "{action:drop,direction:up}", "direction: expected \"in\", \"out\" or \"both\", got 'up'", 0 },
		{ "{action:drop,direction:1}", "direction: expected", 0 },
		{ "{action:drop,direction:IN}", "direction", 0 },
		{ "{action:drop,probability:0}", "probability: expected a number in (0, 1], got 0", 0 },
		{ "{action:drop,probability:0.0}", "probability: expected a number in (0, 1], got 0.0", 0 },
		{ "{action:drop,probability:2}", "probability: expected a number in (0, 1], got 2", 0 },
		{ "{action:drop,probability:1.5}", "probability: expected a number in (0, 1], got 1.5", 0 },
		{ "{action:drop,probability:1.0000001}", "got 1.0000001", 0 },
		{ "{action:drop,probability:-0.5}", "probability: expected a number in (0, 1], got -0.5", 0 },
		{ "{action:drop,probability:-1}", "probability", 0 },
		{ "{action:drop,probability:nan}", "probability: expected a number in (0, 1], got nan", 0 },
		{ "{action:drop,probability:\"0.5\"}", "probability: expected a number in (0, 1], got '0.5'", 0 },
		{ "{action:drop,probability:true}", "probability", 0 },
		{ "{action:drop,probability:nil}", "probability", 0 },
		{ "{action:delay}", "delay_ms: required and > 0 for action delay", 0 },
		{ "{action:delay,delay_ms:0}", "delay_ms: required and > 0", 0 },
		{ "{action:reorder}", "delay_ms: required and > 0 for action reorder", 0 },
		{ "{action:reorder,delay_ms:0}", "delay_ms", 0 },
		{ "{action:delay,delay_ms:600001}", "delay_ms: 600001 is above the limit of 600000", 0 },
		{ "{action:delay,delay_ms:18446744073709551615}", "delay_ms: 18446744073709551615 is above", 0 },
		{ "{action:delay,delay_ms:-5}", "delay_ms: expected an unsigned integer (milliseconds), got -5", 0 },
		{ "{action:delay,delay_ms:1.5}", "delay_ms: expected an unsigned integer", 0 },
		{ "{action:delay,delay_ms:\"10\"}", "delay_ms: expected an unsigned integer", 0 },
		{ "{action:delay,delay_ms:nil}", "delay_ms: expected an unsigned integer", 0 },
		{ "{action:drop,delay_ms:10}", "delay_ms: only applies to actions delay and reorder", 0 },
		{ "{action:partition,delay_ms:10}", "delay_ms: only applies", 0 },
		{ "{action:delay,delay_ms:10,jitter_ms:11}", "jitter_ms: 11 is above delay_ms (10)", 0 },
		{ "{action:reorder,delay_ms:10,jitter_ms:5}", "jitter_ms: only applies to action delay", 0 },
		{ "{action:corrupt,jitter_ms:5}", "jitter_ms: only applies", 0 },
		{ "{action:delay,delay_ms:10,jitter_ms:x}", "jitter_ms: expected an unsigned integer", 0 },
		{ "{action:delay,delay_ms:10,jitter_ms:-1}", "jitter_ms", 0 },
		{ "{action:drop,duration_ms:0}", "duration_ms: expected a duration > 0", 0 },
		{ "{action:drop,duration_ms:x}", "duration_ms: expected an unsigned integer", 0 },
		{ "{action:drop,duration_ms:-1000}", "duration_ms", 0 },
		{ "{action:drop,duration_ms:1.5}", "duration_ms", 0 },
		{ "{action:drop,duration_ms:18446744073709551615}", "duration_ms: 18446744073709551615 is too large",
		  10 },
	};
	struct weft_nf *nf = weft_nf_new(4, 1);
	struct weft_nf *big = weft_nf_new(100, 1);
	struct weft_nf_rule r, orig;
	char err[256];
	char spec[1024];
	size_t o;
	int rc;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err[0] = '\0';
		rc = parse(nf, cases[i].spec, cases[i].now, &r, err, sizeof err);
		ok(rc == WEFT_EINVAL && strstr(err, cases[i].want) != NULL, "rejects %s: %s", cases[i].spec, err);
		if (rc != WEFT_EINVAL || !strstr(err, cases[i].want))
			diag("  rc %d, wanted message containing \"%s\"", rc, cases[i].want);
	}

	/* 65 peers. */
	o = (size_t)snprintf(spec, sizeof spec, "{action:drop,peers:[");
	for (int i = 0; i < 65; i++)
		o += (size_t)snprintf(spec + o, sizeof spec - o, "%s%d", i ? "," : "", i);
	snprintf(spec + o, sizeof spec - o, "]}");
	rc = parse(big, spec, 0, &r, err, sizeof err);
	ok(rc == WEFT_EINVAL && strstr(err, "peers: expected at most 64 node indices, got 65"), "65 peers: %s",
	   err);

	/* The output rule is left alone on failure. */
	memset(&orig, 0xab, sizeof orig);
	r = orig;
	parse(nf, "{action:drop,peers:[1,9]}", 0, &r, err, sizeof err);
	ok(memcmp(&r, &orig, sizeof r) == 0, "out untouched on error");

	/* A short error buffer truncates but stays a string; none at all is fine. */
	rc = parse(nf, "{action:drop,speed:1}", 0, &r, err, 8);
	ok(rc == WEFT_EINVAL && strlen(err) == 7, "8-byte err buffer: '%s'", err);
	enc(&W, "{action:zap}");
	rc = weft_nf_parse_rule(nf, W.buf, W.len, 0, &r, NULL, 0);
	is_int(rc, WEFT_EINVAL, "invalid with err = NULL");

	/* Hostile strings are echoed bounded and printable. */
	{
		uint8_t buf[300];
		size_t n = 0;

		buf[n++] = 0x82;
		buf[n++] = 0xa6;
		memcpy(buf + n, "action", 6);
		n += 6;
		buf[n++] = 0xa4;
		memcpy(buf + n, "drop", 4);
		n += 4;
		buf[n++] = 0xd9;
		buf[n++] = 200;
		for (int i = 0; i < 200; i++)
			buf[n++] = (uint8_t)(i % 3 == 0 ? '\n' : (i % 3 == 1 ? 0xff : 'k'));
		buf[n++] = 0x01;
		rc = weft_nf_parse_rule(nf, buf, n, 0, &r, err, sizeof err);
		bool printable = true;
		for (const char *p = err; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				printable = false;
		ok(rc == WEFT_EINVAL && printable && strlen(err) < 160 && strstr(err, "unknown parameter '"),
		   "200-byte binary key echoed short and printable: %s", err);
	}

	weft_nf_free(nf);
	weft_nf_free(big);
}

/* ---- parsing: hostile bytes ----------------------------------------------- */

struct raw_case {
	const char *what;
	const uint8_t *b;
	size_t len;
	const char *want;
};

static void test_parse_hostile(void)
{
	static const uint8_t map32_huge[] = { 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa6, 'a', 'c', 't', 'i', 'o', 'n' };
	static const uint8_t map16_short[] = { 0xde, 0x10, 0x00, 0xa6, 'a', 'c', 't', 'i', 'o', 'n' };
	static const uint8_t map_missing_value[] = { 0x81, 0xa6, 'a', 'c', 't', 'i', 'o', 'n' };
	static const uint8_t map_two_one_pair[] = { 0x82, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xa4, 'd', 'r', 'o', 'p' };
	static const uint8_t peers_arr32[] = { 0x82, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xa4, 'd', 'r', 'o', 'p',
					       0xa5, 'p', 'e', 'e', 'r', 's', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x00 };
	static const uint8_t peers_arr16_many[] = { 0x81, 0xa5, 'p', 'e', 'e', 'r', 's', 0xdc, 0x01, 0x00 };
	static const uint8_t str32_huge[] = { 0x81, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xdb, 0xff, 0xff, 0xff, 0xff,
					      'd' };
	static const uint8_t key_str32_huge[] = { 0x81, 0xdb, 0x7f, 0xff, 0xff, 0xff, 'a' };
	static const uint8_t reserved[] = { 0x81, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xc1 };
	static const uint8_t truncated_u64[] = { 0x82, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xa5, 'd', 'e', 'l', 'a',
						 'y', 0xa8, 'd', 'e', 'l', 'a', 'y', '_', 'm', 's', 0xcf, 0x00 };
	static const uint8_t trailing[] = { 0x81, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xa4, 'd', 'r', 'o', 'p', 0xc0 };
	static const uint8_t bin_key[] = { 0x81, 0xc4, 0x01, 'x', 0x01 };
	static const uint8_t ext_value[] = { 0x81, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xd4, 0x01, 0x00 };
	static const uint8_t peers_huge_idx[] = { 0x82, 0xa6, 'a', 'c', 't', 'i', 'o', 'n', 0xa4, 'd', 'r', 'o', 'p',
						  0xa5, 'p', 'e', 'e', 'r', 's', 0x91, 0xce, 0xff, 0xff, 0xff, 0xff };
	static const struct raw_case cases[] = {
		{ "map32 header declaring 2^32-1 entries", map32_huge, sizeof map32_huge, "params" },
		{ "map16 of 4096 entries in 10 bytes", map16_short, sizeof map16_short, "params" },
		{ "key without a value", map_missing_value, sizeof map_missing_value, "action" },
		{ "map of 2 with 1 pair", map_two_one_pair, sizeof map_two_one_pair, "params" },
		{ "peers array32 of 2^32-1", peers_arr32, sizeof peers_arr32, "peers" },
		{ "peers array16 of 256 in 3 bytes", peers_arr16_many, sizeof peers_arr16_many, "peers" },
		{ "action str32 of 4 GiB", str32_huge, sizeof str32_huge, "action" },
		{ "key str32 of 2 GiB", key_str32_huge, sizeof key_str32_huge, "params" },
		{ "reserved byte 0xc1 as a value", reserved, sizeof reserved, "action" },
		{ "truncated uint64 delay_ms", truncated_u64, sizeof truncated_u64, "delay_ms" },
		{ "trailing bytes after the map", trailing, sizeof trailing, "params: unexpected bytes after the map (1)" },
		{ "binary key", bin_key, sizeof bin_key, "parameter names must be strings" },
		{ "ext value for action", ext_value, sizeof ext_value, "action" },
		{ "peer 2^32-1", peers_huge_idx, sizeof peers_huge_idx, "peers[0]: 4294967295 is not a node index" },
	};
	struct weft_nf *nf = weft_nf_new(4, 1);
	struct weft_nf_rule r;
	char err[256];
	int rc;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err[0] = '\0';
		rc = weft_nf_parse_rule(nf, cases[i].b, cases[i].len, 0, &r, err, sizeof err);
		ok(rc == WEFT_EINVAL && strstr(err, cases[i].want), "%s: %s", cases[i].what, err);
	}
	rc = weft_nf_parse_rule(nf, NULL, 0, 0, &r, err, sizeof err);
	ok(rc == WEFT_EINVAL && strstr(err, "params: expected a map of named parameters, got nothing"),
	   "no bytes: %s", err);

	/* Deep nesting in a value is refused at the first level. */
	{
		uint8_t deep[200];
		size_t n = 0;

		deep[n++] = 0x82;
		memcpy(deep + n, "\xa6" "action\xa4" "drop\xa5" "peers", 18);
		n += 18;
		while (n < sizeof deep)
			deep[n++] = 0x91;
		rc = weft_nf_parse_rule(nf, deep, n, 0, &r, err, sizeof err);
		ok(rc == WEFT_EINVAL && strstr(err, "peers[0]"), "nested arrays in peers: %s", err);
	}

	/* Every truncation of a valid full encoding is rejected, never read past. */
	{
		int bad = 0;

		enc(&W, "{action:delay,peers:[1,2],direction:out,probability:0.5,delay_ms:300,jitter_ms:20,"
			"duration_ms:100000}");
		for (size_t len = 0; len < W.len; len++) {
			uint8_t *copy = malloc(len ? len : 1);

			memcpy(copy, W.buf, len);
			rc = weft_nf_parse_rule(nf, copy, len, 0, &r, err, sizeof err);
			if (rc != WEFT_EINVAL || err[0] == '\0')
				bad++;
			free(copy);
		}
		is_int(bad, 0, "every one of %zu truncations gives WEFT_EINVAL with a message", W.len);
	}

	/* Random mutations of a valid encoding and random bytes: 0 or EINVAL. */
	{
		uint64_t x = 0x1234567;
		int bad = 0, accepted = 0;
		uint8_t buf[96];

		enc(&W, "{action:delay,peers:[1,2],direction:out,probability:0.5,delay_ms:300,jitter_ms:20}");
		for (int iter = 0; iter < 20000; iter++) {
			size_t len;

			if (iter % 2 == 0) {
				len = W.len;
				memcpy(buf, W.buf, len);
				for (int k = 0; k < 3; k++) {
					x = x * 6364136223846793005ULL + 1442695040888963407ULL;
					buf[(x >> 33) % len] = (uint8_t)(x >> 17);
				}
			} else {
				x = x * 6364136223846793005ULL + 1442695040888963407ULL;
				len = (size_t)(x >> 40) % sizeof buf;
				for (size_t k = 0; k < len; k++) {
					x = x * 6364136223846793005ULL + 1442695040888963407ULL;
					buf[k] = (uint8_t)(x >> 33);
				}
				if (len)
					buf[0] = (uint8_t)(0x80 | (buf[0] & 0x0f)); /* mostly fixmaps */
			}
			err[0] = '\0';
			rc = weft_nf_parse_rule(nf, buf, len, 0, &r, err, sizeof err);
			if (rc == 0)
				accepted++;
			else if (rc != WEFT_EINVAL || err[0] == '\0')
				bad++;
		}
		is_int(bad, 0, "20000 mutated/random inputs: only 0 or WEFT_EINVAL with a message (%d accepted)",
		       accepted);
	}
	weft_nf_free(nf);
}

/* ---- add / clear / list / count ------------------------------------------- */

/* Reads the map of one listed rule into its fields; returns the key count. */
struct listed {
	uint64_t id, delay_ms, jitter_ms, remaining_ms;
	bool remaining_nil;
	double probability;
	char action[16], direction[8];
	uint32_t npeers;
	uint64_t peers[64];
	int keys;
};

static int read_listed(struct weft_mp_reader *rd, struct listed *l)
{
	uint32_t n;
	const char *k, *s;
	uint32_t klen, slen;

	memset(l, 0, sizeof *l);
	if (weft_mp_read_map(rd, &n))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		struct weft_mp_obj o;

		if (weft_mp_read_str(rd, &k, &klen))
			return -1;
		l->keys++;
#define KEY(name) (klen == strlen(name) && memcmp(k, name, klen) == 0)
		if (KEY("id")) {
			weft_mp_read_uint(rd, &l->id);
		} else if (KEY("action") || KEY("direction")) {
			char *dst = KEY("action") ? l->action : l->direction;
			size_t cap = KEY("action") ? sizeof l->action : sizeof l->direction;

			if (weft_mp_read_str(rd, &s, &slen) || slen >= cap)
				return -1;
			memcpy(dst, s, slen);
			dst[slen] = '\0';
		} else if (KEY("peers")) {
			if (weft_mp_read_array(rd, &l->npeers) || l->npeers > 64)
				return -1;
			for (uint32_t j = 0; j < l->npeers; j++)
				weft_mp_read_uint(rd, &l->peers[j]);
		} else if (KEY("probability")) {
			weft_mp_read(rd, &o);
			l->probability = o.type == WEFT_MP_FLOAT ? o.v.f : -1;
		} else if (KEY("delay_ms")) {
			weft_mp_read_uint(rd, &l->delay_ms);
		} else if (KEY("jitter_ms")) {
			weft_mp_read_uint(rd, &l->jitter_ms);
		} else if (KEY("remaining_ms")) {
			if (weft_mp_peek_nil(rd)) {
				weft_mp_read_nil(rd);
				l->remaining_nil = true;
			} else {
				weft_mp_read_uint(rd, &l->remaining_ms);
			}
		} else {
			return -1;
		}
#undef KEY
	}
	return rd->err ? -1 : 0;
}

static void test_rules(void)
{
	struct weft_nf *nf = weft_nf_new(4, 7);
	struct weft_nf_rule r;
	struct weft_mpw w;
	struct weft_mp_reader rd;
	struct listed l;
	uint32_t a, b, c, n;
	int rc;

	is_int(weft_nf_count(nf), 0, "a new layer has no rules");
	a = add(nf, "{action:drop,peers:[1,2],direction:out,probability:0.5}", 0);
	b = add(nf, "{action:delay,delay_ms:100,jitter_ms:10,duration_ms:5000}", 1000);
	c = add(nf, "{action:partition,peers:[3]}", 0);
	ok(a != 0 && b != 0 && c != 0 && a != b && b != c && a != c, "ids are non-zero and distinct (%u %u %u)",
	   a, b, c);
	is_int(weft_nf_count(nf), 3, "count 3 after three adds");

	weft_mpw_init(&w);
	weft_nf_list(nf, 2500, &w);
	weft_mp_reader_init(&rd, w.buf, w.len);
	rc = weft_mp_read_array(&rd, &n);
	ok(rc == 0 && n == 3, "list: an array of 3");
	rc = read_listed(&rd, &l);
	ok(rc == 0 && l.keys == 8 && l.id == a && strcmp(l.action, "omission") == 0 &&
		   strcmp(l.direction, "out") == 0 && l.npeers == 2 && l.peers[0] == 1 && l.peers[1] == 2 &&
		   l.probability == 0.5 && l.delay_ms == 0 && l.jitter_ms == 0 && l.remaining_nil,
	   "list[0]: the drop rule, listed as omission (the shared word), 8 keys, remaining_ms nil");
	rc = read_listed(&rd, &l);
	ok(rc == 0 && l.id == b && strcmp(l.action, "delay") == 0 && strcmp(l.direction, "both") == 0 &&
		   l.npeers == 0 && l.probability == 1.0 && l.delay_ms == 100 && l.jitter_ms == 10 &&
		   !l.remaining_nil && l.remaining_ms == 3500,
	   "list[1]: the delay rule, every peer (empty array), remaining_ms 3500");
	rc = read_listed(&rd, &l);
	ok(rc == 0 && l.id == c && strcmp(l.action, "partition") == 0 && strcmp(l.direction, "both") == 0 &&
		   l.npeers == 1 && l.peers[0] == 3,
	   "list[2]: the partition rule");
	ok(rd.err == 0 && weft_mp_remaining(&rd) == 0, "list: nothing else written");

	/* Expired rules are not listed. */
	weft_mpw_reset(&w);
	weft_nf_list(nf, 6000, &w);
	weft_mp_reader_init(&rd, w.buf, w.len);
	rc = weft_mp_read_array(&rd, &n);
	ok(rc == 0 && n == 2, "list at expiry: the expired rule is gone");
	is_int(weft_nf_count(nf), 2, "count 2 after the delay rule expired");

	is_int(weft_nf_clear(nf, a), 0, "clear(id) removes the rule");
	is_int(weft_nf_count(nf), 1, "count 1");
	is_int(weft_nf_clear(nf, a), WEFT_NOTFOUND, "clear of the same id again: WEFT_NOTFOUND");
	is_int(weft_nf_clear(nf, 9999), WEFT_NOTFOUND, "clear of an unknown id: WEFT_NOTFOUND");
	is_int(weft_nf_clear(nf, b), WEFT_NOTFOUND, "clear of an expired id: WEFT_NOTFOUND");
	a = add(nf, "{action:duplicate}", 0);
	ok(a != 0 && a != b && a != c, "a new rule gets a fresh id (%u)", a);
	is_int(weft_nf_clear(nf, 0), 0, "clear(0) removes every rule");
	is_int(weft_nf_count(nf), 0, "count 0");
	is_int(weft_nf_clear(nf, 0), 0, "clear(0) with no rules is fine");
	weft_mpw_reset(&w);
	weft_nf_list(nf, 0, &w);
	ok(w.len == 1 && w.buf[0] == 0x90, "list of no rules is an empty array");

	/* The 64-rule limit. */
	{
		int fails = 0;

		for (int i = 0; i < WEFT_NF_MAX_RULES; i++)
			if (add(nf, "{action:corrupt,probability:0.01}", 0) == 0)
				fails++;
		is_int(fails, 0, "64 rules added");
		parse(nf, "{action:drop}", 0, &r, NULL, 0);
		r.id = 0;
		is_int(weft_nf_add(nf, &r), WEFT_ETOOBIG, "the 65th: WEFT_ETOOBIG");
		is_int(weft_nf_count(nf), 64, "count stays 64");
		weft_nf_clear(nf, 0);
	}

	/* Rules built by hand are checked. */
	parse(nf, "{action:drop}", 0, &r, NULL, 0);
	r.peers[0] = 4;
	r.npeers = 1;
	is_int(weft_nf_add(nf, &r), WEFT_EINVAL, "add: a peer >= n is refused");
	r.npeers = 0;
	r.probability = 0;
	is_int(weft_nf_add(nf, &r), WEFT_EINVAL, "add: probability 0 is refused");
	r.probability = 1;
	r.dir = (enum weft_nf_dir)0;
	is_int(weft_nf_add(nf, &r), WEFT_EINVAL, "add: direction 0 is refused");
	is_int(weft_nf_count(nf), 0, "nothing was added");

	weft_mpw_free(&w);
	weft_nf_free(nf);
}

/* ---- judging -------------------------------------------------------------- */

static struct weft_nf_verdict judge(struct weft_nf *nf, enum weft_nf_dir dir, uint32_t peer, uint64_t now)
{
	struct weft_nf_verdict v;

	memset(&v, 0x5a, sizeof v);
	weft_nf_judge(nf, dir, peer, now, &v);
	return v;
}

static bool untouched(struct weft_nf_verdict v)
{
	return !v.drop && v.copies == 1 && v.delay_us == 0 && !v.corrupt;
}

static void test_judge(void)
{
	struct weft_nf *nf = weft_nf_new(4, 42);
	struct weft_nf_verdict v;
	uint64_t st[6];
	int count;

	ok(untouched(judge(nf, WEFT_NF_OUT, 1, 0)), "no rules: the message goes on untouched");

	/* drop to listed peer only, in the listed direction */
	add(nf, "{action:drop,peers:[1],direction:out}", 0);
	ok(judge(nf, WEFT_NF_OUT, 1, 0).drop, "drop out to peer 1");
	ok(untouched(judge(nf, WEFT_NF_OUT, 2, 0)), "no drop out to peer 2");
	ok(untouched(judge(nf, WEFT_NF_IN, 1, 0)), "no drop in from peer 1 (direction out)");
	weft_nf_clear(nf, 0);

	add(nf, "{action:drop,peers:[2],direction:in}", 0);
	ok(judge(nf, WEFT_NF_IN, 2, 0).drop, "direction in: drops from peer 2");
	ok(!judge(nf, WEFT_NF_OUT, 2, 0).drop, "direction in: nothing dropped to peer 2");
	weft_nf_clear(nf, 0);

	add(nf, "{action:drop}", 0);
	ok(judge(nf, WEFT_NF_IN, 0, 0).drop && judge(nf, WEFT_NF_OUT, 3, 0).drop,
	   "no peers, both directions: drops everything");
	weft_nf_clear(nf, 0);

	add(nf, "{action:partition,peers:[0,3],direction:out}", 0);
	ok(judge(nf, WEFT_NF_IN, 0, 0).drop && judge(nf, WEFT_NF_OUT, 0, 0).drop && judge(nf, WEFT_NF_IN, 3, 0).drop &&
		   judge(nf, WEFT_NF_OUT, 3, 0).drop,
	   "partition drops both directions to and from its peers");
	ok(untouched(judge(nf, WEFT_NF_IN, 1, 0)) && untouched(judge(nf, WEFT_NF_OUT, 2, 0)),
	   "partition leaves the other peers alone");
	weft_nf_clear(nf, 0);

	/* probability */
	add(nf, "{action:drop,probability:0.5}", 0);
	count = 0;
	for (int i = 0; i < 10000; i++)
		count += judge(nf, WEFT_NF_OUT, (uint32_t)(i % 4), 0).drop;
	ok(count >= 4500 && count <= 5500, "probability 0.5 drops %d of 10000 (45%%..55%%)", count);
	weft_nf_clear(nf, 0);
	add(nf, "{action:drop,probability:0.1}", 0);
	count = 0;
	for (int i = 0; i < 10000; i++)
		count += judge(nf, WEFT_NF_OUT, 1, 0).drop;
	ok(count >= 800 && count <= 1200, "probability 0.1 drops %d of 10000 (8%%..12%%)", count);
	weft_nf_clear(nf, 0);

	/* delay with jitter */
	add(nf, "{action:delay,delay_ms:100,jitter_ms:20}", 0);
	{
		uint64_t lo = UINT64_MAX, hi = 0;
		bool in_range = true, clean = true;

		for (int i = 0; i < 5000; i++) {
			v = judge(nf, WEFT_NF_OUT, 1, 0);
			if (v.delay_us < 80000 || v.delay_us > 120000)
				in_range = false;
			if (v.drop || v.copies != 1 || v.corrupt)
				clean = false;
			lo = v.delay_us < lo ? v.delay_us : lo;
			hi = v.delay_us > hi ? v.delay_us : hi;
		}
		ok(in_range, "delay 100 +- 20 ms: every delay in [80000, 120000] us (saw %llu..%llu)",
		   (unsigned long long)lo, (unsigned long long)hi);
		ok(lo < 82000 && hi > 118000, "jitter covers the range");
		ok(clean, "delay only delays");
	}
	weft_nf_clear(nf, 0);
	add(nf, "{action:delay,delay_ms:100}", 0);
	is_int((long long)judge(nf, WEFT_NF_IN, 2, 0).delay_us, 100000, "delay 100 ms, no jitter: 100000 us");
	weft_nf_clear(nf, 0);
	add(nf, "{action:delay,delay_ms:1,jitter_ms:1}", 0);
	{
		bool in_range = true;

		for (int i = 0; i < 2000; i++) {
			v = judge(nf, WEFT_NF_OUT, 0, 0);
			if (v.delay_us > 2000)
				in_range = false;
		}
		ok(in_range, "jitter = delay: delays in [0, 2000] us");
	}
	weft_nf_clear(nf, 0);

	/* reorder */
	add(nf, "{action:reorder,delay_ms:50}", 0);
	{
		uint64_t lo = UINT64_MAX, hi = 0;
		bool in_range = true;

		for (int i = 0; i < 5000; i++) {
			v = judge(nf, WEFT_NF_OUT, 1, 0);
			if (v.delay_us > 50000 || v.drop || v.copies != 1)
				in_range = false;
			lo = v.delay_us < lo ? v.delay_us : lo;
			hi = v.delay_us > hi ? v.delay_us : hi;
		}
		ok(in_range && lo < 2000 && hi > 48000, "reorder 50 ms: holds in [0, 50000] us, spread (%llu..%llu)",
		   (unsigned long long)lo, (unsigned long long)hi);
	}
	weft_nf_clear(nf, 0);

	/* duplicate, corrupt */
	add(nf, "{action:duplicate,peers:[2]}", 0);
	v = judge(nf, WEFT_NF_OUT, 2, 0);
	ok(v.copies == 2 && !v.drop && !v.corrupt && v.delay_us == 0, "duplicate: copies 2");
	ok(judge(nf, WEFT_NF_OUT, 1, 0).copies == 1, "duplicate: other peers copies 1");
	weft_nf_clear(nf, 0);
	add(nf, "{action:corrupt}", 0);
	v = judge(nf, WEFT_NF_IN, 0, 0);
	ok(v.corrupt && !v.drop && v.copies == 1, "corrupt: flag set");
	weft_nf_clear(nf, 0);

	/* composition */
	add(nf, "{action:delay,delay_ms:100}", 0);
	add(nf, "{action:delay,delay_ms:30,peers:[1]}", 0);
	is_int((long long)judge(nf, WEFT_NF_OUT, 1, 0).delay_us, 130000, "two delay rules add: 130000 us");
	is_int((long long)judge(nf, WEFT_NF_OUT, 2, 0).delay_us, 100000, "only the matching one for peer 2");
	add(nf, "{action:duplicate}", 0);
	add(nf, "{action:corrupt}", 0);
	v = judge(nf, WEFT_NF_OUT, 1, 0);
	ok(v.delay_us == 130000 && v.copies == 2 && v.corrupt && !v.drop, "delay + duplicate + corrupt compose");
	add(nf, "{action:drop,peers:[3]}", 0);
	v = judge(nf, WEFT_NF_OUT, 3, 0);
	ok(v.drop, "a drop rule wins over the others");
	weft_nf_clear(nf, 0);

	/* expiry */
	add(nf, "{action:drop,duration_ms:1000}", 5000);
	ok(judge(nf, WEFT_NF_OUT, 1, 5999).drop, "before expiry (5999 < 6000): dropped");
	is_int(weft_nf_count(nf), 1, "still there at 5999");
	ok(untouched(judge(nf, WEFT_NF_OUT, 1, 6000)), "at expiry (6000): untouched");
	is_int(weft_nf_count(nf), 0, "the expired rule was removed by judge");
	weft_nf_clear(nf, 0);

	/* stats count messages per action */
	weft_nf_free(nf);
	nf = weft_nf_new(4, 42);
	add(nf, "{action:delay,delay_ms:10}", 0);
	add(nf, "{action:delay,delay_ms:20}", 0);
	add(nf, "{action:duplicate,peers:[1]}", 0);
	add(nf, "{action:drop,peers:[2]}", 0);
	add(nf, "{action:partition,peers:[3]}", 0);
	judge(nf, WEFT_NF_OUT, 0, 0); /* delay */
	judge(nf, WEFT_NF_OUT, 1, 0); /* delay + duplicate */
	judge(nf, WEFT_NF_OUT, 2, 0); /* drop */
	judge(nf, WEFT_NF_IN, 3, 0);  /* partition */
	judge(nf, WEFT_NF_IN, 3, 0);  /* partition */
	weft_nf_stats(nf, st);
	ok(st[WEFT_NF_DELAY] == 2 && st[WEFT_NF_DUPLICATE] == 1 && st[WEFT_NF_DROP] == 1 && st[WEFT_NF_PARTITION] == 2 &&
		   st[WEFT_NF_REORDER] == 0 && st[WEFT_NF_CORRUPT] == 0,
	   "stats: delay 2, duplicate 1, drop 1, partition 2 (got %llu %llu %llu %llu %llu %llu)",
	   (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)st[2],
	   (unsigned long long)st[3], (unsigned long long)st[4], (unsigned long long)st[5]);
	weft_nf_free(nf);
}

/* ---- determinism and corrupt ---------------------------------------------- */

static const char *const mix[] = {
	"{action:drop,probability:0.3,peers:[1]}",
	"{action:delay,delay_ms:50,jitter_ms:40,probability:0.5}",
	"{action:reorder,delay_ms:30,direction:in}",
	"{action:duplicate,probability:0.2}",
	"{action:corrupt,probability:0.1}",
};

static struct weft_nf *mixed(uint64_t seed)
{
	struct weft_nf *nf = weft_nf_new(4, seed);

	for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++)
		add(nf, mix[i], 0);
	return nf;
}

static void test_determinism(void)
{
	struct weft_nf *a = mixed(99), *b = mixed(99), *c = mixed(100);
	struct weft_nf_verdict va, vb, vc;
	int same = 1, differs_c = 0;

	for (int i = 0; i < 5000; i++) {
		enum weft_nf_dir dir = i % 3 ? WEFT_NF_OUT : WEFT_NF_IN;
		uint32_t peer = (uint32_t)(i % 4);

		weft_nf_judge(a, dir, peer, 0, &va);
		weft_nf_judge(b, dir, peer, 0, &vb);
		weft_nf_judge(c, dir, peer, 0, &vc);
		if (va.drop != vb.drop || va.copies != vb.copies || va.delay_us != vb.delay_us ||
		    va.corrupt != vb.corrupt)
			same = 0;
		if (va.drop != vc.drop || va.delay_us != vc.delay_us)
			differs_c = 1;
	}
	ok(same, "same seed: the same 5000 verdicts");
	ok(differs_c, "another seed: different verdicts");

	{
		uint8_t ma[64] = { 0 }, mb[64] = { 0 };

		for (int i = 0; i < 100; i++) {
			weft_nf_corrupt(a, ma, sizeof ma);
			weft_nf_corrupt(b, mb, sizeof mb);
		}
		is_mem(ma, mb, sizeof ma, "same seed: the same corruption");
	}
	weft_nf_free(a);
	weft_nf_free(b);
	weft_nf_free(c);
}

static void test_corrupt(void)
{
	struct weft_nf *nf = weft_nf_new(4, 5);
	uint8_t msg[256], orig[256];
	int wrong = 0;
	bool hit_first = false, hit_last = false;

	for (size_t i = 0; i < sizeof msg; i++)
		orig[i] = (uint8_t)(i * 7);
	for (int t = 0; t < 5000; t++) {
		int diff = 0;

		memcpy(msg, orig, sizeof msg);
		weft_nf_corrupt(nf, msg, sizeof msg);
		for (size_t i = 0; i < sizeof msg; i++)
			if (msg[i] != orig[i]) {
				diff++;
				hit_first |= i == 0;
				hit_last |= i == sizeof msg - 1;
			}
		if (diff != 1)
			wrong++;
	}
	is_int(wrong, 0, "corrupt changes exactly one byte, 5000 times");
	ok(hit_first && hit_last, "any byte may be hit, the first and the last included");

	{
		uint8_t one = 0x42;
		int unchanged = 0;

		for (int t = 0; t < 1000; t++) {
			uint8_t before = one;

			weft_nf_corrupt(nf, &one, 1);
			unchanged += one == before;
		}
		is_int(unchanged, 0, "a 1-byte message always changes");
	}
	weft_nf_corrupt(nf, msg, 0);
	ok(1, "len 0 is a no-op");
	weft_nf_free(nf);
}

int main(void)
{
	weft_mpw_init(&W);
	test_parse_valid();
	test_parse_invalid();
	test_parse_hostile();
	test_rules();
	test_judge();
	test_determinism();
	test_corrupt();
	weft_nf_free(NULL);
	weft_mpw_free(&W);
	return done_testing();
}
