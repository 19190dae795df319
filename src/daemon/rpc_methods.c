/* rpc_methods.c - weftd's own RPC methods (the node, its peers, the fault
 * layer, the hosted protocol in general) and their handlers.  Every method
 * is one row {name, handler, params, help, flags}; the methods a protocol
 * stack declares join them at start (rpc_proto.c); docs/rpc.md describes
 * each.  Handlers end in exactly one weft_rpc_ok/fail/pending. */
#include <event2/event.h>
#include <lmdb.h>
#include <msgpack.h>
#include <sodium.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "node.h"
#include "weft/brb.h"
#include "weft/err.h"
#include "weft/version.h"

static const struct weft_rpc_done *rpc_version(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "version");
	weft_mpw_str(w, WEFT_VERSION);
	weft_mpw_str(w, "rpc_protocol");
	weft_mpw_uint(w, WEFT_RPC_PROTOCOL);
	weft_mpw_str(w, "libraries");
	weft_mpw_map(w, 4);
	weft_mpw_str(w, "libevent");
	weft_mpw_str(w, event_get_version());
	weft_mpw_str(w, "libsodium");
	weft_mpw_str(w, sodium_version_string());
	weft_mpw_str(w, "lmdb");
	weft_mpw_str(w, mdb_version(NULL, NULL, NULL));
	weft_mpw_str(w, "msgpack");
	weft_mpw_str(w, msgpack_version());
	return weft_rpc_ok(call);
}

static const char *weft_proto_name(const struct weft_node *node)
{
	return node->genesis_path ? node->genesis.protocol : "beb";
}

static const struct weft_rpc_done *rpc_status(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	struct weft_kv_stats st;
	int rc = weft_kv_stats(node->kv, &st);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_INTERNAL_ERROR, "database stats: %s", weft_strerror(rc));
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 11);
	weft_mpw_str(w, "node_id");
	weft_mpw_str(w, node->node_id);
	weft_mpw_str(w, "version");
	weft_mpw_str(w, WEFT_VERSION);
	weft_mpw_str(w, "pid");
	weft_mpw_uint(w, (uint64_t)getpid());
	weft_mpw_str(w, "uptime_s");
	weft_mpw_double(w, weft_node_uptime(node));
	weft_mpw_str(w, "data_dir");
	weft_mpw_str(w, node->datadir);
	weft_mpw_str(w, "committee");
	weft_mpw_map(w, 4);
	weft_mpw_str(w, "n");
	weft_mpw_uint(w, node->committee_n);
	weft_mpw_str(w, "f");
	weft_mpw_uint(w, node->committee_f);
	weft_mpw_str(w, "index");
	weft_mpw_uint(w, node->self_index);
	weft_mpw_str(w, "chain_id");
	weft_mpw_str(w, node->genesis.chain_id ? node->genesis.chain_id : "");
	weft_mpw_str(w, "peers");
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "total");
	weft_mpw_uint(w, node->committee_n - 1);
	weft_mpw_str(w, "connected");
	weft_mpw_uint(w, node->net ? weft_net_connected(node->net) : 0);
	weft_mpw_str(w, "refused");
	weft_mpw_uint(w, node->net ? weft_net_refused(node->net) : 0);
	weft_mpw_str(w, "protocol");
	weft_mpw_str(w, node->host ? weft_proto_name(node) : "");
	weft_mpw_str(w, "rpc_clients");
	weft_mpw_uint(w, weft_rpc_server_clients(node->rpc));
	weft_mpw_str(w, "db");
	weft_mpw_map(w, 5);
	weft_mpw_str(w, "map_size");
	weft_mpw_uint(w, st.map_size);
	weft_mpw_str(w, "used_bytes");
	weft_mpw_uint(w, st.used_bytes);
	weft_mpw_str(w, "page_size");
	weft_mpw_uint(w, st.page_size);
	weft_mpw_str(w, "entries");
	weft_mpw_uint(w, st.entries);
	weft_mpw_str(w, "readers");
	weft_mpw_uint(w, st.readers);
	weft_mpw_str(w, "store");
	if (node->host)
		weft_host_store_info(node->host, w);
	else
		weft_mpw_nil(w);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_peers(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "peers");
	weft_mpw_array(w, node->committee_n - 1);
	for (uint32_t i = 0; i < node->committee_n; i++) {
		if (i == node->self_index)
			continue;
		struct weft_net_peer_stats st = {.state = WEFT_NET_CONNECTING};
		if (node->net)
			weft_net_peer_stats(node->net, i, &st);
		char key[2 * WEFT_PK_LEN + 1], addr[300];
		weft_hex_encode(key, node->keys[i], WEFT_PK_LEN);
		snprintf(addr, sizeof(addr), "%s:%u", node->addrs[i].host, node->addrs[i].port);
		weft_mpw_map(w, 14);
		weft_mpw_str(w, "index");
		weft_mpw_uint(w, i);
		weft_mpw_str(w, "name");
		weft_mpw_str(w, node->genesis.nodes ? node->genesis.nodes[i].name : "");
		weft_mpw_str(w, "key");
		weft_mpw_str(w, key);
		weft_mpw_str(w, "address");
		weft_mpw_str(w, addr);
		weft_mpw_str(w, "state");
		weft_mpw_str(w, weft_net_state_name(st.state));
		weft_mpw_str(w, "bytes_in");
		weft_mpw_uint(w, st.bytes_in);
		weft_mpw_str(w, "bytes_out");
		weft_mpw_uint(w, st.bytes_out);
		weft_mpw_str(w, "frames_in");
		weft_mpw_uint(w, st.frames_in);
		weft_mpw_str(w, "frames_out");
		weft_mpw_uint(w, st.frames_out);
		weft_mpw_str(w, "rtt_ms");
		weft_mpw_double(w, (double)st.rtt_us / 1000.0);
		weft_mpw_str(w, "queue_bytes");
		weft_mpw_uint(w, st.queued_bytes);
		weft_mpw_str(w, "dropped");
		weft_mpw_uint(w, st.dropped);
		weft_mpw_str(w, "misbehaviour");
		weft_mpw_uint(w, st.misbehaviour);
		weft_mpw_str(w, "connects");
		weft_mpw_uint(w, st.connects);
	}
	return weft_rpc_ok(call);
}

/* Hands the data parameter to the node's protocol; shared by proto.request
 * and brb.broadcast. */
static const struct weft_rpc_done *request_protocol(struct weft_rpc_call *call, struct weft_node *node)
{
	struct weft_rpc_bytes data = {0};
	const struct weft_rpc_param spec[] = {{"data", WEFT_RPC_BYTES, true, &data, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad)
		return bad;
	if (data.len > node->cfg.net_max_frame / 2)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "data of %zu bytes exceeds the limit of %llu bytes",
				     data.len, (unsigned long long)(node->cfg.net_max_frame / 2));
	struct weft_mpw *w = weft_rpc_result(call);
	int rc = weft_host_request(node->host, data.ptr, data.len, w);
	if (rc != 0) {
		weft_mpw_reset(w);
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "the protocol refused the request: %s", weft_strerror(rc));
	}
	if (w->len == 0)
		weft_mpw_map(w, 0);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_proto_request(struct weft_rpc_call *call, void *ctx)
{
	return request_protocol(call, ctx);
}

static const struct weft_rpc_done *rpc_brb_broadcast(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const char *name = weft_proto_name(node);
	if (node->proto_ops && weft_brb_family(node->proto_ops))
		return request_protocol(call, node);
	return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE,
			     "this committee runs '%s', not a broadcast protocol (bracha, echo, coded, amortized): "
			     "set \"protocol\" in the genesis file",
			     name);
}

const struct weft_rpc_done *weft_node_rpc_subscribe(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	if (weft_rpc_subscribe(call, "proto.deliver") != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "too many subscriptions on this connection");
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "subscribed");
	weft_mpw_str(w, "proto.deliver");
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_proto_info(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	weft_host_info(node->host, weft_rpc_result(call));
	return weft_rpc_ok(call);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const struct weft_rpc_done *fault_layer_off(struct weft_rpc_call *call, struct weft_node *node)
{
	return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE,
			     node->committee_n == 1 ? "the fault layer needs peers (a genesis with n > 1)"
						    : "the fault layer is off: set [fault] enabled = true in the config");
}

static const struct weft_rpc_done *rpc_fault_set(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	if (node->faults == NULL)
		return fault_layer_off(call, node);
	/* fault.set takes named parameters only: one map, checked by the rule parser. */
	size_t plen;
	const uint8_t *params = weft_rpc_params_raw(call, &plen);
	struct weft_mp_reader r;
	uint32_t n;
	weft_mp_reader_init(&r, params, plen);
	if (weft_mp_read_array(&r, &n) != 0 || n != 1 || weft_mp_peek_type(&r) != WEFT_MP_MAP)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS,
				     "fault.set takes named parameters: action=..., peers=[...], ...");
	struct weft_nf_rule rule;
	char err[256];
	uint64_t now = now_ms();
	if (weft_nf_parse_rule(node->faults, r.p, weft_mp_remaining(&r), now, &rule, err, sizeof(err)) != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s", err);
	if (weft_nf_add(node->faults, &rule) != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "too many fault rules (at most %d)", WEFT_NF_MAX_RULES);
	weft_info("fault.set", "id=%u rules=%u", rule.id, weft_nf_count(node->faults));
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "id");
	weft_mpw_uint(w, rule.id);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_fault_clear(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	uint64_t id = 0;
	const struct weft_rpc_param spec[] = {{"id", WEFT_RPC_UINT, false, &id, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad)
		return bad;
	if (node->faults == NULL)
		return fault_layer_off(call, node);
	if (id > UINT32_MAX || weft_nf_clear(node->faults, (uint32_t)id) != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "no fault rule with id %llu", (unsigned long long)id);
	weft_info("fault.clear", "id=%llu rules=%u", (unsigned long long)id, weft_nf_count(node->faults));
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "rules");
	weft_mpw_uint(w, weft_nf_count(node->faults));
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_fault_list(struct weft_rpc_call *call, void *ctx)
{
	struct weft_node *node = ctx;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	if (node->faults == NULL)
		return fault_layer_off(call, node);
	struct weft_mpw *w = weft_rpc_result(call);
	uint64_t stats[6];
	weft_nf_stats(node->faults, stats);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "rules");
	weft_nf_list(node->faults, now_ms(), w);
	weft_mpw_str(w, "acted");
	weft_mpw_map(w, 6);
	for (int i = 0; i < 6; i++) {
		weft_mpw_str(w, weft_nf_action_name((enum weft_nf_action)i));
		weft_mpw_uint(w, stats[i]);
	}
	return weft_rpc_ok(call);
}

static void write_method(struct weft_mpw *w, const struct weft_rpc_method *m)
{
	weft_mpw_map(w, 4);
	weft_mpw_str(w, "name");
	weft_mpw_str(w, m->name);
	weft_mpw_str(w, "params");
	weft_mpw_str(w, m->params);
	weft_mpw_str(w, "help");
	weft_mpw_str(w, m->help);
	weft_mpw_str(w, "admin");
	weft_mpw_bool(w, (m->flags & WEFT_RPC_ADMIN) != 0);
}

static const struct weft_rpc_done *rpc_help(struct weft_rpc_call *call, void *ctx)
{
	struct weft_rpc_bytes name = {0};
	bool have_name;
	const struct weft_rpc_param spec[] = {{"method", WEFT_RPC_STR, false, &name, &have_name}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad)
		return bad;
	size_t matches = 0;
	struct weft_node *node = ctx;
	for (size_t i = 0; i < node->nmethods; i++)
		matches += !have_name || (strlen(node->methods[i].name) == name.len &&
					  memcmp(node->methods[i].name, name.ptr, name.len) == 0);
	if (matches == 0)
		return weft_rpc_fail(call, WEFT_RPC_METHOD_NOT_FOUND, "unknown method '%.*s'",
				     (int)(name.len > 100 ? 100 : name.len), (const char *)name.ptr);
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "methods");
	weft_mpw_array(w, (uint32_t)matches);
	for (size_t i = 0; i < node->nmethods; i++)
		if (!have_name || (strlen(node->methods[i].name) == name.len &&
				   memcmp(node->methods[i].name, name.ptr, name.len) == 0))
			write_method(w, &node->methods[i]);
	return weft_rpc_ok(call);
}

static void stop_after_reply(void *arg)
{
	weft_node_request_stop(arg);
}

static const struct weft_rpc_done *rpc_stop(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	weft_info("node.stop_requested", "via=rpc");
	weft_rpc_after_reply(call, stop_after_reply, ctx);
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "stopping");
	weft_mpw_bool(w, true);
	return weft_rpc_ok(call);
}

const struct weft_rpc_method weft_node_core_methods[] = {
	{"help", rpc_help, "[method=STR]", "list the RPC methods, or describe one", WEFT_RPC_ADMIN},
	{"version", rpc_version, "", "weft version, RPC protocol revision and library versions", WEFT_RPC_ADMIN},
	{"status", rpc_status, "", "node id, uptime, committee size, data dir and database usage", WEFT_RPC_ADMIN},
	{"stop", rpc_stop, "", "stop the daemon cleanly after replying", WEFT_RPC_ADMIN},
	{"peers", rpc_peers, "", "per peer: key, address, state, bytes and frames in/out, RTT, queue, misbehaviour", 0},
	{"proto.request", rpc_proto_request, "data=BYTES",
	 "hand data to the node's protocol (a payload to broadcast, a transaction)", 0},
	{"proto.subscribe", weft_node_rpc_subscribe, "",
	 "receive [2, \"proto.deliver\", [{origin, seq, invalid, data}]] notifications on this connection", 0},
	{"brb.broadcast", rpc_brb_broadcast, "data=BYTES",
	 "broadcast data with the committee's BRB protocol; returns {seq}; deliveries arrive as proto.deliver", 0},
	{"brb.subscribe", weft_node_rpc_subscribe, "", "the same as proto.subscribe: delivery notifications on this connection", 0},
	{"proto.info", rpc_proto_info, "", "the protocol's counters and state, and a running hash of its deliveries", 0},
	{"fault.set", rpc_fault_set, "action=STR [peers=[UINT]] [direction=in|out|both] [probability=NUM] "
				     "[delay_ms=UINT] [jitter_ms=UINT] [duration_ms=UINT]",
	 "add a transport fault rule (drop, delay, duplicate, reorder, corrupt, partition)", 0},
	{"fault.clear", rpc_fault_clear, "[id=UINT]", "remove one fault rule, or all of them", 0},
	{"fault.list", rpc_fault_list, "", "the live fault rules and how many messages each action hit", 0},
};
const size_t weft_node_ncore_methods = sizeof(weft_node_core_methods) / sizeof(weft_node_core_methods[0]);
