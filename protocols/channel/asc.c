/* asc.c - atomic service channels (A402 without a TEE; docs/protocols/
 * asc.md): a client pays a provider per request off the ledger, and the
 * provider is paid only by revealing t, the key of the result.  One round:
 *
 *   client    REQUEST (seq, service, payload, price)           -> provider
 *   provider  hands the request to a local service (event "service_request",
 *             answered by command asc.respond), picks t, T = t·G, encrypts
 *             the result under a key derived from t, pre-signs the paid
 *             state under T and signs the evidence (request hash, hash of
 *             the encrypted result, T): OFFER                    -> client
 *   client    pre-verifies, checks the state is exactly the last one paid
 *             `price` more, keeps the evidence, signs: ACCEPT    -> provider
 *   provider  adapts its pre-signature with t (it can now claim the state
 *             on the ledger, which publishes t): REVEAL (t)      -> client
 *   client    adapts too, decrypts: the result.
 *
 * If the provider claims on the ledger instead of revealing, the client's
 * node reads t in the claim and decrypts.  A provider that never reveals
 * or claims is never paid: from the channel's expiry the client's node
 * takes the whole deposit back (asc.refund).  Everything a node signs or
 * accepts is persisted before its answer leaves ('a' meta, 'b' the latest
 * state both signed, 'g' the round, 'v' + seq the client's evidence), and
 * each side repeats its last message until the other moves: a restart
 * resumes the round. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "weft/adaptor.h"
#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/util.h"

#include "chan.h"

#define REQUEST_KEY "weft/asc-request/v1"
#define EVIDENCE_KEY "weft/asc-evidence/v1"
#define RESULT_KEY "weft/asc-result/v1"
#define LEDGER_RETRY_US (3 * 1000000ull)

/* ---- channels in memory and in kv ---- */

static struct asc *asc_find(struct svc *s, const uint8_t id[32])
{
	for (size_t i = 0; i < s->nasc; i++)
		if (memcmp(s->asc[i]->id, id, 32) == 0)
			return s->asc[i];
	return NULL;
}

static struct asc *asc_new(struct svc *s)
{
	struct asc *a = weft_xcalloc(1, sizeof(*a));
	if (s->nasc == s->asccap) {
		s->asccap = s->asccap ? 2 * s->asccap : 8;
		s->asc = weft_xrealloc(s->asc, s->asccap, sizeof(*s->asc));
	}
	s->asc[s->nasc++] = a;
	chan_arm_tick(s);
	return a;
}

static void round_clear(struct asc_round *r)
{
	free(r->payload);
	free(r->enc);
	sodium_memzero(r, sizeof(*r));
}

static int put(struct svc *s, char tag, const uint8_t id[32], const struct weft_mpw *w)
{
	uint8_t k[33];
	chan_key(k, tag, id);
	return s->env->ops->kv_put(s->env, k, sizeof(k), w->buf, w->len);
}

/* 'a': [open (its ledger encoding), client host, provider host, status, expires] */
static int save_meta(struct svc *s, const struct asc *a)
{
	struct weft_mpw w, tx;
	weft_mpw_init(&w);
	weft_mpw_init(&tx);
	weft_ledger_asc_open_encode(&a->open, &tx);
	weft_mpw_array(&w, 5);
	weft_mpw_bin(&w, tx.buf, (uint32_t)tx.len);
	weft_mpw_uint(&w, a->client_host);
	weft_mpw_uint(&w, a->provider_host);
	weft_mpw_uint(&w, a->status);
	weft_mpw_uint(&w, a->expires);
	int rc = put(s, 'a', a->id, &w);
	weft_mpw_free(&w);
	weft_mpw_free(&tx);
	return rc;
}

/* 'b': [state, client sig, provider sig, t] */
static int save_latest(struct svc *s, const struct asc *a)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_ledger_asc_state_encode(&a->latest, &w);
	weft_mpw_bin(&w, a->latest_csig, 64);
	weft_mpw_bin(&w, a->latest_psig, 64);
	weft_mpw_bin(&w, a->latest_t, 32);
	int rc = put(s, 'b', a->id, &w);
	weft_mpw_free(&w);
	return rc;
}

/* 'g': [phase, price, service, payload, request, state, presig, evidence,
 * client sig, t, encrypted result] (t: the provider's from the offer on) */
static int save_round(struct svc *s, const struct asc *a)
{
	const struct asc_round *r = &a->r;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 11);
	weft_mpw_uint(&w, r->phase);
	weft_mpw_uint(&w, r->price);
	weft_mpw_str(&w, r->service);
	weft_mpw_bin(&w, r->payload, r->plen);
	weft_mpw_bin(&w, r->req, 32);
	weft_ledger_asc_state_encode(&r->st, &w);
	weft_mpw_bin(&w, r->presig, 65);
	weft_mpw_bin(&w, r->evidence, 64);
	weft_mpw_bin(&w, r->csig, 64);
	weft_mpw_bin(&w, r->t, 32);
	weft_mpw_bin(&w, r->enc, r->elen);
	int rc = put(s, 'g', a->id, &w);
	weft_mpw_free(&w);
	return rc;
}

static uint8_t *dup_bin(const uint8_t *b, uint32_t len)
{
	uint8_t *d = weft_xmalloc(len ? len : 1);
	memcpy(d, b, len);
	return d;
}

static int load_round(struct svc *s, struct asc *a)
{
	uint8_t k[33];
	const void *v;
	size_t vlen;
	chan_key(k, 'g', a->id);
	if (s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen) != 0)
		return 0;
	struct weft_mp_reader r;
	struct asc_round *q = &a->r;
	uint32_t count, slen, plen, elen;
	uint64_t phase;
	const char *svc;
	const uint8_t *payload, *enc;
	weft_mp_reader_init(&r, v, vlen);
	if (weft_mp_read_array(&r, &count) != 0 || count != 11 || weft_mp_read_uint(&r, &phase) != 0 ||
	    phase > R_ACCEPTED || weft_mp_read_uint(&r, &q->price) != 0 || weft_mp_read_str(&r, &svc, &slen) != 0 ||
	    slen > ASC_SERVICE_MAX || weft_mp_read_bin(&r, &payload, &plen) != 0 ||
	    weft_mp_read_bin_fixed(&r, q->req, 32) != 0 || weft_ledger_asc_state_read(&r, &q->st) != 0 ||
	    weft_mp_read_bin_fixed(&r, q->presig, 65) != 0 || weft_mp_read_bin_fixed(&r, q->evidence, 64) != 0 ||
	    weft_mp_read_bin_fixed(&r, q->csig, 64) != 0 || weft_mp_read_bin_fixed(&r, q->t, 32) != 0 ||
	    weft_mp_read_bin(&r, &enc, &elen) != 0)
		return WEFT_ECORRUPT;
	q->phase = (uint8_t)phase;
	memcpy(q->service, svc, slen);
	q->service[slen] = '\0';
	q->payload = dup_bin(payload, plen), q->plen = plen;
	q->enc = dup_bin(enc, elen), q->elen = elen;
	return 0;
}

static int load_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct svc *s = arg;
	struct weft_mp_reader r;
	uint32_t count, tlen;
	const uint8_t *tx;
	uint64_t ch, ph, status;
	if (klen != 33)
		return 0;
	struct asc *a = asc_new(s);
	memcpy(a->id, (const uint8_t *)key + 1, 32);
	weft_mp_reader_init(&r, val, vlen);
	if (weft_mp_read_array(&r, &count) != 0 || count != 5 || weft_mp_read_bin(&r, &tx, &tlen) != 0 ||
	    weft_ledger_asc_open_decode(tx, tlen, &a->open) != 0 || weft_mp_read_uint(&r, &ch) != 0 ||
	    weft_mp_read_uint(&r, &ph) != 0 || weft_mp_read_uint(&r, &status) != 0 || status < ASC_OPENING ||
	    status > ASC_FAILED || weft_mp_read_uint(&r, &a->expires) != 0 || ch > UINT32_MAX || ph > UINT32_MAX)
		return WEFT_ECORRUPT;
	a->client_host = (uint32_t)ch, a->provider_host = (uint32_t)ph;
	a->status = (uint8_t)status;
	a->client_here = a->client_host == s->env->self;
	a->provider_here = a->provider_host == s->env->self;
	return 0;
}

/* The state before any round: the whole deposit the client's. */
static void initial_state(struct asc *a)
{
	memset(&a->latest, 0, sizeof(a->latest));
	a->latest.free = a->open.deposit;
	a->latest.status = WEFT_LEDGER_ASC_OPEN;
}

int asc_restore(struct svc *s)
{
	uint8_t from = 'a', to = 'a' + 1;
	int rc = s->env->ops->kv_scan(s->env, &from, 1, &to, 1, load_one, s);
	for (size_t i = 0; rc == 0 && i < s->nasc; i++) {
		struct asc *a = s->asc[i];
		uint8_t k[33];
		const void *v;
		size_t vlen;
		struct weft_mp_reader r;
		uint32_t count;
		initial_state(a);
		chan_key(k, 'b', a->id);
		if (s->env->ops->kv_get(s->env, k, sizeof(k), &v, &vlen) == 0) {
			weft_mp_reader_init(&r, v, vlen);
			if (weft_mp_read_array(&r, &count) != 0 || count != 4 ||
			    weft_ledger_asc_state_read(&r, &a->latest) != 0 ||
			    weft_mp_read_bin_fixed(&r, a->latest_csig, 64) != 0 ||
			    weft_mp_read_bin_fixed(&r, a->latest_psig, 64) != 0 ||
			    weft_mp_read_bin_fixed(&r, a->latest_t, 32) != 0)
				rc = WEFT_ECORRUPT;
		}
		if (rc == 0)
			rc = load_round(s, a);
		/* A round in progress is taken up again: its last message goes
		 * out at the first tick. */
		a->r.started_us = weft_env_now(s->env);
		a->r.sent_us = 0;
	}
	return rc;
}

void asc_free(struct svc *s)
{
	for (size_t i = 0; i < s->nasc; i++) {
		round_clear(&s->asc[i]->r);
		free(s->asc[i]);
	}
	free(s->asc);
	s->asc = NULL;
	s->nasc = s->asccap = 0;
}

/* ---- hashes, signatures, events ---- */

static void request_hash(const struct svc *s, const struct asc *a, uint64_t seq, const char *service,
			 const uint8_t *payload, uint32_t plen, uint64_t price, uint8_t out[32])
{
	crypto_generichash_state st;
	uint8_t b[8];
	crypto_generichash_init(&st, (const unsigned char *)REQUEST_KEY, sizeof(REQUEST_KEY) - 1, 32);
	crypto_generichash_update(&st, s->chain_key, 32);
	crypto_generichash_update(&st, a->id, 32);
	weft_be64_put(b, seq);
	crypto_generichash_update(&st, b, 8);
	uint8_t sl = (uint8_t)strlen(service);
	crypto_generichash_update(&st, &sl, 1);
	crypto_generichash_update(&st, (const uint8_t *)service, sl);
	weft_be64_put(b, plen);
	crypto_generichash_update(&st, b, 8);
	crypto_generichash_update(&st, payload, plen);
	weft_be64_put(b, price);
	crypto_generichash_update(&st, b, 8);
	crypto_generichash_final(&st, out, 32);
}

/* What the provider's evidence signature covers: the request, the
 * encrypted result and T, so a result that turns out wrong once decrypted
 * is provably the provider's. */
static void evidence_hash(const struct svc *s, const struct asc *a, const struct asc_round *r, uint8_t out[32])
{
	uint8_t h[32];
	crypto_generichash_state st;
	crypto_generichash(h, 32, r->enc, r->elen, NULL, 0);
	crypto_generichash_init(&st, (const unsigned char *)EVIDENCE_KEY, sizeof(EVIDENCE_KEY) - 1, 32);
	crypto_generichash_update(&st, s->chain_key, 32);
	crypto_generichash_update(&st, a->id, 32);
	crypto_generichash_update(&st, r->req, 32);
	crypto_generichash_update(&st, h, 32);
	crypto_generichash_update(&st, r->st.point, 33);
	crypto_generichash_final(&st, out, 32);
}

/* The result's key: BLAKE2b-256 keyed "weft/asc-result/v1" over t.  The
 * ciphertext is XChaCha20-Poly1305 with a zero nonce (one key per round)
 * and the request hash as associated data. */
static void result_key(const uint8_t t[32], uint8_t key[32])
{
	crypto_generichash(key, 32, t, 32, (const unsigned char *)RESULT_KEY, sizeof(RESULT_KEY) - 1);
}

static void state_hash(const struct svc *s, const struct asc *a, const struct weft_ledger_asc_state *st, uint8_t m[32])
{
	weft_ledger_asc_state_sighash(s->chain_key, a->id, st, m);
}

static void event(struct svc *s, const struct asc *a, const char *status, uint64_t seq, const char *reason,
		  const uint8_t *result, uint32_t rlen)
{
	char hex[65];
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_hex_encode(hex, a->id, 32);
	weft_mpw_map(&w, 4 + (reason != NULL) + (result != NULL));
	weft_mpw_str(&w, "event");
	weft_mpw_str(&w, "asc");
	weft_mpw_str(&w, "channel");
	weft_mpw_str(&w, hex);
	weft_mpw_str(&w, "status");
	weft_mpw_str(&w, status);
	weft_mpw_str(&w, "seq");
	weft_mpw_uint(&w, seq);
	if (reason) {
		weft_mpw_str(&w, "reason");
		weft_mpw_str(&w, reason);
	}
	if (result) {
		weft_mpw_str(&w, "result");
		weft_mpw_bin(&w, result, rlen);
	}
	chan_event_end(s, &w);
}

/* Starts a message of type for a (fields after the id). */
static struct weft_mpw *msg(struct svc *s, const struct asc *a, int type, uint32_t fields)
{
	weft_mpw_reset(&s->out);
	weft_mpw_array(&s->out, 3 + fields);
	weft_mpw_uint(&s->out, WEFT_CHANNEL_PROTO_VERSION);
	weft_mpw_uint(&s->out, (uint64_t)type);
	weft_mpw_bin(&s->out, a->id, 32);
	return &s->out;
}

static void to_client(struct svc *s, const struct asc *a, const char *kind)
{
	chan_send_host(s, a->client_host, kind);
}

static void to_provider(struct svc *s, const struct asc *a, const char *kind)
{
	chan_send_host(s, a->provider_host, kind);
}

static void submit(struct svc *s, struct asc *a, const struct weft_mpw *tx)
{
	chan_submit(s, tx);
	a->ledger_sent_us = weft_env_now(s->env);
}

/* ---- the round, message by message ---- */

static void send_request(struct svc *s, struct asc *a)
{
	const struct asc_round *r = &a->r;
	struct weft_mpw *w = msg(s, a, MSG_ASC_REQUEST, 4);
	weft_mpw_uint(w, r->st.seq);
	weft_mpw_str(w, r->service);
	weft_mpw_bin(w, r->payload, r->plen);
	weft_mpw_uint(w, r->price);
	to_provider(s, a, "asc.request");
}

static void send_offer(struct svc *s, struct asc *a)
{
	const struct asc_round *r = &a->r;
	struct weft_mpw *w = msg(s, a, MSG_ASC_OFFER, 5);
	weft_mpw_uint(w, r->st.seq);
	weft_ledger_asc_state_encode(&r->st, w);
	weft_mpw_bin(w, r->presig, 65);
	weft_mpw_bin(w, r->enc, r->elen);
	weft_mpw_bin(w, r->evidence, 64);
	to_client(s, a, "asc.offer");
}

static void send_accept(struct svc *s, struct asc *a)
{
	struct weft_mpw *w = msg(s, a, MSG_ASC_ACCEPT, 2);
	weft_mpw_uint(w, a->r.st.seq);
	weft_mpw_bin(w, a->r.csig, 64);
	to_provider(s, a, "asc.accept");
}

static void send_reveal(struct svc *s, struct asc *a, uint64_t seq, const uint8_t t[32])
{
	struct weft_mpw *w = msg(s, a, MSG_ASC_REVEAL, 2);
	weft_mpw_uint(w, seq);
	weft_mpw_bin(w, t, 32);
	to_client(s, a, "asc.reveal");
}

static void send_refuse(struct svc *s, struct asc *a, uint64_t seq, const char *why)
{
	struct weft_mpw *w = msg(s, a, MSG_ASC_REFUSE, 2);
	weft_mpw_uint(w, seq);
	weft_mpw_str(w, why);
	to_client(s, a, "asc.refuse");
}

static bool same_state(const struct weft_ledger_asc_state *x, const struct weft_ledger_asc_state *y)
{
	return x->seq == y->seq && x->free == y->free && x->locked == y->locked && x->provider == y->provider &&
	       x->status == y->status && memcmp(x->point, y->point, 33) == 0 && memcmp(x->request, y->request, 32) == 0;
}

/* The state after `price` more is paid: the one an offer must carry. */
static struct weft_ledger_asc_state paid_state(const struct asc *a, uint64_t price, const uint8_t T[33],
					       const uint8_t req[32])
{
	struct weft_ledger_asc_state st = a->latest;
	st.seq = a->latest.seq + 1;
	st.free -= price;
	st.provider += price;
	st.status = WEFT_LEDGER_ASC_OPEN;
	memcpy(st.point, T, 33);
	memcpy(st.request, req, 32);
	return st;
}

/* Provider: [seq, service, payload, price]. */
static int on_request(struct svc *s, struct asc *a, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t seq, price;
	const char *svc;
	const uint8_t *payload;
	uint32_t slen, plen;
	if (weft_mp_read_uint(r, &seq) != 0 || weft_mp_read_str(r, &svc, &slen) != 0 || slen == 0 ||
	    slen > ASC_SERVICE_MAX || weft_mp_read_bin(r, &payload, &plen) != 0 || plen > ASC_PAYLOAD_MAX ||
	    weft_mp_read_uint(r, &price) != 0)
		return WEFT_EDECODE;
	if (!a->provider_here || from != a->client_host)
		return WEFT_EPROTO;
	struct asc_round *q = &a->r;
	uint8_t req[32];
	char name[ASC_SERVICE_MAX + 1];
	memcpy(name, svc, slen);
	name[slen] = '\0';
	request_hash(s, a, seq, name, payload, plen, price, req);
	if (q->phase != R_NONE && seq == q->st.seq) {
		if (memcmp(req, q->req, 32) == 0) { /* asked again: the same answer */
			if (q->phase == R_OFFERED)
				send_offer(s, a);
			return 0;
		}
		/* The client gave that request up (nothing of it is signed) and
		 * asks another under the same seq. */
		round_clear(q);
	}
	if (seq == a->latest.seq && seq > 0) {
		send_reveal(s, a, seq, a->latest_t); /* the client missed the reveal */
		return 0;
	}
	if (a->status == ASC_OPENING)
		return 0; /* our ledger has not applied the open yet (the client's has): it asks again */
	uint64_t h = chan_height(s);
	const char *why = NULL;
	if (a->status != ASC_ACTIVE)
		why = "not_open";
	else if (q->phase != R_NONE)
		why = "busy";
	else if (seq != a->latest.seq + 1)
		why = "wrong_seq";
	else if (price == 0 || price > a->latest.free)
		why = "bad_price";
	else if (h && h + s->lock_delta >= a->expires)
		why = "expiring";
	else if (s->wallets->presign == NULL)
		why = "no_services_here";
	if (why) {
		send_refuse(s, a, seq, why);
		return 0;
	}
	q->phase = R_REQUESTED;
	q->price = price;
	memcpy(q->service, name, slen + 1);
	q->payload = dup_bin(payload, plen), q->plen = plen;
	q->st.seq = seq;
	q->st.status = WEFT_LEDGER_ASC_OPEN; /* a state before the offer has one too: the round record reads it */
	q->started_us = weft_env_now(s->env);
	memcpy(q->req, req, 32);
	int rc = save_round(s, a);
	if (rc != 0)
		return rc;
	/* The host hands it to the service registered under that name; the
	 * answer comes back as command asc.respond. */
	char hex[65];
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_hex_encode(hex, a->id, 32);
	weft_mpw_map(&w, 6);
	weft_mpw_str(&w, "event");
	weft_mpw_str(&w, "service_request");
	weft_mpw_str(&w, "channel");
	weft_mpw_str(&w, hex);
	weft_mpw_str(&w, "seq");
	weft_mpw_uint(&w, seq);
	weft_mpw_str(&w, "service");
	weft_mpw_str(&w, name);
	weft_mpw_str(&w, "payload");
	weft_mpw_bin(&w, payload, plen);
	weft_mpw_str(&w, "price");
	weft_mpw_uint(&w, price);
	chan_event_end(s, &w);
	return 0;
}

/* Provider: the service answered (ok with result, or not with why). */
static int respond(struct svc *s, struct asc *a, uint64_t seq, bool ok, const uint8_t *result, uint32_t rlen,
		   const char *why)
{
	struct asc_round *q = &a->r;
	if (!a->provider_here || q->phase != R_REQUESTED || q->st.seq != seq)
		return WEFT_ESTATE;
	if (!ok) {
		send_refuse(s, a, seq, why);
		event(s, a, "refused", seq, why, NULL, 0);
		round_clear(q);
		uint8_t k[33];
		chan_key(k, 'g', a->id);
		return s->env->ops->kv_del(s->env, k, sizeof(k));
	}
	if (rlen > ASC_RESULT_MAX)
		return WEFT_ETOOBIG;
	uint8_t T[33], key[32], m[32];
	do
		s->env->ops->random(s->env, q->t, 32);
	while (weft_adaptor_point(q->t, T) != 0);
	result_key(q->t, key);
	q->enc = weft_xmalloc(rlen + crypto_aead_xchacha20poly1305_ietf_ABYTES);
	static const uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	unsigned long long elen;
	crypto_aead_xchacha20poly1305_ietf_encrypt(q->enc, &elen, result, rlen, q->req, 32, NULL, nonce, key);
	sodium_memzero(key, sizeof(key));
	q->elen = (uint32_t)elen;
	q->st = paid_state(a, q->price, T, q->req);
	state_hash(s, a, &q->st, m);
	int rc = s->wallets->presign(s->wallets->ctx, a->open.provider, m, T, q->presig);
	uint8_t ev[32];
	evidence_hash(s, a, q, ev);
	if (rc == 0)
		rc = s->wallets->sign(s->wallets->ctx, a->open.provider, ev, q->evidence);
	if (rc != 0)
		return rc;
	q->phase = R_OFFERED;
	q->sent_us = weft_env_now(s->env);
	if ((rc = save_round(s, a)) != 0)
		return rc;
	send_offer(s, a);
	return 0;
}

/* Client: [seq, state, presig, encrypted result, evidence sig]. */
static int on_offer(struct svc *s, struct asc *a, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t seq;
	struct weft_ledger_asc_state st;
	uint8_t presig[65], evidence[64], m[32];
	const uint8_t *enc;
	uint32_t elen;
	if (weft_mp_read_uint(r, &seq) != 0 || weft_ledger_asc_state_read(r, &st) != 0 ||
	    weft_mp_read_bin_fixed(r, presig, 65) != 0 || weft_mp_read_bin(r, &enc, &elen) != 0 ||
	    elen > ASC_RESULT_MAX + crypto_aead_xchacha20poly1305_ietf_ABYTES ||
	    elen < crypto_aead_xchacha20poly1305_ietf_ABYTES || weft_mp_read_bin_fixed(r, evidence, 64) != 0)
		return WEFT_EDECODE;
	if (!a->client_here || from != a->provider_host)
		return WEFT_EPROTO;
	struct asc_round *q = &a->r;
	if (q->phase == R_ACCEPTED && seq == q->st.seq) {
		send_accept(s, a); /* our accept was lost */
		return 0;
	}
	if (q->phase != R_REQUESTED || seq != q->st.seq || a->status != ASC_ACTIVE)
		return 0; /* not the round we asked for, or the channel ended */
	/* Exactly the last state paid `price` more, for this request, under
	 * the offer's point; the pre-signature and the evidence verify. */
	struct weft_ledger_asc_state want = paid_state(a, q->price, st.point, q->req);
	if (!same_state(&want, &st))
		return WEFT_EPROTO;
	state_hash(s, a, &st, m);
	if (weft_adaptor_preverify(presig, a->open.provider, m, st.point) != 0)
		return WEFT_ECRYPTO;
	q->st = st;
	memcpy(q->presig, presig, 65);
	memcpy(q->evidence, evidence, 64);
	q->enc = dup_bin(enc, elen), q->elen = elen;
	uint8_t ev[32];
	evidence_hash(s, a, q, ev);
	if (s->wallets->verify(s->wallets->ctx, a->open.provider, ev, evidence) != 0) {
		free(q->enc);
		q->enc = NULL, q->elen = 0;
		return WEFT_ECRYPTO;
	}
	int rc = s->wallets->sign(s->wallets->ctx, a->open.client, m, q->csig);
	if (rc != 0)
		return rc;
	q->phase = R_ACCEPTED;
	q->sent_us = weft_env_now(s->env);
	if ((rc = save_round(s, a)) != 0)
		return rc;
	send_accept(s, a);
	return 0;
}

/* The round q (state signed by both now) becomes the latest. */
static int round_done(struct svc *s, struct asc *a, const uint8_t psig[64])
{
	struct asc_round *q = &a->r;
	a->latest = q->st;
	memcpy(a->latest_csig, q->csig, 64);
	memcpy(a->latest_psig, psig, 64);
	memcpy(a->latest_t, q->t, 32);
	int rc = save_latest(s, a);
	uint8_t k[33];
	chan_key(k, 'g', a->id);
	if (rc == 0)
		rc = s->env->ops->kv_del(s->env, k, sizeof(k));
	round_clear(q);
	return rc;
}

/* Provider: the latest state both signed, claimed on the ledger (t public). */
static void claim_latest(struct svc *s, struct asc *a)
{
	struct weft_ledger_asc_final f;
	struct weft_mpw w;
	memset(&f, 0, sizeof(f));
	memcpy(f.id, a->id, 32);
	f.st = a->latest;
	memcpy(f.client_sig, a->latest_csig, 64);
	memcpy(f.provider_sig, a->latest_psig, 64);
	memcpy(f.secret, a->latest_t, 32);
	weft_mpw_init(&w);
	weft_ledger_asc_final_encode(WEFT_LEDGER_ASC_CLAIM_TAG, &f, &w);
	submit(s, a, &w);
	weft_mpw_free(&w);
	weft_env_metric(s->env, "asc.claims", 1);
}

/* Provider: [seq, client sig]. */
static int on_accept(struct svc *s, struct asc *a, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t seq;
	uint8_t csig[64], m[32], psig[64];
	if (weft_mp_read_uint(r, &seq) != 0 || weft_mp_read_bin_fixed(r, csig, 64) != 0)
		return WEFT_EDECODE;
	if (!a->provider_here || from != a->client_host)
		return WEFT_EPROTO;
	struct asc_round *q = &a->r;
	if (seq == a->latest.seq && seq > 0) {
		send_reveal(s, a, seq, a->latest_t);
		return 0;
	}
	if (q->phase != R_OFFERED || seq != q->st.seq)
		return 0;
	/* Reveal only while a claim of the paid state can still land: an
	 * accept after the refund, or too near the expiry, would give the
	 * result away for nothing (found by tla/AscRound.tla, LateAccept). */
	uint64_t h = chan_height(s);
	if (a->status != ASC_ACTIVE || (h && h + s->lock_delta >= a->expires))
		return 0;
	state_hash(s, a, &q->st, m);
	if (s->wallets->verify(s->wallets->ctx, a->open.client, m, csig) != 0)
		return WEFT_ECRYPTO;
	memcpy(q->csig, csig, 64);
	if (weft_adaptor_adapt(q->presig, q->t, a->open.provider, m, psig) != 0)
		return WEFT_ECRYPTO; /* our own pre-signature: cannot happen */
	uint8_t t[32];
	memcpy(t, q->t, 32);
	int rc = round_done(s, a, psig);
	if (rc != 0)
		return rc;
	if (s->withhold) { /* strategy "withhold": no reveal, a claim on the ledger at once */
		claim_latest(s, a);
		return 0;
	}
	send_reveal(s, a, seq, t);
	event(s, a, "paid", seq, NULL, NULL, 0);
	return 0;
}

/* Client: t for the accepted round (from a reveal or a claim): adapted,
 * the result decrypted.  0, or WEFT_ECRYPTO for a t that is not T's. */
static int finish_with(struct svc *s, struct asc *a, const uint8_t t[32], const char *how)
{
	struct asc_round *q = &a->r;
	uint8_t T[33], m[32], psig[64], key[32];
	if (weft_adaptor_point(t, T) != 0 || memcmp(T, q->st.point, 33) != 0)
		return WEFT_ECRYPTO;
	state_hash(s, a, &q->st, m);
	if (weft_adaptor_adapt(q->presig, t, a->open.provider, m, psig) != 0)
		return WEFT_ECRYPTO;
	memcpy(q->t, t, 32);
	uint32_t rlen = q->elen - crypto_aead_xchacha20poly1305_ietf_ABYTES;
	uint8_t *result = weft_xmalloc(rlen ? rlen : 1);
	static const uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
	unsigned long long got;
	result_key(t, key);
	bool opened = crypto_aead_xchacha20poly1305_ietf_decrypt(result, &got, NULL, q->enc, q->elen, q->req, 32, nonce,
								key) == 0;
	sodium_memzero(key, sizeof(key));
	/* The evidence stays: the request, the encrypted result, the
	 * provider's signature over both and T, and t. */
	struct weft_mpw w;
	uint8_t k[41];
	weft_mpw_init(&w);
	weft_mpw_array(&w, 5);
	weft_mpw_bin(&w, q->req, 32);
	weft_mpw_bin(&w, q->enc, q->elen);
	weft_mpw_bin(&w, q->evidence, 64);
	weft_mpw_bin(&w, q->st.point, 33);
	weft_mpw_bin(&w, t, 32);
	chan_key(k, 'v', a->id);
	weft_be64_put(k + 33, q->st.seq);
	int rc = s->env->ops->kv_put(s->env, k, sizeof(k), w.buf, w.len);
	weft_mpw_free(&w);
	uint64_t seq = q->st.seq;
	if (rc == 0)
		rc = round_done(s, a, psig);
	if (rc == 0)
		event(s, a, opened ? "result" : "bad_result", seq,
		      opened ? how : "the result does not decrypt under t: the evidence is kept", opened ? result : NULL,
		      opened ? (uint32_t)got : 0);
	free(result);
	return rc;
}

/* Client: [seq, t]. */
static int on_reveal(struct svc *s, struct asc *a, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t seq;
	uint8_t t[32];
	if (weft_mp_read_uint(r, &seq) != 0 || weft_mp_read_bin_fixed(r, t, 32) != 0)
		return WEFT_EDECODE;
	if (!a->client_here || from != a->provider_host)
		return WEFT_EPROTO;
	if (a->r.phase != R_ACCEPTED || seq != a->r.st.seq)
		return 0;
	return finish_with(s, a, t, "revealed");
}

/* Client: [seq, reason]: a round the provider will not serve.  Once we
 * signed (accepted) it is the provider's to claim: a refusal then is
 * ignored. */
static int on_refuse(struct svc *s, struct asc *a, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t seq;
	const char *why;
	uint32_t wlen;
	if (weft_mp_read_uint(r, &seq) != 0 || weft_mp_read_str(r, &why, &wlen) != 0 || wlen > 64)
		return WEFT_EDECODE;
	if (!a->client_here || from != a->provider_host)
		return WEFT_EPROTO;
	if (a->r.phase != R_REQUESTED || seq != a->r.st.seq)
		return 0;
	char reason[65];
	memcpy(reason, why, wlen);
	reason[wlen] = '\0';
	event(s, a, "refused", seq, reason, NULL, 0);
	round_clear(&a->r);
	uint8_t k[33];
	chan_key(k, 'g', a->id);
	return s->env->ops->kv_del(s->env, k, sizeof(k));
}

/* ---- open, close ---- */

static void send_open(struct svc *s, struct asc *a)
{
	struct weft_mpw *w = msg(s, a, MSG_ASC_OPEN, 7);
	weft_mpw_bin(w, a->open.nonce, sizeof(a->open.nonce));
	weft_mpw_bin(w, a->open.client, 32);
	weft_mpw_bin(w, a->open.provider, 32);
	weft_mpw_uint(w, a->open.deposit);
	weft_mpw_uint(w, a->open.timeout);
	weft_mpw_bin(w, a->open.sig, 64);
	weft_mpw_uint(w, a->client_host);
	to_provider(s, a, "asc.open");
}

/* Provider: the client's open, before the ledger has it. */
static int on_open(struct svc *s, uint32_t from, const uint8_t id[32], struct weft_mp_reader *r)
{
	struct weft_ledger_asc_open o;
	uint32_t host;
	uint8_t want[32], m[32];
	memset(&o, 0, sizeof(o));
	if (weft_mp_read_bin_fixed(r, o.nonce, sizeof(o.nonce)) != 0 || weft_mp_read_bin_fixed(r, o.client, 32) != 0 ||
	    weft_mp_read_bin_fixed(r, o.provider, 32) != 0 || weft_mp_read_uint(r, &o.deposit) != 0 ||
	    weft_mp_read_uint(r, &o.timeout) != 0 || weft_mp_read_bin_fixed(r, o.sig, 64) != 0 ||
	    weft_mp_read_u32(r, &host) != 0)
		return WEFT_EDECODE;
	weft_ledger_asc_id(s->chain_key, &o, want);
	weft_ledger_asc_open_sighash(s->chain_key, &o, m);
	if (host != from || memcmp(want, id, 32) != 0 || s->wallets->verify(s->wallets->ctx, o.client, m, o.sig) != 0)
		return WEFT_EPROTO;
	if (asc_find(s, id))
		return 0;
	uint8_t probe[64];
	if (s->wallets->sign(s->wallets->ctx, o.provider, m, probe) != 0)
		return WEFT_EPROTO; /* not a provider hosted here */
	struct asc *a = asc_new(s);
	memcpy(a->id, id, 32);
	a->open = o;
	a->client_host = from, a->provider_host = s->env->self;
	a->client_here = from == s->env->self, a->provider_here = true;
	a->status = ASC_OPENING;
	initial_state(a);
	/* The ledger may have executed the open before this message came. */
	const struct weft_ledger *l = s->env->ops->service ? s->env->ops->service(s->env, WEFT_LEDGER_SERVICE) : NULL;
	struct weft_ledger_asc_record rec;
	if (l && weft_ledger_asc((struct weft_ledger *)l, id, &rec) == 0 && rec.status == WEFT_LEDGER_CH_OPEN) {
		a->status = ASC_ACTIVE;
		a->expires = rec.expires;
	}
	return save_meta(s, a);
}

/* A service channel transaction the ledger executed. */
int asc_on_ledger(struct svc *s, const uint8_t *tx, size_t len, uint8_t outcome)
{
	struct weft_ledger_asc_open o;
	struct weft_ledger_asc_final f;
	uint8_t id[32];
	bool claim = false, end = false;
	if (weft_ledger_asc_open_decode(tx, len, &o) == 0)
		weft_ledger_asc_id(s->chain_key, &o, id);
	else if (weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLAIM_TAG, tx, len, &f) == 0)
		memcpy(id, f.id, 32), claim = end = true;
	else if (weft_ledger_asc_final_decode(WEFT_LEDGER_ASC_CLOSE_TAG, tx, len, &f) == 0)
		memcpy(id, f.id, 32), end = true;
	else if (weft_ledger_asc_refund_decode(tx, len, id) == 0)
		end = true;
	else
		return 0;
	struct asc *a = asc_find(s, id);
	if (a == NULL)
		return 0;
	bool applied = outcome == WEFT_LEDGER_APPLIED;
	if (!end) {
		if (a->status != ASC_OPENING)
			return 0;
		const struct weft_ledger *l = s->env->ops->service ? s->env->ops->service(s->env, WEFT_LEDGER_SERVICE) : NULL;
		struct weft_ledger_asc_record rec;
		a->status = applied ? ASC_ACTIVE : ASC_FAILED;
		if (applied && l && weft_ledger_asc((struct weft_ledger *)l, id, &rec) == 0)
			a->expires = rec.expires;
		event(s, a, applied ? "open" : "open_failed", 0,
		      applied ? NULL : weft_ledger_outcome_name((enum weft_ledger_outcome)outcome), NULL, 0);
		return save_meta(s, a);
	}
	if (!applied)
		return 0;
	/* A claim names t: the client finishes the round it had accepted. */
	int rc = 0;
	if (claim && a->client_here && a->r.phase == R_ACCEPTED && f.st.seq == a->r.st.seq)
		rc = finish_with(s, a, f.secret, "claimed on the ledger");
	a->status = ASC_CLOSED;
	event(s, a, "closed", a->latest.seq, NULL, NULL, 0);
	return rc == 0 ? save_meta(s, a) : rc;
}

static void send_close_ask(struct svc *s, struct asc *a)
{
	struct weft_mpw *w = msg(s, a, MSG_ASC_CLOSE_ASK, 2);
	weft_ledger_asc_state_encode(&a->closing, w);
	weft_mpw_bin(w, a->close_sig, 64);
	if (a->client_here)
		to_provider(s, a, "asc.close_ask");
	else
		to_client(s, a, "asc.close_ask");
}

/* The cooperative close's state: the latest, closed. */
static struct weft_ledger_asc_state closed_state(const struct asc *a)
{
	struct weft_ledger_asc_state st = a->latest;
	st.seq = a->latest.seq + 1;
	st.status = WEFT_LEDGER_ASC_CLOSED;
	return st;
}

/* [state, sig]: the other side asks to close at the latest state. */
static int on_close_ask(struct svc *s, struct asc *a, uint32_t from, struct weft_mp_reader *r)
{
	struct weft_ledger_asc_state st;
	uint8_t sig[64], m[32], mine[64];
	if (weft_ledger_asc_state_read(r, &st) != 0 || weft_mp_read_bin_fixed(r, sig, 64) != 0)
		return WEFT_EDECODE;
	bool from_client = from == a->client_host && a->provider_here;
	if (!from_client && !(from == a->provider_host && a->client_here))
		return WEFT_EPROTO;
	struct weft_ledger_asc_state want = closed_state(a);
	if (a->r.phase != R_NONE || !same_state(&want, &st))
		return 0; /* a round is open, or not our latest: no */
	state_hash(s, a, &st, m);
	const uint8_t *their = from_client ? a->open.client : a->open.provider;
	const uint8_t *ours = from_client ? a->open.provider : a->open.client;
	if (s->wallets->verify(s->wallets->ctx, their, m, sig) != 0)
		return WEFT_ECRYPTO;
	int rc = s->wallets->sign(s->wallets->ctx, ours, m, mine);
	if (rc != 0)
		return rc;
	a->status = ASC_CLOSING;
	if ((rc = save_meta(s, a)) != 0)
		return rc;
	struct weft_mpw *w = msg(s, a, MSG_ASC_CLOSE_SIG, 2);
	weft_mpw_uint(w, st.seq);
	weft_mpw_bin(w, mine, 64);
	chan_send_host(s, from, "asc.close_sig");
	return 0;
}

/* [seq, sig]: the other side's signature of our close: to the ledger. */
static int on_close_sig(struct svc *s, struct asc *a, uint32_t from, struct weft_mp_reader *r)
{
	uint64_t seq;
	uint8_t sig[64], m[32];
	if (weft_mp_read_uint(r, &seq) != 0 || weft_mp_read_bin_fixed(r, sig, 64) != 0)
		return WEFT_EDECODE;
	if (!a->close_asked || seq != a->closing.seq)
		return 0;
	bool client = a->client_here;
	if (from != (client ? a->provider_host : a->client_host))
		return WEFT_EPROTO;
	state_hash(s, a, &a->closing, m);
	if (s->wallets->verify(s->wallets->ctx, client ? a->open.provider : a->open.client, m, sig) != 0)
		return WEFT_ECRYPTO;
	struct weft_ledger_asc_final f;
	memset(&f, 0, sizeof(f));
	memcpy(f.id, a->id, 32);
	f.st = a->closing;
	memcpy(client ? f.client_sig : f.provider_sig, a->close_sig, 64);
	memcpy(client ? f.provider_sig : f.client_sig, sig, 64);
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_final_encode(WEFT_LEDGER_ASC_CLOSE_TAG, &f, &w);
	submit(s, a, &w);
	weft_mpw_free(&w);
	a->close_asked = false;
	return 0;
}

int asc_handle(struct svc *s, uint32_t from, int type, const uint8_t id[32], struct weft_mp_reader *r)
{
	if (type == MSG_ASC_OPEN)
		return on_open(s, from, id, r);
	struct asc *a = asc_find(s, id);
	if (a == NULL)
		return WEFT_EPROTO;
	switch (type) {
	case MSG_ASC_REQUEST: return on_request(s, a, from, r);
	case MSG_ASC_OFFER: return on_offer(s, a, from, r);
	case MSG_ASC_ACCEPT: return on_accept(s, a, from, r);
	case MSG_ASC_REVEAL: return on_reveal(s, a, from, r);
	case MSG_ASC_REFUSE: return on_refuse(s, a, from, r);
	case MSG_ASC_CLOSE_ASK: return on_close_ask(s, a, from, r);
	default: return on_close_sig(s, a, from, r);
	}
}

/* ---- the tick: repeats, timeouts, the ledger's deadlines ---- */

static void tick_one(struct svc *s, struct asc *a, uint64_t t, uint64_t h)
{
	struct asc_round *q = &a->r;
	if (a->client_here && q->phase == R_REQUESTED) {
		if (t - q->started_us >= s->pay_timeout_us) { /* nothing signed: give up */
			event(s, a, "failed", q->st.seq, "the provider did not answer", NULL, 0);
			round_clear(q);
			uint8_t k[33];
			chan_key(k, 'g', a->id);
			s->env->ops->kv_del(s->env, k, sizeof(k));
		} else if (q->sent_us == 0 || t - q->sent_us >= s->root_us) {
			q->sent_us = t;
			send_request(s, a);
		}
	}
	if (a->client_here && q->phase == R_ACCEPTED && (q->sent_us == 0 || t - q->sent_us >= s->root_us)) {
		q->sent_us = t; /* signed: until the reveal, a claim or the expiry */
		send_accept(s, a);
	}
	if (a->provider_here && q->phase == R_REQUESTED && t - q->started_us >= s->pay_timeout_us)
		respond(s, a, q->st.seq, false, NULL, 0, "service_timeout"); /* its service never answered */
	if (a->provider_here && q->phase == R_OFFERED && (q->sent_us == 0 || t - q->sent_us >= s->root_us)) {
		q->sent_us = t;
		send_offer(s, a);
	}
	if (a->close_asked && t - a->ledger_sent_us >= s->root_us) {
		a->ledger_sent_us = t;
		send_close_ask(s, a);
	}
	if (h == 0 || a->status == ASC_CLOSED || a->status == ASC_FAILED || a->status == ASC_OPENING ||
	    (a->ledger_sent_us && t - a->ledger_sent_us < LEDGER_RETRY_US))
		return;
	struct weft_mpw w;
	weft_mpw_init(&w);
	/* Heights can move fast (they count every ordered transaction): the
	 * provider claims once half the channel's time is gone, and at least
	 * channel_lock_delta heights before the expiry. */
	uint64_t margin = a->open.timeout / 2 > s->lock_delta ? a->open.timeout / 2 : s->lock_delta;
	if (a->provider_here && a->latest.provider > 0 && h + margin >= a->expires && h + 1 < a->expires) {
		claim_latest(s, a); /* paid states, and the expiry near */
	} else if (a->client_here && h + 1 >= a->expires) {
		weft_ledger_asc_refund_encode(a->id, &w); /* expired: the deposit back */
		submit(s, a, &w);
	}
	weft_mpw_free(&w);
}

void asc_tick(struct svc *s)
{
	uint64_t t = weft_env_now(s->env), h = chan_height(s);
	for (size_t i = 0; i < s->nasc; i++)
		tick_one(s, s->asc[i], t, h);
}

/* ---- commands and queries ---- */

static int refuse(struct weft_mpw *reply, int rc, const char *why)
{
	if (reply)
		weft_mpw_str(reply, why);
	return rc;
}

static void put_hex(struct weft_mpw *w, const char *key, const uint8_t *b, size_t len)
{
	char hex[2 * 65 + 1];
	weft_hex_encode(hex, b, len);
	weft_mpw_str(w, key);
	weft_mpw_str(w, hex);
}

/* [client (bin 32), provider (bin 32), provider host, deposit, timeout] */
static int cmd_open(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	struct weft_ledger_asc_open o;
	uint32_t count, host;
	uint8_t id[32], m[32];
	memset(&o, 0, sizeof(o));
	if (weft_mp_read_array(r, &count) != 0 || count != 5 || weft_mp_read_bin_fixed(r, o.client, 32) != 0 ||
	    weft_mp_read_bin_fixed(r, o.provider, 32) != 0 || weft_mp_read_u32(r, &host) != 0 ||
	    weft_mp_read_uint(r, &o.deposit) != 0 || weft_mp_read_uint(r, &o.timeout) != 0)
		return refuse(reply, WEFT_EINVAL, "client, provider, provider host, deposit and timeout expected");
	if (host >= s->env->n)
		return refuse(reply, WEFT_EINVAL, "the provider's host is not a committee node");
	if (weft_ledger_pubkey_check(o.provider) != 0 || memcmp(o.client, o.provider, 32) == 0)
		return refuse(reply, WEFT_EINVAL, "provider: a valid account other than the client's");
	if (o.deposit == 0 || o.timeout < 2)
		return refuse(reply, WEFT_EINVAL, "deposit at least 1, timeout at least 2 heights");
	s->env->ops->random(s->env, o.nonce, sizeof(o.nonce));
	weft_ledger_asc_open_sighash(s->chain_key, &o, m);
	if (s->wallets->sign(s->wallets->ctx, o.client, m, o.sig) != 0)
		return refuse(reply, WEFT_EINVAL, "the client is not a wallet of this node");
	weft_ledger_asc_id(s->chain_key, &o, id);
	struct asc *a = asc_new(s);
	memcpy(a->id, id, 32);
	a->open = o;
	a->client_host = s->env->self, a->provider_host = host;
	a->client_here = true, a->provider_here = host == s->env->self;
	a->status = ASC_OPENING;
	initial_state(a);
	int rc = save_meta(s, a);
	if (rc != 0)
		return rc;
	if (!a->provider_here)
		send_open(s, a);
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_ledger_asc_open_encode(&o, &w);
	submit(s, a, &w);
	weft_mpw_free(&w);
	weft_mpw_map(reply, 1);
	put_hex(reply, "channel", id, 32);
	return 0;
}

static struct asc *read_asc(struct svc *s, struct weft_mp_reader *r)
{
	uint8_t id[32];
	return weft_mp_read_bin_fixed(r, id, 32) == 0 ? asc_find(s, id) : NULL;
}

/* [id, service, payload, price] */
static int cmd_request(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint32_t count, slen, plen;
	const char *svc;
	const uint8_t *payload;
	uint64_t price;
	if (weft_mp_read_array(r, &count) != 0 || count != 4)
		return refuse(reply, WEFT_EINVAL, "channel, service, payload and price expected");
	struct asc *a = read_asc(s, r);
	if (a == NULL || !a->client_here)
		return refuse(reply, WEFT_NOTFOUND, "no service channel here whose client this node hosts");
	if (weft_mp_read_str(r, &svc, &slen) != 0 || slen == 0 || slen > ASC_SERVICE_MAX)
		return refuse(reply, WEFT_EINVAL, "service: a name of 1 to 64 bytes");
	if (weft_mp_read_bin(r, &payload, &plen) != 0 || plen > ASC_PAYLOAD_MAX)
		return refuse(reply, WEFT_EINVAL, "payload: at most 64 KiB");
	if (weft_mp_read_uint(r, &price) != 0 || price == 0)
		return refuse(reply, WEFT_EINVAL, "price: at least 1");
	if (a->status != ASC_ACTIVE)
		return refuse(reply, WEFT_ESTATE, "the channel is not open");
	if (a->r.phase != R_NONE)
		return refuse(reply, WEFT_EAGAIN, "busy: a request of this channel is in progress");
	if (price > a->latest.free)
		return refuse(reply, WEFT_EINVAL, "insufficient channel balance");
	struct asc_round *q = &a->r;
	q->phase = R_REQUESTED;
	q->price = price;
	memcpy(q->service, svc, slen);
	q->service[slen] = '\0';
	q->payload = dup_bin(payload, plen), q->plen = plen;
	q->st.seq = a->latest.seq + 1;
	q->st.status = WEFT_LEDGER_ASC_OPEN;
	q->started_us = q->sent_us = weft_env_now(s->env);
	request_hash(s, a, q->st.seq, q->service, payload, plen, price, q->req);
	int rc = save_round(s, a);
	if (rc != 0)
		return rc;
	send_request(s, a);
	weft_mpw_map(reply, 2);
	put_hex(reply, "channel", a->id, 32);
	weft_mpw_str(reply, "seq");
	weft_mpw_uint(reply, q->st.seq);
	return 0;
}

/* [id, seq, ok, result (bin) | reason (str)] from the host's service. */
static int cmd_respond(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint32_t count, len;
	uint64_t seq;
	bool ok;
	if (weft_mp_read_array(r, &count) != 0 || count != 4)
		return refuse(reply, WEFT_EINVAL, "channel, seq, ok and result expected");
	struct asc *a = read_asc(s, r);
	if (a == NULL || weft_mp_read_uint(r, &seq) != 0 || weft_mp_read_bool(r, &ok) != 0)
		return refuse(reply, WEFT_NOTFOUND, "no such service channel here");
	int rc;
	if (ok) {
		const uint8_t *result;
		if (weft_mp_read_bin(r, &result, &len) != 0 || len > ASC_RESULT_MAX)
			return refuse(reply, WEFT_EINVAL, "result: at most 256 KiB");
		rc = respond(s, a, seq, true, result, len, NULL);
	} else {
		const char *why;
		char reason[65];
		if (weft_mp_read_str(r, &why, &len) != 0)
			return refuse(reply, WEFT_EINVAL, "reason: a string");
		len = len > 64 ? 64 : len;
		memcpy(reason, why, len);
		reason[len] = '\0';
		rc = respond(s, a, seq, false, NULL, 0, reason);
	}
	if (rc == WEFT_ESTATE)
		return refuse(reply, rc, "no such request waiting for its service");
	if (rc != 0)
		return rc;
	weft_mpw_map(reply, 1);
	weft_mpw_str(reply, "seq");
	weft_mpw_uint(reply, seq);
	return 0;
}

/* [id] */
static int cmd_close(struct svc *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	struct asc *a = read_asc(s, r);
	if (a == NULL)
		return refuse(reply, WEFT_NOTFOUND, "no such service channel here");
	/* A closing channel whose close is not being asked from here (we
	 * answered the other side's ask, or asked before a restart) may ask
	 * again: the close is of the same latest state. */
	if (a->status != ASC_ACTIVE && !(a->status == ASC_CLOSING && !a->close_asked))
		return refuse(reply, WEFT_ESTATE, "the channel is not open");
	if (a->r.phase != R_NONE)
		return refuse(reply, WEFT_EAGAIN, "a request is in progress");
	uint8_t m[32];
	a->closing = closed_state(a);
	state_hash(s, a, &a->closing, m);
	int rc = s->wallets->sign(s->wallets->ctx, a->client_here ? a->open.client : a->open.provider, m, a->close_sig);
	if (rc != 0)
		return rc;
	/* CLOSING is persisted before the signed close leaves, as on_close_ask
	 * does: the other side may keep our signature and never answer, and a
	 * round served after a restart would be undone by that close
	 * (tla/AscRoundCloseRestart). */
	a->status = ASC_CLOSING;
	if ((rc = save_meta(s, a)) != 0)
		return rc;
	a->close_asked = true;
	a->ledger_sent_us = weft_env_now(s->env);
	send_close_ask(s, a);
	weft_mpw_map(reply, 1);
	weft_mpw_str(reply, "seq");
	weft_mpw_uint(reply, a->closing.seq);
	return 0;
}

int asc_command(struct svc *s, const char *what, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	if (strcmp(what, "asc.open") == 0)
		return cmd_open(s, r, reply);
	if (strcmp(what, "asc.request") == 0)
		return cmd_request(s, r, reply);
	if (strcmp(what, "asc.respond") == 0)
		return cmd_respond(s, r, reply);
	if (strcmp(what, "asc.close") == 0)
		return cmd_close(s, r, reply);
	return WEFT_NOTFOUND;
}

static void info_one(struct svc *s, const struct asc *a, struct weft_mpw *w)
{
	static const char *const status[] = {"none", "opening", "open", "closing", "closed", "failed"};
	static const char *const phase[] = {"none", "requested", "offered", "accepted"};
	const struct weft_ledger *l = s->env->ops->service ? s->env->ops->service(s->env, WEFT_LEDGER_SERVICE) : NULL;
	weft_mpw_map(w, 12);
	put_hex(w, "channel", a->id, 32);
	weft_mpw_str(w, "status");
	weft_mpw_str(w, status[a->status <= ASC_FAILED ? a->status : 0]);
	weft_mpw_str(w, "role");
	weft_mpw_str(w, a->client_here && a->provider_here ? "both" : a->client_here ? "client" : "provider");
	put_hex(w, "client", a->open.client, 32);
	put_hex(w, "provider", a->open.provider, 32);
	weft_mpw_str(w, "deposit");
	weft_mpw_uint(w, a->open.deposit);
	weft_mpw_str(w, "expires");
	weft_mpw_uint(w, a->expires);
	weft_mpw_str(w, "height");
	weft_mpw_uint(w, l ? l->height : 0);
	weft_mpw_str(w, "seq");
	weft_mpw_uint(w, a->latest.seq);
	weft_mpw_str(w, "client_free");
	weft_mpw_uint(w, a->latest.free + a->latest.locked);
	weft_mpw_str(w, "provider_paid");
	weft_mpw_uint(w, a->latest.provider);
	weft_mpw_str(w, "round");
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "phase");
	weft_mpw_str(w, phase[a->r.phase]);
	weft_mpw_str(w, "seq");
	weft_mpw_uint(w, a->r.phase ? a->r.st.seq : 0);
	weft_mpw_str(w, "price");
	weft_mpw_uint(w, a->r.price);
}

int asc_query(struct svc *s, const char *what, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	if (strcmp(what, "asc.list") == 0) {
		weft_mpw_array(reply, (uint32_t)s->nasc);
		for (size_t i = 0; i < s->nasc; i++)
			info_one(s, s->asc[i], reply);
		return 0;
	}
	if (strcmp(what, "asc.info") != 0)
		return WEFT_NOTFOUND;
	struct asc *a = read_asc(s, r);
	if (a == NULL)
		return WEFT_ENOENT;
	info_one(s, a, reply);
	return 0;
}
