/* paydag.c - the payment DAG of one channel as a node holds it: each
 * member's chain of payments, the checks every member makes before it
 * consents to or applies a payment (parents held, no second payment of one
 * seq, the sender's balance covers the amount, a lock resolved once and
 * only with its preimage or its payee's consent), the balances and open
 * hash locks at a cut, and the chains' records in kv ('p' + id + member +
 * seq). */
#include <stdlib.h>
#include <string.h>

#include <stdbool.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/util.h"

#include "chan.h"

#define PAY_KEY_LEN (1 + 32 + 4 + 8)

static void pay_key(uint8_t k[PAY_KEY_LEN], const uint8_t id[32], uint32_t from, uint64_t seq)
{
	chan_key(k, 'p', id);
	weft_be32_put(k + 33, from);
	weft_be64_put(k + 37, seq);
}

uint64_t paydag_balance(const struct chan *c, uint32_t j)
{
	const struct chain *ch = &c->chain[j];
	return c->deposit[j] + ch->in - ch->out;
}

/* Kinds that take the amount from the payer's balance, and kinds that
 * add it to the payee's (a REFUND adds it back to the payer's). */
static bool debits(uint8_t kind)
{
	return kind == WEFT_CHANNEL_PAY || kind == WEFT_CHANNEL_LOCK;
}

static bool credits(uint8_t kind)
{
	return kind == WEFT_CHANNEL_PAY || kind == WEFT_CHANNEL_UNLOCK;
}

/* What payments to j in k's chain in (after, upto] add up to. */
static uint64_t incoming(const struct chan *c, uint32_t k, uint32_t j, uint64_t after, uint64_t upto)
{
	const struct chain *ch = &c->chain[k];
	uint64_t sum = 0;
	for (uint64_t t = after; t < upto; t++)
		if (ch->p[t].to == j && credits(ch->p[t].kind))
			sum += ch->p[t].amount; /* bounded by the deposits: no overflow */
	return sum;
}

uint32_t paydag_lock_cap(const struct chan *c)
{
	uint32_t cap = WEFT_LEDGER_CHANNEL_LOCKS_MAX / c->n;
	return cap > 16 ? 16 : cap ? cap : 1;
}

struct lockrec *paydag_lock(const struct chan *c, uint32_t j, uint64_t seq)
{
	const struct chain *ch = &c->chain[j];
	uint32_t lo = 0, hi = ch->nlocks;
	while (lo < hi) { /* locks are appended in seq order */
		uint32_t mid = lo + (hi - lo) / 2;
		if (ch->locks[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ch->nlocks && ch->locks[lo].seq == seq ? &ch->locks[lo] : NULL;
}

uint64_t paydag_received(const struct chan *c, uint32_t j)
{
	return c->received[j];
}

uint32_t paydag_refs(const struct chan *c, uint32_t j, const uint64_t *counted, struct weft_channel_ref *refs,
		     uint64_t *adds)
{
	uint32_t nrefs = 0;
	*adds = 0;
	for (uint32_t k = 0; k < c->n && nrefs < WEFT_CHANNEL_REFS_MAX; k++) {
		const struct chain *ck = &c->chain[k];
		if (k == j || ck->last_to[j] <= counted[k])
			continue;
		refs[nrefs].member = k;
		refs[nrefs].seq = ck->np;
		memcpy(refs[nrefs].hash, ck->p[ck->np - 1].hash, 32);
		*adds += incoming(c, k, j, counted[k], ck->np);
		nrefs++;
	}
	return nrefs;
}

static int verify(struct svc *s, const uint8_t key[32], const uint8_t msg[32], const uint8_t sig[64])
{
	return s->wallets->verify(s->wallets->ctx, key, msg, sig);
}

void paydag_tail_init(const struct chan *c, uint32_t j, struct paytail *t)
{
	const struct chain *ch = &c->chain[j];
	t->member = j;
	t->np = ch->np;
	memset(t->head, 0, 32);
	if (ch->np)
		memcpy(t->head, ch->p[ch->np - 1].hash, 32);
	t->in = ch->in;
	t->out = ch->out;
	t->counted = weft_xmalloc(sizeof(uint64_t) * c->n);
	memcpy(t->counted, ch->counted, sizeof(uint64_t) * c->n);
	t->open_locks = ch->open_locks;
	t->resolving = NULL;
	t->nresolving = t->resolvingcap = 0;
}

void paydag_tail_free(struct paytail *t)
{
	free(t->counted);
	free(t->resolving);
	t->counted = NULL;
	t->resolving = NULL;
}

void paydag_tail_extend(const struct chan *c, struct paytail *t, const struct weft_channel_payment *p,
			const uint8_t h[32])
{
	for (uint32_t i = 0; i < p->nrefs; i++) {
		const struct weft_channel_ref *f = &p->refs[i];
		t->in += incoming(c, f->member, p->from, t->counted[f->member], f->seq);
		t->counted[f->member] = f->seq;
	}
	if (debits(p->kind))
		t->out += p->amount;
	if (p->kind == WEFT_CHANNEL_REFUND)
		t->in += p->amount;
	if (p->kind == WEFT_CHANNEL_LOCK) {
		t->open_locks++;
	} else if (p->kind != WEFT_CHANNEL_PAY) {
		if (t->nresolving == t->resolvingcap) {
			t->resolvingcap = t->resolvingcap ? 2 * t->resolvingcap : 4;
			t->resolving = weft_xrealloc(t->resolving, t->resolvingcap, sizeof(*t->resolving));
		}
		t->resolving[t->nresolving++] = p->cond;
		t->open_locks--;
	}
	t->np = p->seq;
	memcpy(t->head, h, 32);
}

/* The checks of a payment's kind against the tail: a lock within the
 * member's cap; an UNLOCK or REFUND of a held lock of the same chain, open,
 * not resolved ahead in the tail, with its payee and amount (and, to
 * unlock, its preimage).  NULL, or why not. */
static const char *kind_check(const struct chan *c, const struct paytail *t, const struct weft_channel_payment *p)
{
	if (p->kind == WEFT_CHANNEL_PAY)
		return NULL;
	if (p->kind == WEFT_CHANNEL_LOCK)
		return t->open_locks >= paydag_lock_cap(c) ? "too_many_locks" : NULL;
	const struct lockrec *k = p->cond <= c->chain[p->from].np ? paydag_lock(c, p->from, p->cond) : NULL;
	if (k == NULL)
		return "no_such_lock";
	if (k->resolved)
		return "lock_resolved";
	for (uint32_t i = 0; i < t->nresolving; i++)
		if (t->resolving[i] == p->cond)
			return "lock_resolved";
	if (k->to != p->to || k->amount != p->amount)
		return "not_the_lock";
	if (p->kind == WEFT_CHANNEL_UNLOCK) {
		uint8_t hash[32];
		weft_ledger_lock_hash(p->secret, hash);
		if (memcmp(hash, k->hash, 32) != 0)
			return "wrong_preimage";
	}
	return NULL;
}

int paydag_tail_check(struct svc *s, struct chan *c, struct paytail *t, const struct weft_channel_payment *p,
		      const uint8_t h[32], unsigned sigs, const char **why, uint32_t *missing, uint64_t *upto)
{
	const struct chain *ch = &c->chain[p->from];
	if (p->from != t->member) {
		*why = "not_this_chain";
		return WEFT_EPROTO;
	}
	if (p->seq <= ch->np) {
		if (memcmp(ch->p[p->seq - 1].hash, h, 32) == 0) {
			*why = "duplicate";
			return WEFT_EEXIST;
		}
		if (!(sigs & CHECK_SENDER)) { /* an unsigned proposal binds nobody */
			*why = "stale_seq";
			return WEFT_EPROTO;
		}
		if (verify(s, c->key[p->from], h, p->sig) != 0) {
			*why = "bad_signature";
			return WEFT_ECRYPTO;
		}
		struct weft_channel_payment held;
		if (paydag_load(s, c, p->from, p->seq, &held) == 0)
			paydag_evidence(s, c, &held, p);
		*why = "equivocation";
		return WEFT_EPROTO;
	}
	if (p->seq > t->np + 1) {
		*missing = p->from, *upto = p->seq - 1;
		*why = "unknown_parent";
		return WEFT_NOTFOUND;
	}
	if (p->seq <= t->np || memcmp(p->prev, t->head, 32) != 0) {
		*why = "conflict";
		return WEFT_EPROTO;
	}
	uint64_t adds = 0;
	for (uint32_t i = 0; i < p->nrefs; i++) {
		const struct weft_channel_ref *f = &p->refs[i];
		const struct chain *ck = &c->chain[f->member];
		if (f->seq <= t->counted[f->member]) {
			*why = "stale_ref";
			return WEFT_EPROTO;
		}
		if (f->seq > ck->np) {
			*missing = f->member, *upto = f->seq;
			*why = "unknown_parent";
			return WEFT_NOTFOUND;
		}
		if (memcmp(ck->p[f->seq - 1].hash, f->hash, 32) != 0) {
			*why = "conflict";
			return WEFT_EPROTO;
		}
		adds += incoming(c, f->member, p->from, t->counted[f->member], f->seq);
	}
	if ((*why = kind_check(c, t, p)) != NULL)
		return WEFT_EPROTO;
	/* The sender's balance: everything it sent is in its chain (and the
	 * payments ahead of this one in flight), held here whole; what it
	 * received counts once. */
	uint64_t have = c->deposit[p->from] + t->in + adds;
	uint64_t spent = s->unsafe_no_chain_check ? 0 : t->out;
	if (debits(p->kind) && (have < spent || have - spent < p->amount)) {
		*why = "overspend";
		return WEFT_EINVAL;
	}
	if ((sigs & CHECK_SENDER) && verify(s, c->key[p->from], h, p->sig) != 0) {
		*why = "bad_signature";
		return WEFT_ECRYPTO;
	}
	uint8_t m[32];
	weft_channel_consent_hash(h, m);
	if ((sigs & CHECK_CONSENT) && verify(s, c->key[p->to], m, p->consent) != 0) {
		*why = "bad_consent";
		return WEFT_ECRYPTO;
	}
	paydag_tail_extend(c, t, p, h);
	*why = NULL;
	return 0;
}

int paydag_check(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const uint8_t h[32],
		 unsigned sigs, const char **why, uint32_t *missing, uint64_t *upto)
{
	struct paytail t;
	paydag_tail_init(c, p->from, &t);
	int rc = paydag_tail_check(s, c, &t, p, h, sigs, why, missing, upto);
	paydag_tail_free(&t);
	return rc;
}

/* The in-memory part of applying: the chain grows, the refs count. */
static void apply_mem(struct chan *c, const struct weft_channel_payment *p, const uint8_t h[32])
{
	struct chain *ch = &c->chain[p->from];
	for (uint32_t i = 0; i < p->nrefs; i++) {
		const struct weft_channel_ref *f = &p->refs[i];
		ch->in += incoming(c, f->member, p->from, ch->counted[f->member], f->seq);
		ch->counted[f->member] = f->seq;
	}
	if (ch->np == ch->cap) {
		ch->cap = ch->cap ? 2 * ch->cap : 64;
		ch->p = weft_xrealloc(ch->p, ch->cap, sizeof(*ch->p));
	}
	struct pay *y = &ch->p[ch->np++];
	y->to = p->to;
	y->amount = p->amount;
	y->kind = p->kind;
	memcpy(y->hash, h, 32);
	if (debits(p->kind))
		ch->out += p->amount;
	if (credits(p->kind)) {
		ch->last_to[p->to] = p->seq;
		c->received[p->to] += p->amount;
	}
	if (p->kind == WEFT_CHANNEL_LOCK) {
		if (ch->nlocks == ch->lockcap) {
			ch->lockcap = ch->lockcap ? 2 * ch->lockcap : 8;
			ch->locks = weft_xrealloc(ch->locks, ch->lockcap, sizeof(*ch->locks));
		}
		struct lockrec *k = &ch->locks[ch->nlocks++];
		memset(k, 0, sizeof(*k));
		k->seq = p->seq;
		k->to = p->to;
		k->amount = p->amount;
		memcpy(k->hash, p->secret, 32);
		k->expiry = p->cond;
		ch->open_locks++;
	} else if (p->kind != WEFT_CHANNEL_PAY) {
		paydag_lock(c, p->from, p->cond)->resolved = p->seq; /* checked: a held, open lock */
		ch->open_locks--;
		if (p->kind == WEFT_CHANNEL_REFUND) {
			ch->in += p->amount;
			c->received[p->from] += p->amount;
		}
	}
	c->applied++;
}

int paydag_apply(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const uint8_t h[32])
{
	uint8_t k[PAY_KEY_LEN];
	pay_key(k, c->id, p->from, p->seq);
	weft_mpw_reset(&s->out);
	weft_channel_payment_encode(p, &s->out);
	int rc = s->env->ops->kv_put(s->env, k, sizeof(k), s->out.buf, s->out.len);
	if (rc != 0)
		return rc;
	apply_mem(c, p, h);
	return 0;
}

int paydag_load(struct svc *s, struct chan *c, uint32_t from, uint64_t seq, struct weft_channel_payment *p)
{
	uint8_t k[PAY_KEY_LEN];
	const void *v;
	size_t vlen;
	pay_key(k, c->id, from, seq);
	int rc = s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen);
	if (rc != 0)
		return rc;
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, v, vlen);
	return weft_channel_payment_read(&r, c->n, p) == 0 ? 0 : WEFT_ECORRUPT;
}

struct restore {
	struct svc *s;
	struct chan *c;
	int rc;
	bool stopped;              /* a payment counts a chain not restored this far */
};

static int restore_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct restore *rs = arg;
	struct weft_channel_payment p;
	struct weft_mp_reader r;
	uint8_t h[32];
	weft_mp_reader_init(&r, val, vlen);
	if (klen != PAY_KEY_LEN || weft_channel_payment_read(&r, rs->c->n, &p) != 0 ||
	    p.seq != rs->c->chain[p.from].np + 1) {
		rs->rc = WEFT_ECORRUPT;
		return -1;
	}
	weft_channel_payment_hash(rs->s->chain_key, rs->c->id, &p, h);
	/* A lock's resolution names an open lock of the chain restored so far. */
	if (p.kind >= WEFT_CHANNEL_UNLOCK) {
		const struct lockrec *k = paydag_lock(rs->c, p.from, p.cond);
		if (k == NULL || k->resolved) {
			rs->rc = WEFT_ECORRUPT;
			return -1;
		}
	}
	/* Chains restore in member order: refs to a later member's chain wait
	 * for a second pass (restore_pending). */
	for (uint32_t i = 0; i < p.nrefs; i++)
		if (p.refs[i].seq > rs->c->chain[p.refs[i].member].np) {
			rs->stopped = true;
			return 1;
		}
	apply_mem(rs->c, &p, h);
	return 0;
}

int paydag_restore(struct svc *s, struct chan *c)
{
	/* Payments are stored by (member, seq); a chain's payment may count a
	 * later member's chain, so the chains are replayed round by round
	 * until every record is in (each pass applies at least one). */
	uint8_t from[PAY_KEY_LEN], to[PAY_KEY_LEN];
	for (;;) {
		uint64_t before = c->applied;
		bool all = true;
		for (uint32_t j = 0; j < c->n; j++) {
			struct restore rs = {s, c, 0, false};
			pay_key(from, c->id, j, c->chain[j].np + 1);
			pay_key(to, c->id, j + 1, 0);
			int rc = s->env->ops->kv_scan(s->env, from, sizeof(from), to, sizeof(to), restore_one, &rs);
			if (rs.rc != 0)
				return rs.rc;
			if (rc < 0)
				return rc;
			if (rs.stopped)
				all = false;
		}
		if (all)
			return 0;
		if (c->applied == before)
			return WEFT_ECORRUPT;
	}
}

int paydag_balances_at(const struct chan *c, const uint64_t *seq, struct root *r)
{
	/* Sums of amounts stay below the deposits' total (each payment was
	 * checked against its payer's balance), but a cut is untrusted input:
	 * unsigned sums, overflow and underflow checked. */
	uint64_t sent[WEFT_CHANNEL_MAX] = {0}, got[WEFT_CHANNEL_MAX] = {0};
	r->nlocks = 0;
	for (uint32_t k = 0; k < c->n; k++) {
		const struct chain *ch = &c->chain[k];
		if (seq[k] < c->latest.seq[k] || seq[k] > ch->np)
			return WEFT_EINVAL;
		for (uint64_t t = c->latest.seq[k]; t < seq[k]; t++) {
			const struct pay *y = &ch->p[t];
			uint64_t a = y->amount;
			uint32_t to = y->kind == WEFT_CHANNEL_REFUND ? k : y->to;
			if (debits(y->kind)) {
				if (sent[k] + a < sent[k])
					return WEFT_EINVAL;
				sent[k] += a;
			}
			if (y->kind != WEFT_CHANNEL_LOCK) {
				if (got[to] + a < got[to])
					return WEFT_EINVAL;
				got[to] += a;
			}
		}
		for (uint32_t i = 0; i < ch->nlocks && ch->locks[i].seq <= seq[k]; i++) {
			const struct lockrec *q = &ch->locks[i];
			if (q->resolved && q->resolved <= seq[k])
				continue;
			if (r->nlocks == WEFT_LEDGER_CHANNEL_LOCKS_MAX)
				return WEFT_EINVAL;
			struct weft_ledger_channel_lock *o = &r->lock[r->nlocks++];
			o->payer = k;
			o->payee = q->to;
			o->amount = q->amount;
			memcpy(o->hash, q->hash, 32);
			o->expiry = q->expiry;
		}
	}
	for (uint32_t j = 0; j < c->n; j++) {
		uint64_t have = c->latest.balance[j] + got[j];
		if (have < got[j] || have < sent[j])
			return WEFT_EINVAL;
		r->balance[j] = have - sent[j];
	}
	return 0;
}

void paydag_evidence(struct svc *s, struct chan *c, const struct weft_channel_payment *a,
		     const struct weft_channel_payment *b)
{
	uint8_t k[1 + 32 + 4];
	chan_key(k, 'e', c->id);
	weft_be32_put(k + 33, a->from);
	weft_mpw_reset(&s->out);
	weft_mpw_array(&s->out, 3);
	weft_mpw_str(&s->out, "payment");
	weft_channel_payment_encode(a, &s->out);
	weft_channel_payment_encode(b, &s->out);
	const void *v;
	size_t vlen;
	if (s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen) == 0)
		return; /* evidence against this member is kept already */
	s->env->ops->kv_put(s->env, k, sizeof(k), s->out.buf, s->out.len);
	c->chain[a->from].equivocated = true;
	c->evidence++;
	chan_emit_evidence(s, c, "payment", a->from);
}

void paydag_free(struct chan *c)
{
	for (uint32_t j = 0; j < c->n; j++) {
		free(c->chain[j].p);
		free(c->chain[j].counted);
		free(c->chain[j].last_to);
		free(c->chain[j].locks);
	}
}
