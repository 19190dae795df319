/* seqset.c - watermark-plus-sparse-set of sequence numbers (weft/seqset.h). */
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/seqset.h"

bool weft_seqset_has(const struct weft_seqset *s, uint64_t seq)
{
	if (seq < s->low)
		return true;
	uint32_t lo = 0, hi = s->nabove;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (s->above[mid] == seq)
			return true;
		if (s->above[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void weft_seqset_add(struct weft_seqset *s, uint64_t seq)
{
	if (weft_seqset_has(s, seq))
		return;
	if (seq == s->low) {
		s->low++;
		uint32_t k = 0;
		while (k < s->nabove && s->above[k] == s->low)
			k++, s->low++;
		if (k) {
			memmove(s->above, s->above + k, (s->nabove - k) * sizeof(uint64_t));
			s->nabove -= k;
		}
		return;
	}
	if (s->nabove == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 8;
		s->above = realloc(s->above, s->cap * sizeof(uint64_t));
		if (s->above == NULL)
			abort();
	}
	uint32_t i = s->nabove;
	while (i > 0 && s->above[i - 1] > seq) {
		s->above[i] = s->above[i - 1];
		i--;
	}
	s->above[i] = seq;
	s->nabove++;
}

void weft_seqset_free(struct weft_seqset *s)
{
	free(s->above);
	memset(s, 0, sizeof(*s));
}

int weft_seqset_save(const struct weft_seqset *s, struct weft_env *env, const void *key, size_t klen)
{
	size_t vlen = 8 * (1 + (size_t)s->nabove);
	uint8_t small[8 * 16], *val = vlen <= sizeof(small) ? small : malloc(vlen);
	if (val == NULL)
		abort();
	weft_le64_put(val, s->low);
	for (uint32_t i = 0; i < s->nabove; i++)
		weft_le64_put(val + 8 * (1 + (size_t)i), s->above[i]);
	int rc = env->ops->kv_put(env, key, klen, val, vlen);
	if (val != small)
		free(val);
	return rc;
}

int weft_seqset_load(struct weft_seqset *s, const void *val, size_t vlen)
{
	const uint8_t *v = val;
	if (vlen < 8 || vlen % 8)
		return WEFT_ECORRUPT;
	weft_seqset_free(s);
	s->low = weft_le64_get(v);
	for (size_t i = 1; i < vlen / 8; i++) {
		uint64_t seq = weft_le64_get(v + 8 * i);
		if (seq < s->low)
			return WEFT_ECORRUPT;
		weft_seqset_add(s, seq);
	}
	return 0;
}
