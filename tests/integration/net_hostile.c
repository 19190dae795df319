/* net_hostile.c - integration test of the peer transport against hostile
 * peers, with real weftd on 127.0.0.1:
 *   1. keys outside the committee: a node whose key is not in the genesis
 *      refuses to start; a node of another committee dialling in is
 *      refused (logged with address and key, counted in peers.refused)
 *      while the committee's own links stay up;
 *   2. a man-in-the-middle relay that flips one byte of the encrypted
 *      stream: the record fails authentication, the link is dropped,
 *      counted as misbehaviour, and re-established;
 *   3. raw TCP clients: garbage, a 1 GiB record header, silence, a
 *      half-sent handshake, a HELLO with an outside key, an impersonation
 *      without the secret key, a flood of them; the node closes each in
 *      time, keeps serving and does not grow;
 *   4. an established peer sending a message above the receiver's
 *      net.max_frame is cut off while the others keep exchanging;
 *   5. an authenticated peer (a committee member's key, spoken by the test
 *      through the secure channel) sending malformed frames, replayed and
 *      oversized records, half-sent records, and a steady stream whose
 *      records straddle reads;
 *   6. more half-open connections than the node has descriptors.
 * A daemon that dies on its own ends the run with its stderr as a
 * diagnostic.  Every daemon and helper process started is stopped, also
 * when a check fails (SIGKILL at exit for leftovers).  WEFT_KEEP_TMP=1
 * keeps the data dirs and logs. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
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
#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/rpc_client.h"
#include "weft/secure.h"

#define MAXN 4

struct node {
	char *dir, *sock, *log;
	pid_t pid;
};

struct committee {
	char *dir;
	int n, base;
	struct node nodes[MAXN];
	char keys[MAXN][2 * WEFT_PK_LEN + 1];
};

static char *tmp;
static int base_port;                 /* a block of free ports for the whole test */
static pid_t live[32];                /* every process started, for the exit handler */
static char *live_err[32];            /* its stderr file (daemons), or NULL */
static char last_err[512];
static long long last_code;

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

static void track(pid_t pid, const char *errpath)
{
	for (int i = 0; i < 32; i++)
		if (live[i] == 0) {
			live[i] = pid;
			live_err[i] = errpath ? strdup(errpath) : NULL;
			return;
		}
}

static void untrack(pid_t pid)
{
	for (int i = 0; i < 32; i++)
		if (live[i] == pid) {
			live[i] = 0;
			free(live_err[i]);
			live_err[i] = NULL;
		}
}

/* False (with the exit status and the start of its stderr as diagnostics)
 * when a process we started died on its own. */
static bool all_alive(void)
{
	bool alive = true;
	for (int i = 0; i < 32; i++) {
		int st;
		if (live[i] <= 0 || waitpid(live[i], &st, WNOHANG) != live[i])
			continue;
		alive = false;
		diag("process %d died: %s %d", (int)live[i], WIFEXITED(st) ? "exit" : "signal",
		     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		char *text = live_err[i] ? tu_read_file(live_err[i]) : NULL;
		if (text) {
			diag("its stderr (%s) begins:\n%.3000s", live_err[i], text);
			free(text);
		}
		live[i] = -1; /* reaped: never signal that pid again */
	}
	return alive;
}

static void on_exit_cleanup(void)
{
	for (int i = 0; i < 32; i++) {
		if (live[i] > 0) {
			kill(live[i], SIGKILL);
			tu_wait(live[i], 2000);
			live[i] = 0;
		}
	}
	if (tmp && !getenv("WEFT_KEEP_TMP"))
		tu_rmtree(tmp);
}

static void on_fatal_signal(int sig)
{
	for (int i = 0; i < 32; i++)
		if (live[i] > 0)
			kill(live[i], SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- RPC ---- */

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

static json_t *rpc(struct committee *c, int i, const char *method, json_t *params)
{
	return rpc_sock(c->nodes[i].sock, method, params);
}

static long long jint(json_t *o, const char *k1, const char *k2)
{
	json_t *v = json_object_get(o, k1);
	if (k2)
		v = json_object_get(v, k2);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static long long status_peers(struct committee *c, int i, const char *field)
{
	json_t *r = rpc(c, i, "status", NULL);
	long long v = jint(r, "peers", field);
	json_decref(r);
	return v;
}

/* Field of node i's entry for peer p in `peers`, or -1. */
static long long peer_field(struct committee *c, int i, int p, const char *field)
{
	json_t *r = rpc(c, i, "peers", NULL), *e;
	size_t k;
	long long v = -1;
	json_array_foreach(json_object_get(r, "peers"), k, e) {
		if (jint(e, "index", NULL) == p)
			v = jint(e, field, NULL);
	}
	json_decref(r);
	return v;
}

static bool peer_connected(struct committee *c, int i, int p)
{
	json_t *r = rpc(c, i, "peers", NULL), *e;
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

static long long delivered(struct committee *c, int i)
{
	json_t *r = rpc(c, i, "proto.info", NULL);
	long long v = jint(r, "delivered", NULL);
	json_decref(r);
	return v;
}

static long long broadcast(struct committee *c, int i, const char *data)
{
	json_t *r = rpc(c, i, "proto.request", json_pack("[{s:s}]", "data", data));
	long long seq = jint(r, "seq", NULL);
	if (!r)
		diag("proto.request at node %d failed: %s", i, last_err);
	json_decref(r);
	return seq;
}

/* Polls until every node i with want[i] >= 0 delivered at least want[i];
 * the time taken in ms, or -1 after timeout_ms. */
static long wait_delivered(struct committee *c, const long long *want, int timeout_ms)
{
	long t0 = now_ms();
	for (;;) {
		bool all = true;
		for (int i = 0; i < c->n && all; i++)
			if (want[i] >= 0 && delivered(c, i) < want[i])
				all = false;
		if (all)
			return now_ms() - t0;
		if (now_ms() - t0 > timeout_ms)
			return -1;
		usleep(20000);
	}
}

/* Waits until each node i with want[i] >= 0 reports want[i] connected peers. */
static bool wait_connected(struct committee *c, const long long *want, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		bool all = true;
		for (int i = 0; i < c->n && all; i++)
			if (want[i] >= 0 && status_peers(c, i, "connected") != want[i])
				all = false;
		if (all)
			return true;
		if (now_ms() > deadline)
			return false;
		usleep(50000);
	}
}

/* ---- committees ---- */

/* weft-cli genesis --nodes n --out tmp/name --base-port base; fills c. */
static bool make_committee(struct committee *c, const char *name, int n, int base)
{
	memset(c, 0, sizeof(*c));
	c->dir = fmt("%s/%s", tmp, name);
	c->n = n;
	c->base = base;
	char *bin = tu_bin("weft-cli"), *ns = fmt("%d", n), *port = fmt("%d", base);
	char *argv[] = {bin, "genesis", "--nodes", ns, "--out", c->dir, "--base-port", port, NULL};
	struct tu_run r;
	tu_run(&r, argv, 10000, -1);
	json_t *out = json_loads(r.out, 0, NULL), *e;
	size_t k;
	json_array_foreach(json_object_get(out, "nodes"), k, e) {
		const char *key = json_string_value(json_object_get(e, "key"));
		if (k < MAXN && key)
			snprintf(c->keys[k], sizeof(c->keys[k]), "%s", key);
	}
	bool done = r.status == 0 && json_array_size(json_object_get(out, "nodes")) == (size_t)n;
	if (!done)
		diag("weft-cli genesis failed (%d): %s", r.status, r.err);
	json_decref(out);
	tu_run_free(&r);
	free(bin);
	free(ns);
	free(port);
	for (int i = 0; i < n; i++) {
		c->nodes[i].dir = fmt("%s/node%d", c->dir, i);
		c->nodes[i].sock = fmt("%s/rpc.sock", c->nodes[i].dir);
		c->nodes[i].log = fmt("%s/weftd.log", c->nodes[i].dir);
	}
	return done;
}

static void conf_append(struct committee *c, int i, const char *text)
{
	char *p = fmt("%s/weft.conf", c->nodes[i].dir);
	append_file(p, text);
	free(p);
}

static bool start_node(struct committee *c, int i)
{
	pid_t pid = tu_weftd_start(c->nodes[i].dir, NULL);
	c->nodes[i].pid = pid > 0 ? pid : 0;
	if (pid > 0) {
		char *errpath = fmt("%s.stderr", c->nodes[i].dir);
		track(pid, errpath);
		free(errpath);
	}
	return pid > 0;
}

static bool tracked(pid_t pid)
{
	for (int i = 0; i < 32; i++)
		if (live[i] == pid)
			return true;
	return false;
}

static bool stop_node(struct committee *c, int i)
{
	if (c->nodes[i].pid <= 0 || !tracked(c->nodes[i].pid)) {
		c->nodes[i].pid = 0; /* died and was reaped by all_alive */
		return false;
	}
	int st = tu_weftd_stop(c->nodes[i].pid, 10000);
	untrack(c->nodes[i].pid);
	c->nodes[i].pid = 0;
	return st == 0;
}

static int stop_committee(struct committee *c)
{
	int clean = 0;
	for (int i = 0; i < c->n; i++)
		if (c->nodes[i].pid > 0)
			clean += stop_node(c, i);
	return clean;
}

static void free_committee(struct committee *c)
{
	for (int i = 0; i < c->n; i++) {
		free(c->nodes[i].dir);
		free(c->nodes[i].sock);
		free(c->nodes[i].log);
	}
	free(c->dir);
}

/* ---- 1. keys outside the committee ---- */

static struct committee A; /* nodes 0..2 run; node 3's key was swapped; kept for tests 3 and 5 */

static void test_outside_keys(void)
{
	ok(make_committee(&A, "A", 4, base_port), "committee A: genesis of 4 at base port %d", base_port);
	/* Short timeouts on A keep tests 3 and 5 short. */
	for (int i = 0; i < 4; i++)
		conf_append(&A, i, "[net]\nhandshake_timeout_ms = 1000\nidle_timeout_ms = 1500\nkeepalive_ms = 300\n");

	/* Node 3 gets a fresh key while the genesis still lists its old one
	 * (kept aside for test 5). */
	char *key = fmt("%s/identity.key", A.nodes[3].dir), *orig = fmt("%s/identity.key.orig", A.nodes[3].dir);
	rename(key, orig);
	char *bin = tu_bin("weft-cli");
	char *kargv[] = {bin, "keygen", "--out", key, NULL};
	struct tu_run r;
	tu_run(&r, kargv, 10000, -1);
	is_int(r.status, 0, "weft-cli keygen writes a fresh key for node 3");
	tu_run_free(&r);
	free(bin);
	bin = tu_bin("weftd");
	char *wargv[] = {bin, "--datadir", A.nodes[3].dir, NULL};
	tu_run(&r, wargv, 15000, -1);
	is_int(r.status, 1, "weftd with a key outside the committee exits 1");
	ok(strstr(r.err, "not in the committee") != NULL, "and says its key is not in the committee (%.*s)",
	   (int)strcspn(r.err, "\n"), r.err);
	tu_run_free(&r);
	free(bin);
	free(key);
	free(orig);

	bool up = true;
	for (int i = 0; i < 3; i++)
		up = start_node(&A, i) && up;
	ok(up, "A's nodes 0, 1, 2 start");
	const long long two[4] = {2, 2, 2, -1};
	ok(wait_connected(&A, two, 10000), "A's nodes 0, 1, 2 connect to each other (connected == 2)");
	long long refused0[3], conn0[3][3];
	for (int i = 0; i < 3; i++) {
		refused0[i] = status_peers(&A, i, "refused");
		for (int p = 0; p < 3; p++)
			conn0[i][p] = p == i ? 0 : peer_field(&A, i, p, "connects");
	}

	/* Committee B: other keys, the same addresses.  Its node 3 takes the
	 * free port of A's node 3 and dials B's nodes 0..2 -- A's nodes. */
	struct committee B;
	ok(make_committee(&B, "B", 4, base_port), "committee B: other keys, the same addresses");
	ok(start_node(&B, 3), "B's node 3 starts on A's node 3 address");
	long deadline = now_ms() + 10000;
	bool all = false;
	while (!all && now_ms() < deadline) {
		all = true;
		for (int i = 0; i < 3 && all; i++)
			all = status_peers(&A, i, "refused") > refused0[i];
		if (!all)
			usleep(100000);
	}
	ok(all, "each of A's nodes counts a refused connection (status.peers.refused > 0)");
	char needle[64];
	snprintf(needle, sizeof(needle), "key=%.16s", B.keys[3]);
	int lines = 0;
	char *text = tu_read_file(A.nodes[0].log);
	for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
		lines += strstr(line, "net.refused") && strstr(line, needle) && strstr(line, "addr=127.0.0.1:");
	free(text);
	ok(lines > 0, "A's node 0 logs net.refused naming the address and B's key (%s)", needle);
	ok(status_peers(&B, 3, "refused") > 0, "B's node 3 refuses A's nodes too (status.peers.refused %lld)",
	   status_peers(&B, 3, "refused"));
	is_int(status_peers(&B, 3, "connected"), 0, "B's node 3 has no link");
	bool stay = true;
	for (int i = 0; i < 3; i++) {
		stay = stay && status_peers(&A, i, "connected") == 2 && !peer_connected(&A, i, 3);
		for (int p = 0; p < 3; p++)
			if (p != i && peer_field(&A, i, p, "connects") != conn0[i][p]) {
				diag("A node %d: %lld connects to %d (was %lld)", i, peer_field(&A, i, p, "connects"), p,
				     conn0[i][p]);
				stay = false;
			}
	}
	ok(stay, "A's nodes stay connected to each other (no reconnect) and never list node 3 as connected");
	is_int(stop_node(&B, 3), 1, "B's node 3 stops cleanly");
	free_committee(&B);
}

/* ---- 2. a man-in-the-middle relay ---- */

struct relay_pair {
	int cl, sv;                /* client (dialler) and server sockets */
	uint64_t fwd;              /* client -> server bytes seen */
	uint8_t hdr[4];
	int hlen;                  /* header bytes of the current record seen */
	uint64_t remain;           /* body bytes of the current record still to come */
	bool flip_this;            /* flip the last byte of the current record */
};

static void relay_event(int evfd, const char *what)
{
	ssize_t w = write(evfd, what, strlen(what));
	(void)w;
}

/* Parses client -> server bytes into records; flips the last byte (in the
 * AEAD tag) of the first record that starts after flip_after bytes. */
static void relay_scan(struct relay_pair *p, uint8_t *buf, size_t len, size_t flip_after, bool *flipped, int evfd)
{
	for (size_t i = 0; i < len; i++, p->fwd++) {
		if (p->remain == 0) {
			if (p->hlen == 0)
				p->flip_this = !*flipped && p->fwd >= flip_after;
			p->hdr[p->hlen++] = buf[i];
			if (p->hlen == 4) {
				p->remain = weft_be32_get(p->hdr);
				p->hlen = 0;
				if (p->remain == 0)
					p->flip_this = false;
			}
			continue;
		}
		if (--p->remain == 0 && p->flip_this) {
			buf[i] ^= 0x01;
			*flipped = true;
			p->flip_this = false;
			relay_event(evfd, "flip\n");
		}
	}
}

static void relay_main(int lfd, int target, int evfd, size_t flip_after)
{
	struct relay_pair pairs[16];
	int npairs = 0;
	bool flipped = false;
	alarm(120);
	for (;;) {
		struct pollfd pf[1 + 2 * 16];
		pf[0] = (struct pollfd){lfd, POLLIN, 0};
		for (int k = 0; k < npairs; k++) {
			pf[1 + 2 * k] = (struct pollfd){pairs[k].cl, POLLIN, 0};
			pf[2 + 2 * k] = (struct pollfd){pairs[k].sv, POLLIN, 0};
		}
		if (poll(pf, (nfds_t)(1 + 2 * npairs), -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pf[0].revents & POLLIN) {
			int cl = accept(lfd, NULL, NULL);
			if (cl >= 0) {
				int sv = tu_tcp_connect("127.0.0.1", target, 2000);
				if (sv < 0 || npairs == 16) {
					close(cl);
					if (sv >= 0)
						close(sv);
				} else {
					pairs[npairs++] = (struct relay_pair){.cl = cl, .sv = sv};
					relay_event(evfd, "accept\n");
				}
			}
		}
		for (int k = 0; k < npairs; k++) {
			for (int side = 0; side < 2; side++) {
				short re = pf[1 + 2 * k + side].revents;
				if (!re)
					continue;
				struct relay_pair *p = &pairs[k];
				int from = side ? p->sv : p->cl, to = side ? p->cl : p->sv;
				uint8_t buf[65536];
				ssize_t n = read(from, buf, sizeof(buf));
				if (n > 0) {
					if (!side)
						relay_scan(p, buf, (size_t)n, flip_after, &flipped, evfd);
					if (tu_send_all(to, buf, (size_t)n) == 0)
						continue;
				} else if (n < 0 && errno == EINTR) {
					continue;
				}
				/* EOF or error on either side: close the pair. */
				close(p->cl);
				close(p->sv);
				p->cl = p->sv = -1;
				relay_event(evfd, "close\n");
				break;
			}
		}
		int w = 0;
		for (int k = 0; k < npairs; k++)
			if (pairs[k].cl >= 0)
				pairs[w++] = pairs[k];
		npairs = w;
	}
}

struct relay {
	pid_t pid;
	int evfd;
	int accepts, flips, closes;
};

static void relay_poll(struct relay *r)
{
	char buf[256];
	ssize_t n;
	while ((n = read(r->evfd, buf, sizeof(buf) - 1)) > 0) {
		/* Events are whole lines, each written with one write(2). */
		buf[n] = '\0';
		for (char *s = buf; *s;) {
			if (!strncmp(s, "accept\n", 7))
				r->accepts++;
			else if (!strncmp(s, "flip\n", 5))
				r->flips++;
			else if (!strncmp(s, "close\n", 6))
				r->closes++;
			char *nl = strchr(s, '\n');
			if (!nl)
				break;
			s = nl + 1;
		}
	}
}

static bool relay_start(struct relay *r, int port, int target, size_t flip_after)
{
	memset(r, 0, sizeof(*r));
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(lfd, 16) != 0) {
		diag("relay: cannot listen on %d: %s", port, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return false;
	}
	int ev[2];
	if (pipe(ev) != 0)
		abort();
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		close(ev[0]);
		signal(SIGPIPE, SIG_IGN);
#if ASAN_BUILD
	__sanitizer_set_death_callback(on_exit_cleanup);
#endif
		relay_main(lfd, target, ev[1], flip_after);
		_exit(0);
	}
	close(lfd);
	close(ev[1]);
	fcntl(ev[0], F_SETFL, fcntl(ev[0], F_GETFL) | O_NONBLOCK);
	r->pid = pid;
	r->evfd = ev[0];
	track(pid, NULL);
	return true;
}

static void relay_stop(struct relay *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		tu_wait(r->pid, 2000);
		untrack(r->pid);
		r->pid = 0;
	}
	if (r->evfd >= 0)
		close(r->evfd);
	r->evfd = -1;
}

static void test_mitm(void)
{
	struct committee C;
	int real1 = base_port + 5, relay_port = base_port + 6;
	ok(make_committee(&C, "C", 2, base_port + 4), "committee C: genesis of 2");
	/* Everybody reaches node 1 at the relay; node 1 listens on its real port. */
	char *gpath = fmt("%s/genesis.json", C.dir), *addr = fmt("127.0.0.1:%d", relay_port);
	json_t *g = json_load_file(gpath, 0, NULL);
	json_object_set_new(json_array_get(json_object_get(g, "nodes"), 1), "address", json_string(addr));
	ok(g && json_dump_file(g, gpath, JSON_INDENT(2)) == 0, "genesis: node 1's address is the relay's %s", addr);
	json_decref(g);
	free(gpath);
	free(addr);
	char *listen = fmt("[node]\nlisten = 127.0.0.1:%d\n[net]\nreconnect_max_ms = 1000\n", real1);
	conf_append(&C, 1, listen);
	free(listen);
	conf_append(&C, 0, "[net]\nreconnect_max_ms = 1000\n");

	struct relay rl;
	ok(relay_start(&rl, relay_port, real1, 2000), "relay on %d -> %d flips a byte after 2000 bytes", relay_port,
	   real1);
	bool up = start_node(&C, 1) && start_node(&C, 0);
	ok(up, "C's nodes start");
	const long long one[2] = {1, 1};
	ok(wait_connected(&C, one, 10000), "C's nodes connect (through the relay)");
	relay_poll(&rl);
	ok(rl.accepts >= 1, "the link goes through the relay (%d connections)", rl.accepts);
	long long d1 = delivered(&C, 1), connects0 = peer_field(&C, 0, 1, "connects");
	long long connects1 = peer_field(&C, 1, 0, "connects");

	/* 3000 bytes pass intact (the flip comes on the next record). */
	char big[3001];
	memset(big, 'm', 3000);
	big[3000] = '\0';
	broadcast(&C, 0, big);
	const long long want1[2] = {-1, d1 + 1};
	ok(wait_delivered(&C, want1, 5000) >= 0, "a 3000-byte broadcast crosses the relay");
	long t0 = now_ms();
	for (int k = 0; k < 20 && rl.flips == 0; k++) {
		broadcast(&C, 0, "small");
		usleep(100000);
		relay_poll(&rl);
	}
	is_int(rl.flips, 1, "the relay flipped one byte of a record from node 0");
	long long misb = -1;
	bool logged = false;
	while (now_ms() - t0 < 10000) {
		misb = peer_field(&C, 1, 0, "misbehaviour");
		logged = tu_file_count(C.nodes[1].log, "failed authentication") > 0 ||
			 tu_file_count(C.nodes[0].log, "failed authentication") > 0;
		if (misb >= 1 && logged)
			break;
		usleep(50000);
	}
	ok(logged, "a node logs that a record failed authentication");
	ok(misb >= 1, "node 1 counts misbehaviour against node 0 (%lld)", misb);
	bool again = false;
	while (now_ms() - t0 < 10000 && !again) {
		again = status_peers(&C, 0, "connected") == 1 && status_peers(&C, 1, "connected") == 1 &&
			peer_field(&C, 0, 1, "connects") >= connects0 + 1 && peer_field(&C, 1, 0, "connects") >= connects1 + 1;
		if (!again)
			usleep(50000);
	}
	ok(again, "the link is re-established within 10 s (%ld ms; connects %lld and %lld)", now_ms() - t0,
	   peer_field(&C, 0, 1, "connects"), peer_field(&C, 1, 0, "connects"));
	ok(peer_field(&C, 0, 1, "connects") >= 2, "node 0 counts >= 2 connects to node 1");
	relay_poll(&rl);
	ok(rl.accepts >= 2, "the new link goes through the relay again (%d connections)", rl.accepts);
	long long before = delivered(&C, 1);
	broadcast(&C, 0, "after the tampering");
	const long long want2[2] = {-1, before + 1};
	ok(wait_delivered(&C, want2, 5000) >= 0, "broadcasts cross the re-established link");
	is_int(stop_committee(&C), 2, "C's nodes stop cleanly");
	relay_stop(&rl);
	free_committee(&C);
}

/* ---- 3. raw TCP clients ---- */

/* Connects to port, sends len bytes, and measures how long until the node
 * closes (ms), or -1 when it stays open for wait_ms. */
static long send_and_time_close(int port, const void *buf, size_t len, int wait_ms)
{
	int fd = tu_tcp_connect("127.0.0.1", port, 2000);
	if (fd < 0)
		return -2;
	long t0 = now_ms();
	if (len)
		tu_send_all(fd, buf, len);
	bool closed = tu_wait_closed(fd, wait_ms);
	long el = now_ms() - t0;
	close(fd);
	return closed ? el : -1;
}

/* A HELLO record from id to the node with key want. */
static void hello(struct weft_mpw *w, const struct weft_identity *id, const uint8_t *want)
{
	uint8_t epk[32], esk[32];
	crypto_kx_keypair(epk, esk);
	struct weft_mpw body;
	weft_mpw_init(&body);
	weft_mpw_array(&body, 6);
	weft_mpw_uint(&body, 1);
	weft_mpw_uint(&body, 0);
	weft_mpw_str(&body, "weft");
	weft_mpw_bin(&body, id->pk, WEFT_PK_LEN);
	weft_mpw_bin(&body, epk, 32);
	weft_mpw_bin(&body, want, WEFT_PK_LEN);
	uint8_t hdr[4];
	weft_be32_put(hdr, (uint32_t)body.len);
	weft_mpw_raw(w, hdr, 4);
	weft_mpw_raw(w, body.buf, body.len);
	weft_mpw_free(&body);
}

static void test_raw_clients(void)
{
	int port = A.base;
	pid_t pid = A.nodes[0].pid;
	long long refused0 = status_peers(&A, 0, "refused");
	long rss0 = tu_rss_kib(pid);

	uint8_t blob[4 + 256];
	blob[0] = 0, blob[1] = 0, blob[2] = 1, blob[3] = 0; /* a 256-byte handshake record... */
	randombytes_buf(blob + 4, 256);                       /* ...of garbage */
	blob[4] = 0xc1;                                       /* never valid msgpack */
	long t = send_and_time_close(port, blob, sizeof(blob), 3000);
	ok(t >= 0 && t < 1000, "garbage handshake record: closed at once (%ld ms)", t);

	static const uint8_t gib[8] = {0x40, 0, 0, 0, 1, 2, 3, 4};
	t = send_and_time_close(port, gib, sizeof(gib), 3000);
	ok(t >= 0 && t < 1000, "record header declaring 1 GiB: closed at once (%ld ms)", t);

	t = send_and_time_close(port, NULL, 0, 4000);
	ok(t >= 800 && t < 2500, "silent client: closed after the 1000 ms handshake timeout (%ld ms)", t);

	static const uint8_t half[14] = {0, 0, 1, 0xf4, 0x96, 1, 0, 0xa4, 'w', 'e', 'f', 't', 0xc4, 0x20};
	t = send_and_time_close(port, half, sizeof(half), 4000);
	ok(t >= 800 && t < 2500, "half-sent HELLO: closed after the handshake timeout (%ld ms)", t);

	/* A well-formed HELLO from a key outside the committee. */
	struct weft_identity *outsider = weft_identity_generate();
	uint8_t a0[WEFT_PK_LEN], a1[WEFT_PK_LEN];
	weft_hex_decode(a0, WEFT_PK_LEN, A.keys[0], 64);
	weft_hex_decode(a1, WEFT_PK_LEN, A.keys[1], 64);
	struct weft_mpw w;
	weft_mpw_init(&w);
	hello(&w, outsider, a0);
	t = send_and_time_close(port, w.buf, w.len, 3000);
	ok(t >= 0 && t < 1000, "HELLO from an outside key: refused at once (%ld ms)", t);
	char hex[2 * WEFT_PK_LEN + 1], needle[64];
	weft_hex_encode(hex, outsider->pk, WEFT_PK_LEN);
	snprintf(needle, sizeof(needle), "key=%.16s", hex);
	ok(tu_file_count(A.nodes[0].log, needle) > 0, "node 0 logs the refused key (%s)", needle);

	/* Claiming to be node 1 without its secret key: the REPLY comes, the
	 * FINISH signature cannot be made. */
	long long real1 = peer_field(&A, 0, 1, "connects");
	struct weft_identity fake1 = {.sk = outsider->sk};
	memcpy(fake1.pk, a1, WEFT_PK_LEN);
	weft_mpw_reset(&w);
	hello(&w, &fake1, a0);
	int fd = tu_tcp_connect("127.0.0.1", port, 2000);
	tu_send_all(fd, w.buf, w.len);
	uint8_t rbuf[512];
	long n = tu_recv(fd, rbuf, sizeof(rbuf), 2000);
	ok(n > 4, "impersonating node 1: node 0 answers the HELLO with a REPLY (%ld bytes)", n);
	uint8_t fin[4 + 69] = {0, 0, 0, 69, 0x93, 1, 2, 0xc4, 64}; /* FINISH [1, 2, sig] */
	randombytes_buf(fin + 4 + 5, 64);
	long t0 = now_ms();
	tu_send_all(fd, fin, sizeof(fin));
	bool closed = tu_wait_closed(fd, 3000);
	ok(closed && now_ms() - t0 < 1000, "a FINISH with a bad signature: closed at once (%ld ms)", now_ms() - t0);
	close(fd);
	ok(peer_connected(&A, 0, 1) && peer_field(&A, 0, 1, "connects") == real1,
	   "the real link to node 1 was not disturbed by the impersonation");
	weft_mpw_free(&w);
	weft_identity_free(outsider);

	/* A flood: 100 garbage, 100 huge headers, 100 silent, all at once. */
	int refused_lines0 = tu_file_count(A.nodes[0].log, "net.refused");
	int fds[300], opened = 0;
	for (int i = 0; i < 300; i++) {
		fds[i] = tu_tcp_connect("127.0.0.1", port, 2000);
		if (fds[i] < 0)
			continue;
		opened++;
		if (i < 100)
			tu_send_all(fds[i], blob, sizeof(blob));
		else if (i < 200)
			tu_send_all(fds[i], gib, sizeof(gib));
	}
	int closed_n = 0;
	for (int i = 0; i < 300; i++) {
		if (fds[i] >= 0) {
			closed_n += tu_wait_closed(fds[i], 4000);
			close(fds[i]);
		}
	}
	is_int(closed_n, opened, "flood of 300 hostile connections: every one closed (%d opened)", opened);
	long rss1 = tu_rss_kib(pid);
	if (ASAN_BUILD)
		skip(1, "ASan's quarantine keeps freed memory resident (rss %ld -> %ld KiB)", rss0, rss1);
	else
		ok(rss0 > 0 && rss1 - rss0 < 6 * 1024, "node 0's memory stays flat (rss %ld -> %ld KiB)", rss0, rss1);
	long long refused1 = status_peers(&A, 0, "refused");
	ok(refused1 - refused0 >= 204, "status.peers.refused counts the rejected handshakes (%lld -> %lld)", refused0,
	   refused1);
	int refused_lines = tu_file_count(A.nodes[0].log, "net.refused") - refused_lines0;
	ok(refused_lines <= 10, "the flood's refusals are rate-limited in the log: %d net.refused lines (at most 10 a minute)",
	   refused_lines);
	const long long two[4] = {2, 2, 2, -1};
	ok(wait_connected(&A, two, 3000), "A's nodes stay connected and node 0 still serves");
	long long d[3], want[4] = {-1, -1, -1, -1};
	for (int i = 0; i < 3; i++)
		want[i] = (d[i] = delivered(&A, i)) + 1;
	broadcast(&A, 0, "still alive");
	ok(wait_delivered(&A, want, 5000) >= 0, "and a broadcast from node 0 still reaches nodes 1, 2");
	long long misb = 0;
	for (int p = 1; p < 3; p++)
		misb += peer_field(&A, 0, p, "misbehaviour");
	is_int(misb, 0, "no misbehaviour charged to the honest peers");
}

/* ---- 4. a message above the receiver's max_frame ---- */

static void test_oversized(void)
{
	struct committee D;
	ok(make_committee(&D, "D", 4, base_port + 7), "committee D: genesis of 4");
	conf_append(&D, 0, "[net]\nmax_frame = 64KiB\n");
	conf_append(&D, 1, "[net]\nmax_frame = 4MiB\n");
	bool up = true;
	for (int i = 0; i < 4; i++)
		up = start_node(&D, i) && up;
	ok(up, "D's nodes start (node 0 with max_frame 64KiB)");
	const long long three[4] = {3, 3, 3, 3};
	ok(wait_connected(&D, three, 10000), "D's nodes connect");

	long long d[4], want[4];
	for (int i = 0; i < 4; i++)
		d[i] = delivered(&D, i);
	char *m48 = malloc(48 * 1024 + 1);
	memset(m48, 'a', 48 * 1024);
	m48[48 * 1024] = '\0';
	ok(broadcast(&D, 1, m48) >= 0, "node 1 broadcasts 48 KiB");
	for (int i = 0; i < 4; i++)
		want[i] = d[i] + 1;
	ok(wait_delivered(&D, want, 5000) >= 0, "48 KiB (under node 0's 64 KiB max_frame) reaches all 4");
	free(m48);

	/* Node 0 itself refuses to originate more than max_frame / 2. */
	char *m40 = malloc(40 * 1024 + 1);
	memset(m40, 'b', 40 * 1024);
	m40[40 * 1024] = '\0';
	json_t *r = rpc(&D, 0, "proto.request", json_pack("[{s:s}]", "data", m40));
	ok(r == NULL && last_code == -32602 && strstr(last_err, "limit"),
	   "node 0 refuses a 40 KiB proto.request (limit max_frame/2): %s", last_err);
	json_decref(r);
	free(m40);

	long long misb0 = peer_field(&D, 0, 1, "misbehaviour"), conn0 = peer_field(&D, 0, 1, "connects");
	long long conn2 = peer_field(&D, 0, 2, "connects"), conn3 = peer_field(&D, 0, 3, "connects");
	for (int i = 0; i < 4; i++)
		d[i] = delivered(&D, i);
	char *m200 = malloc(200 * 1024 + 1);
	memset(m200, 'z', 200 * 1024);
	m200[200 * 1024] = '\0';
	ok(broadcast(&D, 1, m200) >= 0, "node 1 (max_frame 4MiB) broadcasts 200 KiB");
	free(m200);
	for (int i = 0; i < 4; i++)
		want[i] = i == 0 ? -1 : d[i] + 1;
	ok(wait_delivered(&D, want, 5000) >= 0, "200 KiB reaches nodes 1, 2, 3");
	long t0 = now_ms();
	long long misb = misb0;
	while (now_ms() - t0 < 5000 && (misb = peer_field(&D, 0, 1, "misbehaviour")) <= misb0)
		usleep(50000);
	ok(misb > misb0, "node 0 counts misbehaviour against node 1 (%lld -> %lld)", misb0, misb);
	ok(tu_file_count(D.nodes[0].log, "over net.max_frame") > 0, "node 0's log says the input was over net.max_frame");
	usleep(300000);
	is_int(delivered(&D, 0), d[0], "node 0 did not deliver the oversized message");

	/* Nodes 0, 2, 3 keep exchanging. */
	for (int i = 0; i < 4; i++)
		d[i] = delivered(&D, i);
	broadcast(&D, 0, "zero after the cut");
	broadcast(&D, 2, "two after the cut");
	for (int i = 0; i < 4; i++)
		want[i] = i == 1 ? -1 : d[i] + 2;
	ok(wait_delivered(&D, want, 5000) >= 0, "broadcasts from nodes 0 and 2 reach nodes 0, 2, 3");
	ok(peer_connected(&D, 0, 2) && peer_connected(&D, 0, 3) && peer_field(&D, 0, 2, "connects") == conn2 &&
		   peer_field(&D, 0, 3, "connects") == conn3,
	   "node 0's links to nodes 2 and 3 were never cut");

	/* The link to node 1 comes back and small messages flow again. */
	t0 = now_ms();
	bool back = false;
	while (now_ms() - t0 < 10000 && !(back = peer_connected(&D, 0, 1) && peer_field(&D, 0, 1, "connects") > conn0))
		usleep(50000);
	ok(back, "node 0's link to node 1 is re-established (%ld ms)", now_ms() - t0);
	for (int i = 0; i < 4; i++)
		d[i] = delivered(&D, i);
	broadcast(&D, 1, "one, small again");
	for (int i = 0; i < 4; i++)
		want[i] = d[i] + 1;
	ok(wait_delivered(&D, want, 5000) >= 0, "a small broadcast from node 1 reaches node 0 again");
	is_int(stop_committee(&D), 4, "D's nodes stop cleanly");
	free_committee(&D);
}

/* ---- 5. an authenticated peer misbehaving inside the channel ---- */

struct fake {
	int fd;
	struct weft_sc *sc;
	struct weft_mpw out;
};

/* Dials A's node 0 as A's node 3 (its real key) and completes the handshake. */
static bool fake_open(struct fake *f, const struct weft_identity *id)
{
	uint8_t a0[WEFT_PK_LEN];
	weft_hex_decode(a0, WEFT_PK_LEN, A.keys[0], 64);
	f->fd = tu_tcp_connect("127.0.0.1", A.base, 2000);
	f->sc = weft_sc_new(WEFT_SC_INITIATOR, id, a0, NULL, NULL);
	weft_mpw_init(&f->out);
	if (f->fd < 0)
		return false;
	weft_sc_start(f->sc, &f->out);
	tu_send_all(f->fd, f->out.buf, f->out.len);
	uint8_t in[1024];
	size_t have = 0;
	long deadline = now_ms() + 3000;
	while (now_ms() < deadline) {
		struct pollfd p = {f->fd, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = recv(f->fd, in + have, sizeof(in) - have, 0);
		if (n <= 0)
			return false;
		have += (size_t)n;
		size_t used = 0;
		weft_mpw_reset(&f->out);
		int rc = weft_sc_handshake(f->sc, in, have, &used, &f->out);
		if (rc < 0)
			return false;
		if (rc == 1) {
			tu_send_all(f->fd, f->out.buf, f->out.len);
			return true;
		}
	}
	return false;
}

static void fake_close(struct fake *f)
{
	if (f->fd >= 0)
		close(f->fd);
	weft_sc_free(f->sc);
	weft_mpw_free(&f->out);
	f->fd = -1;
	f->sc = NULL;
}

/* Appends one frame (u32 length || u8 type || payload) to w. */
static void frame(struct weft_mpw *w, uint32_t len, uint8_t type, const void *payload, size_t plen)
{
	uint8_t h[5];
	weft_be32_put(h, len);
	h[4] = type;
	weft_mpw_raw(w, h, 5);
	if (plen)
		weft_mpw_raw(w, payload, plen);
}

/* Seals plain into one record (appended to f->out after a reset). */
static void seal(struct fake *f, const struct weft_mpw *plain)
{
	weft_mpw_reset(&f->out);
	if (weft_sc_seal(f->sc, plain->buf, plain->len, &f->out) != 0)
		abort();
}

/* Opens a fake node-3 link, sends one sealed record holding the frames in
 * plain (or raw bytes when raw), and returns how long until node 0 closed
 * the link (ms), or -1 if it stayed open for wait_ms. */
static long fake_send(const struct weft_identity *id, const struct weft_mpw *plain, const void *raw, size_t rawlen,
		      int wait_ms)
{
	struct fake f;
	if (!fake_open(&f, id)) {
		fake_close(&f);
		return -2;
	}
	if (plain) {
		seal(&f, plain);
		tu_send_all(f.fd, f.out.buf, f.out.len);
	}
	if (raw)
		tu_send_all(f.fd, raw, rawlen);
	long t0 = now_ms();
	bool closed = tu_wait_closed(f.fd, wait_ms);
	long el = now_ms() - t0;
	fake_close(&f);
	return closed ? el : -1;
}

/* Waits until node 0 no longer lists peer 3 as connected. */
static bool wait_peer3_gone(void)
{
	long deadline = now_ms() + 3000;
	while (now_ms() < deadline) {
		if (!peer_connected(&A, 0, 3))
			return true;
		usleep(20000);
	}
	return false;
}

/* Writes a ping record in two halves per write, each write finishing the
 * previous record and starting the next, every gap_ms for total_ms. */
static bool trickle_stream(struct fake *f, int gap_ms, int total_ms)
{
	struct weft_mpw plain;
	weft_mpw_init(&plain);
	uint8_t carry[64];
	size_t ncarry = 0;
	long t0 = now_ms();
	bool alive = true;
	while (alive && now_ms() - t0 < total_ms) {
		weft_mpw_reset(&plain);
		uint8_t ts[8] = {0};
		frame(&plain, 8, 1, ts, 8);
		seal(f, &plain);
		size_t h = f->out.len / 2;
		uint8_t chunk[128];
		memcpy(chunk, carry, ncarry);
		memcpy(chunk + ncarry, f->out.buf, h);
		alive = tu_send_all(f->fd, chunk, ncarry + h) == 0;
		ncarry = f->out.len - h;
		memcpy(carry, f->out.buf + h, ncarry);
		/* Drain what node 0 sends (pongs, pings) and notice a close. */
		struct pollfd p = {f->fd, POLLIN, 0};
		long until = now_ms() + gap_ms;
		while (alive && now_ms() < until) {
			if (poll(&p, 1, (int)(until - now_ms())) > 0) {
				uint8_t sink[4096];
				ssize_t n = recv(f->fd, sink, sizeof(sink), MSG_DONTWAIT);
				if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
					alive = false;
			}
		}
	}
	weft_mpw_free(&plain);
	return alive;
}

static void test_fake_peer(void)
{
	char *path = fmt("%s/identity.key.orig", A.nodes[3].dir);
	struct weft_identity *id3 = NULL;
	int rc = weft_identity_load(path, &id3);
	free(path);
	ok(rc == 0, "node 3's original key loads (the test speaks as node 3)");
	if (rc != 0)
		return;

	/* A correct link first: a protocol message from "node 3" is delivered. */
	struct fake f;
	long long d0 = delivered(&A, 0), connects = peer_field(&A, 0, 3, "connects");
	ok(fake_open(&f, id3), "the test completes the handshake as node 3");
	long deadline = now_ms() + 3000;
	while (!peer_connected(&A, 0, 3) && now_ms() < deadline)
		usleep(20000);
	ok(peer_connected(&A, 0, 3), "node 0 lists node 3 as connected");
	struct weft_mpw msg, plain;
	weft_mpw_init(&msg);
	weft_mpw_init(&plain);
	weft_mpw_array(&msg, 4);
	weft_mpw_uint(&msg, 1);
	weft_mpw_uint(&msg, 0);
	weft_mpw_uint(&msg, 0);
	weft_mpw_bin(&msg, "from the fake node 3", 20);
	frame(&plain, (uint32_t)msg.len, 0, msg.buf, msg.len);
	seal(&f, &plain);
	tu_send_all(f.fd, f.out.buf, f.out.len);
	const long long want[4] = {d0 + 1, -1, -1, -1};
	ok(wait_delivered(&A, want, 3000) >= 0, "node 0 delivers a protocol message sent as node 3");

	/* Replaying that record: authentication fails. */
	long long misb = peer_field(&A, 0, 3, "misbehaviour");
	tu_send_all(f.fd, f.out.buf, f.out.len);
	bool closed = tu_wait_closed(f.fd, 3000);
	ok(closed, "a replayed record closes the link");
	fake_close(&f);
	ok(wait_peer3_gone() && peer_field(&A, 0, 3, "misbehaviour") == misb + 1,
	   "and counts one misbehaviour against node 3 (%lld)", peer_field(&A, 0, 3, "misbehaviour"));
	ok(peer_field(&A, 0, 3, "connects") >= connects + 1, "node 0 counted the fake link as a connect");

	static const struct {
		const char *name, *logged;
		uint32_t len;
		uint8_t type;
		size_t plen;
	} bad[] = {
		{"unknown frame type 7", "unknown frame type", 4, 7, 4},
		{"a frame longer than its record", "frame overruns its record", 100, 0, 10},
		{"a ping of 4 bytes", "bad ping", 4, 1, 4},
	};
	uint8_t payload[16] = {0};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		misb = peer_field(&A, 0, 3, "misbehaviour");
		weft_mpw_reset(&plain);
		frame(&plain, bad[k].len, bad[k].type, payload, bad[k].plen);
		long t = fake_send(id3, &plain, NULL, 0, 3000);
		ok(t >= 0 && t < 1000, "%s: node 0 closes the link at once (%ld ms)", bad[k].name, t);
		ok(wait_peer3_gone() && peer_field(&A, 0, 3, "misbehaviour") == misb + 1 &&
			   tu_file_count(A.nodes[0].log, bad[k].logged) > 0,
		   "%s: one misbehaviour, logged as \"%s\"", bad[k].name, bad[k].logged);
	}
	/* Three bytes of plaintext: not even a frame header. */
	misb = peer_field(&A, 0, 3, "misbehaviour");
	weft_mpw_reset(&plain);
	weft_mpw_raw(&plain, "\0\0\0", 3);
	long t = fake_send(id3, &plain, NULL, 0, 3000);
	ok(t >= 0 && t < 1000 && wait_peer3_gone() && peer_field(&A, 0, 3, "misbehaviour") == misb + 1 &&
		   tu_file_count(A.nodes[0].log, "truncated frame header") > 0,
	   "a 3-byte record: closed at once, misbehaviour, \"truncated frame header\" (%ld ms)", t);

	/* A record header declaring 1 GiB after the handshake. */
	static const uint8_t gib[4] = {0x40, 0, 0, 0};
	misb = peer_field(&A, 0, 3, "misbehaviour");
	t = fake_send(id3, NULL, gib, 4, 3000);
	ok(t >= 0 && t < 1000 && wait_peer3_gone() && peer_field(&A, 0, 3, "misbehaviour") == misb + 1,
	   "a 1 GiB record header from a peer: closed at once, misbehaviour (%ld ms)", t);

	/* Half a record, then nothing: closed after idle_timeout_ms (1500). */
	weft_mpw_reset(&plain);
	uint8_t ts[8] = {0};
	frame(&plain, 8, 1, ts, 8);
	misb = peer_field(&A, 0, 3, "misbehaviour");
	if (fake_open(&f, id3)) {
		seal(&f, &plain);
		tu_send_all(f.fd, f.out.buf, f.out.len / 2);
		long t0 = now_ms();
		closed = tu_wait_closed(f.fd, 5000);
		t = now_ms() - t0;
		ok(closed && t >= 1000 && t < 3500, "half a record then silence: closed after the timeout (%ld ms)", t);
		/* The read timeout (idle) and the incomplete-record timer are both
		 * idle_timeout_ms from the last read: either may fire first. */
		ok(wait_peer3_gone() && peer_field(&A, 0, 3, "misbehaviour") == misb + 1 &&
			   tu_file_count(A.nodes[0].log, "record left incomplete") +
				   tu_file_count(A.nodes[0].log, "silent peer (idle timeout)") > 0,
		   "and logged as a record left incomplete (or an idle peer), one misbehaviour");
	} else {
		skip(2, "handshake as node 3 failed");
	}
	fake_close(&f);

	/* A steady stream where every record completes within 250 ms but each
	 * write ends in the middle of the next record: no record is ever left
	 * incomplete for long, so the link must stay up past idle_timeout_ms. */
	if (fake_open(&f, id3)) {
		misb = peer_field(&A, 0, 3, "misbehaviour");
		bool alive = trickle_stream(&f, 250, 4000);
		long long m2 = peer_field(&A, 0, 3, "misbehaviour");
		ok(alive && m2 == misb,
		   "records that straddle reads but complete every 250 ms keep the link up for 4 s (> 1500 ms timeout)");
		if (!alive)
			diag("the link was cut after a steady stream (misbehaviour %lld -> %lld; log: %d \"record left "
			     "incomplete\" lines)", misb, m2, tu_file_count(A.nodes[0].log, "record left incomplete"));
	} else {
		skip(1, "handshake as node 3 failed");
	}
	fake_close(&f);

	const long long two[4] = {2, 2, 2, -1};
	wait_peer3_gone();
	ok(wait_connected(&A, two, 3000), "through all this A's nodes 0, 1, 2 stay connected");
	long long m01 = peer_field(&A, 0, 1, "misbehaviour") + peer_field(&A, 0, 2, "misbehaviour");
	is_int(m01, 0, "and node 0 charges nothing to nodes 1 and 2");
	weft_mpw_free(&msg);
	weft_mpw_free(&plain);
	weft_identity_free(id3);
}

/* ---- 6. running out of file descriptors ---- */

static void test_fd_exhaustion(void)
{
	/* One node of a committee of 2, started with only 64 descriptors, is
	 * sent more half-open connections than it can hold. */
	struct committee E;
	ok(make_committee(&E, "E", 2, base_port + 11), "committee E: genesis of 2");
	conf_append(&E, 0, "[net]\nhandshake_timeout_ms = 1000\n");
	struct rlimit old, low;
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = 64;
	setrlimit(RLIMIT_NOFILE, &low);
	bool up = start_node(&E, 0);
	setrlimit(RLIMIT_NOFILE, &old);
	ok(up, "E's node 0 starts with RLIMIT_NOFILE = 64");
	if (!up) {
		skip(4, "no node");
		free_committee(&E);
		return;
	}
	int fds[100], opened = 0;
	for (int i = 0; i < 100; i++)
		opened += (fds[i] = tu_tcp_connect("127.0.0.1", base_port + 11, 2000)) >= 0;
	/* Kept short: each spin logs a libevent warning on stderr. */
	char *errpath = fmt("%s.stderr", E.nodes[0].dir);
	usleep(50000);
	double c0 = tu_cpu_seconds(E.nodes[0].pid);
	int w0 = tu_file_count(errpath, "accept");
	usleep(200000);
	double used = tu_cpu_seconds(E.nodes[0].pid) - c0;
	int warnings = tu_file_count(errpath, "accept") - w0;
	ok(warnings < 50, "out of descriptors, the node does not spin on accept()");
	diag("%d connections opened; in 200 ms the node used %.0f ms of CPU and logged %d accept() warnings", opened,
	     used * 1000, warnings);
	json_t *res = NULL, *err = NULL;
	int rc = weft_rpc_client_call_once(E.nodes[0].sock, "status", NULL, 300, &res, &err);
	ok(rc == 0 && res, "out of descriptors, the node still answers RPC status");
	json_decref(res);
	json_decref(err);
	for (int i = 0; i < 100; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	long deadline = now_ms() + 5000;
	json_t *s = NULL;
	while (now_ms() < deadline && (s = rpc(&E, 0, "status", NULL)) == NULL)
		usleep(50000);
	ok(s != NULL, "once the connections are gone the node answers again");
	json_decref(s);
	is_int(stop_node(&E, 0), 1, "E's node 0 stops cleanly");
	struct stat st;
	if (stat(errpath, &st) == 0)
		diag("its stderr grew to %lld bytes", (long long)st.st_size);
	free(errpath);
	free_committee(&E);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		skip_all("libsodium failed to initialise");
	tmp = tu_tmpdir("neth");
	atexit(on_exit_cleanup);
	signal(SIGINT, on_fatal_signal);
	signal(SIGTERM, on_fatal_signal);
	signal(SIGABRT, on_fatal_signal);
	signal(SIGSEGV, on_fatal_signal);
	signal(SIGPIPE, SIG_IGN);
	long t0 = now_ms();
	base_port = tu_port_base(13);
	ok(base_port > 0, "a block of 13 free ports from %d", base_port);
	if (base_port <= 0)
		return done_testing();

	/* A daemon that dies on its own ends the run early (and says why). */
	void (*const tests[])(void) = {
		test_outside_keys,
		test_mitm,
		test_raw_clients,
		test_oversized,
		test_fake_peer,
		test_fd_exhaustion,
	};
	for (size_t k = 0; k < sizeof(tests) / sizeof(tests[0]); k++) {
		tests[k]();
		if (!all_alive()) {
			ok(0, "every daemon is still running after test %zu", k + 1);
			break;
		}
	}

	is_int(stop_committee(&A), 3, "A's nodes stop cleanly");
	free_committee(&A);
	diag("net_hostile took %ld ms", now_ms() - t0);
	return done_testing();
}
