/* storage.c - weftd's storage layer: what turns a file into a capability
 * and back, around the keyless storage service (protocols/store).
 *
 *   chunk store   DATADIR/chunks, an LMDB environment of its own
 *                 (weft/store.h), handed to the service as its share
 *                 store; its named databases "files" (the catalogue of
 *                 files put from this node) and "journal" (puts under way)
 *                 live beside the shares.
 *   keys          the owner is the node: manifests are signed with its
 *                 identity, and the key tree's root secret is derived
 *                 from the identity's seed (backing up identity.key backs
 *                 up every storage key).
 *   jobs          a put reads the file twice: a chunking pass (cut points
 *                 fix the chunk count, which fixes the key tree), then
 *                 chunk by chunk: seal, store.place, poll store.placed,
 *                 journal the chunk.  Then the manifest is sealed, placed
 *                 on every node and catalogued.  A put of the same file
 *                 (path, size, mtime, options) after a crash finds the
 *                 journal, takes its nonce and skips the chunks placed.
 *                 A get opens the manifest with the capability, fetches
 *                 the chunks of the range (store.fetch / store.fetched),
 *                 decrypts and writes OUT.weft-part, renamed to OUT at the
 *                 end.  A job works in slices of at most SLICE_US on the
 *                 event loop, so peers and other clients are served
 *                 between slices.
 *   GC            every GC_PERIOD_MS: unref and gc steps, bounded.
 *
 * Every store.* method is here; docs/rpc.md lists them. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "node.h"
#include "storage.h"
#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/log.h"
#include "weft/store.h"
#include "weft/store_cdc.h"
#include "weft/store_chunk.h"
#include "weft/store_keys.h"
#include "weft/store_manifest.h"
#include "weft/store_proto.h"
#include "weft/util.h"

#define SLICE_US 20000
#define WINDOW 8               /* chunks in flight per job */
#define POLL_US 2000           /* when waiting on peers */
#define READ_PIECE ((size_t)8 << 20)
#define MANIFEST_WAIT_US 10000000
#define GC_PERIOD_MS 5000
#define ROOT_VERSION 1
#define PROGRESS_US 200000

struct weft_storage {
	struct weft_node *node;
	struct weft_store *store;
	weft_kv_dbi files_db, journal_db;
	struct weft_share_service svc;
	bool stepping;            /* inside a host step (svc_begin_step) */
	struct weft_key *root;
	struct event *gc_ev;
	struct job *jobs;
	uint64_t next_job;
};

/* ---- the share service over the chunk store ----
 * Inside a host step every call joins one group transaction of the chunk
 * store (begun by the first call), committed once in end_step, before the
 * step's kv commit and messages: one fsync per step, not per call. */

static struct weft_store *in_step(void *ctx)
{
	struct weft_storage *st = ctx;
	struct weft_kv *kv = weft_store_kv(st->store);
	if (st->stepping && !weft_kv_in_group(kv))
		weft_kv_group_begin(kv); /* on failure each call commits alone */
	return st->store;
}

static void svc_begin_step(void *ctx)
{
	((struct weft_storage *)ctx)->stepping = true;
}

static int svc_end_step(void *ctx, bool commit)
{
	struct weft_storage *st = ctx;
	st->stepping = false;
	return weft_kv_group_end(weft_store_kv(st->store), commit);
}

static int svc_put(void *ctx, const uint8_t cid[32], uint16_t share, const void *data, size_t len,
		   const uint8_t root[32], bool repair)
{
	return weft_store_put(in_step(ctx), cid, share, data, len, root, repair);
}

static int svc_copy(void *ctx, const uint8_t cid[32], uint16_t share, void **data, size_t *len)
{
	return weft_store_copy(in_step(ctx), cid, share, data, len);
}

static int svc_has(void *ctx, const uint8_t cid[32], uint16_t share, struct weft_share_meta *meta)
{
	struct weft_store_meta m;
	int rc = weft_store_has(in_step(ctx), cid, share, &m);
	if (rc == 0 && meta) {
		meta->length = m.length;
		meta->stored_ms = m.stored_ms;
		meta->audited_ms = m.audited_ms;
		memcpy(meta->root, m.root, sizeof(meta->root));
	}
	return rc;
}

static int svc_del(void *ctx, const uint8_t cid[32], uint16_t share)
{
	return weft_store_del(in_step(ctx), cid, share);
}

static int svc_ref(void *ctx, const uint8_t file[32], const uint8_t (*cids)[32], size_t n)
{
	return weft_store_ref(in_step(ctx), file, cids, n);
}

static int svc_unref(void *ctx, const uint8_t file[32])
{
	return weft_store_unref(in_step(ctx), file);
}

/* ---- clocks, keys ---- */

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The file key of a file put here. */
static struct weft_key *file_key(const struct weft_storage *st, uint32_t version, const uint8_t nonce[16])
{
	struct weft_key *k = weft_key_new();
	weft_key_file(k, st->root, version, nonce);
	return k;
}

/* ---- commands to the service ---- */

/* Runs a service command; the reply's map in *reply (initialised by the
 * caller).  0 or the command's error. */
static int command(struct weft_storage *st, const char *what, const struct weft_mpw *arg, struct weft_mpw *reply)
{
	weft_mpw_reset(reply);
	return weft_host_command(st->node->host, what, arg->buf, arg->len, reply);
}

static bool reply_bool(const struct weft_mpw *r, const char *key)
{
	const uint8_t *v;
	size_t vlen;
	if (weft_params_value(r->buf, r->len, key, &v, &vlen) != 0)
		return false;
	struct weft_mp_reader rd;
	weft_mp_reader_init(&rd, v, vlen);
	bool b = false;
	return weft_mp_read_bool(&rd, &b) == 0 && b;
}

static int reply_bin(const struct weft_mpw *r, const char *key, const uint8_t **b, uint32_t *len)
{
	const uint8_t *v;
	size_t vlen;
	int rc = weft_params_value(r->buf, r->len, key, &v, &vlen);
	if (rc != 0)
		return rc;
	struct weft_mp_reader rd;
	weft_mp_reader_init(&rd, v, vlen);
	return weft_mp_read_bin(&rd, b, len);
}

/* The "id" field of a reply: the file id in hex. */
static void write_id(struct weft_mpw *w, const uint8_t id[32])
{
	char hex[65];
	weft_hex_encode(hex, id, 32);
	weft_mpw_str(w, "id");
	weft_mpw_str(w, hex);
}

/* ---- jobs ---- */

enum job_kind { JOB_PUT, JOB_GET, JOB_REPAIR };
/* CH_FLIGHT_KEPT: a put's chunk in flight that the service had kept
 * before (another file's, or this one's put before): deduplicated. */
enum chunk_state { CH_TODO, CH_FLIGHT, CH_DONE, CH_FLIGHT_KEPT };

struct job {
	struct job *link;         /* the storage's list of jobs */
	struct weft_storage *st;
	enum job_kind kind;
	struct weft_rpc_call *call;
	struct event *ev;
	bool progress;
	char topic[40];
	uint64_t started_us, last_note_us, wait_since_us;
	int fd;
	char *path;               /* put: the file; get: OUT */
	char *part;               /* get: OUT.weft-part */
	uint64_t total, done_bytes;
	/* the file */
	struct weft_manifest m;   /* put: built here; get: opened */
	uint8_t *state;           /* per chunk: enum chunk_state */
	uint64_t *offset;         /* per chunk: plaintext offset */
	uint32_t next, inflight, ndone;
	/* put */
	struct stat sb;
	uint8_t jkey[32];
	uint8_t tag[32];
	struct weft_key *fkey, *conv;
	struct weft_key *leaf, *content; /* per-chunk keys, reused (sodium_malloc is a few syscalls) */
	struct weft_cdc *cdc;
	struct weft_cdc_state cdcs;
	uint64_t scanned;
	uint32_t *sizes;
	uint32_t nsizes, capsizes;
	char *name;
	uint32_t k;
	uint64_t fresh, deduped, resumed;
	bool chunking;
	/* get */
	struct weft_grant *grant;
	uint8_t want_id[32];
	uint64_t a, b;            /* bytes [a, b) written */
	bool have_manifest;
	uint64_t bad_shares;
	/* scratch */
	uint8_t *buf, *blob;
	struct weft_mpw arg, reply;
	struct weft_mpw batch_args[WINDOW], batch_replies[WINDOW]; /* put: one step's chunks */
};

static void job_schedule(struct job *j, uint64_t delay_us)
{
	struct timeval tv = {(time_t)(delay_us / 1000000), (suseconds_t)(delay_us % 1000000)};
	evtimer_add(j->ev, &tv);
}

static void job_free(struct job *j)
{
	struct weft_storage *st = j->st;
	for (struct job **p = &st->jobs; *p; p = &(*p)->link)
		if (*p == j) {
			*p = j->link;
			break;
		}
	if (j->ev)
		event_free(j->ev);
	if (j->fd >= 0)
		close(j->fd);
	if (j->part) {
		unlink(j->part);
		free(j->part);
	}
	free(j->path);
	free(j->name);
	weft_manifest_free(&j->m);
	free(j->state);
	free(j->offset);
	free(j->sizes);
	weft_key_free(j->fkey);
	weft_key_free(j->conv);
	weft_key_free(j->leaf);
	weft_key_free(j->content);
	weft_cdc_free(j->cdc);
	weft_grant_free(j->grant);
	free(j->buf);
	free(j->blob);
	weft_mpw_free(&j->arg);
	weft_mpw_free(&j->reply);
	for (int i = 0; i < WINDOW; i++) {
		weft_mpw_free(&j->batch_args[i]);
		weft_mpw_free(&j->batch_replies[i]);
	}
	free(j);
}

static void job_fail(struct job *j, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void job_fail(struct job *j, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	weft_warn("store.job_failed", "kind=%d why=\"%s\"", (int)j->kind, msg);
	weft_rpc_finish_fail(j->call, code, "%s", msg);
	job_free(j);
}

static void note_progress(struct job *j, bool last)
{
	uint64_t now = mono_us();
	if (!j->progress || (!last && now - j->last_note_us < PROGRESS_US))
		return;
	j->last_note_us = now;
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 1);
	weft_mpw_map(&w, 5);
	weft_mpw_str(&w, "op");
	weft_mpw_str(&w, j->kind == JOB_PUT ? "put" : j->kind == JOB_GET ? "get" : "repair");
	weft_mpw_str(&w, "bytes");
	weft_mpw_uint(&w, j->done_bytes);
	weft_mpw_str(&w, "total");
	weft_mpw_uint(&w, j->total);
	weft_mpw_str(&w, "chunks");
	weft_mpw_uint(&w, j->ndone);
	weft_mpw_str(&w, "chunks_total");
	weft_mpw_uint(&w, j->m.nchunks);
	weft_rpc_notify(j->st->node->rpc, j->topic, "store.progress", w.buf, w.len);
	weft_mpw_free(&w);
}

static void job_run(evutil_socket_t fd, short what, void *arg);

static struct job *job_new(struct weft_storage *st, struct weft_rpc_call *call, enum job_kind kind, bool progress)
{
	struct job *j = weft_xcalloc(1, sizeof(*j));
	j->st = st;
	j->kind = kind;
	j->call = call;
	j->fd = -1;
	j->progress = progress;
	j->started_us = mono_us();
	snprintf(j->topic, sizeof(j->topic), "store.progress.%llu", (unsigned long long)++st->next_job);
	j->leaf = weft_key_new();
	j->content = weft_key_new();
	j->ev = evtimer_new(st->node->base, job_run, j);
	if (j->ev == NULL)
		abort();
	weft_mpw_init(&j->arg);
	weft_mpw_init(&j->reply);
	for (int i = 0; i < WINDOW; i++) {
		weft_mpw_init(&j->batch_args[i]);
		weft_mpw_init(&j->batch_replies[i]);
	}
	j->link = st->jobs;
	st->jobs = j;
	if (progress)
		weft_rpc_subscribe(call, j->topic);
	return j;
}

/* ---- the catalogue and the journal ---- */

/* Files put here: id -> [name, size, chunks, mode, k, created_ms, nonce, version]. */
static int catalogue_put(struct weft_storage *st, const struct job *j)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 8);
	weft_mpw_str(&w, j->name ? j->name : "");
	weft_mpw_uint(&w, j->m.size);
	weft_mpw_uint(&w, j->m.nchunks);
	weft_mpw_uint(&w, j->m.mode);
	weft_mpw_uint(&w, j->m.ec_k);
	weft_mpw_uint(&w, wall_ms());
	weft_mpw_bin(&w, j->m.file.nonce, WEFT_FILE_NONCE_LEN);
	weft_mpw_uint(&w, j->m.file.root_version);
	struct weft_kv_txn *txn;
	weft_host_flush(st->node->host); /* a write of its own: not inside a group of host steps */
	int rc = weft_kv_begin(weft_store_kv(st->store), true, &txn);
	if (rc == 0) {
		rc = weft_kv_put(txn, st->files_db, j->m.file.id, 32, w.buf, w.len);
		rc = rc == 0 ? weft_kv_commit(txn) : (weft_kv_abort(txn), rc);
	}
	weft_mpw_free(&w);
	return rc;
}

struct entry {
	char name[256];
	uint64_t size, created_ms;
	uint32_t chunks, mode, k, version;
	uint8_t nonce[WEFT_FILE_NONCE_LEN];
};

static int entry_decode(const void *val, size_t vlen, struct entry *e)
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, val, vlen);
	uint32_t cnt, nlen;
	const char *name;
	if (weft_mp_read_array(&r, &cnt) != 0 || cnt != 8 || weft_mp_read_str(&r, &name, &nlen) != 0 ||
	    weft_mp_read_uint(&r, &e->size) != 0 || weft_mp_read_u32(&r, &e->chunks) != 0 ||
	    weft_mp_read_u32(&r, &e->mode) != 0 || weft_mp_read_u32(&r, &e->k) != 0 ||
	    weft_mp_read_uint(&r, &e->created_ms) != 0 ||
	    weft_mp_read_bin_fixed(&r, e->nonce, WEFT_FILE_NONCE_LEN) != 0 || weft_mp_read_u32(&r, &e->version) != 0)
		return WEFT_ECORRUPT;
	size_t n = nlen < sizeof(e->name) - 1 ? nlen : sizeof(e->name) - 1;
	memcpy(e->name, name, n);
	e->name[n] = '\0';
	return 0;
}

static int catalogue_get(struct weft_storage *st, const uint8_t id[32], struct entry *e)
{
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(weft_store_kv(st->store), false, &txn);
	if (rc != 0)
		return rc;
	const void *val;
	size_t vlen;
	rc = weft_kv_get(txn, st->files_db, id, 32, &val, &vlen);
	if (rc == 0)
		rc = entry_decode(val, vlen, e);
	weft_kv_abort(txn);
	return rc;
}

static int catalogue_del(struct weft_storage *st, const uint8_t id[32])
{
	struct weft_kv_txn *txn;
	weft_host_flush(st->node->host); /* a write of its own: not inside a group of host steps */
	int rc = weft_kv_begin(weft_store_kv(st->store), true, &txn);
	if (rc == 0) {
		rc = weft_kv_del(txn, st->files_db, id, 32);
		rc = rc == 0 || rc == WEFT_NOTFOUND ? weft_kv_commit(txn) : (weft_kv_abort(txn), rc);
	}
	return rc;
}

/* Journal: jkey -> [nonce, nchunks]; jkey || be32(i) -> [cid, sr, wrapped, cipher]. */
static int journal_write(struct weft_storage *st, const void *key, size_t klen, const struct weft_mpw *val)
{
	struct weft_kv_txn *txn;
	weft_host_flush(st->node->host); /* a write of its own: not inside a group of host steps */
	int rc = weft_kv_begin(weft_store_kv(st->store), true, &txn);
	if (rc == 0) {
		rc = weft_kv_put(txn, st->journal_db, key, klen, val->buf, val->len);
		rc = rc == 0 ? weft_kv_commit(txn) : (weft_kv_abort(txn), rc);
	}
	return rc;
}

struct journal_drop {
	struct weft_kv_txn *txn;
	weft_kv_dbi db;
};

static int journal_drop_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct journal_drop *d = arg;
	(void)val, (void)vlen;
	return weft_kv_del(d->txn, d->db, key, klen) == 0 ? 0 : -1;
}

static void journal_forget(struct weft_storage *st, const uint8_t jkey[32])
{
	struct weft_kv_txn *txn;
	weft_host_flush(st->node->host); /* a write of its own: not inside a group of host steps */
	if (weft_kv_begin(weft_store_kv(st->store), true, &txn) != 0)
		return;
	uint8_t to[32];
	memcpy(to, jkey, 32);
	int b = 31;
	while (b >= 0 && ++to[b] == 0)
		b--;
	struct journal_drop d = {txn, st->journal_db};
	if (weft_kv_scan(txn, st->journal_db, jkey, 32, b >= 0 ? to : NULL, b >= 0 ? 32 : 0, 0, journal_drop_one, &d) == 0)
		weft_kv_commit(txn);
	else
		weft_kv_abort(txn);
}

/* Loads the journal of a put that was interrupted: its nonce, and every
 * chunk it placed.  True when there is one for this many chunks. */
static bool journal_resume(struct job *j)
{
	struct weft_storage *st = j->st;
	struct weft_kv_txn *txn;
	if (weft_kv_begin(weft_store_kv(st->store), false, &txn) != 0)
		return false;
	const void *val;
	size_t vlen;
	bool found = false;
	if (weft_kv_get(txn, st->journal_db, j->jkey, 32, &val, &vlen) == 0) {
		struct weft_mp_reader r;
		weft_mp_reader_init(&r, val, vlen);
		uint32_t cnt, n;
		uint8_t nonce[WEFT_FILE_NONCE_LEN];
		found = weft_mp_read_array(&r, &cnt) == 0 && cnt == 2 &&
			weft_mp_read_bin_fixed(&r, nonce, sizeof(nonce)) == 0 && weft_mp_read_u32(&r, &n) == 0 &&
			n == j->m.nchunks;
		if (found)
			memcpy(j->m.file.nonce, nonce, sizeof(nonce));
	}
	for (uint32_t i = 0; found && i < j->m.nchunks; i++) {
		uint8_t key[36];
		memcpy(key, j->jkey, 32);
		weft_be32_put(key + 32, i);
		if (weft_kv_get(txn, st->journal_db, key, sizeof(key), &val, &vlen) != 0)
			continue;
		struct weft_mp_reader r;
		weft_mp_reader_init(&r, val, vlen);
		uint32_t cnt, cipher;
		if (weft_mp_read_array(&r, &cnt) == 0 && cnt == 4 && weft_mp_read_bin_fixed(&r, j->m.cid[i], 32) == 0 &&
		    weft_mp_read_bin_fixed(&r, j->m.sr[i], 32) == 0 &&
		    weft_mp_read_bin_fixed(&r, j->m.wrapped[i], WEFT_CHUNK_WRAPPED_LEN) == 0 &&
		    weft_mp_read_u32(&r, &cipher) == 0 && cipher == j->m.plain[i] + WEFT_CHUNK_OVERHEAD) {
			j->m.cipher[i] = cipher;
			j->state[i] = CH_DONE;
			j->ndone++;
			j->resumed++;
			j->done_bytes += j->m.plain[i];
		}
	}
	weft_kv_abort(txn);
	return found;
}

static int journal_start(struct job *j)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 2);
	weft_mpw_bin(&w, j->m.file.nonce, WEFT_FILE_NONCE_LEN);
	weft_mpw_uint(&w, j->m.nchunks);
	int rc = journal_write(j->st, j->jkey, 32, &w);
	weft_mpw_free(&w);
	return rc;
}

/* Journals the chunks done[0..n) in one transaction. */
static int journal_chunks(struct job *j, const uint32_t *done, size_t n)
{
	if (n == 0)
		return 0;
	struct weft_kv_txn *txn;
	weft_host_flush(j->st->node->host);
	int rc = weft_kv_begin(weft_store_kv(j->st->store), true, &txn);
	if (rc != 0)
		return rc;
	struct weft_mpw w;
	weft_mpw_init(&w);
	for (size_t k = 0; k < n && rc == 0; k++) {
		uint32_t i = done[k];
		uint8_t key[36];
		memcpy(key, j->jkey, 32);
		weft_be32_put(key + 32, i);
		weft_mpw_reset(&w);
		weft_mpw_array(&w, 4);
		weft_mpw_bin(&w, j->m.cid[i], 32);
		weft_mpw_bin(&w, j->m.sr[i], 32);
		weft_mpw_bin(&w, j->m.wrapped[i], WEFT_CHUNK_WRAPPED_LEN);
		weft_mpw_uint(&w, j->m.cipher[i]);
		rc = weft_kv_put(txn, j->st->journal_db, key, sizeof(key), w.buf, w.len);
	}
	weft_mpw_free(&w);
	return rc == 0 ? weft_kv_commit(txn) : (weft_kv_abort(txn), rc);
}

/* ---- put ---- */

static int put_begin_sealing(struct job *j)
{
	struct weft_storage *st = j->st;
	uint32_t n = j->nsizes;
	struct weft_manifest *m = &j->m;
	struct weft_cdc_params cp;
	weft_cdc_params(j->cdc, &cp);
	uint32_t mode = m->mode;
	weft_manifest_init(m, n);
	m->mode = (enum weft_chunk_mode)mode;
	m->size = j->total;
	m->chunking = cp;
	m->ec_k = j->k;
	m->ec_n = st->node->committee_n;
	m->file.root_version = ROOT_VERSION;
	memcpy(m->file.owner, st->node->id->pk, WEFT_PK_LEN);
	j->state = weft_xcalloc(n ? n : 1, 1);
	j->offset = weft_xcalloc(n ? n : 1, sizeof(*j->offset));
	uint64_t off = 0;
	for (uint32_t i = 0; i < n; i++) {
		m->plain[i] = j->sizes[i];
		j->offset[i] = off;
		off += j->sizes[i];
	}
	if (!journal_resume(j)) {
		randombytes_buf(m->file.nonce, WEFT_FILE_NONCE_LEN);
		int rc = journal_start(j);
		if (rc != 0)
			return rc;
	}
	j->fkey = file_key(st, ROOT_VERSION, m->file.nonce);
	weft_store_tag(j->tag, m->file.owner, m->file.nonce);
	if (m->mode == WEFT_CHUNK_CONVERGENT) {
		j->conv = weft_key_new();
		weft_key_purpose(j->conv, st->root, ROOT_VERSION, WEFT_KEY_CONVERGENCE);
	}
	free(j->buf); /* the chunking pass's read buffer */
	j->buf = weft_xmalloc((size_t)cp.max + WEFT_CHUNK_OVERHEAD);
	j->blob = weft_xmalloc((size_t)cp.max + WEFT_CHUNK_OVERHEAD);
	j->chunking = false;
	return 0;
}

/* The chunking pass, a slice at a time: 1 when it finished, 0 when more
 * is left, negative on a read error. */
static int put_chunk_pass(struct job *j, uint64_t deadline)
{
	uint8_t *piece = j->buf;
	while (mono_us() < deadline) {
		ssize_t got = pread(j->fd, piece, READ_PIECE, (off_t)j->scanned);
		if (got < 0)
			return weft_err_from_errno(errno);
		if (got == 0) {
			uint64_t last = weft_cdc_finish(&j->cdcs);
			if (last) {
				if (j->nsizes == j->capsizes) {
					j->capsizes = j->capsizes ? 2 * j->capsizes : 64;
					j->sizes = weft_xrealloc(j->sizes, j->capsizes, sizeof(*j->sizes));
				}
				j->sizes[j->nsizes++] = (uint32_t)last;
			}
			if (j->scanned != j->total)
				return WEFT_ESTATE; /* the file changed under us */
			return 1;
		}
		size_t at = 0;
		while (at < (size_t)got) {
			bool cut;
			uint64_t before = j->cdcs.len;
			size_t used = weft_cdc_update(j->cdc, &j->cdcs, piece + at, (size_t)got - at, &cut);
			at += used;
			if (cut) {
				if (j->nsizes == j->capsizes) {
					j->capsizes = j->capsizes ? 2 * j->capsizes : 64;
					j->sizes = weft_xrealloc(j->sizes, j->capsizes, sizeof(*j->sizes));
				}
				j->sizes[j->nsizes++] = (uint32_t)(before + used);
			}
		}
		j->scanned += (uint64_t)got;
	}
	return 0;
}

/* Reads and seals chunk i into arg, the store.place command for it. */
static int put_seal(struct job *j, uint32_t i, struct weft_mpw *arg)
{
	struct weft_manifest *m = &j->m;
	size_t len = m->plain[i];
	ssize_t got = pread(j->fd, j->buf, len, (off_t)j->offset[i]);
	if (got != (ssize_t)len)
		return got < 0 ? weft_err_from_errno(errno) : WEFT_ESTATE;
	int rc = weft_key_leaf(j->leaf, j->fkey, m->nchunks, i);
	if (rc == 0)
		rc = weft_chunk_seal(m->mode, j->conv, j->leaf, j->buf, len, j->blob, m->cid[i], m->wrapped[i]);
	if (rc != 0)
		return rc;
	m->cipher[i] = (uint32_t)(len + WEFT_CHUNK_OVERHEAD);
	weft_mpw_reset(arg);
	weft_mpw_array(arg, 4);
	weft_mpw_bin(arg, j->tag, 32);
	weft_mpw_bin(arg, m->cid[i], 32);
	weft_mpw_uint(arg, j->k);
	weft_mpw_bin(arg, j->blob, m->cipher[i]);
	return 0;
}

static void put_chunk_done(struct job *j, uint32_t i, uint32_t *done, size_t *ndone)
{
	if (j->state[i] == CH_FLIGHT_KEPT)
		j->deduped++;
	else
		j->fresh++;
	j->state[i] = CH_DONE;
	j->inflight--;
	j->ndone++;
	j->done_bytes += j->m.plain[i];
	done[(*ndone)++] = i;
}

/* Seals the next chunks (up to the window, within the slice) and places
 * them in one step: one commit of the node's store and one of the chunk
 * store for all of them.  0, or an error that ends the put. */
static int put_place_batch(struct job *j, uint64_t deadline, uint32_t *done, size_t *ndone, const char **why)
{
	struct weft_mpw *args = j->batch_args, *replies = j->batch_replies;
	uint32_t idx[WINDOW];
	const char *whats[WINDOW];
	int rcs[WINDOW];
	size_t count = 0;
	while (j->inflight + count < WINDOW && mono_us() < deadline) {
		while (j->next < j->m.nchunks && j->state[j->next] != CH_TODO)
			j->next++;
		if (j->next >= j->m.nchunks)
			break;
		int rc = put_seal(j, j->next, &args[count]);
		if (rc != 0) {
			*why = "reading or sealing a chunk";
			return rc;
		}
		whats[count] = "store.place";
		idx[count++] = j->next++;
	}
	if (count == 0)
		return 0;
	int rc = weft_host_commands(j->st->node->host, count, whats, args, replies, rcs);
	for (size_t k = 0; k < count && rc == 0; k++) {
		uint32_t i = idx[k];
		if (rcs[k] == WEFT_EAGAIN) {
			/* The service is full: this one and the rest later. */
			if (j->next > i)
				j->next = i;
			continue;
		}
		if (rcs[k] != 0) {
			*why = "placing a chunk";
			return rcs[k];
		}
		const uint8_t *sr;
		uint32_t srlen;
		if (reply_bin(&replies[k], "sr", &sr, &srlen) != 0 || srlen != 32)
			return WEFT_EPROTO;
		memcpy(j->m.sr[i], sr, 32);
		j->state[i] = reply_bool(&replies[k], "deduplicated") ? CH_FLIGHT_KEPT : CH_FLIGHT;
		j->inflight++;
		if (reply_bool(&replies[k], "done"))
			put_chunk_done(j, i, done, ndone);
	}
	return rc;
}

/* Polls the chunks in flight: 0, or an error that ends the put. */
static int put_poll(struct job *j, uint32_t *done, size_t *ndone, const char **why)
{
	for (uint32_t i = 0; i < j->m.nchunks; i++) {
		if (j->state[i] != CH_FLIGHT && j->state[i] != CH_FLIGHT_KEPT)
			continue;
		weft_mpw_reset(&j->arg);
		weft_mpw_array(&j->arg, 2);
		weft_mpw_bin(&j->arg, j->m.cid[i], 32);
		weft_mpw_bin(&j->arg, j->tag, 32);
		int rc = command(j->st, "store.placed", &j->arg, &j->reply);
		if (rc == WEFT_NOTFOUND) {
			/* The service has no placement of it for this file (forgotten,
			 * or lost in a restart): place it again. */
			j->state[i] = CH_TODO;
			j->inflight--;
			if (j->next > i)
				j->next = i;
		} else if (rc == 0 && reply_bool(&j->reply, "failed")) {
			*why = "too few nodes acknowledged a chunk";
			return WEFT_EAGAIN;
		} else if (rc == 0 && reply_bool(&j->reply, "done")) {
			put_chunk_done(j, i, done, ndone);
		} else if (rc != 0) {
			*why = "the service refused a chunk";
			return rc;
		}
	}
	return 0;
}

static void put_finish(struct job *j)
{
	struct weft_storage *st = j->st;
	struct weft_manifest *m = &j->m;
	struct weft_mpw body;
	weft_mpw_init(&body);
	const char *why = NULL;
	int rc = weft_manifest_encode(m, &body, &why);
	if (rc != 0) {
		weft_mpw_free(&body);
		job_fail(j, WEFT_RPC_INTERNAL_ERROR, "manifest: %s", why ? why : weft_strerror(rc));
		return;
	}
	struct weft_key *mkey = weft_key_new();
	weft_key_manifest(mkey, j->fkey);
	uint8_t *env;
	size_t envlen;
	weft_manifest_seal(&env, &envlen, m->file.id, body.buf, body.len, mkey, st->node->id);
	weft_key_free(mkey);
	weft_mpw_free(&body);
	weft_mpw_reset(&j->arg);
	weft_mpw_bin(&j->arg, env, envlen);
	free(env);
	rc = command(st, "store.manifest_put", &j->arg, &j->reply);
	if (rc == 0)
		rc = catalogue_put(st, j);
	if (rc != 0) {
		job_fail(j, rc == WEFT_ETOOBIG ? WEFT_RPC_REJECTED : WEFT_RPC_UNAVAILABLE, "storing the manifest: %s",
			 weft_strerror(rc));
		return;
	}
	journal_forget(st, j->jkey);
	struct weft_grant *g = NULL;
	char cap[WEFT_GRANT_STRING_MAX] = "";
	if (weft_grant_make(&g, j->fkey, &m->file, m->plain, m->nchunks, 0, m->size) == 0)
		weft_grant_format(g, cap);
	weft_grant_free(g);
	char idhex[65];
	weft_hex_encode(idhex, m->file.id, 32);
	note_progress(j, true);
	double secs = (double)(mono_us() - j->started_us) / 1e6;
	weft_info("store.put", "id=%s bytes=%llu chunks=%u fresh=%llu deduped=%llu resumed=%llu s=%.3f", idhex,
		  (unsigned long long)m->size, m->nchunks, (unsigned long long)j->fresh,
		  (unsigned long long)j->deduped, (unsigned long long)j->resumed, secs);
	struct weft_mpw *w = weft_rpc_result(j->call);
	weft_mpw_map(w, 11);
	write_id(w, m->file.id);
	weft_mpw_str(w, "capability");
	weft_mpw_str(w, cap);
	weft_mpw_str(w, "size");
	weft_mpw_uint(w, m->size);
	weft_mpw_str(w, "chunks");
	weft_mpw_uint(w, m->nchunks);
	weft_mpw_str(w, "placed");
	weft_mpw_uint(w, j->fresh);
	weft_mpw_str(w, "deduplicated");
	weft_mpw_uint(w, j->deduped);
	weft_mpw_str(w, "resumed");
	weft_mpw_uint(w, j->resumed);
	weft_mpw_str(w, "mode");
	weft_mpw_str(w, m->mode == WEFT_CHUNK_CONVERGENT ? "convergent" : "random");
	weft_mpw_str(w, "k");
	weft_mpw_uint(w, m->ec_k);
	weft_mpw_str(w, "n");
	weft_mpw_uint(w, m->ec_n);
	weft_mpw_str(w, "seconds");
	weft_mpw_double(w, secs);
	sodium_memzero(cap, sizeof(cap));
	weft_rpc_finish_ok(j->call);
	job_free(j);
}

static void put_step(struct job *j)
{
	uint64_t deadline = mono_us() + SLICE_US;
	if (j->chunking) {
		int rc = put_chunk_pass(j, deadline);
		if (rc < 0) {
			job_fail(j, WEFT_RPC_REJECTED, "reading %s: %s", j->path,
				 rc == WEFT_ESTATE ? "the file changed while it was read" : weft_strerror(rc));
			return;
		}
		if (rc == 0) {
			job_schedule(j, 0);
			return;
		}
		rc = put_begin_sealing(j);
		if (rc != 0) {
			job_fail(j, WEFT_RPC_UNAVAILABLE, "journal: %s", weft_strerror(rc));
			return;
		}
	}
	const char *why = "";
	uint32_t done[2 * WINDOW];
	size_t ndone = 0;
	int rc = put_poll(j, done, &ndone, &why);
	if (rc == 0)
		rc = put_place_batch(j, deadline, done, &ndone, &why);
	int jrc = journal_chunks(j, done, ndone);
	if (rc == 0 && jrc != 0) {
		rc = jrc;
		why = "journal";
	}
	if (rc == WEFT_EMAPFULL || rc == WEFT_ENOSPC) {
		job_fail(j, WEFT_RPC_UNAVAILABLE,
			 "put %s: %s: %s (the chunk store DATADIR/chunks is full: %s; what was placed is kept, "
			 "nothing of this file is visible; put it again to resume)",
			 j->path, why, rc == WEFT_EMAPFULL ? "its map is full" : "the disk is full",
			 rc == WEFT_EMAPFULL ? "raise [store] map_size" : "free disk space");
		return;
	}
	if (rc != 0) {
		job_fail(j, WEFT_RPC_REJECTED, "put %s: %s: %s (what was placed is kept; put the file again to resume)",
			 j->path, why, weft_strerror(rc));
		return;
	}
	note_progress(j, false);
	if (j->ndone == j->m.nchunks) {
		put_finish(j);
		return;
	}
	job_schedule(j, j->inflight >= WINDOW || j->next >= j->m.nchunks ? POLL_US : 0);
}

/* ---- get ---- */

static void get_fail_code(struct job *j, int rc, const char *what)
{
	job_fail(j, rc == WEFT_ECRYPTO || rc == WEFT_EINVAL || rc == WEFT_ECORRUPT ? WEFT_RPC_REJECTED : WEFT_RPC_UNAVAILABLE,
		 "%s: %s", what, weft_strerror(rc));
}

/* Asks for the manifest until it is here: 1 when opened, 0 to wait,
 * WEFT_ETIMEDOUT when no node sent it in time, or another error. */
static int get_manifest(struct job *j)
{
	weft_mpw_reset(&j->arg);
	weft_mpw_bin(&j->arg, j->want_id, 32);
	int rc = command(j->st, "store.manifest_get", &j->arg, &j->reply);
	if (rc != 0)
		return rc;
	const uint8_t *env;
	uint32_t envlen;
	if (reply_bin(&j->reply, "envelope", &env, &envlen) != 0) {
		if (mono_us() - j->started_us > MANIFEST_WAIT_US)
			return WEFT_ETIMEDOUT;
		return 0;
	}
	const char *why = NULL;
	rc = weft_manifest_open(&j->m, env, envlen, j->grant->file.id, j->grant->file.owner, &j->grant->manifest_key,
				WEFT_MANIFEST_MAX_CHUNKS, &why);
	if (rc == 0)
		rc = weft_manifest_check_grant(&j->m, j->grant, &why);
	if (rc != 0) {
		weft_warn("store.get_manifest", "why=\"%s\"", why ? why : weft_strerror(rc));
		return rc;
	}
	j->have_manifest = true;
	uint32_t n = j->m.nchunks;
	j->state = weft_xcalloc(n ? n : 1, 1);
	j->offset = weft_xcalloc(n ? n : 1, sizeof(*j->offset));
	uint64_t off = 0;
	for (uint32_t i = 0; i < n; i++) {
		j->offset[i] = off;
		off += j->m.plain[i];
	}
	/* The range asked, within the grant's; chunks outside it are not fetched. */
	if (j->a < j->grant->a)
		j->a = j->grant->a;
	if (j->b > j->grant->b)
		j->b = j->grant->b;
	if (j->a > j->b)
		j->a = j->b; /* an empty file */
	for (uint32_t i = 0; i < n; i++)
		if (j->offset[i] + j->m.plain[i] <= j->a || j->offset[i] >= j->b) {
			j->state[i] = CH_DONE;
			j->ndone++;
		}
	j->next = 0;
	j->total = j->b - j->a;
	j->buf = weft_xmalloc((size_t)j->m.chunking.max + WEFT_CHUNK_OVERHEAD);
	return 1;
}

/* Decrypts fetched chunk i and writes its part of [a, b). */
static int get_write(struct job *j, uint32_t i, const uint8_t *blob, size_t len)
{
	int rc = weft_grant_leaf(j->leaf, j->grant, i);
	if (rc == 0)
		rc = weft_chunk_unwrap(j->content, j->m.mode, j->leaf, j->m.cid[i], j->m.wrapped[i]);
	if (rc == 0)
		/* The service checked every share against the manifest's shares
		 * root: the blob is the CID's, no second hash pass. */
		rc = len == j->m.cipher[i] ? weft_chunk_open(j->buf, j->m.mode, j->content, blob, len) : WEFT_ECORRUPT;
	if (rc != 0)
		return rc;
	uint64_t from = j->offset[i] > j->a ? j->offset[i] : j->a;
	uint64_t end = j->offset[i] + j->m.plain[i] < j->b ? j->offset[i] + j->m.plain[i] : j->b;
	ssize_t put = pwrite(j->fd, j->buf + (from - j->offset[i]), (size_t)(end - from), (off_t)(from - j->a));
	if (put != (ssize_t)(end - from))
		return put < 0 ? weft_err_from_errno(errno) : WEFT_EIO;
	j->done_bytes += end - from;
	return 0;
}

static int get_poll(struct job *j, const char **why)
{
	for (uint32_t i = 0; i < j->m.nchunks; i++) {
		if (j->state[i] != CH_FLIGHT)
			continue;
		weft_mpw_reset(&j->arg);
		weft_mpw_bin(&j->arg, j->m.cid[i], 32);
		int rc = command(j->st, "store.fetched", &j->arg, &j->reply);
		if (rc != 0) {
			*why = "fetch lost";
			return rc;
		}
		const uint8_t *bad;
		size_t blen;
		if (weft_params_value(j->reply.buf, j->reply.len, "bad", &bad, &blen) == 0 && blen > 1)
			j->bad_shares++;
		const char *state;
		uint32_t slen;
		if (weft_params_str(j->reply.buf, j->reply.len, "state", &state, &slen) != 0)
			return WEFT_EPROTO;
		if (slen == 7 && memcmp(state, "pending", 7) == 0)
			continue;
		if (slen == 6 && memcmp(state, "failed", 6) == 0) {
			*why = "too few good shares could be fetched for a chunk";
			return WEFT_NOTFOUND;
		}
		const uint8_t *blob;
		uint32_t bloblen;
		if (reply_bin(&j->reply, "blob", &blob, &bloblen) != 0)
			return WEFT_EPROTO;
		rc = get_write(j, i, blob, bloblen);
		if (rc != 0) {
			*why = "a chunk did not decrypt";
			return rc;
		}
		j->state[i] = CH_DONE;
		j->inflight--;
		j->ndone++;
	}
	return 0;
}

static void get_finish(struct job *j)
{
	if (fsync(j->fd) != 0 || rename(j->part, j->path) != 0) {
		job_fail(j, WEFT_RPC_UNAVAILABLE, "writing %s: %s", j->path, strerror(errno));
		return;
	}
	free(j->part);
	j->part = NULL;
	note_progress(j, true);
	double secs = (double)(mono_us() - j->started_us) / 1e6;
	struct weft_mpw *w = weft_rpc_result(j->call);
	weft_mpw_map(w, 7);
	write_id(w, j->m.file.id);
	weft_mpw_str(w, "out");
	weft_mpw_str(w, j->path);
	weft_mpw_str(w, "offset");
	weft_mpw_uint(w, j->a);
	weft_mpw_str(w, "bytes");
	weft_mpw_uint(w, j->b - j->a);
	weft_mpw_str(w, "size");
	weft_mpw_uint(w, j->m.size);
	weft_mpw_str(w, "chunks_with_bad_shares");
	weft_mpw_uint(w, j->bad_shares);
	weft_mpw_str(w, "seconds");
	weft_mpw_double(w, secs);
	weft_rpc_finish_ok(j->call);
	job_free(j);
}

static void get_step(struct job *j)
{
	uint64_t deadline = mono_us() + SLICE_US;
	if (!j->have_manifest) {
		int rc = get_manifest(j);
		if (rc < 0) {
			if (rc == WEFT_ETIMEDOUT)
				job_fail(j, WEFT_RPC_UNAVAILABLE,
					 "no reachable node has the manifest of this file (removed, or never stored "
					 "on this committee)");
			else
				get_fail_code(j, rc, "the capability does not open this file's manifest");
			return;
		}
		if (rc == 0) {
			job_schedule(j, 100000);
			return;
		}
	}
	const char *why = "";
	int rc = get_poll(j, &why);
	while (rc == 0 && j->inflight < WINDOW && mono_us() < deadline) {
		while (j->next < j->m.nchunks && j->state[j->next] != CH_TODO)
			j->next++;
		if (j->next >= j->m.nchunks)
			break;
		uint32_t i = j->next;
		weft_mpw_reset(&j->arg);
		weft_mpw_array(&j->arg, 4);
		weft_mpw_bin(&j->arg, j->m.cid[i], 32);
		weft_mpw_bin(&j->arg, j->m.sr[i], 32);
		weft_mpw_uint(&j->arg, j->m.ec_k);
		weft_mpw_uint(&j->arg, j->m.cipher[i]);
		rc = command(j->st, "store.fetch", &j->arg, &j->reply);
		if (rc == WEFT_EAGAIN) {
			rc = 0;
			break;
		}
		if (rc != 0) {
			why = "asking for a chunk";
			break;
		}
		j->state[i] = CH_FLIGHT;
		j->inflight++;
		j->next++;
	}
	if (rc != 0) {
		job_fail(j, rc == WEFT_ECRYPTO || rc == WEFT_ECORRUPT ? WEFT_RPC_REJECTED : WEFT_RPC_UNAVAILABLE,
			 "get: %s: %s", why, weft_strerror(rc));
		return;
	}
	note_progress(j, false);
	if (j->ndone == j->m.nchunks) {
		get_finish(j);
		return;
	}
	job_schedule(j, j->inflight > 0 ? POLL_US : 0);
}

/* ---- repair of one file ---- */

static void repair_step(struct job *j)
{
	while (j->next < j->m.nchunks) {
		weft_mpw_reset(&j->arg);
		weft_mpw_bin(&j->arg, j->m.cid[j->next], 32);
		int rc = command(j->st, "store.repair", &j->arg, &j->reply);
		if (rc == WEFT_EAGAIN) {
			job_schedule(j, 50000);
			return;
		}
		if (rc == 0)
			j->ndone++; /* challenged */
		j->next++; /* WEFT_NOTFOUND: no record here (this node holds none of it) */
	}
	struct weft_mpw *w = weft_rpc_result(j->call);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "chunks");
	weft_mpw_uint(w, j->m.nchunks);
	weft_mpw_str(w, "checked");
	weft_mpw_uint(w, j->ndone);
	weft_rpc_finish_ok(j->call);
	job_free(j);
}

static void job_run(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;
	(void)fd, (void)what;
	switch (j->kind) {
	case JOB_PUT: put_step(j); break;
	case JOB_GET: get_step(j); break;
	case JOB_REPAIR: repair_step(j); break;
	}
}

/* ---- garbage collection ---- */

static void gc_run(evutil_socket_t fd, short what, void *arg)
{
	struct weft_storage *st = arg;
	(void)fd, (void)what;
	struct weft_store_progress p;
	weft_store_unref_step(st->store, 10000, &p);
	weft_store_gc_step(st->store, 256, (uint64_t)256 << 20, &p);
	struct timeval tv = {GC_PERIOD_MS / 1000, (GC_PERIOD_MS % 1000) * 1000};
	evtimer_add(st->gc_ev, &tv);
}

/* ---- open / close ---- */

int weft_storage_open(struct weft_storage **out, struct weft_node *node)
{
	*out = NULL;
	char *dir;
	if (asprintf(&dir, "%s/chunks", node->datadir) < 0)
		abort();
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		int e = errno;
		fprintf(stderr, "weftd: cannot create %s: %s\n", dir, strerror(e));
		free(dir);
		return weft_err_from_errno(e);
	}
	struct weft_storage *st = weft_xcalloc(1, sizeof(*st));
	st->node = node;
	struct weft_kv_opts ko = {.map_size = node->cfg.store_map_size, .no_sync = node->cfg.db_no_sync};
	struct weft_store_opts so = {.gc_delay_ms = node->cfg.store_gc_delay_ms};
	int rc = weft_store_open_dir(&st->store, dir, &ko, &so);
	if (rc == 0)
		rc = weft_kv_db(weft_store_kv(st->store), "files", &st->files_db);
	if (rc == 0)
		rc = weft_kv_db(weft_store_kv(st->store), "journal", &st->journal_db);
	if (rc != 0) {
		fprintf(stderr, "weftd: chunk store %s: %s\n", dir, weft_strerror(rc));
		free(dir);
		weft_storage_close(st);
		return rc;
	}
	free(dir);
	/* The owner's root: KDF(identity seed, "weft.store.v1.owner-root"). */
	st->root = weft_key_new();
	struct weft_key *seed = weft_key_new();
	memcpy(seed->b, node->id->sk, WEFT_KEY_LEN);
	weft_key_derive(st->root->b, WEFT_KEY_LEN, seed, "weft.store.v1.owner-root", NULL, 0);
	weft_key_free(seed);
	st->svc = (struct weft_share_service){
		.ctx = st,
		.put = svc_put,
		.copy = svc_copy,
		.has = svc_has,
		.del = svc_del,
		.ref = svc_ref,
		.unref = svc_unref,
		.begin_step = svc_begin_step,
		.end_step = svc_end_step,
	};
	st->gc_ev = evtimer_new(node->base, gc_run, st);
	if (st->gc_ev == NULL)
		abort();
	struct timeval tv = {GC_PERIOD_MS / 1000, (GC_PERIOD_MS % 1000) * 1000};
	evtimer_add(st->gc_ev, &tv);
	*out = st;
	return 0;
}

void weft_storage_close(struct weft_storage *st)
{
	if (st == NULL)
		return;
	while (st->jobs)
		job_fail(st->jobs, WEFT_RPC_UNAVAILABLE, "the node is stopping");
	if (st->gc_ev)
		event_free(st->gc_ev);
	weft_store_close(st->store);
	weft_key_free(st->root);
	free(st);
}

const struct weft_share_service *weft_storage_shares(struct weft_storage *st)
{
	return &st->svc;
}

void weft_storage_info(struct weft_storage *st, struct weft_mpw *w)
{
	struct weft_store_stats s = {0};
	weft_store_stats(st->store, &s);
	uint32_t jobs = 0;
	for (struct job *j = st->jobs; j; j = j->link)
		jobs++;
	weft_mpw_map(w, 8);
	weft_mpw_str(w, "shares");
	weft_mpw_uint(w, s.shares);
	weft_mpw_str(w, "bytes");
	weft_mpw_uint(w, s.bytes);
	weft_mpw_str(w, "cids");
	weft_mpw_uint(w, s.cids);
	weft_mpw_str(w, "references");
	weft_mpw_uint(w, s.refs);
	weft_mpw_str(w, "files_referencing");
	weft_mpw_uint(w, s.files);
	weft_mpw_str(w, "dropping");
	weft_mpw_uint(w, s.dropping);
	weft_mpw_str(w, "gc_queued");
	weft_mpw_uint(w, s.gc_queued);
	weft_mpw_str(w, "jobs");
	weft_mpw_uint(w, jobs);
}

/* ---- RPC ---- */

static struct weft_storage *storage_of(struct weft_rpc_call *call, void *ctx, const struct weft_rpc_done **fail)
{
	struct weft_node *node = ctx;
	*fail = NULL;
	if (node->storage == NULL)
		*fail = weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE,
				      "this node's protocol has no storage service (use the node stack: protocol dag)");
	return node->storage;
}

static bool parse_id(const struct weft_rpc_bytes *b, uint8_t id[32])
{
	return b->len == 64 && weft_hex_decode(id, 32, (const char *)b->ptr, 64) == 0;
}

static char *bytes_str(const struct weft_rpc_bytes *b)
{
	char *s = weft_xmalloc(b->len + 1);
	memcpy(s, b->ptr, b->len);
	s[b->len] = '\0';
	return s;
}

static const struct weft_rpc_done *rpc_put(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_storage *st = storage_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes path = {0}, mode = {0}, name = {0};
	uint64_t k = 0, avg = 0;
	bool progress = false, have_mode = false, have_name = false;
	const struct weft_rpc_param spec[] = {
		{"path", WEFT_RPC_STR, true, &path, NULL},    {"mode", WEFT_RPC_STR, false, &mode, &have_mode},
		{"k", WEFT_RPC_UINT, false, &k, NULL},        {"avg", WEFT_RPC_UINT, false, &avg, NULL},
		{"name", WEFT_RPC_STR, false, &name, &have_name}, {"progress", WEFT_RPC_BOOL, false, &progress, NULL},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	if (bad)
		return bad;
	enum weft_chunk_mode cm = WEFT_CHUNK_RANDOM;
	if (have_mode) {
		if (mode.len == 10 && memcmp(mode.ptr, "convergent", 10) == 0)
			cm = WEFT_CHUNK_CONVERGENT;
		else if (!(mode.len == 6 && memcmp(mode.ptr, "random", 6) == 0))
			return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "mode: random or convergent");
	}
	uint32_t n = st->node->committee_n;
	if (k == 0)
		k = st->node->committee_f + 1;
	if (k > n)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "k: at most n = %u shares rebuild a chunk", n);
	struct weft_cdc_params cp = {.avg = (uint32_t)(avg ? avg : WEFT_CDC_DEFAULT_AVG)};
	if (avg > WEFT_CDC_MAX_MAX)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "avg: at most %u bytes", WEFT_CDC_MAX_MAX);
	/* A chunk's share must fit one message: max <= k * share max. */
	uint64_t cap = k * (uint64_t)WEFT_STORE_SHARE_MAX - WEFT_CHUNK_OVERHEAD;
	cp.max = (uint32_t)((uint64_t)cp.avg * 8 < cap ? (uint64_t)cp.avg * 8 : cap);
	if (weft_cdc_params_check(&cp) != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS,
				     "avg: a power of two from 128 bytes, and below %llu with k = %llu (a share of "
				     "a chunk must fit one message)",
				     (unsigned long long)cap, (unsigned long long)k);
	char *p = bytes_str(&path);
	if (p[0] != '/') {
		free(p);
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "path: an absolute path (the daemon opens it)");
	}
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		int e = fd < 0 ? errno : EINVAL;
		if (fd >= 0)
			close(fd);
		const struct weft_rpc_done *d = weft_rpc_fail(call, WEFT_RPC_REJECTED, "path %s: %s", p,
							      e == EINVAL ? "not a regular file" : strerror(e));
		free(p);
		return d;
	}
	struct job *j = job_new(st, call, JOB_PUT, progress);
	j->fd = fd;
	j->path = p;
	j->sb = sb;
	j->total = (uint64_t)sb.st_size;
	j->k = (uint32_t)k;
	j->m.mode = cm;
	j->name = have_name ? bytes_str(&name) : weft_xstrdup(strrchr(p, '/') + 1);
	j->chunking = true;
	j->buf = weft_xmalloc(READ_PIECE);
	struct weft_key *ck = weft_key_new();
	weft_key_purpose(ck, st->root, ROOT_VERSION, WEFT_KEY_CHUNKER);
	int rc = weft_cdc_new(&j->cdc, ck->b, &cp);
	weft_key_free(ck);
	if (rc != 0) {
		job_fail(j, WEFT_RPC_INVALID_PARAMS, "chunking parameters: %s", weft_strerror(rc));
		return weft_rpc_pending(call);
	}
	/* The journal key: the same file with the same options resumes. */
	crypto_generichash_state hs;
	crypto_generichash_init(&hs, NULL, 0, 32);
	crypto_generichash_update(&hs, (const uint8_t *)p, strlen(p) + 1);
	uint64_t fields[6] = {(uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec, (uint64_t)sb.st_mtim.tv_nsec,
			      (uint64_t)sb.st_ino, (uint64_t)cm, k | ((uint64_t)cp.avg << 16)};
	crypto_generichash_update(&hs, (const uint8_t *)fields, sizeof(fields));
	crypto_generichash_final(&hs, j->jkey, 32);
	job_schedule(j, 0);
	return weft_rpc_pending(call);
}

/* A file put from this node, opened: its catalogue entry, its file key
 * (the caller's until weft_key_free) and its manifest (weft_manifest_free
 * it).  0, or a code with *why. */
struct own_file {
	struct entry e;
	struct weft_file_ref ref;
	struct weft_key *key;
	struct weft_manifest m;
};

static void own_file_close(struct own_file *f)
{
	weft_key_free(f->key);
	weft_manifest_free(&f->m);
	memset(f, 0, sizeof(*f));
}

static int own_file_open(struct weft_storage *st, const uint8_t id[32], struct own_file *f, const char **why)
{
	memset(f, 0, sizeof(*f));
	int rc = catalogue_get(st, id, &f->e);
	if (rc != 0) {
		*why = "no file with this id was put from this node (give its capability)";
		return rc;
	}
	f->key = file_key(st, f->e.version, f->e.nonce);
	f->ref.root_version = f->e.version;
	memcpy(f->ref.id, id, 32);
	memcpy(f->ref.owner, st->node->id->pk, 32);
	memcpy(f->ref.nonce, f->e.nonce, WEFT_FILE_NONCE_LEN);
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_bin(&arg, id, 32);
	rc = command(st, "store.manifest_get", &arg, &reply);
	const uint8_t *env;
	uint32_t envlen;
	if (rc == 0 && reply_bin(&reply, "envelope", &env, &envlen) != 0)
		rc = WEFT_NOTFOUND;
	if (rc == 0) {
		struct weft_key *mk = weft_key_new();
		weft_key_manifest(mk, f->key);
		rc = weft_manifest_open(&f->m, env, envlen, id, f->ref.owner, mk, WEFT_MANIFEST_MAX_CHUNKS, why);
		weft_key_free(mk);
	} else {
		*why = "its manifest is not on this node";
	}
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	if (rc != 0)
		own_file_close(f);
	return rc;
}

/* The grant of a capability, or the full grant of a file put here. */
static int grant_of(struct weft_storage *st, const struct weft_rpc_bytes *cap, const struct weft_rpc_bytes *id,
		    struct weft_grant **out, const char **why)
{
	*out = NULL;
	if (cap->ptr) {
		char *s = bytes_str(cap);
		int rc = weft_grant_parse(out, s, why);
		sodium_memzero(s, cap->len);
		free(s);
		return rc;
	}
	uint8_t fid[32];
	if (!parse_id(id, fid)) {
		*why = "id: 64 hex digits";
		return WEFT_EINVAL;
	}
	struct own_file f;
	int rc = own_file_open(st, fid, &f, why);
	if (rc != 0)
		return rc;
	rc = weft_grant_make(out, f.key, &f.ref, f.m.plain, f.m.nchunks, 0, f.m.size);
	own_file_close(&f);
	return rc;
}

static const struct weft_rpc_done *rpc_get(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_storage *st = storage_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes cap = {0}, id = {0}, out = {0};
	uint64_t offset = 0, length = UINT64_MAX;
	bool progress = false, have_len = false;
	const struct weft_rpc_param spec[] = {
		{"capability", WEFT_RPC_STR, false, &cap, NULL}, {"id", WEFT_RPC_STR, false, &id, NULL},
		{"out", WEFT_RPC_STR, true, &out, NULL},         {"offset", WEFT_RPC_UINT, false, &offset, NULL},
		{"length", WEFT_RPC_UINT, false, &length, &have_len}, {"progress", WEFT_RPC_BOOL, false, &progress, NULL},
	};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, sizeof(spec) / sizeof(spec[0]));
	if (bad)
		return bad;
	if ((cap.ptr == NULL) == (id.ptr == NULL))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "give one of capability or id");
	if (have_len && length == 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "length: at least 1 byte");
	char *o = bytes_str(&out);
	if (o[0] != '/') {
		free(o);
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "out: an absolute path (the daemon writes it)");
	}
	const char *why = NULL;
	struct weft_grant *g;
	int rc = grant_of(st, &cap, &id, &g, &why);
	if (rc != 0) {
		free(o);
		return weft_rpc_fail(call, rc == WEFT_NOTFOUND ? WEFT_RPC_REJECTED : WEFT_RPC_INVALID_PARAMS, "%s%s",
				     why && strncmp(why, "capability", 10) == 0 ? "" : cap.ptr ? "capability: " : "id: ",
				     why ? why : weft_strerror(rc));
	}
	uint64_t end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
	/* (The grant of an empty file grants [0, 0): its get writes an empty file.) */
	if (g->b > g->a && (offset >= g->b || end <= g->a)) {
		const struct weft_rpc_done *d = weft_rpc_fail(
			call, WEFT_RPC_REJECTED, "the range asked is outside what the capability grants (bytes %llu to %llu)",
			(unsigned long long)g->a, (unsigned long long)g->b);
		free(o);
		weft_grant_free(g);
		return d;
	}
	char *part;
	if (asprintf(&part, "%s.weft-part", o) < 0)
		abort();
	int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		const struct weft_rpc_done *d = weft_rpc_fail(call, WEFT_RPC_REJECTED, "out %s: %s", o, strerror(e));
		free(o);
		free(part);
		weft_grant_free(g);
		return d;
	}
	struct job *j = job_new(st, call, JOB_GET, progress);
	j->fd = fd;
	j->path = o;
	j->part = part;
	j->grant = g;
	memcpy(j->want_id, g->file.id, 32);
	j->a = offset;
	j->b = end;
	job_schedule(j, 0);
	return weft_rpc_pending(call);
}

static int ls_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct weft_mpw *items = arg;
	struct entry e;
	if (klen != 32 || entry_decode(val, vlen, &e) != 0)
		return 0;
	weft_mpw_map(items, 6);
	write_id(items, key);
	weft_mpw_str(items, "name");
	weft_mpw_str(items, e.name);
	weft_mpw_str(items, "size");
	weft_mpw_uint(items, e.size);
	weft_mpw_str(items, "chunks");
	weft_mpw_uint(items, e.chunks);
	weft_mpw_str(items, "mode");
	weft_mpw_str(items, e.mode == WEFT_CHUNK_CONVERGENT ? "convergent" : "random");
	weft_mpw_str(items, "created_ms");
	weft_mpw_uint(items, e.created_ms);
	return 0;
}

static const struct weft_rpc_done *rpc_ls(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_storage *st = storage_of(call, ctx, &fail);
	if (fail)
		return fail;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	struct weft_kv_txn *txn;
	int rc = weft_kv_begin(weft_store_kv(st->store), false, &txn);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "chunk store: %s", weft_strerror(rc));
	struct weft_mpw items;
	weft_mpw_init(&items);
	weft_kv_scan(txn, st->files_db, NULL, 0, NULL, 0, 0, ls_one, &items);
	weft_kv_abort(txn);
	/* Count the items written: one map each. */
	uint32_t count = 0;
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, items.buf, items.len);
	while (weft_mp_remaining(&r) > 0 && weft_mp_skip(&r) == 0)
		count++;
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 2);
	weft_mpw_str(w, "files");
	weft_mpw_array(w, count);
	weft_mpw_raw(w, items.buf, items.len);
	weft_mpw_str(w, "store");
	weft_storage_info(st, w);
	weft_mpw_free(&items);
	return weft_rpc_ok(call);
}

/* The prologue of the methods about one file put here: the storage, the
 * id parameter (with any others in spec after it).  NULL, or the answered
 * call. */
static const struct weft_rpc_done *file_params(struct weft_rpc_call *call, void *ctx, struct weft_storage **st,
					       uint8_t fid[32], const struct weft_rpc_param *more, size_t nmore)
{
	const struct weft_rpc_done *fail;
	*st = storage_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes id = {0};
	struct weft_rpc_param spec[4] = {{"id", WEFT_RPC_STR, true, &id, NULL}};
	for (size_t i = 0; i < nmore && i < 3; i++)
		spec[1 + i] = more[i];
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1 + nmore);
	if (bad)
		return bad;
	if (!parse_id(&id, fid))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "id: 64 hex digits");
	return NULL;
}

static const struct weft_rpc_done *rpc_stat(struct weft_rpc_call *call, void *ctx)
{
	struct weft_storage *st;
	uint8_t fid[32];
	const struct weft_rpc_done *bad = file_params(call, ctx, &st, fid, NULL, 0);
	if (bad)
		return bad;
	struct own_file f;
	const char *why = NULL;
	int rc = own_file_open(st, fid, &f, &why);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "id: %s", why ? why : weft_strerror(rc));
	/* The shares of the file's chunks this node holds. */
	const struct weft_manifest *m = &f.m;
	uint32_t n = st->node->committee_n, self = st->node->self_index;
	uint64_t held = 0, held_bytes = 0;
	for (uint32_t i = 0; i < m->nchunks; i++) {
		uint32_t j = 0;
		while (j < n && weft_store_holder(m->cid[i], j, n) != self)
			j++;
		struct weft_store_meta meta;
		if (weft_store_has(st->store, m->cid[i], (uint16_t)j, &meta) == 0)
			held++, held_bytes += meta.length;
	}
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 10);
	write_id(w, fid);
	weft_mpw_str(w, "name");
	weft_mpw_str(w, f.e.name);
	weft_mpw_str(w, "size");
	weft_mpw_uint(w, m->size);
	weft_mpw_str(w, "chunks");
	weft_mpw_uint(w, m->nchunks);
	weft_mpw_str(w, "mode");
	weft_mpw_str(w, m->mode == WEFT_CHUNK_CONVERGENT ? "convergent" : "random");
	weft_mpw_str(w, "k");
	weft_mpw_uint(w, m->ec_k);
	weft_mpw_str(w, "n");
	weft_mpw_uint(w, m->ec_n);
	weft_mpw_str(w, "chunking");
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "min");
	weft_mpw_uint(w, m->chunking.min);
	weft_mpw_str(w, "avg");
	weft_mpw_uint(w, m->chunking.avg);
	weft_mpw_str(w, "max");
	weft_mpw_uint(w, m->chunking.max);
	weft_mpw_str(w, "shares_here");
	weft_mpw_uint(w, held);
	weft_mpw_str(w, "share_bytes_here");
	weft_mpw_uint(w, held_bytes);
	own_file_close(&f);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_rm(struct weft_rpc_call *call, void *ctx)
{
	struct weft_storage *st;
	uint8_t fid[32];
	const struct weft_rpc_done *bad = file_params(call, ctx, &st, fid, NULL, 0);
	if (bad)
		return bad;
	struct entry e;
	int rc = catalogue_get(st, fid, &e);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "id: no file with this id was put from this node");
	uint8_t msg[WEFT_STORE_DROP_MSG_LEN], sig[WEFT_SIG_LEN];
	weft_store_drop_message(msg, fid, st->node->id->pk, e.nonce);
	weft_sign(st->node->id, sig, msg, sizeof(msg));
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_array(&arg, 4);
	weft_mpw_bin(&arg, fid, 32);
	weft_mpw_bin(&arg, st->node->id->pk, 32);
	weft_mpw_bin(&arg, e.nonce, WEFT_FILE_NONCE_LEN);
	weft_mpw_bin(&arg, sig, sizeof(sig));
	rc = command(st, "store.drop", &arg, &reply);
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	if (rc == 0)
		rc = catalogue_del(st, fid);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "drop: %s", weft_strerror(rc));
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 2);
	write_id(w, fid);
	weft_mpw_str(w, "dropped");
	weft_mpw_bool(w, true);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_grant(struct weft_rpc_call *call, void *ctx)
{
	struct weft_storage *st;
	uint8_t fid[32];
	uint64_t offset = 0, length = 0;
	const struct weft_rpc_param more[] = {{"offset", WEFT_RPC_UINT, true, &offset, NULL},
					      {"length", WEFT_RPC_UINT, true, &length, NULL}};
	const struct weft_rpc_done *bad = file_params(call, ctx, &st, fid, more, 2);
	if (bad)
		return bad;
	struct own_file f;
	const char *why = NULL;
	int rc = own_file_open(st, fid, &f, &why);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "id: %s", why ? why : weft_strerror(rc));
	struct weft_grant *g = NULL;
	uint64_t size = f.m.size;
	rc = length == 0 || offset >= size || length > size - offset
		     ? WEFT_EINVAL
		     : weft_grant_make(&g, f.key, &f.ref, f.m.plain, f.m.nchunks, offset, offset + length);
	own_file_close(&f);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS,
				     "offset, length: a non-empty range within the file's %llu bytes",
				     (unsigned long long)size);
	char cap[WEFT_GRANT_STRING_MAX];
	weft_grant_format(g, cap);
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 5);
	weft_mpw_str(w, "capability");
	weft_mpw_str(w, cap);
	weft_mpw_str(w, "offset");
	weft_mpw_uint(w, g->a);
	weft_mpw_str(w, "length");
	weft_mpw_uint(w, g->b - g->a);
	weft_mpw_str(w, "first_chunk");
	weft_mpw_uint(w, g->first);
	weft_mpw_str(w, "end_chunk");
	weft_mpw_uint(w, g->end);
	sodium_memzero(cap, sizeof(cap));
	weft_grant_free(g);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_audit(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_storage *st = storage_of(call, ctx, &fail);
	if (fail)
		return fail;
	uint64_t count = 0;
	bool have = false;
	const struct weft_rpc_param spec[] = {{"count", WEFT_RPC_UINT, false, &count, &have}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 1);
	if (bad)
		return bad;
	if (have && (count == 0 || count > 64))
		return weft_rpc_fail(call, WEFT_RPC_INVALID_PARAMS, "count: 1 to 64 challenges at once");
	struct weft_mpw arg, reply;
	weft_mpw_init(&arg);
	weft_mpw_init(&reply);
	weft_mpw_uint(&arg, have ? count : 0);
	int rc = command(st, "store.audit", &arg, &reply);
	struct weft_mpw ev;
	weft_mpw_init(&ev);
	weft_mpw_reset(&arg);
	weft_mpw_nil(&arg);
	if (rc == 0)
		rc = command(st, "store.evidence", &arg, &ev);
	if (rc != 0) {
		weft_mpw_free(&arg);
		weft_mpw_free(&reply);
		weft_mpw_free(&ev);
		return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "audit: %s", weft_strerror(rc));
	}
	/* The service's counters are in its info; show them with the evidence. */
	struct weft_mpw info;
	weft_mpw_init(&info);
	weft_host_proto_info(st->node->host, &info);
	const uint8_t *store_info, *audits;
	size_t silen, alen;
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 3);
	weft_mpw_str(w, "sent");
	const uint8_t *sent;
	size_t slen;
	if (weft_params_value(reply.buf, reply.len, "sent", &sent, &slen) == 0)
		weft_mpw_raw(w, sent, slen);
	else
		weft_mpw_uint(w, 0);
	weft_mpw_str(w, "audits");
	if (weft_params_value(info.buf, info.len, "storage", &store_info, &silen) == 0 &&
	    weft_params_value(store_info, silen, "audits", &audits, &alen) == 0)
		weft_mpw_raw(w, audits, alen);
	else
		weft_mpw_nil(w);
	weft_mpw_str(w, "evidence");
	weft_mpw_raw(w, ev.buf, ev.len);
	weft_mpw_free(&arg);
	weft_mpw_free(&reply);
	weft_mpw_free(&ev);
	weft_mpw_free(&info);
	return weft_rpc_ok(call);
}

static const struct weft_rpc_done *rpc_repair(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_storage *st = storage_of(call, ctx, &fail);
	if (fail)
		return fail;
	struct weft_rpc_bytes id = {0}, cap = {0};
	const struct weft_rpc_param spec[] = {{"id", WEFT_RPC_STR, false, &id, NULL},
					      {"capability", WEFT_RPC_STR, false, &cap, NULL}};
	const struct weft_rpc_done *bad = weft_rpc_params(call, spec, 2);
	if (bad)
		return bad;
	if (id.ptr == NULL && cap.ptr == NULL) {
		struct weft_mpw arg, reply;
		weft_mpw_init(&arg);
		weft_mpw_init(&reply);
		weft_mpw_nil(&arg);
		int rc = command(st, "store.repair", &arg, &reply);
		weft_mpw_free(&arg);
		weft_mpw_free(&reply);
		if (rc != 0)
			return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "repair: %s", weft_strerror(rc));
		struct weft_mpw *w = weft_rpc_result(call);
		weft_mpw_map(w, 1);
		weft_mpw_str(w, "sweep");
		weft_mpw_str(w, "started: every chunk this node holds a record of is checked in the background");
		return weft_rpc_ok(call);
	}
	struct weft_grant *g;
	const char *why = NULL;
	int rc = grant_of(st, &cap, &id, &g, &why);
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_REJECTED, "%s", why ? why : weft_strerror(rc));
	struct job *j = job_new(st, call, JOB_REPAIR, false);
	j->grant = g;
	memcpy(j->want_id, g->file.id, 32);
	j->a = 0;
	j->b = UINT64_MAX;
	rc = get_manifest(j);
	if (rc != 1) {
		job_fail(j, WEFT_RPC_UNAVAILABLE, "the manifest is not on this node: %s",
			 rc < 0 ? weft_strerror(rc) : "asked the peers; try again");
		return weft_rpc_pending(call);
	}
	j->ndone = 0;
	job_schedule(j, 0);
	return weft_rpc_pending(call);
}

static const struct weft_rpc_done *rpc_gc(struct weft_rpc_call *call, void *ctx)
{
	const struct weft_rpc_done *fail;
	struct weft_storage *st = storage_of(call, ctx, &fail);
	if (fail)
		return fail;
	const struct weft_rpc_done *bad = weft_rpc_params(call, NULL, 0);
	if (bad)
		return bad;
	struct weft_store_progress p;
	uint64_t refs = 0, cids = 0, bytes = 0;
	int rc = 0;
	/* Bounded so that one call never stalls the node for long. */
	for (int i = 0; i < 64 && rc == 0; i++) {
		rc = weft_store_unref_step(st->store, 10000, &p);
		refs += p.items;
		if (!p.more)
			break;
	}
	for (int i = 0; i < 64 && rc == 0; i++) {
		rc = weft_store_gc_step(st->store, 256, (uint64_t)256 << 20, &p);
		cids += p.items;
		bytes += p.bytes;
		if (!p.more)
			break;
	}
	if (rc != 0)
		return weft_rpc_fail(call, WEFT_RPC_UNAVAILABLE, "gc: %s", weft_strerror(rc));
	struct weft_mpw *w = weft_rpc_result(call);
	weft_mpw_map(w, 4);
	weft_mpw_str(w, "references_dropped");
	weft_mpw_uint(w, refs);
	weft_mpw_str(w, "chunks_freed");
	weft_mpw_uint(w, cids);
	weft_mpw_str(w, "bytes_freed");
	weft_mpw_uint(w, bytes);
	weft_mpw_str(w, "store");
	weft_storage_info(st, w);
	return weft_rpc_ok(call);
}

const struct weft_rpc_method weft_storage_methods[] = {
	{"store.put", rpc_put, "path=STR [mode=random|convergent] [k=UINT] [avg=UINT] [name=STR] [progress=BOOL]",
	 "store a file across the committee; returns its id and read capability", 0},
	{"store.get", rpc_get, "capability=STR|id=HEX out=STR [offset=UINT] [length=UINT] [progress=BOOL]",
	 "read a file (or the granted range) back into out", 0},
	{"store.ls", rpc_ls, "", "files put from this node, and the chunk store's totals", 0},
	{"store.stat", rpc_stat, "id=HEX", "a file's size, chunking, coding and the shares this node holds", 0},
	{"store.rm", rpc_rm, "id=HEX", "drop a file put from this node everywhere (GC frees what nothing else uses)", 0},
	{"store.grant", rpc_grant, "id=HEX offset=UINT length=UINT",
	 "a capability that reads only bytes [offset, offset+length) of a file put here", 0},
	{"store.audit", rpc_audit, "[count=UINT]", "challenge holders now; audit counters and kept evidence", 0},
	{"store.repair", rpc_repair, "[id=HEX|capability=STR]",
	 "check every holder of a file's chunks (or of every chunk held here) and rebuild what is missing or bad", 0},
	{"store.gc", rpc_gc, "", "drop the references of removed files and free unreferenced chunks now", 0},
};
const size_t weft_storage_nmethods = sizeof(weft_storage_methods) / sizeof(weft_storage_methods[0]);
