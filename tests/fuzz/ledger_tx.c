/* tests/fuzz/ledger_tx.c - libFuzzer target for the ledger's decoders and
 * its execution (protocols/ledger): what a transaction in a vertex, a
 * transaction submitted over RPC and the genesis allocations reach.
 *
 * The first input byte picks a mode (modulo 3), the rest is its input:
 *   0  one transaction: weft_ledger_transfer_decode and the channel and
 *      service channel decoders (open, close, commit, dispute, settle,
 *      claim; asc open, close, claim, refund), whose accepted forms must
 *      re-encode to exactly the input
 *      (one encoding per transaction), and weft_ledger_precheck, which
 *      must agree with them;
 *   1  protocol parameters (a msgpack map; "balances" is the genesis
 *      allocation): weft_ledger_init on a fresh store, then again on the
 *      store it wrote (a restart), which must succeed;
 *   2  transactions (each: 2-byte big-endian length, bytes) applied in
 *      order to a ledger whose genesis gives keys 1, 2 and 3 (secret keys
 *      0...01, 0...02, 0...03) 1000, 5 and 2^64 - 4: every apply succeeds,
 *      advances the height by one, and its outcome is precheck's verdict
 *      when precheck refuses the transaction.
 * With WEFT_FUZZ_SEEDS=DIR it writes seeds for each mode (valid signed
 * transfers and channel transactions, opaque data, allocations) and
 * exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"

static void key_str(struct weft_mpw *w, unsigned int i)
{
	uint8_t pk[WEFT_LEDGER_KEY_LEN];
	char hex[2 * WEFT_LEDGER_KEY_LEN + 1];
	pf_ledger_key(i, NULL, pk);
	weft_hex_encode(hex, pk, sizeof(pk));
	weft_mpw_str(w, hex);
}

/* {"balances": {key1: 1000, key2: 5, key3: "18446744073709551612"}} */
static struct weft_mpw genesis;

static void make_genesis(void)
{
	weft_mpw_init(&genesis);
	weft_mpw_map(&genesis, 1);
	weft_mpw_str(&genesis, "balances");
	weft_mpw_map(&genesis, 3);
	key_str(&genesis, 1);
	weft_mpw_uint(&genesis, 1000);
	key_str(&genesis, 2);
	weft_mpw_uint(&genesis, 5);
	key_str(&genesis, 3);
	weft_mpw_str(&genesis, "18446744073709551612");
}

static void transfer(struct weft_mpw *w, unsigned int from, unsigned int to, uint64_t amount, uint64_t nonce)
{
	struct weft_ledger_transfer t = {.amount = amount, .nonce = nonce};
	uint8_t sk[WEFT_LEDGER_SECKEY_LEN], aux[32] = {0};
	pf_ledger_key(from, sk, NULL);
	pf_ledger_key(to, NULL, t.to);
	pf_check(weft_ledger_transfer_sign(&t, sk, aux) == 0, "transfer sign");
	weft_ledger_transfer_encode(&t, w);
}

/* Any channel decoder's verdict: 0 (one of them decoded it, and it
 * re-encodes to exactly its bytes), WEFT_EDECODE, or WEFT_NOTFOUND. */
static int channel_decode(const uint8_t *b, size_t len)
{
	struct weft_ledger_channel_open o;
	struct weft_ledger_channel_close c;
	struct weft_ledger_channel_root t;
	struct weft_ledger_asc_open ao;
	struct weft_ledger_asc_final af;
	uint8_t id[32], pre[32];
	struct weft_mpw w;
	int rc;
	weft_mpw_init(&w);
	if ((rc = weft_ledger_channel_open_decode(b, len, &o)) == 0)
		weft_ledger_channel_open_encode(&o, &w);
	else if (rc == WEFT_NOTFOUND && (rc = weft_ledger_channel_close_decode(b, len, &c)) == 0)
		weft_ledger_channel_close_encode(&c, &w);
	else if (rc == WEFT_NOTFOUND &&
		 (rc = weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, b, len, &t)) == 0)
		weft_ledger_channel_root_encode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t, &w);
	else if (rc == WEFT_NOTFOUND &&
		 (rc = weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_DISPUTE_TAG, b, len, &t)) == 0)
		weft_ledger_channel_root_encode(WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t, &w);
	else if (rc == WEFT_NOTFOUND && (rc = weft_ledger_channel_settle_decode(b, len, id)) == 0)
		weft_ledger_channel_settle_encode(id, &w);
	else if (rc == WEFT_NOTFOUND && (rc = weft_ledger_channel_claim_decode(b, len, id, pre)) == 0)
		weft_ledger_channel_claim_encode(id, pre, &w);
	else if (rc == WEFT_NOTFOUND && (rc = weft_ledger_asc_open_decode(b, len, &ao)) == 0)
		weft_ledger_asc_open_encode(&ao, &w);
	else if (rc == WEFT_NOTFOUND && (rc = weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLOSE_TAG, b, len, &af)) == 0)
		weft_ledger_asc_final_encode(WEFT_LEDGER_ASC_CLOSE_TAG, &af, &w);
	else if (rc == WEFT_NOTFOUND && (rc = weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLAIM_TAG, b, len, &af)) == 0)
		weft_ledger_asc_final_encode(WEFT_LEDGER_ASC_CLAIM_TAG, &af, &w);
	else if (rc == WEFT_NOTFOUND && (rc = weft_ledger_asc_refund_decode(b, len, id)) == 0)
		weft_ledger_asc_refund_encode(id, &w);
	if (rc == 0)
		pf_check(w.len == len && memcmp(w.buf, b, len) == 0, "a decoded channel transaction re-encodes");
	weft_mpw_free(&w);
	return rc;
}

/* A 3-member open of keys 1, 2, 3 (deposits 100, 5, 7), signed for the
 * chain of "" (the fuzz genesis names none). */
static void channel_open(struct weft_mpw *w, struct weft_ledger_channel_open *o)
{
	uint8_t chain[32], msg[32], aux[32] = {0}, sk[WEFT_LEDGER_SECKEY_LEN];
	weft_ledger_chain("", 0, chain);
	memset(o, 0, sizeof(*o));
	o->n = 3;
	static const uint64_t dep[3] = {100, 5, 7};
	for (unsigned int i = 0; i < 3; i++) {
		pf_ledger_key(i + 1, NULL, o->member[i]);
		o->deposit[i] = dep[i];
	}
	weft_ledger_channel_open_sighash(chain, o, msg);
	for (unsigned int i = 0; i < 3; i++) {
		pf_ledger_key(i + 1, sk, NULL);
		pf_check(weft_ledger_schnorr_sign(sk, msg, aux, o->sig[i]) == 0, "channel sign");
	}
	weft_ledger_channel_open_encode(o, w);
}

/* A root of version v paying 50 / 55 / 7, signed by keys 1, 2, 3. */
static void channel_root(struct weft_mpw *w, const char *tag, const uint8_t id[32], uint64_t v)
{
	uint8_t chain[32], msg[32], aux[32] = {0}, sk[WEFT_LEDGER_SECKEY_LEN];
	struct weft_ledger_channel_root t = {.version = v, .n = 3, .balance = {50, 55, 7}};
	weft_ledger_chain("", 0, chain);
	memcpy(t.id, id, 32);
	weft_ledger_channel_root_sighash(chain, &t, msg);
	for (unsigned int i = 0; i < 3; i++) {
		pf_ledger_key(i + 1, sk, NULL);
		pf_check(weft_ledger_schnorr_sign(sk, msg, aux, t.sig[i]) == 0, "root sign");
	}
	weft_ledger_channel_root_encode(tag, &t, w);
}

/* ---- mode 0 ---- */

static void mode_decode(const uint8_t *b, size_t len)
{
	struct weft_ledger_transfer t;
	enum weft_ledger_outcome why = WEFT_LEDGER_APPLIED, why2;
	int rc = weft_ledger_transfer_decode(b, len, &t);
	int pc = weft_ledger_precheck(b, len, &why);
	pf_check(rc == 0 || rc == WEFT_NOTFOUND || rc == WEFT_EDECODE, "decode result");
	pf_check(strcmp(weft_ledger_outcome_name(why), "unknown") != 0, "precheck names an outcome");
	if (rc == WEFT_NOTFOUND) {
		/* Not a transfer: a channel transaction, or opaque data. */
		int ch = channel_decode(b, len);
		pf_check(ch == 0 || ch == WEFT_NOTFOUND || ch == WEFT_EDECODE, "channel decode result");
		if (ch == WEFT_NOTFOUND)
			pf_check(pc == WEFT_NOTFOUND && why == WEFT_LEDGER_OPAQUE, "opaque for both");
		else if (ch == WEFT_EDECODE)
			pf_check(pc == WEFT_EDECODE && why == WEFT_LEDGER_MALFORMED, "a malformed channel transaction");
		else
			pf_check(pc == 0 || why != WEFT_LEDGER_APPLIED, "a channel transaction's precheck names why");
		return;
	}
	if (rc == WEFT_EDECODE) {
		pf_check(pc == WEFT_EDECODE && why == WEFT_LEDGER_MALFORMED, "malformed for both");
		return;
	}
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_transfer_encode(&t, &w);
	pf_check(w.len == len && memcmp(w.buf, b, len) == 0, "a decoded transfer re-encodes to its bytes");
	pf_check(len <= WEFT_LEDGER_TRANSFER_MAX_LEN, "at most WEFT_LEDGER_TRANSFER_MAX_LEN bytes");
	weft_mpw_free(&w);
	pf_check(weft_ledger_transfer_check(&t, &why2) == pc && why2 == why, "precheck is decode + check");
	pf_check((pc == 0) == (why == WEFT_LEDGER_APPLIED), "0 exactly when APPLIED");
}

/* ---- mode 1 ---- */

static void mode_init(const uint8_t *b, size_t len)
{
	struct weft_ledger l;
	struct weft_env *env = pf_env(false);
	int rc = weft_ledger_init(&l, env, b, len);
	if (rc != 0) {
		pf_check(rc == WEFT_EINVAL, "a bad allocation is WEFT_EINVAL");
		return;
	}
	uint8_t hash[32];
	memcpy(hash, l.hash, 32);
	pf_check(l.height == 0 && memcmp(l.hash, l.genesis, 32) == 0, "a new ledger is at its genesis");
	weft_ledger_destroy(&l);
	pf_check(weft_ledger_init(&l, env, b, len) == 0, "a restart on the same allocation loads");
	pf_check(l.height == 0 && memcmp(l.hash, hash, 32) == 0, "and finds the same state");
	for (unsigned int i = 1; i <= 3; i++) {
		uint8_t pk[WEFT_LEDGER_KEY_LEN];
		uint64_t bal, nonce;
		pf_ledger_key(i, NULL, pk);
		rc = weft_ledger_account(&l, pk, &bal, &nonce);
		pf_check(rc == 0 || rc == WEFT_NOTFOUND, "account lookup");
		pf_check(rc == WEFT_NOTFOUND || (bal > 0 && nonce == 0), "genesis accounts hold funds, nonce 0");
	}
	weft_ledger_destroy(&l);
}

/* ---- mode 2 ---- */

static void mode_apply(const uint8_t *b, size_t len)
{
	struct weft_ledger l;
	struct weft_env *env = pf_env(false);
	pf_check(weft_ledger_init(&l, env, genesis.buf, genesis.len) == 0, "genesis init");
	size_t off = 0;
	while (off + 2 <= len) {
		size_t tl = (size_t)b[off] << 8 | b[off + 1];
		off += 2;
		if (tl > len - off)
			tl = len - off;
		uint8_t *tx = malloc(tl ? tl : 1), digest[32];
		pf_check(tx != NULL, "malloc");
		memcpy(tx, b + off, tl);
		off += tl;
		weft_hash(digest, tx, tl);
		enum weft_ledger_outcome pre = WEFT_LEDGER_APPLIED, out = WEFT_LEDGER_APPLIED;
		int pc = weft_ledger_precheck(tx, tl, &pre);
		uint64_t height = l.height;
		pf_check(weft_ledger_apply(&l, tx, tl, digest, &out) == 0, "apply succeeds");
		pf_check(l.height == height + 1, "every transaction advances the height");
		pf_check(pc == 0 || out == pre, "execution agrees with precheck's refusal");
		pf_check(out != WEFT_LEDGER_APPLIED || pc == 0, "applied only what precheck passed");
		free(tx);
	}
	pf_check(weft_ledger_end_batch(&l) == 0, "the head is written at the batch's end");
	weft_ledger_destroy(&l);
}

/* ---- seeds ---- */

static void seed(const char *dir, const char *name, uint8_t mode, const struct weft_mpw *w)
{
	struct weft_mpw s;
	weft_mpw_init(&s);
	weft_mpw_raw(&s, &mode, 1);
	weft_mpw_raw(&s, w->buf, w->len);
	pf_write_file(dir, name, s.buf, s.len);
	weft_mpw_free(&s);
}

static void framed(struct weft_mpw *script, const struct weft_mpw *tx)
{
	uint8_t be[2] = {(uint8_t)(tx->len >> 8), (uint8_t)tx->len};
	weft_mpw_raw(script, be, 2);
	weft_mpw_raw(script, tx->buf, tx->len);
}

static void write_seeds(const char *dir)
{
	struct weft_mpw w, script;
	weft_mpw_init(&w);
	weft_mpw_init(&script);

	transfer(&w, 1, 2, 10, 0);
	seed(dir, "decode-transfer", 0, &w);
	weft_mpw_reset(&w);
	transfer(&w, 1, 2, 1ull << 40, 1ull << 33);
	seed(dir, "decode-transfer-big", 0, &w);
	weft_mpw_reset(&w);
	weft_mpw_raw(&w, "opaque bytes", 12);
	seed(dir, "decode-opaque", 0, &w);
	weft_mpw_reset(&w);
	weft_mpw_array(&w, 2);
	weft_mpw_str(&w, WEFT_LEDGER_TRANSFER_TAG);
	weft_mpw_uint(&w, 1);
	seed(dir, "decode-short", 0, &w);

	seed(dir, "init-genesis", 1, &genesis);
	weft_mpw_reset(&w);
	weft_mpw_map(&w, 2);
	weft_mpw_str(&w, "mode");
	weft_mpw_str(&w, "sparse");
	weft_mpw_str(&w, "balances");
	weft_mpw_map(&w, 2);
	key_str(&w, 1);
	weft_mpw_uint(&w, 1);
	key_str(&w, 1);
	weft_mpw_uint(&w, 2);
	seed(dir, "init-twice", 1, &w);

	/* applied, replayed (bad nonce), insufficient, overflow, zero, self, opaque */
	static const struct {
		unsigned int from, to;
		uint64_t amount, nonce;
	} txs[] = {{1, 2, 10, 0}, {1, 2, 10, 0}, {2, 1, 100, 0}, {1, 3, 10, 1}, {2, 1, 0, 0}, {1, 1, 3, 1}, {3, 2, 7, 0}};
	for (size_t i = 0; i < sizeof(txs) / sizeof(txs[0]); i++) {
		weft_mpw_reset(&w);
		transfer(&w, txs[i].from, txs[i].to, txs[i].amount, txs[i].nonce);
		framed(&script, &w);
	}
	weft_mpw_reset(&w);
	weft_mpw_raw(&w, "opaque", 6);
	framed(&script, &w);
	seed(dir, "apply-script", 2, &script);

	/* A channel: open, a unilateral close, a dispute, a premature settle. */
	struct weft_ledger_channel_open o;
	uint8_t chain[32], id[32];
	weft_ledger_chain("", 0, chain);
	weft_mpw_reset(&script);
	weft_mpw_reset(&w);
	channel_open(&w, &o);
	seed(dir, "decode-channel-open", 0, &w);
	framed(&script, &w);
	weft_ledger_channel_id(chain, &o, id);
	weft_mpw_reset(&w);
	channel_root(&w, WEFT_LEDGER_CHANNEL_COMMIT_TAG, id, 1);
	seed(dir, "decode-channel-commit", 0, &w);
	framed(&script, &w);
	weft_mpw_reset(&w);
	channel_root(&w, WEFT_LEDGER_CHANNEL_DISPUTE_TAG, id, 2);
	framed(&script, &w);
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	seed(dir, "decode-channel-settle", 0, &w);
	framed(&script, &w);
	/* a service channel: key 1 buys from key 2, then a refund (too early) */
	struct weft_ledger_asc_open ao = {.deposit = 50, .timeout = 5};
	uint8_t achain[32], msg[32], aux[32] = {0}, csk[WEFT_LEDGER_SECKEY_LEN], aid[32];
	weft_ledger_chain("", 0, achain);
	memset(ao.nonce, 3, sizeof(ao.nonce));
	pf_ledger_key(1, csk, ao.client);
	pf_ledger_key(2, NULL, ao.provider);
	weft_ledger_asc_open_sighash(achain, &ao, msg);
	pf_check(weft_ledger_schnorr_sign(csk, msg, aux, ao.sig) == 0, "asc open sign");
	weft_ledger_asc_id(achain, &ao, aid);
	weft_mpw_reset(&w);
	weft_ledger_asc_open_encode(&ao, &w);
	seed(dir, "decode-asc-open", 0, &w);
	framed(&script, &w);
	weft_mpw_reset(&w);
	weft_ledger_asc_refund_encode(aid, &w);
	seed(dir, "decode-asc-refund", 0, &w);
	framed(&script, &w);
	seed(dir, "apply-channel", 2, &script);
	weft_mpw_free(&w);
	weft_mpw_free(&script);
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "crypto init");
	make_genesis();
	if (getenv("WEFT_FUZZ_SEEDS"))
		write_seeds(getenv("WEFT_FUZZ_SEEDS"));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	size_t len = size - 1;
	uint8_t *b = malloc(len ? len : 1);
	pf_check(b != NULL, "malloc");
	memcpy(b, data + 1, len);
	switch (data[0] % 3) {
	case 0:
		mode_decode(b, len);
		break;
	case 1:
		mode_init(b, len);
		break;
	case 2:
		mode_apply(b, len);
		break;
	}
	free(b);
	return 0;
}
