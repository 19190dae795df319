/* sim_suite.c - runs the real weft-sim binary on every scenario file in
 * tests/sim/ (each must exit 0: its properties hold, or it declares the
 * violation it expects), checks the trace output is NDJSON with the event
 * kinds it documents, and that bad command lines and files fail cleanly
 * with exit 2.
 *
 * Golden hashes: tests/sim/golden-hashes.txt holds, per scenario, seed
 * and node, the committed transaction count, order_hash, ledger_hash and
 * ledger height the simulator produces (changed on purpose when vertices
 * gained weak references, which order more, when the mempool kept its
 * order across a restart (batch records), when the DAG's BRB stopped
 * keeping payloads of its own: catch-up offers the stored vertices, and
 * when advance_wait's "behind" began to need f + 1 authors ahead: the
 * twins' order); every run must
 * still produce them byte for byte (a refactor that changes the order or
 * the ledger shows here).
 *
 * WEFT_SIM_SEEDS=N runs seeds 1..N of every scenario instead of its own
 * range (`make check` runs a slice of 5; `make campaign-sim` leaves it
 * unset: every scenario's full range). */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/testutil.h"
#include "../tap.h"

static char *src_path(const char *rel)
{
	const char *src = getenv("WEFT_SRC");
	char *p;
	if (asprintf(&p, "%s/%s", src && *src ? src : ".", rel) < 0)
		abort();
	return p;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the golden scenarios and compares every node's hashes. */
static void check_golden(const char *sim, const char *dir)
{
	char *path;
	if (asprintf(&path, "%s/golden-hashes.txt", dir) < 0)
		abort();
	char *text = tu_read_file(path);
	free(path);
	ok(text != NULL, "tests/sim/golden-hashes.txt is there");
	char scen[128] = "";
	unsigned seed = 0, lines = 0, same = 0;
	json_t *nodes = NULL;
	for (char *line = strtok(text ? text : "", "\n"); line; line = strtok(NULL, "\n")) {
		char name[128], order[65], ledger[65];
		unsigned sd, node;
		long long txs, height;
		if (sscanf(line, "%127s %u %u %lld %64s %64s %lld", name, &sd, &node, &txs, order, ledger, &height) != 7)
			continue;
		lines++;
		if (strcmp(name, scen) != 0 || sd != seed) {
			snprintf(scen, sizeof(scen), "%s", name);
			seed = sd;
			char *sp, seedarg[16];
			if (asprintf(&sp, "%s/%s", dir, name) < 0)
				abort();
			snprintf(seedarg, sizeof(seedarg), "%u", seed);
			char *argv[] = {(char *)sim, "--quiet", "--per-node", "--seed", seedarg, sp, NULL};
			struct tu_run r;
			tu_run(&r, argv, 120000, -1);
			json_decref(nodes);
			json_t *doc = json_loads(r.out, 0, NULL);
			nodes = json_incref(json_object_get(doc, "nodes"));
			json_decref(doc);
			tu_run_free(&r);
			free(sp);
		}
		json_t *info = json_object_get(json_array_get(nodes, node), "info");
		const char *o = json_string_value(json_object_get(info, "order_hash"));
		const char *l = json_string_value(json_object_get(info, "ledger_hash"));
		bool eq = o && l && !strcmp(o, order) && !strcmp(l, ledger) &&
			  json_integer_value(json_object_get(info, "committed_txs")) == txs &&
			  json_integer_value(json_object_get(info, "ledger_height")) == height;
		if (!eq)
			diag("%s seed %u node %u: expected %lld txs, order %.16s, ledger %.16s; got %lld, %.16s, %.16s", name,
			     seed, node, txs, order, ledger, (long long)json_integer_value(json_object_get(info, "committed_txs")),
			     o ? o : "none", l ? l : "none");
		same += eq;
	}
	json_decref(nodes);
	free(text);
	ok(lines > 0 && same == lines, "golden order and ledger hashes: %u of %u (scenario, seed, node) equal", same, lines);
}

int main(void)
{
	char *sim = tu_bin("weft-sim");
	char *dir = src_path("tests/sim");
	DIR *d = opendir(dir);
	char *names[256];
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL && n < 256) {
		size_t len = strlen(e->d_name);
		if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
			names[n++] = strdup(e->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	ok(n > 0, "found %zu scenario files in tests/sim", n);
	for (size_t i = 0; i < n; i++) {
		char *path;
		if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
			abort();
		struct tu_run r;
		const char *slice = getenv("WEFT_SIM_SEEDS");
		char seeds[32];
		snprintf(seeds, sizeof(seeds), "1..%s", slice && *slice ? slice : "1");
		char *argv[] = {sim, "--quiet", "--out", "/dev/null", path, NULL, NULL, NULL};
		if (slice && *slice) {
			argv[4] = "--seeds";
			argv[5] = seeds;
			argv[6] = path;
		}
		tu_run(&r, argv, 300000, -1);
		if (!is_int(r.status, 0, "scenario %s", names[i]))
			diag("%s", r.err);
		tu_run_free(&r);
		free(path);
		free(names[i]);
	}

	check_golden(sim, dir);

	/* Trace: NDJSON, one event per line. */
	char *tmp = tu_tmpdir("simtrace"), *scen, *trace;
	if (asprintf(&scen, "%s/s.json", tmp) < 0 || asprintf(&trace, "%s/trace.ndjson", tmp) < 0)
		abort();
	tu_write_file(scen, "{\"n\":4,\"protocol\":\"beb\",\"workload\":[{\"node\":0,\"size\":32}],"
			    "\"faults\":[{\"kind\":\"crash_recover\",\"nodes\":[3],\"at_ms\":0.5,\"until_ms\":5}],"
			    "\"duration_ms\":10}");
	struct tu_run r;
	char *argv[] = {sim, "--trace", trace, scen, NULL};
	tu_run(&r, argv, 30000, -1);
	is_int(r.status, 0, "weft-sim --trace runs");
	json_t *doc = json_loads(r.out, 0, NULL);
	ok(json_is_object(doc) && json_integer_value(json_object_get(doc, "requests")) == 1,
	   "stdout holds the run's JSON document");
	json_decref(doc);
	tu_run_free(&r);
	char *text = tu_read_file(trace);
	int lines = 0, bad = 0, sends = 0, delivers = 0, faults = 0, requests = 0;
	for (char *line = strtok(text ? text : "", "\n"); line; line = strtok(NULL, "\n")) {
		json_t *ev = json_loads(line, 0, NULL);
		const char *kind = json_string_value(json_object_get(ev, "ev"));
		lines++;
		bad += !(ev && kind && json_is_integer(json_object_get(ev, "t")));
		if (kind) {
			sends += !strcmp(kind, "send");
			delivers += !strcmp(kind, "deliver");
			faults += !strcmp(kind, "fault");
			requests += !strcmp(kind, "request");
		}
		json_decref(ev);
	}
	ok(lines > 0 && bad == 0, "trace: %d lines, each a JSON object with t and ev", lines);
	ok(requests == 1 && sends == 3 && delivers >= 3 && faults == 2,
	   "trace: request, sends, deliveries and the crash/recover faults recorded (%d/%d/%d/%d)", requests, sends,
	   delivers, faults);
	free(text);

	/* --trace-data: the message bytes on send and recv, the payload digest on request. */
	char *argv5[] = {sim, "--trace", trace, "--trace-data", scen, NULL};
	tu_run(&r, argv5, 30000, -1);
	is_int(r.status, 0, "weft-sim --trace --trace-data runs");
	tu_run_free(&r);
	text = tu_read_file(trace);
	int withdata = 0, msgs = 0, digests = 0;
	for (char *line = strtok(text ? text : "", "\n"); line; line = strtok(NULL, "\n")) {
		json_t *ev = json_loads(line, 0, NULL);
		const char *kind = json_string_value(json_object_get(ev, "ev"));
		const char *data = json_string_value(json_object_get(ev, "data"));
		const char *digest = json_string_value(json_object_get(ev, "digest"));
		if (kind && (!strcmp(kind, "send") || !strcmp(kind, "recv"))) {
			msgs++;
			withdata += data && (json_int_t)strlen(data) == 2 * json_integer_value(json_object_get(ev, "bytes"));
		}
		digests += kind && !strcmp(kind, "request") && digest && strlen(digest) == 16;
		json_decref(ev);
	}
	ok(msgs > 0 && withdata == msgs && digests == 1, "--trace-data: data on %d of %d sends/recvs, request digest %d",
	   withdata, msgs, digests);
	free(text);

	/* Bad input fails with exit 2 and a message naming the problem. */
	tu_write_file(scen, "{\"n\":0,\"protocol\":\"beb\",\"duration_ms\":10}");
	char *argv2[] = {sim, scen, NULL};
	tu_run(&r, argv2, 30000, -1);
	ok(r.status == 2 && strstr(r.err, "$.n"), "n = 0: exit 2 naming $.n (%s)", r.err);
	tu_run_free(&r);
	tu_write_file(scen, "{\"n\":4,\"protocol\":\"nosuch\",\"duration_ms\":10}");
	tu_run(&r, argv2, 30000, -1);
	ok(r.status == 2 && strstr(r.err, "nosuch"), "unknown protocol: exit 2 naming it (%s)", r.err);
	tu_run_free(&r);
	char *argv3[] = {sim, "--seeds", "9..3", scen, NULL};
	tu_run(&r, argv3, 30000, -1);
	is_int(r.status, 2, "bad seed range: exit 2");
	tu_run_free(&r);
	char *argv4[] = {sim, "--help", NULL};
	tu_run(&r, argv4, 30000, -1);
	ok(r.status == 0 && strstr(r.out, "--trace") && strstr(r.out, "--trace-data") &&
		   strstr(r.out, "--seeds"), "--help documents the options");
	tu_run_free(&r);

	tu_rmtree(tmp);
	free(tmp), free(scen), free(trace), free(dir), free(sim);
	return done_testing();
}
