/* sim_search.c - runs the real weft-sim --search: on tests/sim/search/
 * seq-lossy.json (the toy sequencer, which tolerates no loss, on a
 * slightly lossy network, with faults and a workload line that have
 * nothing to do with the failure) it must find a failing seed, shrink the
 * run (drop the unrelated faults and the extra workload line) and write a
 * scenario that still fails with that seed; on a scenario that expects a
 * violation and gets one every time it finds nothing; and bad command
 * lines and bounds fail with exit 2 and a message.  Takes well under 5 s. */
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

/* Runs weft-sim with argv (NULL-terminated, without the program); fills r. */
static void sim_run(struct tu_run *r, char *sim, char **args)
{
	char *argv[16] = {sim};
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	tu_run(r, argv, 60000, -1);
}

int main(void)
{
	char *sim = tu_bin("weft-sim");
	char *lossy = src_path("tests/sim/search/seq-lossy.json");
	char *caught = src_path("tests/sim/beb-equivocation-caught.json");
	char *tmp = tu_tmpdir("simsearch");
	char *shrunk = tu_path(tmp, "shrunk.json"), *bad = tu_path(tmp, "bad.json");
	struct tu_run r;

	sim_run(&r, sim, (char *[]){"--search", "--shrink-out", shrunk, lossy, NULL});
	is_int(r.status, 1, "--search finds a failing seed: exit 1");
	if (r.status != 1)
		diag("%s%s", r.out, r.err);
	unsigned long long seed = 0, runs = 0;
	int got = sscanf(r.out, "seq-lossy: seed %llu fails, found after %llu run", &seed, &runs);
	ok(got == 2 && runs >= 1 && strstr(r.out, " seeds/s)\n"),
	   "it reports the seed (%llu), the runs it took (%llu) and the seeds per second", seed, runs);
	ok(strstr(r.out, "\n  inclusion: node") != NULL, "and the violation");
	char want[128];
	snprintf(want, sizeof(want), "shrinking seed %llu, keeping each change that still violates inclusion:\n", seed);
	ok(strstr(r.out, want) && strstr(r.out, "  dropped fault "), "the shrink steps: faults dropped");
	ok(strstr(r.out, "written to ") != NULL, "the shrunk scenario is written out");
	tu_run_free(&r);

	json_t *doc = json_load_file(shrunk, 0, NULL);
	const json_t *seeds = json_object_get(doc, "seeds");
	ok(doc && json_array_size(json_object_get(doc, "faults")) < 3 &&
		   json_array_size(json_object_get(doc, "workload")) <= 2 && json_array_size(seeds) == 1 &&
		   (unsigned long long)json_integer_value(json_array_get(seeds, 0)) == seed,
	   "the shrunk scenario: fewer faults, seeds [%llu]", seed);
	json_decref(doc);
	sim_run(&r, sim, (char *[]){"--quiet", "--out", "/dev/null", shrunk, NULL});
	snprintf(want, sizeof(want), "seed %llu: inclusion:", seed);
	ok(r.status == 1 && strstr(r.err, want), "and it still fails with seed %llu", seed);
	tu_run_free(&r);

	sim_run(&r, sim, (char *[]){"--search", "--max-seeds", "5", caught, NULL});
	ok(r.status == 0 && strstr(r.out, "no failing seed in 5 runs"),
	   "a scenario that gets its expected violation every time: nothing found, exit 0");
	tu_run_free(&r);

	sim_run(&r, sim, (char *[]){"--search", "--max-seeds", "0", lossy, NULL});
	ok(r.status == 2 && strstr(r.err, "bad --max-seeds '0'"), "--max-seeds 0: exit 2");
	tu_run_free(&r);
	sim_run(&r, sim, (char *[]){"--search", "--max-seeds", "12x", lossy, NULL});
	ok(r.status == 2 && strstr(r.err, "bad --max-seeds '12x'"), "--max-seeds 12x: exit 2");
	tu_run_free(&r);
	sim_run(&r, sim, (char *[]){"--max-seeds", "5", lossy, NULL});
	ok(r.status == 2 && strstr(r.err, "go with --search"), "--max-seeds without --search: exit 2");
	tu_run_free(&r);
	sim_run(&r, sim, (char *[]){"--search", "--trace", bad, lossy, NULL});
	ok(r.status == 2 && strstr(r.err, "--trace does not go with --search"), "--search with --trace: exit 2");
	tu_run_free(&r);

	tu_write_file(bad, "{\"n\":4,\"protocol\":\"seq\",\"duration_ms\":10,\"bounds\":{\"inclusion_mni\":0.9}}");
	sim_run(&r, sim, (char *[]){"--search", bad, NULL});
	ok(r.status == 2 && strstr(r.err, "$.bounds: unknown key 'inclusion_mni'"), "an unknown bounds key: exit 2");
	tu_run_free(&r);
	tu_write_file(bad, "{\"n\":4,\"protocol\":\"seq\",\"duration_ms\":10,\"bounds\":{\"catch_up_ms\":-5}}");
	sim_run(&r, sim, (char *[]){bad, NULL});
	ok(r.status == 2 && strstr(r.err, "$.bounds.catch_up_ms: expected a non-negative number, got -5"),
	   "a negative bound: exit 2");
	tu_run_free(&r);
	tu_write_file(bad, "{\"n\":4,\"protocol\":\"seq\",\"duration_ms\":10,\"checkers\":[\"catch_up\"]}");
	sim_run(&r, sim, (char *[]){bad, NULL});
	ok(r.status == 2 && strstr(r.err, "missing required key 'catch_up_ms'"), "catch_up without catch_up_ms: exit 2");
	tu_run_free(&r);

	tu_rmtree(tmp);
	free(tmp), free(shrunk), free(bad), free(lossy), free(caught), free(sim);
	return done_testing();
}
