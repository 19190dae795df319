/* store_manifest.c - TAP tests of manifests (storage/manifest.c,
 * weft/store_manifest.h) with the key tree and chunk encryption: a file
 * put and read back through its manifest in both modes; the body encoding
 * against an independent writer; range grants checked against the
 * manifest and used to read exactly their chunks; an empty file; hostile
 * envelopes and bodies refused with a reason: truncation at every byte,
 * huge and unbacked counts, versions, trailing bytes, a bad signature,
 * another owner's key, a re-signed envelope, swapped chunks caught by the
 * root, sizes that do not add up, wrong keys, grants for another file. */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/mp.h"
#include "weft/store_chunk.h"
#include "weft/store_keys.h"
#include "weft/store_manifest.h"

#define VERSION 3

struct file {
	struct weft_key *root, *fk, *mk, *conv;
	struct weft_identity *owner;
	struct weft_manifest m;
	uint8_t *data;
	uint8_t **blobs;
	uint8_t *env;
	size_t envlen;
};

static const struct weft_cdc_params chunking = {.min = 1024, .avg = 4096, .max = 16384};

static void encode_seal(struct file *f)
{
	struct weft_mpw w;
	const char *why = NULL;
	weft_mpw_init(&w);
	if (weft_manifest_encode(&f->m, &w, &why) != 0)
		diag("encode: %s", why);
	free(f->env);
	weft_manifest_seal(&f->env, &f->envlen, f->m.file.id, w.buf, w.len, f->mk, f->owner);
	memcpy(f->m.file.owner, f->owner->pk, WEFT_PK_LEN);
	weft_mpw_free(&w);
}

/* A file of n random chunks, put as the owner would. */
static void make_file(struct file *f, uint32_t n, enum weft_chunk_mode mode)
{
	memset(f, 0, sizeof(*f));
	f->root = weft_key_random();
	f->fk = weft_key_new();
	f->mk = weft_key_new();
	f->conv = weft_key_new();
	f->owner = weft_identity_generate();
	weft_manifest_init(&f->m, n);
	randombytes_buf(f->m.file.nonce, WEFT_FILE_NONCE_LEN);
	f->m.file.root_version = VERSION;
	weft_key_file(f->fk, f->root, VERSION, f->m.file.nonce);
	weft_key_manifest(f->mk, f->fk);
	weft_key_purpose(f->conv, f->root, VERSION, WEFT_KEY_CONVERGENCE);
	f->m.mode = mode;
	f->m.chunking = chunking;
	f->m.ec_k = 2;
	f->m.ec_n = 4;
	f->blobs = calloc(n ? n : 1, sizeof(*f->blobs));
	for (uint32_t i = 0; i < n; i++)
		f->m.size += f->m.plain[i] = 1 + randombytes_uniform(chunking.max);
	f->data = malloc(f->m.size ? f->m.size : 1);
	randombytes_buf(f->data, f->m.size);
	struct weft_key *leaf = weft_key_new();
	uint64_t off = 0;
	for (uint32_t i = 0; i < n; off += f->m.plain[i++]) {
		f->m.cipher[i] = f->m.plain[i] + WEFT_CHUNK_OVERHEAD;
		f->blobs[i] = malloc(f->m.cipher[i]);
		weft_key_leaf(leaf, f->fk, n, i);
		weft_chunk_seal(mode, f->conv, leaf, f->data + off, f->m.plain[i], f->blobs[i], f->m.cid[i],
				f->m.wrapped[i]);
		randombytes_buf(f->m.sr[i], 32); /* the shares root: carried, not checked here */
	}
	weft_key_free(leaf);
	encode_seal(f);
}

static void free_file(struct file *f)
{
	for (uint32_t i = 0; i < f->m.nchunks; i++)
		free(f->blobs[i]);
	free(f->blobs);
	free(f->data);
	free(f->env);
	weft_manifest_free(&f->m);
	weft_key_free(f->root);
	weft_key_free(f->fk);
	weft_key_free(f->mk);
	weft_key_free(f->conv);
	weft_identity_free(f->owner);
}

static bool same_manifest(const struct weft_manifest *a, const struct weft_manifest *b)
{
	uint32_t n = a->nchunks;
	return memcmp(&a->file, &b->file, sizeof(a->file)) == 0 && a->mode == b->mode && a->size == b->size &&
	       memcmp(&a->chunking, &b->chunking, sizeof(a->chunking)) == 0 && a->ec_k == b->ec_k &&
	       a->ec_n == b->ec_n && n == b->nchunks && memcmp(a->cid, b->cid, n * sizeof(*a->cid)) == 0 &&
	       memcmp(a->plain, b->plain, n * sizeof(*a->plain)) == 0 &&
	       memcmp(a->cipher, b->cipher, n * sizeof(*a->cipher)) == 0 &&
	       memcmp(a->wrapped, b->wrapped, n * sizeof(*a->wrapped)) == 0 &&
	       memcmp(a->sr, b->sr, n * sizeof(*a->sr)) == 0;
}

/* Reads chunk c of an opened manifest with leaf key `leaf`, comparing it
 * with the file's bytes.  0 when it comes back right. */
static int read_chunk(const struct file *f, const struct weft_manifest *m, const struct weft_key *leaf, uint32_t c)
{
	uint64_t off = 0;
	for (uint32_t i = 0; i < c; i++)
		off += m->plain[i];
	struct weft_key *ck = weft_key_new();
	uint8_t *pt = malloc(m->plain[c]);
	int rc = weft_chunk_unwrap(ck, m->mode, leaf, m->cid[c], m->wrapped[c]);
	if (rc == 0)
		rc = weft_chunk_decrypt(pt, m->mode, ck, m->cid[c], f->blobs[c], m->cipher[c]);
	if (rc == 0 && memcmp(pt, f->data + off, m->plain[c]) != 0)
		rc = -1;
	free(pt);
	weft_key_free(ck);
	return rc;
}

static void test_round_trip(enum weft_chunk_mode mode)
{
	const char *mn = mode == WEFT_CHUNK_RANDOM ? "random" : "convergent";
	struct file f;
	struct weft_manifest m;
	uint8_t id[32], owner[32];
	const char *why = NULL;
	make_file(&f, 37, mode);
	ok(weft_manifest_verify(id, owner, f.env, f.envlen, &why) == 0 && memcmp(id, f.m.file.id, 32) == 0 &&
		   memcmp(owner, f.owner->pk, 32) == 0,
	   "%s: a keyless node verifies the envelope and learns id and owner", mn);
	ok(weft_manifest_open(&m, f.env, f.envlen, f.m.file.id, f.owner->pk, f.mk, WEFT_MANIFEST_MAX_CHUNKS, &why) == 0,
	   "%s: the owner's manifest opens", mn);
	ok(same_manifest(&f.m, &m), "%s: and is the same manifest", mn);
	struct weft_key *leaf = weft_key_new();
	bool all = true;
	for (uint32_t c = 0; c < m.nchunks; c++)
		all &= weft_key_leaf(leaf, f.fk, m.nchunks, c) == 0 && read_chunk(&f, &m, leaf, c) == 0;
	ok(all, "%s: every chunk reads back through the manifest", mn);
	weft_key_free(leaf);
	weft_manifest_free(&m);
	free_file(&f);
}

/* The body as the header documents it, written independently. */
struct knobs {
	uint64_t version;
	uint32_t fields;
	int64_t size_delta;
	int64_t cipher0_delta;
	uint32_t mode;
	uint32_t declared; /* entries array header; 0: the real count */
	uint32_t written;  /* entries written; 0: all */
	uint32_t ec_k, ec_n;
	uint32_t cdc_max;
	bool zero_plain0;
	bool trailing;
};

static void hand_body(struct weft_mpw *w, const struct weft_manifest *m, const struct knobs *k)
{
	uint32_t n = k->written ? k->written : m->nchunks;
	weft_mpw_array(w, k->fields ? k->fields : 8);
	weft_mpw_uint(w, k->version ? k->version : 1);
	weft_mpw_bin(w, m->file.nonce, 16);
	weft_mpw_uint(w, m->file.root_version);
	weft_mpw_uint(w, k->mode ? k->mode : m->mode);
	weft_mpw_uint(w, m->size + (uint64_t)k->size_delta);
	weft_mpw_array(w, 3);
	weft_mpw_uint(w, m->chunking.min);
	weft_mpw_uint(w, m->chunking.avg);
	weft_mpw_uint(w, k->cdc_max ? k->cdc_max : m->chunking.max);
	weft_mpw_array(w, 2);
	weft_mpw_uint(w, k->ec_k ? k->ec_k : m->ec_k);
	weft_mpw_uint(w, k->ec_n ? k->ec_n : m->ec_n);
	weft_mpw_array(w, k->declared ? k->declared : n);
	for (uint32_t i = 0; i < n; i++) {
		weft_mpw_array(w, 5);
		weft_mpw_bin(w, m->cid[i], 32);
		weft_mpw_uint(w, i == 0 && k->zero_plain0 ? 0 : m->plain[i]);
		weft_mpw_uint(w, m->cipher[i] + (i == 0 ? (uint64_t)k->cipher0_delta : 0));
		weft_mpw_bin(w, m->wrapped[i], WEFT_CHUNK_WRAPPED_LEN);
		weft_mpw_bin(w, m->sr[i], 32);
	}
	if (k->trailing)
		weft_mpw_nil(w);
}

/* Seals a hand body as the owner would and opens it: the result code. */
static int open_hand(const struct file *f, const struct knobs *k, uint32_t max, const char **why)
{
	struct weft_mpw w;
	struct weft_manifest m;
	uint8_t *env, id[32];
	size_t len;
	weft_mpw_init(&w);
	hand_body(&w, &f->m, k);
	weft_manifest_seal(&env, &len, id, w.buf, w.len, f->mk, f->owner);
	*why = NULL;
	int rc = weft_manifest_open(&m, env, len, id, f->owner->pk, f->mk, max, why);
	if (rc == 0)
		weft_manifest_free(&m);
	free(env);
	weft_mpw_free(&w);
	return rc;
}

static void hostile_body(const struct file *f, const struct knobs *k, uint32_t max, int want, const char *what)
{
	const char *why;
	int rc = open_hand(f, k, max, &why);
	ok(rc == want && why != NULL, "%s: refused (%s)", what, why ? why : "no reason");
	if (rc != want)
		diag("got %d, want %d", rc, want);
}

static void test_bodies(void)
{
	struct file f;
	struct weft_mpw w, h;
	const char *why;
	make_file(&f, 5, WEFT_CHUNK_CONVERGENT);
	weft_mpw_init(&w);
	weft_mpw_init(&h);
	weft_manifest_encode(&f.m, &w, &why);
	hand_body(&h, &f.m, &(struct knobs){0});
	ok(w.len == h.len && memcmp(w.buf, h.buf, w.len) == 0, "the body is exactly the documented msgpack");
	is_int(open_hand(&f, &(struct knobs){0}, WEFT_MANIFEST_MAX_CHUNKS, &why), 0, "the hand-written body opens");

	bool all = true;
	int rc;
	struct weft_manifest m;
	for (size_t cut = 0; cut < w.len; cut++) {
		why = NULL;
		all &= weft_manifest_decode(&m, w.buf, cut, WEFT_MANIFEST_MAX_CHUNKS, &why) != 0 && why != NULL;
	}
	ok(all, "a body truncated at each of its %zu bytes: refused with a reason", w.len);

	hostile_body(&f, &(struct knobs){.size_delta = 1}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE,
		     "sizes one short of the total");
	hostile_body(&f, &(struct knobs){.size_delta = -1}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE,
		     "sizes one over the total");
	hostile_body(&f, &(struct knobs){.cipher0_delta = 1}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE,
		     "a stored size that does not match");
	hostile_body(&f, &(struct knobs){.zero_plain0 = true, .size_delta = -(int64_t)f.m.plain[0]},
		     WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE, "an empty chunk");
	hostile_body(&f, &(struct knobs){.cdc_max = 1024}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE,
		     "chunking parameters that make no sense");
	hostile_body(&f, &(struct knobs){.ec_k = 5, .ec_n = 4}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE, "k > n");
	hostile_body(&f, &(struct knobs){.ec_n = 256}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE, "256 shares");
	hostile_body(&f, &(struct knobs){.mode = 3}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE, "mode 3");
	hostile_body(&f, &(struct knobs){.version = 2}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EUNSUPPORTED, "body version 2");
	hostile_body(&f, &(struct knobs){.fields = 9}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE, "9 fields");
	hostile_body(&f, &(struct knobs){.trailing = true}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE, "trailing bytes");
	hostile_body(&f, &(struct knobs){.declared = UINT32_MAX}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE,
		     "2^32 - 1 chunks declared");
	hostile_body(&f, &(struct knobs){.declared = 1000}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE,
		     "1000 chunks declared, 5 present");
	hostile_body(&f, &(struct knobs){.declared = 6}, WEFT_MANIFEST_MAX_CHUNKS, WEFT_EDECODE,
		     "6 chunks declared, 5 present");
	hostile_body(&f, &(struct knobs){0}, 4, WEFT_ETOOBIG, "an envelope of 5 chunks, a maximum of 4");
	why = NULL;
	rc = weft_manifest_decode(&m, w.buf, w.len, 4, &why);
	ok(rc == WEFT_ETOOBIG && why, "a body of 5 chunks, a maximum of 4: refused (%s)", why ? why : "");
	weft_mpw_reset(&h);
	hand_body(&h, &f.m, &(struct knobs){.declared = 1u << 24 | 1, .written = 5});
	rc = weft_manifest_decode(&m, h.buf, h.len, WEFT_MANIFEST_MAX_CHUNKS, &why);
	ok(rc == WEFT_EDECODE && why, "2^24 + 1 chunks declared in a 600-byte body: refused (%s)", why ? why : "");

	struct weft_manifest bad = f.m;
	bad.size++;
	why = NULL;
	weft_mpw_reset(&w);
	rc = weft_manifest_encode(&bad, &w, &why);
	ok(rc == WEFT_EINVAL && why != NULL, "the encoder refuses what the decoder would (%s)", why ? why : "");
	weft_mpw_free(&w);
	weft_mpw_free(&h);
	free_file(&f);
}

/* An envelope written by hand around given parts. */
static size_t hand_envelope(uint8_t **out, uint64_t version, const uint8_t *owner, const uint8_t *sig,
			    const uint8_t *sealed, size_t slen, bool trailing)
{
	struct weft_mpw w;
	size_t len;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, version);
	weft_mpw_bin(&w, owner, 32);
	weft_mpw_bin(&w, sig, 64);
	weft_mpw_bin(&w, sealed, slen);
	if (trailing)
		weft_mpw_nil(&w);
	*out = weft_mpw_steal(&w, &len);
	return len;
}

static void envelope_parts(const struct file *f, uint8_t owner[32], uint8_t sig[64], const uint8_t **sealed,
			   uint32_t *slen)
{
	struct weft_mp_reader r;
	uint32_t n;
	uint64_t v;
	weft_mp_reader_init(&r, f->env, f->envlen);
	weft_mp_read_array(&r, &n);
	weft_mp_read_uint(&r, &v);
	weft_mp_read_bin_fixed(&r, owner, 32);
	weft_mp_read_bin_fixed(&r, sig, 64);
	weft_mp_read_bin(&r, sealed, slen);
}

static void envelope_refused(const struct file *f, const uint8_t *env, size_t len, const uint8_t *want_id,
			     const uint8_t *want_owner, const struct weft_key *mk, int want, const char *what)
{
	struct weft_manifest m;
	const char *why = NULL;
	int rc = weft_manifest_open(&m, env, len, want_id, want_owner, mk, WEFT_MANIFEST_MAX_CHUNKS, &why);
	ok(rc == want && why != NULL, "%s: refused (%s)", what, why ? why : "no reason");
	if (rc != want)
		diag("got %d, want %d", rc, want);
	if (rc == 0)
		weft_manifest_free(&m);
}

static void test_envelopes(void)
{
	struct file f, g;
	make_file(&f, 40, WEFT_CHUNK_RANDOM);
	make_file(&g, 3, WEFT_CHUNK_RANDOM);
	const uint8_t *id = f.m.file.id, *pk = f.owner->pk;
	struct weft_manifest m;
	const char *why;

	bool all = true;
	for (size_t cut = 0; cut < f.envlen; cut++) {
		why = NULL;
		all &= weft_manifest_open(&m, f.env, cut, NULL, NULL, f.mk, WEFT_MANIFEST_MAX_CHUNKS, &why) != 0 &&
		       why != NULL;
	}
	ok(all, "an envelope truncated at each of its %zu bytes: refused with a reason", f.envlen);
	why = NULL;
	int rc = weft_manifest_open(&m, f.env, f.envlen, NULL, NULL, f.mk, 1, &why);
	ok(rc == WEFT_ETOOBIG && why, "an envelope longer than one chunk's worth, for a maximum of 1: refused (%s)",
	   why ? why : "");

	uint8_t owner[32], sig[64], *env;
	const uint8_t *sealed;
	uint32_t slen;
	envelope_parts(&f, owner, sig, &sealed, &slen);
	size_t len = hand_envelope(&env, 1, owner, sig, sealed, slen, false);
	ok(len == f.envlen && memcmp(env, f.env, len) == 0, "the envelope is exactly the documented msgpack");
	free(env);

	sig[10] ^= 1;
	len = hand_envelope(&env, 1, owner, sig, sealed, slen, false);
	envelope_refused(&f, env, len, id, pk, f.mk, WEFT_ECRYPTO, "a flipped signature bit");
	free(env);
	sig[10] ^= 1;

	len = hand_envelope(&env, 1, g.owner->pk, sig, sealed, slen, false);
	envelope_refused(&f, env, len, id, pk, f.mk, WEFT_ECRYPTO, "another owner named, expecting the owner");
	envelope_refused(&f, env, len, id, NULL, f.mk, WEFT_ECRYPTO, "another owner named, owner's signature");
	free(env);

	/* Mallory re-signs the owner's sealed manifest as hers. */
	uint8_t msg[27 + 32], msig[64];
	memcpy(msg, "weft.store.v1.manifest-sig", 27);
	memcpy(msg + 27, id, 32);
	weft_sign(g.owner, msig, msg, sizeof(msg));
	len = hand_envelope(&env, 1, g.owner->pk, msig, sealed, slen, false);
	uint8_t vid[32], vowner[32];
	ok(weft_manifest_verify(vid, vowner, env, len, &why) == 0 && memcmp(vowner, g.owner->pk, 32) == 0,
	   "a re-signed envelope is a valid signature by Mallory");
	envelope_refused(&f, env, len, id, pk, f.mk, WEFT_ECRYPTO, "but not the owner's");
	envelope_refused(&f, env, len, id, NULL, f.mk, WEFT_ECRYPTO,
			 "and with no owner expected, the body (bound to its owner) does not decrypt");
	free(env);

	len = hand_envelope(&env, 2, owner, sig, sealed, slen, false);
	envelope_refused(&f, env, len, id, pk, f.mk, WEFT_EUNSUPPORTED, "envelope version 2");
	free(env);
	len = hand_envelope(&env, 1, owner, sig, sealed, slen, true);
	envelope_refused(&f, env, len, id, pk, f.mk, WEFT_EDECODE, "trailing bytes after the envelope");
	free(env);
	len = hand_envelope(&env, 1, owner, sig, sealed, 40, false);
	envelope_refused(&f, env, len, NULL, NULL, f.mk, WEFT_EDECODE, "a sealed body of 40 bytes");
	free(env);

	uint8_t *copy = malloc(f.envlen);
	all = true;
	for (size_t i = f.envlen - slen; i < f.envlen; i += 97) {
		memcpy(copy, f.env, f.envlen);
		copy[i] ^= 4;
		all &= weft_manifest_open(&m, copy, f.envlen, id, pk, f.mk, WEFT_MANIFEST_MAX_CHUNKS, &why) ==
			       WEFT_ECORRUPT &&
		       weft_manifest_verify(vid, vowner, copy, f.envlen, &why) == WEFT_ECRYPTO;
	}
	ok(all, "a flipped bit in the sealed body: not the file's id, and the signature fails");
	free(copy);

	envelope_refused(&f, f.env, f.envlen, id, pk, g.mk, WEFT_ECRYPTO, "another file's manifest key");
	envelope_refused(&f, f.env, f.envlen, g.m.file.id, pk, f.mk, WEFT_ECORRUPT, "another file's id expected");

	/* Swapped chunks: the owner's key, signature and manifest key, but
	 * entries 0 and 1 exchanged. */
	uint8_t orig[32];
	memcpy(orig, id, 32);
	struct file s = f;
	s.env = NULL;
	weft_manifest_init(&s.m, f.m.nchunks);
	s.m.file = f.m.file;
	s.m.mode = f.m.mode;
	s.m.size = f.m.size;
	s.m.chunking = f.m.chunking;
	s.m.ec_k = f.m.ec_k;
	s.m.ec_n = f.m.ec_n;
	for (uint32_t i = 0; i < f.m.nchunks; i++) {
		uint32_t j = i < 2 ? 1 - i : i;
		memcpy(s.m.cid[i], f.m.cid[j], 32);
		s.m.plain[i] = f.m.plain[j];
		s.m.cipher[i] = f.m.cipher[j];
		memcpy(s.m.wrapped[i], f.m.wrapped[j], WEFT_CHUNK_WRAPPED_LEN);
		memcpy(s.m.sr[i], f.m.sr[j], 32);
	}
	encode_seal(&s);
	ok(memcmp(s.m.file.id, orig, 32) != 0, "swapped chunk order: another root");
	envelope_refused(&f, s.env, s.envlen, orig, pk, f.mk, WEFT_ECORRUPT, "swapped chunks against the file's id");
	ok(weft_manifest_open(&m, s.env, s.envlen, NULL, pk, f.mk, WEFT_MANIFEST_MAX_CHUNKS, &why) == 0,
	   "the swapped manifest on its own opens");
	struct weft_key *leaf = weft_key_new(), *ck = weft_key_new();
	weft_key_leaf(leaf, f.fk, m.nchunks, 0);
	is_int(weft_chunk_unwrap(ck, m.mode, leaf, m.cid[0], m.wrapped[0]), WEFT_ECRYPTO,
	       "but position 0's leaf key does not unwrap the chunk moved there");
	weft_key_free(leaf);
	weft_key_free(ck);
	weft_manifest_free(&m);
	free(s.env);
	weft_manifest_free(&s.m);

	free_file(&f);
	free_file(&g);
}

static void test_grants(void)
{
	struct file f, g;
	make_file(&f, 50, WEFT_CHUNK_CONVERGENT);
	make_file(&g, 50, WEFT_CHUNK_CONVERGENT);
	struct weft_manifest m;
	struct weft_grant *gr, *parsed;
	const char *why = NULL;
	char cap[WEFT_GRANT_STRING_MAX];
	uint64_t a = f.m.plain[0] + 17, b = a + f.m.plain[1] + f.m.plain[2] + 5; /* chunks 1..4 */
	ok(weft_grant_make(&gr, f.fk, &f.m.file, f.m.plain, f.m.nchunks, a, b) == 0, "the owner makes a grant");
	weft_grant_format(gr, cap);
	ok(weft_grant_parse(&parsed, cap, &why) == 0, "the grantee parses its capability string");
	ok(weft_manifest_open(&m, f.env, f.envlen, parsed->file.id, parsed->file.owner, &parsed->manifest_key,
			      WEFT_MANIFEST_MAX_CHUNKS, &why) == 0,
	   "and opens the manifest with the grant's id, owner and manifest key");
	is_int(weft_manifest_check_grant(&m, parsed, &why), 0, "the grant matches the manifest");
	is_int(parsed->first, 1, "first granted chunk");
	is_int(parsed->end, 4, "end of the granted chunks");
	struct weft_key *leaf = weft_key_new();
	bool in = true, out = true;
	for (uint32_t c = 0; c < m.nchunks; c++) {
		if (c >= parsed->first && c < parsed->end)
			in &= weft_grant_leaf(leaf, parsed, c) == 0 && read_chunk(&f, &m, leaf, c) == 0;
		else
			out &= weft_grant_leaf(leaf, parsed, c) == WEFT_EPERM;
	}
	ok(in, "the granted chunks read back");
	ok(out, "no other chunk's leaf key is given out");

	why = NULL;
	struct weft_manifest other;
	weft_manifest_open(&other, g.env, g.envlen, NULL, NULL, g.mk, WEFT_MANIFEST_MAX_CHUNKS, &why);
	int rc = weft_manifest_check_grant(&other, parsed, &why);
	ok(rc == WEFT_EINVAL && why, "a grant for another file (%s)", why ? why : "");
	weft_manifest_free(&other);

	parsed->b = parsed->a + 1; /* bytes in chunk 1 only, chunks still [1, 4) */
	why = NULL;
	rc = weft_manifest_check_grant(&m, parsed, &why);
	ok(rc == WEFT_EINVAL && why, "a chunk range wider than its byte range (%s)", why ? why : "");
	parsed->b = f.m.size + 1;
	ok(weft_manifest_check_grant(&m, parsed, &why) == WEFT_EINVAL, "a byte range past the end of the file");
	parsed->b = b;
	parsed->nchunks = 51;
	ok(weft_manifest_check_grant(&m, parsed, &why) == WEFT_EINVAL, "another chunk count");
	parsed->nchunks = 50;
	parsed->file.root_version++;
	ok(weft_manifest_check_grant(&m, parsed, &why) == WEFT_EINVAL, "another root version");

	weft_key_free(leaf);
	weft_grant_free(gr);
	weft_grant_free(parsed);
	weft_manifest_free(&m);
	free_file(&f);
	free_file(&g);
}

static void test_empty(void)
{
	struct file f;
	struct weft_manifest m;
	struct weft_grant *g;
	const char *why = NULL;
	make_file(&f, 0, WEFT_CHUNK_RANDOM);
	ok(weft_manifest_open(&m, f.env, f.envlen, f.m.file.id, f.owner->pk, f.mk, WEFT_MANIFEST_MAX_CHUNKS, &why) == 0 &&
		   m.nchunks == 0 && m.size == 0,
	   "an empty file's manifest round-trips");
	ok(weft_grant_make(&g, f.fk, &m.file, m.plain, 0, 0, 0) == 0 && weft_manifest_check_grant(&m, g, &why) == 0,
	   "and its grant (the manifest key alone) matches it");
	weft_grant_free(g);
	weft_manifest_free(&m);
	free_file(&f);
}

int main(void)
{
	if (weft_crypto_init() != 0)
		skip_all("libsodium init failed");
	test_round_trip(WEFT_CHUNK_RANDOM);
	test_round_trip(WEFT_CHUNK_CONVERGENT);
	test_bodies();
	test_envelopes();
	test_grants();
	test_empty();
	return done_testing();
}
