/* relay.c - relays for directed topologies (weft/relay.h): a protocol that
 * needs every node to talk to every other runs behind an env wrapper that
 * carries its multicasts, and its unicasts to nodes we cannot reach, as
 * signed envelopes flooded over the configured directed graph.  Node code:
 * weftd and weft-sim run it alike; the host only carries what it sends.
 *
 * Envelope: WEFT_RELAY_MARKER, then [1, origin, dest (nil: all), seq,
 * payload (bin), sig (bin 64)]; sig is the origin's over STMT_TAG || origin
 * (be32) || dest (be32, all ones for all) || seq (be64) || BLAKE2b(payload).
 * A node takes the first valid copy of each (origin, seq), forwards it once
 * to its out-neighbours (but the one it came from and the origin; only to
 * dest when dest is one of them), and delivers it when it is for itself or
 * for all.  A per-origin window of WEFT_RELAY_WINDOW sequence numbers drops
 * the other copies and replays.  Our own sequence numbers survive a restart:
 * kv "relay.seq" holds a bound below which every number may have been used,
 * moved RELAY_SEQ_BLOCK ahead when reached (in the callback that sends, so
 * the host stores it before the envelope leaves).
 *
 * The graph check (init): relaying signed messages connects every pair of
 * honest nodes iff no set F of at most f nodes leaves the others not
 * strongly connected.  If some F cuts the rest into A and B with no edge
 * from A to B, F avoids one of f + 1 fixed nodes x, and either x is in A
 * (F cuts x from every node of B) or in B (F cuts every node of A from x).
 * So it suffices that each of nodes 0..f has f + 1 internally disjoint
 * paths to and from every node it has no edge with (Menger): at most
 * 2 (f + 1) (n - 1) max-flows, each stopped at f + 1, on the split-node
 * graph (Dinic).  A flow of at most f names its min cut as the set F. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/relay.h"

#define ENVELOPE_VERSION 1
#define RELAY_ALL UINT32_MAX
#define STMT_TAG "weft-relay-1"
#define STMT_TAG_LEN (sizeof(STMT_TAG) - 1)
#define STMT_LEN (STMT_TAG_LEN + 4 + 4 + 8 + WEFT_HASH_LEN)
#define SEQ_KEY "relay.seq"
#define SEQ_KEY_LEN (sizeof(SEQ_KEY) - 1)
#define RELAY_SEQ_BLOCK 65536

/* Sequence numbers seen from one origin: seq < top - WEFT_RELAY_WINDOW is
 * too old; in [top - WEFT_RELAY_WINDOW, top) bit seq % WEFT_RELAY_WINDOW
 * says whether it was seen; seq >= top is new. */
struct weft_relay_window {
	uint64_t top;
	uint64_t bits[WEFT_RELAY_WINDOW / 64];
};

struct envelope {
	uint32_t origin;
	uint32_t dest;             /* RELAY_ALL for a multicast */
	uint64_t seq;
	const uint8_t *payload;
	uint32_t plen;
	const uint8_t *sig;
};

/* A directed graph in compressed rows: node i's out-neighbours are
 * adj[off[i]] .. adj[off[i + 1] - 1], ascending. */
struct graph {
	uint32_t n;
	uint32_t *off;
	uint32_t *adj;
};

static void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size);
	if (p == NULL)
		abort();
	return p;
}

static void bump(struct weft_relay *r, uint64_t *counter, const char *metric)
{
	(*counter)++;
	weft_env_metric(r->env, metric, 1);
}

/* ---- the topology parameter ---- */

static void graph_free(struct graph *g)
{
	free(g->off);
	free(g->adj);
}

static bool has_edge(const struct graph *g, uint32_t u, uint32_t v)
{
	uint32_t lo = g->off[u], hi = g->off[u + 1];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (g->adj[mid] == v)
			return true;
		if (g->adj[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

#define BAD_TOPOLOGY(env, ...) (weft_env_log((env), WEFT_LOG_ERROR, "relay.topology", __VA_ARGS__), WEFT_EINVAL)

/* Reads list i of the topology into g (rows 0..i-1 are in).  listed[v]
 * is i + 1 once list i holds v.  0 or WEFT_EINVAL (logged). */
static int parse_list(struct weft_env *env, struct weft_mp_reader *r, uint32_t i, uint32_t *listed, struct graph *g)
{
	uint32_t n = g->n, count;
	if (weft_mp_read_array(r, &count) != 0 || count > n - 1)
		return BAD_TOPOLOGY(env, "directed[%u] is not a list of at most n - 1 = %u node indices", i, n - 1);
	g->off[i + 1] = g->off[i] + count;
	g->adj = realloc(g->adj, (g->off[i + 1] ? g->off[i + 1] : 1) * sizeof(*g->adj));
	if (g->adj == NULL)
		abort();
	for (uint32_t j = 0; j < count; j++) {
		uint64_t v;
		if (weft_mp_read_uint(r, &v) != 0 || v >= n)
			return BAD_TOPOLOGY(env, "directed[%u][%u] is not a node index below n = %u", i, j, n);
		if (v == i)
			return BAD_TOPOLOGY(env, "directed[%u] lists node %u itself", i, i);
		if (listed[v] == i + 1)
			return BAD_TOPOLOGY(env, "directed[%u] lists node %u twice", i, (uint32_t)v);
		listed[v] = i + 1;
		g->adj[g->off[i] + j] = (uint32_t)v;
	}
	qsort(g->adj + g->off[i], count, sizeof(*g->adj), cmp_u32);
	return 0;
}

/* Reads {"directed": L} into g: exactly n lists of node indices below n,
 * none listing itself or a node twice.  0 or WEFT_EINVAL (logged). */
static int parse_graph(struct weft_env *env, const uint8_t *val, size_t vlen, struct graph *g)
{
	struct weft_mp_reader r;
	uint32_t pairs = 0, lists = 0, klen = 0;
	const char *key = NULL;
	weft_mp_reader_init(&r, val, vlen);
	weft_mp_read_map(&r, &pairs);
	weft_mp_read_str(&r, &key, &klen);
	weft_mp_read_array(&r, &lists);
	if (r.err || pairs != 1 || klen != 8 || memcmp(key, "directed", 8) != 0)
		return BAD_TOPOLOGY(env, "expected \"complete\" or {\"directed\": [[out-neighbours of node 0], ...]}");
	if (lists != env->n)
		return BAD_TOPOLOGY(env, "directed has %u lists, expected n = %u", lists, env->n);
	g->n = env->n;
	g->off = xcalloc(g->n + 1, sizeof(*g->off));
	uint32_t *listed = xcalloc(g->n, sizeof(*listed));
	int rc = 0;
	for (uint32_t i = 0; i < g->n && rc == 0; i++)
		rc = parse_list(env, &r, i, listed, g);
	free(listed);
	return rc;
}

/* ---- the graph check: max-flow on the split-node graph ---- */

/* Node v is in(v) = 2v and out(v) = 2v + 1, joined by an arc of capacity 1
 * (a node carries one path); an edge u -> v is an arc out(u) -> in(v) of
 * capacity n, which no cut of at most f takes.  Arcs sit in compressed
 * rows, each with its reverse. */
struct flownet {
	uint32_t nodes;
	uint32_t *start;           /* nodes + 1 */
	uint32_t *to, *rev;
	int32_t *cap0, *cap;       /* initial and residual capacities */
	int32_t *level;            /* BFS distance from the source, -1: unreached */
	uint32_t *it;              /* DFS: next arc to try */
	uint32_t *queue;
};

static uint32_t node_in(uint32_t v)
{
	return 2 * v;
}

static uint32_t node_out(uint32_t v)
{
	return 2 * v + 1;
}

static void add_arc(struct flownet *f, uint32_t *cursor, uint32_t a, uint32_t b, int32_t cap)
{
	uint32_t i = cursor[a]++, j = cursor[b]++;
	f->to[i] = b, f->rev[i] = j, f->cap0[i] = cap;
	f->to[j] = a, f->rev[j] = i, f->cap0[j] = 0;
}

static void flownet_build(struct flownet *f, const struct graph *g)
{
	uint32_t n = g->n, arcs = 2 * (n + g->off[n]);
	f->nodes = 2 * n;
	f->start = xcalloc(f->nodes + 1, sizeof(*f->start));
	for (uint32_t v = 0; v < n; v++) {
		f->start[node_in(v) + 1]++;
		f->start[node_out(v) + 1] += 1 + g->off[v + 1] - g->off[v];
		for (uint32_t k = g->off[v]; k < g->off[v + 1]; k++)
			f->start[node_in(g->adj[k]) + 1]++;
	}
	for (uint32_t x = 0; x < f->nodes; x++)
		f->start[x + 1] += f->start[x];
	f->to = xcalloc(arcs, sizeof(*f->to));
	f->rev = xcalloc(arcs, sizeof(*f->rev));
	f->cap0 = xcalloc(arcs, sizeof(*f->cap0));
	f->cap = xcalloc(arcs, sizeof(*f->cap));
	f->level = xcalloc(f->nodes, sizeof(*f->level));
	f->it = xcalloc(f->nodes, sizeof(*f->it));
	f->queue = xcalloc(f->nodes, sizeof(*f->queue));
	uint32_t *cursor = xcalloc(f->nodes, sizeof(*cursor));
	memcpy(cursor, f->start, f->nodes * sizeof(*cursor));
	for (uint32_t v = 0; v < n; v++) {
		add_arc(f, cursor, node_in(v), node_out(v), 1);
		for (uint32_t k = g->off[v]; k < g->off[v + 1]; k++)
			add_arc(f, cursor, node_out(v), node_in(g->adj[k]), (int32_t)n);
	}
	free(cursor);
}

static void flownet_free(struct flownet *f)
{
	free(f->start);
	free(f->to);
	free(f->rev);
	free(f->cap0);
	free(f->cap);
	free(f->level);
	free(f->it);
	free(f->queue);
}

/* Levels of the residual graph from s; true when t is reached. */
static bool bfs(struct flownet *f, uint32_t s, uint32_t t)
{
	uint32_t head = 0, tail = 0;
	for (uint32_t x = 0; x < f->nodes; x++)
		f->level[x] = -1;
	f->level[s] = 0;
	f->queue[tail++] = s;
	while (head < tail) {
		uint32_t x = f->queue[head++];
		for (uint32_t a = f->start[x]; a < f->start[x + 1]; a++)
			if (f->cap[a] > 0 && f->level[f->to[a]] < 0) {
				f->level[f->to[a]] = f->level[x] + 1;
				f->queue[tail++] = f->to[a];
			}
	}
	return f->level[t] >= 0;
}

/* One unit along the level graph from x to t (depth at most 2n). */
static bool dfs(struct flownet *f, uint32_t x, uint32_t t)
{
	if (x == t)
		return true;
	for (; f->it[x] < f->start[x + 1]; f->it[x]++) {
		uint32_t a = f->it[x], y = f->to[a];
		if (f->cap[a] > 0 && f->level[y] == f->level[x] + 1 && dfs(f, y, t)) {
			f->cap[a]--;
			f->cap[f->rev[a]]++;
			return true;
		}
	}
	return false;
}

/* Internally disjoint paths from u to v (no edge u -> v), counted up to
 * limit.  Below limit, level[] marks what u still reaches: the min cut. */
static uint32_t disjoint_paths(struct flownet *f, uint32_t u, uint32_t v, uint32_t limit)
{
	uint32_t s = node_out(u), t = node_in(v), flow = 0;
	memcpy(f->cap, f->cap0, f->start[f->nodes] * sizeof(*f->cap));
	while (flow < limit && bfs(f, s, t)) {
		memcpy(f->it, f->start, f->nodes * sizeof(*f->it));
		while (flow < limit && dfs(f, s, t))
			flow++;
	}
	return flow;
}

/* When at most f nodes cut u from v: logs them (the min cut of the flow
 * just computed) and returns WEFT_EINVAL. */
static int cut_pair(struct weft_env *env, struct flownet *f, uint32_t n, uint32_t u, uint32_t v)
{
	if (disjoint_paths(f, u, v, env->f + 1) > env->f)
		return 0;
	char list[256] = "";
	size_t used = 0;
	for (uint32_t x = 0; x < n && used < sizeof(list); x++)
		if (f->level[node_in(x)] >= 0 && f->level[node_out(x)] < 0)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%u", used ? ", " : "", x);
	return BAD_TOPOLOGY(env, "removing nodes {%s} (f = %u) leaves no path from %u to %u", list, env->f, u, v);
}

/* 0 when no f nodes leave the others not strongly connected; else
 * WEFT_EINVAL with a separating set and the pair it cuts logged. */
static int check_graph(struct weft_env *env, const struct graph *g)
{
	struct flownet f;
	uint32_t n = g->n, sources = env->f + 1 < n ? env->f + 1 : n;
	int rc = 0;
	flownet_build(&f, g);
	for (uint32_t x = 0; x < sources && rc == 0; x++)
		for (uint32_t w = 0; w < n && rc == 0; w++) {
			if (w == x)
				continue;
			if (!has_edge(g, x, w))
				rc = cut_pair(env, &f, n, x, w);
			/* pairs of two sources are covered from each side */
			if (rc == 0 && w >= sources && !has_edge(g, w, x))
				rc = cut_pair(env, &f, n, w, x);
		}
	flownet_free(&f);
	return rc;
}

/* ---- envelopes ---- */

static void statement(uint8_t out[STMT_LEN], const struct envelope *e)
{
	memcpy(out, STMT_TAG, STMT_TAG_LEN);
	weft_be32_put(out + STMT_TAG_LEN, e->origin);
	weft_be32_put(out + STMT_TAG_LEN + 4, e->dest);
	weft_be64_put(out + STMT_TAG_LEN + 8, e->seq);
	weft_hash(out + STMT_TAG_LEN + 16, e->payload, e->plen);
}

/* Bounded decode of a whole envelope.  0 or WEFT_EDECODE. */
static int decode(const struct weft_relay *r, const uint8_t *msg, size_t len, struct envelope *e)
{
	struct weft_mp_reader rd;
	uint32_t count = 0, siglen = 0;
	uint64_t version = 0, origin = 0, dest = RELAY_ALL, seq = 0;
	uint32_t n = r->env->n;
	weft_mp_reader_init(&rd, msg + 1, len - 1);
	weft_mp_read_array(&rd, &count);
	weft_mp_read_uint(&rd, &version);
	weft_mp_read_uint(&rd, &origin);
	if (weft_mp_peek_nil(&rd))
		weft_mp_read_nil(&rd);
	else
		weft_mp_read_uint(&rd, &dest);
	weft_mp_read_uint(&rd, &seq);
	weft_mp_read_bin(&rd, &e->payload, &e->plen);
	weft_mp_read_bin(&rd, &e->sig, &siglen);
	if (rd.err || weft_mp_remaining(&rd) != 0 || count != 6 || version != ENVELOPE_VERSION || origin >= n ||
	    (dest != RELAY_ALL && (dest >= n || dest == origin)) || seq == UINT64_MAX || siglen != WEFT_SIGNATURE_LEN)
		return WEFT_EDECODE;
	e->origin = (uint32_t)origin;
	e->dest = (uint32_t)dest;
	e->seq = seq;
	return 0;
}

static bool window_seen(const struct weft_relay_window *w, uint64_t seq)
{
	if (seq >= w->top)
		return false;
	if (w->top - seq > WEFT_RELAY_WINDOW)
		return true; /* too old to tell: a replay or a hopeless straggler */
	return w->bits[seq % WEFT_RELAY_WINDOW / 64] >> (seq % 64) & 1;
}

static void window_mark(struct weft_relay_window *w, uint64_t seq)
{
	if (seq >= w->top) {
		if (seq - w->top >= WEFT_RELAY_WINDOW)
			memset(w->bits, 0, sizeof(w->bits));
		else
			for (uint64_t s = w->top; s < seq; s++)
				w->bits[s % WEFT_RELAY_WINDOW / 64] &= ~(UINT64_C(1) << (s % 64));
		w->top = seq + 1;
	}
	w->bits[seq % WEFT_RELAY_WINDOW / 64] |= UINT64_C(1) << (seq % 64);
}

/* Sends an envelope on: to dest alone when it is an out-neighbour, else to
 * every out-neighbour but from and the origin.  0, or the last send's
 * error (WEFT_EAGAIN: queued over the high-water mark). */
static int flood(struct weft_relay *r, const struct envelope *e, uint32_t from, const char *kind, const uint8_t *msg,
		 size_t len)
{
	if (e->dest != RELAY_ALL && r->reach[e->dest])
		return weft_env_send(r->env, e->dest, kind, msg, len);
	int rc = 0;
	for (uint32_t i = 0; i < r->nout; i++) {
		uint32_t v = r->out[i];
		if (v == from || v == e->origin)
			continue;
		int x = weft_env_send(r->env, v, kind, msg, len);
		if (x != 0)
			rc = x;
	}
	return rc;
}

/* Our own envelope for dest (RELAY_ALL: everyone), flooded. */
static int originate(struct weft_relay *r, uint32_t dest, const char *kind, const void *msg, size_t len)
{
	if (len > UINT32_MAX)
		return WEFT_ETOOBIG;
	if (r->next_seq == r->reserved) {
		uint8_t bound[8];
		weft_be64_put(bound, r->next_seq + RELAY_SEQ_BLOCK);
		int rc = r->env->ops->kv_put(r->env, SEQ_KEY, SEQ_KEY_LEN, bound, sizeof(bound));
		if (rc != 0)
			return rc;
		r->reserved = r->next_seq + RELAY_SEQ_BLOCK;
	}
	struct envelope e = {r->env->self, dest, r->next_seq++, msg, (uint32_t)len, NULL};
	uint8_t stmt[STMT_LEN], sig[WEFT_SIGNATURE_LEN];
	statement(stmt, &e);
	r->env->ops->sign(r->env, stmt, sizeof(stmt), sig);
	struct weft_mpw *w = &r->scratch;
	uint8_t marker = WEFT_RELAY_MARKER;
	weft_mpw_reset(w);
	weft_mpw_raw(w, &marker, 1);
	weft_mpw_array(w, 6);
	weft_mpw_uint(w, ENVELOPE_VERSION);
	weft_mpw_uint(w, e.origin);
	if (dest == RELAY_ALL)
		weft_mpw_nil(w);
	else
		weft_mpw_uint(w, dest);
	weft_mpw_uint(w, e.seq);
	weft_mpw_bin(w, msg, len);
	weft_mpw_bin(w, sig, sizeof(sig));
	bump(r, &r->originated, "relay.originated");
	return flood(r, &e, e.origin, kind, w->buf, w->len);
}

/* ---- the wrapper the relayed protocol sees ---- */

static struct weft_relay *relay_of(struct weft_env *env)
{
	return (struct weft_relay *)weft_env_wrapped(env);
}

static int relay_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	struct weft_relay *r = relay_of(env);
	if (to >= env->n || to == env->self || r->reach[to])
		return weft_env_send(r->env, to, kind, msg, len);
	return originate(r, to, kind, msg, len);
}

static int relay_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	struct weft_relay *r = relay_of(env);
	if (r->nout == env->n - 1)
		return weft_env_multicast(r->env, kind, msg, len);
	return originate(r, RELAY_ALL, kind, msg, len);
}

/* ---- the relay's life ---- */

/* Where our sequence numbers resume: the bound kv recorded (0 at first). */
static int load_seq(struct weft_relay *r)
{
	const void *val;
	size_t vlen;
	int rc = r->env->ops->kv_get(r->env, SEQ_KEY, SEQ_KEY_LEN, &val, &vlen);
	if (rc == WEFT_NOTFOUND)
		return 0;
	if (rc != 0 || vlen != 8)
		return rc != 0 ? rc : WEFT_ECORRUPT;
	r->next_seq = r->reserved = weft_be64_get(val);
	return 0;
}

int weft_relay_init(struct weft_relay *r, struct weft_env *env, const uint8_t *params, size_t plen)
{
	const uint8_t *val;
	size_t vlen;
	r->env = env;
	int rc = weft_params_value(params, plen, "topology", &val, &vlen);
	if (rc == WEFT_NOTFOUND || weft_params_str_is(params, plen, "topology", "complete"))
		return 0;
	if (rc != 0)
		return WEFT_EINVAL;
	struct graph g = {0};
	rc = parse_graph(env, val, vlen, &g);
	if (rc == 0)
		rc = check_graph(env, &g);
	if (rc == 0) {
		uint32_t first = g.off[env->self];
		r->nout = g.off[env->self + 1] - first;
		r->out = xcalloc(r->nout, sizeof(*r->out));
		memcpy(r->out, g.adj + first, r->nout * sizeof(*r->out));
		r->reach = xcalloc(env->n, sizeof(*r->reach));
		for (uint32_t i = 0; i < r->nout; i++)
			r->reach[r->out[i]] = true;
		r->seen = xcalloc(env->n, sizeof(*r->seen));
		weft_mpw_init(&r->scratch);
		weft_env_wrap_init(&r->wrap, env);
		r->wrap.ops.send = relay_send;
		r->wrap.ops.multicast = relay_multicast;
		r->active = true;
		rc = load_seq(r);
	}
	graph_free(&g);
	return rc;
}

void weft_relay_destroy(struct weft_relay *r)
{
	free(r->out);
	free(r->reach);
	free(r->seen);
	weft_mpw_free(&r->scratch);
	r->out = NULL;
	r->reach = NULL;
	r->seen = NULL;
	r->active = false;
}

struct weft_env *weft_relay_env(struct weft_relay *r)
{
	return r->active ? &r->wrap.env : r->env;
}

static int refuse(struct weft_relay *r, int rc)
{
	bump(r, &r->refused, "relay.refused");
	return rc;
}

int weft_relay_on_message(struct weft_relay *r, uint32_t from, const uint8_t *msg, size_t len,
			  int (*on_message)(void *state, uint32_t from, const uint8_t *msg, size_t len), void *state)
{
	if (!r->active || len == 0 || msg[0] != WEFT_RELAY_MARKER)
		return on_message(state, from, msg, len);
	struct envelope e;
	if (decode(r, msg, len, &e) != 0)
		return refuse(r, WEFT_EDECODE);
	/* Our own, come back; or a copy of one taken before. */
	if (e.origin == r->env->self || window_seen(&r->seen[e.origin], e.seq)) {
		bump(r, &r->duplicates, "relay.duplicates");
		return 0;
	}
	uint8_t stmt[STMT_LEN];
	statement(stmt, &e);
	if (r->env->ops->verify(r->env, e.origin, stmt, sizeof(stmt), e.sig) != 0)
		return refuse(r, WEFT_ECRYPTO);
	window_mark(&r->seen[e.origin], e.seq);
	if (e.dest != r->env->self) {
		bump(r, &r->forwarded, "relay.forwarded");
		flood(r, &e, from, "relay", msg, len);
	}
	if (e.dest != RELAY_ALL && e.dest != r->env->self)
		return 0;
	bump(r, &r->delivered, "relay.delivered");
	return on_message(state, e.origin, e.payload, e.plen);
}

uint32_t weft_relay_info_fields(const struct weft_relay *r, struct weft_mpw *w)
{
	if (!r->active)
		return 0;
	weft_mpw_str(w, "relay");
	weft_mpw_map(w, 6);
	weft_mpw_str(w, "out_degree");
	weft_mpw_uint(w, r->nout);
	weft_mpw_str(w, "originated");
	weft_mpw_uint(w, r->originated);
	weft_mpw_str(w, "forwarded");
	weft_mpw_uint(w, r->forwarded);
	weft_mpw_str(w, "delivered");
	weft_mpw_uint(w, r->delivered);
	weft_mpw_str(w, "duplicates");
	weft_mpw_uint(w, r->duplicates);
	weft_mpw_str(w, "refused");
	weft_mpw_uint(w, r->refused);
	return 1;
}
