/* campaign_manifest.c - TAP tests of weft-campaign's manifests
 * (src/campaign/manifest.c) and its seeded generator (generate.c), with no
 * docker: every bad manifest of tests/campaign/bad/ and inline ones is
 * refused naming the JSON path and the rule, and `weft-campaign
 * check-manifest` / `run` exit 2 on them before touching anything; the
 * manifests of tests/campaign/ parse, and so do their weft-sim equivalents
 * (src/sim/scenario.c); the generator gives the same manifest for the same
 * seed and only valid ones (1000 seeds round-trip through the parser). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/err.h"

#include "../../src/campaign/campaign.h"
#include "../../src/sim/sim.h"
#include "../lib/testutil.h"
#include "../tap.h"

static char err[1024];

static const char *src_dir(void)
{
	const char *src = getenv("WEFT_SRC");
	return src ? src : ".";
}

/* Parses text as a manifest: the parser's return (err holds the message). */
static int parse_text(const char *text)
{
	struct campaign_manifest m;
	json_error_t je;
	json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		snprintf(err, sizeof(err), "bad test JSON: %s", je.text);
		return -1;
	}
	int rc = campaign_manifest_parse(&m, doc, "t.json", err, sizeof(err));
	json_decref(doc);
	if (rc == 0)
		campaign_manifest_free(&m);
	return rc;
}

static void refused(const char *text, const char *want, const char *what)
{
	int rc = parse_text(text);
	ok(rc == WEFT_EINVAL && strstr(err, want) != NULL, "%s: refused (%s)", what, err);
}

static void test_bad_files(void)
{
	static const struct {
		const char *file, *want;
	} cases[] = {
		{"unknown-field.json", "$.schedule[0].for: unknown key for a crash_recover step (expected one of fault, at_s, for_s"},
		{"nodes-out-of-range.json", "$.nodes: expected an integer in [4, 32], got 3"},
		{"too-many-byzantine.json", "$.byzantine: 2 nodes are faulty for good (2 and 3: Byzantine or crashed) but 4 nodes tolerate f = 1"},
		{"step-outside-run.json", "$.schedule[0].for_s: the step ends at 70 s, after the run (duration_s = 60)"},
		{"unknown-fault.json", "$.schedule[0].fault: unknown fault 'kil' (expected one of crash, crash_recover"},
		{"not-runnable.json", "$.schedule[0].fault: 'skew' is a weft-sim fault, not a fault of a weft-campaign schedule"},
		{"heal-never-started.json", "$.schedule[2].heal: 'p2' names no step (a heal of something never started)"},
		{"node-out-of-range.json", "$.schedule[0].nodes[0]: expected a node index in [0, 3] (nodes = 4), got 4"},
		{"byzantine-load.json", "$.load.from: node 3 is Byzantine"},
		{"overlap.json", "$.schedule[1]: overlaps $.schedule[0] (crash_recover from 10 s to 20 s) on node 1"},
		{"lose-store.json", "$.schedule[0].lose: 'store' is not runnable on a testnet"},
	};
	char path[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct campaign_manifest m;
		snprintf(path, sizeof(path), "%s/tests/campaign/bad/%s", src_dir(), cases[i].file);
		int rc = campaign_manifest_load(&m, path, err, sizeof(err));
		ok(rc == WEFT_EINVAL && strncmp(err, path, strlen(path)) == 0 && strstr(err, cases[i].want),
		   "bad/%s is refused naming the file, the path and the rule (%s)", cases[i].file, err);
		if (rc == 0)
			campaign_manifest_free(&m);
	}
}

static void test_inline(void)
{
	refused("{\"nodes\": 4, \"duration_s\": 60, \"nodez\": 1}", "t.json: $.nodez: unknown key for a campaign",
		"an unknown top-level key");
	refused("{\"nodes\": 33, \"duration_s\": 60}", "$.nodes: expected an integer in [4, 32], got 33", "33 nodes");
	refused("{\"nodes\": 4.0, \"duration_s\": 60}", "$.nodes: expected an integer", "nodes as a real");
	refused("{\"duration_s\": 60}", "$: missing required key 'nodes'", "no nodes");
	refused("{\"nodes\": 4}", "$: missing required key 'duration_s'", "no duration");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"protocol\": \"beb\"}", "$.protocol: expected \"dag\"",
		"a protocol the campaign cannot load");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"brb\": \"dag\"}", "$.brb: expected a BRB the DAG can host",
		"a BRB that is none");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"byzantine\": [{\"node\": 1, \"strategy\": \"twins\"}]}",
		"$.byzantine[0].strategy: unknown strategy \"twins\" (weftd --byzantine takes one of omission, corrupt, "
		"equivocate, bad_refs",
		"a Byzantine strategy weftd does not run");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"byzantine\": [{\"node\": 1, \"strategy\": \"omission\", \"x\": 1}]}",
		"$.byzantine[0].x: unknown key for a Byzantine node", "an unknown key of a Byzantine node");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"byzantine\": [{\"node\": 1, \"strategy\": \"bad_refs\"}],"
		" \"schedule\": [{\"at_s\": 5, \"fault\": \"crash\", \"nodes\": [2]}]}",
		"2 nodes are faulty for good (1 and 2", "a crash and a Byzantine node with f = 1");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 60, \"fault\": \"pause\", \"nodes\": [1], "
		"\"for_s\": 1}]}",
		"$.schedule[0].at_s: starts at 60 s, when the run (duration_s = 60) is over", "a step at the end of the run");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": -1, \"fault\": \"pause\", \"nodes\": [1], "
		"\"for_s\": 1}]}",
		"$.schedule[0].at_s: expected a number of seconds within the run", "a step before the run");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"heal\": \"x\"}, {\"at_s\": 5, "
		"\"fault\": \"pause\", \"nodes\": [1], \"id\": \"x\"}, {\"at_s\": 70, \"heal\": \"x\"}]}",
		"$.schedule[2].at_s: expected a number of seconds within the run (duration_s) in [0, 60], got 70",
		"a heal after the run");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"pause\", \"nodes\": [1], "
		"\"id\": \"x\"}, {\"at_s\": 5, \"heal\": \"x\"}]}",
		"$.schedule[1].at_s: heals 'x' at 5 s, before it starts (10 s)", "a heal before its start");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"pause\", \"nodes\": [1], "
		"\"for_s\": 5, \"id\": \"x\"}, {\"at_s\": 20, \"heal\": \"x\"}]}",
		"$.schedule[1].heal: $.schedule[0] ('x') already ends after its for_s", "a heal of a step with for_s");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"pause\", \"nodes\": [1], "
		"\"id\": \"x\"}, {\"at_s\": 20, \"heal\": \"x\"}, {\"at_s\": 30, \"heal\": \"x\"}]}",
		"$.schedule[2].heal: 'x' is healed twice", "a heal twice");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"pause\", \"nodes\": [1]}]}",
		"$.schedule[0]: missing required key 'for_s' (how long the fault lasts), or an 'id' that a heal step names",
		"a step that never ends");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"crash\", \"nodes\": [1], "
		"\"for_s\": 5}]}",
		"$.schedule[0].for_s: a crash never ends", "a crash with for_s");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"equivocate\", \"nodes\": [1], "
		"\"for_s\": 5}]}",
		"goes in $.byzantine", "equivocate is a Byzantine node's strategy, not a step");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"delay\", \"nodes\": [1], "
		"\"for_s\": 5}]}",
		"missing required key 'delay_ms'", "a delay without delay_ms");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"delay\", \"nodes\": [1], "
		"\"ms\": 100, \"for_s\": 5}]}",
		"$.schedule[0].ms: unknown key for a delay step", "the simulator's ms: delay_ms on a testnet");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"loss\", \"nodes\": [1], "
		"\"for_s\": 5}]}",
		"missing required key 'probability'", "a loss without probability");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"partition\", \"groups\": "
		"[[0, 1, 2, 3]], \"for_s\": 5}]}",
		"$.schedule[0].groups: every node can still reach every other", "a partition that cuts nothing");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"partition\", \"groups\": "
		"[[0, 0]], \"for_s\": 5}]}",
		"$.schedule[0].groups[0][1]: node 0 is listed twice", "a node twice in a group");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"partition\", \"groups\": "
		"[[0, 1]], \"for_s\": 20}, {\"at_s\": 20, \"fault\": \"partition\", \"groups\": [[2]], \"for_s\": 5}]}",
		"overlaps $.schedule[0] (partition from 10 s to 30 s)", "two partitions at once");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"omission\", \"nodes\": [1], "
		"\"direction\": \"out\", \"for_s\": 5}]}",
		"$.schedule[0].direction: expected send, receive or both", "the transport's direction word");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"pause\", \"nodes\": [1], "
		"\"id\": \"a b\"}]}",
		"$.schedule[0].id: expected a name", "an id that is not a name");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"params\": {\"mode\": \"dense\"}}", "$.params.mode: is a key of the manifest itself",
		"a genesis parameter with its own key");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"bounds\": {\"recover\": 1}}", "$.bounds.recover: unknown key for the bounds",
		"an unknown bound");
	refused("{\"nodes\": 4, \"duration_s\": 60, \"load\": {\"rate\": 0}}", "$.load.rate: expected a number of transactions",
		"a rate of 0");

	ok(parse_text("{\"nodes\": 4, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"kill\", \"nodes\": [1], "
		      "\"for_s\": 5}, {\"at_s\": 12, \"fault\": \"delay\", \"nodes\": [2], \"delay_ms\": 50, \"for_s\": 5}]}") == 0,
	   "steps on other nodes may overlap a kill (%s)", err);
	ok(parse_text("{\"nodes\": 7, \"duration_s\": 60, \"schedule\": [{\"at_s\": 10, \"fault\": \"partition\", \"groups\": "
		      "[[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 0, 1]], \"for_s\": 5}]}") == 0,
	   "overlapping partition groups (a ring) parse (%s)", err);
}

static void test_good(void)
{
	static const char *const files[] = {"ci-short.json", "kill-partition.json", "pause-restart.json",
					    "transport-faults.json", "byzantine.json", "isolate-one.json"};
	char path[1024];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct campaign_manifest m;
		snprintf(path, sizeof(path), "%s/tests/campaign/%s", src_dir(), files[i]);
		int rc = campaign_manifest_load(&m, path, err, sizeof(err));
		if (!ok(rc == 0, "%s parses (%s)", files[i], rc ? err : "ok"))
			continue;
		char *notes = NULL;
		json_t *sc = campaign_sim_scenario(&m, &notes);
		char *text = json_dumps(sc, 0);
		struct sim_scenario s;
		rc = sim_scenario_parse(&s, text, files[i], err, sizeof(err));
		ok(rc == 0 && s.n == m.n, "... and weft-sim parses its scenario equivalent (%s)", rc ? err : "ok");
		if (rc == 0)
			sim_scenario_free(&s);
		free(text);
		free(notes);
		json_decref(sc);
		campaign_manifest_free(&m);
	}

	struct campaign_manifest m;
	snprintf(path, sizeof(path), "%s/tests/campaign/kill-partition.json", src_dir());
	if (campaign_manifest_load(&m, path, err, sizeof(err)) == 0) {
		ok(m.n == 4 && m.f == 1 && m.byzantine == 1u << 3 && strcmp(m.strategy[3], "bad_refs") == 0 && m.rate == 50 &&
			   m.load_from == 7 && m.nsteps == 3 && m.steps[0].fault == WEFT_FAULT_CRASH_RECOVER &&
			   m.steps[0].end_s == 30 && m.steps[1].ngroups == 2 && m.steps[2].delay_ms == 200 && m.recover_s == 30,
		   "kill-partition.json: kill is crash_recover, and every field lands");
		ok(!campaign_talk(&m.steps[1], 0, 2) && campaign_talk(&m.steps[1], 2, 3) && campaign_talk(&m.steps[1], 1, 1),
		   "its partition cuts 0 from 2 and keeps 2 with 3");
		campaign_manifest_free(&m);
	}
}

static void test_generator(void)
{
	uint32_t seen[WEFT_FAULT_COUNT] = {0}, byz = 0, failed = 0, differ = 0, sims = 0;

	for (uint64_t seed = 1; seed <= 1000; seed++) {
		uint32_t nodes = seed % 2 ? 4 : 7;
		double duration = seed % 3 ? 120 : 60;
		json_t *a = campaign_generate(seed, (uint32_t)(seed % 5), nodes, duration);
		json_t *b = campaign_generate(seed, (uint32_t)(seed % 5), nodes, duration);
		json_t *c = campaign_generate(seed + 1, (uint32_t)(seed % 5), nodes, duration);
		struct campaign_manifest m;
		differ += !json_equal(a, c);
		if (!json_equal(a, b) || campaign_manifest_parse(&m, a, "generated", err, sizeof(err)) != 0) {
			if (failed++ == 0)
				diag("seed %llu: %s", (unsigned long long)seed, err);
		} else {
			for (size_t k = 0; k < m.nsteps; k++)
				seen[m.steps[k].fault]++;
			byz += m.byzantine != 0;
			if (seed % 50 == 0) { /* the scenario equivalents parse too */
				char *notes = NULL;
				json_t *sc = campaign_sim_scenario(&m, &notes);
				char *text = json_dumps(sc, 0);
				struct sim_scenario s;
				if (sim_scenario_parse(&s, text, "generated", err, sizeof(err)) == 0) {
					sims++;
					sim_scenario_free(&s);
				} else {
					diag("seed %llu: its scenario: %s", (unsigned long long)seed, err);
				}
				free(text);
				free(notes);
				json_decref(sc);
			}
			campaign_manifest_free(&m);
		}
		json_decref(a);
		json_decref(b);
		json_decref(c);
	}
	is_int(failed, 0, "1000 seeds: the same seed draws the same manifest, and every one parses");
	ok(differ > 990, "different seeds draw different manifests (%u of 1000)", differ);
	is_int(sims, 20, "their weft-sim equivalents parse (every 50th seed)");
	static const enum weft_fault drawn[] = {WEFT_FAULT_CRASH_RECOVER, WEFT_FAULT_PAUSE,     WEFT_FAULT_RESTART,
						WEFT_FAULT_DISCONNECT,    WEFT_FAULT_PARTITION, WEFT_FAULT_DELAY,
						WEFT_FAULT_OMISSION,      WEFT_FAULT_LOSS,      WEFT_FAULT_DUPLICATE,
						WEFT_FAULT_REORDER,       WEFT_FAULT_CORRUPT};
	bool all = true;
	for (size_t i = 0; i < sizeof(drawn) / sizeof(drawn[0]); i++)
		all = all && seen[drawn[i]] > 0;
	ok(all, "every perturbation is drawn (crash_recover %u, pause %u, partition %u, corrupt %u ...)",
	   seen[WEFT_FAULT_CRASH_RECOVER], seen[WEFT_FAULT_PAUSE], seen[WEFT_FAULT_PARTITION], seen[WEFT_FAULT_CORRUPT]);
	ok(byz > 200 && byz < 600, "about four campaigns in ten have Byzantine nodes (%u of 1000)", byz);
	json_t *x = campaign_generate(7, 0, 4, 120), *y = campaign_generate(7, 1, 4, 120);
	ok(!json_equal(x, y), "the index draws another manifest from the same seed");
	json_decref(x);
	json_decref(y);
}

/* The first line of s, for a test name. */
static char *first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
	return s;
}

/* The binary refuses before anything starts: exit 2, no docker needed. */
static void test_exit_status(void)
{
	char *bin = tu_bin("weft-campaign"), path[1024];
	struct tu_run r;

	if (access(bin, X_OK) != 0) {
		skip(3, "%s is not built", bin);
		free(bin);
		return;
	}
	snprintf(path, sizeof(path), "%s/tests/campaign/bad/too-many-byzantine.json", src_dir());
	char *check[] = {bin, "check-manifest", path, NULL};
	tu_run(&r, check, 10000, -1);
	ok(r.status == 2 && strstr(r.err, "$.byzantine"), "check-manifest: exit 2 naming the field (%s)", first_line(r.err));
	tu_run_free(&r);
	char *run[] = {bin, "run", path, "--out", "/nonexistent/never", NULL};
	tu_run(&r, run, 10000, -1);
	ok(r.status == 2 && access("/nonexistent/never", F_OK) != 0, "run: exit 2 before anything is created");
	tu_run_free(&r);
	snprintf(path, sizeof(path), "%s/tests/campaign/ci-short.json", src_dir());
	char *good[] = {bin, "check-manifest", path, NULL};
	tu_run(&r, good, 10000, -1);
	ok(r.status == 0 && strstr(r.out, "ci-short, 4 nodes (f = 1)"), "check-manifest: exit 0 on a good one (%s)", first_line(r.out));
	tu_run_free(&r);
	free(bin);
}

int main(void)
{
	json_object_seed(1);
	test_bad_files();
	test_inline();
	test_good();
	test_generator();
	test_exit_status();
	return done_testing();
}
