/* wire.c - the payment channel's signed pieces (weft/channel.h): the
 * payment hash and its consent hash, the frontier of a cut, and the
 * bounded reader and canonical writer of a payment. */
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "weft/bytes.h"
#include "weft/channel.h"
#include "weft/err.h"

#define PAY_KEY "weft/channel-pay/v1"
#define CONSENT_KEY "weft/channel-consent/v1"
#define FRONTIER_KEY "weft/channel-frontier/v1"

static void keyed_init(crypto_generichash_state *st, const char *key)
{
	crypto_generichash_init(st, (const unsigned char *)key, strlen(key), 32);
}

static void put32(crypto_generichash_state *st, uint32_t v)
{
	uint8_t b[4];
	weft_be32_put(b, v);
	crypto_generichash_update(st, b, sizeof(b));
}

static void put64(crypto_generichash_state *st, uint64_t v)
{
	uint8_t b[8];
	weft_be64_put(b, v);
	crypto_generichash_update(st, b, sizeof(b));
}

void weft_channel_payment_hash(const uint8_t chain[32], const uint8_t id[32], const struct weft_channel_payment *p,
			       uint8_t hash[32])
{
	crypto_generichash_state st;
	keyed_init(&st, PAY_KEY);
	crypto_generichash_update(&st, chain, 32);
	crypto_generichash_update(&st, id, 32);
	put32(&st, p->from);
	put64(&st, p->seq);
	crypto_generichash_update(&st, p->prev, 32);
	put32(&st, p->nrefs);
	for (uint32_t i = 0; i < p->nrefs; i++) {
		put32(&st, p->refs[i].member);
		put64(&st, p->refs[i].seq);
		crypto_generichash_update(&st, p->refs[i].hash, 32);
	}
	put32(&st, p->to);
	put64(&st, p->amount);
	if (p->kind != WEFT_CHANNEL_PAY) {
		crypto_generichash_update(&st, &p->kind, 1);
		crypto_generichash_update(&st, p->secret, 32);
		put64(&st, p->cond);
	}
	crypto_generichash_final(&st, hash, 32);
}

void weft_channel_consent_hash(const uint8_t pay_hash[32], uint8_t msg[32])
{
	crypto_generichash(msg, 32, pay_hash, 32, (const unsigned char *)CONSENT_KEY, strlen(CONSENT_KEY));
}

void weft_channel_frontier(uint32_t n, const uint64_t *seq, const uint8_t (*head)[32], uint8_t frontier[32])
{
	crypto_generichash_state st;
	keyed_init(&st, FRONTIER_KEY);
	for (uint32_t i = 0; i < n; i++) {
		put64(&st, seq[i]);
		crypto_generichash_update(&st, head[i], 32);
	}
	crypto_generichash_final(&st, frontier, 32);
}

void weft_channel_payment_encode(const struct weft_channel_payment *p, struct weft_mpw *w)
{
	bool plain = p->kind == WEFT_CHANNEL_PAY;
	weft_mpw_array(w, plain ? 8 : 11);
	weft_mpw_uint(w, p->from);
	weft_mpw_uint(w, p->seq);
	weft_mpw_bin(w, p->prev, 32);
	weft_mpw_array(w, p->nrefs);
	for (uint32_t i = 0; i < p->nrefs; i++) {
		weft_mpw_array(w, 3);
		weft_mpw_uint(w, p->refs[i].member);
		weft_mpw_uint(w, p->refs[i].seq);
		weft_mpw_bin(w, p->refs[i].hash, 32);
	}
	weft_mpw_uint(w, p->to);
	weft_mpw_uint(w, p->amount);
	weft_mpw_bin(w, p->sig, sizeof(p->sig));
	weft_mpw_bin(w, p->consent, sizeof(p->consent));
	if (!plain) {
		weft_mpw_uint(w, p->kind);
		weft_mpw_bin(w, p->secret, 32);
		weft_mpw_uint(w, p->cond);
	}
}

int weft_channel_payment_read(struct weft_mp_reader *r, uint32_t n, struct weft_channel_payment *p)
{
	uint32_t count, nrefs, three;
	memset(p, 0, sizeof(*p));
	if (weft_mp_read_array(r, &count) != 0 || (count != 8 && count != 11) || weft_mp_read_u32(r, &p->from) != 0 ||
	    weft_mp_read_uint(r, &p->seq) != 0 || weft_mp_read_bin_fixed(r, p->prev, 32) != 0 ||
	    weft_mp_read_array(r, &nrefs) != 0 || nrefs >= n || nrefs > WEFT_CHANNEL_REFS_MAX || p->from >= n || p->seq == 0)
		return WEFT_EDECODE;
	p->nrefs = nrefs;
	for (uint32_t i = 0; i < nrefs; i++) {
		struct weft_channel_ref *f = &p->refs[i];
		if (weft_mp_read_array(r, &three) != 0 || three != 3 || weft_mp_read_u32(r, &f->member) != 0 ||
		    weft_mp_read_uint(r, &f->seq) != 0 || weft_mp_read_bin_fixed(r, f->hash, 32) != 0)
			return WEFT_EDECODE;
		if (f->member >= n || f->member == p->from || f->seq == 0 || (i > 0 && f->member <= p->refs[i - 1].member))
			return WEFT_EDECODE;
	}
	if (weft_mp_read_u32(r, &p->to) != 0 || weft_mp_read_uint(r, &p->amount) != 0 ||
	    weft_mp_read_bin_fixed(r, p->sig, sizeof(p->sig)) != 0 ||
	    weft_mp_read_bin_fixed(r, p->consent, sizeof(p->consent)) != 0)
		return WEFT_EDECODE;
	if (p->to >= n || p->to == p->from || p->amount == 0)
		return WEFT_EDECODE;
	if (count == 8)
		return 0;
	uint64_t kind;
	static const uint8_t zero[32];
	if (weft_mp_read_uint(r, &kind) != 0 || kind == WEFT_CHANNEL_PAY || kind > WEFT_CHANNEL_REFUND ||
	    weft_mp_read_bin_fixed(r, p->secret, 32) != 0 || weft_mp_read_uint(r, &p->cond) != 0)
		return WEFT_EDECODE;
	p->kind = (uint8_t)kind;
	if (p->kind != WEFT_CHANNEL_LOCK && (p->cond == 0 || p->cond >= p->seq))
		return WEFT_EDECODE;
	if (p->kind == WEFT_CHANNEL_REFUND && memcmp(p->secret, zero, 32) != 0)
		return WEFT_EDECODE;
	return 0;
}
