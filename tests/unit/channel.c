/* channel.c - tests of the payment channel service (protocols/channel:
 * wire.c, paydag.c, channel.c; weft/channel.h), hosted directly on fake
 * envs (tests/lib/fakeenv.h), one per node, that offer the wallet and
 * event services (real BIP340 keys: secret key i + 1 for key i) and no
 * ledger; a message pump in this file moves what each node sends to the
 * others, and can drop or hold messages by type, sender and receiver.
 *
 *   wire      a payment's encode/read round trip; every malformed form
 *             refused (counts, field types, refs not ascending or naming
 *             the sender, to == from, amount 0, seq 0, too many refs,
 *             every truncation); the payment hash changes with each field
 *             it covers and not with the signatures; the consent hash
 *             differs from it; the frontier.
 *   flow      a 5-member channel over 4 nodes (two members on node 1):
 *             open (the ledger's open signed by all), payments in every
 *             direction, one at a time and all at once, finalized on every
 *             node with the same balances; a root asked at the opener's
 *             node, all-signed everywhere, close_now the expected balances
 *             adding up to the deposits; a cooperative close whose ledger
 *             transaction carries every member's signature.
 *   refusals  each refused with nothing changed and the node working
 *             after: consents replayed from another channel, for another
 *             seq, under another chain id, signed by the wrong member or
 *             sent by the wrong node; an overspending proposal (the
 *             "overspend" strategy: REFUSE "overspend"); a proposal and a
 *             FINAL whose parents are unknown (FETCH, then applied when
 *             PAYS arrives); FINALs with a bad sender signature or
 *             consent; two FINALs of one (sender, seq): evidence, the
 *             second not applied; ROOT_ALLs with a signature missing,
 *             wrong or swapped; a ROOT_ASK for a version signed with
 *             other content (ROOT_NACK "signed_another") and one from a
 *             node that is not the opener's; a FETCH from a node hosting
 *             no member; a cooperative close refused by a node holding
 *             unrooted payments; every message type truncated at every
 *             length, with nil fields and the wrong field count; a member
 *             that never answers (a "timeout" event, then the payer pays
 *             again).
 *   restart   destroy and init again on the same kv between the
 *             receiver's consent and the payer's finalize: the receiver
 *             (the consent answers as before), the payer (it forgets the
 *             proposal: it signed nothing; paying again gets the same
 *             consent), both, and the payer with the consent lost; a
 *             receiver restarting before the FINAL: each payment finalized
 *             exactly once; every node restarted: the same state; the
 *             periodic roots and a cooperative close after.
 *   chain     a consent made on a committee whose chain id is "other",
 *             for the same channel and payment, replayed: rejected.
 *   edges     (each once a bug, fixed): a root over amounts above 2^63
 *             (unsigned sums); an OPEN whose id is not its content's
 *             leaves no channel behind; a payment between two members of
 *             one node gets its "received" event and settles its consent
 *             at once; a proposal carrying the payments ahead of it is
 *             refused by a node that refuses it alone (closing,
 *             equivocator); a FINAL that arrives after its node signed the
 *             cooperative close is applied (the hosts' histories stay the
 *             same) and reported as received_after_close, and no root
 *             that counts it is signed there (its balance is frozen at
 *             the close: tla/ChannelPayLateFinal).
 *   locks     payments across channels: key 0 pays key 2 through key 1
 *             (a lock in A, one in B, unlocked back: both legs on every
 *             node, roots with no lock left); an unknown hash refunded on
 *             both legs; a lock with no route or invoice refused; bad
 *             asks (a wrong preimage, the wrong node, a lock already
 *             unlocked, a non-lock); a forged refund ask refused as
 *             preimage_known; a restart of the node in both channels.
 *   asc       atomic service channels: open (the ledger's open signed by
 *             the client), a paid round (request, the service's answer,
 *             offer, accept, reveal, the result decrypted), a refusal by
 *             the service, hostile offers (another state, evidence that
 *             does not verify, the wrong node) and reveals (a t not T's),
 *             the client's restart before the reveal, a provider that
 *             asked to close and restarted stays closing (it refuses a
 *             request: tla/AscRoundCloseRestart) and can ask again, a
 *             cooperative close signed by both. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../protocols/channel/chan.h"
#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/adaptor.h"
#include "weft/channel.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/json.h"
#include "weft/ledger.h"

#define NN 4 /* nodes */
#define NK 8 /* keys */
#define MAXN WEFT_CHANNEL_MAX

/* ---- keys ---- */

static uint8_t sk[NK][32], pk[NK][32];
static const uint32_t key_host[NK] = {0, 1, 2, 1, 3, 0, 2, 3};
static uint8_t chain_test[32], chain_other[32];
static const uint8_t aux0[32];

static void keys_init(void)
{
	for (int k = 0; k < NK; k++) {
		memset(sk[k], 0, 32);
		sk[k][31] = (uint8_t)(k + 1);
		sk[k][0] = 0x11;
		if (weft_ledger_pubkey(sk[k], pk[k]) != 0)
			abort();
	}
	weft_ledger_chain("test", 4, chain_test);
	weft_ledger_chain("other", 5, chain_other);
}

static void ksign(int k, const uint8_t msg[32], uint8_t sig[64])
{
	if (weft_ledger_schnorr_sign(sk[k], msg, aux0, sig) != 0)
		abort();
}

/* ---- nodes ---- */

struct blob {
	uint8_t *b;
	size_t len;
};

static void blob_push(struct blob **v, size_t *n, const void *b, size_t len)
{
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	uint8_t *copy = malloc(len ? len : 1);
	if (*v == NULL || copy == NULL)
		abort();
	memcpy(copy, b, len);
	(*v)[(*n)++] = (struct blob){copy, len};
}

static void blobs_free(struct blob **v, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*v)[i].b);
	free(*v);
	*v = NULL;
	*n = 0;
}

struct tnode {
	struct fake_env fe; /* first: fakeenv finds it through env->host */
	const struct weft_proto_ops *ops;
	void *state;
	bool up;
	struct weft_wallet_service wallet;
	struct weft_event_service events;
	struct weft_mpw params;
	struct blob *ev; /* events emitted (msgpack maps) */
	size_t nev;
	struct blob *tx; /* ledger transactions submitted (deliveries) */
	size_t ntx;
	int rejected;    /* negative on_message returns */
	int last_rc;
	bool verbose;
};

static struct tnode nodes[NN];

static int w_sign(void *ctx, const uint8_t key[32], const uint8_t msg[32], uint8_t sig[64])
{
	struct tnode *nd = ctx;
	for (int k = 0; k < NK; k++)
		if (key_host[k] == nd->fe.env.self && memcmp(pk[k], key, 32) == 0) {
			ksign(k, msg, sig);
			return 0;
		}
	return WEFT_NOTFOUND;
}

static int w_presign(void *ctx, const uint8_t key[32], const uint8_t msg[32], const uint8_t T[33], uint8_t presig[65])
{
	struct tnode *nd = ctx;
	for (int k = 0; k < NK; k++)
		if (key_host[k] == nd->fe.env.self && memcmp(pk[k], key, 32) == 0)
			return weft_adaptor_presign(sk[k], msg, T, aux0, presig);
	return WEFT_NOTFOUND;
}

static int w_verify(void *ctx, const uint8_t key[32], const uint8_t msg[32], const uint8_t sig[64])
{
	return weft_ledger_schnorr_verify(key, msg, sig) == 0 ? 0 : WEFT_ECRYPTO;
}

static void ev_emit(void *ctx, const uint8_t *event, size_t len)
{
	struct tnode *nd = ctx;
	blob_push(&nd->ev, &nd->nev, event, len);
}

static const void *services(struct fake_env *fe, const char *name)
{
	struct tnode *nd = fe->service_ctx;
	if (strcmp(name, WEFT_WALLET_SERVICE) == 0)
		return &nd->wallet;
	if (strcmp(name, WEFT_EVENT_SERVICE) == 0)
		return &nd->events;
	return NULL; /* no ledger */
}

static void log_line(struct fake_env *fe, enum weft_log_level level, const char *event, const char *text)
{
	if (getenv("CHANNEL_TEST_LOG"))
		diag("node %u: %s %s", fe->env.self, event, text);
}

/* ---- the message pump ---- */

struct qmsg {
	uint32_t from, to;
	int type;
	uint8_t *b;
	size_t len;
};

enum fate { PASS, DROP, HOLD };

struct rule {
	int type;     /* 0: any */
	int from, to; /* -1: any */
	enum fate fate;
	int left;     /* matches left; -1: forever; 0: spent */
};

static struct rule rules[16];
static int nrules;
static struct qmsg *q;
static size_t qn, qcap, qhead;
static struct qmsg held[256];
static size_t nheld;
static struct qmsg sample[MSG_TYPES];      /* the first message of each type */
static unsigned sent[NN][NN][MSG_TYPES];   /* from, to, type */

static int msg_type(const uint8_t *b, size_t len)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t v, t;
	weft_mp_reader_init(&r, b, len);
	if (weft_mp_read_array(&r, &count) != 0 || weft_mp_read_uint(&r, &v) != 0 || weft_mp_read_uint(&r, &t) != 0 ||
	    t >= MSG_TYPES)
		return -1;
	return (int)t;
}

static void rule_add(int type, int from, int to, enum fate fate, int left)
{
	if (nrules == 16)
		abort();
	rules[nrules++] = (struct rule){type, from, to, fate, left};
}

static void rules_clear(void)
{
	nrules = 0;
}

static enum fate fate_of(const struct qmsg *m)
{
	for (int i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];
		if (r->left == 0 || (r->type && r->type != m->type) || (r->from >= 0 && (uint32_t)r->from != m->from) ||
		    (r->to >= 0 && (uint32_t)r->to != m->to))
			continue;
		if (r->left > 0)
			r->left--;
		return r->fate;
	}
	return PASS;
}

static void enqueue(uint32_t from, uint32_t to, const uint8_t *b, size_t len)
{
	if (qn == qcap) {
		qcap = qcap ? 2 * qcap : 256;
		q = realloc(q, qcap * sizeof(*q));
		if (q == NULL)
			abort();
	}
	uint8_t *copy = malloc(len ? len : 1);
	if (copy == NULL)
		abort();
	memcpy(copy, b, len);
	int type = msg_type(b, len);
	q[qn++] = (struct qmsg){from, to, type, copy, len};
	if (type > 0) {
		sent[from][to][type]++;
		if (sample[type].b == NULL) {
			sample[type] = q[qn - 1];
			sample[type].b = malloc(len);
			memcpy(sample[type].b, b, len);
		}
	}
}

/* What node i sent and submitted in its last callback. */
static void collect(uint32_t i)
{
	struct tnode *nd = &nodes[i];
	for (size_t k = 0; k < nd->fe.nsent; k++) {
		const struct fake_sent *s = &nd->fe.sent[k];
		for (uint32_t j = 0; j < NN; j++)
			if (j != i && (s->to < 0 || s->to == (int64_t)j))
				enqueue(i, j, s->data, s->len);
	}
	for (size_t k = 0; k < nd->fe.ndeliveries; k++)
		blob_push(&nd->tx, &nd->ntx, nd->fe.deliveries[k].data, nd->fe.deliveries[k].len);
	fake_env_clear(&nd->fe);
}

/* Hands msg to node to as from's: on_message's return. */
static int inject(uint32_t to, uint32_t from, const uint8_t *b, size_t len)
{
	struct tnode *nd = &nodes[to];
	int rc = nd->ops->on_message(nd->state, from, b, len);
	nd->last_rc = rc;
	if (rc < 0)
		nd->rejected++;
	collect(to);
	return rc;
}

static void pump(void)
{
	for (unsigned long steps = 0; qhead < qn; steps++) {
		if (steps > 1000000) {
			diag("pump: the nodes never go quiet");
			abort();
		}
		struct qmsg m = q[qhead++];
		enum fate f = nodes[m.to].up ? fate_of(&m) : DROP;
		if (f == HOLD && nheld < sizeof(held) / sizeof(held[0])) {
			held[nheld++] = m;
			continue;
		}
		if (f == PASS)
			inject(m.to, m.from, m.b, m.len);
		free(m.b);
	}
	qhead = qn = 0;
}

/* The first held message of a type (to a node, or any: -1), or NULL. */
static struct qmsg *held_find(int type, int to)
{
	for (size_t i = 0; i < nheld; i++)
		if (held[i].type == type && (to < 0 || held[i].to == (uint32_t)to))
			return &held[i];
	return NULL;
}

/* Delivers every held message (in order), then pumps. */
static void release_held(void)
{
	size_t n = nheld;
	struct qmsg copy[256];
	memcpy(copy, held, n * sizeof(held[0]));
	nheld = 0;
	for (size_t i = 0; i < n; i++) {
		if (nodes[copy[i].to].up)
			inject(copy[i].to, copy[i].from, copy[i].b, copy[i].len);
		free(copy[i].b);
	}
	pump();
}

static void drop_held(void)
{
	for (size_t i = 0; i < nheld; i++)
		free(held[i].b);
	nheld = 0;
}

static unsigned sent_total(int from, int to, int type)
{
	unsigned t = 0;
	for (uint32_t f = 0; f < NN; f++)
		for (uint32_t k = 0; k < NN; k++)
			if ((from < 0 || (uint32_t)from == f) && (to < 0 || (uint32_t)to == k))
				t += sent[f][k][type];
	return t;
}

/* ---- node life ---- */

struct netp {
	const char *chain;
	uint64_t root_ms, timeout_ms, tick_ms, pipeline;
};

static struct netp cur;

static void write_params(struct weft_mpw *w, const struct netp *p)
{
	weft_mpw_init(w);
	weft_mpw_map(w, 6);
	weft_mpw_str(w, "channel_pipeline");
	weft_mpw_uint(w, p->pipeline);
	weft_mpw_str(w, "chain_id");
	weft_mpw_str(w, p->chain);
	weft_mpw_str(w, "channel_tick_ms");
	weft_mpw_uint(w, p->tick_ms);
	weft_mpw_str(w, "channel_root_ms");
	weft_mpw_uint(w, p->root_ms);
	weft_mpw_str(w, "channel_root_every");
	weft_mpw_uint(w, 1000000);
	weft_mpw_str(w, "channel_pay_timeout_ms");
	weft_mpw_uint(w, p->timeout_ms);
}

static int node_boot(uint32_t i)
{
	struct tnode *nd = &nodes[i];
	if (nd->state == NULL)
		nd->state = calloc(1, nd->ops->state_size);
	else
		memset(nd->state, 0, nd->ops->state_size);
	if (nd->state == NULL)
		abort();
	int rc = nd->ops->init(nd->state, &nd->fe.env, nd->params.buf, nd->params.len);
	if (rc == 0 && nd->ops->start)
		rc = nd->ops->start(nd->state);
	nd->up = rc == 0;
	collect(i);
	return rc;
}

static void node_new(uint32_t i, const struct netp *p)
{
	struct tnode *nd = &nodes[i];
	memset(nd, 0, sizeof(*nd));
	fake_env_init(&nd->fe, i, NN);
	fake_env_set_service(&nd->fe, services, nd);
	nd->fe.log_hook = log_line;
	nd->wallet = (struct weft_wallet_service){.ctx = nd, .sign = w_sign, .verify = w_verify, .presign = w_presign};
	nd->events = (struct weft_event_service){.ctx = nd, .emit = ev_emit};
	nd->ops = &weft_channel_service;
	write_params(&nd->params, p);
	if (node_boot(i) != 0)
		abort();
}

/* destroy, then init and start again on the same kv (ops: NULL keeps them). */
static int node_restart(uint32_t i, const struct weft_proto_ops *ops)
{
	struct tnode *nd = &nodes[i];
	nd->ops->destroy(nd->state);
	if (ops)
		nd->ops = ops;
	return node_boot(i);
}

static void net_setup(const struct netp *p)
{
	cur = *p;
	for (uint32_t i = 0; i < NN; i++)
		node_new(i, p);
	memset(sent, 0, sizeof(sent));
	rules_clear();
}

static void net_teardown(void)
{
	pump();
	drop_held();
	for (uint32_t i = 0; i < NN; i++) {
		struct tnode *nd = &nodes[i];
		nd->ops->destroy(nd->state);
		free(nd->state);
		nd->state = NULL;
		fake_env_free(&nd->fe);
		weft_mpw_free(&nd->params);
		blobs_free(&nd->ev, &nd->nev);
		blobs_free(&nd->tx, &nd->ntx);
	}
	for (int t = 0; t < MSG_TYPES; t++) {
		free(sample[t].b);
		sample[t].b = NULL;
	}
	free(q);
	q = NULL;
	qn = qcap = qhead = 0;
}

/* The clock moves on by ms on every node, a tick at a time, each node's
 * tick timer firing, messages pumped after each tick. */
static void advance(uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += cur.tick_ms) {
		for (uint32_t i = 0; i < NN; i++) {
			nodes[i].fe.now_us += cur.tick_ms * 1000;
			if (nodes[i].up && nodes[i].ops->on_timer) {
				nodes[i].ops->on_timer(nodes[i].state, 1);
				collect(i);
			}
		}
		pump();
	}
}

/* ---- commands, queries, events ---- */

static int command(uint32_t i, const char *what, const struct weft_mpw *arg, json_t **out)
{
	struct tnode *nd = &nodes[i];
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	int rc = nd->ops->command(nd->state, what, arg->buf, arg->len, &reply);
	if (out) {
		*out = NULL;
		if (reply.len)
			weft_mp_buf_to_json(reply.buf, reply.len, out);
	}
	weft_mpw_free(&reply);
	collect(i);
	return rc;
}

static json_t *info(uint32_t i, const uint8_t id[32])
{
	struct tnode *nd = &nodes[i];
	struct weft_mpw a, reply;
	json_t *j = NULL;
	weft_mpw_init(&a);
	weft_mpw_init(&reply);
	weft_mpw_bin(&a, id, 32);
	if (nd->ops->query(nd->state, "channel.info", a.buf, a.len, &reply) == 0)
		weft_mp_buf_to_json(reply.buf, reply.len, &j);
	weft_mpw_free(&a);
	weft_mpw_free(&reply);
	return j;
}

/* An integer field; above 2^63 (a decimal string in the JSON) it wraps
 * as (long long) of the uint64 does. */
static long long jint(json_t *o, const char *key)
{
	json_t *v = o ? json_object_get(o, key) : NULL;
	if (v && json_is_string(v))
		return (long long)strtoull(json_string_value(v), NULL, 10);
	return v && json_is_integer(v) ? json_integer_value(v) : -1;
}

static long long member_int(json_t *inf, uint32_t m, const char *key)
{
	return jint(json_array_get(json_object_get(inf, "members"), m), key);
}

static long long info_get(uint32_t i, const uint8_t id[32], const char *key)
{
	json_t *j = info(i, id);
	long long v = jint(j, key);
	json_decref(j);
	return v;
}

static long long info_member(uint32_t i, const uint8_t id[32], uint32_t m, const char *key)
{
	json_t *j = info(i, id);
	long long v = member_int(j, m, key);
	json_decref(j);
	return v;
}

static long long info_root_version(uint32_t i, const uint8_t id[32])
{
	json_t *j = info(i, id);
	long long v = jint(json_object_get(j, "root"), "version");
	json_decref(j);
	return v;
}

static long long info_in_flight(uint32_t i, const uint8_t id[32])
{
	json_t *j = info(i, id);
	json_t *a = json_object_get(j, "in_flight");
	long long v = a ? (long long)json_array_size(a) : -1;
	json_decref(j);
	return v;
}

static char *info_status(uint32_t i, const uint8_t id[32])
{
	static char buf[32];
	json_t *j = info(i, id);
	const char *s = json_string_value(json_object_get(j, "status"));
	snprintf(buf, sizeof(buf), "%s", s ? s : "(none)");
	json_decref(j);
	return buf;
}

/* channel.info without its ages: what "nothing changed" compares. */
static char *snap(uint32_t i, const uint8_t id[32])
{
	json_t *j = info(i, id);
	if (j == NULL)
		return strdup("null");
	json_object_del(json_object_get(j, "root"), "age_ms");
	json_t *fl = json_object_get(j, "in_flight");
	for (size_t k = 0; k < json_array_size(fl); k++)
		json_object_del(json_array_get(fl, k), "age_ms");
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return s;
}

static bool same_snap(const char *before, uint32_t i, const uint8_t id[32])
{
	char *now = snap(i, id);
	bool same = strcmp(before, now) == 0;
	if (!same)
		diag("changed on node %u:\n#   before %s\n#   after  %s", i, before, now);
	free(now);
	return same;
}

/* Events at node i of a kind (and status, or any: NULL); with reason
 * (NULL: any). */
static int ev_count(uint32_t i, const char *event, const char *status, const char *reason)
{
	int n = 0;
	for (size_t k = 0; k < nodes[i].nev; k++) {
		json_t *j = NULL;
		if (weft_mp_buf_to_json(nodes[i].ev[k].b, nodes[i].ev[k].len, &j) != 0)
			continue;
		const char *e = json_string_value(json_object_get(j, "event"));
		const char *st = json_string_value(json_object_get(j, "status"));
		const char *why = json_string_value(json_object_get(j, "reason"));
		if (e && strcmp(e, event) == 0 && (status == NULL || (st && strcmp(st, status) == 0)) &&
		    (reason == NULL || (why && strcmp(why, reason) == 0)))
			n++;
		json_decref(j);
	}
	return n;
}

/* ---- channels ---- */

struct tch {
	uint8_t id[32];
	uint32_t n;
	uint32_t key[MAXN];     /* key index per member */
	uint32_t host[MAXN];
	uint64_t dep[MAXN];
	uint64_t bal[MAXN];     /* expected balances */
	uint64_t seq[MAXN];     /* expected payments per chain */
	const uint8_t *chain;
};

static void tch_init(struct tch *c, uint32_t n, const uint32_t *keys, const uint64_t *dep)
{
	memset(c, 0, sizeof(*c));
	c->n = n;
	c->chain = chain_test;
	for (uint32_t m = 0; m < n; m++) {
		c->key[m] = keys[m];
		c->host[m] = key_host[keys[m]];
		c->dep[m] = c->bal[m] = dep[m];
	}
}

static bool hosts(const struct tch *c, uint32_t node)
{
	for (uint32_t m = 0; m < c->n; m++)
		if (c->host[m] == node)
			return true;
	return false;
}

static void ledger_feed(uint32_t i, const uint8_t *tx, size_t len, uint64_t outcome)
{
	struct weft_mpw a;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 2);
	weft_mpw_bin(&a, tx, len);
	weft_mpw_uint(&a, outcome);
	command(i, "channel.ledger", &a, NULL);
	weft_mpw_free(&a);
}

/* channel.open at node `at`, the open submitted there (checked: every
 * member's signature, the id), then the ledger's "applied" on every node.
 * True when the channel is open on every node hosting a member. */
static bool open_channel(struct tch *c, uint32_t at)
{
	struct weft_mpw a;
	json_t *rep = NULL;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 3);
	weft_mpw_array(&a, c->n);
	for (uint32_t m = 0; m < c->n; m++)
		weft_mpw_bin(&a, pk[c->key[m]], 32);
	weft_mpw_array(&a, c->n);
	for (uint32_t m = 0; m < c->n; m++)
		weft_mpw_uint(&a, c->host[m]);
	weft_mpw_array(&a, c->n);
	for (uint32_t m = 0; m < c->n; m++)
		weft_mpw_uint(&a, c->dep[m]);
	size_t ntx = nodes[at].ntx;
	int rc = command(at, "channel.open", &a, &rep);
	weft_mpw_free(&a);
	const char *hex = json_string_value(json_object_get(rep, "channel"));
	if (rc != 0 || hex == NULL || weft_hex_decode(c->id, 32, hex, strlen(hex)) != 0) {
		diag("channel.open: rc %d", rc);
		json_decref(rep);
		return false;
	}
	json_decref(rep);
	pump();
	if (nodes[at].ntx != ntx + 1) {
		diag("channel.open: %zu ledger transactions submitted", nodes[at].ntx - ntx);
		return false;
	}
	struct weft_ledger_channel_open o;
	enum weft_ledger_outcome why;
	uint8_t id[32];
	const struct blob *tx = &nodes[at].tx[ntx];
	if (weft_ledger_channel_open_decode(tx->b, tx->len, &o) != 0 ||
	    weft_ledger_channel_open_check(c->chain, &o, &why) != 0) {
		diag("the open submitted does not check");
		return false;
	}
	weft_ledger_channel_id(c->chain, &o, id);
	if (memcmp(id, c->id, 32) != 0 || o.n != c->n)
		return false;
	for (uint32_t i = 0; i < NN; i++)
		if (nodes[i].up)
			ledger_feed(i, tx->b, tx->len, WEFT_LEDGER_APPLIED);
	pump();
	for (uint32_t i = 0; i < NN; i++)
		if (hosts(c, i) && strcmp(info_status(i, c->id), "open") != 0) {
			diag("node %u: status %s", i, info_status(i, c->id));
			return false;
		}
	return true;
}

static void pay_arg(struct weft_mpw *a, const struct tch *c, uint32_t from, uint32_t to, uint64_t amount)
{
	weft_mpw_init(a);
	weft_mpw_array(a, 4);
	weft_mpw_bin(a, c->id, 32);
	weft_mpw_uint(a, from);
	weft_mpw_uint(a, to);
	weft_mpw_uint(a, amount);
}

/* channel.pay at the payer's node (nothing pumped): the command's code,
 * the refusal in why (when not NULL). */
static int pay_cmd(struct tch *c, uint32_t from, uint32_t to, uint64_t amount, char *why, size_t whylen)
{
	struct weft_mpw a;
	json_t *rep = NULL;
	pay_arg(&a, c, from, to, amount);
	int rc = command(c->host[from], "channel.pay", &a, &rep);
	weft_mpw_free(&a);
	if (why) {
		const char *s = json_string_value(rep);
		snprintf(why, whylen, "%s", s ? s : "");
	}
	json_decref(rep);
	return rc;
}

/* A payment expected to go through: pays, pumps, updates the expected
 * balances; true when the payer's node reported it finalized. */
static bool pay_ok(struct tch *c, uint32_t from, uint32_t to, uint64_t amount)
{
	uint32_t h = c->host[from];
	int before = ev_count(h, "payment", "finalized", NULL);
	int rc = pay_cmd(c, from, to, amount, NULL, 0);
	pump();
	if (rc != 0 || ev_count(h, "payment", "finalized", NULL) != before + 1) {
		diag("payment %u -> %u of %llu: rc %d, not finalized", from, to, (unsigned long long)amount, rc);
		return false;
	}
	c->bal[from] -= amount;
	c->bal[to] += amount;
	c->seq[from]++;
	return true;
}

/* Every up node hosting a member holds the expected balances and chains
 * and nothing in flight. */
static bool agree(const struct tch *c)
{
	bool good = true;
	for (uint32_t i = 0; i < NN; i++) {
		if (!hosts(c, i) || !nodes[i].up)
			continue;
		json_t *j = info(i, c->id);
		for (uint32_t m = 0; m < c->n; m++) {
			long long b = member_int(j, m, "balance"), np = member_int(j, m, "payments");
			if (b != (long long)c->bal[m] || np != (long long)c->seq[m]) {
				diag("node %u member %u: balance %lld payments %lld, expected %llu and %llu", i, m, b, np,
				     (unsigned long long)c->bal[m], (unsigned long long)c->seq[m]);
				good = false;
			}
		}
		json_t *fl = json_object_get(j, "in_flight");
		if (json_array_size(fl) != 0) {
			diag("node %u: %zu payments in flight", i, json_array_size(fl));
			good = false;
		}
		json_decref(j);
	}
	return good;
}

/* close_now (the newest root) on every node hosting a member equals the
 * expected balances, and adds up to the deposits. */
static bool roots_agree(const struct tch *c, long long version)
{
	bool good = true;
	uint64_t total = 0, sum = 0;
	for (uint32_t m = 0; m < c->n; m++)
		total += c->dep[m], sum += c->bal[m];
	if (sum != total)
		good = false;
	for (uint32_t i = 0; i < NN; i++) {
		if (!hosts(c, i) || !nodes[i].up)
			continue;
		json_t *j = info(i, c->id);
		long long v = jint(json_object_get(j, "root"), "version");
		uint64_t s = 0;
		for (uint32_t m = 0; m < c->n; m++) {
			long long b = member_int(j, m, "close_now");
			s += (uint64_t)b;
			if (b != (long long)c->bal[m])
				good = false;
		}
		if (v != version || s != total) {
			diag("node %u: root version %lld (expected %lld), close_now adds up to %llu", i, v, version,
			     (unsigned long long)s);
			good = false;
		}
		json_decref(j);
	}
	return good;
}

static bool ask_root(struct tch *c, uint32_t at)
{
	struct weft_mpw a;
	json_t *rep = NULL;
	weft_mpw_init(&a);
	weft_mpw_bin(&a, c->id, 32);
	int rc = command(at, "channel.root", &a, &rep);
	weft_mpw_free(&a);
	bool building = json_is_true(json_object_get(rep, "building"));
	json_decref(rep);
	return rc == 0 && building;
}

static int close_cmd(struct tch *c, uint32_t at, bool force, char *why, size_t whylen)
{
	struct weft_mpw a;
	json_t *rep = NULL;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 2);
	weft_mpw_bin(&a, c->id, 32);
	weft_mpw_bool(&a, force);
	int rc = command(at, "channel.close", &a, &rep);
	weft_mpw_free(&a);
	if (why) {
		const char *s = json_string_value(rep);
		snprintf(why, whylen, "%s", s ? s : "");
	}
	json_decref(rep);
	return rc;
}

/* ---- messages built here ---- */

static void mhead(struct weft_mpw *w, int type, const uint8_t id[32], uint32_t fields)
{
	weft_mpw_init(w);
	weft_mpw_array(w, 3 + fields);
	weft_mpw_uint(w, WEFT_CHANNEL_PROTO_VERSION);
	weft_mpw_uint(w, (uint64_t)type);
	weft_mpw_bin(w, id, 32);
}

/* The payment of a PROPOSE or FINAL. */
static bool msg_payment(const uint8_t *b, size_t len, uint32_t n, struct weft_channel_payment *p)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t v;
	uint8_t id[32];
	weft_mp_reader_init(&r, b, len);
	return weft_mp_read_array(&r, &count) == 0 && count == 4 && weft_mp_read_uint(&r, &v) == 0 &&
	       weft_mp_read_uint(&r, &v) == 0 && weft_mp_read_bin_fixed(&r, id, 32) == 0 &&
	       weft_channel_payment_read(&r, n, p) == 0;
}

static void msg_with_payment(struct weft_mpw *w, int type, const uint8_t id[32], const struct weft_channel_payment *p)
{
	mhead(w, type, id, 1);
	weft_channel_payment_encode(p, w);
}

/* A cut as a ROOT_ASK or ROOT_ALL carries it. */
struct cut {
	uint64_t version;
	uint64_t seq[MAXN];
	uint8_t head[MAXN][32];
	uint8_t sig[MAXN][64];   /* ROOT_ALL: every member's; ROOT_ASK: [0] the proposer's */
};

static bool msg_cut(const uint8_t *b, size_t len, uint32_t n, struct cut *k)
{
	struct weft_mp_reader r;
	uint32_t count, two;
	uint64_t v, type;
	uint8_t id[32];
	memset(k, 0, sizeof(*k));
	weft_mp_reader_init(&r, b, len);
	if (weft_mp_read_array(&r, &count) != 0 || count != 6 || weft_mp_read_uint(&r, &v) != 0 ||
	    weft_mp_read_uint(&r, &type) != 0 || weft_mp_read_bin_fixed(&r, id, 32) != 0 ||
	    weft_mp_read_uint(&r, &k->version) != 0 || weft_mp_read_array(&r, &count) != 0 || count != n)
		return false;
	for (uint32_t m = 0; m < n; m++)
		if (weft_mp_read_array(&r, &two) != 0 || two != 2 || weft_mp_read_uint(&r, &k->seq[m]) != 0 ||
		    weft_mp_read_bin_fixed(&r, k->head[m], 32) != 0)
			return false;
	if (type == MSG_ROOT_ASK)
		return weft_mp_read_bin_fixed(&r, k->sig[0], 64) == 0;
	if (weft_mp_read_array(&r, &count) != 0 || count != n)
		return false;
	for (uint32_t m = 0; m < n; m++)
		if (weft_mp_read_bin_fixed(&r, k->sig[m], 64) != 0)
			return false;
	return true;
}

/* [1, type, id, version, cut, sigs]: ROOT_ALL with nsig signatures (a
 * plain array), or ROOT_ASK (nsig < 0: sig[0] alone). */
static void msg_root(struct weft_mpw *w, int type, const uint8_t id[32], uint32_t n, const struct cut *k, int nsig)
{
	mhead(w, type, id, 3);
	weft_mpw_uint(w, k->version);
	weft_mpw_array(w, n);
	for (uint32_t m = 0; m < n; m++) {
		weft_mpw_array(w, 2);
		weft_mpw_uint(w, k->seq[m]);
		weft_mpw_bin(w, k->head[m], 32);
	}
	if (nsig < 0) {
		weft_mpw_bin(w, k->sig[0], 64);
		return;
	}
	weft_mpw_array(w, (uint32_t)nsig);
	for (int m = 0; m < nsig; m++)
		weft_mpw_bin(w, k->sig[m], 64);
}

/* The root hash of a cut with balances (the ledger's root sighash). */
static void root_hash(const struct tch *c, const struct cut *k, const uint64_t *bal, uint8_t h[32])
{
	struct weft_ledger_channel_root t;
	memset(&t, 0, sizeof(t));
	memcpy(t.id, c->id, 32);
	t.version = k->version;
	t.n = c->n;
	memcpy(t.balance, bal, sizeof(uint64_t) * c->n);
	weft_channel_frontier(c->n, k->seq, (const uint8_t(*)[32])k->head, t.frontier);
	weft_ledger_channel_root_sighash(c->chain, &t, h);
}

/* A payment signed by the test's keys: the sender's signature and the
 * receiver's consent over chain and id. */
static void sign_payment(const struct tch *c, const uint8_t chain[32], const uint8_t id[32],
			 struct weft_channel_payment *p)
{
	uint8_t h[32], m[32];
	weft_channel_payment_hash(chain, id, p, h);
	ksign((int)c->key[p->from], h, p->sig);
	weft_channel_consent_hash(h, m);
	ksign((int)c->key[p->to], m, p->consent);
}

/* ---- wire ---- */

static void fill(uint8_t *b, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(v + i);
}

static void base_payment(struct weft_channel_payment *p)
{
	memset(p, 0, sizeof(*p));
	p->from = 2;
	p->seq = 7;
	fill(p->prev, 32, 0x10);
	p->nrefs = 2;
	p->refs[0].member = 0;
	p->refs[0].seq = 3;
	fill(p->refs[0].hash, 32, 0x40);
	p->refs[1].member = 4;
	p->refs[1].seq = 1;
	fill(p->refs[1].hash, 32, 0x70);
	p->to = 1;
	p->amount = 12345;
	fill(p->sig, 64, 0x90);
	fill(p->consent, 64, 0xb0);
}

static int read_enc(const struct weft_mpw *w, uint32_t n, struct weft_channel_payment *p, size_t *left)
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, w->buf, w->len);
	int rc = weft_channel_payment_read(&r, n, p);
	if (left)
		*left = weft_mp_remaining(&r);
	return rc;
}

/* The encoding of p, reread: 0 or the reader's error. */
static int reread(const struct weft_channel_payment *p, uint32_t n)
{
	struct weft_mpw w;
	struct weft_channel_payment out;
	weft_mpw_init(&w);
	weft_channel_payment_encode(p, &w);
	int rc = read_enc(&w, n, &out, NULL);
	weft_mpw_free(&w);
	return rc;
}

enum bad_form {
	BF_COUNT7, BF_COUNT9, BF_REF2, BF_REF4, BF_PREV31, BF_PREV33, BF_SIG63, BF_CONSENT_STR, BF_FROM_STR,
	BF_AMOUNT_NEG, BF_REFS_MAP, BF_SEQ_NIL, BF_TO_BIG, BF_REF_SEQ_STR, BF_FORMS,
};

static const char *const bad_names[BF_FORMS] = {
	"7 fields", "9 fields", "a ref of 2 fields", "a ref of 4 fields", "prev of 31 bytes", "prev of 33 bytes",
	"sig of 63 bytes", "consent a string", "from a string", "amount negative", "refs a map", "seq nil",
	"to above 2^32", "a ref's seq a string",
};

/* p's encoding, one field malformed as form says. */
static void enc_bad(struct weft_mpw *w, const struct weft_channel_payment *p, enum bad_form f)
{
	weft_mpw_init(w);
	weft_mpw_array(w, f == BF_COUNT7 ? 7 : f == BF_COUNT9 ? 9 : 8);
	if (f == BF_FROM_STR)
		weft_mpw_str(w, "2");
	else
		weft_mpw_uint(w, p->from);
	if (f == BF_SEQ_NIL)
		weft_mpw_nil(w);
	else
		weft_mpw_uint(w, p->seq);
	weft_mpw_bin(w, p->prev, f == BF_PREV31 ? 31 : 32);
	if (f == BF_REFS_MAP)
		weft_mpw_map(w, p->nrefs);
	else
		weft_mpw_array(w, p->nrefs);
	for (uint32_t i = 0; i < p->nrefs; i++) {
		uint32_t k = f == BF_REF2 ? 2 : f == BF_REF4 ? 4 : 3;
		weft_mpw_array(w, k);
		weft_mpw_uint(w, p->refs[i].member);
		if (f == BF_REF_SEQ_STR)
			weft_mpw_str(w, "3");
		else
			weft_mpw_uint(w, p->refs[i].seq);
		if (k >= 3)
			weft_mpw_bin(w, p->refs[i].hash, 32);
		if (k == 4)
			weft_mpw_uint(w, 0);
	}
	if (f == BF_TO_BIG)
		weft_mpw_uint(w, (1ull << 32) + p->to);
	else
		weft_mpw_uint(w, p->to);
	if (f == BF_AMOUNT_NEG)
		weft_mpw_int(w, -5);
	else
		weft_mpw_uint(w, p->amount);
	weft_mpw_bin(w, p->sig, f == BF_SIG63 ? 63 : 64);
	if (f == BF_CONSENT_STR)
		weft_mpw_str(w, "consent");
	else
		weft_mpw_bin(w, p->consent, 64);
	if (f == BF_COUNT9)
		weft_mpw_uint(w, 0);
}

static void test_wire(void)
{
	struct weft_channel_payment p, out;
	struct weft_mpw w;
	size_t left = 99;

	/* round trips */
	base_payment(&p);
	weft_mpw_init(&w);
	weft_channel_payment_encode(&p, &w);
	memset(&out, 0xee, sizeof(out));
	ok(read_enc(&w, 5, &out, &left) == 0 && left == 0, "wire: a payment reads back, nothing left over");
	ok(memcmp(&out, &p, sizeof(p)) == 0, "wire: every field the same after the round trip");
	weft_mpw_free(&w);
	p.nrefs = 0;
	memset(p.refs, 0, sizeof(p.refs));
	p.seq = UINT64_MAX;
	p.amount = UINT64_MAX;
	p.from = 15;
	p.to = 0;
	weft_mpw_init(&w);
	weft_channel_payment_encode(&p, &w);
	ok(read_enc(&w, 16, &out, &left) == 0 && left == 0 && memcmp(&out, &p, sizeof(p)) == 0,
	   "wire: no refs, seq and amount 2^64-1, member 15 of 16 round trip");
	weft_mpw_free(&w);

	/* refused: fields out of range */
	base_payment(&p);
	ok(reread(&p, 5) == 0, "wire: the base payment is valid for 5 members");
	ok(reread(&p, 4) == WEFT_EDECODE, "wire: a ref to member 4 of a 4-member channel refused");
	p.seq = 0;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: seq 0 refused");
	base_payment(&p);
	p.amount = 0;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: amount 0 refused");
	base_payment(&p);
	p.to = p.from;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: to == from refused");
	base_payment(&p);
	p.to = 5;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: to beyond the members refused");
	base_payment(&p);
	p.from = 5;
	ok(reread(&p, 6) == 0 && reread(&p, 5) == WEFT_EDECODE, "wire: from beyond the members refused");
	base_payment(&p);
	p.refs[0].member = 3, p.refs[1].member = 0;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: refs not ascending refused");
	base_payment(&p);
	p.refs[0].member = 3, p.refs[1].member = 3;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: two refs to one member refused");
	base_payment(&p);
	p.refs[1].member = p.from;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: a ref naming the sender refused");
	base_payment(&p);
	p.refs[0].member = p.from;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: a first ref naming the sender refused");
	base_payment(&p);
	p.refs[1].seq = 0;
	ok(reread(&p, 5) == WEFT_EDECODE, "wire: a ref of seq 0 refused");

	/* too many refs */
	memset(&p, 0, sizeof(p));
	p.from = 0, p.to = 1, p.seq = 1, p.amount = 1;
	p.nrefs = 15;
	for (uint32_t i = 0; i < 15; i++)
		p.refs[i].member = i + 1, p.refs[i].seq = 1;
	ok(reread(&p, 16) == 0, "wire: 15 refs in a channel of 16 accepted");
	ok(reread(&p, 15) == WEFT_EDECODE, "wire: as many refs as members refused");
	p.nrefs = 16;
	for (uint32_t i = 0; i < 16; i++)
		p.refs[i].member = i + 1, p.refs[i].seq = 1;
	ok(reread(&p, 64) == 0, "wire: WEFT_CHANNEL_REFS_MAX refs accepted (a reader for 64 members)");
	{
		struct weft_mpw w2;
		weft_mpw_init(&w2);
		weft_mpw_array(&w2, 8);
		weft_mpw_uint(&w2, 0);
		weft_mpw_uint(&w2, 1);
		weft_mpw_bin(&w2, p.prev, 32);
		weft_mpw_array(&w2, 17);
		for (uint32_t i = 0; i < 17; i++) {
			weft_mpw_array(&w2, 3);
			weft_mpw_uint(&w2, i + 1);
			weft_mpw_uint(&w2, 1);
			weft_mpw_bin(&w2, p.prev, 32);
		}
		weft_mpw_uint(&w2, 1);
		weft_mpw_uint(&w2, 1);
		weft_mpw_bin(&w2, p.sig, 64);
		weft_mpw_bin(&w2, p.consent, 64);
		ok(read_enc(&w2, 64, &out, NULL) == WEFT_EDECODE, "wire: 17 refs refused (WEFT_CHANNEL_REFS_MAX)");
		weft_mpw_free(&w2);
	}

	/* malformed encodings */
	base_payment(&p);
	for (int f = 0; f < BF_FORMS; f++) {
		if (f == BF_PREV33) {
			/* prev of 33 bytes: written by hand */
			weft_mpw_init(&w);
			weft_mpw_array(&w, 8);
			weft_mpw_uint(&w, p.from);
			weft_mpw_uint(&w, p.seq);
			uint8_t b33[33];
			fill(b33, 33, 1);
			weft_mpw_bin(&w, b33, 33);
			weft_mpw_array(&w, 0);
			weft_mpw_uint(&w, p.to);
			weft_mpw_uint(&w, p.amount);
			weft_mpw_bin(&w, p.sig, 64);
			weft_mpw_bin(&w, p.consent, 64);
		} else {
			enc_bad(&w, &p, (enum bad_form)f);
		}
		ok(read_enc(&w, 5, &out, NULL) == WEFT_EDECODE, "wire: %s refused", bad_names[f]);
		weft_mpw_free(&w);
	}

	/* every truncation */
	base_payment(&p);
	weft_mpw_init(&w);
	weft_channel_payment_encode(&p, &w);
	int accepted = 0;
	for (size_t len = 0; len < w.len; len++) {
		struct weft_mp_reader r;
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, w.buf, len);
		weft_mp_reader_init(&r, copy, len);
		accepted += weft_channel_payment_read(&r, 5, &out) == 0;
		free(copy);
	}
	is_int(accepted, 0, "wire: none of the %zu truncations of a payment reads", w.len);
	weft_mpw_free(&w);

	/* the hash covers every field but the signatures */
	uint8_t h0[32], h[32], id[32], id2[32], ch2[32];
	fill(id, 32, 0x21);
	memcpy(id2, id, 32);
	id2[31] ^= 1;
	memcpy(ch2, chain_test, 32);
	ch2[0] ^= 0x80;
	base_payment(&p);
	weft_channel_payment_hash(chain_test, id, &p, h0);
	weft_channel_payment_hash(chain_test, id, &p, h);
	ok(memcmp(h, h0, 32) == 0, "hash: deterministic");
	int changed = 0, total = 0;
#define HASH_DIFFERS(what, stmt, chn, idn)                                            \
	do {                                                                           \
		base_payment(&p);                                                      \
		stmt;                                                                  \
		weft_channel_payment_hash(chn, idn, &p, h);                            \
		total++;                                                               \
		if (memcmp(h, h0, 32) != 0)                                            \
			changed++;                                                     \
		else                                                                   \
			diag("hash: %s does not change it", what);                     \
	} while (0)
	HASH_DIFFERS("the chain", (void)0, chain_other, id);
	HASH_DIFFERS("one bit of the chain", (void)0, ch2, id);
	HASH_DIFFERS("the channel id", (void)0, chain_test, id2);
	HASH_DIFFERS("from", p.from = 3, chain_test, id);
	HASH_DIFFERS("seq", p.seq = 8, chain_test, id);
	HASH_DIFFERS("prev's first byte", p.prev[0] ^= 1, chain_test, id);
	HASH_DIFFERS("prev's last byte", p.prev[31] ^= 1, chain_test, id);
	HASH_DIFFERS("the number of refs", p.nrefs = 1, chain_test, id);
	HASH_DIFFERS("no refs", p.nrefs = 0, chain_test, id);
	HASH_DIFFERS("a ref's member", p.refs[1].member = 3, chain_test, id);
	HASH_DIFFERS("a ref's seq", p.refs[0].seq = 4, chain_test, id);
	HASH_DIFFERS("a ref's hash", p.refs[1].hash[17] ^= 4, chain_test, id);
	HASH_DIFFERS("to", p.to = 3, chain_test, id);
	HASH_DIFFERS("amount", p.amount = 12346, chain_test, id);
	HASH_DIFFERS("amount's high bit", p.amount |= 1ull << 63, chain_test, id);
	is_int(changed, total, "hash: changes with the chain, id, from, seq, prev, refs, to and amount (%d cases)",
	       total);
	base_payment(&p);
	p.sig[0] ^= 1;
	p.consent[63] ^= 1;
	weft_channel_payment_hash(chain_test, id, &p, h);
	ok(memcmp(h, h0, 32) == 0, "hash: the signature and consent are not covered");
	/* ref member and seq swapped between fields must not collide */
	base_payment(&p);
	p.nrefs = 1;
	p.refs[0].member = 1, p.refs[0].seq = 2;
	weft_channel_payment_hash(chain_test, id, &p, h0);
	p.refs[0].member = 2, p.refs[0].seq = 1;
	weft_channel_payment_hash(chain_test, id, &p, h);
	ok(memcmp(h, h0, 32) != 0, "hash: a ref's member and seq are told apart");

	/* consent hash */
	uint8_t c0[32], c1[32], c2[32];
	base_payment(&p);
	weft_channel_payment_hash(chain_test, id, &p, h0);
	weft_channel_consent_hash(h0, c0);
	weft_channel_consent_hash(h0, c1);
	ok(memcmp(c0, h0, 32) != 0, "consent hash: differs from the payment hash");
	ok(memcmp(c0, c1, 32) == 0, "consent hash: deterministic");
	h0[5] ^= 1;
	weft_channel_consent_hash(h0, c2);
	ok(memcmp(c0, c2, 32) != 0, "consent hash: changes with the payment hash");
	/* a consent is not a payment signature: the receiver's signature over
	 * the consent hash does not verify as a signature of the payment */
	uint8_t sig[64];
	h0[5] ^= 1;
	ksign(1, c0, sig);
	ok(weft_ledger_schnorr_verify(pk[1], c0, sig) == 0 && weft_ledger_schnorr_verify(pk[1], h0, sig) != 0,
	   "consent hash: a consent does not verify as the receiver's signature of the payment");

	/* frontier */
	uint64_t seq[3] = {1, 0, 5};
	uint8_t head[3][32], f0[32], f[32];
	fill(head[0], 32, 1);
	memset(head[1], 0, 32);
	fill(head[2], 32, 9);
	weft_channel_frontier(3, seq, (const uint8_t(*)[32])head, f0);
	weft_channel_frontier(3, seq, (const uint8_t(*)[32])head, f);
	ok(memcmp(f, f0, 32) == 0, "frontier: deterministic");
	seq[1] = 1;
	weft_channel_frontier(3, seq, (const uint8_t(*)[32])head, f);
	ok(memcmp(f, f0, 32) != 0, "frontier: changes with a seq");
	seq[1] = 0;
	head[2][31] ^= 1;
	weft_channel_frontier(3, seq, (const uint8_t(*)[32])head, f);
	ok(memcmp(f, f0, 32) != 0, "frontier: changes with a head");
	head[2][31] ^= 1;
	weft_channel_frontier(2, seq, (const uint8_t(*)[32])head, f);
	ok(memcmp(f, f0, 32) != 0, "frontier: changes with the number of members");
	{
		uint64_t s2[3] = {5, 0, 1};
		uint8_t h2[3][32];
		memcpy(h2[0], head[2], 32);
		memcpy(h2[1], head[1], 32);
		memcpy(h2[2], head[0], 32);
		weft_channel_frontier(3, s2, (const uint8_t(*)[32])h2, f);
		ok(memcmp(f, f0, 32) != 0, "frontier: the members' order counts");
	}
	{
		/* seq and head are framed: seq 1 with head H differs from seq 0
		 * and a head starting with the bytes of be64(1) */
		uint64_t s1[1] = {1}, s0[1] = {0};
		uint8_t ha[1][32], hb[1][32];
		memset(ha, 0, sizeof(ha));
		memset(hb, 0, sizeof(hb));
		uint8_t fa[32], fb[32];
		weft_channel_frontier(1, s1, (const uint8_t(*)[32])ha, fa);
		weft_channel_frontier(1, s0, (const uint8_t(*)[32])hb, fb);
		ok(memcmp(fa, fb, 32) != 0, "frontier: seq 1 and seq 0 with one head differ");
	}
}

/* ---- the flow: open, pay, root ---- */

static struct tch M; /* keys 0..4: nodes 0, 1, 2, 1, 3 */

static int events_total(const char *event, const char *status)
{
	int n = 0;
	for (uint32_t i = 0; i < NN; i++)
		n += ev_count(i, event, status, NULL);
	return n;
}

/* Verifies every signature of a ROOT_ALL against the members' keys. */
static bool root_all_signed(const struct tch *c, const struct qmsg *m, const uint64_t *bal)
{
	struct cut k;
	uint8_t h[32];
	if (!msg_cut(m->b, m->len, c->n, &k))
		return false;
	root_hash(c, &k, bal, h);
	for (uint32_t i = 0; i < c->n; i++)
		if (weft_ledger_schnorr_verify(pk[c->key[i]], h, k.sig[i]) != 0)
			return false;
	return true;
}

static void test_flow(void)
{
	static const uint32_t keys[5] = {0, 1, 2, 3, 4};
	static const uint64_t dep[5] = {1000, 500, 300, 200, 100};
	tch_init(&M, 5, keys, dep);
	ok(open_channel(&M, 0),
	   "open: 5 members on 4 nodes (two on node 1): the open signed by all submitted by the opener's node; open "
	   "everywhere after the ledger's");
	int opened = 0;
	for (uint32_t i = 0; i < NN; i++)
		opened += ev_count(i, "open", NULL, NULL);
	is_int(opened, 4, "open: one \"open\" event on each of the 4 nodes");
	is_int(info_get(2, M.id, "opener"), 0, "open: member 0 is the opener");
	json_t *j = info(1, M.id);
	json_t *hosted = json_object_get(j, "members");
	ok(json_is_true(json_object_get(json_array_get(hosted, 1), "hosted")) &&
	       json_is_true(json_object_get(json_array_get(hosted, 3), "hosted")) &&
	       json_is_false(json_object_get(json_array_get(hosted, 0), "hosted")),
	   "open: node 1 hosts members 1 and 3");
	json_decref(j);
	ok(agree(&M), "open: every node holds the deposits as balances");
	ok(roots_agree(&M, 0), "open: root 0 (the deposits) everywhere");

	/* every direction, one at a time */
	int fin = 0, pairs = 0, recv_before = events_total("payment", "received");
	for (uint32_t a = 0; a < 5; a++)
		for (uint32_t b = 0; b < 5; b++)
			if (a != b) {
				pairs++;
				fin += pay_ok(&M, a, b, 1 + a * 5 + b);
			}
	is_int(fin, pairs, "pay: %d payments, one per ordered pair of members, each finalized", pairs);
	ok(agree(&M), "pay: every node holds the same chains and balances");
	/* "received": every payment, the 2 between members 1 and 3 (both on
	 * node 1, finalized locally) included */
	is_int(events_total("payment", "received") - recv_before, pairs,
	       "pay: a \"received\" event at the receiver's node for every payment, local ones too");

	/* all at once: every member pays the next one before anything moves */
	int rcs = 0;
	char why[128];
	for (uint32_t a = 0; a < 5; a++) {
		int rc = pay_cmd(&M, a, (a + 1) % 5, 3 + a, why, sizeof(why));
		if (rc != 0)
			diag("member %u: %d %s", a, rc, why);
		rcs |= rc;
	}
	/* member 0 pipelines two more (channel_pipeline 3), a fourth is busy */
	rcs |= pay_cmd(&M, 0, 2, 2, NULL, 0);
	rcs |= pay_cmd(&M, 0, 3, 4, NULL, 0);
	is_int(info_in_flight(0, M.id), 3, "pay: member 0 has 3 payments in flight");
	int busy = pay_cmd(&M, 0, 4, 1, why, sizeof(why));
	ok(busy == WEFT_EAGAIN && strstr(why, "busy"), "pay: a fourth is busy (%s)", why);
	pump();
	for (uint32_t a = 0; a < 5; a++) {
		M.bal[a] -= 3 + a;
		M.bal[(a + 1) % 5] += 3 + a;
		M.seq[a]++;
	}
	M.bal[0] -= 6, M.bal[2] += 2, M.bal[3] += 4, M.seq[0] += 2;
	ok(rcs == 0 && agree(&M),
	   "pay: 5 concurrent payments in a ring and member 0's pipeline all finalized, the same everywhere");

	/* a payer whose incoming counts: member 4 (deposit 100) spends what it received */
	uint64_t b4 = M.bal[4];
	ok(b4 + 97 > M.dep[4] && pay_ok(&M, 4, 1, b4) && agree(&M),
	   "pay: member 4 (deposit 100, 97 sent) spends its whole balance %llu, its incoming counted by refs",
	   (unsigned long long)b4);
	int rc = pay_cmd(&M, 4, 1, 1, why, sizeof(why));
	ok(rc == WEFT_EINVAL && strstr(why, "balance"), "pay: then one more unit is refused at the command (%s)", why);
	ok(pay_ok(&M, 1, 4, 50) && agree(&M), "pay: it is paid again");

	/* commands refused */
	{
		struct weft_mpw a;
		json_t *rep = NULL;
		pay_arg(&a, &M, 1, 0, 1);
		int prc = command(0, "channel.pay", &a, &rep);
		const char *pw = json_string_value(rep);
		ok(prc == WEFT_EINVAL && pw && strstr(pw, "hosted") != NULL, "pay: a payer not hosted here refused (%s)",
		   pw ? pw : "");
		json_decref(rep);
		weft_mpw_free(&a);
		pay_arg(&a, &M, 0, 0, 1);
		is_int(command(0, "channel.pay", &a, NULL), WEFT_EINVAL, "pay: to == from refused");
		weft_mpw_free(&a);
		pay_arg(&a, &M, 0, 1, 0);
		is_int(command(0, "channel.pay", &a, NULL), WEFT_EINVAL, "pay: amount 0 refused");
		weft_mpw_free(&a);
		pay_arg(&a, &M, 0, 9, 1);
		is_int(command(0, "channel.pay", &a, NULL), WEFT_EINVAL, "pay: a member out of range refused");
		weft_mpw_free(&a);
		struct tch none = M;
		none.id[0] ^= 1;
		pay_arg(&a, &none, 0, 1, 1);
		is_int(command(0, "channel.pay", &a, NULL), WEFT_NOTFOUND, "pay: an unknown channel refused");
		weft_mpw_free(&a);
		/* a member named by account */
		weft_mpw_init(&a);
		weft_mpw_array(&a, 4);
		weft_mpw_bin(&a, M.id, 32);
		weft_mpw_bin(&a, pk[3], 32);
		weft_mpw_bin(&a, pk[2], 32);
		weft_mpw_uint(&a, 2);
		int fb = ev_count(1, "payment", "finalized", NULL);
		int crc = command(1, "channel.pay", &a, NULL);
		pump();
		weft_mpw_free(&a);
		if (crc == 0 && ev_count(1, "payment", "finalized", NULL) == fb + 1)
			M.bal[3] -= 2, M.bal[2] += 2, M.seq[3]++;
		ok(crc == 0 && agree(&M), "pay: members named by account pay");
	}
}

static void test_root(void)
{
	ok(!ask_root(&M, 1), "root: channel.root at a node that does not host the opener builds nothing");
	rule_add(MSG_ROOT_ALL, 0, 3, HOLD, 1);
	int roots = events_total("root", NULL);
	ok(ask_root(&M, 0), "root: channel.root at the opener's node starts a root");
	pump();
	struct qmsg *ra = held_find(MSG_ROOT_ALL, 3);
	ok(ra && root_all_signed(&M, ra, M.bal),
	   "root: the ROOT_ALL carries every member's signature of version 1 with the expected balances");
	is_int(info_root_version(3, M.id), 0, "root: node 3 signed but keeps root 0 until the ROOT_ALL comes");
	release_held();
	rules_clear();
	ok(roots_agree(&M, 1), "root: version 1 on every node, close_now the expected balances adding up to the deposits");
	is_int(events_total("root", NULL) - roots, 4, "root: a \"root\" event on each node");
	is_int(info_get(2, M.id, "unrooted"), 0, "root: nothing unrooted");
	ok(!ask_root(&M, 0), "root: nothing new to root: no root started");
	ok(pay_ok(&M, 2, 3, 5) && pay_ok(&M, 3, 4, 5) && pay_ok(&M, 1, 3, 1), "root: three more payments");
	ok(ask_root(&M, 0), "root: a second root started");
	pump();
	ok(roots_agree(&M, 2) && agree(&M), "root: version 2 everywhere with the new balances");
}

/* ---- refusals ---- */

static struct tch X, Y; /* keys 0 and 1 (nodes 0 and 1), two channels */

static void msg_consent(struct weft_mpw *w, const uint8_t id[32], uint32_t from, uint64_t seq, const uint8_t h[32],
			const uint8_t consent[64])
{
	mhead(w, MSG_CONSENT, id, 4);
	weft_mpw_uint(w, from);
	weft_mpw_uint(w, seq);
	weft_mpw_bin(w, h, 32);
	weft_mpw_bin(w, consent, 64);
}

static int inject_w(uint32_t to, uint32_t from, struct weft_mpw *w)
{
	int rc = inject(to, from, w->buf, w->len);
	weft_mpw_free(w);
	return rc;
}

static void test_consents(void)
{
	static const uint32_t keys[2] = {0, 1};
	static const uint64_t dx[2] = {100, 100}, dy[2] = {100, 101};
	struct weft_mpw w;
	uint8_t h[32], m[32], consent_y[64], bad[64];
	tch_init(&X, 2, keys, dx);
	tch_init(&Y, 2, keys, dy);
	ok(open_channel(&X, 0) && open_channel(&Y, 0), "consent: two channels of the same two members open");

	/* Y's genuine consent for (0 -> 1, 5, seq 1) */
	rule_add(MSG_CONSENT, 1, 0, HOLD, 1);
	pay_cmd(&Y, 0, 1, 5, NULL, 0);
	pump();
	struct qmsg *cm = held_find(MSG_CONSENT, 0);
	ok(cm != NULL, "consent: Y's consent captured");
	if (cm)
		memcpy(consent_y, cm->b + cm->len - 64, 64);
	release_held();
	Y.bal[0] -= 5, Y.bal[1] += 5, Y.seq[0]++;
	ok(agree(&Y), "consent: Y's payment finalized");

	/* X: the same payment, its proposal held away from the receiver */
	rule_add(MSG_PROPOSE, 0, 1, HOLD, 1);
	int fin = ev_count(0, "payment", "finalized", NULL);
	pay_cmd(&X, 0, 1, 5, NULL, 0);
	pump();
	struct qmsg *pm = held_find(MSG_PROPOSE, 1);
	struct weft_channel_payment p;
	memset(&p, 0, sizeof(p));
	ok(pm && msg_payment(pm->b, pm->len, 2, &p), "consent: X's proposal held");
	weft_channel_payment_hash(chain_test, X.id, &p, h);
	char *before = snap(0, X.id);

	msg_consent(&w, X.id, 0, 1, h, consent_y);
	is_int(inject_w(0, 1, &w), WEFT_ECRYPTO, "consent: a consent replayed from another channel refused");

	{
		uint8_t ho[32];
		weft_channel_payment_hash(chain_other, X.id, &p, ho);
		weft_channel_consent_hash(ho, m);
		ksign(1, m, bad);
		msg_consent(&w, X.id, 0, 1, h, bad);
		is_int(inject_w(0, 1, &w), WEFT_ECRYPTO,
		       "consent: the receiver's consent of the same payment under chain id \"other\" refused");
	}
	weft_channel_consent_hash(h, m);
	ksign(0, m, bad);
	msg_consent(&w, X.id, 0, 1, h, bad);
	is_int(inject_w(0, 1, &w), WEFT_ECRYPTO, "consent: a consent signed by the payer refused");
	ksign(2, m, bad);
	msg_consent(&w, X.id, 0, 1, h, bad);
	is_int(inject_w(0, 1, &w), WEFT_ECRYPTO, "consent: a consent signed by a key not in the channel refused");
	ksign(1, h, bad);
	msg_consent(&w, X.id, 0, 1, h, bad);
	is_int(inject_w(0, 1, &w), WEFT_ECRYPTO,
	       "consent: the receiver's signature of the payment hash (not the consent hash) refused");
	ksign(1, m, bad);
	msg_consent(&w, X.id, 0, 1, h, bad);
	is_int(inject_w(0, 2, &w), WEFT_EPROTO, "consent: the right consent from a node not the receiver's refused");
	msg_consent(&w, X.id, 0, 2, h, bad);
	is_int(inject_w(0, 1, &w), 0, "consent: a consent for a seq not in flight ignored");
	{
		uint8_t h2[32];
		memcpy(h2, h, 32);
		h2[0] ^= 1;
		msg_consent(&w, X.id, 0, 1, h2, bad);
		is_int(inject_w(0, 1, &w), 0, "consent: a consent for another hash ignored");
	}
	msg_consent(&w, X.id, 1, 1, h, bad);
	is_int(inject_w(0, 1, &w), 0, "consent: a consent for a payer with nothing in flight ignored");
	pump();
	ok(same_snap(before, 0, X.id) && info_in_flight(0, X.id) == 1 &&
	       ev_count(0, "payment", "finalized", NULL) == fin,
	   "consent: nothing finalized, the proposal still in flight");
	free(before);
	release_held();
	rules_clear();
	X.bal[0] -= 5, X.bal[1] += 5, X.seq[0]++;
	ok(ev_count(0, "payment", "finalized", NULL) == fin + 1 && agree(&X),
	   "consent: the held proposal then goes through");

	/* another seq: seq 1's consent offered for seq 2 */
	uint8_t consent1[64];
	weft_channel_consent_hash(h, m);
	ksign(1, m, consent1);
	rule_add(MSG_PROPOSE, 0, 1, HOLD, 1);
	pay_cmd(&X, 0, 1, 5, NULL, 0);
	pump();
	pm = held_find(MSG_PROPOSE, 1);
	struct weft_channel_payment p2;
	memset(&p2, 0, sizeof(p2));
	ok(pm && msg_payment(pm->b, pm->len, 2, &p2) && p2.seq == 2, "consent: X's second proposal held (seq 2)");
	uint8_t h2[32];
	weft_channel_payment_hash(chain_test, X.id, &p2, h2);
	before = snap(0, X.id);
	msg_consent(&w, X.id, 0, 2, h2, consent1);
	is_int(inject_w(0, 1, &w), WEFT_ECRYPTO, "consent: seq 1's consent for seq 2 refused");
	msg_consent(&w, X.id, 0, 1, h, consent1);
	is_int(inject_w(0, 1, &w), 0, "consent: seq 1's consent replayed as it was ignored");
	pump();
	ok(same_snap(before, 0, X.id) && info_in_flight(0, X.id) == 1, "consent: nothing changed");
	free(before);
	release_held();
	rules_clear();
	X.bal[0] -= 5, X.bal[1] += 5, X.seq[0]++;
	ok(agree(&X), "consent: seq 2 then finalized");
}

/* The reason of the last held REFUSE to node `to`. */
static bool held_refuse(int to, char *why, size_t len)
{
	for (size_t i = nheld; i-- > 0;) {
		if (held[i].type != MSG_REFUSE || (to >= 0 && held[i].to != (uint32_t)to))
			continue;
		struct weft_mp_reader r;
		uint32_t count, slen;
		uint64_t v;
		uint8_t b[32];
		const char *s;
		weft_mp_reader_init(&r, held[i].b, held[i].len);
		if (weft_mp_read_array(&r, &count) != 0 || weft_mp_read_uint(&r, &v) != 0 || weft_mp_read_uint(&r, &v) != 0 ||
		    weft_mp_read_bin_fixed(&r, b, 32) != 0 || weft_mp_read_uint(&r, &v) != 0 ||
		    weft_mp_read_uint(&r, &v) != 0 || weft_mp_read_bin_fixed(&r, b, 32) != 0 ||
		    weft_mp_read_str(&r, &s, &slen) != 0)
			return false;
		snprintf(why, len, "%.*s", (int)slen, s);
		return true;
	}
	return false;
}

/* A proposal built here for M's member `from`, injected at the receiver's
 * node from the payer's: the REFUSE's reason (or "" when none). */
static void propose_refused(const struct weft_channel_payment *p, char *why, size_t len)
{
	struct weft_mpw w;
	drop_held();
	rule_add(MSG_REFUSE, -1, -1, HOLD, 1);
	msg_with_payment(&w, MSG_PROPOSE, M.id, p);
	inject_w(M.host[p->to], M.host[p->from], &w);
	pump();
	if (!held_refuse(-1, why, len))
		snprintf(why, len, "(none)");
	drop_held();
	rules_clear();
}

/* Member m's last payment in M, from node `at`'s FINAL as it is about to
 * go out (a payment by m is made and its FINAL to `at` copied). */
static bool last_final(uint32_t m, uint32_t to, uint64_t amount, struct weft_channel_payment *p)
{
	rule_add(MSG_FINAL, (int)M.host[m], M.host[m] == 0 ? 1 : 0, HOLD, 1);
	bool good = pay_ok(&M, m, to, amount);
	struct qmsg *f = NULL;
	for (size_t i = 0; i < nheld; i++)
		if (held[i].type == MSG_FINAL)
			f = &held[i];
	good = good && f && msg_payment(f->b, f->len, M.n, p);
	release_held();
	rules_clear();
	return good && agree(&M);
}

static void test_proposals(void)
{
	char why[80];
	struct weft_channel_payment last, p;
	memset(&last, 0, sizeof(last));

	/* the overspend strategy at node 3 (member 4) */
	const struct weft_proto_strategy *st = weft_proto_strategy_find(&weft_channel_service, "overspend");
	ok(st && node_restart(3, st->ops) == 0, "overspend: node 3 restarted with the overspend strategy");
	char *before = snap(0, M.id);
	uint64_t b4 = M.bal[4];
	rule_add(MSG_REFUSE, 0, 3, HOLD, 1);
	int rc = pay_cmd(&M, 4, 0, b4 + 1, NULL, 0);
	pump();
	ok(rc == 0 && held_refuse(3, why, sizeof(why)) && strcmp(why, "overspend") == 0,
	   "overspend: the receiver's node answers REFUSE \"%s\"", why);
	release_held();
	rules_clear();
	is_int(ev_count(3, "payment", "refused", "overspend"), 1,
	       "overspend: the payer's node reports the payment refused (overspend)");
	ok(same_snap(before, 0, M.id) && agree(&M), "overspend: nothing changed anywhere");
	free(before);
	ok(pay_ok(&M, 4, 0, b4 > 3 ? 3 : 1) && agree(&M), "overspend: member 4 pays what it has");
	ok(node_restart(3, &weft_channel_service) == 0, "overspend: node 3 honest again");

	/* proposals a member's node checks before it consents */
	ok(last_final(2, 0, 4, &last), "propose: member 2's last payment (to member 0) taken from its FINAL");
	/* member 4 pays on: its chain goes beyond what member 2 counted */
	ok(pay_ok(&M, 4, 0, 1), "propose: member 4 pays member 0");
	before = snap(0, M.id);
	p = last;
	memset(p.sig, 0, 64), memset(p.consent, 0, 64);
	p.to = 0, p.amount = 3;
	propose_refused(&p, why, sizeof(why));
	is_str(why, "stale_seq", "propose: another payment of a seq already applied refused");
	p = last;
	memset(p.sig, 0, 64), memset(p.consent, 0, 64);
	p.seq++, p.prev[0] ^= 1, p.amount = 1;
	propose_refused(&p, why, sizeof(why));
	is_str(why, "conflict", "propose: a prev that is not the chain's head refused");
	weft_channel_payment_hash(chain_test, M.id, &last, p.prev);
	p.nrefs = 1;
	p.refs[0].member = 4, p.refs[0].seq = M.seq[4] + 1;
	memset(p.refs[0].hash, 7, 32);
	/* member 4's chain beyond what node 0 holds: fetched */
	unsigned fetches = sent_total(0, 2, MSG_FETCH);
	propose_refused(&p, why, sizeof(why));
	ok(sent_total(0, 2, MSG_FETCH) == fetches + 1 && strcmp(why, "(none)") == 0,
	   "propose: a ref beyond the chain held: fetched from the payer's node, no answer yet");
	p.refs[0].seq = M.seq[4];
	propose_refused(&p, why, sizeof(why));
	is_str(why, "conflict", "propose: a ref whose hash is not the payment's refused");
	advance(cur.timeout_ms + 20); /* the stashed proposals expire */
	p.nrefs = 0;
	p.amount = M.bal[2] + 1;
	propose_refused(&p, why, sizeof(why));
	is_str(why, "overspend", "propose: an amount above the balance refused");
	ok(same_snap(before, 0, M.id), "propose: nothing changed at the receiver's node");
	free(before);
	{
		struct weft_mpw w;
		p.amount = 1;
		msg_with_payment(&w, MSG_PROPOSE, M.id, &p);
		is_int(inject_w(0, 1, &w), WEFT_EPROTO, "propose: a proposal from a node not hosting the payer rejected");
		p.to = 1;
		msg_with_payment(&w, MSG_PROPOSE, M.id, &p);
		is_int(inject_w(0, 2, &w), WEFT_EPROTO, "propose: a proposal to a member not hosted here rejected");
	}
	ok(agree(&M) && pay_ok(&M, 2, 0, 1) && agree(&M), "propose: member 2 then pays member 0");
}

static void test_fetch(void)
{
	/* a proposal whose parent is missing: node 3 lost member 0's FINAL */
	unsigned fetch = sent_total(3, 0, MSG_FETCH), pays = sent_total(0, 3, MSG_PAYS);
	rule_add(MSG_FINAL, 0, 3, DROP, 1);
	ok(pay_ok(&M, 0, 2, 7), "fetch: member 0 pays member 2; node 3 misses the FINAL");
	is_int(info_member(3, M.id, 0, "payments"), (long long)M.seq[0] - 1, "fetch: node 3 is one payment behind");
	rules_clear();
	ok(pay_ok(&M, 0, 4, 6), "fetch: member 0 pays member 4 (node 3): the proposal's parent is missing there");
	ok(sent_total(3, 0, MSG_FETCH) > fetch && sent_total(0, 3, MSG_PAYS) > pays,
	   "fetch: node 3 sent a FETCH, node 0 answered with PAYS");
	ok(agree(&M), "fetch: the missing payment then the proposal applied: the same everywhere");

	/* a FINAL whose parents are missing: node 2 lost two of member 1's */
	fetch = sent_total(2, 1, MSG_FETCH), pays = sent_total(1, 2, MSG_PAYS);
	rule_add(MSG_FINAL, 1, 2, DROP, 2);
	ok(pay_ok(&M, 1, 0, 2) && pay_ok(&M, 1, 4, 3), "fetch: member 1 pays twice; node 2 misses both FINALs");
	is_int(info_member(2, M.id, 1, "payments"), (long long)M.seq[1] - 2, "fetch: node 2 is two payments behind");
	rules_clear();
	ok(pay_ok(&M, 1, 3, 4), "fetch: member 1 pays member 3 (on its own node): the FINAL reaches node 2");
	ok(sent_total(2, 1, MSG_FETCH) > fetch && sent_total(1, 2, MSG_PAYS) > pays,
	   "fetch: node 2 sent a FETCH, node 1 answered with PAYS");
	ok(agree(&M), "fetch: the two missing payments and the FINAL applied: the same everywhere");

	/* a FETCH from a node with no member in the channel */
	struct weft_mpw w;
	unsigned before = sent_total(0, 2, MSG_PAYS);
	mhead(&w, MSG_FETCH, X.id, 3);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 2);
	is_int(inject_w(0, 2, &w), WEFT_EPROTO, "fetch: a FETCH from a node hosting no member rejected");
	mhead(&w, MSG_FETCH, X.id, 3);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 2);
	is_int(inject_w(0, 1, &w), WEFT_EDECODE, "fetch: a FETCH from seq 0 rejected");
	mhead(&w, MSG_FETCH, X.id, 3);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 1 + WEFT_CHANNEL_FETCH_MAX);
	is_int(inject_w(0, 1, &w), WEFT_EDECODE, "fetch: a FETCH of more than WEFT_CHANNEL_FETCH_MAX rejected");
	mhead(&w, MSG_FETCH, X.id, 3);
	weft_mpw_uint(&w, 2);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 1);
	is_int(inject_w(0, 1, &w), WEFT_EDECODE, "fetch: a FETCH of a member out of range rejected");
	pump();
	is_int(sent_total(0, 2, MSG_PAYS), before, "fetch: no PAYS sent for them");
}

static void test_finals(void)
{
	struct weft_mpw w;
	struct weft_channel_payment p, q2;
	memset(&p, 0, sizeof(p));
	/* member 2 pays member 0; the FINAL to node 3 held */
	rule_add(MSG_FINAL, 2, 3, HOLD, 1);
	ok(pay_ok(&M, 2, 0, 3), "final: member 2 pays member 0, its FINAL to node 3 held");
	struct qmsg *f = held_find(MSG_FINAL, 3);
	ok(f && msg_payment(f->b, f->len, M.n, &p), "final: the FINAL read");
	char *before = snap(3, M.id);
	q2 = p;
	q2.sig[10] ^= 1;
	msg_with_payment(&w, MSG_FINAL, M.id, &q2);
	is_int(inject_w(3, 2, &w), WEFT_ECRYPTO, "final: a FINAL with a bad sender signature rejected");
	q2 = p;
	q2.consent[3] ^= 0x40;
	msg_with_payment(&w, MSG_FINAL, M.id, &q2);
	is_int(inject_w(3, 2, &w), WEFT_ECRYPTO, "final: a FINAL with a bad consent rejected");
	q2 = p;
	{
		uint8_t h[32], m[32];
		weft_channel_payment_hash(chain_test, M.id, &q2, h);
		weft_channel_consent_hash(h, m);
		ksign((int)M.key[1], m, q2.consent);
	}
	msg_with_payment(&w, MSG_FINAL, M.id, &q2);
	is_int(inject_w(3, 2, &w), WEFT_ECRYPTO, "final: a FINAL consented by a member not its receiver rejected");
	q2 = p;
	q2.amount++;
	msg_with_payment(&w, MSG_FINAL, M.id, &q2);
	is_int(inject_w(3, 2, &w), WEFT_ECRYPTO, "final: a FINAL whose amount changed after signing rejected");
	q2 = p;
	memset(q2.consent, 0, 64);
	msg_with_payment(&w, MSG_FINAL, M.id, &q2);
	is_int(inject_w(3, 2, &w), WEFT_ECRYPTO, "final: a FINAL without consent (a proposal) rejected");
	q2 = p;
	sign_payment(&M, chain_other, M.id, &q2);
	msg_with_payment(&w, MSG_FINAL, M.id, &q2);
	is_int(inject_w(3, 2, &w), WEFT_ECRYPTO, "final: a FINAL signed for chain id \"other\" rejected");
	pump();
	ok(same_snap(before, 3, M.id), "final: nothing changed at node 3");
	free(before);
	release_held();
	rules_clear();
	ok(agree(&M), "final: the genuine FINAL then applied at node 3");
	msg_with_payment(&w, MSG_FINAL, M.id, &p);
	before = snap(3, M.id);
	is_int(inject_w(3, 1, &w), 0, "final: the FINAL again (from any node) is a no-op");
	ok(same_snap(before, 3, M.id), "final: nothing changed");
	free(before);
}

static struct tch Z; /* keys 5, 6, 7: nodes 0, 2, 3 */

static void test_equivocation(void)
{
	static const uint32_t keys[3] = {5, 6, 7};
	static const uint64_t dep[3] = {50, 60, 70};
	struct weft_mpw w;
	tch_init(&Z, 3, keys, dep);
	ok(open_channel(&Z, 0), "evidence: a channel of 3 members on nodes 0, 2 and 3 opens");
	rule_add(MSG_FINAL, 2, 0, HOLD, 1);
	int fin = ev_count(2, "payment", "finalized", NULL);
	pay_cmd(&Z, 1, 0, 10, NULL, 0);
	pump();
	struct qmsg *f = held_find(MSG_FINAL, 0);
	struct weft_channel_payment p, q2;
	memset(&p, 0, sizeof(p));
	ok(f && msg_payment(f->b, f->len, 3, &p) && ev_count(2, "payment", "finalized", NULL) == fin + 1,
	   "evidence: member 1 pays member 0 10");
	release_held();
	rules_clear();
	Z.bal[1] -= 10, Z.bal[0] += 10, Z.seq[1]++;
	ok(agree(&Z), "evidence: applied everywhere");
	/* member 1 signs another payment of the same seq: to member 2, 3 */
	q2 = p;
	q2.to = 2, q2.amount = 3;
	sign_payment(&Z, chain_test, Z.id, &q2);
	int ev0 = ev_count(0, "evidence", NULL, NULL);
	msg_with_payment(&w, MSG_FINAL, Z.id, &q2);
	is_int(inject_w(0, 2, &w), 0, "evidence: a second FINAL of (member 1, seq 1) taken as evidence");
	is_int(info_get(0, Z.id, "evidence"), 1, "evidence: channel.info counts 1 evidence");
	is_int(ev_count(0, "evidence", NULL, NULL), ev0 + 1, "evidence: an \"evidence\" event");
	json_t *j = info(0, Z.id);
	ok(json_is_true(json_object_get(json_array_get(json_object_get(j, "members"), 1), "equivocated")),
	   "evidence: member 1 marked equivocated");
	json_decref(j);
	ok(agree(&Z), "evidence: the second payment not applied: balances unchanged");
	msg_with_payment(&w, MSG_FINAL, Z.id, &q2);
	inject_w(0, 3, &w);
	is_int(info_get(0, Z.id, "evidence"), 1, "evidence: the same evidence again counts once");
	ok(node_restart(0, NULL) == 0 && info_get(0, Z.id, "evidence") == 1, "evidence: kept across a restart");
	/* the equivocator's next proposal to node 0 is refused */
	rule_add(MSG_REFUSE, 0, 2, HOLD, 1);
	pay_cmd(&Z, 1, 0, 1, NULL, 0);
	pump();
	char why[64];
	ok(held_refuse(2, why, sizeof(why)) && strcmp(why, "equivocator") == 0,
	   "evidence: the equivocator's next proposal refused (%s)", why);
	release_held();
	rules_clear();
	is_int(ev_count(2, "payment", "refused", "equivocator"), 1, "evidence: its node reports it refused");

	/* the other order: node 2 gets the equivocating FINAL first */
	rule_add(MSG_FINAL, 3, 2, HOLD, 1);
	pay_cmd(&Z, 2, 0, 5, NULL, 0);
	pump();
	f = held_find(MSG_FINAL, 2);
	ok(f && msg_payment(f->b, f->len, 3, &p), "evidence: member 2 pays member 0 5, its FINAL to node 2 held");
	q2 = p;
	q2.to = 1, q2.amount = 4;
	sign_payment(&Z, chain_test, Z.id, &q2);
	msg_with_payment(&w, MSG_FINAL, Z.id, &q2);
	is_int(inject_w(2, 3, &w), 0, "evidence: node 2 applies the other payment of that seq first");
	release_held();
	rules_clear();
	is_int(info_get(2, Z.id, "evidence"), 1, "evidence: the genuine FINAL then is evidence at node 2");
	is_int(info_member(2, Z.id, 1, "balance"), (long long)Z.bal[1] + 4,
	       "evidence: node 2 keeps the payment it applied first, not the second");
	is_int(info_member(0, Z.id, 0, "balance"), (long long)Z.bal[0] + 5, "evidence: node 0 holds the genuine one");

	/* the equivocator pipelines: its proposal to node 0 carries the one
	 * ahead of it (to member 2, on node 3, which holds no evidence) */
	unsigned cons = sent_total(0, 2, MSG_CONSENT), refusals = sent_total(0, 2, MSG_REFUSE);
	int rc1 = pay_cmd(&Z, 1, 2, 1, NULL, 0), rc2 = pay_cmd(&Z, 1, 0, 1, NULL, 0);
	pump();
	ok(rc1 == 0 && rc2 == 0, "evidence: member 1 pipelines a payment to member 2, then one to member 0");
	ok(sent_total(0, 2, MSG_CONSENT) == cons && sent_total(0, 2, MSG_REFUSE) > refusals,
	   "evidence: node 0 refuses the equivocator's proposal that carries a payment ahead of it");
}

/* The reason of the last held ROOT_NACK. */
static bool held_root_nack(char *why, size_t len)
{
	for (size_t i = nheld; i-- > 0;) {
		if (held[i].type != MSG_ROOT_NACK)
			continue;
		struct weft_mp_reader r;
		uint32_t count, slen;
		uint64_t v;
		uint8_t b[32];
		const char *s;
		weft_mp_reader_init(&r, held[i].b, held[i].len);
		if (weft_mp_read_array(&r, &count) != 0 || weft_mp_read_uint(&r, &v) != 0 || weft_mp_read_uint(&r, &v) != 0 ||
		    weft_mp_read_bin_fixed(&r, b, 32) != 0 || weft_mp_read_uint(&r, &v) != 0 ||
		    weft_mp_read_str(&r, &s, &slen) != 0)
			return false;
		snprintf(why, len, "%.*s", (int)slen, s);
		return true;
	}
	return false;
}

static void test_root_refusals(void)
{
	struct weft_mpw w;
	struct cut k, t;
	char why[64];
	memset(&k, 0, sizeof(k));
	long long v0 = info_root_version(0, M.id);

	/* ROOT_ALL: node 3's held, then forged copies */
	ok(pay_ok(&M, 0, 1, 2), "root_all: a payment to root");
	rule_add(MSG_ROOT_ALL, 0, 3, HOLD, 1);
	ok(ask_root(&M, 0), "root_all: a root started");
	pump();
	struct qmsg *ra = held_find(MSG_ROOT_ALL, 3);
	ok(ra && msg_cut(ra->b, ra->len, M.n, &k) && k.version == (uint64_t)v0 + 1 && root_all_signed(&M, ra, M.bal),
	   "root_all: version %lld all-signed, its ROOT_ALL to node 3 held", v0 + 1);
	uint64_t bal_k[MAXN];
	memcpy(bal_k, M.bal, sizeof(bal_k));
	char *before = snap(3, M.id);
	t = k;
	memset(t.sig[2], 0, 64);
	msg_root(&w, MSG_ROOT_ALL, M.id, M.n, &t, (int)M.n);
	is_int(inject_w(3, 0, &w), WEFT_ECRYPTO, "root_all: one signature missing (zeros) rejected");
	t = k;
	t.sig[4][33] ^= 1;
	msg_root(&w, MSG_ROOT_ALL, M.id, M.n, &t, (int)M.n);
	is_int(inject_w(3, 0, &w), WEFT_ECRYPTO, "root_all: one signature wrong rejected");
	t = k;
	memcpy(t.sig[1], k.sig[3], 64);
	memcpy(t.sig[3], k.sig[1], 64);
	msg_root(&w, MSG_ROOT_ALL, M.id, M.n, &t, (int)M.n);
	is_int(inject_w(3, 0, &w), WEFT_ECRYPTO, "root_all: two members' signatures swapped rejected");
	msg_root(&w, MSG_ROOT_ALL, M.id, M.n, &k, (int)M.n - 1);
	is_int(inject_w(3, 0, &w), WEFT_EDECODE, "root_all: one signature short rejected");
	t = k;
	t.version++;
	msg_root(&w, MSG_ROOT_ALL, M.id, M.n, &t, (int)M.n);
	is_int(inject_w(3, 0, &w), WEFT_ECRYPTO, "root_all: the signatures under another version rejected");
	t = k;
	t.seq[1]--;
	msg_root(&w, MSG_ROOT_ALL, M.id, M.n, &t, (int)M.n);
	inject_w(3, 0, &w);
	t = k;
	t.head[2][0] ^= 1;
	msg_root(&w, MSG_ROOT_ALL, M.id, M.n, &t, (int)M.n);
	inject_w(3, 0, &w);
	pump();
	ok(info_root_version(3, M.id) == v0 && same_snap(before, 3, M.id),
	   "root_all: none adopted (also a cut one payment short and a wrong head): node 3 unchanged");
	free(before);
	release_held();
	rules_clear();
	ok(roots_agree(&M, v0 + 1), "root_all: the genuine ROOT_ALL adopted");

	/* ROOT_ASK of a version signed with other content */
	ok(pay_ok(&M, 1, 2, 1), "root_ask: another payment");
	rule_add(MSG_ROOT_SIGS, 2, 0, HOLD, 1);
	ok(ask_root(&M, 0), "root_ask: version %lld asked; node 2's signatures held from the opener", v0 + 2);
	pump();
	is_int(info_root_version(1, M.id), v0 + 1, "root_ask: not all-signed yet");
	struct qmsg *rs = held_find(MSG_ROOT_SIGS, 0);
	ok(rs != NULL, "root_ask: node 2's ROOT_SIGS held");
	/* the same version, the previous root's cut and balances, signed by the opener's key */
	t = k;
	t.version = (uint64_t)v0 + 2;
	uint8_t h[32];
	root_hash(&M, &t, bal_k, h);
	ksign((int)M.key[0], h, t.sig[0]);
	before = snap(1, M.id);
	unsigned sigs = sent_total(1, -1, MSG_ROOT_SIGS);
	rule_add(MSG_ROOT_NACK, 1, 0, HOLD, 1);
	int evid = ev_count(1, "evidence", NULL, NULL);
	msg_root(&w, MSG_ROOT_ASK, M.id, M.n, &t, -1);
	is_int(inject_w(1, 0, &w), 0, "root_ask: another root of a version node 1 signed: answered");
	pump();
	ok(held_root_nack(why, sizeof(why)) && strcmp(why, "signed_another") == 0,
	   "root_ask: ROOT_NACK \"%s\", no signature", why);
	is_int(ev_count(1, "evidence", NULL, NULL), evid + 1,
	       "root_ask: the opener's two roots of one version are evidence at node 1");
	/* from a node not the opener's */
	msg_root(&w, MSG_ROOT_ASK, M.id, M.n, &t, -1);
	is_int(inject_w(1, 2, &w), WEFT_EPROTO, "root_ask: a ROOT_ASK from a node not the opener's rejected");
	if (sample[MSG_ROOT_ASK].b)
		is_int(inject(1, 3, sample[MSG_ROOT_ASK].b, sample[MSG_ROOT_ASK].len), WEFT_EPROTO,
		       "root_ask: a genuine ROOT_ASK relayed by another node rejected");
	/* a bad proposer signature; a version ahead */
	t.sig[0][5] ^= 1;
	msg_root(&w, MSG_ROOT_ASK, M.id, M.n, &t, -1);
	is_int(inject_w(3, 0, &w), WEFT_ECRYPTO, "root_ask: a bad proposer signature rejected");
	t = k;
	t.version = (uint64_t)v0 + 3;
	root_hash(&M, &t, bal_k, h);
	ksign((int)M.key[0], h, t.sig[0]);
	msg_root(&w, MSG_ROOT_ASK, M.id, M.n, &t, -1);
	rule_add(MSG_ROOT_NACK, 1, 0, HOLD, 1);
	is_int(inject_w(1, 0, &w), 0, "root_ask: a version beyond the next one answered");
	pump();
	ok(held_root_nack(why, sizeof(why)) && strcmp(why, "behind") == 0, "root_ask: ROOT_NACK \"%s\"", why);
	/* ROOT_SIGS relayed by another node */
	is_int(inject(0, 1, rs->b, rs->len), WEFT_ECRYPTO, "root_sigs: node 2's signatures sent by node 1 rejected");
	pump();
	is_int(sent_total(1, -1, MSG_ROOT_SIGS), sigs, "root_ask: node 1 signed nothing more");
	ok(info_root_version(1, M.id) == v0 + 1, "root_ask: node 1 still at version %lld", v0 + 1);
	free(before);
	/* node 1's NACKs go to the opener, then node 2's signatures */
	release_held();
	rules_clear();
	ok(roots_agree(&M, v0 + 2) && agree(&M), "root_ask: the genuine root then all-signed everywhere");
}

static void test_timeout(void)
{
	char why[128];
	(void)why;
	rule_add(MSG_PROPOSE, 0, 2, DROP, -1);
	int to = ev_count(0, "payment", "timeout", NULL);
	int rc = pay_cmd(&M, 0, 2, 8, NULL, 0);
	pump();
	ok(rc == 0 && info_in_flight(0, M.id) == 1, "timeout: member 0 proposes to member 2, whose node never hears it");
	rc = pay_cmd(&M, 0, 1, 8, why, sizeof(why));
	ok(rc == 0 && info_in_flight(0, M.id) == 2, "timeout: and pipelines one to member 1 behind it");
	pump();
	is_int(info_in_flight(0, M.id), 2, "timeout: the second, consented, waits for the first");
	advance(cur.timeout_ms / 2);
	is_int(ev_count(0, "payment", "timeout", NULL), to, "timeout: no timeout at half the timeout");
	advance(cur.timeout_ms / 2 + 3 * cur.tick_ms);
	is_int(ev_count(0, "payment", "timeout", NULL), to + 1, "timeout: a \"timeout\" payment event after it");
	is_int(ev_count(0, "payment", "refused", "an earlier payment of this member did not go through"), 1,
	       "timeout: the one behind it refused with it");
	is_int(info_in_flight(0, M.id), 0, "timeout: nothing in flight");
	is_int(info_get(1, M.id, "consents_outstanding"), 1, "timeout: node 1's consent to the second is outstanding");
	char cw[128];
	is_int(close_cmd(&M, 1, false, cw, sizeof(cw)), WEFT_EAGAIN, "timeout: node 1 refuses to close meanwhile (%s)",
	       cw);
	advance(3 * cur.timeout_ms + 3 * cur.tick_ms);
	is_int(info_get(1, M.id, "consents_outstanding"), 0, "timeout: forgotten after 3 timeouts");
	rules_clear();
	ok(agree(&M), "timeout: nothing applied anywhere");
	ok(pay_ok(&M, 0, 2, 8) && agree(&M), "timeout: the payer pays again (the same seq), finalized everywhere");
}

static struct tch W; /* keys 5, 3, 6 (nodes 0, 1, 2) */

static void test_close(void)
{
	char why[128];
	/* refused by a node holding unrooted payments */
	static const uint32_t keys[3] = {5, 3, 6};
	static const uint64_t dep[3] = {40, 30, 20};
	tch_init(&W, 3, keys, dep);
	ok(open_channel(&W, 0), "close: a 3-member channel W opens");
	rule_add(MSG_FINAL, 1, 0, HOLD, 1);
	ok(pay_ok(&W, 1, 2, 5), "close: member 1 pays member 2, the FINAL to node 0 held");
	int refused = ev_count(0, "close_refused", NULL, NULL);
	size_t ntx = nodes[0].ntx;
	is_int(close_cmd(&W, 0, false, why, sizeof(why)), 0, "close: node 0 (nothing unrooted there) asks to close");
	pump();
	is_int(ev_count(0, "close_refused", NULL, NULL), refused + 2,
	       "close: nodes 1 and 2 hold an unrooted payment: CLOSE_NACKs, \"close_refused\" events");
	is_int((long long)nodes[0].ntx, (long long)ntx, "close: no close submitted");
	ok(strcmp(info_status(1, W.id), "open") == 0, "close: node 1 still open");
	release_held();
	rules_clear();

	/* M: cooperative */
	ok(pay_ok(&M, 3, 0, 1), "close: a payment in M not yet rooted");
	is_int(close_cmd(&M, 2, false, why, sizeof(why)), WEFT_EAGAIN, "close: refused at once (%s)", why);
	ok(ask_root(&M, 0), "close: a root of everything");
	pump();
	long long v = info_root_version(0, M.id);
	ok(roots_agree(&M, v), "close: version %lld everywhere", v);
	ntx = nodes[2].ntx;
	is_int(close_cmd(&M, 2, false, why, sizeof(why)), 0, "close: node 2 asks for the cooperative close");
	pump();
	struct weft_ledger_channel_close cl;
	bool good = nodes[2].ntx == ntx + 1 &&
		    weft_ledger_channel_close_decode(nodes[2].tx[ntx].b, nodes[2].tx[ntx].len, &cl) == 0 &&
		    memcmp(cl.id, M.id, 32) == 0 && cl.n == M.n;
	ok(good, "close: node 2 submitted the close");
	if (good) {
		uint8_t msg[32];
		int sigs = 0, bal = 0;
		weft_ledger_channel_close_sighash(chain_test, &cl, msg);
		for (uint32_t m = 0; m < M.n; m++) {
			sigs += weft_ledger_schnorr_verify(pk[M.key[m]], msg, cl.sig[m]) == 0;
			bal += cl.balance[m] == M.bal[m];
		}
		is_int(sigs, (int)M.n, "close: every member's signature on it verifies");
		is_int(bal, (int)M.n, "close: it pays the expected balances");
	}
	int closing = 0;
	for (uint32_t i = 0; i < NN; i++)
		closing += strcmp(info_status(i, M.id), "closing") == 0;
	is_int(closing, 4, "close: closing on every node");
	is_int(pay_cmd(&M, 0, 1, 1, why, sizeof(why)), WEFT_ESTATE, "close: no more payments (%s)", why);
	if (good)
		for (uint32_t i = 0; i < NN; i++)
			ledger_feed(i, nodes[2].tx[ntx].b, nodes[2].tx[ntx].len, WEFT_LEDGER_APPLIED);
	int closed = 0;
	for (uint32_t i = 0; i < NN; i++)
		closed += strcmp(info_status(i, M.id), "closed") == 0 && ev_count(i, "closed", NULL, NULL) >= 1;
	is_int(closed, 4, "close: closed everywhere once the ledger applied it, a \"closed\" event");

	/* X: unilateral */
	ok(pay_ok(&X, 1, 0, 3) && ask_root(&X, 0), "close: X pays and roots");
	pump();
	v = info_root_version(1, X.id);
	ntx = nodes[1].ntx;
	is_int(close_cmd(&X, 1, true, why, sizeof(why)), 0, "close: node 1 closes X unilaterally");
	struct weft_ledger_channel_root rt;
	good = nodes[1].ntx == ntx + 1 &&
	       weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, nodes[1].tx[ntx].b, nodes[1].tx[ntx].len,
					       &rt) == 0 &&
	       memcmp(rt.id, X.id, 32) == 0 && rt.version == (uint64_t)v && v >= 1;
	ok(good, "close: it posts its newest root (version %lld)", v);
	if (good) {
		uint8_t msg[32];
		int sigs = 0;
		weft_ledger_channel_root_sighash(chain_test, &rt, msg);
		for (uint32_t m = 0; m < X.n; m++)
			sigs += weft_ledger_schnorr_verify(pk[X.key[m]], msg, rt.sig[m]) == 0;
		ok(sigs == 2 && rt.balance[0] == X.bal[0] && rt.balance[1] == X.bal[1],
		   "close: signed by both members, the expected balances");
	}
	is_str(info_status(1, X.id), "closing", "close: X closing at node 1");
}

/* ---- malformed messages ---- */

static const uint8_t field_count[MSG_TYPES] = {
	[MSG_OPEN] = 3,      [MSG_OPEN_SIGS] = 2, [MSG_ROOT0] = 1,     [MSG_PROPOSE] = 1,   [MSG_CONSENT] = 4,
	[MSG_REFUSE] = 4,    [MSG_FINAL] = 1,     [MSG_FETCH] = 3,     [MSG_PAYS] = 1,      [MSG_ROOT_ASK] = 3,
	[MSG_ROOT_SIGS] = 3, [MSG_ROOT_NACK] = 2, [MSG_ROOT_ALL] = 3,  [MSG_CLOSE_ASK] = 1, [MSG_CLOSE_SIGS] = 2,
	[MSG_CLOSE_NACK] = 2, [MSG_HEADS] = 1, [MSG_UNLOCK_ASK] = 3, [MSG_REFUND_ASK] = 2,
};

static const char *const type_name[MSG_TYPES] = {
	[MSG_OPEN] = "OPEN",         [MSG_OPEN_SIGS] = "OPEN_SIGS", [MSG_ROOT0] = "ROOT0",
	[MSG_PROPOSE] = "PROPOSE",   [MSG_CONSENT] = "CONSENT",     [MSG_REFUSE] = "REFUSE",
	[MSG_FINAL] = "FINAL",       [MSG_FETCH] = "FETCH",         [MSG_PAYS] = "PAYS",
	[MSG_ROOT_ASK] = "ROOT_ASK", [MSG_ROOT_SIGS] = "ROOT_SIGS", [MSG_ROOT_NACK] = "ROOT_NACK",
	[MSG_ROOT_ALL] = "ROOT_ALL", [MSG_CLOSE_ASK] = "CLOSE_ASK", [MSG_CLOSE_SIGS] = "CLOSE_SIGS",
	[MSG_CLOSE_NACK] = "CLOSE_NACK", [MSG_HEADS] = "HEADS", [MSG_UNLOCK_ASK] = "UNLOCK_ASK",
	[MSG_REFUND_ASK] = "REFUND_ASK",
};

#define TNAME(t) (type_name[t] ? type_name[t] : "?")

static bool msg_id(const uint8_t *b, size_t len, uint8_t id[32])
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t v;
	weft_mp_reader_init(&r, b, len);
	return weft_mp_read_array(&r, &count) == 0 && weft_mp_read_uint(&r, &v) == 0 && weft_mp_read_uint(&r, &v) == 0 &&
	       weft_mp_read_bin_fixed(&r, id, 32) == 0;
}

/* ---- conditional payments across channels ---- */

static struct tch LA, LB; /* LA: keys 0, 1 (nodes 0, 1); LB: keys 1, 2 (nodes 1, 2) */

/* channel.pay of a LOCK at the payer's node: hash, hops after the payee
 * (channel, member key index); nothing pumped.  The command's code. */
static int lock_cmd(struct tch *c, uint32_t from, uint32_t to, uint64_t amount, const uint8_t hash[32],
		    const struct tch *next, uint32_t next_key)
{
	struct weft_mpw a;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 6);
	weft_mpw_bin(&a, c->id, 32);
	weft_mpw_uint(&a, from);
	weft_mpw_uint(&a, to);
	weft_mpw_uint(&a, amount);
	weft_mpw_bin(&a, hash, 32);
	weft_mpw_array(&a, next ? 1 : 0);
	if (next) {
		weft_mpw_array(&a, 2);
		weft_mpw_bin(&a, next->id, 32);
		weft_mpw_bin(&a, pk[next_key], 32);
	}
	int rc = command(c->host[from], "channel.pay", &a, NULL);
	weft_mpw_free(&a);
	return rc;
}

/* channel.invoice at node i for key k: the hash. */
static bool invoice_cmd(uint32_t i, uint32_t k, uint64_t amount, uint8_t hash[32])
{
	struct weft_mpw a;
	json_t *rep = NULL;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 2);
	weft_mpw_bin(&a, pk[k], 32);
	weft_mpw_uint(&a, amount);
	int rc = command(i, "channel.invoice", &a, &rep);
	weft_mpw_free(&a);
	const char *hex = json_string_value(json_object_get(rep, "hash"));
	bool good = rc == 0 && hex && weft_hex_decode(hash, 32, hex, strlen(hex)) == 0;
	json_decref(rep);
	return good;
}

static void test_locks(void)
{
	static const uint32_t ka[2] = {0, 1}, kb[2] = {1, 2};
	static const uint64_t depa[2] = {90, 110}, depb[2] = {110, 90};
	tch_init(&LA, 2, ka, depa);
	tch_init(&LB, 2, kb, depb);
	ok(open_channel(&LA, 0) && open_channel(&LB, 1), "locks: channels A (keys 0, 1) and B (keys 1, 2) open");
	uint8_t hash[32], unknown[32];
	ok(invoice_cmd(2, 2, 30, hash), "locks: node 2 makes an invoice of 30 for key 2");
	struct weft_mpw a;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 2);
	weft_mpw_bin(&a, pk[4], 32);
	weft_mpw_uint(&a, 1);
	is_int(command(2, "channel.invoice", &a, NULL), WEFT_EINVAL, "locks: no invoice for a key in no channel here");
	weft_mpw_free(&a);

	/* key 0 pays key 2 through key 1: A's lock, then B's, then unlocked
	 * back from key 2 to key 0. */
	int unlocked = ev_count(0, "payment", "unlocked", NULL);
	is_int(lock_cmd(&LA, 0, 1, 30, hash, &LB, 2), 0, "locks: key 0 locks 30 to key 1 in A, on to key 2 in B");
	advance(20 * cur.tick_ms);
	ok(ev_count(0, "payment", "unlocked", NULL) == unlocked + 1, "locks: the lock in A was unlocked at node 0");
	ok(ev_count(1, "payment", "unlocked", NULL) >= 1 && ev_count(2, "payment", "unlocked_to_us", NULL) == 1,
	   "locks: B's lock unlocked to key 2 first");
	LA.bal[0] = 60, LA.bal[1] = 140, LA.seq[0] = 2;
	LB.bal[0] = 80, LB.bal[1] = 120, LB.seq[0] = 2;
	ok(agree(&LA) && agree(&LB), "locks: both legs happened: A 60 / 140, B 80 / 120, on every node");
	ok(ask_root(&LA, 0) && ask_root(&LB, 1), "locks: roots asked in both channels");
	pump();
	ok(roots_agree(&LA, 2) && roots_agree(&LB, 2), "locks: roots 2 hold no lock and the same balances");

	/* A hash key 2 has no invoice for: B's lock is refused, A's refunded. */
	memset(unknown, 0x5a, 32);
	int refunded = ev_count(0, "payment", "refunded", NULL);
	is_int(lock_cmd(&LA, 0, 1, 10, unknown, &LB, 2), 0, "locks: key 0 locks 10 under a hash nobody knows");
	advance(20 * cur.tick_ms);
	is_int(ev_count(2, "payment", "refused", NULL) + ev_count(1, "payment", "refused", "unknown_hash"),
	       ev_count(2, "payment", "refused", NULL) + 1, "locks: node 2 refused B's lock (unknown_hash)");
	is_int(ev_count(0, "payment", "refunded", NULL), refunded + 1, "locks: A's lock refunded to key 0");
	LA.seq[0] += 2;
	ok(agree(&LA) && agree(&LB), "locks: neither leg happened: balances as before on every node");

	/* A lock straight to key 1 without a route or an invoice: refused. */
	is_int(lock_cmd(&LA, 0, 1, 10, unknown, NULL, 0), 0, "locks: a lock to key 1 with no route");
	pump();
	is_int(ev_count(0, "payment", "refused", "unknown_hash"), 1, "locks: refused at once (unknown_hash)");

	/* Bad asks: a wrong preimage, the wrong node, a lock that is not one. */
	weft_mpw_init(&a);
	mhead(&a, MSG_UNLOCK_ASK, LA.id, 3);
	weft_mpw_uint(&a, 0);
	weft_mpw_uint(&a, 1);
	weft_mpw_bin(&a, unknown, 32);
	char *before = snap(0, LA.id);
	is_int(inject_w(0, 1, &a), 0, "locks: an UNLOCK_ASK of a lock already unlocked: ignored");
	weft_mpw_free(&a);
	weft_mpw_init(&a);
	mhead(&a, MSG_REFUND_ASK, LA.id, 2);
	weft_mpw_uint(&a, 0);
	weft_mpw_uint(&a, 2);
	is_int(inject_w(0, 1, &a), 0, "locks: a REFUND_ASK naming an UNLOCK, not a lock: ignored");
	weft_mpw_free(&a);
	pump();
	ok(same_snap(before, 0, LA.id), "locks: nothing changed at node 0");
	free(before);
	uint8_t h2[32];
	ok(invoice_cmd(2, 2, 5, h2), "locks: a second invoice");
	rule_add(MSG_UNLOCK_ASK, 2, 1, HOLD, 1);
	is_int(lock_cmd(&LA, 0, 1, 5, h2, &LB, 2), 0, "locks: a third payment through key 1, its reveal held");
	advance(20 * cur.tick_ms);
	struct qmsg *ask = held_find(MSG_UNLOCK_ASK, 1);
	ok(ask != NULL, "locks: node 2 revealed the preimage to node 1 (held)");
	if (ask) {
		uint8_t *bad = malloc(ask->len);
		memcpy(bad, ask->b, ask->len);
		bad[ask->len - 1] ^= 1; /* the preimage's last byte */
		is_int(inject(1, 2, bad, ask->len), WEFT_ECRYPTO, "locks: an UNLOCK_ASK with a wrong preimage: refused");
		is_int(inject(1, 3, ask->b, ask->len), WEFT_EPROTO, "locks: the UNLOCK_ASK from a node not the payee's: refused");
		/* A REFUND of B's lock asked by node 1 now: node 2 knows the preimage. */
		int refused = ev_count(1, "payment", "refused", "preimage_known");
		struct weft_mpw r;
		weft_mpw_init(&r);
		mhead(&r, MSG_REFUND_ASK, LB.id, 2);
		weft_mpw_uint(&r, 0);
		weft_mpw_uint(&r, LB.seq[0] + 1);
		is_int(inject_w(1, 2, &r), 0, "locks: node 2 asks node 1 to refund B's lock (a forged change of mind)");
		weft_mpw_free(&r);
		pump();
		is_int(ev_count(1, "payment", "refused", "preimage_known"), refused + 1,
		       "locks: the refund proposed is refused by node 2, which knows the preimage");
		free(bad);
	}
	rules_clear();
	release_held();
	advance(30 * cur.tick_ms);
	LA.bal[0] -= 5, LA.bal[1] += 5, LA.seq[0] += 2;
	LB.bal[0] -= 5, LB.bal[1] += 5, LB.seq[0] += 2;
	ok(agree(&LA) && agree(&LB), "locks: then both legs happened (5 more)");
	is_int(node_restart(1, NULL), 0, "locks: node 1 (in both channels) restarted");
	ok(agree(&LA) && agree(&LB), "locks: its chains of locks, unlocks and refunds restored, balances the same");
}

/* ---- atomic service channels (asc.c) ---- */

static uint8_t asc_id[32];

/* An asc event's field at node i: the count of events of that status. */
static int asc_events(uint32_t i, const char *status)
{
	return ev_count(i, "asc", status, NULL);
}

static int asc_request(uint32_t at, const char *service, const char *payload, uint64_t price)
{
	struct weft_mpw a;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 4);
	weft_mpw_bin(&a, asc_id, 32);
	weft_mpw_str(&a, service);
	weft_mpw_bin(&a, payload, (uint32_t)strlen(payload));
	weft_mpw_uint(&a, price);
	int rc = command(at, "asc.request", &a, NULL);
	weft_mpw_free(&a);
	return rc;
}

static int asc_respond(uint32_t at, uint64_t seq, bool ok, const char *text)
{
	struct weft_mpw a;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 4);
	weft_mpw_bin(&a, asc_id, 32);
	weft_mpw_uint(&a, seq);
	weft_mpw_bool(&a, ok);
	if (ok)
		weft_mpw_bin(&a, text, (uint32_t)strlen(text));
	else
		weft_mpw_str(&a, text);
	int rc = command(at, "asc.respond", &a, NULL);
	weft_mpw_free(&a);
	return rc;
}

static long long asc_info(uint32_t at, const char *key)
{
	struct weft_mpw a;
	weft_mpw_init(&a);
	weft_mpw_bin(&a, asc_id, 32);
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	json_t *j = NULL;
	long long v = -1;
	if (nodes[at].ops->query(nodes[at].state, "asc.info", a.buf, a.len, &reply) == 0 &&
	    weft_mp_buf_to_json(reply.buf, reply.len, &j) == 0)
		v = json_integer_value(json_object_get(j, key));
	json_decref(j);
	weft_mpw_free(&a);
	weft_mpw_free(&reply);
	return v;
}

/* The last asc event "result" at node i carries this result. */
static bool last_result_is(uint32_t i, const char *want)
{
	for (size_t k = nodes[i].nev; k-- > 0;) {
		json_t *j = NULL;
		if (weft_mp_buf_to_json(nodes[i].ev[k].b, nodes[i].ev[k].len, &j) != 0)
			continue;
		const char *st = json_string_value(json_object_get(j, "status"));
		const char *hex = json_string_value(json_object_get(j, "result"));
		bool is_result = st && strcmp(st, "result") == 0;
		bool same = false;
		if (is_result && hex) {
			char expect[256] = "0x"; /* bin in JSON: 0x and hex digits */
			weft_hex_encode(expect + 2, (const uint8_t *)want, strlen(want));
			same = strcmp(expect, hex) == 0;
		}
		json_decref(j);
		if (is_result)
			return same;
	}
	return false;
}

static void test_asc(void)
{
	/* key 0 (node 0) buys from key 1 (node 1) */
	struct weft_mpw a;
	json_t *rep = NULL;
	weft_mpw_init(&a);
	weft_mpw_array(&a, 5);
	weft_mpw_bin(&a, pk[0], 32);
	weft_mpw_bin(&a, pk[1], 32);
	weft_mpw_uint(&a, 1);
	weft_mpw_uint(&a, 77);
	weft_mpw_uint(&a, 100);
	size_t ntx = nodes[0].ntx;
	int rc = command(0, "asc.open", &a, &rep);
	weft_mpw_free(&a);
	const char *hex = json_string_value(json_object_get(rep, "channel"));
	ok(rc == 0 && hex && weft_hex_decode(asc_id, 32, hex, 64) == 0, "asc: asc.open at the client's node");
	json_decref(rep);
	pump();
	struct weft_ledger_asc_open o;
	const struct blob *tx = &nodes[0].tx[ntx];
	uint8_t m[32], id[32];
	bool good = nodes[0].ntx == ntx + 1 && weft_ledger_asc_open_decode(tx->b, tx->len, &o) == 0;
	if (good) {
		weft_ledger_asc_open_sighash(chain_test, &o, m);
		weft_ledger_asc_id(chain_test, &o, id);
		good = weft_ledger_schnorr_verify(pk[0], m, o.sig) == 0 && memcmp(id, asc_id, 32) == 0 && o.deposit == 77;
	}
	ok(good, "asc: it submitted the open, signed by the client, for this id");
	is_int(asc_request(0, "upper", "abc", 5), WEFT_ESTATE, "asc: a request before the ledger's open: refused");
	for (uint32_t i = 0; i < 2 && good; i++)
		ledger_feed(i, tx->b, tx->len, WEFT_LEDGER_APPLIED);
	pump();
	ok(asc_events(0, "open") == 1 && asc_events(1, "open") == 1, "asc: open at the client's and the provider's node");

	/* one round */
	is_int(asc_request(0, "upper", "abc", 78), WEFT_EINVAL, "asc: a price above the deposit: refused");
	is_int(asc_request(0, "upper", "abc", 5), 0, "asc: a request of price 5");
	is_int(asc_request(0, "upper", "abc", 5), WEFT_EAGAIN, "asc: a second while the first is open: busy");
	pump();
	is_int(ev_count(1, "service_request", NULL, NULL), 1, "asc: the provider's node hands it to its service");
	is_int(asc_respond(1, 9, true, "x"), WEFT_ESTATE, "asc: a response to no such request: refused");
	is_int(asc_respond(1, 1, true, "ABC"), 0, "asc: the service answers ABC");
	pump();
	ok(asc_events(0, "result") == 1 && last_result_is(0, "ABC"), "asc: the client decrypted ABC");
	ok(asc_events(1, "paid") == 1, "asc: the provider was paid");
	ok(asc_info(0, "provider_paid") == 5 && asc_info(1, "provider_paid") == 5 && asc_info(0, "client_free") == 72 &&
		   asc_info(1, "seq") == 1,
	   "asc: both hold the state of seq 1: 72 / 5");

	/* a refusal by the service */
	is_int(asc_request(0, "upper", "def", 2), 0, "asc: a second request");
	pump();
	is_int(asc_respond(1, 2, false, "no thanks"), 0, "asc: the service refuses it");
	pump();
	ok(ev_count(0, "asc", "refused", "no thanks") == 1 && asc_info(0, "client_free") == 72,
	   "asc: the client is told, nothing paid");

	/* a round with hostile messages */
	rule_add(MSG_ASC_OFFER, 1, 0, HOLD, 1);
	is_int(asc_request(0, "upper", "ghi", 3), 0, "asc: a third request, its offer held");
	pump();
	asc_respond(1, 2, true, "GHI");
	pump();
	struct qmsg *off = held_find(MSG_ASC_OFFER, 0);
	ok(off != NULL, "asc: the offer (held)");
	if (off) {
		struct weft_mp_reader r;
		uint32_t count;
		uint64_t v;
		uint8_t oid[32];
		weft_mp_reader_init(&r, off->b, off->len);
		weft_mp_read_array(&r, &count), weft_mp_read_uint(&r, &v), weft_mp_read_uint(&r, &v);
		weft_mp_read_bin_fixed(&r, oid, 32), weft_mp_read_uint(&r, &v);
		size_t at_state = off->len - weft_mp_remaining(&r);
		uint8_t *bad = malloc(off->len);
		/* the state's provider amount: the fourth uint of the state array */
		memcpy(bad, off->b, off->len);
		bad[at_state + 4] ^= 1;
		is_int(inject(0, 1, bad, off->len), WEFT_EPROTO, "asc: an offer whose state is not the one paid 3 more");
		memcpy(bad, off->b, off->len);
		bad[off->len - 64 - 2 - 1] ^= 1; /* the encrypted result's last byte: the evidence no longer verifies */
		rc = inject(0, 1, bad, off->len);
		is_int(rc, WEFT_ECRYPTO, "asc: an offer whose evidence does not verify");
		/* the pre-signature (bin 65) follows the state: found by its header */
		memcpy(bad, off->b, off->len);
		size_t at_presig = 0;
		for (size_t i = at_state; i + 2 < off->len; i++)
			if (off->b[i] == 0xc4 && off->b[i + 1] == 65) {
				at_presig = i + 2;
				break;
			}
		ok(at_presig > 0, "asc: the offer's pre-signature found");
		bad[at_presig + 64] ^= 1; /* the last byte of s' */
		rc = inject(0, 1, bad, off->len);
		is_int(rc, WEFT_ECRYPTO, "asc: an offer whose pre-signature does not verify");
		is_int(inject(0, 2, off->b, off->len), WEFT_EPROTO, "asc: the offer from a node not the provider's");
		free(bad);
		ok(asc_info(0, "client_free") == 72, "asc: nothing accepted");
	}
	rules_clear();
	rule_add(MSG_ASC_REVEAL, 1, 0, HOLD, 1);
	release_held();
	pump();
	struct qmsg *rev = held_find(MSG_ASC_REVEAL, 0);
	ok(rev != NULL && asc_info(1, "provider_paid") == 8, "asc: accepted; the provider holds the paid state (8), its reveal held");
	if (rev) {
		uint8_t *bad = malloc(rev->len);
		memcpy(bad, rev->b, rev->len);
		bad[rev->len - 1] ^= 1;
		is_int(inject(0, 1, bad, rev->len), WEFT_ECRYPTO, "asc: a reveal with a t that is not T's: refused");
		free(bad);
	}
	drop_held();
	rules_clear();
	is_int(node_restart(0, NULL), 0, "asc: the client's node restarts before the reveal");
	advance(3 * cur.tick_ms);
	ok(asc_events(0, "result") == 2 && last_result_is(0, "GHI") && asc_info(0, "provider_paid") == 8,
	   "asc: it asked again, got the reveal and decrypted GHI (the provider had kept the round)");

	/* The provider's node restarts between its offer and the client's
	 * accept: it kept the round (t, the pre-signature), and reveals. */
	rule_add(MSG_ASC_ACCEPT, 0, 1, HOLD, 1);
	is_int(asc_request(0, "upper", "jkl", 1), 0, "asc: a fourth request, the accept held");
	pump();
	asc_respond(1, 3, true, "JKL");
	pump();
	ok(held_find(MSG_ASC_ACCEPT, 1) != NULL, "asc: the client accepted (held)");
	is_int(node_restart(1, NULL), 0, "asc: the provider's node restarts before the accept reaches it");
	rules_clear();
	release_held();
	pump();
	advance(3 * cur.tick_ms);
	ok(asc_events(0, "result") == 3 && last_result_is(0, "JKL") && asc_info(1, "provider_paid") == 9,
	   "asc: the restarted provider adapted and revealed: JKL, 9 paid");

	/* A late accept: the channel was refunded on the ledger before the
	 * client's signature reached the provider, which must not reveal t
	 * (the client would have its deposit back and the result free). */
	uint8_t keep_id[32];
	memcpy(keep_id, asc_id, 32);
	weft_mpw_init(&a);
	weft_mpw_array(&a, 5);
	weft_mpw_bin(&a, pk[0], 32);
	weft_mpw_bin(&a, pk[1], 32);
	weft_mpw_uint(&a, 1);
	weft_mpw_uint(&a, 61);
	weft_mpw_uint(&a, 100);
	ntx = nodes[0].ntx;
	rep = NULL;
	rc = command(0, "asc.open", &a, &rep);
	weft_mpw_free(&a);
	hex = json_string_value(json_object_get(rep, "channel"));
	good = rc == 0 && hex && weft_hex_decode(asc_id, 32, hex, 64) == 0;
	json_decref(rep);
	pump();
	/* The client's ledger applied the open, the provider's not yet: a
	 * request reaching the provider then is not refused (the client asks
	 * again every channel_root_ms), and the one after its ledger caught
	 * up is served.  (Refused as not_open, it failed the client's round
	 * whenever the provider's ledger lagged.) */
	if (good && nodes[0].ntx == ntx + 1)
		ledger_feed(0, nodes[0].tx[ntx].b, nodes[0].tx[ntx].len, WEFT_LEDGER_APPLIED);
	pump();
	rule_add(MSG_ASC_ACCEPT, 0, 1, HOLD, 1);
	rule_add(MSG_ASC_REQUEST, 0, 1, HOLD, 1);
	unsigned refused_before = sent_total(1, 0, MSG_ASC_REFUSE);
	int client_refused = asc_events(0, "refused");
	is_int(asc_request(0, "upper", "late", 4), 0, "asc late: a request on a second channel");
	pump();
	struct qmsg *req_msg = held_find(MSG_ASC_REQUEST, 1);
	uint8_t *resend = req_msg ? malloc(req_msg->len) : NULL;
	size_t resend_len = req_msg ? req_msg->len : 0;
	if (resend)
		memcpy(resend, req_msg->b, resend_len);
	release_held();
	ok(resend && sent_total(1, 0, MSG_ASC_REFUSE) == refused_before &&
		   asc_events(0, "refused") == client_refused,
	   "asc late: the provider, the open not applied by its ledger yet, does not refuse the request");
	if (good && nodes[0].ntx == ntx + 1)
		ledger_feed(1, nodes[0].tx[ntx].b, nodes[0].tx[ntx].len, WEFT_LEDGER_APPLIED);
	if (resend)
		inject(1, 0, resend, resend_len); /* the client's resend */
	free(resend);
	pump();
	is_int(asc_respond(1, 1, true, "LATE"), 0, "asc late: its ledger caught up, the provider serves the request asked again");
	pump();
	ok(held_find(MSG_ASC_ACCEPT, 1) != NULL, "asc late: the client accepted; its accept held");
	struct weft_mpw refund;
	weft_mpw_init(&refund);
	weft_ledger_asc_refund_encode(asc_id, &refund);
	for (uint32_t i = 0; i < 2; i++)
		ledger_feed(i, refund.buf, refund.len, WEFT_LEDGER_APPLIED);
	weft_mpw_free(&refund);
	int reveals = (int)sent_total(1, 0, MSG_ASC_REVEAL);
	rules_clear();
	release_held();
	pump();
	is_int((int)sent_total(1, 0, MSG_ASC_REVEAL), reveals, "asc late: the provider, refunded already, does not reveal");
	is_int(asc_info(1, "provider_paid"), 0, "asc late: and takes no paid state");
	is_int(asc_events(0, "result"), 3, "asc late: the client got no result");
	memcpy(asc_id, keep_id, 32);

	/* The provider asks to close, its ask is lost and its node restarts:
	 * it stays closing, so it takes no request whose payment the close it
	 * signed would not carry (tla/AscRoundCloseRestart: open again after
	 * a restart, it served a round the client could then undo by posting
	 * that close).  Asked again, its close completes. */
	rule_add(MSG_ASC_CLOSE_ASK, 1, 0, DROP, -1);
	weft_mpw_init(&a);
	weft_mpw_bin(&a, asc_id, 32);
	is_int(command(1, "asc.close", &a, NULL), 0, "asc restart: the provider asks to close (its ask lost)");
	pump();
	rules_clear();
	is_int(node_restart(1, NULL), 0, "asc restart: the provider's node restarts");
	unsigned refusals = sent_total(1, 0, MSG_ASC_REFUSE), offers = sent_total(1, 0, MSG_ASC_OFFER);
	is_int(asc_request(0, "upper", "after", 2), 0, "asc restart: the client asks for a round");
	pump();
	ok(sent_total(1, 0, MSG_ASC_REFUSE) == refusals + 1 && sent_total(1, 0, MSG_ASC_OFFER) == offers,
	   "asc restart: the provider, still closing, refuses it");
	ntx = nodes[1].ntx;
	is_int(command(1, "asc.close", &a, NULL), 0, "asc restart: the provider asks to close again");
	weft_mpw_free(&a);
	pump();
	is_int((long long)nodes[1].ntx, (long long)ntx + 1, "asc restart: its close submitted");

	/* cooperative close, asked by the other side as well */
	ntx = nodes[0].ntx;
	weft_mpw_init(&a);
	weft_mpw_bin(&a, asc_id, 32);
	is_int(command(0, "asc.close", &a, NULL), 0, "asc: a cooperative close asked by the client");
	weft_mpw_free(&a);
	pump();
	struct weft_ledger_asc_final f;
	good = nodes[0].ntx == ntx + 1 &&
	       weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLOSE_TAG, nodes[0].tx[ntx].b, nodes[0].tx[ntx].len, &f) == 0;
	if (good) {
		weft_ledger_asc_state_sighash(chain_test, asc_id, &f.st, m);
		good = f.st.provider == 9 && f.st.free == 68 && f.st.status == WEFT_LEDGER_ASC_CLOSED &&
		       weft_ledger_schnorr_verify(pk[0], m, f.client_sig) == 0 &&
		       weft_ledger_schnorr_verify(pk[1], m, f.provider_sig) == 0;
	}
	ok(good, "asc: the close submitted: 68 / 9, CLOSED, signed by both");
}

static void test_malformed(void)
{
	int types = 0, accepted = 0, total = 0, changed = 0;
	if (sample[MSG_HEADS].b == NULL) {
		/* HEADS go out only with periodic roots: one made here, as node 1
		 * would send it to the opener's node for X */
		struct weft_mpw h;
		size_t hl;
		mhead(&h, MSG_HEADS, X.id, 1);
		weft_mpw_array(&h, 2);
		weft_mpw_uint(&h, X.seq[0]);
		weft_mpw_uint(&h, X.seq[1]);
		uint8_t *hb = weft_mpw_steal(&h, &hl);
		sample[MSG_HEADS] = (struct qmsg){1, 0, MSG_HEADS, hb, hl};
	}
	for (int t = 1; t < MSG_TYPES; t++) {
		const struct qmsg *s = &sample[t];
		uint8_t id[32];
		if (s->b == NULL || !msg_id(s->b, s->len, id)) {
			diag("no %s seen", TNAME(t));
			continue;
		}
		types++;
		char *before = snap(s->to, id);
		for (size_t len = 0; len < s->len; len++) {
			uint8_t *copy = malloc(len ? len : 1);
			memcpy(copy, s->b, len);
			int rc = inject(s->to, s->from, copy, len);
			free(copy);
			total++;
			if (rc >= 0) {
				accepted++;
				diag("%s cut to %zu of %zu bytes: %d", TNAME(t), len, s->len, rc);
			}
		}
		pump();
		char *after = snap(s->to, id);
		if (strcmp(before, after) != 0) {
			changed++;
			diag("%s truncated changed node %u", TNAME(t), s->to);
		}
		free(before);
		free(after);
	}
	is_int(types, MSG_TYPES - 1, "malformed: a message of every type was seen (and kept)");
	is_int(accepted, 0, "malformed: all %d truncations of them rejected (negative)", total);
	is_int(changed, 0, "malformed: none changed the channel at its node");

	/* nil and string fields, wrong counts, for every type, at node 0 for X */
	struct weft_mpw w;
	int bad = 0;
	char *before = snap(0, X.id);
	for (int t = 1; t < MSG_TYPES; t++) {
		for (int form = 0; form < 4 && field_count[t]; form++) {
			uint32_t f = field_count[t] + (form == 2) - (form == 3);
			mhead(&w, t, X.id, f);
			for (uint32_t i = 0; i < f; i++) {
				if (form == 1)
					weft_mpw_str(&w, "x");
				else
					weft_mpw_nil(&w);
			}
			int rc = inject_w(0, 1, &w);
			if (rc >= 0 || (form >= 2 && rc != WEFT_EDECODE)) {
				bad++;
				diag("%s form %d: %d", TNAME(t), form, rc);
			}
		}
	}
	is_int(bad, 0, "malformed: every type with nil fields, string fields, one field more or less: rejected");
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 2);
	weft_mpw_uint(&w, MSG_FETCH);
	weft_mpw_bin(&w, X.id, 32);
	weft_mpw_nil(&w);
	is_int(inject_w(0, 1, &w), WEFT_EUNSUPPORTED, "malformed: protocol version 2 unsupported");
	mhead(&w, 0, X.id, 1);
	weft_mpw_nil(&w);
	is_int(inject_w(0, 1, &w), WEFT_EUNSUPPORTED, "malformed: type 0 unsupported");
	mhead(&w, MSG_TYPES, X.id, 1);
	weft_mpw_nil(&w);
	is_int(inject_w(0, 1, &w), WEFT_EUNSUPPORTED, "malformed: type %d unsupported", MSG_TYPES);
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, MSG_CLOSE_ASK);
	weft_mpw_bin(&w, X.id, 31);
	weft_mpw_uint(&w, 0);
	is_int(inject_w(0, 1, &w), WEFT_EDECODE, "malformed: an id of 31 bytes rejected");
	{
		uint8_t other[32];
		memcpy(other, X.id, 32);
		other[7] ^= 1;
		mhead(&w, MSG_CLOSE_ASK, other, 1);
		weft_mpw_uint(&w, 0);
		is_int(inject_w(0, 1, &w), WEFT_EPROTO, "malformed: an unknown channel rejected");
	}
	weft_mpw_init(&w);
	weft_mpw_uint(&w, 1);
	is_int(inject_w(0, 1, &w), WEFT_EDECODE, "malformed: not an array rejected");
	is_int(inject(0, 1, (const uint8_t *)"", 0), WEFT_EDECODE, "malformed: an empty message rejected");
	weft_mpw_init(&w);
	weft_mpw_array(&w, 2);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, MSG_FETCH);
	is_int(inject_w(0, 1, &w), WEFT_EDECODE, "malformed: no channel id rejected");
	pump();
	ok(same_snap(before, 0, X.id), "malformed: X unchanged at node 0");
	free(before);

	/* random byte changes of every sample: no crash, the nodes still work */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int runs = 0;
	for (int t = 1; t < MSG_TYPES; t++) {
		const struct qmsg *s = &sample[t];
		if (s->b == NULL)
			continue;
		for (int k = 0; k < 150; k++) {
			uint8_t *copy = malloc(s->len);
			memcpy(copy, s->b, s->len);
			for (int flips = 1 + k % 3; flips-- > 0;) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				copy[x % s->len] = (uint8_t)(x >> 32);
			}
			inject(s->to, (uint32_t)(k % 7 == 0 ? (s->from + 1) % NN : s->from), copy, s->len);
			free(copy);
			runs++;
		}
		pump();
	}
	ok(runs > 0, "malformed: %d messages with random bytes changed handled", runs);
}

/* ---- restarts ---- */

static void restart_case(struct tch *c, uint32_t from, uint32_t to, uint64_t amount, bool rp, bool rr, bool lose,
			 const char *who)
{
	uint32_t hp = c->host[from], hr = c->host[to];
	int fin = ev_count(hp, "payment", "finalized", NULL), rec = ev_count(hr, "payment", "received", NULL);
	rule_add(MSG_CONSENT, (int)hr, (int)hp, lose ? DROP : HOLD, 1);
	int rc = pay_cmd(c, from, to, amount, NULL, 0);
	pump();
	ok(rc == 0 && (lose || held_find(MSG_CONSENT, (int)hp)),
	   "restart (%s): member %u proposes, member %u consents; the CONSENT %s", who, from, to,
	   lose ? "lost" : "held");
	if (rr)
		ok(node_restart(hr, NULL) == 0, "restart (%s): the receiver's node %u restarts on its kv", who, hr);
	if (rp)
		ok(node_restart(hp, NULL) == 0 && info_in_flight(hp, c->id) == 0,
		   "restart (%s): the payer's node %u restarts and forgets the proposal (it signed nothing)", who, hp);
	release_held();
	rules_clear();
	if (rp) {
		/* the consent came to nothing; the payer pays again, the same */
		advance(cur.root_ms);
		is_int(ev_count(hp, "payment", "finalized", NULL), fin, "restart (%s): nothing finalized", who);
		ok(pay_cmd(c, from, to, amount, NULL, 0) == 0, "restart (%s): the payer pays again", who);
		pump();
	}
	c->bal[from] -= amount, c->bal[to] += amount, c->seq[from]++;
	advance(cur.root_ms * 2);
	is_int(ev_count(hp, "payment", "finalized", NULL), fin + 1, "restart (%s): finalized once at the payer's node",
	       who);
	is_int(ev_count(hr, "payment", "received", NULL), rec + 1, "restart (%s): received once at the receiver's node",
	       who);
	ok(agree(c), "restart (%s): applied once everywhere, the same balances", who);
}

static void test_restart(void)
{
	static const uint32_t keys[4] = {0, 1, 2, 3};
	static const uint64_t dep[4] = {400, 300, 200, 100};
	struct tch R;
	char why[128];
	tch_init(&R, 4, keys, dep);
	ok(open_channel(&R, 0), "restart: a channel of 4 members on 3 nodes opens");
	restart_case(&R, 0, 2, 11, false, true, false, "the receiver");
	restart_case(&R, 1, 0, 12, true, false, false, "the payer");
	restart_case(&R, 2, 1, 13, true, true, false, "both");
	restart_case(&R, 0, 3, 14, true, false, true, "the payer, the consent lost");

	/* the receiver restarts after the payer finalized, before its FINAL */
	int rec = ev_count(2, "payment", "received", NULL);
	rule_add(MSG_FINAL, 1, 2, HOLD, 1);
	ok(pay_ok(&R, 3, 2, 9), "restart: member 3 pays member 2, the FINAL to node 2 held");
	ok(node_restart(2, NULL) == 0, "restart: node 2 restarts");
	release_held();
	rules_clear();
	ok(ev_count(2, "payment", "received", NULL) == rec + 1 && agree(&R), "restart: the FINAL then applied once");

	/* payments with refs every way, then every node restarts */
	for (uint32_t a = 0; a < 4; a++)
		for (uint32_t b = 0; b < 4; b++)
			if (a != b)
				pay_ok(&R, a, b, 2 + a + b);
	advance(cur.root_ms * 2);
	ok(agree(&R), "restart: 12 more payments applied everywhere");
	char *before[NN];
	for (uint32_t i = 0; i < NN; i++)
		before[i] = snap(i, R.id);
	int same = 0;
	for (uint32_t i = 0; i < NN; i++) {
		node_restart(i, NULL);
		same += same_snap(before[i], i, R.id);
		free(before[i]);
	}
	is_int(same, NN, "restart: every node restarted holds what it held");
	ok(pay_ok(&R, 3, 0, 1) && pay_ok(&R, 0, 3, 2) && agree(&R), "restart: payments go on after");
	advance(cur.root_ms * 2);
	long long v = info_root_version(0, R.id);
	ok(v >= 1 && roots_agree(&R, v), "restart: the opener's periodic roots (version %lld) agree", v);
	is_int(close_cmd(&R, 1, false, why, sizeof(why)), 0, "restart: a cooperative close is then possible (%s)", why);
	pump();
	is_str(info_status(0, R.id), "closing", "restart: closing");
}

/* A payment the opener's node never heard of: the others' HEADS make it
 * fetch it, and the next root covers it. */
static void test_heads(void)
{
	static const uint32_t keys[3] = {5, 1, 2};
	static const uint64_t dep[3] = {70, 80, 90};
	struct tch H;
	tch_init(&H, 3, keys, dep);
	ok(open_channel(&H, 0), "heads: a channel on nodes 0 (the opener's), 1 and 2 opens");
	rule_add(MSG_FINAL, 1, 0, DROP, -1);
	ok(pay_ok(&H, 1, 2, 11), "heads: member 1 pays member 2; its FINAL to the opener's node lost");
	is_int(info_member(0, H.id, 1, "payments"), 0, "heads: node 0 does not hold it");
	unsigned heads = sent_total(-1, 0, MSG_HEADS);
	advance(4 * cur.root_ms);
	ok(sent_total(-1, 0, MSG_HEADS) > heads, "heads: the other nodes tell node 0 their chains");
	is_int(info_member(0, H.id, 1, "payments"), 1, "heads: node 0 fetched the payment");
	advance(2 * cur.root_ms);
	rules_clear();
	long long v = info_root_version(0, H.id);
	ok(v >= 1 && roots_agree(&H, v) && agree(&H), "heads: a root covers it everywhere (version %lld)", v);
}

/* ---- a consent from a committee of another chain ---- */

static uint8_t other_consent[64], other_id[32];

/* On a committee whose params say chain_id "other": the same members open
 * the same channel and pay the same first payment; its consent kept. */
static void test_other_chain_capture(void)
{
	static const uint32_t keys[2] = {0, 1};
	static const uint64_t dep[2] = {100, 100};
	struct tch O;
	tch_init(&O, 2, keys, dep);
	O.chain = chain_other;
	ok(open_channel(&O, 0), "other chain: the channel opens on a committee with chain id \"other\"");
	rule_add(MSG_CONSENT, 1, 0, HOLD, 1);
	pay_cmd(&O, 0, 1, 5, NULL, 0);
	pump();
	struct qmsg *cm = held_find(MSG_CONSENT, 0);
	ok(cm != NULL, "other chain: member 1's consent to member 0's payment of 5 captured");
	if (cm)
		memcpy(other_consent, cm->b + cm->len - 64, 64);
	memcpy(other_id, O.id, 32);
	release_held();
	rules_clear();
}

/* Back on chain "test": the consent replayed for the same payment. */
static void test_other_chain_replay(void)
{
	static const uint32_t keys[2] = {0, 1};
	static const uint64_t dep[2] = {100, 100};
	struct tch T;
	struct weft_mpw w;
	tch_init(&T, 2, keys, dep);
	ok(open_channel(&T, 0) && memcmp(T.id, other_id, 32) != 0,
	   "other chain: the same channel on chain \"test\" has another id");
	rule_add(MSG_PROPOSE, 0, 1, HOLD, 1);
	pay_cmd(&T, 0, 1, 5, NULL, 0);
	pump();
	struct qmsg *pm = held_find(MSG_PROPOSE, 1);
	struct weft_channel_payment p;
	memset(&p, 0, sizeof(p));
	ok(pm && msg_payment(pm->b, pm->len, 2, &p) && p.seq == 1 && p.nrefs == 0 && p.amount == 5,
	   "other chain: the same payment proposed, held");
	uint8_t h[32];
	weft_channel_payment_hash(chain_test, T.id, &p, h);
	char *before = snap(0, T.id);
	msg_consent(&w, T.id, 0, 1, h, other_consent);
	is_int(inject_w(0, 1, &w), WEFT_ECRYPTO, "other chain: its consent replayed here rejected");
	msg_consent(&w, other_id, 0, 1, h, other_consent);
	is_int(inject_w(0, 1, &w), WEFT_EPROTO, "other chain: a message for its channel id rejected");
	pump();
	ok(same_snap(before, 0, T.id) && info_in_flight(0, T.id) == 1, "other chain: nothing changed");
	free(before);
	release_held();
	rules_clear();
	T.bal[0] -= 5, T.bal[1] += 5, T.seq[0]++;
	ok(agree(&T), "other chain: the genuine consent then finalizes it");
}

/* ---- edges that were bugs ---- */

static void test_edges(void)
{
	char why[128];
	/* 1. amounts above 2^63 */
	struct tch L;
	static const uint32_t kl[2] = {0, 1};
	static const uint64_t dl[2] = {(1ull << 63) + 10, 5};
	tch_init(&L, 2, kl, dl);
	ok(open_channel(&L, 0), "big: a channel with a deposit above 2^63 opens");
	ok(pay_ok(&L, 0, 1, (1ull << 63) + 1) && agree(&L), "big: a payment of 2^63 + 1 finalized");
	bool started = ask_root(&L, 0);
	pump();
	ok(started && roots_agree(&L, 1), "big: a root over it (amounts past 2^63 summed without overflow)");

	/* 2. an OPEN whose id is not its content's */
	struct weft_mpw w, reply;
	weft_mpw_init(&reply);
	size_t nch = 0;
	{
		void *st = nodes[1].state;
		nodes[1].ops->query(st, "channel.list", NULL, 0, &reply);
		json_t *j = NULL;
		weft_mp_buf_to_json(reply.buf, reply.len, &j);
		nch = json_array_size(j);
		json_decref(j);
	}
	uint8_t bogus[32], nonce[16];
	memset(bogus, 0xab, 32);
	memset(nonce, 0x33, 16);
	mhead(&w, MSG_OPEN, bogus, 3);
	weft_mpw_bin(&w, nonce, 16);
	weft_mpw_uint(&w, 0);
	weft_mpw_array(&w, 2);
	weft_mpw_array(&w, 3);
	weft_mpw_bin(&w, pk[5], 32);
	weft_mpw_uint(&w, 0);
	weft_mpw_uint(&w, 9);
	weft_mpw_array(&w, 3);
	weft_mpw_bin(&w, pk[3], 32);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 8);
	ok(inject_w(1, 0, &w) < 0, "open: an OPEN whose id is not the hash of its content rejected");
	pump();
	{
		weft_mpw_reset(&reply);
		nodes[1].ops->query(nodes[1].state, "channel.list", NULL, 0, &reply);
		json_t *j = NULL;
		weft_mp_buf_to_json(reply.buf, reply.len, &j);
		ok(json_array_size(j) == nch, "open: ... and leaves no channel behind (node 1 lists %zu, had %zu)",
		   json_array_size(j), nch);
		json_decref(j);
	}
	weft_mpw_free(&reply);

	/* 3. a receiver hosted with its payer */
	struct tch Lc;
	static const uint32_t kc[3] = {0, 1, 3};
	static const uint64_t dc[3] = {10, 20, 30};
	tch_init(&Lc, 3, kc, dc);
	ok(open_channel(&Lc, 0), "local: a channel with members 1 and 2 both on node 1 opens");
	int rec = ev_count(1, "payment", "received", NULL);
	ok(pay_ok(&Lc, 1, 2, 4) && agree(&Lc), "local: member 1 pays member 2 (one node)");
	ok(ev_count(1, "payment", "received", NULL) == rec + 1, "local: a \"received\" event for the receiver");
	ok(ask_root(&Lc, 0), "local: a root of it asked");
	pump();
	ok(roots_agree(&Lc, 1), "local: rooted everywhere");
	int lrc = close_cmd(&Lc, 1, false, why, sizeof(why));
	ok(lrc == 0, "local: node 1 can close at once, no consent left outstanding (refused: %s)", lrc ? why : "-");
	if (lrc != 0) {
		advance(cur.tick_ms);
		ok(close_cmd(&Lc, 1, false, why, sizeof(why)) == 0, "local: after a tick it can");
	}
	pump();

	/* 4. a consent left outstanding by a payer that timed out: forgotten
	 * after 3 timeouts */
	struct tch K;
	static const uint32_t kk[2] = {5, 1};
	static const uint64_t dk[2] = {50, 51};
	tch_init(&K, 2, kk, dk);
	ok(open_channel(&K, 0), "outstanding: a channel of members on nodes 0 and 1 opens");
	rule_add(MSG_CONSENT, 1, 0, DROP, -1);
	int to = ev_count(0, "payment", "timeout", NULL);
	pay_cmd(&K, 0, 1, 5, NULL, 0);
	pump();
	advance(cur.timeout_ms + 5 * cur.tick_ms);
	rules_clear();
	ok(ev_count(0, "payment", "timeout", NULL) == to + 1 && agree(&K),
	   "outstanding: every CONSENT lost, the payer's proposal timed out; nothing applied");
	advance(10 * cur.timeout_ms);
	int rc = close_cmd(&K, 1, false, why, sizeof(why));
	ok(rc == 0, "outstanding: the receiver's node can then close cooperatively (%s)", rc ? why : "-");

	/* 5. a proposal carrying the payments ahead of it to a node that
	 * signed the cooperative close */
	struct tch T;
	static const uint32_t kt[3] = {0, 1, 2};
	static const uint64_t dt[3] = {100, 100, 100};
	tch_init(&T, 3, kt, dt);
	ok(open_channel(&T, 0), "ahead: a channel on nodes 0, 1, 2 opens");
	rule_add(MSG_CLOSE_ASK, 1, -1, DROP, -1);
	rc = close_cmd(&T, 1, false, why, sizeof(why));
	pump();
	rules_clear();
	ok(rc == 0 && strcmp(info_status(1, T.id), "closing") == 0,
	   "ahead: node 1 signs a cooperative close (its asks are lost: the others stay open)");
	int refused = ev_count(0, "payment", "refused", "closing");
	pay_cmd(&T, 0, 1, 5, NULL, 0);
	pump();
	is_int(ev_count(0, "payment", "refused", "closing"), refused + 1,
	       "ahead: member 0's proposal to member 1 refused (closing)");
	unsigned cons = sent_total(1, 0, MSG_CONSENT);
	int rc1 = pay_cmd(&T, 0, 2, 5, NULL, 0), rc2 = pay_cmd(&T, 0, 1, 6, NULL, 0);
	pump();
	ok(rc1 == 0 && rc2 == 0, "ahead: member 0 pipelines a payment to member 2, then one to member 1");
	ok(sent_total(1, 0, MSG_CONSENT) == cons,
	   "ahead: node 1 (closing) refuses the proposal carrying a payment ahead of it too");
	ok(info_member(1, T.id, 1, "balance") == 100,
	   "ahead: nothing paid to member 1 after its node signed the close (balance %lld)",
	   info_member(1, T.id, 1, "balance"));

	/* 6. a consent forgotten, the close signed, then the payment finalized */
	struct tch F;
	static const uint32_t kf[2] = {5, 1};
	static const uint64_t df[2] = {50, 60};
	tch_init(&F, 2, kf, df);
	ok(open_channel(&F, 0), "late: a channel of members on nodes 0 and 1 opens");
	rule_add(MSG_CONSENT, 1, 0, DROP, -1);
	pay_cmd(&F, 0, 1, 7, NULL, 0);
	pump();
	rules_clear();
	struct weft_channel_payment lp;
	memset(&lp, 0, sizeof(lp));
	lp.from = 0, lp.seq = 1, lp.to = 1, lp.amount = 7;
	uint8_t lh[32], lm[32];
	weft_channel_payment_hash(chain_test, F.id, &lp, lh);
	advance(4 * cur.timeout_ms);
	ok(info_get(1, F.id, "consents_outstanding") == 0 && close_cmd(&F, 1, false, why, sizeof(why)) == 0,
	   "late: member 1's consent to member 0's payment forgotten, node 1 asks to close");
	size_t ntx = nodes[1].ntx;
	pump();
	ok(nodes[1].ntx == ntx + 1 && strcmp(info_status(1, F.id), "closing") == 0,
	   "late: both signed the close at root 0, submitted");
	/* member 0 (its key) now signs the payment member 1 consented to */
	ksign(5, lh, lp.sig);
	weft_channel_consent_hash(lh, lm);
	ksign(1, lm, lp.consent);
	rec = ev_count(1, "payment", "received", NULL);
	msg_with_payment(&w, MSG_FINAL, F.id, &lp);
	inject_w(1, 0, &w);
	pump();
	/* Applied (the hosts' histories must not differ: a newer root may
	 * still cover it), but not reported as received: the close signed may
	 * complete without it. */
	ok(ev_count(1, "payment", "received", NULL) == rec &&
		   ev_count(1, "payment", "received_after_close", NULL) == 1 && info_member(1, F.id, 1, "balance") == 67,
	   "late: a payment finalized after node 1 signed the close is reported received_after_close");

	/* 7. the same late payment in a channel whose opener signs roots: node 1
	 * signs no root that counts it (tla/ChannelPayLateFinal: signing it,
	 * member 1 held a root paying it 67 while the payer could still post
	 * the close paying 60) */
	struct tch G;
	static const uint32_t kg[3] = {0, 1, 6};
	static const uint64_t dg[3] = {10, 60, 50};
	tch_init(&G, 3, kg, dg);
	ok(open_channel(&G, 0), "frozen: a channel of members on nodes 0 (opener), 1 and 2 opens");
	rule_add(MSG_CONSENT, 1, 2, DROP, -1);
	pay_cmd(&G, 2, 1, 7, NULL, 0);
	pump();
	rules_clear();
	advance(4 * cur.timeout_ms);
	ok(close_cmd(&G, 1, false, why, sizeof(why)) == 0, "frozen: member 1's consent forgotten, node 1 asks to close");
	pump();
	ok(strcmp(info_status(0, G.id), "closing") == 0 && strcmp(info_status(1, G.id), "closing") == 0,
	   "frozen: every node signed the close at root 0");
	memset(&lp, 0, sizeof(lp));
	lp.from = 2, lp.seq = 1, lp.to = 1, lp.amount = 7;
	weft_channel_payment_hash(chain_test, G.id, &lp, lh);
	ksign(6, lh, lp.sig);
	weft_channel_consent_hash(lh, lm);
	ksign(1, lm, lp.consent);
	for (uint32_t at = 0; at < 2; at++) {
		msg_with_payment(&w, MSG_FINAL, G.id, &lp);
		inject_w(at, 2, &w);
	}
	pump();
	ok(info_member(1, G.id, 1, "balance") == 67 && info_member(0, G.id, 1, "balance") == 67,
	   "frozen: the late payment applied at nodes 0 and 1");
	unsigned nacks = sent_total(1, 0, MSG_ROOT_NACK);
	ok(ask_root(&G, 0), "frozen: the opener (its member's balance unmoved) builds a root with it");
	pump();
	ok(sent_total(1, 0, MSG_ROOT_NACK) > nacks && info_root_version(1, G.id) == 0 &&
		   info_member(1, G.id, 1, "close_now") == 60,
	   "frozen: node 1 refuses it (ROOT_NACK); its newest root pays member 1 what its close does");
	ok(!ask_root(&G, 1) || info_root_version(1, G.id) == 0, "frozen: and builds none itself");
}

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	keys_init();
	test_wire();

	struct netp flow = {.chain = "test", .root_ms = 1000000, .timeout_ms = 400, .tick_ms = 10, .pipeline = 3};
	net_setup(&flow);
	test_flow();
	test_root();
	test_consents();
	test_proposals();
	test_fetch();
	test_finals();
	test_equivocation();
	test_root_refusals();
	test_timeout();
	test_close();
	test_locks();
	test_asc();
	test_malformed();
	{
		/* still working after all that */
		static const uint32_t keys[3] = {2, 4, 7};
		static const uint64_t dep[3] = {21, 22, 23};
		struct tch V;
		tch_init(&V, 3, keys, dep);
		ok(open_channel(&V, 2) && pay_ok(&V, 0, 1, 5) && pay_ok(&V, 1, 2, 6) && pay_ok(&V, 2, 0, 7) && agree(&V),
		   "after all that: a new channel opens and pays on every node");
	}
	net_teardown();

	struct netp rs = {.chain = "test", .root_ms = 300, .timeout_ms = 3000, .tick_ms = 10, .pipeline = 4};
	net_setup(&rs);
	test_restart();
	test_heads();
	net_teardown();

	struct netp oc = {.chain = "other", .root_ms = 1000000, .timeout_ms = 200, .tick_ms = 10, .pipeline = 4};
	net_setup(&oc);
	test_other_chain_capture();
	net_teardown();

	struct netp kb = {.chain = "test", .root_ms = 1000000, .timeout_ms = 200, .tick_ms = 10, .pipeline = 4};
	net_setup(&kb);
	test_other_chain_replay();
	test_edges();
	net_teardown();
	return done_testing();
}
