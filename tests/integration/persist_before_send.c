/* persist_before_send.c - weftd's protocol host (src/daemon/host.c) lets no
 * message leave before the step that made it is durable, group commit or
 * not; checked by killing the node at random points.
 *
 * The node under test is a child process running the real host, on real
 * LMDB (fsync'd) and the real peer transport, with a probe protocol: each
 * step (a timer every millisecond, or a message from the peer) stores a
 * record "k" n and sends n to the peer.  The peer is this process, node 1
 * of the committee, on its own transport: it echoes every n back (so most
 * steps are peer messages, which the host groups within an event loop
 * turn) and remembers it.  After a random 100 to 700 ms the child is killed
 * with SIGKILL; then this process opens the child's database: the record
 * of every n that reached the peer must be there.
 *
 * The transport writes to its sockets only when the event loop runs, after
 * the host's commit returned, so a kill alone cannot tell a host that
 * queued a step's messages before committing it from one that queued them
 * after.  A commit that fails can: in the last rounds the child's database
 * is 1 MiB, so its commits fail (the store is full) under the same load,
 * and the messages of those steps must never leave.  A host that queued
 * messages before its commit was tried by hand: the kill rounds passed, the
 * full-store rounds each reported the failed groups' messages missing. */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/daemon/host.h"
#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/kv.h"
#include "weft/net.h"

#define ROUNDS 8
#define FULL_STORE_ROUNDS 2 /* the last ones */
#define SMALL_MAP (1 << 20)
#define TIMER_PROBE 1

/* ---- the probe protocol (in the child) ---- */

struct probe {
	struct weft_env *env;
	uint64_t next;
};

/* One step's work: a record, then the message naming it. */
static void probe_step(struct probe *p)
{
	uint8_t key[9] = {'k'}, msg[8];
	uint64_t n = p->next++;
	weft_be64_put(key + 1, n);
	weft_be64_put(msg, n);
	p->env->ops->kv_put(p->env, key, sizeof(key), msg, sizeof(msg));
	weft_env_send(p->env, 1, "probe", msg, sizeof(msg));
}

static int probe_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct probe *p = state;
	p->env = env;
	return 0;
}

static int probe_start(void *state)
{
	struct probe *p = state;
	return p->env->ops->set_timer(p->env, TIMER_PROBE, 1000);
}

static void probe_on_timer(void *state, uint64_t id)
{
	struct probe *p = state;
	probe_step(p);
	p->env->ops->set_timer(p->env, TIMER_PROBE, 1000);
}

static int probe_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	probe_step(state);
	return 0;
}

static const struct weft_proto_ops probe_ops = {
	.abi = WEFT_PROTO_ABI,
	.name = "persist-probe",
	.state_size = sizeof(struct probe),
	.init = probe_init,
	.start = probe_start,
	.on_message = probe_on_message,
	.on_timer = probe_on_timer,
};

/* ---- the committee of two ---- */

static struct weft_identity *ids[2];
static uint8_t keys[2][WEFT_PK_LEN];
static struct weft_net_peer_addr addrs[2];

static struct weft_net *start_net(struct event_base *base, uint32_t self,
				  void (*on_message)(void *, uint32_t, const uint8_t *, size_t), void *ctx)
{
	struct weft_net_opts o = {
		.base = base,
		.self = ids[self],
		.self_index = self,
		.n = 2,
		.keys = (const uint8_t(*)[WEFT_PK_LEN])keys,
		.addrs = addrs,
		.max_frame = 4 << 20,
		.queue_hwm = 32 << 20,
		.queue_max = 256 << 20,
		.handshake_timeout_ms = 10000,
		.idle_timeout_ms = 30000,
		.keepalive_ms = 5000,
		.reconnect_min_ms = 20,
		.reconnect_max_ms = 100,
		.on_message = on_message,
		.ctx = ctx,
	};
	struct weft_net *net = NULL;
	return weft_net_start(&net, &o) == 0 ? net : NULL;
}

static struct weft_host *child_host;

static void child_on_message(void *ctx, uint32_t from, const uint8_t *msg, size_t len)
{
	if (child_host)
		weft_host_on_message(child_host, from, msg, len);
}

/* The node under test (its database map_size bytes, 0: the default):
 * runs until killed. */
static void run_child(const char *dir, size_t map_size)
{
	struct event_base *base = event_base_new();
	struct weft_kv *kv;
	struct weft_kv_opts ko = {.map_size = map_size};
	if (base == NULL || weft_kv_open(&kv, dir, &ko) != 0)
		_exit(3);
	struct weft_net *net = start_net(base, 0, child_on_message, NULL);
	if (net == NULL)
		_exit(4);
	struct weft_host_opts ho = {
		.base = base,
		.ops = &probe_ops,
		.self = 0,
		.n = 2,
		.keys = (const uint8_t(*)[32])keys,
		.id = ids[0],
		.kv = kv,
		.net = net,
	};
	if (weft_host_start(&child_host, &ho) != 0)
		_exit(5);
	event_base_dispatch(base);
	_exit(0);
}

/* ---- the peer (this process) ---- */

struct peer {
	struct weft_net *net;
	uint64_t *seen;
	size_t nseen, cap;
};

static void peer_on_message(void *ctx, uint32_t from, const uint8_t *msg, size_t len)
{
	struct peer *p = ctx;
	if (len != 8)
		return;
	if (p->nseen == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 4096;
		p->seen = realloc(p->seen, p->cap * sizeof(*p->seen));
		if (p->seen == NULL)
			abort();
	}
	p->seen[p->nseen++] = weft_be64_get(msg);
	weft_net_send(p->net, 0, msg, len);
}

/* How many of the n seen have no committed record in the child's
 * database; *stored: how many records it holds. */
static size_t missing_records(const char *dir, const struct peer *p, size_t map_size, size_t *stored)
{
	struct weft_kv *kv;
	struct weft_kv_opts ko = {.map_size = map_size};
	weft_kv_dbi dbi;
	struct weft_kv_txn *txn;
	size_t missing = 0;
	*stored = 0;
	if (weft_kv_open(&kv, dir, &ko) != 0)
		return p->nseen + 1;
	if (weft_kv_db(kv, "proto", &dbi) != 0 || weft_kv_begin(kv, false, &txn) != 0) {
		weft_kv_close(kv);
		return p->nseen + 1;
	}
	for (size_t i = 0; i < p->nseen; i++) {
		uint8_t key[10] = {0, 'k'};
		const void *v;
		size_t vlen;
		weft_be64_put(key + 2, p->seen[i]);
		missing += weft_kv_get(txn, dbi, key, sizeof(key), &v, &vlen) != 0;
	}
	weft_kv_count(txn, dbi, stored);
	weft_kv_abort(txn);
	weft_kv_close(kv);
	return missing;
}

static void run_for_ms(struct event_base *base, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	char root[] = "/tmp/weft-pbs-XXXXXX";
	if (mkdtemp(root) == NULL)
		return 1;
	for (int i = 0; i < 2; i++) {
		ids[i] = weft_identity_generate();
		memcpy(keys[i], ids[i]->pk, WEFT_PK_LEN);
	}
	srand((unsigned)getpid());
	size_t total_seen = 0, total_missing = 0, rounds_ok = 0;
	for (int round = 0; round < ROUNDS; round++) {
		int base_port = tu_port_base(2);
		addrs[0] = (struct weft_net_peer_addr){"127.0.0.1", (uint16_t)base_port};
		addrs[1] = (struct weft_net_peer_addr){"127.0.0.1", (uint16_t)(base_port + 1)};
		char dir[128];
		snprintf(dir, sizeof(dir), "%s/r%d", root, round);
		if (mkdir(dir, 0700) != 0)
			return 1;
		bool full_store = round >= ROUNDS - FULL_STORE_ROUNDS;
		size_t map_size = full_store ? SMALL_MAP : 0;
		pid_t pid = fork();
		if (pid == 0)
			run_child(dir, map_size);
		struct event_base *base = event_base_new();
		struct peer p = {0};
		p.net = start_net(base, 1, peer_on_message, &p);
		if (p.net == NULL) {
			ok(0, "the peer's transport starts on port %d", base_port + 1);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return done_testing();
		}
		/* Wait for the first messages, then kill at a random point. */
		for (int t = 0; t < 5000 && p.nseen == 0; t += 20)
			run_for_ms(base, 20);
		int kill_after = 100 + rand() % 600;
		if (full_store) {
			/* Until the store is full and the messages stop. */
			size_t before;
			kill_after = 0;
			do {
				before = p.nseen;
				run_for_ms(base, 300);
				kill_after += 300;
			} while (p.nseen != before && kill_after < 10000);
		} else {
			run_for_ms(base, kill_after);
		}
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		weft_net_stop(p.net);
		event_base_free(base);
		size_t stored;
		size_t missing = missing_records(dir, &p, map_size, &stored);
		diag("round %d%s: killed after %d ms; the peer got %zu messages, %zu records stored, %zu missing", round,
		     full_store ? " (a 1 MiB store: commits fail)" : "", kill_after, p.nseen, stored, missing);
		rounds_ok += p.nseen > 0 && missing == 0;
		total_seen += p.nseen;
		total_missing += missing;
		free(p.seen);
	}
	ok(total_seen > 1000, "the peer received %zu messages over %d rounds", total_seen, ROUNDS);
	ok(total_missing == 0 && rounds_ok == ROUNDS,
	   "every message that left the node had its step durable when the node was killed (%zu missing)",
	   total_missing);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		diag("could not remove %s", root);
	for (int i = 0; i < 2; i++)
		weft_identity_free(ids[i]);
	return done_testing();
}
