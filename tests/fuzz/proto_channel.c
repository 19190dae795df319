/* tests/fuzz/proto_channel.c - libFuzzer target for the payment channel
 * service (protocols/channel: channel.c, paydag.c, lock.c, wire.c), hosted
 * directly (as the node stack hosts it on its channel byte, without the
 * byte) by node 0 of 4 on the script driver of tests/fuzz/lib/protofuzz.h
 * (input format there), with the driver's wallets (stand-in signatures,
 * pf_wallet_sign) and event sink, and no ledger.  Every peer message
 * (OPEN, OPEN_SIGS, ROOT0, PROPOSE with and without the payments ahead of
 * it and a lock's route, CONSENT, REFUSE, FINAL, FETCH, PAYS, ROOT_ASK,
 * ROOT_SIGS, ROOT_NACK, ROOT_ALL, CLOSE_ASK, CLOSE_SIGS, CLOSE_NACK,
 * UNLOCK_ASK, REFUND_ASK, and the service channel's ASC_OPEN, REQUEST,
 * CLOSE_ASK and CLOSE_SIG; its OFFER, ACCEPT and REVEAL need a wallet that
 * pre-signs, which the driver's stand-in has not) reaches on_message, interleaved with the node's
 * commands (ops 0xe8-0xef: channel.open, pay, root, close, ledger, an
 * unknown name, a conditional pay and invoice, asc.open, request, close), the queries channel.list and
 * channel.info, the tick timer, clock steps and restarts (destroy, then
 * init from the same kv).  Beyond ASan/UBSan/LSan the driver checks that
 * every message sent, every command's and query's reply, every event and
 * the info are one msgpack value each, and that init succeeds again after
 * a restart.
 *
 * Keys: the driver's test ledger keys 1..8 (pf_ledger_key), key k hosted
 * by node host_of[k].  Seeds (WEFT_FUZZ_SEEDS): node 1 opens channel A
 * (keys 1@1, 2@0, 3@2, 4@0: two members on node 0), node 0 opens channel B
 * (keys 5@0, 6@3); 100 ms later every node is told the ledger applied both
 * opens; then, in phases 100 ms apart, members pay each other every way
 * (node 1 pipelines two payments, the second carrying the first as
 * "ahead"), the openers ask for roots, more payments (with refs), roots
 * again, cooperative closes of both and a unilateral one of A.  So node
 * 0's scripts hold valid OPEN, ROOT0, OPEN_SIGS, PROPOSE, CONSENT, FINAL,
 * ROOT_ASK, ROOT_SIGS, ROOT_ALL, CLOSE_ASK and CLOSE_SIGS for the fuzzer
 * to mutate; script d loses member 2's first FINAL of channel A to node 0,
 * which then FETCHes it and gets PAYS.  Parameter sets: fast (roots every
 * 40 ms or 3 payments, pipelines of 4, payment timeout 200 ms), slow
 * (no periodic roots, one payment in flight per member, timeout 60 ms:
 * proposals time out under mutation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/channel.h"
#include "weft/crypto.h"
#include "weft/ledger.h"

#define NKEYS 8

static const uint32_t host_of[NKEYS + 1] = {0, 1, 0, 2, 0, 0, 3, 1, 2};
static uint8_t pk[NKEYS + 1][32];

enum cmd { C_OPEN, C_PAY, C_ROOT, C_CLOSE, C_LEDGER, C_BOGUS, C_LOCK, C_INVOICE, C_ASC_OPEN, C_ASC_REQUEST, C_ASC_CLOSE };

static const char *const commands[] = {
	"channel.open",	  "channel.pay",   "channel.root", "channel.close", "channel.ledger", "channel.bogus",
	"channel.pay" /* a lock */, "channel.invoice", "asc.open", "asc.request", "asc.close", NULL,
};


static const char *const queries[] = {"channel.list", "channel.info", NULL};

static int wallet_host(const uint8_t key[32])
{
	for (int k = 1; k <= NKEYS; k++)
		if (memcmp(pk[k], key, 32) == 0)
			return (int)host_of[k];
	return -1;
}

/* ---- the seeds' channels ---- */

struct chspec {
	uint32_t n;
	uint32_t key[4];
	uint64_t dep[4];
};

static const struct chspec chans[2] = {
	{4, {1, 2, 3, 4}, {500, 400, 300, 200}}, /* A: opened by node 1 */
	{2, {5, 6}, {150, 250}},                 /* B: opened by node 0 */
};

static const char *const chain_id = "fuzz";

/* The ledger's open of channel ch as its opener submits it (the nonce is
 * the fake env's random: 0x5a...). */
static void open_of(int ch, struct weft_ledger_channel_open *o)
{
	const struct chspec *c = &chans[ch];
	uint8_t chain[32], msg[32];
	weft_ledger_chain(chain_id, strlen(chain_id), chain);
	memset(o, 0, sizeof(*o));
	memset(o->nonce, 0x5a, sizeof(o->nonce));
	o->n = c->n;
	for (uint32_t m = 0; m < c->n; m++) {
		memcpy(o->member[m], pk[c->key[m]], 32);
		o->deposit[m] = c->dep[m];
	}
	weft_ledger_channel_open_sighash(chain, o, msg);
	for (uint32_t m = 0; m < c->n; m++)
		pf_wallet_sign(pk[c->key[m]], msg, o->sig[m]);
}

static void id_of(int ch, uint8_t id[32])
{
	struct weft_ledger_channel_open o;
	uint8_t chain[32];
	open_of(ch, &o);
	weft_ledger_chain(chain_id, strlen(chain_id), chain);
	weft_ledger_channel_id(chain, &o, id);
}

/* The service channel of the seeds: node 1's key 1 buys from node 0's key
 * 2 (the fuzzed node is the provider), deposit 60, timeout 100. */
static void asc_open_of(struct weft_ledger_asc_open *o)
{
	uint8_t chain[32], msg[32];
	weft_ledger_chain(chain_id, strlen(chain_id), chain);
	memset(o, 0, sizeof(*o));
	memset(o->nonce, 0x5a, sizeof(o->nonce)); /* the fake env's random */
	memcpy(o->client, pk[1], 32);
	memcpy(o->provider, pk[2], 32);
	o->deposit = 60;
	o->timeout = 100;
	weft_ledger_asc_open_sighash(chain, o, msg);
	pf_wallet_sign(pk[1], msg, o->sig);
}

static void asc_id_of(uint8_t id[32])
{
	struct weft_ledger_asc_open o;
	uint8_t chain[32];
	asc_open_of(&o);
	weft_ledger_chain(chain_id, strlen(chain_id), chain);
	weft_ledger_asc_id(chain, &o, id);
}

static void params(unsigned int cfg, struct weft_mpw *w, const char **name)
{
	static const char *const names[] = {"fast", "slow"};
	*name = names[cfg];
	weft_mpw_map(w, 6);
	weft_mpw_str(w, "chain_id");
	weft_mpw_str(w, chain_id);
	weft_mpw_str(w, "channel_tick_ms");
	weft_mpw_uint(w, 10);
	weft_mpw_str(w, "channel_root_ms");
	weft_mpw_uint(w, cfg == 0 ? 40 : 100000);
	weft_mpw_str(w, "channel_root_every");
	weft_mpw_uint(w, cfg == 0 ? 3 : 100000);
	weft_mpw_str(w, "channel_pay_timeout_ms");
	weft_mpw_uint(w, cfg == 0 ? 200 : 60);
	weft_mpw_str(w, "channel_pipeline");
	weft_mpw_uint(w, cfg == 0 ? 4 : 1);
}

/* One planned command: which node, in which phase, what. */
struct plan {
	uint8_t node, phase, cmd;
	int8_t ch;            /* 0 A, 1 B */
	uint8_t from, to;     /* pay */
	uint16_t amount;      /* pay; close: 1 = force */
};

static const struct plan plans[] = {
	/* 0 ms: the opens */
	{1, 0, C_OPEN, 0, 0, 0, 0},
	{0, 0, C_OPEN, 1, 0, 0, 0},
	/* 100 ms: the ledger applied both */
	{0, 1, C_LEDGER, 0, 0, 0, 0},
	{0, 1, C_LEDGER, 1, 0, 0, 0},
	{1, 1, C_LEDGER, 0, 0, 0, 0},
	{1, 1, C_LEDGER, 1, 0, 0, 0},
	{2, 1, C_LEDGER, 0, 0, 0, 0},
	{2, 1, C_LEDGER, 1, 0, 0, 0},
	{3, 1, C_LEDGER, 0, 0, 0, 0},
	{3, 1, C_LEDGER, 1, 0, 0, 0},
	/* 200 ms: payments every way (node 1 pipelines two) */
	{0, 2, C_PAY, 1, 0, 1, 10},
	{0, 2, C_PAY, 0, 1, 0, 20},
	{0, 2, C_PAY, 0, 3, 2, 5},
	{1, 2, C_PAY, 0, 0, 1, 30},
	{1, 2, C_PAY, 0, 0, 3, 3},
	{2, 2, C_PAY, 0, 2, 3, 7},
	{3, 2, C_PAY, 1, 1, 0, 15},
	/* 300 ms: roots */
	{1, 3, C_ROOT, 0, 0, 0, 0},
	{0, 3, C_ROOT, 1, 0, 0, 0},
	/* 400 ms: payments counting what came in; an invoice; a lock routed on
	 * to channel B (refused: its payee is no member of B) */
	{0, 4, C_INVOICE, -1, 2, 0, 12},
	{1, 4, C_LOCK, 0, 0, 1, 9},
	{2, 4, C_PAY, 0, 2, 1, 4},
	{0, 4, C_PAY, 0, 1, 2, 6},
	{1, 4, C_PAY, 0, 0, 2, 2},
	{0, 4, C_PAY, 0, 3, 1, 1},
	/* service channel: opened by node 1 (client) at 0 ms, executed at
	 * 100 ms (C_LEDGER with channel 2), a request at 200 ms (node 0's
	 * wallet sells nothing: REFUSE), a cooperative close at 500 ms */
	{1, 0, C_ASC_OPEN, -1, 0, 0, 0},
	{0, 1, C_LEDGER, 2, 0, 0, 0},
	{1, 1, C_LEDGER, 2, 0, 0, 0},
	{1, 2, C_ASC_REQUEST, -1, 0, 0, 3},
	{1, 5, C_ASC_CLOSE, -1, 0, 0, 0},
	/* 500 ms: roots again, an unknown command */
	{1, 5, C_ROOT, 0, 0, 0, 0},
	{0, 5, C_ROOT, 1, 0, 0, 0},
	{0, 5, C_BOGUS, -1, 0, 0, 0},
	/* 600 ms: cooperative closes */
	{2, 6, C_CLOSE, 0, 0, 0, 0},
	{3, 6, C_CLOSE, 1, 0, 0, 0},
	/* 700 ms: a unilateral close of A */
	{0, 7, C_CLOSE, 0, 0, 0, 1},
};

static bool seed_command(unsigned int cfg, uint32_t node, unsigned int phase, unsigned int k, unsigned int *what,
			 struct weft_mpw *w)
{
	(void)cfg;
	const struct plan *p = NULL;
	for (size_t i = 0, seen = 0; i < sizeof(plans) / sizeof(plans[0]) && p == NULL; i++)
		if (plans[i].node == node && plans[i].phase == phase && seen++ == k)
			p = &plans[i];
	if (p == NULL)
		return false;
	*what = p->cmd;
	uint8_t id[32];
	if (p->ch >= 0 && p->ch < 2)
		id_of(p->ch, id);
	switch (p->cmd) {
	case C_ASC_OPEN:
		weft_mpw_array(w, 5);
		weft_mpw_bin(w, pk[1], 32);
		weft_mpw_bin(w, pk[2], 32);
		weft_mpw_uint(w, host_of[2]);
		weft_mpw_uint(w, 60);
		weft_mpw_uint(w, 100);
		break;
	case C_ASC_REQUEST:
		asc_id_of(id);
		weft_mpw_array(w, 4);
		weft_mpw_bin(w, id, 32);
		weft_mpw_str(w, "svc");
		weft_mpw_bin(w, "payload", 7);
		weft_mpw_uint(w, p->amount);
		break;
	case C_ASC_CLOSE:
		asc_id_of(id);
		weft_mpw_bin(w, id, 32);
		break;
	case C_OPEN: {
		const struct chspec *c = &chans[p->ch];
		weft_mpw_array(w, 3);
		weft_mpw_array(w, c->n);
		for (uint32_t m = 0; m < c->n; m++)
			weft_mpw_bin(w, pk[c->key[m]], 32);
		weft_mpw_array(w, c->n);
		for (uint32_t m = 0; m < c->n; m++)
			weft_mpw_uint(w, host_of[c->key[m]]);
		weft_mpw_array(w, c->n);
		for (uint32_t m = 0; m < c->n; m++)
			weft_mpw_uint(w, c->dep[m]);
		break;
	}
	case C_LEDGER: {
		struct weft_ledger_channel_open o;
		struct weft_ledger_asc_open ao;
		struct weft_mpw tx;
		weft_mpw_init(&tx);
		if (p->ch == 2) {
			asc_open_of(&ao);
			weft_ledger_asc_open_encode(&ao, &tx);
		} else {
			open_of(p->ch, &o);
			weft_ledger_channel_open_encode(&o, &tx);
		}
		weft_mpw_array(w, 2);
		weft_mpw_bin(w, tx.buf, tx.len);
		weft_mpw_uint(w, WEFT_LEDGER_APPLIED);
		weft_mpw_free(&tx);
		break;
	}
	case C_PAY:
		weft_mpw_array(w, 4);
		weft_mpw_bin(w, id, 32);
		weft_mpw_uint(w, p->from);
		weft_mpw_uint(w, p->to);
		weft_mpw_uint(w, p->amount);
		break;
	case C_LOCK: {
		uint8_t hash[32], next[32];
		memset(hash, 0x33, sizeof(hash));
		id_of(1, next);
		weft_mpw_array(w, 6);
		weft_mpw_bin(w, id, 32);
		weft_mpw_uint(w, p->from);
		weft_mpw_uint(w, p->to);
		weft_mpw_uint(w, p->amount);
		weft_mpw_bin(w, hash, 32);
		weft_mpw_array(w, 1);
		weft_mpw_array(w, 2);
		weft_mpw_bin(w, next, 32);
		weft_mpw_bin(w, pk[6], 32);
		break;
	}
	case C_INVOICE:
		weft_mpw_array(w, 2);
		weft_mpw_bin(w, pk[p->from], 32);
		weft_mpw_uint(w, p->amount);
		break;
	case C_ROOT:
		weft_mpw_bin(w, id, 32);
		break;
	case C_CLOSE:
		weft_mpw_array(w, 2);
		weft_mpw_bin(w, id, 32);
		weft_mpw_bool(w, p->amount == 1);
		break;
	default:
		weft_mpw_nil(w);
		break;
	}
	return true;
}

/* Queries at the end of every script: the list, and each channel's info. */
static void seed_tail(unsigned int cfg, struct weft_mpw *rec)
{
	(void)cfg;
	uint8_t list = 0;
	pf_record_op(rec, 0xf0, &list, 1);
	for (int ch = 0; ch < 2; ch++) {
		struct weft_mpw q;
		weft_mpw_init(&q);
		uint8_t which = 1, id[32];
		weft_mpw_raw(&q, &which, 1);
		id_of(ch, id);
		weft_mpw_bin(&q, id, 32);
		pf_record_op(rec, 0xf0, q.buf, q.len);
		weft_mpw_free(&q);
	}
}

/* Script d: node 0 loses channel A's first FINAL of member 2 (a payment to
 * member 3, on node 0), so that member 2's next proposal to node 0 names a
 * parent it lacks: FETCH, then PAYS. */
static bool seed_drop(const uint8_t *msg, size_t len)
{
	struct weft_mp_reader r;
	struct weft_channel_payment p;
	uint32_t count;
	uint64_t v, type;
	uint8_t id[32], a[32];
	weft_mp_reader_init(&r, msg, len);
	if (weft_mp_read_array(&r, &count) != 0 || count != 4 || weft_mp_read_uint(&r, &v) != 0 ||
	    weft_mp_read_uint(&r, &type) != 0 || type != 7 || weft_mp_read_bin_fixed(&r, id, 32) != 0)
		return false;
	id_of(0, a);
	return memcmp(id, a, 32) == 0 && weft_channel_payment_read(&r, 4, &p) == 0 && p.from == 2 && p.seq == 1;
}

static const char *scripts_for(unsigned int cfg)
{
	return cfg == 0 ? "abcd" : "bc";
}

static const struct pf_target target = {
	.ops = &weft_channel_service,
	.nconfigs = 2,
	.params = params,
	.seed_tail = seed_tail,
	.queries = queries,
	.msgpack_sends = true,
	.seed_horizon_us = 1200000,
	.seed_max = 60000,
	.scripts_for = scripts_for,
	.seed_cut_us = 30000,
	.seed_drop = seed_drop,
	.wallet_host = wallet_host,
	.commands = commands,
	.seed_command = seed_command,
	.seed_phases = 8,
	.seed_phase_us = 100000,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "weft_crypto_init");
	for (unsigned int k = 1; k <= NKEYS; k++)
		pf_ledger_key(k, NULL, pk[k]);
	pf_initialize(&target);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pf_run(&target, data, size);
	return 0;
}
