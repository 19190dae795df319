/* chunkstore.c - the chunk store: shares by (CID, share index), reference
 * counts and an incremental GC queue, on weft's LMDB wrapper (see
 * include/weft/store.h for the contract and the invariants).
 *
 * Layout: eight named databases of one environment.  Integers are
 * big-endian so that keys sort by number.
 *   store.share  CID(32) share(2)      -> the share's bytes
 *   store.smeta  CID(32) share(2)      -> length(8) stored_ms(8) audited_ms(8) root(32)
 *   store.refs   file(32) CID(32)      -> (empty)
 *   store.cids   CID(32)               -> count(8) due_ms(8)   (due only when count is 0)
 *   store.files  file(32)              -> number of references(8)
 *   store.drops  file(32)              -> (empty): the file is being dropped
 *   store.gcq    due_ms(8) CID(32)     -> (empty)
 *   store.meta   "layout"              -> version(4);  "bytes" -> total share bytes(8)
 * Metadata lives apart from the bytes so that audits and iteration never
 * touch (or, on an audit time update, copy) the overflow pages of a
 * multi-MiB share.  Counts of shares, CIDs, references, files and queue
 * entries are LMDB's own entry counts; only the byte total is kept. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/kv.h"
#include "weft/log.h"
#include "weft/store.h"

#define CID_LEN WEFT_STORE_CID_LEN
#define FILE_LEN WEFT_STORE_FILE_LEN
#define ROOT_LEN WEFT_STORE_ROOT_LEN
#define SHARE_KEY_LEN (CID_LEN + 2)
#define REF_KEY_LEN (FILE_LEN + CID_LEN)
#define GCQ_KEY_LEN (8 + CID_LEN)
#define META_LEN (3 * 8 + ROOT_LEN)
#define CIDREC_LEN 16
#define LAYOUT_VERSION 1u

struct weft_store {
	struct weft_kv *kv;
	bool own_kv;
	weft_kv_dbi share, smeta, refs, cids, files, drops, gcq, meta;
	uint64_t gc_delay_ms;
	uint64_t (*now_ms)(void *arg);
	void *now_arg;
};

/* A CID's record: count references; when count is 0 it is queued at due. */
struct cidrec {
	uint64_t count;
	uint64_t due;
};

static const uint8_t empty_val[1];

static uint64_t real_now_ms(void *arg)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int corrupt(const char *what)
{
	weft_error("store.corrupt", "err=\"%s\"", what);
	return WEFT_ECORRUPT;
}

/* Commits a write transaction when rc is 0, else aborts it; returns the
 * outcome (a positive result such as WEFT_NOTFOUND passes through). */
static int end_txn(struct weft_kv_txn *txn, int rc)
{
	if (rc != 0) {
		weft_kv_abort(txn);
		return rc;
	}
	return weft_kv_commit(txn);
}

static void share_key(uint8_t key[SHARE_KEY_LEN], const uint8_t cid[CID_LEN], uint16_t share)
{
	memcpy(key, cid, CID_LEN);
	weft_be16_put(key + CID_LEN, share);
}

static void ref_key(uint8_t key[REF_KEY_LEN], const uint8_t file[FILE_LEN], const uint8_t cid[CID_LEN])
{
	memcpy(key, file, FILE_LEN);
	memcpy(key + FILE_LEN, cid, CID_LEN);
}

/* ---- records ---- */

static int meta_decode(const void *val, size_t vlen, struct weft_store_meta *m)
{
	const uint8_t *p = val;
	if (vlen != META_LEN)
		return corrupt("share metadata has the wrong size");
	m->length = weft_be64_get(p);
	m->stored_ms = weft_be64_get(p + 8);
	m->audited_ms = weft_be64_get(p + 16);
	memcpy(m->root, p + 24, ROOT_LEN);
	return 0;
}

static int meta_read(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t key[SHARE_KEY_LEN],
		     struct weft_store_meta *m)
{
	const void *v;
	size_t vl;
	int rc = weft_kv_get(txn, s->smeta, key, SHARE_KEY_LEN, &v, &vl);
	return rc != 0 ? rc : meta_decode(v, vl, m);
}

static int meta_write(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t key[SHARE_KEY_LEN],
		      const struct weft_store_meta *m)
{
	uint8_t v[META_LEN];
	weft_be64_put(v, m->length);
	weft_be64_put(v + 8, m->stored_ms);
	weft_be64_put(v + 16, m->audited_ms);
	memcpy(v + 24, m->root, ROOT_LEN);
	return weft_kv_put(txn, s->smeta, key, SHARE_KEY_LEN, v, sizeof(v));
}

static int u64_read(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen, uint64_t *out)
{
	const void *v;
	size_t vl;
	int rc = weft_kv_get(txn, dbi, key, klen, &v, &vl);
	if (rc != 0)
		return rc;
	if (vl != 8)
		return corrupt("counter has the wrong size");
	*out = weft_be64_get(v);
	return 0;
}

static int u64_write(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen, uint64_t val)
{
	uint8_t v[8];
	weft_be64_put(v, val);
	return weft_kv_put(txn, dbi, key, klen, v, sizeof(v));
}

/* Adds delta to the byte total. */
static int bytes_add(struct weft_store *s, struct weft_kv_txn *txn, int64_t delta)
{
	uint64_t total;
	int rc = u64_read(txn, s->meta, "bytes", 5, &total);
	if (rc == WEFT_NOTFOUND)
		return corrupt("byte total missing");
	if (rc != 0)
		return rc;
	if (delta < 0 && total < (uint64_t)-delta)
		return corrupt("byte total below zero");
	return u64_write(txn, s->meta, "bytes", 5, total + (uint64_t)delta);
}

static int cid_read(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[CID_LEN], struct cidrec *r)
{
	const void *v;
	size_t vl;
	int rc = weft_kv_get(txn, s->cids, cid, CID_LEN, &v, &vl);
	if (rc != 0)
		return rc;
	if (vl != CIDREC_LEN)
		return corrupt("CID record has the wrong size");
	r->count = weft_be64_get(v);
	r->due = weft_be64_get((const uint8_t *)v + 8);
	return 0;
}

static int cid_write(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[CID_LEN],
		     const struct cidrec *r)
{
	uint8_t v[CIDREC_LEN];
	weft_be64_put(v, r->count);
	weft_be64_put(v + 8, r->count == 0 ? r->due : 0);
	return weft_kv_put(txn, s->cids, cid, CID_LEN, v, sizeof(v));
}

static void gcq_key(uint8_t key[GCQ_KEY_LEN], uint64_t due, const uint8_t cid[CID_LEN])
{
	weft_be64_put(key, due);
	memcpy(key + 8, cid, CID_LEN);
}

/* Sets cid's count to 0 and queues it for GC. */
static int cid_enqueue(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[CID_LEN])
{
	struct cidrec r = {.count = 0, .due = s->now_ms(s->now_arg) + s->gc_delay_ms};
	uint8_t key[GCQ_KEY_LEN];
	gcq_key(key, r.due, cid);
	int rc = weft_kv_put(txn, s->gcq, key, sizeof(key), empty_val, 0);
	return rc != 0 ? rc : cid_write(s, txn, cid, &r);
}

/* One more reference to cid (taking it out of the GC queue). */
static int cid_take(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[CID_LEN])
{
	struct cidrec r = {0};
	int rc = cid_read(s, txn, cid, &r);
	if (rc < 0)
		return rc;
	if (rc == 0 && r.count == 0) {
		uint8_t key[GCQ_KEY_LEN];
		gcq_key(key, r.due, cid);
		rc = weft_kv_del(txn, s->gcq, key, sizeof(key));
		if (rc == WEFT_NOTFOUND)
			return corrupt("CID with count 0 is not in the GC queue");
		if (rc != 0)
			return rc;
	}
	r.count++;
	return cid_write(s, txn, cid, &r);
}

/* One reference less to cid (queueing it when none is left). */
static int cid_release(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[CID_LEN])
{
	struct cidrec r;
	int rc = cid_read(s, txn, cid, &r);
	if (rc == WEFT_NOTFOUND || (rc == 0 && r.count == 0))
		return corrupt("reference to a CID without a count");
	if (rc != 0)
		return rc;
	if (--r.count == 0)
		return cid_enqueue(s, txn, cid);
	return cid_write(s, txn, cid, &r);
}

/* Deletes the share at key and its metadata and takes it off the byte
 * total; *len gets its length. */
static int share_remove(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t key[SHARE_KEY_LEN],
			uint64_t *len)
{
	struct weft_store_meta m;
	int rc = meta_read(s, txn, key, &m);
	if (rc != 0)
		return rc;
	rc = weft_kv_del(txn, s->share, key, SHARE_KEY_LEN);
	if (rc == WEFT_NOTFOUND)
		return corrupt("share metadata without its bytes");
	if (rc == 0)
		rc = weft_kv_del(txn, s->smeta, key, SHARE_KEY_LEN);
	if (rc == 0)
		rc = bytes_add(s, txn, -(int64_t)m.length);
	*len = m.length;
	return rc;
}

/* ---- open / close ---- */

static int store_init(struct weft_store *s)
{
	const struct {
		const char *name;
		weft_kv_dbi *dbi;
	} dbs[] = {
		{"store.share", &s->share}, {"store.smeta", &s->smeta}, {"store.refs", &s->refs},
		{"store.cids", &s->cids},   {"store.files", &s->files}, {"store.drops", &s->drops},
		{"store.gcq", &s->gcq},     {"store.meta", &s->meta},
	};
	int rc = 0;
	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]) && rc == 0; i++)
		rc = weft_kv_db(s->kv, dbs[i].name, dbs[i].dbi);
	struct weft_kv_txn *txn;
	if (rc == 0)
		rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	const void *v;
	size_t vl;
	rc = weft_kv_get(txn, s->meta, "layout", 6, &v, &vl);
	if (rc == WEFT_NOTFOUND) {
		uint8_t ver[4];
		weft_be32_put(ver, LAYOUT_VERSION);
		rc = weft_kv_put(txn, s->meta, "layout", 6, ver, sizeof(ver));
		if (rc == 0)
			rc = u64_write(txn, s->meta, "bytes", 5, 0);
	} else if (rc == 0 && (vl != 4 || weft_be32_get(v) != LAYOUT_VERSION)) {
		weft_error("store.open", "err=\"unknown chunk store layout\"");
		rc = WEFT_EUNSUPPORTED;
	}
	return end_txn(txn, rc);
}

int weft_store_open(struct weft_store **out, struct weft_kv *kv, const struct weft_store_opts *opts)
{
	struct weft_store *s = calloc(1, sizeof(*s));
	if (s == NULL)
		abort();
	s->kv = kv;
	s->now_ms = real_now_ms;
	if (opts != NULL) {
		s->gc_delay_ms = opts->gc_delay_ms;
		if (opts->now_ms != NULL) {
			s->now_ms = opts->now_ms;
			s->now_arg = opts->now_arg;
		}
	}
	int rc = store_init(s);
	if (rc != 0) {
		free(s);
		s = NULL;
	}
	*out = s;
	return rc;
}

int weft_store_open_dir(struct weft_store **out, const char *dir, const struct weft_kv_opts *kvopts,
			const struct weft_store_opts *opts)
{
	struct weft_kv_opts ko = kvopts ? *kvopts : (struct weft_kv_opts){0};
	if (ko.map_size == 0)
		ko.map_size = WEFT_STORE_DEFAULT_MAP_SIZE;
	struct weft_kv *kv;
	*out = NULL;
	int rc = weft_kv_open(&kv, dir, &ko);
	if (rc != 0)
		return rc;
	rc = weft_store_open(out, kv, opts);
	if (rc != 0)
		weft_kv_close(kv);
	else
		(*out)->own_kv = true;
	return rc;
}

void weft_store_close(struct weft_store *s)
{
	if (s == NULL)
		return;
	if (s->own_kv)
		weft_kv_close(s->kv);
	free(s);
}

struct weft_kv *weft_store_kv(struct weft_store *s)
{
	return s->kv;
}

/* ---- shares ---- */

int weft_store_put(struct weft_store *s, const uint8_t cid[CID_LEN], uint16_t share, const void *data,
		   size_t len, const uint8_t root[ROOT_LEN], bool repair)
{
	if (len == 0)
		return WEFT_EINVAL;
	uint8_t key[SHARE_KEY_LEN];
	share_key(key, cid, share);
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	const void *old;
	size_t olen;
	struct weft_store_meta m;
	int64_t delta = (int64_t)len;
	rc = weft_kv_get(txn, s->share, key, sizeof(key), &old, &olen);
	if (rc == 0) {
		rc = meta_read(s, txn, key, &m);
		if (rc == WEFT_NOTFOUND)
			rc = corrupt("share without its metadata");
		if (rc == 0 && olen == len && memcmp(old, data, len) == 0 && memcmp(m.root, root, ROOT_LEN) == 0) {
			weft_kv_abort(txn); /* the same share again */
			return 0;
		}
		if (rc == 0 && !repair)
			rc = WEFT_EEXIST;
		delta -= (int64_t)olen;
	} else if (rc == WEFT_NOTFOUND) {
		struct cidrec r;
		rc = cid_read(s, txn, cid, &r);
		if (rc == WEFT_NOTFOUND)
			rc = cid_enqueue(s, txn, cid); /* nobody references it yet */
	}
	m = (struct weft_store_meta){.length = len, .stored_ms = s->now_ms(s->now_arg)};
	memcpy(m.root, root, ROOT_LEN);
	if (rc == 0)
		rc = weft_kv_put(txn, s->share, key, sizeof(key), data, len);
	if (rc == 0)
		rc = meta_write(s, txn, key, &m);
	if (rc == 0)
		rc = bytes_add(s, txn, delta);
	return end_txn(txn, rc);
}

int weft_store_del(struct weft_store *s, const uint8_t cid[CID_LEN], uint16_t share)
{
	uint8_t key[SHARE_KEY_LEN];
	share_key(key, cid, share);
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	uint64_t len;
	rc = share_remove(s, txn, key, &len);
	return end_txn(txn, rc);
}

int weft_store_get(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[CID_LEN], uint16_t share,
		   const void **data, size_t *len, struct weft_store_meta *meta)
{
	uint8_t key[SHARE_KEY_LEN];
	share_key(key, cid, share);
	int rc = weft_kv_get(txn, s->share, key, sizeof(key), data, len);
	if (rc == 0 && meta != NULL) {
		rc = meta_read(s, txn, key, meta);
		if (rc == WEFT_NOTFOUND)
			rc = corrupt("share without its metadata");
	}
	return rc;
}

int weft_store_has(struct weft_store *s, const uint8_t cid[CID_LEN], uint16_t share, struct weft_store_meta *meta)
{
	uint8_t key[SHARE_KEY_LEN];
	share_key(key, cid, share);
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, false, &txn);
	if (rc != 0)
		return rc;
	struct weft_store_meta m;
	rc = meta_read(s, txn, key, meta ? meta : &m);
	weft_kv_abort(txn);
	return rc;
}

int weft_store_copy(struct weft_store *s, const uint8_t cid[CID_LEN], uint16_t share, void **data, size_t *len)
{
	struct weft_kv_txn *txn;
	*data = NULL;
	int rc = weft_kv_begin(s->kv, false, &txn);
	if (rc != 0)
		return rc;
	const void *v;
	size_t vl;
	rc = weft_store_get(s, txn, cid, share, &v, &vl, NULL);
	if (rc == 0) {
		*data = malloc(vl);
		if (*data == NULL)
			abort();
		memcpy(*data, v, vl);
		*len = vl;
	}
	weft_kv_abort(txn);
	return rc;
}

int weft_store_audited(struct weft_store *s, const uint8_t cid[CID_LEN], uint16_t share, uint64_t when_ms)
{
	uint8_t key[SHARE_KEY_LEN];
	share_key(key, cid, share);
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	struct weft_store_meta m;
	rc = meta_read(s, txn, key, &m);
	if (rc == 0) {
		m.audited_ms = when_ms;
		rc = meta_write(s, txn, key, &m);
	}
	return end_txn(txn, rc);
}

struct shares_walk {
	weft_store_share_fn fn;
	void *arg;
};

static int shares_visit(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct shares_walk *w = arg;
	struct weft_store_meta m;
	if (klen != SHARE_KEY_LEN)
		return corrupt("share key has the wrong size");
	int rc = meta_decode(val, vlen, &m);
	return rc != 0 ? rc : w->fn(w->arg, key, weft_be16_get((const uint8_t *)key + CID_LEN), &m);
}

int weft_store_shares(struct weft_store *s, const uint8_t cid[CID_LEN], uint16_t share, weft_store_share_fn fn,
		      void *arg)
{
	uint8_t key[SHARE_KEY_LEN];
	if (cid != NULL)
		share_key(key, cid, share);
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, false, &txn);
	if (rc != 0)
		return rc;
	struct shares_walk w = {fn, arg};
	rc = weft_kv_scan(txn, s->smeta, key, cid ? sizeof(key) : 0, NULL, 0, 0, shares_visit, &w);
	weft_kv_abort(txn);
	return rc;
}

/* ---- references ---- */

int weft_store_ref(struct weft_store *s, const uint8_t file[FILE_LEN], const uint8_t (*cids)[CID_LEN], size_t n)
{
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	rc = weft_kv_get(txn, s->drops, file, FILE_LEN, NULL, NULL);
	if (rc == 0)
		rc = WEFT_ESTATE;
	else if (rc == WEFT_NOTFOUND)
		rc = 0;
	uint64_t nrefs = 0, added = 0;
	if (rc == 0) {
		rc = u64_read(txn, s->files, file, FILE_LEN, &nrefs);
		if (rc == WEFT_NOTFOUND)
			rc = 0;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint8_t key[REF_KEY_LEN];
		ref_key(key, file, cids[i]);
		rc = weft_kv_get(txn, s->refs, key, sizeof(key), NULL, NULL);
		if (rc == 0)
			continue; /* already referenced */
		if (rc == WEFT_NOTFOUND)
			rc = weft_kv_put(txn, s->refs, key, sizeof(key), empty_val, 0);
		if (rc == 0)
			rc = cid_take(s, txn, cids[i]);
		added++;
	}
	if (rc == 0 && added > 0)
		rc = u64_write(txn, s->files, file, FILE_LEN, nrefs + added);
	return end_txn(txn, rc);
}

int weft_store_unref(struct weft_store *s, const uint8_t file[FILE_LEN])
{
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	rc = weft_kv_get(txn, s->files, file, FILE_LEN, NULL, NULL);
	if (rc == 0)
		rc = weft_kv_put(txn, s->drops, file, FILE_LEN, empty_val, 0);
	return end_txn(txn, rc);
}

/* Removes references of the dropping file while fewer than max_refs
 * (0: no limit) have been removed in this step (*items); sets *done and
 * forgets the file when none is left. */
static int drop_refs(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t file[FILE_LEN],
		     uint64_t *items, size_t max_refs, bool *done)
{
	uint64_t nrefs;
	int rc = u64_read(txn, s->files, file, FILE_LEN, &nrefs);
	if (rc == WEFT_NOTFOUND)
		return corrupt("dropping file without a record");
	struct weft_kv_cursor *c;
	if (rc != 0 || (rc = weft_kv_cursor_open(txn, s->refs, &c)) != 0)
		return rc;
	const void *k;
	size_t kl;
	uint64_t dropped = 0;
	*done = false;
	for (rc = weft_kv_cursor_seek(c, file, FILE_LEN, &k, &kl, NULL, NULL);;
	     rc = weft_kv_cursor_next(c, &k, &kl, NULL, NULL)) {
		if (rc == 0 && kl != REF_KEY_LEN)
			rc = corrupt("reference key has the wrong size");
		if (rc == WEFT_NOTFOUND || (rc == 0 && memcmp(k, file, FILE_LEN) != 0)) {
			*done = true;
			rc = 0;
			break;
		}
		if (rc != 0 || (max_refs != 0 && *items >= max_refs))
			break;
		uint8_t cid[CID_LEN];
		memcpy(cid, (const uint8_t *)k + FILE_LEN, CID_LEN);
		if ((rc = weft_kv_cursor_del(c)) != 0 || (rc = cid_release(s, txn, cid)) != 0)
			break;
		dropped++;
		(*items)++;
	}
	weft_kv_cursor_close(c);
	if (rc != 0)
		return rc;
	if (*done ? dropped != nrefs : dropped >= nrefs)
		return corrupt("file's reference count differs from its references");
	if (!*done)
		return u64_write(txn, s->files, file, FILE_LEN, nrefs - dropped);
	rc = weft_kv_del(txn, s->files, file, FILE_LEN);
	if (rc == 0)
		rc = weft_kv_del(txn, s->drops, file, FILE_LEN);
	return rc;
}

int weft_store_unref_step(struct weft_store *s, size_t max_refs, struct weft_store_progress *prog)
{
	struct weft_store_progress p = {0};
	if (prog != NULL)
		*prog = p;
	struct weft_kv_txn *txn;
	struct weft_kv_cursor *c;
	int rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	if ((rc = weft_kv_cursor_open(txn, s->drops, &c)) != 0)
		return end_txn(txn, rc);
	for (;;) {
		const void *k;
		size_t kl;
		rc = weft_kv_cursor_seek(c, NULL, 0, &k, &kl, NULL, NULL);
		if (rc == 0 && kl != FILE_LEN)
			rc = corrupt("drop mark has the wrong size");
		if (rc != 0)
			break;
		uint8_t file[FILE_LEN];
		memcpy(file, k, FILE_LEN);
		bool done;
		if ((rc = drop_refs(s, txn, file, &p.items, max_refs, &done)) != 0)
			break;
		if (!done) {
			p.more = true;
			break;
		}
	}
	weft_kv_cursor_close(c);
	rc = end_txn(txn, rc == WEFT_NOTFOUND ? 0 : rc);
	if (rc == 0 && prog != NULL)
		*prog = p;
	return rc;
}

int weft_store_has_ref(struct weft_store *s, const uint8_t file[FILE_LEN], const uint8_t cid[CID_LEN])
{
	uint8_t key[REF_KEY_LEN];
	ref_key(key, file, cid);
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, false, &txn);
	if (rc != 0)
		return rc;
	rc = weft_kv_get(txn, s->refs, key, sizeof(key), NULL, NULL);
	weft_kv_abort(txn);
	return rc;
}

int weft_store_count(struct weft_store *s, const uint8_t cid[CID_LEN], uint64_t *count)
{
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, false, &txn);
	if (rc != 0)
		return rc;
	struct cidrec r;
	rc = cid_read(s, txn, cid, &r);
	if (rc == 0)
		*count = r.count;
	weft_kv_abort(txn);
	return rc;
}

/* ---- garbage collection ---- */

/* Frees every share of cid and its record; adds the shares' bytes to
 * *bytes. */
static int gc_free(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[CID_LEN], uint64_t *bytes)
{
	struct weft_kv_cursor *c;
	int rc = weft_kv_cursor_open(txn, s->smeta, &c);
	if (rc != 0)
		return rc;
	for (;;) {
		const void *k;
		size_t kl;
		rc = weft_kv_cursor_seek(c, cid, CID_LEN, &k, &kl, NULL, NULL);
		if (rc != 0 || kl != SHARE_KEY_LEN || memcmp(k, cid, CID_LEN) != 0)
			break;
		uint8_t key[SHARE_KEY_LEN];
		uint64_t len;
		memcpy(key, k, sizeof(key));
		if ((rc = share_remove(s, txn, key, &len)) != 0)
			break;
		*bytes += len;
	}
	weft_kv_cursor_close(c);
	if (rc != 0 && rc != WEFT_NOTFOUND)
		return rc;
	return weft_kv_del(txn, s->cids, cid, CID_LEN);
}

int weft_store_gc_step(struct weft_store *s, size_t max_items, uint64_t max_bytes, struct weft_store_progress *prog)
{
	struct weft_store_progress p = {0};
	if (prog != NULL)
		*prog = p;
	uint64_t now = s->now_ms(s->now_arg);
	struct weft_kv_txn *txn;
	struct weft_kv_cursor *c;
	int rc = weft_kv_begin(s->kv, true, &txn);
	if (rc != 0)
		return rc;
	if ((rc = weft_kv_cursor_open(txn, s->gcq, &c)) != 0)
		return end_txn(txn, rc);
	const void *k;
	size_t kl;
	for (rc = weft_kv_cursor_seek(c, NULL, 0, &k, &kl, NULL, NULL); rc == 0;
	     rc = weft_kv_cursor_next(c, &k, &kl, NULL, NULL)) {
		if (kl != GCQ_KEY_LEN) {
			rc = corrupt("GC queue key has the wrong size");
			break;
		}
		uint64_t due = weft_be64_get(k);
		if (due > now)
			break;
		if ((max_items != 0 && p.items >= max_items) || (max_bytes != 0 && p.bytes >= max_bytes)) {
			p.more = true;
			break;
		}
		uint8_t cid[CID_LEN];
		memcpy(cid, (const uint8_t *)k + 8, CID_LEN);
		struct cidrec r;
		rc = cid_read(s, txn, cid, &r);
		if (rc == WEFT_NOTFOUND || (rc == 0 && (r.count != 0 || r.due != due)))
			rc = corrupt("queued CID without a matching record");
		if (rc == 0)
			rc = weft_kv_cursor_del(c);
		if (rc == 0)
			rc = gc_free(s, txn, cid, &p.bytes);
		if (rc != 0)
			break;
		p.items++;
	}
	weft_kv_cursor_close(c);
	rc = end_txn(txn, rc == WEFT_NOTFOUND ? 0 : rc);
	if (rc == 0 && prog != NULL)
		*prog = p;
	return rc;
}

/* ---- stats ---- */

int weft_store_stats(struct weft_store *s, struct weft_store_stats *out)
{
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(s->kv, false, &txn);
	if (rc != 0)
		return rc;
	const struct {
		weft_kv_dbi dbi;
		uint64_t *out;
	} counts[] = {
		{s->smeta, &out->shares}, {s->cids, &out->cids},     {s->refs, &out->refs},
		{s->files, &out->files},  {s->drops, &out->dropping}, {s->gcq, &out->gc_queued},
	};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]) && rc == 0; i++) {
		size_t n = 0;
		rc = weft_kv_count(txn, counts[i].dbi, &n);
		*counts[i].out = n;
	}
	if (rc == 0)
		rc = u64_read(txn, s->meta, "bytes", 5, &out->bytes);
	if (rc == WEFT_NOTFOUND)
		rc = corrupt("byte total missing");
	weft_kv_abort(txn);
	return rc;
}
