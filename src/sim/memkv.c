/* memkv.c - the simulator's in-memory key-value store: an open-addressing
 * hash table of byte-string keys.  Gets, puts and deletes are O(1); a scan
 * (rare: recovery and garbage collection) collects the keys in range and
 * sorts them. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "weft/err.h"

struct memkv_entry {
	uint8_t *key;      /* NULL: empty; TOMBSTONE: deleted */
	uint8_t *val;
	uint32_t klen, vlen;
	uint64_t hash;
};

static uint8_t tombstone_mark;
#define TOMBSTONE (&tombstone_mark)

struct sim_memkv {
	struct memkv_entry *slots;
	size_t cap, used, live;
};

static uint64_t hash_bytes(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h ^ (h >> 29);
}

struct sim_memkv *sim_memkv_new(void)
{
	struct sim_memkv *m = calloc(1, sizeof(*m));
	if (m == NULL)
		abort();
	m->cap = 64;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (m->slots == NULL)
		abort();
	return m;
}

void sim_memkv_free(struct sim_memkv *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slots[i].key && m->slots[i].key != TOMBSTONE) {
			free(m->slots[i].key);
			free(m->slots[i].val);
		}
	}
	free(m->slots);
	free(m);
}

/* Slot holding key, or the slot where it would go (first tombstone or empty). */
static struct memkv_entry *find(struct sim_memkv *m, const void *key, size_t klen, uint64_t h, bool *found)
{
	size_t mask = m->cap - 1, i = h & mask;
	struct memkv_entry *grave = NULL;
	for (;;) {
		struct memkv_entry *e = &m->slots[i];
		if (e->key == NULL) {
			*found = false;
			return grave ? grave : e;
		}
		if (e->key == TOMBSTONE) {
			if (grave == NULL)
				grave = e;
		} else if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0) {
			*found = true;
			return e;
		}
		i = (i + 1) & mask;
	}
}

static void grow(struct sim_memkv *m)
{
	struct memkv_entry *old = m->slots;
	size_t oldcap = m->cap;
	m->cap = m->live * 4 > oldcap ? oldcap * 2 : oldcap;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (m->slots == NULL)
		abort();
	m->used = m->live;
	for (size_t i = 0; i < oldcap; i++) {
		struct memkv_entry *e = &old[i];
		if (e->key == NULL || e->key == TOMBSTONE)
			continue;
		size_t j = e->hash & (m->cap - 1);
		while (m->slots[j].key)
			j = (j + 1) & (m->cap - 1);
		m->slots[j] = *e;
	}
	free(old);
}

int sim_memkv_get(struct sim_memkv *m, const void *key, size_t klen, const void **val, size_t *vlen)
{
	bool found;
	struct memkv_entry *e = find(m, key, klen, hash_bytes(key, klen), &found);
	if (!found)
		return WEFT_NOTFOUND;
	*val = e->val;
	*vlen = e->vlen;
	return 0;
}

int sim_memkv_put(struct sim_memkv *m, const void *key, size_t klen, const void *val, size_t vlen)
{
	if (klen == 0 || klen > UINT32_MAX || vlen > UINT32_MAX)
		return WEFT_EINVAL;
	if ((m->used + 1) * 4 > m->cap * 3)
		grow(m);
	uint64_t h = hash_bytes(key, klen);
	bool found;
	struct memkv_entry *e = find(m, key, klen, h, &found);
	if (found && e->vlen == vlen) { /* same size: overwrite in place */
		memcpy(e->val, val, vlen);
		return 0;
	}
	uint8_t *v = malloc(vlen ? vlen : 1);
	if (v == NULL)
		abort();
	memcpy(v, val, vlen);
	if (found) {
		free(e->val);
	} else {
		if (e->key == NULL)
			m->used++;
		e->key = malloc(klen);
		if (e->key == NULL)
			abort();
		memcpy(e->key, key, klen);
		e->klen = (uint32_t)klen;
		e->hash = h;
		m->live++;
	}
	e->val = v;
	e->vlen = (uint32_t)vlen;
	return 0;
}

int sim_memkv_del(struct sim_memkv *m, const void *key, size_t klen)
{
	bool found;
	struct memkv_entry *e = find(m, key, klen, hash_bytes(key, klen), &found);
	if (!found)
		return WEFT_NOTFOUND;
	free(e->key);
	free(e->val);
	memset(e, 0, sizeof(*e));
	e->key = TOMBSTONE;
	m->live--;
	return 0;
}

static int cmp_bytes(const void *ak, size_t al, const void *bk, size_t bl)
{
	int c = memcmp(ak, bk, al < bl ? al : bl);
	return c ? c : (al > bl) - (al < bl);
}

static int cmp_entries(const void *a, const void *b)
{
	const struct memkv_entry *x = *(const struct memkv_entry *const *)a;
	const struct memkv_entry *y = *(const struct memkv_entry *const *)b;
	return cmp_bytes(x->key, x->klen, y->key, y->klen);
}

int sim_memkv_scan(struct sim_memkv *m, const void *from, size_t flen, const void *to, size_t tlen,
		   weft_env_scan_fn fn, void *arg)
{
	struct memkv_entry **hits = NULL;
	size_t nhits = 0, cap = 0;
	for (size_t i = 0; i < m->cap; i++) {
		struct memkv_entry *e = &m->slots[i];
		if (e->key == NULL || e->key == TOMBSTONE)
			continue;
		if (cmp_bytes(e->key, e->klen, from, flen) < 0)
			continue;
		if (to && cmp_bytes(e->key, e->klen, to, tlen) >= 0)
			continue;
		if (nhits == cap) {
			cap = cap ? 2 * cap : 64;
			hits = realloc(hits, cap * sizeof(*hits));
			if (hits == NULL)
				abort();
		}
		hits[nhits++] = e;
	}
	if (nhits)
		qsort(hits, nhits, sizeof(*hits), cmp_entries);
	int rc = 0;
	for (size_t i = 0; i < nhits && rc == 0; i++)
		rc = fn(arg, hits[i]->key, hits[i]->klen, hits[i]->val, hits[i]->vlen);
	free(hits);
	return rc < 0 ? rc : 0;
}
