/* txindex.c - the states of recent transactions (pending in our mempool,
 * proposed in our vertex, committed), in memory: tx.status reads pending
 * and proposed here (committed comes from the durable index, dedup.c), and
 * the mempool uses it to know what it holds and what was committed
 * meanwhile.  Ordering marks committed only the transactions of our own
 * vertices; one of ours committed through another node's vertex is marked
 * when our next vertex passes over it (dag.c, make_vertex), so a
 * transaction that never waited here costs no lookup at all.  A fixed-size open-addressing table keyed by the leading 16
 * bytes of the digest; when full, the oldest entry goes (FIFO), so memory
 * stays bounded however long the node runs.  It starts empty at a restart
 * (the mempool's records refill it). */
#include <stdlib.h>
#include <string.h>

#include "weft/util.h"

#include "dag.h"

static uint32_t slot_of(const struct dag_txindex *t, const uint8_t key[16])
{
	uint32_t h;
	memcpy(&h, key, sizeof(h));
	return h & (t->cap - 1);
}

static bool empty(const struct dag_tx_entry *e)
{
	static const uint8_t zero[16];
	return memcmp(e->digest, zero, 16) == 0;
}

static void key_of(uint8_t key[16], const uint8_t digest[32])
{
	memcpy(key, digest, 16);
	static const uint8_t zero[16];
	if (memcmp(key, zero, 16) == 0)
		key[0] = 1; /* zero marks an empty entry */
}

void dag_txindex_init(struct dag_txindex *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max < 16 ? 16 : max;
	t->cap = 32;
	while (t->cap < 2 * t->max)
		t->cap *= 2;
	t->tab = weft_table_alloc(t->cap, sizeof(*t->tab));
	t->fifo = calloc(t->max, sizeof(*t->fifo));
	if (t->fifo == NULL)
		abort();
}

void dag_txindex_free(struct dag_txindex *t)
{
	weft_table_free(t->tab, t->cap, sizeof(*t->tab));
	free(t->fifo);
	memset(t, 0, sizeof(*t));
}

static struct dag_tx_entry *find(const struct dag_txindex *t, const uint8_t key[16])
{
	for (uint32_t i = slot_of(t, key);; i = (i + 1) & (t->cap - 1)) {
		struct dag_tx_entry *e = &t->tab[i];
		if (empty(e) || memcmp(e->digest, key, 16) == 0)
			return e;
	}
}

/* Removes key's entry, shifting later entries of its cluster back. */
static void erase(struct dag_txindex *t, const uint8_t key[16])
{
	struct dag_tx_entry *e = find(t, key);
	if (empty(e))
		return;
	uint32_t hole = (uint32_t)(e - t->tab);
	memset(e, 0, sizeof(*e));
	t->used--;
	for (uint32_t i = (hole + 1) & (t->cap - 1); !empty(&t->tab[i]); i = (i + 1) & (t->cap - 1)) {
		uint32_t home = slot_of(t, t->tab[i].digest);
		/* Move the entry into the hole unless its home lies in (hole, i]. */
		bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
		if (stays)
			continue;
		t->tab[hole] = t->tab[i];
		memset(&t->tab[i], 0, sizeof(t->tab[i]));
		hole = i;
	}
}

void dag_txindex_set(struct dag_txindex *t, const uint8_t digest[32], enum dag_tx_state state, uint64_t round,
		     uint64_t position, uint8_t outcome)
{
	uint8_t key[16];
	key_of(key, digest);
	struct dag_tx_entry *e = find(t, key);
	if (empty(e)) {
		if (t->fifo_len == t->max) {
			erase(t, t->fifo[t->fifo_head]);
			t->fifo_head = (t->fifo_head + 1) % t->max;
			t->fifo_len--;
			e = find(t, key);
		}
		memcpy(t->fifo[(t->fifo_head + t->fifo_len) % t->max], key, 16);
		t->fifo_len++;
		t->used++;
		memcpy(e->digest, key, 16);
	}
	e->state = (uint8_t)state;
	e->round = round;
	e->position = position;
	e->outcome = outcome;
}

void dag_txindex_update(struct dag_txindex *t, const uint8_t digest[32], enum dag_tx_state state, uint64_t round,
			uint64_t position, uint8_t outcome)
{
	uint8_t key[16];
	key_of(key, digest);
	struct dag_tx_entry *e = find(t, key);
	if (empty(e))
		return;
	e->state = (uint8_t)state;
	e->round = round;
	e->position = position;
	e->outcome = outcome;
}

void dag_txindex_prefetch(const struct dag_txindex *t, const uint8_t digest[32])
{
	uint8_t key[16];
	key_of(key, digest);
	__builtin_prefetch(&t->tab[slot_of(t, key)], 1);
}

const struct dag_tx_entry *dag_txindex_get(const struct dag_txindex *t, const uint8_t digest[32])
{
	uint8_t key[16];
	key_of(key, digest);
	const struct dag_tx_entry *e = find(t, key);
	return empty(e) ? NULL : e;
}
