/* channel_cost.c - what a payment channel costs on the ledger (issue 16's
 * figure): the encoded bytes of channel.open, the cooperative
 * channel.close, and a unilateral close with one dispute (commit, dispute,
 * settle), for 2 to 150 members, counted from the real encoders with real
 * BIP340 signatures.  Sizes, not timings: deterministic.  Prints a
 * markdown table; tests/bench/channel_cost.sh puts it in
 * docs/performance.md. */
#include <stdio.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/ledger.h"

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	uint8_t chain[32], id[32], msg[32], aux[32] = {0};
	weft_ledger_chain("bench", 5, chain);
	struct weft_mpw w;
	weft_mpw_init(&w);
	printf("| members n | open | cooperative close | unilateral: commit + dispute + settle | "
	       "open + coop. close per member | open + unilateral per member |\n");
	printf("|---:|---:|---:|---:|---:|---:|\n");
	static const unsigned sizes[] = {2, 3, 4, 8, 16, 150};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		unsigned n = sizes[s];
		uint8_t sk[WEFT_LEDGER_CHANNEL_MAX][32];
		struct weft_ledger_channel_open o = {.n = n};
		for (unsigned i = 0; i < n; i++) {
			memset(sk[i], 0, 32);
			sk[i][31] = (uint8_t)(i + 1);
			weft_ledger_pubkey(sk[i], o.member[i]);
			/* deposits of realistic size: 5-byte msgpack integers */
			o.deposit[i] = 1000000 + i;
		}
		weft_ledger_channel_open_sighash(chain, &o, msg);
		for (unsigned i = 0; i < n; i++)
			weft_ledger_schnorr_sign(sk[i], msg, aux, o.sig[i]);
		weft_mpw_reset(&w);
		weft_ledger_channel_open_encode(&o, &w);
		size_t open = w.len;
		weft_ledger_channel_id(chain, &o, id);
		struct weft_ledger_channel_close c = {.n = n};
		memcpy(c.id, id, 32);
		for (unsigned i = 0; i < n; i++)
			c.balance[i] = o.deposit[i];
		weft_ledger_channel_close_sighash(chain, &c, msg);
		for (unsigned i = 0; i < n; i++)
			weft_ledger_schnorr_sign(sk[i], msg, aux, c.sig[i]);
		weft_mpw_reset(&w);
		weft_ledger_channel_close_encode(&c, &w);
		size_t close = w.len;
		struct weft_ledger_channel_root t = {.n = n, .version = 1000000};
		memcpy(t.id, id, 32);
		for (unsigned i = 0; i < n; i++)
			t.balance[i] = o.deposit[i];
		weft_ledger_channel_root_sighash(chain, &t, msg);
		for (unsigned i = 0; i < n; i++)
			weft_ledger_schnorr_sign(sk[i], msg, aux, t.sig[i]);
		weft_mpw_reset(&w);
		weft_ledger_channel_root_encode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t, &w);
		size_t commit = w.len;
		weft_mpw_reset(&w);
		weft_ledger_channel_root_encode(WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t, &w);
		size_t dispute = w.len;
		weft_mpw_reset(&w);
		weft_ledger_channel_settle_encode(id, &w);
		size_t settle = w.len;
		size_t unilateral = commit + dispute + settle;
		printf("| %u | %zu B, 1 tx | %zu B, 1 tx | %zu B, 3 tx | %.0f B | %.0f B |\n", n, open, close, unilateral,
		       (double)(open + close) / n, (double)(open + unilateral) / n);
	}
	weft_mpw_free(&w);
	return 0;
}
