/* sim_scenario.c - TAP tests of weft-sim's scenario parser (src/sim/scenario.c).
 *
 * A complete scenario using every feature parses to the expected values
 * (times in microseconds, params as msgpack); defaults apply when keys are
 * left out; every hostile input (wrong types, out-of-range and huge
 * numbers, negative times, bad node indices, duplicates, empty arrays,
 * unknown keys, syntax errors, deep nesting) fails with WEFT_EINVAL and a
 * message naming the JSON path; sim_scenario_faulty counts the right nodes;
 * files load with their base name as default name; the example scenarios
 * in tests/sim/examples parse; and mutated, truncated and type-swapped
 * scenarios never crash or leak (run under `make SAN=1`). */
#include <glob.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/err.h"
#include "weft/mp.h"

#include "../../src/sim/sim.h"
#include "../tap.h"

static char err[1024];

/* Tests write JSON with single quotes; this turns them into double quotes
 * (a new string). */
static char *dq(const char *s)
{
	char *t = strdup(s);
	if (!t)
		abort();
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	return t;
}

static int parse_q(struct sim_scenario *sc, const char *text)
{
	char *t = dq(text);
	int rc = sim_scenario_parse(sc, t, "test.json", err, sizeof(err));
	free(t);
	return rc;
}

static bool is_zeroed(const struct sim_scenario *sc)
{
	static const struct sim_scenario zero;
	return memcmp(sc, &zero, sizeof(zero)) == 0;
}

static const char *full_json =
	"{"
	" 'name': 'full-test',"
	" 'n': 7, 'f': 2, 'protocol': 'bracha',"
	" 'params': {'batch': 3, 'mode': 'fast', 'list': [1, -2, 0.5, true, null]},"
	" 'network': {"
	"   'latency': {'dist': 'normal', 'mean_ms': 50, 'stddev_ms': 10.5, 'min_ms': 1.25},"
	"   'bandwidth_mbps': 100.5,"
	"   'loss': 0.01, 'duplicate': 0.002,"
	"   'reorder': {'probability': 0.1, 'max_ms': 20},"
	"   'topology': {'directed': [[1, 2], [2], [0], [0, 1], [5], [6], []]}"
	" },"
	" 'faults': ["
	"   {'kind': 'crash', 'nodes': [6], 'at_ms': 100},"
	"   {'kind': 'crash_recover', 'nodes': [5], 'at_ms': 100, 'until_ms': 400.5},"
	"   {'kind': 'omission', 'nodes': [1], 'peers': [2, 3], 'direction': 'send', 'at_ms': 0, 'until_ms': 500},"
	"   {'kind': 'delay', 'nodes': [0], 'ms': 30, 'until_ms': 500},"
	"   {'kind': 'partition', 'groups': [[0, 1], [2, 3]], 'at_ms': 50, 'until_ms': 300},"
	"   {'kind': 'corrupt', 'nodes': [4], 'probability': 0.5, 'mode': 'truncate', 'at_ms': 0},"
	"   {'kind': 'equivocate', 'nodes': [0], 'audience': [2, 3]},"
	"   {'kind': 'twins', 'nodes': [1]},"
	"   {'kind': 'adversary', 'nodes': [3], 'strategy': 'bad_refs', 'params': {'rate': 2}},"
	"   {'kind': 'omission', 'nodes': [2, 1]},"
	"   {'kind': 'delay', 'nodes': [0], 'peers': [2], 'ms': 30, 'jitter_ms': 2.5},"
	"   {'kind': 'loss', 'nodes': [1], 'peers': [3, 4], 'direction': 'receive', 'probability': 0.25, 'at_ms': 10,"
	"    'for_ms': 90},"
	"   {'kind': 'cut', 'from': [0, 1], 'to': [2], 'at_ms': 5, 'until_ms': 50},"
	"   {'kind': 'skew', 'nodes': [2], 'rate': 1.5, 'offset_ms': 20},"
	"   {'kind': 'crash_recover', 'nodes': [4], 'after': {'node': 0, 'event': 'dag.commit', 'contains': 'round=10'},"
	"    'delay_ms': 5, 'for_ms': 400, 'lose': 'store'},"
	"   {'kind': 'partition', 'groups': [[0], [1]], 'after': {'node': 2, 'deliveries': 30}, 'for_ms': 200},"
	"   {'kind': 'crash', 'nodes': [3], 'after': {'node': 1, 'log': 'dag/jump'}},"
	"   {'kind': 'crash_recover', 'nodes': [6], 'at_ms': 1, 'until_ms': 2, 'lose': 'last_step'},"
	"   {'kind': 'skew', 'nodes': [5], 'offset_ms': 0.5}"
	" ],"
	" 'workload': ["
	"   {'nodes': 'all', 'start_ms': 0, 'every_ms': 200, 'count': 25, 'size': 1024},"
	"   {'nodes': [0, 2], 'start_ms': 1.5, 'every_ms': 0.25, 'count': 3, 'size': 0},"
	"   {'node': 4, 'at_ms': 5, 'size': 100}"
	" ],"
	" 'duration_ms': 5000,"
	" 'seeds': {'from': 10, 'to': 14},"
	" 'checkers': ['validity', 'agreement', 'integrity', 'totality', 'prefix', 'no_duplicates', 'inclusion'],"
	" 'expect_violation': true,"
	" 'kv': 'memory',"
	" 'signatures': 'fast'"
	"}";

static bool nodes_are(const uint32_t *got, uint32_t ngot, const uint32_t *want, uint32_t nwant)
{
	if (ngot != nwant)
		return false;
	for (uint32_t i = 0; i < nwant; i++)
		if (got[i] != want[i])
			return false;
	return true;
}

#define NODES(got, ngot, ...) \
	nodes_are((got), (ngot), (const uint32_t[]){__VA_ARGS__}, \
		  (uint32_t)(sizeof((const uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t)))

/* Reads a msgpack str and compares it with s. */
static bool mp_str_is(struct weft_mp_reader *r, const char *s)
{
	const char *p;
	uint32_t len;
	return weft_mp_read_str(r, &p, &len) == 0 && len == strlen(s) && memcmp(p, s, len) == 0;
}

static void test_full(void)
{
	struct sim_scenario sc;
	int rc = parse_q(&sc, full_json);

	if (!is_int(rc, 0, "full scenario parses")) {
		diag("%s", err);
		return;
	}
	is_str(err, "", "err is empty on success");
	is_str(sc.name, "full-test", "name");
	is_int(sc.n, 7, "n");
	is_int(sc.f, 2, "f");
	is_str(sc.protocol, "bracha", "protocol");

	/* params: {"batch": 3, "mode": "fast", "list": [1, -2, 0.5, true, null]} */
	struct weft_mp_reader r;
	uint32_t count = 0;
	uint64_t u = 0;
	int64_t i64 = 0;
	bool b = false;
	weft_mp_reader_init(&r, sc.params, sc.plen);
	bool good = weft_mp_read_map(&r, &count) == 0 && count == 3 && mp_str_is(&r, "batch") &&
		    weft_mp_read_uint(&r, &u) == 0 && u == 3 && mp_str_is(&r, "mode") && mp_str_is(&r, "fast") &&
		    mp_str_is(&r, "list") && weft_mp_read_array(&r, &count) == 0 && count == 5 &&
		    weft_mp_read_uint(&r, &u) == 0 && u == 1 && weft_mp_read_int(&r, &i64) == 0 && i64 == -2;
	struct weft_mp_obj o;
	good = good && weft_mp_read(&r, &o) == 0 && o.type == WEFT_MP_FLOAT && o.v.f == 0.5 &&
	       weft_mp_read_bool(&r, &b) == 0 && b && weft_mp_read_nil(&r) == 0 && weft_mp_remaining(&r) == 0;
	ok(sc.params && good, "params converted to the expected msgpack map");

	is_int(sc.net.latency.kind, SIM_LAT_NORMAL, "latency: normal");
	is_int((long long)sc.net.latency.a_us, 50000, "latency mean 50 ms = 50000 us");
	is_int((long long)sc.net.latency.b_us, 10500, "latency stddev 10.5 ms = 10500 us");
	is_int((long long)sc.net.latency.min_us, 1250, "latency min 1.25 ms = 1250 us");
	is_int((long long)sc.net.latency.max_us, 50000 + 10 * 10500, "latency max defaults to mean + 10 stddev");
	is_int((long long)sc.net.bandwidth_bps, 100500000, "bandwidth 100.5 Mbit/s in bit/s");
	ok(sc.net.loss == 0.01, "loss");
	ok(sc.net.duplicate == 0.002, "duplicate");
	ok(sc.net.reorder == 0.1, "reorder probability");
	is_int((long long)sc.net.reorder_us, 20000, "reorder max 20 ms");
	ok(sc.net.directed, "directed topology");
	ok(sc.net.out && NODES(sc.net.out[0], sc.net.out_len[0], 1, 2) && NODES(sc.net.out[1], sc.net.out_len[1], 2) &&
		   NODES(sc.net.out[3], sc.net.out_len[3], 0, 1) && NODES(sc.net.out[5], sc.net.out_len[5], 6),
	   "topology out lists");
	ok(sc.net.out && sc.net.out_len[6] == 0 && sc.net.out[6] == NULL, "a node may have no out edges");

	if (!is_int((long long)sc.nfaults, 19, "nineteen faults")) {
		sim_scenario_free(&sc);
		return;
	}
	struct sim_fault *f = sc.faults;
	ok(f[0].kind == SIM_FAULT_CRASH && NODES(f[0].nodes, f[0].nnodes, 6) && f[0].start_us == 100000 &&
		   f[0].stop_us == SIM_NEVER,
	   "crash: node 6 at 100 ms, forever");
	ok(f[1].kind == SIM_FAULT_CRASH_RECOVER && NODES(f[1].nodes, f[1].nnodes, 5) && f[1].start_us == 100000 &&
		   f[1].stop_us == 400500,
	   "crash_recover: node 5 down 100..400.5 ms");
	ok(f[2].kind == SIM_FAULT_OMISSION && NODES(f[2].nodes, f[2].nnodes, 1) &&
		   NODES(f[2].peers, f[2].npeers, 2, 3) && f[2].sends && !f[2].receives && f[2].start_us == 0 &&
		   f[2].stop_us == 500000,
	   "omission: node 1 drops sends to 2, 3 until 500 ms");
	ok(f[3].kind == SIM_FAULT_DELAY && NODES(f[3].nodes, f[3].nnodes, 0) && f[3].delay_us == 30000 &&
		   f[3].start_us == 0 && f[3].stop_us == 500000,
	   "delay: node 0 +30 ms, at_ms defaults to 0");
	ok(f[4].kind == SIM_FAULT_PARTITION && f[4].nnodes == 0 && f[4].nodes == NULL && f[4].ngroups == 2 &&
		   NODES(f[4].groups[0], f[4].group_len[0], 0, 1) && NODES(f[4].groups[1], f[4].group_len[1], 2, 3) &&
		   f[4].start_us == 50000 && f[4].stop_us == 300000,
	   "partition: {0,1} | {2,3} from 50 to 300 ms");
	ok(f[5].kind == SIM_FAULT_CORRUPT && NODES(f[5].nodes, f[5].nnodes, 4) && f[5].probability == 0.5 &&
		   f[5].corrupt == SIM_CORRUPT_TRUNCATE && f[5].stop_us == SIM_NEVER,
	   "corrupt: node 4, p 0.5, truncate");
	ok(f[6].kind == SIM_FAULT_EQUIVOCATE && NODES(f[6].nodes, f[6].nnodes, 0) &&
		   NODES(f[6].peers, f[6].npeers, 2, 3),
	   "equivocate: node 0's twin speaks to 2, 3");
	ok(f[7].kind == SIM_FAULT_TWINS && NODES(f[7].nodes, f[7].nnodes, 1), "twins: node 1");
	ok(f[8].kind == SIM_FAULT_ADVERSARY && NODES(f[8].nodes, f[8].nnodes, 3) && f[8].strategy &&
		   strcmp(f[8].strategy, "bad_refs") == 0,
	   "adversary: node 3, strategy bad_refs");
	weft_mp_reader_init(&r, f[8].params, f[8].plen);
	ok(f[8].params && weft_mp_read_map(&r, &count) == 0 && count == 1 && mp_str_is(&r, "rate") &&
		   weft_mp_read_uint(&r, &u) == 0 && u == 2 && weft_mp_remaining(&r) == 0,
	   "adversary params as msgpack");
	ok(f[9].kind == SIM_FAULT_OMISSION && NODES(f[9].nodes, f[9].nnodes, 2, 1) && f[9].npeers == 0 &&
		   f[9].peers == NULL && f[9].sends && f[9].receives,
	   "omission defaults: all peers, both directions, nodes kept in order");
	ok(f[3].npeers == 0 && f[3].jitter_us == 0 && f[1].lose == SIM_LOSE_NONE && f[1].after.kind == SIM_TRIGGER_NONE,
	   "defaults: delay to every peer without jitter; crash_recover loses nothing; no trigger");
	ok(f[10].kind == SIM_FAULT_DELAY && NODES(f[10].peers, f[10].npeers, 2) && f[10].delay_us == 30000 &&
		   f[10].jitter_us == 2500,
	   "delay: only 0 -> 2, +30 ms and up to 2.5 ms of jitter");
	ok(f[11].kind == SIM_FAULT_LOSS && NODES(f[11].nodes, f[11].nnodes, 1) && NODES(f[11].peers, f[11].npeers, 3, 4) &&
		   !f[11].sends && f[11].receives && f[11].probability == 0.25 && f[11].start_us == 10000 &&
		   f[11].stop_us == 100000,
	   "loss: node 1 loses a quarter of what 3 and 4 send it, for 90 ms from 10 ms");
	ok(f[12].kind == SIM_FAULT_CUT && NODES(f[12].nodes, f[12].nnodes, 0, 1) && NODES(f[12].peers, f[12].npeers, 2) &&
		   f[12].start_us == 5000 && f[12].stop_us == 50000,
	   "cut: from 0 and 1 to 2, from 5 to 50 ms");
	ok(f[13].kind == SIM_FAULT_SKEW && f[13].rate == 1.5 && f[13].offset_us == 20000 && f[18].rate == 1.0 &&
		   f[18].offset_us == 500,
	   "skew: rate and offset; the rate defaults to 1");
	ok(f[14].kind == SIM_FAULT_CRASH_RECOVER && f[14].after.kind == SIM_TRIGGER_EVENT && f[14].after.node == 0 &&
		   strcmp(f[14].after.text, "dag.commit") == 0 && strcmp(f[14].after.contains, "round=10") == 0 &&
		   f[14].start_us == 5000 && f[14].stop_us == 405000 && f[14].lose == SIM_LOSE_STORE,
	   "crash_recover after node 0's dag.commit of round 10: down from 5 ms after it for 400 ms, store lost");
	ok(f[15].kind == SIM_FAULT_PARTITION && f[15].after.kind == SIM_TRIGGER_DELIVERIES && f[15].after.node == 2 &&
		   f[15].after.deliveries == 30 && f[15].start_us == 0 && f[15].stop_us == 200000,
	   "partition from node 2's 30th delivery, for 200 ms");
	ok(f[16].kind == SIM_FAULT_CRASH && f[16].after.kind == SIM_TRIGGER_LOG && strcmp(f[16].after.text, "dag/jump") == 0 &&
		   f[16].after.contains == NULL && f[16].stop_us == SIM_NEVER,
	   "crash after a log line containing 'dag/jump' ('/' is fine in a trigger)");
	ok(f[17].lose == SIM_LOSE_LAST_STEP, "crash_recover that loses its last step");

	if (is_int((long long)sc.nwork, 3, "three workload lines")) {
		struct sim_workload *w = sc.work;
		ok(NODES(w[0].nodes, w[0].nnodes, 0, 1, 2, 3, 4, 5, 6) && w[0].start_us == 0 &&
			   w[0].every_us == 200000 && w[0].count == 25 && w[0].size == 1024,
		   "workload 0: all nodes, every 200 ms, 25 x 1024 B");
		ok(NODES(w[1].nodes, w[1].nnodes, 0, 2) && w[1].start_us == 1500 && w[1].every_us == 250 &&
			   w[1].count == 3 && w[1].size == 0,
		   "workload 1: fractional ms, size 0");
		ok(NODES(w[2].nodes, w[2].nnodes, 4) && w[2].start_us == 5000 && w[2].count == 1 && w[2].size == 100,
		   "workload 2: single request form");
	}
	is_int((long long)sc.duration_us, 5000000, "duration 5000 ms");
	ok(sc.nseeds == 5 && sc.seeds[0] == 10 && sc.seeds[4] == 14, "seed range 10..14 inclusive");
	is_int(sc.checkers,
	       SIM_CHECK_VALIDITY | SIM_CHECK_AGREEMENT | SIM_CHECK_INTEGRITY | SIM_CHECK_TOTALITY | SIM_CHECK_PREFIX |
		       SIM_CHECK_NO_DUP | SIM_CHECK_INCLUSION,
	       "all checkers");
	ok(sc.expect_violation, "expect_violation");
	is_int(sc.kv, SIM_KV_MEMORY, "kv memory");
	is_int(sc.signatures, SIM_SIG_FAST, "fast signatures");

	bool faulty[7];
	memset(faulty, 0xff, sizeof(faulty));
	uint32_t nf = sim_scenario_faulty(&sc, faulty);
	is_int(nf, 6, "faulty: crash 6, omission 1 and 2, corrupt 4, equivocate 0, twins 1, adversary 3");
	ok(faulty[0] && faulty[1] && faulty[2] && faulty[3] && faulty[4] && !faulty[5] && faulty[6],
	   "faulty flags: 5 (crash_recover, skew) stays correct");
	is_int(sim_scenario_faulty(&sc, NULL), nf, "faulty count without a flag array");

	sim_scenario_free(&sc);
	ok(is_zeroed(&sc), "free zeroes the scenario");
	sim_scenario_free(&sc);
	sim_scenario_free(NULL);
	ok(1, "free twice and free(NULL) are harmless");
}

static void test_defaults(void)
{
	struct sim_scenario sc;
	char *t = dq("{'n': 4, 'protocol': 'beb', 'duration_ms': 0.5}");
	int rc = sim_scenario_parse(&sc, t, "dir/mini.json", err, sizeof(err));
	free(t);
	if (!is_int(rc, 0, "minimal scenario parses")) {
		diag("%s", err);
		return;
	}
	is_str(sc.name, "mini", "name defaults to the base name without .json");
	is_int(sc.f, 1, "f defaults to (n-1)/3");
	ok(sc.params == NULL && sc.plen == 0, "no params");
	ok(sc.net.latency.kind == SIM_LAT_CONSTANT && sc.net.latency.a_us == 1000, "latency defaults to constant 1 ms");
	ok(sc.net.bandwidth_bps == 0 && sc.net.loss == 0 && sc.net.duplicate == 0 && sc.net.reorder == 0 &&
		   !sc.net.directed && sc.net.out == NULL,
	   "network defaults: unlimited, lossless, complete");
	ok(sc.nfaults == 0 && sc.faults == NULL && sc.nwork == 0 && sc.work == NULL, "no faults, no workload");
	is_int((long long)sc.duration_us, 500, "duration 0.5 ms = 500 us");
	ok(sc.nseeds == 1 && sc.seeds[0] == 1, "seeds default to [1]");
	ok(sc.checkers == 0 && !sc.expect_violation, "no checkers, no expected violation");
	ok(sc.kv == SIM_KV_LMDB && sc.signatures == SIM_SIG_ED25519, "lmdb and ed25519 by default");
	ok(sc.bounds.inclusion_min == 1.0 && sc.bounds.settle_us == SIM_NEVER && sc.bounds.catch_up_us == SIM_NEVER,
	   "bounds default to inclusion_min 1, settle 20%% of the run, no catch_up_ms");
	is_int(sim_scenario_faulty(&sc, NULL), 0, "no faulty nodes");
	sim_scenario_free(&sc);

	t = dq("{'n': 4, 'protocol': 'seq', 'duration_ms': 10000, 'checkers': ['catch_up', 'inclusion_fraction', "
	       "'state_hash'], 'bounds': {'inclusion_min': 0.95, 'settle_ms': 2000.5, 'catch_up_ms': 3000}}");
	rc = sim_scenario_parse(&sc, t, "bounds.json", err, sizeof(err));
	free(t);
	if (rc)
		diag("%s", err);
	ok(rc == 0 && sc.bounds.inclusion_min == 0.95 && sc.bounds.settle_us == 2000500 &&
		   sc.bounds.catch_up_us == 3000000 &&
		   sc.checkers == (SIM_CHECK_CATCH_UP | SIM_CHECK_INCLUSION_FRACTION | SIM_CHECK_STATE_HASH),
	   "bounds and the checkers that use them");
	if (rc == 0)
		sim_scenario_free(&sc);

	struct {
		const char *json;
		const char *what;
	} more[] = {
		{"{'n': 1, 'protocol': 'p', 'duration_ms': 1, 'f': 0}", "n = 1, f = 0"},
		{"{'n': 4096, 'protocol': 'p', 'duration_ms': 1, 'f': 1365}", "n = SIM_MAX_NODES, f = 1365"},
		{"{'n': 4, 'protocol': 'p', 'duration_ms': 1, 'network': {'latency': {'dist': 'uniform', "
		 "'min_ms': 10, 'max_ms': 10}, 'topology': 'complete', 'bandwidth_mbps': 0}}",
		 "uniform with min = max, complete topology, bandwidth 0"},
		{"{'n': 4, 'protocol': 'p', 'duration_ms': 1, 'faults': [], 'workload': [], 'checkers': []}",
		 "empty faults, workload and checkers lists"},
		{"{'n': 4, 'protocol': 'p', 'duration_ms': 1, 'workload': [{'nodes': [1], 'count': 1, 'every_ms': 0, "
		 "'size': 67108864}]}",
		 "count 1 with every_ms 0, size 64 MiB"},
		{"{'n': 4, 'protocol': 'p', 'duration_ms': 1, 'seeds': [0, 9223372036854775807, 5]}",
		 "seed 0 and the largest JSON integer"},
		{"{'n': 4, 'protocol': 'p', 'duration_ms': 1e12, 'params': {}}", "duration at the limit, empty params"},
		{"{'n': 4, 'protocol': 'p', 'duration_ms': 1, 'faults': [{'kind': 'partition', 'groups': [[3]]}]}",
		 "partition with one group (the rest form another)"},
	};
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		rc = parse_q(&sc, more[i].json);
		if (!is_int(rc, 0, "valid: %s", more[i].what))
			diag("%s", err);
		sim_scenario_free(&sc);
	}

	rc = parse_q(&sc, "{'n': 4, 'protocol': 'p', 'duration_ms': 1, 'network': {'latency': "
			  "{'dist': 'constant', 'ms': 0.0004}}, 'seeds': {'from': 7, 'to': 7}}");
	ok(rc == 0 && sc.net.latency.a_us == 0 && sc.nseeds == 1 && sc.seeds[0] == 7,
	   "sub-microsecond latency rounds to 0; a one-seed range");
	sim_scenario_free(&sc);
	rc = parse_q(&sc, "{'n': 4, 'protocol': 'p', 'duration_ms': 1, 'params': {'a': 1}}");
	ok(rc == 0 && sc.plen == 4 && sc.params[0] == 0x81 && sc.params[1] == 0xa1 && sc.params[2] == 'a' &&
		   sc.params[3] == 0x01,
	   "params bytes: fixmap 1, fixstr 'a', positive fixint 1");
	sim_scenario_free(&sc);
}

/* A scenario that is valid apart from the extra fragment. */
#define BASE "{'n': 4, 'protocol': 'beb', 'duration_ms': 100, "

static const struct {
	const char *json;
	const char *needle;
} hostile[] = {
	/* root */
	{"[]", "test.json: $: expected an object, got an array"},
	{"{'n': 4, 'protocol': 'beb', 'durration': 5}", "$: unknown key 'durration'"},
	{"{'protocol': 'beb', 'duration_ms': 5}", "$: missing required key 'n'"},
	{"{'n': 0, 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer >= 1, got 0"},
	{"{'n': -1, 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer >= 1, got -1"},
	{"{'n': 4097, 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer <= 4096, got 4097"},
	{"{'n': 4.0, 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer in [1, 4096], got 4.0"},
	{"{'n': '4', 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer in [1, 4096], got '4'"},
	{"{'n': null, 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer in [1, 4096], got null"},
	{"{'n': 1e300, 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer"},
	{"{'n': 9223372036854775807, 'protocol': 'beb', 'duration_ms': 5}", "$.n: expected an integer <= 4096"},
	{"{'n': 99999999999999999999, 'protocol': 'beb', 'duration_ms': 5}", "test.json: line 1, column"},
	{"{'n': 1e999, 'protocol': 'beb', 'duration_ms': 5}", "test.json: line 1, column"},
	{"{'n': 4, 'f': 2, 'protocol': 'beb', 'duration_ms': 5}",
	 "$.f: expected an integer with 3f+1 <= n (0 to 1 for n = 4), got 2"},
	{"{'n': 4, 'f': -1, 'protocol': 'beb', 'duration_ms': 5}", "$.f: expected an integer with 3f+1 <= n"},
	{"{'n': 4, 'f': 6148914691236517206, 'protocol': 'beb', 'duration_ms': 5}", "$.f: expected an integer"},
	{"{'n': 4, 'f': 1.0, 'protocol': 'beb', 'duration_ms': 5}", "$.f: expected an integer"},
	{"{'n': 4, 'duration_ms': 5}", "$: missing required key 'protocol'"},
	{"{'n': 4, 'protocol': 5, 'duration_ms': 5}", "$.protocol: expected a string, got 5"},
	{"{'n': 4, 'protocol': '', 'duration_ms': 5}", "$.protocol: expected a string of 1 to 128 bytes"},
	{"{'n': 4, 'protocol': 'beb'}", "$: missing required key 'duration_ms'"},
	{BASE "'name': 'a/b'}", "$.name: expected a name without '/'"},
	{BASE "'name': 'a\\u0001b'}", "$.name: expected a name without '/' or control characters, got 'a?b'"},
	{BASE "'name': ['x']}", "$.name: expected a string, got an array"},
	{BASE "'params': []}", "$.params: expected an object, got an array"},
	{BASE "'params': 'x'}", "$.params: expected an object"},
	{BASE "'duration_ms': 5}", "line 1, column"}, /* duplicate key */
	/* duration */
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': 0}", "$.duration_ms: expected a number of milliseconds > 0"},
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': 0.0001}", "$.duration_ms: expected a number of milliseconds > 0"},
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': -1}", "$.duration_ms: expected a non-negative number, got -1"},
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': -0.5}", "$.duration_ms: expected a non-negative number, got -0.5"},
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': 1e13}", "$.duration_ms: expected a number <= 1e+12"},
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': 1e308}", "$.duration_ms: expected a number <= 1e+12"},
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': '5s'}", "$.duration_ms: expected a non-negative number, got '5s'"},
	{"{'n': 4, 'protocol': 'beb', 'duration_ms': true}", "$.duration_ms: expected a non-negative number, got true"},
	/* network */
	{BASE "'network': 5}", "$.network: expected an object, got 5"},
	{BASE "'network': {'latncy': {}}}", "$.network: unknown key 'latncy'"},
	{BASE "'network': {'latency': {'ms': 5}}}", "$.network.latency: missing required key 'dist'"},
	{BASE "'network': {'latency': {'dist': 'gauss'}}}", "$.network.latency.dist: unknown latency distribution 'gauss'"},
	{BASE "'network': {'latency': {'dist': 7}}}", "$.network.latency.dist: expected a latency distribution name"},
	{BASE "'network': {'latency': {'dist': 'constant'}}}", "$.network.latency: missing required key 'ms'"},
	{BASE "'network': {'latency': {'dist': 'constant', 'ms': 5, 'mean_ms': 3}}}",
	 "$.network.latency: unknown key 'mean_ms' for a constant latency"},
	{BASE "'network': {'latency': {'dist': 'normal', 'mean_ms': -3, 'stddev_ms': 1}}}",
	 "$.network.latency.mean_ms: expected a non-negative number, got -3"},
	{BASE "'network': {'latency': {'dist': 'normal', 'mean_ms': 3}}}",
	 "$.network.latency: missing required key 'stddev_ms'"},
	{BASE "'network': {'latency': {'dist': 'normal', 'mean_ms': 3, 'stddev_ms': 1, 'min_ms': 20}}}",
	 "$.network.latency.min_ms: expected a number <= the default max_ms"},
	{BASE "'network': {'latency': {'dist': 'normal', 'mean_ms': 3, 'stddev_ms': 1, 'min_ms': 2, 'max_ms': 1}}}",
	 "$.network.latency.max_ms: expected a number >= min_ms (2), got 1"},
	{BASE "'network': {'latency': {'dist': 'uniform', 'min_ms': 10, 'max_ms': 9.5}}}",
	 "$.network.latency.max_ms: expected a number >= min_ms (10), got 9.5"},
	{BASE "'network': {'latency': {'dist': 'uniform', 'min_ms': 10}}}",
	 "$.network.latency: missing required key 'max_ms'"},
	{BASE "'network': {'latency': 50}}", "$.network.latency: expected an object, got 50"},
	{BASE "'network': {'bandwidth_mbps': -1}}", "$.network.bandwidth_mbps: expected a non-negative number"},
	{BASE "'network': {'bandwidth_mbps': 1e10}}", "$.network.bandwidth_mbps: expected a number <= 1e+09"},
	{BASE "'network': {'bandwidth_mbps': 1e-9}}", "$.network.bandwidth_mbps: expected at least 0.000001"},
	{BASE "'network': {'bandwidth_mbps': 'fast'}}", "$.network.bandwidth_mbps: expected a non-negative number"},
	{BASE "'network': {'loss': 1.5}}", "$.network.loss: expected a probability in [0, 1], got 1.5"},
	{BASE "'network': {'loss': true}}", "$.network.loss: expected a probability in [0, 1], got true"},
	{BASE "'network': {'duplicate': -0.1}}", "$.network.duplicate: expected a probability in [0, 1], got -0.1"},
	{BASE "'network': {'reorder': 0.1}}", "$.network.reorder: expected an object, got 0.1"},
	{BASE "'network': {'reorder': {'probability': 0.1}}}", "$.network.reorder: missing required key 'max_ms'"},
	{BASE "'network': {'reorder': {'max_ms': 1}}}", "$.network.reorder: missing required key 'probability'"},
	{BASE "'network': {'reorder': {'probability': 2, 'max_ms': 1}}}", "$.network.reorder.probability: expected a probability"},
	{BASE "'network': {'reorder': {'probability': 0.5, 'max_ms': -1}}}", "$.network.reorder.max_ms: expected a non-negative number"},
	{BASE "'network': {'reorder': {'probability': 0.5, 'max_ms': 1, 'min_ms': 0}}}", "$.network.reorder: unknown key 'min_ms'"},
	{BASE "'network': {'topology': 'ring'}}", "$.network.topology: unknown topology 'ring'"},
	{BASE "'network': {'topology': 5}}", "$.network.topology: expected \"complete\" or {\"directed\": [...]}, got 5"},
	{BASE "'network': {'topology': {}}}", "$.network.topology: missing required key 'directed'"},
	{BASE "'network': {'topology': {'directed': [[1], [2], [3], [0]], 'x': 1}}}", "$.network.topology: unknown key 'x'"},
	{BASE "'network': {'topology': {'directed': [[1], [2], [3]]}}}",
	 "$.network.topology.directed: expected an array of n = 4 lists of node indices, got 3 lists"},
	{BASE "'network': {'topology': {'directed': {}}}}", "$.network.topology.directed: expected an array of n = 4"},
	{BASE "'network': {'topology': {'directed': [[1], [1], [3], [0]]}}}",
	 "$.network.topology.directed[1]: node 1 cannot list itself"},
	{BASE "'network': {'topology': {'directed': [[1, 4], [2], [3], [0]]}}}",
	 "$.network.topology.directed[0][1]: expected a node index in [0, 3] (n = 4), got 4"},
	{BASE "'network': {'topology': {'directed': [[1, 1], [2], [3], [0]]}}}",
	 "$.network.topology.directed[0][1]: node 1 is listed twice"},
	{BASE "'network': {'topology': {'directed': [[1], [2], 3, [0]]}}}",
	 "$.network.topology.directed[2]: expected an array of node indices, got 3"},
	/* faults */
	{BASE "'faults': {}}", "$.faults: expected an array of faults, got an object"},
	{BASE "'faults': [5]}", "$.faults[0]: expected an object, got 5"},
	{BASE "'faults': [{'nodes': [1]}]}", "$.faults[0]: missing required key 'kind'"},
	{BASE "'faults': [{'kind': 5, 'nodes': [1]}]}", "$.faults[0].kind: expected a fault name"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1]}, {'kind': 'twins', 'nodes': [2]}, {'kind': 'crsh'}]}",
	 "$.faults[2].kind: unknown fault 'crsh' (expected one of crash, crash_recover, omission, delay, partition, "
	 "corrupt, equivocate, twins, adversary, loss, cut, skew)"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'until_ms': 5}]}",
	 "$.faults[0].until_ms: a crash fault never ends"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'peers': [2]}]}",
	 "$.faults[0]: unknown key 'peers' for a crash fault"},
	{BASE "'faults': [{'kind': 'crash_recover', 'nodes': [1], 'at_ms': 5}]}",
	 "$.faults[0]: missing required key 'until_ms'"},
	{BASE "'faults': [{'kind': 'crash_recover', 'nodes': [1], 'at_ms': 5, 'until_ms': 5}]}",
	 "$.faults[0].until_ms: expected a time later than at_ms"},
	{BASE "'faults': [{'kind': 'twins', 'nodes': [1], 'at_ms': 5, 'until_ms': 1}]}",
	 "$.faults[0].until_ms: expected a time later than at_ms"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'at_ms': -5}]}",
	 "$.faults[0].at_ms: expected a non-negative number, got -5"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'at_ms': 1e13}]}", "$.faults[0].at_ms: expected a number <= 1e+12"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'at_ms': 'soon'}]}", "$.faults[0].at_ms: expected a non-negative number"},
	{BASE "'faults': [{'kind': 'crash'}]}", "$.faults[0]: missing required key 'nodes'"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': []}]}",
	 "$.faults[0].nodes: expected a non-empty array of node indices, got an empty array"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': 'all'}]}", "$.faults[0].nodes: expected a non-empty array of node indices, got 'all'"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': 3}]}", "$.faults[0].nodes: expected a non-empty array of node indices, got 3"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [4]}]}",
	 "$.faults[0].nodes[0]: expected a node index in [0, 3] (n = 4), got 4"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [-1]}]}", "$.faults[0].nodes[0]: expected a node index"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1.5]}]}", "$.faults[0].nodes[0]: expected a node index in [0, 3] (n = 4), got 1.5"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [9223372036854775807]}]}", "$.faults[0].nodes[0]: expected a node index"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [0, 2, 0]}]}", "$.faults[0].nodes[2]: node 0 is listed twice"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [0, 1, 2, 3, 3, 3, 3, 3]}]}", "$.faults[0].nodes[4]: node 3 is listed twice"},
	{BASE "'faults': [{'kind': 'partition', 'groups': [[0]], 'nodes': [1]}]}",
	 "$.faults[0]: unknown key 'nodes' for a partition fault"},
	{BASE "'faults': [{'kind': 'partition'}]}", "$.faults[0]: missing required key 'groups'"},
	{BASE "'faults': [{'kind': 'partition', 'groups': []}]}", "$.faults[0].groups: expected a non-empty array of groups"},
	{BASE "'faults': [{'kind': 'partition', 'groups': [[]]}]}",
	 "$.faults[0].groups[0]: expected a non-empty array of node indices"},
	{BASE "'faults': [{'kind': 'partition', 'groups': [[0, 1], [1, 2]]}]}",
	 "$.faults[0].groups[1][0]: node 1 is already in another group"},
	{BASE "'faults': [{'kind': 'partition', 'groups': [[0], [9]]}]}", "$.faults[0].groups[1][0]: expected a node index"},
	{BASE "'faults': [{'kind': 'partition', 'groups': [[0], [1], [2], [3], [0]]}]}",
	 "$.faults[0].groups: expected at most n = 4 disjoint groups, got 5"},
	{BASE "'faults': [{'kind': 'partition', 'groups': [0, 1]}]}", "$.faults[0].groups[0]: expected a non-empty array"},
	{BASE "'faults': [{'kind': 'omission', 'nodes': [1], 'direction': 'up'}]}",
	 "$.faults[0].direction: unknown direction 'up' (expected one of send, receive, both)"},
	{BASE "'faults': [{'kind': 'omission', 'nodes': [1], 'peers': []}]}", "$.faults[0].peers: expected a non-empty array"},
	{BASE "'faults': [{'kind': 'omission', 'nodes': [1], 'peers': [5]}]}", "$.faults[0].peers[0]: expected a node index"},
	{BASE "'faults': [{'kind': 'omission', 'nodes': [1], 'ms': 5}]}", "$.faults[0]: unknown key 'ms' for an omission fault"},
	{BASE "'faults': [{'kind': 'delay', 'nodes': [1]}]}", "$.faults[0]: missing required key 'ms'"},
	{BASE "'faults': [{'kind': 'delay', 'nodes': [1], 'ms': -1}]}", "$.faults[0].ms: expected a non-negative number, got -1"},
	{BASE "'faults': [{'kind': 'corrupt', 'nodes': [1], 'probability': 2}]}", "$.faults[0].probability: expected a probability"},
	{BASE "'faults': [{'kind': 'corrupt', 'nodes': [1], 'mode': 'flip'}]}",
	 "$.faults[0].mode: unknown corruption mode 'flip' (expected one of bitflip, truncate)"},
	{BASE "'faults': [{'kind': 'equivocate', 'nodes': [0]}]}", "$.faults[0]: missing required key 'audience'"},
	{BASE "'faults': [{'kind': 'equivocate', 'nodes': [0], 'audience': [1, 0]}]}",
	 "$.faults[0].audience: node 0 equivocates itself"},
	{BASE "'faults': [{'kind': 'equivocate', 'nodes': [0], 'audience': [7]}]}", "$.faults[0].audience[0]: expected a node index"},
	{BASE "'faults': [{'kind': 'equivocate', 'nodes': [0], 'audience': []}]}", "$.faults[0].audience: expected a non-empty array"},
	{BASE "'faults': [{'kind': 'equivocate', 'nodes': [0], 'peers': [1]}]}",
	 "$.faults[0]: unknown key 'peers' for an equivocate fault"},
	{BASE "'faults': [{'kind': 'adversary', 'nodes': [0]}]}", "$.faults[0]: missing required key 'strategy'"},
	{BASE "'faults': [{'kind': 'adversary', 'nodes': [2], 'strategy': 's'}, "
	      "{'kind': 'adversary', 'nodes': [1, 2], 'strategy': 't'}]}",
	 "$.faults[1].nodes[1]: node 2 runs the adversary strategy of $.faults[0] already (one strategy per node)"},
	{BASE "'faults': [{'kind': 'adversary', 'nodes': [0], 'strategy': 5}]}", "$.faults[0].strategy: expected a string, got 5"},
	{BASE "'faults': [{'kind': 'adversary', 'nodes': [0], 'strategy': ''}]}", "$.faults[0].strategy: expected a string of 1 to"},
	{BASE "'faults': [{'kind': 'adversary', 'nodes': [0], 'strategy': 's', 'params': 'x'}]}",
	 "$.faults[0].params: expected an object, got 'x'"},
	{BASE "'faults': [{'kind': 'twins', 'nodes': [0], 'strategy': 's'}]}", "$.faults[0]: unknown key 'strategy' for a twins fault"},
	/* per-link faults */
	{BASE "'faults': [{'kind': 'delay', 'nodes': [0], 'peers': [4], 'ms': 1}]}", "$.faults[0].peers[0]: expected a node index"},
	{BASE "'faults': [{'kind': 'delay', 'nodes': [0], 'ms': 1, 'jitter_ms': -1}]}",
	 "$.faults[0].jitter_ms: expected a non-negative number, got -1"},
	{BASE "'faults': [{'kind': 'delay', 'nodes': [0], 'ms': 1, 'direction': 'send'}]}",
	 "$.faults[0]: unknown key 'direction' for a delay fault"},
	{BASE "'faults': [{'kind': 'loss', 'nodes': [0]}]}", "$.faults[0]: missing required key 'probability'"},
	{BASE "'faults': [{'kind': 'loss', 'nodes': [0], 'probability': 1.5}]}",
	 "$.faults[0].probability: expected a probability in [0, 1], got 1.5"},
	{BASE "'faults': [{'kind': 'loss', 'nodes': [0], 'probability': 0.5, 'direction': 'in'}]}",
	 "$.faults[0].direction: unknown direction 'in' (expected one of send, receive, both)"},
	{BASE "'faults': [{'kind': 'cut', 'to': [1]}]}", "$.faults[0]: missing required key 'from'"},
	{BASE "'faults': [{'kind': 'cut', 'from': [1]}]}", "$.faults[0]: missing required key 'to'"},
	{BASE "'faults': [{'kind': 'cut', 'from': [], 'to': [1]}]}",
	 "$.faults[0].from: expected a non-empty array of node indices, got an empty array"},
	{BASE "'faults': [{'kind': 'cut', 'from': [0], 'to': []}]}",
	 "$.faults[0].to: expected a non-empty array of node indices, got an empty array"},
	{BASE "'faults': [{'kind': 'cut', 'from': [0, 1], 'to': [2, 1]}]}",
	 "$.faults[0].to: node 1 is in both from and to"},
	{BASE "'faults': [{'kind': 'cut', 'from': [0], 'to': [1], 'nodes': [2]}]}",
	 "$.faults[0]: unknown key 'nodes' for a cut fault"},
	/* clock skew */
	{BASE "'faults': [{'kind': 'skew', 'nodes': [0]}]}", "$.faults[0]: missing required key 'rate' (or offset_ms"},
	{BASE "'faults': [{'kind': 'skew', 'nodes': [0], 'rate': 0}]}",
	 "$.faults[0].rate: expected a clock rate in [0.001, 1000] (1: true time, 1.5: 50% fast), got 0"},
	{BASE "'faults': [{'kind': 'skew', 'nodes': [0], 'rate': -2}]}", "$.faults[0].rate: expected a clock rate"},
	{BASE "'faults': [{'kind': 'skew', 'nodes': [0], 'rate': 1e9}]}", "$.faults[0].rate: expected a clock rate"},
	{BASE "'faults': [{'kind': 'skew', 'nodes': [0], 'rate': '2x'}]}", "$.faults[0].rate: expected a clock rate"},
	{BASE "'faults': [{'kind': 'skew', 'nodes': [0], 'offset_ms': -5}]}",
	 "$.faults[0].offset_ms: expected a non-negative number, got -5"},
	/* store loss */
	{BASE "'faults': [{'kind': 'crash', 'nodes': [0], 'lose': 'store'}]}",
	 "$.faults[0].lose: a crash fault never restarts, so it loses nothing"},
	{BASE "'faults': [{'kind': 'crash_recover', 'nodes': [0], 'until_ms': 5, 'lose': 'disk'}]}",
	 "$.faults[0].lose: unknown store loss 'disk' (expected one of none, store, last_step)"},
	{BASE "'faults': [{'kind': 'omission', 'nodes': [0], 'lose': 'store'}]}",
	 "$.faults[0]: unknown key 'lose' for an omission fault"},
	/* windows and triggers */
	{BASE "'faults': [{'kind': 'delay', 'nodes': [0], 'ms': 1, 'until_ms': 5, 'for_ms': 5}]}",
	 "$.faults[0].for_ms: until_ms and for_ms are alternatives"},
	{BASE "'faults': [{'kind': 'delay', 'nodes': [0], 'ms': 1, 'for_ms': 0}]}",
	 "$.faults[0].for_ms: expected a number of milliseconds > 0"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [0], 'for_ms': 5}]}", "$.faults[0].for_ms: a crash fault never ends"},
	{BASE "'faults': [{'kind': 'crash_recover', 'nodes': [1], 'after': {'node': 0, 'deliveries': 3}}]}",
	 "$.faults[0]: missing required key 'for_ms' (how long the node is down)"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'at_ms': 5, 'after': {'node': 0, 'deliveries': 3}}]}",
	 "$.faults[0].after: at_ms and after are alternatives"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'delay_ms': 5}]}",
	 "$.faults[0].delay_ms: counts from a trigger: give after"},
	{BASE "'faults': [{'kind': 'delay', 'nodes': [1], 'ms': 1, 'until_ms': 9, 'after': {'node': 0, 'deliveries': 3}}]}",
	 "$.faults[0].until_ms: is a fixed time: a fault that starts after a trigger lasts for_ms"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0, 'deliveries': 3, 'round': 2}}]}",
	 "$.faults[0].after: unknown key 'round' for a trigger (expected one of node, log, event, contains, deliveries)"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 4, 'deliveries': 3}}]}",
	 "$.faults[0].after.node: expected a node index in [0, 3] (n = 4), got 4"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'deliveries': 3}}]}",
	 "$.faults[0].after: missing required key 'node'"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0}}]}",
	 "$.faults[0].after: missing what the trigger waits for: one of log, event or deliveries"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0, 'log': 'x', 'deliveries': 3}}]}",
	 "$.faults[0].after: log, event and deliveries are alternatives"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0, 'log': 'x', 'contains': 'y'}}]}",
	 "$.faults[0].after.contains: narrows an event trigger: give event too"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0, 'log': ''}}]}",
	 "$.faults[0].after.log: expected a string of 1 to 128 bytes, got 0 bytes"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0, 'event': 'a\\u0001b'}}]}",
	 "$.faults[0].after.event: expected a string without control characters"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0, 'event': 'e', 'contains': 7}}]}",
	 "$.faults[0].after.contains: expected a string, got 7"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': {'node': 0, 'deliveries': 0}}]}",
	 "$.faults[0].after.deliveries: expected an integer >= 1, got 0"},
	{BASE "'faults': [{'kind': 'crash', 'nodes': [1], 'after': 'commit'}]}", "$.faults[0].after: expected an object"},
	{BASE "'faults': [{'kind': 'twins', 'nodes': [1], 'after': {'node': 0, 'deliveries': 1}}]}",
	 "$.faults[0].after: a twins fault runs for the whole run and cannot wait for a trigger"},
	{BASE "'faults': [{'kind': 'adversary', 'nodes': [1], 'strategy': 's', 'delay_ms': 1}]}",
	 "$.faults[0].delay_ms: an adversary fault runs for the whole run"},
	/* workload */
	{BASE "'workload': {}}", "$.workload: expected an array of workload lines, got an object"},
	{BASE "'workload': [1]}", "$.workload[0]: expected an object, got 1"},
	{BASE "'workload': [{'size': 1}]}", "$.workload[0]: missing required key 'nodes'"},
	{BASE "'workload': [{'nodes': 'all'}]}", "$.workload[0]: missing required key 'size'"},
	{BASE "'workload': [{'nodes': 'all', 'count': 0, 'size': 1}]}", "$.workload[0].count: expected an integer >= 1, got 0"},
	{BASE "'workload': [{'nodes': 'all', 'count': 4294967296, 'size': 1}]}",
	 "$.workload[0].count: expected an integer <= 4294967295, got 4294967296"},
	{BASE "'workload': [{'nodes': 'all', 'count': 2, 'size': 1}]}", "$.workload[0]: missing required key 'every_ms'"},
	{BASE "'workload': [{'nodes': 'all', 'count': 2, 'every_ms': 0, 'size': 1}]}",
	 "$.workload[0].every_ms: expected a number of milliseconds > 0"},
	{BASE "'workload': [{'nodes': 'all', 'count': 4294967295, 'every_ms': 1e12, 'size': 1}]}",
	 "$.workload[0]: start_ms + every_ms * (count - 1) is beyond the end of time"},
	{BASE "'workload': [{'nodes': 'all', 'size': 67108865}]}", "$.workload[0].size: expected an integer <= 67108864, got 67108865"},
	{BASE "'workload': [{'nodes': 'all', 'size': -1}]}", "$.workload[0].size: expected a non-negative integer, got -1"},
	{BASE "'workload': [{'nodes': 'some', 'size': 1}]}",
	 "$.workload[0].nodes: expected a non-empty array of node indices or \"all\", got 'some'"},
	{BASE "'workload': [{'nodes': [], 'size': 1}]}", "$.workload[0].nodes: expected a non-empty array"},
	{BASE "'workload': [{'nodes': [5], 'size': 1}]}", "$.workload[0].nodes[0]: expected a node index"},
	{BASE "'workload': [{'nodes': 'all', 'size': 1, 'every': 5}]}", "$.workload[0]: unknown key 'every' for a workload line"},
	{BASE "'workload': [{'nodes': 'all', 'start_ms': -1, 'size': 1}]}", "$.workload[0].start_ms: expected a non-negative number"},
	{BASE "'workload': [{'node': 4, 'size': 1}]}", "$.workload[0].node: expected a node index in [0, 3] (n = 4), got 4"},
	{BASE "'workload': [{'node': 'all', 'size': 1}]}", "$.workload[0].node: expected a node index"},
	{BASE "'workload': [{'node': 1, 'size': 1, 'count': 2}]}", "$.workload[0]: unknown key 'count' for a single request"},
	{BASE "'workload': [{'node': 1, 'nodes': [1], 'size': 1}]}", "$.workload[0]: unknown key 'nodes' for a single request"},
	{BASE "'workload': [{'node': 1, 'at_ms': -2, 'size': 1}]}", "$.workload[0].at_ms: expected a non-negative number"},
	{BASE "'workload': [{'node': 1}]}", "$.workload[0]: missing required key 'size'"},
	/* seeds */
	{BASE "'seeds': []}", "$.seeds: expected a non-empty array of seeds or {\"from\": A, \"to\": B}, got an empty array"},
	{BASE "'seeds': 'all'}", "$.seeds: expected a non-empty array of seeds"},
	{BASE "'seeds': 5}", "$.seeds: expected a non-empty array of seeds"},
	{BASE "'seeds': [3, 1, 3]}", "$.seeds: seed 3 is listed twice"},
	{BASE "'seeds': [-1]}", "$.seeds[0]: expected a non-negative integer, got -1"},
	{BASE "'seeds': [1, 1.5]}", "$.seeds[1]: expected a non-negative integer, got 1.5"},
	{BASE "'seeds': {'from': 5, 'to': 4}}", "$.seeds.to: expected an integer >= 5, got 4"},
	{BASE "'seeds': {'from': 1, 'to': 1000001}}", "$.seeds: the range holds 1000001 seeds, at most 1000000"},
	{BASE "'seeds': {'from': 0, 'to': 9223372036854775807}}", "$.seeds: the range holds 9223372036854775808 seeds"},
	{BASE "'seeds': {'from': 1}}", "$.seeds: missing required key 'to'"},
	{BASE "'seeds': {'to': 1}}", "$.seeds: missing required key 'from'"},
	{BASE "'seeds': {'from': -1, 'to': 1}}", "$.seeds.from: expected a non-negative integer, got -1"},
	{BASE "'seeds': {'from': 1, 'to': 2, 'step': 1}}", "$.seeds: unknown key 'step' for a seed range"},
	/* checkers and the rest */
	{BASE "'checkers': ['validty']}",
	 "$.checkers[0]: unknown checker 'validty' (expected one of validity, agreement, integrity, totality, prefix, "
	 "no_duplicates, inclusion, inclusion_fraction, catch_up, state_hash, store_integrity, store_availability)"},
	{BASE "'store': {'readers': 'all'}}", "$.store: missing required key 'get_ms' (when the readers fetch)"},
	{BASE "'store': {'get_ms': 10}}", "$.store: missing required key 'readers' (\"all\" or an array of node indices)"},
	{BASE "'store': {'get_ms': 10, 'readers': [9]}}", "$.store.readers[0]: expected a node index in [0, 3] (n = 4), got 9"},
	{BASE "'store': {'get_ms': 10, 'readers': 'all', 'size': 4194304}}", "$.store.size: expected an integer <= 3145728, got 4194304"},
	{BASE "'store': {'get_ms': 10, 'readers': 'all', 'chunks': 0}}", "$.store.chunks: expected an integer >= 1, got 0"},
	{BASE "'store': {'get_ms': 10, 'readers': 'all', 'k': 9}}", "$.store.k: expected an integer <= 4, got 9"},
	{BASE "'store': {'get_ms': 10, 'readers': 'all', 'sizes': 1}}", "$.store: unknown key 'sizes' for a storage workload (expected one of node, chunks, size, k, start_ms, "
	 "every_ms, get_ms, readers)"},
	{BASE "'store': [1]}", "$.store: expected an object, got an array"},
	{BASE "'checkers': 'validity'}", "$.checkers: expected an array of checker names, got 'validity'"},
	{BASE "'checkers': ['validity', 'prefix', 'validity']}", "$.checkers[2]: checker 'validity' is listed twice"},
	{BASE "'checkers': [1]}", "$.checkers[0]: expected a checker name"},
	{BASE "'expect_violation': 'yes'}", "$.expect_violation: expected true or false, got 'yes'"},
	{BASE "'expect_violation': 1}", "$.expect_violation: expected true or false, got 1"},
	{BASE "'kv': 'rocksdb'}", "$.kv: unknown kv store 'rocksdb' (expected one of lmdb, memory)"},
	{BASE "'kv': null}", "$.kv: expected a kv store name"},
	{BASE "'signatures': 'rsa'}", "$.signatures: unknown signature scheme 'rsa' (expected one of ed25519, fast)"},
	/* bounds */
	{BASE "'bounds': []}", "$.bounds: expected an object, got an array"},
	{BASE "'bounds': {'catch_upms': 5}}",
	 "$.bounds: unknown key 'catch_upms' (expected one of inclusion_min, settle_ms, catch_up_ms)"},
	{BASE "'bounds': {'inclusion_min': 1.5}}", "$.bounds.inclusion_min: expected a probability in [0, 1], got 1.5"},
	{BASE "'bounds': {'inclusion_min': -0.1}}", "$.bounds.inclusion_min: expected a probability in [0, 1], got -0.1"},
	{BASE "'bounds': {'settle_ms': -1}}", "$.bounds.settle_ms: expected a non-negative number, got -1"},
	{BASE "'bounds': {'catch_up_ms': -3000}}", "$.bounds.catch_up_ms: expected a non-negative number, got -3000"},
	{BASE "'bounds': {'catch_up_ms': '3 s'}}", "$.bounds.catch_up_ms: expected a non-negative number, got '3 s'"},
	{BASE "'checkers': ['catch_up']}",
	 "$.bounds: missing required key 'catch_up_ms' (the catch_up checker needs it: how long nodes have after the "
	 "last fault window)"},
	{BASE "'checkers': ['catch_up'], 'bounds': {'inclusion_min': 0.5}}", "$.bounds: missing required key 'catch_up_ms'"},
	/* syntax */
	{"", "test.json: line 1, column"},
	{"{", "test.json: line 1, column"},
	{"{'n': 4,}", "test.json: line 1, column"},
	{"{'n': 4,\n 'protocol': 'beb',\n 'n': 5}", "test.json: line 3, column"},
	{"{'n': NaN}", "test.json: line 1, column"},
	{"{'n': Infinity}", "test.json: line 1, column"},
	{"{'n': -Infinity}", "test.json: line 1, column"},
	{"{'n': 4} {'n': 5}", "test.json: line 1, column"},
	{"'just a string'", "test.json: line 1, column"},
	{"{'protocol': 'a\\u0000b'}", "test.json: line 1, column"},
	{"{'a\\u0000b': 1}", "test.json: line 1, column"},
	{"{'n': 4, 'protocol': '\\ud800', 'duration_ms': 5}", "test.json: line 1, column"},
};

static void test_hostile(void)
{
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct sim_scenario sc;
		memset(err, 0, sizeof(err));
		memset(&sc, 0x5a, sizeof(sc));
		int rc = parse_q(&sc, hostile[i].json);
		/* Needles are taken literally (their quotes are real). */
		const char *needle = hostile[i].needle;
		bool pass = rc == WEFT_EINVAL && strstr(err, needle) && strncmp(err, "test.json: ", 11) == 0 &&
			    is_zeroed(&sc);
		if (!ok(pass, "rejects #%zu: %s", i, hostile[i].needle))
			diag("rc %d, err: %s", rc, err);
		sim_scenario_free(&sc);
	}
}

/* A few that are easier to build in code. */
static void test_hostile_built(void)
{
	struct sim_scenario sc;
	int rc;

	/* The exact example message of the brief, with the file name. */
	char *t = dq(BASE "'faults': [{'kind': 'crash', 'nodes': [1]}, {'kind': 'twins', 'nodes': [2]}, {'kind': 'crsh'}]}");
	rc = sim_scenario_parse(&sc, t, "s.json", err, sizeof(err));
	free(t);
	is_str(err,
	       "s.json: $.faults[2].kind: unknown fault 'crsh' (expected one of crash, crash_recover, omission, delay, "
	       "partition, corrupt, equivocate, twins, adversary, loss, cut, skew)",
	       "the unknown-fault message, whole");
	is_int(rc, WEFT_EINVAL, "... with WEFT_EINVAL");

	/* Deeply nested junk: 100000 '[' never overflows the stack. */
	size_t depth = 100000;
	char *deep = malloc(depth * 2 + 64);
	if (!deep)
		abort();
	strcpy(deep, "{\"params\": ");
	size_t o = strlen(deep);
	for (size_t i = 0; i < depth; i++)
		deep[o++] = '[';
	deep[o] = '\0';
	rc = sim_scenario_parse(&sc, deep, "deep.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "deep.json: line 1, column"), "100000 nested arrays: syntax error");
	diag("%s", err);
	/* ... and closed, inside an unknown key and inside params. */
	for (size_t i = 0; i < depth; i++)
		deep[o++] = ']';
	deep[o++] = '}';
	deep[o] = '\0';
	rc = sim_scenario_parse(&sc, deep, "deep.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "deep.json: line 1, column"), "100000 balanced nested arrays: rejected");
	free(deep);

	/* params nested 40 objects deep: jansson accepts, msgpack refuses. */
	char buf[4096];
	strcpy(buf, "{\"n\": 4, \"protocol\": \"p\", \"duration_ms\": 1, \"params\": ");
	for (int i = 0; i < 40; i++)
		strcat(buf, "{\"a\": ");
	strcat(buf, "1");
	for (int i = 0; i < 40; i++)
		strcat(buf, "}");
	strcat(buf, "}");
	rc = sim_scenario_parse(&sc, buf, "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "t.json: $.params: cannot be converted to msgpack"),
	   "params nested 40 deep: rejected at $.params");
	diag("%s", err);
	/* ... and 20 deep is fine. */
	strcpy(buf, "{\"n\": 4, \"protocol\": \"p\", \"duration_ms\": 1, \"params\": ");
	for (int i = 0; i < 20; i++)
		strcat(buf, "{\"a\": ");
	strcat(buf, "[]");
	for (int i = 0; i < 20; i++)
		strcat(buf, "}");
	strcat(buf, "}");
	rc = sim_scenario_parse(&sc, buf, "t.json", err, sizeof(err));
	ok(rc == 0 && sc.params != NULL, "params nested 20 deep: accepted");
	sim_scenario_free(&sc);
	/* adversary params too deep, deep inside the faults list */
	strcpy(buf, "{\"n\": 4, \"protocol\": \"p\", \"duration_ms\": 1, \"faults\": [{\"kind\": \"adversary\", "
		    "\"nodes\": [1], \"strategy\": \"s\", \"params\": ");
	for (int i = 0; i < 40; i++)
		strcat(buf, "{\"a\": ");
	strcat(buf, "1");
	for (int i = 0; i < 40; i++)
		strcat(buf, "}");
	strcat(buf, "}]}");
	rc = sim_scenario_parse(&sc, buf, "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "$.faults[0].params: cannot be converted"), "adversary params too deep");

	/* A huge nodes array for n = 4: rejected without a huge allocation. */
	size_t cap = 5000 * 3 + 256;
	char *big = malloc(cap);
	if (!big)
		abort();
	strcpy(big, "{\"n\": 4, \"protocol\": \"p\", \"duration_ms\": 1, \"faults\": [{\"kind\": \"crash\", \"nodes\": [");
	o = strlen(big);
	for (int i = 0; i < 5000; i++)
		o += (size_t)sprintf(big + o, "%s%d", i ? "," : "", i % 4);
	strcpy(big + o, "]}]}");
	rc = sim_scenario_parse(&sc, big, "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "$.faults[0].nodes[4]: node 0 is listed twice"), "5000 node indices for n = 4");
	free(big);

	/* More than 1,000,000 seeds in an array. */
	size_t nseeds = 1000001;
	big = malloc(nseeds * 9 + 256);
	if (!big)
		abort();
	strcpy(big, "{\"n\": 4, \"protocol\": \"p\", \"duration_ms\": 1, \"seeds\": [");
	o = strlen(big);
	for (size_t i = 0; i < nseeds; i++)
		o += (size_t)sprintf(big + o, "%s%zu", i ? "," : "", i);
	strcpy(big + o, "]}");
	rc = sim_scenario_parse(&sc, big, "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "$.seeds: expected at most 1000000 seeds, got 1000001"),
	   "1000001 seeds rejected");
	/* exactly 1,000,000 are accepted */
	o = strlen(big);
	strcpy(big + o - 10, "]}"); /* drop ",1000000]}" */
	rc = sim_scenario_parse(&sc, big, "t.json", err, sizeof(err));
	ok(rc == 0 && sc.nseeds == 1000000 && sc.seeds[999999] == 999999, "1000000 seeds accepted");
	if (rc)
		diag("%s", err);
	sim_scenario_free(&sc);
	free(big);

	/* n > SIM_MAX_NODES with huge faults referencing it never allocates n. */
	rc = parse_q(&sc, "{'n': 4294967295, 'protocol': 'p', 'duration_ms': 1}");
	ok(rc == WEFT_EINVAL && strstr(err, "$.n: expected an integer <= 4096"), "n = 2^32-1 rejected");

	/* A long unknown key is cut in the message, which stays in bounds. */
	char key[2000];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	snprintf(buf, sizeof(buf), "{\"%s\": 1}", key);
	rc = sim_scenario_parse(&sc, buf, "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "$: unknown key 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...'"),
	   "long unknown key shown cut");
	/* A UTF-8 key is cut at a character boundary. */
	buf[0] = '\0';
	strcat(buf, "{\"");
	for (int i = 0; i < 30; i++)
		strcat(buf, "\xc3\xa9"); /* é */
	strcat(buf, "\": 1}");
	rc = sim_scenario_parse(&sc, buf, "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "\xc3\xa9...'"), "unknown UTF-8 key cut between characters");
	/* Control characters in a key are shown as '?'. */
	rc = sim_scenario_parse(&sc, "{\"a\\nb\\u001b\": 1}", "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "unknown key 'a?b?'"), "control characters in a key shown as '?'");

	/* Tiny and missing error buffers. */
	char tiny[12];
	rc = sim_scenario_parse(&sc, "{\"n\": 0}", "a-long-name.json", tiny, sizeof(tiny));
	ok(rc == WEFT_EINVAL && strlen(tiny) == sizeof(tiny) - 1, "a short err buffer is filled and terminated");
	rc = sim_scenario_parse(&sc, "{\"n\": 0}", "t.json", NULL, 0);
	is_int(rc, WEFT_EINVAL, "no err buffer: still WEFT_EINVAL");
	rc = sim_scenario_parse(&sc, NULL, "t.json", err, sizeof(err));
	ok(rc == WEFT_EINVAL && strstr(err, "t.json: $: no scenario text"), "NULL text");
	rc = sim_scenario_parse(&sc, "{\"n\": 0}", NULL, err, sizeof(err));
	ok(rc == WEFT_EINVAL && strncmp(err, "scenario: $.n:", 14) == 0, "NULL name: messages say 'scenario'");
}

static void test_faulty(void)
{
	struct sim_scenario sc;
	bool faulty[7];
	int rc;

	rc = parse_q(&sc, "{'n': 7, 'protocol': 'p', 'duration_ms': 1, 'faults': ["
			  "{'kind': 'crash_recover', 'nodes': [0, 1], 'until_ms': 5},"
			  "{'kind': 'delay', 'nodes': [2], 'ms': 5},"
			  "{'kind': 'partition', 'groups': [[0, 1, 2], [3]]}]}");
	ok(rc == 0 && sim_scenario_faulty(&sc, faulty) == 0 && !faulty[0] && !faulty[1] && !faulty[2] && !faulty[6],
	   "crash_recover, delay and partition leave every node correct");
	sim_scenario_free(&sc);

	rc = parse_q(&sc, "{'n': 7, 'protocol': 'p', 'duration_ms': 1, 'faults': ["
			  "{'kind': 'crash', 'nodes': [0]}, {'kind': 'omission', 'nodes': [1]},"
			  "{'kind': 'corrupt', 'nodes': [2]}, {'kind': 'equivocate', 'nodes': [3], 'audience': [0]},"
			  "{'kind': 'twins', 'nodes': [4]}, {'kind': 'adversary', 'nodes': [5], 'strategy': 'x'},"
			  "{'kind': 'crash', 'nodes': [0, 5]}, {'kind': 'crash_recover', 'nodes': [6], 'until_ms': 1}]}");
	uint32_t k = rc == 0 ? sim_scenario_faulty(&sc, faulty) : 99;
	is_int(k, 6, "each faulty kind counts; a node listed twice counts once");
	ok(rc == 0 && faulty[0] && faulty[1] && faulty[2] && faulty[3] && faulty[4] && faulty[5] && !faulty[6],
	   "faulty flags");
	ok(rc == 0 && sc.f == 2, "the parser does not enforce faulty <= f (6 faulty, f = 2)");
	sim_scenario_free(&sc);
}

static void test_files(void)
{
	char dir[] = "/tmp/weft-scen-XXXXXX";
	char path[256];
	struct sim_scenario sc;
	int rc;

	if (!mkdtemp(dir)) {
		skip(6, "mkdtemp failed");
		return;
	}
	snprintf(path, sizeof(path), "%s/my-run.json", dir);
	FILE *fp = fopen(path, "w");
	if (!fp) {
		skip(6, "cannot write %s", path);
		rmdir(dir);
		return;
	}
	fputs("{\"n\": 4, \"protocol\": \"beb\", \"duration_ms\": 10}\n", fp);
	fclose(fp);
	rc = sim_scenario_load(&sc, path, err, sizeof(err));
	ok(rc == 0 && sc.name && strcmp(sc.name, "my-run") == 0, "load: name defaults to the file's base name");
	sim_scenario_free(&sc);

	fp = fopen(path, "w");
	if (fp) {
		fputs("{\"n\": 4,\n \"protocol\": \"beb\",\n \"duration_ms\": 10,,\n}\n", fp);
		fclose(fp);
	}
	rc = sim_scenario_load(&sc, path, err, sizeof(err));
	char want[300];
	snprintf(want, sizeof(want), "%s: line 3, column", path);
	ok(rc == WEFT_EINVAL && strstr(err, want), "load: syntax error with file, line and column");
	diag("%s", err);

	fp = fopen(path, "w");
	if (fp) {
		fputs("{\"n\": 4, \"protocol\": \"beb\", \"duration_ms\": 10, \"faults\": [{\"kind\": \"crsh\"}]}", fp);
		fclose(fp);
	}
	rc = sim_scenario_load(&sc, path, err, sizeof(err));
	snprintf(want, sizeof(want), "%s: $.faults[0].kind: unknown fault 'crsh'", path);
	ok(rc == WEFT_EINVAL && strncmp(err, want, strlen(want)) == 0, "load: path-named error prefixed by the file");
	unlink(path);

	rc = sim_scenario_load(&sc, path, err, sizeof(err));
	ok(rc == WEFT_EIO && strstr(err, path) && is_zeroed(&sc), "load: a missing file is WEFT_EIO naming the file");
	diag("%s", err);
	rc = sim_scenario_load(&sc, dir, err, sizeof(err));
	ok(rc < 0 && strstr(err, dir), "load: a directory is rejected");
	diag("%s", err);
	rc = sim_scenario_load(&sc, NULL, err, sizeof(err));
	is_int(rc, WEFT_EINVAL, "load: NULL path");
	rmdir(dir);
}

static void test_examples(void)
{
	const char *src = getenv("WEFT_SRC");
	char path[1024];
	struct sim_scenario sc;
	int rc;

	if (!src)
		src = ".";
	snprintf(path, sizeof(path), "%s/tests/sim/examples/beb-basic.json", src);
	if (access(path, R_OK) != 0) {
		skip(3, "examples not found under %s (set WEFT_SRC)", src);
		return;
	}
	rc = sim_scenario_load(&sc, path, err, sizeof(err));
	if (rc)
		diag("%s", err);
	ok(rc == 0 && sc.n == 4 && strcmp(sc.protocol, "beb") == 0 && sc.nseeds == 5 &&
		   sc.checkers == (SIM_CHECK_VALIDITY | SIM_CHECK_AGREEMENT | SIM_CHECK_INTEGRITY | SIM_CHECK_TOTALITY) &&
		   sc.nwork >= 1 && sc.net.latency.kind == SIM_LAT_CONSTANT,
	   "example beb-basic.json parses as described");
	sim_scenario_free(&sc);

	snprintf(path, sizeof(path), "%s/tests/sim/examples/beb-faults.json", src);
	rc = sim_scenario_load(&sc, path, err, sizeof(err));
	if (rc)
		diag("%s", err);
	bool kinds = false;
	if (rc == 0) {
		bool cr = false, part = false, delay = false;
		for (size_t i = 0; i < sc.nfaults; i++) {
			cr = cr || sc.faults[i].kind == SIM_FAULT_CRASH_RECOVER;
			part = part || (sc.faults[i].kind == SIM_FAULT_PARTITION && sc.faults[i].stop_us != SIM_NEVER);
			delay = delay || sc.faults[i].kind == SIM_FAULT_DELAY;
		}
		kinds = cr && part && delay;
	}
	ok(rc == 0 && sc.n == 7 && kinds && sc.net.loss > 0 && sim_scenario_faulty(&sc, NULL) == 0,
	   "example beb-faults.json: crash_recover, healing partition, delay, loss; every node correct");
	sim_scenario_free(&sc);

	snprintf(path, sizeof(path), "%s/tests/sim/examples/seq-order.json", src);
	rc = sim_scenario_load(&sc, path, err, sizeof(err));
	if (rc)
		diag("%s", err);
	ok(rc == 0 && strcmp(sc.protocol, "seq") == 0 &&
		   sc.checkers == (SIM_CHECK_PREFIX | SIM_CHECK_NO_DUP | SIM_CHECK_INCLUSION),
	   "example seq-order.json parses as described");
	sim_scenario_free(&sc);

	/* Every scenario file in the tree parses. */
	const char *dirs[] = {"tests/sim/*.json", "tests/sim/examples/*.json"};
	for (size_t d = 0; d < 2; d++) {
		glob_t g;
		snprintf(path, sizeof(path), "%s/%s", src, dirs[d]);
		if (glob(path, 0, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			rc = sim_scenario_load(&sc, g.gl_pathv[i], err, sizeof(err));
			if (!ok(rc == 0, "scenario file %s parses", g.gl_pathv[i]))
				diag("%s", err);
			sim_scenario_free(&sc);
		}
		globfree(&g);
	}
}

/* ---- robustness: mutations, truncations, type swaps ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Parses text; returns true when the outcome is well-formed: success, or
 * WEFT_EINVAL with a message starting with the name and a zeroed sc. */
static bool sane_parse(const char *text)
{
	struct sim_scenario sc;
	err[0] = '\0';
	int rc = sim_scenario_parse(&sc, text, "m.json", err, sizeof(err));
	bool good;
	if (rc == 0) {
		good = sc.name && sc.protocol && sc.n >= 1 && sc.n <= SIM_MAX_NODES && 3 * sc.f + 1 <= sc.n &&
		       sc.nseeds >= 1 && sc.duration_us > 0;
		(void)sim_scenario_faulty(&sc, NULL);
	} else {
		good = rc == WEFT_EINVAL && strncmp(err, "m.json: ", 8) == 0 && is_zeroed(&sc);
	}
	sim_scenario_free(&sc);
	return good;
}

static void test_mutations(void)
{
	static const char alphabet[] = "{}[]:,\"'0123456789-+.eE \\ntfnalu";
	char *base = dq(full_json);
	size_t len = strlen(base);
	char *buf = malloc(len * 2 + 16);
	int bad = 0, accepted = 0;

	if (!buf)
		abort();
	/* every prefix */
	for (size_t cut = 0; cut < len; cut++) {
		memcpy(buf, base, cut);
		buf[cut] = '\0';
		if (!sane_parse(buf))
			bad++;
	}
	is_int(bad, 0, "every truncation of the full scenario is rejected cleanly");

	bad = 0;
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = len;
		memcpy(buf, base, len + 1);
		int muts = 1 + (int)(rnd() % 4);
		for (int m = 0; m < muts; m++) {
			size_t at = (size_t)(rnd() % n);
			switch (rnd() % 3) {
			case 0: /* replace */
				buf[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
				break;
			case 1: /* delete */
				memmove(buf + at, buf + at + 1, n - at);
				n--;
				break;
			default: /* insert */
				if (n < len * 2) {
					memmove(buf + at + 1, buf + at, n - at + 1);
					buf[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
					n++;
				}
				break;
			}
		}
		struct sim_scenario sc;
		if (sim_scenario_parse(&sc, buf, "m.json", err, sizeof(err)) == 0)
			accepted++;
		sim_scenario_free(&sc);
		if (!sane_parse(buf))
			bad++;
	}
	is_int(bad, 0, "20000 random mutations: no crash, clean results");
	diag("%d of 20000 mutations still parsed", accepted);
	free(buf);
	free(base);
}

static const char *const swaps[] = {
	"null", "true", "false", "-1", "0", "1", "4", "7", "0.5", "-0.0", "1e300", "9223372036854775807",
	"-9223372036854775808", "\"\"", "\"all\"", "\"x\"", "[]", "[0]", "[-1]", "[[0]]", "{}", "{\"a\": []}",
};

static int swap_bad, swap_total;

/* Replaces each value reachable from v (object members and array
 * elements) by each swap in turn and parses the whole document. */
static void swap_walk(json_t *root, json_t *v)
{
	if (json_is_object(v)) {
		const char *key;
		json_t *val;
		void *tmp;
		json_object_foreach_safe(v, tmp, key, val) {
			json_incref(val);
			for (size_t s = 0; s < sizeof(swaps) / sizeof(swaps[0]); s++) {
				json_t *sub = json_loads(swaps[s], JSON_DECODE_ANY, NULL);
				json_object_set_new(v, key, sub);
				char *text = json_dumps(root, JSON_COMPACT);
				swap_total++;
				if (!sane_parse(text))
					swap_bad++;
				free(text);
			}
			json_object_set(v, key, val);
			swap_walk(root, val);
			json_decref(val);
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_t *val = json_array_get(v, i);
			json_incref(val);
			for (size_t s = 0; s < sizeof(swaps) / sizeof(swaps[0]); s++) {
				json_array_set_new(v, i, json_loads(swaps[s], JSON_DECODE_ANY, NULL));
				char *text = json_dumps(root, JSON_COMPACT);
				swap_total++;
				if (!sane_parse(text))
					swap_bad++;
				free(text);
			}
			json_array_set(v, i, val);
			swap_walk(root, val);
			json_decref(val);
		}
	}
}

static void test_type_swaps(void)
{
	char *text = dq(full_json);
	json_t *root = json_loads(text, 0, NULL);
	free(text);
	if (!root) {
		skip(1, "full scenario does not load in jansson");
		return;
	}
	swap_walk(root, root);
	is_int(swap_bad, 0, "every value of the full scenario swapped for %zu other types/values (%d documents): clean",
	       sizeof(swaps) / sizeof(swaps[0]), swap_total);
	json_decref(root);
}

int main(void)
{
	test_full();
	test_defaults();
	test_hostile();
	test_hostile_built();
	test_faulty();
	test_files();
	test_examples();
	test_mutations();
	test_type_swaps();
	return done_testing();
}
