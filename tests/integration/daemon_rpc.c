/* daemon_rpc.c - integration test: a real weftd in a temporary data dir,
 * every RPC method called through the real weft-cli, then the hostile RPC
 * inputs of issue 2 on raw socket connections (garbage, truncated and
 * oversized frames, huge declared counts, wrong params, unknown methods,
 * pipelining, many clients), checking each time that the daemon keeps
 * serving.  Ends with a clean stop: exit 0 and the socket unlinked. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/rpcutil.h"
#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/mp.h"

static char *datadir, *sock;

/* Runs weft-cli --datadir DIR args...; returns the parsed stdout or NULL. */
static json_t *cli(struct tu_run *r, const char *const *args)
{
	char *bin = tu_bin("weft-cli");
	const char *argv[16] = {bin, "--datadir", datadir};
	int n = 3;
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	tu_run(r, (char *const *)argv, 10000, -1);
	r->err[strcspn(r->err, "\n")] = '\0'; /* first line, for test names */
	free(bin);
	return json_loads(r->out, 0, NULL);
}

static void test_cli_methods(pid_t pid)
{
	struct tu_run r;
	json_t *j = cli(&r, (const char *[]){"status", NULL});
	is_int(r.status, 0, "weft-cli status exits 0");
	const char *id = json_string_value(json_object_get(j, "node_id"));
	ok(id && strlen(id) == 64, "status has a 64-hex-digit node_id (%s)", id ? id : "none");
	is_int(json_integer_value(json_object_get(json_object_get(j, "committee"), "n")), 1,
	       "status: committee of one");
	ok(json_object_get(json_object_get(j, "db"), "map_size") != NULL, "status: db stats");
	is_int(json_integer_value(json_object_get(j, "pid")), pid, "status: pid is the daemon's");
	const char *dd = json_string_value(json_object_get(j, "data_dir"));
	char *real = realpath(datadir, NULL);
	is_str(dd, real, "status: data_dir is absolute");
	free(real);
	json_decref(j);
	tu_run_free(&r);

	j = cli(&r, (const char *[]){"version", NULL});
	is_int(r.status, 0, "weft-cli version exits 0");
	ok(json_is_string(json_object_get(j, "version")), "version: version string");
	ok(json_is_object(json_object_get(j, "libraries")), "version: library versions");
	json_decref(j);
	tu_run_free(&r);

	j = cli(&r, (const char *[]){"help", NULL});
	is_int(r.status, 0, "weft-cli help exits 0");
	json_t *methods = json_object_get(j, "methods");
	size_t found = 0, i;
	json_t *m;
	json_array_foreach(methods, i, m) {
		const char *name = json_string_value(json_object_get(m, "name"));
		found += name && (!strcmp(name, "help") || !strcmp(name, "version") || !strcmp(name, "status") ||
				  !strcmp(name, "stop"));
	}
	is_int(found, 4, "help lists help, version, status and stop");
	json_decref(j);
	tu_run_free(&r);

	j = cli(&r, (const char *[]){"help", "method=status", NULL});
	is_int(json_array_size(json_object_get(j, "methods")), 1, "help method=status describes one method");
	json_decref(j);
	tu_run_free(&r);

	j = cli(&r, (const char *[]){"nosuchmethod", NULL});
	is_int(r.status, 1, "unknown method: weft-cli exits 1");
	ok(strstr(r.err, "unknown method") != NULL, "unknown method: message on stderr (%s)", r.err);
	json_decref(j);
	tu_run_free(&r);

	j = cli(&r, (const char *[]){"help", "method=12", NULL});
	is_int(r.status, 1, "wrong param type: weft-cli exits 1");
	ok(strstr(r.err, "method") && strstr(r.err, "string"), "wrong param type: names param and type (%s)",
	   r.err);
	json_decref(j);
	tu_run_free(&r);
}

static void test_hostile(pid_t pid)
{
	struct weft_mpw w;
	struct tu_rpc_reply rep;
	weft_mpw_init(&w);

	/* Garbage: 0xc1 is never msgpack; the connection is closed. */
	int fd = tu_unix_connect(sock);
	tu_send_all(fd, "\xc1garbage", 8);
	ok(tu_wait_closed(fd, 3000), "garbage bytes: connection closed");
	close(fd);
	ok(tu_rpc_still_serving(sock), "garbage bytes: daemon still serves");

	/* Truncated frame, then the client goes away. */
	tu_rpc_request(&w, 5, "status", "\x90", 1);
	fd = tu_unix_connect(sock);
	tu_send_all(fd, w.buf, w.len - 3);
	close(fd);
	ok(tu_rpc_still_serving(sock), "truncated frame then hang-up: daemon still serves");

	/* Truncated frame and silence: closed after rpc.partial_timeout_ms (300 ms here). */
	fd = tu_unix_connect(sock);
	tu_send_all(fd, w.buf, w.len - 3);
	ok(tu_wait_closed(fd, 3000), "truncated frame: closed after the partial timeout");
	close(fd);

	/* A 14-byte input declaring a map of 2^32-1 entries. */
	long rss0 = tu_rss_kib(pid);
	fd = tu_unix_connect(sock);
	tu_send_all(fd, "\xdf\xff\xff\xff\xff\x01\x02\x03\x04\x05\x06\x07\x08\x09", 14);
	ok(tu_wait_closed(fd, 3000), "map header declaring 2^32-1 entries: connection closed at once");
	close(fd);
	/* ... and a 4 GiB string inside a request. */
	fd = tu_unix_connect(sock);
	tu_send_all(fd, "\x94\x00\x07\xdb\xff\xff\xff\xff" "status", 14);
	long n = tu_recv(fd, (uint8_t[512]){0}, 512, 3000);
	ok(n != -1 && tu_wait_closed(fd, 3000), "str32 header declaring 4 GiB: answered and closed");
	close(fd);
	long rss1 = tu_rss_kib(pid);
	ok(rss1 - rss0 < 16 * 1024, "huge declared sizes allocate nothing (rss %ld -> %ld KiB)", rss0, rss1);
	ok(tu_rpc_still_serving(sock), "huge declared sizes: daemon still serves");

	/* A complete frame over 1 MiB: error reply naming the limit, then closed. */
	size_t big = (1 << 20) + 1000;
	uint8_t *blob = calloc(1, big);
	struct weft_mpw p;
	weft_mpw_init(&p);
	weft_mpw_array(&p, 1);
	weft_mpw_bin(&p, blob, big);
	weft_mpw_reset(&w);
	tu_rpc_request(&w, 42, "status", p.buf, p.len);
	fd = tu_unix_connect(sock);
	tu_send_all(fd, w.buf, w.len);
	uint8_t buf[4096];
	n = tu_recv(fd, buf, sizeof(buf), 5000);
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, buf, n > 0 ? (size_t)n : 0);
	ok(n > 0 && tu_rpc_parse_reply(&r, &rep) == 0 && rep.msgid == 42 && rep.code == -32600 &&
		   strstr(rep.message, "max_frame"),
	   "frame over 1 MiB: error reply for msgid 42 naming rpc.max_frame (%s)", rep.message);
	ok(tu_wait_closed(fd, 3000), "frame over 1 MiB: connection closed");
	close(fd);
	weft_mpw_free(&p);
	free(blob);
	ok(tu_rpc_still_serving(sock), "oversized frame: daemon still serves");

	/* Well-formed msgpack that is not a request. */
	ok(tu_rpc_roundtrip(sock, "\x93\x05\x02\x03", 4, &rep) == 0 && rep.code == -32600,
	   "array of an unknown message type: INVALID_REQUEST (%s)", rep.message);
	weft_mpw_reset(&w);
	tu_rpc_request(&w, 8, "status", "\x05", 1);
	ok(tu_rpc_roundtrip(sock, w.buf, w.len, &rep) == 0 && rep.msgid == 8 && rep.code == -32600,
	   "params not an array: INVALID_REQUEST for msgid 8 (%s)", rep.message);
	weft_mpw_reset(&w);
	tu_rpc_request(&w, 9, "nosuch", "\x90", 1);
	ok(tu_rpc_roundtrip(sock, w.buf, w.len, &rep) == 0 && rep.code == -32601, "unknown method: METHOD_NOT_FOUND");
	weft_mpw_reset(&w);
	tu_rpc_request(&w, 10, "help", "\x91\x81\xa5" "bogus" "\x01", 9);
	ok(tu_rpc_roundtrip(sock, w.buf, w.len, &rep) == 0 && rep.code == -32602 && strstr(rep.message, "bogus"),
	   "unknown named parameter: INVALID_PARAMS naming it (%s)", rep.message);
	weft_mpw_reset(&w);
	tu_rpc_request(&w, 11, "status", "\x91\x01", 2);
	ok(tu_rpc_roundtrip(sock, w.buf, w.len, &rep) == 0 && rep.code == -32602, "too many parameters: INVALID_PARAMS (%s)",
	   rep.message);
	weft_mpw_reset(&w);
	tu_rpc_request(&w, 12, "help", "\x91\x07", 2);
	ok(tu_rpc_roundtrip(sock, w.buf, w.len, &rep) == 0 && rep.code == -32602 && strstr(rep.message, "'method'"),
	   "positional parameter of the wrong type: INVALID_PARAMS (%s)", rep.message);

	/* Pipelining: 200 requests in one write, answered in order. */
	weft_mpw_reset(&w);
	for (uint64_t id = 1; id <= 200; id++)
		tu_rpc_request(&w, id, id % 2 ? "version" : "status", "\x90", 1);
	fd = tu_unix_connect(sock);
	tu_send_all(fd, w.buf, w.len);
	size_t cap = 1 << 20, got = 0;
	uint8_t *in = malloc(cap);
	long m;
	while (got < cap && (m = tu_recv(fd, in + got, cap - got, 3000)) > 0) {
		got += (size_t)m;
		size_t fl, off = 0, frames = 0;
		while (weft_mp_frame_len(in + off, got - off, cap, &fl) == 0)
			off += fl, frames++;
		if (frames == 200)
			break;
	}
	close(fd);
	weft_mp_reader_init(&r, in, got);
	uint64_t expect = 1;
	while (expect <= 200 && tu_rpc_parse_reply(&r, &rep) == 0 && rep.msgid == expect && rep.code == 0)
		expect++;
	is_int((long long)expect - 1, 200, "200 pipelined requests answered in order");
	free(in);

	/* Many concurrent clients, plus one sending garbage in the middle. */
	int fds[40];
	for (int i = 0; i < 40; i++)
		fds[i] = tu_unix_connect(sock);
	int bad = tu_unix_connect(sock);
	tu_send_all(bad, "\xc1", 1);
	int answered = 0;
	for (int i = 0; i < 40; i++) {
		weft_mpw_reset(&w);
		tu_rpc_request(&w, 1000 + (uint64_t)i, "status", "\x90", 1);
		tu_send_all(fds[i], w.buf, w.len);
	}
	for (int i = 0; i < 40; i++) {
		n = tu_recv(fds[i], buf, sizeof(buf), 5000);
		weft_mp_reader_init(&r, buf, n > 0 ? (size_t)n : 0);
		answered += n > 0 && tu_rpc_parse_reply(&r, &rep) == 0 && rep.msgid == 1000 + (uint64_t)i && rep.code == 0;
		close(fds[i]);
	}
	close(bad);
	is_int(answered, 40, "40 concurrent clients answered while another sent garbage");
	weft_mpw_free(&w);
}

static void test_stop(pid_t pid)
{
	struct tu_run r;
	json_t *j = cli(&r, (const char *[]){"stop", NULL});
	is_int(r.status, 0, "weft-cli stop exits 0");
	ok(json_is_true(json_object_get(j, "stopping")), "stop answers stopping=true");
	json_decref(j);
	tu_run_free(&r);
	is_int(tu_wait(pid, 10000), 0, "weftd exits 0 after stop");
	struct stat st;
	ok(stat(sock, &st) != 0, "socket unlinked after stop");
	j = cli(&r, (const char *[]){"status", NULL});
	is_int(r.status, 3, "weft-cli against a stopped node exits 3");
	ok(strstr(r.err, "cannot connect") != NULL, "and says it cannot connect (%s)", r.err);
	json_decref(j);
	tu_run_free(&r);
}

int main(void)
{
	char *tmp = tu_tmpdir("rpc");
	if (asprintf(&datadir, "%s/node", tmp) < 0 || asprintf(&sock, "%s/rpc.sock", datadir) < 0)
		abort();
	mkdir(datadir, 0700);
	char *conf;
	if (asprintf(&conf, "%s/weft.conf", datadir) < 0)
		abort();
	tu_write_file(conf, "[rpc]\npartial_timeout_ms = 300\n[log]\nlevel = debug\n");
	free(conf);

	pid_t pid = tu_weftd_start(datadir, NULL);
	ok(pid > 0, "weftd starts in a fresh data dir");
	if (pid <= 0)
		return done_testing();
	struct stat st;
	char *key;
	if (asprintf(&key, "%s/identity.key", datadir) < 0)
		abort();
	ok(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600, "identity.key created with mode 0600");
	ok(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600,
	   "rpc.sock is a socket with mode 0600");
	free(key);

	test_cli_methods(pid);
	test_hostile(pid);
	test_stop(pid);

	tu_rmtree(tmp);
	free(tmp);
	free(datadir);
	free(sock);
	return done_testing();
}
