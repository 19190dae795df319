/* cli_ledger.c - integration test of weft-cli ledger.transfer, run as the
 * real binary against a scripted msgpack-RPC server forked on a Unix
 * socket (no daemon): the transfer is signed with the key file's secret,
 * takes its nonce from ledger.balance unless nonce= is given, and reaches
 * ledger.transfer as "tx_hex", a transaction the ledger accepts; bad
 * parameters and unusable key files are usage errors; a daemon error or a
 * balance reply without a nonce stops before anything is signed. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/ledger.h"
#include "weft/mp.h"

static char *tmp, *bin, *sock;

/* Server behaviours. */
enum mode {
	NORMAL,      /* balance {account, balance 100, nonce 3}; transfer echoes {tx_hex, calls} */
	BALANCE_ERR, /* ledger.balance answers an error */
	NO_NONCE,    /* ledger.balance answers without "nonce" */
};

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

/* The reply to one request [0, id, method, params] on a connection that
 * has seen `calls` requests. */
static void reply(struct weft_mpw *w, enum mode mode, const uint8_t *frame, size_t len, int calls)
{
	struct weft_mp_reader r;
	uint32_t n, mlen;
	uint64_t type, id;
	const char *m;
	json_t *params = NULL, *res = NULL, *err = NULL;

	weft_mp_reader_init(&r, frame, len);
	weft_mp_read_array(&r, &n);
	weft_mp_read_uint(&r, &type);
	weft_mp_read_uint(&r, &id);
	weft_mp_read_str(&r, &m, &mlen);
	if (r.err < 0 || weft_mp_to_json(&r, &params) < 0)
		abort();
	json_t *p0 = json_array_get(params, 0);
	if (mlen == 14 && memcmp(m, "ledger.balance", 14) == 0) {
		if (mode == BALANCE_ERR)
			err = json_pack("{s:i, s:s}", "code", -32000, "message", "no ledger here");
		else if (mode == NO_NONCE)
			res = json_pack("{s:O, s:i}", "account", json_object_get(p0, "account"), "balance", 100);
		else
			res = json_pack("{s:O, s:i, s:i}", "account", json_object_get(p0, "account"), "balance", 100,
					"nonce", 3);
	} else if (mlen == 15 && memcmp(m, "ledger.transfer", 15) == 0) {
		res = json_pack("{s:O, s:i}", "tx_hex", json_object_get(p0, "tx_hex"), "calls", calls);
	} else {
		err = json_pack("{s:i, s:s}", "code", -32601, "message", "method not found");
	}
	if (!res && !err)
		abort();
	weft_mpw_array(w, 4);
	weft_mpw_uint(w, 1);
	weft_mpw_uint(w, id);
	if (err)
		weft_json_to_mp(w, err, 1);
	else
		weft_mpw_nil(w);
	if (res)
		weft_json_to_mp(w, res, 1);
	else
		weft_mpw_nil(w);
	json_decref(params);
	json_decref(res);
	json_decref(err);
}

/* Serves one connection at a time until killed. */
static void serve_loop(int ls, enum mode mode)
{
	for (;;) {
		int fd = accept(ls, NULL, NULL);
		if (fd < 0)
			continue;
		uint8_t buf[65536];
		size_t have = 0;
		int calls = 0;
		for (;;) {
			ssize_t got = read(fd, buf + have, sizeof(buf) - have);
			if (got <= 0)
				break;
			have += (size_t)got;
			size_t flen;
			while (have > 0 && weft_mp_frame_len(buf, have, sizeof(buf), &flen) == 0) {
				struct weft_mpw w;
				weft_mpw_init(&w);
				reply(&w, mode, buf, flen, ++calls);
				if (write(fd, w.buf, w.len) != (ssize_t)w.len)
					_exit(1);
				weft_mpw_free(&w);
				memmove(buf, buf + flen, have - flen);
				have -= flen;
			}
		}
		close(fd);
	}
}

static pid_t serve(enum mode mode)
{
	int ls = tu_unix_listen(sock);
	if (ls < 0)
		abort();
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0)
		serve_loop(ls, mode);
	close(ls);
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Runs weft-cli with args (NULL-terminated); parses stdout as JSON. */
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

/* Decodes the tx_hex the server echoed. */
static bool echoed_transfer(json_t *j, struct weft_ledger_transfer *t)
{
	const char *h = json_string_value(json_object_get(j, "tx_hex"));
	uint8_t buf[WEFT_LEDGER_TRANSFER_MAX_LEN];
	size_t len = h ? strlen(h) / 2 : 0;

	return h && len <= sizeof(buf) && weft_hex_decode(buf, len, h, strlen(h)) == 0 &&
	       weft_ledger_transfer_decode(buf, len, t) == 0;
}

static void test_transfer(void)
{
	static const char to_hex[] = "dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659";
	char *key = xasprintf("%s/alice.key", tmp), *keyarg = xasprintf("key=%s", key);
	char *toarg = xasprintf("to=%s", to_hex);
	struct tu_run r;
	json_t *j;
	uint8_t account[32], to[32];
	struct weft_ledger_transfer t;
	enum weft_ledger_outcome why;

	int st = cli(&r, &j, (const char *[]){"ledger-keygen", "--out", key, NULL});
	const char *acc = json_string_value(json_object_get(j, "account"));
	ok(st == 0 && acc && weft_hex_decode(account, 32, acc, strlen(acc)) == 0, "ledger-keygen for the sender");
	json_decref(j);
	tu_run_free(&r);
	weft_hex_decode(to, 32, to_hex, 64);

	pid_t srv = serve(NORMAL);
	st = cli(&r, &j, (const char *[]){"--socket", sock, "ledger.transfer", toarg, "amount=25", keyarg, NULL});
	is_int(st, 0, "ledger.transfer exits 0 (%s)", r.err);
	ok(echoed_transfer(j, &t), "ledger.transfer received tx_hex holding a transfer");
	ok(memcmp(t.from, account, 32) == 0 && memcmp(t.to, to, 32) == 0 && t.amount == 25,
	   "from the key file's account, to and amount as given");
	is_int((long long)t.nonce, 3, "nonce from ledger.balance");
	is_int((long long)json_integer_value(json_object_get(j, "calls")), 2, "two calls: balance, then transfer");
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_transfer_encode(&t, &w);
	ok(weft_ledger_precheck(w.buf, w.len, &why) == 0, "the transaction passes the ledger's precheck (%s)",
	   weft_ledger_outcome_name(why));
	weft_mpw_free(&w);
	json_decref(j);
	tu_run_free(&r);

	st = cli(&r, &j, (const char *[]){"--socket", sock, "ledger.transfer", toarg, "amount=18446744073709551615",
					  keyarg, "nonce=0", NULL});
	is_int(st, 0, "with nonce=0 and the largest amount: exit 0 (%s)", r.err);
	ok(echoed_transfer(j, &t) && t.nonce == 0 && t.amount == UINT64_MAX, "nonce and amount as given");
	is_int((long long)json_integer_value(json_object_get(j, "calls")), 1, "one call: no ledger.balance");
	json_decref(j);
	tu_run_free(&r);

	/* The default key file is ./ledger.key; 0x-prefixed accounts work. */
	char cwd[PATH_MAX];
	char *def = xasprintf("%s/ledger.key", tmp), *toarg0x = xasprintf("to=0x%s", to_hex);
	if (!getcwd(cwd, sizeof(cwd)) || chdir(tmp) != 0)
		abort();
	st = cli(&r, &j, (const char *[]){"ledger-keygen", NULL});
	ok(st == 0 && strcmp(json_string_value(json_object_get(j, "key")), "./ledger.key") == 0,
	   "ledger-keygen writes ./ledger.key by default");
	json_decref(j);
	tu_run_free(&r);
	st = cli(&r, &j, (const char *[]){"--socket", sock, "ledger.transfer", toarg0x, "amount=1", NULL});
	if (chdir(cwd) != 0)
		abort();
	ok(st == 0 && echoed_transfer(j, &t) && t.amount == 1, "ledger.transfer uses ./ledger.key by default (%s)",
	   r.err);
	json_decref(j);
	tu_run_free(&r);
	stop(srv);
	free(def);
	free(toarg0x);

	srv = serve(BALANCE_ERR);
	st = cli(&r, &j, (const char *[]){"--socket", sock, "ledger.transfer", toarg, "amount=1", keyarg, NULL});
	ok(st == 1 && strstr(r.err, "ledger.balance") && strstr(r.err, "no ledger here"),
	   "an error from ledger.balance: exit 1 naming it (%.*s)", (int)strcspn(r.err, "\n"), r.err);
	json_decref(j);
	tu_run_free(&r);
	stop(srv);

	srv = serve(NO_NONCE);
	st = cli(&r, &j, (const char *[]){"--socket", sock, "ledger.transfer", toarg, "amount=1", keyarg, NULL});
	ok(st == 5 && strstr(r.err, "nonce"), "a balance without nonce: exit 5 (%.*s)", (int)strcspn(r.err, "\n"),
	   r.err);
	json_decref(j);
	tu_run_free(&r);
	stop(srv);

	free(key);
	free(keyarg);
	free(toarg);
}

/* Usage errors: exit 2 with a message naming the problem; no connection
 * is attempted (the socket does not exist). */
static void test_usage(void)
{
	char *key = xasprintf("%s/alice.key", tmp), *keyarg = xasprintf("key=%s", key);
	char *loose = xasprintf("%s/loose.key", tmp), *loosearg = xasprintf("key=%s", loose);
	char *junk = xasprintf("%s/junk.key", tmp), *junkarg = xasprintf("key=%s", junk);
	char *missing = xasprintf("key=%s/none.key", tmp);
	const char *to = "to=dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659";
	const char *nosock = "/nonexistent/rpc.sock";

	/* A copy of a good key readable by others, and a file that is not a key. */
	char *text = tu_read_file(key);
	tu_write_file(loose, text ? text : "");
	chmod(loose, 0644);
	tu_write_file(junk, "weft-ed25519-seed 00\n");
	chmod(junk, 0600);
	free(text);

	const struct {
		const char *args[6];
		const char *needle;
	} cases[] = {
		{{"amount=1", keyarg}, "to=ACCOUNT is required"},
		{{to, keyarg}, "amount=N is required"},
		{{to, "amount=0", keyarg}, "amount"},
		{{to, "amount=-1", keyarg}, "amount"},
		{{to, "amount=18446744073709551616", keyarg}, "amount"},
		{{to, "amount=1", "nonce=x", keyarg}, "nonce"},
		{{"to=abc", "amount=1", keyarg}, "to wants an account"},
		{{"to=0000000000000000000000000000000000000000000000000000000000000005", "amount=1", keyarg},
		 "to wants an account"},
		{{to, "amount=1", "memo=hi", keyarg}, "unknown parameter 'memo'"},
		{{to, "amount=1", "amount=2", keyarg}, "more than once"},
		{{to, "amount=1", "stray", keyarg}, "not key=value"},
		{{to, "amount=1", missing}, "does not exist"},
		{{to, "amount=1", loosearg}, "chmod 600"},
		{{to, "amount=1", junkarg}, "not a ledger key file"},
		{{to, "amount=1", "key="}, "key wants a file name"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *args[12] = {"--socket", nosock, "ledger.transfer"};
		int n = 3;
		for (int i = 0; cases[c].args[i]; i++)
			args[n++] = cases[c].args[i];
		args[n] = NULL;
		struct tu_run r;
		int st = cli(&r, NULL, args);
		bool good = st == 2 && strstr(r.err, cases[c].needle);
		ok(good, "usage case %zu: exit 2, '%s'", c, cases[c].needle);
		if (!good)
			diag("exit %d, stderr: %s", st, r.err);
		tu_run_free(&r);
	}
	free(key);
	free(keyarg);
	free(loose);
	free(loosearg);
	free(junk);
	free(junkarg);
	free(missing);
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
	tmp = tu_tmpdir("cli-ledger");
	sock = xasprintf("%s/rpc.sock", tmp);
	test_transfer();
	test_usage();
	tu_rmtree(tmp);
	free(tmp);
	free(sock);
	free(bin);
	return done_testing();
}
