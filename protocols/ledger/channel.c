/* channel.c - the ledger's channel settlement transactions (weft/ledger.h,
 * docs/ledger.md "Channels"): the wire forms of open, cooperative close,
 * unilateral close (commit), dispute, settle and lock claims, with their bounded,
 * canonical decoders, their tagged signature hashes (which bind the
 * committee's chain) and the stateless checks of an open.
 * Execution against the accounts is in state.c, beside transfers. */
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/ledger.h"

#include "kinds.h"

#define CHAIN_KEY "weft/chain/v1"
#define OPEN_KEY "weft/channel-open/v1"
#define ID_KEY "weft/channel-id/v1"
#define CLOSE_KEY "weft/channel-close/v1"
#define ROOT_KEY "weft/channel-root/v1"
#define LOCK_KEY "weft/channel-lock/v1"

void weft_ledger_chain(const char *chain_id, size_t len, uint8_t chain[32])
{
	crypto_generichash(chain, 32, (const uint8_t *)chain_id, len, (const unsigned char *)CHAIN_KEY,
			   sizeof(CHAIN_KEY) - 1);
}

/* ---- wire ---- */

void weft_ledger_channel_open_encode(const struct weft_ledger_channel_open *o, struct weft_mpw *w)
{
	weft_mpw_array(w, 5);
	weft_mpw_str(w, WEFT_LEDGER_CHANNEL_OPEN_TAG);
	weft_mpw_uint(w, WEFT_LEDGER_CHANNEL_VERSION);
	weft_mpw_bin(w, o->nonce, sizeof(o->nonce));
	weft_mpw_array(w, o->n);
	for (uint32_t i = 0; i < o->n; i++) {
		weft_mpw_array(w, 2);
		weft_mpw_bin(w, o->member[i], WEFT_LEDGER_KEY_LEN);
		weft_mpw_uint(w, o->deposit[i]);
	}
	weft_mpw_array(w, o->n);
	for (uint32_t i = 0; i < o->n; i++)
		weft_mpw_bin(w, o->sig[i], WEFT_LEDGER_SIG_LEN);
}

void weft_ledger_channel_close_encode(const struct weft_ledger_channel_close *c, struct weft_mpw *w)
{
	weft_mpw_array(w, 5);
	weft_mpw_str(w, WEFT_LEDGER_CHANNEL_CLOSE_TAG);
	weft_mpw_uint(w, WEFT_LEDGER_CHANNEL_VERSION);
	weft_mpw_bin(w, c->id, sizeof(c->id));
	weft_mpw_array(w, c->n);
	for (uint32_t i = 0; i < c->n; i++)
		weft_mpw_uint(w, c->balance[i]);
	weft_mpw_array(w, c->n);
	for (uint32_t i = 0; i < c->n; i++)
		weft_mpw_bin(w, c->sig[i], WEFT_LEDGER_SIG_LEN);
}

/* Reads an array header of 2..MAX entries (and n entries when n != 0). */
static int read_count(struct weft_mp_reader *r, uint32_t *count, uint32_t n)
{
	if (weft_mp_read_array(r, count) != 0 || *count < 2 || *count > WEFT_LEDGER_CHANNEL_MAX || (n && *count != n))
		return WEFT_EDECODE;
	return 0;
}

/* The signatures array (exactly n) that ends every all-signed channel
 * transaction, and nothing after it. */
static int read_sigs_end(struct weft_mp_reader *r, uint8_t (*sig)[WEFT_LEDGER_SIG_LEN], uint32_t n)
{
	uint32_t count;
	if (read_count(r, &count, n) != 0)
		return WEFT_EDECODE;
	for (uint32_t i = 0; i < n; i++)
		if (weft_mp_read_bin_fixed(r, sig[i], WEFT_LEDGER_SIG_LEN) != 0)
			return WEFT_EDECODE;
	return weft_mp_remaining(r) == 0 ? 0 : WEFT_EDECODE;
}

int weft_ledger_channel_open_decode(const uint8_t *tx, size_t len, struct weft_ledger_channel_open *o)
{
	struct weft_mp_reader r;
	struct weft_ledger_channel_open d;
	uint32_t n, pair;
	int rc = ledger_kind_open(&r, tx, len, WEFT_LEDGER_CHANNEL_OPEN_TAG, 5, WEFT_LEDGER_CHANNEL_VERSION);
	if (rc != 0)
		return rc;
	memset(&d, 0, sizeof(d));
	if (weft_mp_read_bin_fixed(&r, d.nonce, sizeof(d.nonce)) != 0 || read_count(&r, &n, 0) != 0)
		return WEFT_EDECODE;
	d.n = n;
	for (uint32_t i = 0; i < n; i++)
		if (weft_mp_read_array(&r, &pair) != 0 || pair != 2 ||
		    weft_mp_read_bin_fixed(&r, d.member[i], WEFT_LEDGER_KEY_LEN) != 0 ||
		    weft_mp_read_uint(&r, &d.deposit[i]) != 0)
			return WEFT_EDECODE;
	if (read_sigs_end(&r, d.sig, n) != 0)
		return WEFT_EDECODE;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_channel_open_encode(&d, &w);
	bool canonical = ledger_same_bytes(&w, tx, len);
	weft_mpw_free(&w);
	if (!canonical)
		return WEFT_EDECODE;
	*o = d;
	return 0;
}

int weft_ledger_channel_close_decode(const uint8_t *tx, size_t len, struct weft_ledger_channel_close *c)
{
	struct weft_mp_reader r;
	struct weft_ledger_channel_close d;
	uint32_t n;
	int rc = ledger_kind_open(&r, tx, len, WEFT_LEDGER_CHANNEL_CLOSE_TAG, 5, WEFT_LEDGER_CHANNEL_VERSION);
	if (rc != 0)
		return rc;
	memset(&d, 0, sizeof(d));
	if (weft_mp_read_bin_fixed(&r, d.id, sizeof(d.id)) != 0 || read_count(&r, &n, 0) != 0)
		return WEFT_EDECODE;
	d.n = n;
	for (uint32_t i = 0; i < n; i++)
		if (weft_mp_read_uint(&r, &d.balance[i]) != 0)
			return WEFT_EDECODE;
	if (read_sigs_end(&r, d.sig, n) != 0)
		return WEFT_EDECODE;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_channel_close_encode(&d, &w);
	bool canonical = ledger_same_bytes(&w, tx, len);
	weft_mpw_free(&w);
	if (!canonical)
		return WEFT_EDECODE;
	*c = d;
	return 0;
}

void weft_ledger_channel_root_encode(const char *tag, const struct weft_ledger_channel_root *t, struct weft_mpw *w)
{
	weft_mpw_array(w, 8);
	weft_mpw_str(w, tag);
	weft_mpw_uint(w, WEFT_LEDGER_CHANNEL_VERSION);
	weft_mpw_bin(w, t->id, sizeof(t->id));
	weft_mpw_uint(w, t->version);
	weft_mpw_array(w, t->n);
	for (uint32_t i = 0; i < t->n; i++)
		weft_mpw_uint(w, t->balance[i]);
	weft_ledger_channel_locks_encode(w, t->lock, t->nlocks);
	weft_mpw_bin(w, t->frontier, sizeof(t->frontier));
	weft_mpw_array(w, t->n);
	for (uint32_t i = 0; i < t->n; i++)
		weft_mpw_bin(w, t->sig[i], WEFT_LEDGER_SIG_LEN);
}

void weft_ledger_channel_locks_encode(struct weft_mpw *w, const struct weft_ledger_channel_lock *lock, uint32_t count)
{
	weft_mpw_array(w, count);
	for (uint32_t i = 0; i < count; i++) {
		const struct weft_ledger_channel_lock *k = &lock[i];
		weft_mpw_array(w, 5);
		weft_mpw_uint(w, k->payer);
		weft_mpw_uint(w, k->payee);
		weft_mpw_uint(w, k->amount);
		weft_mpw_bin(w, k->hash, 32);
		weft_mpw_uint(w, k->expiry);
	}
}

int weft_ledger_channel_locks_read(struct weft_mp_reader *r, uint32_t n, struct weft_ledger_channel_lock *lock,
				   uint32_t *count)
{
	uint32_t five;
	if (weft_mp_read_array(r, count) != 0 || *count > WEFT_LEDGER_CHANNEL_LOCKS_MAX)
		return WEFT_EDECODE;
	for (uint32_t i = 0; i < *count; i++) {
		struct weft_ledger_channel_lock *k = &lock[i];
		if (weft_mp_read_array(r, &five) != 0 || five != 5 || weft_mp_read_u32(r, &k->payer) != 0 ||
		    weft_mp_read_u32(r, &k->payee) != 0 || weft_mp_read_uint(r, &k->amount) != 0 ||
		    weft_mp_read_bin_fixed(r, k->hash, 32) != 0 || weft_mp_read_uint(r, &k->expiry) != 0)
			return WEFT_EDECODE;
		if (k->payer >= n || k->payee >= n || k->payer == k->payee || k->amount == 0)
			return WEFT_EDECODE;
	}
	return 0;
}

int weft_ledger_channel_root_decode(const char *tag, const uint8_t *tx, size_t len, struct weft_ledger_channel_root *t)
{
	struct weft_mp_reader r;
	struct weft_ledger_channel_root d;
	uint32_t n;
	int rc = ledger_kind_open(&r, tx, len, tag, 8, WEFT_LEDGER_CHANNEL_VERSION);
	if (rc != 0)
		return rc;
	memset(&d, 0, sizeof(d));
	if (weft_mp_read_bin_fixed(&r, d.id, sizeof(d.id)) != 0 || weft_mp_read_uint(&r, &d.version) != 0 ||
	    read_count(&r, &n, 0) != 0)
		return WEFT_EDECODE;
	d.n = n;
	for (uint32_t i = 0; i < n; i++)
		if (weft_mp_read_uint(&r, &d.balance[i]) != 0)
			return WEFT_EDECODE;
	if (weft_ledger_channel_locks_read(&r, n, d.lock, &d.nlocks) != 0 || weft_mp_read_bin_fixed(&r, d.frontier, sizeof(d.frontier)) != 0 ||
	    read_sigs_end(&r, d.sig, n) != 0)
		return WEFT_EDECODE;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_channel_root_encode(tag, &d, &w);
	bool canonical = ledger_same_bytes(&w, tx, len);
	weft_mpw_free(&w);
	if (!canonical)
		return WEFT_EDECODE;
	*t = d;
	return 0;
}

/* The transactions that name a channel and maybe a preimage: settle
 * [tag, 2, id] and claim [tag, 2, id, preimage]. */
static void id_tx_encode(const char *tag, const uint8_t id[32], const uint8_t *preimage, struct weft_mpw *w)
{
	weft_mpw_array(w, preimage ? 4 : 3);
	weft_mpw_str(w, tag);
	weft_mpw_uint(w, WEFT_LEDGER_CHANNEL_VERSION);
	weft_mpw_bin(w, id, 32);
	if (preimage)
		weft_mpw_bin(w, preimage, 32);
}

static int id_tx_decode(const char *tag, const uint8_t *tx, size_t len, uint8_t id[32], uint8_t *preimage)
{
	struct weft_mp_reader r;
	uint8_t d[32], pre[32];
	int rc = ledger_kind_open(&r, tx, len, tag, preimage ? 4 : 3, WEFT_LEDGER_CHANNEL_VERSION);
	if (rc != 0)
		return rc;
	if (weft_mp_read_bin_fixed(&r, d, sizeof(d)) != 0 ||
	    (preimage && weft_mp_read_bin_fixed(&r, pre, sizeof(pre)) != 0) || weft_mp_remaining(&r) != 0)
		return WEFT_EDECODE;
	struct weft_mpw w;
	weft_mpw_init(&w);
	id_tx_encode(tag, d, preimage ? pre : NULL, &w);
	bool canonical = ledger_same_bytes(&w, tx, len);
	weft_mpw_free(&w);
	if (!canonical)
		return WEFT_EDECODE;
	memcpy(id, d, 32);
	if (preimage)
		memcpy(preimage, pre, 32);
	return 0;
}

void weft_ledger_channel_settle_encode(const uint8_t id[32], struct weft_mpw *w)
{
	id_tx_encode(WEFT_LEDGER_CHANNEL_SETTLE_TAG, id, NULL, w);
}

int weft_ledger_channel_settle_decode(const uint8_t *tx, size_t len, uint8_t id[32])
{
	return id_tx_decode(WEFT_LEDGER_CHANNEL_SETTLE_TAG, tx, len, id, NULL);
}

void weft_ledger_channel_claim_encode(const uint8_t id[32], const uint8_t preimage[32], struct weft_mpw *w)
{
	id_tx_encode(WEFT_LEDGER_CHANNEL_CLAIM_TAG, id, preimage, w);
}

int weft_ledger_channel_claim_decode(const uint8_t *tx, size_t len, uint8_t id[32], uint8_t preimage[32])
{
	return id_tx_decode(WEFT_LEDGER_CHANNEL_CLAIM_TAG, tx, len, id, preimage);
}

void weft_ledger_lock_hash(const uint8_t preimage[32], uint8_t hash[32])
{
	crypto_generichash(hash, 32, preimage, 32, (const unsigned char *)LOCK_KEY, sizeof(LOCK_KEY) - 1);
}

/* ---- signature hashes ---- */

static void open_hash(const char *key, const uint8_t chain[32], const struct weft_ledger_channel_open *o,
		      uint8_t out[32])
{
	crypto_generichash_state st;
	uint8_t count = (uint8_t)o->n, amount[8];
	crypto_generichash_init(&st, (const unsigned char *)key, strlen(key), 32);
	crypto_generichash_update(&st, chain, 32);
	crypto_generichash_update(&st, o->nonce, sizeof(o->nonce));
	crypto_generichash_update(&st, &count, 1);
	for (uint32_t i = 0; i < o->n; i++) {
		weft_be64_put(amount, o->deposit[i]);
		crypto_generichash_update(&st, o->member[i], WEFT_LEDGER_KEY_LEN);
		crypto_generichash_update(&st, amount, sizeof(amount));
	}
	crypto_generichash_final(&st, out, 32);
}

void weft_ledger_channel_open_sighash(const uint8_t chain[32], const struct weft_ledger_channel_open *o,
				      uint8_t msg[32])
{
	open_hash(OPEN_KEY, chain, o, msg);
}

void weft_ledger_channel_id(const uint8_t chain[32], const struct weft_ledger_channel_open *o, uint8_t id[32])
{
	open_hash(ID_KEY, chain, o, id);
}

void weft_ledger_channel_close_sighash(const uint8_t chain[32], const struct weft_ledger_channel_close *c,
				       uint8_t msg[32])
{
	crypto_generichash_state st;
	uint8_t count = (uint8_t)c->n, amount[8];
	crypto_generichash_init(&st, (const unsigned char *)CLOSE_KEY, sizeof(CLOSE_KEY) - 1, 32);
	crypto_generichash_update(&st, chain, 32);
	crypto_generichash_update(&st, c->id, sizeof(c->id));
	crypto_generichash_update(&st, &count, 1);
	for (uint32_t i = 0; i < c->n; i++) {
		weft_be64_put(amount, c->balance[i]);
		crypto_generichash_update(&st, amount, sizeof(amount));
	}
	crypto_generichash_final(&st, msg, 32);
}

void weft_ledger_channel_root_sighash(const uint8_t chain[32], const struct weft_ledger_channel_root *t,
				      uint8_t msg[32])
{
	crypto_generichash_state st;
	uint8_t count = (uint8_t)t->n, amount[8];
	crypto_generichash_init(&st, (const unsigned char *)ROOT_KEY, sizeof(ROOT_KEY) - 1, 32);
	crypto_generichash_update(&st, chain, 32);
	crypto_generichash_update(&st, t->id, sizeof(t->id));
	weft_be64_put(amount, t->version);
	crypto_generichash_update(&st, amount, sizeof(amount));
	crypto_generichash_update(&st, &count, 1);
	for (uint32_t i = 0; i < t->n; i++) {
		weft_be64_put(amount, t->balance[i]);
		crypto_generichash_update(&st, amount, sizeof(amount));
	}
	uint8_t locks[2];
	weft_be16_put(locks, (uint16_t)t->nlocks);
	crypto_generichash_update(&st, locks, sizeof(locks));
	for (uint32_t i = 0; i < t->nlocks; i++) {
		const struct weft_ledger_channel_lock *k = &t->lock[i];
		uint8_t ends[2] = {(uint8_t)k->payer, (uint8_t)k->payee};
		crypto_generichash_update(&st, ends, sizeof(ends));
		weft_be64_put(amount, k->amount);
		crypto_generichash_update(&st, amount, sizeof(amount));
		crypto_generichash_update(&st, k->hash, 32);
		weft_be64_put(amount, k->expiry);
		crypto_generichash_update(&st, amount, sizeof(amount));
	}
	crypto_generichash_update(&st, t->frontier, sizeof(t->frontier));
	crypto_generichash_final(&st, msg, 32);
}

/* ---- stateless checks ---- */

int weft_ledger_channel_open_check(const uint8_t chain[32], const struct weft_ledger_channel_open *o,
				   enum weft_ledger_outcome *why)
{
	uint64_t total = 0;
	*why = WEFT_LEDGER_APPLIED;
	for (uint32_t i = 0; i < o->n && *why == WEFT_LEDGER_APPLIED; i++) {
		if (weft_ledger_pubkey_check(o->member[i]) != 0)
			*why = WEFT_LEDGER_BAD_MEMBERS;
		for (uint32_t j = 0; j < i && *why == WEFT_LEDGER_APPLIED; j++)
			if (memcmp(o->member[i], o->member[j], WEFT_LEDGER_KEY_LEN) == 0)
				*why = WEFT_LEDGER_BAD_MEMBERS;
		if (o->deposit[i] == 0)
			*why = WEFT_LEDGER_ZERO_AMOUNT;
		else if (total > UINT64_MAX - o->deposit[i])
			*why = WEFT_LEDGER_BALANCE_OVERFLOW;
		else
			total += o->deposit[i];
	}
	if (*why != WEFT_LEDGER_APPLIED)
		return WEFT_EINVAL;
	uint8_t msg[32];
	weft_ledger_channel_open_sighash(chain, o, msg);
	for (uint32_t i = 0; i < o->n; i++)
		if (weft_ledger_schnorr_verify(o->member[i], msg, o->sig[i]) != 0)
			return *why = WEFT_LEDGER_BAD_SIGNATURE, WEFT_ECRYPTO;
	return 0;
}
