/* main.c - weft-sim's command line: load a scenario, run it for each seed,
 * write one JSON document per run, and exit non-zero when a property was
 * violated (or, for a scenario that expects a violation, when none was). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: weft-sim [options] SCENARIO.json\n"
		"\n"
		"Runs a protocol scenario in the deterministic simulator: the same scenario and\n"
		"seed always give byte-identical output.  See docs/sim.md.\n"
		"\n"
		"  --seed N          run only seed N (instead of the scenario's seeds)\n"
		"  --seeds A..B      run seeds A to B inclusive\n"
		"  --out FILE        write the per-run JSON documents to FILE (default stdout)\n"
		"  --trace FILE      write an NDJSON event trace (send, drop, deliver, timer,\n"
		"                    request, fault, reject) to FILE\n"
		"  --per-node        include per-node message counters in each document\n"
		"  -v, --verbose     print protocol log lines (with virtual time) to stderr\n"
		"  -q, --quiet       no summary line on stderr\n"
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 every run behaved as the scenario expects; 1 a property was\n"
		"violated (or an expected violation did not happen); 2 bad scenario or usage.\n");
}

/* "N" or "A..B" (decimal numbers as weft_parse_u64 reads them) with
 * A <= B and fewer than 10^8 seeds: 0, or -1 for anything else. */
static int parse_range(const char *s, uint64_t *a, uint64_t *b)
{
	const char *dots = strstr(s, "..");

	if (dots == NULL) {
		if (weft_parse_u64(s, a) < 0)
			return -1;
		*b = *a;
		return 0;
	}
	if (weft_parse_u64n(s, (size_t)(dots - s), a) < 0 || weft_parse_u64(dots + 2, b) < 0)
		return -1;
	return (*b < *a || *b - *a >= 100000000) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"seed", required_argument, NULL, 's'},
		{"seeds", required_argument, NULL, 'S'},
		{"out", required_argument, NULL, 'o'},
		{"trace", required_argument, NULL, 't'},
		{"per-node", no_argument, NULL, 'p'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out_path = NULL, *trace_path = NULL;
	uint64_t from = 0, to = 0;
	bool have_range = false, quiet = false;
	struct sim_run_opts ro = {0};
	int opt;
	while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
		case 'S':
			if (parse_range(optarg, &from, &to) != 0) {
				fprintf(stderr, "weft-sim: bad seed or range '%s' (use N or A..B)\n", optarg);
				return 2;
			}
			have_range = true;
			break;
		case 'o': out_path = optarg; break;
		case 't': trace_path = optarg; break;
		case 'p': ro.per_node = true; break;
		case 'v': ro.verbose = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (weft_crypto_init() != 0) {
		fprintf(stderr, "weft-sim: libsodium failed to initialise\n");
		return 2;
	}
	struct sim_scenario sc;
	char err[1024];
	if (sim_scenario_load(&sc, argv[optind], err, sizeof(err)) != 0) {
		fprintf(stderr, "weft-sim: %s\n", err);
		return 2;
	}
	FILE *out = stdout;
	if (out_path && (out = fopen(out_path, "w")) == NULL) {
		fprintf(stderr, "weft-sim: cannot write %s: %s\n", out_path, strerror(errno));
		sim_scenario_free(&sc);
		return 2;
	}
	if (trace_path && (ro.trace = fopen(trace_path, "w")) == NULL) {
		fprintf(stderr, "weft-sim: cannot write %s: %s\n", trace_path, strerror(errno));
		sim_scenario_free(&sc);
		return 2;
	}
	size_t nruns = have_range ? (size_t)(to - from + 1) : sc.nseeds;
	size_t bad = 0, runs = 0;
	uint64_t events = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int status = 0;
	for (size_t i = 0; i < nruns; i++) {
		uint64_t seed = have_range ? from + i : sc.seeds[i];
		struct sim_run_result res;
		if (sim_run(&sc, seed, &ro, out, &res, err, sizeof(err)) != 0) {
			fprintf(stderr, "weft-sim: %s: %s\n", sc.name ? sc.name : argv[optind], err);
			status = 2;
			break;
		}
		runs++;
		events += res.events;
		bool ok = sc.expect_violation ? res.violations > 0 : res.violations == 0;
		if (!ok) {
			bad++;
			if (sc.expect_violation)
				fprintf(stderr, "weft-sim: seed %llu: expected a violation, but every property held\n",
					(unsigned long long)seed);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (!quiet && status == 0)
		fprintf(stderr, "weft-sim: %s: %zu runs, %zu %s, %llu events in %.2f s (%.2f M events/s)\n",
			sc.name ? sc.name : argv[optind], runs, bad,
			sc.expect_violation ? "without the expected violation" : "with violations",
			(unsigned long long)events, wall, wall > 0 ? (double)events / wall / 1e6 : 0.0);
	if (status == 0 && bad)
		status = 1;
	if (out != stdout)
		fclose(out);
	if (ro.trace)
		fclose(ro.trace);
	sim_scenario_free(&sc);
	return status;
}
