/* store.c - the storage service's state machine: placement of coded
 * chunks (PUT / ACK), retrieval (GET / SHARE), manifests (MPUT / MGET /
 * MAN), drops, the commands the daemon drives it with, and its timer.
 * Audits, proofs and repair are in audit.c; the design is in
 * weft/store_proto.h and docs/protocols/store.md.
 *
 * Every peer message is untrusted: a share is taken only from the node
 * that should hold it, after its length, its record (against the SR the
 * reader trusts, or the record already held) and its bytes (against its
 * root) check; anything else is refused and counted against the peer.
 *
 * kv (the node's transaction): "R" cid -> record, "M" id -> manifest
 * envelope, "E" seq -> evidence (audit.c).  Shares: the host's share
 * service, durable when each call returns. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/store_manifest.h"
#include "weft/util.h"

#include "store.h"

#define TICK_US 100000
#define MAX_TRIES 5
#define MANIFEST_MAX ((size_t)3 << 20)
/* A finished placement or fetch whose job never asks for it (the job
 * failed, or its client left) is forgotten after this long. */
#define FORGET_US 30000000
/* How long a peer that let a request time out is asked last. */
#define SUSPECT_US 30000000

uint32_t nodeset_count(const struct nodeset *s)
{
	uint32_t c = 0;
	for (int i = 0; i < 4; i++)
		c += (uint32_t)__builtin_popcountll(s->w[i]);
	return c;
}

size_t weft_store_share_len(uint64_t bloblen, uint32_t k)
{
	/* Without the sum bloblen + k - 1, which wraps for a peer's 2^64 - 1. */
	size_t L = (size_t)(bloblen / k + (bloblen % k != 0));
	return L ? L : 1;
}

uint32_t weft_store_holder(const uint8_t cid[WEFT_STORE_HASH], uint32_t j, uint32_t n)
{
	return (uint32_t)(((uint64_t)weft_be32_get(cid) + j) % n);
}

void weft_store_tag(uint8_t tag[WEFT_STORE_HASH], const uint8_t owner[WEFT_STORE_HASH],
		    const uint8_t nonce[WEFT_FILE_NONCE_LEN])
{
	static const char label[] = "weft.store.v1.tag";
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, WEFT_STORE_HASH);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label)); /* with its NUL */
	crypto_generichash_update(&st, owner, WEFT_STORE_HASH);
	crypto_generichash_update(&st, nonce, WEFT_FILE_NONCE_LEN);
	crypto_generichash_final(&st, tag, WEFT_STORE_HASH);
}

void weft_store_drop_message(uint8_t out[WEFT_STORE_DROP_MSG_LEN], const uint8_t id[WEFT_STORE_HASH],
			     const uint8_t owner[WEFT_STORE_HASH], const uint8_t nonce[WEFT_FILE_NONCE_LEN])
{
	static const char label[] = WEFT_STORE_DROP_LABEL;
	memcpy(out, label, sizeof(label));
	memcpy(out + sizeof(label), id, WEFT_STORE_HASH);
	memcpy(out + sizeof(label) + WEFT_STORE_HASH, owner, WEFT_STORE_HASH);
	memcpy(out + sizeof(label) + 2 * WEFT_STORE_HASH, nonce, WEFT_FILE_NONCE_LEN);
}

void store_metric(struct store *s, uint64_t *counter, const char *name)
{
	(*counter)++;
	weft_env_metric(s->env, name, 1);
}

static void refuse_from(struct store *s, uint32_t from)
{
	if (from < WEFT_STORE_MAX_N)
		s->peer_bad[from]++;
	weft_env_metric(s->env, "store.bad_input", 1);
}

void store_arm_tick(struct store *s)
{
	if (!s->tick_armed) {
		s->env->ops->set_timer(s->env, 1, TICK_US);
		s->tick_armed = true;
	}
}

const struct weft_rs *store_rs(struct store *s, uint32_t k)
{
	struct weft_rs *rs = &s->rs[k];
	if (rs->n == 0 && weft_rs_init(rs, s->env->n, k) != 0)
		abort(); /* k was checked against n by every caller */
	return rs;
}

/* ---- records ---- */

static size_t rec_key(uint8_t key[1 + HASH], char kind, const uint8_t h[HASH])
{
	key[0] = (uint8_t)kind;
	memcpy(key + 1, h, HASH);
	return 1 + HASH;
}

void store_record_write(struct weft_mpw *w, const struct record *rec)
{
	weft_mpw_array(w, 5);
	weft_mpw_bin(w, rec->tag, HASH);
	weft_mpw_uint(w, rec->k);
	weft_mpw_uint(w, rec->n);
	weft_mpw_uint(w, rec->bloblen);
	weft_mpw_bin(w, rec->roots, (size_t)rec->n * HASH);
}

/* Reads a record for a committee of n and checks its shape: 1 <= k <= n,
 * a blob whose shares fit a message, n roots. */
int store_record_read(struct weft_mp_reader *r, struct record *rec, uint32_t n)
{
	uint32_t cnt, rlen;
	uint64_t k, nn;
	const uint8_t *roots;
	if (weft_mp_read_array(r, &cnt) != 0 || cnt != 5 || weft_mp_read_bin_fixed(r, rec->tag, HASH) != 0 ||
	    weft_mp_read_uint(r, &k) != 0 || weft_mp_read_uint(r, &nn) != 0 ||
	    weft_mp_read_uint(r, &rec->bloblen) != 0 || weft_mp_read_bin(r, &roots, &rlen) != 0)
		return WEFT_EDECODE;
	if (nn != n || k < 1 || k > n || rec->bloblen == 0 || rlen != (size_t)n * HASH ||
	    weft_store_share_len(rec->bloblen, (uint32_t)k) > WEFT_STORE_SHARE_MAX)
		return WEFT_EDECODE;
	rec->k = (uint32_t)k;
	rec->n = n;
	memcpy(rec->roots, roots, rlen);
	return 0;
}

int store_record_decode(const void *val, size_t vlen, struct record *rec, uint32_t n)
{
	struct weft_mp_reader r;
	uint32_t cnt;
	weft_mp_reader_init(&r, val, vlen);
	if (weft_mp_read_array(&r, &cnt) != 0 || cnt != 2 || store_record_read(&r, rec, n) != 0 ||
	    weft_mp_read_uint(&r, &rec->kept_us) != 0)
		return WEFT_ECORRUPT;
	return 0;
}

int store_record_get(struct store *s, const uint8_t cid[HASH], struct record *rec)
{
	uint8_t key[1 + HASH];
	const void *val;
	size_t vlen;
	int rc = s->env->ops->kv_get(s->env, key, rec_key(key, 'R', cid), &val, &vlen);
	return rc != 0 ? rc : store_record_decode(val, vlen, rec, s->env->n);
}

/* Keeps rec for cid; a record already kept keeps its time. */
static int record_put(struct store *s, const uint8_t cid[HASH], const struct record *rec)
{
	struct record old;
	uint64_t kept = store_record_get(s, cid, &old) == 0 ? old.kept_us : weft_env_now(s->env);
	uint8_t key[1 + HASH];
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 2);
	store_record_write(&w, rec);
	weft_mpw_uint(&w, kept);
	int rc = s->env->ops->kv_put(s->env, key, rec_key(key, 'R', cid), w.buf, w.len);
	weft_mpw_free(&w);
	return rc;
}

static bool same_coding(const struct record *a, const struct record *b)
{
	return a->k == b->k && a->n == b->n && a->bloblen == b->bloblen &&
	       memcmp(a->roots, b->roots, (size_t)a->n * HASH) == 0;
}

void weft_store_shares_root(uint8_t sr[WEFT_STORE_HASH], uint32_t k, uint32_t n, uint64_t bloblen,
			    const uint8_t (*roots)[WEFT_STORE_HASH])
{
	static const char label[] = "weft.store.v1.shares";
	uint8_t head[16], top[HASH];
	weft_be32_put(head, k);
	weft_be32_put(head + 4, n);
	weft_be64_put(head + 8, bloblen);
	weft_merkle_root_digests(top, roots, n);
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, HASH);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label));
	crypto_generichash_update(&st, head, sizeof(head));
	crypto_generichash_update(&st, top, HASH);
	crypto_generichash_final(&st, sr, HASH);
}

static void shares_root(uint8_t sr[HASH], const struct record *rec)
{
	weft_store_shares_root(sr, rec->k, rec->n, rec->bloblen, (const uint8_t(*)[HASH])rec->roots);
}

/* The fetch takes rec as the chunk's coding (its SR was checked). */
static void fetch_adopt(struct fetch *f, const struct record *rec)
{
	f->rec = *rec;
	f->L = weft_store_share_len(rec->bloblen, rec->k);
	f->roots_known = true;
}

/* ---- coding ---- */

uint8_t *store_code(struct store *s, const uint8_t *blob, const uint8_t cid[HASH], struct record *rec, size_t *L)
{
	uint32_t n = rec->n, k = rec->k;
	size_t l = weft_store_share_len(rec->bloblen, k);
	uint8_t *sh = weft_xcalloc(n, l);
	if (k == 1) {
		/* Plain replication: every share is the blob, its root the CID. */
		for (uint32_t j = 0; j < n; j++) {
			memcpy(sh + (size_t)j * l, blob, rec->bloblen);
			memcpy(rec->roots[j], cid, HASH);
		}
	} else {
		memcpy(sh, blob, rec->bloblen);
		uint8_t *ptr[WEFT_STORE_MAX_N];
		for (uint32_t j = 0; j < n; j++)
			ptr[j] = sh + (size_t)j * l;
		weft_rs_encode(store_rs(s, k), ptr, l);
		for (uint32_t j = 0; j < n; j++)
			weft_merkle_root(rec->roots[j], ptr[j], l);
	}
	*L = l;
	return sh;
}

/* ---- placement ---- */

/* PUT [cid, j, record, [repair, bytes]]; data NULL: a reference (no bytes). */
static void send_put(struct store *s, const uint8_t cid[HASH], uint32_t j, const struct record *rec,
		     const uint8_t *data, size_t L, bool repair)
{
	static const uint8_t none[1];
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 6);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_PUT);
	weft_mpw_bin(w, cid, HASH);
	weft_mpw_uint(w, j);
	store_record_write(w, rec);
	weft_mpw_array(w, 2);
	weft_mpw_bool(w, repair);
	weft_mpw_bin(w, data ? data : none, data ? L : 0);
	weft_env_send(s->env, weft_store_holder(cid, j, rec->n), "store.put", w->buf, w->len);
}

/* Stores share j here: reference, then share, then record (kv, with this
 * step).  data NULL: a reference only, the share must be held already
 * (L bytes whose root is r_j), else WEFT_NOTFOUND.  0 or a negative code. */
static int keep_share(struct store *s, const uint8_t cid[HASH], uint32_t j, const struct record *rec,
		      const uint8_t *data, size_t L, bool repair)
{
	if (data == NULL) {
		struct weft_share_meta meta;
		if (s->shares->has(s->shares->ctx, cid, (uint16_t)j, &meta) != 0 || meta.length != L ||
		    memcmp(meta.root, rec->roots[j], HASH) != 0)
			return WEFT_NOTFOUND;
	}
	int rc = s->shares->ref(s->shares->ctx, rec->tag, (const uint8_t(*)[HASH])cid, 1);
	if (rc == 0 && data != NULL)
		rc = s->shares->put(s->shares->ctx, cid, (uint16_t)j, data, L, rec->roots[j], repair);
	if (rc == 0)
		rc = record_put(s, cid, rec);
	return rc;
}

static void place_free(struct place *p)
{
	free(p->shares);
	memset(p, 0, sizeof(*p));
}

/* The placement of cid for the file tag (a repair's tag is its record's),
 * from slot `from` on, or NULL.  Two files sharing a chunk are placed
 * separately: each holder must reference the chunk under each file. */
static struct place *place_find(struct store *s, const uint8_t cid[HASH], const uint8_t tag[HASH], int from)
{
	for (int i = from; i < MAX_PLACES; i++)
		if (s->place[i].used && memcmp(s->place[i].cid, cid, HASH) == 0 &&
		    memcmp(s->place[i].rec.tag, tag, HASH) == 0)
			return &s->place[i];
	return NULL;
}

/* The placement a put job made of cid for file tag (not a repair), or NULL. */
static struct place *file_place_find(struct store *s, const uint8_t cid[HASH], const uint8_t tag[HASH])
{
	struct place *p = place_find(s, cid, tag, 0);
	while (p != NULL && p->repair)
		p = place_find(s, cid, tag, (int)(p - s->place) + 1);
	return p;
}

static void place_check_done(struct store *s, struct place *p)
{
	if (p->done || p->failed)
		return;
	/* Fewer than k holders could not rebuild it, whatever store_ack says. */
	uint32_t need = s->need > p->rec.k ? s->need : p->rec.k;
	bool done = p->repair ? nodeset_count(&p->acked) == nodeset_count(&p->targets)
			      : nodeset_count(&p->acked) >= need;
	if (!done)
		return;
	p->done = true;
	p->finished_us = weft_env_now(s->env);
	free(p->shares);
	p->shares = NULL;
	store_metric(s, p->repair ? &s->c.repairs_stored : &s->c.placed, p->repair ? "store.repairs_stored" : "store.placed");
	if (p->repair)
		memset(p, 0, sizeof(*p)); /* nobody polls a repair */
}

/* Takes ownership of shares.  Stores the own share (unless a repair that
 * does not target us) and sends the others. */
int store_start_place(struct store *s, const uint8_t cid[HASH], const struct record *rec, uint8_t *shares,
		      size_t L, bool repair, bool by_ref, const struct nodeset *targets, struct place **out)
{
	struct place *p = repair ? NULL : file_place_find(s, cid, rec->tag);
	if (p != NULL && !p->done && !p->failed) {
		free(shares); /* this file's placement already in flight: the caller polls that one */
		*out = p;
		return 0;
	}
	if (p != NULL)
		place_free(p); /* a finished placement of this file's chunk: placed again */
	p = NULL;
	for (int i = 0; i < MAX_PLACES && p == NULL; i++)
		if (!s->place[i].used)
			p = &s->place[i];
	if (p == NULL) {
		free(shares);
		return WEFT_EAGAIN;
	}
	memset(p, 0, sizeof(*p));
	p->used = true;
	memcpy(p->cid, cid, HASH);
	p->rec = *rec;
	p->shares = shares;
	p->L = L;
	p->repair = repair;
	p->by_ref = by_ref && !repair;
	if (targets)
		p->targets = *targets;
	else
		for (uint32_t j = 0; j < rec->n; j++)
			nodeset_add(&p->targets, weft_store_holder(cid, j, rec->n));
	for (uint32_t j = 0; j < rec->n; j++) {
		uint32_t h = weft_store_holder(cid, j, rec->n);
		if (!nodeset_has(&p->targets, h))
			continue;
		if (h == s->env->self) {
			int rc = keep_share(s, cid, j, rec, shares + (size_t)j * L, L, repair);
			if (rc != 0) {
				place_free(p);
				return rc;
			}
			nodeset_add(&p->acked, h);
		} else {
			send_put(s, cid, j, rec, p->by_ref ? NULL : shares + (size_t)j * L, L, repair);
		}
	}
	p->sent_us = weft_env_now(s->env);
	p->tries = 1;
	*out = p;
	place_check_done(s, p);
	store_arm_tick(s);
	return 0;
}

static void resend_places(struct store *s, uint64_t now)
{
	for (int i = 0; i < MAX_PLACES; i++) {
		struct place *p = &s->place[i];
		if (p->used && (p->done || p->failed) && now - p->finished_us >= FORGET_US)
			place_free(p);
		if (!p->used || p->done || p->failed || now - p->sent_us < s->timeout_us)
			continue;
		if (p->tries >= MAX_TRIES) {
			p->failed = true;
			p->finished_us = now;
			free(p->shares);
			p->shares = NULL;
			store_metric(s, &s->c.place_failed, "store.place_failed");
			if (p->repair)
				memset(p, 0, sizeof(*p));
			continue;
		}
		for (uint32_t j = 0; j < p->rec.n; j++) {
			uint32_t h = weft_store_holder(p->cid, j, p->rec.n);
			if (nodeset_has(&p->targets, h) && !nodeset_has(&p->acked, h))
				send_put(s, p->cid, j, &p->rec, p->shares + (size_t)j * p->L, p->L, p->repair);
		}
		p->sent_us = now;
		p->tries++;
	}
}

/* ACK [cid, j, code, tag]: the tag names the file whose PUT it answers,
 * so a late ACK of one file's placement never counts for another's. */
static void send_ack(struct store *s, uint32_t to, const uint8_t cid[HASH], uint32_t j, int code,
		     const uint8_t tag[HASH])
{
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 6);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_ACK);
	weft_mpw_bin(w, cid, HASH);
	weft_mpw_uint(w, j);
	weft_mpw_int(w, code);
	weft_mpw_bin(w, tag, HASH);
	weft_env_send(s->env, to, "store.ack", w->buf, w->len);
}

static int on_put(struct store *s, uint32_t from, struct weft_mp_reader *r)
{
	uint8_t cid[HASH];
	uint32_t j, cnt, dlen;
	struct record rec;
	bool repair;
	const uint8_t *data;
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &j) != 0 ||
	    store_record_read(r, &rec, s->env->n) != 0 || weft_mp_read_array(r, &cnt) != 0 || cnt != 2 ||
	    weft_mp_read_bool(r, &repair) != 0 || weft_mp_read_bin(r, &data, &dlen) != 0)
		return WEFT_EDECODE;
	size_t L = weft_store_share_len(rec.bloblen, rec.k);
	bool reference = dlen == 0 && !repair; /* "keep the share you hold for this file too" */
	if (j >= rec.n || weft_store_holder(cid, j, rec.n) != s->env->self || (dlen != L && !reference))
		return WEFT_EPROTO;
	uint8_t root[HASH];
	if (!reference) {
		weft_merkle_root(root, data, dlen);
		if (memcmp(root, rec.roots[j], HASH) != 0) {
			s->c.puts_refused++;
			return WEFT_ECORRUPT;
		}
	}
	/* A chunk keeps the coding it was first placed with. */
	struct record have;
	if (store_record_get(s, cid, &have) == 0 && !same_coding(&have, &rec)) {
		s->c.puts_refused++;
		send_ack(s, from, cid, j, WEFT_EEXIST, rec.tag);
		return 0;
	}
	/* Held with other bytes (a crash between the share store's commit and
	 * kv's, or another coding's share): the record is not kept, so the
	 * share cannot be served; EEXIST, which the placer does not count
	 * (acknowledged as stored, it was: tla StoreFindEexistAck). */
	int rc = keep_share(s, cid, j, &rec, reference ? NULL : data, L, repair);
	if (rc == 0 && reference)
		store_metric(s, &s->c.puts_referenced, "store.puts_referenced");
	else if (rc == 0)
		store_metric(s, &s->c.puts_stored, "store.puts_stored");
	else if (!(reference && rc == WEFT_NOTFOUND)) /* not held: the placer sends the bytes */
		weft_env_log(s->env, WEFT_LOG_WARN, "store.put_failed", "from=%u share=%u err=\"%s\"", from, j,
			     weft_strerror(rc));
	send_ack(s, from, cid, j, rc, rec.tag);
	return 0;
}

static int on_ack(struct store *s, uint32_t from, struct weft_mp_reader *r)
{
	uint8_t cid[HASH], tag[HASH];
	uint32_t j;
	int64_t code;
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &j) != 0 ||
	    weft_mp_read_int(r, &code) != 0 || weft_mp_read_bin_fixed(r, tag, HASH) != 0)
		return WEFT_EDECODE;
	/* Every placement of this file's chunk that asked `from` (a file's own
	 * and a repair under the same record may both be open). */
	for (struct place *p = place_find(s, cid, tag, 0); p != NULL;
	     p = place_find(s, cid, tag, (int)(p - s->place) + 1)) {
		if (p->done || p->failed)
			continue; /* late or repeated */
		if (j >= p->rec.n || weft_store_holder(cid, j, p->rec.n) != from)
			return WEFT_EPROTO;
		if (!nodeset_has(&p->targets, from))
			continue; /* a repair asked others: its acknowledgement does not count */
		if (code == 0)
			nodeset_add(&p->acked, from);
		else if (code == WEFT_NOTFOUND && p->by_ref && p->shares && !nodeset_has(&p->answered, from)) {
			/* The bytes, then; once: more NOTFOUNDs wait for the resend
			 * timer (a small ACK must not buy a share's bytes each time). */
			nodeset_add(&p->answered, from);
			send_put(s, cid, j, &p->rec, p->shares + (size_t)j * p->L, p->L, false);
		}
		else
			weft_env_log(s->env, WEFT_LOG_WARN, "store.put_refused", "peer=%u share=%u err=\"%s\"", from,
				     j, weft_strerror((int)code));
		place_check_done(s, p);
	}
	return 0;
}

/* ---- retrieval ---- */

static void fetch_free(struct fetch *f)
{
	for (uint32_t j = 0; j < WEFT_STORE_MAX_N; j++)
		free(f->share[j]);
	free(f->blob);
	memset(f, 0, sizeof(*f));
}

static struct fetch *fetch_find(struct store *s, const uint8_t cid[HASH], bool rebuild)
{
	for (int i = 0; i < MAX_FETCHES; i++)
		if (s->fetch[i].used && s->fetch[i].for_rebuild == rebuild && memcmp(s->fetch[i].cid, cid, HASH) == 0)
			return &s->fetch[i];
	return NULL;
}

static void send_get(struct store *s, struct fetch *f, uint32_t j)
{
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 4);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_GET);
	weft_mpw_bin(w, f->cid, HASH);
	weft_mpw_uint(w, j);
	uint32_t h = weft_store_holder(f->cid, j, f->rec.n);
	nodeset_add(&f->asked, h);
	f->asked_us[j] = weft_env_now(s->env);
	weft_env_send(s->env, h, "store.get", w->buf, w->len);
}

static void fetch_finish(struct store *s, struct fetch *f);

/* Takes share j's bytes (checked) into f; decodes once k are in. */
static void fetch_take(struct store *s, struct fetch *f, uint32_t j, uint8_t *data)
{
	if (f->share[j] != NULL) {
		free(data);
		return;
	}
	f->share[j] = data;
	f->have++;
	if (f->have >= f->rec.k)
		fetch_finish(s, f);
}

/* Asks holders not asked yet for enough shares to reach k; data shares
 * first (no decoding when they all answer).  Fails the fetch when nobody
 * is left to ask and nothing is outstanding. */
static void fetch_more(struct store *s, struct fetch *f)
{
	if (f->state != FETCH_PENDING)
		return;
	uint32_t outstanding = 0;
	for (uint32_t j = 0; j < f->rec.n; j++) {
		uint32_t h = weft_store_holder(f->cid, j, f->rec.n);
		if (nodeset_has(&f->asked, h) && !nodeset_has(&f->answered, h))
			outstanding++;
	}
	/* Holders that answered lately first, then those that timed out. */
	uint64_t now = weft_env_now(s->env);
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t j = 0; j < f->rec.n && f->have + outstanding < f->rec.k; j++) {
			uint32_t h = weft_store_holder(f->cid, j, f->rec.n);
			if (nodeset_has(&f->asked, h) || h == s->env->self ||
			    (pass == 0) == (s->suspect_until_us[h] > now))
				continue;
			send_get(s, f, j);
			outstanding++;
		}
	if (f->have + outstanding < f->rec.k && outstanding == 0) {
		f->state = FETCH_FAILED;
		f->finished_us = weft_env_now(s->env);
		f->why = nodeset_count(&f->bad) ? "too few holders served good shares" : "too few holders have the chunk";
		store_metric(s, &s->c.fetch_failed, "store.fetch_failed");
		if (f->for_rebuild) {
			store_metric(s, &s->c.rebuilds_failed, "store.rebuilds_failed");
			fetch_free(f);
		}
	}
}

/* Our own share, when we hold one and it checks. */
static void fetch_own(struct store *s, struct fetch *f)
{
	for (uint32_t j = 0; j < f->rec.n; j++) {
		if (weft_store_holder(f->cid, j, f->rec.n) != s->env->self)
			continue;
		nodeset_add(&f->asked, s->env->self);
		nodeset_add(&f->answered, s->env->self);
		void *data;
		size_t len;
		if (!f->roots_known || s->shares->copy(s->shares->ctx, f->cid, (uint16_t)j, &data, &len) != 0) {
			if (f->for_rebuild)
				nodeset_add(&f->rebuild, s->env->self);
			return;
		}
		uint8_t root[HASH];
		if (len == f->L)
			weft_merkle_root(root, data, len);
		if (len != f->L || memcmp(root, f->rec.roots[j], HASH) != 0) {
			/* Our disk holds bad bytes: drop them, a rebuild puts them back. */
			weft_env_log(s->env, WEFT_LOG_WARN, "store.own_share_bad", "share=%u", j);
			s->shares->del(s->shares->ctx, f->cid, (uint16_t)j);
			free(data);
			if (f->for_rebuild)
				nodeset_add(&f->rebuild, s->env->self);
			return;
		}
		fetch_take(s, f, j, data);
		return;
	}
}

int store_start_fetch(struct store *s, const uint8_t cid[HASH], const uint8_t *sr, const struct record *known,
		      uint32_t k, uint64_t bloblen, struct fetch **out)
{
	struct fetch *f = fetch_find(s, cid, sr == NULL);
	if (f != NULL) {
		*out = f;
		return 0;
	}
	for (int i = 0; i < MAX_FETCHES && f == NULL; i++)
		if (!s->fetch[i].used)
			f = &s->fetch[i];
	if (f == NULL)
		return WEFT_EAGAIN;
	memset(f, 0, sizeof(*f));
	f->used = true;
	f->state = FETCH_PENDING;
	memcpy(f->cid, cid, HASH);
	f->rec.n = s->env->n;
	f->rec.k = k;
	f->rec.bloblen = bloblen;
	f->L = weft_store_share_len(bloblen, k);
	f->for_rebuild = sr == NULL;
	if (known != NULL) {
		fetch_adopt(f, known);
		shares_root(f->sr, known);
	} else {
		memcpy(f->sr, sr, HASH);
		struct record held;
		if (store_record_get(s, cid, &held) == 0 && held.bloblen == bloblen) {
			uint8_t hsr[HASH];
			shares_root(hsr, &held);
			if (memcmp(hsr, sr, HASH) == 0)
				fetch_adopt(f, &held);
		}
	}
	*out = f;
	fetch_own(s, f);
	if (f->state == FETCH_PENDING)
		fetch_more(s, f);
	store_arm_tick(s);
	return 0;
}

static void fetch_finish(struct store *s, struct fetch *f)
{
	uint32_t k = f->rec.k, idx[WEFT_STORE_MAX_N], m = 0;
	const uint8_t *frag[WEFT_STORE_MAX_N];
	for (uint32_t j = 0; j < f->rec.n && m < k; j++)
		if (f->share[j] != NULL)
			idx[m] = j, frag[m] = f->share[j], m++;
	uint8_t *data = weft_xmalloc((size_t)k * f->L);
	if (k == 1) {
		memcpy(data, frag[0], f->L);
	} else {
		uint8_t *dptr[WEFT_STORE_MAX_N];
		for (uint32_t j = 0; j < k; j++)
			dptr[j] = data + (size_t)j * f->L;
		if (weft_rs_decode(store_rs(s, k), idx, frag, f->L, dptr) != 0) {
			free(data);
			f->state = FETCH_FAILED;
			f->finished_us = weft_env_now(s->env);
			f->why = "decoding failed";
			store_metric(s, &s->c.fetch_failed, "store.fetch_failed");
			return;
		}
	}
	f->blob = data; /* bloblen bytes matter; the padding follows */
	f->state = FETCH_DONE;
	f->finished_us = weft_env_now(s->env);
	store_metric(s, &s->c.fetched, "store.fetched");
	if (!f->for_rebuild)
		return;
	/* Code the chunk again and place the shares that were missing or bad. */
	size_t L;
	struct record rec = f->rec;
	uint8_t *shares = store_code(s, f->blob, f->cid, &rec, &L);
	if (!same_coding(&rec, &f->rec)) {
		free(shares);
		store_metric(s, &s->c.rebuilds_failed, "store.rebuilds_failed");
	} else {
		struct place *p;
		if (store_start_place(s, f->cid, &rec, shares, L, true, false, &f->rebuild, &p) == 0)
			store_metric(s, &s->c.repairs_sent, "store.repairs_sent");
	}
	fetch_free(f);
}

static void send_share(struct store *s, uint32_t to, const uint8_t cid[HASH], uint32_t j)
{
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	struct record rec;
	void *data = NULL;
	size_t len = 0;
	bool ok = store_record_get(s, cid, &rec) == 0 && j < rec.n &&
		  s->shares->copy(s->shares->ctx, cid, (uint16_t)j, &data, &len) == 0;
	if (ok) {
		/* Never serve bytes we know are bad: check them first. */
		uint8_t root[HASH];
		weft_merkle_root(root, data, len);
		ok = len == weft_store_share_len(rec.bloblen, rec.k) && memcmp(root, rec.roots[j], HASH) == 0;
		if (!ok) {
			weft_env_log(s->env, WEFT_LOG_WARN, "store.own_share_bad", "share=%u", j);
			s->shares->del(s->shares->ctx, cid, (uint16_t)j);
		}
	}
	weft_mpw_array(w, ok ? 6 : 4);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, ok ? MSG_SHARE : MSG_NOSHARE);
	weft_mpw_bin(w, cid, HASH);
	weft_mpw_uint(w, j);
	if (ok) {
		store_record_write(w, &rec);
		weft_mpw_bin(w, data, len);
	}
	free(data);
	weft_env_send(s->env, to, ok ? "store.share" : "store.noshare", w->buf, w->len);
}

static int on_get(struct store *s, uint32_t from, struct weft_mp_reader *r)
{
	uint8_t cid[HASH];
	uint32_t j;
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &j) != 0)
		return WEFT_EDECODE;
	if (j >= s->env->n || weft_store_holder(cid, j, s->env->n) != s->env->self)
		return WEFT_EPROTO;
	send_share(s, from, cid, j);
	return 0;
}

/* A share from a peer for our fetch: only from its holder, only with a
 * record that matches the reader's SR, only bytes that match their root. */
static int on_share(struct store *s, uint32_t from, struct weft_mp_reader *r, bool have)
{
	uint8_t cid[HASH];
	uint32_t j, dlen = 0;
	struct record rec;
	const uint8_t *data = NULL;
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &j) != 0)
		return WEFT_EDECODE;
	if (have && (store_record_read(r, &rec, s->env->n) != 0 || weft_mp_read_bin(r, &data, &dlen) != 0))
		return WEFT_EDECODE;
	for (int pass = 0; pass < 2; pass++) {
		struct fetch *f = fetch_find(s, cid, pass == 1);
		if (f == NULL || f->state != FETCH_PENDING || j >= f->rec.n ||
		    weft_store_holder(cid, j, f->rec.n) != from || !nodeset_has(&f->asked, from) ||
		    nodeset_has(&f->answered, from))
			continue;
		nodeset_add(&f->answered, from);
		s->suspect_until_us[from] = 0;
		bool good = have;
		if (good && !f->roots_known && !s->unsafe_trust_shares) {
			uint8_t sr[HASH];
			shares_root(sr, &rec);
			good = rec.bloblen == f->rec.bloblen && memcmp(sr, f->sr, HASH) == 0;
			if (good)
				fetch_adopt(f, &rec);
		}
		if (s->unsafe_trust_shares && have) {
			/* The broken variant: any share of the right length is taken
			 * (from a record of the chunk's coding: the blob keeps the
			 * reader's length). */
			good = dlen == f->L && rec.k == f->rec.k && rec.bloblen == f->rec.bloblen;
			if (good && !f->roots_known)
				fetch_adopt(f, &rec);
		} else if (good) {
			uint8_t root[HASH];
			good = dlen == f->L;
			if (good) {
				weft_merkle_root(root, data, dlen);
				good = memcmp(root, f->rec.roots[j], HASH) == 0;
			}
		}
		if (good) {
			fetch_take(s, f, j, weft_xmemdup(data, dlen));
		} else if (have) {
			nodeset_add(&f->bad, from);
			if (from < WEFT_STORE_MAX_N)
				s->peer_bad[from]++;
			store_metric(s, &s->c.bad_shares, "store.bad_shares");
			weft_env_log(s->env, WEFT_LOG_WARN, "store.bad_share", "peer=%u share=%u", from, j);
			if (f->for_rebuild)
				nodeset_add(&f->rebuild, from);
		} else if (f->for_rebuild) {
			nodeset_add(&f->rebuild, from);
		}
		if (f->state == FETCH_PENDING)
			fetch_more(s, f);
		return good || !have ? 0 : WEFT_ECORRUPT;
	}
	return 0; /* not asked, or late: ignored */
}

static void fetch_timeouts(struct store *s, uint64_t now)
{
	for (int i = 0; i < MAX_FETCHES; i++) {
		struct fetch *f = &s->fetch[i];
		if (f->used && f->state != FETCH_PENDING && now - f->finished_us >= FORGET_US)
			fetch_free(f);
		if (!f->used || f->state != FETCH_PENDING)
			continue;
		bool expired = false;
		for (uint32_t j = 0; j < f->rec.n; j++) {
			uint32_t h = weft_store_holder(f->cid, j, f->rec.n);
			if (nodeset_has(&f->asked, h) && !nodeset_has(&f->answered, h) &&
			    now - f->asked_us[j] >= s->timeout_us) {
				nodeset_add(&f->answered, h); /* given up on */
				s->peer_timeouts[h]++;
				s->suspect_until_us[h] = now + SUSPECT_US;
				expired = true;
			}
		}
		if (expired)
			fetch_more(s, f);
	}
}

/* ---- manifests and drops ---- */

/* Reads a manifest envelope from r, checks it keylessly and keeps it:
 * 0 with *env, *len and its id, or a code with *why. */
static int manifest_keep(struct store *s, struct weft_mp_reader *r, const uint8_t **env, uint32_t *len,
			 uint8_t id[HASH], const char **why)
{
	uint8_t owner[HASH];
	*why = "not a manifest envelope";
	if (weft_mp_read_bin(r, env, len) != 0)
		return WEFT_EDECODE;
	if (*len > MANIFEST_MAX) {
		*why = "manifest too long";
		return WEFT_ETOOBIG;
	}
	int rc = weft_manifest_verify(id, owner, *env, *len, why);
	if (rc != 0)
		return rc;
	uint8_t key[1 + HASH];
	const void *val;
	size_t vlen;
	if (s->env->ops->kv_get(s->env, key, rec_key(key, 'M', id), &val, &vlen) == 0)
		return 0;
	rc = s->env->ops->kv_put(s->env, key, 1 + HASH, *env, *len);
	if (rc == 0)
		store_metric(s, &s->c.manifests_stored, "store.manifests_stored");
	return rc;
}

static void send_manifest(struct store *s, int64_t to, int type, const uint8_t *env, size_t len)
{
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 3);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, (uint64_t)type);
	weft_mpw_bin(w, env, len);
	if (to < 0)
		weft_env_multicast(s->env, "store.mput", w->buf, w->len);
	else
		weft_env_send(s->env, (uint32_t)to, "store.man", w->buf, w->len);
}

static int on_manifest(struct store *s, uint32_t from, struct weft_mp_reader *r)
{
	const uint8_t *env;
	uint32_t len;
	uint8_t id[HASH];
	const char *why = "";
	int rc = manifest_keep(s, r, &env, &len, id, &why);
	if (rc != 0)
		weft_env_log(s->env, WEFT_LOG_WARN, "store.bad_manifest", "peer=%u why=\"%s\"", from, why);
	return rc;
}

static int on_mget(struct store *s, uint32_t from, struct weft_mp_reader *r)
{
	uint8_t id[HASH], key[1 + HASH];
	if (weft_mp_read_bin_fixed(r, id, HASH) != 0)
		return WEFT_EDECODE;
	const void *val;
	size_t vlen;
	if (s->env->ops->kv_get(s->env, key, rec_key(key, 'M', id), &val, &vlen) == 0) {
		uint8_t *copy = weft_xmemdup(val, vlen);
		send_manifest(s, from, MSG_MAN, copy, vlen);
		free(copy);
	}
	return 0;
}

/* Checks an owner's drop and applies it here: 0, or a negative code. */
static int apply_drop(struct store *s, const uint8_t id[HASH], const uint8_t owner[HASH],
		      const uint8_t nonce[NONCE_LEN], const uint8_t sig[WEFT_SIGNATURE_LEN])
{
	uint8_t msg[WEFT_STORE_DROP_MSG_LEN], key[1 + HASH], tag[HASH];
	weft_store_drop_message(msg, id, owner, nonce);
	if (weft_verify(owner, sig, msg, sizeof(msg)) != 0)
		return WEFT_ECRYPTO;
	const void *val;
	size_t vlen;
	if (s->env->ops->kv_get(s->env, key, rec_key(key, 'M', id), &val, &vlen) == 0) {
		uint8_t mid[HASH], mowner[HASH];
		if (weft_manifest_verify(mid, mowner, val, vlen, NULL) == 0 && memcmp(mowner, owner, HASH) != 0)
			return WEFT_EPERM; /* not this owner's file */
		s->env->ops->kv_del(s->env, key, 1 + HASH);
	}
	weft_store_tag(tag, owner, nonce);
	int rc = s->shares->unref(s->shares->ctx, tag);
	if (rc == WEFT_NOTFOUND)
		rc = 0;
	if (rc == 0)
		store_metric(s, &s->c.drops, "store.drops");
	return rc;
}

static int read_drop(struct weft_mp_reader *r, uint8_t id[HASH], uint8_t owner[HASH], uint8_t nonce[NONCE_LEN],
		     uint8_t sig[WEFT_SIGNATURE_LEN])
{
	if (weft_mp_read_bin_fixed(r, id, HASH) != 0 || weft_mp_read_bin_fixed(r, owner, HASH) != 0 ||
	    weft_mp_read_bin_fixed(r, nonce, NONCE_LEN) != 0 || weft_mp_read_bin_fixed(r, sig, WEFT_SIGNATURE_LEN) != 0)
		return WEFT_EDECODE;
	return 0;
}

static int on_drop(struct store *s, struct weft_mp_reader *r)
{
	uint8_t id[HASH], owner[HASH], nonce[NONCE_LEN], sig[WEFT_SIGNATURE_LEN];
	int rc = read_drop(r, id, owner, nonce, sig);
	return rc ? rc : apply_drop(s, id, owner, nonce, sig);
}

/* ---- the protocol ---- */

static int store_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	struct store *s = state;
	s->env = env;
	if (env->n > WEFT_STORE_MAX_N)
		return WEFT_EINVAL;
	s->shares = env->ops->service ? env->ops->service(env, WEFT_SHARE_SERVICE) : NULL;
	if (s->shares == NULL) {
		weft_env_log(env, WEFT_LOG_ERROR, "store.init", "the host gives no share store");
		return WEFT_EUNSUPPORTED;
	}
	uint64_t v;
	s->default_k = env->f + 1;
	if (weft_params_uint(params, plen, "store_k", &v) == 0) {
		if (v < 1 || v > env->n)
			return WEFT_EINVAL;
		s->default_k = (uint32_t)v;
	}
	s->need = env->n - env->f;
	if (weft_params_uint(params, plen, "store_ack", &v) == 0) {
		if (v < 1 || v > env->n)
			return WEFT_EINVAL;
		s->need = (uint32_t)v;
	}
	s->audit_every_us = 0;
	if (weft_params_uint(params, plen, "store_audit_ms", &v) == 0)
		s->audit_every_us = v * 1000;
	s->audit_grace_us = 10000000;
	if (weft_params_uint(params, plen, "store_audit_grace_ms", &v) == 0)
		s->audit_grace_us = v * 1000;
	s->timeout_us = 1000000;
	if (weft_params_uint(params, plen, "store_timeout_ms", &v) == 0 && v > 0)
		s->timeout_us = v * 1000;
	/* A broken variant for the simulator's checkers to catch (never in a
	 * real committee): shares are decoded without checking their roots. */
	s->unsafe_trust_shares = weft_params_str_is(params, plen, "store_unsafe", "trust_shares");
	weft_mpw_init(&s->out);
	return 0;
}

static int store_start(void *state)
{
	struct store *s = state;
	if (s->audit_every_us)
		s->env->ops->set_timer(s->env, 2, s->audit_every_us);
	return 0;
}

static int store_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct store *s = state;
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, msg, len);
	uint32_t cnt;
	uint64_t ver, type;
	if (weft_mp_read_array(&r, &cnt) != 0 || cnt < 3 || weft_mp_read_uint(&r, &ver) != 0 ||
	    weft_mp_read_uint(&r, &type) != 0) {
		refuse_from(s, from);
		return WEFT_EDECODE;
	}
	if (ver != WEFT_STORE_PROTO_VERSION) {
		refuse_from(s, from);
		return WEFT_EUNSUPPORTED;
	}
	int rc;
	switch ((enum store_msg)type) {
	case MSG_PUT: rc = cnt == 6 ? on_put(s, from, &r) : WEFT_EDECODE; break;
	case MSG_ACK: rc = cnt == 6 ? on_ack(s, from, &r) : WEFT_EDECODE; break;
	case MSG_GET: rc = cnt == 4 ? on_get(s, from, &r) : WEFT_EDECODE; break;
	case MSG_SHARE: rc = cnt == 6 ? on_share(s, from, &r, true) : WEFT_EDECODE; break;
	case MSG_NOSHARE: rc = cnt == 4 ? on_share(s, from, &r, false) : WEFT_EDECODE; break;
	case MSG_CHAL: rc = cnt == 5 ? store_on_chal(s, from, &r) : WEFT_EDECODE; break;
	case MSG_PROOF: rc = cnt == 10 ? store_on_proof(s, from, &r, msg, len) : WEFT_EDECODE; break;
	case MSG_NOPROOF: rc = cnt == 6 ? store_on_noproof(s, from, &r) : WEFT_EDECODE; break;
	case MSG_MPUT:
	case MSG_MAN: rc = cnt == 3 ? on_manifest(s, from, &r) : WEFT_EDECODE; break;
	case MSG_MGET: rc = cnt == 3 ? on_mget(s, from, &r) : WEFT_EDECODE; break;
	case MSG_DROP: rc = cnt == 6 ? on_drop(s, &r) : WEFT_EDECODE; break;
	default: rc = WEFT_EPROTO; break;
	}
	if (rc < 0)
		refuse_from(s, from);
	return rc;
}

static void store_on_timer(void *state, uint64_t id)
{
	struct store *s = state;
	uint64_t now = weft_env_now(s->env);
	if (id == 2) {
		store_audit_now(s, 1, true);
		uint64_t jitter;
		s->env->ops->random(s->env, &jitter, sizeof(jitter));
		/* Uniform in [0.5, 1.5) of the period: no node can predict the next. */
		s->env->ops->set_timer(s->env, 2, s->audit_every_us / 2 + jitter % (s->audit_every_us + 1));
		return;
	}
	s->tick_armed = false;
	resend_places(s, now);
	fetch_timeouts(s, now);
	store_audit_tick(s, now);
	store_sweep_tick(s);
	bool busy = s->sweeping; /* (finished entries count too: they are forgotten here) */
	for (int i = 0; i < MAX_PLACES && !busy; i++)
		busy = s->place[i].used;
	for (int i = 0; i < MAX_FETCHES && !busy; i++)
		busy = s->fetch[i].used;
	for (int i = 0; i < MAX_CHALS && !busy; i++)
		busy = s->chal[i].used;
	if (busy)
		store_arm_tick(s);
}

/* ---- commands ---- */

static int cmd_place(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint32_t cnt, k, blen;
	uint8_t tag[HASH], cid[HASH];
	const uint8_t *blob;
	if (weft_mp_read_array(r, &cnt) != 0 || cnt != 4 || weft_mp_read_bin_fixed(r, tag, HASH) != 0 ||
	    weft_mp_read_bin_fixed(r, cid, HASH) != 0 || weft_mp_read_u32(r, &k) != 0 ||
	    weft_mp_read_bin(r, &blob, &blen) != 0)
		return WEFT_EDECODE;
	if (k == 0)
		k = s->default_k;
	if (k > s->env->n || blen == 0 || weft_store_share_len(blen, k) > WEFT_STORE_SHARE_MAX)
		return WEFT_EINVAL;
	/* A chunk kept here before (dedup: another file, or this one put
	 * again) is placed all the same, in the coding it has: a record says
	 * neither that the placement finished nor that the holders still hold
	 * it for a live file (tla/README.md, StoreChunk, finding 1).  Holders
	 * that have the share only reference it under this file's tag. */
	struct record rec, have;
	bool kept = store_record_get(s, cid, &have) == 0 && have.bloblen == blen;
	memset(&rec, 0, sizeof(rec));
	memcpy(rec.tag, tag, HASH);
	rec.k = kept ? have.k : k;
	rec.n = s->env->n;
	rec.bloblen = blen;
	size_t L;
	uint8_t *shares = store_code(s, blob, cid, &rec, &L);
	struct place *p;
	int rc = store_start_place(s, cid, &rec, shares, L, false, kept, NULL, &p);
	if (rc != 0)
		return rc;
	rec = p->rec;
	uint8_t sr[HASH];
	shares_root(sr, &rec);
	weft_mpw_map(reply, 7);
	weft_mpw_str(reply, "deduplicated");
	weft_mpw_bool(reply, kept);
	weft_mpw_str(reply, "sr");
	weft_mpw_bin(reply, sr, HASH);
	weft_mpw_str(reply, "k");
	weft_mpw_uint(reply, rec.k);
	weft_mpw_str(reply, "n");
	weft_mpw_uint(reply, rec.n);
	weft_mpw_str(reply, "acked");
	weft_mpw_uint(reply, nodeset_count(&p->acked));
	weft_mpw_str(reply, "need");
	weft_mpw_uint(reply, s->need);
	weft_mpw_str(reply, "done");
	weft_mpw_bool(reply, p->done);
	if (p->done)
		place_free(p);
	return 0;
}

/* store.placed [cid, tag]: how the placement of cid for file tag stands.
 * WEFT_NOTFOUND when this node has none (forgotten, or lost in a restart:
 * place the chunk again). */
static int cmd_placed(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint8_t cid[HASH], tag[HASH];
	uint32_t cnt;
	if (weft_mp_read_array(r, &cnt) != 0 || cnt != 2 || weft_mp_read_bin_fixed(r, cid, HASH) != 0 ||
	    weft_mp_read_bin_fixed(r, tag, HASH) != 0)
		return WEFT_EDECODE;
	struct place *p = file_place_find(s, cid, tag);
	if (p == NULL)
		return WEFT_NOTFOUND;
	weft_mpw_map(reply, 4);
	weft_mpw_str(reply, "acked");
	weft_mpw_uint(reply, nodeset_count(&p->acked));
	weft_mpw_str(reply, "need");
	weft_mpw_uint(reply, s->need);
	weft_mpw_str(reply, "done");
	weft_mpw_bool(reply, p->done);
	weft_mpw_str(reply, "failed");
	weft_mpw_bool(reply, p->failed);
	if (p->done || p->failed)
		place_free(p);
	return 0;
}

static int cmd_fetch(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint32_t cnt, k;
	uint8_t cid[HASH], sr[HASH];
	uint64_t bloblen;
	if (weft_mp_read_array(r, &cnt) != 0 || cnt != 4 || weft_mp_read_bin_fixed(r, cid, HASH) != 0 ||
	    weft_mp_read_bin_fixed(r, sr, HASH) != 0 || weft_mp_read_u32(r, &k) != 0 ||
	    weft_mp_read_uint(r, &bloblen) != 0)
		return WEFT_EDECODE;
	if (k < 1 || k > s->env->n || bloblen == 0 || weft_store_share_len(bloblen, k) > WEFT_STORE_SHARE_MAX)
		return WEFT_EINVAL;
	struct fetch *f;
	int rc = store_start_fetch(s, cid, sr, NULL, k, bloblen, &f);
	if (rc != 0)
		return rc;
	weft_mpw_map(reply, 1);
	weft_mpw_str(reply, "started");
	weft_mpw_bool(reply, true);
	return 0;
}

static int cmd_fetched(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint8_t cid[HASH];
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0)
		return WEFT_EDECODE;
	struct fetch *f = fetch_find(s, cid, false);
	if (f == NULL)
		return WEFT_NOTFOUND;
	weft_mpw_map(reply, f->state == FETCH_PENDING ? 2 : 3);
	weft_mpw_str(reply, "state");
	weft_mpw_str(reply, f->state == FETCH_PENDING ? "pending" : f->state == FETCH_DONE ? "done" : "failed");
	weft_mpw_str(reply, "bad");
	uint32_t nbad = nodeset_count(&f->bad);
	weft_mpw_array(reply, nbad);
	for (uint32_t i = 0; i < f->rec.n; i++)
		if (nodeset_has(&f->bad, i))
			weft_mpw_uint(reply, i);
	if (f->state == FETCH_DONE) {
		weft_mpw_str(reply, "blob");
		weft_mpw_bin(reply, f->blob, f->rec.bloblen);
	} else if (f->state == FETCH_FAILED) {
		weft_mpw_str(reply, "why");
		weft_mpw_str(reply, f->why);
	}
	if (f->state != FETCH_PENDING)
		fetch_free(f);
	return 0;
}

static int cmd_manifest_put(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	const uint8_t *env;
	uint32_t len;
	uint8_t id[HASH];
	const char *why = "";
	int rc = manifest_keep(s, r, &env, &len, id, &why);
	if (rc != 0)
		return rc;
	send_manifest(s, -1, MSG_MPUT, env, len);
	weft_mpw_map(reply, 1);
	weft_mpw_str(reply, "id");
	weft_mpw_bin(reply, id, HASH);
	return 0;
}

static int cmd_manifest_get(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint8_t id[HASH], key[1 + HASH];
	if (weft_mp_read_bin_fixed(r, id, HASH) != 0)
		return WEFT_EDECODE;
	const void *val;
	size_t vlen;
	weft_mpw_map(reply, 1);
	if (s->env->ops->kv_get(s->env, key, rec_key(key, 'M', id), &val, &vlen) == 0) {
		weft_mpw_str(reply, "envelope");
		weft_mpw_bin(reply, val, vlen);
		return 0;
	}
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 3);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_MGET);
	weft_mpw_bin(w, id, HASH);
	weft_env_multicast(s->env, "store.mget", w->buf, w->len);
	weft_mpw_str(reply, "pending");
	weft_mpw_bool(reply, true);
	return 0;
}

static int cmd_drop(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint32_t cnt;
	uint8_t id[HASH], owner[HASH], nonce[NONCE_LEN], sig[WEFT_SIGNATURE_LEN];
	if (weft_mp_read_array(r, &cnt) != 0 || cnt != 4 || read_drop(r, id, owner, nonce, sig) != 0)
		return WEFT_EDECODE;
	int rc = apply_drop(s, id, owner, nonce, sig);
	if (rc != 0)
		return rc;
	struct weft_mpw *w = &s->out;
	weft_mpw_reset(w);
	weft_mpw_array(w, 6);
	weft_mpw_uint(w, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(w, MSG_DROP);
	weft_mpw_bin(w, id, HASH);
	weft_mpw_bin(w, owner, HASH);
	weft_mpw_bin(w, nonce, NONCE_LEN);
	weft_mpw_bin(w, sig, WEFT_SIGNATURE_LEN);
	weft_env_multicast(s->env, "store.drop", w->buf, w->len);
	weft_mpw_map(reply, 1);
	weft_mpw_str(reply, "dropped");
	weft_mpw_bool(reply, true);
	return 0;
}

static int cmd_audit(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	uint32_t count;
	if (weft_mp_read_u32(r, &count) != 0)
		return WEFT_EDECODE;
	int sent = store_audit_now(s, count, false);
	if (sent < 0)
		return sent;
	weft_mpw_map(reply, 1);
	weft_mpw_str(reply, "sent");
	weft_mpw_uint(reply, (uint64_t)sent);
	return 0;
}

static int cmd_repair(struct store *s, struct weft_mp_reader *r, struct weft_mpw *reply)
{
	weft_mpw_map(reply, 1);
	if (weft_mp_peek_nil(r)) {
		s->sweeping = true;
		memset(s->sweep_from, 0, HASH);
		store_arm_tick(s);
		weft_mpw_str(reply, "sweep");
		weft_mpw_bool(reply, true);
		return 0;
	}
	uint8_t cid[HASH];
	if (weft_mp_read_bin_fixed(r, cid, HASH) != 0)
		return WEFT_EDECODE;
	uint32_t challenged;
	int rc = store_repair_chunk(s, cid, &challenged);
	if (rc != 0)
		return rc;
	weft_mpw_str(reply, "challenged");
	weft_mpw_uint(reply, challenged);
	return 0;
}

static int store_command(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct store *s = state;
	static const struct {
		const char *name;
		int (*fn)(struct store *, struct weft_mp_reader *, struct weft_mpw *);
	} cmds[] = {
		{"store.place", cmd_place},
		{"store.placed", cmd_placed},
		{"store.fetch", cmd_fetch},
		{"store.fetched", cmd_fetched},
		{"store.manifest_put", cmd_manifest_put},
		{"store.manifest_get", cmd_manifest_get},
		{"store.drop", cmd_drop},
		{"store.audit", cmd_audit},
		{"store.repair", cmd_repair},
	};
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, arg, alen);
	if (strcmp(what, "store.evidence") == 0) {
		store_evidence_write(s, reply);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(what, cmds[i].name) == 0)
			return cmds[i].fn(s, &r, reply);
	return WEFT_NOTFOUND;
}

static void counter(struct weft_mpw *w, const char *name, uint64_t v)
{
	weft_mpw_str(w, name);
	weft_mpw_uint(w, v);
}

static void store_info(void *state, struct weft_mpw *w)
{
	struct store *s = state;
	const struct store_counters *c = &s->c;
	uint32_t placing = 0, fetching = 0, chals = 0;
	for (int i = 0; i < MAX_PLACES; i++)
		placing += s->place[i].used && !s->place[i].done && !s->place[i].failed;
	for (int i = 0; i < MAX_FETCHES; i++)
		fetching += s->fetch[i].used && s->fetch[i].state == FETCH_PENDING;
	for (int i = 0; i < MAX_CHALS; i++)
		chals += s->chal[i].used;
	weft_mpw_map(w, 9);
	counter(w, "k", s->default_k);
	counter(w, "ack", s->need);
	weft_mpw_str(w, "placement");
	weft_mpw_map(w, 6);
	counter(w, "in_flight", placing);
	counter(w, "placed", c->placed);
	counter(w, "failed", c->place_failed);
	counter(w, "shares_stored", c->puts_stored);
	counter(w, "shares_referenced", c->puts_referenced);
	counter(w, "refused", c->puts_refused);
	weft_mpw_str(w, "retrieval");
	weft_mpw_map(w, 4);
	counter(w, "in_flight", fetching);
	counter(w, "fetched", c->fetched);
	counter(w, "failed", c->fetch_failed);
	counter(w, "bad_shares", c->bad_shares);
	weft_mpw_str(w, "audits");
	weft_mpw_map(w, 9);
	counter(w, "every_ms", s->audit_every_us / 1000);
	counter(w, "in_flight", chals);
	counter(w, "sent", c->audits_sent);
	counter(w, "passed", c->audits_passed);
	counter(w, "failed", c->audits_failed);
	counter(w, "missing", c->audits_missing);
	counter(w, "timeouts", c->audits_timeout);
	counter(w, "proofs_given", c->proofs_given);
	counter(w, "evidence", c->evidence);
	weft_mpw_str(w, "repair");
	weft_mpw_map(w, 4);
	weft_mpw_str(w, "sweeping");
	weft_mpw_bool(w, s->sweeping);
	counter(w, "sent", c->repairs_sent);
	counter(w, "stored", c->repairs_stored);
	counter(w, "failed", c->rebuilds_failed);
	counter(w, "manifests", c->manifests_stored);
	counter(w, "drops", c->drops);
	weft_mpw_str(w, "peers");
	weft_mpw_array(w, s->env->n);
	for (uint32_t i = 0; i < s->env->n; i++) {
		weft_mpw_map(w, 2);
		counter(w, "bad", s->peer_bad[i]);
		counter(w, "timeouts", s->peer_timeouts[i]);
	}
}

static void store_destroy(void *state)
{
	struct store *s = state;
	for (int i = 0; i < MAX_PLACES; i++)
		place_free(&s->place[i]);
	for (int i = 0; i < MAX_FETCHES; i++)
		fetch_free(&s->fetch[i]);
	for (uint32_t k = 0; k <= WEFT_STORE_MAX_N; k++)
		weft_rs_free(&s->rs[k]);
	weft_mpw_free(&s->out);
}

#define STORE_OPS(NAME, INIT, SIZE)                                                                        \
	{                                                                                                   \
		.abi = WEFT_PROTO_ABI, .name = NAME, .state_size = SIZE, .init = INIT, .start = store_start,  \
		.on_message = store_on_message, .on_timer = store_on_timer, .command = store_command,         \
		.info = store_info, .destroy = store_destroy,                                                  \
	}

static const struct weft_proto_ops store_drop_ops = STORE_OPS("store/drop", store_adv_drop_init, sizeof(struct store_adv));
static const struct weft_proto_ops store_corrupt_ops =
	STORE_OPS("store/corrupt", store_adv_corrupt_init, sizeof(struct store_adv));
static const struct weft_proto_ops store_lie_ops = STORE_OPS("store/lie", store_adv_lie_init, sizeof(struct store_adv));

/* adversary.c explains them. */
static const struct weft_proto_strategy store_strategies[] = {
	{"drop", "acknowledges every share but keeps only 1000 - permille of a thousand (default keeps none)",
	 &store_drop_ops},
	{"corrupt", "serves permille of its shares (default all) with a flipped byte", &store_corrupt_ops},
	{"lie", "answers permille of the challenges (default all) with a wrong block, correctly signed",
	 &store_lie_ops},
	{NULL, NULL, NULL},
};

const struct weft_proto_ops weft_store_service = {
	.abi = WEFT_PROTO_ABI,
	.name = "store",
	.state_size = sizeof(struct store),
	.init = store_init,
	.start = store_start,
	.on_message = store_on_message,
	.on_timer = store_on_timer,
	.command = store_command,
	.info = store_info,
	.destroy = store_destroy,
	.strategies = store_strategies,
};
