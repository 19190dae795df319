/* node.c - the node stack: the protocol weftd and weft-sim host for a
 * committee that orders transactions.  It composes the DAG consensus
 * (protocols/dag, which hosts its BRB) with the ledger application
 * (protocols/ledger): the consensus orders opaque transactions, asks the
 * ledger to admit each one (weft/app.h) and hands it every ordered
 * transaction in the step that ordered it; the ledger keeps its state in
 * the same kv, so one LMDB transaction holds both.
 *
 * Messages and timers are the consensus's own (the ledger sends nothing);
 * queries go to the ledger first (ledger.balance), then to the consensus
 * (tx.status); info is one map of both.  Unordered peer services run as
 * children on their own channels (weft_child_*), beside the consensus: the
 * storage service (protocols/store, weft/store_proto.h) whenever the host
 * offers a share store; the node's commands ("store.*") go to it.  On a directed
 * topology (params.topology) the consensus talks through the relay
 * (weft/relay.h), which carries what the graph does not connect.
 *
 * Registered as "node" and, for genesis files, as "dag". */
#include <stdlib.h>
#include <string.h>

#include "weft/dag.h"
#include "weft/err.h"
#include "weft/ledger.h"
#include "weft/proto.h"
#include "weft/relay.h"
#include "weft/store_proto.h"

/* The storage service's channel: its messages start with this byte, which
 * never starts a consensus message (a msgpack array) or a relay frame, and
 * prefixes its kv keys, which no consensus or ledger key starts with. */
#define STORE_CHANNEL 0xf5

struct node {
	const struct weft_proto_ops *consensus; /* weft_dag_consensus, or a strategy of it */
	void *dag;                              /* its state */
	struct weft_ledger ledger;
	bool ledger_up;
	struct weft_relay relay;                /* the consensus's env on a directed topology */
	struct weft_child store;                /* the storage service, when the host has a share store */
	bool store_up;
};

static void store_deliver(void *ctx, const struct weft_delivery *d)
{
	(void)ctx, (void)d; /* the storage service delivers nothing */
}

static int init_with(struct node *s, const struct weft_proto_ops *consensus, const struct weft_proto_ops *store,
		     struct weft_env *env, const uint8_t *params, size_t plen)
{
	int rc = weft_relay_init(&s->relay, env, params, plen);
	if (rc != 0)
		return rc;
	s->consensus = consensus;
	s->dag = calloc(1, consensus->state_size);
	if (s->dag == NULL)
		abort();
	rc = consensus->init(s->dag, weft_relay_env(&s->relay), params, plen);
	if (rc == 0)
		rc = weft_ledger_init(&s->ledger, env, params, plen);
	if (rc != 0)
		return rc;
	s->ledger_up = true;
	struct weft_app app;
	weft_ledger_app(&s->ledger, &app);
	weft_dag_set_app(s->dag, &app);
	if (env->ops->service && env->ops->service(env, WEFT_SHARE_SERVICE)) {
		rc = weft_child_init(&s->store, env, STORE_CHANNEL, store, params, plen, store_deliver, s);
		s->store_up = rc == 0;
	}
	return rc;
}

static int node_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return init_with(state, &weft_dag_consensus, &weft_store_service, env, params, plen);
}

static int node_start(void *state)
{
	struct node *s = state;
	int rc = s->consensus->start ? s->consensus->start(s->dag) : 0;
	if (rc == 0 && s->store_up)
		rc = weft_child_start(&s->store);
	return rc;
}

static int node_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct node *s = state;
	if (len > 0 && msg[0] == STORE_CHANNEL)
		return s->store_up ? weft_child_on_message(&s->store, from, msg, len) : WEFT_EUNSUPPORTED;
	return weft_relay_on_message(&s->relay, from, msg, len, s->consensus->on_message, s->dag);
}

static void node_on_timer(void *state, uint64_t id)
{
	struct node *s = state;
	if (s->store_up && weft_child_on_timer(&s->store, id))
		return;
	if (s->consensus->on_timer)
		s->consensus->on_timer(s->dag, id);
}

static int node_command(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct node *s = state;
	return s->store_up ? weft_child_command(&s->store, what, arg, alen, reply) : WEFT_NOTFOUND;
}

static int node_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct node *s = state;
	return s->consensus->on_request(s->dag, req, len, reply);
}

static int node_query(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct node *s = state;
	int rc = weft_ledger_query(&s->ledger, what, arg, alen, reply);
	if (rc == WEFT_NOTFOUND && s->consensus->query)
		rc = s->consensus->query(s->dag, what, arg, alen, reply);
	return rc;
}

static void node_info(void *state, struct weft_mpw *w)
{
	struct node *s = state;
	struct weft_mpw fields;
	weft_mpw_init(&fields);
	uint32_t n = weft_dag_info_fields(s->dag, &fields);
	n += weft_ledger_info_fields(&s->ledger, &fields);
	n += weft_relay_info_fields(&s->relay, &fields);
	if (s->store_up && s->store.ops->info) {
		weft_mpw_str(&fields, "storage");
		s->store.ops->info(s->store.state, &fields);
		n++;
	}
	weft_mpw_map(w, n);
	weft_mpw_raw(w, fields.buf, fields.len);
	weft_mpw_free(&fields);
}

static void node_destroy(void *state)
{
	struct node *s = state;
	if (s->dag && s->consensus->destroy)
		s->consensus->destroy(s->dag);
	free(s->dag);
	if (s->ledger_up)
		weft_ledger_destroy(&s->ledger);
	weft_relay_destroy(&s->relay);
	if (s->store_up)
		weft_child_destroy(&s->store);
}

/* The consensus's Byzantine strategies, each run inside an honest-looking
 * node under the same name; and the storage service's, as store_NAME
 * beside an honest consensus. */
static int strategy_init(void *state, const char *name, struct weft_env *env, const uint8_t *params, size_t plen)
{
	const struct weft_proto_strategy *st = weft_proto_strategy_find(&weft_dag_consensus, name);
	if (st != NULL)
		return init_with(state, st->ops, &weft_store_service, env, params, plen);
	st = strncmp(name, "store_", 6) == 0 ? weft_proto_strategy_find(&weft_store_service, name + 6) : NULL;
	return st ? init_with(state, &weft_dag_consensus, st->ops, env, params, plen) : WEFT_EINVAL;
}

#define NODE_STORE_STRATEGIES(X)                                                                          \
	X(store_drop, "a storage holder that acknowledges shares and keeps few (adversary permille: how "   \
		      "many of a thousand it drops, default all)")                                        \
	X(store_corrupt, "a storage holder that serves shares with a flipped byte (permille of them)")     \
	X(store_lie, "a storage holder that answers challenges with a wrong block, correctly signed "       \
		     "(permille of them)")

#define NODE_STRATEGY_INIT(NAME, HELP)                                                               \
	static int NAME##_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen) \
	{                                                                                             \
		return strategy_init(state, #NAME, env, params, plen);                                 \
	}
WEFT_DAG_STRATEGIES(NODE_STRATEGY_INIT)
NODE_STORE_STRATEGIES(NODE_STRATEGY_INIT)

/* What the stack answers over RPC: its components' methods. */
static const struct weft_proto_method *const node_methods[] = {weft_dag_methods, weft_ledger_methods, NULL};

#define NODE_OPS(NAME, INIT)                                                                                      \
	{                                                                                                          \
		.abi = WEFT_PROTO_ABI, .name = NAME, .state_size = sizeof(struct node), .init = INIT,               \
		.start = node_start, .on_message = node_on_message, .on_timer = node_on_timer,                      \
		.on_request = node_on_request, .query = node_query, .command = node_command, .info = node_info,  \
		.destroy = node_destroy,                                                                         \
		.method_tables = node_methods,                                                                     \
	}

#define NODE_STRATEGY_OPS(NAME, HELP) \
	static const struct weft_proto_ops node_##NAME##_ops = NODE_OPS("node/" #NAME, NAME##_init);
WEFT_DAG_STRATEGIES(NODE_STRATEGY_OPS)
NODE_STORE_STRATEGIES(NODE_STRATEGY_OPS)

#define NODE_STRATEGY(NAME, HELP) {#NAME, HELP, &node_##NAME##_ops},
static const struct weft_proto_strategy node_strategies[] = {
	WEFT_DAG_STRATEGIES(NODE_STRATEGY) NODE_STORE_STRATEGIES(NODE_STRATEGY){NULL, NULL, NULL}};

const struct weft_proto_ops weft_proto_node = {
	.abi = WEFT_PROTO_ABI,
	.name = "node",
	.state_size = sizeof(struct node),
	.init = node_init,
	.start = node_start,
	.on_message = node_on_message,
	.on_timer = node_on_timer,
	.on_request = node_on_request,
	.query = node_query,
	.command = node_command,
	.info = node_info,
	.destroy = node_destroy,
	.strategies = node_strategies,
	.method_tables = node_methods,
};
