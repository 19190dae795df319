/* compose.c - env wrappers, and hosting a child protocol inside a parent.
 *
 * A wrapper env forwards every op to an inner env (weft_env_wrap_init); a
 * child env is a wrapper around the parent's env that overrides what
 * composition changes.  The child's messages go out through the parent's env with the channel
 * byte in front; its timers use parent timer ids whose top byte is
 * channel + 1; its kv keys are prefixed with the channel byte; its
 * deliveries are an upcall into the parent.  Children do not host children
 * (one level of timer namespacing).  Also home of weft_env_log(). */
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"
#include "weft/proto.h"

#define CHILD_TIMER_BITS 56
#define CHILD_TIMER_MASK ((UINT64_C(1) << CHILD_TIMER_BITS) - 1)

void weft_env_log(struct weft_env *e, enum weft_log_level level, const char *event, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	e->ops->log(e, level, event, fmt, ap);
	va_end(ap);
}

/* ---- the pass-through wrapper ---- */

static struct weft_env *inner(struct weft_env *env)
{
	return weft_env_wrapped(env)->inner;
}

static int pass_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	return inner(env)->ops->send(inner(env), to, kind, msg, len);
}

static int pass_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	return inner(env)->ops->multicast(inner(env), kind, msg, len);
}

static uint64_t pass_now(struct weft_env *env)
{
	return inner(env)->ops->now(inner(env));
}

static int pass_set_timer(struct weft_env *env, uint64_t id, uint64_t delay_us)
{
	return inner(env)->ops->set_timer(inner(env), id, delay_us);
}

static void pass_cancel_timer(struct weft_env *env, uint64_t id)
{
	inner(env)->ops->cancel_timer(inner(env), id);
}

static void pass_random(struct weft_env *env, void *buf, size_t len)
{
	inner(env)->ops->random(inner(env), buf, len);
}

static void pass_deliver(struct weft_env *env, const struct weft_delivery *d)
{
	inner(env)->ops->deliver(inner(env), d);
}

static int pass_kv_get(struct weft_env *env, const void *key, size_t klen, const void **val, size_t *vlen)
{
	return inner(env)->ops->kv_get(inner(env), key, klen, val, vlen);
}

static int pass_kv_put(struct weft_env *env, const void *key, size_t klen, const void *val, size_t vlen)
{
	return inner(env)->ops->kv_put(inner(env), key, klen, val, vlen);
}

static int pass_kv_del(struct weft_env *env, const void *key, size_t klen)
{
	return inner(env)->ops->kv_del(inner(env), key, klen);
}

static int pass_kv_scan(struct weft_env *env, const void *from, size_t flen, const void *to, size_t tlen,
			weft_env_scan_fn fn, void *arg)
{
	return inner(env)->ops->kv_scan(inner(env), from, flen, to, tlen, fn, arg);
}

static void pass_sign(struct weft_env *env, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	inner(env)->ops->sign(inner(env), msg, len, sig);
}

static int pass_verify(struct weft_env *env, uint32_t signer, const void *msg, size_t len,
		       const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	return inner(env)->ops->verify(inner(env), signer, msg, len, sig);
}

static void pass_log(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt,
		     va_list ap)
{
	inner(env)->ops->log(inner(env), level, event, fmt, ap);
}

static void pass_metric(struct weft_env *env, const char *name, int64_t delta)
{
	inner(env)->ops->metric(inner(env), name, delta);
}

static const void *pass_service(struct weft_env *env, const char *name)
{
	struct weft_env *in = inner(env);
	return in->ops->service ? in->ops->service(in, name) : NULL;
}

static const struct weft_env_ops passthrough_ops = {
	.send = pass_send,
	.multicast = pass_multicast,
	.now = pass_now,
	.set_timer = pass_set_timer,
	.cancel_timer = pass_cancel_timer,
	.random = pass_random,
	.deliver = pass_deliver,
	.kv_get = pass_kv_get,
	.kv_put = pass_kv_put,
	.kv_del = pass_kv_del,
	.kv_scan = pass_kv_scan,
	.sign = pass_sign,
	.verify = pass_verify,
	.log = pass_log,
	.metric = pass_metric,
	.service = pass_service,
};

void weft_env_wrap_init(struct weft_env_wrap *w, struct weft_env *in)
{
	w->env = *in;
	w->ops = passthrough_ops;
	w->env.ops = &w->ops;
	w->inner = in;
}

const struct weft_proto_strategy *weft_proto_strategy_find(const struct weft_proto_ops *ops, const char *name)
{
	for (const struct weft_proto_strategy *s = ops->strategies; s && s->name; s++)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* ---- child envs ---- */

static struct weft_child *child_of(struct weft_env *env)
{
	return (struct weft_child *)weft_env_wrapped(env);
}

static const uint8_t *framed(struct weft_child *c, const void *msg, size_t len)
{
	weft_mpw_reset(&c->scratch);
	weft_mpw_raw(&c->scratch, &c->channel, 1);
	weft_mpw_raw(&c->scratch, msg, len);
	return c->scratch.buf;
}

static int child_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	struct weft_child *c = child_of(env);
	return c->parent->ops->send(c->parent, to, kind, framed(c, msg, len), len + 1);
}

static int child_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	struct weft_child *c = child_of(env);
	return c->parent->ops->multicast(c->parent, kind, framed(c, msg, len), len + 1);
}

static uint64_t parent_timer_id(struct weft_child *c, uint64_t id)
{
	return ((uint64_t)(c->channel + 1) << CHILD_TIMER_BITS) | (id & CHILD_TIMER_MASK);
}

static int child_set_timer(struct weft_env *env, uint64_t id, uint64_t delay_us)
{
	struct weft_child *c = child_of(env);
	if (id > CHILD_TIMER_MASK)
		return WEFT_EINVAL;
	return c->parent->ops->set_timer(c->parent, parent_timer_id(c, id), delay_us);
}

static void child_cancel_timer(struct weft_env *env, uint64_t id)
{
	struct weft_child *c = child_of(env);
	c->parent->ops->cancel_timer(c->parent, parent_timer_id(c, id));
}

static void child_deliver(struct weft_env *env, const struct weft_delivery *d)
{
	struct weft_child *c = child_of(env);
	c->on_deliver(c->ctx, d);
}

/* Builds channel || key in buf (stack when small). Caller frees *heap. */
static const uint8_t *prefixed(struct weft_child *c, const void *key, size_t klen, uint8_t *buf, size_t cap,
			       uint8_t **heap)
{
	uint8_t *p = buf;
	*heap = NULL;
	if (klen + 1 > cap) {
		p = *heap = malloc(klen + 1);
		if (p == NULL)
			abort();
	}
	p[0] = c->channel;
	memcpy(p + 1, key, klen);
	return p;
}

static int child_kv_get(struct weft_env *env, const void *key, size_t klen, const void **val, size_t *vlen)
{
	struct weft_child *c = child_of(env);
	uint8_t buf[256], *heap;
	const uint8_t *k = prefixed(c, key, klen, buf, sizeof(buf), &heap);
	int rc = c->parent->ops->kv_get(c->parent, k, klen + 1, val, vlen);
	free(heap);
	return rc;
}

static int child_kv_put(struct weft_env *env, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct weft_child *c = child_of(env);
	uint8_t buf[256], *heap;
	const uint8_t *k = prefixed(c, key, klen, buf, sizeof(buf), &heap);
	int rc = c->parent->ops->kv_put(c->parent, k, klen + 1, val, vlen);
	free(heap);
	return rc;
}

static int child_kv_del(struct weft_env *env, const void *key, size_t klen)
{
	struct weft_child *c = child_of(env);
	uint8_t buf[256], *heap;
	const uint8_t *k = prefixed(c, key, klen, buf, sizeof(buf), &heap);
	int rc = c->parent->ops->kv_del(c->parent, k, klen + 1);
	free(heap);
	return rc;
}

struct scan_strip {
	weft_env_scan_fn fn;
	void *arg;
};

static int scan_strip_prefix(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct scan_strip *s = arg;
	return s->fn(s->arg, (const uint8_t *)key + 1, klen - 1, val, vlen);
}

static int child_kv_scan(struct weft_env *env, const void *from, size_t flen, const void *to, size_t tlen,
			 weft_env_scan_fn fn, void *arg)
{
	struct weft_child *c = child_of(env);
	uint8_t fbuf[256], tbuf[256], *fheap, *theap = NULL;
	const uint8_t *f = prefixed(c, from, flen, fbuf, sizeof(fbuf), &fheap);
	const uint8_t *t;
	size_t tl;
	uint8_t next_channel = (uint8_t)(c->channel + 1);
	if (to) {
		t = prefixed(c, to, tlen, tbuf, sizeof(tbuf), &theap);
		tl = tlen + 1;
	} else {
		t = &next_channel; /* channel 255 is never used, so this is an upper bound */
		tl = 1;
	}
	struct scan_strip st = {fn, arg};
	int rc = c->parent->ops->kv_scan(c->parent, f, flen + 1, t, tl, scan_strip_prefix, &st);
	free(fheap);
	free(theap);
	return rc;
}

int weft_child_init(struct weft_child *c, struct weft_env *parent, uint8_t channel,
		    const struct weft_proto_ops *ops, const uint8_t *params, size_t plen,
		    void (*on_deliver)(void *ctx, const struct weft_delivery *d), void *ctx)
{
	if (channel > WEFT_CHILD_MAX_CHANNEL || ops->abi != WEFT_PROTO_ABI)
		return WEFT_EINVAL;
	memset(c, 0, sizeof(*c));
	weft_env_wrap_init(&c->wrap, parent);
	c->wrap.ops.send = child_send;
	c->wrap.ops.multicast = child_multicast;
	c->wrap.ops.set_timer = child_set_timer;
	c->wrap.ops.cancel_timer = child_cancel_timer;
	c->wrap.ops.deliver = child_deliver;
	c->wrap.ops.kv_get = child_kv_get;
	c->wrap.ops.kv_put = child_kv_put;
	c->wrap.ops.kv_del = child_kv_del;
	c->wrap.ops.kv_scan = child_kv_scan;
	c->parent = parent;
	c->channel = channel;
	c->ops = ops;
	c->on_deliver = on_deliver;
	c->ctx = ctx;
	weft_mpw_init(&c->scratch);
	c->state = calloc(1, ops->state_size ? ops->state_size : 1);
	if (c->state == NULL)
		abort();
	int rc = ops->init(c->state, &c->wrap.env, params, plen);
	if (rc != 0)
		weft_child_destroy(c);
	return rc;
}

void weft_child_destroy(struct weft_child *c)
{
	if (c->state && c->ops->destroy)
		c->ops->destroy(c->state);
	free(c->state);
	c->state = NULL;
	weft_mpw_free(&c->scratch);
}

int weft_child_start(struct weft_child *c)
{
	return c->ops->start ? c->ops->start(c->state) : 0;
}

int weft_child_on_message(struct weft_child *c, uint32_t from, const uint8_t *msg, size_t len)
{
	if (len < 1 || msg[0] != c->channel)
		return WEFT_EPROTO;
	return c->ops->on_message(c->state, from, msg + 1, len - 1);
}

bool weft_child_on_timer(struct weft_child *c, uint64_t timer_id)
{
	if ((timer_id >> CHILD_TIMER_BITS) != (uint64_t)c->channel + 1)
		return false;
	if (c->ops->on_timer)
		c->ops->on_timer(c->state, timer_id & CHILD_TIMER_MASK);
	return true;
}

int weft_child_request(struct weft_child *c, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	return c->ops->on_request ? c->ops->on_request(c->state, req, len, reply) : WEFT_EUNSUPPORTED;
}

int weft_child_command(struct weft_child *c, const char *what, const uint8_t *arg, size_t alen,
		       struct weft_mpw *reply)
{
	return c->ops->command ? c->ops->command(c->state, what, arg, alen, reply) : WEFT_NOTFOUND;
}
