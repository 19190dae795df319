/* tests/unit/store_chunkstore.c - TAP tests for the chunk store
 * (storage/chunkstore.c): share round trips and idempotency, reference
 * counts and dedup, unref + GC (bounded, delayed, re-referenced), a 100k
 * reference drop interrupted and resumed, a full map, and kill -9 at random
 * points with the on-disk invariants checked after each reopen.
 *
 * The invariant checker reads the store's databases directly (the layout is
 * documented at the top of chunkstore.c), so it sees what a crash leaves
 * on disk rather than what the API chooses to report. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/kv.h"
#include "weft/store.h"
#include "../lib/testutil.h"
#include "../tap.h"

#define CID_LEN WEFT_STORE_CID_LEN

static uint64_t fake_now = 1000;

static uint64_t fake_clock(void *arg)
{
	return fake_now;
}

static const struct weft_store_opts fake_opts = {.now_ms = fake_clock};
static const struct weft_kv_opts fast_kv = {.no_sync = true};

/* Distinct pseudo-random 32-byte ids: CIDs under tag 'c', files under 'f'. */
static void id_of(uint8_t out[32], char tag, uint32_t i)
{
	uint8_t in[5] = {(uint8_t)tag};
	weft_be32_put(in + 1, i);
	crypto_generichash(out, 32, in, sizeof(in), NULL, 0);
}

static void cid_of(uint8_t out[CID_LEN], uint32_t i)
{
	id_of(out, 'c', i);
}

static void file_of(uint8_t out[WEFT_STORE_FILE_LEN], uint32_t i)
{
	id_of(out, 'f', i);
}

/* Share bytes for (chunk i, share j), version v. */
static void body_of(uint8_t *buf, size_t len, uint32_t i, uint16_t j, unsigned v)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = (uint8_t)(i * 131u + j * 17u + k + v * 7u);
}

static void root_of(uint8_t root[WEFT_STORE_ROOT_LEN], const uint8_t *buf, size_t len)
{
	crypto_generichash(root, WEFT_STORE_ROOT_LEN, buf, len, NULL, 0);
}

/* Puts share j of chunk i with len bytes of version v. */
static int put_share(struct weft_store *s, uint32_t i, uint16_t j, size_t len, unsigned v, bool repair)
{
	uint8_t cid[CID_LEN], root[WEFT_STORE_ROOT_LEN];
	uint8_t *buf = malloc(len ? len : 1);
	cid_of(cid, i);
	body_of(buf, len, i, j, v);
	root_of(root, buf, len);
	int rc = weft_store_put(s, cid, j, buf, len, root, repair);
	free(buf);
	return rc;
}

/* References chunks first..first+n-1 from file f, in one call. */
static int ref_range(struct weft_store *s, uint32_t f, uint32_t first, uint32_t n)
{
	uint8_t file[WEFT_STORE_FILE_LEN];
	uint8_t(*cids)[CID_LEN] = malloc((n ? n : 1) * sizeof(*cids));
	file_of(file, f);
	for (uint32_t k = 0; k < n; k++)
		cid_of(cids[k], first + k);
	int rc = weft_store_ref(s, file, (const uint8_t(*)[CID_LEN])cids, n);
	free(cids);
	return rc;
}

static int del_share(struct weft_store *s, uint32_t i, uint16_t j)
{
	uint8_t cid[CID_LEN];
	cid_of(cid, i);
	return weft_store_del(s, cid, j);
}

static int has_share(struct weft_store *s, uint32_t i, uint16_t j)
{
	uint8_t cid[CID_LEN];
	cid_of(cid, i);
	return weft_store_has(s, cid, j, NULL);
}

/* A CID's count, or -1 when the store has no record of it. */
static long long count_of(struct weft_store *s, uint32_t i)
{
	uint8_t cid[CID_LEN];
	uint64_t n;
	cid_of(cid, i);
	int rc = weft_store_count(s, cid, &n);
	return rc == 0 ? (long long)n : rc == WEFT_NOTFOUND ? -1 : rc;
}

static int unref_file(struct weft_store *s, uint32_t f)
{
	uint8_t file[WEFT_STORE_FILE_LEN];
	file_of(file, f);
	return weft_store_unref(s, file);
}

/* Runs unref_step / gc_step until no work is left; 0 or the error. */
static int drain(struct weft_store *s)
{
	struct weft_store_progress p;
	int rc;
	do
		rc = weft_store_unref_step(s, 1000, &p);
	while (rc == 0 && p.more);
	do
		rc = rc ? rc : weft_store_gc_step(s, 1000, 0, &p);
	while (rc == 0 && p.more);
	return rc;
}

/* ---- the invariant checker ---- */

static int cmp32(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

/* Reads every key of dbi into a malloc'd array of klen-byte keys; *n gets
 * the count.  Values are ignored.  NULL (with *n = 0) when empty. */
static uint8_t *all_keys(struct weft_kv_txn *txn, weft_kv_dbi dbi, size_t klen, size_t *n, const char **why)
{
	size_t cap = 0, got = 0;
	*n = 0;
	if (weft_kv_count(txn, dbi, &cap) != 0 || cap == 0)
		return NULL;
	uint8_t *keys = malloc(cap * klen);
	struct weft_kv_cursor *c;
	const void *k;
	size_t kl;
	if (weft_kv_cursor_open(txn, dbi, &c) != 0)
		abort();
	for (int rc = weft_kv_cursor_seek(c, NULL, 0, &k, &kl, NULL, NULL); rc == 0 && got < cap;
	     rc = weft_kv_cursor_next(c, &k, &kl, NULL, NULL)) {
		if (kl != klen)
			*why = "a key has the wrong size";
		else
			memcpy(keys + got++ * klen, k, klen);
	}
	weft_kv_cursor_close(c);
	*n = got;
	return keys;
}

/* Checks the invariants of store.h on the databases of kv; NULL when they
 * hold, else what is wrong. */
static const char *check_invariants(struct weft_kv *kv)
{
	weft_kv_dbi share, smeta, refs, cids, files, drops, gcq, meta;
	if (weft_kv_db(kv, "store.share", &share) || weft_kv_db(kv, "store.smeta", &smeta) ||
	    weft_kv_db(kv, "store.refs", &refs) || weft_kv_db(kv, "store.cids", &cids) ||
	    weft_kv_db(kv, "store.files", &files) || weft_kv_db(kv, "store.drops", &drops) ||
	    weft_kv_db(kv, "store.gcq", &gcq) || weft_kv_db(kv, "store.meta", &meta))
		return "cannot open the databases";
	struct weft_kv_txn *txn;
	if (weft_kv_begin(kv, false, &txn) != 0)
		return "cannot begin a read transaction";
	const char *why = NULL;
	const void *v;
	size_t vl;

	/* references against file records: both sorted by file */
	size_t nref, nfile;
	uint8_t *rk = all_keys(txn, refs, 64, &nref, &why);
	uint8_t *fk = all_keys(txn, files, 32, &nfile, &why);
	size_t r = 0;
	for (size_t f = 0; f < nfile && !why; f++) {
		if (r < nref && memcmp(rk + r * 64, fk + f * 32, 32) < 0)
			why = "a reference without its file record";
		uint64_t n = 0;
		while (r < nref && memcmp(rk + r * 64, fk + f * 32, 32) == 0)
			n++, r++;
		if (weft_kv_get(txn, files, fk + f * 32, 32, &v, &vl) != 0 || vl != 8 || weft_be64_get(v) != n)
			why = "a file's count differs from its references";
		else if (n == 0)
			why = "a file record without references";
	}
	if (!why && r != nref)
		why = "a reference without its file record";

	/* every drop mark has a file record */
	size_t ndrop;
	uint8_t *dk = all_keys(txn, drops, 32, &ndrop, &why);
	for (size_t d = 0; d < ndrop && !why; d++)
		if (weft_kv_get(txn, files, dk + d * 32, 32, NULL, NULL) != 0)
			why = "a drop mark without its file record";

	/* CID records against references (sorted by CID) and the GC queue */
	uint8_t *rc_cids = malloc((nref ? nref : 1) * 32);
	for (size_t i = 0; i < nref; i++)
		memcpy(rc_cids + i * 32, rk + i * 64 + 32, 32);
	qsort(rc_cids, nref, 32, cmp32);
	size_t ncid, nq;
	uint8_t *ck = all_keys(txn, cids, 32, &ncid, &why);
	uint8_t *qk = all_keys(txn, gcq, 40, &nq, &why);
	size_t zero = 0;
	r = 0;
	for (size_t c = 0; c < ncid && !why; c++) {
		const uint8_t *cid = ck + c * 32;
		if (r < nref && memcmp(rc_cids + r * 32, cid, 32) < 0)
			why = "a reference to a CID without a record";
		uint64_t n = 0;
		while (r < nref && memcmp(rc_cids + r * 32, cid, 32) == 0)
			n++, r++;
		if (weft_kv_get(txn, cids, cid, 32, &v, &vl) != 0 || vl != 16) {
			why = "a CID record is unreadable";
			break;
		}
		uint64_t count = weft_be64_get(v), due = weft_be64_get((const uint8_t *)v + 8);
		if (count != n)
			why = "a CID's count differs from its number of references";
		if (count == 0) {
			uint8_t key[40];
			weft_be64_put(key, due);
			memcpy(key + 8, cid, 32);
			zero++;
			if (weft_kv_get(txn, gcq, key, sizeof(key), NULL, NULL) != 0)
				why = "a CID with count 0 is not in the GC queue";
		}
	}
	if (!why && r != nref)
		why = "a reference to a CID without a record";
	if (!why && nq != zero)
		why = "a queued CID has a count above 0 (or no record)";

	/* shares: bytes and metadata side by side, each with a CID record */
	size_t nshare, nsmeta;
	uint8_t *sk = all_keys(txn, share, 34, &nshare, &why);
	uint8_t *mk = all_keys(txn, smeta, 34, &nsmeta, &why);
	uint64_t bytes = 0;
	if (!why && (nshare != nsmeta || (nshare && memcmp(sk, mk, nshare * 34) != 0)))
		why = "shares and share metadata differ";
	for (size_t i = 0; i < nshare && !why; i++) {
		size_t len = 0;
		if (weft_kv_get(txn, share, sk + i * 34, 34, NULL, &len) != 0 ||
		    weft_kv_get(txn, smeta, sk + i * 34, 34, &v, &vl) != 0 || vl != 56 || weft_be64_get(v) != len)
			why = "a share's length differs from its metadata";
		else if (weft_kv_get(txn, cids, sk + i * 34, 32, NULL, NULL) != 0)
			why = "a share without a CID record";
		bytes += len;
	}
	if (!why && (weft_kv_get(txn, meta, "bytes", 5, &v, &vl) != 0 || vl != 8 || weft_be64_get(v) != bytes))
		why = "the byte total differs from the shares";
	weft_kv_abort(txn);
	free(rk), free(fk), free(dk), free(rc_cids), free(ck), free(qk), free(sk), free(mk);
	return why;
}

static void ok_invariants(struct weft_store *s, const char *when)
{
	const char *why = check_invariants(weft_store_kv(s));
	ok(why == NULL, "invariants hold %s%s%s", when, why ? ": " : "", why ? why : "");
}

/* ---- shares ---- */

struct walk {
	int n, out_of_order;
	uint8_t last[CID_LEN + 2];
	uint8_t first[CID_LEN];
	uint16_t first_share;
};

static int walk_fn(void *arg, const uint8_t cid[CID_LEN], uint16_t share, const struct weft_store_meta *m)
{
	struct walk *w = arg;
	uint8_t key[CID_LEN + 2];
	memcpy(key, cid, CID_LEN);
	weft_be16_put(key + CID_LEN, share);
	if (w->n > 0 && memcmp(key, w->last, sizeof(key)) <= 0)
		w->out_of_order++;
	if (w->n == 0) {
		memcpy(w->first, cid, CID_LEN);
		w->first_share = share;
	}
	memcpy(w->last, key, sizeof(key));
	w->n++;
	return 0;
}

static int first_fn(void *arg, const uint8_t cid[CID_LEN], uint16_t share, const struct weft_store_meta *m)
{
	walk_fn(arg, cid, share, m);
	return 1;
}

static void test_shares(void)
{
	char *dir = tu_tmpdir("store");
	struct weft_store *s;
	struct weft_store_meta m;
	uint8_t cid[CID_LEN], root[32], buf[5000];
	const void *data;
	size_t len;
	void *copy;
	struct weft_store_stats st;

	fake_now = 1000;
	is_int(weft_store_open_dir(&s, dir, &fast_kv, &fake_opts), 0, "open a store in its own environment");
	cid_of(cid, 1);
	body_of(buf, sizeof(buf), 1, 0, 0);
	root_of(root, buf, sizeof(buf));
	is_int(weft_store_has(s, cid, 0, NULL), WEFT_NOTFOUND, "an absent share is WEFT_NOTFOUND");
	is_int(weft_store_put(s, cid, 0, buf, sizeof(buf), root, false), 0, "put share 0 of a chunk");
	is_int(weft_store_has(s, cid, 0, &m), 0, "has it");
	ok(m.length == sizeof(buf) && m.stored_ms == 1000 && m.audited_ms == 0 && memcmp(m.root, root, 32) == 0,
	   "metadata: length, root, stored time, never audited");
	is_int(weft_store_has(s, cid, 1, NULL), WEFT_NOTFOUND, "another share index of the same CID is absent");
	is_int(weft_store_copy(s, cid, 0, &copy, &len), 0, "copy it out");
	ok(len == sizeof(buf) && memcmp(copy, buf, len) == 0, "the copy has the bytes");
	free(copy);
	struct weft_kv_txn *txn;
	is_int(weft_kv_begin(weft_store_kv(s), false, &txn), 0, "begin a read transaction");
	memset(&m, 0, sizeof(m));
	is_int(weft_store_get(s, txn, cid, 0, &data, &len, &m), 0, "zero-copy get within it");
	ok(len == sizeof(buf) && memcmp(data, buf, len) == 0 && m.length == len, "it points at the bytes");
	is_int(weft_store_get(s, txn, cid, 7, &data, &len, NULL), WEFT_NOTFOUND, "zero-copy get of an absent share");
	weft_kv_abort(txn);

	/* idempotency and refusals */
	fake_now = 2000;
	is_int(weft_store_put(s, cid, 0, buf, sizeof(buf), root, false), 0, "the same put again is a no-op");
	weft_store_stats(s, &st);
	ok(st.shares == 1 && st.bytes == sizeof(buf), "still one share, %llu bytes", (unsigned long long)st.bytes);
	weft_store_has(s, cid, 0, &m);
	is_int((long long)m.stored_ms, 1000, "stored time unchanged by the no-op");
	uint8_t other[3000];
	body_of(other, sizeof(other), 1, 0, 1);
	is_int(weft_store_put(s, cid, 0, other, sizeof(other), root, false), WEFT_EEXIST,
	       "a different body for the same (CID, share) is refused");
	uint8_t root2[32];
	root_of(root2, other, sizeof(other));
	is_int(weft_store_put(s, cid, 0, buf, sizeof(buf), root2, false), WEFT_EEXIST, "so is a different root");
	is_int(weft_store_copy(s, cid, 0, &copy, &len), 0, "copy after the refusals");
	ok(len == sizeof(buf) && memcmp(copy, buf, len) == 0, "the stored bytes are the first ones");
	free(copy);
	is_int(weft_store_audited(s, cid, 0, 1500), 0, "record an audit");
	weft_store_has(s, cid, 0, &m);
	is_int((long long)m.audited_ms, 1500, "audited time recorded");
	is_int(weft_store_put(s, cid, 0, other, sizeof(other), root2, true), 0, "a repair replaces the body");
	weft_store_has(s, cid, 0, &m);
	ok(m.length == sizeof(other) && m.stored_ms == 2000 && m.audited_ms == 0 && memcmp(m.root, root2, 32) == 0,
	   "repair updates length, root and stored time and clears the audit time");
	weft_store_stats(s, &st);
	is_int((long long)st.bytes, (long long)sizeof(other), "byte total follows the repair");
	is_int(weft_store_put(s, cid, 3, buf, 0, root, false), WEFT_EINVAL, "an empty share is refused");
	is_int(weft_store_audited(s, cid, 9, 1), WEFT_NOTFOUND, "audit of an absent share is WEFT_NOTFOUND");

	/* delete for repair */
	is_int(weft_store_del(s, cid, 0), 0, "delete the share");
	is_int(weft_store_has(s, cid, 0, NULL), WEFT_NOTFOUND, "it is gone");
	is_int(weft_store_del(s, cid, 0), WEFT_NOTFOUND, "a second delete is WEFT_NOTFOUND");
	weft_store_stats(s, &st);
	ok(st.shares == 0 && st.bytes == 0, "no shares, no bytes");

	/* iteration in key order, and a random pick */
	int bad = 0;
	for (uint32_t i = 0; i < 50; i++)
		for (uint16_t j = 0; j < 3; j++)
			bad += put_share(s, 100 + i, j, 100 + i, 0, false) != 0;
	is_int(bad, 0, "put 150 shares");
	struct walk w = {0};
	is_int(weft_store_shares(s, NULL, 0, walk_fn, &w), 0, "walk all shares");
	ok(w.n == 150 && w.out_of_order == 0, "150 shares in key order (%d, %d out of order)", w.n, w.out_of_order);
	uint8_t rnd[CID_LEN];
	randombytes_buf(rnd, sizeof(rnd));
	memset(&w, 0, sizeof(w));
	is_int(weft_store_shares(s, rnd, 0, first_fn, &w), 0, "walk from a random key");
	if (w.n == 0)
		weft_store_shares(s, NULL, 0, first_fn, &w);
	ok(w.n == 1 && weft_store_has(s, w.first, w.first_share, NULL) == 0, "picked one stored share");
	ok_invariants(s, "after share operations (all shares unreferenced, queued)");
	weft_store_stats(s, &st);
	ok(st.cids == 51 && st.gc_queued == 51 && st.refs == 0, "unreferenced shares' CIDs are queued for GC");
	weft_store_close(s);
	weft_store_close(NULL);

	is_int(weft_store_open_dir(&s, dir, &fast_kv, &fake_opts), 0, "reopen");
	memset(&w, 0, sizeof(w));
	weft_store_shares(s, NULL, 0, walk_fn, &w);
	is_int(w.n, 150, "all shares are there after reopen");
	is_int(weft_store_copy(s, cid, 0, &copy, &len), WEFT_NOTFOUND, "the deleted one is still gone");
	ok_invariants(s, "after reopen");
	weft_store_close(s);
	tu_rmtree(dir);
	free(dir);
}

/* ---- references and GC ---- */

static void test_refs_gc(void)
{
	char *dir = tu_tmpdir("store");
	struct weft_kv *kv;
	struct weft_store *s;
	struct weft_store_stats st;
	struct weft_store_progress p;
	weft_kv_dbi other;

	/* inside a node's environment, beside its own databases */
	fake_now = 5000;
	is_int(weft_kv_open(&kv, dir, &fast_kv), 0, "open a node environment");
	is_int(weft_kv_db(kv, "meta", &other), 0, "with a database of its own");
	is_int(weft_store_open(&s, kv, &fake_opts), 0, "open the store in it");

	/* file 1 references chunks 0..9 and stores 2 shares each */
	is_int(ref_range(s, 1, 0, 10), 0, "file 1 references 10 chunks");
	int bad = 0;
	for (uint32_t i = 0; i < 10; i++)
		for (uint16_t j = 0; j < 2; j++)
			bad += put_share(s, i, j, 1000, 0, false) != 0;
	is_int(bad, 0, "put their 20 shares");
	weft_store_stats(s, &st);
	uint64_t bytes1 = st.bytes;
	ok(st.files == 1 && st.refs == 10 && st.cids == 10 && st.gc_queued == 0 && bytes1 == 20000,
	   "1 file, 10 refs, 10 CIDs, none queued, 20000 bytes");
	is_int(ref_range(s, 1, 0, 10), 0, "the same references again");
	weft_store_stats(s, &st);
	ok(st.refs == 10 && count_of(s, 3) == 1, "are idempotent (count 1)");

	/* file 2 has the same chunks: dedup */
	is_int(ref_range(s, 2, 0, 10), 0, "file 2 references the same 10 chunks");
	bad = 0;
	for (uint32_t i = 0; i < 10; i++)
		for (uint16_t j = 0; j < 2; j++)
			bad += put_share(s, i, j, 1000, 0, false) != 0;
	is_int(bad, 0, "and puts the same shares");
	weft_store_stats(s, &st);
	ok(st.bytes == bytes1 && st.shares == 20, "the second file adds no bytes");
	ok(st.files == 2 && st.refs == 20 && count_of(s, 0) == 2 && count_of(s, 9) == 2, "counts are 2");

	/* file 3 overlaps on chunks 5..14 */
	is_int(ref_range(s, 3, 5, 10), 0, "file 3 references chunks 5..14");
	bad = 0;
	for (uint32_t i = 10; i < 15; i++)
		bad += put_share(s, i, 0, 500, 0, false) != 0;
	is_int(bad, 0, "and puts one share of each new chunk");
	ok(count_of(s, 4) == 2 && count_of(s, 5) == 3 && count_of(s, 14) == 1, "counts 2, 3, 1 where expected");
	uint8_t f[32], c[32];
	file_of(f, 3);
	cid_of(c, 7);
	is_int(weft_store_has_ref(s, f, c), 0, "has_ref (3, 7)");
	cid_of(c, 2);
	is_int(weft_store_has_ref(s, f, c), WEFT_NOTFOUND, "no ref (3, 2)");
	ok_invariants(s, "with three overlapping files");

	/* unref file 1: nothing becomes free */
	is_int(unref_file(s, 1), 0, "unref file 1");
	is_int(unref_file(s, 1), 0, "unref again is idempotent");
	is_int(ref_range(s, 1, 20, 1), WEFT_ESTATE, "a dropping file accepts no new references");
	weft_store_stats(s, &st);
	is_int((long long)st.dropping, 1, "one file dropping");
	is_int(weft_store_unref_step(s, 0, &p), 0, "unref step");
	ok(p.items == 10 && !p.more, "dropped its 10 references");
	weft_store_stats(s, &st);
	ok(st.files == 2 && st.dropping == 0 && st.refs == 20 && st.gc_queued == 0, "file 1 is gone, nothing queued");
	is_int(unref_file(s, 1), WEFT_NOTFOUND, "unref of an unknown file is WEFT_NOTFOUND");

	/* unref file 2: chunks 0..4 go to the queue, 5..9 stay (file 3) */
	is_int(unref_file(s, 2), 0, "unref file 2");
	is_int(weft_store_unref_step(s, 0, &p), 0, "unref step");
	weft_store_stats(s, &st);
	ok(st.gc_queued == 5 && count_of(s, 0) == 0 && count_of(s, 5) == 1, "chunks 0..4 queued with count 0");
	ok_invariants(s, "with 5 CIDs queued");

	/* re-reference chunk 2 before GC runs */
	is_int(ref_range(s, 4, 2, 1), 0, "file 4 references chunk 2 again");
	weft_store_stats(s, &st);
	ok(st.gc_queued == 4 && count_of(s, 2) == 1, "chunk 2 leaves the GC queue");
	is_int(weft_store_gc_step(s, 0, 0, &p), 0, "gc step");
	ok(p.items == 4 && p.bytes == 8000 && !p.more, "freed 4 CIDs, 8000 bytes");
	bad = 0;
	for (uint32_t i = 0; i < 15; i++) {
		bool want = i == 2 || i >= 5;
		bad += (has_share(s, i, 0) == 0) != want;
		bad += (count_of(s, i) >= 0) != want;
	}
	is_int(bad, 0, "exactly chunks 0, 1, 3, 4 are freed; 2 and 5..14 kept");
	ok(has_share(s, 2, 1) == 0, "the re-referenced chunk kept all its shares");
	weft_store_stats(s, &st);
	ok(st.shares == 17 && st.bytes == 17 * 1000 - 5 * 500 && st.cids == 11, "stats after GC: %llu shares",
	   (unsigned long long)st.shares);
	ok_invariants(s, "after GC");

	/* bounded steps */
	is_int(unref_file(s, 3), 0, "unref file 3");
	is_int(weft_store_unref_step(s, 4, &p), 0, "unref step of 4");
	ok(p.items == 4 && p.more, "4 references dropped, more to do");
	is_int(weft_store_unref_step(s, 4, &p), 0, "again");
	ok(p.items == 4 && p.more, "4 more");
	is_int(weft_store_unref_step(s, 4, &p), 0, "again");
	ok(p.items == 2 && !p.more, "the last 2");
	weft_store_stats(s, &st);
	is_int((long long)st.gc_queued, 10, "chunks 5..14 queued");
	is_int(weft_store_gc_step(s, 3, 0, &p), 0, "gc step of 3 CIDs");
	ok(p.items == 3 && p.more, "freed 3, more due");
	is_int(weft_store_gc_step(s, 0, 1, &p), 0, "gc step of 1 byte");
	ok(p.items == 1 && p.bytes > 0 && p.more, "frees at least one CID");
	is_int(weft_store_gc_step(s, 0, 0, &p), 0, "gc step without limits");
	ok(p.items == 6 && !p.more, "frees the other 6");
	weft_store_stats(s, &st);
	ok(st.gc_queued == 0 && st.cids == 1 && st.shares == 2, "only chunk 2 is left");
	ok_invariants(s, "after bounded steps");
	weft_store_close(s);

	/* a GC delay and an unreferenced put */
	struct weft_store_opts delayed = fake_opts;
	delayed.gc_delay_ms = 60000;
	is_int(weft_store_open(&s, kv, &delayed), 0, "reopen with a 60 s GC delay");
	is_int(put_share(s, 50, 0, 100, 0, false), 0, "put a share nobody references");
	is_int(count_of(s, 50), 0, "its CID has count 0");
	is_int(weft_store_gc_step(s, 0, 0, &p), 0, "gc step before the delay");
	ok(p.items == 0 && !p.more && has_share(s, 50, 0) == 0, "nothing is due yet");
	fake_now += 60000;
	is_int(weft_store_gc_step(s, 0, 0, &p), 0, "gc step after the delay");
	ok(p.items == 1 && has_share(s, 50, 0) == WEFT_NOTFOUND, "the orphan share is freed");

	/* the checker is not vacuous: remove a reference behind the store's back */
	weft_kv_dbi refs;
	struct weft_kv_txn *txn;
	uint8_t key[64];
	file_of(key, 4);
	cid_of(key + 32, 2);
	ok(weft_kv_db(kv, "store.refs", &refs) == 0 && weft_kv_begin(kv, true, &txn) == 0 &&
		   weft_kv_del(txn, refs, key, sizeof(key)) == 0 && weft_kv_commit(txn) == 0,
	   "delete reference (4, 2) directly");
	ok(check_invariants(kv) != NULL, "the invariant checker notices");
	weft_store_close(s);
	weft_kv_close(kv);
	tu_rmtree(dir);
	free(dir);
}

/* ---- a large drop, interrupted ---- */

#define BIG 100000u
#define SHARED 1000u

static void test_big_unref(void)
{
	char *dir = tu_tmpdir("store");
	struct weft_store *s;
	struct weft_store_stats st;
	struct weft_store_progress p;
	int bad = 0;

	is_int(weft_store_open_dir(&s, dir, &fast_kv, &fake_opts), 0, "open");
	for (uint32_t b = 0; b < BIG && !bad; b += 10000)
		bad += ref_range(s, 1, b, 10000) != 0;
	is_int(bad, 0, "file 1 references %u chunks (10 transactions)", BIG);
	is_int(ref_range(s, 2, BIG - SHARED, SHARED), 0, "file 2 references the last %u of them", SHARED);
	for (uint32_t i = 0; i < BIG; i += 100)
		bad += put_share(s, i, 0, 64, 0, false) != 0;
	is_int(bad, 0, "put a share of every 100th chunk");
	weft_store_stats(s, &st);
	ok(st.refs == BIG + SHARED && st.cids == BIG && st.files == 2, "%llu refs, %llu CIDs",
	   (unsigned long long)st.refs, (unsigned long long)st.cids);

	is_int(unref_file(s, 1), 0, "unref file 1");
	is_int(weft_store_unref_step(s, 30000, &p), 0, "first batch of 30000");
	ok(p.items == 30000 && p.more, "30000 dropped, more to do");
	weft_store_close(s); /* the crash: the rest of the drop never ran */

	is_int(weft_store_open_dir(&s, dir, &fast_kv, &fake_opts), 0, "reopen after the interruption");
	weft_store_stats(s, &st);
	/* references drop in CID order, so some shared chunks went first */
	uint64_t shared_left = 0;
	for (uint32_t i = BIG - SHARED; i < BIG; i++)
		shared_left += count_of(s, i) == 2;
	ok(st.dropping == 1 && st.refs == BIG + SHARED - 30000 && st.gc_queued == 30000 - (SHARED - shared_left),
	   "the drop mark survived; %llu refs left, %llu queued", (unsigned long long)st.refs,
	   (unsigned long long)st.gc_queued);
	ok_invariants(s, "between batches");
	is_int(ref_range(s, 1, 0, 1), WEFT_ESTATE, "the file still refuses new references");
	int steps = 0;
	do {
		bad += weft_store_unref_step(s, 30000, &p) != 0;
		steps++;
	} while (p.more && !bad);
	ok(!bad && steps == 3, "the drop finished in %d more steps", steps);
	weft_store_stats(s, &st);
	ok(st.dropping == 0 && st.files == 1 && st.refs == SHARED && st.gc_queued == BIG - SHARED,
	   "file 2's references remain; %llu CIDs queued", (unsigned long long)st.gc_queued);
	ok(count_of(s, BIG - 1) == 1 && count_of(s, BIG - SHARED) == 1 && count_of(s, 0) == 0,
	   "shared chunks have count 1, the others 0");
	ok_invariants(s, "after the drop");
	uint64_t freed = 0;
	do {
		bad += weft_store_gc_step(s, 20000, 0, &p) != 0;
		freed += p.items;
	} while (p.more && !bad);
	weft_store_stats(s, &st);
	ok(!bad && freed == BIG - SHARED && st.cids == SHARED && st.shares == SHARED / 100,
	   "GC freed %llu CIDs; %llu shares left", (unsigned long long)freed, (unsigned long long)st.shares);
	ok_invariants(s, "after GC");
	weft_store_close(s);
	tu_rmtree(dir);
	free(dir);
}

/* ---- a full map ---- */

static void test_map_full(void)
{
	char *dir = tu_tmpdir("store");
	struct weft_store *s;
	struct weft_store_stats st;
	struct weft_kv_opts tiny = {.map_size = 1 << 20, .no_sync = true};

	is_int(weft_store_open_dir(&s, dir, &tiny, &fake_opts), 0, "open with a 1 MiB map");
	is_int(ref_range(s, 1, 0, 64), 0, "reference 64 chunks");
	int rc = 0;
	uint32_t i;
	for (i = 0; i < 64 && rc == 0; i++)
		rc = put_share(s, i, 0, 64 * 1024, 0, false);
	i--;
	is_int(rc, WEFT_EMAPFULL, "a put fails with WEFT_EMAPFULL (share %u)", i);
	ok(i > 0, "after %u shares went in", i);
	is_int(has_share(s, i, 0), WEFT_NOTFOUND, "the failed share is not visible");
	weft_store_stats(s, &st);
	ok(st.shares == i && st.bytes == (uint64_t)i * 64 * 1024, "stats count only the stored shares");
	ok_invariants(s, "after the failed put");
	size_t before = st.refs;
	rc = ref_range(s, 2, 1000, 20000);
	is_int(rc, WEFT_EMAPFULL, "a batch of 20000 references fails with WEFT_EMAPFULL");
	weft_store_stats(s, &st);
	ok(st.refs == before && st.files == 1 && count_of(s, 1000) == -1, "none of the batch is visible");
	ok_invariants(s, "after the failed references");
	weft_store_close(s);
	is_int(weft_store_open_dir(&s, dir, &tiny, &fake_opts), 0, "reopen");
	is_int(has_share(s, 0, 0), 0, "stored shares are readable");
	is_int(unref_file(s, 1), 0, "unref the file");
	is_int(drain(s), 0, "drop and collect everything");
	weft_store_stats(s, &st);
	ok(st.shares == 0 && st.cids == 0 && st.bytes == 0, "the store is empty");
	is_int(put_share(s, 7, 0, 1024, 0, false), 0, "a put works again");
	is_int(put_share(s, 8, 0, 64 * 1024, 0, false), 0, "so does a large one in the freed space");
	ok_invariants(s, "at the end");
	weft_store_close(s);
	tu_rmtree(dir);
	free(dir);
}

/* ---- kill -9 ---- */

#define KILL_ROUNDS 20
#define KILL_FILES 6
#define KILL_CHUNKS 200

/* The child: random operations forever; exits 3 on an unexpected error. */
static void churn(const char *dir, unsigned seed)
{
	struct weft_store *s;
	struct weft_store_opts opts = {.gc_delay_ms = 0};
	if (weft_store_open_dir(&s, dir, &fast_kv, &opts) != 0)
		_exit(2);
	srand(seed);
	for (;;) {
		int rc = 0;
		uint32_t f = (uint32_t)rand() % KILL_FILES, i = (uint32_t)rand() % KILL_CHUNKS;
		uint16_t j = (uint16_t)(rand() % 3);
		struct weft_store_progress p;
		switch (rand() % 8) {
		case 0:
		case 1:
			rc = ref_range(s, f, i, 1 + (uint32_t)rand() % 40);
			break;
		case 2:
		case 3:
			rc = put_share(s, i, j, 1 + (size_t)(rand() % 8192), 0, false);
			break;
		case 4:
			rc = unref_file(s, f);
			break;
		case 5:
			rc = weft_store_unref_step(s, 1 + (size_t)(rand() % 30), &p);
			break;
		case 6:
			rc = weft_store_gc_step(s, 1 + (size_t)(rand() % 5), 0, &p);
			break;
		case 7:
			rc = rand() % 2 ? del_share(s, i, j) : put_share(s, i, j, 100, 1, true);
			break;
		}
		if (rc != 0 && rc != WEFT_NOTFOUND && rc != WEFT_ESTATE && rc != WEFT_EEXIST)
			_exit(3);
	}
}

static void test_kill9(void)
{
	char *dir = tu_tmpdir("store");
	int killed = 0, broken = 0, early = 0;
	uint64_t ops_seen = 0;
	const char *why = NULL;
	unsigned seed = (unsigned)time(NULL);
	diag("kill -9 rounds: seed %u", seed);
	srand(seed);
	for (int round = 0; round < KILL_ROUNDS; round++) {
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0)
			churn(dir, (unsigned)rand());
		usleep(20000 + (useconds_t)(rand() % 100000));
		kill(pid, SIGKILL);
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			killed++;
		else
			early++;
		struct weft_store *s;
		if (weft_store_open_dir(&s, dir, &fast_kv, NULL) != 0) {
			broken++;
			continue;
		}
		const char *w = check_invariants(weft_store_kv(s));
		if (w != NULL) {
			broken++;
			why = w;
		}
		struct weft_store_stats st;
		weft_store_stats(s, &st);
		ops_seen += st.refs + st.shares + st.gc_queued;
		weft_store_close(s);
	}
	is_int(early, 0, "the child never stopped by itself");
	is_int(killed, KILL_ROUNDS, "killed with SIGKILL %d times at random points", killed);
	ok(broken == 0, "store consistent after every kill (%d broken%s%s)", broken, why ? ": " : "", why ? why : "");
	ok(ops_seen > 0, "the children did work (%llu items seen)", (unsigned long long)ops_seen);
	struct weft_store *s;
	is_int(weft_store_open_dir(&s, dir, &fast_kv, NULL), 0, "reopen at the end");
	uint8_t f[32];
	int rc = 0;
	for (uint32_t k = 0; k < KILL_FILES && rc >= 0; k++) {
		file_of(f, k);
		rc = weft_store_unref(s, f);
	}
	is_int(drain(s), 0, "drop every file and collect");
	struct weft_store_stats st;
	weft_store_stats(s, &st);
	ok(st.refs == 0 && st.cids == 0 && st.shares == 0 && st.bytes == 0, "everything is freed");
	ok_invariants(s, "when empty");
	weft_store_close(s);
	tu_rmtree(dir);
	free(dir);
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	test_shares();
	test_refs_gc();
	test_big_unref();
	test_map_full();
	test_kill9();
	return done_testing();
}
