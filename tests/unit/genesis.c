/* genesis.c - unit tests for include/weft/genesis.h (src/lib/genesis.c): a
 * valid genesis parses into every field (IPv4, IPv6 and host-name
 * addresses, params round trip through msgpack, f for several n, the
 * reserved "accounts" key), write then load gives the same committee in the
 * canonical pretty form, and every hostile input (wrong types, bad hex,
 * duplicate names / keys / addresses, bad ports and hosts, missing fields,
 * unknown keys, n = 0 and 1025, JSON syntax errors, huge strings) fails
 * with WEFT_EINVAL and a message naming the file and the JSON path.  Run
 * under `make SAN=1` it also checks that no path leaks. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/genesis.h"
#include "weft/json.h"

#define K0 "0000000000000000000000000000000000000000000000000000000000000001"
#define K1 "00000000000000000000000000000000000000000000000000000000000000a2"
#define K2 "00000000000000000000000000000000000000000000000000000000000000b3"
#define K3 "00000000000000000000000000000000000000000000000000000000000000c4"
#define K2_UPPER "00000000000000000000000000000000000000000000000000000000000000B3"

#define NODE(name, key, addr) "{\"name\": \"" name "\", \"key\": \"" key "\", \"address\": \"" addr "\"}"
#define NODES4                                                                                                    \
	NODE("node0", K0, "127.0.0.1:7100") ", " NODE("node1", K1, "[::1]:7101") ", "                            \
	NODE("node-2", K2, "node-2.example.org:7102") ", " NODE("n\u00e9ud 3", K3, "weft_node3:65535")
/* Runs of a 2-byte UTF-8 character as JSON escapes: E16 is 16 of them. */
#define E4 "\\u00e9\\u00e9\\u00e9\\u00e9"
#define E16 E4 E4 E4 E4
#define X16 "xxxxxxxxxxxxxxxx"
#define X65 X16 X16 X16 X16 "x"
#define PARAMS "{\"timeout_ms\": 250, \"batch\": {\"max\": 64, \"ratio\": 0.5}, \"tags\": [\"a\", null, true, -3]}"

static const char valid[] = "{\n"
			    "  \"chain_id\": \"weft-test.1_A\",\n"
			    "  \"protocol\": \"beb\",\n"
			    "  \"params\": " PARAMS ",\n"
			    "  \"nodes\": [" NODES4 "]\n"
			    "}\n";

static char *tmp;

/* A string of n copies of c (caller frees). */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* Nodes "n<i>" with distinct keys and ports, as a JSON array body. */
static char *gen_nodes(unsigned n)
{
	size_t cap = (size_t)n * 160 + 1, len = 0;
	char *s = malloc(cap);
	if (!s)
		abort();
	s[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		uint8_t pk[WEFT_PK_LEN] = {0};
		char hex[2 * WEFT_PK_LEN + 1];
		pk[0] = (uint8_t)(i >> 8);
		pk[1] = (uint8_t)i;
		pk[31] = 0x5a;
		weft_hex_encode(hex, pk, WEFT_PK_LEN);
		len += (size_t)snprintf(s + len, cap - len, "%s{\"name\": \"n%u\", \"key\": \"%s\", \"address\": "
					"\"127.0.0.1:%u\"}", i ? ", " : "", i, hex, 1000 + i);
	}
	return s;
}

static char *doc_with_nodes(const char *nodes)
{
	char *d;
	if (asprintf(&d, "{\"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": [%s]}", nodes) < 0)
		abort();
	return d;
}

static bool zeroed(const struct weft_genesis *g)
{
	return !g->chain_id && !g->protocol && !g->params && g->plen == 0 && g->n == 0 && g->f == 0 && !g->nodes;
}

static void unhex(uint8_t *out, const char *hex)
{
	if (weft_hex_decode(out, WEFT_PK_LEN, hex, strlen(hex)) != 0)
		abort();
}

static void test_valid(void)
{
	struct weft_genesis g;
	char err[512];
	uint8_t pk[WEFT_PK_LEN];

	int rc = weft_genesis_parse(&g, valid, "genesis.json", err, sizeof(err));
	is_int(rc, 0, "valid genesis parses (%s)", err);
	if (rc != 0)
		return;
	is_str(g.chain_id, "weft-test.1_A", "chain_id");
	is_str(g.protocol, "beb", "protocol");
	is_int(g.n, 4, "n = 4");
	is_int(g.f, 1, "f = 1");
	is_str(g.nodes[0].name, "node0", "node 0 name");
	is_str(g.nodes[3].name, "n\xc3\xa9ud 3", "node 3 name (UTF-8, space)");
	unhex(pk, K0);
	is_mem(g.nodes[0].pk, pk, WEFT_PK_LEN, "node 0 key");
	unhex(pk, K3);
	is_mem(g.nodes[3].pk, pk, WEFT_PK_LEN, "node 3 key");
	is_str(g.nodes[0].host, "127.0.0.1", "node 0 host (IPv4)");
	is_int(g.nodes[0].port, 7100, "node 0 port");
	is_str(g.nodes[1].host, "::1", "node 1 host (IPv6, without brackets)");
	is_int(g.nodes[1].port, 7101, "node 1 port");
	is_str(g.nodes[2].host, "node-2.example.org", "node 2 host (name)");
	is_int(g.nodes[2].port, 7102, "node 2 port");
	is_str(g.nodes[3].host, "weft_node3", "node 3 host (name with '_')");
	is_int(g.nodes[3].port, 65535, "node 3 port 65535");

	for (int i = 0; i < 4; i++)
		is_int(weft_genesis_index(&g, g.nodes[i].pk), i, "index of node %d's key", i);
	memset(pk, 0xee, sizeof(pk));
	is_int(weft_genesis_index(&g, pk), -1, "index of an unknown key is -1");

	/* params: msgpack that converts back to the same JSON. */
	json_t *back = NULL, *want = json_loads(PARAMS, 0, NULL);
	ok(g.params != NULL && g.plen > 0, "params present");
	is_int(weft_mp_buf_to_json(g.params, g.plen, &back), 0, "params decode as msgpack");
	ok(back && json_equal(back, want), "params round trip to the same JSON");
	char *text = back ? json_dumps(back, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	is_str(text, "{\"timeout_ms\":250,\"batch\":{\"max\":64,\"ratio\":0.5},\"tags\":[\"a\",null,true,-3]}",
	       "params keep their key order");
	free(text);
	json_decref(back);
	json_decref(want);
	weft_genesis_free(&g);
	ok(zeroed(&g), "weft_genesis_free zeroes the struct");
	weft_genesis_free(&g); /* twice is harmless */
}

static void test_valid_variants(void)
{
	struct weft_genesis g;
	char err[512];
	static const struct {
		unsigned n, f;
	} nf[] = {{1, 0}, {2, 0}, {3, 0}, {4, 1}, {6, 1}, {7, 2}, {10, 3}, {1024, 341}};

	for (size_t i = 0; i < sizeof(nf) / sizeof(nf[0]); i++) {
		char *nodes = gen_nodes(nf[i].n), *d = doc_with_nodes(nodes);
		int rc = weft_genesis_parse(&g, d, "g", err, sizeof(err));
		ok(rc == 0 && g.n == nf[i].n && g.f == nf[i].f, "n = %u gives f = %u (%s)", nf[i].n, nf[i].f,
		   rc ? err : "ok");
		weft_genesis_free(&g);
		free(nodes);
		free(d);
	}

	/* No params: NULL.  Empty params: an empty map.  accounts: ignored. */
	const char *d1 = "{\"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": [" NODE("a", K0, "h:1") "]}";
	int rc = weft_genesis_parse(&g, d1, "g", err, sizeof(err));
	ok(rc == 0 && g.params == NULL && g.plen == 0, "no params: NULL");
	weft_genesis_free(&g);
	const char *d2 = "{\"params\": {}, \"chain_id\": \"c\", \"protocol\": \"p\", \"accounts\": [{\"x\": 1}, 7], "
			 "\"nodes\": [" NODE("a", K0, "h:1") "]}";
	rc = weft_genesis_parse(&g, d2, "g", err, sizeof(err));
	ok(rc == 0 && g.plen == 1 && g.params && g.params[0] == 0x80, "empty params: an empty map; any key order");
	ok(rc == 0, "\"accounts\" is accepted and ignored (%s)", rc ? err : "ok");
	weft_genesis_free(&g);

	/* Upper-case hex, 64 two-byte characters in a name, 64-char ids. */
	char *name64 = malloc(64 * 2 + 1), *id64 = repeat('x', 64), *d3;
	for (int i = 0; i < 64; i++)
		memcpy(name64 + 2 * i, "\xc3\xa9", 2);
	name64[128] = '\0';
	if (asprintf(&d3, "{\"chain_id\": \"%s\", \"protocol\": \"%s\", \"nodes\": [{\"name\": \"%s\", "
			  "\"key\": \"%s\", \"address\": \"10.0.0.1:1\"}]}", id64, id64, name64, K2_UPPER) < 0)
		abort();
	rc = weft_genesis_parse(&g, d3, "g", err, sizeof(err));
	is_int(rc, 0, "64-character chain id, protocol and name; upper-case hex key (%s)", rc ? err : "ok");
	uint8_t pk[WEFT_PK_LEN];
	unhex(pk, K2);
	ok(rc == 0 && memcmp(g.nodes[0].pk, pk, WEFT_PK_LEN) == 0, "upper-case hex decodes");
	weft_genesis_free(&g);
	free(name64);
	free(id64);
	free(d3);

	/* Same host, different ports; same port, different hosts. */
	const char *d4 = "{\"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": [" NODE("a", K0, "h:1") ", "
			 NODE("b", K1, "h:2") ", " NODE("c", K2, "i:1") ", " NODE("d", K3, "[::2]:1") "]}";
	rc = weft_genesis_parse(&g, d4, "g", err, sizeof(err));
	is_int(rc, 0, "addresses differ by host or by port (%s)", rc ? err : "ok");
	weft_genesis_free(&g);
}

static void test_write_load(void)
{
	struct weft_genesis g, h;
	char err[512];
	char *path = tu_path(tmp, "genesis.json");
	struct stat st;

	if (weft_genesis_parse(&g, valid, "genesis.json", err, sizeof(err)) != 0)
		abort();
	mode_t old = umask(077); /* the file is 0644 whatever the umask */
	int rc = weft_genesis_write(&g, path);
	umask(old);
	is_int(rc, 0, "write");
	ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644, "written with mode 0644");
	rc = weft_genesis_load(&h, path, err, sizeof(err));
	is_int(rc, 0, "load what was written (%s)", rc ? err : "ok");
	if (rc == 0) {
		is_str(h.chain_id, g.chain_id, "same chain_id");
		is_str(h.protocol, g.protocol, "same protocol");
		ok(h.n == g.n && h.f == g.f, "same n and f");
		ok(h.plen == g.plen && memcmp(h.params, g.params, g.plen) == 0, "same params (msgpack bytes)");
		bool same = true;
		for (uint32_t i = 0; i < g.n && h.n == g.n; i++)
			same = same && strcmp(h.nodes[i].name, g.nodes[i].name) == 0 &&
			       memcmp(h.nodes[i].pk, g.nodes[i].pk, WEFT_PK_LEN) == 0 &&
			       strcmp(h.nodes[i].host, g.nodes[i].host) == 0 && h.nodes[i].port == g.nodes[i].port;
		ok(same, "same nodes (names, keys, hosts, ports)");
	}
	weft_genesis_free(&h);

	char *text = tu_read_file(path);
	ok(text != NULL, "read back");
	if (text) {
		char *c = strstr(text, "\"chain_id\""), *p = strstr(text, "\"protocol\""),
		     *q = strstr(text, "\"params\""), *n = strstr(text, "\"nodes\"");
		ok(c && p && q && n && c < p && p < q && q < n, "keys in order chain_id, protocol, params, nodes");
		ok(strncmp(text, "{\n  \"chain_id\": \"weft-test.1_A\",\n", 33) == 0, "pretty, 2-space indent");
		ok(strstr(text, "\"address\": \"[::1]:7101\"") != NULL, "IPv6 address written in brackets");
		ok(strstr(text, "\"key\": \"" K1 "\"") != NULL, "keys written as lower-case hex");
		size_t len = strlen(text);
		ok(len > 0 && text[len - 1] == '\n', "ends with a newline");
	}
	free(text);

	/* Rewriting replaces the file and leaves no temporary behind. */
	free(g.chain_id);
	g.chain_id = strdup("second");
	is_int(weft_genesis_write(&g, path), 0, "rewrite");
	rc = weft_genesis_load(&h, path, err, sizeof(err));
	ok(rc == 0 && strcmp(h.chain_id, "second") == 0, "rewrite replaced the file");
	weft_genesis_free(&h);
	char *cmd;
	if (asprintf(&cmd, "test $(ls -A '%s' | wc -l) -eq 1", tmp) < 0)
		abort();
	ok(system(cmd) == 0, "no temporary file left in the directory");
	free(cmd);

	/* A struct load would refuse is not written. */
	char *bad = tu_path(tmp, "bad.json");
	memcpy(g.nodes[1].pk, g.nodes[0].pk, WEFT_PK_LEN);
	is_int(weft_genesis_write(&g, bad), WEFT_EINVAL, "write refuses two nodes with one key");
	ok(access(bad, F_OK) != 0, "and creates no file");
	weft_genesis_free(&g);
	struct weft_genesis empty = {0};
	is_int(weft_genesis_write(&empty, bad), WEFT_EINVAL, "write refuses an empty struct");

	/* No params: the key is left out. */
	const char *d = "{\"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": [" NODE("a", K0, "h:1") "]}";
	if (weft_genesis_parse(&g, d, "g", err, sizeof(err)) != 0)
		abort();
	is_int(weft_genesis_write(&g, path), 0, "write without params");
	text = tu_read_file(path);
	ok(text && !strstr(text, "params"), "no params key when params is NULL");
	free(text);
	weft_genesis_free(&g);
	rc = weft_genesis_load(&g, path, err, sizeof(err));
	ok(rc == 0 && g.params == NULL, "loads back without params");
	weft_genesis_free(&g);

	/* Unwritable destination: an error code, not a crash. */
	char *nodir = tu_path(tmp, "no/such/dir/genesis.json");
	if (weft_genesis_parse(&g, d, "g", err, sizeof(err)) != 0)
		abort();
	ok(weft_genesis_write(&g, nodir) < 0, "write into a missing directory fails");
	weft_genesis_free(&g);
	free(nodir);
	free(bad);
	free(path);
}

static void test_load_errors(void)
{
	struct weft_genesis g;
	char err[512];
	char *missing = tu_path(tmp, "missing.json");

	memset(&g, 0x5a, sizeof(g));
	is_int(weft_genesis_load(&g, missing, err, sizeof(err)), WEFT_NOTFOUND, "missing file: WEFT_NOTFOUND");
	ok(zeroed(&g), "struct zeroed");
	ok(strstr(err, missing) != NULL, "message names the path (%s)", err);
	is_int(weft_genesis_load(&g, tmp, err, sizeof(err)), WEFT_EINVAL, "a directory: WEFT_EINVAL");
	ok(strstr(err, "not a regular file") != NULL, "says why (%s)", err);

	/* A NUL byte ends the text early for a C string, not for the loader. */
	char *nul = tu_path(tmp, "nul.json");
	FILE *f = fopen(nul, "w");
	static const char with_nul[] = "{\"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": ["
				       NODE("a", K0, "h:1") "]}\n\0garbage";
	if (!f || fwrite(with_nul, 1, sizeof(with_nul), f) != sizeof(with_nul) || fclose(f) != 0)
		abort();
	is_int(weft_genesis_load(&g, nul, err, sizeof(err)), WEFT_EINVAL, "NUL byte in the file: WEFT_EINVAL");
	ok(strstr(err, nul) && strstr(err, "line 2"), "names the file and the line (%s)", err);

	char *syn = tu_path(tmp, "syntax.json");
	tu_write_file(syn, "{\n  \"chain_id\": \"c\",\n  \"protocol\" \"p\"\n}\n");
	is_int(weft_genesis_load(&g, syn, err, sizeof(err)), WEFT_EINVAL, "syntax error: WEFT_EINVAL");
	ok(strstr(err, syn) && strstr(err, "line 3, column"), "names the file, line and column (%s)", err);
	ok(zeroed(&g), "struct zeroed");
	free(syn);
	free(nul);
	free(missing);
}

struct bad_case {
	const char *what;
	const char *json;
	const char *path; /* expected in the message after "test.json: " */
	const char *also; /* a further expected substring, or NULL */
};

#define DOC(chain, protocol, nodes) "{\"chain_id\": " chain ", \"protocol\": " protocol ", \"nodes\": [" nodes "]}"
#define GOOD3 NODE("a", K0, "h:1") ", " NODE("b", K1, "h:2") ", " NODE("c", K2, "h:3")
#define ADDR1(addr) DOC("\"c\"", "\"p\"", NODE("a", K0, "h:1") ", " NODE("b", K1, addr))
#define KEY2(key) DOC("\"c\"", "\"p\"", NODE("a", K0, "h:1") ", " NODE("b", K1, "h:2") ", " NODE("c", key, "h:3"))

static const struct bad_case bad_cases[] = {
	{"top level is an array", "[1]", "test.json: $: expected an object", "array"},
	{"chain_id a number", DOC("5", "\"p\"", GOOD3), "$.chain_id: expected a string", "got 5"},
	{"chain_id null", DOC("null", "\"p\"", GOOD3), "$.chain_id: expected", "got null"},
	{"chain_id empty", DOC("\"\"", "\"p\"", GOOD3), "$.chain_id: expected", "got \"\""},
	{"chain_id with a space", DOC("\"a b\"", "\"p\"", GOOD3), "$.chain_id: expected", "[A-Za-z0-9._-]"},
	{"chain_id with a slash", DOC("\"a/b\"", "\"p\"", GOOD3), "$.chain_id: expected", NULL},
	{"chain_id 65 chars", DOC("\"" X65 "\"", "\"p\"", GOOD3),
	 "$.chain_id: expected", "(65 bytes)"},
	{"chain_id missing", "{\"protocol\": \"p\", \"nodes\": [" GOOD3 "]}", "$.chain_id: missing", NULL},
	{"protocol missing", "{\"chain_id\": \"c\", \"nodes\": [" GOOD3 "]}", "$.protocol: missing", NULL},
	{"protocol an array", DOC("\"c\"", "[\"p\"]", GOOD3), "$.protocol: expected a string", "got an array"},
	{"protocol empty", DOC("\"c\"", "\"\"", GOOD3), "$.protocol: expected", NULL},
	{"protocol 65 chars", DOC("\"c\"", "\"" X65 "\"", GOOD3),
	 "$.protocol: expected", "(65 bytes)"},
	{"protocol with a control character", DOC("\"c\"", "\"a\\u0001b\"", GOOD3), "$.protocol: expected",
	 "control"},
	{"params an array", "{\"chain_id\": \"c\", \"protocol\": \"p\", \"params\": [], \"nodes\": [" GOOD3 "]}",
	 "$.params: expected an object", NULL},
	{"params a string", "{\"chain_id\": \"c\", \"protocol\": \"p\", \"params\": \"x\", \"nodes\": [" GOOD3 "]}",
	 "$.params: expected an object", NULL},
	{"params null", "{\"chain_id\": \"c\", \"protocol\": \"p\", \"params\": null, \"nodes\": [" GOOD3 "]}",
	 "$.params: expected an object", "got null"},
	{"nodes missing", "{\"chain_id\": \"c\", \"protocol\": \"p\"}", "$.nodes: missing", NULL},
	{"nodes an object", "{\"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": {}}", "$.nodes: expected an array",
	 NULL},
	{"n = 0", DOC("\"c\"", "\"p\"", ""), "$.nodes: expected 1 to 1024 nodes, got 0", NULL},
	{"node a number", DOC("\"c\"", "\"p\"", NODE("a", K0, "h:1") ", 5"), "$.nodes[1]: expected an object",
	 "got 5"},
	{"node null", DOC("\"c\"", "\"p\"", "null"), "$.nodes[0]: expected an object", NULL},
	{"name missing", DOC("\"c\"", "\"p\"", "{\"key\": \"" K0 "\", \"address\": \"h:1\"}"),
	 "$.nodes[0].name: missing", NULL},
	{"name empty", DOC("\"c\"", "\"p\"", NODE("", K0, "h:1")), "$.nodes[0].name: expected", NULL},
	{"name a number", DOC("\"c\"", "\"p\"", "{\"name\": 1, \"key\": \"" K0 "\", \"address\": \"h:1\"}"),
	 "$.nodes[0].name: expected a string", NULL},
	{"name 65 chars", DOC("\"c\"", "\"p\"", NODE(X65, K0, "h:1")),
	 "$.nodes[0].name: expected", NULL},
	{"name 65 two-byte chars", DOC("\"c\"", "\"p\"", NODE(E16 E16 E16 E16 "\\u00e9", K0, "h:1")),
	 "$.nodes[0].name: expected", "(130 bytes)"},
	{"UTF-8 names accepted, then a node without a name",
	 DOC("\"c\"", "\"p\"",
	     NODE("ab", K0, "h:1") ", " NODE("a\\u00e9b", K1, "h:2") ", " NODE(E16 "x", K2, "h:3") ", {}"),
	 "$.nodes[3].name: missing", NULL},
	{"name with a newline", DOC("\"c\"", "\"p\"", NODE("a\\nb", K0, "h:1")), "$.nodes[0].name: expected",
	 "\\x0a"},
	{"key missing", DOC("\"c\"", "\"p\"", GOOD3 ", {\"name\": \"d\", \"address\": \"h:4\"}"),
	 "$.nodes[3].key: missing; expected 64 hex digits", NULL},
	{"key not hex", KEY2("zz00000000000000000000000000000000000000000000000000000000000000"),
	 "$.nodes[2].key: expected 64 hex digits", "got \"zz"},
	{"key 63 digits", KEY2("000000000000000000000000000000000000000000000000000000000000001"),
	 "$.nodes[2].key: expected 64 hex digits, got 63", NULL},
	{"key 65 digits", KEY2("00000000000000000000000000000000000000000000000000000000000000011"),
	 "$.nodes[2].key: expected 64 hex digits, got 65", NULL},
	{"key with 0x", KEY2("0x00000000000000000000000000000000000000000000000000000000000001"),
	 "$.nodes[2].key: expected 64 hex digits", NULL},
	{"key a number", DOC("\"c\"", "\"p\"", GOOD3 ", {\"name\": \"d\", \"key\": 7, \"address\": \"h:4\"}"),
	 "$.nodes[3].key: expected 64 hex digits", "got 7"},
	{"address missing", DOC("\"c\"", "\"p\"", NODE("a", K0, "h:1") ", {\"name\": \"b\", \"key\": \"" K1 "\"}"),
	 "$.nodes[1].address: missing", NULL},
	{"address a number", DOC("\"c\"", "\"p\"", "{\"name\": \"a\", \"key\": \"" K0 "\", \"address\": 7100}"),
	 "$.nodes[0].address: expected host:port", "got 7100"},
	{"address without a port", ADDR1("127.0.0.1"), "$.nodes[1].address: expected host:port", NULL},
	{"port 0", ADDR1("127.0.0.1:0"), "$.nodes[1].address: expected a port from 1 to 65535", NULL},
	{"port 70000", ADDR1("127.0.0.1:70000"), "$.nodes[1].address: expected a port", "70000"},
	{"port 65536", ADDR1("h:65536"), "$.nodes[1].address: expected a port", NULL},
	{"port x", ADDR1("127.0.0.1:x"), "$.nodes[1].address: expected a port", "\"127.0.0.1:x\""},
	{"port empty", ADDR1("h:"), "$.nodes[1].address: expected a port", NULL},
	{"port negative", ADDR1("h:-1"), "$.nodes[1].address: expected a port", NULL},
	{"port with a sign", ADDR1("h:+80"), "$.nodes[1].address: expected a port", NULL},
	{"port with a leading zero", ADDR1("h:080"), "$.nodes[1].address: expected a port", NULL},
	{"port with a space", ADDR1("h: 80"), "$.nodes[1].address: expected a port", NULL},
	{"host empty", ADDR1(":7100"), "$.nodes[1].address: expected a host", NULL},
	{"IPv6 without brackets", ADDR1("::1:7100"), "$.nodes[1].address: expected an IPv6 address in brackets", NULL},
	{"IPv6 bracket without a port", ADDR1("[::1]"), "$.nodes[1].address: expected an IPv6", NULL},
	{"IPv6 bracket then no colon", ADDR1("[::1]7100"), "$.nodes[1].address: expected an IPv6", NULL},
	{"IPv6 literal invalid", ADDR1("[zz::1]:7100"), "$.nodes[1].address: expected an IPv6 literal", NULL},
	{"IPv6 brackets empty", ADDR1("[]:7100"), "$.nodes[1].address: expected an IPv6 literal", NULL},
	{"IPv4 octet 256", ADDR1("256.1.1.1:7100"), "$.nodes[1].address: expected a dotted-quad IPv4", NULL},
	{"IPv4 three parts", ADDR1("1.2.3:7100"), "$.nodes[1].address: expected a dotted-quad IPv4", NULL},
	{"host with a space", ADDR1("bad host:7100"), "$.nodes[1].address: expected an IPv4 literal or a host name",
	 NULL},
	{"host label starts with -", ADDR1("-a.b:7100"), "$.nodes[1].address: expected an IPv4 literal or a host",
	 NULL},
	{"host label ends with -", ADDR1("a-.b:7100"), "$.nodes[1].address: expected an IPv4 literal or a host", NULL},
	{"host empty label", ADDR1("a..b:7100"), "$.nodes[1].address: expected an IPv4 literal or a host", NULL},
	{"host trailing dot", ADDR1("a.b.:7100"), "$.nodes[1].address: expected an IPv4 literal or a host", NULL},
	{"host name ending in a numeric label", ADDR1("a.b.1:7100"),
	 "$.nodes[1].address: expected an IPv4 literal or a host", NULL},
	{"host label 64 chars",
	 ADDR1("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b:1"),
	 "$.nodes[1].address: expected an IPv4 literal or a host", NULL},
	{"duplicate names", DOC("\"c\"", "\"p\"", GOOD3 ", " NODE("b", K3, "h:4")),
	 "$.nodes[3].name: expected a name no other node has", "$.nodes[1].name"},
	{"duplicate keys", KEY2(K0), "$.nodes[2].key: expected a key no other node has", "$.nodes[0]"},
	{"duplicate keys, differing case",
	 DOC("\"c\"", "\"p\"", GOOD3 ", " NODE("d", K2_UPPER, "h:4")), "$.nodes[3].key: expected a key no other",
	 "$.nodes[2]"},
	{"duplicate addresses", DOC("\"c\"", "\"p\"", GOOD3 ", " NODE("d", K3, "h:2")),
	 "$.nodes[3].address: expected an address no other node has", "$.nodes[1]"},
	{"duplicate host names, differing case", ADDR1("H:1"), "$.nodes[1].address: expected an address no other",
	 NULL},
	{"duplicate IPv6, different spelling",
	 DOC("\"c\"", "\"p\"", NODE("a", K0, "[::1]:9") ", " NODE("b", K1, "[0:0::0:1]:9")),
	 "$.nodes[1].address: expected an address no other", NULL},
	{"unknown top-level key",
	 "{\"chain_id\": \"c\", \"chainid\": \"c\", \"protocol\": \"p\", \"nodes\": [" GOOD3 "]}",
	 "$.chainid: unknown key", "chain_id, protocol, params, nodes"},
	{"unknown node key", DOC("\"c\"", "\"p\"", "{\"name\": \"a\", \"key\": \"" K0 "\", \"adress\": \"h:1\"}"),
	 "$.nodes[0].adress: unknown key", "name, key, address"},
	{"unknown key with odd characters", "{\"a b\\\"\": 1, \"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": []}",
	 "$[\"a b\\\"\"]: unknown key", NULL},
	{"duplicate object key",
	 "{\"chain_id\": \"c\",\n\"chain_id\": \"d\", \"protocol\": \"p\", \"nodes\": [" GOOD3 "]}",
	 "test.json: line 2, column", "duplicate"},
	{"syntax error", "{\"chain_id\": \"c\",\n \"protocol\": \"p\",\n \"nodes\": [,]}", "test.json: line 3, column",
	 "invalid JSON"},
	{"trailing garbage", DOC("\"c\"", "\"p\"", GOOD3) " x", "test.json: line 1, column", NULL},
	{"empty text", "", "test.json: line 1, column", NULL},
	{"NUL escape in a string", DOC("\"c\\u0000d\"", "\"p\"", GOOD3), "test.json: line 1, column", NULL},
};

static void run_bad(const char *what, const char *json, const char *path, const char *also)
{
	struct weft_genesis g;
	char err[512];

	memset(&g, 0x5a, sizeof(g));
	err[0] = '\0';
	int rc = weft_genesis_parse(&g, json, "test.json", err, sizeof(err));
	bool good = rc == WEFT_EINVAL && strncmp(err, "test.json: ", 11) == 0 && strstr(err, path) &&
		    (!also || strstr(err, also)) && zeroed(&g);
	ok(good, "%s: WEFT_EINVAL, %s", what, path);
	if (!good)
		diag("rc %d, message: %s", rc, err);
	weft_genesis_free(&g);
}

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		run_bad(bad_cases[i].what, bad_cases[i].json, bad_cases[i].path, bad_cases[i].also);

	/* 1025 nodes. */
	char *nodes = gen_nodes(1025), *d = doc_with_nodes(nodes);
	run_bad("1025 nodes", d, "$.nodes: expected 1 to 1024 nodes, got 1025", NULL);
	free(nodes);
	free(d);

	/* A bad node deep in a large committee is found by index. */
	nodes = gen_nodes(1000);
	char *p = strstr(nodes, "\"n777\"");
	p = strstr(p, "127.0.0.1:");
	memcpy(p, "1x7", 3);
	d = doc_with_nodes(nodes);
	run_bad("bad host in node 777 of 1000", d, "$.nodes[777].address: expected", NULL);
	free(nodes);
	free(d);

	/* Huge strings: rejected, and the message stays short. */
	char *huge = repeat('x', 100000), *doc;
	if (asprintf(&doc, "{\"chain_id\": \"%s\", \"protocol\": \"p\", \"nodes\": [" GOOD3 "]}", huge) < 0)
		abort();
	run_bad("100000-byte chain_id", doc, "$.chain_id: expected", "(100000 bytes)");
	free(doc);
	if (asprintf(&doc, "{\"chain_id\": \"c\", \"protocol\": \"%s\", \"nodes\": [" GOOD3 "]}", huge) < 0)
		abort();
	run_bad("100000-byte protocol", doc, "$.protocol: expected", NULL);
	free(doc);
	if (asprintf(&doc, DOC("\"c\"", "\"p\"", "{\"name\": \"%s\", \"key\": \"" K0 "\", \"address\": \"h:1\"}"),
		     huge) < 0)
		abort();
	run_bad("100000-byte name", doc, "$.nodes[0].name: expected", NULL);
	free(doc);
	if (asprintf(&doc, DOC("\"c\"", "\"p\"", "{\"name\": \"a\", \"key\": \"%s\", \"address\": \"h:1\"}"), huge) < 0)
		abort();
	run_bad("100000-byte key", doc, "$.nodes[0].key: expected 64 hex digits", NULL);
	free(doc);
	if (asprintf(&doc, DOC("\"c\"", "\"p\"", "{\"name\": \"a\", \"key\": \"" K0 "\", \"address\": \"%s:1\"}"),
		     huge) < 0)
		abort();
	run_bad("100000-byte address", doc, "$.nodes[0].address: expected host:port", NULL);
	free(doc);
	char *hugekey;
	if (asprintf(&hugekey, "{\"%s\": 1, \"chain_id\": \"c\", \"protocol\": \"p\", \"nodes\": []}", huge) < 0)
		abort();
	struct weft_genesis g;
	char err[512];
	int rc = weft_genesis_parse(&g, hugekey, "test.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "unknown key") && strlen(err) < 300, "100000-byte unknown key: short "
	   "message (%zu bytes)", strlen(err));
	free(hugekey);
	free(huge);

	/* params nested deeper than msgpack allows. */
	char deep[128];
	size_t len = 0;
	for (int i = 0; i < 40; i++)
		deep[len++] = '[';
	for (int i = 0; i < 40; i++)
		deep[len++] = ']';
	deep[len] = '\0';
	char *deepdoc;
	if (asprintf(&deepdoc, "{\"chain_id\": \"c\", \"protocol\": \"p\", \"params\": {\"a\": %s}, \"nodes\": ["
			       NODE("a", K0, "h:1") "]}", deep) < 0)
		abort();
	run_bad("params 41 levels deep", deepdoc, "$.params: expected at most 32 levels", NULL);
	free(deepdoc);

	/* A short error buffer is filled and terminated, never overrun. */
	char small[24];
	memset(small, 'Z', sizeof(small));
	rc = weft_genesis_parse(&g, "[1]", "a-long-file-name.json", small, 16);
	ok(rc == WEFT_EINVAL && strlen(small) == 15 && small[16] == 'Z', "16-byte error buffer: truncated, not "
	   "overrun");
	rc = weft_genesis_parse(&g, "[1]", "x", NULL, 0);
	is_int(rc, WEFT_EINVAL, "no error buffer at all");
	rc = weft_genesis_parse(&g, valid, NULL, err, sizeof(err));
	is_int(rc, 0, "NULL name is allowed");
	weft_genesis_free(&g);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		abort();
	tmp = tu_tmpdir("genesis");
	test_valid();
	test_valid_variants();
	test_write_load();
	test_load_errors();
	test_bad();
	tu_rmtree(tmp);
	free(tmp);
	return done_testing();
}
