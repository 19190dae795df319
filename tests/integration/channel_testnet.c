/* channel_testnet.c - payment channels end to end on a real committee of 4
 * weftd (genesis --protocol dag, n = 4, chain id chan-net, one funded
 * genesis account; params channel_challenge = 6 heights, channel_root_ms =
 * 200, channel_pay_timeout_ms = 5000), driven over RPC as a user would:
 * wallet.new on nodes 0, 1 and 2 (member m is hosted by node m), funded
 * with ledger.transfer through weft-cli, node3 hosting no member.
 *
 *   1. channel.open of a 3-member channel on node0 (members HEX, HEX@1,
 *      HEX@2) answers "open" once the ledger executed it: the deposits
 *      left the wallets and are locked; channel.list shows it on a
 *      member's node, not on node3.  Six payments, one in every
 *      direction, each finalized; after a root (root.version advanced,
 *      unrooted 0, nothing in flight) the three nodes' channel.info agree
 *      on every balance, close_now equals the expected balances and sums
 *      to the deposits.
 *   2. Bad input is refused with a clear error and nothing moves:
 *      channel.pay overspending, of 0, to itself, on an unknown or
 *      malformed channel id, on a node hosting no member, to a member out
 *      of range or not in the channel, from a member hosted elsewhere;
 *      channel.open with 1 member, a member twice, a bad key, a deposit
 *      of 0, an unknown node in HEX@NODE, no member hosted here, and a
 *      member with no funds (the ledger refuses it: insufficient_funds).
 *      Every node keeps serving and a payment afterwards is finalized.
 *   3. SIGKILL in the middle of payments, each node restarted after:
 *      a. a payment 1 -> 2 started with wait=false, node2 (the
 *         receiver's) killed at once;
 *      b. a payment 1 -> 0 started with wait=false, node1 (the payer's)
 *         killed at once;
 *      c. a payment 1 -> 2 answered finalized, node1 killed right after,
 *         before its FINAL reached node0 (the window is made certain by
 *         dropping node1's messages to node0 with fault.set).
 *      Then (channel.root asked on node0, the opener's) a root covers
 *      every payment and the three nodes agree, each of the three is
 *      counted once or not at all and the same everywhere, c counted,
 *      the deposits conserved; and payments work again after the
 *      restarts, a root covering them.
 *   4. channel.close (cooperative) on node1: the ledger shows the channel
 *      closed, channel.info too on every member's node, and every
 *      wallet's ledger balance (ledger.balance on every node, wallet.list
 *      on the member's) is its funding - deposit + close_now.
 *   5. A second channel, payments and a root; node2 restarted with
 *      --byzantine channel_stale closes it unilaterally (force=true) and
 *      posts root 0.  The honest members' nodes dispute on their own with
 *      the newest root (channel.event commit 0, then dispute; channel.info
 *      ledger.version becomes the newest root's), opaque transactions
 *      (tx.submit) burn the challenge period, the channel is settled and
 *      the wallets are paid the newest root, not root 0.
 *   6. A payment through a member of two channels: P (A0, A1@1) and Q
 *      (A1, A2@2); channel.invoice on node2 for A2; channel.pay on node0
 *      with the invoice's hash and route Q:A2 answers "unlocked", both
 *      legs moved on every member's node.  Refused with nothing moved: a
 *      malformed hash, a route without a hash, a malformed hop, a hash
 *      A1 has no invoice for (unknown_hash), one A2 has none for (the
 *      lock in Q refused, the one in P refunded), a lock beyond the
 *      balance.  Then node0 restarted with --byzantine channel_withhold
 *      pays 10 the same way and never unlocks: A2 is paid in Q, node1
 *      closes P on its own and claims the lock on the ledger, and P
 *      settles with the lock paid to A1.
 *   7. Atomic service channels: weft-service on node1 sells "upper" (tr);
 *      asc.open on node0 (A0 client, A1@1 provider); three paid requests
 *      answer the upper-cased payload; bad input refused with nothing
 *      paid (an unknown service, a price above the balance or of 0, a
 *      node with no client of the channel, a malformed provider, a
 *      response to no request); SIGKILL of the client's node right after
 *      a request (the round resumes once); SIGKILL of the provider's
 *      node while its service ("sleep 2; cat") works (nothing paid, the
 *      channel serves again after); a cooperative close pays the ledger
 *      exactly.
 *   8. Service channels on the ledger: a channel nobody uses expires and
 *      node0 refunds it on its own (opaque transactions burn the
 *      heights); a --byzantine channel_withhold provider claims instead of
 *      revealing, and the client decrypts with t read in the claim; a
 *      client whose node dies after a paid request: the provider's node
 *      claims before the expiry; the ledger conserves every unit.
 *
 * At the end every node stops cleanly, the error lines of the logs are
 * shown, and no daemon wrote a sanitizer report (WEFT_BIN=build-san/bin).
 * Ports come from tu_port_base.  The whole test takes about 7 s. */
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/err.h"
#include "weft/rpc_client.h"

#define N 4              /* committee nodes */
#define M 3              /* channel members: member m hosted by node m */
#define FUND 10000       /* each wallet's ledger funding */
#define CHALLENGE 6      /* params.channel_challenge */
#define RPC_MS 15000

static char *tmp, *cli_bin, *fund_key;
static char *dirs[N], *socks[N];
static pid_t pids[N];
static struct weft_rpc_client *conns[N];
static char accounts[M + 1][65]; /* accounts[M]: an unfunded wallet on node3 */
static long long ledger_want[M];  /* each wallet's expected ledger balance */
static long t_start;

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

static double secs(void)
{
	return (now_ms() - t_start) / 1000.0;
}

/* ---- RPC ---- */

/* Calls method on node i over a kept connection (reconnecting once when it
 * died, e.g. across a restart); params (may be NULL) is consumed.  The
 * result, or NULL with the daemon's error message (or the client's
 * failure) in err. */
static json_t *rpc(int i, const char *method, json_t *params, char *err, size_t errlen)
{
	json_t *res = NULL, *e = NULL;
	snprintf(err, errlen, "no reply");
	for (int attempt = 0; attempt < 2 && !res && !e; attempt++) {
		if (conns[i] == NULL && weft_rpc_client_connect(&conns[i], socks[i], 2000, NULL) != 0) {
			snprintf(err, errlen, "cannot connect to %s", socks[i]);
			continue;
		}
		int rc = weft_rpc_client_call(conns[i], method, params, RPC_MS, &res, &e);
		if (rc != 0) {
			snprintf(err, errlen, "%s: %s", weft_strerror(rc), weft_rpc_client_errmsg(conns[i]));
			weft_rpc_client_close(conns[i]);
			conns[i] = NULL;
			if (rc == WEFT_ETIMEDOUT)
				break;
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

/* A call expected to succeed: the result, or NULL and a diagnostic. */
static json_t *call(int i, const char *method, json_t *params)
{
	char err[512];
	json_t *res = rpc(i, method, params, err, sizeof(err));
	if (!res)
		diag("node%d %s: %s", i, method, err);
	return res;
}

/* A call expected to fail: true when the daemon answered an error whose
 * message contains needle (the message in err). */
static bool refused(int i, const char *method, json_t *params, const char *needle, char *err, size_t errlen)
{
	json_t *res = rpc(i, method, params, err, errlen);
	bool good = res == NULL && strstr(err, needle) != NULL && strncmp(err, "no reply", 8) != 0 &&
		    strncmp(err, "cannot connect", 14) != 0;
	if (!good) {
		char *s = res ? json_dumps(res, JSON_COMPACT) : NULL;
		diag("node%d %s: expected an error with '%s', got %s", i, method, needle, s ? s : err);
		free(s);
	}
	json_decref(res);
	return good;
}

static const char *sget(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static long long iget(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static bool serving(int i)
{
	json_t *s = call(i, "status", NULL);
	bool good = json_is_object(s);
	json_decref(s);
	return good;
}

static long long ledger_balance(int i, const char *account)
{
	json_t *r = call(i, "ledger.balance", json_pack("[{s:s}]", "account", account));
	long long b = iget(r, "balance");
	json_decref(r);
	return b;
}

static long long ledger_height(int i)
{
	json_t *r = call(i, "dag.info", NULL);
	long long h = iget(r, "ledger_height");
	json_decref(r);
	return h;
}

/* ledger.channel of id on node i: its status ("" when unknown), the
 * posted version (-1 unless closing) and what it locks. */
struct ledger_chan {
	char status[16];
	long long posted, locked, members;
};

static struct ledger_chan ledger_channel(int i, const char *id)
{
	struct ledger_chan lc;
	json_t *r = call(i, "ledger.channel", json_pack("[{s:s}]", "id", id));
	snprintf(lc.status, sizeof(lc.status), "%s", sget(r, "status"));
	lc.posted = iget(r, "posted_version");
	lc.locked = iget(r, "locked");
	lc.members = (long long)json_array_size(json_object_get(r, "members"));
	json_decref(r);
	return lc;
}

/* Waits until every node's ledger.channel of id has status (and, when
 * posted >= 0, that posted version): the nodes execute the same
 * transactions a moment apart. */
static bool wait_ledger_channel(const char *id, const char *status, long long posted, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	struct ledger_chan lc = {.posted = -1};
	for (;;) {
		int good = 0;
		for (int i = 0; i < N; i++) {
			lc = ledger_channel(i, id);
			good += strcmp(lc.status, status) == 0 && (posted < 0 || lc.posted == posted);
		}
		if (good == N)
			return true;
		if (now_ms() > deadline) {
			diag("ledger.channel of %.16s...: %s, posted %lld (want %s, %lld)", id, lc.status, lc.posted,
			     status, posted);
			return false;
		}
		usleep(50000);
	}
}

/* ---- the committee ---- */

static bool cli(char *const argv[], char **out)
{
	struct tu_run r;
	tu_run(&r, argv, 20000, -1);
	bool good = r.status == 0;
	if (!good)
		diag("%s %s: exit %d: %s", argv[0], argv[1], r.status, r.err);
	if (out)
		*out = good ? xasprintf("%s", r.out) : NULL;
	tu_run_free(&r);
	return good;
}

static bool start(int i, const char *const *extra)
{
	pids[i] = tu_weftd_start(dirs[i], extra);
	return pids[i] > 0;
}

static void drop_conn(int i)
{
	weft_rpc_client_close(conns[i]);
	conns[i] = NULL;
}

static bool stop(int i)
{
	drop_conn(i);
	int st = tu_weftd_stop(pids[i], 10000);
	pids[i] = -1;
	return st == 0;
}

/* SIGKILL: true when it died of it. */
static bool crash(int i)
{
	int st = -1;
	if (pids[i] > 0 && kill(pids[i], SIGKILL) == 0)
		st = tu_wait(pids[i], 5000);
	pids[i] = -1;
	drop_conn(i);
	return st == 128 + SIGKILL;
}

/* Every running node has its n - 1 peers connected. */
static bool wait_connected(int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		int good = 0, running = 0;
		for (int i = 0; i < N; i++) {
			if (pids[i] <= 0)
				continue;
			running++;
			json_t *s = call(i, "status", NULL);
			good += iget(json_object_get(s, "peers"), "connected") == N - 1;
			json_decref(s);
		}
		if (good == running)
			return true;
		usleep(50000);
	}
	return false;
}

/* A fresh ledger key (weft-cli ledger-keygen), the genesis with it funded
 * and the channel params, 4 daemons connected. */
static bool start_committee(void)
{
	char *funder = NULL, *out = NULL;
	fund_key = tu_path(tmp, "fund.key");
	char *keygen[] = {cli_bin, "ledger-keygen", "--out", fund_key, NULL};
	if (!cli(keygen, &out))
		return false;
	json_t *j = json_loads(out, 0, NULL);
	funder = xasprintf("%s=%d", sget(j, "account"), 10 * FUND);
	json_decref(j);
	free(out);
	int base = tu_port_base(N);
	char port[16], challenge[64];
	snprintf(port, sizeof(port), "%d", base);
	snprintf(challenge, sizeof(challenge), "channel_challenge=%d", CHALLENGE);
	char *net = tu_path(tmp, "net");
	char *genesis[] = {cli_bin,	"genesis",	"--nodes",	"4",	     "--out",
			   net,		"--base-port",	port,		"--protocol", "dag",
			   "--chain-id", "chan-net",	"--force",	"--fund",     funder,
			   "--param",	challenge,	"--param",	"channel_root_ms=200", "--param",
			   "channel_pay_timeout_ms=5000", NULL};
	bool good = base > 0 && cli(genesis, NULL);
	for (int i = 0; i < N; i++) {
		dirs[i] = xasprintf("%s/node%d", net, i);
		socks[i] = xasprintf("%s/rpc.sock", dirs[i]);
	}
	free(net);
	free(funder);
	int started = 0;
	for (int i = 0; good && i < N; i++)
		started += start(i, NULL);
	return good && started == N && wait_connected(10000);
}

/* ---- channels ---- */

/* What node i's channel.info says of a channel. */
struct view {
	bool ok;
	char status[16], ledger_status[16];
	long long version, root_payments, applied, unrooted, inflight, ledger_version;
	long long balance[M], close_now[M], sent[M], np[M];
};

static bool view_of(int i, const char *id, struct view *v)
{
	memset(v, 0, sizeof(*v));
	json_t *r = call(i, "channel.info", json_pack("[{s:s}]", "channel", id));
	json_t *members = json_object_get(r, "members"), *root = json_object_get(r, "root");
	json_t *ledger = json_object_get(r, "ledger");
	v->ok = r && json_array_size(members) == M;
	snprintf(v->status, sizeof(v->status), "%s", sget(r, "status"));
	snprintf(v->ledger_status, sizeof(v->ledger_status), "%s", sget(ledger, "status"));
	v->version = iget(root, "version");
	v->root_payments = iget(root, "payments");
	v->applied = iget(r, "payments");
	v->unrooted = iget(r, "unrooted");
	v->inflight = (long long)json_array_size(json_object_get(r, "in_flight"));
	v->ledger_version = iget(ledger, "version");
	for (int m = 0; m < M && v->ok; m++) {
		json_t *x = json_array_get(members, (size_t)m);
		v->balance[m] = iget(x, "balance");
		v->close_now[m] = iget(x, "close_now");
		v->sent[m] = iget(x, "sent");
		v->np[m] = iget(x, "payments");
	}
	json_decref(r);
	return v->ok;
}

static void view_diag(int i, const struct view *v)
{
	diag("node%d: %s, root v%lld (%lld payments), %lld applied, %lld unrooted, %lld in flight, balances %lld %lld "
	     "%lld, close_now %lld %lld %lld, ledger %s v%lld",
	     i, v->status, v->version, v->root_payments, v->applied, v->unrooted, v->inflight, v->balance[0],
	     v->balance[1], v->balance[2], v->close_now[0], v->close_now[1], v->close_now[2], v->ledger_status,
	     v->ledger_version);
}

static bool same_view(const struct view *a, const struct view *b)
{
	bool same = a->version == b->version && a->applied == b->applied;
	for (int m = 0; m < M; m++)
		same &= a->balance[m] == b->balance[m] && a->close_now[m] == b->close_now[m] && a->np[m] == b->np[m] &&
			a->sent[m] == b->sent[m];
	return same;
}

/* Waits until the three members' nodes hold a root of version >= min_version
 * covering every payment they hold (unrooted 0, nothing in flight), at least
 * min_applied payments, and agree on it; v[] is each node's last view. */
static bool wait_rooted(const char *id, long long min_version, long long min_applied, int timeout_ms,
			struct view v[M])
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		bool good = true;
		for (int i = 0; i < M; i++) {
			good &= view_of(i, id, &v[i]) && v[i].version >= min_version && v[i].unrooted == 0 &&
				v[i].inflight == 0 && v[i].applied >= min_applied && v[i].root_payments == v[i].applied;
			good &= same_view(&v[i], &v[0]);
		}
		if (good)
			return true;
		if (now_ms() > deadline) {
			for (int i = 0; i < M; i++)
				view_diag(i, &v[i]);
			return false;
		}
		usleep(50000);
	}
}

static long long sum(const long long *a)
{
	long long t = 0;
	for (int m = 0; m < M; m++)
		t += a[m];
	return t;
}

static bool equal(const long long *a, const long long *b)
{
	return memcmp(a, b, sizeof(long long) * M) == 0;
}

/* channel.pay on node `node` (from: the member it hosts) to member `to`;
 * true when finalized with those fields, then applied to want[]. */
static bool pay(int node, const char *id, int to, long long amount, long long want[M])
{
	long t0 = now_ms();
	json_t *r = call(node, "channel.pay", json_pack("[{s:s,s:i,s:I}]", "channel", id, "to", to, "amount", amount));
	bool good = r && strcmp(sget(r, "status"), "finalized") == 0 && iget(r, "from") == node && iget(r, "to") == to &&
		    iget(r, "amount") == amount && iget(r, "seq") >= 1;
	ok(good, "channel.pay on node%d: %d -> %d, %lld: finalized (seq %lld, %ld ms)", node, node, to, amount,
	   iget(r, "seq"), now_ms() - t0);
	json_decref(r);
	if (good)
		want[node] -= amount, want[to] += amount;
	return good;
}

/* channel.open of the three wallets on node0; the channel id in id, or
 * false. */
static bool open_channel(const long long deposit[M], char id[65])
{
	long t0 = now_ms();
	json_t *members = json_array(), *deposits = json_array();
	for (int m = 0; m < M; m++) {
		char *s = m == 0 ? xasprintf("%s", accounts[m]) : xasprintf("%s@%d", accounts[m], m);
		json_array_append_new(members, json_string(s));
		json_array_append_new(deposits, json_integer(deposit[m]));
		free(s);
	}
	json_t *r = call(0, "channel.open", json_pack("[{s:o,s:o}]", "members", members, "deposits", deposits));
	snprintf(id, 65, "%s", sget(r, "channel"));
	bool good = r && strlen(id) == 64 && strcmp(sget(r, "status"), "open") == 0;
	ok(good, "channel.open on node0 of A0, A1@1, A2@2 (%lld / %lld / %lld): open (%.16s..., %ld ms)", deposit[0],
	   deposit[1], deposit[2], id, now_ms() - t0);
	json_decref(r);
	if (!good) {
		id[0] = '\0';
		return false;
	}
	for (int m = 0; m < M; m++)
		ledger_want[m] -= deposit[m];
	bool everywhere = wait_ledger_channel(id, "open", -1, 5000);
	struct ledger_chan lc = ledger_channel(3, id);
	ok(everywhere && lc.locked == sum(deposit) && lc.members == M,
	   "ledger.channel on every node: open; on node3 %lld locked (want %lld), %lld members", lc.locked,
	   sum(deposit), lc.members);
	return true;
}

/* Each wallet's ledger balance on every node equals ledger_want (polled:
 * the nodes execute the same transactions a moment apart). */
static bool ledger_balances_are(int timeout_ms, long long got[M])
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		bool good = true;
		for (int i = 0; i < N; i++)
			for (int m = 0; m < M; m++) {
				long long b = ledger_balance(i, accounts[m]);
				if (i == 0)
					got[m] = b;
				good &= b == ledger_want[m];
			}
		if (good || now_ms() > deadline)
			return good;
		usleep(50000);
	}
}

/* wallet.list on each member's node agrees with ledger_want (its wallet
 * 0 is member m); the balances seen in got. */
static bool wallet_lists_agree(long long got[M])
{
	bool good = true;
	for (int m = 0; m < M; m++) {
		json_t *r = call(m, "wallet.list", NULL);
		json_t *w = json_array_get(json_object_get(r, "wallets"), 0);
		got[m] = iget(json_object_get(w, "ledger"), "balance");
		good &= strcmp(sget(w, "account"), accounts[m]) == 0 && got[m] == ledger_want[m];
		json_decref(r);
	}
	return good;
}

/* Waits until channel.info of id on nodes 0, 1, 2 says status, and the
 * ledger's status lstatus. */
static bool wait_info_status(const char *id, const char *status, const char *lstatus, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	struct view v;
	for (;;) {
		int good = 0;
		for (int i = 0; i < M; i++)
			good += view_of(i, id, &v) && strcmp(v.status, status) == 0 &&
				strcmp(v.ledger_status, lstatus) == 0;
		if (good == M)
			return true;
		if (now_ms() > deadline) {
			view_diag(M - 1, &v);
			return false;
		}
		usleep(50000);
	}
}

/* ---- phase 1: wallets, open, payments in every direction, a root ---- */

static const long long dep1[M] = {1000, 800, 600};
static char chan1[65];
static long long want1[M]; /* channel 1's balances as the finalized payments left them */
static long long version1;

static void phase_open_pay(void)
{
	for (int m = 0; m <= M; m++) {
		int node = m < M ? m : 3;
		json_t *r = call(node, "wallet.new", NULL);
		snprintf(accounts[m], sizeof(accounts[m]), "%s", sget(r, "account"));
		ok(r && strlen(accounts[m]) == 64 && iget(r, "index") == 0, "wallet.new on node%d: account %.16s...",
		   node, accounts[m]);
		json_decref(r);
	}
	/* ledger.transfer through weft-cli; nonces given: the three are in
	 * flight together. */
	int sent = 0;
	for (int m = 0; m < M; m++) {
		char *to = xasprintf("to=%s", accounts[m]), *amount = xasprintf("amount=%d", FUND),
		     *key = xasprintf("key=%s", fund_key), *nonce = xasprintf("nonce=%d", m);
		char *argv[] = {cli_bin, "--datadir", dirs[0], "ledger.transfer", to, amount, key, nonce, NULL};
		sent += cli(argv, NULL);
		free(to), free(amount), free(key), free(nonce);
		ledger_want[m] = FUND;
	}
	long long got[M] = {0};
	long t0 = now_ms();
	bool funded = sent == M && ledger_balances_are(10000, got);
	ok(funded,
	   "weft-cli ledger.transfer funds the three wallets: %lld %lld %lld on every node (%ld ms)", got[0], got[1],
	   got[2], now_ms() - t0);
	json_t *w = call(1, "wallet.list", NULL);
	json_t *w0 = json_array_get(json_object_get(w, "wallets"), 0);
	ok(iget(w, "node") == 1 && strcmp(sget(w0, "account"), accounts[1]) == 0 &&
		   iget(json_object_get(w0, "ledger"), "balance") == FUND,
	   "wallet.list on node1 shows its wallet with ledger balance %lld",
	   iget(json_object_get(w0, "ledger"), "balance"));
	json_decref(w);

	if (!open_channel(dep1, chan1))
		return;
	bool left = ledger_balances_are(5000, got);
	ok(left, "the deposits left the wallets: %lld %lld %lld", got[0], got[1], got[2]);
	memcpy(want1, dep1, sizeof(want1));
	json_t *l = call(1, "channel.list", NULL), *c0 = json_array_get(json_object_get(l, "channels"), 0);
	json_t *hosted = json_object_get(c0, "hosted");
	ok(json_array_size(json_object_get(l, "channels")) == 1 && strcmp(sget(c0, "channel"), chan1) == 0 &&
		   strcmp(sget(c0, "status"), "open") == 0 && iget(c0, "members") == M && json_array_size(hosted) == 1 &&
		   json_integer_value(json_array_get(hosted, 0)) == 1,
	   "channel.list on node1: the channel, open, 3 members, hosting member 1");
	json_decref(l);
	l = call(3, "channel.list", NULL);
	ok(l && json_array_size(json_object_get(l, "channels")) == 0, "channel.list on node3 (no member): empty");
	json_decref(l);
	struct view v[M] = {0};
	ok(wait_rooted(chan1, 0, 0, 5000, v) && v[0].version == 0 && equal(v[0].close_now, dep1),
	   "channel.info on nodes 0, 1, 2: root 0, close_now the deposits");

	pay(0, chan1, 1, 100, want1);
	pay(1, chan1, 2, 70, want1);
	pay(2, chan1, 0, 40, want1);
	pay(1, chan1, 0, 25, want1);
	pay(2, chan1, 1, 15, want1);
	/* 0 -> 2 with from and to given as accounts. */
	json_t *r = call(0, "channel.pay", json_pack("[{s:s,s:s,s:s,s:i}]", "channel", chan1, "from", accounts[0], "to",
						     accounts[2], "amount", 60));
	bool good = r && strcmp(sget(r, "status"), "finalized") == 0 && iget(r, "from") == 0 && iget(r, "to") == 2;
	ok(good, "channel.pay on node0 from=ACCOUNT0 to=ACCOUNT2 amount=60: finalized as 0 -> 2");
	json_decref(r);
	if (good)
		want1[0] -= 60, want1[2] += 60;

	t0 = now_ms();
	bool rooted = wait_rooted(chan1, 1, 6, 5000, v);
	ok(rooted, "a root covers the 6 payments on nodes 0, 1, 2: version %lld, unrooted 0 (%ld ms)", v[0].version,
	   now_ms() - t0);
	for (int i = 0; i < M; i++)
		ok(equal(v[i].balance, want1) && equal(v[i].close_now, want1),
		   "node%d: balances and close_now %lld %lld %lld (want %lld %lld %lld)", i, v[i].close_now[0],
		   v[i].close_now[1], v[i].close_now[2], want1[0], want1[1], want1[2]);
	ok(sum(v[0].close_now) == sum(dep1), "sum of close_now %lld == the deposits %lld", sum(v[0].close_now),
	   sum(dep1));
	version1 = v[0].version;
	diag("phase 1 done at %.1f s", secs());
}

/* ---- phase 2: bad input ---- */

static void phase_bad_input(void)
{
	char err[512];
	const char *unknown = "abababababababababababababababababababababababababababababababab";
	char short_id[64];
	memcpy(short_id, chan1, 63); /* 63 of its 64 digits */
	short_id[63] = '\0';
	struct view before, after;
	view_of(0, chan1, &before);
	struct {
		int node;
		const char *method;
		json_t *params;
		const char *needle, *what;
	} cases[] = {
		{0, "channel.pay", json_pack("[{s:s,s:i,s:I}]", "channel", chan1, "to", 1, "amount", want1[0] + 1),
		 "insufficient channel balance", "an amount above member 0's balance"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", chan1, "to", 1, "amount", 0),
		 "amount at least 1", "amount 0"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", chan1, "to", 0, "amount", 5), "two members",
		 "to == from"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", unknown, "to", 1, "amount", 5),
		 "no such channel here", "an unknown channel id"},
		{3, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", chan1, "to", 1, "amount", 5),
		 "no such channel here", "the channel on node3, which hosts no member"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", "xyz", "to", 1, "amount", 5),
		 "channel: 64 hex digits", "a malformed channel id (xyz)"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", short_id, "to", 1, "amount", 5),
		 "channel: 64 hex digits", "a channel id of 63 hex digits"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", chan1, "to", 7, "amount", 5),
		 "a member's index or account", "member index 7 of 3"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", chan1, "to", 300, "amount", 5),
		 "a member's index or 64-hex-digit account", "member index 300 (beyond any channel)"},
		{0, "channel.pay", json_pack("[{s:s,s:s,s:i}]", "channel", chan1, "to", accounts[M], "amount", 5),
		 "a member's index or account", "to an account not in the channel"},
		{0, "channel.pay", json_pack("[{s:s,s:i,s:i,s:i}]", "channel", chan1, "from", 1, "to", 2, "amount", 5),
		 "not hosted by this node", "from member 1 on node0 (hosted by node1)"},
		{0, "channel.info", json_pack("[{s:s}]", "channel", unknown), "no such channel here",
		 "channel.info of an unknown channel"},
		{0, "channel.open", json_pack("[{s:[s],s:[i]}]", "members", accounts[0], "deposits", 5),
		 "an array of 2 to", "channel.open with 1 member"},
		{0, "channel.open",
		 json_pack("[{s:[s,s],s:[i,i]}]", "members", accounts[0], accounts[0], "deposits", 5, 5),
		 "a member appears twice", "channel.open with a member twice"},
		{0, "channel.open",
		 json_pack("[{s:[s,s],s:[i,i]}]", "members", accounts[0],
			   "0000000000000000000000000000000000000000000000000000000000000000", "deposits", 5, 5),
		 "not a valid x-only public key", "channel.open with a bad key (zeros)"},
		{0, "channel.open", json_pack("[{s:[s,s],s:[i,i]}]", "members", accounts[0], "xyz", "deposits", 5, 5),
		 "64 hex digits", "channel.open with a member 'xyz'"},
		{0, "channel.open",
		 json_pack("[{s:[s,s],s:[i,i]}]", "members", accounts[0], accounts[1], "deposits", 0, 5),
		 "at least 1", "channel.open with a deposit of 0"},
		{0, "channel.open", json_pack("[{s:[s,s],s:[i]}]", "members", accounts[0], accounts[1], "deposits", 5),
		 "one amount per member", "channel.open with one deposit for two members"},
		{0, "channel.open",
		 json_pack("[{s:[s,s+],s:[i,i]}]", "members", accounts[0], accounts[1], "@9", "deposits", 5, 5),
		 "NODE is not a committee index", "channel.open with HEX@9 (4 nodes)"},
		{0, "channel.open",
		 json_pack("[{s:[s+,s+],s:[i,i]}]", "members", accounts[1], "@1", accounts[2], "@2", "deposits", 5, 5),
		 "no member is hosted by this node", "channel.open on node0 of members hosted by nodes 1 and 2"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		long t0 = now_ms();
		bool good = refused(cases[k].node, cases[k].method, cases[k].params, cases[k].needle, err, sizeof(err));
		ok(good && now_ms() - t0 < 5000, "%s on node%d, %s: refused at once (%s)", cases[k].method, cases[k].node,
		   cases[k].what, err);
	}

	/* A member with no funds: the ledger refuses the open. */
	long long a0 = ledger_balance(0, accounts[0]);
	char *unfunded = xasprintf("%s@3", accounts[M]);
	long t0 = now_ms();
	bool good = refused(0, "channel.open",
			    json_pack("[{s:[s,s],s:[i,i]}]", "members", accounts[0], unfunded, "deposits", 5, 5),
			    "insufficient_funds", err, sizeof(err));
	ok(good && strstr(err, "refused") != NULL,
	   "channel.open with an unfunded member on node3: the ledger refuses it (%s, %ld ms)", err, now_ms() - t0);
	free(unfunded);
	ok(ledger_balance(0, accounts[0]) == a0, "... and member 0's ledger balance is untouched (%lld)", a0);

	int up = 0;
	for (int i = 0; i < N; i++)
		up += serving(i);
	is_int(up, N, "every node keeps serving");
	view_of(0, chan1, &after);
	ok(same_view(&before, &after) && after.inflight == 0, "channel 1 on node0 is untouched: %lld payments, nothing "
								  "in flight",
	   after.applied);
	pay(0, chan1, 2, 5, want1);
	diag("phase 2 done at %.1f s", secs());
}

/* ---- phase 3: SIGKILL in the middle of payments ---- */

/* Starts a payment with wait=false: true with its seq when it was taken. */
static bool pay_nowait(int node, int to, long long amount, long long *seq)
{
	json_t *r = call(node, "channel.pay",
			 json_pack("[{s:s,s:i,s:I,s:b}]", "channel", chan1, "to", to, "amount", amount, "wait", 0));
	*seq = iget(r, "seq");
	bool good = r && *seq >= 1 && iget(r, "from") == node;
	json_decref(r);
	return good;
}

/* Waits until node i has no payment in flight on channel 1. */
static bool settle_inflight(int i, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	struct view v;
	while (now_ms() < deadline) {
		if (view_of(i, chan1, &v) && v.inflight == 0)
			return true;
		usleep(50000);
	}
	return false;
}

/* Member 1's payments whose fate a kill leaves open. */
static const struct {
	int to;
	long long amount;
	const char *what;
} doubt[3] = {
	{2, 33, "a (1 -> 2, the receiver's node killed at once)"},
	{0, 44, "b (1 -> 0, the payer's node killed at once)"},
	{2, 55, "c (1 -> 2, finalized, the payer's node killed before its FINAL reached node0)"},
};

/* Which of the doubtful payments member 1's extra sent amount is made of
 * (the subset sums are distinct): a bit mask, or -1 when none adds up. */
static int doubt_mask(long long delta)
{
	for (int mask = 0; mask < 8; mask++) {
		long long t = 0;
		for (int k = 0; k < 3; k++)
			t += mask & (1 << k) ? doubt[k].amount : 0;
		if (t == delta)
			return mask;
	}
	return -1;
}

static int popcount3(int mask)
{
	return (mask & 1) + (mask >> 1 & 1) + (mask >> 2 & 1);
}

static void phase_crash(void)
{
	struct view v0[M] = {0}, v[M] = {0}, mid;
	bool agree = wait_rooted(chan1, version1, 0, 5000, v0);
	ok(agree, "before the kills: the three nodes agree (root v%lld)", v0[0].version);

	/* a: the receiver's node killed at once. */
	long long seq = -1;
	long t0 = now_ms();
	bool started = pay_nowait(1, doubt[0].to, doubt[0].amount, &seq);
	ok(started && crash(2), "channel.pay 1 -> 2 (%lld) wait=false (seq %lld), then node2 killed with SIGKILL",
	   doubt[0].amount, seq);
	view_of(1, chan1, &mid);
	diag("while node2 was down node1 had payment a %s",
	     mid.inflight ? "in flight" : mid.np[1] >= seq ? "finalized already" : "dropped");
	bool back = start(2, NULL) && wait_connected(10000);
	ok(back, "node2 restarted and connected (%ld ms after the kill)", now_ms() - t0);
	t0 = now_ms();
	bool ended = settle_inflight(1, 10000);
	ok(ended, "node1's payment ended (%ld ms after the restart)", now_ms() - t0);

	/* b: the payer's node killed right after proposing. */
	t0 = now_ms();
	started = pay_nowait(1, doubt[1].to, doubt[1].amount, &seq);
	ok(started && crash(1), "channel.pay 1 -> 0 (%lld) wait=false (seq %lld), then node1 killed with SIGKILL",
	   doubt[1].amount, seq);
	view_of(0, chan1, &mid);
	diag("while node1 was down node0 (the receiver's) %s payment b", mid.np[1] >= seq ? "held" : "did not hold");
	back = start(1, NULL) && wait_connected(10000);
	ok(back, "node1 restarted and connected (%ld ms after the kill)", now_ms() - t0);
	t0 = now_ms();
	ended = settle_inflight(1, 10000);
	ok(ended, "node1's payment ended (%ld ms after the restart)", now_ms() - t0);

	/* c: the payer's node killed after finalizing, its FINAL to node0 not
	 * yet out: the window widened with the fault layer (node1's messages
	 * to node0 dropped; the rule dies with the process). */
	json_t *r = call(1, "fault.set", json_pack("[{s:s,s:[i],s:s,s:i}]", "action", "omission", "peers", 0, "direction",
						   "out", "duration_ms", 3000));
	ok(r != NULL, "fault.set on node1: its messages to node0 dropped for 3 s");
	json_decref(r);
	r = call(1, "channel.pay", json_pack("[{s:s,s:i,s:I}]", "channel", chan1, "to", doubt[2].to, "amount",
					     doubt[2].amount));
	bool finalized = r && strcmp(sget(r, "status"), "finalized") == 0;
	json_decref(r);
	t0 = now_ms();
	ok(finalized && crash(1), "channel.pay 1 -> 2 (%lld) finalized, then node1 killed with SIGKILL",
	   doubt[2].amount);
	back = start(1, NULL) && wait_connected(10000);
	ok(back, "node1 restarted and connected (%ld ms after the kill)", now_ms() - t0);

	r = call(0, "channel.root", json_pack("[{s:s}]", "channel", chan1));
	ok(json_is_boolean(json_object_get(r, "building")), "channel.root on node0 (the opener's): building %s",
	   json_is_true(json_object_get(r, "building")) ? "true" : "false");
	json_decref(r);
	t0 = now_ms();
	bool rooted = wait_rooted(chan1, v0[0].version, v0[0].applied + 1, 10000, v);
	ok(rooted, "after the kills a root covers every payment held and nodes 0, 1, 2 agree (root v%lld, %lld "
		   "payments, %ld ms)",
	   v[0].version, v[0].applied, now_ms() - t0);

	int mask[M], same = 0;
	for (int i = 0; i < M; i++)
		mask[i] = doubt_mask(v[i].sent[1] - v0[0].sent[1]);
	for (int i = 0; i < M; i++)
		same += mask[i] >= 0 && mask[i] == mask[1] && v[i].np[1] - v0[0].np[1] == popcount3(mask[i]);
	for (int k = 0; k < 3; k++)
		diag("payment %s: %s on node0, %s on node1, %s on node2", doubt[k].what,
		     mask[0] >= 0 && mask[0] & 1 << k ? "counted" : "not counted",
		     mask[1] >= 0 && mask[1] & 1 << k ? "counted" : "not counted",
		     mask[2] >= 0 && mask[2] & 1 << k ? "counted" : "not counted");
	ok(same == M, "each of the three payments is counted once or not at all, the same on nodes 0, 1, 2");
	ok(mask[1] >= 0 && mask[1] & 4, "payment c, answered finalized, is counted");
	for (int k = 0; k < 3; k++)
		if (mask[1] >= 0 && mask[1] & 1 << k)
			want1[1] -= doubt[k].amount, want1[doubt[k].to] += doubt[k].amount;
	int right = 0;
	for (int i = 0; i < M; i++)
		right += equal(v[i].close_now, want1) && equal(v[i].balance, want1);
	is_int(right, M, "nodes 0, 1, 2: balances and close_now %lld %lld %lld, as the counted payments make them",
	       want1[0], want1[1], want1[2]);
	ok(sum(v[0].close_now) == sum(dep1) && sum(v[1].close_now) == sum(dep1) && sum(v[2].close_now) == sum(dep1),
	   "the deposits are conserved: %lld", sum(v[0].close_now));
	ok(v[1].np[0] == v0[0].np[0] && v[1].np[2] == v0[0].np[2],
	   "members 0 and 2 made no payment meanwhile (no duplicate, nothing invented)");

	long long applied = v[1].applied;
	pay(1, chan1, 2, 11, want1);
	pay(2, chan1, 1, 12, want1);
	pay(0, chan1, 1, 13, want1);
	rooted = wait_rooted(chan1, v[0].version + 1, applied + 3, 5000, v);
	ok(rooted && equal(v[0].close_now, want1) && equal(v[1].close_now, want1) && equal(v[2].close_now, want1),
	   "payments work again after the restarts: root v%lld has all %lld payments on nodes 0, 1, 2", v[0].version,
	   v[0].applied);
	version1 = v[0].version;
	diag("phase 3 done at %.1f s", secs());
}

/* ---- phase 4: cooperative close ---- */

static void phase_close(void)
{
	struct view v[M] = {0};
	bool agree = wait_rooted(chan1, version1, 0, 5000, v);
	ok(agree, "before the close the three nodes agree (root v%lld)", v[0].version);
	long t0 = now_ms();
	json_t *r = call(1, "channel.close", json_pack("[{s:s}]", "channel", chan1));
	ok(r && strcmp(sget(r, "kind"), "cooperative") == 0 && iget(r, "version") == v[0].version,
	   "channel.close on node1: cooperative at root v%lld (%ld ms)", iget(r, "version"), now_ms() - t0);
	json_decref(r);
	bool closed_all = wait_ledger_channel(chan1, "closed", -1, 10000);
	ok(closed_all, "ledger.channel on every node: closed (%ld ms after the call)", now_ms() - t0);
	ok(wait_info_status(chan1, "closed", "closed", 3000),
	   "channel.info on nodes 0, 1, 2: status closed, ledger closed");
	for (int m = 0; m < M; m++)
		ledger_want[m] += v[0].close_now[m];
	long long got[M] = {0};
	bool paid = ledger_balances_are(5000, got);
	ok(paid, "wallet ledger balances %lld %lld %lld == funding - deposit + close_now (%lld %lld %lld)", got[0],
	   got[1], got[2], ledger_want[0], ledger_want[1], ledger_want[2]);
	ok(sum(got) == (long long)M * FUND, "every unit conserved: %lld", sum(got));
	paid = wallet_lists_agree(got);
	ok(paid, "wallet.list on nodes 0, 1, 2 shows the same: %lld %lld %lld", got[0], got[1], got[2]);
	char err[512];
	ok(refused(0, "channel.pay", json_pack("[{s:s,s:i,s:i}]", "channel", chan1, "to", 1, "amount", 1), "closed",
		   err, sizeof(err)),
	   "channel.pay on the closed channel: refused (%s)", err);
	diag("phase 4 done at %.1f s", secs());
}

/* ---- phase 5: a stale unilateral close, disputed and settled ---- */

struct events {
	const char *id;
	long long commit_version, dispute_version;
	bool closed;
};

static void on_event(const char *method, json_t *params, void *arg)
{
	struct events *e = arg;
	json_t *ev = json_array_get(params, 0);
	if (strcmp(method, "channel.event") != 0 || strcmp(sget(ev, "channel"), e->id) != 0)
		return;
	const char *kind = sget(ev, "event");
	if (strcmp(kind, "commit") == 0)
		e->commit_version = iget(ev, "version");
	else if (strcmp(kind, "dispute") == 0)
		e->dispute_version = iget(ev, "version");
	else if (strcmp(kind, "closed") == 0)
		e->closed = true;
}

/* Reads the notifications pending on the subscription sub (a call makes
 * the client read them). */
static void pump(struct weft_rpc_client *sub)
{
	json_t *res = NULL, *e = NULL;
	weft_rpc_client_call(sub, "status", NULL, 5000, &res, &e);
	json_decref(res), json_decref(e);
}

/* Submits an opaque transaction on node3 and waits until its ledger
 * height moved. */
static bool burn_height(int k)
{
	long long h = ledger_height(3);
	char data[32];
	snprintf(data, sizeof(data), "burn-%d", k);
	json_t *r = call(3, "tx.submit", json_pack("[{s:s}]", "data", data));
	bool sent = r != NULL;
	json_decref(r);
	long deadline = now_ms() + 5000;
	while (sent && ledger_height(3) <= h && now_ms() < deadline)
		usleep(20000);
	return sent && ledger_height(3) > h;
}

static void phase_stale_close(void)
{
	static const long long dep2[M] = {500, 500, 500};
	char chan2[65];
	if (!open_channel(dep2, chan2))
		return;
	long long want2[M];
	memcpy(want2, dep2, sizeof(want2));
	pay(2, chan2, 0, 200, want2);
	pay(2, chan2, 1, 150, want2);
	pay(0, chan2, 1, 30, want2);
	struct view v[M] = {0};
	bool rooted = wait_rooted(chan2, 1, 3, 5000, v) && equal(v[0].close_now, want2);
	ok(rooted, "a root v%lld of the 3 payments: close_now %lld %lld %lld", v[0].version, v[0].close_now[0],
	   v[0].close_now[1], v[0].close_now[2]);
	long long newest = v[0].version;

	const char *stale[] = {"--byzantine", "channel_stale", NULL};
	long t0 = now_ms();
	bool back = stop(2) && start(2, stale) && wait_connected(10000);
	ok(back, "node2 restarted with --byzantine channel_stale (%ld ms)", now_ms() - t0);

	struct events ev = {.id = chan2, .commit_version = -1, .dispute_version = -1};
	struct weft_rpc_client *sub = NULL;
	json_t *res = NULL, *e = NULL;
	if (weft_rpc_client_connect(&sub, socks[1], 2000, NULL) == 0) {
		weft_rpc_client_set_notify(sub, on_event, &ev);
		weft_rpc_client_call(sub, "channel.subscribe", NULL, 5000, &res, &e);
	}
	ok(res && strcmp(sget(res, "subscribed"), "channel.event") == 0, "channel.subscribe on node1");
	json_decref(res), json_decref(e);

	t0 = now_ms();
	json_t *r = call(2, "channel.close", json_pack("[{s:s,s:b}]", "channel", chan2, "force", 1));
	ok(r && strcmp(sget(r, "kind"), "unilateral") == 0, "channel.close force=true on node2: unilateral");
	json_decref(r);

	/* The honest nodes answer the stale commit with the newest root. */
	long deadline = now_ms() + 10000;
	struct view d[2] = {0};
	bool disputed = false;
	while (!disputed && now_ms() < deadline) {
		pump(sub);
		disputed = view_of(0, chan2, &d[0]) && view_of(1, chan2, &d[1]) && d[0].ledger_version == newest &&
			   d[1].ledger_version == newest && ev.dispute_version == newest;
		if (!disputed)
			usleep(50000);
	}
	ok(ev.commit_version == 0, "node1 saw the ledger execute node2's commit of root %lld (stale: 0)",
	   ev.commit_version);
	ok(disputed, "disputed on their own: channel.info ledger.version %lld on node0, %lld on node1, the dispute "
		     "event's %lld (newest root %lld; %ld ms)",
	   d[0].ledger_version, d[1].ledger_version, ev.dispute_version, newest, now_ms() - t0);
	ok(wait_ledger_channel(chan2, "closing", newest, 5000),
	   "ledger.channel on every node: closing, posted version %lld (the newest root)", newest);

	/* Heights move only with transactions: burn the challenge period. */
	t0 = now_ms();
	int burnt = 0;
	struct ledger_chan lc = ledger_channel(3, chan2);
	while (strcmp(lc.status, "closed") != 0 && burnt < 4 * CHALLENGE && burn_height(burnt)) {
		burnt++;
		for (int k = 0; k < 10 && strcmp(lc.status, "closed") != 0; k++) {
			usleep(30000);
			lc = ledger_channel(3, chan2);
		}
	}
	bool settled = wait_ledger_channel(chan2, "closed", -1, 5000);
	ok(settled, "after %d opaque transactions the channel is settled: ledger.channel closed everywhere (%ld ms)",
	   burnt, now_ms() - t0);
	ok(wait_info_status(chan2, "closed", "closed", 3000),
	   "channel.info on nodes 0, 1, 2 (node2 the stale one too): status closed");
	deadline = now_ms() + 3000;
	while (!ev.closed && now_ms() < deadline) {
		pump(sub);
		usleep(50000);
	}
	ok(ev.closed, "node1 emitted the closed event");
	weft_rpc_client_close(sub);

	long long paid[M];
	for (int m = 0; m < M; m++) {
		ledger_want[m] += v[0].close_now[m];
		paid[m] = v[0].close_now[m];
	}
	long long got[M] = {0};
	bool good = ledger_balances_are(5000, got);
	ok(good, "ledger balances %lld %lld %lld: the newest root (%lld %lld %lld) paid out",
	   got[0], got[1], got[2], paid[0], paid[1], paid[2]);
	ok(good && paid[2] != dep2[2], "... not root 0: member 2 got %lld back, not the %lld root 0 gave it", paid[2],
	   dep2[2]);
	ok(sum(got) == (long long)M * FUND, "every unit conserved: %lld", sum(got));
	good = wallet_lists_agree(got);
	ok(good, "wallet.list on nodes 0, 1, 2 shows the same: %lld %lld %lld", got[0], got[1], got[2]);
	diag("phase 5 done at %.1f s", secs());
}

/* ---- 6. a payment through a member of two channels ---- */

/* channel.open on node a of (A_a, A_b@b), deposits d each; the id. */
static bool open_pair(int a, int b, long long d, char id[65])
{
	json_t *members = json_array(), *deposits = json_array();
	char *other = xasprintf("%s@%d", accounts[b], b);
	json_array_append_new(members, json_string(accounts[a]));
	json_array_append_new(members, json_string(other));
	json_array_append_new(deposits, json_integer(d));
	json_array_append_new(deposits, json_integer(d));
	free(other);
	json_t *r = call(a, "channel.open", json_pack("[{s:o,s:o}]", "members", members, "deposits", deposits));
	snprintf(id, 65, "%s", sget(r, "channel"));
	bool good = r && strlen(id) == 64 && strcmp(sget(r, "status"), "open") == 0;
	json_decref(r);
	if (good)
		ledger_want[a] -= d, ledger_want[b] -= d;
	return good;
}

/* The two members' balances in node i's channel.info of a 2-member channel. */
static bool pair_is(int i, const char *id, long long b0, long long b1)
{
	json_t *r = call(i, "channel.info", json_pack("[{s:s}]", "channel", id));
	json_t *members = json_object_get(r, "members");
	long long g0 = iget(json_array_get(members, 0), "balance"), g1 = iget(json_array_get(members, 1), "balance");
	long long fl = (long long)json_array_size(json_object_get(r, "in_flight"));
	json_decref(r);
	if (g0 != b0 || g1 != b1 || fl != 0)
		diag("node%d: balances %lld %lld (want %lld %lld), %lld in flight", i, g0, g1, b0, b1, fl);
	return g0 == b0 && g1 == b1 && fl == 0;
}

/* Polls until nodes a and b agree on the pair's balances. */
static bool pair_wait(const char *id, int a, int b, long long b0, long long b1, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	while (!(pair_is(a, id, b0, b1) && pair_is(b, id, b0, b1)))
		if (now_ms() > deadline)
			return false;
		else
			usleep(50000);
	return true;
}

static void phase_routed(void)
{
	char p[65], q[65], err[256];
	long t0 = now_ms();
	ok(open_pair(0, 1, 100, p) && open_pair(1, 2, 100, q),
	   "channels P (A0, A1@1) and Q (A1, A2@2) open, 100 each (%ld ms)", now_ms() - t0);
	json_t *inv = call(2, "channel.invoice", json_pack("[{s:s,s:i}]", "member", accounts[2], "amount", 25));
	char hash[65];
	snprintf(hash, sizeof(hash), "%s", sget(inv, "hash"));
	ok(strlen(hash) == 64 && iget(inv, "amount") == 25, "channel.invoice on node2 for A2: hash %.16s...", hash);
	json_decref(inv);

	char *hop = xasprintf("%s:%s", q, accounts[2]);
	t0 = now_ms();
	json_t *r = call(0, "channel.pay",
			 json_pack("[{s:s,s:i,s:i,s:s,s:[s]}]", "channel", p, "to", 1, "amount", 25, "hash", hash, "route", hop));
	ok(r && strcmp(sget(r, "status"), "unlocked") == 0,
	   "channel.pay on node0: A0 -> A1 in P, on to A2 in Q, under the invoice's hash: unlocked (%ld ms)",
	   now_ms() - t0);
	json_decref(r);
	ok(pair_wait(p, 0, 1, 75, 125, 3000) && pair_wait(q, 1, 2, 75, 125, 3000),
	   "both legs happened: P 75 / 125 on nodes 0 and 1, Q 75 / 125 on nodes 1 and 2");

	/* Bad input: nothing moves, every node keeps serving. */
	ok(refused(0, "channel.pay", json_pack("[{s:s,s:i,s:i,s:s}]", "channel", p, "to", 1, "amount", 5, "hash", "zz"),
		   "hash", err, sizeof(err)),
	   "a malformed hash: refused (%s)", err);
	ok(refused(0, "channel.pay", json_pack("[{s:s,s:i,s:i,s:[s]}]", "channel", p, "to", 1, "amount", 5, "route", hop),
		   "only with hash", err, sizeof(err)),
	   "a route without a hash: refused (%s)", err);
	ok(refused(0, "channel.pay",
		   json_pack("[{s:s,s:i,s:i,s:s,s:[s]}]", "channel", p, "to", 1, "amount", 5, "hash", hash, "route", "x:y"),
		   "route", err, sizeof(err)),
	   "a malformed hop: refused (%s)", err);
	char unknown[65];
	memset(unknown, 'a', 64);
	unknown[64] = '\0';
	ok(refused(0, "channel.pay", json_pack("[{s:s,s:i,s:i,s:s}]", "channel", p, "to", 1, "amount", 5, "hash", unknown),
		   "unknown_hash", err, sizeof(err)),
	   "a lock straight to A1 under a hash it has no invoice for: refused (%s)", err);
	bool gone = refused(0, "channel.pay",
			    json_pack("[{s:s,s:i,s:i,s:s,s:[s]}]", "channel", p, "to", 1, "amount", 5, "hash", unknown,
				      "route", hop),
			    "refunded", err, sizeof(err));
	ok(gone, "through A1 to A2 under a hash A2 has no invoice for: refunded (%s)", err);
	ok(refused(0, "channel.pay",
		   json_pack("[{s:s,s:i,s:i,s:s,s:[s]}]", "channel", p, "to", 1, "amount", 500, "hash", hash, "route", hop),
		   "insufficient", err, sizeof(err)),
	   "a lock beyond A0's balance: refused (%s)", err);
	ok(pair_wait(p, 0, 1, 75, 125, 3000) && pair_wait(q, 1, 2, 75, 125, 3000),
	   "after them nothing moved: P and Q still 75 / 125");
	ok(serving(0) && serving(1) && serving(2) && serving(3), "every node still serving");

	/* A payer that never unlocks: A1's node closes P and claims the lock. */
	const char *withhold[] = {"--byzantine", "channel_withhold", NULL};
	ok(stop(0) && start(0, withhold) && wait_connected(10000), "node0 restarted with --byzantine channel_withhold");
	inv = call(2, "channel.invoice", json_pack("[{s:s,s:i}]", "member", accounts[2], "amount", 10));
	snprintf(hash, sizeof(hash), "%s", sget(inv, "hash"));
	json_decref(inv);
	t0 = now_ms();
	r = call(0, "channel.pay", json_pack("[{s:s,s:i,s:i,s:s,s:[s],s:b}]", "channel", p, "to", 1, "amount", 10, "hash",
					     hash, "route", hop, "wait", 0));
	ok(r != NULL, "channel.pay of 10 on node0 through A1 to A2 (wait=false)");
	json_decref(r);
	bool paid = pair_wait(q, 1, 2, 65, 135, 5000);
	ok(paid, "A2 was paid in Q (65 / 135): A1 now holds the preimage (%ld ms)", now_ms() - t0);
	long long heights = ledger_height(3);
	bool closing = false;
	long deadline = now_ms() + 40000;
	while (!closing && now_ms() < deadline) {
		json_t *lc = call(3, "ledger.channel", json_pack("[{s:s}]", "id", p));
		json_t *lk = json_array_get(json_object_get(lc, "posted_locks"), 0);
		closing = strcmp(sget(lc, "status"), "closing") == 0 && json_is_true(json_object_get(lk, "claimed")) &&
			  iget(lk, "amount") == 10 && iget(lk, "payee") == 1;
		json_decref(lc);
		if (!closing)
			usleep(200000);
	}
	ok(closing, "node0 never unlocked: node1 closed P and claimed its lock on the ledger (%ld ms)", now_ms() - t0);
	int burnt = 0;
	struct ledger_chan lc = ledger_channel(3, p);
	while (closing && strcmp(lc.status, "closed") != 0 && burnt < 4 * CHALLENGE && burn_height(100 + burnt)) {
		burnt++;
		for (int k = 0; k < 10 && strcmp(lc.status, "closed") != 0; k++) {
			usleep(30000);
			lc = ledger_channel(3, p);
		}
	}
	ok(wait_ledger_channel(p, "closed", -1, 8000), "P settled after %d opaque transactions (%lld heights before)",
	   burnt, heights);
	ledger_want[0] += 65, ledger_want[1] += 135;
	long long got[M] = {0};
	bool right = ledger_balances_are(5000, got);
	ok(right, "ledger balances %lld %lld %lld: A1 got P's 125 and the claimed lock of 10, A0 its 65", got[0], got[1],
	   got[2]);
	free(hop);
	diag("phase 6 done at %.1f s", secs());
}

/* ---- 7. atomic service channels ---- */

static pid_t services[N];

/* weft-service on node i selling name as argv (stdout to a log). */
static bool sell(int i, const char *name, const char *const *cmd)
{
	char *bin = tu_bin("weft-service"), *log = xasprintf("%s/service-%s.log", dirs[i], name);
	const char *argv[16] = {bin, "--datadir", dirs[i], name, "--"};
	int k = 5;
	for (; *cmd && k < 15; cmd++)
		argv[k++] = *cmd;
	argv[k] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		FILE *f = freopen(log, "w", stdout);
		(void)f;
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	free(bin), free(log);
	services[i] = pid;
	usleep(300000); /* registered */
	return pid > 0;
}

static json_t *asc_info(int i, const char *id)
{
	return call(i, "asc.info", json_pack("[{s:s}]", "channel", id));
}

/* Node i holds the state of seq with paid to the provider, no round open
 * (said: a diagnostic when not). */
static bool asc_paid_say(int i, const char *id, long long seq, long long paid, bool say)
{
	json_t *r = asc_info(i, id);
	const char *phase = sget(json_object_get(r, "round"), "phase");
	bool good = r && iget(r, "seq") == seq && iget(r, "provider_paid") == paid && strcmp(phase, "none") == 0;
	if (!good && say)
		diag("node%d asc.info: seq %lld paid %lld round %s (want %lld, %lld, none)", i, iget(r, "seq"),
		     iget(r, "provider_paid"), phase, seq, paid);
	json_decref(r);
	return good;
}

static bool asc_paid(int i, const char *id, long long seq, long long paid)
{
	return asc_paid_say(i, id, seq, paid, true);
}

static bool asc_wait_paid(const char *id, long long seq, long long paid, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	while (!(asc_paid_say(0, id, seq, paid, false) && asc_paid_say(1, id, seq, paid, false)))
		if (now_ms() > deadline)
			return asc_paid(0, id, seq, paid) && asc_paid(1, id, seq, paid);
		else
			usleep(50000);
	return true;
}

static void phase_asc(void)
{
	char id[65], err[256];
	static const char *const upper[] = {"tr", "a-z", "A-Z", NULL};
	ok(sell(1, "upper", upper), "weft-service on node1 sells 'upper' (tr a-z A-Z)");
	long t0 = now_ms();
	char *prov = xasprintf("%s@1", accounts[1]);
	json_t *r = call(0, "asc.open", json_pack("[{s:s,s:i,s:i}]", "provider", prov, "deposit", 50, "timeout", 400));
	snprintf(id, sizeof(id), "%s", sget(r, "channel"));
	ok(r && strcmp(sget(r, "status"), "open") == 0 && strlen(id) == 64,
	   "asc.open on node0: A0 deposits 50 for A1@1's services: open (%ld ms)", now_ms() - t0);
	json_decref(r);
	ledger_want[0] -= 50;
	long long paid = 0, seq = 0;
	for (int k = 0; k < 3; k++) {
		t0 = now_ms();
		r = call(0, "asc.request",
			 json_pack("[{s:s,s:s,s:s,s:i}]", "channel", id, "service", "upper", "payload", "pay me", "price", 2));
		bool good = r && strcmp(sget(r, "status"), "result") == 0 && strcmp(sget(r, "result"), "PAY ME") == 0;
		ok(good, "asc.request %d: 'pay me' for 2: the result PAY ME (%ld ms)", k + 1, now_ms() - t0);
		json_decref(r);
		if (good)
			paid += 2, seq++;
	}
	ok(asc_paid(0, id, seq, paid) && asc_paid(1, id, seq, paid), "both nodes hold the state of seq %lld: %lld paid",
	   seq, paid);

	/* Bad input: refused with a clear error, nothing paid. */
	ok(refused(0, "asc.request", json_pack("[{s:s,s:s,s:s,s:i}]", "channel", id, "service", "nope", "payload", "x",
					       "price", 2),
		   "no service nope", err, sizeof(err)),
	   "a service nobody sells: refused (%s)", err);
	ok(refused(0, "asc.request",
		   json_pack("[{s:s,s:s,s:s,s:i}]", "channel", id, "service", "upper", "payload", "x", "price", 1000),
		   "insufficient", err, sizeof(err)),
	   "a price above the balance: refused (%s)", err);
	ok(refused(0, "asc.request", json_pack("[{s:s,s:s,s:i}]", "channel", id, "service", "upper", "price", 0),
		   "price", err, sizeof(err)),
	   "a price of 0: refused (%s)", err);
	ok(refused(2, "asc.request",
		   json_pack("[{s:s,s:s,s:s,s:i}]", "channel", id, "service", "upper", "payload", "x", "price", 1),
		   "no service channel", err, sizeof(err)),
	   "a request on a node hosting no client of it: refused (%s)", err);
	ok(refused(0, "asc.open", json_pack("[{s:s,s:i}]", "provider", "zz@1", "deposit", 5), "provider", err,
		   sizeof(err)),
	   "asc.open with a malformed provider: refused (%s)", err);
	ok(refused(1, "service.respond", json_pack("[{s:s,s:i,s:s}]", "channel", id, "seq", 99, "result", "x"),
		   "no such request", err, sizeof(err)),
	   "service.respond to no request: refused (%s)", err);
	ok(asc_paid(0, id, seq, paid), "nothing paid by them");

	/* kill -9 of the client's node right after its request: the round
	 * resumes after the restart. */
	r = call(0, "asc.request", json_pack("[{s:s,s:s,s:s,s:i,s:b}]", "channel", id, "service", "upper", "payload",
					     "again", "price", 3, "wait", 0));
	json_decref(r);
	t0 = now_ms();
	ok(crash(0) && start(0, NULL) && wait_connected(10000), "node0 (the client's) killed with SIGKILL and restarted");
	ok(asc_wait_paid(id, seq + 1, paid + 3, 10000), "the request went through once: seq %lld, %lld paid (%ld ms)",
	   seq + 1, paid + 3, now_ms() - t0);
	seq++, paid += 3;

	/* kill -9 of the provider's node while its service works on a request:
	 * nothing is paid for it, and the channel serves again after. */
	static const char *const slow[] = {"sh", "-c", "sleep 2; cat", NULL};
	sell(1, "slow", slow);
	pid_t upper_pid = services[1];
	r = call(0, "asc.request", json_pack("[{s:s,s:s,s:s,s:i,s:b}]", "channel", id, "service", "slow", "payload",
					     "later", "price", 4, "wait", 0));
	json_decref(r);
	usleep(500000);
	kill(services[1], SIGKILL), kill(upper_pid, SIGKILL);
	tu_wait(services[1], 5000), tu_wait(upper_pid, 5000);
	t0 = now_ms();
	ok(crash(1) && start(1, NULL) && wait_connected(10000) && sell(1, "upper", upper),
	   "node1 (the provider's) killed with SIGKILL during the service's work, restarted with its service");
	ok(asc_wait_paid(id, seq, paid, 15000), "that request ended unpaid on both sides: seq %lld, %lld paid (%ld ms)", seq,
	   paid, now_ms() - t0);
	r = call(0, "asc.request",
		 json_pack("[{s:s,s:s,s:s,s:i}]", "channel", id, "service", "upper", "payload", "after", "price", 4));
	ok(r && strcmp(sget(r, "result"), "AFTER") == 0, "then a request is served again: AFTER");
	json_decref(r);
	seq++, paid += 4;
	ok(asc_paid(0, id, seq, paid) && asc_paid(1, id, seq, paid), "both hold seq %lld, %lld paid", seq, paid);

	t0 = now_ms();
	r = call(0, "asc.close", json_pack("[{s:s}]", "channel", id));
	ok(r != NULL, "asc.close on node0 (cooperative)");
	json_decref(r);
	ledger_want[0] += 50 - paid, ledger_want[1] += paid;
	long long got[M] = {0};
	bool right = ledger_balances_are(8000, got);
	ok(right, "ledger balances %lld %lld %lld: A1 paid %lld, A0 the rest of 50 back (%ld ms)", got[0], got[1], got[2],
	   paid, now_ms() - t0);
	free(prov);
	diag("phase 7 done at %.1f s", secs());
}

/* ---- 8. service channels on the ledger: refund, claim, a vanished client ---- */

static bool asc_status_is(int i, const char *id, const char *status)
{
	json_t *r = asc_info(i, id);
	bool good = r && strcmp(sget(r, "status"), status) == 0;
	json_decref(r);
	return good;
}

/* Submits opaque transactions on node3 (the heights move) until node i's
 * asc.info says closed, for at most timeout_ms: how many it submitted, or
 * -1.  It does not wait for each: with a node down, rounds are slower. */
static int burn_until_closed(int i, const char *id, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	for (int k = 0; now_ms() < deadline; k++) {
		if (asc_status_is(i, id, "closed"))
			return k;
		char data[32];
		snprintf(data, sizeof(data), "burn-asc-%d", k);
		json_decref(call(3, "tx.submit", json_pack("[{s:s}]", "data", data)));
		usleep(100000);
	}
	return -1;
}

static bool asc_open_id(long long deposit, long long timeout, char id[65])
{
	char *prov = xasprintf("%s@1", accounts[1]);
	json_t *r = call(0, "asc.open",
			 json_pack("[{s:s,s:I,s:I}]", "provider", prov, "deposit", deposit, "timeout", timeout));
	snprintf(id, 65, "%s", sget(r, "channel"));
	bool good = r && strcmp(sget(r, "status"), "open") == 0 && strlen(id) == 64;
	json_decref(r);
	free(prov);
	if (good)
		ledger_want[0] -= deposit;
	return good;
}

static void phase_asc_ledger(void)
{
	char id[65];
	long long got[M] = {0};
	static const char *const upper[] = {"tr", "a-z", "A-Z", NULL};

	/* a. nothing bought, the channel expires: the client's node refunds */
	ok(asc_open_id(20, 12, id), "a service channel of 20 for 12 heights");
	int burnt = burn_until_closed(0, id, 20000);
	ledger_want[0] += 20;
	bool right = burnt >= 0 && ledger_balances_are(5000, got);
	ok(right, "it expired after %d opaque transactions: node0 refunded the 20 on its own (ledger %lld %lld %lld)",
	   burnt, got[0], got[1], got[2]);

	/* b. a provider that never reveals t: it claims on the ledger, and the
	 * client reads t there */
	const char *withhold[] = {"--byzantine", "channel_withhold", NULL};
	kill(services[1], SIGKILL), tu_wait(services[1], 5000);
	ok(stop(1) && start(1, withhold) && wait_connected(10000) && sell(1, "upper", upper),
	   "node1 restarted with --byzantine channel_withhold, selling upper");
	ok(asc_open_id(30, 400, id), "a service channel of 30");
	long t0 = now_ms();
	json_t *r = call(0, "asc.request",
			 json_pack("[{s:s,s:s,s:s,s:i}]", "channel", id, "service", "upper", "payload", "claimed", "price", 5));
	ok(r && strcmp(sget(r, "result"), "CLAIMED") == 0,
	   "asc.request: the provider claimed instead of revealing; the client decrypted CLAIMED with t from the "
	   "ledger (%ld ms)",
	   now_ms() - t0);
	json_decref(r);
	ledger_want[0] += 25, ledger_want[1] += 5;
	right = ledger_balances_are(5000, got) && asc_status_is(0, id, "closed");
	ok(right, "the claim paid 5 and returned 25; the channel is closed (ledger %lld %lld %lld)", got[0], got[1],
	   got[2]);

	/* c. a client that vanishes after a paid request: the provider claims
	 * before the expiry */
	kill(services[1], SIGKILL), tu_wait(services[1], 5000);
	ok(stop(1) && start(1, NULL) && wait_connected(10000) && sell(1, "upper", upper), "node1 honest again");
	ok(asc_open_id(40, 60, id), "a service channel of 40 for 60 heights");
	r = call(0, "asc.request",
		 json_pack("[{s:s,s:s,s:s,s:i}]", "channel", id, "service", "upper", "payload", "gone", "price", 7));
	ok(r && strcmp(sget(r, "result"), "GONE") == 0, "a request of 7: GONE");
	json_decref(r);
	ok(crash(0), "node0 (the client's) killed, and stays down");
	burnt = burn_until_closed(1, id, 20000);
	ok(burnt >= 0, "node1 claimed the paid state before the expiry: closed after %d opaque transactions", burnt);
	ok(start(0, NULL) && wait_connected(10000), "node0 back");
	ledger_want[0] += 33, ledger_want[1] += 7;
	right = ledger_balances_are(5000, got);
	ok(right, "the ledger paid the provider its 7 and the client 33 (ledger %lld %lld %lld)", got[0], got[1], got[2]);
	ok(sum(got) + 200 == (long long)M * FUND, "every unit conserved: %lld in the wallets, 200 in channel Q (phase 6)",
	   sum(got));
	diag("phase 8 done at %.1f s", secs());
}

/* Shows the error lines of node i's log (a diagnostic: a SIGKILL may
 * leave some, e.g. refused connections). */
static void diag_log_errors(int i)
{
	char *path = xasprintf("%s/weftd.log", dirs[i]), *log = tu_read_file(path);
	int shown = 0;
	char *save = NULL;
	for (char *line = log ? strtok_r(log, "\n", &save) : NULL; line && shown < 5; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, " error ") != NULL)
			diag("node%d's log: %s", i, line), shown++;
	free(log);
	free(path);
}

/* No daemon (the sanitizer build's, when WEFT_BIN points at it) reported
 * a memory or undefined-behaviour error on stderr. */
static void check_sanitizer_reports(void)
{
	int reports = 0;
	for (int i = 0; i < N; i++) {
		char *path = xasprintf("%s.stderr", dirs[i]);
		int k = tu_file_count(path, "Sanitizer") + tu_file_count(path, "runtime error:");
		if (k)
			diag("%s: %d sanitizer lines", path, k);
		reports += k;
		free(path);
	}
	is_int(reports, 0, "no daemon wrote a sanitizer report to its stderr");
}

static void kill_children(void)
{
	for (int i = 0; i < N; i++) {
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
		if (services[i] > 0)
			kill(services[i], SIGKILL);
	}
}

static void on_signal(int sig)
{
	kill_children();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	t_start = now_ms();
	for (int i = 0; i < N; i++)
		pids[i] = -1;
	cli_bin = tu_bin("weft-cli");
	char *weftd = tu_bin("weftd");
	if (access(cli_bin, X_OK) != 0 || access(weftd, X_OK) != 0)
		skip_all("weft-cli or weftd not built (set WEFT_BIN)");
	free(weftd);
	atexit(kill_children);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	tmp = tu_tmpdir("channet");

	bool up = start_committee();
	ok(up, "genesis --protocol dag --nodes 4, a funded account, channel params; 4 daemons connected (%.1f s)",
	   secs());
	if (up) {
		phase_open_pay();
		if (chan1[0]) {
			phase_bad_input();
			phase_crash();
			phase_close();
		}
		phase_stale_close();
		phase_routed();
		phase_asc();
		phase_asc_ledger();
	}

	int stopped = 0, running = 0;
	for (int i = 0; i < N; i++)
		if (pids[i] > 0)
			diag_log_errors(i), running++, stopped += stop(i);
	is_int(stopped, running, "the daemons still running stop cleanly");
	if (up)
		check_sanitizer_reports();
	diag("wall time %.1f s", secs());
	tu_rmtree(tmp);
	for (int i = 0; i < N; i++)
		free(dirs[i]), free(socks[i]);
	free(tmp), free(cli_bin), free(fund_key);
	return done_testing();
}
