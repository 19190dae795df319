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
 *     txs   [bin, ...]: the batch of transactions
 *     sig   bin 64: the author's Ed25519 signature over the BLAKE2b digest
 *           of the body (the bytes between the array header and sig)
 *
 * A vertex's id is BLAKE2b(body digest || sig): one pass over the bytes
 * gives both the signed message and the id, however large the batch.  Validation is a
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

uint32_t dag_leader(const struct dag *d, uint64_t round)
{
	return (uint32_t)((round / 2) % d->n);
}

bool dag_is_anchor(const struct dag *d, const struct dag_vertex *v)
{
	return v->round % 2 == 0 && v->author == dag_leader(d, v->round);
}

void dag_vertex_encode(struct dag *d, struct weft_mpw *out, uint64_t round, const uint32_t *refs, uint32_t nrefs,
		       struct dag_vertex *const *weak, uint32_t nweak, uint8_t **txs, const uint32_t *lens,
		       uint32_t ntx)
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
	weft_mpw_array(out, ntx);
	for (uint32_t i = 0; i < ntx; i++)
		weft_mpw_bin(out, txs[(i)], lens[i]);
	uint8_t body_digest[32], sig[WEFT_SIGNATURE_LEN];
	weft_hash(body_digest, out->buf + body, out->len - body);
	d->env->ops->sign(d->env, body_digest, sizeof(body_digest), sig);
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

/* The body of a vertex's bytes and its signature: 0, or WEFT_EDECODE. */
static int split(const uint8_t *bytes, size_t len, const uint8_t **body, size_t *blen, uint8_t sig[WEFT_SIGNATURE_LEN])
{
	struct weft_mp_reader r;
	uint32_t count;
	weft_mp_reader_init(&r, bytes, len);
	if (weft_mp_read_array(&r, &count) || count != VERTEX_FIELDS)
		return WEFT_EDECODE;
	*body = r.p;
	for (int i = 0; i < VERTEX_FIELDS - 1; i++)
		if (weft_mp_skip(&r))
			return WEFT_EDECODE;
	*blen = (size_t)(r.p - *body);
	return weft_mp_read_bin_fixed(&r, sig, WEFT_SIGNATURE_LEN) || weft_mp_remaining(&r) ? WEFT_EDECODE : 0;
}

int dag_vertex_id(const uint8_t *bytes, size_t len, uint8_t id[32])
{
	const uint8_t *body;
	size_t blen;
	uint8_t body_digest[32], sig[WEFT_SIGNATURE_LEN];
	if (split(bytes, len, &body, &blen, sig) != 0)
		return WEFT_EDECODE;
	weft_hash(body_digest, body, blen);
	vertex_id(body_digest, sig, id);
	return 0;
}

void dag_vertex_free(struct dag_vertex *v)
{
	if (v == NULL)
		return;
	free(v->refs);
	free(v->ref_digest);
	free(v->weak);
	free(v->bytes);
	free(v);
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
				     const char **why)
{
	struct weft_mp_reader r;
	uint32_t count, nrefs, nweak, ntx;
	uint64_t version, round;
	uint32_t author;
	weft_mp_reader_init(&r, bytes, len);
	*why = "malformed vertex";
	if (len > d->vertex_max) {
		*why = "vertex over the size limit";
		return NULL;
	}
	if (weft_mp_read_array(&r, &count) || count != VERTEX_FIELDS)
		return NULL;
	const uint8_t *body = r.p;
	if (weft_mp_read_uint(&r, &version) || version != DAG_VERTEX_VERSION || weft_mp_read_uint(&r, &round) ||
	    weft_mp_read_u32(&r, &author) || weft_mp_read_array(&r, &nrefs))
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
	if (weft_mp_read_array(&r, &ntx) || ntx > d->batch_txs)
		goto bad;
	for (uint32_t i = 0; i < ntx; i++) {
		const uint8_t *tx;
		uint32_t tlen;
		if (weft_mp_read_bin(&r, &tx, &tlen))
			goto bad;
		if (tlen == 0 || tlen > d->tx_max) {
			*why = "transaction size out of bounds";
			goto bad;
		}
	}
	v->ntx = ntx;
	const uint8_t *body_end = r.p;
	uint8_t sig[WEFT_SIGNATURE_LEN], body_digest[32];
	if (weft_mp_read_bin_fixed(&r, sig, sizeof(sig)) || weft_mp_remaining(&r))
		goto bad;
	weft_hash(body_digest, body, (size_t)(body_end - body));
	if (d->env->ops->verify(d->env, author, body_digest, sizeof(body_digest), sig) != 0) {
		*why = "bad vertex signature";
		goto bad;
	}
	v->bytes = malloc(len);
	if (v->bytes == NULL)
		abort();
	memcpy(v->bytes, bytes, len);
	v->len = len;
	vertex_id(body_digest, sig, v->digest);
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
