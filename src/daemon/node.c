/* node.c - weftd's life cycle: configuration, the data dir and its lock,
 * the node identity, the LMDB environment, signals, the RPC socket, and a
 * clean shutdown that closes LMDB and unlinks the socket.
 *
 * Data dir layout:
 *   weftd.lock     flock()ed while a weftd runs; holds its pid
 *   identity.key   Ed25519 seed, hex, mode 0600
 *   db/            LMDB environment (data.mdb, lock.mdb)
 *   chunks/        the chunk store's LMDB environment (storage.c): shares,
 *                  the catalogue of files put here, put journals
 *   rpc.sock       the RPC socket, mode 0600
 *   weft.conf      optional configuration
 *   genesis        named by [node] genesis (relative to the data dir) */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node.h"
#include "weft/err.h"
#include "weft/log.h"

static char *path_join(const char *dir, const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

int weft_node_configure(struct weft_node *node, const struct weft_node_args *args)
{
	char err[512];
	weft_config_defaults(&node->cfg);
	const char *path = args->config_path;
	char *implicit = NULL;
	if (path == NULL) {
		implicit = path_join(args->datadir, "weft.conf");
		if (access(implicit, F_OK) == 0)
			path = implicit;
	}
	int rc = 0;
	if (path)
		rc = weft_config_load(&node->cfg, path, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "weftd: config: %s\n", err);
	free(implicit);
	return rc;
}

static int take_lock(struct weft_node *node)
{
	char *path = path_join(node->datadir, "weftd.lock");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		fprintf(stderr, "weftd: cannot open lock file %s: %s\n", path, strerror(e));
		free(path);
		return weft_err_from_errno(e);
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		char pid[32] = "";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		if (n > 0)
			pid[n] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr, "weftd: data dir %s is in use by another weftd (pid %s, lock %s); stop it first\n",
			node->datadir, pid[0] ? pid : "?", path);
		close(fd);
		free(path);
		return WEFT_ELOCKED;
	}
	char pid[32];
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
		int e = errno;
		fprintf(stderr, "weftd: cannot write lock file %s: %s\n", path, strerror(e));
		close(fd);
		free(path);
		return weft_err_from_errno(e);
	}
	free(path);
	node->lock_fd = fd;
	return 0;
}

static int load_identity(struct weft_node *node)
{
	char *path = path_join(node->datadir, "identity.key");
	int rc = weft_identity_load(path, &node->id);
	if (rc == WEFT_NOTFOUND) {
		node->id = weft_identity_generate();
		rc = weft_identity_save(node->id, path);
		if (rc == 0)
			weft_info("node.identity_created", "path=%s", path);
	}
	if (rc == WEFT_EPERM)
		fprintf(stderr, "weftd: identity key %s is readable by group or others (chmod 600 it), or unreadable\n",
			path);
	else if (rc != 0)
		fprintf(stderr, "weftd: identity key %s: %s\n", path, weft_strerror(rc));
	else
		weft_hex_encode(node->node_id, node->id->pk, WEFT_PK_LEN);
	free(path);
	return rc;
}

/* Opens LMDB and checks that the database belongs to this identity. */
static int open_db(struct weft_node *node)
{
	char *dir = path_join(node->datadir, "db");
	int rc = 0;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		rc = weft_err_from_errno(errno);
		fprintf(stderr, "weftd: cannot create %s: %s\n", dir, strerror(errno));
		free(dir);
		return rc;
	}
	struct weft_kv_opts opts = {.map_size = node->cfg.db_map_size, .no_sync = node->cfg.db_no_sync};
	rc = weft_kv_open(&node->kv, dir, &opts);
	if (rc == 0)
		rc = weft_kv_db(node->kv, "meta", &node->meta_db);
	struct weft_kv_txn *txn = NULL;
	if (rc == 0)
		rc = weft_kv_begin(node->kv, true, &txn);
	if (rc == 0) {
		const void *val;
		size_t vlen;
		rc = weft_kv_get(txn, node->meta_db, "node_id", 7, &val, &vlen);
		if (rc == WEFT_NOTFOUND) {
			rc = weft_kv_put(txn, node->meta_db, "node_id", 7, node->id->pk, WEFT_PK_LEN);
			if (rc == 0)
				rc = weft_kv_commit(txn);
			else
				weft_kv_abort(txn);
			txn = NULL;
		} else if (rc == 0 && (vlen != WEFT_PK_LEN || memcmp(val, node->id->pk, WEFT_PK_LEN) != 0)) {
			fprintf(stderr, "weftd: database %s belongs to another node identity than %s/identity.key\n",
				dir, node->datadir);
			rc = WEFT_ECORRUPT;
		}
		weft_kv_abort(txn);
	}
	if (rc != 0 && rc != WEFT_ECORRUPT)
		fprintf(stderr, "weftd: database %s: %s\n", dir, weft_strerror(rc));
	free(dir);
	return rc;
}

/* Loads the genesis file (if configured) and fills the committee. */
static int load_committee(struct weft_node *node)
{
	char err[512];
	if (node->cfg.node_genesis == NULL || node->cfg.node_genesis[0] == '\0') {
		node->committee_n = 1;
		node->self_index = 0;
		node->keys = calloc(1, sizeof(*node->keys));
		node->addrs = calloc(1, sizeof(*node->addrs));
		if (node->keys == NULL || node->addrs == NULL)
			abort();
		memcpy(node->keys[0], node->id->pk, WEFT_PK_LEN);
		node->addrs[0] = (struct weft_net_peer_addr){"127.0.0.1", 0};
		return 0;
	}
	node->genesis_path = node->cfg.node_genesis[0] == '/' ? strdup(node->cfg.node_genesis)
							       : path_join(node->datadir, node->cfg.node_genesis);
	if (node->genesis_path == NULL)
		abort();
	int rc = weft_genesis_load(&node->genesis, node->genesis_path, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "weftd: genesis: %s\n", err);
		return WEFT_ECONFIG;
	}
	int idx = weft_genesis_index(&node->genesis, node->id->pk);
	if (idx < 0) {
		fprintf(stderr, "weftd: this node's key %s is not in the committee of %s\n", node->node_id,
			node->genesis_path);
		return WEFT_ECONFIG;
	}
	node->self_index = (uint32_t)idx;
	node->committee_n = node->genesis.n;
	node->keys = calloc(node->committee_n, sizeof(*node->keys));
	node->addrs = calloc(node->committee_n, sizeof(*node->addrs));
	if (node->keys == NULL || node->addrs == NULL)
		abort();
	for (uint32_t i = 0; i < node->committee_n; i++) {
		memcpy(node->keys[i], node->genesis.nodes[i].pk, WEFT_PK_LEN);
		node->addrs[i] = (struct weft_net_peer_addr){node->genesis.nodes[i].host, node->genesis.nodes[i].port};
	}
	return 0;
}

static void on_peer_message(void *ctx, uint32_t from, const uint8_t *msg, size_t len)
{
	struct weft_node *node = ctx;
	if (node->host)
		weft_host_on_message(node->host, from, msg, len);
}

/* The peer transport (for n > 1), then the protocol host that uses it. */
/* A protocol could not be rebuilt from its store: stop with an error
 * rather than serve a state nobody can vouch for. */
static void on_host_fatal(void *arg, int rc)
{
	struct weft_node *node = arg;
	node->exit_code = 1;
	event_base_loopexit(node->base, NULL);
}

static int start_protocols(struct weft_node *node)
{
	const char *name = node->genesis_path ? node->genesis.protocol : "beb";
	const struct weft_proto_ops *ops = weft_proto_find(name);
	if (ops == NULL) {
		fprintf(stderr, "weftd: genesis %s: $.protocol: unknown protocol '%s'\n", node->genesis_path, name);
		return WEFT_ECONFIG;
	}
	const uint8_t *params = node->genesis.params;
	size_t plen = node->genesis.plen;
	const char *chain_given;
	uint32_t chain_len;
	if (node->genesis.chain_id && weft_params_str(params, plen, "chain_id", &chain_given, &chain_len) == WEFT_NOTFOUND) {
		/* The ledger binds channel signatures to the committee's chain id. */
		struct weft_mpw v;
		weft_mpw_init(&v);
		weft_mpw_str(&v, node->genesis.chain_id);
		node->chain_params = weft_params_with(params, plen, "chain_id", v.buf, v.len, &plen);
		weft_mpw_free(&v);
		params = node->chain_params;
	}
	if (node->strategy) {
		/* The same strategy the simulator's adversary fault runs. */
		const struct weft_proto_strategy *st = weft_proto_strategy_find(ops, node->strategy);
		if (st == NULL) {
			fprintf(stderr, "weftd: --byzantine: protocol %s registers no strategy '%s' (it has:", ops->name,
				node->strategy);
			for (const struct weft_proto_strategy *x = ops->strategies; x && x->name; x++)
				fprintf(stderr, " %s", x->name);
			fprintf(stderr, "; and every protocol: omission, corrupt, equivocate)\n");
			node->exit_code = 2; /* a usage error */
			return WEFT_ECONFIG;
		}
		ops = st->ops;
		node->strategy_params = weft_params_with_adversary(params, plen, NULL, 0, &plen);
		params = node->strategy_params;
	}
	int rc;
	if (node->committee_n > 1) {
		if (node->cfg.fault_enabled)
			node->faults = weft_nf_new(node->committee_n, (uint64_t)getpid() ^ (uint64_t)node->started.tv_nsec);
		char host[256];
		uint16_t port = 0;
		bool own_listen = node->cfg.node_listen && node->cfg.node_listen[0];
		if (own_listen && weft_parse_hostport(node->cfg.node_listen, host, sizeof(host), &port) != 0) {
			fprintf(stderr, "weftd: config: [node] listen: '%s' is not host:port\n", node->cfg.node_listen);
			return WEFT_ECONFIG;
		}
		struct weft_net_opts no = {
			.base = node->base,
			.self = node->id,
			.self_index = node->self_index,
			.n = node->committee_n,
			.keys = (const uint8_t(*)[WEFT_PK_LEN])node->keys,
			.addrs = node->addrs,
			.listen_host = own_listen ? host : NULL,
			.listen_port = port,
			.max_frame = node->cfg.net_max_frame,
			.queue_hwm = node->cfg.net_queue_hwm,
			.queue_max = node->cfg.net_queue_max,
			.handshake_timeout_ms = (uint32_t)node->cfg.net_handshake_timeout_ms,
			.idle_timeout_ms = (uint32_t)node->cfg.net_idle_timeout_ms,
			.keepalive_ms = (uint32_t)node->cfg.net_keepalive_ms,
			.reconnect_min_ms = (uint32_t)node->cfg.net_reconnect_min_ms,
			.reconnect_max_ms = (uint32_t)node->cfg.net_reconnect_max_ms,
			.faults = node->faults,
			.on_message = on_peer_message,
			.ctx = node,
		};
		rc = weft_net_start(&node->net, &no);
		if (rc != 0) {
			const struct weft_net_peer_addr *a = &node->addrs[node->self_index];
			fprintf(stderr, "weftd: cannot listen for peers on %s:%u: %s\n", own_listen ? host : a->host,
				own_listen ? port : a->port, weft_strerror(rc));
			return rc;
		}
	}
	if (ops->command != NULL) {
		rc = weft_storage_open(&node->storage, node);
		if (rc == 0)
			rc = weft_channels_open(&node->channels, node);
		if (rc != 0)
			return rc;
	}
	if (node->trace_path) {
		node->trace = fopen(node->trace_path, "w");
		if (node->trace == NULL) {
			fprintf(stderr, "weftd: --trace %s: %s\n", node->trace_path, strerror(errno));
			return WEFT_EIO;
		}
	}
	struct weft_host_opts ho = {
		.shares = node->storage ? weft_storage_shares(node->storage) : NULL,
		.wallets = node->channels ? weft_channels_wallets(node->channels) : NULL,
		.on_event = node->channels ? weft_channels_on_event : NULL,
		.event_arg = node->channels,
		.base = node->base,
		.ops = ops,
		.params = params,
		.plen = plen,
		.self = node->self_index,
		.n = node->committee_n,
		.keys = (const uint8_t(*)[32])node->keys,
		.id = node->id,
		.kv = node->kv,
		.net = node->net,
		.byzantine = node->byzantine,
		.trace = node->trace,
		.on_fatal = on_host_fatal,
		.fatal_arg = node,
	};
	node->proto_ops = ops;
	rc = weft_host_start(&node->host, &ho);
	if (rc != 0)
		fprintf(stderr, "weftd: protocol %s failed to start: %s\n", name, weft_strerror(rc));
	return rc;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct weft_node *node = arg;
	if (sig == SIGHUP) {
		int rc = weft_log_reopen();
		weft_info("node.sighup", "log_reopen=%s", rc ? weft_strerror(rc) : "ok");
		return;
	}
	weft_info("node.signal", "signal=%s action=stop", sig == SIGTERM ? "TERM" : "INT");
	weft_node_request_stop(node);
}

int weft_node_open(struct weft_node *node)
{
	node->lock_fd = -1;
	clock_gettime(CLOCK_MONOTONIC, &node->started);
	node->committee_n = 1;
	node->committee_f = 0;

	weft_log_set_level(node->cfg.log_level);
	if (node->cfg.log_file && strcmp(node->cfg.log_file, "-") != 0) {
		/* A relative log path is relative to the data dir. */
		char *path = node->cfg.log_file[0] == '/' ? strdup(node->cfg.log_file)
							  : path_join(node->datadir, node->cfg.log_file);
		int rc = weft_log_open(path);
		if (rc != 0)
			fprintf(stderr, "weftd: cannot open log file %s: %s\n", path, weft_strerror(rc));
		free(path);
		if (rc != 0)
			return rc;
	}
	int rc = take_lock(node);
	if (rc == 0)
		rc = load_identity(node);
	if (rc == 0)
		rc = open_db(node);
	if (rc == 0)
		rc = load_committee(node);
	if (rc != 0)
		return rc;
	node->committee_f = (node->committee_n - 1) / 3;

	node->base = event_base_new();
	if (node->base == NULL)
		abort();
	const int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
	for (int i = 0; i < 3; i++) {
		node->signals[i] = evsignal_new(node->base, sigs[i], on_signal, node);
		evsignal_add(node->signals[i], NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	rc = start_protocols(node);
	if (rc != 0)
		return rc;

	char *sock = path_join(node->datadir, "rpc.sock");
	struct weft_rpc_opts ropts = {
		.max_frame = node->cfg.rpc_max_frame,
		.max_clients = (unsigned int)node->cfg.rpc_max_clients,
		.partial_timeout_ms = (unsigned int)node->cfg.rpc_partial_timeout_ms,
		.idle_timeout_ms = (unsigned int)node->cfg.rpc_idle_timeout_ms,
		.max_outbuf = (size_t)node->cfg.rpc_max_outbuf,
		.subscriber_lag_ms = (unsigned int)node->cfg.rpc_subscriber_lag_ms,
	};
	rc = weft_node_build_methods(node);
	if (rc == 0)
		rc = weft_rpc_server_start(&node->rpc, node->base, sock, &ropts, node->methods, node->nmethods, node);
	if (rc != 0)
		fprintf(stderr, "weftd: cannot serve RPC socket %s: %s\n", sock, weft_strerror(rc));
	else
		weft_host_set_rpc(node->host, node->rpc);
	free(sock);
	if (rc == 0 && node->cfg.metrics_listen && node->cfg.metrics_listen[0]) {
		char host[256];
		uint16_t port;
		if (weft_parse_hostport(node->cfg.metrics_listen, host, sizeof(host), &port) != 0) {
			fprintf(stderr, "weftd: config: [metrics] listen: '%s' is not host:port\n",
				node->cfg.metrics_listen);
			rc = WEFT_ECONFIG;
		} else {
			rc = weft_metrics_start(&node->metrics, node->base, host, port, weft_node_render_metrics, node);
			if (rc != 0)
				fprintf(stderr, "weftd: cannot serve metrics on %s\n", node->cfg.metrics_listen);
		}
	}
	if (rc == 0)
		weft_info("node.start", "node_id=%s datadir=%s pid=%ld n=%u index=%u", node->node_id, node->datadir,
			  (long)getpid(), node->committee_n, node->self_index);
	return rc;
}

int weft_node_run(struct weft_node *node)
{
	event_base_dispatch(node->base);
	weft_info("node.stop", "node_id=%s exit=%d", node->node_id, node->exit_code);
	return node->exit_code;
}

void weft_node_request_stop(struct weft_node *node)
{
	event_base_loopexit(node->base, NULL);
}

double weft_node_uptime(const struct weft_node *node)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - node->started.tv_sec) + (now.tv_nsec - node->started.tv_nsec) / 1e9;
}

void weft_node_close(struct weft_node *node)
{
	weft_metrics_stop(node->metrics);
	node->metrics = NULL;
	weft_rpc_server_stop(node->rpc);
	node->rpc = NULL;
	free(node->methods);
	node->methods = NULL;
	free(node->strategy_params);
	node->strategy_params = NULL;
	free(node->chain_params);
	node->chain_params = NULL;
	weft_net_stop(node->net);
	node->net = NULL;
	weft_host_stop(node->host);
	node->host = NULL;
	if (node->trace)
		fclose(node->trace);
	node->trace = NULL;
	weft_storage_close(node->storage);
	weft_channels_close(node->channels);
	node->storage = NULL;
	node->channels = NULL;
	weft_nf_free(node->faults);
	node->faults = NULL;
	weft_genesis_free(&node->genesis);
	free(node->genesis_path);
	node->genesis_path = NULL;
	free(node->keys);
	node->keys = NULL;
	free(node->addrs);
	node->addrs = NULL;
	for (int i = 0; i < 3; i++) {
		if (node->signals[i])
			event_free(node->signals[i]);
		node->signals[i] = NULL;
	}
	if (node->base)
		event_base_free(node->base);
	node->base = NULL;
	weft_kv_close(node->kv);
	node->kv = NULL;
	weft_identity_free(node->id);
	node->id = NULL;
	if (node->lock_fd >= 0)
		close(node->lock_fd);
	node->lock_fd = -1;
	weft_config_free(&node->cfg);
	weft_log_close();
}
