/* rpcutil.c - raw MessagePack-RPC helpers for the integration tests (see
 * rpcutil.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rpcutil.h"
#include "testutil.h"

void tu_rpc_request(struct weft_mpw *w, uint64_t msgid, const char *method, const void *params, size_t plen)
{
	weft_mpw_array(w, 4);
	weft_mpw_uint(w, 0);
	weft_mpw_uint(w, msgid);
	weft_mpw_str(w, method);
	weft_mpw_raw(w, params, plen);
}

int tu_rpc_parse_reply(struct weft_mp_reader *r, struct tu_rpc_reply *out)
{
	uint32_t n, pairs;
	uint64_t type;
	memset(out, 0, sizeof(*out));
	if (weft_mp_read_array(r, &n) || n != 4 || weft_mp_read_uint(r, &type) || type != 1)
		return -1;
	if (weft_mp_peek_nil(r))
		(void)weft_mp_read_nil(r);
	else if (weft_mp_read_uint(r, &out->msgid))
		return -1;
	else
		out->have_msgid = true;
	if (weft_mp_peek_nil(r)) {
		(void)weft_mp_read_nil(r);
		out->result = r->p;
		if (weft_mp_skip(r))
			return -1;
		out->result_len = (size_t)(r->p - out->result);
		return 0;
	}
	if (weft_mp_read_map(r, &pairs))
		return -1;
	for (uint32_t i = 0; i < pairs; i++) {
		const char *k, *s;
		uint32_t kl, sl;
		if (weft_mp_read_str(r, &k, &kl))
			return -1;
		if (kl == 4 && !memcmp(k, "code", 4)) {
			if (weft_mp_read_int(r, &out->code))
				return -1;
		} else if (kl == 7 && !memcmp(k, "message", 7)) {
			if (weft_mp_read_str(r, &s, &sl))
				return -1;
			snprintf(out->message, sizeof(out->message), "%.*s", (int)sl, s);
		} else if (weft_mp_skip(r)) {
			return -1;
		}
	}
	return weft_mp_skip(r) ? -1 : 0;
}

int tu_rpc_roundtrip(const char *sock, const void *req, size_t len, struct tu_rpc_reply *out)
{
	static uint8_t buf[65536];
	int fd = tu_unix_connect(sock);
	long n = -1;
	if (fd >= 0 && tu_send_all(fd, req, len) == 0)
		n = tu_recv(fd, buf, sizeof(buf), 5000);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, buf, (size_t)n);
	return tu_rpc_parse_reply(&r, out);
}

bool tu_rpc_still_serving(const char *sock)
{
	struct weft_mpw w;
	struct tu_rpc_reply rep;
	weft_mpw_init(&w);
	tu_rpc_request(&w, 99, "status", "\x90", 1);
	int rc = tu_rpc_roundtrip(sock, w.buf, w.len, &rep);
	weft_mpw_free(&w);
	return rc == 0 && rep.msgid == 99 && rep.code == 0;
}
