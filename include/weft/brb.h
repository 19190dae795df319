/* brb.h - what a parent protocol may ask of the Byzantine reliable
 * broadcast it hosts, beyond the proto.h ops: the operations every BRB of
 * the family built on protocols/brb/core.c (bracha, echo, coded,
 * amortized) implements.  The DAG hosts one to disseminate its vertices
 * and uses these instead of reaching into the child's state. */
#ifndef WEFT_BRB_H
#define WEFT_BRB_H

#include <stdint.h>

#include "weft/proto.h"

struct weft_brb_ops {
	/* Stop waiting for sender's instances below `below`: the parent has
	 * what it needs from them another way (a range fetch, GC).  Our own
	 * next sequence moves up to `below` when sender is us. */
	void (*skip)(void *state, uint32_t sender, uint64_t below);
	/* The sequence number our next broadcast gets. */
	uint64_t (*next_seq)(void *state);
	/* How many of a sender's instances may be open at once. */
	uint32_t (*window)(void *state);
};

/* The family operations of a BRB protocol's ops, or NULL when ops is not
 * one of the family (the parent then refuses it). */
const struct weft_brb_ops *weft_brb_family(const struct weft_proto_ops *ops);

#endif
