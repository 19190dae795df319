/* echo.c - signed echo broadcast (Reiter 1994; the consistent broadcast of
 * Cachin, Kursawe, Petzold and Shoup 2001; what a Narwhal certificate is).
 *
 *   sender:  SEND(m) to all
 *   on the first SEND(m) from the sender:   sign "echo m", ECHO(sig) to the sender only
 *   sender, on ceil((n+f+1)/2) valid signatures over digest(m):
 *                                           FINAL(digest, certificate) to all, deliver m
 *   on a FINAL with a valid certificate and m with that digest: deliver m
 *
 * Only SEND carries the payload and every other message goes to or comes
 * from the sender, so a broadcast costs O(n) messages and O(n|m| + n^2 kappa)
 * bits (n certificates of up to n signatures).  Safety: two certificates
 * for different digests would hold two echo quorums, which intersect in at
 * least f+1 nodes, one of them honest; an honest node signs one digest per
 * instance (its vote is persisted before the signature leaves), so at most
 * one digest is ever certified (Agreement).  There is no Totality: a faulty
 * sender may show its FINAL to a few nodes only.  weft's BRB core's
 * catch-up (f+1 matching DELIVERED reports) restores it once f+1 honest
 * nodes delivered; a sender that shows its FINAL to fewer leaves the
 * others without the instance (tla/EchoBRB.tla, model EchoNoTotality).
 * docs/protocols/echo.md has the full argument and the costs.
 *
 * Lost messages.  Every resend_ms (the core's timer) the sender multicasts
 * SEND again until it has a certificate, and a node re-sends its ECHO to
 * the sender until it delivers.  An ECHO that reaches the sender well after
 * it delivered means its signer misses the FINAL or the payload: the
 * sender answers it with both, from kv.  The sender persists its payload
 * with its vote before SEND leaves, so it can resend after a restart.
 *
 * Messages ([1, type, sender, seq, ...], types below 16 are ours):
 *   SEND  [1, 0, sender, seq, payload(bin)]
 *   ECHO  [1, 1, sender, seq, sig(bin 64)]
 *   FINAL [1, 2, sender, seq, digest(bin 32), [[signer(uint), sig(bin 64)], ...]]
 * The signed statement is "weft-brb-echo" || sender(4 BE) || seq(8 BE) ||
 * digest(32). */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "weft/bytes.h"
#include "weft/err.h"

enum { MSG_SEND = 0, MSG_ECHO = 1, MSG_FINAL = 2 };

#define STMT_TAG "weft-brb-echo"
#define STMT_TAG_LEN (sizeof(STMT_TAG) - 1)
#define STMT_LEN (STMT_TAG_LEN + 4 + 8 + WEFT_DIGEST_LEN)

struct echo_inst {
	struct brb_inst base;
	/* The payload we hold: the one we broadcast, the first SEND we
	 * signed, or one matching a certificate. */
	uint8_t *data;
	size_t len;
	bool have_data;
	uint8_t digest[WEFT_DIGEST_LEN]; /* of data; for our own instance also after a restart */
	bool have_digest;
	/* Our signed echo (resent to the sender). */
	bool echoed;
	uint8_t sig[WEFT_SIGNATURE_LEN];
	/* Sender side: the valid signatures collected so far, indexed by
	 * signer (who signed is the ECHO tally's voter set). */
	uint8_t (*sigs)[WEFT_SIGNATURE_LEN];
	/* A certificate we hold (verified, or built by us as the sender). */
	bool certified;
	uint8_t cert_digest[WEFT_DIGEST_LEN];
	uint8_t *final_msg;              /* our encoded FINAL, as the sender (resends) */
	size_t final_len;
};

struct echo {
	struct brb_core core;
};

static const char *const kind_names[] = {"echo.send", "echo.echo", "echo.final"};

/* Our own kv records, beside the core's ("s", "d", "v", "p"), for our own
 * broadcasts only:
 *   "o" seq(8 BE)  the payload, from the request on, so that a sender
 *                  restarted before its SEND reached a quorum can send it
 *                  again
 *   "f" seq(8 BE)  when we made it (8 bytes, env now) || our FINAL
 * Both serve echoes resent after we delivered (their signer misses the
 * FINAL or the payload) and are kept for the last max(retain, window)
 * broadcasts. */
static size_t own_key(uint8_t k[9], char tag, uint64_t seq)
{
	k[0] = (uint8_t)tag;
	weft_be64_put(k + 1, seq);
	return 9;
}

/* The statement an ECHO signs: domain tag, instance, digest. */
static void statement(uint8_t out[STMT_LEN], uint32_t sender, uint64_t seq, const uint8_t digest[WEFT_DIGEST_LEN])
{
	memcpy(out, STMT_TAG, STMT_TAG_LEN);
	weft_be32_put(out + STMT_TAG_LEN, sender);
	weft_be64_put(out + STMT_TAG_LEN + 4, seq);
	memcpy(out + STMT_TAG_LEN + 12, digest, WEFT_DIGEST_LEN);
}

static void inst_clear(struct brb_core *c, struct brb_inst *base)
{
	struct echo_inst *i = (struct echo_inst *)base;
	free(i->data);
	free(i->sigs);
	free(i->final_msg);
}

static int reject(struct brb_core *c, int rc)
{
	c->rejected++;
	return rc;
}

static void keep_data(struct echo_inst *i, const uint8_t digest[WEFT_DIGEST_LEN], const uint8_t *data, size_t len)
{
	i->data = malloc(len ? len : 1);
	if (i->data == NULL)
		abort();
	if (len)
		memcpy(i->data, data, len);
	i->len = len;
	i->have_data = true;
	memcpy(i->digest, digest, WEFT_DIGEST_LEN);
	i->have_digest = true;
}

static bool tally_has(const struct brb_tally *t, uint32_t voter)
{
	return t->voted && (t->voted[voter / 8] & (1u << (voter % 8)));
}

static void send_payload(struct brb_core *c, struct echo_inst *i)
{
	brb_write_header(c, MSG_SEND, i->base.sender, i->base.seq, 1);
	weft_mpw_bin(&c->out, i->data, i->len);
	weft_env_multicast(c->env, kind_names[MSG_SEND], c->out.buf, c->out.len);
}

static void send_echo(struct brb_core *c, struct echo_inst *i)
{
	brb_write_header(c, MSG_ECHO, i->base.sender, i->base.seq, 1);
	weft_mpw_bin(&c->out, i->sig, WEFT_SIGNATURE_LEN);
	weft_env_send(c->env, i->base.sender, kind_names[MSG_ECHO], c->out.buf, c->out.len);
}

/* Delivers when we hold a certificate and the payload it certifies.  The
 * instance is freed: callers return right after. */
static bool try_deliver(struct brb_core *c, struct echo_inst *i)
{
	if (!i->certified || !i->have_data || memcmp(i->digest, i->cert_digest, WEFT_DIGEST_LEN) != 0)
		return false;
	brb_deliver(c, &i->base, i->base.sender, i->base.seq, i->data, i->len, i->digest, false);
	return true;
}

/* Sender: a quorum of signatures over our digest makes the certificate;
 * it goes to everyone and we deliver (when we still hold the payload:
 * after a restart we may not, and then we keep resending FINAL). */
static void certify(struct brb_core *c, struct echo_inst *i)
{
	struct brb_tally *t = &i->base.tally[BRB_VOTE_ECHO];
	if (i->certified || brb_tally_count(t, i->digest) < c->echo_quorum)
		return;
	brb_write_header(c, MSG_FINAL, i->base.sender, i->base.seq, 2);
	weft_mpw_bin(&c->out, i->digest, WEFT_DIGEST_LEN);
	weft_mpw_array(&c->out, c->echo_quorum);
	uint32_t put = 0;
	for (uint32_t s = 0; s < c->n && put < c->echo_quorum; s++) {
		if (!tally_has(t, s))
			continue;
		weft_mpw_array(&c->out, 2);
		weft_mpw_uint(&c->out, s);
		weft_mpw_bin(&c->out, i->sigs[s], WEFT_SIGNATURE_LEN);
		put++;
	}
	i->certified = true;
	memcpy(i->cert_digest, i->digest, WEFT_DIGEST_LEN);
	i->final_msg = malloc(c->out.len);
	if (i->final_msg == NULL)
		abort();
	memcpy(i->final_msg, c->out.buf, c->out.len);
	i->final_len = c->out.len;
	uint8_t key[9];
	uint64_t keep = c->retain > c->window ? c->retain : c->window;
	uint64_t now = weft_env_now(c->env);
	uint8_t *rec = malloc(8 + i->final_len);
	if (rec == NULL)
		abort();
	memcpy(rec, &now, 8);
	memcpy(rec + 8, i->final_msg, i->final_len);
	c->env->ops->kv_put(c->env, key, own_key(key, 'f', i->base.seq), rec, 8 + i->final_len);
	free(rec);
	if (i->base.seq >= keep) {
		c->env->ops->kv_del(c->env, key, own_key(key, 'f', i->base.seq - keep));
		c->env->ops->kv_del(c->env, key, own_key(key, 'o', i->base.seq - keep));
	}
	weft_env_multicast(c->env, kind_names[MSG_FINAL], i->final_msg, i->final_len);
	try_deliver(c, i);
}

/* Sender: counts a valid signature of signer over our digest (once). */
static bool add_sig(struct brb_core *c, struct echo_inst *i, uint32_t signer, const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	if (brb_tally_add(c, &i->base.tally[BRB_VOTE_ECHO], signer, i->digest) == 0)
		return false;
	if (i->sigs == NULL) {
		i->sigs = calloc(c->n, sizeof(*i->sigs));
		if (i->sigs == NULL)
			abort();
	}
	memcpy(i->sigs[signer], sig, WEFT_SIGNATURE_LEN);
	return true;
}

static void collect(struct brb_core *c, struct echo_inst *i, uint32_t signer, const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	if (add_sig(c, i, signer, sig))
		certify(c, i);
}

static void sign_echo(struct brb_core *c, struct echo_inst *i)
{
	uint8_t stmt[STMT_LEN];
	statement(stmt, i->base.sender, i->base.seq, i->digest);
	c->env->ops->sign(c->env, stmt, sizeof(stmt), i->sig);
	i->echoed = true;
}

/* Signs our echo for the payload we hold: the vote is persisted first, and
 * after a restart we only ever sign the digest we voted for.  The caller
 * checked that. */
static void echo(struct brb_core *c, struct echo_inst *i)
{
	brb_vote_put(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, i->digest);
	sign_echo(c, i);
	if (i->base.sender == c->self)
		collect(c, i, c->self, i->sig); /* may deliver and free i */
	else
		send_echo(c, i);
}

static int on_send(struct brb_core *c, struct echo_inst *i, const uint8_t *data, size_t len)
{
	uint8_t digest[WEFT_DIGEST_LEN], prior[WEFT_DIGEST_LEN];
	brb_payload_digest(c, i->base.sender, i->base.seq, data, len, digest);
	if (i->certified) {
		/* A certificate came first (or names another payload than the
		 * one we signed): take only the certified payload; no need to echo. */
		if (memcmp(digest, i->cert_digest, WEFT_DIGEST_LEN) != 0) {
			c->equivocations++;
			return 0;
		}
		free(i->data);
		keep_data(i, digest, data, len);
		try_deliver(c, i);
		return 0;
	}
	if (i->have_data) {
		if (memcmp(digest, i->digest, WEFT_DIGEST_LEN) != 0)
			c->equivocations++; /* a second story: ignored */
		return 0;
	}
	int rc = brb_vote_get(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, prior);
	if (rc < 0)
		return rc;
	if (rc == 0 && memcmp(prior, digest, WEFT_DIGEST_LEN) != 0) {
		c->equivocations++; /* we signed another payload before a restart: never contradict it */
		return 0;
	}
	keep_data(i, digest, data, len);
	echo(c, i);
	return 0;
}

/* An echo for one of our broadcasts we delivered already.  Arriving soon
 * after the certificate, it crossed our FINAL; resent later, its signer is
 * still waiting: our FINAL or our payload did not reach it (lost, garbled,
 * or it was down or cut off).  It gets both again, from kv, to itself only. */
static int answer_late_echo(struct brb_core *c, uint32_t from, uint64_t seq)
{
	uint8_t key[9];
	const void *v;
	size_t vlen;
	uint64_t made, now = weft_env_now(c->env);
	if (from == c->self || c->env->ops->kv_get(c->env, key, own_key(key, 'f', seq), &v, &vlen) != 0 || vlen <= 8)
		return 0;
	memcpy(&made, v, 8);
	if (now >= made && now - made < c->resend_us / 2)
		return 0;
	weft_env_send(c->env, from, kind_names[MSG_FINAL], (const uint8_t *)v + 8, vlen - 8);
	if (c->env->ops->kv_get(c->env, key, own_key(key, 'o', seq), &v, &vlen) != 0)
		return 0;
	brb_write_header(c, MSG_SEND, c->self, seq, 1);
	weft_mpw_bin(&c->out, v, vlen);
	weft_env_send(c->env, from, kind_names[MSG_SEND], c->out.buf, c->out.len);
	return 0;
}

static int on_echo(struct brb_core *c, uint32_t from, uint64_t seq, const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	int why;
	struct echo_inst *i = (struct echo_inst *)brb_inst_get(c, c->self, seq, false, &why);
	if (i == NULL && why == 1)
		return answer_late_echo(c, from, seq);
	if (i == NULL && why == 2)
		return WEFT_ETOOBIG;
	if (i && i->certified)
		return 0;
	uint8_t digest[WEFT_DIGEST_LEN];
	if (i && i->have_digest) {
		memcpy(digest, i->digest, WEFT_DIGEST_LEN);
	} else {
		/* Not in memory (we restarted): our persisted vote names the digest we sent. */
		int rc = brb_vote_get(c, BRB_VOTE_ECHO, c->self, seq, digest);
		if (rc == WEFT_NOTFOUND)
			return reject(c, WEFT_EPROTO); /* an echo of something we never sent */
		if (rc < 0)
			return rc;
	}
	if (i && tally_has(&i->base.tally[BRB_VOTE_ECHO], from)) {
		c->duplicates++;
		return 0; /* counted once, verified once */
	}
	uint8_t stmt[STMT_LEN];
	statement(stmt, c->self, seq, digest);
	if (c->env->ops->verify(c->env, from, stmt, sizeof(stmt), sig) != 0)
		return reject(c, WEFT_ECRYPTO);
	if (i == NULL) {
		i = (struct echo_inst *)brb_inst_get(c, c->self, seq, true, &why);
		if (i == NULL)
			return 0;
	}
	if (!i->have_digest) {
		/* Rebuilt from our vote: sign the same digest again (Ed25519 is
		 * deterministic, so it is the signature we gave before). */
		memcpy(i->digest, digest, WEFT_DIGEST_LEN);
		i->have_digest = true;
		echo(c, i);
	}
	collect(c, i, from, sig);
	return 0;
}

/* FINAL: decoded in full and checked for shape before any signature is
 * verified; at most n signatures are verified, once per instance. */
static int on_final(struct brb_core *c, uint32_t from, uint32_t sender, uint64_t seq, struct weft_mp_reader *r)
{
	uint8_t digest[WEFT_DIGEST_LEN];
	uint32_t k;
	if (weft_mp_read_bin_fixed(r, digest, WEFT_DIGEST_LEN) || weft_mp_read_array(r, &k))
		return reject(c, WEFT_EDECODE);
	if (k > c->n)
		return reject(c, WEFT_ETOOBIG);
	if (k < c->echo_quorum)
		return reject(c, WEFT_EPROTO); /* too few signers to be a certificate */
	uint32_t *signers = malloc(k * sizeof(*signers));
	const uint8_t **sigs = malloc(k * sizeof(*sigs));
	uint8_t *seen = calloc((c->n + 7) / 8, 1);
	if (signers == NULL || sigs == NULL || seen == NULL)
		abort();
	int rc = 0;
	for (uint32_t e = 0; e < k && rc == 0; e++) {
		uint32_t cnt, slen;
		if (weft_mp_read_array(r, &cnt) || cnt != 2 || weft_mp_read_u32(r, &signers[e]) ||
		    weft_mp_read_bin(r, &sigs[e], &slen) || slen != WEFT_SIGNATURE_LEN)
			rc = WEFT_EDECODE;
		else if (signers[e] >= c->n)
			rc = WEFT_EPROTO; /* unknown signer */
		else if (seen[signers[e] / 8] & (1u << (signers[e] % 8)))
			rc = WEFT_EPROTO; /* a signer twice */
		else
			seen[signers[e] / 8] |= (uint8_t)(1u << (signers[e] % 8));
	}
	if (rc == 0 && weft_mp_remaining(r))
		rc = WEFT_EDECODE;
	free(seen);
	if (rc != 0)
		goto out;
	int why;
	struct echo_inst *i = (struct echo_inst *)brb_inst_get(c, sender, seq, true, &why);
	if (i == NULL) {
		if (why == 2)
			rc = WEFT_ETOOBIG;
		goto out_ok;
	}
	if (i->certified)
		goto out_ok; /* one certificate per instance is enough: not verified again */
	uint8_t stmt[STMT_LEN];
	statement(stmt, sender, seq, digest);
	for (uint32_t e = 0; e < k; e++)
		if (c->env->ops->verify(c->env, signers[e], stmt, sizeof(stmt), sigs[e]) != 0) {
			rc = WEFT_ECRYPTO;
			goto out;
		}
	i->certified = true;
	memcpy(i->cert_digest, digest, WEFT_DIGEST_LEN);
	try_deliver(c, i);
out_ok:
	free(signers);
	free(sigs);
	return rc;
out:
	free(signers);
	free(sigs);
	return reject(c, rc);
}

static void resend(struct brb_core *c, struct brb_inst *base)
{
	struct echo_inst *i = (struct echo_inst *)base;
	if (base->sender == c->self) {
		if (i->have_data && !i->certified)
			send_payload(c, i);
		if (i->final_msg)
			weft_env_multicast(c->env, kind_names[MSG_FINAL], i->final_msg, i->final_len);
	} else if (i->echoed) {
		send_echo(c, i); /* still open: we miss the FINAL, or the payload it certifies */
	}
}

static const struct brb_proto echo_proto = {
	.inst_size = sizeof(struct echo_inst),
	.inst_clear = inst_clear,
	.resend = resend,
};

struct own_list {
	uint64_t *seqs;
	uint32_t count, max;
};

static int list_own(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct own_list *l = arg;
	if (klen != 9)
		return WEFT_ECORRUPT;
	if (l->count == l->max)
		return 1;
	l->seqs[l->count++] = weft_be64_get((const uint8_t *)key + 1);
	return 0;
}

/* After a restart: reopens our broadcasts that were not delivered, with
 * their payload and our own signature, so resend sends their SEND again.
 * Only the last `window` seqs can be open; the records below them are
 * delivered ones kept for late echoes (retain), which must not fill the
 * list first. */
static int restore_own(struct brb_core *c)
{
	struct own_list l = {.max = c->window};
	uint8_t from[9];
	l.seqs = calloc(l.max, sizeof(*l.seqs));
	if (l.seqs == NULL)
		abort();
	own_key(from, 'o', c->next_seq > c->window ? c->next_seq - c->window : 0);
	int rc = c->env->ops->kv_scan(c->env, from, sizeof(from), "p", 1, list_own, &l);
	for (uint32_t k = 0; rc >= 0 && k < l.count; k++) {
		uint8_t key[9], digest[WEFT_DIGEST_LEN], vote[WEFT_DIGEST_LEN];
		const void *v;
		size_t vlen;
		int why;
		if (c->env->ops->kv_get(c->env, key, own_key(key, 'o', l.seqs[k]), &v, &vlen) != 0)
			continue;
		brb_payload_digest(c, c->self, l.seqs[k], v, vlen, digest);
		if (brb_vote_get(c, BRB_VOTE_ECHO, c->self, l.seqs[k], vote) != 0 ||
		    memcmp(vote, digest, WEFT_DIGEST_LEN) != 0)
			continue; /* delivered, or not ours to send */
		struct echo_inst *i = (struct echo_inst *)brb_inst_get(c, c->self, l.seqs[k], true, &why);
		if (i == NULL)
			continue;
		keep_data(i, digest, v, vlen);
		sign_echo(c, i);
		add_sig(c, i, c->self, i->sig);
	}
	free(l.seqs);
	return rc < 0 ? rc : 0;
}

static int echo_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct echo *b = state;
	return brb_core_init(&b->core, env, params, plen, &echo_proto, b);
}

/* Our broadcasts reopen here, not at init: a parent names payloads
 * (weft_brb_ops.digest_with) between the two, and the payloads must be
 * named as they were when we voted for them. */
static int echo_start(void *state)
{
	struct echo *b = state;
	int rc = restore_own(&b->core);
	if (rc == 0)
		brb_core_start(&b->core);
	return rc;
}

static int echo_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct echo *b = state;
	struct brb_core *c = &b->core;
	uint64_t seq;
	int why = brb_own_begin(c, len, &seq);
	if (why != 0)
		return why;
	struct echo_inst *i = (struct echo_inst *)brb_inst_get(c, c->self, seq, true, &why);
	if (i == NULL)
		return WEFT_ESTATE;
	uint8_t digest[WEFT_DIGEST_LEN];
	brb_payload_digest(c, c->self, seq, req, len, digest);
	keep_data(i, digest, req, len);
	uint8_t key[9];
	c->env->ops->kv_put(c->env, key, own_key(key, 'o', seq), req, len);
	send_payload(c, i);
	echo(c, i); /* n = 1: certifies and delivers at once */
	if (reply) {
		weft_mpw_map(reply, 1);
		weft_mpw_str(reply, "seq");
		weft_mpw_uint(reply, seq);
	}
	return 0;
}

static int echo_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct echo *b = state;
	struct brb_core *c = &b->core;
	int rc = brb_core_on_message(c, from, msg, len); /* counts its own rejections */
	if (rc <= 0)
		return rc;
	struct weft_mp_reader r;
	uint32_t count, sender;
	uint64_t type, seq;
	if (brb_read_header(&r, msg, len, c->n, &count, &type, &sender, &seq) != 0)
		return reject(c, WEFT_EDECODE); /* not reached: the core read this header */
	if (type == MSG_SEND && count == 5) {
		const uint8_t *payload;
		uint32_t plen;
		if (weft_mp_read_bin(&r, &payload, &plen) || weft_mp_remaining(&r))
			return reject(c, WEFT_EDECODE);
		if (plen > c->max_payload)
			return reject(c, WEFT_ETOOBIG);
		if (from != sender)
			return reject(c, WEFT_EPROTO); /* only the sender may SEND */
		int why;
		struct echo_inst *i = (struct echo_inst *)brb_inst_get(c, sender, seq, true, &why);
		if (i == NULL)
			return why == 2 ? WEFT_ETOOBIG : 0;
		return on_send(c, i, payload, plen);
	}
	if (type == MSG_ECHO && count == 5) {
		uint8_t sig[WEFT_SIGNATURE_LEN];
		if (weft_mp_read_bin_fixed(&r, sig, sizeof(sig)) || weft_mp_remaining(&r))
			return reject(c, WEFT_EDECODE);
		if (sender != c->self)
			return reject(c, WEFT_EPROTO); /* echoes go to the sender only */
		return on_echo(c, from, seq, sig);
	}
	if (type == MSG_FINAL && count == 6) {
		if (from != sender)
			return reject(c, WEFT_EPROTO); /* only the sender may announce its certificate */
		return on_final(c, from, sender, seq, &r);
	}
	return reject(c, WEFT_EDECODE); /* unknown type, or the wrong number of fields */
}

static void echo_on_timer(void *state, uint64_t id)
{
	brb_core_on_timer(&((struct echo *)state)->core, id);
}

static void echo_info(void *state, struct weft_mpw *w)
{
	struct echo *b = state;
	weft_mpw_map(w, 9);
	weft_mpw_str(w, "protocol");
	weft_mpw_str(w, "echo");
	brb_core_info(&b->core, w);
}

static void echo_destroy(void *state)
{
	brb_core_destroy(&((struct echo *)state)->core);
}

BRB_EQUIVOCATE_STRATEGY(echo, echo);

const struct weft_proto_ops weft_proto_echo = {
	.abi = WEFT_PROTO_ABI,
	.name = "echo",
	.state_size = sizeof(struct echo),
	.init = echo_init,
	.start = echo_start,
	.on_message = echo_on_message,
	.on_timer = echo_on_timer,
	.on_request = echo_on_request,
	.info = echo_info,
	.destroy = echo_destroy,
	.strategies = echo_strategies,
};
