/* tests/unit/secure.c - TAP tests for the peer secure channel (weft/secure.h).
 *
 * Two channel ends are driven in memory with deterministic identities:
 * the handshake and what each side learns; records of many sizes both ways,
 * batched and opened in place; an independent implementation of the
 * specified transcript, key schedule and record format (hand-built REPLY
 * and FINISH, raw libsodium AEAD) that must interoperate with the channel;
 * tamper at every byte, replay, reorder, drop, reflection, truncation and
 * sticky failure; committee and expected-key refusals, forged and
 * mislabelled signatures, a swapped ephemeral, replayed handshake records,
 * a low-order ephemeral; every truncation and thousands of random
 * mutations of each handshake record; size limits; misuse of the API; and
 * forward secrecy (two sessions never share keys). */
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/secure.h"

/* A (initiator), B (responder), C (outsider), D (committee filler). */
static struct weft_identity *id_a, *id_b, *id_c, *id_d;

/* The committee as the responder sees it: B = 0, D = 1, A = 2. */
static int committee_check(void *ctx, const uint8_t pk[WEFT_PK_LEN])
{
	const struct weft_identity *members[] = {id_b, id_d, id_a};
	int *calls = ctx;

	if (calls)
		(*calls)++;
	for (int i = 0; i < 3; i++)
		if (memcmp(pk, members[i]->pk, WEFT_PK_LEN) == 0)
			return i;
	return -1;
}

static int reject_all(void *ctx, const uint8_t pk[WEFT_PK_LEN])
{
	return -1;
}

static bool is_error(int rc)
{
	return rc == WEFT_EPROTO || rc == WEFT_ETOOBIG || rc == WEFT_EPERM || rc == WEFT_ECRYPTO;
}

/* ---- deterministic PRNG (xorshift64*) ------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed + (i >> 8));
}

/* ---- buffers and records -------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t len;
};

static struct buf buf_of(const uint8_t *p, size_t len)
{
	struct buf b = {malloc(len ? len : 1), len};

	if (b.p == NULL)
		abort();
	memcpy(b.p, p, len);
	return b;
}

static struct buf buf_of_mpw(const struct weft_mpw *w)
{
	return buf_of(w->buf, w->len);
}

static void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
}

/* A record holding body[0..len). */
static struct buf record_of(const uint8_t *body, size_t len)
{
	struct buf b = {malloc(len + 4), len + 4};

	if (b.p == NULL)
		abort();
	weft_be32_put(b.p, (uint32_t)len);
	if (len)
		memcpy(b.p + 4, body, len);
	return b;
}

/* Feeds one whole buffer to weft_sc_handshake; the answer (if any) goes to
 * ans (reset first).  Returns the handshake result. */
static int feed(struct weft_sc *sc, const struct buf *in, struct weft_mpw *ans, size_t *consumed)
{
	size_t dummy;

	weft_mpw_reset(ans);
	return weft_sc_handshake(sc, in->p, in->len, consumed ? consumed : &dummy, ans);
}

/* The three handshake records of one session, as sent. */
struct transcript {
	struct buf hello, reply, finish;
};

static void transcript_free(struct transcript *t)
{
	buf_free(&t->hello);
	buf_free(&t->reply);
	buf_free(&t->finish);
}

/* Runs a whole handshake between fresh ends i (expects B) and r (committee).
 * Returns true when both ends are established; t (optional) keeps the
 * records. */
static bool connect_pair(struct weft_sc **i, struct weft_sc **r, struct transcript *t)
{
	struct weft_mpw w;
	struct buf hello, reply, finish;
	size_t used;
	bool okay = true;

	*i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	*r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	weft_mpw_init(&w);
	okay &= weft_sc_start(*i, &w) == 0;
	hello = buf_of_mpw(&w);
	okay &= feed(*r, &hello, &w, &used) == 0 && used == hello.len;
	reply = buf_of_mpw(&w);
	okay &= feed(*i, &reply, &w, &used) == 1 && used == reply.len;
	finish = buf_of_mpw(&w);
	okay &= feed(*r, &finish, &w, &used) == 1 && used == finish.len && w.len == 0;
	okay &= weft_sc_established(*i) && weft_sc_established(*r);
	weft_mpw_free(&w);
	if (t) {
		t->hello = hello;
		t->reply = reply;
		t->finish = finish;
	} else {
		buf_free(&hello);
		buf_free(&reply);
		buf_free(&finish);
	}
	return okay;
}

/* Seals msg on from and opens it on to; true when it arrives intact. */
static bool roundtrip(struct weft_sc *from, struct weft_sc *to, const uint8_t *msg, size_t len)
{
	struct weft_mpw w;
	uint8_t *plain = malloc(len ? len : 1);
	size_t body = 0, plen = 0;
	bool good;

	if (plain == NULL)
		abort();
	weft_mpw_init(&w);
	good = weft_sc_seal(from, msg, len, &w) == 0 && w.len == 4 + len + WEFT_SC_TAG &&
	       weft_sc_record_len(w.buf, w.len, len + WEFT_SC_TAG, &body) == 0 &&
	       body == len + WEFT_SC_TAG &&
	       weft_sc_open(to, w.buf, 4 + body, plain, &plen) == 0 && plen == len &&
	       memcmp(plain, msg, len) == 0;
	weft_mpw_free(&w);
	free(plain);
	return good;
}

/* Seals msg on sc into a fresh buffer. */
static struct buf seal(struct weft_sc *sc, const void *msg, size_t len)
{
	struct weft_mpw w;
	struct buf b;

	weft_mpw_init(&w);
	if (weft_sc_seal(sc, msg, len, &w) != 0)
		abort();
	b = buf_of_mpw(&w);
	weft_mpw_free(&w);
	return b;
}

static int open_buf(struct weft_sc *sc, const struct buf *rec, uint8_t *plain, size_t *plen)
{
	return weft_sc_open(sc, rec->p, rec->len, plain, plen);
}

/* ---- an independent implementation of the spec ----------------------------- */

static size_t rec_begin(struct weft_mpw *w)
{
	size_t off = w->len;

	weft_mpw_raw(w, "\0\0\0\0", 4);
	return off;
}

static void rec_end(struct weft_mpw *w, size_t off)
{
	weft_be32_put(w->buf + off, (uint32_t)(w->len - off - 4));
}

static struct buf make_hello(const uint8_t *pk_i, const uint8_t *e_i, const uint8_t *want_r)
{
	struct weft_mpw w;
	struct buf b;
	size_t off;

	weft_mpw_init(&w);
	off = rec_begin(&w);
	weft_mpw_array(&w, 6);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 0);
	weft_mpw_str(&w, "weft");
	weft_mpw_bin(&w, pk_i, 32);
	weft_mpw_bin(&w, e_i, 32);
	weft_mpw_bin(&w, want_r, 32);
	rec_end(&w, off);
	b = buf_of_mpw(&w);
	weft_mpw_free(&w);
	return b;
}

static struct buf make_reply(const uint8_t *pk_r, const uint8_t *e_r, const uint8_t *sig)
{
	struct weft_mpw w;
	struct buf b;
	size_t off;

	weft_mpw_init(&w);
	off = rec_begin(&w);
	weft_mpw_array(&w, 5);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 1);
	weft_mpw_bin(&w, pk_r, 32);
	weft_mpw_bin(&w, e_r, 32);
	weft_mpw_bin(&w, sig, 64);
	rec_end(&w, off);
	b = buf_of_mpw(&w);
	weft_mpw_free(&w);
	return b;
}

static struct buf make_finish(const uint8_t *sig)
{
	struct weft_mpw w;
	struct buf b;
	size_t off;

	weft_mpw_init(&w);
	off = rec_begin(&w);
	weft_mpw_array(&w, 3);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 2);
	weft_mpw_bin(&w, sig, 64);
	rec_end(&w, off);
	b = buf_of_mpw(&w);
	weft_mpw_free(&w);
	return b;
}

/* H = BLAKE2b-256(HELLO body || pk_r || e_r), from the HELLO record. */
static void transcript_hash(const struct buf *hello, const uint8_t *pk_r, const uint8_t *e_r, uint8_t h[32])
{
	struct weft_hasher hs;

	weft_hasher_init(&hs);
	weft_hasher_update(&hs, hello->p + 4, hello->len - 4);
	weft_hasher_update(&hs, pk_r, 32);
	weft_hasher_update(&hs, e_r, 32);
	weft_hasher_final(&hs, h);
}

/* sign(id, label || H) */
static void sign_label(const struct weft_identity *id, const char *label, const uint8_t h[32], uint8_t sig[64])
{
	uint8_t msg[9 + 32];

	memcpy(msg, label, 9);
	memcpy(msg + 9, h, 32);
	weft_sign(id, sig, msg, sizeof(msg));
}

/* Reads pk_r and e_r from a REPLY record. */
static bool parse_reply(const struct buf *reply, uint8_t pk_r[32], uint8_t e_r[32])
{
	struct weft_mp_reader r;
	uint32_t n = 0;
	uint64_t v = 9, t = 9;

	weft_mp_reader_init(&r, reply->p + 4, reply->len - 4);
	weft_mp_read_array(&r, &n);
	weft_mp_read_uint(&r, &v);
	weft_mp_read_uint(&r, &t);
	weft_mp_read_bin_fixed(&r, pk_r, 32);
	weft_mp_read_bin_fixed(&r, e_r, 32);
	return r.err == 0 && n == 5 && v == 1 && t == 1;
}

/* Reads e_i from a HELLO record. */
static bool parse_hello_e(const struct buf *hello, uint8_t e_i[32])
{
	struct weft_mp_reader r;
	uint32_t n = 0, ml = 0;
	uint64_t v = 9, t = 9;
	const char *m;
	uint8_t pk[32];

	weft_mp_reader_init(&r, hello->p + 4, hello->len - 4);
	weft_mp_read_array(&r, &n);
	weft_mp_read_uint(&r, &v);
	weft_mp_read_uint(&r, &t);
	weft_mp_read_str(&r, &m, &ml);
	weft_mp_read_bin_fixed(&r, pk, 32);
	weft_mp_read_bin_fixed(&r, e_i, 32);
	return r.err == 0 && n == 6 && v == 1 && t == 0 && ml == 4;
}

/* key = BLAKE2b-256(key = kx, "weft-sc-key" || H) */
static void spec_key(const uint8_t kx[32], const uint8_t h[32], uint8_t out[32])
{
	uint8_t msg[11 + 32];

	memcpy(msg, "weft-sc-key", 11);
	memcpy(msg + 11, h, 32);
	crypto_generichash(out, 32, msg, sizeof(msg), kx, 32);
}

static void spec_nonce(uint8_t n[12], uint64_t ctr)
{
	memset(n, 0, 12);
	for (int i = 0; i < 8; i++)
		n[4 + i] = (uint8_t)(ctr >> (8 * i));
}

/* A record sealed by raw libsodium. */
static struct buf spec_seal(const uint8_t key[32], uint64_t ctr, const uint8_t *msg, size_t len)
{
	struct buf b = {malloc(4 + len + 16), 4 + len + 16};
	uint8_t nonce[12];
	unsigned long long clen;

	if (b.p == NULL)
		abort();
	weft_be32_put(b.p, (uint32_t)(len + 16));
	spec_nonce(nonce, ctr);
	crypto_aead_chacha20poly1305_ietf_encrypt(b.p + 4, &clen, msg, len, b.p, 4, NULL, nonce, key);
	return b;
}

static bool spec_open(const uint8_t key[32], uint64_t ctr, const struct buf *rec, uint8_t *out, size_t *len)
{
	uint8_t nonce[12];
	unsigned long long mlen;

	spec_nonce(nonce, ctr);
	if (rec->len < 20 || weft_be32_get(rec->p) != rec->len - 4)
		return false;
	if (crypto_aead_chacha20poly1305_ietf_decrypt(out, &mlen, NULL, rec->p + 4, rec->len - 4, rec->p, 4,
						      nonce, key) != 0)
		return false;
	*len = (size_t)mlen;
	return true;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_handshake(void)
{
	struct weft_sc *i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, committee_check, NULL);
	int calls = 0;
	struct weft_sc *r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, &calls);
	struct weft_mpw w;
	struct buf hello, reply, finish;
	size_t used = 99;

	weft_mpw_init(&w);
	ok(!weft_sc_established(i) && !weft_sc_established(r), "fresh ends are not established");
	ok(weft_sc_peer_pk(i) == NULL && weft_sc_peer_pk(r) == NULL, "no peer key before the handshake");
	is_int(weft_sc_peer_index(r), -1, "no peer index before the handshake");

	is_int(weft_sc_start(i, &w), 0, "initiator starts");
	hello = buf_of_mpw(&w);
	ok(hello.len > 4 && weft_be32_get(hello.p) == hello.len - 4 && hello.len - 4 <= WEFT_SC_MAX_HANDSHAKE,
	   "HELLO is one record within the handshake limit (%zu bytes)", hello.len);
	is_int(weft_sc_start(i, &w), WEFT_ESTATE, "start twice -> WEFT_ESTATE");

	is_int(feed(r, &hello, &w, &used), 0, "responder accepts HELLO");
	is_int((long long)used, (long long)hello.len, "HELLO consumed whole");
	is_int(calls, 1, "peer_check asked once");
	is_int(weft_sc_peer_index(r), 2, "responder learns the initiator's index from peer_check");
	ok(weft_sc_peer_pk(r) && memcmp(weft_sc_peer_pk(r), id_a->pk, 32) == 0, "responder knows the initiator key");
	ok(!weft_sc_established(r), "responder not established before FINISH");
	reply = buf_of_mpw(&w);
	ok(reply.len > 4 && weft_be32_get(reply.p) == reply.len - 4, "REPLY is one record");

	is_int(feed(i, &reply, &w, &used), 1, "initiator accepts REPLY: established");
	is_int((long long)used, (long long)reply.len, "REPLY consumed whole");
	ok(weft_sc_established(i), "initiator established");
	ok(weft_sc_peer_pk(i) && memcmp(weft_sc_peer_pk(i), id_b->pk, 32) == 0, "initiator knows the responder key");
	is_int(weft_sc_peer_index(i), 0, "initiator with a peer_check learns the responder's index");
	finish = buf_of_mpw(&w);
	ok(finish.len > 4 && weft_be32_get(finish.p) == finish.len - 4, "FINISH is one record");

	is_int(feed(r, &finish, &w, &used), 1, "responder accepts FINISH: established");
	is_int((long long)w.len, 0, "responder sends nothing after FINISH");
	ok(weft_sc_established(r), "responder established");
	is_int(feed(r, &finish, &w, &used), WEFT_ESTATE, "handshake after establishment -> WEFT_ESTATE");
	is_int(feed(i, &reply, &w, &used), WEFT_ESTATE, "initiator: handshake after establishment -> WEFT_ESTATE");
	ok(roundtrip(i, r, (const uint8_t *)"ping", 4) && roundtrip(r, i, (const uint8_t *)"pong", 4),
	   "first records flow both ways");

	weft_mpw_free(&w);
	buf_free(&hello);
	buf_free(&reply);
	buf_free(&finish);
	weft_sc_free(i);
	weft_sc_free(r);

	/* Without a peer_check the initiator reports -1. */
	ok(connect_pair(&i, &r, NULL), "handshake without an initiator peer_check");
	is_int(weft_sc_peer_index(i), -1, "initiator without peer_check: index -1");
	weft_sc_free(i);
	weft_sc_free(r);
}

/* Bytes arriving one at a time, and records sharing a buffer. */
static void test_handshake_streaming(void)
{
	struct weft_sc *i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	struct weft_sc *r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	struct weft_mpw w, ans;
	struct buf hello, reply, stream;
	size_t used;
	int bad = 0, rc;

	weft_mpw_init(&w);
	weft_mpw_init(&ans);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	for (size_t k = 0; k < hello.len; k++) {
		weft_mpw_reset(&ans);
		used = 77;
		rc = weft_sc_handshake(r, hello.p, k, &used, &ans);
		if (rc != 0 || used != 0 || ans.len != 0)
			bad++;
	}
	is_int(bad, 0, "every prefix of HELLO: 0, nothing consumed, nothing sent");
	/* HELLO plus trailing bytes: only HELLO is consumed. */
	weft_mpw_reset(&w);
	weft_mpw_raw(&w, hello.p, hello.len);
	weft_mpw_raw(&w, "\0\0\0\5junk!", 9);
	weft_mpw_reset(&ans);
	rc = weft_sc_handshake(r, w.buf, w.len, &used, &ans);
	ok(rc == 0 && used == hello.len, "one record consumed from a longer buffer");
	reply = buf_of_mpw(&ans);
	for (size_t k = 0; k < reply.len; k++) {
		weft_mpw_reset(&ans);
		rc = weft_sc_handshake(i, reply.p, k, &used, &ans);
		if (rc != 0 || used != 0 || ans.len != 0)
			bad++;
	}
	is_int(bad, 0, "every prefix of REPLY: 0, nothing consumed");
	is_int(feed(i, &reply, &ans, &used), 1, "then the whole REPLY establishes");

	/* FINISH and the first application records in one buffer. */
	stream = buf_of_mpw(&ans);
	weft_mpw_reset(&w);
	weft_mpw_raw(&w, stream.p, stream.len);
	weft_sc_seal(i, "one", 3, &w);
	weft_sc_seal(i, "two", 3, &w);
	weft_mpw_reset(&ans);
	rc = weft_sc_handshake(r, w.buf, w.len, &used, &ans);
	ok(rc == 1 && used == stream.len, "FINISH consumed alone from FINISH+records");
	{
		uint8_t plain[16];
		size_t off = used, body, plen;
		int got = 0;

		while (off < w.len && weft_sc_record_len(w.buf + off, w.len - off, 1024, &body) == 0) {
			if (weft_sc_open(r, w.buf + off, 4 + body, plain, &plen) != 0)
				break;
			got += (got == 0 && plen == 3 && memcmp(plain, "one", 3) == 0) ||
			       (got == 1 && plen == 3 && memcmp(plain, "two", 3) == 0);
			off += 4 + body;
		}
		is_int(got, 2, "records following FINISH open in order");
	}
	buf_free(&hello);
	buf_free(&reply);
	buf_free(&stream);
	weft_mpw_free(&w);
	weft_mpw_free(&ans);
	weft_sc_free(i);
	weft_sc_free(r);
}

static void test_records(void)
{
	static const size_t sizes[] = {0, 1, 64, 65536, 4u << 20};
	struct weft_sc *i, *r;
	uint8_t *msg = malloc(4u << 20);

	if (msg == NULL)
		abort();
	fill(msg, 4u << 20, 7);
	ok(connect_pair(&i, &r, NULL), "session for records");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		ok(roundtrip(i, r, msg, sizes[k]), "initiator -> responder, %zu bytes", sizes[k]);
		ok(roundtrip(r, i, msg, sizes[k]), "responder -> initiator, %zu bytes", sizes[k]);
	}
	{
		struct weft_mpw w;

		weft_mpw_init(&w);
		ok(weft_sc_seal(i, NULL, 0, &w) == 0 && w.len == 4 + WEFT_SC_TAG, "empty record from NULL plain");
		{
			size_t plen = 5;
			uint8_t dummy[1];

			ok(weft_sc_open(r, w.buf, w.len, dummy, &plen) == 0 && plen == 0, "empty record opens");
		}
		weft_mpw_reset(&w);
		weft_sc_seal(i, msg, 64, &w);
		ok(memmem(w.buf, w.len, msg, 16) == NULL, "the plaintext does not appear in the record");
		{
			uint8_t back[64];
			size_t plen = 0;

			ok(weft_sc_open(r, w.buf, w.len, back, &plen) == 0 && plen == 64 && memcmp(back, msg, 64) == 0,
			   "and opens to it");
		}
		weft_mpw_free(&w);
	}

	/* Many small messages in one writer, then opened in place. */
	{
		struct weft_mpw w;
		size_t off = 0, body, plen;
		int n = 0, good = 0;
		uint8_t *before;

		weft_mpw_init(&w);
		for (int k = 0; k < 1000; k++)
			weft_sc_seal(r, msg + k, (size_t)(k % 100), &w);
		before = w.buf;
		while (off < w.len && weft_sc_record_len(w.buf + off, w.len - off, 200, &body) == 0 &&
		       off + 4 + body <= w.len) {
			uint8_t *p = w.buf + off + 4;

			if (weft_sc_open(i, w.buf + off, 4 + body, p, &plen) == 0 && plen == (size_t)(n % 100) &&
			    memcmp(p, msg + n, plen) == 0)
				good++;
			n++;
			off += 4 + body;
		}
		ok(n == 1000 && good == 1000 && off == w.len, "1000 batched records open in place, in order");
		ok(before == w.buf, "opening does not touch the writer");
		/* A reused writer does not reallocate. */
		weft_mpw_reset(&w);
		before = w.buf;
		for (int k = 0; k < 100; k++)
			weft_sc_seal(r, msg, 10, &w);
		ok(before == w.buf, "sealing into a reset writer reuses its buffer");
		weft_mpw_free(&w);
	}

	/* The ETOOBIG bound is checked before plain is read. */
	if (SIZE_MAX > UINT32_MAX) {
		struct weft_mpw w;

		weft_mpw_init(&w);
		is_int(weft_sc_seal(i, msg, (size_t)UINT32_MAX - WEFT_SC_TAG + 1, &w), WEFT_ETOOBIG,
		       "seal above UINT32_MAX - tag -> WEFT_ETOOBIG");
		is_int((long long)w.len, 0, "nothing written");
		ok(roundtrip(i, r, msg, 10), "the channel still works after a refused seal");
		weft_mpw_free(&w);
	} else {
		skip(3, "32-bit size_t");
	}
	weft_sc_free(i);
	weft_sc_free(r);
	free(msg);
}

/* Hand-built peers following only the header's specification. */
static void test_spec_interop(void)
{
	uint8_t e_pk[32], e_sk[32], kx_rx[32], kx_tx[32], rx[32], tx[32], h[32], sig[64];
	uint8_t e_i[32], plain[64];
	struct weft_mpw w;
	struct buf hello, reply, finish, rec;
	size_t plen = 0;
	struct weft_sc *i, *r;

	weft_mpw_init(&w);

	/* Test plays the responder against a real initiator. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	ok(parse_hello_e(&hello, e_i), "HELLO is [1, 0, \"weft\", pk_i, e_i, expected_pk_r]");
	{
		struct buf want = make_hello(id_a->pk, e_i, id_b->pk);

		ok(want.len == hello.len && memcmp(want.p, hello.p, want.len) == 0,
		   "HELLO bytes equal an independent encoding");
		buf_free(&want);
	}
	crypto_kx_keypair(e_pk, e_sk);
	transcript_hash(&hello, id_b->pk, e_pk, h);
	sign_label(id_b, "weft-sc-r", h, sig);
	reply = make_reply(id_b->pk, e_pk, sig);
	is_int(feed(i, &reply, &w, NULL), 1, "hand-built REPLY (spec transcript) is accepted");
	finish = buf_of_mpw(&w);
	sign_label(id_a, "weft-sc-i", h, sig);
	{
		struct buf want = make_finish(sig);

		ok(want.len == finish.len && memcmp(want.p, finish.p, want.len) == 0,
		   "FINISH carries sign(sk_i, \"weft-sc-i\" || H)");
		buf_free(&want);
	}
	if (crypto_kx_server_session_keys(kx_rx, kx_tx, e_pk, e_sk, e_i) != 0)
		abort();
	spec_key(kx_rx, h, rx);
	spec_key(kx_tx, h, tx);
	rec = spec_seal(tx, 0, (const uint8_t *)"hello, world", 12);
	ok(open_buf(i, &rec, plain, &plen) == 0 && plen == 12 && memcmp(plain, "hello, world", 12) == 0,
	   "raw AEAD record (spec key, nonce, AD) opens at counter 0");
	buf_free(&rec);
	rec = spec_seal(tx, 1, (const uint8_t *)"second", 6);
	ok(open_buf(i, &rec, plain, &plen) == 0 && plen == 6, "and at counter 1");
	buf_free(&rec);
	rec = seal(i, "reply", 5);
	ok(spec_open(rx, 0, &rec, plain, &plen) && plen == 5 && memcmp(plain, "reply", 5) == 0,
	   "the initiator's record decrypts with raw AEAD at counter 0");
	buf_free(&rec);
	rec = seal(i, "again", 5);
	ok(spec_open(rx, 1, &rec, plain, &plen) && plen == 5, "and at counter 1");
	buf_free(&rec);
	weft_sc_free(i);
	buf_free(&hello);
	buf_free(&reply);
	buf_free(&finish);

	/* Test plays the initiator against a real responder. */
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	crypto_kx_keypair(e_pk, e_sk);
	hello = make_hello(id_a->pk, e_pk, id_b->pk);
	is_int(feed(r, &hello, &w, NULL), 0, "hand-built HELLO is accepted");
	reply = buf_of_mpw(&w);
	{
		uint8_t pk_r[32], e_r[32];

		ok(parse_reply(&reply, pk_r, e_r) && memcmp(pk_r, id_b->pk, 32) == 0,
		   "REPLY is [1, 1, pk_r, e_r, sig_r]");
		transcript_hash(&hello, pk_r, e_r, h);
		{
			uint8_t msg[41];

			memcpy(msg, "weft-sc-r", 9);
			memcpy(msg + 9, h, 32);
			ok(weft_verify(id_b->pk, reply.p + reply.len - 64, msg, sizeof(msg)) == 0,
			   "sig_r = sign(sk_r, \"weft-sc-r\" || H)");
		}
		if (crypto_kx_client_session_keys(kx_rx, kx_tx, e_pk, e_sk, e_r) != 0)
			abort();
	}
	spec_key(kx_rx, h, rx);
	spec_key(kx_tx, h, tx);
	sign_label(id_a, "weft-sc-i", h, sig);
	finish = make_finish(sig);
	is_int(feed(r, &finish, &w, NULL), 1, "hand-built FINISH establishes the responder");
	rec = spec_seal(tx, 0, (const uint8_t *)"abc", 3);
	ok(open_buf(r, &rec, plain, &plen) == 0 && plen == 3 && memcmp(plain, "abc", 3) == 0,
	   "responder opens a raw AEAD record");
	buf_free(&rec);
	rec = seal(r, "xyz", 3);
	ok(spec_open(rx, 0, &rec, plain, &plen) && plen == 3 && memcmp(plain, "xyz", 3) == 0,
	   "responder's record decrypts with raw AEAD");
	buf_free(&rec);
	weft_sc_free(r);
	buf_free(&hello);
	buf_free(&reply);
	buf_free(&finish);
	weft_mpw_free(&w);
}

/* True when a failed open left plain as it was (0xaa) or wiped it. */
static bool untouched_or_zero(const uint8_t *p, size_t n)
{
	bool aa = true, zero = true;

	for (size_t k = 0; k < n; k++) {
		aa &= p[k] == 0xaa;
		zero &= p[k] == 0;
	}
	return aa || zero;
}

/* Flips each byte of a 64-byte record in turn, each on a fresh session. */
static void test_tamper(void)
{
	uint8_t msg[64], plain[64];
	size_t total = 4 + sizeof(msg) + WEFT_SC_TAG;
	int hdr = 0, ct = 0, tag = 0, still_dead = 0, zeroed = 0;

	fill(msg, sizeof(msg), 3);
	for (size_t pos = 0; pos < total; pos++) {
		struct weft_sc *i, *r;
		struct buf rec, good;
		size_t plen = 99;

		if (!connect_pair(&i, &r, NULL))
			abort();
		rec = seal(i, msg, sizeof(msg));
		good = buf_of(rec.p, rec.len);
		rec.p[pos] ^= (uint8_t)(1u << (pos % 8));
		memset(plain, 0xaa, sizeof(plain));
		if (open_buf(r, &rec, plain, &plen) == WEFT_ECRYPTO && plen == 0) {
			if (pos < 4)
				hdr++;
			else if (pos < 4 + sizeof(msg))
				ct++;
			else
				tag++;
		}
		zeroed += untouched_or_zero(plain, sizeof(plain));
		/* Sticky: the untampered record no longer opens either. */
		if (open_buf(r, &good, plain, &plen) == WEFT_ECRYPTO)
			still_dead++;
		buf_free(&rec);
		buf_free(&good);
		weft_sc_free(i);
		weft_sc_free(r);
	}
	is_int(hdr, 4, "flipping any header byte -> WEFT_ECRYPTO");
	is_int(ct, 64, "flipping any ciphertext byte -> WEFT_ECRYPTO");
	is_int(tag, 16, "flipping any tag byte -> WEFT_ECRYPTO");
	is_int(zeroed, (int)total, "no tampered plaintext is released");
	is_int(still_dead, (int)total, "after a failure the genuine record fails too");
}

static void test_replay_reorder(void)
{
	struct weft_sc *i, *r;
	struct buf r0, r1, r2;
	uint8_t plain[16];
	size_t plen;
	struct weft_mpw w;

	weft_mpw_init(&w);

	/* Replay. */
	connect_pair(&i, &r, NULL);
	r0 = seal(i, "zero", 4);
	r1 = seal(i, "one", 3);
	is_int(open_buf(r, &r0, plain, &plen), 0, "record 0 opens");
	is_int(open_buf(r, &r0, plain, &plen), WEFT_ECRYPTO, "replayed record 0 -> WEFT_ECRYPTO");
	is_int(open_buf(r, &r1, plain, &plen), WEFT_ECRYPTO, "after the failure record 1 fails too (sticky)");
	is_int(weft_sc_seal(r, "x", 1, &w), WEFT_ECRYPTO, "and sealing fails with the same error");
	ok(!weft_sc_established(r), "a failed channel is not established");
	buf_free(&r0);
	buf_free(&r1);
	weft_sc_free(i);
	weft_sc_free(r);

	/* Reorder. */
	connect_pair(&i, &r, NULL);
	r0 = seal(i, "zero", 4);
	r1 = seal(i, "one", 3);
	is_int(open_buf(r, &r1, plain, &plen), WEFT_ECRYPTO, "record 1 before record 0 -> WEFT_ECRYPTO");
	is_int(open_buf(r, &r0, plain, &plen), WEFT_ECRYPTO, "then record 0 fails too");
	buf_free(&r0);
	buf_free(&r1);
	weft_sc_free(i);
	weft_sc_free(r);

	/* Drop. */
	connect_pair(&i, &r, NULL);
	r0 = seal(r, "zero", 4);
	r1 = seal(r, "one", 3);
	r2 = seal(r, "two", 3);
	is_int(open_buf(i, &r0, plain, &plen), 0, "responder record 0 opens");
	is_int(open_buf(i, &r2, plain, &plen), WEFT_ECRYPTO, "a dropped record (1) makes record 2 fail");
	buf_free(&r0);
	buf_free(&r1);
	buf_free(&r2);
	weft_sc_free(i);
	weft_sc_free(r);

	/* Reflection, both ways, at matching counters. */
	connect_pair(&i, &r, NULL);
	r0 = seal(i, "mirror", 6);
	is_int(open_buf(i, &r0, plain, &plen), WEFT_ECRYPTO, "initiator's record fed back to it -> WEFT_ECRYPTO");
	buf_free(&r0);
	weft_sc_free(i);
	weft_sc_free(r);
	connect_pair(&i, &r, NULL);
	r0 = seal(r, "mirror", 6);
	is_int(open_buf(r, &r0, plain, &plen), WEFT_ECRYPTO, "responder's record fed back to it -> WEFT_ECRYPTO");
	buf_free(&r0);
	weft_sc_free(i);
	weft_sc_free(r);

	/* Truncation: shorter record_len, header fixed to match, too short. */
	connect_pair(&i, &r, NULL);
	r0 = seal(i, "truncate me", 11);
	is_int(weft_sc_open(r, r0.p, r0.len - 1, plain, &plen), WEFT_ECRYPTO, "record_len one short -> WEFT_ECRYPTO");
	weft_sc_free(i);
	weft_sc_free(r);
	connect_pair(&i, &r, NULL);
	buf_free(&r0);
	r0 = seal(i, "truncate me", 11);
	weft_be32_put(r0.p, (uint32_t)(r0.len - 5));
	is_int(weft_sc_open(r, r0.p, r0.len - 1, plain, &plen), WEFT_ECRYPTO,
	       "truncated record with a consistent header -> WEFT_ECRYPTO");
	weft_sc_free(i);
	weft_sc_free(r);
	{
		int bad = 0;

		for (size_t k = 0; k < 4 + WEFT_SC_TAG; k++) {
			connect_pair(&i, &r, NULL);
			buf_free(&r0);
			r0 = seal(i, "", 0);
			if (k >= 4)
				weft_be32_put(r0.p, (uint32_t)(k - 4));
			if (weft_sc_open(r, r0.p, k, plain, &plen) != WEFT_ECRYPTO)
				bad++;
			weft_sc_free(i);
			weft_sc_free(r);
		}
		is_int(bad, 0, "records shorter than header + tag -> WEFT_ECRYPTO");
	}
	buf_free(&r0);
	weft_mpw_free(&w);
}

static void test_record_len(void)
{
	uint8_t hdr[8] = {0, 0, 0x10, 0x00, 1, 2, 3, 4};
	size_t body = 12345;
	int bad = 0;

	for (size_t k = 0; k < 4; k++)
		if (weft_sc_record_len(hdr, k, 1 << 20, &body) != WEFT_EAGAIN)
			bad++;
	is_int(bad, 0, "fewer than 4 bytes -> WEFT_EAGAIN");
	ok(weft_sc_record_len(hdr, 4, 4096, &body) == 0 && body == 4096, "header at max_body: 0 and body_len");
	body = 12345;
	is_int(weft_sc_record_len(hdr, 4, 4095, &body), WEFT_ETOOBIG,
	       "header above max_body -> WEFT_ETOOBIG from the 4 header bytes alone");
	is_int((long long)body, 12345, "body_len untouched on refusal");
	weft_be32_put(hdr, UINT32_MAX);
	is_int(weft_sc_record_len(hdr, 4, 1 << 20, &body), WEFT_ETOOBIG, "0xffffffff header -> WEFT_ETOOBIG");
}

static void test_refusals(void)
{
	struct weft_sc *i, *r;
	struct weft_mpw w;
	struct buf hello, reply, finish;
	size_t used;
	uint8_t e_pk[32], e_sk[32], h[32], sig[64];

	weft_mpw_init(&w);

	/* Initiator C is not in the committee. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_c, id_b->pk, NULL, NULL);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	is_int(feed(r, &hello, &w, &used), WEFT_EPERM, "initiator outside the committee -> responder WEFT_EPERM");
	is_int((long long)w.len, 0, "no REPLY to a refused initiator");
	ok(weft_sc_peer_pk(r) && memcmp(weft_sc_peer_pk(r), id_c->pk, 32) == 0,
	   "the refused key is available for the log");
	is_int(weft_sc_peer_index(r), -1, "refused initiator has no index");
	is_int(feed(r, &hello, &w, &used), WEFT_EPERM, "the failure is sticky");
	buf_free(&hello);
	weft_sc_free(i);
	weft_sc_free(r);

	/* A peer_check that refuses everyone. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, reject_all, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	is_int(feed(r, &hello, &w, &used), WEFT_EPERM, "peer_check -1 -> WEFT_EPERM");
	buf_free(&hello);
	weft_sc_free(i);
	weft_sc_free(r);

	/* A responder given an expected_pk refuses other committee members. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, id_d->pk, committee_check, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	is_int(feed(r, &hello, &w, &used), WEFT_EPERM, "responder expecting D refuses A -> WEFT_EPERM");
	buf_free(&hello);
	weft_sc_free(i);
	weft_sc_free(r);

	/* HELLO naming another expected key (A dials B's address expecting D). */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_d->pk, NULL, NULL);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	is_int(feed(r, &hello, &w, &used), WEFT_EPERM, "HELLO expecting another key -> responder WEFT_EPERM");
	is_int((long long)w.len, 0, "no REPLY sent");

	/* A responder (B, committee member) that ignores expected_pk_r and
	 * answers correctly signed: the initiator expecting D refuses it. */
	crypto_kx_keypair(e_pk, e_sk);
	transcript_hash(&hello, id_b->pk, e_pk, h);
	sign_label(id_b, "weft-sc-r", h, sig);
	reply = make_reply(id_b->pk, e_pk, sig);
	is_int(feed(i, &reply, &w, &used), WEFT_EPERM, "correctly signed REPLY from an unexpected key -> WEFT_EPERM");
	is_int((long long)w.len, 0, "no FINISH sent");
	ok(weft_sc_peer_pk(i) && memcmp(weft_sc_peer_pk(i), id_b->pk, 32) == 0, "the unexpected key is reported");
	ok(!weft_sc_established(i), "not established");
	buf_free(&hello);
	buf_free(&reply);
	weft_sc_free(i);
	weft_sc_free(r);

	/* Forged REPLY: B's key, signed by C. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	crypto_kx_keypair(e_pk, e_sk);
	transcript_hash(&hello, id_b->pk, e_pk, h);
	sign_label(id_c, "weft-sc-r", h, sig);
	reply = make_reply(id_b->pk, e_pk, sig);
	is_int(feed(i, &reply, &w, &used), WEFT_ECRYPTO, "REPLY signed by a third identity -> WEFT_ECRYPTO");
	is_int((long long)w.len, 0, "no FINISH sent");
	buf_free(&reply);
	weft_sc_free(i);
	buf_free(&hello);

	/* Mislabelled REPLY: B signs with the initiator's label. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	transcript_hash(&hello, id_b->pk, e_pk, h);
	sign_label(id_b, "weft-sc-i", h, sig);
	reply = make_reply(id_b->pk, e_pk, sig);
	is_int(feed(i, &reply, &w, &used), WEFT_ECRYPTO, "REPLY signed with the \"weft-sc-i\" label -> WEFT_ECRYPTO");
	buf_free(&reply);
	/* A signature over another e_r. */
	weft_sc_free(i);
	buf_free(&hello);
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	transcript_hash(&hello, id_b->pk, e_pk, h);
	sign_label(id_b, "weft-sc-r", h, sig);
	e_pk[0] ^= 1;
	reply = make_reply(id_b->pk, e_pk, sig);
	is_int(feed(i, &reply, &w, &used), WEFT_ECRYPTO, "REPLY whose e_r was swapped after signing -> WEFT_ECRYPTO");
	buf_free(&reply);
	weft_sc_free(i);
	buf_free(&hello);

	/* Forged FINISH: C signs the right transcript. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	feed(r, &hello, &w, &used);
	reply = buf_of_mpw(&w);
	{
		uint8_t pk_r[32], e_r[32];

		parse_reply(&reply, pk_r, e_r);
		transcript_hash(&hello, pk_r, e_r, h);
	}
	sign_label(id_c, "weft-sc-i", h, sig);
	finish = make_finish(sig);
	is_int(feed(r, &finish, &w, &used), WEFT_ECRYPTO, "FINISH signed by a third identity -> WEFT_ECRYPTO");
	ok(!weft_sc_established(r), "responder not established");
	{
		uint8_t plain[8];
		size_t plen;

		is_int(weft_sc_open(r, (const uint8_t *)"\0\0\0\0", 4, plain, &plen), WEFT_ECRYPTO,
		       "open on a failed handshake returns its error");
	}
	buf_free(&finish);
	weft_sc_free(r);
	/* Mislabelled FINISH: A signs with the responder's label. */
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	feed(r, &hello, &w, &used);
	buf_free(&reply);
	reply = buf_of_mpw(&w);
	{
		uint8_t pk_r[32], e_r[32];

		parse_reply(&reply, pk_r, e_r);
		transcript_hash(&hello, pk_r, e_r, h);
	}
	sign_label(id_a, "weft-sc-r", h, sig);
	finish = make_finish(sig);
	is_int(feed(r, &finish, &w, &used), WEFT_ECRYPTO, "FINISH signed with the \"weft-sc-r\" label -> WEFT_ECRYPTO");
	buf_free(&finish);
	weft_sc_free(r);
	/* The genuine FINISH of another session (A's signature, other H). */
	{
		struct weft_sc *i2, *r2;
		struct transcript t;

		connect_pair(&i2, &r2, &t);
		r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
		feed(r, &hello, &w, &used);
		is_int(feed(r, &t.finish, &w, &used), WEFT_ECRYPTO, "FINISH replayed from another session -> WEFT_ECRYPTO");
		weft_sc_free(r);
		/* The REPLY of another session, to a new initiator. */
		weft_sc_free(i);
		i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
		weft_sc_start(i, &w);
		is_int(feed(i, &t.reply, &w, &used), WEFT_ECRYPTO, "REPLY replayed from another session -> WEFT_ECRYPTO");
		transcript_free(&t);
		weft_sc_free(i2);
		weft_sc_free(r2);
	}
	weft_sc_free(i);
	buf_free(&hello);
	buf_free(&reply);

	/* Man in the middle swapping the initiator's ephemeral. */
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	weft_sc_start(i, &w);
	{
		struct buf forged;

		crypto_kx_keypair(e_pk, e_sk);
		forged = make_hello(id_a->pk, e_pk, id_b->pk);
		is_int(feed(r, &forged, &w, &used), 0, "responder cannot tell a swapped e_i in HELLO");
		reply = buf_of_mpw(&w);
		is_int(feed(i, &reply, &w, &used), WEFT_ECRYPTO, "but the initiator refuses the REPLY -> WEFT_ECRYPTO");
		buf_free(&forged);
		buf_free(&reply);
	}
	weft_sc_free(i);
	weft_sc_free(r);

	/* A low-order (all-zero) ephemeral. */
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	memset(e_pk, 0, sizeof(e_pk));
	hello = make_hello(id_a->pk, e_pk, id_b->pk);
	is_int(feed(r, &hello, &w, &used), WEFT_ECRYPTO, "all-zero e_i -> WEFT_ECRYPTO");
	buf_free(&hello);
	weft_sc_free(r);
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	transcript_hash(&hello, id_b->pk, e_pk, h);
	sign_label(id_b, "weft-sc-r", h, sig);
	reply = make_reply(id_b->pk, e_pk, sig);
	is_int(feed(i, &reply, &w, &used), WEFT_ECRYPTO, "signed but all-zero e_r -> WEFT_ECRYPTO");
	buf_free(&hello);
	buf_free(&reply);
	weft_sc_free(i);
	weft_mpw_free(&w);
}

/* Records out of place, wrong versions and magic, bad shapes. */
static void test_malformed(void)
{
	struct weft_sc *i, *r;
	struct weft_mpw w;
	struct transcript t;
	size_t used;

	weft_mpw_init(&w);
	connect_pair(&i, &r, &t);
	weft_sc_free(i);
	weft_sc_free(r);

	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	is_int(feed(r, &t.finish, &w, &used), WEFT_EPROTO, "FINISH first -> responder WEFT_EPROTO");
	weft_sc_free(r);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	is_int(feed(r, &t.reply, &w, &used), WEFT_EPROTO, "REPLY to a responder -> WEFT_EPROTO");
	weft_sc_free(r);
	r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	feed(r, &t.hello, &w, &used);
	is_int(feed(r, &t.hello, &w, &used), WEFT_EPROTO, "a second HELLO -> WEFT_EPROTO");
	weft_sc_free(r);
	i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	is_int(feed(i, &t.reply, &w, &used), WEFT_ESTATE, "initiator fed before start -> WEFT_ESTATE");
	weft_sc_start(i, &w);
	is_int(feed(i, &t.hello, &w, &used), WEFT_EPROTO, "HELLO to an initiator -> WEFT_EPROTO");
	weft_sc_free(i);

	/* Hand-built HELLOs, each with one thing wrong. */
	{
		struct {
			const char *what;
			uint32_t n;
			uint64_t version, type;
			const char *magic;
			size_t bin, extra;
		} cases[] = {
			{"version 2", 6, 2, 0, "weft", 32, 0},
			{"version 0", 6, 0, 0, "weft", 32, 0},
			{"type 3", 6, 1, 3, "weft", 32, 0},
			{"magic \"wefu\"", 6, 1, 0, "wefu", 32, 0},
			{"magic \"weftx\"", 6, 1, 0, "weftx", 32, 0},
			{"empty magic", 6, 1, 0, "", 32, 0},
			{"31-byte keys", 6, 1, 0, "weft", 31, 0},
			{"33-byte keys", 6, 1, 0, "weft", 33, 0},
			{"5 elements", 5, 1, 0, "weft", 32, 0},
			{"7 elements", 7, 1, 0, "weft", 32, 1},
			{"trailing byte", 6, 1, 0, "weft", 32, 1},
		};
		uint8_t keys[33], e[33];

		crypto_kx_keypair(e, keys);
		memcpy(keys, id_a->pk, 32);
		keys[32] = 0;
		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			struct weft_mpw b;
			struct buf rec;
			uint8_t want[33];
			int rc;

			memcpy(want, id_b->pk, 32);
			want[32] = 0;
			weft_mpw_init(&b);
			weft_mpw_array(&b, cases[k].n);
			weft_mpw_uint(&b, cases[k].version);
			weft_mpw_uint(&b, cases[k].type);
			weft_mpw_str(&b, cases[k].magic);
			weft_mpw_bin(&b, keys, cases[k].bin);
			weft_mpw_bin(&b, e, cases[k].bin);
			if (cases[k].n >= 6)
				weft_mpw_bin(&b, want, cases[k].bin);
			if (cases[k].extra)
				weft_mpw_nil(&b);
			rec = record_of(b.buf, b.len);
			r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
			rc = feed(r, &rec, &w, &used);
			is_int(rc, WEFT_EPROTO, "HELLO with %s -> WEFT_EPROTO", cases[k].what);
			weft_sc_free(r);
			buf_free(&rec);
			weft_mpw_free(&b);
		}
	}
	/* Type confusion: the keys as strings, the array as a map. */
	{
		struct weft_mpw b;
		struct buf rec;

		weft_mpw_init(&b);
		weft_mpw_array(&b, 6);
		weft_mpw_uint(&b, 1);
		weft_mpw_uint(&b, 0);
		weft_mpw_str(&b, "weft");
		weft_mpw_strn(&b, (const char *)id_a->pk, 32);
		weft_mpw_bin(&b, id_a->pk, 32);
		weft_mpw_bin(&b, id_b->pk, 32);
		rec = record_of(b.buf, b.len);
		r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
		is_int(feed(r, &rec, &w, &used), WEFT_EPROTO, "HELLO with a str where a bin belongs -> WEFT_EPROTO");
		weft_sc_free(r);
		buf_free(&rec);
		memcpy(b.buf, t.hello.p + 4, t.hello.len - 4);
		b.len = t.hello.len - 4;
		b.buf[0] = 0x86; /* fixmap of 6 pairs */
		rec = record_of(b.buf, b.len);
		r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
		is_int(feed(r, &rec, &w, &used), WEFT_EPROTO, "HELLO as a map -> WEFT_EPROTO");
		weft_sc_free(r);
		buf_free(&rec);
		weft_mpw_free(&b);
	}

	/* Size limits. */
	{
		uint8_t big[4 + WEFT_SC_MAX_HANDSHAKE + 1];
		struct buf rec;

		memset(big, 0xc0, sizeof(big));
		weft_be32_put(big, WEFT_SC_MAX_HANDSHAKE + 1);
		r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
		used = 5;
		is_int(weft_sc_handshake(r, big, 4, &used, &w), WEFT_ETOOBIG,
		       "513-byte handshake record -> WEFT_ETOOBIG from its header");
		is_int((long long)used, 0, "nothing consumed");
		weft_sc_free(r);
		weft_be32_put(big, UINT32_MAX);
		r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
		is_int(weft_sc_handshake(r, big, 4, &used, &w), WEFT_ETOOBIG, "4 GiB handshake record -> WEFT_ETOOBIG");
		weft_sc_free(r);
		/* A 512-byte body: the HELLO followed by padding. */
		memcpy(big + 4, t.hello.p + 4, t.hello.len - 4);
		weft_be32_put(big, WEFT_SC_MAX_HANDSHAKE);
		r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
		is_int(weft_sc_handshake(r, big, 4 + WEFT_SC_MAX_HANDSHAKE, &used, &w), WEFT_EPROTO,
		       "512-byte record: HELLO with trailing bytes -> WEFT_EPROTO");
		weft_sc_free(r);
		rec = record_of(NULL, 0);
		r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
		is_int(feed(r, &rec, &w, &used), WEFT_EPROTO, "empty handshake record -> WEFT_EPROTO");
		weft_sc_free(r);
		buf_free(&rec);
	}
	transcript_free(&t);
	weft_mpw_free(&w);
}

/* Every truncation (header adjusted so the parser sees it) of each record,
 * and random mutations.  Each case runs on fresh ends at the right state. */
enum which { W_HELLO, W_REPLY, W_FINISH };

/* Brings fresh ends to the point where `which` is the next record the
 * victim reads; returns the victim and the genuine record. */
static struct weft_sc *victim_for(enum which which, struct weft_sc **other, struct buf *genuine)
{
	struct weft_sc *i = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	struct weft_sc *r = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	struct weft_mpw w;
	struct buf hello, reply;

	weft_mpw_init(&w);
	weft_sc_start(i, &w);
	hello = buf_of_mpw(&w);
	if (which == W_HELLO) {
		*genuine = hello;
		*other = i;
		weft_mpw_free(&w);
		return r;
	}
	feed(r, &hello, &w, NULL);
	buf_free(&hello);
	reply = buf_of_mpw(&w);
	if (which == W_REPLY) {
		*genuine = reply;
		*other = r;
		weft_mpw_free(&w);
		return i;
	}
	feed(i, &reply, &w, NULL);
	buf_free(&reply);
	*genuine = buf_of_mpw(&w);
	*other = i;
	weft_mpw_free(&w);
	return r;
}

static void test_truncations_mutations(void)
{
	static const char *names[] = {"HELLO", "REPLY", "FINISH"};

	for (int which = W_HELLO; which <= W_FINISH; which++) {
		struct weft_sc *v, *other;
		struct buf g;
		struct weft_mpw w;
		size_t used, body_len;
		int bad = 0, errs = 0, accepted = 0, n = 0, rc;

		weft_mpw_init(&w);
		v = victim_for((enum which)which, &other, &g);
		body_len = g.len - 4;
		/* Header intact, body short: wait (0, nothing consumed). */
		for (size_t k = 0; k < g.len; k++) {
			weft_mpw_reset(&w);
			rc = weft_sc_handshake(v, g.p, k, &used, &w);
			if (rc != 0 || used != 0 || w.len != 0)
				bad++;
		}
		is_int(bad, 0, "%s: every raw prefix waits for more", names[which]);
		rc = feed(v, &g, &w, &used);
		ok(rc == (which == W_HELLO ? 0 : 1) && used == g.len, "%s: then the whole record is accepted",
		   names[which]);
		weft_sc_free(v);
		weft_sc_free(other);

		/* Header adjusted: a complete but truncated message. */
		bad = 0;
		for (size_t k = 0; k < body_len; k++) {
			struct buf g2, rec;

			v = victim_for((enum which)which, &other, &g2);
			rec = record_of(g2.p + 4, k);
			rc = feed(v, &rec, &w, &used);
			if (rc != WEFT_EPROTO || w.len != 0)
				bad++;
			weft_sc_free(v);
			weft_sc_free(other);
			buf_free(&rec);
			buf_free(&g2);
		}
		is_int(bad, 0, "%s: every truncated body (%zu) -> WEFT_EPROTO", names[which], body_len);

		/* Random mutations of the body (header fixed) and of the header. */
		bad = 0;
		for (int m = 0; m < 1500; m++) {
			struct buf g2, rec;
			uint8_t body[WEFT_SC_MAX_HANDSHAKE + 64];
			size_t len;
			int kinds = 1 + (int)(rng() % 3);
			bool hdr_mut = rng() % 16 == 0;

			v = victim_for((enum which)which, &other, &g2);
			len = g2.len - 4;
			memcpy(body, g2.p + 4, len);
			for (int k = 0; k < kinds; k++) {
				size_t pos = len ? (size_t)(rng() % len) : 0;

				switch (rng() % 5) {
				case 0:
					if (len)
						body[pos] ^= (uint8_t)(1u << (rng() % 8));
					break;
				case 1:
					if (len)
						body[pos] = (uint8_t)rng();
					break;
				case 2: /* delete */
					if (len) {
						memmove(body + pos, body + pos + 1, len - pos - 1);
						len--;
					}
					break;
				case 3: /* insert */
					if (len < sizeof(body)) {
						memmove(body + pos + 1, body + pos, len - pos);
						body[pos] = (uint8_t)rng();
						len++;
					}
					break;
				case 4: /* truncate */
					len = pos;
					break;
				}
			}
			rec = record_of(body, len);
			if (hdr_mut)
				rec.p[rng() % 4] ^= (uint8_t)(1u << (rng() % 8));
			rc = feed(v, &rec, &w, &used);
			n++;
			if (is_error(rc)) {
				errs++;
				if (w.len != 0)
					bad++;
			} else if (rc == 0 && used == 0) {
				/* header now longer than the bytes: waits */
			} else if (rc == (which == W_HELLO ? 0 : 1)) {
				accepted++;
				/* REPLY and FINISH are bound to the transcript by
				 * a signature: only an unchanged record passes. */
				if (which != W_HELLO && (rec.len != g2.len || memcmp(rec.p, g2.p, g2.len) != 0))
					bad++;
			} else {
				bad++;
			}
			weft_sc_free(v);
			weft_sc_free(other);
			buf_free(&rec);
			buf_free(&g2);
		}
		is_int(bad, 0, "%s: %d random mutations: %d refused, %d accepted, none misbehaved", names[which], n,
		       errs, accepted);
		buf_free(&g);
		weft_mpw_free(&w);
	}
}

static void test_forward_secrecy(void)
{
	struct weft_sc *i1, *r1, *i2, *r2;
	struct buf a, b;
	uint8_t plain[32];
	size_t plen;

	bool s1 = connect_pair(&i1, &r1, NULL), s2 = connect_pair(&i2, &r2, NULL);

	ok(s1 && s2, "two sessions between the same identities");
	a = seal(i1, "same plaintext", 14);
	b = seal(i2, "same plaintext", 14);
	ok(a.len == b.len && memcmp(a.p, b.p, a.len) != 0, "same plaintext, same counter: different records");
	is_int(open_buf(r2, &a, plain, &plen), WEFT_ECRYPTO, "a session-1 record does not open in session 2");
	is_int(open_buf(r1, &a, plain, &plen), 0, "it opens in session 1");
	buf_free(&a);
	buf_free(&b);
	b = seal(r1, "back", 4);
	is_int(open_buf(i2, &b, plain, &plen), WEFT_ECRYPTO, "nor the other way");
	buf_free(&b);
	weft_sc_free(i1);
	weft_sc_free(r1);
	weft_sc_free(i2);
	weft_sc_free(r2);
}

static void test_misuse(void)
{
	struct weft_sc *sc;
	struct weft_mpw w;
	uint8_t plain[8];
	size_t used, plen;

	weft_mpw_init(&w);
	weft_sc_free(NULL);
	ok(1, "weft_sc_free(NULL)");

	sc = weft_sc_new(WEFT_SC_INITIATOR, id_a, id_b->pk, NULL, NULL);
	is_int(weft_sc_seal(sc, "x", 1, &w), WEFT_ESTATE, "seal before the handshake -> WEFT_ESTATE");
	is_int(weft_sc_open(sc, (const uint8_t *)"\0\0\0\x10", 20, plain, &plen), WEFT_ESTATE,
	       "open before the handshake -> WEFT_ESTATE");
	is_int((long long)w.len, 0, "nothing written");
	is_int(weft_sc_start(sc, &w), 0, "start still works");
	weft_sc_free(sc);

	sc = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, committee_check, NULL);
	is_int(weft_sc_start(sc, &w), WEFT_ESTATE, "start on a responder -> WEFT_ESTATE");
	weft_sc_free(sc);

	sc = weft_sc_new(WEFT_SC_INITIATOR, id_a, NULL, NULL, NULL);
	weft_mpw_reset(&w);
	is_int(weft_sc_start(sc, &w), WEFT_EINVAL, "initiator without expected_pk -> WEFT_EINVAL");
	is_int((long long)w.len, 0, "and sends nothing");
	weft_sc_free(sc);
	sc = weft_sc_new(WEFT_SC_RESPONDER, id_b, NULL, NULL, NULL);
	is_int(weft_sc_handshake(sc, (const uint8_t *)"", 0, &used, &w), WEFT_EINVAL,
	       "responder without peer_check -> WEFT_EINVAL");
	weft_sc_free(sc);
	sc = weft_sc_new(WEFT_SC_RESPONDER, NULL, NULL, committee_check, NULL);
	is_int(weft_sc_handshake(sc, (const uint8_t *)"", 0, &used, &w), WEFT_EINVAL, "no identity -> WEFT_EINVAL");
	weft_sc_free(sc);
	weft_mpw_free(&w);
}

int main(void)
{
	uint8_t seed[WEFT_SEED_LEN];

	if (weft_crypto_init() != 0) {
		printf("1..0 # skip libsodium init failed\n");
		return 0;
	}
	memset(seed, 'a', sizeof(seed));
	id_a = weft_identity_from_seed(seed);
	memset(seed, 'b', sizeof(seed));
	id_b = weft_identity_from_seed(seed);
	memset(seed, 'c', sizeof(seed));
	id_c = weft_identity_from_seed(seed);
	memset(seed, 'd', sizeof(seed));
	id_d = weft_identity_from_seed(seed);

	test_handshake();
	test_handshake_streaming();
	test_records();
	test_spec_interop();
	test_tamper();
	test_replay_reorder();
	test_record_len();
	test_refusals();
	test_malformed();
	test_truncations_mutations();
	test_forward_secrecy();
	test_misuse();

	weft_identity_free(id_a);
	weft_identity_free(id_b);
	weft_identity_free(id_c);
	weft_identity_free(id_d);
	return done_testing();
}
