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
 *   forge    node 1 delivers a message nobody sent  (integrity, totality) */
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"
#include "weft/proto.h"

enum beb_bug { BEB_OK, BEB_DOUBLE, BEB_CORRUPT, BEB_SKIP, BEB_FORGE };

struct beb {
	struct weft_env *env;
	enum beb_bug bug;
	uint64_t next_seq;
	bool forged;
	struct weft_mpw out;
};

#define BEB_VERSION 1
#define BEB_DATA 0

static void delivered_key(uint8_t key[13], uint32_t origin, uint64_t seq)
{
	key[0] = 'd';
	for (int i = 0; i < 4; i++)
		key[1 + i] = (uint8_t)(origin >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		key[5 + i] = (uint8_t)(seq >> (56 - 8 * i));
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
	const void *v;
	size_t vlen;
	if (env->ops->kv_get(env, "seq", 3, &v, &vlen) == 0 && vlen == 8)
		memcpy(&b->next_seq, v, 8);
	return 0;
}

/* Delivers (origin, seq, data) unless already delivered; applies the bug. */
static void beb_deliver(struct beb *b, uint32_t origin, uint64_t seq, const uint8_t *data, size_t len)
{
	struct weft_env *env = b->env;
	uint8_t key[13];
	const void *v;
	size_t vlen;
	delivered_key(key, origin, seq);
	if (env->ops->kv_get(env, key, sizeof(key), &v, &vlen) == 0)
		return;
	env->ops->kv_put(env, key, sizeof(key), "", 0);
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
		struct weft_delivery f = {.origin = 2 % env->n, .seq = 1000000, .data = fake, .len = sizeof(fake)};
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
	weft_mpw_free(&b->out);
}

const struct weft_proto_ops weft_proto_beb = {
	.abi = WEFT_PROTO_ABI,
	.name = "beb",
	.state_size = sizeof(struct beb),
	.init = beb_init,
	.on_message = beb_on_message,
	.on_request = beb_on_request,
	.info = beb_info,
	.destroy = beb_destroy,
};
