/* scenario_write.c - a scenario back to JSON: the inverse of scenario.c.
 *
 * sim_scenario_to_json writes every field the parser fills, defaults
 * included, so that parsing the result gives an equal struct
 * (tests/unit/sim_scenario_write.c checks this on every scenario file).
 * Only values that mean "absent" are left out: a fault that never ends
 * has no until_ms, a scenario without protocol parameters no params.
 * Times go out as milliseconds, whole ones as integers.
 *
 * sim_scenario_text lays such an object out the way the files in
 * tests/sim are written (one top-level key per line, one fault or
 * workload line per line) with every real number in the shortest form
 * that reads back to the same double.  The search writes shrunk scenarios
 * with both (search.c). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/faults.h"
#include "weft/json.h"

#include "sim.h"

static json_t *ms(uint64_t us)
{
	if (us % 1000 == 0)
		return json_integer((json_int_t)(us / 1000));
	return json_real((double)us / 1000.0);
}

static json_t *node_list(const uint32_t *nodes, uint32_t len)
{
	json_t *a = json_array();
	for (uint32_t i = 0; i < len; i++)
		json_array_append_new(a, json_integer(nodes[i]));
	return a;
}

/* A protocol or strategy parameter map (msgpack) as the JSON it came from. */
static json_t *params(const uint8_t *mp, size_t len)
{
	json_t *v = NULL;
	if (weft_mp_buf_to_json(mp, len, &v) != 0)
		abort(); /* the parser wrote these bytes from JSON */
	return v;
}

static const char *fault_name(enum sim_fault_kind kind)
{
	switch (kind) {
	case SIM_FAULT_CRASH: return weft_fault_name(WEFT_FAULT_CRASH);
	case SIM_FAULT_CRASH_RECOVER: return weft_fault_name(WEFT_FAULT_CRASH_RECOVER);
	case SIM_FAULT_OMISSION: return weft_fault_name(WEFT_FAULT_OMISSION);
	case SIM_FAULT_DELAY: return weft_fault_name(WEFT_FAULT_DELAY);
	case SIM_FAULT_PARTITION: return weft_fault_name(WEFT_FAULT_PARTITION);
	case SIM_FAULT_CORRUPT: return weft_fault_name(WEFT_FAULT_CORRUPT);
	case SIM_FAULT_EQUIVOCATE: return weft_fault_name(WEFT_FAULT_EQUIVOCATE);
	case SIM_FAULT_TWINS: return weft_fault_name(WEFT_FAULT_TWINS);
	case SIM_FAULT_ADVERSARY: return weft_fault_name(WEFT_FAULT_ADVERSARY);
	case SIM_FAULT_LOSS: return weft_fault_name(WEFT_FAULT_LOSS);
	case SIM_FAULT_CUT: return weft_fault_name(WEFT_FAULT_CUT);
	case SIM_FAULT_SKEW: return weft_fault_name(WEFT_FAULT_SKEW);
	}
	return "";
}

static const char *lose_name(enum sim_lose lose)
{
	switch (lose) {
	case SIM_LOSE_NONE: return "none";
	case SIM_LOSE_STORE: return "store";
	case SIM_LOSE_LAST_STEP: return "last_step";
	}
	return "";
}

static const char *direction_name(const struct sim_fault *f)
{
	return f->sends && f->receives ? "both" : f->sends ? "send" : "receive";
}

/* "peers", left out when empty (every peer). */
static void peers(json_t *o, const struct sim_fault *f)
{
	if (f->npeers)
		json_object_set_new(o, "peers", node_list(f->peers, f->npeers));
}

static const char *corrupt_name(enum sim_corrupt_mode mode)
{
	switch (mode) {
	case SIM_CORRUPT_BITFLIP: return "bitflip";
	case SIM_CORRUPT_TRUNCATE: return "truncate";
	}
	return "";
}

static const char *kv_name(enum sim_kv_kind kv)
{
	switch (kv) {
	case SIM_KV_LMDB: return "lmdb";
	case SIM_KV_MEMORY: return "memory";
	}
	return "";
}

static const char *signature_name(enum sim_sig_kind sig)
{
	switch (sig) {
	case SIM_SIG_ED25519: return "ed25519";
	case SIM_SIG_FAST: return "fast";
	}
	return "";
}

static json_t *latency(const struct sim_latency *l)
{
	switch (l->kind) {
	case SIM_LAT_CONSTANT:
		return json_pack("{s:s, s:o}", "dist", "constant", "ms", ms(l->a_us));
	case SIM_LAT_UNIFORM:
		return json_pack("{s:s, s:o, s:o}", "dist", "uniform", "min_ms", ms(l->a_us), "max_ms", ms(l->b_us));
	case SIM_LAT_NORMAL:
		return json_pack("{s:s, s:o, s:o, s:o, s:o}", "dist", "normal", "mean_ms", ms(l->a_us), "stddev_ms",
				 ms(l->b_us), "min_ms", ms(l->min_us), "max_ms", ms(l->max_us));
	}
	return json_null();
}

static json_t *network(const struct sim_network *net, uint32_t n)
{
	json_t *o = json_object();
	json_object_set_new(o, "latency", latency(&net->latency));
	if (net->bandwidth_bps % 1000000 == 0)
		json_object_set_new(o, "bandwidth_mbps", json_integer((json_int_t)(net->bandwidth_bps / 1000000)));
	else
		json_object_set_new(o, "bandwidth_mbps", json_real((double)net->bandwidth_bps / 1e6));
	json_object_set_new(o, "loss", json_real(net->loss));
	json_object_set_new(o, "duplicate", json_real(net->duplicate));
	if (net->reorder > 0 || net->reorder_us > 0)
		json_object_set_new(o, "reorder",
				    json_pack("{s:f, s:o}", "probability", net->reorder, "max_ms", ms(net->reorder_us)));
	if (net->directed) {
		json_t *lists = json_array();
		for (uint32_t i = 0; i < n; i++)
			json_array_append_new(lists, node_list(net->out[i], net->out_len[i]));
		json_object_set_new(o, "topology", json_pack("{s:o}", "directed", lists));
	} else {
		json_object_set_new(o, "topology", json_string("complete"));
	}
	return o;
}

/* "after": the protocol event that starts a fault's window. */
static json_t *trigger(const struct sim_trigger *t)
{
	json_t *o = json_pack("{s:i}", "node", (json_int_t)t->node);
	switch (t->kind) {
	case SIM_TRIGGER_NONE:
		break;
	case SIM_TRIGGER_LOG:
		json_object_set_new(o, "log", json_string(t->text));
		break;
	case SIM_TRIGGER_EVENT:
		json_object_set_new(o, "event", json_string(t->text));
		if (t->contains)
			json_object_set_new(o, "contains", json_string(t->contains));
		break;
	case SIM_TRIGGER_DELIVERIES:
		json_object_set_new(o, "deliveries", json_integer((json_int_t)t->deliveries));
		break;
	}
	return o;
}

/* The window: at_ms and until_ms, or after, delay_ms and for_ms. */
static void window(json_t *o, const struct sim_fault *f)
{
	if (f->after.kind == SIM_TRIGGER_NONE) {
		json_object_set_new(o, "at_ms", ms(f->start_us));
		if (f->stop_us != SIM_NEVER)
			json_object_set_new(o, "until_ms", ms(f->stop_us));
		return;
	}
	json_object_set_new(o, "after", trigger(&f->after));
	json_object_set_new(o, "delay_ms", ms(f->start_us));
	if (f->stop_us != SIM_NEVER)
		json_object_set_new(o, "for_ms", ms(f->stop_us - f->start_us));
}

static json_t *fault(const struct sim_fault *f)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(fault_name(f->kind)));
	if (f->kind == SIM_FAULT_CUT) {
		json_object_set_new(o, "from", node_list(f->nodes, f->nnodes));
		json_object_set_new(o, "to", node_list(f->peers, f->npeers));
	} else if (f->kind != SIM_FAULT_PARTITION) {
		json_object_set_new(o, "nodes", node_list(f->nodes, f->nnodes));
	}
	window(o, f);
	switch (f->kind) {
	case SIM_FAULT_CRASH:
	case SIM_FAULT_TWINS:
	case SIM_FAULT_CUT:
		break;
	case SIM_FAULT_CRASH_RECOVER:
		json_object_set_new(o, "lose", json_string(lose_name(f->lose)));
		break;
	case SIM_FAULT_LOSS:
		json_object_set_new(o, "probability", json_real(f->probability));
		peers(o, f);
		json_object_set_new(o, "direction", json_string(direction_name(f)));
		break;
	case SIM_FAULT_OMISSION:
		peers(o, f);
		json_object_set_new(o, "direction", json_string(direction_name(f)));
		break;
	case SIM_FAULT_DELAY:
		peers(o, f);
		json_object_set_new(o, "ms", ms(f->delay_us));
		json_object_set_new(o, "jitter_ms", ms(f->jitter_us));
		break;
	case SIM_FAULT_SKEW:
		json_object_set_new(o, "rate", json_real(f->rate));
		json_object_set_new(o, "offset_ms", ms(f->offset_us));
		break;
	case SIM_FAULT_PARTITION: {
		json_t *groups = json_array();
		for (uint32_t g = 0; g < f->ngroups; g++)
			json_array_append_new(groups, node_list(f->groups[g], f->group_len[g]));
		json_object_set_new(o, "groups", groups);
		break;
	}
	case SIM_FAULT_CORRUPT:
		json_object_set_new(o, "probability", json_real(f->probability));
		json_object_set_new(o, "mode", json_string(corrupt_name(f->corrupt)));
		break;
	case SIM_FAULT_EQUIVOCATE:
		json_object_set_new(o, "audience", node_list(f->peers, f->npeers));
		break;
	case SIM_FAULT_ADVERSARY:
		json_object_set_new(o, "strategy", json_string(f->strategy));
		if (f->plen)
			json_object_set_new(o, "params", params(f->params, f->plen));
		break;
	}
	return o;
}

/* "all" for the nodes 0 .. n-1 in order, the list otherwise. */
static json_t *work_nodes(const struct sim_workload *w, uint32_t n)
{
	bool all = w->nnodes == n;
	for (uint32_t i = 0; all && i < n; i++)
		all = w->nodes[i] == i;
	return all ? json_string("all") : node_list(w->nodes, w->nnodes);
}

/* A range {"from", "to"} for three or more consecutive seeds, a list otherwise. */
static json_t *seeds(const uint64_t *s, size_t len)
{
	bool range = len >= 3;
	for (size_t i = 1; range && i < len; i++)
		range = s[i] == s[0] + i;
	if (range)
		return json_pack("{s:I, s:I}", "from", (json_int_t)s[0], "to", (json_int_t)s[len - 1]);
	json_t *a = json_array();
	for (size_t i = 0; i < len; i++)
		json_array_append_new(a, json_integer((json_int_t)s[i]));
	return a;
}

json_t *sim_scenario_to_json(const struct sim_scenario *sc)
{
	json_t *o = json_object();
	if (sc->name)
		json_object_set_new(o, "name", json_string(sc->name));
	json_object_set_new(o, "n", json_integer(sc->n));
	json_object_set_new(o, "f", json_integer(sc->f));
	json_object_set_new(o, "protocol", json_string(sc->protocol));
	if (sc->plen)
		json_object_set_new(o, "params", params(sc->params, sc->plen));
	json_object_set_new(o, "network", network(&sc->net, sc->n));
	json_t *faults = json_array();
	for (size_t i = 0; i < sc->nfaults; i++)
		json_array_append_new(faults, fault(&sc->faults[i]));
	json_object_set_new(o, "faults", faults);
	json_t *work = json_array();
	for (size_t i = 0; i < sc->nwork; i++) {
		const struct sim_workload *w = &sc->work[i];
		json_array_append_new(work, json_pack("{s:o, s:o, s:o, s:I, s:I}", "nodes", work_nodes(w, sc->n),
						      "start_ms", ms(w->start_us), "every_ms", ms(w->every_us), "count",
						      (json_int_t)w->count, "size", (json_int_t)w->size));
	}
	json_object_set_new(o, "workload", work);
	if (sc->store.on) {
		const struct sim_store_work *w = &sc->store;
		json_t *readers = json_array();
		for (uint32_t i = 0; i < w->nreaders; i++)
			json_array_append_new(readers, json_integer(w->readers[i]));
		json_object_set_new(o, "store",
				    json_pack("{s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o}", "node", (json_int_t)w->putter,
					      "chunks", (json_int_t)w->chunks, "size", (json_int_t)w->size, "k",
					      (json_int_t)w->k, "start_ms", ms(w->start_us), "every_ms", ms(w->every_us),
					      "get_ms", ms(w->get_us), "readers", readers));
	}
	if (sc->channel.on) {
		const struct sim_channel_work *w = &sc->channel;
		static const char *const close_names[] = {[SIM_CHAN_CLOSE_NONE] = "none",
							  [SIM_CHAN_CLOSE_COOPERATIVE] = "cooperative",
							  [SIM_CHAN_CLOSE_UNILATERAL] = "unilateral"};
		json_t *ch = json_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:o, s:o, s:b, s:s, s:I}", "members",
				       (json_int_t)w->members, "deposit", (json_int_t)w->deposit, "hosts",
				       node_list(w->hosts, w->members), "payments", (json_int_t)w->payments, "batch",
				       (json_int_t)w->batch, "amount_max", (json_int_t)w->amount_max, "start_ms",
				       ms(w->start_us), "every_ms", ms(w->every_us), "root_after_batch",
				       (int)w->root_after_batch, "close", close_names[w->close], "closer",
				       (json_int_t)w->closer);
		if (w->close_us != SIM_NEVER)
			json_object_set_new(ch, "close_ms", ms(w->close_us));
		json_object_set_new(o, "channel", ch);
	}
	json_object_set_new(o, "duration_ms", ms(sc->duration_us));
	json_object_set_new(o, "seeds", seeds(sc->seeds, sc->nseeds));
	json_t *checkers = json_array();
	for (unsigned int bit = 1; bit && bit <= sc->checkers; bit <<= 1)
		if (sc->checkers & bit)
			json_array_append_new(checkers, json_string(sim_checker_name(bit)));
	json_object_set_new(o, "checkers", checkers);
	json_object_set_new(o, "expect_violation", json_boolean(sc->expect_violation));
	json_object_set_new(o, "kv", json_string(kv_name(sc->kv)));
	json_object_set_new(o, "signatures", json_string(signature_name(sc->signatures)));
	json_t *bounds = json_pack("{s:f}", "inclusion_min", sc->bounds.inclusion_min);
	if (sc->bounds.settle_us != SIM_NEVER)
		json_object_set_new(bounds, "settle_ms", ms(sc->bounds.settle_us));
	if (sc->bounds.catch_up_us != SIM_NEVER)
		json_object_set_new(bounds, "catch_up_ms", ms(sc->bounds.catch_up_us));
	json_object_set_new(bounds, "channel_progress_min", json_real(sc->bounds.channel_progress_min));
	json_object_set_new(o, "bounds", bounds);
	return o;
}

/* ---- text ---- */

/* The shortest decimal that reads back as d, with a '.' or an exponent so
 * that it reads back as a real, not an integer. */
static void put_real(FILE *out, double d)
{
	char buf[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	fprintf(out, "%s%s", buf, strpbrk(buf, ".e") ? "" : ".0");
}

/* A string, an integer, true, false or null as JSON text. */
static void put_scalar(FILE *out, const json_t *v)
{
	char *text = json_dumps(v, JSON_ENCODE_ANY);
	fputs(text, out);
	free(text);
}

static void put_key(FILE *out, const char *key)
{
	json_t *k = json_string(key);
	put_scalar(out, k);
	json_decref(k);
	fputs(": ", out);
}

/* v on one line: {"a": 1, "b": [2, 3]}. */
static void put_compact(FILE *out, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *key;
		json_t *val;
		const char *sep = "";
		fputc('{', out);
		json_object_foreach((json_t *)v, key, val) {
			fputs(sep, out);
			put_key(out, key);
			put_compact(out, val);
			sep = ", ";
		}
		fputc('}', out);
		return;
	}
	case JSON_ARRAY:
		fputc('[', out);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				fputs(", ", out);
			put_compact(out, json_array_get(v, i));
		}
		fputc(']', out);
		return;
	case JSON_REAL:
		put_real(out, json_real_value(v));
		return;
	case JSON_STRING:
	case JSON_INTEGER:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		put_scalar(out, v);
		return;
	}
}

char *sim_scenario_text(const json_t *scenario)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (out == NULL)
		abort();
	const char *key;
	json_t *val;
	const char *sep = "";
	fputs("{\n", out);
	json_object_foreach((json_t *)scenario, key, val) {
		fprintf(out, "%s  ", sep);
		put_key(out, key);
		sep = ",\n";
		if (!json_is_array(val) || json_array_size(val) == 0 || !json_is_object(json_array_get(val, 0))) {
			put_compact(out, val);
			continue;
		}
		fputs("[\n", out);
		for (size_t i = 0; i < json_array_size(val); i++) {
			fputs(i ? ",\n    " : "    ", out);
			put_compact(out, json_array_get(val, i));
		}
		fputs("\n  ]", out);
	}
	fputs("\n}\n", out);
	if (fclose(out) != 0)
		abort();
	return buf;
}
