/* dag.h - the state shared by the files of weft's DAG consensus (sparse
 * Bullshark with dense anchors, and dense Bullshark): vertices, the round
 * ring, the mempool, the sync (range fetch) state.  Private to
 * protocols/dag; docs/protocols/sparse-dag.md explains the protocol.
 *
 * Files: vertex.c (wire form, validation), graph.c (insertion, commit rule,
 * ordering, garbage collection, persistence), sync.c (status and range
 * fetch), txindex.c (recent transaction states), dedup.c (the durable index
 * of committed digests: exactly once), dag.c (the protocol ops: rounds,
 * mempool, requests, queries, info), adversary.c (Byzantine strategies).
 *
 * A vertex of round r by author a is that author's BRB instance r: honest
 * nodes make exactly one vertex per round and never skip one (the safety
 * argument needs their own-vertex chains), so the BRB sequence number is
 * the round. */
#ifndef WEFT_DAG_INTERNAL_H
#define WEFT_DAG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/app.h"
#include "weft/brb.h"
#include "weft/bytes.h"
#include "weft/dag.h"
#include "weft/proto.h"

#define DAG_VERSION 1        /* of our own messages (sync.c) */
#define DAG_VERTEX_VERSION 3 /* of the vertex wire form (vertex.c): 2 added weak references, 3 signs transaction digests */
#define DAG_BRB_CHANNEL 1 /* below 0x90: never the first byte of our own messages */

/* Our own messages: [1, type, ...]. */
enum dag_msg {
	DAG_MSG_STATUS = 0, /* [1, 0, round, committed_round + 1, lowest round served] */
	DAG_MSG_FETCH = 1,  /* [1, 1, from, to, full] */
	DAG_MSG_RANGE = 2,  /* [1, 2, from, to, [[round, author, digest, bytes|nil], ...]] */
	DAG_MSG_SNAP_ASK = 3,  /* [1, 3]: which checkpoint do you hold? */
	DAG_MSG_SNAP_INFO = 4, /* [1, 4, round, size, hash]: round 0, size 0 when none */
	DAG_MSG_SNAP_GET = 5,  /* [1, 5, round, offset] */
	DAG_MSG_SNAP_PART = 6, /* [1, 6, round, offset, bytes] */
};

/* Timer ids (the BRB child's are namespaced above ours). */
enum dag_timer {
	DAG_TIMER_ADVANCE = 1, /* a round wait may have ended */
	DAG_TIMER_SYNC = 2,    /* periodic status and fetch */
	DAG_TIMER_ADVERSARY = 3, /* a Byzantine strategy's own (adversary.c) */
};

enum dag_mode { DAG_SPARSE, DAG_DENSE };

/* Deliberately broken variants (params.unsafe), to show that the simulator
 * and the checkers catch what the safety argument rules out. */
enum dag_unsafe {
	DAG_SAFE = 0,
	DAG_UNSAFE_SPARSE_ANCHORS, /* anchors need only the sparse reference count */
	DAG_UNSAFE_COMMIT_F1,      /* sparse mode commits on f + 1 votes */
	DAG_UNSAFE_WEAK_NOWAIT,    /* a vertex is inserted without waiting for its weak parents */
};

/* A weak reference: an older vertex (round <= the vertex's round - 2). */
struct dag_weak_ref {
	uint64_t round;
	uint32_t author;
	uint8_t digest[32];
};

struct dag_vertex {
	uint64_t round;
	uint32_t author;
	uint32_t nrefs;
	uint32_t *refs;                 /* authors of round - 1, ascending */
	uint8_t (*ref_digest)[32];
	uint32_t nweak;
	struct dag_weak_ref *weak;      /* ascending (round, author), at most weak_max */
	uint8_t digest[32];             /* the vertex id (vertex.c) */
	uint8_t *bytes;                 /* the vertex as broadcast (owned); NULL once ordered (kv has it) */
	size_t len;
	size_t txs_off;                 /* offset of the transaction array in bytes */
	uint32_t ntx;
	uint8_t (*tx_digests)[32];      /* ntx, while bytes is held */
	uint32_t missing;               /* parents not inserted yet */
	bool inserted, ordered;
	bool referenced;                /* an inserted vertex references it, strongly or weakly */
	uint64_t mark;                  /* traversal stamp */
};

struct dag_slot {
	struct dag_vertex *v;
	bool dead;                      /* nothing valid can fill it any more */
	struct dag_vertex **waiters;    /* vertices whose parent this is */
	uint32_t nwait, capwait;
};

struct dag_round {
	uint64_t round;                 /* UINT64_MAX: entry unused */
	struct dag_slot *slots;         /* n */
	uint32_t inserted;
	uint32_t votes;                 /* odd rounds: inserted vertices referencing the previous anchor */
	uint32_t orphans;               /* inserted vertices nothing inserted references yet */
};

/* Per round slot reports gathered by a range fetch. */
struct dag_report {
	uint8_t digest[32];
	uint32_t count;
	uint8_t *bytes;                 /* from a full reply whose bytes hash to digest */
	size_t len;
};

struct dag_sync_slot {
	uint8_t *voted;                 /* n bits: peers that reported this slot */
	struct dag_report rep[4];
	uint32_t nrep;
};

struct dag_sync {
	bool active;
	uint64_t from, to;              /* the rounds being fetched */
	uint64_t started_us;
	uint32_t supplier;              /* the peer asked for full vertices */
	uint32_t replies;
	uint8_t *replied;               /* n bits */
	struct dag_sync_slot *slots;    /* (to - from + 1) * n */
	uint64_t *peer_round;           /* latest STATUS round per peer */
	uint64_t *peer_serves;          /* latest STATUS: the lowest round the peer still serves */
	bool *heard;                    /* a STATUS came from the peer */
	uint64_t want;                  /* 1 + a round we need and cannot hold, 0: none */
	uint64_t last_front;            /* frontier at the previous tick */
	uint64_t fetches, fetched, target;
	uint64_t fetched_at_start;       /* fetched when the running fetch began */
	uint64_t forged;                 /* reported bytes whose id is not the digest they came with */
};

/* State sync (snapshot.c): the checkpoint a peer offers, and the transfer
 * of the one f + 1 peers agree on. */
struct dag_snap_offer {
	uint64_t round, size;           /* round 0: no offer */
	uint8_t hash[32];
};

struct dag_snap {
	struct dag_snap_offer *offers;  /* per peer, their latest answer */
	uint64_t asked_us;              /* when we last asked peers for their checkpoints */
	bool active;                    /* fetching `want` */
	struct dag_snap_offer want;
	uint32_t supplier;              /* the peer the next part is asked from */
	uint8_t *buf;
	uint64_t got;                   /* bytes of buf received, in order */
	uint64_t part_asked_us;
	uint64_t installs, installed_round;
};

/* Bounded table of recent transaction states, in memory (txindex.c). */
enum dag_tx_state { DAG_TX_UNKNOWN, DAG_TX_PENDING, DAG_TX_PROPOSED, DAG_TX_COMMITTED };

struct dag_tx_entry {
	uint8_t digest[16];             /* leading bytes of the digest; zero: empty */
	uint8_t state;                  /* enum dag_tx_state */
	uint8_t outcome;                /* the application's outcome code, when committed */
	uint64_t round, position;
};

struct dag_txindex {
	struct dag_tx_entry *tab;
	uint32_t cap;                   /* power of two */
	uint32_t used;
	uint8_t (*fifo)[16];            /* insertion order, for eviction */
	uint32_t fifo_head, fifo_len, max;
};

/* A transaction's entry in the durable committed index (dedup.c). */
struct dag_dedup_slot;
struct dag_committed {
	uint64_t round;                 /* of the anchor that committed it */
	uint64_t position;              /* in the ordered log */
	uint8_t outcome;                /* the application's outcome code */
};

struct dag_batch; /* mempool.c */

/* A vertex the BRB named (dag.c, name_vertex) before its delivery: the
 * transaction digests the name took, for decode. */
struct dag_named {
	uint32_t author;
	uint64_t round;
	uint8_t name[32];
	uint32_t ntx;
	uint8_t (*digests)[32];         /* NULL: the entry is free */
};

struct dag_pending_tx {
	const uint8_t *tx;              /* into its batch's record */
	uint32_t len;
	uint32_t index;                 /* within its batch */
	struct dag_batch *batch;
	uint8_t digest[32];
};

struct dag_mempool {
	struct dag_pending_tx *ring;
	uint32_t head, count, cap;
	uint64_t bytes, max_bytes;
	uint64_t next_batch;            /* the seq of the next batch record */
	uint64_t low_batch;             /* the oldest batch record kv may hold */
};

struct dag {
	struct weft_env *env;
	struct weft_child brb;
	const struct weft_brb_ops *brbf; /* the hosted BRB's family operations */
	const char *brb_name;
	enum dag_mode mode;
	enum dag_unsafe unsafe;
	struct dag_adversary *adv;      /* the Byzantine strategy this node runs (adversary.c), NULL when honest */
	uint32_t n, f, self;
	uint32_t d;                     /* sparse: sampled references */
	uint32_t weak_max;              /* weak references per vertex at most (0: none) */
	uint32_t quorum;                /* n - f: 2f + 1 when n = 3f + 1 */
	uint32_t commit_quorum;         /* sparse 2f + 1, dense f + 1 */
	uint64_t timeout_us, round_min_us, sync_us;
	uint64_t gc_depth;
	uint64_t snapshot_every;        /* rounds between checkpoints (snapshot.c) */
	uint64_t snapshot_max;          /* bytes of a snapshot we accept at most */
	uint64_t dedup_rounds;          /* the exactly-once horizon, in rounds (dedup.c) */
	uint64_t batch_bytes, tx_max, vertex_max;
	uint32_t batch_txs;

	/* rounds in [floor, floor + ring_cap) live in the ring */
	struct dag_round *ring;
	uint32_t ring_cap;
	uint64_t floor;
	uint64_t kv_floor;              /* vertices of rounds below it are gone from kv too */
	uint64_t checkpoint_round;      /* of our latest checkpoint (0: none) */
	uint64_t highest;               /* highest round with an inserted vertex */
	uint64_t *author_top;           /* per author: 1 + its highest inserted round (0: none) */

	/* our own progress */
	bool started;
	uint64_t next_round;            /* the round of our next vertex */
	uint64_t own_from;              /* first round after a jump past the GC floor: no own vertex before it */
	bool fresh_store;               /* init found no state: no vertex until f + 1 peers reported (sync.c: rejoin) */
	uint64_t entered_us;            /* when we made our latest vertex */

	/* ordering */
	bool has_committed;
	uint64_t committed_round;       /* round of the last committed anchor */
	uint64_t committed_txs;         /* log positions handed out */
	uint64_t committed_vertices, committed_anchors;
	uint8_t order_hash[32];
	uint8_t *expiring;              /* the "E" record of the anchor being ordered (dedup.c) */
	size_t nexpiring, capexpiring;  /* bytes */
	struct dag_dedup_slot *dedup;   /* the committed index (dedup.c) */
	size_t dedup_cap, dedup_used;
	uint64_t dedup_top;             /* the highest round inserted */
	struct dag_named *named;        /* the BRB's names of vertices and their digests (dag.c) */
	uint32_t nnamed, named_next;
	uint64_t stamp;
	bool gc_due;
	bool restoring;                 /* re-inserting vertices from kv: no commits */

	struct weft_app app;            /* admits and executes the ordered transactions */
	struct dag_mempool mempool;
	struct dag_txindex txindex;
	struct dag_sync sync;
	struct dag_snap snap;

	/* work lists (reused) */
	struct dag_vertex **work;
	size_t nwork, capwork;
	struct dag_vertex **hist;
	size_t nhist, caphist;

	struct weft_mpw out;
	/* counters */
	uint64_t rejected, delivered_vertices, own_vertices, timeouts, restored, requeued, duplicates_skipped;
};

/* ---- vertex.c ---- */
/* Encodes and signs our vertex of round r with refs and the given
 * transactions (tx_digests: their digests, or NULL to compute them) into
 * out (reset first). */
void dag_vertex_encode(struct dag *d, struct weft_mpw *out, uint64_t round, const uint32_t *refs, uint32_t nrefs,
		       struct dag_vertex *const *weak, uint32_t nweak, const uint8_t *const *txs, const uint32_t *lens,
		       const uint8_t (*tx_digests)[32], uint32_t ntx);
/* Decodes and validates a vertex delivered as (origin, seq): a new vertex
 * owning a copy of bytes, or NULL with *why naming the problem.  name: the
 * BRB's name of the bytes (the delivery's digest), whose transaction
 * digests decode takes instead of hashing again, or NULL. */
struct dag_vertex *dag_vertex_decode(struct dag *d, uint32_t origin, uint64_t seq, const uint8_t *bytes, size_t len,
				     const uint8_t *name, const char **why);
void dag_vertex_free(struct dag_vertex *v);
/* Frees bytes and tx_digests (ordered: kv keeps the bytes). */
void dag_vertex_drop_payload(struct dag_vertex *v);
/* The id of a vertex's bytes without validating it: 0, or WEFT_EDECODE. */
int dag_vertex_id(const uint8_t *bytes, size_t len, uint8_t id[32]);
/* The same, with the transactions' digests (allocated, *ntx of them) when
 * the bytes are a vertex in its one accepted form: 0 or WEFT_EDECODE. */
int dag_vertex_parse_id(const uint8_t *bytes, size_t len, uint8_t id[32], uint8_t (**tx_digests)[32], uint32_t *ntx);
/* Iterates the transactions of v: call with *off = 0 first; 0 and the next
 * (tx, len), or WEFT_NOTFOUND at the end. */
int dag_vertex_next_tx(const struct dag_vertex *v, size_t *off, uint32_t *i, const uint8_t **tx, uint32_t *len);
/* Points v (not owning anything) at the transactions of a vertex's bytes,
 * for dag_vertex_next_tx, without validating it (our own vertices). */
int dag_vertex_view(struct dag_vertex *v, uint8_t *bytes, size_t len);
uint32_t dag_leader(const struct dag *d, uint64_t round);
bool dag_is_anchor(const struct dag *d, const struct dag_vertex *v);

/* ---- graph.c ---- */
struct dag_round *dag_round_get(struct dag *d, uint64_t round, bool create);
struct dag_vertex *dag_inserted(struct dag *d, uint64_t round, uint32_t author);
/* The k-th parent of v, strong references first (k < nrefs), then weak
 * (k < nrefs + nweak). */
struct dag_ref {
	uint64_t round;
	uint32_t author;
	const uint8_t *digest;
};
struct dag_ref dag_parent(const struct dag_vertex *v, uint32_t k);
/* True when `to` is in the strong causal history of `from` (from->round >
 * to->round): what the commit rule's walk back follows. */
bool dag_path(struct dag *d, struct dag_vertex *from, const struct dag_vertex *to);
/* Takes a validated vertex into the DAG (owns it from here on); persist:
 * write it to kv (false when it is being restored from kv). */
void dag_accept(struct dag *d, struct dag_vertex *v, bool persist);
/* Marks (round, author) as never to be filled (a rejected delivery). */
void dag_slot_kill(struct dag *d, uint64_t round, uint32_t author);
/* Runs the garbage collection a commit made due. */
void dag_gc(struct dag *d);
/* Forgets the rounds below floor (> d->floor): our own vertices among them
 * that were not ordered give their transactions back to the mempool, kv
 * keeps what our checkpoint needs, the BRB child forgets those instances,
 * and our own rounds jump to floor + 1 when they fell below it. */
void dag_raise_floor(struct dag *d, uint64_t floor);
void dag_state_save(struct dag *d);
/* kv key of a vertex: "V" round(be64) author(be32). */
void dag_vertex_key(uint8_t k[13], uint64_t round, uint32_t author);
int dag_state_load(struct dag *d);
int dag_restore_vertices(struct dag *d);
/* Forgets the in-memory graph (a snapshot replaced the state under it). */
void dag_graph_reset(struct dag *d);
/* How many authors have an inserted vertex above round r. */
uint32_t dag_authors_above(const struct dag *d, uint64_t r);
void dag_graph_free(struct dag *d);

/* ---- sync.c ---- */
void dag_sync_init(struct dag *d);
void dag_sync_free(struct dag *d);
void dag_sync_tick(struct dag *d);
/* At start: multicasts our STATUS (peers starting on an empty store hear
 * from us at once) and, on an empty store, decides where our rounds start
 * when enough peers reported (at once in a one-node committee). */
void dag_sync_start(struct dag *d);
int dag_sync_on_message(struct dag *d, uint32_t from, uint64_t type, struct weft_mp_reader *r);
/* A vertex for (round, author) is wanted but missing here. */
void dag_sync_want(struct dag *d, uint64_t round);
/* The lowest round >= floor where we hold fewer than 2f + 1 vertices. */
uint64_t dag_frontier(struct dag *d);

/* ---- snapshot.c ---- */
void dag_snap_init(struct dag *d);
void dag_snap_free(struct dag *d);
/* The anchor just ordered may be a checkpoint: writes the snapshot of the
 * committed state when snapshot_every rounds passed since the last one. */
void dag_snap_checkpoint(struct dag *d);
/* Called by the sync tick: asks peers for checkpoints when f + 1 of them
 * no longer serve the rounds we lack, and keeps a transfer going. */
void dag_snap_tick(struct dag *d);
int dag_snap_on_message(struct dag *d, uint32_t from, uint64_t type, struct weft_mp_reader *r);
/* Writes the snapshot part of dag.info.sync ("snapshot": {...}). */
void dag_snap_info(struct dag *d, struct weft_mpw *w);

/* ---- txindex.c ---- */
void dag_txindex_init(struct dag_txindex *t, uint32_t max);
void dag_txindex_free(struct dag_txindex *t);
void dag_txindex_set(struct dag_txindex *t, const uint8_t digest[32], enum dag_tx_state state, uint64_t round,
		     uint64_t position, uint8_t outcome);
/* The same, only for a digest that has an entry already. */
void dag_txindex_update(struct dag_txindex *t, const uint8_t digest[32], enum dag_tx_state state, uint64_t round,
			uint64_t position, uint8_t outcome);
const struct dag_tx_entry *dag_txindex_get(const struct dag_txindex *t, const uint8_t digest[32]);
/* Starts fetching digest's slot (a hint: changes nothing). */
void dag_txindex_prefetch(const struct dag_txindex *t, const uint8_t digest[32]);

/* ---- dedup.c ---- */
/* How many transactions ahead order_vertex fetches committed-index slots. */
#define DEDUP_PREFETCH 8
/* Starts fetching digest's home slot (a hint: changes nothing). */
void dag_dedup_prefetch(const struct dag *d, const uint8_t digest[32]);
/* The durable committed index's entry for digest: 0 (and *c unless NULL),
 * WEFT_NOTFOUND, or WEFT_ECORRUPT / a kv error. */
int dag_dedup_get(struct dag *d, const uint8_t digest[32], struct dag_committed *c);
/* Records digest as committed by the anchor of round at position. */
void dag_dedup_put(struct dag *d, const uint8_t digest[32], uint64_t round, uint64_t position, uint8_t outcome);
/* The anchor of round is ordered: stores what it committed for pruning. */
void dag_dedup_anchor_done(struct dag *d, uint64_t round);
/* The anchor of round is about to be ordered: forgets what anchors of
 * rounds below round - dedup_rounds committed (call before committed_round
 * moves to round). */
void dag_dedup_prune(struct dag *d, uint64_t round);
/* Rebuilds the index from the stored "E" records (init).  0 or an error. */
int dag_dedup_load(struct dag *d);
void dag_dedup_free(struct dag *d);

/* ---- dag.c ---- */
/* How the BRB names a payload (weft_brb_ops.digest_with, ctx the dag):
 * also the equivocating twin's BRB, so that its second vertices are named
 * as every other node names them. */
void dag_name_vertex(void *ctx, uint32_t author, uint64_t round, const uint8_t *data, size_t len, uint8_t name[32]);
/* The transaction digests the BRB's naming of (author, round) took, when
 * that name is `name` (they are the caller's then), or NULL. */
uint8_t (*dag_named_take(struct dag *d, uint32_t author, uint64_t round, const uint8_t name[32], uint32_t *ntx))[32];
/* ---- mempool.c ---- */
/* Into the mempool as one batch record, each transaction unless known
 * already (pending, proposed, or in the committed index): rcs[i] 0,
 * WEFT_EAGAIN when the mempool is full, or a kv error; known[i] when it
 * was. */
void dag_mempool_add_many(struct dag *d, size_t count, const uint8_t *const *txs, const size_t *lens,
			  const uint8_t (*digests)[32], bool *known, int *rcs);
/* One transaction, as a batch of one: rcs[0]. */
int dag_mempool_add(struct dag *d, const uint8_t *tx, size_t len, const uint8_t digest[32], bool *known);
/* The i-th oldest transaction waiting. */
struct dag_pending_tx *dag_mempool_at(struct dag_mempool *m, uint32_t i);
/* The `taken` oldest transactions leave (into our vertex, or committed
 * elsewhere); the cursor moves past them and the records it passed go. */
void dag_mempool_take(struct dag *d, uint32_t taken);
/* Rebuilds the mempool from kv (init), after the committed index. */
int dag_mempool_load(struct dag *d);
void dag_mempool_free(struct dag_mempool *m);
/* The recent state e (may be NULL) is: waits in our mempool or our vertex. */
bool dag_tx_in_flight(const struct dag_tx_entry *e);

/* ---- dag.c ---- */
/* Makes our next vertex when the round rules allow it. */
void dag_try_advance(struct dag *d);
void dag_reject(struct dag *d, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- adversary.c ----
 * The Byzantine strategies (weft_dag_consensus.strategies, the list in
 * weft/dag.h).  The hooks below are what the honest code asks of them; each
 * answers as an honest node would when d->adv is NULL. */
extern const struct weft_proto_strategy dag_strategies[];
/* True when the strategy chooses the references of our round r vertex
 * (bad_refs, withhold's bad_refs rounds): dag_adv_refs gives them, and it
 * has no weak references. */
bool dag_adv_hides(const struct dag *d, uint64_t r);
/* The references bad_refs chooses for round r among the authors held[] of
 * round r - 1 (anchor: our anchor, which needs the round quorum): the
 * fewest allowed, those without a path to a recent anchor first. */
void dag_adv_refs(struct dag *d, uint64_t r, const uint32_t *held, uint32_t nheld, bool anchor, uint32_t *refs,
		  uint32_t *nrefs);
/* True when we make no vertex of round r (withhold's skip): our next
 * round is then r + 1, without our own round r vertex. */
bool dag_adv_skips(struct dag *d, uint64_t r);
/* Adds to the batch of our round r vertex (copy_txs): *txs and *lens hold
 * *ntx entries (malloc'd, grown here) of *bytes bytes in all; what is
 * added stays valid until the callback returns. */
void dag_adv_batch(struct dag *d, uint64_t r, const uint8_t ***txs, uint32_t **lens, uint32_t *ntx, uint64_t *bytes);
/* Our round r vertex (bytes, of the batch txs[0..ntx)) went to the BRB
 * (equivocate_refs broadcasts a second one). */
void dag_adv_made(struct dag *d, uint64_t r, const uint8_t *bytes, size_t len, const uint8_t *const *txs, const uint32_t *lens,
		  uint32_t ntx);
/* Called by init before the BRB child starts: a strategy may replace its
 * ops (*brb) and parameters (cp), or host a second instance beside it.  0
 * or an error that fails init. */
int dag_adv_child(struct dag *d, const struct weft_proto_ops **brb, struct weft_mpw *cp);

#endif
