/* main.c - weft-sim's command line: load a scenario, run it for each seed,
 * write one JSON document per run, and exit non-zero when a property was
 * violated (or, for a scenario that expects a violation, when none was).
 * With --search, run seeds until one fails that way and shrink it
 * (search.c). */
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
		"  --trace-data      with --trace: the message bytes (hex) on send and recv\n"
		"  --per-node        include per-node message counters in each document\n"
		"  -v, --verbose     print protocol log lines (with virtual time) to stderr\n"
		"  -q, --quiet       no summary line on stderr\n"
		"  -h, --help        this text\n"
		"\n"
		"  --search          run seeds until one fails (a property is violated; with\n"
		"                    expect_violation: none is), then shrink that run to a\n"
		"                    small scenario that still fails with the same seed and\n"
		"                    print it; the per-run documents go only to --out\n"
		"  --max-seeds N     search N seeds from the first one (of --seeds, or the\n"
		"                    scenario's) instead of the scenario's seeds\n"
		"  --shrink-out FILE write the shrunk scenario to FILE instead of stdout\n"
		"\n"
		"Exit status: 0 every run behaved as the scenario expects (--search: no seed\n"
		"failed); 1 a property was violated (or an expected violation did not\n"
		"happen; --search: a failing seed was found); 2 bad scenario or usage.\n");
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

/* --search: finds a failing seed among count seeds (list, or from first
 * on), shrinks it and writes the result to shrink_path (NULL: stdout).
 * Returns the exit status. */
static int search(const struct sim_scenario *sc, const uint64_t *list, uint64_t first, uint64_t count, FILE *out,
		  const char *shrink_path)
{
	char err[1024];
	bool found;
	uint64_t seed;
	if (sim_search(sc, list, first, count, out, stdout, &found, &seed, err, sizeof(err)) != 0) {
		fprintf(stderr, "weft-sim: %s: %s\n", sc->name, err);
		return 2;
	}
	if (!found)
		return 0;
	char *text;
	if (sim_shrink(sc, seed, stdout, &text, err, sizeof(err)) != 0) {
		fprintf(stderr, "weft-sim: %s: %s\n", sc->name, err);
		return 2;
	}
	FILE *f = shrink_path ? fopen(shrink_path, "w") : stdout;
	if (f == NULL || fputs(text, f) == EOF || (f != stdout && fclose(f) != 0)) {
		fprintf(stderr, "weft-sim: cannot write %s: %s\n", shrink_path, strerror(errno));
		free(text);
		return 2;
	}
	if (shrink_path)
		printf("written to %s\n", shrink_path);
	free(text);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"seed", required_argument, NULL, 's'},
		{"seeds", required_argument, NULL, 'S'},
		{"out", required_argument, NULL, 'o'},
		{"trace", required_argument, NULL, 't'},
		{"trace-data", no_argument, NULL, 'D'},
		{"per-node", no_argument, NULL, 'p'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"search", no_argument, NULL, 'x'},
		{"max-seeds", required_argument, NULL, 'm'},
		{"shrink-out", required_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	const char *out_path = NULL, *trace_path = NULL, *shrink_path = NULL;
	uint64_t from = 0, to = 0, max_seeds = 0;
	bool have_range = false, quiet = false, searching = false;
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
		case 'D': ro.trace_data = true; break;
		case 'p': ro.per_node = true; break;
		case 'v': ro.verbose = true; break;
		case 'q': quiet = true; break;
		case 'x': searching = true; break;
		case 'm':
			if (weft_parse_u64(optarg, &max_seeds) < 0 || max_seeds == 0) {
				fprintf(stderr, "weft-sim: bad --max-seeds '%s' (use a whole number >= 1)\n", optarg);
				return 2;
			}
			break;
		case 'w': shrink_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (!searching && (max_seeds || shrink_path)) {
		fprintf(stderr, "weft-sim: --max-seeds and --shrink-out go with --search\n");
		return 2;
	}
	if (searching && trace_path) {
		fprintf(stderr, "weft-sim: --trace does not go with --search (trace the seed it finds instead)\n");
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
	int status = 0;
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
	if (searching) {
		uint64_t first = have_range ? from : sc.seeds[0];
		if (max_seeds && max_seeds - 1 > UINT64_MAX - first) {
			fprintf(stderr, "weft-sim: --max-seeds %llu from seed %llu runs past the last seed\n",
				(unsigned long long)max_seeds, (unsigned long long)first);
			status = 2;
		} else {
			bool list = !max_seeds && !have_range;
			status = search(&sc, list ? sc.seeds : NULL, first,
					max_seeds ? max_seeds : list ? sc.nseeds : to - from + 1, out_path ? out : NULL,
					shrink_path);
		}
		if (out != stdout)
			fclose(out);
		sim_scenario_free(&sc);
		return status;
	}
	size_t nruns = have_range ? (size_t)(to - from + 1) : sc.nseeds;
	size_t bad = 0, runs = 0;
	uint64_t events = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
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
		if (sim_run_failed(&sc, &res)) {
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
