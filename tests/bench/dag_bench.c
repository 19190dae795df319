/* dag_bench.c - the load-generating client of the DAG consensus benchmark
 * (tests/bench/dag_bench.sh): open-loop clients submitting fixed-size
 * transactions at a fixed total rate through the RPC sockets of a running
 * committee, measuring what Narwhal's harness reports.
 *
 * One process, one thread, one epoll loop.  Per node it opens a data
 * connection (tx.submit_batch every --batch-ms with the transactions due
 * by then, pipelined), a subscription (tx.subscribe: the proto.deliver
 * notifications of committed transactions; subscribed again at once when
 * the node cuts it as a slow subscriber, the cuts counted) and a control
 * connection (status for the pid, dag.info every second).  Every
 * transaction is --size bytes:
 *   0..3 "WFTB", 4..7 run nonce, 8..11 connection (node) index,
 *   12..19 sequence number, 20..27 send time (CLOCK_MONOTONIC ns),
 *   then filler;
 * unique, so no digest repeats.  The send time is the batch's: when it was
 * built and handed to the socket (queueing in our output buffer counts).
 *
 * Phases: warm-up (--warmup s), the measured window (--duration s), then no
 * more sending while the window's transactions drain (at most --drain s).
 * Measured, over the window:
 *   consensus TPS  committed_txs (dag.info) delta / window, mean over nodes;
 *   e2e TPS        transactions sent in the window that came back committed
 *                  (proto.deliver at the node they were submitted to, or at
 *                  node 0 with --subscribe one) / window;
 *   latency        send to that notification, p50 / p90 / p99 / max;
 *   CPU            per weftd (/proc/PID/stat), this client (getrusage), and
 *                  the whole machine (/proc/stat), in cores.
 * Output: one JSON line on stdout; progress on stderr with --verbose. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "weft/mp.h"

#define MAX_NODES 64
#define TX_MAGIC "WFTB"
#define FRAME_MAX (64u << 20)

enum kind { K_SUBMIT, K_INFO, K_STATUS, K_SUBSCRIBE };

struct pend {
	uint64_t id;
	enum kind kind;
	uint32_t count;  /* transactions in a submit */
	bool in_window;  /* a submit sent in the measured window */
	uint64_t stamp;  /* send time, ns */
};

struct buf {
	uint8_t *p;
	size_t off, len, cap;
};

struct info {
	uint64_t committed_txs, round, mempool_txs, committed_round, own_vertices, timeouts;
	uint64_t fetches, fetched_vertices, delivered_vertices;
	uint64_t at; /* when the reply arrived, ns */
	bool have;
};

struct conn {
	int fd, node;
	const char *path;
	bool ctl, sub, want_out;
	uint64_t drops; /* sub: times the node cut us off (rpc.slow_subscriber) */
	struct buf in, out;
	uint64_t next_id;
	struct pend *q;
	size_t qh, qn, qcap;
	/* data connection */
	uint64_t seq, generated, not_sent, sent, accepted, rejected, errors;
	uint64_t win_expected, win_delivered, delivered_other, deliveries;
	uint64_t last_batch;
	/* control connection */
	long pid;
	struct info last, start, end;
	bool mark_start, mark_end;
};

static struct {
	double rate;
	unsigned size, batch_ms, batch_max;
	double warmup, duration, drain;
	bool sub_all, sub_none, verbose;
	const char *socks[MAX_NODES];
	int nsocks;
} opt = {.rate = 10000, .size = 512, .batch_ms = 5, .batch_max = 1500, .warmup = 5, .duration = 20, .drain = 5,
	 .sub_all = true};

static int ep;
static struct conn data[MAX_NODES], ctl[MAX_NODES], sub[MAX_NODES];
static bool subscribed[MAX_NODES];
static uint32_t nonce;
static uint64_t t0, win_start, win_end;
static uint32_t *lat;
static size_t nlat, caplat;
static uint64_t out_limit = 32u << 20;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "dag_bench: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

static void buf_reserve(struct buf *b, size_t more)
{
	if (b->off > 0 && (b->off == b->len || b->off > b->cap / 2)) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->len + more <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 65536;
	while (cap < b->len + more)
		cap *= 2;
	b->p = realloc(b->p, cap);
	if (b->p == NULL)
		abort();
	b->cap = cap;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void watch(struct conn *c, bool out)
{
	if (c->want_out == out)
		return;
	c->want_out = out;
	struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) != 0)
		die("epoll_ctl: %s", strerror(errno));
}

static void flush(struct conn *c)
{
	while (c->out.off < c->out.len) {
		ssize_t n = write(c->fd, c->out.p + c->out.off, c->out.len - c->out.off);
		if (n > 0) {
			c->out.off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			watch(c, true);
			return;
		}
		die("write to the RPC socket: %s", n < 0 ? strerror(errno) : "closed");
	}
	c->out.off = c->out.len = 0;
	watch(c, false);
}

static void push_pend(struct conn *c, struct pend p)
{
	if (c->qn == c->qcap) {
		size_t cap = c->qcap ? 2 * c->qcap : 64;
		struct pend *q = malloc(cap * sizeof(*q));
		if (q == NULL)
			abort();
		for (size_t i = 0; i < c->qn; i++)
			q[i] = c->q[(c->qh + i) % c->qcap];
		free(c->q);
		c->q = q, c->qh = 0, c->qcap = cap;
	}
	c->q[(c->qh + c->qn++) % c->qcap] = p;
}

/* Appends [0, id, method, []] and remembers it. */
static void call(struct conn *c, const char *method, enum kind kind)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, c->next_id);
	weft_mpw_str(&w, method);
	weft_mpw_array(&w, 0);
	buf_reserve(&c->out, w.len);
	memcpy(c->out.p + c->out.len, w.buf, w.len);
	c->out.len += w.len;
	weft_mpw_free(&w);
	push_pend(c, (struct pend){.id = c->next_id++, .kind = kind});
	flush(c);
}

/* One tx.submit_batch of n transactions, written straight into the output
 * buffer: [0, id, "tx.submit_batch", [{"txs": [bin...]}]]. */
static void submit(struct conn *c, uint32_t n, uint64_t stamp)
{
	size_t need = 64 + (size_t)n * (opt.size + 5);
	buf_reserve(&c->out, need);
	uint8_t *p = c->out.p + c->out.len, *start = p;
	*p++ = 0x94;
	*p++ = 0x00;
	*p++ = 0xcf, put_be(p, c->next_id, 8), p += 8;
	*p++ = 0xa0 | 15, memcpy(p, "tx.submit_batch", 15), p += 15;
	*p++ = 0x91;
	*p++ = 0x81;
	*p++ = 0xa3, memcpy(p, "txs", 3), p += 3;
	*p++ = 0xdd, put_be(p, n, 4), p += 4;
	for (uint32_t i = 0; i < n; i++) {
		if (opt.size < 256)
			*p++ = 0xc4, *p++ = (uint8_t)opt.size;
		else if (opt.size < 65536)
			*p++ = 0xc5, put_be(p, opt.size, 2), p += 2;
		else
			*p++ = 0xc6, put_be(p, opt.size, 4), p += 4;
		memcpy(p, TX_MAGIC, 4);
		put_be(p + 4, nonce, 4);
		put_be(p + 8, (uint64_t)c->node, 4);
		put_be(p + 12, c->seq++, 8);
		put_be(p + 20, stamp, 8);
		/* filler: cheap, varying, not all zero */
		uint64_t x = c->seq * 0x9e3779b97f4a7c15ull ^ nonce;
		for (unsigned k = 28; k < opt.size; k += 8) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			uint8_t tmp[8];
			put_be(tmp, x, 8);
			memcpy(p + k, tmp, opt.size - k < 8 ? opt.size - k : 8);
		}
		p += opt.size;
	}
	c->out.len += (size_t)(p - start);
	bool in_window = stamp >= win_start && stamp < win_end;
	push_pend(c, (struct pend){.id = c->next_id++, .kind = K_SUBMIT, .count = n, .in_window = in_window, .stamp = stamp});
	c->sent += n;
	flush(c);
}

static void record_latency(uint64_t ns)
{
	if (nlat == caplat) {
		caplat = caplat ? 2 * caplat : 1 << 20;
		lat = realloc(lat, caplat * sizeof(*lat));
		if (lat == NULL)
			abort();
	}
	uint64_t us = ns / 1000;
	lat[nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* A proto.deliver notification: [2, "proto.deliver", [{origin, seq, invalid, data}]]. */
static void on_deliver(struct conn *c, struct weft_mp_reader *r, uint64_t now)
{
	uint32_t n, pairs;
	if (weft_mp_read_array(r, &n) || n < 1 || weft_mp_read_map(r, &pairs))
		return;
	for (uint32_t i = 0; i < pairs; i++) {
		const char *k;
		uint32_t klen;
		if (weft_mp_read_str(r, &k, &klen))
			return;
		if (klen != 4 || memcmp(k, "data", 4) != 0) {
			if (weft_mp_skip(r))
				return;
			continue;
		}
		const uint8_t *b;
		uint32_t len;
		if (weft_mp_read_bin(r, &b, &len))
			return;
		c->deliveries++;
		if (len < 28 || memcmp(b, TX_MAGIC, 4) != 0 || get_be(b + 4, 4) != nonce)
			return;
		uint32_t origin = (uint32_t)get_be(b + 8, 4);
		if (origin >= (uint32_t)opt.nsocks)
			return;
		/* all subscribed: each node reports its own clients' transactions;
		 * one subscribed (node 0): every node's. */
		if (opt.sub_all && origin != (uint32_t)c->node) {
			c->delivered_other++;
			return;
		}
		uint64_t stamp = get_be(b + 20, 8);
		if (stamp >= win_start && stamp < win_end) {
			data[origin].win_delivered++;
			record_latency(now - stamp);
		}
		return;
	}
}

static void on_info(struct conn *c, struct weft_mp_reader *r, uint64_t now)
{
	uint32_t pairs;
	struct info in = {.at = now, .have = true};
	if (weft_mp_read_map(r, &pairs))
		return;
	for (uint32_t i = 0; i < pairs; i++) {
		const char *k;
		uint32_t klen;
		uint64_t v = 0;
		if (weft_mp_read_str(r, &k, &klen))
			return;
		uint64_t *dst = NULL;
#define KEY(name, field) else if (klen == sizeof(name) - 1 && memcmp(k, name, klen) == 0) dst = &in.field
		if (0) {
		}
		KEY("committed_txs", committed_txs);
		KEY("round", round);
		KEY("mempool_txs", mempool_txs);
		KEY("committed_round", committed_round);
		KEY("own_vertices", own_vertices);
		KEY("timeouts", timeouts);
		KEY("delivered_vertices", delivered_vertices);
#undef KEY
		if (dst && weft_mp_peek_type(r) == WEFT_MP_UINT && weft_mp_read_uint(r, &v) == 0) {
			*dst = v;
		} else if (klen == 4 && memcmp(k, "sync", 4) == 0 && weft_mp_peek_type(r) == WEFT_MP_MAP) {
			uint32_t n;
			weft_mp_read_map(r, &n);
			for (uint32_t j = 0; j < n; j++) {
				const char *sk;
				uint32_t sklen;
				if (weft_mp_read_str(r, &sk, &sklen))
					return;
				if (sklen == 7 && memcmp(sk, "fetches", 7) == 0 && weft_mp_peek_type(r) == WEFT_MP_UINT)
					weft_mp_read_uint(r, &in.fetches);
				else if (sklen == 16 && memcmp(sk, "fetched_vertices", 16) == 0 &&
					 weft_mp_peek_type(r) == WEFT_MP_UINT)
					weft_mp_read_uint(r, &in.fetched_vertices);
				else if (weft_mp_skip(r))
					return;
			}
		} else if (weft_mp_skip(r)) {
			return;
		}
	}
	c->last = in;
	if (c->mark_start && !c->start.have)
		c->start = in;
	if (c->mark_end && !c->end.have)
		c->end = in;
}

static void on_status(struct conn *c, struct weft_mp_reader *r)
{
	uint32_t pairs;
	if (weft_mp_read_map(r, &pairs))
		return;
	for (uint32_t i = 0; i < pairs; i++) {
		const char *k;
		uint32_t klen;
		uint64_t v;
		if (weft_mp_read_str(r, &k, &klen))
			return;
		if (klen == 3 && memcmp(k, "pid", 3) == 0 && weft_mp_read_uint(r, &v) == 0)
			c->pid = (long)v;
		else if (weft_mp_skip(r))
			return;
	}
}

static void on_frame(struct conn *c, const uint8_t *f, size_t len, uint64_t now)
{
	struct weft_mp_reader r;
	uint32_t n;
	uint64_t type, id;
	weft_mp_reader_init(&r, f, len);
	if (weft_mp_read_array(&r, &n) || weft_mp_read_uint(&r, &type))
		die("%s", "a malformed frame from the node");
	if (type == 2) {
		const char *m;
		uint32_t mlen;
		if (weft_mp_read_str(&r, &m, &mlen) == 0 && mlen == 13 && memcmp(m, "proto.deliver", 13) == 0)
			on_deliver(c, &r, now);
		return;
	}
	if (type != 1 || n != 4 || weft_mp_read_uint(&r, &id) || c->qn == 0)
		die("%s", "an unexpected frame from the node");
	struct pend p = c->q[c->qh];
	c->qh = (c->qh + 1) % c->qcap, c->qn--;
	if (p.id != id)
		die("%s", "a reply out of order");
	if (!weft_mp_peek_nil(&r)) {
		struct weft_mp_obj o;
		uint32_t pairs;
		const char *msg = "?";
		uint32_t mlen = 1;
		if (weft_mp_read_map(&r, &pairs) == 0)
			for (uint32_t i = 0; i < pairs; i++) {
				const char *k;
				uint32_t klen;
				if (weft_mp_read_str(&r, &k, &klen))
					break;
				if (klen == 7 && memcmp(k, "message", 7) == 0 && weft_mp_read_str(&r, &msg, &mlen) == 0)
					continue;
				if (weft_mp_read(&r, &o))
					break;
			}
		char m[256];
		snprintf(m, sizeof(m), "%.*s", (int)mlen, msg);
		if (p.kind != K_SUBMIT)
			die("RPC error: %s", m);
		c->errors++;
		c->rejected += p.count;
		if (opt.verbose)
			fprintf(stderr, "dag_bench: node %d: submit failed: %s\n", c->node, m);
		return;
	}
	weft_mp_read_nil(&r);
	switch (p.kind) {
	case K_SUBMIT: {
		uint32_t pairs;
		uint64_t accepted = 0;
		if (weft_mp_read_map(&r, &pairs) == 0)
			for (uint32_t i = 0; i < pairs; i++) {
				const char *k;
				uint32_t klen;
				if (weft_mp_read_str(&r, &k, &klen))
					break;
				if (klen == 8 && memcmp(k, "accepted", 8) == 0) {
					weft_mp_read_uint(&r, &accepted);
					break;
				}
				if (weft_mp_skip(&r))
					break;
			}
		c->accepted += accepted;
		c->rejected += p.count - accepted;
		if (p.in_window)
			c->win_expected += accepted;
		break;
	}
	case K_INFO:
		on_info(c, &r, now);
		break;
	case K_STATUS:
		on_status(c, &r);
		break;
	case K_SUBSCRIBE:
		break;
	}
}

static void open_conn(struct conn *c, const char *path, int node, bool is_ctl);

/* The node closed a subscription (a subscriber more than 16 MiB behind is
 * cut): count it, subscribe again, go on; what it missed is not seen. */
static void resubscribe(struct conn *c)
{
	uint64_t drops = c->drops + 1;
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in.p);
	free(c->out.p);
	free(c->q);
	open_conn(c, c->path, c->node, false);
	c->sub = true;
	c->drops = drops;
	call(c, "tx.subscribe", K_SUBSCRIBE);
	if (opt.verbose)
		fprintf(stderr, "dag_bench: node %d dropped our subscription; subscribed again\n", c->node);
}

static void on_readable(struct conn *c)
{
	for (;;) {
		buf_reserve(&c->in, 1 << 20);
		ssize_t n = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0 && c->sub) {
			resubscribe(c);
			return;
		}
		if (n <= 0)
			die("the node closed the RPC connection (%s)", n < 0 ? strerror(errno) : "EOF; a slow subscriber?");
		c->in.len += (size_t)n;
		uint64_t now = now_ns();
		for (;;) {
			size_t flen;
			int rc = weft_mp_frame_len(c->in.p + c->in.off, c->in.len - c->in.off, FRAME_MAX, &flen);
			if (rc != 0)
				break;
			on_frame(c, c->in.p + c->in.off, flen, now);
			c->in.off += flen;
		}
		if ((size_t)n < 1 << 20)
			break;
	}
}

static void open_conn(struct conn *c, const char *path, int node, bool is_ctl)
{
	memset(c, 0, sizeof(*c));
	c->node = node, c->ctl = is_ctl, c->next_id = 1, c->path = path;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		die("socket path too long: %s", path);
	strcpy(a.sun_path, path);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("cannot connect to %s", path);
	int sz = 4 << 20;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	c->want_out = false;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
		die("epoll_ctl: %s", strerror(errno));
}

static void poll_once(int timeout_ms)
{
	struct epoll_event evs[3 * MAX_NODES];
	int n = epoll_wait(ep, evs, 3 * MAX_NODES, timeout_ms);
	if (n < 0 && errno != EINTR)
		die("epoll_wait: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		struct conn *c = evs[i].data.ptr;
		if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			on_readable(c);
		if (evs[i].events & EPOLLOUT)
			flush(c);
	}
}

/* Waits until every connection has no request outstanding. */
static void settle_all(double seconds)
{
	uint64_t until = now_ns() + (uint64_t)(seconds * 1e9);
	for (;;) {
		bool busy = false;
		for (int i = 0; i < opt.nsocks; i++)
			busy |= data[i].qn > 0 || ctl[i].qn > 0 || (subscribed[i] && sub[i].qn > 0);
		if (!busy)
			return;
		if (now_ns() > until)
			die("%s", "the nodes did not answer in time");
		poll_once(10);
	}
}

struct cpu {
	double node[MAX_NODES]; /* seconds */
	double self, busy, total; /* machine: busy and total seconds (all cores) */
};

static void cpu_sample(struct cpu *s)
{
	long tck = sysconf(_SC_CLK_TCK);
	for (int i = 0; i < opt.nsocks; i++) {
		char path[64], line[2048];
		snprintf(path, sizeof(path), "/proc/%ld/stat", ctl[i].pid);
		FILE *f = fopen(path, "r");
		s->node[i] = 0;
		if (f && fgets(line, sizeof(line), f)) {
			char *p = strrchr(line, ')');
			unsigned long ut = 0, st = 0;
			/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
			if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
				s->node[i] = (double)(ut + st) / (double)tck;
		}
		if (f)
			fclose(f);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	s->self = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	FILE *f = fopen("/proc/stat", "r");
	unsigned long long v[10] = {0};
	if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			&v[7]) == 8) {
		s->busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)tck;
		s->total = s->busy + (double)(v[3] + v[4]) / (double)tck;
	}
	if (f)
		fclose(f);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(double q)
{
	if (nlat == 0)
		return 0;
	size_t i = (size_t)ceil(q * (double)nlat);
	if (i > 0)
		i--;
	if (i >= nlat)
		i = nlat - 1;
	return lat[i] / 1000.0;
}

static void usage(void)
{
	fprintf(stderr, "usage: dag_bench --sock PATH [--sock PATH...] [--rate TX/S] [--size BYTES] [--duration S]\n"
			"                 [--warmup S] [--drain S] [--batch-ms MS] [--batch-max N] [--subscribe all|one|none]\n"
			"                 [--verbose]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--verbose") == 0) {
			opt.verbose = true;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--sock") == 0 && opt.nsocks < MAX_NODES)
			opt.socks[opt.nsocks++] = v;
		else if (strcmp(a, "--rate") == 0)
			opt.rate = atof(v);
		else if (strcmp(a, "--size") == 0)
			opt.size = (unsigned)atoi(v);
		else if (strcmp(a, "--duration") == 0)
			opt.duration = atof(v);
		else if (strcmp(a, "--warmup") == 0)
			opt.warmup = atof(v);
		else if (strcmp(a, "--drain") == 0)
			opt.drain = atof(v);
		else if (strcmp(a, "--batch-ms") == 0)
			opt.batch_ms = (unsigned)atoi(v);
		else if (strcmp(a, "--batch-max") == 0)
			opt.batch_max = (unsigned)atoi(v);
		else if (strcmp(a, "--subscribe") == 0) {
			opt.sub_all = strcmp(v, "all") == 0;
			opt.sub_none = strcmp(v, "none") == 0;
			if (!opt.sub_all && !opt.sub_none && strcmp(v, "one") != 0)
				usage();
		} else
			usage();
	}
	if (opt.nsocks == 0 || opt.size < 28 || opt.rate <= 0 || opt.batch_ms == 0 || opt.batch_max == 0)
		usage();
	/* a request under rpc.max_frame (1 MiB by default) */
	if ((uint64_t)opt.batch_max * (opt.size + 5) > (1u << 20) - 4096)
		opt.batch_max = (unsigned)(((1u << 20) - 4096) / (opt.size + 5));

	ep = epoll_create1(EPOLL_CLOEXEC);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	nonce = (uint32_t)(ts.tv_nsec ^ (uint64_t)getpid() << 16 ^ (uint64_t)ts.tv_sec);
	win_start = win_end = UINT64_MAX;
	for (int i = 0; i < opt.nsocks; i++) {
		open_conn(&data[i], opt.socks[i], i, false);
		open_conn(&ctl[i], opt.socks[i], i, true);
		call(&ctl[i], "status", K_STATUS);
		call(&ctl[i], "dag.info", K_INFO);
		if (opt.sub_all || (!opt.sub_none && i == 0)) {
			subscribed[i] = true;
			open_conn(&sub[i], opt.socks[i], i, false);
			sub[i].sub = true;
			call(&sub[i], "tx.subscribe", K_SUBSCRIBE);
		}
	}
	settle_all(10);

	t0 = now_ns();
	win_start = t0 + (uint64_t)(opt.warmup * 1e9);
	win_end = win_start + (uint64_t)(opt.duration * 1e9);
	uint64_t drain_end = win_end + (uint64_t)(opt.drain * 1e9);
	uint64_t next_info = t0 + 1000000000ull, batch_ns = (uint64_t)opt.batch_ms * 1000000ull;
	double per_conn = opt.rate / opt.nsocks;
	struct cpu c0 = {0}, c1 = {0};
	bool started = false, ended = false;
	uint64_t end_at = 0;
	for (;;) {
		uint64_t now = now_ns();
		if (!started && now >= win_start) {
			started = true;
			cpu_sample(&c0);
			for (int i = 0; i < opt.nsocks; i++) {
				ctl[i].mark_start = true;
				call(&ctl[i], "dag.info", K_INFO);
			}
		}
		if (!ended && now >= win_end) {
			ended = true;
			cpu_sample(&c1);
			for (int i = 0; i < opt.nsocks; i++) {
				ctl[i].mark_end = true;
				call(&ctl[i], "dag.info", K_INFO);
			}
		}
		if (now >= next_info) {
			next_info += 1000000000ull;
			for (int i = 0; i < opt.nsocks; i++)
				if (ctl[i].qn < 4)
					call(&ctl[i], "dag.info", K_INFO);
			if (opt.verbose) {
				uint64_t exp = 0, got = 0, rej = 0;
				for (int i = 0; i < opt.nsocks; i++)
					exp += data[i].win_expected, got += data[i].win_delivered, rej += data[i].rejected;
				fprintf(stderr, "t=%5.1f s", (double)(now - t0) / 1e9);
				for (int i = 0; i < opt.nsocks; i++)
					fprintf(stderr, " | n%d round %llu committed %llu mempool %llu", i,
						(unsigned long long)ctl[i].last.round, (unsigned long long)ctl[i].last.committed_txs,
						(unsigned long long)ctl[i].last.mempool_txs);
				fprintf(stderr, " | rejected %llu, window %llu/%llu\n", (unsigned long long)rej,
					(unsigned long long)got, (unsigned long long)exp);
			}
		}
		if (now < win_end) {
			for (int i = 0; i < opt.nsocks; i++) {
				struct conn *c = &data[i];
				uint64_t due_total = (uint64_t)(per_conn * (double)(now - t0) / 1e9);
				if (due_total <= c->generated)
					continue;
				uint64_t due = due_total - c->generated;
				if (now - c->last_batch < batch_ns && due < opt.batch_max)
					continue;
				c->last_batch = now;
				while (due > 0) {
					uint32_t n = due > opt.batch_max ? opt.batch_max : (uint32_t)due;
					c->generated += n;
					due -= n;
					if (c->out.len - c->out.off > out_limit)
						c->not_sent += n; /* the node does not keep up reading */
					else
						submit(c, n, now);
				}
			}
		} else if (ended) {
			bool drained = true;
			for (int i = 0; i < opt.nsocks; i++)
				drained &= data[i].qn == 0 && ctl[i].end.have && data[i].win_delivered >= data[i].win_expected;
			if (opt.sub_none) {
				drained = true;
				for (int i = 0; i < opt.nsocks; i++)
					drained &= data[i].qn == 0 && ctl[i].end.have;
			}
			if (drained || now >= drain_end) {
				end_at = now;
				break;
			}
		}
		uint64_t next = next_info;
		for (int i = 0; i < opt.nsocks && now < win_end; i++) {
			uint64_t t = data[i].last_batch + batch_ns;
			if (t < next)
				next = t;
		}
		if (!started && win_start < next)
			next = win_start;
		if (!ended && win_end < next)
			next = win_end;
		now = now_ns();
		int ms = next > now ? (int)((next - now + 999999) / 1000000) : 0;
		poll_once(ms > 100 ? 100 : ms);
	}

	qsort(lat, nlat, sizeof(*lat), cmp_u32);
	double win = opt.duration;
	double cons = 0;
	int ncons = 0;
	for (int i = 0; i < opt.nsocks; i++)
		if (ctl[i].start.have && ctl[i].end.have && ctl[i].end.at > ctl[i].start.at) {
			cons += (double)(ctl[i].end.committed_txs - ctl[i].start.committed_txs) /
				((double)(ctl[i].end.at - ctl[i].start.at) / 1e9);
			ncons++;
		}
	cons = ncons ? cons / ncons : 0;
	uint64_t sent = 0, accepted = 0, rejected = 0, not_sent = 0, exp = 0, got = 0, errors = 0;
	for (int i = 0; i < opt.nsocks; i++) {
		sent += data[i].sent, accepted += data[i].accepted, rejected += data[i].rejected;
		not_sent += data[i].not_sent, exp += data[i].win_expected, got += data[i].win_delivered;
		errors += data[i].errors;
	}
	double span = (c1.total - c0.total) > 0 ? c1.total - c0.total : 1;
	double wall = (double)(win_end - win_start) / 1e9;
	printf("{\"nodes\":%d,\"rate\":%.0f,\"size\":%u,\"duration\":%.1f,\"warmup\":%.1f,\"subscribe\":\"%s\","
	       "\"consensus_tps\":%.0f,\"e2e_tps\":%.0f,\"p50_ms\":%.1f,\"p90_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f,"
	       "\"sent\":%llu,\"accepted\":%llu,\"rejected\":%llu,\"submit_errors\":%llu,\"not_sent\":%llu,"
	       "\"window_accepted\":%llu,\"window_committed\":%llu,\"drain_s\":%.2f,",
	       opt.nsocks, opt.rate, opt.size, opt.duration, opt.warmup,
	       opt.sub_all ? "all" : opt.sub_none ? "none" : "one", cons, (double)got / win, pct(0.5), pct(0.9),
	       pct(0.99), nlat ? lat[nlat - 1] / 1000.0 : 0, (unsigned long long)sent, (unsigned long long)accepted,
	       (unsigned long long)rejected, (unsigned long long)errors, (unsigned long long)not_sent,
	       (unsigned long long)exp, (unsigned long long)got, (double)(end_at - win_end) / 1e9);
	printf("\"node_cpu\":[");
	double nodes_cpu = 0;
	for (int i = 0; i < opt.nsocks; i++) {
		printf("%s%.3f", i ? "," : "", (c1.node[i] - c0.node[i]) / wall);
		nodes_cpu += (c1.node[i] - c0.node[i]) / wall;
	}
	printf("],\"nodes_cpu\":%.3f,\"client_cpu\":%.3f,\"machine_busy\":%.3f,\"machine_cores\":%.0f,",
	       nodes_cpu, (c1.self - c0.self) / wall, (c1.busy - c0.busy) / wall, span / wall);
	printf("\"rounds\":[");
	for (int i = 0; i < opt.nsocks; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)(ctl[i].end.round - ctl[i].start.round));
	printf("],\"mempool_end\":[");
	for (int i = 0; i < opt.nsocks; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)ctl[i].end.mempool_txs);
	uint64_t drops = 0, fetched = 0, fetches = 0, delivered_v = 0;
	for (int i = 0; i < opt.nsocks; i++) {
		drops += sub[i].drops;
		fetched += ctl[i].end.fetched_vertices - ctl[i].start.fetched_vertices;
		fetches += ctl[i].end.fetches - ctl[i].start.fetches;
		delivered_v += ctl[i].end.delivered_vertices - ctl[i].start.delivered_vertices;
	}
	printf("],\"timeouts\":%llu,\"sub_drops\":%llu,\"fetches\":%llu,\"fetched_vertices\":%llu,"
	       "\"delivered_vertices\":%llu}\n",
	       (unsigned long long)(ctl[0].end.timeouts - ctl[0].start.timeouts), (unsigned long long)drops,
	       (unsigned long long)fetches, (unsigned long long)fetched, (unsigned long long)delivered_v);
	return 0;
}
