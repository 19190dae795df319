/* sample.c - the campaign's metrics: one thread per node asks dag.info and
 * status once a second (on the campaign clock) and keeps the sample (height,
 * hashes, round, links) for the checks and a line of OUT/metrics.tsv for
 * the report.  A node that does not answer within the second (killed,
 * paused, restarting) gives a sample with up = false. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft/util.h"

#include "campaign.h"

#define TIMEOUT_MS 800

struct node_thread {
	struct campaign_sampler *s;
	uint32_t node;
	pthread_t th;
};

struct campaign_sampler {
	const struct campaign_testnet *t;
	FILE *tsv;
	volatile int stop;
	pthread_mutex_t lock;
	struct campaign_sample *samples;
	size_t n, cap;
	struct node_thread threads[CAMPAIGN_MAX_NODES];
};

static void sample_header(FILE *f)
{
	fprintf(f, "t_s\tnode\tup\tcommitted_txs\tcommitted_anchors\tcommitted_round\tround\tledger_height\t"
		   "mempool_txs\tduplicates_skipped\tpeers\torder_hash\tledger_hash\n");
}

static void sample_write(FILE *f, const struct campaign_sample *s)
{
	fprintf(f, "%.3f\t%u\t%d\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		   "\t%u\t%s\t%s\n",
		s->t, s->node, s->up, s->committed_txs, s->committed_anchors, s->committed_round, s->round,
		s->ledger_height, s->mempool_txs, s->duplicates_skipped, s->peers, s->order_hash[0] ? s->order_hash : "-",
		s->ledger_hash[0] ? s->ledger_hash : "-");
}

static uint64_t uint_of(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));
	return v > 0 ? (uint64_t)v : 0;
}

static void hash_of(const json_t *o, const char *key, char out[65])
{
	const char *s = json_string_value(json_object_get(o, key));
	snprintf(out, 65, "%s", s ? s : "");
}

static void take(struct campaign_sampler *s, uint32_t node, struct campaign_sample *x)
{
	const struct campaign_testnet *t = s->t;
	json_t *info = NULL, *status = NULL;
	char err[256];

	memset(x, 0, sizeof(*x));
	x->t = campaign_now();
	x->node = node;
	x->committed_round = -1;
	if (campaign_rpc(t, node, "dag.info", NULL, TIMEOUT_MS, &info, err, sizeof(err)) == 0) {
		x->up = true;
		x->committed_txs = uint_of(info, "committed_txs");
		x->committed_anchors = uint_of(info, "committed_anchors");
		if (json_is_integer(json_object_get(info, "committed_round")))
			x->committed_round = (int64_t)uint_of(info, "committed_round");
		x->round = uint_of(info, "round");
		x->ledger_height = uint_of(info, "ledger_height");
		x->mempool_txs = uint_of(info, "mempool_txs");
		x->duplicates_skipped = uint_of(info, "duplicates_skipped");
		hash_of(info, "order_hash", x->order_hash);
		hash_of(info, "ledger_hash", x->ledger_hash);
		if (campaign_rpc(t, node, "status", NULL, TIMEOUT_MS, &status, err, sizeof(err)) == 0)
			x->peers = (uint32_t)uint_of(json_object_get(status, "peers"), "connected");
	}
	json_decref(info);
	json_decref(status);
}

static void *run(void *arg)
{
	struct node_thread *nt = arg;
	struct campaign_sampler *s = nt->s;
	double tick = campaign_now();

	while (!s->stop) {
		struct campaign_sample x;
		take(s, nt->node, &x);
		pthread_mutex_lock(&s->lock);
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 1024;
			s->samples = weft_xrealloc(s->samples, s->cap, sizeof(*s->samples));
		}
		s->samples[s->n++] = x;
		sample_write(s->tsv, &x);
		fflush(s->tsv);
		pthread_mutex_unlock(&s->lock);
		while (tick <= campaign_now())
			tick += 1.0;
		while (!s->stop && campaign_now() < tick) {
			struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000000};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

struct campaign_sampler *campaign_sampler_start(const struct campaign_testnet *t, FILE *tsv)
{
	struct campaign_sampler *s = weft_xcalloc(1, sizeof(*s));

	s->t = t;
	s->tsv = tsv;
	pthread_mutex_init(&s->lock, NULL);
	sample_header(tsv);
	for (uint32_t i = 0; i < t->n; i++) {
		s->threads[i].s = s;
		s->threads[i].node = i;
		if (pthread_create(&s->threads[i].th, NULL, run, &s->threads[i]) != 0)
			abort();
	}
	return s;
}

void campaign_sampler_get(struct campaign_sampler *s, struct campaign_sample **out, size_t *n)
{
	pthread_mutex_lock(&s->lock);
	*out = weft_xcalloc(s->n + 1, sizeof(**out));
	memcpy(*out, s->samples, s->n * sizeof(**out));
	*n = s->n;
	pthread_mutex_unlock(&s->lock);
}

void campaign_sampler_stop(struct campaign_sampler *s)
{
	if (!s)
		return;
	s->stop = 1;
	for (uint32_t i = 0; i < s->t->n; i++)
		pthread_join(s->threads[i].th, NULL);
	pthread_mutex_destroy(&s->lock);
	free(s->samples);
	free(s);
}
