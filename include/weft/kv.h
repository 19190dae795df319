/* kv.h - the LMDB wrapper: one environment, named databases, transactions.
 *
 * A thin layer that keeps LMDB's semantics (one write transaction at a time,
 * values returned by get/cursor point into the map and stay valid only until
 * the end of the transaction or the next write in it) and translates its
 * errors into weft codes: MDB_NOTFOUND is the normal result WEFT_NOTFOUND,
 * MDB_MAP_FULL is WEFT_EMAPFULL ("raise db.map_size"), ENOSPC/EFBIG/EDQUOT
 * are WEFT_ENOSPC, EACCES/EROFS are WEFT_EPERM.  A failed write or commit
 * leaves the database as it was before the transaction began: a transaction
 * is all or nothing.  The reason for a failure is logged once with the
 * path involved. */
#ifndef WEFT_KV_H
#define WEFT_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct weft_kv;
struct weft_kv_txn;
struct weft_kv_cursor;
typedef unsigned int weft_kv_dbi;

struct weft_kv_opts {
	size_t map_size;      /* bytes; 0 means the default (1 GiB) */
	unsigned int max_dbs; /* named databases; 0 means the default (64) */
	bool no_sync;         /* skip fsync on commit (simulator, benchmarks) */
};

struct weft_kv_stats {
	size_t map_size;      /* configured map size in bytes */
	size_t used_bytes;    /* pages in use times page size */
	size_t page_size;
	size_t entries;       /* entries in the main (unnamed) database */
	unsigned int readers; /* reader slots in use */
};

/* Opens (creating if needed) the environment in directory dir, which must
 * exist.  On success *out is owned by the caller: weft_kv_close() it. */
int weft_kv_open(struct weft_kv **out, const char *dir, const struct weft_kv_opts *opts);
void weft_kv_close(struct weft_kv *kv); /* accepts NULL */

/* Opens or creates the named database (in its own write transaction). */
int weft_kv_db(struct weft_kv *kv, const char *name, weft_kv_dbi *out);

int weft_kv_stats(struct weft_kv *kv, struct weft_kv_stats *out);
/* Free bytes on the filesystem holding the database (root's view when
 * running as root).  0 or an error. */
int weft_kv_free_bytes(const struct weft_kv *kv, uint64_t *out);
/* Below this much free space a failed write is "disk full", and a node
 * paused by a full store waits for at least this much before resuming. */
#define WEFT_KV_FULL_MARGIN ((uint64_t)1 << 20)

/* Begins a transaction; a write transaction must end in commit or abort. */
int weft_kv_begin(struct weft_kv *kv, bool write, struct weft_kv_txn **out);
/* Group commit.  Between weft_kv_group_begin and weft_kv_group_end every
 * transaction begun on kv (read or write, one at a time) is nested in one
 * group transaction: it sees the group's writes; committing it makes its
 * changes the group's (no disk write), aborting it drops them, and each
 * stays all or nothing.  weft_kv_group_end commits the group with one
 * fsync (commit true) or drops all of it: nothing of a group is durable
 * before it returns 0.  After a member's failed commit the group can only
 * be dropped (weft_kv_group_end then returns that error).  Begin a group
 * only with no transaction open; weft_kv_db is refused inside one. */
int weft_kv_group_begin(struct weft_kv *kv);
int weft_kv_group_end(struct weft_kv *kv, bool commit);
bool weft_kv_in_group(const struct weft_kv *kv);
/* Commits and frees txn (also when the commit fails). */
int weft_kv_commit(struct weft_kv_txn *txn);
void weft_kv_abort(struct weft_kv_txn *txn); /* accepts NULL */

/* 0 and *val, *vlen set (pointing into the map), or WEFT_NOTFOUND. */
int weft_kv_get(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen,
		const void **val, size_t *vlen);
int weft_kv_put(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen,
		const void *val, size_t vlen);
/* 0, or WEFT_NOTFOUND when the key was absent. */
int weft_kv_del(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *key, size_t klen);

/* Number of pairs in dbi as seen by txn (O(1): LMDB keeps the count). */
int weft_kv_count(struct weft_kv_txn *txn, weft_kv_dbi dbi, size_t *out);

/* Cursors iterate keys in byte order.  seek positions at the first key >=
 * key (klen 0: the first key); next moves on.  Both return 0 with the
 * current pair, or WEFT_NOTFOUND past the end.  del removes the current
 * pair; a following next returns the pair after it. */
int weft_kv_cursor_open(struct weft_kv_txn *txn, weft_kv_dbi dbi, struct weft_kv_cursor **out);
int weft_kv_cursor_seek(struct weft_kv_cursor *c, const void *key, size_t klen,
			const void **k, size_t *kl, const void **v, size_t *vl);
int weft_kv_cursor_next(struct weft_kv_cursor *c,
			const void **k, size_t *kl, const void **v, size_t *vl);
int weft_kv_cursor_del(struct weft_kv_cursor *c);
void weft_kv_cursor_close(struct weft_kv_cursor *c); /* accepts NULL */

/* Calls fn for every pair with from <= key < to in byte order (to NULL: no
 * upper bound), passing the key without its first `strip` bytes (hosts
 * that namespace keys with a prefix strip it).  fn returns 0 to go on, 1 to
 * stop, negative to abort with that code.  0 or a negative code. */
typedef int (*weft_kv_scan_fn)(void *arg, const void *key, size_t klen, const void *val, size_t vlen);
int weft_kv_scan(struct weft_kv_txn *txn, weft_kv_dbi dbi, const void *from, size_t flen, const void *to,
		 size_t tlen, size_t strip, weft_kv_scan_fn fn, void *arg);

#endif
