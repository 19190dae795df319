/* report.c - `weft-campaign report`: a markdown table of campaign
 * directories (their result.json and checks.json) and, per campaign, a
 * gnuplot chart of each node's commit rate (committed transactions per
 * second, from metrics.tsv) with the perturbation windows shaded and
 * named.  The markdown goes to stdout, or with --into FILE replaces the
 * section between <!-- campaign-report --> and <!-- /campaign-report -->
 * of FILE (appended when FILE has none), as tests/bench/lib.sh does for
 * docs/performance.md.  Charts go to IMAGES/NAME.png and are linked as
 * BASENAME(IMAGES)/NAME.png, relative to the markdown file's directory. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/util.h"

#include "campaign.h"

#define BEGIN "<!-- campaign-report -->"
#define END "<!-- /campaign-report -->"

static json_t *load(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return json_load_file(path, 0, NULL);
}

/* Writes DATA: per node (a gnuplot index each) "t rate" lines. */
static int rates(const char *dir, const char *data, uint32_t nodes)
{
	char path[4096], line[1024];
	snprintf(path, sizeof(path), "%s/metrics.tsv", dir);
	FILE *in = fopen(path, "r"), *out = fopen(data, "w");
	if (!in || !out) {
		if (in)
			fclose(in);
		if (out)
			fclose(out);
		return WEFT_EIO;
	}
	for (uint32_t node = 0; node < nodes; node++) {
		double last_t = NAN, last_txs = 0;
		rewind(in);
		fprintf(out, "# node %u\n", node);
		while (fgets(line, sizeof(line), in)) {
			double t, txs;
			unsigned n;
			int up;
			if (sscanf(line, "%lf\t%u\t%d\t%lf", &t, &n, &up, &txs) != 4 || n != node)
				continue;
			if (!up) {
				fprintf(out, "%.3f 0\n", t);
				continue;
			}
			if (!isnan(last_t) && t > last_t)
				fprintf(out, "%.3f %.3f\n", t, (txs - last_txs) / (t - last_t));
			last_t = t;
			last_txs = txs;
		}
		fprintf(out, "\n\n");
	}
	fclose(in);
	fclose(out);
	return 0;
}

/* IMAGES/NAME.png for the campaign in dir; 0 or a failure. */
static int chart(const char *dir, const json_t *result, const char *png)
{
	const char *name = json_string_value(json_object_get(result, "name"));
	uint32_t nodes = (uint32_t)json_integer_value(json_object_get(result, "nodes"));
	char data[] = "/tmp/weft-campaign-rates.XXXXXX", script[] = "/tmp/weft-campaign-plot.XXXXXX";
	int fd = mkstemp(data), sfd = mkstemp(script);
	if (fd < 0 || sfd < 0)
		return WEFT_EIO;
	close(fd);
	int rc = rates(dir, data, nodes);
	FILE *gp = fdopen(sfd, "w");
	if (rc == 0 && gp) {
		fprintf(gp, "set terminal pngcairo size 900,360\nset output '%s'\n", png);
		fprintf(gp, "set title '%s: committed transactions per second per node' noenhanced\n", name);
		fprintf(gp, "set xlabel 'seconds since the load started'\nset ylabel 'tx/s'\nset grid\n");
		fprintf(gp, "set key outside right\nset yrange [0:*]\nset xrange [0:*]\n");
		size_t i;
		json_t *w;
		json_array_foreach(json_object_get(result, "windows"), i, w) {
			double a = json_number_value(json_object_get(w, "applied"));
			json_t *h = json_object_get(w, "healed");
			const char *fault = json_string_value(json_object_get(w, "fault"));
			if (json_is_number(h))
				fprintf(gp, "set object %zu rect from %.2f, graph 0 to %.2f, graph 1 fc rgb '#f4cccc' fs solid 0.5 "
					    "noborder behind\n",
					i + 1, a, json_number_value(h));
			else
				fprintf(gp, "set arrow %zu from %.2f, graph 0 to %.2f, graph 1 nohead lc rgb '#cc0000'\n", i + 1, a, a);
			fprintf(gp, "set label %zu '%s' at %.2f, graph %.2f noenhanced font ',8'\n", i + 1, fault ? fault : "?", a,
				0.95 - 0.06 * (double)(i % 3));
		}
		fprintf(gp, "plot ");
		for (uint32_t n = 0; n < nodes; n++)
			fprintf(gp, "%s'%s' index %u using 1:2 with lines title 'node %u'", n ? ", " : "", data, n, n);
		fprintf(gp, "\n");
		fclose(gp);
		char *argv[] = {"gnuplot", script, NULL};
		char *out;
		int st = campaign_exec(argv, 60, true, NULL, &out);
		if (st != 0)
			fprintf(stderr, "weft-campaign: report: gnuplot failed for %s: %s\n", name, out);
		free(out);
		rc = st == 0 ? 0 : WEFT_EIO;
	} else if (gp) {
		fclose(gp);
	}
	unlink(data);
	unlink(script);
	return rc;
}

static void cell_time(FILE *md, const json_t *v)
{
	if (json_is_number(v))
		fprintf(md, "%.1f s", json_number_value(v));
	else
		fprintf(md, "-");
}

static int write_markdown(FILE *md, char *const dirs[], int ndirs, const char *images)
{
	const char *base = strrchr(images, '/') ? strrchr(images, '/') + 1 : images;
	char date[32];
	time_t now = time(NULL);
	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));

	fprintf(md, "## Results\n\nWritten by `weft-campaign report` (`make campaign-report`) on %s from %d campaign "
		    "director%s.\n\n",
		date, ndirs, ndirs == 1 ? "y" : "ies");
	fprintf(md, "| campaign | nodes | faults | acknowledged | committed | safety violations | recover p50 | recover "
		    "max | verdict |\n|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < ndirs; i++) {
		json_t *r = load(dirs[i], "result.json");
		if (!r) {
			fprintf(stderr, "weft-campaign: report: %s/result.json cannot be read; skipped\n", dirs[i]);
			continue;
		}
		fprintf(md, "| %s | %lld | %s | %lld | %lld | %lld | ", json_string_value(json_object_get(r, "name")),
			json_integer_value(json_object_get(r, "nodes")), json_string_value(json_object_get(r, "faults")),
			json_integer_value(json_object_get(r, "acknowledged")),
			json_integer_value(json_object_get(r, "committed")),
			json_integer_value(json_object_get(r, "violations")));
		cell_time(md, json_object_get(r, "recover_p50_s"));
		fprintf(md, " | ");
		cell_time(md, json_object_get(r, "recover_max_s"));
		fprintf(md, " | %s |\n", json_string_value(json_object_get(r, "verdict")));
		json_decref(r);
	}
	for (int i = 0; i < ndirs; i++) {
		json_t *r = load(dirs[i], "result.json"), *checks = load(dirs[i], "checks.json");
		if (!r) {
			json_decref(checks);
			continue;
		}
		const char *name = json_string_value(json_object_get(r, "name"));
		char png[4096];
		snprintf(png, sizeof(png), "%s/%s.png", images, name);
		fprintf(md, "\n### %s\n\n%g s of load at %g tx/s; faults: %s.\n\n", name,
			json_number_value(json_object_get(r, "duration_s")), json_number_value(json_object_get(r, "rate")),
			json_string_value(json_object_get(r, "faults")));
		if (chart(dirs[i], r, png) == 0)
			fprintf(md, "![commit rate of %s, perturbations shaded](%s/%s.png)\n\n", name, base, name);
		size_t k;
		json_t *c;
		json_array_foreach(checks, k, c)
			fprintf(md, "- `%s` %s: %s\n", json_string_value(json_object_get(c, "name")),
				json_is_true(json_object_get(c, "pass")) ? "pass" : "**FAIL**",
				json_string_value(json_object_get(c, "detail")));
		json_decref(r);
		json_decref(checks);
	}
	return 0;
}

/* Replaces (or appends) the marked section of the file at path with text. */
static int splice(const char *path, const char *text)
{
	FILE *f = fopen(path, "r");
	char *old = NULL;
	size_t len = 0;
	if (f) {
		fseek(f, 0, SEEK_END);
		long size = ftell(f);
		rewind(f);
		old = weft_xmalloc((size_t)(size > 0 ? size : 0) + 1);
		len = fread(old, 1, (size_t)(size > 0 ? size : 0), f);
		old[len] = '\0';
		fclose(f);
	}
	char *b = old ? strstr(old, BEGIN) : NULL, *e = b ? strstr(b, END) : NULL;
	size_t head = b ? (size_t)(b - old) : len;
	const char *tail = e ? e + strlen(END) : "\n";
	size_t outlen = head + strlen(BEGIN) + strlen(text) + strlen(END) + strlen(tail) + 8;
	char *out = weft_xmalloc(outlen);
	snprintf(out, outlen, "%.*s%s%s\n%s\n%s%s", (int)head, old ? old : "", head && old[head - 1] != '\n' ? "\n" : "",
		 BEGIN, text, END, tail);
	int rc = weft_write_file_atomic(path, out, strlen(out), 0644);
	free(out);
	free(old);
	return rc;
}

int campaign_report(char *const dirs[], int ndirs, const char *into, const char *images)
{
	char *text = NULL;
	size_t len = 0;

	if (mkdir(images, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "weft-campaign: report: cannot create %s: %s\n", images, strerror(errno));
		return CAMPAIGN_INFRA;
	}
	FILE *md = into ? open_memstream(&text, &len) : stdout;
	write_markdown(md, dirs, ndirs, images);
	if (!into)
		return CAMPAIGN_PASS;
	fclose(md);
	int rc = splice(into, text);
	free(text);
	if (rc < 0) {
		fprintf(stderr, "weft-campaign: report: cannot write %s: %s\n", into, weft_strerror(rc));
		return CAMPAIGN_INFRA;
	}
	fprintf(stderr, "weft-campaign: report: %d campaign%s into %s, charts in %s\n", ndirs, ndirs == 1 ? "" : "s", into,
		images);
	return CAMPAIGN_PASS;
}
