/* manifest.c - manifests (weft/store_manifest.h): the body's msgpack
 * encoding and its bounded decoder, the envelope (sealed under the
 * manifest key, Merkle-rooted, signed by the owner), the keyless envelope
 * check, and the check of a grant against its file's manifest. */
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/merkle.h"
#include "weft/mp.h"
#include "weft/store_cdc.h"
#include "weft/store_chunk.h"
#include "weft/store_keys.h"
#include "weft/store_manifest.h"
#include "weft/util.h"

#define LABEL_BODY "weft.store.v1.manifest-body"
#define LABEL_SIG "weft.store.v1.manifest-sig"

#define BODY_FIELDS 8
#define ENTRY_FIELDS 5
#define ENVELOPE_FIELDS 4
/* Encoded sizes.  An entry is at least: array header 1, CID 34, two sizes
 * of 1 byte, wrapped key 74, shares root 34.  The decoder also takes longer encodings than
 * the writer's (msgpack allows a wider header or integer than needed), so
 * the length bound of an envelope allows for the widest: an entry of at
 * most 5 + 37 + 9 + 9 + 77 + 37 bytes; the body's other fields at most 131
 * (array 5, version 9, nonce 21, root version 9, mode 9, size 9, chunking
 * 32, erasure 23, entries header 5), the seal 40, the envelope's own fields
 * 125 (array 5, version 9, owner 37, signature 69, sealed header 5). */
#define ENTRY_MIN (1 + 34 + 1 + 1 + 74 + 34)
#define ENTRY_MAX (5 + 37 + 9 + 9 + 77 + 37)
#define ENVELOPE_FIXED_MAX (131 + 40 + 125)

#define BODY_AAD_LEN (sizeof(LABEL_BODY) + WEFT_PK_LEN)
#define SIG_MSG_LEN (sizeof(LABEL_SIG) + WEFT_MERKLE_HASH)

void weft_manifest_init(struct weft_manifest *m, uint32_t nchunks)
{
	memset(m, 0, sizeof(*m));
	m->nchunks = nchunks;
	m->cid = weft_xcalloc(nchunks, sizeof(*m->cid));
	m->plain = weft_xcalloc(nchunks, sizeof(*m->plain));
	m->cipher = weft_xcalloc(nchunks, sizeof(*m->cipher));
	m->wrapped = weft_xcalloc(nchunks, sizeof(*m->wrapped));
	m->sr = weft_xcalloc(nchunks, sizeof(*m->sr));
}

void weft_manifest_free(struct weft_manifest *m)
{
	free(m->cid);
	free(m->plain);
	free(m->cipher);
	free(m->wrapped);
	free(m->sr);
	memset(m, 0, sizeof(*m));
}

/* What the decoder requires of a manifest beyond its encoding, and the
 * encoder of what it writes.  NULL when m is consistent, else why not. */
static const char *manifest_check(const struct weft_manifest *m)
{
	if (m->mode != WEFT_CHUNK_RANDOM && m->mode != WEFT_CHUNK_CONVERGENT)
		return "manifest: unknown mode";
	struct weft_cdc_params p = m->chunking;
	if (weft_cdc_params_check(&p) != 0 || memcmp(&p, &m->chunking, sizeof(p)) != 0)
		return "manifest: invalid chunking parameters";
	if (m->ec_k < 1 || m->ec_k > m->ec_n || m->ec_n > WEFT_MANIFEST_MAX_SHARES)
		return "manifest: invalid erasure parameters (need 1 <= k <= n <= 255)";
	uint64_t sum = 0;
	for (uint32_t i = 0; i < m->nchunks; i++) {
		if (m->plain[i] == 0 || m->plain[i] > m->chunking.max)
			return "manifest: a chunk size is 0 or above the chunking maximum";
		if (m->cipher[i] != m->plain[i] + WEFT_CHUNK_OVERHEAD)
			return "manifest: a chunk's stored size does not match its plaintext size";
		sum += m->plain[i];
	}
	if (sum != m->size)
		return "manifest: the chunk sizes do not add up to the file size";
	return NULL;
}

int weft_manifest_encode(const struct weft_manifest *m, struct weft_mpw *w, const char **why)
{
	const char *bad = manifest_check(m);
	if (bad != NULL) {
		if (why != NULL)
			*why = bad;
		return WEFT_EINVAL;
	}
	weft_mpw_array(w, BODY_FIELDS);
	weft_mpw_uint(w, WEFT_MANIFEST_VERSION);
	weft_mpw_bin(w, m->file.nonce, sizeof(m->file.nonce));
	weft_mpw_uint(w, m->file.root_version);
	weft_mpw_uint(w, m->mode);
	weft_mpw_uint(w, m->size);
	weft_mpw_array(w, 3);
	weft_mpw_uint(w, m->chunking.min);
	weft_mpw_uint(w, m->chunking.avg);
	weft_mpw_uint(w, m->chunking.max);
	weft_mpw_array(w, 2);
	weft_mpw_uint(w, m->ec_k);
	weft_mpw_uint(w, m->ec_n);
	weft_mpw_array(w, m->nchunks);
	for (uint32_t i = 0; i < m->nchunks; i++) {
		weft_mpw_array(w, ENTRY_FIELDS);
		weft_mpw_bin(w, m->cid[i], WEFT_MERKLE_HASH);
		weft_mpw_uint(w, m->plain[i]);
		weft_mpw_uint(w, m->cipher[i]);
		weft_mpw_bin(w, m->wrapped[i], WEFT_CHUNK_WRAPPED_LEN);
		weft_mpw_bin(w, m->sr[i], WEFT_MERKLE_HASH);
	}
	return 0;
}

int weft_manifest_decode(struct weft_manifest *m, const uint8_t *body, size_t len, uint32_t max_chunks,
			 const char **why)
{
	const char *ignored;
	struct weft_mp_reader r;
	struct weft_file_ref file = {0};
	uint32_t count, mode, nchunks, cdc[3], ec[2];
	uint64_t version, size;
	if (why == NULL)
		why = &ignored;
	memset(m, 0, sizeof(*m));
	weft_mp_reader_init(&r, body, len);
	if (weft_mp_read_array(&r, &count) || count != BODY_FIELDS) {
		*why = "manifest: not an array of 8 fields";
		return WEFT_EDECODE;
	}
	if (weft_mp_read_uint(&r, &version)) {
		*why = "manifest: the version is not a number";
		return WEFT_EDECODE;
	}
	if (version != WEFT_MANIFEST_VERSION) {
		*why = "manifest: unsupported version";
		return WEFT_EUNSUPPORTED;
	}
	weft_mp_read_bin_fixed(&r, file.nonce, sizeof(file.nonce));
	weft_mp_read_u32(&r, &file.root_version);
	weft_mp_read_u32(&r, &mode);
	weft_mp_read_uint(&r, &size);
	if (weft_mp_read_array(&r, &count) == 0 && count != 3)
		r.err = WEFT_EDECODE;
	for (int i = 0; i < 3; i++)
		weft_mp_read_u32(&r, &cdc[i]);
	if (weft_mp_read_array(&r, &count) == 0 && count != 2)
		r.err = WEFT_EDECODE;
	for (int i = 0; i < 2; i++)
		weft_mp_read_u32(&r, &ec[i]);
	if (r.err) {
		*why = "manifest: a field has the wrong type or size";
		return WEFT_EDECODE;
	}
	if (weft_mp_read_array(&r, &nchunks)) {
		*why = "manifest: the chunk list is not an array that fits in the bytes present";
		return WEFT_EDECODE;
	}
	if (nchunks > max_chunks) {
		*why = "manifest: more chunks than the configured maximum";
		return WEFT_ETOOBIG;
	}
	if ((uint64_t)nchunks * ENTRY_MIN > weft_mp_remaining(&r)) {
		*why = "manifest: more chunks than the bytes present can hold";
		return WEFT_EDECODE;
	}
	weft_manifest_init(m, nchunks);
	m->file = file;
	m->mode = (enum weft_chunk_mode)mode;
	m->size = size;
	m->chunking = (struct weft_cdc_params){.min = cdc[0], .avg = cdc[1], .max = cdc[2]};
	m->ec_k = ec[0];
	m->ec_n = ec[1];
	for (uint32_t i = 0; i < nchunks; i++) {
		if (weft_mp_read_array(&r, &count) || count != ENTRY_FIELDS ||
		    weft_mp_read_bin_fixed(&r, m->cid[i], WEFT_MERKLE_HASH) || weft_mp_read_u32(&r, &m->plain[i]) ||
		    weft_mp_read_u32(&r, &m->cipher[i]) ||
		    weft_mp_read_bin_fixed(&r, m->wrapped[i], WEFT_CHUNK_WRAPPED_LEN) ||
		    weft_mp_read_bin_fixed(&r, m->sr[i], WEFT_MERKLE_HASH)) {
			*why = "manifest: a chunk is not [32-byte CID, size, size, 72-byte wrapped key, 32-byte shares root]";
			goto fail;
		}
	}
	if (weft_mp_remaining(&r) != 0) {
		*why = "manifest: trailing bytes";
		goto fail;
	}
	const char *bad = manifest_check(m);
	if (bad != NULL) {
		*why = bad;
		goto fail;
	}
	return 0;
fail:
	weft_manifest_free(m);
	return WEFT_EDECODE;
}

static void body_aad(uint8_t aad[BODY_AAD_LEN], const uint8_t owner[WEFT_PK_LEN])
{
	memcpy(aad, LABEL_BODY, sizeof(LABEL_BODY));
	memcpy(aad + sizeof(LABEL_BODY), owner, WEFT_PK_LEN);
}

static void sig_msg(uint8_t msg[SIG_MSG_LEN], const uint8_t id[WEFT_MERKLE_HASH])
{
	memcpy(msg, LABEL_SIG, sizeof(LABEL_SIG));
	memcpy(msg + sizeof(LABEL_SIG), id, WEFT_MERKLE_HASH);
}

void weft_manifest_seal(uint8_t **env, size_t *envlen, uint8_t id[WEFT_MERKLE_HASH], const uint8_t *body,
			size_t len, const struct weft_key *manifest_key, const struct weft_identity *owner)
{
	size_t slen = len + WEFT_CHUNK_OVERHEAD;
	uint8_t *sealed = weft_xcalloc(slen, 1);
	uint8_t aad[BODY_AAD_LEN], msg[SIG_MSG_LEN], sig[WEFT_SIG_LEN];
	body_aad(aad, owner->pk);
	randombytes_buf(sealed, WEFT_CHUNK_NONCE_LEN);
	crypto_aead_xchacha20poly1305_ietf_encrypt(sealed + WEFT_CHUNK_NONCE_LEN, NULL, body, len, aad, sizeof(aad),
						   NULL, sealed, manifest_key->b);
	weft_merkle_root(id, sealed, slen);
	sig_msg(msg, id);
	weft_sign(owner, sig, msg, sizeof(msg));

	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, ENVELOPE_FIELDS);
	weft_mpw_uint(&w, WEFT_MANIFEST_VERSION);
	weft_mpw_bin(&w, owner->pk, WEFT_PK_LEN);
	weft_mpw_bin(&w, sig, sizeof(sig));
	weft_mpw_bin(&w, sealed, slen);
	free(sealed);
	*env = weft_mpw_steal(&w, envlen);
}

/* Reads an envelope's fields: 0 with owner, sig and the sealed bytes
 * (pointing into env), or an error with *why. */
static int envelope_read(const uint8_t *env, size_t len, uint8_t owner[WEFT_PK_LEN], uint8_t sig[WEFT_SIG_LEN],
			 const uint8_t **sealed, uint32_t *slen, const char **why)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t version;
	weft_mp_reader_init(&r, env, len);
	if (weft_mp_read_array(&r, &count) || count != ENVELOPE_FIELDS) {
		*why = "manifest envelope: not an array of 4 fields";
		return WEFT_EDECODE;
	}
	if (weft_mp_read_uint(&r, &version)) {
		*why = "manifest envelope: the version is not a number";
		return WEFT_EDECODE;
	}
	if (version != WEFT_MANIFEST_VERSION) {
		*why = "manifest envelope: unsupported version";
		return WEFT_EUNSUPPORTED;
	}
	if (weft_mp_read_bin_fixed(&r, owner, WEFT_PK_LEN) || weft_mp_read_bin_fixed(&r, sig, WEFT_SIG_LEN) ||
	    weft_mp_read_bin(&r, sealed, slen)) {
		*why = "manifest envelope: a field has the wrong type or size";
		return WEFT_EDECODE;
	}
	if (weft_mp_remaining(&r) != 0) {
		*why = "manifest envelope: trailing bytes";
		return WEFT_EDECODE;
	}
	if (*slen <= WEFT_CHUNK_OVERHEAD) {
		*why = "manifest envelope: sealed body too short";
		return WEFT_EDECODE;
	}
	return 0;
}

/* envelope_read, the id, then the signature. */
static int envelope_check(const uint8_t *env, size_t len, uint8_t id[WEFT_MERKLE_HASH], uint8_t owner[WEFT_PK_LEN],
			  const uint8_t **sealed, uint32_t *slen, const uint8_t *want_id, const uint8_t *want_owner,
			  const char **why)
{
	uint8_t sig[WEFT_SIG_LEN], msg[SIG_MSG_LEN];
	int rc = envelope_read(env, len, owner, sig, sealed, slen, why);
	if (rc != 0)
		return rc;
	if (want_owner != NULL && memcmp(owner, want_owner, WEFT_PK_LEN) != 0) {
		*why = "manifest: signed by another owner";
		return WEFT_ECRYPTO;
	}
	weft_merkle_root(id, *sealed, *slen);
	if (want_id != NULL && memcmp(id, want_id, WEFT_MERKLE_HASH) != 0) {
		*why = "manifest: its root is not the file's id";
		return WEFT_ECORRUPT;
	}
	sig_msg(msg, id);
	if (weft_verify(owner, sig, msg, sizeof(msg)) != 0) {
		*why = "manifest: bad owner signature";
		return WEFT_ECRYPTO;
	}
	return 0;
}

int weft_manifest_verify(uint8_t id[WEFT_MERKLE_HASH], uint8_t owner[WEFT_PK_LEN], const uint8_t *env, size_t len,
			 const char **why)
{
	const char *ignored;
	const uint8_t *sealed;
	uint32_t slen;
	return envelope_check(env, len, id, owner, &sealed, &slen, NULL, NULL, why ? why : &ignored);
}

int weft_manifest_open(struct weft_manifest *m, const uint8_t *env, size_t len, const uint8_t *want_id,
		       const uint8_t *want_owner, const struct weft_key *manifest_key, uint32_t max_chunks,
		       const char **why)
{
	const char *ignored;
	const uint8_t *sealed;
	uint32_t slen;
	uint8_t id[WEFT_MERKLE_HASH], owner[WEFT_PK_LEN], aad[BODY_AAD_LEN];
	if (why == NULL)
		why = &ignored;
	memset(m, 0, sizeof(*m));
	if (len > ENVELOPE_FIXED_MAX + (uint64_t)max_chunks * ENTRY_MAX) {
		*why = "manifest: longer than the configured maximum of chunks allows";
		return WEFT_ETOOBIG;
	}
	int rc = envelope_check(env, len, id, owner, &sealed, &slen, want_id, want_owner, why);
	if (rc != 0)
		return rc;
	size_t blen = slen - WEFT_CHUNK_OVERHEAD;
	uint8_t *body = weft_xcalloc(blen, 1);
	body_aad(aad, owner);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(body, NULL, NULL, sealed + WEFT_CHUNK_NONCE_LEN,
						       slen - WEFT_CHUNK_NONCE_LEN, aad, sizeof(aad), sealed,
						       manifest_key->b) != 0) {
		*why = "manifest: does not decrypt under this manifest key";
		rc = WEFT_ECRYPTO;
	} else {
		rc = weft_manifest_decode(m, body, blen, max_chunks, why);
	}
	free(body);
	if (rc != 0)
		return rc;
	memcpy(m->file.id, id, WEFT_MERKLE_HASH);
	memcpy(m->file.owner, owner, WEFT_PK_LEN);
	return 0;
}

int weft_manifest_check_grant(const struct weft_manifest *m, const struct weft_grant *g, const char **why)
{
	const char *ignored;
	uint32_t first = 0, end = 0;
	if (why == NULL)
		why = &ignored;
	if (memcmp(g->file.id, m->file.id, WEFT_MERKLE_HASH) != 0 ||
	    memcmp(g->file.owner, m->file.owner, WEFT_PK_LEN) != 0 ||
	    memcmp(g->file.nonce, m->file.nonce, WEFT_FILE_NONCE_LEN) != 0 ||
	    g->file.root_version != m->file.root_version) {
		*why = "grant: for another file";
		return WEFT_EINVAL;
	}
	if (g->nchunks != m->nchunks) {
		*why = "grant: another chunk count than the manifest's";
		return WEFT_EINVAL;
	}
	if (m->nchunks == 0)
		return 0; /* the decoder allows nothing but empty ranges */
	if (weft_grant_chunk_range(m->plain, m->nchunks, g->a, g->b, &first, &end) != 0) {
		*why = "grant: byte range past the end of the file";
		return WEFT_EINVAL;
	}
	if (first != g->first || end != g->end) {
		*why = "grant: chunk range is not the chunks holding its byte range";
		return WEFT_EINVAL;
	}
	return 0;
}
