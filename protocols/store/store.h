/* store.h - internals of the storage service (protocols/store), shared by
 * its files: the state, the wire, coding of chunks into shares, fetches
 * and audits.  The public face is weft/store_proto.h. */
#ifndef WEFT_PROTOCOLS_STORE_H
#define WEFT_PROTOCOLS_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/erasure.h"
#include "weft/store_keys.h"
#include "weft/store_proto.h"

#define HASH WEFT_STORE_HASH
#define NONCE_LEN WEFT_FILE_NONCE_LEN

/* Message types: [version, type, ...]. */
enum store_msg {
	MSG_PUT = 1,     /* cid, j, record, [repair, data (empty: a reference)] */
	MSG_ACK = 2,     /* cid, j, code, tag (the file whose PUT it answers) */
	MSG_GET = 3,     /* cid, j */
	MSG_SHARE = 4,   /* cid, j, record, data */
	MSG_NOSHARE = 5, /* cid, j */
	MSG_CHAL = 6,    /* cid, j, nonce */
	MSG_PROOF = 7,   /* cid, j, nonce, index, block, path, sig */
	MSG_NOPROOF = 8, /* cid, j, nonce, sig */
	MSG_MPUT = 9,    /* envelope */
	MSG_MGET = 10,   /* id */
	MSG_MAN = 11,    /* envelope */
	MSG_DROP = 12,   /* id, owner, nonce, sig */
};

/* A chunk's record: how it was coded, every share's root, and the tag
 * (weft_store_tag) of the file whose placement made it, which holders
 * reference the chunk under. */
struct record {
	uint8_t tag[HASH];
	uint32_t k, n;
	uint64_t bloblen;
	uint8_t roots[WEFT_STORE_MAX_N][HASH];
	uint64_t kept_us;        /* local: when this node first kept it (never on the wire) */
};

/* Bits of up to 256 node indices. */
struct nodeset {
	uint64_t w[4];
};

static inline bool nodeset_has(const struct nodeset *s, uint32_t i)
{
	return (s->w[i >> 6] >> (i & 63)) & 1;
}
static inline void nodeset_add(struct nodeset *s, uint32_t i)
{
	s->w[i >> 6] |= UINT64_C(1) << (i & 63);
}
uint32_t nodeset_count(const struct nodeset *s);

/* A chunk being placed. */
struct place {
	bool used, done, failed;
	uint8_t cid[HASH];
	struct record rec;
	uint8_t *shares;         /* n * L bytes while not done */
	size_t L;
	struct nodeset acked;
	uint64_t sent_us;
	uint32_t tries;
	uint64_t finished_us;    /* when done or failed: forgotten if nobody asks within FORGET_US */
	bool repair;             /* a rebuild: sent with the repair flag to `targets` only */
	bool by_ref;             /* the first PUTs were references (no bytes) */
	struct nodeset answered; /* by_ref: holders sent the bytes on their NOTFOUND (once each) */
	struct nodeset targets;
};

/* A chunk being fetched (for a reader, or to rebuild shares). */
enum fetch_state { FETCH_PENDING, FETCH_DONE, FETCH_FAILED };
struct fetch {
	bool used;
	enum fetch_state state;
	uint8_t cid[HASH];
	uint8_t sr[HASH];
	struct record rec;       /* k, n, bloblen from the reader; roots once one checks against sr */
	bool roots_known;
	size_t L;
	uint8_t *share[WEFT_STORE_MAX_N];
	struct nodeset asked, answered, bad;
	uint64_t asked_us[WEFT_STORE_MAX_N];
	uint32_t have;
	uint8_t *blob;           /* bloblen bytes once done */
	const char *why;         /* when failed */
	uint64_t finished_us;    /* when done or failed: forgotten if nobody asks within FORGET_US */
	/* A rebuild: once decoded, shares in `rebuild` are coded again and
	 * placed with the repair flag. */
	bool for_rebuild;
	struct nodeset rebuild;
};

/* An audit challenge in flight. */
struct chal {
	bool used;
	uint8_t cid[HASH];
	uint32_t j, holder;
	uint8_t nonce[32];
	uint8_t root[HASH];
	uint64_t count;          /* blocks of the share */
	size_t L;
	uint64_t sent_us;
};

#define MAX_PLACES 64
#define MAX_FETCHES 64
#define MAX_CHALS 64

struct store_counters {
	uint64_t placed, place_failed, puts_stored, puts_referenced, puts_refused;
	uint64_t fetched, fetch_failed, bad_shares;
	uint64_t audits_sent, audits_passed, audits_failed, audits_missing, audits_timeout;
	uint64_t proofs_given, evidence;
	uint64_t repairs_sent, repairs_stored, rebuilds_failed;
	uint64_t manifests_stored, drops;
};

struct store {
	struct weft_env *env;
	const struct weft_share_service *shares;
	uint32_t default_k, need;
	uint64_t audit_every_us, timeout_us;
	uint64_t audit_grace_us;               /* chunks kept more lately than this are not audited yet */
	struct weft_rs rs[WEFT_STORE_MAX_N + 1]; /* by k, made on first use */
	struct place place[MAX_PLACES];
	struct fetch fetch[MAX_FETCHES];
	struct chal chal[MAX_CHALS];
	/* the repair sweep over records: next key, active */
	bool sweeping;
	uint8_t sweep_from[HASH];
	uint8_t audit_cursor[HASH];            /* audits walk the records from here (audit.c) */
	uint64_t sweep_window_us;              /* the sweep's pace: chunks checked this second */
	uint32_t swept_in_window;
	uint64_t evidence_seq;
	struct store_counters c;
	uint64_t peer_bad[WEFT_STORE_MAX_N];   /* bad shares or proofs, by peer */
	uint64_t peer_timeouts[WEFT_STORE_MAX_N];
	uint64_t suspect_until_us[WEFT_STORE_MAX_N]; /* a peer that timed out is asked last until then */
	uint64_t proof_window_us[WEFT_STORE_MAX_N]; /* proofs answered per peer and second */
	uint32_t proofs_in_window[WEFT_STORE_MAX_N];
	struct nodeset convicted;              /* peers we hold evidence against: never repaired to */
	struct recent_repair {
		uint8_t cid[HASH];
		uint32_t holder;
		uint64_t at_us;
	} recent[64];                          /* rebuilds lately asked, to pace repeats */
	uint32_t recent_next;
	bool unsafe_trust_shares;              /* params.store_unsafe = "trust_shares": the broken variant */
	struct weft_mpw out;                   /* message scratch */
	bool tick_armed;
};

/* A Byzantine holder (adversary.c): the honest service, run inside an env
 * whose share store or sends the strategy bends.  honest comes first, so
 * the honest callbacks take the strategy's state as their own. */
enum store_adv_mode {
	ADV_DROP,    /* acknowledges every share, keeps only some (permille kept = 1000 - drop) */
	ADV_CORRUPT, /* serves shares with a flipped byte */
	ADV_LIE,     /* answers challenges with a wrong block, correctly signed */
};

struct store_adv {
	struct store honest;
	struct weft_env_wrap wrap;
	struct weft_share_service svc;
	const struct weft_share_service *inner;
	enum store_adv_mode mode;
	uint32_t permille;       /* how often it misbehaves, per thousand */
	uint64_t rng;            /* its own choices: a splitmix state seeded from env random */
	uint64_t misdeeds;
};

int store_adv_drop_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen);
int store_adv_corrupt_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen);
int store_adv_lie_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen);

/* audit.c: the statement a proof signs. */
#define PROOF_LABEL "weft.store.v1.proof"
#define PROOF_STMT_LEN (sizeof(PROOF_LABEL) + HASH + 4 + 32 + 8 + HASH + HASH + HASH)
/* Everything that decides whether the proof checks is signed, the path
 * too (as its hash): a signed proof that fails is the signer's own. */
void store_proof_statement(uint8_t out[PROOF_STMT_LEN], const uint8_t cid[HASH], uint32_t j, const uint8_t nonce[32],
			   uint64_t index, const uint8_t leaf[HASH], const uint8_t root[HASH], const uint8_t *path,
			   size_t pathlen);

/* store.c */
void store_metric(struct store *s, uint64_t *counter, const char *name);
void store_arm_tick(struct store *s);
int store_record_get(struct store *s, const uint8_t cid[HASH], struct record *rec);
/* A record as kept in kv: [record, kept_us]. */
int store_record_decode(const void *val, size_t vlen, struct record *rec, uint32_t n);
void store_record_write(struct weft_mpw *w, const struct record *rec);
int store_record_read(struct weft_mp_reader *r, struct record *rec, uint32_t n);
const struct weft_rs *store_rs(struct store *s, uint32_t k);
/* Codes blob into rec->n shares of L bytes (malloc'd n * L) and fills
 * rec's roots; rec's k, n and bloblen are set by the caller. */
uint8_t *store_code(struct store *s, const uint8_t *blob, const uint8_t cid[HASH], struct record *rec, size_t *L);
int store_start_fetch(struct store *s, const uint8_t cid[HASH], const uint8_t *sr, const struct record *known,
		      uint32_t k, uint64_t bloblen, struct fetch **out);
/* Places shares (taken over: n * L bytes) of cid coded as rec: the own
 * share kept here, a PUT to each other holder in targets (NULL: all).
 * by_ref: the first PUTs carry no bytes, only the reference (a holder
 * that has the share keeps it for rec's file; one that has not answers
 * WEFT_NOTFOUND and gets the bytes). */
int store_start_place(struct store *s, const uint8_t cid[HASH], const struct record *rec, uint8_t *shares,
		      size_t L, bool repair, bool by_ref, const struct nodeset *targets, struct place **out);

/* audit.c */
int store_on_chal(struct store *s, uint32_t from, struct weft_mp_reader *r);
int store_on_proof(struct store *s, uint32_t from, struct weft_mp_reader *r, const uint8_t *msg, size_t len);
int store_on_noproof(struct store *s, uint32_t from, struct weft_mp_reader *r);
/* Sends up to count challenges; scheduled ones skip chunks kept less
 * than audit_grace_us ago.  Returns how many were sent. */
int store_audit_now(struct store *s, uint32_t count, bool scheduled);
/* Checks our share of cid and challenges its other holders: 0 with the
 * count, WEFT_NOTFOUND without a record here, WEFT_EAGAIN when busy. */
int store_repair_chunk(struct store *s, const uint8_t cid[HASH], uint32_t *challenged);
void store_audit_tick(struct store *s, uint64_t now);
void store_sweep_tick(struct store *s);
void store_rebuild(struct store *s, const uint8_t cid[HASH], const struct record *rec, uint32_t j);
void store_evidence_write(struct store *s, struct weft_mpw *w);

#endif
