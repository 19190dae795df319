/* rpc_client.h - a small blocking msgpack-RPC client for weftd's Unix
 * socket (src/lib/rpc_client.c), used by weft-cli, weft-campaign and the
 * integration tests.  One connection is one socket; calls on it are
 * sequential.  Separate connections may be used from separate threads.
 *
 * JSON values are jansson json_t.  Functions that hand out a json_t give the
 * caller a new reference: json_decref() it when done.  Functions return 0 or
 * a negative WEFT_E* code (weft/err.h). */
#ifndef WEFT_RPC_CLIENT_H
#define WEFT_RPC_CLIENT_H

#include <stddef.h>

#include <jansson.h>

/* The largest frame the client accepts from the server. */
#define WEFT_RPC_CLIENT_MAX_FRAME ((size_t)64 << 20)

struct weft_rpc_client; /* one connection to the daemon's RPC socket */

/* Called for each notification [2, method, params] read while waiting for a
 * reply.  method and params are valid only during the call; the callback
 * must not use the connection. */
typedef void (*weft_rpc_client_notify_fn)(const char *method, json_t *params, void *arg);

/* Connects to the Unix stream socket at path.  timeout_ms bounds the connect
 * (<= 0: no limit).  Returns 0 and a connection in *out (free it with
 * weft_rpc_client_close), or a negative code with *out = NULL: WEFT_EINVAL
 * (the path is too long for a socket address), WEFT_ETIMEDOUT, or the code
 * of the failed system call (weft_err_from_errno).  When sys_errno is not
 * NULL it receives the errno of the failure (ENAMETOOLONG for a long path,
 * ETIMEDOUT for a timeout) so that the caller can print strerror(). */
int weft_rpc_client_connect(struct weft_rpc_client **out, const char *path, int timeout_ms, int *sys_errno);

/* Closes the socket and frees the connection (accepts NULL). */
void weft_rpc_client_close(struct weft_rpc_client *c);

/* Sets (or clears, with fn NULL) the notification callback; without one,
 * notifications are skipped. */
void weft_rpc_client_set_notify(struct weft_rpc_client *c, weft_rpc_client_notify_fn fn, void *arg);

/* Sends [0, msgid, method, params] and waits for [1, msgid, error, result],
 * skipping notifications (handed to the callback) and replies to other
 * msgids (late replies to an earlier call that timed out).  params must be a
 * JSON array (NULL means []); it is not consumed.  timeout_ms bounds the
 * whole exchange, send and receive (<= 0: no limit).
 *
 * Returns 0 when the reply arrived: then exactly one of *result and *error is
 * a new reference and the other is NULL.  *error is the server's error value
 * as JSON (normally {"code": N, "message": "..."}); *result is the result
 * (JSON null when the server sent nil for both).  Otherwise returns, with
 * both NULL:
 *   WEFT_EINVAL     method NULL or params not an array; the connection stays
 *                   usable
 *   WEFT_ETOOBIG    params nest too deep for a request; stays usable
 *   WEFT_ETIMEDOUT  no reply in time; the connection stays usable (a late
 *                   reply is skipped by the next call)
 *   WEFT_ECLOSED    the server closed the connection before replying
 *   WEFT_EPROTO     the server sent something that is not a valid frame or
 *                   message, or a frame over WEFT_RPC_CLIENT_MAX_FRAME
 *   other negative  a failed system call (weft_err_from_errno)
 * After ECLOSED, EPROTO or a system call failure the connection is dead:
 * further calls return WEFT_ESTATE.  weft_rpc_client_errmsg() describes the
 * last failure. */
int weft_rpc_client_call(struct weft_rpc_client *c, const char *method, const json_t *params, int timeout_ms,
			 json_t **result, json_t **error);

/* Waits for notifications (handed to the callback) without calling
 * anything, for timeout_ms (<= 0: no limit): WEFT_ETIMEDOUT when the time
 * is up, WEFT_ECLOSED when the server closed the connection or ended the
 * subscription, or another failure code as for weft_rpc_client_call. */
int weft_rpc_client_listen(struct weft_rpc_client *c, int timeout_ms);
/* The same, returning 0 as soon as at least one notification was handed
 * to the callback (the ones already received all are): a server loop
 * answers each batch at once. */
int weft_rpc_client_listen_any(struct weft_rpc_client *c, int timeout_ms);

/* A one-line description of the last failure on c ("" when none); valid
 * until the next call on c. */
const char *weft_rpc_client_errmsg(const struct weft_rpc_client *c);

/* One-shot: connect to socket_path, call method, close.  Same returns as
 * weft_rpc_client_connect() and weft_rpc_client_call(); timeout_ms bounds
 * the connect and the exchange each. */
int weft_rpc_client_call_once(const char *socket_path, const char *method, const json_t *params, int timeout_ms,
			      json_t **result, json_t **error);

#endif
