/* run.c - one campaign, in CometBFT's e2e stages:
 *
 *   setup    generate the testnet into OUT/testnet (tools/docker-testnet.sh gen)
 *   start    up: the containers, until every node has all its peers
 *   load     the load and the once-a-second samples start; the campaign
 *            clock starts at 0 with them
 *   perturb  each step applied at its at_s and healed at its end
 *   heal     anything still applied is healed; the load runs to duration_s
 *   wait     the load stops; wait until the honest nodes agree on
 *            committed_txs (bounds.recover_s after the last heal at most)
 *   check    check.c, into OUT/checks.json and OUT/summary.txt
 *   stop     the nodes' logs into OUT/logs, then down and clean
 *
 * With --stage S the stages up to S run and the testnet is left up for
 * inspection (a later `--stage stop` tears it down).  On an error, and on
 * SIGINT or SIGTERM (the handler only sets a flag that every wait
 * watches), the runner goes straight to stop, so that an interrupted
 * campaign leaves no container, network or volume behind. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weft/err.h"
#include "weft/util.h"

#include "campaign.h"

#define SETTLE_MIN_S 10.0

static const char *const stage_names[] = {
	[CAMPAIGN_STAGE_SETUP] = "setup", [CAMPAIGN_STAGE_START] = "start", [CAMPAIGN_STAGE_LOAD] = "load",
	[CAMPAIGN_STAGE_PERTURB] = "perturb", [CAMPAIGN_STAGE_HEAL] = "heal", [CAMPAIGN_STAGE_WAIT] = "wait",
	[CAMPAIGN_STAGE_CHECK] = "check", [CAMPAIGN_STAGE_STOP] = "stop",
};

int campaign_stage_parse(const char *s, int *out)
{
	for (int i = 0; i <= CAMPAIGN_STAGE_STOP; i++)
		if (strcmp(s, stage_names[i]) == 0) {
			*out = i;
			return 0;
		}
	return WEFT_EINVAL;
}

static void on_signal(int sig)
{
	campaign_interrupted = sig;
}

static void install_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* mkdir -p */
static int make_dirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return WEFT_EIO;
			*p = c;
			if (c == '\0')
				return 0;
		}
	}
}

/* OUT/NAME, absolute (docker bind-mounts it). */
static char *out_path(const char *out, const char *name)
{
	char *abs = realpath(out, NULL);
	char *p = weft_xmalloc(strlen(abs ? abs : out) + strlen(name) + 2);
	sprintf(p, "%s/%s", abs ? abs : out, name);
	free(abs);
	return p;
}

__attribute__((format(printf, 2, 3))) static void say(const struct campaign_manifest *m, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "weft-campaign: %s: [%7.1f s] ", m->name, campaign_now());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The state of one run, for the stages and the teardown. */
struct run {
	const struct campaign_manifest *m;
	const struct campaign_opts *o;
	FILE *log, *tsv;
	struct campaign_testnet t;
	bool generated;
	struct campaign_perturb p;
	struct campaign_load *load;
	struct campaign_sampler *sampler;
	struct campaign_window *windows;
	struct campaign_tx *txs;
	size_t ntxs;
	double last_heal;
	char err[1024];
};

/* A schedule event: step k applied (heal false) or healed at t. */
struct event {
	double t;
	size_t k;
	bool heal;
};

static int by_time(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->heal != y->heal)
		return x->heal ? -1 : 1; /* a heal first: the node is free for the next step */
	return x->k < y->k ? -1 : x->k > y->k;
}

static int perturb(struct run *r)
{
	const struct campaign_manifest *m = r->m;
	struct event *ev = weft_xcalloc(2 * m->nsteps + 1, sizeof(*ev));
	size_t n = 0;
	int rc = 0;

	for (size_t k = 0; k < m->nsteps; k++) {
		const struct campaign_step *s = &m->steps[k];
		if (s->is_heal)
			continue;
		ev[n++] = (struct event){s->at_s, k, false};
		if (isfinite(s->end_s))
			ev[n++] = (struct event){s->end_s, k, true};
	}
	qsort(ev, n, sizeof(*ev), by_time);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct campaign_step *s = &m->steps[ev[i].k];
		if (!campaign_sleep_until(ev[i].t))
			break;
		say(m, "%s $.schedule[%zu] (%s)", ev[i].heal ? "heal" : "apply", ev[i].k, weft_fault_name(s->fault));
		rc = ev[i].heal ? campaign_perturb_heal(&r->p, ev[i].k, r->err, sizeof(r->err))
				: campaign_perturb_apply(&r->p, ev[i].k, r->err, sizeof(r->err));
		if (ev[i].heal)
			r->windows[ev[i].k].healed = r->last_heal = campaign_now();
		else
			r->windows[ev[i].k].applied = campaign_now();
	}
	free(ev);
	return rc;
}

/* Heals what is still applied (after an interrupted perturb stage). */
static int heal_all(struct run *r)
{
	for (size_t k = 0; k < r->m->nsteps; k++) {
		const struct campaign_step *s = &r->m->steps[k];
		if (s->is_heal || s->fault == WEFT_FAULT_CRASH || isnan(r->windows[k].applied) ||
		    !isnan(r->windows[k].healed))
			continue;
		say(r->m, "heal $.schedule[%zu] (%s), still applied", k, weft_fault_name(s->fault));
		int rc = campaign_perturb_heal(&r->p, k, r->err, sizeof(r->err));
		if (rc < 0)
			return rc;
		r->windows[k].healed = r->last_heal = campaign_now();
	}
	return 0;
}

/* Waits until the honest, live nodes report the same committed_txs three
 * samples in a row, or bounds.recover_s (at least SETTLE_MIN_S, for the
 * last transactions of the load) after the last heal or the end of the
 * load.  true when they agreed.  The progress check judges the bound. */
static bool wait_settled(struct run *r, uint32_t honest)
{
	double deadline = fmax(r->last_heal, campaign_now()) + fmax(r->m->recover_s, SETTLE_MIN_S);
	uint64_t last = UINT64_MAX;
	int same = 0;

	while (campaign_sleep_until(campaign_now() + 1) && campaign_now() < deadline) {
		struct campaign_sample *s;
		size_t n;
		campaign_sampler_get(r->sampler, &s, &n);
		uint64_t height[CAMPAIGN_MAX_NODES];
		uint32_t seen = 0;
		for (size_t i = n; i-- > 0 && (seen & honest) != honest;) {
			if (!(honest & (1u << s[i].node)) || (seen & (1u << s[i].node)))
				continue;
			seen |= 1u << s[i].node;
			height[s[i].node] = s[i].up ? s[i].committed_txs : UINT64_MAX - s[i].node;
		}
		free(s);
		uint64_t h0 = UINT64_MAX;
		bool equal = (seen & honest) == honest;
		for (uint32_t i = 0; i < r->m->n && equal; i++)
			if (honest & (1u << i)) {
				equal = h0 == UINT64_MAX || height[i] == h0;
				h0 = height[i];
			}
		same = equal && h0 == last ? same + 1 : 0;
		last = equal ? h0 : UINT64_MAX;
		if (same >= 2)
			return true;
	}
	return false;
}

static void write_json(const char *out, const char *name, json_t *v)
{
	char *path = out_path(out, name);
	json_dump_file(v, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
	free(path);
}

static const char *const header_fmt = "%-28s %5s  %-40s %8s %9s %10s %15s  %s\n";

/* The summary line, and OUT/summary.txt and OUT/result.json. */
static void summarize(struct run *r, const struct campaign_result *res, const char *verdict, char *line, size_t cap)
{
	const struct campaign_manifest *m = r->m;
	char *faults = campaign_fault_words(m), rec[32], nodes[8], acked[24], committed[24], viol[24];

	snprintf(nodes, sizeof(nodes), "%u", m->n);
	snprintf(acked, sizeof(acked), "%llu", (unsigned long long)res->acknowledged);
	snprintf(committed, sizeof(committed), "%llu", (unsigned long long)res->committed);
	snprintf(viol, sizeof(viol), "%llu", (unsigned long long)res->violations);
	if (isnan(res->recover_max))
		snprintf(rec, sizeof(rec), "-");
	else
		snprintf(rec, sizeof(rec), "%.1f/%.1f s", res->recover_p50, res->recover_max);
	snprintf(line, cap, header_fmt, m->name, nodes, faults, acked, committed, viol, rec, verdict);
	char *path = out_path(r->o->out, "summary.txt");
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, header_fmt, "campaign", "nodes", "faults", "acked", "committed", "violations", "recover p50/max",
			"verdict");
		fputs(line, f);
		fclose(f);
	}
	free(path);

	json_t *windows = json_array();
	for (size_t k = 0; k < m->nsteps; k++) {
		const struct campaign_step *s = &m->steps[k];
		if (s->is_heal || isnan(r->windows[k].applied))
			continue;
		json_t *w = json_pack("{s:i,s:s,s:f}", "step", (int)k, "fault", weft_fault_name(s->fault), "applied",
				      r->windows[k].applied);
		json_object_set_new(w, "healed", isnan(r->windows[k].healed) ? json_null() : json_real(r->windows[k].healed));
		json_array_append_new(windows, w);
	}
	json_t *result = json_pack("{s:s,s:i,s:s,s:f,s:f,s:I,s:I,s:I,s:o,s:o,s:s,s:o}", "name", m->name, "nodes",
				   (int)m->n, "faults", faults, "duration_s", m->duration_s, "rate", m->rate, "acknowledged",
				   (json_int_t)res->acknowledged, "committed", (json_int_t)res->committed, "violations",
				   (json_int_t)res->violations, "recover_p50_s",
				   isnan(res->recover_p50) ? json_null() : json_real(res->recover_p50), "recover_max_s",
				   isnan(res->recover_max) ? json_null() : json_real(res->recover_max), "verdict", verdict,
				   "windows", windows);
	write_json(r->o->out, "result.json", result);
	json_decref(result);
	free(faults);
}

/* The weft-sim scenario of a failing campaign, OUT/sim-scenario.json. */
static void write_sim(struct run *r)
{
	char *notes;
	json_t *sc = campaign_sim_scenario(r->m, &notes);
	write_json(r->o->out, "sim-scenario.json", sc);
	char *path = out_path(r->o->out, "sim-scenario.json");
	say(r->m, "replay in the simulator: build/bin/weft-sim %s%s%s%s", path, notes ? " (approximations: " : "",
	    notes ? notes : "", notes ? ")" : "");
	free(path);
	free(notes);
	json_decref(sc);
}

/* The stop stage: threads, logs, down + clean.  INFRA when it failed. */
static int teardown(struct run *r)
{
	if (r->load) {
		campaign_load_stop(r->load, &r->txs, &r->ntxs);
		r->load = NULL;
	}
	campaign_sampler_stop(r->sampler);
	r->sampler = NULL;
	if (!r->generated)
		return 0;
	char *logs = out_path(r->o->out, "logs");
	say(r->m, "stop: logs into %s, then down", logs);
	campaign_testnet_logs(&r->t, logs);
	free(logs);
	char err[1024];
	if (campaign_testnet_down(&r->t, err, sizeof(err)) < 0) {
		say(r->m, "stop failed: %s", err);
		return CAMPAIGN_INFRA;
	}
	return 0;
}

int campaign_run(const struct campaign_manifest *m, const struct campaign_opts *o, char *line, size_t linelen)
{
	struct run r = {.m = m, .o = o};
	struct campaign_result res = {.recover_p50 = NAN, .recover_max = NAN};
	int status = CAMPAIGN_INFRA;
	const char *verdict = "ERROR";

	install_handlers();
	campaign_clock_reset();
	r.windows = weft_xcalloc(m->nsteps + 1, sizeof(*r.windows));
	for (size_t k = 0; k < m->nsteps; k++)
		r.windows[k].applied = r.windows[k].healed = NAN;
	r.last_heal = -INFINITY;

	char *logdir = weft_xmalloc(strlen(o->out) + 8);
	sprintf(logdir, "%s/logs", o->out);
	if (make_dirs(logdir) < 0) {
		fprintf(stderr, "weft-campaign: cannot create %s: %s\n", logdir, strerror(errno));
		free(logdir);
		free(r.windows);
		return CAMPAIGN_INFRA;
	}
	free(logdir);
	char *path = out_path(o->out, "commands.log");
	r.log = fopen(path, "w");
	free(path);
	write_json(o->out, "manifest.json", m->doc);

	/* setup */
	char *others;
	if (!campaign_docker_available(o->tool, r.log, &others)) {
		say(m, "docker cannot run a testnet here: %s", others);
		free(others);
		goto out;
	}
	free(others);
	if (campaign_testnet_leftovers(r.log, &others)) {
		say(m, "a weft testnet is still there (%s): remove it first (tools/docker-testnet.sh down --dir ..., "
		       "or clean)",
		    others);
		free(others);
		goto out;
	}
	free(others);
	char *dir = out_path(o->out, "testnet");
	say(m, "setup: %u nodes into %s", m->n, dir);
	int rc = campaign_testnet_gen(&r.t, m, o->tool, dir, o->image, r.log, r.err, sizeof(r.err));
	free(dir);
	r.generated = rc == 0;
	if (rc < 0)
		goto fail;
	if (o->last_stage == CAMPAIGN_STAGE_SETUP)
		goto leave;

	/* start */
	say(m, "start: up");
	if (campaign_testnet_up(&r.t, r.err, sizeof(r.err)) < 0)
		goto fail;
	if (o->last_stage == CAMPAIGN_STAGE_START)
		goto leave;

	/* load */
	path = out_path(o->out, "metrics.tsv");
	r.tsv = fopen(path, "w");
	free(path);
	if (!r.tsv) {
		snprintf(r.err, sizeof(r.err), "cannot write metrics.tsv");
		goto fail;
	}
	campaign_clock_reset();
	say(m, "load: %g tx/s for %g s", m->rate, m->duration_s);
	r.sampler = campaign_sampler_start(&r.t, r.tsv);
	r.load = campaign_load_start(m, &r.t);
	campaign_perturb_init(&r.p, &r.t, m);

	/* perturb, heal */
	if (o->last_stage >= CAMPAIGN_STAGE_PERTURB && perturb(&r) < 0)
		goto fail;
	if (o->last_stage >= CAMPAIGN_STAGE_HEAL && !campaign_interrupted && heal_all(&r) < 0)
		goto fail;
	if (!campaign_sleep_until(m->duration_s))
		goto fail;
	campaign_load_stop(r.load, &r.txs, &r.ntxs);
	r.load = NULL;
	if (o->last_stage < CAMPAIGN_STAGE_WAIT)
		goto leave;

	/* wait */
	uint32_t honest = ((m->n >= 32) ? UINT32_MAX : (1u << m->n) - 1) & ~campaign_faulty(m);
	say(m, "wait: %zu transactions submitted; until the honest nodes agree on committed_txs", r.ntxs);
	bool settled = wait_settled(&r, honest);
	if (campaign_interrupted)
		goto fail;
	say(m, "wait: %s", settled ? "settled" : "not settled within bounds.recover_s (the checks will say)");

	/* check */
	struct campaign_history h = {.m = m, .t = &r.t, .windows = r.windows, .txs = r.txs, .ntxs = r.ntxs};
	campaign_sampler_get(r.sampler, &h.samples, &h.nsamples);
	say(m, "check");
	campaign_check(&h, &res);
	free(h.samples);
	write_json(o->out, "checks.json", res.checks);
	size_t i;
	json_t *c;
	json_array_foreach(res.checks, i, c)
		say(m, "  %-13s %s  %s", json_string_value(json_object_get(c, "name")),
		    json_is_true(json_object_get(c, "pass")) ? "pass" : "FAIL",
		    json_string_value(json_object_get(c, "detail")));
	status = res.pass ? CAMPAIGN_PASS : CAMPAIGN_FAIL;
	verdict = res.pass ? "PASS" : "FAIL";
	if (!res.pass)
		write_sim(&r);
	if (o->last_stage < CAMPAIGN_STAGE_STOP)
		goto leave;
	goto out;

fail:
	if (campaign_interrupted) {
		say(m, "interrupted by signal %d: tearing the testnet down", (int)campaign_interrupted);
		verdict = "INTERRUPTED";
	} else {
		say(m, "error: %s", r.err);
	}
	status = CAMPAIGN_INFRA;
out:
	if (teardown(&r) != 0)
		status = CAMPAIGN_INFRA;
	summarize(&r, &res, verdict, line, linelen);
	goto done;
leave:
	/* --stage: the testnet stays up; the threads end. */
	if (r.load)
		campaign_load_stop(r.load, &r.txs, &r.ntxs);
	campaign_sampler_stop(r.sampler);
	say(m, "stopped after stage %s; the testnet is up: build/bin/weft-campaign run MANIFEST --out %s --stage stop "
	       "tears it down",
	    stage_names[o->last_stage], o->out);
	snprintf(line, linelen, header_fmt, m->name, "-", "-", "-", "-", "-", "-", "LEFT UP");
	status = status == CAMPAIGN_INFRA ? CAMPAIGN_PASS : status;
done:
	campaign_perturb_free(&r.p);
	campaign_result_free(&res);
	campaign_testnet_free(&r.t);
	free(r.windows);
	free(r.txs);
	if (r.tsv)
		fclose(r.tsv);
	if (r.log)
		fclose(r.log);
	return status;
}

int campaign_stop_only(const struct campaign_opts *o)
{
	char err[1024];
	struct campaign_testnet t;
	char *dir = out_path(o->out, "testnet");
	int rc = campaign_testnet_open(&t, o->tool, dir, NULL, err, sizeof(err));
	free(dir);
	if (rc == 0)
		rc = campaign_testnet_down(&t, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "weft-campaign: stop: %s\n", err);
	else
		fprintf(stderr, "weft-campaign: stop: the testnet of %s is down\n", o->out);
	campaign_testnet_free(&t);
	return rc < 0 ? CAMPAIGN_INFRA : CAMPAIGN_PASS;
}

const char *campaign_summary_header(void)
{
	static char line[256];
	snprintf(line, sizeof(line), header_fmt, "campaign", "nodes", "faults", "acked", "committed", "violations",
		 "recover p50/max", "verdict");
	return line;
}
