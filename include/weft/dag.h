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

/* Gives the consensus state (after init) its application; app is copied.
 * Without one every transaction is admitted and its outcome is 0. */
void weft_dag_set_app(void *state, const struct weft_app *app);

/* Writes the consensus's info as key/value pairs (no map header) into w
 * and returns how many pairs: a parent composes them into its own map. */
uint32_t weft_dag_info_fields(void *state, struct weft_mpw *w);

#endif
