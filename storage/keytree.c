/* keytree.c - the owner's key tree and range grants (weft/store_keys.h):
 * one keyed-BLAKE2b derivation for every key, the per-file binary tree over
 * chunk indices, the canonical segment-tree cover of a chunk range, and the
 * grant's msgpack and capability-string forms with a strict decoder.
 *
 * Every secret this file makes lives in sodium_malloc memory (struct
 * weft_key, struct weft_grant) or, for the moment it is being used, on the
 * stack, wiped before the function returns. */
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/store_keys.h"

#define LABEL_VERSION "weft.store.v1.root-version"
#define LABEL_FILE "weft.store.v1.file"
#define LABEL_CONVERGENCE "weft.store.v1.convergence"
#define LABEL_CHUNKER "weft.store.v1.chunker"
#define LABEL_MANIFEST "weft.store.v1.manifest"
#define LABEL_TREE "weft.store.v1.tree"
#define LABEL_NODE "weft.store.v1.node"

#define GRANT_FIELDS 12

_Static_assert(WEFT_KEY_LEN == crypto_generichash_KEYBYTES, "keys are BLAKE2b keys");
_Static_assert(WEFT_GRANT_STRING_MAX ==
		       sizeof(WEFT_GRANT_PREFIX) - 1 +
			       sodium_base64_ENCODED_LEN(WEFT_GRANT_MAX_BYTES, sodium_base64_VARIANT_URLSAFE_NO_PADDING),
	       "capability string bound");
/* Fixed fields: array header 1, version 1, id 34, owner 34, nonce 18, four
 * u32 at most 5 each, two u64 at most 9 each, manifest key 34, nodes array
 * header 3; per node: array header 1, level 1, index 5, key 34. */
_Static_assert(1 + 1 + 34 + 34 + 18 + 4 * 5 + 2 * 9 + 34 + 3 + WEFT_GRANT_MAX_NODES * 41 <= WEFT_GRANT_MAX_BYTES,
	       "grant encoding bound");

static void *secret_alloc(size_t size)
{
	void *p = sodium_malloc(size);
	if (p == NULL)
		abort();
	sodium_memzero(p, size);
	return p;
}

struct weft_key *weft_key_new(void)
{
	return secret_alloc(sizeof(struct weft_key));
}

struct weft_key *weft_key_random(void)
{
	struct weft_key *k = weft_key_new();
	randombytes_buf(k->b, sizeof(k->b));
	return k;
}

void weft_key_free(struct weft_key *k)
{
	sodium_free(k); /* wipes; accepts NULL */
}

void weft_key_derive(uint8_t *out, size_t outlen, const struct weft_key *k, const char *label, const void *comp,
		     size_t complen)
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, k->b, sizeof(k->b), outlen);
	crypto_generichash_update(&st, (const unsigned char *)label, strlen(label) + 1); /* with its NUL */
	crypto_generichash_update(&st, comp, complen);
	crypto_generichash_final(&st, out, outlen);
	sodium_memzero(&st, sizeof(st));
}

/* V(version) into out. */
static void version_key(struct weft_key *out, const struct weft_key *root, uint32_t version)
{
	uint8_t v[4];
	weft_be32_put(v, version);
	weft_key_derive(out->b, WEFT_KEY_LEN, root, LABEL_VERSION, v, sizeof(v));
}

void weft_key_file(struct weft_key *out, const struct weft_key *root, uint32_t version,
		   const uint8_t nonce[WEFT_FILE_NONCE_LEN])
{
	struct weft_key v;
	version_key(&v, root, version);
	weft_key_derive(out->b, WEFT_KEY_LEN, &v, LABEL_FILE, nonce, WEFT_FILE_NONCE_LEN);
	sodium_memzero(&v, sizeof(v));
}

static const char *purpose_label(enum weft_key_purpose purpose)
{
	switch (purpose) {
	case WEFT_KEY_CONVERGENCE:
		return LABEL_CONVERGENCE;
	case WEFT_KEY_CHUNKER:
		return LABEL_CHUNKER;
	}
	abort(); /* not a purpose: a caller bug */
}

void weft_key_purpose(struct weft_key *out, const struct weft_key *root, uint32_t version,
		      enum weft_key_purpose purpose)
{
	struct weft_key v;
	version_key(&v, root, version);
	weft_key_derive(out->b, WEFT_KEY_LEN, &v, purpose_label(purpose), NULL, 0);
	sodium_memzero(&v, sizeof(v));
}

void weft_key_manifest(struct weft_key *out, const struct weft_key *file_key)
{
	weft_key_derive(out->b, WEFT_KEY_LEN, file_key, LABEL_MANIFEST, NULL, 0);
}

uint32_t weft_key_tree_depth(uint32_t nchunks)
{
	return nchunks <= 1 ? 0 : 32 - (uint32_t)__builtin_clz(nchunks - 1);
}

/* T(D, 0) of the file's tree. */
static void tree_top(struct weft_key *out, const struct weft_key *file_key, uint32_t depth)
{
	uint8_t d = (uint8_t)depth;
	weft_key_derive(out->b, WEFT_KEY_LEN, file_key, LABEL_TREE, &d, 1);
}

/* k holds the key of the node at level `from` above chunk pos; replaces it
 * by the key of the node at level `to` (<= from) above the same chunk. */
static void descend(struct weft_key *k, uint32_t from, uint32_t to, uint64_t pos)
{
	struct weft_key parent;
	uint8_t comp[5];
	for (uint32_t level = from; level-- > to;) {
		comp[0] = (uint8_t)level;
		weft_be32_put(comp + 1, (uint32_t)(pos >> level));
		parent = *k;
		weft_key_derive(k->b, WEFT_KEY_LEN, &parent, LABEL_NODE, comp, sizeof(comp));
	}
	sodium_memzero(&parent, sizeof(parent));
}

int weft_key_leaf(struct weft_key *out, const struct weft_key *file_key, uint32_t nchunks, uint32_t c)
{
	if (c >= nchunks)
		return WEFT_EINVAL;
	uint32_t depth = weft_key_tree_depth(nchunks);
	tree_top(out, file_key, depth);
	descend(out, depth, 0, c);
	return 0;
}

/* ---- range grants --------------------------------------------------------- */

int weft_grant_chunk_range(const uint32_t *sizes, uint32_t n, uint64_t a, uint64_t b, uint32_t *first,
			   uint32_t *end)
{
	uint64_t off = 0;
	uint32_t i = 0;
	if (a >= b)
		return WEFT_EINVAL;
	while (i < n && off + sizes[i] <= a)
		off += sizes[i++];
	if (i == n)
		return WEFT_EINVAL;
	*first = i;
	while (i < n && off < b)
		off += sizes[i++];
	if (off < b)
		return WEFT_EINVAL;
	*end = i;
	return 0;
}

/* The canonical segment-tree cover of chunks [lo, hi): the maximal aligned
 * blocks, left to right, into out (room for WEFT_GRANT_MAX_NODES when
 * hi < 2^32).  Returns their number: the minimum, at most 2 per level. */
static uint32_t cover(uint64_t lo, uint64_t hi, struct weft_grant_node *out)
{
	struct weft_grant_node right[WEFT_KEY_TREE_MAX_DEPTH + 1];
	uint32_t nl = 0, nr = 0;
	for (uint32_t level = 0; lo < hi; level++, lo >>= 1, hi >>= 1) {
		if (lo & 1)
			out[nl++] = (struct weft_grant_node){level, (uint32_t)lo++};
		if (hi & 1)
			right[nr++] = (struct weft_grant_node){level, (uint32_t)--hi};
	}
	while (nr > 0)
		out[nl++] = right[--nr];
	return nl;
}

static struct weft_grant *grant_alloc(void)
{
	return secret_alloc(sizeof(struct weft_grant));
}

void weft_grant_free(struct weft_grant *g)
{
	sodium_free(g); /* wipes; accepts NULL */
}

int weft_grant_make(struct weft_grant **out, const struct weft_key *file_key, const struct weft_file_ref *file,
		    const uint32_t *sizes, uint32_t n, uint64_t a, uint64_t b)
{
	uint32_t first = 0, end = 0;
	*out = NULL;
	if (n == 0 ? a != 0 || b != 0 : weft_grant_chunk_range(sizes, n, a, b, &first, &end) != 0)
		return WEFT_EINVAL;
	struct weft_grant *g = grant_alloc();
	g->file = *file;
	g->nchunks = n;
	g->first = first;
	g->end = end;
	g->a = a;
	g->b = b;
	g->nnodes = cover(first, end, g->node);
	uint32_t depth = weft_key_tree_depth(n);
	for (uint32_t i = 0; i < g->nnodes; i++) {
		tree_top(&g->node_key[i], file_key, depth);
		descend(&g->node_key[i], depth, g->node[i].level, (uint64_t)g->node[i].index << g->node[i].level);
	}
	weft_key_manifest(&g->manifest_key, file_key);
	*out = g;
	return 0;
}

int weft_grant_leaf(struct weft_key *out, const struct weft_grant *g, uint32_t c)
{
	if (c < g->first || c >= g->end)
		return WEFT_EPERM;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		if ((uint64_t)c >> g->node[i].level == g->node[i].index) {
			*out = g->node_key[i];
			descend(out, g->node[i].level, 0, c);
			return 0;
		}
	}
	abort(); /* a decoded or made grant covers [first, end) exactly */
}

size_t weft_grant_encode(const struct weft_grant *g, uint8_t out[WEFT_GRANT_MAX_BYTES])
{
	static const uint8_t reserve[WEFT_GRANT_MAX_BYTES];
	struct weft_mpw w;
	weft_mpw_init(&w);
	/* Grow the buffer to its final size first, so that no realloc leaves
	 * a copy of the keys behind; it is wiped below. */
	weft_mpw_raw(&w, reserve, sizeof(reserve));
	weft_mpw_reset(&w);
	weft_mpw_array(&w, GRANT_FIELDS);
	weft_mpw_uint(&w, WEFT_GRANT_VERSION);
	weft_mpw_bin(&w, g->file.id, sizeof(g->file.id));
	weft_mpw_bin(&w, g->file.owner, sizeof(g->file.owner));
	weft_mpw_bin(&w, g->file.nonce, sizeof(g->file.nonce));
	weft_mpw_uint(&w, g->file.root_version);
	weft_mpw_uint(&w, g->nchunks);
	weft_mpw_uint(&w, g->first);
	weft_mpw_uint(&w, g->end);
	weft_mpw_uint(&w, g->a);
	weft_mpw_uint(&w, g->b);
	weft_mpw_bin(&w, g->manifest_key.b, WEFT_KEY_LEN);
	weft_mpw_array(&w, g->nnodes);
	for (uint32_t i = 0; i < g->nnodes; i++) {
		weft_mpw_array(&w, 3);
		weft_mpw_uint(&w, g->node[i].level);
		weft_mpw_uint(&w, g->node[i].index);
		weft_mpw_bin(&w, g->node_key[i].b, WEFT_KEY_LEN);
	}
	size_t len = w.len;
	memcpy(out, w.buf, len);
	sodium_memzero(w.buf, w.cap);
	weft_mpw_free(&w);
	return len;
}

/* The checks of a decoded grant beyond its encoding: 0 or WEFT_EDECODE. */
static int grant_check(const struct weft_grant *g, const char **why)
{
	if (g->nchunks == 0) {
		if (g->first != 0 || g->end != 0 || g->a != 0 || g->b != 0 || g->nnodes != 0) {
			*why = "grant: an empty file's grant has ranges or nodes";
			return WEFT_EDECODE;
		}
		return 0;
	}
	if (g->first >= g->end || g->end > g->nchunks) {
		*why = "grant: chunk range empty or past the file's last chunk";
		return WEFT_EDECODE;
	}
	if (g->a >= g->b) {
		*why = "grant: empty byte range";
		return WEFT_EDECODE;
	}
	uint32_t depth = weft_key_tree_depth(g->nchunks);
	for (uint32_t i = 0; i < g->nnodes; i++) {
		if (g->node[i].level > depth) {
			*why = "grant: a node's level is above the file tree's depth";
			return WEFT_EDECODE;
		}
		if (i > 0 && (uint64_t)g->node[i].index << g->node[i].level <=
				     (uint64_t)g->node[i - 1].index << g->node[i - 1].level) {
			*why = "grant: nodes not sorted by position";
			return WEFT_EDECODE;
		}
	}
	uint64_t next = g->first;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		uint64_t lo = (uint64_t)g->node[i].index << g->node[i].level, hi = lo + ((uint64_t)1 << g->node[i].level);
		if (lo != next) {
			*why = lo > next  ? "grant: the nodes leave a gap in the chunk range"
			       : i == 0 ? "grant: a node starts before the chunk range"
					: "grant: nodes overlap";
			return WEFT_EDECODE;
		}
		if (hi > g->end) {
			*why = "grant: a node reaches past the chunk range";
			return WEFT_EDECODE;
		}
		next = hi;
	}
	if (next != g->end) {
		*why = "grant: the nodes do not reach the end of the chunk range";
		return WEFT_EDECODE;
	}
	struct weft_grant_node canon[WEFT_GRANT_MAX_NODES];
	if (cover(g->first, g->end, canon) != g->nnodes || memcmp(canon, g->node, g->nnodes * sizeof(canon[0])) != 0) {
		*why = "grant: the nodes are not the minimal cover of the chunk range";
		return WEFT_EDECODE;
	}
	return 0;
}

int weft_grant_decode(struct weft_grant **out, const uint8_t *buf, size_t len, const char **why)
{
	const char *ignored;
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t version;
	int rc = WEFT_EDECODE;
	if (why == NULL)
		why = &ignored;
	*out = NULL;
	struct weft_grant *g = grant_alloc();
	weft_mp_reader_init(&r, buf, len);
	if (weft_mp_read_array(&r, &count) || count != GRANT_FIELDS) {
		*why = "grant: not an array of 12 fields";
		goto fail;
	}
	if (weft_mp_read_uint(&r, &version)) {
		*why = "grant: the version is not a number";
		goto fail;
	}
	if (version != WEFT_GRANT_VERSION) {
		*why = "grant: unsupported version";
		rc = WEFT_EUNSUPPORTED;
		goto fail;
	}
	weft_mp_read_bin_fixed(&r, g->file.id, sizeof(g->file.id));
	weft_mp_read_bin_fixed(&r, g->file.owner, sizeof(g->file.owner));
	weft_mp_read_bin_fixed(&r, g->file.nonce, sizeof(g->file.nonce));
	weft_mp_read_u32(&r, &g->file.root_version);
	weft_mp_read_u32(&r, &g->nchunks);
	weft_mp_read_u32(&r, &g->first);
	weft_mp_read_u32(&r, &g->end);
	weft_mp_read_uint(&r, &g->a);
	weft_mp_read_uint(&r, &g->b);
	weft_mp_read_bin_fixed(&r, g->manifest_key.b, WEFT_KEY_LEN);
	if (r.err) {
		*why = "grant: a field has the wrong type or size";
		goto fail;
	}
	if (weft_mp_read_array(&r, &g->nnodes)) {
		*why = "grant: the node list is not an array that fits in the bytes present";
		goto fail;
	}
	if (g->nnodes > WEFT_GRANT_MAX_NODES) {
		*why = "grant: more nodes than any cover has (64)";
		rc = WEFT_ETOOBIG;
		goto fail;
	}
	for (uint32_t i = 0; i < g->nnodes; i++) {
		if (weft_mp_read_array(&r, &count) || count != 3 || weft_mp_read_u32(&r, &g->node[i].level) ||
		    weft_mp_read_u32(&r, &g->node[i].index) ||
		    weft_mp_read_bin_fixed(&r, g->node_key[i].b, WEFT_KEY_LEN)) {
			*why = "grant: a node is not [level, index, 32-byte key]";
			goto fail;
		}
	}
	if (weft_mp_remaining(&r) != 0) {
		*why = "grant: trailing bytes";
		goto fail;
	}
	rc = grant_check(g, why);
	if (rc != 0)
		goto fail;
	*out = g;
	return 0;
fail:
	weft_grant_free(g);
	return rc;
}

void weft_grant_format(const struct weft_grant *g, char out[WEFT_GRANT_STRING_MAX])
{
	size_t plen = sizeof(WEFT_GRANT_PREFIX) - 1;
	uint8_t *bin = secret_alloc(WEFT_GRANT_MAX_BYTES);
	size_t len = weft_grant_encode(g, bin);
	memcpy(out, WEFT_GRANT_PREFIX, plen);
	sodium_bin2base64(out + plen, WEFT_GRANT_STRING_MAX - plen, bin, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_free(bin);
}

int weft_grant_parse(struct weft_grant **out, const char *s, const char **why)
{
	const char *ignored;
	size_t plen = sizeof(WEFT_GRANT_PREFIX) - 1, blen;
	if (why == NULL)
		why = &ignored;
	*out = NULL;
	if (strncmp(s, WEFT_GRANT_PREFIX, plen) != 0) {
		*why = "capability: does not start with " WEFT_GRANT_PREFIX;
		return WEFT_EDECODE;
	}
	size_t n = strnlen(s + plen, WEFT_GRANT_STRING_MAX - plen);
	if (n == WEFT_GRANT_STRING_MAX - plen) {
		*why = "capability: longer than any grant";
		return WEFT_EDECODE;
	}
	uint8_t *bin = secret_alloc(WEFT_GRANT_MAX_BYTES);
	int rc;
	if (sodium_base642bin(bin, WEFT_GRANT_MAX_BYTES, s + plen, n, NULL, &blen, NULL,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0) {
		*why = "capability: not unpadded base64url";
		rc = WEFT_EDECODE;
	} else {
		rc = weft_grant_decode(out, bin, blen, why);
	}
	sodium_free(bin);
	return rc;
}
