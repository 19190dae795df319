/* net_committee.c - integration test of the peer transport with a real
 * committee: four weftd on 127.0.0.1 from `weft-cli genesis`, driven over
 * their RPC sockets.  Checks that the links come up (state, RTT), that
 * broadcasts reach every node with equal delivery hashes and are pushed to
 * proto.subscribe clients, the runtime fault layer (drop, delay, duplicate,
 * expiring rules, partition, fault.list counters, fault.clear, bad
 * parameters, the layer switched off), backpressure from a peer that stops
 * reading, a kill -9 and restart of one node (messages queued meanwhile
 * arrive), a --byzantine silent node, and a clean stop while messages are
 * held by delay rules.  A daemon that dies on its own ends the run with its
 * stderr as a diagnostic.  Every daemon started is stopped, also when a
 * check fails (SIGKILL at exit for leftovers).  WEFT_KEEP_TMP=1 keeps the
 * data dirs and logs. */
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"

/* The daemons come from the same build as this test: under ASan (make
 * SAN=1) resident memory says nothing about leaks or bounds. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif
#ifndef ASAN_BUILD
#define ASAN_BUILD 0
#endif
#if ASAN_BUILD
/* A sanitizer report in this process exits without atexit handlers. */
void __sanitizer_set_death_callback(void (*callback)(void));
#endif
#include "weft/err.h"
#include "weft/rpc_client.h"

#define N 4

struct node {
	char *dir;   /* data dir */
	char *sock;  /* RPC socket */
	char *log;   /* weftd.log */
	pid_t pid;   /* 0: not running */
};

static char *tmp;              /* everything lives under here */
static struct node nodes[N];
static struct node lone;       /* the daemon of test 7 (fault layer off) */
static int base_port;
static char last_err[512];     /* message of the last failed RPC */
static long long last_code;    /* its code (0: transport failure) */

/* ---- small helpers ---- */

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;
	va_start(ap, f);
	int n = vasprintf(&s, f, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

static void append_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static void kill_all(void)
{
	for (int i = 0; i < N; i++) {
		if (nodes[i].pid > 0) {
			kill(nodes[i].pid, SIGKILL);
			tu_wait(nodes[i].pid, 2000);
			nodes[i].pid = 0;
		}
	}
	if (lone.pid > 0) {
		kill(lone.pid, SIGKILL);
		tu_wait(lone.pid, 2000);
		lone.pid = 0;
	}
}

static void on_exit_cleanup(void)
{
	kill_all();
	if (tmp && !getenv("WEFT_KEEP_TMP"))
		tu_rmtree(tmp);
}

static void on_fatal_signal(int sig)
{
	for (int i = 0; i < N; i++)
		if (nodes[i].pid > 0)
			kill(nodes[i].pid, SIGKILL);
	if (lone.pid > 0)
		kill(lone.pid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* False (with the exit status and the start of its stderr as diagnostics)
 * when a daemon we started died on its own; its pid is forgotten. */
static bool all_alive(void)
{
	bool alive = true;
	for (int i = 0; i < N; i++) {
		int st;
		if (nodes[i].pid <= 0 || waitpid(nodes[i].pid, &st, WNOHANG) != nodes[i].pid)
			continue;
		alive = false;
		diag("node %d (pid %d) died: %s %d", i, (int)nodes[i].pid, WIFEXITED(st) ? "exit" : "signal",
		     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		nodes[i].pid = 0;
		char *errpath = fmt("%s.stderr", nodes[i].dir), *text = tu_read_file(errpath);
		if (text)
			diag("its stderr (%s) begins:\n%.3000s", errpath, text);
		free(text);
		free(errpath);
	}
	return alive;
}

/* ---- RPC ---- */

/* Calls method on the node behind sock with params (stolen; NULL: []).
 * The result (a new reference), or NULL with last_err / last_code set. */
static json_t *rpc_sock(const char *sock, const char *method, json_t *params)
{
	json_t *res = NULL, *error = NULL;
	int rc = weft_rpc_client_call_once(sock, method, params, 5000, &res, &error);
	json_decref(params);
	last_err[0] = '\0';
	last_code = 0;
	if (rc != 0) {
		snprintf(last_err, sizeof(last_err), "call failed: %s", weft_strerror(rc));
		return NULL;
	}
	if (error) {
		const char *m = json_string_value(json_object_get(error, "message"));
		snprintf(last_err, sizeof(last_err), "%s", m ? m : "(no message)");
		last_code = json_integer_value(json_object_get(error, "code"));
		json_decref(error);
		json_decref(res);
		return NULL;
	}
	return res;
}

static json_t *rpc(int i, const char *method, json_t *params)
{
	return rpc_sock(nodes[i].sock, method, params);
}

/* o.a.b... as an integer, or -1. */
static long long jint(json_t *o, const char *k1, const char *k2)
{
	json_t *v = json_object_get(o, k1);
	if (k2)
		v = json_object_get(v, k2);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static long long connected(int i)
{
	json_t *r = rpc(i, "status", NULL);
	long long v = jint(r, "peers", "connected");
	json_decref(r);
	return v;
}

static long long delivered(int i)
{
	json_t *r = rpc(i, "proto.info", NULL);
	long long v = jint(r, "delivered", NULL);
	json_decref(r);
	return v;
}

/* delivery_hash of node i in buf (empty on failure). */
static void delivery_hash(int i, char *buf, size_t len)
{
	json_t *r = rpc(i, "proto.info", NULL);
	const char *h = json_string_value(json_object_get(r, "delivery_hash"));
	snprintf(buf, len, "%s", h ? h : "");
	json_decref(r);
}

/* proto.request data=... at node i: the seq, or -1. */
static long long broadcast(int i, const char *data)
{
	json_t *r = rpc(i, "proto.request", json_pack("[{s:s}]", "data", data));
	long long seq = jint(r, "seq", NULL);
	json_decref(r);
	if (!r)
		diag("proto.request at node %d failed: %s", i, last_err);
	return seq;
}

/* Polls every 20 ms until every node i with want[i] >= 0 has delivered at
 * least want[i]; the time it took in ms, or -1 after timeout_ms. */
static long wait_delivered(const long long want[N], int timeout_ms)
{
	long t0 = now_ms();
	for (;;) {
		bool all = true;
		for (int i = 0; i < N && all; i++)
			if (want[i] >= 0 && delivered(i) < want[i])
				all = false;
		long el = now_ms() - t0;
		if (all)
			return el;
		if (el > timeout_ms)
			return -1;
		usleep(20000);
	}
}

/* Waits until every running node reports `want` connected peers. */
static bool wait_connected(const bool which[N], long long want, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		bool all = true;
		for (int i = 0; i < N && all; i++)
			if (which[i] && connected(i) != want)
				all = false;
		if (all)
			return true;
		if (now_ms() > deadline)
			return false;
		usleep(50000);
	}
}

static void counts(long long out[N])
{
	for (int i = 0; i < N; i++)
		out[i] = delivered(i);
}

static void unique(char *buf, size_t len, const char *tag)
{
	static int k;
	snprintf(buf, len, "%s-%d-%d-%ld", tag, (int)getpid(), ++k, now_ms());
}

/* ---- committee set-up ---- */

static bool start_node(int i, const char *const *extra)
{
	nodes[i].pid = tu_weftd_start(nodes[i].dir, extra);
	if (nodes[i].pid <= 0)
		nodes[i].pid = 0;
	return nodes[i].pid > 0;
}

static bool stop_node(int i)
{
	int st = tu_weftd_stop(nodes[i].pid, 10000);
	nodes[i].pid = 0;
	return st == 0;
}

/* True when node i's stderr says its port was taken. */
static bool port_taken(int i)
{
	char *errpath = fmt("%s.stderr", nodes[i].dir);
	bool taken = tu_file_count(errpath, "in use") > 0;
	free(errpath);
	return taken;
}

/* Generates the committee at a free base port and starts it; retries with
 * another base when a port was taken meanwhile. */
static bool setup_committee(void)
{
	for (int attempt = 0; attempt < 5; attempt++) {
		base_port = tu_port_base(N + 2);
		if (base_port < 0)
			return false;
		char *out = fmt("%s/c%d", tmp, attempt), *port = fmt("%d", base_port);
		char *bin = tu_bin("weft-cli");
		char *argv[] = {bin, "genesis", "--nodes", "4", "--out", out, "--base-port", port, NULL};
		struct tu_run r;
		tu_run(&r, argv, 10000, -1);
		if (r.status != 0)
			diag("weft-cli genesis failed (%d): %s", r.status, r.err);
		int st = r.status;
		tu_run_free(&r);
		free(bin);
		free(port);
		if (st != 0) {
			free(out);
			return false;
		}
		for (int i = 0; i < N; i++) {
			free(nodes[i].dir);
			free(nodes[i].sock);
			free(nodes[i].log);
			nodes[i].dir = fmt("%s/node%d", out, i);
			nodes[i].sock = fmt("%s/rpc.sock", nodes[i].dir);
			nodes[i].log = fmt("%s/weftd.log", nodes[i].dir);
		}
		/* Node 0 bounds its per-peer queues tightly (test_backpressure). */
		char *conf = fmt("%s/weft.conf", nodes[0].dir);
		append_file(conf, "[net]\nqueue_hwm = 512KiB\nqueue_max = 2MiB\n");
		free(conf);
		free(out);
		bool all = true, taken = false;
		for (int i = 0; i < N && all; i++) {
			all = start_node(i, NULL);
			taken = !all && port_taken(i);
		}
		if (all)
			return true;
		kill_all();
		if (!taken)
			return false;
		diag("a port of %d..%d was taken meanwhile; trying another base", base_port, base_port + N - 1);
	}
	return false;
}

/* ---- the tests ---- */

static bool peer_connected_state(int i, int p)
{
	json_t *r = rpc(i, "peers", NULL), *e;
	size_t k;
	bool yes = false;
	json_array_foreach(json_object_get(r, "peers"), k, e) {
		const char *st = json_string_value(json_object_get(e, "state"));
		if (jint(e, "index", NULL) == p)
			yes = st && !strcmp(st, "connected");
	}
	json_decref(r);
	return yes;
}

static void test_links_up(void)
{
	const bool all[N] = {true, true, true, true};
	long t0 = now_ms();
	bool up = wait_connected(all, 3, 10000);
	ok(up, "all 4 nodes report peers.connected == 3 (after %ld ms)", now_ms() - t0);
	for (int i = 0; i < N; i++)
		if (connected(i) != 3)
			diag("node %d: connected = %lld", i, connected(i));

	/* Each node lists the 3 others as connected with a measured RTT (the
	 * first ping goes out when the link comes up). */
	long deadline = now_ms() + 5000;
	int good = 0;
	json_t *bad = NULL;
	while (now_ms() < deadline) {
		good = 0;
		for (int i = 0; i < N; i++) {
			json_t *r = rpc(i, "peers", NULL);
			json_t *peers = json_object_get(r, "peers"), *p;
			size_t k;
			int fine = 0;
			json_array_foreach(peers, k, p) {
				const char *state = json_string_value(json_object_get(p, "state"));
				json_t *rtt = json_object_get(p, "rtt_ms");
				long long idx = jint(p, "index", NULL);
				if (state && !strcmp(state, "connected") && json_is_number(rtt) && json_number_value(rtt) > 0 &&
				    idx >= 0 && idx < N && idx != i && jint(p, "connects", NULL) >= 1)
					fine++;
			}
			if (json_array_size(peers) == 3 && fine == 3) {
				good++;
			} else {
				json_decref(bad);
				bad = json_incref(r);
			}
			json_decref(r);
		}
		if (good == N)
			break;
		usleep(100000);
	}
	is_int(good, N, "peers: every node lists 3 peers, state connected, with rtt_ms > 0");
	if (good != N && bad) {
		char *s = json_dumps(bad, JSON_COMPACT);
		diag("a peers answer: %s", s);
		free(s);
	}
	json_decref(bad);
}

struct notes {
	int count;
	char data[4][128];
	long long origin[4], seq[4];
	bool invalid[4];
};

static void on_notify(const char *method, json_t *params, void *arg)
{
	struct notes *n = arg;
	if (strcmp(method, "proto.deliver") != 0)
		return;
	json_t *d = json_array_get(params, 0);
	if (n->count < 4) {
		const char *s = json_string_value(json_object_get(d, "data"));
		snprintf(n->data[n->count], sizeof(n->data[0]), "%s", s ? s : "");
		n->origin[n->count] = jint(d, "origin", NULL);
		n->seq[n->count] = jint(d, "seq", NULL);
		n->invalid[n->count] = !json_is_false(json_object_get(d, "invalid"));
	}
	n->count++;
}

static char *hex_of(const char *s)
{
	size_t len = strlen(s);
	char *h = malloc(2 * len + 3);
	strcpy(h, "0x");
	for (size_t i = 0; i < len; i++)
		sprintf(h + 2 + 2 * i, "%02x", (unsigned char)s[i]);
	return h;
}

static void test_broadcast(void)
{
	struct weft_rpc_client *sub = NULL;
	struct notes notes = {0};
	json_t *res = NULL, *err = NULL;
	int rc = weft_rpc_client_connect(&sub, nodes[3].sock, 5000, NULL);
	if (rc == 0) {
		weft_rpc_client_set_notify(sub, on_notify, &notes);
		rc = weft_rpc_client_call(sub, "proto.subscribe", NULL, 5000, &res, &err);
	}
	ok(rc == 0 && res && !err, "proto.subscribe on node 3");
	json_decref(res);
	json_decref(err);

	long long before[N], want[N];
	counts(before);
	char m0[96], m2[96];
	unique(m0, sizeof(m0), "from-node0");
	unique(m2, sizeof(m2), "from-node2");
	/* One after the other: the delivery hash depends on the order. */
	long long s0 = broadcast(0, m0);
	ok(s0 >= 0, "proto.request at node 0 (seq %lld)", s0);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 1;
	long t1 = wait_delivered(want, 5000);
	long long s2 = broadcast(2, m2);
	ok(s2 >= 0, "proto.request at node 2 (seq %lld)", s2);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 2;
	long t2 = wait_delivered(want, 5000);
	ok(t1 >= 0 && t2 >= 0, "both broadcasts delivered at every node (%ld ms, %ld ms)", t1, t2);
	for (int i = 0; i < N; i++)
		is_int(delivered(i), before[i] + 2, "node %d: proto.info.delivered is %lld", i, before[i] + 2);
	char h[N][80];
	for (int i = 0; i < N; i++)
		delivery_hash(i, h[i], sizeof(h[i]));
	ok(strlen(h[0]) == 64 && !strcmp(h[0], h[1]) && !strcmp(h[0], h[2]) && !strcmp(h[0], h[3]),
	   "all 4 delivery_hash values are equal (%s)", h[0]);
	if (strcmp(h[0], h[1]) || strcmp(h[0], h[2]) || strcmp(h[0], h[3]))
		for (int i = 0; i < N; i++)
			diag("node %d: %s", i, h[i]);

	/* The subscriber got both; requests on the same connection are answered
	 * after the notifications already written, so poll with calls. */
	long deadline = now_ms() + 5000;
	while (rc == 0 && notes.count < 2 && now_ms() < deadline) {
		res = err = NULL;
		rc = weft_rpc_client_call(sub, "proto.info", NULL, 5000, &res, &err);
		json_decref(res);
		json_decref(err);
		if (notes.count < 2)
			usleep(20000);
	}
	is_int(notes.count, 2, "node 3's subscriber received 2 proto.deliver notifications");
	char *x0 = hex_of(m0), *x2 = hex_of(m2);
	ok(notes.count >= 2 && notes.origin[0] == 0 && notes.seq[0] == s0 && !notes.invalid[0] &&
		   !strcmp(notes.data[0], x0),
	   "first notification: origin 0, its seq, valid, node 0's data (%lld, %lld, %s)", notes.origin[0],
	   notes.seq[0], notes.data[0]);
	ok(notes.count >= 2 && notes.origin[1] == 2 && notes.seq[1] == s2 && !notes.invalid[1] &&
		   !strcmp(notes.data[1], x2),
	   "second notification: origin 2, its seq, valid, node 2's data (%lld, %lld, %s)", notes.origin[1],
	   notes.seq[1], notes.data[1]);
	free(x0);
	free(x2);
	weft_rpc_client_close(sub);
}

/* fault.set on node i with params given as JSON text; the rule id or -1. */
static long long fault_set(int i, const char *json)
{
	json_t *p = json_loads(json, 0, NULL);
	if (p == NULL)
		abort();
	json_t *r = rpc(i, "fault.set", json_pack("[o]", p));
	long long id = jint(r, "id", NULL);
	json_decref(r);
	return id;
}

static bool fault_clear(int i)
{
	json_t *r = rpc(i, "fault.clear", NULL);
	bool done = r != NULL && jint(r, "rules", NULL) == 0;
	json_decref(r);
	return done;
}

static void test_drop(void)
{
	long long id = fault_set(1, "{\"action\": \"drop\", \"peers\": [0]}");
	ok(id > 0, "fault.set action=drop peers=[0] on node 1 (id %lld) %s", id, last_err);

	long long before[N], want[N];
	counts(before);
	char m[96];
	unique(m, sizeof(m), "drop");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = i == 1 ? -1 : before[i] + 1;
	long t = wait_delivered(want, 5000);
	ok(t >= 0, "drop: node 0's broadcast reaches nodes 0, 2, 3 (%ld ms)", t);
	usleep(1000000);
	is_int(delivered(1), before[1], "drop: node 1's delivered count unchanged after 1 s");

	json_t *l = rpc(1, "fault.list", NULL);
	json_t *rules = json_object_get(l, "rules"), *r0 = json_array_get(rules, 0);
	const char *action = json_string_value(json_object_get(r0, "action"));
	ok(json_array_size(rules) == 1 && action && !strcmp(action, "omission") && jint(r0, "id", NULL) == id,
	   "fault.list shows the drop rule as omission (the shared fault word)");
	json_t *peers = json_object_get(r0, "peers");
	ok(json_array_size(peers) == 1 && json_integer_value(json_array_get(peers, 0)) == 0,
	   "fault.list: the rule's peers are [0]");
	ok(jint(l, "acted", "omission") > 0, "fault.list: acted.omission > 0 (%lld)", jint(l, "acted", "omission"));
	json_decref(l);

	ok(fault_clear(1), "fault.clear on node 1 leaves no rule");
	l = rpc(1, "fault.list", NULL);
	is_int(json_array_size(json_object_get(l, "rules")), 0, "fault.list is empty after fault.clear");
	json_decref(l);

	counts(before);
	unique(m, sizeof(m), "after-drop");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 1;
	t = wait_delivered(want, 5000);
	ok(t >= 0, "after fault.clear: node 0's next broadcast reaches all 4, node 1 included (%ld ms)", t);
}

static void test_delay(void)
{
	long long id = fault_set(2, "{\"action\": \"delay\", \"delay_ms\": 800, \"peers\": [0], \"direction\": \"in\"}");
	ok(id > 0, "fault.set action=delay delay_ms=800 peers=[0] direction=in on node 2 %s", last_err);
	long long before[N];
	counts(before);
	char m[96];
	unique(m, sizeof(m), "delay");
	long t0 = now_ms();
	broadcast(0, m);
	long t2 = -1, t3 = -1;
	while (now_ms() - t0 < 5000 && (t2 < 0 || t3 < 0)) {
		if (t3 < 0 && delivered(3) > before[3])
			t3 = now_ms() - t0;
		if (t2 < 0 && delivered(2) > before[2])
			t2 = now_ms() - t0;
		usleep(20000);
	}
	ok(t3 >= 0 && t3 < 400, "delay: node 3 delivers quickly (%ld ms < 400)", t3);
	ok(t2 >= 700 && t2 < 3000, "delay: node 2 delivers only after >= 700 ms (%ld ms)", t2);
	json_t *l = rpc(2, "fault.list", NULL);
	ok(jint(l, "acted", "delay") >= 1, "fault.list on node 2: acted.delay >= 1 (%lld)", jint(l, "acted", "delay"));
	json_decref(l);
	ok(fault_clear(2), "fault.clear on node 2");
}

static void test_duplicate_and_expiry(void)
{
	long long id = fault_set(1, "{\"action\": \"duplicate\", \"peers\": [0], \"direction\": \"in\"}");
	ok(id > 0, "fault.set action=duplicate peers=[0] direction=in on node 1 %s", last_err);
	long long before[N], want[N];
	counts(before);
	char m[96];
	unique(m, sizeof(m), "dup");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 1;
	ok(wait_delivered(want, 5000) >= 0, "duplicate: the broadcast reaches all 4");
	usleep(300000);
	is_int(delivered(1), before[1] + 1, "duplicate: node 1 delivers it exactly once");
	json_t *l = rpc(1, "fault.list", NULL);
	ok(jint(l, "acted", "duplicate") >= 1, "fault.list: acted.duplicate >= 1 (%lld)", jint(l, "acted", "duplicate"));
	json_decref(l);
	ok(fault_clear(1), "fault.clear on node 1");

	/* A rule with duration_ms goes away by itself. */
	id = fault_set(1, "{\"action\": \"drop\", \"peers\": [0], \"duration_ms\": 300}");
	ok(id > 0, "fault.set action=drop duration_ms=300 on node 1 %s", last_err);
	l = rpc(1, "fault.list", NULL);
	long long left = jint(json_array_get(json_object_get(l, "rules"), 0), "remaining_ms", NULL);
	ok(left > 0 && left <= 300, "fault.list: remaining_ms of the rule is in (0, 300] (%lld)", left);
	json_decref(l);
	usleep(600000);
	l = rpc(1, "fault.list", NULL);
	is_int(json_array_size(json_object_get(l, "rules")), 0, "after 600 ms the rule has expired");
	json_decref(l);
	counts(before);
	unique(m, sizeof(m), "expired");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 1;
	ok(wait_delivered(want, 5000) >= 0, "after the expiry node 0's broadcast reaches node 1 again");
}

static void test_partition(void)
{
	long long id = fault_set(3, "{\"action\": \"partition\", \"peers\": [0]}");
	ok(id > 0, "fault.set action=partition peers=[0] on node 3 %s", last_err);
	long long before[N], want[N];
	counts(before);
	char m[96];
	unique(m, sizeof(m), "part0");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = i == 3 ? -1 : before[i] + 1;
	ok(wait_delivered(want, 5000) >= 0, "partition: node 0's broadcast reaches nodes 0, 1, 2");
	unique(m, sizeof(m), "part1");
	broadcast(1, m);
	for (int i = 0; i < N; i++)
		want[i] = i == 3 ? before[3] + 1 : before[i] + 2;
	ok(wait_delivered(want, 5000) >= 0, "partition: node 1's broadcast reaches everyone, node 3 included");
	usleep(700000);
	is_int(delivered(3), before[3] + 1, "partition: node 3 got node 1's broadcast but not node 0's");
	json_t *l = rpc(3, "fault.list", NULL);
	json_t *r0 = json_array_get(json_object_get(l, "rules"), 0);
	const char *dir = json_string_value(json_object_get(r0, "direction"));
	ok(dir && !strcmp(dir, "both"), "fault.list: a partition acts in both directions (%s)", dir ? dir : "none");
	ok(jint(l, "acted", "partition") >= 1, "fault.list: acted.partition >= 1");
	json_decref(l);

	ok(fault_clear(3), "fault.clear on node 3");
	counts(before);
	unique(m, sizeof(m), "healed0");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 1;
	ok(wait_delivered(want, 5000) >= 0, "healed: node 0's broadcast reaches all 4");
	unique(m, sizeof(m), "healed1");
	broadcast(1, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 2;
	ok(wait_delivered(want, 5000) >= 0, "healed: node 1's broadcast reaches all 4");
}

/* Field of node i's entry for peer p in `peers`, or -1. */
static long long peer_field(int i, int p, const char *field)
{
	json_t *r = rpc(i, "peers", NULL), *e;
	size_t k;
	long long v = -1;
	json_array_foreach(json_object_get(r, "peers"), k, e) {
		if (jint(e, "index", NULL) == p)
			v = jint(e, field, NULL);
	}
	json_decref(r);
	return v;
}

/* A peer that stops reading (SIGSTOP) shows up as a bounded queue and
 * counted drops at node 0 (queue_max = 2MiB there), never as memory; what
 * was not dropped arrives once it reads again. */
static void test_backpressure(void)
{
	enum { COUNT = 60, SIZE = 200 * 1024 };
	long long before[N], want[N];
	counts(before);
	long long dropped0 = peer_field(0, 2, "dropped");
	long rss0 = tu_rss_kib(nodes[0].pid);
	ok(kill(nodes[2].pid, SIGSTOP) == 0, "node 2 stopped (SIGSTOP): it reads nothing");
	char *big = malloc(SIZE + 1);
	int sent = 0;
	for (int k = 0; k < COUNT; k++) {
		memset(big, 'a' + k % 26, SIZE);
		snprintf(big, 32, "bp-%d-%d-", (int)getpid(), k);
		big[strlen(big)] = '-';
		big[SIZE] = '\0';
		sent += broadcast(0, big) >= 0;
	}
	free(big);
	is_int(sent, COUNT, "node 0 accepts %d broadcasts of 200 KiB (12 MiB) meanwhile", COUNT);
	for (int i = 0; i < N; i++)
		want[i] = i == 2 ? -1 : before[i] + COUNT;
	ok(wait_delivered(want, 10000) >= 0, "nodes 0, 1, 3 deliver all of them");
	long long q = peer_field(0, 2, "queue_bytes"), dropped = peer_field(0, 2, "dropped") - dropped0;
	long rss1 = tu_rss_kib(nodes[0].pid);
	ok(q >= 0 && q <= 2 * 1024 * 1024, "node 0's queue for node 2 stays within queue_max (%lld bytes)", q);
	ok(dropped > 0, "node 0 counts the messages dropped at the queue maximum (%lld)", dropped);
	if (ASAN_BUILD)
		skip(1, "ASan's quarantine keeps freed memory resident (rss %ld -> %ld KiB)", rss0, rss1);
	else
		ok(rss1 - rss0 < 24 * 1024, "node 0's memory stays bounded (rss %ld -> %ld KiB)", rss0, rss1);
	ok(peer_connected_state(0, 2), "node 0 still lists node 2 as connected");
	kill(nodes[2].pid, SIGCONT);
	want[2] = before[2] + COUNT - dropped;
	for (int i = 0; i < N; i++)
		if (i != 2)
			want[i] = -1;
	long t = wait_delivered(want, 10000);
	ok(t >= 0, "after SIGCONT node 2 delivers every message that was not dropped (%lld, %ld ms)", COUNT - dropped, t);
	usleep(300000);
	is_int(delivered(2), before[2] + COUNT - dropped, "and not one more: nothing lost beyond the counted drops");
	is_int(peer_field(0, 2, "queue_bytes"), 0, "node 0's queue for node 2 drains");
}

static void test_kill_restart(void)
{
	json_t *s = rpc(2, "status", NULL);
	const char *id0 = json_string_value(json_object_get(s, "node_id"));
	char *id_before = strdup(id0 ? id0 : "");
	json_decref(s);

	long t0 = now_ms();
	kill(nodes[2].pid, SIGKILL);
	is_int(tu_wait(nodes[2].pid, 5000), 128 + SIGKILL, "node 2 killed with SIGKILL");
	nodes[2].pid = 0;
	const bool others[N] = {true, true, false, true};
	bool down = wait_connected(others, 2, 15000);
	ok(down, "after kill -9 of node 2: nodes 0, 1, 3 report connected == 2 (%ld ms)", now_ms() - t0);
	json_t *pr = rpc(0, "peers", NULL);
	const char *st = json_string_value(json_object_get(json_array_get(json_object_get(pr, "peers"), 1), "state"));
	ok(st && strcmp(st, "connected") != 0, "node 0 lists node 2 as not connected (%s)", st ? st : "none");
	json_decref(pr);

	/* Messages to a peer are queued while it is disconnected (net.h). */
	long long before[N], want[N];
	counts(before);
	char m[96];
	unique(m, sizeof(m), "while-down");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = i == 2 ? -1 : before[i] + 1;
	ok(wait_delivered(want, 5000) >= 0, "a broadcast from node 0 while node 2 is down reaches nodes 0, 1, 3");
	counts(before);
	t0 = now_ms();
	ok(start_node(2, NULL), "node 2 restarts on the same data dir");
	const bool all[N] = {true, true, true, true};
	bool up = wait_connected(all, 3, 15000);
	ok(up, "after the restart all four report connected == 3 again (%ld ms)", now_ms() - t0);
	s = rpc(2, "status", NULL);
	is_str(json_string_value(json_object_get(s, "node_id")), id_before, "node 2's node_id is unchanged");
	json_decref(s);
	free(id_before);
	pr = rpc(0, "peers", NULL);
	json_t *p2 = json_array_get(json_object_get(pr, "peers"), 1);
	ok(jint(p2, "index", NULL) == 2 && jint(p2, "connects", NULL) >= 2,
	   "node 0 counts at least 2 connects to node 2 (%lld)", jint(p2, "connects", NULL));
	json_decref(pr);

	/* Its counter restarted with the process: compare increments. */
	long long base2 = 0;
	want[2] = base2 + 1;
	for (int i = 0; i < N; i++)
		if (i != 2)
			want[i] = -1;
	long tq = wait_delivered(want, 3000);
	ok(tq >= 0, "the broadcast queued for node 2 while it was down is delivered after the restart (%ld ms)", tq);
	before[2] = delivered(2);
	unique(m, sizeof(m), "after-restart");
	broadcast(0, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 1;
	long t = wait_delivered(want, 5000);
	ok(t >= 0, "a new broadcast from node 0 reaches all 4, the restarted node included (%ld ms)", t);
	unique(m, sizeof(m), "from-restarted");
	broadcast(2, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 2;
	t = wait_delivered(want, 5000);
	ok(t >= 0, "a broadcast from the restarted node 2 reaches all 4 (%ld ms)", t);
}

static void test_fault_off(void)
{
	/* A second committee of 2 of which only node 0 runs, with the layer off. */
	char *out = fmt("%s/off", tmp), *port = fmt("%d", base_port + N);
	char *bin = tu_bin("weft-cli");
	char *argv[] = {bin, "genesis", "--nodes", "2", "--out", out, "--base-port", port, NULL};
	struct tu_run r;
	tu_run(&r, argv, 10000, -1);
	is_int(r.status, 0, "weft-cli genesis --nodes 2 for the fault-off node");
	tu_run_free(&r);
	free(bin);
	free(port);
	lone.dir = fmt("%s/node0", out);
	lone.sock = fmt("%s/rpc.sock", lone.dir);
	char *conf = fmt("%s/weft.conf", lone.dir);
	append_file(conf, "[fault]\nenabled = false\n");
	free(conf);
	free(out);
	lone.pid = tu_weftd_start(lone.dir, NULL);
	ok(lone.pid > 0, "a node with [fault] enabled = false starts");
	if (lone.pid <= 0) {
		lone.pid = 0;
		skip(4, "no fault-off node");
		return;
	}
	json_t *res = rpc_sock(lone.sock, "fault.set", json_pack("[{s:s}]", "action", "drop"));
	ok(res == NULL && strstr(last_err, "[fault] enabled"), "fault.set fails, mentioning [fault] enabled (%s)",
	   last_err);
	is_int(last_code, -32000, "fault.set with the layer off: code -32000 (unavailable)");
	json_decref(res);
	res = rpc_sock(lone.sock, "fault.list", NULL);
	ok(res == NULL && strstr(last_err, "[fault] enabled"), "fault.list fails the same way (%s)", last_err);
	json_decref(res);
	is_int(tu_weftd_stop(lone.pid, 10000), 0, "the fault-off node stops cleanly");
	lone.pid = 0;
}

static void test_bad_fault_params(void)
{
	static const struct {
		const char *json, *names;
	} cases[] = {
		{"{\"action\": \"explode\"}", "action"},
		{"{\"action\": \"drop\", \"peers\": [9]}", "peers"},
		{"{\"action\": \"delay\"}", "delay_ms"},
		{"{\"action\": \"drop\", \"direction\": \"sideways\"}", "direction"},
		{"{\"action\": \"drop\", \"probability\": 2.5}", "probability"},
		{"{\"action\": \"drop\", \"bogus\": 1}", "bogus"},
		{"{\"peers\": [1]}", "action"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		long long id = fault_set(0, cases[k].json);
		ok(id < 0 && last_code == -32602 && strstr(last_err, cases[k].names),
		   "fault.set %s: invalid params naming %s (%s)", cases[k].json, cases[k].names, last_err);
	}
	json_t *l = rpc(0, "fault.list", NULL);
	ok(l && json_array_size(json_object_get(l, "rules")) == 0, "no rule was added by the bad calls");
	json_decref(l);
	json_t *s = rpc(0, "status", NULL);
	ok(s && jint(s, "peers", "connected") == 3, "node 0 keeps serving (status answers, 3 peers connected)");
	json_decref(s);
}

static void test_byzantine(void)
{
	ok(stop_node(3), "node 3 stops cleanly (exit 0)");
	const char *const extra[] = {"--byzantine", "silent", NULL};
	ok(start_node(3, extra), "node 3 restarts with --byzantine silent");
	const bool all[N] = {true, true, true, true};
	ok(wait_connected(all, 3, 15000), "the silent node's links come up (connected == 3 everywhere)");
	json_t *info = rpc(3, "proto.info", NULL);
	is_str(json_string_value(json_object_get(info, "byzantine")), "omission", "proto.info shows byzantine=omission (the simulator's word for silent)");
	json_decref(info);

	long long before[N], want[N];
	counts(before);
	char m[96];
	unique(m, sizeof(m), "from-silent");
	ok(broadcast(3, m) >= 0, "proto.request at the silent node");
	for (int i = 0; i < N; i++)
		want[i] = i == 3 ? before[3] + 1 : -1;
	ok(wait_delivered(want, 5000) >= 0, "the silent node delivers its own broadcast");
	usleep(1000000);
	bool none = true;
	for (int i = 0; i < 3; i++)
		none = none && delivered(i) == before[i];
	ok(none, "its broadcast reaches nobody else (counts unchanged after 1 s)");

	unique(m, sizeof(m), "to-silent");
	broadcast(1, m);
	for (int i = 0; i < N; i++)
		want[i] = before[i] + 1 + (i == 3);
	ok(wait_delivered(want, 5000) >= 0, "node 1's broadcast still reaches everyone, the silent node included");

	char *dir = fmt("%s/bogus", tmp), *bin = tu_bin("weftd");
	char *argv[] = {bin, "--datadir", dir, "--byzantine", "bogus", NULL};
	struct tu_run r;
	tu_run(&r, argv, 10000, -1);
	is_int(r.status, 2, "weftd --byzantine bogus exits 2");
	ok(strstr(r.err, "bogus") != NULL, "and names the strategy (%.*s)", (int)strcspn(r.err, "\n"), r.err);
	tu_run_free(&r);
	free(bin);
	free(dir);
}

int main(void)
{
	tmp = tu_tmpdir("netc");
	atexit(on_exit_cleanup);
	signal(SIGINT, on_fatal_signal);
	signal(SIGTERM, on_fatal_signal);
	signal(SIGABRT, on_fatal_signal);
	signal(SIGSEGV, on_fatal_signal);
	signal(SIGPIPE, SIG_IGN);
#if ASAN_BUILD
	__sanitizer_set_death_callback(on_exit_cleanup);
#endif

	long t0 = now_ms();
	bool up = setup_committee();
	ok(up, "4 weftd start (genesis at base port %d)", base_port);
	if (!up)
		return done_testing();

	/* A daemon that dies on its own ends the run early (and says why). */
	void (*const tests[])(void) = {
		test_links_up,
		test_broadcast,
		test_drop,
		test_delay,
		test_duplicate_and_expiry,
		test_partition,
		test_backpressure,
		test_kill_restart,
		test_fault_off,
		test_bad_fault_params,
		test_byzantine,
	};
	for (size_t k = 0; k < sizeof(tests) / sizeof(tests[0]); k++) {
		tests[k]();
		if (!all_alive()) {
			ok(0, "every daemon is still running after test %zu", k + 1);
			return done_testing();
		}
	}

	/* Nothing in this run was hostile: no peer counts misbehaviour. */
	long long misb = 0;
	for (int i = 0; i < N; i++) {
		json_t *r = rpc(i, "peers", NULL), *p;
		size_t k;
		json_array_foreach(json_object_get(r, "peers"), k, p) {
			if (jint(p, "misbehaviour", NULL) != 0) {
				diag("node %d: peer %lld misbehaviour %lld", i, jint(p, "index", NULL), jint(p, "misbehaviour", NULL));
				misb++;
			}
		}
		json_decref(r);
	}
	is_int(misb, 0, "no node counts misbehaviour against an honest peer");

	/* Stop while every node holds delayed messages in both directions. */
	int held = 0;
	for (int i = 0; i < N; i++)
		held += fault_set(i, "{\"action\": \"delay\", \"delay_ms\": 60000}") > 0;
	char m[96];
	unique(m, sizeof(m), "held");
	broadcast(0, m);
	broadcast(1, m);
	usleep(200000);
	is_int(held, N, "every node holds messages in a 60 s delay rule");
	int clean = 0;
	for (int i = 0; i < N; i++)
		clean += nodes[i].pid > 0 && stop_node(i);
	is_int(clean, N, "all 4 nodes stop cleanly (exit 0), delayed messages and all");
	diag("net_committee took %ld ms", now_ms() - t0);
	for (int i = 0; i < N; i++) {
		free(nodes[i].dir);
		free(nodes[i].sock);
		free(nodes[i].log);
	}
	free(lone.dir);
	free(lone.sock);
	return done_testing();
}
