/* host.c - weftd's protocol host (see host.h).
 *
 * Every protocol callback is bracketed: kv operations open one LMDB write
 * transaction lazily, sends are copied aside, and when the outermost
 * callback returns the transaction is committed first and only then are the
 * held messages handed to the transport ("persist before send").  If the
 * commit fails the messages are dropped: the node never announces state it
 * has not stored.
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
#include "weft/counters.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/log.h"
#include "weft/net.h"
#include "weft/rpc.h"

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

struct weft_host {
	struct weft_host_opts o;
	struct host_instance inst[2];
	int ninst;
	weft_kv_dbi dbi;
	struct weft_kv_txn *txn;
	int depth;
	struct held_send *held;
	size_t nheld, heldcap;
	struct host_timer **timers;   /* each allocated alone: events point at them */
	size_t ntimers, tcap;
	struct weft_counters metrics;
	uint8_t keybuf[1 + 1024];
	uint64_t delivered, rejected;
	struct weft_hasher delivery_hash;
	struct weft_mpw scratch;
};

int weft_byzantine_parse(const char *s, enum weft_byzantine *out)
{
	static const char *const names[] = {"none", "silent", "corrupt", "equivocate"};
	for (int i = 0; i < 4; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum weft_byzantine)i;
			return 0;
		}
	}
	return WEFT_EINVAL;
}

const char *weft_byzantine_name(enum weft_byzantine b)
{
	switch (b) {
	case WEFT_BYZ_NONE: return "none";
	case WEFT_BYZ_SILENT: return "silent";
	case WEFT_BYZ_CORRUPT: return "corrupt";
	case WEFT_BYZ_EQUIVOCATE: return "equivocate";
	}
	return "none";
}

/* ---- callback brackets ---- */

static void enter(struct weft_host *h)
{
	h->depth++;
}

/* Whether a held message of inst goes to peer `to` under the strategy. */
static bool audience(const struct weft_host *h, const struct host_instance *inst, uint32_t to)
{
	if (h->o.byzantine != WEFT_BYZ_EQUIVOCATE)
		return true;
	bool upper = to >= h->o.n / 2;
	return inst->twin ? upper : !upper;
}

static void release(struct weft_host *h, struct held_send *s)
{
	if (h->o.net == NULL || h->o.byzantine == WEFT_BYZ_SILENT)
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
	}
}

/* Ends a step: commits its kv writes, then lets its held messages go.
 * 0, or the commit's error (nothing of the step was stored or sent). */
static int leave(struct weft_host *h)
{
	if (--h->depth > 0)
		return 0;
	bool stored = true;
	int commit_rc = 0;
	if (h->txn) {
		int rc = weft_kv_commit(h->txn);
		h->txn = NULL;
		if (rc != 0) {
			weft_error("host.commit", "err=\"%s\" action=\"messages of this step not sent\"", weft_strerror(rc));
			stored = false;
			commit_rc = rc;
		}
	}
	for (size_t i = 0; i < h->nheld; i++) {
		if (stored)
			release(h, &h->held[i]);
		free(h->held[i].data);
	}
	h->nheld = 0;
	return commit_rc;
}

/* ---- env ops ---- */

static struct host_instance *inst_of(struct weft_env *env)
{
	return env->host;
}

static int hold(struct host_instance *inst, int64_t to, const void *msg, size_t len)
{
	struct weft_host *h = inst->host;
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
	return 0;
}

static int env_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	if (to >= env->n)
		return WEFT_EINVAL;
	if (to == env->self)
		return 0; /* protocols handle their own copy */
	return hold(inst_of(env), to, msg, len);
}

static int env_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	return hold(inst_of(env), -1, msg, len);
}

static uint64_t env_now(struct weft_env *env)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
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
	if (h->o.ops->on_timer) {
		enter(h);
		h->o.ops->on_timer(inst->state, id);
		leave(h);
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
	h->delivered++;
	uint8_t digest[WEFT_HASH_LEN] = {0};
	if (!d->invalid)
		weft_hash(digest, d->data, d->len);
	uint8_t rec[12];
	for (int i = 0; i < 4; i++)
		rec[i] = (uint8_t)(d->origin >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		rec[4 + i] = (uint8_t)(d->seq >> (56 - 8 * i));
	weft_hasher_update(&h->delivery_hash, rec, sizeof(rec));
	weft_hasher_update(&h->delivery_hash, digest, sizeof(digest));
	if (h->o.rpc == NULL)
		return;
	struct weft_mpw *w = &h->scratch;
	weft_mpw_reset(w);
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
	weft_rpc_notify(h->o.rpc, "proto.deliver", "proto.deliver", w->buf, w->len);
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

static void env_log(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt,
		    va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	weft_log(level, event, "%s", msg);
}

static void env_metric(struct weft_env *env, const char *name, int64_t delta)
{
	weft_counters_add(&inst_of(env)->host->metrics, name, delta);
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
};

/* ---- life cycle ---- */

int weft_host_start(struct weft_host **out, const struct weft_host_opts *opts)
{
	struct weft_host *h = calloc(1, sizeof(*h));
	if (h == NULL)
		abort();
	h->o = *opts;
	weft_mpw_init(&h->scratch);
	weft_hasher_init(&h->delivery_hash);
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
	weft_mpw_free(&h->scratch);
	free(h);
}

void weft_host_set_rpc(struct weft_host *h, struct weft_rpc_server *rpc)
{
	h->o.rpc = rpc;
}


void weft_host_on_message(void *host, uint32_t from, const uint8_t *msg, size_t len)
{
	struct weft_host *h = host;
	for (int i = 0; i < h->ninst; i++) {
		enter(h);
		int rc = h->o.ops->on_message(h->inst[i].state, from, msg, len);
		leave(h);
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
	enter(h);
	int rc = h->o.ops->on_request(h->inst[0].state, req, len, reply);
	int stored = leave(h);
	if (stored != 0 && rc == 0)
		rc = stored; /* the request's effects were not stored: not accepted */
	if (h->ninst == 2 && rc == 0) {
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
	enter(h);
	for (size_t i = 0; i < count; i++)
		rcs[i] = h->o.ops->on_request(h->inst[0].state, reqs[i], lens[i], &replies[i]);
	int stored = leave(h);
	for (size_t i = 0; stored != 0 && i < count; i++)
		if (rcs[i] == 0)
			rcs[i] = stored;
	return 0;
}

int weft_host_query(struct weft_host *h, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	if (h->o.ops->query == NULL)
		return WEFT_NOTFOUND;
	enter(h);
	int rc = h->o.ops->query(h->inst[0].state, what, arg, alen, reply);
	leave(h);
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
	weft_mpw_map(w, 6);
	weft_mpw_str(w, "protocol");
	weft_mpw_str(w, h->o.ops->name);
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
