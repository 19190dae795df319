/* lock.c - conditional payments across channels (docs/protocols/channels.md
 * "Payments across channels"): a LOCK pays its payee only against the
 * preimage of a hash, so a payment through a member of two channels is
 * atomic, both legs or neither.  This file keeps what a node knows of
 * locks (its invoices' preimages 'i', every preimage it learned 'x', the
 * route a lock goes on by 'f') and acts on them at each tick:
 *   - a payee with the preimage, once the lock is in an all-signed root,
 *     asks the payer's node to unlock (UNLOCK_ASK); if the payer does not
 *     in time, it closes the channel and claims the lock on the ledger;
 *   - a payee that is asked to forward locks the next hop once its own
 *     lock is rooted, or gives the lock up (REFUND_ASK) when it cannot or
 *     the next hop was refunded;
 *   - a payer whose lock expired proposes the refund, and closes the
 *     channel if its payee will not agree (the ledger refunds an unclaimed
 *     lock after its expiry);
 *   - on a closing channel, a payee claims every posted lock whose
 *     preimage it knows; a claim anyone makes teaches its preimage.
 * A payee agrees to a refund only while it does not know the preimage and
 * no lock it forwarded is still open (or once the lock expired); a payer
 * unlocks only before the expiry. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/util.h"

#include "chan.h"

#define CLAIM_RETRY_US (3 * 1000000ull)
#define FWD_KEY_LEN (1 + 32 + 4 + 8)

/* A route's hops as received: [[channel, to, amount, expiry]...]. */
int lock_route_read(struct weft_mp_reader *r, struct route *rt)
{
	uint32_t count, four;
	memset(rt, 0, sizeof(*rt));
	if (weft_mp_read_array(r, &count) != 0 || count == 0 || count > ROUTE_MAX)
		return WEFT_EDECODE;
	rt->n = count;
	for (uint32_t i = 0; i < count; i++) {
		struct hop *h = &rt->hop[i];
		if (weft_mp_read_array(r, &four) != 0 || four != 4 || weft_mp_read_bin_fixed(r, h->channel, 32) != 0 ||
		    weft_mp_read_bin_fixed(r, h->to, WEFT_LEDGER_KEY_LEN) != 0 || weft_mp_read_uint(r, &h->amount) != 0 ||
		    weft_mp_read_uint(r, &h->expiry) != 0 || h->amount == 0)
			return WEFT_EDECODE;
	}
	return 0;
}

void lock_route_write(struct weft_mpw *w, const struct route *rt)
{
	weft_mpw_array(w, rt->n);
	for (uint32_t i = 0; i < rt->n; i++) {
		const struct hop *h = &rt->hop[i];
		weft_mpw_array(w, 4);
		weft_mpw_bin(w, h->channel, 32);
		weft_mpw_bin(w, h->to, WEFT_LEDGER_KEY_LEN);
		weft_mpw_uint(w, h->amount);
		weft_mpw_uint(w, h->expiry);
	}
}

/* ---- what the node knows: preimages, invoices, forwards ---- */

static int keep_preimage(struct svc *s, const uint8_t preimage[32])
{
	uint8_t k[33], hash[32];
	weft_ledger_lock_hash(preimage, hash);
	chan_key(k, 'x', hash);
	return s->env->ops->kv_put(s->env, k, sizeof(k), preimage, 32);
}

bool lock_preimage(struct svc *s, const uint8_t hash[32], uint8_t preimage[32])
{
	uint8_t k[33], check[32];
	const void *v;
	size_t vlen;
	chan_key(k, 'x', hash);
	if (s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen) != 0 || vlen != 32)
		return false;
	memcpy(preimage, v, 32);
	weft_ledger_lock_hash(preimage, check);
	return memcmp(check, hash, 32) == 0;
}

/* An invoice: [member key, amount] under 'i' + hash. */
int lock_invoice(struct svc *s, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t amount, uint8_t hash[32])
{
	uint8_t seed[32 + WEFT_LEDGER_KEY_LEN + 16], preimage[32], k[33];
	/* Fresh randomness, and what the invoice is for and when: two
	 * invoices never share a preimage, even from a weak random source. */
	s->env->ops->random(s->env, seed, 32);
	memcpy(seed + 32, key, WEFT_LEDGER_KEY_LEN);
	weft_be64_put(seed + 32 + WEFT_LEDGER_KEY_LEN, amount);
	weft_be64_put(seed + 40 + WEFT_LEDGER_KEY_LEN, weft_env_now(s->env));
	crypto_generichash(preimage, 32, seed, sizeof(seed), NULL, 0);
	weft_ledger_lock_hash(preimage, hash);
	weft_mpw_reset(&s->out);
	weft_mpw_array(&s->out, 2);
	weft_mpw_bin(&s->out, key, WEFT_LEDGER_KEY_LEN);
	weft_mpw_uint(&s->out, amount);
	chan_key(k, 'i', hash);
	int rc = s->env->ops->kv_put(s->env, k, sizeof(k), s->out.buf, s->out.len);
	return rc == 0 ? keep_preimage(s, preimage) : rc;
}

/* The invoice of hash for key: 0 with its amount, or WEFT_NOTFOUND. */
static int invoice(struct svc *s, const uint8_t hash[32], const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t *amount)
{
	uint8_t k[33], want[WEFT_LEDGER_KEY_LEN];
	const void *v;
	size_t vlen;
	uint32_t two;
	struct weft_mp_reader r;
	chan_key(k, 'i', hash);
	if (s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen) != 0)
		return WEFT_NOTFOUND;
	weft_mp_reader_init(&r, v, vlen);
	if (weft_mp_read_array(&r, &two) != 0 || two != 2 || weft_mp_read_bin_fixed(&r, want, sizeof(want)) != 0 ||
	    weft_mp_read_uint(&r, amount) != 0 || memcmp(want, key, sizeof(want)) != 0)
		return WEFT_NOTFOUND;
	return 0;
}

/* A lock our member agreed to forward: [state, route]. */
enum { FWD_PENDING = 0, FWD_SENT = 1, FWD_FAILED = 2 };
struct fwd {
	uint64_t state;
	struct route rt;
};

static void fwd_key(uint8_t k[FWD_KEY_LEN], const uint8_t id[32], uint32_t payer, uint64_t seq)
{
	chan_key(k, 'f', id);
	weft_be32_put(k + 33, payer);
	weft_be64_put(k + 37, seq);
}

static int fwd_save(struct svc *s, const struct chan *c, uint32_t payer, uint64_t seq, const struct fwd *f)
{
	uint8_t k[FWD_KEY_LEN];
	weft_mpw_reset(&s->out);
	weft_mpw_array(&s->out, 2);
	weft_mpw_uint(&s->out, f->state);
	lock_route_write(&s->out, &f->rt);
	fwd_key(k, c->id, payer, seq);
	return s->env->ops->kv_put(s->env, k, sizeof(k), s->out.buf, s->out.len);
}

static int fwd_load(struct svc *s, const struct chan *c, uint32_t payer, uint64_t seq, struct fwd *f)
{
	uint8_t k[FWD_KEY_LEN];
	const void *v;
	size_t vlen;
	uint32_t two;
	struct weft_mp_reader r;
	fwd_key(k, c->id, payer, seq);
	int rc = s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen);
	if (rc != 0)
		return rc;
	weft_mp_reader_init(&r, v, vlen);
	if (weft_mp_read_array(&r, &two) != 0 || two != 2 || weft_mp_read_uint(&r, &f->state) != 0 ||
	    f->state > FWD_FAILED || lock_route_read(&r, &f->rt) != 0)
		return WEFT_ECORRUPT;
	return 0;
}

int lock_keep_route(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const struct route *rt)
{
	struct fwd f = {FWD_PENDING, *rt};
	return fwd_save(s, c, p->from, p->seq, &f);
}

/* The member of channel `next` with key, hosted here: its index or UINT32_MAX. */
static uint32_t member_of(const struct chan *next, const uint8_t key[WEFT_LEDGER_KEY_LEN], bool ours)
{
	for (uint32_t m = 0; m < next->n; m++)
		if (memcmp(next->key[m], key, WEFT_LEDGER_KEY_LEN) == 0 && (!ours || next->ours[m]))
			return m;
	return UINT32_MAX;
}

/* The first hop of rt from our member `key`, checked against the lock it
 * continues (amount, expiry): NULL, or why it cannot go. */
static const char *hop_check(struct svc *s, const struct hop *h, const uint8_t key[WEFT_LEDGER_KEY_LEN],
			     uint64_t amount, uint64_t expiry, struct chan **next, uint32_t *from, uint32_t *to)
{
	*next = chan_find(s, h->channel);
	if (*next == NULL || (*next)->status != CH_ACTIVE)
		return "no_route";
	*from = member_of(*next, key, true);
	*to = member_of(*next, h->to, false);
	if (*from == UINT32_MAX || *to == UINT32_MAX || *from == *to)
		return "no_route";
	if (h->amount > amount || h->expiry > expiry || expiry - h->expiry < s->lock_delta)
		return "bad_route";
	return NULL;
}

/* ---- consents ---- */

/* Where the lock our member forwarded for (c, payer's lock q) stands. */
enum downstream { DS_NONE, DS_IN_FLIGHT, DS_OPEN, DS_UNLOCKED, DS_REFUNDED };

static enum downstream downstream(struct svc *s, const struct chan *c, const struct lockrec *q, const struct fwd *f)
{
	struct chan *next = chan_find(s, f->rt.hop[0].channel);
	uint32_t m = next ? member_of(next, c->key[q->to], true) : UINT32_MAX;
	if (m == UINT32_MAX)
		return DS_NONE;
	const struct chain *ch = &next->chain[m];
	for (uint32_t i = ch->nlocks; i-- > 0;) {
		const struct lockrec *d = &ch->locks[i];
		if (memcmp(d->hash, q->hash, 32) != 0)
			continue;
		if (!d->resolved)
			return DS_OPEN;
		return ch->p[d->resolved - 1].kind == WEFT_CHANNEL_UNLOCK ? DS_UNLOCKED : DS_REFUNDED;
	}
	return chan_locking(next, m, q->hash) ? DS_IN_FLIGHT : DS_NONE;
}

const char *lock_consent_check(struct svc *s, struct chan *c, const struct weft_channel_payment *p,
			       const struct route *rt)
{
	uint8_t preimage[32];
	uint64_t h = chan_height(s), want;
	if (p->kind == WEFT_CHANNEL_LOCK) {
		if (p->cond < h || p->cond - h < s->lock_delta)
			return "expiry_too_soon";
		if (rt->n == 0) {
			if (invoice(s, p->secret, c->key[p->to], &want) != 0)
				return "unknown_hash";
			return p->amount < want ? "below_invoice" : NULL;
		}
		struct chan *next;
		uint32_t from, to;
		return hop_check(s, &rt->hop[0], c->key[p->to], p->amount, p->cond, &next, &from, &to);
	}
	if (p->kind != WEFT_CHANNEL_REFUND)
		return NULL;
	const struct lockrec *q = paydag_lock(c, p->from, p->cond); /* checked: held and open */
	if (h >= q->expiry)
		return NULL; /* expired: no claim can come any more */
	if (lock_preimage(s, q->hash, preimage))
		return "preimage_known";
	struct fwd f;
	if (fwd_load(s, c, p->from, p->cond, &f) == 0 && f.state == FWD_SENT) {
		enum downstream d = downstream(s, c, q, &f);
		if (d == DS_IN_FLIGHT || d == DS_OPEN)
			return "forwarded";
	}
	return NULL;
}

int lock_applied(struct svc *s, struct chan *c, const struct weft_channel_payment *p)
{
	if (p->kind == WEFT_CHANNEL_LOCK && c->ours[c->opener])
		chan_build_root(s, c); /* a lock counts once rooted: at once */
	return p->kind == WEFT_CHANNEL_UNLOCK ? keep_preimage(s, p->secret) : 0;
}

int lock_on_claim(struct svc *s, const uint8_t preimage[32])
{
	return keep_preimage(s, preimage);
}

/* ---- asks between a lock's payee and payer ---- */

static void send_ask(struct svc *s, struct chan *c, uint32_t payer, const struct lockrec *q, const uint8_t *preimage)
{
	struct weft_mpw *w = chan_msg_begin(s, c, preimage ? MSG_UNLOCK_ASK : MSG_REFUND_ASK, preimage ? 3 : 2);
	weft_mpw_uint(w, payer);
	weft_mpw_uint(w, q->seq);
	if (preimage)
		weft_mpw_bin(w, preimage, 32);
	chan_send_member(s, c, payer, preimage ? "channel.unlock_ask" : "channel.refund_ask");
}

/* Our payer's lock (payer, seq) named by an ask from `from`: the lock, or
 * NULL (answered already, or not ours to resolve). */
static struct lockrec *asked_lock(struct svc *s, struct chan *c, uint32_t from, uint32_t payer, uint64_t seq, int *rc)
{
	(void)s;
	*rc = 0;
	if (!c->ours[payer] || c->status != CH_ACTIVE)
		return NULL;
	struct lockrec *q = seq <= c->chain[payer].np ? paydag_lock(c, payer, seq) : NULL;
	if (q == NULL)
		return NULL;
	if (c->host[q->to] != from) {
		*rc = WEFT_EPROTO;
		return NULL;
	}
	return q->resolved || chan_resolving(c, payer, seq) ? NULL : q;
}

static void resolve(struct svc *s, struct chan *c, uint32_t payer, const struct lockrec *q, const uint8_t *preimage)
{
	uint64_t seq;
	const char *why = NULL;
	uint8_t kind = preimage ? WEFT_CHANNEL_UNLOCK : WEFT_CHANNEL_REFUND;
	if (chan_propose(s, c, payer, q->to, q->amount, kind, preimage, q->seq, NULL, &seq, &why) != 0)
		weft_env_log(s->env, WEFT_LOG_WARN, "channel.lock_resolve_failed", "kind=%s seq=%llu why=\"%s\"",
			     preimage ? "unlock" : "refund", (unsigned long long)q->seq, why ? why : "");
}

/* [payer, lock seq, preimage]: the payee shows the preimage. */
int lock_on_unlock_ask(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t payer;
	uint64_t seq;
	uint8_t preimage[32], hash[32];
	int rc;
	if (weft_mp_read_u32(r, &payer) != 0 || payer >= c->n || weft_mp_read_uint(r, &seq) != 0 ||
	    weft_mp_read_bin_fixed(r, preimage, 32) != 0)
		return WEFT_EDECODE;
	struct lockrec *q = asked_lock(s, c, from, payer, seq, &rc);
	if (q == NULL)
		return rc;
	weft_ledger_lock_hash(preimage, hash);
	if (memcmp(hash, q->hash, 32) != 0)
		return WEFT_ECRYPTO;
	if (s->withhold) {
		weft_env_log(s->env, WEFT_LOG_WARN, "channel.unlock_withheld", "seq=%llu", (unsigned long long)seq);
		return 0;
	}
	uint64_t h = chan_height(s);
	if (h && h >= q->expiry)
		return 0; /* too late: the lock is the payer's again (a payee that waited this long loses it) */
	if ((rc = keep_preimage(s, preimage)) != 0)
		return rc;
	resolve(s, c, payer, q, preimage);
	return 0;
}

/* [payer, lock seq]: the payee gives the lock up. */
int lock_on_refund_ask(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t payer;
	uint64_t seq;
	int rc;
	if (weft_mp_read_u32(r, &payer) != 0 || payer >= c->n || weft_mp_read_uint(r, &seq) != 0)
		return WEFT_EDECODE;
	struct lockrec *q = asked_lock(s, c, from, payer, seq, &rc);
	if (q)
		resolve(s, c, payer, q, NULL);
	return rc;
}

/* ---- the tick ---- */

/* True (and noted) when q was last acted on `every` ago or never. */
static bool due(struct lockrec *q, uint64_t t, uint64_t every)
{
	if (q->acted_us && t - q->acted_us < every)
		return false;
	q->acted_us = t;
	q->tries++;
	return true;
}

/* Our member's lock goes on to the next hop: 0, or why not. */
static const char *forward(struct svc *s, struct chan *c, const struct lockrec *q, const struct fwd *f)
{
	struct chan *next;
	uint32_t from, to;
	uint64_t seq;
	const char *why = hop_check(s, &f->rt.hop[0], c->key[q->to], q->amount, q->expiry, &next, &from, &to);
	if (why)
		return why;
	struct route rest = {0};
	rest.n = f->rt.n - 1;
	memcpy(rest.hop, f->rt.hop + 1, sizeof(rest.hop[0]) * rest.n);
	if (chan_propose(s, next, from, to, f->rt.hop[0].amount, WEFT_CHANNEL_LOCK, q->hash, f->rt.hop[0].expiry, &rest,
			 &seq, &why) != 0)
		return why;
	return NULL;
}

/* Our member is q's payee (q: payer's lock). */
static void payee_tick(struct svc *s, struct chan *c, uint32_t payer, struct lockrec *q, bool rooted, uint64_t t,
		       uint64_t h)
{
	uint8_t preimage[32];
	if (lock_preimage(s, q->hash, preimage)) {
		/* Revealed only once the lock is in an all-signed root: from then
		 * on the ledger pays it against the preimage whatever the payer
		 * does. */
		if (!rooted)
			return;
		bool late = h && (h >= q->expiry || q->expiry - h <= s->lock_delta / 2);
		if (late || q->tries > 3) {
			weft_env_log(s->env, WEFT_LOG_WARN, "channel.lock_to_ledger", "seq=%llu expiry=%llu height=%llu",
				     (unsigned long long)q->seq, (unsigned long long)q->expiry, (unsigned long long)h);
			chan_force_close(s, c); /* then claimed (claims below) */
			return;
		}
		if (due(q, t, s->pay_timeout_us))
			send_ask(s, c, payer, q, preimage);
		return;
	}
	struct fwd f;
	int rc = fwd_load(s, c, payer, q->seq, &f);
	if (rc == 0 && f.state == FWD_PENDING) {
		if (!rooted)
			return;
		const char *why = forward(s, c, q, &f);
		f.state = why ? FWD_FAILED : FWD_SENT;
		if (why)
			weft_env_log(s->env, WEFT_LOG_INFO, "channel.lock_not_forwarded", "seq=%llu why=\"%s\"",
				     (unsigned long long)q->seq, why);
		if (fwd_save(s, c, payer, q->seq, &f) != 0 || !why)
			return;
	} else if (rc == 0 && f.state == FWD_SENT) {
		enum downstream d = downstream(s, c, q, &f);
		if (d == DS_IN_FLIGHT || d == DS_OPEN || d == DS_UNLOCKED)
			return; /* unlocked: the preimage is known from the next tick */
		f.state = FWD_FAILED; /* refunded downstream, or its proposal was dropped */
		if (fwd_save(s, c, payer, q->seq, &f) != 0)
			return;
	}
	/* Failed, or neither preimage nor route (an invoice gone): give it up. */
	if (due(q, t, s->pay_timeout_us))
		send_ask(s, c, payer, q, NULL);
}

/* Our member is q's payer. */
static void payer_tick(struct svc *s, struct chan *c, uint32_t payer, struct lockrec *q, uint64_t t, uint64_t h)
{
	if (h == 0 || h < q->expiry || chan_resolving(c, payer, q->seq) || !due(q, t, s->pay_timeout_us))
		return;
	if (q->tries > 3) { /* the payee will not agree: the ledger refunds it after its expiry */
		weft_env_log(s->env, WEFT_LOG_WARN, "channel.lock_to_ledger", "seq=%llu expired=%llu", (unsigned long long)q->seq,
			     (unsigned long long)q->expiry);
		chan_force_close(s, c);
		return;
	}
	resolve(s, c, payer, q, NULL);
}

/* A channel closing on the ledger: claim the posted locks our members
 * are paid by and whose preimage this node knows. */
static void claims(struct svc *s, struct chan *c, uint64_t t)
{
	const struct weft_ledger *l = s->env->ops->service ? s->env->ops->service(s->env, WEFT_LEDGER_SERVICE) : NULL;
	uint8_t preimage[32];
	if (l == NULL || (c->claim_sent_us && t - c->claim_sent_us < CLAIM_RETRY_US))
		return;
	struct weft_ledger_channel_state *st = weft_xmalloc(sizeof(*st));
	if (weft_ledger_channel((struct weft_ledger *)l, c->id, st) != 0 || st->status != WEFT_LEDGER_CH_CLOSING)
		st->nlocks = 0;
	for (uint32_t i = 0; i < st->nlocks; i++) {
		const struct weft_ledger_channel_lock *k = &st->lock[i];
		if (st->claimed[i] || !c->ours[k->payee] || l->height + 1 >= k->expiry ||
		    !lock_preimage(s, k->hash, preimage))
			continue;
		struct weft_mpw w;
		weft_mpw_init(&w);
		weft_ledger_channel_claim_encode(c->id, preimage, &w);
		chan_submit(s, &w);
		weft_mpw_free(&w);
		c->claim_sent_us = t;
		weft_env_metric(s->env, "channel.claims", 1);
	}
	free(st);
}

void lock_tick(struct svc *s, struct chan *c)
{
	uint64_t t = weft_env_now(s->env), h = chan_height(s);
	bool unrooted = false;
	for (uint32_t k = 0; k < c->n; k++) {
		struct chain *ch = &c->chain[k];
		if (ch->open_locks == 0)
			continue;
		for (uint32_t i = 0; i < ch->nlocks; i++) {
			struct lockrec *q = &ch->locks[i];
			if (q->resolved)
				continue;
			bool rooted = q->seq <= c->latest.seq[k];
			unrooted |= !rooted;
			if (c->status != CH_ACTIVE)
				continue;
			if (c->ours[q->to])
				payee_tick(s, c, k, q, rooted, t, h);
			if (c->ours[k] && c->status == CH_ACTIVE) /* the payee's tick may have closed it */
				payer_tick(s, c, k, q, t, h);
		}
	}
	/* A lock counts once rooted: the opener's node roots it at once. */
	if (unrooted && c->ours[c->opener])
		chan_build_root(s, c);
	if (c->status == CH_CLOSING)
		claims(s, c, t);
}
