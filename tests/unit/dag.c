/* dag.c - unit tests of the DAG consensus (protocols/dag): vertex
 * validation against hostile input (too many or too few references, wrong
 * author, bad signature, garbage, rounds far ahead), insertion waiting for
 * parents, the commit rule with ordered delivery and the order hash,
 * transactions the mempool refuses, and the range fetch against hostile
 * peers (malformed FETCH and RANGE, one peer's word, forged bytes).  Four protocol instances over fake
 * envs (real Ed25519) exchange vertices directly, without the BRB. */
#include <stdlib.h>
#include <string.h>

#include "../../protocols/dag/dag.h"
#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"

#define N 4

extern const struct weft_proto_ops weft_proto_dag;

static struct fake_env fe[N];
static struct dag *node[N];

static void params(struct weft_mpw *w, const char *mode, uint64_t d)
{
	weft_mpw_init(w);
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "mode");
	weft_mpw_str(w, mode);
	weft_mpw_str(w, "d");
	weft_mpw_uint(w, d);
	weft_mpw_str(w, "tx_max");
	weft_mpw_uint(w, 1024);
}

static void setup(const char *mode, uint64_t d)
{
	struct weft_mpw p;
	params(&p, mode, d);
	for (uint32_t i = 0; i < N; i++) {
		fake_env_init(&fe[i], i, N);
		node[i] = calloc(1, weft_proto_dag.state_size);
		int rc = weft_proto_dag.init(node[i], &fe[i].env, p.buf, p.len);
		if (rc != 0) {
			diag("dag init: %s", weft_strerror(rc));
			abort();
		}
	}
	weft_mpw_free(&p);
}

static void teardown(void)
{
	for (uint32_t i = 0; i < N; i++) {
		weft_proto_dag.destroy(node[i]);
		free(node[i]);
		fake_env_free(&fe[i]);
	}
}

/* Author a's vertex of round r referencing refs (held at a), with txs. */
static struct weft_mpw vertex(uint32_t a, uint64_t r, const uint32_t *refs, uint32_t nrefs, const char *tx)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	uint8_t *txs[1] = {(uint8_t *)tx};
	uint32_t lens[1] = {tx ? (uint32_t)strlen(tx) : 0};
	dag_vertex_encode(node[a], &w, r, refs, nrefs, txs, lens, tx ? 1 : 0);
	return w;
}

/* Decodes and accepts bytes as (origin, seq) at every node; returns the
 * reason node 0 rejected it, or NULL. */
static const char *deliver_all(uint32_t origin, uint64_t seq, const struct weft_mpw *w)
{
	const char *why0 = NULL;
	for (uint32_t i = 0; i < N; i++) {
		const char *why = NULL;
		struct dag_vertex *v = dag_vertex_decode(node[i], origin, seq, w->buf, w->len, &why);
		if (v)
			dag_accept(node[i], v, true);
		if (i == 0)
			why0 = v ? NULL : why;
	}
	return why0;
}

/* Every author makes its round r vertex referencing all of round r - 1. */
static void full_round(uint64_t r, const char *tx)
{
	uint32_t all[N] = {0, 1, 2, 3};
	for (uint32_t a = 0; a < N; a++) {
		struct weft_mpw w = vertex(a, r, all, r ? N : 0, tx);
		deliver_all(a, r, &w);
		weft_mpw_free(&w);
	}
}

static void test_validation(void)
{
	setup("sparse", 1);
	full_round(0, NULL);
	struct dag_round *R = dag_round_get(node[0], 0, false);
	is_int(R ? R->inserted : 0, N, "round 0: four vertices inserted");

	uint32_t all[N] = {0, 1, 2, 3}, two[2] = {0, 2};
	struct weft_mpw w = vertex(2, 1, all, N, NULL);
	const char *why = deliver_all(2, 1, &w);
	is_str(why, "too many references", "sparse D = 1: four references rejected (at most D + 2)");
	weft_mpw_free(&w);

	w = vertex(1, 1, two, 2, NULL);
	why = deliver_all(3, 1, &w);
	is_str(why, "vertex round or author differs from its broadcast", "a vertex delivered as another author's");
	why = deliver_all(1, 7, &w);
	is_str(why, "vertex round or author differs from its broadcast", "a vertex delivered as another round");
	w.buf[w.len - 3] ^= 0x40;
	why = deliver_all(1, 1, &w);
	is_str(why, "bad vertex signature", "a flipped signature byte");
	why = NULL;
	ok(dag_vertex_decode(node[0], 1, 1, w.buf, w.len - 10, &why) == NULL && why &&
		   strcmp(why, "malformed vertex") == 0,
	   "a truncated vertex is malformed");
	static const uint8_t garbage[] = {0xdc, 0xff, 0xff, 0x01};
	ok(dag_vertex_decode(node[0], 1, 1, garbage, sizeof(garbage), &why) == NULL, "garbage rejected");
	weft_mpw_free(&w);

	/* Round 1 (odd, no anchor): two references are fine. */
	for (uint32_t a = 0; a < N; a++) {
		w = vertex(a, 1, two, 2, NULL);
		ok(deliver_all(a, 1, &w) == NULL, "round 1 vertex of %u with 2 references accepted", a);
		weft_mpw_free(&w);
	}
	/* Round 2's anchor is node 1's: dense anchors need 2f + 1 = 3. */
	uint32_t one[1] = {1};
	w = vertex(1, 2, one, 1, NULL);
	is_str(deliver_all(1, 2, &w), "too few references", "an anchor with one reference is rejected");
	weft_mpw_free(&w);
	w = vertex(0, 2, one, 1, NULL);
	ok(deliver_all(0, 2, &w) == NULL, "a non-anchor with one reference (D) is accepted");
	weft_mpw_free(&w);

	/* A vertex far ahead of anything held is not kept; sync wants it. */
	w = vertex(3, 1000000, NULL, 0, NULL);
	const char *far = NULL;
	struct dag_vertex *v = dag_vertex_decode(node[0], 3, 1000000, w.buf, w.len, &far);
	is_str(far, "too few references", "round 1000000 with no references is invalid");
	dag_vertex_free(v);
	weft_mpw_free(&w);
	teardown();
}

static void test_parents_and_commit(void)
{
	setup("sparse", 3);
	full_round(0, "tx-r0");
	/* Round 1 arrives at node 0 before round 0 of author 3 would matter:
	 * a vertex whose parent is missing waits. */
	uint32_t all[N] = {0, 1, 2, 3};
	struct weft_mpw w = vertex(0, 1, all, 3, "tx-r1");
	for (uint32_t i = 0; i < N; i++) {
		const char *why;
		dag_accept(node[i], dag_vertex_decode(node[i], 0, 1, w.buf, w.len, &why), true);
	}
	weft_mpw_free(&w);
	ok(dag_inserted(node[0], 1, 0) != NULL, "round 1 vertex with present parents inserted");
	ok(!node[0]->has_committed, "no commit with one vote");
	for (uint32_t a = 1; a < N; a++) {
		w = vertex(a, 1, all, 3, "tx-r1");
		deliver_all(a, 1, &w);
		weft_mpw_free(&w);
	}
	ok(node[0]->has_committed && node[0]->committed_round == 0, "anchor of round 0 committed on 2f+1 votes");
	/* The anchor (node 0's round 0 vertex) is ordered: its one transaction. */
	is_int((long long)node[0]->committed_txs, 1, "one transaction ordered");
	ok(fe[0].ndeliveries == 1 && fe[0].deliveries[0].len == 5 && memcmp(fe[0].deliveries[0].data, "tx-r0", 5) == 0,
	   "delivered at position 0");
	for (uint32_t i = 1; i < N; i++)
		ok(memcmp(node[i]->order_hash, node[0]->order_hash, 32) == 0 &&
			   node[i]->committed_txs == node[0]->committed_txs,
		   "node %u has the same order hash", i);
	/* Rounds 2 and 3 commit the anchor of round 2 and everything below. */
	full_round(2, "tx-r2");
	full_round(3, NULL);
	ok(node[0]->committed_round == 2, "anchor of round 2 committed");
	is_int((long long)node[0]->committed_txs, 1 + 2 + 4 + 1,
	       "the anchor's history: round 0 minus the unreferenced vertex, round 1, the anchor");
	for (uint32_t i = 1; i < N; i++)
		ok(memcmp(node[i]->order_hash, node[0]->order_hash, 32) == 0, "node %u agrees after round 3", i);
	teardown();
}

static void test_requests(void)
{
	setup("dense", 1);
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	uint8_t big[2000] = {1};
	is_int(weft_proto_dag.on_request(node[0], big, sizeof(big), &reply), WEFT_ETOOBIG, "over tx_max refused");
	is_int(weft_proto_dag.on_request(node[0], big, 0, &reply), WEFT_EINVAL, "empty transaction refused");
	/* A transfer that claims the tag but is malformed. */
	struct weft_mpw bad;
	weft_mpw_init(&bad);
	weft_mpw_array(&bad, 7);
	weft_mpw_str(&bad, WEFT_LEDGER_TRANSFER_TAG);
	weft_mpw_uint(&bad, 1);
	weft_mpw_str(&bad, "not a key");
	for (int i = 0; i < 4; i++)
		weft_mpw_uint(&bad, 0);
	is_int(weft_proto_dag.on_request(node[0], bad.buf, bad.len, &reply), WEFT_EINVAL, "malformed transfer refused");
	weft_mpw_free(&bad);
	ok(weft_proto_dag.on_request(node[0], (const uint8_t *)"hello", 5, &reply) == 0, "opaque transaction accepted");
	is_int(node[0]->mempool.count, 1, "it waits in the mempool");
	weft_mpw_reset(&reply);
	ok(weft_proto_dag.on_request(node[0], (const uint8_t *)"hello", 5, &reply) == 0 && node[0]->mempool.count == 1,
	   "a repeat is not queued twice");
	weft_mpw_free(&reply);
	teardown();
}

static int msg(uint32_t to, uint32_t from, const struct weft_mpw *w)
{
	return weft_proto_dag.on_message(node[to], from, w->buf, w->len);
}

/* RANGE [1, 2, lo, hi, [[round, author, id, bytes|nil], ...]] for round 0:
 * one entry per author in authors, bytes[k] NULL for a digest only. */
static void range_msg(struct weft_mpw *w, uint32_t count, const uint32_t *authors, uint8_t (*ids)[32],
		      const struct weft_mpw *const *bytes)
{
	weft_mpw_reset(w);
	weft_mpw_array(w, 5);
	weft_mpw_uint(w, 1);
	weft_mpw_uint(w, DAG_MSG_RANGE);
	weft_mpw_uint(w, 0);
	weft_mpw_uint(w, 0);
	weft_mpw_array(w, count);
	for (uint32_t k = 0; k < count; k++) {
		weft_mpw_array(w, 4);
		weft_mpw_uint(w, 0);
		weft_mpw_uint(w, authors[k]);
		weft_mpw_bin(w, ids[k], 32);
		if (bytes[k])
			weft_mpw_bin(w, bytes[k]->buf, bytes[k]->len);
		else
			weft_mpw_nil(w);
	}
}

static void test_sync(void)
{
	setup("sparse", 3);
	/* Node 0 holds round 0 of authors 0 and 1 only: below its quorum. */
	struct weft_mpw v[N];
	for (uint32_t a = 0; a < N; a++) {
		v[a] = vertex(a, 0, NULL, 0, NULL);
		for (uint32_t i = 0; i < N; i++) {
			const char *why;
			if (i == 0 && a >= 2)
				continue;
			dag_accept(node[i], dag_vertex_decode(node[i], a, 0, v[a].buf, v[a].len, &why), true);
		}
	}
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 5);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, DAG_MSG_FETCH);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 1000);
	weft_mpw_bool(&w, true);
	ok(msg(0, 1, &w) < 0, "FETCH of 1001 rounds rejected");
	static const uint8_t junk[] = {0x95, 0x01, 0x02, 0xc1};
	ok(weft_proto_dag.on_message(node[0], 1, junk, sizeof(junk)) < 0, "a malformed message rejected");

	/* Peers say they are at round 5: the next sync tick fetches round 0. */
	for (uint32_t p = 1; p < N; p++) {
		weft_mpw_reset(&w);
		weft_mpw_array(&w, 4);
		weft_mpw_uint(&w, 1);
		weft_mpw_uint(&w, DAG_MSG_STATUS);
		weft_mpw_uint(&w, 5);
		weft_mpw_uint(&w, 0);
		msg(0, p, &w);
	}
	fake_env_clear(&fe[0]);
	weft_proto_dag.on_timer(node[0], DAG_TIMER_SYNC);
	ok(node[0]->sync.active && node[0]->sync.from == 0 && fake_env_count(&fe[0], "dag.fetch") == N - 1,
	   "lagging node fetches round 0 from every peer");
	uint32_t supplier = node[0]->sync.supplier;
	uint32_t other = supplier == 1 ? 2 : 1;

	/* One RANGE per peer.  The supplier sends author 3's bytes under
	 * author 2's id (forged) and author 3's real vertex; the other peer
	 * reports both ids without bytes. */
	uint32_t authors[2] = {2, 3};
	uint8_t ids[2][32];
	dag_vertex_id(v[2].buf, v[2].len, ids[0]);
	dag_vertex_id(v[3].buf, v[3].len, ids[1]);
	const struct weft_mpw *full[2] = {&v[3], &v[3]}, *none[2] = {NULL, NULL};
	range_msg(&w, 2, authors, ids, full);
	is_int(msg(0, supplier, &w), 0, "the supplier's RANGE is well formed");
	ok(dag_inserted(node[0], 0, 3) == NULL, "one peer's report is not taken (f + 1 needed)");
	range_msg(&w, 2, authors, ids, none);
	msg(0, other, &w);
	ok(dag_inserted(node[0], 0, 3) != NULL, "a second peer's matching report: the vertex is taken");
	ok(dag_inserted(node[0], 0, 2) == NULL, "an id reported twice but only with forged bytes: nothing taken");
	range_msg(&w, 2, authors, ids, none);
	w.buf[w.len - 1 - 1 - 32 - 2 - 1] = 7; /* an entry's round outside [lo, hi] */
	ok(msg(0, 3, &w) < 0, "a RANGE entry outside its own range rejected");
	weft_mpw_free(&w);
	for (uint32_t a = 0; a < N; a++)
		weft_mpw_free(&v[a]);
	teardown();
}

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	plan(41);
	test_validation();
	test_parents_and_commit();
	test_requests();
	test_sync();
	return done_testing();
}
