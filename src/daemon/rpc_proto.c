/* rpc_proto.c - the RPC methods the running protocol stack declares
 * (weft_proto_ops.method_tables, weft/proto.h), answered by kind: weftd's
 * method table is its own methods (rpc_methods.c) plus these, built once
 * at start, so a protocol or ledger kind adds a method next to its code
 * and `help` lists it.  Every call goes through the host, so the store's
 * pause and persist-before-send apply. */
#include <stdlib.h>
#include <string.h>

#include "node.h"
#include "weft/crypto.h"
#include "weft/err.h"

#define BATCH_MAX 100000
#define HEX_PARAM_MAX (2 * 64 * 1024)

/* The declaration of the method being called. */
static const struct weft_proto_method *declared(const struct weft_node *node, const char *name)
{
	const struct weft_proto_method *const *t = node->proto_ops ? node->proto_ops->method_tables : NULL;
	for (; t && *t; t++)
		for (const struct weft_proto_method *m = *t; m->name; m++)
			if (strcmp(m->name, name) == 0)
				return m;
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

/* The reason a protocol wrote into reply when it refused (a str), or NULL. */
static const char *reason(const struct weft_mpw *reply, char *buf, size_t cap)
{
	struct weft_mp_reader r;
	const char *s;
	uint32_t len;
	weft_mp_reader_init(&r, reply->buf, reply->len);
	if (reply->len == 0 || weft_mp_read_str(&r, &s, &len) != 0)
		return NULL;
	snprintf(buf, cap, "%.*s", (int)len, s);
	return buf;
}

static const char *refusal_text(int rc, const struct weft_mpw *reply, char *buf, size_t cap)
{
	const char *why = reason(reply, buf, cap);
	if (why)
		return why;
	return rc == WEFT_EAGAIN ? "mempool full" : weft_strerror(rc);
}

static const struct weft_rpc_done *submit_one(struct weft_rpc_call *call, struct weft_node *node,
					      const struct weft_proto_method *m, const uint8_t *tx, size_t len)
{
	const char *why = NULL;
	if (len == 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s: an empty transaction", m->param);
	if (m->precheck && m->precheck(tx, len, &why) < 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "transaction refused: %s", why ? why : "invalid");
	struct weft_mpw *reply = weft_rpc_result(call);
	int rc = weft_host_request(node->host, tx, len, reply);
	if (rc == 0)
		return weft_rpc_ok(call); /* the protocol's reply map is the result */
	char buf[160];
	const char *text = refusal_text(rc, reply, buf, sizeof(buf));
	weft_mpw_reset(reply);
	if (rc == WEFT_EAGAIN)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "the mempool is full: retry later");
	if (rc == WEFT_ETOOBIG)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "transaction of %zu bytes is over the tx_max limit", len);
	if (rc == WEFT_ENOSPC || rc == WEFT_EMAPFULL)
		return store_refusal(call, rc);
	return weft_rpc_fail(call, WEFT_RPC_REJECTED, "transaction refused: %s", text);
}

/* SUBMIT: `param` as bytes, or `param`_hex as hex digits. */
static const struct weft_rpc_done *rpc_submit(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_proto_method *m = declared(node, weft_rpc_method_name(call));
	char hexname[64];
	snprintf(hexname, sizeof(hexname), "%s_hex", m->param);
	struct weft_rpc_bytes raw = {0}, hex = {0};
	bool have_raw = false, have_hex = false;
	const struct weft_rpc_param spec[] = {{m->param, WEFT_RPC_BYTES, false, &raw, &have_raw},
					      {hexname, WEFT_RPC_STR, false, &hex, &have_hex}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 2);
	if (bad)
		return bad;
	if (have_raw == have_hex)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "give %s (bytes) or %s (hex), one of them", m->param,
				     hexname);
	if (have_raw)
		return submit_one(call, node, m, raw.ptr, raw.len);
	if (hex.len % 2 || hex.len > HEX_PARAM_MAX)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s: not an even number of hex digits (at most %d)",
				     hexname, HEX_PARAM_MAX);
	uint8_t *bytes = malloc(hex.len / 2 + 1);
	if (bytes == NULL)
		abort();
	const struct weft_rpc_done *done;
	if (weft_hex_decode(bytes, hex.len / 2, (const char *)hex.ptr, hex.len) != 0)
		done = weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s: not hex digits", hexname);
	else
		done = submit_one(call, node, m, bytes, hex.len / 2);
	free(bytes);
	return done;
}

/* SUBMIT_BATCH: every transaction in one step. */
static const struct weft_rpc_done *rpc_submit_batch(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_proto_method *m = declared(node, weft_rpc_method_name(call));
	struct weft_rpc_bytes arr = {0};
	const struct weft_rpc_param spec[] = {{m->param, WEFT_RPC_ANY, true, &arr, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad)
		return bad;
	struct weft_mp_reader r;
	uint32_t count;
	weft_mp_reader_init(&r, arr.ptr, arr.len);
	if (weft_mp_read_array(&r, &count) != 0 || count == 0 || count > BATCH_MAX)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s: expected an array of 1 to %d transactions",
				     m->param, BATCH_MAX);
	const uint8_t **txs = calloc(count, sizeof(*txs));
	size_t *lens = calloc(count, sizeof(*lens));
	struct weft_mpw *replies = calloc(count, sizeof(*replies));
	int *rcs = calloc(count, sizeof(*rcs));
	if (txs == NULL || lens == NULL || replies == NULL || rcs == NULL)
		abort();
	const struct weft_rpc_done *done = NULL;
	for (uint32_t i = 0; i < count && !done; i++) {
		struct weft_mp_obj o;
		if (weft_mp_read(&r, &o) || (o.type != WEFT_MP_BIN && o.type != WEFT_MP_STR) || o.v.s.len == 0)
			done = weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s[%u]: expected a non-empty string or binary",
					     m->param, i);
		else
			txs[i] = o.v.s.bytes, lens[i] = o.v.s.len;
	}
	for (uint32_t i = 0; i < count; i++)
		weft_mpw_init(&replies[i]);
	if (!done) {
		weft_host_request_many(node->host, count, txs, lens, replies, rcs);
		uint32_t accepted = 0;
		for (uint32_t i = 0; i < count; i++)
			accepted += rcs[i] == 0;
		int store_rc = weft_host_store_error(node->host);
		if (accepted == 0 && store_rc != 0) {
			done = store_refusal(call, store_rc);
		} else {
			struct weft_mpw *w = weft_rpc_result(call);
			weft_mpw_map(w, 2);
			weft_mpw_str(w, "accepted");
			weft_mpw_uint(w, accepted);
			weft_mpw_str(w, "results");
			weft_mpw_array(w, count);
			for (uint32_t i = 0; i < count; i++) {
				char buf[160];
				if (rcs[i] == 0) {
					weft_mpw_raw(w, replies[i].buf, replies[i].len);
					continue;
				}
				weft_mpw_map(w, 1);
				weft_mpw_str(w, "error");
				weft_mpw_str(w, refusal_text(rcs[i], &replies[i], buf, sizeof(buf)));
			}
			done = weft_rpc_ok(call);
		}
	}
	for (uint32_t i = 0; i < count; i++)
		weft_mpw_free(&replies[i]);
	free(txs), free(lens), free(replies), free(rcs);
	return done;
}

/* QUERY: a 32-byte key as 64 hex digits (or 32 raw bytes). */
static const struct weft_rpc_done *rpc_query(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_proto_method *m = declared(node, weft_rpc_method_name(call));
	struct weft_rpc_bytes b = {0};
	const struct weft_rpc_param spec[] = {{m->param, WEFT_RPC_BYTES, true, &b, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad)
		return bad;
	uint8_t key[32];
	if (b.len == 32)
		memcpy(key, b.ptr, 32);
	else if (b.len != 64 || weft_hex_decode(key, 32, (const char *)b.ptr, 64) != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s: expected 64 hex digits", m->param);
	struct weft_mpw arg;
	weft_mpw_init(&arg);
	weft_mpw_bin(&arg, key, sizeof(key));
	struct weft_mpw *w = weft_rpc_result(call);
	int rc = weft_host_query(node->host, m->name, arg.buf, arg.len, w);
	weft_mpw_free(&arg);
	if (rc != 0) {
		weft_mpw_reset(w);
		return weft_rpc_fail(call, WEFT_RPC_INTERNAL_ERROR, "%s failed: %s", m->name, weft_strerror(rc));
	}
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_subscribe(struct weft_rpc_call *call, void *ctx)
{
	return weft_node_rpc_subscribe(call, ctx);
}

static const struct weft_rpc_done *rpc_info(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	weft_host_proto_info(node->host, weft_rpc_result(call));
	return weft_rpc_ok(call);
}

static weft_rpc_handler_fn handler_of(enum weft_method_kind kind)
{
	switch (kind) {
	case WEFT_METHOD_SUBMIT: return rpc_submit;
	case WEFT_METHOD_SUBMIT_BATCH: return rpc_submit_batch;
	case WEFT_METHOD_QUERY: return rpc_query;
	case WEFT_METHOD_SUBSCRIBE: return rpc_subscribe;
	case WEFT_METHOD_INFO: return rpc_info;
	}
	return NULL;
}

int weft_node_build_methods(struct weft_node *node)
{
	size_t n = weft_node_ncore_methods + (node->storage ? weft_storage_nmethods : 0) +
		   (node->channels ? weft_channels_nmethods : 0);
	const struct weft_proto_method *const *t = node->proto_ops ? node->proto_ops->method_tables : NULL;
	for (const struct weft_proto_method *const *p = t; p && *p; p++)
		for (const struct weft_proto_method *m = *p; m->name; m++)
			n++;
	struct weft_rpc_method *all = calloc(n, sizeof(*all));
	if (all == NULL)
		abort();
	memcpy(all, weft_node_core_methods, weft_node_ncore_methods * sizeof(*all));
	size_t k = weft_node_ncore_methods;
	if (node->storage) {
		memcpy(all + k, weft_storage_methods, weft_storage_nmethods * sizeof(*all));
		k += weft_storage_nmethods;
	}
	if (node->channels) {
		memcpy(all + k, weft_channels_methods, weft_channels_nmethods * sizeof(*all));
		k += weft_channels_nmethods;
	}
	for (const struct weft_proto_method *const *p = t; p && *p; p++) {
		for (const struct weft_proto_method *m = *p; m->name; m++) {
			for (size_t i = 0; i < k; i++) {
				if (strcmp(all[i].name, m->name) == 0) {
					fprintf(stderr, "weftd: protocol %s declares the RPC method %s twice\n",
						node->proto_ops->name, m->name);
					free(all);
					return WEFT_EINVAL;
				}
			}
			all[k++] = (struct weft_rpc_method){m->name, handler_of(m->kind), m->usage, m->help, 0};
		}
	}
	node->methods = all;
	node->nmethods = k;
	return 0;
}
