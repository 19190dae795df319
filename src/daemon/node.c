/* node.c - weftd's life cycle: configuration, the data dir and its lock,
 * the node identity, the LMDB environment, signals, the RPC socket, and a
 * clean shutdown that closes LMDB and unlinks the socket.
 *
 * Data dir layout:
 *   weftd.lock     flock()ed while a weftd runs; holds its pid
 *   identity.key   Ed25519 seed, hex, mode 0600
 *   db/            LMDB environment (data.mdb, lock.mdb)
 *   rpc.sock       the RPC socket, mode 0600
 *   weft.conf      optional configuration */
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
	if (rc != 0)
		return rc;

	node->base = event_base_new();
	if (node->base == NULL)
		abort();
	const int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
	for (int i = 0; i < 3; i++) {
		node->signals[i] = evsignal_new(node->base, sigs[i], on_signal, node);
		evsignal_add(node->signals[i], NULL);
	}
	signal(SIGPIPE, SIG_IGN);

	char *sock = path_join(node->datadir, "rpc.sock");
	struct weft_rpc_opts ropts = {
		.max_frame = node->cfg.rpc_max_frame,
		.max_clients = (unsigned int)node->cfg.rpc_max_clients,
		.partial_timeout_ms = (unsigned int)node->cfg.rpc_partial_timeout_ms,
	};
	rc = weft_rpc_server_start(&node->rpc, node->base, sock, &ropts, weft_node_methods, weft_node_nmethods,
				   node);
	if (rc != 0)
		fprintf(stderr, "weftd: cannot serve RPC socket %s: %s\n", sock, weft_strerror(rc));
	free(sock);
	if (rc == 0)
		weft_info("node.start", "node_id=%s datadir=%s pid=%ld n=%u", node->node_id, node->datadir,
			  (long)getpid(), node->committee_n);
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
	weft_rpc_server_stop(node->rpc);
	node->rpc = NULL;
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
