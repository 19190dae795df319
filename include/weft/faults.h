/* faults.h - the one vocabulary of faults (docs/faults.md): every word a
 * weft-sim scenario, the transport's fault rules (fault.set), weftd
 * --byzantine and weft-campaign's manifests use for the same thing, with
 * where each can run, and the one parser all four call, so a fault found in
 * the simulator is written the same way on a testnet and a failing
 * campaign's faults are a scenario's. */
#ifndef WEFT_FAULTS_H
#define WEFT_FAULTS_H

#include <stddef.h>

/* In this order the simulator's kinds come first, as its files list them
 * (the words added since at the end of them). */
enum weft_fault {
	WEFT_FAULT_CRASH,
	WEFT_FAULT_CRASH_RECOVER,
	WEFT_FAULT_OMISSION,   /* messages not sent or not received ("drop", "silent") */
	WEFT_FAULT_DELAY,
	WEFT_FAULT_PARTITION,
	WEFT_FAULT_CORRUPT,
	WEFT_FAULT_EQUIVOCATE,
	WEFT_FAULT_TWINS,
	WEFT_FAULT_ADVERSARY,  /* a protocol's own Byzantine strategy */
	WEFT_FAULT_LOSS,       /* a lossy link: messages dropped with a probability, the node stays correct */
	WEFT_FAULT_CUT,        /* an asymmetric partition: one direction of some links is cut */
	WEFT_FAULT_SKEW,       /* the node's clock runs fast or slow, or jumps ahead */
	WEFT_FAULT_DUPLICATE,
	WEFT_FAULT_REORDER,
	WEFT_FAULT_PAUSE,      /* the node's processes are frozen, then thawed (docker pause) */
	WEFT_FAULT_RESTART,    /* the node is stopped cleanly (SIGTERM), then started (docker restart) */
	WEFT_FAULT_DISCONNECT, /* the node's container leaves the network, then rejoins it */
};
#define WEFT_FAULT_COUNT (WEFT_FAULT_DISCONNECT + 1)

/* Where a fault runs (a bit set). */
#define WEFT_FAULT_IN_SIM 1u       /* a weft-sim scenario's "faults" (kind) */
#define WEFT_FAULT_IN_TRANSPORT 2u /* a transport rule (fault.set action) */
#define WEFT_FAULT_IN_DAEMON 4u    /* weftd --byzantine, a host behaviour */
#define WEFT_FAULT_IN_DOCKER 8u    /* a weft-campaign schedule step on a docker testnet */

/* Parses word[0..len) (a fault's name or an older alias) for the place
 * `where`: 0 and *out; WEFT_NOTFOUND when no fault has that name;
 * WEFT_EUNSUPPORTED when one has but it does not run there.  Either way
 * err (when given) gets a message naming the word and what runs there. */
int weft_fault_parse(const char *word, size_t len, unsigned where, enum weft_fault *out, char *err, size_t errlen);
/* The fault's name (static). */
const char *weft_fault_name(enum weft_fault f);
/* Writes "a, b, c": the names of the faults that run at where. */
void weft_fault_names(unsigned where, char *buf, size_t cap);

#endif
