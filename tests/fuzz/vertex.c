/* tests/fuzz/vertex.c - libFuzzer target for the DAG vertex decoder
 * (protocols/dag/vertex.c): dag_vertex_decode as a BRB delivery of the
 * input would call it, then dag_vertex_id, dag_vertex_view and the
 * transaction iterator on what it accepted.
 *
 * Input: a flags byte (bit 0: lenient signatures, any peer signature
 * verifies; bit 1: dense mode, else sparse with D = 1), then the vertex
 * bytes [3, round, author, refs, weak, txs, sig].  The delivery's (origin, seq)
 * is the vertex's own (author, round) when its header reads, else (0, 0).
 * Signatures are tests/fuzz/lib/protofuzz.c's stand-in.  abort()s when an
 * accepted vertex breaks what decode promises: its id is dag_vertex_id's,
 * references distinct, ascending and within the mode's bounds, exactly
 * ntx transactions each within tx_max and carrying its own digest, the
 * same view from dag_vertex_view.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes valid vertices (rounds 0..2, with and
 * without transactions, sparse and dense) and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../protocols/dag/dag.h"
#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/dag.h"
#include "weft/err.h"

static struct dag *dags[2]; /* sparse D = 1, dense */
static bool verbose;       /* WEFT_FUZZ_VERBOSE: say why a vertex was refused */

static struct dag *make_dag(bool dense)
{
	struct weft_mpw p;
	struct dag *d = calloc(1, weft_dag_consensus.state_size);
	pf_check(d != NULL, "calloc");
	weft_mpw_init(&p);
	weft_mpw_map(&p, 5);
	weft_mpw_str(&p, "mode");
	weft_mpw_str(&p, dense ? "dense" : "sparse");
	weft_mpw_str(&p, "d");
	weft_mpw_uint(&p, 1);
	weft_mpw_str(&p, "tx_max");
	weft_mpw_uint(&p, 256);
	weft_mpw_str(&p, "batch_bytes");
	weft_mpw_uint(&p, 1024);
	weft_mpw_str(&p, "batch_txs");
	weft_mpw_uint(&p, 8);
	pf_check(weft_dag_consensus.init(d, pf_env(false), p.buf, p.len) == 0, "dag init");
	weft_mpw_free(&p);
	return d;
}

/* [3, round, author, [[a, digest]...], [[round - 2, a, digest]...], [tx...],
 * sig] signed by author (over the bytes before the transactions, then
 * their digests): nweak weak references to authors 0.. of round - 2. */
static void vertex(struct weft_mpw *w, uint64_t round, uint32_t author, const uint32_t *refs, uint32_t nrefs,
		   uint32_t nweak, const char *const *txs, uint32_t ntx)
{
	uint8_t digest[32], sig[WEFT_SIGNATURE_LEN];
	weft_mpw_reset(w);
	weft_mpw_array(w, 7);
	size_t body = w->len;
	weft_mpw_uint(w, DAG_VERTEX_VERSION);
	weft_mpw_uint(w, round);
	weft_mpw_uint(w, author);
	weft_mpw_array(w, nrefs);
	for (uint32_t i = 0; i < nrefs; i++) {
		memset(digest, (int)(0x10 * refs[i] + round), sizeof(digest));
		weft_mpw_array(w, 2);
		weft_mpw_uint(w, refs[i]);
		weft_mpw_bin(w, digest, sizeof(digest));
	}
	weft_mpw_array(w, nweak);
	for (uint32_t i = 0; i < nweak; i++) {
		memset(digest, (int)(0x10 * i + round - 2), sizeof(digest));
		weft_mpw_array(w, 3);
		weft_mpw_uint(w, round - 2);
		weft_mpw_uint(w, i);
		weft_mpw_bin(w, digest, sizeof(digest));
	}
	struct weft_hasher h;
	weft_hasher_init(&h);
	weft_hasher_update(&h, w->buf + body, w->len - body);
	weft_mpw_array(w, ntx);
	for (uint32_t i = 0; i < ntx; i++) {
		weft_mpw_bin(w, txs[i], strlen(txs[i]));
		weft_hash(digest, txs[i], strlen(txs[i]));
		weft_hasher_update(&h, digest, sizeof(digest));
	}
	weft_hasher_final(&h, digest);
	pf_sign(author, digest, sizeof(digest), sig);
	weft_mpw_bin(w, sig, sizeof(sig));
}

static void write_seeds(const char *dir)
{
	static const uint32_t all[4] = {0, 1, 2, 3}, two[2] = {1, 3};
	static const char *const txs[3] = {"a transaction", "x", "[\"weft.transfer\"]"};
	struct weft_mpw w, s;
	weft_mpw_init(&w);
	weft_mpw_init(&s);
	struct {
		const char *name;
		uint8_t flags;
		uint64_t round;
		uint32_t author;
		const uint32_t *refs;
		uint32_t nrefs, nweak, ntx;
	} seeds[] = {
		{"sparse-r0", 0, 0, 2, NULL, 0, 0, 0},
		{"sparse-r0-txs", 0, 0, 1, NULL, 0, 0, 3},
		{"sparse-r1-two-refs", 0, 1, 3, two, 2, 0, 1},
		{"sparse-r2-anchor", 0, 2, 1, all, 4, 0, 2},
		{"sparse-r3-weak", 0, 3, 3, two, 2, 2, 1},
		{"dense-r1", 2, 1, 0, all, 3, 0, 0},
		{"dense-r3-txs", 2, 3, 2, all + 1, 3, 0, 3},
		{"dense-r5-weak", 2, 5, 0, all, 3, 4, 1},
	};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		vertex(&w, seeds[i].round, seeds[i].author, seeds[i].refs, seeds[i].nrefs, seeds[i].nweak, txs,
		       seeds[i].ntx);
		weft_mpw_reset(&s);
		weft_mpw_raw(&s, &seeds[i].flags, 1);
		weft_mpw_raw(&s, w.buf, w.len);
		pf_write_file(dir, seeds[i].name, s.buf, s.len);
	}
	weft_mpw_free(&w);
	weft_mpw_free(&s);
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "crypto init");
	if (getenv("WEFT_FUZZ_SEEDS"))
		write_seeds(getenv("WEFT_FUZZ_SEEDS"));
	verbose = getenv("WEFT_FUZZ_VERBOSE") != NULL;
	dags[0] = make_dag(false);
	dags[1] = make_dag(true);
	return 0;
}

/* The vertex's (author, round) when its header reads. */
static void header(const uint8_t *b, size_t len, uint32_t *author, uint64_t *round)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t version;
	*author = 0;
	*round = 0;
	weft_mp_reader_init(&r, b, len);
	if (weft_mp_read_array(&r, &count) || weft_mp_read_uint(&r, &version) || weft_mp_read_uint(&r, round) ||
	    weft_mp_read_u32(&r, author))
		*author = 0, *round = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	struct dag *d = dags[(data[0] >> 1) & 1];
	pf_env(data[0] & 1);
	size_t len = size - 1;
	uint8_t *b = malloc(len ? len : 1);
	pf_check(b != NULL, "malloc");
	memcpy(b, data + 1, len);
	uint32_t author;
	uint64_t round;
	header(b, len, &author, &round);
	const char *why = NULL;
	struct dag_vertex *v = dag_vertex_decode(d, author, round, b, len, NULL, &why);
	if (verbose)
		fprintf(stderr, "vertex: %s\n", v ? "accepted" : why);
	if (v == NULL) {
		pf_check(why != NULL, "a rejected vertex has a reason");
		free(b);
		return 0;
	}
	uint8_t id[32];
	pf_check(dag_vertex_id(b, len, id) == 0 && memcmp(id, v->digest, 32) == 0, "the id is dag_vertex_id's");
	pf_check(v->len == len && memcmp(v->bytes, b, len) == 0 && v->round == round && v->author == author,
		 "the vertex keeps its bytes, round and author");
	pf_check(v->author < d->n, "author in the committee");
	pf_check(v->round > 0 || v->nrefs == 0, "round 0 has no references");
	pf_check(v->round == 0 || v->nrefs >= (d->mode == DAG_DENSE ? d->quorum : 1), "enough references");
	for (uint32_t i = 0; i < v->nrefs; i++)
		pf_check(v->refs[i] < d->n && (i == 0 || v->refs[i] > v->refs[i - 1]), "references ascending, distinct");
	pf_check(v->nweak <= d->weak_max, "at most weak_max weak references");
	for (uint32_t i = 0; i < v->nweak; i++) {
		const struct dag_weak_ref *w = &v->weak[i], *p = i ? &v->weak[i - 1] : NULL;
		pf_check(w->author < d->n && w->round + 2 <= v->round, "a weak reference names an older vertex");
		pf_check(p == NULL || w->round > p->round || (w->round == p->round && w->author > p->author),
			 "weak references ascending, distinct");
	}
	size_t off = 0;
	uint32_t i = 0, n = 0, tlen;
	const uint8_t *tx;
	while (dag_vertex_next_tx(v, &off, &i, &tx, &tlen) == 0) {
		pf_check(tlen >= 1 && tlen <= d->tx_max && tx >= v->bytes && tx + tlen <= v->bytes + v->len,
			 "a transaction within the vertex and the size limits");
		uint8_t digest[32];
		weft_hash(digest, tx, tlen);
		pf_check(memcmp(digest, v->tx_digests[i - 1], 32) == 0, "the transaction's digest is its hash");
		n++;
	}
	pf_check(n == v->ntx && v->ntx <= d->batch_txs, "ntx transactions");
	struct dag_vertex view;
	pf_check(dag_vertex_view(&view, b, len) == 0 && view.txs_off == v->txs_off && view.ntx == v->ntx,
		 "dag_vertex_view agrees");
	dag_vertex_free(v);
	free(b);
	return 0;
}
