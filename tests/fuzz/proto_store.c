/* tests/fuzz/proto_store.c - libFuzzer target for the storage service
 * (protocols/store: store.c, audit.c), hosted directly (as the node
 * stack hosts it on channel 0xf5, without the channel byte) by node 0 of 4
 * on the script driver of tests/fuzz/lib/protofuzz.h (input format
 * there), with the driver's in-memory share service.  Every peer message
 * (PUT, ACK, GET, SHARE, NOSHARE, CHAL, PROOF, NOPROOF, MPUT, MGET, MAN,
 * DROP) reaches on_message, interleaved with the application's commands
 * (ops 0xe8-0xef: store.place, placed, fetch, fetched, manifest_put,
 * manifest_get, drop, audit, repair, evidence and an unknown name), the
 * tick (timer 1) and audit (timer 2) timers, clock steps and restarts
 * (destroy, then init from the same kv and share store).  Beyond
 * ASan/UBSan/LSan the driver checks that every message sent, every
 * command's reply and the info are one msgpack value each, and that init
 * succeeds again after a restart.
 *
 * Parameter sets: k2, the defaults (k = 2, 3 acknowledgements) with
 * scheduled audits and no grace; k1, plain replication acknowledged by
 * all four, audits within the default grace (skipped); k3, k = 3 with 2
 * acknowledgements and a short grace.  All with short timeouts, so that
 * retries, failed placements, fetch and challenge timeouts come within
 * a few ticks.
 *
 * Seeds (WEFT_FUZZ_SEEDS): four honest nodes place three chunks (A from
 * node 1 and B from node 0 under one file, C from node 2 with k = 1 under
 * another), node 3 puts the file's signed manifest; then, in phases 100
 * ms apart, they poll, fetch each other's chunks, audit and repair (one
 * chunk, then sweeps), ask for the manifest, and node 3 drops the file
 * (the owner's signed drop), after which audits and repairs find shares
 * gone; node 0 puts the manifest again (node 1 asks it for it) and drops
 * the other file.  So node 0's script holds valid PUTs for a share it holds (with
 * a consistent record), ACKs, GETs, SHAREs that check against the SR,
 * CHALs, PROOFs that verify, NOPROOFs, MPUT/MAN and a DROP signed by the
 * owner, for the fuzzer to mutate.  Script d cuts node 0 off for 350 ms:
 * it misses A's and C's PUTs and the manifest, retries its placement of B
 * until the cut heals, then is challenged, answers NOPROOF, gets its
 * shares back by repair PUTs and the manifest by MAN.  The fake env's
 * random bytes are constant for nonces (so recorded PROOFs and NOPROOFs
 * stay valid) and vary for the audit's choices (protofuzz.h,
 * varied_random). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/erasure.h"
#include "weft/merkle.h"
#include "weft/store_manifest.h"
#include "weft/store_proto.h"

extern const struct weft_proto_ops weft_store_service;

#define H WEFT_STORE_HASH

enum cmd {
	C_PLACE,
	C_PLACED,
	C_FETCH,
	C_FETCHED,
	C_MPUT,
	C_MGET,
	C_DROP,
	C_AUDIT,
	C_REPAIR,
	C_EVIDENCE,
	C_BOGUS,
};

static const char *const commands[] = {
	"store.place",  "store.placed", "store.fetch",  "store.fetched",  "store.manifest_put", "store.manifest_get",
	"store.drop",   "store.audit",  "store.repair", "store.evidence", "store.bogus",        NULL,
};

/* ---- the seeds' files and chunks ---- */

enum { CH_A, CH_B, CH_C, NCHUNKS };

struct chunk {
	size_t len;
	uint32_t k;          /* 0: the service's default */
	uint8_t *blob;
	uint8_t cid[H];
};

static struct chunk chunks[NCHUNKS] = {
	[CH_A] = {.len = 2400, .k = 0}, /* placed under file 0 */
	[CH_B] = {.len = 500, .k = 0},  /* file 0 (and file 1 by node 0) */
	[CH_C] = {.len = 4500, .k = 1}, /* file 1 */
};

static struct weft_identity *owner;
static uint8_t nonces[2][WEFT_FILE_NONCE_LEN];
static uint8_t tags[2][H];
static uint8_t *envelope;     /* file 0's signed manifest */
static size_t envlen;
static uint8_t manifest_id[H];
/* The owner's drops: file 0 (its manifest's id), file 1 (no manifest). */
static uint8_t drop_id[2][H];
static uint8_t drop_sig[2][WEFT_SIGNATURE_LEN];

static uint32_t default_k(unsigned int cfg)
{
	return cfg == 0 ? 2 : cfg == 1 ? 1 : 3;
}

static void params(unsigned int cfg, struct weft_mpw *w, const char **name)
{
	static const char *const names[] = {"k2", "k1", "k3"};
	*name = names[cfg];
	switch (cfg) {
	case 0:
		weft_mpw_map(w, 3);
		weft_mpw_str(w, "store_timeout_ms");
		weft_mpw_uint(w, 50);
		weft_mpw_str(w, "store_audit_ms");
		weft_mpw_uint(w, 150);
		weft_mpw_str(w, "store_audit_grace_ms");
		weft_mpw_uint(w, 0);
		break;
	case 1:
		weft_mpw_map(w, 4);
		weft_mpw_str(w, "store_k");
		weft_mpw_uint(w, 1);
		weft_mpw_str(w, "store_ack");
		weft_mpw_uint(w, 4);
		weft_mpw_str(w, "store_timeout_ms");
		weft_mpw_uint(w, 50);
		weft_mpw_str(w, "store_audit_ms");
		weft_mpw_uint(w, 300);
		break;
	default:
		weft_mpw_map(w, 5);
		weft_mpw_str(w, "store_k");
		weft_mpw_uint(w, 3);
		weft_mpw_str(w, "store_ack");
		weft_mpw_uint(w, 2);
		weft_mpw_str(w, "store_timeout_ms");
		weft_mpw_uint(w, 80);
		weft_mpw_str(w, "store_audit_ms");
		weft_mpw_uint(w, 200);
		weft_mpw_str(w, "store_audit_grace_ms");
		weft_mpw_uint(w, 100);
		break;
	}
}

/* The shares root of a chunk coded with k, as store.place codes it. */
static void shares_root(const struct chunk *c, uint32_t k, uint8_t sr[H])
{
	uint8_t roots[PF_N][H];
	if (k == 1) {
		for (uint32_t j = 0; j < PF_N; j++)
			memcpy(roots[j], c->cid, H);
	} else {
		size_t L = weft_store_share_len(c->len, k);
		uint8_t *sh = calloc(PF_N, L), *ptr[PF_N];
		struct weft_rs rs;
		pf_check(sh != NULL && weft_rs_init(&rs, PF_N, k) == 0, "coding set-up");
		memcpy(sh, c->blob, c->len);
		for (uint32_t j = 0; j < PF_N; j++)
			ptr[j] = sh + (size_t)j * L;
		weft_rs_encode(&rs, ptr, L);
		for (uint32_t j = 0; j < PF_N; j++)
			weft_merkle_root(roots[j], ptr[j], L);
		weft_rs_free(&rs);
		free(sh);
	}
	weft_store_shares_root(sr, k, PF_N, c->len, (const uint8_t(*)[H])roots);
}

/* weft_manifest_seal with a fixed nonce (it draws a random one), so that
 * the seeds come out the same every time: checked against
 * weft_manifest_open. */
static void seal(const uint8_t *body, size_t len, const struct weft_key *mkey)
{
	static const char body_label[] = "weft.store.v1.manifest-body", sig_label[] = "weft.store.v1.manifest-sig";
	uint8_t aad[sizeof(body_label) + WEFT_PK_LEN], msg[sizeof(sig_label) + H], sig[WEFT_SIG_LEN];
	size_t slen = len + WEFT_CHUNK_OVERHEAD;
	uint8_t *sealed = calloc(1, slen);
	pf_check(sealed != NULL, "calloc");
	memcpy(aad, body_label, sizeof(body_label));
	memcpy(aad + sizeof(body_label), owner->pk, WEFT_PK_LEN);
	memset(sealed, 0x4e, WEFT_CHUNK_NONCE_LEN);
	crypto_aead_xchacha20poly1305_ietf_encrypt(sealed + WEFT_CHUNK_NONCE_LEN, NULL, body, len, aad, sizeof(aad),
						   NULL, sealed, mkey->b);
	weft_merkle_root(manifest_id, sealed, slen);
	memcpy(msg, sig_label, sizeof(sig_label));
	memcpy(msg + sizeof(sig_label), manifest_id, H);
	weft_sign(owner, sig, msg, sizeof(msg));
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, WEFT_MANIFEST_VERSION);
	weft_mpw_bin(&w, owner->pk, WEFT_PK_LEN);
	weft_mpw_bin(&w, sig, sizeof(sig));
	weft_mpw_bin(&w, sealed, slen);
	free(sealed);
	envelope = weft_mpw_steal(&w, &envlen);
	struct weft_manifest m;
	const char *why = NULL;
	int rc = weft_manifest_open(&m, envelope, envlen, manifest_id, owner->pk, mkey, 16, &why);
	if (rc != 0)
		fprintf(stderr, "proto_store: the seed manifest does not open: %s\n", why ? why : "?");
	pf_check(rc == 0, "the seed manifest opens");
	weft_manifest_free(&m);
}

static void setup(void)
{
	uint8_t seed[WEFT_SEED_LEN];
	memset(seed, 0x24, sizeof(seed));
	owner = weft_identity_from_seed(seed);
	for (int f = 0; f < 2; f++) {
		memset(nonces[f], 7 + f, WEFT_FILE_NONCE_LEN);
		weft_store_tag(tags[f], owner->pk, nonces[f]);
	}
	for (int i = 0; i < NCHUNKS; i++) {
		struct chunk *c = &chunks[i];
		c->blob = malloc(c->len);
		pf_check(c->blob != NULL, "malloc");
		for (size_t b = 0; b < c->len; b++)
			c->blob[b] = (uint8_t)(b * 131 + (size_t)i * 29 + (b >> 8));
		weft_merkle_root(c->cid, c->blob, c->len);
	}
	/* File 0's manifest: chunks A and B. */
	struct weft_manifest m;
	struct weft_mpw body;
	struct weft_key *mkey = weft_key_new();
	memset(mkey->b, 0x42, WEFT_KEY_LEN);
	weft_manifest_init(&m, 2);
	memcpy(m.file.nonce, nonces[0], WEFT_FILE_NONCE_LEN);
	m.file.root_version = 1;
	m.mode = WEFT_CHUNK_RANDOM;
	m.chunking = (struct weft_cdc_params){.min = 256, .avg = 1024, .max = 8192};
	m.ec_k = 2;
	m.ec_n = PF_N;
	for (uint32_t i = 0; i < 2; i++) {
		m.cipher[i] = (uint32_t)chunks[i].len;
		m.plain[i] = m.cipher[i] - WEFT_CHUNK_OVERHEAD;
		m.size += m.plain[i];
		memcpy(m.cid[i], chunks[i].cid, H);
		memset(m.wrapped[i], (int)(i + 0x80), WEFT_CHUNK_WRAPPED_LEN);
		shares_root(&chunks[i], 2, m.sr[i]);
	}
	weft_mpw_init(&body);
	pf_check(weft_manifest_encode(&m, &body, NULL) == 0, "seed manifest");
	seal(body.buf, body.len, mkey);
	weft_mpw_free(&body);
	weft_manifest_free(&m);
	weft_key_free(mkey);
	memcpy(drop_id[0], manifest_id, H);
	memset(drop_id[1], 0x33, H);
	for (int f = 0; f < 2; f++) {
		uint8_t msg[WEFT_STORE_DROP_MSG_LEN];
		weft_store_drop_message(msg, drop_id[f], owner->pk, nonces[f]);
		weft_sign(owner, drop_sig[f], msg, sizeof(msg));
	}
}

/* ---- command arguments ---- */

static void arg_place(struct weft_mpw *w, int ch, int file)
{
	const struct chunk *c = &chunks[ch];
	weft_mpw_array(w, 4);
	weft_mpw_bin(w, tags[file], H);
	weft_mpw_bin(w, c->cid, H);
	weft_mpw_uint(w, c->k);
	weft_mpw_bin(w, c->blob, c->len);
}

static void arg_fetch(struct weft_mpw *w, unsigned int cfg, int ch)
{
	const struct chunk *c = &chunks[ch];
	uint32_t k = c->k ? c->k : default_k(cfg);
	uint8_t sr[H];
	shares_root(c, k, sr);
	weft_mpw_array(w, 4);
	weft_mpw_bin(w, c->cid, H);
	weft_mpw_bin(w, sr, H);
	weft_mpw_uint(w, k);
	weft_mpw_uint(w, c->len);
}

static void arg_drop(struct weft_mpw *w, int file)
{
	weft_mpw_array(w, 4);
	weft_mpw_bin(w, drop_id[file], H);
	weft_mpw_bin(w, owner->pk, H);
	weft_mpw_bin(w, nonces[file], WEFT_FILE_NONCE_LEN);
	weft_mpw_bin(w, drop_sig[file], WEFT_SIGNATURE_LEN);
}

/* One planned command: which node, in which phase, what. */
struct plan {
	uint8_t node, phase;
	uint8_t cmd;
	int8_t ch;          /* chunk, or -1 */
	uint8_t variant;    /* place, placed, drop: the file; mget: 1 = an unknown id; audit: count */
};

static const struct plan plans[] = {
	/* 0 ms: placements and the manifest */
	{1, 0, C_PLACE, CH_A, 0},
	{0, 0, C_PLACE, CH_B, 0},
	{2, 0, C_PLACE, CH_C, 1},
	{3, 0, C_MPUT, -1, 0},
	/* 100 ms: polls, fetches, a second file's reference, the manifest */
	{0, 1, C_PLACED, CH_B, 0},
	{0, 1, C_FETCH, CH_A, 0},
	{0, 1, C_FETCH, CH_C, 0},
	{0, 1, C_PLACE, CH_B, 1},
	{0, 1, C_MGET, -1, 0},
	{0, 1, C_MGET, -1, 1},
	{1, 1, C_FETCH, CH_B, 0},
	/* 200 ms: results, audits, repairs of one chunk */
	{0, 2, C_FETCHED, CH_A, 0},
	{0, 2, C_FETCHED, CH_C, 0},
	{0, 2, C_FETCHED, CH_B, 0},
	{0, 2, C_AUDIT, -1, 2},
	{0, 2, C_REPAIR, CH_A, 0},
	{2, 2, C_REPAIR, CH_A, 0},
	{1, 2, C_REPAIR, CH_B, 0},
	{3, 2, C_AUDIT, -1, 4},
	/* 300 ms: a sweep elsewhere, evidence */
	{2, 3, C_REPAIR, -1, 0},
	{0, 3, C_EVIDENCE, -1, 0},
	{0, 3, C_PLACED, CH_A, 0},
	{1, 3, C_REPAIR, CH_C, 0},
	/* 400 ms (script d: after the cut): again, now with node 0 */
	{0, 4, C_MGET, -1, 0},
	{0, 4, C_REPAIR, CH_A, 0},
	{0, 4, C_FETCH, CH_B, 0},
	{2, 4, C_REPAIR, CH_A, 0},
	{3, 4, C_REPAIR, CH_B, 0},
	{1, 4, C_REPAIR, CH_C, 0},
	{1, 4, C_REPAIR, -1, 0},
	/* 500 ms */
	{0, 5, C_FETCHED, CH_B, 0},
	{0, 5, C_AUDIT, -1, 2},
	{0, 5, C_BOGUS, -1, 0},
	{3, 5, C_DROP, -1, 0},
	/* 600 ms: file 0 is gone; node 0 puts its manifest again (node 1
	 * asks for it), then drops file 1 */
	{0, 6, C_MPUT, -1, 0},
	{0, 6, C_REPAIR, CH_A, 0},
	{0, 6, C_REPAIR, -1, 0},
	{0, 6, C_EVIDENCE, -1, 0},
	{2, 6, C_AUDIT, -1, 4},
	{0, 6, C_DROP, -1, 1},
	{1, 6, C_REPAIR, CH_B, 0},
	{1, 6, C_MGET, -1, 0},
};

static bool seed_command(unsigned int cfg, uint32_t node, unsigned int phase, unsigned int k, unsigned int *what,
			 struct weft_mpw *w)
{
	const struct plan *p = NULL;
	for (size_t i = 0, seen = 0; i < sizeof(plans) / sizeof(plans[0]) && p == NULL; i++)
		if (plans[i].node == node && plans[i].phase == phase && seen++ == k)
			p = &plans[i];
	if (p == NULL)
		return false;
	*what = p->cmd;
	switch (p->cmd) {
	case C_PLACE:
		arg_place(w, p->ch, p->variant);
		break;
	case C_PLACED:
		weft_mpw_array(w, 2);
		weft_mpw_bin(w, chunks[p->ch].cid, H);
		weft_mpw_bin(w, tags[p->variant], H);
		break;
	case C_FETCHED:
		weft_mpw_bin(w, chunks[p->ch].cid, H);
		break;
	case C_FETCH:
		arg_fetch(w, cfg, p->ch);
		break;
	case C_MPUT:
		weft_mpw_bin(w, envelope, envlen);
		break;
	case C_MGET: {
		uint8_t unknown[H];
		memset(unknown, 0xee, H);
		weft_mpw_bin(w, p->variant ? unknown : manifest_id, H);
		break;
	}
	case C_DROP:
		arg_drop(w, p->variant);
		break;
	case C_AUDIT:
		weft_mpw_uint(w, p->variant);
		break;
	case C_REPAIR:
		if (p->ch < 0)
			weft_mpw_nil(w);
		else
			weft_mpw_bin(w, chunks[p->ch].cid, H);
		break;
	default:
		weft_mpw_nil(w);
		break;
	}
	return true;
}

/* Every script for the defaults; no restart script for the others, and
 * no node-1-only script for k3 (the corpus stays small). */
static const char *scripts_for(unsigned int cfg)
{
	return cfg == 0 ? "abcd" : cfg == 1 ? "abd" : "bd";
}

static const struct pf_target target = {
	.ops = &weft_store_service,
	.nconfigs = 3,
	.params = params,
	.msgpack_sends = true,
	.seed_horizon_us = 1500000,
	.seed_max = 48000,
	.scripts_for = scripts_for,
	.seed_cut_us = 350000,
	.share_service = true,
	.varied_random = true,
	.commands = commands,
	.seed_command = seed_command,
	.seed_phases = 7,
	.seed_phase_us = 100000,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "weft_crypto_init");
	setup();
	pf_initialize(&target);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pf_run(&target, data, size);
	return 0;
}
