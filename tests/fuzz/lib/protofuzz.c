/* protofuzz.c - the protocol fuzz driver and its seed writer (protofuzz.h). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../src/sim/sim.h"
#include "../../lib/fakeenv.h"
#include "protofuzz.h"
#include "weft/channel.h"
#include "weft/ledger.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/store_proto.h"

#define PF_MAX_TIMERS 1024

struct pf_timer {
	uint64_t id;
	uint64_t deadline;
};

/* One protocol instance on its host.  fe comes first: the fake env's ops
 * find it through env->host, ours find the node the same way. */
struct pf_node {
	struct fake_env fe;
	struct pf_timer timers[PF_MAX_TIMERS];
	size_t ntimers;
	bool lenient;
	const struct pf_target *t;
	const uint8_t *params;
	size_t plen;
	void *state;
	struct sim_memkv *shares;     /* the share service's store (share_service) */
	struct weft_share_service svc;
	struct weft_wallet_service wallet; /* wallet_host */
	struct weft_event_service events;
	uint64_t rng;                 /* varied_random's counter */
};

static struct weft_env_ops pf_ops;
static void (*fake_random)(struct weft_env *env, void *buf, size_t len);

void pf_check(bool cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "protofuzz: property violated: %s\n", what);
		abort();
	}
}

bool pf_one_value(const uint8_t *buf, size_t len)
{
	size_t fl = 0;
	return len > 0 && weft_mp_frame_len(buf, len, len, &fl) == 0 && fl == len;
}

static struct pf_node *node_of(struct weft_env *env)
{
	return env->host;
}

static int pf_set_timer(struct weft_env *env, uint64_t id, uint64_t delay)
{
	struct pf_node *nd = node_of(env);
	uint64_t at = nd->fe.now_us + delay < nd->fe.now_us ? UINT64_MAX : nd->fe.now_us + delay;
	for (size_t i = 0; i < nd->ntimers; i++)
		if (nd->timers[i].id == id) {
			nd->timers[i].deadline = at;
			return 0;
		}
	pf_check(nd->ntimers < PF_MAX_TIMERS, "at most PF_MAX_TIMERS timers armed");
	nd->timers[nd->ntimers++] = (struct pf_timer){id, at};
	return 0;
}

static void pf_cancel_timer(struct weft_env *env, uint64_t id)
{
	struct pf_node *nd = node_of(env);
	for (size_t i = 0; i < nd->ntimers; i++)
		if (nd->timers[i].id == id) {
			memmove(&nd->timers[i], &nd->timers[i + 1], (nd->ntimers - i - 1) * sizeof(nd->timers[0]));
			nd->ntimers--;
			return;
		}
}

void pf_sign(uint32_t signer, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	uint8_t key[16] = "weft-fuzz-sig";
	key[15] = (uint8_t)signer;
	key[14] = (uint8_t)(signer >> 8);
	crypto_generichash(sig, WEFT_SIGNATURE_LEN, msg, len, key, sizeof(key));
}

static void pf_env_sign(struct weft_env *env, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	pf_sign(env->self, msg, len, sig);
}

static int pf_env_verify(struct weft_env *env, uint32_t signer, const void *msg, size_t len,
			 const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	uint8_t good[WEFT_SIGNATURE_LEN];
	if (signer >= env->n)
		return WEFT_ECRYPTO;
	if (node_of(env)->lenient && signer != env->self)
		return 0;
	pf_sign(signer, msg, len, good);
	return sodium_memcmp(good, sig, sizeof(good)) == 0 ? 0 : WEFT_ECRYPTO;
}

/* ---- the in-memory share service (targets with share_service) ----
 * "S" cid be16(share) -> root, be64(stored_ms), bytes; "F" tag cid and
 * "C" cid tag: a reference, both ways (values: one byte). */

#define SH_HASH WEFT_STORE_HASH
#define SH_SKEY (1 + SH_HASH + 2)
#define SH_RKEY (1 + 2 * SH_HASH)
#define SH_META (SH_HASH + 8)

static struct sim_memkv *sh_kv(struct pf_node *nd)
{
	if (nd->shares == NULL)
		nd->shares = sim_memkv_new();
	return nd->shares;
}

static void sh_skey(uint8_t key[SH_SKEY], const uint8_t cid[SH_HASH], uint16_t share)
{
	key[0] = 'S';
	memcpy(key + 1, cid, SH_HASH);
	key[1 + SH_HASH] = (uint8_t)(share >> 8);
	key[2 + SH_HASH] = (uint8_t)share;
}

static void sh_rkey(uint8_t key[SH_RKEY], char kind, const uint8_t a[SH_HASH], const uint8_t b[SH_HASH])
{
	key[0] = (uint8_t)kind;
	memcpy(key + 1, a, SH_HASH);
	memcpy(key + 1 + SH_HASH, b, SH_HASH);
}

static int sh_put(void *ctx, const uint8_t cid[SH_HASH], uint16_t share, const void *data, size_t len,
		  const uint8_t root[SH_HASH], bool repair)
{
	struct pf_node *nd = ctx;
	struct sim_memkv *kv = sh_kv(nd);
	uint8_t key[SH_SKEY];
	const void *old;
	size_t olen;
	if (len == 0)
		return WEFT_EINVAL;
	sh_skey(key, cid, share);
	if (sim_memkv_get(kv, key, sizeof(key), &old, &olen) == 0) {
		const uint8_t *o = old;
		if (olen == SH_META + len && memcmp(o, root, SH_HASH) == 0 && memcmp(o + SH_META, data, len) == 0)
			return 0; /* the same share again */
		if (!repair)
			return WEFT_EEXIST;
	}
	uint8_t *val = malloc(SH_META + len);
	pf_check(val != NULL, "malloc");
	uint64_t ms = nd->fe.now_us / 1000;
	memcpy(val, root, SH_HASH);
	for (int i = 0; i < 8; i++)
		val[SH_HASH + i] = (uint8_t)(ms >> (56 - 8 * i));
	memcpy(val + SH_META, data, len);
	int rc = sim_memkv_put(kv, key, sizeof(key), val, SH_META + len);
	free(val);
	return rc;
}

static int sh_copy(void *ctx, const uint8_t cid[SH_HASH], uint16_t share, void **data, size_t *len)
{
	uint8_t key[SH_SKEY];
	const void *val;
	size_t vlen;
	*data = NULL;
	sh_skey(key, cid, share);
	int rc = sim_memkv_get(sh_kv(ctx), key, sizeof(key), &val, &vlen);
	if (rc != 0)
		return rc;
	*len = vlen - SH_META;
	*data = malloc(*len ? *len : 1);
	pf_check(*data != NULL, "malloc");
	memcpy(*data, (const uint8_t *)val + SH_META, *len);
	return 0;
}

static int sh_has(void *ctx, const uint8_t cid[SH_HASH], uint16_t share, struct weft_share_meta *meta)
{
	uint8_t key[SH_SKEY];
	const void *val;
	size_t vlen;
	sh_skey(key, cid, share);
	int rc = sim_memkv_get(sh_kv(ctx), key, sizeof(key), &val, &vlen);
	if (rc == 0 && meta != NULL) {
		const uint8_t *v = val;
		memset(meta, 0, sizeof(*meta));
		meta->length = vlen - SH_META;
		for (int i = 0; i < 8; i++)
			meta->stored_ms = meta->stored_ms << 8 | v[SH_HASH + i];
		memcpy(meta->root, v, SH_HASH);
	}
	return rc;
}

static int sh_del(void *ctx, const uint8_t cid[SH_HASH], uint16_t share)
{
	uint8_t key[SH_SKEY];
	sh_skey(key, cid, share);
	return sim_memkv_del(sh_kv(ctx), key, sizeof(key));
}

static int sh_ref(void *ctx, const uint8_t file[SH_HASH], const uint8_t (*cids)[SH_HASH], size_t n)
{
	struct sim_memkv *kv = sh_kv(ctx);
	static const uint8_t one = 1;
	for (size_t i = 0; i < n; i++) {
		uint8_t key[SH_RKEY];
		sh_rkey(key, 'F', file, cids[i]);
		sim_memkv_put(kv, key, sizeof(key), &one, 1);
		sh_rkey(key, 'C', cids[i], file);
		sim_memkv_put(kv, key, sizeof(key), &one, 1);
	}
	return 0;
}

/* Keys in a scanned range, collected (the store must not change during a
 * scan). */
struct sh_keys {
	uint8_t (*k)[SH_SKEY > SH_RKEY ? SH_SKEY : SH_RKEY];
	size_t n, cap;
	bool first_only;
};

static int sh_collect(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct sh_keys *ks = arg;
	(void)val, (void)vlen;
	if (klen > sizeof(ks->k[0]))
		return 0;
	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? 2 * ks->cap : 16;
		ks->k = realloc(ks->k, ks->cap * sizeof(ks->k[0]));
		pf_check(ks->k != NULL, "realloc");
	}
	memset(ks->k[ks->n], 0, sizeof(ks->k[0]));
	memcpy(ks->k[ks->n++], key, klen);
	return ks->first_only ? 1 : 0;
}

/* The keys that start with kind || h. */
static void sh_prefix(struct sim_memkv *kv, char kind, const uint8_t h[SH_HASH], bool first_only, struct sh_keys *ks)
{
	uint8_t from[1 + SH_HASH], to[1 + SH_HASH + 1 + 2 * SH_HASH];
	from[0] = (uint8_t)kind;
	memcpy(from + 1, h, SH_HASH);
	memcpy(to, from, sizeof(from));
	memset(to + sizeof(from), 0xff, sizeof(to) - sizeof(from));
	memset(ks, 0, sizeof(*ks));
	ks->first_only = first_only;
	sim_memkv_scan(kv, from, sizeof(from), to, sizeof(to), sh_collect, ks);
}

/* Drops every reference of file; a CID left without any loses its shares. */
static int sh_unref(void *ctx, const uint8_t file[SH_HASH])
{
	struct sim_memkv *kv = sh_kv(ctx);
	struct sh_keys refs;
	sh_prefix(kv, 'F', file, false, &refs);
	if (refs.n == 0) {
		free(refs.k);
		return WEFT_NOTFOUND;
	}
	for (size_t i = 0; i < refs.n; i++) {
		const uint8_t *cid = refs.k[i] + 1 + SH_HASH;
		uint8_t back[SH_RKEY];
		sim_memkv_del(kv, refs.k[i], SH_RKEY);
		sh_rkey(back, 'C', cid, file);
		sim_memkv_del(kv, back, sizeof(back));
		struct sh_keys left, shares;
		sh_prefix(kv, 'C', cid, true, &left);
		if (left.n == 0) {
			sh_prefix(kv, 'S', cid, false, &shares);
			for (size_t k = 0; k < shares.n; k++)
				sim_memkv_del(kv, shares.k[k], SH_SKEY);
			free(shares.k);
		}
		free(left.k);
	}
	free(refs.k);
	return 0;
}

/* ---- the wallets and the event sink (targets with wallet_host) ---- */

void pf_wallet_sign(const uint8_t key[32], const uint8_t msg[32], uint8_t sig[64])
{
	crypto_generichash(sig, 64, msg, 32, key, 32);
}

static int wallet_sign(void *ctx, const uint8_t key[32], const uint8_t msg[32], uint8_t sig[64])
{
	struct pf_node *nd = ctx;
	if (nd->t->wallet_host(key) != (int)nd->fe.env.self)
		return WEFT_NOTFOUND;
	pf_wallet_sign(key, msg, sig);
	return 0;
}

static int wallet_verify(void *ctx, const uint8_t key[32], const uint8_t msg[32], const uint8_t sig[64])
{
	struct pf_node *nd = ctx;
	uint8_t good[64];
	if (nd->lenient && nd->t->wallet_host(key) != (int)nd->fe.env.self)
		return 0;
	pf_wallet_sign(key, msg, good);
	return sodium_memcmp(good, sig, sizeof(good)) == 0 ? 0 : WEFT_ECRYPTO;
}

static void event_emit(void *ctx, const uint8_t *event, size_t len)
{
	(void)ctx;
	pf_check(pf_one_value(event, len), "every event is one msgpack value");
}

/* The fake env's random (every byte 0x5a), or for targets with
 * varied_random, requests shorter than 32 bytes from a per-node
 * splitmix64 sequence. */
static void pf_random(struct weft_env *env, void *buf, size_t len)
{
	struct pf_node *nd = node_of(env);
	if (nd->t == NULL || !nd->t->varied_random || len >= 32) {
		fake_random(env, buf, len);
		return;
	}
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i += 8) {
		uint64_t z = (nd->rng += UINT64_C(0x9e3779b97f4a7c15));
		z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
		z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
		z ^= z >> 31;
		for (size_t k = 0; k < 8 && i + k < len; k++)
			b[i + k] = (uint8_t)(z >> (8 * k));
	}
}

static const void *pf_service(struct weft_env *env, const char *name)
{
	struct pf_node *nd = node_of(env);
	if (nd->t && nd->t->wallet_host && strcmp(name, WEFT_WALLET_SERVICE) == 0) {
		nd->wallet = (struct weft_wallet_service){.ctx = nd, .sign = wallet_sign, .verify = wallet_verify};
		return &nd->wallet;
	}
	if (nd->t && nd->t->wallet_host && strcmp(name, WEFT_EVENT_SERVICE) == 0) {
		nd->events = (struct weft_event_service){.ctx = nd, .emit = event_emit};
		return &nd->events;
	}
	if (nd->t == NULL || !nd->t->share_service || strcmp(name, WEFT_SHARE_SERVICE) != 0)
		return NULL;
	nd->svc = (struct weft_share_service){
		.ctx = nd, .put = sh_put, .copy = sh_copy, .has = sh_has, .del = sh_del, .ref = sh_ref, .unref = sh_unref,
	};
	return &nd->svc;
}

static void node_setup(struct pf_node *nd, uint32_t self)
{
	memset(nd, 0, sizeof(*nd));
	fake_env_init(&nd->fe, self, PF_N);
	if (pf_ops.send == NULL) {
		pf_ops = *nd->fe.env.ops;
		pf_ops.set_timer = pf_set_timer;
		pf_ops.cancel_timer = pf_cancel_timer;
		pf_ops.sign = pf_env_sign;
		pf_ops.verify = pf_env_verify;
		pf_ops.service = pf_service;
		fake_random = pf_ops.random;
		pf_ops.random = pf_random;
	}
	nd->fe.env.ops = &pf_ops;
}

/* A fresh store, clock and timer table for the next input. */
static void node_reset(struct pf_node *nd)
{
	fake_env_clear(&nd->fe);
	sim_memkv_free(nd->fe.kv);
	nd->fe.kv = sim_memkv_new();
	nd->fe.now_us = 0;
	nd->ntimers = 0;
	sim_memkv_free(nd->shares);
	nd->shares = NULL;
	nd->rng = 0;
}

static void node_boot(struct pf_node *nd)
{
	const struct weft_proto_ops *ops = nd->t->ops;
	nd->ntimers = 0;
	if (nd->state == NULL) {
		nd->state = calloc(1, ops->state_size);
		pf_check(nd->state != NULL, "calloc");
	} else {
		memset(nd->state, 0, ops->state_size);
	}
	int rc = ops->init(nd->state, &nd->fe.env, nd->params, nd->plen);
	if (rc != 0)
		fprintf(stderr, "protofuzz: %s init: %s\n", ops->name, weft_strerror(rc));
	pf_check(rc == 0, "init succeeds (first boot and after a restart)");
	if (ops->start)
		pf_check(ops->start(nd->state) == 0, "start succeeds");
}

static void node_halt(struct pf_node *nd)
{
	if (nd->t->ops->destroy)
		nd->t->ops->destroy(nd->state);
}

static const uint8_t *config_params(const struct pf_target *t, unsigned int cfg, size_t *plen, const char **name)
{
	static struct weft_mpw cache[16];
	static const char *names[16];
	pf_check(cfg < 16, "at most 16 parameter sets");
	if (cache[cfg].len == 0) {
		weft_mpw_init(&cache[cfg]);
		t->params(cfg, &cache[cfg], &names[cfg]);
	}
	*plen = cache[cfg].len;
	if (name)
		*name = names[cfg];
	return cache[cfg].buf;
}

/* ---- properties checked after every callback ---- */

static struct {
	uint64_t (*seen)[2];
	size_t len, cap;
} dl;

static void check_outputs(struct pf_node *nd)
{
	const struct pf_target *t = nd->t;
	struct fake_env *fe = &nd->fe;
	for (size_t i = 0; i < fe->nsent && t->msgpack_sends; i++) {
		const uint8_t *m = fe->sent[i].data;
		size_t len = fe->sent[i].len;
		if (t->send_channel > 0 && len > 0 && m[0] == t->send_channel)
			m++, len--;
		pf_check(pf_one_value(m, len), "every message sent is one msgpack value");
	}
	for (size_t i = 0; i < fe->ndeliveries && t->unique_deliveries; i++) {
		uint64_t o = fe->deliveries[i].origin, s = fe->deliveries[i].seq;
		for (size_t k = 0; k < dl.len; k++)
			pf_check(dl.seen[k][0] != o || dl.seen[k][1] != s, "no (origin, seq) delivered twice");
		if (dl.len == dl.cap) {
			dl.cap = dl.cap ? 2 * dl.cap : 64;
			dl.seen = realloc(dl.seen, dl.cap * sizeof(*dl.seen));
			pf_check(dl.seen != NULL, "realloc");
		}
		dl.seen[dl.len][0] = o;
		dl.seen[dl.len][1] = s;
		dl.len++;
	}
}

static void check_reply(int rc, struct weft_mpw *reply, const char *what)
{
	if (rc == 0 && reply->len > 0)
		pf_check(pf_one_value(reply->buf, reply->len), what);
	weft_mpw_reset(reply);
}

/* ---- one step of a script, shared by the fuzz run and the seed writer ---- */

enum pf_op { PF_MSG, PF_TIMER, PF_CLOCK, PF_REQUEST, PF_QUERY, PF_RESTART };

static enum pf_op op_kind(uint8_t op)
{
	if (op < 0xc0)
		return PF_MSG;
	if (op < 0xd0)
		return PF_TIMER;
	if (op < 0xe0)
		return PF_CLOCK;
	if (op < 0xf0)
		return PF_REQUEST;
	if (op < 0xf8)
		return PF_QUERY;
	return PF_RESTART;
}

/* Fires nd's timer number idx; returns its id. */
static uint64_t fire(struct pf_node *nd, size_t idx)
{
	struct pf_timer tm = nd->timers[idx];
	memmove(&nd->timers[idx], &nd->timers[idx + 1], (nd->ntimers - idx - 1) * sizeof(nd->timers[0]));
	nd->ntimers--;
	if (tm.deadline > nd->fe.now_us)
		nd->fe.now_us = tm.deadline;
	if (nd->t->ops->on_timer)
		nd->t->ops->on_timer(nd->state, tm.id);
	return tm.id;
}

static void step(struct pf_node *nd, uint8_t op, const uint8_t *p, size_t len, struct weft_mpw *reply)
{
	const struct weft_proto_ops *ops = nd->t->ops;
	int rc;
	switch (op_kind(op)) {
	case PF_MSG:
		ops->on_message(nd->state, 1 + op % 3, p, len);
		break;
	case PF_TIMER:
		if (nd->ntimers == 0)
			nd->fe.now_us += 100000;
		else
			fire(nd, len ? p[0] % nd->ntimers : 0);
		break;
	case PF_CLOCK: {
		uint64_t d = 0;
		for (size_t i = 0; i < len && i < 4; i++)
			d = d << 8 | p[i];
		nd->fe.now_us += d;
		break;
	}
	case PF_REQUEST:
		if (nd->t->commands && op >= 0xe8) {
			const char *const *c = nd->t->commands;
			size_t nc = 0;
			while (c[nc])
				nc++;
			if (ops->command && nc && len) {
				rc = ops->command(nd->state, c[p[0] % nc], p + 1, len - 1, reply);
				check_reply(rc, reply, "a command's reply is one msgpack value");
			}
			break;
		}
		rc = ops->on_request ? ops->on_request(nd->state, p, len, reply) : WEFT_EINVAL;
		check_reply(rc, reply, "a request's reply is one msgpack value");
		break;
	case PF_QUERY: {
		const char *const *q = nd->t->queries;
		size_t nq = 0;
		while (q && q[nq])
			nq++;
		if (ops->query && nq && len) {
			rc = ops->query(nd->state, q[p[0] % nq], p + 1, len - 1, reply);
			check_reply(rc, reply, "a query's reply is one msgpack value");
		}
		break;
	}
	case PF_RESTART:
		node_halt(nd);
		node_boot(nd);
		break;
	}
	check_outputs(nd);
	fake_env_clear(&nd->fe);
}

/* ---- the fuzz run ---- */

static struct pf_node fz;

void pf_run(const struct pf_target *t, const uint8_t *data, size_t size)
{
	struct weft_mpw reply;
	if (size == 0)
		return;
	if (fz.t == NULL) {
		node_setup(&fz, 0);
		fz.t = t;
	} else {
		node_reset(&fz);
	}
	fz.lenient = data[0] & 1;
	fz.params = config_params(t, (data[0] >> 1) % t->nconfigs, &fz.plen, NULL);
	dl.len = 0;
	weft_mpw_init(&reply);
	node_boot(&fz);
	check_outputs(&fz);
	fake_env_clear(&fz.fe);
	size_t off = 1;
	while (off + 3 <= size) {
		uint8_t op = data[off];
		size_t len = (size_t)data[off + 1] << 8 | data[off + 2];
		off += 3;
		if (len > size - off)
			len = size - off;
		/* A private copy: ASan sees any read past the payload. */
		uint8_t *p = malloc(len ? len : 1);
		pf_check(p != NULL, "malloc");
		memcpy(p, data + off, len);
		step(&fz, op, p, len, &reply);
		free(p);
		off += len;
	}
	if (t->ops->info) {
		t->ops->info(fz.state, &reply);
		pf_check(pf_one_value(reply.buf, reply.len), "info is one msgpack value");
		if (getenv("WEFT_FUZZ_VERBOSE")) {
			json_t *j = NULL;
			if (weft_mp_buf_to_json(reply.buf, reply.len, &j) == 0) {
				json_dumpf(j, stderr, JSON_COMPACT);
				json_decref(j);
			}
			fprintf(stderr, "\nprotofuzz: %zu deliveries\n", dl.len);
		}
	}
	weft_mpw_free(&reply);
	node_halt(&fz);
	free(fz.state);
	fz.state = NULL;
	fake_env_clear(&fz.fe);
}

/* ---- a bare host ---- */

struct weft_env *pf_env(bool lenient)
{
	static struct pf_node bare;
	static const struct pf_target none;
	if (bare.t == NULL) {
		node_setup(&bare, 0);
		bare.t = &none;
	} else {
		node_reset(&bare);
	}
	bare.lenient = lenient;
	return &bare.fe.env;
}

/* ---- the seed writer: four honest nodes, node 0's experience recorded ---- */

struct pf_msg {
	uint32_t from, to;
	uint8_t *data;
	size_t len;
};

struct pf_net {
	struct pf_node node[PF_N];
	struct pf_msg *q;
	size_t qhead, qlen, qcap;
	uint64_t now;
	uint64_t rec_now;      /* node 0's clock as the recorded script has it */
	struct weft_mpw rec;
	size_t max;            /* the script's size limit */
	bool full;             /* and it was reached: stop */
};

static void enqueue(struct pf_net *net, uint32_t from, uint32_t to, const uint8_t *data, size_t len)
{
	if (net->qlen == net->qcap) {
		net->qcap = net->qcap ? 2 * net->qcap : 256;
		net->q = realloc(net->q, net->qcap * sizeof(*net->q));
		pf_check(net->q != NULL, "realloc");
	}
	uint8_t *copy = malloc(len ? len : 1);
	pf_check(copy != NULL, "malloc");
	memcpy(copy, data, len);
	net->q[net->qlen++] = (struct pf_msg){from, to, copy, len};
}

/* Routes what node i sent during its last callback. */
static void route(struct pf_net *net, uint32_t i)
{
	struct fake_env *fe = &net->node[i].fe;
	for (size_t k = 0; k < fe->nsent; k++) {
		for (uint32_t j = 0; j < PF_N; j++)
			if (j != i && (fe->sent[k].to < 0 || fe->sent[k].to == (int64_t)j))
				enqueue(net, i, j, fe->sent[k].data, fe->sent[k].len);
	}
	fake_env_clear(fe);
}

static bool record(struct pf_net *net, uint8_t op, const uint8_t *p, size_t len)
{
	if (net->full || len > 0xffff || net->rec.len + 3 + len > net->max) {
		net->full = true;
		return false;
	}
	pf_record_op(&net->rec, op, p, len);
	return true;
}

/* Brings the recorded clock of node 0 up to net->now. */
static bool record_clock(struct pf_net *net)
{
	while (net->rec_now < net->now) {
		uint64_t d = net->now - net->rec_now;
		if (d > UINT32_MAX)
			d = UINT32_MAX;
		uint8_t be[4] = {(uint8_t)(d >> 24), (uint8_t)(d >> 16), (uint8_t)(d >> 8), (uint8_t)d};
		if (!record(net, 0xd0, be, 4))
			return false;
		net->rec_now += d;
	}
	return true;
}

static void set_clocks(struct pf_net *net)
{
	for (uint32_t i = 0; i < PF_N; i++)
		net->node[i].fe.now_us = net->now;
}

/* Phase phase of the seed commands: each node in the script (node 1 only
 * in script a) makes its commands; node 0's are recorded.  False when the
 * script is full. */
static bool seed_commands(struct pf_net *net, const struct pf_target *t, unsigned int cfg, char which,
			  unsigned int phase, struct weft_mpw *reply)
{
	for (uint32_t i = 0; i < PF_N; i++) {
		if (which == 'a' && i != 1)
			continue;
		for (unsigned int k = 0; k < 32; k++) {
			struct weft_mpw w;
			unsigned int what = 0;
			weft_mpw_init(&w);
			bool more = t->seed_command(cfg, i, phase, k, &what, &w);
			if (more && i == 0) {
				struct weft_mpw rec;
				uint8_t b = (uint8_t)what;
				weft_mpw_init(&rec);
				weft_mpw_raw(&rec, &b, 1);
				weft_mpw_raw(&rec, w.buf, w.len);
				bool room = record_clock(net) && record(net, 0xe8, rec.buf, rec.len);
				weft_mpw_free(&rec);
				if (!room) {
					weft_mpw_free(&w);
					return false;
				}
			}
			if (more) {
				int rc = t->ops->command(net->node[i].state, t->commands[what], w.buf, w.len, reply);
				weft_mpw_reset(reply);
				(void)rc;
				route(net, i);
			}
			weft_mpw_free(&w);
			if (!more)
				break;
		}
	}
	return true;
}

/* Runs one script; returns the recorded input in net->rec. */
static void script(const struct pf_target *t, unsigned int cfg, char which, struct weft_mpw *out)
{
	static struct pf_net net;
	struct weft_mpw reply;
	bool restarted = which != 'c';
	unsigned int to0 = 0, phase = 0;
	memset(&net, 0, sizeof(net));
	weft_mpw_init(&net.rec);
	weft_mpw_init(&reply);
	uint64_t cut = t->seed_cut_us ? t->seed_cut_us : t->seed_horizon_us / 2;
	net.max = strchr(t->long_scripts ? t->long_scripts : "b", which) && t->seed_max_long > t->seed_max
			  ? t->seed_max_long
			  : t->seed_max;
	uint8_t flags = (uint8_t)(cfg << 1);
	weft_mpw_raw(&net.rec, &flags, 1);
	for (uint32_t i = 0; i < PF_N; i++) {
		struct pf_node *nd = &net.node[i];
		node_setup(nd, i);
		nd->t = t;
		nd->params = config_params(t, cfg, &nd->plen, NULL);
		node_boot(nd);
		route(&net, i);
	}
	/* Requests at time 0: script a from node 1 only, b and c from all. */
	for (uint32_t i = 0; i < PF_N; i++) {
		if (which == 'a' && i != 1)
			continue;
		for (unsigned int k = 0; k < 8; k++) {
			struct weft_mpw w;
			weft_mpw_init(&w);
			bool more = t->request && t->request(cfg, i, k, &w);
			if (more) {
				if (i == 0)
					record(&net, 0xe0, w.buf, w.len);
				int rc = t->ops->on_request(net.node[i].state, w.buf, w.len, &reply);
				weft_mpw_reset(&reply);
				(void)rc;
				route(&net, i);
			}
			weft_mpw_free(&w);
			if (!more)
				break;
		}
	}
	if (t->seed_command && t->seed_phases > 0)
		net.full = !seed_commands(&net, t, cfg, which, phase++, &reply);
	for (unsigned long steps = 0; steps < 200000 && !net.full; steps++) {
		if (net.qhead < net.qlen) {
			if (!restarted && to0 == 5) {
				/* Script c: node 0 restarts in the middle of things. */
				if (!record(&net, 0xf8, NULL, 0))
					break;
				node_halt(&net.node[0]);
				node_boot(&net.node[0]);
				route(&net, 0);
				restarted = true;
				continue;
			}
			struct pf_msg m = net.q[net.qhead++];
			if (which == 'd' && (m.to == 0 || m.from == 0) &&
			    (net.now < cut || (m.to == 0 && t->seed_drop && t->seed_drop(m.data, m.len)))) {
				free(m.data); /* script d: node 0 cut off for half the run */
				continue;
			}
			to0 += m.to == 0;
			if (m.to == 0 && (!record_clock(&net) || !record(&net, (uint8_t)(m.from - 1), m.data, m.len))) {
				free(m.data);
				break;
			}
			t->ops->on_message(net.node[m.to].state, m.from, m.data, m.len);
			free(m.data);
			route(&net, m.to);
			continue;
		}
		/* Quiet: the earliest timer. */
		uint32_t who = PF_N;
		size_t idx = 0;
		uint64_t at = UINT64_MAX;
		for (uint32_t i = 0; i < PF_N; i++)
			for (size_t k = 0; k < net.node[i].ntimers; k++)
				if (net.node[i].timers[k].deadline < at)
					who = i, idx = k, at = net.node[i].timers[k].deadline;
		/* Quiet: the next phase of commands when it is due before the timer. */
		if (t->seed_command && phase < t->seed_phases && phase * t->seed_phase_us <= t->seed_horizon_us &&
		    (who == PF_N || phase * t->seed_phase_us <= at)) {
			if (phase * t->seed_phase_us > net.now)
				net.now = phase * t->seed_phase_us;
			set_clocks(&net);
			if (!seed_commands(&net, t, cfg, which, phase++, &reply))
				break;
			continue;
		}
		if (who == PF_N || at > t->seed_horizon_us)
			break;
		if (at > net.now)
			net.now = at;
		set_clocks(&net);
		if (who == 0) {
			uint8_t b = (uint8_t)idx;
			if (!record_clock(&net) || !record(&net, 0xc0, &b, 1))
				break;
		}
		fire(&net.node[who], idx);
		route(&net, who);
	}
	while (net.qhead < net.qlen)
		free(net.q[net.qhead++].data);
	free(net.q);
	for (uint32_t i = 0; i < PF_N; i++) {
		node_halt(&net.node[i]);
		free(net.node[i].state);
		fake_env_free(&net.node[i].fe);
		sim_memkv_free(net.node[i].shares);
	}
	weft_mpw_free(&reply);
	if (t->seed_tail)
		t->seed_tail(cfg, &net.rec);
	*out = net.rec;
}

void pf_record_op(struct weft_mpw *rec, uint8_t op, const void *p, size_t len)
{
	uint8_t hdr[3] = {op, (uint8_t)(len >> 8), (uint8_t)len};
	pf_check(len <= 0xffff, "a record holds at most 65535 bytes");
	weft_mpw_raw(rec, hdr, 3);
	weft_mpw_raw(rec, p, len);
}

void pf_write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		pf_check(false, "mkdir seed dir");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	pf_check(f != NULL && fwrite(data, 1, len, f) == len && fclose(f) == 0, "write seed file");
}

void pf_initialize(const struct pf_target *t)
{
	pf_check(weft_crypto_init() == 0, "weft_crypto_init");
	const char *dir = getenv("WEFT_FUZZ_SEEDS");
	if (dir == NULL)
		return;
	for (unsigned int cfg = 0; cfg < t->nconfigs; cfg++) {
		const char *cname;
		size_t plen;
		config_params(t, cfg, &plen, &cname);
		const char *scripts = t->scripts_for ? t->scripts_for(cfg) : t->scripts ? t->scripts : "abc";
		for (const char *which = scripts; *which; which++) {
			struct weft_mpw rec;
			char name[128];
			script(t, cfg, *which, &rec);
			snprintf(name, sizeof(name), "%s-%c", cname, *which);
			pf_write_file(dir, name, rec.buf, rec.len);
			fprintf(stderr, "protofuzz: seed %s/%s: %zu bytes\n", dir, name, rec.len);
			weft_mpw_free(&rec);
		}
	}
	exit(0);
}

/* ---- parameter sets and requests shared by the BRB targets ---- */

void pf_brb_params(unsigned int cfg, struct weft_mpw *w, const char **name)
{
	switch (cfg) {
	case 0: /* small windows: beyond-window input, delivery GC, retention */
		*name = "small";
		weft_mpw_map(w, 4);
		weft_mpw_str(w, "window");
		weft_mpw_uint(w, 4);
		weft_mpw_str(w, "retain");
		weft_mpw_uint(w, 2);
		weft_mpw_str(w, "resend_ms");
		weft_mpw_uint(w, 20);
		weft_mpw_str(w, "max_payload");
		weft_mpw_uint(w, 512);
		break;
	default: /* the defaults, retention off */
		*name = "noretain";
		weft_mpw_map(w, 1);
		weft_mpw_str(w, "retain");
		weft_mpw_uint(w, 0);
		break;
	}
}

bool pf_brb_request(unsigned int cfg, uint32_t node, unsigned int k, struct weft_mpw *w)
{
	uint8_t buf[64];
	size_t len = 5 + 17 * k + node;
	if (k >= 2)
		return false;
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)('a' + (node * 7 + k * 3 + i) % 26);
	weft_mpw_raw(w, buf, len);
	return true;
}

void pf_ledger_key(unsigned int i, uint8_t *sk, uint8_t *pk)
{
	uint8_t s[32] = {0}, p[32];
	s[31] = (uint8_t)i;
	pf_check(weft_ledger_pubkey(s, p) == 0, "ledger pubkey");
	if (sk)
		memcpy(sk, s, 32);
	if (pk)
		memcpy(pk, p, 32);
}
