/* store_keys.c - TAP tests of the key tree and range grants
 * (storage/keytree.c, weft/store_keys.h): the derivation recomputed by
 * hand with libsodium from the construction the header documents; root
 * versions and purposes kept apart; for random files of 1..5000 chunks and
 * random byte ranges, grants whose nodes cover exactly the range, whose
 * leaf keys equal the owner's, which refuse every leaf outside, and from
 * whose keys the documented derivation reaches exactly the range's leaves;
 * minimality against a brute-force minimum for every range of small
 * trees; binary and string round trips; malformed grants refused with a
 * reason (version, fields, unsorted, overlapping, gaps, levels, non-minimal
 * covers, truncation at every byte, huge counts, bad strings).
 *
 * Random sizes come from weft_rng with a fixed seed (WEFT_TEST_SEED
 * overrides it), printed as a diagnostic. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/rng.h"
#include "weft/store_keys.h"

static struct weft_rng rng;

/* The documented KDF, written out independently of keytree.c. */
static void kdf(uint8_t out[32], const uint8_t key[32], const char *label, const void *comp, size_t n)
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, key, 32, 32);
	crypto_generichash_update(&st, (const unsigned char *)label, strlen(label) + 1);
	crypto_generichash_update(&st, comp, n);
	crypto_generichash_final(&st, out, 32);
}

/* T(level, index) -> T(level - 1, child) by hand. */
static void hand_child(uint8_t out[32], const uint8_t parent[32], uint32_t level, uint32_t child)
{
	uint8_t comp[5] = {(uint8_t)(level - 1)};
	weft_be32_put(comp + 1, child);
	kdf(out, parent, "weft.store.v1.node", comp, sizeof(comp));
}

static void test_construction(void)
{
	struct weft_key *root = weft_key_random(), *f = weft_key_new(), *k = weft_key_new();
	uint8_t nonce[WEFT_FILE_NONCE_LEN], v[32], want[32], t[32], ver[4];
	randombytes_buf(nonce, sizeof(nonce));

	weft_be32_put(ver, 7);
	kdf(v, root->b, "weft.store.v1.root-version", ver, 4);
	kdf(want, v, "weft.store.v1.file", nonce, sizeof(nonce));
	weft_key_file(f, root, 7, nonce);
	is_mem(f->b, want, 32, "file key = KDF(KDF(R, root-version, be32 v), file, nonce)");

	kdf(want, f->b, "weft.store.v1.manifest", NULL, 0);
	weft_key_manifest(k, f);
	is_mem(k->b, want, 32, "manifest key = KDF(F, manifest, \"\")");

	kdf(want, v, "weft.store.v1.convergence", NULL, 0);
	weft_key_purpose(k, root, 7, WEFT_KEY_CONVERGENCE);
	is_mem(k->b, want, 32, "convergence secret = KDF(V(v), convergence, \"\")");
	kdf(want, v, "weft.store.v1.chunker", NULL, 0);
	weft_key_purpose(k, root, 7, WEFT_KEY_CHUNKER);
	is_mem(k->b, want, 32, "chunker key = KDF(V(v), chunker, \"\")");

	/* 5 chunks: depth 3; leaf 4 = T(3,0) -> T(2,1) -> T(1,2) -> T(0,4). */
	uint8_t d = 3;
	kdf(t, f->b, "weft.store.v1.tree", &d, 1);
	hand_child(t, t, 3, 1);
	hand_child(t, t, 2, 2);
	hand_child(t, t, 1, 4);
	ok(weft_key_leaf(k, f, 5, 4) == 0, "leaf 4 of 5");
	is_mem(k->b, t, 32, "leaf key = the documented path from T(D, 0)");
	d = 0;
	kdf(t, f->b, "weft.store.v1.tree", &d, 1);
	ok(weft_key_leaf(k, f, 1, 0) == 0 && memcmp(k->b, t, 32) == 0, "a one-chunk file's leaf is the top T(0, 0)");
	is_int(weft_key_leaf(k, f, 5, 5), WEFT_EINVAL, "no leaf past the last chunk");

	/* 16..64-byte outputs of the one KDF are separate hashes. */
	uint8_t o24[24], o32[32];
	weft_key_derive(o24, 24, root, "x", "y", 1);
	weft_key_derive(o32, 32, root, "x", "y", 1);
	ok(memcmp(o24, o32, 24) != 0, "a 24-byte output is not a prefix of the 32-byte one");
	weft_key_free(root);
	weft_key_free(f);
	weft_key_free(k);
}

static void test_versions(void)
{
	struct weft_key *root = weft_key_random(), *other = weft_key_random();
	struct weft_key *a = weft_key_new(), *b = weft_key_new();
	uint8_t n1[WEFT_FILE_NONCE_LEN] = {1}, n2[WEFT_FILE_NONCE_LEN] = {2};
	weft_key_file(a, root, 1, n1);
	weft_key_file(b, root, 1, n1);
	ok(memcmp(a->b, b->b, 32) == 0, "derivation is deterministic (old versions stay derivable)");
	weft_key_file(b, root, 2, n1);
	ok(memcmp(a->b, b->b, 32) != 0, "a new root version gives other file keys");
	weft_key_file(b, root, 1, n2);
	ok(memcmp(a->b, b->b, 32) != 0, "another nonce (a rewrite) gives another file key");
	weft_key_file(b, other, 1, n1);
	ok(memcmp(a->b, b->b, 32) != 0, "another root gives another file key");
	weft_key_purpose(a, root, 1, WEFT_KEY_CONVERGENCE);
	weft_key_purpose(b, root, 1, WEFT_KEY_CHUNKER);
	ok(memcmp(a->b, b->b, 32) != 0, "purposes are separate keys");
	weft_key_purpose(b, root, 2, WEFT_KEY_CONVERGENCE);
	ok(memcmp(a->b, b->b, 32) != 0, "the convergence secret rotates with the version");

	is_int(weft_key_tree_depth(0), 0, "depth of 0 chunks");
	is_int(weft_key_tree_depth(1), 0, "depth of 1 chunk");
	is_int(weft_key_tree_depth(2), 1, "depth of 2");
	is_int(weft_key_tree_depth(3), 2, "depth of 3");
	is_int(weft_key_tree_depth(4), 2, "depth of 4");
	is_int(weft_key_tree_depth(5), 3, "depth of 5");
	is_int(weft_key_tree_depth(UINT32_MAX), 32, "depth of 2^32 - 1");
	weft_key_free(root);
	weft_key_free(other);
	weft_key_free(a);
	weft_key_free(b);
}

static struct weft_file_ref some_file(void)
{
	struct weft_file_ref f;
	randombytes_buf(&f, sizeof(f));
	f.root_version = 4;
	return f;
}

/* All leaf keys reachable from node key k at (level, index) by the
 * documented derivation, written to leaves[c] (hand-derived). */
static void hand_leaves(const uint8_t k[32], uint32_t level, uint32_t index, uint8_t (*leaves)[32], uint32_t n,
			uint8_t *reached)
{
	if ((uint64_t)index << level >= n)
		return;
	if (level == 0) {
		memcpy(leaves[index], k, 32);
		reached[index]++;
		return;
	}
	uint8_t c[32];
	for (uint32_t b = 0; b < 2; b++) {
		hand_child(c, k, level, 2 * index + b);
		hand_leaves(c, level - 1, 2 * index + b, leaves, n, reached);
	}
}

/* One random file and range; returns false (with diagnostics) on the first
 * broken property. */
static bool grant_case(uint32_t n)
{
	uint32_t *sizes = calloc(n, sizeof(*sizes));
	uint64_t total = 0;
	bool good = true;
	for (uint32_t i = 0; i < n; i++) {
		sizes[i] = 1 + (uint32_t)weft_rng_below(&rng, 3 * 4096);
		total += sizes[i];
	}
	uint64_t a = weft_rng_below(&rng, total), b = a + 1 + weft_rng_below(&rng, total - a);
	if (weft_rng_below(&rng, 4) == 0)
		b = a + 1 + weft_rng_below(&rng, 4096 < total - a ? 4096 : total - a); /* short ranges too */
	/* Brute force: chunk c holds bytes [off_c, off_c + size_c). */
	uint32_t first = n, end = 0;
	uint64_t off = 0;
	for (uint32_t c = 0; c < n; off += sizes[c++]) {
		if (off < b && off + sizes[c] > a) {
			first = c < first ? c : first;
			end = c + 1;
		}
	}
	struct weft_key *fk = weft_key_random(), *own = weft_key_new(), *via = weft_key_new();
	struct weft_file_ref file = some_file();
	struct weft_grant *g;
	uint32_t depth = weft_key_tree_depth(n);
	if (weft_grant_make(&g, fk, &file, sizes, n, a, b) != 0) {
		diag("n %u [%llu, %llu): make failed", n, (unsigned long long)a, (unsigned long long)b);
		good = false;
		goto out;
	}
	if (g->first != first || g->end != end) {
		diag("n %u: chunks [%u, %u), want [%u, %u)", n, g->first, g->end, first, end);
		good = false;
	}
	/* The nodes tile [first, end) left to right within the tree. */
	uint64_t next = first;
	for (uint32_t i = 0; i < g->nnodes && good; i++) {
		uint64_t lo = (uint64_t)g->node[i].index << g->node[i].level;
		good = lo == next && g->node[i].level <= depth;
		next = lo + ((uint64_t)1 << g->node[i].level);
	}
	if (!good || next != end || g->nnodes > (depth ? 2 * depth : 1)) {
		diag("n %u [%u, %u): %u nodes do not tile the range", n, first, end, g->nnodes);
		good = false;
	}
	/* The documented derivation from the grant's keys reaches exactly the
	 * leaves of the range, each once, and they are the owner's. */
	uint8_t(*leaves)[32] = calloc(n, 32);
	uint8_t *reached = calloc(n, 1);
	for (uint32_t i = 0; i < g->nnodes; i++)
		hand_leaves(g->node_key[i].b, g->node[i].level, g->node[i].index, leaves, n, reached);
	for (uint32_t c = 0; c < n && good; c++) {
		bool in = c >= first && c < end;
		if (reached[c] != in) {
			diag("n %u [%u, %u): leaf %u reached %u times", n, first, end, c, reached[c]);
			good = false;
		}
		int rc = weft_grant_leaf(via, g, c);
		if (rc != (in ? 0 : WEFT_EPERM)) {
			diag("n %u [%u, %u): leaf %u gave %d", n, first, end, c, rc);
			good = false;
		}
		if (in && (weft_key_leaf(own, fk, n, c) != 0 || memcmp(own->b, via->b, 32) != 0 ||
			   memcmp(own->b, leaves[c], 32) != 0)) {
			diag("n %u: leaf %u differs from the owner's", n, c);
			good = false;
		}
	}
	free(leaves);
	free(reached);
	weft_grant_free(g);
out:
	weft_key_free(fk);
	weft_key_free(own);
	weft_key_free(via);
	free(sizes);
	return good;
}

static void test_random_grants(void)
{
	bool good = true;
	int cases = 0;
	static const uint32_t fixed[] = {1, 2, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 4096, 5000};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++, cases++)
		good &= grant_case(fixed[i]);
	for (int i = 0; i < 60; i++, cases++)
		good &= grant_case(1 + (uint32_t)weft_rng_below(&rng, 5000));
	ok(good, "%d random files of 1..5000 chunks: the grant's nodes tile exactly its chunk range, "
		 "derive exactly its leaves (the owner's keys), refuse every leaf outside",
	   cases);
}

/* Brute force: the fewest aligned blocks (2^l, l <= depth) tiling [i, j). */
static uint32_t brute_min(uint32_t i, uint32_t j, uint32_t depth)
{
	if (i == j)
		return 0;
	uint32_t best = UINT32_MAX;
	for (uint32_t l = 0; l <= depth; l++) {
		uint32_t size = 1u << l;
		if (i % size != 0 || i + size > j)
			continue;
		uint32_t rest = brute_min(i + size, j, depth);
		if (rest != UINT32_MAX && rest + 1 < best)
			best = rest + 1;
	}
	return best;
}

static void test_minimal(void)
{
	struct weft_key *fk = weft_key_random();
	struct weft_file_ref file = some_file();
	uint32_t ones[40];
	for (int i = 0; i < 40; i++)
		ones[i] = 1;
	bool good = true;
	int ranges = 0;
	for (uint32_t n = 1; n <= 40 && good; n++) {
		for (uint32_t i = 0; i < n && good; i++) {
			for (uint32_t j = i + 1; j <= n && good; j++, ranges++) {
				struct weft_grant *g;
				good = weft_grant_make(&g, fk, &file, ones, n, i, j) == 0 && g->first == i && g->end == j;
				uint32_t want = brute_min(i, j, weft_key_tree_depth(n));
				if (good && g->nnodes != want) {
					diag("n %u [%u, %u): %u nodes, minimum %u", n, i, j, g->nnodes, want);
					good = false;
				}
				weft_grant_free(g);
			}
		}
	}
	ok(good, "every range of every file of 1..40 chunks (%d): as few nodes as the brute-force minimum", ranges);
	weft_key_free(fk);
}

static bool same_grant(const struct weft_grant *x, const struct weft_grant *y)
{
	return memcmp(&x->file, &y->file, sizeof(x->file)) == 0 && x->nchunks == y->nchunks &&
	       x->first == y->first && x->end == y->end && x->a == y->a && x->b == y->b && x->nnodes == y->nnodes &&
	       memcmp(x->node, y->node, x->nnodes * sizeof(x->node[0])) == 0 &&
	       memcmp(x->node_key, y->node_key, x->nnodes * sizeof(x->node_key[0])) == 0 &&
	       memcmp(&x->manifest_key, &y->manifest_key, sizeof(x->manifest_key)) == 0;
}

static void test_round_trip(void)
{
	struct weft_key *fk = weft_key_random(), *mk = weft_key_new();
	struct weft_file_ref file = some_file();
	uint32_t sizes[1000];
	for (int i = 0; i < 1000; i++)
		sizes[i] = 1000;
	struct weft_grant *g, *h;
	uint8_t bin[WEFT_GRANT_MAX_BYTES];
	char str[WEFT_GRANT_STRING_MAX];
	const char *why = NULL;

	ok(weft_grant_make(&g, fk, &file, sizes, 1000, 1500, 998500) == 0, "grant of bytes [1500, 998500) of 1000 chunks");
	is_int(g->first, 1, "first chunk");
	is_int(g->end, 999, "end chunk");
	weft_key_manifest(mk, fk);
	is_mem(g->manifest_key.b, mk->b, 32, "it carries the manifest key");
	size_t len = weft_grant_encode(g, bin);
	ok(weft_grant_decode(&h, bin, len, &why) == 0, "binary grant decodes");
	ok(h && same_grant(g, h), "and is the same grant");
	weft_grant_free(h);
	weft_grant_format(g, str);
	ok(strncmp(str, "weft-grant:", 11) == 0 && strspn(str + 11, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
								 "0123456789-_") == strlen(str) - 11,
	   "capability string: weft-grant: + unpadded base64url");
	ok(weft_grant_parse(&h, str, &why) == 0 && same_grant(g, h), "capability string parses to the same grant");
	weft_grant_free(h);
	weft_grant_free(g);

	ok(weft_grant_make(&g, fk, &file, sizes, 1000, 0, 1000000) == 0 && g->nnodes == 6,
	   "whole file of 1000 chunks: 512 + 256 + 128 + 64 + 32 + 8, 6 nodes");
	weft_grant_free(g);
	ok(weft_grant_make(&g, fk, &file, sizes, 8, 0, 8000) == 0 && g->nnodes == 1 && g->node[0].level == 3,
	   "whole file of 8 chunks: the top alone");
	weft_grant_free(g);
	ok(weft_grant_make(&g, fk, &file, NULL, 0, 0, 0) == 0 && g->nnodes == 0 && g->end == 0,
	   "an empty file's grant holds only the manifest key");
	len = weft_grant_encode(g, bin);
	weft_grant_free(g);
	ok(weft_grant_decode(&g, bin, len, &why) == 0, "and decodes");
	weft_grant_free(g);

	is_int(weft_grant_make(&g, fk, &file, sizes, 8, 5, 5), WEFT_EINVAL, "empty range refused");
	ok(g == NULL, "with no grant");
	is_int(weft_grant_make(&g, fk, &file, sizes, 8, 7999, 8001), WEFT_EINVAL, "range past the end refused");
	is_int(weft_grant_make(&g, fk, &file, sizes, 8, 8000, 8001), WEFT_EINVAL, "range after the end refused");
	is_int(weft_grant_make(&g, fk, &file, NULL, 0, 0, 1), WEFT_EINVAL, "a range of an empty file refused");
	weft_key_free(fk);
	weft_key_free(mk);
}

/* A grant written by hand, fields as given (keys are zeros). */
struct hand {
	uint64_t version;
	uint32_t fields; /* array header (12) */
	uint32_t nchunks, first, end;
	uint64_t a, b;
	uint32_t nnodes;           /* array header of the node list */
	uint32_t written;          /* nodes actually written */
	uint32_t level[70], index[70];
	size_t keylen;             /* 32 */
	bool trailing;
};

static size_t hand_encode(const struct hand *h, uint8_t *out)
{
	struct weft_mpw w;
	uint8_t zero[64] = {0};
	weft_mpw_init(&w);
	weft_mpw_array(&w, h->fields);
	weft_mpw_uint(&w, h->version);
	weft_mpw_bin(&w, zero, 32);
	weft_mpw_bin(&w, zero, 32);
	weft_mpw_bin(&w, zero, 16);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, h->nchunks);
	weft_mpw_uint(&w, h->first);
	weft_mpw_uint(&w, h->end);
	weft_mpw_uint(&w, h->a);
	weft_mpw_uint(&w, h->b);
	weft_mpw_bin(&w, zero, h->keylen);
	weft_mpw_array(&w, h->nnodes);
	for (uint32_t i = 0; i < h->written; i++) {
		weft_mpw_array(&w, 3);
		weft_mpw_uint(&w, h->level[i]);
		weft_mpw_uint(&w, h->index[i]);
		weft_mpw_bin(&w, zero, 32);
	}
	if (h->trailing)
		weft_mpw_nil(&w);
	size_t len = w.len;
	memcpy(out, w.buf, len);
	weft_mpw_free(&w);
	return len;
}

/* A valid hand grant: 10 chunks, chunks [1, 7) = nodes (0,1) (1,1) (1,2) (0,6). */
static struct hand valid_hand(void)
{
	struct hand h = {.version = 1, .fields = 12, .nchunks = 10, .first = 1, .end = 7, .a = 5, .b = 60,
			 .nnodes = 4, .written = 4, .keylen = 32};
	static const uint32_t lv[] = {0, 1, 1, 0}, ix[] = {1, 1, 2, 6};
	memcpy(h.level, lv, sizeof(lv));
	memcpy(h.index, ix, sizeof(ix));
	return h;
}

static void refused(const struct hand *h, int want, const char *what)
{
	uint8_t buf[4096];
	struct weft_grant *g = (struct weft_grant *)1;
	const char *why = NULL;
	size_t len = hand_encode(h, buf);
	int rc = weft_grant_decode(&g, buf, len, &why);
	ok(rc == want && g == NULL && why != NULL, "%s: refused (%s)", what, why ? why : "no reason");
	if (rc != want)
		diag("got %d, want %d", rc, want);
}

static void test_malformed(void)
{
	uint8_t buf[4096];
	struct weft_grant *g;
	const char *why;
	struct hand h = valid_hand();
	size_t len = hand_encode(&h, buf);
	ok(weft_grant_decode(&g, buf, len, &why) == 0, "the hand-written grant decodes");
	weft_grant_free(g);

	h = valid_hand(), h.version = 2;
	refused(&h, WEFT_EUNSUPPORTED, "version 2");
	h = valid_hand(), h.fields = 11;
	refused(&h, WEFT_EDECODE, "11 fields");
	h = valid_hand(), h.keylen = 31;
	refused(&h, WEFT_EDECODE, "a 31-byte manifest key");
	h = valid_hand(), h.trailing = true;
	refused(&h, WEFT_EDECODE, "trailing bytes");
	h = valid_hand(), h.index[1] = 2, h.index[2] = 1;
	refused(&h, WEFT_EDECODE, "unsorted nodes");
	h = valid_hand(), h.nnodes = h.written = 5;
	static const uint32_t olv[] = {0, 1, 0, 1, 0}, oix[] = {1, 1, 3, 2, 6};
	memcpy(h.level, olv, sizeof(olv));
	memcpy(h.index, oix, sizeof(oix));
	refused(&h, WEFT_EDECODE, "overlapping nodes");
	h = valid_hand(), h.nnodes = h.written = 3;
	refused(&h, WEFT_EDECODE, "nodes short of the range's end");
	h = valid_hand(), h.level[1] = 0, h.index[1] = 3;
	refused(&h, WEFT_EDECODE, "a gap between nodes");
	h = valid_hand(), h.index[0] = 0;
	refused(&h, WEFT_EDECODE, "a node before the range");
	h = valid_hand(), h.nnodes = h.written = 5, h.level[4] = 0, h.index[4] = 7;
	refused(&h, WEFT_EDECODE, "a node past the range");
	h = valid_hand(), h.nchunks = 4, h.end = 4, h.nnodes = h.written = 2, h.level[1] = 5, h.index[1] = 0;
	refused(&h, WEFT_EDECODE, "a level above the tree's depth");
	h = valid_hand(), h.level[0] = 40, h.index[0] = 0;
	refused(&h, WEFT_EDECODE, "level 40");
	/* [1, 7) as (0,1) (0,2) (0,3) (1,2) (0,6): a tiling, not the minimal one. */
	h = valid_hand(), h.nnodes = h.written = 5;
	static const uint32_t lv[] = {0, 0, 0, 1, 0}, ix[] = {1, 2, 3, 2, 6};
	memcpy(h.level, lv, sizeof(lv));
	memcpy(h.index, ix, sizeof(ix));
	refused(&h, WEFT_EDECODE, "a tiling that is not the minimal cover");
	h = valid_hand(), h.first = 7;
	refused(&h, WEFT_EDECODE, "an empty chunk range");
	h = valid_hand(), h.end = 11;
	refused(&h, WEFT_EDECODE, "a chunk range past the file");
	h = valid_hand(), h.b = h.a;
	refused(&h, WEFT_EDECODE, "an empty byte range");
	h = valid_hand(), h.nchunks = 0;
	refused(&h, WEFT_EDECODE, "ranges in an empty file's grant");
	h = valid_hand(), h.nnodes = h.written = 65;
	memset(h.level, 0, sizeof(h.level));
	memset(h.index, 0, sizeof(h.index));
	refused(&h, WEFT_ETOOBIG, "65 nodes");
	h = valid_hand(), h.nnodes = UINT32_MAX, h.written = 0;
	refused(&h, WEFT_EDECODE, "2^32 - 1 nodes (more than the bytes present)");
	h = valid_hand(), h.nchunks = UINT32_MAX, h.first = 0, h.end = UINT32_MAX;
	h.nnodes = h.written = 1, h.level[0] = 32, h.index[0] = 0;
	refused(&h, WEFT_EDECODE, "the top of a 2^32-leaf tree for 2^32 - 1 chunks");

	/* Huge declared counts in the msgpack itself. */
	const uint8_t huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
	ok(weft_grant_decode(&g, huge, sizeof(huge), &why) == WEFT_EDECODE, "array of 2^32 - 1 fields refused");

	/* Truncated at every byte. */
	h = valid_hand();
	len = hand_encode(&h, buf);
	bool all = true;
	for (size_t cut = 0; cut < len; cut++) {
		why = NULL;
		all &= weft_grant_decode(&g, buf, cut, &why) != 0 && g == NULL && why != NULL;
	}
	ok(all, "truncated at each of %zu bytes: refused with a reason", len);

	/* Strings. */
	is_int(weft_grant_parse(&g, "weft-grnt:AAAA", &why), WEFT_EDECODE, "wrong prefix");
	is_int(weft_grant_parse(&g, "weft-grant:AA*A", &why), WEFT_EDECODE, "not base64url");
	is_int(weft_grant_parse(&g, "weft-grant:AAA=", &why), WEFT_EDECODE, "padding refused");
	is_int(weft_grant_parse(&g, "weft-grant:", &why), WEFT_EDECODE, "empty grant");
	char *lng = malloc(WEFT_GRANT_STRING_MAX + 1);
	memset(lng, 'A', WEFT_GRANT_STRING_MAX);
	memcpy(lng, "weft-grant:", 11);
	lng[WEFT_GRANT_STRING_MAX] = '\0';
	is_int(weft_grant_parse(&g, lng, &why), WEFT_EDECODE, "a string longer than any grant");
	free(lng);
}

int main(void)
{
	uint64_t seed = getenv("WEFT_TEST_SEED") ? strtoull(getenv("WEFT_TEST_SEED"), NULL, 0) : 15;
	if (weft_crypto_init() != 0)
		skip_all("libsodium init failed");
	diag("seed %llu (WEFT_TEST_SEED)", (unsigned long long)seed);
	weft_rng_seed(&rng, seed);
	test_construction();
	test_versions();
	test_random_grants();
	test_minimal();
	test_round_trip();
	test_malformed();
	return done_testing();
}
