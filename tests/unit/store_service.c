/* store_service.c - tests of the storage service's protocol (protocols/store)
 * on real instances hosted on fake envs (tests/lib/fakeenv.h), each with an
 * in-memory share store, exchanging their messages directly: the cases
 * tla/StoreChunk.tla found, each once a bug.
 *
 *   eexist    a holder whose share store holds other bytes for the share
 *             and no record (a crash between the share store's commit and
 *             kv's) answers the placer's PUT with EEXIST, not ACK 0: it
 *             keeps no record and cannot serve the share, so the placer
 *             must not count it (tla StoreFindEexistAck).
 *   retry     a chunk whose placement failed is placed again when its file
 *             is put again: a record kept here is not "placed" (tla
 *             StoreFindDedupRetry).
 *   two files a chunk two files share is placed for each: every holder
 *             references it under both, and an ACK that answered the
 *             first file's PUT does not count for the second's (tla
 *             StoreFindDedupDrop, StoreDropFixNoTag).
 *   hostile   an empty share with the repair flag (a reference cannot
 *             repair) and an ACK without the file's tag are refused. */
#include <stdlib.h>
#include <string.h>

#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/mp.h"
#include "weft/store_proto.h"

extern const struct weft_proto_ops weft_store_service;

#define NODES 4
#define BLOB_LEN 10000

/* ---- an in-memory share store for one chunk: shares by index, tags ---- */

struct mem {
	uint8_t *share[NODES];
	size_t len[NODES];
	uint8_t root[NODES][32];
	uint8_t tags[8][32];
	int ntags;
};

static int m_put(void *ctx, const uint8_t cid[32], uint16_t j, const void *d, size_t len, const uint8_t root[32],
		 bool repair)
{
	(void)cid;
	struct mem *m = ctx;
	if (j >= NODES)
		return WEFT_EINVAL;
	if (m->share[j] && !(m->len[j] == len && memcmp(m->share[j], d, len) == 0) && !repair)
		return WEFT_EEXIST;
	free(m->share[j]);
	m->share[j] = malloc(len ? len : 1);
	if (m->share[j] == NULL)
		abort();
	memcpy(m->share[j], d, len);
	m->len[j] = len;
	memcpy(m->root[j], root, 32);
	return 0;
}

static int m_copy(void *ctx, const uint8_t cid[32], uint16_t j, void **d, size_t *len)
{
	(void)cid;
	struct mem *m = ctx;
	if (j >= NODES || !m->share[j])
		return WEFT_NOTFOUND;
	*d = malloc(m->len[j] ? m->len[j] : 1);
	if (*d == NULL)
		abort();
	memcpy(*d, m->share[j], m->len[j]);
	*len = m->len[j];
	return 0;
}

static int m_has(void *ctx, const uint8_t cid[32], uint16_t j, struct weft_share_meta *meta)
{
	(void)cid;
	struct mem *m = ctx;
	if (j >= NODES || !m->share[j])
		return WEFT_NOTFOUND;
	if (meta) {
		memset(meta, 0, sizeof(*meta));
		meta->length = m->len[j];
		memcpy(meta->root, m->root[j], 32);
	}
	return 0;
}

static int m_del(void *ctx, const uint8_t cid[32], uint16_t j)
{
	(void)cid;
	struct mem *m = ctx;
	if (j < NODES) {
		free(m->share[j]);
		m->share[j] = NULL;
	}
	return 0;
}

static int m_ref(void *ctx, const uint8_t file[32], const uint8_t (*cids)[32], size_t n)
{
	(void)cids, (void)n;
	struct mem *m = ctx;
	for (int i = 0; i < m->ntags; i++)
		if (memcmp(m->tags[i], file, 32) == 0)
			return 0;
	if (m->ntags == 8)
		return WEFT_EINVAL;
	memcpy(m->tags[m->ntags++], file, 32);
	return 0;
}

static int m_unref(void *ctx, const uint8_t file[32])
{
	struct mem *m = ctx;
	for (int i = 0; i < m->ntags; i++)
		if (memcmp(m->tags[i], file, 32) == 0) {
			memmove(m->tags[i], m->tags[i + 1], (size_t)(m->ntags - i - 1) * 32);
			m->ntags--;
			break;
		}
	return 0;
}

static void mem_free(struct mem *m)
{
	for (int j = 0; j < NODES; j++)
		free(m->share[j]);
	memset(m, 0, sizeof(*m));
}

/* ---- nodes ---- */

struct node {
	struct fake_env fe;
	struct weft_share_service svc;
	struct mem m;
	void *st;
};

static struct node nodes[NODES];

static const void *service(struct fake_env *fe, const char *name)
{
	struct node *nd = fe->service_ctx;
	return strcmp(name, WEFT_SHARE_SERVICE) == 0 ? &nd->svc : NULL;
}

static void boot(uint32_t self)
{
	struct node *nd = &nodes[self];
	memset(&nd->m, 0, sizeof(nd->m));
	nd->svc = (struct weft_share_service){.ctx = &nd->m, .put = m_put, .copy = m_copy, .has = m_has, .del = m_del,
					      .ref = m_ref, .unref = m_unref};
	fake_env_init(&nd->fe, self, NODES);
	fake_env_set_service(&nd->fe, service, nd);
	nd->st = calloc(1, weft_store_service.state_size);
	if (nd->st == NULL || weft_store_service.init(nd->st, &nd->fe.env, NULL, 0) != 0 ||
	    weft_store_service.start(nd->st) != 0)
		abort();
}

static void down(uint32_t self)
{
	struct node *nd = &nodes[self];
	weft_store_service.destroy(nd->st);
	free(nd->st);
	fake_env_free(&nd->fe);
	mem_free(&nd->m);
}

/* Delivers what node `from` sent to node `to` of this kind; returns how
 * many messages. */
static int relay(uint32_t from, uint32_t to, const char *kind)
{
	int n = 0;
	struct fake_env *fe = &nodes[from].fe;
	for (size_t i = 0; i < fe->nsent; i++) {
		const struct fake_sent *s = &fe->sent[i];
		if (s->to != (int64_t)to || strcmp(s->kind, kind) != 0)
			continue;
		weft_store_service.on_message(nodes[to].st, from, s->data, s->len);
		n++;
	}
	return n;
}

/* The code of the first ACK node `from` sent (INT64_MIN: none). */
static int64_t ack_code(uint32_t from)
{
	struct fake_env *fe = &nodes[from].fe;
	for (size_t i = 0; i < fe->nsent; i++)
		if (strcmp(fe->sent[i].kind, "store.ack") == 0) {
			struct weft_mp_reader r;
			uint32_t cnt, cl;
			uint64_t version, type, j;
			const uint8_t *c;
			int64_t code;
			weft_mp_reader_init(&r, fe->sent[i].data, fe->sent[i].len);
			if (weft_mp_read_array(&r, &cnt) == 0 && weft_mp_read_uint(&r, &version) == 0 &&
			    weft_mp_read_uint(&r, &type) == 0 && weft_mp_read_bin(&r, &c, &cl) == 0 &&
			    weft_mp_read_uint(&r, &j) == 0 && weft_mp_read_int(&r, &code) == 0)
				return code;
		}
	return INT64_MIN;
}

/* A boolean of a command's reply map (false when absent). */
static bool reply_flag(const struct weft_mpw *reply, const char *key)
{
	uint64_t v = 0;
	const uint8_t *raw;
	size_t rlen;
	if (weft_params_value(reply->buf, reply->len, key, &raw, &rlen) == 0 && rlen == 1)
		v = raw[0] == 0xc3;
	return v;
}

/* store.place of blob under tag at node `at`; *done (if not NULL) from
 * the reply. */
static int place_done(uint32_t at, const uint8_t tag[32], const uint8_t cid[32], const uint8_t *blob, size_t len,
		      bool *done)
{
	struct weft_mpw a, reply;
	weft_mpw_init(&a);
	weft_mpw_init(&reply);
	weft_mpw_array(&a, 4);
	weft_mpw_bin(&a, tag, 32);
	weft_mpw_bin(&a, cid, 32);
	weft_mpw_uint(&a, 0); /* k = f + 1 */
	weft_mpw_bin(&a, blob, (uint32_t)len);
	int rc = weft_store_service.command(nodes[at].st, "store.place", a.buf, a.len, &reply);
	if (done)
		*done = rc == 0 && reply_flag(&reply, "done");
	weft_mpw_free(&a);
	weft_mpw_free(&reply);
	return rc;
}

static int place(uint32_t at, const uint8_t tag[32], const uint8_t cid[32], const uint8_t *blob, size_t len)
{
	return place_done(at, tag, cid, blob, len, NULL);
}

/* store.placed [cid, tag] at node `at`: "done", "failed" or "pending", or
 * "notfound". */
static const char *placed(uint32_t at, const uint8_t tag[32], const uint8_t cid[32])
{
	struct weft_mpw a, reply;
	weft_mpw_init(&a);
	weft_mpw_init(&reply);
	weft_mpw_array(&a, 2);
	weft_mpw_bin(&a, cid, 32);
	weft_mpw_bin(&a, tag, 32);
	int rc = weft_store_service.command(nodes[at].st, "store.placed", a.buf, a.len, &reply);
	const char *state = rc == WEFT_NOTFOUND		 ? "notfound"
			    : rc != 0			 ? "error"
			    : reply_flag(&reply, "done")	 ? "done"
			    : reply_flag(&reply, "failed") ? "failed"
							 : "pending";
	weft_mpw_free(&a);
	weft_mpw_free(&reply);
	return state;
}

/* Lets node `at`'s clock run `us` and fires its tick timer. */
static void tick(uint32_t at, uint64_t us)
{
	nodes[at].fe.now_us += us;
	weft_store_service.on_timer(nodes[at].st, 1);
}

/* Whether node h's share store references the chunk under tag. */
static bool refs_tag(uint32_t h, const uint8_t tag[32])
{
	for (int i = 0; i < nodes[h].m.ntags; i++)
		if (memcmp(nodes[h].m.tags[i], tag, 32) == 0)
			return true;
	return false;
}

static uint32_t share_of(const uint8_t cid[32], uint32_t holder)
{
	return (holder + NODES - weft_be32_get(cid) % NODES) % NODES;
}

static void test_eexist(const uint8_t cid[32], const uint8_t *blob)
{
	uint8_t tag[32], other[BLOB_LEN];
	memset(tag, 1, sizeof(tag));
	for (size_t i = 0; i < sizeof(other); i++)
		other[i] = (uint8_t)(i * 13 + 5);
	boot(0);
	boot(2);
	/* Node 2's share store holds other bytes for its share, kv no record. */
	uint32_t j = share_of(cid, 2);
	m_put(&nodes[2].m, cid, (uint16_t)j, other, 5000, cid, false);
	is_int(place(0, tag, cid, blob, BLOB_LEN), 0, "eexist: node 0 places the chunk");
	fake_env_clear(&nodes[2].fe);
	ok(relay(0, 2, "store.put") == 1, "eexist: its PUT of share %u reaches node 2", j);
	is_int((int)ack_code(2), WEFT_EEXIST, "eexist: node 2, holding other bytes, answers EEXIST, not ACK 0");
	void *d = NULL;
	size_t len = 0;
	ok(m_copy(&nodes[2].m, cid, (uint16_t)j, &d, &len) == 0 && len == 5000,
	   "eexist: and its share store still holds the other bytes");
	free(d);
	down(0);
	down(2);
}

/* The placement of a chunk fails (its PUTs are lost); the file is put
 * again: the chunk is placed again, not taken as placed from the record
 * node 0 kept of its own share. */
static void test_retry(const uint8_t cid[32], const uint8_t *blob)
{
	uint8_t tag[32];
	memset(tag, 2, sizeof(tag));
	for (uint32_t h = 0; h < NODES; h++)
		boot(h);
	bool done = true;
	is_int(place_done(0, tag, cid, blob, BLOB_LEN, &done), 0, "retry: node 0 places the chunk");
	ok(!done, "retry: not done at once (only its own share)");
	for (int t = 0; t < 6; t++)
		tick(0, 1100000); /* every PUT lost: five tries, then failed */
	is_str(placed(0, tag, cid), "failed", "retry: the placement fails");
	fake_env_clear(&nodes[0].fe);
	is_int(place_done(0, tag, cid, blob, BLOB_LEN, &done), 0, "retry: the file is put again");
	ok(!done, "retry: the chunk is not taken as placed from the record kept here");
	int puts = 0;
	for (uint32_t h = 1; h < NODES; h++)
		puts += relay(0, h, "store.put");
	is_int(puts, NODES - 1, "retry: PUTs go to every other holder again (references: kept here before)");
	for (uint32_t h = 1; h < NODES; h++)
		is_int((int)ack_code(h), WEFT_NOTFOUND, "retry: node %u, without the share, answers the reference NOTFOUND", h);
	fake_env_clear(&nodes[0].fe);
	for (uint32_t h = 1; h < NODES; h++) {
		relay(h, 0, "store.ack");
		relay(h, 0, "store.ack"); /* the same NOTFOUND twice */
		fake_env_clear(&nodes[h].fe);
	}
	puts = 0;
	for (uint32_t h = 1; h < NODES; h++)
		puts += relay(0, h, "store.put");
	is_int(puts, NODES - 1, "retry: and gets the PUT with the bytes at once, once (a repeated NOTFOUND buys no more)");
	for (uint32_t h = 1; h < NODES; h++)
		relay(h, 0, "store.ack");
	is_str(placed(0, tag, cid), "done", "retry: done once the holders acknowledged");
	for (uint32_t h = 0; h < NODES; h++)
		down(h);
}

/* Two files share a chunk.  t1 is placed everywhere; then t2: every
 * holder must take a reference under t2 too (so dropping t1 frees
 * nothing t2 needs), and an ACK of t1's PUT arriving late does not count
 * for t2. */
static void test_two_files(const uint8_t cid[32], const uint8_t *blob)
{
	uint8_t t1[32], t2[32];
	memset(t1, 3, sizeof(t1));
	memset(t2, 4, sizeof(t2));
	for (uint32_t h = 0; h < NODES; h++)
		boot(h);
	is_int(place(0, t1, cid, blob, BLOB_LEN), 0, "two files: t1 placed");
	for (uint32_t h = 1; h < NODES; h++)
		relay(0, h, "store.put");
	for (uint32_t h = 1; h < NODES - 1; h++) /* node 3's ACK of t1 kept back */
		relay(h, 0, "store.ack");
	is_str(placed(0, t1, cid), "done", "two files: t1 done with nodes 1 and 2 (and 0)");
	fake_env_clear(&nodes[0].fe);
	bool done = true;
	m_del(&nodes[2].m, cid, (uint16_t)share_of(cid, 2)); /* node 2 lost its share since */
	is_int(place_done(0, t2, cid, blob, BLOB_LEN, &done), 0, "two files: t2, sharing the chunk, placed");
	ok(!done, "two files: t2 is not done from t1's record");
	size_t longest = 0;
	for (size_t i = 0; i < nodes[0].fe.nsent; i++)
		if (strcmp(nodes[0].fe.sent[i].kind, "store.put") == 0 && nodes[0].fe.sent[i].len > longest)
			longest = nodes[0].fe.sent[i].len;
	ok(longest > 0 && longest < 1000, "two files: t2's PUTs are references, without the share bytes (%zu bytes)",
	   longest);
	relay(3, 0, "store.ack"); /* node 3's ACK of t1's PUT, late */
	is_str(placed(0, t2, cid), "pending", "two files: a late ACK of t1's PUT does not count for t2");
	for (uint32_t h = 1; h < NODES; h++) {
		fake_env_clear(&nodes[h].fe);
		relay(0, h, "store.put");
		relay(h, 0, "store.ack");
	}
	fake_env_clear(&nodes[2].fe);
	ok(relay(0, 2, "store.put") == 2, "two files: node 2, which lost its share, gets the bytes after its NOTFOUND");
	relay(2, 0, "store.ack");
	ok(nodes[2].m.share[share_of(cid, 2)] != NULL, "two files: and holds its share again");
	is_str(placed(0, t2, cid), "done", "two files: t2 done once the holders acknowledged its PUTs");
	bool all = true;
	for (uint32_t h = 0; h < NODES; h++)
		all = all && refs_tag(h, t1) && refs_tag(h, t2);
	ok(all, "two files: every holder references the chunk under t1 and t2");
	for (uint32_t h = 0; h < NODES; h++)
		down(h);
}

/* What node 0's PUT to holder h of cid looked like, with its share bytes
 * replaced by `len` bytes and the repair flag set to `repair`. */
static void forged_put(struct weft_mpw *m, const uint8_t cid[32], uint32_t h, size_t len, bool repair)
{
	const struct fake_env *fe = &nodes[0].fe;
	for (size_t i = 0; i < fe->nsent; i++) {
		if (fe->sent[i].to != (int64_t)h || strcmp(fe->sent[i].kind, "store.put") != 0)
			continue;
		struct weft_mp_reader r;
		uint32_t cnt, dlen;
		uint64_t v;
		const uint8_t *c, *d;
		bool flag;
		weft_mp_reader_init(&r, fe->sent[i].data, fe->sent[i].len);
		if (weft_mp_read_array(&r, &cnt) || weft_mp_read_uint(&r, &v) || weft_mp_read_uint(&r, &v) ||
		    weft_mp_read_bin(&r, &c, &dlen) || weft_mp_read_uint(&r, &v))
			continue;
		const uint8_t *rec_start = r.p;
		uint32_t rc;
		if (weft_mp_read_array(&r, &rc) != 0)
			continue;
		for (uint32_t k = 0; k < rc; k++)
			weft_mp_skip(&r);
		size_t rec_len = (size_t)(r.p - rec_start);
		if (weft_mp_read_array(&r, &cnt) || weft_mp_read_bool(&r, &flag) || weft_mp_read_bin(&r, &d, &dlen))
			continue;
		uint8_t *bytes = calloc(1, len ? len : 1);
		if (bytes == NULL)
			abort();
		weft_mpw_array(m, 6);
		weft_mpw_uint(m, WEFT_STORE_PROTO_VERSION);
		weft_mpw_uint(m, 1); /* MSG_PUT */
		weft_mpw_bin(m, cid, 32);
		weft_mpw_uint(m, share_of(cid, h));
		weft_mpw_raw(m, rec_start, rec_len);
		weft_mpw_array(m, 2);
		weft_mpw_bool(m, repair);
		weft_mpw_bin(m, bytes, len);
		free(bytes);
		return;
	}
}

static void test_hostile(const uint8_t cid[32], const uint8_t *blob)
{
	uint8_t tag[32];
	memset(tag, 5, sizeof(tag));
	for (uint32_t h = 0; h < NODES; h++)
		boot(h);
	is_int(place(0, tag, cid, blob, BLOB_LEN), 0, "hostile: node 0 places the chunk");
	struct weft_mpw m;
	weft_mpw_init(&m);
	forged_put(&m, cid, 1, 0, true);
	ok(m.len > 0, "hostile: a PUT to node 1 with no bytes and the repair flag");
	is_int(weft_store_service.on_message(nodes[1].st, 2, m.buf, m.len), WEFT_EPROTO,
	       "hostile: refused (a reference cannot repair)");
	ok(nodes[1].m.share[share_of(cid, 1)] == NULL && nodes[1].m.ntags == 0, "hostile: node 1 keeps nothing");
	/* An ACK of the old form, [cid, j, code] without the tag. */
	weft_mpw_reset(&m);
	weft_mpw_array(&m, 5);
	weft_mpw_uint(&m, WEFT_STORE_PROTO_VERSION);
	weft_mpw_uint(&m, 2); /* MSG_ACK */
	weft_mpw_bin(&m, cid, 32);
	weft_mpw_uint(&m, share_of(cid, 1));
	weft_mpw_int(&m, 0);
	is_int(weft_store_service.on_message(nodes[0].st, 1, m.buf, m.len), WEFT_EDECODE,
	       "hostile: an ACK without the file's tag is malformed");
	is_str(placed(0, tag, cid), "pending", "hostile: and does not count");
	weft_mpw_free(&m);
	for (uint32_t h = 0; h < NODES; h++)
		down(h);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	uint8_t blob[BLOB_LEN], cid[32];
	for (size_t i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 7 + 3);
	weft_merkle_root(cid, blob, sizeof(blob));
	test_eexist(cid, blob);
	test_retry(cid, blob);
	test_two_files(cid, blob);
	test_hostile(cid, blob);
	return done_testing();
}
