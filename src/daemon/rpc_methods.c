/* rpc_methods.c - the table of weftd's RPC methods and their handlers.
 * Every method is one row {name, handler, params, help}; docs/rpc.md
 * describes each.  Handlers end in exactly one weft_rpc_ok/fail/pending. */
#include <event2/event.h>
#include <lmdb.h>
#include <msgpack.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

#include "node.h"
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
	weft_mpw_map(w, 8);
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
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "n");
	weft_mpw_uint(w, node->committee_n);
	weft_mpw_str(w, "f");
	weft_mpw_uint(w, node->committee_f);
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
	return weft_rpc_ok(call);
}

static void write_method(struct weft_mpw *w, const struct weft_rpc_method *m)
{
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "name");
	weft_mpw_str(w, m->name);
	weft_mpw_str(w, "params");
	weft_mpw_str(w, m->params);
	weft_mpw_str(w, "help");
	weft_mpw_str(w, m->help);
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
	for (size_t i = 0; i < weft_node_nmethods; i++)
		matches += !have_name || (strlen(weft_node_methods[i].name) == name.len &&
					  memcmp(weft_node_methods[i].name, name.ptr, name.len) == 0);
	if (matches == 0)
		return weft_rpc_fail(call, WEFT_RPC_METHOD_NOT_FOUND, "unknown method '%.*s'",
				     (int)(name.len > 100 ? 100 : name.len), (const char *)name.ptr);
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "methods");
	weft_mpw_array(w, (uint32_t)matches);
	for (size_t i = 0; i < weft_node_nmethods; i++)
		if (!have_name || (strlen(weft_node_methods[i].name) == name.len &&
				   memcmp(weft_node_methods[i].name, name.ptr, name.len) == 0))
			write_method(w, &weft_node_methods[i]);
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

const struct weft_rpc_method weft_node_methods[] = {
	{"help", rpc_help, "[method=STR]", "list the RPC methods, or describe one"},
	{"version", rpc_version, "", "weft version, RPC protocol revision and library versions"},
	{"status", rpc_status, "", "node id, uptime, committee size, data dir and database usage"},
	{"stop", rpc_stop, "", "stop the daemon cleanly after replying"},
};
const size_t weft_node_nmethods = sizeof(weft_node_methods) / sizeof(weft_node_methods[0]);
