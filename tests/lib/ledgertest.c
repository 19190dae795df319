/* ledgertest.c - what the ledger's unit tests share (ledgertest.h). */
#include "ledgertest.h"

#include "weft/crypto.h"

int lt_apply(struct weft_ledger *l, const struct weft_mpw *w)
{
	uint8_t digest[32];
	enum weft_ledger_outcome o;
	weft_hash(digest, w->buf, w->len);
	/* Each transaction a batch of its own, as an anchor of one. */
	return weft_ledger_apply(l, w->buf, w->len, digest, &o) == 0 && weft_ledger_end_batch(l) == 0 ? (int)o : -1;
}

uint64_t lt_balance(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN])
{
	uint64_t b = 0, n = 0;
	weft_ledger_account(l, key, &b, &n);
	return b;
}

void lt_tick(struct weft_ledger *l, int times)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	for (int i = 0; i < times; i++) {
		weft_mpw_reset(&w);
		weft_mpw_uint(&w, (uint64_t)i + 1000 * l->height);
		lt_apply(l, &w);
	}
	weft_mpw_free(&w);
}
