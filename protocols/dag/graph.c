/* graph.c - the DAG itself: taking delivered vertices in, holding those
 * whose parents are missing, the commit rule, the deterministic order, the
 * application and delivery upcalls, garbage collection and the kv records.
 *
 * Slots.  Round r holds one slot per author.  A slot is filled by the
 * vertex the BRB delivered for (author, r), identical at every honest
 * node, or killed when that delivery was invalid; a vertex referencing a
 * killed slot, or a digest other than the slot's, can never be inserted and
 * is killed too.  A vertex is inserted once every parent is (parents below
 * the garbage-collection floor count as present); until then it waits on
 * its missing parents' slots.
 *
 * Commit.  Anchor A of even round r commits when commit_quorum inserted
 * round r + 1 vertices reference it (sparse 2f + 1, dense f + 1).  Then,
 * from A back to the last committed anchor, each earlier anchor with a path
 * from the latest one taken is committed before it.  Each committed
 * anchor's causal history, minus what was ordered already, is ordered by
 * (round, author) and its transactions go to the application and the layer above
 * with consecutive log positions, except those the committed index holds
 * already (dedup.c: each transaction is ordered once within the horizon).
 * docs/protocols/sparse-dag.md has the argument that every honest node
 * commits the same anchors in the same order.
 *
 * kv.  "V" round(be64) author(be32) -> vertex bytes; "S" -> our progress
 * and the ordering state (written in the callback that changes it, so a
 * restart neither re-delivers nor makes a second vertex for a round).  The
 * committed index's records are "E" (dedup.c), the mempool's "M" and our
 * own vertices' "O" (dag.c), the application's the ledger's "A" and "H";
 * the BRB child's start with its channel byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"

#include "dag.h"

#define STATE_KEY "S"
/* Version 3 added own_from (a version 2 record loads with own_from 0). */
#define STATE_VERSION 3
#define STATE_LEN_V2 (1 + 8 + 1 + 8 + 8 + 8 + 8 + 8 + 32 + 8 + 8)
#define STATE_LEN (STATE_LEN_V2 + 8)

static void grow(void ***arr, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void **a = realloc(*arr, c * sizeof(void *));
	if (a == NULL)
		abort();
	*arr = a;
	*cap = c;
}

static void push(struct dag_vertex ***arr, size_t *len, size_t *cap, struct dag_vertex *v)
{
	grow((void ***)arr, cap, *len + 1);
	(*arr)[(*len)++] = v;
}

/* ---- rounds ---- */

struct dag_round *dag_round_get(struct dag *d, uint64_t round, bool create)
{
	if (round < d->floor || round - d->floor >= d->ring_cap)
		return NULL;
	struct dag_round *R = &d->ring[round % d->ring_cap];
	if (R->round == round)
		return R;
	if (!create)
		return NULL;
	/* Entries below the floor were emptied by dag_gc. */
	R->round = round;
	R->slots = calloc(d->n, sizeof(*R->slots));
	if (R->slots == NULL)
		abort();
	R->inserted = R->votes = 0;
	return R;
}

static void round_free(struct dag *d, struct dag_round *R)
{
	for (uint32_t a = 0; R->slots && a < d->n; a++) {
		dag_vertex_free(R->slots[a].v);
		free(R->slots[a].waiters);
	}
	free(R->slots);
	R->slots = NULL;
	R->round = UINT64_MAX;
}

struct dag_vertex *dag_inserted(struct dag *d, uint64_t round, uint32_t author)
{
	struct dag_round *R = dag_round_get(d, round, false);
	if (R == NULL)
		return NULL;
	struct dag_vertex *v = R->slots[author].v;
	return v && v->inserted ? v : NULL;
}

void dag_vertex_key(uint8_t k[13], uint64_t round, uint32_t author)
{
	k[0] = 'V';
	weft_be64_put(k + 1, round);
	weft_be32_put(k + 9, author);
}

/* ---- ordering ---- */

struct dag_ref dag_parent(const struct dag_vertex *v, uint32_t k)
{
	if (k < v->nrefs)
		return (struct dag_ref){v->round - 1, v->refs[k], v->ref_digest[k]};
	const struct dag_weak_ref *w = &v->weak[k - v->nrefs];
	return (struct dag_ref){w->round, w->author, w->digest};
}

static bool refs_author(const struct dag_vertex *v, uint32_t author)
{
	uint32_t lo = 0, hi = v->nrefs;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (v->refs[mid] == author)
			return true;
		if (v->refs[mid] < author)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool dag_path(struct dag *d, struct dag_vertex *from, const struct dag_vertex *to)
{
	d->stamp++;
	d->nhist = 0;
	from->mark = d->stamp;
	push(&d->hist, &d->nhist, &d->caphist, from);
	for (size_t i = 0; i < d->nhist; i++) {
		struct dag_vertex *x = d->hist[i];
		if (x->round == to->round + 1) {
			if (refs_author(x, to->author))
				return true;
			continue;
		}
		for (uint32_t k = 0; k < x->nrefs; k++) {
			struct dag_vertex *p = dag_inserted(d, x->round - 1, x->refs[k]);
			if (p && p->mark != d->stamp) {
				p->mark = d->stamp;
				push(&d->hist, &d->nhist, &d->caphist, p);
			}
		}
	}
	return false;
}

static int by_round_author(const void *a, const void *b)
{
	const struct dag_vertex *x = *(struct dag_vertex *const *)a, *y = *(struct dag_vertex *const *)b;
	if (x->round != y->round)
		return x->round < y->round ? -1 : 1;
	return x->author < y->author ? -1 : x->author > y->author;
}

/* The lowest round the next anchor's history may take vertices from: a
 * function of the committed sequence alone (gc_depth below the previous
 * committed anchor), so every node orders the same vertices however its
 * callbacks and garbage collection fell. */
static uint64_t order_floor(const struct dag *d)
{
	return d->has_committed && d->committed_round > d->gc_depth ? d->committed_round - d->gc_depth : 0;
}

/* Collects the not yet ordered causal history of v, along strong and weak
 * references, into d->hist. */
static void history(struct dag *d, struct dag_vertex *v)
{
	uint64_t floor = order_floor(d);
	d->stamp++;
	d->nhist = 0;
	v->mark = d->stamp;
	push(&d->hist, &d->nhist, &d->caphist, v);
	for (size_t i = 0; i < d->nhist; i++) {
		struct dag_vertex *x = d->hist[i];
		for (uint32_t k = 0; k < x->nrefs + x->nweak; k++) {
			struct dag_ref ref = dag_parent(x, k);
			struct dag_vertex *p = dag_inserted(d, ref.round, ref.author);
			if (p && !p->ordered && p->mark != d->stamp && p->round >= floor) {
				p->mark = d->stamp;
				push(&d->hist, &d->nhist, &d->caphist, p);
			}
		}
	}
}

/* Orders v's transactions as part of the history of the anchor of round
 * anchor_round. */
static void order_vertex(struct dag *d, struct dag_vertex *v, uint64_t anchor_round)
{
	size_t off = 0;
	uint32_t i = 0, len;
	const uint8_t *tx;
	v->ordered = true;
	d->committed_vertices++;
	weft_env_log(d->env, WEFT_LOG_DEBUG, "dag.order", "round=%llu author=%u anchor=%llu txs=%u",
		     (unsigned long long)v->round, v->author, (unsigned long long)anchor_round, v->ntx);
	/* The committed index is large and probed at random: its slots for
	 * the next few transactions are fetched while this one is ordered. */
	for (uint32_t k = 0; k < DEDUP_PREFETCH && k < v->ntx; k++)
		dag_dedup_prefetch(d, v->tx_digests[k]);
	while (dag_vertex_next_tx(v, &off, &i, &tx, &len) == 0) {
		const uint8_t *digest = v->tx_digests[i - 1];
		if (i - 1 + DEDUP_PREFETCH < v->ntx)
			dag_dedup_prefetch(d, v->tx_digests[i - 1 + DEDUP_PREFETCH]);
		/* Committed already, by an earlier vertex of this anchor's history
		 * or an anchor within the horizon: not applied, hashed, counted or
		 * delivered again. */
		int dup = dag_dedup_get(d, digest, NULL);
		if (dup == 0) {
			d->duplicates_skipped++;
			weft_env_metric(d->env, "dag.duplicates_skipped", 1);
			continue;
		}
		if (dup != WEFT_NOTFOUND)
			weft_env_log(d->env, WEFT_LOG_ERROR, "dag.dedup",
				     "position=%llu rc=%s: the committed index cannot follow",
				     (unsigned long long)d->committed_txs, weft_strerror(dup));
		struct weft_hasher h;
		weft_hasher_init(&h);
		weft_hasher_update(&h, d->order_hash, sizeof(d->order_hash));
		weft_hasher_update(&h, digest, 32);
		weft_hasher_final(&h, d->order_hash);
		uint8_t o = 0;
		int rc = d->app.apply ? d->app.apply(d->app.ctx, d->committed_txs, tx, len, digest, &o) : 0;
		if (rc != 0)
			weft_env_log(d->env, WEFT_LOG_ERROR, "dag.app", "position=%llu rc=%s: the application cannot follow",
				     (unsigned long long)d->committed_txs, weft_strerror(rc));
		uint64_t pos = d->committed_txs++;
		dag_dedup_put(d, digest, anchor_round, pos, o);
		if (v->author == d->self) /* ours are in the txindex; make_vertex settles the rest */
			dag_txindex_update(&d->txindex, digest, DAG_TX_COMMITTED, anchor_round, pos, o);
		struct weft_delivery del = {.origin = v->author, .seq = pos, .data = tx, .len = len, .digest = digest};
		d->env->ops->deliver(d->env, &del);
	}
	/* The bytes stay in kv for peers that fetch them; memory keeps the graph. */
	dag_vertex_drop_payload(v);
}

static void order_anchor(struct dag *d, struct dag_vertex *a)
{
	dag_dedup_prune(d, a->round);
	history(d, a);
	qsort(d->hist, d->nhist, sizeof(*d->hist), by_round_author);
	for (size_t i = 0; i < d->nhist; i++)
		order_vertex(d, d->hist[i], a->round);
	int rc = d->app.end_batch ? d->app.end_batch(d->app.ctx) : 0;
	if (rc != 0)
		weft_env_log(d->env, WEFT_LOG_ERROR, "dag.app", "anchor=%llu rc=%s: the application cannot follow",
			     (unsigned long long)a->round, weft_strerror(rc));
	dag_dedup_anchor_done(d, a->round);
	d->has_committed = true;
	d->committed_round = a->round;
	d->committed_anchors++;
	weft_env_metric(d->env, "dag.committed_anchors", 1);
	weft_env_log(d->env, WEFT_LOG_DEBUG, "dag.commit", "round=%llu anchors=%llu txs=%llu",
		     (unsigned long long)a->round, (unsigned long long)d->committed_anchors,
		     (unsigned long long)d->committed_txs);
	if (a->round > d->floor + d->gc_depth)
		d->gc_due = true;
	dag_snap_checkpoint(d);
}

/* The committed anchor a arrived after its commit (restored from kv, or
 * fetched after a snapshot): what it reaches was ordered already (every
 * later anchor reaches every committed one). */
static void ordered_before(struct dag *d, struct dag_vertex *a)
{
	history(d, a);
	for (size_t i = 0; i < d->nhist; i++) {
		d->hist[i]->ordered = true;
		dag_vertex_drop_payload(d->hist[i]);
	}
}

/* Anchor a of round r has enough votes: commit it and the earlier anchors
 * it reaches, oldest first. */
static void try_commit(struct dag *d, struct dag_vertex *a)
{
	if (d->has_committed && a->round <= d->committed_round)
		return;
	struct dag_vertex *chain[4096];
	size_t nchain = 0;
	chain[nchain++] = a;
	struct dag_vertex *cur = a;
	for (uint64_t rr = a->round; rr >= 2 && nchain < sizeof(chain) / sizeof(chain[0]); rr -= 2) {
		uint64_t prev = rr - 2;
		if (prev < d->floor || (d->has_committed && prev <= d->committed_round))
			break;
		struct dag_vertex *b = dag_inserted(d, prev, dag_leader(d, prev));
		if (b && dag_path(d, cur, b)) {
			chain[nchain++] = b;
			cur = b;
		}
	}
	while (nchain)
		order_anchor(d, chain[--nchain]);
	dag_state_save(d);
}

/* ---- insertion ---- */

/* A debug event per inserted vertex, with its references (strong: the
 * authors of round - 1; weak: round:author), for traces (weftd --trace,
 * tla/trace/). */
static void log_insert(struct dag *d, const struct dag_vertex *x)
{
	char strong[512], weak[512];
	size_t ls = 0, lw = 0;
	strong[0] = weak[0] = '\0';
	for (uint32_t k = 0; k < x->nrefs + x->nweak; k++) {
		struct dag_ref ref = dag_parent(x, k);
		if (k < x->nrefs && ls < sizeof(strong))
			ls += (size_t)snprintf(strong + ls, sizeof(strong) - ls, "%s%u", ls ? "," : "", ref.author);
		else if (k >= x->nrefs && lw < sizeof(weak))
			lw += (size_t)snprintf(weak + lw, sizeof(weak) - lw, "%s%llu:%u", lw ? "," : "",
					       (unsigned long long)ref.round, ref.author);
	}
	weft_env_log(d->env, WEFT_LOG_DEBUG, "dag.insert", "round=%llu author=%u refs=%s weak=%s",
		     (unsigned long long)x->round, x->author, strong, weak);
}

static void kill(struct dag *d, struct dag_vertex *v)
{
	size_t base = d->nwork;
	push(&d->work, &d->nwork, &d->capwork, v);
	while (d->nwork > base) {
		struct dag_vertex *x = d->work[--d->nwork];
		struct dag_round *R = dag_round_get(d, x->round, false);
		if (R == NULL)
			continue;
		struct dag_slot *s = &R->slots[x->author];
		if (s->dead)
			continue;
		s->dead = true;
		for (uint32_t w = 0; w < s->nwait; w++)
			push(&d->work, &d->nwork, &d->capwork, s->waiters[w]);
		s->nwait = 0;
	}
}

void dag_slot_kill(struct dag *d, uint64_t round, uint32_t author)
{
	struct dag_round *R = dag_round_get(d, round, true);
	if (R == NULL || R->slots[author].v)
		return;
	struct dag_slot *s = &R->slots[author];
	s->dead = true;
	for (uint32_t w = 0; w < s->nwait; w++)
		kill(d, s->waiters[w]);
	s->nwait = 0;
}

static void insert(struct dag *d, struct dag_vertex *v)
{
	size_t base = d->nwork;
	push(&d->work, &d->nwork, &d->capwork, v);
	while (d->nwork > base) {
		struct dag_vertex *x = d->work[--d->nwork];
		struct dag_round *R = dag_round_get(d, x->round, false);
		struct dag_slot *s = &R->slots[x->author];
		if (s->dead || x->inserted)
			continue;
		x->inserted = true;
		R->inserted++;
		R->orphans++;
		log_insert(d, x);
		for (uint32_t k = 0; k < x->nrefs + x->nweak; k++) {
			struct dag_ref ref = dag_parent(x, k);
			struct dag_vertex *p = dag_inserted(d, ref.round, ref.author);
			if (p && !p->referenced) {
				p->referenced = true;
				dag_round_get(d, ref.round, false)->orphans--;
			}
		}
		if (x->round > d->highest || d->highest == UINT64_MAX)
			d->highest = x->round;
		if (x->round + 1 > d->author_top[x->author])
			d->author_top[x->author] = x->round + 1;
		for (uint32_t w = 0; w < s->nwait; w++)
			if (--s->waiters[w]->missing == 0)
				push(&d->work, &d->nwork, &d->capwork, s->waiters[w]);
		s->nwait = 0;
		if (d->has_committed && x->round == d->committed_round && dag_is_anchor(d, x))
			ordered_before(d, x);
		if (x->round % 2 == 1) {
			struct dag_vertex *a = dag_inserted(d, x->round - 1, dag_leader(d, x->round - 1));
			if (a && refs_author(x, a->author) && ++R->votes == d->commit_quorum && !d->restoring)
				try_commit(d, a);
		}
	}
}

void dag_accept(struct dag *d, struct dag_vertex *v, bool persist)
{
	struct dag_round *R = dag_round_get(d, v->round, true);
	if (R == NULL) {
		/* Below the floor (no longer needed) or too far ahead to hold:
		 * the range fetch brings the latter back when we get there. */
		if (v->round >= d->floor)
			dag_sync_want(d, v->round);
		dag_vertex_free(v);
		return;
	}
	struct dag_slot *s = &R->slots[v->author];
	if (s->dead || s->v) {
		if (s->v && memcmp(s->v->digest, v->digest, 32) != 0)
			dag_reject(d, "dag.conflict", "round=%llu author=%u two different vertices for one slot",
				   (unsigned long long)v->round, v->author);
		dag_vertex_free(v);
		return;
	}
	s->v = v;
	if (persist) {
		uint8_t k[13];
		dag_vertex_key(k, v->round, v->author);
		d->env->ops->kv_put(d->env, k, sizeof(k), v->bytes, v->len);
	}
	/* Waiters that named another digest for this slot can never be inserted. */
	uint32_t keep = 0;
	for (uint32_t w = 0; w < s->nwait; w++) {
		struct dag_vertex *x = s->waiters[w];
		bool match = false;
		for (uint32_t k = 0; k < x->nrefs + x->nweak; k++) {
			struct dag_ref ref = dag_parent(x, k);
			if (ref.round == v->round && ref.author == v->author)
				match = memcmp(ref.digest, v->digest, 32) == 0;
		}
		if (match)
			s->waiters[keep++] = x;
		else
			kill(d, x);
	}
	s->nwait = keep;
	/* Wait for every parent, strong and weak; those below the floor count
	 * as present. */
	for (uint32_t k = 0; k < v->nrefs + v->nweak; k++) {
		struct dag_ref ref = dag_parent(v, k);
		if (ref.round < d->floor)
			continue;
		struct dag_slot *ps = &dag_round_get(d, ref.round, true)->slots[ref.author];
		if (ps->dead || (ps->v && memcmp(ps->v->digest, ref.digest, 32) != 0)) {
			kill(d, v);
			return;
		}
		if ((ps->v && ps->v->inserted) || (k >= v->nrefs && d->unsafe == DAG_UNSAFE_WEAK_NOWAIT))
			continue;
		if (ps->nwait == ps->capwait) {
			ps->capwait = ps->capwait ? 2 * ps->capwait : 4;
			ps->waiters = realloc(ps->waiters, ps->capwait * sizeof(*ps->waiters));
			if (ps->waiters == NULL)
				abort();
		}
		ps->waiters[ps->nwait++] = v;
		v->missing++;
	}
	if (v->missing == 0)
		insert(d, v);
}

/* ---- garbage collection ---- */

/* Our vertex of round r leaves the DAG: unless it was ordered, its
 * transactions go back to the mempool (a vertex below the floor is never
 * ordered), so a transaction we accepted is not lost to a crash, a slow
 * broadcast or a vertex nobody referenced. */
static void requeue_own(struct dag *d, uint64_t r, bool ordered)
{
	uint8_t k[9] = {'O'};
	weft_be64_put(k + 1, r);
	const void *val;
	size_t vlen;
	if (d->env->ops->kv_get(d->env, k, sizeof(k), &val, &vlen) != 0)
		return;
	uint8_t *bytes = malloc(vlen);
	if (bytes == NULL)
		abort();
	memcpy(bytes, val, vlen);
	d->env->ops->kv_del(d->env, k, sizeof(k));
	struct dag_vertex view;
	if (!ordered && dag_vertex_view(&view, bytes, vlen) == 0) {
		size_t off = 0;
		uint32_t i = 0, len;
		const uint8_t *tx;
		while (dag_vertex_next_tx(&view, &off, &i, &tx, &len) == 0) {
			uint8_t digest[32];
			bool known;
			weft_hash(digest, tx, len);
			const struct dag_tx_entry *e = dag_txindex_get(&d->txindex, digest);
			if (e && e->state == DAG_TX_COMMITTED)
				continue;
			if (e)
				dag_txindex_set(&d->txindex, digest, DAG_TX_UNKNOWN, 0, 0, 0);
			if (dag_mempool_add(d, tx, len, digest, &known) == 0)
				d->requeued++;
		}
	}
	free(bytes);
}

void dag_gc(struct dag *d)
{
	if (!d->gc_due)
		return;
	d->gc_due = false;
	uint64_t floor = d->committed_round - d->gc_depth;
	if (floor > d->floor)
		dag_raise_floor(d, floor);
}

void dag_raise_floor(struct dag *d, uint64_t floor)
{
	for (uint64_t r = d->floor; r < floor; r++) {
		struct dag_round *R = &d->ring[r % d->ring_cap];
		const struct dag_vertex *own = R->round == r ? R->slots[d->self].v : NULL;
		requeue_own(d, r, own && own->ordered && !R->slots[d->self].dead);
		if (R->round == r)
			round_free(d, R);
	}
	d->floor = floor;
	/* kv keeps, below the floor, what a node installing our checkpoint
	 * fetches next: gc_depth rounds below the checkpoint. */
	uint64_t keep = d->checkpoint_round > d->gc_depth ? d->checkpoint_round - d->gc_depth : 0;
	for (uint64_t kv_floor = keep < floor ? keep : floor; d->kv_floor < kv_floor; d->kv_floor++)
		for (uint32_t a = 0; a < d->n; a++) {
			uint8_t k[13];
			dag_vertex_key(k, d->kv_floor, a);
			d->env->ops->kv_del(d->env, k, sizeof(k));
		}
	for (uint32_t a = 0; a < d->n; a++)
		d->brbf->skip(d->brb.state, a, floor);
	if (d->next_round <= floor) {
		/* Round floor - 1 is gone: our next vertex references round floor,
		 * where we have none of our own. */
		weft_env_log(d->env, WEFT_LOG_WARN, "dag.jump", "from=%llu to=%llu our rounds fell below the floor",
			     (unsigned long long)d->next_round, (unsigned long long)floor + 1);
		d->next_round = floor + 1;
		d->own_from = floor + 1;
	}
	dag_state_save(d);
}

void dag_graph_reset(struct dag *d)
{
	for (uint32_t i = 0; i < d->ring_cap; i++)
		if (d->ring[i].slots)
			round_free(d, &d->ring[i]);
	d->highest = UINT64_MAX;
	memset(d->author_top, 0, d->n * sizeof(*d->author_top));
}

uint32_t dag_authors_above(const struct dag *d, uint64_t r)
{
	uint32_t k = 0;
	for (uint32_t a = 0; a < d->n; a++)
		k += d->author_top[a] > r + 1;
	return k;
}

void dag_graph_free(struct dag *d)
{
	if (d->ring)
		dag_graph_reset(d);
	free(d->ring);
	d->ring = NULL;
	free(d->author_top);
	d->author_top = NULL;
	free(d->work);
	free(d->hist);
	d->work = d->hist = NULL;
}

/* ---- persistence ---- */

void dag_state_save(struct dag *d)
{
	uint8_t rec[STATE_LEN], *p = rec;
	*p++ = STATE_VERSION;
	weft_be64_put(p, d->next_round), p += 8;
	*p++ = d->has_committed;
	weft_be64_put(p, d->committed_round), p += 8;
	weft_be64_put(p, d->committed_txs), p += 8;
	weft_be64_put(p, d->committed_vertices), p += 8;
	weft_be64_put(p, d->committed_anchors), p += 8;
	weft_be64_put(p, d->floor), p += 8;
	memcpy(p, d->order_hash, 32), p += 32;
	weft_be64_put(p, d->kv_floor), p += 8;
	weft_be64_put(p, d->checkpoint_round), p += 8;
	weft_be64_put(p, d->own_from);
	d->env->ops->kv_put(d->env, STATE_KEY, 1, rec, sizeof(rec));
}

int dag_state_load(struct dag *d)
{
	const void *val;
	size_t len;
	int rc = d->env->ops->kv_get(d->env, STATE_KEY, 1, &val, &len);
	if (rc == WEFT_NOTFOUND) {
		d->fresh_store = true;
		return 0;
	}
	if (rc != 0)
		return rc;
	const uint8_t *p = val;
	bool v2 = len == STATE_LEN_V2 && p[0] == 2;
	if (!v2 && (len != STATE_LEN || p[0] != STATE_VERSION))
		return WEFT_ECORRUPT;
	p++;
	d->next_round = weft_be64_get(p), p += 8;
	d->has_committed = *p++;
	d->committed_round = weft_be64_get(p), p += 8;
	d->committed_txs = weft_be64_get(p), p += 8;
	d->committed_vertices = weft_be64_get(p), p += 8;
	d->committed_anchors = weft_be64_get(p), p += 8;
	d->floor = weft_be64_get(p), p += 8;
	memcpy(d->order_hash, p, 32), p += 32;
	d->kv_floor = weft_be64_get(p), p += 8;
	d->checkpoint_round = weft_be64_get(p), p += 8;
	d->own_from = v2 ? 0 : weft_be64_get(p);
	return 0;
}

static int restore_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct dag *d = arg;
	if (klen != 13)
		return 0;
	const uint8_t *k = key;
	uint64_t round = weft_be64_get(k + 1);
	uint32_t author = weft_be32_get(k + 9);
	const char *why;
	why = "author out of the committee";
	struct dag_vertex *v = author < d->n ? dag_vertex_decode(d, author, round, val, vlen, NULL, &why) : NULL;
	if (v == NULL) {
		weft_env_log(d->env, WEFT_LOG_ERROR, "dag.corrupt", "stored vertex round=%llu author=%u: %s",
			     (unsigned long long)round, author, why);
		return WEFT_ECORRUPT;
	}
	dag_accept(d, v, false);
	d->restored++;
	return 0;
}

int dag_restore_vertices(struct dag *d)
{
	uint8_t from[13], to[1] = {'W'};
	dag_vertex_key(from, d->floor, 0);
	d->restoring = true;
	int rc = d->env->ops->kv_scan(d->env, from, sizeof(from), to, sizeof(to), restore_one, d);
	d->restoring = false;
	return rc;
}
