/* manifest.c - weft-campaign's manifests: the JSON description of a
 * campaign (committee, Byzantine nodes, load, duration, the schedule of
 * faults, bounds) parsed into struct campaign_manifest, every rule checked
 * before anything starts, and the weft-sim scenario that comes closest to
 * it.  docs/campaigns.md documents the format.
 *
 * Like weft-sim's scenario files (src/sim/scenario.c), a manifest is
 * untrusted input: unknown keys are errors at every level, and each error
 * names the file, the JSON path and what was expected:
 *
 *   m.json: $.schedule[1].fault: unknown fault 'kil' (expected one of ...)
 *
 * Fault words are the shared vocabulary's (weft/faults.h), parsed for the
 * place WEFT_FAULT_IN_DOCKER, and a step's keys are the simulator's where
 * it has them (nodes, peers, direction, probability, groups, lose), so that
 * a failing campaign reads as a scenario. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/brb.h"
#include "weft/err.h"
#include "weft/faults.h"
#include "weft/json.h"
#include "weft/proto.h"
#include "weft/util.h"

#include "campaign.h"

#define NOTE 48
#define MAX_NAME 64
#define MAX_DURATION_S 86400.0
#define MAX_RATE 10000.0
#define MAX_MS 60000u

struct ctx {
	const char *src;
	char *err;
	size_t errlen;
	struct campaign_manifest *m;
};

__attribute__((format(printf, 3, 4))) static int fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	if (c->err && c->errlen) {
		int k = snprintf(c->err, c->errlen, "%s: %s: ", c->src, path);
		if (k >= 0 && (size_t)k < c->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
			va_end(ap);
		}
	}
	return WEFT_EINVAL;
}

/* A value as a message quotes it: its compact JSON, cut at NOTE bytes. */
static const char *describe(const json_t *v, char *out)
{
	char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	snprintf(out, NOTE, "%s", s ? s : "nothing");
	if (s && strlen(s) >= NOTE)
		memcpy(out + NOTE - 4, "...", 4);
	free(s);
	return out;
}
#define DESC(v) describe((v), (char[NOTE]){0})

/* Every key of obj must be in keys (NULL-terminated); what names whose. */
static int check_keys(struct ctx *c, const json_t *obj, const char *path, const char *const *keys, const char *what)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)obj, key, val) {
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], key) != 0)
			i++;
		if (keys[i])
			continue;
		char list[256];
		size_t o = 0;
		list[0] = '\0';
		for (i = 0; keys[i] && o < sizeof(list); i++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", keys[i]);
		char p[WEFT_JSON_PATH_MAX];
		return fail(c, weft_json_path_key(p, path, key), "unknown key for %s (expected one of %s)", what, list);
	}
	return 0;
}

static int need_object(struct ctx *c, const json_t *v, const char *path)
{
	return json_is_object(v) ? 0 : fail(c, path, "expected an object, got %s", DESC(v));
}

static int get_uint(struct ctx *c, const json_t *v, const char *path, uint32_t min, uint32_t max, uint32_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return fail(c, path, "expected an integer in [%u, %u], got %s", min, max, DESC(v));
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* A number in [min, max] (min excluded when open). */
static int get_number(struct ctx *c, const json_t *v, const char *path, double min, bool open, double max,
		      const char *unit, double *out)
{
	double d = json_is_number(v) ? json_number_value(v) : NAN;
	if (!isfinite(d) || d < min || (open && d == min) || d > max)
		return fail(c, path, "expected a number of %s in %c%g, %g], got %s", unit, open ? '(' : '[', min, max,
			    DESC(v));
	*out = d;
	return 0;
}

/* A name: 1..MAX_NAME of [A-Za-z0-9._-] (it names directories). */
static int get_name(struct ctx *c, const json_t *v, const char *path, char **out)
{
	const char *s = json_string_value(v);
	if (!s || json_string_length(v) == 0 || json_string_length(v) > MAX_NAME ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != json_string_length(v))
		return fail(c, path, "expected a name of 1 to %d letters, digits, '.', '_' or '-', got %s", MAX_NAME,
			    DESC(v));
	*out = weft_xstrdup(s);
	return 0;
}

static int get_node(struct ctx *c, const json_t *v, const char *path, uint32_t *out)
{
	uint32_t n = c->m->n;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= n)
		return fail(c, path, "expected a node index in [0, %u] (nodes = %u), got %s", n - 1, n, DESC(v));
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* A non-empty list of distinct node indices, as a mask. */
static int get_nodes(struct ctx *c, const json_t *v, const char *path, uint32_t *mask)
{
	char p[WEFT_JSON_PATH_MAX];
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return fail(c, path, "expected a non-empty array of node indices, got %s", DESC(v));
	*mask = 0;
	json_array_foreach(v, i, e) {
		uint32_t node;
		int rc = get_node(c, e, weft_json_path_index(p, path, i), &node);
		if (rc < 0)
			return rc;
		if (*mask & (1u << node))
			return fail(c, p, "node %u is listed twice", node);
		*mask |= 1u << node;
	}
	return 0;
}

/* Every node of an n-node committee. */
static uint32_t all_nodes(uint32_t n)
{
	return n >= 32 ? UINT32_MAX : (1u << n) - 1;
}

/* "0, 2 and 3" */
static const char *node_list(uint32_t mask, char *out, size_t cap)
{
	size_t o = 0;
	int left = __builtin_popcount(mask);
	out[0] = '\0';
	for (uint32_t i = 0; i < CAMPAIGN_MAX_NODES && o < cap; i++)
		if (mask & (1u << i)) {
			left--;
			o += (size_t)snprintf(out + o, cap - o, "%u%s", i, left > 1 ? ", " : left == 1 ? " and " : "");
		}
	return out;
}
#define NODES(mask) node_list((mask), (char[160]){0}, 160)

/* ---- the committee ---- */

static int parse_params(struct ctx *c, json_t *v, const char *path)
{
	static const char *const own[] = {"brb", "mode", "d"};
	char p[WEFT_JSON_PATH_MAX];
	const char *key;
	json_t *val;
	int rc;

	if ((rc = need_object(c, v, path)) < 0)
		return rc;
	json_object_foreach(v, key, val) {
		weft_json_path_key(p, path, key);
		if (key[0] == '\0' || strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
					      strlen(key))
			return fail(c, p, "a genesis parameter's name is letters, digits, '_', '-' or '.'");
		for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			if (strcmp(key, own[i]) == 0)
				return fail(c, p, "is a key of the manifest itself ($.%s)", key);
		if (!json_is_string(val) && !json_is_number(val) && !json_is_boolean(val))
			return fail(c, p, "expected a string, a number or a boolean (a genesis parameter), got %s",
				    DESC(val));
	}
	c->m->params = json_incref(v);
	return 0;
}

static int parse_byzantine(struct ctx *c, const json_t *v, const char *path, const struct weft_proto_ops *ops)
{
	static const char *const keys[] = {"node", "strategy", NULL};
	struct campaign_manifest *m = c->m;
	char p[WEFT_JSON_PATH_MAX], q[WEFT_JSON_PATH_MAX];
	size_t i;
	json_t *e;
	int rc;

	if (!json_is_array(v))
		return fail(c, path, "expected an array of {\"node\": I, \"strategy\": NAME}, got %s", DESC(v));
	json_array_foreach(v, i, e) {
		uint32_t node;
		weft_json_path_index(p, path, i);
		if ((rc = need_object(c, e, p)) < 0 || (rc = check_keys(c, e, p, keys, "a Byzantine node")) < 0)
			return rc;
		const json_t *jn = json_object_get(e, "node"), *js = json_object_get(e, "strategy");
		if (!jn || !js)
			return fail(c, p, "missing required key '%s'", jn ? "strategy" : "node");
		if ((rc = get_node(c, jn, weft_json_path_key(q, p, "node"), &node)) < 0)
			return rc;
		if (m->byzantine & (1u << node))
			return fail(c, q, "node %u is already Byzantine", node);
		weft_json_path_key(q, p, "strategy");
		const char *s = json_string_value(js);
		enum weft_fault word;
		if (!s || (weft_fault_parse(s, strlen(s), WEFT_FAULT_IN_DAEMON, &word, NULL, 0) != 0 &&
			   !weft_proto_strategy_find(ops, s))) {
			char list[256];
			size_t o = 0;
			weft_fault_names(WEFT_FAULT_IN_DAEMON, list, sizeof(list));
			o = strlen(list);
			for (const struct weft_proto_strategy *st = ops->strategies; st && st->name && o < sizeof(list); st++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, ", %s", st->name);
			return fail(c, q, "unknown strategy %s (weftd --byzantine takes one of %s)", DESC(js), list);
		}
		m->byzantine |= 1u << node;
		m->strategy[node] = weft_xstrdup(s);
	}
	return 0;
}

/* ---- the schedule ---- */

/* A step's own keys besides fault, at_s, for_s and id. */
static const char *const *step_keys(enum weft_fault f)
{
	static const char *const nodes[] = {"nodes", NULL};
	static const char *const recover[] = {"nodes", "lose", NULL};
	static const char *const partition[] = {"groups", NULL};
	static const char *const omission[] = {"nodes", "peers", "direction", NULL};
	static const char *const loss[] = {"nodes", "peers", "direction", "probability", NULL};
	static const char *const delay[] = {"nodes", "peers", "delay_ms", "jitter_ms", NULL};
	static const char *const corrupt[] = {"nodes", "probability", NULL};
	static const char *const duplicate[] = {"nodes", "peers", "probability", NULL};
	static const char *const reorder[] = {"nodes", "peers", "probability", "max_ms", NULL};

	switch (f) {
	case WEFT_FAULT_CRASH_RECOVER: return recover;
	case WEFT_FAULT_PARTITION: return partition;
	case WEFT_FAULT_OMISSION: return omission;
	case WEFT_FAULT_LOSS: return loss;
	case WEFT_FAULT_DELAY: return delay;
	case WEFT_FAULT_CORRUPT: return corrupt;
	case WEFT_FAULT_DUPLICATE: return duplicate;
	case WEFT_FAULT_REORDER: return reorder;
	case WEFT_FAULT_CRASH:
	case WEFT_FAULT_PAUSE:
	case WEFT_FAULT_RESTART:
	case WEFT_FAULT_DISCONNECT:
	case WEFT_FAULT_EQUIVOCATE:
	case WEFT_FAULT_TWINS:
	case WEFT_FAULT_ADVERSARY:
	case WEFT_FAULT_CUT:
	case WEFT_FAULT_SKEW: return nodes;
	}
	return nodes;
}

/* Steps that stop or freeze a node's process: nothing else may touch that
 * node meanwhile (its transport rules and its network namespace go with
 * the process, and a frozen node answers no RPC). */
static bool stops_node(enum weft_fault f)
{
	return f == WEFT_FAULT_CRASH || f == WEFT_FAULT_CRASH_RECOVER || f == WEFT_FAULT_PAUSE ||
	       f == WEFT_FAULT_RESTART;
}

bool campaign_talk(const struct campaign_step *s, uint32_t a, uint32_t b)
{
	uint32_t listed = 0, pair = (1u << a) | (1u << b);
	if (a == b)
		return true;
	for (uint32_t g = 0; g < s->ngroups; g++) {
		if ((s->groups[g] & pair) == pair)
			return true;
		listed |= s->groups[g];
	}
	return (listed & pair) == 0;
}

uint32_t campaign_step_nodes(const struct campaign_step *s, uint32_t n)
{
	if (s->fault != WEFT_FAULT_PARTITION)
		return s->nodes;
	uint32_t mask = 0;
	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = 0; b < n; b++)
			if (!campaign_talk(s, a, b))
				mask |= 1u << a;
	return mask;
}

static int parse_groups(struct ctx *c, struct campaign_step *s, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	size_t i;
	json_t *e;
	int rc;

	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > CAMPAIGN_MAX_NODES)
		return fail(c, path, "expected 1 to %d groups (arrays of node indices), got %s", CAMPAIGN_MAX_NODES,
			    DESC(v));
	json_array_foreach(v, i, e) {
		if ((rc = get_nodes(c, e, weft_json_path_index(p, path, i), &s->groups[i])) < 0)
			return rc;
	}
	s->ngroups = (uint32_t)json_array_size(v);
	if (campaign_step_nodes(s, c->m->n) == 0)
		return fail(c, path, "every node can still reach every other: the partition cuts no link");
	return 0;
}

/* The directions as manifests and weft-sim scenarios write them. */
static const char *const dir_names[] = {
	[CAMPAIGN_SEND] = "send", [CAMPAIGN_RECEIVE] = "receive", [CAMPAIGN_BOTH] = "both"};

static int parse_direction(struct ctx *c, struct campaign_step *s, const json_t *v, const char *path)
{
	for (int d = 0; d < 3; d++)
		if (json_is_string(v) && strcmp(json_string_value(v), dir_names[d]) == 0) {
			s->direction = (enum campaign_dir)d;
			return 0;
		}
	return fail(c, path, "expected send, receive or both, got %s", DESC(v));
}

/* The keys of a step that are not its window, by word. */
static int parse_fault_keys(struct ctx *c, struct campaign_step *s, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;

	if (s->fault == WEFT_FAULT_PARTITION) {
		if (!(e = json_object_get(v, "groups")))
			return fail(c, path, "missing required key 'groups' (who can still talk: arrays of node indices)");
		return parse_groups(c, s, e, weft_json_path_key(p, path, "groups"));
	}
	if (!(e = json_object_get(v, "nodes")))
		return fail(c, path, "missing required key 'nodes'");
	if ((rc = get_nodes(c, e, weft_json_path_key(p, path, "nodes"), &s->nodes)) < 0)
		return rc;
	if ((e = json_object_get(v, "peers")) && (rc = get_nodes(c, e, weft_json_path_key(p, path, "peers"),
			&s->peers)) < 0)
		return rc;
	s->direction = CAMPAIGN_BOTH;
	if ((e = json_object_get(v, "direction")) &&
	    (rc = parse_direction(c, s, e, weft_json_path_key(p, path, "direction"))) < 0)
		return rc;
	s->probability = 1;
	if ((e = json_object_get(v, "probability")) &&
	    (rc = get_number(c, e, weft_json_path_key(p, path, "probability"),
			0, true, 1, "probability", &s->probability)) < 0)
		return rc;
	if (s->fault == WEFT_FAULT_LOSS && !e)
		return fail(c, path, "missing required key 'probability' (the chance each message is lost)");
	if ((e = json_object_get(v, "delay_ms")) &&
	    (rc = get_uint(c, e, weft_json_path_key(p, path, "delay_ms"), 1, MAX_MS, &s->delay_ms)) < 0)
		return rc;
	if (s->fault == WEFT_FAULT_DELAY && !e)
		return fail(c, path, "missing required key 'delay_ms' (how late the node's messages arrive)");
	if ((e = json_object_get(v, "jitter_ms")) &&
	    (rc = get_uint(c, e, weft_json_path_key(p, path, "jitter_ms"), 0, MAX_MS, &s->jitter_ms)) < 0)
		return rc;
	if ((e = json_object_get(v, "max_ms")) &&
	    (rc = get_uint(c, e, weft_json_path_key(p, path, "max_ms"), 1, MAX_MS, &s->max_ms)) < 0)
		return rc;
	if (s->fault == WEFT_FAULT_REORDER && !e)
		return fail(c, path, "missing required key 'max_ms' (messages are held a random 0 to max_ms)");
	if ((e = json_object_get(v, "lose"))) {
		const char *l = json_string_value(e);
		if (l && (strcmp(l, "store") == 0 || strcmp(l, "last_step") == 0))
			return fail(c, weft_json_path_key(p, path, "lose"),
				    "'%s' is not runnable on a testnet: a killed container restarts on its store "
				    "(lose none; weft-sim loses stores)",
				    l);
		if (!l || strcmp(l, "none") != 0)
			return fail(c, weft_json_path_key(p, path, "lose"), "expected none, got %s", DESC(e));
	}
	return 0;
}

static int parse_step(struct ctx *c, struct campaign_step *s, const json_t *v, const char *path)
{
	static const char *const heal_keys[] = {"at_s", "heal", NULL};
	struct campaign_manifest *m = c->m;
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;

	s->heals = -1;
	if ((rc = need_object(c, v, path)) < 0)
		return rc;
	const json_t *at = json_object_get(v, "at_s");
	if (!at)
		return fail(c, path, "missing required key 'at_s' (seconds from the start of the load)");
	if ((e = json_object_get(v, "heal"))) {
		s->is_heal = true;
		if ((rc = check_keys(c, v, path, heal_keys, "a heal step")) < 0 ||
		    (rc = get_name(c, e, weft_json_path_key(p, path, "heal"), &s->id)) < 0)
			return rc;
		weft_json_path_key(p, path, "at_s");
		return get_number(c, at, p, 0, false, m->duration_s, "seconds within the run (duration_s)", &s->at_s);
	}
	if (!(e = json_object_get(v, "fault")))
		return fail(c, path, "missing required key 'fault' (or 'heal')");
	weft_json_path_key(p, path, "fault");
	if (!json_is_string(e))
		return fail(c, p, "expected a fault word, got %s", DESC(e));
	char why[256];
	rc = weft_fault_parse(json_string_value(e), json_string_length(e), WEFT_FAULT_IN_DOCKER, &s->fault, why,
			      sizeof(why));
	if (rc != 0) {
		enum weft_fault f;
		bool daemon = weft_fault_parse(json_string_value(e), json_string_length(e), WEFT_FAULT_IN_DAEMON, &f,
					       NULL, 0) == 0;
		return fail(c, p, "%s%s", why, daemon ? " (a Byzantine node's behaviour for the whole run goes in $.byzantine)" : "");
	}
	const char *keys[12] = {"fault", "at_s", "for_s", "id"};
	size_t k = 4;
	for (const char *const *x = step_keys(s->fault); *x; x++)
		keys[k++] = *x;
	keys[k] = NULL;
	char what[64];
	snprintf(what, sizeof(what), "a %s step", weft_fault_name(s->fault));
	if (s->fault == WEFT_FAULT_CRASH && json_object_get(v, "for_s"))
		return fail(c, weft_json_path_key(p, path, "for_s"),
				"a crash never ends (kill, i.e. crash_recover, restarts the node)");
	if ((rc = check_keys(c, v, path, keys, what)) < 0)
		return rc;
	if ((rc = get_number(c, at, weft_json_path_key(p, path, "at_s"), 0, false, m->duration_s,
			     "seconds within the run (duration_s)", &s->at_s)) < 0)
		return rc;
	if (s->at_s >= m->duration_s)
		return fail(c, p, "starts at %g s, when the run (duration_s = %g) is over", s->at_s, m->duration_s);
	if ((e = json_object_get(v, "for_s"))) {
		if ((rc = get_number(c, e, weft_json_path_key(p, path, "for_s"),
				0, true, MAX_DURATION_S, "seconds", &s->for_s)) < 0)
			return rc;
		if (s->at_s + s->for_s > m->duration_s)
			return fail(c, p, "the step ends at %g s, after the run (duration_s = %g)", s->at_s + s->for_s,
				    m->duration_s);
		s->end_s = s->at_s + s->for_s;
	}
	if ((e = json_object_get(v, "id")) && (rc = get_name(c, e, weft_json_path_key(p, path, "id"), &s->id)) < 0)
		return rc;
	if (s->fault == WEFT_FAULT_CRASH) {
		if (s->id)
			return fail(c, weft_json_path_key(p, path, "id"), "a crash never ends: nothing can heal it");
		s->end_s = INFINITY;
	}
	return parse_fault_keys(c, s, v, path);
}

/* Heal steps against the steps they end, every step's end, ids. */
static int resolve_heals(struct ctx *c)
{
	struct campaign_manifest *m = c->m;
	char p[WEFT_JSON_PATH_MAX], q[WEFT_JSON_PATH_MAX];

	for (size_t i = 0; i < m->nsteps; i++) {
		struct campaign_step *s = &m->steps[i];
		weft_json_path_index(p, "$.schedule", i);
		for (size_t j = 0; j < i && s->id && !s->is_heal; j++)
			if (!m->steps[j].is_heal && m->steps[j].id && strcmp(m->steps[j].id, s->id) == 0)
				return fail(c, weft_json_path_key(q, p, "id"), "'%s' names $.schedule[%zu] already", s->id, j);
	}
	for (size_t i = 0; i < m->nsteps; i++) {
		struct campaign_step *h = &m->steps[i];
		if (!h->is_heal)
			continue;
		weft_json_path_index(p, "$.schedule", i);
		weft_json_path_key(q, p, "heal");
		for (size_t j = 0; j < m->nsteps; j++)
			if (!m->steps[j].is_heal && m->steps[j].id && strcmp(m->steps[j].id, h->id) == 0)
				h->heals = (int)j;
		if (h->heals < 0)
			return fail(c, q, "'%s' names no step (a heal of something never started)", h->id);
		struct campaign_step *s = &m->steps[h->heals];
		if (s->for_s > 0)
			return fail(c, q, "$.schedule[%d] ('%s') already ends after its for_s", h->heals, h->id);
		if (s->end_s > 0)
			return fail(c, q, "'%s' is healed twice", h->id);
		if (h->at_s <= s->at_s)
			return fail(c, weft_json_path_key(q, p, "at_s"), "heals '%s' at %g s, before it starts (%g s)", h->id, h->at_s,
				    s->at_s);
		s->end_s = h->at_s;
	}
	for (size_t i = 0; i < m->nsteps; i++)
		if (!m->steps[i].is_heal && m->steps[i].end_s == 0)
			return fail(c, weft_json_path_index(p, "$.schedule", i),
				    "missing required key 'for_s' (how long the fault lasts), or an 'id' that a heal step "
				    "names");
	return 0;
}

/* One perturbation per node at a time while a step stops or freezes it,
 * and never the same fault twice on one node at once. */
static int check_overlaps(struct ctx *c)
{
	struct campaign_manifest *m = c->m;
	char p[WEFT_JSON_PATH_MAX];

	for (size_t j = 0; j < m->nsteps; j++) {
		const struct campaign_step *b = &m->steps[j];
		for (size_t i = 0; i < j && !b->is_heal; i++) {
			const struct campaign_step *a = &m->steps[i];
			if (a->is_heal || !(a->at_s < b->end_s && b->at_s < a->end_s))
				continue;
			uint32_t both = campaign_step_nodes(a, m->n) & campaign_step_nodes(b, m->n);
			if (both && (stops_node(a->fault) || stops_node(b->fault) || a->fault == b->fault))
				return fail(c, weft_json_path_index(p, "$.schedule", j),
					    "overlaps $.schedule[%zu] (%s from %g s to %g s) on node %s: a node takes one "
					    "perturbation at a time while one of them stops or freezes it, and never the "
					    "same fault twice",
					    i, weft_fault_name(a->fault), a->at_s, a->end_s, NODES(both));
		}
	}
	return 0;
}

uint32_t campaign_faulty(const struct campaign_manifest *m)
{
	uint32_t mask = m->byzantine;
	for (size_t i = 0; i < m->nsteps; i++)
		if (!m->steps[i].is_heal && m->steps[i].fault == WEFT_FAULT_CRASH)
			mask |= m->steps[i].nodes;
	return mask;
}

static int parse_load(struct ctx *c, const json_t *v, const char *path)
{
	static const char *const keys[] = {"rate", "from", "size", NULL};
	struct campaign_manifest *m = c->m;
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;

	if ((rc = need_object(c, v, path)) < 0 || (rc = check_keys(c, v, path, keys, "the load")) < 0)
		return rc;
	if ((e = json_object_get(v, "rate")) &&
	    (rc = get_number(c, e, weft_json_path_key(p, path, "rate"),
			0, true, MAX_RATE, "transactions per second", &m->rate)) < 0)
		return rc;
	if ((e = json_object_get(v, "size")) && (rc = get_uint(c, e, weft_json_path_key(p, path, "size"),
			32, 65536, &m->tx_size)) < 0)
		return rc;
	if ((e = json_object_get(v, "from"))) {
		if ((rc = get_nodes(c, e, weft_json_path_key(p, path, "from"), &m->load_from)) < 0)
			return rc;
		if (m->load_from & m->byzantine)
			return fail(c, p, "node %s is Byzantine: what it acknowledges promises nothing",
				    NODES(m->load_from & m->byzantine));
	}
	return 0;
}

static int parse_root(struct ctx *c, json_t *v)
{
	static const char *const keys[] = {"name", "nodes", "protocol", "brb", "mode", "d", "params", "byzantine",
					   "load", "duration_s", "schedule", "bounds", NULL};
	static const char *const bounds_keys[] = {"recover_s", NULL};
	struct campaign_manifest *m = c->m;
	const struct weft_proto_ops *ops;
	char p[WEFT_JSON_PATH_MAX];
	json_t *e;
	int rc;

	if ((rc = need_object(c, v, "$")) < 0 || (rc = check_keys(c, v, "$", keys, "a campaign")) < 0)
		return rc;
	if ((e = json_object_get(v, "name")) && (rc = get_name(c, e, "$.name", &m->name)) < 0)
		return rc;
	if (!(e = json_object_get(v, "nodes")))
		return fail(c, "$", "missing required key 'nodes'");
	if ((rc = get_uint(c, e, "$.nodes", CAMPAIGN_MIN_NODES, CAMPAIGN_MAX_NODES, &m->n)) < 0)
		return rc;
	m->f = (m->n - 1) / 3;
	e = json_object_get(v, "protocol");
	m->protocol = weft_xstrdup(e && json_is_string(e) ? json_string_value(e) : "dag");
	ops = weft_proto_find(m->protocol);
	if ((e && !json_is_string(e)) || !ops || ops != weft_proto_find("dag"))
		return fail(c, "$.protocol", "expected \"dag\" (a campaign loads and judges the DAG ledger: tx.submit, "
					     "dag.info), got %s",
			    DESC(e));
	if ((e = json_object_get(v, "brb"))) {
		const struct weft_proto_ops *b = json_is_string(e) ? weft_proto_find(json_string_value(e)) : NULL;
		if (!b || !weft_brb_family(b))
			return fail(c, "$.brb", "expected a BRB the DAG can host (echo, bracha, coded, amortized), got %s",
				    DESC(e));
		m->brb = weft_xstrdup(json_string_value(e));
	}
	if ((e = json_object_get(v, "mode"))) {
		const char *s = json_string_value(e);
		if (!s || (strcmp(s, "sparse") != 0 && strcmp(s, "dense") != 0))
			return fail(c, "$.mode", "expected sparse or dense, got %s", DESC(e));
		m->mode = weft_xstrdup(s);
	}
	if ((e = json_object_get(v, "d")) && (rc = get_uint(c, e, "$.d", 1, 1024, &m->d)) < 0)
		return rc;
	if ((e = json_object_get(v, "params")) && (rc = parse_params(c, e, "$.params")) < 0)
		return rc;
	if ((e = json_object_get(v, "byzantine")) && (rc = parse_byzantine(c, e, "$.byzantine", ops)) < 0)
		return rc;
	if (!(e = json_object_get(v, "duration_s")))
		return fail(c, "$", "missing required key 'duration_s' (how long the load runs)");
	if ((rc = get_number(c, e, "$.duration_s", 0, true, MAX_DURATION_S, "seconds", &m->duration_s)) < 0)
		return rc;
	m->rate = 20;
	m->tx_size = 64;
	if ((e = json_object_get(v, "load")) && (rc = parse_load(c, e, "$.load")) < 0)
		return rc;
	m->recover_s = 30;
	if ((e = json_object_get(v, "bounds"))) {
		const json_t *r;
		if ((rc = need_object(c, e, "$.bounds")) < 0 ||
		    (rc = check_keys(c, e, "$.bounds", bounds_keys, "the bounds")) < 0)
			return rc;
		if ((r = json_object_get(e, "recover_s")) &&
		    (rc = get_number(c, r, "$.bounds.recover_s", 0, true, 3600, "seconds", &m->recover_s)) < 0)
			return rc;
	}
	if ((e = json_object_get(v, "schedule"))) {
		if (!json_is_array(e))
			return fail(c, "$.schedule", "expected an array of steps, got %s", DESC(e));
		m->nsteps = json_array_size(e);
		m->steps = weft_xcalloc(m->nsteps ? m->nsteps : 1, sizeof(*m->steps));
		for (size_t i = 0; i < m->nsteps; i++)
			if ((rc = parse_step(c, &m->steps[i], json_array_get(e, i), weft_json_path_index(p, "$.schedule", i))) < 0)
				return rc;
		if ((rc = resolve_heals(c)) < 0 || (rc = check_overlaps(c)) < 0)
			return rc;
	}
	uint32_t faulty = campaign_faulty(m);
	if ((uint32_t)__builtin_popcount(faulty) > m->f)
		return fail(c, m->byzantine ? "$.byzantine" : "$.schedule",
			    "%d nodes are faulty for good (%s: Byzantine or crashed) but %u nodes tolerate f = %u",
			    __builtin_popcount(faulty), NODES(faulty), m->n, m->f);
	if (!m->load_from)
		m->load_from = all_nodes(m->n) & ~faulty;
	return 0;
}

int campaign_manifest_parse(struct campaign_manifest *m, json_t *doc, const char *src, char *err, size_t errlen)
{
	struct ctx c = {.src = src, .err = err, .errlen = errlen, .m = m};

	memset(m, 0, sizeof(*m));
	int rc = parse_root(&c, doc);
	if (rc < 0) {
		campaign_manifest_free(m);
		return rc;
	}
	if (!m->name)
		m->name = weft_xstrdup("campaign");
	m->doc = json_incref(doc);
	return 0;
}

int campaign_manifest_load(struct campaign_manifest *m, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);

	memset(m, 0, sizeof(*m));
	if (!doc) {
		snprintf(err, errlen, "%s: line %d, column %d: %s", path, je.line, je.column, je.text);
		return WEFT_EINVAL;
	}
	int rc = campaign_manifest_parse(m, doc, path, err, errlen);
	if (rc == 0 && !json_object_get(doc, "name")) {
		/* The file's base name without .json, when it makes a name. */
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		size_t len = strcspn(base, ".");
		if (len > 0 && len <= MAX_NAME &&
		    strspn(base, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") >= len) {
			free(m->name);
			m->name = weft_xstrdup(base);
			m->name[len] = '\0';
		}
	}
	json_decref(doc);
	return rc;
}

void campaign_manifest_free(struct campaign_manifest *m)
{
	if (!m)
		return;
	free(m->name);
	free(m->protocol);
	free(m->brb);
	free(m->mode);
	json_decref(m->params);
	for (uint32_t i = 0; i < CAMPAIGN_MAX_NODES; i++)
		free(m->strategy[i]);
	for (size_t i = 0; i < m->nsteps && m->steps; i++)
		free(m->steps[i].id);
	free(m->steps);
	json_decref(m->doc);
	memset(m, 0, sizeof(*m));
}

char *campaign_fault_words(const struct campaign_manifest *m)
{
	char buf[256];
	size_t o = 0;
	bool seen[WEFT_FAULT_COUNT] = {false};

	buf[0] = '\0';
	for (size_t i = 0; i < m->nsteps && o < sizeof(buf); i++) {
		const struct campaign_step *s = &m->steps[i];
		if (s->is_heal || seen[s->fault])
			continue;
		seen[s->fault] = true;
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", o ? ", " : "", weft_fault_name(s->fault));
	}
	for (uint32_t i = 0; i < m->n && o < sizeof(buf); i++)
		if (m->byzantine & (1u << i))
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%sbyzantine %s", o ? ", " : "", m->strategy[i]);
	return weft_xstrdup(o ? buf : "none");
}

/* ---- the weft-sim equivalent ---- */

static json_t *mask_array(uint32_t mask)
{
	json_t *a = json_array();
	for (uint32_t i = 0; i < CAMPAIGN_MAX_NODES; i++)
		if (mask & (1u << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

static void note(char **notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(char **notes, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	size_t have = *notes ? strlen(*notes) : 0;
	if (*notes && strstr(*notes, line))
		return;
	*notes = weft_xrealloc(*notes, have + strlen(line) + 3, 1);
	sprintf(*notes + have, "%s%s", have ? "; " : "", line);
}

/* The window keys of a scenario fault from step s. */
static json_t *sim_fault(const char *kind, const struct campaign_step *s)
{
	json_t *f = json_pack("{s:s}", "kind", kind);
	json_object_set_new(f, "at_ms", json_real(s->at_s * 1000));
	if (isfinite(s->end_s))
		json_object_set_new(f, "for_ms", json_real((s->end_s - s->at_s) * 1000));
	return f;
}

/* A step as scenario faults (appended to faults) or network settings. */
static void sim_step(const struct campaign_manifest *m, const struct campaign_step *s, json_t *faults, json_t *net,
		     char **notes)
{
	json_t *f = NULL;
	switch (s->fault) {
	case WEFT_FAULT_CRASH:
	case WEFT_FAULT_CRASH_RECOVER:
		f = sim_fault(weft_fault_name(s->fault), s);
		break;
	case WEFT_FAULT_RESTART:
		f = sim_fault("crash_recover", s);
		note(notes, "restart (a clean stop) ran as crash_recover");
		break;
	case WEFT_FAULT_PAUSE:
	case WEFT_FAULT_DISCONNECT:
		for (uint32_t i = 0; i < m->n; i++)
			if (s->nodes & (1u << i)) {
				f = sim_fault("partition", s);
				json_object_set_new(f, "groups", json_pack("[o]", mask_array(1u << i)));
				json_array_append_new(faults, f);
			}
		note(notes, "%s ran as a partition of the node from all others", weft_fault_name(s->fault));
		return;
	case WEFT_FAULT_PARTITION: {
		bool disjoint = true;
		for (uint32_t g = 0; g < s->ngroups; g++)
			for (uint32_t h = 0; h < g; h++)
				disjoint = disjoint && !(s->groups[g] & s->groups[h]);
		if (disjoint) {
			f = sim_fault("partition", s);
			json_t *groups = json_array();
			for (uint32_t g = 0; g < s->ngroups; g++)
				json_array_append_new(groups, mask_array(s->groups[g]));
			json_object_set_new(f, "groups", groups);
			json_array_append_new(faults, f);
			return;
		}
		/* Overlapping groups: each node's cut links, as one-way cuts. */
		for (uint32_t a = 0; a < m->n; a++) {
			uint32_t to = 0;
			for (uint32_t b = 0; b < m->n; b++)
				if (!campaign_talk(s, a, b))
					to |= 1u << b;
			if (!to)
				continue;
			f = sim_fault("cut", s);
			json_object_set_new(f, "from", mask_array(1u << a));
			json_object_set_new(f, "to", mask_array(to));
			json_array_append_new(faults, f);
		}
		return;
	}
	case WEFT_FAULT_OMISSION:
	case WEFT_FAULT_LOSS:
		f = sim_fault(weft_fault_name(s->fault), s);
		json_object_set_new(f, "direction", json_string(dir_names[s->direction]));
		if (s->fault == WEFT_FAULT_LOSS)
			json_object_set_new(f, "probability", json_real(s->probability));
		break;
	case WEFT_FAULT_DELAY:
		f = sim_fault("delay", s);
		json_object_set_new(f, "ms", json_integer(s->delay_ms));
		json_object_set_new(f, "jitter_ms", json_integer(s->jitter_ms));
		break;
	case WEFT_FAULT_CORRUPT:
		f = sim_fault("corrupt", s);
		json_object_set_new(f, "probability", json_real(s->probability));
		break;
	case WEFT_FAULT_DUPLICATE:
		json_object_set_new(net, "duplicate", json_real(s->probability));
		note(notes, "duplicate is a network setting of weft-sim: every link, the whole run");
		return;
	case WEFT_FAULT_REORDER:
		json_object_set_new(net, "reorder", json_pack("{s:f,s:I}", "probability", s->probability, "max_ms",
							      (json_int_t)s->max_ms));
		note(notes, "reorder is a network setting of weft-sim: every link, the whole run");
		return;
	case WEFT_FAULT_EQUIVOCATE:
	case WEFT_FAULT_TWINS:
	case WEFT_FAULT_ADVERSARY:
	case WEFT_FAULT_CUT:
	case WEFT_FAULT_SKEW: return; /* never in a schedule */
	}
	json_object_set_new(f, "nodes", mask_array(s->nodes));
	if (s->peers && s->fault != WEFT_FAULT_CORRUPT)
		json_object_set_new(f, "peers", mask_array(s->peers));
	json_array_append_new(faults, f);
}

json_t *campaign_sim_scenario(const struct campaign_manifest *m, char **notes)
{
	json_t *params = m->params ? json_deep_copy(m->params) : json_object();
	json_t *faults = json_array(), *net = json_object();
	char name[MAX_NAME + 8];

	*notes = NULL;
	if (m->brb)
		json_object_set_new(params, "brb", json_string(m->brb));
	if (m->mode)
		json_object_set_new(params, "mode", json_string(m->mode));
	if (m->d)
		json_object_set_new(params, "d", json_integer(m->d));
	for (uint32_t i = 0; i < m->n; i++) {
		if (!(m->byzantine & (1u << i)))
			continue;
		enum weft_fault w;
		const char *s = m->strategy[i];
		json_t *f;
		if (weft_fault_parse(s, strlen(s), WEFT_FAULT_IN_DAEMON, &w, NULL, 0) == 0) {
			f = json_pack("{s:s,s:[i]}", "kind", weft_fault_name(w), "nodes", (int)i);
			if (w == WEFT_FAULT_EQUIVOCATE) /* weftd's audience: the upper half of its peers */
				json_object_set_new(f, "audience", mask_array(all_nodes(m->n) & ~all_nodes(m->n / 2) & ~(1u << i)));
		} else {
			f = json_pack("{s:s,s:[i],s:s}", "kind", "adversary", "nodes", (int)i, "strategy", s);
		}
		json_array_append_new(faults, f);
	}
	for (size_t k = 0; k < m->nsteps; k++)
		if (!m->steps[k].is_heal)
			sim_step(m, &m->steps[k], faults, net, notes);
	bool ends = false;
	for (size_t k = 0; k < m->nsteps; k++)
		ends = ends || (!m->steps[k].is_heal && isfinite(m->steps[k].end_s));

	uint32_t from = (uint32_t)__builtin_popcount(m->load_from);
	double every_ms = 1000.0 * from / m->rate;
	json_int_t count = (json_int_t)(m->duration_s * 1000.0 / every_ms);
	snprintf(name, sizeof(name), "%s-sim", m->name);
	json_t *sc = json_pack("{s:s,s:i,s:s,s:o,s:o,s:o,s:[{s:o,s:f,s:I,s:i}],s:f,s:[i],s:s,s:s}", "name", name, "n",
			       (int)m->n, "protocol", m->protocol, "params", params, "network", net, "faults", faults,
			       "workload", "nodes", mask_array(m->load_from), "every_ms", every_ms, "count",
			       count > 0 ? count : 1, "size", (int)m->tx_size, "duration_ms",
			       (m->duration_s + m->recover_s) * 1000.0, "seeds", 1, "kv", "memory", "signatures", "fast");
	json_t *checkers = json_pack("[s,s,s]", "prefix", "no_duplicates", "state_hash");
	if (ends) {
		json_array_append_new(checkers, json_string("catch_up"));
		json_object_set_new(sc, "bounds", json_pack("{s:f}", "catch_up_ms", m->recover_s * 1000.0));
	}
	json_object_set_new(sc, "checkers", checkers);
	return sc;
}
