/* store.h - the chunk store: shares of encrypted chunks by (CID, share
 * index), with reference counts for dedup and incremental garbage
 * collection, in LMDB named databases.
 *
 * A share is the bytes of one erasure-coded share of an encrypted chunk
 * (share index 0 under plain replication), kept with metadata: its length,
 * the share's Merkle root or digest as given by the caller, when it was
 * stored and when it was last audited.
 *
 * References: a file (any 32-byte owner/file id, normally the manifest
 * root) references the CIDs of its chunks.  A CID's count is the number of
 * distinct files referencing it; referencing the same (file, CID) again
 * changes nothing.  A CID whose count reaches 0 enters the GC queue, due
 * gc_delay_ms later; weft_store_gc_step() frees due CIDs (their shares and
 * their record) a bounded amount at a time.  Referencing a queued CID takes
 * it out of the queue, so GC never frees a referenced CID.  Dropping a file
 * (weft_store_unref) only marks it; weft_store_unref_step() removes its
 * references in bounded batches, one transaction each, and resumes after a
 * crash from the mark.  The daemon calls both step functions between other
 * work.  Upload order: reference the CIDs first, then put their shares; a
 * share put for a CID nobody references is queued for GC at once.
 *
 * Invariants, true after every committed transaction and therefore after a
 * kill -9 at any point:
 *   - every reference (file, CID) has a file record and a CID record; a
 *     CID's count equals its number of references, a file's count its
 *     number of references;
 *   - every stored share has a CID record (referenced or queued);
 *   - a CID is in the GC queue if and only if its count is 0;
 *   - a file being dropped accepts no new references.
 * Every call that writes is one transaction: a failure (WEFT_EMAPFULL when
 * the map is full, WEFT_ENOSPC when the disk is) leaves nothing of it
 * visible.  Not thread-safe; one write transaction at a time per
 * environment (weft_kv's rule), so no store call may be made while the
 * caller holds a write transaction of the same environment. */
#ifndef WEFT_STORE_H
#define WEFT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/kv.h"
#include "weft/merkle.h"

/* A CID is the Merkle root of a blob (weft/merkle.h). */
#define WEFT_STORE_CID_LEN WEFT_MERKLE_HASH
#define WEFT_STORE_FILE_LEN 32
#define WEFT_STORE_ROOT_LEN 32
/* Map size of a store opened in its own environment when none is given. */
#define WEFT_STORE_DEFAULT_MAP_SIZE ((size_t)64 << 30)

struct weft_store;

struct weft_store_opts {
	/* How long a CID stays in the GC queue before gc_step may free it
	 * (a grace period in which a new reference keeps it). */
	uint64_t gc_delay_ms;
	/* Clock in Unix milliseconds for stored/audited times and GC due
	 * times; NULL means the real-time clock. */
	uint64_t (*now_ms)(void *arg);
	void *now_arg;
};

struct weft_store_meta {
	uint64_t length;     /* bytes of the share */
	uint64_t stored_ms;  /* when it was put (or last repaired) */
	uint64_t audited_ms; /* last weft_store_audited() time; 0 = never */
	uint8_t root[WEFT_STORE_ROOT_LEN];
};

struct weft_store_stats {
	uint64_t shares;    /* stored shares */
	uint64_t bytes;     /* their total length */
	uint64_t cids;      /* CID records: referenced or queued */
	uint64_t refs;      /* (file, CID) references */
	uint64_t files;     /* files with references, including those dropping */
	uint64_t dropping;  /* files whose references are being dropped */
	uint64_t gc_queued; /* CIDs with count 0 waiting for gc_step */
};

/* What one step did: items are references dropped (unref_step) or CIDs
 * freed (gc_step), bytes the share bytes freed; more is true when work is
 * left that a further call would do now. */
struct weft_store_progress {
	uint64_t items;
	uint64_t bytes;
	bool more;
};

/* Opens the store in the named databases "store.*" of kv (the node's
 * environment), creating them if needed.  kv must outlive the store.  opts
 * may be NULL (no GC delay, real-time clock).  On success *out is owned by
 * the caller: weft_store_close() it. */
int weft_store_open(struct weft_store **out, struct weft_kv *kv, const struct weft_store_opts *opts);
/* The same in an environment of its own in directory dir (which must
 * exist), closed with the store.  kvopts may be NULL; a map_size of 0 means
 * WEFT_STORE_DEFAULT_MAP_SIZE. */
int weft_store_open_dir(struct weft_store **out, const char *dir, const struct weft_kv_opts *kvopts,
			const struct weft_store_opts *opts);
void weft_store_close(struct weft_store *s); /* accepts NULL */
/* The environment the store lives in (for read transactions). */
struct weft_kv *weft_store_kv(struct weft_store *s);

/* Stores a share of len > 0 bytes.  Putting the same bytes and root again
 * is a no-op (0).  Different bytes or root for a stored (cid, share) give
 * WEFT_EEXIST unless repair is set, which replaces them (and resets
 * audited_ms). */
int weft_store_put(struct weft_store *s, const uint8_t cid[WEFT_STORE_CID_LEN], uint16_t share,
		   const void *data, size_t len, const uint8_t root[WEFT_STORE_ROOT_LEN], bool repair);
/* Removes a share (a bad one, before repair puts it again); its CID's
 * references are untouched.  0 or WEFT_NOTFOUND. */
int weft_store_del(struct weft_store *s, const uint8_t cid[WEFT_STORE_CID_LEN], uint16_t share);
/* 0 when the share is stored (and *meta filled if meta is not NULL), or
 * WEFT_NOTFOUND. */
int weft_store_has(struct weft_store *s, const uint8_t cid[WEFT_STORE_CID_LEN], uint16_t share,
		   struct weft_store_meta *meta);
/* Zero-copy read within txn (a transaction of weft_store_kv(s)): *data
 * points into the map and is valid until txn ends.  meta may be NULL.
 * 0 or WEFT_NOTFOUND. */
int weft_store_get(struct weft_store *s, struct weft_kv_txn *txn, const uint8_t cid[WEFT_STORE_CID_LEN],
		   uint16_t share, const void **data, size_t *len, struct weft_store_meta *meta);
/* Copying read: *data is malloc'd (the caller frees it), *len its length.
 * 0 or WEFT_NOTFOUND. */
int weft_store_copy(struct weft_store *s, const uint8_t cid[WEFT_STORE_CID_LEN], uint16_t share,
		    void **data, size_t *len);
/* Records that the share passed an audit at time when_ms.  0 or
 * WEFT_NOTFOUND. */
int weft_store_audited(struct weft_store *s, const uint8_t cid[WEFT_STORE_CID_LEN], uint16_t share,
		       uint64_t when_ms);

/* Calls fn for the stored shares in key order (CID, then share index),
 * starting at the first at or after (cid, share) (cid NULL: the first
 * share), within one read transaction.  fn returns 0 to go on, 1 to stop,
 * negative to abort with that code.  A random share for an audit: start at
 * a random CID and stop at the first (start again from NULL when none
 * follows).  0 or a negative code. */
typedef int (*weft_store_share_fn)(void *arg, const uint8_t cid[WEFT_STORE_CID_LEN], uint16_t share,
				   const struct weft_store_meta *meta);
int weft_store_shares(struct weft_store *s, const uint8_t cid[WEFT_STORE_CID_LEN], uint16_t share,
		      weft_store_share_fn fn, void *arg);

/* Adds the references (file, cids[i]) for i < n in one transaction (keep
 * n to tens of thousands: a file's millions of chunks take several calls);
 * references already there are skipped.  WEFT_ESTATE while file is being
 * dropped (finish with weft_store_unref_step first). */
int weft_store_ref(struct weft_store *s, const uint8_t file[WEFT_STORE_FILE_LEN],
		   const uint8_t (*cids)[WEFT_STORE_CID_LEN], size_t n);
/* Marks file for dropping: weft_store_unref_step removes its references.
 * 0 (also when already marked) or WEFT_NOTFOUND when file has none. */
int weft_store_unref(struct weft_store *s, const uint8_t file[WEFT_STORE_FILE_LEN]);
/* Removes up to max_refs references (0: no limit) of files marked for
 * dropping, in one transaction; CIDs whose count reaches 0 enter the GC queue, and a file
 * left without references is forgotten.  *prog (may be NULL) says what was
 * done. */
int weft_store_unref_step(struct weft_store *s, size_t max_refs, struct weft_store_progress *prog);
/* 0 when (file, cid) is a reference, or WEFT_NOTFOUND. */
int weft_store_has_ref(struct weft_store *s, const uint8_t file[WEFT_STORE_FILE_LEN],
		       const uint8_t cid[WEFT_STORE_CID_LEN]);
/* A CID's reference count into *count: 0 with *count set, or WEFT_NOTFOUND
 * when the store has no record of it (no references, no queued shares). */
int weft_store_count(struct weft_store *s, const uint8_t cid[WEFT_STORE_CID_LEN], uint64_t *count);

/* Frees due CIDs of the GC queue in one transaction: at least one when any
 * is due, then more while fewer than max_items CIDs and max_bytes share
 * bytes have been freed (0: no limit).  *prog (may be NULL) says what was
 * done. */
int weft_store_gc_step(struct weft_store *s, size_t max_items, uint64_t max_bytes,
		       struct weft_store_progress *prog);

int weft_store_stats(struct weft_store *s, struct weft_store_stats *out);

#endif
