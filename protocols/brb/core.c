/* core.c - the shared machinery of the BRB protocols (see core.h): instance
 * windows, tallies, persisted votes and deliveries, catch-up.
 *
 * kv layout (inside the protocol's private store):
 *   "s"                      our next seq (8 bytes LE)
 *   "d" sender(4)            delivered seqset of that sender
 *   "v" kind(1) sender(4) seq(8)   our vote (32-byte digest), until delivery
 *   "p" sender(4) seq(8)     a retained delivered payload: flag(1) || data
 *                            (none when the parent keeps the payloads and
 *                            answers for them: weft_brb_ops.retain_from) */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "weft/brb.h"
#include "weft/bytes.h"
#include "weft/err.h"

#define TIMER_CATCHUP (BRB_TIMER_BASE + 0)
#define CATCHUP_PER_STATUS 8

static const uint8_t invalid_digest[WEFT_DIGEST_LEN] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static size_t inst_key(uint8_t *k, char tag, uint32_t sender, uint64_t seq)
{
	k[0] = (uint8_t)tag;
	weft_be32_put(k + 1, sender);
	weft_be64_put(k + 5, seq);
	return 13;
}

/* ---- set-up ---- */

static int load_delivered(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct brb_core *c = arg;
	if (klen != 5)
		return WEFT_ECORRUPT;
	uint32_t sender = weft_be32_get((const uint8_t *)key + 1);
	if (sender >= c->n)
		return WEFT_ECORRUPT;
	return weft_seqset_load(&c->senders[sender].delivered, val, vlen);
}

static int param_uint(const uint8_t *params, size_t plen, const char *key, uint64_t *out, uint64_t min,
		      uint64_t max)
{
	int rc = weft_params_uint(params, plen, key, out);
	if (rc == WEFT_NOTFOUND)
		return 0;
	if (rc != 0 || *out < min || *out > max)
		return WEFT_EINVAL;
	return 0;
}

int brb_core_init(struct brb_core *c, struct weft_env *env, const uint8_t *params, size_t plen,
		  const struct brb_proto *proto, void *owner)
{
	memset(c, 0, sizeof(*c));
	c->env = env;
	c->proto = proto;
	c->owner = owner;
	c->n = env->n;
	c->f = env->f;
	c->self = env->self;
	if (c->n < 1 || 3 * c->f + 1 > c->n)
		return WEFT_EINVAL;
	c->echo_quorum = (c->n + c->f + 2) / 2; /* ceil((n + f + 1) / 2) */
	c->ready_quorum = c->f + 1;
	c->deliver_quorum = 2 * c->f + 1;
	uint64_t window = 64, retain = 128, resend_ms = 500;
	c->max_payload = 4 << 20;
	if (param_uint(params, plen, "max_payload", &c->max_payload, 1, (uint64_t)1 << 30) ||
	    param_uint(params, plen, "window", &window, 1, 4096) || param_uint(params, plen, "retain", &retain, 0, 1 << 20) ||
	    param_uint(params, plen, "resend_ms", &resend_ms, 10, 3600000))
		return WEFT_EINVAL;
	c->window = (uint32_t)window;
	c->retain = (uint32_t)retain;
	c->resend_us = resend_ms * 1000;
	weft_mpw_init(&c->out);
	c->senders = calloc(c->n, sizeof(*c->senders));
	c->answered_us = calloc(c->n, sizeof(*c->answered_us));
	if (c->senders == NULL || c->answered_us == NULL)
		abort();
	for (uint32_t s = 0; s < c->n; s++) {
		c->senders[s].open = calloc(c->window, sizeof(struct brb_inst *));
		c->senders[s].recent = calloc(c->window, sizeof(struct brb_recent));
		if (c->senders[s].open == NULL || c->senders[s].recent == NULL)
			abort();
	}
	const void *v;
	size_t vlen;
	if (env->ops->kv_get(env, "s", 1, &v, &vlen) == 0 && vlen == 8)
		memcpy(&c->next_seq, v, 8);
	return env->ops->kv_scan(env, "d", 1, "e", 1, load_delivered, c);
}

static void tally_clear(struct brb_tally *t)
{
	free(t->voted);
	free(t->entries);
	memset(t, 0, sizeof(*t));
}

static void inst_free(struct brb_core *c, struct brb_inst *i)
{
	if (c->proto->inst_clear)
		c->proto->inst_clear(c, i);
	for (int k = 0; k < BRB_VOTE_KINDS; k++)
		tally_clear(&i->tally[k]);
	free(i);
}

void brb_core_destroy(struct brb_core *c)
{
	for (uint32_t s = 0; c->senders && s < c->n; s++) {
		for (uint32_t w = 0; w < c->window; w++)
			if (c->senders[s].open[w])
				inst_free(c, c->senders[s].open[w]);
		free(c->senders[s].open);
		free(c->senders[s].recent);
		weft_seqset_free(&c->senders[s].delivered);
	}
	free(c->senders);
	c->senders = NULL;
	free(c->answered_us);
	c->answered_us = NULL;
	weft_mpw_free(&c->out);
}

void brb_core_start(struct brb_core *c)
{
	c->env->ops->set_timer(c->env, TIMER_CATCHUP, c->resend_us);
}

uint64_t brb_next_seq(struct brb_core *c)
{
	uint64_t seq = c->next_seq++;
	c->env->ops->kv_put(c->env, "s", 1, &c->next_seq, 8);
	return seq;
}

int brb_own_begin(struct brb_core *c, size_t len, uint64_t *seq)
{
	if (len > c->max_payload)
		return WEFT_ETOOBIG;
	if (c->next_seq >= c->senders[c->self].delivered.low + c->window)
		return WEFT_EAGAIN;
	*seq = brb_next_seq(c);
	return 0;
}

/* ---- messages ---- */

int brb_read_header(struct weft_mp_reader *r, const uint8_t *msg, size_t len, uint32_t n, uint32_t *count,
		    uint64_t *type, uint32_t *sender, uint64_t *seq)
{
	uint64_t version;
	weft_mp_reader_init(r, msg, len);
	if (weft_mp_read_array(r, count) || *count < 4 || weft_mp_read_uint(r, &version) || version != BRB_VERSION ||
	    weft_mp_read_uint(r, type) || weft_mp_read_u32(r, sender) || *sender >= n || weft_mp_read_uint(r, seq))
		return WEFT_EDECODE;
	return 0;
}

void brb_write_header(struct brb_core *c, uint64_t type, uint32_t sender, uint64_t seq, uint32_t fields)
{
	weft_mpw_reset(&c->out);
	weft_mpw_array(&c->out, 4 + fields);
	weft_mpw_uint(&c->out, BRB_VERSION);
	weft_mpw_uint(&c->out, type);
	weft_mpw_uint(&c->out, sender);
	weft_mpw_uint(&c->out, seq);
}

/* ---- instances and tallies ---- */

bool brb_is_delivered(const struct brb_core *c, uint32_t sender, uint64_t seq)
{
	return weft_seqset_has(&c->senders[sender].delivered, seq);
}

struct brb_inst *brb_inst_get(struct brb_core *c, uint32_t sender, uint64_t seq, bool create, int *why)
{
	struct brb_sender_state *s = &c->senders[sender];
	*why = 0;
	if (weft_seqset_has(&s->delivered, seq)) {
		*why = 1;
		return NULL;
	}
	if (seq >= s->delivered.low + c->window) {
		*why = 2;
		c->beyond_window++;
		weft_env_metric(c->env, "brb.beyond_window", 1);
		return NULL;
	}
	struct brb_inst **slot = &s->open[seq % c->window];
	if (*slot && (*slot)->seq == seq)
		return *slot;
	if (!create)
		return NULL;
	if (*slot) /* a stale instance of an older seq: cannot be open any more */
		inst_free(c, *slot);
	struct brb_inst *i = calloc(1, c->proto->inst_size);
	if (i == NULL)
		abort();
	i->sender = sender;
	i->seq = seq;
	i->opened_us = weft_env_now(c->env);
	*slot = i;
	if (c->proto->inst_restore)
		c->proto->inst_restore(c, i);
	return i;
}

uint32_t brb_tally_add(struct brb_core *c, struct brb_tally *t, uint32_t voter, const uint8_t digest[WEFT_DIGEST_LEN])
{
	if (t->voted == NULL) {
		t->voted = calloc((c->n + 7) / 8, 1);
		if (t->voted == NULL)
			abort();
	}
	if (t->voted[voter / 8] & (1u << (voter % 8))) {
		c->duplicates++;
		return 0;
	}
	t->voted[voter / 8] |= (uint8_t)(1u << (voter % 8));
	for (uint32_t e = 0; e < t->nentries; e++) {
		if (memcmp(t->entries[e].digest, digest, WEFT_DIGEST_LEN) == 0)
			return ++t->entries[e].count;
	}
	if (t->nentries > 0)
		c->equivocations++; /* votes for a second digest in one instance */
	t->entries = realloc(t->entries, (t->nentries + 1) * sizeof(*t->entries));
	if (t->entries == NULL)
		abort();
	memcpy(t->entries[t->nentries].digest, digest, WEFT_DIGEST_LEN);
	t->entries[t->nentries].count = 1;
	return t->entries[t->nentries++].count;
}

const uint8_t *brb_tally_reached(const struct brb_tally *t, uint32_t quorum)
{
	for (uint32_t e = 0; e < t->nentries; e++)
		if (t->entries[e].count >= quorum)
			return t->entries[e].digest;
	return NULL;
}

uint32_t brb_tally_count(const struct brb_tally *t, const uint8_t digest[WEFT_DIGEST_LEN])
{
	for (uint32_t e = 0; e < t->nentries; e++)
		if (memcmp(t->entries[e].digest, digest, WEFT_DIGEST_LEN) == 0)
			return t->entries[e].count;
	return 0;
}

/* ---- persisted votes ---- */

static size_t vote_key(uint8_t *k, enum brb_vote_kind kind, uint32_t sender, uint64_t seq)
{
	k[0] = 'v';
	k[1] = (uint8_t)kind;
	weft_be32_put(k + 2, sender);
	weft_be64_put(k + 6, seq);
	return 14;
}

int brb_vote_get_extra(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		       uint8_t digest[WEFT_DIGEST_LEN], const uint8_t **extra, size_t *extra_len)
{
	uint8_t k[14];
	const void *v;
	size_t vlen;
	int rc = c->env->ops->kv_get(c->env, k, vote_key(k, kind, sender, seq), &v, &vlen);
	if (rc != 0)
		return rc;
	if (vlen < WEFT_DIGEST_LEN)
		return WEFT_ECORRUPT;
	memcpy(digest, v, WEFT_DIGEST_LEN);
	if (extra) {
		*extra = (const uint8_t *)v + WEFT_DIGEST_LEN;
		*extra_len = vlen - WEFT_DIGEST_LEN;
	}
	return 0;
}

int brb_vote_get(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		 uint8_t digest[WEFT_DIGEST_LEN])
{
	return brb_vote_get_extra(c, kind, sender, seq, digest, NULL, NULL);
}

int brb_vote_put_extra(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		       const uint8_t digest[WEFT_DIGEST_LEN], const uint8_t *extra, size_t extra_len)
{
	uint8_t k[14];
	uint8_t *rec = malloc(WEFT_DIGEST_LEN + extra_len);
	if (rec == NULL)
		abort();
	memcpy(rec, digest, WEFT_DIGEST_LEN);
	if (extra_len)
		memcpy(rec + WEFT_DIGEST_LEN, extra, extra_len);
	int rc = c->env->ops->kv_put(c->env, k, vote_key(k, kind, sender, seq), rec, WEFT_DIGEST_LEN + extra_len);
	free(rec);
	return rc;
}

int brb_vote_put(struct brb_core *c, enum brb_vote_kind kind, uint32_t sender, uint64_t seq,
		 const uint8_t digest[WEFT_DIGEST_LEN])
{
	return brb_vote_put_extra(c, kind, sender, seq, digest, NULL, 0);
}

/* ---- delivery ---- */

void brb_payload_digest(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t *data, size_t len,
			uint8_t out[WEFT_DIGEST_LEN])
{
	if (c->digest_fn)
		c->digest_fn(c->digest_ctx, sender, seq, data, len, out);
	else
		weft_hash(out, data, len);
}

/* The open instance (sender, seq), or NULL. */
static struct brb_inst *open_inst(struct brb_core *c, uint32_t sender, uint64_t seq)
{
	struct brb_inst *i = c->senders[sender].open[seq % c->window];
	return i && i->seq == seq ? i : NULL;
}

void brb_deliver(struct brb_core *c, struct brb_inst *i, uint32_t sender, uint64_t seq, const uint8_t *data,
		 size_t len, const uint8_t *digest, bool invalid)
{
	struct weft_env *env = c->env;
	struct brb_sender_state *s = &c->senders[sender];
	if (weft_seqset_has(&s->delivered, seq))
		return;
	weft_seqset_add(&s->delivered, seq);
	s->recent[seq % c->window] = (struct brb_recent){seq, weft_env_now(env)};
	uint8_t key[13];
	uint8_t dkey[5] = {'d'};
	weft_be32_put(dkey + 1, sender);
	weft_seqset_save(&s->delivered, env, dkey, sizeof(dkey));
	struct brb_inst *open = i ? i : open_inst(c, sender, seq);
	if (open && c->proto->inst_delivered)
		c->proto->inst_delivered(c, open);
	/* Votes of a delivered instance are never needed again. */
	for (int k = 0; k < BRB_VOTE_KINDS; k++) {
		uint8_t vk[14];
		env->ops->kv_del(env, vk, vote_key(vk, (enum brb_vote_kind)k, sender, seq));
	}
	if (c->retain && c->payload_get == NULL) {
		uint8_t *rec = malloc(len + 1);
		if (rec == NULL)
			abort();
		rec[0] = invalid;
		if (len)
			memcpy(rec + 1, data, len);
		env->ops->kv_put(env, key, inst_key(key, 'p', sender, seq), rec, len + 1);
		free(rec);
		if (seq >= c->retain)
			env->ops->kv_del(env, key, inst_key(key, 'p', sender, seq - c->retain));
	}
	struct weft_delivery d = {.origin = sender, .seq = seq, .data = invalid ? NULL : data,
				  .len = invalid ? 0 : len, .invalid = invalid, .digest = invalid ? NULL : digest};
	env->ops->deliver(env, &d);
	c->delivered++;
	weft_env_metric(env, "brb.delivered", 1);
	/* Free the instance after the upcall (data may point into it). */
	struct brb_inst **slot = &s->open[seq % c->window];
	if (i == NULL)
		i = open_inst(c, sender, seq);
	if (i) {
		if (*slot == i)
			*slot = NULL;
		inst_free(c, i);
	}
}

void brb_skip(struct brb_core *c, uint32_t sender, uint64_t below)
{
	struct brb_sender_state *s = &c->senders[sender];
	if (below <= s->delivered.low)
		return;
	for (uint32_t w = 0; w < c->window; w++) {
		struct brb_inst *i = s->open[w];
		if (i && i->seq < below) {
			s->open[w] = NULL;
			inst_free(c, i);
		}
	}
	/* Everything below `below` counts as delivered; what was delivered
	 * above it stays in the set. */
	struct weft_seqset next = {.low = below};
	for (uint32_t k = 0; k < s->delivered.nabove; k++)
		if (s->delivered.above[k] >= below)
			weft_seqset_add(&next, s->delivered.above[k]);
	weft_seqset_free(&s->delivered);
	s->delivered = next;
	uint8_t dkey[5] = {'d'};
	weft_be32_put(dkey + 1, sender);
	weft_seqset_save(&s->delivered, c->env, dkey, sizeof(dkey));
	if (sender == c->self && c->next_seq < below) {
		c->next_seq = below;
		c->env->ops->kv_put(c->env, "s", 1, &c->next_seq, 8);
	}
}

/* ---- catch-up ---- */

/* STATUS: per sender [low, bitmap of the delivered seqs in [low, low+window)],
 * so that peers can offer instances delivered past a gap that a Byzantine
 * sender left (an instance nobody will ever deliver). */
static void send_status(struct brb_core *c)
{
	size_t nbytes = (c->window + 7) / 8;
	uint8_t *bits = malloc(nbytes);
	if (bits == NULL)
		abort();
	brb_write_header(c, BRB_MSG_STATUS, c->self, 0, 1);
	weft_mpw_array(&c->out, c->n);
	for (uint32_t s = 0; s < c->n; s++) {
		const struct weft_seqset *d = &c->senders[s].delivered;
		memset(bits, 0, nbytes);
		for (uint32_t k = 0; k < d->nabove; k++)
			if (d->above[k] - d->low < c->window)
				bits[(d->above[k] - d->low) / 8] |= (uint8_t)(1u << ((d->above[k] - d->low) % 8));
		weft_mpw_array(&c->out, 2);
		weft_mpw_uint(&c->out, d->low);
		weft_mpw_bin(&c->out, bits, nbytes);
	}
	free(bits);
	weft_env_multicast(c->env, "brb.status", c->out.buf, c->out.len);
}

bool brb_core_on_timer(struct brb_core *c, uint64_t id)
{
	if (id != TIMER_CATCHUP)
		return false;
	uint64_t now = weft_env_now(c->env);
	send_status(c);
	for (uint32_t s = 0; s < c->n; s++) {
		for (uint32_t w = 0; w < c->window; w++) {
			struct brb_inst *i = c->senders[s].open[w];
			if (i && now - i->opened_us >= c->resend_us && c->proto->resend)
				c->proto->resend(c, i);
		}
	}
	c->env->ops->set_timer(c->env, TIMER_CATCHUP, c->resend_us);
	return true;
}

int brb_retained_get(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t **data, size_t *len,
		     bool *invalid)
{
	if (c->payload_get) {
		*invalid = false;
		return c->payload_get(c->payload_ctx, sender, seq, data, len);
	}
	uint8_t key[13];
	const void *v;
	size_t vlen;
	int rc = c->env->ops->kv_get(c->env, key, inst_key(key, 'p', sender, seq), &v, &vlen);
	if (rc != 0)
		return rc;
	if (vlen < 1)
		return WEFT_ECORRUPT;
	*invalid = ((const uint8_t *)v)[0] != 0;
	*data = (const uint8_t *)v + 1;
	*len = vlen - 1;
	return 0;
}

/* Sends what we retain of sender's instance q to a lagging peer. */
static void offer(struct brb_core *c, uint32_t peer, uint32_t sender, uint64_t q)
{
	const uint8_t *data;
	size_t len;
	bool invalid;
	if (brb_retained_get(c, sender, q, &data, &len, &invalid) != 0)
		return;
	brb_write_header(c, BRB_MSG_DELIVERED, sender, q, 2);
	weft_mpw_bool(&c->out, invalid);
	weft_mpw_bin(&c->out, data, len);
	weft_env_send(c->env, peer, "brb.delivered", c->out.buf, c->out.len);
}

/* True when (sender, q) was delivered here long enough ago that a peer's
 * STATUS lacking it is not just in flight (older deliveries: true). */
static bool delivered_long_ago(struct brb_core *c, uint32_t sender, uint64_t q)
{
	const struct brb_recent *r = &c->senders[sender].recent[q % c->window];
	return r->seq != q || weft_env_now(c->env) - r->at_us >= c->resend_us;
}

static int on_status(struct brb_core *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t count, pair, blen;
	const uint8_t *bits;
	if (weft_mp_read_array(r, &count) || count != c->n)
		return WEFT_EDECODE;
	/* Answer each peer at most once per resend_ms / 2: STATUS costs little
	 * to send, the answers (payloads) do not. */
	uint64_t now = weft_env_now(c->env);
	bool answer = !(c->answered_us[from] && now + 1 - c->answered_us[from] < c->resend_us / 2);
	if (answer)
		c->answered_us[from] = now + 1;
	for (uint32_t s = 0; s < c->n; s++) {
		uint64_t their;
		if (weft_mp_read_array(r, &pair) || pair != 2 || weft_mp_read_uint(r, &their) ||
		    weft_mp_read_bin(r, &bits, &blen) || blen != (c->window + 7) / 8)
			return WEFT_EDECODE;
		if (c->retain == 0 || !answer)
			continue;
		const struct weft_seqset *mine = &c->senders[s].delivered;
		/* We retain only the last `retain` deliveries of each sender, and
		 * offer at most CATCHUP_PER_STATUS of them per STATUS. */
		uint64_t top = mine->nabove ? mine->above[mine->nabove - 1] + 1 : mine->low;
		uint64_t oldest = top > c->retain ? top - c->retain : 0;
		unsigned offered = 0;
		for (uint64_t q = their > oldest ? their : oldest; q < top && offered < CATCHUP_PER_STATUS; q++) {
			bool they_have = q - their < c->window && (bits[(q - their) / 8] & (1u << ((q - their) % 8)));
			if (they_have || !weft_seqset_has(mine, q) || !delivered_long_ago(c, s, q))
				continue;
			offer(c, from, s, q);
			if (c->proto->peer_lacks)
				c->proto->peer_lacks(c, from, s, q);
			offered++;
		}
	}
	return weft_mp_remaining(r) ? WEFT_EDECODE : 0;
}

static int on_delivered(struct brb_core *c, uint32_t from, uint32_t sender, uint64_t seq, struct weft_mp_reader *r)
{
	bool invalid;
	const uint8_t *data;
	uint32_t len;
	if (weft_mp_read_bool(r, &invalid) || weft_mp_read_bin(r, &data, &len) || weft_mp_remaining(r))
		return WEFT_EDECODE;
	if (len > c->max_payload || (invalid && len))
		return WEFT_EPROTO;
	int why;
	struct brb_inst *i = brb_inst_get(c, sender, seq, true, &why);
	if (i == NULL)
		return why == 2 ? WEFT_ETOOBIG : 0;
	uint8_t digest[WEFT_DIGEST_LEN];
	if (invalid)
		memcpy(digest, invalid_digest, sizeof(digest));
	else
		brb_payload_digest(c, sender, seq, data, len, digest);
	uint32_t count = brb_tally_add(c, &i->tally[BRB_VOTE_CATCHUP], from, digest);
	if (count >= c->ready_quorum) {
		c->caught_up++;
		weft_env_metric(c->env, "brb.caught_up", 1);
		brb_deliver(c, i, sender, seq, data, len, digest, invalid);
	}
	return 0;
}

static int core_message(struct brb_core *c, uint32_t from, const uint8_t *msg, size_t len)
{
	struct weft_mp_reader r;
	uint32_t count, sender;
	uint64_t type, seq;
	if (brb_read_header(&r, msg, len, c->n, &count, &type, &sender, &seq) != 0)
		return WEFT_EDECODE;
	if (type == BRB_MSG_STATUS && count == 5 && sender == from)
		return on_status(c, from, &r);
	if (type == BRB_MSG_DELIVERED && count == 6)
		return on_delivered(c, from, sender, seq, &r);
	if (type == BRB_MSG_STATUS || type == BRB_MSG_DELIVERED)
		return WEFT_EDECODE;
	return 1;
}

int brb_reject(struct brb_core *c, int rc)
{
	c->rejected++;
	weft_env_metric(c->env, "brb.rejected", 1);
	return rc;
}

int brb_core_on_message(struct brb_core *c, uint32_t from, const uint8_t *msg, size_t len)
{
	int rc = core_message(c, from, msg, len);
	/* Beyond the window is counted apart (beyond_window). */
	return rc < 0 && rc != WEFT_ETOOBIG ? brb_reject(c, rc) : rc;
}

void brb_core_info(struct brb_core *c, struct weft_mpw *w)
{
	weft_mpw_str(w, "next_seq");
	weft_mpw_uint(w, c->next_seq);
	weft_mpw_str(w, "delivered");
	weft_mpw_uint(w, c->delivered);
	weft_mpw_str(w, "caught_up");
	weft_mpw_uint(w, c->caught_up);
	weft_mpw_str(w, "rejected");
	weft_mpw_uint(w, c->rejected);
	weft_mpw_str(w, "beyond_window");
	weft_mpw_uint(w, c->beyond_window);
	weft_mpw_str(w, "duplicate_votes");
	weft_mpw_uint(w, c->duplicates);
	weft_mpw_str(w, "equivocations");
	weft_mpw_uint(w, c->equivocations);
	uint32_t open = 0;
	for (uint32_t s = 0; s < c->n; s++)
		for (uint32_t k = 0; k < c->window; k++)
			open += c->senders[s].open[k] != NULL;
	weft_mpw_str(w, "open_instances");
	weft_mpw_uint(w, open);
}

/* ---- the shared strategy "equivocate" (core.h) ---- */

static struct brb_equivocate *equivocator_of(struct weft_env *env)
{
	return (struct brb_equivocate *)((char *)weft_env_wrapped(env) - offsetof(struct brb_equivocate, wrap));
}

/* msg to `to` (UINT32_MAX: every peer); our broadcasts' first message
 * with its payload's last byte flipped to the audience. */
static int equivocate_send(struct brb_equivocate *q, uint32_t to, const char *kind, const uint8_t *msg, size_t len)
{
	struct weft_env *in = q->wrap.inner;
	struct weft_mp_reader r;
	uint32_t count, sender, plen;
	uint64_t type, seq;
	const uint8_t *payload;
	if (brb_read_header(&r, msg, len, in->n, &count, &type, &sender, &seq) != 0 || type != 0 || count != 5 ||
	    sender != in->self || weft_mp_read_bin(&r, &payload, &plen) != 0 || plen == 0 || weft_mp_remaining(&r))
		return to == UINT32_MAX ? weft_env_multicast(in, kind, msg, len) : weft_env_send(in, to, kind, msg, len);
	weft_mpw_reset(&q->out);
	weft_mpw_raw(&q->out, msg, len);
	q->out.buf[len - 1] ^= 1; /* the payload is the message's last field */
	for (uint32_t p = 0; p < in->n; p++)
		if (p != in->self && (to == UINT32_MAX || to == p))
			weft_env_send(in, p, kind, q->audience[p] ? q->out.buf : msg, len);
	return 0;
}

static int equivocate_unicast(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	return equivocate_send(equivocator_of(env), to, kind, msg, len);
}

static int equivocate_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	return equivocate_send(equivocator_of(env), UINT32_MAX, kind, msg, len);
}

int brb_equivocate_init(struct brb_equivocate *q, struct weft_env *env, const uint8_t *params, size_t plen)
{
	weft_env_wrap_init(&q->wrap, env);
	q->wrap.ops.send = equivocate_unicast;
	q->wrap.ops.multicast = equivocate_multicast;
	weft_mpw_init(&q->out);
	q->audience = calloc(env->n ? env->n : 1, 1);
	if (q->audience == NULL)
		abort();
	const uint8_t *adv, *list;
	size_t alen, llen;
	struct weft_mp_reader r;
	uint32_t count, p;
	if (weft_params_value(params, plen, "adversary", &adv, &alen) != 0 ||
	    weft_params_value(adv, alen, "audience", &list, &llen) != 0) {
		for (uint32_t i = 0, taken = 0; taken < (env->n - 1) / 2; i++)
			if (env->n - 1 - i != env->self)
				q->audience[env->n - 1 - i] = 1, taken++;
		return 0;
	}
	weft_mp_reader_init(&r, list, llen);
	if (weft_mp_read_array(&r, &count) != 0)
		return WEFT_EINVAL;
	for (uint32_t i = 0; i < count; i++) {
		if (weft_mp_read_u32(&r, &p) != 0 || p >= env->n)
			return WEFT_EINVAL;
		q->audience[p] = 1;
	}
	return 0;
}

void brb_equivocate_free(struct brb_equivocate *q)
{
	free(q->audience);
	q->audience = NULL;
	weft_mpw_free(&q->out);
}

/* ---- the family operations (weft/brb.h) ----
 * Every BRB of the family keeps its struct brb_core first in its state. */

static void family_skip(void *state, uint32_t sender, uint64_t below)
{
	brb_skip(state, sender, below);
}

static uint64_t family_next_seq(void *state)
{
	return ((struct brb_core *)state)->next_seq;
}

static uint32_t family_window(void *state)
{
	return ((struct brb_core *)state)->window;
}

static void family_retain_from(void *state, weft_brb_payload_fn get, void *ctx)
{
	struct brb_core *c = state;
	c->payload_get = get;
	c->payload_ctx = ctx;
}

static void family_digest_with(void *state, weft_brb_digest_fn fn, void *ctx)
{
	struct brb_core *c = state;
	c->digest_fn = fn;
	c->digest_ctx = ctx;
}

static const struct weft_brb_ops core_family = {
	.skip = family_skip,
	.next_seq = family_next_seq,
	.window = family_window,
	.retain_from = family_retain_from,
	.digest_with = family_digest_with,
};

extern const struct weft_proto_ops weft_proto_bracha, weft_proto_echo, weft_proto_coded, weft_proto_amortized;

const struct weft_brb_ops *weft_brb_family(const struct weft_proto_ops *ops)
{
	const struct weft_proto_ops *const members[] = {&weft_proto_bracha, &weft_proto_echo, &weft_proto_coded,
							&weft_proto_amortized};
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
		if (ops == members[i])
			return &core_family;
	return NULL;
}

int weft_brb_message_instance(const uint8_t *msg, size_t len, uint32_t *sender, uint64_t *seq, uint64_t *type)
{
	struct weft_mp_reader r;
	uint32_t count;
	if (brb_read_header(&r, msg, len, UINT32_MAX, &count, type, sender, seq) != 0 || *type == BRB_MSG_STATUS)
		return WEFT_EDECODE;
	return 0;
}
