/* channels.c - weftd's payment channel layer (docs/channels.md,
 * docs/rpc.md): the wallets this node hosts (the keys of channel members,
 * offered to the channel service as WEFT_WALLET_SERVICE), the events the
 * service emits (to channel.subscribe connections, and to the RPC calls
 * waiting for them), and the wallet.* and channel.* RPC methods.
 *
 * Wallet i's secret key is derived from the node identity's seed (keyed
 * BLAKE2b "weft.wallet.v1" over i, retried until it is a valid secp256k1
 * key), so backing up identity.key backs up every wallet; DATADIR/wallets
 * holds only how many have been made.  Secrets live in sodium_malloc'd
 * memory, wiped when freed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <sodium.h>

#include "channels.h"
#include "node.h"
#include "weft/bytes.h"
#include "weft/adaptor.h"
#include "weft/channel.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/ledger.h"
#include "weft/log.h"
#include "weft/util.h"

#define WALLET_KEY "weft.wallet.v1"
#define WALLETS_MAX 4096
#define WAIT_PAY_MS 30000
#define WAIT_OPEN_MS 60000
#define CLOSE_RETRY_MS 200
#define CLOSE_RETRY_FOR_MS 20000
#define RECENT 64

enum wait_kind { WAIT_PAY, WAIT_LOCK, WAIT_OPEN, WAIT_CLOSE, WAIT_ASC, WAIT_ASC_OPEN };

struct waiter {
	struct weft_channels *ch;
	struct weft_rpc_call *call;
	enum wait_kind kind;
	uint8_t id[32];
	uint32_t from;
	uint64_t seq;
	bool force;
	uint64_t started_ms;
	struct event *timer;
	struct waiter *next;
};

/* A payment's end, kept a while for calls that learn their seq after it. */
struct outcome {
	uint8_t id[32];
	uint32_t from, to;
	uint64_t seq, amount;
	char status[16], reason[80];
};

struct weft_channels {
	struct weft_node *node;
	struct weft_wallet_service svc;
	uint8_t *sec;               /* count x 32 bytes, sodium_malloc'd */
	uint8_t (*pub)[32];
	struct weft_ledger_signer **signer; /* count, each made at its first signature */
	size_t count;
	char *path;                 /* DATADIR/wallets */
	struct waiter *waiters;
	struct outcome recent[RECENT];
	size_t nrecent;
};

/* ---- wallets ---- */

static int derive(const struct weft_channels *ch, uint32_t i, uint8_t sec[32], uint8_t pub[32])
{
	const uint8_t *seed = ch->node->id->sk; /* the Ed25519 seed is its first 32 bytes */
	for (uint8_t tries = 0; tries < 255; tries++) {
		uint8_t in[5];
		weft_be32_put(in, i);
		in[4] = tries;
		crypto_generichash_state st;
		crypto_generichash_init(&st, seed, 32, 32);
		crypto_generichash_update(&st, (const uint8_t *)WALLET_KEY, strlen(WALLET_KEY));
		crypto_generichash_update(&st, in, sizeof(in));
		crypto_generichash_final(&st, sec, 32);
		if (weft_ledger_pubkey(sec, pub) == 0)
			return 0;
	}
	return WEFT_ECRYPTO;
}

static int grow_to(struct weft_channels *ch, size_t count)
{
	uint8_t *sec = sodium_malloc(count ? count * 32 : 1);
	uint8_t(*pub)[32] = calloc(count ? count : 1, 32);
	if (sec == NULL || pub == NULL)
		abort();
	if (ch->count) {
		memcpy(sec, ch->sec, ch->count * 32);
		memcpy(pub, ch->pub, ch->count * 32);
	}
	for (size_t i = ch->count; i < count; i++) {
		int rc = derive(ch, (uint32_t)i, sec + 32 * i, pub[i]);
		if (rc != 0) {
			sodium_free(sec);
			free(pub);
			return rc;
		}
	}
	sodium_free(ch->sec);
	free(ch->pub);
	ch->signer = weft_xrealloc(ch->signer, count ? count : 1, sizeof(*ch->signer));
	for (size_t i = ch->count; i < count; i++)
		ch->signer[i] = NULL;
	for (size_t i = count; i < ch->count; i++)
		weft_ledger_signer_free(ch->signer[i]);
	ch->sec = sec, ch->pub = pub, ch->count = count;
	return 0;
}

static long wallet_of(const struct weft_channels *ch, const uint8_t key[32])
{
	for (size_t i = 0; i < ch->count; i++)
		if (memcmp(ch->pub[i], key, 32) == 0)
			return (long)i;
	return -1;
}

static int wallet_sign(void *ctx, const uint8_t key[32], const uint8_t msg[32], uint8_t sig[64])
{
	struct weft_channels *ch = ctx;
	long i = wallet_of(ch, key);
	if (i < 0)
		return WEFT_NOTFOUND;
	uint8_t aux[32];
	randombytes_buf(aux, sizeof(aux));
	if (ch->signer[i] == NULL) {
		uint8_t seed[32];
		randombytes_buf(seed, sizeof(seed));
		int rc = weft_ledger_signer_new(ch->sec + 32 * i, seed, &ch->signer[i]);
		if (rc != 0)
			return rc;
	}
	return weft_ledger_signer_sign(ch->signer[i], msg, aux, sig);
}

static int wallet_presign(void *ctx, const uint8_t key[32], const uint8_t msg[32], const uint8_t T[33],
			  uint8_t presig[65])
{
	struct weft_channels *ch = ctx;
	long i = wallet_of(ch, key);
	if (i < 0)
		return WEFT_NOTFOUND;
	uint8_t aux[32];
	randombytes_buf(aux, sizeof(aux));
	return weft_adaptor_presign(ch->sec + 32 * i, msg, T, aux, presig);
}

static int wallet_verify(void *ctx, const uint8_t key[32], const uint8_t msg[32], const uint8_t sig[64])
{
	(void)ctx;
	return weft_ledger_schnorr_verify(key, msg, sig);
}

static int save_count(struct weft_channels *ch)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%zu\n", ch->count);
	return weft_write_file_atomic(ch->path, buf, (size_t)len, 0600);
}

/* ---- waiting calls ---- */

static void waiter_free(struct weft_channels *ch, struct waiter *w)
{
	for (struct waiter **p = &ch->waiters; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	if (w->timer)
		event_free(w->timer);
	free(w);
}

static void write_hex(struct weft_mpw *w, const char *key, const uint8_t *b, size_t len)
{
	char hex[2 * 32 + 1];
	weft_hex_encode(hex, b, len);
	weft_mpw_str(w, key);
	weft_mpw_str(w, hex);
}

/* Answers a payment call from its outcome: a payment's end is
 * "finalized", a conditional payment's "unlocked" (or a failure). */
static void finish_pay(struct waiter *w, const struct outcome *o)
{
	if (strcmp(o->status, w->kind == WAIT_LOCK ? "unlocked" : "finalized") != 0) {
		weft_rpc_finish_fail(w->call, WEFT_RPC_REJECTED, "payment %s: %s", o->status,
				     o->reason[0] ? o->reason : "no reason given");
		return;
	}
	struct weft_mpw *r = weft_rpc_result(w->call);
	weft_mpw_map(r, 6);
	write_hex(r, "channel", o->id, 32);
	weft_mpw_str(r, "status");
	weft_mpw_str(r, o->status);
	weft_mpw_str(r, "from");
	weft_mpw_uint(r, o->from);
	weft_mpw_str(r, "to");
	weft_mpw_uint(r, o->to);
	weft_mpw_str(r, "amount");
	weft_mpw_uint(r, o->amount);
	weft_mpw_str(r, "seq");
	weft_mpw_uint(r, o->seq);
	weft_rpc_finish_ok(w->call);
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg);

/* A call waiting for an event of channel id; cb (NULL: answer "still
 * pending") runs after ms. */
static struct waiter *wait_new(struct weft_channels *ch, struct weft_rpc_call *call, enum wait_kind kind,
			       const uint8_t id[32], unsigned ms, event_callback_fn cb)
{
	struct waiter *w = calloc(1, sizeof(*w));
	if (w == NULL)
		abort();
	w->ch = ch, w->call = call, w->kind = kind;
	memcpy(w->id, id, 32);
	w->started_ms = (uint64_t)(weft_node_uptime(ch->node) * 1000);
	w->timer = evtimer_new(ch->node->base, cb ? cb : on_wait_timeout, w);
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	evtimer_add(w->timer, &tv);
	w->next = ch->waiters;
	ch->waiters = w;
	return w;
}

/* ---- events ---- */

struct event_fields {
	const char *event, *status, *reason, *service;
	uint32_t elen, slen, rlen, svlen;
	uint8_t id[32];
	bool has_id;
	uint64_t from, to, seq, amount;
};

static void read_event(const uint8_t *ev, size_t len, struct event_fields *f)
{
	struct weft_mp_reader r;
	uint32_t count;
	memset(f, 0, sizeof(*f));
	weft_mp_reader_init(&r, ev, len);
	if (weft_mp_read_map(&r, &count) != 0)
		return;
	for (uint32_t i = 0; i < count; i++) {
		const char *k, *v;
		uint32_t klen, vlen;
		if (weft_mp_read_str(&r, &k, &klen) != 0)
			return;
		if (weft_mp_peek_type(&r) == WEFT_MP_STR) {
			if (weft_mp_read_str(&r, &v, &vlen) != 0)
				return;
			if (klen == 5 && memcmp(k, "event", 5) == 0)
				f->event = v, f->elen = vlen;
			else if (klen == 6 && memcmp(k, "status", 6) == 0)
				f->status = v, f->slen = vlen;
			else if (klen == 6 && memcmp(k, "reason", 6) == 0)
				f->reason = v, f->rlen = vlen;
			else if (klen == 7 && memcmp(k, "service", 7) == 0)
				f->service = v, f->svlen = vlen;
			else if (klen == 7 && memcmp(k, "channel", 7) == 0)
				f->has_id = vlen == 64 && weft_hex_decode(f->id, 32, v, 64) == 0;
			continue;
		}
		uint64_t u = 0;
		if (weft_mp_peek_type(&r) != WEFT_MP_UINT) {
			if (weft_mp_skip(&r) != 0)
				return;
			continue;
		}
		if (weft_mp_read_uint(&r, &u) != 0)
			return;
		if (klen == 4 && memcmp(k, "from", 4) == 0)
			f->from = u;
		else if (klen == 2 && memcmp(k, "to", 2) == 0)
			f->to = u;
		else if (klen == 3 && memcmp(k, "seq", 3) == 0)
			f->seq = u;
		else if (klen == 6 && memcmp(k, "amount", 6) == 0)
			f->amount = u;
	}
}

static bool is(const char *s, uint32_t len, const char *want)
{
	return s && len == strlen(want) && memcmp(s, want, len) == 0;
}

/* True when outcome o ends the payment w waits for: a conditional
 * payment's lock being finalized is not its end. */
static bool waits_for(const struct waiter *w, const struct outcome *o)
{
	if ((w->kind != WAIT_PAY && w->kind != WAIT_LOCK) || memcmp(w->id, o->id, 32) != 0 || w->from != o->from ||
	    w->seq != o->seq)
		return false;
	return w->kind == WAIT_PAY || strcmp(o->status, "finalized") != 0;
}

static void asc_event(struct weft_channels *ch, const uint8_t *ev, size_t len, const struct event_fields *f);

void weft_channels_on_event(void *arg, const uint8_t *ev, size_t len)
{
	struct weft_channels *ch = arg;
	if (ch->node->rpc) {
		struct weft_mpw p;
		weft_mpw_init(&p);
		weft_mpw_array(&p, 1);
		weft_mpw_raw(&p, ev, len);
		weft_rpc_notify(ch->node->rpc, "channel.event", "channel.event", p.buf, p.len);
		weft_mpw_free(&p);
	}
	struct event_fields f;
	read_event(ev, len, &f);
	if (!f.has_id)
		return;
	if (is(f.event, f.elen, "asc") || is(f.event, f.elen, "service_request")) {
		asc_event(ch, ev, len, &f);
		return;
	}
	bool payment_end = is(f.event, f.elen, "payment") &&
			   (is(f.status, f.slen, "finalized") || is(f.status, f.slen, "refused") ||
			    is(f.status, f.slen, "timeout") || is(f.status, f.slen, "unlocked") ||
			    is(f.status, f.slen, "refunded"));
	if (payment_end) {
		struct outcome *o = &ch->recent[ch->nrecent++ % RECENT];
		memcpy(o->id, f.id, 32);
		o->from = (uint32_t)f.from, o->to = (uint32_t)f.to, o->seq = f.seq, o->amount = f.amount;
		snprintf(o->status, sizeof(o->status), "%.*s", (int)f.slen, f.status);
		snprintf(o->reason, sizeof(o->reason), "%.*s", (int)f.rlen, f.reason ? f.reason : "");
		for (struct waiter *w = ch->waiters; w; w = w->next)
			if (waits_for(w, o)) {
				finish_pay(w, o);
				waiter_free(ch, w);
				break;
			}
		return;
	}
	bool opened = is(f.event, f.elen, "open"), failed = is(f.event, f.elen, "open_failed");
	bool closed = is(f.event, f.elen, "closed");
	if (!opened && !failed && !closed)
		return;
	for (struct waiter *w = ch->waiters, *next; w; w = next) {
		next = w->next;
		if (memcmp(w->id, f.id, 32) != 0 || (w->kind == WAIT_OPEN) == closed || w->kind == WAIT_PAY ||
		    w->kind == WAIT_LOCK)
			continue;
		if (failed) {
			weft_rpc_finish_fail(w->call, WEFT_RPC_REJECTED, "the ledger refused the open: %.*s", (int)f.rlen,
					     f.reason ? f.reason : "");
		} else {
			struct weft_mpw *r = weft_rpc_result(w->call);
			weft_mpw_map(r, 2);
			write_hex(r, "channel", f.id, 32);
			weft_mpw_str(r, "status");
			weft_mpw_str(r, opened ? "open" : "closed");
			weft_rpc_finish_ok(w->call);
		}
		waiter_free(ch, w);
	}
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	struct waiter *w = arg;
	struct weft_mpw *r = weft_rpc_result(w->call);
	weft_mpw_map(r, 2);
	write_hex(r, "channel", w->id, 32);
	weft_mpw_str(r, "status");
	weft_mpw_str(r, w->kind == WAIT_PAY || w->kind == WAIT_LOCK || w->kind == WAIT_ASC ? "pending"
			: w->kind == WAIT_OPEN || w->kind == WAIT_ASC_OPEN		       ? "opening"
											       : "closing");
	weft_rpc_finish_ok(w->call);
	waiter_free(w->ch, w);
}

/* ---- open, close ---- */

int weft_channels_open(struct weft_channels **out, struct weft_node *node)
{
	struct weft_channels *ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		abort();
	ch->node = node;
	ch->svc = (struct weft_wallet_service){
		.ctx = ch, .sign = wallet_sign, .verify = wallet_verify, .presign = wallet_presign};
	size_t plen = strlen(node->datadir) + sizeof("/wallets");
	ch->path = malloc(plen);
	if (ch->path == NULL)
		abort();
	snprintf(ch->path, plen, "%s/wallets", node->datadir);
	size_t count = 0;
	FILE *f = fopen(ch->path, "r");
	if (f) {
		unsigned long long c = 0;
		int ok = fscanf(f, "%llu", &c);
		fclose(f);
		if (ok != 1 || c > WALLETS_MAX) {
			fprintf(stderr, "weftd: %s: not a wallet count (0..%d)\n", ch->path, WALLETS_MAX);
			weft_channels_close(ch);
			return WEFT_ECORRUPT;
		}
		count = (size_t)c;
	} else if (errno != ENOENT) {
		fprintf(stderr, "weftd: %s: %s\n", ch->path, strerror(errno));
		weft_channels_close(ch);
		return WEFT_EIO;
	}
	int rc = grow_to(ch, count);
	if (rc != 0) {
		weft_channels_close(ch);
		return rc;
	}
	*out = ch;
	return 0;
}

void weft_channels_close(struct weft_channels *ch)
{
	if (ch == NULL)
		return;
	while (ch->waiters) {
		weft_rpc_finish_fail(ch->waiters->call, WEFT_RPC_UNAVAILABLE, "the node is stopping");
		waiter_free(ch, ch->waiters);
	}
	for (size_t i = 0; i < ch->count; i++)
		weft_ledger_signer_free(ch->signer[i]);
	free(ch->signer);
	sodium_free(ch->sec);
	free(ch->pub);
	free(ch->path);
	free(ch);
}

const struct weft_wallet_service *weft_channels_wallets(struct weft_channels *ch)
{
	return &ch->svc;
}

/* ---- RPC ---- */

static struct weft_channels *channels_of(struct weft_rpc_call *call, void *ctx, const struct weft_rpc_done **fail)
{
	struct weft_node *node = ctx;
	*fail = NULL;
	if (node->channels == NULL)
		*fail = weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE,
				      "this node's protocol has no channel service (use the node stack: protocol dag)");
	return node->channels;
}

static const struct weft_rpc_done *rpc_wallet_new(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	if (ch->count >= WALLETS_MAX)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "this node hosts %d wallets, the most it may", WALLETS_MAX);
	int rc = grow_to(ch, ch->count + 1);
	if (rc == 0 && (rc = save_count(ch)) != 0)
		grow_to(ch, ch->count - 1);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_INTERNAL_ERROR, "wallet: %s", weft_strerror(rc));
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "index");
	weft_mpw_uint(w, ch->count - 1);
	write_hex(w, "account", ch->pub[ch->count - 1], 32);
	weft_info("channel.wallet_new", "index=%zu", ch->count - 1);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_wallet_list(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "node");
	weft_mpw_uint(w, ch->node->self_index);
	weft_mpw_str(w, "wallets");
	weft_mpw_array(w, (uint32_t)ch->count);
	for (size_t i = 0; i < ch->count; i++) {
		struct weft_mpw arg, bal;
		weft_mpw_init(&arg);
		weft_mpw_init(&bal);
		weft_mpw_bin(&arg, ch->pub[i], 32);
		int rc = weft_host_query(ch->node->host, "ledger.balance", arg.buf, arg.len, &bal);
		weft_mpw_map(w, 3);
		weft_mpw_str(w, "index");
		weft_mpw_uint(w, i);
		write_hex(w, "account", ch->pub[i], 32);
		weft_mpw_str(w, "ledger");
		if (rc == 0)
			weft_mpw_raw(w, bal.buf, bal.len);
		else
			weft_mpw_nil(w);
		weft_mpw_free(&arg);
		weft_mpw_free(&bal);
	}
	return weft_rpc_ok(call);
}

static bool parse_hex32(const struct weft_rpc_bytes *b, uint8_t out[32])
{
	return b->len == 64 && weft_hex_decode(out, 32, (const char *)b->ptr, 64) == 0;
}

/* A member as the protocol reads it, from the raw parameter: an index
 * (a number, or a string of digits), an account (64 hex digits), or absent
 * (nil: the first member hosted here). */
static bool write_member(struct weft_mpw *w, const struct weft_rpc_bytes *b, bool present)
{
	struct weft_mp_reader r;
	uint8_t key[32];
	uint64_t v;
	const char *s;
	uint32_t slen;
	if (!present) {
		weft_mpw_nil(w);
		return true;
	}
	weft_mp_reader_init(&r, b->ptr, b->len);
	if (weft_mp_peek_type(&r) == WEFT_MP_UINT) {
		if (weft_mp_read_uint(&r, &v) != 0 || v >= WEFT_CHANNEL_MAX)
			return false;
		weft_mpw_uint(w, v);
		return true;
	}
	if (weft_mp_read_str(&r, &s, &slen) != 0)
		return false;
	if (slen == 64 && weft_hex_decode(key, 32, s, 64) == 0) {
		weft_mpw_bin(w, key, 32);
		return true;
	}
	v = 0;
	for (uint32_t i = 0; i < slen; i++) {
		if (s[i] < '0' || s[i] > '9' || v >= WEFT_CHANNEL_MAX)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (slen == 0 || v >= WEFT_CHANNEL_MAX)
		return false;
	weft_mpw_uint(w, v);
	return true;
}

/* The command's reply: a map (answered as the result), or a string (the
 * refusal). */
static const struct weft_rpc_done *answer_command(struct weft_rpc_call *call, int rc, const struct weft_mpw *reply)
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, reply->buf, reply->len);
	if (rc == 0) {
		struct weft_mpw *w = weft_rpc_result(call);
		weft_mpw_raw(w, reply->buf, reply->len);
		return weft_rpc_ok(call);
	}
	const char *why;
	uint32_t wlen;
	if (reply->len && weft_mp_read_str(&r, &why, &wlen) == 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "%.*s", (int)wlen, why);
	return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "%s", weft_strerror(rc));
}

/* Reads a JSON-ish array parameter of strings or numbers (the raw msgpack
 * of an ANY parameter): count and a reader on its first item. */
static bool read_array(const struct weft_rpc_bytes *b, struct weft_mp_reader *r, uint32_t *count)
{
	weft_mp_reader_init(r, b->ptr, b->len);
	return weft_mp_read_array(r, count) == 0 && *count >= 2 && *count <= WEFT_CHANNEL_MAX;
}

static const struct weft_rpc_done *rpc_channel_open(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes members = {0}, deposits = {0};
	bool wait = true;
	struct weft_rpc_param spec[] = {
		{"members", WEFT_RPC_ANY, true, &members, NULL},
		{"deposits", WEFT_RPC_ANY, true, &deposits, NULL},
		{"wait", WEFT_RPC_BOOL, false, &wait, NULL},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	if (bad)
		return bad;
	struct weft_mp_reader rm, rd;
	uint32_t n, nd;
	if (!read_array(&members, &rm, &n))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS,
				     "members: an array of 2 to %d accounts, each HEX (hosted here) or HEX@NODE",
				     WEFT_CHANNEL_MAX);
	if (!read_array(&deposits, &rd, &nd) || nd != n)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "deposits: one amount per member");
	struct weft_mpw arg, keys, hosts, amounts;
	weft_mpw_init(&arg);
	weft_mpw_init(&keys);
	weft_mpw_init(&hosts);
	weft_mpw_init(&amounts);
	const char *err = NULL;
	for (uint32_t i = 0; i < n && !err; i++) {
		const char *s;
		uint32_t slen;
		uint8_t key[32];
		uint64_t host = ch->node->self_index, dep;
		if (weft_mp_read_str(&rm, &s, &slen) != 0 || slen < 64 || weft_hex_decode(key, 32, s, 64) != 0) {
			err = "members: each one 64 hex digits, optionally @NODE";
			break;
		}
		if (slen > 64) {
			char buf[16];
			char *end;
			if (s[64] != '@' || slen - 65 == 0 || slen - 65 >= sizeof(buf)) {
				err = "members: HEX@NODE with NODE a committee index";
				break;
			}
			memcpy(buf, s + 65, slen - 65);
			buf[slen - 65] = '\0';
			host = strtoull(buf, &end, 10);
			if (*end != '\0' || host >= ch->node->committee_n) {
				err = "members: NODE is not a committee index";
				break;
			}
		}
		if (weft_mp_read_uint(&rd, &dep) != 0) {
			err = "deposits: unsigned integers";
			break;
		}
		weft_mpw_bin(&keys, key, 32);
		weft_mpw_uint(&hosts, host);
		weft_mpw_uint(&amounts, dep);
	}
	const struct weft_rpc_done *done = NULL;
	if (err) {
		done = weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "%s", err);
	} else {
		weft_mpw_array(&arg, 3);
		weft_mpw_array(&arg, n);
		weft_mpw_raw(&arg, keys.buf, keys.len);
		weft_mpw_array(&arg, n);
		weft_mpw_raw(&arg, hosts.buf, hosts.len);
		weft_mpw_array(&arg, n);
		weft_mpw_raw(&arg, amounts.buf, amounts.len);
		struct weft_mpw reply;
		weft_mpw_init(&reply);
		int rc = weft_host_command(ch->node->host, "channel.open", arg.buf, arg.len, &reply);
		uint8_t id[32];
		struct weft_mp_reader r;
		uint32_t count, klen, hlen;
		const char *k, *hex;
		weft_mp_reader_init(&r, reply.buf, reply.len);
		if (rc == 0 && wait && weft_mp_read_map(&r, &count) == 0 && weft_mp_read_str(&r, &k, &klen) == 0 &&
		    weft_mp_read_str(&r, &hex, &hlen) == 0 && hlen == 64 && weft_hex_decode(id, 32, hex, 64) == 0) {
			wait_new(ch, call, WAIT_OPEN, id, WAIT_OPEN_MS, NULL);
			done = weft_rpc_pending(call);
		} else {
			done = answer_command(call, rc, &reply);
		}
		weft_mpw_free(&reply);
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&keys);
	weft_mpw_free(&hosts);
	weft_mpw_free(&amounts);
	return done;
}

static const struct weft_rpc_done *channel_param(struct weft_rpc_call *call, const struct weft_rpc_bytes *b,
						  uint8_t id[32])
{
	return parse_hex32(b, id) ? NULL : weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "channel: 64 hex digits");
}

/* A route's hops as the protocol reads them: [[channel, account]...] from
 * ["CHANNEL:ACCOUNT", ...] (64 hex digits each). */
static bool write_route(struct weft_mpw *w, const struct weft_rpc_bytes *b)
{
	struct weft_mp_reader r;
	uint32_t count, slen;
	const char *s;
	uint8_t chan[32], key[32];
	weft_mp_reader_init(&r, b->ptr, b->len);
	if (weft_mp_read_array(&r, &count) != 0 || count > 8)
		return false;
	weft_mpw_array(w, count);
	for (uint32_t i = 0; i < count; i++) {
		if (weft_mp_read_str(&r, &s, &slen) != 0 || slen != 129 || s[64] != ':' ||
		    weft_hex_decode(chan, 32, s, 64) != 0 || weft_hex_decode(key, 32, s + 65, 64) != 0)
			return false;
		weft_mpw_array(w, 2);
		weft_mpw_bin(w, chan, 32);
		weft_mpw_bin(w, key, 32);
	}
	return true;
}

static const struct weft_rpc_done *rpc_channel_pay(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes chan = {0}, from = {0}, to = {0}, hash = {0}, route = {0};
	uint64_t amount = 0;
	bool has_from = false, wait = true, has_hash = false, has_route = false;
	struct weft_rpc_param spec[] = {
		{"channel", WEFT_RPC_STR, true, &chan, NULL},
		{"to", WEFT_RPC_ANY, true, &to, NULL},
		{"amount", WEFT_RPC_UINT, true, &amount, NULL},
		{"from", WEFT_RPC_ANY, false, &from, &has_from},
		{"wait", WEFT_RPC_BOOL, false, &wait, NULL},
		{"hash", WEFT_RPC_STR, false, &hash, &has_hash},
		{"route", WEFT_RPC_ANY, false, &route, &has_route},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	uint8_t id[32], lock[32];
	if (bad || (bad = channel_param(call, &chan, id)))
		return bad;
	if (has_hash && !parse_hex32(&hash, lock))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "hash: 64 hex digits (from channel.invoice)");
	if (has_route && !has_hash)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "route: only with hash (a conditional payment)");
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, has_hash ? 6 : 4);
	weft_mpw_bin(&arg, id, 32);
	bool ok = write_member(&arg, &from, has_from) && write_member(&arg, &to, true);
	weft_mpw_uint(&arg, amount);
	bool route_ok = true;
	if (has_hash) {
		weft_mpw_bin(&arg, lock, 32);
		if (has_route)
			route_ok = write_route(&arg, &route);
		else
			weft_mpw_array(&arg, 0);
	}
	const struct weft_rpc_done *done;
	if (!ok) {
		done = weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "from, to: a member's index or 64-hex-digit account");
	} else if (!route_ok) {
		done = weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "route: at most 8 \"CHANNEL:ACCOUNT\" (64 hex digits each)");
	} else {
		size_t mark = ch->nrecent; /* outcomes before the call are older payments' (a seq is reused after a refusal) */
		int rc = weft_host_command(ch->node->host, "channel.pay", arg.buf, arg.len, &reply);
		struct weft_mp_reader r;
		uint32_t count, klen;
		const char *k;
		uint64_t pfrom = 0, pseq = 0, v;
		weft_mp_reader_init(&r, reply.buf, reply.len);
		if (rc == 0 && wait && weft_mp_read_map(&r, &count) == 0) {
			for (uint32_t i = 0; i < count; i++) {
				if (weft_mp_read_str(&r, &k, &klen) != 0 || weft_mp_read_uint(&r, &v) != 0)
					break;
				if (klen == 4 && memcmp(k, "from", 4) == 0)
					pfrom = v;
				if (klen == 3 && memcmp(k, "seq", 3) == 0)
					pseq = v;
			}
			struct waiter *w = wait_new(ch, call, has_hash ? WAIT_LOCK : WAIT_PAY, id, WAIT_PAY_MS, NULL);
			w->from = (uint32_t)pfrom, w->seq = pseq;
			/* Ended already (every member hosted here)? */
			const struct outcome *o = NULL;
			for (size_t i = 0; i < RECENT && i < ch->nrecent - mark && !o; i++) {
				const struct outcome *c = &ch->recent[(ch->nrecent - 1 - i) % RECENT];
				if (waits_for(w, c))
					o = c;
			}
			done = weft_rpc_pending(call);
			if (o) {
				finish_pay(w, o);
				waiter_free(ch, w);
			}
		} else {
			done = answer_command(call, rc, &reply);
		}
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return done;
}

static const struct weft_rpc_done *rpc_channel_invoice(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes member = {0};
	uint64_t amount = 0;
	struct weft_rpc_param spec[] = {
		{"member", WEFT_RPC_STR, true, &member, NULL},
		{"amount", WEFT_RPC_UINT, true, &amount, NULL},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	uint8_t key[32];
	if (bad)
		return bad;
	if (!parse_hex32(&member, key))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "member: a 64-hex-digit account hosted here");
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 2);
	weft_mpw_bin(&arg, key, 32);
	weft_mpw_uint(&arg, amount);
	int rc = weft_host_command(ch->node->host, "channel.invoice", arg.buf, arg.len, &reply);
	const struct weft_rpc_done *done = answer_command(call, rc, &reply);
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return done;
}

static const struct weft_rpc_done *query(struct weft_rpc_call *call, struct weft_channels *ch, const char *what,
					 const uint8_t *id)
{
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	if (id)
		weft_mpw_bin(&arg, id, 32);
	int rc = weft_host_query(ch->node->host, what, id ? arg.buf : NULL, arg.len, &reply);
	const struct weft_rpc_done *done;
	if (rc == WEFT_ENOENT)
		done = weft_rpc_fail(call, WEFT_RPC_REJECTED, "no such channel here");
	else if (rc != 0)
		done = weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "%s", weft_strerror(rc));
	else {
		struct weft_mpw *w = weft_rpc_result(call);
		if (id == NULL) {
			weft_mpw_map(w, 1);
			weft_mpw_str(w, "channels");
		}
		weft_mpw_raw(w, reply.buf, reply.len);
		done = weft_rpc_ok(call);
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return done;
}

static const struct weft_rpc_done *rpc_channel_list(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	return fail ? fail : query(call, ch, "channel.list", NULL);
}

static const struct weft_rpc_done *one_channel(struct weft_rpc_call *call, void *ctx, struct weft_channels **ch,
					       uint8_t id[32], const struct weft_rpc_param *more, size_t nmore)
{
	const struct weft_rpc_done *fail;
	*ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes chan = {0};
	struct weft_rpc_param spec[3] = {{"channel", WEFT_RPC_STR, true, &chan, NULL}};
	for (size_t i = 0; i < nmore && i < 2; i++)
		spec[1 + i] = more[i];
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1 + nmore);
	return bad ? bad : channel_param(call, &chan, id);
}

static const struct weft_rpc_done *rpc_channel_info(struct weft_rpc_call *call, void *ctx)
{
	struct weft_channels *ch;
	uint8_t id[32];
	const struct weft_rpc_done *bad = one_channel(call, ctx, &ch, id, NULL, 0);
	return bad ? bad : query(call, ch, "channel.info", id);
}

/* One try of a close; EAGAIN (payments not yet in a root) is tried again. */
static int try_close(struct waiter *w, struct weft_mpw *reply)
{
	struct weft_mpw arg;
	weft_mpw_init(&arg);
	weft_mpw_array(&arg, 2);
	weft_mpw_bin(&arg, w->id, 32);
	weft_mpw_bool(&arg, w->force);
	int rc = weft_host_command(w->ch->node->host, "channel.close", arg.buf, arg.len, reply);
	weft_mpw_free(&arg);
	return rc;
}

static void close_answer(struct waiter *w, int rc, const struct weft_mpw *reply)
{
	struct weft_mp_reader r;
	const char *why;
	uint32_t wlen;
	weft_mp_reader_init(&r, reply->buf, reply->len);
	if (rc == 0) {
		struct weft_mpw *res = weft_rpc_result(w->call);
		weft_mpw_raw(res, reply->buf, reply->len);
		weft_rpc_finish_ok(w->call);
	} else if (reply->len && weft_mp_read_str(&r, &why, &wlen) == 0) {
		weft_rpc_finish_fail(w->call, WEFT_RPC_REJECTED, "%.*s", (int)wlen, why);
	} else {
		weft_rpc_finish_fail(w->call, WEFT_RPC_UNAVAILABLE, "%s", weft_strerror(rc));
	}
	waiter_free(w->ch, w);
}

static void on_close_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	struct waiter *w = arg;
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	int rc = try_close(w, &reply);
	uint64_t now = (uint64_t)(weft_node_uptime(w->ch->node) * 1000);
	if (rc == WEFT_EAGAIN && now - w->started_ms < CLOSE_RETRY_FOR_MS) {
		struct timeval tv = {0, CLOSE_RETRY_MS * 1000};
		evtimer_add(w->timer, &tv);
	} else {
		close_answer(w, rc, &reply);
	}
	weft_mpw_free(&reply);
}

static const struct weft_rpc_done *rpc_channel_close(struct weft_rpc_call *call, void *ctx)
{
	struct weft_channels *ch;
	uint8_t id[32];
	bool force = false;
	struct weft_rpc_param more[] = {{"force", WEFT_RPC_BOOL, false, &force, NULL}};
	const struct weft_rpc_done *bad = one_channel(call, ctx, &ch, id, more, 1);
	if (bad)
		return bad;
	/* A cooperative close waits for the next root to cover every payment. */
	struct waiter *w = wait_new(ch, call, WAIT_CLOSE, id, 0, on_close_retry);
	w->force = force;
	return weft_rpc_pending(call);
}

/* A command whose argument is the channel's id (channel=HEX), answered
 * with its reply. */
static const struct weft_rpc_done *id_command(struct weft_rpc_call *call, void *ctx, const char *what)
{
	struct weft_channels *ch;
	uint8_t id[32];
	const struct weft_rpc_done *bad = one_channel(call, ctx, &ch, id, NULL, 0);
	if (bad)
		return bad;
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_bin(&arg, id, 32);
	int rc = weft_host_command(ch->node->host, what, arg.buf, arg.len, &reply);
	const struct weft_rpc_done *done = answer_command(call, rc, &reply);
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return done;
}

static const struct weft_rpc_done *rpc_channel_root(struct weft_rpc_call *call, void *ctx)
{
	return id_command(call, ctx, "channel.root");
}



/* ---- atomic service channels (protocols/channel/asc.c, docs/asc.md) ---- */

/* Writes key: the bytes as a string when they are UTF-8 text, else as
 * key_hex (JSON clients cannot take binary). */
static void write_text(struct weft_mpw *w, const char *key, const uint8_t *b, uint32_t len)
{
	if (weft_utf8_valid((const char *)b, len) && memchr(b, 0, len) == NULL) {
		weft_mpw_str(w, key);
		weft_mpw_strn(w, (const char *)b, len);
		return;
	}
	char name[32];
	snprintf(name, sizeof(name), "%s_hex", key);
	write_hex(w, name, b, len);
}

/* A bin field of an event map (NULL when absent) and a uint one. */
static const uint8_t *event_bin(const uint8_t *ev, size_t len, const char *key, uint32_t *blen)
{
	struct weft_mp_reader r;
	uint32_t count, klen;
	const char *k;
	weft_mp_reader_init(&r, ev, len);
	if (weft_mp_read_map(&r, &count) != 0)
		return NULL;
	for (uint32_t i = 0; i < count; i++) {
		if (weft_mp_read_str(&r, &k, &klen) != 0)
			return NULL;
		const uint8_t *b;
		if (klen == strlen(key) && memcmp(k, key, klen) == 0 && weft_mp_peek_type(&r) == WEFT_MP_BIN)
			return weft_mp_read_bin(&r, &b, blen) == 0 ? b : NULL;
		if (weft_mp_skip(&r) != 0)
			return NULL;
	}
	return NULL;
}

/* A request for a service nobody registered here: refused, in a step of
 * its own (not inside the release of the events of another). */
struct no_service {
	struct weft_channels *ch;
	uint8_t id[32];
	uint64_t seq;
	char name[80];
};

static void refuse_request(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	struct no_service *ns = arg;
	struct weft_mpw a, reply;
	char why[128];
	weft_mpw_init(&a);
	weft_mpw_init(&reply);
	snprintf(why, sizeof(why), "no service %s on the provider's node", ns->name);
	weft_mpw_array(&a, 4);
	weft_mpw_bin(&a, ns->id, 32);
	weft_mpw_uint(&a, ns->seq);
	weft_mpw_bool(&a, false);
	weft_mpw_str(&a, why);
	weft_host_command(ns->ch->node->host, "asc.respond", a.buf, a.len, &reply);
	weft_mpw_free(&a);
	weft_mpw_free(&reply);
	free(ns);
}

static void finish_asc(struct waiter *w, const uint8_t *ev, size_t len, const struct event_fields *f)
{
	bool good = is(f->status, f->slen, "result");
	if (!good) {
		weft_rpc_finish_fail(w->call, WEFT_RPC_REJECTED, "request %.*s: %.*s", (int)f->slen, f->status,
				     (int)f->rlen, f->reason ? f->reason : "");
		return;
	}
	uint32_t rlen = 0;
	const uint8_t *result = event_bin(ev, len, "result", &rlen);
	struct weft_mpw *r = weft_rpc_result(w->call);
	weft_mpw_map(r, 4);
	write_hex(r, "channel", w->id, 32);
	weft_mpw_str(r, "seq");
	weft_mpw_uint(r, w->seq);
	weft_mpw_str(r, "status");
	weft_mpw_str(r, "result");
	write_text(r, "result", result ? result : (const uint8_t *)"", result ? rlen : 0);
	weft_rpc_finish_ok(w->call);
}

static void asc_event(struct weft_channels *ch, const uint8_t *ev, size_t len, const struct event_fields *f)
{
	if (is(f->event, f->elen, "service_request")) {
		char topic[96], name[80];
		snprintf(name, sizeof(name), "%.*s", (int)f->svlen, f->service ? f->service : "");
		snprintf(topic, sizeof(topic), "service.%s", name);
		uint32_t plen = 0;
		const uint8_t *payload = event_bin(ev, len, "payload", &plen);
		unsigned sent = 0;
		if (ch->node->rpc) {
			struct weft_mpw p;
			weft_mpw_init(&p);
			weft_mpw_array(&p, 1);
			weft_mpw_map(&p, 5);
			write_hex(&p, "channel", f->id, 32);
			weft_mpw_str(&p, "seq");
			weft_mpw_uint(&p, f->seq);
			weft_mpw_str(&p, "service");
			weft_mpw_str(&p, name);
			weft_mpw_str(&p, "price");
			weft_mpw_uint(&p, f->amount);
			write_text(&p, "payload", payload ? payload : (const uint8_t *)"", payload ? plen : 0);
			sent = weft_rpc_notify(ch->node->rpc, topic, "service.request", p.buf, p.len);
			weft_mpw_free(&p);
		}
		if (sent == 0) {
			struct no_service *ns = calloc(1, sizeof(*ns));
			if (ns == NULL)
				abort();
			ns->ch = ch;
			memcpy(ns->id, f->id, 32);
			ns->seq = f->seq;
			snprintf(ns->name, sizeof(ns->name), "%s", name);
			struct timeval now = {0, 0};
			event_base_once(ch->node->base, -1, EV_TIMEOUT, refuse_request, ns, &now);
		}
		return;
	}
	if (ch->node->rpc) {
		struct weft_mpw p;
		weft_mpw_init(&p);
		weft_mpw_array(&p, 1);
		weft_mpw_raw(&p, ev, len);
		weft_rpc_notify(ch->node->rpc, "asc.event", "asc.event", p.buf, p.len);
		weft_mpw_free(&p);
	}
	bool opened = is(f->status, f->slen, "open") || is(f->status, f->slen, "open_failed");
	for (struct waiter *w = ch->waiters, *next; w; w = next) {
		next = w->next;
		if (memcmp(w->id, f->id, 32) != 0)
			continue;
		if (w->kind == WAIT_ASC_OPEN && opened) {
			if (is(f->status, f->slen, "open")) {
				struct weft_mpw *r = weft_rpc_result(w->call);
				weft_mpw_map(r, 2);
				write_hex(r, "channel", f->id, 32);
				weft_mpw_str(r, "status");
				weft_mpw_str(r, "open");
				weft_rpc_finish_ok(w->call);
			} else {
				weft_rpc_finish_fail(w->call, WEFT_RPC_REJECTED, "the ledger refused the open: %.*s",
						     (int)f->rlen, f->reason ? f->reason : "");
			}
			waiter_free(ch, w);
		} else if (w->kind == WAIT_ASC && w->seq == f->seq && !opened && !is(f->status, f->slen, "paid") &&
			   !is(f->status, f->slen, "closed")) {
			finish_asc(w, ev, len, f);
			waiter_free(ch, w);
		}
	}
}

/* A member of this node named by account (HEX) or wallet index; absent:
 * wallet 0. */
static bool wallet_key(struct weft_channels *ch, const struct weft_rpc_bytes *b, bool present, uint8_t key[32])
{
	if (!present)
		return ch->count > 0 && (memcpy(key, ch->pub[0], 32), true);
	struct weft_mpw w;
	weft_mpw_init(&w);
	bool ok = write_member(&w, b, true);
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, w.buf, w.len);
	uint64_t v;
	if (ok && weft_mp_peek_type(&r) == WEFT_MP_UINT && weft_mp_read_uint(&r, &v) == 0)
		ok = v < ch->count && (memcpy(key, ch->pub[v], 32), true);
	else if (ok)
		ok = weft_mp_read_bin_fixed(&r, key, 32) == 0 && wallet_of(ch, key) >= 0;
	weft_mpw_free(&w);
	return ok;
}

static const struct weft_rpc_done *rpc_asc_open(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes provider = {0}, client = {0};
	uint64_t deposit = 0, timeout = 1000;
	bool has_client = false, wait = true;
	struct weft_rpc_param spec[] = {
		{"provider", WEFT_RPC_STR, true, &provider, NULL},
		{"deposit", WEFT_RPC_UINT, true, &deposit, NULL},
		{"timeout", WEFT_RPC_UINT, false, &timeout, NULL},
		{"client", WEFT_RPC_ANY, false, &client, &has_client},
		{"wait", WEFT_RPC_BOOL, false, &wait, NULL},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	if (bad)
		return bad;
	uint8_t ckey[32], pkey[32];
	if (!wallet_key(ch, &client, has_client, ckey))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "client: a wallet of this node (index or account)");
	/* provider: HEX (hosted here) or HEX@NODE */
	uint32_t host = ch->node->self_index;
	char buf[80];
	if (provider.len >= sizeof(buf))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "provider: HEX or HEX@NODE");
	memcpy(buf, provider.ptr, provider.len);
	buf[provider.len] = '\0';
	char *at = strchr(buf, '@');
	if (at) {
		char *end;
		unsigned long n = strtoul(at + 1, &end, 10);
		if (*end || end == at + 1 || n >= ch->node->committee_n)
			return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "provider: NODE is not a committee index");
		host = (uint32_t)n;
		*at = '\0';
	}
	if (strlen(buf) != 64 || weft_hex_decode(pkey, 32, buf, 64) != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "provider: 64 hex digits, optionally @NODE");
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 5);
	weft_mpw_bin(&arg, ckey, 32);
	weft_mpw_bin(&arg, pkey, 32);
	weft_mpw_uint(&arg, host);
	weft_mpw_uint(&arg, deposit);
	weft_mpw_uint(&arg, timeout);
	int rc = weft_host_command(ch->node->host, "asc.open", arg.buf, arg.len, &reply);
	const struct weft_rpc_done *done;
	struct weft_mp_reader r;
	uint32_t count, klen, vlen;
	const char *k, *v;
	uint8_t id[32];
	weft_mp_reader_init(&r, reply.buf, reply.len);
	if (rc == 0 && wait && weft_mp_read_map(&r, &count) == 0 && count == 1 && weft_mp_read_str(&r, &k, &klen) == 0 &&
	    weft_mp_read_str(&r, &v, &vlen) == 0 && vlen == 64 && weft_hex_decode(id, 32, v, 64) == 0) {
		wait_new(ch, call, WAIT_ASC_OPEN, id, WAIT_PAY_MS, NULL);
		done = weft_rpc_pending(call);
	} else {
		done = answer_command(call, rc, &reply);
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return done;
}

static const struct weft_rpc_done *rpc_asc_request(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes chan = {0}, service = {0}, payload = {0};
	uint64_t price = 0;
	bool wait = true;
	struct weft_rpc_param spec[] = {
		{"channel", WEFT_RPC_STR, true, &chan, NULL},
		{"service", WEFT_RPC_STR, true, &service, NULL},
		{"price", WEFT_RPC_UINT, true, &price, NULL},
		{"payload", WEFT_RPC_BYTES, false, &payload, NULL},
		{"wait", WEFT_RPC_BOOL, false, &wait, NULL},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	uint8_t id[32];
	if (bad || (bad = channel_param(call, &chan, id)))
		return bad;
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 4);
	weft_mpw_bin(&arg, id, 32);
	weft_mpw_strn(&arg, (const char *)service.ptr, (uint32_t)service.len);
	weft_mpw_bin(&arg, payload.ptr, (uint32_t)payload.len);
	weft_mpw_uint(&arg, price);
	int rc = weft_host_command(ch->node->host, "asc.request", arg.buf, arg.len, &reply);
	const struct weft_rpc_done *done;
	struct weft_mp_reader r;
	uint32_t count, klen;
	const char *k;
	uint64_t seq = 0;
	weft_mp_reader_init(&r, reply.buf, reply.len);
	if (rc == 0 && wait && weft_mp_read_map(&r, &count) == 0) {
		for (uint32_t i = 0; i < count; i++) {
			if (weft_mp_read_str(&r, &k, &klen) != 0)
				break;
			if (klen == 3 && memcmp(k, "seq", 3) == 0 && weft_mp_read_uint(&r, &seq) == 0)
				continue;
			if (weft_mp_skip(&r) != 0)
				break;
		}
		struct waiter *w = wait_new(ch, call, WAIT_ASC, id, WAIT_PAY_MS, NULL);
		w->seq = seq;
		done = weft_rpc_pending(call);
	} else {
		done = answer_command(call, rc, &reply);
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return done;
}

static const struct weft_rpc_done *rpc_asc_info(struct weft_rpc_call *call, void *ctx)
{
	struct weft_channels *ch;
	uint8_t id[32];
	const struct weft_rpc_done *bad = one_channel(call, ctx, &ch, id, NULL, 0);
	return bad ? bad : query(call, ch, "asc.info", id);
}

static const struct weft_rpc_done *rpc_asc_list(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	return fail ? fail : query(call, ch, "asc.list", NULL);
}

static const struct weft_rpc_done *rpc_asc_close(struct weft_rpc_call *call, void *ctx)
{
	return id_command(call, ctx, "asc.close");
}

static const struct weft_rpc_done *subscribe_to(struct weft_rpc_call *call, void *ctx, const char *topic)
{
	const struct weft_rpc_done *fail;
	channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	int rc = weft_rpc_subscribe(call, topic);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "%s", weft_strerror(rc));
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 1);
	weft_mpw_str(w, "subscribed");
	weft_mpw_str(w, topic);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_asc_subscribe(struct weft_rpc_call *call, void *ctx)
{
	return subscribe_to(call, ctx, "asc.event");
}

/* service.register name=NAME: this connection receives service.request
 * notifications for NAME until it closes. */
static const struct weft_rpc_done *rpc_service_register(struct weft_rpc_call *call, void *ctx)
{
	struct weft_rpc_bytes name = {0};
	struct weft_rpc_param spec[] = {{"name", WEFT_RPC_STR, true, &name, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad)
		return bad;
	if (name.len == 0 || name.len > 64)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "name: 1 to 64 bytes");
	char topic[80];
	snprintf(topic, sizeof(topic), "service.%.*s", (int)name.len, (const char *)name.ptr);
	return subscribe_to(call, ctx, topic);
}

/* service.respond channel=HEX seq=N (result=TEXT | result_hex=HEX | error=TEXT) */
static const struct weft_rpc_done *rpc_service_respond(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_channels *ch = channels_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes chan = {0}, result = {0}, rhex = {0}, error = {0};
	uint64_t seq = 0;
	bool has_result = false, has_hex = false, has_error = false;
	struct weft_rpc_param spec[] = {
		{"channel", WEFT_RPC_STR, true, &chan, NULL},
		{"seq", WEFT_RPC_UINT, true, &seq, NULL},
		{"result", WEFT_RPC_BYTES, false, &result, &has_result},
		{"result_hex", WEFT_RPC_STR, false, &rhex, &has_hex},
		{"error", WEFT_RPC_STR, false, &error, &has_error},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	uint8_t id[32];
	if (bad || (bad = channel_param(call, &chan, id)))
		return bad;
	if (has_result + has_hex + has_error != 1)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "one of result, result_hex or error");
	uint8_t *bytes = NULL;
	size_t blen = 0;
	if (has_hex) {
		blen = rhex.len / 2;
		bytes = malloc(blen ? blen : 1);
		if (bytes == NULL)
			abort();
		if (rhex.len % 2 || weft_hex_decode(bytes, blen, (const char *)rhex.ptr, rhex.len) != 0) {
			free(bytes);
			return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "result_hex: hex digits");
		}
	}
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 4);
	weft_mpw_bin(&arg, id, 32);
	weft_mpw_uint(&arg, seq);
	weft_mpw_bool(&arg, !has_error);
	if (has_error)
		weft_mpw_strn(&arg, (const char *)error.ptr, (uint32_t)error.len);
	else if (has_hex)
		weft_mpw_bin(&arg, bytes, (uint32_t)blen);
	else
		weft_mpw_bin(&arg, result.ptr, (uint32_t)result.len);
	free(bytes);
	int rc = weft_host_command(ch->node->host, "asc.respond", arg.buf, arg.len, &reply);
	const struct weft_rpc_done *done = answer_command(call, rc, &reply);
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	return done;
}

static const struct weft_rpc_done *rpc_channel_subscribe(struct weft_rpc_call *call, void *ctx)
{
	return subscribe_to(call, ctx, "channel.event");
}

const struct weft_rpc_method weft_channels_methods[] = {
	{"wallet.new", rpc_wallet_new, "", "a new wallet (a channel member's key) hosted by this node: index, account", 0},
	{"wallet.list", rpc_wallet_list, "", "the wallets this node hosts, with their ledger balances", 0},
	{"channel.open", rpc_channel_open, "members=[HEX|HEX@NODE,...] deposits=[UINT,...] [wait=BOOL]",
	 "open a channel of 2 to 255 members, each depositing from its ledger account; waits for the ledger", 0},
	{"channel.pay", rpc_channel_pay,
	 "channel=HEX to=MEMBER amount=UINT [from=MEMBER] [wait=BOOL] [hash=HEX [route=[\"CHANNEL:ACCOUNT\",...]]]",
	 "pay a member off the ledger (MEMBER: index or account); with hash, a conditional payment (on through "
	 "route's channels, unlocked by the invoice's preimage); waits for the payment's end",
	 0},
	{"channel.invoice", rpc_channel_invoice, "member=HEX amount=UINT",
	 "a hash to be paid to a member hosted here (a conditional payment's lock); its preimage stays here", 0},
	{"channel.list", rpc_channel_list, "", "the channels with a member hosted here", 0},
	{"channel.info", rpc_channel_info, "channel=HEX",
	 "members, balances, what a close would pay now, the newest root, payments in flight, the ledger's view", 0},
	{"channel.close", rpc_channel_close, "channel=HEX [force=BOOL]",
	 "close cooperatively (waits for a root covering every payment), or post the newest root (force)", 0},
	{"channel.root", rpc_channel_root, "channel=HEX", "ask for a root now (the opener's node makes them)", 0},
	{"channel.subscribe", rpc_channel_subscribe, "",
	 "channel events (payments, roots, opens, closes, disputes, evidence) as channel.event notifications", 0},
	{"asc.open", rpc_asc_open, "provider=HEX[@NODE] deposit=UINT [timeout=HEIGHTS] [client=WALLET] [wait=BOOL]",
	 "open an atomic service channel: the client's deposit on the ledger for a provider's services", 0},
	{"asc.request", rpc_asc_request, "channel=HEX service=NAME price=UINT [payload=TEXT] [wait=BOOL]",
	 "pay price for one request to the provider's service; answers the decrypted result", 0},
	{"asc.info", rpc_asc_info, "channel=HEX", "a service channel: balances, expiry, the round in progress", 0},
	{"asc.list", rpc_asc_list, "", "the service channels with a client or provider hosted here", 0},
	{"asc.close", rpc_asc_close, "channel=HEX", "close cooperatively at the last paid state (no request in progress)", 0},
	{"asc.subscribe", rpc_asc_subscribe, "", "service channel events as asc.event notifications", 0},
	{"service.register", rpc_service_register, "name=NAME",
	 "sell a service: this connection receives service.request notifications for NAME", 0},
	{"service.respond", rpc_service_respond, "channel=HEX seq=UINT (result=TEXT | result_hex=HEX | error=TEXT)",
	 "answer a service.request (the result is encrypted and paid for atomically)", 0},
};
const size_t weft_channels_nmethods = sizeof(weft_channels_methods) / sizeof(weft_channels_methods[0]);
