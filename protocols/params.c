/* params.c - lookups in a protocol's parameter map (msgpack), shared by all
 * protocols' init functions. */
#include <string.h>

#include "weft/err.h"
#include "weft/proto.h"

/* Positions r at the value of key.  0, WEFT_NOTFOUND or WEFT_EINVAL. */
static int find_key(struct weft_mp_reader *r, const uint8_t *params, size_t plen, const char *key)
{
	if (params == NULL || plen == 0)
		return WEFT_NOTFOUND;
	uint32_t pairs;
	weft_mp_reader_init(r, params, plen);
	if (weft_mp_read_map(r, &pairs) != 0)
		return WEFT_EINVAL;
	size_t klen = strlen(key);
	for (uint32_t i = 0; i < pairs; i++) {
		const char *k;
		uint32_t kl;
		if (weft_mp_read_str(r, &k, &kl) != 0)
			return WEFT_EINVAL;
		if (kl == klen && memcmp(k, key, klen) == 0)
			return 0;
		if (weft_mp_skip(r) != 0)
			return WEFT_EINVAL;
	}
	return WEFT_NOTFOUND;
}

int weft_params_uint(const uint8_t *params, size_t plen, const char *key, uint64_t *out)
{
	struct weft_mp_reader r;
	int rc = find_key(&r, params, plen, key);
	if (rc != 0)
		return rc;
	return weft_mp_read_uint(&r, out) == 0 ? 0 : WEFT_EINVAL;
}

int weft_params_str(const uint8_t *params, size_t plen, const char *key, const char **s, uint32_t *len)
{
	struct weft_mp_reader r;
	int rc = find_key(&r, params, plen, key);
	if (rc != 0)
		return rc;
	return weft_mp_read_str(&r, s, len) == 0 ? 0 : WEFT_EINVAL;
}

int weft_params_value(const uint8_t *params, size_t plen, const char *key, const uint8_t **val, size_t *vlen)
{
	struct weft_mp_reader r;
	int rc = find_key(&r, params, plen, key);
	if (rc != 0)
		return rc;
	*val = r.p;
	if (weft_mp_skip(&r) != 0)
		return WEFT_EINVAL;
	*vlen = (size_t)(r.p - *val);
	return 0;
}

bool weft_params_str_is(const uint8_t *params, size_t plen, const char *key, const char *value)
{
	const char *s;
	uint32_t len;
	return weft_params_str(params, plen, key, &s, &len) == 0 && len == strlen(value) &&
	       memcmp(s, value, len) == 0;
}

uint8_t *weft_params_with(const uint8_t *params, size_t plen, const char *key, const uint8_t *val, size_t vlen,
			  size_t *len)
{
	struct weft_mpw w;
	struct weft_mp_reader r;
	uint32_t pairs = 0;
	weft_mpw_init(&w);
	weft_mp_reader_init(&r, params, plen);
	if (params && weft_mp_read_map(&r, &pairs) != 0)
		pairs = 0;
	weft_mpw_map(&w, pairs + 1);
	weft_mpw_raw(&w, r.p, params && pairs ? (size_t)(r.end - r.p) : 0);
	weft_mpw_str(&w, key);
	weft_mpw_raw(&w, val, vlen);
	return weft_mpw_steal(&w, len);
}

uint8_t *weft_params_with_adversary(const uint8_t *params, size_t plen, const uint8_t *adv, size_t alen, size_t *len)
{
	static const uint8_t empty_map = 0x80;
	return adv ? weft_params_with(params, plen, "adversary", adv, alen, len)
		   : weft_params_with(params, plen, "adversary", &empty_map, 1, len);
}
