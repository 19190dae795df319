/* tests/fuzz/merkle_proof.c - libFuzzer target for the chunk store's Merkle
 * proof verification (storage/merkle.c, weft/merkle.h), the check a keyless
 * node runs on every audit answer and every share a peer serves.
 *
 * Input: a header of 12 bytes, then material.
 *   byte 0      n - 1 (mod 48): leaves of a digest-list tree
 *   byte 1      index of the honest proof (mod n)
 *   byte 2      mutation (mod 8): 0 none, 1 flip a path bit, 2 flip a leaf
 *               bit, 3 index := v, 4 count := v, 5 path length := v mod 80
 *               (extra hashes from the material), 6 a path, length, index
 *               and count all from the input, 7 flip one bit of the count
 *   byte 3      bit position p
 *   bytes 4-11  v, a little-endian u64
 *   material    the n digests (32 bytes each, zero past the end), and the
 *               bytes of forged paths
 * The honest proof of (index, n) must verify.  Whenever the candidate
 * (root, count, index, leaf, path) is accepted, its leaf and path must be
 * the honest leaf and proof of some leaf j of the tree: nothing the prover
 * controls makes anything else pass, short of a BLAKE2b collision.  Then,
 * on the material repeated to v mod 12 * 4096 + 1 bytes, the streamed root
 * fed in pieces the input chooses equals the one-shot root, and block p's
 * proof verifies as a block.  abort()s on any violation.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes one seed per mutation and exits.
 * Build and run: make fuzz-merkle_proof (tests/fuzz/README). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/merkle.h"

#define HL WEFT_MERKLE_HASH
#define MAXN 48
#define HDR 12
#define MAXBYTES (12 * WEFT_MERKLE_BLOCK + 1)

typedef uint8_t hash_t[HL];

static void check(int cond, const char *what)
{
	pf_check(cond, what);
}

/* Whether (leaf, path, plen) is the honest leaf and proof of some j < n. */
static bool honest_somewhere(const hash_t *d, size_t n, const uint8_t leaf[HL], const hash_t *path, unsigned plen)
{
	for (size_t j = 0; j < n; j++) {
		hash_t lj;
		uint8_t pj[WEFT_MERKLE_MAX_PATH][HL];
		unsigned lenj;
		weft_merkle_leaf_hash(lj, d[j], HL);
		if (memcmp(lj, leaf, HL) != 0)
			continue;
		check(weft_merkle_proof_digests(d, n, j, pj, &lenj) == 0, "proof of an existing leaf");
		if (lenj == plen && memcmp(pj, path, (size_t)plen * HL) == 0)
			return true;
	}
	return false;
}

static void proofs(const uint8_t *data, size_t size)
{
	static hash_t d[MAXN];
	static uint8_t path[80][HL];
	const uint8_t *mat = data + HDR;
	size_t mlen = size - HDR;
	size_t n = 1 + data[0] % MAXN;
	uint64_t v = 0;

	for (int b = 0; b < 8; b++)
		v |= (uint64_t)data[4 + b] << (8 * b);
	memset(d, 0, sizeof(d));
	memcpy(d, mat, mlen < n * HL ? mlen : n * HL);

	hash_t root, leaf;
	unsigned plen;
	uint64_t index = data[1] % n, count = n;
	weft_merkle_root_digests(root, (const hash_t *)d, n);
	check(weft_merkle_proof_digests((const hash_t *)d, n, index, path, &plen) == 0, "honest proof");
	check((int)plen == weft_merkle_path_len(n, index), "proof length");
	weft_merkle_leaf_hash(leaf, d[index], HL);
	check(weft_merkle_verify(root, count, index, leaf, (const hash_t *)path, plen), "honest proof verifies");
	check(weft_merkle_verify_block(root, count, index, d[index], HL, (const hash_t *)path, plen),
	      "honest block verifies");

	/* Forged material, after the digests. */
	const uint8_t *forge = mlen > n * HL ? mat + n * HL : NULL;
	size_t flen = forge ? mlen - n * HL : 0;
	unsigned p = data[3];
	switch (data[2] % 8) {
	case 0:
		break;
	case 1:
		if (plen > 0)
			path[(p / 8) % plen][p % HL] ^= (uint8_t)(1 << p % 8);
		break;
	case 2:
		leaf[(p / 8) % HL] ^= (uint8_t)(1 << p % 8);
		break;
	case 3:
		index = v;
		break;
	case 4:
		count = v;
		break;
	case 5: {
		unsigned want = (unsigned)(v % 80);
		for (unsigned k = plen; k < want; k++)
			for (size_t b = 0; b < HL; b++)
				path[k][b] = flen ? forge[(k * HL + b) % flen] : (uint8_t)k;
		plen = want;
		break;
	}
	case 6:
		plen = (unsigned)(v % 70);
		for (unsigned k = 0; k < plen; k++)
			for (size_t b = 0; b < HL; b++)
				path[k][b] = flen ? forge[(k * HL + b) % flen] : 0;
		index = v >> 8 & 0xff;
		count = v >> 16;
		break;
	case 7:
		count ^= (uint64_t)1 << (p % 64);
		break;
	}
	bool accepted = weft_merkle_verify(root, count, index, leaf, (const hash_t *)path, plen);
	if (data[2] % 8 == 0)
		check(accepted, "the unchanged proof verifies");
	if (accepted) {
		check(index < count && (int)plen == weft_merkle_path_len(count, index), "accepted within bounds");
		check(honest_somewhere((const hash_t *)d, n, leaf, (const hash_t *)path, plen),
		      "an accepted proof is an honest one");
	}
}

static void streaming(const uint8_t *data, size_t size)
{
	static uint8_t buf[MAXBYTES];
	const uint8_t *mat = data + HDR;
	size_t mlen = size - HDR;
	uint64_t v = 0;

	for (int b = 0; b < 8; b++)
		v |= (uint64_t)data[4 + b] << (8 * b);
	size_t len = (size_t)(v % MAXBYTES);
	for (size_t i = 0; i < len; i++)
		buf[i] = mlen ? mat[i % mlen] : (uint8_t)i;

	hash_t one, streamed;
	uint64_t n = weft_merkle_root(one, buf, len);
	struct weft_merkle m;
	weft_merkle_init(&m);
	size_t off = 0, k = 0;
	while (off < len) {
		/* Piece sizes from the input: a byte scaled to 0..8191. */
		size_t piece = mlen ? (size_t)mat[k % mlen] * 32 + k % 7 : 4096;
		k++;
		if (piece > len - off)
			piece = len - off;
		weft_merkle_update(&m, buf + off, piece);
		off += piece;
	}
	check(weft_merkle_final(&m, streamed) == n && n == weft_merkle_blocks(len), "block counts");
	check(memcmp(one, streamed, HL) == 0, "streamed root = one-shot root");
	if (n == 0)
		return;

	uint8_t path[WEFT_MERKLE_MAX_PATH][HL];
	unsigned plen;
	uint64_t i = data[3] % n;
	size_t blen = i + 1 < n ? WEFT_MERKLE_BLOCK : len - (size_t)i * WEFT_MERKLE_BLOCK;
	check(weft_merkle_proof(buf, len, i, path, &plen) == 0, "block proof");
	check(weft_merkle_verify_block(one, n, i, buf + i * WEFT_MERKLE_BLOCK, blen, (const hash_t *)path, plen),
	      "block proof verifies");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	proofs(data, size);
	streaming(data, size);
	return 0;
}

static void write_seeds(const char *dir)
{
	uint8_t seed[HDR + 10 * HL + 64];
	for (int mode = 0; mode < 8; mode++) {
		char name[32];
		for (size_t i = 0; i < sizeof(seed); i++)
			seed[i] = (uint8_t)(i * 37 + mode);
		seed[0] = 9;                /* 10 leaves */
		seed[1] = (uint8_t)(mode + 1);
		seed[2] = (uint8_t)mode;
		seed[3] = (uint8_t)(mode * 29);
		memset(seed + 4, 0, 8);
		seed[4] = (uint8_t)(mode == 5 ? 5 : 3 + mode);
		seed[5] = (uint8_t)(mode == 6 ? 0 : 0x9c); /* about 40 KiB of bytes */
		snprintf(name, sizeof(name), "mode%d", mode);
		pf_write_file(dir, name, seed, sizeof(seed));
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "crypto init");
	if (getenv("WEFT_FUZZ_SEEDS"))
		write_seeds(getenv("WEFT_FUZZ_SEEDS"));
	return 0;
}
