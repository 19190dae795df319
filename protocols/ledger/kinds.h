/* kinds.h - what the ledger's transaction kinds share: opening a tagged,
 * versioned msgpack array and the canonical-encoding check every decoder
 * ends with (tx.c); the accounts and the rejection log (state.c); and the
 * kinds whose execution lives outside state.c (asc.c). */
#ifndef WEFT_PROTOCOLS_LEDGER_KINDS_H
#define WEFT_PROTOCOLS_LEDGER_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/ledger.h"
#include "weft/mp.h"

/* Opens a transaction of the kind tagged tag: 0 with r after the tag and
 * the version checked (fields: the array's length), WEFT_NOTFOUND when tx
 * is not of the kind, or WEFT_EDECODE. */
int ledger_kind_open(struct weft_mp_reader *r, const uint8_t *tx, size_t len, const char *tag, uint32_t fields,
		     uint64_t version);
/* True when tx is the one encoding of what was decoded (w: re-encoded). */
bool ledger_same_bytes(const struct weft_mpw *w, const uint8_t *tx, size_t len);

/* An account's balance and next nonce (0 and 0 when it never held funds):
 * 0 or a kv error; and its record written. */
int ledger_account_get(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t *balance,
		       uint64_t *nonce);
int ledger_account_put(struct weft_ledger *l, const uint8_t key[WEFT_LEDGER_KEY_LEN], uint64_t balance,
		       uint64_t nonce);
/* Logs why a transaction was rejected (t: a transfer's, or NULL). */
void ledger_log_rejected(struct weft_ledger *l, const uint8_t digest[32], enum weft_ledger_outcome o,
			 const struct weft_ledger_transfer *t, uint64_t expected_nonce);

/* A kind: precheck (decoding and stateless checks: 0, WEFT_NOTFOUND when
 * tx is not of the kind, or an error with *why) and execution (the outcome
 * and the ledger hash step). */
#define LEDGER_KIND(NAME)                                                                                      \
	int ledger_##NAME##_precheck(const uint8_t *tx, size_t len, enum weft_ledger_outcome *why);          \
	int ledger_##NAME##_execute(struct weft_ledger *l, const uint8_t *tx, size_t len, const uint8_t digest[32], \
				    enum weft_ledger_outcome *o, uint8_t *step, size_t *slen);
LEDGER_KIND(asc_open)
LEDGER_KIND(asc_close)
LEDGER_KIND(asc_claim)
LEDGER_KIND(asc_refund)

#endif
