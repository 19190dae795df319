/* rpc.h - the local RPC socket: MessagePack-RPC over a Unix stream socket.
 *
 * Framing follows the MessagePack-RPC spec (as Neovim uses it):
 *   request      [0, msgid, method, params]   params is an array; named
 *                                             parameters travel as one map
 *                                             inside it; [] means none
 *   response     [1, msgid, error, result]    exactly one of error/result
 *                                             is nil; error is {code, message}
 *   notification [2, method, params]          server to client (events)
 *
 * Methods live in one static table of struct weft_rpc_method.  A handler
 * ends in exactly one of weft_rpc_ok(), weft_rpc_fail() or weft_rpc_pending();
 * the opaque return type makes forgetting to answer a compile error.  A
 * pending call is answered later with weft_rpc_finish_ok/_fail; while it is
 * pending the connection reads no further requests, so pipelined requests on
 * one connection are always answered in order.
 *
 * Input discipline: frames are found with the bounded reader (weft_mp_*); a
 * frame over the configured maximum or bytes that can never be msgpack
 * close the connection after an error response; a well-formed frame that is
 * not a valid request gets an error response; notifications and responses
 * from a client are never answered.  net/rpc_server.c says more. */
#ifndef WEFT_RPC_H
#define WEFT_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/mp.h"

struct event_base;
struct weft_rpc_server;
struct weft_rpc_call;
struct weft_rpc_done; /* never defined: only a marker that the call was answered */

/* Error codes in the error map (JSON-RPC 2.0's numbering where it applies). */
enum weft_rpc_code {
	WEFT_RPC_PARSE_ERROR = -32700,
	WEFT_RPC_INVALID_REQUEST = -32600,
	WEFT_RPC_METHOD_NOT_FOUND = -32601,
	WEFT_RPC_INVALID_PARAMS = -32602,
	WEFT_RPC_INTERNAL_ERROR = -32603,
	WEFT_RPC_UNAVAILABLE = -32000, /* the node cannot do it now (stopping, not configured) */
	WEFT_RPC_REJECTED = -32001,    /* the request was valid but refused (limits, state) */
};

typedef const struct weft_rpc_done *(*weft_rpc_handler_fn)(struct weft_rpc_call *call, void *ctx);

/* Method flags. */
#define WEFT_RPC_ADMIN 1u /* callable on the reserved slots past rpc.max_clients */

struct weft_rpc_method {
	const char *name;
	weft_rpc_handler_fn handler;
	const char *params; /* one line: "key=TYPE [opt=TYPE]" or "" */
	const char *help;   /* one line */
	unsigned int flags; /* WEFT_RPC_* */
};

struct weft_rpc_opts {
	size_t max_frame;            /* bytes; 0: 1 MiB */
	unsigned int max_clients;    /* 0: 64 */
	unsigned int partial_timeout_ms; /* a half-sent frame older than this closes the connection; 0: 10 s */
	size_t max_outbuf;           /* stop reading a client whose unread replies exceed this; 0: 16 MiB */
	unsigned int subscriber_lag_ms; /* a subscriber is cut when its unread notifications pass
					 * max(max_outbuf, this long at its recent rate); 0: 5 s */
	unsigned int idle_timeout_ms; /* close a connection idle this long (not a subscriber); 0: 60 s */
};

/* Creates the socket at path (mode 0600; an existing stale socket is
 * replaced) and starts serving on base.  methods is a table of nmethods
 * entries; ctx is passed to every handler.  The server and table must
 * outlive each other. */
int weft_rpc_server_start(struct weft_rpc_server **out, struct event_base *base, const char *path,
			  const struct weft_rpc_opts *opts, const struct weft_rpc_method *methods,
			  size_t nmethods, void *ctx);
/* Closes every connection, unlinks the socket, frees the server (accepts NULL). */
void weft_rpc_server_stop(struct weft_rpc_server *srv);
unsigned int weft_rpc_server_clients(const struct weft_rpc_server *srv);

/* ---- inside a handler ---- */

const char *weft_rpc_method_name(const struct weft_rpc_call *call);

enum weft_rpc_ptype {
	WEFT_RPC_UINT,   /* uint64_t * */
	WEFT_RPC_BOOL,   /* bool * */
	WEFT_RPC_STR,    /* struct weft_rpc_bytes *: a string */
	WEFT_RPC_BYTES,  /* struct weft_rpc_bytes *: a string or a binary */
	WEFT_RPC_ANY,    /* struct weft_rpc_bytes *: the raw msgpack of the value */
};

/* Points into the request; valid until the call is answered. */
struct weft_rpc_bytes {
	const uint8_t *ptr;
	size_t len;
};

struct weft_rpc_param {
	const char *name;
	enum weft_rpc_ptype type;
	bool required;
	void *out;       /* left untouched when an optional parameter is absent */
	bool *present;   /* optional: set to whether the parameter was given */
};

/* Parses params given positionally or as one map of named parameters.
 * Returns NULL when they fit spec, otherwise the answered call (an
 * INVALID_PARAMS error naming the parameter), which the handler returns:
 *   const struct weft_rpc_done *bad = weft_rpc_params(call, spec, n);
 *   if (bad) return bad;                                                  */
const struct weft_rpc_done *weft_rpc_params(struct weft_rpc_call *call,
					    const struct weft_rpc_param *spec, size_t nspec);

/* The request's params array as received (msgpack), for methods that parse
 * their parameters with a parser of their own.  Valid until answered. */
const uint8_t *weft_rpc_params_raw(const struct weft_rpc_call *call, size_t *len);

/* The writer for the result: write exactly one msgpack value (a map) into it,
 * then return weft_rpc_ok(call). */
struct weft_mpw *weft_rpc_result(struct weft_rpc_call *call);
const struct weft_rpc_done *weft_rpc_ok(struct weft_rpc_call *call);
const struct weft_rpc_done *weft_rpc_fail(struct weft_rpc_call *call, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The handler keeps call and answers later with weft_rpc_finish_*. */
const struct weft_rpc_done *weft_rpc_pending(struct weft_rpc_call *call);
void weft_rpc_finish_ok(struct weft_rpc_call *call);
void weft_rpc_finish_fail(struct weft_rpc_call *call, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Asks the server to stop accepting requests once the current reply is
 * written (used by the "stop" method); the callback runs after the flush. */
void weft_rpc_after_reply(struct weft_rpc_call *call, void (*fn)(void *arg), void *arg);

/* Sends a notification [2, method, params] to every connection that
 * subscribed to topic (weft_rpc_subscribe).  params is encoded msgpack
 * (an array).  Returns how many connections it was queued for. */
unsigned int weft_rpc_notify(struct weft_rpc_server *srv, const char *topic, const char *method,
			     const void *params, size_t len);
/* Subscribes the calling connection to topic (e.g. "brb.deliver"). */
int weft_rpc_subscribe(struct weft_rpc_call *call, const char *topic);

#endif
