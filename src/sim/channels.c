/* channels.c - weft-sim's payment channel workload (the scenario's
 * "channel" object), the host services the node stack's channel service
 * needs (weft/channel.h: the wallets and the event sink) and the channel
 * checkers.
 *
 * Members.  Member m's secret key is BLAKE2b-256 keyed "weft-sim-member"
 * over (seed, m, try), the first try that is a valid secp256k1 key; its
 * account is weft_ledger_pubkey of it.  The genesis ledger funds every
 * member with the deposit (params.balances, added to the scenario's
 * parameters for the run) and the channel's open deposits all of it, so
 * the members' ledger balances add up to members * deposit before the
 * open and after the settlement.
 *
 * Wallets.  Node k's wallets sign for the members it hosts (WEFT_NOTFOUND
 * for any other key) with real BIP340 (a weft_ledger_signer per member, as
 * weftd's wallets; its blinding seed and each signature's auxiliary
 * randomness are hashes of the key and message, so that a run stays a
 * function of its seed) and verify any member's signature.  With
 * "signatures": "fast" the signatures stay real BIP340, since the ledger
 * checks those of opens, closes and posted roots itself, but verification
 * looks the (key, message, signature) up in a table of the signatures the
 * simulated wallets made, falling back to real verification on a miss:
 * each signature is checked at every node that holds it, which is where
 * the time went at large n and M.
 *
 * Events.  The engine hands over a node's events once the step that
 * emitted them is durable (a step a crash with lose "last_step" rolls back
 * keeps none); they are queued and handled by a drain event right after
 * the step, outside any protocol callback.
 *
 * The workload.  At start_ms the node of member 0 (the opener) runs
 * "channel.open" for every member with its host and the whole deposit;
 * once every live member node reported the open, one payment attempt every
 * every_ms: a sender drawn uniformly among the members whose node is up
 * and who have no payment in flight (as far as the workload knows), a
 * receiver among the other members, an amount uniform in [1, amount_max];
 * "channel.pay" at the sender's node.  Its end is the sender node's
 * payment event (finalized, refused with a reason, timeout); a refusal by
 * the sender's own node ("insufficient channel balance") ends it at once;
 * "busy" (WEFT_EAGAIN) is counted and the attempt is made again later; a
 * payment without an end two payment timeouts (and two root periods) after
 * it was made, its node up, is counted as lost (the node restarted and
 * forgot the proposal, or a crash rolled the step back).  When a batch's
 * attempts have all ended, "channel.root" at the opener's node, and the
 * next batch once its root event came (asked again after a while, given
 * up after three tries).  Every root of the opener's node measures the
 * liquidity skew of its balances b: sum |b_i - mean| / sum b_i, at most
 * 2 (1 - 1/M).  The close, if the scenario asks for one, at close_ms
 * (payments still being made are refused from then on) or once the
 * payments are done, asked again while the closer's node refuses it.
 *
 * Checkers.  channel_conservation, at every root event of a correct node
 * and at the end at every live correct node, reads channel.info: the
 * newest all-signed root's balances (close_now) add up to the deposits;
 * no member overspent in the node's view (sent <= deposit + received,
 * i.e. its balance did not wrap below zero); nodes and times that saw a
 * root version saw the same balances.  At the end it reads the members'
 * ledger balances (ledger.balance) at every live correct node: they add
 * up to the funding minus what the channel holds (all of it once the
 * channel settled: conserved exactly), and once it settled each equals
 * the newest root's balance.  channel_progress: at least
 * bounds.channel_progress_min of the scenario's payments finalized. */
#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"
#include "weft/mp.h"
#include "weft/util.h"

#define POLL_US 10000                 /* the workload's pace outside the payments */
#define OPEN_RETRY_US 100000
#define CLOSE_RETRY_US 100000
#define ROOT_TRIES 3
#define MEMBER_KEY "weft-sim-member"
#define AUX_KEY "weft-sim-aux"

/* EV_CHANNEL's arg: the operation << 32 | a generation. */
enum op { OP_TICK = 1, OP_DRAIN = 2 };

enum phase {
	PH_START,     /* before start_ms: the open is next */
	PH_OPENING,   /* open asked: waiting for the opener node's open event */
	PH_PAYING,    /* the batch's attempts are being made */
	PH_SETTLING,  /* the batch is made: waiting for its payments to end */
	PH_ROOTING,   /* root asked after the batch: waiting for the root event */
	PH_DONE,      /* every payment made and rooted */
	PH_FINISHED,  /* no more payments (the close goes its own way) */
	PH_FAILED,    /* the open failed */
};

struct wallet {
	struct weft_wallet_service svc;
	struct sim_chan *ch;
	uint32_t node;
};

struct pending {
	bool on;
	uint64_t seq;
	uint64_t since_us;
	uint32_t batch;
};

struct queued {
	uint32_t node;
	uint8_t *ev;
	size_t len;
};

struct reason {
	char why[72];
	uint64_t count;
};

struct sim_chan {
	const struct sim_scenario *sc;
	const struct sim_channel_work *w;
	struct sim_chan_host host;
	uint32_t m;
	uint64_t total;                /* members * deposit: the funding and the deposits */
	uint8_t (*sec)[32];            /* sodium_malloc'd: m x 32 */
	uint8_t (*pub)[32];
	struct weft_ledger_signer **signer; /* per member, made at its first signature */
	struct wallet *wallets;        /* per node */
	bool fast;
	uint8_t (*memo)[16];           /* fast: digests of the signatures made, open addressing */
	size_t memo_cap, memo_len;
	uint64_t pay_timeout_us, lost_us, root_wait_us;
	struct weft_rng rng;

	enum phase phase;
	uint64_t gen;                  /* ticks of other generations are stale */
	bool drain_armed;
	uint8_t id[32];
	char idhex[65];
	bool have_id;
	uint64_t opened_us;
	uint32_t batch_no, batch_made, batch_open, batch_final;
	uint32_t made;                 /* attempts made (busy ones are not) */
	struct pending *pend;          /* per member */
	uint64_t root_asked_us;
	uint32_t root_tries;
	uint64_t close_at_us;          /* when to ask for the close (again); 0: not due yet */
	bool close_asked;              /* the closer's node took the close */
	struct queued *q;
	size_t qlen, qcap;
	bool *root_dirty;              /* per node: a root event since its last check */
	bool *opened;                  /* per node: it reported the open */
	bool opener_root;              /* the opener's node made a root since the last skew */

	/* counts */
	uint64_t attempts, finalized, timeouts, busy, lost, received, no_sender;
	struct reason *refused;
	size_t nrefused;
	uint64_t roots, roots_missed, skew_roots;
	double max_skew;
	uint32_t batches;
	double batch_min;
	uint64_t commits, disputes, evidence, close_tries;
	bool closed, open_failed;
	uint64_t closed_us;
	uint64_t done_us;              /* when the last batch ended (its root came) */
	char open_failed_why[64];

	/* checks */
	uint64_t *root_bal;            /* per root version seen: m balances; NULL rows not seen */
	bool *root_seen;
	uint64_t root_cap;
	uint64_t newest;               /* the highest root version a correct node reported */
	uint64_t checks, violations;
	char first[768];
	const bool *correct;           /* during the judge; NULL: every node */
	uint64_t ledger_sum;
	bool ledger_known;
	bool settled;                  /* a correct node's ledger says the channel closed */
	json_t *views;                 /* the judge: each live correct node's view */
};

/* ---- keys and wallets ---- */

static long member_of(const struct sim_chan *ch, const uint8_t key[32])
{
	for (uint32_t m = 0; m < ch->m; m++)
		if (memcmp(ch->pub[m], key, 32) == 0)
			return (long)m;
	return -1;
}

static void memo_digest(const uint8_t key[32], const uint8_t msg[32], const uint8_t sig[64], uint8_t d[16])
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, 16);
	crypto_generichash_update(&st, key, 32);
	crypto_generichash_update(&st, msg, 32);
	crypto_generichash_update(&st, sig, 64);
	crypto_generichash_final(&st, d, 16);
}

static size_t memo_slot(const uint8_t d[16], size_t cap)
{
	uint64_t h;
	memcpy(&h, d, 8);
	return (size_t)h & (cap - 1);
}

static bool memo_has(const struct sim_chan *ch, const uint8_t d[16])
{
	static const uint8_t zero[16];
	if (ch->memo_cap == 0)
		return false;
	for (size_t i = memo_slot(d, ch->memo_cap);; i = (i + 1) & (ch->memo_cap - 1)) {
		if (memcmp(ch->memo[i], d, 16) == 0)
			return true;
		if (memcmp(ch->memo[i], zero, 16) == 0)
			return false;
	}
}

static void memo_put(struct sim_chan *ch, const uint8_t d[16])
{
	static const uint8_t zero[16];
	if (memcmp(d, zero, 16) == 0 || memo_has(ch, d))
		return;
	if ((ch->memo_len + 1) * 2 > ch->memo_cap) {
		size_t cap = ch->memo_cap ? 2 * ch->memo_cap : 4096;
		uint8_t(*t)[16] = weft_xcalloc(cap, 16);
		for (size_t i = 0; i < ch->memo_cap; i++) {
			if (memcmp(ch->memo[i], zero, 16) == 0)
				continue;
			size_t j = memo_slot(ch->memo[i], cap);
			while (memcmp(t[j], zero, 16) != 0)
				j = (j + 1) & (cap - 1);
			memcpy(t[j], ch->memo[i], 16);
		}
		free(ch->memo);
		ch->memo = t;
		ch->memo_cap = cap;
	}
	size_t j = memo_slot(d, ch->memo_cap);
	while (memcmp(ch->memo[j], zero, 16) != 0)
		j = (j + 1) & (ch->memo_cap - 1);
	memcpy(ch->memo[j], d, 16);
	ch->memo_len++;
}

static int wallet_sign(void *ctx, const uint8_t key[32], const uint8_t msg[32], uint8_t sig[64])
{
	struct wallet *wl = ctx;
	struct sim_chan *ch = wl->ch;
	long m = member_of(ch, key);
	if (m < 0 || ch->w->hosts[m] != wl->node)
		return WEFT_NOTFOUND;
	uint8_t aux[32];
	crypto_generichash_state st;
	crypto_generichash_init(&st, (const uint8_t *)AUX_KEY, sizeof(AUX_KEY) - 1, sizeof(aux));
	crypto_generichash_update(&st, key, 32);
	crypto_generichash_update(&st, msg, 32);
	crypto_generichash_final(&st, aux, sizeof(aux));
	if (ch->signer[m] == NULL) {
		uint8_t seed[32];
		crypto_generichash(seed, sizeof(seed), ch->pub[m], 32, (const uint8_t *)AUX_KEY, sizeof(AUX_KEY) - 1);
		int rc = weft_ledger_signer_new(ch->sec[m], seed, &ch->signer[m]);
		if (rc != 0)
			return rc;
	}
	int rc = weft_ledger_signer_sign(ch->signer[m], msg, aux, sig);
	if (rc == 0 && ch->fast) {
		uint8_t d[16];
		memo_digest(key, msg, sig, d);
		memo_put(ch, d);
	}
	return rc;
}

static int wallet_verify(void *ctx, const uint8_t key[32], const uint8_t msg[32], const uint8_t sig[64])
{
	struct wallet *wl = ctx;
	if (wl->ch->fast) {
		uint8_t d[16];
		memo_digest(key, msg, sig, d);
		if (memo_has(wl->ch, d))
			return 0;
	}
	return weft_ledger_schnorr_verify(key, msg, sig);
}

const struct weft_wallet_service *sim_chan_wallets(struct sim_chan *ch, uint32_t node)
{
	return ch && node < ch->sc->n ? &ch->wallets[node].svc : NULL;
}

static void derive(struct sim_chan *ch, uint64_t seed)
{
	for (uint32_t m = 0; m < ch->m; m++) {
		for (uint8_t tries = 0;; tries++) {
			uint8_t in[13];
			for (int i = 0; i < 8; i++)
				in[i] = (uint8_t)(seed >> (8 * i));
			weft_be32_put(in + 8, m);
			in[12] = tries;
			crypto_generichash(ch->sec[m], 32, in, sizeof(in), (const uint8_t *)MEMBER_KEY,
					   sizeof(MEMBER_KEY) - 1);
			if (weft_ledger_pubkey(ch->sec[m], ch->pub[m]) == 0)
				break; /* an invalid key has probability about 2^-128 */
		}
	}
}

/* ---- set-up ---- */

static uint64_t params_uint(const struct sim_scenario *sc, const char *key, uint64_t dflt)
{
	uint64_t v;
	return weft_params_uint(sc->params, sc->plen, key, &v) == 0 ? v : dflt;
}

struct sim_chan *sim_chan_new(const struct sim_scenario *sc, uint64_t seed, const struct sim_chan_host *host)
{
	if (!sc->channel.on)
		return NULL;
	struct sim_chan *ch = weft_xcalloc(1, sizeof(*ch));
	ch->sc = sc;
	ch->w = &sc->channel;
	ch->host = *host;
	ch->m = sc->channel.members;
	ch->total = sc->channel.deposit * ch->m;
	ch->fast = sc->signatures == SIM_SIG_FAST;
	ch->sec = sodium_malloc((size_t)ch->m * 32);
	if (ch->sec == NULL)
		abort();
	ch->pub = weft_xcalloc(ch->m, 32);
	ch->signer = weft_xcalloc(ch->m, sizeof(*ch->signer));
	derive(ch, seed);
	ch->wallets = weft_xcalloc(sc->n, sizeof(*ch->wallets));
	for (uint32_t i = 0; i < sc->n; i++)
		ch->wallets[i] = (struct wallet){.svc = {.ctx = &ch->wallets[i], .sign = wallet_sign,
							   .verify = wallet_verify},
						 .ch = ch, .node = i};
	ch->pend = weft_xcalloc(ch->m, sizeof(*ch->pend));
	ch->root_dirty = weft_xcalloc(sc->n, sizeof(bool));
	ch->opened = weft_xcalloc(sc->n, sizeof(bool));
	weft_rng_seed(&ch->rng, seed ^ UINT64_C(0xc4a77e1c4a77e1));
	ch->pay_timeout_us = params_uint(sc, "channel_pay_timeout_ms", 10000) * 1000;
	uint64_t root_us = params_uint(sc, "channel_root_ms", 1000) * 1000;
	ch->lost_us = 2 * ch->pay_timeout_us + 2 * root_us;
	ch->root_wait_us = 4 * root_us > 2000000 ? 4 * root_us : 2000000;
	if (ch->root_wait_us > 30000000)
		ch->root_wait_us = 30000000;
	ch->batch_min = 1.0;
	ch->phase = PH_START;
	return ch;
}

void sim_chan_free(struct sim_chan *ch)
{
	if (!ch)
		return;
	for (uint32_t m = 0; m < ch->m; m++)
		weft_ledger_signer_free(ch->signer[m]);
	free(ch->signer);
	sodium_free(ch->sec);
	free(ch->pub);
	free(ch->wallets);
	free(ch->memo);
	free(ch->pend);
	free(ch->root_dirty);
	free(ch->opened);
	for (size_t i = 0; i < ch->qlen; i++)
		free(ch->q[i].ev);
	free(ch->q);
	free(ch->refused);
	free(ch->root_bal);
	free(ch->root_seen);
	json_decref(ch->views);
	free(ch);
}

uint8_t *sim_chan_params(const struct sim_chan *ch, const uint8_t *params, size_t plen, size_t *len, char *err,
			 size_t errlen)
{
	const uint8_t *v;
	size_t vlen;
	if (weft_params_value(params, plen, "balances", &v, &vlen) == 0) {
		snprintf(err, errlen,
			 "params.balances: the channel workload funds its members on the genesis ledger itself; "
			 "leave balances out");
		return NULL;
	}
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_map(&w, ch->m);
	for (uint32_t m = 0; m < ch->m; m++) {
		char hex[65];
		weft_hex_encode(hex, ch->pub[m], 32);
		weft_mpw_str(&w, hex);
		weft_mpw_uint(&w, ch->w->deposit);
	}
	uint8_t *out = weft_params_with(params, plen, "balances", w.buf, w.len, len);
	weft_mpw_free(&w);
	return out;
}

/* ---- violations ---- */

__attribute__((format(printf, 2, 3))) static void violation(struct sim_chan *ch, const char *fmt, ...)
{
	ch->violations++;
	if (ch->first[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ch->first, sizeof(ch->first), fmt, ap);
	va_end(ap);
}

/* ---- reading what the protocol says ---- */

static bool str_is(const uint8_t *map, size_t len, const char *key, const char *want)
{
	return weft_params_str_is(map, len, key, want);
}

/* The elements of a msgpack array value as [start, end) spans: calls fn
 * for each; false when it is not an array. */
static bool each_element(const uint8_t *v, size_t vlen, void (*fn)(void *arg, uint32_t i, const uint8_t *e, size_t elen),
			 void *arg)
{
	struct weft_mp_reader r;
	uint32_t count;
	weft_mp_reader_init(&r, v, vlen);
	if (weft_mp_read_array(&r, &count) != 0)
		return false;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *start = r.p;
		if (weft_mp_skip(&r) != 0)
			return false;
		fn(arg, i, start, (size_t)(r.p - start));
	}
	return true;
}

struct info {
	bool ok;
	uint32_t n;
	uint64_t version;
	uint64_t unrooted;             /* payments held beyond the newest root */
	uint64_t deposit[WEFT_CHANNEL_MAX], balance[WEFT_CHANNEL_MAX], close_now[WEFT_CHANNEL_MAX],
		sent[WEFT_CHANNEL_MAX];
	bool bad_member;
	char status[16];
	char ledger[16];               /* the ledger's status of the channel, "" when it has none */
};

static void read_member(void *arg, uint32_t i, const uint8_t *e, size_t elen)
{
	struct info *in = arg;
	if (i >= WEFT_CHANNEL_MAX) {
		in->bad_member = true;
		return;
	}
	if (weft_params_uint(e, elen, "deposit", &in->deposit[i]) != 0 ||
	    weft_params_uint(e, elen, "balance", &in->balance[i]) != 0 ||
	    weft_params_uint(e, elen, "close_now", &in->close_now[i]) != 0 ||
	    weft_params_uint(e, elen, "sent", &in->sent[i]) != 0)
		in->bad_member = true;
	in->n = i + 1;
}

static void copy_str(const uint8_t *map, size_t len, const char *key, char *out, size_t outlen)
{
	const char *s;
	uint32_t slen;
	out[0] = '\0';
	if (weft_params_str(map, len, key, &s, &slen) == 0)
		snprintf(out, outlen, "%.*s", (int)slen, s);
}

/* channel.info at node: in->ok when the node is up, holds the channel and
 * the answer reads. */
static void read_info(struct sim_chan *ch, uint32_t node, struct info *in)
{
	struct weft_mpw arg, reply;
	const uint8_t *v;
	size_t vlen;
	memset(in, 0, sizeof(*in));
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_bin(&arg, ch->id, 32);
	int rc = ch->host.query(ch->host.ctx, node, "channel.info", arg.buf, arg.len, &reply);
	if (rc == 0 && weft_params_value(reply.buf, reply.len, "members", &v, &vlen) == 0 &&
	    each_element(v, vlen, read_member, in) && !in->bad_member && in->n == ch->m &&
	    weft_params_value(reply.buf, reply.len, "root", &v, &vlen) == 0 &&
	    weft_params_uint(v, vlen, "version", &in->version) == 0) {
		in->ok = true;
		weft_params_uint(reply.buf, reply.len, "unrooted", &in->unrooted);
		copy_str(reply.buf, reply.len, "status", in->status, sizeof(in->status));
		if (weft_params_value(reply.buf, reply.len, "ledger", &v, &vlen) == 0)
			copy_str(v, vlen, "status", in->ledger, sizeof(in->ledger));
	} else if (rc == 0) {
		violation(ch, "channel_conservation: node %u's channel.info does not read", node);
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
}

/* ---- the conservation checks on one node's view ---- */

static void remember_root(struct sim_chan *ch, uint32_t node, uint64_t version, const uint64_t *bal)
{
	if (version >= ch->root_cap) {
		uint64_t cap = ch->root_cap ? ch->root_cap : 64;
		while (cap <= version)
			cap *= 2;
		ch->root_bal = weft_xrealloc(ch->root_bal, cap * ch->m, sizeof(uint64_t));
		ch->root_seen = weft_xrealloc(ch->root_seen, cap, sizeof(bool));
		memset(ch->root_seen + ch->root_cap, 0, (cap - ch->root_cap) * sizeof(bool));
		ch->root_cap = cap;
	}
	uint64_t *row = ch->root_bal + version * ch->m;
	if (!ch->root_seen[version]) {
		ch->root_seen[version] = true;
		memcpy(row, bal, ch->m * sizeof(uint64_t));
		if (version > ch->newest)
			ch->newest = version;
		return;
	}
	for (uint32_t i = 0; i < ch->m; i++)
		if (row[i] != bal[i]) {
			violation(ch,
				  "channel_conservation: node %u's root %llu pays member %u %llu, another correct node's "
				  "root %llu paid it %llu",
				  node, (unsigned long long)version, i, (unsigned long long)bal[i],
				  (unsigned long long)version, (unsigned long long)row[i]);
			return;
		}
}

static bool is_correct(const struct sim_chan *ch, uint32_t node)
{
	return ch->correct ? ch->correct[node] : ch->host.correct(ch->host.ctx, node);
}

/* The checks on node's view now; the view in *in (in->ok false when the
 * node is down or holds no channel). */
static void check_node(struct sim_chan *ch, uint32_t node, struct info *in)
{
	read_info(ch, node, in);
	if (!in->ok)
		return;
	ch->checks++;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < ch->m; i++)
		sum += in->close_now[i];
	if (sum != ch->total)
		violation(ch, "channel_conservation: node %u's root %llu pays %llu in all, the deposits are %llu", node,
			  (unsigned long long)in->version, (unsigned long long)sum, (unsigned long long)ch->total);
	for (uint32_t i = 0; i < ch->m; i++) {
		/* balance = deposit + received - sent, modulo 2^64: below zero it wraps past the total */
		if (in->balance[i] > ch->total) {
			uint64_t received = in->balance[i] + in->sent[i] - in->deposit[i];
			violation(ch,
				  "channel_conservation: node %u holds payments of member %u worth %llu, more than its "
				  "deposit %llu and the %llu it received (an overspend was finalized)",
				  node, i, (unsigned long long)in->sent[i], (unsigned long long)in->deposit[i],
				  (unsigned long long)received);
			break;
		}
	}
	remember_root(ch, node, in->version, in->close_now);
}

/* ---- commands ---- */

static int command(struct sim_chan *ch, uint32_t node, const char *what, const struct weft_mpw *arg,
		   struct weft_mpw *reply)
{
	weft_mpw_reset(reply);
	return ch->host.command(ch->host.ctx, node, what, arg->buf, arg->len, reply);
}

/* A refusal's reason: the string the command answered, or the code's name. */
static void reply_reason(const struct weft_mpw *reply, int rc, char *out, size_t len)
{
	struct weft_mp_reader r;
	const char *s;
	uint32_t slen;
	weft_mp_reader_init(&r, reply->buf, reply->len);
	if (reply->len && weft_mp_read_str(&r, &s, &slen) == 0)
		snprintf(out, len, "%.*s", (int)slen, s);
	else
		snprintf(out, len, "%s", weft_strerror(rc));
}

static void count_refused(struct sim_chan *ch, const char *why)
{
	for (size_t i = 0; i < ch->nrefused; i++)
		if (strcmp(ch->refused[i].why, why) == 0) {
			ch->refused[i].count++;
			return;
		}
	ch->refused = weft_xrealloc(ch->refused, ch->nrefused + 1, sizeof(*ch->refused));
	snprintf(ch->refused[ch->nrefused].why, sizeof(ch->refused[0].why), "%s", why);
	ch->refused[ch->nrefused++].count = 1;
}

static void schedule(struct sim_chan *ch, uint64_t at_us, enum op op)
{
	ch->host.schedule(ch->host.ctx, at_us, ((uint64_t)op << 32) | (uint32_t)ch->gen);
}

/* The next tick, at now + us, in place of any scheduled. */
static void tick_in(struct sim_chan *ch, uint64_t us)
{
	ch->gen++;
	schedule(ch, ch->host.now(ch->host.ctx) + us, OP_TICK);
}

static void open_channel(struct sim_chan *ch)
{
	const struct sim_channel_work *w = ch->w;
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 3);
	weft_mpw_array(&arg, ch->m);
	for (uint32_t m = 0; m < ch->m; m++)
		weft_mpw_bin(&arg, ch->pub[m], 32);
	weft_mpw_array(&arg, ch->m);
	for (uint32_t m = 0; m < ch->m; m++)
		weft_mpw_uint(&arg, w->hosts[m]);
	weft_mpw_array(&arg, ch->m);
	for (uint32_t m = 0; m < ch->m; m++)
		weft_mpw_uint(&arg, w->deposit);
	int rc = command(ch, w->hosts[0], "channel.open", &arg, &reply);
	const char *hex;
	uint32_t hlen;
	if (rc == 0 && weft_params_str(reply.buf, reply.len, "channel", &hex, &hlen) == 0 && hlen == 64 &&
	    weft_hex_decode(ch->id, 32, hex, hlen) == 0) {
		memcpy(ch->idhex, hex, 64);
		ch->idhex[64] = '\0';
		ch->have_id = true;
		ch->phase = PH_OPENING;
	} else if (rc != WEFT_EUNSUPPORTED && rc != WEFT_EAGAIN) {
		/* refused for good (e.g. the protocol has no channel service) */
		ch->open_failed = true;
		reply_reason(&reply, rc, ch->open_failed_why, sizeof(ch->open_failed_why));
		ch->phase = PH_FAILED;
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
}

/* One payment attempt. */
static void attempt(struct sim_chan *ch)
{
	const struct sim_channel_work *w = ch->w;
	uint64_t now = ch->host.now(ch->host.ctx);
	uint32_t from = UINT32_MAX, seen = 0;
	for (uint32_t m = 0; m < ch->m; m++) {
		if (ch->pend[m].on || !ch->host.up(ch->host.ctx, w->hosts[m]))
			continue;
		if (weft_rng_below(&ch->rng, ++seen) == 0)
			from = m;
	}
	if (from == UINT32_MAX) {
		ch->no_sender++;
		return;
	}
	uint32_t to = (uint32_t)weft_rng_below(&ch->rng, ch->m - 1);
	if (to >= from)
		to++;
	uint64_t amount = 1 + weft_rng_below(&ch->rng, w->amount_max);
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 4);
	weft_mpw_bin(&arg, ch->id, 32);
	weft_mpw_uint(&arg, from);
	weft_mpw_uint(&arg, to);
	weft_mpw_uint(&arg, amount);
	int rc = command(ch, w->hosts[from], "channel.pay", &arg, &reply);
	uint64_t seq;
	if (rc == WEFT_EAGAIN) {
		ch->busy++;
	} else if (rc == 0 && weft_params_uint(reply.buf, reply.len, "seq", &seq) == 0) {
		ch->pend[from] = (struct pending){.on = true, .seq = seq, .since_us = now, .batch = ch->batch_no};
		ch->attempts++, ch->made++, ch->batch_made++, ch->batch_open++;
	} else if (rc != WEFT_EUNSUPPORTED) {
		char why[72];
		reply_reason(&reply, rc, why, sizeof(why));
		count_refused(ch, why);
		ch->attempts++, ch->made++, ch->batch_made++;
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
}

/* The end of member from's attempt seq: status "finalized", "refused",
 * "timeout" or "lost". */
static void resolve(struct sim_chan *ch, uint32_t from, const char *status, const char *why)
{
	struct pending *p = &ch->pend[from];
	p->on = false;
	if (strcmp(status, "finalized") == 0)
		ch->finalized++;
	else if (strcmp(status, "refused") == 0)
		count_refused(ch, why && *why ? why : "refused");
	else if (strcmp(status, "timeout") == 0)
		ch->timeouts++;
	else
		ch->lost++;
	if (p->batch == ch->batch_no && ch->batch_open) {
		ch->batch_open--;
		ch->batch_final += strcmp(status, "finalized") == 0;
	}
}

/* The liquidity skew of a root's balances b: sum |b_i - mean| / sum b_i. */
static void measure_skew(struct sim_chan *ch, const uint64_t *bal)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < ch->m; i++)
		sum += bal[i];
	if (sum == 0)
		return;
	double mean = (double)sum / ch->m, dev = 0;
	for (uint32_t i = 0; i < ch->m; i++) {
		double d = (double)bal[i] - mean;
		dev += d < 0 ? -d : d;
	}
	double skew = dev / (double)sum;
	ch->skew_roots++;
	if (skew > ch->max_skew)
		ch->max_skew = skew;
}

static void on_event(struct sim_chan *ch, uint32_t node, const uint8_t *ev, size_t len)
{
	char hex[65];
	copy_str(ev, len, "channel", hex, sizeof(hex));
	if (!ch->have_id || strcmp(hex, ch->idhex) != 0)
		return;
	uint64_t from = 0, seq = 0, version = 0;
	if (str_is(ev, len, "event", "payment")) {
		char status[16], why[72];
		copy_str(ev, len, "status", status, sizeof(status));
		copy_str(ev, len, "reason", why, sizeof(why));
		if (weft_params_uint(ev, len, "from", &from) != 0 || from >= ch->m ||
		    weft_params_uint(ev, len, "seq", &seq) != 0)
			return;
		if (strcmp(status, "received") == 0) {
			ch->received++;
			return;
		}
		if (ch->w->hosts[from] != node || !ch->pend[from].on || ch->pend[from].seq != seq)
			return; /* not ours, or its end was counted already */
		resolve(ch, (uint32_t)from, status, why);
	} else if (str_is(ev, len, "event", "root")) {
		weft_params_uint(ev, len, "version", &version);
		ch->root_dirty[node] = true;
		if (node == ch->w->hosts[0]) {
			ch->roots++;
			ch->opener_root = true;
			if (ch->phase == PH_ROOTING) {
				ch->root_tries = 0;
				ch->phase = ch->made >= ch->w->payments ? PH_DONE : PH_PAYING;
				if (ch->phase == PH_PAYING)
					tick_in(ch, 0);
			}
		}
	} else if (str_is(ev, len, "event", "open")) {
		ch->opened[node] = true;
	} else if (str_is(ev, len, "event", "open_failed")) {
		if (node == ch->w->hosts[0] && ch->phase == PH_OPENING) {
			ch->phase = PH_FAILED;
			ch->open_failed = true;
			copy_str(ev, len, "reason", ch->open_failed_why, sizeof(ch->open_failed_why));
		}
	} else if (str_is(ev, len, "event", "closed")) {
		if (!ch->closed) {
			ch->closed = true;
			ch->closed_us = ch->host.now(ch->host.ctx);
		}
	} else if (str_is(ev, len, "event", "commit")) {
		ch->commits++;
	} else if (str_is(ev, len, "event", "dispute")) {
		ch->disputes++;
	} else if (str_is(ev, len, "event", "evidence")) {
		ch->evidence++;
	}
}

void sim_chan_event(struct sim_chan *ch, uint32_t node, const uint8_t *ev, size_t len)
{
	if (!ch)
		return;
	if (ch->qlen == ch->qcap) {
		ch->qcap = ch->qcap ? 2 * ch->qcap : 64;
		ch->q = weft_xrealloc(ch->q, ch->qcap, sizeof(*ch->q));
	}
	ch->q[ch->qlen].node = node;
	ch->q[ch->qlen].ev = weft_xmalloc(len ? len : 1);
	memcpy(ch->q[ch->qlen].ev, ev, len);
	ch->q[ch->qlen++].len = len;
	if (!ch->drain_armed) {
		ch->drain_armed = true;
		schedule(ch, ch->host.now(ch->host.ctx), OP_DRAIN);
	}
}

static void drain(struct sim_chan *ch)
{
	/* Handling reads the protocol, which may emit nothing: the queue is stable. */
	for (size_t i = 0; i < ch->qlen; i++) {
		on_event(ch, ch->q[i].node, ch->q[i].ev, ch->q[i].len);
		free(ch->q[i].ev);
	}
	ch->qlen = 0;
	/* A root event: the node's view checked (channel.info costs the
	 * protocol a pass over every payment it holds: once per root). */
	for (uint32_t k = 0; k < ch->sc->n; k++) {
		bool opener = ch->opener_root && k == ch->w->hosts[0];
		if (!ch->root_dirty[k] && !opener)
			continue;
		ch->root_dirty[k] = false;
		struct info in;
		if (is_correct(ch, k))
			check_node(ch, k, &in);
		else
			read_info(ch, k, &in);
		if (opener && in.ok)
			measure_skew(ch, in.close_now);
	}
	ch->opener_root = false;
}

/* The batch's payments all ended: root it, or go on. */
static void batch_done(struct sim_chan *ch)
{
	double rate = ch->batch_made ? (double)ch->batch_final / ch->batch_made : 1.0;
	if (ch->batch_made && rate < ch->batch_min)
		ch->batch_min = rate;
	ch->batches++;
	ch->batch_no++;
	ch->batch_made = ch->batch_open = ch->batch_final = 0;
	ch->phase = ch->made >= ch->w->payments ? PH_DONE : PH_PAYING;
}

static void ask_root(struct sim_chan *ch)
{
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_bin(&arg, ch->id, 32);
	int rc = command(ch, ch->w->hosts[0], "channel.root", &arg, &reply);
	const uint8_t *v;
	size_t vlen;
	bool building = false;
	if (rc == 0 && weft_params_value(reply.buf, reply.len, "building", &v, &vlen) == 0)
		building = vlen == 1 && v[0] == 0xc3;
	ch->root_asked_us = ch->host.now(ch->host.ctx);
	ch->root_tries++;
	if (rc == 0 && !building) /* nothing to root */
		ch->phase = ch->made >= ch->w->payments ? PH_DONE : PH_PAYING, ch->root_tries = 0;
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
}

static void ask_close(struct sim_chan *ch)
{
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 2);
	weft_mpw_bin(&arg, ch->id, 32);
	weft_mpw_bool(&arg, ch->w->close == SIM_CHAN_CLOSE_UNILATERAL);
	ch->close_tries++;
	int rc = command(ch, ch->w->hosts[ch->w->closer], "channel.close", &arg, &reply);
	if (rc == 0)
		ch->close_asked = true;
	else /* unsettled (it asked for a root), or the node is down: again */
		ch->close_at_us = ch->host.now(ch->host.ctx) + CLOSE_RETRY_US;
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
}

/* Phase changes that need no attempt: batch ends, roots, the close. */
static void advance(struct sim_chan *ch)
{
	uint64_t now = ch->host.now(ch->host.ctx);
	for (uint32_t m = 0; m < ch->m; m++) {
		struct pending *p = &ch->pend[m];
		if (p->on && now - p->since_us > ch->lost_us && ch->host.up(ch->host.ctx, ch->w->hosts[m]))
			resolve(ch, m, "lost", NULL);
	}
	for (int guard = 0; guard < 8; guard++) {
		enum phase before = ch->phase;
		switch (ch->phase) {
		case PH_PAYING:
			if (ch->batch_made >= ch->w->batch || ch->made >= ch->w->payments)
				ch->phase = PH_SETTLING;
			break;
		case PH_SETTLING:
			if (ch->batch_open == 0) {
				bool last = ch->made >= ch->w->payments;
				batch_done(ch);
				if (ch->w->root_after_batch) {
					ch->phase = PH_ROOTING;
					ch->root_tries = 0;
					ask_root(ch);
				} else if (!last) {
					ch->phase = PH_PAYING;
				}
			}
			break;
		case PH_ROOTING:
			if (now - ch->root_asked_us >= ch->root_wait_us) {
				if (ch->root_tries >= ROOT_TRIES) {
					ch->roots_missed++;
					ch->root_tries = 0;
					ch->phase = ch->made >= ch->w->payments ? PH_DONE : PH_PAYING;
				} else {
					ask_root(ch);
				}
			}
			break;
		case PH_DONE:
			if (ch->done_us == 0)
				ch->done_us = now;
			ch->phase = PH_FINISHED;
			break;
		case PH_OPENING: {
			/* every live node of a member runs the channel, the opener's first */
			bool all = ch->opened[ch->w->hosts[0]];
			for (uint32_t m = 0; m < ch->m && all; m++)
				all = ch->opened[ch->w->hosts[m]] || !ch->host.up(ch->host.ctx, ch->w->hosts[m]);
			if (all) {
				ch->phase = PH_PAYING;
				ch->opened_us = now;
			}
			break;
		}
		case PH_START:
		case PH_FINISHED:
		case PH_FAILED:
			break;
		}
		if (ch->phase == before)
			break;
		if (ch->phase == PH_PAYING)
			tick_in(ch, 0); /* the next batch's first attempt now */
	}
	/* The close: at close_ms (payments still being made are refused from
	 * then on), or once the payments are done. */
	if (ch->w->close != SIM_CHAN_CLOSE_NONE && !ch->close_asked && !ch->closed && ch->phase >= PH_PAYING &&
	    ch->phase != PH_FAILED) {
		if (ch->close_at_us == 0 && (ch->w->close_us != SIM_NEVER || ch->phase == PH_FINISHED))
			ch->close_at_us = ch->w->close_us != SIM_NEVER && ch->w->close_us > now ? ch->w->close_us : now;
		if (ch->close_at_us && now >= ch->close_at_us)
			ask_close(ch);
	}
}

void sim_chan_start(struct sim_chan *ch)
{
	if (!ch)
		return;
	ch->gen++;
	schedule(ch, ch->w->start_us, OP_TICK);
}

void sim_chan_on_event(struct sim_chan *ch, uint64_t arg)
{
	if (!ch)
		return;
	enum op op = (enum op)(arg >> 32);
	if (op == OP_DRAIN) {
		ch->drain_armed = false;
		drain(ch);
		advance(ch);
		return;
	}
	if ((uint32_t)arg != (uint32_t)ch->gen)
		return; /* a tick replaced by a later one */
	drain(ch);
	if ((uint32_t)arg != (uint32_t)ch->gen)
		return; /* the events scheduled the next tick */
	uint64_t next = POLL_US;
	switch (ch->phase) {
	case PH_START:
		open_channel(ch);
		if (ch->phase == PH_START)
			next = OPEN_RETRY_US;
		break;
	case PH_PAYING:
		attempt(ch);
		next = ch->w->every_us;
		break;
	default:
		break;
	}
	advance(ch);
	if ((uint32_t)arg != (uint32_t)ch->gen)
		return; /* advance scheduled the next tick */
	if (ch->phase == PH_FINISHED || ch->phase == PH_FAILED) {
		bool waiting = ch->phase == PH_FINISHED && ch->w->close != SIM_CHAN_CLOSE_NONE && !ch->closed;
		for (uint32_t m = 0; m < ch->m && !waiting; m++)
			waiting = ch->pend[m].on;
		if (!waiting)
			return; /* nothing left to do or to wait for: no more ticks */
	}
	ch->gen++;
	schedule(ch, ch->host.now(ch->host.ctx) + next, OP_TICK);
}

/* ---- the judge ---- */

static uint64_t ledger_balance(struct sim_chan *ch, uint32_t node, uint32_t m, bool *ok)
{
	struct weft_mpw arg, reply;
	uint64_t b = 0;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_bin(&arg, ch->pub[m], 32);
	*ok = ch->host.query(ch->host.ctx, node, "ledger.balance", arg.buf, arg.len, &reply) == 0 &&
	      weft_params_uint(reply.buf, reply.len, "balance", &b) == 0;
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return b;
}

int sim_chan_judge(struct sim_chan *ch, const bool *correct, struct sim_verdict *v)
{
	if (!ch)
		return 0;
	const struct sim_scenario *sc = ch->sc;
	ch->correct = correct;
	drain(ch);
	/* per node: what its ledger says of the channel, "" when it does not
	 * run the channel or is down */
	char(*ledger)[16] = weft_xcalloc(sc->n, sizeof(*ledger));
	ch->views = json_array();
	for (uint32_t k = 0; k < sc->n; k++) {
		struct info in;
		if (!is_correct(ch, k) || !ch->have_id)
			continue;
		check_node(ch, k, &in);
		if (!in.ok)
			continue;
		snprintf(ledger[k], sizeof(ledger[k]), "%s", in.ledger[0] ? in.ledger : "none");
		json_array_append_new(ch->views, json_pack("{s:i, s:s, s:I, s:I, s:s}", "node", (json_int_t)k, "status",
							   in.status, "root", (json_int_t)in.version, "unrooted",
							   (json_int_t)in.unrooted, "ledger", ledger[k]));
	}
	/* The members' ledger accounts at every live correct node that runs
	 * the channel, against what its ledger says of the channel. */
	const uint64_t *newest = ch->root_cap && ch->root_seen[ch->newest] ? ch->root_bal + ch->newest * ch->m : NULL;
	for (uint32_t k = 0; k < sc->n; k++) {
		if (!ledger[k][0])
			continue;
		bool settled = strcmp(ledger[k], "closed") == 0, on_ledger = strcmp(ledger[k], "none") != 0;
		uint64_t sum = 0;
		bool ok = true, first_wrong = true;
		for (uint32_t m = 0; m < ch->m && ok; m++) {
			uint64_t b = ledger_balance(ch, k, m, &ok);
			sum += b;
			if (ok && settled && newest && b != newest[m] && first_wrong) {
				first_wrong = false;
				violation(ch,
					  "channel_conservation: after the settlement node %u's ledger pays member %u %llu, "
					  "the newest root (version %llu) pays it %llu",
					  k, m, (unsigned long long)b, (unsigned long long)ch->newest,
					  (unsigned long long)newest[m]);
			}
		}
		if (!ok)
			continue;
		uint64_t want = settled || !on_ledger ? ch->total : 0;
		if (sum != want)
			violation(ch,
				  "channel_conservation: node %u's ledger holds %llu in the members' accounts, %llu expected "
				  "(funding %llu, channel %s)",
				  k, (unsigned long long)sum, (unsigned long long)want, (unsigned long long)ch->total,
				  settled ? "settled" : on_ledger ? "open on the ledger" : "not on the ledger");
		ch->ledger_sum = sum;
		ch->ledger_known = true;
		ch->settled |= settled;
	}
	free(ledger);
	int bad = 0;
	const struct {
		unsigned int bit;
		bool failed;
		const char *why;
	} checks[] = {
		{SIM_CHECK_CHANNEL_CONSERVATION, ch->violations > 0, ch->first},
		{SIM_CHECK_CHANNEL_PROGRESS,
		 (double)ch->finalized < sc->bounds.channel_progress_min * (double)ch->w->payments, NULL},
	};
	for (size_t i = 0; i < 2; i++) {
		if (!(sc->checkers & checks[i].bit))
			continue;
		v->checked |= checks[i].bit;
		if (!checks[i].failed)
			continue;
		v->violated |= checks[i].bit;
		bad++;
		if (v->first[0])
			continue;
		if (checks[i].why)
			snprintf(v->first, sizeof(v->first), "%s", checks[i].why);
		else
			snprintf(v->first, sizeof(v->first),
				 "channel_progress: %llu of %u payments finalized (%.4f), below the bound %.4f%s%s",
				 (unsigned long long)ch->finalized, ch->w->payments,
				 ch->w->payments ? (double)ch->finalized / ch->w->payments : 0.0,
				 sc->bounds.channel_progress_min, ch->open_failed ? "; the open failed: " : "",
				 ch->open_failed ? ch->open_failed_why : "");
	}
	ch->correct = NULL;
	return bad;
}

/* ---- the report ---- */

json_t *sim_chan_report(const struct sim_chan *ch)
{
	const struct sim_channel_work *w = ch->w;
	json_t *o = json_object();
	json_object_set_new(o, "members", json_integer(ch->m));
	json_object_set_new(o, "deposit", json_integer((json_int_t)w->deposit));
	json_object_set_new(o, "amount_max", json_integer((json_int_t)w->amount_max));
	json_object_set_new(o, "opened_ms", ch->opened_us ? json_real((double)ch->opened_us / 1000.0) : json_null());
	if (ch->open_failed)
		json_object_set_new(o, "open_failed", json_string(ch->open_failed_why));
	json_object_set_new(o, "done_ms", ch->done_us ? json_real((double)ch->done_us / 1000.0) : json_null());
	json_object_set_new(o, "payments", json_integer(w->payments));
	json_object_set_new(o, "attempts", json_integer((json_int_t)ch->attempts));
	json_object_set_new(o, "finalized", json_integer((json_int_t)ch->finalized));
	json_object_set_new(o, "success_rate",
			    json_real(ch->attempts ? (double)ch->finalized / (double)ch->attempts : 0.0));
	json_t *why = json_object();
	uint64_t refused = 0;
	for (size_t i = 0; i < ch->nrefused; i++) {
		json_object_set_new(why, ch->refused[i].why, json_integer((json_int_t)ch->refused[i].count));
		refused += ch->refused[i].count;
	}
	json_object_set_new(o, "refused", json_integer((json_int_t)refused));
	json_object_set_new(o, "refused_by_reason", why);
	json_object_set_new(o, "timeouts", json_integer((json_int_t)ch->timeouts));
	json_object_set_new(o, "lost", json_integer((json_int_t)ch->lost));
	json_object_set_new(o, "busy", json_integer((json_int_t)ch->busy));
	json_object_set_new(o, "no_sender", json_integer((json_int_t)ch->no_sender));
	json_object_set_new(o, "received", json_integer((json_int_t)ch->received));
	json_object_set_new(o, "batches", json_integer(ch->batches));
	json_object_set_new(o, "batch_success_min", json_real(ch->batches ? ch->batch_min : 0.0));
	json_object_set_new(o, "roots", json_integer((json_int_t)ch->roots));
	json_object_set_new(o, "roots_missed", json_integer((json_int_t)ch->roots_missed));
	json_object_set_new(o, "max_skew", json_real(ch->max_skew));
	json_object_set_new(o, "skew_bound", json_real(2.0 * (1.0 - 1.0 / ch->m)));
	json_object_set_new(o, "commits", json_integer((json_int_t)ch->commits));
	json_object_set_new(o, "disputes", json_integer((json_int_t)ch->disputes));
	json_object_set_new(o, "evidence", json_integer((json_int_t)ch->evidence));
	json_object_set_new(o, "closed", json_boolean(ch->closed));
	json_object_set_new(o, "closed_ms", ch->closed ? json_real((double)ch->closed_us / 1000.0) : json_null());
	json_object_set_new(o, "settled", json_boolean(ch->settled));
	json_object_set_new(o, "newest_root", json_integer((json_int_t)ch->newest));
	json_object_set_new(o, "conservation_checks", json_integer((json_int_t)ch->checks));
	json_object_set_new(o, "members_ledger_balance",
			    ch->ledger_known ? json_integer((json_int_t)ch->ledger_sum) : json_null());
	json_object_set_new(o, "views", ch->views ? json_incref(ch->views) : json_array());
	return o;
}
