/* proto.h - the protocol host interface: how a sans-IO protocol state
 * machine is described (struct weft_proto_ops) and everything it may do to
 * the world (struct weft_env).
 *
 * A protocol never calls the OS, the network, LMDB or the clock.  Two hosts
 * run the same protocol code: weftd (libevent, TCP, LMDB) and weft-sim
 * (virtual time, simulated network, fault strategies).
 *
 * Contract between a protocol and its host:
 *
 * - Callbacks (init, start, on_message, on_timer, on_request) run one at a
 *   time, never re-entrantly: a send or deliver inside a callback never
 *   calls back into the same protocol before the callback returns.
 *
 * - Persist before send.  kv writes made during one callback become durable
 *   atomically before any message sent in that callback leaves the node;
 *   the host enforces this (it holds the callback's sends until it has
 *   committed its writes), so a protocol only has to write its vote to kv
 *   in the same callback that sends it.  kv_get sees the callback's own
 *   writes.  After a crash the host calls init again; the protocol rebuilds
 *   its state from kv.
 *
 * - Node indices 0..n-1 name the committee; `self` is ours.  Every message
 *   from a peer is untrusted input: decode with the bounded reader
 *   (weft/mp.h), never assert, and return a negative code from on_message
 *   to have the host log and count the sender's misbehaviour.
 *
 * - Composition: a parent protocol hosts children through child envs made
 *   with weft_child_init() (protocols/compose.c).  A child's messages travel
 *   with a channel byte the parent strips; its timers and kv keys are
 *   namespaced by channel; its deliveries are an upcall into the parent.
 *
 * Messages are msgpack arrays [version, type, ...fields] by convention. */
#ifndef WEFT_PROTO_H
#define WEFT_PROTO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/log.h"
#include "weft/mp.h"

#define WEFT_PROTO_ABI 1
#define WEFT_SIGNATURE_LEN 64
#define WEFT_DIGEST_LEN 32

struct weft_env;

/* What a protocol hands to the layer above (deliver upcall). */
struct weft_delivery {
	uint32_t origin;      /* node the item comes from (broadcast sender, tx submitter) */
	uint64_t seq;         /* per-origin instance number (broadcast) or log position (ordering) */
	const uint8_t *data;  /* valid during the upcall only */
	size_t len;
	bool invalid;         /* an agreed "sender was inconsistent" verdict (no data) */
	const uint8_t *digest; /* data's BLAKE2b digest when the protocol has it; NULL: the host hashes */
};

/* kv_scan callback: return 0 to continue, 1 to stop, negative to abort. */
typedef int (*weft_env_scan_fn)(void *arg, const void *key, size_t klen, const void *val, size_t vlen);

struct weft_env_ops {
	/* Queue msg for node `to` (or every other node).  kind is a static
	 * string naming the message type, used only for accounting and traces.
	 * 0, or WEFT_EAGAIN when the link is over its high-water mark (the
	 * message was still queued; slow down). */
	int (*send)(struct weft_env *env, uint32_t to, const char *kind, const void *msg, size_t len);
	int (*multicast)(struct weft_env *env, const char *kind, const void *msg, size_t len);
	/* Microseconds since an arbitrary epoch; monotonic. */
	uint64_t (*now)(struct weft_env *env);
	/* One-shot timer; setting an id that is armed re-arms it. */
	int (*set_timer)(struct weft_env *env, uint64_t timer_id, uint64_t delay_us);
	void (*cancel_timer)(struct weft_env *env, uint64_t timer_id);
	void (*random)(struct weft_env *env, void *buf, size_t len);
	void (*deliver)(struct weft_env *env, const struct weft_delivery *d);
	/* Persistent store private to this protocol instance.  get: 0 with
	 * *val valid until the next kv call or the end of the callback, or
	 * WEFT_NOTFOUND.  scan: keys in [from, to) in byte order (to NULL:
	 * no upper bound). */
	int (*kv_get)(struct weft_env *env, const void *key, size_t klen, const void **val, size_t *vlen);
	int (*kv_put)(struct weft_env *env, const void *key, size_t klen, const void *val, size_t vlen);
	int (*kv_del)(struct weft_env *env, const void *key, size_t klen);
	int (*kv_scan)(struct weft_env *env, const void *from, size_t flen, const void *to, size_t tlen,
		       weft_env_scan_fn fn, void *arg);
	/* Our signature over msg; verification of node signer's signature:
	 * 0 or WEFT_ECRYPTO.  The simulator may swap in a cheap stand-in. */
	void (*sign)(struct weft_env *env, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN]);
	int (*verify)(struct weft_env *env, uint32_t signer, const void *msg, size_t len,
		      const uint8_t sig[WEFT_SIGNATURE_LEN]);
	void (*log)(struct weft_env *env, enum weft_log_level level, const char *event, const char *fmt,
		    va_list ap);
	/* Adds delta to the named counter (name is a static string). */
	void (*metric)(struct weft_env *env, const char *name, int64_t delta);
	/* A host service by name (e.g. WEFT_SHARE_SERVICE, weft/store_proto.h:
	 * bulk storage outside the step's transaction), or NULL when the host
	 * has none.  May be NULL itself.  Valid for the env's lifetime. */
	const void *(*service)(struct weft_env *env, const char *name);
};

struct weft_env {
	const struct weft_env_ops *ops;
	void *host;      /* the host's own data */
	uint32_t self;   /* our node index */
	uint32_t n;      /* committee size */
	uint32_t f;      /* tolerated Byzantine nodes: (n - 1) / 3 */
};

struct weft_proto_ops;

/* ---- RPC methods a protocol declares ----
 * weftd builds its RPC method table and `help` from its own methods and
 * those the running protocol stack declares, and answers each declared
 * method by its kind, through the host (so persist-before-send and the
 * store's pause apply):
 *   SUBMIT        one transaction: params `param` (bytes) or `param`_hex
 *                 (hex); precheck (if any) runs first; then on_request,
 *                 whose reply map is the result; on refusal on_request may
 *                 write one msgpack str into reply: the reason.
 *   SUBMIT_BATCH  `param` is an array of transactions, all handed to
 *                 on_request in one step: {accepted, results: [reply |
 *                 {error}]}.
 *   QUERY         `param` is a 32-byte key (64 hex digits): query(name,
 *                 bin(32)) answers.
 *   SUBSCRIBE     deliveries as proto.deliver notifications.
 *   INFO          the protocol's info map. */
enum weft_method_kind {
	WEFT_METHOD_SUBMIT,
	WEFT_METHOD_SUBMIT_BATCH,
	WEFT_METHOD_QUERY,
	WEFT_METHOD_SUBSCRIBE,
	WEFT_METHOD_INFO,
};

struct weft_proto_method {
	const char *name;        /* NULL ends a table */
	enum weft_method_kind kind;
	const char *param;       /* SUBMIT, SUBMIT_BATCH, QUERY: the parameter's name */
	const char *usage;       /* one line: "digest=HEX" */
	const char *help;        /* one line */
	/* SUBMIT: a stateless check before the step (NULL: none): 0, or a
	 * negative code with *why (static) saying why. */
	int (*precheck)(const uint8_t *tx, size_t len, const char **why);
};

/* A Byzantine variant of a protocol, for the simulator's adversary faults
 * and weftd --byzantine.  Its ops usually wrap the honest ops (through a
 * weft_env_wrap) rather than fork them.  init receives the protocol's
 * parameters with one more key, "adversary", holding the strategy's own. */
struct weft_proto_strategy {
	const char *name;
	const char *help;
	const struct weft_proto_ops *ops;
};

/* A protocol: a static const table, registered in protocols/registry.c. */
struct weft_proto_ops {
	uint32_t abi;              /* WEFT_PROTO_ABI */
	const char *name;
	size_t state_size;         /* the host allocates this many zeroed bytes */
	/* Required.  params: a msgpack map of protocol parameters, or NULL/0.
	 * Rebuilds state from kv when there is any (restart).  Keep env. */
	int (*init)(void *state, struct weft_env *env, const uint8_t *params, size_t plen);
	/* Optional: begin work (arm timers, announce). */
	int (*start)(void *state);
	/* Required: a message from node `from`.  Negative: rejected input. */
	int (*on_message)(void *state, uint32_t from, const uint8_t *msg, size_t len);
	/* Optional. */
	void (*on_timer)(void *state, uint64_t timer_id);
	/* Optional: an application request (e.g. a payload to broadcast).  The
	 * protocol may write one msgpack value into reply (reply may be NULL):
	 * a map when it accepts, a str with the reason when it refuses. */
	int (*on_request)(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply);
	/* Optional: requests handed over together (SUBMIT_BATCH) in one step,
	 * so that the protocol can store them as one record: rcs[i] and
	 * replies[i] (replies may be NULL) as on_request's.  When absent the
	 * host calls on_request for each. */
	void (*on_request_batch)(void *state, size_t count, const uint8_t *const *reqs, const size_t *lens,
				 struct weft_mpw *replies, int *rcs);
	/* Optional: a question from the application that changes nothing
	 * (e.g. "tx.status" with a digest), arg a msgpack value or NULL.
	 * Writes one msgpack value into reply: 0, WEFT_NOTFOUND when the
	 * protocol has no such question, or an error for a bad argument. */
	int (*query)(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply);
	/* Optional: a command from the node's own application layer (the
	 * daemon's storage jobs), named what, arg a msgpack value.  Runs as a
	 * step, like on_request (kv writes durable before its sends leave).
	 * Writes one msgpack value into reply: 0, WEFT_NOTFOUND when the
	 * protocol has no such command, or an error. */
	int (*command)(void *state, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply);
	/* Optional: one msgpack map describing the state (RPC, sim output). */
	void (*info)(void *state, struct weft_mpw *w);
	/* Optional: free what init allocated (not the state block itself). */
	void (*destroy)(void *state);
	/* Optional: Byzantine strategies, NULL-terminated by name. */
	const struct weft_proto_strategy *strategies;
	/* Optional: the RPC methods the protocol answers, as a NULL-terminated
	 * list of tables (a stack lists its components' tables). */
	const struct weft_proto_method *const *method_tables;
};

/* The strategy of ops called name, or NULL. */
const struct weft_proto_strategy *weft_proto_strategy_find(const struct weft_proto_ops *ops, const char *name);

/* protocols/registry.c: every protocol by name.  NULL when unknown. */
const struct weft_proto_ops *weft_proto_find(const char *name);
/* NULL-terminated list of all protocols. */
extern const struct weft_proto_ops *const weft_protocols[];

/* Convenience wrappers over env->ops. */
static inline int weft_env_send(struct weft_env *e, uint32_t to, const char *kind, const void *m, size_t len)
{
	return e->ops->send(e, to, kind, m, len);
}
static inline int weft_env_multicast(struct weft_env *e, const char *kind, const void *m, size_t len)
{
	return e->ops->multicast(e, kind, m, len);
}
static inline uint64_t weft_env_now(struct weft_env *e)
{
	return e->ops->now(e);
}
static inline void weft_env_metric(struct weft_env *e, const char *name, int64_t delta)
{
	e->ops->metric(e, name, delta);
}
void weft_env_log(struct weft_env *e, enum weft_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- parameters (protocols/params.c) ----
 * Look up one key of a msgpack map of protocol parameters (params may be
 * NULL).  0 and the value, WEFT_NOTFOUND when absent, WEFT_EINVAL when the
 * map is malformed or the value has another type.  Strings point into
 * params. */
int weft_params_uint(const uint8_t *params, size_t plen, const char *key, uint64_t *out);
int weft_params_str(const uint8_t *params, size_t plen, const char *key, const char **s, uint32_t *len);
/* The msgpack value of key, whatever its type (a map, a list): 0 with
 * *val pointing into params and its length in *vlen. */
int weft_params_value(const uint8_t *params, size_t plen, const char *key, const uint8_t **val, size_t *vlen);
/* True when the string parameter key equals value. */
bool weft_params_str_is(const uint8_t *params, size_t plen, const char *key, const char *value);
/* The parameters a Byzantine strategy's init receives: params (a map, or
 * NULL) with one more key, "adversary", holding adv (msgpack; NULL: an
 * empty map).  Returns a buffer the caller frees, its length in *len. */
uint8_t *weft_params_with_adversary(const uint8_t *params, size_t plen, const uint8_t *adv, size_t alen, size_t *len);
/* The same for any key: params with one more key holding val (one msgpack
 * value); the caller frees the buffer. */
uint8_t *weft_params_with(const uint8_t *params, size_t plen, const char *key, const uint8_t *val, size_t vlen,
			  size_t *len);

/* ---- env wrapping (protocols/compose.c) ----
 * A wrapper env forwards every op to an inner env; its owner overrides the
 * ops it wants in w->ops after weft_env_wrap_init (a Byzantine strategy
 * filtering sends, a child env adding a channel byte).  Inside an override,
 * weft_env_wrapped(env) returns the wrapper. */
struct weft_env_wrap {
	struct weft_env env;       /* what the wrapped code sees */
	struct weft_env_ops ops;
	struct weft_env *inner;
};

void weft_env_wrap_init(struct weft_env_wrap *w, struct weft_env *inner);
static inline struct weft_env_wrap *weft_env_wrapped(struct weft_env *env)
{
	return (struct weft_env_wrap *)((char *)env - offsetof(struct weft_env_wrap, env));
}

/* ---- composition (protocols/compose.c) ---- */

/* Channel tags 0..WEFT_CHILD_MAX_CHANNEL.  A child's timer ids must stay
 * below 2^56: the parent's timer id for it carries the channel in the top
 * byte, plus 1 so that a parent's own ids (top byte 0) never collide. */
#define WEFT_CHILD_MAX_CHANNEL 254

struct weft_child {
	struct weft_env_wrap wrap; /* what the child sees: wrap.env */
	struct weft_env *parent;
	uint8_t channel;
	const struct weft_proto_ops *ops;
	void *state;
	void (*on_deliver)(void *ctx, const struct weft_delivery *d);
	void *ctx;
	struct weft_mpw scratch;   /* channel byte + message, reused per send */
};

/* Allocates and initialises a child protocol hosted by parent on channel.
 * Its deliveries go to on_deliver(ctx, d). */
int weft_child_init(struct weft_child *c, struct weft_env *parent, uint8_t channel,
		    const struct weft_proto_ops *ops, const uint8_t *params, size_t plen,
		    void (*on_deliver)(void *ctx, const struct weft_delivery *d), void *ctx);
void weft_child_destroy(struct weft_child *c);
int weft_child_start(struct weft_child *c);
/* Routes a parent's incoming message whose first byte is the channel. */
int weft_child_on_message(struct weft_child *c, uint32_t from, const uint8_t *msg, size_t len);
/* True and dispatched when the parent's timer id belongs to this child. */
bool weft_child_on_timer(struct weft_child *c, uint64_t timer_id);
int weft_child_request(struct weft_child *c, const uint8_t *req, size_t len, struct weft_mpw *reply);
/* The child's command (WEFT_NOTFOUND when it has none). */
int weft_child_command(struct weft_child *c, const char *what, const uint8_t *arg, size_t alen,
		       struct weft_mpw *reply);

#endif
