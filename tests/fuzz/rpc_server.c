/* tests/fuzz/rpc_server.c - libFuzzer target for weftd's RPC server
 * (net/rpc_server.c) through its public interface (weft/rpc.h): the
 * server runs on a libevent base inside the fuzzer, and each input is
 * what one client sends on a fresh connection to its Unix socket.
 *
 * Input: a byte picking how the stream is written (bit 0 clear: at once;
 * set: in pieces of 1 + (byte >> 2) % 32 bytes, with a turn of the event
 * loop between pieces) and whether the client then half-closes (bit 1),
 * then the stream.  The client reads until the server closes or stops
 * answering, and closes.
 *
 * The methods exercise every parameter type of weft_rpc_params
 * (positional and named), the raw parameters, failures, pending calls
 * answered a few loop turns later (or after the client left), a
 * subscription with notifications (also sent from inside a call, which
 * may close that call's own connection), and weft_rpc_after_reply.
 *
 * Beyond ASan/UBSan/LSan, abort()s when the server sends anything but
 * whole responses [1, msgid|nil, error, result] with exactly one of error
 * and result nil (an error a {code, message} map whose message is UTF-8)
 * and notifications [2, method, params], or when a connection the client
 * closed is still counted after the loop has run.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes request streams and exits. */
#include <errno.h>
#include <signal.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/fuzzfile.h"
#include "lib/protofuzz.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/log.h"
#include "weft/mp.h"
#include "weft/rpc.h"

static struct event_base *base;
static struct weft_rpc_server *srv;
static char sock_path[256];
static struct weft_rpc_call *pend[8];
static unsigned int npend, after_calls;
static bool verbose; /* WEFT_FUZZ_VERBOSE: print what the server sent */

/* ---- methods ---- */

static const struct weft_rpc_done *m_echo(struct weft_rpc_call *call, void *ctx)
{
	uint64_t a = 0;
	bool b = false, has_s = false;
	struct weft_rpc_bytes s = {0}, y = {0}, z = {0};
	const struct weft_rpc_param spec[] = {
		{"a", WEFT_RPC_UINT, true, &a, NULL},  {"b", WEFT_RPC_BOOL, false, &b, NULL},
		{"s", WEFT_RPC_STR, false, &s, &has_s}, {"y", WEFT_RPC_BYTES, false, &y, NULL},
		{"z", WEFT_RPC_ANY, false, &z, NULL},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	if (bad)
		return bad;
	pf_check(!has_s || s.ptr != NULL || s.len == 0, "a present str has bytes");
	pf_check(z.len == 0 || pf_one_value(z.ptr, z.len), "an ANY parameter is one msgpack value");
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 5);
	weft_mpw_str(w, "a");
	weft_mpw_uint(w, a);
	weft_mpw_str(w, "b");
	weft_mpw_bool(w, b);
	weft_mpw_str(w, "s");
	weft_mpw_strn(w, (const char *)s.ptr, s.len);
	weft_mpw_str(w, "y");
	weft_mpw_bin(w, y.ptr, y.len);
	weft_mpw_str(w, "z");
	if (z.len)
		weft_mpw_raw(w, z.ptr, z.len);
	else
		weft_mpw_nil(w);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *m_raw(struct weft_rpc_call *call, void *ctx)
{
	size_t len = 0;
	const uint8_t *p = weft_rpc_params_raw(call, &len);
	pf_check(p != NULL && pf_one_value(p, len), "raw params are one msgpack value");
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "len");
	weft_mpw_uint(w, len);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *m_fail(struct weft_rpc_call *call, void *ctx)
{
	return weft_rpc_fail(call, WEFT_RPC_REJECTED, "refused %s", weft_rpc_method_name(call));
}

static const struct weft_rpc_done *m_later(struct weft_rpc_call *call, void *ctx)
{
	if (npend == sizeof(pend) / sizeof(pend[0]))
		return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "busy");
	pend[npend++] = call;
	return weft_rpc_pending(call);
}

static const struct weft_rpc_done *m_sub(struct weft_rpc_call *call, void *ctx)
{
	int rc = weft_rpc_subscribe(call, "t");
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "%s", weft_strerror(rc));
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *m_notify(struct weft_rpc_call *call, void *ctx)
{
	size_t len = 0;
	const uint8_t *p = weft_rpc_params_raw(call, &len);
	weft_rpc_notify(srv, "t", "event", p, len);
	return weft_rpc_ok(call);
}

static void after(void *arg)
{
	after_calls++;
}

static const struct weft_rpc_done *m_stop(struct weft_rpc_call *call, void *ctx)
{
	weft_rpc_after_reply(call, after, NULL);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_method methods[] = {
	{.name = "echo", .handler = m_echo, .params = "a=UINT [b=BOOL s=STR y=BYTES z=ANY]", .help = ""},
	{.name = "raw", .handler = m_raw, .params = "", .help = ""},
	{.name = "fail", .handler = m_fail, .params = "", .help = ""},
	{.name = "later", .handler = m_later, .params = "", .help = ""},
	{.name = "sub", .handler = m_sub, .params = "", .help = ""},
	{.name = "notify", .handler = m_notify, .params = "", .help = ""},
	{.name = "stop", .handler = m_stop, .params = "", .help = "", .flags = WEFT_RPC_ADMIN},
};

/* ---- the client ---- */

static void finish_pending(void)
{
	for (unsigned int i = 0; i < npend; i++) {
		if (i % 2) {
			weft_rpc_finish_fail(pend[i], WEFT_RPC_INTERNAL_ERROR, "later failed");
		} else {
			struct weft_mpw *w = weft_rpc_result(pend[i]);
			weft_mpw_map(w, 1);
			weft_mpw_str(w, "later");
			weft_mpw_bool(w, true);
			weft_rpc_finish_ok(pend[i]);
		}
	}
	npend = 0;
}

static void turn(void)
{
	event_base_loop(base, EVLOOP_NONBLOCK);
}

struct inbox {
	uint8_t *buf;
	size_t len, cap;
	bool eof;
};

/* Reads what the server sent so far; true when something arrived. */
static bool drain(int fd, struct inbox *in)
{
	bool got = false;
	for (;;) {
		if (in->cap - in->len < 4096) {
			in->cap = in->cap ? 2 * in->cap : 65536;
			in->buf = realloc(in->buf, in->cap);
			pf_check(in->buf != NULL, "realloc");
		}
		ssize_t r = read(fd, in->buf + in->len, in->cap - in->len);
		if (r > 0) {
			in->len += (size_t)r;
			got = true;
			continue;
		}
		if (r == 0)
			in->eof = true;
		else
			pf_check(errno == EAGAIN || errno == ECONNRESET, "client read");
		return got;
	}
}

static void check_error_map(struct weft_mp_reader *r)
{
	uint32_t pairs, kl, ml;
	const char *k, *msg;
	int64_t code;
	bool have_code = false, have_msg = false;
	pf_check(weft_mp_read_map(r, &pairs) == 0 && pairs == 2, "an error is a map of two");
	for (uint32_t i = 0; i < pairs; i++) {
		pf_check(weft_mp_read_str(r, &k, &kl) == 0, "error keys are str");
		if (kl == 4 && memcmp(k, "code", 4) == 0) {
			pf_check(weft_mp_read_int(r, &code) == 0, "error code an integer");
			have_code = true;
		} else if (kl == 7 && memcmp(k, "message", 7) == 0) {
			pf_check(weft_mp_read_str(r, &msg, &ml) == 0, "error message a str");
			pf_check(weft_utf8_valid(msg, ml), "error message is UTF-8");
			have_msg = true;
		} else {
			pf_check(false, "error keys are code and message");
		}
	}
	pf_check(have_code && have_msg, "an error has code and message");
}

/* Everything the server sent: whole responses and notifications. */
static void check_output(const uint8_t *p, size_t len)
{
	size_t off = 0;
	while (off < len) {
		size_t fl;
		pf_check(weft_mp_frame_len(p + off, len - off, len - off, &fl) == 0, "the server sends whole frames");
		struct weft_mp_reader r;
		uint32_t count;
		uint64_t type = 0, msgid;
		weft_mp_reader_init(&r, p + off, fl);
		if (verbose) {
			json_t *j = NULL;
			if (weft_mp_buf_to_json(p + off, fl, &j) == 0) {
				json_dumpf(j, stderr, JSON_COMPACT);
				fputc('\n', stderr);
				json_decref(j);
			}
		}
		pf_check(weft_mp_read_array(&r, &count) == 0 && weft_mp_read_uint(&r, &type) == 0, "[type, ...]");
		if (type == 2) {
			const char *m;
			uint32_t ml, n;
			pf_check(count == 3 && weft_mp_read_str(&r, &m, &ml) == 0 && weft_mp_read_array(&r, &n) == 0,
				 "a notification [2, method, params]");
		} else {
			pf_check(type == 1 && count == 4, "a response [1, msgid, error, result]");
			pf_check(weft_mp_peek_nil(&r) ? weft_mp_read_nil(&r) == 0 : weft_mp_read_uint(&r, &msgid) == 0,
				 "msgid uint or nil");
			bool err_nil = weft_mp_peek_nil(&r);
			if (err_nil)
				pf_check(weft_mp_read_nil(&r) == 0, "nil error");
			else
				check_error_map(&r);
			bool res_nil = weft_mp_peek_nil(&r);
			pf_check(err_nil != res_nil, "exactly one of error and result is nil");
			pf_check(weft_mp_skip(&r) == 0 && weft_mp_remaining(&r) == 0, "the result and nothing after");
		}
		off += fl;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	memcpy(sun.sun_path, sock_path, strlen(sock_path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	pf_check(fd >= 0, "socket");
	pf_check(connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0, "connect");
	struct inbox in = {0};
	size_t piece = data[0] & 1 ? 1 + (size_t)(data[0] >> 2) % 32 : size;
	size_t off = 1, stuck = 0;
	turn();
	while (off < size && stuck < 64) {
		size_t n = size - off < piece ? size - off : piece;
		ssize_t w = write(fd, data + off, n);
		if (w > 0)
			off += (size_t)w, stuck = 0;
		else if (w < 0 && errno != EAGAIN)
			break; /* the server closed the connection */
		else
			stuck++;
		turn();
		drain(fd, &in);
		if (npend && stuck % 4 == 3)
			finish_pending();
	}
	if (data[0] & 2)
		shutdown(fd, SHUT_WR);
	for (unsigned int quiet = 0; !in.eof && quiet < 16;) {
		turn();
		quiet = drain(fd, &in) ? 0 : quiet + 1;
		if (npend && quiet == 3)
			finish_pending();
	}
	close(fd);
	finish_pending();
	for (int i = 0; i < 64 && weft_rpc_server_clients(srv) > 0; i++)
		turn();
	pf_check(weft_rpc_server_clients(srv) == 0, "a connection the client closed is forgotten");
	check_output(in.buf, in.len);
	free(in.buf);
	return 0;
}

/* ---- seeds ---- */

static void request(struct weft_mpw *w, uint64_t id, const char *method)
{
	weft_mpw_array(w, 4);
	weft_mpw_uint(w, 0);
	weft_mpw_uint(w, id);
	weft_mpw_str(w, method);
}

static void write_seeds(const char *dir)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_raw(&w, "\x00", 1);
	request(&w, 1, "echo");
	weft_mpw_array(&w, 5);
	weft_mpw_uint(&w, 7);
	weft_mpw_bool(&w, true);
	weft_mpw_str(&w, "h\xc3\xa9");
	weft_mpw_bin(&w, "\x00\xff", 2);
	weft_mpw_map(&w, 1);
	weft_mpw_str(&w, "k");
	weft_mpw_array(&w, 0);
	request(&w, 2, "echo");
	weft_mpw_array(&w, 1);
	weft_mpw_map(&w, 3);
	weft_mpw_str(&w, "a");
	weft_mpw_uint(&w, 1);
	weft_mpw_str(&w, "y");
	weft_mpw_str(&w, "text");
	weft_mpw_str(&w, "z");
	weft_mpw_nil(&w);
	request(&w, 3, "echo");
	weft_mpw_array(&w, 0);
	request(&w, 4, "nope");
	weft_mpw_array(&w, 0);
	pf_write_file(dir, "echo", w.buf, w.len);

	weft_mpw_reset(&w);
	weft_mpw_raw(&w, "\x0d", 1); /* pieces of 4 bytes */
	request(&w, 5, "sub");
	weft_mpw_array(&w, 0);
	request(&w, 6, "later");
	weft_mpw_array(&w, 0);
	request(&w, 7, "notify");
	weft_mpw_array(&w, 1);
	weft_mpw_uint(&w, 9);
	weft_mpw_array(&w, 3); /* a notification from the client: never answered */
	weft_mpw_uint(&w, 2);
	weft_mpw_str(&w, "raw");
	weft_mpw_array(&w, 0);
	request(&w, 8, "raw");
	weft_mpw_array(&w, 2);
	weft_mpw_nil(&w);
	weft_mpw_double(&w, 2.5);
	request(&w, 9, "stop");
	weft_mpw_array(&w, 0);
	pf_write_file(dir, "pipelined", w.buf, w.len);

	weft_mpw_reset(&w);
	weft_mpw_raw(&w, "\x03", 1); /* byte by byte, then a half-close */
	request(&w, 10, "fail");
	weft_mpw_array(&w, 0);
	weft_mpw_array(&w, 4); /* a response from the client: ignored */
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 3);
	weft_mpw_nil(&w);
	weft_mpw_nil(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 11);
	weft_mpw_bin(&w, "raw", 3);
	weft_mpw_array(&w, 0);
	weft_mpw_raw(&w, "\xc1", 1); /* never msgpack: error, close */
	pf_write_file(dir, "odd", w.buf, w.len);
	weft_mpw_free(&w);
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (getenv("WEFT_FUZZ_SEEDS"))
		write_seeds(getenv("WEFT_FUZZ_SEEDS"));
	verbose = getenv("WEFT_FUZZ_VERBOSE") != NULL;
	signal(SIGPIPE, SIG_IGN); /* as weftd does */
	weft_log_set_level(WEFT_LOG_ERROR);
	snprintf(sock_path, sizeof(sock_path), "%s", ff_scratch_path("rpc.sock"));
	base = event_base_new();
	pf_check(base != NULL, "event_base_new");
	struct weft_rpc_opts opts = {
		.max_frame = 4096,
		.max_clients = 2,
		.partial_timeout_ms = 60000,
		.max_outbuf = 1 << 16,
		.idle_timeout_ms = 60000,
	};
	pf_check(weft_rpc_server_start(&srv, base, sock_path, &opts, methods, sizeof(methods) / sizeof(methods[0]),
				       NULL) == 0,
		 "rpc server start");
	return 0;
}
