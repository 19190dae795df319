/* kv.c - weft's LMDB wrapper (see include/weft/kv.h for the contract).
 *
 * One environment per data directory, named databases, transactions and
 * cursors, with LMDB's semantics kept as they are: one write transaction at a
 * time, values that point into the map, all-or-nothing commits.  What this
 * file adds is the translation of LMDB's errors into weft codes, one log line
 * per failure naming the environment's path, and a few guards that turn
 * programming errors LMDB would deadlock or crash on (a second write
 * transaction in the same thread, a cursor closed after its transaction) into
 * WEFT_ESTATE or into something harmless.
 *
 * Ownership: struct weft_kv owns the MDB_env and a copy of the path; a
 * struct weft_kv_txn is freed by commit or abort; a struct weft_kv_cursor is
 * freed by weft_kv_cursor_close(), which may be called before or after its
 * transaction ends (the LMDB cursor itself is closed when the transaction
 * ends, so a late close only frees the wrapper). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <lmdb.h>

#include "weft/err.h"
#include "weft/kv.h"
#include "weft/log.h"

#define KV_DEFAULT_MAP_SIZE ((size_t)1 << 30)
#define KV_DEFAULT_MAX_DBS 64u

struct weft_kv {
	MDB_env *env;
	char *path;                 /* copy of the directory, for log lines */
	struct weft_kv_txn *writer; /* the open write transaction, if any */
	size_t key_max;             /* longest key LMDB accepts */
	MDB_txn *group;             /* the open group transaction (weft_kv_group_begin), if any */
	int group_failed;           /* a group member's commit failed: the group can only abort */
};

struct weft_kv_txn {
	struct weft_kv *kv;
	MDB_txn *txn;
	bool write;
	int failed;                      /* first put/del error, 0 if none */
	struct weft_kv_cursor *cursors;  /* open cursors, detached at the end */
};

enum kv_cursor_state {
	KV_CURSOR_UNSET,   /* never positioned: next means first */
	KV_CURSOR_AT,      /* on a pair */
	KV_CURSOR_DELETED, /* the pair it was on was removed; dkey holds its key */
	KV_CURSOR_END,     /* past the last pair */
};

struct weft_kv_cursor {
	struct weft_kv *kv;
	struct weft_kv_txn *txn; /* NULL once the transaction has ended */
	MDB_cursor *mc;          /* NULL once the transaction has ended */
	weft_kv_dbi dbi;
	enum kv_cursor_state state;
	struct weft_kv_cursor *prev, *next;
	unsigned char *dkey; /* key_max bytes: the key removed by the last del */
	size_t dklen;
};

static void *kv_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

/* LMDB result code (errno value or MDB_*) to weft code.  EIO is refined by
 * the caller, which knows the environment (see kv_fail). */
static int kv_map_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return WEFT_NOTFOUND;
	case MDB_MAP_FULL:
		return WEFT_EMAPFULL;
	case ENOSPC:
	case EFBIG:
	case EDQUOT:
		return WEFT_ENOSPC;
	case EACCES:
	case EROFS:
	case EPERM:
		return WEFT_EPERM;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
		return WEFT_ECORRUPT;
	case MDB_BAD_VALSIZE: /* key too long (or empty), value too large */
	case MDB_DBS_FULL:    /* raise max_dbs */
	case MDB_READERS_FULL:
	case MDB_TXN_FULL:
		return WEFT_ETOOBIG;
	case MDB_BAD_TXN: /* the transaction already failed: abort it */
		return WEFT_ESTATE;
	case EINVAL:
	case MDB_BAD_DBI:
	case MDB_INCOMPATIBLE:
		return WEFT_EINVAL;
	default:
		return WEFT_EIO;
	}
}

/* LMDB reports a short write(2) as EIO, and that is how a full disk or an
 * RLIMIT_FSIZE shows up when a write straddles the limit (the write stops at
 * the limit instead of failing).  After an EIO, look at the data file: if it
 * has reached the file size limit or the filesystem has (almost) no room
 * left, the failure is really "no space".  Returns the reason or NULL. */
static const char *kv_short_write_cause(const struct weft_kv *kv)
{
	int fd;
	if (kv == NULL || kv->env == NULL || mdb_env_get_fd(kv->env, &fd) != 0 || fd < 0)
		return NULL;
	struct stat st;
	struct rlimit rl;
	if (fstat(fd, &st) == 0 && getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		unsigned long long size = (unsigned long long)st.st_size;
		unsigned long long block = (unsigned long long)st.st_blksize;
		if (size + (block ? block : 4096) > (unsigned long long)rl.rlim_cur)
			return "file size limit reached";
	}
	struct statvfs vfs;
	if (fstatvfs(fd, &vfs) == 0) {
		unsigned long long blocks = geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail;
		/* Less room than this after a failed write: the disk is full. */
		if (blocks * vfs.f_frsize < WEFT_KV_FULL_MARGIN)
			return "filesystem full";
	}
	return NULL;
}

int weft_kv_free_bytes(const struct weft_kv *kv, uint64_t *out)
{
	int fd;
	struct statvfs vfs;
	if (kv == NULL || kv->env == NULL || mdb_env_get_fd(kv->env, &fd) != 0 || fd < 0)
		return WEFT_EINVAL;
	if (fstatvfs(fd, &vfs) != 0)
		return weft_err_from_errno(errno);
	*out = (uint64_t)(geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) * vfs.f_frsize;
	return 0;
}

/* Maps rc, logs the failure once under event and returns the weft code. */
static int kv_fail(const struct weft_kv *kv, const char *event, int rc)
{
	const char *path = kv && kv->path ? kv->path : "?";
	int err = kv_map_err(rc);
	const char *cause = rc == EIO ? kv_short_write_cause(kv) : NULL;
	if (cause != NULL) {
		err = WEFT_ENOSPC;
		weft_log_ratelimited(10, WEFT_LOG_ERROR, event, "path=%s err=\"%s\" cause=\"%s\"", path,
				     mdb_strerror(rc), cause);
	} else {
		weft_log_ratelimited(10, WEFT_LOG_ERROR, event, "path=%s err=\"%s\"", path, mdb_strerror(rc));
	}
	return err;
}

/* Logs a misuse of the API that LMDB never saw. */
static int kv_misuse(const struct weft_kv *kv, const char *event, int err, const char *what)
{
	weft_error(event, "path=%s err=\"%s\"", kv && kv->path ? kv->path : "?", what);
	return err;
}

int weft_kv_open(struct weft_kv **out, const char *dir, const struct weft_kv_opts *opts)
{
	*out = NULL;
	if (dir == NULL || dir[0] == '\0')
		return kv_misuse(NULL, "kv.open", WEFT_EINVAL, "no directory given");

	size_t map_size = opts && opts->map_size ? opts->map_size : KV_DEFAULT_MAP_SIZE;
	unsigned int max_dbs = opts && opts->max_dbs ? opts->max_dbs : KV_DEFAULT_MAX_DBS;
	unsigned int flags = MDB_NOTLS;
	if (opts && opts->no_sync)
		flags |= MDB_NOSYNC;

	struct weft_kv *kv = kv_alloc(sizeof(*kv));
	kv->path = strdup(dir);
	if (kv->path == NULL)
		abort();

	int rc = mdb_env_create(&kv->env);
	if (rc != 0) {
		kv->env = NULL;
		goto fail;
	}
	if ((rc = mdb_env_set_maxdbs(kv->env, max_dbs)) != 0)
		goto fail;
	if ((rc = mdb_env_set_mapsize(kv->env, map_size)) != 0)
		goto fail;
	if ((rc = mdb_env_open(kv->env, dir, flags, 0600)) != 0)
		goto fail;
	kv->key_max = (size_t)mdb_env_get_maxkeysize(kv->env);
	*out = kv;
	return 0;

fail:;
	int err;
	if (rc == ENOENT || rc == ENOTDIR)
		err = kv_misuse(kv, "kv.open", WEFT_ECONFIG, "data directory does not exist");
	else
		err = kv_fail(kv, "kv.open", rc);
	if (kv->env != NULL)
		mdb_env_close(kv->env);
	free(kv->path);
	free(kv);
	return err;
}

void weft_kv_close(struct weft_kv *kv)
{
	if (kv == NULL)
		return;
	if (kv->writer != NULL) {
		kv_misuse(kv, "kv.close", WEFT_ESTATE, "write transaction still open: aborted");
		weft_kv_abort(kv->writer);
	}
	weft_kv_group_end(kv, false);
	mdb_env_close(kv->env);
	free(kv->path);
	free(kv);
}

int weft_kv_db(struct weft_kv *kv, const char *name, weft_kv_dbi *out)
{
	if (kv->writer != NULL || kv->group != NULL)
		return kv_misuse(kv, "kv.db", WEFT_ESTATE, "a write transaction is open");
	MDB_txn *txn;
	MDB_dbi dbi;
	int rc = mdb_txn_begin(kv->env, NULL, 0, &txn);
	if (rc != 0)
		return kv_fail(kv, "kv.db", rc);
	rc = mdb_dbi_open(txn, name, MDB_CREATE, &dbi);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return kv_fail(kv, "kv.db", rc);
	}
	rc = mdb_txn_commit(txn);
	if (rc != 0)
		return kv_fail(kv, "kv.db", rc);
	*out = dbi;
	return 0;
}

int weft_kv_stats(struct weft_kv *kv, struct weft_kv_stats *out)
{
	MDB_envinfo info;
	MDB_stat st;
	int rc = mdb_env_info(kv->env, &info);
	if (rc == 0)
		rc = mdb_env_stat(kv->env, &st);
	if (rc != 0)
		return kv_fail(kv, "kv.stats", rc);
	out->map_size = info.me_mapsize;
	out->page_size = st.ms_psize;
	out->used_bytes = ((size_t)info.me_last_pgno + 1) * st.ms_psize;
	out->entries = st.ms_entries;
	out->readers = info.me_numreaders;
	return 0;
}

int weft_kv_begin(struct weft_kv *kv, bool write, struct weft_kv_txn **out)
{
	*out = NULL;
	/* A second write transaction from this thread would wait forever on
	 * LMDB's writer lock; in a group, LMDB allows one child at a time. */
	if ((write || kv->group) && kv->writer != NULL)
		return kv_misuse(kv, "kv.begin", WEFT_ESTATE, "a write transaction is already open");
	MDB_txn *t;
	/* In a group every transaction is a child of the group's: it sees the
	 * group's writes, and its own become the group's when it commits. */
	int rc = kv->group ? mdb_txn_begin(kv->env, kv->group, 0, &t)
			   : mdb_txn_begin(kv->env, NULL, write ? 0 : MDB_RDONLY, &t);
	if (rc != 0)
		return kv_fail(kv, "kv.begin", rc);
	struct weft_kv_txn *txn = kv_alloc(sizeof(*txn));
	txn->kv = kv;
	txn->txn = t;
	txn->write = write;
	if (write || kv->group)
		kv->writer = txn;
	*out = txn;
	return 0;
}

int weft_kv_group_begin(struct weft_kv *kv)
{
	if (kv->group != NULL || kv->writer != NULL)
		return kv_misuse(kv, "kv.group_begin", WEFT_ESTATE, "a group or a write transaction is open");
	int rc = mdb_txn_begin(kv->env, NULL, 0, &kv->group);
	if (rc != 0) {
		kv->group = NULL;
		return kv_fail(kv, "kv.group_begin", rc);
	}
	kv->group_failed = 0;
	return 0;
}

int weft_kv_group_end(struct weft_kv *kv, bool commit)
{
	if (kv->group == NULL)
		return 0;
	if (kv->writer != NULL) {
		kv_misuse(kv, "kv.group_end", WEFT_ESTATE, "a transaction of the group is still open: aborted");
		weft_kv_abort(kv->writer);
	}
	MDB_txn *g = kv->group;
	kv->group = NULL;
	if (!commit || kv->group_failed) {
		mdb_txn_abort(g);
		return commit ? kv->group_failed : 0;
	}
	int rc = mdb_txn_commit(g);
	return rc ? kv_fail(kv, "kv.group_commit", rc) : 0;
}

bool weft_kv_in_group(const struct weft_kv *kv)
{
	return kv->group != NULL;
}

/* Closes the LMDB cursors of txn before it ends; the wrappers stay valid
 * until weft_kv_cursor_close(). */
static void kv_txn_end(struct weft_kv_txn *txn)
{
	struct weft_kv_cursor *c = txn->cursors;
	while (c != NULL) {
		struct weft_kv_cursor *next = c->next;
		mdb_cursor_close(c->mc);
		c->mc = NULL;
		c->txn = NULL;
		c->prev = c->next = NULL;
		c = next;
	}
	txn->cursors = NULL;
	if (txn->kv->writer == txn) /* a write transaction, or any member of a group */
		txn->kv->writer = NULL;
}

int weft_kv_commit(struct weft_kv_txn *txn)
{
	if (txn == NULL)
		return WEFT_EINVAL;
	struct weft_kv *kv = txn->kv;
	int err = 0;
	kv_txn_end(txn);
	if (txn->failed != 0) {
		/* Already logged by the put/del that failed; keep the
		 * transaction all or nothing. */
		mdb_txn_abort(txn->txn);
		err = txn->failed;
	} else {
		int rc = mdb_txn_commit(txn->txn); /* frees the txn even on failure */
		if (rc != 0) {
			err = kv_fail(kv, "kv.commit", rc);
			if (kv->group)
				kv->group_failed = err; /* LMDB leaves the parent unusable */
		}
	}
	free(txn);
	return err;
}

void weft_kv_abort(struct weft_kv_txn *txn)
{
	if (txn == NULL)
		return;
	kv_txn_end(txn);
	mdb_txn_abort(txn->txn);
	free(txn);
}

int weft_kv_get(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen,
		const void **val, size_t *vlen)
{
	if (klen == 0)
		return kv_misuse(txn->kv, "kv.get", WEFT_EINVAL, "empty key");
	MDB_val k = { .mv_size = klen, .mv_data = (void *)key };
	MDB_val v;
	int rc = mdb_get(txn->txn, dbi, &k, &v);
	if (rc == MDB_NOTFOUND)
		return WEFT_NOTFOUND;
	if (rc != 0)
		return kv_fail(txn->kv, "kv.get", rc);
	if (val)
		*val = v.mv_data;
	if (vlen)
		*vlen = v.mv_size;
	return 0;
}

/* Records the first write failure so that commit cannot publish half a
 * transaction. */
static int kv_write_failed(struct weft_kv_txn *txn, const char *event, int rc)
{
	int err = kv_fail(txn->kv, event, rc);
	if (txn->failed == 0)
		txn->failed = err;
	return err;
}

static int kv_check_write(struct weft_kv_txn *txn, const char *event, size_t klen)
{
	int err = 0;
	if (!txn->write)
		err = kv_misuse(txn->kv, event, WEFT_ESTATE, "write in a read-only transaction");
	else if (klen == 0)
		err = kv_misuse(txn->kv, event, WEFT_EINVAL, "empty key");
	if (err != 0 && txn->write && txn->failed == 0)
		txn->failed = err;
	return err;
}

int weft_kv_put(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen,
		const void *val, size_t vlen)
{
	int err = kv_check_write(txn, "kv.put", klen);
	if (err != 0)
		return err;
	MDB_val k = { .mv_size = klen, .mv_data = (void *)key };
	MDB_val v = { .mv_size = vlen, .mv_data = (void *)val };
	int rc = mdb_put(txn->txn, dbi, &k, &v, 0);
	if (rc != 0)
		return kv_write_failed(txn, "kv.put", rc);
	return 0;
}

int weft_kv_del(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen)
{
	int err = kv_check_write(txn, "kv.del", klen);
	if (err != 0)
		return err;
	MDB_val k = { .mv_size = klen, .mv_data = (void *)key };
	int rc = mdb_del(txn->txn, dbi, &k, NULL);
	if (rc == MDB_NOTFOUND)
		return WEFT_NOTFOUND;
	if (rc != 0)
		return kv_write_failed(txn, "kv.del", rc);
	return 0;
}

int weft_kv_count(struct weft_kv_txn *txn, weft_kv_dbi dbi, size_t *out)
{
	MDB_stat st;
	int rc = mdb_stat(txn->txn, dbi, &st);
	if (rc != 0)
		return kv_fail(txn->kv, "kv.count", rc);
	*out = st.ms_entries;
	return 0;
}

int weft_kv_cursor_open(struct weft_kv_txn *txn, weft_kv_dbi dbi, struct weft_kv_cursor **out)
{
	*out = NULL;
	MDB_cursor *mc;
	int rc = mdb_cursor_open(txn->txn, dbi, &mc);
	if (rc != 0)
		return kv_fail(txn->kv, "kv.cursor", rc);
	struct weft_kv_cursor *c = kv_alloc(sizeof(*c));
	c->kv = txn->kv;
	c->txn = txn;
	c->mc = mc;
	c->dbi = dbi;
	c->state = KV_CURSOR_UNSET;
	c->dkey = kv_alloc(txn->kv->key_max);
	c->next = txn->cursors;
	if (txn->cursors != NULL)
		txn->cursors->prev = c;
	txn->cursors = c;
	*out = c;
	return 0;
}

/* Runs one positioning operation and reports the pair. */
static int kv_cursor_get(struct weft_kv_cursor *c, MDB_val *key, MDB_cursor_op op,
			 const void **k, size_t *kl, const void **v, size_t *vl)
{
	MDB_val val;
	int rc = mdb_cursor_get(c->mc, key, &val, op);
	if (rc == MDB_NOTFOUND) {
		c->state = KV_CURSOR_END;
		return WEFT_NOTFOUND;
	}
	if (rc != 0)
		return kv_fail(c->kv, "kv.cursor", rc);
	c->state = KV_CURSOR_AT;
	if (k)
		*k = key->mv_data;
	if (kl)
		*kl = key->mv_size;
	if (v)
		*v = val.mv_data;
	if (vl)
		*vl = val.mv_size;
	return 0;
}

int weft_kv_cursor_seek(struct weft_kv_cursor *c, const void *key, size_t klen,
			const void **k, size_t *kl, const void **v, size_t *vl)
{
	if (c->txn == NULL)
		return kv_misuse(c->kv, "kv.cursor", WEFT_ESTATE, "cursor used after its transaction ended");
	MDB_val mk = { .mv_size = klen, .mv_data = (void *)key };
	return kv_cursor_get(c, &mk, klen == 0 ? MDB_FIRST : MDB_SET_RANGE, k, kl, v, vl);
}

int weft_kv_cursor_next(struct weft_kv_cursor *c,
			const void **k, size_t *kl, const void **v, size_t *vl)
{
	if (c->txn == NULL)
		return kv_misuse(c->kv, "kv.cursor", WEFT_ESTATE, "cursor used after its transaction ended");
	MDB_val mk = { 0 };
	switch (c->state) {
	case KV_CURSOR_UNSET:
		return kv_cursor_get(c, &mk, MDB_FIRST, k, kl, v, vl);
	case KV_CURSOR_AT:
		return kv_cursor_get(c, &mk, MDB_NEXT, k, kl, v, vl);
	case KV_CURSOR_DELETED:
		/* The removed key is gone, so the first key >= it is the one
		 * after it, whatever LMDB's cursor did while rebalancing. */
		mk.mv_size = c->dklen;
		mk.mv_data = c->dkey;
		return kv_cursor_get(c, &mk, MDB_SET_RANGE, k, kl, v, vl);
	case KV_CURSOR_END:
		return WEFT_NOTFOUND;
	}
	return WEFT_EINVAL;
}

int weft_kv_cursor_del(struct weft_kv_cursor *c)
{
	if (c->txn == NULL)
		return kv_misuse(c->kv, "kv.cursor", WEFT_ESTATE, "cursor used after its transaction ended");
	struct weft_kv_txn *txn = c->txn;
	if (!txn->write)
		return kv_misuse(txn->kv, "kv.cursor_del", WEFT_ESTATE, "write in a read-only transaction");
	if (c->state != KV_CURSOR_AT)
		return kv_misuse(txn->kv, "kv.cursor_del", WEFT_ESTATE, "cursor is not on a pair");
	MDB_val key, val;
	int rc = mdb_cursor_get(c->mc, &key, &val, MDB_GET_CURRENT);
	if (rc != 0)
		return kv_write_failed(txn, "kv.cursor_del", rc);
	if (key.mv_size > txn->kv->key_max)
		abort(); /* LMDB never stores such a key */
	/* Copy before deleting: key points into the page being changed. */
	memcpy(c->dkey, key.mv_data, key.mv_size);
	c->dklen = key.mv_size;
	rc = mdb_cursor_del(c->mc, 0);
	if (rc != 0)
		return kv_write_failed(txn, "kv.cursor_del", rc);
	c->state = KV_CURSOR_DELETED;
	return 0;
}

void weft_kv_cursor_close(struct weft_kv_cursor *c)
{
	if (c == NULL)
		return;
	if (c->txn != NULL) {
		if (c->prev != NULL)
			c->prev->next = c->next;
		else
			c->txn->cursors = c->next;
		if (c->next != NULL)
			c->next->prev = c->prev;
		mdb_cursor_close(c->mc);
	}
	free(c->dkey);
	free(c);
}

int weft_kv_scan(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *from, size_t flen, const void *to,
		 size_t tlen, size_t strip, weft_kv_scan_fn fn, void *arg)
{
	struct weft_kv_cursor *c;
	int rc = weft_kv_cursor_open(txn, dbi, &c);
	if (rc)
		return rc;
	const void *k = NULL, *v = NULL;
	size_t kl = 0, vl = 0;
	for (rc = weft_kv_cursor_seek(c, from, flen, &k, &kl, &v, &vl); rc == 0;
	     rc = weft_kv_cursor_next(c, &k, &kl, &v, &vl)) {
		if (to) {
			int cmp = memcmp(k, to, kl < tlen ? kl : tlen);
			if (cmp > 0 || (cmp == 0 && kl >= tlen))
				break;
		}
		if (kl < strip)
			continue;
		int r = fn(arg, (const uint8_t *)k + strip, kl - strip, v, vl);
		if (r != 0) {
			rc = r < 0 ? r : 0;
			break;
		}
	}
	weft_kv_cursor_close(c);
	return rc == WEFT_NOTFOUND ? 0 : rc;
}
