/* state_sync.c - a node whose store is wiped rejoins by state sync, on a
 * real committee of 4 weftd (real sockets, real LMDB) on loopback.
 *
 * The genesis uses gc_depth 20 (so checkpoints come every 20 rounds and a
 * node away for a few seconds is behind what its peers keep; the test
 * waits until no peer serves the first 80 rounds).  Opaque
 * transactions go to every node; node 2 is stopped, its LMDB directory
 * (db/) deleted, and the others take more transactions; node 2 is started
 * again with only its identity and configuration.  It must install a
 * snapshot (dag.info.sync.snapshot.installs), reach the committee's
 * committed_txs with the same order_hash and ledger_hash, answer tx.status
 * "committed" for a transaction committed while it was gone, and keep
 * committing new transactions.  A corrupt part or offer is covered by
 * tests/unit/dag.c; this test is the end to end path. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"

#define N 4
#define WIPED 2

static char *cli, *net, *dirs[N];
static pid_t pids[N];

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* weft-cli --datadir dirs[i] method [arg]: the parsed JSON result or NULL. */
static json_t *cli_call(int i, const char *method, const char *arg)
{
	char *argv[] = {cli, "--datadir", dirs[i], "--timeout", "10", (char *)method, (char *)arg, NULL};
	struct tu_run r;
	tu_run(&r, argv, 15000, -1);
	json_t *j = r.status == 0 ? json_loads(r.out, 0, NULL) : NULL;
	tu_run_free(&r);
	return j;
}

static long long info_int(const json_t *info, const char *key)
{
	return json_integer_value(json_object_get(info, key));
}

/* Submits count transactions "<tag> <k>" to every running node except skip. */
static int submit(const char *tag, int count, int skip)
{
	int accepted = 0;
	for (int k = 0; k < count; k++) {
		int i = k % N == skip ? (k + 1) % N : k % N;
		char arg[128];
		snprintf(arg, sizeof(arg), "data=%s-%d", tag, k);
		json_t *j = cli_call(i, "tx.submit", arg);
		accepted += j != NULL;
		json_decref(j);
	}
	return accepted;
}

/* Waits until the running nodes agree on committed_txs >= want with one
 * order and ledger hash; the common height, or -1. */
static long long converge(long long want, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		long long h[N];
		char order[N][65], ledger[N][65];
		bool same = true;
		for (int i = 0; i < N; i++) {
			json_t *d = cli_call(i, "dag.info", NULL);
			h[i] = d ? info_int(d, "committed_txs") : -1;
			snprintf(order[i], 65, "%s", d ? json_string_value(json_object_get(d, "order_hash")) : "");
			snprintf(ledger[i], 65, "%s", d ? json_string_value(json_object_get(d, "ledger_hash")) : "");
			json_decref(d);
			same &= h[i] >= want && h[i] == h[0] && !strcmp(order[i], order[0]) && !strcmp(ledger[i], ledger[0]);
		}
		if (same)
			return h[0];
		usleep(200000);
	}
	return -1;
}

/* genesis.json gets params {gc_depth 20, brb_window 64}. */
static bool small_gc(void)
{
	char *path = tu_path(net, "genesis.json");
	json_t *g = json_load_file(path, 0, NULL);
	json_t *params = json_object_get(g, "params");
	if (params == NULL) {
		params = json_object();
		json_object_set_new(g, "params", params);
	}
	json_object_set_new(params, "gc_depth", json_integer(20));
	json_object_set_new(params, "brb_window", json_integer(64));
	bool done = g && json_dump_file(g, path, JSON_INDENT(2)) == 0;
	json_decref(g);
	free(path);
	return done;
}

static bool start_committee(void)
{
	int base = tu_port_base(N);
	char port[16];
	snprintf(port, sizeof(port), "%d", base);
	char *argv[] = {cli, "genesis", "--nodes", "4", "--out", net, "--base-port", port, "--protocol", "dag", NULL};
	struct tu_run r;
	tu_run(&r, argv, 20000, -1);
	int st = r.status;
	tu_run_free(&r);
	if (base < 0 || st != 0 || !small_gc())
		return false;
	int started = 0;
	for (int i = 0; i < N; i++) {
		char name[16];
		snprintf(name, sizeof(name), "node%d", i);
		dirs[i] = tu_path(net, name);
		pids[i] = tu_weftd_start(dirs[i], NULL);
		started += pids[i] > 0;
	}
	return started == N;
}

int main(void)
{
	cli = tu_bin("weft-cli");
	if (access(cli, X_OK) != 0)
		skip_all("weft-cli not built (set WEFT_BIN)");
	char *tmp = tu_tmpdir("statesync");
	net = tu_path(tmp, "net");
	if (!ok(start_committee(), "4 daemons on a genesis with gc_depth 20")) {
		tu_rmtree(tmp);
		return done_testing();
	}
	is_int(submit("before", 40, -1), 40, "40 transactions accepted");
	long long h1 = converge(40, 30000);
	ok(h1 >= 40, "the committee committed them (committed_txs %lld)", h1);

	ok(tu_weftd_stop(pids[WIPED], 10000) == 0, "node%d stopped", WIPED);
	pids[WIPED] = -1;
	char *db = tu_path(dirs[WIPED], "db");
	tu_rmtree(db);
	ok(access(db, F_OK) != 0, "its store (db/) deleted: only identity.key and weft.conf remain");
	free(db);

	/* The others go on until none of them serves the first 80 rounds any
	 * more, neither from the DAG (serves_from_round) nor from the BRB's
	 * retained instances (64 per author): only a snapshot can help then. */
	is_int(submit("while-away", 30, WIPED), 30, "30 more transactions while node%d is away", WIPED);
	long long served = 0;
	for (long deadline = now_ms() + 60000; served < 80 && now_ms() < deadline; usleep(200000)) {
		served = -1;
		for (int i = 0; i < N; i++) {
			json_t *d = i == WIPED ? NULL : cli_call(i, "dag.info", NULL);
			long long from = info_int(json_object_get(d, "sync"), "serves_from_round");
			if (i != WIPED && (served < 0 || from < served))
				served = from;
			json_decref(d);
		}
	}
	ok(served >= 80, "no running node serves the first 80 rounds any more (the lowest serves from round %lld)",
	   served);
	json_t *st = cli_call(0, "tx.submit", "data=while-away-0");
	char digest[65] = "";
	snprintf(digest, sizeof(digest), "%s", st ? json_string_value(json_object_get(st, "digest")) : "");
	json_decref(st);

	long t0 = now_ms();
	pids[WIPED] = tu_weftd_start(dirs[WIPED], NULL);
	ok(pids[WIPED] > 0, "node%d started again on an empty store", WIPED);
	long long h2 = converge(70, 60000);
	long rejoin = now_ms() - t0;
	ok(h2 >= 70, "node%d rejoined: the same committed_txs (%lld), order_hash and ledger_hash on all 4 (%.1f s)",
	   WIPED, h2, rejoin / 1000.0);
	json_t *d2 = cli_call(WIPED, "dag.info", NULL);
	json_t *snap = json_object_get(json_object_get(d2, "sync"), "snapshot");
	ok(info_int(snap, "installs") >= 1, "it installed a snapshot (round %lld)", info_int(snap, "installed_round"));
	json_decref(d2);
	char arg[96];
	snprintf(arg, sizeof(arg), "digest=%s", digest);
	json_t *ts = cli_call(WIPED, "tx.status", arg);
	ok(ts && strcmp(json_string_value(json_object_get(ts, "status")), "committed") == 0,
	   "tx.status on the wiped node: a transaction committed while it was away is committed");
	json_decref(ts);

	is_int(submit("after", 8, -1), 8, "8 transactions after the rejoin, node%d taking its share", WIPED);
	ok(converge(h2 + 8, 30000) >= h2 + 8, "all 4 commit them with one order and ledger hash");

	int stopped = 0;
	for (int i = 0; i < N; i++)
		stopped += pids[i] > 0 && tu_weftd_stop(pids[i], 10000) == 0;
	is_int(stopped, N, "the 4 daemons stop cleanly");
	diag("a wiped node rejoined in %.1f s", rejoin / 1000.0);
	tu_rmtree(tmp);
	for (int i = 0; i < N; i++)
		free(dirs[i]);
	free(net), free(tmp), free(cli);
	return done_testing();
}
