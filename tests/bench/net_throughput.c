/* net_throughput.c - the peer transport benchmark (issue 4), driven by
 * tests/bench/net_throughput.sh.
 *
 *   net_throughput --aead [--seconds S]
 *       raw ChaCha20-Poly1305 (IETF) encrypt and decrypt of 64 KiB buffers,
 *       and memcpy of 64 KiB for scale, single-threaded, S seconds each.
 *   net_throughput [--size N] [--seconds S] [--hwm BYTES]
 *       two nodes on loopback, each a forked process with its own libevent
 *       base and weft_net instance (a 2-node committee on 127.0.0.1, fixed
 *       identities).  Node 0 sends N-byte messages to node 1 for S seconds,
 *       as fast as backpressure allows; node 1 counts them and measures the
 *       window from the first message to the end marker.
 *
 * One line of JSON per measurement on stdout; exit status 0 on success.
 * Each line has "others": how many cores, on average, processes outside
 * the benchmark kept busy meanwhile (from /proc/stat), since on a shared
 * machine their load, not the code, can set the result.  For the same
 * reason every rate is also given per CPU second: the AEAD's bytes over its
 * own CPU time ("mb_per_cpu_s"), the link's payload over the CPU time of its
 * busier side ("ceiling_mb_s", "ceiling_msgs_s", "bottleneck"): what the
 * link would carry with a core for each side.
 *
 * The sender keeps calling weft_net_send while it returns 0.  On
 * WEFT_EAGAIN (the message is queued, but the queue is over its high-water
 * mark) it stops, and a 1 ms timer resumes it once queued_bytes has fallen
 * below half the mark, so the link never runs dry while the sender waits.
 * Every message carries its sequence number in its first 8 bytes; the
 * receiver checks order and loss (a lost or reordered message is reported,
 * and the run fails).  Each side measures its own CPU time (getrusage) over
 * its window: the sender from its first send until its queue is empty, the
 * receiver from its first message to the end marker.
 *
 * The parent forks the receiver first and waits until it listens, then the
 * sender (which dials at once, so no redial race), collects both results
 * through pipes, and ends both children by closing their control pipes.
 * Children die with the parent (PR_SET_PDEATHSIG); a run that does not end
 * within S + 60 s is killed and reported as failed. */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/log.h"
#include "weft/net.h"

#define END_MARK UINT64_MAX      /* sequence number of the end marker */
#define AEAD_SIZE (64 * 1024)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void cpu_times(double *user, double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	*sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double rusage_s(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* CPU seconds the whole machine has been busy (user, nice, system, irq,
 * softirq, steal: everything but idle and iowait), from /proc/stat; -1
 * when it cannot be read. */
static double host_busy_s(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (f == NULL)
		return -1;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		       &v[6], &v[7]);
	fclose(f);
	if (n != 8)
		return -1;
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

/* How many cores, on average, something other than this benchmark kept busy
 * between busy0 / t0 and now (ours: the CPU seconds this benchmark used);
 * -1 when unknown.  Other load on a shared machine distorts a run. */
static double others_cores(double busy0, double t0, double ours)
{
	double busy = host_busy_s(), t = now_s() - t0;
	if (busy0 < 0 || busy < 0 || t <= 0)
		return -1;
	double o = (busy - busy0 - ours) / t;
	return o < 0 ? 0 : o;
}

/* ---- raw AEAD ---- */

/* One AEAD-mode result line: MB/s by the wall clock and per CPU second of
 * this process (which other load on the machine disturbs much less). */
static void print_rate(const char *what, uint64_t calls, double t, double cpu, double busy0, double t0)
{
	double bytes = (double)calls * AEAD_SIZE;
	printf("{\"measure\":\"%s\",\"size\":%d,\"calls\":%llu,\"seconds\":%.3f,\"mb_per_s\":%.1f,"
	       "\"cpu_s\":%.3f,\"mb_per_cpu_s\":%.1f,\"others\":%.2f}\n",
	       what, AEAD_SIZE, (unsigned long long)calls, t, bytes / t / 1e6, cpu, cpu > 0 ? bytes / cpu / 1e6 : 0,
	       others_cores(busy0, t0, cpu));
}

/* Keeps the compiler from dropping work whose result nobody reads. */
static void clobber(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void bench_aead(double seconds)
{
	static uint8_t plain[AEAD_SIZE], cipher[AEAD_SIZE + crypto_aead_chacha20poly1305_ietf_ABYTES],
		copy[AEAD_SIZE];
	uint8_t key[crypto_aead_chacha20poly1305_ietf_KEYBYTES], nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = {0};
	uint8_t ad[4] = {0, 1, 0, 16}; /* like a record header */
	unsigned long long clen, plen;
	randombytes_buf(key, sizeof(key));
	randombytes_buf(plain, sizeof(plain));

	/* Encrypt: a fresh nonce per call, as the record layer does. */
	uint64_t calls = 0, ctr = 0;
	double busy0 = host_busy_s(), cpu0 = rusage_s(RUSAGE_SELF);
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < 16; i++) {
			memcpy(nonce + 4, &ctr, 8);
			ctr++;
			crypto_aead_chacha20poly1305_ietf_encrypt(cipher, &clen, plain, AEAD_SIZE, ad, sizeof(ad), NULL,
								  nonce, key);
			clobber(cipher);
		}
		calls += 16;
		t = now_s() - t0;
	} while (t < seconds);
	print_rate("aead_encrypt", calls, t, rusage_s(RUSAGE_SELF) - cpu0, busy0, t0);

	/* Decrypt (and verify) one valid ciphertext over and over. */
	memset(nonce, 0, sizeof(nonce));
	crypto_aead_chacha20poly1305_ietf_encrypt(cipher, &clen, plain, AEAD_SIZE, ad, sizeof(ad), NULL, nonce, key);
	calls = 0;
	busy0 = host_busy_s();
	cpu0 = rusage_s(RUSAGE_SELF);
	t0 = now_s();
	do {
		for (int i = 0; i < 16; i++) {
			if (crypto_aead_chacha20poly1305_ietf_decrypt(copy, &plen, NULL, cipher, clen, ad, sizeof(ad), nonce,
								      key) != 0) {
				fprintf(stderr, "net_throughput: decrypt failed\n");
				exit(1);
			}
			clobber(copy);
		}
		calls += 16;
		t = now_s() - t0;
	} while (t < seconds);
	print_rate("aead_decrypt", calls, t, rusage_s(RUSAGE_SELF) - cpu0, busy0, t0);

	/* memcpy of the same 64 KiB (cache-resident), to put copies in scale. */
	calls = 0;
	busy0 = host_busy_s();
	cpu0 = rusage_s(RUSAGE_SELF);
	t0 = now_s();
	do {
		for (int i = 0; i < 64; i++) {
			memcpy(copy, plain, AEAD_SIZE);
			clobber(copy);
		}
		calls += 64;
		t = now_s() - t0;
	} while (t < seconds);
	print_rate("memcpy", calls, t, rusage_s(RUSAGE_SELF) - cpu0, busy0, t0);
}

/* ---- the two nodes ---- */

/* What a child reports to the parent (same binary: raw struct over a pipe). */
struct side_result {
	int ok;
	char err[160];
	uint64_t msgs;        /* data messages sent / received */
	uint64_t bytes;       /* payload bytes sent / received */
	uint64_t lost;        /* receiver: sequence numbers skipped */
	uint64_t bad;         /* receiver: wrong length or out of order */
	uint64_t eagain;      /* sender: WEFT_EAGAIN answers */
	uint64_t wire_bytes;  /* sender: bytes written on the wire in its window */
	double window_s;
	double rate_mb_s;     /* receiver: payload MB/s over its window */
	double rate_msgs_s;   /* receiver: messages/s over its window */
	double user_s, sys_s; /* CPU time in the window */
};

struct node {
	uint32_t self;
	size_t size;
	double seconds;
	size_t hwm;
	int result_fd;
	struct event_base *base;
	struct weft_net *net;
	struct event *tick;
	struct event *ctl;
	struct side_result r;
	bool reported;
	/* sender */
	enum { S_WAIT, S_SEND, S_DRAIN, S_DONE } phase;
	uint8_t *msg;
	uint64_t seq;
	double t0, deadline, user0, sys0;
	uint64_t wire0;
	/* receiver */
	uint64_t expect;
	bool started;
};

static void report(struct node *nd)
{
	if (nd->reported)
		return;
	nd->reported = true;
	ssize_t w = write(nd->result_fd, &nd->r, sizeof(nd->r));
	(void)w;
}

static void fail(struct node *nd, const char *why)
{
	nd->r.ok = 0;
	snprintf(nd->r.err, sizeof(nd->r.err), "node %u: %s", nd->self, why);
	report(nd);
	event_base_loopbreak(nd->base);
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
	struct node *nd = arg;
	event_base_loopbreak(nd->base); /* the parent closed the pipe, or wrote: stop */
}

static void on_message(void *ctx, uint32_t from, const uint8_t *msg, size_t len)
{
	struct node *nd = ctx;
	uint64_t seq;
	if (len < 8) {
		nd->r.bad++;
		return;
	}
	memcpy(&seq, msg, 8);
	if (seq == END_MARK) {
		if (nd->r.msgs < 2) {
			fail(nd, "end marker before two messages: nothing to time");
			return;
		}
		double user, sys;
		cpu_times(&user, &sys);
		nd->r.window_s = now_s() - nd->t0;
		nd->r.user_s = user - nd->user0;
		nd->r.sys_s = sys - nd->sys0;
		/* The first message marks the start: count what came after it. */
		nd->r.rate_msgs_s = (double)(nd->r.msgs - 1) / nd->r.window_s;
		nd->r.rate_mb_s = (double)(nd->r.bytes - nd->size) / nd->r.window_s / 1e6;
		nd->r.ok = nd->r.lost == 0 && nd->r.bad == 0;
		if (!nd->r.ok)
			snprintf(nd->r.err, sizeof(nd->r.err), "node 1: %llu lost, %llu bad messages",
				 (unsigned long long)nd->r.lost, (unsigned long long)nd->r.bad);
		report(nd);
		return;
	}
	if (!nd->started) {
		nd->started = true;
		nd->t0 = now_s();
		cpu_times(&nd->user0, &nd->sys0);
	}
	if (len != nd->size || seq < nd->expect)
		nd->r.bad++;
	else if (seq > nd->expect)
		nd->r.lost += seq - nd->expect;
	if (seq >= nd->expect)
		nd->expect = seq + 1;
	nd->r.msgs++;
	nd->r.bytes += len;
}

static uint64_t queued(struct node *nd, struct weft_net_peer_stats *st)
{
	weft_net_peer_stats(nd->net, 1, st);
	return st->queued_bytes;
}

/* Sends until backpressure or the deadline. */
static void pump(struct node *nd)
{
	unsigned int every = nd->size >= 4096 ? 1 : 64; /* how often to look at the clock */
	for (;;) {
		if (nd->seq % every == 0 && now_s() >= nd->deadline) {
			uint64_t end = END_MARK;
			memcpy(nd->msg, &end, 8);
			int rc = weft_net_send(nd->net, 1, nd->msg, 8);
			if (rc != 0 && rc != WEFT_EAGAIN)
				return; /* dropped at the maximum: try again on the next tick */
			nd->phase = S_DRAIN;
			return;
		}
		memcpy(nd->msg, &nd->seq, 8);
		int rc = weft_net_send(nd->net, 1, nd->msg, nd->size);
		if (rc != 0 && rc != WEFT_EAGAIN) {
			char why[96];
			snprintf(why, sizeof(why), "weft_net_send: %s", weft_strerror(rc));
			fail(nd, why);
			return;
		}
		nd->seq++;
		nd->r.msgs++;
		nd->r.bytes += nd->size;
		if (rc == WEFT_EAGAIN) {
			nd->r.eagain++;
			return; /* queued, but over the mark: wait for the queue to drain */
		}
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct node *nd = arg;
	struct weft_net_peer_stats st;
	switch (nd->phase) {
	case S_WAIT:
		if (weft_net_connected(nd->net) == 0) {
			if (now_s() > nd->deadline)
				fail(nd, "no link to node 1 within 10 s");
			return;
		}
		queued(nd, &st);
		nd->wire0 = st.bytes_out;
		nd->phase = S_SEND;
		nd->t0 = now_s();
		nd->deadline = nd->t0 + nd->seconds;
		cpu_times(&nd->user0, &nd->sys0);
		pump(nd);
		return;
	case S_SEND:
		if (queued(nd, &st) < nd->hwm / 2)
			pump(nd);
		return;
	case S_DRAIN:
		if (queued(nd, &st) > 0)
			return;
		double user, sys;
		cpu_times(&user, &sys);
		nd->r.window_s = now_s() - nd->t0;
		nd->r.user_s = user - nd->user0;
		nd->r.sys_s = sys - nd->sys0;
		nd->r.wire_bytes = st.bytes_out - nd->wire0;
		nd->r.ok = 1;
		nd->phase = S_DONE;
		report(nd);
		event_del(nd->tick);
		return;
	case S_DONE:
		return;
	}
}

/* The life of one node (a child process).  Never returns. */
static void run_node(uint32_t self, const uint16_t ports[2], size_t size, double seconds, size_t hwm, int result_fd,
		     int ctl_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, self == 0 ? "wt-sender" : "wt-receiver");
	weft_log_set_level(WEFT_LOG_WARN);

	struct weft_identity *ids[2];
	uint8_t keys[2][WEFT_PK_LEN];
	for (int i = 0; i < 2; i++) {
		uint8_t seed[WEFT_SEED_LEN];
		memset(seed, 0x50 + i, sizeof(seed));
		ids[i] = weft_identity_from_seed(seed);
		memcpy(keys[i], ids[i]->pk, WEFT_PK_LEN);
	}
	struct weft_net_peer_addr addrs[2] = {{"127.0.0.1", ports[0]}, {"127.0.0.1", ports[1]}};

	struct node *nd = calloc(1, sizeof(*nd));
	if (nd == NULL)
		abort();
	nd->self = self;
	nd->size = size;
	nd->seconds = seconds;
	nd->hwm = hwm;
	nd->result_fd = result_fd;
	nd->base = event_base_new();
	if (nd->base == NULL)
		abort();
	struct weft_net_opts o = {
		.base = nd->base,
		.self = ids[self],
		.self_index = self,
		.n = 2,
		.keys = (const uint8_t(*)[WEFT_PK_LEN])keys,
		.addrs = addrs,
		.max_frame = size > (1 << 20) ? size : (1 << 20),
		.queue_hwm = hwm,
		.queue_max = 8 * hwm,
		.handshake_timeout_ms = 10000,
		.idle_timeout_ms = 30000,
		.keepalive_ms = 1000,
		.reconnect_min_ms = 200,
		.reconnect_max_ms = 2000,
		.on_message = on_message,
		.ctx = nd,
	};
	int rc = weft_net_start(&nd->net, &o);
	if (rc != 0) {
		char why[96];
		snprintf(why, sizeof(why), "weft_net_start: %s", weft_strerror(rc));
		fail(nd, why);
		_exit(1);
	}
	if (self == 1) {
		uint8_t ready = 1; /* listening: the parent may start the sender */
		if (write(result_fd, &ready, 1) != 1)
			_exit(1);
	} else {
		nd->msg = calloc(1, size);
		if (nd->msg == NULL)
			abort();
		for (size_t i = 8; i < size; i++)
			nd->msg[i] = (uint8_t)i;
		nd->phase = S_WAIT;
		nd->deadline = now_s() + 10;
		nd->tick = event_new(nd->base, -1, EV_PERSIST, on_tick, nd);
		struct timeval ms = {0, 1000};
		event_add(nd->tick, &ms);
	}
	nd->ctl = event_new(nd->base, ctl_fd, EV_READ, on_ctl, nd);
	event_add(nd->ctl, NULL);
	event_base_dispatch(nd->base);

	if (nd->tick)
		event_free(nd->tick);
	event_free(nd->ctl);
	weft_net_stop(nd->net);
	event_base_free(nd->base);
	weft_identity_free(ids[0]);
	weft_identity_free(ids[1]);
	free(nd->msg);
	free(nd);
	_exit(0);
}

/* Two ports free right now on 127.0.0.1 (both held open while choosing, so
 * they differ; the listener binds with SO_REUSEADDR). */
static int free_ports(uint16_t ports[2])
{
	int fds[2];
	for (int i = 0; i < 2; i++) {
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t sl = sizeof(sin);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
		    getsockname(fds[i], (struct sockaddr *)&sin, &sl) != 0)
			return -1;
		ports[i] = ntohs(sin.sin_port);
	}
	close(fds[0]);
	close(fds[1]);
	return 0;
}

/* Reads exactly len bytes from fd by deadline (monotonic seconds). */
static int read_by(int fd, void *buf, size_t len, double deadline)
{
	size_t got = 0;
	while (got < len) {
		double left = deadline - now_s();
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		ssize_t r = read(fd, (uint8_t *)buf + got, len - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Reads both children's results (r[i] from fds[i]) by deadline; stops early
 * when one of them reports a failure.  NULL, or why it could not. */
static const char *collect(const int fds[2], struct side_result r[2], double deadline)
{
	size_t got[2] = {0, 0};
	while (got[0] < sizeof(r[0]) || got[1] < sizeof(r[1])) {
		struct pollfd p[2];
		int n = 0, which[2];
		for (int i = 0; i < 2; i++)
			if (got[i] < sizeof(r[i])) {
				p[n] = (struct pollfd){.fd = fds[i], .events = POLLIN};
				which[n++] = i;
			}
		double left = deadline - now_s();
		int k = left > 0 ? poll(p, (nfds_t)n, (int)(left * 1000) + 1) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return got[1] < sizeof(r[1]) ? "no result from the receiver (node 1) in time"
						      : "no result from the sender (node 0) in time";
		for (int j = 0; j < n; j++) {
			if (!(p[j].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int i = which[j];
			ssize_t m = read(fds[i], (uint8_t *)&r[i] + got[i], sizeof(r[i]) - got[i]);
			if (m <= 0)
				return i == 1 ? "the receiver (node 1) ended without a result"
					      : "the sender (node 0) ended without a result";
			got[i] += (size_t)m;
			if (got[i] == sizeof(r[i]) && !r[i].ok)
				return NULL; /* the caller reports r[i].err */
		}
	}
	return NULL;
}

static int bench_link(size_t size, double seconds, size_t hwm)
{
	uint16_t ports[2];
	int res[2][2], ctl[2][2]; /* [node][read, write] */
	pid_t pid[2] = {-1, -1};
	struct side_result r[2];
	const char *why = NULL;
	double deadline = now_s() + seconds + 60;
	double busy0 = host_busy_s(), t0 = now_s(), cpu0 = rusage_s(RUSAGE_SELF);

	if (free_ports(ports) != 0 || pipe(res[0]) || pipe(res[1]) || pipe(ctl[0]) || pipe(ctl[1])) {
		perror("net_throughput: setup");
		return 1;
	}
	fflush(stdout);
	/* The receiver (node 1) first; the sender once it listens. */
	for (int k = 0; k < 2; k++) {
		uint32_t self = k == 0 ? 1 : 0;
		pid[self] = fork();
		if (pid[self] < 0) {
			perror("net_throughput: fork");
			return 1;
		}
		if (pid[self] == 0) {
			for (int i = 0; i < 2; i++) {
				close(res[i][0]);
				close(ctl[i][1]);
				if (i != (int)self) {
					close(res[i][1]);
					close(ctl[i][0]);
				}
			}
			run_node(self, ports, size, seconds, hwm, res[self][1], ctl[self][0]);
		}
		if (self == 1) {
			uint8_t ready;
			if (read_by(res[1][0], &ready, 1, now_s() + 10) != 0 || ready != 1) {
				why = "node 1 did not start listening";
				break;
			}
		}
	}
	close(res[0][1]);
	close(res[1][1]);
	close(ctl[0][0]);
	close(ctl[1][0]);
	memset(r, 0, sizeof(r));
	if (why == NULL)
		why = collect((const int[2]){res[0][0], res[1][0]}, r, deadline);
	/* Closing the control pipes ends both children. */
	close(ctl[0][1]);
	close(ctl[1][1]);
	for (int i = 0; i < 2; i++) {
		if (pid[i] <= 0)
			continue;
		int status = 0;
		double until = now_s() + 5;
		while (waitpid(pid[i], &status, WNOHANG) == 0) {
			if (now_s() > until) {
				kill(pid[i], SIGKILL);
				waitpid(pid[i], &status, 0);
				break;
			}
			usleep(1000);
		}
	}
	double others = others_cores(busy0, t0, rusage_s(RUSAGE_SELF) - cpu0 + rusage_s(RUSAGE_CHILDREN));
	for (int i = 1; i >= 0; i--)
		if (why == NULL && !r[i].ok && r[i].err[0])
			why = r[i].err;
	if (why == NULL && (!r[0].ok || !r[1].ok))
		why = "a node failed";
	if (why == NULL && r[1].msgs != r[0].msgs)
		why = "the receiver did not get every message";
	if (why) {
		printf("{\"measure\":\"link\",\"size\":%zu,\"error\":\"%s\"}\n", size, why);
		return 1;
	}
	const struct side_result *s = &r[0], *d = &r[1];
	/* Payload per CPU second of each side; the smaller one is what the link
	 * could carry if the busier side had a core to itself. */
	double snd_rate = s->user_s + s->sys_s > 0 ? (double)s->bytes / (s->user_s + s->sys_s) / 1e6 : 0;
	double rcv_rate = d->user_s + d->sys_s > 0 ? (double)d->bytes / (d->user_s + d->sys_s) / 1e6 : 0;
	printf("{\"measure\":\"link\",\"size\":%zu,\"seconds\":%.3f,\"hwm\":%zu,\"messages\":%llu,\"payload_bytes\":%llu,"
	       "\"window_s\":%.3f,\"mb_per_s\":%.1f,\"msgs_per_s\":%.0f,\"lost\":%llu,"
	       "\"wire_bytes\":%llu,\"wire_overhead\":%.4f,\"eagain\":%llu,"
	       "\"snd_window_s\":%.3f,\"snd_user_s\":%.3f,\"snd_sys_s\":%.3f,\"snd_cpu\":%.3f,"
	       "\"rcv_user_s\":%.3f,\"rcv_sys_s\":%.3f,\"rcv_cpu\":%.3f,"
	       "\"snd_mb_per_cpu_s\":%.1f,\"rcv_mb_per_cpu_s\":%.1f,\"ceiling_mb_s\":%.1f,\"ceiling_msgs_s\":%.0f,"
	       "\"bottleneck\":\"%s\",\"others\":%.2f}\n",
	       size, seconds, hwm, (unsigned long long)d->msgs, (unsigned long long)d->bytes, d->window_s, d->rate_mb_s,
	       d->rate_msgs_s, (unsigned long long)d->lost, (unsigned long long)s->wire_bytes,
	       s->bytes ? (double)s->wire_bytes / (double)s->bytes - 1 : 0, (unsigned long long)s->eagain, s->window_s,
	       s->user_s, s->sys_s, (s->user_s + s->sys_s) / s->window_s, d->user_s, d->sys_s,
	       (d->user_s + d->sys_s) / d->window_s, snd_rate, rcv_rate, snd_rate < rcv_rate ? snd_rate : rcv_rate,
	       (snd_rate < rcv_rate ? snd_rate : rcv_rate) * 1e6 / (double)size, snd_rate < rcv_rate ? "sender" : "receiver",
	       others);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: net_throughput --aead [--seconds S]\n"
			"       net_throughput [--size BYTES] [--seconds S] [--hwm BYTES]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"aead", no_argument, NULL, 'a'},
		{"size", required_argument, NULL, 's'},
		{"seconds", required_argument, NULL, 't'},
		{"hwm", required_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	bool aead = false;
	size_t size = 65536, hwm = 8 << 20;
	double seconds = 3;
	int ch;
	char *end;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			aead = true;
			break;
		case 's':
			size = strtoul(optarg, &end, 10);
			if (*end || size < 8 || size > (64 << 20))
				usage();
			break;
		case 't':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0 && seconds <= 600))
				usage();
			break;
		case 'w':
			hwm = strtoul(optarg, &end, 10);
			if (*end || hwm < (64 << 10))
				usage();
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (weft_crypto_init() != 0) {
		fprintf(stderr, "net_throughput: cannot initialise libsodium\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (aead) {
		bench_aead(seconds);
		return 0;
	}
	return bench_link(size, seconds, hwm);
}
