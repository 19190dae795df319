/* tests/fuzz/genesis.c - libFuzzer target for the genesis file
 * (src/lib/genesis.c): the input is the file, read by weft_genesis_load
 * (through an in-memory file) and, up to its first NUL, by
 * weft_genesis_parse.  abort()s when the two disagree on input without a
 * NUL, when a refusal has no message, or when an accepted genesis breaks
 * what the header promises: n in 1..1024, f = (n - 1) / 3, distinct keys
 * (weft_genesis_index finds node i at i), params one msgpack map.  An
 * accepted genesis is written with weft_genesis_write and loaded back:
 * it must come back the same.  The "balances" of a dag genesis then go
 * through the ledger's allocation parser (weft_ledger_init).
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes a few valid genesis files and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fuzzfile.h"
#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/genesis.h"
#include "weft/ledger.h"

#define KEY(c) "\"" c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c \
	c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c "\""

static const char *const seeds[][2] = {
	{"one-node", "{\"chain_id\": \"weft-local\", \"protocol\": \"beb\", \"nodes\": [{\"name\": \"node0\", "
		     "\"key\": " KEY("a") ", \"address\": \"127.0.0.1:7100\"}]}"},
	{"four-bracha", "{\n  \"chain_id\": \"weft-test\",\n  \"protocol\": \"bracha\",\n  \"params\": {\"window\": 64, "
			"\"retain\": 128, \"max_payload\": 1048576},\n  \"nodes\": [\n"
			"    {\"name\": \"a\", \"key\": " KEY("1") ", \"address\": \"10.0.0.1:7100\"},\n"
			"    {\"name\": \"b\", \"key\": " KEY("2") ", \"address\": \"[::1]:7101\"},\n"
			"    {\"name\": \"c\", \"key\": " KEY("3") ", \"address\": \"node-c.example:7102\"},\n"
			"    {\"name\": \"d\", \"key\": " KEY("4") ", \"address\": \"node_d:65535\"}\n  ]\n}\n"},
	{"dag-balances", "{\"chain_id\": \"weft-dag\", \"protocol\": \"dag\", \"params\": {\"mode\": \"sparse\", \"d\": 2, "
			 "\"brb\": \"echo\", \"nested\": {\"list\": [1, -2, 3.5, true, null, \"x\"]}, \"balances\": {"
			 "\"79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798\": 1000, "
			 "\"c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5\": \"18446744073709551615\"}}, "
			 "\"nodes\": [{\"name\": \"n0\", \"key\": " KEY("b") ", \"address\": \"127.0.0.1:1\"}]}"},
};

static void write_seeds(const char *dir)
{
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		pf_write_file(dir, seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "crypto init");
	if (getenv("WEFT_FUZZ_SEEDS"))
		write_seeds(getenv("WEFT_FUZZ_SEEDS"));
	return 0;
}

static bool same(const struct weft_genesis *a, const struct weft_genesis *b)
{
	if (strcmp(a->chain_id, b->chain_id) || strcmp(a->protocol, b->protocol) || a->n != b->n || a->f != b->f ||
	    a->plen != b->plen || (a->plen && memcmp(a->params, b->params, a->plen)))
		return false;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct weft_genesis_node *x = &a->nodes[i], *y = &b->nodes[i];
		if (strcmp(x->name, y->name) || memcmp(x->pk, y->pk, WEFT_PK_LEN) || strcmp(x->host, y->host) ||
		    x->port != y->port)
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct weft_genesis g, g2;
	char err[512] = "", err2[512] = "";
	int rc = weft_genesis_load(&g, ff_input_path(data, size), err, sizeof(err));
	pf_check(rc == 0 || rc == WEFT_EINVAL, "load: 0 or WEFT_EINVAL");
	pf_check(rc == 0 || err[0] != '\0', "a refusal says why");

	char *text = ff_input_text(data, size);
	int rc2 = weft_genesis_parse(&g2, text, "genesis.json", err2, sizeof(err2));
	free(text);
	if (memchr(data, 0, size) == NULL) {
		pf_check(rc == rc2, "load and parse agree");
		pf_check(rc2 != 0 || same(&g, &g2), "load and parse give the same genesis");
	}
	if (rc2 == 0)
		weft_genesis_free(&g2);
	if (rc != 0)
		return 0;

	pf_check(g.n >= 1 && g.n <= 1024 && g.f == (g.n - 1) / 3 && g.nodes != NULL, "n and f");
	pf_check(g.chain_id != NULL && g.protocol != NULL, "chain_id and protocol");
	for (uint32_t i = 0; i < g.n; i++) {
		pf_check(weft_genesis_index(&g, g.nodes[i].pk) == (int)i, "distinct keys");
		pf_check(g.nodes[i].name != NULL && g.nodes[i].host != NULL && g.nodes[i].port > 0, "node fields");
	}
	if (g.params) {
		struct weft_mp_reader r;
		uint32_t pairs;
		weft_mp_reader_init(&r, g.params, g.plen);
		pf_check(pf_one_value(g.params, g.plen) && weft_mp_read_map(&r, &pairs) == 0, "params is a map");
	}

	const char *path = ff_scratch_path("genesis.json");
	pf_check(weft_genesis_write(&g, path) == 0, "an accepted genesis can be written");
	rc = weft_genesis_load(&g2, path, err2, sizeof(err2));
	if (rc != 0)
		fprintf(stderr, "genesis: reloading what was written: %s\n", err2);
	pf_check(rc == 0, "what weft_genesis_write wrote loads");
	pf_check(same(&g, &g2), "and is the same genesis");
	weft_genesis_free(&g2);

	if (strcmp(g.protocol, "dag") == 0) {
		struct weft_ledger l;
		if (weft_ledger_init(&l, pf_env(false), g.params, g.plen) == 0)
			weft_ledger_destroy(&l);
	}
	weft_genesis_free(&g);
	return 0;
}
