/* seqset.h - a set of sequence numbers kept as a watermark plus a sparse
 * sorted set above it ("every seq below low, and these"), persisted in a
 * protocol's kv under a caller-chosen key.  Used for "what was delivered
 * from each origin" by the broadcast protocols, so their state stays O(1)
 * per origin however long they run. */
#ifndef WEFT_SEQSET_H
#define WEFT_SEQSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/proto.h"

struct weft_seqset {
	uint64_t low;      /* every seq < low is in the set */
	uint64_t *above;   /* members >= low, sorted */
	uint32_t nabove, cap;
};

bool weft_seqset_has(const struct weft_seqset *s, uint64_t seq);
/* Adds seq (no-op when present); advances low over a contiguous run. */
void weft_seqset_add(struct weft_seqset *s, uint64_t seq);
void weft_seqset_free(struct weft_seqset *s);
/* Stores s under key: [low, above...] as 8-byte little-endian words. */
int weft_seqset_save(const struct weft_seqset *s, struct weft_env *env, const void *key, size_t klen);
/* Loads from a stored value (kv_get/kv_scan result).  WEFT_ECORRUPT on a bad value. */
int weft_seqset_load(struct weft_seqset *s, const void *val, size_t vlen);

#endif
