/* checkers.c - weft-sim's property checkers and its recorded history.
 *
 * sim_check judges a history of REQUEST and DELIVER events against
 * validity, agreement, integrity, totality, prefix ordering, no-duplicates
 * and inclusion, speaking only about the nodes marked correct (events of
 * other nodes, and of node numbers >= n, are ignored).  It makes one pass
 * over the REQUEST events and one over the DELIVER events, with
 * open-addressing hash tables keyed on (origin, seq) ("items") and on
 * digests, and one bitset of correct nodes per table entry, so time is
 * linear in the history and memory is (distinct items and digests) times
 * (correct nodes) bits.  Each checker keeps its own first counterexample;
 * the verdict reports the one of the lowest violated checker bit.
 *
 * An outcome is a digest or the "invalid" verdict; two invalid verdicts are
 * the same outcome whatever their digest field holds, and an invalid
 * verdict outputs no payload (validity, no_duplicates and inclusion do not
 * look at it). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "weft/util.h"

#define ALL_CHECKS                                                                                       \
	(SIM_CHECK_VALIDITY | SIM_CHECK_AGREEMENT | SIM_CHECK_INTEGRITY | SIM_CHECK_TOTALITY |           \
	 SIM_CHECK_PREFIX | SIM_CHECK_NO_DUP | SIM_CHECK_INCLUSION)
#define NCHECKS 7
#define NONE SIZE_MAX
#define ANY_ORIGIN UINT32_MAX
#define MAX_ENTRIES ((size_t)1 << 31)

static void oom(void)
{
	fputs("weft-sim: out of memory in the checkers\n", stderr);
	abort();
}

/* ---- the history ---- */

void sim_history_add(struct sim_history *h, const struct sim_hist_event *e)
{
	if (h->len == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		if (cap <= h->cap)
			oom();
		h->ev = weft_xrealloc(h->ev, cap, sizeof(*h->ev));
		h->cap = cap;
	}
	h->ev[h->len++] = *e;
}

void sim_history_free(struct sim_history *h)
{
	if (!h)
		return;
	free(h->ev);
	h->ev = NULL;
	h->len = h->cap = 0;
}

/* ---- formatting ---- */

static void fmt_hex8(char out[9], const uint8_t *d)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 4; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[8] = '\0';
}

static void fmt_ms(char out[32], uint64_t us)
{
	snprintf(out, 32, "%llu.%03u", (unsigned long long)(us / 1000), (unsigned)(us % 1000));
}

/* "9f3a22c1" or "invalid". */
static void fmt_outcome(char out[9], const struct sim_hist_event *e)
{
	if (e->invalid)
		memcpy(out, "invalid", 8);
	else
		fmt_hex8(out, e->digest);
}

/* "node 1 delivered (origin 0, seq 3) = 9f3a22c1 at 12.400 ms" */
static void fmt_delivery(char *out, size_t len, const struct sim_hist_event *e)
{
	char d[9], t[32];
	fmt_outcome(d, e);
	fmt_ms(t, e->time_us);
	snprintf(out, len, "node %u delivered (origin %u, seq %llu) = %s at %s ms", (unsigned)e->node,
		 (unsigned)e->origin, (unsigned long long)e->seq, d, t);
}

const char *sim_checker_name(unsigned int bit)
{
	switch ((enum sim_checker)bit) {
	case SIM_CHECK_VALIDITY: return "validity";
	case SIM_CHECK_AGREEMENT: return "agreement";
	case SIM_CHECK_INTEGRITY: return "integrity";
	case SIM_CHECK_TOTALITY: return "totality";
	case SIM_CHECK_PREFIX: return "prefix";
	case SIM_CHECK_NO_DUP: return "no_duplicates";
	case SIM_CHECK_INCLUSION: return "inclusion";
	}
	return "unknown";
}

void sim_history_print_around(FILE *out, const struct sim_history *h, size_t i, size_t radius)
{
	if (!h || h->len == 0)
		return;
	size_t lo = i > radius ? i - radius : 0;
	size_t hi = i + radius;
	if (hi < i || hi >= h->len)
		hi = h->len - 1;
	for (size_t k = lo; k <= hi; k++) {
		const struct sim_hist_event *e = &h->ev[k];
		char t[32], d[9];
		fmt_ms(t, e->time_us);
		fmt_hex8(d, e->digest);
		fprintf(out, "%c [%zu] t=%sms node=%u ", k == i ? '>' : ' ', k, t, (unsigned)e->node);
		switch (e->kind) {
		case SIM_H_REQUEST:
			fprintf(out, "REQUEST digest=%s\n", d);
			break;
		case SIM_H_DELIVER:
			fprintf(out, "DELIVER origin=%u seq=%llu ", (unsigned)e->origin, (unsigned long long)e->seq);
			if (e->invalid)
				fprintf(out, "invalid\n");
			else
				fprintf(out, "digest=%s\n", d);
			break;
		}
	}
}

/* ---- open addressing ----
 *
 * A slot holds (tag << 32) | (entry + 1), 0 when empty; the tag is 32 bits
 * of the key's hash and the home slot is tag & mask, so growing needs no
 * keys.  Entries live in the owner's arrays, in insertion order. */

struct tab {
	uint64_t *slot;
	size_t mask;
	size_t len;
};

static void tab_init(struct tab *t)
{
	t->mask = 1023;
	t->len = 0;
	t->slot = weft_xcalloc(t->mask + 1, sizeof(*t->slot));
}

static void tab_free(struct tab *t)
{
	free(t->slot);
	t->slot = NULL;
}

static void tab_put(uint64_t *slot, size_t mask, uint64_t s)
{
	size_t p = (size_t)(s >> 32) & mask;
	while (slot[p])
		p = (p + 1) & mask;
	slot[p] = s;
}

/* Adds entry t->len with this tag; returns its index. */
static uint32_t tab_add(struct tab *t, uint32_t tag)
{
	if (t->len >= MAX_ENTRIES)
		oom();
	if (2 * (t->len + 1) > t->mask + 1) {
		size_t mask = 2 * t->mask + 1;
		uint64_t *slot = weft_xcalloc(mask + 1, sizeof(*slot));
		for (size_t i = 0; i <= t->mask; i++)
			if (t->slot[i])
				tab_put(slot, mask, t->slot[i]);
		free(t->slot);
		t->slot = slot;
		t->mask = mask;
	}
	uint32_t idx = (uint32_t)t->len++;
	tab_put(t->slot, t->mask, (uint64_t)tag << 32 | (idx + 1));
	return idx;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint32_t tag_of(uint64_t x)
{
	uint64_t m = mix64(x);
	return (uint32_t)(m ^ (m >> 32));
}

/* ---- bitsets of correct nodes (dense indices), `words` words per entry ---- */

static bool bit_test(const uint64_t *b, uint32_t c)
{
	return (b[c >> 6] >> (c & 63)) & 1;
}

static void bit_set(uint64_t *b, uint32_t c)
{
	b[c >> 6] |= (uint64_t)1 << (c & 63);
}

/* The first dense index below nc whose bit is clear. */
static uint32_t bit_first_clear(const uint64_t *b, uint32_t nc)
{
	for (uint32_t w = 0; (uint64_t)w * 64 < nc; w++)
		if (~b[w]) {
			uint32_t c = w * 64 + (uint32_t)__builtin_ctzll(~b[w]);
			if (c < nc)
				return c;
		}
	return nc;
}

/* ---- items: (origin, seq) delivered by correct nodes ---- */

struct item {
	uint64_t seq;
	uint32_t origin;
	uint32_t first_node;    /* who delivered it first */
	uint32_t ndeliv;        /* distinct correct nodes that delivered it */
	uint32_t req;           /* reqs entry + 1 of (origin, first digest), 0 none */
	uint32_t dig;           /* digs entry + 1 of the first digest, 0 none */
	bool invalid;           /* the first outcome */
	uint8_t digest[WEFT_DIGEST_LEN];
	size_t first_ev;        /* history index of the first delivery */
	size_t other_ev;        /* the first delivery by another node, or NONE */
	size_t alt_ev;          /* first_node's first delivery of another outcome, or NONE */
};

/* ---- digests: (origin, digest) or (ANY_ORIGIN, digest) ---- */

struct dent {
	uint8_t digest[WEFT_DIGEST_LEN];
	uint32_t origin;
	uint32_t count;         /* bits set in its bitset */
	size_t first_ev;        /* the event that created it (a REQUEST for requested entries) */
};

struct dtab {
	struct tab t;
	struct dent *e;
	size_t cap;
	uint64_t *bits;         /* NULL: no bitsets */
	size_t nreq;            /* entries [0, nreq) come from REQUEST events */
};

struct pos {
	uint8_t digest[WEFT_DIGEST_LEN];
	bool invalid;
	size_t ev;              /* the first delivery of this log position */
};

struct ctx {
	const struct sim_history *h;
	uint32_t n;
	const bool *correct;
	unsigned int run, bad;
	uint32_t nc;
	uint32_t *cidx;         /* node -> dense correct index, UINT32_MAX when not correct */
	uint32_t *cnode;        /* dense index -> node */
	size_t words;

	struct tab it;          /* items */
	struct item *items;
	size_t icap;
	uint64_t *ibits;        /* per item: correct nodes that delivered it (integrity, totality) */

	struct dtab reqs;       /* (origin, digest) requested by correct nodes; bits: who delivered it */
	struct dtab digs;       /* digest -> correct nodes that output it */

	uint64_t *next;         /* prefix: per correct node, its log length */
	struct pos *pos;
	size_t plen, pcap;

	char msg[NCHECKS][1024];
	size_t ev[NCHECKS];
};

static int bit_index(unsigned int bit)
{
	return __builtin_ctz(bit);
}

static bool live(const struct ctx *c, unsigned int bit)
{
	return (c->run & bit) && !(c->bad & bit);
}

__attribute__((format(printf, 4, 5))) static void fail(struct ctx *c, unsigned int bit, size_t ev,
							const char *fmt, ...)
{
	if (c->bad & bit)
		return;
	c->bad |= bit;
	int k = bit_index(bit);
	c->ev[k] = ev;
	int off = snprintf(c->msg[k], sizeof(c->msg[k]), "%s: ", sim_checker_name(bit));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->msg[k] + off, sizeof(c->msg[k]) - (size_t)off, fmt, ap);
	va_end(ap);
}

static bool is_correct(const struct ctx *c, uint32_t node)
{
	return node < c->n && c->cidx[node] != UINT32_MAX;
}

static bool same_outcome(bool inv_a, const uint8_t *da, const struct sim_hist_event *e)
{
	if (inv_a || e->invalid)
		return inv_a == e->invalid;
	return memcmp(da, e->digest, WEFT_DIGEST_LEN) == 0;
}

static uint32_t item_tag(uint32_t origin, uint64_t seq)
{
	return tag_of(seq * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)origin << 17 | origin));
}

/* The item of e's (origin, seq), created (fresh) when new. */
static struct item *item_get(struct ctx *c, const struct sim_hist_event *e, bool *fresh)
{
	uint32_t tag = item_tag(e->origin, e->seq);
	size_t mask = c->it.mask;
	for (size_t p = tag & mask;; p = (p + 1) & mask) {
		uint64_t s = c->it.slot[p];
		if (!s)
			break;
		if ((uint32_t)(s >> 32) != tag)
			continue;
		struct item *it = &c->items[(uint32_t)s - 1];
		if (it->seq == e->seq && it->origin == e->origin) {
			*fresh = false;
			return it;
		}
	}
	*fresh = true;
	if (c->it.len == c->icap) {
		c->icap = c->icap ? 2 * c->icap : 1024;
		c->items = weft_xrealloc(c->items, c->icap, sizeof(*c->items));
		if (c->ibits)
			c->ibits = weft_xrealloc(c->ibits, c->icap, c->words * sizeof(*c->ibits));
	}
	uint32_t idx = tab_add(&c->it, tag);
	struct item *it = &c->items[idx];
	memset(it, 0, sizeof(*it));
	it->seq = e->seq;
	it->origin = e->origin;
	it->first_node = e->node;
	it->invalid = e->invalid;
	memcpy(it->digest, e->digest, WEFT_DIGEST_LEN);
	it->other_ev = it->alt_ev = NONE;
	if (c->ibits)
		memset(c->ibits + idx * c->words, 0, c->words * sizeof(*c->ibits));
	return it;
}

static void dtab_init(struct dtab *d, bool bits)
{
	memset(d, 0, sizeof(*d));
	tab_init(&d->t);
	d->bits = bits ? weft_xcalloc(1, 1) : NULL;
}

static void dtab_free(struct dtab *d)
{
	tab_free(&d->t);
	free(d->e);
	free(d->bits);
}

/* Entry + 1 of (origin, digest), 0 when absent and !add; added (with a
 * clear bitset) when absent and add. */
static uint32_t dtab_find(struct ctx *c, struct dtab *d, uint32_t origin, const uint8_t *digest, bool add,
			  size_t ev)
{
	uint64_t h8;
	memcpy(&h8, digest, sizeof(h8));
	uint32_t tag = tag_of(h8 ^ (uint64_t)origin * 0xff51afd7ed558ccdULL);
	size_t mask = d->t.mask;
	for (size_t p = tag & mask;; p = (p + 1) & mask) {
		uint64_t s = d->t.slot[p];
		if (!s)
			break;
		if ((uint32_t)(s >> 32) != tag)
			continue;
		const struct dent *x = &d->e[(uint32_t)s - 1];
		if (x->origin == origin && memcmp(x->digest, digest, WEFT_DIGEST_LEN) == 0)
			return (uint32_t)s;
	}
	if (!add)
		return 0;
	if (d->t.len == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		d->e = weft_xrealloc(d->e, d->cap, sizeof(*d->e));
		if (d->bits)
			d->bits = weft_xrealloc(d->bits, d->cap, c->words * sizeof(*d->bits));
	}
	uint32_t idx = tab_add(&d->t, tag);
	struct dent *x = &d->e[idx];
	memcpy(x->digest, digest, WEFT_DIGEST_LEN);
	x->origin = origin;
	x->count = 0;
	x->first_ev = ev;
	if (d->bits)
		memset(d->bits + idx * c->words, 0, c->words * sizeof(*d->bits));
	return idx + 1;
}

/* Sets dense node ci in entry k's bitset; false when it was already set. */
static bool dtab_mark(struct ctx *c, struct dtab *d, uint32_t k, uint32_t ci)
{
	uint64_t *b = d->bits + (size_t)k * c->words;
	if (bit_test(b, ci))
		return false;
	bit_set(b, ci);
	d->e[k].count++;
	return true;
}

/* The latest event before i that satisfies the test (for messages only). */
static size_t find_before(const struct sim_history *h, size_t i, const struct sim_hist_event *e, bool by_digest)
{
	while (i-- > 0) {
		const struct sim_hist_event *x = &h->ev[i];
		if (x->kind != SIM_H_DELIVER || x->node != e->node)
			continue;
		if (by_digest ? (!x->invalid && memcmp(x->digest, e->digest, WEFT_DIGEST_LEN) == 0)
			      : (x->origin == e->origin && x->seq == e->seq))
			return i;
	}
	return NONE;
}

/* Phase 1: the requests of correct nodes. */
static void scan_requests(struct ctx *c)
{
	const struct sim_history *h = c->h;
	bool want_req = c->run & (SIM_CHECK_VALIDITY | SIM_CHECK_INTEGRITY);
	bool want_dig = c->run & SIM_CHECK_INCLUSION;
	for (size_t i = 0; i < h->len; i++) {
		const struct sim_hist_event *e = &h->ev[i];
		if (e->kind != SIM_H_REQUEST || !is_correct(c, e->node))
			continue;
		if (want_req)
			dtab_find(c, &c->reqs, e->node, e->digest, true, i);
		if (want_dig)
			dtab_find(c, &c->digs, ANY_ORIGIN, e->digest, true, i);
	}
	c->reqs.nreq = c->reqs.t.len;
	c->digs.nreq = c->digs.t.len;
}

/* Until the first violation every delivery by a node other than the first
 * deliverer carries the first outcome, so remembering the first delivery by
 * another node and the first deliverer's first deviating one suffices. */
static void check_agreement(struct ctx *c, struct item *it, const struct sim_hist_event *e, size_t i, bool same)
{
	char a[256], b[256];
	size_t other = NONE;
	if (e->node != it->first_node) {
		if (!same)
			other = it->first_ev;
		else if (it->alt_ev != NONE)
			other = it->alt_ev;
		else if (it->other_ev == NONE)
			it->other_ev = i;
	} else if (!same) {
		if (it->other_ev != NONE)
			other = it->other_ev;
		else if (it->alt_ev == NONE)
			it->alt_ev = i;
	}
	if (other == NONE)
		return;
	fmt_delivery(a, sizeof(a), &c->h->ev[other]);
	fmt_delivery(b, sizeof(b), e);
	fail(c, SIM_CHECK_AGREEMENT, i, "%s but %s", a, b);
}

static void check_prefix(struct ctx *c, const struct sim_hist_event *e, size_t i, uint32_t ci)
{
	char a[256], b[256];
	uint64_t want = c->next[ci];
	if (e->seq != want) {
		fmt_delivery(b, sizeof(b), e);
		if (e->seq > want)
			fail(c, SIM_CHECK_PREFIX, i,
			     "%s but its log had %llu entr%s: position %llu was skipped (gap in node %u's log)", b,
			     (unsigned long long)want, want == 1 ? "y" : "ies", (unsigned long long)want,
			     (unsigned)e->node);
		else
			fail(c, SIM_CHECK_PREFIX, i,
			     "%s but its log already had %llu entr%s: position %llu delivered out of order "
			     "(node %u's log should continue at position %llu)",
			     b, (unsigned long long)want, want == 1 ? "y" : "ies", (unsigned long long)e->seq,
			     (unsigned)e->node, (unsigned long long)want);
		return;
	}
	if (want < c->plen) {
		struct pos *p = &c->pos[want];
		if (!same_outcome(p->invalid, p->digest, e)) {
			fmt_delivery(a, sizeof(a), &c->h->ev[p->ev]);
			fmt_delivery(b, sizeof(b), e);
			fail(c, SIM_CHECK_PREFIX, i, "%s but %s: the logs of nodes %u and %u fork at position %llu",
			     a, b, (unsigned)c->h->ev[p->ev].node, (unsigned)e->node, (unsigned long long)want);
			return;
		}
	} else {
		if (c->plen == c->pcap) {
			c->pcap = c->pcap ? 2 * c->pcap : 1024;
			c->pos = weft_xrealloc(c->pos, c->pcap, sizeof(*c->pos));
		}
		struct pos *p = &c->pos[c->plen++];
		memcpy(p->digest, e->digest, WEFT_DIGEST_LEN);
		p->invalid = e->invalid;
		p->ev = i;
	}
	c->next[ci] = want + 1;
}

/* Phase 2: every delivery by a correct node, in history order. */
static void scan_deliveries(struct ctx *c)
{
	const struct sim_history *h = c->h;
	const unsigned int item_checks = ALL_CHECKS & ~(unsigned)SIM_CHECK_PREFIX;
	bool use_items = c->run & item_checks;
	bool use_req = c->run & (SIM_CHECK_VALIDITY | SIM_CHECK_INTEGRITY);
	bool use_dig = c->run & (SIM_CHECK_NO_DUP | SIM_CHECK_INCLUSION);
	bool add_dig = c->run & SIM_CHECK_NO_DUP;
	char b[256];

	for (size_t i = 0; i < h->len; i++) {
		const struct sim_hist_event *e = &h->ev[i];
		if (e->kind != SIM_H_DELIVER || !is_correct(c, e->node))
			continue;
		uint32_t ci = c->cidx[e->node];

		if (live(c, SIM_CHECK_PREFIX))
			check_prefix(c, e, i, ci);
		if (!use_items)
			continue;

		bool fresh;
		struct item *it = item_get(c, e, &fresh);
		size_t k = (size_t)(it - c->items);
		if (fresh) {
			it->first_ev = i;
			if (use_req && !e->invalid)
				it->req = dtab_find(c, &c->reqs, e->origin, e->digest, false, i);
			if (use_dig && !e->invalid)
				it->dig = dtab_find(c, &c->digs, ANY_ORIGIN, e->digest, add_dig, i);
		}
		bool same = fresh || same_outcome(it->invalid, it->digest, e);

		if (!fresh && live(c, SIM_CHECK_AGREEMENT))
			check_agreement(c, it, e, i, same);

		if (c->ibits) {
			uint64_t *bits = c->ibits + k * c->words;
			if (!bit_test(bits, ci)) {
				bit_set(bits, ci);
				it->ndeliv++;
			} else if (live(c, SIM_CHECK_INTEGRITY)) {
				const struct sim_hist_event *x = &h->ev[find_before(h, i, e, false)];
				char d1[9], d2[9], t1[32], t2[32];
				fmt_outcome(d1, x);
				fmt_outcome(d2, e);
				fmt_ms(t1, x->time_us);
				fmt_ms(t2, e->time_us);
				fail(c, SIM_CHECK_INTEGRITY, i,
				     "node %u delivered (origin %u, seq %llu) twice: = %s at %s ms, then = %s at %s ms",
				     (unsigned)e->node, (unsigned)e->origin, (unsigned long long)e->seq, d1, t1, d2, t2);
			}
		}

		uint32_t r = 0;
		if (use_req && !e->invalid)
			r = same ? it->req : dtab_find(c, &c->reqs, e->origin, e->digest, false, i);
		if (live(c, SIM_CHECK_INTEGRITY) && is_correct(c, e->origin) && !r) {
			fmt_delivery(b, sizeof(b), e);
			if (e->invalid)
				fail(c, SIM_CHECK_INTEGRITY, i,
				     "%s but its origin %u is correct and cannot be judged inconsistent", b,
				     (unsigned)e->origin);
			else
				fail(c, SIM_CHECK_INTEGRITY, i,
				     "%s but its origin %u is correct and never requested that digest", b,
				     (unsigned)e->origin);
		}
		if (r && (c->run & SIM_CHECK_VALIDITY))
			dtab_mark(c, &c->reqs, r - 1, ci);

		if (use_dig && !e->invalid) {
			uint32_t d = same ? it->dig : dtab_find(c, &c->digs, ANY_ORIGIN, e->digest, add_dig, i);
			if (d && !dtab_mark(c, &c->digs, d - 1, ci) && live(c, SIM_CHECK_NO_DUP)) {
				const struct sim_hist_event *x = &h->ev[find_before(h, i, e, true)];
				char dg[9], t1[32], t2[32];
				fmt_hex8(dg, e->digest);
				fmt_ms(t1, x->time_us);
				fmt_ms(t2, e->time_us);
				fail(c, SIM_CHECK_NO_DUP, i,
				     "node %u delivered digest %s twice: as (origin %u, seq %llu) at %s ms, "
				     "then as (origin %u, seq %llu) at %s ms",
				     (unsigned)e->node, dg, (unsigned)x->origin, (unsigned long long)x->seq, t1,
				     (unsigned)e->origin, (unsigned long long)e->seq, t2);
			}
		}
	}
}

/* Phase 3: what must have happened by the end of the history. */
static void check_requested(struct ctx *c, struct dtab *d, unsigned int bit)
{
	if (!live(c, bit))
		return;
	for (size_t k = 0; k < d->nreq; k++) {
		const struct dent *x = &d->e[k];
		if (x->count >= c->nc)
			continue;
		const struct sim_hist_event *e = &c->h->ev[x->first_ev];
		uint32_t miss = c->cnode[bit_first_clear(d->bits + k * c->words, c->nc)];
		char dg[9], t[32], what[64];
		fmt_hex8(dg, e->digest);
		fmt_ms(t, e->time_us);
		if (bit == SIM_CHECK_VALIDITY)
			snprintf(what, sizeof(what), "delivered it from origin %u", (unsigned)e->node);
		else
			snprintf(what, sizeof(what), "output it");
		fail(c, bit, x->first_ev, "node %u requested %s at %s ms but node %u never %s (%u of %u correct nodes did)",
		     (unsigned)e->node, dg, t, (unsigned)miss, what, (unsigned)x->count, (unsigned)c->nc);
		return;
	}
}

static void check_totality(struct ctx *c)
{
	if (!live(c, SIM_CHECK_TOTALITY))
		return;
	for (size_t k = 0; k < c->it.len; k++) {
		const struct item *it = &c->items[k];
		if (it->ndeliv >= c->nc)
			continue;
		uint32_t miss = c->cnode[bit_first_clear(c->ibits + k * c->words, c->nc)];
		char a[256];
		fmt_delivery(a, sizeof(a), &c->h->ev[it->first_ev]);
		fail(c, SIM_CHECK_TOTALITY, it->first_ev,
		     "%s but node %u never delivered it (%u of %u correct nodes did)", a, (unsigned)miss,
		     (unsigned)it->ndeliv, (unsigned)c->nc);
		return;
	}
}

int sim_check(const struct sim_history *h, uint32_t n, const bool *correct, unsigned int checkers,
	      struct sim_verdict *v)
{
	static const struct sim_history empty;
	struct ctx *c = weft_xcalloc(1, sizeof(*c));
	c->h = h ? h : &empty;
	c->n = n;
	c->correct = correct;
	c->run = checkers & ALL_CHECKS;
	c->cidx = weft_xcalloc(n, sizeof(*c->cidx));
	c->cnode = weft_xcalloc(n, sizeof(*c->cnode));
	for (uint32_t i = 0; i < n; i++) {
		c->cidx[i] = UINT32_MAX;
		if (!correct || correct[i]) {
			c->cnode[c->nc] = i;
			c->cidx[i] = c->nc++;
		}
	}
	c->words = (c->nc + 63) / 64;

	if (c->nc > 0 && c->run) {
		tab_init(&c->it);
		if (c->run & (SIM_CHECK_INTEGRITY | SIM_CHECK_TOTALITY))
			c->ibits = weft_xcalloc(1, 1);
		dtab_init(&c->reqs, c->run & SIM_CHECK_VALIDITY);
		dtab_init(&c->digs, c->run & (SIM_CHECK_NO_DUP | SIM_CHECK_INCLUSION));
		if (c->run & SIM_CHECK_PREFIX)
			c->next = weft_xcalloc(c->nc, sizeof(*c->next));

		if (c->run & (SIM_CHECK_VALIDITY | SIM_CHECK_INTEGRITY | SIM_CHECK_INCLUSION))
			scan_requests(c);
		scan_deliveries(c);
		check_requested(c, &c->reqs, SIM_CHECK_VALIDITY);
		check_totality(c);
		check_requested(c, &c->digs, SIM_CHECK_INCLUSION);

		tab_free(&c->it);
		free(c->items);
		free(c->ibits);
		dtab_free(&c->reqs);
		dtab_free(&c->digs);
		free(c->next);
		free(c->pos);
	}

	memset(v, 0, sizeof(*v));
	v->checked = c->run;
	v->violated = c->bad;
	if (c->bad) {
		int k = bit_index(c->bad);
		snprintf(v->first, sizeof(v->first), "%s", c->msg[k]);
		v->first_event = c->ev[k];
	}
	int nbad = __builtin_popcount(c->bad);
	free(c->cidx);
	free(c->cnode);
	free(c);
	return nbad;
}
