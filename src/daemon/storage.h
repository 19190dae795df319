/* storage.h - weftd's storage layer (storage.c): the chunk store in its own
 * LMDB environment (DATADIR/chunks), offered to the storage service as its
 * share store; the owner's keys; the catalogue of files put here and the
 * journal that lets an interrupted put resume; the put / get / repair jobs
 * and the store.* RPC methods (docs/rpc.md, docs/storage.md). */
#ifndef WEFT_DAEMON_STORAGE_H
#define WEFT_DAEMON_STORAGE_H

#include <stddef.h>

#include "weft/mp.h"
#include "weft/rpc.h"

struct weft_node;
struct weft_storage;
struct weft_share_service;

/* Opens DATADIR/chunks (created if needed) and derives the owner's keys
 * from the node identity.  0 and *out (weft_storage_close it), or an
 * error printed to stderr. */
int weft_storage_open(struct weft_storage **out, struct weft_node *node);
/* Stops running jobs (their calls fail) and closes the store; accepts NULL. */
void weft_storage_close(struct weft_storage *st);
const struct weft_share_service *weft_storage_shares(struct weft_storage *st);
/* {shares, bytes, cids, files, gc_queued, jobs} for status and metrics. */
void weft_storage_info(struct weft_storage *st, struct weft_mpw *w);

/* The store.* methods; their ctx is the struct weft_node. */
extern const struct weft_rpc_method weft_storage_methods[];
extern const size_t weft_storage_nmethods;

#endif
