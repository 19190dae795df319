/* store_service.c - tests of the storage service's protocol (protocols/store)
 * on real instances hosted on fake envs (tests/lib/fakeenv.h), each with an
 * in-memory share store, exchanging their messages directly: the cases
 * tla/StoreChunk.tla found, each once a bug.
 *
 *   eexist    a holder whose share store holds other bytes for the share
 *             and no record (a crash between the share store's commit and
 *             kv's) answers the placer's PUT with EEXIST, not ACK 0: it
 *             keeps no record and cannot serve the share, so the placer
 *             must not count it (tla StoreFindEexistAck). */
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
	uint8_t tags[8][32];
	int ntags;
};

static int m_put(void *ctx, const uint8_t cid[32], uint16_t j, const void *d, size_t len, const uint8_t root[32],
		 bool repair)
{
	(void)cid, (void)root;
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
	(void)cid, (void)meta;
	return j < NODES && ((struct mem *)ctx)->share[j] ? 0 : WEFT_NOTFOUND;
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

/* store.place of blob under tag at node `at`. */
static int place(uint32_t at, const uint8_t tag[32], const uint8_t cid[32], const uint8_t *blob, size_t len)
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
	weft_mpw_free(&a);
	weft_mpw_free(&reply);
	return rc;
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

int main(void)
{
	if (weft_crypto_init() != 0)
		return 1;
	uint8_t blob[BLOB_LEN], cid[32];
	for (size_t i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 7 + 3);
	weft_merkle_root(cid, blob, sizeof(blob));
	test_eexist(cid, blob);
	return done_testing();
}
