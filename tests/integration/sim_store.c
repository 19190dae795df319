/* sim_store.c - what the storage scenarios of tests/sim must show beyond
 * their checkers (sim_suite runs those): the real weft-sim binary on a few
 * seeds, its JSON reports read back.
 *
 *   store-lie-audits       every run keeps evidence against the lying
 *                          holder (a signed wrong proof) and fails audits;
 *   store-corrupt-wire     a node whose messages are garbled on the wire
 *                          is never "proven" a liar: a proof's signature
 *                          covers its block, path, index and root, so no
 *                          evidence is kept, and no fetch returns wrong bytes;
 *   store-wiped-holder     the node that lost its disk gets shares rebuilt
 *                          (repairs stored) and every fetch succeeds;
 *   store-byzantine-holders  bad shares are refused and counted. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/testutil.h"
#include "../tap.h"

/* Runs seeds 1..3 of a scenario; the reports, one JSON per line. */
static json_t **run(const char *name, size_t *count)
{
	const char *src = getenv("WEFT_SRC");
	char *sim = tu_bin("weft-sim"), *path;
	if (asprintf(&path, "%s/tests/sim/%s.json", src && *src ? src : ".", name) < 0)
		abort();
	char *argv[] = {sim, "--quiet", "--seeds", "1..3", path, NULL};
	struct tu_run r;
	tu_run(&r, argv, 120000, -1);
	is_int(r.status, 0, "%s: weft-sim exits 0", name);
	json_t **docs = calloc(8, sizeof(*docs));
	size_t n = 0;
	for (char *line = strtok(r.out, "\n"); line && n < 8; line = strtok(NULL, "\n"))
		if ((docs[n] = json_loads(line, 0, NULL)) != NULL)
			n++;
	tu_run_free(&r);
	free(path);
	free(sim);
	*count = n;
	return docs;
}

static long long metric(const json_t *doc, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(doc, "metrics"), name));
}

static long long store_field(const json_t *doc, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(doc, "store"), name));
}

static void free_docs(json_t **docs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(docs[i]);
	free(docs);
}

int main(void)
{
	size_t n;
	json_t **d = run("store-lie-audits", &n);
	is_int((int)n, 3, "store-lie-audits: three reports");
	for (size_t i = 0; i < n; i++) {
		ok(metric(d[i], "store.evidence") >= 1 && metric(d[i], "store.audits_failed") >= 1,
		   "store-lie-audits seed %zu: the liar is caught (%lld evidence, %lld failed audits)", i + 1,
		   metric(d[i], "store.evidence"), metric(d[i], "store.audits_failed"));
		ok(store_field(d[i], "wrong_bytes") == 0 && store_field(d[i], "fetched") > 0,
		   "store-lie-audits seed %zu: %lld fetches, none wrong", i + 1, store_field(d[i], "fetched"));
	}
	free_docs(d, n);

	d = run("store-corrupt-wire", &n);
	is_int((int)n, 3, "store-corrupt-wire: three reports");
	for (size_t i = 0; i < n; i++) {
		is_int((int)metric(d[i], "store.evidence"), 0,
		       "store-corrupt-wire seed %zu: garbled messages are refused, never kept as evidence", i + 1);
		ok(metric(d[i], "store.bad_input") > 0, "store-corrupt-wire seed %zu: %lld garbled messages refused",
		   i + 1, metric(d[i], "store.bad_input"));
		ok(store_field(d[i], "wrong_bytes") == 0 && store_field(d[i], "unavailable") == 0,
		   "store-corrupt-wire seed %zu: every fetch right", i + 1);
	}
	free_docs(d, n);

	d = run("store-wiped-holder", &n);
	is_int((int)n, 3, "store-wiped-holder: three reports");
	for (size_t i = 0; i < n; i++) {
		ok(metric(d[i], "store.repairs_stored") > 0 && metric(d[i], "store.audits_missing") > 0,
		   "store-wiped-holder seed %zu: missing shares found by audits (%lld) and rebuilt (%lld)", i + 1,
		   metric(d[i], "store.audits_missing"), metric(d[i], "store.repairs_stored"));
		ok(store_field(d[i], "unavailable") == 0 && store_field(d[i], "fetched") == 30,
		   "store-wiped-holder seed %zu: all 30 fetches done", i + 1);
	}
	free_docs(d, n);

	d = run("store-byzantine-holders", &n);
	is_int((int)n, 3, "store-byzantine-holders: three reports");
	for (size_t i = 0; i < n; i++)
		ok(metric(d[i], "store.bad_shares") > 0 && store_field(d[i], "wrong_bytes") == 0 &&
			   store_field(d[i], "fetched") == 48,
		   "store-byzantine-holders seed %zu: %lld bad shares refused, 48 fetches right", i + 1,
		   metric(d[i], "store.bad_shares"));
	free_docs(d, n);
	return done_testing();
}
