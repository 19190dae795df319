/* scenario.c - weft-sim's scenario files: parses the JSON description of a
 * simulation (committee size, protocol and its parameters, network model,
 * faults, workload, duration, seeds, checkers) into struct sim_scenario
 * (sim.h).  docs/sim-scenario.md documents the format for users.
 *
 * A scenario file is untrusted input.  Every value is checked for type and
 * range, node indices against n, times converted from milliseconds (JSON
 * numbers, fractions allowed) to microseconds; unknown keys are errors
 * everywhere, so a typo never silently turns into a default.  Each error
 * names the file, the JSON path and what was expected:
 *
 *   s.json: $.faults[2].kind: unknown fault 'crsh' (expected one of ...)
 *
 * Nothing is allocated from a count the input declares beyond the elements
 * jansson has already parsed.  Both entry points overwrite *sc without
 * freeing what it held; on any error the partly built scenario is freed and
 * *sc left zeroed, so the caller owns a scenario (and must
 * sim_scenario_free it) only after a 0 return. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "weft/err.h"
#include "weft/faults.h"
#include "weft/json.h"
#include "weft/mp.h"
#include "weft/util.h"

#include "sim.h"

#define MAX_MS 1e12                 /* any time: at most ~31.7 years */
#define MAX_MBPS 1e9                /* bandwidth: at most 1 Pbit/s */
#define MAX_SEEDS 1000000
#define MAX_SIZE (64u << 20)        /* workload payload bytes */
#define MAX_NAME 128                /* scenario and protocol names */
#define MAX_STRATEGY 128
#define MAX_TRIGGER 128             /* a trigger's texts (log lines are cut at 511 bytes) */
#define MIN_RATE 0.001              /* skew: clock rates */
#define MAX_RATE 1000.0
#define NOTE 64                     /* room for a described value */

/* Parse state: where messages go and what they are prefixed with. */
struct ctx {
	const char *src;  /* file name (or caller's name) for messages */
	char *err;
	size_t errlen;
	uint32_t n;       /* committee size, once known */
};

/* The len bytes at s as a string; the caller frees it (aborts on OOM). */
static char *xstrndup(const char *s, size_t len)
{
	char *p = weft_xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* ---- messages ---- */

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

/* 'text' for a message: at most 40 bytes (cut at a UTF-8 character
 * boundary, then "..."), control characters shown as '?'.  out holds NOTE. */
static const char *quote(const char *s, size_t len, char *out)
{
	size_t cut = len, o = 0;

	if (len > 40) {
		cut = 40;
		while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
			cut--;
	}
	out[o++] = '\'';
	for (size_t i = 0; i < cut; i++) {
		unsigned char ch = (unsigned char)s[i];
		out[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	if (cut < len) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '\'';
	out[o] = '\0';
	return out;
}

/* A JSON value as a message shows it: "-3", "0.5", "'text'", "an array". */
static const char *describe(const json_t *v, char *out)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return quote(json_string_value(v), json_string_length(v), out);
	case JSON_INTEGER:
		snprintf(out, NOTE, "%lld", (long long)json_integer_value(v));
		return out;
	case JSON_REAL: {
		/* The shortest form that reads back as the same double; a
		 * real that looks integral keeps a ".0" so "got 4.0" explains
		 * "expected an integer". */
		double d = json_real_value(v);
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(out, NOTE, "%.*g", prec, d);
			if (strtod(out, NULL) == d)
				break;
		}
		if (!strpbrk(out, ".eEn"))
			strcat(out, ".0");
		return out;
	}
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_NULL:
		return "null";
	}
	return "an unknown value";
}

/* Describes v into a buffer that lives until the end of the enclosing block. */
#define DESC(v) describe((v), (char[NOTE]){0})

/* "a, b, c" into out (len bytes). */
static const char *join(const char *const *names, size_t count, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < count && o < len; i++) {
		int k = snprintf(out + o, len - o, "%s%s", i ? ", " : "", names[i]);
		if (k < 0)
			break;
		o += (size_t)k;
	}
	return out;
}

static size_t count_names(const char *const *names)
{
	size_t k = 0;
	while (names[k])
		k++;
	return k;
}

/* ---- paths ---- */

/* ---- typed getters: each checks v and reports at path ---- */

static int need_object(struct ctx *c, const json_t *v, const char *path)
{
	if (!json_is_object(v))
		return fail(c, path, "expected an object, got %s", DESC(v));
	return 0;
}

/* Every key of obj must be in keys (NULL-terminated); what says, when not
 * NULL, whose keys these are ("a crash fault"). */
static int check_keys(struct ctx *c, const json_t *obj, const char *path, const char *const *keys,
		      const char *what)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)obj, key, val) {
		bool known = false;
		for (size_t i = 0; keys[i]; i++)
			if (strcmp(key, keys[i]) == 0)
				known = true;
		if (!known) {
			char list[512];
			join(keys, count_names(keys), list, sizeof(list));
			return fail(c, path, "unknown key %s%s%s (expected one of %s)",
				    quote(key, strlen(key), (char[NOTE]){0}), what ? " for " : "", what ? what : "",
				    list);
		}
	}
	return 0;
}

/* check_keys for an object whose keys come in two groups: keys, and also
 * (those of the channel workload), named apart in the message:
 * "(expected one of a, b); with a channel workload also c". */
static int check_keys_also(struct ctx *c, const json_t *obj, const char *path, const char *const *keys,
			   const char *const *also, const char *also_what)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)obj, key, val) {
		bool known = false;
		for (size_t i = 0; keys[i]; i++)
			known |= strcmp(key, keys[i]) == 0;
		for (size_t i = 0; also[i]; i++)
			known |= strcmp(key, also[i]) == 0;
		if (!known) {
			char list[512], more[256];
			join(keys, count_names(keys), list, sizeof(list));
			join(also, count_names(also), more, sizeof(more));
			return fail(c, path, "unknown key %s (expected one of %s); %s %s",
				    quote(key, strlen(key), (char[NOTE]){0}), list, also_what, more);
		}
	}
	return 0;
}

static int missing(struct ctx *c, const char *path, const char *key, const char *why)
{
	return fail(c, path, "missing required key '%s'%s", key, why ? why : "");
}

static int get_uint(struct ctx *c, const json_t *v, const char *path, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!json_is_integer(v)) {
		if (max == UINT64_MAX && min == 0)
			return fail(c, path, "expected a non-negative integer, got %s", DESC(v));
		if (max == UINT64_MAX)
			return fail(c, path, "expected an integer >= %llu, got %s", (unsigned long long)min,
				    DESC(v));
		return fail(c, path, "expected an integer in [%llu, %llu], got %s", (unsigned long long)min,
			    (unsigned long long)max, DESC(v));
	}
	json_int_t i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min) {
		if (min == 0)
			return fail(c, path, "expected a non-negative integer, got %lld", (long long)i);
		return fail(c, path, "expected an integer >= %llu, got %lld", (unsigned long long)min,
			    (long long)i);
	}
	if ((uint64_t)i > max)
		return fail(c, path, "expected an integer <= %llu, got %lld", (unsigned long long)max, (long long)i);
	*out = (uint64_t)i;
	return 0;
}

static int get_u32(struct ctx *c, const json_t *v, const char *path, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t u;
	int rc = get_uint(c, v, path, min, max, &u);
	if (rc == 0)
		*out = (uint32_t)u;
	return rc;
}

/* A finite number in [0, max]; integers and reals alike. */
static int get_number(struct ctx *c, const json_t *v, const char *path, double max, const char *unit, double *out)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
		return fail(c, path, "expected a non-negative number%s, got %s", unit, DESC(v));
	double d = json_number_value(v);
	if (d > max)
		return fail(c, path, "expected a number <= %g%s, got %s", max, unit, DESC(v));
	*out = d;
	return 0;
}

/* Milliseconds (fractions allowed) to microseconds, rounded to nearest. */
static int get_ms(struct ctx *c, const json_t *v, const char *path, uint64_t *us)
{
	double d;
	int rc = get_number(c, v, path, MAX_MS, "", &d);
	if (rc == 0)
		*us = (uint64_t)llround(d * 1000.0);
	return rc;
}

/* A time that must be positive once in microseconds. */
static int get_ms_positive(struct ctx *c, const json_t *v, const char *path, uint64_t *us)
{
	int rc = get_ms(c, v, path, us);
	if (rc == 0 && *us == 0)
		return fail(c, path, "expected a number of milliseconds > 0 (at least 0.001), got %s", DESC(v));
	return rc;
}

static int get_prob(struct ctx *c, const json_t *v, const char *path, double *p)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
	    json_number_value(v) > 1)
		return fail(c, path, "expected a probability in [0, 1], got %s", DESC(v));
	*p = json_number_value(v);
	return 0;
}

static int get_bool(struct ctx *c, const json_t *v, const char *path, bool *out)
{
	if (!json_is_boolean(v))
		return fail(c, path, "expected true or false, got %s", DESC(v));
	*out = json_is_true(v);
	return 0;
}

/* A string of 1..max bytes without control characters (NUL included);
 * a name (slash_ok false) has no '/' either, since names end up in output
 * file names.  *out is a new string. */
static int get_string(struct ctx *c, const json_t *v, const char *path, size_t max, bool slash_ok, char **out)
{
	if (!json_is_string(v))
		return fail(c, path, "expected a string, got %s", DESC(v));
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	if (len == 0 || len > max)
		return fail(c, path, "expected a string of 1 to %zu bytes, got %zu bytes", max, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f || (ch == '/' && !slash_ok))
			return fail(c, path, "expected a %s, got %s",
				    slash_ok ? "string without control characters" : "name without '/' or control characters",
				    DESC(v));
	}
	*out = xstrndup(s, len);
	return 0;
}

static int get_name(struct ctx *c, const json_t *v, const char *path, size_t max, char **out)
{
	return get_string(c, v, path, max, false, out);
}

/* One of names[0..count) by index. */
static int get_enum(struct ctx *c, const json_t *v, const char *path, const char *what, const char *const *names,
		    size_t count, unsigned int *out)
{
	char list[256];

	join(names, count, list, sizeof(list));
	if (!json_is_string(v))
		return fail(c, path, "expected a %s name (one of %s), got %s", what, list, DESC(v));
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	for (size_t i = 0; i < count; i++) {
		if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0) {
			*out = (unsigned int)i;
			return 0;
		}
	}
	return fail(c, path, "unknown %s %s (expected one of %s)", what, DESC(v), list);
}

/* One node index < n. */
static int get_node(struct ctx *c, const json_t *v, const char *path, uint32_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= (json_int_t)c->n)
		return fail(c, path, "expected a node index in [0, %u] (n = %u), got %s", c->n - 1, c->n, DESC(v));
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* A list of distinct node indices < n.  "all" is accepted when all_ok.
 * Empty lists only when empty_ok.  On success *out is a new array (NULL
 * when empty) of *len entries; on error nothing is kept.  seen, when not
 * NULL, holds n flags shared across lists (partition groups): a node seen
 * before is an error, and the nodes of this list are added. */
static int get_nodes(struct ctx *c, const json_t *v, const char *path, bool empty_ok, bool all_ok, bool *seen,
		     uint32_t **out, uint32_t *len)
{
	*out = NULL;
	*len = 0;
	if (all_ok && json_is_string(v) && strcmp(json_string_value(v), "all") == 0) {
		uint32_t *list = weft_xmalloc((size_t)c->n * sizeof(*list));
		for (uint32_t i = 0; i < c->n; i++)
			list[i] = i;
		*out = list;
		*len = c->n;
		return 0;
	}
	if (!json_is_array(v) || (!empty_ok && json_array_size(v) == 0))
		return fail(c, path, "expected %sarray of node indices%s, got %s%s", empty_ok ? "an " : "a non-empty ",
			    all_ok ? " or \"all\"" : "", json_is_array(v) ? "an empty " : "",
			    json_is_array(v) ? "array" : DESC(v));
	size_t count = json_array_size(v);
	if (count > c->n)
		/* More entries than nodes: some index repeats or is out of
		 * range; find which, below, without a huge allocation. */
		count = (size_t)c->n + 1;
	bool *mine = weft_xcalloc(c->n, sizeof(*mine));
	uint32_t *list = weft_xmalloc(count * sizeof(*list));
	int rc = 0;
	for (size_t i = 0; i < count; i++) {
		char p[WEFT_JSON_PATH_MAX];
		uint32_t node;
		if ((rc = get_node(c, json_array_get(v, i), weft_json_path_index(p, path, i), &node)) < 0)
			break;
		if (mine[node]) {
			rc = fail(c, weft_json_path_index(p, path, i), "node %u is listed twice", node);
			break;
		}
		if (seen && seen[node]) {
			rc = fail(c, weft_json_path_index(p, path, i), "node %u is already in another group", node);
			break;
		}
		mine[node] = true;
		list[i] = node;
	}
	if (rc == 0 && seen)
		for (uint32_t i = 0; i < c->n; i++)
			seen[i] = seen[i] || mine[i];
	free(mine);
	if (rc < 0 || count == 0) {
		free(list);
		return rc;
	}
	*out = list;
	*len = (uint32_t)count;
	return 0;
}

/* An optional JSON object converted to a msgpack map. */
static int get_params(struct ctx *c, const json_t *v, const char *path, uint8_t **out, size_t *len)
{
	struct weft_mpw w;
	int rc = need_object(c, v, path);
	if (rc < 0)
		return rc;
	weft_mpw_init(&w);
	rc = weft_json_to_mp(&w, v, 0);
	if (rc < 0) {
		weft_mpw_free(&w);
		return fail(c, path, "cannot be converted to msgpack: nested deeper than %d containers, or too large",
			    WEFT_MP_MAX_DEPTH);
	}
	*out = weft_mpw_steal(&w, len);
	return 0;
}

/* ---- names ---- */

static const char *const root_keys[] = {
	"name",     "n",           "f",     "protocol", "params",           "network", "faults",
	"workload", "duration_ms", "seeds", "checkers", "expect_violation", "kv",      "signatures",
	"bounds",   "store",       "channel", NULL,
};

static const char *const latency_names[] = {
	[SIM_LAT_CONSTANT] = "constant", [SIM_LAT_UNIFORM] = "uniform", [SIM_LAT_NORMAL] = "normal"};

/* The simulator's fault kinds in the shared vocabulary (weft/faults.h). */
static const struct {
	enum weft_fault word;
	enum sim_fault_kind kind;
} fault_kinds[] = {
	{WEFT_FAULT_CRASH, SIM_FAULT_CRASH},
	{WEFT_FAULT_CRASH_RECOVER, SIM_FAULT_CRASH_RECOVER},
	{WEFT_FAULT_OMISSION, SIM_FAULT_OMISSION},
	{WEFT_FAULT_DELAY, SIM_FAULT_DELAY},
	{WEFT_FAULT_PARTITION, SIM_FAULT_PARTITION},
	{WEFT_FAULT_CORRUPT, SIM_FAULT_CORRUPT},
	{WEFT_FAULT_EQUIVOCATE, SIM_FAULT_EQUIVOCATE},
	{WEFT_FAULT_TWINS, SIM_FAULT_TWINS},
	{WEFT_FAULT_ADVERSARY, SIM_FAULT_ADVERSARY},
	{WEFT_FAULT_LOSS, SIM_FAULT_LOSS},
	{WEFT_FAULT_CUT, SIM_FAULT_CUT},
	{WEFT_FAULT_SKEW, SIM_FAULT_SKEW},
};

/* In bit order: checker_names[k] is bit 1 << k. */
static const char *const checker_names[] = {
	"validity", "agreement", "integrity", "totality", "prefix", "no_duplicates", "inclusion",
	"inclusion_fraction", "catch_up", "state_hash", "store_integrity", "store_availability",
	NULL, NULL, /* bits 12 and 13: free */
	"channel_conservation", "channel_progress",
};
/* The first NCHECKERS_CORE are listed in messages as "one of ..."; the
 * channel workload's (from NCHECKERS_CHANNEL on) are named apart. */
#define NCHECKERS_CORE 12
#define NCHECKERS_CHANNEL 14
#define NCHECKERS (sizeof(checker_names) / sizeof(checker_names[0]))

static const char *const direction_names[] = {"send", "receive", "both"};
static const char *const corrupt_names[] = {[SIM_CORRUPT_BITFLIP] = "bitflip", [SIM_CORRUPT_TRUNCATE] = "truncate"};
static const char *const lose_names[] = {
	[SIM_LOSE_NONE] = "none", [SIM_LOSE_STORE] = "store", [SIM_LOSE_LAST_STEP] = "last_step"};
static const char *const kv_names[] = {[SIM_KV_LMDB] = "lmdb", [SIM_KV_MEMORY] = "memory"};
static const char *const sig_names[] = {[SIM_SIG_ED25519] = "ed25519", [SIM_SIG_FAST] = "fast"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- network ---- */

static int parse_latency(struct ctx *c, struct sim_latency *lat, const json_t *v, const char *path)
{
	static const char *const constant_keys[] = {"dist", "ms", NULL};
	static const char *const uniform_keys[] = {"dist", "min_ms", "max_ms", NULL};
	static const char *const normal_keys[] = {"dist", "mean_ms", "stddev_ms", "min_ms", "max_ms", NULL};
	char p[WEFT_JSON_PATH_MAX];
	unsigned int dist;
	int rc;

	if ((rc = need_object(c, v, path)) < 0)
		return rc;
	const json_t *d = json_object_get(v, "dist");
	if (!d)
		return missing(c, path, "dist", " (constant, uniform or normal)");
	if ((rc = get_enum(c, d, weft_json_path_key(p, path, "dist"), "latency distribution", latency_names,
			   COUNT(latency_names), &dist)) < 0)
		return rc;
	memset(lat, 0, sizeof(*lat));
	lat->kind = (enum sim_latency_kind)dist;
	switch (lat->kind) {
	case SIM_LAT_CONSTANT: {
		if ((rc = check_keys(c, v, path, constant_keys, "a constant latency")) < 0)
			return rc;
		const json_t *ms = json_object_get(v, "ms");
		if (!ms)
			return missing(c, path, "ms", NULL);
		if ((rc = get_ms(c, ms, weft_json_path_key(p, path, "ms"), &lat->a_us)) < 0)
			return rc;
		lat->min_us = lat->max_us = lat->a_us;
		return 0;
	}
	case SIM_LAT_UNIFORM: {
		if ((rc = check_keys(c, v, path, uniform_keys, "a uniform latency")) < 0)
			return rc;
		const json_t *lo = json_object_get(v, "min_ms"), *hi = json_object_get(v, "max_ms");
		if (!lo)
			return missing(c, path, "min_ms", NULL);
		if (!hi)
			return missing(c, path, "max_ms", NULL);
		if ((rc = get_ms(c, lo, weft_json_path_key(p, path, "min_ms"), &lat->a_us)) < 0 ||
		    (rc = get_ms(c, hi, weft_json_path_key(p, path, "max_ms"), &lat->b_us)) < 0)
			return rc;
		if (lat->b_us < lat->a_us)
			return fail(c, weft_json_path_key(p, path, "max_ms"),
					"expected a number >= min_ms (%s), got %s",
				    DESC(lo), DESC(hi));
		lat->min_us = lat->a_us;
		lat->max_us = lat->b_us;
		return 0;
	}
	case SIM_LAT_NORMAL: {
		if ((rc = check_keys(c, v, path, normal_keys, "a normal latency")) < 0)
			return rc;
		const json_t *mean = json_object_get(v, "mean_ms"), *sd = json_object_get(v, "stddev_ms");
		const json_t *lo = json_object_get(v, "min_ms"), *hi = json_object_get(v, "max_ms");
		if (!mean)
			return missing(c, path, "mean_ms", NULL);
		if (!sd)
			return missing(c, path, "stddev_ms", NULL);
		if ((rc = get_ms(c, mean, weft_json_path_key(p, path, "mean_ms"), &lat->a_us)) < 0 ||
		    (rc = get_ms(c, sd, weft_json_path_key(p, path, "stddev_ms"), &lat->b_us)) < 0)
			return rc;
		lat->min_us = 0;
		lat->max_us = lat->a_us + 10 * lat->b_us; /* each <= 1e15: no overflow */
		if (lo && (rc = get_ms(c, lo, weft_json_path_key(p, path, "min_ms"), &lat->min_us)) < 0)
			return rc;
		if (hi && (rc = get_ms(c, hi, weft_json_path_key(p, path, "max_ms"), &lat->max_us)) < 0)
			return rc;
		if (lat->max_us < lat->min_us) {
			if (hi)
				return fail(c, weft_json_path_key(p, path, "max_ms"),
						"expected a number >= min_ms (%s), got %s",
					    lo ? DESC(lo) : "0", DESC(hi));
			return fail(c, weft_json_path_key(p, path, "min_ms"),
				    "expected a number <= the default max_ms (mean_ms + 10 * stddev_ms = %.3f), got %s",
				    (double)lat->max_us / 1000.0, DESC(lo));
		}
		return 0;
	}
	}
	return 0;
}

static int parse_topology(struct ctx *c, struct sim_network *net, const json_t *v, const char *path)
{
	static const char *const keys[] = {"directed", NULL};
	char p[WEFT_JSON_PATH_MAX], q[WEFT_JSON_PATH_MAX];
	int rc;

	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "complete") == 0)
			return 0;
		return fail(c, path, "unknown topology %s (expected \"complete\" or {\"directed\": [...]})", DESC(v));
	}
	if (!json_is_object(v))
		return fail(c, path, "expected \"complete\" or {\"directed\": [...]}, got %s", DESC(v));
	if ((rc = check_keys(c, v, path, keys, NULL)) < 0)
		return rc;
	const json_t *d = json_object_get(v, "directed");
	if (!d)
		return missing(c, path, "directed", " (list i = the nodes node i can send to)");
	weft_json_path_key(p, path, "directed");
	if (!json_is_array(d))
		return fail(c, p, "expected an array of n = %u lists of node indices, got %s", c->n, DESC(d));
	if (json_array_size(d) != c->n)
		return fail(c, p, "expected an array of n = %u lists of node indices, got %zu lists", c->n,
			    json_array_size(d));
	/* Owned by net from here on, so that a later error frees what is
	 * filled in (sim_scenario_free walks n entries). */
	net->directed = true;
	net->out = weft_xcalloc(c->n, sizeof(*net->out));
	net->out_len = weft_xcalloc(c->n, sizeof(*net->out_len));
	for (uint32_t i = 0; i < c->n; i++) {
		const json_t *e = json_array_get(d, i);
		weft_json_path_index(q, p, i);
		if ((rc = get_nodes(c, e, q, true, false, NULL, &net->out[i], &net->out_len[i])) < 0)
			return rc;
		for (uint32_t k = 0; k < net->out_len[i]; k++)
			if (net->out[i][k] == i)
				return fail(c, q, "node %u cannot list itself (no self loops)", i);
	}
	return 0;
}

static int parse_network(struct ctx *c, struct sim_network *net, const json_t *v, const char *path)
{
	static const char *const keys[] = {"latency", "bandwidth_mbps", "loss", "duplicate", "reorder", "topology",
					   NULL};
	static const char *const reorder_keys[] = {"probability", "max_ms", NULL};
	char p[WEFT_JSON_PATH_MAX], q[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;

	if ((rc = need_object(c, v, path)) < 0 || (rc = check_keys(c, v, path, keys, NULL)) < 0)
		return rc;
	if ((e = json_object_get(v, "latency")) &&
	    (rc = parse_latency(c, &net->latency, e, weft_json_path_key(p, path, "latency"))) < 0)
		return rc;
	if ((e = json_object_get(v, "bandwidth_mbps"))) {
		double mbps;
		if ((rc = get_number(c, e, weft_json_path_key(p, path, "bandwidth_mbps"), MAX_MBPS, " (Mbit/s)",
				     &mbps)) < 0)
			return rc;
		net->bandwidth_bps = (uint64_t)llround(mbps * 1e6);
		if (net->bandwidth_bps == 0 && mbps > 0)
			return fail(c, p, "expected at least 0.000001 Mbit/s (1 bit/s; 0 = unlimited), got %s",
				    DESC(e));
	}
	if ((e = json_object_get(v, "loss")) && (rc = get_prob(c, e, weft_json_path_key(p, path, "loss"),
			&net->loss)) < 0)
		return rc;
	if ((e = json_object_get(v, "duplicate")) &&
	    (rc = get_prob(c, e, weft_json_path_key(p, path, "duplicate"), &net->duplicate)) < 0)
		return rc;
	if ((e = json_object_get(v, "reorder"))) {
		weft_json_path_key(p, path, "reorder");
		if ((rc = need_object(c, e, p)) < 0 || (rc = check_keys(c, e, p, reorder_keys, NULL)) < 0)
			return rc;
		const json_t *pr = json_object_get(e, "probability"), *mx = json_object_get(e, "max_ms");
		if (!pr)
			return missing(c, p, "probability", NULL);
		if (!mx)
			return missing(c, p, "max_ms", NULL);
		if ((rc = get_prob(c, pr, weft_json_path_key(q, p, "probability"), &net->reorder)) < 0 ||
		    (rc = get_ms(c, mx, weft_json_path_key(q, p, "max_ms"), &net->reorder_us)) < 0)
			return rc;
	}
	if ((e = json_object_get(v, "topology")) &&
	    (rc = parse_topology(c, net, e, weft_json_path_key(p, path, "topology"))) < 0)
		return rc;
	return 0;
}

/* ---- faults ---- */

/* Keys each kind accepts besides its window's (window_keys). */
static const char *const *fault_keys(enum sim_fault_kind kind)
{
	static const char *const crash[] = {"kind", "nodes", NULL};
	static const char *const recover[] = {"kind", "nodes", "lose", NULL};
	static const char *const omission[] = {"kind", "nodes", "peers", "direction", NULL};
	static const char *const loss[] = {"kind", "nodes", "peers", "direction", "probability", NULL};
	static const char *const delay[] = {"kind", "nodes", "peers", "ms", "jitter_ms", NULL};
	static const char *const partition[] = {"kind", "groups", NULL};
	static const char *const cut[] = {"kind", "from", "to", NULL};
	static const char *const corrupt[] = {"kind", "nodes", "probability", "mode", NULL};
	static const char *const equivocate[] = {"kind", "nodes", "audience", NULL};
	static const char *const twins[] = {"kind", "nodes", NULL};
	static const char *const adversary[] = {"kind", "nodes", "strategy", "params", NULL};
	static const char *const skew[] = {"kind", "nodes", "rate", "offset_ms", NULL};

	switch (kind) {
	case SIM_FAULT_CRASH:
		return crash;
	case SIM_FAULT_CRASH_RECOVER:
		return recover;
	case SIM_FAULT_OMISSION:
		return omission;
	case SIM_FAULT_LOSS:
		return loss;
	case SIM_FAULT_DELAY:
		return delay;
	case SIM_FAULT_PARTITION:
		return partition;
	case SIM_FAULT_CUT:
		return cut;
	case SIM_FAULT_CORRUPT:
		return corrupt;
	case SIM_FAULT_EQUIVOCATE:
		return equivocate;
	case SIM_FAULT_TWINS:
		return twins;
	case SIM_FAULT_ADVERSARY:
		return adversary;
	case SIM_FAULT_SKEW:
		return skew;
	}
	return crash;
}

/* Equivocate, twins and adversary act for the whole run (the engine starts
 * their processes at the beginning): they take no trigger. */
static bool whole_run(enum sim_fault_kind kind)
{
	return kind == SIM_FAULT_EQUIVOCATE || kind == SIM_FAULT_TWINS || kind == SIM_FAULT_ADVERSARY;
}

/* The window's keys of a kind: a crash never ends, and only the kinds the
 * engine starts and stops take a trigger. */
static const char *const *window_keys(enum sim_fault_kind kind)
{
	static const char *const crash[] = {"at_ms", "after", "delay_ms", NULL};
	static const char *const fixed[] = {"at_ms", "until_ms", "for_ms", NULL};
	static const char *const any[] = {"at_ms", "until_ms", "for_ms", "after", "delay_ms", NULL};

	if (kind == SIM_FAULT_CRASH)
		return crash;
	return whole_run(kind) ? fixed : any;
}

static int parse_groups(struct ctx *c, struct sim_fault *f, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	int rc = 0;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return fail(c, path, "expected a non-empty array of groups (arrays of node indices), got %s%s",
			    json_is_array(v) ? "an empty " : "", json_is_array(v) ? "array" : DESC(v));
	size_t count = json_array_size(v);
	if (count > c->n)
		/* Groups are non-empty and disjoint: at most n of them. */
		return fail(c, path, "expected at most n = %u disjoint groups, got %zu", c->n, count);
	f->groups = weft_xcalloc(count, sizeof(*f->groups));
	f->group_len = weft_xcalloc(count, sizeof(*f->group_len));
	f->ngroups = (uint32_t)count;
	bool *seen = weft_xcalloc(c->n, sizeof(*seen));
	for (size_t g = 0; g < count && rc == 0; g++)
		rc = get_nodes(c, json_array_get(v, g), weft_json_path_index(p, path, g), false, false, seen, &f->groups[g],
			       &f->group_len[g]);
	free(seen);
	return rc;
}

/* The first node of b that a also lists, or UINT32_MAX. */
static uint32_t common_node(const uint32_t *a, uint32_t alen, const uint32_t *b, uint32_t blen)
{
	for (uint32_t i = 0; i < blen; i++)
		for (uint32_t k = 0; k < alen; k++)
			if (b[i] == a[k])
				return b[i];
	return UINT32_MAX;
}

/* "after": the protocol event that starts the window. */
static int parse_trigger(struct ctx *c, struct sim_trigger *t, const json_t *v, const char *path)
{
	static const char *const keys[] = {"node", "log", "event", "contains", "deliveries", NULL};
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;

	if ((rc = need_object(c, v, path)) < 0 || (rc = check_keys(c, v, path, keys, "a trigger")) < 0)
		return rc;
	if (!(e = json_object_get(v, "node")))
		return missing(c, path, "node", " (whose protocol the trigger watches)");
	if ((rc = get_node(c, e, weft_json_path_key(p, path, "node"), &t->node)) < 0)
		return rc;
	const json_t *log = json_object_get(v, "log"), *event = json_object_get(v, "event");
	const json_t *count = json_object_get(v, "deliveries"), *contains = json_object_get(v, "contains");
	int given = (log != NULL) + (event != NULL) + (count != NULL);
	if (given == 0)
		return fail(c, path, "missing what the trigger waits for: one of log, event or deliveries");
	if (given > 1)
		return fail(c, path, "log, event and deliveries are alternatives: give one");
	if (contains && !event)
		return fail(c, weft_json_path_key(p, path, "contains"), "narrows an event trigger: give event too");
	if (log) {
		t->kind = SIM_TRIGGER_LOG;
		return get_string(c, log, weft_json_path_key(p, path, "log"), MAX_TRIGGER, true, &t->text);
	}
	if (event) {
		t->kind = SIM_TRIGGER_EVENT;
		if ((rc = get_string(c, event, weft_json_path_key(p, path, "event"), MAX_TRIGGER, true, &t->text)) < 0)
			return rc;
		if (contains)
			return get_string(c, contains, weft_json_path_key(p, path, "contains"),
					MAX_TRIGGER, true, &t->contains);
		return 0;
	}
	t->kind = SIM_TRIGGER_DELIVERIES;
	return get_uint(c, count, weft_json_path_key(p, path, "deliveries"), 1, UINT64_MAX, &t->deliveries);
}

/* The window: at_ms or after (+ delay_ms), then until_ms or for_ms.  With
 * a trigger, start_us and stop_us count from its firing. */
static int parse_window(struct ctx *c, struct sim_fault *f, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	const json_t *at = json_object_get(v, "at_ms"), *after = json_object_get(v, "after");
	const json_t *delay = json_object_get(v, "delay_ms"), *until = json_object_get(v, "until_ms");
	const json_t *length = json_object_get(v, "for_ms");
	uint64_t for_us;
	int rc;

	if (at && after)
		return fail(c, weft_json_path_key(p, path, "after"),
			    "at_ms and after are alternatives: a fault starts at a time or after a protocol event");
	if (delay && !after)
		return fail(c, weft_json_path_key(p, path, "delay_ms"),
				"counts from a trigger: give after (or use at_ms)");
	if (until && length)
		return fail(c, weft_json_path_key(p, path, "for_ms"), "until_ms and for_ms are alternatives: give one");
	if (until && after)
		return fail(c, weft_json_path_key(p, path, "until_ms"),
			    "is a fixed time: a fault that starts after a trigger lasts for_ms");
	if (after && (rc = parse_trigger(c, &f->after, after, weft_json_path_key(p, path, "after"))) < 0)
		return rc;
	if (at && (rc = get_ms(c, at, weft_json_path_key(p, path, "at_ms"), &f->start_us)) < 0)
		return rc;
	if (delay && (rc = get_ms(c, delay, weft_json_path_key(p, path, "delay_ms"), &f->start_us)) < 0)
		return rc;
	if (until) {
		if ((rc = get_ms(c, until, weft_json_path_key(p, path, "until_ms"), &f->stop_us)) < 0)
			return rc;
		if (f->stop_us <= f->start_us)
			return fail(c, p, "expected a time later than at_ms (%.3f), got %s",
				    (double)f->start_us / 1000.0, DESC(until));
	} else if (length) {
		if ((rc = get_ms_positive(c, length, weft_json_path_key(p, path, "for_ms"), &for_us)) < 0)
			return rc;
		f->stop_us = f->start_us + for_us; /* each <= 1e15: no overflow */
	} else if (f->kind == SIM_FAULT_CRASH_RECOVER) {
		if (after)
			return missing(c, path, "for_ms", " (how long the node is down)");
		return missing(c, path, "until_ms", " (when the node restarts; or for_ms: how long it is down)");
	}
	return 0;
}

/* Optional "peers" (default: every peer). */
static int parse_peers(struct ctx *c, struct sim_fault *f, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e = json_object_get(v, "peers");
	if (!e)
		return 0;
	return get_nodes(c, e, weft_json_path_key(p, path, "peers"), false, false, NULL, &f->peers, &f->npeers);
}

/* Optional "peers" and "direction" (default both) of omission and loss. */
static int parse_link(struct ctx *c, struct sim_fault *f, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	unsigned int dir = 2;
	int rc;

	if ((rc = parse_peers(c, f, v, path)) < 0)
		return rc;
	if ((e = json_object_get(v, "direction")) &&
	    (rc = get_enum(c, e, weft_json_path_key(p, path, "direction"),
			"direction", direction_names, COUNT(direction_names),
			   &dir)) < 0)
		return rc;
	f->sends = dir != 1;
	f->receives = dir != 0;
	return 0;
}

static int parse_cut(struct ctx *c, struct sim_fault *f, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	const json_t *from = json_object_get(v, "from"), *to = json_object_get(v, "to");
	int rc;

	if (!from)
		return missing(c, path, "from", " (the nodes whose messages are cut)");
	if (!to)
		return missing(c, path, "to", " (the nodes they no longer reach)");
	if ((rc = get_nodes(c, from, weft_json_path_key(p, path, "from"),
			false, false, NULL, &f->nodes, &f->nnodes)) < 0 ||
	    (rc = get_nodes(c, to, weft_json_path_key(p, path, "to"), false, false, NULL, &f->peers, &f->npeers)) < 0)
		return rc;
	uint32_t both = common_node(f->nodes, f->nnodes, f->peers, f->npeers);
	if (both != UINT32_MAX)
		return fail(c, p, "node %u is in both from and to (a cut drops messages from one side to the other)",
			    both);
	return 0;
}

static int parse_skew(struct ctx *c, struct sim_fault *f, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	const json_t *rate = json_object_get(v, "rate"), *offset = json_object_get(v, "offset_ms");

	if (!rate && !offset)
		return missing(c, path, "rate", " (or offset_ms: how fast the clock runs, how far it jumps ahead)");
	f->rate = 1.0;
	if (rate) {
		if (!json_is_number(rate) || !(json_number_value(rate) >= MIN_RATE && json_number_value(rate) <= MAX_RATE))
			return fail(c, weft_json_path_key(p, path, "rate"),
				    "expected a clock rate in [%g, %g] (1: true time, 1.5: 50%% fast), got %s", MIN_RATE,
				    MAX_RATE, DESC(rate));
		f->rate = json_number_value(rate);
	}
	if (offset)
		return get_ms(c, offset, weft_json_path_key(p, path, "offset_ms"), &f->offset_us);
	return 0;
}

static int parse_fault(struct ctx *c, struct sim_fault *f, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	unsigned int kind;
	int rc;

	f->stop_us = SIM_NEVER;
	if ((rc = need_object(c, v, path)) < 0)
		return rc;
	if (!(e = json_object_get(v, "kind")))
		return missing(c, path, "kind", NULL);
	char list[160], why[256];
	enum weft_fault word;
	weft_fault_names(WEFT_FAULT_IN_SIM, list, sizeof(list));
	if (!json_is_string(e))
		return fail(c, weft_json_path_key(p, path, "kind"),
				"expected a fault name (one of %s), got %s", list, DESC(e));
	if (weft_fault_parse(json_string_value(e), json_string_length(e), WEFT_FAULT_IN_SIM, &word, why,
			     sizeof(why)) != 0)
		return fail(c, weft_json_path_key(p, path, "kind"), "%s", why);
	for (kind = 0; fault_kinds[kind].word != word; kind++)
		;
	f->kind = fault_kinds[kind].kind;
	char what[64];
	snprintf(what, sizeof(what), "a%s %s fault", f->kind == SIM_FAULT_OMISSION || f->kind == SIM_FAULT_EQUIVOCATE ||
						     f->kind == SIM_FAULT_ADVERSARY ? "n" : "",
		 weft_fault_name(word));
	if (f->kind == SIM_FAULT_CRASH) {
		const char *end = json_object_get(v, "until_ms") ? "until_ms"
				  : json_object_get(v, "for_ms") ? "for_ms"
								  : NULL;
		if (end)
			return fail(c, weft_json_path_key(p, path, end),
				    "a crash fault never ends (use kind crash_recover for a node that restarts)");
		if (json_object_get(v, "lose"))
			return fail(c, weft_json_path_key(p, path, "lose"),
				    "a crash fault never restarts, so it loses nothing (use kind crash_recover with lose)");
	}
	if (whole_run(f->kind) && (json_object_get(v, "after") || json_object_get(v, "delay_ms")))
		return fail(c, weft_json_path_key(p, path, json_object_get(v, "after") ? "after" : "delay_ms"),
			    "%s runs for the whole run and cannot wait for a trigger", what);
	const char *keys[16];
	size_t nkeys = 0;
	for (const char *const *k = fault_keys(f->kind); *k; k++)
		keys[nkeys++] = *k;
	for (const char *const *k = window_keys(f->kind); *k; k++)
		keys[nkeys++] = *k;
	keys[nkeys] = NULL;
	if ((rc = check_keys(c, v, path, keys, what)) < 0 || (rc = parse_window(c, f, v, path)) < 0)
		return rc;

	if (f->kind != SIM_FAULT_PARTITION && f->kind != SIM_FAULT_CUT) {
		if (!(e = json_object_get(v, "nodes")))
			return missing(c, path, "nodes", NULL);
		if ((rc = get_nodes(c, e, weft_json_path_key(p, path, "nodes"),
				false, false, NULL, &f->nodes, &f->nnodes)) < 0)
			return rc;
	}

	switch (f->kind) {
	case SIM_FAULT_CRASH:
	case SIM_FAULT_TWINS:
		return 0;
	case SIM_FAULT_CRASH_RECOVER: {
		unsigned int lose = SIM_LOSE_NONE;
		if ((e = json_object_get(v, "lose")) &&
		    (rc = get_enum(c, e, weft_json_path_key(p, path, "lose"),
				"store loss", lose_names, COUNT(lose_names),
				   &lose)) < 0)
			return rc;
		f->lose = (enum sim_lose)lose;
		return 0;
	}
	case SIM_FAULT_OMISSION:
		return parse_link(c, f, v, path);
	case SIM_FAULT_LOSS:
		if (!(e = json_object_get(v, "probability")))
			return missing(c, path, "probability", " (the chance each message is lost)");
		if ((rc = get_prob(c, e, weft_json_path_key(p, path, "probability"), &f->probability)) < 0)
			return rc;
		return parse_link(c, f, v, path);
	case SIM_FAULT_DELAY:
		if (!(e = json_object_get(v, "ms")))
			return missing(c, path, "ms", " (the extra delay)");
		if ((rc = get_ms(c, e, weft_json_path_key(p, path, "ms"), &f->delay_us)) < 0)
			return rc;
		if ((e = json_object_get(v, "jitter_ms")) &&
		    (rc = get_ms(c, e, weft_json_path_key(p, path, "jitter_ms"), &f->jitter_us)) < 0)
			return rc;
		return parse_peers(c, f, v, path);
	case SIM_FAULT_PARTITION:
		if (!(e = json_object_get(v, "groups")))
			return missing(c, path, "groups", NULL);
		return parse_groups(c, f, e, weft_json_path_key(p, path, "groups"));
	case SIM_FAULT_CUT:
		return parse_cut(c, f, v, path);
	case SIM_FAULT_CORRUPT: {
		unsigned int mode = SIM_CORRUPT_BITFLIP;
		f->probability = 1.0;
		if ((e = json_object_get(v, "probability")) &&
		    (rc = get_prob(c, e, weft_json_path_key(p, path, "probability"), &f->probability)) < 0)
			return rc;
		if ((e = json_object_get(v, "mode")) &&
		    (rc = get_enum(c, e, weft_json_path_key(p, path, "mode"), "corruption mode", corrupt_names,
				   COUNT(corrupt_names), &mode)) < 0)
			return rc;
		f->corrupt = (enum sim_corrupt_mode)mode;
		return 0;
	}
	case SIM_FAULT_EQUIVOCATE: {
		if (!(e = json_object_get(v, "audience")))
			return missing(c, path, "audience", " (the nodes the twin speaks to)");
		if ((rc = get_nodes(c, e, weft_json_path_key(p, path, "audience"), false, false, NULL, &f->peers,
				    &f->npeers)) < 0)
			return rc;
		uint32_t self = common_node(f->nodes, f->nnodes, f->peers, f->npeers);
		if (self != UINT32_MAX)
			return fail(c, p, "node %u equivocates itself and cannot be in its audience", self);
		return 0;
	}
	case SIM_FAULT_ADVERSARY:
		if (!(e = json_object_get(v, "strategy")))
			return missing(c, path, "strategy", " (the protocol's Byzantine strategy)");
		if ((rc = get_name(c, e, weft_json_path_key(p, path, "strategy"), MAX_STRATEGY, &f->strategy)) < 0)
			return rc;
		if ((e = json_object_get(v, "params")))
			return get_params(c, e, weft_json_path_key(p, path, "params"), &f->params, &f->plen);
		return 0;
	case SIM_FAULT_SKEW:
		return parse_skew(c, f, v, path);
	}
	return 0;
}

static int parse_faults(struct ctx *c, struct sim_scenario *sc, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	int rc;

	if (!json_is_array(v))
		return fail(c, path, "expected an array of faults, got %s", DESC(v));
	size_t count = json_array_size(v);
	if (count == 0)
		return 0;
	sc->faults = weft_xcalloc(count, sizeof(*sc->faults));
	sc->nfaults = count;
	for (size_t i = 0; i < count; i++)
		sc->faults[i].stop_us = SIM_NEVER;
	for (size_t i = 0; i < count; i++)
		if ((rc = parse_fault(c, &sc->faults[i], json_array_get(v, i), weft_json_path_index(p, path, i))) < 0)
			return rc;
	/* A node runs one adversary strategy: a second one would replace the
	 * first's code and parameters. */
	for (size_t i = 0; i < count; i++) {
		const struct sim_fault *f = &sc->faults[i];
		for (uint32_t k = 0; f->kind == SIM_FAULT_ADVERSARY && k < f->nnodes; k++)
			for (size_t j = 0; j < i; j++) {
				const struct sim_fault *g = &sc->faults[j];
				if (g->kind != SIM_FAULT_ADVERSARY || common_node(g->nodes, g->nnodes, &f->nodes[k], 1) == UINT32_MAX)
					continue;
				char q[WEFT_JSON_PATH_MAX], first[WEFT_JSON_PATH_MAX];
				weft_json_path_index(p, path, i);
				weft_json_path_key(q, p, "nodes");
				return fail(c, weft_json_path_index(p, q, k),
					    "node %u runs the adversary strategy of %s already (one strategy per node)",
					    f->nodes[k], weft_json_path_index(first, path, j));
			}
	}
	return 0;
}

/* ---- workload ---- */

static int parse_work(struct ctx *c, struct sim_workload *w, const json_t *v, const char *path)
{
	static const char *const line_keys[] = {"nodes", "start_ms", "every_ms", "count", "size", NULL};
	static const char *const single_keys[] = {"node", "at_ms", "size", NULL};
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;

	w->count = 1;
	if ((rc = need_object(c, v, path)) < 0)
		return rc;
	if ((e = json_object_get(v, "node"))) {
		/* The single-request form. */
		uint32_t node;
		if ((rc = check_keys(c, v, path, single_keys, "a single request (with \"node\")")) < 0 ||
		    (rc = get_node(c, e, weft_json_path_key(p, path, "node"), &node)) < 0)
			return rc;
		w->nodes = weft_xmalloc(sizeof(*w->nodes));
		w->nodes[0] = node;
		w->nnodes = 1;
		if ((e = json_object_get(v, "at_ms")) &&
		    (rc = get_ms(c, e, weft_json_path_key(p, path, "at_ms"), &w->start_us)) < 0)
			return rc;
	} else {
		if ((rc = check_keys(c, v, path, line_keys, "a workload line")) < 0)
			return rc;
		if (!(e = json_object_get(v, "nodes")))
			return missing(c, path, "nodes", " (\"all\" or an array of node indices; or use \"node\")");
		if ((rc = get_nodes(c, e, weft_json_path_key(p, path, "nodes"),
				false, true, NULL, &w->nodes, &w->nnodes)) < 0)
			return rc;
		if ((e = json_object_get(v, "start_ms")) &&
		    (rc = get_ms(c, e, weft_json_path_key(p, path, "start_ms"), &w->start_us)) < 0)
			return rc;
		if ((e = json_object_get(v, "count")) &&
		    (rc = get_u32(c, e, weft_json_path_key(p, path, "count"), 1, UINT32_MAX, &w->count)) < 0)
			return rc;
		e = json_object_get(v, "every_ms");
		if (w->count > 1) {
			if (!e)
				return missing(c, path, "every_ms", " (needed when count > 1)");
			if ((rc = get_ms_positive(c, e, weft_json_path_key(p, path, "every_ms"), &w->every_us)) < 0)
				return rc;
			/* The last request's time must fit the clock. */
			if (w->every_us > (SIM_NEVER - 1 - w->start_us) / (w->count - 1))
				return fail(c, path, "start_ms + every_ms * (count - 1) is beyond the end of time");
		} else if (e && (rc = get_ms(c, e, weft_json_path_key(p, path, "every_ms"), &w->every_us)) < 0) {
			return rc;
		}
	}
	if (!(e = json_object_get(v, "size")))
		return missing(c, path, "size", " (payload bytes)");
	return get_u32(c, e, weft_json_path_key(p, path, "size"), 0, MAX_SIZE, &w->size);
}

static int parse_workload(struct ctx *c, struct sim_scenario *sc, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];
	int rc;

	if (!json_is_array(v))
		return fail(c, path, "expected an array of workload lines, got %s", DESC(v));
	size_t count = json_array_size(v);
	if (count == 0)
		return 0;
	sc->work = weft_xcalloc(count, sizeof(*sc->work));
	sc->nwork = count;
	for (size_t i = 0; i < count; i++)
		if ((rc = parse_work(c, &sc->work[i], json_array_get(v, i), weft_json_path_index(p, path, i))) < 0)
			return rc;
	return 0;
}

/* ---- the storage workload ---- */

static int parse_store(struct ctx *c, struct sim_scenario *sc, const json_t *v, const char *path)
{
	static const char *const keys[] = {"node", "chunks", "size", "k", "start_ms", "every_ms", "get_ms", "readers",
					   NULL};
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;
	struct sim_store_work *w = &sc->store;
	if ((rc = need_object(c, v, path)) < 0 || (rc = check_keys(c, v, path, keys, "a storage workload")) < 0)
		return rc;
	w->on = true;
	w->chunks = 1;
	w->size = 4096;
	if ((e = json_object_get(v, "node")) && (rc = get_node(c, e, weft_json_path_key(p, path, "node"), &w->putter)) < 0)
		return rc;
	if ((e = json_object_get(v, "chunks")) &&
	    (rc = get_u32(c, e, weft_json_path_key(p, path, "chunks"), 1, 4096, &w->chunks)) < 0)
		return rc;
	/* A blob's shares must fit a message: at most 3 MiB with k = 1. */
	if ((e = json_object_get(v, "size")) &&
	    (rc = get_u32(c, e, weft_json_path_key(p, path, "size"), 1, 3u << 20, &w->size)) < 0)
		return rc;
	if ((e = json_object_get(v, "k")) && (rc = get_u32(c, e, weft_json_path_key(p, path, "k"), 0, sc->n, &w->k)) < 0)
		return rc;
	if ((e = json_object_get(v, "start_ms")) &&
	    (rc = get_ms(c, e, weft_json_path_key(p, path, "start_ms"), &w->start_us)) < 0)
		return rc;
	w->every_us = 10000;
	if ((e = json_object_get(v, "every_ms")) &&
	    (rc = get_ms(c, e, weft_json_path_key(p, path, "every_ms"), &w->every_us)) < 0)
		return rc;
	if (!(e = json_object_get(v, "get_ms")))
		return missing(c, path, "get_ms", " (when the readers fetch)");
	if ((rc = get_ms(c, e, weft_json_path_key(p, path, "get_ms"), &w->get_us)) < 0)
		return rc;
	if (!(e = json_object_get(v, "readers")))
		return missing(c, path, "readers", " (\"all\" or an array of node indices)");
	return get_nodes(c, e, weft_json_path_key(p, path, "readers"), false, true, NULL, &w->readers, &w->nreaders);
}

/* ---- the payment channel workload ---- */

static int parse_channel(struct ctx *c, struct sim_scenario *sc, const json_t *v, const char *path)
{
	static const char *const keys[] = {"members", "deposit", "hosts", "payments", "batch", "amount_max",
					   "start_ms", "every_ms", "root_after_batch", "close", "close_ms", "closer",
					   NULL};
	static const char *const close_names[] = {[SIM_CHAN_CLOSE_NONE] = "none",
						  [SIM_CHAN_CLOSE_COOPERATIVE] = "cooperative",
						  [SIM_CHAN_CLOSE_UNILATERAL] = "unilateral"};
	char p[WEFT_JSON_PATH_MAX];
	const json_t *e;
	int rc;
	struct sim_channel_work *w = &sc->channel;
	if ((rc = need_object(c, v, path)) < 0 || (rc = check_keys(c, v, path, keys, "a channel workload")) < 0)
		return rc;
	w->on = true;
	w->root_after_batch = true;
	if (!(e = json_object_get(v, "members")))
		return missing(c, path, "members", " (how many members the channel has)");
	if ((rc = get_u32(c, e, weft_json_path_key(p, path, "members"), 2, WEFT_CHANNEL_MAX, &w->members)) < 0)
		return rc;
	w->deposit = 1000;
	if ((e = json_object_get(v, "deposit")) &&
	    (rc = get_uint(c, e, weft_json_path_key(p, path, "deposit"), 1, UINT64_MAX / WEFT_CHANNEL_MAX,
			   &w->deposit)) < 0)
		return rc;
	if ((e = json_object_get(v, "hosts"))) {
		weft_json_path_key(p, path, "hosts");
		if (!json_is_array(e))
			return fail(c, p, "expected an array of %u node indices (one per member), got %s", w->members,
				    DESC(e));
		if (json_array_size(e) != w->members)
			return fail(c, p, "expected %u node indices (one per member), got %zu", w->members,
				    json_array_size(e));
		for (uint32_t m = 0; m < w->members; m++) {
			char q[WEFT_JSON_PATH_MAX];
			if ((rc = get_node(c, json_array_get(e, m), weft_json_path_index(q, p, m), &w->hosts[m])) < 0)
				return rc;
		}
	} else {
		for (uint32_t m = 0; m < w->members; m++)
			w->hosts[m] = m % sc->n;
	}
	w->payments = 100;
	if ((e = json_object_get(v, "payments")) &&
	    (rc = get_u32(c, e, weft_json_path_key(p, path, "payments"), 0, 100000000, &w->payments)) < 0)
		return rc;
	w->batch = w->payments ? w->payments : 1;
	if ((e = json_object_get(v, "batch")) &&
	    (rc = get_u32(c, e, weft_json_path_key(p, path, "batch"), 1, UINT32_MAX, &w->batch)) < 0)
		return rc;
	w->amount_max = w->deposit / 10 ? w->deposit / 10 : 1;
	if ((e = json_object_get(v, "amount_max")) &&
	    (rc = get_uint(c, e, weft_json_path_key(p, path, "amount_max"), 1, w->deposit * w->members,
			   &w->amount_max)) < 0)
		return rc;
	if ((e = json_object_get(v, "start_ms")) &&
	    (rc = get_ms(c, e, weft_json_path_key(p, path, "start_ms"), &w->start_us)) < 0)
		return rc;
	w->every_us = 10000;
	if ((e = json_object_get(v, "every_ms")) &&
	    (rc = get_ms_positive(c, e, weft_json_path_key(p, path, "every_ms"), &w->every_us)) < 0)
		return rc;
	if ((e = json_object_get(v, "root_after_batch")) &&
	    (rc = get_bool(c, e, weft_json_path_key(p, path, "root_after_batch"), &w->root_after_batch)) < 0)
		return rc;
	unsigned int u = SIM_CHAN_CLOSE_NONE;
	if ((e = json_object_get(v, "close")) &&
	    (rc = get_enum(c, e, weft_json_path_key(p, path, "close"), "close kind", close_names, COUNT(close_names),
			   &u)) < 0)
		return rc;
	w->close = (enum sim_chan_close)u;
	w->close_us = SIM_NEVER;
	if ((e = json_object_get(v, "close_ms"))) {
		if (w->close == SIM_CHAN_CLOSE_NONE)
			return fail(c, weft_json_path_key(p, path, "close_ms"),
				    "a channel that is not closed has no close time (set \"close\")");
		if ((rc = get_ms(c, e, weft_json_path_key(p, path, "close_ms"), &w->close_us)) < 0)
			return rc;
	}
	if ((e = json_object_get(v, "closer"))) {
		weft_json_path_key(p, path, "closer");
		if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= (json_int_t)w->members)
			return fail(c, p, "expected a member index in [0, %u], got %s", w->members - 1, DESC(e));
		w->closer = (uint32_t)json_integer_value(e);
	}
	return 0;
}

/* ---- seeds and checkers ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int parse_seeds(struct ctx *c, struct sim_scenario *sc, const json_t *v, const char *path)
{
	static const char *const range_keys[] = {"from", "to", NULL};
	char p[WEFT_JSON_PATH_MAX];
	int rc;

	if (json_is_object(v)) {
		uint64_t from, to;
		if ((rc = check_keys(c, v, path, range_keys, "a seed range")) < 0)
			return rc;
		const json_t *a = json_object_get(v, "from"), *b = json_object_get(v, "to");
		if (!a)
			return missing(c, path, "from", NULL);
		if (!b)
			return missing(c, path, "to", NULL);
		if ((rc = get_uint(c, a, weft_json_path_key(p, path, "from"), 0, UINT64_MAX, &from)) < 0)
			return rc;
		if ((rc = get_uint(c, b, weft_json_path_key(p, path, "to"), from, UINT64_MAX, &to)) < 0)
			return rc;
		if (to - from >= MAX_SEEDS)
			return fail(c, path, "the range holds %llu seeds, at most %d are allowed",
				    (unsigned long long)(to - from) + 1, MAX_SEEDS);
		sc->nseeds = (size_t)(to - from) + 1;
		sc->seeds = weft_xmalloc(sc->nseeds * sizeof(*sc->seeds));
		for (size_t i = 0; i < sc->nseeds; i++)
			sc->seeds[i] = from + i;
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) == 0)
		return fail(c, path, "expected a non-empty array of seeds or {\"from\": A, \"to\": B}, got %s%s",
			    json_is_array(v) ? "an empty " : "", json_is_array(v) ? "array" : DESC(v));
	size_t count = json_array_size(v);
	if (count > MAX_SEEDS)
		return fail(c, path, "expected at most %d seeds, got %zu", MAX_SEEDS, count);
	uint64_t *seeds = weft_xmalloc(count * sizeof(*seeds));
	for (size_t i = 0; i < count; i++) {
		if ((rc = get_uint(c, json_array_get(v, i), weft_json_path_index(p, path, i), 0, UINT64_MAX, &seeds[i])) < 0) {
			free(seeds);
			return rc;
		}
	}
	uint64_t *sorted = weft_xmalloc(count * sizeof(*sorted));
	memcpy(sorted, seeds, count * sizeof(*sorted));
	qsort(sorted, count, sizeof(*sorted), cmp_u64);
	for (size_t i = 1; i < count; i++) {
		if (sorted[i] == sorted[i - 1]) {
			rc = fail(c, path, "seed %llu is listed twice", (unsigned long long)sorted[i]);
			free(sorted);
			free(seeds);
			return rc;
		}
	}
	free(sorted);
	sc->seeds = seeds;
	sc->nseeds = count;
	return 0;
}

static int parse_checkers(struct ctx *c, struct sim_scenario *sc, const json_t *v, const char *path)
{
	char p[WEFT_JSON_PATH_MAX];

	if (!json_is_array(v))
		return fail(c, path, "expected an array of checker names, got %s", DESC(v));
	for (size_t i = 0; i < json_array_size(v); i++) {
		unsigned int k = 0;
		const json_t *e = json_array_get(v, i);
		weft_json_path_index(p, path, i);
		while (json_is_string(e) && k < NCHECKERS &&
		       !(checker_names[k] && strlen(checker_names[k]) == json_string_length(e) &&
			 memcmp(checker_names[k], json_string_value(e), json_string_length(e)) == 0))
			k++;
		if (!json_is_string(e) || k == NCHECKERS) {
			char list[512], more[128];
			join(checker_names, NCHECKERS_CORE, list, sizeof(list));
			join(checker_names + NCHECKERS_CHANNEL, NCHECKERS - NCHECKERS_CHANNEL, more, sizeof(more));
			if (!json_is_string(e))
				return fail(c, p, "expected a checker name (one of %s, %s), got %s", list, more, DESC(e));
			return fail(c, p, "unknown checker %s (expected one of %s); with a channel workload also %s",
				    DESC(e), list, more);
		}
		if (sc->checkers & (1u << k))
			return fail(c, p, "checker '%s' is listed twice", checker_names[k]);
		sc->checkers |= 1u << k;
	}
	return 0;
}

/* ---- bounds ---- */

/* "bounds" (v may be NULL: all defaults); after the checkers, since
 * catch_up needs catch_up_ms. */
static int parse_bounds(struct ctx *c, struct sim_scenario *sc, const json_t *v)
{
	static const char *const keys[] = {"inclusion_min", "settle_ms", "catch_up_ms", NULL};
	static const char *const channel_keys[] = {"channel_progress_min", NULL};
	struct sim_bounds *b = &sc->bounds;
	const json_t *e;
	int rc;

	*b = (struct sim_bounds){.inclusion_min = 1.0, .settle_us = SIM_NEVER, .catch_up_us = SIM_NEVER,
				 .channel_progress_min = 0.9};
	if (v && ((rc = need_object(c, v, "$.bounds")) < 0 ||
		  (rc = check_keys_also(c, v, "$.bounds", keys, channel_keys, "with a channel workload also")) < 0))
		return rc;
	if (v && (e = json_object_get(v, "channel_progress_min")) &&
	    (rc = get_prob(c, e, "$.bounds.channel_progress_min", &b->channel_progress_min)) < 0)
		return rc;
	if (v && (e = json_object_get(v, "inclusion_min")) &&
	    (rc = get_prob(c, e, "$.bounds.inclusion_min", &b->inclusion_min)) < 0)
		return rc;
	if (v && (e = json_object_get(v, "settle_ms")) && (rc = get_ms(c, e, "$.bounds.settle_ms", &b->settle_us)) < 0)
		return rc;
	if (v && (e = json_object_get(v, "catch_up_ms")) &&
	    (rc = get_ms(c, e, "$.bounds.catch_up_ms", &b->catch_up_us)) < 0)
		return rc;
	if ((sc->checkers & SIM_CHECK_CATCH_UP) && b->catch_up_us == SIM_NEVER)
		return missing(c, "$.bounds", "catch_up_ms",
			       " (the catch_up checker needs it: how long nodes have after the last fault window)");
	return 0;
}

/* ---- the whole file ---- */

/* The default scenario name: the base name of src without ".json". */
static char *default_name(const char *src)
{
	const char *base = strrchr(src, '/');
	base = base ? base + 1 : src;
	size_t len = strlen(base);
	if (len > 5 && strcmp(base + len - 5, ".json") == 0)
		len -= 5;
	if (len == 0)
		return xstrndup("scenario", 8);
	return xstrndup(base, len);
}

static int parse_root(struct ctx *c, struct sim_scenario *sc, const json_t *root)
{
	const json_t *e;
	unsigned int u;
	int rc;

	if (!json_is_object(root))
		return fail(c, "$", "expected an object, got %s", DESC(root));
	if ((rc = check_keys(c, root, "$", root_keys, NULL)) < 0)
		return rc;

	if ((e = json_object_get(root, "name"))) {
		if ((rc = get_name(c, e, "$.name", MAX_NAME, &sc->name)) < 0)
			return rc;
	} else {
		sc->name = default_name(c->src);
	}

	if (!(e = json_object_get(root, "n")))
		return missing(c, "$", "n", " (the number of nodes)");
	if ((rc = get_u32(c, e, "$.n", 1, SIM_MAX_NODES, &sc->n)) < 0)
		return rc;
	c->n = sc->n;

	sc->f = (sc->n - 1) / 3;
	if ((e = json_object_get(root, "f"))) {
		if (!json_is_integer(e) || json_integer_value(e) < 0 ||
		    (uint64_t)json_integer_value(e) > (sc->n - 1) / 3)
			return fail(c, "$.f", "expected an integer with 3f+1 <= n (0 to %u for n = %u), got %s",
				    (sc->n - 1) / 3, sc->n, DESC(e));
		sc->f = (uint32_t)json_integer_value(e);
	}

	if (!(e = json_object_get(root, "protocol")))
		return missing(c, "$", "protocol", " (e.g. \"beb\")");
	if ((rc = get_name(c, e, "$.protocol", MAX_NAME, &sc->protocol)) < 0)
		return rc;
	if ((e = json_object_get(root, "params")) && (rc = get_params(c, e, "$.params", &sc->params, &sc->plen)) < 0)
		return rc;

	sc->net.latency.kind = SIM_LAT_CONSTANT;
	sc->net.latency.a_us = sc->net.latency.min_us = sc->net.latency.max_us = 1000;
	if ((e = json_object_get(root, "network")) && (rc = parse_network(c, &sc->net, e, "$.network")) < 0)
		return rc;
	if ((e = json_object_get(root, "faults")) && (rc = parse_faults(c, sc, e, "$.faults")) < 0)
		return rc;
	if ((e = json_object_get(root, "workload")) && (rc = parse_workload(c, sc, e, "$.workload")) < 0)
		return rc;
	if ((e = json_object_get(root, "store")) && (rc = parse_store(c, sc, e, "$.store")) < 0)
		return rc;
	if ((e = json_object_get(root, "channel")) && (rc = parse_channel(c, sc, e, "$.channel")) < 0)
		return rc;

	if (!(e = json_object_get(root, "duration_ms")))
		return missing(c, "$", "duration_ms", " (how long each run lasts, in virtual milliseconds)");
	if ((rc = get_ms_positive(c, e, "$.duration_ms", &sc->duration_us)) < 0)
		return rc;

	if ((e = json_object_get(root, "seeds"))) {
		if ((rc = parse_seeds(c, sc, e, "$.seeds")) < 0)
			return rc;
	} else {
		sc->seeds = weft_xmalloc(sizeof(*sc->seeds));
		sc->seeds[0] = 1;
		sc->nseeds = 1;
	}
	if ((e = json_object_get(root, "checkers")) && (rc = parse_checkers(c, sc, e, "$.checkers")) < 0)
		return rc;
	if ((e = json_object_get(root, "expect_violation")) &&
	    (rc = get_bool(c, e, "$.expect_violation", &sc->expect_violation)) < 0)
		return rc;
	u = SIM_KV_LMDB;
	if ((e = json_object_get(root, "kv")) &&
	    (rc = get_enum(c, e, "$.kv", "kv store", kv_names, COUNT(kv_names), &u)) < 0)
		return rc;
	sc->kv = (enum sim_kv_kind)u;
	u = SIM_SIG_ED25519;
	if ((e = json_object_get(root, "signatures")) &&
	    (rc = get_enum(c, e, "$.signatures", "signature scheme", sig_names, COUNT(sig_names),
			   &u)) < 0)
		return rc;
	sc->signatures = (enum sim_sig_kind)u;
	return parse_bounds(c, sc, json_object_get(root, "bounds"));
}

/* Reports a jansson load error: syntax errors with line and column. */
static int load_fail(struct ctx *c, const json_error_t *je)
{
	if (c->err && c->errlen) {
		if (je->line > 0)
			snprintf(c->err, c->errlen, "%s: line %d, column %d: %s", c->src, je->line, je->column,
				 je->text);
		else
			snprintf(c->err, c->errlen, "%s: %s", c->src, je->text);
	}
	return json_error_code(je) == json_error_cannot_open_file ? WEFT_EIO : WEFT_EINVAL;
}

static int build(struct sim_scenario *sc, struct ctx *c, json_t *root)
{
	int rc = parse_root(c, sc, root);
	json_decref(root);
	if (rc < 0)
		sim_scenario_free(sc);
	else if (c->err && c->errlen)
		c->err[0] = '\0';
	return rc;
}

int sim_scenario_load(struct sim_scenario *sc, const char *path, char *err, size_t errlen)
{
	struct ctx c = {.src = path ? path : "(null)", .err = err, .errlen = errlen};
	json_error_t je;

	memset(sc, 0, sizeof(*sc));
	if (!path)
		return fail(&c, "$", "no scenario file given");
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return load_fail(&c, &je);
	return build(sc, &c, root);
}

int sim_scenario_parse(struct sim_scenario *sc, const char *json, const char *name, char *err, size_t errlen)
{
	struct ctx c = {.src = name && *name ? name : "scenario", .err = err, .errlen = errlen};
	json_error_t je;

	memset(sc, 0, sizeof(*sc));
	if (!json)
		return fail(&c, "$", "no scenario text given");
	json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return load_fail(&c, &je);
	return build(sc, &c, root);
}

void sim_scenario_free(struct sim_scenario *sc)
{
	if (!sc)
		return;
	free(sc->name);
	free(sc->protocol);
	free(sc->params);
	if (sc->net.out)
		for (uint32_t i = 0; i < sc->n; i++)
			free(sc->net.out[i]);
	free(sc->net.out);
	free(sc->net.out_len);
	for (size_t i = 0; i < sc->nfaults; i++) {
		struct sim_fault *f = &sc->faults[i];
		free(f->nodes);
		free(f->peers);
		if (f->groups)
			for (uint32_t g = 0; g < f->ngroups; g++)
				free(f->groups[g]);
		free(f->groups);
		free(f->group_len);
		free(f->strategy);
		free(f->params);
		free(f->after.text);
		free(f->after.contains);
	}
	free(sc->faults);
	for (size_t i = 0; i < sc->nwork; i++)
		free(sc->work[i].nodes);
	free(sc->work);
	free(sc->store.readers);
	free(sc->seeds);
	memset(sc, 0, sizeof(*sc));
}

uint32_t sim_scenario_faulty(const struct sim_scenario *sc, bool *faulty)
{
	bool *mark = faulty ? faulty : weft_xcalloc(sc->n, sizeof(*mark));
	uint32_t count = 0;

	memset(mark, 0, (size_t)sc->n * sizeof(*mark));
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct sim_fault *f = &sc->faults[i];
		bool bad = false;
		switch (f->kind) {
		case SIM_FAULT_CRASH:
		case SIM_FAULT_OMISSION:
		case SIM_FAULT_CORRUPT:
		case SIM_FAULT_EQUIVOCATE:
		case SIM_FAULT_TWINS:
		case SIM_FAULT_ADVERSARY:
			bad = true;
			break;
		case SIM_FAULT_CRASH_RECOVER:
		case SIM_FAULT_DELAY:
		case SIM_FAULT_LOSS:
		case SIM_FAULT_PARTITION:
		case SIM_FAULT_CUT:
		case SIM_FAULT_SKEW:
			bad = false;
			break;
		}
		if (!bad)
			continue;
		for (uint32_t k = 0; k < f->nnodes; k++) {
			uint32_t node = f->nodes[k];
			if (node < sc->n && !mark[node]) {
				mark[node] = true;
				count++;
			}
		}
	}
	if (!faulty)
		free(mark);
	return count;
}
