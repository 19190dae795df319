/* adversary.c - the DAG consensus's Byzantine strategies: what weft-sim's
 * adversary fault and weftd --byzantine NAME run in place of the honest
 * consensus, so that the simulator can show the honest nodes staying safe
 * and live against them (WEFT_DAG_STRATEGIES in weft/dag.h has one line on
 * each, docs/faults.md their parameters).
 *
 * A strategy is the honest consensus (weft_dag_consensus's ops) on an env
 * wrapper that alters what leaves the node, plus the hooks dag.c calls
 * where it chooses our vertex's references and batch and creates the BRB
 * child (dag.h):
 *
 *   bad_refs         our references avoid the previous anchor's voters
 *   withhold         the messages of our own broadcasts reach an audience
 *                    at once and the other nodes release_ms later; by the
 *                    round's phase, also no vertex at all (its chain goes
 *                    on without it) or bad_refs references: the aimed
 *                    tool of tests/sim/dag-fork-*.json
 *   equivocate_refs  a second vertex every round, broadcast by a second
 *                    instance of the BRB (channel DAG_BRB_CHANNEL + 1 here,
 *                    rewritten to the BRB's channel on the wire) to an
 *                    audience, while the first instance's messages about
 *                    our broadcasts go to everyone else: two stories
 *   copy_txs         our batches copy transactions of other authors'
 *                    vertices that are not ordered yet
 *   lying_sync       our STATUS and RANGE messages are rewritten to lie
 *   brb              the BRB child runs one of its own Byzantine strategies
 *
 * Which BRB messages are "about our broadcasts" comes from the family's
 * header (weft_brb_message_instance): the sender field names us.  The
 * strategy's parameters are the map params.adversary; a key the strategy
 * does not take is refused, so that a misspelt one is not silently
 * ignored. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "weft/brb.h"
#include "weft/crypto.h"
#include "weft/err.h"

#include "dag.h"

#define TWIN_CHANNEL (DAG_BRB_CHANNEL + 1)
#define HELD_MAX 65536            /* withhold: messages held back at most (beyond: dropped) */
#define STATUS_AHEAD (1ull << 20) /* lying_sync: how far ahead "ahead" claims to be */

enum adv_kind { ADV_BAD_REFS, ADV_WITHHOLD, ADV_EQUIVOCATE_REFS, ADV_COPY_TXS, ADV_LYING_SYNC, ADV_BRB };

/* bad_refs: which of our vertices get its references. */
enum hide { HIDE_ALL, HIDE_ANCHORS, HIDES };
static const char *const hides[HIDES] = {"all", "anchors"};

/* lying_sync's lies, each in turn unless one is chosen. */
enum status_lie { LIE_AHEAD, LIE_BEHIND, STATUS_LIES };
enum range_lie { LIE_OMIT, LIE_DIGESTS, LIE_GARBLE, LIE_SWAP, LIE_OUTSIDE, RANGE_LIES };
static const char *const status_lies[STATUS_LIES] = {"ahead", "behind"};
static const char *const range_lies[RANGE_LIES] = {"omit", "digests", "garble", "swap", "outside"};

/* Who hears the messages of our own broadcasts (withhold, equivocate_refs):
 * per node one of these. */
enum hears { HEARS_LATE, HEARS_FIRST, HEARS_ALL };

/* withhold: one message of our own broadcasts, for the nodes that did not
 * hear it yet once due. */
struct held {
	uint64_t due_us;
	uint32_t to;                  /* a peer, or UINT32_MAX: every peer */
	uint8_t heard;                /* the nodes that hear at least this heard it already */
	const char *kind;
	uint8_t *msg;
	size_t len;
};

struct dag_adversary {
	struct dag d;                 /* first: the node stack and the hooks see a struct dag */
	struct weft_env_wrap wrap;    /* the env the consensus runs on */
	enum adv_kind kind;
	const uint8_t *params;        /* params.adversary (a map, or NULL), during init only */
	size_t plen;
	enum hide hide;               /* bad_refs */
	uint8_t *audience;            /* withhold, equivocate_refs: per node, enum hears */
	uint64_t release_us;          /* withhold */
	uint64_t every;               /* withhold: rounds r have phase r % every (1..64) */
	uint64_t withheld, skipped;   /* withhold: the phases withheld, skipped (bit masks) */
	uint64_t bad_phases;          /* withhold: the phases with bad_refs references */
	struct held *held;            /* withhold: a ring, due times ascending */
	uint32_t hhead, hcount, hcap;
	struct weft_child twin;       /* equivocate_refs: the BRB instance of our second vertices */
	uint64_t copy_max;            /* copy_txs: transactions copied into one vertex at most */
	int status_lie, range_lie;    /* lying_sync: the lie told, -1: each in turn */
	uint64_t statuses, ranges;    /* lying_sync: messages rewritten so far */
	struct weft_mpw out;          /* a rewritten message */
};

static struct dag_adversary *adversary_of(struct weft_env *env)
{
	return (struct dag_adversary *)((char *)weft_env_wrapped(env) - offsetof(struct dag_adversary, wrap));
}

/* ---- bad_refs ---- */

bool dag_adv_hides(const struct dag *d, uint64_t r)
{
	const struct dag_adversary *s = d->adv;
	if (s == NULL)
		return false;
	switch (s->kind) {
	case ADV_BAD_REFS:
		return s->hide == HIDE_ALL || (r % 2 == 0 && dag_leader(d, r) == d->self);
	case ADV_WITHHOLD:
		return s->bad_phases >> (r % s->every) & 1;
	case ADV_EQUIVOCATE_REFS:
	case ADV_COPY_TXS:
	case ADV_LYING_SYNC:
	case ADV_BRB:
		return false;
	}
	return false;
}

/* The anchor whose commit our round r references hide: the anchor of r - 2,
 * whose votes are in r - 1 (bad_refs); with latest, that of r - 3 when
 * r - 2 is odd (withhold: our references at odd rounds carry no path to the
 * anchor voted on two rounds before either).  NULL: none held. */
static struct dag_vertex *hidden_anchor(struct dag *d, uint64_t r, bool latest)
{
	uint64_t back = 2 + (latest && r % 2 == 1);
	if (r < back || (r - back) % 2 == 1)
		return NULL;
	return dag_inserted(d, r - back, dag_leader(d, r - back));
}

/* The fewest references validation allows, taken first among the round
 * r - 1 vertices without a strong path to the hidden anchor (so its commit
 * is not seen through us), never our own or the r - 1 anchor unless the
 * count forces it. */
void dag_adv_refs(struct dag *d, uint64_t r, const uint32_t *held, uint32_t nheld, bool anchor, uint32_t *refs,
		  uint32_t *nrefs)
{
	uint32_t want = d->mode == DAG_DENSE || anchor ? d->quorum : d->d < d->quorum ? d->d : d->quorum;
	if (want > nheld)
		want = nheld;
	const struct dag_vertex *a = hidden_anchor(d, r, d->adv && d->adv->kind == ADV_WITHHOLD);
	bool take[1024] = {false};
	uint32_t k = 0;
	for (int pass = 0; pass < 3 && k < want; pass++)
		for (uint32_t i = 0; i < nheld && k < want; i++) {
			bool reaches = a && dag_path(d, dag_inserted(d, r - 1, held[i]), a);
			bool special = held[i] == d->self || ((r - 1) % 2 == 0 && held[i] == dag_leader(d, r - 1));
			if (!take[i] && (pass == 2 || (pass == 1 && !special) || (pass == 0 && !special && !reaches)))
				take[i] = true, k++;
		}
	*nrefs = 0;
	for (uint32_t i = 0; i < nheld; i++)
		if (take[i])
			refs[(*nrefs)++] = held[i];
}

/* ---- withhold: skipped rounds ---- */

bool dag_adv_skips(struct dag *d, uint64_t r)
{
	struct dag_adversary *s = d->adv;
	if (s == NULL || s->kind != ADV_WITHHOLD || !(s->skipped >> (r % s->every) & 1))
		return false;
	/* No vertex of round r: our broadcasts and our own chain go on from r + 1. */
	d->brbf->skip(d->brb.state, d->self, r + 1);
	d->next_round = d->own_from = r + 1;
	d->entered_us = weft_env_now(d->env);
	weft_env_metric(d->env, "dag.adv.skipped", 1);
	return true;
}

/* ---- copy_txs ---- */

void dag_adv_batch(struct dag *d, uint64_t r, const uint8_t ***txs, uint32_t **lens, uint32_t *ntx, uint64_t *bytes)
{
	struct dag_adversary *s = d->adv;
	if (s == NULL || s->kind != ADV_COPY_TXS)
		return;
	uint64_t copied = 0;
	for (uint64_t back = 1; back <= 2 && back <= r; back++)
		for (uint32_t a = 0; a < d->n; a++) {
			const struct dag_vertex *v = dag_inserted(d, r - back, a);
			if (v == NULL || a == d->self || v->ordered || v->bytes == NULL)
				continue;
			size_t off = 0;
			uint32_t i = 0, len;
			const uint8_t *tx;
			while (copied < s->copy_max && *ntx < d->batch_txs && dag_vertex_next_tx(v, &off, &i, &tx, &len) == 0) {
				uint8_t digest[32];
				weft_hash(digest, tx, len);
				if (*bytes + len > d->batch_bytes || dag_dedup_get(d, digest, NULL) != WEFT_NOTFOUND)
					continue;
				*txs = realloc(*txs, (*ntx + 1) * sizeof(**txs));
				*lens = realloc(*lens, (*ntx + 1) * sizeof(**lens));
				if (*txs == NULL || *lens == NULL)
					abort();
				(*txs)[*ntx] = tx; /* the vertex's bytes, alive until the callback ends */
				(*lens)[(*ntx)++] = len;
				*bytes += len;
				copied++;
			}
		}
	if (copied)
		weft_env_metric(d->env, "dag.adv.copied_txs", (int64_t)copied);
}

/* ---- equivocate_refs ---- */

/* Our second vertex of round r, beside the first (bytes, of batch txs):
 * bad_refs references and the batch without its first transaction, handed
 * to the second BRB instance unless it came out the same. */
void dag_adv_made(struct dag *d, uint64_t r, const uint8_t *bytes, size_t len, const uint8_t *const *txs, const uint32_t *lens,
		  uint32_t ntx)
{
	struct dag_adversary *s = d->adv;
	if (s == NULL || s->kind != ADV_EQUIVOCATE_REFS)
		return;
	uint32_t held[1024], nheld = 0, refs[1024], nrefs = 0;
	for (uint32_t a = 0; r > 0 && a < d->n; a++)
		if (dag_inserted(d, r - 1, a))
			held[nheld++] = a;
	if (r > 0)
		dag_adv_refs(d, r, held, nheld,
			     r % 2 == 0 && dag_leader(d, r) == d->self && d->unsafe != DAG_UNSAFE_SPARSE_ANCHORS, refs, &nrefs);
	struct weft_mpw v;
	weft_mpw_init(&v);
	uint32_t skip = ntx > 0;
	dag_vertex_encode(d, &v, r, refs, nrefs, NULL, 0, txs + skip, lens + skip, NULL, ntx - skip);
	d->brbf->skip(s->twin.state, d->self, r);
	if ((v.len != len || memcmp(v.buf, bytes, len) != 0) && weft_child_request(&s->twin, v.buf, v.len, NULL) == 0)
		weft_env_metric(d->env, "dag.adv.equivocations", 1);
	weft_mpw_free(&v);
}

/* The second instance's deliveries are the first one's business. */
static void twin_deliver(void *ctx, const struct weft_delivery *del)
{
	(void)ctx;
	(void)del;
}

/* ---- brb ---- */

/* The BRB child runs the strategy params.adversary.brb of *brb (default:
 * its first), with params.adversary as its own parameters. */
static int brb_strategy(struct dag_adversary *s, const struct weft_proto_ops **brb, struct weft_mpw *cp)
{
	const struct weft_proto_strategy *st = (*brb)->strategies && (*brb)->strategies->name ? (*brb)->strategies : NULL;
	const char *name;
	uint32_t nlen;
	if (weft_params_str(s->params, s->plen, "brb", &name, &nlen) == 0) {
		st = NULL;
		for (const struct weft_proto_strategy *x = (*brb)->strategies; x && x->name; x++)
			if (strlen(x->name) == nlen && memcmp(x->name, name, nlen) == 0)
				st = x;
	}
	if (st == NULL) {
		weft_env_log(s->d.env, WEFT_LOG_ERROR, "dag.adversary", "the BRB %s registers no such strategy",
			     (*brb)->name);
		return WEFT_EINVAL;
	}
	size_t len;
	uint8_t *p = weft_params_with_adversary(cp->buf, cp->len, s->params, s->plen, &len);
	weft_mpw_reset(cp);
	weft_mpw_raw(cp, p, len);
	free(p);
	*brb = st->ops;
	return 0;
}

int dag_adv_child(struct dag *d, const struct weft_proto_ops **brb, struct weft_mpw *cp)
{
	struct dag_adversary *s = d->adv;
	if (s == NULL)
		return 0;
	switch (s->kind) {
	case ADV_EQUIVOCATE_REFS: {
		int rc = weft_child_init(&s->twin, d->env, TWIN_CHANNEL, *brb, cp->buf, cp->len, twin_deliver, s);
		if (rc == 0) /* named as the honest nodes name its second vertices */
			d->brbf->digest_with(s->twin.state, dag_name_vertex, d);
		return rc;
	}
	case ADV_BRB:
		return brb_strategy(s, brb, cp);
	case ADV_BAD_REFS:
	case ADV_WITHHOLD:
	case ADV_COPY_TXS:
	case ADV_LYING_SYNC:
		return 0;
	}
	return 0;
}

/* ---- lying_sync ---- */

/* STATUS [round, committed + 1, lowest served] (r past the header),
 * rewritten into s->out: far ahead, or at round 0 serving everything. */
static int lie_status(struct dag_adversary *s, struct weft_mp_reader *r)
{
	uint64_t round, committed, serves;
	if (weft_mp_read_uint(r, &round) || weft_mp_read_uint(r, &committed) || weft_mp_read_uint(r, &serves))
		return WEFT_EDECODE;
	bool ahead = (s->status_lie >= 0 ? (uint64_t)s->status_lie : s->statuses % STATUS_LIES) == LIE_AHEAD;
	weft_mpw_array(&s->out, 5);
	weft_mpw_uint(&s->out, DAG_VERSION);
	weft_mpw_uint(&s->out, DAG_MSG_STATUS);
	weft_mpw_uint(&s->out, ahead ? round + STATUS_AHEAD : 0);
	weft_mpw_uint(&s->out, ahead ? committed + STATUS_AHEAD : 0);
	weft_mpw_uint(&s->out, ahead ? round + STATUS_AHEAD : 0);
	s->statuses++;
	return 0;
}

struct range_entry {
	uint64_t round;
	uint32_t author;
	const uint8_t *digest;        /* 32 bytes */
	const uint8_t *bytes;         /* NULL: a digest only */
	uint32_t blen;
};

/* RANGE [lo, hi, entries] (r past the header), rewritten into s->out with
 * one lie: no entries; each digest hashed again; a byte of each vertex's
 * bytes flipped; each entry given the next one's digest and bytes (another
 * slot's vertex); or the entries moved past hi. */
static int lie_range(struct dag_adversary *s, struct weft_mp_reader *r)
{
	uint64_t lo, hi;
	uint32_t count;
	if (weft_mp_read_uint(r, &lo) || weft_mp_read_uint(r, &hi) || weft_mp_read_array(r, &count) || hi < lo)
		return WEFT_EDECODE;
	struct range_entry *e = calloc(count ? count : 1, sizeof(*e));
	if (e == NULL)
		abort();
	int rc = 0;
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		uint32_t four, dlen;
		if (weft_mp_read_array(r, &four) || four != 4 || weft_mp_read_uint(r, &e[i].round) ||
		    weft_mp_read_u32(r, &e[i].author) || weft_mp_read_bin(r, &e[i].digest, &dlen) || dlen != 32 ||
		    (weft_mp_peek_nil(r) ? weft_mp_read_nil(r) : weft_mp_read_bin(r, &e[i].bytes, &e[i].blen)))
			rc = WEFT_EDECODE;
	}
	enum range_lie lie = s->range_lie >= 0 ? (enum range_lie)s->range_lie : (enum range_lie)(s->ranges % RANGE_LIES);
	weft_mpw_array(&s->out, 5);
	weft_mpw_uint(&s->out, DAG_VERSION);
	weft_mpw_uint(&s->out, DAG_MSG_RANGE);
	weft_mpw_uint(&s->out, lo);
	weft_mpw_uint(&s->out, hi);
	weft_mpw_array(&s->out, lie == LIE_OMIT ? 0 : count);
	for (uint32_t i = 0; lie != LIE_OMIT && i < count; i++) {
		const struct range_entry *x = lie == LIE_SWAP ? &e[(i + 1) % count] : &e[i];
		uint8_t digest[32];
		memcpy(digest, x->digest, 32);
		if (lie == LIE_DIGESTS)
			weft_hash(digest, x->digest, 32);
		weft_mpw_array(&s->out, 4);
		weft_mpw_uint(&s->out, lie == LIE_OUTSIDE ? e[i].round + hi - lo + 1 : e[i].round);
		weft_mpw_uint(&s->out, e[i].author);
		weft_mpw_bin(&s->out, digest, 32);
		if (x->bytes == NULL) {
			weft_mpw_nil(&s->out);
			continue;
		}
		weft_mpw_bin(&s->out, x->bytes, x->blen);
		if (lie == LIE_GARBLE && x->blen)
			s->out.buf[s->out.len - 1 - x->blen / 2] ^= 0x5a;
	}
	free(e);
	s->ranges++;
	return rc;
}

/* Our own message msg, or its lying rewrite in s->out (*len updated). */
static const uint8_t *lie(struct dag_adversary *s, const uint8_t *msg, size_t *len)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t version, type;
	weft_mp_reader_init(&r, msg, *len);
	if (weft_mp_read_array(&r, &count) || count != 5 || weft_mp_read_uint(&r, &version) ||
	    weft_mp_read_uint(&r, &type) || (type != DAG_MSG_STATUS && type != DAG_MSG_RANGE))
		return msg;
	weft_mpw_reset(&s->out);
	if ((type == DAG_MSG_STATUS ? lie_status(s, &r) : lie_range(s, &r)) != 0)
		return msg;
	weft_env_metric(s->wrap.inner, "dag.adv.lies", 1);
	*len = s->out.len;
	return s->out.buf;
}

/* ---- what leaves the node ---- */

/* Sends msg to `to` (UINT32_MAX: every peer) if what it hears is in
 * [lo, hi] (enum hears). */
static void send_group(struct dag_adversary *s, uint8_t lo, uint8_t hi, uint32_t to, const char *kind,
		       const void *msg, size_t len)
{
	for (uint32_t p = 0; p < s->d.n; p++)
		if (p != s->d.self && (to == UINT32_MAX || to == p) && s->audience[p] >= lo && s->audience[p] <= hi)
			weft_env_send(s->wrap.inner, p, kind, msg, len);
}

/* withhold: msg (first: our broadcast's first message) goes to those who
 * hear it now, and to the rest once due. */
static void withhold(struct dag_adversary *s, uint32_t to, const char *kind, const uint8_t *msg, size_t len,
		     bool first)
{
	struct weft_env *in = s->wrap.inner;
	uint8_t heard = first ? HEARS_FIRST : HEARS_ALL;
	send_group(s, heard, HEARS_ALL, to, kind, msg, len);
	if (to != UINT32_MAX && s->audience[to] >= heard)
		return;
	if (s->hcount == HELD_MAX) {
		weft_env_metric(in, "dag.adv.dropped", 1);
		return;
	}
	if (s->hcount == s->hcap) {
		uint32_t cap = s->hcap ? 2 * s->hcap : 64;
		struct held *h = malloc(cap * sizeof(*h));
		if (h == NULL)
			abort();
		for (uint32_t i = 0; i < s->hcount; i++)
			h[i] = s->held[(s->hhead + i) % s->hcap];
		free(s->held);
		s->held = h, s->hcap = cap, s->hhead = 0;
	}
	struct held *h = &s->held[(s->hhead + s->hcount++) % s->hcap];
	h->due_us = weft_env_now(in) + s->release_us;
	h->to = to;
	h->heard = heard;
	h->kind = kind;
	h->msg = malloc(len);
	if (h->msg == NULL)
		abort();
	memcpy(h->msg, msg, len);
	h->len = len;
	if (s->hcount == 1)
		in->ops->set_timer(in, DAG_TIMER_ADVERSARY, s->release_us);
	weft_env_metric(in, "dag.adv.withheld", 1);
}

/* withhold: sends what is due, and waits for the next. */
static void release(struct dag_adversary *s)
{
	struct weft_env *in = s->wrap.inner;
	uint64_t now = weft_env_now(in);
	for (; s->hcount && s->held[s->hhead].due_us <= now; s->hhead = (s->hhead + 1) % s->hcap, s->hcount--) {
		struct held *h = &s->held[s->hhead];
		send_group(s, HEARS_LATE, h->heard - 1, h->to, h->kind, h->msg, h->len);
		free(h->msg);
	}
	if (s->hcount)
		in->ops->set_timer(in, DAG_TIMER_ADVERSARY, s->held[s->hhead].due_us - now);
}

/* Every message the consensus and its BRB send passes here. */
static int route(struct dag_adversary *s, uint32_t to, const char *kind, const uint8_t *msg, size_t len)
{
	uint32_t sender;
	uint64_t seq, type;
	bool brb = len > 0 && (msg[0] == DAG_BRB_CHANNEL || msg[0] == TWIN_CHANNEL);
	bool ours = brb && weft_brb_message_instance(msg + 1, len - 1, &sender, &seq, &type) == 0 && sender == s->d.self;
	switch (s->kind) {
	case ADV_WITHHOLD:
		if (!ours || !(s->withheld >> (seq % s->every) & 1))
			break;
		withhold(s, to, kind, msg, len, type == 0);
		return 0;
	case ADV_EQUIVOCATE_REFS:
		if (!brb || (msg[0] == DAG_BRB_CHANNEL && !ours))
			break;
		if (ours && msg[0] == TWIN_CHANNEL) {
			weft_mpw_reset(&s->out);
			weft_mpw_raw(&s->out, msg, len);
			s->out.buf[0] = DAG_BRB_CHANNEL;
			send_group(s, HEARS_ALL, HEARS_ALL, to, kind, s->out.buf, len);
		} else if (ours) {
			send_group(s, HEARS_LATE, HEARS_LATE, to, kind, msg, len);
		}
		return 0; /* the second instance says nothing but its own broadcasts */
	case ADV_LYING_SYNC:
		if (!brb)
			msg = lie(s, msg, &len);
		break;
	case ADV_BAD_REFS:
	case ADV_COPY_TXS:
	case ADV_BRB:
		break;
	}
	struct weft_env *in = s->wrap.inner;
	return to == UINT32_MAX ? weft_env_multicast(in, kind, msg, len) : weft_env_send(in, to, kind, msg, len);
}

static int adv_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	return route(adversary_of(env), to, kind, msg, len);
}

static int adv_multicast(struct weft_env *env, const char *kind, const void *msg, size_t len)
{
	return route(adversary_of(env), UINT32_MAX, kind, msg, len);
}

/* ---- parameters ---- */

/* Sets s->audience[p] to hears for the nodes p of the list params.adversary
 * key: 0, WEFT_NOTFOUND or WEFT_EINVAL. */
static int read_nodes(struct dag_adversary *s, const char *key, enum hears hears)
{
	const uint8_t *val;
	size_t vlen;
	struct weft_mp_reader r;
	uint32_t count, p;
	int rc = weft_params_value(s->params, s->plen, key, &val, &vlen);
	if (rc != 0)
		return rc;
	weft_mp_reader_init(&r, val, vlen);
	if (weft_mp_read_array(&r, &count))
		return WEFT_EINVAL;
	for (uint32_t i = 0; i < count; i++) {
		if (weft_mp_read_u32(&r, &p) || p >= s->d.n)
			return WEFT_EINVAL;
		s->audience[p] = (uint8_t)hears;
	}
	return 0;
}

/* Reads params.adversary.audience (who hears all of our broadcasts) and,
 * for withhold, voters (who hear their first message only); without an
 * audience, the first k other nodes, or the last k with last set. */
static int read_audience(struct dag_adversary *s, uint32_t k, bool last)
{
	uint32_t n = s->d.n;
	s->audience = calloc(n, 1);
	if (s->audience == NULL)
		abort();
	int rc = read_nodes(s, "voters", HEARS_FIRST);
	if (rc != 0 && rc != WEFT_NOTFOUND)
		return rc;
	rc = read_nodes(s, "audience", HEARS_ALL);
	for (uint32_t i = 0, taken = 0; rc == WEFT_NOTFOUND && i < n && taken < k; i++) {
		uint32_t p = last ? n - 1 - i : i;
		if (p != s->d.self)
			s->audience[p] = HEARS_ALL, taken++;
	}
	return rc == WEFT_NOTFOUND ? 0 : rc;
}

/* The index of the string parameter key in names[count]: 0 and *out (-1
 * when absent), or WEFT_EINVAL for another value. */
static int read_choice(struct dag_adversary *s, const char *key, const char *const *names, int count, int *out)
{
	const char *v;
	uint32_t vlen;
	*out = -1;
	if (weft_params_str(s->params, s->plen, key, &v, &vlen) == WEFT_NOTFOUND)
		return 0;
	for (int i = 0; i < count; i++)
		if (weft_params_str_is(s->params, s->plen, key, names[i]))
			*out = i;
	return *out < 0 ? WEFT_EINVAL : 0;
}

/* The list of phases params.adversary key (each below s->every) as a bit
 * mask (absent: dflt). */
static int read_phases(struct dag_adversary *s, const char *key, uint64_t dflt, uint64_t *mask)
{
	const uint8_t *val;
	size_t vlen;
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t phase;
	*mask = dflt;
	int rc = weft_params_value(s->params, s->plen, key, &val, &vlen);
	if (rc != 0)
		return rc == WEFT_NOTFOUND ? 0 : rc;
	weft_mp_reader_init(&r, val, vlen);
	if (weft_mp_read_array(&r, &count))
		return WEFT_EINVAL;
	*mask = 0;
	for (uint32_t i = 0; i < count; i++) {
		if (weft_mp_read_uint(&r, &phase) || phase >= s->every)
			return WEFT_EINVAL;
		*mask |= 1ull << phase;
	}
	return 0;
}

/* Every key of params.adversary is one the strategy takes (keys, NULL
 * ended; NULL: any). */
static int known_keys(struct dag_adversary *s, const char *const *keys)
{
	struct weft_mp_reader r;
	uint32_t pairs;
	if (s->params == NULL || keys == NULL)
		return 0;
	weft_mp_reader_init(&r, s->params, s->plen);
	if (weft_mp_read_map(&r, &pairs))
		return WEFT_EINVAL;
	for (uint32_t i = 0; i < pairs; i++) {
		const char *k;
		uint32_t klen;
		bool known = false;
		if (weft_mp_read_str(&r, &k, &klen) || weft_mp_skip(&r))
			return WEFT_EINVAL;
		for (const char *const *x = keys; *x; x++)
			known |= strlen(*x) == klen && memcmp(*x, k, klen) == 0;
		if (!known) {
			weft_env_log(s->d.env, WEFT_LOG_ERROR, "dag.adversary", "unknown parameter '%.*s'", (int)klen, k);
			return WEFT_EINVAL;
		}
	}
	return 0;
}

/* The strategy's own parameters, once the consensus's are known. */
static int strategy_params(struct dag_adversary *s)
{
	static const char *const keys_bad_refs[] = {"hide", NULL};
	static const char *const keys_withhold[] = {"audience", "voters", "release_ms", "every", "withhold", "skip",
						    "bad_refs", NULL};
	static const char *const keys_equivocate[] = {"audience", NULL};
	static const char *const keys_copy[] = {"max", NULL};
	static const char *const keys_lying[] = {"status", "range", NULL};
	struct dag *d = &s->d;
	switch (s->kind) {
	case ADV_BAD_REFS: {
		int hide;
		if (read_choice(s, "hide", hides, HIDES, &hide))
			return WEFT_EINVAL;
		s->hide = hide < 0 ? HIDE_ALL : (enum hide)hide;
		return known_keys(s, keys_bad_refs);
	}
	case ADV_WITHHOLD: {
		uint64_t ms = d->timeout_us / 1000;
		s->every = 1;
		if (weft_params_uint(s->params, s->plen, "release_ms", &ms) == WEFT_EINVAL || ms > 3600000 ||
		    weft_params_uint(s->params, s->plen, "every", &s->every) == WEFT_EINVAL || s->every == 0 ||
		    s->every > 64 || read_phases(s, "withhold", ~0ull, &s->withheld) ||
		    read_phases(s, "skip", 0, &s->skipped) || read_phases(s, "bad_refs", 0, &s->bad_phases))
			return WEFT_EINVAL;
		s->release_us = ms * 1000;
		/* With the audience and us an echo quorum, ceil((n + f + 1) / 2),
		 * every BRB delivers our broadcasts without the others. */
		return read_audience(s, (d->n + d->f + 2) / 2 - 1, false) ? WEFT_EINVAL : known_keys(s, keys_withhold);
	}
	case ADV_EQUIVOCATE_REFS:
		return read_audience(s, (d->n - 1) / 2, true) ? WEFT_EINVAL : known_keys(s, keys_equivocate);
	case ADV_COPY_TXS:
		s->copy_max = 64;
		if (weft_params_uint(s->params, s->plen, "max", &s->copy_max) == WEFT_EINVAL || s->copy_max > d->batch_txs)
			return WEFT_EINVAL;
		return known_keys(s, keys_copy);
	case ADV_LYING_SYNC:
		if (read_choice(s, "status", status_lies, STATUS_LIES, &s->status_lie) ||
		    read_choice(s, "range", range_lies, RANGE_LIES, &s->range_lie))
			return WEFT_EINVAL;
		return known_keys(s, keys_lying);
	case ADV_BRB:
		return 0; /* the BRB strategy's parameters are its own */
	}
	return 0;
}

/* ---- the ops ---- */

static int adv_init(void *state, enum adv_kind kind, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct dag_adversary *s = state;
	s->kind = kind;
	s->d.adv = s; /* before the consensus's init, which calls dag_adv_child */
	weft_env_wrap_init(&s->wrap, env);
	s->wrap.ops.send = adv_send;
	s->wrap.ops.multicast = adv_multicast;
	weft_mpw_init(&s->out);
	if (weft_params_value(params, plen, "adversary", &s->params, &s->plen) != 0)
		s->params = NULL, s->plen = 0; /* absent (weftd --byzantine gives an empty map) */
	int rc = weft_dag_consensus.init(&s->d, &s->wrap.env, params, plen);
	if (rc == 0 && (rc = strategy_params(s)) != 0)
		weft_env_log(env, WEFT_LOG_ERROR, "dag.adversary", "bad parameters for the strategy");
	s->params = NULL;
	return rc;
}

static int adv_start(void *state)
{
	struct dag_adversary *s = state;
	int rc = s->twin.ops ? weft_child_start(&s->twin) : 0;
	return rc ? rc : weft_dag_consensus.start(&s->d);
}

static int adv_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct dag_adversary *s = state;
	if (s->twin.ops && len > 0 && msg[0] == DAG_BRB_CHANNEL)
		s->twin.ops->on_message(s->twin.state, from, msg + 1, len - 1);
	return weft_dag_consensus.on_message(&s->d, from, msg, len);
}

static void adv_on_timer(void *state, uint64_t id)
{
	struct dag_adversary *s = state;
	if (id == DAG_TIMER_ADVERSARY)
		release(s);
	else if (!(s->twin.ops && weft_child_on_timer(&s->twin, id)))
		weft_dag_consensus.on_timer(&s->d, id);
}

static int adv_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	return weft_dag_consensus.on_request(&((struct dag_adversary *)state)->d, req, len, reply);
}

static void adv_on_request_batch(void *state, size_t count, const uint8_t *const *reqs, const size_t *lens,
				 struct weft_mpw *replies, int *rcs)
{
	weft_dag_consensus.on_request_batch(&((struct dag_adversary *)state)->d, count, reqs, lens, replies, rcs);
}

static int adv_query(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	return weft_dag_consensus.query(&((struct dag_adversary *)state)->d, what, arg, alen, reply);
}

static void adv_info(void *state, struct weft_mpw *w)
{
	weft_dag_consensus.info(&((struct dag_adversary *)state)->d, w);
}

static void adv_destroy(void *state)
{
	struct dag_adversary *s = state;
	weft_dag_consensus.destroy(&s->d);
	if (s->twin.ops)
		weft_child_destroy(&s->twin);
	for (uint32_t i = 0; i < s->hcount; i++)
		free(s->held[(s->hhead + i) % s->hcap].msg);
	free(s->held);
	free(s->audience);
	weft_mpw_free(&s->out);
}

#define ADV_INIT(NAME, KIND)                                                                             \
	static int NAME##_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)    \
	{                                                                                                \
		return adv_init(state, KIND, env, params, plen);                                          \
	}
ADV_INIT(bad_refs, ADV_BAD_REFS)
ADV_INIT(withhold, ADV_WITHHOLD)
ADV_INIT(equivocate_refs, ADV_EQUIVOCATE_REFS)
ADV_INIT(copy_txs, ADV_COPY_TXS)
ADV_INIT(lying_sync, ADV_LYING_SYNC)
ADV_INIT(brb, ADV_BRB)

#define ADV_OPS(NAME, HELP)                                                                                      \
	static const struct weft_proto_ops NAME##_ops = {                                                        \
		.abi = WEFT_PROTO_ABI, .name = "dag.consensus/" #NAME, .state_size = sizeof(struct dag_adversary), \
		.init = NAME##_init, .start = adv_start, .on_message = adv_on_message, .on_timer = adv_on_timer,   \
		.on_request = adv_on_request, .on_request_batch = adv_on_request_batch, .query = adv_query,         \
		.info = adv_info, .destroy = adv_destroy,                                                          \
	};
WEFT_DAG_STRATEGIES(ADV_OPS)

#define ADV_STRATEGY(NAME, HELP) {#NAME, HELP, &NAME##_ops},
const struct weft_proto_strategy dag_strategies[] = {WEFT_DAG_STRATEGIES(ADV_STRATEGY){NULL, NULL, NULL}};
