/* search.c - weft-sim's adversarial search: run a scenario over many seeds
 * until a run fails, then shrink that run to a small scenario that still
 * fails with the same seed (weft-sim --search, docs/sim.md).
 *
 * A run fails when it does not behave as the scenario expects.  For an
 * ordinary scenario that is a violated property, and shrinking keeps a
 * change only when the same seed still violates the property the run
 * reported first.  With expect_violation the failure is a run in which
 * every property held; such a run is reported but not shrunk: dropping
 * faults, requests or time only makes "nothing was violated" easier, so
 * shrinking would end at an empty scenario that says nothing.
 *
 * A run cut short fails validity, totality, inclusion and
 * inclusion_fraction by itself (requests not output yet), so for those the
 * duration only shrinks with the workload: a candidate keeps the time the
 * original scenario left after its last request.  Other properties are
 * broken at a moment, and the duration is cut to just past it.
 *
 * The shrinker edits the scenario as JSON (scenario_write.c) and parses
 * each candidate back, so every candidate is a scenario file the parser
 * accepts and the result is exactly what it writes out. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft/err.h"

#include "sim.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

bool sim_run_failed(const struct sim_scenario *sc, const struct sim_run_result *res)
{
	return sc->expect_violation ? res->violations == 0 : res->violations > 0;
}

int sim_search(const struct sim_scenario *sc, const uint64_t *list, uint64_t first, uint64_t count, FILE *out,
	       FILE *log, bool *found, uint64_t *seed, char *err, size_t errlen)
{
	struct sim_run_opts ro = {.quiet = true};
	FILE *sink = out ? out : fopen("/dev/null", "w");
	if (sink == NULL) {
		snprintf(err, errlen, "cannot open /dev/null");
		return WEFT_EIO;
	}
	struct sim_run_result res;
	uint64_t runs = 0;
	int rc = 0;
	double t0 = now_s();
	*found = false;
	while (runs < count && !*found) {
		*seed = list ? list[runs] : first + runs;
		if ((rc = sim_run(sc, *seed, &ro, sink, &res, err, errlen)) != 0)
			break;
		runs++;
		*found = sim_run_failed(sc, &res);
	}
	double wall = now_s() - t0;
	if (sink != out)
		fclose(sink);
	if (rc != 0)
		return rc;
	double rate = wall > 0 ? (double)runs / wall : 0;
	if (!*found) {
		fprintf(log, "%s: no failing seed in %llu run%s, %.2f s (%.1f seeds/s)\n", sc->name,
			(unsigned long long)runs, runs == 1 ? "" : "s", wall, rate);
		return 0;
	}
	fprintf(log, "%s: seed %llu fails, found after %llu run%s, %.2f s (%.1f seeds/s)\n", sc->name,
		(unsigned long long)*seed, (unsigned long long)runs, runs == 1 ? "" : "s", wall, rate);
	if (sc->expect_violation)
		fprintf(log, "  expected a violation, but every property held\n");
	else
		fprintf(log, "  %s\n", res.verdict.first);
	return 0;
}

/* ---- shrinking ---- */

/* The properties a shorter run violates by itself. */
#define NEEDS_TAIL (SIM_CHECK_VALIDITY | SIM_CHECK_TOTALITY | SIM_CHECK_INCLUSION | SIM_CHECK_INCLUSION_FRACTION)

struct shrink {
	uint64_t seed;
	unsigned int target;        /* the checker bit the run must still violate */
	double tail_ms;             /* NEEDS_TAIL: the original's time after its last request */
	uint64_t first_time_us;     /* when the kept candidate's violation happened */
	uint64_t probe_time_us;     /* the same for the last candidate run */
	FILE *log;
	FILE *sink;                 /* the runs' JSON documents */
	size_t runs;
};

/* Runs candidate c with the seed; true when it violates the target
 * (with s->target 0: when it violates anything, which becomes the target). */
static bool still_fails(struct shrink *s, const json_t *c)
{
	struct sim_run_opts ro = {.quiet = true};
	struct sim_scenario sc;
	struct sim_run_result res;
	char err[1024];
	char *text = sim_scenario_text(c);
	int rc = sim_scenario_parse(&sc, text, "candidate", err, sizeof(err));
	free(text);
	if (rc != 0)
		return false;
	rc = sim_run(&sc, s->seed, &ro, s->sink, &res, err, sizeof(err));
	sim_scenario_free(&sc);
	s->runs++;
	if (rc != 0 || !res.verdict.violated)
		return false;
	if (!s->target)
		s->target = res.verdict.violated & -res.verdict.violated;
	s->probe_time_us = res.verdict.first_time_us;
	return (res.verdict.violated & s->target) != 0;
}

static void keep(struct shrink *s)
{
	s->first_time_us = s->probe_time_us;
}

/* Drops the elements of c[key] one at a time, keeping each drop after
 * which the run still fails.  Returns whether anything was dropped. */
static bool drop_each(struct shrink *s, json_t *c, const char *key, const char *what)
{
	json_t *arr = json_object_get(c, key);
	bool changed = false;
	for (size_t i = 0, orig = 0; i < json_array_size(arr); orig++) {
		json_t *item = json_incref(json_array_get(arr, i));
		json_array_remove(arr, i);
		if (still_fails(s, c)) {
			keep(s);
			const char *kind = json_string_value(json_object_get(item, "kind"));
			fprintf(s->log, "  dropped %s %zu%s%s%s\n", what, orig, kind ? " (" : "", kind ? kind : "",
				kind ? ")" : "");
			changed = true;
			json_decref(item);
		} else {
			json_array_insert_new(arr, i++, item);
		}
	}
	return changed;
}

/* Halves each workload line's count while the run still fails. */
static bool halve_counts(struct shrink *s, json_t *c)
{
	json_t *work = json_object_get(c, "workload");
	bool changed = false;
	for (size_t i = 0; i < json_array_size(work); i++) {
		json_t *line = json_array_get(work, i);
		json_int_t count = json_integer_value(json_object_get(line, "count"));
		json_int_t from = count;
		while (count > 1) {
			json_object_set_new(line, "count", json_integer(count / 2));
			if (!still_fails(s, c)) {
				json_object_set_new(line, "count", json_integer(count));
				break;
			}
			keep(s);
			count /= 2;
		}
		if (count != from) {
			fprintf(s->log, "  workload line %zu: count %lld -> %lld\n", i, (long long)from, (long long)count);
			changed = true;
		}
	}
	return changed;
}

/* When the last request of candidate c is made, in ms. */
static double last_request_ms(const json_t *c)
{
	const json_t *work = json_object_get(c, "workload");
	double last = 0;
	for (size_t i = 0; i < json_array_size(work); i++) {
		const json_t *line = json_array_get(work, i);
		double t = json_number_value(json_object_get(line, "start_ms")) +
			   json_number_value(json_object_get(line, "every_ms")) *
				   (double)(json_integer_value(json_object_get(line, "count")) - 1);
		if (t > last)
			last = t;
	}
	return last;
}

static bool fails_with_duration(struct shrink *s, json_t *c, uint64_t ms)
{
	json_object_set_new(c, "duration_ms", json_integer((json_int_t)ms));
	return still_fails(s, c);
}

/* The shortest duration in whole ms, below hi, with which c still fails:
 * for NEEDS_TAIL the last request's time plus the tail; otherwise the
 * violation's time plus a quarter (and 10 ms), then bisection to within a
 * sixteenth.  0 when none shorter fails; else s->probe_time_us is the
 * violation's time in that run. */
static uint64_t shortest_failing(struct shrink *s, json_t *c, uint64_t hi)
{
	if (s->target & NEEDS_TAIL) {
		uint64_t want = (uint64_t)ceil(last_request_ms(c) + s->tail_ms);
		return want < hi && fails_with_duration(s, c, want) ? want : 0;
	}
	uint64_t lo = 0, best = 0, best_time = 0; /* lo is thought to pass */
	uint64_t probe = (s->first_time_us + s->first_time_us / 4) / 1000 + 10;
	if (probe < hi) {
		if (fails_with_duration(s, c, probe))
			hi = best = probe, best_time = s->probe_time_us;
		else
			lo = probe;
	}
	while (hi - lo > (hi / 16 > 1 ? hi / 16 : 1)) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (fails_with_duration(s, c, mid))
			hi = best = mid, best_time = s->probe_time_us;
		else
			lo = mid;
	}
	s->probe_time_us = best_time;
	return best;
}

/* Cuts the duration to the shortest that still fails. */
static bool cut_duration(struct shrink *s, json_t *c)
{
	json_t *was = json_incref(json_object_get(c, "duration_ms"));
	double from_ms = json_number_value(was);
	uint64_t best = shortest_failing(s, c, (uint64_t)from_ms);
	if (!best) {
		json_object_set_new(c, "duration_ms", was);
		return false;
	}
	json_decref(was);
	json_object_set_new(c, "duration_ms", json_integer((json_int_t)best));
	keep(s);
	fprintf(s->log, "  duration_ms %g -> %llu\n", from_ms, (unsigned long long)best);
	return true;
}

int sim_shrink(const struct sim_scenario *sc, uint64_t seed, FILE *log, char **text, char *err, size_t errlen)
{
	json_t *c = sim_scenario_to_json(sc);
	json_object_set_new(c, "seeds", json_pack("[I]", (json_int_t)seed));
	*text = NULL;
	if (sc->expect_violation) {
		fprintf(log, "not shrunk: with expect_violation the failure is a run without a violation, and every "
			     "cut would keep it\n");
		*text = sim_scenario_text(c);
		json_decref(c);
		return 0;
	}
	struct shrink s = {.seed = seed, .log = log, .sink = fopen("/dev/null", "w")};
	if (s.sink == NULL) {
		json_decref(c);
		snprintf(err, errlen, "cannot open /dev/null");
		return WEFT_EIO;
	}
	double t0 = now_s();
	if (!still_fails(&s, c)) {
		fclose(s.sink);
		json_decref(c);
		snprintf(err, errlen, "seed %llu does not fail when the scenario is written back and parsed again",
			 (unsigned long long)seed);
		return WEFT_EINVAL;
	}
	keep(&s);
	s.tail_ms = json_number_value(json_object_get(c, "duration_ms")) - last_request_ms(c);
	fprintf(log, "shrinking seed %llu, keeping each change that still violates %s:\n", (unsigned long long)seed,
		sim_checker_name(s.target));
	bool changed = true;
	while (changed) {
		changed = drop_each(&s, c, "faults", "fault");
		changed |= drop_each(&s, c, "workload", "workload line");
		changed |= halve_counts(&s, c);
		changed |= cut_duration(&s, c);
	}
	fclose(s.sink);
	size_t nfaults = json_array_size(json_object_get(c, "faults"));
	size_t nlines = json_array_size(json_object_get(c, "workload"));
	fprintf(log, "shrunk in %zu runs, %.2f s: %zu fault%s, %zu workload line%s, %g ms\n", s.runs, now_s() - t0,
		nfaults, nfaults == 1 ? "" : "s", nlines, nlines == 1 ? "" : "s",
		json_number_value(json_object_get(c, "duration_ms")));
	*text = sim_scenario_text(c);
	json_decref(c);
	return 0;
}
