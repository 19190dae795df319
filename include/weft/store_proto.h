/* store_proto.h - the storage service (protocols/store): erasure-coded
 * placement of encrypted chunks across the committee, Merkle-verified
 * retrieval, storage proofs and audits, and repair.  A sans-IO protocol
 * hosted by the node stack as a child on its own channel; weftd and
 * weft-sim run the same code.  docs/storage.md explains the design and
 * docs/protocols/store.md why it is safe.
 *
 * Keyless: the service moves and checks ciphertext only.  The daemon (or
 * the simulator) chunks, encrypts and builds manifests (weft/store_*.h);
 * the service places what it is given and hands back what it fetched,
 * after checking every byte against the roots the reader trusts.
 *
 * Placement.  A chunk's blob (nonce || ciphertext || tag, addressed by its
 * CID) is Reed-Solomon coded into n shares, one per committee member, k of
 * which rebuild it (k = f + 1 by default; k = 1 is plain replication):
 *   share length L = ceil(bloblen / k); the blob, zero-padded to k * L,
 *   gives shares 0..k-1 (systematic), parity shares k..n-1 follow;
 *   r_j = weft_merkle_root(share j), SR = BLAKE2b("weft.store.v1.shares"
 *   0x00 || be32(k) || be32(n) || be64(bloblen) ||
 *   weft_merkle_root_digests(r_0..r_n-1)): it fixes the coding and every share;
 *   share j lives on node (be32(CID[0..4]) + j) mod n.
 * The chunk's record [k, n, bloblen, r_0..r_n-1] travels with every share;
 * the file's manifest carries SR per chunk, so a reader checks a record
 * against SR and each share against its r_j before decoding.
 *
 * The share store is the host's (a service the env hands out by name,
 * WEFT_SHARE_SERVICE): large blobs live outside the step's transaction, in
 * an LMDB environment of their own in weftd.  A share put is durable before
 * any message of its step leaves (the host group-commits the step's share
 * writes before its kv commit), so the acknowledgement that follows it is
 * honest. */
#ifndef WEFT_STORE_PROTO_H
#define WEFT_STORE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/proto.h"
#include "weft/store_keys.h"

#define WEFT_STORE_PROTO_VERSION 2 /* 2: ACK names the file (its tag) */
#define WEFT_STORE_HASH 32
/* The largest share one message carries: net.max_frame must leave room
 * for it (the default 4 MiB does).  The daemon sizes chunks so that
 * ceil(bloblen / k) stays below it. */
#define WEFT_STORE_SHARE_MAX ((size_t)3 << 20)
/* Reed-Solomon over GF(2^8): at most 255 shares. */
#define WEFT_STORE_MAX_N 255
/* The name of the host service env->ops->service hands out. */
#define WEFT_SHARE_SERVICE "shares"

/* ---- the host's share store ---- */

struct weft_share_meta {
	uint64_t length;                 /* bytes of the share */
	uint64_t stored_ms;              /* when it was put or last repaired */
	uint64_t audited_ms;             /* last passed audit; 0: never */
	uint8_t root[WEFT_STORE_HASH];   /* r_j as given at put */
};

/* Shares by (CID, share index), references of files to CIDs (a CID no
 * file references is garbage, freed by the host's GC).  Every call is all
 * or nothing, and durable by the end of its step.  0, WEFT_NOTFOUND, or a
 * negative code (WEFT_ENOSPC / WEFT_EMAPFULL when full: nothing of the
 * call is kept). */
struct weft_share_service {
	void *ctx;
	/* Stores a share; the same bytes again are a no-op; other bytes give
	 * WEFT_EEXIST unless repair is set, which replaces them. */
	int (*put)(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share, const void *data, size_t len,
		   const uint8_t root[WEFT_STORE_HASH], bool repair);
	/* A malloc'd copy of a share (the caller frees *data). */
	int (*copy)(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share, void **data, size_t *len);
	int (*has)(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share, struct weft_share_meta *meta);
	int (*del)(void *ctx, const uint8_t cid[WEFT_STORE_HASH], uint16_t share);
	/* References (file, cids[i]); referencing twice changes nothing. */
	int (*ref)(void *ctx, const uint8_t file[WEFT_STORE_HASH], const uint8_t (*cids)[WEFT_STORE_HASH], size_t n);
	/* Drops every reference of file (the host finishes it in the background). */
	int (*unref)(void *ctx, const uint8_t file[WEFT_STORE_HASH]);
	/* Optional, for the host alone (a protocol never calls them): group
	 * commit.  The host calls begin_step before each step and end_step
	 * after it, before the step's kv commit and before any of its messages
	 * leave; the share store may then keep the step's writes in one
	 * transaction and make them durable in end_step (commit true), or drop
	 * them (commit false).  0, or the error that makes the host roll the
	 * step back as it does a failed kv commit. */
	void (*begin_step)(void *ctx);
	int (*end_step)(void *ctx, bool commit);
};

/* ---- coding (protocols/store/placement.c) ---- */

/* ceil(bloblen / k), at least 1, for any bloblen (no overflow). */
size_t weft_store_share_len(uint64_t bloblen, uint32_t k);
/* The shares root SR of a chunk coded with k of n into shares whose roots
 * are roots[0..n) (the header's formula: it binds k, n and bloblen). */
void weft_store_shares_root(uint8_t sr[WEFT_STORE_HASH], uint32_t k, uint32_t n, uint64_t bloblen,
			    const uint8_t (*roots)[WEFT_STORE_HASH]);
/* The node that holds share j of cid in a committee of n. */
uint32_t weft_store_holder(const uint8_t cid[WEFT_STORE_HASH], uint32_t j, uint32_t n);

/* ---- files ----
 * Holders reference a chunk under its file's tag, so that the owner can
 * drop the file everywhere with one signed message:
 *   tag  = BLAKE2b-256("weft.store.v1.tag" || 0x00 || owner || nonce)
 *   drop = Ed25519 by owner over
 *          "weft.store.v1.drop" || 0x00 || id || owner || nonce
 * (owner: the manifest's signer; nonce: the file's random per-put nonce;
 * id: the manifest root). */
void weft_store_tag(uint8_t tag[WEFT_STORE_HASH], const uint8_t owner[WEFT_STORE_HASH],
		    const uint8_t nonce[WEFT_FILE_NONCE_LEN]);
#define WEFT_STORE_DROP_LABEL "weft.store.v1.drop"
#define WEFT_STORE_DROP_MSG_LEN (sizeof(WEFT_STORE_DROP_LABEL) + 2 * WEFT_STORE_HASH + WEFT_FILE_NONCE_LEN)
void weft_store_drop_message(uint8_t out[WEFT_STORE_DROP_MSG_LEN], const uint8_t id[WEFT_STORE_HASH],
			     const uint8_t owner[WEFT_STORE_HASH], const uint8_t nonce[WEFT_FILE_NONCE_LEN]);

/* ---- commands (weft_proto_ops.command, names "store.*") ----
 * The daemon's storage jobs drive the service with these; each runs as a
 * step (persist before send holds).  Arguments and replies are msgpack.
 *
 * store.place    [tag, cid, k, blob]  codes and places a chunk: stores
 *                the own share, sends the others.  Reply {sr, k, n,
 *                acked, need, done}.  A chunk with a record here keeps it
 *                (its SR is the one replied) and is only referenced.
 *                WEFT_EAGAIN when too many placements are in flight.
 * store.placed   cid                  {acked, need, done, failed}: done
 *                once `need` holders (store_ack, default n - f, at least
 *                k) acknowledged; failed when retries ran out first.  A
 *                done or failed answer forgets the placement.
 * store.fetch    [cid, sr, k, bloblen]  asks holders for shares (k: the
 *                expected coding; the record whose SR matches decides);
 *                reply {started}.  WEFT_EAGAIN when too many are in flight.
 * store.fetched  cid                  {state: "pending" | "done" |
 *                "failed", blob (done), why (failed), bad (peers that
 *                served bad shares)}.  done and failed forget the fetch.
 * store.manifest_put  envelope        checks it keylessly, keeps it,
 *                sends it to every node.  Reply {id}.
 * store.manifest_get  id              {envelope} when known here, else
 *                {pending: true} after asking the peers (ask again).
 * store.drop     [id, owner, nonce, signature]  the owner's signed drop:
 *                every node forgets the manifest and drops the file's
 *                references (its host's GC frees what nothing else uses).
 * store.audit    count                sends up to count challenges now.
 * store.repair   cid | nil            challenges every holder of one
 *                chunk, or sweeps every record held here; what is missing
 *                or bad is rebuilt from k good shares and placed again.
 * store.evidence nil                  the kept signed wrong answers. */

extern const struct weft_proto_ops weft_store_service;

#endif
