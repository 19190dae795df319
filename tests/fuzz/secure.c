/* tests/fuzz/secure.c - libFuzzer target for the peer secure channel.
 *
 * The first input byte picks a mode; the rest is the attacker's bytes:
 *   0  raw bytes to a fresh responder's weft_sc_handshake, record after
 *      record, as a dialer would send them;
 *   1  raw bytes to the responder's weft_sc_open after a scripted valid
 *      handshake (split with weft_sc_record_len like the transport does);
 *   2  a scripted handshake in which one record (HELLO, REPLY or FINISH,
 *      picked by the next byte) is XORed with the input: an end that still
 *      gets established must have the genuine peer and a working link, and
 *      the responder never finishes unless the initiator did;
 *   3  the input, cut into messages, sealed by the initiator and opened by
 *      the responder: every message must come back intact; with a flip
 *      byte, one bit of the sealed stream is flipped and every record from
 *      the flipped one on must fail.
 * Any result outside the documented codes, any output produced on refusal,
 * or a broken property abort()s; ASan/UBSan catch the rest.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes seeds for each mode (mode 0: a real
 * HELLO) and exits.  Build and run: make fuzz-secure (tests/fuzz/README). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/secure.h"

#define MAX_BODY (1u << 16)

static struct weft_identity *id_i, *id_r;
static uint8_t plain[MAX_BODY];

static void check(int cond)
{
	if (!cond)
		abort();
}

static int member(void *ctx, const uint8_t pk[WEFT_PK_LEN])
{
	if (memcmp(pk, id_i->pk, WEFT_PK_LEN) == 0)
		return 1;
	if (memcmp(pk, id_r->pk, WEFT_PK_LEN) == 0)
		return 0;
	return -1;
}

static void setup(void)
{
	uint8_t seed[WEFT_SEED_LEN];

	if (id_i)
		return;
	check(weft_crypto_init() == 0);
	memset(seed, 'i', sizeof(seed));
	id_i = weft_identity_from_seed(seed);
	memset(seed, 'r', sizeof(seed));
	id_r = weft_identity_from_seed(seed);
}

static bool is_refusal(int rc)
{
	return rc == WEFT_EPROTO || rc == WEFT_ETOOBIG || rc == WEFT_EPERM || rc == WEFT_ECRYPTO;
}

/* Feeds in to sc's handshake until it stops; returns the last result. */
static int drive(struct weft_sc *sc, const uint8_t *in, size_t len, size_t *off, struct weft_mpw *out)
{
	int rc;

	for (;;) {
		size_t used = 7;
		size_t before = out->len;

		rc = weft_sc_handshake(sc, in + *off, len - *off, &used, out);
		check(used <= len - *off);
		if (rc < 0) {
			check(is_refusal(rc) && used == 0 && out->len == before);
			check(weft_sc_handshake(sc, in, len, &used, out) == rc); /* sticky */
			return rc;
		}
		check(rc == 0 || rc == 1);
		*off += used;
		if (rc == 1 || used == 0)
			return rc;
	}
}

/* Runs a valid handshake; true when both ends are established. */
static bool handshake_ok(struct weft_sc *i, struct weft_sc *r)
{
	struct weft_mpw a, b;
	size_t used;
	bool good;

	weft_mpw_init(&a);
	weft_mpw_init(&b);
	good = weft_sc_start(i, &a) == 0 && weft_sc_handshake(r, a.buf, a.len, &used, &b) == 0;
	weft_mpw_reset(&a);
	good = good && weft_sc_handshake(i, b.buf, b.len, &used, &a) == 1 &&
	       weft_sc_handshake(r, a.buf, a.len, &used, &b) == 1;
	weft_mpw_free(&a);
	weft_mpw_free(&b);
	return good;
}

static void mode_handshake(const uint8_t *in, size_t len)
{
	struct weft_sc *r = weft_sc_new(WEFT_SC_RESPONDER, id_r, NULL, member, NULL);
	struct weft_mpw out;
	size_t off = 0;
	int rc;

	weft_mpw_init(&out);
	rc = drive(r, in, len, &off, &out);
	/* Only a forged FINISH could establish: never. */
	check(rc != 1);
	weft_mpw_free(&out);
	weft_sc_free(r);
}

static void mode_open(const uint8_t *in, size_t len)
{
	struct weft_sc *i = weft_sc_new(WEFT_SC_INITIATOR, id_i, id_r->pk, NULL, NULL);
	struct weft_sc *r = weft_sc_new(WEFT_SC_RESPONDER, id_r, NULL, member, NULL);
	struct weft_mpw w;
	size_t body, plen = 1;
	bool failed = false;
	int rc;

	check(handshake_ok(i, r));
	rc = weft_sc_record_len(in, len, MAX_BODY, &body);
	if (rc == 0 && len - WEFT_SC_HEADER >= body) {
		rc = weft_sc_open(r, in, WEFT_SC_HEADER + body, plain, &plen);
		/* Nobody but the initiator can make a record that opens. */
		check(rc == WEFT_ECRYPTO && plen == 0);
		check(weft_sc_open(r, in, WEFT_SC_HEADER + body, plain, &plen) == WEFT_ECRYPTO);
		failed = true;
	} else {
		check(rc == 0 || rc == WEFT_EAGAIN || rc == WEFT_ETOOBIG);
	}
	/* Also with the whole input as one record, whatever its header says. */
	rc = weft_sc_open(i, in, len, plain, &plen);
	check(rc == WEFT_ECRYPTO && plen == 0);
	/* Failure is sticky on r; a seal says so. */
	weft_mpw_init(&w);
	check(weft_sc_seal(r, "x", 1, &w) == (failed ? WEFT_ECRYPTO : 0));
	weft_mpw_free(&w);
	weft_sc_free(i);
	weft_sc_free(r);
}

/* Seals one message i -> r and back; both must arrive. */
static void check_link(struct weft_sc *i, struct weft_sc *r)
{
	struct weft_mpw w;
	size_t plen = 0;

	weft_mpw_init(&w);
	check(weft_sc_seal(i, "ping", 4, &w) == 0);
	check(weft_sc_open(r, w.buf, w.len, plain, &plen) == 0 && plen == 4 && memcmp(plain, "ping", 4) == 0);
	weft_mpw_reset(&w);
	check(weft_sc_seal(r, "pong", 4, &w) == 0);
	check(weft_sc_open(i, w.buf, w.len, plain, &plen) == 0 && plen == 4 && memcmp(plain, "pong", 4) == 0);
	weft_mpw_free(&w);
}

/* The security property: whatever was done to one handshake record, an
 * end that reaches "established" talks to the genuine peer, and the
 * responder never finishes without the initiator (only it can sign). */
static void mode_mutate(const uint8_t *in, size_t len)
{
	struct weft_sc *i = weft_sc_new(WEFT_SC_INITIATOR, id_i, id_r->pk, NULL, NULL);
	struct weft_sc *r = weft_sc_new(WEFT_SC_RESPONDER, id_r, NULL, member, NULL);
	struct weft_mpw a, b;
	int which;

	weft_mpw_init(&a);
	weft_mpw_init(&b);
	if (len == 0)
		goto out;
	which = in[0] % 3;
	in++;
	len--;
	check(weft_sc_start(i, &a) == 0);
	for (int step = 0; step < 3; step++) {
		struct weft_mpw *rec = step == 1 ? &b : &a;
		struct weft_sc *to = step == 1 ? i : r;
		struct weft_mpw *ans = step == 1 ? &a : &b;
		size_t used = 9;
		int rc;

		if (step == which) {
			/* XOR the input over the record, growing it if longer. */
			for (size_t k = 0; k < len; k++) {
				if (k >= rec->len)
					weft_mpw_raw(rec, "", 1);
				rec->buf[k] ^= in[k];
			}
		}
		weft_mpw_reset(ans);
		rc = weft_sc_handshake(to, rec->buf, rec->len, &used, ans);
		if (rc < 0) {
			check(is_refusal(rc) && used == 0 && ans->len == 0);
			break;
		}
		check(used <= rec->len);
		if (used == 0) {
			check(rc == 0 && ans->len == 0);
			break;
		}
		check(rc == (step == 0 ? 0 : 1));
	}
	if (weft_sc_established(i))
		check(memcmp(weft_sc_peer_pk(i), id_r->pk, WEFT_PK_LEN) == 0);
	if (weft_sc_established(r)) {
		check(weft_sc_established(i));
		check(memcmp(weft_sc_peer_pk(r), id_i->pk, WEFT_PK_LEN) == 0 && weft_sc_peer_index(r) == 1);
		check_link(i, r);
	}
out:
	weft_mpw_free(&a);
	weft_mpw_free(&b);
	weft_sc_free(i);
	weft_sc_free(r);
}

static void mode_roundtrip(const uint8_t *in, size_t len)
{
	struct weft_sc *i = weft_sc_new(WEFT_SC_INITIATOR, id_i, id_r->pk, NULL, NULL);
	struct weft_sc *r = weft_sc_new(WEFT_SC_RESPONDER, id_r, NULL, member, NULL);
	struct weft_mpw w;
	const uint8_t *src[256];
	size_t starts[256], lens[256], off = 0, flip = SIZE_MAX;
	int n = 0;

	check(handshake_ok(i, r));
	weft_mpw_init(&w);
	if (len >= 3 && (in[0] & 1)) {
		flip = (size_t)in[1] << 8 | in[2];
		in += 3;
		len -= 3;
	} else if (len) {
		in++;
		len--;
	}
	/* Messages: a length byte, then that many bytes (clipped). */
	while (off < len && n < 256) {
		size_t m = in[off++];

		if (m > len - off)
			m = len - off;
		starts[n] = w.len;
		lens[n] = m;
		src[n] = in + off;
		check(weft_sc_seal(i, in + off, m, &w) == 0);
		check(w.len - starts[n] == WEFT_SC_HEADER + m + WEFT_SC_TAG);
		off += m;
		n++;
	}
	if (flip != SIZE_MAX && w.len) {
		flip %= w.len * 8;
		w.buf[flip / 8] ^= (uint8_t)(1u << (flip % 8));
	} else {
		flip = SIZE_MAX;
	}
	for (int k = 0; k < n; k++) {
		size_t end = k + 1 < n ? starts[k + 1] : w.len;
		size_t plen = 0;
		int rc = weft_sc_open(r, w.buf + starts[k], end - starts[k], plain, &plen);

		if (flip != SIZE_MAX && flip / 8 < end) {
			check(rc == WEFT_ECRYPTO && plen == 0);
			continue;
		}
		check(rc == 0 && plen == lens[k] && (plen == 0 || memcmp(plain, src[k], plen) == 0));
	}
	weft_mpw_free(&w);
	weft_sc_free(i);
	weft_sc_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	if (size == 0)
		return 0;
	switch (data[0] % 4) {
	case 0:
		mode_handshake(data + 1, size - 1);
		break;
	case 1:
		mode_open(data + 1, size - 1);
		break;
	case 2:
		mode_mutate(data + 1, size - 1);
		break;
	case 3:
		mode_roundtrip(data + 1, size - 1);
		break;
	}
	return 0;
}

static void seed(const char *dir, const char *name, const void *head, size_t hlen, const void *body, size_t blen)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_raw(&w, head, hlen);
	weft_mpw_raw(&w, body, blen);
	pf_write_file(dir, name, w.buf, w.len);
	weft_mpw_free(&w);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("WEFT_FUZZ_SEEDS");
	if (dir == NULL)
		return 0;
	setup();
	struct weft_sc *i = weft_sc_new(WEFT_SC_INITIATOR, id_i, id_r->pk, NULL, NULL);
	struct weft_mpw hello;
	weft_mpw_init(&hello);
	check(weft_sc_start(i, &hello) == 0);
	seed(dir, "handshake-hello", "\x00", 1, hello.buf, hello.len);
	seed(dir, "open-record", "\x01", 1, "\x00\x00\x00\x14" "0123456789abcdefghij", 24);
	seed(dir, "mutate-hello", "\x02\x00", 2, "\x00\x00\x00\x00\x01", 5);
	seed(dir, "mutate-reply", "\x02\x01", 2, "\x00\x00\x00\x00\x00\x00\x00\x00\x80", 9);
	seed(dir, "mutate-finish", "\x02\x02", 2, "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04", 13);
	seed(dir, "roundtrip", "\x03\x00", 2, "\x05hello\x03" "abc\x00", 11);
	seed(dir, "roundtrip-flip", "\x03\x01\x00\x21", 4, "\x04ping\x04pong", 10);
	weft_mpw_free(&hello);
	weft_sc_free(i);
	exit(0);
}
