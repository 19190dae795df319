/* sim_checkers.c - unit tests for weft-sim's property checkers
 * (src/sim/checkers.c): for each property a passing history and violating
 * ones built by hand (a missing delivery, conflicting digests, a double
 * delivery, a forged digest from a correct origin, a gap and a fork in
 * ordered logs, a duplicate digest, a request never output), checking the
 * violated bits, that unrelated bits stay clean, that faulty nodes are
 * ignored and that the first counterexample names the property and the
 * nodes; the history's growth and printer; then randomized histories
 * (n = 50) that pass and fail with exactly the property a single injected
 * corruption breaks.  Then the checkers that need more than the history:
 * inclusion_fraction (bounds, the settle window, faulty origins, the
 * report), catch_up (late, never, undecided at the end of the run, a node
 * that rejoins), state_hash (equal and diverging hashes, reading node
 * info), and logs across restarts (a gap right after a wiped restart, a
 * log replayed from scratch, gaps elsewhere, duplicates in one
 * incarnation). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "../tap.h"
#include "weft/bytes.h"

#define ALL 0x7fu
#define BCAST (ALL & ~(unsigned)SIM_CHECK_PREFIX)
#define V SIM_CHECK_VALIDITY
#define AG SIM_CHECK_AGREEMENT
#define IN SIM_CHECK_INTEGRITY
#define TO SIM_CHECK_TOTALITY
#define PR SIM_CHECK_PREFIX
#define ND SIM_CHECK_NO_DUP
#define IC SIM_CHECK_INCLUSION

static struct sim_history H;
static struct sim_verdict v;
static const bool all4[4] = {true, true, true, true};

/* A digest whose first four bytes are tag (big-endian), the rest derived from it. */
static void dg(uint8_t out[WEFT_DIGEST_LEN], uint32_t tag)
{
	weft_be32_put(out, tag);
	uint64_t x = tag * 0x9e3779b97f4a7c15ULL + 1;
	for (int i = 4; i < WEFT_DIGEST_LEN; i++) {
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ULL;
		out[i] = (uint8_t)(x >> 56);
	}
}

static size_t req(uint64_t t_us, uint32_t node, uint32_t tag)
{
	struct sim_hist_event e;
	memset(&e, 0, sizeof(e));
	e.time_us = t_us;
	e.kind = SIM_H_REQUEST;
	e.node = e.origin = node;
	dg(e.digest, tag);
	sim_history_add(&H, &e);
	return H.len - 1;
}

static size_t del(uint64_t t_us, uint32_t node, uint32_t origin, uint64_t seq, uint32_t tag)
{
	struct sim_hist_event e;
	memset(&e, 0, sizeof(e));
	e.time_us = t_us;
	e.kind = SIM_H_DELIVER;
	e.node = node;
	e.origin = origin;
	e.seq = seq;
	dg(e.digest, tag);
	sim_history_add(&H, &e);
	return H.len - 1;
}

static size_t inv(uint64_t t_us, uint32_t node, uint32_t origin, uint64_t seq)
{
	size_t i = del(t_us, node, origin, seq, 0);
	H.ev[i].invalid = true;
	memset(H.ev[i].digest, 0, WEFT_DIGEST_LEN);
	return i;
}

static void reset(void)
{
	sim_history_free(&H);
}

/* The bounds a scenario without "bounds" has. */
static const struct sim_bounds default_bounds = {.inclusion_min = 1.0, .settle_us = SIM_NEVER,
						  .catch_up_us = SIM_NEVER};

static int check(uint32_t n, const bool *correct, unsigned int checkers)
{
	struct sim_check_input in = {.n = n, .correct = correct, .checkers = checkers, .bounds = default_bounds,
				     .duration_us = SIM_NEVER, .faults_end_us = SIM_NEVER};
	memset(&v, 0xa5, sizeof(v));
	return sim_check(&H, &in, &v, NULL);
}

static struct sim_measures M;

/* Runs the checkers with everything else a run hands them. */
static int check_run(uint32_t n, const bool *correct, unsigned int checkers, struct sim_bounds bounds,
		     uint64_t duration_us, uint64_t faults_end_us, const struct sim_node_state *states)
{
	struct sim_check_input in = {.n = n, .correct = correct, .checkers = checkers, .bounds = bounds,
				     .duration_us = duration_us, .faults_end_us = faults_end_us, .states = states};
	sim_measures_free(&M);
	memset(&v, 0xa5, sizeof(v));
	return sim_check(&H, &in, &v, &M);
}

static size_t restart(uint64_t t_us, uint32_t node, bool wiped)
{
	struct sim_hist_event e;
	memset(&e, 0, sizeof(e));
	e.time_us = t_us;
	e.kind = SIM_H_RESTART;
	e.node = node;
	e.wiped = wiped;
	sim_history_add(&H, &e);
	return H.len - 1;
}

static bool has(const char *needle)
{
	bool yes = strstr(v.first, needle) != NULL;
	if (!yes)
		diag("'%s' not in '%s'", needle, v.first);
	return yes;
}

/* Four correct nodes each broadcast one payload (tag 0xaaaa0000 + origin,
 * seq 0) and every node delivers all four; returns nothing, H is filled. */
static void good_broadcast(void)
{
	reset();
	for (uint32_t o = 0; o < 4; o++)
		req(1000 * (o + 1), o, 0xaaaa0000 + o);
	for (uint32_t o = 0; o < 4; o++)
		for (uint32_t j = 0; j < 4; j++)
			del(10000 + 1000 * o + 100 * j, j, o, 0, 0xaaaa0000 + o);
}

static void test_names_and_history(void)
{
	is_str(sim_checker_name(V), "validity", "name of validity");
	is_str(sim_checker_name(AG), "agreement", "name of agreement");
	is_str(sim_checker_name(IN), "integrity", "name of integrity");
	is_str(sim_checker_name(TO), "totality", "name of totality");
	is_str(sim_checker_name(PR), "prefix", "name of prefix");
	is_str(sim_checker_name(ND), "no_duplicates", "name of no_duplicates");
	is_str(sim_checker_name(IC), "inclusion", "name of inclusion");
	is_str(sim_checker_name(SIM_CHECK_INCLUSION_FRACTION), "inclusion_fraction", "name of inclusion_fraction");
	is_str(sim_checker_name(SIM_CHECK_CATCH_UP), "catch_up", "name of catch_up");
	is_str(sim_checker_name(SIM_CHECK_STATE_HASH), "state_hash", "name of state_hash");
	is_str(sim_checker_name(SIM_CHECK_STORE_INTEGRITY), "store_integrity", "name of store_integrity");
	is_str(sim_checker_name(SIM_CHECK_STORE_AVAILABILITY), "store_availability", "name of store_availability");
	is_str(sim_checker_name(1u << 12), "unknown", "name of an unknown bit");

	reset();
	bool same = true;
	for (uint32_t i = 0; i < 5000; i++)
		del(i, i % 7, i % 3, i, i);
	for (uint32_t i = 0; i < 5000; i++) {
		uint8_t d[WEFT_DIGEST_LEN];
		dg(d, i);
		if (H.ev[i].time_us != i || H.ev[i].node != i % 7 || H.ev[i].seq != i ||
		    memcmp(H.ev[i].digest, d, sizeof(d)) != 0)
			same = false;
	}
	ok(H.len == 5000 && H.cap >= H.len && same, "sim_history_add keeps 5000 events in order");
	sim_history_free(&H);
	ok(H.ev == NULL && H.len == 0 && H.cap == 0, "sim_history_free empties the history");
	sim_history_free(&H);
	ok(1, "sim_history_free twice is harmless");

	is_int(check(4, all4, ALL), 0, "empty history: nothing violated");
	ok(v.checked == ALL && v.violated == 0 && v.first[0] == '\0', "empty history: all checked, no message");
	is_int(check(4, all4, 0), 0, "no checkers selected");
	is_int(v.checked, 0, "no checkers selected: nothing checked");
	is_int(check(4, all4, ALL | 0x1000), 0, "unknown bits are ignored");
	is_int(v.checked, ALL, "unknown bits are not reported as checked");
}

static void test_print_around(void)
{
	good_broadcast();
	inv(20000, 1, 2, 7);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	sim_history_print_around(f, &H, 3, 1);
	fclose(f);
	is_str(buf,
	       "  [2] t=3.000ms node=2 REQUEST digest=aaaa0002\n"
	       "> [3] t=4.000ms node=3 REQUEST digest=aaaa0003\n"
	       "  [4] t=10.000ms node=0 DELIVER origin=0 seq=0 digest=aaaa0000\n",
	       "print_around marks the event and shows its neighbours");
	free(buf);

	f = open_memstream(&buf, &len);
	sim_history_print_around(f, &H, H.len - 1, 1);
	sim_history_print_around(f, &H, 0, 0);
	fclose(f);
	is_str(buf,
	       "  [19] t=13.300ms node=3 DELIVER origin=3 seq=0 digest=aaaa0003\n"
	       "> [20] t=20.000ms node=1 DELIVER origin=2 seq=7 invalid\n"
	       "> [0] t=1.000ms node=0 REQUEST digest=aaaa0000\n",
	       "print_around clamps at both ends and shows invalid verdicts");
	free(buf);
}

static void test_validity(void)
{
	good_broadcast();
	is_int(check(4, all4, ALL), 1, "good broadcast: only prefix fails (seq is not a log position)");
	is_int(check(4, all4, BCAST), 0, "good broadcast passes every broadcast property");
	ok(v.checked == BCAST && v.violated == 0, "good broadcast: checked bits, nothing violated");

	/* node 2 never delivers origin 0's payload */
	reset();
	for (uint32_t o = 0; o < 4; o++)
		req(1000 * (o + 1), o, 0xaaaa0000 + o);
	for (uint32_t o = 0; o < 4; o++)
		for (uint32_t j = 0; j < 4; j++)
			if (!(o == 0 && j == 2))
				del(10000 + 1000 * o + 100 * j, j, o, 0, 0xaaaa0000 + o);
	is_int(check(4, all4, BCAST), 3, "missing delivery: three properties fail");
	is_int(v.violated, V | TO | IC, "missing delivery: validity, totality and inclusion");
	is_str(v.first,
	       "validity: node 0 requested aaaa0000 at 1.000 ms but node 2 never delivered it from origin 0 "
	       "(3 of 4 correct nodes did)",
	       "validity counterexample names the requester, the missing node and the time");
	is_int((long long)v.first_event, 0, "validity points at the request");
	is_int(check(4, all4, V), 1, "validity alone");
	ok(v.checked == V && v.violated == V, "validity alone: only its bit checked and violated");

	bool no2[4] = {true, true, false, true};
	is_int(check(4, no2, BCAST), 0, "missing delivery at a faulty node is ignored");

	/* a faulty node's request that nobody delivers */
	good_broadcast();
	req(50000, 3, 0xbbbb0000);
	bool no3[4] = {true, true, true, false};
	is_int(check(4, no3, BCAST), 0, "a faulty node's request need not be delivered");
	is_int(check(4, all4, V | IC), 2, "the same request by a correct node must be");

	/* delivered under another origin: inclusion holds, validity does not */
	reset();
	req(1000, 0, 0xaaaa0000);
	for (uint32_t j = 0; j < 4; j++)
		del(5000 + j, j, j == 2 ? 1 : 0, j == 2 ? 9 : 0, 0xaaaa0000);
	check(4, all4, V | IC);
	is_int(v.violated, V, "payload output under another origin: validity fails, inclusion holds");
	ok(has("node 2 never delivered it from origin 0"), "validity names node 2");

	/* another seq is fine for validity */
	reset();
	req(1000, 0, 0xaaaa0000);
	for (uint32_t j = 0; j < 4; j++)
		del(5000 + j, j, 0, j == 2 ? 4 : 0, 0xaaaa0000);
	check(4, all4, V);
	is_int(v.violated, 0, "validity matches by (origin, digest), not seq");

	/* an invalid verdict does not deliver the payload */
	reset();
	req(1000, 0, 0xaaaa0000);
	for (uint32_t j = 0; j < 4; j++) {
		if (j == 3)
			inv(5000 + j, j, 0, 0);
		else
			del(5000 + j, j, 0, 0, 0xaaaa0000);
	}
	check(4, all4, V);
	is_int(v.violated, V, "an invalid verdict does not satisfy validity");
	ok(has("node 3 never delivered"), "validity names node 3");
}

static void test_agreement(void)
{
	reset();
	req(1000, 0, 0x9f3a22c1);
	del(12400, 1, 0, 3, 0x9f3a22c1);
	del(13100, 2, 0, 3, 0x00ab13f2);
	is_int(check(4, all4, AG), 1, "conflicting digests violate agreement");
	is_int(v.violated, AG, "only agreement was asked for");
	is_str(v.first,
	       "agreement: node 1 delivered (origin 0, seq 3) = 9f3a22c1 at 12.400 ms but node 2 delivered "
	       "(origin 0, seq 3) = 00ab13f2 at 13.100 ms",
	       "agreement counterexample");
	is_int((long long)v.first_event, 2, "agreement points at the later delivery");
	bool no2[4] = {true, true, false, true};
	is_int(check(4, no2, AG), 0, "a faulty node's conflicting delivery is ignored");
	check(4, all4, BCAST);
	ok((v.violated & AG) && !(v.violated & ND), "agreement with all checkers: no_duplicates stays clean");

	/* invalid against a digest */
	reset();
	del(1000, 0, 3, 0, 0x11111111);
	inv(2000, 1, 3, 0);
	check(4, all4, AG);
	is_int(v.violated, AG, "invalid against a digest violates agreement");
	ok(has("= invalid at 2.000 ms") && has("node 0 delivered (origin 3, seq 0) = 11111111"),
	   "the message shows both outcomes");

	/* all invalid: agreement holds */
	reset();
	for (uint32_t j = 0; j < 4; j++)
		inv(1000 + j, j, 3, 0);
	bool no3[4] = {true, true, true, false};
	is_int(check(4, no3, BCAST), 0, "all correct nodes agree on invalid for a faulty origin");
	check(4, all4, BCAST);
	is_int(v.violated, IN, "invalid for a correct origin violates integrity only");
	ok(has("integrity: node 0 delivered (origin 3, seq 0) = invalid") && has("cannot be judged"),
	   "integrity names the invalid verdict");

	/* one node twice with different digests, nobody else: not agreement */
	reset();
	del(1000, 1, 3, 0, 0x11111111);
	del(2000, 1, 3, 0, 0x22222222);
	check(4, all4, AG | IN);
	is_int(v.violated, IN, "one node's two outcomes alone break integrity, not agreement");

	/* A by 1, A by 2, then B by 1: nodes 1 and 2 disagree */
	reset();
	del(1000, 1, 3, 0, 0x11111111);
	del(2000, 2, 3, 0, 0x11111111);
	size_t last = del(3000, 1, 3, 0, 0x22222222);
	check(4, all4, AG);
	is_int(v.violated, AG, "first deliverer changing its mind after another node delivered");
	is_int((long long)v.first_event, (long long)last, "points at the changed delivery");
	ok(has("node 2 delivered (origin 3, seq 0) = 11111111 at 2.000 ms but node 1 delivered (origin 3, seq 0) = "
	       "22222222 at 3.000 ms"),
	   "names node 2 and node 1");

	/* A by 1, B by 1, then A by 2: nodes 1 and 2 disagree */
	reset();
	del(1000, 1, 3, 0, 0x11111111);
	del(2000, 1, 3, 0, 0x22222222);
	last = del(3000, 2, 3, 0, 0x11111111);
	check(4, all4, AG);
	is_int(v.violated, AG, "another node delivering after the first deliverer changed its mind");
	is_int((long long)v.first_event, (long long)last, "points at the last delivery");
	ok(has("node 1 delivered (origin 3, seq 0) = 22222222 at 2.000 ms but node 2"), "names the deviating one");
}

static void test_integrity(void)
{
	/* double delivery */
	good_broadcast();
	size_t last = del(30000, 1, 2, 0, 0xaaaa0002);
	is_int(check(4, all4, BCAST), 2, "double delivery: two properties");
	is_int(v.violated, IN | ND, "double delivery breaks integrity and no_duplicates");
	is_str(v.first,
	       "integrity: node 1 delivered (origin 2, seq 0) twice: = aaaa0002 at 12.100 ms, then = aaaa0002 at "
	       "30.000 ms",
	       "integrity counterexample for a double delivery");
	is_int((long long)v.first_event, (long long)last, "points at the second delivery");
	bool no1[4] = {true, false, true, true};
	is_int(check(4, no1, IN | ND), 0, "a faulty node's double delivery is ignored");

	/* forged digest for a correct origin, delivered consistently by everyone */
	reset();
	req(1000, 0, 0xaaaa0000);
	for (uint32_t j = 0; j < 4; j++)
		del(5000 + j, j, 0, 0, 0xdead0000);
	check(4, all4, IN | AG | TO | ND);
	is_int(v.violated, IN, "forged digest: integrity only among integrity/agreement/totality/no_dup");
	is_str(v.first,
	       "integrity: node 0 delivered (origin 0, seq 0) = dead0000 at 5.000 ms but its origin 0 is correct "
	       "and never requested that digest",
	       "integrity counterexample for a forged digest");
	is_int((long long)v.first_event, 1, "points at the first forged delivery");
	check(4, all4, BCAST);
	is_int(v.violated, V | IN | IC, "forged digest with everything: the real payload is missing too");
	ok(strncmp(v.first, "validity:", 9) == 0, "the first counterexample is the lowest violated bit's");

	bool no0[4] = {false, true, true, true};
	is_int(check(4, no0, IN), 0, "a faulty origin's unrequested digest is no integrity violation");

	/* a request by another correct node does not count */
	reset();
	req(1000, 1, 0xaaaa0000);
	del(5000, 2, 0, 0, 0xaaaa0000);
	check(4, all4, IN);
	is_int(v.violated, IN, "digest requested by node 1 but delivered as origin 0's");
	ok(has("origin 0 is correct and never requested"), "names the origin");

	/* delivery with an origin number out of range */
	reset();
	del(5000, 2, 77, 0, 0xaaaa0000);
	check(4, all4, IN | AG);
	is_int(v.violated, 0, "an out-of-range origin is not correct: no integrity requirement");
	is_int(check(4, all4, TO), 1, "but totality still speaks about it");
}

static void test_totality(void)
{
	/* faulty origin 3 reaches only nodes 0 and 1 */
	reset();
	for (uint32_t o = 0; o < 3; o++)
		req(1000 * (o + 1), o, 0xaaaa0000 + o);
	for (uint32_t o = 0; o < 3; o++)
		for (uint32_t j = 0; j < 3; j++)
			del(10000 + 1000 * o + 100 * j, j, o, 0, 0xaaaa0000 + o);
	size_t first = del(20000, 0, 3, 0, 0xcccc0000);
	del(20500, 1, 3, 0, 0xcccc0000);
	bool no3[4] = {true, true, true, false};
	is_int(check(4, no3, BCAST), 1, "partial delivery of a faulty origin's item");
	is_int(v.violated, TO, "breaks totality only");
	is_str(v.first,
	       "totality: node 0 delivered (origin 3, seq 0) = cccc0000 at 20.000 ms but node 2 never delivered it "
	       "(2 of 3 correct nodes did)",
	       "totality counterexample");
	is_int((long long)v.first_event, (long long)first, "points at the first delivery");
	bool only01[4] = {true, true, false, false};
	is_int(check(4, only01, BCAST), 0, "passes when node 2 is faulty too");
	/* delivered only by a faulty node */
	reset();
	del(20000, 3, 3, 0, 0xcccc0000);
	is_int(check(4, no3, TO), 0, "a faulty node's lone delivery is ignored");
}

/* Ordered logs: position p holds tag 0xd0000000 + p, origin p % 4. */
static size_t log_del(uint64_t t, uint32_t node, uint64_t p)
{
	return del(t, node, (uint32_t)(p % 4), p, 0xd0000000u + (uint32_t)p);
}

static void test_prefix(void)
{
	reset();
	for (uint64_t p = 0; p < 4; p++)
		for (uint32_t j = 0; j < 4; j++)
			if (!(j == 3 && p >= 2))
				log_del(1000 * (p + 1) + j, j, p);
	is_int(check(4, all4, PR | ND), 0, "logs that are prefixes of one another pass");

	/* gap: node 1 skips position 1 */
	reset();
	log_del(1000, 0, 0);
	log_del(1100, 1, 0);
	log_del(2000, 0, 1);
	size_t gap = log_del(2100, 1, 2);
	log_del(3000, 0, 2);
	is_int(check(4, all4, PR | ND | AG), 1, "gap in a log");
	is_int(v.violated, PR, "gap breaks prefix only");
	is_str(v.first,
	       "prefix: node 1 delivered (origin 2, seq 2) = d0000002 at 2.100 ms but its log had 1 entry: position "
	       "1 was skipped (gap in node 1's log)",
	       "prefix counterexample for a gap");
	is_int((long long)v.first_event, (long long)gap, "points at the delivery after the gap");
	bool no1[4] = {true, false, true, true};
	is_int(check(4, no1, PR), 0, "a faulty node's gap is ignored");

	/* the first delivery is not position 0 */
	reset();
	log_del(1000, 2, 1);
	check(4, all4, PR);
	ok(v.violated == PR && has("node 2") && has("position 0 was skipped"), "a log must start at position 0");

	/* out of order: position 1 delivered again */
	reset();
	log_del(1000, 0, 0);
	log_del(2000, 0, 1);
	size_t again = log_del(3000, 0, 1);
	check(4, all4, PR);
	is_int(v.violated, PR, "a repeated position breaks prefix");
	ok(has("node 0") && has("out of order") && has("position 1"), "names the node and the position");
	is_int((long long)v.first_event, (long long)again, "points at the repeated position");

	/* fork: node 2 has another digest at position 1 */
	reset();
	for (uint64_t p = 0; p < 3; p++)
		for (uint32_t j = 0; j < 4; j++) {
			if (j == 2 && p == 1)
				del(1000 * (p + 1) + j, j, 1, 1, 0xf0f0f0f0);
			else
				log_del(1000 * (p + 1) + j, j, p);
		}
	is_int(check(4, all4, PR | ND), 1, "fork between two logs");
	is_str(v.first,
	       "prefix: node 0 delivered (origin 1, seq 1) = d0000001 at 2.000 ms but node 2 delivered (origin 1, seq "
	       "1) = f0f0f0f0 at 2.002 ms: the logs of nodes 0 and 2 fork at position 1",
	       "prefix counterexample for a fork");
	is_int((long long)v.first_event, 6, "points at the later of the two deliveries");
	check(4, all4, PR | AG);
	is_int(v.violated, PR | AG, "with agreement too, (origin, seq) conflicts as well");
	bool no2[4] = {true, true, false, true};
	is_int(check(4, no2, PR), 0, "a faulty node's fork is ignored");

	/* fork where the shorter, earlier log deviates */
	reset();
	del(1000, 3, 0, 0, 0xf0f0f0f0);
	log_del(2000, 0, 0);
	log_del(3000, 0, 1);
	check(4, all4, PR);
	ok(v.violated == PR && has("nodes 3 and 0 fork at position 0"), "fork found against a shorter log");
	is_int((long long)v.first_event, 1, "points at the later delivery");

	/* invalid entries in a log compare as outcomes */
	reset();
	inv(1000, 0, 0, 0);
	inv(1001, 1, 0, 0);
	is_int(check(4, all4, PR), 0, "two invalid verdicts at one position agree");
	log_del(1002, 2, 0);
	is_int(check(4, all4, PR), 1, "an invalid verdict and a digest at one position fork");
}

static void test_no_dup(void)
{
	reset();
	req(1000, 0, 0xaaaa0000);
	del(2000, 1, 0, 0, 0xaaaa0000);
	size_t dup = del(6000, 1, 1, 5, 0xaaaa0000);
	check(4, all4, ND | AG);
	is_int(v.violated, ND, "one payload under two (origin, seq) breaks no_duplicates");
	is_str(v.first,
	       "no_duplicates: node 1 delivered digest aaaa0000 twice: as (origin 0, seq 0) at 2.000 ms, then as "
	       "(origin 1, seq 5) at 6.000 ms",
	       "no_duplicates counterexample");
	is_int((long long)v.first_event, (long long)dup, "points at the second delivery");
	bool no1[4] = {true, false, true, true};
	is_int(check(4, no1, ND), 0, "a faulty node's duplicate is ignored");

	/* the same digest at two different nodes is fine */
	reset();
	del(2000, 1, 0, 0, 0xaaaa0000);
	del(2000, 2, 1, 5, 0xaaaa0000);
	is_int(check(4, all4, ND), 0, "one payload at two nodes is no duplicate");

	/* invalid verdicts output no payload */
	reset();
	inv(2000, 1, 0, 0);
	inv(2000, 1, 0, 1);
	is_int(check(4, all4, ND), 0, "two invalid verdicts are no duplicate payload");
}

static void test_inclusion(void)
{
	good_broadcast();
	size_t r = req(40000, 1, 0xeeee0000);
	check(4, all4, IC | ND | AG);
	is_int(v.violated, IC, "a request never output breaks inclusion");
	is_str(v.first,
	       "inclusion: node 1 requested eeee0000 at 40.000 ms but node 0 never output it (0 of 4 correct nodes did)",
	       "inclusion counterexample");
	is_int((long long)v.first_event, (long long)r, "points at the request");
	bool no1[4] = {true, false, true, true};
	is_int(check(4, no1, IC), 0, "a faulty node's request need not be output");

	/* output under any origin and position counts */
	for (uint32_t j = 0; j < 4; j++)
		del(50000 + j, j, 3, 100 + j, 0xeeee0000);
	is_int(check(4, all4, IC), 0, "output at any position satisfies inclusion");
	check(4, all4, V | IC);
	is_int(v.violated, V, "while validity wants it from its origin");

	/* output by all but a faulty node */
	good_broadcast();
	req(40000, 1, 0xeeee0000);
	for (uint32_t j = 0; j < 3; j++)
		del(50000 + j, j, 1, 1, 0xeeee0000);
	check(4, all4, IC);
	ok(v.violated == IC && has("node 3 never output it (3 of 4"), "names the node that never output it");
	bool no3[4] = {true, true, true, false};
	is_int(check(4, no3, IC), 0, "passes when that node is faulty");
}

static void test_order_of_reports(void)
{
	/* agreement happens early, validity is only known at the end: validity is reported */
	reset();
	req(1000, 0, 0xaaaa0000);
	del(2000, 1, 2, 0, 0x11111111);
	del(3000, 2, 2, 0, 0x22222222);
	check(4, all4, V | AG);
	is_int(v.violated, V | AG, "both violated");
	ok(strncmp(v.first, "validity:", 9) == 0, "the lowest bit's counterexample is reported");
	is_int((long long)v.first_event, 0, "and its event");
	check(4, all4, AG);
	ok(strncmp(v.first, "agreement:", 10) == 0, "alone, agreement is reported");

	/* within one property the earliest counterexample wins */
	reset();
	del(1000, 1, 2, 0, 0x11111111);
	del(1500, 1, 2, 1, 0x33333333);
	del(2000, 2, 2, 1, 0x44444444);
	del(3000, 2, 2, 0, 0x22222222);
	check(4, all4, AG);
	ok(has("(origin 2, seq 1)"), "the earliest conflict in history order is reported");
	is_int((long long)v.first_event, 2, "at its event");

	/* every correct, correct == NULL */
	good_broadcast();
	is_int(check(4, NULL, BCAST), 0, "correct == NULL means every node is correct");
	bool none[4] = {false, false, false, false};
	del(99000, 1, 0, 0, 0x12345678);
	is_int(check(4, none, ALL), 0, "no correct node: nothing to violate");
	is_int(v.checked, ALL, "but the checkers count as run");
}

/* ---- randomized ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void delete_event(size_t i)
{
	memmove(&H.ev[i], &H.ev[i + 1], (H.len - i - 1) * sizeof(H.ev[0]));
	H.len--;
}

#define RN 50
#define RITEMS 2000

static bool rcorrect[RN];

static uint32_t item_tag(uint32_t k)
{
	return 0x10000000u + k * 7919u;
}

/* Items k = origin + RN * seq; correct origins request theirs; every correct
 * node delivers every item, in a shuffled order; faulty nodes deliver
 * garbage.  Returns with H filled. */
static void random_broadcast(void)
{
	reset();
	for (uint32_t k = 0; k < RITEMS; k++)
		if (rcorrect[k % RN])
			req(k, k % RN, item_tag(k));
	size_t start = H.len;
	for (uint32_t k = 0; k < RITEMS; k++)
		for (uint32_t j = 0; j < RN; j++) {
			if (rcorrect[j])
				del(0, j, k % RN, k / RN, item_tag(k));
			else if (rnd() % 4 == 0)
				del(0, j, (uint32_t)(rnd() % RN), rnd() % 60, (uint32_t)rnd());
		}
	for (size_t i = H.len - 1; i > start; i--) {
		size_t x = start + rnd() % (i - start + 1);
		struct sim_hist_event t = H.ev[i];
		H.ev[i] = H.ev[x];
		H.ev[x] = t;
	}
	for (size_t i = 0; i < H.len; i++)
		H.ev[i].time_us = 100 * i;
}

/* The first and next delivery by a correct node of (origin, seq) from index from. */
static size_t find_item(size_t from, uint32_t origin, uint64_t seq, uint32_t not_node)
{
	for (size_t i = from; i < H.len; i++) {
		const struct sim_hist_event *e = &H.ev[i];
		if (e->kind == SIM_H_DELIVER && rcorrect[e->node] && e->node != not_node && e->origin == origin &&
		    e->seq == seq)
			return i;
	}
	return SIZE_MAX;
}

/* A random correct node's delivery of an item whose origin is (in)correct. */
static size_t pick_delivery(bool origin_correct)
{
	for (;;) {
		size_t i = rnd() % H.len;
		const struct sim_hist_event *e = &H.ev[i];
		if (e->kind == SIM_H_DELIVER && rcorrect[e->node] && rcorrect[e->origin] == origin_correct)
			return i;
	}
}

static void test_random_broadcast(void)
{
	rng_state = 0x2545f4914f6cdd1dULL;
	for (uint32_t j = 0; j < RN; j++)
		rcorrect[j] = true;
	for (int k = 0; k < 16; k++)
		rcorrect[(k * 7 + 3) % RN] = false;

	random_broadcast();
	diag("random broadcast history: %zu events", H.len);
	is_int(check(RN, rcorrect, BCAST), 0, "random broadcast history passes");
	ok(v.checked == BCAST && v.first[0] == '\0', "nothing reported");

	/* (a) one delivery of a faulty origin's item gets another digest */
	size_t c = pick_delivery(false);
	struct sim_hist_event e = H.ev[c];
	dg(H.ev[c].digest, 0xfeedf00d);
	check(RN, rcorrect, BCAST);
	is_int(v.violated, AG, "a changed digest breaks exactly agreement");
	size_t first = find_item(0, e.origin, e.seq, UINT32_MAX);
	size_t want = first != c ? c : find_item(c + 1, e.origin, e.seq, e.node);
	is_int((long long)v.first_event, (long long)want, "at the first conflicting delivery");
	char node[32];
	snprintf(node, sizeof(node), "node %u", (unsigned)e.node);
	ok(has("agreement:") && has(node) && has("feedf00d"), "naming the node and the digest");
	H.ev[c] = e;

	/* (b) one delivery of a faulty origin's item is lost */
	c = pick_delivery(false);
	e = H.ev[c];
	delete_event(c);
	check(RN, rcorrect, BCAST);
	is_int(v.violated, TO, "a lost delivery of a faulty origin's item breaks exactly totality");
	snprintf(node, sizeof(node), "but node %u never", (unsigned)e.node);
	ok(has("totality:") && has(node), "naming the node that lost it");
	is_int((long long)v.first_event, (long long)find_item(0, e.origin, e.seq, UINT32_MAX),
	       "at the item's first delivery");
	random_broadcast();

	/* (c) one delivery of a correct origin's item is lost */
	c = pick_delivery(true);
	e = H.ev[c];
	delete_event(c);
	check(RN, rcorrect, BCAST);
	is_int(v.violated, V | TO | IC, "a lost delivery of a correct origin's item: validity, totality, inclusion");
	snprintf(node, sizeof(node), "but node %u never", (unsigned)e.node);
	ok(has("validity:") && has(node), "validity names the node");
	random_broadcast();

	/* (d) one delivery is repeated at the end */
	c = pick_delivery(true);
	e = H.ev[c];
	e.time_us = H.ev[H.len - 1].time_us + 1;
	sim_history_add(&H, &e);
	check(RN, rcorrect, BCAST);
	is_int(v.violated, IN | ND, "a repeated delivery: integrity and no_duplicates");
	is_int((long long)v.first_event, (long long)H.len - 1, "at the repetition");
	H.len--;

	/* (e) a faulty node's deliveries are changed: still passes */
	for (int k = 0; k < 200; k++) {
		size_t i = rnd() % H.len;
		if (H.ev[i].kind == SIM_H_DELIVER && !rcorrect[H.ev[i].node])
			dg(H.ev[i].digest, (uint32_t)rnd());
	}
	is_int(check(RN, rcorrect, BCAST), 0, "faulty nodes' garbage is ignored");
}

#define RLOG 2000

/* Correct nodes output prefixes (length RLOG - 100 .. RLOG) of one log, in
 * a random interleaving that keeps each node's order; faulty nodes output
 * garbage. */
static void random_logs(void)
{
	reset();
	uint64_t len[RN], next[RN];
	size_t left = 0;
	for (uint32_t j = 0; j < RN; j++) {
		len[j] = RLOG - rnd() % 101;
		next[j] = 0;
		left += len[j];
	}
	while (left) {
		uint32_t j = (uint32_t)(rnd() % RN);
		if (next[j] == len[j])
			continue;
		if (rcorrect[j])
			del(H.len * 10, j, (uint32_t)(next[j] % RN), next[j], 0x50000000u + (uint32_t)next[j]);
		else
			del(H.len * 10, j, (uint32_t)(rnd() % RN), rnd() % RLOG, (uint32_t)rnd());
		next[j]++;
		left--;
	}
}

/* The first index >= from where correct node `node` (any when UINT32_MAX),
 * other than not_node, delivers position p. */
static size_t find_pos(size_t from, uint64_t p, uint32_t node, uint32_t not_node)
{
	for (size_t i = from; i < H.len; i++) {
		const struct sim_hist_event *e = &H.ev[i];
		if (rcorrect[e->node] && e->seq == p && e->node != not_node && (node == UINT32_MAX || e->node == node))
			return i;
	}
	return SIZE_MAX;
}

static void test_random_logs(void)
{
	rng_state = 0x9e3779b97f4a7c15ULL;
	random_logs();
	diag("random ordered logs: %zu events", H.len);
	is_int(check(RN, rcorrect, PR | ND), 0, "random ordered logs pass prefix and no_duplicates");

	/* fork: one correct node's entry at position p gets another digest */
	size_t c;
	do
		c = rnd() % H.len;
	while (!rcorrect[H.ev[c].node] || H.ev[c].seq < 10 || H.ev[c].seq > RLOG - 200);
	struct sim_hist_event e = H.ev[c];
	dg(H.ev[c].digest, 0xf00dfeed);
	check(RN, rcorrect, PR | ND);
	is_int(v.violated, PR, "a forked entry breaks exactly prefix");
	size_t first = find_pos(0, e.seq, UINT32_MAX, UINT32_MAX);
	size_t want = first != c ? c : find_pos(c + 1, e.seq, UINT32_MAX, e.node);
	is_int((long long)v.first_event, (long long)want, "at the first conflicting delivery");
	ok(has("prefix:") && has("fork at position"), "reported as a fork");
	H.ev[c] = e;
	is_int(check(RN, rcorrect, PR | ND), 0, "restored history passes again");

	/* gap: one correct node's entry at position p (not its last) is lost */
	do
		c = rnd() % H.len;
	while (!rcorrect[H.ev[c].node] || H.ev[c].seq > RLOG - 200);
	e = H.ev[c];
	delete_event(c);
	check(RN, rcorrect, PR | ND);
	is_int(v.violated, PR, "a lost entry breaks exactly prefix");
	is_int((long long)v.first_event, (long long)find_pos(c, e.seq + 1, e.node, UINT32_MAX),
	       "at that node's next delivery");
	char gap[64];
	snprintf(gap, sizeof(gap), "position %llu was skipped (gap in node %u's", (unsigned long long)e.seq,
		 (unsigned)e.node);
	ok(has(gap), "reported as a gap at that node and position");
}


/* ---- inclusion_fraction ---- */

static uint32_t frac_tag(uint32_t origin, uint32_t k)
{
	return 0xcc000000u + origin * 256 + k;
}

/* Each of 4 nodes requests 10 payloads (request k at k+1 ms, plus the
 * origin in us); every node outputs them all except node 2, which misses
 * origin 3's requests listed in miss (NULL-free: a bitmask of k). */
static void fraction_history(unsigned int miss)
{
	reset();
	for (uint32_t k = 0; k < 10; k++)
		for (uint32_t o = 0; o < 4; o++)
			req(1000 * (k + 1) + o, o, frac_tag(o, k));
	for (uint32_t k = 0; k < 10; k++)
		for (uint32_t o = 0; o < 4; o++)
			for (uint32_t j = 0; j < 4; j++)
				if (!(j == 2 && o == 3 && (miss >> k & 1)))
					del(20000 + 1000 * k + 10 * o + j, j, o, k, frac_tag(o, k));
}

static void test_inclusion_fraction(void)
{
	const unsigned int IF = SIM_CHECK_INCLUSION_FRACTION;
	struct sim_bounds b = default_bounds;

	fraction_history(0);
	is_int(check_run(4, all4, IF, b, 100000, SIM_NEVER, NULL), 0, "every request output: inclusion_fraction passes");
	ok(M.inclusion && M.n == 4 && M.inclusion_min == 1.0 && M.inclusion[3] == 1.0, "every origin at 1");
	is_int((long long)M.counted_before_us, 80000, "the settle window is 20%% of the duration by default");

	fraction_history(1u << 3 | 1u << 7);
	is_int(check_run(4, all4, IF | IC, b, 100000, SIM_NEVER, NULL), 2, "two requests missed by one node");
	is_int(v.violated, IF | IC, "inclusion_fraction fails under bound 1, inclusion too");
	check_run(4, all4, IF, b, 100000, SIM_NEVER, NULL);
	is_str(v.first,
	       "inclusion_fraction: node 2 output 8 of the 10 requests origin 3 made before 80.000 ms (0.8 < "
	       "inclusion_min 1); the first it missed: cc000303 at 4.003 ms",
	       "inclusion_fraction counterexample");
	is_int((long long)v.first_time_us, 4003, "its time is the first missed request's");
	ok(M.inclusion[3] == 0.8 && M.inclusion[0] == 1.0 && M.inclusion_min == 0.8, "origin 3 at 0.8, the minimum");
	b.inclusion_min = 0.8;
	is_int(check_run(4, all4, IF, b, 100000, SIM_NEVER, NULL), 0, "a fraction equal to the bound passes");
	b.inclusion_min = 0.81;
	is_int(check_run(4, all4, IF, b, 100000, SIM_NEVER, NULL), 1, "a fraction below the bound fails");
	bool no2[4] = {true, true, false, true};
	b.inclusion_min = 1.0;
	is_int(check_run(4, no2, IF, b, 100000, SIM_NEVER, NULL), 0, "a faulty node's misses do not count");
	ok(isnan(M.inclusion[2]) && M.inclusion[3] == 1.0, "a faulty origin has no fraction");

	/* requests in the settle window are not counted */
	fraction_history(1u << 9);
	b.settle_us = 91000;
	is_int(check_run(4, all4, IF, b, 100000, SIM_NEVER, NULL), 0, "a miss made after duration - settle_ms is not counted");
	is_int((long long)M.counted_before_us, 9000, "counted before duration - settle_ms");
	b.settle_us = 200000;
	is_int(check_run(4, all4, IF, b, 100000, SIM_NEVER, NULL), 0, "a settle window longer than the run counts nothing");
	ok(isnan(M.inclusion_min) && isnan(M.inclusion[0]), "nothing counted: no fractions");
	b.settle_us = SIM_NEVER;

	/* the report */
	fraction_history(1u << 3 | 1u << 7);
	check_run(4, no2, IF | IC, b, 100000, SIM_NEVER, NULL);
	fraction_history(1u << 3 | 1u << 7);
	check_run(4, all4, IF | IC, b, 100000, SIM_NEVER, NULL);
	json_t *doc = json_object();
	sim_report_checks(doc, &v, &M);
	char *text = json_dumps(doc, JSON_COMPACT);
	is_str(text,
	       "{\"checkers\":{\"inclusion\":\"fail\",\"inclusion_fraction\":\"fail\"},\"first_violation\":\"inclusion: "
	       "node 3 requested cc000303 at 4.003 ms but node 2 never output it (3 of 4 correct nodes did)\","
	       "\"inclusion\":{\"min\":0.80000000000000004,\"counted_before_ms\":80.0,\"by_origin\":[1.0,1.0,1.0,"
	       "0.80000000000000004]}}",
	       "the report has the checkers, the first violation and the fractions");
	free(text);
	json_decref(doc);
	check_run(4, all4, PR, b, 100000, SIM_NEVER, NULL);
	ok(M.inclusion == NULL && M.catch_up_from_us == SIM_NEVER, "nothing measured without those checkers");
}

/* ---- catch_up ---- */

/* Nodes 0-2 output positions 0..9 by 20 ms; node 3 outputs 0..4 then, when
 * late_us is not SIM_NEVER, 5..9 from late_us on. */
static void catch_up_history(uint64_t late_us)
{
	reset();
	for (uint64_t p = 0; p < 10; p++)
		for (uint32_t j = 0; j < 4; j++)
			if (j < 3 || p < 5)
				log_del(10000 + 1000 * p + j, j, p);
	for (uint64_t p = 5; late_us != SIM_NEVER && p < 10; p++)
		log_del(late_us + p, 3, p);
}

static void test_catch_up(void)
{
	const unsigned int CU = SIM_CHECK_CATCH_UP;
	struct sim_bounds b = default_bounds;
	b.catch_up_us = 3000000;

	catch_up_history(2500000);
	is_int(check_run(4, all4, CU | PR, b, 10000000, 1000000, NULL), 0, "caught up within catch_up_ms");
	ok(M.catch_up_from_us == 1000000 && M.catch_up_positions == 10 && M.catch_up_worst_us == 1500009,
	   "measured from the end of the faults: 10 positions, the slowest 1500.009 ms");
	b.catch_up_us = 1000000;
	is_int(check_run(4, all4, CU, b, 10000000, 1000000, NULL), 1, "caught up too late");
	is_str(v.first,
	       "catch_up: node 3 held 5 of the 10 log positions correct nodes had output when the last fault window "
	       "ended at 1000.000 ms, and caught up 1500.009 ms later (catch_up_ms 1000.000)",
	       "catch_up counterexample for a late node");
	is_int((long long)v.first_time_us, 2000000, "its time is the deadline");
	bool no3[4] = {true, true, true, false};
	is_int(check_run(4, no3, CU, b, 10000000, 1000000, NULL), 0, "a faulty node need not catch up");
	ok(M.catch_up_worst_us == 0, "the others held everything when the faults ended");

	b.catch_up_us = 3000000;
	catch_up_history(SIM_NEVER);
	is_int(check_run(4, all4, CU, b, 10000000, 1000000, NULL), 1, "a node that never catches up");
	is_str(v.first,
	       "catch_up: node 3 held 5 of the 10 log positions correct nodes had output when the last fault window "
	       "ended at 1000.000 ms, and still 5 at the end of the run (10000.000 ms; catch_up_ms 3000.000)",
	       "catch_up counterexample for a node that never caught up");
	ok(M.catch_up_worst_us == SIM_NEVER, "no worst time when a node never caught up");
	is_int(check_run(4, all4, CU, b, 3500000, 1000000, NULL), 0, "not judged when the run ends before the deadline");
	is_int(check_run(4, all4, CU, b, 10000000, SIM_NEVER, NULL), 0, "no fault window ends: nothing to judge");
	ok(M.catch_up_from_us == SIM_NEVER, "and nothing measured");
	is_int(check_run(4, all4, CU, b, 10000000, 15000, NULL), 1, "positions output by the end of the faults count");
	ok(M.catch_up_positions == 6, "6 positions had been output at 15 ms");

	/* node 3 is wiped at 1.2 s and rejoins by state sync at position 8 */
	catch_up_history(SIM_NEVER);
	restart(1200000, 3, true);
	log_del(1500000, 3, 8);
	log_del(1500001, 3, 9);
	is_int(check_run(4, all4, CU | PR, b, 10000000, 1000000, NULL), 0, "a node that rejoins at a later position caught up");
	is_int((long long)M.catch_up_worst_us, 500001, "when it held the last position");
}

static void test_faults_end(void)
{
	static const char json[] =
		"{\"n\": 7, \"protocol\": \"seq\", \"duration_ms\": 1000, \"expect_violation\": true, \"faults\": ["
		"{\"kind\": \"crash\", \"nodes\": [6], \"at_ms\": 900},"
		"{\"kind\": \"crash_recover\", \"nodes\": [5], \"at_ms\": 100, \"until_ms\": 400},"
		"{\"kind\": \"partition\", \"groups\": [[0, 1]], \"at_ms\": 50, \"until_ms\": 300},"
		"{\"kind\": \"delay\", \"nodes\": [0], \"ms\": 5, \"after\": {\"node\": 1, \"deliveries\": 3},"
		" \"delay_ms\": 10, \"for_ms\": 100},"
		"{\"kind\": \"omission\", \"nodes\": [4], \"at_ms\": 20}]}";
	struct sim_scenario sc;
	char err[1024];
	int rc = sim_scenario_parse(&sc, json, "faults-end", err, sizeof(err));
	if (rc)
		diag("%s", err);
	ok(rc == 0, "a scenario with windows that end, that never end and that wait for a trigger");
	if (rc)
		return;
	is_int((long long)sim_faults_end(&sc, NULL), 400000, "the last window that ends; never-ending ones and triggered ones left out");
	uint64_t fired[5] = {SIM_NEVER, SIM_NEVER, SIM_NEVER, 350000, SIM_NEVER};
	is_int((long long)sim_faults_end(&sc, fired), 460000, "a triggered window counts from when its trigger fired");
	fired[3] = SIM_NEVER;
	is_int((long long)sim_faults_end(&sc, fired), 400000, "a trigger that never fired: no window");
	sc.nfaults = 1;
	ok(sim_faults_end(&sc, NULL) == SIM_NEVER, "no window ends: SIM_NEVER");
	sc.nfaults = 5;
	sim_scenario_free(&sc);
}

/* ---- state_hash ---- */

static void state(struct sim_node_state *st, uint64_t txs, const char *order, const char *ledger)
{
	memset(st, 0, sizeof(*st));
	st->known = true;
	st->committed_txs = txs;
	snprintf(st->order_hash, sizeof(st->order_hash), "%s", order);
	snprintf(st->ledger_hash, sizeof(st->ledger_hash), "%s", ledger);
}

static void test_state_hash(void)
{
	const unsigned int SH = SIM_CHECK_STATE_HASH;
	struct sim_node_state st[4];
	reset();
	state(&st[0], 10, "aaaa", "1111");
	state(&st[1], 12, "bbbb", "2222");
	state(&st[2], 10, "aaaa", "1111");
	state(&st[3], 12, "bbbb", "2222");
	is_int(check_run(4, all4, SH, default_bounds, 1000, SIM_NEVER, st), 0, "equal hashes at equal counts pass");
	is_int(check_run(4, all4, SH, default_bounds, 1000, SIM_NEVER, NULL), 0, "no states: nothing to judge");
	state(&st[3], 12, "bbbc", "2222");
	is_int(check_run(4, all4, SH, default_bounds, 1000, SIM_NEVER, st), 1, "a different order_hash fails");
	is_str(v.first, "state_hash: nodes 1 and 3 both committed 12 transactions but report order_hash bbbb and bbbc",
	       "state_hash counterexample");
	bool no3[4] = {true, true, true, false};
	is_int(check_run(4, no3, SH, default_bounds, 1000, SIM_NEVER, st), 0, "a faulty node's state is not judged");
	st[3].known = false;
	is_int(check_run(4, all4, SH, default_bounds, 1000, SIM_NEVER, st), 0, "an unknown state is not judged");
	state(&st[2], 10, "aaaa", "1112");
	is_int(check_run(4, all4, SH, default_bounds, 1000, SIM_NEVER, st), 1, "a different ledger_hash fails");
	ok(has("nodes 0 and 2 both committed 10 transactions but report ledger_hash 1111 and 1112"),
	   "names the ledger hash");
	is_int((long long)v.first_time_us, 1000, "known at the end of the run");

	static const char *const infos[] = {
		"{\"committed_txs\": 7, \"order_hash\": \"ab\", \"ledger_hash\": \"cd\", \"round\": 3}",
		"{\"dag\": {\"committed_txs\": 7, \"order_hash\": \"ab\"}, \"ledger\": {\"ledger_hash\": \"cd\"}}",
		"{\"committed_txs\": 7, \"order_hash\": \"ab\"}",
		"{\"order_hash\": \"ab\"}",
		"{\"committed_txs\": -1}",
		"null",
	};
	struct sim_node_state got[6];
	for (size_t i = 0; i < 6; i++) {
		json_t *info = json_loads(infos[i], JSON_DECODE_ANY, NULL);
		sim_node_state_read(&got[i], info);
		json_decref(info);
	}
	ok(got[0].known && got[0].committed_txs == 7 && !strcmp(got[0].order_hash, "ab") &&
		   !strcmp(got[0].ledger_hash, "cd"),
	   "node info: the fields at the top level");
	ok(got[1].known && got[1].committed_txs == 7 && !strcmp(got[1].order_hash, "ab") &&
		   !strcmp(got[1].ledger_hash, "cd"),
	   "node info: the fields one map down");
	ok(got[2].known && got[2].ledger_hash[0] == '\0', "node info without a ledger: no ledger hash");
	ok(!got[3].known && !got[4].known && !got[5].known, "no committed_txs, a negative one or no info: unknown");
	sim_node_state_read(&got[0], NULL);
	ok(!got[0].known, "NULL info: unknown");
}

/* ---- logs across restarts ---- */

/* Nodes 0-2 output positions 0..7 (requested by origin p % 4); node 3
 * outputs positions 0..2 and is then restarted at 5 ms. */
static void restart_history(bool wiped)
{
	reset();
	for (uint64_t p = 0; p < 8; p++)
		req(100 * p, (uint32_t)(p % 4), 0xd0000000u + (uint32_t)p);
	for (uint64_t p = 0; p < 8; p++)
		for (uint32_t j = 0; j < 3; j++)
			log_del(1000 + 100 * p + j, j, p);
	for (uint64_t p = 0; p < 3; p++)
		log_del(1000 + 100 * p + 3, 3, p);
	restart(5000, 3, wiped);
}

static void test_restarts(void)
{
	restart_history(true);
	for (uint64_t p = 5; p < 8; p++)
		log_del(6000 + p, 3, p);
	is_int(check(4, all4, PR | ND | IC), 0, "after a wiped restart a log may resume at a later position");
	is_int(check_run(4, all4, SIM_CHECK_INCLUSION_FRACTION, default_bounds, 100000, SIM_NEVER, NULL), 0,
	       "the positions it skipped count as output (inclusion_fraction)");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	sim_history_print_around(f, &H, 35, 0);
	fclose(f);
	is_str(buf, "> [35] t=5.000ms node=3 RESTART store wiped\n", "print_around shows a restart");
	free(buf);

	restart_history(false);
	for (uint64_t p = 5; p < 8; p++)
		log_del(6000 + p, 3, p);
	check(4, all4, PR);
	ok(v.violated == PR && has("position 3 was skipped (gap in node 3's log)"),
	   "after a restart that kept the store, a gap breaks prefix");

	restart_history(true);
	log_del(6005, 3, 5);
	log_del(6007, 3, 7);
	check(4, all4, PR);
	ok(v.violated == PR && has("position 6 was skipped"), "a gap later than the first output after the restart fails");

	restart_history(true);
	for (uint64_t p = 0; p < 8; p++)
		log_del(6000 + p, 3, p);
	is_int(check(4, all4, PR | ND | IC), 0, "a wiped node may replay its log from position 0");

	restart_history(true);
	log_del(6005, 3, 5);
	del(6006, 3, 2, 6, 0xd0000005u);
	check(4, all4, ND);
	ok(v.violated == ND && has("node 3 delivered digest d0000005 twice"),
	   "a duplicate within one incarnation breaks no_duplicates");

	restart_history(true);
	del(6005, 3, 1, (uint64_t)1 << 60, 0xd0000005u);
	check(4, all4, PR | IC);
	ok((v.violated & PR) && has("position 0 was skipped"), "a position beyond any log is a gap, even after a restart");

	restart_history(true);
	del(6005, 3, 1, 5, 0xf0f0f0f0);
	check(4, all4, PR);
	ok(v.violated == PR && has("fork at position 5"), "a rejoining node's first output must match the others'");

	restart_history(true);
	del(6005, 3, 1, 5, 0xd0000005u);
	restart(7000, 3, true);
	del(7001, 3, 2, 6, 0xd0000006u);
	del(7002, 3, 3, 7, 0xd0000007u);
	is_int(check(4, all4, PR | ND | IC), 0, "each wiped restart starts a new incarnation");
}

int main(void)
{
	test_names_and_history();
	test_print_around();
	test_validity();
	test_agreement();
	test_integrity();
	test_totality();
	test_prefix();
	test_no_dup();
	test_inclusion();
	test_order_of_reports();
	test_random_broadcast();
	test_random_logs();
	test_inclusion_fraction();
	test_catch_up();
	test_faults_end();
	test_state_hash();
	test_restarts();
	sim_measures_free(&M);
	reset();
	return done_testing();
}
