/* dag.c - unit tests of the DAG consensus (protocols/dag): vertex
 * validation against hostile input (too many or too few references, wrong
 * author, bad signature, garbage, rounds far ahead), insertion waiting for
 * parents, the commit rule with ordered delivery and the order hash,
 * transactions the mempool refuses, its batch records (a cursor, restarts,
 * the per-transaction form moved, a malformed record), the range fetch against hostile peers
 * (malformed FETCH and RANGE, one peer's word, forged bytes) and against
 * each lie of the lying_sync strategy, every strategy reachable from the
 * node stack, and exactly once: a transaction in two vertices of one
 * anchor's history or of two anchors, or copied by a Byzantine author, is
 * delivered once; the committed index answers tx.status and duplicates
 * across a restart and empties the restored mempool; it forgets at the dedup_rounds horizon;
 * init refuses a horizon below gc_depth; weak links (their validation, a
 * vertex waiting for a weak parent, an orphan ordered through one); state
 * sync (checkpoints, forged offers and parts, an install, own_from across a
 * restart after it, a version 2 state record); one Byzantine author racing
 * ahead does not switch off the anchor wait.  Four protocol instances over
 * fake envs (real Ed25519) exchange vertices directly, without the BRB. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../protocols/dag/dag.h"
#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/ledger.h"

#define N 4

static struct fake_env fe[N];
static struct dag *node[N];
/* Each node's application: the ledger, as the node stack gives it. */
static struct weft_ledger ledger[N];

/* Optional parameters (0: absent). */
struct extra {
	uint64_t gc_depth, dedup_rounds, brb_window, snapshot_every;
};

static void params(struct weft_mpw *w, const char *mode, uint64_t d, struct extra x)
{
	const char *keys[4] = {"gc_depth", "dedup_rounds", "brb_window", "snapshot_every"};
	uint64_t vals[4] = {x.gc_depth, x.dedup_rounds, x.brb_window, x.snapshot_every};
	weft_mpw_init(w);
	weft_mpw_map(w, 3 + (x.gc_depth > 0) + (x.dedup_rounds > 0) + (x.brb_window > 0) + (x.snapshot_every > 0));
	weft_mpw_str(w, "mode");
	weft_mpw_str(w, mode);
	weft_mpw_str(w, "d");
	weft_mpw_uint(w, d);
	weft_mpw_str(w, "tx_max");
	weft_mpw_uint(w, 1024);
	for (int k = 0; k < 4; k++)
		if (vals[k]) {
			weft_mpw_str(w, keys[k]);
			weft_mpw_uint(w, vals[k]);
		}
}

/* (Re)starts node i's protocol on fe[i] (whose kv it keeps). */
static void start_node(uint32_t i, const char *mode, uint64_t d, struct extra x)
{
	struct weft_mpw p;
	params(&p, mode, d, x);
	if (node[i] == NULL)
		node[i] = malloc(weft_dag_consensus.state_size);
	memset(node[i], 0, weft_dag_consensus.state_size);
	int rc = weft_dag_consensus.init(node[i], &fe[i].env, p.buf, p.len);
	if (rc == 0)
		rc = weft_ledger_init(&ledger[i], &fe[i].env, p.buf, p.len);
	if (rc != 0) {
		diag("dag init: %s", weft_strerror(rc));
		abort();
	}
	struct weft_app app;
	weft_ledger_app(&ledger[i], &app);
	weft_dag_set_app(node[i], &app);
	weft_mpw_free(&p);
}

static void setup_with(const char *mode, uint64_t d, struct extra x)
{
	for (uint32_t i = 0; i < N; i++) {
		fake_env_init(&fe[i], i, N);
		start_node(i, mode, d, x);
	}
}

static void setup(const char *mode, uint64_t d)
{
	setup_with(mode, d, (struct extra){0});
}

static void teardown(void)
{
	for (uint32_t i = 0; i < N; i++) {
		weft_dag_consensus.destroy(node[i]);
		free(node[i]);
		node[i] = NULL;
		fake_env_free(&fe[i]);
	}
}

#define MAX_BATCH 8

/* Author a's vertex of round r referencing refs (held at a), with the
 * transactions of batch (NULL-terminated; NULL: none). */
static struct weft_mpw vertex_batch(uint32_t a, uint64_t r, const uint32_t *refs, uint32_t nrefs,
				    const char *const *batch)
{
	struct weft_mpw w;
	const uint8_t *txs[MAX_BATCH];
	uint32_t lens[MAX_BATCH], ntx = 0;
	for (; batch && batch[ntx] && ntx < MAX_BATCH; ntx++) {
		txs[ntx] = (const uint8_t *)batch[ntx];
		lens[ntx] = (uint32_t)strlen(batch[ntx]);
	}
	weft_mpw_init(&w);
	dag_vertex_encode(node[a], &w, r, refs, nrefs, NULL, 0, txs, lens, NULL, ntx);
	return w;
}

/* The same with one transaction (or none: NULL). */
static struct weft_mpw vertex(uint32_t a, uint64_t r, const uint32_t *refs, uint32_t nrefs, const char *tx)
{
	const char *batch[2] = {tx, NULL};
	return vertex_batch(a, r, refs, nrefs, batch);
}

/* Decodes and accepts bytes as (origin, seq) at every node; returns the
 * reason node 0 rejected it, or NULL. */
static const char *deliver_all(uint32_t origin, uint64_t seq, const struct weft_mpw *w)
{
	const char *why0 = NULL;
	for (uint32_t i = 0; i < N; i++) {
		const char *why = NULL;
		struct dag_vertex *v = dag_vertex_decode(node[i], origin, seq, w->buf, w->len, NULL, &why);
		if (v)
			dag_accept(node[i], v, true);
		if (i == 0)
			why0 = v ? NULL : why;
	}
	return why0;
}

/* Every author makes its round r vertex referencing all of round r - 1,
 * author a's batch being batch[a] (NULL-terminated; batch or batch[a]
 * NULL: none). */
static void round_of(uint64_t r, const char *const *const *batch)
{
	uint32_t all[N] = {0, 1, 2, 3};
	for (uint32_t a = 0; a < N; a++) {
		struct weft_mpw w = vertex_batch(a, r, all, r ? N : 0, batch ? batch[a] : NULL);
		deliver_all(a, r, &w);
		weft_mpw_free(&w);
	}
}

/* round_of with one transaction per author, "<tx>/<author>" (tx NULL: none). */
static void full_round(uint64_t r, const char *tx)
{
	char text[N][32];
	const char *one[N][2];
	const char *const *batch[N];
	for (uint32_t a = 0; a < N; a++) {
		snprintf(text[a], sizeof(text[a]), "%s/%u", tx ? tx : "", a);
		one[a][0] = text[a];
		one[a][1] = NULL;
		batch[a] = one[a];
	}
	round_of(r, tx ? batch : NULL);
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
	ok(dag_vertex_decode(node[0], 1, 1, w.buf, w.len - 10, NULL, &why) == NULL && why &&
		   strcmp(why, "malformed vertex") == 0,
	   "a truncated vertex is malformed");
	static const uint8_t garbage[] = {0xdc, 0xff, 0xff, 0x01};
	ok(dag_vertex_decode(node[0], 1, 1, garbage, sizeof(garbage), NULL, &why) == NULL, "garbage rejected");
	weft_mpw_free(&w);

	/* The same vertex in longer msgpack forms (an array 16 header, a bin 16
	 * transaction or signature): a vertex has one accepted byte form, so
	 * that its id (and the BRB's name of it) stands for one byte string. */
	const char *just_tx[] = {"tx", NULL};
	w = vertex_batch(1, 1, two, 2, just_tx);
	struct dag_vertex *plain = dag_vertex_decode(node[0], 1, 1, w.buf, w.len, NULL, &why);
	ok(plain != NULL, "the vertex in its own form is valid");
	dag_vertex_free(plain);
	uint8_t id[32], id2[32];
	ok(dag_vertex_id(w.buf, w.len, id) == 0, "... and has an id");
	struct weft_mpw longer;
	weft_mpw_init(&longer);
	uint8_t a16[] = {0xdc, 0x00, 0x07};
	weft_mpw_raw(&longer, a16, sizeof(a16));
	weft_mpw_raw(&longer, w.buf + 1, w.len - 1);
	ok(dag_vertex_decode(node[0], 1, 1, longer.buf, longer.len, NULL, &why) == NULL &&
		   dag_vertex_id(longer.buf, longer.len, id2) != 0,
	   "an array 16 header: refused, no id");
	/* The signature as bin 16: c4 40 <64> becomes c5 00 40 <64>. */
	weft_mpw_reset(&longer);
	weft_mpw_raw(&longer, w.buf, w.len - 66);
	uint8_t b16[] = {0xc5, 0x00, 0x40};
	weft_mpw_raw(&longer, b16, sizeof(b16));
	weft_mpw_raw(&longer, w.buf + w.len - 64, 64);
	ok(dag_vertex_decode(node[0], 1, 1, longer.buf, longer.len, NULL, &why) == NULL &&
		   dag_vertex_id(longer.buf, longer.len, id2) != 0,
	   "a bin 16 signature: refused, no id");
	/* The transaction "tx" as bin 16: c4 02 "tx" becomes c5 00 02 "tx". */
	size_t at = w.len - 66 - 4;
	ok(w.buf[at] == 0xc4 && w.buf[at + 1] == 2, "(the transaction's header is where expected)");
	weft_mpw_reset(&longer);
	weft_mpw_raw(&longer, w.buf, at);
	uint8_t t16[] = {0xc5, 0x00, 0x02};
	weft_mpw_raw(&longer, t16, sizeof(t16));
	weft_mpw_raw(&longer, w.buf + at + 2, w.len - at - 2);
	ok(dag_vertex_decode(node[0], 1, 1, longer.buf, longer.len, NULL, &why) == NULL &&
		   dag_vertex_id(longer.buf, longer.len, id2) != 0,
	   "a bin 16 transaction: refused, no id");
	weft_mpw_free(&longer);
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
	struct dag_vertex *v = dag_vertex_decode(node[0], 3, 1000000, w.buf, w.len, NULL, &far);
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
	struct weft_mpw w = vertex(0, 1, all, 3, "tx-r1/0");
	for (uint32_t i = 0; i < N; i++) {
		const char *why;
		dag_accept(node[i], dag_vertex_decode(node[i], 0, 1, w.buf, w.len, NULL, &why), true);
	}
	weft_mpw_free(&w);
	ok(dag_inserted(node[0], 1, 0) != NULL, "round 1 vertex with present parents inserted");
	ok(!node[0]->has_committed, "no commit with one vote");
	for (uint32_t a = 1; a < N; a++) {
		char tx[16];
		snprintf(tx, sizeof(tx), "tx-r1/%u", a);
		w = vertex(a, 1, all, 3, tx);
		deliver_all(a, 1, &w);
		weft_mpw_free(&w);
	}
	ok(node[0]->has_committed && node[0]->committed_round == 0, "anchor of round 0 committed on 2f+1 votes");
	/* The anchor (node 0's round 0 vertex) is ordered: its one transaction. */
	is_int((long long)node[0]->committed_txs, 1, "one transaction ordered");
	ok(fe[0].ndeliveries == 1 && fe[0].deliveries[0].len == 7 && memcmp(fe[0].deliveries[0].data, "tx-r0/0", 7) == 0,
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
	is_int(weft_dag_consensus.on_request(node[0], big, sizeof(big), &reply), WEFT_ETOOBIG, "over tx_max refused");
	is_int(weft_dag_consensus.on_request(node[0], big, 0, &reply), WEFT_EINVAL, "empty transaction refused");
	/* A transfer that claims the tag but is malformed. */
	struct weft_mpw bad;
	weft_mpw_init(&bad);
	weft_mpw_array(&bad, 7);
	weft_mpw_str(&bad, WEFT_LEDGER_TRANSFER_TAG);
	weft_mpw_uint(&bad, 1);
	weft_mpw_str(&bad, "not a key");
	for (int i = 0; i < 4; i++)
		weft_mpw_uint(&bad, 0);
	is_int(weft_dag_consensus.on_request(node[0], bad.buf, bad.len, &reply), WEFT_EINVAL, "malformed transfer refused");
	weft_mpw_free(&bad);
	ok(weft_dag_consensus.on_request(node[0], (const uint8_t *)"hello", 5, &reply) == 0, "opaque transaction accepted");
	is_int(node[0]->mempool.count, 1, "it waits in the mempool");
	weft_mpw_reset(&reply);
	ok(weft_dag_consensus.on_request(node[0], (const uint8_t *)"hello", 5, &reply) == 0 && node[0]->mempool.count == 1,
	   "a repeat is not queued twice");
	weft_mpw_free(&reply);
	teardown();
}

static int msg(uint32_t to, uint32_t from, const struct weft_mpw *w)
{
	return weft_dag_consensus.on_message(node[to], from, w->buf, w->len);
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
			dag_accept(node[i], dag_vertex_decode(node[i], a, 0, v[a].buf, v[a].len, NULL, &why), true);
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
	ok(weft_dag_consensus.on_message(node[0], 1, junk, sizeof(junk)) < 0, "a malformed message rejected");

	/* Peers say they are at round 5: the next sync tick fetches round 0. */
	for (uint32_t p = 1; p < N; p++) {
		weft_mpw_reset(&w);
		weft_mpw_array(&w, 5);
		weft_mpw_uint(&w, 1);
		weft_mpw_uint(&w, DAG_MSG_STATUS);
		weft_mpw_uint(&w, 5);
		weft_mpw_uint(&w, 0);
		weft_mpw_uint(&w, 0);
		msg(0, p, &w);
	}
	fake_env_clear(&fe[0]);
	weft_dag_consensus.on_timer(node[0], DAG_TIMER_SYNC);
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

/* ---- exactly once ---- */

/* The reply to query `what` about the digest of text at node i, as JSON
 * (NULL on failure); the caller frees it. */
static json_t *query(uint32_t i, const char *what, const char *text)
{
	uint8_t key[32];
	struct weft_mpw arg, reply;
	json_t *j = NULL;
	weft_hash(key, text, strlen(text));
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_bin(&arg, key, sizeof(key));
	int rc = weft_ledger_query(&ledger[i], what, arg.buf, arg.len, &reply);
	if (rc == WEFT_NOTFOUND)
		rc = weft_dag_consensus.query(node[i], what, arg.buf, arg.len, &reply);
	if (rc == 0)
		weft_mp_buf_to_json(reply.buf, reply.len, &j);
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return j;
}

/* tx.status of text at node i: its status, round and position (-1: absent). */
static const char *status(uint32_t i, const char *text, long long *round, long long *position)
{
	static char buf[32];
	json_t *j = query(i, "tx.status", text);
	const char *s = json_string_value(json_object_get(j, "status"));
	json_t *r = json_object_get(j, "round"), *p = json_object_get(j, "position");
	snprintf(buf, sizeof(buf), "%s", s ? s : "(none)");
	*round = r ? json_integer_value(r) : -1;
	*position = p ? json_integer_value(p) : -1;
	json_decref(j);
	return buf;
}

/* on_request of text at node i: its rc; *dup the reply's "duplicate". */
static int submit(uint32_t i, const char *text, bool *dup)
{
	struct weft_mpw reply;
	json_t *j = NULL;
	weft_mpw_init(&reply);
	int rc = weft_dag_consensus.on_request(node[i], (const uint8_t *)text, strlen(text), &reply);
	weft_mp_buf_to_json(reply.buf, reply.len, &j);
	*dup = json_is_true(json_object_get(j, "duplicate"));
	json_decref(j);
	weft_mpw_free(&reply);
	return rc;
}

/* How many of node i's deliveries carry text. */
static int delivered(uint32_t i, const char *text)
{
	int k = 0;
	for (size_t d = 0; d < fe[i].ndeliveries; d++)
		k += fe[i].deliveries[d].len == strlen(text) && memcmp(fe[i].deliveries[d].data, text, strlen(text)) == 0;
	return k;
}

/* Every node at node 0's committed_txs and order hash. */
static bool agree(void)
{
	bool same = true;
	for (uint32_t i = 1; i < N; i++)
		same &= node[i]->committed_txs == node[0]->committed_txs &&
			memcmp(node[i]->order_hash, node[0]->order_hash, 32) == 0 &&
			fe[i].ndeliveries == fe[0].ndeliveries;
	return same;
}

static void test_exactly_once(void)
{
	setup("sparse", 3);
	/* Node 0 has m1 in its mempool; author 3 will carry it in a vertex. */
	bool dup;
	ok(submit(0, "m1", &dup) == 0 && !dup && node[0]->mempool.count == 1, "m1 waits in node 0's mempool");
	round_of(0, NULL);
	round_of(1, NULL); /* commits the (empty) anchor of round 0 */

	/* Round 2: the leader (author 1) carries p1; author 0 p0; author 2 p2
	 * and p0; author 3, Byzantine, copies everyone's (p0 twice) and adds
	 * its own b3. */
	const char *a0[] = {"p0", NULL}, *a1[] = {"p1", NULL}, *a2[] = {"p2", "p0", NULL},
		   *a3[] = {"p0", "p1", "p2", "p0", "b3", NULL};
	const char *const *r2[N] = {a0, a1, a2, a3};
	round_of(2, r2);
	round_of(3, NULL); /* commits the anchor of round 2: p1 */
	is_int((long long)node[0]->committed_txs, 1, "the anchor of round 2 commits its own p1");
	round_of(4, NULL);
	round_of(5, NULL); /* commits the anchor of round 4: round 2's other vertices */
	is_int((long long)node[0]->committed_txs, 4, "the anchor of round 4 adds p0, p2, b3: 4 transactions in all");
	is_int((long long)node[0]->duplicates_skipped, 5,
	       "5 copies skipped: p0 twice in one anchor's batch, p1 across anchors, p2 and p0 again from the copier");
	ok(delivered(0, "p0") == 1 && delivered(0, "p1") == 1 && delivered(0, "p2") == 1 && delivered(0, "b3") == 1 &&
		   fe[0].ndeliveries == 4,
	   "each delivered once, in 4 deliveries");
	ok(fe[0].deliveries[1].origin == 0 && fe[0].deliveries[2].origin == 2 && fe[0].deliveries[3].origin == 3,
	   "p0 from author 0 (first in the order), p2 from author 2, b3 from the copier");
	ok(agree(), "every node: the same committed_txs, order hash and deliveries");
	is_int((long long)ledger[0].height, 4, "the ledger applied 4 transactions");

	/* The committed index answers submissions and tx.status. */
	long long round, pos;
	ok(submit(1, "p0", &dup) == 0 && dup && node[1]->mempool.count == 0, "p0 resubmitted: duplicate, not queued");
	is_str(status(1, "p0", &round, &pos), "committed", "tx.status of p0: committed");
	ok(round == 4 && pos == 1, "at the anchor round 4, position 1 (got %lld, %lld)", round, pos);
	json_t *j = query(1, "tx.status", "p0");
	char hex[65];
	uint8_t digest[32];
	weft_hash(digest, "p0", 2);
	weft_hex_encode(hex, digest, 32);
	ok(json_is_string(json_object_get(j, "digest")) && strcmp(json_string_value(json_object_get(j, "digest")), hex) == 0,
	   "tx.status: the digest as lowercase hex");
	json_decref(j);
	j = query(1, "ledger.balance", "p0");
	ok(json_is_string(json_object_get(j, "account")) && strlen(json_string_value(json_object_get(j, "account"))) == 64,
	   "ledger.balance: the account as hex");
	json_decref(j);

	/* m1 commits through author 3's anchor while it waits at node 0. */
	const char *m1[] = {"m1", NULL};
	const char *const *r6[N] = {NULL, NULL, NULL, m1};
	round_of(6, r6);
	round_of(7, NULL);
	is_str(status(0, "m1", &round, &pos), "committed", "m1 committed through author 3's vertex");
	ok(node[0]->mempool.count == 1, "... while node 0's mempool still holds it");

	/* Restart node 0 on its kv. */
	weft_dag_consensus.destroy(node[0]);
	start_node(0, "sparse", 3, (struct extra){0});
	is_str(status(0, "p0", &round, &pos), "committed", "after a restart: tx.status of p0 still committed");
	ok(pos == 1, "at position 1");
	ok(submit(0, "p1", &dup) == 0 && dup && node[0]->mempool.count == 0,
	   "after a restart: p1 resubmitted is a duplicate, not queued");
	ok(node[0]->mempool.count == 0, "after a restart: the mempool dropped m1, committed meanwhile");
	ok(submit(0, "fresh", &dup) == 0 && !dup && node[0]->mempool.count == 1, "a new transaction is still taken");
	teardown();
}

static void test_horizon(void)
{
	setup_with("sparse", 3, (struct extra){.gc_depth = 4, .dedup_rounds = 4});
	const char *h[] = {"h", NULL};
	const char *const *anchor0[N] = {h, NULL, NULL, NULL};
	const char *const *by3[N] = {NULL, NULL, NULL, h};
	const char *const *by2[N] = {NULL, NULL, h, NULL};
	round_of(0, anchor0);
	round_of(1, NULL);
	is_int((long long)node[0]->committed_txs, 1, "h committed by the anchor of round 0");
	round_of(2, by3); /* ordered by the anchor of round 4: inside the horizon */
	for (uint64_t r = 3; r < 6; r++)
		round_of(r, NULL);
	ok(node[0]->committed_round == 4 && node[0]->committed_txs == 1 && node[0]->duplicates_skipped == 1,
	   "h again in round 2, ordered by the anchor of round 4 (4 - 4 <= 0): skipped");
	round_of(6, by2); /* not the anchor (author 3's): ordered by the anchor of round 8 */
	round_of(7, NULL);
	ok(node[0]->committed_round == 6 && node[0]->committed_txs == 1, "the anchor of round 6 committed, nothing new");
	uint8_t digest[32];
	weft_hash(digest, "h", 1);
	const void *v;
	size_t vlen;
	uint8_t ek[9] = {'E'}; /* round 0's expiry record */
	ok(dag_dedup_get(node[0], digest, NULL) == WEFT_NOTFOUND &&
		   fe[0].env.ops->kv_get(&fe[0].env, ek, sizeof(ek), &v, &vlen) == WEFT_NOTFOUND,
	   "the anchor of round 6 forgot what round 0 committed (below 6 - dedup_rounds), its record too");
	round_of(8, NULL);
	round_of(9, NULL);
	struct dag_committed c = {0};
	ok(node[0]->committed_round == 8 && node[0]->committed_txs == 2 && delivered(0, "h") == 2,
	   "past the horizon the same transaction is ordered again (documented)");
	ok(dag_dedup_get(node[0], digest, &c) == 0 && c.round == 8 && c.position == 1, "and indexed again at round 8");
	ok(agree(), "every node made the same decisions");
	teardown();
}

static void test_dedup_params(void)
{
	struct fake_env e;
	struct weft_mpw p;
	struct dag *d = malloc(weft_dag_consensus.state_size);
	fake_env_init(&e, 0, N);
	params(&p, "sparse", 3, (struct extra){.gc_depth = 10, .dedup_rounds = 9});
	memset(d, 0, weft_dag_consensus.state_size);
	is_int(weft_dag_consensus.init(d, &e.env, p.buf, p.len), WEFT_EINVAL, "dedup_rounds 9 below gc_depth 10: init refuses");
	weft_mpw_free(&p);
	params(&p, "sparse", 3, (struct extra){.gc_depth = 10, .dedup_rounds = 10});
	memset(d, 0, weft_dag_consensus.state_size);
	ok(weft_dag_consensus.init(d, &e.env, p.buf, p.len) == 0 && d->dedup_rounds == 10, "dedup_rounds = gc_depth is fine");
	weft_dag_consensus.destroy(d);
	weft_mpw_free(&p);
	params(&p, "sparse", 3, (struct extra){.gc_depth = 3000, .brb_window = 4096});
	memset(d, 0, weft_dag_consensus.state_size);
	ok(weft_dag_consensus.init(d, &e.env, p.buf, p.len) == 0 && d->dedup_rounds == 3000,
	   "the default horizon (2000) follows a larger gc_depth");
	weft_dag_consensus.destroy(d);
	weft_mpw_free(&p);
	params(&p, "sparse", 3, (struct extra){0});
	memset(d, 0, weft_dag_consensus.state_size);
	ok(weft_dag_consensus.init(d, &e.env, p.buf, p.len) == 0 && d->dedup_rounds == 2000, "default dedup_rounds: 2000");
	weft_dag_consensus.destroy(d);
	weft_mpw_free(&p);
	free(d);
	fake_env_free(&e);
}

/* Author a's round r vertex with weak references to the vertices (round,
 * author) of weak[] as a holds them, and no transaction. */
static struct weft_mpw vertex_weak(uint32_t a, uint64_t r, const uint32_t *refs, uint32_t nrefs,
				   const uint32_t (*weak)[2], uint32_t nweak)
{
	struct dag_vertex *w[8];
	for (uint32_t i = 0; i < nweak; i++)
		w[i] = dag_inserted(node[a], weak[i][0], weak[i][1]);
	struct weft_mpw out;
	weft_mpw_init(&out);
	dag_vertex_encode(node[a], &out, r, refs, nrefs, w, nweak, NULL, NULL, NULL, 0);
	return out;
}

/* Weak links: validation of the weak list, a vertex waiting for its weak
 * parent, and an orphan ordered through a weak reference. */
static void test_weak_links(void)
{
	setup("sparse", 1);
	/* Round 0: author 3's vertex reaches nodes 1 to 3 only. */
	for (uint32_t a = 0; a < N; a++) {
		char tx[16];
		snprintf(tx, sizeof(tx), "r0/%u", a);
		struct weft_mpw w = vertex(a, 0, NULL, 0, tx);
		for (uint32_t i = a == 3; i < N; i++) {
			const char *why;
			dag_accept(node[i], dag_vertex_decode(node[i], a, 0, w.buf, w.len, NULL, &why), true);
		}
		weft_mpw_free(&w);
	}
	/* Round 1: nobody references author 3's round 0 vertex. */
	uint32_t three[3] = {0, 1, 2};
	for (uint32_t a = 0; a < 3; a++) {
		struct weft_mpw w = vertex(a, 1, three, 3, NULL);
		deliver_all(a, 1, &w);
		weft_mpw_free(&w);
	}
	ok(!dag_inserted(node[1], 0, 3)->referenced, "author 3's round 0 vertex is an orphan");

	static const uint32_t to_r1[1][2] = {{1, 0}}, down[2][2] = {{0, 2}, {0, 1}},
			      five[5][2] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}}, orphan[1][2] = {{0, 3}};
	struct weft_mpw w = vertex_weak(1, 2, three, 3, to_r1, 1);
	is_str(deliver_all(1, 2, &w), "weak references not distinct older vertices in ascending order",
	       "a weak reference to the previous round is refused");
	weft_mpw_free(&w);
	w = vertex_weak(1, 2, three, 3, down, 2);
	is_str(deliver_all(1, 2, &w), "weak references not distinct older vertices in ascending order",
	       "weak references out of order are refused");
	weft_mpw_free(&w);
	w = vertex_weak(1, 2, three, 3, five, 5);
	is_str(deliver_all(1, 2, &w), "too many weak references", "more than weak_max (n) weak references are refused");
	weft_mpw_free(&w);

	/* The round 2 anchor (author 1) takes the orphan by a weak reference:
	 * node 0, which lacks it, holds the anchor back until it arrives. */
	w = vertex_weak(1, 2, three, 3, orphan, 1);
	ok(deliver_all(1, 2, &w) == NULL, "an anchor with a weak reference to an orphan is valid");
	weft_mpw_free(&w);
	ok(dag_inserted(node[1], 2, 1) && dag_inserted(node[1], 0, 3)->referenced,
	   "node 1 inserts it; the orphan is referenced now");
	ok(dag_inserted(node[0], 2, 1) == NULL, "node 0 waits for the weak parent it lacks");
	struct weft_mpw late = vertex(3, 0, NULL, 0, "r0/3");
	const char *why;
	dag_accept(node[0], dag_vertex_decode(node[0], 3, 0, late.buf, late.len, NULL, &why), true);
	weft_mpw_free(&late);
	ok(dag_inserted(node[0], 2, 1) != NULL, "the weak parent arrives: node 0 inserts the anchor");

	/* Round 2 (authors 0, 2) and round 3 (votes) commit the anchor: its
	 * history, along the weak reference, includes the orphan. */
	for (uint32_t a = 0; a < 3; a += 2) {
		w = vertex(a, 2, three, 3, NULL);
		deliver_all(a, 2, &w);
		weft_mpw_free(&w);
	}
	for (uint32_t a = 0; a < 3; a++) {
		w = vertex(a, 3, three, 3, NULL);
		deliver_all(a, 3, &w);
		weft_mpw_free(&w);
	}
	ok(node[0]->committed_round == 2, "anchor of round 2 committed");
	is_int((long long)node[0]->committed_txs, 4, "all four round 0 transactions ordered, the orphan's too");
	for (uint32_t i = 1; i < N; i++)
		ok(node[i]->committed_txs == 4 && memcmp(node[i]->order_hash, node[0]->order_hash, 32) == 0,
		   "node %u orders the same", i);
	teardown();
}

/* Hands node `to` the last message of kind that node `from` sent. */
static int relay(uint32_t from, uint32_t to, const char *kind)
{
	const struct fake_sent *m = fake_env_last(&fe[from], kind);
	if (m == NULL)
		return WEFT_NOTFOUND;
	return weft_dag_consensus.on_message(node[to], from, m->data, m->len);
}

/* [1, type, args...] with unsigned arguments, then one bin (NULL: none). */
static void snap_msg(struct weft_mpw *w, uint64_t type, uint32_t nargs, const uint64_t *args, const void *bin,
		     size_t blen)
{
	weft_mpw_reset(w);
	weft_mpw_array(w, 2 + nargs + (bin != NULL));
	weft_mpw_uint(w, 1);
	weft_mpw_uint(w, type);
	for (uint32_t i = 0; i < nargs; i++)
		weft_mpw_uint(w, args[i]);
	if (bin)
		weft_mpw_bin(w, bin, blen);
}

/* The last dag.jump log line. */
static char jump_log[512];

static void keep_jump_log(struct fake_env *f, enum weft_log_level level, const char *event, const char *text)
{
	(void)f, (void)level;
	if (strcmp(event, "dag.jump") == 0)
		snprintf(jump_log, sizeof(jump_log), "%s", text);
}

/* State sync: a node whose store was lost asks for checkpoints once f + 1
 * peers no longer serve round 0, takes one only when f + 1 peers offer the
 * same, refuses parts it did not ask for and a snapshot whose hash is not
 * the offered one, and installs a real one. */
static void test_state_sync(void)
{
	struct extra x = {.gc_depth = 4, .snapshot_every = 4};
	setup_with("dense", 1, x);
	for (uint64_t r = 0; r < 14; r++)
		full_round(r, "s");
	for (uint32_t i = 0; i < N; i++)
		dag_gc(node[i]);
	ok(node[0]->checkpoint_round >= 4 && node[0]->kv_floor > 0, "checkpoints written (round %llu), old rounds gone",
	   (unsigned long long)node[0]->checkpoint_round);
	/* Node 3 loses its store. */
	weft_dag_consensus.destroy(node[3]);
	fake_env_free(&fe[3]);
	fake_env_init(&fe[3], 3, N);
	start_node(3, "dense", 1, x);
	struct weft_mpw w;
	weft_mpw_init(&w);
	for (uint32_t p = 0; p < 3; p++) {
		uint64_t status[3] = {13, node[p]->committed_round + 1, node[p]->kv_floor};
		snap_msg(&w, DAG_MSG_STATUS, 3, status, NULL, 0);
		msg(3, p, &w);
	}
	fake_env_clear(&fe[3]);
	fe[3].now_us += 10000000;
	weft_dag_consensus.on_timer(node[3], DAG_TIMER_SYNC);
	is_int((long long)fake_env_count(&fe[3], "dag.snap_ask"), 1, "peers no longer serve round 0: node 3 asks");

	/* Bad input: a malformed offer; two forged offers (f + 1 = 2) whose
	 * bytes do not hash to the offer; a part from a peer not asked. */
	uint8_t zero[32] = {0};
	uint64_t bad[2] = {1000, 10};
	snap_msg(&w, DAG_MSG_SNAP_INFO, 2, bad, "short", 5);
	is_int(msg(3, 1, &w), WEFT_EDECODE, "an offer with a short hash is malformed");
	snap_msg(&w, DAG_MSG_SNAP_INFO, 2, bad, zero, 32);
	msg(3, 1, &w);
	ok(!node[3]->snap.active, "one peer's offer is not taken");
	msg(3, 2, &w);
	ok(node[3]->snap.active && fake_env_count(&fe[3], "dag.snap_get") == 1, "f + 1 matching offers: a part is asked");
	uint32_t supplier = node[3]->snap.supplier;
	uint64_t part[2] = {1000, 0};
	snap_msg(&w, DAG_MSG_SNAP_PART, 2, part, "0123456789", 10);
	is_int(msg(3, supplier == 1 ? 2 : 1, &w), 0, "a part from a peer not asked is ignored");
	ok(node[3]->snap.got == 0, "and not taken");
	snap_msg(&w, DAG_MSG_SNAP_PART, 2, part, "0123456789abc", 13);
	is_int(msg(3, supplier, &w), WEFT_EPROTO, "a part beyond the offered size is refused");
	snap_msg(&w, DAG_MSG_SNAP_PART, 2, part, "0123456789", 10);
	msg(3, supplier, &w);
	ok(!node[3]->snap.active && node[3]->snap.installs == 0 && !node[3]->has_committed,
	   "bytes that do not hash to the offer are not installed");

	/* The real thing: offers from nodes 0 to 2, parts from the supplier. */
	for (uint32_t p = 0; p < 3; p++) {
		fake_env_clear(&fe[p]);
		snap_msg(&w, DAG_MSG_SNAP_ASK, 0, NULL, NULL, 0);
		msg(p, 3, &w);
		relay(p, 3, "dag.snap_info");
	}
	ok(node[3]->snap.active, "f + 1 honest offers: fetching round %llu", (unsigned long long)node[3]->snap.want.round);
	for (int parts = 0; node[3]->snap.active && parts < 16; parts++) {
		uint32_t sp = node[3]->snap.supplier;
		relay(3, sp, "dag.snap_get");
		relay(sp, 3, "dag.snap_part");
	}
	uint64_t cp = node[0]->checkpoint_round;
	ok(node[3]->snap.installs == 1 && node[3]->has_committed && node[3]->committed_round == cp,
	   "installed: node 3 has committed up to round %llu", (unsigned long long)cp);
	ok(node[3]->floor == cp - 4 && node[3]->next_round > node[3]->floor, "its floor is gc_depth below, its own rounds above");
	ok(ledger[3].height == node[3]->committed_txs && ledger[3].height > 0, "the ledger reloaded at height %llu",
	   (unsigned long long)ledger[3].height);
	/* A restart before node 3 made a vertex above the jump: it must not
	 * wait for its own vertex of a round it skipped (tla/
	 * DagSyncOwnFromLost: own_from was not saved, so the restarted node
	 * waited for good). */
	uint64_t own_from = node[3]->own_from, next_round = node[3]->next_round;
	ok(own_from == next_round && own_from > node[3]->floor, "the install moved its own rounds to %llu",
	   (unsigned long long)own_from);
	weft_dag_consensus.destroy(node[3]);
	start_node(3, "dense", 1, x);
	is_int((long long)node[3]->own_from, (long long)own_from, "after a restart: own_from kept");
	is_int((long long)node[3]->next_round, (long long)next_round, "after a restart: next_round kept");
	/* A store written before own_from was saved (state version 2, 8 bytes
	 * shorter) still loads, with own_from 0 as it had then. */
	const void *sv;
	size_t slen;
	uint8_t old[256];
	ok(fe[3].env.ops->kv_get(&fe[3].env, "S", 1, &sv, &slen) == 0 && slen - 8 <= sizeof(old), "the state record");
	memcpy(old, sv, slen - 8);
	old[0] = 2;
	fe[3].env.ops->kv_put(&fe[3].env, "S", 1, old, slen - 8);
	weft_dag_consensus.destroy(node[3]);
	start_node(3, "dense", 1, x);
	ok(node[3]->own_from == 0 && node[3]->next_round == next_round, "a version 2 state record loads");
	/* The floor passes our rounds (we fell behind): we jump, and the log
	 * names the round our next vertex will have. */
	fe[3].log_hook = keep_jump_log;
	dag_raise_floor(node[3], next_round + 2);
	fe[3].log_hook = NULL;
	char want[64];
	snprintf(want, sizeof(want), "to=%llu ", (unsigned long long)node[3]->next_round);
	ok(node[3]->next_round == next_round + 3 && strstr(jump_log, want) != NULL,
	   "the dag.jump log names the round it jumped to (%s): \"%s\"", want, jump_log);
	weft_mpw_free(&w);
	teardown();
}

/* FETCH [1, 1, from, to, full] of node 0's running fetch. */
static void fetch_msg(struct weft_mpw *w, bool full)
{
	weft_mpw_reset(w);
	weft_mpw_array(w, 5);
	weft_mpw_uint(w, 1);
	weft_mpw_uint(w, DAG_MSG_FETCH);
	weft_mpw_uint(w, node[0]->sync.from);
	weft_mpw_uint(w, node[0]->sync.to);
	weft_mpw_bool(w, full);
}

/* The range fetch against the strategy lying_sync (adversary.c) run by
 * node 1: each of its RANGE lies in turn (no entries, wrong digests,
 * garbled bytes, another slot's vertex, entries outside the range) is
 * refused, with node 0's counters saying how, and leaves the slots free
 * for the honest answers that follow. */
static void test_lying_sync(void)
{
	static const char *const lies[] = {"omit", "digests", "garble", "swap", "outside"};
	setup("sparse", 3);
	const struct weft_proto_strategy *st = weft_proto_strategy_find(&weft_dag_consensus, "lying_sync");
	struct weft_mpw p;
	size_t alen;
	params(&p, "sparse", 3, (struct extra){0});
	uint8_t *ap = weft_params_with_adversary(p.buf, p.len, NULL, 0, &alen);
	weft_dag_consensus.destroy(node[1]);
	node[1] = realloc(node[1], st->ops->state_size);
	memset(node[1], 0, st->ops->state_size);
	ok(st && st->ops->init(node[1], &fe[1].env, ap, alen) == 0, "node 1 runs lying_sync");
	free(ap);
	weft_mpw_free(&p);
	/* Node 0 lacks round 0 of authors 2 and 3, which the others hold. */
	struct weft_mpw v[N], w;
	for (uint32_t a = 0; a < N; a++) {
		v[a] = vertex(a, 0, NULL, 0, NULL);
		for (uint32_t i = a < 2 ? 0 : 1; i < N; i++) {
			const char *why;
			dag_accept(node[i], dag_vertex_decode(node[i], a, 0, v[a].buf, v[a].len, NULL, &why), true);
		}
	}
	weft_mpw_init(&w);
	for (uint32_t q = 1; q < N; q++) {
		uint64_t status[3] = {5, 0, 0};
		snap_msg(&w, DAG_MSG_STATUS, 3, status, NULL, 0);
		msg(0, q, &w);
	}
	fake_env_clear(&fe[1]);
	st->ops->on_timer(node[1], DAG_TIMER_SYNC);
	relay(1, 0, "dag.status");
	ok(node[0]->sync.peer_round[1] > 1000000, "node 1's STATUS claims round %llu",
	   (unsigned long long)node[0]->sync.peer_round[1]);
	for (size_t k = 0; k < sizeof(lies) / sizeof(lies[0]); k++) {
		/* A new fetch; node 1 is asked for full vertices, node 2 for digests. */
		fe[0].now_us += 3 * node[0]->sync_us;
		weft_dag_consensus.on_timer(node[0], DAG_TIMER_SYNC);
		if (k == 0)
			is_int((long long)node[0]->sync.target, 5, "but the target is the (f + 1)-th highest round");
		uint64_t rejected = node[0]->rejected, forged = node[0]->sync.forged;
		fake_env_clear(&fe[1]);
		fetch_msg(&w, true);
		st->ops->on_message(node[1], 0, w.buf, w.len);
		int rc = relay(1, 0, "dag.range");
		bool outside = strcmp(lies[k], "outside") == 0;
		bool bad_bytes = strcmp(lies[k], "digests") == 0 || strcmp(lies[k], "garble") == 0;
		ok(outside ? rc == WEFT_EPROTO && node[0]->rejected == rejected + 1 : rc == 0 && node[0]->rejected == rejected,
		   "%s: %s", lies[k], outside ? "the RANGE is rejected and counted" : "well formed, nothing rejected");
		ok(node[0]->sync.forged == forged + (bad_bytes ? N : 0), "%s: %s", lies[k],
		   bad_bytes ? "every vertex's bytes counted as forged" : "no bytes counted as forged");
		fake_env_clear(&fe[2]);
		fetch_msg(&w, false);
		msg(2, 0, &w);
		relay(2, 0, "dag.range");
		ok(!dag_inserted(node[0], 0, 2) && !dag_inserted(node[0], 0, 3) && node[0]->sync.fetched == 0,
		   "%s and an honest peer's digests: nothing taken", lies[k]);
	}
	fe[0].now_us += 3 * node[0]->sync_us;
	weft_dag_consensus.on_timer(node[0], DAG_TIMER_SYNC);
	for (uint32_t q = 2; q < N; q++) {
		fake_env_clear(&fe[q]);
		fetch_msg(&w, q == 3);
		msg(q, 0, &w);
		relay(q, 0, "dag.range");
	}
	ok(dag_inserted(node[0], 0, 2) && dag_inserted(node[0], 0, 3) && node[0]->sync.fetched == 2,
	   "two honest peers, one with bytes: both vertices taken");
	st->ops->destroy(node[1]);
	node[1] = realloc(node[1], weft_dag_consensus.state_size);
	start_node(1, "sparse", 3, (struct extra){0});
	weft_mpw_free(&w);
	for (uint32_t a = 0; a < N; a++)
		weft_mpw_free(&v[a]);
	teardown();
}

/* Every strategy the consensus registers is one of the node stack's too
 * (weft-sim's "dag" protocol, weftd --byzantine), and starts from the
 * parameters weftd gives it: the genesis ones plus an empty adversary map. */
static void test_strategies(void)
{
	const struct weft_proto_ops *stack = weft_proto_find("dag");
	struct weft_mpw p;
	size_t alen;
	params(&p, "sparse", 3, (struct extra){0});
	uint8_t *ap = weft_params_with_adversary(p.buf, p.len, NULL, 0, &alen);
	int count = 0, started = 0;
	for (const struct weft_proto_strategy *st = weft_dag_consensus.strategies; st->name; st++, count++) {
		const struct weft_proto_strategy *ns = weft_proto_strategy_find(stack, st->name);
		struct fake_env env;
		fake_env_init(&env, 1, N);
		void *state = ns ? calloc(1, ns->ops->state_size) : NULL;
		if (state && ns->ops->init(state, &env.env, ap, alen) == 0 && ns->ops->start(state) == 0)
			started++;
		else
			diag("strategy %s: not found on the node stack, or it does not start", st->name);
		if (state)
			ns->ops->destroy(state);
		free(state);
		fake_env_free(&env);
	}
	ok(count >= 6 && started == count, "the node stack runs each of the consensus's %d strategies", count);
	free(ap);
	weft_mpw_free(&p);
}

/* Node 0's kv records under "M": batch records (key 9 bytes) and records
 * of the per-transaction form (33 bytes). */
struct mempool_records {
	int batches, legacy;
};

static int count_record(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct mempool_records *c = arg;
	c->batches += klen == 9;
	c->legacy += klen == 33;
	return 0;
}

static struct mempool_records mempool_records(void)
{
	struct mempool_records c = {0};
	fe[0].env.ops->kv_scan(&fe[0].env, "M", 1, "N", 1, count_record, &c);
	return c;
}

static void restart0(void)
{
	weft_dag_consensus.destroy(node[0]);
	start_node(0, "dense", 1, (struct extra){0});
}

/* The mempool stores a step's transactions as one record, takes them from
 * the front behind a cursor, and restores exactly what was not taken. */
static void test_mempool_batches(void)
{
	setup("dense", 1);
	const char *texts[] = {"a", "b", "a", "", "c"};
	const uint8_t *reqs[5];
	size_t lens[5];
	int rcs[5];
	struct weft_mpw replies[5];
	for (int i = 0; i < 5; i++) {
		reqs[i] = (const uint8_t *)texts[i];
		lens[i] = strlen(texts[i]);
		weft_mpw_init(&replies[i]);
	}
	weft_dag_consensus.on_request_batch(node[0], 5, reqs, lens, replies, rcs);
	json_t *third = NULL;
	weft_mp_buf_to_json(replies[2].buf, replies[2].len, &third);
	ok(rcs[0] == 0 && rcs[1] == 0 && rcs[2] == 0 && rcs[3] == WEFT_EINVAL && rcs[4] == 0,
	   "a batch: three taken, the repeat answered, the empty one refused");
	ok(json_is_true(json_object_get(third, "duplicate")), "the repeat within the batch is a duplicate");
	json_decref(third);
	for (int i = 0; i < 5; i++)
		weft_mpw_free(&replies[i]);
	struct mempool_records c = mempool_records();
	ok(node[0]->mempool.count == 3 && c.batches == 1 && c.legacy == 0, "one batch record holds them (got %d)",
	   c.batches);
	bool dup;
	ok(submit(0, "d", &dup) == 0 && !dup && mempool_records().batches == 2, "one tx.submit: a second record");

	restart0();
	ok(node[0]->mempool.count == 4 && memcmp(dag_mempool_at(&node[0]->mempool, 3)->tx, "d", 1) == 0,
	   "after a restart: the four transactions, in order");
	ok(submit(0, "c", &dup) == 0 && dup, "... and they are known");

	/* Our vertex takes two: the cursor stops inside the first batch. */
	dag_mempool_take(node[0], 2);
	ok(mempool_records().batches == 2, "two of three taken: the first record stays");
	restart0();
	ok(node[0]->mempool.count == 2 && memcmp(dag_mempool_at(&node[0]->mempool, 0)->tx, "c", 1) == 0,
	   "after a restart: c and d, not what the vertex took");
	dag_mempool_take(node[0], 1);
	ok(mempool_records().batches == 1, "the cursor passed the first batch: its record is deleted");
	restart0();
	ok(node[0]->mempool.count == 1 && memcmp(dag_mempool_at(&node[0]->mempool, 0)->tx, "d", 1) == 0,
	   "after a restart: d alone");
	dag_mempool_take(node[0], 1);
	ok(mempool_records().batches == 0, "all taken: no batch record left");
	restart0();
	is_int(node[0]->mempool.count, 0, "after a restart: empty");

	/* A database from before batch records: one record per transaction. */
	uint8_t k[33] = {'M'};
	weft_hash(k + 1, "old", 3);
	fe[0].env.ops->kv_put(&fe[0].env, k, sizeof(k), "old", 3);
	restart0();
	c = mempool_records();
	ok(node[0]->mempool.count == 1 && c.legacy == 0 && c.batches == 1,
	   "a per-transaction record is moved into a batch record at start");
	ok(submit(0, "old", &dup) == 0 && dup, "... and its transaction waits");

	/* A malformed batch record: the node refuses to start on it. */
	uint8_t bk[9] = {'M'};
	weft_be64_put(bk + 1, 1000);
	fe[0].env.ops->kv_put(&fe[0].env, bk, sizeof(bk), "\x92\xc4", 2);
	weft_dag_consensus.destroy(node[0]);
	struct weft_mpw p;
	params(&p, "dense", 1, (struct extra){0});
	memset(node[0], 0, weft_dag_consensus.state_size);
	is_int(weft_dag_consensus.init(node[0], &fe[0].env, p.buf, p.len), WEFT_ECORRUPT,
	       "a truncated batch record: init fails with ECORRUPT");
	weft_dag_consensus.destroy(node[0]);
	weft_mpw_free(&p);
	fe[0].env.ops->kv_del(&fe[0].env, bk, sizeof(bk));
	start_node(0, "dense", 1, (struct extra){0});
	teardown();
}

/* One Byzantine author racing ahead on a sparse DAG (D <= f: its vertices
 * may reference only its own) must not switch off the wait for a missing
 * anchor: "behind" needs f + 1 authors above the next round (tla/
 * BullsharkLiveRacer: with one racer the honest nodes stopped voting). */
static void test_racer(void)
{
	setup("sparse", 1);
	uint32_t honest[3] = {0, 1, 2}, own3[1] = {3};
	for (uint64_t r = 0; r < 3; r++)
		for (uint32_t a = 0; a < N; a++) {
			if (r == 2 && a == dag_leader(node[0], 2))
				continue; /* the round 2 anchor is late */
			struct weft_mpw w = vertex(a, r, honest, r ? 3 : 0, NULL);
			is_str(deliver_all(a, r, &w), NULL, "vertex (%u, %llu) accepted", a, (unsigned long long)r);
			weft_mpw_free(&w);
		}
	for (uint64_t r = 3; r < 6; r++) {
		struct weft_mpw w = vertex(3, r, own3, 1, NULL);
		is_str(deliver_all(3, r, &w), NULL, "the racer's vertex of round %llu (its own chain only) accepted",
		       (unsigned long long)r);
		weft_mpw_free(&w);
	}
	ok(node[0]->highest == 5 && dag_inserted(node[0], 2, dag_leader(node[0], 2)) == NULL,
	   "node 0 holds round 5 and lacks the round 2 anchor");
	node[0]->next_round = 3;
	node[0]->fresh_store = false; /* as if its peers had said where the committee is */
	fake_env_clear(&fe[0]);
	is_int(weft_dag_consensus.start(node[0]), 0, "node 0 starts at round 3");
	bool armed = false;
	for (size_t t = 0; t < fe[0].ntimers; t++)
		armed |= fe[0].timers[t] == DAG_TIMER_ADVANCE;
	ok(armed && node[0]->own_vertices == 0, "it waits for the anchor: a timer, no round 3 vertex");
	teardown();
}

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	test_validation();
	test_parents_and_commit();
	test_requests();
	test_mempool_batches();
	test_sync();
	test_lying_sync();
	test_strategies();
	test_exactly_once();
	test_horizon();
	test_dedup_params();
	test_weak_links();
	test_state_sync();
	test_racer();
	return done_testing();
}
