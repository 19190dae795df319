/* sim_channel.c - the payment channel scenarios of tests/sim (the
 * "channel" workload, docs/sim-scenario.md) through the real weft-sim
 * binary on a few seeds, their JSON reports read back:
 *
 *   channel-honest          every payment finalizes, the cooperative close
 *                           settles, the members' ledger accounts hold the
 *                           funding again (real BIP340 signatures);
 *   channel-lossy           loss, duplicates and reordering: conservation
 *                           holds and most payments finalize;
 *   channel-crash-recover,
 *   channel-crash-last_step a member's node crashes mid-payments and
 *                           restarts on its store (whole, or without its
 *                           last step): conservation holds;
 *   channel-byzantine-overspend  a node's members propose beyond their
 *                           balance: the receivers refuse ("overspend"),
 *                           conservation holds;
 *   channel-byzantine-stale a node closes unilaterally with root 0: the
 *                           others dispute and the settlement pays the
 *                           newest root;
 *   channel-byzantine-equivocate  a node's members sign two payments with
 *                           one seq: the others keep evidence, and no
 *                           correct node's view breaks conservation;
 *   channel-broken-no_chain receivers that stop counting a sender's
 *                           payments finalize overspends:
 *                           channel_conservation must catch it. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/testutil.h"
#include "../tap.h"

#define SEEDS 3

/* Runs seeds 1..SEEDS of a scenario; the reports, one JSON per line, and
 * the exit status. */
static json_t **run(const char *name, size_t *count, int *status)
{
	const char *src = getenv("WEFT_SRC");
	char *sim = tu_bin("weft-sim"), *path, seeds[16];
	if (asprintf(&path, "%s/tests/sim/%s.json", src && *src ? src : ".", name) < 0)
		abort();
	snprintf(seeds, sizeof(seeds), "1..%d", SEEDS);
	char *argv[] = {sim, "--quiet", "--seeds", seeds, path, NULL};
	struct tu_run r;
	tu_run(&r, argv, 120000, -1);
	*status = r.status;
	if (r.status != 0)
		diag("%s: %s", name, r.err);
	json_t **docs = calloc(SEEDS + 1, sizeof(*docs));
	size_t n = 0;
	for (char *line = strtok(r.out, "\n"); line && n < SEEDS; line = strtok(NULL, "\n"))
		if ((docs[n] = json_loads(line, 0, NULL)) != NULL)
			n++;
	tu_run_free(&r);
	free(path);
	free(sim);
	*count = n;
	return docs;
}

static long long field(const json_t *doc, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(doc, "channel"), name));
}

static bool flag(const json_t *doc, const char *name)
{
	return json_is_true(json_object_get(json_object_get(doc, "channel"), name));
}

static long long refused_for(const json_t *doc, const char *why)
{
	return json_integer_value(json_object_get(json_object_get(json_object_get(doc, "channel"), "refused_by_reason"), why));
}

static const char *checker(const json_t *doc, const char *name)
{
	const char *v = json_string_value(json_object_get(json_object_get(doc, "checkers"), name));
	return v ? v : "not run";
}

static void free_docs(json_t **docs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(docs[i]);
	free(docs);
}

/* A scenario whose checkers all hold: exit 0, SEEDS reports, conservation
 * passed in each; returns the reports. */
static json_t **passing(const char *name, size_t *n)
{
	int status;
	json_t **d = run(name, n, &status);
	is_int(status, 0, "%s: weft-sim exits 0 (every property held)", name);
	is_int((int)*n, SEEDS, "%s: %d reports", name, SEEDS);
	for (size_t i = 0; i < *n; i++)
		if (!ok(strcmp(checker(d[i], "channel_conservation"), "pass") == 0,
			"%s seed %zu: channel_conservation passed (%lld checks)", name, i + 1,
			field(d[i], "conservation_checks")))
			diag("%s", json_string_value(json_object_get(d[i], "first_violation")));
	return d;
}

int main(void)
{
	size_t n;
	json_t **d = passing("channel-honest", &n);
	for (size_t i = 0; i < n; i++) {
		long long members = field(d[i], "members"), deposit = field(d[i], "deposit");
		ok(field(d[i], "finalized") == field(d[i], "payments") && field(d[i], "attempts") == field(d[i], "payments"),
		   "channel-honest seed %zu: all %lld payments finalized", i + 1, field(d[i], "payments"));
		ok(flag(d[i], "closed") && flag(d[i], "settled") &&
			   field(d[i], "members_ledger_balance") == members * deposit,
		   "channel-honest seed %zu: closed cooperatively, the ledger holds the %lld funded again", i + 1,
		   members * deposit);
		ok(field(d[i], "roots") >= field(d[i], "batches") && field(d[i], "roots_missed") == 0,
		   "channel-honest seed %zu: a root after every batch (%lld roots, %lld batches)", i + 1, field(d[i], "roots"),
		   field(d[i], "batches"));
	}
	free_docs(d, n);

	d = passing("channel-lossy", &n);
	for (size_t i = 0; i < n; i++)
		ok(field(d[i], "finalized") * 10 >= field(d[i], "payments") * 8,
		   "channel-lossy seed %zu: %lld of %lld payments finalized", i + 1, field(d[i], "finalized"),
		   field(d[i], "payments"));
	free_docs(d, n);

	const char *crashes[] = {"channel-crash-recover", "channel-crash-last_step"};
	for (size_t c = 0; c < 2; c++) {
		d = passing(crashes[c], &n);
		for (size_t i = 0; i < n; i++)
			ok(field(d[i], "finalized") * 10 >= field(d[i], "payments") * 8 && flag(d[i], "settled"),
			   "%s seed %zu: %lld of %lld payments finalized, the channel settled", crashes[c], i + 1,
			   field(d[i], "finalized"), field(d[i], "payments"));
		free_docs(d, n);
	}

	d = passing("channel-byzantine-overspend", &n);
	for (size_t i = 0; i < n; i++)
		ok(refused_for(d[i], "overspend") > 0 && flag(d[i], "settled"),
		   "channel-byzantine-overspend seed %zu: %lld overspending proposals refused by the receivers", i + 1,
		   refused_for(d[i], "overspend"));
	free_docs(d, n);

	d = passing("channel-byzantine-stale", &n);
	for (size_t i = 0; i < n; i++)
		ok(field(d[i], "commits") > 0 && field(d[i], "disputes") > 0 && flag(d[i], "settled"),
		   "channel-byzantine-stale seed %zu: the stale commit is disputed (%lld dispute events) and the "
		   "settlement pays the newest root (version %lld)",
		   i + 1, field(d[i], "disputes"), field(d[i], "newest_root"));
	free_docs(d, n);

	d = passing("channel-byzantine-equivocate", &n);
	for (size_t i = 0; i < n; i++)
		ok(field(d[i], "evidence") > 0,
		   "channel-byzantine-equivocate seed %zu: the equivocation is kept as evidence (%lld evidence events)",
		   i + 1, field(d[i], "evidence"));
	free_docs(d, n);

	int status;
	d = run("channel-broken-no_chain", &n, &status);
	is_int(status, 0, "channel-broken-no_chain: weft-sim exits 0 (the expected violation happened)");
	is_int((int)n, SEEDS, "channel-broken-no_chain: %d reports", SEEDS);
	for (size_t i = 0; i < n; i++) {
		const char *first = json_string_value(json_object_get(d[i], "first_violation"));
		ok(strcmp(checker(d[i], "channel_conservation"), "fail") == 0 && first && strstr(first, "overspend"),
		   "channel-broken-no_chain seed %zu: channel_conservation catches the finalized overspend (%s)", i + 1,
		   first ? first : "no violation");
	}
	free_docs(d, n);
	return done_testing();
}
