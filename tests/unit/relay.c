/* relay.c - tests of the relay for directed topologies (protocols/relay.c):
 * over fake hosts joined by a small directed graph, a multicast reaches
 * every other node exactly once and a unicast reaches a node its sender
 * cannot; a forged, garbled or replayed envelope is refused and counted;
 * sequence numbers survive a restart; the topology parameter is validated
 * with clear errors, and the graph check refuses a graph that f nodes can
 * cut, naming the cut, and accepts the circulant graphs weft-sim uses. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/relay.h"

#define MAXN 8

struct got {
	uint32_t from;
	uint8_t data[64];
	size_t len;
};

/* One node: a fake host, a wrapper keeping its last log line, the relay,
 * and what the relayed protocol received. */
struct tnode {
	struct fake_env fe;
	struct weft_env_wrap logged;
	char log[256];
	struct weft_relay relay;
	struct got got[16];
	size_t ngot;
	size_t pumped; /* fe.sent entries already carried */
};

static struct tnode nodes[MAXN];
static uint32_t N;
static bool edge[MAXN][MAXN];
static int off_graph; /* sends to a node the sender has no edge to */

static void keep_log(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt,
		     va_list ap)
{
	struct tnode *t = (struct tnode *)((char *)weft_env_wrapped(env) - offsetof(struct tnode, logged));
	int k = snprintf(t->log, sizeof(t->log), "%s: ", event);
	vsnprintf(t->log + k, sizeof(t->log) - (size_t)k, fmt, ap);
}

static int record(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct tnode *t = state;
	if (t->ngot < 16 && len <= sizeof(t->got[0].data)) {
		t->got[t->ngot].from = from;
		memcpy(t->got[t->ngot].data, msg, len);
		t->got[t->ngot++].len = len;
	}
	return 0;
}

/* params as msgpack from JSON text (caller frees w). */
static void params_json(struct weft_mpw *w, const char *json)
{
	json_error_t err;
	json_t *v = json_loads(json, 0, &err);
	weft_mpw_init(w);
	if (v == NULL || weft_json_to_mp(w, v, 0) != 0)
		abort();
	json_decref(v);
}

/* {"topology": {"directed": L}} with L[i] = the next k nodes after i. */
static void circulant(struct weft_mpw *w, uint32_t n, uint32_t k)
{
	weft_mpw_init(w);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "topology");
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "directed");
	weft_mpw_array(w, n);
	for (uint32_t i = 0; i < n; i++) {
		weft_mpw_array(w, k);
		for (uint32_t j = 1; j <= k; j++)
			weft_mpw_uint(w, (i + j) % n);
	}
}

static int node_init(struct tnode *t, const struct weft_mpw *params)
{
	weft_env_wrap_init(&t->logged, &t->fe.env);
	t->logged.ops.log = keep_log;
	t->log[0] = '\0';
	memset(&t->relay, 0, sizeof(t->relay));
	return weft_relay_init(&t->relay, &t->logged.env, params->buf, params->len);
}

/* Node 0 alone with these params: init's result, its log in *log. */
static int try_params(uint32_t n, const struct weft_mpw *params, char *log, size_t cap)
{
	struct tnode *t = &nodes[0];
	fake_env_init(&t->fe, 0, n);
	int rc = node_init(t, params);
	snprintf(log, cap, "%s", t->log);
	weft_relay_destroy(&t->relay);
	fake_env_free(&t->fe);
	return rc;
}

static void try_json(uint32_t n, const char *json, int want, const char *want_log, const char *name)
{
	struct weft_mpw w;
	char log[256];
	params_json(&w, json);
	int rc = try_params(n, &w, log, sizeof(log));
	weft_mpw_free(&w);
	is_int(rc, want, "%s: init result", name);
	is_str(log, want_log, "%s: logged", name);
}

static void net_up(uint32_t n, const char *json)
{
	struct weft_mpw w;
	N = n;
	params_json(&w, json);
	memset(edge, 0, sizeof(edge));
	off_graph = 0;
	bool all = true;
	for (uint32_t i = 0; i < n; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		fake_env_init(&nodes[i].fe, i, n);
		all &= node_init(&nodes[i], &w) == 0;
		for (uint32_t k = 0; k < nodes[i].relay.nout; k++)
			edge[i][nodes[i].relay.out[k]] = true;
	}
	weft_mpw_free(&w);
	ok(all, "n = %u: every node takes the topology", n);
}

static void net_down(void)
{
	for (uint32_t i = 0; i < N; i++) {
		weft_relay_destroy(&nodes[i].relay);
		fake_env_free(&nodes[i].fe);
	}
}

static void carry(uint32_t from, uint32_t to, const uint8_t *msg, size_t len)
{
	if (!edge[from][to])
		off_graph++;
	else
		weft_relay_on_message(&nodes[to].relay, from, msg, len, record, &nodes[to]);
}

/* Carries every recorded send along the graph until nothing moves. */
static void pump(void)
{
	for (bool moved = true; moved;) {
		moved = false;
		for (uint32_t i = 0; i < N; i++)
			while (nodes[i].pumped < nodes[i].fe.nsent) {
				/* copy: carrying may grow fe.sent */
				struct fake_sent s = nodes[i].fe.sent[nodes[i].pumped++];
				moved = true;
				for (uint32_t j = 0; j < N; j++)
					if (j != i && (s.to == (int64_t)j || s.to < 0))
						carry(i, j, s.data, s.len);
			}
	}
}

static void forget_received(void)
{
	for (uint32_t i = 0; i < N; i++)
		nodes[i].ngot = 0;
}

/* How many times node i's protocol received (from, text). */
static int received(uint32_t i, uint32_t from, const char *text)
{
	int k = 0;
	for (size_t g = 0; g < nodes[i].ngot; g++)
		k += nodes[i].got[g].from == from && nodes[i].got[g].len == strlen(text) &&
		     memcmp(nodes[i].got[g].data, text, strlen(text)) == 0;
	return k;
}

/* The last envelope node i sent. */
static const struct fake_sent *last_envelope(uint32_t i)
{
	for (size_t k = nodes[i].fe.nsent; k-- > 0;)
		if (nodes[i].fe.sent[k].len && nodes[i].fe.sent[k].data[0] == WEFT_RELAY_MARKER)
			return &nodes[i].fe.sent[k];
	return NULL;
}

/* next 2 of 4 nodes: f = 1, and no single node cuts the others */
#define RING4 "{\"topology\": {\"directed\": [[1, 2], [2, 3], [3, 0], [0, 1]]}}"

static void test_flooding(void)
{
	net_up(4, RING4);
	struct weft_env *e0 = weft_relay_env(&nodes[0].relay);
	ok(e0 != &nodes[0].logged.env, "a directed topology wraps the env");

	weft_env_multicast(e0, "t", "hello", 5);
	pump();
	ok(received(1, 0, "hello") == 1 && received(2, 0, "hello") == 1 && received(3, 0, "hello") == 1,
	   "a multicast reaches every other node exactly once, as from its origin");
	is_int(received(0, 0, "hello"), 0, "and not its origin");
	is_int((int)nodes[0].relay.originated, 1, "one envelope made");
	ok(nodes[3].relay.duplicates > 0, "node 3 dropped the copies flooding brought it");
	is_int(off_graph, 0, "nothing was sent off the graph");

	forget_received();
	weft_env_send(e0, 3, "t", "far", 3);
	pump();
	is_int(received(3, 0, "far"), 1, "a unicast to a node 0 cannot reach arrives once, from 0");
	is_int(received(1, 0, "far") + received(2, 0, "far"), 0, "and only there");

	forget_received();
	size_t before = nodes[0].fe.nsent;
	weft_env_send(e0, 1, "t", "near", 4);
	ok(nodes[0].fe.nsent == before + 1 && nodes[0].fe.sent[before].len == 4 &&
	   memcmp(nodes[0].fe.sent[before].data, "near", 4) == 0,
	   "a unicast to an out-neighbour leaves unchanged");
	pump();
	is_int(received(1, 0, "near"), 1, "and arrives");
	is_int(off_graph, 0, "nothing was sent off the graph");
	net_down();
}

static void test_refused(void)
{
	net_up(4, RING4);
	weft_env_multicast(weft_relay_env(&nodes[0].relay), "t", "hello", 5);
	const struct fake_sent *env = last_envelope(0);
	ok(env != NULL && env->to == 2, "node 0's envelope to node 2");
	uint8_t copy[256];
	size_t len = env->len;
	memcpy(copy, env->data, len);
	struct weft_relay *r2 = &nodes[2].relay;

	/* marker, [1, origin, nil, seq, bin payload, bin(64) sig] */
	size_t last = len - WEFT_SIGNATURE_LEN - 3, origin = 3;
	copy[last] ^= 1;
	int rc = weft_relay_on_message(r2, 0, copy, len, record, &nodes[2]);
	is_int(rc, WEFT_ECRYPTO, "an altered payload is refused");
	copy[last] ^= 1;

	copy[origin] = 1;
	rc = weft_relay_on_message(r2, 3, copy, len, record, &nodes[2]);
	is_int(rc, WEFT_ECRYPTO, "an envelope claiming another origin is refused");
	copy[origin] = 0;

	rc = weft_relay_on_message(r2, 0, copy, len - 1, record, &nodes[2]);
	is_int(rc, WEFT_EDECODE, "a truncated envelope is refused");
	uint8_t garbage[] = {WEFT_RELAY_MARKER, 0xdd, 0xff, 0xff, 0xff, 0xff};
	rc = weft_relay_on_message(r2, 0, garbage, sizeof(garbage), record, &nodes[2]);
	is_int(rc, WEFT_EDECODE, "an envelope declaring 4 G elements is refused");
	rc = weft_relay_on_message(r2, 0, garbage, 1, record, &nodes[2]);
	is_int(rc, WEFT_EDECODE, "a bare marker is refused");
	is_int((int)r2->refused, 5, "each refusal is counted");
	is_int((int)nodes[2].ngot, 0, "nothing refused was delivered");

	rc = weft_relay_on_message(r2, 0, copy, len, record, &nodes[2]);
	ok(rc == 0 && received(2, 0, "hello") == 1, "the genuine envelope is then taken");
	uint64_t dups = r2->duplicates;
	rc = weft_relay_on_message(r2, 1, copy, len, record, &nodes[2]);
	ok(rc == 0 && received(2, 0, "hello") == 1 && r2->duplicates == dups + 1,
	   "replayed, it is dropped and counted");
	net_down();
}

static void test_restart(void)
{
	net_up(4, RING4);
	weft_env_multicast(weft_relay_env(&nodes[0].relay), "t", "before", 6);
	uint8_t old[256];
	size_t len = last_envelope(0)->len;
	memcpy(old, last_envelope(0)->data, len);
	pump();

	/* node 0 restarts: the relay is rebuilt over the same kv */
	struct weft_mpw w;
	params_json(&w, RING4);
	weft_relay_destroy(&nodes[0].relay);
	is_int(node_init(&nodes[0], &w), 0, "node 0 restarts");
	weft_mpw_free(&w);
	forget_received();
	weft_env_multicast(weft_relay_env(&nodes[0].relay), "t", "after", 5);
	pump();
	ok(received(1, 0, "after") == 1 && received(2, 0, "after") == 1 && received(3, 0, "after") == 1,
	   "after a restart its envelopes are new to everyone");
	uint64_t dups = nodes[1].relay.duplicates;
	weft_relay_on_message(&nodes[1].relay, 0, old, len, record, &nodes[1]);
	ok(received(1, 0, "before") == 0 && nodes[1].relay.duplicates == dups + 1,
	   "an envelope from before the restart, replayed, is too old");
	net_down();
}

static void test_full_out_degree(void)
{
	/* node 0 reaches everyone itself: its multicasts need no envelope */
	net_up(4, "{\"topology\": {\"directed\": [[1, 2, 3], [2, 3], [3, 0], [0, 1]]}}");
	weft_env_multicast(weft_relay_env(&nodes[0].relay), "t", "all", 3);
	ok(nodes[0].fe.nsent == 1 && nodes[0].fe.sent[0].to == -1, "a node that reaches all multicasts plainly");
	pump();
	ok(received(1, 0, "all") == 1 && received(2, 0, "all") == 1 && received(3, 0, "all") == 1,
	   "and everyone receives it once");
	net_down();
}

static void test_params(void)
{
	try_json(4, "{}", 0, "", "no topology");
	try_json(4, "{\"topology\": \"complete\"}", 0, "", "\"complete\"");
	try_json(4, "{\"topology\": \"ring\"}", WEFT_EINVAL,
		 "relay.topology: expected \"complete\" or {\"directed\": [[out-neighbours of node 0], ...]}",
		 "an unknown name");
	try_json(4, "{\"topology\": {\"directed\": [[1, 2], [2, 3], [3, 0]]}}", WEFT_EINVAL,
		 "relay.topology: directed has 3 lists, expected n = 4", "too few lists");
	try_json(4, "{\"topology\": {\"directed\": [[1, 2], [2, 4], [3, 0], [0, 1]]}}", WEFT_EINVAL,
		 "relay.topology: directed[1][1] is not a node index below n = 4", "an index out of range");
	try_json(4, "{\"topology\": {\"directed\": [[1, 2], [2, 3], [2, 0], [0, 1]]}}", WEFT_EINVAL,
		 "relay.topology: directed[2] lists node 2 itself", "a node listing itself");
	try_json(4, "{\"topology\": {\"directed\": [[1, 2], [2, 3], [3, 0], [0, 1, 0]]}}", WEFT_EINVAL,
		 "relay.topology: directed[3] lists node 0 twice", "a repeat");
	try_json(4, "{\"topology\": {\"directed\": [[1, 2], \"x\", [3, 0], [0, 1]]}}", WEFT_EINVAL,
		 "relay.topology: directed[1] is not a list of at most n - 1 = 3 node indices", "a list that is not one");
}

static void test_graph_check(void)
{
	try_json(4, "{\"topology\": {\"directed\": [[1], [2], [3], [0]]}}", WEFT_EINVAL,
		 "relay.topology: removing nodes {1} (f = 1) leaves no path from 0 to 2", "a ring (f = 1)");
	try_json(4, "{\"topology\": {\"directed\": [[1, 2], [2, 3], [3, 0], []]}}", WEFT_EINVAL,
		 "relay.topology: removing nodes {} (f = 1) leaves no path from 3 to 0", "a node that reaches nobody");
	struct weft_mpw w;
	char log[256];
	circulant(&w, 7, 2);
	is_int(try_params(7, &w, log, sizeof(log)), WEFT_EINVAL, "the next 2 of 7 nodes: refused (f = 2)");
	is_str(log, "relay.topology: removing nodes {1, 2} (f = 2) leaves no path from 0 to 3", "naming the cut");
	weft_mpw_free(&w);
	static const uint32_t sizes[] = {4, 7, 10, 31};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i], f = (n - 1) / 3;
		circulant(&w, n, n - f - 1);
		is_int(try_params(n, &w, log, sizeof(log)), 0, "the next n - f - 1 of n = %u nodes: accepted", n);
		weft_mpw_free(&w);
		circulant(&w, n, f + 1);
		is_int(try_params(n, &w, log, sizeof(log)), 0, "the next f + 1 of n = %u nodes: accepted", n);
		weft_mpw_free(&w);
		if (f > 0) {
			circulant(&w, n, f);
			is_int(try_params(n, &w, log, sizeof(log)), WEFT_EINVAL, "the next f of n = %u nodes: refused", n);
			weft_mpw_free(&w);
		}
	}
}

int main(void)
{
	weft_crypto_init();
	test_flooding();
	test_refused();
	test_restart();
	test_full_out_degree();
	test_params();
	test_graph_check();
	done_testing();
}
