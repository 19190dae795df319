/* compose.c - tests of protocol composition (protocols/compose.c): a child
 * protocol hosted on a channel sees its messages framed with the channel
 * byte, its timers and kv keys namespaced, its deliveries as upcalls; the
 * pass-through wrapper forwards every op; parameter lookups; the registry. */
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/err.h"
#include "weft/proto.h"

/* A recording host env. */
struct rec {
	uint32_t last_to;
	uint8_t last_msg[256];
	size_t last_len;
	int sends, multicasts;
	uint64_t last_timer;
	uint8_t kv_key[64];
	size_t kv_klen;
	uint8_t kv_val[64];
	size_t kv_vlen;
	int metrics;
};

static struct rec rec;

static int h_send(struct weft_env *e, uint32_t to, const char *k, const void *m, size_t len)
{
	rec.sends++;
	rec.last_to = to;
	memcpy(rec.last_msg, m, len);
	rec.last_len = len;
	return 0;
}
static int h_multicast(struct weft_env *e, const char *k, const void *m, size_t len)
{
	rec.multicasts++;
	memcpy(rec.last_msg, m, len);
	rec.last_len = len;
	return 0;
}
static uint64_t h_now(struct weft_env *e) { return 42; }
static int h_set_timer(struct weft_env *e, uint64_t id, uint64_t d) { rec.last_timer = id; return 0; }
static void h_cancel_timer(struct weft_env *e, uint64_t id) { rec.last_timer = id; }
static void h_random(struct weft_env *e, void *b, size_t l) { memset(b, 7, l); }
static void h_deliver(struct weft_env *e, const struct weft_delivery *d) {}
static int h_kv_get(struct weft_env *e, const void *k, size_t kl, const void **v, size_t *vl)
{
	if (kl != rec.kv_klen || memcmp(k, rec.kv_key, kl) != 0)
		return WEFT_NOTFOUND;
	*v = rec.kv_val;
	*vl = rec.kv_vlen;
	return 0;
}
static int h_kv_put(struct weft_env *e, const void *k, size_t kl, const void *v, size_t vl)
{
	memcpy(rec.kv_key, k, kl);
	rec.kv_klen = kl;
	memcpy(rec.kv_val, v, vl);
	rec.kv_vlen = vl;
	return 0;
}
static int h_kv_del(struct weft_env *e, const void *k, size_t kl) { return 0; }
static int h_kv_scan(struct weft_env *e, const void *f, size_t fl, const void *t, size_t tl, weft_env_scan_fn fn,
		     void *arg)
{
	/* one stored pair, returned when it is in [f, t) */
	if (rec.kv_klen && memcmp(rec.kv_key, f, fl < rec.kv_klen ? fl : rec.kv_klen) >= 0 &&
	    (!t || memcmp(rec.kv_key, t, tl < rec.kv_klen ? tl : rec.kv_klen) < 0))
		return fn(arg, rec.kv_key, rec.kv_klen, rec.kv_val, rec.kv_vlen);
	return 0;
}
static void h_sign(struct weft_env *e, const void *m, size_t l, uint8_t s[64]) { memset(s, 1, 64); }
static int h_verify(struct weft_env *e, uint32_t n, const void *m, size_t l, const uint8_t s[64]) { return 0; }
static void h_log(struct weft_env *e, enum weft_log_level lv, const char *ev, const char *f, va_list ap) {}
static void h_metric(struct weft_env *e, const char *n, int64_t d) { rec.metrics++; }
static const int service_marker = 7;
static const void *h_service(struct weft_env *e, const char *name)
{
	return strcmp(name, "probe") == 0 ? &service_marker : NULL;
}

static const struct weft_env_ops host_ops = {h_send,   h_multicast, h_now,     h_set_timer, h_cancel_timer,
					     h_random, h_deliver,   h_kv_get,  h_kv_put,    h_kv_del,
					     h_kv_scan, h_sign,     h_verify,  h_log,       h_metric, h_service};

/* A child protocol that exercises its env. */
struct probe {
	struct weft_env *env;
	int messages;
	uint8_t got[16];
	size_t scanned;
};

static int scan_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct probe *p = arg;
	p->scanned++;
	return (kl == 3 && memcmp(k, "key", 3) == 0) ? 0 : -1;
}

static int probe_init(void *st, struct weft_env *env, const uint8_t *params, size_t plen)
{
	((struct probe *)st)->env = env;
	return 0;
}
static int probe_on_message(void *st, uint32_t from, const uint8_t *m, size_t len)
{
	struct probe *p = st;
	p->messages++;
	memcpy(p->got, m, len < 16 ? len : 16);
	struct weft_delivery d = {.origin = from, .seq = 9, .data = m, .len = len};
	p->env->ops->deliver(p->env, &d);
	return 0;
}
static void probe_on_timer(void *st, uint64_t id)
{
	((struct probe *)st)->messages += 100;
}
static int probe_on_request(void *st, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct probe *p = st;
	struct weft_env *e = p->env;
	weft_env_send(e, 2, "probe", "hello", 5);
	e->ops->set_timer(e, 77, 1000);
	e->ops->kv_put(e, "key", 3, "val", 3);
	e->ops->kv_scan(e, "k", 1, NULL, 0, scan_cb, p);
	return 0;
}

static const struct weft_proto_ops probe_ops = {
	.abi = WEFT_PROTO_ABI,
	.name = "probe",
	.state_size = sizeof(struct probe),
	.init = probe_init,
	.on_message = probe_on_message,
	.on_timer = probe_on_timer,
	.on_request = probe_on_request,
};

static int upcalls;
static uint64_t upcall_seq;
static void on_deliver(void *ctx, const struct weft_delivery *d)
{
	upcalls++;
	upcall_seq = d->seq;
}

int main(void)
{
	struct weft_env host = {.ops = &host_ops, .self = 1, .n = 4, .f = 1};
	struct weft_child c;
	is_int(weft_child_init(&c, &host, 5, &probe_ops, NULL, 0, on_deliver, NULL), 0, "child init on channel 5");
	ok(c.wrap.env.ops->service(&c.wrap.env, "probe") == &service_marker, "a child reaches the host's services");
	ok(c.wrap.env.ops->service(&c.wrap.env, "other") == NULL, "an unknown service is NULL");
	struct probe *p = c.state;
	is_int(p->env->self, 1, "child env keeps the node index");
	is_int(weft_child_request(&c, (const uint8_t *)"x", 1, NULL), 0, "request reaches the child");
	ok(rec.sends == 1 && rec.last_to == 2 && rec.last_len == 6 && rec.last_msg[0] == 5 &&
		   memcmp(rec.last_msg + 1, "hello", 5) == 0,
	   "child send goes out with the channel byte in front");
	is_int((long long)(rec.last_timer >> 56), 6, "child timer id carries channel+1 in its top byte");
	is_int((long long)(rec.last_timer & 0xffffffffffffff), 77, "and its own id below");
	ok(rec.kv_klen == 4 && rec.kv_key[0] == 5 && memcmp(rec.kv_key + 1, "key", 3) == 0,
	   "child kv keys are prefixed with the channel");
	is_int((long long)p->scanned, 1, "child kv scan sees its key with the prefix stripped");

	ok(weft_child_on_timer(&c, rec.last_timer) && p->messages == 100, "the parent routes the child's timer back");
	ok(!weft_child_on_timer(&c, 77), "a parent's own timer id is not the child's");
	uint8_t framed[] = {5, 'a', 'b', 'c'};
	is_int(weft_child_on_message(&c, 3, framed, 4), 0, "a framed message reaches the child");
	ok(memcmp(p->got, "abc", 3) == 0 && upcalls == 1 && upcall_seq == 9,
	   "the child sees the payload without the channel byte; its delivery is an upcall");
	uint8_t wrong[] = {6, 'a'};
	is_int(weft_child_on_message(&c, 3, wrong, 2), WEFT_EPROTO, "a message for another channel is refused");
	is_int(weft_child_on_message(&c, 3, wrong, 0), WEFT_EPROTO, "an empty message is refused");
	weft_child_destroy(&c);

	struct weft_child bad;
	is_int(weft_child_init(&bad, &host, 255, &probe_ops, NULL, 0, on_deliver, NULL), WEFT_EINVAL,
	       "channel 255 is reserved");

	/* The pass-through wrapper forwards everything; an override replaces one op. */
	struct weft_env_wrap w;
	weft_env_wrap_init(&w, &host);
	ok(w.env.ops->now(&w.env) == 42 && weft_env_wrapped(&w.env) == &w, "wrapper forwards now()");
	int before = rec.multicasts;
	w.env.ops->multicast(&w.env, "k", "zz", 2);
	is_int(rec.multicasts, before + 1, "wrapper forwards multicast");
	w.env.ops->metric(&w.env, "m", 1);
	is_int(rec.metrics, 1, "wrapper forwards metrics");

	/* Parameters. */
	struct weft_mpw pw;
	weft_mpw_init(&pw);
	weft_mpw_map(&pw, 2);
	weft_mpw_str(&pw, "d");
	weft_mpw_uint(&pw, 50);
	weft_mpw_str(&pw, "mode");
	weft_mpw_str(&pw, "sparse");
	uint64_t d = 0;
	is_int(weft_params_uint(pw.buf, pw.len, "d", &d), 0, "params: uint found");
	is_int((long long)d, 50, "params: value");
	is_int(weft_params_uint(pw.buf, pw.len, "mode", &d), WEFT_EINVAL, "params: wrong type is EINVAL");
	is_int(weft_params_uint(pw.buf, pw.len, "x", &d), WEFT_NOTFOUND, "params: absent is NOTFOUND");
	is_int(weft_params_uint(NULL, 0, "x", &d), WEFT_NOTFOUND, "params: no map is NOTFOUND");
	ok(weft_params_str_is(pw.buf, pw.len, "mode", "sparse"), "params: string compare");
	is_int(weft_params_uint((const uint8_t *)"\xdf\xff\xff\xff\xff", 5, "x", &d), WEFT_EINVAL,
	       "params: a hostile map header is EINVAL");
	weft_mpw_free(&pw);

	ok(weft_proto_find("beb") != NULL && weft_proto_find("seq") != NULL && weft_proto_find("nope") == NULL,
	   "registry finds protocols by name");
	ok(weft_proto_strategy_find(weft_proto_find("beb"), "selective") != NULL &&
		   weft_proto_strategy_find(weft_proto_find("seq"), "selective") == NULL,
	   "strategies are found per protocol");
	for (size_t i = 0; weft_protocols[i]; i++)
		is_int(weft_protocols[i]->abi, WEFT_PROTO_ABI, "%s declares the current ABI", weft_protocols[i]->name);
	return done_testing();
}
