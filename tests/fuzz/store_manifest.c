/* tests/fuzz/store_manifest.c - libFuzzer target for the manifest decoders
 * (storage/manifest.c): weft_manifest_decode on bodies, and
 * weft_manifest_verify and weft_manifest_open on envelopes, with at most
 * 1024 chunks.
 *
 * Input: a flags byte, then the bytes.  Bit 0 clear: the bytes are a body;
 * it is decoded, and also sealed with the target's manifest key and owner
 * and opened, which must give the same answer (so mutated bodies reach the
 * decoder behind a valid signature and AEAD).  Bit 0 set: the bytes are an
 * envelope, verified keylessly and opened with the target's key.
 * abort()s when a refusal has no reason or an unexpected code, when verify
 * and open disagree on the signature, or when an accepted manifest breaks
 * what the decoder promises: at most 1024 chunks, plaintext sizes 1..cdc
 * max adding up to the size, stored sizes plain + 40, valid modes and
 * parameters; it must encode and decode back to the same manifest.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes bodies and envelopes of manifests of
 * 0, 1 and 5 chunks in both modes and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/store_manifest.h"

#define MAX_CHUNKS 1024

static struct weft_key *mkey;
static struct weft_identity *owner;

static void seed(const char *dir, uint32_t n, enum weft_chunk_mode mode)
{
	struct weft_manifest m;
	struct weft_mpw w;
	uint8_t id[WEFT_MERKLE_HASH], *env;
	size_t envlen;
	char name[64];
	weft_manifest_init(&m, n);
	memset(m.file.nonce, 7, sizeof(m.file.nonce));
	m.file.root_version = 1;
	m.mode = mode;
	m.chunking = (struct weft_cdc_params){.min = 256, .avg = 1024, .max = 8192};
	m.ec_k = 2;
	m.ec_n = 4;
	for (uint32_t i = 0; i < n; i++) {
		m.plain[i] = 100 * (i + 1);
		m.cipher[i] = m.plain[i] + WEFT_CHUNK_OVERHEAD;
		m.size += m.plain[i];
		memset(m.cid[i], (int)i, WEFT_MERKLE_HASH);
		memset(m.wrapped[i], (int)(i + 0x80), WEFT_CHUNK_WRAPPED_LEN);
	}
	weft_mpw_init(&w);
	weft_mpw_uint(&w, 0); /* the flags byte (a positive fixint is one byte) */
	pf_check(weft_manifest_encode(&m, &w, NULL) == 0, "seed manifest");
	snprintf(name, sizeof(name), "body-%u-%d", n, (int)mode);
	pf_write_file(dir, name, w.buf, w.len);
	weft_manifest_seal(&env, &envlen, id, w.buf + 1, w.len - 1, mkey, owner);
	weft_mpw_reset(&w);
	weft_mpw_uint(&w, 1);
	weft_mpw_raw(&w, env, envlen);
	snprintf(name, sizeof(name), "envelope-%u-%d", n, (int)mode);
	pf_write_file(dir, name, w.buf, w.len);
	free(env);
	weft_mpw_free(&w);
	weft_manifest_free(&m);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t s[WEFT_SEED_LEN];
	pf_check(weft_crypto_init() == 0, "crypto init");
	mkey = weft_key_new();
	memset(mkey->b, 0x42, WEFT_KEY_LEN);
	memset(s, 0x24, sizeof(s));
	owner = weft_identity_from_seed(s);
	const char *dir = getenv("WEFT_FUZZ_SEEDS");
	if (dir) {
		for (int mode = WEFT_CHUNK_RANDOM; mode <= WEFT_CHUNK_CONVERGENT; mode++) {
			seed(dir, 0, mode);
			seed(dir, 1, mode);
			seed(dir, 5, mode);
		}
		exit(0);
	}
	return 0;
}

static bool same(const struct weft_manifest *a, const struct weft_manifest *b)
{
	uint32_t n = a->nchunks;
	return memcmp(&a->file, &b->file, sizeof(a->file)) == 0 && a->mode == b->mode && a->size == b->size &&
	       memcmp(&a->chunking, &b->chunking, sizeof(a->chunking)) == 0 && a->ec_k == b->ec_k &&
	       a->ec_n == b->ec_n && n == b->nchunks && memcmp(a->cid, b->cid, n * sizeof(*a->cid)) == 0 &&
	       memcmp(a->plain, b->plain, n * sizeof(*a->plain)) == 0 &&
	       memcmp(a->cipher, b->cipher, n * sizeof(*a->cipher)) == 0 &&
	       memcmp(a->wrapped, b->wrapped, n * sizeof(*a->wrapped)) == 0;
}

static void check_accepted(const struct weft_manifest *m)
{
	struct weft_manifest back;
	struct weft_mpw w;
	uint64_t sum = 0;
	pf_check(m->nchunks <= MAX_CHUNKS, "chunk bound");
	pf_check(m->mode == WEFT_CHUNK_RANDOM || m->mode == WEFT_CHUNK_CONVERGENT, "mode");
	pf_check(m->ec_k >= 1 && m->ec_k <= m->ec_n && m->ec_n <= WEFT_MANIFEST_MAX_SHARES, "erasure parameters");
	for (uint32_t i = 0; i < m->nchunks; i++) {
		pf_check(m->plain[i] >= 1 && m->plain[i] <= m->chunking.max, "chunk size");
		pf_check(m->cipher[i] == m->plain[i] + WEFT_CHUNK_OVERHEAD, "stored size");
		sum += m->plain[i];
	}
	pf_check(sum == m->size, "sizes add up");
	weft_mpw_init(&w);
	pf_check(weft_manifest_encode(m, &w, NULL) == 0, "an accepted manifest encodes");
	pf_check(weft_manifest_decode(&back, w.buf, w.len, MAX_CHUNKS, NULL) == 0, "and decodes");
	memcpy(back.file.id, m->file.id, sizeof(back.file.id));
	memcpy(back.file.owner, m->file.owner, sizeof(back.file.owner));
	pf_check(same(m, &back), "to the same manifest");
	weft_manifest_free(&back);
	weft_mpw_free(&w);
}

static bool refusal(int rc)
{
	return rc == WEFT_EDECODE || rc == WEFT_EUNSUPPORTED || rc == WEFT_ETOOBIG || rc == WEFT_ECRYPTO ||
	       rc == WEFT_ECORRUPT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct weft_manifest m;
	const char *why = NULL;
	int rc;
	if (size == 0)
		return 0;
	const uint8_t *p = data + 1;
	size_t len = size - 1;
	if (data[0] & 1) {
		uint8_t id[WEFT_MERKLE_HASH], pk[WEFT_PK_LEN];
		int vrc = weft_manifest_verify(id, pk, p, len, &why);
		pf_check(vrc == 0 || (refusal(vrc) && why != NULL), "verify: a refusal says why");
		why = NULL;
		rc = weft_manifest_open(&m, p, len, NULL, NULL, mkey, MAX_CHUNKS, &why);
		pf_check(rc != 0 || vrc == 0, "open accepts only what verify accepts");
		pf_check(vrc != 0 || rc == 0 || rc == WEFT_ETOOBIG || rc == WEFT_ECRYPTO || rc == WEFT_EDECODE ||
				 rc == WEFT_EUNSUPPORTED,
			 "after a good signature, open fails only on size, key or body");
		if (rc == 0)
			pf_check(memcmp(m.file.id, id, sizeof(id)) == 0 && memcmp(m.file.owner, pk, sizeof(pk)) == 0,
				 "open and verify agree on id and owner");
	} else {
		uint8_t id[WEFT_MERKLE_HASH], *env;
		size_t envlen;
		struct weft_manifest o;
		const char *owhy = NULL;
		rc = weft_manifest_decode(&m, p, len, MAX_CHUNKS, &why);
		weft_manifest_seal(&env, &envlen, id, p, len, mkey, owner);
		int orc = weft_manifest_open(&o, env, envlen, id, owner->pk, mkey, MAX_CHUNKS, &owhy);
		free(env);
		/* open's length bound holds every body decode accepts; it may
		 * refuse a long malformed one first. */
		pf_check(orc == rc || (orc == WEFT_ETOOBIG && rc != 0), "decode and open(seal) agree");
		if (orc == 0) {
			pf_check(memcmp(o.file.id, id, sizeof(id)) == 0, "open sets the id");
			weft_manifest_free(&o);
		}
	}
	if (rc != 0) {
		pf_check(refusal(rc) && why != NULL, "a refusal says why");
		return 0;
	}
	check_accepted(&m);
	weft_manifest_free(&m);
	return 0;
}
