/* app.h - the application an ordering protocol feeds: what the DAG needs
 * from the layer that consumes its ordered stream, and nothing more.
 *
 * The DAG orders opaque transactions.  Before a transaction enters the
 * mempool it asks the application whether it could ever execute (admit:
 * stateless checks, so a malformed or badly signed transaction never takes
 * a place in a vertex); once a transaction is ordered it hands it over
 * (apply) in the same callback that ordered it, so the application's kv
 * writes commit with the order ("persist before send").  An application is
 * deterministic: the same ordered stream gives the same state and the same
 * outcomes on every node.
 *
 * The ledger (protocols/ledger/app.c) is weft's application; channel and
 * storage transaction kinds register in its table of kinds. */
#ifndef WEFT_APP_H
#define WEFT_APP_H

#include <stddef.h>
#include <stdint.h>

#include "weft/mp.h"

struct weft_app {
	void *ctx;
	/* 0 when tx may be queued; a negative code refuses it and *why (a
	 * static string) says why.  Must not change state. */
	int (*admit)(void *ctx, const uint8_t *tx, size_t len, const char **why);
	/* The next transaction of the ordered log (position counts from 0;
	 * digest is BLAKE2b-256 of tx).  0 with an outcome code kept for
	 * tx.status, or a negative code when the application cannot follow
	 * (a kv failure: the step will not commit). */
	int (*apply)(void *ctx, uint64_t position, const uint8_t *tx, size_t len, const uint8_t digest[32],
		     uint8_t *outcome);
	/* Optional: the end of a batch of ordered transactions (one anchor's
	 * history), in the callback that applied them: the application writes
	 * what it keeps per batch rather than per transaction (the ledger: its
	 * head).  0 or a negative code, as apply's. */
	int (*end_batch)(void *ctx);
	/* The name of an outcome code (static). */
	const char *(*outcome_name)(uint8_t outcome);
	/* State sync (docs/protocols/sparse-dag.md, "State sync"): the first
	 * bytes of every kv key holding the application's state (NUL
	 * terminated, e.g. "AH"), which a snapshot carries as they are, and
	 * reload, called after a snapshot replaced those records, to re-read
	 * whatever the application keeps in memory.  0 or a negative code. */
	const char *state_prefixes;
	int (*reload)(void *ctx);
};

#endif
