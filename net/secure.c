/* secure.c - the peer secure channel (see weft/secure.h): a three-message
 * mutually authenticated handshake over the committee's Ed25519 keys with
 * X25519 ephemerals, then a ChaCha20-Poly1305 (IETF) record layer with one
 * key and one implicit 64-bit counter per direction.
 *
 * It is sans-IO: bytes come in through weft_sc_handshake / weft_sc_open and
 * go out by being appended to a caller's writer.  Nothing here blocks,
 * logs or allocates per record (seal grows the caller's writer, which keeps
 * its capacity across weft_mpw_reset, and encrypts straight into it).
 *
 * Invariants the code keeps:
 *  - Secrets (the ephemeral X25519 secret, the raw kx keys, the two session
 *    keys) live only in one sodium_malloc'd block, wiped by sodium_free.  The
 *    ephemeral secret and the raw kx keys are wiped as soon as the session
 *    keys exist, so a later compromise of the process cannot recover the
 *    traffic of a finished session from them.
 *  - Failures are sticky.  The first handshake, open or seal error that
 *    concerns the link (malformed, refused, unauthenticated input; a counter
 *    running out) moves the channel to a failed state, wipes the keys, and
 *    every later weft_sc_handshake / weft_sc_seal / weft_sc_open returns that
 *    same error.  Caller mistakes that do not touch the link (sealing before
 *    the handshake ended, a plaintext too large to frame, calling start
 *    twice) return WEFT_ESTATE / WEFT_ETOOBIG and change nothing.
 *  - A record is accepted only when its tag verifies under the receive key
 *    and the next receive counter; the counter advances only on success
 *    (after a failure it does not matter: the channel is dead).
 *  - Handshake records are parsed with the bounded reader: exact array
 *    lengths, exact 32/64-byte binaries, version 1, magic "weft", no trailing
 *    bytes; anything else is WEFT_EPROTO, a declared length above
 *    WEFT_SC_MAX_HANDSHAKE is WEFT_ETOOBIG before the body arrives.
 *
 * Messages (all plaintext msgpack inside a record during the handshake):
 *   HELLO  [1, 0, "weft", pk_i, e_i, expected_pk_r]
 *   REPLY  [1, 1, pk_r, e_r, sig_r]     sig_r = sign(sk_r, "weft-sc-r" || H)
 *   FINISH [1, 2, sig_i]                sig_i = sign(sk_i, "weft-sc-i" || H)
 *   H = BLAKE2b-256(HELLO body || pk_r || e_r)
 * Session keys: crypto_kx over the ephemerals (initiator = client), then
 * each direction key = BLAKE2b-256(key = kx key, "weft-sc-key" || H).
 *
 * Pointers and ownership: weft_sc_new keeps self (and ctx) by reference and
 * copies expected_pk.  seal reads plain and appends to out; plain must not
 * point into out's buffer (it may move when out grows).  open writes to
 * plain, which may be exactly in + WEFT_SC_HEADER (decryption in place) or a
 * separate buffer, never another overlap. */
#include <limits.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "weft/bytes.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/mp.h"
#include "weft/secure.h"

#define SC_VERSION 1
#define SC_MAGIC "weft"
#define SC_MAGIC_LEN 4
#define SC_EPK_LEN crypto_kx_PUBLICKEYBYTES
#define SC_KEY_LEN crypto_aead_chacha20poly1305_ietf_KEYBYTES

enum sc_msg {
	SC_HELLO = 0,
	SC_REPLY = 1,
	SC_FINISH = 2,
};

enum sc_state {
	SC_I_IDLE,          /* initiator, before weft_sc_start */
	SC_I_WAIT_REPLY,    /* initiator, HELLO sent */
	SC_R_WAIT_HELLO,    /* responder, nothing read yet */
	SC_R_WAIT_FINISH,   /* responder, REPLY sent */
	SC_ESTABLISHED,
	SC_FAILED,          /* sc->err holds the reason */
};

/* Everything secret, in one guarded, locked allocation. */
struct sc_secrets {
	uint8_t esk[crypto_kx_SECRETKEYBYTES];  /* our ephemeral secret */
	uint8_t kx_rx[crypto_kx_SESSIONKEYBYTES];
	uint8_t kx_tx[crypto_kx_SESSIONKEYBYTES];
	uint8_t rx[SC_KEY_LEN];                 /* session keys */
	uint8_t tx[SC_KEY_LEN];
};

_Static_assert(crypto_kx_SESSIONKEYBYTES == SC_KEY_LEN, "kx keys are AEAD keys");
_Static_assert(crypto_aead_chacha20poly1305_ietf_ABYTES == WEFT_SC_TAG, "tag size");
_Static_assert(crypto_aead_chacha20poly1305_ietf_NPUBBYTES == 12, "IETF nonce size");
_Static_assert(crypto_sign_PUBLICKEYBYTES == WEFT_PK_LEN, "Ed25519 key size");
_Static_assert(crypto_sign_BYTES == WEFT_SIG_LEN, "Ed25519 signature size");

struct weft_sc {
	enum weft_sc_role role;
	enum sc_state state;
	int err;                            /* sticky error once SC_FAILED */
	const struct weft_identity *self;
	bool has_expected;
	uint8_t expected_pk[WEFT_PK_LEN];
	weft_sc_peer_check_fn peer_check;
	void *ctx;

	bool has_peer_pk;
	uint8_t peer_pk[WEFT_PK_LEN];
	int peer_index;

	uint8_t epk[SC_EPK_LEN];            /* our ephemeral public key */
	struct weft_hasher hello;           /* initiator: BLAKE2b over HELLO body */
	uint8_t h[WEFT_HASH_LEN];           /* transcript hash, once known */

	uint64_t tx_ctr;                    /* next counter to seal with */
	uint64_t rx_ctr;                    /* next counter expected */
	struct sc_secrets *sec;             /* NULL after a failure */
};

/* ---- small helpers -------------------------------------------------------- */

/* 4 zero bytes || little-endian counter. */
static inline void make_nonce(uint8_t n[12], uint64_t ctr)
{
	memset(n, 0, 4);
	weft_le64_put(n + 4, ctr);
}

/* Makes room for extra more bytes in w (the writer's buffer is malloc'd and
 * handed out for free(), see weft/mp.h, so realloc is its allocator).  Grows
 * by doubling, so a writer that is reset and reused stops allocating. */
static void mpw_reserve(struct weft_mpw *w, size_t extra)
{
	size_t need, cap;
	uint8_t *nb;

	if (extra <= w->cap - w->len)
		return;
	need = w->len + extra;
	if (need < w->len)
		abort();
	cap = w->cap ? w->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	nb = realloc(w->buf, cap);
	if (nb == NULL)
		abort();
	w->buf = nb;
	w->cap = cap;
}

/* Moves the channel to the failed state: wipes and frees the secrets and
 * remembers err, which every later call returns.  Returns err. */
static int sc_fail(struct weft_sc *sc, int err)
{
	sc->state = SC_FAILED;
	sc->err = err;
	sodium_free(sc->sec);
	sc->sec = NULL;
	return err;
}

/* Starts a handshake record in out: a length placeholder; returns its
 * offset for record_end. */
static size_t record_begin(struct weft_mpw *out)
{
	static const uint8_t zero[WEFT_SC_HEADER];
	size_t off = out->len;

	weft_mpw_raw(out, zero, sizeof(zero));
	return off;
}

static void record_end(struct weft_mpw *out, size_t off)
{
	weft_be32_put(out->buf + off, (uint32_t)(out->len - off - WEFT_SC_HEADER));
}

/* ---- key schedule --------------------------------------------------------- */

/* H = BLAKE2b-256(HELLO body || pk_r || e_r); h already holds the body. */
static void transcript_finish(struct weft_hasher *h, const uint8_t pk_r[WEFT_PK_LEN],
			      const uint8_t e_r[SC_EPK_LEN], uint8_t out[WEFT_HASH_LEN])
{
	weft_hasher_update(h, pk_r, WEFT_PK_LEN);
	weft_hasher_update(h, e_r, SC_EPK_LEN);
	weft_hasher_final(h, out);
}

/* Signed message: label || H. */
#define SC_LABEL_R "weft-sc-r"
#define SC_LABEL_I "weft-sc-i"
#define SC_LABEL_LEN 9
#define SC_LABEL_KEY "weft-sc-key"
#define SC_LABEL_KEY_LEN 11

static void signed_msg(uint8_t out[SC_LABEL_LEN + WEFT_HASH_LEN], const char *label,
		       const uint8_t h[WEFT_HASH_LEN])
{
	memcpy(out, label, SC_LABEL_LEN);
	memcpy(out + SC_LABEL_LEN, h, WEFT_HASH_LEN);
}

/* From the kx keys in sc->sec to the session keys bound to H; wipes the
 * ephemeral secret and the kx keys. */
static void derive_keys(struct weft_sc *sc, const uint8_t h[WEFT_HASH_LEN])
{
	uint8_t msg[SC_LABEL_KEY_LEN + WEFT_HASH_LEN];
	struct sc_secrets *s = sc->sec;

	memcpy(msg, SC_LABEL_KEY, SC_LABEL_KEY_LEN);
	memcpy(msg + SC_LABEL_KEY_LEN, h, WEFT_HASH_LEN);
	crypto_generichash(s->rx, sizeof(s->rx), msg, sizeof(msg), s->kx_rx, sizeof(s->kx_rx));
	crypto_generichash(s->tx, sizeof(s->tx), msg, sizeof(msg), s->kx_tx, sizeof(s->kx_tx));
	sodium_memzero(s->esk, sizeof(s->esk));
	sodium_memzero(s->kx_rx, sizeof(s->kx_rx));
	sodium_memzero(s->kx_tx, sizeof(s->kx_tx));
	sc->tx_ctr = 0;
	sc->rx_ctr = 0;
}

/* ---- lifecycle ------------------------------------------------------------ */

/* A channel built from invalid arguments (no self, an initiator without
 * expected_pk, a responder without peer_check) is returned in the failed
 * state with WEFT_EINVAL, so that "never NULL" holds and misuse is loud.
 * A responder given an expected_pk also requires the initiator to have it. */
struct weft_sc *weft_sc_new(enum weft_sc_role role, const struct weft_identity *self,
			    const uint8_t *expected_pk, weft_sc_peer_check_fn peer_check, void *ctx)
{
	struct weft_sc *sc = calloc(1, sizeof(*sc));
	bool valid = self != NULL && self->sk != NULL;

	if (sc == NULL)
		abort();
	sc->role = role;
	sc->self = self;
	sc->peer_check = peer_check;
	sc->ctx = ctx;
	sc->peer_index = -1;
	if (expected_pk != NULL) {
		sc->has_expected = true;
		memcpy(sc->expected_pk, expected_pk, WEFT_PK_LEN);
	}
	switch (role) {
	case WEFT_SC_INITIATOR:
		sc->state = SC_I_IDLE;
		valid = valid && expected_pk != NULL;
		break;
	case WEFT_SC_RESPONDER:
		sc->state = SC_R_WAIT_HELLO;
		valid = valid && peer_check != NULL;
		break;
	}
	if (role != WEFT_SC_INITIATOR && role != WEFT_SC_RESPONDER)
		valid = false;
	if (!valid) {
		sc->state = SC_FAILED;
		sc->err = WEFT_EINVAL;
		return sc;
	}
	sc->sec = sodium_malloc(sizeof(*sc->sec));
	if (sc->sec == NULL)
		abort();
	sodium_memzero(sc->sec, sizeof(*sc->sec));
	return sc;
}

void weft_sc_free(struct weft_sc *sc)
{
	if (sc == NULL)
		return;
	sodium_free(sc->sec); /* wipes; accepts NULL */
	sodium_memzero(sc, sizeof(*sc));
	free(sc);
}

bool weft_sc_established(const struct weft_sc *sc)
{
	return sc->state == SC_ESTABLISHED;
}

/* NULL until a well-formed HELLO (responder) or REPLY (initiator) has been
 * read.  The key is the peer's claim until weft_sc_established(): use it to
 * log a refusal, not to trust anyone. */
const uint8_t *weft_sc_peer_pk(const struct weft_sc *sc)
{
	return sc->has_peer_pk ? sc->peer_pk : NULL;
}

/* Responder: what peer_check answered for the key in HELLO (the initiator
 * has proven it holds that key only once established).  Initiator: what its
 * peer_check, if it was given one, answers for the accepted responder key;
 * -1 without one. */
int weft_sc_peer_index(const struct weft_sc *sc)
{
	return sc->peer_index;
}

/* ---- handshake ------------------------------------------------------------ */

int weft_sc_start(struct weft_sc *sc, struct weft_mpw *out)
{
	size_t off, body;

	if (sc->state == SC_FAILED)
		return sc->err;
	if (sc->role != WEFT_SC_INITIATOR || sc->state != SC_I_IDLE)
		return WEFT_ESTATE;
	crypto_kx_keypair(sc->epk, sc->sec->esk);

	off = record_begin(out);
	body = out->len;
	weft_mpw_array(out, 6);
	weft_mpw_uint(out, SC_VERSION);
	weft_mpw_uint(out, SC_HELLO);
	weft_mpw_strn(out, SC_MAGIC, SC_MAGIC_LEN);
	weft_mpw_bin(out, sc->self->pk, WEFT_PK_LEN);
	weft_mpw_bin(out, sc->epk, SC_EPK_LEN);
	weft_mpw_bin(out, sc->expected_pk, WEFT_PK_LEN);
	record_end(out, off);

	weft_hasher_init(&sc->hello);
	weft_hasher_update(&sc->hello, out->buf + body, out->len - body);
	sc->state = SC_I_WAIT_REPLY;
	return 0;
}

/* Reads [1, type, ...] and checks the array holds exactly count elements.
 * WEFT_EPROTO when it does not (or on any decode error). */
static int read_head(struct weft_mp_reader *r, uint32_t count, uint64_t type)
{
	uint32_t n = 0;
	uint64_t version = 0, t = UINT64_MAX;

	weft_mp_read_array(r, &n);
	weft_mp_read_uint(r, &version);
	weft_mp_read_uint(r, &t);
	if (r->err || n != count || version != SC_VERSION || t != type)
		return WEFT_EPROTO;
	return 0;
}

static int on_hello(struct weft_sc *sc, const uint8_t *body, size_t len, struct weft_mpw *out)
{
	struct weft_mp_reader r;
	const char *magic = NULL;
	uint32_t magic_len = 0;
	uint8_t pk_i[WEFT_PK_LEN], e_i[SC_EPK_LEN], want_r[WEFT_PK_LEN];
	uint8_t h[WEFT_HASH_LEN], msg[SC_LABEL_LEN + WEFT_HASH_LEN], sig[WEFT_SIG_LEN];
	struct weft_hasher hs;
	int idx;
	size_t off;

	weft_mp_reader_init(&r, body, len);
	if (read_head(&r, 6, SC_HELLO))
		return WEFT_EPROTO;
	weft_mp_read_str(&r, &magic, &magic_len);
	weft_mp_read_bin_fixed(&r, pk_i, sizeof(pk_i));
	weft_mp_read_bin_fixed(&r, e_i, sizeof(e_i));
	weft_mp_read_bin_fixed(&r, want_r, sizeof(want_r));
	if (r.err || weft_mp_remaining(&r) != 0 || magic_len != SC_MAGIC_LEN ||
	    memcmp(magic, SC_MAGIC, SC_MAGIC_LEN) != 0)
		return WEFT_EPROTO;

	memcpy(sc->peer_pk, pk_i, WEFT_PK_LEN);
	sc->has_peer_pk = true;
	/* The dialer wanted another node (a stale address book, or a relay). */
	if (sodium_memcmp(want_r, sc->self->pk, WEFT_PK_LEN) != 0)
		return WEFT_EPERM;
	if (sc->has_expected && sodium_memcmp(pk_i, sc->expected_pk, WEFT_PK_LEN) != 0)
		return WEFT_EPERM;
	idx = sc->peer_check(sc->ctx, pk_i);
	if (idx < 0)
		return WEFT_EPERM;
	sc->peer_index = idx;

	crypto_kx_keypair(sc->epk, sc->sec->esk);
	/* Fails when e_i is a low-order point (an all-zero shared secret). */
	if (crypto_kx_server_session_keys(sc->sec->kx_rx, sc->sec->kx_tx, sc->epk, sc->sec->esk, e_i) != 0)
		return WEFT_ECRYPTO;
	weft_hasher_init(&hs);
	weft_hasher_update(&hs, body, len);
	transcript_finish(&hs, sc->self->pk, sc->epk, h);
	derive_keys(sc, h);
	memcpy(sc->h, h, WEFT_HASH_LEN); /* for FINISH */

	signed_msg(msg, SC_LABEL_R, h);
	weft_sign(sc->self, sig, msg, sizeof(msg));
	off = record_begin(out);
	weft_mpw_array(out, 5);
	weft_mpw_uint(out, SC_VERSION);
	weft_mpw_uint(out, SC_REPLY);
	weft_mpw_bin(out, sc->self->pk, WEFT_PK_LEN);
	weft_mpw_bin(out, sc->epk, SC_EPK_LEN);
	weft_mpw_bin(out, sig, WEFT_SIG_LEN);
	record_end(out, off);
	sc->state = SC_R_WAIT_FINISH;
	return 0;
}

static int on_reply(struct weft_sc *sc, const uint8_t *body, size_t len, struct weft_mpw *out)
{
	struct weft_mp_reader r;
	uint8_t pk_r[WEFT_PK_LEN], e_r[SC_EPK_LEN], sig_r[WEFT_SIG_LEN];
	uint8_t h[WEFT_HASH_LEN], msg[SC_LABEL_LEN + WEFT_HASH_LEN], sig[WEFT_SIG_LEN];
	size_t off;

	weft_mp_reader_init(&r, body, len);
	if (read_head(&r, 5, SC_REPLY))
		return WEFT_EPROTO;
	weft_mp_read_bin_fixed(&r, pk_r, sizeof(pk_r));
	weft_mp_read_bin_fixed(&r, e_r, sizeof(e_r));
	weft_mp_read_bin_fixed(&r, sig_r, sizeof(sig_r));
	if (r.err || weft_mp_remaining(&r) != 0)
		return WEFT_EPROTO;

	memcpy(sc->peer_pk, pk_r, WEFT_PK_LEN);
	sc->has_peer_pk = true;
	if (sodium_memcmp(pk_r, sc->expected_pk, WEFT_PK_LEN) != 0)
		return WEFT_EPERM;
	transcript_finish(&sc->hello, pk_r, e_r, h);
	signed_msg(msg, SC_LABEL_R, h);
	if (weft_verify(pk_r, sig_r, msg, sizeof(msg)) != 0)
		return WEFT_ECRYPTO;
	if (crypto_kx_client_session_keys(sc->sec->kx_rx, sc->sec->kx_tx, sc->epk, sc->sec->esk, e_r) != 0)
		return WEFT_ECRYPTO;
	derive_keys(sc, h);
	memcpy(sc->h, h, WEFT_HASH_LEN);
	if (sc->peer_check != NULL) {
		int idx = sc->peer_check(sc->ctx, pk_r);

		sc->peer_index = idx < 0 ? -1 : idx;
	}

	signed_msg(msg, SC_LABEL_I, h);
	weft_sign(sc->self, sig, msg, sizeof(msg));
	off = record_begin(out);
	weft_mpw_array(out, 3);
	weft_mpw_uint(out, SC_VERSION);
	weft_mpw_uint(out, SC_FINISH);
	weft_mpw_bin(out, sig, WEFT_SIG_LEN);
	record_end(out, off);
	sc->state = SC_ESTABLISHED;
	return 1;
}

static int on_finish(struct weft_sc *sc, const uint8_t *body, size_t len)
{
	struct weft_mp_reader r;
	uint8_t sig_i[WEFT_SIG_LEN], msg[SC_LABEL_LEN + WEFT_HASH_LEN];

	weft_mp_reader_init(&r, body, len);
	if (read_head(&r, 3, SC_FINISH))
		return WEFT_EPROTO;
	weft_mp_read_bin_fixed(&r, sig_i, sizeof(sig_i));
	if (r.err || weft_mp_remaining(&r) != 0)
		return WEFT_EPROTO;
	signed_msg(msg, SC_LABEL_I, sc->h);
	if (weft_verify(sc->peer_pk, sig_i, msg, sizeof(msg)) != 0)
		return WEFT_ECRYPTO;
	sc->state = SC_ESTABLISHED;
	return 1;
}

int weft_sc_handshake(struct weft_sc *sc, const uint8_t *in, size_t len, size_t *consumed, struct weft_mpw *out)
{
	size_t body_len;
	int rc;

	*consumed = 0;
	switch (sc->state) {
	case SC_FAILED:
		return sc->err;
	case SC_I_IDLE:
	case SC_ESTABLISHED:
		return WEFT_ESTATE;
	case SC_I_WAIT_REPLY:
	case SC_R_WAIT_HELLO:
	case SC_R_WAIT_FINISH:
		break;
	}
	rc = weft_sc_record_len(in, len, WEFT_SC_MAX_HANDSHAKE, &body_len);
	if (rc == WEFT_EAGAIN)
		return 0;
	if (rc != 0)
		return sc_fail(sc, rc);
	if (body_len == 0)
		return sc_fail(sc, WEFT_EPROTO);
	if (len - WEFT_SC_HEADER < body_len)
		return 0;

	switch (sc->state) {
	case SC_I_WAIT_REPLY:
		rc = on_reply(sc, in + WEFT_SC_HEADER, body_len, out);
		break;
	case SC_R_WAIT_HELLO:
		rc = on_hello(sc, in + WEFT_SC_HEADER, body_len, out);
		break;
	case SC_R_WAIT_FINISH:
		rc = on_finish(sc, in + WEFT_SC_HEADER, body_len);
		break;
	case SC_I_IDLE:
	case SC_ESTABLISHED:
	case SC_FAILED:
		rc = WEFT_ESTATE; /* unreachable: filtered above */
		break;
	}
	if (rc < 0)
		return sc_fail(sc, rc);
	*consumed = WEFT_SC_HEADER + body_len;
	return rc;
}

/* ---- records -------------------------------------------------------------- */

int weft_sc_record_len(const uint8_t *in, size_t avail, size_t max_body, size_t *body_len)
{
	uint32_t n;

	if (avail < WEFT_SC_HEADER)
		return WEFT_EAGAIN;
	n = weft_be32_get(in);
	if (n > max_body)
		return WEFT_ETOOBIG;
	*body_len = n;
	return 0;
}

int weft_sc_seal(struct weft_sc *sc, const void *plain, size_t len, struct weft_mpw *out)
{
	uint8_t nonce[12];
	uint8_t *rec;

	if (sc->state == SC_FAILED)
		return sc->err;
	if (sc->state != SC_ESTABLISHED || sc->tx_ctr == UINT64_MAX)
		return WEFT_ESTATE;
	if (len > (size_t)UINT32_MAX - WEFT_SC_TAG)
		return WEFT_ETOOBIG;

	mpw_reserve(out, WEFT_SC_HEADER + len + WEFT_SC_TAG);
	rec = out->buf + out->len;
	weft_be32_put(rec, (uint32_t)(len + WEFT_SC_TAG));
	make_nonce(nonce, sc->tx_ctr);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(rec + WEFT_SC_HEADER, rec + WEFT_SC_HEADER + len,
							   NULL, plain, len, rec, WEFT_SC_HEADER, NULL,
							   nonce, sc->sec->tx);
	out->len += WEFT_SC_HEADER + len + WEFT_SC_TAG;
	sc->tx_ctr++;
	return 0;
}

int weft_sc_open(struct weft_sc *sc, const uint8_t *in, size_t record_len, uint8_t *plain, size_t *plain_len)
{
	uint8_t nonce[12];
	size_t clen;

	*plain_len = 0;
	if (sc->state == SC_FAILED)
		return sc->err;
	if (sc->state != SC_ESTABLISHED)
		return WEFT_ESTATE;
	/* A record shorter than a tag, or whose header disagrees with the
	 * bytes given, was truncated or tampered with. */
	if (record_len < WEFT_SC_HEADER + WEFT_SC_TAG ||
	    weft_be32_get(in) != record_len - WEFT_SC_HEADER)
		return sc_fail(sc, WEFT_ECRYPTO);
	/* The peer cannot have sealed with the last counter value. */
	if (sc->rx_ctr == UINT64_MAX)
		return sc_fail(sc, WEFT_ECRYPTO);

	clen = record_len - WEFT_SC_HEADER - WEFT_SC_TAG;
	make_nonce(nonce, sc->rx_ctr);
	if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(plain, NULL, in + WEFT_SC_HEADER, clen,
							       in + WEFT_SC_HEADER + clen, in, WEFT_SC_HEADER,
							       nonce, sc->sec->rx) != 0)
		return sc_fail(sc, WEFT_ECRYPTO);
	sc->rx_ctr++;
	*plain_len = clen;
	return 0;
}
