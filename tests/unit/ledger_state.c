/* ledger_state.c - tests of the ledger state machine (protocols/ledger/
 * state.c) over the fake env's kv: genesis balances and their checks, a
 * transfer and an opaque transaction against known ledger hashes, the
 * nonce rules (replay, gaps, a rejected transfer consumes nothing),
 * insufficient funds, recipient overflow, the stateless rejections,
 * determinism of two ledgers fed the same sequence, restart over the same
 * kv (no second genesis; changed allocations refused), damaged records and
 * a failing kv. */
#include <stdlib.h>
#include <string.h>

#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"

/* Secret keys of BIP340 vectors 0, 1, 2 and their public keys. */
static const char *const sk_hex[3] = {
	"0000000000000000000000000000000000000000000000000000000000000003",
	"B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF",
	"C90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B14E5C9",
};
static const char *const pk_hex[3] = {
	"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9",
	"dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659",
	"dd308afec5777e13121fa72b9cc1b7cc0139715309b086c960e18fd969774eb8",
};
static uint8_t sk[3][32], pk[3][32];

static void hex(uint8_t *out, size_t len, const char *h)
{
	if (weft_hex_decode(out, len, h, strlen(h)) != 0)
		abort();
}

/* Params {"balances": {hex: amount, ...}} with n entries; an amount of
 * UINT64_MAX is written as its decimal string, as genesis.json would. */
static void params(struct weft_mpw *w, size_t n, const char *const *keys, const uint64_t *amounts)
{
	weft_mpw_init(w);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "other");
	weft_mpw_uint(w, 1);
	weft_mpw_str(w, "balances");
	weft_mpw_map(w, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		weft_mpw_str(w, keys[i]);
		if (amounts[i] == UINT64_MAX)
			weft_mpw_str(w, "18446744073709551615");
		else
			weft_mpw_uint(w, amounts[i]);
	}
}

/* A signed transfer (aux_rand zero: deterministic) in w. */
static void transfer(struct weft_mpw *w, int from, const uint8_t to[32], uint64_t amount, uint64_t nonce)
{
	struct weft_ledger_transfer t = {.amount = amount, .nonce = nonce};
	uint8_t aux[32] = {0};

	memcpy(t.to, to, 32);
	if (weft_ledger_transfer_sign(&t, sk[from], aux) != 0)
		abort();
	weft_mpw_reset(w);
	weft_ledger_transfer_encode(&t, w);
}

/* Executes tx; the outcome, or -1 when apply failed. */
static int apply(struct weft_ledger *l, const uint8_t *tx, size_t len)
{
	uint8_t digest[32];
	enum weft_ledger_outcome o;

	weft_hash(digest, tx, len);
	if (weft_ledger_apply(l, tx, len, digest, &o) != 0 || weft_ledger_end_batch(l) != 0)
		return -1;
	return (int)o;
}

static int apply_w(struct weft_ledger *l, const struct weft_mpw *w)
{
	return apply(l, w->buf, w->len);
}

static bool account_is(struct weft_ledger *l, int who, uint64_t balance, uint64_t nonce)
{
	uint64_t b, n;
	int rc = weft_ledger_account(l, pk[who], &b, &n);
	if (rc < 0)
		return false;
	if (b != balance || n != nonce)
		diag("account %d: balance %llu nonce %llu, want %llu %llu", who, (unsigned long long)b,
		     (unsigned long long)n, (unsigned long long)balance, (unsigned long long)nonce);
	return b == balance && n == nonce;
}

static bool hash_is(const struct weft_ledger *l, const char *h)
{
	uint8_t want[32];
	hex(want, 32, h);
	return memcmp(l->hash, want, 32) == 0;
}

#define GENESIS_HASH "d5e605c9e494edf136e0b9c86a9f9d610c1e791439a29a48dc119b4f4cc8830a"
#define EMPTY_GENESIS_HASH "c40035ee93ae5afa5951ef7dbd6a21af3c81d18f1b53e7659e73a5fd88775612"
/* The first transfer of test_flow: key 0 -> key 1, 300, nonce 0. */
#define TX1_HEX                                                                                              \
	"97ad776566742e7472616e7366657201c420f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9" \
	"c420dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659cd012c00c44094be7b01203a8d913a6" \
	"92aa04fccdb19f28dc12f8b7f7201b21cec4bc90c06672fae7d4f23f1781ecf7dbfff3bf35e07a2248b83be76db125d3e613" \
	"0c5a6b27a"
#define HASH_AFTER_TX1 "7b6cc2cac6dbe89119869ca0a6b446e350d809b7171b0d45a0e93db9a2719550"
#define HASH_AFTER_HELLO "03062e57f8cb027569fa2bb708533e36fc533bf9bf495cf0096cf7ba60b36ec8"

static void test_flow(void)
{
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p, w, x;
	uint64_t b, n;

	fake_env_init(&fe, 0, 1);
	params(&p, 2, (const char *const[]){pk_hex[0], pk_hex[1]}, (const uint64_t[]){1000, 50});
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), 0, "init with two genesis balances");
	ok(l.height == 0 && hash_is(&l, GENESIS_HASH), "height 0, hash = the genesis hash (known answer)");
	ok(account_is(&l, 0, 1000, 0) && account_is(&l, 1, 50, 0), "genesis balances, nonces 0");
	b = n = 9;
	ok(weft_ledger_account(&l, pk[2], &b, &n) == WEFT_NOTFOUND && b == 0 && n == 0,
	   "an account never funded: NOTFOUND, 0, 0");

	weft_mpw_init(&w);
	weft_mpw_init(&x);
	transfer(&w, 0, pk[1], 300, 0);
	uint8_t tx1[sizeof(TX1_HEX) / 2];
	hex(tx1, sizeof(tx1), TX1_HEX);
	ok(w.len == sizeof(tx1) && memcmp(w.buf, tx1, w.len) == 0, "the transfer's bytes (known answer)");
	is_int(apply_w(&l, &w), WEFT_LEDGER_APPLIED, "transfer 300 from 0 to 1: applied");
	ok(account_is(&l, 0, 700, 1) && account_is(&l, 1, 350, 0), "balances 700 / 350, sender nonce 1");
	ok(l.height == 1 && hash_is(&l, HASH_AFTER_TX1), "height 1, ledger hash (known answer)");

	is_int(apply(&l, (const uint8_t *)"hello", 5), WEFT_LEDGER_OPAQUE, "opaque data: opaque");
	ok(l.height == 2 && hash_is(&l, HASH_AFTER_HELLO), "opaque data counts: height 2, hash (known answer)");

	is_int(apply_w(&l, &w), WEFT_LEDGER_BAD_NONCE, "the same transfer again: bad_nonce (replay)");
	transfer(&x, 0, pk[1], 1, 2);
	is_int(apply_w(&l, &x), WEFT_LEDGER_BAD_NONCE, "nonce 2 when 1 is next: bad_nonce");
	ok(account_is(&l, 0, 700, 1) && account_is(&l, 1, 350, 0) && l.height == 4,
	   "rejections change no account; height still counts them");

	/* Insufficient funds consumes nothing: the same bytes execute once
	 * the sender is funded. */
	struct weft_mpw big;
	weft_mpw_init(&big);
	transfer(&big, 1, pk[0], 400, 0);
	is_int(apply_w(&l, &big), WEFT_LEDGER_INSUFFICIENT_FUNDS, "400 from a balance of 350: insufficient_funds");
	ok(account_is(&l, 1, 350, 0), "the sender's nonce is not consumed");
	transfer(&x, 0, pk[1], 100, 1);
	is_int(apply_w(&l, &x), WEFT_LEDGER_APPLIED, "fund the sender with 100");
	is_int(apply_w(&l, &big), WEFT_LEDGER_APPLIED, "the same 400 transfer now applies");
	ok(account_is(&l, 0, 1000, 2) && account_is(&l, 1, 50, 1), "balances 1000 / 50, nonces 2 / 1");

	/* Spending everything keeps the account (its nonce). */
	transfer(&x, 1, pk[2], 50, 1);
	is_int(apply_w(&l, &x), WEFT_LEDGER_APPLIED, "1 sends its whole balance to a new account 2");
	ok(account_is(&l, 1, 0, 2) && account_is(&l, 2, 50, 0), "1 keeps balance 0 and nonce 2; 2 is created");
	transfer(&x, 1, pk[2], 1, 2);
	is_int(apply_w(&l, &x), WEFT_LEDGER_INSUFFICIENT_FUNDS, "an empty account cannot send");

	/* A sender that never held funds. */
	struct fake_env fe2;
	struct weft_ledger l2;
	fake_env_init(&fe2, 0, 1);
	is_int(weft_ledger_init(&l2, &fe2.env, NULL, 0), 0, "init without params");
	ok(l2.height == 0 && hash_is(&l2, EMPTY_GENESIS_HASH), "empty genesis hash (known answer)");
	transfer(&x, 2, pk[0], 1, 0);
	is_int(apply_w(&l2, &x), WEFT_LEDGER_INSUFFICIENT_FUNDS, "an unknown sender: insufficient_funds");
	is_int(weft_ledger_account(&l2, pk[2], &b, &n), WEFT_NOTFOUND, "and no account is created");
	weft_ledger_destroy(&l2);
	fake_env_free(&fe2);

	/* Stateless rejections, through execution. */
	uint64_t h0 = l.height;
	uint8_t hash0[32];
	memcpy(hash0, l.hash, 32);
	transfer(&x, 0, pk[1], 0, 2);
	is_int(apply_w(&l, &x), WEFT_LEDGER_ZERO_AMOUNT, "amount 0: zero_amount");
	transfer(&x, 0, pk[0], 5, 2);
	is_int(apply_w(&l, &x), WEFT_LEDGER_SELF_TRANSFER, "to itself: self_transfer");
	uint8_t off[32] = {0};
	off[31] = 5;
	transfer(&x, 0, off, 5, 2);
	is_int(apply_w(&l, &x), WEFT_LEDGER_BAD_RECIPIENT, "to a non-key: bad_recipient");
	transfer(&x, 0, pk[1], 5, 2);
	x.buf[x.len - 1] ^= 1;
	is_int(apply_w(&l, &x), WEFT_LEDGER_BAD_SIGNATURE, "a flipped signature bit: bad_signature");
	is_int(apply(&l, x.buf, x.len - 1), WEFT_LEDGER_MALFORMED, "a truncated transfer: malformed");
	ok(account_is(&l, 0, 1000, 2) && account_is(&l, 1, 0, 2) && l.height == h0 + 5 &&
	   memcmp(l.hash, hash0, 32) != 0, "no account changed; height +5; hash moved");

	/* Restart: a new ledger over the same kv has the same state, and the
	 * genesis allocations are not applied again. */
	uint64_t height = l.height;
	uint8_t hash[32];
	memcpy(hash, l.hash, 32);
	weft_ledger_destroy(&l);
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), 0, "re-init over the same kv");
	ok(l.height == height && memcmp(l.hash, hash, 32) == 0, "same height and hash");
	ok(account_is(&l, 0, 1000, 2) && account_is(&l, 1, 0, 2) && account_is(&l, 2, 50, 0),
	   "same accounts: genesis not re-applied");
	transfer(&x, 0, pk[1], 1, 1);
	is_int(apply_w(&l, &x), WEFT_LEDGER_BAD_NONCE, "nonces survive the restart");

	struct weft_mpw p2;
	params(&p2, 2, (const char *const[]){pk_hex[0], pk_hex[1]}, (const uint64_t[]){1000, 51});
	is_int(weft_ledger_init(&l, &fe.env, p2.buf, p2.len), WEFT_ECONFIG, "re-init with other balances: ECONFIG");
	is_int(weft_ledger_init(&l, &fe.env, NULL, 0), WEFT_ECONFIG, "re-init without balances: ECONFIG");
	weft_mpw_free(&p2);

	weft_mpw_free(&p);
	weft_mpw_free(&w);
	weft_mpw_free(&x);
	weft_mpw_free(&big);
	fake_env_free(&fe);
}

static void test_overflow(void)
{
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p, x;

	fake_env_init(&fe, 0, 1);
	params(&p, 2, (const char *const[]){pk_hex[0], pk_hex[1]}, (const uint64_t[]){UINT64_MAX, 10});
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), 0, "genesis amount 2^64 - 1 as a decimal string");
	ok(account_is(&l, 0, UINT64_MAX, 0), "balance 2^64 - 1");
	weft_mpw_init(&x);
	transfer(&x, 1, pk[0], 1, 0);
	is_int(apply_w(&l, &x), WEFT_LEDGER_BALANCE_OVERFLOW, "1 more to a full account: balance_overflow");
	ok(account_is(&l, 0, UINT64_MAX, 0) && account_is(&l, 1, 10, 0), "nothing moved, no nonce consumed");
	transfer(&x, 0, pk[1], UINT64_MAX - 10, 0);
	is_int(apply_w(&l, &x), WEFT_LEDGER_APPLIED, "the full account sends 2^64 - 11");
	ok(account_is(&l, 0, 10, 1) && account_is(&l, 1, UINT64_MAX, 0), "balances 10 / 2^64 - 1");
	transfer(&x, 1, pk[0], UINT64_MAX, 0);
	is_int(apply_w(&l, &x), WEFT_LEDGER_BALANCE_OVERFLOW, "2^64 - 1 onto 10: balance_overflow");
	weft_mpw_free(&x);
	weft_mpw_free(&p);
	fake_env_free(&fe);
}

/* A deterministic generator for the sequence. */
static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int hash_pair(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	weft_hasher_update(arg, k, kl);
	weft_hasher_update(arg, v, vl);
	return 0;
}

/* BLAKE2b over every ledger kv record in key order. */
static void kv_digest(struct fake_env *fe, uint8_t out[32])
{
	struct weft_hasher h;
	weft_hasher_init(&h);
	fe->env.ops->kv_scan(&fe->env, "A", 1, "I", 1, hash_pair, &h);
	weft_hasher_final(&h, out);
}

static void test_determinism(void)
{
	struct fake_env fe[2];
	struct weft_ledger l[2];
	struct weft_mpw p, x;
	uint64_t seed = 12345, nonces[3] = {0, 0, 0};
	int applied = 0, rejected = 0;
	bool same = true;

	/* Allocations in different map orders: the same genesis. */
	params(&p, 3, (const char *const[]){pk_hex[0], pk_hex[1], pk_hex[2]}, (const uint64_t[]){500, 300, 200});
	fake_env_init(&fe[0], 0, 1);
	weft_ledger_init(&l[0], &fe[0].env, p.buf, p.len);
	weft_mpw_free(&p);
	params(&p, 3, (const char *const[]){pk_hex[2], pk_hex[0], pk_hex[1]}, (const uint64_t[]){200, 500, 300});
	fake_env_init(&fe[1], 1, 1);
	weft_ledger_init(&l[1], &fe[1].env, p.buf, p.len);
	ok(memcmp(l[0].hash, l[1].hash, 32) == 0, "allocation order does not change the genesis hash");

	weft_mpw_init(&x);
	for (int i = 0; i < 300; i++) {
		int from = (int)(rng(&seed) % 3), to = (int)(rng(&seed) % 3);
		uint64_t amount = rng(&seed) % 250;
		uint64_t nonce = nonces[from] + (rng(&seed) % 8 == 0); /* some gaps */
		if (rng(&seed) % 10 == 0) {
			weft_mpw_reset(&x);
			weft_mpw_uint(&x, (uint64_t)i); /* opaque */
		} else {
			transfer(&x, from, pk[to], amount, nonce);
		}
		int o0 = apply_w(&l[0], &x), o1 = apply_w(&l[1], &x);
		if (o0 != o1)
			same = false;
		if (o0 == WEFT_LEDGER_APPLIED) {
			nonces[from]++;
			applied++;
		} else if (o0 != WEFT_LEDGER_OPAQUE) {
			rejected++;
		}
	}
	ok(same, "both ledgers give the same outcome for each of 300 transactions");
	ok(applied > 50 && rejected > 50, "the sequence mixes outcomes (%d applied, %d rejected)", applied, rejected);
	ok(l[0].height == 300 && l[1].height == 300 && memcmp(l[0].hash, l[1].hash, 32) == 0,
	   "same height and ledger hash");
	uint8_t d0[32], d1[32];
	kv_digest(&fe[0], d0);
	kv_digest(&fe[1], d1);
	is_mem(d0, d1, 32, "same kv records");
	uint64_t total = 0, b, n;
	for (int i = 0; i < 3; i++)
		if (weft_ledger_account(&l[0], pk[i], &b, &n) == 0)
			total += b;
	is_int((long long)total, 1000, "transfers conserve the total supply");
	weft_mpw_free(&x);
	weft_mpw_free(&p);
	fake_env_free(&fe[0]);
	fake_env_free(&fe[1]);
}

static void test_bad_genesis(void)
{
	static const char upper[] = "F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9";
	static const char off_curve[] = "0000000000000000000000000000000000000000000000000000000000000005";
	static const struct {
		const char *key;
		uint64_t amount;
		const char *amount_str; /* instead of amount when not NULL */
		const char *what;
	} cases[] = {
		{"f9308a", 1, NULL, "a short key"},
		{"zz308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9", 1, NULL, "a key that is not hex"},
		{off_curve, 1, NULL, "a key off the curve"},
		{NULL, 0, NULL, "amount 0"},
		{NULL, 0, "", "an empty amount string"},
		{NULL, 0, "0100", "an amount with a leading zero"},
		{NULL, 0, "18446744073709551616", "amount 2^64"},
		{NULL, 0, "12a", "an amount that is not decimal"},
		{NULL, 0, "-5", "a negative amount string"},
	};
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p;
	const void *v;
	size_t vl;

	fake_env_init(&fe, 0, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		weft_mpw_init(&p);
		weft_mpw_map(&p, 1);
		weft_mpw_str(&p, "balances");
		weft_mpw_map(&p, 2);
		weft_mpw_str(&p, pk_hex[1]);
		weft_mpw_uint(&p, 5);
		weft_mpw_str(&p, cases[i].key ? cases[i].key : pk_hex[0]);
		if (cases[i].amount_str)
			weft_mpw_str(&p, cases[i].amount_str);
		else
			weft_mpw_uint(&p, cases[i].amount);
		is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), WEFT_EINVAL, "genesis with %s: EINVAL",
		       cases[i].what);
		weft_mpw_free(&p);
	}

	params(&p, 2, (const char *const[]){pk_hex[0], upper}, (const uint64_t[]){1, 2});
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), WEFT_EINVAL, "one account twice (hex case differs): EINVAL");
	weft_mpw_free(&p);

	weft_mpw_init(&p);
	weft_mpw_map(&p, 1);
	weft_mpw_str(&p, "balances");
	weft_mpw_array(&p, 0);
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), WEFT_EINVAL, "balances that are not a map: EINVAL");
	weft_mpw_reset(&p);
	weft_mpw_map(&p, 1);
	weft_mpw_str(&p, "balances");
	weft_mpw_int(&p, -1);
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), WEFT_EINVAL, "balances = -1: EINVAL");
	weft_mpw_reset(&p);
	weft_mpw_map(&p, 1);
	weft_mpw_str(&p, "balances");
	weft_mpw_map(&p, 3); /* claims three pairs, holds none */
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), WEFT_EINVAL, "a truncated balances map: EINVAL");
	weft_mpw_free(&p);
	is_int(fe.env.ops->kv_get(&fe.env, "H", 1, &v, &vl), WEFT_NOTFOUND, "failed inits wrote no ledger");

	/* Upper-case keys are fine on their own. */
	params(&p, 1, (const char *const[]){upper}, (const uint64_t[]){7});
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), 0, "an upper-case hex key");
	ok(account_is(&l, 0, 7, 0), "funds the same account");
	weft_mpw_free(&p);
	fake_env_free(&fe);
}

/* A kv whose puts fail. */
static int failing_put(struct weft_env *env, const void *k, size_t kl, const void *v, size_t vl)
{
	return WEFT_EMAPFULL;
}

static void test_damage(void)
{
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p, x;
	struct weft_env_wrap wrap;
	enum weft_ledger_outcome o;
	uint8_t digest[32] = {0}, hash[32];

	fake_env_init(&fe, 0, 1);
	params(&p, 1, (const char *const[]){pk_hex[0]}, (const uint64_t[]){100});
	weft_ledger_init(&l, &fe.env, p.buf, p.len);
	weft_mpw_init(&x);
	transfer(&x, 0, pk[1], 10, 0);

	/* A kv that cannot be written: apply fails, l is unchanged. */
	weft_env_wrap_init(&wrap, &fe.env);
	wrap.ops.kv_put = failing_put;
	l.env = &wrap.env;
	memcpy(hash, l.hash, 32);
	is_int(weft_ledger_apply(&l, x.buf, x.len, digest, &o), WEFT_EMAPFULL, "a failing kv put: the error");
	ok(l.height == 0 && memcmp(l.hash, hash, 32) == 0, "height and hash unchanged");
	ok(account_is(&l, 0, 100, 0), "accounts unchanged");
	/* Opaque data writes nothing until the batch ends: the head write fails. */
	ok(weft_ledger_apply(&l, (const uint8_t *)"x", 1, digest, &o) == 0 && l.height == 1,
	   "opaque data: applied in memory");
	is_int(weft_ledger_end_batch(&l), WEFT_EMAPFULL, "the head record at the batch's end: the kv's error");
	l.env = &fe.env;
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), 0, "the ledger reloads from kv");
	ok(l.height == 0 && memcmp(l.hash, hash, 32) == 0, "at the head it last stored");

	/* A damaged account record. */
	uint8_t key[33] = {'A'};
	memcpy(key + 1, pk[0], 32);
	fe.env.ops->kv_put(&fe.env, key, sizeof(key), "short", 5);
	is_int(weft_ledger_apply(&l, x.buf, x.len, digest, &o), WEFT_ECORRUPT, "a damaged sender record: ECORRUPT");
	is_int(l.height, 0, "height unchanged");

	/* A damaged head record. */
	fe.env.ops->kv_put(&fe.env, "H", 1, "\x01", 1);
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), WEFT_ECORRUPT, "a damaged head record: ECORRUPT");
	weft_mpw_free(&x);
	weft_mpw_free(&p);
	fake_env_free(&fe);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		abort();
	for (int i = 0; i < 3; i++) {
		hex(sk[i], 32, sk_hex[i]);
		hex(pk[i], 32, pk_hex[i]);
	}
	test_flow();
	test_overflow();
	test_determinism();
	test_bad_genesis();
	test_damage();
	return done_testing();
}
