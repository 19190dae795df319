/* rpc_notify.c - unit tests of how the RPC server (net/rpc_server.c)
 * bounds what a subscriber leaves unread: a subscriber with no notification
 * history is cut once max_outbuf waits unread; one that kept up with a
 * steady flow may fall subscriber_lag_ms of that flow behind before it is
 * cut, and is cut once it does.  A real server on a Unix socket and a
 * libevent loop; the client is a plain socket in the same process. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/rpcutil.h"
#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/mp.h"
#include "weft/rpc.h"

#define MAX_OUTBUF (64 << 10)
#define NOTE_BYTES (16 << 10)

static const struct weft_rpc_done *sub(struct weft_rpc_call *call, void *ctx)
{
	weft_rpc_subscribe(call, "t");
	weft_mpw_nil(weft_rpc_result(call));
	return weft_rpc_ok(call);
}

static const struct weft_rpc_method methods[] = {{"sub", sub, "", "subscribe to t", 0}};

static struct event_base *base;
static struct weft_rpc_server *srv;
static uint8_t note[NOTE_BYTES + 16];
static size_t note_len;

/* Runs the loop for ms milliseconds. */
static void run_for(int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

/* Reads whatever the socket holds (non-blocking): bytes read. */
static size_t drain(int fd)
{
	uint8_t buf[65536];
	size_t total = 0;
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		total += (size_t)n;
	return total;
}

static int subscriber(const char *path)
{
	int fd = tu_unix_connect(path);
	struct weft_mpw w;
	weft_mpw_init(&w);
	tu_rpc_request(&w, 1, "sub", "\x90", 1);
	tu_send_all(fd, w.buf, w.len);
	weft_mpw_free(&w);
	run_for(50);
	drain(fd);
	return fd;
}

/* Notifies every 10 ms for at most ms, the client reading when `read`:
 * the bytes notified while the subscriber stayed connected. */
static size_t flow(int fd, int ms, bool read, bool *cut)
{
	size_t sent = 0;
	*cut = false;
	for (int t = 0; t < ms && !*cut; t += 10) {
		if (weft_rpc_notify(srv, "t", "n", note, note_len) == 0)
			*cut = true;
		else
			sent += note_len;
		run_for(10);
		if (read)
			drain(fd);
	}
	return sent;
}

int main(void)
{
	char dir[] = "/tmp/weft-rpcnote-XXXXXX";
	if (mkdtemp(dir) == NULL)
		return 1;
	char path[128];
	snprintf(path, sizeof(path), "%s/rpc.sock", dir);
	struct weft_mpw p;
	weft_mpw_init(&p);
	weft_mpw_array(&p, 1);
	static uint8_t blob[NOTE_BYTES];
	weft_mpw_bin(&p, blob, sizeof(blob));
	memcpy(note, p.buf, p.len);
	note_len = p.len;
	weft_mpw_free(&p);

	base = event_base_new();
	struct weft_rpc_opts opts = {.max_outbuf = MAX_OUTBUF, .subscriber_lag_ms = 1000};
	ok(weft_rpc_server_start(&srv, base, path, &opts, methods, 1, NULL) == 0, "server started");

	/* A subscriber that never reads, with no history: cut past max_outbuf
	 * (plus what the socket itself buffers). */
	bool cut;
	int fd = subscriber(path);
	size_t sent = flow(fd, 3000, false, &cut);
	ok(cut, "a subscriber that never reads is cut (after %zu bytes)", sent);
	close(fd);

	/* One that keeps up with 1.6 MB/s for 1.5 s, then stops reading: it may
	 * fall a second of that behind, far more than max_outbuf. */
	fd = subscriber(path);
	flow(fd, 1500, true, &cut);
	ok(!cut, "a subscriber keeping up with 1.6 MB/s is not cut");
	size_t behind = flow(fd, 4000, false, &cut);
	ok(cut, "once it stops reading it is cut");
	ok(behind > 8 * (size_t)MAX_OUTBUF && behind > sent + 8 * (size_t)MAX_OUTBUF,
	   "but only after falling about a second behind: %zu bytes, where the fresh one had %zu", behind, sent);
	ok(behind < 3 * 1700000, "and within a few seconds of the flow (%zu bytes)", behind);
	close(fd);

	weft_rpc_server_stop(srv);
	event_base_free(base);
	unlink(path);
	rmdir(dir);
	return done_testing();
}
