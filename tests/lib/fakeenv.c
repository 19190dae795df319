/* fakeenv.c - the recording protocol host for unit tests (fakeenv.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "fakeenv.h"
#include "weft/err.h"

static struct fake_env *fe_of(struct weft_env *env)
{
	return env->host;
}

static int record(struct fake_env *fe, int64_t to, const char *kind, const void *msg, size_t len)
{
	fe->sent = realloc(fe->sent, (fe->nsent + 1) * sizeof(*fe->sent));
	uint8_t *copy = malloc(len ? len : 1);
	if (fe->sent == NULL || copy == NULL)
		abort();
	memcpy(copy, msg, len);
	fe->sent[fe->nsent++] = (struct fake_sent){to, kind, copy, len};
	return 0;
}

static int f_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	return to >= env->n ? WEFT_EINVAL : record(fe_of(env), to, kind, msg, len);
}

static int f_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	return record(fe_of(env), -1, kind, msg, len);
}

static uint64_t f_now(struct weft_env *env)
{
	return fe_of(env)->now_us;
}

static int f_set_timer(struct weft_env *env, uint64_t id, uint64_t delay)
{
	struct fake_env *fe = fe_of(env);
	for (size_t i = 0; i < fe->ntimers; i++)
		if (fe->timers[i] == id)
			return 0;
	if (fe->ntimers < 64)
		fe->timers[fe->ntimers++] = id;
	return 0;
}

static void f_cancel_timer(struct weft_env *env, uint64_t id)
{
	struct fake_env *fe = fe_of(env);
	for (size_t i = 0; i < fe->ntimers; i++)
		if (fe->timers[i] == id)
			fe->timers[i] = fe->timers[--fe->ntimers];
}

static void f_random(struct weft_env *env, void *buf, size_t len)
{
	memset(buf, 0x5a, len);
}

static void f_deliver(struct weft_env *env, const struct weft_delivery *d)
{
	struct fake_env *fe = fe_of(env);
	fe->deliveries = realloc(fe->deliveries, (fe->ndeliveries + 1) * sizeof(*fe->deliveries));
	uint8_t *copy = malloc(d->len ? d->len : 1);
	if (fe->deliveries == NULL || copy == NULL)
		abort();
	if (d->len)
		memcpy(copy, d->data, d->len);
	fe->deliveries[fe->ndeliveries++] = (struct fake_delivery){d->origin, d->seq, d->invalid, copy, d->len};
}

static int f_kv_get(struct weft_env *env, const void *k, size_t kl, const void **v, size_t *vl)
{
	return sim_memkv_get(fe_of(env)->kv, k, kl, v, vl);
}

static int f_kv_put(struct weft_env *env, const void *k, size_t kl, const void *v, size_t vl)
{
	return sim_memkv_put(fe_of(env)->kv, k, kl, v, vl);
}

static int f_kv_del(struct weft_env *env, const void *k, size_t kl)
{
	return sim_memkv_del(fe_of(env)->kv, k, kl);
}

static int f_kv_scan(struct weft_env *env, const void *from, size_t fl, const void *to, size_t tl, weft_env_scan_fn fn,
		     void *arg)
{
	return sim_memkv_scan(fe_of(env)->kv, from, fl, to, tl, fn, arg);
}

static void f_sign(struct weft_env *env, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	weft_sign(fe_of(env)->ids[env->self], sig, msg, len);
}

static int f_verify(struct weft_env *env, uint32_t signer, const void *msg, size_t len,
		    const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	if (signer >= env->n)
		return WEFT_ECRYPTO;
	return weft_verify(fe_of(env)->pk[signer], sig, msg, len);
}

static void f_log(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt, va_list ap)
{
	struct fake_env *fe = fe_of(env);
	if (fe->log_hook) {
		char text[512];
		vsnprintf(text, sizeof(text), fmt, ap);
		fe->log_hook(fe, level, event, text);
	}
}

static void f_metric(struct weft_env *env, const char *name, int64_t delta)
{
}

static const struct weft_env_ops fake_ops = {f_send,   f_multicast, f_now,     f_set_timer, f_cancel_timer,
					     f_random, f_deliver,   f_kv_get,  f_kv_put,    f_kv_del,
					     f_kv_scan, f_sign,     f_verify,  f_log,       f_metric, NULL};

/* The same ops with a service op, for envs that offer services. */
static const void *f_service(struct weft_env *env, const char *name)
{
	struct fake_env *fe = fe_of(env);
	return fe->service ? fe->service(fe, name) : NULL;
}

static const struct weft_env_ops fake_ops_service = {
	.send = f_send,
	.multicast = f_multicast,
	.now = f_now,
	.set_timer = f_set_timer,
	.cancel_timer = f_cancel_timer,
	.random = f_random,
	.deliver = f_deliver,
	.kv_get = f_kv_get,
	.kv_put = f_kv_put,
	.kv_del = f_kv_del,
	.kv_scan = f_kv_scan,
	.sign = f_sign,
	.verify = f_verify,
	.log = f_log,
	.metric = f_metric,
	.service = f_service,
};

void fake_env_set_service(struct fake_env *fe, fake_service_fn fn, void *ctx)
{
	fe->service = fn;
	fe->service_ctx = ctx;
	fe->env.ops = &fake_ops_service;
}

void fake_env_init(struct fake_env *fe, uint32_t self, uint32_t n)
{
	memset(fe, 0, sizeof(*fe));
	fe->env = (struct weft_env){.ops = &fake_ops, .host = fe, .self = self, .n = n, .f = (n - 1) / 3};
	fe->kv = sim_memkv_new();
	fe->ids = calloc(n, sizeof(*fe->ids));
	fe->pk = calloc(n, sizeof(*fe->pk));
	if (fe->ids == NULL || fe->pk == NULL)
		abort();
	for (uint32_t i = 0; i < n; i++) {
		uint8_t seed[WEFT_SEED_LEN] = {0};
		memcpy(seed, &i, sizeof(i));
		fe->ids[i] = weft_identity_from_seed(seed);
		memcpy(fe->pk[i], fe->ids[i]->pk, WEFT_PK_LEN);
	}
}

void fake_env_clear(struct fake_env *fe)
{
	for (size_t i = 0; i < fe->nsent; i++)
		free(fe->sent[i].data);
	for (size_t i = 0; i < fe->ndeliveries; i++)
		free(fe->deliveries[i].data);
	free(fe->sent);
	free(fe->deliveries);
	fe->sent = NULL;
	fe->deliveries = NULL;
	fe->nsent = fe->ndeliveries = 0;
}

void fake_env_free(struct fake_env *fe)
{
	fake_env_clear(fe);
	for (uint32_t i = 0; i < fe->env.n; i++)
		weft_identity_free(fe->ids[i]);
	free(fe->ids);
	free(fe->pk);
	sim_memkv_free(fe->kv);
}

const struct fake_sent *fake_env_last(const struct fake_env *fe, const char *kind)
{
	for (size_t i = fe->nsent; i-- > 0;)
		if (strcmp(fe->sent[i].kind, kind) == 0)
			return &fe->sent[i];
	return NULL;
}

size_t fake_env_count(const struct fake_env *fe, const char *kind)
{
	size_t k = 0;
	for (size_t i = 0; i < fe->nsent; i++)
		k += strcmp(fe->sent[i].kind, kind) == 0;
	return k;
}
