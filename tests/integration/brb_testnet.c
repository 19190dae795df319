/* brb_testnet.c - each broadcast protocol (bracha, echo, coded, amortized)
 * on a real committee of 4 weftd on loopback: brb.broadcast at two nodes,
 * every node delivers both with the same delivery hash, a subscribed RPC
 * connection receives the proto.deliver notifications, the nodes' protocol
 * traces (weftd --trace) say what happened and fit together, and a node
 * that runs a non-broadcast protocol refuses brb.broadcast. */
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/rpc_client.h"

#define N 4

static char *sock_of(const char *dir, int i)
{
	char *s;
	if (asprintf(&s, "%s/node%d/rpc.sock", dir, i) < 0)
		abort();
	return s;
}

static json_t *call(const char *dir, int i, const char *method, json_t *params)
{
	char *sock = sock_of(dir, i);
	json_t *res = NULL, *err = NULL;
	weft_rpc_client_call_once(sock, method, params, 5000, &res, &err);
	if (err) {
		diag("node%d %s: %s", i, method, json_string_value(json_object_get(err, "message")));
		json_decref(err);
	}
	free(sock);
	return res;
}

static json_t *data_param(const char *data)
{
	return json_pack("[{s:s}]", "data", data);
}

static int notified;
static char notified_data[128]; /* "0x" + hex: binary data prints as hex */

static void on_notify(const char *method, json_t *params, void *arg)
{
	if (strcmp(method, "proto.deliver") != 0)
		return;
	json_t *d = json_object_get(json_array_get(params, 0), "data");
	notified++;
	snprintf(notified_data, sizeof(notified_data), "%s", json_string_value(d) ? json_string_value(d) : "");
}

/* One message seen in the traces: from -> to with these bytes. */
struct traced_msg {
	unsigned from, to;
	char *data;
	bool received;
};

/* Checks the four nodes' traces of a run: well-formed lines, each node's
 * own, times that never go back, a start step first, message bytes that
 * match their sizes, every receipt a message its sender traced sending,
 * and a delivery at every node of each payload with its digest. */
static void check_traces(const char *protocol, const char *dir, const char *const payloads[2])
{
	struct traced_msg *sends = NULL;
	size_t nsends = 0, cap = 0, recvs = 0, unmatched = 0, bad = 0;
	int delivered[2] = {0, 0};
	char want[2][17];
	for (int k = 0; k < 2; k++) {
		uint8_t d[WEFT_HASH_LEN];
		weft_hash(d, payloads[k], strlen(payloads[k]));
		weft_hex_encode(want[k], d, 8);
	}
	char **recv_data = NULL;
	unsigned *recv_from = NULL, *recv_to = NULL;
	size_t rcap = 0;
	for (int i = 0; i < N; i++) {
		char *path;
		if (asprintf(&path, "%s/trace%d.ndjson", dir, i) < 0)
			abort();
		char *text = tu_read_file(path);
		free(path);
		if (text == NULL) {
			bad++;
			diag("%s: node %d wrote no trace", protocol, i);
			continue;
		}
		long long last = -1;
		int line_no = 0;
		char *save = NULL;
		for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			line_no++;
			json_t *ev = json_loads(line, 0, NULL);
			const char *kind = json_string_value(json_object_get(ev, "ev"));
			json_int_t t = json_integer_value(json_object_get(ev, "t"));
			json_t *who = json_object_get(ev, strcmp(kind ? kind : "", "send") == 0 ? "from" : "node");
			const char *data = json_string_value(json_object_get(ev, "data"));
			json_int_t bytes = json_integer_value(json_object_get(ev, "bytes"));
			bool fine = ev && kind && t >= last && json_integer_value(who) == i &&
				    (line_no > 1 || strcmp(kind, "start") == 0);
			if (fine && (strcmp(kind, "send") == 0 || strcmp(kind, "recv") == 0))
				fine = data && (json_int_t)strlen(data) == 2 * bytes;
			if (!fine) {
				if (bad++ < 3)
					diag("%s: node %d trace line %d: %s", protocol, i, line_no, line);
				json_decref(ev);
				continue;
			}
			last = t;
			if (strcmp(kind, "send") == 0) {
				if (nsends == cap) {
					cap = cap ? 2 * cap : 64;
					sends = realloc(sends, cap * sizeof(*sends));
					if (sends == NULL)
						abort();
				}
				sends[nsends++] = (struct traced_msg){(unsigned)i,
								      (unsigned)json_integer_value(json_object_get(ev, "to")),
								      strdup(data), false};
			} else if (strcmp(kind, "recv") == 0) {
				if (recvs == rcap) {
					rcap = rcap ? 2 * rcap : 64;
					recv_data = realloc(recv_data, rcap * sizeof(*recv_data));
					recv_from = realloc(recv_from, rcap * sizeof(*recv_from));
					recv_to = realloc(recv_to, rcap * sizeof(*recv_to));
					if (!recv_data || !recv_from || !recv_to)
						abort();
				}
				recv_data[recvs] = strdup(data);
				recv_from[recvs] = (unsigned)json_integer_value(json_object_get(ev, "from"));
				recv_to[recvs++] = (unsigned)i;
			} else if (strcmp(kind, "deliver") == 0) {
				const char *dg = json_string_value(json_object_get(ev, "digest"));
				for (int k = 0; k < 2; k++)
					delivered[k] += dg && strcmp(dg, want[k]) == 0;
			}
			json_decref(ev);
		}
		free(text);
	}
	for (size_t r = 0; r < recvs; r++) {
		bool found = false;
		for (size_t s2 = 0; s2 < nsends && !found; s2++) {
			struct traced_msg *m = &sends[s2];
			if (!m->received && m->from == recv_from[r] && m->to == recv_to[r] &&
			    strcmp(m->data, recv_data[r]) == 0)
				m->received = found = true;
		}
		unmatched += !found;
		free(recv_data[r]);
	}
	for (size_t s2 = 0; s2 < nsends; s2++)
		free(sends[s2].data);
	free(sends), free(recv_data), free(recv_from), free(recv_to);
	is_int((int)bad, 0, "%s: every trace line is well formed, its node's own, in time order", protocol);
	ok(recvs > 0 && unmatched == 0, "%s: each of the %zu receipts traced is a message its sender traced (%zu not)",
	   protocol, recvs, unmatched);
	ok(delivered[0] == N && delivered[1] == N, "%s: every trace shows both deliveries with their digests (%d, %d)",
	   protocol, delivered[0], delivered[1]);
}

static void run_protocol(const char *protocol, int base_port)
{
	char *dir = tu_tmpdir("brbnet"), *genesis_out, *bin = tu_bin("weft-cli"), port[16];
	if (asprintf(&genesis_out, "%s", dir) < 0)
		abort();
	snprintf(port, sizeof(port), "%d", base_port);
	char *argv[] = {bin, "genesis", "--nodes", "4", "--out", genesis_out, "--base-port", port, "--protocol",
			(char *)protocol, "--force", NULL};
	struct tu_run r;
	tu_run(&r, argv, 20000, -1);
	if (!is_int(r.status, 0, "%s: genesis for 4 nodes", protocol))
		diag("%s", r.err);
	tu_run_free(&r);
	pid_t pids[N];
	int started = 0;
	for (int i = 0; i < N; i++) {
		char *d;
		if (asprintf(&d, "%s/node%d", dir, i) < 0)
			abort();
		char *trace;
		if (asprintf(&trace, "%s/trace%d.ndjson", dir, i) < 0)
			abort();
		const char *extra[] = {"--trace", trace, NULL};
		pids[i] = tu_weftd_start(d, extra);
		started += pids[i] > 0;
		free(d), free(trace);
	}
	is_int(started, N, "%s: 4 daemons started", protocol);

	/* Wait for the committee to connect. */
	int connected = 0;
	for (int tries = 0; tries < 200 && connected < N; tries++) {
		connected = 0;
		for (int i = 0; i < N; i++) {
			json_t *st = call(dir, i, "status", NULL);
			connected += json_integer_value(json_object_get(json_object_get(st, "peers"), "connected")) == N - 1;
			json_decref(st);
		}
		if (connected < N)
			usleep(50000);
	}
	is_int(connected, N, "%s: every node connected to its 3 peers", protocol);

	/* A subscriber on node 3. */
	struct weft_rpc_client *sub = NULL;
	char *sock3 = sock_of(dir, 3);
	int e = 0;
	weft_rpc_client_connect(&sub, sock3, 5000, &e);
	weft_rpc_client_set_notify(sub, on_notify, NULL);
	json_t *res = NULL, *err = NULL;
	notified = 0;
	ok(sub && weft_rpc_client_call(sub, "brb.subscribe", NULL, 5000, &res, &err) == 0 && res,
	   "%s: brb.subscribe on node 3", protocol);
	json_decref(res);
	json_decref(err);

	char msg0[32], msg2[32], hex0[70] = "0x", hex2[70] = "0x";
	snprintf(msg0, sizeof(msg0), "from-node0-%s", protocol);
	snprintf(msg2, sizeof(msg2), "from-node2-%s", protocol);
	weft_hex_encode(hex0 + 2, (const uint8_t *)msg0, strlen(msg0));
	weft_hex_encode(hex2 + 2, (const uint8_t *)msg2, strlen(msg2));
	json_t *p0 = data_param(msg0), *p2 = data_param(msg2);
	json_t *r0 = call(dir, 0, "brb.broadcast", p0), *r2 = call(dir, 2, "brb.broadcast", p2);
	ok(json_is_integer(json_object_get(r0, "seq")) && json_is_integer(json_object_get(r2, "seq")),
	   "%s: brb.broadcast at nodes 0 and 2 returns their seq", protocol);
	json_decref(r0), json_decref(r2), json_decref(p0), json_decref(p2);

	/* Every node delivers both (broadcasts from different senders may be
	 * delivered in different orders, so delivery hashes need not agree). */
	int done = 0;
	for (int tries = 0; tries < 200 && done < N; tries++) {
		done = 0;
		for (int i = 0; i < N; i++) {
			json_t *info = call(dir, i, "proto.info", NULL);
			done += json_integer_value(json_object_get(info, "delivered")) == 2;
			json_decref(info);
		}
		if (done < N)
			usleep(50000);
	}
	is_int(done, N, "%s: all 4 nodes delivered both broadcasts", protocol);
	for (int tries = 0; tries < 100 && notified < 2; tries++) {
		res = NULL, err = NULL;
		weft_rpc_client_call(sub, "status", NULL, 5000, &res, &err);
		json_decref(res);
		json_decref(err);
		if (notified < 2)
			usleep(20000);
	}
	ok(notified == 2 && (strcmp(notified_data, hex0) == 0 || strcmp(notified_data, hex2) == 0),
	   "%s: the subscriber got both proto.deliver notifications (%d, last '%s')", protocol, notified,
	   notified_data);
	weft_rpc_client_close(sub);
	free(sock3);

	for (int i = 0; i < N; i++)
		if (pids[i] > 0)
			tu_weftd_stop(pids[i], 10000);
	const char *const payloads[2] = {msg0, msg2};
	check_traces(protocol, dir, payloads);
	tu_rmtree(dir);
	free(dir), free(genesis_out), free(bin);
}

int main(void)
{
	static const char *const protocols[] = {"bracha", "echo", "coded", "amortized"};
	int base = 20000 + (getpid() * 7) % 30000;
	for (size_t p = 0; p < sizeof(protocols) / sizeof(protocols[0]); p++)
		run_protocol(protocols[p], base + (int)p * 10);

	/* A committee running a non-broadcast protocol refuses brb.broadcast. */
	char *dir = tu_tmpdir("brbnone"), *bin = tu_bin("weft-cli"), port[16];
	snprintf(port, sizeof(port), "%d", base + 50);
	char *argv[] = {bin, "genesis", "--nodes", "1", "--out", dir, "--base-port", port, "--protocol", "seq", "--force", NULL};
	struct tu_run r;
	tu_run(&r, argv, 20000, -1);
	tu_run_free(&r);
	char *d;
	if (asprintf(&d, "%s/node0", dir) < 0)
		abort();
	pid_t pid = tu_weftd_start(d, NULL);
	char *sock = sock_of(dir, 0);
	json_t *res = NULL, *err = NULL, *params = data_param("x");
	weft_rpc_client_call_once(sock, "brb.broadcast", params, 5000, &res, &err);
	ok(err && strstr(json_string_value(json_object_get(err, "message")) ?: "", "not a broadcast protocol"),
	   "brb.broadcast on a committee running 'seq' is refused with a clear message");
	json_decref(res), json_decref(err), json_decref(params);
	tu_weftd_stop(pid, 10000);

	/* A trace file that cannot be written stops the daemon with a message. */
	char *wd = tu_bin("weftd");
	char *argv2[] = {wd, "--datadir", d, "--trace", "/nonexistent-dir/trace.ndjson", NULL};
	tu_run(&r, argv2, 20000, -1);
	ok(r.status == 1 && strstr(r.err, "--trace /nonexistent-dir/trace.ndjson: No such file"),
	   "weftd --trace into a missing directory exits 1 naming the file (%d: %s)", r.status, r.err);
	tu_run_free(&r);
	free(wd);
	tu_rmtree(dir);
	free(dir), free(bin), free(d), free(sock);
	return done_testing();
}
