/* tests/fuzz/store_grant.c - libFuzzer target for the range-grant decoders
 * (storage/keytree.c): weft_grant_decode on binary grants and
 * weft_grant_parse on capability strings.
 *
 * Input: a flags byte (bit 0: the rest is a capability string, cut at its
 * first NUL; else a binary grant), then the grant.  abort()s when a
 * refusal has no reason or an unexpected code, or when an accepted grant
 * breaks what the decoder promises: at most 64 nodes, sorted and tiling
 * [first, end) exactly, within the tree's depth; the binary and string
 * forms decode back to the same grant; leaf keys derive for the first and
 * last granted chunk and each node's first chunk, and are refused just
 * outside the range.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes valid grants (a few chunks of a small
 * file, a whole file, an empty file, a range of a large file with many
 * nodes) in both forms and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/store_keys.h"

static void seed(const char *dir, const char *name, uint32_t n, uint32_t size, uint64_t a, uint64_t b)
{
	struct weft_key *fk = weft_key_new();
	struct weft_file_ref file;
	struct weft_grant *g;
	uint32_t *sizes = calloc(n ? n : 1, sizeof(*sizes));
	static uint8_t buf[1 + WEFT_GRANT_STRING_MAX];
	char path[64];
	memset(fk->b, 0xa5, WEFT_KEY_LEN);
	memset(&file, 0x5a, sizeof(file));
	for (uint32_t i = 0; i < n; i++)
		sizes[i] = size;
	pf_check(weft_grant_make(&g, fk, &file, sizes, n, a, b) == 0, "seed grant");
	buf[0] = 0;
	size_t len = weft_grant_encode(g, buf + 1);
	snprintf(path, sizeof(path), "%s-bin", name);
	pf_write_file(dir, path, buf, 1 + len);
	buf[0] = 1;
	weft_grant_format(g, (char *)buf + 1);
	snprintf(path, sizeof(path), "%s-str", name);
	pf_write_file(dir, path, buf, 1 + strlen((char *)buf + 1));
	weft_grant_free(g);
	weft_key_free(fk);
	free(sizes);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "crypto init");
	const char *dir = getenv("WEFT_FUZZ_SEEDS");
	if (dir) {
		seed(dir, "small", 10, 100, 150, 620);
		seed(dir, "whole", 8, 4096, 0, 8 * 4096);
		seed(dir, "empty", 0, 0, 0, 0);
		seed(dir, "large", 1000000, 1 << 20, 12345, 987654321012ULL);
		exit(0);
	}
	return 0;
}

static bool same(const struct weft_grant *x, const struct weft_grant *y)
{
	return memcmp(&x->file, &y->file, sizeof(x->file)) == 0 && x->nchunks == y->nchunks &&
	       x->first == y->first && x->end == y->end && x->a == y->a && x->b == y->b && x->nnodes == y->nnodes &&
	       memcmp(x->node, y->node, x->nnodes * sizeof(x->node[0])) == 0 &&
	       memcmp(x->node_key, y->node_key, x->nnodes * sizeof(x->node_key[0])) == 0 &&
	       memcmp(&x->manifest_key, &y->manifest_key, sizeof(x->manifest_key)) == 0;
}

static void check_accepted(const struct weft_grant *g)
{
	static uint8_t bin[WEFT_GRANT_MAX_BYTES];
	static char str[WEFT_GRANT_STRING_MAX];
	struct weft_grant *h;
	const char *why;

	pf_check(g->nnodes <= WEFT_GRANT_MAX_NODES, "at most 64 nodes");
	uint32_t depth = weft_key_tree_depth(g->nchunks);
	uint64_t next = g->first;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		pf_check(g->node[i].level <= depth, "levels within the tree");
		pf_check((uint64_t)g->node[i].index << g->node[i].level == next, "nodes tile the range in order");
		next += (uint64_t)1 << g->node[i].level;
	}
	pf_check(next == g->end, "the nodes end at the range's end");
	pf_check(g->nchunks == 0 ? g->end == 0 : g->first < g->end && g->end <= g->nchunks && g->a < g->b,
		 "ranges");

	size_t len = weft_grant_encode(g, bin);
	pf_check(len <= WEFT_GRANT_MAX_BYTES, "encoding bound");
	pf_check(weft_grant_decode(&h, bin, len, &why) == 0 && same(g, h), "binary round trip");
	weft_grant_free(h);
	weft_grant_format(g, str);
	pf_check(strlen(str) < WEFT_GRANT_STRING_MAX, "string bound");
	pf_check(weft_grant_parse(&h, str, &why) == 0 && same(g, h), "string round trip");
	weft_grant_free(h);

	struct weft_key *k = weft_key_new();
	if (g->nchunks > 0) {
		pf_check(weft_grant_leaf(k, g, g->first) == 0, "first leaf");
		pf_check(weft_grant_leaf(k, g, g->end - 1) == 0, "last leaf");
		for (uint32_t i = 0; i < g->nnodes; i++)
			pf_check(weft_grant_leaf(k, g, (uint32_t)((uint64_t)g->node[i].index << g->node[i].level)) == 0,
				 "each node's leaf");
		pf_check(g->first == 0 || weft_grant_leaf(k, g, g->first - 1) == WEFT_EPERM, "leaf before the range");
	}
	pf_check(g->end == UINT32_MAX || weft_grant_leaf(k, g, g->end) == WEFT_EPERM, "leaf after the range");
	weft_key_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct weft_grant *g = NULL;
	const char *why = NULL;
	int rc;
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		char *s = malloc(size);
		memcpy(s, data + 1, size - 1);
		s[size - 1] = '\0';
		rc = weft_grant_parse(&g, s, &why);
		free(s);
	} else {
		rc = weft_grant_decode(&g, data + 1, size - 1, &why);
	}
	if (rc != 0) {
		pf_check(rc == WEFT_EDECODE || rc == WEFT_EUNSUPPORTED || rc == WEFT_ETOOBIG, "refusal code");
		pf_check(why != NULL && g == NULL, "a refusal says why");
		return 0;
	}
	check_accepted(g);
	weft_grant_free(g);
	return 0;
}
