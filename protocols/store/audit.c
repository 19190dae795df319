/* audit.c - storage proofs, audits and repair for the storage service.
 *
 * A challenge {CID, share j, nonce} is answered by share j's holder with
 * the nonce-selected 4 KiB block of the share, its Merkle path to the
 * share's root r_j, and an Ed25519 signature over
 *   "weft.store.v1.proof" 0x00 || CID || be32(j) || nonce || be64(index)
 *   || leaf(block) || r_j || BLAKE2b(path)
 * index = le64(BLAKE2b(nonce || CID || be32(j))[0..8]) mod blocks(L).
 * The block count comes from the auditor's record (L = ceil(bloblen /
 * k)), never from the prover.  Anyone holding the chunk's record checks a
 * proof without a key or the data; a correctly signed proof that does not
 * check is portable evidence and is kept ("E" in kv).  A holder without
 * the share says so, signed ("weft.store.v1.noproof" 0x00 || CID ||
 * be32(j) || nonce): an admission, not evidence of lying.
 *
 * Audits: one challenge per store_audit_ms (jittered), to a random holder
 * of a chunk this node holds a record of (audit_pick: every chunk in turn,
 * mixed with chunks no holder can foresee); store.audit sends more at
 * once.  Repair: a missing or failed share is rebuilt from k good
 * shares (a fetch with the chunk's record, store.c) and placed again with
 * the repair flag; store.repair checks every holder of one chunk, or
 * sweeps every record held here. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/util.h"

#include "store.h"

#define NOPROOF_LABEL "weft.store.v1.noproof"
#define NOPROOF_STMT_LEN (sizeof(NOPROOF_LABEL) + HASH + 4 + 32)
/* Proofs one node answers per peer and second (each hashes a share). */
#define PROOFS_PER_SECOND 64
/* Chunks a repair sweep checks per second (below PROOFS_PER_SECOND). */
#define SWEEP_PER_SECOND 48
#define EVIDENCE_SHOWN 100
/* The same share is rebuilt for the same holder at most once per this. */
#define REPAIR_PACE_US 30000000

static uint64_t block_index(const uint8_t nonce[32], const uint8_t cid[HASH], uint32_t j, uint64_t count)
{
	uint8_t in[32 + HASH + 4], h[32];
	memcpy(in, nonce, 32);
	memcpy(in + 32, cid, HASH);
	weft_be32_put(in + 32 + HASH, j);
	crypto_generichash(h, sizeof(h), in, sizeof(in), NULL, 0);
	return weft_le64_get(h) % count;
}

void store_proof_statement(uint8_t out[PROOF_STMT_LEN], const uint8_t cid[HASH], uint32_t j, const uint8_t nonce[32],
			   uint64_t index, const uint8_t leaf[HASH], const uint8_t root[HASH], const uint8_t *path,
			   size_t pathlen)
{
	uint8_t *p = out;
	memcpy(p, PROOF_LABEL, sizeof(PROOF_LABEL)), p += sizeof(PROOF_LABEL);
	memcpy(p, cid, HASH), p += HASH;
	weft_be32_put(p, j), p += 4;
	memcpy(p, nonce, 32), p += 32;
	weft_be64_put(p, index), p += 8;
	memcpy(p, leaf, HASH), p += HASH;
	memcpy(p, root, HASH), p += HASH;
	crypto_generichash(p, HASH, path, pathlen, NULL, 0);
}

static void noproof_statement(uint8_t out[NOPROOF_STMT_LEN], const uint8_t cid[HASH], uint32_t j,
			      const uint8_t nonce[32])
{
	uint8_t *p = out;
	memcpy(p, NOPROOF_LABEL, sizeof(NOPROOF_LABEL)), p += sizeof(NOPROOF_LABEL);
	memcpy(p, cid, HASH), p += HASH;
	weft_be32_put(p, j), p += 4;
	memcpy(p, nonce, 32);
}

/* ---- the holder's side ---- */

/* Whether peer from may have another proof this second. */
static bool proof_budget(struct store *s, uint32_t from)
{
	static const uint64_t second = 1000000;
	uint64_t now = weft_env_now(s->env);
	if (now - s->proof_window_us[from] >= second) {
		s->proof_window_us[from] = now;
		s->proofs_in_window[from] = 0;
	}
	return s->proofs_in_window[from]++ < PROOFS_PER_SECOND;
}

static void send_noproof(struct store *s, uint32_t to, const uint8_t cid[HASH], uint32_t j, const uint8_t nonce[32])
{
	uint8_t stmt[NOPROOF_STMT_LEN], sig[WEFT_SIGNATURE_LEN];
	noproof_statement(stmt, cid, j, nonce);
	s->env->ops->sign(s->env, stmt, sizeof(stmt), sig);
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 6);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_NOPROOF);
	weft_mpw_bin(w, cid, HASH);
	weft_mpw_uint(w, j);
	weft_mpw_bin(w, nonce, 32);
	weft_mpw_bin(w, sig, sizeof(sig));
	weft_env_send(s->env, to, "store.noproof", w->buf, w->len);
}

int store_on_chal(struct store *s, uint32_t from, struct weft_mp_reader *r)
{
	uint8_t cid[HASH], nonce[32];
	uint32_t j;
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &j) != 0 ||
	    weft_mp_read_bin_fixed(r, nonce, 32) != 0)
		return WEFT_EDECODE;
	if (j >= s->env->n || weft_store_holder(cid, j, s->env->n) != s->env->self)
		return WEFT_EPROTO;
	if (!proof_budget(s, from))
		return 0; /* over its rate: it times out, as it asked for */
	struct record rec;
	void *data = NULL;
	size_t len = 0;
	if (store_record_get(s, cid, &rec) != 0 ||
	    s->shares->copy(s->shares->ctx, cid, (uint16_t)j, &data, &len) != 0) {
		send_noproof(s, from, cid, j, nonce);
		return 0;
	}
	/* Prove only bytes that are the share: a damaged one is admitted
	 * missing (and dropped, so that a repair puts it back). */
	uint8_t root[HASH];
	weft_merkle_root(root, data, len);
	if (len != weft_store_share_len(rec.bloblen, rec.k) || memcmp(root, rec.roots[j], HASH) != 0) {
		weft_env_log(s->env, WEFT_LOG_WARN, "store.own_share_bad", "share=%u", j);
		s->shares->del(s->shares->ctx, cid, (uint16_t)j);
		free(data);
		send_noproof(s, from, cid, j, nonce);
		return 0;
	}
	uint64_t count = weft_merkle_blocks(len);
	uint64_t index = block_index(nonce, cid, j, count);
	uint8_t path[WEFT_MERKLE_MAX_PATH][HASH], leaf[HASH];
	unsigned plen;
	weft_merkle_proof(data, len, index, path, &plen);
	const uint8_t *block = (const uint8_t *)data + index * WEFT_MERKLE_BLOCK;
	size_t blen = len - index * WEFT_MERKLE_BLOCK < WEFT_MERKLE_BLOCK ? len - index * WEFT_MERKLE_BLOCK
									 : WEFT_MERKLE_BLOCK;
	weft_merkle_leaf_hash(leaf, block, blen);
	uint8_t stmt[PROOF_STMT_LEN], sig[WEFT_SIGNATURE_LEN];
	store_proof_statement(stmt, cid, j, nonce, index, leaf, root, (const uint8_t *)path, (size_t)plen * HASH);
	s->env->ops->sign(s->env, stmt, sizeof(stmt), sig);
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 10);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_PROOF);
	weft_mpw_bin(w, cid, HASH);
	weft_mpw_uint(w, j);
	weft_mpw_bin(w, nonce, 32);
	weft_mpw_uint(w, index);
	weft_mpw_bin(w, root, HASH);
	weft_mpw_bin(w, block, blen);
	weft_mpw_bin(w, path, (size_t)plen * HASH);
	weft_mpw_bin(w, sig, sizeof(sig));
	free(data);
	store_metric(s, &s->c.proofs_given, "store.proofs_given");
	weft_env_send(s->env, from, "store.proof", w->buf, w->len);
	return 0;
}

/* ---- the auditor's side ---- */

static struct chal *chal_find(struct store *s, uint32_t from, const uint8_t cid[HASH], uint32_t j,
			      const uint8_t nonce[32])
{
	for (int i = 0; i < MAX_CHALS; i++) {
		struct chal *c = &s->chal[i];
		if (c->used && c->holder == from && c->j == j && memcmp(c->cid, cid, HASH) == 0 &&
		    memcmp(c->nonce, nonce, 32) == 0)
			return c;
	}
	return NULL;
}

static uint32_t free_chals(const struct store *s)
{
	uint32_t n = 0;
	for (int i = 0; i < MAX_CHALS; i++)
		n += !s->chal[i].used;
	return n;
}

static void challenge(struct store *s, const uint8_t cid[HASH], const struct record *rec, uint32_t j)
{
	struct chal *c = NULL;
	for (int i = 0; i < MAX_CHALS && c == NULL; i++)
		if (!s->chal[i].used)
			c = &s->chal[i];
	if (c == NULL)
		return;
	memset(c, 0, sizeof(*c));
	c->used = true;
	memcpy(c->cid, cid, HASH);
	c->j = j;
	c->holder = weft_store_holder(cid, j, rec->n);
	s->env->ops->random(s->env, c->nonce, sizeof(c->nonce));
	memcpy(c->root, rec->roots[j], HASH);
	c->L = weft_store_share_len(rec->bloblen, rec->k);
	c->count = weft_merkle_blocks(c->L);
	c->sent_us = weft_env_now(s->env);
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 5);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_CHAL);
	weft_mpw_bin(w, cid, HASH);
	weft_mpw_uint(w, j);
	weft_mpw_bin(w, c->nonce, 32);
	store_metric(s, &s->c.audits_sent, "store.audits_sent");
	weft_env_send(s->env, c->holder, "store.chal", w->buf, w->len);
	store_arm_tick(s);
}

/* Keeps a signed wrong answer: [peer, the PROOF message as received]. */
static void keep_evidence(struct store *s, uint32_t from, const struct chal *c, const uint8_t *msg, size_t len)
{
	uint8_t key[1 + 32];
	key[0] = 'E';
	memcpy(key + 1, c->nonce, 32);
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 2);
	weft_mpw_uint(&w, from);
	weft_mpw_bin(&w, msg, len);
	s->env->ops->kv_put(s->env, key, sizeof(key), w.buf, w.len);
	weft_mpw_free(&w);
	store_metric(s, &s->c.evidence, "store.evidence");
}

/* Share j of cid failed or is missing: rebuild it (when we hold the
 * chunk's record) from k good shares. */
/* Whether share j of cid was asked to be rebuilt lately: a holder that
 * loses what it is given again (or keeps failing) is not fed a copy per
 * audit. */
static bool repaired_lately(struct store *s, const uint8_t cid[HASH], uint32_t holder)
{
	uint64_t now = weft_env_now(s->env);
	for (size_t i = 0; i < sizeof(s->recent) / sizeof(s->recent[0]); i++) {
		const struct recent_repair *r = &s->recent[i];
		if (r->at_us && r->holder == holder && now - r->at_us < REPAIR_PACE_US && memcmp(r->cid, cid, HASH) == 0)
			return true;
	}
	struct recent_repair *r = &s->recent[s->recent_next++ % (sizeof(s->recent) / sizeof(s->recent[0]))];
	memcpy(r->cid, cid, HASH);
	r->holder = holder;
	r->at_us = now;
	return false;
}

void store_rebuild(struct store *s, const uint8_t cid[HASH], const struct record *rec, uint32_t j)
{
	uint32_t holder = weft_store_holder(cid, j, rec->n);
	if (nodeset_has(&s->convicted, holder) || repaired_lately(s, cid, holder))
		return;
	struct fetch *f;
	if (store_start_fetch(s, cid, NULL, rec, rec->k, rec->bloblen, &f) != 0)
		return; /* busy: a later audit finds it again */
	if (f->used && f->state == FETCH_PENDING)
		nodeset_add(&f->rebuild, weft_store_holder(cid, j, rec->n));
}

static void settle(struct store *s, struct chal *c, bool missing)
{
	if (missing) {
		struct record rec;
		if (store_record_get(s, c->cid, &rec) == 0)
			store_rebuild(s, c->cid, &rec, c->j);
	}
	memset(c, 0, sizeof(*c));
}

int store_on_proof(struct store *s, uint32_t from, struct weft_mp_reader *r, const uint8_t *msg, size_t len)
{
	uint8_t cid[HASH], nonce[32], root[HASH], sig[WEFT_SIGNATURE_LEN];
	uint32_t j, blen, plen;
	uint64_t index;
	const uint8_t *block, *path;
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &j) != 0 ||
	    weft_mp_read_bin_fixed(r, nonce, 32) != 0 || weft_mp_read_uint(r, &index) != 0 ||
	    weft_mp_read_bin_fixed(r, root, HASH) != 0 || weft_mp_read_bin(r, &block, &blen) != 0 ||
	    weft_mp_read_bin(r, &path, &plen) != 0 || weft_mp_read_bin_fixed(r, sig, sizeof(sig)) != 0)
		return WEFT_EDECODE;
	struct chal *c = chal_find(s, from, cid, j, nonce);
	if (c == NULL)
		return WEFT_EPROTO; /* not asked: replayed or forged */
	if (blen > WEFT_MERKLE_BLOCK || plen % HASH != 0 || plen / HASH > WEFT_MERKLE_MAX_PATH)
		return WEFT_EDECODE;
	uint8_t leaf[HASH], stmt[PROOF_STMT_LEN];
	weft_merkle_leaf_hash(leaf, block, blen);
	store_proof_statement(stmt, cid, j, nonce, index, leaf, root, path, plen);
	if (s->env->ops->verify(s->env, from, stmt, sizeof(stmt), sig) != 0)
		return WEFT_ECRYPTO; /* unsigned: not even evidence; it stays open and times out */
	bool ok = memcmp(root, c->root, HASH) == 0 && index == block_index(nonce, cid, j, c->count) &&
		  weft_merkle_verify_block(c->root, c->count, index, block, blen, (const uint8_t(*)[HASH])path,
					   plen / HASH);
	if (ok) {
		weft_env_log(s->env, WEFT_LOG_DEBUG, "store.audit", "peer=%u share=%u result=passed", from, j);
		store_metric(s, &s->c.audits_passed, "store.audits_passed");
		settle(s, c, false);
		return 0;
	}
	store_metric(s, &s->c.audits_failed, "store.audits_failed");
	if (from < WEFT_STORE_MAX_N)
		s->peer_bad[from]++;
	weft_env_log(s->env, WEFT_LOG_WARN, "store.audit_failed", "peer=%u share=%u index=%llu", from, j,
		     (unsigned long long)index);
	keep_evidence(s, from, c, msg, len);
	/* A proven liar gets no more copies to lie about. */
	nodeset_add(&s->convicted, from);
	settle(s, c, false);
	return 0;
}

int store_on_noproof(struct store *s, uint32_t from, struct weft_mp_reader *r)
{
	uint8_t cid[HASH], nonce[32], sig[WEFT_SIGNATURE_LEN];
	uint32_t j;
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &j) != 0 ||
	    weft_mp_read_bin_fixed(r, nonce, 32) != 0 || weft_mp_read_bin_fixed(r, sig, sizeof(sig)) != 0)
		return WEFT_EDECODE;
	struct chal *c = chal_find(s, from, cid, j, nonce);
	if (c == NULL)
		return WEFT_EPROTO;
	uint8_t stmt[NOPROOF_STMT_LEN];
	noproof_statement(stmt, cid, j, nonce);
	if (s->env->ops->verify(s->env, from, stmt, sizeof(stmt), sig) != 0)
		return WEFT_ECRYPTO;
	weft_env_log(s->env, WEFT_LOG_DEBUG, "store.audit", "peer=%u share=%u result=missing", from, j);
	store_metric(s, &s->c.audits_missing, "store.audits_missing");
	settle(s, c, true);
	return 0;
}

/* ---- choosing what to audit ---- */

struct pick {
	uint8_t cid[HASH];
	struct record rec;
	bool found;
};

static int pick_first(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct pick *p = arg;
	(void)klen;
	p->found = store_record_decode(val, vlen, &p->rec, p->rec.n) == 0;
	memcpy(p->cid, (const uint8_t *)key + 1, HASH);
	return p->found ? 1 : 0;
}

/* The first record at or after cid; with wrap, the first of all when
 * none follows. */
static bool next_record(struct store *s, const uint8_t cid[HASH], bool wrap, struct pick *p)
{
	uint8_t from[1 + HASH], to[1] = {'R' + 1};
	from[0] = 'R';
	memcpy(from + 1, cid, HASH);
	memset(p, 0, sizeof(*p));
	p->rec.n = s->env->n;
	s->env->ops->kv_scan(s->env, from, sizeof(from), to, sizeof(to), pick_first, p);
	if (!p->found && wrap) {
		memset(from + 1, 0, HASH);
		s->env->ops->kv_scan(s->env, from, sizeof(from), to, sizeof(to), pick_first, p);
	}
	return p->found;
}

/* cid + 1 in place; false when it wraps past the last CID. */
static bool cid_next(uint8_t cid[HASH])
{
	int b = HASH - 1;
	while (b >= 0 && ++cid[b] == 0)
		b--;
	return b >= 0;
}

/* The chunk to audit next.  Half the time the next record after the
 * audit cursor, which walks every record in turn (every chunk is audited
 * within about twice as many audits as there are chunks); half the time
 * the first record after a random point, which no holder can foresee
 * (alone it would favour chunks after wide gaps in the CID space). */
static bool audit_pick(struct store *s, struct pick *p)
{
	uint8_t coin;
	s->env->ops->random(s->env, &coin, 1);
	if (coin & 1) {
		uint8_t at[HASH];
		s->env->ops->random(s->env, at, HASH);
		return next_record(s, at, true, p);
	}
	if (!next_record(s, s->audit_cursor, true, p))
		return false;
	memcpy(s->audit_cursor, p->cid, HASH);
	if (!cid_next(s->audit_cursor))
		memset(s->audit_cursor, 0, HASH);
	return true;
}

int store_audit_now(struct store *s, uint32_t count, bool scheduled)
{
	if (s->env->n < 2)
		return 0;
	uint32_t sent = 0;
	for (uint32_t i = 0; i < count && free_chals(s) > 0; i++) {
		struct pick p;
		if (!audit_pick(s, &p))
			break;
		/* A chunk still being placed is not audited on the schedule: its
		 * holders may not have its shares yet (an operator's store.audit
		 * asks at once). */
		if (scheduled && weft_env_now(s->env) - p.rec.kept_us < s->audit_grace_us)
			continue;
		/* A random other holder not already proven a liar. */
		uint32_t j = p.rec.n, h;
		for (int tries = 0; tries < 16 && j == p.rec.n; tries++) {
			uint32_t rnd;
			s->env->ops->random(s->env, &rnd, sizeof(rnd));
			h = weft_store_holder(p.cid, rnd % p.rec.n, p.rec.n);
			if (h != s->env->self && !nodeset_has(&s->convicted, h))
				j = rnd % p.rec.n;
		}
		if (j == p.rec.n)
			continue;
		challenge(s, p.cid, &p.rec, j);
		sent++;
	}
	return (int)sent;
}

/* Checks our own share of a chunk and challenges every other holder;
 * returns how many were challenged, or WEFT_NOTFOUND without a record. */
static int repair_record(struct store *s, const uint8_t cid[HASH], const struct record *rec)
{
	int challenged = 0;
	for (uint32_t j = 0; j < rec->n; j++) {
		if (weft_store_holder(cid, j, rec->n) != s->env->self) {
			challenge(s, cid, rec, j);
			challenged++;
			continue;
		}
		void *data;
		size_t len;
		bool good = s->shares->copy(s->shares->ctx, cid, (uint16_t)j, &data, &len) == 0;
		if (good) {
			uint8_t root[HASH];
			weft_merkle_root(root, data, len);
			good = memcmp(root, rec->roots[j], HASH) == 0;
			free(data);
			if (!good)
				s->shares->del(s->shares->ctx, cid, (uint16_t)j);
		}
		if (!good)
			store_rebuild(s, cid, rec, j);
	}
	return challenged;
}

int store_repair_chunk(struct store *s, const uint8_t cid[HASH], uint32_t *challenged)
{
	struct record rec;
	int rc = store_record_get(s, cid, &rec);
	if (rc != 0)
		return rc;
	if (free_chals(s) < rec.n)
		return WEFT_EAGAIN;
	*challenged = (uint32_t)repair_record(s, cid, &rec);
	return 0;
}

void store_sweep_tick(struct store *s)
{
	/* Paced below what a holder answers (PROOFS_PER_SECOND per peer): a
	 * sweep challenges each holder of a chunk once, so chunks per second
	 * is challenges per holder and second. */
	uint64_t now = weft_env_now(s->env);
	if (now - s->sweep_window_us >= 1000000) {
		s->sweep_window_us = now;
		s->swept_in_window = 0;
	}
	while (s->sweeping && s->swept_in_window < SWEEP_PER_SECOND) {
		struct pick p;
		if (free_chals(s) < s->env->n)
			return; /* wait for answers */
		if (!next_record(s, s->sweep_from, false, &p)) {
			s->sweeping = false;
			return;
		}
		repair_record(s, p.cid, &p.rec);
		s->swept_in_window++;
		/* Resume after this CID. */
		memcpy(s->sweep_from, p.cid, HASH);
		if (!cid_next(s->sweep_from))
			s->sweeping = false; /* past the last possible CID */
	}
}

void store_audit_tick(struct store *s, uint64_t now)
{
	for (int i = 0; i < MAX_CHALS; i++) {
		struct chal *c = &s->chal[i];
		if (!c->used || now - c->sent_us < s->timeout_us)
			continue;
		store_metric(s, &s->c.audits_timeout, "store.audits_timeout");
		if (c->holder < WEFT_STORE_MAX_N)
			s->peer_timeouts[c->holder]++;
		memset(c, 0, sizeof(*c)); /* a silent holder is not rebuilt to: it may be down */
	}
}

struct evidence_out {
	struct weft_mpw items;
	uint32_t count;
};

static int evidence_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct evidence_out *o = arg;
	(void)key, (void)klen;
	weft_mpw_raw(&o->items, val, vlen);
	return ++o->count >= EVIDENCE_SHOWN ? 1 : 0;
}

void store_evidence_write(struct store *s, struct weft_mpw *w)
{
	struct evidence_out o = {.count = 0};
	weft_mpw_init(&o.items);
	uint8_t from[1] = {'E'}, to[1] = {'E' + 1};
	s->env->ops->kv_scan(s->env, from, 1, to, 1, evidence_one, &o);
	weft_mpw_array(w, o.count);
	weft_mpw_raw(w, o.items.buf, o.items.len);
	weft_mpw_free(&o.items);
}
