/* dedup.c - exactly-once ordering: the index of committed transaction
 * digests.  Ordering skips a transaction the index holds (a copy in a
 * second vertex, a resubmission after a restart), a submission of one is
 * answered as a duplicate, and tx.status reads committed states from it,
 * so all three survive a restart.  docs/protocols/sparse-dag.md
 * ("De-duplication") has the rule.
 *
 * Memory.  An open-addressing table digest -> (anchor round, log position,
 * outcome), linear probing with backward-shift deletion, grown at half
 * load: a lookup is a hash and a few cache lines, with no kv call.  A slot
 * is 32 bytes: the digest's leading 16 bytes and the low 32 bits of the
 * round.  Within the horizon (at most DEDUP_MAX rounds, far below 2^32) the
 * low bits name a round uniquely, and the full round is recovered from the
 * highest one inserted.  Two transactions whose digests share 128 leading
 * bits would count as one (the later is skipped as a copy): every honest
 * node decides the same, and finding a second transaction for a given
 * digest prefix is a 2^128 search.  The "E" records keep whole digests.
 *
 * kv.  One record per anchor, "E" anchor round (be64) -> for every
 * transaction it committed: digest (32), position (be64), outcome (u8).
 * It is written in the callback that orders the anchor, the same kv (LMDB)
 * transaction as the ordering state "S" and the ledger, so after a crash
 * (or a step the host rolled back) the table rebuilt from these records at
 * init is exactly the one that goes with the stored log.  One write per
 * anchor, not per transaction: per-transaction records cost a fifth of the
 * daemon's CPU at 20k tx/s (docs/performance.md).
 *
 * Horizon.  Before the anchor of round R is ordered, the index forgets
 * what anchors of rounds below R - dedup_rounds committed.  The sequence of
 * committed anchors is the same at every honest node, so the index, and
 * every skip decision, is too. */
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/util.h"

#include "dag.h"

#define ENTRY_LEN (32 + 8 + 1) /* in an "E" record */
#define KEY_LEN 16               /* of a digest, in a slot */

struct dag_dedup_slot {
	uint8_t key[KEY_LEN];
	uint64_t position;
	uint32_t round_lo;
	uint8_t outcome;
	bool used;
};

static void expiry_key(uint8_t k[9], uint64_t round)
{
	k[0] = 'E';
	weft_be64_put(k + 1, round);
}

/* The digest is a hash already: its leading bytes index the table. */
static size_t home(const struct dag *d, const uint8_t digest[KEY_LEN])
{
	uint64_t h = weft_be64_get(digest);
	return (size_t)(h & (d->dedup_cap - 1));
}

/* The round a slot's low 32 bits stand for: the newest round with them
 * not above the highest round inserted. */
static uint64_t full_round(const struct dag *d, uint32_t lo)
{
	return d->dedup_top - (uint32_t)((uint32_t)d->dedup_top - lo);
}

static struct dag_dedup_slot *find(const struct dag *d, const uint8_t digest[32])
{
	if (d->dedup_cap == 0)
		return NULL;
	for (size_t i = home(d, digest);; i = (i + 1) & (d->dedup_cap - 1)) {
		struct dag_dedup_slot *s = &d->dedup[i];
		if (!s->used)
			return NULL;
		if (memcmp(s->key, digest, KEY_LEN) == 0)
			return s;
	}
}

static void insert(struct dag *d, const uint8_t key[KEY_LEN], uint64_t round, uint64_t position, uint8_t outcome);

static void grow(struct dag *d)
{
	struct dag_dedup_slot *old = d->dedup;
	size_t cap = d->dedup_cap;
	d->dedup_cap = cap ? 2 * cap : 1024;
	d->dedup = weft_table_alloc(d->dedup_cap, sizeof(*d->dedup));
	d->dedup_used = 0;
	for (size_t i = 0; i < cap; i++)
		if (old[i].used)
			insert(d, old[i].key, full_round(d, old[i].round_lo), old[i].position, old[i].outcome);
	weft_table_free(old, cap, sizeof(*old));
}

static void insert(struct dag *d, const uint8_t key[KEY_LEN], uint64_t round, uint64_t position, uint8_t outcome)
{
	if (2 * (d->dedup_used + 1) > d->dedup_cap)
		grow(d);
	if (round > d->dedup_top)
		d->dedup_top = round;
	size_t i = home(d, key);
	while (d->dedup[i].used && memcmp(d->dedup[i].key, key, KEY_LEN) != 0)
		i = (i + 1) & (d->dedup_cap - 1);
	struct dag_dedup_slot *s = &d->dedup[i];
	d->dedup_used += !s->used;
	memcpy(s->key, key, KEY_LEN);
	s->round_lo = (uint32_t)round, s->position = position, s->outcome = outcome;
	s->used = true;
}

/* Backward-shift deletion: later entries of the same probe run move up,
 * so lookups never need tombstones. */
static void erase(struct dag *d, struct dag_dedup_slot *s)
{
	size_t mask = d->dedup_cap - 1, hole = (size_t)(s - d->dedup);
	for (size_t i = (hole + 1) & mask; d->dedup[i].used; i = (i + 1) & mask) {
		size_t h = home(d, d->dedup[i].key);
		/* Move i into the hole unless its home lies cyclically in (hole, i]. */
		if (((i - h) & mask) >= ((i - hole) & mask)) {
			d->dedup[hole] = d->dedup[i];
			hole = i;
		}
	}
	d->dedup[hole].used = false;
	d->dedup_used--;
}

void dag_dedup_prefetch(const struct dag *d, const uint8_t digest[32])
{
	if (d->dedup_cap)
		__builtin_prefetch(&d->dedup[home(d, digest)], 1);
}

int dag_dedup_get(struct dag *d, const uint8_t digest[32], struct dag_committed *c)
{
	const struct dag_dedup_slot *s = find(d, digest);
	if (s == NULL)
		return WEFT_NOTFOUND;
	if (c) {
		c->round = full_round(d, s->round_lo);
		c->position = s->position;
		c->outcome = s->outcome;
	}
	return 0;
}

void dag_dedup_put(struct dag *d, const uint8_t digest[32], uint64_t round, uint64_t position, uint8_t outcome)
{
	insert(d, digest, round, position, outcome);
	if (d->nexpiring + ENTRY_LEN > d->capexpiring) {
		d->capexpiring = d->capexpiring ? 2 * d->capexpiring : 64 * ENTRY_LEN;
		d->expiring = realloc(d->expiring, d->capexpiring);
		if (d->expiring == NULL)
			abort();
	}
	uint8_t *e = d->expiring + d->nexpiring;
	memcpy(e, digest, 32);
	weft_be64_put(e + 32, position);
	e[40] = outcome;
	d->nexpiring += ENTRY_LEN;
}

void dag_dedup_anchor_done(struct dag *d, uint64_t round)
{
	if (d->nexpiring == 0)
		return;
	uint8_t k[9];
	expiry_key(k, round);
	d->env->ops->kv_put(d->env, k, sizeof(k), d->expiring, d->nexpiring);
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
	for (size_t i = 0; i + ENTRY_LEN <= len; i += ENTRY_LEN) {
		struct dag_dedup_slot *s = find(d, (const uint8_t *)val + i);
		/* Only the entry this anchor made (a digest is in the index once). */
		if (s && s->round_lo == (uint32_t)r)
			erase(d, s);
	}
	d->env->ops->kv_del(d->env, k, sizeof(k));
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

static int load_record(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct dag *d = arg;
	if (klen != 9 || vlen % ENTRY_LEN != 0)
		return WEFT_ECORRUPT;
	uint64_t round = weft_be64_get((const uint8_t *)key + 1);
	for (size_t i = 0; i < vlen; i += ENTRY_LEN) {
		const uint8_t *e = (const uint8_t *)val + i;
		insert(d, e, round, weft_be64_get(e + 32), e[40]);
	}
	return 0;
}

int dag_dedup_load(struct dag *d)
{
	return d->env->ops->kv_scan(d->env, "E", 1, "F", 1, load_record, d);
}

void dag_dedup_free(struct dag *d)
{
	free(d->expiring);
	d->expiring = NULL;
	d->nexpiring = d->capexpiring = 0;
	weft_table_free(d->dedup, d->dedup_cap, sizeof(*d->dedup));
	d->dedup = NULL;
	d->dedup_cap = d->dedup_used = 0;
}
