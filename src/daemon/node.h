/* node.h - weftd's process state and the functions that set it up and tear
 * it down (node.c), shared with the RPC method table (rpc_methods.c). */
#ifndef WEFT_DAEMON_NODE_H
#define WEFT_DAEMON_NODE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "channels.h"
#include "host.h"
#include "storage.h"
#include "weft/config.h"
#include "weft/crypto.h"
#include "weft/genesis.h"
#include "weft/kv.h"
#include "weft/metrics.h"
#include "weft/net.h"
#include "weft/netfault.h"
#include "weft/rpc.h"

struct event_base;
struct event;
struct evbuffer;

struct weft_node {
	struct weft_config cfg;
	char *datadir;          /* absolute path */
	int lock_fd;
	struct weft_identity *id;
	char node_id[2 * WEFT_PK_LEN + 1];
	struct weft_kv *kv;
	weft_kv_dbi meta_db;
	struct event_base *base;
	struct weft_rpc_server *rpc;
	struct event *signals[3];
	struct timespec started; /* CLOCK_MONOTONIC */
	uint32_t committee_n;
	uint32_t committee_f;
	uint32_t self_index;
	struct weft_genesis genesis;       /* zeroed for a one-node committee */
	char *genesis_path;                /* NULL: no genesis */
	uint8_t (*keys)[WEFT_PK_LEN];      /* committee keys */
	struct weft_net_peer_addr *addrs;  /* committee addresses */
	struct weft_net *net;              /* NULL for a one-node committee */
	struct weft_nf *faults;            /* NULL unless [fault] enabled */
	struct weft_host *host;
	struct weft_storage *storage;      /* NULL unless the protocol has a storage service */
	struct weft_channels *channels;    /* wallets and channel RPC; NULL likewise */
	const struct weft_proto_ops *proto_ops; /* the hosted protocol (stack) */
	struct weft_rpc_method *methods;        /* core methods + the protocol's (rpc_proto.c) */
	size_t nmethods;
	struct weft_metrics *metrics;
	enum weft_byzantine byzantine;
	const char *strategy;              /* --byzantine NAME of a protocol strategy, or NULL */
	uint8_t *strategy_params;          /* the genesis params + "adversary" (owned) */
	uint8_t *chain_params;             /* the genesis params + "chain_id" (owned) */
	const char *trace_path;            /* --trace FILE, or NULL */
	FILE *trace;                       /* the protocol trace (host.c), open while the host runs */
	int exit_code;
};

struct weft_node_args {
	const char *datadir;
	const char *config_path;  /* NULL: DATADIR/weft.conf when present */
	enum weft_byzantine byzantine;
	const char *strategy;     /* a Byzantine strategy the protocol registers, or NULL */
};

/* Loads the configuration into node->cfg.  0, or WEFT_ECONFIG/WEFT_NOTFOUND
 * with the message already printed to stderr. */
int weft_node_configure(struct weft_node *node, const struct weft_node_args *args);
/* Creates or opens the data dir, takes its lock, loads or creates the
 * identity, opens LMDB, loads the genesis file, starts the protocol host,
 * the peer transport, the RPC socket and the metrics endpoint.  0 or a
 * negative code, with a message naming the path already printed. */
int weft_node_open(struct weft_node *node);
/* Runs the event loop until stop, SIGTERM or SIGINT. */
int weft_node_run(struct weft_node *node);
/* Asks the loop to finish (safe from any callback). */
void weft_node_request_stop(struct weft_node *node);
/* Closes everything opened, in reverse order; accepts a half-opened node. */
void weft_node_close(struct weft_node *node);
double weft_node_uptime(const struct weft_node *node);

/* Renders the Prometheus exposition text (metrics_text.c). */
void weft_node_render_metrics(void *node, struct evbuffer *out);

/* weftd's own RPC methods (rpc_methods.c). */
extern const struct weft_rpc_method weft_node_core_methods[];
extern const size_t weft_node_ncore_methods;
/* Subscribes the calling connection to proto.deliver (rpc_methods.c). */
const struct weft_rpc_done *weft_node_rpc_subscribe(struct weft_rpc_call *call, void *ctx);
/* Builds node->methods: the core methods plus those the running protocol
 * declares (rpc_proto.c).  0, or WEFT_EINVAL when a name is declared twice. */
int weft_node_build_methods(struct weft_node *node);

#endif
