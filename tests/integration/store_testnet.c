/* store_testnet.c - the storage layer end to end on a real committee of 4
 * weftd (genesis --protocol dag, n = 4, f = 1, default k = 2; real
 * sockets, real LMDB) on loopback, plus a one-node committee whose chunk
 * store is tiny.  Every read is checked byte for byte against the file
 * written here.
 *
 *   1. store.put of a 6 MB random file on node0 gives an id and a
 *      capability; store.get with the capability on node3, and by id on
 *      node0, write byte-identical files.
 *   2. store.grant of a byte range spanning chunk boundaries (avg 65536):
 *      its capability reads exactly those bytes (and a sub-range) on
 *      node2; a range outside the grant, the grant rewritten to name
 *      another file id, a capability given together with an id, and
 *      malformed capabilities (a bad body, truncated, no prefix, one
 *      character flipped in the manifest key) are refused at once with
 *      clear errors, nothing is written to out, and the node keeps
 *      serving.  A character flipped in the file id names a file nobody
 *      has: that get waits for the manifest (about 10 s) and must then be
 *      refused; it runs in a child and is collected at the end.
 *   3. store.put refuses bad input (relative path, missing file, a
 *      directory, k > n, avg not a power of two, unknown mode), each with
 *      an error naming the problem, and keeps serving.
 *   4. node3 killed with SIGKILL: node2 and node1 still read the file
 *      (k = 2 of the 3 remaining shares).
 *   5. The largest share on node2's disk (one of the 6 MB file's) is
 *      damaged: node2 stopped, its chunk store opened with the library, a
 *      byte flipped and written back under the old root with repair =
 *      true.  store.audit count=64 from nodes 0, 1 and 3, repeated, until
 *      the counters (dag.info "storage".audits) count it failed or
 *      missing; reads stay right; store.repair id=... on node0; once the
 *      repair placements are acknowledged, node2 is stopped again and its
 *      share holds the original bytes, whose Merkle root is the stored
 *      root.
 *   6. kill -9 of node1 during a put of a 64 MiB file (avg 65536, ~900
 *      chunks), from the store.progress notification callback once some
 *      chunks are done: after a restart the same put resumes (resumed >=
 *      the chunks reported done, < all) and reads back identical.
 *   7. store.rm on node0 and store.gc on every node (gc_delay_ms = 0 in
 *      every weft.conf): every chunk store holds fewer shares, bytes and
 *      references; the removed file is refused by id at once, and by
 *      capability on node3 (in a child: it waits for the manifest first);
 *      the other file still reads back.
 *   8. A one-node committee with [store] map_size = 16MiB: a 40 MiB put
 *      fails with a clear error at once (no hang), store.ls does not list
 *      it, the node keeps serving.  A 100 KB put afterwards either
 *      succeeds and reads back identical, or is refused as full: the map
 *      is left nearly full, so which one depends on the random chunk
 *      sizes (both have been seen); the test accepts both and says which.
 *
 * Ports are taken from 7600..7699.  The whole test takes about 20 s. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/rpc_client.h"
#include "weft/store.h"
#include "weft/store_keys.h"

#define N 4
#define SOLO N          /* index of the one-node committee's node */
#define ALL (N + 1)
#define KILLED 3        /* phase 4 */
#define DAMAGED 2       /* phase 5 */
#define CRASHED 1       /* phase 6 */
#define F1_SIZE ((size_t)6 * 1000 * 1000 + 12345)
#define F2_SIZE ((size_t)400 * 1000)
#define F64_SIZE ((size_t)64 << 20)
#define SMALL_AVG 65536

static char *tmp, *cli_bin;
static char *dirs[ALL], *socks[ALL];
static pid_t pids[ALL];
static struct weft_rpc_client *conns[ALL];
static long t_start;

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- files ---- */

static bool write_random(const char *path, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	static uint8_t buf[1 << 20];
	size_t done = 0;
	bool good = true;
	while (good && done < size) {
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);
		randombytes_buf(buf, n);
		good = write(fd, buf, n) == (ssize_t)n;
		done += n;
	}
	return close(fd) == 0 && good;
}

static uint8_t *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	uint8_t *buf = malloc((size_t)sb.st_size + 1);
	size_t got = 0;
	ssize_t n;
	while (buf && got < (size_t)sb.st_size && (n = read(fd, buf + got, (size_t)sb.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (buf == NULL || got != (size_t)sb.st_size) {
		free(buf);
		return NULL;
	}
	*len = got;
	return buf;
}

/* cmp: true when the file at path holds exactly want[0..len). */
static bool file_is(const char *path, const uint8_t *want, size_t len)
{
	size_t got;
	uint8_t *b = read_all(path, &got);
	if (b == NULL) {
		diag("cmp: cannot read %s: %s", path, strerror(errno));
		return false;
	}
	bool same = got == len && memcmp(b, want, len) == 0;
	if (!same) {
		size_t i = 0;
		while (i < got && i < len && b[i] == want[i])
			i++;
		diag("cmp: %s differs: %zu bytes (want %zu), first difference at byte %zu", path, got, len, i);
	}
	free(b);
	return same;
}

/* cmp of two files, streamed (for the 64 MB one). */
static bool files_equal(const char *a, const char *b)
{
	int fa = open(a, O_RDONLY | O_CLOEXEC), fb = open(b, O_RDONLY | O_CLOEXEC);
	bool same = fa >= 0 && fb >= 0;
	static uint8_t ba[1 << 20], bb[1 << 20];
	uint64_t off = 0;
	while (same) {
		ssize_t na = read(fa, ba, sizeof(ba)), nb = read(fb, bb, sizeof(bb));
		if (na < 0 || nb < 0 || na != nb) {
			same = false;
			diag("cmp: %s and %s differ in length (or a read failed) after byte %llu", a, b,
			     (unsigned long long)off);
			break;
		}
		if (na == 0)
			break;
		if (memcmp(ba, bb, (size_t)na) != 0) {
			size_t i = 0;
			while (ba[i] == bb[i])
				i++;
			diag("cmp: %s and %s differ at byte %llu", a, b, (unsigned long long)(off + i));
			same = false;
		}
		off += (uint64_t)na;
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return same;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* ---- RPC ---- */

/* Calls method on node i over a kept connection (reconnecting once when it
 * died, e.g. across a restart); params (may be NULL) is consumed.  The
 * result, or NULL with the daemon's error message (or the client's
 * failure) in err. */
static json_t *rpc(int i, const char *method, json_t *params, int timeout_ms, char *err, size_t errlen)
{
	json_t *res = NULL, *e = NULL;
	snprintf(err, errlen, "no reply");
	for (int attempt = 0; attempt < 2 && !res && !e; attempt++) {
		if (conns[i] == NULL && weft_rpc_client_connect(&conns[i], socks[i], 2000, NULL) != 0) {
			snprintf(err, errlen, "cannot connect to %s", socks[i]);
			continue;
		}
		int rc = weft_rpc_client_call(conns[i], method, params, timeout_ms, &res, &e);
		if (rc != 0) {
			snprintf(err, errlen, "%s: %s", weft_strerror(rc), weft_rpc_client_errmsg(conns[i]));
			weft_rpc_client_close(conns[i]);
			conns[i] = NULL;
			if (rc == WEFT_ETIMEDOUT)
				break;
		}
	}
	if (e) {
		const char *m = json_string_value(json_object_get(e, "message"));
		snprintf(err, errlen, "%s", m ? m : "an error without a message");
		json_decref(e);
	}
	json_decref(params);
	return res;
}

/* A call expected to succeed: the result, or NULL and a diagnostic. */
static json_t *call(int i, const char *method, json_t *params, int timeout_ms)
{
	char err[512];
	json_t *res = rpc(i, method, params, timeout_ms, err, sizeof(err));
	if (!res)
		diag("node%d %s: %s", i, method, err);
	return res;
}

/* A call expected to fail: true when it failed with a message containing
 * needle (the message in err). */
static bool refused(int i, const char *method, json_t *params, const char *needle, char *err, size_t errlen)
{
	json_t *res = rpc(i, method, params, 30000, err, errlen);
	bool good = res == NULL && strstr(err, needle) != NULL && strncmp(err, "no reply", 8) != 0;
	if (!good)
		diag("node%d %s: expected an error with '%s', got %s", i, method, needle, res ? "a result" : err);
	json_decref(res);
	return good;
}

static const char *sget(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static long long iget(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* Node i answers status. */
static bool serving(int i)
{
	json_t *s = call(i, "status", NULL, 5000);
	bool good = json_is_object(s);
	json_decref(s);
	return good;
}

/* The storage service's counters of node i (dag.info's "storage": the
 * node stack names its child's info so), or NULL. */
static json_t *svc_info(int i)
{
	json_t *d = call(i, "dag.info", NULL, 5000);
	json_t *s = json_incref(json_object_get(d, "storage"));
	json_decref(d);
	return s;
}

static long long svc_counter(int i, const char *group, const char *name)
{
	json_t *s = svc_info(i);
	long long v = iget(json_object_get(s, group), name);
	json_decref(s);
	return v;
}

/* The chunk store's totals of node i (store.ls "store"), or NULL. */
static json_t *store_totals(int i)
{
	json_t *ls = call(i, "store.ls", NULL, 5000);
	json_t *s = json_incref(json_object_get(ls, "store"));
	json_decref(ls);
	return s;
}

/* store.put path [avg] on node i: the result or NULL (err filled). */
static json_t *put(int i, const char *path, long long avg, char *err, size_t errlen)
{
	json_t *p = json_pack("{s:s}", "path", path);
	if (avg > 0)
		json_object_set_new(p, "avg", json_integer(avg));
	return rpc(i, "store.put", json_pack("[o]", p), 60000, err, errlen);
}

/* store.get on node i by capability (cap) or id, [offset, offset+length)
 * when length > 0: the result or NULL (err filled). */
static json_t *get(int i, const char *cap, const char *id, const char *out, long long offset, long long length,
		   char *err, size_t errlen)
{
	json_t *p = json_pack("{s:s}", "out", out);
	if (cap)
		json_object_set_new(p, "capability", json_string(cap));
	if (id)
		json_object_set_new(p, "id", json_string(id));
	if (length > 0) {
		json_object_set_new(p, "offset", json_integer(offset));
		json_object_set_new(p, "length", json_integer(length));
	}
	return rpc(i, "store.get", json_pack("[o]", p), 60000, err, errlen);
}

/* ---- gets that may wait long, run in children ---- */

/* A get whose manifest no node has waits for it for a while before it
 * fails: such gets run in a child while the test goes on, and are
 * collected at the end.  The child writes "ms code text" to a pipe. */
struct bg_get {
	pid_t pid;
	int fd;
	char *out;
	char what[160];
};
static struct bg_get bgs[4];
static int nbg;

static void background_get(int i, const char *cap, const char *out, const char *what)
{
	int fds[2];
	if (nbg == (int)(sizeof(bgs) / sizeof(bgs[0])) || pipe(fds) != 0)
		abort();
	struct bg_get *b = &bgs[nbg++];
	b->out = xasprintf("%s", out);
	snprintf(b->what, sizeof(b->what), "%s", what);
	b->pid = fork();
	if (b->pid < 0)
		abort();
	if (b->pid > 0) {
		close(fds[1]);
		b->fd = fds[0];
		return;
	}
	close(fds[0]);
	long t0 = now_ms();
	json_t *res = NULL, *e = NULL;
	json_t *p = json_pack("[{s:s,s:s}]", "capability", cap, "out", out);
	int rc = weft_rpc_client_call_once(socks[i], "store.get", p, 60000, &res, &e);
	char line[700];
	if (res) {
		json_t *bytes = json_object_get(res, "bytes");
		char *bs = json_dumps(bytes, JSON_ENCODE_ANY);
		snprintf(line, sizeof(line), "%ld 0 a result: id %s, bytes %s, size %lld\n", now_ms() - t0, sget(res, "id"),
			 bs ? bs : "?", iget(res, "size"));
		free(bs);
	} else {
		snprintf(line, sizeof(line), "%ld %d %s\n", now_ms() - t0, e ? (int)iget(e, "code") : rc,
			 e ? sget(e, "message") : weft_strerror(rc));
	}
	if (write(fds[1], line, strlen(line)) < 0)
		_exit(1);
	_exit(0);
}

static void collect_background_gets(void)
{
	for (int k = 0; k < nbg; k++) {
		struct bg_get *b = &bgs[k];
		char line[700] = "";
		size_t got = 0;
		long deadline = now_ms() + 30000;
		while (now_ms() < deadline && got < sizeof(line) - 1) {
			ssize_t n = read(b->fd, line + got, sizeof(line) - 1 - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		line[got] = '\0';
		line[strcspn(line, "\n")] = '\0';
		if (tu_wait(b->pid, 1000) < 0) {
			kill(b->pid, SIGKILL);
			tu_wait(b->pid, 1000);
		}
		close(b->fd);
		long ms = -1;
		int code = 0, used = 0;
		sscanf(line, "%ld %d %n", &ms, &code, &used);
		const char *msg = used ? line + used : "no answer";
		/* No node has the manifest: the get must end in an error, not
		 * in a result for an unopened manifest. */
		ok(ms >= 0 && code != 0, "%s: refused (after %ld ms: %s)", b->what, ms, msg);
		struct stat sb;
		bool wrote = stat(b->out, &sb) == 0;
		ok(!wrote, "... and nothing is written to out%s", wrote ? " (an out file exists)" : "");
		if (wrote)
			diag("%s: out has %lld bytes", b->what, (long long)sb.st_size);
		free(b->out);
	}
}

/* ---- the committee ---- */

static bool port_free(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bool good = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(fd);
	return good;
}

/* A base port in [from, 7700 - count) whose count ports are free, or -1. */
static int pick_base(int from, int count)
{
	for (int base = from; base + count <= 7700; base += count) {
		int i = 0;
		while (i < count && port_free(base + i))
			i++;
		if (i == count)
			return base;
	}
	return -1;
}

static void append_conf(const char *dir, const char *text)
{
	char *path = xasprintf("%s/weft.conf", dir);
	FILE *f = fopen(path, "a");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
	free(path);
}

/* weft-cli genesis --nodes count --out out --base-port base --protocol dag. */
static bool genesis(const char *out, int count, int base)
{
	char nodes[16], port[16];
	snprintf(nodes, sizeof(nodes), "%d", count);
	snprintf(port, sizeof(port), "%d", base);
	char *argv[] = {cli_bin, "genesis", "--nodes", nodes, "--out", (char *)out, "--base-port", port,
			"--protocol", "dag", NULL};
	struct tu_run r;
	tu_run(&r, argv, 20000, -1);
	int st = r.status;
	if (st != 0)
		diag("weft-cli genesis: %s", r.err);
	tu_run_free(&r);
	return st == 0;
}

static bool start(int i)
{
	pids[i] = tu_weftd_start(dirs[i], NULL);
	return pids[i] > 0;
}

static void drop_conn(int i)
{
	weft_rpc_client_close(conns[i]);
	conns[i] = NULL;
}

/* SIGTERM and wait: true on a clean exit. */
static bool stop(int i)
{
	drop_conn(i);
	int st = tu_weftd_stop(pids[i], 10000);
	pids[i] = -1;
	return st == 0;
}

/* SIGKILL: true when it died of it. */
static bool crash(int i)
{
	int st = -1;
	if (pids[i] > 0 && kill(pids[i], SIGKILL) == 0)
		st = tu_wait(pids[i], 5000);
	pids[i] = -1;
	drop_conn(i);
	return st == 128 + SIGKILL;
}

/* Every running node of the committee has its n - 1 peers connected. */
static bool wait_connected(int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		int good = 0, running = 0;
		for (int i = 0; i < N; i++) {
			if (pids[i] <= 0)
				continue;
			running++;
			json_t *s = call(i, "status", NULL, 2000);
			good += iget(json_object_get(s, "peers"), "connected") == N - 1;
			json_decref(s);
		}
		if (good == running)
			return true;
		usleep(50000);
	}
	return false;
}

static bool start_committee(void)
{
	int base = pick_base(7640, N);
	if (base < 0)
		base = pick_base(7600, N);
	if (base < 0) {
		diag("no 4 free ports in 7600..7699");
		return false;
	}
	char *net = xasprintf("%s/net", tmp);
	bool good = genesis(net, N, base);
	for (int i = 0; good && i < N; i++) {
		dirs[i] = xasprintf("%s/node%d", net, i);
		socks[i] = xasprintf("%s/rpc.sock", dirs[i]);
		/* Removed files are freed by the next GC step, not 10 minutes later. */
		append_conf(dirs[i], "[store]\ngc_delay_ms = 0\n");
	}
	free(net);
	int started = 0;
	for (int i = 0; good && i < N; i++)
		started += start(i);
	return good && started == N && wait_connected(10000);
}

static void stop_all(void)
{
	for (int i = 0; i < ALL; i++)
		if (pids[i] > 0) {
			drop_conn(i);
			tu_weftd_stop(pids[i], 5000);
			pids[i] = -1;
		}
}

/* ---- phase 1: put and get ---- */

static char f1_path[512], f1_id[65], f1_cap[WEFT_GRANT_STRING_MAX];
static uint8_t *f1;
static size_t f1_len;

static void phase_put_get(void)
{
	char err[512];
	snprintf(f1_path, sizeof(f1_path), "%s/six.bin", tmp);
	ok(write_random(f1_path, F1_SIZE) && (f1 = read_all(f1_path, &f1_len)) != NULL && f1_len == F1_SIZE,
	   "a %zu-byte random file written", F1_SIZE);
	json_t *r = put(0, f1_path, 0, err, sizeof(err));
	if (!r)
		diag("store.put on node0: %s", err);
	snprintf(f1_id, sizeof(f1_id), "%s", sget(r, "id"));
	snprintf(f1_cap, sizeof(f1_cap), "%s", sget(r, "capability"));
	ok(r && strlen(f1_id) == 64 && strncmp(f1_cap, "weft-grant:", 11) == 0,
	   "store.put on node0: id %.16s..., a weft-grant: capability", f1_id);
	ok(r && iget(r, "size") == (long long)F1_SIZE && iget(r, "k") == 2 && iget(r, "n") == N &&
		   iget(r, "chunks") >= 2,
	   "the put reports size %lld, k %lld of n %lld, %lld chunks", iget(r, "size"), iget(r, "k"), iget(r, "n"),
	   iget(r, "chunks"));
	json_decref(r);

	char *out3 = xasprintf("%s/six.node3", tmp), *out0 = xasprintf("%s/six.node0", tmp);
	r = get(3, f1_cap, NULL, out3, 0, 0, err, sizeof(err));
	if (!r)
		diag("store.get on node3: %s", err);
	ok(r && iget(r, "bytes") == (long long)F1_SIZE, "store.get with the capability on node3 returns %lld bytes",
	   iget(r, "bytes"));
	ok(file_is(out3, f1, f1_len), "... byte-identical to the file put on node0");
	char *part = xasprintf("%s.weft-part", out3);
	ok(!exists(part), "... and no .weft-part is left behind");
	free(part);
	json_decref(r);

	r = get(0, NULL, f1_id, out0, 0, 0, err, sizeof(err));
	if (!r)
		diag("store.get id= on node0: %s", err);
	ok(r && file_is(out0, f1, f1_len), "store.get by id on node0: byte-identical");
	json_decref(r);
	free(out3), free(out0);

	/* An empty file: no chunks, a manifest, a capability of [0, 0). */
	char *empty = xasprintf("%s/empty.bin", tmp), *eout = xasprintf("%s/empty.node2", tmp);
	tu_write_file(empty, "");
	r = put(0, empty, 0, err, sizeof(err));
	char ecap[WEFT_GRANT_STRING_MAX];
	snprintf(ecap, sizeof(ecap), "%s", r ? sget(r, "capability") : "");
	ok(r && iget(r, "size") == 0 && iget(r, "chunks") == 0, "an empty file is put (0 chunks)%s%s", r ? "" : ": ",
	   r ? "" : err);
	json_decref(r);
	r = get(2, ecap, NULL, eout, 0, 0, err, sizeof(err));
	ok(r && iget(r, "bytes") == 0 && exists(eout) && file_is(eout, (const uint8_t *)"", 0),
	   "... and read back on node2 as an empty file%s%s", r ? "" : ": ", r ? "" : err);
	json_decref(r);
	free(empty), free(eout);

	/* Convergent mode: the same file put again with another k dedups into
	 * the chunks placed with the first k, and still reads back. */
	char *conv = xasprintf("%s/conv.bin", tmp), *cout = xasprintf("%s/conv.node1", tmp);
	uint8_t *cdata = NULL;
	size_t clen = 0;
	ok(write_random(conv, 300000) && (cdata = read_all(conv, &clen)) != NULL, "a 300000-byte file for convergent puts");
	json_t *a = rpc(0, "store.put", json_pack("[{s:s,s:s,s:i}]", "path", conv, "mode", "convergent", "avg", 65536), 60000,
			err, sizeof(err));
	json_t *b = rpc(0, "store.put", json_pack("[{s:s,s:s,s:i,s:i}]", "path", conv, "mode", "convergent", "avg", 65536,
						  "k", 1),
			60000, err, sizeof(err));
	ok(a && b && iget(b, "chunks") > 1 && iget(b, "deduplicated") == iget(b, "chunks") && iget(b, "k") == 1,
	   "put again with k = 1: all %lld chunks deduplicated into those placed with k = 2", b ? iget(b, "chunks") : -1);
	r = b ? get(1, sget(b, "capability"), NULL, cout, 0, 0, err, sizeof(err)) : NULL;
	ok(r && file_is(cout, cdata, clen), "... and the k = 1 file reads back on node1 (the records' k decides)%s%s",
	   r ? "" : ": ", r ? "" : err);
	json_decref(r);
	json_decref(a);
	json_decref(b);
	free(cdata);
	free(conv), free(cout);
}

/* ---- phase 2: grants ---- */

static char f2_path[512], f2_id[65];
static uint8_t *f2;
static size_t f2_len;

/* The capability with one base64url character flipped inside its
 * manifest key (in_id false) or its file id (in_id true), so that it still
 * decodes. */
static bool flip_char(const char *cap, bool in_id, char *out, size_t outlen)
{
	struct weft_grant *g = NULL;
	const char *why = NULL;
	if (weft_grant_parse(&g, cap, &why) != 0)
		return false;
	uint8_t bin[WEFT_GRANT_MAX_BYTES];
	size_t len = weft_grant_encode(g, bin);
	const uint8_t *k = in_id ? memmem(bin, len, g->file.id, sizeof(g->file.id))
				 : memmem(bin, len, g->manifest_key.b, sizeof(g->manifest_key.b));
	weft_grant_free(g);
	sodium_memzero(bin, sizeof(bin));
	if (k == NULL)
		return false;
	size_t at = (size_t)(k - bin) + 8;       /* a byte well inside the field */
	size_t c = (at * 8 + 5) / 6 + 1;         /* a character whose 6 bits lie in it */
	size_t pos = strlen(WEFT_GRANT_PREFIX) + c;
	snprintf(out, outlen, "%s", cap);
	if (pos >= strlen(out))
		return false;
	out[pos] = out[pos] == 'A' ? 'B' : 'A';
	return true;
}

static void phase_grants(void)
{
	char err[512];
	snprintf(f2_path, sizeof(f2_path), "%s/small.bin", tmp);
	ok(write_random(f2_path, F2_SIZE) && (f2 = read_all(f2_path, &f2_len)) != NULL, "a %zu-byte random file",
	   F2_SIZE);
	json_t *r = put(0, f2_path, SMALL_AVG, err, sizeof(err));
	if (!r)
		diag("store.put avg=%d on node0: %s", SMALL_AVG, err);
	snprintf(f2_id, sizeof(f2_id), "%s", sget(r, "id"));
	long long chunks = iget(r, "chunks");
	ok(r && chunks >= 3, "store.put avg=%d: %lld chunks", SMALL_AVG, chunks);
	json_decref(r);

	const long long a = 150001, len = 120000;
	r = call(0, "store.grant", json_pack("[{s:s,s:I,s:I}]", "id", f2_id, "offset", a, "length", len), 5000);
	char gcap[4096];
	snprintf(gcap, sizeof(gcap), "%s", sget(r, "capability"));
	long long first = iget(r, "first_chunk"), end = iget(r, "end_chunk");
	ok(r && strncmp(gcap, "weft-grant:", 11) == 0 && iget(r, "offset") == a && iget(r, "length") == len,
	   "store.grant of bytes [%lld, %lld) gives a capability", a, a + len);
	ok(end - first >= 2, "... over chunks [%lld, %lld): the range spans a chunk boundary", first, end);
	json_decref(r);

	char *out = xasprintf("%s/range.node2", tmp);
	r = get(2, gcap, NULL, out, 0, 0, err, sizeof(err));
	if (!r)
		diag("store.get with the grant on node2: %s", err);
	ok(r && iget(r, "offset") == a && iget(r, "bytes") == len, "store.get with the grant on node2: offset %lld, %lld bytes",
	   iget(r, "offset"), iget(r, "bytes"));
	ok(r && file_is(out, f2 + a, (size_t)len), "... exactly bytes [%lld, %lld) of the file", a, a + len);
	json_decref(r);
	unlink(out);

	/* A sub-range inside the grant. */
	r = get(2, gcap, NULL, out, a + 1000, 5000, err, sizeof(err));
	if (!r)
		diag("store.get offset/length inside the grant: %s", err);
	ok(r && file_is(out, f2 + a + 1000, 5000), "a sub-range of the grant reads exactly those 5000 bytes");
	json_decref(r);
	unlink(out);

	ok(refused(2, "store.get", json_pack("[{s:s,s:s,s:i,s:i}]", "capability", gcap, "out", out, "offset", 0, "length", 1000),
		   "outside what the capability grants", err, sizeof(err)),
	   "bytes [0, 1000) with the grant of [%lld, ...): refused (%s)", a, err);
	ok(refused(2, "store.get",
		   json_pack("[{s:s,s:s,s:I,s:i}]", "capability", gcap, "out", out, "offset", a + len, "length", 10),
		   "outside", err, sizeof(err)),
	   "bytes just past the grant: refused");
	ok(!exists(out), "... and nothing written to out");

	/* The grant rewritten for the 6 MB file: it cannot open that file. */
	struct weft_grant *g = NULL;
	const char *why = NULL;
	char other[WEFT_GRANT_STRING_MAX] = "";
	if (weft_grant_parse(&g, gcap, &why) == 0) {
		if (weft_hex_decode(g->file.id, 32, f1_id, 64) != 0)
			abort();
		char s[WEFT_GRANT_STRING_MAX];
		weft_grant_format(g, s);
		snprintf(other, sizeof(other), "%s", s);
		weft_grant_free(g);
	}
	ok(refused(2, "store.get", json_pack("[{s:s,s:s}]", "capability", other, "out", out), "capability", err,
		   sizeof(err)),
	   "the grant's capability made to name another file id: refused (%s)", err);
	ok(!exists(out), "... and nothing written to out");
	ok(refused(0, "store.get", json_pack("[{s:s,s:s,s:s}]", "capability", gcap, "id", f1_id, "out", out),
		   "one of capability or id", err, sizeof(err)),
	   "a capability given with another file's id: refused (%s)", err);

	/* Malformed capabilities. */
	ok(refused(2, "store.get", json_pack("[{s:s,s:s}]", "capability", "weft-grant:xyz", "out", out), "capability:",
		   err, sizeof(err)),
	   "capability weft-grant:xyz: refused (%s)", err);
	char trunc[4096];
	snprintf(trunc, sizeof(trunc), "%.*s", (int)(strlen(f1_cap) - 20), f1_cap);
	ok(refused(2, "store.get", json_pack("[{s:s,s:s}]", "capability", trunc, "out", out), "capability:", err,
		   sizeof(err)),
	   "a capability truncated by 20 characters: refused (%s)", err);
	ok(refused(2, "store.get", json_pack("[{s:s,s:s}]", "capability", f1_cap + 11, "out", out), "capability:", err,
		   sizeof(err)),
	   "a capability without its weft-grant: prefix: refused (%s)", err);
	char flipped[4096];
	bool made = flip_char(f1_cap, false, flipped, sizeof(flipped));
	long t0 = now_ms();
	ok(made && refused(2, "store.get", json_pack("[{s:s,s:s}]", "capability", flipped, "out", out), "capability", err,
			   sizeof(err)),
	   "a capability with one character flipped (in its manifest key): refused (%s)", err);
	ok(now_ms() - t0 < 5000, "... at once (%ld ms)", now_ms() - t0);
	ok(!exists(out), "... and nothing written to out");
	/* One character flipped in the file id: a file nobody has (the get
	 * waits for its manifest for a while; collected at the end; on node0,
	 * which is never restarted). */
	char *bgout = xasprintf("%s/flipped-id.node0", tmp);
	if (flip_char(gcap, true, flipped, sizeof(flipped)))
		background_get(0, flipped, bgout, "a grant with one character flipped in its file id, on node0");
	else
		ok(false, "a character of the grant's file id flipped");
	free(bgout);
	ok(serving(2), "node2 keeps serving after the bad capabilities");
	r = get(2, gcap, NULL, out, 0, 0, err, sizeof(err));
	ok(r && file_is(out, f2 + a, (size_t)len), "... and the good grant still reads its bytes");
	json_decref(r);
	unlink(out);
	free(out);
}

/* ---- phase 3: bad input to store.put ---- */

static void phase_bad_put(void)
{
	char err[512];
	char *missing = xasprintf("%s/no-such-file", tmp);
	struct {
		json_t *params;
		const char *needle, *what;
	} cases[] = {
		{json_pack("[{s:s}]", "path", "relative/six.bin"), "absolute path", "a relative path"},
		{json_pack("[{s:s}]", "path", missing), "No such file", "a missing file"},
		{json_pack("[{s:s}]", "path", tmp), "not a regular file", "a directory"},
		{json_pack("[{s:s,s:i}]", "path", f1_path, "k", 5), "k:", "k = 5 > n = 4"},
		{json_pack("[{s:s,s:i}]", "path", f1_path, "avg", 100000), "power of two", "avg = 100000"},
		{json_pack("[{s:s,s:s}]", "path", f1_path, "mode", "sideways"), "mode:", "mode = sideways"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		ok(refused(0, "store.put", cases[c].params, cases[c].needle, err, sizeof(err)), "store.put with %s: refused (%s)",
		   cases[c].what, err);
	free(missing);
	json_t *ls = call(0, "store.ls", NULL, 5000);
	ok(ls && json_array_size(json_object_get(ls, "files")) == 5,
	   "node0 keeps serving: store.ls lists the 5 files put (one empty, two convergent), nothing of the refused "
	   "puts");
	json_decref(ls);
}

/* ---- phase 4: a node killed ---- */

static void phase_kill_one(void)
{
	char err[512];
	ok(crash(KILLED), "node%d killed with SIGKILL", KILLED);
	for (int i = 2; i >= 1; i--) {
		char *out = xasprintf("%s/six.without%d.node%d", tmp, KILLED, i);
		json_t *r = get(i, f1_cap, NULL, out, 0, 0, err, sizeof(err));
		if (!r)
			diag("store.get on node%d with node%d down: %s", i, KILLED, err);
		ok(r && file_is(out, f1, f1_len), "node%d down: store.get on node%d is byte-identical", KILLED, i);
		json_decref(r);
		unlink(out);
		free(out);
	}
	ok(start(KILLED) && wait_connected(10000), "node%d restarted and reconnected", KILLED);
}

/* ---- phase 5: a damaged share ---- */

struct share_pick {
	uint8_t cid[32];
	uint16_t share;
	struct weft_store_meta meta;
	bool found;
};

/* The largest share: one of the 6 MB file's (its chunks are ~1 MB, the
 * small file's ~64 KB). */
static int pick_largest(void *arg, const uint8_t cid[32], uint16_t share, const struct weft_store_meta *meta)
{
	struct share_pick *p = arg;
	if (!p->found || meta->length > p->meta.length) {
		memcpy(p->cid, cid, 32);
		p->share = share;
		p->meta = *meta;
		p->found = true;
	}
	return 0;
}

static struct weft_store *open_chunks(int i)
{
	char *dir = xasprintf("%s/chunks", dirs[i]);
	struct weft_store *s = NULL;
	int rc = weft_store_open_dir(&s, dir, NULL, NULL);
	if (rc != 0)
		diag("weft_store_open_dir %s: %s", dir, weft_strerror(rc));
	free(dir);
	return s;
}

/* Audits node i counted failed or missing (dag.info storage.audits). */
static long long audits_bad(int i)
{
	json_t *info = svc_info(i);
	json_t *a = json_object_get(info, "audits");
	long long v = json_is_object(a) ? iget(a, "failed") + iget(a, "missing") : -1;
	json_decref(info);
	return v;
}

/* Waits until the repair placements since (sent0, stored0) are all
 * acknowledged and nothing is in flight on any node, or timeout_ms. */
static void repair_settle(const long long *sent0, const long long *stored0, int timeout_ms, long long *sent,
			  long long *stored)
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		long long st = 0, se = 0, busy = 0;
		for (int i = 0; i < N; i++) {
			json_t *info = svc_info(i);
			json_t *rep = json_object_get(info, "repair");
			st += iget(rep, "stored") - stored0[i];
			se += iget(rep, "sent") - sent0[i];
			busy += iget(json_object_get(info, "retrieval"), "in_flight") +
				iget(json_object_get(info, "placement"), "in_flight") +
				iget(json_object_get(info, "audits"), "in_flight") + json_is_true(json_object_get(rep, "sweeping"));
			json_decref(info);
		}
		*sent = se, *stored = st;
		if ((st >= 1 && st >= se && busy == 0) || now_ms() > deadline)
			return;
		usleep(100000);
	}
}

static void phase_damage(void)
{
	char err[512];
	long long bad0[N] = {0}, sent0[N] = {0}, stored0[N] = {0};
	for (int i = 0; i < N; i++) {
		bad0[i] = audits_bad(i);
		sent0[i] = svc_counter(i, "repair", "sent");
		stored0[i] = svc_counter(i, "repair", "stored");
	}
	diag("before the damage: audits failed+missing %lld %lld %lld %lld", bad0[0], bad0[1], bad0[2], bad0[3]);

	ok(stop(DAMAGED), "node%d stopped (SIGTERM)", DAMAGED);
	struct share_pick p = {.found = false};
	uint8_t *orig = NULL;
	size_t olen = 0;
	bool damaged = false;
	struct weft_store *s = open_chunks(DAMAGED);
	if (s && weft_store_shares(s, NULL, 0, pick_largest, &p) == 0 && p.found) {
		void *data;
		size_t len;
		if (weft_store_copy(s, p.cid, p.share, &data, &len) == 0) {
			orig = malloc(len);
			memcpy(orig, data, len);
			olen = len;
			((uint8_t *)data)[len / 2] ^= 0x5a;
			int rc = weft_store_put(s, p.cid, p.share, data, len, p.meta.root, true);
			if (rc != 0)
				diag("weft_store_put (repair = true): %s", weft_strerror(rc));
			struct weft_store_meta m;
			void *now = NULL;
			size_t nlen = 0;
			damaged = rc == 0 && weft_store_has(s, p.cid, p.share, &m) == 0 &&
				  memcmp(m.root, p.meta.root, 32) == 0 && weft_store_copy(s, p.cid, p.share, &now, &nlen) == 0 &&
				  nlen == len && memcmp(now, orig, len) != 0;
			if (nlen == len && damaged) {
				uint8_t root[32];
				weft_merkle_root(root, now, nlen);
				damaged = memcmp(root, m.root, 32) != 0;
			}
			free(now);
			free(data);
		}
	}
	weft_store_close(s);
	char cidhex[65] = "";
	weft_hex_encode(cidhex, p.cid, 32);
	ok(damaged, "node%d's chunk store opened with the library: share %u of chunk %.16s... (%llu bytes) now holds "
		    "a flipped byte under its old root",
	   DAMAGED, p.share, cidhex, (unsigned long long)p.meta.length);
	ok(start(DAMAGED) && wait_connected(10000), "node%d restarted on the damaged store", DAMAGED);

	/* Audits from the other nodes until one counts the share missing or
	 * failed (the holder finds its own bytes bad and says so, signed). */
	long deadline = now_ms() + 10000;
	bool seen = false;
	int rounds = 0;
	long long audits_sent = 0;
	bool reply_counters = true;
	while (!seen && now_ms() < deadline) {
		rounds++;
		for (int i = 0; i < N && !seen; i++) {
			if (i == DAMAGED)
				continue;
			json_t *r = call(i, "store.audit", json_pack("[{s:i}]", "count", 64), 5000);
			audits_sent += iget(r, "sent");
			reply_counters &= r && json_is_object(json_object_get(r, "audits"));
			json_decref(r);
		}
		usleep(150000);
		for (int i = 0; i < N; i++)
			if (i != DAMAGED && audits_bad(i) > bad0[i])
				seen = true;
	}
	long long bad[N];
	for (int i = 0; i < N; i++)
		bad[i] = audits_bad(i);
	/* store.audit answers {sent, audits, evidence}; audits is the
	 * service's counters, which the node stack reports under "storage". */
	ok(reply_counters, "store.audit's reply carries the audit counters (\"audits\" is a map, not null)");
	ok(seen, "store.audit count=64 from nodes 0, 1, 3 (%d rounds, %lld challenges): the damaged share is counted "
		 "failed or missing (failed+missing now %lld %lld %lld %lld)",
	   rounds, audits_sent, bad[0], bad[1], bad[2], bad[3]);

	char *out = xasprintf("%s/six.damaged", tmp);
	json_t *r = get(1, f1_cap, NULL, out, 0, 0, err, sizeof(err));
	if (!r)
		diag("store.get on node1 after the damage: %s", err);
	ok(r && file_is(out, f1, f1_len), "store.get on node1 after the damage: byte-identical");
	json_decref(r);
	unlink(out);

	/* The audit that found the share missing rebuilds it: wait for that. */
	long long sent1, stored1;
	repair_settle(sent0, stored0, 5000, &sent1, &stored1);
	diag("after the audits: %lld repair placements sent, %lld acknowledged", sent1, stored1);

	r = call(0, "store.repair", json_pack("[{s:s}]", "id", f1_id), 30000);
	ok(r && iget(r, "chunks") >= 1 && iget(r, "checked") == iget(r, "chunks"),
	   "store.repair id=... on node0: %lld chunks, %lld checked", iget(r, "chunks"), iget(r, "checked"));
	long long nchunks = iget(r, "chunks");
	json_decref(r);
	long long sent2, stored2;
	repair_settle(sent0, stored0, 8000, &sent2, &stored2);
	ok(stored2 >= 1, "the share was rebuilt and placed again (repair placements sent %lld, acknowledged %lld)", sent2,
	   stored2);
	diag("store.repair of the file (%lld chunks, the damaged share %s) then sent %lld more repair placements",
	     nchunks, stored1 >= 1 ? "already rebuilt" : "not yet rebuilt", sent2 - sent1);

	r = get(3, f1_cap, NULL, out, 0, 0, err, sizeof(err));
	ok(r && file_is(out, f1, f1_len), "store.get on node3 after the repair: byte-identical");
	json_decref(r);
	unlink(out);

	/* Look at node2's disk again. */
	ok(stop(DAMAGED), "node%d stopped again", DAMAGED);
	bool good_root = false, same_bytes = false;
	s = open_chunks(DAMAGED);
	struct weft_store_meta m;
	void *data = NULL;
	size_t len = 0;
	if (s && weft_store_has(s, p.cid, p.share, &m) == 0 && weft_store_copy(s, p.cid, p.share, &data, &len) == 0) {
		uint8_t root[32];
		weft_merkle_root(root, data, len);
		good_root = memcmp(root, m.root, 32) == 0 && memcmp(m.root, p.meta.root, 32) == 0;
		same_bytes = orig && len == olen && memcmp(data, orig, len) == 0;
	} else {
		diag("share %u of chunk %.16s... is not in node%d's chunk store", p.share, cidhex, DAMAGED);
	}
	free(data);
	weft_store_close(s);
	ok(good_root, "node%d's share now has bytes whose Merkle root is the stored root", DAMAGED);
	ok(same_bytes, "... the original bytes of the share, restored");
	free(orig);
	ok(start(DAMAGED) && wait_connected(10000), "node%d restarted", DAMAGED);
	r = get(DAMAGED, f1_cap, NULL, out, 0, 0, err, sizeof(err));
	ok(r && file_is(out, f1, f1_len), "store.get on node%d: byte-identical", DAMAGED);
	json_decref(r);
	unlink(out);
	free(out);
}

/* ---- phase 6: kill -9 during a put ---- */

struct killer {
	pid_t pid;
	bool killed;
	int notes;
	long long chunks, total;
};

static void kill_on_progress(const char *method, json_t *params, void *arg)
{
	struct killer *k = arg;
	if (k->killed || strcmp(method, "store.progress") != 0)
		return;
	json_t *p = json_is_array(params) ? json_array_get(params, 0) : params;
	k->notes++;
	long long chunks = iget(p, "chunks"), total = iget(p, "chunks_total");
	if (chunks >= 1 && chunks < total) {
		kill(k->pid, SIGKILL);
		k->killed = true;
		k->chunks = chunks;
		k->total = total;
	}
}

static void phase_crash_put(void)
{
	char err[512];
	char *big = xasprintf("%s/big.bin", tmp);
	ok(write_random(big, F64_SIZE), "a %zu MiB random file", F64_SIZE >> 20);
	struct weft_rpc_client *c = NULL;
	struct killer k = {.pid = pids[CRASHED]};
	json_t *res = NULL, *e = NULL;
	int rc = -1;
	if (weft_rpc_client_connect(&c, socks[CRASHED], 2000, NULL) == 0) {
		weft_rpc_client_set_notify(c, kill_on_progress, &k);
		json_t *p = json_pack("[{s:s,s:i,s:b}]", "path", big, "avg", SMALL_AVG, "progress", 1);
		rc = weft_rpc_client_call(c, "store.put", p, 60000, &res, &e);
		json_decref(p);
	}
	weft_rpc_client_close(c);
	ok(k.killed && res == NULL, "node%d killed with SIGKILL during store.put (after %d progress notes, at chunk %lld of %lld; "
				      "the call ended: %s)",
	   CRASHED, k.notes, k.chunks, k.total, rc == 0 ? "with a reply" : weft_strerror(rc));
	json_decref(res), json_decref(e);
	int st = tu_wait(pids[CRASHED], 5000);
	ok(st == 128 + SIGKILL, "... it died of SIGKILL");
	pids[CRASHED] = -1;
	drop_conn(CRASHED);
	ok(start(CRASHED) && wait_connected(10000), "node%d restarted", CRASHED);

	json_t *r = put(CRASHED, big, SMALL_AVG, err, sizeof(err));
	if (!r)
		diag("store.put again on node%d: %s", CRASHED, err);
	long long resumed = iget(r, "resumed"), chunks = iget(r, "chunks");
	char cap[4096];
	snprintf(cap, sizeof(cap), "%s", sget(r, "capability"));
	ok(r && resumed > 0, "the same put again: resumed %lld of %lld chunks", resumed, chunks);
	ok(r && resumed >= k.chunks && resumed < chunks,
	   "... at least the %lld chunks reported done before the kill, not all of them", k.chunks);
	ok(r && iget(r, "size") == (long long)F64_SIZE, "... size %lld", iget(r, "size"));
	json_decref(r);
	char *out = xasprintf("%s/big.node3", tmp);
	r = get(3, cap, NULL, out, 0, 0, err, sizeof(err));
	if (!r)
		diag("store.get of the resumed file on node3: %s", err);
	ok(r && files_equal(out, big), "the resumed file reads back byte-identical on node3");
	json_decref(r);
	unlink(out);

	/* kill -9 during a get: OUT never appears half-written; the get again
	 * after the restart writes it whole (and takes over the part file). */
	char *gout = xasprintf("%s/big.crashget", tmp), *gpart = xasprintf("%s.weft-part", gout);
	struct killer g = {.pid = pids[CRASHED]};
	res = e = NULL;
	if (weft_rpc_client_connect(&c, socks[CRASHED], 2000, NULL) == 0) {
		weft_rpc_client_set_notify(c, kill_on_progress, &g);
		json_t *p = json_pack("[{s:s,s:s,s:b}]", "capability", cap, "out", gout, "progress", 1);
		weft_rpc_client_call(c, "store.get", p, 60000, &res, &e);
		json_decref(p);
	}
	weft_rpc_client_close(c);
	json_decref(res), json_decref(e);
	ok(g.killed && tu_wait(pids[CRASHED], 5000) == 128 + SIGKILL,
	   "node%d killed with SIGKILL during store.get (at chunk %lld of %lld)", CRASHED, g.chunks, g.total);
	pids[CRASHED] = -1;
	drop_conn(CRASHED);
	ok(!exists(gout), "... and OUT does not exist: only its part file (%s)", exists(gpart) ? "left" : "gone");
	ok(start(CRASHED) && wait_connected(10000), "node%d restarted", CRASHED);
	r = get(CRASHED, cap, NULL, gout, 0, 0, err, sizeof(err));
	ok(r && files_equal(gout, big) && !exists(gpart), "the get again writes OUT byte-identical, no part file left%s%s",
	   r ? "" : ": ", r ? "" : err);
	json_decref(r);
	unlink(gout);
	free(gout), free(gpart);

	/* kill -9 during a repair sweep: after the restart the node serves,
	 * a sweep runs to its end, and the file still reads back. */
	r = call(CRASHED, "store.repair", NULL, 5000);
	ok(r != NULL, "a repair sweep started on node%d", CRASHED);
	json_decref(r);
	usleep(20000);
	ok(crash(CRASHED), "node%d killed with SIGKILL while it sweeps", CRASHED);
	ok(start(CRASHED) && wait_connected(10000), "node%d restarted", CRASHED);
	long long before = svc_counter(CRASHED, "audits", "passed");
	r = call(CRASHED, "store.repair", NULL, 5000);
	json_decref(r);
	usleep(1500000); /* a sweep checks 48 chunks a second */
	long long passed = svc_counter(CRASHED, "audits", "passed") - before;
	ok(passed >= 48, "... a sweep after the restart checks the holders again: %lld challenges passed in 1.5 s", passed);
	r = get(0, cap, NULL, out, 0, 0, err, sizeof(err));
	ok(r && files_equal(out, big), "... and the file reads back byte-identical on node0");
	json_decref(r);
	unlink(out);
	unlink(big);
	free(out), free(big);
}

/* ---- phase 7: rm and gc ---- */

static void phase_rm_gc(void)
{
	char err[512];
	long long shares0[N], bytes0[N], refs0[N];
	for (int i = 0; i < N; i++) {
		json_t *s = store_totals(i);
		shares0[i] = iget(s, "shares"), bytes0[i] = iget(s, "bytes"), refs0[i] = iget(s, "references");
		json_decref(s);
	}
	json_t *r = call(0, "store.rm", json_pack("[{s:s}]", "id", f1_id), 5000);
	ok(r && json_is_true(json_object_get(r, "dropped")), "store.rm of the 6 MB file on node0: dropped");
	json_decref(r);

	long long shares[N], bytes[N], refs[N];
	long deadline = now_ms() + 10000;
	int gc_calls = 0;
	for (;;) {
		int fewer = 0;
		for (int i = 0; i < N; i++) {
			json_t *g = call(i, "store.gc", NULL, 5000);
			gc_calls += g != NULL;
			json_t *s = json_object_get(g, "store");
			shares[i] = iget(s, "shares"), bytes[i] = iget(s, "bytes"), refs[i] = iget(s, "references");
			fewer += shares[i] >= 0 && shares[i] < shares0[i] && bytes[i] < bytes0[i] && refs[i] < refs0[i];
			json_decref(g);
		}
		if (fewer == N || now_ms() > deadline)
			break;
		usleep(100000);
	}
	for (int i = 0; i < N; i++)
		ok(shares[i] < shares0[i] && bytes[i] < bytes0[i] && refs[i] < refs0[i],
		   "store.gc on node%d: shares %lld -> %lld, bytes %lld -> %lld, references %lld -> %lld", i, shares0[i],
		   shares[i], bytes0[i], bytes[i], refs0[i], refs[i]);
	diag("%d store.gc calls", gc_calls);

	json_t *ls = call(0, "store.ls", NULL, 5000);
	bool listed = false;
	json_t *item;
	size_t idx;
	json_array_foreach(json_object_get(ls, "files"), idx, item) listed |= strcmp(sget(item, "id"), f1_id) == 0;
	ok(ls && !listed, "store.ls on node0 no longer lists it");
	json_decref(ls);

	char *out = xasprintf("%s/six.removed", tmp);
	ok(refused(0, "store.get", json_pack("[{s:s,s:s}]", "id", f1_id, "out", out), "no file with this id", err,
		   sizeof(err)),
	   "store.get id=... of the removed file on node0: refused (%s)", err);
	free(out);
	/* By capability on node3: in the background, collected at the end. */
	out = xasprintf("%s/six.removed.node3", tmp);
	background_get(3, f1_cap, out, "store.get with the capability of the removed file on node3");
	free(out);
	/* The other file is untouched. */
	out = xasprintf("%s/small.after-rm", tmp);
	r = get(0, NULL, f2_id, out, 0, 0, err, sizeof(err));
	ok(r && file_is(out, f2, f2_len), "the other file still reads back byte-identical");
	json_decref(r);
	unlink(out);
	free(out);
}

/* ---- phase 8: a tiny chunk store ---- */

static void phase_map_full(void)
{
	char err[512];
	int base = pick_base(7650, 1);
	if (base < 0)
		base = pick_base(7600, 1);
	char *net = xasprintf("%s/solo", tmp);
	dirs[SOLO] = xasprintf("%s/node0", net);
	socks[SOLO] = xasprintf("%s/rpc.sock", dirs[SOLO]);
	bool up = base > 0 && genesis(net, 1, base);
	if (up)
		append_conf(dirs[SOLO], "[store]\nmap_size = 16MiB\n");
	ok(up && start(SOLO), "a one-node committee with [store] map_size = 16MiB");
	free(net);
	if (pids[SOLO] <= 0)
		return;

	char *f40 = xasprintf("%s/forty.bin", tmp);
	ok(write_random(f40, (size_t)40 << 20), "a 40 MiB random file");
	long t0 = now_ms();
	json_t *r = put(SOLO, f40, 0, err, sizeof(err));
	long took = now_ms() - t0;
	ok(r == NULL && strstr(err, "full") != NULL, "store.put of 40 MiB into a 16 MiB chunk store fails: %s", err);
	ok(took < 20000, "... without hanging (%ld ms)", took);
	/* db.map_size is the node database's map; the one that filled is the
	 * chunk store's ([store] map_size), so that is what to raise. */
	ok(r == NULL && strstr(err, "db.map_size") == NULL,
	   "... and the error does not send the operator to db.map_size (the full map is [store] map_size)");
	json_decref(r);

	json_t *ls = call(SOLO, "store.ls", NULL, 5000);
	bool listed = false;
	json_t *item;
	size_t idx;
	json_array_foreach(json_object_get(ls, "files"), idx, item) listed |=
		iget(item, "size") == ((long long)40 << 20) || strcmp(sget(item, "name"), "forty.bin") == 0;
	ok(ls && !listed, "store.ls works and does not list the failed put (%lld shares, %lld bytes held)",
	   iget(json_object_get(ls, "store"), "shares"), iget(json_object_get(ls, "store"), "bytes"));
	json_decref(ls);
	ok(serving(SOLO), "the node keeps serving (status)");

	char *small = xasprintf("%s/hundred.bin", tmp), *out = xasprintf("%s/hundred.out", tmp);
	uint8_t *sb = NULL;
	size_t slen = 0;
	ok(write_random(small, 100000) && (sb = read_all(small, &slen)) != NULL, "a 100 KB random file");
	r = put(SOLO, small, 0, err, sizeof(err));
	if (r) {
		json_t *g = get(SOLO, NULL, sget(r, "id"), out, 0, 0, err, sizeof(err));
		ok(g && file_is(out, sb, slen), "after the full map a 100 KB put succeeds and reads back byte-identical");
		json_decref(g);
		diag("the 100 KB put after the map filled: succeeded");
	} else {
		ok(strstr(err, "full") != NULL, "after the full map a 100 KB put fails cleanly: %s", err);
		diag("the 100 KB put after the map filled: refused (%s)", err);
	}
	json_decref(r);
	ok(serving(SOLO), "... and the node still serves");
	ok(stop(SOLO), "the one-node committee stops cleanly");
	unlink(f40);
	free(f40), free(small), free(out), free(sb);
}

static void kill_children(void)
{
	for (int i = 0; i < ALL; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
}

static void on_signal(int sig)
{
	kill_children();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	if (sodium_init() < 0)
		abort();
	t_start = now_ms();
	for (int i = 0; i < ALL; i++)
		pids[i] = -1;
	cli_bin = tu_bin("weft-cli");
	char *weftd = tu_bin("weftd");
	if (access(cli_bin, X_OK) != 0 || access(weftd, X_OK) != 0)
		skip_all("weft-cli or weftd not built (set WEFT_BIN)");
	free(weftd);
	atexit(kill_children);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	tmp = tu_tmpdir("storenet");

	if (!ok(start_committee(), "genesis --protocol dag --nodes 4, gc_delay_ms = 0, 4 daemons connected")) {
		stop_all();
		tu_rmtree(tmp);
		return done_testing();
	}
	phase_put_get();
	phase_grants();
	phase_bad_put();
	phase_kill_one();
	phase_damage();
	phase_crash_put();
	phase_rm_gc();
	phase_map_full();
	collect_background_gets();

	int stopped = 0, running = 0;
	for (int i = 0; i < N; i++)
		if (pids[i] > 0)
			running++, stopped += stop(i);
	is_int(stopped, running, "the daemons still running stop cleanly");
	diag("wall time %.1f s", (now_ms() - t_start) / 1000.0);
	tu_rmtree(tmp);
	for (int i = 0; i < ALL; i++)
		free(dirs[i]), free(socks[i]);
	free(f1), free(f2), free(tmp), free(cli_bin);
	return done_testing();
}
