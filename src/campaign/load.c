/* load.c - the campaign's transaction load: one thread per load node
 * submits unique transactions with tx.submit at its share of the rate,
 * and records each one (its BLAKE2b-256 digest, computed here as the DAG
 * does, the node, when it was sent and whether the node acknowledged it).
 * A thread that falls more than a second behind (its node paused, killed
 * or partitioned) skips the slots it missed rather than bursting.  The
 * transactions are opaque to the ledger: "wc", the run's nonce, the node,
 * the sequence number, padded to the manifest's size. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "weft/crypto.h"
#include "weft/rpc_client.h"
#include "weft/util.h"

#include "campaign.h"

#define SUBMIT_TIMEOUT_MS 2000

struct load_thread {
	struct campaign_load *l;
	uint32_t node;
	double rate;
	pthread_t th;
	struct campaign_tx *txs;
	size_t n, cap;
};

struct campaign_load {
	const struct campaign_manifest *m;
	const struct campaign_testnet *t;
	volatile int stop;
	uint64_t nonce;
	struct load_thread threads[CAMPAIGN_MAX_NODES];
	uint32_t nthreads;
};

/* One submission; its record is appended to th->txs. */
static void submit(struct load_thread *th, uint64_t seq)
{
	const struct campaign_manifest *m = th->l->m;
	char *data = weft_xmalloc(m->tx_size + 1);
	int k = snprintf(data, m->tx_size + 1, "wc%012" PRIx64 "n%uk%" PRIu64, th->l->nonce, th->node, seq);
	memset(data + k, '.', m->tx_size - (size_t)k);
	data[m->tx_size] = '\0';

	if (th->n == th->cap) {
		th->cap = th->cap ? 2 * th->cap : 1024;
		th->txs = weft_xrealloc(th->txs, th->cap, sizeof(*th->txs));
	}
	struct campaign_tx *tx = &th->txs[th->n++];
	memset(tx, 0, sizeof(*tx));
	weft_hash(tx->digest, data, m->tx_size);
	tx->node = th->node;
	tx->sent_s = campaign_now();

	json_t *params = json_pack("[{s:s}]", "data", data), *result = NULL, *error = NULL;
	int rc = weft_rpc_client_call_once(th->l->t->socket[th->node], "tx.submit", params, SUBMIT_TIMEOUT_MS, &result,
					   &error);
	const char *digest = json_string_value(json_object_get(result, "digest"));
	char hex[65];
	weft_hex_encode(hex, tx->digest, 32);
	if (rc == 0 && digest) {
		tx->state = CAMPAIGN_TX_ACKED;
		tx->acked_s = campaign_now();
		tx->wrong_digest = strcmp(digest, hex) != 0;
	} else {
		/* An error answer, or none (a node that is down, or frozen
		 * and may take it when it thaws). */
		tx->state = rc == 0 ? CAMPAIGN_TX_REFUSED : CAMPAIGN_TX_UNKNOWN;
	}
	json_decref(params);
	json_decref(result);
	json_decref(error);
	free(data);
}

static void *run(void *arg)
{
	struct load_thread *th = arg;
	double t0 = campaign_now();
	uint64_t seq = 0;

	while (!th->l->stop) {
		double now = campaign_now(), due = t0 + (double)seq / th->rate;
		if (now < due) {
			double left = due - now < 0.05 ? due - now : 0.05;
			struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(left * 1e9)};
			nanosleep(&ts, NULL);
			continue;
		}
		if (now - due > 1.0)
			seq = (uint64_t)((now - t0) * th->rate);
		submit(th, seq++);
	}
	return NULL;
}

struct campaign_load *campaign_load_start(const struct campaign_manifest *m, const struct campaign_testnet *t)
{
	struct campaign_load *l = weft_xcalloc(1, sizeof(*l));
	uint32_t count = (uint32_t)__builtin_popcount(m->load_from);

	l->m = m;
	l->t = t;
	randombytes_buf(&l->nonce, sizeof(l->nonce));
	l->nonce &= 0xffffffffffffull;
	for (uint32_t i = 0; i < m->n; i++) {
		if (!(m->load_from & (1u << i)))
			continue;
		struct load_thread *th = &l->threads[l->nthreads++];
		th->l = l;
		th->node = i;
		th->rate = m->rate / count;
		if (pthread_create(&th->th, NULL, run, th) != 0)
			abort();
	}
	return l;
}

void campaign_load_stop(struct campaign_load *l, struct campaign_tx **txs, size_t *ntxs)
{
	size_t total = 0, o = 0;

	l->stop = 1;
	for (uint32_t k = 0; k < l->nthreads; k++) {
		pthread_join(l->threads[k].th, NULL);
		total += l->threads[k].n;
	}
	*txs = weft_xcalloc(total + 1, sizeof(**txs));
	for (uint32_t k = 0; k < l->nthreads; k++) {
		memcpy(*txs + o, l->threads[k].txs, l->threads[k].n * sizeof(**txs));
		o += l->threads[k].n;
		free(l->threads[k].txs);
	}
	*ntxs = total;
	free(l);
}
