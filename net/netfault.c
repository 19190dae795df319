/* netfault.c - the rule engine of the runtime fault layer (see
 * weft/netfault.h): parses fault.set parameters into rules, keeps up to
 * WEFT_NF_MAX_RULES of them, and judges each protocol message against them.
 *
 * Parameters come from RPC clients, so they are read with the bounded
 * msgpack reader and never trusted: every declared count is checked against
 * the bytes present (by the reader) and against our own limits before any
 * element is looked at, nothing is allocated, and every rejection returns
 * WEFT_EINVAL with a message that names the parameter and says what was
 * expected.  Values echoed in messages are truncated and made printable.
 *
 * Parsing rules beyond the header's summary: a parameter given twice is an
 * error; nil is not "absent" (omit the key instead); peers, when present,
 * must be a non-empty array (omit it for every peer); delay_ms and jitter_ms
 * may only be non-zero for the actions that use them (delay_ms: delay and
 * reorder; jitter_ms: delay); duration_ms must be > 0; partition always acts
 * in both directions whatever direction says.
 *
 * Judging is deterministic: one weft/rng.h generator (xoshiro256**),
 * seeded from weft_nf_new's seed, supplies every random draw (the
 * probability of each matching rule whose p < 1, jitter, reorder holds and
 * the byte weft_nf_corrupt flips), so the same seed and the same calls give
 * the same verdicts.  Drop and partition rules are judged first, in the
 * order the rules were added; a dropped message is not judged further (and
 * not counted as delayed, duplicated...).  The other rules then compose:
 * delays add, any duplicate rule makes two copies, any corrupt rule sets
 * the flag.  Stats count messages, once per action per message. */
#include "weft/netfault.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"
#include "weft/faults.h"
#include "weft/rng.h"

#define NF_MAX_DELAY_MS 600000u
#define NF_NACTIONS 6

struct weft_nf {
	uint32_t n;                 /* committee size: peers are < n */
	uint32_t last_id;           /* ids are last_id + 1, never 0 */
	unsigned int nrules;
	struct weft_nf_rule rules[WEFT_NF_MAX_RULES]; /* in the order added */
	struct weft_rng rng;        /* every random draw of the judging */
	uint64_t stats[NF_NACTIONS];
};

/* The shared fault words (weft/faults.h): "omission" is the transport's
 * drop ("drop" is still accepted). */
static const char *const action_names[NF_NACTIONS] = {
	[WEFT_NF_DROP] = "omission",
	[WEFT_NF_DELAY] = "delay",
	[WEFT_NF_DUPLICATE] = "duplicate",
	[WEFT_NF_REORDER] = "reorder",
	[WEFT_NF_CORRUPT] = "corrupt",
	[WEFT_NF_PARTITION] = "partition",
};


/* ---- lifetime ------------------------------------------------------------- */

struct weft_nf *weft_nf_new(uint32_t n, uint64_t seed)
{
	struct weft_nf *nf = calloc(1, sizeof *nf);

	if (!nf)
		abort();
	nf->n = n;
	weft_rng_seed(&nf->rng, seed);
	return nf;
}

void weft_nf_free(struct weft_nf *nf)
{
	free(nf);
}

/* ---- parameter parsing ---------------------------------------------------- */

struct pctx {
	struct weft_mp_reader r;
	uint32_t n;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int perr(struct pctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return WEFT_EINVAL;
}

/* Copies untrusted bytes into buf as a quoted, printable, bounded string. */
static const char *quote(const uint8_t *s, uint32_t len, char *buf, size_t size)
{
	const uint32_t max = 32;
	size_t o = 0;

	buf[o++] = '\'';
	for (uint32_t i = 0; i < len && i < max && o + 5 < size; i++)
		buf[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char)s[i] : '?';
	if (len > max && o + 5 < size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

/* A short description of a value for error messages. */
static const char *describe(const struct weft_mp_obj *o, char *buf, size_t size)
{
	switch (o->type) {
	case WEFT_MP_NIL:
		return "nil";
	case WEFT_MP_BOOL:
		return o->v.b ? "true" : "false";
	case WEFT_MP_UINT:
		snprintf(buf, size, "%" PRIu64, o->v.u);
		return buf;
	case WEFT_MP_INT:
		snprintf(buf, size, "%" PRId64, o->v.i);
		return buf;
	case WEFT_MP_FLOAT:
		/* 15 digits: 1.0000001 stays visible; 1 is written 1.0. */
		snprintf(buf, size, "%.15g", o->v.f);
		if (!strpbrk(buf, ".eni"))
			strncat(buf, ".0", size - strlen(buf) - 1);
		return buf;
	case WEFT_MP_STR:
		return quote(o->v.s.bytes, o->v.s.len, buf, size);
	case WEFT_MP_BIN:
		return "binary data";
	case WEFT_MP_ARRAY:
		return "an array";
	case WEFT_MP_MAP:
		return "a map";
	case WEFT_MP_EXT:
		return "an extension value";
	}
	return "an unknown value";
}

static bool str_is(const struct weft_mp_obj *o, const char *s)
{
	size_t len = strlen(s);

	return o->type == WEFT_MP_STR && o->v.s.len == len && memcmp(o->v.s.bytes, s, len) == 0;
}

/* Reads the value of parameter name. */
static int read_value(struct pctx *c, const char *name, struct weft_mp_obj *o)
{
	if (weft_mp_read(&c->r, o) != 0)
		return perr(c, "%s: malformed or truncated msgpack value", name);
	return 0;
}

/* An unsigned integer parameter no larger than max. */
static int get_uint(struct pctx *c, const char *name, uint64_t max, uint64_t *out)
{
	struct weft_mp_obj o;
	char d[48];

	if (read_value(c, name, &o))
		return WEFT_EINVAL;
	if (o.type != WEFT_MP_UINT)
		return perr(c, "%s: expected an unsigned integer (milliseconds), got %s", name,
			    describe(&o, d, sizeof d));
	if (o.v.u > max)
		return perr(c, "%s: %" PRIu64 " is above the limit of %" PRIu64, name, o.v.u, max);
	*out = o.v.u;
	return 0;
}

static int get_action(struct pctx *c, struct weft_nf_rule *r)
{
	struct weft_mp_obj o;
	char d[48];

	char list[160], why[256];
	enum weft_fault f;
	if (read_value(c, "action", &o))
		return WEFT_EINVAL;
	weft_fault_names(WEFT_FAULT_IN_TRANSPORT, list, sizeof(list));
	if (o.type != WEFT_MP_STR)
		return perr(c, "action: expected one of %s, got %s", list, describe(&o, d, sizeof d));
	if (weft_fault_parse((const char *)o.v.s.bytes, o.v.s.len, WEFT_FAULT_IN_TRANSPORT, &f, why, sizeof(why)) != 0)
		return perr(c, "action: %s", why);
	for (int a = 0; a < NF_NACTIONS; a++)
		if (strcmp(action_names[a], weft_fault_name(f)) == 0)
			r->action = (enum weft_nf_action)a;
	return 0;
}

static int get_direction(struct pctx *c, struct weft_nf_rule *r)
{
	struct weft_mp_obj o;
	char d[48];

	if (read_value(c, "direction", &o))
		return WEFT_EINVAL;
	if (str_is(&o, "in"))
		r->dir = WEFT_NF_IN;
	else if (str_is(&o, "out"))
		r->dir = WEFT_NF_OUT;
	else if (str_is(&o, "both"))
		r->dir = WEFT_NF_BOTH;
	else
		return perr(c, "direction: expected \"in\", \"out\" or \"both\", got %s",
			    describe(&o, d, sizeof d));
	return 0;
}

static int get_probability(struct pctx *c, struct weft_nf_rule *r)
{
	struct weft_mp_obj o;
	char d[48];
	double p;

	if (read_value(c, "probability", &o))
		return WEFT_EINVAL;
	if (o.type == WEFT_MP_UINT)
		p = o.v.u == 1 ? 1.0 : 0.0;
	else if (o.type == WEFT_MP_FLOAT)
		p = o.v.f;
	else
		p = 0.0;
	/* Written so that NaN fails too. */
	if (!(p > 0.0 && p <= 1.0))
		return perr(c, "probability: expected a number in (0, 1], got %s", describe(&o, d, sizeof d));
	r->probability = p;
	return 0;
}

static int get_peers(struct pctx *c, struct weft_nf_rule *r)
{
	struct weft_mp_obj o;
	char d[48];
	uint32_t count;

	if (read_value(c, "peers", &o))
		return WEFT_EINVAL;
	if (o.type != WEFT_MP_ARRAY)
		return perr(c, "peers: expected an array of node indices, got %s", describe(&o, d, sizeof d));
	count = o.v.count;
	if (count == 0)
		return perr(c, "peers: expected at least one node index (omit peers to act on every peer)");
	if (count > 64)
		return perr(c, "peers: expected at most 64 node indices, got %" PRIu32, count);
	for (uint32_t i = 0; i < count; i++) {
		if (weft_mp_read(&c->r, &o) != 0)
			return perr(c, "peers[%" PRIu32 "]: malformed or truncated msgpack value", i);
		if (o.type != WEFT_MP_UINT)
			return perr(c, "peers[%" PRIu32 "]: expected a node index (unsigned integer), got %s", i,
				    describe(&o, d, sizeof d));
		if (o.v.u >= c->n)
			return perr(c, "peers[%" PRIu32 "]: %" PRIu64 " is not a node index (n = %" PRIu32 ")", i,
				    o.v.u, c->n);
		for (uint32_t j = 0; j < i; j++)
			if (r->peers[j] == o.v.u)
				return perr(c, "peers[%" PRIu32 "]: %" PRIu64 " is listed twice (also peers[%" PRIu32 "])",
					    i, o.v.u, j);
		r->peers[i] = (uint32_t)o.v.u;
	}
	r->npeers = count;
	return 0;
}

enum param {
	P_ACTION,
	P_PEERS,
	P_DIRECTION,
	P_PROBABILITY,
	P_DELAY,
	P_JITTER,
	P_DURATION,
	P_COUNT,
};

static const char *const param_names[P_COUNT] = {
	[P_ACTION] = "action",
	[P_PEERS] = "peers",
	[P_DIRECTION] = "direction",
	[P_PROBABILITY] = "probability",
	[P_DELAY] = "delay_ms",
	[P_JITTER] = "jitter_ms",
	[P_DURATION] = "duration_ms",
};

int weft_nf_parse_rule(const struct weft_nf *nf, const uint8_t *params, size_t plen, uint64_t now_ms,
		       struct weft_nf_rule *out, char *err, size_t errlen)
{
	struct pctx c;
	struct weft_nf_rule r;
	struct weft_mp_obj o;
	char d[48];
	unsigned int seen = 0;
	uint64_t delay = 0, jitter = 0, duration = 0;
	uint32_t count;
	int rc = 0;

	c.n = nf->n;
	c.err = err;
	c.errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	weft_mp_reader_init(&c.r, params, params ? plen : 0);
	memset(&r, 0, sizeof r);
	r.dir = WEFT_NF_BOTH;
	r.probability = 1.0;

	if (weft_mp_remaining(&c.r) == 0)
		return perr(&c, "params: expected a map of named parameters, got nothing");
	if (weft_mp_read(&c.r, &o) != 0)
		return perr(&c, "params: malformed or truncated msgpack (expected a map of named parameters)");
	if (o.type != WEFT_MP_MAP)
		return perr(&c, "params: expected a map of named parameters, got %s", describe(&o, d, sizeof d));
	count = o.v.count;
	for (uint32_t i = 0; i < count; i++) {
		int p;

		if (weft_mp_read(&c.r, &o) != 0)
			return perr(&c, "params: malformed or truncated msgpack in parameter name %" PRIu32, i + 1);
		if (o.type != WEFT_MP_STR)
			return perr(&c, "params: parameter names must be strings, got %s",
				    describe(&o, d, sizeof d));
		for (p = 0; p < P_COUNT; p++)
			if (str_is(&o, param_names[p]))
				break;
		if (p == P_COUNT)
			return perr(&c, "unknown parameter %s (expected action, peers, direction, probability, "
				    "delay_ms, jitter_ms or duration_ms)", quote(o.v.s.bytes, o.v.s.len, d, sizeof d));
		if (seen & (1u << p))
			return perr(&c, "duplicate parameter '%s'", param_names[p]);
		seen |= 1u << p;
		switch ((enum param)p) {
		case P_ACTION:
			rc = get_action(&c, &r);
			break;
		case P_PEERS:
			rc = get_peers(&c, &r);
			break;
		case P_DIRECTION:
			rc = get_direction(&c, &r);
			break;
		case P_PROBABILITY:
			rc = get_probability(&c, &r);
			break;
		case P_DELAY:
			rc = get_uint(&c, "delay_ms", NF_MAX_DELAY_MS, &delay);
			break;
		case P_JITTER:
			rc = get_uint(&c, "jitter_ms", NF_MAX_DELAY_MS, &jitter);
			break;
		case P_DURATION:
			rc = get_uint(&c, "duration_ms", UINT64_MAX, &duration);
			break;
		case P_COUNT:
			break;
		}
		if (rc)
			return rc;
	}
	if (weft_mp_remaining(&c.r) != 0)
		return perr(&c, "params: unexpected bytes after the map (%zu)", weft_mp_remaining(&c.r));

	/* Checks that involve more than one parameter. */
	if (!(seen & (1u << P_ACTION))) {
		char list[160];
		weft_fault_names(WEFT_FAULT_IN_TRANSPORT, list, sizeof(list));
		return perr(&c, "action: required (one of %s)", list);
	}
	if (r.action == WEFT_NF_DELAY || r.action == WEFT_NF_REORDER) {
		if (delay == 0)
			return perr(&c, "delay_ms: required and > 0 for action %s", action_names[r.action]);
	} else if (delay != 0) {
		return perr(&c, "delay_ms: only applies to actions delay and reorder (action is %s)",
			    action_names[r.action]);
	}
	if (jitter != 0 && r.action != WEFT_NF_DELAY)
		return perr(&c, "jitter_ms: only applies to action delay (action is %s)", action_names[r.action]);
	if (jitter > delay)
		return perr(&c, "jitter_ms: %" PRIu64 " is above delay_ms (%" PRIu64 ")", jitter, delay);
	if (seen & (1u << P_DURATION)) {
		if (duration == 0)
			return perr(&c, "duration_ms: expected a duration > 0 (omit it for a rule that never expires)");
		if (duration > UINT64_MAX - now_ms)
			return perr(&c, "duration_ms: %" PRIu64 " is too large", duration);
		r.expires_ms = now_ms + duration;
	}
	if (r.action == WEFT_NF_PARTITION)
		r.dir = WEFT_NF_BOTH;
	r.delay_ms = (uint32_t)delay;
	r.jitter_ms = (uint32_t)jitter;
	*out = r;
	return 0;
}

/* ---- the rule set --------------------------------------------------------- */

/* The invariants judge and list rely on, for rules not built by the parser. */
static bool rule_valid(const struct weft_nf *nf, const struct weft_nf_rule *r)
{
	if ((unsigned int)r->action >= NF_NACTIONS)
		return false;
	if (r->dir != WEFT_NF_IN && r->dir != WEFT_NF_OUT && r->dir != WEFT_NF_BOTH)
		return false;
	if (r->npeers > 64)
		return false;
	for (uint32_t i = 0; i < r->npeers; i++) {
		if (r->peers[i] >= nf->n)
			return false;
		for (uint32_t j = 0; j < i; j++)
			if (r->peers[j] == r->peers[i])
				return false;
	}
	if (!(r->probability > 0.0 && r->probability <= 1.0))
		return false;
	if (r->delay_ms > NF_MAX_DELAY_MS || r->jitter_ms > r->delay_ms)
		return false;
	return true;
}

static bool id_used(const struct weft_nf *nf, uint32_t id)
{
	for (unsigned int i = 0; i < nf->nrules; i++)
		if (nf->rules[i].id == id)
			return true;
	return false;
}

int weft_nf_add(struct weft_nf *nf, struct weft_nf_rule *r)
{
	struct weft_nf_rule *slot;

	if (nf->nrules >= WEFT_NF_MAX_RULES)
		return WEFT_ETOOBIG;
	if (!rule_valid(nf, r))
		return WEFT_EINVAL;
	/* Ids grow from 1; after wrapping around, skip 0 and ids in use. */
	do
		nf->last_id++;
	while (nf->last_id == 0 || id_used(nf, nf->last_id));
	r->id = nf->last_id;
	if (r->action == WEFT_NF_PARTITION)
		r->dir = WEFT_NF_BOTH;
	slot = &nf->rules[nf->nrules++];
	*slot = *r;
	return 0;
}

static void remove_at(struct weft_nf *nf, unsigned int i)
{
	memmove(&nf->rules[i], &nf->rules[i + 1], (nf->nrules - i - 1) * sizeof nf->rules[0]);
	nf->nrules--;
}

int weft_nf_clear(struct weft_nf *nf, uint32_t id)
{
	if (id == 0) {
		nf->nrules = 0;
		return 0;
	}
	for (unsigned int i = 0; i < nf->nrules; i++)
		if (nf->rules[i].id == id) {
			remove_at(nf, i);
			return 0;
		}
	return WEFT_NOTFOUND;
}

/* Removes the rules that have expired at now_ms. */
static void prune(struct weft_nf *nf, uint64_t now_ms)
{
	unsigned int i = 0;

	while (i < nf->nrules) {
		uint64_t e = nf->rules[i].expires_ms;

		if (e != 0 && e <= now_ms)
			remove_at(nf, i);
		else
			i++;
	}
}

static const char *dir_name(enum weft_nf_dir d)
{
	switch (d) {
	case WEFT_NF_IN:
		return "in";
	case WEFT_NF_OUT:
		return "out";
	case WEFT_NF_BOTH:
		return "both";
	}
	return "both";
}

void weft_nf_list(struct weft_nf *nf, uint64_t now_ms, struct weft_mpw *w)
{
	prune(nf, now_ms);
	weft_mpw_array(w, nf->nrules);
	for (unsigned int i = 0; i < nf->nrules; i++) {
		const struct weft_nf_rule *r = &nf->rules[i];

		weft_mpw_map(w, 8);
		weft_mpw_str(w, "id");
		weft_mpw_uint(w, r->id);
		weft_mpw_str(w, "action");
		weft_mpw_str(w, action_names[r->action]);
		weft_mpw_str(w, "direction");
		weft_mpw_str(w, dir_name(r->dir));
		weft_mpw_str(w, "peers");
		weft_mpw_array(w, r->npeers);
		for (uint32_t j = 0; j < r->npeers; j++)
			weft_mpw_uint(w, r->peers[j]);
		weft_mpw_str(w, "probability");
		weft_mpw_double(w, r->probability);
		weft_mpw_str(w, "delay_ms");
		weft_mpw_uint(w, r->delay_ms);
		weft_mpw_str(w, "jitter_ms");
		weft_mpw_uint(w, r->jitter_ms);
		weft_mpw_str(w, "remaining_ms");
		if (r->expires_ms == 0)
			weft_mpw_nil(w);
		else
			weft_mpw_uint(w, r->expires_ms - now_ms); /* > 0 after prune */
	}
}

unsigned int weft_nf_count(const struct weft_nf *nf)
{
	return nf->nrules;
}

/* ---- judging -------------------------------------------------------------- */

static bool rule_matches(const struct weft_nf_rule *r, enum weft_nf_dir dir, uint32_t peer)
{
	if (((unsigned int)r->dir & (unsigned int)dir) == 0)
		return false;
	if (r->npeers == 0)
		return true;
	for (uint32_t i = 0; i < r->npeers; i++)
		if (r->peers[i] == peer)
			return true;
	return false;
}

/* Draws whether a matching rule acts on this message (no draw when p = 1). */
static bool rule_fires(struct weft_nf *nf, const struct weft_nf_rule *r)
{
	if (r->probability >= 1.0)
		return true;
	return weft_rng_unit(&nf->rng) < r->probability;
}

void weft_nf_judge(struct weft_nf *nf, enum weft_nf_dir dir, uint32_t peer, uint64_t now_ms,
		   struct weft_nf_verdict *v)
{
	unsigned int acted = 0;

	v->drop = false;
	v->copies = 1;
	v->delay_us = 0;
	v->corrupt = false;
	prune(nf, now_ms);

	/* Drops first: a message that is dropped is not delayed or copied. */
	for (unsigned int i = 0; i < nf->nrules; i++) {
		const struct weft_nf_rule *r = &nf->rules[i];

		if (r->action != WEFT_NF_DROP && r->action != WEFT_NF_PARTITION)
			continue;
		if (rule_matches(r, dir, peer) && rule_fires(nf, r)) {
			v->drop = true;
			nf->stats[r->action]++;
			return;
		}
	}

	for (unsigned int i = 0; i < nf->nrules; i++) {
		const struct weft_nf_rule *r = &nf->rules[i];
		uint64_t base, jit, off;

		if (r->action == WEFT_NF_DROP || r->action == WEFT_NF_PARTITION)
			continue;
		if (!rule_matches(r, dir, peer) || !rule_fires(nf, r))
			continue;
		acted |= 1u << r->action;
		switch (r->action) {
		case WEFT_NF_DELAY:
			base = (uint64_t)r->delay_ms * 1000;
			jit = (uint64_t)r->jitter_ms * 1000;
			if (jit == 0) {
				v->delay_us += base;
				break;
			}
			/* base + uniform [-jit, +jit], never below 0. */
			off = weft_rng_below(&nf->rng, 2 * jit + 1);
			base += off;
			v->delay_us += base >= jit ? base - jit : 0;
			break;
		case WEFT_NF_REORDER:
			v->delay_us += weft_rng_below(&nf->rng, (uint64_t)r->delay_ms * 1000 + 1);
			break;
		case WEFT_NF_DUPLICATE:
			v->copies = 2;
			break;
		case WEFT_NF_CORRUPT:
			v->corrupt = true;
			break;
		case WEFT_NF_DROP:
		case WEFT_NF_PARTITION:
			break;
		}
	}
	for (int a = 0; a < NF_NACTIONS; a++)
		if (acted & (1u << a))
			nf->stats[a]++;
}

void weft_nf_corrupt(struct weft_nf *nf, uint8_t *msg, size_t len)
{
	size_t at;
	uint8_t x;

	if (!msg || len == 0)
		return;
	at = (size_t)weft_rng_below(&nf->rng, len);
	x = (uint8_t)(1 + weft_rng_below(&nf->rng, 255));
	msg[at] ^= x;
}

void weft_nf_stats(const struct weft_nf *nf, uint64_t out[6])
{
	memcpy(out, nf->stats, sizeof nf->stats);
}

const char *weft_nf_action_name(enum weft_nf_action a)
{
	return (unsigned)a < NF_NACTIONS ? action_names[a] : "?";
}
