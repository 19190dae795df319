/* state.c - the ledger state machine (weft/ledger.h): genesis allocations
 * from the protocol parameters, execution of the ordered transactions, and
 * the running ledger hash, all kept in the hosting protocol's kv.
 *
 * kv records (the hosting protocol's other keys start with other bytes):
 *   "A" || key (32)  ->  balance (8) || next nonce (8)
 *   "H"              ->  version 1 (1) || height (8) || hash (32) || genesis (32)
 * integers big-endian.  An account record exists once the account has held
 * funds and is never deleted: its nonce is the replay protection.  "H" is
 * written with every executed transaction, in the same callback as the
 * accounts it changed, so kv always holds a state after a whole number of
 * transactions; its presence says the genesis allocations were written.
 *
 * Execution order of the checks (the first failure is the outcome):
 * decoding, the stateless checks of weft_ledger_transfer_check (amount,
 * sender != recipient, recipient key, signature), then the sender's nonce,
 * the sender's balance, the recipient's balance overflow.  Only an applied
 * transfer changes accounts; a rejected one consumes nothing, not even its
 * nonce (docs/ledger.md discusses what that means for re-submission). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <secp256k1.h>

#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"

#include "kinds.h"
#include "weft/util.h"

#define KEY_ACCOUNT 'A'
#define KEY_HEAD 'H'
#define KEY_CHANNEL 'C'
#define HEAD_VERSION 1
#define HEAD_LEN (1 + 8 + 32 + 32)
#define ACCOUNT_LEN 16
#define GENESIS_DOMAIN "weft/ledger/genesis/v1"

/* ---- kv records ---- */

/* 0 with the account, WEFT_NOTFOUND (balance and nonce 0), WEFT_ECORRUPT
 * or a kv error. */
int ledger_account_get(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t *balance,
		       uint64_t *nonce)
{
	uint8_t k[1 + WEFT_LEDGER_KEY_LEN] = {KEY_ACCOUNT};
	const void *val;
	size_t vlen;

	memcpy(k + 1, key, WEFT_LEDGER_KEY_LEN);
	*balance = *nonce = 0;
	int rc = l->env->ops->kv_get(l->env, k, sizeof(k), &val, &vlen);
	if (rc != 0)
		return rc;
	if (vlen != ACCOUNT_LEN) {
		weft_env_log(l->env, WEFT_LOG_ERROR, "ledger.corrupt", "account record of %zu bytes, not %d", vlen,
			     ACCOUNT_LEN);
		return WEFT_ECORRUPT;
	}
	*balance = weft_be64_get(val);
	*nonce = weft_be64_get((const uint8_t *)val + 8);
	return 0;
}

int ledger_account_put(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t balance,
		       uint64_t nonce)
{
	uint8_t k[1 + WEFT_LEDGER_KEY_LEN] = {KEY_ACCOUNT}, v[ACCOUNT_LEN];

	memcpy(k + 1, key, WEFT_LEDGER_KEY_LEN);
	weft_be64_put(v, balance);
	weft_be64_put(v + 8, nonce);
	return l->env->ops->kv_put(l->env, k, sizeof(k), v, sizeof(v));
}

static int head_put(struct weft_ledger *l, uint64_t height, const uint8_t hash[32])
{
	uint8_t k = KEY_HEAD, v[HEAD_LEN];

	v[0] = HEAD_VERSION;
	weft_be64_put(v + 1, height);
	memcpy(v + 9, hash, 32);
	memcpy(v + 41, l->genesis, 32);
	return l->env->ops->kv_put(l->env, &k, 1, v, sizeof(v));
}

/* Loads "H" into l: 0, WEFT_NOTFOUND, WEFT_ECORRUPT or a kv error.  The
 * stored genesis goes to genesis. */
static int head_get(struct weft_ledger *l, uint8_t genesis[32])
{
	uint8_t k = KEY_HEAD;
	const void *val;
	size_t vlen;
	int rc = l->env->ops->kv_get(l->env, &k, 1, &val, &vlen);

	if (rc != 0)
		return rc;
	const uint8_t *v = val;
	if (vlen != HEAD_LEN || v[0] != HEAD_VERSION) {
		weft_env_log(l->env, WEFT_LOG_ERROR, "ledger.corrupt", "head record of %zu bytes, version %u", vlen,
			     vlen ? v[0] : 0u);
		return WEFT_ECORRUPT;
	}
	l->height = weft_be64_get(v + 1);
	memcpy(l->hash, v + 9, 32);
	memcpy(genesis, v + 41, 32);
	return 0;
}

/* ---- genesis allocations ---- */

struct alloc {
	uint8_t key[WEFT_LEDGER_KEY_LEN];
	uint64_t amount;
};

static int alloc_cmp(const void *a, const void *b)
{
	return memcmp(((const struct alloc *)a)->key, ((const struct alloc *)b)->key, WEFT_LEDGER_KEY_LEN);
}

/* An amount: a uint, or a string of decimal digits as weft_parse_u64 reads
 * it (no leading zero, at most 2^64 - 1; genesis.json writes amounts above
 * 2^63 - 1 so).  0 or WEFT_EINVAL; zero is refused too. */
static int read_amount(struct weft_mp_reader *r, uint64_t *out)
{
	const char *s;
	uint32_t len;
	uint64_t v = 0;

	if (weft_mp_peek_type(r) == WEFT_MP_UINT) {
		if (weft_mp_read_uint(r, &v) < 0 || v == 0)
			return WEFT_EINVAL;
	} else if (weft_mp_read_str(r, &s, &len) < 0 || weft_parse_u64n(s, len, &v) < 0 || v == 0) {
		return WEFT_EINVAL;
	}
	*out = v;
	return 0;
}

/* Positions r at the value of params' "balances": 0, WEFT_NOTFOUND (no
 * params, or no such member) or WEFT_EINVAL (params is not a map with
 * string keys). */
static int find_balances(struct weft_mp_reader *r, const uint8_t *params, size_t plen)
{
	static const char name[] = "balances";
	uint32_t pairs, klen;
	const char *k;

	if (params == NULL || plen == 0)
		return WEFT_NOTFOUND;
	weft_mp_reader_init(r, params, plen);
	if (weft_mp_read_map(r, &pairs) < 0)
		return WEFT_EINVAL;
	for (uint32_t i = 0; i < pairs; i++) {
		if (weft_mp_read_str(r, &k, &klen) < 0)
			return WEFT_EINVAL;
		if (klen == sizeof(name) - 1 && memcmp(k, name, klen) == 0)
			return 0;
		if (weft_mp_skip(r) < 0)
			return WEFT_EINVAL;
	}
	return WEFT_NOTFOUND;
}

/* Reads params' "balances" into a malloc'd array sorted by key (*out NULL
 * when there is none).  0 or WEFT_EINVAL (logged). */
static int parse_balances(struct weft_env *env, const uint8_t *params, size_t plen, struct alloc **out, size_t *n)
{
	struct weft_mp_reader r;
	struct alloc *a;
	uint32_t count;
	int rc = find_balances(&r, params, plen);

	*out = NULL;
	*n = 0;
	if (rc == WEFT_NOTFOUND)
		return 0;
	if (rc < 0 || weft_mp_read_map(&r, &count) < 0) {
		weft_env_log(env, WEFT_LOG_ERROR, "ledger.genesis", "params.balances: expected a map");
		return WEFT_EINVAL;
	}
	if (count == 0)
		return 0;
	/* The reader checked count against the bytes present. */
	a = calloc(count, sizeof(*a));
	if (!a)
		abort();
	for (uint32_t i = 0; i < count; i++) {
		const char *hex;
		uint32_t hlen;
		if (weft_mp_read_str(&r, &hex, &hlen) < 0 || weft_hex_decode(a[i].key, WEFT_LEDGER_KEY_LEN, hex, hlen) < 0 ||
		    weft_ledger_pubkey_check(a[i].key) < 0) {
			weft_env_log(env, WEFT_LOG_ERROR, "ledger.genesis",
				     "params.balances: key %u is not an x-only public key in 64 hex digits", i);
			goto bad;
		}
		if (read_amount(&r, &a[i].amount) < 0) {
			weft_env_log(env, WEFT_LOG_ERROR, "ledger.genesis",
				     "params.balances[\"%.*s\"]: expected an amount from 1 to 18446744073709551615",
				     (int)hlen, hex);
			goto bad;
		}
	}
	qsort(a, count, sizeof(*a), alloc_cmp);
	for (uint32_t i = 1; i < count; i++) {
		if (alloc_cmp(&a[i - 1], &a[i]) == 0) {
			char hex[2 * WEFT_LEDGER_KEY_LEN + 1];
			weft_hex_encode(hex, a[i].key, WEFT_LEDGER_KEY_LEN);
			weft_env_log(env, WEFT_LOG_ERROR, "ledger.genesis", "params.balances: account %s given twice",
				     hex);
			goto bad;
		}
	}
	*out = a;
	*n = count;
	return 0;
bad:
	free(a);
	return WEFT_EINVAL;
}

/* BLAKE2b-256 of the domain and the allocations in key order. */
static void genesis_hash(const struct alloc *a, size_t n, uint8_t out[32])
{
	struct weft_hasher h;
	uint8_t amount[8];

	weft_hasher_init(&h);
	weft_hasher_update(&h, GENESIS_DOMAIN, sizeof(GENESIS_DOMAIN) - 1);
	for (size_t i = 0; i < n; i++) {
		weft_be64_put(amount, a[i].amount);
		weft_hasher_update(&h, a[i].key, WEFT_LEDGER_KEY_LEN);
		weft_hasher_update(&h, amount, sizeof(amount));
	}
	weft_hasher_final(&h, out);
}

int weft_ledger_init(struct weft_ledger *l, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct alloc *a;
	size_t n;
	uint8_t stored[32];
	int rc;

	memset(l, 0, sizeof(*l));
	l->env = env;
	/* Recommended before verifying with secp256k1_context_static. */
	secp256k1_selftest();
	rc = parse_balances(env, params, plen, &a, &n);
	if (rc < 0)
		return rc;
	genesis_hash(a, n, l->genesis);
	const char *chain_id = "";
	uint32_t clen = 0;
	if (weft_params_str(params, plen, "chain_id", &chain_id, &clen) == WEFT_EINVAL) {
		free(a);
		return WEFT_EINVAL;
	}
	weft_ledger_chain(chain_id, clen, l->chain);
	l->challenge = WEFT_LEDGER_CHANNEL_CHALLENGE;
	/* Below 2 no height accepts a dispute (tla/ChannelSettle.tla,
	 * ChannelSettleChallenge1): a stale root would always settle. */
	if (weft_params_uint(params, plen, "channel_challenge", &l->challenge) == WEFT_EINVAL || l->challenge < 2) {
		weft_env_log(env, WEFT_LOG_ERROR, "ledger.params", "channel_challenge must be a number of heights >= 2");
		free(a);
		return WEFT_EINVAL;
	}

	rc = head_get(l, stored);
	if (rc == 0 && memcmp(stored, l->genesis, 32) != 0) {
		weft_env_log(env, WEFT_LOG_ERROR, "ledger.genesis",
			     "params.balances differ from the allocations the stored ledger was built from");
		rc = WEFT_ECONFIG;
	} else if (rc == WEFT_NOTFOUND) {
		rc = 0;
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = ledger_account_put(l, a[i].key, a[i].amount, 0);
		memcpy(l->hash, l->genesis, 32);
		if (rc == 0)
			rc = head_put(l, 0, l->hash);
		if (rc == 0)
			weft_env_log(env, WEFT_LOG_INFO, "ledger.genesis", "accounts=%zu", n);
	}
	free(a);
	if (rc < 0) {
		memset(l, 0, sizeof(*l));
		return rc;
	}
	return 0;
}

int weft_ledger_end_batch(struct weft_ledger *l)
{
	if (!l->head_unsaved)
		return 0;
	int rc = head_put(l, l->height, l->hash);
	if (rc < 0)
		return rc;
	l->head_unsaved = false;
	return 0;
}

int weft_ledger_reload(struct weft_ledger *l)
{
	uint8_t genesis[32];
	int rc = head_get(l, genesis);
	if (rc == 0 && memcmp(genesis, l->genesis, 32) != 0) {
		weft_env_log(l->env, WEFT_LOG_ERROR, "ledger.genesis", "a snapshot from another genesis");
		rc = WEFT_ECONFIG;
	}
	return rc;
}

/* ---- execution ---- */

/* The checks that need the state: *o stays APPLIED when the transfer can
 * execute, and the accounts' current values are returned. */
static int check_state(struct weft_ledger *l, const struct weft_ledger_transfer *t, enum weft_ledger_outcome *o,
		       uint64_t *from_balance, uint64_t *from_nonce, uint64_t *to_balance, uint64_t *to_nonce)
{
	int rc = ledger_account_get(l, t->from, from_balance, from_nonce);

	if (rc < 0)
		return rc;
	/* The last nonce, 2^64 - 1, could never be followed: refused. */
	if (t->nonce != *from_nonce || *from_nonce == UINT64_MAX) {
		*o = WEFT_LEDGER_BAD_NONCE;
		return 0;
	}
	if (*from_balance < t->amount) {
		*o = WEFT_LEDGER_INSUFFICIENT_FUNDS;
		return 0;
	}
	rc = ledger_account_get(l, t->to, to_balance, to_nonce);
	if (rc < 0)
		return rc;
	if (*to_balance > UINT64_MAX - t->amount)
		*o = WEFT_LEDGER_BALANCE_OVERFLOW;
	return 0;
}

/* t: the transfer, or NULL for another kind. */
void ledger_log_rejected(struct weft_ledger *l, const uint8_t digest[32], enum weft_ledger_outcome o,
			 const struct weft_ledger_transfer *t, uint64_t expected_nonce)
{
	char hex[17];

	weft_hex_encode(hex, digest, 8);
	if (o == WEFT_LEDGER_BAD_NONCE && t)
		weft_env_log(l->env, WEFT_LOG_INFO, "ledger.rejected", "tx=%s outcome=%s nonce=%llu expected=%llu",
			     hex, weft_ledger_outcome_name(o), (unsigned long long)t->nonce,
			     (unsigned long long)expected_nonce);
	else
		weft_env_log(l->env, WEFT_LOG_INFO, "ledger.rejected", "tx=%s outcome=%s", hex,
			     weft_ledger_outcome_name(o));
}

/* The most a kind's outcome adds to the ledger hash after its code. */
#define STEP_MAX 64

/* ---- transaction kinds ----
 * Every kind of transaction the ledger executes: precheck says whether tx
 * is of the kind (WEFT_NOTFOUND when not) and runs the checks that need no
 * state (mempool admission); execute runs it against the state, writes the
 * changes, and gives the outcome and the bytes the outcome adds to the
 * ledger hash after its code (WEFT_NOTFOUND when tx is not of the kind).
 * Anything no kind claims is opaque data: counted and hashed, nothing else.
 * Transfers are the first kind; channels and storage add theirs here. */
struct ledger_kind {
	const char *name;
	int (*precheck)(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why);
	int (*execute)(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
		       enum weft_ledger_outcome *o, uint8_t *step, size_t *slen);
};

/* A transfer: the hash step is the sender's balance and nonce and the
 * recipient's balance after it (applied only). */
static int transfer_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
			    enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	struct weft_ledger_transfer t;
	uint64_t fb = 0, fn = 0, tb = 0, tn = 0;
	int rc = weft_ledger_transfer_decode(tx, len, &t);

	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	if (rc < 0)
		*o = WEFT_LEDGER_MALFORMED;
	else if (weft_ledger_transfer_check(&t, o) == 0 && (rc = check_state(l, &t, o, &fb, &fn, &tb, &tn)) < 0)
		return rc;
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, &t, fn);
		return 0;
	}
	fb -= t.amount;
	fn += 1;
	tb += t.amount;
	weft_be64_put(step, fb);
	weft_be64_put(step + 8, fn);
	weft_be64_put(step + 16, tb);
	*slen = 24;
	rc = ledger_account_put(l, t.from, fb, fn);
	return rc == 0 ? ledger_account_put(l, t.to, tb, tn) : rc;
}

/* ---- channels (channel.c has the wire and the signature hashes) ----
 * Channel record: "C" id -> status (1 byte: 1 open, 2 closed, 3 closing),
 * count (1 byte), the deposits' total (be64), the members (32 bytes
 * each); when closing, then the posted root's version (be64), the height
 * it settles at (be64), its balances (be64 each), its lock count (be16)
 * and its locks (payer (1), payee (1), be64 amount, hash (32), be64
 * expiry, claimed (1 byte: 0 or 1)). */

#define CHANNEL_HEAD 10
#define LOCK_RECORD 51
_Static_assert(WEFT_LEDGER_CHANNEL_LOCKS_MAX <= 65535, "lock counts are two bytes");

static size_t channel_key(uint8_t k[33], const uint8_t id[32])
{
	k[0] = KEY_CHANNEL;
	memcpy(k + 1, id, 32);
	return 33;
}

static int channel_corrupt(struct weft_ledger *l, size_t vlen)
{
	weft_env_log(l->env, WEFT_LOG_ERROR, "ledger.corrupt", "channel record of %zu bytes", vlen);
	return WEFT_ECORRUPT;
}

/* The closing part of a record: the posted root and its locks. */
static int closing_get(struct weft_ledger_channel_state *st, const uint8_t *v, size_t len)
{
	size_t fixed = 16 + (size_t)st->n * 8 + 2;
	if (len < fixed)
		return WEFT_ECORRUPT;
	st->version = weft_be64_get(v);
	st->deadline = weft_be64_get(v + 8);
	for (uint32_t i = 0; i < st->n; i++)
		st->balance[i] = weft_be64_get(v + 16 + 8 * i);
	st->nlocks = weft_be16_get(v + fixed - 2);
	if (st->nlocks > WEFT_LEDGER_CHANNEL_LOCKS_MAX || len != fixed + (size_t)st->nlocks * LOCK_RECORD)
		return WEFT_ECORRUPT;
	for (uint32_t i = 0; i < st->nlocks; i++) {
		const uint8_t *q = v + fixed + (size_t)i * LOCK_RECORD;
		struct weft_ledger_channel_lock *k = &st->lock[i];
		k->payer = q[0];
		k->payee = q[1];
		k->amount = weft_be64_get(q + 2);
		memcpy(k->hash, q + 10, 32);
		k->expiry = weft_be64_get(q + 42);
		if (k->payer >= st->n || k->payee >= st->n || q[50] > 1)
			return WEFT_ECORRUPT;
		st->claimed[i] = q[50];
	}
	return 0;
}

int weft_ledger_channel(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_channel_state *st)
{
	uint8_t k[33];
	const void *val;
	size_t vlen;
	int rc = l->env->ops->kv_get(l->env, k, channel_key(k, id), &val, &vlen);
	if (rc != 0)
		return rc;
	const uint8_t *v = val;
	/* The member count is one byte: at most WEFT_LEDGER_CHANNEL_MAX. */
	_Static_assert(WEFT_LEDGER_CHANNEL_MAX <= 255, "member counts are one byte");
	memset(st, 0, sizeof(*st));
	if (vlen < CHANNEL_HEAD || v[1] < 2 || v[0] < WEFT_LEDGER_CH_OPEN || v[0] > WEFT_LEDGER_CH_CLOSING)
		return channel_corrupt(l, vlen);
	size_t base = CHANNEL_HEAD + (size_t)v[1] * WEFT_LEDGER_KEY_LEN;
	bool closing = v[0] == WEFT_LEDGER_CH_CLOSING;
	if (vlen < base || (!closing && vlen != base))
		return channel_corrupt(l, vlen);
	st->status = v[0];
	st->n = v[1];
	st->total = weft_be64_get(v + 2);
	memcpy(st->member, v + CHANNEL_HEAD, (size_t)st->n * WEFT_LEDGER_KEY_LEN);
	if (closing && closing_get(st, v + base, vlen - base) != 0)
		return channel_corrupt(l, vlen);
	return 0;
}

static int channel_put(struct weft_ledger *l, const uint8_t id[32], const struct weft_ledger_channel_state *st)
{
	uint8_t v[CHANNEL_HEAD + WEFT_LEDGER_CHANNEL_MAX * (WEFT_LEDGER_KEY_LEN + 8) + 18 +
			 WEFT_LEDGER_CHANNEL_LOCKS_MAX * LOCK_RECORD];
	uint8_t k[33];
	size_t len = CHANNEL_HEAD + (size_t)st->n * WEFT_LEDGER_KEY_LEN;
	v[0] = st->status;
	v[1] = (uint8_t)st->n;
	weft_be64_put(v + 2, st->total);
	memcpy(v + CHANNEL_HEAD, st->member, (size_t)st->n * WEFT_LEDGER_KEY_LEN);
	if (st->status == WEFT_LEDGER_CH_CLOSING) {
		weft_be64_put(v + len, st->version);
		weft_be64_put(v + len + 8, st->deadline);
		for (uint32_t i = 0; i < st->n; i++)
			weft_be64_put(v + len + 16 + 8 * i, st->balance[i]);
		len += 16 + (size_t)st->n * 8;
		weft_be16_put(v + len, (uint16_t)st->nlocks);
		len += 2;
		for (uint32_t i = 0; i < st->nlocks; i++, len += LOCK_RECORD) {
			const struct weft_ledger_channel_lock *q = &st->lock[i];
			v[len] = (uint8_t)q->payer;
			v[len + 1] = (uint8_t)q->payee;
			weft_be64_put(v + len + 2, q->amount);
			memcpy(v + len + 10, q->hash, 32);
			weft_be64_put(v + len + 42, q->expiry);
			v[len + 50] = st->claimed[i];
		}
	}
	return l->env->ops->kv_put(l->env, k, channel_key(k, id), v, len);
}

/* Mempool: the decoding and the member and deposit checks (signatures
 * need the chain: execution checks them). */
static int channel_open_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_channel_open o;
	int rc = weft_ledger_channel_open_decode(tx, len, &o);
	if (rc == WEFT_NOTFOUND) {
		*why = WEFT_LEDGER_OPAQUE;
		return rc;
	}
	if (rc < 0) {
		*why = WEFT_LEDGER_MALFORMED;
		return rc;
	}
	static const uint8_t any_chain[32];
	rc = weft_ledger_channel_open_check(any_chain, &o, why);
	if (rc == WEFT_ECRYPTO) {
		*why = WEFT_LEDGER_APPLIED; /* the signatures are execution's to judge */
		rc = 0;
	}
	return rc;
}

static int decoded(int rc, enum weft_ledger_outcome *why)
{
	*why = rc == WEFT_NOTFOUND ? WEFT_LEDGER_OPAQUE : rc < 0 ? WEFT_LEDGER_MALFORMED : WEFT_LEDGER_APPLIED;
	return rc;
}

static int channel_close_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_channel_close c;
	return decoded(weft_ledger_channel_close_decode(tx, len, &c), why);
}

static int channel_commit_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_channel_root t;
	return decoded(weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, tx, len, &t), why);
}

static int channel_dispute_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	struct weft_ledger_channel_root t;
	return decoded(weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_DISPUTE_TAG, tx, len, &t), why);
}

static int channel_settle_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	uint8_t id[32];
	return decoded(weft_ledger_channel_settle_decode(tx, len, id), why);
}

static int channel_claim_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	uint8_t id[32], preimage[32];
	return decoded(weft_ledger_channel_claim_decode(tx, len, id, preimage), why);
}

/* The channel of id for a transaction about it: 0 with *st, or 0 with
 * *o = CHANNEL_UNKNOWN, or a kv error. */
static int channel_for(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_channel_state *st,
		       enum weft_ledger_outcome *o)
{
	int rc = weft_ledger_channel(l, id, st);
	if (rc == WEFT_NOTFOUND) {
		*o = WEFT_LEDGER_CHANNEL_UNKNOWN;
		return 0;
	}
	return rc;
}

/* Balances b[0..n) and the amounts of locks[0..nlocks) that add up
 * exactly to total: APPLIED, else NOT_CONSERVED. */
static enum weft_ledger_outcome conserved(const uint64_t *b, uint32_t n, const struct weft_ledger_channel_lock *locks,
					  uint32_t nlocks, uint64_t total)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < n + nlocks; i++) {
		uint64_t a = i < n ? b[i] : locks[i - n].amount;
		if (sum > UINT64_MAX - a)
			return WEFT_LEDGER_NOT_CONSERVED;
		sum += a;
	}
	return sum == total ? WEFT_LEDGER_APPLIED : WEFT_LEDGER_NOT_CONSERVED;
}

/* Every member's signature of msg: APPLIED, else BAD_SIGNATURE. */
static enum weft_ledger_outcome all_signed(const struct weft_ledger_channel_state *st, const uint8_t msg[32],
					   const uint8_t (*sig)[WEFT_LEDGER_SIG_LEN])
{
	for (uint32_t i = 0; i < st->n; i++)
		if (weft_ledger_schnorr_verify(st->member[i], msg, sig[i]) != 0)
			return WEFT_LEDGER_BAD_SIGNATURE;
	return WEFT_LEDGER_APPLIED;
}

/* Pays b[i] to member i and closes the channel; *o becomes
 * BALANCE_OVERFLOW (nothing paid) when a member's balance would pass
 * 2^64 - 1. */
static int pay_out(struct weft_ledger *l, const uint8_t id[32], struct weft_ledger_channel_state *st,
		   const uint64_t *b, enum weft_ledger_outcome *o)
{
	uint64_t bal[WEFT_LEDGER_CHANNEL_MAX], nonce[WEFT_LEDGER_CHANNEL_MAX];
	int rc;
	for (uint32_t i = 0; i < st->n; i++) {
		if ((rc = ledger_account_get(l, st->member[i], &bal[i], &nonce[i])) < 0)
			return rc;
		if (bal[i] > UINT64_MAX - b[i]) {
			*o = WEFT_LEDGER_BALANCE_OVERFLOW;
			return 0;
		}
	}
	rc = 0;
	for (uint32_t i = 0; i < st->n && rc == 0; i++)
		rc = ledger_account_put(l, st->member[i], bal[i] + b[i], nonce[i]);
	st->status = WEFT_LEDGER_CH_CLOSED;
	return rc == 0 ? channel_put(l, id, st) : rc;
}

/* An open: every member signed, the id is new, every member holds its
 * deposit; then the deposits leave the accounts (nonces unchanged: the id,
 * kept forever, is what stops a replay).  Step: the id and the total. */
static int channel_open_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
				enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	struct weft_ledger_channel_open op;
	int rc = weft_ledger_channel_open_decode(tx, len, &op);
	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	uint8_t id[32];
	uint64_t bal[WEFT_LEDGER_CHANNEL_MAX], nonce[WEFT_LEDGER_CHANNEL_MAX], total = 0;
	struct weft_ledger_channel_state st;
	if (rc < 0)
		*o = WEFT_LEDGER_MALFORMED;
	else
		weft_ledger_channel_open_check(l->chain, &op, o);
	if (*o == WEFT_LEDGER_APPLIED) {
		weft_ledger_channel_id(l->chain, &op, id);
		rc = weft_ledger_channel(l, id, &st);
		if (rc == 0)
			*o = WEFT_LEDGER_CHANNEL_EXISTS;
		else if (rc != WEFT_NOTFOUND)
			return rc;
	}
	for (uint32_t i = 0; *o == WEFT_LEDGER_APPLIED && i < op.n; i++) {
		if ((rc = ledger_account_get(l, op.member[i], &bal[i], &nonce[i])) < 0)
			return rc;
		if (bal[i] < op.deposit[i])
			*o = WEFT_LEDGER_INSUFFICIENT_FUNDS;
		total += op.deposit[i];
	}
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	rc = 0;
	for (uint32_t i = 0; i < op.n && rc == 0; i++)
		rc = ledger_account_put(l, op.member[i], bal[i] - op.deposit[i], nonce[i]);
	memset(&st, 0, sizeof(st));
	st.status = WEFT_LEDGER_CH_OPEN;
	st.n = op.n;
	st.total = total;
	memcpy(st.member, op.member, sizeof(st.member));
	if (rc == 0)
		rc = channel_put(l, id, &st);
	memcpy(step, id, 32);
	weft_be64_put(step + 32, total);
	*slen = 40;
	return rc;
}

/* A cooperative close: an open (or closing) channel, one balance per
 * member adding up to the deposits, every member's signature; then the
 * balances go to the members' accounts.  Step: the id. */
static int channel_close_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
				 enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	struct weft_ledger_channel_close c;
	struct weft_ledger_channel_state st;
	int rc = weft_ledger_channel_close_decode(tx, len, &c);
	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	if (rc < 0)
		*o = WEFT_LEDGER_MALFORMED;
	else if ((rc = channel_for(l, c.id, &st, o)) < 0)
		return rc;
	if (*o == WEFT_LEDGER_APPLIED && st.status == WEFT_LEDGER_CH_CLOSED)
		*o = WEFT_LEDGER_CHANNEL_CLOSED;
	if (*o == WEFT_LEDGER_APPLIED && c.n != st.n)
		*o = WEFT_LEDGER_MALFORMED;
	if (*o == WEFT_LEDGER_APPLIED)
		*o = conserved(c.balance, c.n, NULL, 0, st.total);
	if (*o == WEFT_LEDGER_APPLIED) {
		uint8_t msg[32];
		weft_ledger_channel_close_sighash(l->chain, &c, msg);
		*o = all_signed(&st, msg, (const uint8_t(*)[WEFT_LEDGER_SIG_LEN])c.sig);
	}
	if (*o == WEFT_LEDGER_APPLIED && (rc = pay_out(l, c.id, &st, c.balance, o)) < 0)
		return rc;
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	memcpy(step, c.id, 32);
	*slen = 32;
	return 0;
}

/* A root posted against the channel: decoded, the channel's, conserved and
 * signed by every member.  *o stays APPLIED when it is all that. */
static int posted_root(struct weft_ledger *l, const char *tag, const uint8_t *tx, size_t len,
		       struct weft_ledger_channel_root *t, struct weft_ledger_channel_state *st,
		       enum weft_ledger_outcome *o)
{
	int rc = weft_ledger_channel_root_decode(tag, tx, len, t);
	if (rc == WEFT_NOTFOUND)
		return rc;
	if (rc < 0) {
		*o = WEFT_LEDGER_MALFORMED;
		return 0;
	}
	if ((rc = channel_for(l, t->id, st, o)) < 0)
		return rc;
	if (*o == WEFT_LEDGER_APPLIED && st->status == WEFT_LEDGER_CH_CLOSED)
		*o = WEFT_LEDGER_CHANNEL_CLOSED;
	if (*o == WEFT_LEDGER_APPLIED && t->n != st->n)
		*o = WEFT_LEDGER_MALFORMED;
	if (*o == WEFT_LEDGER_APPLIED)
		*o = conserved(t->balance, t->n, t->lock, t->nlocks, st->total);
	if (*o == WEFT_LEDGER_APPLIED) {
		uint8_t msg[32];
		weft_ledger_channel_root_sighash(l->chain, t, msg);
		*o = all_signed(st, msg, (const uint8_t(*)[WEFT_LEDGER_SIG_LEN])t->sig);
	}
	return 0;
}

/* The posted root becomes t: a lock of t is claimed when a lock of the
 * same hash was claimed under the root t replaces (the preimage is public). */
static void post(struct weft_ledger_channel_state *st, const struct weft_ledger_channel_root *t)
{
	bool claimed[WEFT_LEDGER_CHANNEL_LOCKS_MAX] = {false};
	for (uint32_t i = 0; i < t->nlocks; i++)
		for (uint32_t j = 0; j < st->nlocks && !claimed[i]; j++)
			claimed[i] = st->claimed[j] && memcmp(st->lock[j].hash, t->lock[i].hash, 32) == 0;
	st->version = t->version;
	memcpy(st->balance, t->balance, sizeof(st->balance));
	st->nlocks = t->nlocks;
	memcpy(st->lock, t->lock, sizeof(st->lock[0]) * t->nlocks);
	memcpy(st->claimed, claimed, sizeof(claimed));
}

/* The step of a posted root: the id, the version and the settling height. */
static void root_step(const uint8_t id[32], const struct weft_ledger_channel_state *st, uint8_t *step, size_t *slen)
{
	memcpy(step, id, 32);
	weft_be64_put(step + 32, st->version);
	weft_be64_put(step + 40, st->deadline);
	*slen = 48;
}

/* A unilateral close: an open channel and an all-signed root; the channel
 * is closing with that root until the challenge period has passed. */
static int channel_commit_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
				  enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	struct weft_ledger_channel_root t;
	struct weft_ledger_channel_state st;
	*slen = 0;
	int rc = posted_root(l, WEFT_LEDGER_CHANNEL_COMMIT_TAG, tx, len, &t, &st, o);
	if (rc != 0)
		return rc;
	if (*o == WEFT_LEDGER_APPLIED && st.status == WEFT_LEDGER_CH_CLOSING)
		*o = WEFT_LEDGER_ALREADY_CLOSING;
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	st.status = WEFT_LEDGER_CH_CLOSING;
	st.version = t.version;
	/* The height this transaction gets is height + 1. */
	st.deadline = l->height + 1 > UINT64_MAX - l->challenge ? UINT64_MAX : l->height + 1 + l->challenge;
	post(&st, &t);
	root_step(t.id, &st, step, slen);
	return channel_put(l, t.id, &st);
}

/* A dispute: a closing channel and an all-signed root of a higher
 * version, which replaces the posted one (the settling height stays). */
static int channel_dispute_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
				   enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	struct weft_ledger_channel_root t;
	struct weft_ledger_channel_state st;
	*slen = 0;
	int rc = posted_root(l, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, tx, len, &t, &st, o);
	if (rc != 0)
		return rc;
	if (*o == WEFT_LEDGER_APPLIED && st.status != WEFT_LEDGER_CH_CLOSING)
		*o = WEFT_LEDGER_NOT_CLOSING;
	if (*o == WEFT_LEDGER_APPLIED && t.version <= st.version)
		*o = WEFT_LEDGER_STALE_ROOT;
	if (*o == WEFT_LEDGER_APPLIED && l->height + 1 >= st.deadline)
		*o = WEFT_LEDGER_TOO_LATE; /* the period is over: the posted root settles */
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	post(&st, &t);
	root_step(t.id, &st, step, slen);
	return channel_put(l, t.id, &st);
}

/* A claim: the preimage of a lock of the posted root, shown before the
 * lock's expiry; every such lock of its hash is then the payee's. */
static int channel_claim_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
				 enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	uint8_t id[32], preimage[32], hash[32];
	struct weft_ledger_channel_state st;
	int rc = weft_ledger_channel_claim_decode(tx, len, id, preimage);
	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	if (rc < 0)
		*o = WEFT_LEDGER_MALFORMED;
	else if ((rc = channel_for(l, id, &st, o)) < 0)
		return rc;
	if (*o == WEFT_LEDGER_APPLIED && st.status != WEFT_LEDGER_CH_CLOSING)
		*o = st.status == WEFT_LEDGER_CH_CLOSED ? WEFT_LEDGER_CHANNEL_CLOSED : WEFT_LEDGER_NOT_CLOSING;
	uint32_t claimed = 0, expired = 0;
	if (*o == WEFT_LEDGER_APPLIED) {
		weft_ledger_lock_hash(preimage, hash);
		for (uint32_t i = 0; i < st.nlocks; i++) {
			if (st.claimed[i] || memcmp(st.lock[i].hash, hash, 32) != 0)
				continue;
			if (l->height + 1 < st.lock[i].expiry) {
				st.claimed[i] = true;
				claimed++;
			} else {
				expired++;
			}
		}
		if (claimed == 0)
			*o = expired ? WEFT_LEDGER_TOO_LATE : WEFT_LEDGER_LOCK_UNKNOWN;
	}
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	memcpy(step, id, 32);
	memcpy(step + 32, hash, 32);
	*slen = 64;
	return channel_put(l, id, &st);
}

/* Settlement: a closing channel whose challenge period has passed, and
 * whose every unclaimed lock has expired, pays the posted root's balances
 * and each lock to its payee (claimed) or back to its payer.  Anyone may
 * submit it. */
static int channel_settle_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
				  enum weft_ledger_outcome *o, uint8_t *step, size_t *slen)
{
	uint8_t id[32];
	struct weft_ledger_channel_state st;
	int rc = weft_ledger_channel_settle_decode(tx, len, id);
	*slen = 0;
	if (rc == WEFT_NOTFOUND)
		return rc;
	if (rc < 0)
		*o = WEFT_LEDGER_MALFORMED;
	else if ((rc = channel_for(l, id, &st, o)) < 0)
		return rc;
	if (*o == WEFT_LEDGER_APPLIED && st.status != WEFT_LEDGER_CH_CLOSING)
		*o = WEFT_LEDGER_NOT_CLOSING;
	if (*o == WEFT_LEDGER_APPLIED && l->height + 1 < st.deadline)
		*o = WEFT_LEDGER_TOO_EARLY;
	uint64_t pay[WEFT_LEDGER_CHANNEL_MAX];
	memcpy(pay, st.balance, sizeof(pay));
	for (uint32_t i = 0; *o == WEFT_LEDGER_APPLIED && i < st.nlocks; i++) {
		const struct weft_ledger_channel_lock *k = &st.lock[i];
		if (!st.claimed[i] && l->height + 1 < k->expiry)
			*o = WEFT_LEDGER_TOO_EARLY; /* its payee may still claim it */
		else
			pay[st.claimed[i] ? k->payee : k->payer] += k->amount; /* conserved: no overflow */
	}
	if (*o == WEFT_LEDGER_APPLIED && (rc = pay_out(l, id, &st, pay, o)) < 0)
		return rc;
	if (*o != WEFT_LEDGER_APPLIED) {
		ledger_log_rejected(l, digest, *o, NULL, 0);
		return 0;
	}
	memcpy(step, id, 32);
	weft_be64_put(step + 32, st.version);
	*slen = 40;
	return 0;
}

static const struct ledger_kind kinds[] = {
	{"transfer", weft_ledger_transfer_precheck, transfer_execute},
	{"channel.open", channel_open_precheck, channel_open_execute},
	{"channel.close", channel_close_precheck, channel_close_execute},
	{"channel.commit", channel_commit_precheck, channel_commit_execute},
	{"channel.dispute", channel_dispute_precheck, channel_dispute_execute},
	{"channel.settle", channel_settle_precheck, channel_settle_execute},
	{"channel.claim", channel_claim_precheck, channel_claim_execute},
	{"asc.open", ledger_asc_open_precheck, ledger_asc_open_execute},
	{"asc.close", ledger_asc_close_precheck, ledger_asc_close_execute},
	{"asc.claim", ledger_asc_claim_precheck, ledger_asc_claim_execute},
	{"asc.refund", ledger_asc_refund_precheck, ledger_asc_refund_execute},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

int weft_ledger_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why)
{
	for (size_t k = 0; k < NKINDS; k++) {
		int rc = kinds[k].precheck(tx, len, why);
		if (rc != WEFT_NOTFOUND)
			return rc;
	}
	*why = WEFT_LEDGER_OPAQUE;
	return WEFT_NOTFOUND;
}

int weft_ledger_apply(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32],
		      enum weft_ledger_outcome *outcome)
{
	enum weft_ledger_outcome o = WEFT_LEDGER_OPAQUE;
	uint8_t step[1 + STEP_MAX], hash[32];
	size_t slen = 0;
	struct weft_hasher h;
	int rc = WEFT_NOTFOUND;

	for (size_t k = 0; k < NKINDS && rc == WEFT_NOTFOUND; k++) {
		o = WEFT_LEDGER_APPLIED;
		rc = kinds[k].execute(l, tx, len, digest, &o, step + 1, &slen);
	}
	if (rc == WEFT_NOTFOUND) {
		o = WEFT_LEDGER_OPAQUE;
		slen = 0;
	} else if (rc < 0) {
		return rc;
	}
	/* The hash chains (previous hash, digest, outcome code, kind's step). */
	step[0] = (uint8_t)o;
	weft_hasher_init(&h);
	weft_hasher_update(&h, l->hash, 32);
	weft_hasher_update(&h, digest, 32);
	weft_hasher_update(&h, step, 1 + slen);
	weft_hasher_final(&h, hash);

	l->height++;
	memcpy(l->hash, hash, 32);
	l->head_unsaved = true;
	*outcome = o;
	weft_env_metric(l->env,
			o == WEFT_LEDGER_APPLIED  ? "ledger.applied"
			: o == WEFT_LEDGER_OPAQUE ? "ledger.opaque"
						  : "ledger.rejected",
			1);
	return 0;
}

int weft_ledger_account(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t *balance,
			uint64_t *next_nonce)
{
	return ledger_account_get(l, key, balance, next_nonce);
}

void weft_ledger_destroy(struct weft_ledger *l)
{
	memset(l, 0, sizeof(*l));
}
