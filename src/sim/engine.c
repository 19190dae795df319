/* engine.c - one deterministic run of a scenario: the discrete-event
 * scheduler, the simulated network, the fault layer and the host env that
 * protocols see.
 *
 * Everything that varies comes from the seed: one generator for the
 * network, one per process for the protocol's env->random.  Events are
 * ordered by (virtual time, insertion number), so a run is a pure function
 * of scenario and seed.
 *
 * Network model, per message: the sender's NIC serialises its messages one
 * after another (bandwidth_bps), then the link adds latency (+ fault delay,
 * + reordering jitter), then the receiver's NIC serialises its arrivals;
 * loss and duplication are drawn per message.  Messages of a multicast share
 * one reference-counted buffer.
 *
 * Faults: crash stops a process for good; crash_recover destroys its state
 * and rebuilds it from its kv at the end of the window, after emptying the
 * store (lose store) or rolling back the writes of the process's last kv
 * step, one callback, from an undo log kept for the purpose (lose
 * last_step); omission, loss, delay, partition, cut and corrupt act on
 * messages; skew gives the node a clock of its own (env now and timers
 * follow it); twins adds a second process with the same identity and the
 * same requests; equivocate adds a twin fed different requests that alone
 * speaks to the audience while the original speaks to everyone else;
 * adversary runs the protocol's own Byzantine strategy (weft_proto_strategy)
 * on the node for the whole run.
 *
 * Workloads beside the requests: the storage workload (below) and the
 * payment channel workload (channels.c), which drives the node stack's
 * channel service through commands and queries run as steps, offers it
 * the wallets and takes its events; a process whose crash may roll back
 * its last step (lose last_step) has its events held until its next
 * writing step, and the crash drops those of the step it rolls back.
 *
 * A fault's window is fixed by the scenario, or starts when its trigger
 * fires: the first time the watched node's own process logs a matching
 * line (env log; lines are formatted only while a trigger watches the
 * node) or makes its k-th delivery. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "weft/bytes.h"
#include "weft/counters.h"
#include "weft/crypto.h"
#include "weft/json.h"
#include "weft/err.h"
#include "weft/kv.h"
#include "weft/merkle.h"
#include "weft/store_proto.h"
#include "weft/util.h"

struct sim_msg {
	uint32_t refs;
	uint32_t len;
	const char *kind;
	bool digested;          /* digest of data[dig_off, dig_off+dig_len) cached */
	uint32_t dig_off, dig_len;
	uint8_t digest[WEFT_DIGEST_LEN];
	uint8_t data[];
};

enum ev_kind { EV_ARRIVE, EV_DELIVER, EV_TIMER, EV_REQUEST, EV_CRASH, EV_RECOVER, EV_SKEW, EV_STORE, EV_CHANNEL };

/* EV_STORE's arg: what the storage workload does (<< 32), and the chunk. */
enum store_op { STORE_PUT, STORE_POLL, STORE_GET };

struct sim_event {
	uint64_t time;
	uint64_t order;
	struct sim_msg *msg;
	uint64_t arg;   /* timer id; request: workload line << 32 | index; CRASH, RECOVER, SKEW: fault index */
	uint64_t gen;   /* timer generation; SKEW: 1 at the window's start, 0 at its end */
	uint32_t proc;  /* receiving process (DELIVER, TIMER); node (ARRIVE, REQUEST) */
	uint32_t from;  /* sending node */
	uint8_t kind;
};

struct sim_timer {
	uint64_t id, gen;
	uint64_t due;   /* when it fires, on the node's clock */
};

/* lose last_step: the writes of a process's last kv step that wrote, each
 * with the value its key held before, to roll back at a crash in reverse
 * order.  lose store uses the same log, every key noted as absent. */
struct undo_entry {
	uint8_t *key, *val;
	size_t klen, vlen;
	bool existed;   /* false: the key was absent (roll back = delete) */
};

struct undo_log {
	uint64_t step;  /* the process's kv step these writes belong to */
	struct undo_entry *e;
	size_t len, cap;
};

/* A node's clock (skew): local = local0 + (now - real0) * rate. */
struct node_clock {
	uint64_t real0, local0;
	double rate;
};

struct sim_engine;

/* A channel event of a process with an undo log (lose last_step), held
 * until its step can no longer be rolled back. */
struct held_event {
	uint64_t step;
	uint8_t *ev;
	size_t len;
};

struct sim_proc {
	struct weft_env env;
	struct sim_engine *eng;
	uint32_t index;
	uint32_t node;
	bool up;
	const struct weft_proto_ops *ops;
	const uint8_t *params;             /* protocol parameters for init */
	size_t plen;
	uint8_t *own_params;               /* adversary: params + "adversary" */
	void *state;
	struct weft_rng rng;
	struct sim_timer *timers;
	uint32_t ntimers, tcap;
	const struct sim_fault *twin_of;   /* NULL for a node's original process */
	struct sim_proc *next_same_node;   /* processes sharing the identity */
	struct sim_memkv *mem;
	struct weft_kv_txn *txn;           /* LMDB: open during a callback */
	uint8_t kvkey[4 + 512];            /* prefix buffer for LMDB keys */
	uint64_t step;                     /* kv steps (callbacks) begun */
	struct undo_log *undo;             /* lose last_step: the last writing step's undo; else NULL */
	uint64_t delivered;                /* deliveries by this process (triggers) */
	struct sim_shares *shares;         /* its share store (storage service) */
	struct weft_event_service events;  /* the channel service's event sink */
	struct held_event *held;           /* lose last_step: events of steps that may still be rolled back */
	size_t nheld, heldcap;
};

/* The storage workload's state: per chunk, and per reader and chunk. */
enum get_state { GET_NONE, GET_PENDING, GET_DONE, GET_FAILED };
struct store_chunk {
	uint8_t cid[WEFT_DIGEST_LEN], sr[WEFT_DIGEST_LEN];
	uint32_t k;
	bool placing, placed, failed;
};

struct kind_stats {
	const char *kind;
	uint64_t msgs, bytes;
};

struct node_stats {
	uint64_t sent_msgs, sent_bytes, recv_msgs, recv_bytes, delivered, rejected, dropped;
};

struct req_time {
	uint8_t digest[8];
	uint64_t time;
	bool used;
};

struct sim_engine {
	const struct sim_scenario *sc;
	const struct sim_run_opts *opts;
	uint64_t seed;
	uint64_t now, order, events;
	struct sim_event *heap;
	size_t hlen, hcap;
	struct sim_proc *procs;
	uint32_t nprocs;
	struct sim_proc **first_proc;   /* per node */
	struct weft_rng net;
	uint64_t *nic_out_free, *nic_in_free;
	struct node_stats *stats;
	struct kind_stats *kinds;
	size_t nkinds, kcap;
	struct weft_counters metrics;
	struct sim_history hist;
	bool *faulty;
	struct req_time *reqs;
	size_t rcap, rlen;
	uint32_t *lat_us;
	size_t nlat, latcap;
	uint64_t requests, deliveries, dropped;
	struct weft_kv *kv;
	weft_kv_dbi dbi;
	char *kvdir;
	uint8_t (*pk)[WEFT_PK_LEN];
	struct weft_identity **ids;
	uint8_t (*fastkey)[32];
	struct sim_msg *current_msg;
	struct weft_mpw scratch;
	uint64_t *fired_us;             /* per fault: when its trigger fired; SIM_NEVER: not (yet), or none */
	size_t *armed;                  /* faults whose trigger has not fired */
	size_t narmed;
	struct node_clock *clock;       /* per node */
	char *sharedir;                 /* where share stores live when the kv is in memory */
	struct store_chunk *chunks;     /* storage workload: per chunk */
	uint8_t *gets;                  /* per reader (row) and chunk: enum get_state */
	uint64_t store_wrong, store_unavailable, gets_done;
	char store_first[512];          /* the first storage violation */
	struct sim_chan *chan;          /* the payment channel workload, or NULL */
	uint8_t *params;                /* the protocol parameters of the run (sc's, plus the channel's balances) */
	size_t plen;
	char *hex;                      /* --trace-data: the ,"data":"..." field */
	size_t hexcap;
};

/* ---- event heap ---- */

static bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
	return a->time < b->time || (a->time == b->time && a->order < b->order);
}

static void heap_push(struct sim_engine *e, struct sim_event ev)
{
	if (e->hlen == e->hcap) {
		e->hcap = e->hcap ? 2 * e->hcap : 1024;
		e->heap = realloc(e->heap, e->hcap * sizeof(*e->heap));
		if (e->heap == NULL)
			abort();
	}
	ev.order = e->order++;
	size_t i = e->hlen++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!ev_before(&ev, &e->heap[parent]))
			break;
		e->heap[i] = e->heap[parent];
		i = parent;
	}
	e->heap[i] = ev;
}

static struct sim_event heap_pop(struct sim_engine *e)
{
	struct sim_event top = e->heap[0];
	struct sim_event last = e->heap[--e->hlen];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= e->hlen)
			break;
		if (c + 1 < e->hlen && ev_before(&e->heap[c + 1], &e->heap[c]))
			c++;
		if (!ev_before(&e->heap[c], &last))
			break;
		e->heap[i] = e->heap[c];
		i = c;
	}
	if (e->hlen)
		e->heap[i] = last;
	return top;
}

/* ---- messages ---- */

static struct sim_msg *msg_new(const char *kind, const void *data, size_t len)
{
	struct sim_msg *m = malloc(sizeof(*m) + len);
	if (m == NULL)
		abort();
	m->refs = 1;
	m->len = (uint32_t)len;
	m->kind = kind;
	m->digested = false;
	memcpy(m->data, data, len);
	return m;
}

static void msg_unref(struct sim_msg *m)
{
	if (m && --m->refs == 0)
		free(m);
}

/* ---- trace ---- */

static void trace(struct sim_engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(struct sim_engine *e, const char *fmt, ...)
{
	if (e->opts->trace == NULL)
		return;
	va_list ap;
	fprintf(e->opts->trace, "{\"t\":%llu,", (unsigned long long)e->now);
	va_start(ap, fmt);
	vfprintf(e->opts->trace, fmt, ap);
	va_end(ap);
	fputs("}\n", e->opts->trace);
}

/* With --trace-data: the field ,"data":"<hex>" (the message bytes) for a
 * send or recv event, else "".  Valid until the next call. */
static const char *trace_data(struct sim_engine *e, const uint8_t *data, uint32_t len)
{
	if (!e->opts->trace_data)
		return "";
	size_t need = 2 * (size_t)len + 12;
	if (e->hexcap < need) {
		e->hex = realloc(e->hex, need);
		if (e->hex == NULL)
			abort();
		e->hexcap = need;
	}
	memcpy(e->hex, ",\"data\":\"", 9);
	weft_hex_encode(e->hex + 9, data, len);
	memcpy(e->hex + 9 + 2 * (size_t)len, "\"", 2);
	return e->hex;
}

/* ---- fault predicates ---- */

/* A time t of fault i's window as this run places it: counted from the
 * firing of its trigger when it has one (SIM_NEVER until then). */
static uint64_t window_time(const struct sim_engine *e, size_t i, uint64_t t)
{
	if (e->sc->faults[i].after.kind == SIM_TRIGGER_NONE || t == SIM_NEVER)
		return t;
	return e->fired_us[i] == SIM_NEVER ? SIM_NEVER : e->fired_us[i] + t; /* each <= 1e15: no overflow */
}

/* Is fault i's window open now? */
static bool active(const struct sim_engine *e, size_t i)
{
	const struct sim_fault *f = &e->sc->faults[i];
	return e->now >= window_time(e, i, f->start_us) && e->now < window_time(e, i, f->stop_us);
}

static bool listed(const uint32_t *list, uint32_t len, uint32_t x)
{
	for (uint32_t i = 0; i < len; i++)
		if (list[i] == x)
			return true;
	return false;
}

static int group_of(const struct sim_fault *f, uint32_t node)
{
	for (uint32_t g = 0; g < f->ngroups; g++)
		if (listed(f->groups[g], f->group_len[g], node))
			return (int)g;
	return -1; /* the group of unlisted nodes */
}

/* Does an omission or loss fault act on a message from `from` to `to`,
 * judged at the sender (at_receiver false) or at the receiver? */
static bool link_matches(const struct sim_fault *f, uint32_t from, uint32_t to, bool at_receiver)
{
	if (at_receiver)
		return f->receives && listed(f->nodes, f->nnodes, to) &&
		       (f->npeers == 0 || listed(f->peers, f->npeers, from));
	return f->sends && listed(f->nodes, f->nnodes, from) && (f->npeers == 0 || listed(f->peers, f->npeers, to));
}

/* Should a message from node `from` to node `to` be dropped by a fault?
 * A lossy link draws from the network generator. */
static bool fault_blocks(struct sim_engine *e, uint32_t from, uint32_t to, bool at_receiver)
{
	for (size_t i = 0; i < e->sc->nfaults; i++) {
		const struct sim_fault *f = &e->sc->faults[i];
		if (!active(e, i))
			continue;
		switch (f->kind) {
		case SIM_FAULT_OMISSION:
			if (link_matches(f, from, to, at_receiver))
				return true;
			break;
		case SIM_FAULT_LOSS:
			if (link_matches(f, from, to, at_receiver) && weft_rng_unit(&e->net) < f->probability)
				return true;
			break;
		case SIM_FAULT_PARTITION:
			if (!at_receiver && group_of(f, from) != group_of(f, to))
				return true;
			break;
		case SIM_FAULT_CUT:
			if (!at_receiver && listed(f->nodes, f->nnodes, from) && listed(f->peers, f->npeers, to))
				return true;
			break;
		case SIM_FAULT_CRASH:
		case SIM_FAULT_CRASH_RECOVER:
		case SIM_FAULT_DELAY:
		case SIM_FAULT_CORRUPT:
		case SIM_FAULT_EQUIVOCATE:
		case SIM_FAULT_TWINS:
		case SIM_FAULT_ADVERSARY:
		case SIM_FAULT_SKEW:
			break;
		}
	}
	return false;
}

/* The delay faults' extra time on a message from `from` to `to`; jitter
 * draws from the network generator. */
static uint64_t fault_delay(struct sim_engine *e, uint32_t from, uint32_t to)
{
	uint64_t d = 0;
	for (size_t i = 0; i < e->sc->nfaults; i++) {
		const struct sim_fault *f = &e->sc->faults[i];
		if (f->kind != SIM_FAULT_DELAY || !active(e, i) || !listed(f->nodes, f->nnodes, from) ||
		    (f->npeers && !listed(f->peers, f->npeers, to)))
			continue;
		d += f->delay_us;
		if (f->jitter_us)
			d += weft_rng_below(&e->net, f->jitter_us + 1);
	}
	return d;
}

static const struct sim_fault *fault_corrupts(const struct sim_engine *e, uint32_t from)
{
	for (size_t i = 0; i < e->sc->nfaults; i++) {
		const struct sim_fault *f = &e->sc->faults[i];
		if (f->kind == SIM_FAULT_CORRUPT && active(e, i) && listed(f->nodes, f->nnodes, from))
			return f;
	}
	return NULL;
}

/* Equivocation: the twin speaks only to its audience, the original only to the others. */
static bool audience_allows(const struct sim_engine *e, const struct sim_proc *p, uint32_t to)
{
	if (p->twin_of && p->twin_of->kind == SIM_FAULT_EQUIVOCATE)
		return listed(p->twin_of->peers, p->twin_of->npeers, to);
	for (const struct sim_proc *q = e->first_proc[p->node]; q; q = q->next_same_node)
		if (q->twin_of && q->twin_of->kind == SIM_FAULT_EQUIVOCATE && q->up)
			return !listed(q->twin_of->peers, q->twin_of->npeers, to);
	return true;
}

static bool can_reach(const struct sim_engine *e, uint32_t from, uint32_t to)
{
	const struct sim_network *net = &e->sc->net;
	return !net->directed || listed(net->out[from], net->out_len[from], to);
}

/* ---- network ---- */

static uint64_t sample_latency(struct sim_engine *e)
{
	const struct sim_latency *l = &e->sc->net.latency;
	switch (l->kind) {
	case SIM_LAT_CONSTANT:
		return l->a_us;
	case SIM_LAT_UNIFORM:
		return l->a_us + weft_rng_below(&e->net, l->b_us - l->a_us + 1);
	case SIM_LAT_NORMAL: {
		double v = (double)l->a_us + weft_rng_normal(&e->net) * (double)l->b_us;
		if (v < (double)l->min_us)
			v = (double)l->min_us;
		if (v > (double)l->max_us)
			v = (double)l->max_us;
		return (uint64_t)v;
	}
	}
	return l->a_us;
}

static uint64_t serialise_us(const struct sim_engine *e, size_t bytes)
{
	uint64_t bps = e->sc->net.bandwidth_bps;
	if (bps == 0)
		return 0;
	return (uint64_t)(((__uint128_t)bytes * 8 * 1000000 + bps - 1) / bps);
}

static struct kind_stats *kind_of(struct sim_engine *e, const char *kind)
{
	for (size_t i = 0; i < e->nkinds; i++)
		if (e->kinds[i].kind == kind || strcmp(e->kinds[i].kind, kind) == 0)
			return &e->kinds[i];
	if (e->nkinds == e->kcap) {
		e->kcap = e->kcap ? 2 * e->kcap : 16;
		e->kinds = realloc(e->kinds, e->kcap * sizeof(*e->kinds));
		if (e->kinds == NULL)
			abort();
	}
	e->kinds[e->nkinds] = (struct kind_stats){.kind = kind};
	return &e->kinds[e->nkinds++];
}

/* Puts one copy of m from process p on the wire to node `to`. */
static void net_send(struct sim_engine *e, struct sim_proc *p, uint32_t to, struct sim_msg *m)
{
	uint32_t from = p->node;
	struct node_stats *st = &e->stats[from];
	if (to == from) { /* to ourselves: no network */
		m->refs++;
		heap_push(e, (struct sim_event){.time = e->now, .kind = EV_ARRIVE, .proc = to, .from = from, .msg = m});
		return;
	}
	if (!audience_allows(e, p, to))
		return;
	st->sent_msgs++;
	st->sent_bytes += m->len;
	struct kind_stats *k = kind_of(e, m->kind);
	k->msgs++;
	k->bytes += m->len;
	trace(e, "\"ev\":\"send\",\"from\":%u,\"to\":%u,\"kind\":\"%s\",\"bytes\":%u%s", from, to, m->kind, m->len,
	      trace_data(e, m->data, m->len));
	uint64_t depart = (e->nic_out_free[from] > e->now ? e->nic_out_free[from] : e->now) + serialise_us(e, m->len);
	e->nic_out_free[from] = depart;
	if (!can_reach(e, from, to) || fault_blocks(e, from, to, false) ||
	    (e->sc->net.loss > 0 && weft_rng_unit(&e->net) < e->sc->net.loss)) {
		st->dropped++;
		e->dropped++;
		trace(e, "\"ev\":\"drop\",\"from\":%u,\"to\":%u,\"kind\":\"%s\"", from, to, m->kind);
		return;
	}
	struct sim_msg *copy = m;
	const struct sim_fault *cf = fault_corrupts(e, from);
	if (cf && weft_rng_unit(&e->net) < cf->probability && m->len > 0) {
		copy = msg_new(m->kind, m->data, m->len);
		if (cf->corrupt == SIM_CORRUPT_BITFLIP) {
			uint64_t bit = weft_rng_below(&e->net, (uint64_t)m->len * 8);
			copy->data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		} else {
			copy->len = (uint32_t)weft_rng_below(&e->net, m->len);
		}
		trace(e, "\"ev\":\"fault\",\"fault\":\"corrupt\",\"from\":%u,\"to\":%u", from, to);
	} else {
		m->refs++;
	}
	int copies = 1 + (e->sc->net.duplicate > 0 && weft_rng_unit(&e->net) < e->sc->net.duplicate);
	for (int c = 0; c < copies; c++) {
		uint64_t t = depart + sample_latency(e);
		t += fault_delay(e, from, to);
		if (e->sc->net.reorder > 0 && weft_rng_unit(&e->net) < e->sc->net.reorder)
			t += weft_rng_below(&e->net, e->sc->net.reorder_us + 1);
		if (c == 1)
			copy->refs++;
		heap_push(e, (struct sim_event){.time = t, .kind = EV_ARRIVE, .proc = to, .from = from, .msg = copy});
	}
}

/* ---- protocol callbacks (bracketed for kv transactions) ---- */

/* A callback begins: one kv step (LMDB transactions open lazily on the
 * first kv call and commit in proc_leave). */
static void proc_enter(struct sim_proc *p)
{
	p->step++;
}

static void proc_leave(struct sim_proc *p)
{
	if (p->txn) {
		int rc = weft_kv_commit(p->txn);
		p->txn = NULL;
		if (rc != 0)
			fprintf(stderr, "weft-sim: kv commit failed for node %u: %s\n", p->node, weft_strerror(rc));
	}
}

/* The protocol's own description of a live process's state (its info op),
 * as JSON; null when the process is down or the protocol has no info. */
static json_t *proc_info(struct sim_proc *p)
{
	if (p == NULL || !p->up || p->state == NULL || p->ops->info == NULL)
		return json_null();
	struct weft_mpw w;
	weft_mpw_init(&w);
	proc_enter(p);
	p->ops->info(p->state, &w);
	proc_leave(p);
	json_t *out = NULL;
	if (weft_mp_buf_to_json(w.buf, w.len, &out) != 0)
		out = json_null();
	weft_mpw_free(&w);
	return out;
}

static void proc_destroy(struct sim_proc *p)
{
	if (p->state && p->ops->destroy)
		p->ops->destroy(p->state);
	free(p->state);
	p->state = NULL;
	p->ntimers = 0;
}

static int proc_boot(struct sim_engine *e, struct sim_proc *p)
{
	p->state = calloc(1, p->ops->state_size ? p->ops->state_size : 1);
	if (p->state == NULL)
		abort();
	proc_enter(p);
	if (p->twin_of == NULL)
		trace(e, "\"ev\":\"start\",\"node\":%u", p->node);
	int rc = p->ops->init(p->state, &p->env, p->params, p->plen);
	if (rc == 0 && p->ops->start)
		rc = p->ops->start(p->state);
	proc_leave(p);
	p->up = rc == 0;
	if (rc != 0)
		proc_destroy(p); /* what init allocated before it failed */
	return rc;
}

/* ---- fault windows and triggers ---- */

/* Puts the events fault i's window needs (crashes, restarts, clock
 * changes) on the heap, once the window is known. */
static void schedule_window(struct sim_engine *e, size_t i)
{
	const struct sim_fault *f = &e->sc->faults[i];
	uint64_t start = window_time(e, i, f->start_us), stop = window_time(e, i, f->stop_us);
	for (uint32_t k = 0; k < f->nnodes; k++) {
		struct sim_event ev = {.proc = f->nodes[k], .arg = i};
		switch (f->kind) {
		case SIM_FAULT_CRASH:
		case SIM_FAULT_CRASH_RECOVER:
			ev.time = start, ev.kind = EV_CRASH;
			heap_push(e, ev);
			if (f->kind == SIM_FAULT_CRASH_RECOVER && stop != SIM_NEVER) {
				ev.time = stop, ev.kind = EV_RECOVER;
				heap_push(e, ev);
			}
			break;
		case SIM_FAULT_SKEW:
			ev.time = start, ev.kind = EV_SKEW, ev.gen = 1;
			heap_push(e, ev);
			if (stop != SIM_NEVER) {
				ev.time = stop, ev.gen = 0;
				heap_push(e, ev);
			}
			break;
		case SIM_FAULT_OMISSION:
		case SIM_FAULT_LOSS:
		case SIM_FAULT_DELAY:
		case SIM_FAULT_PARTITION:
		case SIM_FAULT_CUT:
		case SIM_FAULT_CORRUPT:
		case SIM_FAULT_EQUIVOCATE:
		case SIM_FAULT_TWINS:
		case SIM_FAULT_ADVERSARY:
			return; /* judged per message, or for the whole run */
		}
	}
}

/* The k-th armed fault's trigger fires now: its window opens start_us from
 * now and lasts to stop_us from now. */
static void fire(struct sim_engine *e, size_t k)
{
	size_t i = e->armed[k];
	e->armed[k] = e->armed[--e->narmed];
	e->fired_us[i] = e->now;
	trace(e, "\"ev\":\"trigger\",\"fault\":%zu,\"node\":%u,\"start\":%llu", i, e->sc->faults[i].after.node,
	      (unsigned long long)window_time(e, i, e->sc->faults[i].start_us));
	schedule_window(e, i);
}

/* Does a log or event trigger watch process p's lines? */
static bool log_watched(const struct sim_engine *e, const struct sim_proc *p)
{
	for (size_t k = 0; k < e->narmed && p->twin_of == NULL; k++) {
		const struct sim_trigger *t = &e->sc->faults[e->armed[k]].after;
		if (t->node == p->node && (t->kind == SIM_TRIGGER_LOG || t->kind == SIM_TRIGGER_EVENT))
			return true;
	}
	return false;
}

/* Fires the triggers a log line of p's matches. */
static void watch_log(struct sim_engine *e, const struct sim_proc *p, const char *event, const char *msg)
{
	for (size_t k = e->narmed; k-- > 0;) {
		const struct sim_trigger *t = &e->sc->faults[e->armed[k]].after;
		if (t->node != p->node)
			continue;
		if ((t->kind == SIM_TRIGGER_LOG && (strstr(event, t->text) || strstr(msg, t->text))) ||
		    (t->kind == SIM_TRIGGER_EVENT && strcmp(event, t->text) == 0 &&
		     (t->contains == NULL || strstr(msg, t->contains))))
			fire(e, k);
	}
}

/* Fires the delivery triggers p's latest delivery completes. */
static void watch_deliveries(struct sim_engine *e, const struct sim_proc *p)
{
	for (size_t k = e->narmed; k-- > 0;) {
		const struct sim_trigger *t = &e->sc->faults[e->armed[k]].after;
		if (t->kind == SIM_TRIGGER_DELIVERIES && t->node == p->node && t->deliveries == p->delivered)
			fire(e, k);
	}
}

/* ---- env ops ---- */

static struct sim_proc *proc_of(struct weft_env *env)
{
	return env->host;
}

static int env_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	struct sim_proc *p = proc_of(env);
	if (to >= env->n || len > UINT32_MAX)
		return WEFT_EINVAL;
	struct sim_msg *m = msg_new(kind, msg, len);
	net_send(p->eng, p, to, m);
	msg_unref(m);
	return 0;
}

static int env_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	struct sim_proc *p = proc_of(env);
	if (len > UINT32_MAX)
		return WEFT_EINVAL;
	struct sim_msg *m = msg_new(kind, msg, len);
	for (uint32_t to = 0; to < env->n; to++)
		if (to != p->node)
			net_send(p->eng, p, to, m);
	msg_unref(m);
	return 0;
}

/* ---- clocks ---- */

/* What node's clock reads now. */
static uint64_t clock_now(const struct sim_engine *e, uint32_t node)
{
	const struct node_clock *c = &e->clock[node];
	uint64_t real = e->now - c->real0;
	return c->local0 + (c->rate == 1.0 ? real : (uint64_t)((double)real * c->rate));
}

/* The first virtual time, not before now, when node's clock reads local. */
static uint64_t clock_when(const struct sim_engine *e, uint32_t node, uint64_t local)
{
	const struct node_clock *c = &e->clock[node];
	if (local <= c->local0)
		return e->now;
	uint64_t ahead = local - c->local0, room = SIM_NEVER - c->real0;
	if (c->rate != 1.0) {
		double real = ceil((double)ahead / c->rate);
		ahead = real < (double)room ? (uint64_t)real : room;
	}
	uint64_t t = ahead >= room ? SIM_NEVER : c->real0 + ahead;
	return t > e->now ? t : e->now;
}

static void timer_schedule(struct sim_engine *e, struct sim_proc *p, struct sim_timer *t)
{
	t->gen = e->order; /* unique */
	heap_push(e, (struct sim_event){.time = clock_when(e, p->node, t->due), .kind = EV_TIMER, .proc = p->index,
					.arg = t->id, .gen = t->gen});
}

/* A skew window of fault i opens (start) or closes on node: the clock
 * keeps its reading, jumps the fault's offset ahead when it opens, and runs
 * from now on at the product of the open skew windows' rates; pending
 * timers move to when the new clock reaches them. */
static void on_skew(struct sim_engine *e, const struct sim_event *ev)
{
	uint32_t node = ev->proc;
	struct node_clock *c = &e->clock[node];
	c->local0 = clock_now(e, node) + (ev->gen ? e->sc->faults[ev->arg].offset_us : 0);
	c->real0 = e->now;
	c->rate = 1.0;
	for (size_t i = 0; i < e->sc->nfaults; i++) {
		const struct sim_fault *f = &e->sc->faults[i];
		if (f->kind == SIM_FAULT_SKEW && active(e, i) && listed(f->nodes, f->nnodes, node))
			c->rate *= f->rate;
	}
	trace(e, "\"ev\":\"fault\",\"fault\":\"skew\",\"node\":%u,\"clock\":%llu,\"rate\":%g", node,
	      (unsigned long long)c->local0, c->rate);
	for (struct sim_proc *p = e->first_proc[node]; p; p = p->next_same_node)
		for (uint32_t i = 0; p->up && i < p->ntimers; i++)
			timer_schedule(e, p, &p->timers[i]);
}

static uint64_t env_now(struct weft_env *env)
{
	struct sim_proc *p = proc_of(env);
	return clock_now(p->eng, p->node);
}

static int env_set_timer(struct weft_env *env, uint64_t id, uint64_t delay_us)
{
	struct sim_proc *p = proc_of(env);
	struct sim_engine *e = p->eng;
	uint32_t i = 0;
	while (i < p->ntimers && p->timers[i].id != id)
		i++;
	if (i == p->ntimers) {
		if (p->ntimers == p->tcap) {
			p->tcap = p->tcap ? 2 * p->tcap : 8;
			p->timers = realloc(p->timers, p->tcap * sizeof(*p->timers));
			if (p->timers == NULL)
				abort();
		}
		p->ntimers++;
	}
	p->timers[i] = (struct sim_timer){.id = id, .due = clock_now(e, p->node) + delay_us};
	timer_schedule(e, p, &p->timers[i]);
	return 0;
}

static void env_cancel_timer(struct weft_env *env, uint64_t id)
{
	struct sim_proc *p = proc_of(env);
	for (uint32_t i = 0; i < p->ntimers; i++) {
		if (p->timers[i].id == id) {
			p->timers[i] = p->timers[--p->ntimers];
			return;
		}
	}
}

static void env_random(struct weft_env *env, void *buf, size_t len)
{
	weft_rng_bytes(&proc_of(env)->rng, buf, len);
}

static void record_latency(struct sim_engine *e, const uint8_t digest[WEFT_DIGEST_LEN])
{
	if (e->rcap == 0)
		return;
	size_t mask = e->rcap - 1, i;
	uint64_t h;
	memcpy(&h, digest, 8);
	for (i = h & mask; e->reqs[i].used; i = (i + 1) & mask) {
		if (memcmp(e->reqs[i].digest, digest, 8) == 0) {
			if (e->nlat == e->latcap) {
				e->latcap = e->latcap ? 2 * e->latcap : 4096;
				e->lat_us = realloc(e->lat_us, e->latcap * sizeof(*e->lat_us));
				if (e->lat_us == NULL)
					abort();
			}
			uint64_t d = e->now - e->reqs[i].time;
			e->lat_us[e->nlat++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
			return;
		}
	}
}

static void env_deliver(struct weft_env *env, const struct weft_delivery *d)
{
	struct sim_proc *p = proc_of(env);
	struct sim_engine *e = p->eng;
	struct sim_hist_event h = {.time_us = e->now, .kind = SIM_H_DELIVER, .node = p->node, .origin = d->origin,
				   .seq = d->seq, .invalid = d->invalid};
	struct sim_msg *m = e->current_msg;
	if (d->invalid) {
		/* no digest */
	} else if (d->digest) {
		memcpy(h.digest, d->digest, WEFT_DIGEST_LEN);
	} else if (m && d->data >= m->data && d->data + d->len <= m->data + m->len) {
		/* Data inside the message being delivered: hash once per copy shared by a multicast. */
		uint32_t off = (uint32_t)(d->data - m->data);
		if (!m->digested || m->dig_off != off || m->dig_len != d->len) {
			weft_hash(m->digest, d->data, d->len);
			m->digested = true;
			m->dig_off = off;
			m->dig_len = (uint32_t)d->len;
		}
		memcpy(h.digest, m->digest, WEFT_DIGEST_LEN);
	} else {
		weft_hash(h.digest, d->data, d->len);
	}
	if (e->sc->checkers)
		sim_history_add(&e->hist, &h);
	e->deliveries++;
	e->stats[p->node].delivered++;
	p->delivered++;
	if (e->narmed && p->twin_of == NULL)
		watch_deliveries(e, p);
	if (!d->invalid && p->twin_of == NULL)
		record_latency(e, h.digest);
	if (e->opts->trace) {
		char hex[17];
		weft_hex_encode(hex, h.digest, 8);
		trace(e, "\"ev\":\"deliver\",\"node\":%u,\"origin\":%u,\"seq\":%llu,\"digest\":\"%s\",\"invalid\":%s",
		      p->node, d->origin, (unsigned long long)d->seq, d->invalid ? "" : hex,
		      d->invalid ? "true" : "false");
	}
}

static uint8_t *lmdb_key(struct sim_proc *p, const void *key, size_t klen, size_t *outlen)
{
	if (klen > sizeof(p->kvkey) - 4)
		return NULL;
	weft_be32_put(p->kvkey, p->index);
	memcpy(p->kvkey + 4, key, klen);
	*outlen = klen + 4;
	return p->kvkey;
}

static int lmdb_txn(struct sim_proc *p)
{
	if (p->txn)
		return 0;
	return weft_kv_begin(p->eng->kv, true, &p->txn);
}

static int env_kv_get(struct weft_env *env, const void *key, size_t klen, const void **val, size_t *vlen)
{
	struct sim_proc *p = proc_of(env);
	if (p->mem)
		return sim_memkv_get(p->mem, key, klen, val, vlen);
	size_t kl;
	uint8_t *k = lmdb_key(p, key, klen, &kl);
	int rc = k ? lmdb_txn(p) : WEFT_ETOOBIG;
	return rc ? rc : weft_kv_get(p->txn, p->eng->dbi, k, kl, val, vlen);
}

/* The process's store, without the undo log (env_kv_put and env_kv_del
 * keep it). */
static int store_put(struct sim_proc *p, const void *key, size_t klen, const void *val, size_t vlen)
{
	if (p->mem)
		return sim_memkv_put(p->mem, key, klen, val, vlen);
	size_t kl;
	uint8_t *k = lmdb_key(p, key, klen, &kl);
	int rc = k ? lmdb_txn(p) : WEFT_ETOOBIG;
	return rc ? rc : weft_kv_put(p->txn, p->eng->dbi, k, kl, val, vlen);
}

static int store_del(struct sim_proc *p, const void *key, size_t klen)
{
	if (p->mem)
		return sim_memkv_del(p->mem, key, klen);
	size_t kl;
	uint8_t *k = lmdb_key(p, key, klen, &kl);
	int rc = k ? lmdb_txn(p) : WEFT_ETOOBIG;
	return rc ? rc : weft_kv_del(p->txn, p->eng->dbi, k, kl);
}

static int env_kv_scan(struct weft_env *env, const void *from, size_t flen, const void *to, size_t tlen,
		       weft_env_scan_fn fn, void *arg)
{
	struct sim_proc *p = proc_of(env);
	if (p->mem)
		return sim_memkv_scan(p->mem, from, flen, to, tlen, fn, arg);
	uint8_t start[4 + 512], end[4 + 512];
	size_t sl, el;
	if (lmdb_key(p, from, flen, &sl) == NULL)
		return WEFT_ETOOBIG;
	memcpy(start, p->kvkey, sl);
	if (to) {
		if (lmdb_key(p, to, tlen, &el) == NULL)
			return WEFT_ETOOBIG;
		memcpy(end, p->kvkey, el);
	} else { /* up to the next process's prefix */
		weft_be32_put(end, p->index + 1);
		el = 4;
	}
	int rc = lmdb_txn(p);
	return rc ? rc : weft_kv_scan(p->txn, p->eng->dbi, start, sl, end, el, 4, fn, arg);
}

/* ---- store loss (crash_recover's lose) ---- */

static void *memdup(const void *src, size_t len)
{
	void *p = malloc(len ? len : 1);
	if (p == NULL)
		abort();
	memcpy(p, src, len);
	return p;
}

static void undo_add(struct undo_log *u, const void *key, size_t klen, const void *val, size_t vlen, bool existed)
{
	if (u->len == u->cap) {
		u->cap = u->cap ? 2 * u->cap : 16;
		u->e = realloc(u->e, u->cap * sizeof(*u->e));
		if (u->e == NULL)
			abort();
	}
	u->e[u->len++] = (struct undo_entry){.key = memdup(key, klen), .klen = klen,
					     .val = existed ? memdup(val, vlen) : NULL, .vlen = vlen,
					     .existed = existed};
}

static void undo_clear(struct undo_log *u)
{
	for (size_t i = 0; i < u->len; i++) {
		free(u->e[i].key);
		free(u->e[i].val);
	}
	u->len = 0;
}

static void held_release(struct sim_proc *p, uint64_t before_step, bool drop_last);

/* Before a write of key: what it holds now, in the log of the current
 * step (which replaces the log of an earlier one). */
static void undo_note(struct sim_proc *p, const void *key, size_t klen)
{
	struct undo_log *u = p->undo;
	const void *val;
	size_t vlen = 0;
	if (u->step != p->step) {
		undo_clear(u);
		u->step = p->step;
		held_release(p, p->step, false); /* the steps before can no longer be rolled back */
	}
	int rc = env_kv_get(&p->env, key, klen, &val, &vlen);
	if (rc == 0 || rc == WEFT_NOTFOUND) /* else the write fails too */
		undo_add(u, key, klen, rc == 0 ? val : NULL, vlen, rc == 0);
}

/* Rolls the log back into p's store, newest write first, as one step;
 * empties the log. */
static void undo_apply(struct sim_proc *p, struct undo_log *u)
{
	proc_enter(p);
	for (size_t i = u->len; i-- > 0;) {
		const struct undo_entry *x = &u->e[i];
		if (x->existed)
			store_put(p, x->key, x->klen, x->val, x->vlen);
		else
			store_del(p, x->key, x->klen);
	}
	proc_leave(p);
	undo_clear(u);
}

static int note_absent(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	undo_add(arg, key, klen, NULL, 0, false);
	return 0;
}

/* What a crashed process's store loses. */
static void lose_store(struct sim_engine *e, struct sim_proc *p, enum sim_lose lose)
{
	switch (lose) {
	case SIM_LOSE_NONE:
		return;
	case SIM_LOSE_STORE: {
		/* Every key, noted as absent before: rolling back empties the store. */
		struct undo_log all = {0};
		env_kv_scan(&p->env, "", 0, NULL, 0, note_absent, &all);
		trace(e, "\"ev\":\"fault\",\"fault\":\"wipe\",\"node\":%u,\"keys\":%zu", p->node, all.len);
		undo_apply(p, &all);
		free(all.e);
		if (p->shares)
			sim_shares_wipe(p->shares);
		return;
	}
	case SIM_LOSE_LAST_STEP:
		trace(e, "\"ev\":\"fault\",\"fault\":\"undo\",\"node\":%u,\"writes\":%zu", p->node, p->undo->len);
		held_release(p, UINT64_MAX, true); /* the rolled-back step's events are gone */
		undo_apply(p, p->undo);
		return;
	}
}

static int env_kv_put(struct weft_env *env, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct sim_proc *p = proc_of(env);
	if (p->undo)
		undo_note(p, key, klen);
	return store_put(p, key, klen, val, vlen);
}

static int env_kv_del(struct weft_env *env, const void *key, size_t klen)
{
	struct sim_proc *p = proc_of(env);
	if (p->undo)
		undo_note(p, key, klen);
	return store_del(p, key, klen);
}

static void env_sign(struct weft_env *env, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	struct sim_proc *p = proc_of(env);
	struct sim_engine *e = p->eng;
	if (e->sc->signatures == SIM_SIG_FAST) {
		/* Stand-in: a keyed hash every simulated node can check. */
		crypto_generichash(sig, 32, msg, len, e->fastkey[p->node], 32);
		memset(sig + 32, 0, 32);
	} else {
		weft_sign(e->ids[p->node], sig, msg, len);
	}
}

static int env_verify(struct weft_env *env, uint32_t signer, const void *msg, size_t len,
		      const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	struct sim_engine *e = proc_of(env)->eng;
	if (signer >= e->sc->n)
		return WEFT_ECRYPTO;
	if (e->sc->signatures == SIM_SIG_FAST) {
		uint8_t want[32];
		static const uint8_t zero[32];
		crypto_generichash(want, 32, msg, len, e->fastkey[signer], 32);
		return memcmp(want, sig, 32) == 0 && memcmp(sig + 32, zero, 32) == 0 ? 0 : WEFT_ECRYPTO;
	}
	return weft_verify(e->pk[signer], sig, msg, len);
}

static void env_log(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt,
		    va_list ap)
{
	struct sim_proc *p = proc_of(env);
	struct sim_engine *e = p->eng;
	bool show = e->opts->verbose || level >= WEFT_LOG_WARN, watched = log_watched(e, p);
	bool synced = strcmp(event, "state.synced") == 0, traced = e->opts->trace && p->twin_of == NULL;
	if (!show && !watched && !synced && !traced)
		return;
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (traced) {
		char text[1024];
		weft_json_escape(text, sizeof(text), msg);
		trace(e, "\"ev\":\"log\",\"node\":%u,\"event\":\"%s\",\"msg\":\"%s\"", p->node, event, text);
	}
	if (watched)
		watch_log(e, p, event, msg);
	unsigned long long position;
	if (synced && sscanf(msg, "position=%llu", &position) == 1 && p->twin_of == NULL) {
		struct sim_hist_event h = {.time_us = e->now, .kind = SIM_H_SYNCED, .node = p->node, .seq = position};
		sim_history_add(&e->hist, &h);
	}
	if (show)
		fprintf(stderr, "t=%.3fms node=%u %s %s %s\n", (double)e->now / 1000.0, p->node,
			weft_log_level_name(level), event, msg);
}

static void env_metric(struct weft_env *env, const char *name, int64_t delta)
{
	weft_counters_add(&proc_of(env)->eng->metrics, name, delta);
}

/* ---- the channel service's event sink ---- */

/* Hands p's held events of steps before before_step to the workload, in
 * order; drop_last drops those of the step its undo log would roll back. */
static void held_release(struct sim_proc *p, uint64_t before_step, bool drop_last)
{
	size_t keep = 0;
	for (size_t i = 0; i < p->nheld; i++) {
		struct held_event *h = &p->held[i];
		if (drop_last && p->undo && h->step == p->undo->step) {
			free(h->ev);
		} else if (h->step < before_step) {
			sim_chan_event(p->eng->chan, p->node, h->ev, h->len);
			free(h->ev);
		} else {
			p->held[keep++] = *h;
		}
	}
	p->nheld = keep;
}

/* An event of p's channel service, emitted inside a step: to the workload
 * at once, or, when a crash may roll the step back, once it cannot. */
static void event_emit(void *ctx, const uint8_t *ev, size_t len)
{
	struct sim_proc *p = ctx;
	if (p->eng->chan == NULL || p->twin_of)
		return;
	if (p->undo == NULL) {
		sim_chan_event(p->eng->chan, p->node, ev, len);
		return;
	}
	if (p->nheld == p->heldcap) {
		p->heldcap = p->heldcap ? 2 * p->heldcap : 16;
		p->held = weft_xrealloc(p->held, p->heldcap, sizeof(*p->held));
	}
	uint8_t *copy = weft_xmalloc(len ? len : 1);
	memcpy(copy, ev, len);
	p->held[p->nheld++] = (struct held_event){.step = p->step, .ev = copy, .len = len};
}

static const void *env_service(struct weft_env *env, const char *name)
{
	struct sim_proc *p = proc_of(env);
	if (p->eng->chan && strcmp(name, WEFT_WALLET_SERVICE) == 0)
		return sim_chan_wallets(p->eng->chan, p->node);
	if (p->eng->chan && strcmp(name, WEFT_EVENT_SERVICE) == 0)
		return &p->events;
	return strcmp(name, WEFT_SHARE_SERVICE) == 0 && p->shares ? (const void *)sim_shares_service(p->shares) : NULL;
}

static const struct weft_env_ops sim_env_ops = {
	.send = env_send,
	.multicast = env_multicast,
	.now = env_now,
	.set_timer = env_set_timer,
	.cancel_timer = env_cancel_timer,
	.random = env_random,
	.deliver = env_deliver,
	.kv_get = env_kv_get,
	.kv_put = env_kv_put,
	.kv_del = env_kv_del,
	.kv_scan = env_kv_scan,
	.sign = env_sign,
	.verify = env_verify,
	.log = env_log,
	.metric = env_metric,
	.service = env_service,
};

/* ---- events ---- */

static bool receives_from(const struct sim_engine *e, const struct sim_proc *q, uint32_t from)
{
	if (q->twin_of && q->twin_of->kind == SIM_FAULT_EQUIVOCATE)
		return listed(q->twin_of->peers, q->twin_of->npeers, from);
	for (const struct sim_proc *t = e->first_proc[q->node]; t; t = t->next_same_node)
		if (t->twin_of && t->twin_of->kind == SIM_FAULT_EQUIVOCATE && t->up)
			return !listed(t->twin_of->peers, t->twin_of->npeers, from);
	return true;
}

static void deliver_msg(struct sim_engine *e, uint32_t to, uint32_t from, struct sim_msg *m)
{
	if (from != to && fault_blocks(e, from, to, true)) {
		e->stats[to].dropped++;
		e->dropped++;
		return;
	}
	bool counted = false;
	for (struct sim_proc *q = e->first_proc[to]; q; q = q->next_same_node) {
		if (!q->up || !receives_from(e, q, from))
			continue;
		if (!counted && from != to) {
			e->stats[to].recv_msgs++;
			e->stats[to].recv_bytes += m->len;
			counted = true;
			trace(e, "\"ev\":\"recv\",\"node\":%u,\"from\":%u,\"kind\":\"%s\",\"bytes\":%u%s", to, from,
			      m->kind, m->len, trace_data(e, m->data, m->len));
		}
		e->current_msg = m;
		proc_enter(q);
		int rc = q->ops->on_message(q->state, from, m->data, m->len);
		proc_leave(q);
		e->current_msg = NULL;
		if (rc < 0) {
			e->stats[to].rejected++;
			trace(e, "\"ev\":\"reject\",\"node\":%u,\"from\":%u,\"kind\":\"%s\",\"err\":\"%s\"", to, from,
			      m->kind, weft_strerror(rc));
		}
	}
}

static void on_arrive(struct sim_engine *e, struct sim_event *ev)
{
	uint32_t to = ev->proc;
	uint64_t ser = ev->from == to ? 0 : serialise_us(e, ev->msg->len);
	if (ser) {
		uint64_t done = (e->nic_in_free[to] > e->now ? e->nic_in_free[to] : e->now) + ser;
		e->nic_in_free[to] = done;
		heap_push(e, (struct sim_event){.time = done, .kind = EV_DELIVER, .proc = to, .from = ev->from,
						.msg = ev->msg});
		return; /* the reference moves to the DELIVER event */
	}
	deliver_msg(e, to, ev->from, ev->msg);
	msg_unref(ev->msg);
}

static void on_timer(struct sim_engine *e, struct sim_event *ev)
{
	struct sim_proc *p = &e->procs[ev->proc];
	if (!p->up)
		return;
	for (uint32_t i = 0; i < p->ntimers; i++) {
		if (p->timers[i].id == ev->arg && p->timers[i].gen == ev->gen) {
			p->timers[i] = p->timers[--p->ntimers];
			trace(e, "\"ev\":\"timer\",\"node\":%u,\"id\":%llu", p->node, (unsigned long long)ev->arg);
			if (p->ops->on_timer) {
				proc_enter(p);
				p->ops->on_timer(p->state, ev->arg);
				proc_leave(p);
			}
			return;
		}
	}
}

/* The payload of request `idx` of workload line `line` from node: unique
 * bytes fixed by the seed.  variant 1 is what an equivocating twin sends. */
static void make_payload(struct sim_engine *e, uint32_t node, uint32_t line, uint32_t idx, int variant,
			 uint8_t *buf, size_t len)
{
	struct weft_rng r;
	weft_rng_seed(&r, e->seed ^ ((uint64_t)node << 40) ^ ((uint64_t)line << 24) ^ idx);
	weft_rng_bytes(&r, buf, len);
	uint32_t head[4] = {node, line, idx, (uint32_t)variant};
	memcpy(buf, head, sizeof(head));
}

static void remember_request(struct sim_engine *e, const uint8_t digest[WEFT_DIGEST_LEN])
{
	if ((e->rlen + 1) * 2 > e->rcap) {
		struct req_time *old = e->reqs;
		size_t oldcap = e->rcap;
		e->rcap = oldcap ? 2 * oldcap : 1024;
		e->reqs = calloc(e->rcap, sizeof(*e->reqs));
		if (e->reqs == NULL)
			abort();
		for (size_t i = 0; i < oldcap; i++) {
			if (!old[i].used)
				continue;
			uint64_t h;
			memcpy(&h, old[i].digest, 8);
			size_t j = h & (e->rcap - 1);
			while (e->reqs[j].used)
				j = (j + 1) & (e->rcap - 1);
			e->reqs[j] = old[i];
		}
		free(old);
	}
	uint64_t h;
	memcpy(&h, digest, 8);
	size_t j = h & (e->rcap - 1);
	while (e->reqs[j].used)
		j = (j + 1) & (e->rcap - 1);
	memcpy(e->reqs[j].digest, digest, 8);
	e->reqs[j].time = e->now;
	e->reqs[j].used = true;
	e->rlen++;
}

static void on_request(struct sim_engine *e, struct sim_event *ev)
{
	uint32_t node = ev->proc, line = (uint32_t)(ev->arg >> 32), idx = (uint32_t)ev->arg;
	const struct sim_workload *wl = &e->sc->work[line];
	if (idx + 1 < wl->count && e->now + wl->every_us <= e->sc->duration_us)
		heap_push(e, (struct sim_event){.time = e->now + wl->every_us, .kind = EV_REQUEST, .proc = node,
						.arg = ev->arg + 1});
	size_t size = wl->size < 16 ? 16 : wl->size;
	uint8_t *payload = malloc(size);
	if (payload == NULL)
		abort();
	for (struct sim_proc *p = e->first_proc[node]; p; p = p->next_same_node) {
		if (!p->up)
			continue;
		int variant = p->twin_of && p->twin_of->kind == SIM_FAULT_EQUIVOCATE;
		make_payload(e, node, line, idx, variant, payload, size);
		if (p->twin_of == NULL) {
			struct sim_hist_event h = {.time_us = e->now, .kind = SIM_H_REQUEST, .node = node, .origin = node};
			weft_hash(h.digest, payload, size);
			if (e->sc->checkers)
				sim_history_add(&e->hist, &h);
			remember_request(e, h.digest);
			e->requests++;
			if (e->opts->trace) {
				char hex[17];
				weft_hex_encode(hex, h.digest, 8);
				trace(e, "\"ev\":\"request\",\"node\":%u,\"bytes\":%zu,\"digest\":\"%s\"", node, size,
				      hex);
			}
		}
		weft_mpw_reset(&e->scratch);
		proc_enter(p);
		int rc = p->ops->on_request ? p->ops->on_request(p->state, payload, size, &e->scratch)
					    : WEFT_EUNSUPPORTED;
		proc_leave(p);
		if (rc != 0 && e->opts->verbose)
			fprintf(stderr, "t=%.3fms node=%u request refused: %s\n", (double)e->now / 1000.0, node,
				weft_strerror(rc));
	}
	free(payload);
}

/* A crash fault's window opens (node stops; its store loses what the fault
 * says) or a crash_recover's closes (node restarts from its store, which
 * the history records). */
static void on_crash(struct sim_engine *e, struct sim_event *ev, bool recover)
{
	uint32_t node = ev->proc;
	const struct sim_fault *f = &e->sc->faults[ev->arg];
	bool restarted = false;
	trace(e, "\"ev\":\"fault\",\"fault\":\"%s\",\"node\":%u", recover ? "recover" : "crash", node);
	for (struct sim_proc *p = e->first_proc[node]; p; p = p->next_same_node) {
		if (recover && !p->up) {
			if (proc_boot(e, p) != 0)
				fprintf(stderr, "weft-sim: node %u failed to recover from its kv\n", node);
			else if (p->twin_of == NULL)
				restarted = true;
		} else if (!recover && p->up) {
			p->up = false;
			proc_destroy(p);
			lose_store(e, p, f->lose);
			held_release(p, UINT64_MAX, false);
		}
	}
	if (restarted && e->sc->checkers) {
		struct sim_hist_event h = {.time_us = e->now, .kind = SIM_H_RESTART, .node = node,
					   .wiped = f->lose == SIM_LOSE_STORE};
		sim_history_add(&e->hist, &h);
	}
}

/* ---- the storage workload ---- */

#define STORE_POLL_US 10000

/* Chunk i's blob: bytes fixed by the seed (the service is keyless: a
 * ciphertext is any bytes). */
static void make_blob(const struct sim_engine *e, uint32_t i, uint8_t *buf, size_t len)
{
	struct weft_rng r;
	weft_rng_seed(&r, e->seed ^ UINT64_C(0x5707e5707e) ^ ((uint64_t)i << 20));
	weft_rng_bytes(&r, buf, len);
}

/* Runs a storage command on a live process as one step. */
static int workload_command(struct sim_proc *p, const char *what, const struct weft_mpw *arg, struct weft_mpw *reply)
{
	if (!p->up || p->ops->command == NULL)
		return WEFT_EUNSUPPORTED;
	weft_mpw_reset(reply);
	proc_enter(p);
	int rc = p->ops->command(p->state, what, arg->buf, arg->len, reply);
	proc_leave(p);
	return rc;
}

static bool reply_is(const struct weft_mpw *r, const char *key, const char *want)
{
	const char *v;
	uint32_t len;
	return weft_params_str(r->buf, r->len, key, &v, &len) == 0 && len == strlen(want) && memcmp(v, want, len) == 0;
}

static bool reply_true(const struct weft_mpw *r, const char *key)
{
	const uint8_t *v;
	size_t vlen;
	bool b = false;
	struct weft_mp_reader rd;
	if (weft_params_value(r->buf, r->len, key, &v, &vlen) != 0)
		return false;
	weft_mp_reader_init(&rd, v, vlen);
	return weft_mp_read_bool(&rd, &b) == 0 && b;
}

static void store_violation(struct sim_engine *e, uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void store_violation(struct sim_engine *e, uint64_t *counter, const char *fmt, ...)
{
	(*counter)++;
	if (e->store_first[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->store_first, sizeof(e->store_first), fmt, ap);
	va_end(ap);
}

static void workload_put(struct sim_engine *e, uint32_t i)
{
	const struct sim_store_work *w = &e->sc->store;
	struct sim_proc *p = e->first_proc[w->putter];
	struct store_chunk *c = &e->chunks[i];
	uint8_t *blob = weft_xmalloc(w->size), tag[WEFT_DIGEST_LEN] = {0};
	make_blob(e, i, blob, w->size);
	weft_merkle_root(c->cid, blob, w->size);
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 4);
	weft_mpw_bin(&arg, tag, sizeof(tag));
	weft_mpw_bin(&arg, c->cid, sizeof(c->cid));
	weft_mpw_uint(&arg, w->k);
	weft_mpw_bin(&arg, blob, w->size);
	int rc = workload_command(p, "store.place", &arg, &reply);
	const uint8_t *v;
	size_t vlen;
	uint64_t k = 0;
	if (rc == 0 && weft_params_value(reply.buf, reply.len, "sr", &v, &vlen) == 0 && vlen == 2 + WEFT_DIGEST_LEN &&
	    weft_params_uint(reply.buf, reply.len, "k", &k) == 0) {
		memcpy(c->sr, v + 2, WEFT_DIGEST_LEN);
		c->k = (uint32_t)k;
		c->placing = true;
		c->placed = reply_true(&reply, "done");
		trace(e, "\"ev\":\"store.put\",\"node\":%u,\"chunk\":%u", p->node, i);
	} else if (rc == WEFT_EAGAIN || rc == WEFT_EUNSUPPORTED) {
		/* Busy, or the putter is down: again later. */
		heap_push(e, (struct sim_event){.time = e->now + STORE_POLL_US, .kind = EV_STORE,
						.arg = ((uint64_t)STORE_PUT << 32) | i});
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	free(blob);
}

static void workload_poll(struct sim_engine *e)
{
	const struct sim_store_work *w = &e->sc->store;
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	struct sim_proc *putter = e->first_proc[w->putter];
	bool busy = false;
	for (uint32_t i = 0; i < w->chunks; i++) {
		struct store_chunk *c = &e->chunks[i];
		if (!c->placing || c->placed || c->failed)
			continue;
		static const uint8_t tag[WEFT_DIGEST_LEN]; /* workload_put's: all zero */
		weft_mpw_reset(&arg);
		weft_mpw_array(&arg, 2);
		weft_mpw_bin(&arg, c->cid, sizeof(c->cid));
		weft_mpw_bin(&arg, tag, sizeof(tag));
		int rc = workload_command(putter, "store.placed", &arg, &reply);
		if (rc == 0 && reply_true(&reply, "done"))
			c->placed = true;
		else if (rc == WEFT_NOTFOUND || (rc == 0 && reply_true(&reply, "failed")))
			c->failed = true; /* the putter restarted and forgot it, or too few acknowledged */
		else
			busy = true;
	}
	uint8_t *blob = weft_xmalloc(w->size);
	for (uint32_t r = 0; r < w->nreaders; r++) {
		struct sim_proc *p = e->first_proc[w->readers[r]];
		for (uint32_t i = 0; i < w->chunks; i++) {
			uint8_t *g = &e->gets[(size_t)r * w->chunks + i];
			if (*g != GET_PENDING)
				continue;
			weft_mpw_reset(&arg);
			weft_mpw_bin(&arg, e->chunks[i].cid, WEFT_DIGEST_LEN);
			int rc = workload_command(p, "store.fetched", &arg, &reply);
			if (rc == WEFT_EUNSUPPORTED) {
				busy = true; /* down for now */
				continue;
			}
			if (rc != 0 || reply_is(&reply, "state", "failed")) {
				*g = GET_FAILED;
				if (!e->faulty[p->node])
					store_violation(e, &e->store_unavailable,
							"node %u could not fetch chunk %u (%s) at %.3f ms", p->node, i,
							rc ? weft_strerror(rc) : "too few good shares", (double)e->now / 1000);
				continue;
			}
			if (reply_is(&reply, "state", "pending")) {
				busy = true;
				continue;
			}
			const uint8_t *v;
			size_t vlen;
			struct weft_mp_reader rd;
			const uint8_t *got = NULL;
			uint32_t glen = 0;
			if (weft_params_value(reply.buf, reply.len, "blob", &v, &vlen) == 0) {
				weft_mp_reader_init(&rd, v, vlen);
				weft_mp_read_bin(&rd, &got, &glen);
			}
			make_blob(e, i, blob, w->size);
			*g = GET_DONE;
			e->gets_done++;
			if (!e->faulty[p->node] && (glen != w->size || memcmp(got, blob, w->size) != 0))
				store_violation(e, &e->store_wrong, "node %u fetched other bytes than chunk %u at %.3f ms",
						p->node, i, (double)e->now / 1000);
		}
	}
	free(blob);
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	bool puts_left = false;
	for (uint32_t i = 0; i < w->chunks && !puts_left; i++)
		puts_left = !e->chunks[i].placing && !e->chunks[i].failed;
	if (busy || puts_left || e->now < w->get_us)
		heap_push(e, (struct sim_event){.time = e->now + STORE_POLL_US, .kind = EV_STORE,
						.arg = (uint64_t)STORE_POLL << 32});
}

static void workload_get(struct sim_engine *e)
{
	const struct sim_store_work *w = &e->sc->store;
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	for (uint32_t r = 0; r < w->nreaders; r++) {
		struct sim_proc *p = e->first_proc[w->readers[r]];
		for (uint32_t i = 0; i < w->chunks; i++) {
			const struct store_chunk *c = &e->chunks[i];
			if (!c->placed || !p->up)
				continue;
			weft_mpw_reset(&arg);
			weft_mpw_array(&arg, 4);
			weft_mpw_bin(&arg, c->cid, sizeof(c->cid));
			weft_mpw_bin(&arg, c->sr, sizeof(c->sr));
			weft_mpw_uint(&arg, c->k);
			weft_mpw_uint(&arg, w->size);
			if (workload_command(p, "store.fetch", &arg, &reply) == 0)
				e->gets[(size_t)r * w->chunks + i] = GET_PENDING;
		}
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	heap_push(e, (struct sim_event){.time = e->now + STORE_POLL_US, .kind = EV_STORE,
					.arg = (uint64_t)STORE_POLL << 32});
}

static void on_store(struct sim_engine *e, struct sim_event *ev)
{
	switch ((enum store_op)(ev->arg >> 32)) {
	case STORE_PUT: workload_put(e, (uint32_t)ev->arg); break;
	case STORE_POLL: workload_poll(e); break;
	case STORE_GET: workload_get(e); break;
	}
}

/* The storage checkers, after the run: fetches still pending at the end
 * by a correct reader of a placed chunk count as unavailable. */
static void store_judge(struct sim_engine *e, struct sim_run_result *res)
{
	const struct sim_scenario *sc = e->sc;
	if (!sc->store.on)
		return;
	for (uint32_t r = 0; r < sc->store.nreaders; r++)
		for (uint32_t i = 0; i < sc->store.chunks; i++)
			if (e->gets[(size_t)r * sc->store.chunks + i] == GET_PENDING && !e->faulty[sc->store.readers[r]])
				store_violation(e, &e->store_unavailable, "node %u's fetch of chunk %u never finished",
						sc->store.readers[r], i);
	struct sim_verdict *v = &res->verdict;
	const struct {
		unsigned int bit;
		uint64_t count;
	} checks[] = {{SIM_CHECK_STORE_INTEGRITY, e->store_wrong}, {SIM_CHECK_STORE_AVAILABILITY, e->store_unavailable}};
	for (size_t i = 0; i < 2; i++) {
		if (!(sc->checkers & checks[i].bit))
			continue;
		v->checked |= checks[i].bit;
		if (checks[i].count == 0)
			continue;
		v->violated |= checks[i].bit;
		res->violations++;
		if (!v->first[0])
			snprintf(v->first, sizeof(v->first), "%s: %s", sim_checker_name(checks[i].bit), e->store_first);
	}
}

static json_t *store_report(const struct sim_engine *e)
{
	const struct sim_store_work *w = &e->sc->store;
	uint32_t placed = 0, failed = 0;
	for (uint32_t i = 0; i < w->chunks; i++)
		placed += e->chunks[i].placed, failed += e->chunks[i].failed;
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "chunks", (json_int_t)w->chunks, "placed", (json_int_t)placed,
			 "place_failed", (json_int_t)failed, "fetched", (json_int_t)e->gets_done, "wrong_bytes",
			 (json_int_t)e->store_wrong, "unavailable", (json_int_t)e->store_unavailable);
}

/* ---- the channel workload's view of the engine (channels.c) ---- */

static uint64_t chan_now(void *ctx)
{
	return ((struct sim_engine *)ctx)->now;
}

static bool chan_up(void *ctx, uint32_t node)
{
	struct sim_engine *e = ctx;
	return node < e->sc->n && e->first_proc[node]->up;
}

static bool chan_correct(void *ctx, uint32_t node)
{
	struct sim_engine *e = ctx;
	return node < e->sc->n && !e->faulty[node];
}

static int chan_command(void *ctx, uint32_t node, const char *what, const uint8_t *arg, size_t alen,
			struct weft_mpw *reply)
{
	struct sim_engine *e = ctx;
	struct sim_proc *p = node < e->sc->n ? e->first_proc[node] : NULL;
	if (p == NULL || !p->up || p->ops->command == NULL)
		return WEFT_EUNSUPPORTED;
	weft_mpw_reset(reply);
	proc_enter(p);
	int rc = p->ops->command(p->state, what, arg, alen, reply);
	proc_leave(p);
	if (e->opts->trace) {
		/* a refusal's reason, when the command answered one */
		struct weft_mp_reader r;
		const char *why = "";
		uint32_t wlen = 0;
		weft_mp_reader_init(&r, reply->buf, reply->len);
		if (rc != 0 && reply->len && weft_mp_read_str(&r, &why, &wlen) == 0) {
			json_t *s = json_stringn(why, wlen);
			char *q = json_dumps(s, JSON_ENCODE_ANY);
			trace(e, "\"ev\":\"channel.command\",\"node\":%u,\"what\":\"%s\",\"rc\":%d,\"why\":%s", node,
			      what, rc, q ? q : "\"\"");
			free(q);
			json_decref(s);
		} else {
			trace(e, "\"ev\":\"channel.command\",\"node\":%u,\"what\":\"%s\",\"rc\":%d", node, what, rc);
		}
	}
	return rc;
}

static int chan_query(void *ctx, uint32_t node, const char *what, const uint8_t *arg, size_t alen,
		      struct weft_mpw *reply)
{
	struct sim_engine *e = ctx;
	struct sim_proc *p = node < e->sc->n ? e->first_proc[node] : NULL;
	if (p == NULL || !p->up || p->ops->query == NULL)
		return WEFT_EUNSUPPORTED;
	weft_mpw_reset(reply);
	proc_enter(p);
	int rc = p->ops->query(p->state, what, arg, alen, reply);
	proc_leave(p);
	return rc;
}

static void chan_schedule(void *ctx, uint64_t at_us, uint64_t arg)
{
	struct sim_engine *e = ctx;
	heap_push(e, (struct sim_event){.time = at_us > e->now ? at_us : e->now, .kind = EV_CHANNEL, .arg = arg});
}

/* ---- set-up and report ---- */

static void engine_free(struct sim_engine *e)
{
	while (e->hlen) {
		struct sim_event ev = heap_pop(e);
		msg_unref(ev.msg);
	}
	free(e->heap);
	for (uint32_t i = 0; i < e->nprocs; i++) {
		struct sim_proc *p = &e->procs[i];
		if (p->up)
			proc_destroy(p);
		weft_kv_abort(p->txn);
		free(p->timers);
		free(p->own_params);
		sim_memkv_free(p->mem);
		sim_shares_free(p->shares);
		for (size_t k = 0; k < p->nheld; k++)
			free(p->held[k].ev);
		free(p->held);
		if (p->undo) {
			undo_clear(p->undo);
			free(p->undo->e);
			free(p->undo);
		}
	}
	free(e->procs);
	free(e->first_proc);
	free(e->nic_out_free);
	free(e->nic_in_free);
	free(e->stats);
	free(e->kinds);
	free(e->hex);
	weft_counters_free(&e->metrics);
	free(e->faulty);
	free(e->reqs);
	free(e->lat_us);
	sim_history_free(&e->hist);
	weft_kv_close(e->kv);
	if (e->kvdir) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/data.mdb", e->kvdir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/lock.mdb", e->kvdir);
		unlink(path);
		rmdir(e->kvdir);
		free(e->kvdir);
	}
	if (e->sharedir) {
		rmdir(e->sharedir);
		free(e->sharedir);
	}
	free(e->chunks);
	free(e->gets);
	sim_chan_free(e->chan);
	if (e->params != e->sc->params)
		free(e->params);
	for (uint32_t i = 0; e->ids && i < e->sc->n; i++)
		weft_identity_free(e->ids[i]);
	free(e->ids);
	free(e->pk);
	free(e->fastkey);
	weft_mpw_free(&e->scratch);
	free(e->fired_us);
	free(e->armed);
	free(e->clock);
}

static uint64_t virtual_ms(void *arg)
{
	return ((const struct sim_engine *)arg)->now / 1000;
}

static struct sim_proc *add_proc(struct sim_engine *e, uint32_t node, const struct sim_fault *twin_of,
				 const struct weft_proto_ops *ops)
{
	struct sim_proc *p = &e->procs[e->nprocs];
	p->index = e->nprocs++;
	p->eng = e;
	p->node = node;
	p->ops = ops;
	p->twin_of = twin_of;
	p->params = e->params;
	p->plen = e->plen;
	p->events = (struct weft_event_service){.ctx = p, .emit = event_emit};
	p->env = (struct weft_env){.ops = &sim_env_ops, .host = p, .self = node, .n = e->sc->n, .f = e->sc->f};
	weft_rng_seed(&p->rng, e->seed * UINT64_C(0x9e3779b97f4a7c15) + p->index + 1);
	if (e->sc->kv == SIM_KV_MEMORY)
		p->mem = sim_memkv_new();
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/shares-%u", e->kvdir ? e->kvdir : e->sharedir, p->index);
	p->shares = sim_shares_new(dir, virtual_ms, e);
	return p;
}

static int engine_setup(struct sim_engine *e, char *err, size_t errlen)
{
	const struct sim_scenario *sc = e->sc;
	const struct weft_proto_ops *ops = weft_proto_find(sc->protocol);
	if (ops == NULL) {
		snprintf(err, errlen, "unknown protocol '%s'", sc->protocol);
		return WEFT_EINVAL;
	}
	e->faulty = calloc(sc->n, sizeof(bool));
	if (e->faulty == NULL)
		abort();
	uint32_t nfaulty = sim_scenario_faulty(sc, e->faulty);
	if (nfaulty > sc->f && !sc->expect_violation) {
		snprintf(err, errlen,
			 "%u faulty nodes but f = %u: the properties cannot hold; set \"expect_violation\": true "
			 "to run it anyway",
			 nfaulty, sc->f);
		return WEFT_EINVAL;
	}
	size_t extra = 0;
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct sim_fault *f = &sc->faults[i];
		if (f->kind == SIM_FAULT_ADVERSARY && weft_proto_strategy_find(ops, f->strategy) == NULL) {
			snprintf(err, errlen, "protocol '%s' registers no adversary strategy '%s'", sc->protocol,
				 f->strategy ? f->strategy : "");
			return WEFT_EUNSUPPORTED;
		}
		if (f->kind == SIM_FAULT_TWINS || f->kind == SIM_FAULT_EQUIVOCATE)
			extra += f->nnodes;
	}
	e->procs = calloc(sc->n + extra, sizeof(*e->procs));
	e->first_proc = calloc(sc->n, sizeof(*e->first_proc));
	e->nic_out_free = calloc(sc->n, sizeof(uint64_t));
	e->nic_in_free = calloc(sc->n, sizeof(uint64_t));
	e->stats = calloc(sc->n, sizeof(*e->stats));
	e->pk = calloc(sc->n, sizeof(*e->pk));
	e->fastkey = calloc(sc->n, sizeof(*e->fastkey));
	e->fired_us = calloc(sc->nfaults + 1, sizeof(*e->fired_us));
	e->armed = calloc(sc->nfaults + 1, sizeof(*e->armed));
	e->clock = calloc(sc->n, sizeof(*e->clock));
	if (!e->procs || !e->first_proc || !e->nic_out_free || !e->nic_in_free || !e->stats || !e->pk ||
	    !e->fastkey || !e->fired_us || !e->armed || !e->clock)
		abort();
	for (uint32_t i = 0; i < sc->n; i++)
		e->clock[i].rate = 1.0;
	for (size_t i = 0; i < sc->nfaults; i++) {
		e->fired_us[i] = SIM_NEVER;
		if (sc->faults[i].after.kind != SIM_TRIGGER_NONE)
			e->armed[e->narmed++] = i;
	}
	/* Node keys are fixed by n and the node index, like a genesis file. */
	if (sc->signatures == SIM_SIG_ED25519) {
		e->ids = calloc(sc->n, sizeof(*e->ids));
		if (e->ids == NULL)
			abort();
	}
	for (uint32_t i = 0; i < sc->n; i++) {
		uint8_t seed[WEFT_SEED_LEN];
		uint32_t tag[2] = {sc->n, i};
		crypto_generichash(seed, sizeof(seed), (const uint8_t *)tag, sizeof(tag), (const uint8_t *)"weft-sim-node",
				   13);
		memcpy(e->fastkey[i], seed, 32);
		if (e->ids) {
			e->ids[i] = weft_identity_from_seed(seed);
			memcpy(e->pk[i], e->ids[i]->pk, WEFT_PK_LEN);
		}
	}
	if (sc->kv == SIM_KV_LMDB) {
		const char *tmp = getenv("TMPDIR");
		if (asprintf(&e->kvdir, "%s/weft-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 ||
		    mkdtemp(e->kvdir) == NULL) {
			snprintf(err, errlen, "cannot create a temporary directory for the kv store: %s", strerror(errno));
			return WEFT_EIO;
		}
		struct weft_kv_opts ko = {.map_size = (size_t)8 << 30, .no_sync = true};
		int rc = weft_kv_open(&e->kv, e->kvdir, &ko);
		if (rc == 0)
			rc = weft_kv_db(e->kv, NULL, &e->dbi);
		if (rc != 0) {
			snprintf(err, errlen, "kv store in %s: %s", e->kvdir, weft_strerror(rc));
			return rc;
		}
	}
	if (e->kvdir == NULL) {
		const char *tmp = getenv("TMPDIR");
		if (asprintf(&e->sharedir, "%s/weft-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 ||
		    mkdtemp(e->sharedir) == NULL) {
			snprintf(err, errlen, "cannot create a temporary directory for share stores: %s",
				 strerror(errno));
			return WEFT_EIO;
		}
	}
	e->params = sc->params;
	e->plen = sc->plen;
	if (sc->channel.on) {
		struct sim_chan_host host = {.ctx = e, .now = chan_now, .up = chan_up, .correct = chan_correct,
					     .command = chan_command, .query = chan_query, .schedule = chan_schedule};
		e->chan = sim_chan_new(sc, e->seed, &host);
		e->params = sim_chan_params(e->chan, sc->params, sc->plen, &e->plen, err, errlen);
		if (e->params == NULL)
			return WEFT_EINVAL;
	}
	for (uint32_t i = 0; i < sc->n; i++)
		e->first_proc[i] = add_proc(e, i, NULL, ops);
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct sim_fault *f = &sc->faults[i];
		if (f->kind != SIM_FAULT_ADVERSARY)
			continue;
		for (uint32_t k = 0; k < f->nnodes; k++) {
			struct sim_proc *p = e->first_proc[f->nodes[k]];
			p->ops = weft_proto_strategy_find(ops, f->strategy)->ops;
			p->own_params = weft_params_with_adversary(e->params, e->plen, f->params, f->plen, &p->plen);
			p->params = p->own_params;
		}
	}
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct sim_fault *f = &sc->faults[i];
		if (f->kind != SIM_FAULT_TWINS && f->kind != SIM_FAULT_EQUIVOCATE)
			continue;
		for (uint32_t k = 0; k < f->nnodes; k++) {
			struct sim_proc *t = add_proc(e, f->nodes[k], f, ops);
			struct sim_proc *q = e->first_proc[f->nodes[k]];
			while (q->next_same_node)
				q = q->next_same_node;
			q->next_same_node = t;
		}
	}
	/* lose last_step: the processes whose writes go through an undo log. */
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct sim_fault *f = &sc->faults[i];
		if (f->kind != SIM_FAULT_CRASH_RECOVER || f->lose != SIM_LOSE_LAST_STEP)
			continue;
		for (uint32_t k = 0; k < f->nnodes; k++)
			for (struct sim_proc *p = e->first_proc[f->nodes[k]]; p; p = p->next_same_node)
				if (p->undo == NULL && (p->undo = calloc(1, sizeof(*p->undo))) == NULL)
					abort();
	}
	for (uint32_t i = 0; i < e->nprocs; i++) {
		int rc = proc_boot(e, &e->procs[i]);
		if (rc != 0) {
			snprintf(err, errlen, "protocol '%s' failed to start on node %u: %s (check \"params\")",
				 sc->protocol, e->procs[i].node, weft_strerror(rc));
			return rc;
		}
	}
	/* One pending request per workload line and node; each schedules the next. */
	for (size_t w = 0; w < sc->nwork; w++) {
		const struct sim_workload *wl = &sc->work[w];
		for (uint32_t k = 0; k < wl->nnodes; k++)
			heap_push(e, (struct sim_event){.time = wl->start_us, .kind = EV_REQUEST, .proc = wl->nodes[k],
							.arg = (uint64_t)w << 32});
	}
	if (sc->store.on) {
		e->chunks = weft_xcalloc(sc->store.chunks, sizeof(*e->chunks));
		e->gets = weft_xcalloc((size_t)sc->store.nreaders * sc->store.chunks, 1);
		for (uint32_t i = 0; i < sc->store.chunks; i++)
			heap_push(e, (struct sim_event){.time = sc->store.start_us + i * sc->store.every_us,
							.kind = EV_STORE, .arg = ((uint64_t)STORE_PUT << 32) | i});
		heap_push(e, (struct sim_event){.time = sc->store.start_us, .kind = EV_STORE,
						.arg = (uint64_t)STORE_POLL << 32});
		heap_push(e, (struct sim_event){.time = sc->store.get_us, .kind = EV_STORE,
						.arg = (uint64_t)STORE_GET << 32});
	}
	for (size_t i = 0; i < sc->nfaults; i++)
		if (sc->faults[i].after.kind == SIM_TRIGGER_NONE)
			schedule_window(e, i);
	sim_chan_start(e->chan);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static int cmp_kind(const void *a, const void *b)
{
	return strcmp(((const struct kind_stats *)a)->kind, ((const struct kind_stats *)b)->kind);
}

static double pct_ms(const uint32_t *sorted, size_t n, double q)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return sorted[i] / 1000.0;
}

/* "triggers": per fault with a trigger, its index and when the trigger
 * fired (null: it never did); NULL when the scenario has none. */
static json_t *trigger_report(const struct sim_engine *e)
{
	json_t *list = NULL;
	for (size_t i = 0; i < e->sc->nfaults; i++) {
		if (e->sc->faults[i].after.kind == SIM_TRIGGER_NONE)
			continue;
		uint64_t t = e->fired_us[i];
		if (list == NULL)
			list = json_array();
		json_array_append_new(list, json_pack("{s:I, s:o}", "fault", (json_int_t)i, "fired_ms",
						      t == SIM_NEVER ? json_null() : json_real((double)t / 1000.0)));
	}
	return list;
}

static json_t *report(struct sim_engine *e, const struct sim_verdict *v, const struct sim_measures *checked)
{
	const struct sim_scenario *sc = e->sc;
	json_t *doc = json_object();
	json_object_set_new(doc, "scenario", json_string(sc->name ? sc->name : ""));
	json_object_set_new(doc, "protocol", json_string(sc->protocol));
	json_object_set_new(doc, "n", json_integer(sc->n));
	json_object_set_new(doc, "f", json_integer(sc->f));
	json_object_set_new(doc, "seed", json_integer((json_int_t)e->seed));
	json_object_set_new(doc, "duration_ms", json_real((double)sc->duration_us / 1000.0));
	json_object_set_new(doc, "events", json_integer((json_int_t)e->events));

	uint64_t msgs = 0, bytes = 0;
	for (uint32_t i = 0; i < sc->n; i++)
		msgs += e->stats[i].sent_msgs, bytes += e->stats[i].sent_bytes;
	json_t *m = json_object();
	json_object_set_new(m, "sent", json_integer((json_int_t)msgs));
	json_object_set_new(m, "bytes", json_integer((json_int_t)bytes));
	json_object_set_new(m, "dropped", json_integer((json_int_t)e->dropped));
	if (e->nkinds)
		qsort(e->kinds, e->nkinds, sizeof(*e->kinds), cmp_kind);
	json_t *bykind = json_object();
	for (size_t i = 0; i < e->nkinds; i++) {
		json_t *k = json_object();
		json_object_set_new(k, "messages", json_integer((json_int_t)e->kinds[i].msgs));
		json_object_set_new(k, "bytes", json_integer((json_int_t)e->kinds[i].bytes));
		json_object_set_new(bykind, e->kinds[i].kind, k);
	}
	json_object_set_new(m, "by_kind", bykind);
	json_object_set_new(doc, "messages", m);

	json_object_set_new(doc, "requests", json_integer((json_int_t)e->requests));
	json_object_set_new(doc, "deliveries", json_integer((json_int_t)e->deliveries));
	if (e->nlat)
		qsort(e->lat_us, e->nlat, sizeof(uint32_t), cmp_u32);
	json_t *lat = json_object();
	json_object_set_new(lat, "samples", json_integer((json_int_t)e->nlat));
	json_object_set_new(lat, "p50", json_real(pct_ms(e->lat_us, e->nlat, 0.50)));
	json_object_set_new(lat, "p90", json_real(pct_ms(e->lat_us, e->nlat, 0.90)));
	json_object_set_new(lat, "p99", json_real(pct_ms(e->lat_us, e->nlat, 0.99)));
	json_object_set_new(lat, "max", json_real(pct_ms(e->lat_us, e->nlat, 1.0)));
	json_object_set_new(doc, "latency_ms", lat);
	double secs = (double)sc->duration_us / 1e6;
	json_t *tp = json_object();
	json_object_set_new(tp, "deliveries_per_s", json_real(secs > 0 ? (double)e->deliveries / secs : 0));
	json_object_set_new(tp, "bytes_per_node_per_ms",
			    json_real(secs > 0 ? (double)bytes / sc->n / (secs * 1000.0) : 0));
	json_object_set_new(doc, "throughput", tp);

	weft_counters_sort(&e->metrics);
	json_t *mt = json_object();
	for (size_t i = 0; i < e->metrics.n; i++)
		json_object_set_new(mt, e->metrics.v[i].name, json_integer(e->metrics.v[i].value));
	json_object_set_new(doc, "metrics", mt);

	if (e->opts->per_node) {
		json_t *nodes = json_array();
		for (uint32_t i = 0; i < sc->n; i++) {
			const struct node_stats *s = &e->stats[i];
			json_t *o = json_object();
			json_object_set_new(o, "node", json_integer(i));
			json_object_set_new(o, "faulty", json_boolean(e->faulty[i]));
			json_object_set_new(o, "sent_msgs", json_integer((json_int_t)s->sent_msgs));
			json_object_set_new(o, "sent_bytes", json_integer((json_int_t)s->sent_bytes));
			json_object_set_new(o, "recv_msgs", json_integer((json_int_t)s->recv_msgs));
			json_object_set_new(o, "recv_bytes", json_integer((json_int_t)s->recv_bytes));
			json_object_set_new(o, "delivered", json_integer((json_int_t)s->delivered));
			json_object_set_new(o, "rejected", json_integer((json_int_t)s->rejected));
			json_object_set_new(o, "dropped", json_integer((json_int_t)s->dropped));
			json_object_set_new(o, "info", proc_info(e->first_proc[i]));
			json_array_append_new(nodes, o);
		}
		json_object_set_new(doc, "nodes", nodes);
	}

	json_t *fired = trigger_report(e);
	if (fired)
		json_object_set_new(doc, "triggers", fired);
	if (sc->store.on)
		json_object_set_new(doc, "store", store_report(e));
	if (e->chan)
		json_object_set_new(doc, "channel", sim_chan_report(e->chan));
	sim_report_checks(doc, v, checked);
	return doc;
}

/* state_hash: what each live correct node's protocol says about its state
 * at the end of the run (NULL when the checker is not selected). */
static struct sim_node_state *node_states(struct sim_engine *e)
{
	if (!(e->sc->checkers & SIM_CHECK_STATE_HASH))
		return NULL;
	struct sim_node_state *st = calloc(e->sc->n, sizeof(*st));
	if (st == NULL)
		abort();
	for (uint32_t i = 0; i < e->sc->n; i++) {
		if (e->faulty[i])
			continue;
		json_t *info = proc_info(e->first_proc[i]);
		sim_node_state_read(&st[i], info);
		json_decref(info);
	}
	return st;
}

int sim_run(const struct sim_scenario *sc, uint64_t seed, const struct sim_run_opts *opts, FILE *out,
	    struct sim_run_result *res, char *err, size_t errlen)
{
	struct sim_engine e = {.sc = sc, .opts = opts, .seed = seed};
	memset(res, 0, sizeof(*res));
	weft_mpw_init(&e.scratch);
	weft_rng_seed(&e.net, seed);
	int rc = engine_setup(&e, err, errlen);
	if (rc != 0) {
		res->refused = true;
		engine_free(&e);
		return rc;
	}
	while (e.hlen && e.heap[0].time <= sc->duration_us) {
		struct sim_event ev = heap_pop(&e);
		e.now = ev.time;
		e.events++;
		switch ((enum ev_kind)ev.kind) {
		case EV_ARRIVE:
			on_arrive(&e, &ev);
			break;
		case EV_DELIVER:
			deliver_msg(&e, ev.proc, ev.from, ev.msg);
			msg_unref(ev.msg);
			break;
		case EV_TIMER:
			on_timer(&e, &ev);
			break;
		case EV_REQUEST:
			on_request(&e, &ev);
			break;
		case EV_CRASH:
			on_crash(&e, &ev, false);
			break;
		case EV_RECOVER:
			on_crash(&e, &ev, true);
			break;
		case EV_SKEW:
			on_skew(&e, &ev);
			break;
		case EV_STORE:
			on_store(&e, &ev);
			break;
		case EV_CHANNEL:
			sim_chan_on_event(e.chan, ev.arg);
			break;
		}
	}
	e.now = sc->duration_us;
	bool *correct = malloc(sc->n * sizeof(bool));
	if (correct == NULL)
		abort();
	for (uint32_t i = 0; i < sc->n; i++)
		correct[i] = !e.faulty[i];
	struct sim_node_state *states = node_states(&e);
	struct sim_check_input in = {.n = sc->n, .correct = correct, .checkers = sc->checkers, .bounds = sc->bounds,
				     .duration_us = sc->duration_us, .faults_end_us = sim_faults_end(sc, e.fired_us),
				     .states = states};
	struct sim_measures measures;
	res->violations = sim_check(&e.hist, &in, &res->verdict, &measures);
	store_judge(&e, res);
	if (e.chan) {
		for (uint32_t i = 0; i < e.nprocs; i++)
			held_release(&e.procs[i], UINT64_MAX, false);
		res->violations += sim_chan_judge(e.chan, correct, &res->verdict);
	}
	free(states);
	free(correct);
	res->events = e.events;
	json_t *doc = report(&e, &res->verdict, &measures);
	sim_measures_free(&measures);
	char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10));
	fprintf(out, "%s\n", text);
	free(text);
	json_decref(doc);
	if (res->violations && !opts->quiet && (!sc->expect_violation || opts->verbose)) {
		fprintf(stderr, "weft-sim: seed %llu: %s\n", (unsigned long long)seed, res->verdict.first);
		if (e.hist.len)
			sim_history_print_around(stderr, &e.hist, res->verdict.first_event, 5);
	}
	engine_free(&e);
	return 0;
}
