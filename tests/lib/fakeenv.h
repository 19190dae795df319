/* fakeenv.h - an in-memory protocol host for unit tests: a weft_env whose
 * sends, deliveries and timers are recorded for inspection, whose kv is the
 * simulator's in-memory store (kept across a simulated restart), and whose
 * signatures are real Ed25519 from deterministic per-node identities. */
#ifndef WEFT_FAKEENV_H
#define WEFT_FAKEENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"
#include "weft/proto.h"

struct fake_sent {
	int64_t to;          /* -1: multicast */
	const char *kind;
	uint8_t *data;
	size_t len;
};

struct fake_delivery {
	uint32_t origin;
	uint64_t seq;
	bool invalid;
	uint8_t *data;
	size_t len;
};

struct fake_env;

/* An optional host service (env->ops->service): the service called name,
 * or NULL when the host does not offer it. */
typedef const void *(*fake_service_fn)(struct fake_env *fe, const char *name);
/* An optional log sink: each env log line, formatted (cut at 511 bytes). */
typedef void (*fake_log_fn)(struct fake_env *fe, enum weft_log_level level, const char *event, const char *text);

struct fake_env {
	struct weft_env env;
	struct sim_memkv *kv;
	uint64_t now_us;
	struct weft_identity **ids;   /* n identities, from seed = index */
	uint8_t (*pk)[WEFT_PK_LEN];
	struct fake_sent *sent;
	size_t nsent;
	struct fake_delivery *deliveries;
	size_t ndeliveries;
	uint64_t timers[64];          /* armed timer ids */
	size_t ntimers;
	fake_service_fn service;      /* fake_env_set_service; NULL: no service op */
	void *service_ctx;            /* for the service function's use */
	fake_log_fn log_hook;         /* NULL: logs are dropped (the default) */
};

void fake_env_init(struct fake_env *fe, uint32_t self, uint32_t n);
void fake_env_free(struct fake_env *fe);
/* Forgets recorded sends and deliveries (kv and timers stay). */
void fake_env_clear(struct fake_env *fe);
/* The last recorded send of a kind, or NULL. */
const struct fake_sent *fake_env_last(const struct fake_env *fe, const char *kind);
size_t fake_env_count(const struct fake_env *fe, const char *kind);
/* Offers host services: from now on env->ops->service answers through fn
 * (fn's NULL: the service is not offered).  Without this call the env has
 * no service op at all (ops->service NULL), as before. */
void fake_env_set_service(struct fake_env *fe, fake_service_fn fn, void *ctx);

#endif
