/* checkers.c - weft-sim's property checkers and its recorded history.
 *
 * sim_check judges a history of REQUEST, DELIVER and RESTART events against
 * validity, agreement, integrity, totality, prefix ordering, no-duplicates,
 * inclusion, the inclusion fraction and catch-up after faults, and the
 * nodes' final states against state_hash, speaking only about the nodes
 * marked correct (events of other nodes, and of node numbers >= n, are
 * ignored).  It makes one pass over the REQUEST events and one over the
 * others, with open-addressing hash tables keyed on (origin, seq) ("items")
 * and on digests, and one bitset of correct nodes per table entry, so time
 * is linear in the history and memory is (distinct items and digests) times
 * (correct nodes) bits.  Each checker keeps its own first counterexample;
 * the verdict reports the one of the lowest violated checker bit.
 *
 * An outcome is a digest or the "invalid" verdict; two invalid verdicts are
 * the same outcome whatever their digest field holds, and an invalid
 * verdict outputs no payload (validity, no_duplicates and inclusion do not
 * look at it).
 *
 * Ordered logs: for ordering protocols DELIVER's seq is the log position.
 * Each correct node's log is followed per incarnation: a restart that
 * wiped the node's store starts a new one, whose first output may come at
 * any position (the node rejoined by state sync, and the positions before
 * it came with the synced state) and whose outputs may repeat what the
 * wiped incarnation output.  A node that logs "state.synced position=P"
 * (it installed a snapshot: SIM_H_SYNCED) goes on at P.  Everywhere else a
 * log must continue at its next position. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "weft/util.h"

#define LAST_CHECK SIM_CHECK_STORE_AVAILABILITY
#define ALL_CHECKS ((LAST_CHECK << 1) - 1)
#define NCHECKS 10
/* The checkers that follow each correct node's ordered log. */
#define LOG_CHECKS (SIM_CHECK_PREFIX | SIM_CHECK_INCLUSION | SIM_CHECK_INCLUSION_FRACTION | SIM_CHECK_CATCH_UP)
/* The checkers that need, per requested digest, the correct nodes that output it. */
#define OUTPUT_CHECKS (SIM_CHECK_NO_DUP | SIM_CHECK_INCLUSION | SIM_CHECK_INCLUSION_FRACTION)
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
	case SIM_CHECK_INCLUSION_FRACTION: return "inclusion_fraction";
	case SIM_CHECK_CATCH_UP: return "catch_up";
	case SIM_CHECK_STATE_HASH: return "state_hash";
	case SIM_CHECK_STORE_INTEGRITY: return "store_integrity";
	case SIM_CHECK_STORE_AVAILABILITY: return "store_availability";
	case SIM_CHECK_CHANNEL_CONSERVATION: return "channel_conservation";
	case SIM_CHECK_CHANNEL_PROGRESS: return "channel_progress";
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
		case SIM_H_RESTART:
			fprintf(out, "RESTART%s\n", e->wiped ? " store wiped" : "");
			break;
		case SIM_H_SYNCED:
			fprintf(out, "SYNCED position=%llu\n", (unsigned long long)e->seq);
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

static void bit_clear(uint64_t *b, uint32_t c)
{
	b[c >> 6] &= ~((uint64_t)1 << (c & 63));
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

/* A position of the agreed log: the first outcome a correct node output there. */
struct pos {
	uint8_t digest[WEFT_DIGEST_LEN];
	bool invalid;
	bool known;             /* some correct node output this position */
	size_t ev;              /* the first delivery of this log position */
};

/* A correct node's ordered log in its current incarnation. */
struct nlog {
	uint64_t next;          /* it holds positions [0, next) */
	uint64_t synced;        /* positions [0, synced) came with state sync, not as outputs */
	bool rejoining;         /* restarted with a wiped store and output nothing since */
	uint64_t held_then;     /* catch_up: positions it held when the last fault window ended */
	uint64_t caught_up_us;  /* catch_up: when it first held every target position; SIM_NEVER: not yet */
};

struct ctx {
	const struct sim_history *h;
	const struct sim_check_input *in;
	uint32_t n;
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

	struct nlog *log;       /* per correct node, when a LOG_CHECKS checker runs */
	struct pos *pos;        /* the agreed log */
	size_t plen, pcap;

	bool catch_pending;     /* catch_up: the last fault window has not ended yet in the scan */
	uint64_t catch_target;  /* positions output by correct nodes when it ended */
	size_t catch_ev;        /* the first event after it ended */

	char msg[NCHECKS][1024];
	size_t ev[NCHECKS];
	uint64_t when[NCHECKS];
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
	if (!(c->run & bit) || (c->bad & bit))
		return;
	c->bad |= bit;
	int k = bit_index(bit);
	c->ev[k] = ev;
	c->when[k] = ev < c->h->len ? c->h->ev[ev].time_us : 0;
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
	bool want_dig = c->run & (SIM_CHECK_INCLUSION | SIM_CHECK_INCLUSION_FRACTION);
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

/* The agreed log's entry for position p, grown (with unknown entries) to hold it. */
static struct pos *pos_at(struct ctx *c, uint64_t p)
{
	if (p >= MAX_ENTRIES)
		oom();
	if (p >= c->pcap) {
		size_t cap = c->pcap ? c->pcap : 1024;
		while (cap <= p)
			cap *= 2;
		c->pos = weft_xrealloc(c->pos, cap, sizeof(*c->pos));
		memset(c->pos + c->pcap, 0, (cap - c->pcap) * sizeof(*c->pos));
		c->pcap = cap;
	}
	if (p >= c->plen)
		c->plen = (size_t)p + 1;
	return &c->pos[p];
}

/* Follows e, a delivery of correct node ci, in its log and the agreed log;
 * a gap, a position out of order or a fork violates prefix. */
static void track_log(struct ctx *c, const struct sim_hist_event *e, size_t i, uint32_t ci)
{
	struct nlog *l = &c->log[ci];
	char a[256], b[256];
	uint64_t want = l->next;
	uint64_t reach = c->plen + c->h->len; /* beyond every position a log of this history can hold */
	if (l->rejoining && e->seq > want && e->seq <= reach) {
		l->synced = e->seq;
		want = e->seq;
	}
	l->rejoining = false;
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
		if (e->seq < want || e->seq > reach)
			return;
	}
	struct pos *p = pos_at(c, e->seq);
	if (!p->known) {
		memcpy(p->digest, e->digest, WEFT_DIGEST_LEN);
		p->invalid = e->invalid;
		p->known = true;
		p->ev = i;
	} else if (!same_outcome(p->invalid, p->digest, e)) {
		fmt_delivery(a, sizeof(a), &c->h->ev[p->ev]);
		fmt_delivery(b, sizeof(b), e);
		fail(c, SIM_CHECK_PREFIX, i, "%s but %s: the logs of nodes %u and %u fork at position %llu", a, b,
		     (unsigned)c->h->ev[p->ev].node, (unsigned)e->node, (unsigned long long)e->seq);
	}
	l->next = e->seq + 1;
	if (!c->catch_pending && l->caught_up_us == SIM_NEVER && l->next >= c->catch_target)
		l->caught_up_us = e->time_us;
}

/* A correct node restarted.  With its store wiped it starts a new
 * incarnation: an empty log that may begin at any position, and no
 * outputs yet (no_duplicates forgets the old ones). */
static void on_restart(struct ctx *c, const struct sim_hist_event *e, uint32_t ci)
{
	if (!e->wiped)
		return;
	if (c->log) {
		c->log[ci].next = c->log[ci].synced = 0;
		c->log[ci].rejoining = true;
	}
	if (c->digs.bits)
		for (size_t k = 0; k < c->digs.t.len; k++) {
			uint64_t *b = c->digs.bits + k * c->words;
			if (bit_test(b, ci)) {
				bit_clear(b, ci);
				c->digs.e[k].count--;
			}
		}
}

/* A correct node installed synced state (a snapshot): its log goes on at
 * e->seq, the positions up to it came with the state, not as outputs. */
static void on_synced(struct ctx *c, const struct sim_hist_event *e, uint32_t ci)
{
	if (c->log && e->seq > c->log[ci].next) {
		c->log[ci].synced = e->seq;
		c->log[ci].next = e->seq;
	}
}

/* catch_up: the last fault window has ended before event i (h->len: by the
 * end of the history).  The target is every position correct nodes have
 * output so far; nodes that hold them all have caught up at once. */
static void catch_up_start(struct ctx *c, size_t i)
{
	c->catch_pending = false;
	c->catch_target = c->plen;
	c->catch_ev = i < c->h->len || i == 0 ? i : i - 1;
	for (uint32_t ci = 0; ci < c->nc; ci++) {
		struct nlog *l = &c->log[ci];
		l->held_then = l->next;
		if (l->next >= c->catch_target)
			l->caught_up_us = c->in->faults_end_us;
	}
}

/* Phase 2: every delivery and restart of a correct node, in history order. */
static void scan_deliveries(struct ctx *c)
{
	const struct sim_history *h = c->h;
	const unsigned int item_checks = SIM_CHECK_VALIDITY | SIM_CHECK_AGREEMENT | SIM_CHECK_INTEGRITY |
					 SIM_CHECK_TOTALITY | OUTPUT_CHECKS;
	bool use_items = c->run & item_checks;
	bool use_req = c->run & (SIM_CHECK_VALIDITY | SIM_CHECK_INTEGRITY);
	bool use_dig = c->run & OUTPUT_CHECKS;
	bool add_dig = c->run & SIM_CHECK_NO_DUP;
	char b[256];

	for (size_t i = 0; i < h->len; i++) {
		const struct sim_hist_event *e = &h->ev[i];
		if (c->catch_pending && e->time_us > c->in->faults_end_us)
			catch_up_start(c, i);
		if (e->kind == SIM_H_REQUEST || !is_correct(c, e->node))
			continue;
		uint32_t ci = c->cidx[e->node];
		if (e->kind == SIM_H_RESTART) {
			on_restart(c, e, ci);
			continue;
		}
		if (e->kind == SIM_H_SYNCED) {
			on_synced(c, e, ci);
			continue;
		}

		if (c->log)
			track_log(c, e, i, ci);
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

/* inclusion, inclusion_fraction: a node that rejoined by state sync holds
 * the positions before its first output since; their payloads count as
 * output by it. */
static void credit_synced(struct ctx *c)
{
	if (!c->log || !c->digs.bits)
		return;
	for (uint32_t ci = 0; ci < c->nc; ci++) {
		uint64_t end = c->log[ci].synced < c->plen ? c->log[ci].synced : c->plen;
		for (uint64_t p = 0; p < end; p++) {
			const struct pos *x = &c->pos[p];
			if (!x->known || x->invalid)
				continue;
			uint32_t d = dtab_find(c, &c->digs, ANY_ORIGIN, x->digest, false, 0);
			if (d)
				dtab_mark(c, &c->digs, d - 1, ci);
		}
	}
}

/* A counted request some correct node did not output. */
struct missed {
	uint32_t origin;
	uint32_t k;             /* its digs entry */
};

static int cmp_missed(const void *a, const void *b)
{
	const struct missed *x = a, *y = b;
	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/* Adds one to miss[ci] for every correct node ci whose bit is clear in b;
 * returns the largest count it reached, with that node in *worst. */
static uint32_t count_missing(const struct ctx *c, const uint64_t *b, uint32_t *miss, uint32_t *worst,
			      uint32_t most)
{
	for (size_t w = 0; w < c->words; w++) {
		uint64_t x = ~b[w];
		if ((w + 1) * 64 > c->nc)
			x &= ((uint64_t)1 << (c->nc - w * 64)) - 1;
		for (; x; x &= x - 1) {
			uint32_t ci = (uint32_t)(w * 64) + (uint32_t)__builtin_ctzll(x);
			if (++miss[ci] > most) {
				most = miss[ci];
				*worst = ci;
			}
		}
	}
	return most;
}

/* inclusion_fraction (and the report's "inclusion"): per correct origin,
 * the least share of its requests made before the settle window that a
 * correct node output.  Requests every correct node output cost nothing;
 * the others are grouped by origin and their misses counted per node. */
static void measure_inclusion(struct ctx *c, struct sim_measures *m)
{
	if (!(c->run & (SIM_CHECK_INCLUSION | SIM_CHECK_INCLUSION_FRACTION)))
		return;
	const struct dtab *d = &c->digs;
	uint64_t dur = c->in->duration_us;
	uint64_t settle = c->in->bounds.settle_us == SIM_NEVER ? dur / 5 : c->in->bounds.settle_us;
	m->counted_before_us = settle < dur ? dur - settle : 0;
	uint32_t *counted = weft_xcalloc(c->n, sizeof(*counted));
	struct missed *missed = weft_xcalloc(d->nreq ? d->nreq : 1, sizeof(*missed));
	size_t nmissed = 0;
	for (size_t k = 0; k < d->nreq; k++) {
		const struct sim_hist_event *e = &c->h->ev[d->e[k].first_ev];
		if (e->time_us >= m->counted_before_us)
			continue;
		counted[e->node]++;
		if (d->e[k].count < c->nc)
			missed[nmissed++] = (struct missed){e->node, (uint32_t)k};
	}
	qsort(missed, nmissed, sizeof(*missed), cmp_missed);

	m->inclusion = weft_xmalloc(c->n * sizeof(*m->inclusion));
	for (uint32_t o = 0; o < c->n; o++)
		m->inclusion[o] = is_correct(c, o) && counted[o] ? 1.0 : NAN;
	uint32_t *miss = weft_xcalloc(c->nc, sizeof(*miss));
	uint32_t worst_origin = 0, worst_node = 0, worst_missed = 0;
	size_t worst_ev = 0;
	for (size_t g = 0; g < nmissed;) {
		uint32_t o = missed[g].origin, node = 0, most = 0;
		size_t end = g;
		for (; end < nmissed && missed[end].origin == o; end++)
			most = count_missing(c, d->bits + (size_t)missed[end].k * c->words, miss, &node, most);
		memset(miss, 0, c->nc * sizeof(*miss));
		m->inclusion[o] = (double)(counted[o] - most) / counted[o];
		if (!worst_missed || m->inclusion[o] < m->inclusion[worst_origin]) {
			worst_origin = o;
			worst_node = node;
			worst_missed = most;
			for (size_t k = g; k < end; k++)
				if (!bit_test(d->bits + (size_t)missed[k].k * c->words, node)) {
					worst_ev = d->e[missed[k].k].first_ev;
					break;
				}
		}
		g = end;
	}
	m->n = c->n;
	m->inclusion_min = NAN;
	for (uint32_t o = 0; o < c->n; o++)
		if (!isnan(m->inclusion[o]) && !(m->inclusion[o] >= m->inclusion_min))
			m->inclusion_min = m->inclusion[o];
	if (live(c, SIM_CHECK_INCLUSION_FRACTION) && worst_missed &&
	    m->inclusion[worst_origin] < c->in->bounds.inclusion_min) {
		const struct sim_hist_event *e = &c->h->ev[worst_ev];
		char dg[9], t[32], before[32];
		fmt_hex8(dg, e->digest);
		fmt_ms(t, e->time_us);
		fmt_ms(before, m->counted_before_us);
		fail(c, SIM_CHECK_INCLUSION_FRACTION, worst_ev,
		     "node %u output %u of the %u requests origin %u made before %s ms (%g < inclusion_min %g); "
		     "the first it missed: %s at %s ms",
		     (unsigned)c->cnode[worst_node], counted[worst_origin] - worst_missed, counted[worst_origin],
		     (unsigned)worst_origin, before, m->inclusion[worst_origin], c->in->bounds.inclusion_min, dg, t);
	}
	free(miss);
	free(missed);
	free(counted);
}

/* catch_up: every correct node must hold, within bounds.catch_up_us of the
 * end of the last fault window, every position correct nodes had output
 * by then.  A node still behind when the run ends before that deadline is
 * not judged. */
static void check_catch_up(struct ctx *c, struct sim_measures *m)
{
	uint64_t from = c->in->faults_end_us, dur = c->in->duration_us;
	if (!(c->run & SIM_CHECK_CATCH_UP) || from >= dur)
		return;
	if (c->catch_pending)
		catch_up_start(c, c->h->len);
	uint64_t bound = c->in->bounds.catch_up_us;
	uint64_t deadline = bound > SIM_NEVER - from ? SIM_NEVER : from + bound;
	m->catch_up_from_us = from;
	m->catch_up_positions = c->catch_target;
	m->catch_up_worst_us = 0;
	for (uint32_t ci = 0; ci < c->nc; ci++) {
		const struct nlog *l = &c->log[ci];
		uint64_t t = l->caught_up_us;
		if (t == SIM_NEVER)
			m->catch_up_worst_us = SIM_NEVER;
		else if (m->catch_up_worst_us != SIM_NEVER && t - from > m->catch_up_worst_us)
			m->catch_up_worst_us = t - from;
		if (!live(c, SIM_CHECK_CATCH_UP) || (t == SIM_NEVER ? deadline > dur : t <= deadline))
			continue;
		char at[32], late[32], limit[32];
		fmt_ms(at, from);
		fmt_ms(limit, bound);
		if (t == SIM_NEVER) {
			fmt_ms(late, dur);
			fail(c, SIM_CHECK_CATCH_UP, c->catch_ev,
			     "node %u held %llu of the %llu log positions correct nodes had output when the last fault "
			     "window ended at %s ms, and still %llu at the end of the run (%s ms; catch_up_ms %s)",
			     (unsigned)c->cnode[ci], (unsigned long long)l->held_then,
			     (unsigned long long)c->catch_target, at, (unsigned long long)l->next, late, limit);
		} else {
			fmt_ms(late, t - from);
			fail(c, SIM_CHECK_CATCH_UP, c->catch_ev,
			     "node %u held %llu of the %llu log positions correct nodes had output when the last fault "
			     "window ended at %s ms, and caught up %s ms later (catch_up_ms %s)",
			     (unsigned)c->cnode[ci], (unsigned long long)l->held_then,
			     (unsigned long long)c->catch_target, at, late, limit);
		}
		c->when[bit_index(SIM_CHECK_CATCH_UP)] = deadline;
	}
}

struct state_ref {
	uint64_t txs;
	uint32_t node;
};

static int cmp_state_ref(const void *a, const void *b)
{
	const struct state_ref *x = a, *y = b;
	if (x->txs != y->txs)
		return x->txs < y->txs ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* state_hash: nodes that committed as many transactions report the same
 * order_hash and ledger_hash. */
static void check_state_hash(struct ctx *c)
{
	const struct sim_node_state *st = c->in->states;
	if (!live(c, SIM_CHECK_STATE_HASH) || !st)
		return;
	struct state_ref *refs = weft_xcalloc(c->nc, sizeof(*refs));
	size_t nrefs = 0;
	for (uint32_t ci = 0; ci < c->nc; ci++)
		if (st[c->cnode[ci]].known)
			refs[nrefs++] = (struct state_ref){st[c->cnode[ci]].committed_txs, c->cnode[ci]};
	qsort(refs, nrefs, sizeof(*refs), cmp_state_ref);
	for (size_t i = 1; i < nrefs; i++) {
		const struct sim_node_state *a = &st[refs[i - 1].node], *b = &st[refs[i].node];
		if (refs[i].txs != refs[i - 1].txs)
			continue;
		bool order = strcmp(a->order_hash, b->order_hash) != 0;
		if (!order && strcmp(a->ledger_hash, b->ledger_hash) == 0)
			continue;
		fail(c, SIM_CHECK_STATE_HASH, c->h->len ? c->h->len - 1 : 0,
		     "nodes %u and %u both committed %llu transactions but report %s %.16s and %.16s",
		     (unsigned)refs[i - 1].node, (unsigned)refs[i].node, (unsigned long long)refs[i].txs,
		     order ? "order_hash" : "ledger_hash", order ? a->order_hash : a->ledger_hash,
		     order ? b->order_hash : b->ledger_hash);
		c->when[bit_index(SIM_CHECK_STATE_HASH)] = c->in->duration_us;
		break;
	}
	free(refs);
}

int sim_check(const struct sim_history *h, const struct sim_check_input *in, struct sim_verdict *v,
	      struct sim_measures *m)
{
	static const struct sim_history empty;
	struct sim_measures mine;
	if (!m)
		m = &mine;
	*m = (struct sim_measures){.inclusion_min = NAN, .catch_up_from_us = SIM_NEVER,
				   .catch_up_worst_us = SIM_NEVER};
	struct ctx *c = weft_xcalloc(1, sizeof(*c));
	uint32_t n = in->n;
	c->h = h ? h : &empty;
	c->in = in;
	c->n = n;
	c->run = in->checkers & ALL_CHECKS;
	c->cidx = weft_xcalloc(n, sizeof(*c->cidx));
	c->cnode = weft_xcalloc(n, sizeof(*c->cnode));
	for (uint32_t i = 0; i < n; i++) {
		c->cidx[i] = UINT32_MAX;
		if (!in->correct || in->correct[i]) {
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
		dtab_init(&c->digs, c->run & OUTPUT_CHECKS);
		if (c->run & LOG_CHECKS) {
			c->log = weft_xcalloc(c->nc, sizeof(*c->log));
			for (uint32_t ci = 0; ci < c->nc; ci++)
				c->log[ci].caught_up_us = SIM_NEVER;
		}
		c->catch_pending = (c->run & SIM_CHECK_CATCH_UP) && in->faults_end_us < in->duration_us;

		if (c->run & (SIM_CHECK_VALIDITY | SIM_CHECK_INTEGRITY | SIM_CHECK_INCLUSION |
			      SIM_CHECK_INCLUSION_FRACTION))
			scan_requests(c);
		scan_deliveries(c);
		check_requested(c, &c->reqs, SIM_CHECK_VALIDITY);
		check_totality(c);
		credit_synced(c);
		check_requested(c, &c->digs, SIM_CHECK_INCLUSION);
		measure_inclusion(c, m);
		check_catch_up(c, m);
		check_state_hash(c);

		tab_free(&c->it);
		free(c->items);
		free(c->ibits);
		dtab_free(&c->reqs);
		dtab_free(&c->digs);
		free(c->log);
		free(c->pos);
	}

	memset(v, 0, sizeof(*v));
	v->checked = c->run;
	v->violated = c->bad;
	if (c->bad) {
		int k = bit_index(c->bad);
		snprintf(v->first, sizeof(v->first), "%s", c->msg[k]);
		v->first_event = c->ev[k];
		v->first_time_us = c->when[k];
	}
	int nbad = __builtin_popcount(c->bad);
	free(c->cidx);
	free(c->cnode);
	free(c);
	if (m == &mine)
		sim_measures_free(&mine);
	return nbad;
}

void sim_measures_free(struct sim_measures *m)
{
	if (!m)
		return;
	free(m->inclusion);
	m->inclusion = NULL;
}

uint64_t sim_faults_end(const struct sim_scenario *sc, const uint64_t *fired_us)
{
	uint64_t end = SIM_NEVER;
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct sim_fault *f = &sc->faults[i];
		uint64_t stop = f->stop_us;
		if (f->after.kind != SIM_TRIGGER_NONE)
			stop = !fired_us || fired_us[i] == SIM_NEVER || stop == SIM_NEVER ? SIM_NEVER : fired_us[i] + stop;
		if (stop != SIM_NEVER && (end == SIM_NEVER || stop > end))
			end = stop;
	}
	return end;
}

/* ---- the report ---- */

/* x as a JSON number, null when NaN. */
static json_t *json_fraction(double x)
{
	return isnan(x) ? json_null() : json_real(x);
}

static json_t *json_ms(uint64_t us)
{
	return us == SIM_NEVER ? json_null() : json_real((double)us / 1000.0);
}

void sim_report_checks(json_t *doc, const struct sim_verdict *v, const struct sim_measures *m)
{
	json_t *chk = json_object();
	for (unsigned bit = 1; bit <= SIM_CHECK_LAST; bit <<= 1)
		if (v->checked & bit)
			json_object_set_new(chk, sim_checker_name(bit), json_string(v->violated & bit ? "fail" : "pass"));
	json_object_set_new(doc, "checkers", chk);
	json_object_set_new(doc, "first_violation", v->violated ? json_string(v->first) : json_null());
	if (m->inclusion) {
		json_t *inc = json_object(), *by = json_array();
		for (uint32_t o = 0; o < m->n; o++)
			json_array_append_new(by, json_fraction(m->inclusion[o]));
		json_object_set_new(inc, "min", json_fraction(m->inclusion_min));
		json_object_set_new(inc, "counted_before_ms", json_ms(m->counted_before_us));
		json_object_set_new(inc, "by_origin", by);
		json_object_set_new(doc, "inclusion", inc);
	}
	if (m->catch_up_from_us != SIM_NEVER) {
		json_t *cu = json_object();
		json_object_set_new(cu, "from_ms", json_ms(m->catch_up_from_us));
		json_object_set_new(cu, "positions", json_integer((json_int_t)m->catch_up_positions));
		json_object_set_new(cu, "worst_ms", json_ms(m->catch_up_worst_us));
		json_object_set_new(doc, "catch_up", cu);
	}
}

/* ---- node states ---- */

/* info's field key, or the field key of a map inside info. */
static const json_t *info_field(const json_t *info, const char *key)
{
	const json_t *v = json_object_get(info, key);
	const char *k;
	json_t *sub;
	if (v)
		return v;
	json_object_foreach((json_t *)info, k, sub)
		if (json_is_object(sub) && (v = json_object_get(sub, key)))
			return v;
	return NULL;
}

static void copy_hash(char out[65], const json_t *v)
{
	snprintf(out, 65, "%s", json_is_string(v) ? json_string_value(v) : "");
}

void sim_node_state_read(struct sim_node_state *st, const json_t *info)
{
	memset(st, 0, sizeof(*st));
	if (!json_is_object(info))
		return;
	const json_t *txs = info_field(info, "committed_txs");
	if (!json_is_integer(txs) || json_integer_value(txs) < 0)
		return;
	st->known = true;
	st->committed_txs = (uint64_t)json_integer_value(txs);
	copy_hash(st->order_hash, info_field(info, "order_hash"));
	copy_hash(st->ledger_hash, info_field(info, "ledger_hash"));
}
