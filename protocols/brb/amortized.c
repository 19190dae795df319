/* amortized.c - amortized multi-shot Byzantine reliable broadcast, after
 * "Amortized Asynchronous Byzantine Reliable Broadcast with Optimal
 * Resilience" (Hu, Yan, Li, 2026).  Only the paper's abstract is known to
 * us; this is our design that fits it (docs/protocols/brb-amortized.md
 * says what is inferred and gives the full safety argument).
 *
 * Each sender runs a long-lived stream of instances 0, 1, 2 ... (the core's
 * seq).  The payload travels once, from the sender to each node; only
 * digests go all-to-all, and a node's READY for instance k rides on its
 * VOTE for a later instance of the same stream:
 *
 *   sender:  PROPOSE(k, m) to all
 *   on the first PROPOSE(k, m):  VOTE(k, echo digest(m), READY of the
 *            earliest earlier instance we are ready for and have not
 *            announced), sent at the end of the current instant (a
 *            zero-delay tick) so that input arriving together is counted first
 *   on ceil((n+f+1)/2) ECHO(d) or f+1 READY(d) for k:  ready for (k, d);
 *            announced on the next VOTE of the stream, or after flush_ms
 *            in a standalone VOTE carrying only the READY
 *   on n ECHO(d) (every node echoed d):   deliver at once  (optimistic path)
 *   on 2f+1 READY(d):                     deliver          (fallback path)
 *   missing the payload of the digest to deliver: PULL it from one node
 *            that echoed d, the next one every pull_ms (or twice the
 *            observed pull round trip, if longer), until a PAYLOAD whose
 *            digest is d arrives
 *
 * The optimistic path is safe: if all n nodes echoed d, every honest node
 * did, and honest nodes echo once, so any other digest has at most f echoes
 * (never an echo quorum) and, by induction, no honest READY; all honest
 * nodes reach n - f >= ceil((n+f+1)/2) echoes for d, ready d and deliver it.
 * A node that delivers optimistically still announces its READY.
 *
 * Lost messages (crash-recover, partitions).  Open instances are resent by
 * the core's resend hook.  A delivered instance is freed, so our votes in
 * it are kept apart (persisted, the last `window` per sender) and replayed
 * to a peer whose STATUS shows it has not delivered the instance: without
 * that, a node that delivered (optimistically, or before its piggybacked
 * READY left) and then crashed could be the only witness of a delivery.
 *
 * Messages ([1, type, sender, seq, ...], types below 16 are ours):
 *   PROPOSE [1, 0, sender, seq, payload(bin)]                 from the sender only
 *   VOTE    [1, 1, sender, seq, echo(bin 32 | nil),
 *                  ready_for(uint | nil), ready_digest(bin 32 | nil)]
 *           ready_for < seq; a standalone VOTE has echo nil and
 *           seq = ready_for + 1; ready_for and ready_digest come together
 *   PULL    [1, 2, sender, seq, digest(bin 32)]
 *   PAYLOAD [1, 3, sender, seq, payload(bin)]                 accepted iff its digest is the one we deliver
 *
 * Parameters besides the core's: flush_ms (default 20; 0 flushes at the
 * next timer tick), pull_ms (default 50), optimistic (1, or 0 to switch the
 * optimistic path off).
 *
 * kv: besides the core's keys ("s", "d", "v", "p"):
 *   "A" seq(8 BE)               our own proposal until it is delivered, so
 *                               that a sender that restarts can still
 *                               re-propose (and serve) what it accepted
 *   "E" sender(4 BE) seq(8 BE)  flags(1) echo(32) ready(32): our votes in a
 *                               delivered instance (the last `window` seqs)
 * Answers to PULL for instances we delivered come from the payloads the
 * core retains ("p"). */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "weft/bytes.h"
#include "weft/err.h"

enum { MSG_PROPOSE = 0, MSG_VOTE = 1, MSG_PULL = 2, MSG_PAYLOAD = 3 };

/* Timer ids: the flush timer of sender s is s; the pull timer of the
 * instance in window slot w of sender s is TIMER_PULL + s * window + w.
 * All stay below BRB_TIMER_BASE (n <= 65535, window <= 4096). */
#define TIMER_PULL (UINT64_C(1) << 32)
/* The vote tick of sender s is TIMER_TICK + s. */
#define TIMER_TICK (UINT64_C(1) << 33)
/* Answers to one requester within pull_ms, at most. */
#define SERVE_RING 16

struct am_inst {
	struct brb_inst base;
	bool restored;                  /* our persisted votes were loaded */
	bool echoed, readied;
	uint8_t echo_digest[WEFT_DIGEST_LEN];
	uint8_t ready_digest[WEFT_DIGEST_LEN];
	/* The one payload we hold: the PROPOSE we echoed, or one whose
	 * digest is the target. */
	uint8_t *data;
	size_t len;
	bool have_data;
	uint8_t data_digest[WEFT_DIGEST_LEN];
	/* The digest to deliver, once a quorum named it. */
	bool targeted, target_optimistic;
	uint8_t target[WEFT_DIGEST_LEN];
	/* Per voter: 1 + the index of its digest in the ECHO / READY tally
	 * entries, 0 when it has not voted (who can serve a pull). */
	uint16_t *echo_of, *ready_of;
	bool pulling;
	uint32_t pull_cursor;           /* next voter to consider */
	bool pull_asked;                /* a PULL went out, the last one when */
	uint64_t pull_sent_us;
	uint64_t *asked_at;             /* per node: 1 + when we sent it a PULL, 0 never */
};

/* A READY we decided and have not announced yet. */
struct pending_ready {
	uint64_t seq;
	uint8_t digest[WEFT_DIGEST_LEN];
};

/* Per sender stream: READYs waiting for a ride, and our ECHOs decided in
 * the current instant, sent together by a zero-delay tick so that a READY
 * decided by input of the same instant still rides on them. */
struct am_stream {
	struct pending_ready *pending;
	uint32_t npending, cap;
	bool flush_armed;
	struct pending_ready *due;       /* (seq, echo digest) */
	uint32_t ndue, duecap;
	bool tick_armed;
};

struct served {
	bool used;
	uint32_t sender;
	uint64_t seq;
	uint64_t at_us;
};

/* Our votes in a delivered instance, replayed to peers whose STATUS shows
 * they have not delivered it (a delivered instance is freed, so resend no
 * longer covers it, and a peer that crashed or sat behind a partition may
 * have lost the votes we sent before). */
struct done_votes {
	bool used, echoed, readied;
	uint64_t seq;
	uint8_t echo[WEFT_DIGEST_LEN];
	uint8_t ready[WEFT_DIGEST_LEN];
};

struct amortized {
	struct brb_core core;
	uint64_t flush_us, pull_us;
	uint64_t pull_rtt_us;            /* smoothed PULL -> PAYLOAD time, 0 before the first */
	bool optimistic_on;
	struct am_stream *streams;       /* per sender */
	struct done_votes *done;         /* per sender, window slots by seq % window */
	struct served (*served)[SERVE_RING]; /* per requester */
	uint32_t *served_next;
	/* counters (also env metrics "amortized.*") */
	uint64_t optimistic, fallback, pulls, payloads_served, piggybacked, standalone, replayed;
	uint64_t own_delivered, own_latency_us;
};

static struct amortized *am_of(struct brb_core *c)
{
	return c->owner;
}

static size_t own_key(uint8_t k[9], uint64_t seq)
{
	k[0] = 'A';
	weft_be64_put(k + 1, seq);
	return 9;
}

/* A payload the core retains for a delivered instance, when it was valid:
 * 0 with *data valid until the next kv call. */
static int retained_get(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t **data, size_t *len)
{
	bool invalid;
	int rc = brb_retained_get(c, sender, seq, data, len, &invalid);
	return rc == 0 && !invalid ? 0 : WEFT_NOTFOUND;
}

static uint64_t pull_timer_id(struct brb_core *c, uint32_t sender, uint64_t seq)
{
	return TIMER_PULL + (uint64_t)sender * c->window + seq % c->window;
}

/* "E" sender(4 BE) seq(8 BE) -> flags(1) echo(32) ready(32): our votes in
 * a delivered instance, kept for the last `window` seqs of each sender. */
static size_t done_key(uint8_t k[13], uint32_t sender, uint64_t seq)
{
	k[0] = 'E';
	weft_be32_put(k + 1, sender);
	weft_be64_put(k + 5, seq);
	return 13;
}

static struct done_votes *done_slot(struct brb_core *c, uint32_t sender, uint64_t seq)
{
	return &am_of(c)->done[(size_t)sender * c->window + seq % c->window];
}

static void done_fill(struct done_votes *d, uint64_t seq, const uint8_t *echo, const uint8_t *ready)
{
	memset(d, 0, sizeof(*d));
	d->used = true;
	d->seq = seq;
	d->echoed = echo != NULL;
	d->readied = ready != NULL;
	if (echo)
		memcpy(d->echo, echo, WEFT_DIGEST_LEN);
	if (ready)
		memcpy(d->ready, ready, WEFT_DIGEST_LEN);
}

/* Records (and persists, in the delivering callback) our votes of a
 * delivered instance; the record of seq - window gives way. */
static void done_put(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t *echo, const uint8_t *ready)
{
	struct done_votes *d = done_slot(c, sender, seq);
	uint8_t k[13], v[1 + 2 * WEFT_DIGEST_LEN] = {0};
	if (d->used && d->seq != seq)
		c->env->ops->kv_del(c->env, k, done_key(k, sender, d->seq));
	done_fill(d, seq, echo, ready);
	v[0] = (uint8_t)(d->echoed | d->readied << 1);
	memcpy(v + 1, d->echo, WEFT_DIGEST_LEN);
	memcpy(v + 1 + WEFT_DIGEST_LEN, d->ready, WEFT_DIGEST_LEN);
	c->env->ops->kv_put(c->env, k, done_key(k, sender, seq), v, sizeof(v));
}

static int load_done(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct brb_core *c = arg;
	const uint8_t *k = key, *v = val;
	if (klen != 13 || vlen != 1 + 2 * WEFT_DIGEST_LEN)
		return WEFT_ECORRUPT;
	uint32_t sender = weft_be32_get(k + 1);
	if (sender >= c->n)
		return WEFT_ECORRUPT;
	uint64_t seq = weft_be64_get(k + 5);
	struct done_votes *d = done_slot(c, sender, seq);
	if (!d->used || d->seq < seq)
		done_fill(d, seq, v[0] & 1 ? v + 1 : NULL, v[0] & 2 ? v + 1 + WEFT_DIGEST_LEN : NULL);
	return 0;
}

/* ---- instances ---- */

static void inst_clear(struct brb_core *c, struct brb_inst *base)
{
	struct am_inst *i = (struct am_inst *)base;
	struct amortized *am = am_of(c);
	if (am->done && brb_is_delivered(c, base->sender, base->seq) && (i->echoed || i->readied))
		done_put(c, base->sender, base->seq, i->echoed ? i->echo_digest : NULL,
			 i->readied ? i->ready_digest : NULL);
	if (i->pulling)
		c->env->ops->cancel_timer(c->env, pull_timer_id(c, base->sender, base->seq));
	free(i->data);
	free(i->echo_of);
	free(i->ready_of);
	free(i->asked_at);
}

static void keep_data(struct am_inst *i, const uint8_t *data, size_t len, const uint8_t digest[WEFT_DIGEST_LEN])
{
	free(i->data);
	i->data = malloc(len ? len : 1);
	if (i->data == NULL)
		abort();
	memcpy(i->data, data, len);
	i->len = len;
	i->have_data = true;
	memcpy(i->data_digest, digest, WEFT_DIGEST_LEN);
}

static void drop_data(struct am_inst *i)
{
	free(i->data);
	i->data = NULL;
	i->len = 0;
	i->have_data = false;
}

/* Counts voter's vote and remembers which digest it named.  Returns the
 * digest's new count, 0 for a repeated vote. */
static uint32_t count_vote(struct brb_core *c, struct am_inst *i, enum brb_vote_kind kind, uint32_t voter,
			   const uint8_t digest[WEFT_DIGEST_LEN])
{
	struct brb_tally *t = &i->base.tally[kind];
	uint32_t count = brb_tally_add(c, t, voter, digest);
	if (count == 0)
		return 0;
	uint16_t *of = kind == BRB_VOTE_ECHO ? i->echo_of : i->ready_of;
	for (uint32_t e = 0; e < t->nentries; e++)
		if (memcmp(t->entries[e].digest, digest, WEFT_DIGEST_LEN) == 0)
			of[voter] = (uint16_t)(e + 1);
	return count;
}

/* ---- READY announcements ---- */

/* The standalone VOTE [seq + 1, nil, seq, digest]: to everyone (to = -1) or one peer. */
static void send_standalone(struct brb_core *c, int64_t to, uint32_t sender, uint64_t seq,
			    const uint8_t digest[WEFT_DIGEST_LEN])
{
	struct amortized *am = am_of(c);
	brb_write_header(c, MSG_VOTE, sender, seq + 1, 3);
	weft_mpw_nil(&c->out);
	weft_mpw_uint(&c->out, seq);
	weft_mpw_bin(&c->out, digest, WEFT_DIGEST_LEN);
	if (to < 0)
		weft_env_multicast(c->env, "amortized.vote", c->out.buf, c->out.len);
	else
		weft_env_send(c->env, (uint32_t)to, "amortized.vote", c->out.buf, c->out.len);
	am->standalone++;
	weft_env_metric(c->env, "amortized.standalone", 1);
}

static void pending_add(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t digest[WEFT_DIGEST_LEN])
{
	struct amortized *am = am_of(c);
	struct am_stream *st = &am->streams[sender];
	for (uint32_t k = 0; k < st->npending; k++)
		if (st->pending[k].seq == seq)
			return; /* already queued (the same digest: we ready once) */
	if (st->npending == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 8;
		st->pending = realloc(st->pending, st->cap * sizeof(*st->pending));
		if (st->pending == NULL)
			abort();
	}
	st->pending[st->npending].seq = seq;
	memcpy(st->pending[st->npending].digest, digest, WEFT_DIGEST_LEN);
	st->npending++;
	if (!st->flush_armed) {
		c->env->ops->set_timer(c->env, sender, am->flush_us);
		st->flush_armed = true;
	}
}

/* Takes the earliest pending READY of sender's stream below seq. */
static bool pending_take(struct brb_core *c, uint32_t sender, uint64_t below, struct pending_ready *out)
{
	struct am_stream *st = &am_of(c)->streams[sender];
	uint32_t best = UINT32_MAX;
	for (uint32_t k = 0; k < st->npending; k++)
		if (st->pending[k].seq < below && (best == UINT32_MAX || st->pending[k].seq < st->pending[best].seq))
			best = k;
	if (best == UINT32_MAX)
		return false;
	*out = st->pending[best];
	st->pending[best] = st->pending[--st->npending];
	if (st->npending == 0 && st->flush_armed) {
		c->env->ops->cancel_timer(c->env, sender);
		st->flush_armed = false;
	}
	return true;
}

static void flush(struct brb_core *c, uint32_t sender)
{
	struct am_stream *st = &am_of(c)->streams[sender];
	st->flush_armed = false;
	for (uint32_t k = 0; k < st->npending; k++)
		send_standalone(c, -1, sender, st->pending[k].seq, st->pending[k].digest);
	st->npending = 0;
}

/* VOTE(seq) with our echo, carrying the earliest pending READY below seq. */
static void send_vote(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t echo[WEFT_DIGEST_LEN])
{
	struct amortized *am = am_of(c);
	struct pending_ready pr;
	bool ride = pending_take(c, sender, seq, &pr);
	brb_write_header(c, MSG_VOTE, sender, seq, 3);
	weft_mpw_bin(&c->out, echo, WEFT_DIGEST_LEN);
	if (ride) {
		weft_mpw_uint(&c->out, pr.seq);
		weft_mpw_bin(&c->out, pr.digest, WEFT_DIGEST_LEN);
		am->piggybacked++;
		weft_env_metric(c->env, "amortized.piggybacked", 1);
	} else {
		weft_mpw_nil(&c->out);
		weft_mpw_nil(&c->out);
	}
	weft_env_multicast(c->env, "amortized.vote", c->out.buf, c->out.len);
}

/* Queues our VOTE(seq) for the stream's tick (zero delay: after the input
 * of the current instant). */
static void vote_later(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t echo[WEFT_DIGEST_LEN])
{
	struct am_stream *st = &am_of(c)->streams[sender];
	if (st->ndue == st->duecap) {
		st->duecap = st->duecap ? 2 * st->duecap : 8;
		st->due = realloc(st->due, st->duecap * sizeof(*st->due));
		if (st->due == NULL)
			abort();
	}
	st->due[st->ndue].seq = seq;
	memcpy(st->due[st->ndue].digest, echo, WEFT_DIGEST_LEN);
	st->ndue++;
	if (!st->tick_armed) {
		c->env->ops->set_timer(c->env, TIMER_TICK + sender, 0);
		st->tick_armed = true;
	}
}

/* The tick: our queued VOTEs of the stream in seq order, READYs riding. */
static void tick(struct brb_core *c, uint32_t sender)
{
	struct am_stream *st = &am_of(c)->streams[sender];
	st->tick_armed = false;
	for (uint32_t a = 1; a < st->ndue; a++) /* insertion sort: a handful */
		for (uint32_t b = a; b > 0 && st->due[b - 1].seq > st->due[b].seq; b--) {
			struct pending_ready t = st->due[b];
			st->due[b] = st->due[b - 1];
			st->due[b - 1] = t;
		}
	for (uint32_t k = 0; k < st->ndue; k++)
		send_vote(c, sender, st->due[k].seq, st->due[k].digest);
	st->ndue = 0;
}

static void send_propose(struct brb_core *c, struct am_inst *i)
{
	brb_write_header(c, MSG_PROPOSE, i->base.sender, i->base.seq, 1);
	weft_mpw_bin(&c->out, i->data, i->len);
	weft_env_multicast(c->env, "amortized.propose", c->out.buf, c->out.len);
}

/* Loads our persisted votes (and, for our own instance, our proposal) into
 * a newly opened instance, so that a restarted node never votes
 * differently.  A persisted READY is announced again. */
static void restore(struct brb_core *c, struct am_inst *i)
{
	if (i->restored)
		return;
	i->restored = true;
	i->echo_of = calloc(c->n, sizeof(*i->echo_of));
	i->ready_of = calloc(c->n, sizeof(*i->ready_of));
	if (i->echo_of == NULL || i->ready_of == NULL)
		abort();
	uint32_t s = i->base.sender;
	uint64_t q = i->base.seq;
	if (brb_vote_get(c, BRB_VOTE_ECHO, s, q, i->echo_digest) == 0) {
		i->echoed = true;
		count_vote(c, i, BRB_VOTE_ECHO, c->self, i->echo_digest);
	}
	if (brb_vote_get(c, BRB_VOTE_READY, s, q, i->ready_digest) == 0) {
		i->readied = true;
		count_vote(c, i, BRB_VOTE_READY, c->self, i->ready_digest);
		pending_add(c, s, q, i->ready_digest);
	}
	uint8_t k[9];
	const void *v;
	size_t vlen;
	if (s == c->self && !i->have_data && c->env->ops->kv_get(c->env, k, own_key(k, q), &v, &vlen) == 0) {
		uint8_t digest[WEFT_DIGEST_LEN];
		brb_payload_digest(c, s, q, v, vlen, digest);
		keep_data(i, v, vlen, digest);
	}
}

/* The open instance (created when create), restored; NULL with *why as
 * brb_inst_get. */
static struct am_inst *inst_get(struct brb_core *c, uint32_t sender, uint64_t seq, bool create, int *why)
{
	struct am_inst *i = (struct am_inst *)brb_inst_get(c, sender, seq, create, why);
	if (i)
		restore(c, i);
	return i;
}

/* ---- thresholds, delivery, pulls ---- */

static void pull_next(struct brb_core *c, struct am_inst *i);

static void deliver(struct brb_core *c, struct am_inst *i)
{
	struct amortized *am = am_of(c);
	uint32_t s = i->base.sender;
	uint64_t q = i->base.seq;
	if (i->target_optimistic) {
		am->optimistic++;
		weft_env_metric(c->env, "amortized.optimistic", 1);
	} else {
		am->fallback++;
		weft_env_metric(c->env, "amortized.fallback", 1);
	}
	if (s == c->self) {
		uint64_t lat = weft_env_now(c->env) - i->base.opened_us;
		am->own_delivered++;
		am->own_latency_us += lat;
		weft_env_metric(c->env, "amortized.own_delivered", 1);
		weft_env_metric(c->env, "amortized.own_latency_us", (int64_t)lat);
		uint8_t k[9];
		c->env->ops->kv_del(c->env, k, own_key(k, q));
	}
	brb_deliver(c, &i->base, s, q, i->data, i->len, i->data_digest, false); /* frees i */
}

/* Delivers when n ECHO(d) (optimistic) or 2f+1 READY(d) name a digest and
 * we hold its payload; pulls the payload otherwise.  May free i. */
static void try_deliver(struct brb_core *c, struct am_inst *i)
{
	struct amortized *am = am_of(c);
	if (!i->targeted) {
		const uint8_t *d = NULL;
		bool opt = false;
		if (am->optimistic_on && (d = brb_tally_reached(&i->base.tally[BRB_VOTE_ECHO], c->n)) != NULL)
			opt = true;
		else
			d = brb_tally_reached(&i->base.tally[BRB_VOTE_READY], c->deliver_quorum);
		if (d == NULL)
			return;
		i->targeted = true;
		i->target_optimistic = opt;
		memcpy(i->target, d, WEFT_DIGEST_LEN);
	}
	if (i->have_data && memcmp(i->data_digest, i->target, WEFT_DIGEST_LEN) == 0) {
		deliver(c, i);
		return;
	}
	if (i->have_data)
		drop_data(i); /* a payload nobody will deliver */
	if (!i->pulling) {
		i->pulling = true;
		i->pull_cursor = (uint32_t)((c->self + 1 + i->base.seq) % c->n);
		pull_next(c, i);
	}
}

/* We decided READY(d): persist it now, announce it on the next VOTE of the
 * stream or after flush_ms. */
static void ready(struct brb_core *c, struct am_inst *i, const uint8_t digest[WEFT_DIGEST_LEN])
{
	if (i->readied)
		return; /* once (restore() loaded a READY from before a restart) */
	brb_vote_put(c, BRB_VOTE_READY, i->base.sender, i->base.seq, digest);
	i->readied = true;
	memcpy(i->ready_digest, digest, WEFT_DIGEST_LEN);
	count_vote(c, i, BRB_VOTE_READY, c->self, digest);
	pending_add(c, i->base.sender, i->base.seq, digest);
}

/* May free i. */
static void check_thresholds(struct brb_core *c, struct am_inst *i)
{
	const uint8_t *d = brb_tally_reached(&i->base.tally[BRB_VOTE_ECHO], c->echo_quorum);
	if (d == NULL)
		d = brb_tally_reached(&i->base.tally[BRB_VOTE_READY], c->ready_quorum);
	if (d)
		ready(c, i, d);
	try_deliver(c, i);
}

/* The index + 1 of digest in a tally, 0 when nobody voted it. */
static uint16_t entry_of(const struct brb_tally *t, const uint8_t digest[WEFT_DIGEST_LEN])
{
	for (uint32_t e = 0; e < t->nentries; e++)
		if (memcmp(t->entries[e].digest, digest, WEFT_DIGEST_LEN) == 0)
			return (uint16_t)(e + 1);
	return 0;
}

/* How long to wait for an answer before asking the next node: pull_ms,
 * or twice the pull round trip we observe when the links are slower than
 * that (a second answer would only duplicate the payload), at most 20
 * pull_ms. */
static uint64_t pull_wait(const struct amortized *am)
{
	uint64_t wait = 2 * am->pull_rtt_us;
	if (wait > 20 * am->pull_us)
		wait = 20 * am->pull_us;
	return wait < am->pull_us ? am->pull_us : wait;
}

/* Sends PULL to the next node that echoed the target (or, when none did,
 * that readied it), and re-arms the pull timer. */
static void pull_next(struct brb_core *c, struct am_inst *i)
{
	struct amortized *am = am_of(c);
	uint16_t want[2] = {entry_of(&i->base.tally[BRB_VOTE_ECHO], i->target),
			    entry_of(&i->base.tally[BRB_VOTE_READY], i->target)};
	const uint16_t *of[2] = {i->echo_of, i->ready_of};
	uint32_t to = UINT32_MAX;
	for (int pass = 0; pass < 2 && to == UINT32_MAX; pass++) {
		for (uint32_t t = 0; want[pass] && t < c->n; t++) {
			uint32_t v = (i->pull_cursor + t) % c->n;
			if (v != c->self && of[pass][v] == want[pass]) {
				to = v;
				break;
			}
		}
	}
	if (to != UINT32_MAX) {
		if (i->asked_at == NULL && (i->asked_at = calloc(c->n, sizeof(*i->asked_at))) == NULL)
			abort();
		i->pull_asked = true;
		i->pull_sent_us = weft_env_now(c->env);
		i->asked_at[to] = i->pull_sent_us + 1;
		brb_write_header(c, MSG_PULL, i->base.sender, i->base.seq, 1);
		weft_mpw_bin(&c->out, i->target, WEFT_DIGEST_LEN);
		weft_env_send(c->env, to, "amortized.pull", c->out.buf, c->out.len);
		am->pulls++;
		weft_env_metric(c->env, "amortized.pulls", 1);
		i->pull_cursor = (to + 1) % c->n;
	}
	c->env->ops->set_timer(c->env, pull_timer_id(c, i->base.sender, i->base.seq), pull_wait(am));
}

/* ECHO on a PROPOSE: the first one, or the one we echoed before a restart. */
static void on_propose(struct brb_core *c, struct am_inst *i, const uint8_t *data, size_t len)
{
	uint8_t digest[WEFT_DIGEST_LEN];
	brb_payload_digest(c, i->base.sender, i->base.seq, data, len, digest);
	if (i->echoed) {
		/* A repeat (resend), the same PROPOSE after our restart, or an
		 * equivocation: keep the payload only if it can be delivered. */
		bool useful = i->targeted ? memcmp(digest, i->target, WEFT_DIGEST_LEN) == 0
					  : memcmp(digest, i->echo_digest, WEFT_DIGEST_LEN) == 0;
		if (useful && !i->have_data) {
			keep_data(i, data, len, digest);
			try_deliver(c, i);
		}
		return;
	}
	if (!i->targeted || memcmp(digest, i->target, WEFT_DIGEST_LEN) == 0)
		keep_data(i, data, len, digest);
	brb_vote_put(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, digest);
	i->echoed = true;
	memcpy(i->echo_digest, digest, WEFT_DIGEST_LEN);
	count_vote(c, i, BRB_VOTE_ECHO, c->self, digest);
	vote_later(c, i->base.sender, i->base.seq, digest);
	check_thresholds(c, i);
}

/* The core saw a peer's STATUS lacking (s, k), which we delivered at least
 * resend_ms ago: replay our votes of that instance, so the peer can still
 * complete it even when fewer than f+1 nodes delivered it (the optimistic
 * path needs no READYs, and our votes were lost with the instance). */
static void peer_lacks(struct brb_core *c, uint32_t peer, uint32_t s, uint64_t k)
{
	struct amortized *am = am_of(c);
	const struct done_votes *d = done_slot(c, s, k);
	if (!d->used || d->seq != k)
		return; /* not ours (any more) */
	if (d->echoed) {
		brb_write_header(c, MSG_VOTE, s, k, 3);
		weft_mpw_bin(&c->out, d->echo, WEFT_DIGEST_LEN);
		weft_mpw_nil(&c->out);
		weft_mpw_nil(&c->out);
		weft_env_send(c->env, peer, "amortized.vote", c->out.buf, c->out.len);
	}
	if (d->readied)
		send_standalone(c, peer, s, k, d->ready);
	am->replayed++;
	weft_env_metric(c->env, "amortized.replayed", 1);
}

/* ---- the core's hooks ---- */

static void resend(struct brb_core *c, struct brb_inst *base)
{
	struct am_inst *i = (struct am_inst *)base;
	if (base->sender == c->self && i->have_data)
		send_propose(c, i);
	if (i->echoed)
		send_vote(c, base->sender, base->seq, i->echo_digest);
	if (i->readied)
		send_standalone(c, -1, base->sender, base->seq, i->ready_digest);
}

static const struct brb_proto amortized_proto = {
	.inst_size = sizeof(struct am_inst),
	.inst_clear = inst_clear,
	.resend = resend,
	.peer_lacks = peer_lacks,
};

/* ---- set-up ---- */

struct own_scan {
	uint64_t *seqs;
	size_t n, cap;
};

static int collect_own(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct own_scan *o = arg;
	if (klen != 9)
		return WEFT_ECORRUPT;
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 16;
		o->seqs = realloc(o->seqs, o->cap * sizeof(*o->seqs));
		if (o->seqs == NULL)
			abort();
	}
	o->seqs[o->n++] = weft_be64_get((const uint8_t *)key + 1);
	return 0;
}

static int param(const uint8_t *params, size_t plen, const char *key, uint64_t *out, uint64_t max)
{
	int rc = weft_params_uint(params, plen, key, out);
	if (rc == WEFT_NOTFOUND)
		return 0;
	return rc != 0 || *out > max ? WEFT_EINVAL : 0;
}

static int amortized_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct amortized *am = state;
	struct brb_core *c = &am->core;
	uint64_t flush_ms = 20, pull_ms = 50, opt = 1;
	if (env->n > UINT16_MAX || param(params, plen, "flush_ms", &flush_ms, 60000) ||
	    param(params, plen, "pull_ms", &pull_ms, 60000) || pull_ms == 0 ||
	    param(params, plen, "optimistic", &opt, 1))
		return WEFT_EINVAL;
	int rc = brb_core_init(c, env, params, plen, &amortized_proto, am);
	am->flush_us = flush_ms * 1000;
	am->pull_us = pull_ms * 1000;
	am->optimistic_on = opt != 0;
	am->streams = calloc(c->n ? c->n : 1, sizeof(*am->streams));
	am->served = calloc(c->n ? c->n : 1, sizeof(*am->served));
	am->served_next = calloc(c->n ? c->n : 1, sizeof(*am->served_next));
	if (am->streams == NULL || am->served == NULL || am->served_next == NULL)
		abort();
	if (rc != 0)
		return rc;
	am->done = calloc((size_t)c->n * c->window, sizeof(*am->done));
	if (am->done == NULL)
		abort();
	return env->ops->kv_scan(env, "E", 1, "F", 1, load_done, c);
}

/* Our own proposals not yet delivered reopen here (resend re-proposes),
 * not at init: a parent names payloads (weft_brb_ops.digest_with) between
 * the two, and they must be named as they were when we proposed them. */
static int amortized_start(void *state)
{
	struct amortized *am = state;
	struct brb_core *c = &am->core;
	struct weft_env *env = c->env;
	struct own_scan o = {0};
	int rc = env->ops->kv_scan(env, "A", 1, "B", 1, collect_own, &o);
	for (size_t k = 0; rc == 0 && k < o.n; k++) {
		int why;
		if (brb_is_delivered(c, c->self, o.seqs[k])) {
			uint8_t key[9];
			env->ops->kv_del(env, key, own_key(key, o.seqs[k]));
		} else {
			inst_get(c, c->self, o.seqs[k], true, &why);
		}
	}
	free(o.seqs);
	if (rc == 0)
		brb_core_start(c);
	return rc;
}

static void amortized_destroy(void *state)
{
	struct amortized *am = state;
	brb_core_destroy(&am->core);
	for (uint32_t s = 0; am->streams && s < am->core.n; s++) {
		free(am->streams[s].pending);
		free(am->streams[s].due);
	}
	free(am->streams);
	free(am->served);
	free(am->served_next);
	free(am->done);
	am->done = NULL;
	am->streams = NULL;
	am->served = NULL;
	am->served_next = NULL;
}

/* ---- requests and messages ---- */

static int amortized_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct amortized *am = state;
	struct brb_core *c = &am->core;
	uint64_t seq;
	int why = brb_own_begin(c, len, &seq);
	if (why != 0)
		return why;
	struct am_inst *i = (struct am_inst *)brb_inst_get(c, c->self, seq, true, &why);
	if (i == NULL)
		return WEFT_ESTATE;
	uint8_t digest[WEFT_DIGEST_LEN], key[9];
	brb_payload_digest(c, c->self, seq, req, len, digest);
	keep_data(i, req, len, digest);
	c->env->ops->kv_put(c->env, key, own_key(key, seq), req, len);
	restore(c, i);
	send_propose(c, i);
	on_propose(c, i, req, len);
	if (reply) {
		weft_mpw_map(reply, 1);
		weft_mpw_str(reply, "seq");
		weft_mpw_uint(reply, seq);
	}
	return 0;
}

/* Reads a bin 32 or nil: 1 digest, 0 nil, negative malformed. */
static int read_opt_digest(struct weft_mp_reader *r, uint8_t digest[WEFT_DIGEST_LEN])
{
	if (weft_mp_peek_nil(r))
		return weft_mp_read_nil(r) ? WEFT_EDECODE : 0;
	return weft_mp_read_bin_fixed(r, digest, WEFT_DIGEST_LEN) ? WEFT_EDECODE : 1;
}

static int handle_vote(struct brb_core *c, uint32_t from, uint32_t sender, uint64_t seq, struct weft_mp_reader *r)
{
	uint8_t echo_d[WEFT_DIGEST_LEN], ready_d[WEFT_DIGEST_LEN];
	uint64_t ready_for = 0;
	int has_echo = read_opt_digest(r, echo_d);
	if (has_echo < 0)
		return brb_reject(c, WEFT_EDECODE);
	bool has_rf;
	if (weft_mp_peek_nil(r)) {
		has_rf = false;
		if (weft_mp_read_nil(r))
			return brb_reject(c, WEFT_EDECODE);
	} else {
		has_rf = true;
		if (weft_mp_read_uint(r, &ready_for))
			return brb_reject(c, WEFT_EDECODE);
	}
	int has_ready = read_opt_digest(r, ready_d);
	if (has_ready < 0 || weft_mp_remaining(r))
		return brb_reject(c, WEFT_EDECODE);
	if (has_rf != (has_ready == 1) || (!has_echo && !has_rf))
		return brb_reject(c, WEFT_EPROTO); /* half a READY, or an empty VOTE */
	if (has_rf && (ready_for >= seq || (!has_echo && seq != ready_for + 1)))
		return brb_reject(c, WEFT_EPROTO); /* a READY rides only on a later instance */
	int rc = 0, why;
	if (has_echo) {
		struct am_inst *i = inst_get(c, sender, seq, true, &why);
		if (i && count_vote(c, i, BRB_VOTE_ECHO, from, echo_d))
			check_thresholds(c, i);
		else if (i == NULL && why == 2)
			rc = WEFT_ETOOBIG;
	}
	if (has_rf) {
		struct am_inst *j = inst_get(c, sender, ready_for, true, &why);
		if (j && count_vote(c, j, BRB_VOTE_READY, from, ready_d))
			check_thresholds(c, j);
		else if (j == NULL && why == 2)
			rc = WEFT_ETOOBIG;
	}
	return rc ? brb_reject(c, rc) : 0;
}

/* Whether to answer requester's PULL for (sender, seq) now: once per
 * instance per pull_ms, and at most SERVE_RING answers per pull_ms. */
static bool serve_allowed(struct amortized *am, uint32_t requester, uint32_t sender, uint64_t seq)
{
	uint64_t now = weft_env_now(am->core.env);
	struct served *ring = am->served[requester];
	for (int k = 0; k < SERVE_RING; k++)
		if (ring[k].used && ring[k].sender == sender && ring[k].seq == seq && now - ring[k].at_us < am->pull_us)
			return false;
	struct served *slot = &ring[am->served_next[requester]];
	if (slot->used && now - slot->at_us < am->pull_us)
		return false;
	*slot = (struct served){true, sender, seq, now};
	am->served_next[requester] = (am->served_next[requester] + 1) % SERVE_RING;
	return true;
}

static int handle_pull(struct brb_core *c, uint32_t from, uint32_t sender, uint64_t seq, struct weft_mp_reader *r)
{
	struct amortized *am = am_of(c);
	uint8_t want[WEFT_DIGEST_LEN];
	if (weft_mp_read_bin_fixed(r, want, WEFT_DIGEST_LEN) || weft_mp_remaining(r))
		return brb_reject(c, WEFT_EDECODE);
	if (from == c->self)
		return 0;
	int why;
	struct am_inst *i = inst_get(c, sender, seq, false, &why);
	const uint8_t *data = NULL;
	size_t len = 0;
	if (i) {
		if (!i->have_data || memcmp(i->data_digest, want, WEFT_DIGEST_LEN) != 0)
			return 0; /* we do not hold it */
		data = i->data;
		len = i->len;
	} else if (why == 2) {
		return brb_reject(c, WEFT_ETOOBIG);
	} else if (why == 1) {
		uint8_t digest[WEFT_DIGEST_LEN];
		if (retained_get(c, sender, seq, &data, &len) != 0)
			return 0;
		brb_payload_digest(c, sender, seq, data, len, digest);
		if (memcmp(digest, want, WEFT_DIGEST_LEN) != 0)
			return 0;
	} else {
		return 0;
	}
	if (!serve_allowed(am, from, sender, seq))
		return 0;
	/* data may point into kv: valid until the next kv call, and none follows. */
	brb_write_header(c, MSG_PAYLOAD, sender, seq, 1);
	weft_mpw_bin(&c->out, data, len);
	weft_env_send(c->env, from, "amortized.payload", c->out.buf, c->out.len);
	am->payloads_served++;
	weft_env_metric(c->env, "amortized.served", 1);
	return 0;
}

static int handle_payload(struct brb_core *c, uint32_t from, uint32_t sender, uint64_t seq, const uint8_t *data,
			  size_t len)
{
	struct amortized *am = am_of(c);
	int why;
	struct am_inst *i = inst_get(c, sender, seq, false, &why);
	if (i == NULL)
		return why == 2 ? brb_reject(c, WEFT_ETOOBIG) : 0; /* delivered, or never opened: late */
	if (!i->targeted || (i->have_data && memcmp(i->data_digest, i->target, WEFT_DIGEST_LEN) == 0))
		return 0; /* not asked for (yet), or already held */
	uint8_t digest[WEFT_DIGEST_LEN];
	brb_payload_digest(c, sender, seq, data, len, digest);
	if (memcmp(digest, i->target, WEFT_DIGEST_LEN) != 0)
		return brb_reject(c, WEFT_EPROTO); /* not the payload of the digest a quorum named */
	if (i->asked_at && i->asked_at[from]) {
		uint64_t rtt = weft_env_now(c->env) - (i->asked_at[from] - 1);
		am->pull_rtt_us = am->pull_rtt_us ? (7 * am->pull_rtt_us + rtt) / 8 : rtt;
	}
	keep_data(i, data, len, digest);
	try_deliver(c, i);
	return 0;
}

static int amortized_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct amortized *am = state;
	struct brb_core *c = &am->core;
	if (from >= c->n)
		return brb_reject(c, WEFT_EINVAL);
	int rc = brb_core_on_message(c, from, msg, len); /* counts its own rejections */
	if (rc <= 0)
		return rc;
	struct weft_mp_reader r;
	uint32_t count, sender, plen;
	uint64_t type, seq;
	if (brb_read_header(&r, msg, len, c->n, &count, &type, &sender, &seq) != 0)
		return brb_reject(c, WEFT_EDECODE);
	if (type == MSG_VOTE && count == 7)
		return handle_vote(c, from, sender, seq, &r);
	if (type == MSG_PULL && count == 5)
		return handle_pull(c, from, sender, seq, &r);
	const uint8_t *payload;
	if ((type != MSG_PROPOSE && type != MSG_PAYLOAD) || count != 5 || weft_mp_read_bin(&r, &payload, &plen) ||
	    weft_mp_remaining(&r))
		return brb_reject(c, WEFT_EDECODE);
	if (plen > c->max_payload)
		return brb_reject(c, WEFT_ETOOBIG);
	if (type == MSG_PAYLOAD)
		return handle_payload(c, from, sender, seq, payload, plen);
	if (from != sender)
		return brb_reject(c, WEFT_EPROTO); /* only the sender may PROPOSE */
	int why;
	struct am_inst *i = inst_get(c, sender, seq, true, &why);
	if (i == NULL)
		return why == 2 ? brb_reject(c, WEFT_ETOOBIG) : 0;
	on_propose(c, i, payload, plen);
	return 0;
}

static void amortized_on_timer(void *state, uint64_t id)
{
	struct amortized *am = state;
	struct brb_core *c = &am->core;
	if (brb_core_on_timer(c, id))
		return;
	if (id < c->n) {
		flush(c, (uint32_t)id);
		return;
	}
	if (id >= TIMER_TICK && id < TIMER_TICK + c->n) {
		tick(c, (uint32_t)(id - TIMER_TICK));
		return;
	}
	if (id < TIMER_PULL || id >= TIMER_PULL + (uint64_t)c->n * c->window)
		return;
	uint64_t k = id - TIMER_PULL;
	struct am_inst *i = (struct am_inst *)c->senders[k / c->window].open[k % c->window];
	if (i == NULL || !i->pulling || (i->have_data && memcmp(i->data_digest, i->target, WEFT_DIGEST_LEN) == 0))
		return;
	uint64_t waited = weft_env_now(c->env) - i->pull_sent_us, wait = pull_wait(am);
	if (i->pull_asked && waited < wait)
		c->env->ops->set_timer(c->env, id, wait - waited); /* we learnt the links are slow meanwhile */
	else
		pull_next(c, i);
}

static void amortized_info(void *state, struct weft_mpw *w)
{
	struct amortized *am = state;
	uint32_t pending = 0;
	for (uint32_t s = 0; s < am->core.n; s++)
		pending += am->streams[s].npending;
	weft_mpw_map(w, 19);
	weft_mpw_str(w, "protocol");
	weft_mpw_str(w, "amortized");
	brb_core_info(&am->core, w);
	weft_mpw_str(w, "optimistic");
	weft_mpw_uint(w, am->optimistic);
	weft_mpw_str(w, "fallback");
	weft_mpw_uint(w, am->fallback);
	weft_mpw_str(w, "pulls");
	weft_mpw_uint(w, am->pulls);
	weft_mpw_str(w, "served");
	weft_mpw_uint(w, am->payloads_served);
	weft_mpw_str(w, "piggybacked");
	weft_mpw_uint(w, am->piggybacked);
	weft_mpw_str(w, "standalone");
	weft_mpw_uint(w, am->standalone);
	weft_mpw_str(w, "replayed");
	weft_mpw_uint(w, am->replayed);
	weft_mpw_str(w, "pending_readies");
	weft_mpw_uint(w, pending);
	weft_mpw_str(w, "own_delivered");
	weft_mpw_uint(w, am->own_delivered);
	weft_mpw_str(w, "own_latency_us_avg");
	weft_mpw_uint(w, am->own_delivered ? am->own_latency_us / am->own_delivered : 0);
}

BRB_EQUIVOCATE_STRATEGY(amortized, amortized);

const struct weft_proto_ops weft_proto_amortized = {
	.abi = WEFT_PROTO_ABI,
	.name = "amortized",
	.state_size = sizeof(struct amortized),
	.init = amortized_init,
	.start = amortized_start,
	.on_message = amortized_on_message,
	.on_timer = amortized_on_timer,
	.on_request = amortized_on_request,
	.info = amortized_info,
	.destroy = amortized_destroy,
	.strategies = amortized_strategies,
};
