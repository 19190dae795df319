/* asc.c - the ledger's atomic service channel transactions (weft/ledger.h,
 * docs/ledger.md "Service channels"): the wire forms of open, cooperative
 * close, claim and refund with their bounded, canonical decoders, the
 * tagged signature hashes of an open and of a state (which bind the
 * committee's chain and the channel), and their execution (kinds of
 * state.c's table). */
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "weft/adaptor.h"
#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/ledger.h"
#include "weft/proto.h"

#include "kinds.h"

#define OPEN_KEY "weft/asc-open/v1"
#define ID_KEY "weft/asc-id/v1"
#define STATE_KEY "weft/asc-state/v1"

/* ---- wire ---- */

void weft_ledger_asc_open_encode(const struct weft_ledger_asc_open *o, struct weft_mpw *w)
{
	weft_mpw_array(w, 8);
	weft_mpw_str(w, WEFT_LEDGER_ASC_OPEN_TAG);
	weft_mpw_uint(w, WEFT_LEDGER_ASC_VERSION);
	weft_mpw_bin(w, o->nonce, sizeof(o->nonce));
	weft_mpw_bin(w, o->client, sizeof(o->client));
	weft_mpw_bin(w, o->provider, sizeof(o->provider));
	weft_mpw_uint(w, o->deposit);
	weft_mpw_uint(w, o->timeout);
	weft_mpw_bin(w, o->sig, sizeof(o->sig));
}

/* Ends a decode: nothing left, and tx is the canonical encoding of what
 * was read (w holds its re-encoding). */
static int canonical_end(struct weft_mp_reader *r, struct weft_mpw *w, const uint8_t *tx, size_t len)
{
	bool same = weft_mp_remaining(r) == 0 && ledger_same_bytes(w, tx, len);
	weft_mpw_free(w);
	return same ? 0 : WEFT_EDECODE;
}

int weft_ledger_asc_open_decode(const uint8_t *tx, size_t len, struct weft_ledger_asc_open *o)
{
	struct weft_mp_reader r;
	struct weft_ledger_asc_open d;
	int rc = ledger_kind_open(&r, tx, len, WEFT_LEDGER_ASC_OPEN_TAG, 8, WEFT_LEDGER_ASC_VERSION);
	if (rc != 0)
		return rc;
	memset(&d, 0, sizeof(d));
	if (weft_mp_read_bin_fixed(&r, d.nonce, sizeof(d.nonce)) != 0 ||
	    weft_mp_read_bin_fixed(&r, d.client, sizeof(d.client)) != 0 ||
	    weft_mp_read_bin_fixed(&r, d.provider, sizeof(d.provider)) != 0 || weft_mp_read_uint(&r, &d.deposit) != 0 ||
	    weft_mp_read_uint(&r, &d.timeout) != 0 || weft_mp_read_bin_fixed(&r, d.sig, sizeof(d.sig)) != 0)
		return WEFT_EDECODE;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_open_encode(&d, &w);
	if ((rc = canonical_end(&r, &w, tx, len)) != 0)
		return rc;
	*o = d;
	return 0;
}

void weft_ledger_asc_state_encode(const struct weft_ledger_asc_state *st, struct weft_mpw *w)
{
	weft_mpw_array(w, 7);
	weft_mpw_uint(w, st->seq);
	weft_mpw_uint(w, st->free);
	weft_mpw_uint(w, st->locked);
	weft_mpw_uint(w, st->provider);
	weft_mpw_uint(w, st->status);
	weft_mpw_bin(w, st->point, sizeof(st->point));
	weft_mpw_bin(w, st->request, sizeof(st->request));
}

int weft_ledger_asc_state_read(struct weft_mp_reader *r, struct weft_ledger_asc_state *st)
{
	uint32_t count;
	uint64_t status;
	memset(st, 0, sizeof(*st));
	if (weft_mp_read_array(r, &count) != 0 || count != 7 || weft_mp_read_uint(r, &st->seq) != 0 ||
	    weft_mp_read_uint(r, &st->free) != 0 || weft_mp_read_uint(r, &st->locked) != 0 ||
	    weft_mp_read_uint(r, &st->provider) != 0 || weft_mp_read_uint(r, &status) != 0 ||
	    status < WEFT_LEDGER_ASC_OPEN || status > WEFT_LEDGER_ASC_CLOSED ||
	    weft_mp_read_bin_fixed(r, st->point, sizeof(st->point)) != 0 ||
	    weft_mp_read_bin_fixed(r, st->request, sizeof(st->request)) != 0)
		return WEFT_EDECODE;
	st->status = (uint8_t)status;
	return 0;
}

void weft_ledger_asc_final_encode(const char *tag, const struct weft_ledger_asc_final *f, struct weft_mpw *w)
{
	bool claim = strcmp(tag, WEFT_LEDGER_ASC_CLAIM_TAG) == 0;
	weft_mpw_array(w, claim ? 7 : 6);
	weft_mpw_str(w, tag);
	weft_mpw_uint(w, WEFT_LEDGER_ASC_VERSION);
	weft_mpw_bin(w, f->id, sizeof(f->id));
	weft_ledger_asc_state_encode(&f->st, w);
	weft_mpw_bin(w, f->client_sig, sizeof(f->client_sig));
	weft_mpw_bin(w, f->provider_sig, sizeof(f->provider_sig));
	if (claim)
		weft_mpw_bin(w, f->secret, sizeof(f->secret));
}

int weft_ledger_asc_final_decode(const char *tag, const uint8_t *tx, size_t len, struct weft_ledger_asc_final *f)
{
	struct weft_mp_reader r;
	struct weft_ledger_asc_final d;
	bool claim = strcmp(tag, WEFT_LEDGER_ASC_CLAIM_TAG) == 0;
	int rc = ledger_kind_open(&r, tx, len, tag, claim ? 7 : 6, WEFT_LEDGER_ASC_VERSION);
	if (rc != 0)
		return rc;
	memset(&d, 0, sizeof(d));
	if (weft_mp_read_bin_fixed(&r, d.id, sizeof(d.id)) != 0 || weft_ledger_asc_state_read(&r, &d.st) != 0 ||
	    weft_mp_read_bin_fixed(&r, d.client_sig, sizeof(d.client_sig)) != 0 ||
	    weft_mp_read_bin_fixed(&r, d.provider_sig, sizeof(d.provider_sig)) != 0 ||
	    (claim && weft_mp_read_bin_fixed(&r, d.secret, sizeof(d.secret)) != 0))
		return WEFT_EDECODE;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_final_encode(tag, &d, &w);
	if ((rc = canonical_end(&r, &w, tx, len)) != 0)
		return rc;
	*f = d;
	return 0;
}

void weft_ledger_asc_refund_encode(const uint8_t id[32], struct weft_mpw *w)
{
	weft_mpw_array(w, 3);
	weft_mpw_str(w, WEFT_LEDGER_ASC_REFUND_TAG);
	weft_mpw_uint(w, WEFT_LEDGER_ASC_VERSION);
	weft_mpw_bin(w, id, 32);
}

int weft_ledger_asc_refund_decode(const uint8_t *tx, size_t len, uint8_t id[32])
{
	struct weft_mp_reader r;
	uint8_t d[32];
	int rc = ledger_kind_open(&r, tx, len, WEFT_LEDGER_ASC_REFUND_TAG, 3, WEFT_LEDGER_ASC_VERSION);
	if (rc != 0)
		return rc;
	if (weft_mp_read_bin_fixed(&r, d, sizeof(d)) != 0)
		return WEFT_EDECODE;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_refund_encode(d, &w);
	if ((rc = canonical_end(&r, &w, tx, len)) != 0)
		return rc;
	memcpy(id, d, 32);
	return 0;
}

/* ---- signature hashes ---- */

static void open_hash(const char *key, const uint8_t chain[32], const struct weft_ledger_asc_open *o, uint8_t out[32])
{
	crypto_generichash_state st;
	uint8_t amount[8];
	crypto_generichash_init(&st, (const unsigned char *)key, strlen(key), 32);
	crypto_generichash_update(&st, chain, 32);
	crypto_generichash_update(&st, o->nonce, sizeof(o->nonce));
	crypto_generichash_update(&st, o->client, sizeof(o->client));
	crypto_generichash_update(&st, o->provider, sizeof(o->provider));
	weft_be64_put(amount, o->deposit);
	crypto_generichash_update(&st, amount, sizeof(amount));
	weft_be64_put(amount, o->timeout);
	crypto_generichash_update(&st, amount, sizeof(amount));
	crypto_generichash_final(&st, out, 32);
}

void weft_ledger_asc_open_sighash(const uint8_t chain[32], const struct weft_ledger_asc_open *o, uint8_t msg[32])
{
	open_hash(OPEN_KEY, chain, o, msg);
}

void weft_ledger_asc_id(const uint8_t chain[32], const struct weft_ledger_asc_open *o, uint8_t id[32])
{
	open_hash(ID_KEY, chain, o, id);
}

void weft_ledger_asc_state_sighash(const uint8_t chain[32], const uint8_t id[32], const struct weft_ledger_asc_state *s,
				   uint8_t msg[32])
{
	crypto_generichash_state st;
	uint8_t b[8];
	crypto_generichash_init(&st, (const unsigned char *)STATE_KEY, sizeof(STATE_KEY) - 1, 32);
	crypto_generichash_update(&st, chain, 32);
	crypto_generichash_update(&st, id, 32);
	const uint64_t v[4] = {s->seq, s->free, s->locked, s->provider};
	for (int i = 0; i < 4; i++) {
		weft_be64_put(b, v[i]);
		crypto_generichash_update(&st, b, sizeof(b));
	}
	crypto_generichash_update(&st, &s->status, 1);
	crypto_generichash_update(&st, s->point, sizeof(s->point));
	crypto_generichash_update(&st, s->request, sizeof(s->request));
	crypto_generichash_final(&st, msg, 32);
}

/* ---- execution (the kinds of state.c's table, kinds.h) ----
 * Record: "U" id -> status (1 byte: 1 open, 2 closed), client (32),
 * provider (32), deposit (be64), expires (be64). */

#define KEY_ASC 'U'
#define RECORD_LEN (1 + 32 + 32 + 8 + 8)

int weft_ledger_asc(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_asc_record *r)
{
	uint8_t k[33] = {KEY_ASC};
	const void *val;
	size_t vlen;
	memcpy(k + 1, id, 32);
	int rc = l->env->ops->kv_get(l->env, k, sizeof(k), &val, &vlen);
	if (rc != 0)
		return rc;
	const uint8_t *v = val;
	if (vlen != RECORD_LEN || (v[0] != WEFT_LEDGER_CH_OPEN && v[0] != WEFT_LEDGER_CH_CLOSED)) {
		weft_env_log(l->env, WEFT_LOG_ERROR, "ledger.corrupt", "service channel record of %zu bytes", vlen);
		return WEFT_ECORRUPT;
	}
	r->status = v[0];
	memcpy(r->client, v + 1, 32);
	memcpy(r->provider, v + 33, 32);
	r->deposit = weft_be64_get(v + 65);
	r->expires = weft_be64_get(v + 73);
	return 0;
}

static int record_put(struct weft_ledger *l, const uint8_t id[32], const struct weft_ledger_asc_record *r)
{
	uint8_t k[33] = {KEY_ASC}, v[RECORD_LEN];
	memcpy(k + 1, id, 32);
	v[0] = r->status;
	memcpy(v + 1, r->client, 32);
	memcpy(v + 33, r->provider, 32);
	weft_be64_put(v + 65, r->deposit);
	weft_be64_put(v + 73, r->expires);
	return l->env->ops->kv_put(l->env, k, sizeof(k), v, sizeof(v));
}

/* The stateless checks of an open (the signature needs the chain: 0
 * without it, when chain is NULL). */
static enum weft_ledger_outcome open_check(const uint8_t *chain, const struct weft_ledger_asc_open *o)
{
	if (weft_ledger_pubkey_check(o->client) != 0 || weft_ledger_pubkey_check(o->provider) != 0 ||
	    memcmp(o->client, o->provider, WEFT_LEDGER_KEY_LEN) == 0)
		return WEFT_LEDGER_BAD_MEMBERS;
	if (o->deposit == 0)
		return WEFT_LEDGER_ZERO_AMOUNT;
	if (o->timeout < 2)
		return WEFT_LEDGER_MALFORMED;
	uint8_t msg[32];
	if (chain) {
		weft_ledger_asc_open_sighash(chain, o, msg);
		if (weft_ledger_schnorr_verify(o->client, msg, o->sig) != 0)
			return WEFT_LEDGER_BAD_SIGNATURE;
	}
	return WEFT_LEDGER_APPLIED;
}

static int decoded(int rc, enum weft_ledger_outcome *why)
{
	*why = rc == WEFT_NOTFOUND ? WEFT_LEDGER_OPAQUE : rc < 0 ? WEFT_LEDGER_MALFORMED : WEFT_LEDGER_APPLIED;
	return rc;
}

int ledger_asc_open_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_asc_open o;
	int rc = decoded(weft_ledger_asc_open_decode(tx, len, &o), why);
	if (rc == 0 && (*why = open_check(NULL, &o)) != WEFT_LEDGER_APPLIED)
		rc = WEFT_EINVAL;
	return rc;
}

int ledger_asc_close_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_asc_final f;
	return decoded(weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLOSE_TAG, tx, len, &f), why);
}

int ledger_asc_claim_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_asc_final f;
	return decoded(weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLAIM_TAG, tx, len, &f), why);
}

int ledger_asc_refund_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	uint8_t id[32];
	return decoded(weft_ledger_asc_refund_decode(tx, len, id), why);
}

/* An open: the client signed, the id is new, the client holds the
 * deposit; the deposit leaves its account.  Step: the id and the deposit. */
int ledger_asc_open_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
			    enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	struct weft_ledger_asc_open op;
	struct weft_ledger_asc_record r;
	uint8_t id[32];
	uint64_t bal = 0, nonce = 0;
	int rc = weft_ledger_asc_open_decode(tx, len, &op);
	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	*o = rc < 0 ? WEFT_LEDGER_MALFORMED : open_check(l->chain, &op);
	if (*o == WEFT_LEDGER_APPLIED) {
		weft_ledger_asc_id(l->chain, &op, id);
		rc = weft_ledger_asc(l, id, &r);
		if (rc == 0)
			*o = WEFT_LEDGER_CHANNEL_EXISTS;
		else if (rc != WEFT_NOTFOUND)
			return rc;
	}
	if (*o == WEFT_LEDGER_APPLIED) {
		if ((rc = ledger_account_get(l, op.client, &bal, &nonce)) < 0)
			return rc;
		if (bal < op.deposit)
			*o = WEFT_LEDGER_INSUFFICIENT_FUNDS;
	}
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	r.status = WEFT_LEDGER_CH_OPEN;
	memcpy(r.client, op.client, 32);
	memcpy(r.provider, op.provider, 32);
	r.deposit = op.deposit;
	/* The height this transaction gets is height + 1. */
	r.expires = l->height + 1 > UINT64_MAX - op.timeout ? UINT64_MAX : l->height + 1 + op.timeout;
	if ((rc = ledger_account_put(l, op.client, bal - op.deposit, nonce)) != 0)
		return rc;
	memcpy(step, id, 32);
	weft_be64_put(step + 32, op.deposit);
	*slen = 40;
	return record_put(l, id, &r);
}

/* The open channel of id: 0 with *r, or 0 with *o set (unknown, closed),
 * or a kv error. */
static int open_channel(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_asc_record *r,
			enum weft_ledger_outcome *o)
{
	int rc = weft_ledger_asc(l, id, r);
	if (rc == WEFT_NOTFOUND) {
		*o = WEFT_LEDGER_CHANNEL_UNKNOWN;
		return 0;
	}
	if (rc == 0 && r->status != WEFT_LEDGER_CH_OPEN)
		*o = WEFT_LEDGER_CHANNEL_CLOSED;
	return rc;
}

/* Pays client and provider their amounts and closes the channel (*o
 * BALANCE_OVERFLOW, nothing paid, when an account would overflow). */
static int pay_out(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_asc_record *r, uint64_t to_client,
		   uint64_t to_provider, enum weft_ledger_outcome *o)
{
	uint64_t cb, cn, pb, pn;
	int rc;
	if ((rc = ledger_account_get(l, r->client, &cb, &cn)) < 0 || (rc = ledger_account_get(l, r->provider, &pb, &pn)) < 0)
		return rc;
	if (cb > UINT64_MAX - to_client || pb > UINT64_MAX - to_provider) {
		*o = WEFT_LEDGER_BALANCE_OVERFLOW;
		return 0;
	}
	if ((rc = ledger_account_put(l, r->client, cb + to_client, cn)) != 0 ||
	    (rc = ledger_account_put(l, r->provider, pb + to_provider, pn)) != 0)
		return rc;
	r->status = WEFT_LEDGER_CH_CLOSED;
	return record_put(l, id, r);
}

/* A close or claim: the channel open, the state conserved and signed by
 * both (claim: before the expiry, with t of the state's point); then paid
 * out.  Step: the id, and for a claim t. */
static int final_execute(struct weft_ledger *l, const char *tag, const uint8_t *tx, size_t len,
			 const uint8_t digest[32], enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	struct weft_ledger_asc_final f;
	struct weft_ledger_asc_record r;
	bool claim = strcmp(tag, WEFT_LEDGER_ASC_CLAIM_TAG) == 0;
	int rc = weft_ledger_asc_final_decode(tag, tx, len, &f);
	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	if (rc < 0)
		*o = WEFT_LEDGER_MALFORMED;
	else if ((rc = open_channel(l, f.id, &r, o)) < 0)
		return rc;
	const struct weft_ledger_asc_state *st = &f.st;
	if (*o == WEFT_LEDGER_APPLIED && !claim && st->status != WEFT_LEDGER_ASC_CLOSED)
		*o = WEFT_LEDGER_MALFORMED; /* a cooperative close signs a CLOSED state */
	if (*o == WEFT_LEDGER_APPLIED && claim && l->height + 1 >= r.expires)
		*o = WEFT_LEDGER_TOO_LATE;
	if (*o == WEFT_LEDGER_APPLIED &&
	    (st->free > r.deposit || st->locked > r.deposit - st->free ||
	     st->provider != r.deposit - st->free - st->locked))
		*o = WEFT_LEDGER_NOT_CONSERVED;
	if (*o == WEFT_LEDGER_APPLIED) {
		uint8_t msg[32];
		weft_ledger_asc_state_sighash(l->chain, f.id, st, msg);
		if (weft_ledger_schnorr_verify(r.client, msg, f.client_sig) != 0 ||
		    weft_ledger_schnorr_verify(r.provider, msg, f.provider_sig) != 0)
			*o = WEFT_LEDGER_BAD_SIGNATURE;
	}
	if (*o == WEFT_LEDGER_APPLIED && claim) {
		uint8_t T[WEFT_ADAPTOR_POINT_LEN];
		if (weft_adaptor_point(f.secret, T) != 0 || memcmp(T, st->point, sizeof(T)) != 0)
			*o = WEFT_LEDGER_BAD_SECRET;
	}
	if (*o == WEFT_LEDGER_APPLIED && (rc = pay_out(l, f.id, &r, st->free + st->locked, st->provider, o)) < 0)
		return rc;
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	memcpy(step, f.id, 32);
	*slen = 32;
	if (claim) {
		memcpy(step + 32, f.secret, 32);
		*slen = 64;
	}
	return 0;
}

int ledger_asc_close_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
			     enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	return final_execute(l, WEFT_LEDGER_ASC_CLOSE_TAG, tx, len, digest, o, step, slen);
}

int ledger_asc_claim_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
			     enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	return final_execute(l, WEFT_LEDGER_ASC_CLAIM_TAG, tx, len, digest, o, step, slen);
}

/* A refund: from the expiry on, the deposit back to the client.  Step: the id. */
int ledger_asc_refund_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
			      enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	uint8_t id[32];
	struct weft_ledger_asc_record r;
	int rc = weft_ledger_asc_refund_decode(tx, len, id);
	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	if (rc < 0)
		*o = WEFT_LEDGER_MALFORMED;
	else if ((rc = open_channel(l, id, &r, o)) < 0)
		return rc;
	if (*o == WEFT_LEDGER_APPLIED && l->height + 1 < r.expires)
		*o = WEFT_LEDGER_TOO_EARLY;
	if (*o == WEFT_LEDGER_APPLIED && (rc = pay_out(l, id, &r, r.deposit, 0, o)) < 0)
		return rc;
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	memcpy(step, id, 32);
	*slen = 32;
	return 0;
}
