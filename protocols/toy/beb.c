/* beb.c - best-effort broadcast, the simulator's toy protocol.
 *
 * A request is multicast once as [1, 0, seq, payload]; every receiver
 * delivers (origin, seq, payload) once.  Correct under crash faults and a
 * reliable network, not under Byzantine ones: it exists to exercise the
 * hosts and the checkers.  The "bug" parameter makes it deliberately wrong
 * so that each checker can be shown to catch something:
 *   double   every delivery happens twice          (integrity, no_duplicates)
 *   corrupt  node 1 flips a byte of what it delivers (agreement, integrity)
 *   skip     node 1 ignores node 0                  (validity, totality)
 *   forge    node 1 delivers a message nobody sent  (integrity, totality)
 *
 * Strategy "selective" (a Byzantine sender for the simulator's adversary
 * fault): honest beb code whose multicasts reach only the nodes listed in
 * params.adversary.to (default: the lower half), so totality breaks. */
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/proto.h"
#include "weft/seqset.h"

enum beb_bug { BEB_OK, BEB_DOUBLE, BEB_CORRUPT, BEB_SKIP, BEB_FORGE };

#define BEB_VERSION 1
#define BEB_DATA 0
/* A sender may run at most this far ahead of what we delivered from it. */
#define BEB_WINDOW 4096

struct beb {
	struct weft_env *env;
	enum beb_bug bug;
	uint64_t next_seq;
	bool forged;
	struct weft_seqset *origins; /* n entries: what was delivered from each */
	struct weft_mpw out;
};

static void origin_key(uint8_t key[5], uint32_t origin)
{
	key[0] = 'o';
	weft_be32_put(key + 1, origin);
}

static int origin_load(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct beb *b = arg;
	const uint8_t *k = key;
	if (klen != 5)
		return WEFT_ECORRUPT;
	uint32_t origin = weft_be32_get(k + 1);
	if (origin >= b->env->n)
		return WEFT_ECORRUPT;
	return weft_seqset_load(&b->origins[origin], val, vlen);
}

static int beb_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct beb *b = state;
	b->env = env;
	weft_mpw_init(&b->out);
	static const char *const bugs[] = {"none", "double", "corrupt", "skip", "forge"};
	const char *s;
	uint32_t len;
	int rc = weft_params_str(params, plen, "bug", &s, &len);
	if (rc == 0) {
		size_t i = 0;
		while (i < 5 && !(strlen(bugs[i]) == len && memcmp(bugs[i], s, len) == 0))
			i++;
		if (i == 5)
			return WEFT_EINVAL;
		b->bug = (enum beb_bug)i;
	} else if (rc != WEFT_NOTFOUND) {
		return rc;
	}
	b->origins = calloc(env->n, sizeof(*b->origins));
	if (b->origins == NULL)
		abort();
	const void *v;
	size_t vlen;
	if (env->ops->kv_get(env, "seq", 3, &v, &vlen) == 0 && vlen == 8)
		memcpy(&b->next_seq, v, 8);
	return env->ops->kv_scan(env, "o", 1, "p", 1, origin_load, b);
}

/* Delivers (origin, seq, data) unless already delivered; applies the bug. */
static void beb_deliver(struct beb *b, uint32_t origin, uint64_t seq, const uint8_t *data, size_t len)
{
	struct weft_env *env = b->env;
	struct weft_seqset *o = &b->origins[origin];
	if (weft_seqset_has(o, seq))
		return;
	weft_seqset_add(o, seq);
	uint8_t key[5];
	origin_key(key, origin);
	weft_seqset_save(o, env, key, sizeof(key));
	struct weft_delivery d = {.origin = origin, .seq = seq, .data = data, .len = len};
	uint8_t *flipped = NULL;
	if (b->bug == BEB_CORRUPT && env->self == 1 && len > 0) {
		flipped = malloc(len);
		if (flipped == NULL)
			abort();
		memcpy(flipped, data, len);
		flipped[0] ^= 0xff;
		d.data = flipped;
	}
	env->ops->deliver(env, &d);
	free(flipped);
	if (b->bug == BEB_DOUBLE)
		env->ops->deliver(env, &d);
	if (b->bug == BEB_FORGE && env->self == 1 && !b->forged) {
		static const uint8_t fake[] = "forged";
		struct weft_delivery f = {.origin = 2 % env->n, .seq = BEB_WINDOW * 4, .data = fake, .len = sizeof(fake)};
		b->forged = true;
		env->ops->deliver(env, &f);
	}
}

static int beb_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct beb *b = state;
	struct weft_env *env = b->env;
	uint64_t seq = b->next_seq++;
	env->ops->kv_put(env, "seq", 3, &b->next_seq, 8);
	weft_mpw_reset(&b->out);
	weft_mpw_array(&b->out, 4);
	weft_mpw_uint(&b->out, BEB_VERSION);
	weft_mpw_uint(&b->out, BEB_DATA);
	weft_mpw_uint(&b->out, seq);
	weft_mpw_bin(&b->out, req, len);
	weft_env_multicast(env, "beb.data", b->out.buf, b->out.len);
	beb_deliver(b, env->self, seq, req, len);
	if (reply) {
		weft_mpw_map(reply, 1);
		weft_mpw_str(reply, "seq");
		weft_mpw_uint(reply, seq);
	}
	return 0;
}

static int beb_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct beb *b = state;
	struct weft_mp_reader r;
	uint32_t n, plen;
	uint64_t version, type, seq;
	const uint8_t *payload;
	weft_mp_reader_init(&r, msg, len);
	if (weft_mp_read_array(&r, &n) || n != 4 || weft_mp_read_uint(&r, &version) || version != BEB_VERSION ||
	    weft_mp_read_uint(&r, &type) || type != BEB_DATA || weft_mp_read_uint(&r, &seq) ||
	    weft_mp_read_bin(&r, &payload, &plen) || weft_mp_remaining(&r) != 0)
		return WEFT_EDECODE;
	if (from >= b->env->n)
		return WEFT_EPROTO;
	if (b->bug == BEB_SKIP && b->env->self == 1 && from == 0)
		return 0;
	if (seq >= b->origins[from].low + BEB_WINDOW)
		return WEFT_ETOOBIG;
	beb_deliver(b, from, seq, payload, plen);
	return 0;
}

static void beb_info(void *state, struct weft_mpw *w)
{
	struct beb *b = state;
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "next_seq");
	weft_mpw_uint(w, b->next_seq);
}

static void beb_destroy(void *state)
{
	struct beb *b = state;
	for (uint32_t i = 0; b->origins && i < b->env->n; i++)
		weft_seqset_free(&b->origins[i]);
	free(b->origins);
	weft_mpw_free(&b->out);
}

/* ---- strategy "selective" ---- */

struct beb_selective {
	struct weft_env_wrap wrap;
	uint32_t *to;
	uint32_t nto;
	struct beb honest;
};

static int selective_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	struct beb_selective *s = (struct beb_selective *)weft_env_wrapped(env);
	for (uint32_t i = 0; i < s->nto; i++)
		if (s->to[i] != env->self)
			weft_env_send(s->wrap.inner, s->to[i], kind, msg, len);
	return 0;
}

/* Reads params.adversary.to (a list of node indices) into s->to. */
static int selective_targets(struct beb_selective *s, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct weft_mp_reader r;
	uint32_t pairs, count;
	weft_mp_reader_init(&r, params, plen);
	s->to = calloc(env->n, sizeof(uint32_t));
	if (s->to == NULL)
		abort();
	if (params && weft_mp_read_map(&r, &pairs) == 0) {
		for (uint32_t i = 0; i < pairs; i++) {
			const char *k;
			uint32_t kl;
			if (weft_mp_read_str(&r, &k, &kl) != 0)
				return WEFT_EINVAL;
			if (!(kl == 9 && memcmp(k, "adversary", 9) == 0)) {
				if (weft_mp_skip(&r) != 0)
					return WEFT_EINVAL;
				continue;
			}
			uint32_t apairs;
			if (weft_mp_read_map(&r, &apairs) != 0)
				return WEFT_EINVAL;
			for (uint32_t j = 0; j < apairs; j++) {
				if (weft_mp_read_str(&r, &k, &kl) != 0)
					return WEFT_EINVAL;
				if (!(kl == 2 && memcmp(k, "to", 2) == 0)) {
					if (weft_mp_skip(&r) != 0)
						return WEFT_EINVAL;
					continue;
				}
				if (weft_mp_read_array(&r, &count) != 0 || count > env->n)
					return WEFT_EINVAL;
				for (uint32_t t = 0; t < count; t++) {
					uint32_t node;
					if (weft_mp_read_u32(&r, &node) != 0 || node >= env->n)
						return WEFT_EINVAL;
					s->to[s->nto++] = node;
				}
				return 0;
			}
		}
	}
	for (uint32_t i = 0; i < env->n / 2; i++)
		s->to[s->nto++] = i;
	return 0;
}

static int selective_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct beb_selective *s = state;
	weft_env_wrap_init(&s->wrap, env);
	s->wrap.ops.multicast = selective_multicast;
	int rc = selective_targets(s, env, params, plen);
	return rc ? rc : beb_init(&s->honest, &s->wrap.env, params, plen);
}

static int selective_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	return beb_on_message(&((struct beb_selective *)state)->honest, from, msg, len);
}

static int selective_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	return beb_on_request(&((struct beb_selective *)state)->honest, req, len, reply);
}

static void selective_destroy(void *state)
{
	struct beb_selective *s = state;
	beb_destroy(&s->honest);
	free(s->to);
}

static const struct weft_proto_ops beb_selective_ops = {
	.abi = WEFT_PROTO_ABI,
	.name = "beb/selective",
	.state_size = sizeof(struct beb_selective),
	.init = selective_init,
	.on_message = selective_on_message,
	.on_request = selective_on_request,
	.destroy = selective_destroy,
};

static const struct weft_proto_strategy beb_strategies[] = {
	{"selective", "multicasts reach only params.adversary.to (default: the lower half of the nodes)",
	 &beb_selective_ops},
	{NULL, NULL, NULL},
};

const struct weft_proto_ops weft_proto_beb = {
	.abi = WEFT_PROTO_ABI,
	.name = "beb",
	.state_size = sizeof(struct beb),
	.init = beb_init,
	.on_message = beb_on_message,
	.on_request = beb_on_request,
	.info = beb_info,
	.destroy = beb_destroy,
	.strategies = beb_strategies,
};
