/* rpc_server.c - the MessagePack-RPC server on weftd's local Unix socket.
 *
 * One libevent bufferevent per client.  Input moves from the bufferevent
 * into the connection's own buffer, where a resumable framer (weft_mp_framer)
 * finds each frame without ever looking at a byte twice, however small the
 * pieces it arrives in; each frame is decoded as a message and dispatched
 * through the method table given at start.  At most one call per
 * connection is in progress: while a handler is pending the connection
 * reads nothing more, so pipelined requests are answered in order.
 *
 * MessagePack-RPC conformance: a request [0, msgid, method, params] gets
 * exactly one response; a notification [2, method, params] runs and is
 * never answered, not even with an error; a response [1, ...] from a client
 * is ignored.  Method names may come as str or bin and must match a name in
 * the table byte for byte; client bytes echoed in an error are escaped
 * (\xNN), so every error string is UTF-8.  Bytes that can never be
 * msgpack, or a frame over rpc.max_frame, close the connection after an
 * error reply; any other malformed frame gets an error and the connection
 * stays.
 *
 * Resources: a connection with nothing in flight and no subscription is
 * closed after rpc.idle_timeout_ms; a frame still incomplete after
 * rpc.partial_timeout_ms closes it too.  Past rpc.max_clients, RESERVED_SLOTS
 * more clients are accepted for the methods marked WEFT_RPC_ADMIN (status,
 * stop, ...) so an operator is never locked out; past those a client gets
 * an error response (msgid nil) and the close.  A client that does not read
 * its replies stops being read (backpressure); a subscriber that does not
 * read its notifications is disconnected.  Peers are checked with
 * SO_PEERCRED: only the daemon's own uid and root may connect.
 *
 * Lifetime: a connection may be closed from inside any callback, including
 * a notification sent during its own call.  While our code is on its stack
 * (busy) it is only marked dead, and freed when that code unwinds. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/log.h"
#include "weft/rpc.h"

#define MAX_METHOD_NAME 100
#define MAX_TOPICS 8
#define RESERVED_SLOTS 4
#define RESERVED_IDLE_MS 5000
/* libevent reads at most this much per turn, and stops reading a client
 * whose unprocessed input reaches it (a pending call holds its input). */
#define READ_CHUNK (256 * 1024)

enum conn_timer { TIMER_NONE, TIMER_PARTIAL, TIMER_IDLE };

struct rpc_conn {
	struct weft_rpc_server *srv;
	struct bufferevent *bev;
	struct event *timer;          /* the partial-frame or the idle deadline */
	enum conn_timer timer_kind;
	struct rpc_conn *prev, *next;
	struct weft_rpc_call *pending;
	char *topics[MAX_TOPICS];
	unsigned int id;
	bool reserved;          /* accepted past max_clients: admin methods only */
	bool read_paused;       /* output over max_outbuf */
	bool closing;           /* close once the output is flushed */
	bool dead;              /* closed while busy: freed when the stack unwinds */
	bool eof;               /* the client shut its sending side: answer what came, then close */
	unsigned int busy;      /* our code on the stack holds it */
	/* Input taken from the bufferevent: in[off..len) is the current frame
	 * (and possibly the start of the next ones); framer remembers how far
	 * into in + off it has looked. */
	uint8_t *in;
	size_t off, len, cap;
	struct weft_mp_framer framer;
	void (*after_fn)(void *);
	void *after_arg;
	/* Notifications queued to it: bytes in the current one-second window
	 * and the rate of the last full one (bytes/s), which sizes how much
	 * may wait unread before it is cut (subscriber_allowance). */
	uint64_t note_window_us;
	size_t note_window_bytes, note_rate;
};

struct weft_rpc_server {
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *listen_pause;   /* re-enables the listener after accept() failed */
	char *path;
	struct weft_rpc_opts opts;
	const struct weft_rpc_method *methods;
	size_t nmethods;
	void *ctx;
	struct rpc_conn *conns;
	unsigned int nconns, nreserved;
	unsigned int next_id;
	struct weft_log_limit refused_log, slow_log, bad_log, timeout_log;
};

struct weft_rpc_call {
	struct weft_rpc_server *srv;
	struct rpc_conn *conn;  /* NULL once the client went away */
	uint8_t *frame;         /* owned copy of the request; params point into it */
	const uint8_t *params;
	size_t params_len;
	uint64_t msgid;
	bool is_notification;
	char method[MAX_METHOD_NAME + 1];
	struct weft_mpw result;
};

static void conn_process(struct rpc_conn *c);
static void conn_drop(struct rpc_conn *c);
static void conn_close_after_flush(struct rpc_conn *c);
static void conn_rearm(struct rpc_conn *c, bool fresh);

/* Writes bytes a client sent as printable ASCII, others as \xNN, so that
 * an error string quoting them is always valid UTF-8. */
static void printable(char *out, size_t cap, const void *bytes, size_t len)
{
	const uint8_t *p = bytes;
	size_t o = 0;
	for (size_t i = 0; i < len && o + 5 < cap; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", p[i]);
	}
	out[o] = '\0';
}

/* ---- replies ---- */

static void write_error_map(struct weft_mpw *w, int code, const char *msg)
{
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "code");
	weft_mpw_int(w, code);
	weft_mpw_str(w, "message");
	weft_mpw_str(w, msg);
}

/* Encodes [1, msgid, {code, message}, nil] (msgid nil when unknown). */
static void encode_error(struct weft_mpw *w, const uint64_t *msgid, int code, const char *msg)
{
	weft_mpw_array(w, 4);
	weft_mpw_uint(w, 1);
	if (msgid)
		weft_mpw_uint(w, *msgid);
	else
		weft_mpw_nil(w);
	write_error_map(w, code, msg);
	weft_mpw_nil(w);
}

static void conn_send(struct rpc_conn *c, const struct weft_mpw *w)
{
	if (!c->dead)
		bufferevent_write(c->bev, w->buf, w->len);
}

/* Sends an error response outside any call. */
static void conn_send_error(struct rpc_conn *c, const uint64_t *msgid, int code, const char *msg)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	encode_error(&w, msgid, code, msg);
	conn_send(c, &w);
	weft_mpw_free(&w);
}

static void call_free(struct weft_rpc_call *call)
{
	weft_mpw_free(&call->result);
	free(call->frame);
	free(call);
}

/* Sends the reply (unless the client is gone or it was a notification),
 * frees the call and lets the connection read its next request. */
static void call_complete(struct weft_rpc_call *call, const char *errmsg, int code)
{
	struct rpc_conn *c = call->conn;
	if (c && !call->is_notification) {
		struct weft_mpw w;
		weft_mpw_init(&w);
		if (errmsg) {
			encode_error(&w, &call->msgid, code, errmsg);
		} else {
			weft_mpw_array(&w, 4);
			weft_mpw_uint(&w, 1);
			weft_mpw_uint(&w, call->msgid);
			weft_mpw_nil(&w);
			if (call->result.len)
				weft_mpw_raw(&w, call->result.buf, call->result.len);
			else
				weft_mpw_map(&w, 0);
		}
		conn_send(c, &w);
		weft_mpw_free(&w);
	}
	if (c && c->pending == call) {
		c->pending = NULL;
		/* Read what the client pipelined behind this call, from the loop. */
		if (!c->dead)
			bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	}
	call_free(call);
}
static const struct weft_rpc_done *done_marker(struct weft_rpc_call *call)
{
	return (const struct weft_rpc_done *)call;
}

static void vfail(struct weft_rpc_call *call, int code, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	weft_debug("rpc.fail", "method=%s code=%d message=\"%s\"", call->method, code, msg);
	call_complete(call, msg, code);
}

const struct weft_rpc_done *weft_rpc_ok(struct weft_rpc_call *call)
{
	const struct weft_rpc_done *d = done_marker(call);
	call_complete(call, NULL, 0);
	return d;
}

const struct weft_rpc_done *weft_rpc_fail(struct weft_rpc_call *call, int code, const char *fmt, ...)
{
	const struct weft_rpc_done *d = done_marker(call);
	va_list ap;
	va_start(ap, fmt);
	vfail(call, code, fmt, ap);
	va_end(ap);
	return d;
}

const struct weft_rpc_done *weft_rpc_pending(struct weft_rpc_call *call)
{
	if (call->conn)
		call->conn->pending = call;
	return done_marker(call);
}

void weft_rpc_finish_ok(struct weft_rpc_call *call)
{
	call_complete(call, NULL, 0);
}

void weft_rpc_finish_fail(struct weft_rpc_call *call, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(call, code, fmt, ap);
	va_end(ap);
}

struct weft_mpw *weft_rpc_result(struct weft_rpc_call *call)
{
	return &call->result;
}

const uint8_t *weft_rpc_params_raw(const struct weft_rpc_call *call, size_t *len)
{
	*len = call->params_len;
	return call->params;
}

const char *weft_rpc_method_name(const struct weft_rpc_call *call)
{
	return call->method;
}

void weft_rpc_after_reply(struct weft_rpc_call *call, void (*fn)(void *arg), void *arg)
{
	/* A connection already cut will write no reply to wait for. */
	if (call->conn && !call->conn->dead) {
		call->conn->after_fn = fn;
		call->conn->after_arg = arg;
	} else {
		fn(arg);
	}
}

int weft_rpc_subscribe(struct weft_rpc_call *call, const char *topic)
{
	struct rpc_conn *c = call->conn;
	if (c == NULL || c->dead)
		return WEFT_ECLOSED;
	for (int i = 0; i < MAX_TOPICS; i++)
		if (c->topics[i] && strcmp(c->topics[i], topic) == 0)
			return 0;
	for (int i = 0; i < MAX_TOPICS; i++) {
		if (c->topics[i] == NULL) {
			c->topics[i] = strdup(topic);
			if (c->topics[i] == NULL)
				abort();
			return 0;
		}
	}
	return WEFT_ETOOBIG;
}

/* Counts len bytes of notifications queued to c at now_us. */
static void note_rate_add(struct rpc_conn *c, uint64_t now_us, size_t len)
{
	if (now_us - c->note_window_us >= 1000000) {
		/* A window with nothing in it ended a silent second: rate 0. */
		c->note_rate = now_us - c->note_window_us < 2000000 ? c->note_window_bytes : 0;
		c->note_window_us = now_us;
		c->note_window_bytes = 0;
	}
	c->note_window_bytes += len;
}

/* How many bytes of notifications may wait unread at c before it is cut:
 * max_outbuf, or subscriber_lag_ms of its recent notification rate when
 * that is more (a subscriber keeping up with a busy node is not cut for
 * the node's throughput, a stalled one is within seconds). */
static size_t subscriber_allowance(const struct rpc_conn *c)
{
	const struct weft_rpc_opts *o = &c->srv->opts;
	size_t byrate = (size_t)((uint64_t)c->note_rate * o->subscriber_lag_ms / 1000);
	return byrate > o->max_outbuf ? byrate : o->max_outbuf;
}

unsigned int weft_rpc_notify(struct weft_rpc_server *srv, const char *topic, const char *method,
			     const void *params, size_t len)
{
	unsigned int sent = 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now_us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	struct weft_mpw head;
	weft_mpw_init(&head);
	weft_mpw_array(&head, 3);
	weft_mpw_uint(&head, 2);
	weft_mpw_str(&head, method);
	struct rpc_conn *next;
	for (struct rpc_conn *c = srv->conns; c; c = next) {
		next = c->next;
		bool subscribed = false;
		for (int i = 0; i < MAX_TOPICS && !subscribed && !c->dead; i++)
			subscribed = c->topics[i] && strcmp(c->topics[i], topic) == 0;
		if (!subscribed)
			continue;
		size_t unread = evbuffer_get_length(bufferevent_get_output(c->bev));
		if (unread > subscriber_allowance(c)) {
			weft_log_limited(&srv->slow_log, WEFT_LOG_WARN, "rpc.slow_subscriber",
					 "conn=%u topic=%s unread=%zu max_outbuf=%zu rate=%zu/s action=disconnect", c->id,
					 topic, unread, srv->opts.max_outbuf, c->note_rate);
			conn_drop(c); /* safe even when c is inside its own call */
			continue;
		}
		note_rate_add(c, now_us, head.len + len);
		bufferevent_write(c->bev, head.buf, head.len);
		bufferevent_write(c->bev, params, len);
		sent++;
	}
	weft_mpw_free(&head);
	return sent;
}

/* ---- parameters ---- */

static const char *ptype_name(enum weft_rpc_ptype t)
{
	switch (t) {
	case WEFT_RPC_UINT: return "a non-negative integer";
	case WEFT_RPC_BOOL: return "a boolean";
	case WEFT_RPC_STR: return "a string";
	case WEFT_RPC_BYTES: return "a string or binary";
	case WEFT_RPC_ANY: return "a value";
	}
	return "a value";
}

/* Reads one parameter value of the given type into out.  0 or WEFT_EDECODE. */
static int read_param(struct weft_mp_reader *r, const struct weft_rpc_param *p)
{
	const uint8_t *start = r->p;
	switch (p->type) {
	case WEFT_RPC_UINT:
		return weft_mp_read_uint(r, p->out);
	case WEFT_RPC_BOOL:
		return weft_mp_read_bool(r, p->out);
	case WEFT_RPC_STR:
	case WEFT_RPC_BYTES: {
		struct weft_mp_obj o;
		if (weft_mp_read(r, &o) != 0)
			return WEFT_EDECODE;
		if (o.type != WEFT_MP_STR && !(p->type == WEFT_RPC_BYTES && o.type == WEFT_MP_BIN))
			return WEFT_EDECODE;
		struct weft_rpc_bytes *b = p->out;
		b->ptr = o.v.s.bytes;
		b->len = o.v.s.len;
		return 0;
	}
	case WEFT_RPC_ANY: {
		if (weft_mp_skip(r) != 0)
			return WEFT_EDECODE;
		struct weft_rpc_bytes *b = p->out;
		b->ptr = start;
		b->len = (size_t)(r->p - start);
		return 0;
	}
	}
	return WEFT_EDECODE;
}

const struct weft_rpc_done *weft_rpc_params(struct weft_rpc_call *call, const struct weft_rpc_param *spec,
					    size_t nspec)
{
	struct weft_mp_reader r;
	bool seen[32] = {false};
	uint32_t n;
	if (nspec > 32)
		return weft_rpc_fail(call, WEFT_RPC_INTERNAL_ERROR, "too many parameters in spec");
	weft_mp_reader_init(&r, call->params, call->params_len);
	if (weft_mp_read_array(&r, &n) != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "params must be an array");
	if (n == 1 && weft_mp_peek_type(&r) == WEFT_MP_MAP) {
		uint32_t pairs;
		(void)weft_mp_read_map(&r, &pairs);
		for (uint32_t i = 0; i < pairs; i++) {
			const char *key;
			uint32_t klen;
			if (weft_mp_read_str(&r, &key, &klen) != 0)
				return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "parameter names must be strings");
			size_t j = 0;
			while (j < nspec && !(strlen(spec[j].name) == klen && memcmp(spec[j].name, key, klen) == 0))
				j++;
			if (j == nspec) {
				char shown[4 * 64 + 1];
				printable(shown, sizeof(shown), key, klen > 64 ? 64 : klen);
				return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "unknown parameter '%s'", shown);
			}
			if (seen[j])
				return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "parameter '%s' given twice",
						     spec[j].name);
			if (read_param(&r, &spec[j]) != 0)
				return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "parameter '%s' must be %s",
						     spec[j].name, ptype_name(spec[j].type));
			seen[j] = true;
		}
	} else {
		if (n > nspec)
			return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS,
					     "too many parameters: %u given, at most %zu", n, nspec);
		for (uint32_t j = 0; j < n; j++) {
			if (read_param(&r, &spec[j]) != 0)
				return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "parameter '%s' must be %s",
						     spec[j].name, ptype_name(spec[j].type));
			seen[j] = true;
		}
	}
	for (size_t j = 0; j < nspec; j++) {
		if (spec[j].present)
			*spec[j].present = seen[j];
		if (spec[j].required && !seen[j])
			return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "missing required parameter '%s'",
					     spec[j].name);
	}
	return NULL;
}

/* ---- dispatch ---- */

static const struct weft_rpc_method *find_method(struct weft_rpc_server *srv, const char *name, size_t len)
{
	for (size_t i = 0; i < srv->nmethods; i++)
		if (strlen(srv->methods[i].name) == len && memcmp(srv->methods[i].name, name, len) == 0)
			return &srv->methods[i];
	return NULL;
}

/* Reads a method name given as str or bin (generic clients send either). */
static int read_name(struct weft_mp_reader *r, const char **name, uint32_t *len)
{
	struct weft_mp_obj o;
	if (weft_mp_read(r, &o) != 0 || (o.type != WEFT_MP_STR && o.type != WEFT_MP_BIN))
		return WEFT_EDECODE;
	*name = (const char *)o.v.s.bytes;
	*len = o.v.s.len;
	return 0;
}

/* Decodes one complete frame (owned by us now) and runs its handler. */
static void conn_handle_frame(struct rpc_conn *c, uint8_t *frame, size_t len)
{
	struct weft_mp_reader r;
	uint32_t n, mlen = 0;
	uint64_t type = 0, msgid = 0;
	bool have_id = false, answer = true;
	const char *method = NULL;
	const char *why = NULL;

	weft_mp_reader_init(&r, frame, len);
	if (weft_mp_read_array(&r, &n) != 0 || weft_mp_read_uint(&r, &type) != 0) {
		why = "a message must be an array starting with its type (0 request, 2 notification)";
	} else if (type == 1 || type == 2) {
		/* Responses and notifications are never answered, even when
		 * malformed: answering one is how two peers ping-pong errors. */
		answer = false;
		if (type == 1)
			why = "a response from a client (weftd sends no requests)";
		else if (n != 3)
			why = "a notification must be [2, method, params]";
	} else if (type != 0 || n != 4) {
		why = "expected [0, msgid, method, params] or [2, method, params]";
	} else if (weft_mp_read_uint(&r, &msgid) != 0) {
		why = "msgid must be a non-negative integer";
	} else {
		have_id = true;
	}
	if (!why && read_name(&r, &method, &mlen) != 0)
		why = "method must be a string";
	if (!why && mlen > MAX_METHOD_NAME)
		why = "method name longer than 100 bytes";
	const uint8_t *params = r.p;
	if (!why && weft_mp_peek_type(&r) != WEFT_MP_ARRAY)
		why = "params must be an array";
	if (!why && weft_mp_skip(&r) != 0)
		why = "params are malformed or nested deeper than 32 levels";
	if (!why && weft_mp_remaining(&r) != 0)
		why = "bytes after the message"; /* unreachable: the framer cut here */
	if (why) {
		weft_log_limited(&c->srv->bad_log, answer ? WEFT_LOG_INFO : WEFT_LOG_DEBUG, "rpc.bad_request",
				 "conn=%u type=%llu reason=\"%s\" action=%s", c->id, (unsigned long long)type, why,
				 answer ? "error reply" : "ignored");
		if (answer)
			conn_send_error(c, have_id ? &msgid : NULL, WEFT_RPC_INVALID_REQUEST, why);
		free(frame);
		return;
	}

	struct weft_rpc_call *call = calloc(1, sizeof(*call));
	if (call == NULL)
		abort();
	call->srv = c->srv;
	call->conn = c;
	call->frame = frame;
	call->params = params;
	call->params_len = (size_t)(r.p - params);
	call->msgid = msgid;
	call->is_notification = (type == 2);
	weft_mpw_init(&call->result);

	const struct weft_rpc_method *m = find_method(c->srv, method, mlen);
	if (m == NULL) {
		char shown[4 * MAX_METHOD_NAME + 1];
		printable(shown, sizeof(shown), method, mlen);
		printable(call->method, sizeof(call->method), method, mlen);
		weft_rpc_fail(call, WEFT_RPC_METHOD_NOT_FOUND, "unknown method '%s' ('help' lists the methods)", shown);
		return;
	}
	memcpy(call->method, m->name, mlen);
	call->method[mlen] = '\0';
	if (c->reserved && !(m->flags & WEFT_RPC_ADMIN)) {
		weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE,
			      "rpc.max_clients (%u) reached: this connection may only call the methods 'help' "
			      "marks as admin (status, stop, help, version)",
			      c->srv->opts.max_clients);
		return;
	}
	weft_debug("rpc.call", "conn=%u method=%s", c->id, call->method);
	/* The handler answers now (call freed) or later (call pending). */
	(void)m->handler(call, c->srv->ctx);
}

/* Tries to find the msgid in the first bytes of a frame that cannot be
 * read whole, so the error can be answered rather than only closed. */
static bool peek_msgid(const uint8_t *p, size_t len, uint64_t *msgid)
{
	struct weft_mp_reader r;
	uint64_t type;
	/* The array header's count may exceed what is buffered, so read it raw. */
	if (len < 1 || p[0] != 0x94)
		return false;
	weft_mp_reader_init(&r, p + 1, len - 1);
	return weft_mp_read_uint(&r, &type) == 0 && type == 0 && weft_mp_read_uint(&r, msgid) == 0;
}

/* Moves up to want bytes from the bufferevent into c->in (compacting the
 * consumed part first).  Returns how many moved. */
static size_t conn_pull(struct rpc_conn *c, size_t want)
{
	struct evbuffer *input = bufferevent_get_input(c->bev);
	size_t avail = evbuffer_get_length(input);
	if (want > avail)
		want = avail;
	if (want == 0)
		return 0;
	if (c->off > 0) {
		memmove(c->in, c->in + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->len + want > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		while (cap < c->len + want)
			cap *= 2;
		c->in = realloc(c->in, cap);
		if (c->in == NULL)
			abort();
		c->cap = cap;
	}
	int got = evbuffer_remove(input, c->in + c->len, want);
	if (got > 0)
		c->len += (size_t)got;
	return got > 0 ? (size_t)got : 0;
}

static void conn_process(struct rpc_conn *c)
{
	struct weft_rpc_server *srv = c->srv;
	bool completed = false;
	c->busy++;
	while (c->pending == NULL && !c->closing && !c->dead) {
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) > srv->opts.max_outbuf) {
			/* The client is not reading its replies: stop reading its requests. */
			c->read_paused = true;
			bufferevent_disable(c->bev, EV_READ);
			break;
		}
		size_t flen = 0, have = c->len - c->off;
		int rc = have ? weft_mp_framer_next(&c->framer, c->in + c->off, have, srv->opts.max_frame, &flen)
			      : WEFT_EAGAIN;
		if (rc == WEFT_EAGAIN) {
			/* One byte past max_frame is enough to say "too big". */
			if (conn_pull(c, srv->opts.max_frame + 1 - have) == 0)
				break;
			continue;
		}
		if (rc != 0) {
			uint64_t msgid;
			bool known = peek_msgid(c->in + c->off, have, &msgid);
			const char *why = rc == WEFT_ETOOBIG ? "request exceeds rpc.max_frame"
							     : "bytes are not MessagePack";
			weft_log_limited(&srv->bad_log, WEFT_LOG_WARN, "rpc.bad_frame",
					 "conn=%u reason=\"%s\" max_frame=%zu action=close", c->id, why,
					 srv->opts.max_frame);
			char msg[128];
			if (rc == WEFT_ETOOBIG)
				snprintf(msg, sizeof(msg), "request exceeds rpc.max_frame (%zu bytes)", srv->opts.max_frame);
			else
				snprintf(msg, sizeof(msg), "bytes are not MessagePack: closing the connection");
			conn_send_error(c, known ? &msgid : NULL, rc == WEFT_ETOOBIG ? WEFT_RPC_INVALID_REQUEST
										      : WEFT_RPC_PARSE_ERROR, msg);
			c->off = c->len = 0;
			evbuffer_drain(bufferevent_get_input(c->bev), evbuffer_get_length(bufferevent_get_input(c->bev)));
			conn_close_after_flush(c);
			break;
		}
		uint8_t *frame = malloc(flen);
		if (frame == NULL)
			abort();
		memcpy(frame, c->in + c->off, flen);
		c->off += flen;
		if (c->off == c->len)
			c->off = c->len = 0;
		conn_handle_frame(c, frame, flen);
		completed = true;
	}
	c->busy--;
	if (c->dead) {
		conn_drop(c);
		return;
	}
	/* A half-closed client gets every answer it asked for; a frame it
	 * left incomplete can never complete. */
	if (c->eof && c->pending == NULL && !c->closing && !c->read_paused) {
		conn_close_after_flush(c);
		return;
	}
	conn_rearm(c, completed);
}

/* Whether anything of a request is buffered but not yet a whole frame. */
static bool conn_has_partial(struct rpc_conn *c)
{
	return c->len > c->off || evbuffer_get_length(bufferevent_get_input(c->bev)) > 0;
}

static bool conn_subscribed(const struct rpc_conn *c)
{
	for (int i = 0; i < MAX_TOPICS; i++)
		if (c->topics[i])
			return true;
	return false;
}

/* Sets the connection's one deadline from its state: a partial frame has
 * rpc.partial_timeout_ms from when it started (fresh: a request completed,
 * so a new one starts now); an idle connection (nothing in flight, no
 * subscription) has rpc.idle_timeout_ms from its last activity. */
static void conn_rearm(struct rpc_conn *c, bool fresh)
{
	struct weft_rpc_server *srv = c->srv;
	enum conn_timer kind = TIMER_NONE;
	unsigned int ms = 0;
	if (c->closing || c->dead || c->pending) {
		kind = TIMER_NONE;
	} else if (conn_has_partial(c)) {
		kind = TIMER_PARTIAL;
		ms = srv->opts.partial_timeout_ms;
		if (c->timer_kind == TIMER_PARTIAL && !fresh)
			return; /* the running deadline stands */
	} else if (!conn_subscribed(c)) {
		kind = TIMER_IDLE;
		ms = srv->opts.idle_timeout_ms;
		if (c->reserved && ms > RESERVED_IDLE_MS)
			ms = RESERVED_IDLE_MS;
	}
	c->timer_kind = kind;
	if (kind == TIMER_NONE) {
		evtimer_del(c->timer);
		return;
	}
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	evtimer_add(c->timer, &tv);
}

static void conn_close_after_flush(struct rpc_conn *c)
{
	c->closing = true;
	evtimer_del(c->timer);
	c->timer_kind = TIMER_NONE;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_drop(c);
	/* else on_write frees it once the output has drained */
}

/* ---- connection callbacks ---- */

static void on_read(struct bufferevent *bev, void *arg)
{
	conn_process(arg);
}

/* Output fully written (the write low-watermark is 0). */
static void on_write(struct bufferevent *bev, void *arg)
{
	struct rpc_conn *c = arg;
	if (c->after_fn) {
		void (*fn)(void *) = c->after_fn;
		c->after_fn = NULL;
		c->busy++;
		fn(c->after_arg);
		c->busy--;
	}
	if (c->closing || c->dead) {
		conn_drop(c);
		return;
	}
	if (c->read_paused) {
		c->read_paused = false;
		bufferevent_enable(c->bev, EV_READ);
		conn_process(c);
		return;
	}
	conn_rearm(c, false);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct rpc_conn *c = arg;
	if (what & BEV_EVENT_ERROR)
		weft_info("rpc.conn_error", "conn=%u err=\"%s\"", c->id, strerror(EVUTIL_SOCKET_ERROR()));
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && !c->closing) {
		/* The client may still read: answer what it sent, in order. */
		c->eof = true;
		bufferevent_disable(c->bev, EV_READ);
		conn_process(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (c->after_fn) {
			void (*fn)(void *) = c->after_fn;
			c->after_fn = NULL;
			c->busy++;
			fn(c->after_arg);
			c->busy--;
		}
		conn_drop(c);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct rpc_conn *c = arg;
	struct weft_rpc_server *srv = c->srv;
	if (c->timer_kind == TIMER_PARTIAL)
		weft_log_limited(&srv->timeout_log, WEFT_LOG_WARN, "rpc.partial_timeout",
				 "conn=%u buffered=%zu timeout_ms=%u action=close", c->id, c->len - c->off,
				 srv->opts.partial_timeout_ms);
	else
		weft_log_limited(&srv->timeout_log, WEFT_LOG_INFO, "rpc.idle_timeout",
				 "conn=%u idle_timeout_ms=%u reserved=%d action=close", c->id, srv->opts.idle_timeout_ms,
				 (int)c->reserved);
	c->timer_kind = TIMER_NONE;
	conn_drop(c);
}

static void conn_free(struct rpc_conn *c)
{
	struct weft_rpc_server *srv = c->srv;
	if (c->pending)
		c->pending->conn = NULL; /* answered later into the void */
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	srv->nreserved -= c->reserved;
	event_free(c->timer);
	bufferevent_free(c->bev);
	for (int i = 0; i < MAX_TOPICS; i++)
		free(c->topics[i]);
	free(c->in);
	weft_debug("rpc.close", "conn=%u clients=%u", c->id, srv->nconns);
	free(c);
}

/* Closes c now, or, while code on the stack still holds it, marks it dead:
 * it sends and hears nothing more and is freed when that code unwinds. */
static void conn_drop(struct rpc_conn *c)
{
	if (c->busy == 0) {
		conn_free(c);
		return;
	}
	c->dead = true;
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	evtimer_del(c->timer);
	c->timer_kind = TIMER_NONE;
}

/* Past every slot: an error response with a nil msgid, written without
 * waiting (it fits any socket buffer), then the close. */
static void refuse(struct weft_rpc_server *srv, evutil_socket_t fd, int pid)
{
	char msg[160];
	struct weft_mpw w;
	snprintf(msg, sizeof(msg), "rpc.max_clients (%u) and its %d reserved slots are taken: try again later",
		 srv->opts.max_clients, RESERVED_SLOTS);
	weft_mpw_init(&w);
	encode_error(&w, NULL, WEFT_RPC_UNAVAILABLE, msg);
	(void)send(fd, w.buf, w.len, MSG_DONTWAIT | MSG_NOSIGNAL);
	weft_mpw_free(&w);
	weft_log_limited(&srv->refused_log, WEFT_LOG_WARN, "rpc.refused", "pid=%d reason=\"%s\"", pid, msg);
	shutdown(fd, SHUT_WR);
	evutil_closesocket(fd);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
	struct weft_rpc_server *srv = arg;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		weft_log_limited(&srv->refused_log, WEFT_LOG_WARN, "rpc.refused",
				 "uid=%d pid=%d reason=\"not the daemon's user or root\"", (int)cred.uid, (int)cred.pid);
		evutil_closesocket(fd);
		return;
	}
	bool reserved = srv->nconns - srv->nreserved >= srv->opts.max_clients;
	if (reserved && srv->nreserved >= RESERVED_SLOTS) {
		refuse(srv, fd, (int)cred.pid);
		return;
	}
	struct rpc_conn *c = calloc(1, sizeof(*c));
	if (c == NULL)
		abort();
	c->srv = srv;
	c->id = ++srv->next_id;
	c->reserved = reserved;
	c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(srv->base, on_timer, c);
	if (c->bev == NULL || c->timer == NULL)
		abort();
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_set_max_single_read(c->bev, READ_CHUNK);
	bufferevent_set_max_single_write(c->bev, READ_CHUNK);
	bufferevent_setwatermark(c->bev, EV_READ, 0, READ_CHUNK);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	srv->nreserved += reserved;
	conn_rearm(c, true);
	if (reserved)
		weft_log_limited(&srv->refused_log, WEFT_LOG_WARN, "rpc.reserved_slot",
				 "conn=%u pid=%d max_clients=%u reason=\"rpc.max_clients reached: admin methods only\"",
				 c->id, (int)cred.pid, srv->opts.max_clients);
	weft_debug("rpc.accept", "conn=%u pid=%d clients=%u reserved=%d", c->id, (int)cred.pid, srv->nconns,
		   (int)reserved);
}
static void on_listen_resume(evutil_socket_t fd, short what, void *arg)
{
	struct weft_rpc_server *srv = arg;
	evconnlistener_enable(srv->listener);
}

/* accept() failed (out of descriptors, say): pause instead of spinning. */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
	struct weft_rpc_server *srv = arg;
	weft_log_limited(&srv->refused_log, WEFT_LOG_WARN, "rpc.accept", "err=\"%s\" action=\"pause the listener for 1 s\"",
			 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	evconnlistener_disable(l);
	struct timeval tv = {1, 0};
	evtimer_add(srv->listen_pause, &tv);
}

/* ---- server ---- */

int weft_rpc_server_start(struct weft_rpc_server **out, struct event_base *base, const char *path,
			  const struct weft_rpc_opts *opts, const struct weft_rpc_method *methods,
			  size_t nmethods, void *ctx)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sun.sun_path)) {
		weft_error("rpc.start", "path=%s reason=\"socket path longer than %zu bytes\"", path,
			   sizeof(sun.sun_path) - 1);
		return WEFT_EINVAL;
	}
	strcpy(sun.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return weft_err_from_errno(errno);
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path); /* stale: the data dir lock guarantees no other weftd serves it */
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc != 0 || chmod(path, 0600) != 0 || listen(fd, 128) != 0) {
		int e = errno;
		weft_error("rpc.start", "path=%s err=\"%s\"", path, strerror(e));
		close(fd);
		return weft_err_from_errno(e);
	}
	struct weft_rpc_server *srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		abort();
	srv->base = base;
	srv->path = strdup(path);
	if (srv->path == NULL)
		abort();
	srv->opts = *opts;
	if (srv->opts.max_frame == 0)
		srv->opts.max_frame = 1 << 20;
	if (srv->opts.max_clients == 0)
		srv->opts.max_clients = 64;
	if (srv->opts.partial_timeout_ms == 0)
		srv->opts.partial_timeout_ms = 10000;
	if (srv->opts.max_outbuf == 0)
		srv->opts.max_outbuf = 16 << 20;
	if (srv->opts.subscriber_lag_ms == 0)
		srv->opts.subscriber_lag_ms = 5000;
	if (srv->opts.idle_timeout_ms == 0)
		srv->opts.idle_timeout_ms = 60000;
	weft_log_limit_init(&srv->refused_log, 10);
	weft_log_limit_init(&srv->slow_log, 10);
	weft_log_limit_init(&srv->bad_log, 10);
	weft_log_limit_init(&srv->timeout_log, 10);
	srv->methods = methods;
	srv->nmethods = nmethods;
	srv->ctx = ctx;
	srv->listener = evconnlistener_new(base, on_accept, srv, LEV_OPT_CLOSE_ON_FREE, 0, fd);
	srv->listen_pause = evtimer_new(base, on_listen_resume, srv);
	if (srv->listener == NULL || srv->listen_pause == NULL)
		abort();
	evconnlistener_set_error_cb(srv->listener, on_accept_error);
	weft_info("rpc.listen", "path=%s max_frame=%zu max_clients=%u", path, srv->opts.max_frame,
		  srv->opts.max_clients);
	*out = srv;
	return 0;
}

void weft_rpc_server_stop(struct weft_rpc_server *srv)
{
	if (srv == NULL)
		return;
	while (srv->conns)
		conn_free(srv->conns);
	weft_log_limit_flush(&srv->refused_log);
	weft_log_limit_flush(&srv->slow_log);
	weft_log_limit_flush(&srv->bad_log);
	weft_log_limit_flush(&srv->timeout_log);
	evconnlistener_free(srv->listener);
	event_free(srv->listen_pause);
	unlink(srv->path);
	free(srv->path);
	free(srv);
}

unsigned int weft_rpc_server_clients(const struct weft_rpc_server *srv)
{
	return srv->nconns;
}
