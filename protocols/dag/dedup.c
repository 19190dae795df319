/* dedup.c - exactly-once ordering: the durable index of committed
 * transaction digests.  Ordering skips a transaction the index holds (a
 * copy in a second vertex, a resubmission after a restart), a submission of
 * one is answered as a duplicate, and tx.status reads committed states from
 * it, so all three survive a restart.  docs/protocols/sparse-dag.md
 * ("De-duplication") has the rule.
 *
 * kv.  "D" digest(32) -> anchor round (be64), log position (be64), ledger
 * outcome (u8): the anchor of that round committed the transaction.  "E"
 * anchor round (be64) -> the digests that anchor committed, 32 bytes each:
 * what to forget when the round leaves the horizon.  Both are written in
 * the callback that orders the anchor, the same kv (LMDB) transaction as
 * the ordering state "S" and the ledger, so after a crash the index is
 * exactly the one that goes with the stored log.
 *
 * Horizon.  Before the anchor of round R is ordered, the index forgets
 * what anchors of rounds below R - dedup_rounds committed.  The sequence of
 * committed anchors is the same at every honest node, so the index, and
 * every skip decision, is too.  One expiry record per anchor (not per
 * transaction) makes pruning a get per round passed, with no range scan:
 * weft-sim's in-memory kv scans its whole table. */
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"

#include "dag.h"

#define RECORD_LEN (8 + 8 + 1)

static void digest_key(uint8_t k[33], const uint8_t digest[32])
{
	k[0] = 'D';
	memcpy(k + 1, digest, 32);
}

static void expiry_key(uint8_t k[9], uint64_t round)
{
	k[0] = 'E';
	weft_be64_put(k + 1, round);
}

int dag_dedup_get(struct dag *d, const uint8_t digest[32], struct dag_committed *c)
{
	uint8_t k[33];
	const void *val;
	size_t len;
	digest_key(k, digest);
	int rc = d->env->ops->kv_get(d->env, k, sizeof(k), &val, &len);
	if (rc != 0)
		return rc;
	if (len != RECORD_LEN)
		return WEFT_ECORRUPT;
	if (c) {
		const uint8_t *p = val;
		c->round = weft_be64_get(p);
		c->position = weft_be64_get(p + 8);
		c->outcome = p[16];
	}
	return 0;
}

void dag_dedup_put(struct dag *d, const uint8_t digest[32], uint64_t round, uint64_t position, uint8_t outcome)
{
	uint8_t k[33], v[RECORD_LEN];
	digest_key(k, digest);
	weft_be64_put(v, round);
	weft_be64_put(v + 8, position);
	v[16] = outcome;
	d->env->ops->kv_put(d->env, k, sizeof(k), v, sizeof(v));
	if (d->nexpiring == d->capexpiring) {
		d->capexpiring = d->capexpiring ? 2 * d->capexpiring : 256;
		d->expiring = realloc(d->expiring, d->capexpiring * sizeof(*d->expiring));
		if (d->expiring == NULL)
			abort();
	}
	memcpy(d->expiring[d->nexpiring++], digest, 32);
}

void dag_dedup_anchor_done(struct dag *d, uint64_t round)
{
	if (d->nexpiring == 0)
		return;
	uint8_t k[9];
	expiry_key(k, round);
	d->env->ops->kv_put(d->env, k, sizeof(k), d->expiring, d->nexpiring * sizeof(*d->expiring));
	d->nexpiring = 0;
}

/* Forgets what the anchor of round r committed. */
static void forget_round(struct dag *d, uint64_t r)
{
	uint8_t k[9];
	const void *val;
	size_t len;
	expiry_key(k, r);
	if (d->env->ops->kv_get(d->env, k, sizeof(k), &val, &len) != 0)
		return;
	uint8_t *list = malloc(len ? len : 1); /* val dies at the next kv call */
	if (list == NULL)
		abort();
	memcpy(list, val, len);
	d->env->ops->kv_del(d->env, k, sizeof(k));
	for (size_t i = 0; i + 32 <= len; i += 32) {
		struct dag_committed c;
		uint8_t dk[33];
		/* Only the record this anchor wrote (a digest is in the index once). */
		if (dag_dedup_get(d, list + i, &c) != 0 || c.round != r)
			continue;
		digest_key(dk, list + i);
		d->env->ops->kv_del(d->env, dk, sizeof(dk));
	}
	free(list);
}

/* Anchors of rounds below this leave the horizon when round's anchor commits. */
static uint64_t horizon(const struct dag *d, uint64_t round)
{
	return round > d->dedup_rounds ? round - d->dedup_rounds : 0;
}

void dag_dedup_prune(struct dag *d, uint64_t round)
{
	/* The previous committed anchor pruned below its own horizon already:
	 * the work is bounded by what the rounds in between committed. */
	uint64_t from = d->has_committed ? horizon(d, d->committed_round) : 0;
	for (uint64_t r = from; r < horizon(d, round); r++)
		forget_round(d, r);
}

void dag_dedup_free(struct dag *d)
{
	free(d->expiring);
	d->expiring = NULL;
	d->nexpiring = d->capexpiring = 0;
}
