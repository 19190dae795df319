/* cli_genesis.c - integration test of weft-cli's local commands, run as the
 * real binary (no daemon is started): `keygen` writes a 0600 key file that
 * weft_identity_load accepts, prints its public key and never overwrites a
 * file; `genesis` writes N node data dirs (0700, 0600 keys, the documented
 * weft.conf) and a genesis.json that weft_genesis_load accepts with the
 * same keys and consecutive ports, refuses a non-empty DIR unless --force,
 * and rejects bad options with exit 2 and a message naming the option;
 * `ledger-keygen` writes a 0600 secp256k1 key file whose account it prints
 * and never overwrites a file; `genesis --fund` writes params.balances
 * that the ledger accepts, and refuses bad or repeated accounts;
 * `genesis --host 'node{i}'` gives node i the host node<i> and every node
 * port P, `--param KEY=VALUE` writes params.KEY (JSON when VALUE parses,
 * else a string) next to --fund's balances, and malformed placeholders,
 * empty or repeated KEYs and balances given twice are refused. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/fakeenv.h"
#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/genesis.h"
#include "weft/ledger.h"
#include "weft/proto.h"

static char *tmp, *bin;

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

/* Runs weft-cli with args (NULL-terminated); parses stdout as JSON when it
 * is JSON (else *json = NULL). */
static int cli(struct tu_run *r, json_t **json, const char *const *args)
{
	const char *argv[32] = {bin};
	int n = 1;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	tu_run(r, (char *const *)argv, 30000, -1);
	if (json)
		*json = json_loads(r->out, 0, NULL);
	return r->status;
}

static int file_mode(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static const char *jstr(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static void test_keygen(void)
{
	struct tu_run r;
	json_t *j;
	char *key = xasprintf("%s/id.key", tmp);

	int st = cli(&r, &j, (const char *[]){"keygen", "--out", key, NULL});
	is_int(st, 0, "keygen --out FILE exits 0 (%s)", r.err);
	ok(j && json_object_size(j) == 2, "prints a JSON object with two keys");
	const char *pkhex = jstr(j, "public_key");
	ok(pkhex && strlen(pkhex) == 64, "public_key is 64 hex digits");
	is_str(jstr(j, "file"), key, "file is the path given");
	is_int(file_mode(key), 0600, "key file has mode 0600");
	struct weft_identity *id = NULL;
	is_int(weft_identity_load(key, &id), 0, "weft_identity_load accepts it");
	if (id && pkhex) {
		char hex[2 * WEFT_PK_LEN + 1];
		weft_hex_encode(hex, id->pk, WEFT_PK_LEN);
		is_str(hex, pkhex, "its public key is the one printed");
	} else {
		ok(0, "its public key is the one printed");
	}
	weft_identity_free(id);
	json_decref(j);
	tu_run_free(&r);

	char *before = tu_read_file(key);
	st = cli(&r, &j, (const char *[]){"keygen", "--out", key, NULL});
	is_int(st, 1, "keygen refuses to overwrite: exit 1");
	ok(strstr(r.err, key) && strstr(r.err, "already exists"), "names the file (%.*s)",
	   (int)strcspn(r.err, "\n"), r.err);
	ok(j == NULL && r.out[0] == '\0', "prints nothing on stdout");
	char *after = tu_read_file(key);
	ok(before && after && strcmp(before, after) == 0, "the key file is unchanged");
	free(before);
	free(after);
	json_decref(j);
	tu_run_free(&r);

	/* Default file: ./identity.key in the working directory. */
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)) || chdir(tmp) != 0)
		abort();
	st = cli(&r, &j, (const char *[]){"keygen", NULL});
	if (chdir(cwd) != 0)
		abort();
	char *def = xasprintf("%s/identity.key", tmp);
	is_int(st, 0, "keygen without --out exits 0");
	is_str(jstr(j, "file"), "./identity.key", "default file is ./identity.key");
	is_int(file_mode(def), 0600, "written with mode 0600");
	json_decref(j);
	tu_run_free(&r);
	free(def);

	st = cli(&r, NULL, (const char *[]){"keygen", "--out", NULL});
	ok(st == 2 && strstr(r.err, "--out"), "keygen --out without FILE: exit 2 naming --out");
	tu_run_free(&r);
	st = cli(&r, NULL, (const char *[]){"keygen", "stray", NULL});
	ok(st == 2 && strstr(r.err, "stray"), "keygen with a stray argument: exit 2");
	tu_run_free(&r);
	char *nodir = xasprintf("%s/no/such/dir/k", tmp);
	st = cli(&r, NULL, (const char *[]){"keygen", "--out", nodir, NULL});
	ok(st == 1 && strstr(r.err, nodir), "keygen into a missing directory: exit 1 naming the path");
	tu_run_free(&r);
	free(nodir);
	st = cli(&r, NULL, (const char *[]){"--datadir", tmp, "keygen", NULL});
	is_int(st, 2, "RPC options before a local command: exit 2");
	tu_run_free(&r);
	free(key);
}

static void test_ledger_keygen(void)
{
	struct tu_run r;
	json_t *j;
	char *key = xasprintf("%s/ledger-a.key", tmp);
	uint8_t account[32], sk[32], pk[32];

	int st = cli(&r, &j, (const char *[]){"ledger-keygen", "--out", key, NULL});
	is_int(st, 0, "ledger-keygen --out FILE exits 0 (%s)", r.err);
	ok(j && json_object_size(j) == 2, "prints a JSON object with two keys");
	is_str(jstr(j, "key"), key, "key is the path given");
	const char *acc = jstr(j, "account");
	ok(acc && weft_hex_decode(account, 32, acc, strlen(acc)) == 0 && weft_ledger_pubkey_check(account) == 0,
	   "account is 64 hex digits of an x-only public key");
	is_int(file_mode(key), 0600, "key file has mode 0600");
	char *text = tu_read_file(key);
	static const char tag[] = "weft-secp256k1-secret ";
	ok(text && strlen(text) == sizeof(tag) - 1 + 65 && strncmp(text, tag, sizeof(tag) - 1) == 0 &&
	   text[strlen(text) - 1] == '\n' && weft_hex_decode(sk, 32, text + sizeof(tag) - 1, 64) == 0,
	   "the file is \"weft-secp256k1-secret HEX\\n\"");
	ok(text && weft_ledger_pubkey(sk, pk) == 0 && memcmp(pk, account, 32) == 0,
	   "its secret key controls the printed account");
	json_decref(j);
	tu_run_free(&r);

	st = cli(&r, &j, (const char *[]){"ledger-keygen", "--out", key, NULL});
	ok(st == 1 && strstr(r.err, key) && strstr(r.err, "already exists"), "refuses to overwrite: exit 1 naming it");
	char *after = tu_read_file(key);
	ok(text && after && strcmp(text, after) == 0 && r.out[0] == '\0', "the key file is unchanged, nothing printed");
	free(after);
	free(text);
	json_decref(j);
	tu_run_free(&r);

	st = cli(&r, NULL, (const char *[]){"ledger-keygen", "--bogus", NULL});
	ok(st == 2 && strstr(r.err, "--bogus"), "ledger-keygen --bogus: exit 2 naming it");
	tu_run_free(&r);
	st = cli(&r, NULL, (const char *[]){"ledger-keygen", "--help", NULL});
	ok(st == 0 && strstr(r.out, "ledger-keygen [--out FILE]"), "ledger-keygen --help");
	tu_run_free(&r);
	free(key);
}

static void test_genesis_fund(void)
{
	static const char a[] = "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9";
	static const char b_upper[] = "0xDFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659";
	static const char b[] = "dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659";
	struct tu_run r;
	struct weft_genesis g;
	char err[512];
	char *dir = xasprintf("%s/funded", tmp), *gpath = xasprintf("%s/genesis.json", dir);
	char *fa = xasprintf("%s=1000", a), *fb = xasprintf("%s=18446744073709551615", b_upper);

	int st = cli(&r, NULL, (const char *[]){"genesis", "--nodes", "1", "--out", dir, "--fund", fa, "--fund", fb,
						 NULL});
	is_int(st, 0, "genesis --fund twice exits 0 (%s)", r.err);
	tu_run_free(&r);
	json_t *doc = json_load_file(gpath, 0, NULL);
	json_t *bal = json_object_get(json_object_get(doc, "params"), "balances");
	ok(json_object_size(bal) == 2 && json_integer_value(json_object_get(bal, a)) == 1000,
	   "params.balances holds the first account's amount as an integer");
	is_str(json_string_value(json_object_get(bal, b)), "18446744073709551615",
	       "an amount above 2^63 - 1 as a decimal string, the key in lower case without 0x");
	json_decref(doc);

	int rc = weft_genesis_load(&g, gpath, err, sizeof(err));
	is_int(rc, 0, "weft_genesis_load accepts it (%s)", rc ? err : "ok");
	/* The ledger starts from these params. */
	uint8_t ka[32], kb[32];
	uint64_t ba = 0, bb = 0, n;
	struct fake_env fe;
	struct weft_ledger l;
	weft_hex_decode(ka, 32, a, 64);
	weft_hex_decode(kb, 32, b, 64);
	fake_env_init(&fe, 0, 1);
	ok(rc == 0 && weft_ledger_init(&l, &fe.env, g.params, g.plen) == 0 &&
	   weft_ledger_account(&l, ka, &ba, &n) == 0 && weft_ledger_account(&l, kb, &bb, &n) == 0 && ba == 1000 &&
	   bb == UINT64_MAX, "the ledger starts with those balances");
	fake_env_free(&fe);
	weft_genesis_free(&g);

	static const struct {
		const char *arg, *needle;
	} bad[] = {
		{"f9308a=1", "64 hex digits"},
		{"0000000000000000000000000000000000000000000000000000000000000005=1", "x-only public key"},
		{"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9=0", "AMOUNT"},
		{"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9=18446744073709551616", "AMOUNT"},
		{"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9=-3", "AMOUNT"},
		{"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9", "ACCOUNT=AMOUNT"},
	};
	char *never = xasprintf("%s/never-funded", tmp);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		st = cli(&r, NULL, (const char *[]){"genesis", "--nodes", "1", "--out", never, "--fund", bad[i].arg, NULL});
		ok(st == 2 && strstr(r.err, "--fund") && strstr(r.err, bad[i].needle) && access(never, F_OK) != 0,
		   "--fund %.20s...: exit 2 (%s), nothing written", bad[i].arg, bad[i].needle);
		tu_run_free(&r);
	}
	char *fa2 = xasprintf("0x%s=5", a);
	st = cli(&r, NULL, (const char *[]){"genesis", "--nodes", "1", "--out", never, "--fund", fa, "--fund", fa2, NULL});
	ok(st == 2 && strstr(r.err, "funded twice") && access(never, F_OK) != 0, "one account funded twice: exit 2");
	tu_run_free(&r);
	free(fa2);
	free(never);
	free(fa);
	free(fb);
	free(dir);
	free(gpath);
}

static void test_genesis_template_params(void)
{
	static const char a[] = "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9";
	struct tu_run r;
	struct weft_genesis g;
	json_t *j;
	char err[512];
	char *dir = xasprintf("%s/docker", tmp), *gpath = xasprintf("%s/genesis.json", dir);
	char *fund = xasprintf("%s=77", a);

	int st = cli(&r, &j, (const char *[]){"genesis", "--nodes", "4", "--out", dir, "--host", "node{i}",
					      "--base-port", "65535", "--protocol", "dag", "--param", "brb=coded",
					      "--param", "mode=dense", "--fund", fund, "--param", "d=2", "--param",
					      "list=[1,true]", "--param", "word=\"7\"", NULL});
	is_int(st, 0, "genesis --host 'node{i}' --param ... --fund: exit 0 (%s)", r.err);
	json_t *n2 = json_array_get(json_object_get(j, "nodes"), 2);
	is_str(jstr(n2, "address"), "node2:65535", "node 2 printed at node2:65535 (every node on port P)");
	json_decref(j);
	tu_run_free(&r);
	int rc = weft_genesis_load(&g, gpath, err, sizeof(err));
	is_int(rc, 0, "weft_genesis_load accepts it (%s)", rc ? err : "ok");
	bool hosts = rc == 0 && g.n == 4;
	for (unsigned i = 0; hosts && i < 4; i++) {
		char *want = xasprintf("node%u", i);
		hosts = strcmp(g.nodes[i].host, want) == 0 && g.nodes[i].port == 65535;
		free(want);
	}
	ok(hosts, "genesis nodes at node0..node3, port 65535");
	uint64_t d = 0;
	const char *word = NULL;
	uint32_t wlen = 0;
	ok(rc == 0 && weft_params_str_is(g.params, g.plen, "brb", "coded") &&
	   weft_params_str_is(g.params, g.plen, "mode", "dense") && weft_params_uint(g.params, g.plen, "d", &d) == 0 &&
	   d == 2, "params brb = \"coded\", mode = \"dense\" (strings), d = 2 (a number)");
	ok(rc == 0 && weft_params_str(g.params, g.plen, "word", &word, &wlen) == 0 && wlen == 1 && word[0] == '7',
	   "a quoted JSON VALUE is the string inside the quotes");
	json_t *doc = json_load_file(gpath, 0, NULL), *params = json_object_get(doc, "params");
	json_t *list = json_object_get(params, "list");
	ok(json_array_size(list) == 2 && json_integer_value(json_array_get(list, 0)) == 1 &&
	   json_is_true(json_array_get(list, 1)), "a JSON array VALUE is written as that array");
	ok(json_integer_value(json_object_get(json_object_get(params, "balances"), a)) == 77,
	   "--fund's params.balances sits next to the --param keys");
	json_decref(doc);

	/* The ledger still starts from the merged params. */
	uint8_t ka[32];
	uint64_t bal = 0, nonce;
	struct fake_env fe;
	struct weft_ledger l;
	weft_hex_decode(ka, 32, a, 64);
	fake_env_init(&fe, 0, 1);
	ok(rc == 0 && weft_ledger_init(&l, &fe.env, g.params, g.plen) == 0 &&
	   weft_ledger_account(&l, ka, &bal, &nonce) == 0 && bal == 77, "the ledger starts with the funded balance");
	fake_env_free(&fe);
	weft_genesis_free(&g);

	/* Several placeholders, an IPv4 template, and balances by --param. */
	char *dir2 = xasprintf("%s/docker-ip", tmp), *gpath2 = xasprintf("%s/genesis.json", dir2);
	st = cli(&r, NULL, (const char *[]){"genesis", "--nodes", "2", "--out", dir2, "--host", "10.0.{i}.{i}",
					    "--param", "balances={}", NULL});
	is_int(st, 0, "--host '10.0.{i}.{i}' and --param balances={} without --fund: exit 0 (%s)", r.err);
	tu_run_free(&r);
	rc = weft_genesis_load(&g, gpath2, err, sizeof(err));
	ok(rc == 0 && g.n == 2 && strcmp(g.nodes[1].host, "10.0.1.1") == 0 && g.nodes[1].port == 7100,
	   "every {i} is replaced: node 1 at 10.0.1.1:7100 (%s)", rc ? err : "ok");
	weft_genesis_free(&g);
	free(dir2);
	free(gpath2);

	static const struct {
		const char *args[8];
		const char *needle;
	} bad[] = {
		{{"--host", "node{i"}, "not part of the placeholder"},
		{{"--host", "node{}"}, "not part of the placeholder"},
		{{"--host", "node}{i}"}, "not part of the placeholder"},
		{{"--host", "node{I}"}, "not part of the placeholder"},
		{{"--host", "{i}"}, "gives node 0 the host '0'"},
		{{"--host", "bad {i}"}, "gives node 0 the host 'bad 0'"},
		{{"--host", "{i}.0.0.1", "--nodes", "300"}, "gives node 256 the host '256.0.0.1'"},
		{{"--param", "=1"}, "KEY is empty"},
		{{"--param", "d"}, "KEY=VALUE"},
		{{"--param", "a b=1"}, "KEY must be"},
		{{"--param", "{d}=1"}, "KEY must be"},
		{{"--param", "d=1", "--param", "d=2"}, "KEY d is given twice"},
		{{"--param", "balances={}", "--fund", "@"}, "both set params.balances"},
		{{"--fund", "@", "--param", "balances=1"}, "both set params.balances"},
		{{"--param", "@deep"}, "deeper"},
	};
	/* deep=[[...]]: 40 arrays, deeper than msgpack's limit. */
	char deep[5 + 80 + 1] = "deep=";
	memset(deep + 5, '[', 40);
	memset(deep + 45, ']', 40);
	deep[85] = '\0';
	char *never = xasprintf("%s/never-templated", tmp);
	for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++) {
		const char *argv[16] = {"genesis", "--nodes", "4", "--out", never};
		char shown[256] = "";
		size_t n = 5, off = 0;
		for (int i = 0; bad[c].args[i]; i++) {
			const char *arg = strcmp(bad[c].args[i], "@") == 0       ? fund
					  : strcmp(bad[c].args[i], "@deep") == 0 ? deep
										 : bad[c].args[i];
			argv[n++] = arg;
			off += (size_t)snprintf(shown + off, sizeof(shown) - off, " %.24s", arg);
		}
		argv[n] = NULL;
		st = cli(&r, NULL, argv);
		bool good = st == 2 && strstr(r.err, bad[c].needle) && access(never, F_OK) != 0;
		ok(good, "genesis%s: exit 2 (%s), nothing written", shown, bad[c].needle);
		if (!good)
			diag("exit %d, stderr: %s", st, r.err);
		tu_run_free(&r);
	}
	free(never);
	free(fund);
	free(dir);
	free(gpath);
}

static const char conf_fmt[] =
	"# weft.conf for node%d, written by weft-cli genesis\n"
	"[node]\n"
	"genesis = ../genesis.json\n"
	"[log]\n"
	"file = weftd.log\n"
	"[fault]\n"
	"# the runtime fault layer (fault.set / fault.clear / fault.list RPCs); testnets enable it\n"
	"enabled = true\n";

#define BASE 17100

static void test_genesis(void)
{
	struct tu_run r;
	json_t *j;
	char *dir = xasprintf("%s/net", tmp);
	char *gpath = xasprintf("%s/genesis.json", dir);
	uint8_t pks[4][WEFT_PK_LEN];

	int st = cli(&r, &j, (const char *[]){"genesis", "--nodes", "4", "--out", dir, "--base-port", "17100", NULL});
	is_int(st, 0, "genesis --nodes 4 exits 0 (%s)", r.err);
	is_str(jstr(j, "genesis"), gpath, "prints the genesis path");
	json_t *nodes = json_object_get(j, "nodes");
	is_int((long long)json_array_size(nodes), 4, "prints 4 nodes");
	tu_run_free(&r);

	for (int i = 0; i < 4; i++) {
		json_t *n = json_array_get(nodes, (size_t)i);
		char *name = xasprintf("node%d", i), *datadir = xasprintf("%s/node%d", dir, i);
		char *addr = xasprintf("127.0.0.1:%d", BASE + i);
		char *key = xasprintf("%s/identity.key", datadir), *conf = xasprintf("%s/weft.conf", datadir);
		char *want_conf = xasprintf(conf_fmt, i);

		ok(n && strcmp(jstr(n, "name") ? jstr(n, "name") : "", name) == 0 &&
		   strcmp(jstr(n, "datadir") ? jstr(n, "datadir") : "", datadir) == 0 &&
		   strcmp(jstr(n, "address") ? jstr(n, "address") : "", addr) == 0,
		   "node %d printed with name, datadir and address %s", i, addr);
		is_int(file_mode(datadir), 0700, "%s has mode 0700", datadir);
		is_int(file_mode(key), 0600, "node %d identity.key has mode 0600", i);
		struct weft_identity *id = NULL;
		is_int(weft_identity_load(key, &id), 0, "node %d key loads", i);
		char hex[2 * WEFT_PK_LEN + 1] = "";
		if (id) {
			memcpy(pks[i], id->pk, WEFT_PK_LEN);
			weft_hex_encode(hex, id->pk, WEFT_PK_LEN);
		} else {
			memset(pks[i], 0, WEFT_PK_LEN);
		}
		is_str(jstr(n, "key"), hex, "node %d printed key matches its key file", i);
		weft_identity_free(id);
		char *text = tu_read_file(conf);
		is_str(text, want_conf, "node %d weft.conf is as documented", i);
		is_int(file_mode(conf), 0644, "node %d weft.conf has mode 0644", i);
		free(text);
		free(name);
		free(datadir);
		free(addr);
		free(key);
		free(conf);
		free(want_conf);
	}
	json_decref(j);

	struct weft_genesis g;
	char err[512];
	int rc = weft_genesis_load(&g, gpath, err, sizeof(err));
	is_int(rc, 0, "weft_genesis_load accepts genesis.json (%s)", rc ? err : "ok");
	is_int(file_mode(gpath), 0644, "genesis.json has mode 0644");
	if (rc == 0) {
		ok(g.n == 4 && g.f == 1, "n = 4, f = 1");
		is_str(g.chain_id, "weft-local", "default chain id");
		is_str(g.protocol, "beb", "default protocol");
		ok(g.params == NULL, "no params");
		for (int i = 0; i < 4 && g.n == 4; i++) {
			char *name = xasprintf("node%d", i);
			ok(strcmp(g.nodes[i].name, name) == 0 && memcmp(g.nodes[i].pk, pks[i], WEFT_PK_LEN) == 0 &&
			   strcmp(g.nodes[i].host, "127.0.0.1") == 0 && g.nodes[i].port == BASE + i,
			   "genesis node %d: name, key of its key file, 127.0.0.1:%d", i, BASE + i);
			is_int(weft_genesis_index(&g, pks[i]), i, "weft_genesis_index finds node %d", i);
			free(name);
		}
	}
	weft_genesis_free(&g);

	/* A non-empty DIR is refused without --force, and left alone. */
	char *before = tu_read_file(gpath);
	st = cli(&r, &j, (const char *[]){"genesis", "--nodes", "4", "--out", dir, NULL});
	is_int(st, 1, "non-empty DIR without --force: exit 1");
	ok(strstr(r.err, dir) && strstr(r.err, "--force"), "names DIR and --force (%.*s)",
	   (int)strcspn(r.err, "\n"), r.err);
	char *after = tu_read_file(gpath);
	ok(before && after && strcmp(before, after) == 0, "genesis.json unchanged");
	free(after);
	json_decref(j);
	tu_run_free(&r);

	st = cli(&r, &j, (const char *[]){"genesis", "--nodes", "4", "--out", dir, "--force", NULL});
	is_int(st, 0, "with --force: exit 0");
	after = tu_read_file(gpath);
	ok(before && after && strcmp(before, after) != 0, "genesis.json rewritten with new keys");
	rc = weft_genesis_load(&g, gpath, err, sizeof(err));
	struct weft_identity *id = NULL;
	char *k0 = xasprintf("%s/node0/identity.key", dir);
	ok(rc == 0 && weft_identity_load(k0, &id) == 0 && weft_genesis_index(&g, id->pk) == 0,
	   "the new genesis holds the new node0 key");
	weft_identity_free(id);
	weft_genesis_free(&g);
	free(k0);
	free(before);
	free(after);
	json_decref(j);
	tu_run_free(&r);
	free(gpath);
	free(dir);
}

static void test_genesis_options(void)
{
	struct tu_run r;
	json_t *j;
	struct weft_genesis g;
	char err[512];

	/* Every option, an IPv6 host, and a DIR whose parents do not exist. */
	char *dir = xasprintf("%s/a/b/v6/", tmp);
	char *gpath = xasprintf("%s/a/b/v6/genesis.json", tmp);
	int st = cli(&r, &j, (const char *[]){"genesis", "--nodes", "1", "--out", dir, "--base-port", "65535",
					      "--host", "::1", "--protocol", "seq", "--chain-id", "my.chain-1", NULL});
	is_int(st, 0, "genesis with every option, IPv6 host, new parents: exit 0 (%s)", r.err);
	is_str(jstr(j, "genesis"), gpath, "path printed without a doubled slash");
	json_t *n0 = json_array_get(json_object_get(j, "nodes"), 0);
	is_str(jstr(n0, "address"), "[::1]:65535", "IPv6 address printed in brackets");
	int rc = weft_genesis_load(&g, gpath, err, sizeof(err));
	ok(rc == 0 && g.n == 1 && g.f == 0 && strcmp(g.chain_id, "my.chain-1") == 0 &&
	   strcmp(g.protocol, "seq") == 0 && strcmp(g.nodes[0].host, "::1") == 0 && g.nodes[0].port == 65535,
	   "genesis holds n = 1, the chain id, protocol, host and port (%s)", rc ? err : "ok");
	weft_genesis_free(&g);
	json_decref(j);
	tu_run_free(&r);
	free(dir);
	free(gpath);

	/* An existing empty DIR is fine. */
	dir = xasprintf("%s/empty", tmp);
	if (mkdir(dir, 0755) != 0)
		abort();
	st = cli(&r, NULL,
		 (const char *[]){"genesis", "--nodes", "2", "--out", dir, "--host", "weft-node.local", NULL});
	is_int(st, 0, "an existing empty DIR and a host name: exit 0 (%s)", r.err);
	tu_run_free(&r);
	free(dir);

	/* DIR is a file. */
	char *file = xasprintf("%s/plain", tmp);
	tu_write_file(file, "x");
	st = cli(&r, NULL, (const char *[]){"genesis", "--nodes", "2", "--out", file, NULL});
	ok(st == 1 && strstr(r.err, file), "DIR that is a file: exit 1 naming it");
	tu_run_free(&r);
	free(file);

	st = cli(&r, NULL, (const char *[]){"genesis", "--help", NULL});
	ok(st == 0 && strstr(r.out, "--nodes N") && strstr(r.out, "--force"), "genesis --help");
	tu_run_free(&r);
	st = cli(&r, NULL, (const char *[]){"--help", NULL});
	ok(st == 0 && strstr(r.out, "weft-cli keygen [--out FILE]") &&
	   strstr(r.out, "weft-cli genesis --nodes N --out DIR"), "weft-cli --help shows both local commands");
	tu_run_free(&r);
}

/* Usage errors: exit 2, a message naming the option, nothing created. */
static void test_usage_errors(void)
{
	static const struct {
		const char *args[12];
		const char *option;
	} cases[] = {
		{{"--nodes", "0", "--out", "@"}, "--nodes"},
		{{"--nodes", "1025", "--out", "@"}, "--nodes"},
		{{"--nodes", "abc", "--out", "@"}, "--nodes"},
		{{"--nodes", "", "--out", "@"}, "--nodes"},
		{{"--nodes", "-4", "--out", "@"}, "--nodes"},
		{{"--nodes", "4x", "--out", "@"}, "--nodes"},
		{{"--nodes", "99999999999999999999", "--out", "@"}, "--nodes"},
		{{"--out", "@"}, "--nodes"},
		{{"--nodes", "4"}, "--out"},
		{{"--nodes", "4", "--out", ""}, "--out"},
		{{"--nodes", "4", "--out", "@", "--base-port", "0"}, "--base-port"},
		{{"--nodes", "4", "--out", "@", "--base-port", "65535"}, "--base-port"},
		{{"--nodes", "4", "--out", "@", "--base-port", "65533"}, "--base-port"},
		{{"--nodes", "4", "--out", "@", "--base-port", "70000"}, "--base-port"},
		{{"--nodes", "4", "--out", "@", "--base-port", "x"}, "--base-port"},
		{{"--nodes", "4", "--out", "@", "--host", "bad host"}, "--host"},
		{{"--nodes", "4", "--out", "@", "--host", ""}, "--host"},
		{{"--nodes", "4", "--out", "@", "--host", "1.2.3.256"}, "--host"},
		{{"--nodes", "4", "--out", "@", "--chain-id", "a b"}, "--chain-id"},
		{{"--nodes", "4", "--out", "@", "--chain-id", ""}, "--chain-id"},
		{{"--nodes", "4", "--out", "@", "--protocol", ""}, "--protocol"},
		{{"--nodes", "4", "--out", "@", "--bogus"}, "--bogus"},
		{{"--nodes", "4", "--out", "@", "stray"}, "stray"},
		{{"--nodes", "4", "--out"}, "--out"},
	};
	char *dir = xasprintf("%s/never", tmp);

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *argv[16] = {"genesis"};
		char shown[256] = "";
		size_t n = 1, off = 0;
		for (int i = 0; cases[c].args[i]; i++) {
			const char *a = strcmp(cases[c].args[i], "@") == 0 ? dir : cases[c].args[i];
			argv[n++] = a;
			off += (size_t)snprintf(shown + off, sizeof(shown) - off, " %s",
						a == dir ? "DIR" : (a[0] ? a : "''"));
		}
		argv[n] = NULL;
		struct tu_run r;
		int st = cli(&r, NULL, argv);
		bool good = st == 2 && strstr(r.err, cases[c].option) && access(dir, F_OK) != 0;
		ok(good, "genesis%s: exit 2 naming %s", shown, cases[c].option);
		if (!good)
			diag("exit %d, stderr: %s", st, r.err);
		tu_run_free(&r);
	}
	free(dir);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		abort();
	char *b = tu_bin("weft-cli");
	bin = realpath(b, NULL);
	free(b);
	if (!bin)
		skip_all("weft-cli not built (set WEFT_BIN)");
	tmp = tu_tmpdir("cli-genesis");
	test_keygen();
	test_genesis();
	test_genesis_options();
	test_usage_errors();
	test_ledger_keygen();
	test_genesis_fund();
	test_genesis_template_params();
	tu_rmtree(tmp);
	free(tmp);
	free(bin);
	return done_testing();
}
