/* netfault.h - the runtime fault layer of the peer transport (for
 * fault-injection campaigns; this kernel has no netem).  A set of rules,
 * each acting on the protocol messages to and/or from some peers:
 *
 *   drop       discard the message (with probability p)
 *   delay      hold it delay_ms +- jitter_ms before it goes on
 *   duplicate  send or deliver it twice
 *   reorder    hold it a random 0..delay_ms, so later messages overtake it
 *   corrupt    flip one random byte of the message (the protocol's decoder
 *              and signature checks must reject it)
 *   partition  drop everything to and from the peers, both directions
 *
 * Rules are created from RPC parameters (fault.set), listed (fault.list)
 * and removed (fault.clear); a rule may expire after duration_ms.  Judging
 * is deterministic given the seed.  The layer is off unless the node's
 * config says [fault] enabled = true. */
#ifndef WEFT_NETFAULT_H
#define WEFT_NETFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/mp.h"

#define WEFT_NF_MAX_RULES 64

enum weft_nf_action {
	WEFT_NF_DROP,
	WEFT_NF_DELAY,
	WEFT_NF_DUPLICATE,
	WEFT_NF_REORDER,
	WEFT_NF_CORRUPT,
	WEFT_NF_PARTITION,
};

enum weft_nf_dir {
	WEFT_NF_IN = 1,
	WEFT_NF_OUT = 2,
	WEFT_NF_BOTH = 3,
};

struct weft_nf_rule {
	uint32_t id;               /* assigned by weft_nf_add */
	enum weft_nf_action action;
	enum weft_nf_dir dir;      /* partition: always BOTH */
	uint32_t peers[64];        /* node indices; npeers == 0 means every peer */
	uint32_t npeers;
	double probability;        /* 0 < p <= 1; default 1 */
	uint32_t delay_ms;         /* delay, reorder */
	uint32_t jitter_ms;        /* delay */
	uint64_t expires_ms;       /* absolute (now_ms + duration_ms); 0 = never */
};

/* What to do with one message. */
struct weft_nf_verdict {
	bool drop;
	unsigned int copies;       /* 1, or 2 when duplicated */
	uint64_t delay_us;         /* hold this long before it goes on */
	bool corrupt;              /* flip one byte (weft_nf_corrupt) */
};

struct weft_nf;

/* n: committee size (peer indices must be < n); seed fixes the random draws. */
struct weft_nf *weft_nf_new(uint32_t n, uint64_t seed);
void weft_nf_free(struct weft_nf *nf);

/* Builds a rule from fault.set's named parameters, a msgpack map:
 *   action (str, required), peers ([uint], default all), direction
 *   ("in"|"out"|"both", default both), probability (float or uint 0..1),
 *   delay_ms, jitter_ms, duration_ms (uint).
 * 0, or WEFT_EINVAL with a message naming the parameter in err. */
int weft_nf_parse_rule(const struct weft_nf *nf, const uint8_t *params, size_t plen, uint64_t now_ms,
		       struct weft_nf_rule *out, char *err, size_t errlen);
/* Adds a rule (assigning r->id); WEFT_ETOOBIG past WEFT_NF_MAX_RULES,
 * WEFT_EINVAL for a hand-built rule the parser would have refused. */
int weft_nf_add(struct weft_nf *nf, struct weft_nf_rule *r);
/* Removes rule id, or every rule when id is 0.  0, or WEFT_NOTFOUND. */
int weft_nf_clear(struct weft_nf *nf, uint32_t id);
/* Writes the live rules as a msgpack array of maps (same keys as fault.set,
 * plus id and remaining_ms). */
void weft_nf_list(struct weft_nf *nf, uint64_t now_ms, struct weft_mpw *w);
/* Rules held, including expired ones not yet removed by judge or list. */
unsigned int weft_nf_count(const struct weft_nf *nf);

/* Judges one message to (WEFT_NF_OUT) or from (WEFT_NF_IN) peer at now_ms;
 * expired rules are dropped first.  Counts what it did per action. */
void weft_nf_judge(struct weft_nf *nf, enum weft_nf_dir dir, uint32_t peer, uint64_t now_ms,
		   struct weft_nf_verdict *v);
/* Flips one random byte of msg (len > 0). */
void weft_nf_corrupt(struct weft_nf *nf, uint8_t *msg, size_t len);
/* The action's name in the shared fault vocabulary (weft/faults.h). */
const char *weft_nf_action_name(enum weft_nf_action a);
/* Messages acted on per action since start (index enum weft_nf_action). */
void weft_nf_stats(const struct weft_nf *nf, uint64_t out[6]);

#endif
