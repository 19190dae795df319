/* shares.c - a simulated node's share store: the real chunk store
 * (weft/store.h) in an LMDB environment of its own under the run's
 * temporary directory, on the simulator's virtual clock, offered to the
 * storage service as weftd offers it (weft/store_proto.h).  Opened on
 * first use, so runs without storage pay nothing for it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim.h"
#include "weft/err.h"
#include "weft/store.h"
#include "weft/store_proto.h"
#include "weft/util.h"

struct sim_shares {
	char *dir;
	uint64_t (*now_ms)(void *arg);
	void *arg;
	struct weft_store *store;
	bool broken;                   /* it could not be opened: every call fails */
	struct weft_share_service svc;
};

static struct weft_store *open_store(struct sim_shares *sh)
{
	if (sh->store || sh->broken)
		return sh->store;
	if (mkdir(sh->dir, 0700) != 0 && errno != EEXIST) {
		sh->broken = true;
		return NULL;
	}
	struct weft_kv_opts ko = {.map_size = (size_t)1 << 30, .no_sync = true};
	struct weft_store_opts so = {.gc_delay_ms = 0, .now_ms = sh->now_ms, .now_arg = sh->arg};
	if (weft_store_open_dir(&sh->store, sh->dir, &ko, &so) != 0) {
		fprintf(stderr, "weft-sim: cannot open a share store in %s\n", sh->dir);
		sh->broken = true;
	}
	return sh->store;
}

static int put(void *ctx, const uint8_t cid[32], uint16_t share, const void *data, size_t len, const uint8_t root[32],
	       bool repair)
{
	struct weft_store *s = open_store(ctx);
	return s ? weft_store_put(s, cid, share, data, len, root, repair) : WEFT_EIO;
}

static int copy(void *ctx, const uint8_t cid[32], uint16_t share, void **data, size_t *len)
{
	struct weft_store *s = open_store(ctx);
	return s ? weft_store_copy(s, cid, share, data, len) : WEFT_EIO;
}

static int has(void *ctx, const uint8_t cid[32], uint16_t share, struct weft_share_meta *meta)
{
	struct weft_store *s = open_store(ctx);
	struct weft_store_meta m;
	int rc = s ? weft_store_has(s, cid, share, &m) : WEFT_EIO;
	if (rc == 0 && meta) {
		meta->length = m.length;
		meta->stored_ms = m.stored_ms;
		meta->audited_ms = m.audited_ms;
		memcpy(meta->root, m.root, sizeof(meta->root));
	}
	return rc;
}

static int del(void *ctx, const uint8_t cid[32], uint16_t share)
{
	struct weft_store *s = open_store(ctx);
	return s ? weft_store_del(s, cid, share) : WEFT_EIO;
}

static int ref(void *ctx, const uint8_t file[32], const uint8_t (*cids)[32], size_t n)
{
	struct weft_store *s = open_store(ctx);
	return s ? weft_store_ref(s, file, cids, n) : WEFT_EIO;
}

static int unref(void *ctx, const uint8_t file[32])
{
	struct weft_store *s = open_store(ctx);
	int rc = s ? weft_store_unref(s, file) : WEFT_EIO;
	/* The simulator has no GC timer: finish the drop at once. */
	struct weft_store_progress p = {.more = true};
	while (rc == 0 && p.more)
		rc = weft_store_unref_step(s, 0, &p);
	return rc;
}

struct sim_shares *sim_shares_new(const char *dir, uint64_t (*now_ms)(void *arg), void *arg)
{
	struct sim_shares *sh = weft_xcalloc(1, sizeof(*sh));
	sh->dir = weft_xstrdup(dir);
	sh->now_ms = now_ms;
	sh->arg = arg;
	sh->svc = (struct weft_share_service){
		.ctx = sh, .put = put, .copy = copy, .has = has, .del = del, .ref = ref, .unref = unref,
	};
	return sh;
}

const struct weft_share_service *sim_shares_service(struct sim_shares *sh)
{
	return &sh->svc;
}

static void remove_dir(struct sim_shares *sh)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/data.mdb", sh->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", sh->dir);
	unlink(path);
	rmdir(sh->dir);
}

void sim_shares_wipe(struct sim_shares *sh)
{
	weft_store_close(sh->store);
	sh->store = NULL;
	remove_dir(sh);
}

void sim_shares_free(struct sim_shares *sh)
{
	if (sh == NULL)
		return;
	sim_shares_wipe(sh);
	free(sh->dir);
	free(sh);
}
