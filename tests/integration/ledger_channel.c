/* ledger_channel.c - channel settlement through a real weftd: a one-node
 * committee ("dag", genesis from weft-cli with three funded accounts, a
 * chain id and a challenge period of 4 heights) orders a 3-member
 * channel.open and its cooperative channel.close, then a second channel
 * closed unilaterally with a stale root, disputed and settled, all
 * submitted as plain transactions (tx.submit); ledger.channel and
 * ledger.balance show the deposits locked, then paid out, every unit
 * conserved; an open signed for another chain id is executed as
 * bad_signature with nothing moved (the daemon binds the genesis chain id
 * into the ledger's signature hashes). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"
#include "weft/rpc_client.h"

static const char *const sk_hex[3] = {
	"0000000000000000000000000000000000000000000000000000000000000003",
	"B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF",
	"C90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B14E5C9",
};
static const char *const pk_hex[3] = {
	"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9",
	"dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659",
	"dd308afec5777e13121fa72b9cc1b7cc0139715309b086c960e18fd969774eb8",
};
static uint8_t sk[3][32], pk[3][32];
static char *sock;

static json_t *call(const char *method, json_t *params)
{
	json_t *res = NULL, *err = NULL;
	weft_rpc_client_call_once(sock, method, params, 10000, &res, &err);
	json_decref(params);
	if (err) {
		char *s = json_dumps(err, 0);
		diag("%s: %s", method, s);
		free(s);
		json_decref(err);
	}
	return res;
}

static long long balance(int who)
{
	json_t *r = call("ledger.balance", json_pack("[{s:s}]", "account", pk_hex[who]));
	long long b = r ? json_integer_value(json_object_get(r, "balance")) : -1;
	json_decref(r);
	return b;
}

static long long height(void)
{
	json_t *r = call("dag.info", NULL);
	long long h = r ? json_integer_value(json_object_get(r, "ledger_height")) : -1;
	json_decref(r);
	return h;
}

/* Submits tx and waits until the ledger executed one more transaction. */
static bool submit(const struct weft_mpw *w)
{
	long long before = height();
	char *hex = malloc(2 * w->len + 1);
	weft_hex_encode(hex, w->buf, w->len);
	json_t *r = call("tx.submit", json_pack("[{s:s}]", "data_hex", hex));
	free(hex);
	bool sent = r != NULL;
	json_decref(r);
	for (int t = 0; sent && t < 100 && height() <= before; t++)
		usleep(50000);
	return sent && height() > before;
}

static void sign_open(struct weft_ledger_channel_open *o, const uint8_t chain[32])
{
	uint8_t msg[32], aux[32] = {0};
	weft_ledger_channel_open_sighash(chain, o, msg);
	for (uint32_t i = 0; i < o->n; i++)
		weft_ledger_schnorr_sign(sk[i], msg, aux, o->sig[i]);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		skip_all("libsodium init failed");
	for (int i = 0; i < 3; i++) {
		weft_hex_decode(sk[i], 32, sk_hex[i], 64);
		weft_hex_decode(pk[i], 32, pk_hex[i], 64);
	}
	char *tmp = tu_tmpdir("ledgerchan"), *cli = tu_bin("weft-cli"), *out = tu_path(tmp, "net");
	char port[16], fund[3][128];
	snprintf(port, sizeof(port), "%d", tu_port_base(1));
	for (int i = 0; i < 3; i++)
		snprintf(fund[i], sizeof(fund[i]), "%s=%d", pk_hex[i], i == 0 ? 1000 : i == 1 ? 500 : 100);
	char *argv[] = {cli,	     "genesis",	    "--nodes",	  "1",	   "--out",   out,      "--base-port",
			port,	     "--protocol",  "dag",	  "--chain-id", "chan-test", "--fund", fund[0], "--fund",
			fund[1],     "--fund",	    fund[2],	  "--param", "channel_challenge=4", NULL};
	struct tu_run r;
	tu_run(&r, argv, 10000, -1);
	is_int(r.status, 0, "weft-cli genesis: one node, three funded accounts, chain id chan-test");
	tu_run_free(&r);
	char *dir = tu_path(out, "node0");
	sock = tu_path(dir, "rpc.sock");
	pid_t pid = tu_weftd_start(dir, NULL);
	ok(pid > 0, "weftd started");

	uint8_t chain[32], other[32], id[32];
	weft_ledger_chain("chan-test", 9, chain);
	weft_ledger_chain("elsewhere", 9, other);
	struct weft_ledger_channel_open o = {.n = 3, .deposit = {300, 200, 50}};
	memset(o.nonce, 0x42, sizeof(o.nonce));
	for (int i = 0; i < 3; i++)
		memcpy(o.member[i], pk[i], 32);
	struct weft_mpw w;
	weft_mpw_init(&w);

	struct weft_ledger_channel_open foreign = o;
	sign_open(&foreign, other);
	weft_ledger_channel_open_encode(&foreign, &w);
	ok(submit(&w), "an open signed for another chain id is ordered and executed");
	ok(balance(0) == 1000 && balance(1) == 500 && balance(2) == 100, "... as bad_signature: nothing moved");

	sign_open(&o, chain);
	weft_ledger_channel_id(chain, &o, id);
	weft_mpw_reset(&w);
	weft_ledger_channel_open_encode(&o, &w);
	ok(submit(&w), "the 3-member open (300 / 200 / 50) is ordered and executed");
	ok(balance(0) == 700 && balance(1) == 300 && balance(2) == 50, "the deposits left the accounts");
	char idhex[65];
	weft_hex_encode(idhex, id, 32);
	json_t *c = call("ledger.channel", json_pack("[{s:s}]", "id", idhex));
	ok(c && strcmp(json_string_value(json_object_get(c, "status")), "open") == 0 &&
		   json_integer_value(json_object_get(c, "locked")) == 550 &&
		   json_array_size(json_object_get(c, "members")) == 3,
	   "ledger.channel: open, 3 members, 550 locked");
	json_decref(c);

	struct weft_ledger_channel_close cl = {.n = 3, .balance = {100, 400, 50}};
	memcpy(cl.id, id, 32);
	uint8_t msg[32], aux[32] = {0};
	weft_ledger_channel_close_sighash(chain, &cl, msg);
	for (int i = 0; i < 3; i++)
		weft_ledger_schnorr_sign(sk[i], msg, aux, cl.sig[i]);
	weft_mpw_reset(&w);
	weft_ledger_channel_close_encode(&cl, &w);
	ok(submit(&w), "the cooperative close (100 / 400 / 50) is ordered and executed");
	ok(balance(0) == 800 && balance(1) == 700 && balance(2) == 100, "the balances were paid out");
	ok(balance(0) + balance(1) + balance(2) == 1600, "every unit conserved: 1600 before and after");
	c = call("ledger.channel", json_pack("[{s:s}]", "id", idhex));
	ok(c && json_is_true(json_object_get(c, "exists")) &&
		   strcmp(json_string_value(json_object_get(c, "status")), "closed") == 0,
	   "ledger.channel: closed");
	json_decref(c);

	/* A second channel, closed unilaterally with a stale root, disputed
	 * with a newer one, settled after the challenge period (4 heights). */
	memset(o.nonce, 0x43, sizeof(o.nonce));
	sign_open(&o, chain);
	weft_ledger_channel_id(chain, &o, id);
	weft_hex_encode(idhex, id, 32);
	weft_mpw_reset(&w);
	weft_ledger_channel_open_encode(&o, &w);
	ok(submit(&w) && balance(0) == 500 && balance(1) == 500 && balance(2) == 50, "a second channel opened");
	struct weft_ledger_channel_root t[2] = {{.version = 1, .n = 3, .balance = {400, 100, 50}},
						{.version = 2, .n = 3, .balance = {100, 400, 50}}};
	for (int k = 0; k < 2; k++) {
		memcpy(t[k].id, id, 32);
		weft_ledger_channel_root_sighash(chain, &t[k], msg);
		for (int i = 0; i < 3; i++)
			weft_ledger_schnorr_sign(sk[i], msg, aux, t[k].sig[i]);
	}
	weft_mpw_reset(&w);
	weft_ledger_channel_root_encode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, &t[0], &w);
	ok(submit(&w), "member 0 closes unilaterally with the stale root 1");
	c = call("ledger.channel", json_pack("[{s:s}]", "id", idhex));
	ok(c && strcmp(json_string_value(json_object_get(c, "status")), "closing") == 0 &&
		   json_integer_value(json_object_get(c, "posted_version")) == 1,
	   "ledger.channel: closing, posted version 1");
	json_decref(c);
	weft_mpw_reset(&w);
	weft_ledger_channel_root_encode(WEFT_LEDGER_CHANNEL_DISPUTE_TAG, &t[1], &w);
	ok(submit(&w), "member 1 disputes with root 2");
	for (int k = 0; k < 4; k++) {
		weft_mpw_reset(&w);
		weft_mpw_uint(&w, 7000 + (uint64_t)k);
		submit(&w); /* the challenge period passes */
	}
	weft_mpw_reset(&w);
	weft_ledger_channel_settle_encode(id, &w);
	ok(submit(&w), "anyone settles after the challenge period");
	ok(balance(0) == 600 && balance(1) == 900 && balance(2) == 100,
	   "root 2 paid out (100 / 400 / 50), not the stale root");
	ok(balance(0) + balance(1) + balance(2) == 1600, "every unit conserved");

	weft_mpw_free(&w);
	ok(tu_weftd_stop(pid, 10000) == 0, "weftd stops cleanly");
	tu_rmtree(tmp);
	free(sock), free(dir), free(out), free(cli), free(tmp);
	return done_testing();
}
