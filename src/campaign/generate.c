/* generate.c - seeded random campaign manifests, as CometBFT's e2e
 * generator draws testnets and Jepsen's combined nemesis draws faults:
 * the committee's BRB and DAG mode, Byzantine nodes (at most f, each with a
 * strategy weftd --byzantine runs), the load rate, and a schedule of one
 * perturbation at a time on honest nodes (kill, pause, restart, disconnect,
 * a partition that isolates one node, cuts off a minority or makes a ring
 * of overlapping quorums, or a transport fault), each followed by a quiet
 * gap.  Only weft's xoshiro generator (weft/rng.h) draws, seeded from
 * (seed, index), so a manifest depends on nothing else: the runner writes
 * it next to its results and anyone can regenerate it. */
#include <stdio.h>
#include <string.h>

#include "weft/faults.h"
#include "weft/proto.h"
#include "weft/rng.h"

#include "campaign.h"

#define WARMUP_S 10   /* the first step starts this late */
#define TAIL_S 15     /* the last heal comes at least this long before the load ends */

static uint32_t pick(struct weft_rng *r, uint32_t n)
{
	return (uint32_t)weft_rng_below(r, n);
}

/* A uniformly random node of mask (not empty). */
static uint32_t pick_node(struct weft_rng *r, uint32_t mask)
{
	uint32_t k = pick(r, (uint32_t)__builtin_popcount(mask));
	for (uint32_t i = 0;; i++)
		if ((mask & (1u << i)) && k-- == 0)
			return i;
}

static json_t *node_array(uint32_t mask)
{
	json_t *a = json_array();
	for (uint32_t i = 0; i < CAMPAIGN_MAX_NODES; i++)
		if (mask & (1u << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

/* The nodes in a random order (Fisher-Yates). */
static void shuffle(struct weft_rng *r, uint32_t *order, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = pick(r, i), t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}

/* Jepsen's partition specs: one node alone; a minority ((n - 1) / 2 nodes)
 * against the rest; or a ring (in random order) in which each node still
 * reaches exactly a quorum of 2f + 1, itself and the f nearest on each
 * side, but no two nodes the same quorum: windows of f + 1 neighbours. */
static json_t *partition_groups(struct weft_rng *r, uint32_t n, uint32_t f)
{
	uint32_t order[CAMPAIGN_MAX_NODES];
	json_t *groups = json_array();
	uint32_t kind = pick(r, 3);

	shuffle(r, order, n);
	if (kind < 2) {
		uint32_t size = kind == 0 ? 1 : (n - 1) / 2, mask = 0;
		for (uint32_t i = 0; i < size; i++)
			mask |= 1u << order[i];
		json_array_append_new(groups, node_array(mask));
		return groups;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t mask = 0;
		for (uint32_t k = 0; k <= f; k++)
			mask |= 1u << order[(i + k) % n];
		json_array_append_new(groups, node_array(mask));
	}
	return groups;
}

/* What the schedule draws from, with weights (per 100). */
static const struct {
	enum weft_fault fault;
	uint32_t weight;
} perturbations[] = {
	{WEFT_FAULT_CRASH_RECOVER, 15}, {WEFT_FAULT_PAUSE, 10}, {WEFT_FAULT_RESTART, 10},
	{WEFT_FAULT_DISCONNECT, 10},    {WEFT_FAULT_PARTITION, 15}, {WEFT_FAULT_DELAY, 10},
	{WEFT_FAULT_OMISSION, 5},       {WEFT_FAULT_LOSS, 5},       {WEFT_FAULT_DUPLICATE, 5},
	{WEFT_FAULT_REORDER, 5},        {WEFT_FAULT_CORRUPT, 10},
};

static enum weft_fault pick_fault(struct weft_rng *r)
{
	uint32_t total = 0, k;
	for (size_t i = 0; i < sizeof(perturbations) / sizeof(perturbations[0]); i++)
		total += perturbations[i].weight;
	k = pick(r, total);
	for (size_t i = 0;; i++) {
		if (k < perturbations[i].weight)
			return perturbations[i].fault;
		k -= perturbations[i].weight;
	}
}

/* A number as a manifest writes it: an integer when it is one. */
static json_t *num(double v)
{
	return v == (double)(json_int_t)v ? json_integer((json_int_t)v) : json_real(v);
}

static double pick_of(struct weft_rng *r, const double *v, uint32_t n)
{
	return v[pick(r, n)];
}

/* One step starting at at_s on one of the honest nodes. */
static json_t *draw_step(struct weft_rng *r, uint32_t n, uint32_t f, uint32_t honest, double at_s, double for_s)
{
	static const double loss[] = {0.05, 0.1, 0.2, 0.3}, often[] = {0.1, 0.3, 0.5}, rare[] = {0.01, 0.05, 0.1};
	static const char *const dirs[] = {"send", "receive", "both"};
	enum weft_fault fault = pick_fault(r);
	json_t *s = json_pack("{s:s,s:o}", "fault", weft_fault_name(fault), "at_s", num(at_s));

	if (fault == WEFT_FAULT_PARTITION)
		json_object_set_new(s, "groups", partition_groups(r, n, f));
	else
		json_object_set_new(s, "nodes", node_array(1u << pick_node(r, honest)));
	switch (fault) {
	case WEFT_FAULT_RESTART: /* down for a moment: the clean stop takes most of it */
		for_s = 2 + pick(r, 4);
		break;
	case WEFT_FAULT_DELAY: {
		uint32_t ms = 50 * (1 + pick(r, 10));
		json_object_set_new(s, "delay_ms", json_integer(ms));
		json_object_set_new(s, "jitter_ms", json_integer(pick(r, ms / 2 + 1)));
		break;
	}
	case WEFT_FAULT_OMISSION:
		json_object_set_new(s, "direction", json_string(dirs[pick(r, 3)]));
		break;
	case WEFT_FAULT_LOSS:
		json_object_set_new(s, "direction", json_string(dirs[pick(r, 3)]));
		json_object_set_new(s, "probability", json_real(pick_of(r, loss, 4)));
		break;
	case WEFT_FAULT_DUPLICATE:
		json_object_set_new(s, "probability", json_real(pick_of(r, often, 3)));
		break;
	case WEFT_FAULT_REORDER:
		json_object_set_new(s, "probability", json_real(pick_of(r, often, 3)));
		json_object_set_new(s, "max_ms", json_integer(20 * (1 + pick(r, 10))));
		break;
	case WEFT_FAULT_CORRUPT:
		json_object_set_new(s, "probability", json_real(pick_of(r, rare, 3)));
		break;
	case WEFT_FAULT_CRASH:
	case WEFT_FAULT_CRASH_RECOVER:
	case WEFT_FAULT_PAUSE:
	case WEFT_FAULT_DISCONNECT:
	case WEFT_FAULT_PARTITION:
	case WEFT_FAULT_EQUIVOCATE:
	case WEFT_FAULT_TWINS:
	case WEFT_FAULT_ADVERSARY:
	case WEFT_FAULT_CUT:
	case WEFT_FAULT_SKEW: break;
	}
	json_object_set_new(s, "for_s", num(for_s));
	return s;
}

json_t *campaign_generate(uint64_t seed, uint32_t index, uint32_t nodes, double duration_s)
{
	static const char *const brbs[] = {"echo", "echo", "echo", "bracha", "coded", "amortized"};
	static const double rates[] = {10, 20, 50};
	const struct weft_proto_ops *ops = weft_proto_find("dag");
	uint32_t f = (nodes - 1) / 3, honest = nodes >= 32 ? UINT32_MAX : (1u << nodes) - 1;
	struct weft_rng r;
	char name[64];

	weft_rng_seed(&r, seed ^ (0x9e3779b97f4a7c15ull * (index + 1ull)));
	snprintf(name, sizeof(name), "random-%llu-%u", (unsigned long long)seed, index + 1);
	json_t *m = json_pack("{s:s,s:i,s:s,s:s}", "name", name, "nodes", (int)nodes, "protocol", "dag", "brb",
			      brbs[pick(&r, 6)]);
	if (pick(&r, 4) == 0) {
		json_object_set_new(m, "mode", json_string("dense"));
	} else {
		json_object_set_new(m, "mode", json_string("sparse"));
		json_object_set_new(m, "d", json_integer(1 + pick(&r, 3)));
	}

	/* Byzantine nodes, four campaigns in ten: weftd's own words or a
	 * strategy the DAG registers. */
	if (pick(&r, 10) < 4) {
		const char *names[WEFT_FAULT_COUNT + 32];
		uint32_t count = 0;
		for (const struct weft_proto_strategy *st = ops->strategies; st && st->name && count < 32; st++)
			names[count++] = st->name;
		for (int k = 0; k < WEFT_FAULT_COUNT; k++) {
			const char *word = weft_fault_name((enum weft_fault)k);
			enum weft_fault w;
			if (weft_fault_parse(word, strlen(word), WEFT_FAULT_IN_DAEMON, &w, NULL, 0) == 0)
				names[count++] = word;
		}
		json_t *byz = json_array();
		for (uint32_t k = 1 + pick(&r, f); k > 0; k--) {
			uint32_t node = pick_node(&r, honest);
			honest &= ~(1u << node);
			json_array_append_new(byz, json_pack("{s:i,s:s}", "node", (int)node, "strategy", names[pick(&r, count)]));
		}
		json_object_set_new(m, "byzantine", byz);
	}

	json_object_set_new(m, "load", json_pack("{s:o}", "rate", num(pick_of(&r, rates, 3))));
	json_object_set_new(m, "duration_s", num(duration_s));
	json_t *schedule = json_array();
	for (double t = WARMUP_S;;) {
		double for_s = 5 + pick(&r, 11);
		if (t + for_s + TAIL_S > duration_s)
			break;
		json_t *step = draw_step(&r, nodes, f, honest, t, for_s);
		t += json_number_value(json_object_get(step, "for_s")) + 5 + pick(&r, 6);
		json_array_append_new(schedule, step);
	}
	json_object_set_new(m, "schedule", schedule);
	json_object_set_new(m, "bounds", json_pack("{s:i}", "recover_s", 30));
	return m;
}
