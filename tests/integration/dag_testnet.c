/* dag_testnet.c - the "dag" consensus with its ledger on a real committee of
 * 4 weftd (real sockets, real LMDB) on loopback.
 *
 * Two accounts A and B are funded at genesis.  Opaque transactions go to
 * every node (tx.submit, tx.submit_batch), transfers A->B and B->A go in
 * through weft-cli ledger.transfer and through the RPC ledger.transfer with
 * transactions signed here; bad inputs (a tampered signature, opaque data
 * given as a transfer, a transaction over tx_max, an empty one, a malformed
 * digest) are refused with a clear message while the node keeps serving.
 * Every transaction commits on every node at the same log position with
 * the expected ledger outcome (a transfer over the balance is ordered and
 * fails as insufficient_funds), committed_txs, order_hash and ledger_hash
 * agree, and so do the balances.
 *
 * Then one node is killed with SIGKILL right after it accepted some
 * transactions, the others keep taking transactions (a transfer among
 * them), and the node is restarted on the same data directory: it catches
 * up to the same committed_txs (not more: nothing delivered twice), the same
 * order and ledger hashes and balances, the transactions it had accepted
 * before the crash commit, and no node logged a dag.conflict (two vertices
 * for one slot: an equivocation).
 *
 * Random kills: six times, a random node is killed with SIGKILL at a
 * random moment under load and restarted; every accepted transaction
 * commits everywhere, the logs agree, and no dag.conflict or BRB
 * equivocation shows (crash recovery under group commit).
 *
 * Exactly once: a committed transaction resubmitted to a node restarted
 * with SIGKILL is answered as a duplicate (tx.status still says committed,
 * at the same position) and is not ordered again; a transaction submitted
 * to two nodes is ordered once, with the same order_hash everywhere. */
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "../../src/cli/cli.h"
#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"
#include "weft/rpc_client.h"

#define N 4
#define VICTIM 3        /* the node killed in phase 4 */
#define REVIVED 1       /* the node restarted in the exactly-once phase */
#define TX_MAX (64 << 10) /* the dag protocol's default tx_max */
#define MAX_TX 1024

static char *tmp, *net, *cli_bin;
static char *dirs[N], *socks[N];
static pid_t pids[N];
static struct weft_rpc_client *conns[N];

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void hex_digest(char out[65], const void *data, size_t len)
{
	uint8_t d[32];
	weft_hash(d, data, len);
	weft_hex_encode(out, d, sizeof(d));
}

/* ---- RPC ---- */

/* Calls method on node i over a kept connection (reconnecting once when it
 * died, e.g. across a restart).  params (may be NULL) is consumed.  Returns
 * the result, or NULL with the reason (the daemon's error message, or the
 * client's failure) in err. */
static json_t *rpc(int i, const char *method, json_t *params, char *err, size_t errlen)
{
	json_t *res = NULL, *e = NULL;
	snprintf(err, errlen, "no reply");
	for (int attempt = 0; attempt < 2 && !res && !e; attempt++) {
		if (conns[i] == NULL && weft_rpc_client_connect(&conns[i], socks[i], 2000, NULL) != 0) {
			snprintf(err, errlen, "cannot connect to %s", socks[i]);
			continue;
		}
		int rc = weft_rpc_client_call(conns[i], method, params, 10000, &res, &e);
		if (rc != 0) {
			snprintf(err, errlen, "%s: %s", weft_strerror(rc), weft_rpc_client_errmsg(conns[i]));
			weft_rpc_client_close(conns[i]);
			conns[i] = NULL;
		}
	}
	if (e) {
		const char *m = json_string_value(json_object_get(e, "message"));
		snprintf(err, errlen, "%s", m ? m : "an error without a message");
		json_decref(e);
	}
	json_decref(params);
	return res;
}

/* The result of a call expected to succeed (NULL and a diagnostic if not). */
static json_t *call(int i, const char *method, json_t *params)
{
	char err[512];
	json_t *res = rpc(i, method, params, err, sizeof(err));
	if (!res)
		diag("node%d %s: %s", i, method, err);
	return res;
}

/* True when the call failed with a message containing needle. */
static bool refused(int i, const char *method, json_t *params, const char *needle, char *err, size_t errlen)
{
	json_t *res = rpc(i, method, params, err, errlen);
	bool good = res == NULL && strstr(err, needle) != NULL;
	if (!good)
		diag("node%d %s: expected an error with '%s', got %s", i, method, needle, res ? "a result" : err);
	json_decref(res);
	return good;
}

/* Node i still answers (dag.info). */
static bool serving(int i)
{
	json_t *info = call(i, "dag.info", NULL);
	bool good = json_is_object(info);
	json_decref(info);
	return good;
}

/* A string member as a C string ("" when absent). */
static const char *sget(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* A JSON string holding arbitrary bytes: weft-cli's client sends a string
 * as a msgpack str of its bytes, and the daemon's BYTES parameters take a
 * str or a bin alike, so this carries binary transactions. */
static json_t *bytes_json(const void *p, size_t len)
{
	json_t *s = json_stringn_nocheck(p, len);
	if (!s)
		abort();
	return s;
}

/* ---- transactions and what we expect of them ---- */

struct tx {
	char digest[65];
	const char *outcome;  /* the ledger outcome expected at execution */
	long long pos[N];     /* log position seen on each node, -1 before */
};
static struct tx txs[MAX_TX];
static int ntx, overdraft = -1; /* overdraft: the transfer over A's balance */

static void expect(const char *digest, const char *outcome)
{
	if (ntx == MAX_TX)
		abort();
	struct tx *t = &txs[ntx++];
	snprintf(t->digest, sizeof(t->digest), "%s", digest);
	t->outcome = outcome;
	for (int i = 0; i < N; i++)
		t->pos[i] = -1;
}

/* tx.submit of data at node i: true when it was accepted as new with the
 * data's digest; recorded as an opaque transaction. */
static bool submit(int i, const void *data, size_t len)
{
	char want[65];
	hex_digest(want, data, len);
	json_t *p = json_pack("[{s:o}]", "data", bytes_json(data, len));
	json_t *r = call(i, "tx.submit", p);
	bool good = r && strcmp(sget(r, "digest"), want) == 0 && json_is_false(json_object_get(r, "duplicate"));
	if (r && !good)
		diag("node%d tx.submit: digest %s (want %s), duplicate %s", i, sget(r, "digest"), want,
		     json_is_true(json_object_get(r, "duplicate")) ? "true" : "false");
	if (good)
		expect(want, "opaque");
	json_decref(r);
	return good;
}

static bool submit_text(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool submit_text(int i, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return submit(i, buf, strlen(buf));
}

/* ---- ledger ---- */

struct account {
	char file[512];
	char hex[65];
	uint8_t key[32];
	uint64_t balance;   /* expected once everything submitted executed */
	uint64_t nonce;     /* the next nonce, counting accepted transfers */
};
static struct account A, B;

static void keygen(struct account *a, const char *name, uint64_t funds)
{
	snprintf(a->file, sizeof(a->file), "%s/%s.key", tmp, name);
	char *argv[] = {cli_bin, "ledger-keygen", "--out", a->file, NULL};
	struct tu_run r;
	tu_run(&r, argv, 10000, -1);
	json_t *j = json_loads(r.out, 0, NULL);
	snprintf(a->hex, sizeof(a->hex), "%s", sget(j, "account"));
	ok(r.status == 0 && strlen(a->hex) == 64 && weft_hex_decode(a->key, 32, a->hex, 64) == 0,
	   "ledger-keygen for account %s", name);
	json_decref(j);
	tu_run_free(&r);
	a->balance = funds;
	a->nonce = 0;
}

/* The encoded transfer from -> to, signed here with from's key file. */
static void sign(struct weft_mpw *w, const struct account *from, const struct account *to, uint64_t amount,
		 uint64_t nonce)
{
	uint8_t *sk, aux[32];
	struct weft_ledger_transfer t = {.amount = amount, .nonce = nonce};
	if (weft_cli_ledger_key_load(from->file, &sk) != 0)
		abort();
	memcpy(t.to, to->key, 32);
	randombytes_buf(aux, sizeof(aux));
	if (weft_ledger_transfer_sign(&t, sk, aux) != 0)
		abort();
	sodium_free(sk);
	weft_mpw_init(w);
	weft_ledger_transfer_encode(&t, w);
}

/* ledger.transfer tx=<a transfer signed here> at node i.  Accepted
 * transfers are recorded with the outcome expected; when it is "applied"
 * the expected balances and nonce move. */
static bool transfer_rpc(int i, struct account *from, struct account *to, uint64_t amount, const char *outcome)
{
	struct weft_mpw w;
	char want[65];
	sign(&w, from, to, amount, from->nonce);
	hex_digest(want, w.buf, w.len);
	json_t *r = call(i, "ledger.transfer", json_pack("[{s:o}]", "tx", bytes_json(w.buf, w.len)));
	weft_mpw_free(&w);
	bool good = r && strcmp(sget(r, "digest"), want) == 0;
	json_decref(r);
	if (good) {
		expect(want, outcome);
		if (strcmp(outcome, "applied") == 0)
			from->balance -= amount, from->nonce++, to->balance += amount;
	}
	return good;
}

/* weft-cli --datadir node<i> ledger.transfer to=.. amount=.. key=.. [nonce=..]
 * (the nonce from ledger.balance unless explicit); applied when accepted. */
static bool transfer_cli(int i, struct account *from, struct account *to, uint64_t amount, bool explicit_nonce)
{
	char *toarg = xasprintf("to=%s", to->hex), *amt = xasprintf("amount=%llu", (unsigned long long)amount);
	char *key = xasprintf("key=%s", from->file), *nonce = xasprintf("nonce=%llu", (unsigned long long)from->nonce);
	char *argv[] = {cli_bin, "--datadir", dirs[i], "ledger.transfer", toarg, amt, key,
			explicit_nonce ? nonce : NULL, NULL};
	struct tu_run r;
	tu_run(&r, argv, 30000, -1);
	json_t *j = json_loads(r.out, 0, NULL);
	const char *d = sget(j, "digest");
	bool good = r.status == 0 && strlen(d) == 64;
	if (good) {
		expect(d, "applied");
		from->balance -= amount, from->nonce++, to->balance += amount;
	} else {
		diag("weft-cli ledger.transfer at node%d: exit %d, %s", i, r.status, r.err);
	}
	json_decref(j);
	tu_run_free(&r);
	free(toarg), free(amt), free(key), free(nonce);
	return good;
}

/* ---- waiting for the committee ---- */

/* Polls tx.status of txs[from..to) on the nodes in mask until each is
 * committed there (recording its position) or timeout_ms passed.  Returns
 * how many (tx, node) pairs are still not committed; *bad_outcome counts
 * outcomes other than the expected one. */
static int wait_committed(int from, int to, unsigned mask, int timeout_ms, int *bad_outcome)
{
	long deadline = now_ms() + timeout_ms;
	int missing;
	*bad_outcome = 0;
	for (;;) {
		missing = 0;
		for (int i = 0; i < N; i++) {
			if (!(mask & (1u << i)))
				continue;
			for (int k = from; k < to; k++) {
				struct tx *t = &txs[k];
				if (t->pos[i] >= 0)
					continue;
				json_t *st = call(i, "tx.status", json_pack("[{s:s}]", "digest", t->digest));
				if (st && strcmp(sget(st, "status"), "committed") == 0) {
					t->pos[i] = json_integer_value(json_object_get(st, "position"));
					if (strcmp(sget(st, "outcome"), t->outcome) != 0 && ++*bad_outcome <= 5)
						diag("node%d tx %.16s: outcome %s, expected %s", i, t->digest,
						     sget(st, "outcome"), t->outcome);
				} else {
					missing++;
				}
				json_decref(st);
			}
		}
		if (missing == 0 || now_ms() > deadline)
			return missing;
		usleep(100000);
	}
}

/* Transactions of txs[from..to) whose position differs between the nodes
 * in mask. */
static int position_mismatches(int from, int to, unsigned mask)
{
	int bad = 0;
	for (int k = from; k < to; k++) {
		long long p = -1;
		for (int i = 0; i < N; i++) {
			if (!(mask & (1u << i)))
				continue;
			if (p < 0)
				p = txs[k].pos[i];
			else if (txs[k].pos[i] != p && ++bad <= 5)
				diag("tx %.16s at position %lld on node%d, %lld before", txs[k].digest, txs[k].pos[i], i, p);
		}
	}
	return bad;
}

struct info {
	long long committed_txs, ledger_height, committed_round, mempool_txs, duplicates_skipped;
	char order_hash[65], ledger_hash[65];
	long long fetches, fetched, equivocations;
};

static bool get_info(int i, struct info *in)
{
	json_t *d = call(i, "dag.info", NULL);
	memset(in, 0, sizeof(*in));
	in->committed_txs = -1;
	if (!d)
		return false;
	in->committed_txs = json_integer_value(json_object_get(d, "committed_txs"));
	in->ledger_height = json_integer_value(json_object_get(d, "ledger_height"));
	in->committed_round = json_integer_value(json_object_get(d, "committed_round"));
	in->mempool_txs = json_integer_value(json_object_get(d, "mempool_txs"));
	in->duplicates_skipped = json_integer_value(json_object_get(d, "duplicates_skipped"));
	snprintf(in->order_hash, sizeof(in->order_hash), "%s", sget(d, "order_hash"));
	snprintf(in->ledger_hash, sizeof(in->ledger_hash), "%s", sget(d, "ledger_hash"));
	json_t *s = json_object_get(d, "sync");
	in->fetches = json_integer_value(json_object_get(s, "fetches"));
	in->fetched = json_integer_value(json_object_get(s, "fetched_vertices"));
	in->equivocations = json_integer_value(json_object_get(json_object_get(d, "brb"), "equivocations"));
	json_decref(d);
	return true;
}

/* Waits until every node reports committed_txs == want (the hashes are
 * comparable only at equal heights); info[] holds each node's state then.
 * Fails early when a node passes want: a transaction delivered twice. */
static bool converge(long long want, int timeout_ms, struct info info[N])
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		int at = 0;
		for (int i = 0; i < N; i++) {
			get_info(i, &info[i]);
			if (info[i].committed_txs > want) {
				diag("node%d committed %lld transactions, only %lld were submitted", i,
				     info[i].committed_txs, want);
				return false;
			}
			at += info[i].committed_txs == want;
		}
		if (at == N)
			return true;
		if (now_ms() > deadline) {
			for (int i = 0; i < N; i++)
				diag("node%d committed_txs %lld (want %lld)", i, info[i].committed_txs, want);
			return false;
		}
		usleep(100000);
	}
}

static void check_agreement(const char *when, long long want, struct info info[N])
{
	bool same_order = true, same_ledger = true, heights = true;
	for (int i = 0; i < N; i++) {
		same_order &= strlen(info[i].order_hash) == 64 && strcmp(info[i].order_hash, info[0].order_hash) == 0;
		same_ledger &= strlen(info[i].ledger_hash) == 64 && strcmp(info[i].ledger_hash, info[0].ledger_hash) == 0;
		heights &= info[i].ledger_height == want;
		if (!same_order || !same_ledger)
			diag("node%d at %lld: order_hash %s ledger_hash %s", i, info[i].committed_txs, info[i].order_hash,
			     info[i].ledger_hash);
	}
	ok(same_order, "%s: the same order_hash on the 4 nodes at committed_txs %lld", when, want);
	ok(same_ledger, "%s: the same ledger_hash on the 4 nodes", when);
	ok(heights, "%s: ledger_height equals committed_txs on every node", when);
}

/* ledger.balance of both accounts agrees with what we expect on every node. */
static void check_balances(const char *when)
{
	int good = 0;
	for (int i = 0; i < N; i++) {
		bool node_ok = true;
		const struct account *acc[2] = {&A, &B};
		for (int a = 0; a < 2; a++) {
			json_t *b = call(i, "ledger.balance", json_pack("[{s:s}]", "account", acc[a]->hex));
			long long bal = json_integer_value(json_object_get(b, "balance"));
			long long nonce = json_integer_value(json_object_get(b, "nonce"));
			if (!b || !json_is_true(json_object_get(b, "exists")) || bal != (long long)acc[a]->balance ||
			    nonce != (long long)acc[a]->nonce) {
				diag("node%d account %s: balance %lld nonce %lld, expected %llu and %llu", i, a ? "B" : "A",
				     bal, nonce, (unsigned long long)acc[a]->balance, (unsigned long long)acc[a]->nonce);
				node_ok = false;
			}
			json_decref(b);
		}
		good += node_ok;
	}
	is_int(good, N, "%s: balances and nonces of A (%llu) and B (%llu) as expected on every node", when,
	       (unsigned long long)A.balance, (unsigned long long)B.balance);
}

/* ---- the committee ---- */

static bool start_committee(void)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		int base = tu_port_base(N);
		if (base < 0)
			return false;
		free(net);
		net = xasprintf("%s/net%d", tmp, attempt);
		char port[16], *fa = xasprintf("%s=%llu", A.hex, (unsigned long long)A.balance),
			       *fb = xasprintf("%s=%llu", B.hex, (unsigned long long)B.balance);
		snprintf(port, sizeof(port), "%d", base);
		char *argv[] = {cli_bin, "genesis", "--nodes", "4", "--out", net, "--base-port", port, "--protocol",
				"dag", "--fund", fa, "--fund", fb, NULL};
		struct tu_run r;
		tu_run(&r, argv, 20000, -1);
		int st = r.status;
		if (st != 0)
			diag("weft-cli genesis: %s", r.err);
		tu_run_free(&r);
		free(fa), free(fb);
		if (st != 0)
			return false;
		int started = 0;
		bool taken = false;
		for (int i = 0; i < N; i++) {
			free(dirs[i]), free(socks[i]);
			dirs[i] = xasprintf("%s/node%d", net, i);
			socks[i] = xasprintf("%s/rpc.sock", dirs[i]);
			pids[i] = tu_weftd_start(dirs[i], NULL);
			started += pids[i] > 0;
			char *errpath = xasprintf("%s.stderr", dirs[i]);
			taken |= pids[i] <= 0 && tu_file_count(errpath, "in use") > 0;
			free(errpath);
		}
		if (started == N)
			return true;
		for (int i = 0; i < N; i++)
			if (pids[i] > 0)
				tu_weftd_stop(pids[i], 5000), pids[i] = -1;
		if (!taken)
			return false;
		diag("a port was taken meanwhile: another base");
	}
	return false;
}

/* Kills node i with SIGKILL: true when it died of it. */
static bool crash(int i)
{
	int st = -1;
	if (pids[i] > 0 && kill(pids[i], SIGKILL) == 0)
		st = tu_wait(pids[i], 5000);
	pids[i] = -1;
	weft_rpc_client_close(conns[i]);
	conns[i] = NULL;
	return st == 128 + SIGKILL;
}

/* Starts node i again on its data directory. */
static bool restart(int i)
{
	pids[i] = tu_weftd_start(dirs[i], NULL);
	return pids[i] > 0;
}

/* Every node has committed an anchor (dag.info committed_round not null). */
static bool wait_first_commit(int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		int done = 0;
		for (int i = 0; i < N; i++) {
			json_t *d = call(i, "dag.info", NULL);
			done += json_is_integer(json_object_get(d, "committed_round"));
			json_decref(d);
		}
		if (done == N)
			return true;
		usleep(100000);
	}
	return false;
}

/* ---- phases ---- */

static void phase_submit(void)
{
	char err[512];

	/* 20 opaque transactions at each node. */
	int accepted = 0;
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 20; k++)
			accepted += submit_text(i, "dag-testnet opaque node%d #%d", i, k);
	is_int(accepted, 4 * 20, "tx.submit: 20 opaque transactions at each node, each answered with its digest");

	/* The same data again at the same node: a duplicate, not a second tx. */
	const char *again = "dag-testnet opaque node0 #0";
	char want[65];
	hex_digest(want, again, strlen(again));
	json_t *r = call(0, "tx.submit", json_pack("[{s:s}]", "data", again));
	ok(r && json_is_true(json_object_get(r, "duplicate")) && strcmp(sget(r, "digest"), want) == 0,
	   "tx.submit of known data: duplicate true, the same digest");
	json_decref(r);

	/* A batch of 20 at node 2 with a tampered transfer among them. */
	struct weft_mpw bad;
	sign(&bad, &A, &B, 1, 1000);
	bad.buf[bad.len - 1] ^= 0x01; /* the signature's last byte */
	json_t *batch = json_array();
	char texts[20][64], digests[20][65];
	for (int k = 0; k < 20; k++) {
		snprintf(texts[k], sizeof(texts[k]), "dag-testnet batch #%d", k);
		hex_digest(digests[k], texts[k], strlen(texts[k]));
		json_array_append_new(batch, json_string(texts[k]));
	}
	json_array_append_new(batch, bytes_json(bad.buf, bad.len));
	r = call(2, "tx.submit_batch", json_pack("[{s:o}]", "txs", batch));
	json_t *res = json_object_get(r, "results");
	int good = 0;
	for (int k = 0; k < 20; k++) {
		json_t *e = json_array_get(res, (size_t)k);
		if (strcmp(sget(e, "digest"), digests[k]) == 0 && json_is_false(json_object_get(e, "duplicate"))) {
			good++;
			expect(digests[k], "opaque");
		}
	}
	ok(json_integer_value(json_object_get(r, "accepted")) == 20 && good == 20 && json_array_size(res) == 21,
	   "tx.submit_batch at node2: 20 of 21 accepted with their digests");
	is_str(sget(json_array_get(res, 20), "error"), "bad_signature",
	       "tx.submit_batch: the tampered transfer in the batch is refused as bad_signature");
	json_decref(r);

	/* A transaction of exactly tx_max bytes is taken; one byte more is not. */
	char *big = malloc(TX_MAX + 2);
	for (int k = 0; k < TX_MAX + 1; k++)
		big[k] = (char)('a' + k % 26);
	big[TX_MAX + 1] = '\0';
	ok(submit(3, big, TX_MAX), "tx.submit of exactly tx_max (64 KiB) bytes is accepted");
	ok(refused(3, "tx.submit", json_pack("[{s:o}]", "data", bytes_json(big, TX_MAX + 1)), "tx_max", err, sizeof(err)) &&
		   serving(3),
	   "tx.submit of tx_max + 1 bytes: refused (%s); node3 keeps serving", err);
	free(big);
	ok(refused(3, "tx.submit", json_pack("[{s:s}]", "data", ""), "empty", err, sizeof(err)) && serving(3),
	   "tx.submit of empty data: refused (%s); node3 keeps serving", err);

	/* Transfers: weft-cli (nonce from ledger.balance, then explicit), and
	 * ones signed here.  A's go to node 1 in nonce order. */
	ok(transfer_cli(1, &A, &B, 100, false), "weft-cli ledger.transfer A->B 100 at node1 (nonce from the daemon)");
	ok(transfer_cli(2, &B, &A, 30, false), "weft-cli ledger.transfer B->A 30 at node2");
	ok(transfer_cli(1, &A, &B, 50, true), "weft-cli ledger.transfer A->B 50 at node1 with an explicit nonce");
	ok(transfer_rpc(1, &A, &B, 25, "applied"), "ledger.transfer tx=BYTES (signed here) A->B 25 at node1");
	if (ok(transfer_rpc(1, &A, &B, 1000000, "insufficient_funds"),
	       "ledger.transfer of more than A holds is accepted into the mempool"))
		overdraft = ntx - 1;

	/* Refused at submission. */
	ok(refused(1, "ledger.transfer", json_pack("[{s:o}]", "tx", bytes_json(bad.buf, bad.len)), "bad_signature",
		   err, sizeof(err)) &&
		   serving(1),
	   "ledger.transfer of a tampered transfer: refused (%s); node1 keeps serving", err);
	ok(refused(0, "tx.submit", json_pack("[{s:o}]", "data", bytes_json(bad.buf, bad.len)), "bad_signature", err,
		   sizeof(err)) &&
		   serving(0),
	   "tx.submit of a tampered transfer: refused (%s); node0 keeps serving", err);
	weft_mpw_free(&bad);
	ok(refused(1, "ledger.transfer", json_pack("[{s:s}]", "tx", "just some opaque bytes"), "not a ledger transfer",
		   err, sizeof(err)) &&
		   serving(1),
	   "ledger.transfer of opaque data: refused (%s); node1 keeps serving", err);
	ok(refused(2, "tx.status", json_pack("[{s:s}]", "digest", "xyz"), "64 hex digits", err, sizeof(err)) &&
		   serving(2),
	   "tx.status with a malformed digest: refused (%s); node2 keeps serving", err);
	hex_digest(want, "never submitted", 15);
	r = call(2, "tx.status", json_pack("[{s:s}]", "digest", want));
	is_str(sget(r, "status"), "unknown", "tx.status of a digest never submitted: unknown");
	json_decref(r);
}

static void phase_commit(void)
{
	int bad_outcome, missing = wait_committed(0, ntx, 0xf, 20000, &bad_outcome);
	is_int(missing, 0, "all %d accepted transactions committed on all 4 nodes (tx.status)", ntx);
	is_int(bad_outcome, 0, "each with the outcome expected (opaque, applied, insufficient_funds)");
	is_int(position_mismatches(0, ntx, 0xf), 0, "each at the same log position on every node");
	int overdrawn = 0;
	for (int i = 0; i < N && overdraft >= 0; i++) {
		json_t *st = call(i, "tx.status", json_pack("[{s:s}]", "digest", txs[overdraft].digest));
		overdrawn += strcmp(sget(st, "status"), "committed") == 0 &&
			     strcmp(sget(st, "outcome"), "insufficient_funds") == 0;
		json_decref(st);
	}
	is_int(overdrawn, N,
	       "tx.status of the transfer over A's balance: committed, outcome insufficient_funds, on every node");
	struct info info[N];
	ok(converge(ntx, 10000, info), "every node reports committed_txs %d", ntx);
	check_agreement("after the first load", ntx, info);
	check_balances("after the first load");
}

static void phase_crash(void)
{
	char err[512];
	int first = ntx;

	/* The victim accepts transactions, then dies at once. */
	int accepted = 0;
	for (int k = 0; k < 10; k++)
		accepted += submit_text(VICTIM, "dag-testnet before the crash #%d", k);
	is_int(accepted, 10, "node%d accepted 10 transactions right before the crash", VICTIM);
	ok(crash(VICTIM), "node%d killed with SIGKILL", VICTIM);

	/* The others keep taking transactions for 5 s, a transfer among them:
	 * about 100 rounds at the default pacing, past the BRB window of 64, so
	 * the restarted node also has to fetch vertices by range. */
	long until = now_ms() + 5000;
	int sent = 0, k = 0;
	accepted = 0;
	while (now_ms() < until) {
		for (int i = 0; i < N; i++) {
			if (i == VICTIM)
				continue;
			sent++;
			accepted += submit_text(i, "dag-testnet while down node%d #%d", i, k);
		}
		if (k++ == 10) {
			sent++;
			accepted += transfer_rpc(0, &A, &B, 10, "applied");
		}
		usleep(100000);
	}
	is_int(accepted, sent, "the 3 others accepted all %d transactions while node%d was down", sent, VICTIM);

	/* Restart on the same data directory. */
	ok(restart(VICTIM), "node%d restarted on its data directory", VICTIM);
	accepted = 0;
	for (k = 0; k < 10; k++)
		accepted += submit_text(VICTIM, "dag-testnet after the restart #%d", k);
	is_int(accepted, 10, "the restarted node%d accepts new transactions", VICTIM);
	ok(refused(VICTIM, "tx.submit", json_pack("[{s:s}]", "data", ""), "empty", err, sizeof(err)),
	   "the restarted node%d still refuses bad input", VICTIM);

	/* Everything commits at the others, in the same order... */
	unsigned others = 0xf & ~(1u << VICTIM);
	int bad_outcome, missing = wait_committed(first, ntx, others, 25000, &bad_outcome);
	is_int(missing, 0,
	       "the %d transactions of this phase (10 accepted by node%d before it died) committed on the others",
	       ntx - first, VICTIM);
	is_int(bad_outcome + position_mismatches(first, ntx, others), 0,
	       "with the expected outcomes, at the same positions on the others");
	/* ...and the restarted node catches up to exactly the same log. */
	struct info info[N];
	ok(converge(ntx, 25000, info),
	   "node%d caught up: committed_txs %d on all 4 nodes, not more (nothing delivered twice)", VICTIM, ntx);
	check_agreement("after the crash", ntx, info);
	check_balances("after the crash");
	missing = wait_committed(ntx - 10, ntx, 1u << VICTIM, 5000, &bad_outcome);
	ok(missing == 0 && bad_outcome == 0 && position_mismatches(ntx - 10, ntx, 0xf) == 0,
	   "node%d's tx.status: what it accepted after the restart committed at the same positions", VICTIM);
	diag("node%d after the restart: sync fetches %lld, fetched vertices %lld", VICTIM, info[VICTIM].fetches,
	     info[VICTIM].fetched);

	/* No equivocation: nobody saw two vertices for one slot. */
	int conflicts = 0;
	long long equivocations = 0;
	for (int i = 0; i < N; i++) {
		char *log = xasprintf("%s/weftd.log", dirs[i]);
		int c = tu_file_count(log, "dag.conflict");
		if (c)
			diag("node%d's log has %d dag.conflict lines", i, c);
		conflicts += c;
		equivocations += info[i].equivocations;
		free(log);
	}
	is_int(conflicts, 0, "no weftd.log has a dag.conflict line (no vertex equivocation)");
	is_int(equivocations, 0, "the BRB layer counted no equivocation on any node");
}

/* Crash recovery under group commit (issue 18): one node after another is
 * killed with SIGKILL at a random moment while every node takes
 * transactions, and restarted; every accepted transaction commits
 * everywhere, the logs stay identical, and no dag.conflict or BRB
 * equivocation shows.  (Not a proof of persist-before-send: a mutation
 * that sends before the commit was not caught in a run of this phase.) */
static void phase_random_kills(void)
{
	int first = ntx;
	unsigned seed = (unsigned)now_ms();
	int killed = 0, restarted = 0, accepted = 0, sent = 0;
	for (int round = 0; round < 6; round++) {
		int victim = (int)(rand_r(&seed) % N);
		long until = now_ms() + 100 + (long)(rand_r(&seed) % 400);
		for (int k = 0; now_ms() < until; k++) {
			for (int i = 0; i < N; i++, sent++)
				accepted += submit_text(i, "dag-testnet random kill %d node%d #%d", round, i, k);
			usleep(20000);
		}
		killed += crash(victim);
		usleep((useconds_t)(rand_r(&seed) % 300) * 1000);
		restarted += restart(victim);
		usleep(300000);
	}
	is_int(killed, 6, "6 nodes killed with SIGKILL at random moments under load");
	is_int(restarted, 6, "... each restarted on its data directory");
	ok(accepted > 0 && accepted <= sent, "%d of %d transactions accepted meanwhile",
	   accepted, sent);
	struct info info[N];
	int bad_outcome, missing = wait_committed(first, ntx, 0xf, 30000, &bad_outcome);
	is_int(missing, 0, "every accepted transaction committed on every node");
	ok(converge(ntx, 30000, info), "all 4 nodes at committed_txs %d (nothing twice)", ntx);
	check_agreement("after the random kills", ntx, info);
	int conflicts = 0;
	long long equivocations = 0;
	for (int i = 0; i < N; i++) {
		char *log = xasprintf("%s/weftd.log", dirs[i]);
		conflicts += tu_file_count(log, "dag.conflict");
		equivocations += info[i].equivocations;
		free(log);
	}
	is_int(conflicts, 0, "no dag.conflict in any log");
	is_int(equivocations, 0, "and no BRB equivocation counted anywhere");
}

/* Waits until every node's mempool is empty and its committed round is at
 * least `rounds` past the highest committed round now: whatever was in a
 * mempool or a vertex then has been ordered or never will be. */
static bool drain(int rounds, int timeout_ms, struct info info[N])
{
	long long target = 0;
	for (int i = 0; i < N; i++)
		if (get_info(i, &info[i]) && info[i].committed_round > target)
			target = info[i].committed_round;
	target += rounds;
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		int done = 0;
		for (int i = 0; i < N; i++)
			done += get_info(i, &info[i]) && info[i].mempool_txs == 0 && info[i].committed_round >= target;
		if (done == N)
			return true;
		if (now_ms() > deadline)
			return false;
		usleep(100000);
	}
}

/* tx.status of t at node i: committed at the position recorded for node i. */
static bool status_committed(int i, const struct tx *t)
{
	json_t *st = call(i, "tx.status", json_pack("[{s:s}]", "digest", t->digest));
	bool good = st && strcmp(sget(st, "status"), "committed") == 0 && strcmp(sget(st, "digest"), t->digest) == 0 &&
		    json_integer_value(json_object_get(st, "position")) == t->pos[i];
	if (!good)
		diag("node%d tx.status %.16s: status %s digest %.16s position %lld (want %lld)", i, t->digest,
		     sget(st, "status"), sget(st, "digest"), (long long)json_integer_value(json_object_get(st, "position")),
		     t->pos[i]);
	json_decref(st);
	return good;
}

static void phase_exactly_once(void)
{
	struct info info[N];
	const char *text = "dag-testnet exactly once";
	int bad_outcome;

	/* Committed everywhere, then the node that took it dies and restarts. */
	ok(submit(REVIVED, text, strlen(text)), "tx.submit at node%d of a new transaction", REVIVED);
	struct tx *t = &txs[ntx - 1];
	ok(wait_committed(ntx - 1, ntx, 0xf, 20000, &bad_outcome) == 0 && bad_outcome == 0 &&
		   position_mismatches(ntx - 1, ntx, 0xf) == 0,
	   "it committed on all 4 nodes at one position");
	ok(converge(ntx, 10000, info), "committed_txs %d on every node", ntx);
	ok(crash(REVIVED) && restart(REVIVED), "node%d killed with SIGKILL and restarted", REVIVED);
	ok(status_committed(REVIVED, t),
	   "the restarted node%d's tx.status: committed, at the same position, the digest in hex", REVIVED);
	json_t *r = call(REVIVED, "tx.submit", json_pack("[{s:o}]", "data", bytes_json(text, strlen(text))));
	ok(r && json_is_true(json_object_get(r, "duplicate")) && strcmp(sget(r, "digest"), t->digest) == 0,
	   "the same bytes resubmitted to the restarted node%d: duplicate true", REVIVED);
	json_decref(r);
	r = call(2, "tx.submit", json_pack("[{s:o}]", "data", bytes_json(text, strlen(text))));
	ok(r && json_is_true(json_object_get(r, "duplicate")), "... and to node2: duplicate true");
	json_decref(r);

	/* One transaction at two nodes at once: both take it into their
	 * mempools (the second may already know it committed). */
	const char *twice = "dag-testnet submitted to two nodes";
	ok(submit(0, twice, strlen(twice)), "tx.submit of a new transaction at node0");
	r = call(2, "tx.submit", json_pack("[{s:o}]", "data", bytes_json(twice, strlen(twice))));
	ok(r && strcmp(sget(r, "digest"), txs[ntx - 1].digest) == 0, "the same bytes at node2 right after: accepted");
	json_decref(r);
	ok(wait_committed(ntx - 1, ntx, 0xf, 20000, &bad_outcome) == 0 && position_mismatches(ntx - 1, ntx, 0xf) == 0,
	   "it committed on all 4 nodes at one position");

	/* Let every mempool drain and 20 more rounds commit: nothing more. */
	ok(drain(20, 30000, info), "every mempool empty and 20 more rounds committed");
	ok(converge(ntx, 10000, info), "committed_txs %d on every node: each transaction ordered once", ntx);
	check_agreement("exactly once", ntx, info);
	for (int i = 0; i < N; i++)
		diag("node%d duplicates_skipped %lld", i, info[i].duplicates_skipped);
}

/* One node replays the simulator's DAG adversary (weftd --byzantine
 * bad_refs: the protocol's registered strategy); the honest nodes keep
 * committing and agreeing.  An unknown strategy is refused at start. */
static void phase_byzantine(void)
{
	struct info info[N];
	int bad_outcome;
	const int byz = 3;
	ok(crash(byz), "node%d stopped to come back Byzantine", byz);
	const char *const wrong[] = {"--byzantine", "no_such_strategy", NULL};
	char *errpath = xasprintf("%s.stderr", dirs[byz]);
	pid_t p = tu_weftd_start(dirs[byz], wrong);
	ok(p <= 0 && tu_file_count(errpath, "registers no strategy 'no_such_strategy' (it has: bad_refs") > 0,
	   "weftd --byzantine no_such_strategy: refused, naming the protocol's strategies");
	if (p > 0)
		tu_weftd_stop(p, 5000);
	free(errpath);
	const char *const extra[] = {"--byzantine", "bad_refs", NULL};
	pids[byz] = tu_weftd_start(dirs[byz], extra);
	ok(pids[byz] > 0, "node%d restarted with --byzantine bad_refs (the simulator's adversary strategy)", byz);
	json_t *pi = call(byz, "proto.info", json_pack("[]"));
	ok(pi && strcmp(sget(pi, "protocol"), "node/bad_refs") == 0, "proto.info names the strategy's ops (%s)",
	   sget(pi, "protocol"));
	json_decref(pi);
	int first = ntx;
	for (int k = 0; k < 8; k++)
		submit_text(k % N, "under bad_refs %d", k);
	/* Safety is asserted; liveness only reported: in about 1 run of 5 the
	 * committee stalls for over 30 s after the restart into bad_refs (a
	 * known liveness gap under a Byzantine node, issue 13). */
	int missing = wait_committed(first, ntx, 0xf, 30000, &bad_outcome);
	int mismatched = position_mismatches(first, ntx, 0xf);
	is_int(mismatched, 0, "no transaction at different positions on two nodes");
	diag("with a bad_refs node: %d of 8 new transactions not committed everywhere within 30 s", missing);
	for (int i = 0; i < N; i++)
		get_info(i, &info[i]);
	int pairs = 0, forks = 0;
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			if (info[i].committed_txs == info[j].committed_txs) {
				pairs++;
				forks += strcmp(info[i].order_hash, info[j].order_hash) != 0 ||
					 strcmp(info[i].ledger_hash, info[j].ledger_hash) != 0;
			}
	ok(forks == 0,
	   "with a bad_refs node: nodes at the same committed_txs have the same order and ledger hashes (%d pairs)",
	   pairs);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		abort();
	cli_bin = tu_bin("weft-cli");
	if (access(cli_bin, X_OK) != 0)
		skip_all("weft-cli not built (set WEFT_BIN)");
	long t0 = now_ms();
	tmp = tu_tmpdir("dagnet");
	keygen(&A, "A", 1000);
	keygen(&B, "B", 500);
	if (!ok(start_committee(), "genesis (protocol dag, A and B funded) and 4 daemons started")) {
		tu_rmtree(tmp);
		return done_testing();
	}
	ok(wait_first_commit(15000), "every node committed a first anchor (dag.info committed_round)");

	phase_submit();
	phase_commit();
	phase_crash();
	phase_random_kills();
	phase_exactly_once();
	phase_byzantine();

	int stopped = 0;
	for (int i = 0; i < N; i++) {
		weft_rpc_client_close(conns[i]);
		stopped += pids[i] > 0 && tu_weftd_stop(pids[i], 10000) == 0;
	}
	is_int(stopped, N, "the 4 daemons stop cleanly on SIGTERM");
	diag("dag_testnet ran %.1f s", (now_ms() - t0) / 1000.0);
	tu_rmtree(tmp);
	for (int i = 0; i < N; i++)
		free(dirs[i]), free(socks[i]);
	free(tmp), free(net), free(cli_bin);
	return done_testing();
}
