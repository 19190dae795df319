/* bracha.c - Bracha's reliable broadcast (1987): SEND, ECHO, READY.
 *
 *   sender:  SEND(m) to all
 *   on the first SEND(m) from the sender:          ECHO(m) to all
 *   on ceil((n+f+1)/2) ECHO(m) or f+1 READY(m):    READY(m) to all (once)
 *   on 2f+1 READY(m):                              deliver m
 *
 * ECHO and READY carry the payload, so the protocol costs O(n^2 |m|) bits:
 * it is the reference the other protocols are measured against.  Safety:
 * two echo quorums intersect in f+1 nodes, one of them honest, and honest
 * nodes echo once, so no two digests both reach the echo quorum; a READY
 * needs an echo quorum or f+1 READYs (one honest), so all honest READYs
 * name the same digest (Agreement); 2f+1 READYs contain f+1 honest ones,
 * which make every honest node send READY, so all deliver (Totality).
 * docs/protocols/bracha.md has the full argument.
 *
 * Messages: [1, type, sender, seq, payload] with type SEND 0, ECHO 1, READY 2.
 * kv (beside the core's): "o" seq(8), our broadcast's payload until we
 * deliver it, so that a restart reopens it and sends its SEND again. */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "weft/bytes.h"
#include "weft/err.h"

enum { MSG_SEND = 0, MSG_ECHO = 1, MSG_READY = 2 };

/* A payload seen for one digest of an instance. */
struct candidate {
	uint8_t digest[WEFT_DIGEST_LEN];
	uint8_t *data;
	size_t len;
};

struct bracha_inst {
	struct brb_inst base;
	struct candidate *cands;  /* at most one per distinct digest voted (bounded by 2n) */
	uint32_t ncands;
	bool echoed, readied;
	uint8_t echo_digest[WEFT_DIGEST_LEN];
	uint8_t ready_digest[WEFT_DIGEST_LEN];
};

struct bracha {
	struct brb_core core;
};

static const char *const kind_names[] = {"bracha.send", "bracha.echo", "bracha.ready"};

static void inst_clear(struct brb_core *c, struct brb_inst *base)
{
	struct bracha_inst *i = (struct bracha_inst *)base;
	for (uint32_t k = 0; k < i->ncands; k++)
		free(i->cands[k].data);
	free(i->cands);
}

static const struct candidate *find_candidate(const struct bracha_inst *i, const uint8_t *digest)
{
	for (uint32_t k = 0; k < i->ncands; k++)
		if (memcmp(i->cands[k].digest, digest, WEFT_DIGEST_LEN) == 0)
			return &i->cands[k];
	return NULL;
}

static const struct candidate *keep_candidate(struct bracha_inst *i, const uint8_t *digest, const uint8_t *data,
					      size_t len)
{
	const struct candidate *have = find_candidate(i, digest);
	if (have)
		return have;
	i->cands = realloc(i->cands, (i->ncands + 1) * sizeof(*i->cands));
	if (i->cands == NULL)
		abort();
	struct candidate *c = &i->cands[i->ncands++];
	memcpy(c->digest, digest, WEFT_DIGEST_LEN);
	c->data = malloc(len ? len : 1);
	if (c->data == NULL)
		abort();
	memcpy(c->data, data, len);
	c->len = len;
	return c;
}

static void send_vote(struct brb_core *c, int type, struct bracha_inst *i, const struct candidate *cand)
{
	brb_write_header(c, (uint64_t)type, i->base.sender, i->base.seq, 1);
	weft_mpw_bin(&c->out, cand->data, cand->len);
	weft_env_multicast(c->env, kind_names[type], c->out.buf, c->out.len);
}

/* Our own broadcast's payload, kept from the request to its delivery so
 * that a restart reopens it: "o" seq(8). */
static size_t own_key(uint8_t k[9], uint64_t seq)
{
	k[0] = 'o';
	weft_be64_put(k + 1, seq);
	return 9;
}

/* Delivers when a digest has 2f+1 READYs and its payload is known. */
static void try_deliver(struct brb_core *c, struct bracha_inst *i)
{
	const uint8_t *d = brb_tally_reached(&i->base.tally[BRB_VOTE_READY], c->deliver_quorum);
	const struct candidate *cand = d ? find_candidate(i, d) : NULL;
	if (!cand)
		return;
	uint32_t sender = i->base.sender;
	uint64_t seq = i->base.seq;
	brb_deliver(c, &i->base, sender, seq, cand->data, cand->len, cand->digest, false);
	if (sender == c->self) {
		uint8_t key[9];
		c->env->ops->kv_del(c->env, key, own_key(key, seq));
	}
}

/* Sends READY(digest) unless we already sent one (this run or before a restart). */
static void ready(struct brb_core *c, struct bracha_inst *i, const uint8_t *digest)
{
	if (i->readied)
		return;
	uint8_t prior[WEFT_DIGEST_LEN];
	if (brb_vote_get(c, BRB_VOTE_READY, i->base.sender, i->base.seq, prior) == 0 &&
	    memcmp(prior, digest, WEFT_DIGEST_LEN) != 0)
		return; /* we said READY for another digest before a restart: never contradict it */
	const struct candidate *cand = find_candidate(i, digest);
	if (cand == NULL)
		return;
	brb_vote_put(c, BRB_VOTE_READY, i->base.sender, i->base.seq, digest);
	i->readied = true;
	memcpy(i->ready_digest, digest, WEFT_DIGEST_LEN);
	send_vote(c, MSG_READY, i, cand);
	brb_tally_add(c, &i->base.tally[BRB_VOTE_READY], c->self, digest);
}

static void check_thresholds(struct brb_core *c, struct bracha_inst *i)
{
	const uint8_t *d = brb_tally_reached(&i->base.tally[BRB_VOTE_ECHO], c->echo_quorum);
	if (d == NULL)
		d = brb_tally_reached(&i->base.tally[BRB_VOTE_READY], c->ready_quorum);
	if (d)
		ready(c, i, d);
	try_deliver(c, i);
}

/* ECHO(m) on the first SEND(m), or the same m after a restart. */
static void echo(struct brb_core *c, struct bracha_inst *i, const uint8_t *data, size_t len)
{
	uint8_t digest[WEFT_DIGEST_LEN], prior[WEFT_DIGEST_LEN];
	if (i->echoed)
		return;
	brb_payload_digest(c, i->base.sender, i->base.seq, data, len, digest);
	if (brb_vote_get(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, prior) == 0 &&
	    memcmp(prior, digest, WEFT_DIGEST_LEN) != 0)
		return; /* the sender equivocates: we echoed another message before */
	const struct candidate *cand = keep_candidate(i, digest, data, len);
	brb_vote_put(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, digest);
	i->echoed = true;
	memcpy(i->echo_digest, digest, WEFT_DIGEST_LEN);
	send_vote(c, MSG_ECHO, i, cand);
	brb_tally_add(c, &i->base.tally[BRB_VOTE_ECHO], c->self, digest);
	check_thresholds(c, i);
}

static void resend(struct brb_core *c, struct brb_inst *base)
{
	struct bracha_inst *i = (struct bracha_inst *)base;
	const struct candidate *e = i->echoed ? find_candidate(i, i->echo_digest) : NULL;
	if (base->sender == c->self && e)
		send_vote(c, MSG_SEND, i, e);
	if (e)
		send_vote(c, MSG_ECHO, i, e);
	const struct candidate *r = i->readied ? find_candidate(i, i->ready_digest) : NULL;
	if (r)
		send_vote(c, MSG_READY, i, r);
}

/* The core saw peer's STATUS lacking (sender, seq), delivered here at least
 * resend_ms ago.  Delivering took 2f+1 READYs, which made us READY first
 * (f+1 of them suffice), so we repeat our READY, with the retained payload:
 * this completes the instance at a peer that lost the votes when fewer than
 * f+1 nodes delivered (so that catch-up alone cannot). */
static void peer_lacks(struct brb_core *c, uint32_t peer, uint32_t sender, uint64_t seq)
{
	const uint8_t *data;
	size_t len;
	bool invalid;
	if (brb_retained_get(c, sender, seq, &data, &len, &invalid) != 0 || invalid)
		return;
	brb_write_header(c, MSG_READY, sender, seq, 1);
	weft_mpw_bin(&c->out, data, len);
	weft_env_send(c->env, peer, kind_names[MSG_READY], c->out.buf, c->out.len);
}

static const struct brb_proto bracha_proto = {
	.inst_size = sizeof(struct bracha_inst),
	.inst_clear = inst_clear,
	.resend = resend,
	.peer_lacks = peer_lacks,
};

struct own_list {
	uint64_t *seqs;
	uint32_t count, max;
};

static int list_own(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)val, (void)vlen;
	struct own_list *l = arg;
	if (klen != 9)
		return WEFT_ECORRUPT;
	if (l->count == l->max)
		return 1;
	l->seqs[l->count++] = weft_be64_get((const uint8_t *)key + 1);
	return 0;
}

/* After a restart: reopens our broadcasts not delivered yet (only the last
 * `window` seqs can be), with their payload and our ECHO, so the resend
 * timer sends their SEND again; records of delivered ones are dropped. */
static int restore_own(struct brb_core *c)
{
	struct own_list own = {.max = c->window}, *l = &own;
	uint8_t from[9];
	own.seqs = calloc(own.max, sizeof(*own.seqs));
	if (own.seqs == NULL)
		abort();
	own_key(from, c->next_seq > c->window ? c->next_seq - c->window : 0);
	int rc = c->env->ops->kv_scan(c->env, from, sizeof(from), "p", 1, list_own, l);
	for (uint32_t k = 0; rc >= 0 && k < l->count; k++) {
		uint8_t key[9], digest[WEFT_DIGEST_LEN];
		const void *v;
		size_t vlen;
		int why;
		own_key(key, l->seqs[k]);
		if (c->env->ops->kv_get(c->env, key, sizeof(key), &v, &vlen) != 0 || vlen > c->max_payload)
			continue;
		struct bracha_inst *i = brb_is_delivered(c, c->self, l->seqs[k])
						? NULL
						: (struct bracha_inst *)brb_inst_get(c, c->self, l->seqs[k], true, &why);
		if (i == NULL) {
			c->env->ops->kv_del(c->env, key, sizeof(key));
			continue;
		}
		brb_payload_digest(c, c->self, l->seqs[k], v, vlen, digest);
		keep_candidate(i, digest, v, vlen); /* copies it, before any other kv call */
		i->echoed = true;
		memcpy(i->echo_digest, digest, WEFT_DIGEST_LEN);
		brb_tally_add(c, &i->base.tally[BRB_VOTE_ECHO], c->self, digest);
	}
	free(own.seqs);
	return rc < 0 ? rc : 0;
}

static int bracha_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct bracha *b = state;
	return brb_core_init(&b->core, env, params, plen, &bracha_proto, b);
}

/* Our broadcasts reopen here, not at init: a parent names payloads
 * (weft_brb_ops.digest_with) between the two, and the payloads must be
 * named as they were when we voted for them. */
static int bracha_start(void *state)
{
	struct bracha *b = state;
	int rc = restore_own(&b->core);
	if (rc == 0)
		brb_core_start(&b->core);
	return rc;
}

static int bracha_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct bracha *b = state;
	struct brb_core *c = &b->core;
	uint64_t seq;
	int why = brb_own_begin(c, len, &seq);
	if (why != 0)
		return why;
	struct bracha_inst *i = (struct bracha_inst *)brb_inst_get(c, c->self, seq, true, &why);
	if (i == NULL)
		return WEFT_ESTATE;
	uint8_t digest[WEFT_DIGEST_LEN], key[9];
	brb_payload_digest(c, c->self, seq, req, len, digest);
	c->env->ops->kv_put(c->env, key, own_key(key, seq), req, len);
	send_vote(c, MSG_SEND, i, keep_candidate(i, digest, req, len));
	echo(c, i, req, len);
	if (reply) {
		weft_mpw_map(reply, 1);
		weft_mpw_str(reply, "seq");
		weft_mpw_uint(reply, seq);
	}
	return 0;
}

static int bracha_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct bracha *b = state;
	struct brb_core *c = &b->core;
	int rc = brb_core_on_message(c, from, msg, len);
	if (rc <= 0)
		return rc;
	struct weft_mp_reader r;
	uint32_t count, sender, plen;
	uint64_t type, seq;
	const uint8_t *payload;
	if (brb_read_header(&r, msg, len, c->n, &count, &type, &sender, &seq) != 0 || count != 5 || type > MSG_READY ||
	    weft_mp_read_bin(&r, &payload, &plen) || weft_mp_remaining(&r))
		return brb_reject(c, WEFT_EDECODE);
	if (plen > c->max_payload)
		return brb_reject(c, WEFT_ETOOBIG);
	if (type == MSG_SEND && from != sender)
		return brb_reject(c, WEFT_EPROTO); /* only the sender may SEND */
	int why;
	struct bracha_inst *i = (struct bracha_inst *)brb_inst_get(c, sender, seq, true, &why);
	if (i == NULL)
		return why == 2 ? WEFT_ETOOBIG : 0;
	if (type == MSG_SEND) {
		echo(c, i, payload, plen);
		return 0;
	}
	uint8_t digest[WEFT_DIGEST_LEN];
	brb_payload_digest(c, i->base.sender, i->base.seq, payload, plen, digest);
	enum brb_vote_kind kind = type == MSG_ECHO ? BRB_VOTE_ECHO : BRB_VOTE_READY;
	if (brb_tally_add(c, &i->base.tally[kind], from, digest) == 0)
		return 0; /* counted once */
	keep_candidate(i, digest, payload, plen);
	check_thresholds(c, i);
	return 0;
}

static void bracha_on_timer(void *state, uint64_t id)
{
	brb_core_on_timer(&((struct bracha *)state)->core, id);
}

static void bracha_info(void *state, struct weft_mpw *w)
{
	struct bracha *b = state;
	weft_mpw_map(w, 9);
	weft_mpw_str(w, "protocol");
	weft_mpw_str(w, "bracha");
	brb_core_info(&b->core, w);
}

static void bracha_destroy(void *state)
{
	brb_core_destroy(&((struct bracha *)state)->core);
}

BRB_EQUIVOCATE_STRATEGY(bracha, bracha);

const struct weft_proto_ops weft_proto_bracha = {
	.abi = WEFT_PROTO_ABI,
	.name = "bracha",
	.state_size = sizeof(struct bracha),
	.init = bracha_init,
	.start = bracha_start,
	.on_message = bracha_on_message,
	.on_timer = bracha_on_timer,
	.on_request = bracha_on_request,
	.info = bracha_info,
	.destroy = bracha_destroy,
	.strategies = bracha_strategies,
};
