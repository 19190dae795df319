/* ledger_channel.c - tests of the ledger's channel settlement (protocols/
 * ledger/channel.c and its execution in state.c) over the fake env's kv:
 * open and cooperative close of a 3-member channel with conservation of
 * every unit; a unilateral close with a stale root, disputed with a newer
 * one within the challenge period and settled after it; and each refusal
 * with the state untouched: a replayed open,
 * a signature for another chain, a member short of funds, a missing or
 * forged signature, a close that does not add up, a close of an unknown
 * or closed channel, repeated and invalid members, malformed and
 * non-canonical encodings; hash locks in a posted root: claimed with the
 * preimage before their expiry (paid to the payee), left to expire
 * (back to the payer), a claim carried over a dispute, and the claims
 * refused (unknown preimage, after the expiry, on an open channel). */
#include <stdlib.h>
#include <string.h>

#include "../lib/fakeenv.h"
#include "../lib/ledgertest.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"

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

/* {"chain_id": chain, "balances": {pk0: 1000, pk1: 500, pk2: 100}} */
static void params(struct weft_mpw *w, const char *chain)
{
	static const uint64_t amounts[3] = {1000, 500, 100};
	weft_mpw_init(w);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "chain_id");
	weft_mpw_str(w, chain);
	weft_mpw_str(w, "balances");
	weft_mpw_map(w, 3);
	for (int i = 0; i < 3; i++) {
		weft_mpw_str(w, pk_hex[i]);
		weft_mpw_uint(w, amounts[i]);
	}
}

/* A 3-member open (deposits d[i]) signed by every member for chain. */
static void make_open(struct weft_ledger_channel_open *o, const uint8_t chain[32], const uint64_t d[3], uint8_t nonce)
{
	uint8_t msg[32], aux[32] = {0};
	memset(o, 0, sizeof(*o));
	memset(o->nonce, nonce, sizeof(o->nonce));
	o->n = 3;
	for (int i = 0; i < 3; i++) {
		memcpy(o->member[i], pk[i], 32);
		o->deposit[i] = d[i];
	}
	weft_ledger_channel_open_sighash(chain, o, msg);
	for (int i = 0; i < 3; i++)
		if (weft_ledger_schnorr_sign(sk[i], msg, aux, o->sig[i]) != 0)
			abort();
}

static void make_close(struct weft_ledger_channel_close *c, const uint8_t chain[32], const uint8_t id[32],
		       const uint64_t b[3])
{
	uint8_t msg[32], aux[32] = {0};
	memset(c, 0, sizeof(*c));
	memcpy(c->id, id, 32);
	c->n = 3;
	for (int i = 0; i < 3; i++)
		c->balance[i] = b[i];
	weft_ledger_channel_close_sighash(chain, c, msg);
	for (int i = 0; i < 3; i++)
		if (weft_ledger_schnorr_sign(sk[i], msg, aux, c->sig[i]) != 0)
			abort();
}

static void enc_open(struct weft_mpw *w, const struct weft_ledger_channel_open *o)
{
	weft_mpw_reset(w);
	weft_ledger_channel_open_encode(o, w);
}

static void enc_close(struct weft_mpw *w, const struct weft_ledger_channel_close *c)
{
	weft_mpw_reset(w);
	weft_ledger_channel_close_encode(c, w);
}

static void test_open_close(void)
{
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p, w;
	uint8_t chain[32], other[32], id[32];
	fake_env_init(&fe, 0, 1);
	params(&p, "weft-test");
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), 0, "init with chain_id and three balances");
	weft_ledger_chain("weft-test", 9, chain);
	weft_ledger_chain("another", 7, other);
	ok(memcmp(l.chain, chain, 32) == 0, "the ledger's chain is the hash of params.chain_id");
	weft_mpw_init(&w);

	static const uint64_t dep[3] = {300, 200, 50};
	struct weft_ledger_channel_open o;
	make_open(&o, chain, dep, 1);
	weft_ledger_channel_id(chain, &o, id);

	/* Refused first, with nothing moved: */
	struct weft_ledger_channel_open bad = o;
	make_open(&bad, other, dep, 1);
	enc_open(&w, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_BAD_SIGNATURE, "an open signed for another chain: bad_signature");
	bad = o;
	bad.sig[2][5] ^= 1;
	enc_open(&w, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_BAD_SIGNATURE, "one member's signature forged: bad_signature");
	static const uint64_t too_much[3] = {300, 200, 101};
	make_open(&bad, chain, too_much, 1);
	enc_open(&w, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_INSUFFICIENT_FUNDS, "a member short of its deposit: insufficient_funds");
	ok(lt_balance(&l, pk[0]) == 1000 && lt_balance(&l, pk[1]) == 500 && lt_balance(&l, pk[2]) == 100, "... nothing moved");
	bad = o;
	memcpy(bad.member[2], pk[0], 32);
	enc_open(&w, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_BAD_MEMBERS, "a member twice: bad_members");
	static const uint64_t zero[3] = {300, 0, 50};
	make_open(&bad, chain, zero, 1);
	enc_open(&w, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_ZERO_AMOUNT, "a zero deposit: zero_amount");

	enc_open(&w, &o);
	enum weft_ledger_outcome why;
	is_int(weft_ledger_precheck(w.buf, w.len, &why), 0, "the open passes the mempool's checks");
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "open 300 / 200 / 50: applied");
	ok(lt_balance(&l, pk[0]) == 700 && lt_balance(&l, pk[1]) == 300 && lt_balance(&l, pk[2]) == 50, "deposits left the accounts");
	struct weft_ledger_channel_state st;
	ok(weft_ledger_channel(&l, id, &st) == 0 && st.status == WEFT_LEDGER_CH_OPEN && st.n == 3 && st.total == 550 &&
		   memcmp(st.member[1], pk[1], 32) == 0,
	   "the channel record: open, 3 members, 550 locked");
	is_int(lt_apply(&l, &w), WEFT_LEDGER_CHANNEL_EXISTS, "the same open again (a replay): channel_exists");
	ok(lt_balance(&l, pk[0]) == 700, "... nothing moved");

	/* Closes. */
	struct weft_ledger_channel_close c;
	static const uint64_t unbalanced[3] = {100, 100, 100};
	make_close(&c, chain, id, unbalanced);
	enc_close(&w, &c);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CONSERVED, "a close paying 300 of 550: not_conserved");
	static const uint64_t more[3] = {400, 100, 51};
	make_close(&c, chain, id, more);
	enc_close(&w, &c);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CONSERVED, "a close paying 551 of 550: not_conserved");
	static const uint64_t final[3] = {100, 400, 50};
	make_close(&c, other, id, final);
	enc_close(&w, &c);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_BAD_SIGNATURE, "a close signed for another chain: bad_signature");
	make_close(&c, chain, id, final);
	c.sig[1][0] ^= 1;
	enc_close(&w, &c);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_BAD_SIGNATURE, "a close with one signature forged: bad_signature");
	uint8_t unknown[32];
	memset(unknown, 7, 32);
	make_close(&c, chain, unknown, final);
	enc_close(&w, &c);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_CHANNEL_UNKNOWN, "a close of a channel never opened: channel_unknown");
	ok(lt_balance(&l, pk[0]) == 700 && lt_balance(&l, pk[1]) == 300 && lt_balance(&l, pk[2]) == 50, "... nothing moved by any of them");

	make_close(&c, chain, id, final);
	enc_close(&w, &c);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "the cooperative close 100 / 400 / 50: applied");
	ok(lt_balance(&l, pk[0]) == 800 && lt_balance(&l, pk[1]) == 700 && lt_balance(&l, pk[2]) == 100, "balances paid out");
	ok(lt_balance(&l, pk[0]) + lt_balance(&l, pk[1]) + lt_balance(&l, pk[2]) == 1600, "every unit conserved (1600 before and after)");
	ok(weft_ledger_channel(&l, id, &st) == 0 && st.status == WEFT_LEDGER_CH_CLOSED, "the channel is closed");
	is_int(lt_apply(&l, &w), WEFT_LEDGER_CHANNEL_CLOSED, "the same close again: channel_closed");
	enc_open(&w, &o);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_CHANNEL_EXISTS, "the old open again after the close: channel_exists");
	ok(lt_balance(&l, pk[0]) == 800 && lt_balance(&l, pk[1]) == 700 && lt_balance(&l, pk[2]) == 100, "... nothing moved");

	/* A ledger on another chain, fed the same bytes, refuses them. */
	struct fake_env fe2;
	struct weft_ledger l2;
	struct weft_mpw p2;
	fake_env_init(&fe2, 0, 1);
	params(&p2, "another");
	weft_ledger_init(&l2, &fe2.env, p2.buf, p2.len);
	enc_open(&w, &o);
	is_int(lt_apply(&l2, &w), WEFT_LEDGER_BAD_SIGNATURE, "the open replayed on another committee: bad_signature");
	weft_mpw_free(&p2);
	weft_ledger_destroy(&l2);
	fake_env_free(&fe2);

	weft_mpw_free(&w);
	weft_mpw_free(&p);
	weft_ledger_destroy(&l);
	fake_env_free(&fe);
}

/* A root of version v with balances b, signed by every member for chain
 * (by all but member `skip` when skip < 3). */
/* Signs t (version, balances, locks set) for chain, all members but skip. */
static void sign_root(struct weft_ledger_channel_root *t, const uint8_t chain[32], int skip)
{
	uint8_t msg[32], aux[32] = {0};
	memset(t->frontier, (int)t->version, 32);
	weft_ledger_channel_root_sighash(chain, t, msg);
	for (int i = 0; i < 3; i++)
		if (i != skip && weft_ledger_schnorr_sign(sk[i], msg, aux, t->sig[i]) != 0)
			abort();
}

static void make_root(struct weft_ledger_channel_root *t, const uint8_t chain[32], const uint8_t id[32], uint64_t v,
		      const uint64_t b[3], int skip)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->id, id, 32);
	t->version = v;
	t->n = 3;
	for (int i = 0; i < 3; i++)
		t->balance[i] = b[i];
	sign_root(t, chain, skip);
}

static void enc_root(struct weft_mpw *w, const char *tag, const struct weft_ledger_channel_root *t)
{
	weft_mpw_reset(w);
	weft_ledger_channel_root_encode(tag, t, w);
}

static void test_unilateral(void)
{
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p, w;
	uint8_t chain[32], id[32];
	fake_env_init(&fe, 0, 1);
	params(&p, "weft-test");
	/* A challenge period of 20 heights (every transaction, rejected or
	 * opaque ones too, is a height). */
	uint8_t twenty = 20;
	size_t plen;
	uint8_t *withp = weft_params_with(p.buf, p.len, "channel_challenge", &twenty, 1, &plen);
	is_int(weft_ledger_init(&l, &fe.env, withp, plen), 0, "init with channel_challenge 20");
	for (uint8_t bad = 0; bad < 2; bad++) {
		struct fake_env fb;
		struct weft_ledger lb;
		size_t blen;
		uint8_t *badp = weft_params_with(p.buf, p.len, "channel_challenge", &bad, 1, &blen);
		fake_env_init(&fb, 0, 1);
		is_int(weft_ledger_init(&lb, &fb.env, badp, blen), WEFT_EINVAL,
		       "channel_challenge %u refused (no height would accept a dispute)", bad);
		fake_env_free(&fb);
		free(badp);
	}
	weft_ledger_chain("weft-test", 9, chain);
	weft_mpw_init(&w);
	static const uint64_t dep[3] = {300, 200, 50};
	struct weft_ledger_channel_open o;
	make_open(&o, chain, dep, 2);
	weft_ledger_channel_id(chain, &o, id);
	enc_open(&w, &o);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "open 300 / 200 / 50");

	struct weft_ledger_channel_root t;
	static const uint64_t v3[3] = {250, 250, 50}, v7[3] = {50, 450, 50}, bad[3] = {1, 1, 1};
	uint8_t settle_id[32];
	memcpy(settle_id, id, 32);
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CLOSING, "settle of an open channel: not_closing");
	make_root(&t, chain, id, 7, v7, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CLOSING, "dispute of an open channel: not_closing");
	make_root(&t, chain, id, 3, v3, 1);
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_BAD_SIGNATURE, "a root one member did not sign: bad_signature");
	make_root(&t, chain, id, 3, bad, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CONSERVED, "a root paying 3 of 550: not_conserved");

	/* Member 0 posts the stale root of version 3 (it paid more since). */
	make_root(&t, chain, id, 3, v3, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "unilateral close with root 3: applied");
	struct weft_ledger_channel_state st;
	uint64_t posted_at = l.height;
	ok(weft_ledger_channel(&l, id, &st) == 0 && st.status == WEFT_LEDGER_CH_CLOSING && st.version == 3 &&
		   st.deadline == posted_at + 20,
	   "closing with version 3, settling at height %llu", (unsigned long long)posted_at + 20);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_ALREADY_CLOSING, "the commit again: already_closing");
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_TOO_EARLY, "settle within the period: too_early");
	make_root(&t, chain, id, 2, v7, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_STALE_ROOT, "a dispute with an older version: stale_root");
	make_root(&t, chain, id, 3, v7, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_STALE_ROOT, "a dispute with the same version: stale_root");
	/* Member 1 disputes with the newer root 7. */
	make_root(&t, chain, id, 7, v7, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "dispute with root 7: applied");
	ok(weft_ledger_channel(&l, id, &st) == 0 && st.version == 7 && st.balance[1] == 450 &&
		   st.deadline == posted_at + 20,
	   "the posted root is 7 now; the settling height did not move");
	ok(lt_balance(&l, pk[0]) == 700 && lt_balance(&l, pk[1]) == 300 && lt_balance(&l, pk[2]) == 50, "nothing paid while closing");
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_TOO_EARLY, "settle one height before the end: too_early");
	lt_tick(&l, (int)(posted_at + 20 - l.height - 1));
	make_root(&t, chain, id, 9, v3, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_TOO_LATE, "a dispute after the period: too_late");
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "settle after the period: applied");
	ok(lt_balance(&l, pk[0]) == 750 && lt_balance(&l, pk[1]) == 750 && lt_balance(&l, pk[2]) == 100,
	   "root 7 paid out (50 / 450 / 50), not the stale root 3");
	ok(lt_balance(&l, pk[0]) + lt_balance(&l, pk[1]) + lt_balance(&l, pk[2]) == 1600, "every unit conserved");
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CLOSING, "settle again: not_closing");
	make_root(&t, chain, id, 11, v3, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_CHANNEL_CLOSED, "a commit on the settled channel: channel_closed");
	free(withp);
	weft_mpw_free(&w);
	weft_mpw_free(&p);
	weft_ledger_destroy(&l);
	fake_env_free(&fe);
}

static void test_wire(void)
{
	uint8_t chain[32];
	weft_ledger_chain("", 0, chain);
	static const uint64_t dep[3] = {1, 2, 3};
	struct weft_ledger_channel_open o, d;
	struct weft_mpw w;
	weft_mpw_init(&w);
	make_open(&o, chain, dep, 9);
	enc_open(&w, &o);
	ok(weft_ledger_channel_open_decode(w.buf, w.len, &d) == 0 && memcmp(&d, &o, sizeof(o)) == 0,
	   "open: decode(encode) is the same");
	bool all = true;
	for (size_t cut = 0; cut < w.len; cut++) {
		int rc = weft_ledger_channel_open_decode(w.buf, cut, &d);
		all &= rc == WEFT_EDECODE || rc == WEFT_NOTFOUND;
	}
	ok(all, "open: every truncation refused (%zu)", w.len);
	/* A trailing byte, a wider integer encoding. */
	uint8_t *longer = malloc(w.len + 1);
	memcpy(longer, w.buf, w.len);
	longer[w.len] = 0xc0;
	is_int(weft_ledger_channel_open_decode(longer, w.len + 1, &d), WEFT_EDECODE, "open: trailing bytes refused");
	free(longer);
	struct weft_mpw x;
	weft_mpw_init(&x);
	weft_mpw_array(&x, 5);
	weft_mpw_str(&x, WEFT_LEDGER_CHANNEL_OPEN_TAG);
	weft_mpw_uint(&x, WEFT_LEDGER_CHANNEL_VERSION);
	weft_mpw_bin(&x, o.nonce, 16);
	weft_mpw_array(&x, 1); /* one member */
	weft_mpw_array(&x, 2);
	weft_mpw_bin(&x, pk[0], 32);
	weft_mpw_uint(&x, 5);
	weft_mpw_array(&x, 1);
	weft_mpw_bin(&x, o.sig[0], 64);
	is_int(weft_ledger_channel_open_decode(x.buf, x.len, &d), WEFT_EDECODE, "open: one member refused");
	weft_mpw_reset(&x);
	weft_mpw_array(&x, 5);
	weft_mpw_str(&x, WEFT_LEDGER_CHANNEL_OPEN_TAG);
	weft_mpw_uint(&x, WEFT_LEDGER_CHANNEL_VERSION);
	weft_mpw_bin(&x, o.nonce, 16);
	weft_mpw_array(&x, WEFT_LEDGER_CHANNEL_MAX + 1);
	is_int(weft_ledger_channel_open_decode(x.buf, x.len, &d), WEFT_EDECODE, "open: 256 members refused");
	weft_mpw_reset(&x);
	weft_mpw_array(&x, 5);
	weft_mpw_str(&x, WEFT_LEDGER_CHANNEL_OPEN_TAG);
	weft_mpw_uint(&x, 1); /* version 1 roots had no locks */
	is_int(weft_ledger_channel_open_decode(x.buf, x.len, &d), WEFT_EDECODE, "open: another version refused");
	enum weft_ledger_outcome why;
	is_int(weft_ledger_precheck(x.buf, x.len, &why), WEFT_EDECODE, "... and the mempool refuses it as malformed");
	is_int(why, WEFT_LEDGER_MALFORMED, "... (malformed)");

	struct weft_ledger_channel_close c, e;
	uint8_t id[32] = {1};
	static const uint64_t bal[3] = {3, 2, 1};
	make_close(&c, chain, id, bal);
	weft_mpw_reset(&w);
	weft_ledger_channel_close_encode(&c, &w);
	ok(weft_ledger_channel_close_decode(w.buf, w.len, &e) == 0 && memcmp(&e, &c, sizeof(c)) == 0,
	   "close: decode(encode) is the same");
	all = true;
	for (size_t cut = 0; cut < w.len; cut++) {
		int rc = weft_ledger_channel_close_decode(w.buf, cut, &e);
		all &= rc == WEFT_EDECODE || rc == WEFT_NOTFOUND;
	}
	ok(all, "close: every truncation refused (%zu)", w.len);
	weft_mpw_free(&x);
	weft_mpw_free(&w);
}

/* Hash locks: a root of 3 members with two locks of member 0 (40 to
 * member 1 under hash h1, expiring at a height; 10 to member 2 under h2). */
static void test_locks(void)
{
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p, w;
	uint8_t chain[32], id[32], pre1[32], pre2[32], h1[32], h2[32], wrong[32];
	fake_env_init(&fe, 0, 1);
	params(&p, "weft-test");
	uint8_t ten = 10;
	size_t plen;
	uint8_t *withp = weft_params_with(p.buf, p.len, "channel_challenge", &ten, 1, &plen);
	is_int(weft_ledger_init(&l, &fe.env, withp, plen), 0, "locks: init with channel_challenge 10");
	weft_ledger_chain("weft-test", 9, chain);
	weft_mpw_init(&w);
	static const uint64_t dep[3] = {300, 200, 50};
	struct weft_ledger_channel_open o;
	make_open(&o, chain, dep, 4);
	weft_ledger_channel_id(chain, &o, id);
	enc_open(&w, &o);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "locks: open 300 / 200 / 50");
	memset(pre1, 0x11, 32);
	memset(pre2, 0x22, 32);
	memset(wrong, 0x33, 32);
	weft_ledger_lock_hash(pre1, h1);
	weft_ledger_lock_hash(pre2, h2);
	weft_mpw_reset(&w);
	weft_ledger_channel_claim_encode(id, pre1, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CLOSING, "a claim on an open channel: not_closing");

	struct weft_ledger_channel_root t, d;
	memset(&t, 0, sizeof(t));
	memcpy(t.id, id, 32);
	t.version = 4;
	t.n = 3;
	t.balance[0] = 250, t.balance[1] = 200, t.balance[2] = 50; /* 50 of member 0's locked */
	t.nlocks = 2;
	uint64_t expiry = l.height + 30;
	t.lock[0] = (struct weft_ledger_channel_lock){0, 1, 40, {0}, expiry};
	memcpy(t.lock[0].hash, h1, 32);
	t.lock[1] = (struct weft_ledger_channel_lock){0, 2, 10, {0}, expiry};
	memcpy(t.lock[1].hash, h2, 32);
	sign_root(&t, chain, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t);
	ok(weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, w.buf, w.len, &d) == 0 &&
		   memcmp(&d, &t, sizeof(t)) == 0,
	   "a root with locks: decode(encode) is the same");
	bool all = true;
	for (size_t cut = 0; cut < w.len; cut++) {
		int rc = weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, w.buf, cut, &d);
		all &= rc == WEFT_EDECODE || rc == WEFT_NOTFOUND;
	}
	ok(all, "a root with locks: every truncation refused (%zu)", w.len);

	/* Refused roots: a lock to its own payer, an amount of 0, a payee out
	 * of range; locks that do not add up; a lock changed after signing. */
	struct weft_ledger_channel_root bad = t;
	bad.lock[0].payee = 0;
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_MALFORMED, "a lock paying its own payer: malformed");
	bad = t;
	bad.lock[1].amount = 0;
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_MALFORMED, "a lock of 0: malformed");
	bad = t;
	bad.lock[1].payee = 3;
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_MALFORMED, "a lock to member 3 of 3: malformed");
	bad = t;
	bad.lock[0].amount = 41;
	sign_root(&bad, chain, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_NOT_CONSERVED, "locks that make the sum 551 of 550: not_conserved");
	bad = t;
	bad.lock[1].expiry = expiry + 100;
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &bad);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_BAD_SIGNATURE, "a lock's expiry changed after signing: bad_signature");

	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "a unilateral close with two locks: applied");
	struct weft_ledger_channel_state st;
	ok(weft_ledger_channel(&l, id, &st) == 0 && st.nlocks == 2 && !st.claimed[0] && !st.claimed[1] &&
		   memcmp(st.lock[0].hash, h1, 32) == 0 && st.lock[1].expiry == expiry,
	   "the record keeps the posted locks, unclaimed");
	weft_mpw_reset(&w);
	weft_ledger_channel_claim_encode(id, wrong, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_LOCK_UNKNOWN, "a claim with a preimage of no lock: lock_unknown");
	weft_mpw_reset(&w);
	weft_ledger_channel_claim_encode(id, pre1, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "member 1 claims its lock with the preimage: applied");
	is_int(lt_apply(&l, &w), WEFT_LEDGER_LOCK_UNKNOWN, "the same claim again: lock_unknown");
	ok(weft_ledger_channel(&l, id, &st) == 0 && st.claimed[0] && !st.claimed[1], "lock 0 claimed, lock 1 not");

	/* A dispute with a newer root that still holds h1's lock keeps the
	 * claim (the preimage is public); h2's lock is gone (resolved off
	 * the ledger: member 2 was paid). */
	struct weft_ledger_channel_root t2 = t;
	t2.version = 5;
	t2.balance[0] = 250, t2.balance[1] = 200, t2.balance[2] = 60;
	t2.nlocks = 1;
	sign_root(&t2, chain, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t2);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "a dispute with root 5 (one lock left): applied");
	ok(weft_ledger_channel(&l, id, &st) == 0 && st.version == 5 && st.nlocks == 1 && st.claimed[0],
	   "the claim of h1 carried over to root 5");
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	lt_tick(&l, 12);
	ok(l.height + 1 >= st.deadline, "the challenge period is over");
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "settle: applied (the only lock is claimed: no wait for its expiry)");
	ok(lt_balance(&l, pk[0]) == 700 + 250 && lt_balance(&l, pk[1]) == 300 + 240 && lt_balance(&l, pk[2]) == 50 + 60,
	   "member 1 got its claimed lock (240), member 2 its 60");
	ok(lt_balance(&l, pk[0]) + lt_balance(&l, pk[1]) + lt_balance(&l, pk[2]) == 1600, "every unit conserved");

	/* A second channel: a lock nobody claims goes back to its payer after
	 * its expiry, and settlement waits for that expiry. */
	make_open(&o, chain, dep, 5);
	weft_ledger_channel_id(chain, &o, id);
	enc_open(&w, &o);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "a second channel: open");
	memset(&t, 0, sizeof(t));
	memcpy(t.id, id, 32);
	t.version = 1;
	t.n = 3;
	t.balance[0] = 300, t.balance[1] = 100, t.balance[2] = 50;
	t.nlocks = 1;
	expiry = l.height + 25;
	t.lock[0] = (struct weft_ledger_channel_lock){1, 0, 100, {0}, expiry};
	memcpy(t.lock[0].hash, h2, 32);
	sign_root(&t, chain, 3);
	enc_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "commit with member 1's lock of 100 to member 0");
	lt_tick(&l, 12);
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_TOO_EARLY, "settle after the period but before the lock's expiry: too_early");
	lt_tick(&l, (int)(expiry - l.height - 1));
	weft_mpw_reset(&w);
	weft_ledger_channel_claim_encode(id, pre2, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_TOO_LATE, "a claim at the expiry height: too_late");
	uint64_t b0 = lt_balance(&l, pk[0]), b1 = lt_balance(&l, pk[1]);
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_APPLIED, "settle after the expiry: applied");
	ok(lt_balance(&l, pk[0]) == b0 + 300 && lt_balance(&l, pk[1]) == b1 + 200, "the unclaimed lock went back to member 1");
	weft_mpw_reset(&w);
	weft_ledger_channel_claim_encode(id, pre2, &w);
	is_int(lt_apply(&l, &w), WEFT_LEDGER_CHANNEL_CLOSED, "a claim on a settled channel: channel_closed");
	free(withp);
	weft_mpw_free(&w);
	weft_mpw_free(&p);
	weft_ledger_destroy(&l);
	fake_env_free(&fe);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		skip_all("libsodium init failed");
	for (int i = 0; i < 3; i++) {
		hex(sk[i], 32, sk_hex[i]);
		hex(pk[i], 32, pk_hex[i]);
	}
	test_open_close();
	test_unilateral();
	test_wire();
	test_locks();
	return done_testing();
}
