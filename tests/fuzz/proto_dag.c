/* tests/fuzz/proto_dag.c - libFuzzer target for the node stack weftd runs
 * for a "dag" genesis (protocols/node: the DAG consensus of protocols/dag
 * with the ledger of protocols/ledger): the DAG's own messages (STATUS,
 * FETCH, RANGE with vertices inside) and, on channel 1, every message of
 * the BRB that carries its vertices, reach on_message of node 0 of 4,
 * interleaved with timers (rounds, sync), transactions submitted (opaque
 * and ledger transfers), queries (tx.status, ledger.balance) and
 * restarts, through the script driver of tests/fuzz/lib/protofuzz.h
 * (input format there).  Parameter
 * sets: sparse over echo, dense over bracha, sparse over coded, sparse
 * over amortized; all with small GC depths and BRB windows so that
 * garbage collection, the round ring and the range fetch are reached in
 * a few rounds, and with ledger balances so that transfers execute. */
#include <stdio.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/ledger.h"

extern const struct weft_proto_ops weft_proto_node; /* protocols/registry.c: "dag" */

static const char *const queries[] = {"tx.status", "ledger.balance", NULL};

static void params(unsigned int cfg, struct weft_mpw *w, const char **name)
{
	static const char *const names[] = {"sparse-echo", "dense-bracha", "sparse-coded", "sparse-amortized"};
	static const char *const brbs[] = {"echo", "bracha", "coded", "amortized"};
	*name = names[cfg];
	weft_mpw_map(w, 14);
	weft_mpw_str(w, "mode");
	weft_mpw_str(w, cfg == 1 ? "dense" : "sparse");
	weft_mpw_str(w, "brb");
	weft_mpw_str(w, brbs[cfg]);
	weft_mpw_str(w, "d");
	weft_mpw_uint(w, cfg == 2 ? 2 : 1);
	/* The range fetch needs rounds the others still hold: a deeper GC for
	 * the sets with script d; the shallowest one allowed for the others,
	 * so that garbage collection starts within a few rounds. */
	weft_mpw_str(w, "gc_depth");
	weft_mpw_uint(w, cfg == 0 ? 16 : 4);
	weft_mpw_str(w, "brb_window");
	weft_mpw_uint(w, cfg == 0 ? 24 : 8);
	weft_mpw_str(w, "brb_resend_ms");
	weft_mpw_uint(w, 50);
	weft_mpw_str(w, "timeout_ms");
	weft_mpw_uint(w, 100);
	weft_mpw_str(w, "round_min_ms");
	weft_mpw_uint(w, 10);
	weft_mpw_str(w, "sync_ms");
	weft_mpw_uint(w, 100);
	weft_mpw_str(w, "tx_max");
	weft_mpw_uint(w, 256);
	weft_mpw_str(w, "batch_bytes");
	weft_mpw_uint(w, 1024);
	weft_mpw_str(w, "batch_txs");
	weft_mpw_uint(w, 8);
	weft_mpw_str(w, "tx_index");
	weft_mpw_uint(w, 16);
	weft_mpw_str(w, "balances");
	weft_mpw_map(w, 2);
	for (unsigned int i = 1; i <= 2; i++) {
		uint8_t pk[WEFT_LEDGER_KEY_LEN];
		char hex[2 * WEFT_LEDGER_KEY_LEN + 1];
		pf_ledger_key(i, NULL, pk);
		weft_hex_encode(hex, pk, sizeof(pk));
		weft_mpw_str(w, hex);
		weft_mpw_uint(w, 1000);
	}
}

/* Node i submits an opaque transaction, nodes 1 and 2 then a transfer. */
static bool request(unsigned int cfg, uint32_t node, unsigned int k, struct weft_mpw *w)
{
	if (k == 0) {
		char tx[32];
		int n = snprintf(tx, sizeof(tx), "opaque tx %u", (unsigned int)node);
		weft_mpw_raw(w, tx, (size_t)n);
		return true;
	}
	if (k > 1 || node == 0 || node > 2)
		return false;
	struct weft_ledger_transfer t = {.amount = 5 + node, .nonce = 0};
	uint8_t sk[WEFT_LEDGER_SECKEY_LEN], aux[32] = {0};
	pf_ledger_key(node, sk, NULL);
	pf_ledger_key(3 - node, NULL, t.to);
	pf_check(weft_ledger_transfer_sign(&t, sk, aux) == 0, "transfer sign");
	weft_ledger_transfer_encode(&t, w);
	return true;
}

/* Queries of the transactions' status and of both accounts. */
static void seed_tail(unsigned int cfg, struct weft_mpw *rec)
{
	for (uint32_t node = 0; node < PF_N; node++)
		for (unsigned int k = 0; k < 2; k++) {
			struct weft_mpw tx, arg;
			weft_mpw_init(&tx);
			weft_mpw_init(&arg);
			if (request(cfg, node, k, &tx)) {
				uint8_t q = 0, digest[32];
				weft_hash(digest, tx.buf, tx.len);
				weft_mpw_raw(&arg, &q, 1);
				weft_mpw_bin(&arg, digest, sizeof(digest));
				pf_record_op(rec, 0xf0, arg.buf, arg.len);
			}
			weft_mpw_free(&tx);
			weft_mpw_free(&arg);
		}
	for (unsigned int i = 1; i <= 2; i++) {
		struct weft_mpw arg;
		uint8_t q = 1, pk[WEFT_LEDGER_KEY_LEN];
		weft_mpw_init(&arg);
		pf_ledger_key(i, NULL, pk);
		weft_mpw_raw(&arg, &q, 1);
		weft_mpw_bin(&arg, pk, sizeof(pk));
		pf_record_op(rec, 0xf0, arg.buf, arg.len);
		weft_mpw_free(&arg);
	}
}

/* Script d loses the BRB's own catch-up (STATUS, DELIVERED: [1, 16|17, ...]
 * on channel 1) after the cut heals, so that node 0 catches up by the
 * DAG's range fetch (STATUS, FETCH, RANGE) instead. */
static bool seed_drop(const uint8_t *msg, size_t len)
{
	return len > 3 && msg[0] == 1 && (msg[3] == 16 || msg[3] == 17);
}

/* Every set: all nodes submit (b); the first: node 0 cut off for 120 ms,
 * a dozen rounds, then catching up by range fetch (d). */
static const char *scripts_for(unsigned int cfg)
{
	return cfg == 0 ? "bd" : "b";
}

static const struct pf_target target = {
	.ops = &weft_proto_node,
	.nconfigs = 4,
	.params = params,
	.request = request,
	.seed_tail = seed_tail,
	.queries = queries,
	.unique_deliveries = true,
	.msgpack_sends = true,
	.send_channel = 1,
	.seed_horizon_us = 2000000,
	.seed_max = 7000,
	.seed_max_long = 14000,
	.long_scripts = "d",
	.scripts_for = scripts_for,
	.seed_cut_us = 120000,
	.seed_drop = seed_drop,
};

PF_FUZZ_TARGET(target)
