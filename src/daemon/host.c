/* host.c - weftd's protocol host (see host.h).
 *
 * Every protocol callback is bracketed: kv operations open one LMDB write
 * transaction lazily, sends and deliveries are copied aside, and when the
 * outermost callback returns the transaction is committed first and only
 * then are the held messages handed to the transport and the deliveries to
 * RPC subscribers ("persist before send").
 *
 * A failed commit (disk full, map full) must leave memory as the store is:
 * the step's messages and deliveries are dropped, and every protocol
 * instance is rebuilt from kv (destroy, init), exactly as after a crash.
 * The node then pauses: peer messages and timers are ignored and requests
 * fail with the store's error, while a probe (every PROBE_MS) waits for
 * free space and a write that commits; then init and start run again and
 * the node catches up with its peers.  Nothing a client was refused can be
 * committed, since the mempool that held it was rebuilt from the store.
 *
 * Byzantine strategies act on what leaves the node: silent drops it,
 * corrupt flips a byte, equivocate runs a second instance of the honest
 * protocol with the same identity, fed requests with a flipped last byte,
 * that alone speaks to the upper half of the peers while the first speaks
 * to the lower half. */
#include <event2/event.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "weft/bytes.h"
#include "weft/channel.h"
#include "weft/counters.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/faults.h"
#include "weft/log.h"
#include "weft/net.h"
#include "weft/rpc.h"
#include "weft/store_proto.h"
#include "weft/util.h"

struct host_instance {
	struct weft_host *host;
	struct weft_env env;
	void *state;
	uint8_t kv_prefix;
	bool twin;
};

struct host_timer {
	struct host_instance *inst;
	uint64_t id;
	struct event *ev;
};

struct held_send {
	struct host_instance *inst;
	int64_t to;           /* -1: every peer */
	size_t len;
	uint8_t *data;
};

struct held_delivery {
	uint8_t rec[12 + WEFT_HASH_LEN]; /* origin, seq, digest: the delivery hash's input */
	size_t off, len;                  /* its notification params in held_notes */
};

/* One rate limit per protocol log event (static strings). */
#define LOG_EVENTS 64
struct event_limit {
	const char *event;
	struct weft_log_limit limit;
};

#define PROBE_MS 1000
/* Group commit: the steps of one event loop turn from peer messages and
 * timers share one LMDB transaction and one fsync, up to these bounds. */
#define GROUP_STEPS 256
#define GROUP_BYTES ((size_t)4 << 20)

struct weft_host {
	struct weft_host_opts o;
	struct host_instance inst[2];
	int ninst;
	weft_kv_dbi dbi;
	struct weft_kv_txn *txn;
	int depth;
	bool open;                  /* a group of steps not yet committed (txn, held messages) */
	size_t grouped, group_bytes; /* its steps, and the bytes of the messages it holds */
	struct event *commit_ev;    /* ends the group at the end of the event loop's turn */
	bool commit_scheduled;
	struct held_send *held;
	size_t nheld, heldcap;
	struct host_timer **timers;   /* each allocated alone: events point at them */
	size_t ntimers, tcap;
	struct weft_counters metrics;
	uint8_t keybuf[1 + 1024];
	struct held_delivery *hdl;
	size_t nhdl, hdlcap;
	struct weft_mpw held_notes;
	struct weft_event_service events;   /* what protocols emit, held like messages */
	struct weft_mpw held_events;        /* [bin event...] of the step */
	size_t nevents;
	uint64_t delivered, rejected;
	struct weft_hasher delivery_hash;
	struct event_limit log_limits[LOG_EVENTS];
	size_t nlog_limits;
	/* A failed commit pauses the node until the store takes writes again. */
	int store_err;              /* 0, or the error that paused it */
	uint64_t store_failures;    /* commits that failed since start */
	uint64_t paused_since_us;
	uint64_t paused_dropped;    /* peer messages and timers ignored while paused */
	bool recovering;            /* rebuilding from kv: a failure here does not recurse */
	struct event *probe;
	struct weft_mpw held_trace; /* --trace: the group's trace lines, written once it is durable */
};

static void store_failed(struct weft_host *h, int rc);

int weft_byzantine_parse(const char *s, enum weft_byzantine *out)
{
	/* The shared fault words (weft/faults.h) weftd can act out itself. */
	enum weft_fault f;
	if (strcmp(s, "none") == 0) {
		*out = WEFT_BYZ_NONE;
		return 0;
	}
	if (weft_fault_parse(s, strlen(s), WEFT_FAULT_IN_DAEMON, &f, NULL, 0) != 0)
		return WEFT_EINVAL;
	*out = f == WEFT_FAULT_OMISSION ? WEFT_BYZ_OMISSION : f == WEFT_FAULT_CORRUPT ? WEFT_BYZ_CORRUPT : WEFT_BYZ_EQUIVOCATE;
	return 0;
}

const char *weft_byzantine_name(enum weft_byzantine b)
{
	switch (b) {
	case WEFT_BYZ_NONE: return "none";
	case WEFT_BYZ_OMISSION: return "omission";
	case WEFT_BYZ_CORRUPT: return "corrupt";
	case WEFT_BYZ_EQUIVOCATE: return "equivocate";
	}
	return "none";
}

/* ---- the protocol trace (weftd --trace FILE) ----
 * NDJSON with the events and fields of weft-sim --trace --trace-data
 * (docs/sim.md): request, recv (with the message bytes), send (one per
 * peer, with the bytes), deliver, timer, reject, the protocol's log
 * events at every level (log), plus start (init and start) and command
 * steps; t is the monotonic clock in microseconds,
 * which every process on one host shares, so the files of a committee's
 * nodes merge into one causal order (tla/trace/trace2tla.py merge).  A
 * step's lines are held with its messages and written once its group is
 * durable; a group whose commit failed was rolled back and the protocol
 * rebuilt from the store, which the trace says as a crash and recover of
 * the node.  Only the node's own instance is traced, not an equivocating
 * twin's. */

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void trace_add(struct weft_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace_add(struct weft_host *h, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		weft_mpw_raw(&h->held_trace, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Opens an event line: {"t":NOW,"ev":"EV","node":SELF (the caller adds
 * the rest, then trace_end). */
static bool trace_begin(struct weft_host *h, const char *ev)
{
	if (h->o.trace == NULL)
		return false;
	trace_add(h, "{\"t\":%llu,\"ev\":\"%s\"", (unsigned long long)now_us(), ev);
	return true;
}

static void trace_hex(struct weft_host *h, const char *field, const uint8_t *data, size_t len)
{
	char hex[2 * 256 + 1];
	trace_add(h, ",\"%s\":\"", field);
	for (size_t off = 0; off < len; off += 256) {
		size_t part = len - off < 256 ? len - off : 256;
		weft_hex_encode(hex, data + off, part);
		weft_mpw_raw(&h->held_trace, hex, 2 * part);
	}
	weft_mpw_raw(&h->held_trace, "\"", 1);
}

static void trace_end(struct weft_host *h)
{
	weft_mpw_raw(&h->held_trace, "}\n", 2);
}

/* The group's lines go out when it was stored; else the rollback. */
static void trace_release(struct weft_host *h, bool committed)
{
	if (h->o.trace == NULL || h->held_trace.len == 0)
		return;
	if (committed) {
		fwrite(h->held_trace.buf, 1, h->held_trace.len, h->o.trace);
	} else {
		unsigned long long t = (unsigned long long)now_us();
		fprintf(h->o.trace, "{\"t\":%llu,\"ev\":\"fault\",\"fault\":\"crash\",\"node\":%u}\n", t,
			h->o.self);
		fprintf(h->o.trace, "{\"t\":%llu,\"ev\":\"fault\",\"fault\":\"recover\",\"node\":%u}\n", t,
			h->o.self);
	}
	fflush(h->o.trace);
	weft_mpw_reset(&h->held_trace);
}

static void trace_step(struct weft_host *h, const char *ev)
{
	if (trace_begin(h, ev)) {
		trace_add(h, ",\"node\":%u", h->o.self);
		trace_end(h);
	}
}

/* A protocol log event, at any level: "log" with its event and text. */
static void trace_log(struct weft_host *h, const char *event, const char *msg)
{
	char text[2048];
	weft_json_escape(text, sizeof(text), msg);
	trace_begin(h, "log");
	trace_add(h, ",\"node\":%u,\"event\":\"%s\",\"msg\":\"", h->o.self, event);
	weft_mpw_raw(&h->held_trace, text, strlen(text));
	weft_mpw_raw(&h->held_trace, "\"", 1);
	trace_end(h);
}

static void trace_sends(struct weft_host *h, const struct host_instance *inst, int64_t to, const char *kind,
			const void *msg, size_t len)
{
	if (h->o.trace == NULL || inst->twin)
		return;
	for (uint32_t peer = 0; peer < h->o.n; peer++) {
		if (peer == h->o.self || (to >= 0 && (uint32_t)to != peer))
			continue;
		trace_begin(h, "send");
		trace_add(h, ",\"from\":%u,\"to\":%u,\"kind\":\"%s\",\"bytes\":%zu", h->o.self, peer, kind, len);
		trace_hex(h, "data", msg, len);
		trace_end(h);
	}
}

/* ---- callback brackets ---- */

/* A step begins; the first of a group opens the share store's step. */
static void enter(struct weft_host *h)
{
	if (h->depth++ == 0 && !h->open) {
		h->open = true;
		if (h->o.shares && h->o.shares->begin_step)
			h->o.shares->begin_step(h->o.shares->ctx);
	}
}

/* Whether a held message of inst goes to peer `to` under the strategy. */
static bool audience(const struct weft_host *h, const struct host_instance *inst, uint32_t to)
{
	if (h->o.byzantine != WEFT_BYZ_EQUIVOCATE)
		return true;
	bool upper = to >= h->o.n / 2;
	return inst->twin ? upper : !upper;
}

static struct weft_log_limit *event_limit(struct weft_host *h, const char *event);

static void release(struct weft_host *h, struct held_send *s)
{
	if (h->o.net == NULL || h->o.byzantine == WEFT_BYZ_OMISSION)
		return;
	if (h->o.byzantine == WEFT_BYZ_CORRUPT && s->len > 0) {
		uint32_t r = randombytes_uniform((uint32_t)s->len);
		s->data[r] ^= (uint8_t)(1 + randombytes_uniform(255));
	}
	for (uint32_t to = 0; to < h->o.n; to++) {
		if (to == h->o.self || (s->to >= 0 && (uint32_t)s->to != to) || !audience(h, s->inst, to))
			continue;
		int rc = weft_net_send(h->o.net, to, s->data, s->len);
		if (rc == WEFT_ECLOSED)
			weft_debug("host.send_dropped", "peer=%u bytes=%zu reason=\"queue full\"", to, s->len);
		else if (rc == WEFT_ETOOBIG)
			weft_log_limited(event_limit(h, "host.send_too_big"), WEFT_LOG_WARN, "host.send_too_big",
					 "peer=%u bytes=%zu action=drop hint=\"raise net.max_frame\"", to, s->len);
	}
}

/* A delivery of a committed step: into the delivery hash, out to subscribers. */
static void release_delivery(struct weft_host *h, const struct held_delivery *d)
{
	h->delivered++;
	weft_hasher_update(&h->delivery_hash, d->rec, sizeof(d->rec));
	if (h->o.rpc)
		weft_rpc_notify(h->o.rpc, "proto.deliver", "proto.deliver", h->held_notes.buf + d->off, d->len);
}

/* The step's events go to the daemon once it is durable, or nowhere. */
static void release_events(struct weft_host *h, bool committed)
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, h->held_events.buf, h->held_events.len);
	for (size_t i = 0; committed && h->o.on_event && i < h->nevents; i++) {
		const uint8_t *ev;
		uint32_t len;
		if (weft_mp_read_bin(&r, &ev, &len) != 0)
			break;
		h->o.on_event(h->o.event_arg, ev, len);
	}
	h->nevents = 0;
	weft_mpw_reset(&h->held_events);
}

static void hold_event(void *ctx, const uint8_t *ev, size_t len)
{
	struct weft_host *h = ctx;
	weft_mpw_bin(&h->held_events, ev, len);
	h->nevents++;
}

/* Ends the group of steps: commits their kv writes, then lets their held
 * messages, deliveries and events go.  0, or the commit's error: then
 * nothing of the group was stored, sent or delivered, and the protocols
 * were rebuilt from the store (store_failed). */
static int flush(struct weft_host *h)
{
	if (!h->open)
		return 0;
	h->open = false;
	h->grouped = h->group_bytes = 0;
	/* The share writes first: an acknowledgement in the messages, or a
	 * record in kv, speaks of durable shares. */
	int commit_rc = h->o.shares && h->o.shares->end_step ? h->o.shares->end_step(h->o.shares->ctx, true) : 0;
	if (h->txn) {
		if (commit_rc == 0)
			commit_rc = weft_kv_commit(h->txn);
		else
			weft_kv_abort(h->txn);
		h->txn = NULL;
	}
	for (size_t i = 0; i < h->nheld; i++) {
		if (commit_rc == 0)
			release(h, &h->held[i]);
		free(h->held[i].data);
	}
	h->nheld = 0;
	for (size_t i = 0; commit_rc == 0 && i < h->nhdl; i++)
		release_delivery(h, &h->hdl[i]);
	h->nhdl = 0;
	weft_mpw_reset(&h->held_notes);
	release_events(h, commit_rc == 0);
	trace_release(h, commit_rc == 0);
	if (commit_rc != 0)
		store_failed(h, commit_rc);
	return commit_rc;
}

/* Ends a step someone waits on (an RPC request or command): it, and the
 * group it joined, are committed now.  0 or the commit's error. */
static int leave(struct weft_host *h)
{
	if (--h->depth > 0)
		return 0;
	return flush(h);
}

/* Ends a step nobody waits on (a peer message, a timer, a query): its
 * commit waits for the end of the event loop's turn and is shared with
 * the steps after it, up to GROUP_STEPS steps or GROUP_BYTES of held
 * messages.  Its messages stay held until then: persist before send. */
static void leave_grouped(struct weft_host *h)
{
	if (--h->depth > 0)
		return;
	if (++h->grouped >= GROUP_STEPS || h->group_bytes >= GROUP_BYTES) {
		flush(h);
		return;
	}
	if (!h->commit_scheduled) {
		h->commit_scheduled = true;
		event_active(h->commit_ev, EV_TIMEOUT, 0);
	}
}

int weft_host_flush(struct weft_host *h)
{
	return h && h->depth == 0 ? flush(h) : 0;
}

static void on_commit_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	struct weft_host *h = arg;
	h->commit_scheduled = false;
	if (h->depth == 0)
		flush(h);
}

/* ---- env ops ---- */

static struct host_instance *inst_of(struct weft_env *env)
{
	return env->host;
}

static int hold(struct host_instance *inst, int64_t to, const char *kind, const void *msg, size_t len)
{
	struct weft_host *h = inst->host;
	trace_sends(h, inst, to, kind, msg, len);
	if (h->nheld == h->heldcap) {
		h->heldcap = h->heldcap ? 2 * h->heldcap : 16;
		h->held = realloc(h->held, h->heldcap * sizeof(*h->held));
		if (h->held == NULL)
			abort();
	}
	uint8_t *copy = malloc(len ? len : 1);
	if (copy == NULL)
		abort();
	memcpy(copy, msg, len);
	h->held[h->nheld++] = (struct held_send){inst, to, len, copy};
	h->group_bytes += len;
	return 0;
}

static int env_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	if (to >= env->n)
		return WEFT_EINVAL;
	if (to == env->self)
		return 0; /* protocols handle their own copy */
	return hold(inst_of(env), to, kind, msg, len);
}

static int env_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	return hold(inst_of(env), -1, kind, msg, len);
}

static uint64_t env_now(struct weft_env *env)
{
	return now_us();
}

static void timer_remove(struct weft_host *h, size_t i)
{
	event_free(h->timers[i]->ev);
	free(h->timers[i]);
	h->timers[i] = h->timers[--h->ntimers];
}

static void on_timer_event(evutil_socket_t fd, short what, void *arg)
{
	struct host_timer *t = arg;
	struct host_instance *inst = t->inst;
	struct weft_host *h = inst->host;
	uint64_t id = t->id;
	/* Remove first: the callback may re-arm the same id. */
	for (size_t i = 0; i < h->ntimers; i++) {
		if (h->timers[i] == t) {
			timer_remove(h, i);
			break;
		}
	}
	if (h->store_err) {
		h->paused_dropped++; /* start re-arms what the protocol needs */
		return;
	}
	if (h->o.ops->on_timer) {
		enter(h);
		if (!inst->twin && trace_begin(h, "timer")) {
			trace_add(h, ",\"node\":%u,\"id\":%llu", h->o.self, (unsigned long long)id);
			trace_end(h);
		}
		h->o.ops->on_timer(inst->state, id);
		leave_grouped(h);
	}
}

static int env_set_timer(struct weft_env *env, uint64_t id, uint64_t delay_us)
{
	struct host_instance *inst = inst_of(env);
	struct weft_host *h = inst->host;
	struct host_timer *t = NULL;
	for (size_t i = 0; i < h->ntimers && !t; i++)
		if (h->timers[i]->inst == inst && h->timers[i]->id == id)
			t = h->timers[i];
	if (t == NULL) {
		if (h->ntimers == h->tcap) {
			h->tcap = h->tcap ? 2 * h->tcap : 16;
			h->timers = realloc(h->timers, h->tcap * sizeof(*h->timers));
			if (h->timers == NULL)
				abort();
		}
		t = calloc(1, sizeof(*t));
		if (t == NULL)
			abort();
		t->inst = inst;
		t->id = id;
		t->ev = evtimer_new(h->o.base, on_timer_event, t);
		if (t->ev == NULL)
			abort();
		h->timers[h->ntimers++] = t;
	}
	struct timeval tv = {(time_t)(delay_us / 1000000), (suseconds_t)(delay_us % 1000000)};
	evtimer_add(t->ev, &tv);
	return 0;
}

static void env_cancel_timer(struct weft_env *env, uint64_t id)
{
	struct host_instance *inst = inst_of(env);
	struct weft_host *h = inst->host;
	for (size_t i = 0; i < h->ntimers; i++) {
		if (h->timers[i]->inst == inst && h->timers[i]->id == id) {
			timer_remove(h, i);
			return;
		}
	}
}

static void env_random(struct weft_env *env, void *buf, size_t len)
{
	randombytes_buf(buf, len);
}

static void env_deliver(struct weft_env *env, const struct weft_delivery *d)
{
	struct host_instance *inst = inst_of(env);
	struct weft_host *h = inst->host;
	if (inst->twin)
		return; /* the equivocating twin's view is not the node's */
	if (h->nhdl == h->hdlcap) {
		h->hdlcap = h->hdlcap ? 2 * h->hdlcap : 64;
		h->hdl = realloc(h->hdl, h->hdlcap * sizeof(*h->hdl));
		if (h->hdl == NULL)
			abort();
	}
	struct held_delivery *hd = &h->hdl[h->nhdl++];
	memset(hd->rec, 0, sizeof(hd->rec));
	weft_be32_put(hd->rec, d->origin);
	weft_be64_put(hd->rec + 4, d->seq);
	if (d->digest)
		memcpy(hd->rec + 12, d->digest, 32);
	else if (!d->invalid)
		weft_hash(hd->rec + 12, d->data, d->len);
	if (trace_begin(h, "deliver")) {
		char hex[17];
		weft_hex_encode(hex, hd->rec + 12, 8);
		trace_add(h, ",\"node\":%u,\"origin\":%u,\"seq\":%llu,\"digest\":\"%s\",\"invalid\":%s", h->o.self,
			  d->origin, (unsigned long long)d->seq, d->invalid ? "" : hex, d->invalid ? "true" : "false");
		trace_end(h);
	}
	struct weft_mpw *w = &h->held_notes;
	hd->off = w->len;
	if (h->o.rpc) {
		weft_mpw_array(w, 1);
		weft_mpw_map(w, 4);
		weft_mpw_str(w, "origin");
		weft_mpw_uint(w, d->origin);
		weft_mpw_str(w, "seq");
		weft_mpw_uint(w, d->seq);
		weft_mpw_str(w, "invalid");
		weft_mpw_bool(w, d->invalid);
		weft_mpw_str(w, "data");
		weft_mpw_bin(w, d->invalid ? NULL : d->data, d->invalid ? 0 : d->len);
	}
	hd->len = w->len - hd->off;
}

static const uint8_t *kv_key(struct host_instance *inst, const void *key, size_t klen, size_t *out)
{
	struct weft_host *h = inst->host;
	if (klen + 1 > sizeof(h->keybuf))
		return NULL;
	h->keybuf[0] = inst->kv_prefix;
	memcpy(h->keybuf + 1, key, klen);
	*out = klen + 1;
	return h->keybuf;
}

static int kv_txn(struct weft_host *h)
{
	return h->txn ? 0 : weft_kv_begin(h->o.kv, true, &h->txn);
}

static int env_kv_get(struct weft_env *env, const void *key, size_t klen, const void **val, size_t *vlen)
{
	struct host_instance *inst = inst_of(env);
	size_t kl;
	const uint8_t *k = kv_key(inst, key, klen, &kl);
	int rc = k ? kv_txn(inst->host) : WEFT_ETOOBIG;
	return rc ? rc : weft_kv_get(inst->host->txn, inst->host->dbi, k, kl, val, vlen);
}

static int env_kv_put(struct weft_env *env, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct host_instance *inst = inst_of(env);
	size_t kl;
	const uint8_t *k = kv_key(inst, key, klen, &kl);
	int rc = k ? kv_txn(inst->host) : WEFT_ETOOBIG;
	return rc ? rc : weft_kv_put(inst->host->txn, inst->host->dbi, k, kl, val, vlen);
}

static int env_kv_del(struct weft_env *env, const void *key, size_t klen)
{
	struct host_instance *inst = inst_of(env);
	size_t kl;
	const uint8_t *k = kv_key(inst, key, klen, &kl);
	int rc = k ? kv_txn(inst->host) : WEFT_ETOOBIG;
	return rc ? rc : weft_kv_del(inst->host->txn, inst->host->dbi, k, kl);
}

static int env_kv_scan(struct weft_env *env, const void *from, size_t flen, const void *to, size_t tlen,
		       weft_env_scan_fn fn, void *arg)
{
	struct host_instance *inst = inst_of(env);
	struct weft_host *h = inst->host;
	uint8_t start[1 + 1024], end[1 + 1024];
	if (flen > 1024 || tlen > 1024)
		return WEFT_ETOOBIG;
	int rc = kv_txn(h);
	if (rc)
		return rc;
	start[0] = inst->kv_prefix;
	memcpy(start + 1, from, flen);
	/* Without an upper bound the scan ends at the next instance's prefix. */
	end[0] = to ? inst->kv_prefix : (uint8_t)(inst->kv_prefix + 1);
	if (to)
		memcpy(end + 1, to, tlen);
	return weft_kv_scan(h->txn, h->dbi, start, flen + 1, end, to ? tlen + 1 : 1, 1, fn, arg);
}

static void env_sign(struct weft_env *env, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	weft_sign(inst_of(env)->host->o.id, sig, msg, len);
}

static int env_verify(struct weft_env *env, uint32_t signer, const void *msg, size_t len,
		      const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	struct weft_host *h = inst_of(env)->host;
	if (signer >= h->o.n)
		return WEFT_ECRYPTO;
	return weft_verify(h->o.keys[signer], sig, msg, len);
}

/* Protocols log what peers make them do, so every event has a rate limit. */
static struct weft_log_limit *event_limit(struct weft_host *h, const char *event)
{
	for (size_t i = 0; i < h->nlog_limits; i++)
		if (h->log_limits[i].event == event || strcmp(h->log_limits[i].event, event) == 0)
			return &h->log_limits[i].limit;
	if (h->nlog_limits == LOG_EVENTS)
		return &h->log_limits[LOG_EVENTS - 1].limit; /* the rest share the last one */
	struct event_limit *e = &h->log_limits[h->nlog_limits++];
	e->event = event;
	weft_log_limit_init(&e->limit, 20);
	return &e->limit;
}

static void env_log(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt,
		    va_list ap)
{
	struct host_instance *inst = inst_of(env);
	bool traced = inst->host->o.trace && !inst->twin;
	if (level < weft_log_get_level() && !traced)
		return;
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (traced)
		trace_log(inst->host, event, msg);
	if (level >= weft_log_get_level())
		weft_log_limited(event_limit(inst->host, event), level, event, "%s", msg);
}

static void env_metric(struct weft_env *env, const char *name, int64_t delta)
{
	weft_counters_add(&inst_of(env)->host->metrics, name, delta);
}

static const void *env_service(struct weft_env *env, const char *name)
{
	struct host_instance *inst = inst_of(env);
	/* The twin of --byzantine equivocate keeps no shares of its own. */
	struct weft_host *h = inst->host;
	if (inst != &h->inst[0])
		return NULL;
	if (strcmp(name, WEFT_SHARE_SERVICE) == 0)
		return h->o.shares;
	if (strcmp(name, WEFT_WALLET_SERVICE) == 0)
		return h->o.wallets;
	if (strcmp(name, WEFT_EVENT_SERVICE) == 0)
		return &h->events;
	return NULL;
}

static const struct weft_env_ops host_env_ops = {
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

/* ---- a full store: roll back, pause, resume ---- */

static void cancel_timers_of(struct weft_host *h, const struct host_instance *inst)
{
	for (size_t i = 0; i < h->ntimers;)
		if (h->timers[i]->inst == inst)
			timer_remove(h, i);
		else
			i++;
}

/* Rebuilds inst from the store, as after a crash: destroy, zero, init, and
 * start when asked.  0 or the protocol's error. */
static int rebuild(struct weft_host *h, struct host_instance *inst, bool start)
{
	cancel_timers_of(h, inst);
	if (h->o.ops->destroy)
		h->o.ops->destroy(inst->state);
	memset(inst->state, 0, h->o.ops->state_size ? h->o.ops->state_size : 1);
	enter(h);
	if (!inst->twin)
		trace_step(h, "start");
	int rc = h->o.ops->init(inst->state, &inst->env, h->o.params, h->o.plen);
	if (rc == 0 && start && h->o.ops->start)
		rc = h->o.ops->start(inst->state);
	int stored = leave(h);
	return rc ? rc : stored;
}

static const char *store_advice(int rc)
{
	return rc == WEFT_EMAPFULL ? "raise db.map_size in weft.conf and restart the node"
				   : "free space on the data directory's filesystem: the node resumes by itself";
}

static void fatal(struct weft_host *h, const char *what, int rc)
{
	weft_error("host.fatal", "protocol=%s what=\"%s\" err=\"%s\" action=stop", h->o.ops->name, what,
		   weft_strerror(rc));
	if (h->o.on_fatal)
		h->o.on_fatal(h->o.fatal_arg, rc);
}

/* A step's commit failed: memory is ahead of the store.  Rebuild every
 * instance from the store and pause until the store takes writes again. */
static void store_failed(struct weft_host *h, int rc)
{
	h->store_failures++;
	if (h->recovering)
		return; /* rebuilding from kv wrote nothing that matters; still paused */
	if (h->store_err == 0) {
		h->paused_since_us = env_now(NULL);
		weft_error("host.paused", "err=\"%s\" action=\"roll back to the store, pause; %s\"", weft_strerror(rc),
			   store_advice(rc));
	}
	h->store_err = rc;
	h->recovering = true;
	for (int i = 0; i < h->ninst; i++) {
		int r = rebuild(h, &h->inst[i], false);
		if (r != 0 && r != rc && r != WEFT_ENOSPC && r != WEFT_EMAPFULL)
			fatal(h, "rebuild from the store after a failed commit", r);
	}
	h->recovering = false;
	struct timeval tv = {PROBE_MS / 1000, (PROBE_MS % 1000) * 1000};
	evtimer_add(h->probe, &tv);
}

/* While paused: does the store take a write again?  Needs free space above
 * the margin (a write that reuses freed pages could pass on a full disk)
 * and a probe record that commits. */
static bool store_writable(struct weft_host *h)
{
	uint64_t free_bytes = 0;
	if (weft_kv_free_bytes(h->o.kv, &free_bytes) == 0 && free_bytes < WEFT_KV_FULL_MARGIN)
		return false;
	struct weft_kv_txn *txn;
	static const uint8_t key[] = {0xff, 'p', 'r', 'o', 'b', 'e'};
	uint8_t now[8];
	weft_be64_put(now, env_now(NULL));
	if (weft_kv_begin(h->o.kv, true, &txn) != 0)
		return false;
	if (weft_kv_put(txn, h->dbi, key, sizeof(key), now, sizeof(now)) != 0) {
		weft_kv_abort(txn);
		return false;
	}
	return weft_kv_commit(txn) == 0;
}

static void on_probe(evutil_socket_t fd, short what, void *arg)
{
	struct weft_host *h = arg;
	if (h->store_err == 0)
		return;
	if (!store_writable(h)) {
		struct timeval tv = {PROBE_MS / 1000, (PROBE_MS % 1000) * 1000};
		evtimer_add(h->probe, &tv);
		return;
	}
	uint64_t paused_ms = (env_now(NULL) - h->paused_since_us) / 1000;
	weft_info("host.resumed", "paused_ms=%llu failed_commits=%llu ignored=%llu",
		  (unsigned long long)paused_ms, (unsigned long long)h->store_failures,
		  (unsigned long long)h->paused_dropped);
	h->store_err = 0;
	for (int i = 0; i < h->ninst && h->store_err == 0; i++) {
		int rc = rebuild(h, &h->inst[i], true);
		if (rc != 0 && h->store_err == 0)
			fatal(h, "restart from the store after a pause", rc);
	}
}

int weft_host_store_error(const struct weft_host *h)
{
	return h->store_err;
}

uint64_t weft_host_failed_commits(const struct weft_host *h)
{
	return h->store_failures;
}

void weft_host_store_info(const struct weft_host *h, struct weft_mpw *w)
{
	bool paused = h->store_err != 0;
	weft_mpw_map(w, paused ? 5 : 2);
	weft_mpw_str(w, "state");
	weft_mpw_str(w, paused ? "paused" : "ok");
	weft_mpw_str(w, "failed_commits");
	weft_mpw_uint(w, h->store_failures);
	if (paused) {
		weft_mpw_str(w, "error");
		weft_mpw_str(w, weft_strerror(h->store_err));
		weft_mpw_str(w, "advice");
		weft_mpw_str(w, store_advice(h->store_err));
		weft_mpw_str(w, "paused_ms");
		weft_mpw_uint(w, (env_now(NULL) - h->paused_since_us) / 1000);
	}
}

/* ---- life cycle ---- */

int weft_host_start(struct weft_host **out, const struct weft_host_opts *opts)
{
	struct weft_host *h = calloc(1, sizeof(*h));
	if (h == NULL)
		abort();
	h->o = *opts;
	weft_mpw_init(&h->held_events);
	weft_mpw_init(&h->held_trace);
	h->events = (struct weft_event_service){.ctx = h, .emit = hold_event};
	weft_mpw_init(&h->held_notes);
	weft_hasher_init(&h->delivery_hash);
	h->probe = evtimer_new(opts->base, on_probe, h);
	h->commit_ev = event_new(opts->base, -1, 0, on_commit_event, h);
	if (h->probe == NULL || h->commit_ev == NULL)
		abort();
	int rc = weft_kv_db(opts->kv, "proto", &h->dbi);
	if (rc != 0) {
		weft_host_stop(h);
		return rc;
	}
	h->ninst = opts->byzantine == WEFT_BYZ_EQUIVOCATE ? 2 : 1;
	for (int i = 0; i < h->ninst && rc == 0; i++) {
		struct host_instance *inst = &h->inst[i];
		inst->host = h;
		inst->kv_prefix = (uint8_t)i;
		inst->twin = i == 1;
		inst->env = (struct weft_env){.ops = &host_env_ops, .host = inst, .self = opts->self, .n = opts->n,
					      .f = (opts->n - 1) / 3};
		inst->state = calloc(1, opts->ops->state_size ? opts->ops->state_size : 1);
		if (inst->state == NULL)
			abort();
		enter(h);
		if (!inst->twin)
			trace_step(h, "start");
		rc = opts->ops->init(inst->state, &inst->env, opts->params, opts->plen);
		if (rc == 0 && opts->ops->start)
			rc = opts->ops->start(inst->state);
		leave(h);
	}
	if (rc != 0) {
		weft_error("host.start", "protocol=%s err=\"%s\"", opts->ops->name, weft_strerror(rc));
		weft_host_stop(h);
		return rc;
	}
	weft_info("host.start", "protocol=%s self=%u n=%u byzantine=%s", opts->ops->name, opts->self, opts->n,
		  weft_byzantine_name(opts->byzantine));
	*out = h;
	return 0;
}

void weft_host_stop(struct weft_host *h)
{
	if (h == NULL)
		return;
	/* The steps of an open group are committed; their messages, deliveries
	 * and events go nowhere (the node is stopping). */
	h->o.net = NULL, h->o.rpc = NULL, h->o.on_event = NULL;
	if (h->depth == 0)
		flush(h);
	while (h->ntimers)
		timer_remove(h, 0);
	free(h->timers);
	for (int i = 0; i < 2; i++) {
		if (h->inst[i].state && h->o.ops->destroy)
			h->o.ops->destroy(h->inst[i].state);
		free(h->inst[i].state);
	}
	weft_kv_abort(h->txn);
	for (size_t i = 0; i < h->nheld; i++)
		free(h->held[i].data);
	free(h->held);
	weft_counters_free(&h->metrics);
	weft_mpw_free(&h->held_notes);
	weft_mpw_free(&h->held_events);
	weft_mpw_free(&h->held_trace);
	free(h->hdl);
	if (h->probe)
		event_free(h->probe);
	if (h->commit_ev)
		event_free(h->commit_ev);
	for (size_t i = 0; i < h->nlog_limits; i++)
		weft_log_limit_flush(&h->log_limits[i].limit);
	free(h);
}

void weft_host_set_rpc(struct weft_host *h, struct weft_rpc_server *rpc)
{
	h->o.rpc = rpc;
}


void weft_host_on_message(void *host, uint32_t from, const uint8_t *msg, size_t len)
{
	struct weft_host *h = host;
	if (h->store_err) {
		h->paused_dropped++; /* the protocols catch up after the pause */
		return;
	}
	for (int i = 0; i < h->ninst && h->store_err == 0; i++) {
		enter(h);
		bool traced = i == 0 && trace_begin(h, "recv");
		if (traced) {
			trace_add(h, ",\"node\":%u,\"from\":%u,\"bytes\":%zu", h->o.self, from, len);
			trace_hex(h, "data", msg, len);
			trace_end(h);
		}
		int rc = h->o.ops->on_message(h->inst[i].state, from, msg, len);
		if (traced && rc < 0 && trace_begin(h, "reject")) {
			trace_add(h, ",\"node\":%u,\"from\":%u,\"err\":\"%s\"", h->o.self, from, weft_strerror(rc));
			trace_end(h);
		}
		leave_grouped(h);
		if (rc < 0 && i == 0) {
			h->rejected++;
			weft_debug("host.rejected", "peer=%u bytes=%zu err=\"%s\"", from, len, weft_strerror(rc));
		}
	}
}

int weft_host_request(struct weft_host *h, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	if (h->o.ops->on_request == NULL)
		return WEFT_EUNSUPPORTED;
	if (h->store_err)
		return h->store_err;
	enter(h);
	if (trace_begin(h, "request")) {
		uint8_t digest[WEFT_HASH_LEN];
		char hex[17];
		weft_hash(digest, req, len);
		weft_hex_encode(hex, digest, 8);
		trace_add(h, ",\"node\":%u,\"bytes\":%zu,\"digest\":\"%s\"", h->o.self, len, hex);
		trace_end(h);
	}
	int rc = h->o.ops->on_request(h->inst[0].state, req, len, reply);
	int stored = leave(h);
	if (stored != 0 && rc == 0)
		rc = stored; /* the request's effects were not stored: not accepted */
	if (h->ninst == 2 && rc == 0 && h->store_err == 0) {
		/* The twin tells the other half a different story. */
		uint8_t *other = malloc(len ? len : 1);
		if (other == NULL)
			abort();
		memcpy(other, req, len);
		if (len)
			other[len - 1] ^= 0xff;
		enter(h);
		h->o.ops->on_request(h->inst[1].state, other, len, NULL);
		leave(h);
		free(other);
	}
	return rc;
}

int weft_host_request_many(struct weft_host *h, size_t count, const uint8_t *const *reqs, const size_t *lens,
			   struct weft_mpw *replies, int *rcs)
{
	if (h->o.ops->on_request == NULL)
		return WEFT_EUNSUPPORTED;
	if (h->store_err) {
		for (size_t i = 0; i < count; i++)
			rcs[i] = h->store_err;
		return 0;
	}
	enter(h);
	if (trace_begin(h, "request")) {
		size_t bytes = 0;
		for (size_t i = 0; i < count; i++)
			bytes += lens[i];
		trace_add(h, ",\"node\":%u,\"bytes\":%zu,\"count\":%zu", h->o.self, bytes, count);
		trace_end(h);
	}
	if (h->o.ops->on_request_batch)
		h->o.ops->on_request_batch(h->inst[0].state, count, reqs, lens, replies, rcs);
	else
		for (size_t i = 0; i < count; i++)
			rcs[i] = h->o.ops->on_request(h->inst[0].state, reqs[i], lens[i], &replies[i]);
	int stored = leave(h);
	for (size_t i = 0; stored != 0 && i < count; i++)
		if (rcs[i] == 0)
			rcs[i] = stored;
	return 0;
}

int weft_host_command(struct weft_host *h, const char *what, const uint8_t *arg, size_t alen,
		      struct weft_mpw *reply)
{
	if (h->o.ops->command == NULL)
		return WEFT_NOTFOUND;
	if (h->store_err)
		return h->store_err;
	enter(h);
	if (trace_begin(h, "command")) {
		trace_add(h, ",\"node\":%u,\"what\":\"%s\"", h->o.self, what);
		trace_end(h);
	}
	int rc = h->o.ops->command(h->inst[0].state, what, arg, alen, reply);
	int stored = leave(h);
	return stored != 0 && rc == 0 ? stored : rc;
}

int weft_host_commands(struct weft_host *h, size_t count, const char *const *whats, const struct weft_mpw *args,
		       struct weft_mpw *replies, int *rcs)
{
	if (h->o.ops->command == NULL)
		return WEFT_NOTFOUND;
	if (h->store_err)
		return h->store_err;
	enter(h);
	for (size_t i = 0; i < count && trace_begin(h, "command"); i++) {
		trace_add(h, ",\"node\":%u,\"what\":\"%s\"", h->o.self, whats[i]);
		trace_end(h);
	}
	for (size_t i = 0; i < count; i++) {
		weft_mpw_reset(&replies[i]);
		rcs[i] = h->o.ops->command(h->inst[0].state, whats[i], args[i].buf, args[i].len, &replies[i]);
	}
	int stored = leave(h);
	for (size_t i = 0; stored != 0 && i < count; i++)
		if (rcs[i] == 0)
			rcs[i] = stored;
	return stored;
}

int weft_host_query(struct weft_host *h, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	if (h->o.ops->query == NULL)
		return WEFT_NOTFOUND;
	enter(h);
	int rc = h->o.ops->query(h->inst[0].state, what, arg, alen, reply);
	leave_grouped(h); /* a query writes nothing: it forces no commit */
	return rc;
}

uint64_t weft_host_delivered(const struct weft_host *h)
{
	return h->delivered;
}

void weft_host_info(struct weft_host *h, struct weft_mpw *w)
{
	struct weft_hasher copy = h->delivery_hash;
	uint8_t digest[WEFT_HASH_LEN];
	char hex[2 * WEFT_HASH_LEN + 1];
	weft_hasher_final(&copy, digest);
	weft_hex_encode(hex, digest, sizeof(digest));
	weft_mpw_map(w, 7);
	weft_mpw_str(w, "protocol");
	weft_mpw_str(w, h->o.ops->name);
	weft_mpw_str(w, "store");
	weft_host_store_info(h, w);
	weft_mpw_str(w, "byzantine");
	weft_mpw_str(w, weft_byzantine_name(h->o.byzantine));
	weft_mpw_str(w, "delivered");
	weft_mpw_uint(w, h->delivered);
	weft_mpw_str(w, "delivery_hash");
	weft_mpw_str(w, hex);
	weft_mpw_str(w, "rejected");
	weft_mpw_uint(w, h->rejected);
	weft_mpw_str(w, "state");
	if (h->o.ops->info)
		h->o.ops->info(h->inst[0].state, w);
	else
		weft_mpw_map(w, 0);
}

void weft_host_proto_info(struct weft_host *h, struct weft_mpw *w)
{
	if (h->o.ops->info)
		h->o.ops->info(h->inst[0].state, w);
	else
		weft_mpw_map(w, 0);
}

void weft_host_metrics(const struct weft_host *h, void (*fn)(void *arg, const char *name, int64_t v), void *arg)
{
	for (size_t i = 0; i < h->metrics.n; i++)
		fn(arg, h->metrics.v[i].name, h->metrics.v[i].value);
}
