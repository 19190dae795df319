/* sim_engine.c - tests of weft-sim's engine through sim_run: determinism,
 * every fault kind acting observably, NIC queueing under saturation, directed
 * topologies, and each property checker catching a deliberately broken toy
 * protocol (beb and seq with their "bug" parameter). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "../tap.h"
#include "weft/crypto.h"

/* Runs the scenario text with one seed; returns the report (new reference)
 * or NULL; *violations gets the count. */
static json_t *run(const char *scenario, uint64_t seed, int *violations, char **raw)
{
	struct sim_scenario sc;
	char err[512];
	if (sim_scenario_parse(&sc, scenario, "test", err, sizeof(err)) != 0) {
		diag("scenario: %s", err);
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct sim_run_opts ro = {.per_node = true};
	struct sim_run_result res;
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w"); /* counterexamples are expected in some runs */
	int rc = sim_run(&sc, seed, &ro, out, &res, err, sizeof(err));
	fclose(stderr);
	stderr = saved;
	fclose(out);
	sim_scenario_free(&sc);
	if (rc != 0) {
		diag("run: %s", err);
		free(buf);
		return NULL;
	}
	if (violations)
		*violations = res.violations;
	json_t *doc = json_loads(buf, 0, NULL);
	if (raw)
		*raw = buf;
	else
		free(buf);
	return doc;
}

static long long jint(json_t *doc, const char *a, const char *b)
{
	json_t *v = json_object_get(doc, a);
	if (b)
		v = json_object_get(v, b);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static double jreal(json_t *doc, const char *a, const char *b)
{
	return json_number_value(json_object_get(json_object_get(doc, a), b));
}

static long long node_field(json_t *doc, int node, const char *field)
{
	return json_integer_value(json_object_get(json_array_get(json_object_get(doc, "nodes"), node), field));
}

static const char *verdict(json_t *doc, const char *checker)
{
	return json_string_value(json_object_get(json_object_get(doc, "checkers"), checker));
}

#define BEB(extra_top, faults)                                                                              \
	"{\"n\":4,\"protocol\":\"beb\"," extra_top                                                          \
	"\"network\":{\"latency\":{\"dist\":\"normal\",\"mean_ms\":20,\"stddev_ms\":5}},"                 \
	"\"workload\":[{\"nodes\":\"all\",\"every_ms\":50,\"count\":10,\"size\":200}],"                     \
	"\"faults\":[" faults "],"                                                                          \
	"\"duration_ms\":2000,\"checkers\":[\"validity\",\"agreement\",\"integrity\",\"totality\"]}"

static void test_determinism(void)
{
	char *a, *b, *c;
	const char *sc = BEB("", "{\"kind\":\"crash_recover\",\"nodes\":[2],\"at_ms\":100,\"until_ms\":300}");
	json_t *d1 = run(sc, 7, NULL, &a), *d2 = run(sc, 7, NULL, &b), *d3 = run(sc, 8, NULL, &c);
	ok(d1 && d2 && strcmp(a, b) == 0, "same scenario and seed: byte-identical output");
	ok(d3 && strcmp(a, c) != 0, "another seed: different output");
	json_decref(d1), json_decref(d2), json_decref(d3);
	free(a), free(b), free(c);
}

static void test_faults(void)
{
	int v;
	json_t *base = run(BEB("", ""), 1, &v, NULL);
	is_int(v, 0, "no faults: every property holds");
	long long base_deliv = jint(base, "deliveries", NULL);
	is_int(base_deliv, 4 * 40, "no faults: 40 broadcasts delivered at 4 nodes");

	json_t *d = run(BEB("", "{\"kind\":\"crash\",\"nodes\":[3],\"at_ms\":100}"), 1, &v, NULL);
	ok(node_field(d, 3, "delivered") < node_field(d, 0, "delivered"), "crash: the crashed node delivers less (%lld < %lld)",
	   node_field(d, 3, "delivered"), node_field(d, 0, "delivered"));
	is_int(v, 0, "crash of f nodes: properties hold over the correct nodes");
	json_decref(d);

	d = run(BEB("", "{\"kind\":\"crash_recover\",\"nodes\":[3],\"at_ms\":100,\"until_ms\":300}"), 1, &v, NULL);
	ok(node_field(d, 3, "delivered") > 0 && node_field(d, 3, "sent_msgs") > 0,
	   "crash_recover: the node works again after recovery");
	ok(strcmp(verdict(d, "integrity"), "pass") == 0,
	   "crash_recover: state rebuilt from kv, nothing delivered twice (integrity holds)");
	ok(strcmp(verdict(d, "validity"), "fail") == 0,
	   "crash_recover: beb loses what was sent while the node was down (validity fails, as it should)");
	json_decref(d);

	d = run(BEB("\"expect_violation\":true,", "{\"kind\":\"omission\",\"nodes\":[1],\"direction\":\"send\"}"), 1, &v, NULL);
	ok(jint(d, "messages", "dropped") > 0 && node_field(d, 2, "recv_msgs") < node_field(base, 2, "recv_msgs"),
	   "omission: node 1's sends are dropped");
	json_decref(d);

	d = run(BEB("", "{\"kind\":\"delay\",\"nodes\":[0,1,2,3],\"ms\":100}"), 1, &v, NULL);
	ok(jreal(d, "latency_ms", "p50") > jreal(base, "latency_ms", "p50") + 90,
	   "delay: +100 ms shows in the latency (p50 %.1f vs %.1f ms)", jreal(d, "latency_ms", "p50"),
	   jreal(base, "latency_ms", "p50"));
	json_decref(d);

	d = run(BEB("", "{\"kind\":\"partition\",\"groups\":[[0,1],[2,3]],\"at_ms\":0,\"until_ms\":300}"), 1, &v, NULL);
	ok(jint(d, "messages", "dropped") > 0 && jint(d, "deliveries", NULL) < base_deliv,
	   "partition: cross-group messages dropped while it lasts");
	ok(node_field(d, 0, "delivered") > 0, "partition: within-group delivery goes on");
	json_decref(d);
	d = run(BEB("", "{\"kind\":\"partition\",\"groups\":[[0,1],[2,3]],\"at_ms\":1000,\"until_ms\":1500}"), 1, &v, NULL);
	is_int(jint(d, "deliveries", NULL), base_deliv, "partition after the workload: no effect (heals by time)");
	json_decref(d);

	d = run(BEB("\"expect_violation\":true,",
		    "{\"kind\":\"corrupt\",\"nodes\":[0],\"probability\":1.0,\"mode\":\"truncate\"}"),
		1, &v, NULL);
	long long rejected = 0;
	for (int i = 1; i < 4; i++)
		rejected += node_field(d, i, "rejected");
	ok(rejected > 0, "corrupt (truncate): receivers reject the truncated messages (%lld rejected)", rejected);
	json_decref(d);
	d = run(BEB("\"expect_violation\":true,", "{\"kind\":\"corrupt\",\"nodes\":[0],\"probability\":1.0}"), 1,
		&v, NULL);
	ok(strcmp(verdict(d, "validity"), "pass") == 0 && strcmp(verdict(d, "agreement"), "fail") == 0,
	   "corrupt (bitflip): flipped payloads are delivered (beb has no integrity check): agreement fails");
	json_decref(d);

	d = run(BEB("", "{\"kind\":\"equivocate\",\"nodes\":[0],\"audience\":[2,3]}"), 1, &v, NULL);
	ok(strcmp(verdict(d, "agreement"), "fail") == 0,
	   "equivocate: nodes 1 and 2 deliver different payloads from node 0 (beb is not BFT)");
	json_decref(d);

	d = run(BEB("", "{\"kind\":\"twins\",\"nodes\":[0]}"), 1, &v, NULL);
	ok(node_field(d, 0, "sent_msgs") == 2 * node_field(base, 0, "sent_msgs"),
	   "twins: two processes share node 0's identity (%lld sends vs %lld)", node_field(d, 0, "sent_msgs"),
	   node_field(base, 0, "sent_msgs"));
	json_decref(d);

	struct sim_scenario sc;
	char err[512];
	const char *adv = BEB("", "{\"kind\":\"adversary\",\"nodes\":[3],\"strategy\":\"x\"}");
	struct sim_run_result res;
	FILE *devnull = fopen("/dev/null", "w");
	ok(sim_scenario_parse(&sc, adv, "t", err, sizeof(err)) == 0 &&
		   sim_run(&sc, 1, &(struct sim_run_opts){0}, devnull, &res, err, sizeof(err)) != 0 &&
		   strstr(err, "adversary"),
	   "adversary: a strategy the protocol does not register is refused (%s)", err);
	sim_scenario_free(&sc);
	d = run(BEB("", "{\"kind\":\"adversary\",\"nodes\":[0],\"strategy\":\"selective\",\"params\":{\"to\":[1]}}"),
		1, &v, NULL);
	ok(strcmp(verdict(d, "totality"), "fail") == 0 && strcmp(verdict(d, "agreement"), "pass") == 0 &&
		   node_field(d, 2, "delivered") < node_field(d, 1, "delivered"),
	   "adversary: beb's 'selective' strategy (honest code, sends only to node 1) breaks totality");
	json_decref(d);

	const char *toomany = BEB("", "{\"kind\":\"crash\",\"nodes\":[2,3]}");
	ok(sim_scenario_parse(&sc, toomany, "t", err, sizeof(err)) == 0 &&
		   sim_run(&sc, 1, &(struct sim_run_opts){0}, devnull, &res, err, sizeof(err)) != 0 &&
		   strstr(err, "expect_violation"),
	   "more than f faulty nodes is refused unless expect_violation (%s)", err);
	sim_scenario_free(&sc);
	fclose(devnull);
	json_decref(base);
}

static void test_bandwidth_and_topology(void)
{
	const char *fast = "{\"n\":8,\"protocol\":\"beb\",\"network\":{\"latency\":{\"dist\":\"constant\",\"ms\":5}},"
			   "\"workload\":[{\"nodes\":\"all\",\"every_ms\":10,\"count\":20,\"size\":100000}],"
			   "\"duration_ms\":20000}";
	const char *slow = "{\"n\":8,\"protocol\":\"beb\",\"network\":{\"latency\":{\"dist\":\"constant\",\"ms\":5},"
			   "\"bandwidth_mbps\":100},"
			   "\"workload\":[{\"nodes\":\"all\",\"every_ms\":10,\"count\":20,\"size\":100000}],"
			   "\"duration_ms\":20000}";
	json_t *a = run(fast, 1, NULL, NULL), *b = run(slow, 1, NULL, NULL);
	/* 100 kB to 7 peers every 10 ms is 560 Mb/s offered to a 100 Mb/s NIC. */
	ok(jreal(a, "latency_ms", "p50") <= 5.0 + 1e-9, "unlimited bandwidth: latency is the link latency (%.2f ms)",
	   jreal(a, "latency_ms", "p50"));
	ok(jreal(b, "latency_ms", "p50") > 50 * jreal(a, "latency_ms", "p50") && jreal(b, "latency_ms", "max") > 500,
	   "saturated 100 Mb/s NIC: queueing delay grows (p50 %.1f ms, max %.1f ms)", jreal(b, "latency_ms", "p50"),
	   jreal(b, "latency_ms", "max"));
	json_decref(a), json_decref(b);

	const char *ring = "{\"n\":4,\"protocol\":\"beb\",\"network\":{\"topology\":{\"directed\":[[1],[2],[3],[0]]}},"
			   "\"workload\":[{\"node\":0,\"at_ms\":1,\"size\":64}],\"duration_ms\":100}";
	json_t *d = run(ring, 1, NULL, NULL);
	ok(node_field(d, 1, "delivered") == 1 && node_field(d, 2, "delivered") == 0 &&
		   node_field(d, 3, "delivered") == 0,
	   "directed ring: node 0's broadcast reaches only node 1");
	json_decref(d);
}

static void test_checkers_catch_bugs(void)
{
	static const struct {
		const char *protocol, *bug, *checker;
	} cases[] = {
		{"beb", "double", "integrity"}, {"beb", "corrupt", "agreement"}, {"beb", "skip", "validity"},
		{"beb", "skip", "totality"},    {"beb", "forge", "integrity"},   {"seq", "fork", "prefix"},
		{"seq", "dup", "no_duplicates"}, {"seq", "drop", "inclusion"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char sc[1024];
		snprintf(sc, sizeof(sc),
			 "{\"n\":4,\"protocol\":\"%s\",\"params\":{\"bug\":\"%s\"},\"expect_violation\":true,"
			 "\"network\":{\"latency\":{\"dist\":\"uniform\",\"min_ms\":5,\"max_ms\":15}},"
			 "\"workload\":[{\"nodes\":\"all\",\"every_ms\":20,\"count\":10,\"size\":64}],"
			 "\"duration_ms\":1000,\"checkers\":[\"%s\"]}",
			 cases[i].protocol, cases[i].bug, cases[i].checker);
		int v = 0;
		json_t *d = run(sc, 3, &v, NULL);
		ok(d && v == 1 && strcmp(verdict(d, cases[i].checker), "fail") == 0, "%s with bug %s: %s checker fails",
		   cases[i].protocol, cases[i].bug, cases[i].checker);
		json_decref(d);
		snprintf(sc, sizeof(sc),
			 "{\"n\":4,\"protocol\":\"%s\","
			 "\"network\":{\"latency\":{\"dist\":\"uniform\",\"min_ms\":5,\"max_ms\":15}},"
			 "\"workload\":[{\"nodes\":\"all\",\"every_ms\":20,\"count\":10,\"size\":64}],"
			 "\"duration_ms\":1000,\"checkers\":[\"%s\"]}",
			 cases[i].protocol, cases[i].checker);
		d = run(sc, 3, &v, NULL);
		ok(d && v == 0, "%s without the bug: %s holds", cases[i].protocol, cases[i].checker);
		json_decref(d);
	}
}

int main(void)
{
	weft_crypto_init();
	test_determinism();
	test_faults();
	test_bandwidth_and_topology();
	test_checkers_catch_bugs();
	return done_testing();
}
