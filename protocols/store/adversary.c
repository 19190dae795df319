/* adversary.c - Byzantine holders for the storage service, for weft-sim's
 * adversary faults and weftd --byzantine.  Each runs the honest service
 * unchanged inside an env that bends one thing (weft_env_wrap):
 *
 *   drop     its share store acknowledges every share but keeps only
 *            1000 - permille of each thousand (default permille 1000:
 *            keeps none): a node that silently loses data.  Its honest
 *            code then admits what is missing, signed.
 *   corrupt  a flipped byte in permille of the shares it serves (default
 *            every one): readers must refuse them and fetch elsewhere.
 *   lie      answers permille of the challenges (default every one) with
 *            a wrong block, correctly signed: portable evidence.
 *
 * Parameters: the "adversary" map of the protocol's parameters, key
 * "permille". */
#include <string.h>

#include <sodium.h>

#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/mp.h"
#include "weft/util.h"

#include "store.h"

static struct store_adv *adv_of_env(struct weft_env *env)
{
	struct weft_env_wrap *w = weft_env_wrapped(env);
	return (struct store_adv *)((char *)w - offsetof(struct store_adv, wrap));
}

/* One in a thousand draws, from the env's randomness (deterministic in the
 * simulator). */
static bool misbehave(struct store_adv *a)
{
	uint32_t r;
	a->wrap.inner->ops->random(a->wrap.inner, &r, sizeof(r));
	bool yes = r % 1000 < a->permille;
	a->misdeeds += yes;
	return yes;
}

/* ---- drop: the share store ---- */

static int drop_put(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share, const void *data, size_t len,
		    const uint8_t root[WEFT_STORE_HASH], bool repair)
{
	struct store_adv *a = ctx;
	if (misbehave(a))
		return 0; /* "stored" */
	return a->inner->put(a->inner->ctx, cid, share, data, len, root, repair);
}

static int pass_copy(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share, void **data, size_t *len)
{
	struct store_adv *a = ctx;
	return a->inner->copy(a->inner->ctx, cid, share, data, len);
}

static int pass_has(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share, struct weft_share_meta *meta)
{
	struct store_adv *a = ctx;
	return a->inner->has(a->inner->ctx, cid, share, meta);
}

static int pass_del(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share)
{
	struct store_adv *a = ctx;
	return a->inner->del(a->inner->ctx, cid, share);
}

static int pass_ref(void *ctx, const uint8_t file[WEFT_STORE_HASH], const uint8_t (*cids)[WEFT_STORE_HASH], size_t n)
{
	struct store_adv *a = ctx;
	return a->inner->ref(a->inner->ctx, file, cids, n);
}

static int pass_unref(void *ctx, const uint8_t file[WEFT_STORE_HASH])
{
	struct store_adv *a = ctx;
	return a->inner->unref(a->inner->ctx, file);
}

static const void *adv_service(struct weft_env *env, const char *name)
{
	struct store_adv *a = adv_of_env(env);
	return strcmp(name, WEFT_SHARE_SERVICE) == 0 ? &a->svc : NULL;
}

/* ---- corrupt and lie: the sends ---- */

static int msg_type(const uint8_t *msg, size_t len)
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, msg, len);
	uint32_t cnt;
	uint64_t ver, type;
	if (weft_mp_read_array(&r, &cnt) != 0 || weft_mp_read_uint(&r, &ver) != 0 || weft_mp_read_uint(&r, &type) != 0)
		return -1;
	return (int)type;
}

/* A proof of another block than the one asked, signed as an honest one. */
static int send_lie(struct store_adv *a, uint32_t to, const char *kind, const uint8_t *msg, size_t len)
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, msg, len);
	uint32_t cnt, j, blen, plen;
	uint64_t ver, type, index;
	uint8_t cid[HASH], nonce[32], root[HASH];
	const uint8_t *block, *path;
	if (weft_mp_read_array(&r, &cnt) != 0 || weft_mp_read_uint(&r, &ver) != 0 || weft_mp_read_uint(&r, &type) != 0 ||
	    weft_mp_read_bin_fixed(&r, cid, HASH) != 0 || weft_mp_read_u32(&r, &j) != 0 ||
	    weft_mp_read_bin_fixed(&r, nonce, 32) != 0 || weft_mp_read_uint(&r, &index) != 0 ||
	    weft_mp_read_bin_fixed(&r, root, HASH) != 0 || weft_mp_read_bin(&r, &block, &blen) != 0 ||
	    weft_mp_read_bin(&r, &path, &plen) != 0 || blen == 0)
		return WEFT_EDECODE;
	uint8_t *bent = weft_xmemdup(block, blen);
	bent[0] ^= 0x5a;
	uint8_t leaf[HASH], stmt[PROOF_STMT_LEN], sig[WEFT_SIGNATURE_LEN];
	weft_merkle_leaf_hash(leaf, bent, blen);
	store_proof_statement(stmt, cid, j, nonce, index, leaf, root, path, plen);
	a->wrap.inner->ops->sign(a->wrap.inner, stmt, sizeof(stmt), sig);
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 10);
	weft_mpw_uint(&w, ver);
	weft_mpw_uint(&w, type);
	weft_mpw_bin(&w, cid, HASH);
	weft_mpw_uint(&w, j);
	weft_mpw_bin(&w, nonce, 32);
	weft_mpw_uint(&w, index);
	weft_mpw_bin(&w, root, HASH);
	weft_mpw_bin(&w, bent, blen);
	weft_mpw_bin(&w, path, plen);
	weft_mpw_bin(&w, sig, sizeof(sig));
	int rc = weft_env_send(a->wrap.inner, to, kind, w.buf, w.len);
	weft_mpw_free(&w);
	free(bent);
	return rc;
}

static int adv_send(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len)
{
	struct store_adv *a = adv_of_env(env);
	int type = msg_type(msg, len);
	if (a->mode == ADV_CORRUPT && type == MSG_SHARE && len > 0 && misbehave(a)) {
		/* The last byte of a SHARE is the last byte of the share's data. */
		uint8_t *bent = weft_xmemdup(msg, len);
		bent[len - 1] ^= 0x01;
		int rc = weft_env_send(a->wrap.inner, to, kind, bent, len);
		free(bent);
		return rc;
	}
	if (a->mode == ADV_LIE && type == MSG_PROOF && misbehave(a))
		return send_lie(a, to, kind, msg, len);
	return weft_env_send(a->wrap.inner, to, kind, msg, len);
}

static int adv_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen, enum store_adv_mode mode)
{
	struct store_adv *a = state;
	a->mode = mode;
	a->permille = 1000;
	const uint8_t *adv;
	size_t alen;
	uint64_t v;
	if (weft_params_value(params, plen, "adversary", &adv, &alen) == 0 &&
	    weft_params_uint(adv, alen, "permille", &v) == 0) {
		if (v > 1000)
			return WEFT_EINVAL;
		a->permille = (uint32_t)v;
	}
	a->inner = env->ops->service ? env->ops->service(env, WEFT_SHARE_SERVICE) : NULL;
	if (a->inner == NULL)
		return WEFT_EUNSUPPORTED;
	a->svc = (struct weft_share_service){
		.ctx = a,
		.put = mode == ADV_DROP ? drop_put : NULL,
		.copy = pass_copy,
		.has = pass_has,
		.del = pass_del,
		.ref = pass_ref,
		.unref = pass_unref,
	};
	if (mode != ADV_DROP) {
		/* Only drop bends the store: the others keep honest shares. */
		a->svc = *a->inner;
	}
	weft_env_wrap_init(&a->wrap, env);
	a->wrap.ops.service = adv_service;
	a->wrap.ops.send = adv_send;
	return weft_store_service.init(&a->honest, &a->wrap.env, params, plen);
}

int store_adv_drop_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return adv_init(state, env, params, plen, ADV_DROP);
}

int store_adv_corrupt_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return adv_init(state, env, params, plen, ADV_CORRUPT);
}

int store_adv_lie_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return adv_init(state, env, params, plen, ADV_LIE);
}
