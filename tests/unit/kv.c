/* tests/unit/kv.c - TAP tests for the LMDB wrapper (storage/kv.c).
 *
 * Every environment lives in its own mkdtemp directory under /tmp, removed at
 * the end.  The disk-full and not-writable cases run in fork()ed children
 * (a file size limit, or a switch to the nobody user when run as root) and
 * report through their exit status. */
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/kv.h"
#include "../tap.h"

#define MAX_DIRS 16
static char dirs[MAX_DIRS][64];
static int ndirs;

/* Returns a fresh empty directory; removed by remove_dirs(). */
static const char *make_dir(void)
{
	if (ndirs == MAX_DIRS)
		abort();
	char *d = dirs[ndirs];
	snprintf(d, sizeof(dirs[0]), "/tmp/weft-kv-XXXXXX");
	if (mkdtemp(d) == NULL) {
		perror("mkdtemp");
		abort();
	}
	ndirs++;
	return d;
}

static int count_entries(const char *dir)
{
	DIR *dp = opendir(dir);
	if (dp == NULL)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(dp)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(dp);
	return n;
}

static void remove_dirs(void)
{
	for (int i = 0; i < ndirs; i++) {
		chmod(dirs[i], 0700);
		DIR *dp = opendir(dirs[i]);
		if (dp != NULL) {
			struct dirent *de;
			while ((de = readdir(dp)) != NULL) {
				if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
					continue;
				unlinkat(dirfd(dp), de->d_name, 0);
			}
			closedir(dp);
		}
		if (rmdir(dirs[i]) != 0)
			diag("could not remove %s: %s", dirs[i], strerror(errno));
	}
}

/* Runs fn(arg) in a child process; returns its exit status or -1. */
static int run_child(int (*fn)(const void *), const void *arg)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg));
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status)) {
		diag("child ended abnormally (status 0x%x)", status);
		return -1;
	}
	return WEXITSTATUS(status);
}

static int get_str(struct weft_kv_txn *txn, weft_kv_dbi dbi, const char *key, const char **val, size_t *vlen)
{
	const void *v = NULL;
	int rc = weft_kv_get(txn, dbi, key, strlen(key), &v, vlen);
	*val = v;
	return rc;
}

static int put_str(struct weft_kv_txn *txn, weft_kv_dbi dbi, const char *key, const char *val)
{
	return weft_kv_put(txn, dbi, key, strlen(key), val, strlen(val));
}

static void test_basic(void)
{
	const char *dir = make_dir();
	struct weft_kv *kv;
	struct weft_kv_txn *txn;
	weft_kv_dbi a, b;
	const char *v;
	size_t vl;

	is_int(weft_kv_open(&kv, dir, NULL), 0, "open with default options");
	is_int(weft_kv_db(kv, "a", &a), 0, "create db a");
	is_int(weft_kv_db(kv, "b", &b), 0, "create db b");
	ok(a != b, "named dbs get distinct handles");

	/* put / get / del round trip */
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	is_int(put_str(txn, a, "k1", "value one"), 0, "put k1");
	is_int(get_str(txn, a, "k1", &v, &vl), 0, "get k1 in the same txn");
	is_int(vl, 9, "length seen in the same txn");
	is_int(weft_kv_commit(txn), 0, "commit");

	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(get_str(txn, a, "k1", &v, &vl), 0, "get k1 after commit");
	ok(vl == 9 && memcmp(v, "value one", 9) == 0, "value round-trips");
	is_int(get_str(txn, a, "absent", &v, &vl), WEFT_NOTFOUND, "absent key is WEFT_NOTFOUND");
	is_int(put_str(txn, a, "x", "y"), WEFT_ESTATE, "put in a read txn is WEFT_ESTATE");
	weft_kv_abort(txn);

	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	struct weft_kv_txn *second = (struct weft_kv_txn *)&txn;
	is_int(weft_kv_begin(kv, true, &second), WEFT_ESTATE, "second write txn is WEFT_ESTATE, not a deadlock");
	ok(second == NULL, "no txn returned on failure");
	is_int(weft_kv_del(txn, a, "absent", 6), WEFT_NOTFOUND, "del of an absent key is WEFT_NOTFOUND");
	is_int(weft_kv_del(txn, a, "k1", 2), 0, "del k1");
	is_int(get_str(txn, a, "k1", &v, &vl), WEFT_NOTFOUND, "k1 gone in the same txn");
	is_int(weft_kv_commit(txn), 0, "commit del (a NOTFOUND del does not fail the txn)");
	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(get_str(txn, a, "k1", &v, &vl), WEFT_NOTFOUND, "k1 gone after commit");
	weft_kv_abort(txn);

	/* abort discards */
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	is_int(put_str(txn, a, "k2", "discard me"), 0, "put k2");
	weft_kv_abort(txn);
	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(get_str(txn, a, "k2", &v, &vl), WEFT_NOTFOUND, "aborted put is not visible");
	weft_kv_abort(txn);
	weft_kv_abort(NULL);

	/* a failed put makes the whole txn fail at commit */
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	is_int(put_str(txn, a, "k3", "before the error"), 0, "put k3");
	is_int(weft_kv_put(txn, a, "", 0, "v", 1), WEFT_EINVAL, "empty key is WEFT_EINVAL");
	is_int(weft_kv_commit(txn), WEFT_EINVAL, "commit after a failed put returns that error");
	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(get_str(txn, a, "k3", &v, &vl), WEFT_NOTFOUND, "nothing of the failed txn is visible");
	weft_kv_abort(txn);

	/* two named dbs are independent */
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	is_int(put_str(txn, a, "same", "in a"), 0, "put same key in a");
	is_int(put_str(txn, b, "same", "in b, longer"), 0, "put same key in b");
	is_int(put_str(txn, b, "only-b", "b"), 0, "put only-b in b");
	is_int(weft_kv_commit(txn), 0, "commit");
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	is_int(weft_kv_del(txn, a, "same", 4), 0, "del same from a");
	is_int(weft_kv_commit(txn), 0, "commit");
	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(get_str(txn, a, "same", &v, &vl), WEFT_NOTFOUND, "gone from a");
	is_int(get_str(txn, b, "same", &v, &vl), 0, "still in b");
	ok(vl == 12 && memcmp(v, "in b, longer", 12) == 0, "b's value untouched");
	is_int(get_str(txn, a, "only-b", &v, &vl), WEFT_NOTFOUND, "b's key not in a");
	size_t na = 99, nb = 0;
	is_int(weft_kv_count(txn, a, &na), 0, "count a");
	is_int(weft_kv_count(txn, b, &nb), 0, "count b");
	ok(na == 0 && nb == 2, "counts per db: a %zu, b %zu", na, nb);
	weft_kv_abort(txn);

	struct weft_kv_stats st;
	is_int(weft_kv_stats(kv, &st), 0, "stats");
	is_int((long long)st.map_size, 1LL << 30, "default map size is 1 GiB");
	ok(st.page_size >= 512 && (st.page_size & (st.page_size - 1)) == 0, "page size %zu is a power of two",
	   st.page_size);
	ok(st.used_bytes >= 4 * st.page_size && st.used_bytes % st.page_size == 0 &&
		   st.used_bytes < st.map_size, "used bytes %zu is whole pages within the map", st.used_bytes);
	is_int((long long)st.entries, 2, "main db holds the two db names");
	ok(st.readers >= 1, "reader slots used: %u", st.readers);
	weft_kv_close(kv);
	weft_kv_close(NULL);

	/* data survives close / reopen */
	struct weft_kv_opts opts = { .no_sync = true };
	is_int(weft_kv_open(&kv, dir, &opts), 0, "reopen");
	is_int(weft_kv_db(kv, "b", &b), 0, "reopen db b");
	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(get_str(txn, b, "same", &v, &vl), 0, "b/same survives reopen");
	ok(vl == 12 && memcmp(v, "in b, longer", 12) == 0, "with its value");
	is_int(get_str(txn, b, "only-b", &v, &vl), 0, "b/only-b survives reopen");
	weft_kv_abort(txn);
	weft_kv_close(kv);

	struct weft_kv *none = (struct weft_kv *)&kv;
	is_int(weft_kv_open(&none, "/tmp/weft-kv-does-not-exist/x", NULL), WEFT_ECONFIG,
	       "missing directory is WEFT_ECONFIG");
	ok(none == NULL, "no env returned on failure");
}

#define NKEYS 1000

static void key_of(char *buf, size_t n, int i)
{
	snprintf(buf, n, "key%05d", i);
}

static void test_cursor(void)
{
	const char *dir = make_dir();
	struct weft_kv *kv;
	struct weft_kv_txn *txn;
	struct weft_kv_cursor *c;
	weft_kv_dbi db;
	char key[32], val[64];
	const void *k, *v;
	size_t kl, vl;

	struct weft_kv_opts opts = { .no_sync = true };
	is_int(weft_kv_open(&kv, dir, &opts), 0, "open cursor env");
	is_int(weft_kv_db(kv, "c", &db), 0, "create db c");

	/* insert in a scrambled order: 7 is coprime with 1000 */
	int err = 0;
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	for (int j = 0; j < NKEYS && !err; j++) {
		int i = (j * 7 + 3) % NKEYS;
		key_of(key, sizeof(key), i);
		snprintf(val, sizeof(val), "value-%d", i);
		err = put_str(txn, db, key, val);
	}
	is_int(err, 0, "put %d keys", NKEYS);
	is_int(weft_kv_commit(txn), 0, "commit");

	/* full scan in order */
	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(weft_kv_cursor_open(txn, db, &c), 0, "cursor open");
	int n = 0, bad = 0;
	for (err = weft_kv_cursor_seek(c, NULL, 0, &k, &kl, &v, &vl); err == 0;
	     err = weft_kv_cursor_next(c, &k, &kl, &v, &vl)) {
		key_of(key, sizeof(key), n);
		snprintf(val, sizeof(val), "value-%d", n);
		if (kl != strlen(key) || memcmp(k, key, kl) != 0 || vl != strlen(val) || memcmp(v, val, vl) != 0)
			bad++;
		n++;
	}
	is_int(err, WEFT_NOTFOUND, "scan ends with WEFT_NOTFOUND");
	is_int(n, NKEYS, "scan visits every key");
	is_int(bad, 0, "keys come in byte order with their values");
	is_int(weft_kv_cursor_next(c, &k, &kl, &v, &vl), WEFT_NOTFOUND, "next past the end stays WEFT_NOTFOUND");

	/* seek to a middle key, between keys, past the end */
	is_int(weft_kv_cursor_seek(c, "key00500", 8, &k, &kl, &v, &vl), 0, "seek to key00500");
	ok(kl == 8 && memcmp(k, "key00500", 8) == 0, "lands on key00500");
	is_int(weft_kv_cursor_next(c, &k, &kl, NULL, NULL), 0, "next");
	ok(kl == 8 && memcmp(k, "key00501", 8) == 0, "then key00501 (NULL outputs allowed)");
	is_int(weft_kv_cursor_seek(c, "key00500x", 9, &k, &kl, &v, &vl), 0, "seek between keys");
	ok(kl == 8 && memcmp(k, "key00501", 8) == 0, "lands on the next key");
	is_int(weft_kv_cursor_seek(c, "kez", 3, &k, &kl, &v, &vl), WEFT_NOTFOUND, "seek past the end");
	is_int(weft_kv_cursor_seek(c, "a", 1, &k, &kl, &v, &vl), 0, "seek before the first key");
	ok(kl == 8 && memcmp(k, "key00000", 8) == 0, "lands on the first key");
	weft_kv_cursor_close(c);
	weft_kv_abort(txn);

	/* delete every other key while iterating */
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	is_int(weft_kv_cursor_open(txn, db, &c), 0, "cursor open");
	is_int(weft_kv_cursor_del(c), WEFT_ESTATE, "del on an unpositioned cursor is WEFT_ESTATE");
	n = 0;
	bad = 0;
	int delerr = 0;
	for (err = weft_kv_cursor_seek(c, NULL, 0, &k, &kl, &v, &vl); err == 0;
	     err = weft_kv_cursor_next(c, &k, &kl, &v, &vl)) {
		key_of(key, sizeof(key), n);
		if (kl != strlen(key) || memcmp(k, key, kl) != 0)
			bad++;
		if (n % 2 == 0 && weft_kv_cursor_del(c) != 0)
			delerr++;
		n++;
	}
	is_int(err, WEFT_NOTFOUND, "deleting scan ends with WEFT_NOTFOUND");
	is_int(delerr, 0, "every cursor del succeeded");
	is_int(n, NKEYS, "deleting scan still visits every key once");
	is_int(bad, 0, "next after del returns the key after the deleted one");
	is_int(weft_kv_cursor_seek(c, NULL, 0, &k, &kl, &v, &vl), 0, "seek first");
	is_int(weft_kv_cursor_del(c), 0, "del");
	is_int(weft_kv_cursor_del(c), WEFT_ESTATE, "a second del without a move is WEFT_ESTATE");
	is_int(weft_kv_cursor_next(c, &k, &kl, &v, &vl), 0, "next after the del");
	ok(kl == 8 && memcmp(k, "key00003", 8) == 0, "is the key after the deleted one");
	/* leave the cursor open across commit: closing it later must be safe */
	is_int(weft_kv_commit(txn), 0, "commit deletions");
	is_int(weft_kv_cursor_next(c, &k, &kl, &v, &vl), WEFT_ESTATE, "cursor is dead after its txn ends");
	weft_kv_cursor_close(c);
	weft_kv_cursor_close(NULL);

	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(weft_kv_cursor_open(txn, db, &c), 0, "cursor open");
	n = 0;
	bad = 0;
	int want = 3;
	for (err = weft_kv_cursor_next(c, &k, &kl, &v, &vl); err == 0;
	     err = weft_kv_cursor_next(c, &k, &kl, &v, &vl)) {
		key_of(key, sizeof(key), want);
		if (kl != strlen(key) || memcmp(k, key, kl) != 0)
			bad++;
		want += 2;
		n++;
	}
	is_int(n, NKEYS / 2 - 1, "odd keys remain after commit (next on a fresh cursor starts at the first)");
	is_int(bad, 0, "and only odd keys");
	weft_kv_cursor_close(c);
	weft_kv_abort(txn);

	/* delete a long run and the last key: pages merge under the cursor */
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	is_int(weft_kv_cursor_open(txn, db, &c), 0, "cursor open");
	err = weft_kv_cursor_seek(c, "key00101", 8, &k, &kl, &v, &vl);
	delerr = 0;
	while (err == 0 && memcmp(k, "key00801", 8) < 0) {
		if (weft_kv_cursor_del(c) != 0)
			delerr++;
		err = weft_kv_cursor_next(c, &k, &kl, &v, &vl);
	}
	is_int(delerr, 0, "deleted the run key00101..key00799");
	ok(err == 0 && kl == 8 && memcmp(k, "key00801", 8) == 0, "next after the run is key00801");
	is_int(weft_kv_cursor_seek(c, "key00999", 8, &k, &kl, &v, &vl), 0, "seek last key");
	is_int(weft_kv_cursor_del(c), 0, "del last key");
	is_int(weft_kv_cursor_next(c, &k, &kl, &v, &vl), WEFT_NOTFOUND, "next after deleting the last key");
	weft_kv_cursor_close(c);
	is_int(weft_kv_commit(txn), 0, "commit");

	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read");
	is_int(weft_kv_cursor_open(txn, db, &c), 0, "cursor open");
	n = 0;
	for (err = weft_kv_cursor_seek(c, NULL, 0, &k, &kl, &v, &vl); err == 0;
	     err = weft_kv_cursor_next(c, &k, &kl, &v, &vl))
		n++;
	/* odd keys 3..99 (49), 801..997 (99) */
	is_int(n, 49 + 99, "remaining count after run deletion");
	weft_kv_cursor_close(c);
	weft_kv_abort(txn);
	weft_kv_close(kv);
}

#define MAPFULL_PER_TXN 8
#define MAPFULL_VLEN 200

static void test_map_full(void)
{
	const char *dir = make_dir();
	struct weft_kv *kv;
	struct weft_kv_txn *txn;
	weft_kv_dbi db;
	char key[32], val[MAPFULL_VLEN];
	const void *v;
	size_t vl;

	struct weft_kv_opts opts = { .map_size = 64 * 1024, .no_sync = true };
	is_int(weft_kv_open(&kv, dir, &opts), 0, "open with a 64 KiB map");
	is_int(weft_kv_db(kv, "m", &db), 0, "create db m");

	int failed_txn = -1, err = 0;
	for (int t = 0; t < 1000 && failed_txn < 0; t++) {
		if ((err = weft_kv_begin(kv, true, &txn)) != 0) {
			failed_txn = t;
			break;
		}
		for (int i = 0; i < MAPFULL_PER_TXN && err == 0; i++) {
			snprintf(key, sizeof(key), "m%04d-%d", t, i);
			memset(val, 'a' + (t + i) % 26, sizeof(val));
			err = weft_kv_put(txn, db, key, strlen(key), val, sizeof(val));
		}
		if (err != 0) {
			weft_kv_abort(txn);
			failed_txn = t;
		} else if ((err = weft_kv_commit(txn)) != 0) {
			failed_txn = t;
		}
	}
	ok(failed_txn > 0, "some txns committed before the map filled (failed at txn %d)", failed_txn);
	is_int(err, WEFT_EMAPFULL, "the failure is WEFT_EMAPFULL");
	const char *msg = weft_strerror(WEFT_EMAPFULL);
	ok(msg && strstr(msg, "map_size") != NULL, "weft_strerror names map_size: \"%s\"", msg);

	int missing = 0, wrong = 0, leaked = 0;
	is_int(weft_kv_begin(kv, false, &txn), 0, "begin read after map full");
	for (int t = 0; t <= failed_txn; t++) {
		for (int i = 0; i < MAPFULL_PER_TXN; i++) {
			snprintf(key, sizeof(key), "m%04d-%d", t, i);
			int rc = weft_kv_get(txn, db, key, strlen(key), &v, &vl);
			if (t == failed_txn) {
				if (rc != WEFT_NOTFOUND)
					leaked++;
				continue;
			}
			memset(val, 'a' + (t + i) % 26, sizeof(val));
			if (rc != 0)
				missing++;
			else if (vl != sizeof(val) || memcmp(v, val, vl) != 0)
				wrong++;
		}
	}
	weft_kv_abort(txn);
	is_int(missing, 0, "every key committed before the failure is there");
	is_int(wrong, 0, "with its value");
	is_int(leaked, 0, "nothing of the failed txn is visible");
	weft_kv_close(kv);

	/* the advice works: a larger map lets writing go on */
	opts.map_size = 1 << 20;
	is_int(weft_kv_open(&kv, dir, &opts), 0, "reopen with a 1 MiB map");
	is_int(weft_kv_db(kv, "m", &db), 0, "open db m");
	is_int(weft_kv_begin(kv, true, &txn), 0, "begin write");
	err = 0;
	for (int i = 0; i < MAPFULL_PER_TXN && err == 0; i++) {
		snprintf(key, sizeof(key), "m%04d-%d", failed_txn, i);
		memset(val, 'z', sizeof(val));
		err = weft_kv_put(txn, db, key, strlen(key), val, sizeof(val));
	}
	is_int(err, 0, "the failed txn's puts now fit");
	is_int(weft_kv_commit(txn), 0, "and commit");
	weft_kv_close(kv);
}

#define DISK_LIMIT (256 * 1024)
#define DISK_VLEN (20 * 1000)
#define DISK_MAX_TXNS 120

static void disk_key(char *buf, size_t n, int t)
{
	snprintf(buf, n, "big%03d", t);
}

/* Child: writes one big value per txn under a file size limit.  Exit status:
 * the index of the txn whose commit failed with WEFT_ENOSPC, or >= 250. */
static int disk_full_child(const void *arg)
{
	const char *dir = arg;
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit rl = { .rlim_cur = DISK_LIMIT, .rlim_max = DISK_LIMIT };
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 250;
	struct weft_kv *kv;
	struct weft_kv_txn *txn;
	weft_kv_dbi db;
	struct weft_kv_opts opts = { .no_sync = true };
	if (weft_kv_open(&kv, dir, &opts) != 0 || weft_kv_db(kv, "d", &db) != 0)
		return 251;
	static unsigned char val[DISK_VLEN];
	char key[32];
	for (int t = 0; t < DISK_MAX_TXNS; t++) {
		if (weft_kv_begin(kv, true, &txn) != 0)
			return 252;
		disk_key(key, sizeof(key), t);
		memset(val, t & 0xff, sizeof(val));
		int rc = weft_kv_put(txn, db, key, strlen(key), val, sizeof(val));
		if (rc != 0) {
			weft_kv_abort(txn);
			diag("child: put %d failed: %s", t, weft_strerror(rc));
			return 253;
		}
		rc = weft_kv_commit(txn);
		if (rc == WEFT_ENOSPC) {
			weft_kv_close(kv);
			return t;
		}
		if (rc != 0) {
			diag("child: commit %d failed: %d %s", t, rc, weft_strerror(rc));
			return 254;
		}
	}
	return 255; /* never failed */
}

static void test_disk_full(void)
{
	const char *dir = make_dir();
	int failed = run_child(disk_full_child, dir);
	ok(failed > 0 && failed < DISK_MAX_TXNS, "commit under RLIMIT_FSIZE fails with WEFT_ENOSPC (txn %d)", failed);
	if (!(failed > 0 && failed < DISK_MAX_TXNS)) {
		skip(4, "no disk-full failure to inspect");
		return;
	}
	struct weft_kv *kv;
	struct weft_kv_txn *txn;
	weft_kv_dbi db;
	char key[32];
	const void *v;
	size_t vl;
	is_int(weft_kv_open(&kv, dir, NULL), 0, "reopen without the limit");
	is_int(weft_kv_db(kv, "d", &db), 0, "open db d");
	int bad = 0;
	if (weft_kv_begin(kv, false, &txn) == 0) {
		for (int t = 0; t < failed; t++) {
			disk_key(key, sizeof(key), t);
			const unsigned char *p;
			if (weft_kv_get(txn, db, key, strlen(key), &v, &vl) != 0 || vl != DISK_VLEN) {
				bad++;
				continue;
			}
			p = v;
			if (p[0] != (t & 0xff) || p[DISK_VLEN - 1] != (t & 0xff) || p[DISK_VLEN / 2] != (t & 0xff))
				bad++;
		}
		is_int(bad, 0, "the %d committed values are intact", failed);
		disk_key(key, sizeof(key), failed);
		is_int(weft_kv_get(txn, db, key, strlen(key), &v, &vl), WEFT_NOTFOUND,
		       "the failed txn's key is absent");
		weft_kv_abort(txn);
	} else {
		skip(2, "could not begin a read txn");
	}
	weft_kv_close(kv);
}

/* Child: opens an env in a directory it cannot write; 0 if WEFT_EPERM. */
static int not_writable_child(const void *arg)
{
	const char *dir = arg;
	/* root ignores permission bits: become nobody first */
	if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
		return 10;
	struct weft_kv *kv;
	int rc = weft_kv_open(&kv, dir, NULL);
	if (rc == 0) {
		weft_kv_close(kv);
		return 1;
	}
	if (rc != WEFT_EPERM) {
		diag("child: open returned %d (%s)", rc, weft_strerror(rc));
		return 2;
	}
	return 0;
}

static void test_not_writable(void)
{
	const char *dir = make_dir();
	/* mkdtemp made it root-owned (when root); 0555 keeps nobody out */
	ok(chmod(dir, 0555) == 0, "chmod 0555 %s", dir);
	is_int(run_child(not_writable_child, dir), 0, "open in an unwritable dir is WEFT_EPERM (%s)",
	       geteuid() == 0 ? "as nobody" : "as a normal user");
	is_int(count_entries(dir), 0, "nothing was created there");
}

/* Group commit: members are all or nothing, see the group's writes, and
 * nothing is durable before the group ends. */
static void test_group(void)
{
	const char *dir = make_dir();
	struct weft_kv *kv;
	struct weft_kv_txn *txn, *other;
	weft_kv_dbi db;
	const char *v;
	size_t vl;

	is_int(weft_kv_open(&kv, dir, NULL), 0, "group: open");
	is_int(weft_kv_db(kv, "g", &db), 0, "group: create db g");
	is_int(weft_kv_group_begin(kv), 0, "group begins");
	ok(weft_kv_in_group(kv), "... and is open");
	is_int(weft_kv_group_begin(kv), WEFT_ESTATE, "a second group is refused");
	weft_kv_dbi db2;
	is_int(weft_kv_db(kv, "h", &db2), WEFT_ESTATE, "weft_kv_db is refused inside a group");
	is_int(weft_kv_begin(kv, true, &txn), 0, "a member write begins");
	is_int(weft_kv_begin(kv, false, &other), WEFT_ESTATE, "a second member at the same time is refused");
	is_int(put_str(txn, db, "a", "one"), 0, "member puts a");
	is_int(weft_kv_commit(txn), 0, "member commits (into the group)");
	is_int(weft_kv_begin(kv, false, &txn), 0, "a member read begins");
	ok(get_str(txn, db, "a", &v, &vl) == 0 && vl == 3 && memcmp(v, "one", 3) == 0,
	   "the read sees the group's write");
	weft_kv_abort(txn);
	is_int(weft_kv_begin(kv, true, &txn), 0, "another member");
	is_int(put_str(txn, db, "b", "two"), 0, "it puts b");
	weft_kv_abort(txn);
	is_int(weft_kv_begin(kv, false, &txn), 0, "a read after the abort");
	is_int(get_str(txn, db, "b", &v, &vl), WEFT_NOTFOUND, "an aborted member left nothing");
	weft_kv_abort(txn);
	is_int(weft_kv_group_end(kv, true), 0, "the group commits");
	ok(!weft_kv_in_group(kv), "... and is closed");
	is_int(weft_kv_begin(kv, false, &txn), 0, "a plain read after the group");
	is_int(get_str(txn, db, "a", &v, &vl), 0, "the group's write is there");
	weft_kv_abort(txn);

	/* A dropped group leaves nothing, even of members that committed. */
	is_int(weft_kv_group_begin(kv), 0, "a second group");
	is_int(weft_kv_begin(kv, true, &txn), 0, "member");
	is_int(put_str(txn, db, "c", "three"), 0, "puts c");
	is_int(weft_kv_commit(txn), 0, "commits into the group");
	is_int(weft_kv_group_end(kv, false), 0, "the group is dropped");
	is_int(weft_kv_begin(kv, false, &txn), 0, "read");
	is_int(get_str(txn, db, "c", &v, &vl), WEFT_NOTFOUND, "nothing of a dropped group remains");
	weft_kv_abort(txn);
	is_int(weft_kv_group_end(kv, true), 0, "ending no group is a no-op");

	/* Durable once the group ended: seen after closing and reopening. */
	is_int(weft_kv_group_begin(kv), 0, "a third group");
	is_int(weft_kv_begin(kv, true, &txn), 0, "member");
	is_int(put_str(txn, db, "d", "four"), 0, "puts d");
	is_int(weft_kv_commit(txn), 0, "commits into the group");
	is_int(weft_kv_group_end(kv, true), 0, "the group commits");
	is_int(weft_kv_group_begin(kv), 0, "a group left open at close");
	is_int(weft_kv_begin(kv, true, &txn), 0, "member");
	is_int(put_str(txn, db, "e", "five"), 0, "puts e");
	is_int(weft_kv_commit(txn), 0, "commits into the group");
	weft_kv_close(kv);
	is_int(weft_kv_open(&kv, dir, NULL), 0, "reopen");
	is_int(weft_kv_db(kv, "g", &db), 0, "db g again");
	is_int(weft_kv_begin(kv, false, &txn), 0, "read");
	is_int(get_str(txn, db, "d", &v, &vl), 0, "the committed group's write survived");
	is_int(get_str(txn, db, "e", &v, &vl), WEFT_NOTFOUND, "the group open at close left nothing");
	weft_kv_abort(txn);
	weft_kv_close(kv);
}

int main(void)
{
	test_basic();
	test_group();
	test_cursor();
	test_map_full();
	test_disk_full();
	test_not_writable();
	remove_dirs();
	return done_testing();
}
