/* ledgertest.h - what the ledger's unit tests share (ledgertest.c):
 * executing an encoded transaction, reading a balance, moving the height. */
#ifndef WEFT_TESTS_LIB_LEDGERTEST_H
#define WEFT_TESTS_LIB_LEDGERTEST_H

#include <stdint.h>

#include "weft/ledger.h"
#include "weft/mp.h"

/* Executes w's bytes as the next transaction: its outcome, or -1 when the
 * ledger failed. */
int lt_apply(struct weft_ledger *l, const struct weft_mpw *w);
/* key's balance (0 when it never held funds). */
uint64_t lt_balance(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN]);
/* times opaque transactions: the height moves by times. */
void lt_tick(struct weft_ledger *l, int times);

#endif
