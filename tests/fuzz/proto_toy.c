/* tests/fuzz/proto_toy.c - libFuzzer target for the two toy protocols weftd
 * can also run (protocols/toy): best-effort broadcast (beb: DATA) and the
 * fixed-leader sequencer (seq: SUBMIT, ORDER), each message reaching
 * on_message of node 0 of 4 through the script driver of
 * tests/fuzz/lib/protofuzz.h (input format there).  Parameter sets (the
 * honest variants only; the "bug" ones misbehave on purpose): beb, seq
 * led by node 0 (us), seq led by node 1. */
#include "lib/protofuzz.h"

extern const struct weft_proto_ops weft_proto_beb;
extern const struct weft_proto_ops weft_proto_seq;


static int toy_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen);
static int toy_start(void *state);
static int toy_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len);
static void toy_on_timer(void *state, uint64_t id);
static int toy_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply);
static void toy_info(void *state, struct weft_mpw *w);
static void toy_destroy(void *state);

/* One state block holds whichever protocol the parameter set names
 * ("proto": 0 beb, 1 seq), so that one target drives both. */
struct toy {
	const struct weft_proto_ops *ops;
	_Alignas(16) unsigned char state[4096];
};

static const struct weft_proto_ops toy_ops = {
	.abi = WEFT_PROTO_ABI,
	.name = "toy",
	.state_size = sizeof(struct toy),
	.init = toy_init,
	.start = toy_start,
	.on_message = toy_on_message,
	.on_timer = toy_on_timer,
	.on_request = toy_on_request,
	.info = toy_info,
	.destroy = toy_destroy,
};

static int toy_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct toy *t = state;
	uint64_t which = 0;
	weft_params_uint(params, plen, "proto", &which);
	t->ops = which ? &weft_proto_seq : &weft_proto_beb;
	pf_check(t->ops->state_size <= sizeof(t->state), "toy state fits");
	return t->ops->init(t->state, env, params, plen);
}

static int toy_start(void *state)
{
	struct toy *t = state;
	return t->ops->start ? t->ops->start(t->state) : 0;
}

static int toy_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct toy *t = state;
	return t->ops->on_message(t->state, from, msg, len);
}

static void toy_on_timer(void *state, uint64_t id)
{
	struct toy *t = state;
	if (t->ops->on_timer)
		t->ops->on_timer(t->state, id);
}

static int toy_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct toy *t = state;
	return t->ops->on_request(t->state, req, len, reply);
}

static void toy_info(void *state, struct weft_mpw *w)
{
	struct toy *t = state;
	if (t->ops->info)
		t->ops->info(t->state, w);
	else
		weft_mpw_map(w, 0);
}

static void toy_destroy(void *state)
{
	struct toy *t = state;
	if (t->ops->destroy)
		t->ops->destroy(t->state);
}

static void params(unsigned int cfg, struct weft_mpw *w, const char **name)
{
	static const char *const names[] = {"beb", "seq-leader0", "seq-leader1"};
	*name = names[cfg];
	weft_mpw_map(w, cfg == 0 ? 1 : 2);
	weft_mpw_str(w, "proto");
	weft_mpw_uint(w, cfg == 0 ? 0 : 1);
	if (cfg) {
		weft_mpw_str(w, "leader");
		weft_mpw_uint(w, cfg - 1);
	}
}

static const struct pf_target target = {
	.ops = &toy_ops,
	.nconfigs = 3,
	.params = params,
	.request = pf_brb_request,
	.unique_deliveries = true,
	.msgpack_sends = true,
	.seed_horizon_us = 1000000,
	.seed_max = 3000,
};

PF_FUZZ_TARGET(target)
