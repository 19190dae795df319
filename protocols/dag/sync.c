/* sync.c - catching up: STATUS heartbeats and fetching vertices by round
 * range.
 *
 * Every sync_ms each node multicasts STATUS [1, 0, round, committed + 1].
 * A node fetches rounds [from, to] when it lags (the (f+1)-th highest round
 * its peers report, which at least one honest node reached, is ahead of the
 * lowest round where it holds fewer than 2f+1 vertices) or when a vertex
 * has waited a whole sync interval for a parent nobody delivered to it.  It
 * sends FETCH [1, 1, from, to, full] to every peer, asking one of them (a
 * different one each time) for full vertices and the others for digests
 * only.  RANGE replies carry [round, author, digest, bytes|nil] per vertex
 * held.  A fetched vertex is taken once f+1 peers reported its digest (one
 * of them is honest, and honest nodes hold only vertices the BRB delivered,
 * so it is the one every honest node has for that slot) and we hold bytes
 * with that id; it then goes through the same validation as a
 * delivered one, and the BRB child stops waiting for that author's
 * instances up to it. */
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"

#include "dag.h"

#define SYNC_MAX_SPAN 64           /* rounds per FETCH at most */
/* Bytes of vertices per RANGE beyond its first round (which goes whole):
 * a reply must fit in the transport's frame (net.max_frame, 8 MiB by
 * default), which 8 MiB here overran by up to a round. */
#define SYNC_REPLY_BUDGET (2u << 20)

static uint32_t span_for(const struct dag *d)
{
	/* Keep the slot table near 64 * 4 entries whatever n is. */
	uint32_t span = 256 / d->n;
	return span < 1 ? 1 : span > 16 ? 16 : span;
}

void dag_sync_init(struct dag *d)
{
	struct dag_sync *s = &d->sync;
	memset(s, 0, sizeof(*s));
	s->replied = calloc((d->n + 7) / 8, 1);
	s->peer_round = calloc(d->n, sizeof(*s->peer_round));
	s->peer_serves = calloc(d->n, sizeof(*s->peer_serves));
	s->heard = calloc(d->n, sizeof(*s->heard));
	if (s->replied == NULL || s->peer_round == NULL || s->peer_serves == NULL || s->heard == NULL)
		abort();
	s->supplier = d->self;
}

static void sync_clear(struct dag *d)
{
	struct dag_sync *s = &d->sync;
	if (s->slots) {
		size_t nslots = (size_t)(s->to - s->from + 1) * d->n;
		for (size_t i = 0; i < nslots; i++) {
			free(s->slots[i].voted);
			for (uint32_t k = 0; k < s->slots[i].nrep; k++)
				free(s->slots[i].rep[k].bytes);
		}
		free(s->slots);
		s->slots = NULL;
	}
	s->active = false;
}

void dag_sync_free(struct dag *d)
{
	sync_clear(d);
	free(d->sync.replied);
	free(d->sync.peer_round);
	free(d->sync.peer_serves);
	free(d->sync.heard);
}

void dag_sync_want(struct dag *d, uint64_t round)
{
	if (d->sync.want == 0 || round + 1 < d->sync.want)
		d->sync.want = round + 1;
}

uint64_t dag_frontier(struct dag *d)
{
	uint64_t r = d->floor;
	for (;;) {
		struct dag_round *R = dag_round_get(d, r, false);
		if (R == NULL || R->inserted < d->quorum)
			return r;
		r++;
	}
}

/* The lowest round of a parent (strong or weak) that a vertex still waits
 * for, or UINT64_MAX. */
static uint64_t stuck_parent_round(struct dag *d)
{
	uint64_t lowest = UINT64_MAX;
	for (uint64_t r = d->floor + 1; r - d->floor < d->ring_cap && r <= lowest; r++) {
		struct dag_round *R = dag_round_get(d, r, false);
		for (uint32_t a = 0; R && a < d->n; a++) {
			const struct dag_vertex *v = R->slots[a].v;
			if (v == NULL || v->inserted || R->slots[a].dead || v->missing == 0)
				continue;
			for (uint32_t k = 0; k < v->nrefs + v->nweak; k++) {
				struct dag_ref ref = dag_parent(v, k);
				if (ref.round >= d->floor && ref.round < lowest && !dag_inserted(d, ref.round, ref.author))
					lowest = ref.round;
			}
		}
	}
	return lowest;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x > y ? -1 : x < y;
}

/* FETCH [from, to] to every peer, full vertices from `full` of them (the
 * next ones in turn), digests from the others. */
static void send_fetch(struct dag *d, uint64_t from, uint64_t to, uint32_t full)
{
	struct dag_sync *s = &d->sync;
	sync_clear(d);
	s->active = true;
	s->from = from;
	s->to = to;
	s->started_us = weft_env_now(d->env);
	s->replies = 0;
	memset(s->replied, 0, (d->n + 7) / 8);
	s->slots = calloc((size_t)(to - from + 1) * d->n, sizeof(*s->slots));
	if (s->slots == NULL)
		abort();
	do
		s->supplier = (s->supplier + 1) % d->n;
	while (s->supplier == d->self);
	s->fetches++;
	s->fetched_at_start = s->fetched;
	weft_env_metric(d->env, "dag.fetches", 1);
	for (uint32_t i = 0, p = s->supplier; i < d->n; i++, p = (p + 1) % d->n) {
		if (p == d->self)
			continue;
		bool supplies = full > 0;
		full -= supplies;
		weft_mpw_reset(&d->out);
		weft_mpw_array(&d->out, 5);
		weft_mpw_uint(&d->out, DAG_VERSION);
		weft_mpw_uint(&d->out, DAG_MSG_FETCH);
		weft_mpw_uint(&d->out, from);
		weft_mpw_uint(&d->out, to);
		weft_mpw_bool(&d->out, supplies);
		weft_env_send(d->env, p, "dag.fetch", d->out.buf, d->out.len);
	}
}

static void sync_plan(struct dag *d);

/* The (f+1)-th highest round our peers report: one honest node reached
 * it. */
static uint64_t committee_round(const struct dag *d)
{
	uint64_t rounds[1024];
	uint32_t k = 0;
	for (uint32_t p = 0; p < d->n && k < 1024; p++)
		if (p != d->self)
			rounds[k++] = d->sync.peer_round[p];
	qsort(rounds, k, sizeof(rounds[0]), cmp_desc);
	return k > d->f ? rounds[d->f] : 0;
}

/* A node that starts on an empty store makes no vertex until f + 1 peers
 * told it where the committee is.  When that is well ahead, it lost its
 * store (or joins late): its last own vertices may still be in flight at
 * its peers under bytes it no longer knows, and a second vertex for such a
 * round would never be delivered (the BRB refuses it), leaving its own
 * chain waiting for good; so its rounds start above what f + 1 peers report
 * (one of them honest: a Byzantine peer cannot push it up).  It made no
 * vertex before, so it skips no round it voted in. */
static void rejoin_rounds(struct dag *d)
{
	uint32_t heard = 0, need = d->n - 1 < d->f + 1 ? d->n - 1 : d->f + 1;
	for (uint32_t p = 0; p < d->n; p++)
		heard += d->sync.heard[p];
	if (!d->fresh_store || heard < need)
		return;
	d->fresh_store = false;
	uint64_t target = committee_round(d);
	if (target <= d->next_round + 2)
		return;
	weft_env_log(d->env, WEFT_LOG_WARN, "dag.rejoin", "from=%llu to=%llu started on an empty store behind the committee",
		     (unsigned long long)d->next_round, (unsigned long long)(target + 2));
	d->next_round = d->own_from = target + 2;
}

static void send_status(struct dag *d)
{
	weft_mpw_reset(&d->out);
	weft_mpw_array(&d->out, 5);
	weft_mpw_uint(&d->out, DAG_VERSION);
	weft_mpw_uint(&d->out, DAG_MSG_STATUS);
	weft_mpw_uint(&d->out, d->highest == UINT64_MAX ? 0 : d->highest);
	weft_mpw_uint(&d->out, d->has_committed ? d->committed_round + 1 : 0);
	weft_mpw_uint(&d->out, d->kv_floor);
	weft_env_multicast(d->env, "dag.status", d->out.buf, d->out.len);
}

void dag_sync_start(struct dag *d)
{
	send_status(d);
	rejoin_rounds(d);
}

void dag_sync_tick(struct dag *d)
{
	send_status(d);
	sync_plan(d);
	rejoin_rounds(d);
	dag_snap_tick(d);
}

static void sync_plan_now(struct dag *d);

/* Starts the next fetch when one is due and none is running (every peer
 * answered the last one, or two intervals passed). */
static void sync_plan(struct dag *d)
{
	struct dag_sync *s = &d->sync;
	uint64_t now = weft_env_now(d->env);
	if (s->active && s->replies + 1 < d->n && now - s->started_us < 2 * d->sync_us)
		return;
	sync_plan_now(d);
}

/* Plans and sends the next fetch, whatever the running one does. */
static void sync_plan_now(struct dag *d)
{
	struct dag_sync *s = &d->sync;
	/* A fetch that brought nothing (a silent or lying supplier) is asked
	 * again of f + 1 suppliers: one of them is honest. */
	uint32_t full = s->fetches == 0 || s->fetched > s->fetched_at_start ? 1 : d->f + 1;
	sync_clear(d);
	s->target = committee_round(d);
	uint64_t from = UINT64_MAX;
	uint64_t front = dag_frontier(d);
	/* Behind by more than the rounds in flight, or behind at all with no
	 * progress for a whole interval (nothing will arrive by itself). */
	if (s->target > front + 2 || (s->target > front && front == s->last_front))
		from = front;
	s->last_front = front;
	uint64_t stuck = stuck_parent_round(d), span = span_for(d);
	if (stuck < from)
		from = stuck;
	if (s->want && s->want - 1 < from && s->want - 1 >= d->floor)
		from = s->want - 1;
	s->want = 0;
	if (from == UINT64_MAX || d->n < 2)
		return;
	/* A hole below rounds we hold (a run of one author's vertices nobody
	 * delivered to us, each waiting for the one before): the span that
	 * ends at it, not one round per fetch walking down. */
	if (from == stuck && stuck < front)
		from = stuck >= d->floor + span - 1 ? stuck - span + 1 : d->floor;
	uint64_t to = from + span - 1;
	if (s->target > from && to > s->target)
		to = s->target;
	if (to - from + 1 > d->ring_cap / 2)
		to = from + d->ring_cap / 2 - 1;
	send_fetch(d, from, to, full);
}

/* The vertex (q, a) as we can serve it: from memory, or from kv below the
 * floor (kept down to kv_floor for nodes installing our checkpoint).  True
 * with its digest and length, and its bytes when want_bytes (NULL when
 * they cannot be read). */
static bool served(struct dag *d, uint64_t q, uint32_t a, bool want_bytes, uint8_t digest[32], const void **vb,
		   size_t *vlen)
{
	uint8_t k[13];
	const void *val;
	size_t len;
	dag_vertex_key(k, q, a);
	*vb = NULL;
	if (q >= d->floor) {
		struct dag_round *R = dag_round_get(d, q, false);
		const struct dag_vertex *v = R ? R->slots[a].v : NULL;
		if (v == NULL || R->slots[a].dead)
			return false;
		memcpy(digest, v->digest, 32);
		*vlen = v->len;
		if (want_bytes)
			*vb = v->bytes ? v->bytes : d->env->ops->kv_get(d->env, k, sizeof(k), &val, &len) == 0 ? val : NULL;
		return true;
	}
	if (q < d->kv_floor || d->env->ops->kv_get(d->env, k, sizeof(k), &val, &len) != 0 ||
	    dag_vertex_id(val, len, digest) != 0)
		return false;
	*vlen = len;
	if (want_bytes)
		*vb = val;
	return true;
}

static int on_fetch(struct dag *d, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t lo, hi;
	bool full;
	if (weft_mp_read_uint(r, &lo) || weft_mp_read_uint(r, &hi) || weft_mp_read_bool(r, &full) ||
	    weft_mp_remaining(r) || hi < lo || hi - lo >= SYNC_MAX_SPAN)
		return WEFT_EDECODE;
	/* Count the vertices we hold in range, within the byte budget. */
	uint32_t count = 0;
	size_t bytes = 0;
	uint64_t last = lo;
	uint8_t digest[32];
	const void *vb;
	size_t vlen;
	for (uint64_t q = lo; q <= hi; q++) {
		uint32_t here = 0;
		size_t more = 0;
		for (uint32_t a = 0; a < d->n; a++)
			if (served(d, q, a, false, digest, &vb, &vlen))
				here++, more += full ? vlen : 0;
		if (q > lo && bytes + more > SYNC_REPLY_BUDGET)
			break;
		count += here;
		bytes += more;
		last = q;
	}
	weft_mpw_reset(&d->out);
	weft_mpw_array(&d->out, 5);
	weft_mpw_uint(&d->out, DAG_VERSION);
	weft_mpw_uint(&d->out, DAG_MSG_RANGE);
	weft_mpw_uint(&d->out, lo);
	weft_mpw_uint(&d->out, last);
	weft_mpw_array(&d->out, count);
	for (uint64_t q = lo; q <= last; q++)
		for (uint32_t a = 0; a < d->n; a++) {
			if (!served(d, q, a, full, digest, &vb, &vlen))
				continue;
			weft_mpw_array(&d->out, 4);
			weft_mpw_uint(&d->out, q);
			weft_mpw_uint(&d->out, a);
			weft_mpw_bin(&d->out, digest, 32);
			if (vb)
				weft_mpw_bin(&d->out, vb, vlen);
			else
				weft_mpw_nil(&d->out);
		}
	weft_env_send(d->env, from, "dag.range", d->out.buf, d->out.len);
	return 0;
}

/* One reported (round, author, digest[, bytes]) of the running fetch. */
static void take_report(struct dag *d, uint32_t from, uint64_t round, uint32_t author, const uint8_t digest[32],
			const uint8_t *bytes, uint32_t blen)
{
	struct dag_sync *s = &d->sync;
	struct dag_sync_slot *ss = &s->slots[(size_t)(round - s->from) * d->n + author];
	if (ss->voted == NULL && (ss->voted = calloc((d->n + 7) / 8, 1)) == NULL)
		abort();
	if (ss->voted[from / 8] & (1u << (from % 8)))
		return;
	ss->voted[from / 8] |= (uint8_t)(1u << (from % 8));
	struct dag_report *rep = NULL;
	for (uint32_t k = 0; k < ss->nrep; k++)
		if (memcmp(ss->rep[k].digest, digest, 32) == 0)
			rep = &ss->rep[k];
	if (rep == NULL) {
		if (ss->nrep == sizeof(ss->rep) / sizeof(ss->rep[0]))
			return;
		rep = &ss->rep[ss->nrep++];
		memcpy(rep->digest, digest, 32);
	}
	rep->count++;
	if (bytes && rep->bytes == NULL) {
		uint8_t id[32];
		if (dag_vertex_id(bytes, blen, id) == 0 && memcmp(id, digest, 32) == 0) {
			rep->bytes = malloc(blen);
			if (rep->bytes == NULL)
				abort();
			memcpy(rep->bytes, bytes, blen);
			rep->len = blen;
		} else {
			s->forged++;
			weft_env_metric(d->env, "dag.fetch_forged", 1);
		}
	}
	if (rep->count < d->f + 1 || rep->bytes == NULL)
		return;
	struct dag_round *R = dag_round_get(d, round, true);
	if (R == NULL || R->slots[author].v || R->slots[author].dead)
		return;
	const char *why;
	struct dag_vertex *v = dag_vertex_decode(d, author, round, rep->bytes, rep->len, NULL, &why);
	if (v == NULL) {
		dag_reject(d, "dag.fetch_invalid", "round=%llu author=%u %s", (unsigned long long)round, author, why);
		return;
	}
	s->fetched++;
	weft_env_metric(d->env, "dag.fetched", 1);
	d->brbf->skip(d->brb.state, author, round + 1);
	dag_accept(d, v, true);
}

static int on_range(struct dag *d, uint32_t from, struct weft_mp_reader *r)
{
	struct dag_sync *s = &d->sync;
	uint64_t lo, hi;
	uint32_t count;
	if (weft_mp_read_uint(r, &lo) || weft_mp_read_uint(r, &hi) || weft_mp_read_array(r, &count) ||
	    count > SYNC_MAX_SPAN * d->n)
		return WEFT_EDECODE;
	bool ours = s->active && lo == s->from && hi <= s->to && hi >= lo &&
		    !(s->replied[from / 8] & (1u << (from % 8)));
	if (ours) {
		s->replied[from / 8] |= (uint8_t)(1u << (from % 8));
		s->replies++;
	}
	/* A quorum answered (counting us): what f + 1 of them agree on is in. */
	bool answered = ours && s->replies + 1 == d->quorum;
	uint64_t fetched_before = s->fetched_at_start;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t four, author, blen = 0;
		uint64_t round;
		uint8_t digest[32];
		const uint8_t *bytes = NULL;
		if (weft_mp_read_array(r, &four) || four != 4 || weft_mp_read_uint(r, &round) ||
		    weft_mp_read_u32(r, &author) || author >= d->n || weft_mp_read_bin_fixed(r, digest, 32))
			return WEFT_EDECODE;
		if (weft_mp_peek_nil(r)) {
			if (weft_mp_read_nil(r))
				return WEFT_EDECODE;
		} else if (weft_mp_read_bin(r, &bytes, &blen)) {
			return WEFT_EDECODE;
		}
		if (round < lo || round > hi)
			return WEFT_EPROTO;
		if (ours && s->active && round >= s->from && round <= s->to)
			take_report(d, from, round, author, digest, bytes, blen);
	}
	if (weft_mp_remaining(r))
		return WEFT_EDECODE;
	if (answered && s->fetched > fetched_before)
		sync_plan_now(d); /* it helped: the next range at once, at network speed */
	return 0;
}

int dag_sync_on_message(struct dag *d, uint32_t from, uint64_t type, struct weft_mp_reader *r)
{
	switch ((enum dag_msg)type) {
	case DAG_MSG_STATUS: {
		uint64_t round, committed, serves;
		if (weft_mp_read_uint(r, &round) || weft_mp_read_uint(r, &committed) || weft_mp_read_uint(r, &serves) ||
		    weft_mp_remaining(r))
			return WEFT_EDECODE;
		d->sync.peer_round[from] = round;
		d->sync.peer_serves[from] = serves;
		d->sync.heard[from] = true;
		rejoin_rounds(d);
		return 0;
	}
	case DAG_MSG_FETCH:
		return on_fetch(d, from, r);
	case DAG_MSG_RANGE:
		return on_range(d, from, r);
	case DAG_MSG_SNAP_ASK:
	case DAG_MSG_SNAP_INFO:
	case DAG_MSG_SNAP_GET:
	case DAG_MSG_SNAP_PART:
		return dag_snap_on_message(d, from, type, r);
	}
	return WEFT_EPROTO;
}
