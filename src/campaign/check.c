/* check.c - what a campaign judges, on the honest nodes only (neither
 * Byzantine nor crashed for good), after the load stopped and the nodes
 * caught up (docs/campaigns.md, "Checks"):
 *
 *   same_state     every two samples (dag.info, once a second, the whole
 *                  run) of honest nodes at the same committed_txs carry the
 *                  same order_hash and ledger_hash, and every transaction of
 *                  the load sits at the same log position on every honest
 *                  node (tx.status)
 *   no_loss        every transaction an honest node acknowledged
 *                  (tx.submit answered its digest) is committed on every
 *                  honest node
 *   no_duplicates  on each honest node, no two transactions of the load
 *                  share a log position and, without Byzantine nodes,
 *                  committed_txs equals the number of distinct load
 *                  transactions committed: a transaction ordered twice takes
 *                  two positions but tx.status shows one, so it would show
 *                  as a position no load transaction holds
 *   progress       after each heal every honest node commits an anchor of a
 *                  later round (committed_round above any it reported
 *                  before) within bounds.recover_s, and at the end all
 *                  honest nodes report the same committed_txs
 *
 * tx.status is asked for every transaction submitted, acknowledged or not
 * (its digest is known), on one connection per node. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/rpc_client.h"
#include "weft/util.h"

#include "campaign.h"

#define STATUS_TIMEOUT_MS 5000

static void add_check(struct campaign_result *r, const char *name, bool pass, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add_check(struct campaign_result *r, const char *name, bool pass, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	json_array_append_new(r->checks, json_pack("{s:s,s:b,s:s}", "name", name, "pass", pass, "detail", detail));
	r->pass = r->pass && pass;
}

/* The nodes crashed for good by time t (NAN: by the end). */
static uint32_t crashed(const struct campaign_history *h, double t)
{
	uint32_t mask = 0;
	for (size_t k = 0; k < h->m->nsteps; k++) {
		const struct campaign_step *s = &h->m->steps[k];
		if (!s->is_heal && s->fault == WEFT_FAULT_CRASH && !isnan(h->windows[k].applied) &&
		    (isnan(t) || h->windows[k].applied <= t))
			mask |= s->nodes;
	}
	return mask;
}

static int by_height(const void *a, const void *b)
{
	const struct campaign_sample *x = a, *y = b;
	if (x->committed_txs != y->committed_txs)
		return x->committed_txs < y->committed_txs ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* (a), first half: equal hashes at equal heights over the whole run. */
static uint64_t sample_agreement(const struct campaign_history *h, char *detail, size_t cap, uint64_t *heights)
{
	struct campaign_sample *s = weft_xcalloc(h->nsamples + 1, sizeof(*s));
	size_t n = 0;
	uint64_t bad = 0;

	for (size_t i = 0; i < h->nsamples; i++)
		if (h->samples[i].up && !(h->m->byzantine & (1u << h->samples[i].node)))
			s[n++] = h->samples[i];
	qsort(s, n, sizeof(*s), by_height);
	*heights = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint32_t nodes = 0;
		bool differ = false;
		while (j < n && s[j].committed_txs == s[i].committed_txs) {
			nodes |= 1u << s[j].node;
			if (strcmp(s[j].order_hash, s[i].order_hash) != 0 || strcmp(s[j].ledger_hash, s[i].ledger_hash) != 0) {
				if (!differ && bad == 0)
					snprintf(detail, cap,
						 "at committed_txs %llu node %u (%.1f s) has order %.16s ledger %.16s, node %u "
						 "(%.1f s) order %.16s ledger %.16s",
						 (unsigned long long)s[i].committed_txs, s[i].node, s[i].t, s[i].order_hash,
						 s[i].ledger_hash, s[j].node, s[j].t, s[j].order_hash, s[j].ledger_hash);
				differ = true;
			}
			j++;
		}
		if (__builtin_popcount(nodes) >= 2)
			(*heights)++;
		bad += differ;
		i = j;
	}
	free(s);
	return bad;
}

/* What tx.status says of every submitted transaction on node i:
 * pos[k] = its position, or -1 when not committed.  0, or the failure. */
static int ask_status(const struct campaign_history *h, uint32_t i, int64_t *pos, char *err, size_t errlen)
{
	struct weft_rpc_client *c;
	int rc = weft_rpc_client_connect(&c, h->t->socket[i], STATUS_TIMEOUT_MS, NULL);
	if (rc < 0) {
		snprintf(err, errlen, "node %u: cannot connect to %s: %s", i, h->t->socket[i], weft_strerror(rc));
		return rc;
	}
	for (size_t k = 0; k < h->ntxs && rc == 0; k++) {
		char hex[65];
		weft_hex_encode(hex, h->txs[k].digest, 32);
		json_t *params = json_pack("[{s:s}]", "digest", hex), *res = NULL, *error = NULL;
		rc = weft_rpc_client_call(c, "tx.status", params, STATUS_TIMEOUT_MS, &res, &error);
		if (rc < 0)
			snprintf(err, errlen, "node %u: tx.status: %s", i, weft_rpc_client_errmsg(c));
		else if (error) {
			const char *msg = json_string_value(json_object_get(error, "message"));
			snprintf(err, errlen, "node %u: tx.status: %s", i, msg ? msg : "error");
			rc = WEFT_EIO;
		}
		const char *st = json_string_value(json_object_get(res, "status"));
		pos[k] = st && strcmp(st, "committed") == 0 ? json_integer_value(json_object_get(res, "position")) : -1;
		json_decref(params);
		json_decref(res);
		json_decref(error);
	}
	weft_rpc_client_close(c);
	return rc;
}

static int by_pos(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* (d): recovery after each heal; fills r->recover_*. */
static void check_progress(const struct campaign_history *h, uint32_t honest, const uint64_t *final_txs,
			   struct campaign_result *r)
{
	const struct campaign_manifest *m = h->m;
	double *rec = weft_xcalloc(m->nsteps + 1, sizeof(*rec));
	size_t nrec = 0;
	char detail[1024] = "";
	bool pass = true;

	for (size_t k = 0; k < m->nsteps; k++) {
		const struct campaign_step *s = &m->steps[k];
		double healed = h->windows[k].healed;
		if (s->is_heal || s->fault == WEFT_FAULT_CRASH || isnan(healed))
			continue;
		double worst = 0;
		uint32_t judged = honest & ~crashed(h, healed);
		for (uint32_t i = 0; i < m->n; i++) {
			if (!(judged & (1u << i)))
				continue;
			int64_t before = -1;
			double first = NAN;
			for (size_t x = 0; x < h->nsamples; x++) {
				const struct campaign_sample *p = &h->samples[x];
				if (p->node != i || !p->up)
					continue;
				if (p->t <= healed && p->committed_round > before)
					before = p->committed_round;
			}
			for (size_t x = 0; x < h->nsamples; x++) {
				const struct campaign_sample *p = &h->samples[x];
				if (p->node == i && p->up && p->t > healed && p->committed_round > before &&
				    (isnan(first) || p->t < first))
					first = p->t;
			}
			double took = isnan(first) ? INFINITY : first - healed;
			if (took > m->recover_s && pass) {
				pass = false;
				snprintf(detail, sizeof(detail),
					 "node %u made no new commit within %g s of the heal of $.schedule[%zu] (%s at %.1f s, "
					 "healed at %.1f s)%s",
					 i, m->recover_s, k, weft_fault_name(s->fault), h->windows[k].applied, healed,
					 isnan(first) ? "" : "; it did later");
			}
			worst = took > worst ? took : worst;
		}
		rec[nrec++] = worst;
	}
	qsort(rec, nrec, sizeof(*rec), by_double);
	r->recover_p50 = r->recover_max = NAN;
	if (nrec) {
		r->recover_p50 = rec[(nrec - 1) / 2];
		r->recover_max = rec[nrec - 1];
	}
	uint64_t lo = UINT64_MAX, hi = 0;
	for (uint32_t i = 0; i < m->n; i++)
		if (honest & (1u << i)) {
			lo = final_txs[i] < lo ? final_txs[i] : lo;
			hi = final_txs[i] > hi ? final_txs[i] : hi;
		}
	if (pass && lo != hi) {
		pass = false;
		snprintf(detail, sizeof(detail), "the honest nodes did not catch up: committed_txs from %llu to %llu at the end",
			 (unsigned long long)lo, (unsigned long long)hi);
	}
	if (pass)
		snprintf(detail, sizeof(detail),
			 "%zu heals; every honest node committed again within %.1f s at worst (bound %g s); all at "
			 "committed_txs %llu at the end",
			 nrec, nrec ? r->recover_max : 0.0, m->recover_s, (unsigned long long)hi);
	add_check(r, "progress", pass, "%s", detail);
	free(rec);
}

void campaign_check(const struct campaign_history *h, struct campaign_result *r)
{
	const struct campaign_manifest *m = h->m;
	uint32_t honest = ((m->n >= 32) ? UINT32_MAX : (1u << m->n) - 1) & ~m->byzantine & ~crashed(h, NAN);
	int64_t *pos[CAMPAIGN_MAX_NODES] = {NULL};
	uint64_t final_txs[CAMPAIGN_MAX_NODES] = {0};
	char detail[1024] = "", err[512] = "";
	int failed = 0;

	memset(r, 0, sizeof(*r));
	r->checks = json_array();
	r->pass = true;
	for (size_t k = 0; k < h->ntxs; k++)
		r->acknowledged += h->txs[k].state == CAMPAIGN_TX_ACKED;

	/* What every honest node holds now. */
	for (uint32_t i = 0; i < m->n && !failed; i++) {
		if (!(honest & (1u << i)))
			continue;
		json_t *info = NULL;
		if (campaign_rpc(h->t, i, "dag.info", NULL, STATUS_TIMEOUT_MS, &info, err, sizeof(err)) < 0) {
			failed = 1;
			break;
		}
		final_txs[i] = (uint64_t)json_integer_value(json_object_get(info, "committed_txs"));
		json_decref(info);
		pos[i] = weft_xcalloc(h->ntxs + 1, sizeof(*pos[i]));
		if (ask_status(h, i, pos[i], err, sizeof(err)) < 0)
			failed = 1;
	}

	/* (a) */
	uint64_t heights, bad = sample_agreement(h, detail, sizeof(detail), &heights), moved = 0;
	size_t first_moved = 0;
	for (size_t k = 0; k < h->ntxs && !failed; k++) {
		int64_t at = -1;
		bool differs = false;
		for (uint32_t i = 0; i < m->n; i++) {
			if (!(honest & (1u << i)) || pos[i][k] < 0)
				continue;
			differs = differs || (at >= 0 && pos[i][k] != at);
			at = pos[i][k];
		}
		if (differs && moved++ == 0)
			first_moved = k;
	}
	if (failed)
		add_check(r, "same_state", false, "%s", err);
	else if (bad || moved) {
		char hex[65];
		weft_hex_encode(hex, h->txs[first_moved].digest, 32);
		add_check(r, "same_state", false, "%llu heights with different hashes%s%s; %llu transactions at different positions%s%.16s",
			  (unsigned long long)bad, bad ? ": " : "", bad ? detail : "", (unsigned long long)moved,
			  moved ? ", first " : "", moved ? hex : "");
	} else {
		add_check(r, "same_state", true,
			  "%llu heights seen on two honest nodes or more, equal order_hash and ledger_hash at each; every "
			  "committed load transaction at the same position on every honest node",
			  (unsigned long long)heights);
	}
	r->violations += bad + moved;

	/* (b) */
	uint64_t judged = 0, lost = 0, wrong = 0;
	for (size_t k = 0; k < h->ntxs && !failed; k++) {
		const struct campaign_tx *tx = &h->txs[k];
		if (tx->state != CAMPAIGN_TX_ACKED || !(honest & (1u << tx->node)))
			continue;
		judged++;
		wrong += tx->wrong_digest;
		for (uint32_t i = 0; i < m->n; i++) {
			if (!(honest & (1u << i)) || pos[i][k] >= 0)
				continue;
			if (lost++ == 0) {
				char hex[65];
				weft_hex_encode(hex, tx->digest, 32);
				snprintf(detail, sizeof(detail), "first: %.16s, acknowledged by node %u at %.1f s, not committed on node %u",
					 hex, tx->node, tx->acked_s, i);
			}
		}
	}
	if (failed)
		add_check(r, "no_loss", false, "%s", err);
	else
		add_check(r, "no_loss", lost == 0 && wrong == 0,
			  "%llu acknowledged by honest nodes (of %llu submitted); %llu (transaction, node) pairs not "
			  "committed%s%s; %llu acknowledged under another digest",
			  (unsigned long long)judged, (unsigned long long)h->ntxs, (unsigned long long)lost, lost ? "; " : "",
			  lost ? detail : "", (unsigned long long)wrong);
	r->violations += lost + wrong;

	/* (c) */
	uint64_t shared = 0, extra_total = 0;
	detail[0] = '\0';
	r->committed = UINT64_MAX;
	for (uint32_t i = 0; i < m->n && !failed; i++) {
		if (!(honest & (1u << i)))
			continue;
		int64_t *sorted = weft_xcalloc(h->ntxs + 1, sizeof(*sorted));
		size_t n = 0;
		for (size_t k = 0; k < h->ntxs; k++)
			if (pos[i][k] >= 0)
				sorted[n++] = pos[i][k];
		qsort(sorted, n, sizeof(*sorted), by_pos);
		for (size_t k = 1; k < n; k++)
			shared += sorted[k] == sorted[k - 1];
		bool beyond = n && (uint64_t)sorted[n - 1] >= final_txs[i];
		uint64_t extra = final_txs[i] > n ? final_txs[i] - n : 0;
		extra_total += extra;
		if ((beyond || extra) && !detail[0])
			snprintf(detail, sizeof(detail), "node %u: committed_txs %llu, %zu distinct load transactions committed%s",
				 i, (unsigned long long)final_txs[i], n, beyond ? ", one at a position past committed_txs" : "");
		shared += beyond;
		r->committed = n < r->committed ? n : r->committed;
		free(sorted);
	}
	if (r->committed == UINT64_MAX)
		r->committed = 0;
	if (failed)
		add_check(r, "no_duplicates", false, "%s", err);
	else if (m->byzantine)
		add_check(r, "no_duplicates", shared == 0,
			  "%llu positions shared by two load transactions; %llu positions hold transactions the load did "
			  "not submit (with Byzantine nodes these may be theirs, so they are not judged)%s%s",
			  (unsigned long long)shared, (unsigned long long)extra_total, detail[0] ? ": " : "", detail);
	else
		add_check(r, "no_duplicates", shared == 0 && extra_total == 0,
			  "%llu positions shared by two load transactions; %llu positions hold no load transaction (a "
			  "transaction ordered twice)%s%s",
			  (unsigned long long)shared, (unsigned long long)extra_total, detail[0] ? ": " : "", detail);
	r->violations += shared + (m->byzantine ? 0 : extra_total);

	/* (d) */
	check_progress(h, honest, final_txs, r);
	for (uint32_t i = 0; i < CAMPAIGN_MAX_NODES; i++)
		free(pos[i]);
}

void campaign_result_free(struct campaign_result *r)
{
	json_decref(r->checks);
	r->checks = NULL;
}
