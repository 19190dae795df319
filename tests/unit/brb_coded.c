/* brb_coded.c - unit tests of the erasure-coded broadcast (protocols/brb/
 * coded.c) through a recording env.  The test encodes fragments itself
 * (ISA-L Cauchy code, the framing of docs/protocols/coded.md, the Merkle
 * tree of merkle.h) and plays every other node:
 *   - as sender: n - 1 VALs, each to its node with a valid proof, our ECHO;
 *   - an honest sender: every choice of k fragments delivers the exact
 *     payload (n = 1, 2, 3, 4, 7, 10 exhaustively; 16 and 255 sampled);
 *   - an inconsistent sender (fragments that are not a codeword under a
 *     valid Merkle root, or of mixed lengths): every choice of k fragments
 *     gives the invalid verdict;
 *   - hostile framings for the decoder (impossible length field, non-zero
 *     padding, non-canonical fragment length, length over max_payload);
 *   - hostile messages rejected and counted, without a reply;
 *   - thresholds, votes counted once, persistence across a restart, resends;
 *   - n > 255 refused. */
#include <isa-l/erasure_code.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../protocols/brb/core.h"
#include "../../protocols/brb/merkle.h"
#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/mp.h"

extern const struct weft_proto_ops weft_proto_coded;

enum { VAL = 0, ECHO = 1, READY = 2 };

static struct fake_env fe;
static void *state;
static uint32_t N, F, K, SELF, DEPTH;
static const uint8_t *boot_params;
static size_t boot_plen;

static int boot(void)
{
	state = calloc(1, weft_proto_coded.state_size);
	int rc = weft_proto_coded.init(state, &fe.env, boot_params, boot_plen);
	if (rc == 0)
		rc = weft_proto_coded.start(state);
	return rc;
}

static void shutdown_node(void)
{
	weft_proto_coded.destroy(state);
	free(state);
	state = NULL;
}

static void setup(uint32_t self, uint32_t n)
{
	fake_env_init(&fe, self, n);
	N = n, F = (n - 1) / 3, K = F + 1, SELF = self, DEPTH = brb_merkle_depth(n);
	if (boot() != 0)
		abort();
}

static void teardown(void)
{
	shutdown_node();
	fake_env_free(&fe);
}

/* ---- a codeword built by the test ---- */

struct cw {
	uint32_t n, k;
	uint8_t *frag[256];
	size_t lens[256];
	struct brb_merkle tree;
	uint8_t root[32];
};

static void cw_commit(struct cw *w)
{
	brb_merkle_free(&w->tree);
	brb_merkle_build(&w->tree, w->n, (const uint8_t *const *)w->frag, w->lens);
	brb_merkle_root(&w->tree, w->root);
}

/* The codeword of k data fragments of fl bytes (data: k * fl bytes). */
static void cw_from_data(struct cw *w, uint32_t n, const uint8_t *data, uint32_t fl)
{
	uint32_t k = (n - 1) / 3 + 1;
	memset(w, 0, sizeof(*w));
	w->n = n, w->k = k;
	for (uint32_t i = 0; i < n; i++) {
		w->frag[i] = calloc(1, fl);
		w->lens[i] = fl;
		if (i < k)
			memcpy(w->frag[i], data + (size_t)i * fl, fl);
	}
	if (n > k) {
		uint8_t *a = malloc((size_t)n * k), *tbl = malloc((size_t)32 * k * (n - k));
		gf_gen_cauchy1_matrix(a, (int)n, (int)k);
		ec_init_tables((int)k, (int)(n - k), a + (size_t)k * k, tbl);
		ec_encode_data((int)fl, (int)k, (int)(n - k), tbl, w->frag, w->frag + k);
		free(a);
		free(tbl);
	}
	cw_commit(w);
}

/* Canonical framing: u32 BE length || payload, zero padding, fl = ceil((4+len)/k). */
static void cw_encode(struct cw *w, uint32_t n, const void *payload, size_t len)
{
	uint32_t k = (n - 1) / 3 + 1;
	uint32_t fl = (uint32_t)((4 + len + k - 1) / k);
	uint8_t *data = calloc(k, fl);
	weft_be32_put(data, (uint32_t)len);
	memcpy(data + 4, payload, len);
	cw_from_data(w, n, data, fl);
	free(data);
}

static void cw_free(struct cw *w)
{
	for (uint32_t i = 0; i < w->n; i++)
		free(w->frag[i]);
	brb_merkle_free(&w->tree);
}

/* ---- messages ---- */

static int feed_raw(uint32_t from, const void *bytes, size_t len)
{
	return weft_proto_coded.on_message(state, from, bytes, len);
}

static void write_frag(struct weft_mpw *m, uint64_t type, uint32_t sender, uint64_t seq, const uint8_t *root,
		       uint32_t index, const uint8_t *frag, size_t flen, const uint8_t (*proof)[32], uint32_t plen)
{
	weft_mpw_array(m, 8);
	weft_mpw_uint(m, 1);
	weft_mpw_uint(m, type);
	weft_mpw_uint(m, sender);
	weft_mpw_uint(m, seq);
	weft_mpw_bin(m, root, 32);
	weft_mpw_uint(m, index);
	weft_mpw_bin(m, frag, flen);
	weft_mpw_array(m, plen);
	for (uint32_t l = 0; l < plen; l++)
		weft_mpw_bin(m, proof[l], 32);
}

/* VAL or ECHO of fragment index of w, with its proof. */
static int feed_frag(uint32_t from, uint64_t type, uint32_t sender, uint64_t seq, const struct cw *w, uint32_t index)
{
	uint8_t proof[8][32];
	brb_merkle_proof(&w->tree, index, proof);
	struct weft_mpw m;
	weft_mpw_init(&m);
	write_frag(&m, type, sender, seq, w->root, index, w->frag[index], w->lens[index],
		   (const uint8_t(*)[32])proof, w->tree.depth);
	int rc = feed_raw(from, m.buf, m.len);
	weft_mpw_free(&m);
	return rc;
}

static int feed_ready(uint32_t from, uint32_t sender, uint64_t seq, const uint8_t *root)
{
	struct weft_mpw m;
	weft_mpw_init(&m);
	weft_mpw_array(&m, 5);
	weft_mpw_uint(&m, 1);
	weft_mpw_uint(&m, READY);
	weft_mpw_uint(&m, sender);
	weft_mpw_uint(&m, seq);
	weft_mpw_bin(&m, root, 32);
	int rc = feed_raw(from, m.buf, m.len);
	weft_mpw_free(&m);
	return rc;
}

struct parsed {
	uint64_t type, seq;
	uint32_t sender, index, flen, plen;
	uint8_t root[32];
	const uint8_t *frag;
	uint8_t proof[8][32];
};

/* Parses a recorded VAL/ECHO (fields 8) or READY (5); 0 when well formed. */
static int parse(const struct fake_sent *s, struct parsed *p)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t version;
	memset(p, 0, sizeof(*p));
	weft_mp_reader_init(&r, s->data, s->len);
	if (weft_mp_read_array(&r, &count) || weft_mp_read_uint(&r, &version) || weft_mp_read_uint(&r, &p->type) ||
	    weft_mp_read_u32(&r, &p->sender) || weft_mp_read_uint(&r, &p->seq) ||
	    weft_mp_read_bin_fixed(&r, p->root, 32))
		return -1;
	if (count == 5)
		return weft_mp_remaining(&r) ? -1 : 0;
	if (count != 8 || weft_mp_read_u32(&r, &p->index) || weft_mp_read_bin(&r, &p->frag, &p->flen) ||
	    weft_mp_read_array(&r, &p->plen) || p->plen > 8)
		return -1;
	for (uint32_t l = 0; l < p->plen; l++)
		if (weft_mp_read_bin_fixed(&r, p->proof[l], 32))
			return -1;
	return weft_mp_remaining(&r) ? -1 : 0;
}

/* One counter of the protocol's info map. */
static uint64_t info_uint(const char *key)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_proto_coded.info(state, &w);
	struct weft_mp_reader r;
	uint32_t pairs;
	uint64_t v = UINT64_MAX;
	weft_mp_reader_init(&r, w.buf, w.len);
	weft_mp_read_map(&r, &pairs);
	for (uint32_t p = 0; p < pairs; p++) {
		const char *k;
		uint32_t klen;
		weft_mp_read_str(&r, &k, &klen);
		if (klen == strlen(key) && memcmp(k, key, klen) == 0 && weft_mp_peek_type(&r) == WEFT_MP_UINT) {
			weft_mp_read_uint(&r, &v);
			break;
		}
		weft_mp_skip(&r);
	}
	weft_mpw_free(&w);
	return v;
}

/* DELIVERED [1, 17, sender, seq, invalid, payload] from a peer (catch-up). */
static int feed_delivered(uint32_t from, uint32_t sender, uint64_t seq, const void *payload, size_t len)
{
	struct weft_mpw m;
	weft_mpw_init(&m);
	weft_mpw_array(&m, 6);
	weft_mpw_uint(&m, 1);
	weft_mpw_uint(&m, 17);
	weft_mpw_uint(&m, sender);
	weft_mpw_uint(&m, seq);
	weft_mpw_bool(&m, false);
	weft_mpw_bin(&m, payload, len);
	int rc = feed_raw(from, m.buf, m.len);
	weft_mpw_free(&m);
	return rc;
}

/* STATUS [1, 16, 3, 0, [[low, bitmap] x 4]]: sender s at watermark low with
 * bitmap byte 0 = bits, the other senders at 0 (window 64: 8-byte bitmaps). */
static void status_msg(struct weft_mpw *m, uint32_t s, uint64_t low, uint8_t bits)
{
	uint8_t bitmap[8] = {0};
	weft_mpw_reset(m);
	weft_mpw_array(m, 5);
	weft_mpw_uint(m, 1);
	weft_mpw_uint(m, 16);
	weft_mpw_uint(m, 3);
	weft_mpw_uint(m, 0);
	weft_mpw_array(m, 4);
	for (uint32_t x = 0; x < 4; x++) {
		bitmap[0] = x == s ? bits : 0;
		weft_mpw_array(m, 2);
		weft_mpw_uint(m, x == s ? low : 0);
		weft_mpw_bin(m, bitmap, sizeof(bitmap));
	}
}

/* ---- running one instance from a chosen set of fragments ---- */

/* Hands node SELF the fragments S[0..K) of w for (sender, seq) (its own as
 * a VAL, the others as ECHOs from their owners) and 2f+1 READYs from other
 * nodes, READYs first or last.  Returns the one delivery, or NULL.  With
 * readies first, *early reports a delivery before the k-th fragment. */
static const struct fake_delivery *run_subset(const struct cw *w, uint32_t sender, uint64_t seq, const uint32_t *S,
					      bool readies_first, bool *early)
{
	fake_env_clear(&fe);
	uint32_t readers = 0;
	if (readies_first) {
		for (uint32_t j = 0; j < N && readers < 2 * F + 1; j++)
			if (j != SELF)
				feed_ready(j, sender, seq, w->root), readers++;
	}
	for (uint32_t x = 0; x < K; x++) {
		uint32_t j = S[readies_first ? K - 1 - x : x];
		if (x == K - 1 && early && fe.ndeliveries)
			*early = true;
		if (j == SELF)
			feed_frag(sender, VAL, sender, seq, w, j);
		else
			feed_frag(j, ECHO, sender, seq, w, j);
	}
	if (!readies_first) {
		for (uint32_t j = 0; j < N && readers < 2 * F + 1; j++)
			if (j != SELF)
				feed_ready(j, sender, seq, w->root), readers++;
	}
	return fe.ndeliveries == 1 ? &fe.deliveries[0] : NULL;
}

/* Next k-subset of 0..n-1 in lexicographic order; false after the last. */
static bool next_subset(uint32_t *S, uint32_t k, uint32_t n)
{
	for (uint32_t x = k; x-- > 0;) {
		if (S[x] < n - k + x) {
			S[x]++;
			for (uint32_t y = x + 1; y < k; y++)
				S[y] = S[y - 1] + 1;
			return true;
		}
	}
	return false;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t rnd(uint32_t below)
{
	rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % below);
}

static void random_subset(uint32_t *S, uint32_t k, uint32_t n)
{
	uint32_t pool[256];
	for (uint32_t i = 0; i < n; i++)
		pool[i] = i;
	for (uint32_t x = 0; x < k; x++) {
		uint32_t y = x + rnd(n - x), t = pool[x];
		pool[x] = pool[y], pool[y] = t;
	}
	for (uint32_t x = 0; x < k; x++) /* sorted, for readability of failures */
		for (uint32_t y = x + 1; y < k; y++)
			if (pool[y] < pool[x]) {
				uint32_t t = pool[x];
				pool[x] = pool[y], pool[y] = t;
			}
	memcpy(S, pool, k * sizeof(*S));
}

/* Runs every k-subset (or `samples` random ones when samples > 0) of w for
 * sender; counts runs whose outcome is right: the payload (want != NULL)
 * or the invalid verdict. */
static bool all_subsets(const struct cw *w, uint32_t sender, uint64_t *seq, const uint8_t *want, size_t wlen,
			uint32_t samples, uint32_t *runs)
{
	uint32_t S[256];
	bool good = true;
	*runs = 0;
	for (uint32_t x = 0; x < K; x++)
		S[x] = x;
	do {
		if (samples)
			random_subset(S, K, N);
		bool early = false;
		const struct fake_delivery *d = run_subset(w, sender, (*seq)++, S, *runs % 2 == 1, &early);
		bool right = d && !early && d->origin == sender &&
			     (want ? !d->invalid && d->len == wlen && memcmp(d->data, want, wlen) == 0
				   : d->invalid && d->len == 0);
		if (!right && good) {
			diag("n=%u subset starting %u,%u: %s", N, S[0], K > 1 ? S[1] : 0,
			     d == NULL ? "no delivery" : early ? "delivered early" : "wrong outcome");
		}
		good = good && right;
		(*runs)++;
	} while (samples ? *runs < samples : next_subset(S, K, N));
	return good;
}

static void fill(uint8_t *p, size_t len, uint32_t salt)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + salt * 7 + (i >> 8));
}

/* ---- log capture (n > 255) ---- */

static char last_log[256];

static void capture_log(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt,
			va_list ap)
{
	vsnprintf(last_log, sizeof(last_log), fmt, ap);
}

int main(void)
{
	bool sub_ok;
	weft_crypto_init();
	uint8_t payload[70000];
	fill(payload, sizeof(payload), 1);

	/* ---- as the sender: n = 4, we are node 1 ---- */
	setup(1, 4);
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	is_int(weft_proto_coded.on_request(state, payload, 3000, &reply), 0, "broadcast of 3000 bytes accepted");
	weft_mpw_free(&reply);
	struct cw w;
	cw_encode(&w, 4, payload, 3000);
	is_int((long long)fake_env_count(&fe, "coded.val"), 3, "n - 1 = 3 VALs (our own fragment stays here)");
	bool vals_ok = true;
	for (size_t s = 0; s < fe.nsent; s++) {
		struct parsed p;
		if (strcmp(fe.sent[s].kind, "coded.val") != 0)
			continue;
		vals_ok = vals_ok && parse(&fe.sent[s], &p) == 0 && p.type == VAL && p.sender == 1 && p.seq == 0 &&
			  fe.sent[s].to >= 0 && p.index == (uint32_t)fe.sent[s].to && p.index != 1 &&
			  memcmp(p.root, w.root, 32) == 0 && p.flen == w.lens[p.index] &&
			  memcmp(p.frag, w.frag[p.index], p.flen) == 0 && p.plen == 2 &&
			  brb_merkle_verify(p.root, 4, p.index, p.frag, p.flen, (const uint8_t(*)[32])p.proof,
					    p.plen) == 0;
	}
	ok(vals_ok, "VAL j goes to node j: fragment j of the canonical codeword, a proof of ceil(log2 4) = 2 hashes");
	const struct fake_sent *es = fake_env_last(&fe, "coded.echo");
	struct parsed ep;
	ok(es && es->to == -1 && parse(es, &ep) == 0 && ep.index == 1 && memcmp(ep.root, w.root, 32) == 0,
	   "our own ECHO (fragment 1) is multicast");
	ok(fake_env_last(&fe, "coded.val")->len < 3000 / 2 + 200, "a VAL costs about |m|/k (k = 2)");
	fake_env_clear(&fe);
	feed_frag(0, ECHO, 1, 0, &w, 0);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 0, "2 ECHOs: no READY (echo quorum 3)");
	feed_frag(2, ECHO, 1, 0, &w, 2);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 1, "3 ECHOs: READY");
	feed_ready(0, 1, 0, w.root);
	is_int((long long)fe.ndeliveries, 0, "2 READYs: not yet");
	feed_ready(3, 1, 0, w.root);
	ok(fe.ndeliveries == 1 && !fe.deliveries[0].invalid && fe.deliveries[0].len == 3000 &&
		   memcmp(fe.deliveries[0].data, payload, 3000) == 0,
	   "2f+1 READYs and k fragments: our own broadcast delivered, exact payload");
	cw_free(&w);

	/* Restart of a sender with a broadcast in flight: the VALs come back. */
	fake_env_clear(&fe);
	is_int(weft_proto_coded.on_request(state, payload + 5, 777, NULL), 0, "a second broadcast (seq 1)");
	cw_encode(&w, 4, payload + 5, 777);
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	fe.now_us += 600000;
	weft_proto_coded.on_timer(state, BRB_TIMER_BASE);
	bool resent = fake_env_count(&fe, "coded.val") == 3 && fake_env_count(&fe, "coded.echo") == 1;
	for (size_t s = 0; s < fe.nsent; s++) {
		struct parsed p;
		if (strcmp(fe.sent[s].kind, "coded.val") == 0 || strcmp(fe.sent[s].kind, "coded.echo") == 0)
			resent = resent && parse(&fe.sent[s], &p) == 0 && p.seq == 1 && memcmp(p.root, w.root, 32) == 0;
	}
	ok(resent, "after a restart the sender re-sends its VALs and its ECHO for the same root (payload kept in kv)");
	feed_frag(0, ECHO, 1, 1, &w, 0);
	feed_frag(3, ECHO, 1, 1, &w, 3);
	feed_ready(0, 1, 1, w.root);
	feed_ready(3, 1, 1, w.root);
	ok(fe.ndeliveries == 1 && fe.deliveries[0].seq == 1 && fe.deliveries[0].len == 777 &&
		   memcmp(fe.deliveries[0].data, payload + 5, 777) == 0,
	   "and delivers it");
	cw_free(&w);
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	fe.now_us += 600000;
	weft_proto_coded.on_timer(state, BRB_TIMER_BASE);
	is_int((long long)fake_env_count(&fe, "coded.val"), 0, "a delivered broadcast is not restored after a restart");
	teardown();

	/* ---- the normal path as a receiver, and its thresholds ---- */
	setup(1, 4);
	cw_encode(&w, 4, "hello, coded world", 18);
	is_int(feed_frag(0, VAL, 0, 0, &w, 1), 0, "VAL for us from the sender, valid proof: accepted");
	es = fake_env_last(&fe, "coded.echo");
	ok(es && parse(es, &ep) == 0 && ep.index == 1 && ep.flen == w.lens[1] &&
		   memcmp(ep.frag, w.frag[1], ep.flen) == 0,
	   "ECHO of our fragment multicast");
	is_int(feed_frag(0, VAL, 0, 0, &w, 1), 0, "the same VAL again");
	is_int((long long)fake_env_count(&fe, "coded.echo"), 1, "echoed once");
	feed_frag(2, ECHO, 0, 0, &w, 2);
	feed_frag(2, ECHO, 0, 0, &w, 2);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 0, "a repeated ECHO counts once: 2 of 3");
	struct cw other;
	cw_encode(&other, 4, "something else", 14);
	is_int(feed_frag(2, ECHO, 0, 0, &other, 2), 0, "a second ECHO from node 2 for another root");
	is_int((long long)fake_env_count(&fe, "coded.ready"), 0, "is ignored (one vote per voter)");
	feed_frag(3, ECHO, 0, 0, &w, 3);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 1, "3 ECHOs: READY(root)");
	es = fake_env_last(&fe, "coded.ready");
	ok(es && parse(es, &ep) == 0 && memcmp(ep.root, w.root, 32) == 0 && es->len < 64,
	   "READY carries the root only");
	feed_ready(2, 0, 0, w.root);
	is_int((long long)fe.ndeliveries, 0, "2 READYs: not delivered");
	feed_ready(3, 0, 0, w.root);
	ok(fe.ndeliveries == 1 && !fe.deliveries[0].invalid && fe.deliveries[0].len == 18 &&
		   memcmp(fe.deliveries[0].data, "hello, coded world", 18) == 0,
	   "3 READYs: delivered (0, 0) = the payload");
	feed_ready(0, 0, 0, w.root);
	is_int((long long)fe.ndeliveries, 1, "delivered once");
	cw_free(&other);
	cw_free(&w);

	/* READY amplification, and delivery waiting for k fragments. */
	fake_env_clear(&fe);
	cw_encode(&w, 4, payload, 500);
	feed_ready(2, 3, 0, w.root);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 0, "one READY: no amplification");
	feed_ready(0, 3, 0, w.root);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 1, "f+1 READYs: READY without any ECHO");
	feed_ready(3, 3, 0, w.root);
	is_int((long long)fe.ndeliveries, 0, "2f+1 READYs but no fragment: waits");
	feed_frag(3, ECHO, 3, 0, &w, 3);
	is_int((long long)fe.ndeliveries, 0, "one fragment of k = 2: waits");
	feed_frag(2, ECHO, 3, 0, &w, 2);
	ok(fe.ndeliveries == 1 && fe.deliveries[0].len == 500 && memcmp(fe.deliveries[0].data, payload, 500) == 0,
	   "the k-th fragment (both parity): decoded and delivered");
	cw_free(&w);

	/* ---- hostile messages: rejected, counted, no reply ---- */
	fake_env_clear(&fe);
	cw_encode(&w, 4, payload, 100);
	uint64_t rejected0 = info_uint("rejected");
	ok(feed_frag(2, VAL, 0, 1, &w, 1) < 0, "VAL from a node other than the sender: rejected");
	ok(feed_frag(0, VAL, 0, 1, &w, 2) < 0, "VAL carrying another node's fragment: rejected");
	ok(feed_frag(2, ECHO, 0, 1, &w, 3) < 0, "ECHO of a fragment that is not the echoer's own: rejected");
	uint8_t proof[8][32];
	brb_merkle_proof(&w.tree, 2, proof);
	struct weft_mpw m;
	weft_mpw_init(&m);
	write_frag(&m, ECHO, 0, 1, w.root, 2, w.frag[3], w.lens[3], (const uint8_t(*)[32])proof, 2);
	is_int(feed_raw(2, m.buf, m.len), WEFT_ECRYPTO, "ECHO whose fragment does not match the proof: rejected");
	weft_mpw_reset(&m);
	uint8_t bad_root[32];
	memcpy(bad_root, w.root, 32);
	bad_root[0] ^= 1;
	write_frag(&m, ECHO, 0, 1, bad_root, 2, w.frag[2], w.lens[2], (const uint8_t(*)[32])proof, 2);
	is_int(feed_raw(2, m.buf, m.len), WEFT_ECRYPTO, "ECHO against another root: rejected");
	weft_mpw_reset(&m);
	write_frag(&m, ECHO, 0, 1, w.root, 2, w.frag[2], w.lens[2], (const uint8_t(*)[32])proof, 1);
	ok(feed_raw(2, m.buf, m.len) < 0, "proof one hash short of the tree depth: rejected");
	weft_mpw_reset(&m);
	memcpy(proof[2], proof[1], 32);
	write_frag(&m, ECHO, 0, 1, w.root, 2, w.frag[2], w.lens[2], (const uint8_t(*)[32])proof, 3);
	ok(feed_raw(2, m.buf, m.len) < 0, "proof one hash longer than the tree depth: rejected");
	weft_mpw_reset(&m);
	write_frag(&m, ECHO, 0, 1, w.root, 4, w.frag[2], w.lens[2], (const uint8_t(*)[32])proof, 2);
	ok(feed_raw(2, m.buf, m.len) < 0, "index >= n: rejected");
	weft_mpw_reset(&m);
	write_frag(&m, ECHO, 0, 1, w.root, 2, w.frag[2], 0, (const uint8_t(*)[32])proof, 2);
	ok(feed_raw(2, m.buf, m.len) < 0, "empty fragment: rejected");
	uint8_t *huge = calloc(1, (4 << 20) / 2 + 16);
	weft_mpw_reset(&m);
	write_frag(&m, ECHO, 0, 1, w.root, 2, huge, (4 << 20) / 2 + 16, (const uint8_t(*)[32])proof, 2);
	is_int(feed_raw(2, m.buf, m.len), WEFT_ETOOBIG, "fragment over (max_payload + 4) / k: rejected before hashing");
	free(huge);
	weft_mpw_reset(&m);
	weft_mpw_array(&m, 8);
	weft_mpw_uint(&m, 1);
	weft_mpw_uint(&m, ECHO);
	weft_mpw_uint(&m, 0);
	weft_mpw_uint(&m, 1);
	weft_mpw_bin(&m, w.root, 31);
	weft_mpw_uint(&m, 2);
	weft_mpw_bin(&m, w.frag[2], w.lens[2]);
	weft_mpw_array(&m, 0);
	ok(feed_raw(2, m.buf, m.len) < 0, "31-byte root: rejected");
	weft_mpw_reset(&m);
	weft_mpw_array(&m, 8);
	weft_mpw_uint(&m, 1);
	weft_mpw_uint(&m, ECHO);
	weft_mpw_uint(&m, 0);
	weft_mpw_uint(&m, 1);
	weft_mpw_bin(&m, w.root, 32);
	weft_mpw_uint(&m, 2);
	weft_mpw_bin(&m, w.frag[2], w.lens[2]);
	weft_mpw_raw(&m, "\xdd\xff\xff\xff\xff", 5);
	ok(feed_raw(2, m.buf, m.len) < 0, "proof array declaring 2^32 - 1 hashes: rejected");
	weft_mpw_reset(&m);
	write_frag(&m, ECHO, 0, 1, w.root, 2, w.frag[2], w.lens[2], (const uint8_t(*)[32])proof, 2);
	weft_mpw_raw(&m, "\x00", 1);
	ok(feed_raw(2, m.buf, m.len) < 0, "trailing byte after the message: rejected");
	m.buf[0] = 0x97; /* 7 fields */
	ok(feed_raw(2, m.buf, m.len - 1) < 0, "VAL/ECHO with 7 fields: rejected");
	weft_mpw_reset(&m);
	weft_mpw_array(&m, 6);
	weft_mpw_uint(&m, 1);
	weft_mpw_uint(&m, READY);
	weft_mpw_uint(&m, 0);
	weft_mpw_uint(&m, 1);
	weft_mpw_bin(&m, w.root, 32);
	weft_mpw_uint(&m, 0);
	ok(feed_raw(2, m.buf, m.len) < 0, "READY with an extra field: rejected");
	weft_mpw_reset(&m);
	weft_mpw_array(&m, 5);
	weft_mpw_uint(&m, 1);
	weft_mpw_uint(&m, 3);
	weft_mpw_uint(&m, 0);
	weft_mpw_uint(&m, 1);
	weft_mpw_bin(&m, w.root, 32);
	ok(feed_raw(2, m.buf, m.len) < 0, "unknown message type 3: rejected");
	ok(feed_ready(2, 9, 0, w.root) < 0, "sender index beyond n: rejected");
	ok(feed_ready(2, 0, 200, w.root) < 0, "seq beyond the window: rejected");
	ok(feed_raw(2, "\xc1", 1) < 0 && feed_raw(2, "", 0) < 0, "garbage and empty input: rejected");
	weft_mpw_free(&m);
	is_int((long long)fe.nsent, 0, "no reply to any hostile message");
	ok(info_uint("rejected") - rejected0 >= 15, "rejections are counted (%llu)",
	   (unsigned long long)(info_uint("rejected") - rejected0));
	ok(info_uint("bad_proofs") >= 2, "bad proofs are counted");
	is_int((long long)fe.ndeliveries, 0, "and nothing was delivered");
	cw_free(&w);
	teardown();

	/* ---- every choice of k fragments, honest and inconsistent senders ---- */
	static const uint32_t ns[] = {1, 2, 3, 4, 7, 10, 16, 255};
	for (size_t t = 0; t < sizeof(ns) / sizeof(ns[0]); t++) {
		uint32_t n = ns[t];
		setup(0, n);
		uint32_t sender = n - 1, samples = n >= 16 ? (n == 255 ? 6 : 300) : 0, runs;
		uint64_t seq = 0;
		if (n == 1) {
			fake_env_clear(&fe);
			is_int(weft_proto_coded.on_request(state, payload, 100, NULL), 0, "n = 1: broadcast accepted");
			ok(fe.ndeliveries == 1 && fe.deliveries[0].len == 100 &&
				   memcmp(fe.deliveries[0].data, payload, 100) == 0 &&
				   fake_env_count(&fe, "coded.val") == 0,
			   "n = 1: delivered at once, no VAL");
			teardown();
			continue;
		}
		static const size_t sizes[] = {0, 1, 5, 1000, 65536};
		bool honest = true;
		uint32_t total = 0, nsizes = 0;
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			if (n == 255 && sizes[z] == 65536)
				continue;
			cw_encode(&w, n, payload + z, sizes[z]);
			honest = all_subsets(&w, sender, &seq, payload + z, sizes[z], samples, &runs) && honest;
			total += runs;
			nsizes++;
			cw_free(&w);
		}
		ok(honest, "n = %u, k = %u: honest sender, %u runs over %s k-subsets and %u sizes: the exact payload",
		   n, K, total, samples ? "random" : "all", nsizes);
		/* Not a codeword: the last fragment replaced, a valid root over the result. */
		cw_encode(&w, n, payload, 1000);
		fill(w.frag[n - 1], w.lens[n - 1], 99);
		cw_commit(&w);
		sub_ok = all_subsets(&w, sender, &seq, NULL, 0, samples, &runs);
		ok(sub_ok, "n = %u: inconsistent sender, %u k-subsets: all invalid", n, runs);
		cw_free(&w);
		/* Mixed fragment lengths under one root. */
		cw_encode(&w, n, payload, 1000);
		w.frag[0] = realloc(w.frag[0], w.lens[0] + 1);
		w.frag[0][w.lens[0]++] = 7;
		cw_commit(&w);
		sub_ok = all_subsets(&w, sender, &seq, NULL, 0, samples, &runs);
		ok(sub_ok, "n = %u: fragments of two lengths under one root, %u k-subsets: all invalid", n, runs);
		cw_free(&w);
		teardown();
	}

	/* ---- hostile framings for the decoder (n = 4, k = 2): consistent codewords of bad messages ---- */
	setup(1, 4);
	uint64_t seq = 0;
	uint32_t runs;
	uint8_t data[400];
	memset(data, 0, sizeof(data));
	data[0] = data[1] = data[2] = data[3] = 0xff; /* length 2^32 - 1 */
	cw_from_data(&w, 4, data, 10);
	sub_ok = all_subsets(&w, 0, &seq, NULL, 0, 0, &runs);
	ok(sub_ok, "length field 2^32 - 1: invalid for all %u k-subsets", runs);
	cw_free(&w);
	memset(data, 0, sizeof(data));
	data[3] = 17; /* room is 2 * 10 - 4 = 16 */
	cw_from_data(&w, 4, data, 10);
	sub_ok = all_subsets(&w, 0, &seq, NULL, 0, 0, &runs);
	ok(sub_ok, "length field one past the data: invalid (%u runs)", runs);
	cw_free(&w);
	memset(data, 0, sizeof(data));
	data[3] = 9, data[13] = 0xaa; /* fl = ceil(13 / 2) = 7: one padding byte, not zero */
	cw_from_data(&w, 4, data, 7);
	sub_ok = all_subsets(&w, 0, &seq, NULL, 0, 0, &runs);
	ok(sub_ok, "non-zero padding: invalid (%u runs)", runs);
	cw_free(&w);
	memset(data, 0, sizeof(data));
	data[3] = 10; /* canonical fl would be 7, this codeword uses 20 */
	cw_from_data(&w, 4, data, 20);
	sub_ok = all_subsets(&w, 0, &seq, NULL, 0, 0, &runs);
	ok(sub_ok, "non-canonical fragment length: invalid (%u runs)", runs);
	cw_free(&w);
	memset(data, 0, sizeof(data));
	data[3] = 10;
	cw_from_data(&w, 4, data, 7);
	sub_ok = all_subsets(&w, 0, &seq, data + 4, 10, 0, &runs);
	ok(sub_ok, "the same message framed canonically: delivered (%u runs)", runs);
	cw_free(&w);
	teardown();

	/* Length over max_payload (65; k = 2 makes 66 fit in two 35-byte fragments). */
	struct weft_mpw params;
	weft_mpw_init(&params);
	weft_mpw_map(&params, 1);
	weft_mpw_str(&params, "max_payload");
	weft_mpw_uint(&params, 65);
	boot_params = params.buf, boot_plen = params.len;
	setup(1, 4);
	seq = 0;
	cw_encode(&w, 4, payload, 66);
	sub_ok = all_subsets(&w, 0, &seq, NULL, 0, 0, &runs);
	ok(sub_ok, "a codeword of 66 bytes with max_payload 65: invalid (%u runs)", runs);
	cw_free(&w);
	cw_encode(&w, 4, payload, 65);
	sub_ok = all_subsets(&w, 0, &seq, payload, 65, 0, &runs);
	ok(sub_ok, "65 bytes: delivered (%u runs)", runs);
	cw_free(&w);
	cw_encode(&w, 4, payload, 68); /* 36-byte fragments */
	fake_env_clear(&fe);
	is_int(feed_frag(2, ECHO, 0, seq, &w, 2), WEFT_ETOOBIG,
	       "a 36-byte fragment with max_payload 65 and k = 2: rejected");
	cw_free(&w);
	is_int(weft_proto_coded.on_request(state, payload, 66, NULL), WEFT_ETOOBIG, "a 66-byte broadcast is refused");
	teardown();
	boot_params = NULL, boot_plen = 0;
	weft_mpw_free(&params);

	/* ---- persistence across a restart (n = 4, node 1) ---- */
	setup(1, 4);
	struct cw a, b;
	cw_encode(&a, 4, "story A", 7);
	cw_encode(&b, 4, "story B", 7);
	feed_frag(2, VAL, 2, 5, &a, 1);
	is_int((long long)fake_env_count(&fe, "coded.echo"), 1, "ECHO for (2, 5) root A");
	/* READY for (3, 7) root A through amplification. */
	feed_ready(0, 3, 7, a.root);
	feed_ready(2, 3, 7, a.root);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 1, "READY for (3, 7) root A");
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	feed_frag(2, VAL, 2, 5, &b, 1);
	is_int((long long)fake_env_count(&fe, "coded.echo"), 0,
	       "after a restart, a VAL for another root is not echoed");
	feed_frag(2, VAL, 2, 5, &a, 1);
	is_int((long long)fake_env_count(&fe, "coded.echo"), 0,
	       "the VAL for the root we echoed: our ECHO was restored, not sent twice (the resend timer repeats it)");
	fake_env_clear(&fe);
	feed_ready(0, 3, 7, b.root);
	feed_ready(2, 3, 7, b.root);
	is_int((long long)fake_env_count(&fe, "coded.ready"), 0,
	       "f+1 READYs for another root: no READY contradicting ours");
	fe.now_us += 600000;
	weft_proto_coded.on_timer(state, BRB_TIMER_BASE);
	es = fake_env_last(&fe, "coded.ready");
	ok(es && parse(es, &ep) == 0 && ep.seq == 7 && memcmp(ep.root, a.root, 32) == 0,
	   "the resend timer repeats our persisted READY(A)");
	es = fake_env_last(&fe, "coded.echo");
	ok(es && parse(es, &ep) == 0 && ep.seq == 5 && memcmp(ep.root, a.root, 32) == 0 && ep.index == 1,
	   "and our ECHO (fragment and proof)");
	/* Deliver (2, 5), then restart: the delivery is remembered. */
	feed_frag(3, ECHO, 2, 5, &a, 3);
	feed_ready(0, 2, 5, a.root);
	feed_ready(2, 2, 5, a.root);
	feed_ready(3, 2, 5, a.root);
	ok(fe.ndeliveries == 1 && fe.deliveries[0].len == 7 && memcmp(fe.deliveries[0].data, "story A", 7) == 0,
	   "(2, 5) delivered = story A");
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	feed_ready(0, 2, 5, a.root);
	feed_frag(2, VAL, 2, 5, &a, 1);
	ok(fe.ndeliveries == 0 && fe.nsent == 0, "after a restart, messages for a delivered instance are ignored");
	/* A peer lacking (2, 5) gets our votes for it, even after the restart. */
	struct weft_mpw st;
	weft_mpw_init(&st);
	status_msg(&st, 2, 5, 0);
	is_int(feed_raw(3, st.buf, st.len), 0, "STATUS from node 3: sender 2's watermark 5");
	ok(fake_env_count(&fe, "coded.echo") == 1 && fake_env_count(&fe, "coded.ready") == 1,
	   "after a restart the delivery time of (2, 5) is unknown: answered at once");
	fake_env_clear(&fe);
	fe.now_us += 600000;
	is_int(feed_raw(3, st.buf, st.len), 0, "the same STATUS resend_ms later");
	const struct fake_sent *le = fake_env_last(&fe, "coded.echo"), *lr = fake_env_last(&fe, "coded.ready");
	struct parsed lp, lq;
	ok(le && le->to == 3 && parse(le, &lp) == 0 && lp.seq == 5 && lp.index == 1 &&
		   memcmp(lp.root, a.root, 32) == 0 &&
		   brb_merkle_verify(lp.root, 4, 1, lp.frag, lp.flen, (const uint8_t(*)[32])lp.proof, lp.plen) == 0,
	   "node 3 gets our ECHO of (2, 5) with a valid proof, to it alone");
	ok(lr && lr->to == 3 && parse(lr, &lq) == 0 && lq.seq == 5 && memcmp(lq.root, a.root, 32) == 0,
	   "and our READY(A)");
	fake_env_clear(&fe);
	feed_raw(3, st.buf, st.len);
	ok(fake_env_count(&fe, "coded.echo") == 0, "another STATUS right away: not answered (once per resend_ms / 2)");
	fe.now_us += 300000;
	feed_raw(3, st.buf, st.len);
	ok(fake_env_count(&fe, "coded.echo") == 1 && fake_env_count(&fe, "coded.ready") == 1,
	   "300 ms later: answered again");
	fake_env_clear(&fe);
	fe.now_us += 300000;
	status_msg(&st, 2, 4, 0x02); /* watermark 4, seq 5 delivered */
	feed_raw(3, st.buf, st.len);
	fe.now_us += 300000;
	status_msg(&st, 2, 6, 0);
	feed_raw(3, st.buf, st.len);
	ok(fake_env_count(&fe, "coded.echo") == 0 && fake_env_count(&fe, "coded.ready") == 0,
	   "a peer whose bitmap has (2, 5), or whose watermark is past it, gets nothing");
	cw_free(&a);
	cw_free(&b);
	teardown();

	/* ---- our ECHO fragment survives a restart (tla CodedBrokenEchoRestore) ----
	 * Node 1 echoes sender 2's fragment, restarts, and sender 2 is gone: no
	 * VAL comes again.  Our fragment must still be resent and count towards
	 * decoding, or a peer one fragment short never delivers (Totality). */
	setup(1, 4);
	cw_encode(&a, 4, "story C", 7);
	feed_frag(2, VAL, 2, 9, &a, 1);
	is_int((long long)fake_env_count(&fe, "coded.echo"), 1, "ECHO for (2, 9)");
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	feed_ready(0, 2, 9, a.root); /* opens (2, 9) after the restart; the sender stays silent */
	fe.now_us += 600000;
	weft_proto_coded.on_timer(state, BRB_TIMER_BASE);
	es = fake_env_last(&fe, "coded.echo");
	ok(es && parse(es, &ep) == 0 && ep.seq == 9 && ep.index == 1 && memcmp(ep.root, a.root, 32) == 0 &&
		   brb_merkle_verify(ep.root, 4, 1, ep.frag, ep.flen, (const uint8_t(*)[32])ep.proof, ep.plen) == 0,
	   "after a restart, with no VAL again, the resend timer repeats our ECHO with its fragment and proof");
	feed_frag(3, ECHO, 2, 9, &a, 3);
	feed_ready(2, 2, 9, a.root);
	feed_ready(3, 2, 9, a.root);
	ok(fe.ndeliveries == 1 && fe.deliveries[0].len == 7 && memcmp(fe.deliveries[0].data, "story C", 7) == 0,
	   "our restored fragment and node 3's decode (2, 9) = story C");
	cw_free(&a);
	teardown();

	/* The same when the instance is opened by the core's catch-up: a
	 * DELIVERED report first, after the restart.  And a node delivered by
	 * catch-up still answers a peer lacking the instance with its ECHO. */
	setup(1, 4);
	cw_encode(&a, 4, "story D", 7);
	feed_frag(2, VAL, 2, 11, &a, 1);
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	feed_delivered(0, 2, 11, "story D", 7);
	ok(fe.ndeliveries == 0, "one DELIVERED report of the f+1 needed: not delivered");
	fe.now_us += 600000;
	weft_proto_coded.on_timer(state, BRB_TIMER_BASE);
	es = fake_env_last(&fe, "coded.echo");
	ok(es && parse(es, &ep) == 0 && ep.seq == 11 && ep.index == 1 && memcmp(ep.root, a.root, 32) == 0,
	   "an instance a DELIVERED report opened after the restart resends our restored ECHO");
	feed_delivered(2, 2, 11, "story D", 7);
	ok(fe.ndeliveries == 1 && fe.deliveries[0].len == 7 && memcmp(fe.deliveries[0].data, "story D", 7) == 0,
	   "the second report delivers (2, 11) = story D by catch-up");
	fake_env_clear(&fe);
	fe.now_us += 600000;
	status_msg(&st, 2, 11, 0);
	feed_raw(3, st.buf, st.len);
	es = fake_env_last(&fe, "coded.echo");
	ok(es && es->to == 3 && parse(es, &ep) == 0 && ep.seq == 11 && ep.index == 1 &&
		   brb_merkle_verify(ep.root, 4, 1, ep.frag, ep.flen, (const uint8_t(*)[32])ep.proof, ep.plen) == 0,
	   "delivered by catch-up, we still answer node 3, lacking (2, 11), with our ECHO");
	weft_mpw_free(&st);
	cw_free(&a);
	teardown();

	/* ---- the Byzantine strategies (simulator adversaries): every k-subset gives invalid ---- */
	static const char *const strategies[] = {"inconsistent", "mixed_lengths", "bad_length"};
	for (size_t sx = 0; sx < 3; sx++) {
		const struct weft_proto_strategy *strat = weft_proto_strategy_find(&weft_proto_coded, strategies[sx]);
		ok(strat != NULL, "strategy %s registered", strategies[sx]);
		if (strat == NULL)
			continue;
		/* Node 0 runs the strategy and broadcasts; we collect its fragments. */
		struct fake_env bz;
		fake_env_init(&bz, 0, 4);
		void *bs = calloc(1, strat->ops->state_size);
		strat->ops->init(bs, &bz.env, NULL, 0);
		strat->ops->on_request(bs, payload, 500, NULL);
		struct cw got;
		memset(&got, 0, sizeof(got));
		got.n = 4, got.k = 2;
		bool proofs = true;
		uint8_t root0[32];
		uint32_t seen = 0;
		for (size_t x = 0; x < bz.nsent; x++) {
			struct parsed p;
			if (parse(&bz.sent[x], &p) != 0 || p.plen != 2 || (p.type != VAL && p.type != ECHO))
				continue;
			proofs = proofs && brb_merkle_verify(p.root, 4, p.index, p.frag, p.flen,
							     (const uint8_t(*)[32])p.proof, 2) == 0;
			if (seen == 0)
				memcpy(root0, p.root, 32);
			proofs = proofs && memcmp(root0, p.root, 32) == 0;
			if (got.frag[p.index] == NULL) {
				got.frag[p.index] = malloc(p.flen);
				memcpy(got.frag[p.index], p.frag, p.flen);
				got.lens[p.index] = p.flen;
				seen++;
			}
		}
		strat->ops->destroy(bs);
		free(bs);
		fake_env_free(&bz);
		ok(seen == 4 && proofs, "%s: 3 VALs and an ECHO, all with valid proofs under one root", strategies[sx]);
		if (seen != 4)
			continue;
		cw_commit(&got);
		is_mem(got.root, root0, 32, "%s: the root is the Merkle root over the fragments sent", strategies[sx]);
		setup(1, 4);
		seq = 0;
		sub_ok = all_subsets(&got, 0, &seq, NULL, 0, 0, &runs);
		ok(sub_ok, "%s: an honest node delivers invalid for all %u k-subsets", strategies[sx], runs);
		teardown();
		cw_free(&got);
	}

	/* ---- mutated messages: never a crash, never a wrong delivery ---- */
	setup(1, 4);
	cw_encode(&w, 4, payload, 2000);
	uint32_t mutated = 0, accepted = 0;
	for (int it = 0; it < 3000; it++) {
		uint32_t from = rnd(4), kind = rnd(3);
		if (from == 1)
			from = 0;
		struct weft_mpw mm;
		weft_mpw_init(&mm);
		uint8_t pr[8][32];
		brb_merkle_proof(&w.tree, kind == VAL ? 1 : from, pr);
		if (kind == READY) {
			weft_mpw_array(&mm, 5);
			weft_mpw_uint(&mm, 1);
			weft_mpw_uint(&mm, READY);
			weft_mpw_uint(&mm, 0);
			weft_mpw_uint(&mm, 0);
			weft_mpw_bin(&mm, w.root, 32);
		} else {
			uint32_t idx = kind == VAL ? 1 : from;
			write_frag(&mm, kind, 0, 0, w.root, idx, w.frag[idx], w.lens[idx], (const uint8_t(*)[32])pr, 2);
			if (kind == VAL)
				from = 0;
		}
		size_t mlen = mm.len;
		if (rnd(4) == 0)
			mlen = rnd((uint32_t)mm.len); /* truncated */
		for (uint32_t flips = 1 + rnd(3); flips-- > 0 && mlen > 0;) {
			uint32_t bit = rnd((uint32_t)mlen * 8);
			mm.buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		accepted += feed_raw(from, mm.buf, mlen) == 0;
		mutated++;
		weft_mpw_free(&mm);
	}
	bool no_wrong = true;
	for (size_t d = 0; d < fe.ndeliveries; d++)
		no_wrong = no_wrong && fe.deliveries[d].origin == 0 && fe.deliveries[d].seq == 0 && !fe.deliveries[d].invalid &&
			   fe.deliveries[d].len == 2000 && memcmp(fe.deliveries[d].data, payload, 2000) == 0;
	ok(no_wrong && fe.ndeliveries <= 1, "%u mutated VAL/ECHO/READY messages (%u accepted): no wrong delivery",
	   mutated, accepted);
	fake_env_clear(&fe);
	cw_free(&w);
	cw_encode(&w, 4, payload + 1, 321);
	/* (3, 7) is more than 3 bit flips away from (0, 0): no mutated vote landed there */
	feed_frag(3, VAL, 3, 7, &w, 1);
	feed_frag(2, ECHO, 3, 7, &w, 2);
	feed_frag(0, ECHO, 3, 7, &w, 0);
	feed_ready(2, 3, 7, w.root);
	feed_ready(0, 3, 7, w.root);
	ok(fe.ndeliveries == 1 && fe.deliveries[0].len == 321 && memcmp(fe.deliveries[0].data, payload + 1, 321) == 0,
	   "and the node still delivers a clean instance afterwards");
	cw_free(&w);
	teardown();

	/* ---- n > 255 ---- */
	struct fake_env big;
	fake_env_init(&big, 0, 256);
	struct weft_env_ops ops = *big.env.ops;
	ops.log = capture_log;
	big.env.ops = &ops;
	void *bs = calloc(1, weft_proto_coded.state_size);
	is_int(weft_proto_coded.init(bs, &big.env, NULL, 0), WEFT_EINVAL, "n = 256: init refused");
	ok(strstr(last_log, "coded needs n <= 255 (GF(2^8))") != NULL, "with the log line \"%s\"", last_log);
	free(bs);
	fake_env_free(&big);

	return done_testing();
}
