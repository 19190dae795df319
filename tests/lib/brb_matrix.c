/* brb_matrix.c - the BRB scenario suite, shared by the test programs
 * tests/integration/brb_matrix_<protocol>.c: a broadcast protocol, for n in
 * {4, 7, 10, 16} with f Byzantine (or crashing) nodes, under each fault
 * case (equivocating sender, silent sender, corrupted messages, twins, a
 * partition healed later, crash-recover of honest nodes), over many seeds
 * of the deterministic simulator, checking Validity, Agreement, Integrity
 * and Totality on every run.
 *
 * WEFT_BRB_SEEDS sets the seeds per case (default 100; `make check` runs
 * a slice of 10, `make campaign-brb` 10,000).  A failing case prints the seed to replay with weft-sim and
 * the scenario. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "../tap.h"
#include "brb_matrix.h"
#include "weft/crypto.h"

static const uint32_t sizes[] = {4, 7, 10, 16};
static const char *const cases[] = {"equivocate", "silent", "corrupt", "twins", "partition", "crash_recover"};

/* Writes the fault list of a case for n nodes into buf. */
static void faults(char *buf, size_t cap, const char *c, uint32_t n)
{
	uint32_t f = (n - 1) / 3;
	char nodes[128] = "", audience[128] = "", lower[128] = "", upper[128] = "";
	size_t o = 0;
	for (uint32_t i = n - f; i < n; i++)
		o += (size_t)snprintf(nodes + o, sizeof(nodes) - o, "%s%u", o ? "," : "", i);
	o = 0;
	for (uint32_t i = n / 2; i < n; i++)
		o += (size_t)snprintf(audience + o, sizeof(audience) - o, "%s%u", o ? "," : "", i);
	o = 0;
	for (uint32_t i = 0; i < n / 2; i++)
		o += (size_t)snprintf(lower + o, sizeof(lower) - o, "%s%u", o ? "," : "", i);
	snprintf(upper, sizeof(upper), "%s", audience);
	if (!strcmp(c, "equivocate")) {
		/* each Byzantine node's twin tells the upper half another story */
		o = 0;
		for (uint32_t i = n - f; i < n; i++) {
			char aud[128] = "";
			size_t a = 0;
			for (uint32_t j = n / 2; j < n; j++)
				if (j != i)
					a += (size_t)snprintf(aud + a, sizeof(aud) - a, "%s%u", a ? "," : "", j);
			o += (size_t)snprintf(buf + o, cap - o, "%s{\"kind\":\"equivocate\",\"nodes\":[%u],\"audience\":[%s]}",
					      o ? "," : "", i, aud);
		}
	} else if (!strcmp(c, "silent")) {
		snprintf(buf, cap, "{\"kind\":\"omission\",\"nodes\":[%s],\"direction\":\"send\"}", nodes);
	} else if (!strcmp(c, "corrupt")) {
		snprintf(buf, cap, "{\"kind\":\"corrupt\",\"nodes\":[%s],\"probability\":0.5}", nodes);
	} else if (!strcmp(c, "twins")) {
		snprintf(buf, cap, "{\"kind\":\"twins\",\"nodes\":[%s]}", nodes);
	} else if (!strcmp(c, "partition")) {
		snprintf(buf, cap, "{\"kind\":\"partition\",\"groups\":[[%s],[%s]],\"at_ms\":0,\"until_ms\":300}", lower,
			 upper);
	} else { /* crash_recover of f honest nodes (the lowest ones) */
		char low[128] = "";
		o = 0;
		for (uint32_t i = 0; i < f; i++)
			o += (size_t)snprintf(low + o, sizeof(low) - o, "%s%u", o ? "," : "", i);
		snprintf(buf, cap, "{\"kind\":\"crash_recover\",\"nodes\":[%s],\"at_ms\":40,\"until_ms\":400}",
			 f ? low : "0");
	}
}

int brb_matrix_run(const char *protocol)
{
	weft_crypto_init();
	const char *s = getenv("WEFT_BRB_SEEDS");
	uint64_t seeds = s && *s ? strtoull(s, NULL, 10) : 100;
	FILE *devnull = fopen("/dev/null", "w");
	{
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
				uint32_t n = sizes[z];
				char fl[2048], sc[4096], err[512];
				faults(fl, sizeof(fl), cases[k], n);
				snprintf(sc, sizeof(sc),
					 "{\"name\":\"%s-n%u-%s\",\"n\":%u,\"protocol\":\"%s\",\"kv\":\"memory\","
					 "\"network\":{\"latency\":{\"dist\":\"uniform\",\"min_ms\":1,\"max_ms\":20}},"
					 "\"faults\":[%s],"
					 "\"workload\":[{\"nodes\":\"all\",\"every_ms\":30,\"count\":3,\"size\":256}],"
					 "\"duration_ms\":8000,"
					 "\"checkers\":[\"validity\",\"agreement\",\"integrity\",\"totality\"]}",
					 protocol, n, cases[k], n, protocol, fl);
				struct sim_scenario scen;
				if (sim_scenario_parse(&scen, sc, "matrix", err, sizeof(err)) != 0) {
					ok(0, "%s n=%u %s: scenario: %s", protocol, n, cases[k], err);
					continue;
				}
				uint64_t bad = 0, first = 0;
				char why[1024] = "";
				int refused = 0;
				for (uint64_t seed = 1; seed <= seeds && !refused; seed++) {
					struct sim_run_result res;
					FILE *saved = stderr;
					stderr = devnull;
					int rc = sim_run(&scen, seed, &(struct sim_run_opts){0}, devnull, &res, err, sizeof(err));
					stderr = saved;
					if (rc != 0) {
						refused = 1;
						snprintf(why, sizeof(why), "%s", err);
					} else if (res.violations) {
						if (bad++ == 0) {
							first = seed;
							snprintf(why, sizeof(why), "%s", res.verdict.first);
						}
					}
				}
				if (!ok(!refused && bad == 0, "%s n=%u %s: %llu seeds, %llu with violations", protocol, n,
					cases[k], (unsigned long long)seeds, (unsigned long long)bad)) {
					diag("first failing seed %llu: %s", (unsigned long long)first, why);
					diag("scenario: %s", sc);
				}
				sim_scenario_free(&scen);
			}
		}
	}
	fclose(devnull);
	return done_testing();
}
