/* brb.h - what a parent protocol may ask of the Byzantine reliable
 * broadcast it hosts, beyond the proto.h ops: the operations every BRB of
 * the family built on protocols/brb/core.c (bracha, echo, coded,
 * amortized) implements.  The DAG hosts one to disseminate its vertices
 * and uses these instead of reaching into the child's state. */
#ifndef WEFT_BRB_H
#define WEFT_BRB_H

#include <stddef.h>
#include <stdint.h>

#include "weft/proto.h"

typedef int (*weft_brb_payload_fn)(void *ctx, uint32_t sender, uint64_t seq, const uint8_t **data, size_t *len);
typedef void (*weft_brb_digest_fn)(void *ctx, uint32_t sender, uint64_t seq, const uint8_t *data, size_t len,
				   uint8_t digest[32]);

struct weft_brb_ops {
	/* Stop waiting for sender's instances below `below`: the parent has
	 * what it needs from them another way (a range fetch, GC).  Our own
	 * next sequence moves up to `below` when sender is us. */
	void (*skip)(void *state, uint32_t sender, uint64_t below);
	/* The sequence number our next broadcast gets. */
	uint64_t (*next_seq)(void *state);
	/* How many of a sender's instances may be open at once. */
	uint32_t (*window)(void *state);
	/* The parent stores every payload it needs from the broadcast itself
	 * and answers for them: the BRB keeps no copy of its own and its
	 * catch-up (and READY repeats) asks get, which gives 0 with data
	 * valid until the next kv call, or WEFT_NOTFOUND. */
	void (*retain_from)(void *state, weft_brb_payload_fn get, void *ctx);
	/* The parent names payloads itself: every digest the BRB takes of a
	 * payload (what it votes, certifies and delivers, weft_delivery.digest)
	 * is fn's, which must be a function of the bytes alone that no two
	 * payloads share (collision resistant), as BLAKE2b-256, the default,
	 * is.  A parent that hashes what it parses anyway saves a pass. */
	void (*digest_with)(void *state, weft_brb_digest_fn fn, void *ctx);
};

/* The family operations of a BRB protocol's ops, or NULL when ops is not
 * one of the family (the parent then refuses it). */
const struct weft_brb_ops *weft_brb_family(const struct weft_proto_ops *ops);

/* The instance (sender, seq) a message of the family is about, and the
 * message's type (0: the sender's first message, SEND, PROPOSE or VAL, in
 * every protocol of the family): 0 for an instance's own messages and the
 * catch-up's DELIVERED, WEFT_EDECODE for anything else (the catch-up's
 * STATUS, which is about every sender, or bytes that are no message of
 * the family).  For a Byzantine strategy of a parent that treats the
 * messages of its own broadcasts apart (protocols/dag/adversary.c). */
int weft_brb_message_instance(const uint8_t *msg, size_t len, uint32_t *sender, uint64_t *seq, uint64_t *type);

#endif
