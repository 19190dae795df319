/* vertex.c - the DAG vertex on the wire and its validation.
 *
 *   [2, round, author, refs, weak, txs, sig]
 *     refs  [[author, digest(bin 32)], ...]: vertices of round - 1,
 *           authors strictly ascending (strong references: the commit
 *           rule counts and follows only these)
 *     weak  [[round, author, digest], ...]: older vertices (rounds up to
 *           round - 2) the author held that nothing referenced yet, so
 *           that every vertex is ordered eventually; (round, author)
 *           strictly ascending, at most weak_max
 *     txs   [bin, ...]: the batch of transactions, in the shortest msgpack
 *           form (so the bytes are a function of what is signed)
 *     sig   bin 64: the author's Ed25519 signature over the body digest:
 *           BLAKE2b over the body's bytes before the transaction array
 *           (version to weak), then each transaction's BLAKE2b digest
 *
 * A vertex's id is BLAKE2b(body digest || sig).  A transaction is hashed
 * once per node: its digest signs the vertex, orders it (the order hash,
 * the committed index) and goes with its delivery (version 3; version 2
 * signed the body's bytes, so every transaction was hashed again for each
 * use).  Validation is a
 * function of the bytes alone, so every honest node (all of them deliver
 * the same bytes from the BRB) reaches the same verdict:
 *   - round and author are the BRB instance's (seq, origin);
 *   - round 0 has no references; later rounds reference distinct authors;
 *   - the anchor of an even round references at least 2f + 1 vertices
 *     (dense anchors, both modes); in dense mode every vertex does; in
 *     sparse mode any other vertex references between min(D, 2f + 1) and
 *     D + 2 (D sampled, plus its own and the anchor);
 *   - at most weak_max weak references, to rounds below round - 1;
 *   - transactions within the size limits; a valid signature. */
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"

#include "dag.h"

#define VERTEX_FIELDS 7 /* version, round, author, refs, weak, txs, sig */

/* The signed digest: the body's bytes up to the transaction array, then
 * the transactions' digests. */
static void body_digest(const uint8_t *body, size_t head_len, const uint8_t (*tx_digests)[32], uint32_t ntx,
			uint8_t out[32])
{
	struct weft_hasher h;
	weft_hasher_init(&h);
	weft_hasher_update(&h, body, head_len);
	weft_hasher_update(&h, tx_digests, 32 * (size_t)ntx);
	weft_hasher_final(&h, out);
}

/* The length of the shortest msgpack header of a bin or an array of n. */
static size_t bin_header_len(uint32_t n)
{
	return n < 256 ? 2 : n < 65536 ? 3 : 5;
}

static size_t array_header_len(uint32_t n)
{
	return n < 16 ? 1 : n < 65536 ? 3 : 5;
}

/* Reads the transaction array at r (ntx at most max_tx, each 1..tx_max
 * bytes, shortest headers) into digests (ntx of them, allocated; when
 * *digests is given already, ntx of them hashed from these bytes, the
 * array is only checked): 0, or WEFT_EDECODE with *why. */
static int read_txs(struct weft_mp_reader *r, uint32_t max_tx, uint32_t tx_max, uint32_t *ntx,
		    uint8_t (**digests)[32], const char **why)
{
	const uint8_t *at = r->p;
	bool hash = *digests == NULL;
	if (weft_mp_read_array(r, ntx) || *ntx > max_tx || (size_t)(r->p - at) != array_header_len(*ntx))
		return WEFT_EDECODE;
	if (hash)
		*digests = malloc((*ntx ? *ntx : 1) * sizeof(**digests));
	if (*digests == NULL)
		abort();
	for (uint32_t i = 0; i < *ntx; i++) {
		const uint8_t *tx;
		uint32_t tlen;
		at = r->p;
		if (weft_mp_read_bin(r, &tx, &tlen) || (size_t)(r->p - at) != bin_header_len(tlen) + tlen)
			return WEFT_EDECODE;
		if (tlen == 0 || tlen > tx_max) {
			*why = "transaction size out of bounds";
			return WEFT_EDECODE;
		}
		if (hash)
			weft_hash((*digests)[i], tx, tlen);
	}
	return 0;
}

uint32_t dag_leader(const struct dag *d, uint64_t round)
{
	return (uint32_t)((round / 2) % d->n);
}

bool dag_is_anchor(const struct dag *d, const struct dag_vertex *v)
{
	return v->round % 2 == 0 && v->author == dag_leader(d, v->round);
}

void dag_vertex_encode(struct dag *d, struct weft_mpw *out, uint64_t round, const uint32_t *refs, uint32_t nrefs,
		       struct dag_vertex *const *weak, uint32_t nweak, const uint8_t *const *txs, const uint32_t *lens,
		       const uint8_t (*tx_digests)[32], uint32_t ntx)
{
	weft_mpw_reset(out);
	weft_mpw_array(out, VERTEX_FIELDS);
	size_t body = out->len;
	weft_mpw_uint(out, DAG_VERTEX_VERSION);
	weft_mpw_uint(out, round);
	weft_mpw_uint(out, d->self);
	weft_mpw_array(out, nrefs);
	for (uint32_t i = 0; i < nrefs; i++) {
		const struct dag_vertex *p = dag_inserted(d, round - 1, refs[i]);
		weft_mpw_array(out, 2);
		weft_mpw_uint(out, refs[i]);
		weft_mpw_bin(out, p->digest, sizeof(p->digest));
	}
	weft_mpw_array(out, nweak);
	for (uint32_t i = 0; i < nweak; i++) {
		weft_mpw_array(out, 3);
		weft_mpw_uint(out, weak[i]->round);
		weft_mpw_uint(out, weak[i]->author);
		weft_mpw_bin(out, weak[i]->digest, sizeof(weak[i]->digest));
	}
	size_t head_len = out->len - body;
	weft_mpw_array(out, ntx);
	uint8_t(*computed)[32] = NULL;
	if (tx_digests == NULL) {
		computed = malloc((ntx ? ntx : 1) * sizeof(*computed));
		if (computed == NULL)
			abort();
		for (uint32_t i = 0; i < ntx; i++)
			weft_hash(computed[i], txs[i], lens[i]);
		tx_digests = (const uint8_t(*)[32])computed;
	}
	for (uint32_t i = 0; i < ntx; i++)
		weft_mpw_bin(out, txs[i], lens[i]);
	uint8_t digest[32], sig[WEFT_SIGNATURE_LEN];
	body_digest(out->buf + body, head_len, tx_digests, ntx, digest);
	free(computed);
	d->env->ops->sign(d->env, digest, sizeof(digest), sig);
	weft_mpw_bin(out, sig, sizeof(sig));
}

static void vertex_id(const uint8_t body_digest[32], const uint8_t sig[WEFT_SIGNATURE_LEN], uint8_t id[32])
{
	struct weft_hasher h;
	weft_hasher_init(&h);
	weft_hasher_update(&h, body_digest, 32);
	weft_hasher_update(&h, sig, WEFT_SIGNATURE_LEN);
	weft_hasher_final(&h, id);
}

/* The outer array header and the signature's, in their one accepted form. */
static bool canonical_array(struct weft_mp_reader *r, const uint8_t *bytes)
{
	uint32_t count;
	return weft_mp_read_array(r, &count) == 0 && count == VERTEX_FIELDS && r->p == bytes + 1;
}

static bool canonical_sig(struct weft_mp_reader *r, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	const uint8_t *at = r->p;
	return weft_mp_read_bin_fixed(r, sig, WEFT_SIGNATURE_LEN) == 0 && r->p == at + 2 + WEFT_SIGNATURE_LEN &&
	       weft_mp_remaining(r) == 0;
}

int dag_vertex_parse_id(const uint8_t *bytes, size_t len, uint8_t id[32], uint8_t (**tx_digests)[32], uint32_t *ntx)
{
	struct weft_mp_reader r;
	uint8_t(*digests)[32] = NULL, digest[32], sig[WEFT_SIGNATURE_LEN];
	const char *why;
	weft_mp_reader_init(&r, bytes, len);
	if (!canonical_array(&r, bytes))
		return WEFT_EDECODE;
	const uint8_t *body = r.p;
	for (int i = 0; i < VERTEX_FIELDS - 2; i++)
		if (weft_mp_skip(&r))
			return WEFT_EDECODE;
	size_t head_len = (size_t)(r.p - body);
	uint32_t n;
	int rc = read_txs(&r, UINT32_MAX, UINT32_MAX, &n, &digests, &why);
	if (rc == 0 && !canonical_sig(&r, sig))
		rc = WEFT_EDECODE;
	if (rc == 0) {
		body_digest(body, head_len, (const uint8_t(*)[32])digests, n, digest);
		vertex_id(digest, sig, id);
	}
	if (rc == 0 && tx_digests) {
		*tx_digests = digests;
		*ntx = n;
	} else {
		free(digests);
	}
	return rc;
}

int dag_vertex_id(const uint8_t *bytes, size_t len, uint8_t id[32])
{
	return dag_vertex_parse_id(bytes, len, id, NULL, NULL);
}

void dag_vertex_free(struct dag_vertex *v)
{
	if (v == NULL)
		return;
	free(v->refs);
	free(v->ref_digest);
	free(v->weak);
	free(v->bytes);
	free(v->tx_digests);
	free(v);
}

void dag_vertex_drop_payload(struct dag_vertex *v)
{
	free(v->bytes);
	v->bytes = NULL;
	free(v->tx_digests);
	v->tx_digests = NULL;
}

/* How many references a vertex must have: [*lo, *hi]. */
static void ref_bounds(const struct dag *d, uint64_t round, uint32_t author, uint32_t *lo, uint32_t *hi)
{
	if (round == 0) {
		*lo = *hi = 0;
		return;
	}
	*hi = d->n;
	bool anchor = round % 2 == 0 && author == dag_leader(d, round) && d->unsafe != DAG_UNSAFE_SPARSE_ANCHORS;
	if (d->mode == DAG_DENSE || anchor) {
		*lo = d->quorum;
		return;
	}
	*lo = d->d < d->quorum ? d->d : d->quorum;
	if (d->d + 2 < *hi)
		*hi = d->d + 2;
}

struct dag_vertex *dag_vertex_decode(struct dag *d, uint32_t origin, uint64_t seq, const uint8_t *bytes, size_t len,
				     const uint8_t *name, const char **why)
{
	struct weft_mp_reader r;
	uint32_t nrefs, nweak, ntx;
	uint64_t version, round;
	uint32_t author;
	weft_mp_reader_init(&r, bytes, len);
	*why = "malformed vertex";
	if (len > d->vertex_max) {
		*why = "vertex over the size limit";
		return NULL;
	}
	if (!canonical_array(&r, bytes))
		return NULL;
	const uint8_t *body = r.p;
	if (weft_mp_read_uint(&r, &version))
		return NULL;
	if (version != DAG_VERTEX_VERSION) {
		*why = "a vertex of another wire version (every node of a committee runs one weft version)";
		return NULL;
	}
	if (weft_mp_read_uint(&r, &round) || weft_mp_read_u32(&r, &author) || weft_mp_read_array(&r, &nrefs))
		return NULL;
	if (round != seq || author != origin) {
		*why = "vertex round or author differs from its broadcast";
		return NULL;
	}
	uint32_t lo, hi;
	ref_bounds(d, round, author, &lo, &hi);
	if (nrefs < lo || nrefs > hi) {
		*why = nrefs > hi ? "too many references" : "too few references";
		return NULL;
	}
	struct dag_vertex *v = calloc(1, sizeof(*v));
	if (v == NULL)
		abort();
	v->round = round;
	v->author = author;
	v->nrefs = nrefs;
	v->refs = calloc(nrefs ? nrefs : 1, sizeof(*v->refs));
	v->ref_digest = calloc(nrefs ? nrefs : 1, sizeof(*v->ref_digest));
	if (v->refs == NULL || v->ref_digest == NULL)
		abort();
	for (uint32_t i = 0; i < nrefs; i++) {
		uint32_t pair;
		if (weft_mp_read_array(&r, &pair) || pair != 2 || weft_mp_read_u32(&r, &v->refs[i]) ||
		    weft_mp_read_bin_fixed(&r, v->ref_digest[i], 32))
			goto bad;
		if (v->refs[i] >= d->n || (i && v->refs[i] <= v->refs[i - 1])) {
			*why = "references not distinct committee members in ascending order";
			goto bad;
		}
	}
	if (weft_mp_read_array(&r, &nweak))
		goto bad;
	if (nweak > d->weak_max) {
		*why = "too many weak references";
		goto bad;
	}
	v->nweak = nweak;
	v->weak = calloc(nweak ? nweak : 1, sizeof(*v->weak));
	if (v->weak == NULL)
		abort();
	for (uint32_t i = 0; i < nweak; i++) {
		struct dag_weak_ref *w = &v->weak[i], *prev = i ? &v->weak[i - 1] : NULL;
		uint32_t three;
		if (weft_mp_read_array(&r, &three) || three != 3 || weft_mp_read_uint(&r, &w->round) ||
		    weft_mp_read_u32(&r, &w->author) || weft_mp_read_bin_fixed(&r, w->digest, 32))
			goto bad;
		if (w->round + 2 > round || w->author >= d->n ||
		    (prev && (w->round < prev->round || (w->round == prev->round && w->author <= prev->author)))) {
			*why = "weak references not distinct older vertices in ascending order";
			goto bad;
		}
	}
	v->txs_off = (size_t)(r.p - bytes);
	size_t head_len = (size_t)(r.p - body);
	/* Digests the BRB's naming took of these very bytes (dag.c, named). */
	uint32_t known_ntx = 0;
	if (name)
		v->tx_digests = dag_named_take(d, origin, seq, name, &known_ntx);
	bool known = v->tx_digests != NULL;
	if (read_txs(&r, d->batch_txs, d->tx_max, &ntx, &v->tx_digests, why) != 0 || (known && ntx != known_ntx))
		goto bad;
	v->ntx = ntx;
	uint8_t sig[WEFT_SIGNATURE_LEN], digest[32];
	if (!canonical_sig(&r, sig))
		goto bad;
	body_digest(body, head_len, (const uint8_t(*)[32])v->tx_digests, ntx, digest);
	if (d->env->ops->verify(d->env, author, digest, sizeof(digest), sig) != 0) {
		*why = "bad vertex signature";
		goto bad;
	}
	v->bytes = malloc(len);
	if (v->bytes == NULL)
		abort();
	memcpy(v->bytes, bytes, len);
	v->len = len;
	vertex_id(digest, sig, v->digest);
	return v;
bad:
	dag_vertex_free(v);
	return NULL;
}

int dag_vertex_next_tx(const struct dag_vertex *v, size_t *off, uint32_t *i, const uint8_t **tx, uint32_t *len)
{
	struct weft_mp_reader r;
	if (*off == 0) {
		uint32_t ntx;
		weft_mp_reader_init(&r, v->bytes + v->txs_off, v->len - v->txs_off);
		if (weft_mp_read_array(&r, &ntx))
			return WEFT_NOTFOUND;
		*i = 0;
	} else {
		weft_mp_reader_init(&r, v->bytes + *off, v->len - *off);
	}
	if (*i >= v->ntx || weft_mp_read_bin(&r, tx, len))
		return WEFT_NOTFOUND;
	(*i)++;
	*off = (size_t)(r.p - v->bytes);
	return 0;
}

int dag_vertex_view(struct dag_vertex *v, uint8_t *bytes, size_t len)
{
	struct weft_mp_reader r;
	uint32_t count;
	weft_mp_reader_init(&r, bytes, len);
	if (weft_mp_read_array(&r, &count) || count != VERTEX_FIELDS)
		return WEFT_EDECODE;
	for (int i = 0; i < VERTEX_FIELDS - 2; i++)
		if (weft_mp_skip(&r))
			return WEFT_EDECODE;
	memset(v, 0, sizeof(*v));
	v->bytes = bytes;
	v->len = len;
	v->txs_off = (size_t)(r.p - bytes);
	return weft_mp_read_array(&r, &v->ntx) ? WEFT_EDECODE : 0;
}
