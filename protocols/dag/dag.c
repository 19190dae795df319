/* dag.c - the DAG consensus (weft_dag_consensus): BFT ordering of opaque
 * transactions (sparse Bullshark with dense anchors, or dense Bullshark),
 * hosting a BRB protocol as its child for vertex dissemination and feeding
 * the ordered stream to the application it is given (weft/app.h); the node
 * stack (protocols/node) composes it with the ledger.
 *
 * This file holds the protocol ops: parameters, start-up and restart, our
 * rounds (when to make the next vertex and what it references), the
 * mempool, requests (a transaction), queries (tx.status) and info.  The graph, commit rule and ordering are in graph.c, catch-up
 * in sync.c, the wire form in vertex.c, the committed index in dedup.c.
 *
 * Round rules (partially synchronous Bullshark).  We make the vertex of
 * round r once round r - 1 holds 2f + 1 inserted vertices including our
 * own, and, unless the committee is already ahead of us (f + 1 authors
 * have vertices above r + 1):
 *   - r - 1 even: its anchor is inserted, or timeout_ms passed;
 *   - r - 1 odd: the anchor of r - 2 has commit_quorum votes in r - 1, or
 *     can no longer get them, or is absent, or timeout_ms passed;
 *   - round_min_ms passed since our previous vertex (pacing).
 * References: our anchor vertices and every vertex in dense mode take all
 * of round r - 1 we hold (at least 2f + 1); other sparse vertices take D
 * of them uniformly at random (all when we hold at most D) plus our own and
 * the anchor of r - 1; and, as weak references, the older vertices we hold
 * that nothing references yet (weak_refs). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"

#include "dag.h"

/* The exactly-once horizon (dedup_rounds): default, and at most. */
#define DEDUP_DEFAULT 2000
#define DEDUP_MAX 10000000

void dag_reject(struct dag *d, const char *event, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d->rejected++;
	weft_env_metric(d->env, "dag.rejected", 1);
	weft_env_log(d->env, WEFT_LOG_WARN, event, "%s", msg);
}

/* ---- our vertices ---- */

static void sample_refs(struct dag *d, uint64_t r, uint32_t *refs, uint32_t *nrefs)
{
	uint32_t held[1024], nheld = 0;
	struct dag_round *P = dag_round_get(d, r - 1, false);
	for (uint32_t a = 0; a < d->n; a++)
		if (P->slots[a].v && P->slots[a].v->inserted)
			held[nheld++] = a;
	bool anchor = r % 2 == 0 && dag_leader(d, r) == d->self && d->unsafe != DAG_UNSAFE_SPARSE_ANCHORS;
	bool all = d->mode == DAG_DENSE || anchor || nheld <= d->d;
	if (dag_adv_hides(d, r)) {
		dag_adv_refs(d, r, held, nheld, anchor, refs, nrefs);
		return;
	}
	if (all) {
		memcpy(refs, held, nheld * sizeof(*held));
		*nrefs = nheld;
		return;
	}
	/* Partial Fisher-Yates: the first D of held become a uniform sample. */
	for (uint32_t i = 0; i < d->d; i++) {
		uint32_t x;
		d->env->ops->random(d->env, &x, sizeof(x));
		uint32_t j = i + x % (nheld - i);
		uint32_t t = held[i];
		held[i] = held[j], held[j] = t;
	}
	uint32_t k = d->d;
	uint32_t extra[2] = {d->self, UINT32_MAX};
	if ((r - 1) % 2 == 0)
		extra[1] = dag_leader(d, r - 1);
	for (int e = 0; e < 2; e++) {
		if (extra[e] == UINT32_MAX || !dag_inserted(d, r - 1, extra[e]))
			continue;
		bool have = false;
		for (uint32_t i = 0; i < k; i++)
			have |= held[i] == extra[e];
		if (!have)
			held[k++] = extra[e];
	}
	/* Ascending authors, as the wire form requires. */
	for (uint32_t i = 1; i < k; i++)
		for (uint32_t j = i; j > 0 && held[j - 1] > held[j]; j--) {
			uint32_t t = held[j];
			held[j] = held[j - 1], held[j - 1] = t;
		}
	memcpy(refs, held, k * sizeof(*held));
	*nrefs = k;
}

/* Weak references for our vertex of round r: the vertices of rounds below
 * r - 1 we hold that nothing references yet and no anchor ordered, oldest
 * first (the nearest to garbage collection), up to weak_max.  Every honest
 * vertex an honest node holds thus enters the history of the next honest
 * vertex and, with it, of a committed anchor: a slow author's vertices
 * that arrive after their next round formed are ordered too. */
static uint32_t weak_refs(struct dag *d, uint64_t r, struct dag_vertex **weak)
{
	uint32_t k = 0;
	for (uint64_t q = d->floor; q + 2 <= r && k < d->weak_max; q++) {
		struct dag_round *R = dag_round_get(d, q, false);
		for (uint32_t a = 0; R && R->orphans && a < d->n && k < d->weak_max; a++) {
			struct dag_vertex *v = R->slots[a].v;
			if (v && v->inserted && !v->referenced && !v->ordered)
				weak[k++] = v;
		}
	}
	return k;
}

static void make_vertex(struct dag *d, uint64_t r)
{
	if (dag_adv_skips(d, r))
		return;
	uint64_t next_seq = d->brbf->next_seq(d->brb.state);
	if (next_seq > r) {
		weft_env_log(d->env, WEFT_LOG_WARN, "dag.skip", "round=%llu our broadcast sequence is at %llu",
			     (unsigned long long)r, (unsigned long long)next_seq);
		r = d->next_round = next_seq;
		if (r > 0 && dag_round_get(d, r - 1, false) == NULL)
			return;
	} else if (next_seq < r) {
		d->brbf->skip(d->brb.state, d->self, r);
	}
	uint32_t refs[1024], nrefs = 0, nweak = 0;
	struct dag_vertex *weak[1024];
	if (r > 0)
		sample_refs(d, r, refs, &nrefs);
	if (!dag_adv_hides(d, r))
		nweak = weak_refs(d, r, weak);
	if (nweak)
		weft_env_metric(d->env, "dag.weak_refs", nweak);
	/* The batch: what the mempool holds, up to batch_bytes / batch_txs,
	 * passing over what the committed index holds (committed since it
	 * came, through another node's vertex: it goes below). */
	struct dag_mempool *m = &d->mempool;
	uint32_t ntx = 0, taken = 0, cap = m->count < d->batch_txs ? m->count : d->batch_txs;
	uint64_t bytes = 0;
	const uint8_t **txs = malloc((cap ? cap : 1) * sizeof(*txs));
	uint32_t *lens = malloc((cap ? cap : 1) * sizeof(*lens));
	uint8_t(*digests)[32] = malloc((cap ? cap : 1) * sizeof(*digests));
	if (txs == NULL || lens == NULL || digests == NULL)
		abort();
	for (; taken < m->count; taken++) {
		const struct dag_pending_tx *e = dag_mempool_at(m, taken);
		if (dag_dedup_get(d, e->digest, NULL) == 0)
			continue;
		if (ntx == d->batch_txs || bytes + e->len > d->batch_bytes)
			break;
		txs[ntx] = e->tx;
		memcpy(digests[ntx], e->digest, 32);
		lens[ntx++] = e->len;
		bytes += e->len;
	}
	uint32_t ours = ntx;
	dag_adv_batch(d, r, &txs, &lens, &ntx, &bytes); /* a copier appends others' */
	struct weft_mpw v;
	weft_mpw_init(&v);
	dag_vertex_encode(d, &v, r, refs, nrefs, weak, nweak, txs, lens,
			  ntx == ours ? (const uint8_t(*)[32])digests : NULL, ntx);
	free(digests);
	int rc = weft_child_request(&d->brb, v.buf, v.len, NULL);
	if (rc == 0) {
		uint8_t k[9] = {'O'};
		weft_be64_put(k + 1, r);
		d->env->ops->kv_put(d->env, k, sizeof(k), v.buf, v.len);
		dag_adv_made(d, r, v.buf, v.len, txs, lens, ntx);
	}
	weft_mpw_free(&v);
	if (rc != 0) {
		weft_env_log(d->env, WEFT_LOG_WARN, "dag.broadcast", "round=%llu rc=%s", (unsigned long long)r,
			     weft_strerror(rc));
		free(txs);
		free(lens);
		return;
	}
	/* What was committed meanwhile (through another node's vertex) is no
	 * longer in flight here; the rest is proposed in ours. */
	for (uint32_t i = 0; i < taken; i++) {
		const uint8_t *digest = dag_mempool_at(m, i)->digest;
		struct dag_committed c;
		if (dag_dedup_get(d, digest, &c) == 0)
			dag_txindex_update(&d->txindex, digest, DAG_TX_COMMITTED, c.round, c.position, c.outcome);
		else
			dag_txindex_set(&d->txindex, digest, DAG_TX_PROPOSED, r, 0, 0);
	}
	dag_mempool_take(d, taken);
	free(txs);
	free(lens);
	d->next_round = r + 1;
	d->entered_us = weft_env_now(d->env);
	d->own_vertices++;
	weft_env_metric(d->env, "dag.own_vertices", 1);
	dag_state_save(d);
}

/* 0 when round r may start now; otherwise the microseconds to wait (or
 * UINT64_MAX: until more vertices arrive). */
static uint64_t advance_wait(struct dag *d, uint64_t r)
{
	if (d->fresh_store)
		return UINT64_MAX; /* not before our peers told us where the committee is (sync.c) */
	if (r == 0)
		return 0;
	if (r - d->floor + 2 * (uint64_t)d->brbf->window(d->brb.state) >= d->ring_cap)
		return UINT64_MAX; /* too far past the last commit: wait for one */
	uint64_t p = r - 1;
	struct dag_round *P = dag_round_get(d, p, false);
	if (P == NULL || P->inserted < d->quorum)
		return UINT64_MAX;
	uint64_t now = weft_env_now(d->env);
	uint64_t waited = now - d->entered_us;
	uint64_t wait = 0;
	/* Our own previous vertex, always: the chain the safety argument needs.
	 * Moving on without it after a timeout let TLC fork two honest nodes
	 * (tla/ BullsharkBrokenOwnChain): a vertex late only at its author may
	 * already be a vote elsewhere. */
	if (p >= d->own_from && !dag_inserted(d, p, d->self))
		return UINT64_MAX;
	/* Far behind the committee: catch up without waiting.  One honest
	 * author above r + 1 is needed (f + 1 authors): on a sparse DAG with
	 * D <= f, Byzantine authors alone can build rounds ahead, and letting
	 * them switch off the anchor wait stopped every commit (tla/
	 * BullsharkLiveRacer). */
	bool behind = d->highest != UINT64_MAX && d->highest > r + 1 && dag_authors_above(d, r + 1) > d->f;
	if (behind)
		return 0;
	bool anchor_ok;
	if (p % 2 == 0) {
		anchor_ok = dag_inserted(d, p, dag_leader(d, p)) != NULL;
	} else {
		const struct dag_vertex *a = p >= 1 ? dag_inserted(d, p - 1, dag_leader(d, p - 1)) : NULL;
		anchor_ok = a == NULL || P->votes >= d->commit_quorum || P->inserted - P->votes > d->n - d->commit_quorum;
	}
	if (!anchor_ok)
		wait = waited < d->timeout_us ? d->timeout_us - waited : 0;
	if (!anchor_ok && wait == 0) {
		d->timeouts++;
		weft_env_metric(d->env, "dag.timeouts", 1);
	}
	if (waited < d->round_min_us && d->round_min_us - waited > wait)
		wait = d->round_min_us - waited;
	return wait;
}

void dag_try_advance(struct dag *d)
{
	if (!d->started)
		return;
	for (int rounds = 0; rounds < 64; rounds++) {
		uint64_t wait = advance_wait(d, d->next_round);
		if (wait == UINT64_MAX)
			return;
		if (wait > 0) {
			d->env->ops->set_timer(d->env, DAG_TIMER_ADVANCE, wait);
			return;
		}
		uint64_t before = d->next_round;
		make_vertex(d, d->next_round);
		if (d->next_round == before)
			return;
	}
}

/* ---- BRB child deliveries ---- */

static void on_brb_deliver(void *ctx, const struct weft_delivery *del)
{
	struct dag *d = ctx;
	d->delivered_vertices++;
	if (del->invalid) {
		dag_slot_kill(d, del->seq, del->origin);
		return;
	}
	if (del->seq < d->floor)
		return;
	const char *why;
	struct dag_vertex *v = dag_vertex_decode(d, del->origin, del->seq, del->data, del->len, del->digest, &why);
	if (v == NULL) {
		dag_reject(d, "dag.vertex_rejected", "round=%llu author=%u %s", (unsigned long long)del->seq, del->origin,
			   why);
		dag_slot_kill(d, del->seq, del->origin);
		return;
	}
	dag_accept(d, v, true);
}

/* ---- ops ---- */

static int param(const uint8_t *params, size_t plen, const char *key, uint64_t *out, uint64_t lo, uint64_t hi)
{
	int rc = weft_params_uint(params, plen, key, out);
	if (rc == WEFT_NOTFOUND)
		return 0;
	return rc != 0 || *out < lo || *out > hi ? WEFT_EINVAL : 0;
}

static int child_params(struct dag *d, const uint8_t *params, size_t plen, struct weft_mpw *w)
{
	uint64_t window = 256, resend_ms = 500;
	if (param(params, plen, "brb_window", &window, 4, 4096) || param(params, plen, "brb_resend_ms", &resend_ms, 10, 60000))
		return WEFT_EINVAL;
	/* An own broadcast nobody delivers holds our BRB window until garbage
	 * collection forgets it: the window must outlast gc_depth rounds. */
	if (window <= d->gc_depth) {
		weft_env_log(d->env, WEFT_LOG_ERROR, "dag.params", "brb_window=%llu must exceed gc_depth=%llu",
			     (unsigned long long)window, (unsigned long long)d->gc_depth);
		return WEFT_EINVAL;
	}
	weft_mpw_map(w, 4);
	weft_mpw_str(w, "max_payload");
	weft_mpw_uint(w, d->vertex_max);
	weft_mpw_str(w, "window");
	weft_mpw_uint(w, window);
	/* The BRB's own catch-up (retained payloads, repeated READYs to a peer
	 * that lacks an instance) gives totality for recent instances, which
	 * our own-vertex wait needs; older rounds come by range fetch.  The
	 * payloads it offers are our stored vertices (stored_vertex). */
	weft_mpw_str(w, "retain");
	weft_mpw_uint(w, 64);
	weft_mpw_str(w, "resend_ms");
	weft_mpw_uint(w, resend_ms);
	return 0;
}

/* The BRB's catch-up asks for a payload it delivered: our store's copy of
 * the vertex ("V": inserted vertices, until GC), so that a vertex is
 * stored once, not also by the BRB. */
static int stored_vertex(void *ctx, uint32_t author, uint64_t round, const uint8_t **data, size_t *len)
{
	struct dag *d = ctx;
	uint8_t k[13];
	const void *v;
	dag_vertex_key(k, round, author);
	if (d->env->ops->kv_get(d->env, k, sizeof(k), &v, len) != 0)
		return WEFT_NOTFOUND;
	*data = v;
	return 0;
}

/* ---- naming vertices for the BRB ----
 * The BRB names each payload it votes on and delivers (dag_name_vertex).
 * For a vertex in its one accepted form the name is BLAKE2b(1 || id):
 * computing the id hashes every transaction, and the digests wait here for
 * decode, which then does not hash them again (one pass per transaction
 * per node, not two).  Any other bytes are named BLAKE2b(0 || bytes).  The leading byte
 * keeps the two apart, so a name is collision resistant over the bytes:
 * no Byzantine author can have two different payloads certified under
 * one name.  The entries form a ring; one evicted before its vertex is
 * delivered only costs a hash. */

static void named_free(struct dag_named *e)
{
	free(e->digests);
	e->digests = NULL;
}

void dag_name_vertex(void *ctx, uint32_t author, uint64_t round, const uint8_t *data, size_t len, uint8_t name[32])
{
	struct dag *d = ctx;
	uint8_t id[32], tag;
	uint8_t(*digests)[32];
	uint32_t ntx;
	struct weft_hasher h;
	bool vertex = dag_vertex_parse_id(data, len, id, &digests, &ntx) == 0;
	tag = vertex;
	weft_hasher_init(&h);
	weft_hasher_update(&h, &tag, 1);
	if (vertex)
		weft_hasher_update(&h, id, sizeof(id));
	else
		weft_hasher_update(&h, data, len);
	weft_hasher_final(&h, name);
	if (!vertex)
		return;
	for (uint32_t i = 0; i < d->nnamed; i++) {
		struct dag_named *e = &d->named[i];
		if (e->digests && e->author == author && e->round == round && memcmp(e->name, name, 32) == 0) {
			free(digests); /* named before (a repeat, a catch-up) */
			return;
		}
	}
	struct dag_named *e = &d->named[d->named_next];
	d->named_next = (d->named_next + 1) % d->nnamed;
	named_free(e);
	*e = (struct dag_named){.author = author, .round = round, .ntx = ntx, .digests = digests};
	memcpy(e->name, name, 32);
}

uint8_t (*dag_named_take(struct dag *d, uint32_t author, uint64_t round, const uint8_t name[32], uint32_t *ntx))[32]
{
	for (uint32_t i = 0; i < d->nnamed; i++) {
		struct dag_named *e = &d->named[i];
		if (e->digests && e->author == author && e->round == round && memcmp(e->name, name, 32) == 0) {
			uint8_t(*digests)[32] = e->digests;
			*ntx = e->ntx;
			e->digests = NULL;
			return digests;
		}
	}
	return NULL;
}

static int dag_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct dag *d = state;
	d->env = env;
	d->n = env->n, d->f = env->f, d->self = env->self;
	if (d->n < 1 || d->n > 1024)
		return WEFT_EINVAL;
	/* n - f (2f + 1 when n = 3f + 1): any two quorums share f + 1 nodes
	 * whatever n is, which the commit rule's intersection argument needs. */
	d->quorum = d->n - d->f;
	d->mode = weft_params_str_is(params, plen, "mode", "dense") ? DAG_DENSE : DAG_SPARSE;
	const char *mode;
	uint32_t mlen;
	if (weft_params_str(params, plen, "mode", &mode, &mlen) == 0 && !weft_params_str_is(params, plen, "mode", "dense") &&
	    !weft_params_str_is(params, plen, "mode", "sparse"))
		return WEFT_EINVAL;
	if (weft_params_str_is(params, plen, "unsafe", "sparse_anchors"))
		d->unsafe = DAG_UNSAFE_SPARSE_ANCHORS;
	else if (weft_params_str_is(params, plen, "unsafe", "commit_f1"))
		d->unsafe = DAG_UNSAFE_COMMIT_F1;
	else if (weft_params_str_is(params, plen, "unsafe", "weak_nowait"))
		d->unsafe = DAG_UNSAFE_WEAK_NOWAIT;
	else if (weft_params_str(params, plen, "unsafe", &mode, &mlen) == 0)
		return WEFT_EINVAL;
	d->commit_quorum = d->mode == DAG_DENSE || d->unsafe == DAG_UNSAFE_COMMIT_F1 ? d->f + 1 : 2 * d->f + 1;
	uint64_t dd = 10, weak_max = d->n, timeout_ms = 1000, round_min_ms = 50, sync_ms = 500, gc_depth = 200;
	uint64_t batch_bytes = 1 << 20, batch_txs = 10000, tx_max = 64 << 10, mempool = 256ull << 20,
		 txindex = 1 << 20;
	if (param(params, plen, "d", &dd, 1, 1024) || param(params, plen, "weak_max", &weak_max, 0, 1024) || param(params, plen, "timeout_ms", &timeout_ms, 1, 3600000) ||
	    param(params, plen, "round_min_ms", &round_min_ms, 0, 60000) ||
	    param(params, plen, "sync_ms", &sync_ms, 10, 60000) || param(params, plen, "gc_depth", &gc_depth, 4, 100000) ||
	    param(params, plen, "batch_bytes", &batch_bytes, 1024, 64 << 20) ||
	    param(params, plen, "batch_txs", &batch_txs, 1, 1 << 20) ||
	    param(params, plen, "tx_max", &tx_max, 16, 16 << 20) ||
	    param(params, plen, "mempool_bytes", &mempool, 1 << 16, 1ull << 40) ||
	    param(params, plen, "tx_index", &txindex, 16, 1 << 26))
		return WEFT_EINVAL;
	d->snapshot_every = gc_depth;
	d->snapshot_max = 4ull << 30;
	if (param(params, plen, "snapshot_every", &d->snapshot_every, 0, 1000000) ||
	    param(params, plen, "snapshot_max_bytes", &d->snapshot_max, 1 << 20, 1ull << 40))
		return WEFT_EINVAL;
	d->d = (uint32_t)dd;
	d->weak_max = (uint32_t)weak_max;
	d->timeout_us = timeout_ms * 1000;
	d->round_min_us = round_min_ms * 1000;
	d->sync_us = sync_ms * 1000;
	d->gc_depth = gc_depth;
	d->batch_bytes = batch_bytes;
	d->batch_txs = (uint32_t)batch_txs;
	d->tx_max = tx_max;
	d->mempool.max_bytes = mempool;
	/* A vertex: its batch with framing, the references, the signature. */
	d->vertex_max = batch_bytes + 5 * batch_txs + 40ull * d->n + 50ull * weak_max + 256;
	if (d->batch_bytes < tx_max)
		return WEFT_EINVAL;
	/* The exactly-once horizon changes the order: a genesis parameter.  It
	 * must cover gc_depth, the rounds in which copies of a transaction
	 * proposed before its commit can still be ordered. */
	d->dedup_rounds = gc_depth > DEDUP_DEFAULT ? gc_depth : DEDUP_DEFAULT;
	if (param(params, plen, "dedup_rounds", &d->dedup_rounds, 1, DEDUP_MAX))
		return WEFT_EINVAL;
	if (d->dedup_rounds < gc_depth) {
		weft_env_log(d->env, WEFT_LOG_ERROR, "dag.params", "dedup_rounds=%llu must be at least gc_depth=%llu",
			     (unsigned long long)d->dedup_rounds, (unsigned long long)gc_depth);
		return WEFT_EINVAL;
	}

	/* The vertices travel by a BRB of the core family (weft/brb.h). */
	char name[32] = "echo";
	const char *brb;
	uint32_t blen;
	if (weft_params_str(params, plen, "brb", &brb, &blen) == 0) {
		if (blen >= sizeof(name))
			return WEFT_EINVAL;
		memcpy(name, brb, blen);
		name[blen] = '\0';
	}
	const struct weft_proto_ops *brb_ops = weft_proto_find(name);
	d->brbf = brb_ops ? weft_brb_family(brb_ops) : NULL;
	if (d->brbf == NULL)
		return WEFT_EINVAL;
	d->brb_name = brb_ops->name;

	weft_mpw_init(&d->out);
	struct weft_mpw cp;
	weft_mpw_init(&cp);
	int rc = child_params(d, params, plen, &cp);
	if (rc == 0)
		rc = dag_adv_child(d, &brb_ops, &cp);
	if (rc == 0)
		rc = weft_child_init(&d->brb, env, DAG_BRB_CHANNEL, brb_ops, cp.buf, cp.len, on_brb_deliver, d);
	weft_mpw_free(&cp);
	if (rc != 0)
		return rc;
	d->brbf->retain_from(d->brb.state, stored_vertex, d);
	d->nnamed = 4 * d->n + 16;
	d->named = calloc(d->nnamed, sizeof(*d->named));
	if (d->named == NULL)
		abort();
	d->brbf->digest_with(d->brb.state, dag_name_vertex, d);
	uint32_t window = d->brbf->window(d->brb.state);
	d->ring_cap = (uint32_t)(gc_depth + 4 * (uint64_t)window + 16);
	d->ring = calloc(d->ring_cap, sizeof(*d->ring));
	d->author_top = calloc(d->n, sizeof(*d->author_top));
	if (d->ring == NULL || d->author_top == NULL)
		abort();
	for (uint32_t i = 0; i < d->ring_cap; i++)
		d->ring[i].round = UINT64_MAX;
	d->highest = UINT64_MAX;
	dag_txindex_init(&d->txindex, (uint32_t)txindex);
	dag_sync_init(d);
	dag_snap_init(d);
	if ((rc = dag_state_load(d)) != 0 || (rc = dag_dedup_load(d)) != 0)
		return rc;
	if ((rc = dag_mempool_load(d)) != 0)
		return rc;
	return dag_restore_vertices(d);
}

static int dag_start(void *state)
{
	struct dag *d = state;
	int rc = weft_child_start(&d->brb);
	if (rc != 0)
		return rc;
	d->started = true;
	d->entered_us = weft_env_now(d->env);
	d->env->ops->set_timer(d->env, DAG_TIMER_SYNC, d->sync_us);
	dag_sync_start(d);
	dag_try_advance(d);
	return 0;
}

/* What every callback ends with: due garbage collection, a new round. */
static void settle(struct dag *d)
{
	dag_gc(d);
	dag_try_advance(d);
}

static int dag_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct dag *d = state;
	int rc;
	if (len > 0 && msg[0] == DAG_BRB_CHANNEL) {
		rc = weft_child_on_message(&d->brb, from, msg, len);
	} else {
		struct weft_mp_reader r;
		uint32_t count;
		uint64_t version, type;
		weft_mp_reader_init(&r, msg, len);
		if (weft_mp_read_array(&r, &count) || count < 2 || weft_mp_read_uint(&r, &version) ||
		    version != DAG_VERSION || weft_mp_read_uint(&r, &type))
			rc = WEFT_EDECODE;
		else
			rc = dag_sync_on_message(d, from, type, &r);
		if (rc < 0)
			d->rejected++;
	}
	settle(d);
	return rc;
}

static void dag_on_timer(void *state, uint64_t id)
{
	struct dag *d = state;
	if (!weft_child_on_timer(&d->brb, id)) {
		if (id == DAG_TIMER_SYNC) {
			dag_sync_tick(d);
			d->env->ops->set_timer(d->env, DAG_TIMER_SYNC, d->sync_us);
		}
	}
	settle(d);
}

static const char *tx_state_name(enum dag_tx_state s)
{
	switch (s) {
	case DAG_TX_UNKNOWN: return "unknown";
	case DAG_TX_PENDING: return "pending";
	case DAG_TX_PROPOSED: return "proposed";
	case DAG_TX_COMMITTED: return "committed";
	}
	return "unknown";
}

static void hex_str(struct weft_mpw *w, const uint8_t *b, size_t len)
{
	char hex[2 * 64 + 1];
	weft_hex_encode(hex, b, len);
	weft_mpw_str(w, hex);
}

/* Where digest stands: committed (the durable index; *c filled), else
 * pending or proposed (the recent states), else unknown. */
static int tx_state(struct dag *d, const uint8_t digest[32], struct dag_committed *c, const struct dag_tx_entry **e)
{
	int rc = dag_dedup_get(d, digest, c);
	*e = NULL;
	if (rc == 0)
		return DAG_TX_COMMITTED;
	if (rc != WEFT_NOTFOUND)
		return rc;
	*e = dag_txindex_get(&d->txindex, digest);
	return dag_tx_in_flight(*e) ? (*e)->state : DAG_TX_UNKNOWN;
}

/* Transactions from the application, handed over in one step: into the
 * mempool as one batch record.  Each reply is {digest (hex), duplicate}:
 * duplicate when it waits here already or was committed (within the
 * dedup_rounds horizon); nothing is queued then.  A refusal may write the
 * reason (a str). */
static void dag_on_request_batch(void *state, size_t count, const uint8_t *const *reqs, const size_t *lens,
				 struct weft_mpw *replies, int *rcs)
{
	struct dag *d = state;
	const uint8_t **txs = malloc((count ? count : 1) * sizeof(*txs));
	size_t *tlens = malloc((count ? count : 1) * sizeof(*tlens));
	uint32_t *at = malloc((count ? count : 1) * sizeof(*at));
	uint8_t(*digests)[32] = malloc((count ? count : 1) * sizeof(*digests));
	bool *known = malloc((count ? count : 1) * sizeof(*known));
	int *added = malloc((count ? count : 1) * sizeof(*added));
	if (txs == NULL || tlens == NULL || at == NULL || digests == NULL || known == NULL || added == NULL)
		abort();
	uint32_t nadd = 0;
	for (size_t i = 0; i < count; i++) {
		const char *why = "refused by the application";
		rcs[i] = lens[i] == 0 ? WEFT_EINVAL : lens[i] > d->tx_max ? WEFT_ETOOBIG : 0;
		if (rcs[i] == 0 && d->app.admit && d->app.admit(d->app.ctx, reqs[i], lens[i], &why) < 0) {
			if (replies)
				weft_mpw_str(&replies[i], why);
			rcs[i] = WEFT_EINVAL;
		}
		if (rcs[i] != 0)
			continue;
		txs[nadd] = reqs[i];
		tlens[nadd] = lens[i];
		weft_hash(digests[nadd], reqs[i], lens[i]);
		/* Fetched while the rest are hashed: the mempool looks both up. */
		dag_txindex_prefetch(&d->txindex, digests[nadd]);
		dag_dedup_prefetch(d, digests[nadd]);
		at[nadd++] = (uint32_t)i;
	}
	dag_mempool_add_many(d, nadd, txs, tlens, (const uint8_t(*)[32])digests, known, added);
	for (uint32_t j = 0; j < nadd; j++) {
		struct weft_mpw *reply = replies ? &replies[at[j]] : NULL;
		rcs[at[j]] = added[j];
		if (added[j] != 0 || reply == NULL)
			continue;
		weft_mpw_map(reply, 2);
		weft_mpw_str(reply, "digest");
		hex_str(reply, digests[j], sizeof(digests[j]));
		weft_mpw_str(reply, "duplicate");
		weft_mpw_bool(reply, known[j]);
	}
	free(txs), free(tlens), free(at), free(digests), free(known), free(added);
	settle(d);
}

/* One transaction from the application: a batch of one. */
static int dag_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	int rc;
	dag_on_request_batch(state, 1, &req, &len, reply, &rc);
	return rc;
}

static int query_key(const uint8_t *arg, size_t alen, uint8_t out[32])
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, arg, alen);
	if (arg == NULL || weft_mp_read_bin_fixed(&r, out, 32) || weft_mp_remaining(&r))
		return WEFT_EINVAL;
	return 0;
}

static int dag_query(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct dag *d = state;
	uint8_t key[32];
	if (strcmp(what, "tx.status") == 0) {
		if (query_key(arg, alen, key))
			return WEFT_EINVAL;
		struct dag_committed c;
		const struct dag_tx_entry *e;
		int s = tx_state(d, key, &c, &e);
		if (s < 0)
			return s;
		weft_mpw_map(reply, s == DAG_TX_COMMITTED ? 5 : s == DAG_TX_PROPOSED ? 3 : 2);
		weft_mpw_str(reply, "digest");
		hex_str(reply, key, 32);
		weft_mpw_str(reply, "status");
		weft_mpw_str(reply, tx_state_name((enum dag_tx_state)s));
		if (s == DAG_TX_PROPOSED) {
			weft_mpw_str(reply, "round");
			weft_mpw_uint(reply, e->round);
		}
		if (s == DAG_TX_COMMITTED) {
			weft_mpw_str(reply, "round");
			weft_mpw_uint(reply, c.round);
			weft_mpw_str(reply, "position");
			weft_mpw_uint(reply, c.position);
			weft_mpw_str(reply, "outcome");
			weft_mpw_str(reply, d->app.outcome_name ? d->app.outcome_name(c.outcome) : "ordered");
		}
		return 0;
	}
	return WEFT_NOTFOUND;
}

#define DAG_INFO_FIELDS 20

uint32_t weft_dag_info_fields(void *state, struct weft_mpw *w)
{
	struct dag *d = state;
	struct dag_sync *s = &d->sync;
	weft_mpw_str(w, "mode");
	weft_mpw_str(w, d->mode == DAG_DENSE ? "dense" : "sparse");
	weft_mpw_str(w, "d");
	weft_mpw_uint(w, d->d);
	weft_mpw_str(w, "round");
	weft_mpw_uint(w, d->next_round);
	weft_mpw_str(w, "highest_round");
	weft_mpw_uint(w, d->highest == UINT64_MAX ? 0 : d->highest);
	weft_mpw_str(w, "committed_round");
	if (d->has_committed)
		weft_mpw_uint(w, d->committed_round);
	else
		weft_mpw_nil(w);
	weft_mpw_str(w, "committed_anchors");
	weft_mpw_uint(w, d->committed_anchors);
	weft_mpw_str(w, "committed_vertices");
	weft_mpw_uint(w, d->committed_vertices);
	weft_mpw_str(w, "committed_txs");
	weft_mpw_uint(w, d->committed_txs);
	weft_mpw_str(w, "duplicates_skipped");
	weft_mpw_uint(w, d->duplicates_skipped);
	weft_mpw_str(w, "order_hash");
	hex_str(w, d->order_hash, 32);
	weft_mpw_str(w, "gc_floor");
	weft_mpw_uint(w, d->floor);
	weft_mpw_str(w, "mempool_txs");
	weft_mpw_uint(w, d->mempool.count);
	weft_mpw_str(w, "mempool_bytes");
	weft_mpw_uint(w, d->mempool.bytes);
	weft_mpw_str(w, "own_vertices");
	weft_mpw_uint(w, d->own_vertices);
	weft_mpw_str(w, "delivered_vertices");
	weft_mpw_uint(w, d->delivered_vertices);
	weft_mpw_str(w, "restored_vertices");
	weft_mpw_uint(w, d->restored);
	weft_mpw_str(w, "timeouts");
	weft_mpw_uint(w, d->timeouts);
	weft_mpw_str(w, "rejected");
	weft_mpw_uint(w, d->rejected);
	weft_mpw_str(w, "sync");
	weft_mpw_map(w, 8);
	weft_mpw_str(w, "active");
	weft_mpw_bool(w, s->active);
	weft_mpw_str(w, "from");
	weft_mpw_uint(w, s->from);
	weft_mpw_str(w, "to");
	weft_mpw_uint(w, s->to);
	weft_mpw_str(w, "target_round");
	weft_mpw_uint(w, s->target);
	weft_mpw_str(w, "fetches");
	weft_mpw_uint(w, s->fetches);
	weft_mpw_str(w, "fetched_vertices");
	weft_mpw_uint(w, s->fetched);
	weft_mpw_str(w, "serves_from_round");
	weft_mpw_uint(w, d->kv_floor);
	weft_mpw_str(w, "snapshot");
	dag_snap_info(d, w);
	weft_mpw_str(w, "brb"); /* its map names the protocol */
	if (d->brb.ops->info)
		d->brb.ops->info(d->brb.state, w);
	else
		weft_mpw_str(w, d->brb_name);
	return DAG_INFO_FIELDS;
}

static void dag_info(void *state, struct weft_mpw *w)
{
	weft_mpw_map(w, DAG_INFO_FIELDS);
	weft_dag_info_fields(state, w);
}

void weft_dag_set_app(void *state, const struct weft_app *app)
{
	((struct dag *)state)->app = *app;
}

static void dag_destroy(void *state)
{
	struct dag *d = state;
	dag_graph_free(d);
	dag_sync_free(d);
	dag_snap_free(d);
	dag_txindex_free(&d->txindex);
	dag_dedup_free(d);
	for (uint32_t i = 0; i < d->nnamed; i++)
		named_free(&d->named[i]);
	free(d->named);
	d->named = NULL;
	dag_mempool_free(&d->mempool);
	if (d->brb.ops)
		weft_child_destroy(&d->brb);
	weft_mpw_free(&d->out);
}

const struct weft_proto_method weft_dag_methods[] = {
	{"tx.submit", WEFT_METHOD_SUBMIT, "data", "data=BYTES | data_hex=HEX",
	 "put one transaction into the mempool (checked by the application first); returns {digest, duplicate}", NULL},
	{"tx.submit_batch", WEFT_METHOD_SUBMIT_BATCH, "txs", "txs=[BYTES]",
	 "up to 100000 transactions in one step; returns {accepted, results: [{digest, duplicate} | {error}]}", NULL},
	{"tx.status", WEFT_METHOD_QUERY, "digest", "digest=HEX",
	 "unknown, pending, proposed {round} or committed {round, position, outcome}", NULL},
	{"tx.subscribe", WEFT_METHOD_SUBSCRIBE, NULL, "",
	 "a proto.deliver notification per committed transaction {origin, seq = log position, invalid, data}", NULL},
	{"dag.info", WEFT_METHOD_INFO, NULL, "",
	 "round, committed_round, committed_txs, order_hash, ledger_hash, sync progress, mempool, BRB state", NULL},
	{NULL, 0, NULL, NULL, NULL, NULL},
};

const struct weft_proto_ops weft_dag_consensus = {
	.abi = WEFT_PROTO_ABI,
	.name = "dag.consensus",
	.state_size = sizeof(struct dag),
	.init = dag_init,
	.start = dag_start,
	.on_message = dag_on_message,
	.on_timer = dag_on_timer,
	.on_request = dag_on_request,
	.on_request_batch = dag_on_request_batch,
	.query = dag_query,
	.info = dag_info,
	.destroy = dag_destroy,
	.strategies = dag_strategies,
};
