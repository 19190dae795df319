/* metrics_text.c - weftd's Prometheus exposition: node, RPC, per-peer
 * transport counters, fault-layer actions and the protocol's own counters. */
#include <event2/buffer.h>
#include <string.h>

#include "node.h"

static void protocol_metric(void *arg, const char *name, int64_t v)
{
	struct evbuffer *out = arg;
	char clean[128];
	size_t i = 0;
	/* Metric names allow [a-zA-Z0-9_]: map the rest (dots) to '_'. */
	for (; name[i] && i < sizeof(clean) - 1; i++) {
		char c = name[i];
		clean[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
	}
	clean[i] = '\0';
	evbuffer_add_printf(out, "weft_protocol_%s %lld\n", clean, (long long)v);
}

void weft_node_render_metrics(void *arg, struct evbuffer *out)
{
	struct weft_node *node = arg;
	evbuffer_add_printf(out, "# HELP weft_uptime_seconds Seconds since weftd started.\n"
				 "# TYPE weft_uptime_seconds gauge\nweft_uptime_seconds %.3f\n",
			    weft_node_uptime(node));
	evbuffer_add_printf(out, "# TYPE weft_committee_size gauge\nweft_committee_size %u\n", node->committee_n);
	evbuffer_add_printf(out, "# TYPE weft_rpc_clients gauge\nweft_rpc_clients %u\n",
			    node->rpc ? weft_rpc_server_clients(node->rpc) : 0);
	evbuffer_add_printf(out, "# TYPE weft_delivered_total counter\nweft_delivered_total %llu\n",
			    (unsigned long long)(node->host ? weft_host_delivered(node->host) : 0));
	if (node->net) {
		evbuffer_add_printf(out, "# TYPE weft_peers_connected gauge\nweft_peers_connected %u\n",
				    weft_net_connected(node->net));
		evbuffer_add_printf(out, "# TYPE weft_peer_refused_total counter\nweft_peer_refused_total %llu\n",
				    (unsigned long long)weft_net_refused(node->net));
		static const char *const fields[] = {"connected", "bytes_in_total",      "bytes_out_total",
						     "frames_in_total", "frames_out_total", "queue_bytes",
						     "dropped_total",   "misbehaviour_total", "rtt_seconds"};
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
			evbuffer_add_printf(out, "# TYPE weft_peer_%s %s\n", fields[f],
					    strstr(fields[f], "_total") ? "counter" : "gauge");
			for (uint32_t i = 0; i < node->committee_n; i++) {
				struct weft_net_peer_stats st;
				if (weft_net_peer_stats(node->net, i, &st) != 0)
					continue;
				double v[] = {st.state == WEFT_NET_CONNECTED, (double)st.bytes_in, (double)st.bytes_out,
					      (double)st.frames_in, (double)st.frames_out, (double)st.queued_bytes,
					      (double)st.dropped, (double)st.misbehaviour, (double)st.rtt_us / 1e6};
				evbuffer_add_printf(out, "weft_peer_%s{peer=\"%u\"} %.6g\n", fields[f], i, v[f]);
			}
		}
	}
	if (node->faults) {
		uint64_t stats[6];
		weft_nf_stats(node->faults, stats);
		evbuffer_add_printf(out, "# TYPE weft_fault_actions_total counter\n");
		for (int i = 0; i < 6; i++)
			evbuffer_add_printf(out, "weft_fault_actions_total{action=\"%s\"} %llu\n", weft_nf_action_name((enum weft_nf_action)i),
					    (unsigned long long)stats[i]);
	}
	if (node->host) {
		evbuffer_add_printf(out,
				    "# HELP weft_store_paused 1 while a failed commit (disk or map full) pauses the node.\n"
				    "# TYPE weft_store_paused gauge\nweft_store_paused %d\n"
				    "# TYPE weft_store_failed_commits_total counter\nweft_store_failed_commits_total %llu\n",
				    weft_host_store_error(node->host) != 0,
				    (unsigned long long)weft_host_failed_commits(node->host));
		weft_host_metrics(node->host, protocol_metric, out);
	}
}
