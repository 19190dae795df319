/* channel_pay.c - the client of the payment channel benchmarks
 * (tests/bench/channel_pay.sh, asc_request.sh): closed-loop payers against
 * a running committee, beside closed-loop ledger transfers through
 * consensus; and closed-loop buyers on atomic service channels.
 *
 *   channel_pay pay SECONDS CHANNEL CONCURRENCY SOCKET...
 *       CONCURRENCY threads per socket (the node hosting member i is
 *       SOCKET i, and member i is the first member hosted there), each
 *       paying 1 unit to a random other member with channel.pay wait=true,
 *       again and again for SECONDS (a member pipelines its threads'
 *       payments); every payment must end finalized.
 *   channel_pay transfer SECONDS KEYFILE... -- SOCKET...
 *       one thread per key file (a funded ledger account; weft-cli
 *       ledger-keygen's format), sending 1 unit to a fixed account with a
 *       signed ledger.transfer on SOCKET (thread i uses socket i mod count)
 *       and polling tx.status every millisecond until it is committed.
 *
 *   channel_pay asc SECONDS PROVIDER_SOCKET CLIENT_SOCKET CHANNEL...
 *       a service "echo" registered on PROVIDER_SOCKET (one thread
 *       answering every request with its payload), and one thread per
 *       service channel, each buying asc.request service=echo price=1
 *       payload=x wait=true again and again (a channel has one round at a
 *       time); every request must end with the result "x".
 *
 * Output: one JSON line {ops, seconds, per_s, p50_ms, p99_ms, max_ms,
 * failed}.  Latency is from the call to the answer (pay) or to the
 * commit seen by tx.status (transfer). */
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"
#include "weft/mp.h"
#include "weft/rpc_client.h"

#define MAX_THREADS 256

struct worker {
	pthread_t t;
	int index, count;  /* pay: the member, and how many */
	const char *sock;
	const char *channel;
	uint8_t sk[32], from[32], to[32];
	double seconds;
	double *lat;   /* ms */
	size_t nlat, cap;
	long failed;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void record(struct worker *w, double ms)
{
	if (w->nlat == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 4096;
		w->lat = realloc(w->lat, w->cap * sizeof(double));
		if (w->lat == NULL)
			abort();
	}
	w->lat[w->nlat++] = ms;
}

static void *pay_loop(void *arg)
{
	struct worker *w = arg;
	struct weft_rpc_client *c;
	if (weft_rpc_client_connect(&c, w->sock, 5000, NULL) != 0) {
		fprintf(stderr, "channel_pay: cannot connect to %s\n", w->sock);
		w->failed++;
		return NULL;
	}
	unsigned seed = (unsigned)((uintptr_t)w * 2654435761u) + 1;
	double end = now_s() + w->seconds;
	while (now_s() < end) {
		int to = (int)(rand_r(&seed) % (unsigned)(w->count - 1));
		if (to >= w->index)
			to++;
		json_t *params = json_pack("[{s:s,s:i,s:i}]", "channel", w->channel, "to", to, "amount", 1);
		json_t *res = NULL, *err = NULL;
		double t0 = now_s();
		int rc = weft_rpc_client_call(c, "channel.pay", params, 30000, &res, &err);
		double t1 = now_s();
		json_decref(params);
		const char *status = res ? json_string_value(json_object_get(res, "status")) : NULL;
		if (rc == 0 && status && strcmp(status, "finalized") == 0) {
			record(w, (t1 - t0) * 1000);
		} else {
			w->failed++;
			static int shown; /* a few examples, from any thread */
			if (shown++ < 3) {
				char *e = err ? json_dumps(err, 0) : NULL;
				fprintf(stderr, "channel_pay: payment failed: rc=%d %s\n", rc, e ? e : "");
				free(e);
			}
		}
		json_decref(res);
		json_decref(err);
	}
	weft_rpc_client_close(c);
	return NULL;
}

static bool read_key(const char *path, uint8_t sk[32])
{
	FILE *f = fopen(path, "r");
	char line[200];
	bool ok = f && fgets(line, sizeof(line), f) && strncmp(line, "weft-secp256k1-secret ", 22) == 0 &&
		  weft_hex_decode(sk, 32, line + 22, 64) == 0;
	if (f)
		fclose(f);
	return ok;
}

static void *transfer_loop(void *arg)
{
	struct worker *w = arg;
	struct weft_rpc_client *c;
	if (weft_rpc_client_connect(&c, w->sock, 5000, NULL) != 0) {
		w->failed++;
		return NULL;
	}
	char acct[65];
	weft_hex_encode(acct, w->from, 32);
	json_t *res = NULL, *err = NULL, *p = json_pack("[{s:s}]", "account", acct);
	weft_rpc_client_call(c, "ledger.balance", p, 10000, &res, &err);
	json_decref(p);
	uint64_t nonce = res ? (uint64_t)json_integer_value(json_object_get(res, "nonce")) : 0;
	json_decref(res);
	json_decref(err);
	double end = now_s() + w->seconds;
	struct weft_mpw tx;
	weft_mpw_init(&tx);
	while (now_s() < end) {
		struct weft_ledger_transfer t = {.amount = 1, .nonce = nonce};
		uint8_t aux[32];
		memcpy(t.to, w->to, 32);
		randombytes_buf(aux, sizeof(aux));
		weft_ledger_transfer_sign(&t, w->sk, aux);
		weft_mpw_reset(&tx);
		weft_ledger_transfer_encode(&t, &tx);
		char *hex = malloc(2 * tx.len + 1);
		if (hex == NULL)
			abort();
		weft_hex_encode(hex, tx.buf, tx.len);
		p = json_pack("[{s:s}]", "tx_hex", hex);
		free(hex);
		double t0 = now_s();
		res = err = NULL;
		int rc = weft_rpc_client_call(c, "ledger.transfer", p, 10000, &res, &err);
		json_decref(p);
		const char *digest = res ? json_string_value(json_object_get(res, "digest")) : NULL;
		char d[65] = "";
		if (rc == 0 && digest)
			snprintf(d, sizeof(d), "%s", digest);
		json_decref(res);
		json_decref(err);
		bool done = false;
		while (d[0] && !done && now_s() < end + 30) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
			p = json_pack("[{s:s}]", "digest", d);
			res = err = NULL;
			weft_rpc_client_call(c, "tx.status", p, 10000, &res, &err);
			json_decref(p);
			const char *st = res ? json_string_value(json_object_get(res, "status")) : NULL;
			done = st && strcmp(st, "committed") == 0;
			json_decref(res);
			json_decref(err);
		}
		if (done) {
			record(w, (now_s() - t0) * 1000);
			nonce++;
		} else {
			w->failed++;
		}
	}
	weft_mpw_free(&tx);
	weft_rpc_client_close(c);
	return NULL;
}

/* ---- asc: a trivial service and its buyers ---- */

struct echo {
	struct weft_rpc_client *c;
	json_t *pending;   /* requests seen, answered after the listen */
	volatile int stop;
};

static void on_request(const char *method, json_t *params, void *arg)
{
	struct echo *e = arg;
	if (strcmp(method, "service.request") == 0)
		json_array_append(e->pending, json_array_get(params, 0));
}

static void *echo_loop(void *arg)
{
	struct echo *e = arg;
	while (!e->stop) {
		int rc = weft_rpc_client_listen_any(e->c, 200);
		size_t i;
		json_t *q;
		json_array_foreach(e->pending, i, q)
		{
			json_t *res = NULL, *err = NULL;
			json_t *p = json_pack("[{s:O,s:O,s:O}]", "channel", json_object_get(q, "channel"), "seq",
					      json_object_get(q, "seq"), "result", json_object_get(q, "payload"));
			weft_rpc_client_call(e->c, "service.respond", p, 10000, &res, &err);
			json_decref(p), json_decref(res), json_decref(err);
		}
		json_array_clear(e->pending);
		if (rc != 0 && rc != WEFT_ETIMEDOUT)
			break;
	}
	return NULL;
}

static void *asc_loop(void *arg)
{
	struct worker *w = arg;
	struct weft_rpc_client *c;
	if (weft_rpc_client_connect(&c, w->sock, 5000, NULL) != 0) {
		w->failed++;
		return NULL;
	}
	double end = now_s() + w->seconds;
	while (now_s() < end) {
		json_t *params = json_pack("[{s:s,s:s,s:i,s:s}]", "channel", w->channel, "service", "echo", "price", 1,
					   "payload", "x");
		json_t *res = NULL, *err = NULL;
		double t0 = now_s();
		int rc = weft_rpc_client_call(c, "asc.request", params, 30000, &res, &err);
		double t1 = now_s();
		json_decref(params);
		const char *result = res ? json_string_value(json_object_get(res, "result")) : NULL;
		if (rc == 0 && result && strcmp(result, "x") == 0) {
			record(w, (t1 - t0) * 1000);
		} else {
			w->failed++;
			static int shown;
			if (shown++ < 3) {
				char *e = err ? json_dumps(err, 0) : NULL;
				fprintf(stderr, "channel_pay: request failed: rc=%d %s\n", rc, e ? e : "");
				free(e);
			}
		}
		json_decref(res);
		json_decref(err);
	}
	weft_rpc_client_close(c);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int usage(void)
{
	fprintf(stderr, "usage: channel_pay pay SECONDS CHANNEL CONCURRENCY SOCKET...\n"
			"       channel_pay transfer SECONDS KEYFILE... -- SOCKET...\n"
			"       channel_pay asc SECONDS PROVIDER_SOCKET CLIENT_SOCKET CHANNEL...\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 5 || sodium_init() < 0)
		return usage();
	bool pay = strcmp(argv[1], "pay") == 0, asc = strcmp(argv[1], "asc") == 0;
	double seconds = atof(argv[2]);
	static struct worker w[MAX_THREADS];
	static struct echo echo;
	pthread_t echo_t;
	int n = 0;
	if (asc) {
		json_t *res = NULL, *err = NULL, *p = json_pack("[{s:s}]", "name", "echo");
		if (argc < 6 || weft_rpc_client_connect(&echo.c, argv[3], 5000, NULL) != 0 ||
		    weft_rpc_client_call(echo.c, "service.register", p, 5000, &res, &err) != 0 || err)
			return usage();
		json_decref(p), json_decref(res);
		echo.pending = json_array();
		weft_rpc_client_set_notify(echo.c, on_request, &echo);
		pthread_create(&echo_t, NULL, echo_loop, &echo);
		for (int i = 5; i < argc && n < MAX_THREADS; i++, n++)
			w[n] = (struct worker){.index = n, .sock = argv[4], .channel = argv[i], .seconds = seconds};
	} else if (pay) {
		int conc = atoi(argv[4]), members = argc - 5;
		if (conc < 1 || members < 2 || members * conc > MAX_THREADS)
			return usage();
		for (int m = 0; m < members; m++)
			for (int k = 0; k < conc; k++, n++)
				w[n] = (struct worker){.index = m, .count = members, .sock = argv[5 + m], .channel = argv[3],
						       .seconds = seconds};
	} else {
		int sep = 3;
		while (sep < argc && strcmp(argv[sep], "--") != 0)
			sep++;
		int nsock = argc - sep - 1;
		if (sep == argc || nsock < 1)
			return usage();
		uint8_t sink_sk[32] = {0};
		sink_sk[31] = 77;
		uint8_t sink[32];
		weft_ledger_pubkey(sink_sk, sink);
		for (int i = 3; i < sep && n < MAX_THREADS; i++, n++) {
			w[n] = (struct worker){.index = n, .sock = argv[sep + 1 + n % nsock], .seconds = seconds};
			if (!read_key(argv[i], w[n].sk) || weft_ledger_pubkey(w[n].sk, w[n].from) != 0) {
				fprintf(stderr, "channel_pay: %s is not a key file\n", argv[i]);
				return 1;
			}
			memcpy(w[n].to, sink, 32);
		}
	}
	double t0 = now_s();
	for (int i = 0; i < n; i++)
		pthread_create(&w[i].t, NULL, asc ? asc_loop : pay ? pay_loop : transfer_loop, &w[i]);
	size_t total = 0;
	long failed = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].nlat;
		failed += w[i].failed;
	}
	double elapsed = now_s() - t0;
	if (asc) {
		echo.stop = 1;
		pthread_join(echo_t, NULL);
		weft_rpc_client_close(echo.c);
		json_decref(echo.pending);
	}
	double *all = malloc((total ? total : 1) * sizeof(double));
	size_t k = 0;
	for (int i = 0; i < n; i++) {
		memcpy(all + k, w[i].lat, w[i].nlat * sizeof(double));
		k += w[i].nlat;
		free(w[i].lat);
	}
	qsort(all, total, sizeof(double), cmp_double);
	double p50 = total ? all[total / 2] : 0, p99 = total ? all[(size_t)((double)total * 0.99)] : 0;
	double max = total ? all[total - 1] : 0;
	printf("{\"ops\":%zu,\"seconds\":%.2f,\"per_s\":%.0f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,"
	       "\"failed\":%ld,\"clients\":%d}\n",
	       total, elapsed, (double)total / elapsed, p50, p99, max, failed, n);
	free(all);
	return failed ? 1 : 0;
}
