/* dag.h - weft's DAG consensus as a component (protocols/dag): the pure
 * ordering protocol, which the node stack (protocols/node) hosts and feeds
 * to its application.  docs/protocols/sparse-dag.md explains the protocol.
 *
 * The consensus orders opaque transactions; it learns nothing of what they
 * mean except through the struct weft_app it is given. */
#ifndef WEFT_DAG_H
#define WEFT_DAG_H

#include <stdint.h>

#include "weft/app.h"
#include "weft/mp.h"
#include "weft/proto.h"

/* The consensus ops (not in the registry: run it through the node stack). */
extern const struct weft_proto_ops weft_dag_consensus;

/* The RPC methods the consensus answers (tx.submit, tx.submit_batch,
 * tx.status, tx.subscribe, dag.info): a stack lists them in its
 * method_tables. */
extern const struct weft_proto_method weft_dag_methods[];

/* The consensus's Byzantine strategies (protocols/dag/adversary.c), for
 * weft-sim's adversary fault and weftd --byzantine NAME, as X(name, help):
 * the consensus registers them and the node stack (protocols/node) the same
 * names, each running the consensus strategy inside an honest ledger.
 * Their parameters are the fault's params (docs/faults.md). */
#define WEFT_DAG_STRATEGIES(X)                                                                                    \
	X(bad_refs, "references chosen to hide the previous anchor's voters: the fewest validation allows, "   \
		    "non-voters first, never its own or the anchor unless forced (hide: all, anchors)") \
	X(withhold, "its vertices' broadcasts reach an audience at once (default: the first other nodes that "  \
		    "make an echo quorum with it), the others release_ms later; rounds: every, withhold, skip, bad_refs") \
	X(equivocate_refs, "two vertices a round, through two BRB instances: the honest one to all but an "       \
			   "audience (default: the upper half), one with bad_refs references and another batch to it") \
	X(copy_txs, "its vertices also carry up to max (default 64) transactions of other authors' vertices of "  \
		    "the last two rounds not ordered yet")                                                        \
	X(lying_sync, "STATUS claims rounds far ahead or behind; RANGE answers omit vertices, name wrong digests, " \
		      "garble or swap bytes or leave the range asked (status, range: one lie; default: each in turn)") \
	X(brb, "the hosted BRB runs its own Byzantine strategy brb (default: the first the BRB registers)")

/* Gives the consensus state (after init) its application; app is copied.
 * Without one every transaction is admitted and its outcome is 0. */
void weft_dag_set_app(void *state, const struct weft_app *app);

/* Writes the consensus's info as key/value pairs (no map header) into w
 * and returns how many pairs: a parent composes them into its own map. */
uint32_t weft_dag_info_fields(void *state, struct weft_mpw *w);

#endif
