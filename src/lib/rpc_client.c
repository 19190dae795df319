/* rpc_client.c - a small blocking msgpack-RPC client for weftd's Unix
 * socket (weft/rpc_client.h), used by weft-cli, weft-campaign and the
 * integration tests.
 *
 * A call writes [0, msgid, method, params] and reads frames until
 * [1, msgid, error, result] arrives.  Frame boundaries come from the bounded
 * weft_mp_frame_len() over a growing receive buffer (frames over
 * WEFT_RPC_CLIENT_MAX_FRAME are refused before their bytes arrive); notifications
 * [2, method, params] met on the way go to an optional callback, replies to
 * other msgids are skipped.  The socket is non-blocking: writes loop over
 * partial sends and EINTR, and every wait goes through poll() against one
 * deadline, so a call never blocks longer than its timeout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/json.h"
#include "weft/mp.h"
#include "weft/rpc_client.h"

#define READ_CHUNK ((size_t)64 * 1024)

struct weft_rpc_client {
	int fd;
	uint32_t next_msgid;
	int dead;            /* 0, or the failure that ended the connection */
	bool eof;            /* the server closed its side */
	uint8_t *buf;        /* received bytes; unconsumed ones are [off, len) */
	size_t off, len, cap;
	weft_rpc_client_notify_fn notify;
	void *notify_arg;
	char errmsg[256];
	bool stop_on_notify;          /* weft_rpc_client_listen_any: return after a notification */
	unsigned notified;
};

__attribute__((format(printf, 3, 4))) static int set_err(struct weft_rpc_client *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

/* The connection cannot be used any more after this failure. */
__attribute__((format(printf, 3, 4))) static int kill_conn(struct weft_rpc_client *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
	c->dead = rc;
	return rc;
}

/* weft_err_from_errno() as a failure: never 0 or WEFT_NOTFOUND. */
static int sys_err(int e)
{
	int rc = weft_err_from_errno(e);
	return rc < 0 ? rc : WEFT_EIO;
}

/* ---- time ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* 0 means no deadline. */
static uint64_t deadline_after(int timeout_ms)
{
	return timeout_ms > 0 ? now_ms() + (uint64_t)timeout_ms : 0;
}

/* Milliseconds left for poll(): -1 without a deadline, 0 once it passed. */
static int remaining_ms(uint64_t deadline)
{
	if (deadline == 0)
		return -1;
	uint64_t now = now_ms();
	if (now >= deadline)
		return 0;
	uint64_t left = deadline - now;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Waits until fd is ready for events.  0, WEFT_ETIMEDOUT or a system error.
 * POLLERR/POLLHUP also count as ready: the next read or write reports them. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		int left = remaining_ms(deadline);
		if (left == 0)
			return WEFT_ETIMEDOUT;
		struct pollfd pfd = { .fd = fd, .events = events };
		int n = poll(&pfd, 1, left);
		if (n > 0)
			return 0;
		if (n == 0)
			return WEFT_ETIMEDOUT;
		if (errno != EINTR)
			return sys_err(errno);
	}
}

/* ---- connect / close ---- */

int weft_rpc_client_connect(struct weft_rpc_client **out, const char *path, int timeout_ms, int *sys_errno)
{
	struct sockaddr_un sa;
	struct weft_rpc_client *c;
	int fd, e, flags;

	*out = NULL;
	if (sys_errno)
		*sys_errno = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (!path || strlen(path) >= sizeof(sa.sun_path)) {
		if (sys_errno)
			*sys_errno = ENAMETOOLONG;
		return WEFT_EINVAL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		goto fail;
	}
	/* A Unix-socket connect() blocks only while the listener's backlog is
	 * full; SO_SNDTIMEO bounds that wait (it then fails with EAGAIN). */
	if (timeout_ms > 0) {
		struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
			e = errno;
			goto fail;
		}
	}
	for (;;) {
		if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == EISCONN) /* an interrupted attempt completed */
			break;
		e = errno == EAGAIN ? ETIMEDOUT : errno;
		goto fail;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		e = errno;
		goto fail;
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->fd = fd;
	c->next_msgid = 1;
	*out = c;
	return 0;

fail:
	if (fd >= 0)
		close(fd);
	if (sys_errno)
		*sys_errno = e;
	return e == ETIMEDOUT ? WEFT_ETIMEDOUT : sys_err(e);
}

void weft_rpc_client_close(struct weft_rpc_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c);
}

void weft_rpc_client_set_notify(struct weft_rpc_client *c, weft_rpc_client_notify_fn fn, void *arg)
{
	c->notify = fn;
	c->notify_arg = arg;
}

const char *weft_rpc_client_errmsg(const struct weft_rpc_client *c)
{
	return c->errmsg;
}

/* ---- sending ---- */

/* Writes all of buf.  0, WEFT_ECLOSED (the server is gone), WEFT_ETIMEDOUT,
 * or a system error. */
static int send_all(struct weft_rpc_client *c, const uint8_t *buf, size_t len, uint64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(c->fd, buf + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = wait_fd(c->fd, POLLOUT, deadline);
			if (rc == WEFT_ETIMEDOUT)
				return off == 0 ? set_err(c, rc, "timed out sending the request")
						: kill_conn(c, rc, "timed out after sending part of the request");
			if (rc < 0)
				return kill_conn(c, rc, "waiting to send: %s", weft_strerror(rc));
			continue;
		}
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			return WEFT_ECLOSED;
		int e = n < 0 ? errno : EIO;
		return kill_conn(c, sys_err(e), "sending the request: %s", strerror(e));
	}
	return 0;
}

/* ---- receiving ---- */

/* Makes room for at least READ_CHUNK more bytes after the unconsumed ones. */
static void make_room(struct weft_rpc_client *c)
{
	if (c->off > 0 && (c->off == c->len || c->cap - c->len < READ_CHUNK)) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->cap - c->len >= READ_CHUNK)
		return;
	size_t ncap = c->cap ? c->cap * 2 : 2 * READ_CHUNK;
	while (ncap - c->len < READ_CHUNK)
		ncap *= 2;
	uint8_t *nb = realloc(c->buf, ncap);
	if (!nb)
		abort();
	c->buf = nb;
	c->cap = ncap;
}

/* Reads what is available, waiting until something arrives.  0 (some bytes
 * or EOF, see c->eof), WEFT_ETIMEDOUT, or a system error. */
static int fill(struct weft_rpc_client *c, uint64_t deadline)
{
	make_room(c);
	for (;;) {
		ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n > 0) {
			c->len += (size_t)n;
			return 0;
		}
		if (n == 0) {
			c->eof = true;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == ECONNRESET) {
			c->eof = true;
			return 0;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = wait_fd(c->fd, POLLIN, deadline);
			if (rc < 0)
				return rc;
			continue;
		}
		return sys_err(errno);
	}
}

/* Reads one value with the bounded reader and converts it. */
static int read_json(struct weft_rpc_client *c, struct weft_mp_reader *r, const char *what, json_t **out)
{
	int rc = weft_mp_to_json(r, out);
	if (rc < 0)
		return kill_conn(c, WEFT_EPROTO, "the %s in the reply cannot be read (%s)", what,
				 weft_strerror(rc));
	return 0;
}

/* Handles one complete frame.  Returns 1 when it was the reply to msgid
 * (*result or *error set), 0 when it was skipped, or WEFT_EPROTO. */
static int handle_frame(struct weft_rpc_client *c, const uint8_t *frame, size_t len, uint32_t msgid,
			json_t **result, json_t **error)
{
	struct weft_mp_reader r;
	struct weft_mp_obj o;
	uint32_t n;

	weft_mp_reader_init(&r, frame, len);
	if (weft_mp_read_array(&r, &n) < 0 || n == 0)
		return kill_conn(c, WEFT_EPROTO, "a message is not an array [type, ...]");
	if (weft_mp_read(&r, &o) < 0 || o.type != WEFT_MP_UINT)
		return kill_conn(c, WEFT_EPROTO, "a message type is not an unsigned integer");

	switch (o.v.u) {
	case 0: /* a request to the client: it serves nothing */
		return 0;
	case 1: {
		if (n != 4)
			return kill_conn(c, WEFT_EPROTO, "a response has %u elements, not 4", (unsigned)n);
		/* A nil msgid: an error about the connection itself (weftd's
		 * "rpc.max_clients reached"), the answer to whatever we asked. */
		if (weft_mp_read(&r, &o) < 0 ||
		    (o.type != WEFT_MP_UINT && o.type != WEFT_MP_INT && o.type != WEFT_MP_NIL))
			return kill_conn(c, WEFT_EPROTO, "a response msgid is not an integer");
		if (o.type != WEFT_MP_NIL && (o.type != WEFT_MP_UINT || o.v.u != msgid))
			return 0; /* a late reply to an earlier call */
		json_t *err = NULL, *res = NULL;
		if (read_json(c, &r, "error", &err) < 0)
			return WEFT_EPROTO;
		if (read_json(c, &r, "result", &res) < 0) {
			json_decref(err);
			return WEFT_EPROTO;
		}
		if (weft_mp_remaining(&r) != 0) {
			json_decref(err);
			json_decref(res);
			return kill_conn(c, WEFT_EPROTO, "trailing bytes after the response");
		}
		if (json_is_null(err)) {
			json_decref(err);
			*result = res;
		} else {
			json_decref(res);
			*error = err;
		}
		return 1;
	}
	case 2: {
		const char *m;
		uint32_t mlen;
		if (n != 3)
			return kill_conn(c, WEFT_EPROTO, "a notification has %u elements, not 3", (unsigned)n);
		if (weft_mp_read_str(&r, &m, &mlen) < 0)
			return kill_conn(c, WEFT_EPROTO, "a notification method is not a string");
		if (!c->notify)
			return 0;
		json_t *params;
		if (read_json(c, &r, "notification params", &params) < 0)
			return WEFT_EPROTO;
		char *method = strndup(m, mlen);
		if (!method)
			abort();
		c->notify(method, params, c->notify_arg);
		c->notified++;
		free(method);
		json_decref(params);
		return 0;
	}
	default:
		return kill_conn(c, WEFT_EPROTO, "unknown message type %llu", (unsigned long long)o.v.u);
	}
}

/* Reads frames until the reply to msgid.  0, or a failure code. */
static int wait_reply(struct weft_rpc_client *c, uint32_t msgid, uint64_t deadline, json_t **result,
		      json_t **error)
{
	for (;;) {
		while (c->off < c->len) {
			size_t flen;
			int rc = weft_mp_frame_len(c->buf + c->off, c->len - c->off, WEFT_RPC_CLIENT_MAX_FRAME, &flen);
			if (rc == WEFT_EAGAIN)
				break;
			if (rc == WEFT_ETOOBIG)
				return kill_conn(c, WEFT_EPROTO, "a frame is larger than %zu MiB",
						 WEFT_RPC_CLIENT_MAX_FRAME >> 20);
			if (rc < 0)
				return kill_conn(c, WEFT_EPROTO, "the server sent bytes that are not msgpack (%s)",
						 weft_strerror(rc));
			rc = handle_frame(c, c->buf + c->off, flen, msgid, result, error);
			c->off += flen;
			if (rc < 0)
				return rc;
			if (rc == 1)
				return 0;
		}
		if (c->stop_on_notify && c->notified)
			return WEFT_EAGAIN; /* listen_any: notifications handed out */
		if (c->eof) {
			if (c->off < c->len)
				return kill_conn(c, WEFT_ECLOSED, "the server closed the connection in the middle of a frame");
			return kill_conn(c, WEFT_ECLOSED, "the server closed the connection before replying");
		}
		if (remaining_ms(deadline) == 0)
			return set_err(c, WEFT_ETIMEDOUT, "no reply in time");
		int rc = fill(c, deadline);
		if (rc == WEFT_ETIMEDOUT)
			return set_err(c, rc, "no reply in time");
		if (rc < 0)
			return kill_conn(c, rc, "reading the reply: %s", weft_strerror(rc));
	}
}

/* ---- calls ---- */

int weft_rpc_client_call(struct weft_rpc_client *c, const char *method, const json_t *params,
		       int timeout_ms, json_t **result, json_t **error)
{
	struct weft_mpw w;
	uint64_t deadline = deadline_after(timeout_ms);
	int rc;

	*result = NULL;
	*error = NULL;
	c->errmsg[0] = '\0';
	if (c->dead)
		return set_err(c, WEFT_ESTATE, "the connection failed earlier (%s)", weft_strerror(c->dead));
	if (!method)
		return set_err(c, WEFT_EINVAL, "no method");
	if (params && !json_is_array(params))
		return set_err(c, WEFT_EINVAL, "params must be a JSON array");

	uint32_t msgid = c->next_msgid++;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, msgid);
	weft_mpw_str(&w, method);
	if (params)
		rc = weft_json_to_mp(&w, params, 1);
	else {
		weft_mpw_array(&w, 0);
		rc = 0;
	}
	if (rc < 0) {
		weft_mpw_free(&w);
		return set_err(c, rc, "params are nested too deeply (a request allows %d levels) or too large",
			       WEFT_MP_MAX_DEPTH - 1);
	}

	rc = send_all(c, w.buf, w.len, deadline);
	weft_mpw_free(&w);
	if (rc == WEFT_ECLOSED) {
		/* The server may have answered (an error) before closing:
		 * read what it left. */
		shutdown(c->fd, SHUT_WR);
	} else if (rc < 0) {
		return rc;
	}
	return wait_reply(c, msgid, deadline, result, error);
}

int weft_rpc_client_listen(struct weft_rpc_client *c, int timeout_ms)
{
	json_t *result = NULL, *error = NULL;
	c->errmsg[0] = '\0';
	if (c->dead)
		return set_err(c, WEFT_ESTATE, "the connection failed earlier (%s)", weft_strerror(c->dead));
	/* Message id 0 is never sent: only notifications, or an error about
	 * the connection itself (a nil msgid), can end the wait. */
	int rc = wait_reply(c, 0, deadline_after(timeout_ms), &result, &error);
	if (rc == 0) {
		char *e = error ? json_dumps(error, JSON_COMPACT) : NULL;
		set_err(c, WEFT_ECLOSED, "the server ended the subscription: %s", e ? e : "no reason");
		free(e);
		rc = WEFT_ECLOSED;
	}
	json_decref(result);
	json_decref(error);
	return rc;
}

int weft_rpc_client_listen_any(struct weft_rpc_client *c, int timeout_ms)
{
	c->stop_on_notify = true;
	c->notified = 0;
	int rc = weft_rpc_client_listen(c, timeout_ms);
	c->stop_on_notify = false;
	return rc == WEFT_EAGAIN ? 0 : rc;
}

int weft_rpc_client_call_once(const char *socket_path, const char *method, const json_t *params, int timeout_ms,
		  json_t **result, json_t **error)
{
	struct weft_rpc_client *c;
	int rc;

	*result = NULL;
	*error = NULL;
	rc = weft_rpc_client_connect(&c, socket_path, timeout_ms, NULL);
	if (rc < 0)
		return rc;
	rc = weft_rpc_client_call(c, method, params, timeout_ms, result, error);
	weft_rpc_client_close(c);
	return rc;
}
