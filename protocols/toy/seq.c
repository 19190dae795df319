/* seq.c - a fixed-leader sequencer, the simulator's toy ordering protocol.
 *
 * Requests go to the leader (node 0 unless params.leader), which numbers
 * them 0, 1, 2 ... and multicasts [1, ORDER, pos, origin, payload]; every
 * node outputs payloads in position order.  The leader orders a payload
 * once, however often the network duplicates its SUBMIT.  No fault tolerance at all: it
 * exists to exercise the ordering checkers.  The "bug" parameter breaks it
 * on purpose:
 *   fork  the leader swaps positions pairwise for odd nodes    (prefix)
 *   dup   node 1 outputs every payload twice                     (no_duplicates)
 *   drop  the leader silently drops every 5th submission         (inclusion) */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"
#include "weft/proto.h"

#define SEQ_VERSION 1
#define SEQ_SUBMIT 0
#define SEQ_ORDER 1
#define SEQ_WINDOW 4096

enum seq_bug { SEQ_OK, SEQ_FORK, SEQ_DUP, SEQ_DROP };

struct seq_slot {
	bool full;
	uint32_t origin;
	uint8_t *data;
	size_t len;
};

struct seq {
	struct weft_env *env;
	enum seq_bug bug;
	uint32_t leader;
	uint64_t next_pos;      /* leader: next position to assign */
	uint64_t submissions;   /* leader: submissions seen (for the drop bug) */
	uint64_t next_output;   /* next position to output */
	struct seq_slot *window; /* SEQ_WINDOW slots, indexed pos % SEQ_WINDOW */
	uint64_t *ordered;       /* leader: hash set of ordered payload digests (first 8 bytes) */
	size_t ocap, olen;
	struct weft_mpw out;
};

/* Leader: true when this payload was ordered already (a duplicated SUBMIT);
 * otherwise remembers it. */
static bool seq_seen(struct seq *s, const uint8_t *data, size_t len)
{
	uint8_t digest[32];
	uint64_t h;
	crypto_generichash(digest, sizeof(digest), data, len, NULL, 0);
	memcpy(&h, digest, 8);
	h |= 1; /* 0 marks an empty slot */
	if ((s->olen + 1) * 2 > s->ocap) {
		uint64_t *old = s->ordered;
		size_t oldcap = s->ocap;
		s->ocap = oldcap ? 2 * oldcap : 1024;
		s->ordered = calloc(s->ocap, sizeof(uint64_t));
		if (s->ordered == NULL)
			abort();
		for (size_t i = 0; i < oldcap; i++) {
			if (!old[i])
				continue;
			size_t j = old[i] & (s->ocap - 1);
			while (s->ordered[j])
				j = (j + 1) & (s->ocap - 1);
			s->ordered[j] = old[i];
		}
		free(old);
	}
	size_t j = h & (s->ocap - 1);
	for (; s->ordered[j]; j = (j + 1) & (s->ocap - 1))
		if (s->ordered[j] == h)
			return true;
	s->ordered[j] = h;
	s->olen++;
	return false;
}

static int seq_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct seq *s = state;
	s->env = env;
	weft_mpw_init(&s->out);
	s->window = calloc(SEQ_WINDOW, sizeof(*s->window));
	if (s->window == NULL)
		abort();
	uint64_t leader = 0;
	int rc = weft_params_uint(params, plen, "leader", &leader);
	if ((rc != 0 && rc != WEFT_NOTFOUND) || leader >= env->n)
		return WEFT_EINVAL;
	s->leader = (uint32_t)leader;
	if (weft_params_str_is(params, plen, "bug", "fork"))
		s->bug = SEQ_FORK;
	else if (weft_params_str_is(params, plen, "bug", "dup"))
		s->bug = SEQ_DUP;
	else if (weft_params_str_is(params, plen, "bug", "drop"))
		s->bug = SEQ_DROP;
	const void *v;
	size_t vlen;
	if (env->ops->kv_get(env, "next_pos", 8, &v, &vlen) == 0 && vlen == 8)
		memcpy(&s->next_pos, v, 8);
	if (env->ops->kv_get(env, "next_out", 8, &v, &vlen) == 0 && vlen == 8)
		memcpy(&s->next_output, v, 8);
	return 0;
}

static void seq_output_ready(struct seq *s)
{
	struct weft_env *env = s->env;
	for (;;) {
		struct seq_slot *slot = &s->window[s->next_output % SEQ_WINDOW];
		if (!slot->full)
			break;
		struct weft_delivery d = {.origin = slot->origin, .seq = s->next_output, .data = slot->data,
					  .len = slot->len};
		env->ops->deliver(env, &d);
		if (s->bug == SEQ_DUP && env->self == 1)
			env->ops->deliver(env, &d);
		free(slot->data);
		memset(slot, 0, sizeof(*slot));
		s->next_output++;
	}
	env->ops->kv_put(env, "next_out", 8, &s->next_output, 8);
}

static int seq_accept(struct seq *s, uint64_t pos, uint32_t origin, const uint8_t *data, size_t len)
{
	if (pos < s->next_output)
		return 0; /* already output (a duplicate) */
	if (pos >= s->next_output + SEQ_WINDOW)
		return WEFT_ETOOBIG;
	struct seq_slot *slot = &s->window[pos % SEQ_WINDOW];
	if (slot->full)
		return 0;
	slot->data = malloc(len ? len : 1);
	if (slot->data == NULL)
		abort();
	memcpy(slot->data, data, len);
	slot->len = len;
	slot->origin = origin;
	slot->full = true;
	seq_output_ready(s);
	return 0;
}

static void seq_encode_order(struct seq *s, uint64_t pos, uint32_t origin, const uint8_t *data, size_t len)
{
	weft_mpw_reset(&s->out);
	weft_mpw_array(&s->out, 5);
	weft_mpw_uint(&s->out, SEQ_VERSION);
	weft_mpw_uint(&s->out, SEQ_ORDER);
	weft_mpw_uint(&s->out, pos);
	weft_mpw_uint(&s->out, origin);
	weft_mpw_bin(&s->out, data, len);
}

/* Leader: assigns the next position and tells everyone. */
static void seq_order(struct seq *s, uint32_t origin, const uint8_t *data, size_t len)
{
	struct weft_env *env = s->env;
	if (seq_seen(s, data, len))
		return;
	if (s->bug == SEQ_DROP && ++s->submissions % 5 == 0)
		return;
	uint64_t pos = s->next_pos++;
	env->ops->kv_put(env, "next_pos", 8, &s->next_pos, 8);
	for (uint32_t to = 0; to < env->n; to++) {
		if (to == env->self)
			continue;
		uint64_t p = (s->bug == SEQ_FORK && (to & 1)) ? pos ^ 1 : pos;
		seq_encode_order(s, p, origin, data, len);
		weft_env_send(env, to, "seq.order", s->out.buf, s->out.len);
	}
	seq_accept(s, pos, origin, data, len);
}

static int seq_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct seq *s = state;
	struct weft_env *env = s->env;
	if (env->self == s->leader) {
		seq_order(s, env->self, req, len);
	} else {
		weft_mpw_reset(&s->out);
		weft_mpw_array(&s->out, 3);
		weft_mpw_uint(&s->out, SEQ_VERSION);
		weft_mpw_uint(&s->out, SEQ_SUBMIT);
		weft_mpw_bin(&s->out, req, len);
		weft_env_send(env, s->leader, "seq.submit", s->out.buf, s->out.len);
	}
	if (reply)
		weft_mpw_map(reply, 0);
	return 0;
}

static int seq_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct seq *s = state;
	struct weft_mp_reader r;
	uint32_t n, dlen;
	uint64_t version, type, pos, origin;
	const uint8_t *data;
	weft_mp_reader_init(&r, msg, len);
	if (weft_mp_read_array(&r, &n) || weft_mp_read_uint(&r, &version) || version != SEQ_VERSION ||
	    weft_mp_read_uint(&r, &type))
		return WEFT_EDECODE;
	if (type == SEQ_SUBMIT && n == 3) {
		if (weft_mp_read_bin(&r, &data, &dlen) || weft_mp_remaining(&r) != 0)
			return WEFT_EDECODE;
		if (s->env->self != s->leader)
			return WEFT_EPROTO;
		seq_order(s, from, data, dlen);
		return 0;
	}
	if (type == SEQ_ORDER && n == 5) {
		if (weft_mp_read_uint(&r, &pos) || weft_mp_read_uint(&r, &origin) ||
		    weft_mp_read_bin(&r, &data, &dlen) || weft_mp_remaining(&r) != 0)
			return WEFT_EDECODE;
		if (from != s->leader || origin >= s->env->n)
			return WEFT_EPROTO;
		return seq_accept(s, pos, (uint32_t)origin, data, dlen);
	}
	return WEFT_EDECODE;
}

static void seq_info(void *state, struct weft_mpw *w)
{
	struct seq *s = state;
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "next_output");
	weft_mpw_uint(w, s->next_output);
	weft_mpw_str(w, "leader");
	weft_mpw_uint(w, s->leader);
}

static void seq_destroy(void *state)
{
	struct seq *s = state;
	for (size_t i = 0; s->window && i < SEQ_WINDOW; i++)
		free(s->window[i].data);
	free(s->window);
	free(s->ordered);
	weft_mpw_free(&s->out);
}

const struct weft_proto_ops weft_proto_seq = {
	.abi = WEFT_PROTO_ABI,
	.name = "seq",
	.state_size = sizeof(struct seq),
	.init = seq_init,
	.on_message = seq_on_message,
	.on_request = seq_on_request,
	.info = seq_info,
	.destroy = seq_destroy,
};
