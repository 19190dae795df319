/* genesis.c - the committee's genesis file (weft/genesis.h): parsing and
 * checking the JSON every node shares (chain id, protocol, free-form
 * protocol parameters, the n nodes with their Ed25519 keys and addresses),
 * and writing it back.
 *
 * The parser is strict, because a typo in a genesis file splits a committee
 * in ways that are hard to diagnose later: jansson rejects duplicate object
 * keys and NUL bytes, unknown keys are errors (except inside "params", which
 * belongs to the protocol), and every error names the file and the JSON path
 * of the offending value: "genesis.json: $.nodes[2].key: expected 64 hex
 * digits, got \"abc\"".  A parse either fills the whole struct or leaves it
 * zeroed with nothing allocated.
 *
 * The writer builds the document in the canonical key order (chain_id,
 * protocol, params, nodes), checks that it parses back, and replaces the
 * file atomically (weft_write_file_atomic). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/genesis.h"
#include "weft/json.h"
#include "weft/mp.h"
#include "weft/util.h"

#define MAX_NODES 1024
#define MAX_CHAIN_ID 64         /* bytes: the alphabet is ASCII */
#define MAX_PROTOCOL 64         /* characters (code points) */
#define MAX_NAME 64             /* characters (code points) */
#define MAX_HOSTNAME 253        /* RFC 1035 text form, without a final dot */
#define MAX_LABEL 63
#define MAX_FILE ((off_t)64 << 20) /* far above 1024 nodes and any params */
#define SHOW_MAX 48             /* bytes of a string quoted in a message */

/* Where a parse is and where its message goes. */
struct ctx {
	const char *name; /* the file name that starts every message */
	char *err;
	size_t errlen;
};

/* A node's address in comparable form, for the uniqueness check. */
struct addr_key {
	int kind;          /* AF_INET, AF_INET6, or 0 for a host name */
	uint8_t ip[16];
	uint16_t port;
};

/* Writes "NAME: PATH: MESSAGE" into the error buffer; returns WEFT_EINVAL. */
__attribute__((format(printf, 3, 4))) static int fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	int off;

	if (c->errlen == 0)
		return WEFT_EINVAL;
	off = snprintf(c->err, c->errlen, "%s: %s: ", c->name, path);
	if (off < 0)
		off = 0;
	if ((size_t)off < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + off, c->errlen - (size_t)off, fmt, ap);
		va_end(ap);
	}
	return WEFT_EINVAL;
}

/* Quotes up to SHOW_MAX bytes of s (len bytes) into out, escaping quotes,
 * backslashes and control characters, and says how long s was when it is
 * cut.  Never cuts inside a UTF-8 sequence. */
static void show_string(char *out, size_t outlen, const char *s, size_t len)
{
	size_t o = 0, show = len;

	if (show > SHOW_MAX) {
		show = SHOW_MAX;
		while (show > 0 && ((unsigned char)s[show] & 0xc0) == 0x80)
			show--;
	}
	if (outlen < 16) {
		if (outlen > 0)
			out[0] = '\0';
		return;
	}
	out[o++] = '"';
	for (size_t i = 0; i < show && o + 8 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o] = '\0';
	if (show < len)
		snprintf(out + o, outlen - o, "...\" (%zu bytes)", len);
	else
		snprintf(out + o, outlen - o, "\"");
}

/* A short description of a JSON value for "got ..." (v NULL: missing). */
static const char *show(char *buf, size_t len, const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		show_string(buf, len, json_string_value(v), json_string_length(v));
		return buf;
	case JSON_INTEGER:
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, len, "%.17g", json_real_value(v));
		return buf;
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_NULL:
		return "null";
	}
	return "an unknown value";
}

/* Appends .KEY to base, or ["KEY"] when KEY is not a plain identifier. */
static void member_path(char *out, size_t outlen, const char *base, const char *key)
{
	bool plain = key[0] != '\0';
	for (const char *k = key; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
		      *k == '_'))
			plain = false;
	if (plain && strlen(key) <= SHOW_MAX) {
		snprintf(out, outlen, "%s.%s", base, key);
	} else {
		char q[SHOW_MAX * 4 + 32];
		show_string(q, sizeof(q), key, strlen(key));
		snprintf(out, outlen, "%s[%s]", base, q);
	}
}

/* Fails on the first key of obj that is not in allowed (NULL-terminated);
 * list names them for the message. */
static int check_keys(struct ctx *c, json_t *obj, const char *base, const char *const *allowed, const char *list)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool known = false;
		for (int i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				known = true;
		if (!known) {
			char path[SHOW_MAX * 4 + 96];
			member_path(path, sizeof(path), base, key);
			return fail(c, path, "unknown key; expected one of %s", list);
		}
	}
	return 0;
}

/* The member key of obj as a string: 0 and *s, or a failure that says what
 * was expected (missing, or another type). */
static int get_string(struct ctx *c, json_t *obj, const char *key, const char *path, const char *what,
		      const char **s, size_t *len)
{
	json_t *v = json_object_get(obj, key);
	char buf[SHOW_MAX * 4 + 32];

	if (!v)
		return fail(c, path, "missing; expected %s", what);
	if (!json_is_string(v))
		return fail(c, path, "expected %s, got %s", what, show(buf, sizeof(buf), v));
	*s = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

/* Number of UTF-8 code points in s (jansson has checked the encoding), or
 * SIZE_MAX when s holds a control character. */
static size_t text_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f)
			return SIZE_MAX;
		if ((ch & 0xc0) != 0x80)
			n++;
	}
	return n;
}

/* A non-empty string of at most max characters without control characters. */
static int get_text(struct ctx *c, json_t *obj, const char *key, const char *path, size_t max, char **out)
{
	char what[64], buf[SHOW_MAX * 4 + 32];
	const char *s;
	size_t len, n;
	int rc;

	snprintf(what, sizeof(what), "a string of 1 to %zu characters", max);
	rc = get_string(c, obj, key, path, what, &s, &len);
	if (rc < 0)
		return rc;
	n = text_chars(s, len);
	if (n == SIZE_MAX)
		return fail(c, path, "expected %s without control characters, got %s", what,
			    show(buf, sizeof(buf), json_object_get(obj, key)));
	if (n == 0)
		return fail(c, path, "expected %s, got \"\"", what);
	if (n > max && len > SHOW_MAX) /* show() gives the length */
		return fail(c, path, "expected %s, got %s", what, show(buf, sizeof(buf), json_object_get(obj, key)));
	if (n > max)
		return fail(c, path, "expected %s, got %s (%zu characters)", what,
			    show(buf, sizeof(buf), json_object_get(obj, key)), n);
	*out = weft_xstrdup(s);
	return 0;
}

static int get_chain_id(struct ctx *c, json_t *root, char **out)
{
	static const char what[] = "a string of 1 to 64 characters from [A-Za-z0-9._-]";
	char buf[SHOW_MAX * 4 + 32];
	const char *s;
	size_t len;
	int rc = get_string(c, root, "chain_id", "$.chain_id", what, &s, &len);

	if (rc < 0)
		return rc;
	bool good = len >= 1 && len <= MAX_CHAIN_ID;
	for (size_t i = 0; good && i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			good = false;
	if (!good)
		return fail(c, "$.chain_id", "expected %s, got %s", what,
			    show(buf, sizeof(buf), json_object_get(root, "chain_id")));
	*out = weft_xstrdup(s);
	return 0;
}

/* "params": a free-form object, kept as a msgpack map. */
static int get_params(struct ctx *c, json_t *v, struct weft_genesis *g)
{
	char buf[SHOW_MAX * 4 + 32];
	struct weft_mpw w;

	if (!json_is_object(v))
		return fail(c, "$.params", "expected an object, got %s", show(buf, sizeof(buf), v));
	weft_mpw_init(&w);
	int rc = weft_json_to_mp(&w, v, 0);
	if (rc < 0) {
		weft_mpw_free(&w);
		if (rc == WEFT_ETOOBIG)
			return fail(c, "$.params", "expected at most %d levels of nesting, got more",
				    WEFT_MP_MAX_DEPTH);
		return fail(c, "$.params", "expected a value msgpack can hold (%s)", weft_strerror(rc));
	}
	g->params = weft_mpw_steal(&w, &g->plen);
	return 0;
}

/* ---- addresses ---- */

/* The port after the colon: a decimal number (weft_parse_u64's strict
 * form, so no leading zero) in 1..65535. */
static bool parse_port(const char *s, uint16_t *port)
{
	uint64_t v;

	if (weft_parse_u64(s, &v) < 0 || v < 1 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* RFC 1123 host name: dot-separated labels of 1..63 letters, digits,
 * hyphens (not first or last) and underscores (container and service names
 * use them), at most 253 characters; the last label is not all digits
 * (RFC 3696 2), so that a mistyped IPv4 literal is not taken for a name. */
static bool valid_hostname(const char *h, size_t len)
{
	size_t label = 0;
	const char *last = memrchr(h, '.', len);

	last = last ? last + 1 : h;
	if (strspn(last, "0123456789") == len - (size_t)(last - h))
		return false;

	if (len == 0 || len > MAX_HOSTNAME)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char ch = i < len ? h[i] : '.';
		if (ch == '.') {
			if (label == 0 || label > MAX_LABEL || h[i - 1] == '-')
				return false;
			label = 0;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			   ch == '_' || (ch == '-' && label > 0)) {
			label++;
		} else {
			return false;
		}
	}
	return true;
}

/* Splits "host:port", "[v6]:port" into n->host (without brackets) and
 * n->port, filling key for the uniqueness check.  On failure *why says
 * what was wrong. */
static int parse_address(const char *a, struct weft_genesis_node *n, struct addr_key *key, const char **why)
{
	char host[MAX_HOSTNAME + 1];
	const char *colon, *hs;
	size_t hlen;

	memset(key, 0, sizeof(*key));
	if (a[0] == '[') {
		const char *close = strchr(a, ']');
		if (!close || close[1] != ':') {
			*why = "an IPv6 address as [address]:port";
			return WEFT_EINVAL;
		}
		hs = a + 1;
		hlen = (size_t)(close - hs);
		colon = close + 1;
		if (hlen == 0 || hlen >= INET6_ADDRSTRLEN) {
			*why = "an IPv6 literal inside the brackets";
			return WEFT_EINVAL;
		}
		memcpy(host, hs, hlen);
		host[hlen] = '\0';
		if (inet_pton(AF_INET6, host, key->ip) != 1) {
			*why = "an IPv6 literal inside the brackets";
			return WEFT_EINVAL;
		}
		key->kind = AF_INET6;
	} else {
		colon = strrchr(a, ':');
		if (!colon) {
			*why = "host:port";
			return WEFT_EINVAL;
		}
		hs = a;
		hlen = (size_t)(colon - a);
		if (memchr(hs, ':', hlen)) {
			*why = "an IPv6 address in brackets, as [address]:port";
			return WEFT_EINVAL;
		}
		if (hlen == 0 || hlen > MAX_HOSTNAME) {
			*why = "a host (IPv4 literal or host name of 1 to 253 characters) before the ':'";
			return WEFT_EINVAL;
		}
		memcpy(host, hs, hlen);
		host[hlen] = '\0';
		if (strspn(host, "0123456789.") == hlen) {
			if (inet_pton(AF_INET, host, key->ip) != 1) {
				*why = "a dotted-quad IPv4 literal (or a host name) before the ':'";
				return WEFT_EINVAL;
			}
			key->kind = AF_INET;
		} else if (!valid_hostname(host, hlen)) {
			*why = "an IPv4 literal or a host name (letters, digits, '-', '_', '.') before the ':'";
			return WEFT_EINVAL;
		}
	}
	if (!parse_port(colon + 1, &key->port)) {
		*why = "a port from 1 to 65535 after the ':'";
		return WEFT_EINVAL;
	}
	n->port = key->port;
	n->host = weft_xstrdup(host);
	return 0;
}

static bool same_addr(const struct addr_key *a, const char *ha, const struct addr_key *b, const char *hb)
{
	if (a->port != b->port || a->kind != b->kind)
		return false;
	if (a->kind == 0)
		return strcasecmp(ha, hb) == 0;
	return memcmp(a->ip, b->ip, sizeof(a->ip)) == 0;
}

/* ---- nodes ---- */

static int parse_node(struct ctx *c, json_t *v, uint32_t i, struct weft_genesis_node *n, struct addr_key *ak)
{
	static const char *const keys[] = {"name", "key", "address", NULL};
	char base[32], path[64], buf[SHOW_MAX * 4 + 32];
	const char *s, *why;
	size_t len;
	int rc;

	snprintf(base, sizeof(base), "$.nodes[%" PRIu32 "]", i);
	if (!json_is_object(v))
		return fail(c, base, "expected an object {\"name\", \"key\", \"address\"}, got %s",
			    show(buf, sizeof(buf), v));
	rc = check_keys(c, v, base, keys, "name, key, address");
	if (rc < 0)
		return rc;

	snprintf(path, sizeof(path), "%s.name", base);
	rc = get_text(c, v, "name", path, MAX_NAME, &n->name);
	if (rc < 0)
		return rc;

	snprintf(path, sizeof(path), "%s.key", base);
	rc = get_string(c, v, "key", path, "64 hex digits", &s, &len);
	if (rc < 0)
		return rc;
	if (weft_hex_decode(n->pk, WEFT_PK_LEN, s, len) != 0) {
		if (len != 2 * WEFT_PK_LEN && strspn(s, "0123456789abcdefABCDEF") == len)
			return fail(c, path, "expected 64 hex digits, got %zu", len);
		return fail(c, path, "expected 64 hex digits, got %s",
			    show(buf, sizeof(buf), json_object_get(v, "key")));
	}

	snprintf(path, sizeof(path), "%s.address", base);
	rc = get_string(c, v, "address", path, "host:port", &s, &len);
	if (rc < 0)
		return rc;
	if (len > MAX_HOSTNAME + 8 || strlen(s) != len)
		why = "host:port";
	else if (parse_address(s, n, ak, &why) == 0)
		return 0;
	return fail(c, path, "expected %s, got %s", why, show(buf, sizeof(buf), json_object_get(v, "address")));
}

/* Names, keys and addresses must be distinct; reports the later node of the
 * first pair found. */
static int check_unique(struct ctx *c, const struct weft_genesis *g, const struct addr_key *ak)
{
	char path[64], buf[SHOW_MAX * 4 + 32];

	for (uint32_t i = 1; i < g->n; i++) {
		const struct weft_genesis_node *n = &g->nodes[i];
		for (uint32_t j = 0; j < i; j++) {
			const struct weft_genesis_node *o = &g->nodes[j];
			if (strcmp(n->name, o->name) == 0) {
				snprintf(path, sizeof(path), "$.nodes[%" PRIu32 "].name", i);
				show_string(buf, sizeof(buf), n->name, strlen(n->name));
				return fail(c, path, "expected a name no other node has, got %s (also $.nodes[%" PRIu32
					    "].name)", buf, j);
			}
			if (memcmp(n->pk, o->pk, WEFT_PK_LEN) == 0) {
				snprintf(path, sizeof(path), "$.nodes[%" PRIu32 "].key", i);
				return fail(c, path, "expected a key no other node has, got the key of $.nodes[%" PRIu32
					    "]", j);
			}
			if (same_addr(&ak[i], n->host, &ak[j], o->host)) {
				snprintf(path, sizeof(path), "$.nodes[%" PRIu32 "].address", i);
				return fail(c, path, "expected an address no other node has, got the address of "
					    "$.nodes[%" PRIu32 "]", j);
			}
		}
	}
	return 0;
}

static int parse_nodes(struct ctx *c, json_t *root, struct weft_genesis *g)
{
	char buf[SHOW_MAX * 4 + 32];
	json_t *v = json_object_get(root, "nodes");
	struct addr_key *ak;
	size_t n;
	int rc = 0;

	if (!v)
		return fail(c, "$.nodes", "missing; expected an array of 1 to %d nodes", MAX_NODES);
	if (!json_is_array(v))
		return fail(c, "$.nodes", "expected an array of 1 to %d nodes, got %s", MAX_NODES,
			    show(buf, sizeof(buf), v));
	n = json_array_size(v);
	if (n < 1 || n > MAX_NODES)
		return fail(c, "$.nodes", "expected 1 to %d nodes, got %zu", MAX_NODES, n);
	g->nodes = weft_xcalloc(n, sizeof(*g->nodes));
	g->n = (uint32_t)n; /* from here weft_genesis_free releases what is filled */
	ak = weft_xcalloc(n, sizeof(*ak));
	for (uint32_t i = 0; i < g->n && rc == 0; i++)
		rc = parse_node(c, json_array_get(v, i), i, &g->nodes[i], &ak[i]);
	if (rc == 0)
		rc = check_unique(c, g, ak);
	free(ak);
	if (rc == 0)
		g->f = (g->n - 1) / 3;
	return rc;
}

static int parse_root(struct ctx *c, json_t *root, struct weft_genesis *g)
{
	/* "accounts" is accepted and ignored, for genesis files written before
	 * the ledger took its allocations from params.balances (docs/ledger.md). */
	static const char *const keys[] = {"chain_id", "protocol", "params", "nodes", "accounts", NULL};
	char buf[SHOW_MAX * 4 + 32];
	json_t *params;
	int rc;

	if (!json_is_object(root))
		return fail(c, "$", "expected an object, got %s", show(buf, sizeof(buf), root));
	rc = check_keys(c, root, "$", keys, "chain_id, protocol, params, nodes, accounts");
	if (rc == 0)
		rc = get_chain_id(c, root, &g->chain_id);
	if (rc == 0)
		rc = get_text(c, root, "protocol", "$.protocol", MAX_PROTOCOL, &g->protocol);
	params = json_object_get(root, "params");
	if (rc == 0 && params)
		rc = get_params(c, params, g);
	if (rc == 0)
		rc = parse_nodes(c, root, g);
	return rc;
}

/* Parses len bytes of JSON text (NUL bytes in it are errors). */
static int parse_buf(struct weft_genesis *g, const char *text, size_t len, const char *name, char *err,
		     size_t errlen)
{
	struct ctx c = {name ? name : "genesis", err, errlen};
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(g, 0, sizeof(*g));
	if (errlen > 0)
		err[0] = '\0';
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (errlen > 0)
			snprintf(err, errlen, "%s: line %d, column %d: invalid JSON: %s", c.name, jerr.line,
				 jerr.column, jerr.text);
		return WEFT_EINVAL;
	}
	rc = parse_root(&c, root, g);
	json_decref(root);
	if (rc < 0)
		weft_genesis_free(g);
	return rc;
}

int weft_genesis_parse(struct weft_genesis *g, const char *json, const char *name, char *err, size_t errlen)
{
	return parse_buf(g, json, strlen(json), name, err, errlen);
}

int weft_genesis_load(struct weft_genesis *g, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	size_t len = 0;
	int fd, rc;

	memset(g, 0, sizeof(*g));
	if (errlen > 0)
		err[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (errlen > 0)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		return e == ENOENT ? WEFT_NOTFOUND : weft_err_from_errno(e);
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		if (errlen > 0)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		close(fd);
		return weft_err_from_errno(e);
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
		if (errlen > 0 && !S_ISREG(st.st_mode))
			snprintf(err, errlen, "%s: not a regular file", path);
		else if (errlen > 0)
			snprintf(err, errlen, "%s: too large (%lld bytes, at most %lld)", path,
				 (long long)st.st_size, (long long)MAX_FILE);
		close(fd);
		return WEFT_EINVAL;
	}
	/* Read one byte past the size seen, to notice a file that grew. */
	size_t cap = (size_t)st.st_size + 1;
	buf = weft_xcalloc(cap + 1, 1);
	while (len < cap) {
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			if (errlen > 0)
				snprintf(err, errlen, "%s: %s", path, strerror(e));
			close(fd);
			free(buf);
			return weft_err_from_errno(e);
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (len == cap) {
		if (errlen > 0)
			snprintf(err, errlen, "%s: changed while being read", path);
		free(buf);
		return WEFT_EINVAL;
	}
	rc = parse_buf(g, buf, len, path, err, errlen);
	free(buf);
	return rc;
}

void weft_genesis_free(struct weft_genesis *g)
{
	if (!g)
		return;
	free(g->chain_id);
	free(g->protocol);
	free(g->params);
	if (g->nodes) {
		for (uint32_t i = 0; i < g->n; i++) {
			free(g->nodes[i].name);
			free(g->nodes[i].host);
		}
		free(g->nodes);
	}
	memset(g, 0, sizeof(*g));
}

int weft_genesis_index(const struct weft_genesis *g, const uint8_t pk[WEFT_PK_LEN])
{
	for (uint32_t i = 0; i < g->n; i++)
		if (memcmp(g->nodes[i].pk, pk, WEFT_PK_LEN) == 0)
			return (int)i;
	return -1;
}

/* ---- writing ---- */

static void must(int rc)
{
	if (rc != 0)
		abort(); /* jansson fails here only on out-of-memory */
}

/* The document for g, or NULL when g is not complete enough to describe. */
static json_t *to_json(const struct weft_genesis *g)
{
	char hex[2 * WEFT_PK_LEN + 1];
	json_t *root, *nodes, *params = NULL;

	if (!g->chain_id || !g->protocol || !g->nodes || g->n == 0 || g->n > MAX_NODES)
		return NULL;
	if (g->params) {
		if (weft_mp_buf_to_json(g->params, g->plen, &params) < 0)
			return NULL;
		if (!json_is_object(params)) {
			json_decref(params);
			return NULL;
		}
	}
	root = json_object();
	nodes = json_array();
	if (!root || !nodes)
		abort();
	must(json_object_set_new(root, "chain_id", json_string(g->chain_id)));
	must(json_object_set_new(root, "protocol", json_string(g->protocol)));
	if (params)
		must(json_object_set_new(root, "params", params));
	must(json_object_set_new(root, "nodes", nodes));
	for (uint32_t i = 0; i < g->n; i++) {
		const struct weft_genesis_node *n = &g->nodes[i];
		char addr[MAX_HOSTNAME + 16];
		json_t *name;
		if (!n->name || !n->host || strlen(n->host) > MAX_HOSTNAME)
			goto bad;
		/* json_string() is NULL for text that is not UTF-8. */
		name = json_string(n->name);
		if (!name)
			goto bad;
		weft_hex_encode(hex, n->pk, WEFT_PK_LEN);
		snprintf(addr, sizeof(addr), strchr(n->host, ':') ? "[%s]:%u" : "%s:%u", n->host,
			 (unsigned)n->port);
		json_t *o = json_object();
		if (!o)
			abort();
		must(json_object_set_new(o, "name", name));
		must(json_object_set_new(o, "key", json_string(hex)));
		must(json_object_set_new(o, "address", json_string(addr)));
		must(json_array_append_new(nodes, o));
	}
	return root;
bad:
	json_decref(root);
	return NULL;
}

int weft_genesis_write(const struct weft_genesis *g, const char *path)
{
	struct weft_genesis check;
	char errbuf[8];
	json_t *root = to_json(g);
	char *text;
	int rc;

	if (!root)
		return WEFT_EINVAL;
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		abort();
	/* Never write a file that load would refuse (a bad chain id, two
	 * nodes with one key, ...). */
	rc = weft_genesis_parse(&check, text, path, errbuf, sizeof(errbuf));
	weft_genesis_free(&check);
	if (rc < 0) {
		free(text);
		return WEFT_EINVAL;
	}

	size_t len = strlen(text);
	text = weft_xrealloc(text, len + 2, 1); /* json_dumps allocates with malloc */
	text[len] = '\n';
	text[len + 1] = '\0';
	rc = weft_write_file_atomic(path, text, len + 1, 0644);
	free(text);
	return rc;
}
