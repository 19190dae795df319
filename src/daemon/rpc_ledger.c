/* rpc_ledger.c - the RPC methods of a committee running the "dag"
 * protocol: transactions into the mempool (tx.submit, tx.submit_batch,
 * ledger.transfer), their state (tx.status), accounts (ledger.balance) and
 * the consensus state (dag.info).  Ledger transfers are checked here first
 * (weft_ledger_precheck) so a client gets the exact reason a transaction
 * would fail; the protocol checks again. */
#include <stdlib.h>
#include <string.h>

#include "node.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"

#define BATCH_MAX 100000

static const struct weft_rpc_done *need_dag(struct weft_rpc_call *call, const struct weft_node *node)
{
	const char *name = node->genesis_path ? node->genesis.protocol : "beb";
	if (node->host && strcmp(name, "dag") == 0)
		return NULL;
	return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE,
			     "this committee runs '%s', not the DAG consensus: set \"protocol\": \"dag\" in the genesis file",
			     name);
}

static void write_hex(struct weft_mpw *w, const uint8_t *b, size_t len)
{
	char hex[2 * 32 + 1];
	weft_hex_encode(hex, b, len);
	weft_mpw_str(w, hex);
}

/* The "duplicate" member of the protocol's reply to a transaction. */
static bool reply_duplicate(const struct weft_mpw *reply)
{
	struct weft_mp_reader r;
	uint32_t pairs;
	weft_mp_reader_init(&r, reply->buf, reply->len);
	if (weft_mp_read_map(&r, &pairs))
		return false;
	for (uint32_t i = 0; i < pairs; i++) {
		const char *k;
		uint32_t klen;
		bool dup;
		if (weft_mp_read_str(&r, &k, &klen))
			return false;
		if (klen == 9 && memcmp(k, "duplicate", 9) == 0 && weft_mp_read_bool(&r, &dup) == 0)
			return dup;
		if (weft_mp_skip(&r))
			return false;
	}
	return false;
}

/* Stateless ledger checks: NULL, or the answered call naming the reason. */
static const struct weft_rpc_done *precheck(struct weft_rpc_call *call, const uint8_t *tx, size_t len, bool must_transfer)
{
	enum weft_ledger_outcome why;
	int rc = weft_ledger_precheck(tx, len, &why);
	if (rc == WEFT_NOTFOUND && must_transfer)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "tx is not a ledger transfer");
	if (rc < 0 && rc != WEFT_NOTFOUND)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "invalid ledger transaction: %s", weft_ledger_outcome_name(why));
	return NULL;
}

/* The node's store did not take the step: nothing of it was kept. */
static const struct weft_rpc_done *store_refusal(struct weft_rpc_call *call, int rc)
{
	return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE,
			     "not stored, not accepted: %s; the node is paused until its store takes writes "
			     "again ('status' shows store)",
			     weft_strerror(rc));
}

static const struct weft_rpc_done *submit_one(struct weft_rpc_call *call, struct weft_node *node, const uint8_t *tx,
					      size_t len, bool must_transfer)
{
	const struct weft_rpc_done *bad = precheck(call, tx, len, must_transfer);
	if (bad)
		return bad;
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	int rc = weft_host_request(node->host, tx, len, &reply);
	bool dup = rc == 0 && reply_duplicate(&reply);
	weft_mpw_free(&reply);
	if (rc == WEFT_EAGAIN)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "the mempool is full: retry later");
	if (rc == WEFT_ETOOBIG)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "transaction of %zu bytes is over the tx_max limit", len);
	if (rc == WEFT_ENOSPC || rc == WEFT_EMAPFULL)
		return store_refusal(call, rc);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "transaction refused: %s", weft_strerror(rc));
	uint8_t digest[32];
	weft_hash(digest, tx, len);
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "digest");
	write_hex(w, digest, sizeof(digest));
	weft_mpw_str(w, "duplicate");
	weft_mpw_bool(w, dup);
	return weft_rpc_ok(call);
}

const struct weft_rpc_done *weft_rpc_tx_submit(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	struct weft_rpc_bytes data = {0};
	const struct weft_rpc_param spec[] = {{"data", WEFT_RPC_BYTES, true, &data, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad || (bad = need_dag(call, node)))
		return bad;
	if (data.len == 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "data: an empty transaction");
	return submit_one(call, node, data.ptr, data.len, false);
}

const struct weft_rpc_done *weft_rpc_ledger_transfer(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	struct weft_rpc_bytes tx = {0}, hex = {0};
	bool have_tx = false, have_hex = false;
	const struct weft_rpc_param spec[] = {{"tx", WEFT_RPC_BYTES, false, &tx, &have_tx},
					      {"tx_hex", WEFT_RPC_STR, false, &hex, &have_hex}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 2);
	if (bad || (bad = need_dag(call, node)))
		return bad;
	if (have_tx == have_hex)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "give the signed transfer as tx (bytes) or tx_hex");
	if (have_tx)
		return submit_one(call, node, tx.ptr, tx.len, true);
	uint8_t raw[WEFT_LEDGER_TRANSFER_MAX_LEN];
	if (hex.len % 2 || hex.len / 2 > sizeof(raw) || weft_hex_decode(raw, hex.len / 2, (const char *)hex.ptr, hex.len))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "tx_hex: not a transfer in hex");
	return submit_one(call, node, raw, hex.len / 2, true);
}

/* {accepted, results: [{digest, duplicate} | {error}]} */
static const struct weft_rpc_done *batch_results(struct weft_rpc_call *call, uint32_t count, const uint8_t **txs,
						 const size_t *lens, const char **why, struct weft_mpw *replies,
						 const int *rcs, uint32_t accepted)
{
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "accepted");
	weft_mpw_uint(w, accepted);
	weft_mpw_str(w, "results");
	weft_mpw_array(w, count);
	for (uint32_t i = 0; i < count; i++) {
		uint8_t digest[32];
		weft_hash(digest, txs[i], why[i] ? 0 : lens[i]);
		weft_mpw_map(w, rcs[i] == 0 ? 2 : 1);
		if (rcs[i] == 0) {
			weft_mpw_str(w, "digest");
			write_hex(w, digest, sizeof(digest));
			weft_mpw_str(w, "duplicate");
			weft_mpw_bool(w, reply_duplicate(&replies[i]));
		} else {
			weft_mpw_str(w, "error");
			weft_mpw_str(w, why[i] ? why[i] : rcs[i] == WEFT_EAGAIN ? "mempool full" : weft_strerror(rcs[i]));
		}
	}
	return weft_rpc_ok(call);
}

const struct weft_rpc_done *weft_rpc_tx_submit_batch(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	struct weft_rpc_bytes raw = {0};
	const struct weft_rpc_param spec[] = {{"txs", WEFT_RPC_ANY, true, &raw, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad || (bad = need_dag(call, node)))
		return bad;
	struct weft_mp_reader r;
	uint32_t count;
	weft_mp_reader_init(&r, raw.ptr, raw.len);
	if (weft_mp_read_array(&r, &count) || count == 0 || count > BATCH_MAX)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "txs: expected an array of 1 to %d transactions",
				     BATCH_MAX);
	const uint8_t **txs = calloc(count, sizeof(*txs));
	size_t *lens = calloc(count, sizeof(*lens));
	struct weft_mpw *replies = calloc(count, sizeof(*replies));
	int *rcs = calloc(count, sizeof(*rcs));
	if (!txs || !lens || !replies || !rcs)
		abort();
	const struct weft_rpc_done *done = NULL;
	for (uint32_t i = 0; i < count && !done; i++) {
		struct weft_mp_obj o;
		if (weft_mp_read(&r, &o) || (o.type != WEFT_MP_BIN && o.type != WEFT_MP_STR) || o.v.s.len == 0) {
			done = weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "txs[%u]: expected a non-empty string or binary", i);
			break;
		}
		txs[i] = o.v.s.bytes;
		lens[i] = o.v.s.len;
		weft_mpw_init(&replies[i]);
	}
	if (!done) {
		/* Invalid transfers get their reason; the rest go in as one step. */
		const char **why = calloc(count, sizeof(*why));
		if (why == NULL)
			abort();
		for (uint32_t i = 0; i < count; i++) {
			enum weft_ledger_outcome o;
			int rc = weft_ledger_precheck(txs[i], lens[i], &o);
			if (rc < 0 && rc != WEFT_NOTFOUND) {
				why[i] = weft_ledger_outcome_name(o);
				lens[i] = 0; /* the protocol refuses an empty transaction */
			}
		}
		weft_host_request_many(node->host, count, txs, lens, replies, rcs);
		uint32_t accepted = 0;
		for (uint32_t i = 0; i < count; i++)
			accepted += rcs[i] == 0;
		int store_rc = weft_host_store_error(node->host);
		if (accepted == 0 && store_rc != 0)
			done = store_refusal(call, store_rc);
		else
			done = batch_results(call, count, txs, lens, why, replies, rcs, accepted);
		free(why);
	}
	for (uint32_t i = 0; i < count; i++)
		weft_mpw_free(&replies[i]);
	free(txs);
	free(lens);
	free(replies);
	free(rcs);
	return done;
}

/* A 32-byte key given as 64 hex digits (or 32 raw bytes). */
static int key_param(const struct weft_rpc_bytes *b, uint8_t out[32])
{
	if (b->len == 32) {
		memcpy(out, b->ptr, 32);
		return 0;
	}
	return b->len == 64 ? weft_hex_decode(out, 32, (const char *)b->ptr, 64) : WEFT_EINVAL;
}

static const struct weft_rpc_done *query(struct weft_rpc_call *call, struct weft_node *node, const char *what,
					 const char *param)
{
	struct weft_rpc_bytes b = {0};
	const struct weft_rpc_param spec[] = {{param, WEFT_RPC_BYTES, true, &b, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad || (bad = need_dag(call, node)))
		return bad;
	uint8_t key[32];
	if (key_param(&b, key) != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s: expected 64 hex digits", param);
	struct weft_mpw arg;
	weft_mpw_init(&arg);
	weft_mpw_bin(&arg, key, sizeof(key));
	struct weft_mpw *w = weft_rpc_result(call);
	int rc = weft_host_query(node->host, what, arg.buf, arg.len, w);
	weft_mpw_free(&arg);
	if (rc != 0) {
		weft_mpw_reset(w);
		return weft_rpc_fail(call, WEFT_RPC_INTERNAL_ERROR, "%s failed: %s", what, weft_strerror(rc));
	}
	return weft_rpc_ok(call);
}

const struct weft_rpc_done *weft_rpc_tx_status(struct weft_rpc_call *call, void *ctx)
{
	return query(call, ctx, "tx.status", "digest");
}

const struct weft_rpc_done *weft_rpc_ledger_balance(struct weft_rpc_call *call, void *ctx)
{
	return query(call, ctx, "ledger.balance", "account");
}

const struct weft_rpc_done *weft_rpc_dag_info(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad || (bad = need_dag(call, node)))
		return bad;
	weft_host_proto_info(node->host, weft_rpc_result(call));
	return weft_rpc_ok(call);
}
