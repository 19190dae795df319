/* sim_scenario_write.c - TAP tests of weft-sim's scenario writer
 * (src/sim/scenario_write.c): every scenario file under tests/sim, and a
 * scenario using every key with awkward values (fractional times and
 * bandwidth, a directed topology, every fault kind, windows that start
 * after a protocol event, a seed list, protocol and strategy parameters
 * with reals), parses back from the writer's text to an equal struct:
 * parse(write(sc)) == sc.
 *
 * Equality compares each struct's bytes with its array and string members
 * compared element by element and then zeroed, so a field added to struct
 * sim_scenario or struct sim_fault that the writer leaves out, or a new
 * pointer member this test does not know, makes the test fail. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../src/sim/sim.h"
#include "../tap.h"

static char err[1024];

static bool same_bytes(const void *a, size_t alen, const void *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_nodes(const uint32_t *a, uint32_t alen, const uint32_t *b, uint32_t blen)
{
	return same_bytes(a, alen * sizeof(*a), b, blen * sizeof(*b));
}

static bool fault_equal(const struct sim_fault *fa, const struct sim_fault *fb)
{
	struct sim_fault a, b;
	memcpy(&a, fa, sizeof(a));
	memcpy(&b, fb, sizeof(b));
	bool same = same_nodes(a.nodes, a.nnodes, b.nodes, b.nnodes) && same_nodes(a.peers, a.npeers, b.peers, b.npeers) &&
		    a.ngroups == b.ngroups && same_str(a.strategy, b.strategy) &&
		    same_bytes(a.params, a.plen, b.params, b.plen) && same_str(a.after.text, b.after.text) &&
		    same_str(a.after.contains, b.after.contains);
	for (uint32_t g = 0; same && g < a.ngroups; g++)
		same = same_nodes(a.groups[g], a.group_len[g], b.groups[g], b.group_len[g]);
	a.nodes = b.nodes = a.peers = b.peers = a.group_len = b.group_len = NULL;
	a.groups = b.groups = NULL;
	a.strategy = b.strategy = NULL;
	a.params = b.params = NULL;
	a.after.text = b.after.text = a.after.contains = b.after.contains = NULL;
	return same && memcmp(&a, &b, sizeof(a)) == 0;
}

static bool scenario_equal(const struct sim_scenario *sa, const struct sim_scenario *sb)
{
	struct sim_scenario a, b;
	memcpy(&a, sa, sizeof(a));
	memcpy(&b, sb, sizeof(b));
	bool same = same_str(a.name, b.name) && same_str(a.protocol, b.protocol) &&
		    same_bytes(a.params, a.plen, b.params, b.plen) && a.nfaults == b.nfaults && a.nwork == b.nwork &&
		    same_bytes(a.seeds, a.nseeds * sizeof(*a.seeds), b.seeds, b.nseeds * sizeof(*b.seeds)) &&
		    a.net.directed == b.net.directed;
	for (uint32_t i = 0; same && a.net.directed && i < a.n && i < b.n; i++)
		same = same_nodes(a.net.out[i], a.net.out_len[i], b.net.out[i], b.net.out_len[i]);
	for (size_t i = 0; same && i < a.nfaults; i++)
		same = fault_equal(&a.faults[i], &b.faults[i]);
	for (size_t i = 0; same && i < a.nwork; i++) {
		struct sim_workload x = a.work[i], y = b.work[i];
		same = same_nodes(x.nodes, x.nnodes, y.nodes, y.nnodes);
		x.nodes = y.nodes = NULL;
		same = same && memcmp(&x, &y, sizeof(x)) == 0;
	}
	a.name = b.name = a.protocol = b.protocol = NULL;
	a.params = b.params = NULL;
	a.net.out = b.net.out = NULL;
	a.net.out_len = b.net.out_len = NULL;
	a.faults = b.faults = NULL;
	a.work = b.work = NULL;
	a.seeds = b.seeds = NULL;
	same = same && same_nodes(a.store.readers, a.store.nreaders, b.store.readers, b.store.nreaders);
	a.store.readers = b.store.readers = NULL;
	return same && memcmp(&a, &b, sizeof(a)) == 0;
}

/* Writes sc, parses the text back and compares. */
static void round_trip(const struct sim_scenario *sc, const char *what)
{
	json_t *doc = sim_scenario_to_json(sc);
	char *text = sim_scenario_text(doc);
	struct sim_scenario back;
	int rc = sim_scenario_parse(&back, text, what, err, sizeof(err));
	if (rc != 0)
		diag("%s\n%s", err, text);
	bool same = rc == 0 && scenario_equal(sc, &back);
	if (rc == 0 && !same)
		diag("differs after the round trip:\n%s", text);
	ok(same, "%s: parse(write(sc)) == sc", what);
	if (rc == 0)
		sim_scenario_free(&back);
	free(text);
	json_decref(doc);
}

static void test_files(void)
{
	const char *src = getenv("WEFT_SRC");
	char pattern[1024];
	glob_t g;
	snprintf(pattern, sizeof(pattern), "%s/tests/sim/*.json", src && *src ? src : ".");
	int rc = glob(pattern, 0, NULL, &g);
	snprintf(pattern, sizeof(pattern), "%s/tests/sim/*/*.json", src && *src ? src : ".");
	if (rc == 0)
		glob(pattern, GLOB_APPEND, NULL, &g);
	if (rc != 0) {
		skip(1, "no scenario files under %s/tests/sim (set WEFT_SRC)", src ? src : ".");
		return;
	}
	ok(g.gl_pathc >= 10, "%zu scenario files under tests/sim", g.gl_pathc);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct sim_scenario sc;
		const char *name = strstr(g.gl_pathv[i], "tests/sim/");
		if (sim_scenario_load(&sc, g.gl_pathv[i], err, sizeof(err)) != 0) {
			ok(0, "%s loads: %s", name, err);
			continue;
		}
		round_trip(&sc, name);
		sim_scenario_free(&sc);
	}
	globfree(&g);
}

/* Every key with values that are easy to get wrong. */
static const char everything[] =
	"{\"name\": \"everything\", \"n\": 7, \"f\": 2, \"protocol\": \"beb\","
	" \"params\": {\"leader\": 1, \"rate\": 0.1, \"whole\": 2.0, \"neg\": -3, \"list\": [1, \"x\", null, true],"
	" \"nested\": {\"k\": 1e-7}},"
	" \"network\": {\"latency\": {\"dist\": \"normal\", \"mean_ms\": 50.125, \"stddev_ms\": 10, \"min_ms\": 0.001},"
	" \"bandwidth_mbps\": 2.5, \"loss\": 0.01, \"duplicate\": 0.3, \"reorder\": {\"probability\": 0, \"max_ms\": 20},"
	" \"topology\": {\"directed\": [[1, 2, 3, 4, 5, 6], [0, 2], [0, 1], [], [0], [0], [0]]}},"
	" \"faults\": ["
	"  {\"kind\": \"crash\", \"nodes\": [6], \"at_ms\": 100.5},"
	"  {\"kind\": \"crash_recover\", \"nodes\": [5, 4], \"at_ms\": 100, \"until_ms\": 400, \"lose\": \"store\"},"
	"  {\"kind\": \"crash_recover\", \"nodes\": [3], \"after\": {\"node\": 1, \"deliveries\": 5}, \"delay_ms\": 2.5,"
	"   \"for_ms\": 100, \"lose\": \"last_step\"},"
	"  {\"kind\": \"crash\", \"nodes\": [6], \"after\": {\"node\": 0, \"deliveries\": 10}, \"delay_ms\": 1},"
	"  {\"kind\": \"loss\", \"nodes\": [2], \"peers\": [0], \"direction\": \"receive\", \"probability\": 0.25,"
	"   \"at_ms\": 10, \"for_ms\": 20},"
	"  {\"kind\": \"loss\", \"nodes\": [1], \"probability\": 1},"
	"  {\"kind\": \"cut\", \"from\": [0, 1], \"to\": [2], \"after\": {\"node\": 0, \"event\": \"dag.commit\","
	"   \"contains\": \"round=3\"}, \"for_ms\": 50},"
	"  {\"kind\": \"skew\", \"nodes\": [6], \"rate\": 1.5, \"offset_ms\": 0.25},"
	"  {\"kind\": \"skew\", \"nodes\": [5], \"offset_ms\": 7},"
	"  {\"kind\": \"delay\", \"nodes\": [1], \"peers\": [2], \"ms\": 3, \"jitter_ms\": 1.5,"
	"   \"after\": {\"node\": 2, \"log\": \"a/b timeout\"}},"
	"  {\"kind\": \"delay\", \"nodes\": [1], \"ms\": 3, \"after\": {\"node\": 2, \"event\": \"x\"}, \"for_ms\": 9},"
	"  {\"kind\": \"omission\", \"nodes\": [1], \"peers\": [2, 3], \"direction\": \"send\", \"until_ms\": 500},"
	"  {\"kind\": \"omission\", \"nodes\": [2], \"direction\": \"receive\"},"
	"  {\"kind\": \"omission\", \"nodes\": [3]},"
	"  {\"kind\": \"delay\", \"nodes\": [0], \"ms\": 30.25, \"at_ms\": 0, \"until_ms\": 500},"
	"  {\"kind\": \"partition\", \"groups\": [[0, 1], [2, 3]], \"at_ms\": 50, \"until_ms\": 300},"
	"  {\"kind\": \"corrupt\", \"nodes\": [4], \"probability\": 0.5, \"mode\": \"truncate\"},"
	"  {\"kind\": \"equivocate\", \"nodes\": [0], \"audience\": [2, 3]},"
	"  {\"kind\": \"twins\", \"nodes\": [2]},"
	"  {\"kind\": \"adversary\", \"nodes\": [3], \"strategy\": \"bad_refs\", \"params\": {\"rate\": 2.75}},"
	"  {\"kind\": \"adversary\", \"nodes\": [1], \"strategy\": \"selective\"}],"
	" \"workload\": [{\"nodes\": \"all\", \"every_ms\": 200, \"count\": 25, \"size\": 1024},"
	"  {\"node\": 0, \"at_ms\": 5.5, \"size\": 0}, {\"nodes\": [3, 1], \"start_ms\": 7, \"count\": 1, \"size\": 9}],"
	" \"duration_ms\": 5000.001, \"seeds\": [9, 3, 4], \"checkers\": [\"inclusion\", \"validity\", \"catch_up\","
	" \"state_hash\", \"inclusion_fraction\"], \"expect_violation\": true, \"kv\": \"memory\", \"signatures\": \"fast\","
	" \"bounds\": {\"inclusion_min\": 0.95, \"settle_ms\": 1000.5, \"catch_up_ms\": 3000}}";

static void test_everything(void)
{
	struct sim_scenario sc;
	int rc = sim_scenario_parse(&sc, everything, "everything", err, sizeof(err));
	if (rc)
		diag("%s", err);
	ok(rc == 0, "the everything scenario parses");
	if (rc)
		return;
	round_trip(&sc, "everything");

	json_t *doc = sim_scenario_to_json(&sc);
	char *text = sim_scenario_text(doc);
	ok(strstr(text, "\"duration_ms\": 5000.001,\n") && strstr(text, "\"loss\": 0.01,") &&
		   strstr(text, "\"mean_ms\": 50.125,") && strstr(text, "\"bandwidth_mbps\": 2.5,") &&
		   strstr(text, "\"whole\": 2.0,") && strstr(text, "\"seeds\": [9, 3, 4],"),
	   "numbers are written in their shortest form, reals keep a decimal point");
	ok(strstr(text, "\n  \"faults\": [\n    {\"kind\": \"crash\", \"nodes\": [6], \"at_ms\": 100.5},\n    {") != NULL,
	   "one fault per line");
	ok(strstr(text, "\"workload\": [\n    {\"nodes\": \"all\", ") != NULL, "all nodes are written as \"all\"");
	free(text);
	json_decref(doc);
	sim_scenario_free(&sc);

	rc = sim_scenario_parse(&sc, "{\"n\": 4, \"protocol\": \"seq\", \"duration_ms\": 10, \"seeds\": {\"from\": 5, \"to\": 9}}",
				"defaults", err, sizeof(err));
	ok(rc == 0, "a scenario with every default parses");
	if (rc)
		return;
	round_trip(&sc, "defaults");
	doc = sim_scenario_to_json(&sc);
	json_t *range = json_pack("{s:i, s:i}", "from", 5, "to", 9);
	ok(json_equal(json_object_get(doc, "seeds"), range), "consecutive seeds are written as a range");
	json_decref(range);
	json_decref(doc);
	sim_scenario_free(&sc);
}

int main(void)
{
	test_everything();
	test_files();
	return done_testing();
}
