/* snapshot.c - state sync: checkpoints of the committed state, and their
 * transfer to a node that cannot catch up by range fetch (its missing
 * rounds fell below what its peers keep, or its store was lost).
 *
 * Checkpoint.  When an ordered anchor's round is snapshot_every rounds or
 * more past the last checkpoint, the node writes a snapshot of the state
 * that anchor left: the ordering state (committed round, transaction,
 * vertex and anchor counts, order hash), the committed index ("E" records)
 * and the application's records (its state_prefixes, weft/app.h), as they
 * are.  The checkpoints are a function of the committed sequence, which is
 * the same at every honest node, and so is the state after each one: every
 * honest node writes byte-identical snapshots, and a hash reported by
 * f + 1 peers is one an honest node wrote.  kv: "Q" -> version (1) round
 * (8) size (8) hash (32); "P" part (be32) -> the snapshot's bytes in parts
 * of SNAP_PART.  Garbage collection keeps the vertices of the gc_depth
 * rounds below the checkpoint in kv (dag.kv_floor), which is what a node
 * that installed it fetches next.
 *
 * Snapshot: [1, committed_round, committed_txs, committed_vertices,
 * committed_anchors, order_hash] followed by [key, value] pairs (msgpack
 * bin) in key order.
 *
 * Transfer.  Every sync tick a node compares the lowest round it lacks
 * (dag_frontier) with the lowest round its peers still serve (STATUS):
 * when f + 1 peers serve nothing that low, range fetch cannot help, and it
 * asks everyone which checkpoint they hold (SNAP_ASK / SNAP_INFO).  Once
 * f + 1 peers offer the same (round, size, hash) above its own committed
 * round it fetches the parts one after the other from those peers
 * (SNAP_GET / SNAP_PART: the next part is asked as soon as one arrives, a
 * silent supplier is replaced after two sync intervals), checks the hash,
 * and installs: the records replace its own, the in-memory DAG is rebuilt
 * from what kv holds above the new floor (committed round - gc_depth), the
 * application reloads, and range fetch brings the rounds from the floor
 * up.  The committed anchor, once fetched, marks what it reaches as
 * ordered (graph.c), as after a restart. */
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"

#include "dag.h"

#define SNAP_VERSION 1
#define SNAP_PART (256u << 10)
#define SNAP_META_LEN (1 + 8 + 8 + 32)
#define SNAP_META_KEY "Q"

void dag_snap_init(struct dag *d)
{
	memset(&d->snap, 0, sizeof(d->snap));
	d->snap.offers = calloc(d->n, sizeof(*d->snap.offers));
	if (d->snap.offers == NULL)
		abort();
}

static void transfer_end(struct dag *d)
{
	free(d->snap.buf);
	d->snap.buf = NULL;
	d->snap.got = 0;
	d->snap.active = false;
}

void dag_snap_free(struct dag *d)
{
	transfer_end(d);
	free(d->snap.offers);
	d->snap.offers = NULL;
}

/* ---- our checkpoint ---- */

static void part_key(uint8_t k[5], uint32_t part)
{
	k[0] = 'P';
	weft_be32_put(k + 1, part);
}

/* Our checkpoint's meta record: 0, or WEFT_NOTFOUND when we have none. */
static int meta_get(struct dag *d, struct dag_snap_offer *o)
{
	const void *val;
	size_t len;
	memset(o, 0, sizeof(*o));
	if (d->env->ops->kv_get(d->env, SNAP_META_KEY, 1, &val, &len) != 0)
		return WEFT_NOTFOUND;
	const uint8_t *p = val;
	if (len != SNAP_META_LEN || p[0] != SNAP_VERSION)
		return WEFT_NOTFOUND;
	o->round = weft_be64_get(p + 1);
	o->size = weft_be64_get(p + 9);
	memcpy(o->hash, p + 17, 32);
	return 0;
}

struct collect {
	struct weft_mpw *w;
	char prefix;
};

static int collect_record(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct collect *c = arg;
	if (klen == 0 || *(const char *)key != c->prefix)
		return 0;
	weft_mpw_array(c->w, 2);
	weft_mpw_bin(c->w, key, klen);
	weft_mpw_bin(c->w, val, vlen);
	return 0;
}

/* The records under each first byte of prefixes, in key order. */
static int collect_prefixes(struct dag *d, const char *prefixes, struct weft_mpw *w)
{
	for (const char *p = prefixes; *p; p++) {
		char from[1] = {*p}, to[1] = {(char)(*p + 1)};
		struct collect c = {w, *p};
		int rc = d->env->ops->kv_scan(d->env, from, 1, to, 1, collect_record, &c);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* "E" and the application's prefixes, in ascending order (the snapshot's
 * records come in key order). */
static void state_prefixes(const struct dag *d, char out[16])
{
	size_t n = 0;
	out[n++] = 'E';
	for (const char *p = d->app.state_prefixes; p && *p && n < 15; p++)
		out[n++] = *p;
	out[n] = '\0';
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
			char t = out[j];
			out[j] = out[j - 1], out[j - 1] = t;
		}
}

void dag_snap_checkpoint(struct dag *d)
{
	if (d->snapshot_every == 0 || d->committed_round < d->checkpoint_round + d->snapshot_every)
		return;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 6);
	weft_mpw_uint(&w, SNAP_VERSION);
	weft_mpw_uint(&w, d->committed_round);
	weft_mpw_uint(&w, d->committed_txs);
	weft_mpw_uint(&w, d->committed_vertices);
	weft_mpw_uint(&w, d->committed_anchors);
	weft_mpw_bin(&w, d->order_hash, 32);
	char prefixes[16];
	state_prefixes(d, prefixes);
	int rc = collect_prefixes(d, prefixes, &w);
	if (rc != 0) {
		weft_env_log(d->env, WEFT_LOG_ERROR, "dag.checkpoint", "round=%llu rc=%s",
			     (unsigned long long)d->committed_round, weft_strerror(rc));
		weft_mpw_free(&w);
		return;
	}
	struct dag_snap_offer old;
	uint32_t old_parts = meta_get(d, &old) == 0 ? (uint32_t)((old.size + SNAP_PART - 1) / SNAP_PART) : 0;
	uint32_t parts = (uint32_t)((w.len + SNAP_PART - 1) / SNAP_PART);
	for (uint32_t i = 0; i < parts; i++) {
		uint8_t k[5];
		size_t off = (size_t)i * SNAP_PART, len = w.len - off < SNAP_PART ? w.len - off : SNAP_PART;
		part_key(k, i);
		d->env->ops->kv_put(d->env, k, sizeof(k), w.buf + off, len);
	}
	for (uint32_t i = parts; i < old_parts; i++) {
		uint8_t k[5];
		part_key(k, i);
		d->env->ops->kv_del(d->env, k, sizeof(k));
	}
	uint8_t meta[SNAP_META_LEN];
	meta[0] = SNAP_VERSION;
	weft_be64_put(meta + 1, d->committed_round);
	weft_be64_put(meta + 9, w.len);
	weft_hash(meta + 17, w.buf, w.len);
	d->env->ops->kv_put(d->env, SNAP_META_KEY, 1, meta, sizeof(meta));
	d->checkpoint_round = d->committed_round;
	weft_env_metric(d->env, "dag.checkpoints", 1);
	weft_env_log(d->env, WEFT_LOG_DEBUG, "dag.checkpoint", "round=%llu bytes=%zu", (unsigned long long)d->committed_round,
		     w.len);
	weft_mpw_free(&w);
}

/* ---- transfer ---- */

static void send_small(struct dag *d, uint32_t to, const char *kind, uint64_t type, uint32_t nargs,
		       const uint64_t *args)
{
	weft_mpw_reset(&d->out);
	weft_mpw_array(&d->out, 2 + nargs);
	weft_mpw_uint(&d->out, DAG_VERSION);
	weft_mpw_uint(&d->out, type);
	for (uint32_t i = 0; i < nargs; i++)
		weft_mpw_uint(&d->out, args[i]);
	if (to == UINT32_MAX)
		weft_env_multicast(d->env, kind, d->out.buf, d->out.len);
	else
		weft_env_send(d->env, to, kind, d->out.buf, d->out.len);
}

static bool same_offer(const struct dag_snap_offer *a, const struct dag_snap_offer *b)
{
	return a->round == b->round && a->size == b->size && memcmp(a->hash, b->hash, 32) == 0;
}

/* Asks the next peer that offered the checkpoint we fetch for the part at
 * our offset (rotate: another one than the last). */
static void ask_part(struct dag *d, bool rotate)
{
	struct dag_snap *s = &d->snap;
	for (uint32_t tries = 0; rotate && tries < d->n; tries++) {
		s->supplier = (s->supplier + 1) % d->n;
		if (s->supplier != d->self && same_offer(&s->offers[s->supplier], &s->want))
			break;
	}
	uint64_t args[2] = {s->want.round, s->got};
	s->part_asked_us = weft_env_now(d->env);
	send_small(d, s->supplier, "dag.snap_get", DAG_MSG_SNAP_GET, 2, args);
}

/* f + 1 peers offer one checkpoint above our committed state: fetch it. */
static void maybe_start(struct dag *d)
{
	struct dag_snap *s = &d->snap;
	if (s->active)
		return;
	for (uint32_t p = 0; p < d->n; p++) {
		const struct dag_snap_offer *o = &s->offers[p];
		if (p == d->self || o->round == 0 || (d->has_committed && o->round <= d->committed_round) ||
		    o->size == 0 || o->size > d->snapshot_max)
			continue;
		uint32_t votes = 0;
		for (uint32_t q = 0; q < d->n; q++)
			votes += q != d->self && same_offer(&s->offers[q], o);
		if (votes < d->f + 1)
			continue;
		s->want = *o;
		s->active = true;
		s->got = 0;
		s->buf = malloc(o->size);
		if (s->buf == NULL)
			abort();
		s->supplier = p;
		weft_env_log(d->env, WEFT_LOG_INFO, "dag.snapshot", "fetching round=%llu bytes=%llu from %u peers",
			     (unsigned long long)o->round, (unsigned long long)o->size, votes);
		ask_part(d, false);
		return;
	}
}

/* Peers other than us whose latest offer is the checkpoint we fetch. */
static uint32_t still_offered(struct dag *d)
{
	uint32_t k = 0;
	for (uint32_t p = 0; p < d->n; p++)
		k += p != d->self && same_offer(&d->snap.offers[p], &d->snap.want);
	return k;
}

/* The supplier went silent or moved to a newer checkpoint: another peer
 * that still offers ours, or, when none does, start over with new offers. */
static void supplier_lost(struct dag *d)
{
	if (still_offered(d) > 0) {
		ask_part(d, true);
		return;
	}
	weft_env_log(d->env, WEFT_LOG_INFO, "dag.snapshot", "round=%llu no longer offered: asking again",
		     (unsigned long long)d->snap.want.round);
	transfer_end(d);
	d->snap.asked_us = 0;
}

void dag_snap_tick(struct dag *d)
{
	struct dag_snap *s = &d->snap;
	uint64_t now = weft_env_now(d->env);
	if (s->active && now - s->part_asked_us >= 2 * d->sync_us) {
		/* Silent: its offer is stale too. */
		memset(&s->offers[s->supplier], 0, sizeof(s->offers[s->supplier]));
		supplier_lost(d);
	}
	if (s->active)
		return;
	/* Range fetch cannot help when f + 1 peers (one of them honest) no
	 * longer serve the lowest round we lack. */
	uint64_t front = dag_frontier(d);
	uint32_t gone = 0;
	for (uint32_t p = 0; p < d->n; p++)
		gone += p != d->self && d->sync.peer_serves[p] > front;
	if (gone < d->f + 1 || now - s->asked_us < d->sync_us)
		return;
	s->asked_us = now;
	send_small(d, UINT32_MAX, "dag.snap_ask", DAG_MSG_SNAP_ASK, 0, NULL);
}

struct record_list {
	uint8_t (*keys)[64];
	uint8_t *lens;
	size_t n, cap;
	const char *prefixes;
};

static int list_key(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)val, (void)vlen;
	struct record_list *l = arg;
	if (klen == 0 || klen > 64 || strchr(l->prefixes, *(const char *)key) == NULL)
		return 0;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->keys = realloc(l->keys, l->cap * sizeof(*l->keys));
		l->lens = realloc(l->lens, l->cap);
		if (l->keys == NULL || l->lens == NULL)
			abort();
	}
	memcpy(l->keys[l->n], key, klen);
	l->lens[l->n++] = (uint8_t)klen;
	return 0;
}

/* Checks a received snapshot's form and the keys it may write: 0 and the
 * reader after the header, or WEFT_EDECODE. */
static int snapshot_header(struct dag *d, const uint8_t *buf, size_t len, struct weft_mp_reader *r, uint64_t h[5],
			   uint8_t order_hash[32])
{
	uint32_t count;
	weft_mp_reader_init(r, buf, len);
	if (weft_mp_read_array(r, &count) || count != 6)
		return WEFT_EDECODE;
	for (int i = 0; i < 5; i++)
		if (weft_mp_read_uint(r, &h[i]))
			return WEFT_EDECODE;
	if (h[0] != SNAP_VERSION || weft_mp_read_bin_fixed(r, order_hash, 32))
		return WEFT_EDECODE;
	char prefixes[16];
	state_prefixes(d, prefixes);
	struct weft_mp_reader body = *r;
	while (weft_mp_remaining(&body)) {
		uint32_t two, klen, vlen;
		const uint8_t *key, *val;
		if (weft_mp_read_array(&body, &two) || two != 2 || weft_mp_read_bin(&body, &key, &klen) ||
		    weft_mp_read_bin(&body, &val, &vlen) || klen == 0 || klen > 64 || strchr(prefixes, key[0]) == NULL)
			return WEFT_EDECODE;
	}
	return 0;
}

/* The snapshot in s->buf (its hash checked) replaces our committed state. */
static int install(struct dag *d)
{
	struct dag_snap *s = &d->snap;
	struct weft_mp_reader r;
	uint64_t h[5];
	uint8_t order_hash[32];
	int rc = snapshot_header(d, s->buf, s->want.size, &r, h, order_hash);
	if (rc != 0 || h[1] != s->want.round)
		return WEFT_EDECODE;
	char prefixes[16];
	state_prefixes(d, prefixes);
	/* Our records under those prefixes go, the snapshot's come. */
	struct record_list old = {.prefixes = prefixes};
	for (const char *p = prefixes; *p; p++) {
		char from[1] = {*p}, to[1] = {(char)(*p + 1)};
		if ((rc = d->env->ops->kv_scan(d->env, from, 1, to, 1, list_key, &old)) < 0)
			break;
	}
	for (size_t i = 0; rc >= 0 && i < old.n; i++)
		d->env->ops->kv_del(d->env, old.keys[i], old.lens[i]);
	free(old.keys);
	free(old.lens);
	if (rc < 0)
		return rc;
	while (weft_mp_remaining(&r)) {
		uint32_t two, klen, vlen;
		const uint8_t *key, *val;
		weft_mp_read_array(&r, &two);
		weft_mp_read_bin(&r, &key, &klen);
		weft_mp_read_bin(&r, &val, &vlen);
		if ((rc = d->env->ops->kv_put(d->env, key, klen, val, vlen)) != 0)
			return rc;
	}
	/* The snapshot is our checkpoint now: we can serve it too. */
	uint32_t parts = (uint32_t)((s->want.size + SNAP_PART - 1) / SNAP_PART);
	for (uint32_t i = 0; i < parts; i++) {
		uint8_t k[5];
		uint64_t off = (uint64_t)i * SNAP_PART;
		part_key(k, i);
		d->env->ops->kv_put(d->env, k, sizeof(k), s->buf + off,
				    s->want.size - off < SNAP_PART ? s->want.size - off : SNAP_PART);
	}
	uint8_t meta[SNAP_META_LEN];
	meta[0] = SNAP_VERSION;
	weft_be64_put(meta + 1, s->want.round);
	weft_be64_put(meta + 9, s->want.size);
	memcpy(meta + 17, s->want.hash, 32);
	d->env->ops->kv_put(d->env, SNAP_META_KEY, 1, meta, sizeof(meta));

	/* The ordering state, and the DAG rebuilt above the new floor. */
	d->has_committed = true;
	d->committed_round = h[1];
	d->committed_txs = h[2];
	d->committed_vertices = h[3];
	d->committed_anchors = h[4];
	memcpy(d->order_hash, order_hash, 32);
	d->checkpoint_round = h[1];
	/* The committed index first: our own vertices that leave below the new
	 * floor give back only what the snapshot does not hold as committed. */
	dag_dedup_free(d);
	if ((rc = dag_dedup_load(d)) != 0)
		return rc;
	uint64_t floor = h[1] > d->gc_depth ? h[1] - d->gc_depth : 0;
	if (floor > d->floor)
		dag_raise_floor(d, floor);
	dag_graph_reset(d);
	if ((rc = dag_restore_vertices(d)) != 0 || (d->app.reload && (rc = d->app.reload(d->app.ctx)) != 0))
		return rc;
	dag_state_save(d);
	return 0;
}

static int on_part(struct dag *d, uint32_t from, struct weft_mp_reader *r)
{
	struct dag_snap *s = &d->snap;
	uint64_t round, offset;
	const uint8_t *bytes;
	uint32_t len;
	if (weft_mp_read_uint(r, &round) || weft_mp_read_uint(r, &offset) || weft_mp_read_bin(r, &bytes, &len) ||
	    weft_mp_remaining(r))
		return WEFT_EDECODE;
	if (!s->active || from != s->supplier || round != s->want.round || offset != s->got)
		return 0; /* late, or not asked for */
	if (len == 0 || len > SNAP_PART || len > s->want.size - s->got)
		return WEFT_EPROTO;
	memcpy(s->buf + s->got, bytes, len);
	s->got += len;
	weft_env_metric(d->env, "dag.snapshot_bytes", len);
	if (s->got < s->want.size) {
		ask_part(d, false);
		return 0;
	}
	uint8_t hash[32];
	weft_hash(hash, s->buf, s->want.size);
	int rc = memcmp(hash, s->want.hash, 32) == 0 ? install(d) : WEFT_ECORRUPT;
	if (rc == 0) {
		s->installs++;
		s->installed_round = s->want.round;
		weft_env_metric(d->env, "dag.snapshot_installs", 1);
		/* "state.synced position=P": the log goes on at P (weft-sim's
		 * prefix checker allows the gap; docs/sim.md). */
		weft_env_log(d->env, WEFT_LOG_INFO, "state.synced", "position=%llu round=%llu floor=%llu",
			     (unsigned long long)d->committed_txs, (unsigned long long)d->committed_round,
			     (unsigned long long)d->floor);
	} else {
		weft_env_log(d->env, WEFT_LOG_ERROR, "dag.snapshot", "round=%llu not installed: %s",
			     (unsigned long long)s->want.round, weft_strerror(rc));
		/* Whoever offered it is not asked again for it. */
		for (uint32_t p = 0; p < d->n; p++)
			if (same_offer(&s->offers[p], &s->want))
				memset(&s->offers[p], 0, sizeof(s->offers[p]));
	}
	transfer_end(d);
	return 0;
}

/* SNAP_INFO: the checkpoint we hold (round 0, size 0: none). */
static void send_info(struct dag *d, uint32_t to, const struct dag_snap_offer *o)
{
	weft_mpw_reset(&d->out);
	weft_mpw_array(&d->out, 5);
	weft_mpw_uint(&d->out, DAG_VERSION);
	weft_mpw_uint(&d->out, DAG_MSG_SNAP_INFO);
	weft_mpw_uint(&d->out, o->round);
	weft_mpw_uint(&d->out, o->size);
	weft_mpw_bin(&d->out, o->hash, 32);
	weft_env_send(d->env, to, "dag.snap_info", d->out.buf, d->out.len);
}

/* Serves the part of our checkpoint at offset (aligned to SNAP_PART). */
static int on_get(struct dag *d, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t round, offset;
	if (weft_mp_read_uint(r, &round) || weft_mp_read_uint(r, &offset) || weft_mp_remaining(r))
		return WEFT_EDECODE;
	struct dag_snap_offer ours;
	if (meta_get(d, &ours) != 0 || ours.round != round || offset >= ours.size || offset % SNAP_PART) {
		send_info(d, from, &ours); /* gone or never held: what we hold instead */
		return 0;
	}
	uint8_t k[5];
	const void *val;
	size_t len;
	part_key(k, (uint32_t)(offset / SNAP_PART));
	if (d->env->ops->kv_get(d->env, k, sizeof(k), &val, &len) != 0)
		return 0;
	weft_mpw_reset(&d->out);
	weft_mpw_array(&d->out, 5);
	weft_mpw_uint(&d->out, DAG_VERSION);
	weft_mpw_uint(&d->out, DAG_MSG_SNAP_PART);
	weft_mpw_uint(&d->out, round);
	weft_mpw_uint(&d->out, offset);
	weft_mpw_bin(&d->out, val, len);
	weft_env_send(d->env, from, "dag.snap_part", d->out.buf, d->out.len);
	return 0;
}

int dag_snap_on_message(struct dag *d, uint32_t from, uint64_t type, struct weft_mp_reader *r)
{
	struct dag_snap_offer o;
	switch (type) {
	case DAG_MSG_SNAP_ASK:
		if (weft_mp_remaining(r))
			return WEFT_EDECODE;
		meta_get(d, &o);
		send_info(d, from, &o);
		return 0;
	case DAG_MSG_SNAP_INFO:
		if (weft_mp_read_uint(r, &o.round) || weft_mp_read_uint(r, &o.size) ||
		    weft_mp_read_bin_fixed(r, o.hash, 32) || weft_mp_remaining(r))
			return WEFT_EDECODE;
		d->snap.offers[from] = o;
		if (d->snap.active && from == d->snap.supplier && !same_offer(&o, &d->snap.want))
			supplier_lost(d);
		maybe_start(d);
		return 0;
	case DAG_MSG_SNAP_GET:
		return on_get(d, from, r);
	case DAG_MSG_SNAP_PART:
		return on_part(d, from, r);
	}
	return WEFT_EPROTO;
}

void dag_snap_info(struct dag *d, struct weft_mpw *w)
{
	struct dag_snap *s = &d->snap;
	weft_mpw_map(w, 6);
	weft_mpw_str(w, "checkpoint_round");
	weft_mpw_uint(w, d->checkpoint_round);
	weft_mpw_str(w, "fetching_round");
	if (s->active)
		weft_mpw_uint(w, s->want.round);
	else
		weft_mpw_nil(w);
	weft_mpw_str(w, "received_bytes");
	weft_mpw_uint(w, s->got);
	weft_mpw_str(w, "size_bytes");
	weft_mpw_uint(w, s->active ? s->want.size : 0);
	weft_mpw_str(w, "installs");
	weft_mpw_uint(w, s->installs);
	weft_mpw_str(w, "installed_round");
	weft_mpw_uint(w, s->installed_round);
}
