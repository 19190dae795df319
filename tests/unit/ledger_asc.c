/* ledger_asc.c - tests of the ledger's atomic service channels
 * (protocols/ledger/asc.c) over the fake env's kv, with real BIP340 keys
 * and adaptor signatures (weft/adaptor.h):
 *   open     applied (the deposit leaves the client), and refused with
 *            nothing moved: client = provider, an invalid key, a deposit
 *            of 0, a timeout of 1, a signature for another chain, a client
 *            short of funds, a replay (channel_exists);
 *   claim    A402's round: the provider pre-signs the paid state under T,
 *            the client signs it, the provider adapts with t and claims:
 *            paid out, and t extracted from the claim's signature and the
 *            pre-signature; refused first: a wrong t (bad_secret), the
 *            pre-signature's bytes as a signature, a state signed by the
 *            client only, one that does not add up, and after the expiry
 *            (too_late); then a second claim (channel_closed);
 *   close    a CLOSED state signed by both pays out; an OPEN one is
 *            malformed;
 *   refund   too_early before the expiry, then the whole deposit back;
 *            an unknown channel (channel_unknown);
 *   wire     round trips, every truncation, another version. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../lib/fakeenv.h"
#include "../lib/ledgertest.h"
#include "../tap.h"
#include "weft/adaptor.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"

#define CLIENT 0
#define PROVIDER 1

static const char *const sk_hex[2] = {
	"0000000000000000000000000000000000000000000000000000000000000003",
	"B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF",
};
static uint8_t sk[2][32], pk[2][32], chain[32];

static void hex(uint8_t *out, size_t len, const char *h)
{
	if (weft_hex_decode(out, len, h, strlen(h)) != 0)
		abort();
}

static void make_open(struct weft_ledger_asc_open *o, const uint8_t ch[32], uint64_t deposit, uint64_t timeout,
		      uint8_t nonce)
{
	uint8_t msg[32], aux[32] = {0};
	memset(o, 0, sizeof(*o));
	memset(o->nonce, nonce, sizeof(o->nonce));
	memcpy(o->client, pk[CLIENT], 32);
	memcpy(o->provider, pk[PROVIDER], 32);
	o->deposit = deposit;
	o->timeout = timeout;
	weft_ledger_asc_open_sighash(ch, o, msg);
	if (weft_ledger_schnorr_sign(sk[CLIENT], msg, aux, o->sig) != 0)
		abort();
}

static int open_tx(struct weft_ledger *l, const struct weft_ledger_asc_open *o)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_open_encode(o, &w);
	int rc = lt_apply(l, &w);
	weft_mpw_free(&w);
	return rc;
}

static int final_tx(struct weft_ledger *l, const char *tag, const struct weft_ledger_asc_final *f)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_final_encode(tag, f, &w);
	int rc = lt_apply(l, &w);
	weft_mpw_free(&w);
	return rc;
}

static int refund_tx(struct weft_ledger *l, const uint8_t id[32])
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_refund_encode(id, &w);
	int rc = lt_apply(l, &w);
	weft_mpw_free(&w);
	return rc;
}

static void sign_state(const uint8_t id[32], const struct weft_ledger_asc_state *st, int who, uint8_t sig[64])
{
	uint8_t msg[32], aux[32] = {7};
	weft_ledger_asc_state_sighash(chain, id, st, msg);
	if (weft_ledger_schnorr_sign(sk[who], msg, aux, sig) != 0)
		abort();
}

static void test_ledger(void)
{
	struct fake_env fe;
	struct weft_ledger l;
	struct weft_mpw p;
	fake_env_init(&fe, 0, 1);
	weft_mpw_init(&p);
	weft_mpw_map(&p, 2);
	weft_mpw_str(&p, "chain_id");
	weft_mpw_str(&p, "asc-test");
	weft_mpw_str(&p, "balances");
	weft_mpw_map(&p, 2);
	for (int i = 0; i < 2; i++) {
		char h[65];
		weft_hex_encode(h, pk[i], 32);
		weft_mpw_str(&p, h);
		weft_mpw_uint(&p, i == CLIENT ? 1000 : 50);
	}
	is_int(weft_ledger_init(&l, &fe.env, p.buf, p.len), 0, "init: client 1000, provider 50");
	weft_ledger_chain("asc-test", 8, chain);

	/* ---- open ---- */
	struct weft_ledger_asc_open o, bad;
	uint8_t other[32], id[32];
	weft_ledger_chain("other", 5, other);
	make_open(&bad, chain, 100, 20, 1);
	memcpy(bad.provider, pk[CLIENT], 32);
	is_int(open_tx(&l, &bad), WEFT_LEDGER_BAD_MEMBERS, "open: client = provider: bad_members");
	make_open(&bad, chain, 100, 20, 1);
	memset(bad.provider, 0, 32);
	is_int(open_tx(&l, &bad), WEFT_LEDGER_BAD_MEMBERS, "open: an invalid provider key: bad_members");
	make_open(&bad, chain, 0, 20, 1);
	is_int(open_tx(&l, &bad), WEFT_LEDGER_ZERO_AMOUNT, "open: a deposit of 0: zero_amount");
	make_open(&bad, chain, 100, 1, 1);
	is_int(open_tx(&l, &bad), WEFT_LEDGER_MALFORMED, "open: a timeout of 1 height: malformed");
	make_open(&bad, other, 100, 20, 1);
	is_int(open_tx(&l, &bad), WEFT_LEDGER_BAD_SIGNATURE, "open: signed for another chain: bad_signature");
	make_open(&bad, chain, 1001, 20, 1);
	is_int(open_tx(&l, &bad), WEFT_LEDGER_INSUFFICIENT_FUNDS, "open: 1001 of 1000: insufficient_funds");
	ok(lt_balance(&l, pk[CLIENT]) == 1000 && lt_balance(&l, pk[PROVIDER]) == 50, "open: nothing moved by the refusals");
	make_open(&o, chain, 100, 20, 1);
	weft_ledger_asc_id(chain, &o, id);
	is_int(open_tx(&l, &o), WEFT_LEDGER_APPLIED, "open: 100 for 20 heights: applied");
	struct weft_ledger_asc_record rec;
	ok(weft_ledger_asc(&l, id, &rec) == 0 && rec.status == WEFT_LEDGER_CH_OPEN && rec.deposit == 100 &&
		   rec.expires == l.height + 20,
	   "open: the record (open, 100, expires at height %llu)", (unsigned long long)l.height + 20);
	is_int(open_tx(&l, &o), WEFT_LEDGER_CHANNEL_EXISTS, "open: replayed: channel_exists");
	ok(lt_balance(&l, pk[CLIENT]) == 900, "open: the deposit left the client once");

	/* ---- A402's round: a request priced 10 ---- */
	uint8_t t[32], T[33], pre[65], msg[32], aux[32];
	do
		randombytes_buf(t, 32);
	while (weft_adaptor_point(t, T) != 0);
	randombytes_buf(aux, 32);
	struct weft_ledger_asc_final f;
	memset(&f, 0, sizeof(f));
	memcpy(f.id, id, 32);
	f.st = (struct weft_ledger_asc_state){.seq = 1, .free = 90, .locked = 0, .provider = 10,
					      .status = WEFT_LEDGER_ASC_OPEN};
	memcpy(f.st.point, T, 33);
	memset(f.st.request, 0x44, 32);
	weft_ledger_asc_state_sighash(chain, id, &f.st, msg);
	is_int(weft_adaptor_presign(sk[PROVIDER], msg, T, aux, pre), 0, "round: the provider pre-signs the paid state");
	is_int(weft_adaptor_preverify(pre, pk[PROVIDER], msg, T), 0, "round: the client pre-verifies it");
	sign_state(id, &f.st, CLIENT, f.client_sig);
	is_int(weft_adaptor_adapt(pre, t, pk[PROVIDER], msg, f.provider_sig), 0, "round: the provider adapts with t");

	struct weft_ledger_asc_final g = f;
	randombytes_buf(g.secret, 32);
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLAIM_TAG, &g), WEFT_LEDGER_BAD_SECRET, "claim: a t not of T: bad_secret");
	g = f;
	memcpy(g.secret, t, 32);
	memcpy(g.provider_sig, pre + 1, 64); /* x(R) || s': not adapted */
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLAIM_TAG, &g), WEFT_LEDGER_BAD_SIGNATURE,
	       "claim: the pre-signature's bytes as the signature: bad_signature");
	g = f;
	memcpy(g.secret, t, 32);
	memset(g.client_sig, 0, 64);
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLAIM_TAG, &g), WEFT_LEDGER_BAD_SIGNATURE,
	       "claim: a state the client did not sign: bad_signature");
	g = f;
	memcpy(g.secret, t, 32);
	g.st.provider = 11;
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLAIM_TAG, &g), WEFT_LEDGER_NOT_CONSERVED,
	       "claim: a state adding up to 101: not_conserved");
	ok(lt_balance(&l, pk[CLIENT]) == 900 && lt_balance(&l, pk[PROVIDER]) == 50, "claim: nothing moved by the refusals");
	memcpy(f.secret, t, 32);
	struct weft_mpw claim;
	weft_mpw_init(&claim);
	weft_ledger_asc_final_encode(WEFT_LEDGER_ASC_CLAIM_TAG, &f, &claim);
	is_int(lt_apply(&l, &claim), WEFT_LEDGER_APPLIED, "claim: the provider's claim with t: applied");
	ok(lt_balance(&l, pk[CLIENT]) == 990 && lt_balance(&l, pk[PROVIDER]) == 60, "claim: client 990, provider 60");
	struct weft_ledger_asc_final seen;
	uint8_t back[32];
	ok(weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLAIM_TAG, claim.buf, claim.len, &seen) == 0 &&
		   memcmp(seen.secret, t, 32) == 0 && weft_adaptor_extract(pre, seen.provider_sig, T, back) == 0 &&
		   memcmp(back, t, 32) == 0,
	   "claim: a watcher reads t in it, and the client extracts t from its signature and the pre-signature");
	is_int(lt_apply(&l, &claim), WEFT_LEDGER_CHANNEL_CLOSED, "claim: again: channel_closed");
	is_int(refund_tx(&l, id), WEFT_LEDGER_CHANNEL_CLOSED, "refund of the claimed channel: channel_closed");
	weft_mpw_free(&claim);

	/* ---- cooperative close ---- */
	make_open(&o, chain, 200, 10, 2);
	weft_ledger_asc_id(chain, &o, id);
	is_int(open_tx(&l, &o), WEFT_LEDGER_APPLIED, "close: a second channel of 200");
	memset(&f, 0, sizeof(f));
	memcpy(f.id, id, 32);
	f.st = (struct weft_ledger_asc_state){.seq = 4, .free = 150, .locked = 20, .provider = 30,
					      .status = WEFT_LEDGER_ASC_OPEN};
	sign_state(id, &f.st, CLIENT, f.client_sig);
	sign_state(id, &f.st, PROVIDER, f.provider_sig);
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLOSE_TAG, &f), WEFT_LEDGER_MALFORMED,
	       "close: an OPEN state signed by both: malformed (a close signs a CLOSED state)");
	f.st.status = WEFT_LEDGER_ASC_CLOSED;
	sign_state(id, &f.st, CLIENT, f.client_sig);
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLOSE_TAG, &f), WEFT_LEDGER_BAD_SIGNATURE,
	       "close: the provider's signature of another state: bad_signature");
	sign_state(id, &f.st, PROVIDER, f.provider_sig);
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLOSE_TAG, &f), WEFT_LEDGER_APPLIED, "close: a CLOSED state signed by both");
	ok(lt_balance(&l, pk[CLIENT]) == 990 - 200 + 170 && lt_balance(&l, pk[PROVIDER]) == 90,
	   "close: the client got 150 + 20 locked, the provider 30");

	/* ---- refund, and a claim too late ---- */
	make_open(&o, chain, 50, 5, 3);
	weft_ledger_asc_id(chain, &o, id);
	is_int(open_tx(&l, &o), WEFT_LEDGER_APPLIED, "refund: a third channel of 50, 5 heights");
	is_int(refund_tx(&l, id), WEFT_LEDGER_TOO_EARLY, "refund: before the expiry: too_early");
	lt_tick(&l, 4);
	memset(&f, 0, sizeof(f));
	memcpy(f.id, id, 32);
	f.st = (struct weft_ledger_asc_state){.seq = 1, .free = 45, .provider = 5, .status = WEFT_LEDGER_ASC_OPEN};
	memcpy(f.st.point, T, 33);
	memcpy(f.secret, t, 32);
	sign_state(id, &f.st, CLIENT, f.client_sig);
	sign_state(id, &f.st, PROVIDER, f.provider_sig);
	is_int(final_tx(&l, WEFT_LEDGER_ASC_CLAIM_TAG, &f), WEFT_LEDGER_TOO_LATE, "claim: at the expiry: too_late");
	uint64_t before = lt_balance(&l, pk[CLIENT]);
	is_int(refund_tx(&l, id), WEFT_LEDGER_APPLIED, "refund: at the expiry: applied");
	ok(lt_balance(&l, pk[CLIENT]) == before + 50, "refund: the whole deposit back to the client");
	ok(lt_balance(&l, pk[CLIENT]) + lt_balance(&l, pk[PROVIDER]) == 1050, "every unit conserved (1050)");
	uint8_t unknown[32] = {9};
	is_int(refund_tx(&l, unknown), WEFT_LEDGER_CHANNEL_UNKNOWN, "refund of an unknown channel: channel_unknown");
	weft_mpw_free(&p);
	weft_ledger_destroy(&l);
	fake_env_free(&fe);
}

static void test_wire(void)
{
	struct weft_ledger_asc_open o, od;
	struct weft_ledger_asc_final f, fd;
	struct weft_mpw w;
	uint8_t id[32] = {3}, rid[32];
	weft_mpw_init(&w);
	make_open(&o, chain, 77, 9, 4);
	weft_ledger_asc_open_encode(&o, &w);
	ok(weft_ledger_asc_open_decode(w.buf, w.len, &od) == 0 && memcmp(&o, &od, sizeof(o)) == 0,
	   "wire: open round trip");
	bool all = true;
	for (size_t cut = 0; cut < w.len; cut++) {
		int rc = weft_ledger_asc_open_decode(w.buf, cut, &od);
		all &= rc == WEFT_EDECODE || rc == WEFT_NOTFOUND;
	}
	ok(all, "wire: every truncation of an open refused (%zu)", w.len);
	memset(&f, 0, sizeof(f));
	memcpy(f.id, id, 32);
	f.st = (struct weft_ledger_asc_state){.seq = 2, .free = 1, .locked = 2, .provider = 3, .status = 3};
	memset(f.secret, 5, 32);
	for (int k = 0; k < 2; k++) {
		const char *tag = k ? WEFT_LEDGER_ASC_CLAIM_TAG : WEFT_LEDGER_ASC_CLOSE_TAG;
		weft_mpw_reset(&w);
		weft_ledger_asc_final_encode(tag, &f, &w);
		memset(&fd, 0, sizeof(fd));
		ok(weft_ledger_asc_final_decode(tag, w.buf, w.len, &fd) == 0 && memcmp(&fd.st, &f.st, sizeof(f.st)) == 0 &&
			   (k == 0 || memcmp(fd.secret, f.secret, 32) == 0),
		   "wire: %s round trip", tag);
		all = true;
		for (size_t cut = 0; cut < w.len; cut++) {
			int rc = weft_ledger_asc_final_decode(tag, w.buf, cut, &fd);
			all &= rc == WEFT_EDECODE || rc == WEFT_NOTFOUND;
		}
		ok(all, "wire: every truncation of a %s refused (%zu)", tag, w.len);
	}
	weft_mpw_reset(&w);
	weft_ledger_asc_final_encode(WEFT_LEDGER_ASC_CLOSE_TAG, &f, &w);
	w.buf[w.len - 66 - 66 - 34 - 35 - 1] = 5; /* status 5, past CLOSED: the fixint before the point (2 + 33), the request (2 + 32) and the signatures (2 + 64 each) */
	enum weft_ledger_outcome why;
	is_int(weft_ledger_precheck(w.buf, w.len, &why), WEFT_EDECODE, "wire: a state of status 5: malformed");
	weft_mpw_reset(&w);
	weft_ledger_asc_refund_encode(id, &w);
	ok(weft_ledger_asc_refund_decode(w.buf, w.len, rid) == 0 && memcmp(rid, id, 32) == 0, "wire: refund round trip");
	w.buf[w.len - 35] = 2; /* version 2: the fixint before the id (2 + 32) */
	is_int(weft_ledger_asc_refund_decode(w.buf, w.len, rid), WEFT_EDECODE, "wire: another version refused");
	weft_mpw_free(&w);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		skip_all("libsodium init failed");
	for (int i = 0; i < 2; i++) {
		hex(sk[i], 32, sk_hex[i]);
		if (weft_ledger_pubkey(sk[i], pk[i]) != 0)
			abort();
	}
	weft_ledger_chain("asc-test", 8, chain);
	test_ledger();
	test_wire();
	return done_testing();
}
