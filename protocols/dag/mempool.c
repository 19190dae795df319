/* mempool.c - the transactions waiting for our next vertex, stored per
 * batch rather than per transaction.
 *
 * Memory.  A FIFO ring of (transaction, digest, batch, index): the
 * transaction's bytes live in its batch's buffer, which is freed when the
 * last of its transactions leaves the ring.  Our vertices take transactions
 * from the front only, so the ring is in batch order.
 *
 * kv.  "M" seq(be64) -> a batch record: a msgpack array of bin, the
 * transactions accepted in one step (one tx.submit_batch, one tx.submit,
 * or the unordered transactions of our own vertex that fell below the GC
 * floor).  "M" alone -> the cursor: seq(be64) index(be32) of the oldest
 * transaction still waiting; every record below seq was taken.  Taking
 * transactions into a vertex rewrites the cursor and deletes the records it
 * passed, in the same step as our vertex record "O" (dag.c): one put per
 * batch and one put per vertex, where a record per transaction made the
 * LMDB pages written at each commit the daemon's largest cost
 * (docs/performance.md).  A restart loads the records from the cursor on,
 * less what the committed index holds.  Records of the earlier form (one
 * per transaction, "M" digest) are moved into one batch at the first start
 * that finds them. */
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"

#include "dag.h"

#define CURSOR_LEN 12
#define LEGACY_KEY_LEN 33

struct dag_batch {
	uint64_t seq;
	uint32_t waiting; /* of its transactions in the ring */
	uint8_t *bytes;   /* the record */
};

static void batch_key(uint8_t k[9], uint64_t seq)
{
	k[0] = 'M';
	weft_be64_put(k + 1, seq);
}

static void push(struct dag_mempool *m, struct dag_batch *b, uint32_t index, const uint8_t *tx, uint32_t len,
		 const uint8_t digest[32])
{
	if (m->count == m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 1024;
		struct dag_pending_tx *ring = malloc(cap * sizeof(*ring));
		if (ring == NULL)
			abort();
		for (uint32_t i = 0; i < m->count; i++)
			ring[i] = m->ring[(m->head + i) % m->cap];
		free(m->ring);
		m->ring = ring, m->cap = cap, m->head = 0;
	}
	struct dag_pending_tx *e = &m->ring[(m->head + m->count) % m->cap];
	e->tx = tx;
	e->len = len;
	e->batch = b;
	e->index = index;
	memcpy(e->digest, digest, 32);
	b->waiting++;
	m->count++;
	m->bytes += len;
}

struct dag_pending_tx *dag_mempool_at(struct dag_mempool *m, uint32_t i)
{
	return &m->ring[(m->head + i) % m->cap];
}

/* e leaves the ring (the caller moves the ring's ends). */
static void release(struct dag_mempool *m, struct dag_pending_tx *e)
{
	m->bytes -= e->len;
	if (--e->batch->waiting == 0) {
		free(e->batch->bytes);
		free(e->batch);
	}
	e->batch = NULL;
}

/* The recent state e (may be NULL) is: waits in our mempool or our vertex. */
bool dag_tx_in_flight(const struct dag_tx_entry *e)
{
	return e && (e->state == DAG_TX_PENDING || e->state == DAG_TX_PROPOSED);
}

/* Whether a transaction can join the mempool, beside the `adding` bytes
 * of its batch: 0 (*known false), 0 with *known when it waits here or was
 * committed, or an error. */
static int admissible(struct dag *d, size_t len, uint64_t adding, const uint8_t digest[32], bool *known)
{
	*known = dag_tx_in_flight(dag_txindex_get(&d->txindex, digest));
	if (*known)
		return 0;
	int rc = dag_dedup_get(d, digest, NULL);
	if (rc != WEFT_NOTFOUND) {
		*known = rc == 0;
		return rc;
	}
	return d->mempool.bytes + adding + len > d->mempool.max_bytes ? WEFT_EAGAIN : 0;
}

void dag_mempool_add_many(struct dag *d, size_t count, const uint8_t *const *txs, const size_t *lens,
			  const uint8_t (*digests)[32], bool *known, int *rcs)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	size_t *offs = malloc((count ? count : 1) * sizeof(*offs));
	uint32_t *ok = malloc((count ? count : 1) * sizeof(*ok));
	if (offs == NULL || ok == NULL)
		abort();
	uint32_t nok = 0;
	uint64_t adding = 0;
	/* The array header's width depends on the count: written last, into
	 * the 5 bytes reserved here (array 32). */
	weft_mpw_array(&w, 1u << 16);
	for (size_t i = 0; i < count; i++) {
		rcs[i] = admissible(d, lens[i], adding, digests[i], &known[i]);
		if (rcs[i] != 0 || known[i])
			continue;
		/* Pending at once: a second copy in this batch is known. */
		dag_txindex_set(&d->txindex, digests[i], DAG_TX_PENDING, 0, 0, 0);
		weft_mpw_bin(&w, txs[i], lens[i]);
		offs[nok] = w.len - lens[i];
		ok[nok++] = (uint32_t)i;
		adding += lens[i];
	}
	if (nok > 0) {
		w.buf[1] = (uint8_t)(nok >> 24), w.buf[2] = (uint8_t)(nok >> 16);
		w.buf[3] = (uint8_t)(nok >> 8), w.buf[4] = (uint8_t)nok;
		struct dag_batch *b = calloc(1, sizeof(*b));
		if (b == NULL)
			abort();
		b->seq = d->mempool.next_batch++;
		uint8_t k[9];
		batch_key(k, b->seq);
		d->env->ops->kv_put(d->env, k, sizeof(k), w.buf, w.len);
		b->bytes = w.buf; /* the batch owns the record's buffer */
		w.buf = NULL;
		for (uint32_t j = 0; j < nok; j++)
			push(&d->mempool, b, j, b->bytes + offs[j], (uint32_t)lens[ok[j]], digests[ok[j]]);
		weft_env_metric(d->env, "dag.tx_submitted", nok);
	}
	weft_mpw_free(&w);
	free(offs);
	free(ok);
}

int dag_mempool_add(struct dag *d, const uint8_t *tx, size_t len, const uint8_t digest[32], bool *known)
{
	int rc;
	dag_mempool_add_many(d, 1, &tx, &len, (const uint8_t(*)[32])digest, known, &rc);
	return rc;
}

void dag_mempool_take(struct dag *d, uint32_t taken)
{
	struct dag_mempool *m = &d->mempool;
	for (uint32_t i = 0; i < taken; i++)
		release(m, dag_mempool_at(m, i));
	m->head = m->cap ? (m->head + taken) % m->cap : 0;
	m->count -= taken;
	uint64_t seq = m->next_batch;
	uint32_t index = 0;
	if (m->count) {
		seq = dag_mempool_at(m, 0)->batch->seq;
		index = dag_mempool_at(m, 0)->index;
	}
	uint8_t cursor[CURSOR_LEN], k[9];
	weft_be64_put(cursor, seq);
	weft_be32_put(cursor + 8, index);
	d->env->ops->kv_put(d->env, "M", 1, cursor, sizeof(cursor));
	for (; m->low_batch < seq; m->low_batch++) {
		batch_key(k, m->low_batch);
		d->env->ops->kv_del(d->env, k, sizeof(k));
	}
}

/* ---- restart ---- */

struct loader {
	struct dag *d;
	uint64_t cursor_seq;
	uint32_t cursor_index;
	int rc;
	/* records of the per-transaction form, moved into one batch */
	struct weft_mpw legacy_keys, legacy_txs;
	uint32_t nlegacy;
};

/* One batch record into the ring, from the cursor on. */
static int load_batch(struct loader *l, uint64_t seq, const uint8_t *val, size_t vlen)
{
	struct dag_batch *b = calloc(1, sizeof(*b));
	if (b == NULL || (b->bytes = malloc(vlen)) == NULL)
		abort();
	memcpy(b->bytes, val, vlen);
	b->seq = seq;
	struct weft_mp_reader r;
	uint32_t count;
	weft_mp_reader_init(&r, b->bytes, vlen);
	int rc = weft_mp_read_array(&r, &count) || count == 0 ? WEFT_ECORRUPT : 0;
	uint32_t first = seq == l->cursor_seq ? l->cursor_index : 0;
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		const uint8_t *tx;
		uint32_t len;
		uint8_t digest[32];
		if (weft_mp_read_bin(&r, &tx, &len) || len == 0) {
			rc = WEFT_ECORRUPT;
		} else if (i >= first) {
			weft_hash(digest, tx, len);
			push(&l->d->mempool, b, i, tx, len, digest);
		}
	}
	if (rc == 0 && weft_mp_remaining(&r))
		rc = WEFT_ECORRUPT;
	/* A malformed record leaves what it pushed (the batch stays alive
	 * through them); init fails. */
	if (b->waiting == 0) {
		free(b->bytes);
		free(b);
	}
	return rc;
}

static int load_record(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct loader *l = arg;
	struct dag *d = l->d;
	if (klen == 9) {
		uint64_t seq = weft_be64_get((const uint8_t *)key + 1);
		if (seq < l->cursor_seq)
			return 0; /* taken; its delete was not reached (cannot happen: same step) */
		if ((l->rc = load_batch(l, seq, val, vlen)) != 0) {
			weft_env_log(d->env, WEFT_LOG_ERROR, "dag.mempool", "batch %llu: a malformed record",
				     (unsigned long long)seq);
			return l->rc;
		}
		d->mempool.next_batch = seq + 1;
	} else if (klen == LEGACY_KEY_LEN && vlen > 0 && vlen <= d->tx_max) {
		weft_mpw_bin(&l->legacy_keys, key, klen);
		weft_mpw_bin(&l->legacy_txs, val, vlen);
		l->nlegacy++;
	}
	return 0;
}

/* The per-transaction records become one batch (and are deleted). */
static void move_legacy(struct loader *l)
{
	struct dag *d = l->d;
	const uint8_t **txs = malloc(l->nlegacy * sizeof(*txs));
	size_t *lens = malloc(l->nlegacy * sizeof(*lens));
	uint8_t(*digests)[32] = malloc(l->nlegacy * sizeof(*digests));
	bool *known = malloc(l->nlegacy * sizeof(*known));
	int *rcs = malloc(l->nlegacy * sizeof(*rcs));
	if (txs == NULL || lens == NULL || digests == NULL || known == NULL || rcs == NULL)
		abort();
	struct weft_mp_reader kr, tr;
	weft_mp_reader_init(&kr, l->legacy_keys.buf, l->legacy_keys.len);
	weft_mp_reader_init(&tr, l->legacy_txs.buf, l->legacy_txs.len);
	for (uint32_t i = 0; i < l->nlegacy; i++) {
		const uint8_t *k;
		uint32_t klen, tlen;
		weft_mp_read_bin(&kr, &k, &klen);
		weft_mp_read_bin(&tr, &txs[i], &tlen);
		lens[i] = tlen;
		weft_hash(digests[i], txs[i], tlen);
		d->env->ops->kv_del(d->env, k, klen);
	}
	dag_mempool_add_many(d, l->nlegacy, txs, lens, (const uint8_t(*)[32])digests, known, rcs);
	weft_env_log(d->env, WEFT_LOG_INFO, "dag.mempool", "moved %u per-transaction records into batch records",
		     l->nlegacy);
	free(txs), free(lens), free(digests), free(known), free(rcs);
}

int dag_mempool_load(struct dag *d)
{
	struct loader l = {.d = d};
	const void *val;
	size_t vlen;
	int rc = d->env->ops->kv_get(d->env, "M", 1, &val, &vlen);
	if (rc == 0 && vlen == CURSOR_LEN) {
		l.cursor_seq = weft_be64_get(val);
		l.cursor_index = weft_be32_get((const uint8_t *)val + 8);
	} else if (rc != WEFT_NOTFOUND) {
		return rc == 0 ? WEFT_ECORRUPT : rc;
	}
	d->mempool.next_batch = d->mempool.low_batch = l.cursor_seq;
	weft_mpw_init(&l.legacy_keys);
	weft_mpw_init(&l.legacy_txs);
	rc = d->env->ops->kv_scan(d->env, "M", 1, "N", 1, load_record, &l);
	if (rc == 0)
		rc = l.rc;
	/* A transaction committed meanwhile (through another node's vertex)
	 * never comes back; the rest are pending. */
	struct dag_mempool *m = &d->mempool;
	uint32_t keep = 0;
	for (uint32_t i = 0; i < m->count; i++) {
		struct dag_pending_tx *e = dag_mempool_at(m, i);
		int got = rc == 0 ? dag_dedup_get(d, e->digest, NULL) : WEFT_NOTFOUND;
		if (got == 0) {
			release(m, e);
			continue;
		}
		if (got != WEFT_NOTFOUND)
			rc = got;
		*dag_mempool_at(m, keep) = *e;
		dag_txindex_set(&d->txindex, dag_mempool_at(m, keep++)->digest, DAG_TX_PENDING, 0, 0, 0);
	}
	m->count = keep;
	if (rc == 0 && l.nlegacy)
		move_legacy(&l);
	weft_mpw_free(&l.legacy_keys);
	weft_mpw_free(&l.legacy_txs);
	return rc;
}

void dag_mempool_free(struct dag_mempool *m)
{
	for (uint32_t i = 0; i < m->count; i++)
		release(m, dag_mempool_at(m, i));
	free(m->ring);
	memset(m, 0, sizeof(*m));
}
