/* secure.h - the peer secure channel, sans-IO: handshake and record layer.
 *
 * Mutual authentication against the committee's Ed25519 keys, an X25519
 * ephemeral exchange (forward secrecy), the handshake transcript signed by
 * both static keys, then ChaCha20-Poly1305 (IETF) with one key and one
 * 64-bit counter per direction.  The counter is the nonce and is never sent,
 * so a tampered, replayed, reordered, dropped or reflected record fails
 * authentication and the link must be dropped.  There is no plaintext mode.
 *
 * Wire format.  Every unit on the wire is a record:
 *     u32 length (big-endian) || body[length]
 * During the handshake bodies are plaintext msgpack; afterwards each body is
 * ciphertext || 16-byte tag, with the 4 length bytes as associated data.
 *
 *   1. initiator -> responder  HELLO  [1, 0, "weft", pk_i, e_i, expected_pk_r]
 *   2. responder -> initiator  REPLY  [1, 1, pk_r, e_r, sig_r]
 *        sig_r = Ed25519_sign(sk_r, "weft-sc-r" || H)
 *   3. initiator -> responder  FINISH [1, 2, sig_i]
 *        sig_i = Ed25519_sign(sk_i, "weft-sc-i" || H)
 *   H = BLAKE2b-256(HELLO body || pk_r || e_r): both sides sign the same
 *   transcript, bound to both static and both ephemeral keys.
 *   Session keys: crypto_kx (X25519 + BLAKE2b) over the ephemeral keys, then
 *   each key is hashed with H so it is bound to the transcript.
 *
 * The responder learns the initiator's key from HELLO and asks its
 * peer_check callback whether that key is a committee member; the initiator
 * only accepts the responder key it expected.  Handshake records are at
 * most 512 bytes; anything else is malformed.
 *
 * Errors are sticky: after any failure caused by the link (malformed or
 * refused input, a bad signature or tag) the keys are wiped and every
 * further call returns the same error.  Bad arguments to weft_sc_new give a
 * channel already failed with WEFT_EINVAL.  weft_sc_peer_pk is set as soon
 * as a well-formed HELLO or REPLY is read (so a refusal can name the key)
 * but is only authenticated once the channel is established. */
#ifndef WEFT_SECURE_H
#define WEFT_SECURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"
#include "weft/mp.h"

#define WEFT_SC_HEADER 4             /* record length prefix */
#define WEFT_SC_TAG 16               /* AEAD tag */
#define WEFT_SC_MAX_HANDSHAKE 512    /* largest handshake record body */

enum weft_sc_role {
	WEFT_SC_INITIATOR,
	WEFT_SC_RESPONDER,
};

/* Returns the node index of a committee member's key, or -1. */
typedef int (*weft_sc_peer_check_fn)(void *ctx, const uint8_t pk[WEFT_PK_LEN]);

struct weft_sc;

/* A new channel end.  self must outlive it.  The initiator names the key it
 * expects (expected_pk); the responder passes NULL and a peer_check.
 * Never NULL; free with weft_sc_free (wipes the keys). */
struct weft_sc *weft_sc_new(enum weft_sc_role role, const struct weft_identity *self,
			    const uint8_t *expected_pk, weft_sc_peer_check_fn peer_check, void *ctx);
void weft_sc_free(struct weft_sc *sc);

/* Initiator: appends the HELLO record to out. */
int weft_sc_start(struct weft_sc *sc, struct weft_mpw *out);

/* Feeds received bytes during the handshake.  Consumes at most one record
 * (sets *consumed, 0 when the record is incomplete) and may append the
 * answer to out.  Returns 0 (go on), 1 (established: records may flow, and
 * out may hold the last handshake record to send), or an error:
 * WEFT_EPROTO malformed or unexpected, WEFT_ETOOBIG record too large,
 * WEFT_EPERM peer key not in the committee (or not the expected one),
 * WEFT_ECRYPTO bad signature. */
int weft_sc_handshake(struct weft_sc *sc, const uint8_t *in, size_t len, size_t *consumed, struct weft_mpw *out);

bool weft_sc_established(const struct weft_sc *sc);
/* The peer's static key (valid once HELLO/REPLY was read) and node index
 * (from peer_check, on either side when one was given; else -1). */
const uint8_t *weft_sc_peer_pk(const struct weft_sc *sc);
int weft_sc_peer_index(const struct weft_sc *sc);

/* Appends one encrypted record holding plain[0..len) to out (plain must
 * not point into out: its buffer may move).  0, or
 * WEFT_ETOOBIG when len exceeds UINT32_MAX - tag, WEFT_ESTATE before the
 * handshake ended or after the send counter is exhausted. */
int weft_sc_seal(struct weft_sc *sc, const void *plain, size_t len, struct weft_mpw *out);

/* Length of the record starting at in: 0 and *body_len set once the 4-byte
 * header is there, WEFT_EAGAIN before; WEFT_ETOOBIG when the body would be
 * longer than max_body (decided from the header alone). */
int weft_sc_record_len(const uint8_t *in, size_t avail, size_t max_body, size_t *body_len);

/* Decrypts the complete record at in (header + body, as sized by
 * weft_sc_record_len) into plain (room for body_len - WEFT_SC_TAG bytes;
 * plain may be in + WEFT_SC_HEADER, decrypting in place); sets *plain_len
 * (0 on failure).  WEFT_ECRYPTO on any authentication failure (tamper,
 * replay, reorder, reflection, truncation): the link must be dropped. */
int weft_sc_open(struct weft_sc *sc, const uint8_t *in, size_t record_len, uint8_t *plain, size_t *plain_len);

#endif
