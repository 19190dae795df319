/* channel.c - the payment channel service (weft/channel.h,
 * docs/protocols/channels.md): a sans-IO child of the node stack that runs
 * every channel whose members this node hosts.
 *
 *   open     the opener's node proposes (members, hosts, deposits, nonce);
 *            every member signs root 0 (the deposits); once all signed,
 *            every member keeps root 0 and signs the ledger's open, which
 *            the opener submits.  Nothing is locked before a root exists
 *            that any member can post.
 *   pay      proposal -> consent or refusal -> finalized to every member
 *            (paydag.c checks each step); one payment in flight per member.
 *   root     the opener's node proposes a cut of what it holds every
 *            params.channel_root_ms or channel_root_every payments; members
 *            sign once per version; all signatures make it the channel's
 *            newest root.
 *   close    cooperative: every member signs the ledger's close at the
 *            newest root, holding nothing beyond it, and stops there;
 *            unilateral: a member posts its newest root (channel.commit).
 *            The service reads what the ledger executed (command
 *            "channel.ledger" from the node) and answers a stale commit with
 *            a dispute, and a deadline with a settle, on its own.
 *
 * Everything signed or accepted is written to kv in the step that sends
 * it (the host makes the step durable before its messages leave).  kv:
 * 'c' meta, 'r' the newest all-signed root, 'z' root 0, 's' the root
 * signed here last, 'k' + payer + seq a consent given, 'p' payments
 * (paydag.c), 'e' + member evidence; each followed by the id.  A proposal
 * is not kept: the payer signed nothing yet, and a restart forgets it. */
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/util.h"

#include "chan.h"

#define TICK_TIMER 1
#define CLOSE_FALLBACK_US (30 * 1000000ull) /* a cooperative close not on the ledger by then: commit */
#define SETTLE_RETRY_US (3 * 1000000ull)

/* ---- keys, messages, events ---- */

void chan_key(uint8_t *k, char tag, const uint8_t id[32])
{
	k[0] = (uint8_t)tag;
	memcpy(k + 1, id, 32);
}

static void member_key(uint8_t k[37], char tag, const uint8_t id[32], uint32_t m)
{
	chan_key(k, tag, id);
	weft_be32_put(k + 33, m);
}

static int kv_put(struct svc *s, const uint8_t *k, size_t klen, const struct weft_mpw *w)
{
	return s->env->ops->kv_put(s->env, k, klen, w->buf, w->len);
}

static void hex32(char out[65], const uint8_t b[32])
{
	weft_hex_encode(out, b, 32);
}

/* Starts message type for c with `fields` more fields after the id. */
struct weft_mpw *chan_msg_begin(struct svc *s, const struct chan *c, int type, uint32_t fields)
{
	weft_mpw_reset(&s->out);
	weft_mpw_array(&s->out, 3 + fields);
	weft_mpw_uint(&s->out, WEFT_CHANNEL_PROTO_VERSION);
	weft_mpw_uint(&s->out, (uint64_t)type);
	weft_mpw_bin(&s->out, c->id, 32);
	return &s->out;
}

void chan_send_host(struct svc *s, uint32_t host, const char *kind)
{
	if (host != s->env->self) {
		weft_env_send(s->env, host, kind, s->out.buf, s->out.len);
		return;
	}
	if (s->nloc == s->loccap) {
		s->loccap = s->loccap ? 2 * s->loccap : 16;
		s->loc = weft_xrealloc(s->loc, s->loccap, sizeof(*s->loc));
	}
	s->loc[s->nloc].msg = weft_xmalloc(s->out.len);
	memcpy(s->loc[s->nloc].msg, s->out.buf, s->out.len);
	s->loc[s->nloc++].len = s->out.len;
}

void chan_send_member(struct svc *s, const struct chan *c, uint32_t m, const char *kind)
{
	chan_send_host(s, c->host[m], kind);
}

static bool hosts_a_member(const struct chan *c, uint32_t node)
{
	for (uint32_t i = 0; i < c->nhosts; i++)
		if (c->hosts[i] == node)
			return true;
	return false;
}

/* Roots go on while the channel is open, and while a cooperative close is
 * being signed (the close at an older root cannot complete once a payment
 * beyond it exists: a member holding it refuses that close), but not once
 * a root was posted on the ledger. */
static bool roots_allowed(const struct chan *c)
{
	return c->status == CH_ACTIVE || (c->status == CH_CLOSING && c->close_version && !c->commit_seen);
}

/* To every other node hosting a member (except `except`, or UINT32_MAX). */
static void send_hosts(struct svc *s, const struct chan *c, const char *kind, uint32_t except)
{
	for (uint32_t i = 0; i < c->nhosts; i++)
		if (c->hosts[i] != s->env->self && c->hosts[i] != except)
			weft_env_send(s->env, c->hosts[i], kind, s->out.buf, s->out.len);
}

static void event_begin(struct weft_mpw *w, const struct chan *c, const char *event, uint32_t fields)
{
	char hex[65];
	hex32(hex, c->id);
	weft_mpw_map(w, 2 + fields);
	weft_mpw_str(w, "event");
	weft_mpw_str(w, event);
	weft_mpw_str(w, "channel");
	weft_mpw_str(w, hex);
}

void chan_event_end(struct svc *s, struct weft_mpw *w)
{
	if (s->events)
		s->events->emit(s->events->ctx, w->buf, w->len);
	weft_mpw_free(w);
}

void chan_event_payment(struct svc *s, struct chan *c, const char *status, uint32_t from, uint64_t seq, uint32_t to,
			uint64_t amount, const char *reason)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	event_begin(&w, c, "payment", reason ? 6 : 5);
	weft_mpw_str(&w, "status");
	weft_mpw_str(&w, status);
	weft_mpw_str(&w, "from");
	weft_mpw_uint(&w, from);
	weft_mpw_str(&w, "seq");
	weft_mpw_uint(&w, seq);
	weft_mpw_str(&w, "to");
	weft_mpw_uint(&w, to);
	weft_mpw_str(&w, "amount");
	weft_mpw_uint(&w, amount);
	if (reason) {
		weft_mpw_str(&w, "reason");
		weft_mpw_str(&w, reason);
	}
	chan_event_end(s, &w);
	weft_env_metric(s->env, strcmp(status, "finalized") == 0 ? "channel.payments" : "channel.payment_other", 1);
}

void chan_emit_evidence(struct svc *s, struct chan *c, const char *kind, uint32_t member)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	event_begin(&w, c, "evidence", 2);
	weft_mpw_str(&w, "kind");
	weft_mpw_str(&w, kind);
	weft_mpw_str(&w, "member");
	weft_mpw_uint(&w, member);
	chan_event_end(s, &w);
	weft_env_metric(s->env, "channel.evidence", 1);
	weft_env_log(s->env, WEFT_LOG_WARN, "channel.evidence", "member=%u kind=%s", member, kind);
}

static void event_status(struct svc *s, struct chan *c, const char *event, uint64_t version)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	event_begin(&w, c, event, 1);
	weft_mpw_str(&w, "version");
	weft_mpw_uint(&w, version);
	chan_event_end(s, &w);
}

/* ---- persistence ---- */

static int save_meta(struct svc *s, const struct chan *c)
{
	uint8_t k[33];
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 7);
	weft_mpw_uint(&w, c->status);
	weft_mpw_bin(&w, c->nonce, sizeof(c->nonce));
	weft_mpw_uint(&w, c->opener);
	weft_mpw_array(&w, c->n);
	for (uint32_t m = 0; m < c->n; m++) {
		weft_mpw_array(&w, 3);
		weft_mpw_bin(&w, c->key[m], 32);
		weft_mpw_uint(&w, c->host[m]);
		weft_mpw_uint(&w, c->deposit[m]);
	}
	weft_mpw_uint(&w, c->close_version);
	weft_mpw_bool(&w, c->closer);
	weft_mpw_uint(&w, c->disputed_version);
	chan_key(k, 'c', c->id);
	int rc = kv_put(s, k, sizeof(k), &w);
	weft_mpw_free(&w);
	return rc;
}

static void root_encode(const struct chan *c, const struct root *r, struct weft_mpw *w)
{
	uint32_t have = 0;
	for (uint32_t m = 0; m < c->n; m++)
		have += r->have[m];
	weft_mpw_array(w, 5);
	weft_mpw_uint(w, r->version);
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++) {
		weft_mpw_array(w, 2);
		weft_mpw_uint(w, r->seq[m]);
		weft_mpw_bin(w, r->head[m], 32);
	}
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++)
		weft_mpw_uint(w, r->balance[m]);
	weft_ledger_channel_locks_encode(w, r->lock, r->nlocks);
	weft_mpw_array(w, have);
	for (uint32_t m = 0; m < c->n; m++)
		if (r->have[m]) {
			weft_mpw_array(w, 2);
			weft_mpw_uint(w, m);
			weft_mpw_bin(w, r->sig[m], WEFT_LEDGER_SIG_LEN);
		}
}

/* r as the ledger's root (signatures as held). */
static void ledger_root(const struct chan *c, const struct root *r, struct weft_ledger_channel_root *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->id, c->id, 32);
	t->version = r->version;
	t->n = c->n;
	memcpy(t->balance, r->balance, sizeof(uint64_t) * c->n);
	t->nlocks = r->nlocks;
	memcpy(t->lock, r->lock, sizeof(r->lock[0]) * r->nlocks);
	memcpy(t->frontier, r->frontier, 32);
	memcpy(t->sig, r->sig, sizeof(t->sig[0]) * c->n);
}

/* The root hash and frontier of r's cut, balances and locks. */
static void root_seal(struct svc *s, const struct chan *c, struct root *r)
{
	struct weft_ledger_channel_root t;
	weft_channel_frontier(c->n, r->seq, (const uint8_t(*)[32])r->head, r->frontier);
	ledger_root(c, r, &t);
	weft_ledger_channel_root_sighash(s->chain_key, &t, r->hash);
}

/* Reads [[seq, head] x n]. */
static int read_cut(struct weft_mp_reader *rd, uint32_t n, uint64_t *seq, uint8_t (*head)[32])
{
	uint32_t count, two;
	if (weft_mp_read_array(rd, &count) != 0 || count != n)
		return WEFT_EDECODE;
	for (uint32_t m = 0; m < n; m++)
		if (weft_mp_read_array(rd, &two) != 0 || two != 2 || weft_mp_read_uint(rd, &seq[m]) != 0 ||
		    weft_mp_read_bin_fixed(rd, head[m], 32) != 0)
			return WEFT_EDECODE;
	return 0;
}

/* Reads [[member, sig]...] into r (marking have). */
static int read_member_sigs(struct weft_mp_reader *rd, uint32_t n, uint8_t (*sig)[WEFT_LEDGER_SIG_LEN], bool *have)
{
	uint32_t count, two, m;
	if (weft_mp_read_array(rd, &count) != 0 || count > n)
		return WEFT_EDECODE;
	for (uint32_t i = 0; i < count; i++) {
		if (weft_mp_read_array(rd, &two) != 0 || two != 2 || weft_mp_read_u32(rd, &m) != 0 || m >= n ||
		    weft_mp_read_bin_fixed(rd, sig[m], WEFT_LEDGER_SIG_LEN) != 0)
			return WEFT_EDECODE;
		have[m] = true;
	}
	return 0;
}

static int root_decode(const struct chan *c, const void *v, size_t vlen, struct root *r)
{
	struct weft_mp_reader rd;
	uint32_t count;
	memset(r, 0, sizeof(*r));
	weft_mp_reader_init(&rd, v, vlen);
	if (weft_mp_read_array(&rd, &count) != 0 || count != 5 || weft_mp_read_uint(&rd, &r->version) != 0 ||
	    read_cut(&rd, c->n, r->seq, r->head) != 0 || weft_mp_read_array(&rd, &count) != 0 || count != c->n)
		return WEFT_ECORRUPT;
	for (uint32_t m = 0; m < c->n; m++)
		if (weft_mp_read_uint(&rd, &r->balance[m]) != 0)
			return WEFT_ECORRUPT;
	if (weft_ledger_channel_locks_read(&rd, c->n, r->lock, &r->nlocks) != 0)
		return WEFT_ECORRUPT;
	if (read_member_sigs(&rd, c->n, r->sig, r->have) != 0)
		return WEFT_ECORRUPT;
	return 0;
}

static int save_root(struct svc *s, const struct chan *c, char tag, const struct root *r)
{
	uint8_t k[33];
	struct weft_mpw w;
	weft_mpw_init(&w);
	root_encode(c, r, &w);
	chan_key(k, tag, c->id);
	int rc = kv_put(s, k, sizeof(k), &w);
	weft_mpw_free(&w);
	return rc;
}

/* ---- channels in memory ---- */

struct chan *chan_find(struct svc *s, const uint8_t id[32])
{
	for (size_t i = 0; i < s->nch; i++)
		if (memcmp(s->ch[i]->id, id, 32) == 0)
			return s->ch[i];
	return NULL;
}

void chan_arm_tick(struct svc *s)
{
	if (!s->ticking) {
		s->ticking = true;
		s->env->ops->set_timer(s->env, TICK_TIMER, s->tick_us);
	}
}

static struct chan *chan_new(struct svc *s)
{
	struct chan *c = weft_xcalloc(1, sizeof(*c));
	if (s->nch == s->chcap) {
		s->chcap = s->chcap ? 2 * s->chcap : 8;
		s->ch = weft_xrealloc(s->ch, s->chcap, sizeof(*s->ch));
	}
	s->ch[s->nch++] = c;
	chan_arm_tick(s);
	return c;
}

/* Members, hosts, ours, chains: after c->n and the members are set. */
static void chan_setup(struct svc *s, struct chan *c)
{
	c->nhosts = 0;
	for (uint32_t m = 0; m < c->n; m++) {
		c->ours[m] = c->host[m] == s->env->self;
		uint32_t i = 0;
		while (i < c->nhosts && c->hosts[i] != c->host[m])
			i++;
		if (i == c->nhosts)
			c->hosts[c->nhosts++] = c->host[m];
		c->chain[m].counted = weft_xcalloc(c->n, sizeof(uint64_t));
		c->chain[m].last_to = weft_xcalloc(c->n, sizeof(uint64_t));
	}
	memset(&c->latest, 0, sizeof(c->latest));
	c->latest.version = 0;
	memcpy(c->latest.balance, c->deposit, sizeof(uint64_t) * c->n);
	c->last_root_us = weft_env_now(s->env);
}

/* Root 0: the deposits, nothing paid. */
static void root_zero(struct svc *s, const struct chan *c, struct root *r)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->balance, c->deposit, sizeof(uint64_t) * c->n);
	root_seal(s, c, r);
}

static int member_sign(struct svc *s, const struct chan *c, uint32_t m, const uint8_t msg[32],
		       uint8_t sig[WEFT_LEDGER_SIG_LEN])
{
	return s->wallets->sign(s->wallets->ctx, c->key[m], msg, sig);
}

static int member_verify(struct svc *s, const struct chan *c, uint32_t m, const uint8_t msg[32],
			 const uint8_t sig[WEFT_LEDGER_SIG_LEN])
{
	return s->wallets->verify(s->wallets->ctx, c->key[m], msg, sig);
}

/* Signs msg for every member hosted here into sig/have.  0, or the
 * wallet's error (a member this node was said to host but does not). */
static int sign_ours(struct svc *s, const struct chan *c, const uint8_t msg[32], uint8_t (*sig)[WEFT_LEDGER_SIG_LEN],
		     bool *have)
{
	for (uint32_t m = 0; m < c->n; m++)
		if (c->ours[m]) {
			int rc = member_sign(s, c, m, msg, sig[m]);
			if (rc != 0)
				return rc;
			have[m] = true;
		}
	return 0;
}

static bool all_have(const struct chan *c, const bool *have)
{
	for (uint32_t m = 0; m < c->n; m++)
		if (!have[m])
			return false;
	return true;
}

static void write_our_sigs(struct weft_mpw *w, const struct chan *c, const uint8_t (*sig)[WEFT_LEDGER_SIG_LEN])
{
	uint32_t count = 0;
	for (uint32_t m = 0; m < c->n; m++)
		count += c->ours[m];
	weft_mpw_array(w, count);
	for (uint32_t m = 0; m < c->n; m++)
		if (c->ours[m]) {
			weft_mpw_array(w, 2);
			weft_mpw_uint(w, m);
			weft_mpw_bin(w, sig[m], WEFT_LEDGER_SIG_LEN);
		}
}

void chan_submit(struct svc *s, const struct weft_mpw *tx)
{
	struct weft_delivery d = {.origin = s->env->self, .seq = 0, .data = tx->buf, .len = tx->len};
	s->env->ops->deliver(s->env, &d);
}

static const struct weft_ledger *ledger(struct svc *s)
{
	return s->env->ops->service ? s->env->ops->service(s->env, WEFT_LEDGER_SERVICE) : NULL;
}

uint64_t chan_height(struct svc *s)
{
	const struct weft_ledger *l = ledger(s);
	return l ? l->height : 0;
}

/* ---- open ---- */

static void open_tx(const struct chan *c, struct weft_ledger_channel_open *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->nonce, c->nonce, sizeof(o->nonce));
	o->n = c->n;
	for (uint32_t m = 0; m < c->n; m++) {
		memcpy(o->member[m], c->key[m], 32);
		o->deposit[m] = c->deposit[m];
		memcpy(o->sig[m], c->open_sig[m], WEFT_LEDGER_SIG_LEN);
	}
}

static void send_open(struct svc *s, const struct chan *c)
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_OPEN, 3);
	weft_mpw_bin(w, c->nonce, sizeof(c->nonce));
	weft_mpw_uint(w, c->opener);
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++) {
		weft_mpw_array(w, 3);
		weft_mpw_bin(w, c->key[m], 32);
		weft_mpw_uint(w, c->host[m]);
		weft_mpw_uint(w, c->deposit[m]);
	}
	send_hosts(s, c, "channel.open", UINT32_MAX);
}

static void send_root0(struct svc *s, const struct chan *c, uint32_t to_host)
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_ROOT0, 1);
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++)
		weft_mpw_bin(w, c->latest.sig[m], WEFT_LEDGER_SIG_LEN);
	if (to_host == UINT32_MAX)
		send_hosts(s, c, "channel.root0", UINT32_MAX);
	else
		chan_send_host(s, to_host, "channel.root0");
}

/* Our members' signatures of the ledger's open (root 0 is all-signed). */
static int sign_open(struct svc *s, struct chan *c)
{
	struct weft_ledger_channel_open o;
	uint8_t msg[32];
	open_tx(c, &o);
	weft_ledger_channel_open_sighash(s->chain_key, &o, msg);
	return sign_ours(s, c, msg, c->open_sig, c->open_have);
}

static void maybe_submit_open(struct svc *s, struct chan *c)
{
	if (c->opener >= c->n || !c->ours[c->opener] || c->open_sent || !all_have(c, c->open_have))
		return;
	struct weft_ledger_channel_open o;
	struct weft_mpw w;
	open_tx(c, &o);
	weft_mpw_init(&w);
	weft_ledger_channel_open_encode(&o, &w);
	chan_submit(s, &w);
	weft_mpw_free(&w);
	c->open_sent = true;
	weft_env_log(s->env, WEFT_LOG_INFO, "channel.open_submitted", "members=%u", c->n);
}

/* Root 0 holds every signature: keep it, sign the open. */
static int root0_done(struct svc *s, struct chan *c)
{
	c->status = CH_OPENING;
	int rc = save_root(s, c, 'r', &c->latest);
	if (rc == 0)
		rc = save_root(s, c, 'z', &c->latest); /* kept for the stale strategy, and as the first backup */
	if (rc == 0)
		rc = save_meta(s, c);
	if (rc == 0)
		rc = sign_open(s, c);
	return rc;
}

struct open_arg {
	uint32_t n;
	uint8_t key[WEFT_CHANNEL_MAX][32];
	uint32_t host[WEFT_CHANNEL_MAX];
	uint64_t deposit[WEFT_CHANNEL_MAX];
};

/* Members, hosts and deposits: distinct valid keys, hosts in the
 * committee, deposits of at least 1 adding up.  0 or *why. */
static int open_arg_check(struct svc *s, const struct open_arg *a, const char **why)
{
	uint64_t total = 0;
	if (a->n < 2 || a->n > WEFT_CHANNEL_MAX) {
		*why = "a channel has 2 to 255 members";
		return WEFT_EINVAL;
	}
	for (uint32_t m = 0; m < a->n; m++) {
		if (weft_ledger_pubkey_check(a->key[m]) != 0) {
			*why = "a member is not a valid x-only public key";
			return WEFT_EINVAL;
		}
		for (uint32_t i = 0; i < m; i++)
			if (memcmp(a->key[i], a->key[m], 32) == 0) {
				*why = "a member appears twice";
				return WEFT_EINVAL;
			}
		if (a->host[m] >= s->env->n) {
			*why = "a host is not a committee node";
			return WEFT_EINVAL;
		}
		if (a->deposit[m] == 0 || total + a->deposit[m] < total) {
			*why = "deposits must be at least 1 and add up below 2^64";
			return WEFT_EINVAL;
		}
		total += a->deposit[m];
	}
	return 0;
}

/* The channel id of an open: the ledger's hash of it. */
static void open_id(struct svc *s, const struct open_arg *a, const uint8_t nonce[16], uint8_t id[32])
{
	struct weft_ledger_channel_open o;
	memset(&o, 0, sizeof(o));
	memcpy(o.nonce, nonce, sizeof(o.nonce));
	o.n = a->n;
	for (uint32_t m = 0; m < a->n; m++) {
		memcpy(o.member[m], a->key[m], 32);
		o.deposit[m] = a->deposit[m];
	}
	weft_ledger_channel_id(s->chain_key, &o, id);
}

/* A new channel from a checked open; status SIGNING, root 0 signed by our
 * members (into build). */
static int chan_create(struct svc *s, const struct open_arg *a, const uint8_t nonce[16], uint32_t opener,
		       struct chan **out, const char **why)
{
	uint8_t id[32];
	open_id(s, a, nonce, id);
	if (chan_find(s, id)) {
		*why = "channel exists";
		return WEFT_EEXIST;
	}
	struct chan *c = chan_new(s);
	memcpy(c->id, id, 32);
	memcpy(c->nonce, nonce, sizeof(c->nonce));
	c->n = a->n;
	c->opener = opener;
	memcpy(c->key, a->key, sizeof(c->key[0]) * a->n);
	memcpy(c->host, a->host, sizeof(uint32_t) * a->n);
	memcpy(c->deposit, a->deposit, sizeof(uint64_t) * a->n);
	chan_setup(s, c);
	c->status = CH_SIGNING;
	root_zero(s, c, &c->build);
	c->building = true;
	c->build_started_us = weft_env_now(s->env);
	int rc = sign_ours(s, c, c->build.hash, c->build.sig, c->build.have);
	if (rc != 0) {
		*why = "a member said to be hosted here is not among this node's wallets";
		s->nch--; /* the new channel is last */
		paydag_free(c);
		free(c);
		return rc;
	}
	c->signing = c->build;
	c->signed_pending = true;
	rc = save_meta(s, c);
	if (rc == 0)
		rc = save_root(s, c, 's', &c->signing);
	*out = c;
	return rc;
}

static void send_open_sigs(struct svc *s, const struct chan *c, int stage, const uint8_t (*sig)[WEFT_LEDGER_SIG_LEN])
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_OPEN_SIGS, 2);
	weft_mpw_uint(w, (uint64_t)stage);
	write_our_sigs(w, c, sig);
	chan_send_member(s, c, c->opener, "channel.open_sigs");
}

/* Root 0's signatures reached the opener: complete it when all are in. */
static int root0_collect(struct svc *s, struct chan *c)
{
	if (c->status != CH_SIGNING || !all_have(c, c->build.have))
		return 0;
	c->latest = c->build;
	c->building = false;
	c->signed_pending = false;
	int rc = root0_done(s, c);
	if (rc != 0)
		return rc;
	send_root0(s, c, UINT32_MAX);
	maybe_submit_open(s, c);
	return 0;
}

static int on_open(struct svc *s, uint32_t from, const uint8_t id[32], struct weft_mp_reader *r)
{
	struct open_arg a;
	uint8_t nonce[16];
	uint32_t opener, count, three;
	memset(&a, 0, sizeof(a));
	if (weft_mp_read_bin_fixed(r, nonce, sizeof(nonce)) != 0 || weft_mp_read_u32(r, &opener) != 0 ||
	    weft_mp_read_array(r, &count) != 0 || count < 2 || count > WEFT_CHANNEL_MAX)
		return WEFT_EDECODE;
	a.n = count;
	for (uint32_t m = 0; m < count; m++)
		if (weft_mp_read_array(r, &three) != 0 || three != 3 || weft_mp_read_bin_fixed(r, a.key[m], 32) != 0 ||
		    weft_mp_read_u32(r, &a.host[m]) != 0 || weft_mp_read_uint(r, &a.deposit[m]) != 0)
			return WEFT_EDECODE;
	const char *why;
	uint8_t want[32];
	if (opener >= a.n || a.host[opener] != from || open_arg_check(s, &a, &why) != 0)
		return WEFT_EPROTO;
	open_id(s, &a, nonce, want);
	if (memcmp(want, id, 32) != 0)
		return WEFT_EPROTO; /* the message names another channel than its open */
	struct chan *c = chan_find(s, id);
	if (c == NULL) {
		bool hosted = false;
		for (uint32_t m = 0; m < a.n; m++)
			hosted |= a.host[m] == s->env->self;
		if (!hosted)
			return WEFT_EPROTO;
		int rc = chan_create(s, &a, nonce, opener, &c, &why);
		if (rc != 0) {
			weft_env_log(s->env, WEFT_LOG_WARN, "channel.open_refused", "from=%u why=\"%s\"", from, why);
			return rc == WEFT_EEXIST ? 0 : rc;
		}
		c->building = false; /* only the opener collects */
	}
	if (c->status == CH_SIGNING)
		send_open_sigs(s, c, 0, (const uint8_t(*)[WEFT_LEDGER_SIG_LEN])c->signing.sig);
	return 0;
}

static int on_open_sigs(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t stage;
	uint8_t sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
	bool have[WEFT_CHANNEL_MAX] = {false};
	if (weft_mp_read_uint(r, &stage) != 0 || stage > 1 || read_member_sigs(r, c->n, sig, have) != 0)
		return WEFT_EDECODE;
	if (!c->ours[c->opener])
		return 0;
	uint8_t msg[32];
	if (stage == 1) {
		struct weft_ledger_channel_open o;
		open_tx(c, &o);
		weft_ledger_channel_open_sighash(s->chain_key, &o, msg);
	}
	for (uint32_t m = 0; m < c->n; m++) {
		if (!have[m])
			continue;
		if (c->host[m] != from || member_verify(s, c, m, stage == 0 ? c->build.hash : msg, sig[m]) != 0)
			return WEFT_ECRYPTO;
		if (stage == 0 && c->status == CH_SIGNING) {
			memcpy(c->build.sig[m], sig[m], WEFT_LEDGER_SIG_LEN);
			c->build.have[m] = true;
		} else if (stage == 1) {
			memcpy(c->open_sig[m], sig[m], WEFT_LEDGER_SIG_LEN);
			c->open_have[m] = true;
		}
	}
	if (stage == 0)
		return root0_collect(s, c);
	maybe_submit_open(s, c);
	return 0;
}

static int on_root0(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t count;
	struct root z;
	if (weft_mp_read_array(r, &count) != 0 || count != c->n)
		return WEFT_EDECODE;
	root_zero(s, c, &z);
	for (uint32_t m = 0; m < c->n; m++) {
		if (weft_mp_read_bin_fixed(r, z.sig[m], WEFT_LEDGER_SIG_LEN) != 0)
			return WEFT_EDECODE;
		if (member_verify(s, c, m, z.hash, z.sig[m]) != 0)
			return WEFT_ECRYPTO;
		z.have[m] = true;
	}
	if (from != c->host[c->opener])
		return WEFT_EPROTO;
	if (c->status == CH_SIGNING) {
		c->latest = z;
		c->signed_pending = false;
		int rc = root0_done(s, c);
		if (rc != 0)
			return rc;
	}
	if (c->status == CH_OPENING)
		send_open_sigs(s, c, 1, (const uint8_t(*)[WEFT_LEDGER_SIG_LEN])c->open_sig);
	return 0;
}

/* ---- payments ---- */

static void send_refuse(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const uint8_t h[32],
			const char *why)
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_REFUSE, 4);
	weft_mpw_uint(w, p->from);
	weft_mpw_uint(w, p->seq);
	weft_mpw_bin(w, h, 32);
	weft_mpw_str(w, why);
	chan_send_member(s, c, p->from, "channel.refuse");
}

static void send_consent(struct svc *s, struct chan *c, const struct weft_channel_payment *p, const uint8_t h[32],
			 const uint8_t consent[WEFT_LEDGER_SIG_LEN])
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_CONSENT, 4);
	weft_mpw_uint(w, p->from);
	weft_mpw_uint(w, p->seq);
	weft_mpw_bin(w, h, 32);
	weft_mpw_bin(w, consent, WEFT_LEDGER_SIG_LEN);
	chan_send_member(s, c, p->from, "channel.consent");
}

static void send_fetch(struct svc *s, struct chan *c, uint32_t host, uint32_t member, uint64_t upto)
{
	uint64_t first = c->chain[member].np + 1, t = weft_env_now(s->env);
	if (upto < first)
		return;
	/* Asked for already, a moment ago: the answer is on its way. */
	if (upto <= c->fetch_upto[member] && t - c->fetch_us[member] < s->root_us / 2)
		return;
	c->fetch_upto[member] = upto;
	c->fetch_us[member] = t;
	if (upto - first >= WEFT_CHANNEL_FETCH_MAX)
		upto = first + WEFT_CHANNEL_FETCH_MAX - 1;
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_FETCH, 3);
	weft_mpw_uint(w, member);
	weft_mpw_uint(w, first);
	weft_mpw_uint(w, upto);
	chan_send_host(s, host, "channel.fetch");
}

/* Keeps msg (from node `from`) to run again once fetched payments arrive;
 * member and seq order the reruns (a payment's, or UINT32_MAX and a root
 * version). */
static void stash(struct svc *s, struct chan *c, uint32_t from, const uint8_t *msg, size_t len, uint32_t member,
		  uint64_t seq)
{
	while (c->nstash && (c->nstash == STASH_MAX || c->stash_bytes + len > STASH_BYTES)) {
		c->stash_bytes -= c->stash[0].len;
		free(c->stash[0].msg);
		memmove(&c->stash[0], &c->stash[1], sizeof(c->stash[0]) * --c->nstash);
	}
	if (c->nstash == c->stashcap) {
		c->stashcap = c->stashcap ? 2 * c->stashcap : 16;
		c->stash = weft_xrealloc(c->stash, c->stashcap, sizeof(*c->stash));
	}
	struct stashed *t = &c->stash[c->nstash++];
	t->from = from;
	t->member = member;
	t->seq = seq;
	t->msg = weft_xmalloc(len);
	memcpy(t->msg, msg, len);
	t->len = len;
	t->since_us = weft_env_now(s->env);
	c->stash_bytes += len;
}

static int handle(struct svc *s, uint32_t from, const uint8_t *msg, size_t len);

/* Runs the stashed messages again (after payments arrived); those still
 * missing something are stashed again, keeping their age.  A pass may
 * apply what an earlier message in it waited for: passes repeat while one
 * makes progress (at most UNSTASH_PASSES; the tick runs them again). */
#define UNSTASH_PASSES 16
static int stash_order(const void *a, const void *b)
{
	const struct stashed *x = a, *y = b;
	if (x->member != y->member)
		return x->member < y->member ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void unstash(struct svc *s, struct chan *c)
{
	if (c->unstashing)
		return; /* the outer pass sees what this one would */
	c->unstashing = true;
	for (int pass = 0; pass < UNSTASH_PASSES && c->nstash; pass++) {
		uint32_t count = c->nstash;
		uint64_t applied = c->applied, version = c->latest.version;
		struct stashed *held = c->stash;
		c->stash = NULL;
		c->nstash = c->stashcap = 0;
		c->stash_bytes = 0;
		qsort(held, count, sizeof(*held), stash_order);
		for (uint32_t i = 0; i < count; i++) {
			uint32_t before = c->nstash;
			handle(s, held[i].from, held[i].msg, held[i].len);
			if (c->nstash > before)
				c->stash[c->nstash - 1].since_us = held[i].since_us;
			free(held[i].msg);
		}
		free(held);
		if (c->nstash == count && c->applied == applied && c->latest.version == version)
			break; /* nothing moved: wait for more payments */
	}
	c->unstashing = false;
}

#define GIVEN_KEY_LEN (1 + 32 + 4 + 8)

static void given_key(uint8_t k[GIVEN_KEY_LEN], const uint8_t id[32], uint32_t payer, uint64_t seq)
{
	member_key(k, 'k', id, payer);
	weft_be64_put(k + 37, seq);
}

static struct given *find_given(struct chan *c, uint32_t payer, uint64_t seq)
{
	for (uint32_t i = 0; i < c->ngiven; i++)
		if (c->given[i].payer == payer && c->given[i].seq == seq)
			return &c->given[i];
	return NULL;
}

static void note_given(struct svc *s, struct chan *c, uint32_t payer, uint64_t seq)
{
	if (find_given(c, payer, seq))
		return;
	if (c->ngiven == c->givencap) {
		c->givencap = c->givencap ? 2 * c->givencap : 16;
		c->given = weft_xrealloc(c->given, c->givencap, sizeof(*c->given));
	}
	c->given[c->ngiven++] = (struct given){payer, seq, weft_env_now(s->env)};
}

/* Forgets a consent given: its payment was applied, or it is long stale
 * (the payer gave up: a consent binds only the one who gave it). */
static void forget_given(struct svc *s, struct chan *c, uint32_t i)
{
	uint8_t k[GIVEN_KEY_LEN];
	given_key(k, c->id, c->given[i].payer, c->given[i].seq);
	s->env->ops->kv_del(s->env, k, sizeof(k));
	c->given[i] = c->given[--c->ngiven];
}

/* Records the consent given for p (re-sent when the proposal comes again)
 * before it leaves. */
static int save_consent(struct svc *s, struct chan *c, const struct weft_channel_payment *p)
{
	uint8_t k[GIVEN_KEY_LEN];
	struct weft_mpw w;
	weft_mpw_init(&w);
	given_key(k, c->id, p->from, p->seq);
	weft_channel_payment_encode(p, &w);
	int rc = kv_put(s, k, sizeof(k), &w);
	weft_mpw_free(&w);
	if (rc == 0)
		note_given(s, c, p->from, p->seq);
	return rc;
}

/* The consent given for (payer, seq), when it was for the payment hashed h. */
static bool consent_given(struct svc *s, struct chan *c, uint32_t payer, uint64_t seq, const uint8_t h[32],
			  uint8_t consent[WEFT_LEDGER_SIG_LEN])
{
	uint8_t k[GIVEN_KEY_LEN], h2[32];
	const void *v;
	size_t vlen;
	struct weft_channel_payment p;
	struct weft_mp_reader r;
	given_key(k, c->id, payer, seq);
	if (s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen) != 0)
		return false;
	weft_mp_reader_init(&r, v, vlen);
	if (weft_channel_payment_read(&r, c->n, &p) != 0)
		return false;
	weft_channel_payment_hash(s->chain_key, c->id, &p, h2);
	if (memcmp(h, h2, 32) != 0)
		return false;
	memcpy(consent, p.consent, WEFT_LEDGER_SIG_LEN);
	return true;
}

/* [1, PROPOSE, id, payment, [ahead...], [hop...]]: ahead are the payer's
 * payments in flight before this one (unsigned, not applied here yet),
 * which the balance check counts as spent; hops, only for a LOCK, the
 * route on from its payee (lock.c).  A proposal with none ahead and no
 * hops may omit both. */
static int on_propose(struct svc *s, struct chan *c, uint32_t from, const uint8_t *msg, size_t len,
		      struct weft_mp_reader *r, uint32_t fields)
{
	struct weft_channel_payment p;
	struct route rt = {0};
	uint8_t h[32];
	uint32_t nahead = 0;
	if (weft_channel_payment_read(r, c->n, &p) != 0 ||
	    (fields >= 2 && (weft_mp_read_array(r, &nahead) != 0 || nahead > CHANNEL_PIPELINE_MAX)))
		return WEFT_EDECODE;
	if (c->host[p.from] != from || !c->ours[p.to])
		return WEFT_EPROTO;
	weft_channel_payment_hash(s->chain_key, c->id, &p, h);
	const char *why = NULL;
	uint32_t missing = 0;
	uint64_t upto = 0;
	if (c->status != CH_ACTIVE)
		why = c->status < CH_ACTIVE ? "not_open" : "closing";
	else if (c->chain[p.from].equivocated)
		why = "equivocator";
	if (why) {
		send_refuse(s, c, &p, h, why);
		return 0;
	}
	struct paytail t;
	paydag_tail_init(c, p.from, &t);
	int rc = 0;
	for (uint32_t i = 0; i < nahead && rc == 0; i++) {
		struct weft_channel_payment a;
		uint8_t ah[32];
		if (weft_channel_payment_read(r, c->n, &a) != 0 || a.from != p.from) {
			rc = WEFT_EDECODE;
			break;
		}
		weft_channel_payment_hash(s->chain_key, c->id, &a, ah);
		rc = paydag_tail_check(s, c, &t, &a, ah, CHECK_NONE, &why, &missing, &upto);
		if (rc == WEFT_EEXIST) { /* finalized since: already in the chain */
			rc = 0;
			why = NULL;
		}
	}
	if (rc == 0 && fields == 3 && (p.kind != WEFT_CHANNEL_LOCK || lock_route_read(r, &rt) != 0))
		rc = WEFT_EDECODE;
	if (rc == 0 && why == NULL) {
		uint8_t given[WEFT_LEDGER_SIG_LEN];
		if (consent_given(s, c, p.from, p.seq, h, given)) { /* asked again: the same answer */
			paydag_tail_free(&t);
			send_consent(s, c, &p, h, given);
			return 0;
		}
		rc = paydag_tail_check(s, c, &t, &p, h, CHECK_NONE, &why, &missing, &upto);
	}
	paydag_tail_free(&t);
	if (rc == WEFT_EDECODE)
		return rc;
	if (rc == WEFT_EEXIST) { /* applied already: the consent again */
		struct weft_channel_payment held;
		if (paydag_load(s, c, p.from, p.seq, &held) == 0)
			send_consent(s, c, &p, h, held.consent);
		return 0;
	}
	if (rc == WEFT_NOTFOUND) {
		send_fetch(s, c, from, missing, upto);
		stash(s, c, from, msg, len, p.from, p.seq);
		return 0;
	}
	if (why) {
		send_refuse(s, c, &p, h, why);
		weft_env_metric(s->env, "channel.refused", 1);
		return 0;
	}
	if ((why = lock_consent_check(s, c, &p, &rt)) != NULL) {
		send_refuse(s, c, &p, h, why);
		weft_env_metric(s->env, "channel.refused", 1);
		return 0;
	}
	uint8_t m[32];
	weft_channel_consent_hash(h, m);
	rc = member_sign(s, c, p.to, m, p.consent);
	if (rc == 0)
		rc = save_consent(s, c, &p);
	if (rc == 0 && rt.n)
		rc = lock_keep_route(s, c, &p, &rt);
	if (rc != 0)
		return rc;
	send_consent(s, c, &p, h, p.consent);
	return 0;
}

/* A payment applied here to a member hosted here: its consent is settled,
 * and the member is told.  One that arrives after this node signed a
 * cooperative close (only a payer that signed it too can send one) is paid
 * only if a newer root covers it: the event says so. */
static void received_here(struct svc *s, struct chan *c, const struct weft_channel_payment *p)
{
	if (!c->ours[p->to])
		return;
	struct given *g = find_given(c, p->from, p->seq);
	if (g)
		forget_given(s, c, (uint32_t)(g - c->given));
	static const char *const status[] = {"received", "lock_received", "unlocked_to_us", "refund_agreed"};
	chan_event_payment(s, c, c->close_version ? "received_after_close" : status[p->kind], p->from, p->seq, p->to,
			   p->amount, NULL);
}

/* The finalized payment p (hash h) to every member; applied here. */
static int finalize(struct svc *s, struct chan *c, struct weft_channel_payment *p, const uint8_t h[32])
{
	int rc = paydag_apply(s, c, p, h);
	if (rc != 0)
		return rc;
	received_here(s, c, p);
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_FINAL, 1);
	weft_channel_payment_encode(p, w);
	send_hosts(s, c, "channel.final", UINT32_MAX);
	return lock_applied(s, c, p); /* after the FINAL: a root it asks for follows it */
}

/* Strategy "equivocate": beside p, the same seq after the same parent paid
 * to another member; both are signed once consented (a double spend the
 * other members must catch).  Only the first of a member's pipeline. */
static void propose_twin(struct svc *s, struct chan *c, const struct weft_channel_payment *p)
{
	struct proposal *tw = &c->twin;
	memset(tw, 0, sizeof(*tw));
	tw->p = *p;
	tw->p.to = (p->to + 1) % c->n == p->from ? (p->to + 2) % c->n : (p->to + 1) % c->n;
	weft_channel_payment_hash(s->chain_key, c->id, &tw->p, tw->hash);
	tw->started_us = tw->sent_us = weft_env_now(s->env);
	c->has_twin = true;
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_PROPOSE, 1);
	weft_channel_payment_encode(&tw->p, w);
	chan_send_member(s, c, tw->p.to, "channel.propose");
}

/* The twin's consent: signed and sent to every member, never applied here. */
static int finalize_twin(struct svc *s, struct chan *c, const uint8_t consent[WEFT_LEDGER_SIG_LEN])
{
	struct proposal *tw = &c->twin;
	memcpy(tw->p.consent, consent, WEFT_LEDGER_SIG_LEN);
	c->has_twin = false;
	int rc = member_sign(s, c, tw->p.from, tw->hash, tw->p.sig);
	if (rc != 0)
		return rc;
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_FINAL, 1);
	weft_channel_payment_encode(&tw->p, w);
	send_hosts(s, c, "channel.final", UINT32_MAX);
	weft_env_log(s->env, WEFT_LOG_WARN, "channel.equivocated", "member=%u seq=%llu", tw->p.from,
		     (unsigned long long)tw->p.seq);
	return 0;
}

/* The proposal of payer's in flight with (seq, hash), or NULL. */
static struct proposal *find_proposal(struct chan *c, uint32_t payer, uint64_t seq, const uint8_t h[32],
				      uint32_t *index)
{
	struct pipe *pp = &c->pipe[payer];
	for (uint32_t i = 0; i < pp->nq; i++)
		if (pp->q[i].p.seq == seq && memcmp(pp->q[i].hash, h, 32) == 0) {
			*index = i;
			return &pp->q[i];
		}
	return NULL;
}

/* Ends payer's proposals from index i on: the first with `status` and
 * `why`, the ones after it (chained on it) as refused. */
static void drop_from(struct svc *s, struct chan *c, uint32_t payer, uint32_t i, const char *status, const char *why)
{
	struct pipe *pp = &c->pipe[payer];
	for (uint32_t k = i; k < pp->nq; k++) {
		const struct weft_channel_payment *p = &pp->q[k].p;
		chan_event_payment(s, c, k == i ? status : "refused", payer, p->seq, p->to, p->amount,
				   k == i ? why : "an earlier payment of this member did not go through");
	}
	pp->nq = i;
}

/* Finalizes payer's consented proposals at the head of its pipe, in order. */
static int finalize_ready(struct svc *s, struct chan *c, uint32_t payer)
{
	struct pipe *pp = &c->pipe[payer];
	uint32_t done = 0;
	int rc = 0;
	while (done < pp->nq && pp->q[done].consented && rc == 0) {
		struct proposal *pr = &pp->q[done];
		const char *why;
		uint32_t missing;
		uint64_t upto;
		rc = member_sign(s, c, payer, pr->hash, pr->p.sig);
		if (rc != 0)
			break;
		/* Checked as a proposal of ours, the consent verified on arrival:
		 * the signatures need no second look. */
		if (paydag_check(s, c, &pr->p, pr->hash, CHECK_NONE, &why, &missing, &upto) != 0) {
			/* Our own chain cannot move under its proposals; if it did,
			 * nothing of these is out. */
			weft_env_log(s->env, WEFT_LOG_ERROR, "channel.finalize_failed", "why=\"%s\"", why);
			uint32_t left = pp->nq - done;
			memmove(pp->q, pp->q + done, sizeof(*pp->q) * left);
			pp->nq = left;
			drop_from(s, c, payer, 0, "refused", why);
			return 0;
		}
		rc = finalize(s, c, &pr->p, pr->hash);
		if (rc == 0)
			chan_event_payment(s, c, "finalized", payer, pr->p.seq, pr->p.to, pr->p.amount, NULL);
		/* A lock's end, under the lock's seq (what channel.pay waits for). */
		if (rc == 0 && pr->p.kind >= WEFT_CHANNEL_UNLOCK)
			chan_event_payment(s, c, pr->p.kind == WEFT_CHANNEL_UNLOCK ? "unlocked" : "refunded", payer,
					   pr->p.cond, pr->p.to, pr->p.amount,
					   pr->p.kind == WEFT_CHANNEL_UNLOCK ? NULL
									    : "the payee gave the lock up, or it expired");
		done++;
	}
	memmove(pp->q, pp->q + done, sizeof(*pp->q) * (pp->nq - done));
	pp->nq -= done;
	return rc;
}

static int on_consent(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t payer, i;
	uint64_t seq;
	uint8_t h[32], consent[WEFT_LEDGER_SIG_LEN], m[32];
	if (weft_mp_read_u32(r, &payer) != 0 || payer >= c->n || weft_mp_read_uint(r, &seq) != 0 ||
	    weft_mp_read_bin_fixed(r, h, 32) != 0 || weft_mp_read_bin_fixed(r, consent, sizeof(consent)) != 0)
		return WEFT_EDECODE;
	struct proposal *pr = c->ours[payer] ? find_proposal(c, payer, seq, h, &i) : NULL;
	if (pr == NULL && c->has_twin && c->twin.p.from == payer && c->twin.p.seq == seq &&
	    memcmp(c->twin.hash, h, 32) == 0)
		return finalize_twin(s, c, consent);
	if (pr == NULL || pr->consented)
		return 0; /* an answer to a proposal given up, or repeated */
	if (c->host[pr->p.to] != from)
		return WEFT_EPROTO;
	weft_channel_consent_hash(h, m);
	if (member_verify(s, c, pr->p.to, m, consent) != 0)
		return WEFT_ECRYPTO;
	memcpy(pr->p.consent, consent, sizeof(consent));
	pr->consented = true;
	return finalize_ready(s, c, payer);
}

static int on_refuse(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t payer, rlen, i;
	uint64_t seq;
	uint8_t h[32];
	const char *reason;
	if (weft_mp_read_u32(r, &payer) != 0 || payer >= c->n || weft_mp_read_uint(r, &seq) != 0 ||
	    weft_mp_read_bin_fixed(r, h, 32) != 0 || weft_mp_read_str(r, &reason, &rlen) != 0 || rlen > 64)
		return WEFT_EDECODE;
	struct proposal *pr = c->ours[payer] ? find_proposal(c, payer, seq, h, &i) : NULL;
	if (pr == NULL || pr->consented)
		return 0;
	if (c->host[pr->p.to] != from)
		return WEFT_EPROTO;
	char why[65];
	memcpy(why, reason, rlen);
	why[rlen] = '\0';
	/* Nothing the payer signed is out: the seqs are free again. */
	drop_from(s, c, payer, i, "refused", why);
	return 0;
}

/* A finalized payment from a fetch answer or a FINAL: 0 applied or known,
 * WEFT_NOTFOUND parents missing (fetched), or the check's error. */
static int take_final(struct svc *s, struct chan *c, uint32_t from, struct weft_channel_payment *p)
{
	uint8_t h[32];
	const char *why;
	uint32_t missing;
	uint64_t upto;
	weft_channel_payment_hash(s->chain_key, c->id, p, h);
	/* The consent our member gave needs no verification: the same bytes. */
	uint8_t given[WEFT_LEDGER_SIG_LEN];
	bool ours = c->ours[p->to] && consent_given(s, c, p->from, p->seq, h, given) &&
		    memcmp(given, p->consent, sizeof(given)) == 0;
	int rc = paydag_check(s, c, p, h, ours ? CHECK_SENDER : CHECK_ALL, &why, &missing, &upto);
	if (rc == WEFT_EEXIST)
		return 0;
	if (rc == WEFT_NOTFOUND) {
		send_fetch(s, c, from, missing, upto);
		return WEFT_NOTFOUND;
	}
	if (rc != 0) {
		weft_env_log(s->env, WEFT_LOG_WARN, "channel.payment_rejected", "from_node=%u member=%u seq=%llu why=\"%s\"",
			     from, p->from, (unsigned long long)p->seq, why);
		return rc == WEFT_EPROTO && strcmp(why, "equivocation") == 0 ? 0 : rc;
	}
	rc = paydag_apply(s, c, p, h);
	if (rc == 0)
		rc = lock_applied(s, c, p);
	if (rc == 0)
		received_here(s, c, p);
	return rc;
}

/* A finalized payment whose parents are missing (it overtook them, or
 * they were lost) waits for them, reruns in chain order, and the fetch of
 * its chain asks for it too. */
static int on_final(struct svc *s, struct chan *c, uint32_t from, const uint8_t *msg, size_t len,
		    struct weft_mp_reader *r)
{
	struct weft_channel_payment p;
	if (weft_channel_payment_read(r, c->n, &p) != 0)
		return WEFT_EDECODE;
	if (!hosts_a_member(c, from))
		return WEFT_EPROTO;
	int rc = take_final(s, c, from, &p);
	if (rc == WEFT_NOTFOUND) {
		stash(s, c, from, msg, len, p.from, p.seq);
		return 0;
	}
	if (rc == 0 && c->nstash)
		unstash(s, c);
	return rc;
}

static int on_fetch(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t member;
	uint64_t first, last;
	if (weft_mp_read_u32(r, &member) != 0 || member >= c->n || weft_mp_read_uint(r, &first) != 0 ||
	    weft_mp_read_uint(r, &last) != 0 || first == 0 || last < first || last - first >= WEFT_CHANNEL_FETCH_MAX)
		return WEFT_EDECODE;
	if (!hosts_a_member(c, from))
		return WEFT_EPROTO;
	if (last > c->chain[member].np)
		last = c->chain[member].np;
	if (first > last)
		return 0;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 3 + 1);
	weft_mpw_uint(&w, WEFT_CHANNEL_PROTO_VERSION);
	weft_mpw_uint(&w, MSG_PAYS);
	weft_mpw_bin(&w, c->id, 32);
	weft_mpw_array(&w, (uint32_t)(last - first + 1));
	int rc = 0;
	for (uint64_t q = first; q <= last && rc == 0; q++) {
		struct weft_channel_payment p;
		rc = paydag_load(s, c, member, q, &p);
		if (rc == 0)
			weft_channel_payment_encode(&p, &w);
	}
	if (rc == 0)
		weft_env_send(s->env, from, "channel.pays", w.buf, w.len);
	weft_mpw_free(&w);
	return rc < 0 ? rc : 0;
}

static int on_pays(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t count;
	if (weft_mp_read_array(r, &count) != 0 || count > WEFT_CHANNEL_FETCH_MAX)
		return WEFT_EDECODE;
	if (!hosts_a_member(c, from))
		return WEFT_EPROTO;
	bool got = false;
	for (uint32_t i = 0; i < count; i++) {
		struct weft_channel_payment p;
		if (weft_channel_payment_read(r, c->n, &p) != 0)
			return WEFT_EDECODE;
		int rc = take_final(s, c, from, &p);
		if (rc == WEFT_NOTFOUND)
			break;
		if (rc < 0)
			return rc;
		got = true;
	}
	if (got && c->nstash)
		unstash(s, c);
	return 0;
}

/* Sends payer's proposal q[i] with the proposals ahead of it. */
static void send_proposal(struct svc *s, struct chan *c, uint32_t payer, uint32_t i)
{
	const struct pipe *pp = &c->pipe[payer];
	const struct route *rt = &pp->q[i].route;
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_PROPOSE, rt->n ? 3 : i ? 2 : 1);
	weft_channel_payment_encode(&pp->q[i].p, w);
	if (i || rt->n) {
		weft_mpw_array(w, i);
		for (uint32_t k = 0; k < i; k++)
			weft_channel_payment_encode(&pp->q[k].p, w);
	}
	if (rt->n)
		lock_route_write(w, rt);
	chan_send_member(s, c, pp->q[i].p.to, "channel.propose");
}

int chan_propose(struct svc *s, struct chan *c, uint32_t from, uint32_t to, uint64_t amount, uint8_t kind,
		 const uint8_t secret[32], uint64_t cond, const struct route *rt, uint64_t *seq, const char **why)
{
	if (c->status != CH_ACTIVE) {
		*why = c->status < CH_ACTIVE ? "the channel is not open on the ledger yet"
		       : c->status == CH_CLOSING ? "the channel is closing"
		       : c->status == CH_CLOSED ? "the channel is closed"
						 : "the ledger refused the channel's open";
		return WEFT_ESTATE;
	}
	if (from >= c->n || to >= c->n || from == to || amount == 0) {
		*why = "from and to must be two members, amount at least 1";
		return WEFT_EINVAL;
	}
	if (!c->ours[from]) {
		*why = "the payer is not hosted by this node";
		return WEFT_EINVAL;
	}
	struct pipe *pp = &c->pipe[from];
	if (pp->nq >= s->pipeline) {
		*why = "busy: this member has as many payments in flight as channel_pipeline allows";
		return WEFT_EAGAIN;
	}
	/* The chain as it will be once the payments in flight are finalized. */
	struct paytail t;
	paydag_tail_init(c, from, &t);
	for (uint32_t i = 0; i < pp->nq; i++)
		paydag_tail_extend(c, &t, &pp->q[i].p, pp->q[i].hash);
	struct weft_channel_payment p;
	memset(&p, 0, sizeof(p));
	uint64_t adds;
	p.nrefs = paydag_refs(c, from, t.counted, p.refs, &adds);
	uint64_t have = c->deposit[from] + t.in + adds;
	bool covered = kind == WEFT_CHANNEL_UNLOCK || kind == WEFT_CHANNEL_REFUND || (have >= t.out && have - t.out >= amount);
	p.from = from;
	p.seq = t.np + 1;
	memcpy(p.prev, t.head, 32);
	paydag_tail_free(&t);
	if (!covered && !s->overspend) {
		*why = "insufficient channel balance";
		return WEFT_EINVAL;
	}
	p.to = to;
	p.amount = amount;
	p.kind = kind;
	if (secret)
		memcpy(p.secret, secret, 32);
	p.cond = cond;
	if (pp->nq == pp->cap) {
		pp->cap = pp->cap ? 2 * pp->cap : 8;
		pp->q = weft_xrealloc(pp->q, pp->cap, sizeof(*pp->q));
	}
	struct proposal *pr = &pp->q[pp->nq++];
	memset(pr, 0, sizeof(*pr));
	pr->p = p;
	if (rt)
		pr->route = *rt;
	weft_channel_payment_hash(s->chain_key, c->id, &p, pr->hash);
	pr->started_us = pr->sent_us = weft_env_now(s->env);
	send_proposal(s, c, from, pp->nq - 1);
	*seq = p.seq;
	if (s->equivocate && pp->nq == 1 && c->n > 2)
		propose_twin(s, c, &p);
	return 0;
}

bool chan_resolving(const struct chan *c, uint32_t payer, uint64_t lock_seq)
{
	const struct pipe *pp = &c->pipe[payer];
	for (uint32_t i = 0; i < pp->nq; i++)
		if (pp->q[i].p.kind >= WEFT_CHANNEL_UNLOCK && pp->q[i].p.cond == lock_seq)
			return true;
	return false;
}

bool chan_locking(const struct chan *c, uint32_t payer, const uint8_t hash[32])
{
	const struct pipe *pp = &c->pipe[payer];
	for (uint32_t i = 0; i < pp->nq; i++)
		if (pp->q[i].p.kind == WEFT_CHANNEL_LOCK && memcmp(pp->q[i].p.secret, hash, 32) == 0)
			return true;
	return false;
}

/* ---- roots ---- */

/* The cooperative close (below), which a new root may restart. */
static const char *unsettled(struct svc *s, struct chan *c);
static int sign_close(struct svc *s, struct chan *c);
static void send_close_ask(struct svc *s, struct chan *c);
static void maybe_submit_close(struct svc *s, struct chan *c);

/* Keeps the first root signature seen from m at a version; a second of
 * another root of that version is evidence. */
static void note_root_sig(struct svc *s, struct chan *c, uint32_t m, uint64_t version, const uint8_t hash[32],
			  const uint8_t sig[WEFT_LEDGER_SIG_LEN])
{
	if (version < c->seen_version[m] || version == 0)
		return; /* an older version's: the newer one is what two roots would fork */
	if (c->seen_version[m] != version) {
		c->seen_version[m] = version;
		memcpy(c->seen_hash[m], hash, 32);
		memcpy(c->seen_sig[m], sig, WEFT_LEDGER_SIG_LEN);
		return;
	}
	if (memcmp(c->seen_hash[m], hash, 32) == 0)
		return;
	uint8_t k[37];
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 6);
	weft_mpw_str(&w, "root");
	weft_mpw_uint(&w, version);
	weft_mpw_bin(&w, c->seen_hash[m], 32);
	weft_mpw_bin(&w, c->seen_sig[m], WEFT_LEDGER_SIG_LEN);
	weft_mpw_bin(&w, hash, 32);
	weft_mpw_bin(&w, sig, WEFT_LEDGER_SIG_LEN);
	member_key(k, 'e', c->id, m);
	kv_put(s, k, sizeof(k), &w);
	weft_mpw_free(&w);
	c->evidence++;
	chan_emit_evidence(s, c, "root", m);
}

static void send_root_ask(struct svc *s, struct chan *c, uint32_t to_host)
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_ROOT_ASK, 3);
	weft_mpw_uint(w, c->build.version);
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++) {
		weft_mpw_array(w, 2);
		weft_mpw_uint(w, c->build.seq[m]);
		weft_mpw_bin(w, c->build.head[m], 32);
	}
	weft_mpw_bin(w, c->build.sig[c->opener], WEFT_LEDGER_SIG_LEN);
	if (to_host == UINT32_MAX)
		send_hosts(s, c, "channel.root_ask", UINT32_MAX);
	else
		chan_send_host(s, to_host, "channel.root_ask");
}

static void send_root_all(struct svc *s, struct chan *c, uint32_t to_host)
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_ROOT_ALL, 3);
	weft_mpw_uint(w, c->latest.version);
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++) {
		weft_mpw_array(w, 2);
		weft_mpw_uint(w, c->latest.seq[m]);
		weft_mpw_bin(w, c->latest.head[m], 32);
	}
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++)
		weft_mpw_bin(w, c->latest.sig[m], WEFT_LEDGER_SIG_LEN);
	if (to_host == UINT32_MAX)
		send_hosts(s, c, "channel.root_all", UINT32_MAX);
	else
		chan_send_host(s, to_host, "channel.root_all");
}

static uint64_t cut_size(const struct chan *c, const uint64_t *seq)
{
	uint64_t t = 0;
	for (uint32_t m = 0; m < c->n; m++)
		t += seq[m];
	return t;
}

/* latest becomes r (all signed): kept, announced. */
static int root_adopt(struct svc *s, struct chan *c, const struct root *r)
{
	c->latest = *r;
	for (uint32_t m = 0; m < c->n; m++)
		c->latest.have[m] = true;
	c->rooted = cut_size(c, r->seq);
	c->last_root_us = weft_env_now(s->env);
	if (c->signed_pending && c->signing.version <= r->version)
		c->signed_pending = false;
	weft_env_metric(s->env, "channel.roots", 1);
	event_status(s, c, "root", r->version);
	int rc = save_root(s, c, 'r', &c->latest);
	if (rc == 0 && c->status == CH_ACTIVE)
		lock_tick(s, c); /* a lock just rooted goes on (or is revealed) now, not at the next tick */
	if (rc == 0 && c->closer && c->status == CH_CLOSING && !c->commit_seen && unsettled(s, c) == NULL) {
		/* A root came while our close was being signed: close at it. */
		rc = sign_close(s, c);
		if (rc == 0) {
			send_close_ask(s, c);
			maybe_submit_close(s, c);
		}
	}
	return rc;
}

/* The cut (seq, head) checked against what is held: 0 with the balances
 * and hash in r; WEFT_NOTFOUND with *missing / *upto to fetch; or an
 * error and *why. */
static int root_check(struct svc *s, struct chan *c, struct root *r, uint32_t *missing, uint64_t *upto,
		      const char **why)
{
	for (uint32_t m = 0; m < c->n; m++) {
		if (r->seq[m] < c->latest.seq[m]) {
			*why = "cut_behind";
			return WEFT_EPROTO;
		}
		if (r->seq[m] > c->chain[m].np) {
			*missing = m, *upto = r->seq[m];
			return WEFT_NOTFOUND;
		}
		static const uint8_t zero[32];
		const uint8_t *held = r->seq[m] ? c->chain[m].p[r->seq[m] - 1].hash : zero;
		if (memcmp(held, r->head[m], 32) != 0) {
			*why = "conflict";
			return WEFT_EPROTO;
		}
	}
	if (paydag_balances_at(c, r->seq, r) != 0) {
		*why = "overspend";
		return WEFT_EPROTO;
	}
	root_seal(s, c, r);
	return 0;
}

/* Once our members signed a cooperative close, each one's balance is
 * frozen at the close's: the close stays valid on the ledger, so a root
 * that moves it (a payment to it that its payer finalized late, under a
 * consent forgotten before the close) must not be signed, or the payer
 * could post the close and pay it less than its newest root
 * (tla/ChannelPayLateFinal).  Everything applied was rooted when the close
 * was signed, and later roots keep these balances, so the held root has
 * the close's. */
static bool moves_closed_balance(const struct chan *c, const struct root *q)
{
	if (c->status != CH_CLOSING || !c->close_version)
		return false;
	for (uint32_t m = 0; m < c->n; m++)
		if (c->ours[m] && q->balance[m] != c->latest.balance[m])
			return true;
	return false;
}

static void send_root_nack(struct svc *s, struct chan *c, uint64_t version, const char *why)
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_ROOT_NACK, 2);
	weft_mpw_uint(w, version);
	weft_mpw_str(w, why);
	chan_send_member(s, c, c->opener, "channel.root_nack");
}

static int on_root_ask(struct svc *s, struct chan *c, uint32_t from, const uint8_t *msg, size_t len,
		       struct weft_mp_reader *r)
{
	struct root q;
	uint8_t psig[WEFT_LEDGER_SIG_LEN];
	memset(&q, 0, sizeof(q));
	if (weft_mp_read_uint(r, &q.version) != 0 || read_cut(r, c->n, q.seq, q.head) != 0 ||
	    weft_mp_read_bin_fixed(r, psig, sizeof(psig)) != 0)
		return WEFT_EDECODE;
	if (from != c->host[c->opener])
		return WEFT_EPROTO;
	if (q.version <= c->latest.version)
		return 0; /* all-signed already */
	if (!roots_allowed(c)) {
		send_root_nack(s, c, q.version, "closing");
		return 0;
	}
	if (q.version > c->latest.version + 1) {
		send_root_nack(s, c, q.version, "behind");
		return 0;
	}
	uint32_t missing = 0;
	uint64_t upto = 0;
	const char *why = NULL;
	int rc = root_check(s, c, &q, &missing, &upto, &why);
	if (rc == WEFT_NOTFOUND) {
		send_fetch(s, c, from, missing, upto);
		stash(s, c, from, msg, len, UINT32_MAX, q.version);
		return 0;
	}
	if (rc == 0 && member_verify(s, c, c->opener, q.hash, psig) != 0)
		return WEFT_ECRYPTO;
	if (rc == 0 && moves_closed_balance(c, &q)) {
		why = "closing_balance";
		rc = WEFT_EPERM;
	}
	if (rc == 0)
		note_root_sig(s, c, c->opener, q.version, q.hash, psig);
	if (rc == 0 && c->signed_pending && c->signing.version == q.version && memcmp(c->signing.hash, q.hash, 32) != 0) {
		why = "signed_another";
		rc = WEFT_EEXIST;
	}
	if (rc != 0) {
		send_root_nack(s, c, q.version, why);
		return 0;
	}
	if (!(c->signed_pending && c->signing.version == q.version)) {
		memcpy(q.sig[c->opener], psig, sizeof(psig));
		q.have[c->opener] = true;
		rc = sign_ours(s, c, q.hash, q.sig, q.have);
		if (rc != 0)
			return rc;
		c->signing = q;
		c->signed_pending = true;
		rc = save_root(s, c, 's', &c->signing);
		if (rc != 0)
			return rc;
	}
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_ROOT_SIGS, 3);
	weft_mpw_uint(w, c->signing.version);
	weft_mpw_bin(w, c->signing.hash, 32);
	write_our_sigs(w, c, (const uint8_t(*)[WEFT_LEDGER_SIG_LEN])c->signing.sig);
	chan_send_member(s, c, c->opener, "channel.root_sigs");
	return 0;
}

static int root_collect(struct svc *s, struct chan *c)
{
	if (!c->building || !roots_allowed(c) || !all_have(c, c->build.have))
		return 0;
	c->building = false;
	int rc = root_adopt(s, c, &c->build);
	if (rc == 0)
		send_root_all(s, c, UINT32_MAX);
	return rc;
}

static int on_root_sigs(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t version;
	uint8_t hash[32], sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN];
	bool have[WEFT_CHANNEL_MAX] = {false};
	if (weft_mp_read_uint(r, &version) != 0 || weft_mp_read_bin_fixed(r, hash, 32) != 0 ||
	    read_member_sigs(r, c->n, sig, have) != 0)
		return WEFT_EDECODE;
	for (uint32_t m = 0; m < c->n; m++) {
		if (!have[m])
			continue;
		if (c->host[m] != from || member_verify(s, c, m, hash, sig[m]) != 0)
			return WEFT_ECRYPTO;
		note_root_sig(s, c, m, version, hash, sig[m]);
		if (c->building && version == c->build.version && memcmp(hash, c->build.hash, 32) == 0) {
			memcpy(c->build.sig[m], sig[m], WEFT_LEDGER_SIG_LEN);
			c->build.have[m] = true;
		}
	}
	return root_collect(s, c);
}

static int on_root_nack(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t version;
	const char *why;
	uint32_t wlen;
	if (weft_mp_read_uint(r, &version) != 0 || weft_mp_read_str(r, &why, &wlen) != 0 || wlen > 64)
		return WEFT_EDECODE;
	if (!c->ours[c->opener])
		return 0;
	if (wlen == 6 && memcmp(why, "behind", 6) == 0 && c->latest.version > 0)
		send_root_all(s, c, from);
	weft_env_log(s->env, WEFT_LOG_INFO, "channel.root_refused", "node=%u version=%llu why=\"%.*s\"", from,
		     (unsigned long long)version, (int)wlen, why);
	return 0;
}

static int on_root_all(struct svc *s, struct chan *c, uint32_t from, const uint8_t *msg, size_t len,
		       struct weft_mp_reader *r)
{
	struct root q;
	uint32_t count;
	memset(&q, 0, sizeof(q));
	if (weft_mp_read_uint(r, &q.version) != 0 || read_cut(r, c->n, q.seq, q.head) != 0 ||
	    weft_mp_read_array(r, &count) != 0 || count != c->n)
		return WEFT_EDECODE;
	for (uint32_t m = 0; m < c->n; m++)
		if (weft_mp_read_bin_fixed(r, q.sig[m], WEFT_LEDGER_SIG_LEN) != 0)
			return WEFT_EDECODE;
	if (q.version <= c->latest.version)
		return 0;
	if (!hosts_a_member(c, from))
		return WEFT_EPROTO;
	uint32_t missing = 0;
	uint64_t upto = 0;
	const char *why = NULL;
	int rc = root_check(s, c, &q, &missing, &upto, &why);
	if (rc == WEFT_NOTFOUND) {
		send_fetch(s, c, from, missing, upto);
		stash(s, c, from, msg, len, UINT32_MAX, q.version);
		return 0;
	}
	if (rc != 0) {
		weft_env_log(s->env, WEFT_LOG_WARN, "channel.root_rejected", "node=%u version=%llu why=\"%s\"", from,
			     (unsigned long long)q.version, why);
		return 0;
	}
	for (uint32_t m = 0; m < c->n; m++)
		if (member_verify(s, c, m, q.hash, q.sig[m]) != 0)
			return WEFT_ECRYPTO;
	return root_adopt(s, c, &q);
}

/* The opener: a root of everything held, when due. */
static void maybe_build_root(struct svc *s, struct chan *c, bool now_anyway)
{
	if (!c->ours[c->opener] || !roots_allowed(c))
		return;
	uint64_t t = weft_env_now(s->env);
	if (c->building) {
		if (t - c->build_started_us >= s->root_us) { /* ask again who has not answered */
			c->build_started_us = t;
			for (uint32_t m = 0; m < c->n; m++)
				if (!c->build.have[m])
					send_root_ask(s, c, c->host[m]);
		}
		return;
	}
	uint64_t unrooted = c->applied - c->rooted;
	if (unrooted == 0 || (!now_anyway && unrooted < s->root_every && t - c->last_root_us < s->root_us))
		return;
	if (c->signed_pending && c->signing.version == c->latest.version + 1) {
		c->build = c->signing; /* our members signed this one: it stays the root of its version */
	} else {
		struct root q;
		const char *why;
		uint32_t missing;
		uint64_t upto;
		memset(&q, 0, sizeof(q));
		q.version = c->latest.version + 1;
		for (uint32_t m = 0; m < c->n; m++) {
			q.seq[m] = c->chain[m].np;
			if (q.seq[m])
				memcpy(q.head[m], c->chain[m].p[q.seq[m] - 1].hash, 32);
		}
		if (root_check(s, c, &q, &missing, &upto, &why) != 0) {
			weft_env_log(s->env, WEFT_LOG_ERROR, "channel.root_build_failed", "why=\"%s\"", why ? why : "missing");
			return;
		}
		if (moves_closed_balance(c, &q)) {
			weft_env_log(s->env, WEFT_LOG_WARN, "channel.root_not_built",
				     "why=\"closing_balance\" a payment applied after our close moves our balance");
			c->last_root_us = t; /* once per root period */
			return;
		}
		if (sign_ours(s, c, q.hash, q.sig, q.have) != 0)
			return;
		c->signing = q;
		c->signed_pending = true;
		if (save_root(s, c, 's', &c->signing) != 0)
			return;
		c->build = q;
	}
	c->building = true;
	c->build_started_us = t;
	send_root_ask(s, c, UINT32_MAX);
	root_collect(s, c);
}

void chan_build_root(struct svc *s, struct chan *c)
{
	maybe_build_root(s, c, true);
}

/* ---- close ---- */

static void close_tx(const struct chan *c, struct weft_ledger_channel_close *cl)
{
	memset(cl, 0, sizeof(*cl));
	memcpy(cl->id, c->id, 32);
	cl->n = c->n;
	memcpy(cl->balance, c->latest.balance, sizeof(uint64_t) * c->n);
	for (uint32_t m = 0; m < c->n; m++)
		memcpy(cl->sig[m], c->close_sig[m], WEFT_LEDGER_SIG_LEN);
}

static void root_tx(const struct chan *c, const char *tag, struct weft_mpw *w)
{
	struct weft_ledger_channel_root t;
	ledger_root(c, &c->latest, &t);
	weft_ledger_channel_root_encode(tag, &t, w);
}

static int load_root(struct svc *s, struct chan *c, char tag, struct root *r);

/* Posts the newest root (a unilateral close, or a dispute); the stale
 * strategy posts root 0 instead when it closes. */
static int post_root(struct svc *s, struct chan *c, const char *tag)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	struct root keep = c->latest;
	if (s->post_stale && strcmp(tag, WEFT_LEDGER_CHANNEL_COMMIT_TAG) == 0 && load_root(s, c, 'z', &c->latest) == 0)
		weft_env_log(s->env, WEFT_LOG_WARN, "channel.stale_commit", "version=0 newest=%llu",
			     (unsigned long long)keep.version);
	uint64_t posted = c->latest.version;
	root_tx(c, tag, &w);
	c->latest = keep;
	chan_submit(s, &w);
	weft_mpw_free(&w);
	c->disputed_version = c->latest.version;
	weft_env_log(s->env, WEFT_LOG_INFO, "channel.root_posted", "kind=%s version=%llu", tag,
		     (unsigned long long)posted);
	return save_meta(s, c);
}

/* Nothing held here beyond the newest root, no consent or proposal out. */
static const char *unsettled(struct svc *s, struct chan *c)
{
	if (c->applied != c->rooted)
		return "unrooted_payments";
	for (uint32_t m = 0; m < c->n; m++)
		if (c->pipe[m].nq)
			return "payment_in_flight";
	/* a consent our member gave for a payment not finalized */
	return c->ngiven ? "consent_outstanding" : NULL;
}

/* Our members sign the cooperative close at the newest root; no payments
 * after that. */
static int sign_close(struct svc *s, struct chan *c)
{
	struct weft_ledger_channel_close cl;
	uint8_t msg[32];
	memset(c->close_have, 0, sizeof(c->close_have)); /* signatures of an older root's close are void */
	close_tx(c, &cl);
	weft_ledger_channel_close_sighash(s->chain_key, &cl, msg);
	int rc = sign_ours(s, c, msg, c->close_sig, c->close_have);
	if (rc != 0)
		return rc;
	c->status = CH_CLOSING;
	c->close_version = c->latest.version + 1;
	c->close_asked_us = weft_env_now(s->env);
	return save_meta(s, c);
}

static void send_close_ask(struct svc *s, struct chan *c)
{
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_CLOSE_ASK, 1);
	weft_mpw_uint(w, c->latest.version);
	send_hosts(s, c, "channel.close_ask", UINT32_MAX);
}

static void maybe_submit_close(struct svc *s, struct chan *c)
{
	if (!c->closer || !all_have(c, c->close_have))
		return;
	struct weft_ledger_channel_close cl;
	struct weft_mpw w;
	close_tx(c, &cl);
	weft_mpw_init(&w);
	weft_ledger_channel_close_encode(&cl, &w);
	chan_submit(s, &w);
	weft_mpw_free(&w);
	c->closer = false;
	save_meta(s, c);
}

static int on_close_ask(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t version;
	if (weft_mp_read_uint(r, &version) != 0)
		return WEFT_EDECODE;
	if (!hosts_a_member(c, from))
		return WEFT_EPROTO;
	const char *why = NULL;
	bool signable = c->status == CH_ACTIVE || (c->status == CH_CLOSING && c->close_version && !c->commit_seen);
	if (version > c->latest.version) {
		why = "behind"; /* the asker sends us its newest root */
	} else if (version < c->latest.version) {
		why = "newer_root";
		send_root_all(s, c, from);
	} else if (!signable) {
		why = "not_open";
	} else if (c->close_version != version + 1 && (why = unsettled(s, c)) == NULL) {
		int rc = sign_close(s, c);
		if (rc != 0)
			return rc;
	}
	weft_mpw_reset(&s->out);
	weft_mpw_array(&s->out, 5);
	weft_mpw_uint(&s->out, WEFT_CHANNEL_PROTO_VERSION);
	weft_mpw_uint(&s->out, why ? MSG_CLOSE_NACK : MSG_CLOSE_SIGS);
	weft_mpw_bin(&s->out, c->id, 32);
	weft_mpw_uint(&s->out, version);
	if (why)
		weft_mpw_str(&s->out, why);
	else
		write_our_sigs(&s->out, c, (const uint8_t(*)[WEFT_LEDGER_SIG_LEN])c->close_sig);
	chan_send_host(s, from, why ? "channel.close_nack" : "channel.close_sigs");
	return 0;
}

static int on_close_sigs(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t version;
	uint8_t sig[WEFT_CHANNEL_MAX][WEFT_LEDGER_SIG_LEN], msg[32];
	bool have[WEFT_CHANNEL_MAX] = {false};
	if (weft_mp_read_uint(r, &version) != 0 || read_member_sigs(r, c->n, sig, have) != 0)
		return WEFT_EDECODE;
	if (!c->closer || version != c->latest.version)
		return 0;
	struct weft_ledger_channel_close cl;
	close_tx(c, &cl);
	weft_ledger_channel_close_sighash(s->chain_key, &cl, msg);
	for (uint32_t m = 0; m < c->n; m++) {
		if (!have[m])
			continue;
		if (c->host[m] != from || member_verify(s, c, m, msg, sig[m]) != 0)
			return WEFT_ECRYPTO;
		memcpy(c->close_sig[m], sig[m], WEFT_LEDGER_SIG_LEN);
		c->close_have[m] = true;
	}
	maybe_submit_close(s, c);
	return 0;
}

static int on_close_nack(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t version;
	const char *why;
	uint32_t wlen;
	if (weft_mp_read_uint(r, &version) != 0 || weft_mp_read_str(r, &why, &wlen) != 0 || wlen > 64)
		return WEFT_EDECODE;
	weft_env_log(s->env, WEFT_LOG_INFO, "channel.close_refused", "node=%u version=%llu why=\"%.*s\"", from,
		     (unsigned long long)version, (int)wlen, why);
	if (wlen == 6 && memcmp(why, "behind", 6) == 0)
		send_root_all(s, c, from);
	struct weft_mpw w;
	weft_mpw_init(&w);
	event_begin(&w, c, "close_refused", 2);
	weft_mpw_str(&w, "node");
	weft_mpw_uint(&w, from);
	weft_mpw_str(&w, "reason");
	weft_mpw_strn(&w, why, wlen);
	chan_event_end(s, &w);
	return 0;
}

/* ---- the ledger ---- */

/* What the ledger executed for a channel of ours. */
static int on_ledger(struct svc *s, const uint8_t *tx, size_t len, uint8_t outcome)
{
	struct weft_ledger_channel_open o;
	struct weft_ledger_channel_close cl;
	struct weft_ledger_channel_root rt;
	uint8_t id[32], preimage[32];
	const char *kind;
	int rc = asc_on_ledger(s, tx, len, outcome);
	if (rc != 0)
		return rc;
	if (weft_ledger_channel_open_decode(tx, len, &o) == 0) {
		weft_ledger_channel_id(s->chain_key, &o, id);
		kind = "open";
	} else if (weft_ledger_channel_close_decode(tx, len, &cl) == 0) {
		memcpy(id, cl.id, 32);
		kind = "close";
	} else if (weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_COMMIT_TAG, tx, len, &rt) == 0) {
		memcpy(id, rt.id, 32);
		kind = "commit";
	} else if (weft_ledger_channel_root_decode(WEFT_LEDGER_CHANNEL_DISPUTE_TAG, tx, len, &rt) == 0) {
		memcpy(id, rt.id, 32);
		kind = "dispute";
	} else if (weft_ledger_channel_settle_decode(tx, len, id) == 0) {
		kind = "settle";
	} else if (weft_ledger_channel_claim_decode(tx, len, id, preimage) == 0) {
		return outcome == WEFT_LEDGER_APPLIED ? lock_on_claim(s, preimage) : 0;
	} else {
		return 0;
	}
	struct chan *c = chan_find(s, id);
	if (c == NULL)
		return 0;
	bool applied = outcome == WEFT_LEDGER_APPLIED;
	weft_env_log(s->env, WEFT_LOG_INFO, "channel.ledger", "kind=%s outcome=%s", kind,
		     weft_ledger_outcome_name((enum weft_ledger_outcome)outcome));
	if (strcmp(kind, "open") == 0) {
		if (applied && c->status <= CH_OPENING) {
			c->status = CH_ACTIVE;
			c->last_root_us = weft_env_now(s->env);
			event_status(s, c, "open", 0);
			return save_meta(s, c);
		}
		if (!applied && c->status <= CH_OPENING && outcome != WEFT_LEDGER_CHANNEL_EXISTS) {
			c->status = CH_FAILED;
			struct weft_mpw w;
			weft_mpw_init(&w);
			event_begin(&w, c, "open_failed", 1);
			weft_mpw_str(&w, "reason");
			weft_mpw_str(&w, weft_ledger_outcome_name((enum weft_ledger_outcome)outcome));
			chan_event_end(s, &w);
			return save_meta(s, c);
		}
		return 0;
	}
	if (!applied)
		return 0;
	if (strcmp(kind, "close") == 0 || strcmp(kind, "settle") == 0) {
		c->status = CH_CLOSED;
		event_status(s, c, "closed", c->latest.version);
		return save_meta(s, c);
	}
	/* A root was posted: no more payments or roots; answer a stale one. */
	if (c->status == CH_ACTIVE || c->status == CH_OPENING)
		c->status = CH_CLOSING;
	c->commit_seen = true;
	struct weft_mpw w;
	weft_mpw_init(&w);
	event_begin(&w, c, kind, 2);
	weft_mpw_str(&w, "version");
	weft_mpw_uint(&w, rt.version);
	weft_mpw_str(&w, "ours");
	weft_mpw_uint(&w, c->latest.version);
	chan_event_end(s, &w);
	if (rt.version < c->latest.version && c->disputed_version < c->latest.version) {
		weft_env_metric(s->env, "channel.disputes", 1);
		return post_root(s, c, WEFT_LEDGER_CHANNEL_DISPUTE_TAG);
	}
	return save_meta(s, c);
}

/* A channel closing on the ledger whose period ended: settle it.  The
 * node of member 0 posts at once; the others if it has not after a while
 * (a second settle is recorded as not_closing, harmlessly). */
static void maybe_settle(struct svc *s, struct chan *c)
{
	const struct weft_ledger *l = ledger(s);
	struct weft_ledger_channel_state st;
	if (l == NULL || weft_ledger_channel((struct weft_ledger *)l, c->id, &st) != 0 ||
	    st.status != WEFT_LEDGER_CH_CLOSING || l->height < st.deadline)
		return;
	for (uint32_t i = 0; i < st.nlocks; i++)
		if (!st.claimed[i] && l->height + 1 < st.lock[i].expiry)
			return; /* its payee may still claim it: the ledger would refuse the settle */
	uint64_t t = weft_env_now(s->env);
	if (c->settle_due_us == 0)
		c->settle_due_us = t;
	if (c->host[0] != s->env->self && t - c->settle_due_us < SETTLE_RETRY_US)
		return;
	if (c->settle_sent_us && t - c->settle_sent_us < SETTLE_RETRY_US)
		return;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_channel_settle_encode(c->id, &w);
	chan_submit(s, &w);
	weft_mpw_free(&w);
	c->settle_sent_us = t;
}

/* A member's node holding payments no root covers for a while tells the
 * opener's node what it holds, which fetches what it lacks: a finalized
 * payment whose message to the opener was lost (its payer crashed, or
 * withheld it) still reaches a root. */
static void maybe_send_heads(struct svc *s, struct chan *c, uint64_t t)
{
	if (c->ours[c->opener] || !roots_allowed(c) || c->applied == c->rooted || t - c->last_root_us < 2 * s->root_us ||
	    t - c->heads_sent_us < s->root_us)
		return;
	c->heads_sent_us = t;
	struct weft_mpw *w = chan_msg_begin(s, c, MSG_HEADS, 1);
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++)
		weft_mpw_uint(w, c->chain[m].np);
	chan_send_member(s, c, c->opener, "channel.heads");
}

static int on_heads(struct svc *s, struct chan *c, uint32_t from, struct weft_mp_reader *r)
{
	uint32_t count;
	if (weft_mp_read_array(r, &count) != 0 || count != c->n)
		return WEFT_EDECODE;
	if (!hosts_a_member(c, from))
		return WEFT_EPROTO;
	for (uint32_t m = 0; m < c->n; m++) {
		uint64_t seq;
		if (weft_mp_read_uint(r, &seq) != 0)
			return WEFT_EDECODE;
		if (seq > c->chain[m].np && c->ours[c->opener])
			send_fetch(s, c, from, m, seq);
	}
	return 0;
}

/* ---- the tick: retries and deadlines ---- */

static void tick_channel(struct svc *s, struct chan *c)
{
	uint64_t t = weft_env_now(s->env);
	bool opener = c->ours[c->opener];
	switch (c->status) {
	case CH_SIGNING:
		if (opener && t - c->build_started_us >= s->root_us) {
			c->build_started_us = t;
			send_open(s, c);
		}
		break;
	case CH_OPENING:
		if (opener && !all_have(c, c->open_have) && t - c->build_started_us >= s->root_us) {
			c->build_started_us = t;
			send_root0(s, c, UINT32_MAX);
		} else if (opener && c->open_sent && t - c->build_started_us >= 10 * s->root_us) {
			c->build_started_us = t; /* the open was lost before the ledger: again */
			c->open_sent = false;
			maybe_submit_open(s, c);
		}
		break;
	case CH_ACTIVE:
		for (uint32_t m = 0; m < c->n; m++) {
			struct pipe *pp = &c->pipe[m];
			for (uint32_t i = 0; i < pp->nq; i++) {
				struct proposal *pr = &pp->q[i];
				if (pr->consented)
					continue;
				if (t - pr->started_us >= s->pay_timeout_us) {
					/* The receiver did not answer: nothing the payer signed is out. */
					drop_from(s, c, m, i, "timeout", "the receiver did not answer");
				} else if (t - pr->sent_us >= s->root_us) {
					pr->sent_us = t;
					send_proposal(s, c, m, i);
				}
			}
		}
		maybe_build_root(s, c, false);
		maybe_send_heads(s, c, t);
		lock_tick(s, c);
		break;
	case CH_CLOSING:
		maybe_build_root(s, c, false); /* while a cooperative close is being signed */
		maybe_send_heads(s, c, t);
		if (c->closer && !all_have(c, c->close_have) && t - c->close_asked_us >= s->root_us &&
		    t - c->close_asked_us < CLOSE_FALLBACK_US) {
			send_close_ask(s, c);
		}
		if (c->close_version && t - c->close_asked_us >= CLOSE_FALLBACK_US) {
			const struct weft_ledger *l = ledger(s);
			struct weft_ledger_channel_state st;
			if (l && weft_ledger_channel((struct weft_ledger *)l, c->id, &st) == 0 &&
			    st.status == WEFT_LEDGER_CH_OPEN &&
			    (c->commit_sent_us == 0 || t - c->commit_sent_us >= CLOSE_FALLBACK_US)) {
				c->commit_sent_us = t;
				post_root(s, c, WEFT_LEDGER_CHANNEL_COMMIT_TAG); /* the close did not land */
			}
		}
		lock_tick(s, c);
		maybe_settle(s, c);
		break;
	default:
		break;
	}
	/* Consents whose payment never came (the payer gave up on it). */
	for (uint32_t i = 0; i < c->ngiven;) {
		const struct given *g = &c->given[i];
		if (g->seq <= c->chain[g->payer].np || t - g->since_us >= 3 * s->pay_timeout_us)
			forget_given(s, c, i);
		else
			i++;
	}
	if (c->nstash)
		unstash(s, c);
	/* Stashed messages whose payments never came. */
	for (uint32_t i = 0; i < c->nstash;) {
		if (t - c->stash[i].since_us >= s->pay_timeout_us) {
			c->stash_bytes -= c->stash[i].len;
			free(c->stash[i].msg);
			c->stash[i] = c->stash[--c->nstash];
		} else {
			i++;
		}
	}
}

/* ---- dispatch ---- */

static int handle(struct svc *s, uint32_t from, const uint8_t *msg, size_t len)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t version, type;
	uint8_t id[32];
	weft_mp_reader_init(&r, msg, len);
	if (weft_mp_read_array(&r, &count) != 0 || count < 3 || weft_mp_read_uint(&r, &version) != 0 ||
	    weft_mp_read_uint(&r, &type) != 0 || weft_mp_read_bin_fixed(&r, id, 32) != 0)
		return WEFT_EDECODE;
	if (version != WEFT_CHANNEL_PROTO_VERSION || type == 0 || type >= MSG_TYPES)
		return WEFT_EUNSUPPORTED;
	static const uint8_t fields[MSG_TYPES] = {
		[MSG_OPEN] = 3, [MSG_OPEN_SIGS] = 2, [MSG_ROOT0] = 1, [MSG_PROPOSE] = 1, [MSG_CONSENT] = 4,
		[MSG_REFUSE] = 4, [MSG_FINAL] = 1, [MSG_FETCH] = 3, [MSG_PAYS] = 1, [MSG_ROOT_ASK] = 3,
		[MSG_ROOT_SIGS] = 3, [MSG_ROOT_NACK] = 2, [MSG_ROOT_ALL] = 3, [MSG_CLOSE_ASK] = 1,
		[MSG_CLOSE_SIGS] = 2, [MSG_CLOSE_NACK] = 2, [MSG_HEADS] = 1, [MSG_UNLOCK_ASK] = 3, [MSG_REFUND_ASK] = 2,
		[MSG_ASC_OPEN] = 7, [MSG_ASC_REQUEST] = 4, [MSG_ASC_OFFER] = 5, [MSG_ASC_ACCEPT] = 2, [MSG_ASC_REVEAL] = 2,
		[MSG_ASC_REFUSE] = 2, [MSG_ASC_CLOSE_ASK] = 2, [MSG_ASC_CLOSE_SIG] = 2,
	};
	/* A proposal may carry the payments ahead of it and a lock's route:
	 * one or two more fields. */
	if (count != 3u + fields[type] && !(type == MSG_PROPOSE && count >= 3u + fields[type] + 1 && count <= 3u + fields[type] + 2))
		return WEFT_EDECODE;
	if (type == MSG_OPEN)
		return on_open(s, from, id, &r);
	if (type >= MSG_ASC_OPEN)
		return asc_handle(s, from, (int)type, id, &r);
	struct chan *c = chan_find(s, id);
	if (c == NULL)
		return WEFT_EPROTO; /* not a channel with a member here */
	int rc;
	switch (type) {
	case MSG_OPEN_SIGS: rc = on_open_sigs(s, c, from, &r); break;
	case MSG_ROOT0: rc = on_root0(s, c, from, &r); break;
	case MSG_PROPOSE: rc = on_propose(s, c, from, msg, len, &r, count - 3); break;
	case MSG_CONSENT: rc = on_consent(s, c, from, &r); break;
	case MSG_REFUSE: rc = on_refuse(s, c, from, &r); break;
	case MSG_FINAL: rc = on_final(s, c, from, msg, len, &r); break;
	case MSG_FETCH: rc = on_fetch(s, c, from, &r); break;
	case MSG_PAYS: rc = on_pays(s, c, from, &r); break;
	case MSG_ROOT_ASK: rc = on_root_ask(s, c, from, msg, len, &r); break;
	case MSG_ROOT_SIGS: rc = on_root_sigs(s, c, from, &r); break;
	case MSG_ROOT_NACK: rc = on_root_nack(s, c, from, &r); break;
	case MSG_ROOT_ALL: rc = on_root_all(s, c, from, msg, len, &r); break;
	case MSG_CLOSE_ASK: rc = on_close_ask(s, c, from, &r); break;
	case MSG_CLOSE_SIGS: rc = on_close_sigs(s, c, from, &r); break;
	case MSG_HEADS: rc = on_heads(s, c, from, &r); break;
	case MSG_UNLOCK_ASK: rc = lock_on_unlock_ask(s, c, from, &r); break;
	case MSG_REFUND_ASK: rc = lock_on_refund_ask(s, c, from, &r); break;
	default: rc = on_close_nack(s, c, from, &r); break;
	}
	return rc;
}

/* Messages between members hosted here, in order, before the step ends. */
static void run_local(struct svc *s)
{
	/* Handling one may queue more: index, not pointer (the array grows). */
	for (size_t i = 0; i < s->nloc; i++) {
		uint8_t *msg = s->loc[i].msg;
		int rc = handle(s, s->env->self, msg, s->loc[i].len);
		if (rc < 0)
			weft_env_log(s->env, WEFT_LOG_ERROR, "channel.local_failed", "rc=%d", rc);
		free(msg);
	}
	s->nloc = 0;
}

/* ---- proto ops ---- */

static int load_chan(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct svc *s = arg;
	struct weft_mp_reader r;
	uint32_t count, three;
	uint64_t status;
	if (klen != 33)
		return 0;
	struct chan *c = chan_new(s);
	memcpy(c->id, (const uint8_t *)key + 1, 32);
	weft_mp_reader_init(&r, val, vlen);
	if (weft_mp_read_array(&r, &count) != 0 || count != 7 || weft_mp_read_uint(&r, &status) != 0 ||
	    weft_mp_read_bin_fixed(&r, c->nonce, sizeof(c->nonce)) != 0 || weft_mp_read_u32(&r, &c->opener) != 0 ||
	    weft_mp_read_array(&r, &c->n) != 0 || c->n < 2 || c->n > WEFT_CHANNEL_MAX || c->opener >= c->n)
		return WEFT_ECORRUPT;
	for (uint32_t m = 0; m < c->n; m++)
		if (weft_mp_read_array(&r, &three) != 0 || three != 3 || weft_mp_read_bin_fixed(&r, c->key[m], 32) != 0 ||
		    weft_mp_read_u32(&r, &c->host[m]) != 0 || weft_mp_read_uint(&r, &c->deposit[m]) != 0)
			return WEFT_ECORRUPT;
	if (weft_mp_read_uint(&r, &c->close_version) != 0 || weft_mp_read_bool(&r, &c->closer) != 0 ||
	    weft_mp_read_uint(&r, &c->disputed_version) != 0)
		return WEFT_ECORRUPT;
	c->status = (uint8_t)status;
	chan_setup(s, c);
	return 0;
}

static int load_root(struct svc *s, struct chan *c, char tag, struct root *r)
{
	uint8_t k[33];
	const void *v;
	size_t vlen;
	chan_key(k, tag, c->id);
	int rc = s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen);
	if (rc != 0)
		return rc;
	rc = root_decode(c, v, vlen, r);
	if (rc == 0)
		root_seal(s, c, r);
	return rc;
}

struct restore_given {
	struct svc *s;
	struct chan *c;
};

/* A consent given before the restart: outstanding while its payment is not
 * applied (the tick forgets it when stale). */
static int restore_given_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)val, (void)vlen;
	struct restore_given *rg = arg;
	const uint8_t *k = key;
	if (klen != GIVEN_KEY_LEN)
		return 0;
	uint32_t payer = weft_be32_get(k + 33);
	uint64_t seq = weft_be64_get(k + 37);
	if (payer < rg->c->n)
		note_given(rg->s, rg->c, payer, seq);
	return 0;
}

/* The rest of a channel's state, after its meta record. */
static int restore(struct svc *s, struct chan *c)
{
	int rc = load_root(s, c, 'r', &c->latest);
	if (rc == WEFT_NOTFOUND)
		root_zero(s, c, &c->latest); /* no all-signed root 0 yet */
	else if (rc != 0)
		return rc;
	rc = load_root(s, c, 's', &c->signing);
	if (rc == 0)
		c->signed_pending = c->signing.version > c->latest.version || (c->status == CH_SIGNING);
	else if (rc != WEFT_NOTFOUND)
		return rc;
	if (c->status == CH_SIGNING && c->ours[c->opener]) {
		root_zero(s, c, &c->build); /* the others' signatures are asked again */
		memcpy(c->build.sig, c->signing.sig, sizeof(c->build.sig));
		memcpy(c->build.have, c->signing.have, sizeof(c->build.have));
		c->building = true;
	}
	if (c->status == CH_OPENING && (rc = sign_open(s, c)) != 0)
		return rc;
	if (c->status == CH_CLOSING && c->close_version)
		sign_close(s, c);
	rc = paydag_restore(s, c);
	if (rc != 0)
		return rc;
	c->rooted = cut_size(c, c->latest.seq);
	uint8_t from[37], to[37];
	member_key(from, 'k', c->id, 0);
	member_key(to, 'k', c->id, UINT32_MAX);
	struct restore_given rg = {s, c};
	rc = s->env->ops->kv_scan(s->env, from, sizeof(from), to, sizeof(to), restore_given_one, &rg);
	if (rc != 0)
		return rc;
	for (uint32_t m = 0; m < c->n; m++) {
		uint8_t k[37];
		const void *v;
		size_t vlen;
		member_key(k, 'e', c->id, m);
		if (s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen) == 0) {
			c->evidence++;
			c->chain[m].equivocated = true;
		}
	}
	return 0;
}

static int channel_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct svc *s = state;
	s->env = env;
	weft_mpw_init(&s->out);
	s->wallets = env->ops->service ? env->ops->service(env, WEFT_WALLET_SERVICE) : NULL;
	s->events = env->ops->service ? env->ops->service(env, WEFT_EVENT_SERVICE) : NULL;
	if (s->wallets == NULL)
		return WEFT_EUNSUPPORTED;
	const char *cid = "";
	uint32_t cidlen = 0;
	weft_params_str(params, plen, "chain_id", &cid, &cidlen);
	weft_ledger_chain(cid, cidlen, s->chain_key);
	uint64_t tick_ms = 100, root_ms = 1000, every = 1000, timeout_ms = 10000, pipeline = 64, delta = 20;
	weft_params_uint(params, plen, "channel_tick_ms", &tick_ms);
	weft_params_uint(params, plen, "channel_root_ms", &root_ms);
	weft_params_uint(params, plen, "channel_root_every", &every);
	weft_params_uint(params, plen, "channel_pay_timeout_ms", &timeout_ms);
	weft_params_uint(params, plen, "channel_pipeline", &pipeline);
	weft_params_uint(params, plen, "channel_lock_delta", &delta);
	if (tick_ms == 0 || root_ms == 0 || every == 0 || timeout_ms == 0 || pipeline == 0 ||
	    pipeline > CHANNEL_PIPELINE_MAX || delta < 2 || delta > (1u << 20))
		return WEFT_EINVAL;
	s->lock_delta = delta;
	s->pipeline = (uint32_t)pipeline;
	s->tick_us = tick_ms * 1000, s->root_us = root_ms * 1000, s->root_every = every;
	s->pay_timeout_us = timeout_ms * 1000;
	s->unsafe_no_chain_check = weft_params_str_is(params, plen, "channel_unsafe", "no_chain");
	uint8_t from = 'c', to = 'c' + 1;
	int rc = env->ops->kv_scan(env, &from, 1, &to, 1, load_chan, s);
	for (size_t i = 0; rc == 0 && i < s->nch; i++)
		rc = restore(s, s->ch[i]);
	return rc == 0 ? asc_restore(s) : rc;
}

static int channel_start(void *state)
{
	struct svc *s = state;
	if (s->nch || s->nasc)
		s->env->ops->set_timer(s->env, TICK_TIMER, s->tick_us);
	return 0;
}

static int channel_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct svc *s = state;
	int rc = handle(s, from, msg, len);
	run_local(s);
	return rc;
}

static void channel_on_timer(void *state, uint64_t id)
{
	struct svc *s = state;
	if (id != TICK_TIMER)
		return;
	for (size_t i = 0; i < s->nch; i++)
		tick_channel(s, s->ch[i]);
	asc_tick(s);
	run_local(s);
	s->env->ops->set_timer(s->env, TICK_TIMER, s->tick_us);
}

/* ---- commands ---- */

static int read_id(struct weft_mp_reader *r, uint8_t id[32])
{
	return weft_mp_read_bin_fixed(r, id, 32) == 0 ? 0 : WEFT_EINVAL;
}

static int refuse(struct weft_mpw *reply, int rc, const char *why)
{
	if (reply)
		weft_mpw_str(reply, why);
	return rc;
}

/* ["channel.open" arg] = [[member (bin 32)...], [host...], [deposit...]] */
static int cmd_open(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	struct open_arg a;
	uint32_t count, c2, c3;
	memset(&a, 0, sizeof(a));
	if (weft_mp_read_array(r, &count) != 0 || count != 3 || weft_mp_read_array(r, &a.n) != 0 ||
	    a.n > WEFT_CHANNEL_MAX)
		return refuse(reply, WEFT_EINVAL, "members, hosts and deposits expected");
	for (uint32_t m = 0; m < a.n; m++)
		if (weft_mp_read_bin_fixed(r, a.key[m], 32) != 0)
			return refuse(reply, WEFT_EINVAL, "a member is not 32 bytes");
	if (weft_mp_read_array(r, &c2) != 0 || c2 != a.n)
		return refuse(reply, WEFT_EINVAL, "one host per member");
	for (uint32_t m = 0; m < a.n; m++)
		if (weft_mp_read_u32(r, &a.host[m]) != 0)
			return refuse(reply, WEFT_EINVAL, "a host is not a node index");
	if (weft_mp_read_array(r, &c3) != 0 || c3 != a.n)
		return refuse(reply, WEFT_EINVAL, "one deposit per member");
	for (uint32_t m = 0; m < a.n; m++)
		if (weft_mp_read_uint(r, &a.deposit[m]) != 0)
			return refuse(reply, WEFT_EINVAL, "a deposit is not an amount");
	const char *why;
	if (open_arg_check(s, &a, &why) != 0)
		return refuse(reply, WEFT_EINVAL, why);
	uint32_t opener = 0;
	while (opener < a.n && a.host[opener] != s->env->self)
		opener++;
	if (opener == a.n)
		return refuse(reply, WEFT_EINVAL, "no member is hosted by this node");
	uint8_t nonce[16];
	s->env->ops->random(s->env, nonce, sizeof(nonce));
	struct chan *c;
	int rc = chan_create(s, &a, nonce, opener, &c, &why);
	if (rc != 0)
		return refuse(reply, rc, why);
	send_open(s, c);
	rc = root0_collect(s, c);
	if (rc != 0)
		return rc;
	char hex[65];
	hex32(hex, c->id);
	weft_mpw_map(reply, 2);
	weft_mpw_str(reply, "channel");
	weft_mpw_str(reply, hex);
	weft_mpw_str(reply, "opener");
	weft_mpw_uint(reply, opener);
	return 0;
}

/* A member named by index (uint) or account (bin 32); nil names the
 * first member hosted here.  0, or WEFT_EINVAL. */
static int read_member(struct weft_mp_reader *r, const struct chan *c, uint32_t *m)
{
	if (weft_mp_peek_nil(r)) {
		weft_mp_read_nil(r);
		for (*m = 0; *m < c->n; (*m)++)
			if (c->ours[*m])
				return 0;
		return WEFT_EINVAL;
	}
	if (weft_mp_peek_type(r) == WEFT_MP_BIN) {
		uint8_t key[32];
		if (weft_mp_read_bin_fixed(r, key, 32) != 0)
			return WEFT_EINVAL;
		for (*m = 0; *m < c->n; (*m)++)
			if (memcmp(c->key[*m], key, 32) == 0)
				return 0;
		return WEFT_EINVAL;
	}
	return weft_mp_read_u32(r, m) == 0 && *m < c->n ? 0 : WEFT_EINVAL;
}

/* [id, from, to, amount] and, for a conditional payment, hash (bin 32)
 * and the hops after `to` [[channel (bin 32), to (bin 32)]...]: from and
 * to as read_member.  The expiries step down by channel_lock_delta from
 * the first lock's, the last one 2 deltas above the ledger's height. */
static int cmd_pay(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint8_t id[32], hash[32];
	uint32_t count, from, to, nhops = 0, two;
	uint64_t amount, seq = 0;
	struct route rt = {0};
	if (weft_mp_read_array(r, &count) != 0 || (count != 4 && count != 6) || read_id(r, id) != 0)
		return refuse(reply, WEFT_EINVAL, "channel, from, to and amount (and hash, hops) expected");
	struct chan *c = chan_find(s, id);
	if (c == NULL)
		return refuse(reply, WEFT_NOTFOUND, "no such channel here");
	if (read_member(r, c, &from) != 0 || read_member(r, c, &to) != 0)
		return refuse(reply, WEFT_EINVAL, "from and to: a member's index or account (from: one hosted here)");
	if (weft_mp_read_uint(r, &amount) != 0)
		return refuse(reply, WEFT_EINVAL, "amount: an unsigned integer");
	if (count == 6) {
		if (weft_mp_read_bin_fixed(r, hash, 32) != 0 || weft_mp_read_array(r, &nhops) != 0 || nhops > ROUTE_MAX)
			return refuse(reply, WEFT_EINVAL, "hash: 32 bytes; hops: at most 8");
		rt.n = nhops;
		for (uint32_t i = 0; i < nhops; i++)
			if (weft_mp_read_array(r, &two) != 0 || two != 2 || weft_mp_read_bin_fixed(r, rt.hop[i].channel, 32) != 0 ||
			    weft_mp_read_bin_fixed(r, rt.hop[i].to, WEFT_LEDGER_KEY_LEN) != 0)
				return refuse(reply, WEFT_EINVAL, "a hop: [channel, member account]");
	}
	uint64_t expiry = chan_height(s) + s->lock_delta * (2 + (uint64_t)nhops);
	for (uint32_t i = 0; i < nhops; i++) {
		rt.hop[i].amount = amount;
		rt.hop[i].expiry = expiry - s->lock_delta * (i + 1);
	}
	const char *why = NULL;
	int rc = count == 6 ? chan_propose(s, c, from, to, amount, WEFT_CHANNEL_LOCK, hash, expiry, &rt, &seq, &why)
			    : chan_propose(s, c, from, to, amount, WEFT_CHANNEL_PAY, NULL, 0, NULL, &seq, &why);
	if (rc != 0)
		return why ? refuse(reply, rc, why) : rc;
	weft_mpw_map(reply, count == 6 ? 4 : 3);
	weft_mpw_str(reply, "from");
	weft_mpw_uint(reply, from);
	weft_mpw_str(reply, "to");
	weft_mpw_uint(reply, to);
	weft_mpw_str(reply, "seq");
	weft_mpw_uint(reply, seq);
	if (count == 6) {
		weft_mpw_str(reply, "expiry");
		weft_mpw_uint(reply, expiry);
	}
	return 0;
}

/* [member key (bin 32), amount]: an invoice for a member hosted here. */
static int cmd_invoice(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint8_t key[WEFT_LEDGER_KEY_LEN], hash[32];
	uint32_t count;
	uint64_t amount;
	if (weft_mp_read_array(r, &count) != 0 || count != 2 || weft_mp_read_bin_fixed(r, key, sizeof(key)) != 0 ||
	    weft_mp_read_uint(r, &amount) != 0)
		return refuse(reply, WEFT_EINVAL, "member and amount expected");
	bool hosted = false;
	for (size_t i = 0; i < s->nch && !hosted; i++)
		for (uint32_t m = 0; m < s->ch[i]->n && !hosted; m++)
			hosted = s->ch[i]->ours[m] && memcmp(s->ch[i]->key[m], key, sizeof(key)) == 0;
	if (!hosted)
		return refuse(reply, WEFT_EINVAL, "the member is in no channel hosted here");
	int rc = lock_invoice(s, key, amount, hash);
	if (rc != 0)
		return rc;
	char hex[65];
	hex32(hex, hash);
	weft_mpw_map(reply, 2);
	weft_mpw_str(reply, "hash");
	weft_mpw_str(reply, hex);
	weft_mpw_str(reply, "amount");
	weft_mpw_uint(reply, amount);
	return 0;
}

int chan_force_close(struct svc *s, struct chan *c)
{
	c->status = CH_CLOSING;
	return post_root(s, c, WEFT_LEDGER_CHANNEL_COMMIT_TAG);
}

/* [id, force] */
static int cmd_close(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint8_t id[32];
	uint32_t count;
	bool force;
	if (weft_mp_read_array(r, &count) != 0 || count != 2 || read_id(r, id) != 0 || weft_mp_read_bool(r, &force) != 0)
		return refuse(reply, WEFT_EINVAL, "channel and force expected");
	struct chan *c = chan_find(s, id);
	if (c == NULL)
		return refuse(reply, WEFT_NOTFOUND, "no such channel here");
	int rc;
	if (force) {
		if (c->status != CH_ACTIVE && c->status != CH_CLOSING)
			return refuse(reply, WEFT_ESTATE, "the channel is not open");
		rc = chan_force_close(s, c);
	} else {
		if (c->status != CH_ACTIVE)
			return refuse(reply, WEFT_ESTATE, "the channel is not open");
		const char *why = unsettled(s, c);
		if (why) {
			maybe_build_root(s, c, true);
			return refuse(reply, WEFT_EAGAIN, why);
		}
		rc = sign_close(s, c);
		if (rc == 0) {
			c->closer = true;
			rc = save_meta(s, c);
			send_close_ask(s, c);
			maybe_submit_close(s, c);
		}
	}
	if (rc != 0)
		return rc;
	weft_mpw_map(reply, 2);
	weft_mpw_str(reply, "kind");
	weft_mpw_str(reply, force ? "unilateral" : "cooperative");
	weft_mpw_str(reply, "version");
	weft_mpw_uint(reply, c->latest.version);
	return 0;
}

static int cmd_root(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint8_t id[32];
	if (read_id(r, id) != 0)
		return refuse(reply, WEFT_EINVAL, "channel expected");
	struct chan *c = chan_find(s, id);
	if (c == NULL)
		return refuse(reply, WEFT_NOTFOUND, "no such channel here");
	maybe_build_root(s, c, true);
	weft_mpw_map(reply, 1);
	weft_mpw_str(reply, "building");
	weft_mpw_bool(reply, c->building);
	return 0;
}

/* [tx, outcome] from the node: what the ledger executed. */
static int cmd_ledger(struct svc *s, struct weft_mp_reader *r)
{
	uint32_t count, len;
	const uint8_t *tx;
	uint64_t outcome;
	if (weft_mp_read_array(r, &count) != 0 || count != 2 || weft_mp_read_bin(r, &tx, &len) != 0 ||
	    weft_mp_read_uint(r, &outcome) != 0 || outcome > 255)
		return WEFT_EINVAL;
	return on_ledger(s, tx, len, (uint8_t)outcome);
}

static int channel_command(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct svc *s = state;
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, arg, alen);
	int rc;
	if (strcmp(what, "channel.ledger") == 0)
		rc = cmd_ledger(s, &r);
	else if (strcmp(what, "channel.open") == 0)
		rc = cmd_open(s, &r, reply);
	else if (strcmp(what, "channel.pay") == 0)
		rc = cmd_pay(s, &r, reply);
	else if (strcmp(what, "channel.invoice") == 0)
		rc = cmd_invoice(s, &r, reply);
	else if (strcmp(what, "channel.close") == 0)
		rc = cmd_close(s, &r, reply);
	else if (strcmp(what, "channel.root") == 0)
		rc = cmd_root(s, &r, reply);
	else if ((rc = asc_command(s, what, &r, reply)) == WEFT_NOTFOUND)
		return WEFT_NOTFOUND;
	run_local(s);
	return rc;
}

/* ---- queries and info ---- */

static const char *status_name(uint8_t st)
{
	static const char *const names[] = {"none", "signing", "opening", "open", "closing", "closed", "failed"};
	return st <= CH_FAILED ? names[st] : "unknown";
}

static void summary(const struct chan *c, struct weft_mpw *w)
{
	char hex[65];
	uint32_t ours = 0;
	for (uint32_t m = 0; m < c->n; m++)
		ours += c->ours[m];
	hex32(hex, c->id);
	weft_mpw_map(w, 6);
	weft_mpw_str(w, "channel");
	weft_mpw_str(w, hex);
	weft_mpw_str(w, "status");
	weft_mpw_str(w, status_name(c->status));
	weft_mpw_str(w, "members");
	weft_mpw_uint(w, c->n);
	weft_mpw_str(w, "hosted");
	weft_mpw_array(w, ours);
	for (uint32_t m = 0; m < c->n; m++)
		if (c->ours[m])
			weft_mpw_uint(w, m);
	weft_mpw_str(w, "version");
	weft_mpw_uint(w, c->latest.version);
	weft_mpw_str(w, "payments");
	weft_mpw_uint(w, c->applied);
}

static void info_one(struct svc *s, const struct chan *c, struct weft_mpw *w)
{
	char hex[65];
	uint64_t t = weft_env_now(s->env);
	uint32_t inflight = 0;
	for (uint32_t m = 0; m < c->n; m++)
		inflight += c->pipe[m].nq;
	hex32(hex, c->id);
	weft_mpw_map(w, 11);
	weft_mpw_str(w, "channel");
	weft_mpw_str(w, hex);
	weft_mpw_str(w, "status");
	weft_mpw_str(w, status_name(c->status));
	weft_mpw_str(w, "opener");
	weft_mpw_uint(w, c->opener);
	weft_mpw_str(w, "members");
	weft_mpw_array(w, c->n);
	for (uint32_t m = 0; m < c->n; m++) {
		const struct chain *ch = &c->chain[m];
		hex32(hex, c->key[m]);
		weft_mpw_map(w, 9);
		weft_mpw_str(w, "account");
		weft_mpw_str(w, hex);
		weft_mpw_str(w, "host");
		weft_mpw_uint(w, c->host[m]);
		weft_mpw_str(w, "hosted");
		weft_mpw_bool(w, c->ours[m]);
		weft_mpw_str(w, "deposit");
		weft_mpw_uint(w, c->deposit[m]);
		/* balance: every payment held here; close_now: the newest root */
		weft_mpw_str(w, "balance");
		weft_mpw_uint(w, c->deposit[m] + paydag_received(c, m) - ch->out);
		weft_mpw_str(w, "close_now");
		weft_mpw_uint(w, c->latest.balance[m]);
		weft_mpw_str(w, "sent");
		weft_mpw_uint(w, ch->out);
		weft_mpw_str(w, "payments");
		weft_mpw_uint(w, ch->np);
		weft_mpw_str(w, "equivocated");
		weft_mpw_bool(w, ch->equivocated);
	}
	weft_mpw_str(w, "root");
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "version");
	weft_mpw_uint(w, c->latest.version);
	weft_mpw_str(w, "payments");
	weft_mpw_uint(w, c->rooted);
	weft_mpw_str(w, "age_ms");
	weft_mpw_uint(w, (t - c->last_root_us) / 1000);
	weft_mpw_str(w, "payments");
	weft_mpw_uint(w, c->applied);
	weft_mpw_str(w, "unrooted");
	weft_mpw_uint(w, c->applied - c->rooted);
	weft_mpw_str(w, "in_flight");
	weft_mpw_array(w, inflight);
	for (uint32_t m = 0; m < c->n; m++) {
		for (uint32_t i = 0; i < c->pipe[m].nq; i++) {
			const struct proposal *pr = &c->pipe[m].q[i];
			weft_mpw_map(w, 6);
			weft_mpw_str(w, "from");
			weft_mpw_uint(w, m);
			weft_mpw_str(w, "to");
			weft_mpw_uint(w, pr->p.to);
			weft_mpw_str(w, "amount");
			weft_mpw_uint(w, pr->p.amount);
			weft_mpw_str(w, "seq");
			weft_mpw_uint(w, pr->p.seq);
			weft_mpw_str(w, "consented");
			weft_mpw_bool(w, pr->consented);
			weft_mpw_str(w, "age_ms");
			weft_mpw_uint(w, (t - pr->started_us) / 1000);
		}
	}
	weft_mpw_str(w, "consents_outstanding");
	weft_mpw_uint(w, c->ngiven);
	weft_mpw_str(w, "evidence");
	weft_mpw_uint(w, c->evidence);
	const struct weft_ledger *l = ledger(s);
	struct weft_ledger_channel_state st;
	weft_mpw_str(w, "ledger");
	if (l && weft_ledger_channel((struct weft_ledger *)l, c->id, &st) == 0) {
		static const char *const names[] = {"none", "open", "closed", "closing"};
		weft_mpw_map(w, 4);
		weft_mpw_str(w, "status");
		weft_mpw_str(w, st.status <= 3 ? names[st.status] : "unknown");
		weft_mpw_str(w, "version");
		weft_mpw_uint(w, st.status == WEFT_LEDGER_CH_CLOSING ? st.version : 0);
		weft_mpw_str(w, "deadline");
		weft_mpw_uint(w, st.status == WEFT_LEDGER_CH_CLOSING ? st.deadline : 0);
		weft_mpw_str(w, "height");
		weft_mpw_uint(w, l->height);
	} else {
		weft_mpw_nil(w);
	}
}

static int channel_query(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct svc *s = state;
	if (strcmp(what, "channel.list") == 0) {
		weft_mpw_array(reply, (uint32_t)s->nch);
		for (size_t i = 0; i < s->nch; i++)
			summary(s->ch[i], reply);
		return 0;
	}
	if (strcmp(what, "channel.info") == 0) {
		struct weft_mp_reader r;
		uint8_t id[32];
		weft_mp_reader_init(&r, arg, alen);
		if (arg == NULL || read_id(&r, id) != 0)
			return WEFT_EINVAL;
		struct chan *c = chan_find(s, id);
		if (c == NULL)
			return WEFT_ENOENT;
		info_one(s, c, reply);
		return 0;
	}
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, arg, arg ? alen : 0);
	return asc_query(s, what, &r, reply);
}

static void channel_info(void *state, struct weft_mpw *w)
{
	struct svc *s = state;
	uint64_t payments = 0, open = 0;
	for (size_t i = 0; i < s->nch; i++) {
		payments += s->ch[i]->applied;
		open += s->ch[i]->status == CH_ACTIVE;
	}
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "channels");
	weft_mpw_uint(w, s->nch);
	weft_mpw_str(w, "open");
	weft_mpw_uint(w, open);
	weft_mpw_str(w, "payments");
	weft_mpw_uint(w, payments);
}

static void channel_destroy(void *state)
{
	struct svc *s = state;
	for (size_t i = 0; i < s->nch; i++) {
		struct chan *c = s->ch[i];
		for (uint32_t k = 0; k < c->nstash; k++)
			free(c->stash[k].msg);
		free(c->stash);
		for (uint32_t m = 0; m < c->n; m++)
			free(c->pipe[m].q);
		free(c->given);
		paydag_free(c);
		free(c);
	}
	free(s->ch);
	asc_free(s);
	weft_mpw_free(&s->out);
	for (size_t i = 0; i < s->nloc; i++)
		free(s->loc[i].msg);
	free(s->loc);
}

#define CHANNEL_OPS(NAME, INIT)                                                                          \
	{                                                                                                \
		.abi = WEFT_PROTO_ABI, .name = NAME, .state_size = sizeof(struct svc), .init = INIT,     \
		.start = channel_start, .on_message = channel_on_message, .on_timer = channel_on_timer, \
		.query = channel_query, .command = channel_command, .info = channel_info,               \
		.destroy = channel_destroy,                                                              \
	}

/* The Byzantine strategies (faults.md): the honest service with one
 * behaviour switched on, "stale" (post_root), "overspend" (pay),
 * "equivocate" (propose_twin) and "withhold" (lock.c, unlock asks). */
#define CHANNEL_STRATEGY_INIT(NAME, FLAG)                                                           \
	static int NAME##_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen) \
	{                                                                                             \
		int rc = channel_init(state, env, params, plen);                                     \
		((struct svc *)state)->FLAG = true;                                                   \
		return rc;                                                                            \
	}
CHANNEL_STRATEGY_INIT(stale, post_stale)
CHANNEL_STRATEGY_INIT(overspend, overspend)
CHANNEL_STRATEGY_INIT(equivocate, equivocate)
CHANNEL_STRATEGY_INIT(withhold, withhold)

static const struct weft_proto_ops stale_ops = CHANNEL_OPS("channel/stale", stale_init);
static const struct weft_proto_ops equivocate_ops = CHANNEL_OPS("channel/equivocate", equivocate_init);
static const struct weft_proto_ops overspend_ops = CHANNEL_OPS("channel/overspend", overspend_init);
static const struct weft_proto_ops withhold_ops = CHANNEL_OPS("channel/withhold", withhold_init);

static const struct weft_proto_strategy channel_strategies[] = {
	{"stale", "a member whose unilateral close posts root 0 (its first deposits), a stale root the others "
		  "must dispute",
	 &stale_ops},
	{"overspend", "a member that proposes payments beyond its balance", &overspend_ops},
	{"equivocate", "a member that pays two members with one seq (a double spend), both finalized",
	 &equivocate_ops},
	{"withhold",
	 "a member that never unlocks its locks (their payees claim them on the ledger), a provider that never "
	 "reveals t (it claims on the ledger)",
	 &withhold_ops},
	{NULL, NULL, NULL},
};

const struct weft_proto_ops weft_channel_service = {
	.strategies = channel_strategies,
	.abi = WEFT_PROTO_ABI,
	.name = "channel",
	.state_size = sizeof(struct svc),
	.init = channel_init,
	.start = channel_start,
	.on_message = channel_on_message,
	.on_timer = channel_on_timer,
	.query = channel_query,
	.command = channel_command,
	.info = channel_info,
	.destroy = channel_destroy,
};
