/* rpc_server.c - the MessagePack-RPC server on weftd's local Unix socket.
 *
 * One libevent bufferevent per client.  Input is split into frames with the
 * bounded msgpack framer (never a declared count), each frame is decoded as a
 * request and dispatched through the method table given at start.  At most
 * one call per connection is in progress: while a handler is pending the
 * connection reads nothing more, so pipelined requests are answered in order.
 * Malformed framing closes the connection with a logged reason; a frame that
 * is msgpack but not a valid request gets an error response.  A client that
 * does not read its replies stops being read (backpressure); a subscriber
 * that does not read its notifications is disconnected.  Peers are checked
 * with SO_PEERCRED: only the daemon's own uid and root may connect. */
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
#include <unistd.h>

#include "weft/err.h"
#include "weft/log.h"
#include "weft/rpc.h"

#define MAX_METHOD_NAME 100
#define MAX_TOPICS 8

struct rpc_conn {
	struct weft_rpc_server *srv;
	struct bufferevent *bev;
	struct event *partial_timer;
	struct rpc_conn *prev, *next;
	struct weft_rpc_call *pending;
	char *topics[MAX_TOPICS];
	unsigned int id;
	bool partial_armed;
	bool read_paused;       /* output over max_outbuf */
	bool closing;           /* close once the output is flushed */
	void (*after_fn)(void *);
	void *after_arg;
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
	unsigned int nconns;
	unsigned int next_id;
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
static void conn_free(struct rpc_conn *c);
static void conn_close_after_flush(struct rpc_conn *c);

/* ---- replies ---- */

static void write_error_map(struct weft_mpw *w, int code, const char *msg)
{
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "code");
	weft_mpw_int(w, code);
	weft_mpw_str(w, "message");
	weft_mpw_str(w, msg);
}

static void conn_send(struct rpc_conn *c, const struct weft_mpw *w)
{
	bufferevent_write(c->bev, w->buf, w->len);
}

/* Sends [1, msgid, error, nil] outside any call (msgid nil when unknown). */
static void conn_send_error(struct rpc_conn *c, const uint64_t *msgid, int code, const char *msg)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 1);
	if (msgid)
		weft_mpw_uint(&w, *msgid);
	else
		weft_mpw_nil(&w);
	write_error_map(&w, code, msg);
	weft_mpw_nil(&w);
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
		weft_mpw_array(&w, 4);
		weft_mpw_uint(&w, 1);
		weft_mpw_uint(&w, call->msgid);
		if (errmsg) {
			write_error_map(&w, code, errmsg);
			weft_mpw_nil(&w);
		} else {
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
	if (call->conn) {
		call->conn->after_fn = fn;
		call->conn->after_arg = arg;
	} else {
		fn(arg);
	}
}

int weft_rpc_subscribe(struct weft_rpc_call *call, const char *topic)
{
	struct rpc_conn *c = call->conn;
	if (c == NULL)
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

unsigned int weft_rpc_notify(struct weft_rpc_server *srv, const char *topic, const char *method,
			     const void *params, size_t len)
{
	unsigned int sent = 0;
	struct weft_mpw head;
	weft_mpw_init(&head);
	weft_mpw_array(&head, 3);
	weft_mpw_uint(&head, 2);
	weft_mpw_str(&head, method);
	struct rpc_conn *next;
	for (struct rpc_conn *c = srv->conns; c; c = next) {
		next = c->next;
		bool subscribed = false;
		for (int i = 0; i < MAX_TOPICS && !subscribed; i++)
			subscribed = c->topics[i] && strcmp(c->topics[i], topic) == 0;
		if (!subscribed)
			continue;
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) > srv->opts.max_outbuf) {
			weft_warn("rpc.slow_subscriber", "conn=%u topic=%s action=disconnect", c->id, topic);
			conn_free(c);
			continue;
		}
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
			if (j == nspec)
				return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "unknown parameter '%.*s'",
						     (int)(klen > 64 ? 64 : klen), key);
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

static const struct weft_rpc_method *find_method(struct weft_rpc_server *srv, const char *name)
{
	for (size_t i = 0; i < srv->nmethods; i++)
		if (strcmp(srv->methods[i].name, name) == 0)
			return &srv->methods[i];
	return NULL;
}

/* Decodes one complete frame (owned by us now) and runs its handler. */
static void conn_handle_frame(struct rpc_conn *c, uint8_t *frame, size_t len)
{
	struct weft_mp_reader r;
	uint32_t n;
	uint64_t type, msgid = 0;
	bool have_id = false;
	const char *method;
	uint32_t mlen;
	const char *why = NULL;

	weft_mp_reader_init(&r, frame, len);
	if (weft_mp_read_array(&r, &n) != 0 || weft_mp_read_uint(&r, &type) != 0) {
		why = "a message must be an array starting with its type (0 request, 2 notification)";
	} else if (type == 0 && n == 4) {
		if (weft_mp_read_uint(&r, &msgid) != 0)
			why = "msgid must be a non-negative integer";
		else
			have_id = true;
	} else if (!(type == 2 && n == 3)) {
		why = "expected [0, msgid, method, params] or [2, method, params]";
	}
	if (!why && weft_mp_read_str(&r, &method, &mlen) != 0)
		why = "method must be a string";
	if (!why && mlen > MAX_METHOD_NAME)
		why = "method name longer than 100 bytes";
	const uint8_t *params = r.p;
	if (!why && (weft_mp_peek_type(&r) != WEFT_MP_ARRAY || weft_mp_skip(&r) != 0))
		why = "params must be an array";
	if (why) {
		weft_info("rpc.bad_request", "conn=%u reason=\"%s\"", c->id, why);
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
	memcpy(call->method, method, mlen);
	call->method[mlen] = '\0';
	weft_mpw_init(&call->result);

	const struct weft_rpc_method *m = find_method(c->srv, call->method);
	if (m == NULL) {
		weft_rpc_fail(call, WEFT_RPC_METHOD_NOT_FOUND, "unknown method '%s' ('help' lists the methods)",
			      call->method);
		return;
	}
	weft_debug("rpc.call", "conn=%u method=%s", c->id, call->method);
	/* The handler answers now (call freed) or later (call pending). */
	(void)m->handler(call, c->srv->ctx);
}

/* Tries to find the msgid in the first bytes of a frame too large to read
 * whole, so the error can be answered rather than only closed. */
static bool peek_msgid(const uint8_t *p, size_t len, uint64_t *msgid)
{
	struct weft_mp_reader r;
	uint32_t n;
	uint64_t type;
	weft_mp_reader_init(&r, p, len);
	/* The array header's count may exceed what is buffered, so read it raw. */
	if (len < 1 || !((p[0] & 0xf0) == 0x90))
		return false;
	n = p[0] & 0x0f;
	r.p++;
	return n == 4 && weft_mp_read_uint(&r, &type) == 0 && type == 0 && weft_mp_read_uint(&r, msgid) == 0;
}

static void arm_partial_timer(struct rpc_conn *c, bool on)
{
	if (on && !c->partial_armed) {
		struct timeval tv = {c->srv->opts.partial_timeout_ms / 1000,
				     (c->srv->opts.partial_timeout_ms % 1000) * 1000};
		evtimer_add(c->partial_timer, &tv);
	} else if (!on && c->partial_armed) {
		evtimer_del(c->partial_timer);
	}
	c->partial_armed = on;
}

static void conn_process(struct rpc_conn *c)
{
	struct weft_rpc_server *srv = c->srv;
	struct evbuffer *in = bufferevent_get_input(c->bev);
	bool completed = false;
	while (c->pending == NULL && !c->closing) {
		size_t avail = evbuffer_get_length(in);
		if (avail == 0)
			break;
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) > srv->opts.max_outbuf) {
			/* The client is not reading its replies: stop reading its requests. */
			c->read_paused = true;
			bufferevent_disable(c->bev, EV_READ);
			break;
		}
		size_t look = avail < srv->opts.max_frame + 1 ? avail : srv->opts.max_frame + 1;
		const uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)look);
		size_t flen;
		int rc = weft_mp_frame_len(data, look, srv->opts.max_frame, &flen);
		if (rc == WEFT_EAGAIN)
			break;
		if (rc != 0) {
			uint64_t msgid;
			bool have = peek_msgid(data, look, &msgid);
			const char *why = rc == WEFT_ETOOBIG ? "request exceeds rpc.max_frame"
							     : "bytes are not MessagePack";
			weft_warn("rpc.bad_frame", "conn=%u reason=\"%s\" max_frame=%zu action=close", c->id, why,
				  srv->opts.max_frame);
			if (rc == WEFT_ETOOBIG) {
				char msg[128];
				snprintf(msg, sizeof(msg), "request exceeds rpc.max_frame (%zu bytes)",
					 srv->opts.max_frame);
				conn_send_error(c, have ? &msgid : NULL, WEFT_RPC_INVALID_REQUEST, msg);
			}
			evbuffer_drain(in, avail);
			conn_close_after_flush(c);
			return;
		}
		uint8_t *frame = malloc(flen);
		if (frame == NULL)
			abort();
		memcpy(frame, data, flen);
		evbuffer_drain(in, flen);
		conn_handle_frame(c, frame, flen);
		completed = true;
	}
	/* The timeout is for one request that stays incomplete: a request that
	 * completed restarts it (a pipelining client always has a partial
	 * frame in flight). */
	if (completed)
		arm_partial_timer(c, false);
	arm_partial_timer(c, c->pending == NULL && !c->closing && evbuffer_get_length(in) > 0);
}

static void conn_close_after_flush(struct rpc_conn *c)
{
	c->closing = true;
	arm_partial_timer(c, false);
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_free(c);
	/* else write_cb frees it once the output has drained */
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
		fn(c->after_arg);
	}
	if (c->closing) {
		conn_free(c);
		return;
	}
	if (c->read_paused) {
		c->read_paused = false;
		bufferevent_enable(c->bev, EV_READ);
		conn_process(c);
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct rpc_conn *c = arg;
	if (what & BEV_EVENT_ERROR)
		weft_info("rpc.conn_error", "conn=%u err=\"%s\"", c->id, strerror(EVUTIL_SOCKET_ERROR()));
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (c->after_fn) {
			c->after_fn(c->after_arg);
			c->after_fn = NULL;
		}
		conn_free(c);
	}
}

static void on_partial_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct rpc_conn *c = arg;
	c->partial_armed = false;
	weft_warn("rpc.partial_timeout", "conn=%u buffered=%zu timeout_ms=%u action=close", c->id,
		  evbuffer_get_length(bufferevent_get_input(c->bev)), c->srv->opts.partial_timeout_ms);
	conn_free(c);
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
	event_free(c->partial_timer);
	bufferevent_free(c->bev);
	for (int i = 0; i < MAX_TOPICS; i++)
		free(c->topics[i]);
	weft_debug("rpc.close", "conn=%u clients=%u", c->id, srv->nconns);
	free(c);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
	struct weft_rpc_server *srv = arg;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		weft_warn("rpc.refused", "uid=%d pid=%d reason=\"not the daemon's user or root\"", (int)cred.uid,
			  (int)cred.pid);
		evutil_closesocket(fd);
		return;
	}
	if (srv->nconns >= srv->opts.max_clients) {
		weft_warn("rpc.refused", "pid=%d reason=\"rpc.max_clients (%u) reached\"", (int)cred.pid,
			  srv->opts.max_clients);
		evutil_closesocket(fd);
		return;
	}
	struct rpc_conn *c = calloc(1, sizeof(*c));
	if (c == NULL)
		abort();
	c->srv = srv;
	c->id = ++srv->next_id;
	c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->partial_timer = evtimer_new(srv->base, on_partial_timeout, c);
	if (c->bev == NULL || c->partial_timer == NULL)
		abort();
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	weft_debug("rpc.accept", "conn=%u pid=%d clients=%u", c->id, (int)cred.pid, srv->nconns);
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
	weft_warn("rpc.accept", "err=\"%s\" action=\"pause the listener for 1 s\"",
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
