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
 * offers a share store; and the payment channel service (protocols/channel,
 * weft/channel.h) whenever the host offers wallets.  The node's commands go
 * to them by prefix ("store.*", "channel.*" and "asc.*"); it tells the channel service
 * every channel transaction the ledger executed and submits the ledger
 * transactions the service makes, once the step's own work is done.  On a directed
 * topology (params.topology) the consensus talks through the relay
 * (weft/relay.h), which carries what the graph does not connect.
 *
 * Registered as "node" and, for genesis files, as "dag". */
#include <stdlib.h>
#include <string.h>

#include "weft/channel.h"
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
/* The payment channel service's, likewise. */
#define CHANNEL_CHANNEL 0xf6

struct node {
	const struct weft_proto_ops *consensus; /* weft_dag_consensus, or a strategy of it */
	void *dag;                              /* its state */
	struct weft_ledger ledger;
	bool ledger_up;
	struct weft_relay relay;                /* the consensus's env on a directed topology */
	struct weft_child store;                /* the storage service, when the host has a share store */
	bool store_up;
	struct weft_child channel;              /* the payment channels, when the host has wallets */
	bool channel_up;
	struct weft_app ledger_app;             /* the ledger's own app, which node_app wraps */
	struct weft_mpw submits;                /* channel transactions to submit: [bin...] concatenated */
	size_t nsubmits;
};

/* The channel service's ledger transactions, held until the callback
 * that made them is done with the consensus (a ledger notification runs
 * inside the consensus's ordering). */
static void channel_deliver(void *ctx, const struct weft_delivery *d)
{
	struct node *s = ctx;
	weft_mpw_bin(&s->submits, d->data, d->len);
	s->nsubmits++;
}

static void flush_submits(struct node *s)
{
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, s->submits.buf, s->submits.len);
	for (size_t i = 0; i < s->nsubmits; i++) {
		const uint8_t *tx;
		uint32_t len;
		if (weft_mp_read_bin(&r, &tx, &len) != 0)
			break;
		struct weft_mpw why;
		weft_mpw_init(&why);
		int rc = s->consensus->on_request(s->dag, tx, len, &why);
		if (rc < 0)
			weft_env_log(s->channel.parent, WEFT_LOG_WARN, "node.channel_tx_refused", "rc=%d", rc);
		weft_mpw_free(&why);
	}
	s->nsubmits = 0;
	weft_mpw_reset(&s->submits);
}

/* The ledger, lent to the channel service for reads. */
static const void *channel_service(struct weft_env *env, const char *name)
{
	struct weft_child *c = (struct weft_child *)weft_env_wrapped(env);
	struct node *s = c->ctx;
	if (strcmp(name, WEFT_LEDGER_SERVICE) == 0)
		return &s->ledger;
	return c->parent->ops->service ? c->parent->ops->service(c->parent, name) : NULL;
}

static int node_app_admit(void *ctx, const uint8_t *tx, size_t len, const char **why)
{
	struct node *s = ctx;
	return s->ledger_app.admit(s->ledger_app.ctx, tx, len, why);
}

static bool prefixed(const char *str, uint32_t slen, const char *prefix)
{
	size_t n = strlen(prefix);
	return slen > n && memcmp(str, prefix, n) == 0;
}

/* True when tx looks like a channel transaction: an array whose first
 * element is a string starting "weft.channel." or "weft.asc." (the
 * service decodes it). */
static bool channel_tx(const uint8_t *tx, size_t len)
{
	struct weft_mp_reader r;
	uint32_t count, slen;
	const char *str;
	weft_mp_reader_init(&r, tx, len);
	return weft_mp_peek_type(&r) == WEFT_MP_ARRAY && weft_mp_read_array(&r, &count) == 0 &&
	       weft_mp_peek_type(&r) == WEFT_MP_STR && weft_mp_read_str(&r, &str, &slen) == 0 &&
	       (prefixed(str, slen, "weft.channel.") || prefixed(str, slen, "weft.asc."));
}

static int node_app_apply(void *ctx, uint64_t position, const uint8_t *tx, size_t len, const uint8_t digest[32],
			  uint8_t *outcome)
{
	struct node *s = ctx;
	int rc = s->ledger_app.apply(s->ledger_app.ctx, position, tx, len, digest, outcome);
	if (rc != 0 || !s->channel_up || !channel_tx(tx, len))
		return rc;
	struct weft_mpw arg;
	weft_mpw_init(&arg);
	weft_mpw_array(&arg, 2);
	weft_mpw_bin(&arg, tx, len);
	weft_mpw_uint(&arg, *outcome);
	rc = weft_child_command(&s->channel, "channel.ledger", arg.buf, arg.len, NULL);
	weft_mpw_free(&arg);
	return rc < 0 ? rc : 0;
}

static int node_app_end_batch(void *ctx)
{
	struct node *s = ctx;
	return s->ledger_app.end_batch(s->ledger_app.ctx);
}

static int node_app_reload(void *ctx)
{
	struct node *s = ctx;
	return s->ledger_app.reload(s->ledger_app.ctx);
}

static void store_deliver(void *ctx, const struct weft_delivery *d)
{
	(void)ctx, (void)d; /* the storage service delivers nothing */
}

static int init_with(struct node *s, const struct weft_proto_ops *consensus, const struct weft_proto_ops *store,
		     const struct weft_proto_ops *channel, struct weft_env *env, const uint8_t *params, size_t plen)
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
	weft_ledger_app(&s->ledger, &s->ledger_app);
	struct weft_app app = s->ledger_app;
	app.ctx = s;
	app.admit = node_app_admit;
	app.apply = node_app_apply;
	app.end_batch = node_app_end_batch;
	app.reload = node_app_reload;
	weft_dag_set_app(s->dag, &app);
	weft_mpw_init(&s->submits);
	if (env->ops->service && env->ops->service(env, WEFT_SHARE_SERVICE)) {
		rc = weft_child_init(&s->store, env, STORE_CHANNEL, store, params, plen, store_deliver, s);
		s->store_up = rc == 0;
	}
	if (rc == 0 && env->ops->service && env->ops->service(env, WEFT_WALLET_SERVICE)) {
		rc = weft_child_init(&s->channel, env, CHANNEL_CHANNEL, channel, params, plen, channel_deliver, s);
		s->channel_up = rc == 0;
		s->channel.wrap.ops.service = channel_service;
	}
	return rc;
}

static int node_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return init_with(state, &weft_dag_consensus, &weft_store_service, &weft_channel_service, env, params, plen);
}

static int node_start(void *state)
{
	struct node *s = state;
	int rc = s->consensus->start ? s->consensus->start(s->dag) : 0;
	if (rc == 0 && s->store_up)
		rc = weft_child_start(&s->store);
	if (rc == 0 && s->channel_up)
		rc = weft_child_start(&s->channel);
	flush_submits(s);
	return rc;
}

static int node_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct node *s = state;
	int rc;
	if (len > 0 && msg[0] == STORE_CHANNEL)
		return s->store_up ? weft_child_on_message(&s->store, from, msg, len) : WEFT_EUNSUPPORTED;
	if (len > 0 && msg[0] == CHANNEL_CHANNEL)
		rc = s->channel_up ? weft_child_on_message(&s->channel, from, msg, len) : WEFT_EUNSUPPORTED;
	else
		rc = weft_relay_on_message(&s->relay, from, msg, len, s->consensus->on_message, s->dag);
	flush_submits(s);
	return rc;
}

static void node_on_timer(void *state, uint64_t id)
{
	struct node *s = state;
	if (s->store_up && weft_child_on_timer(&s->store, id))
		return;
	if (!(s->channel_up && weft_child_on_timer(&s->channel, id)) && s->consensus->on_timer)
		s->consensus->on_timer(s->dag, id);
	flush_submits(s);
}

static int node_command(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct node *s = state;
	int rc = WEFT_NOTFOUND;
	if ((strncmp(what, "channel.", 8) == 0 || strncmp(what, "asc.", 4) == 0) && s->channel_up)
		rc = weft_child_command(&s->channel, what, arg, alen, reply);
	else if (strncmp(what, "store.", 6) == 0 && s->store_up)
		rc = weft_child_command(&s->store, what, arg, alen, reply);
	flush_submits(s);
	return rc;
}

static int node_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct node *s = state;
	int rc = s->consensus->on_request(s->dag, req, len, reply);
	flush_submits(s);
	return rc;
}

static void node_on_request_batch(void *state, size_t count, const uint8_t *const *reqs, const size_t *lens,
				  struct weft_mpw *replies, int *rcs)
{
	struct node *s = state;
	if (s->consensus->on_request_batch)
		s->consensus->on_request_batch(s->dag, count, reqs, lens, replies, rcs);
	else
		for (size_t i = 0; i < count; i++)
			rcs[i] = s->consensus->on_request(s->dag, reqs[i], lens[i], replies ? &replies[i] : NULL);
	flush_submits(s);
}

static int node_query(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	struct node *s = state;
	if (strncmp(what, "channel.", 8) == 0 || strncmp(what, "asc.", 4) == 0)
		return s->channel_up ? s->channel.ops->query(s->channel.state, what, arg, alen, reply) : WEFT_NOTFOUND;
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
	if (s->channel_up) {
		weft_mpw_str(&fields, "channels");
		s->channel.ops->info(s->channel.state, &fields);
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
	if (s->channel_up)
		weft_child_destroy(&s->channel);
	weft_mpw_free(&s->submits);
}

/* The consensus's Byzantine strategies, each run inside an honest-looking
 * node under the same name; and the storage service's and the channel
 * service's, as store_NAME and channel_NAME beside an honest consensus. */
static int strategy_init(void *state, const char *name, struct weft_env *env, const uint8_t *params, size_t plen)
{
	const struct weft_proto_ops *dag = &weft_dag_consensus, *store = &weft_store_service,
				    *channel = &weft_channel_service;
	const struct weft_proto_strategy *st = weft_proto_strategy_find(dag, name);
	if (st != NULL)
		return init_with(state, st->ops, store, channel, env, params, plen);
	if (strncmp(name, "store_", 6) == 0 && (st = weft_proto_strategy_find(store, name + 6)) != NULL)
		return init_with(state, dag, st->ops, channel, env, params, plen);
	if (strncmp(name, "channel_", 8) == 0 && (st = weft_proto_strategy_find(channel, name + 8)) != NULL)
		return init_with(state, dag, store, st->ops, env, params, plen);
	return WEFT_EINVAL;
}

#define NODE_STORE_STRATEGIES(X)                                                                          \
	X(store_drop, "a storage holder that acknowledges shares and keeps few (adversary permille: how "   \
		      "many of a thousand it drops, default all)")                                        \
	X(store_corrupt, "a storage holder that serves shares with a flipped byte (permille of them)")     \
	X(store_lie, "a storage holder that answers challenges with a wrong block, correctly signed "       \
		     "(permille of them)")
#define NODE_CHANNEL_STRATEGIES(X) \
	X(channel_stale, "a channel member whose unilateral close posts root 0, a stale root the others dispute") \
	X(channel_overspend, "a channel member that proposes payments beyond its balance")                     \
	X(channel_equivocate, "a channel member that pays two members with one seq, both finalized")            \
	X(channel_withhold, "a channel member that never unlocks its locks, and a service provider that never reveals t (it claims on the ledger)")

#define NODE_STRATEGY_INIT(NAME, HELP)                                                               \
	static int NAME##_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen) \
	{                                                                                             \
		return strategy_init(state, #NAME, env, params, plen);                                 \
	}
WEFT_DAG_STRATEGIES(NODE_STRATEGY_INIT)
NODE_STORE_STRATEGIES(NODE_STRATEGY_INIT)
NODE_CHANNEL_STRATEGIES(NODE_STRATEGY_INIT)

/* What the stack answers over RPC: its components' methods. */
static const struct weft_proto_method *const node_methods[] = {weft_dag_methods, weft_ledger_methods, NULL};

#define NODE_OPS(NAME, INIT)                                                                                      \
	{                                                                                                          \
		.abi = WEFT_PROTO_ABI, .name = NAME, .state_size = sizeof(struct node), .init = INIT,               \
		.start = node_start, .on_message = node_on_message, .on_timer = node_on_timer,                      \
		.on_request = node_on_request, .on_request_batch = node_on_request_batch, .query = node_query,      \
		.command = node_command, .info = node_info, .destroy = node_destroy,                               \
		.method_tables = node_methods,                                                                     \
	}

#define NODE_STRATEGY_OPS(NAME, HELP) \
	static const struct weft_proto_ops node_##NAME##_ops = NODE_OPS("node/" #NAME, NAME##_init);
WEFT_DAG_STRATEGIES(NODE_STRATEGY_OPS)
NODE_STORE_STRATEGIES(NODE_STRATEGY_OPS)
NODE_CHANNEL_STRATEGIES(NODE_STRATEGY_OPS)

#define NODE_STRATEGY(NAME, HELP) {#NAME, HELP, &node_##NAME##_ops},
static const struct weft_proto_strategy node_strategies[] = {
	WEFT_DAG_STRATEGIES(NODE_STRATEGY) NODE_STORE_STRATEGIES(NODE_STRATEGY)
		NODE_CHANNEL_STRATEGIES(NODE_STRATEGY){NULL, NULL, NULL}};

const struct weft_proto_ops weft_proto_node = {
	.abi = WEFT_PROTO_ABI,
	.name = "node",
	.state_size = sizeof(struct node),
	.init = node_init,
	.start = node_start,
	.on_message = node_on_message,
	.on_timer = node_on_timer,
	.on_request = node_on_request,
	.on_request_batch = node_on_request_batch,
	.query = node_query,
	.command = node_command,
	.info = node_info,
	.destroy = node_destroy,
	.strategies = node_strategies,
	.method_tables = node_methods,
};
