/* rpcutil.h - MessagePack-RPC on a raw Unix socket for the integration
 * tests: encode a request, parse a response, one request per connection,
 * and "does the daemon still answer status". */
#ifndef WEFT_RPCUTIL_H
#define WEFT_RPCUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/mp.h"

/* Appends a request [0, msgid, method, params] (params raw msgpack). */
void tu_rpc_request(struct weft_mpw *w, uint64_t msgid, const char *method, const void *params, size_t plen);

struct tu_rpc_reply {
	bool have_msgid;  /* false when the msgid was nil */
	uint64_t msgid;
	int64_t code;     /* 0 when the reply is a result */
	char message[256];
	const uint8_t *result; /* raw msgpack of the result (points into the input) */
	size_t result_len;
};

/* Parses one response [1, msgid, error, result] from r; 0 or -1. */
int tu_rpc_parse_reply(struct weft_mp_reader *r, struct tu_rpc_reply *out);
/* Sends bytes on a new connection to sock and parses the first reply; 0 or
 * -1 (no reply within 5 s, or not a response). */
int tu_rpc_roundtrip(const char *sock, const void *req, size_t len, struct tu_rpc_reply *out);
/* True when a fresh connection still gets a status answer. */
bool tu_rpc_still_serving(const char *sock);

#endif
