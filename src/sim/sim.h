/* sim.h - weft-sim's internal interface: the scenario model (scenario.c
 * parses it from JSON), the recorded history and the property checkers
 * (checkers.c) and the engine that runs one seed (engine.c), whose only
 * source of randomness is weft/rng.h. */
#ifndef WEFT_SIM_H
#define WEFT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft/proto.h"
#include "weft/rng.h"

#define SIM_NEVER UINT64_MAX
#define SIM_MAX_NODES 4096

/* ---- the scenario (scenario.c) ---- */

enum sim_latency_kind {
	SIM_LAT_CONSTANT, /* a_us */
	SIM_LAT_UNIFORM,  /* uniform in [a_us, b_us] */
	SIM_LAT_NORMAL,   /* mean a_us, standard deviation b_us, clamped to [min_us, max_us] */
};

struct sim_latency {
	enum sim_latency_kind kind;
	uint64_t a_us, b_us;
	uint64_t min_us, max_us;
};

struct sim_network {
	struct sim_latency latency;
	uint64_t bandwidth_bps;    /* per node NIC, each direction; 0 = unlimited */
	double loss;               /* probability a message is dropped */
	double duplicate;          /* probability a message is delivered twice */
	double reorder;            /* probability a message gets extra delay ... */
	uint64_t reorder_us;       /* ... uniform in [0, reorder_us] */
	bool directed;             /* false: complete graph */
	uint32_t **out;            /* directed: out[i] lists the nodes i can send to */
	uint32_t *out_len;
};

enum sim_fault_kind {
	SIM_FAULT_CRASH,         /* node stops at start_us and never returns */
	SIM_FAULT_CRASH_RECOVER, /* node down in [start, stop); restarts from its kv at stop */
	SIM_FAULT_OMISSION,      /* drop sends and/or receives to/from peers (all when npeers == 0) */
	SIM_FAULT_DELAY,         /* extra delay_us on the node's sends */
	SIM_FAULT_PARTITION,     /* only nodes in the same group talk; heals at stop */
	SIM_FAULT_CORRUPT,       /* the node's sends are corrupted with probability */
	SIM_FAULT_EQUIVOCATE,    /* a twin fed different requests speaks to the nodes in `peers` */
	SIM_FAULT_TWINS,         /* a second process with the node's identity, same requests */
	SIM_FAULT_ADVERSARY,     /* the protocol's own Byzantine strategy (see sim_adversary) */
};

enum sim_corrupt_mode {
	SIM_CORRUPT_BITFLIP,
	SIM_CORRUPT_TRUNCATE,
};

struct sim_fault {
	enum sim_fault_kind kind;
	uint64_t start_us;
	uint64_t stop_us;          /* SIM_NEVER: until the end */
	uint32_t *nodes;           /* the faulty nodes (not for PARTITION) */
	uint32_t nnodes;
	uint32_t *peers;           /* OMISSION: affected peers (0 = all); EQUIVOCATE: the twin's audience */
	uint32_t npeers;
	bool sends, receives;      /* OMISSION directions */
	uint64_t delay_us;         /* DELAY */
	uint32_t **groups;         /* PARTITION: groups of nodes; unlisted nodes form one more group */
	uint32_t *group_len;
	uint32_t ngroups;
	double probability;        /* CORRUPT */
	enum sim_corrupt_mode corrupt;
	char *strategy;            /* ADVERSARY: name of the protocol's strategy */
	uint8_t *params;           /* ADVERSARY: msgpack map of its parameters */
	size_t plen;
};

/* A workload line: count requests from each listed node, every every_us
 * from start_us, each with a fresh size-byte payload. */
struct sim_workload {
	uint32_t *nodes;
	uint32_t nnodes;
	uint64_t start_us;
	uint64_t every_us;
	uint32_t count;
	uint32_t size;
};

enum sim_checker {
	SIM_CHECK_VALIDITY = 1 << 0,   /* every correct origin's request is delivered by all correct nodes */
	SIM_CHECK_AGREEMENT = 1 << 1,  /* no two correct nodes deliver different data for one (origin, seq) */
	SIM_CHECK_INTEGRITY = 1 << 2,  /* at most once per (origin, seq); a correct origin's data only if requested */
	SIM_CHECK_TOTALITY = 1 << 3,   /* one correct node delivers (origin, seq) => all correct nodes do */
	SIM_CHECK_PREFIX = 1 << 4,     /* correct nodes' ordered outputs are prefixes of one another */
	SIM_CHECK_NO_DUP = 1 << 5,     /* no payload delivered twice by one node */
	SIM_CHECK_INCLUSION = 1 << 6,  /* every correct node's request is eventually output by all correct nodes */
};

enum sim_kv_kind {
	SIM_KV_LMDB,    /* one LMDB environment in a temporary directory */
	SIM_KV_MEMORY,  /* in-memory ordered map, for large n */
};

enum sim_sig_kind {
	SIM_SIG_ED25519, /* real signatures (default) */
	SIM_SIG_FAST,    /* deterministic keyed-hash stand-in, for large-n bandwidth studies */
};

struct sim_scenario {
	char *name;
	uint32_t n;
	uint32_t f;                 /* (n-1)/3 unless given (and then at most that) */
	char *protocol;
	uint8_t *params;            /* msgpack map of protocol parameters, or NULL */
	size_t plen;
	struct sim_network net;
	struct sim_fault *faults;
	size_t nfaults;
	struct sim_workload *work;
	size_t nwork;
	uint64_t duration_us;
	uint64_t *seeds;
	size_t nseeds;
	unsigned int checkers;      /* enum sim_checker bits */
	bool expect_violation;      /* the run is meant to break a property (or to exceed f) */
	enum sim_kv_kind kv;
	enum sim_sig_kind signatures;
};

/* Parses a scenario from a JSON file.  0, WEFT_EIO when it cannot be read,
 * or WEFT_EINVAL with a message
 * naming the JSON path and what was expected in err, e.g.
 *   "scenario.json: $.faults[2].kind: unknown fault 'crsh' (expected one of crash, ...)". */
int sim_scenario_load(struct sim_scenario *sc, const char *path, char *err, size_t errlen);
/* Same from a JSON text; name is used in messages in place of the file. */
int sim_scenario_parse(struct sim_scenario *sc, const char *json, const char *name, char *err, size_t errlen);
void sim_scenario_free(struct sim_scenario *sc);
/* Nodes that run faulty (not correct) in this scenario: crash, omission,
 * corrupt, equivocate, twins, adversary.  Crash-recover, delay and
 * partition leave a node correct.  Fills faulty[n]; returns the count. */
uint32_t sim_scenario_faulty(const struct sim_scenario *sc, bool *faulty);

/* ---- the history (engine.c records, checkers.c judges) ---- */

enum sim_hist_kind {
	SIM_H_REQUEST,  /* node submitted a request (payload digest) to its protocol */
	SIM_H_DELIVER,  /* node delivered (origin, seq, digest or invalid) */
};

struct sim_hist_event {      /* 64 bytes: widest fields first */
	uint64_t time_us;
	uint64_t seq;         /* DELIVER */
	enum sim_hist_kind kind;
	uint32_t node;
	uint32_t origin;      /* DELIVER; REQUEST: == node */
	bool invalid;         /* DELIVER: agreed "inconsistent sender" verdict */
	uint8_t digest[WEFT_DIGEST_LEN];
};

struct sim_history {
	struct sim_hist_event *ev;   /* in time order */
	size_t len, cap;
};

void sim_history_add(struct sim_history *h, const struct sim_hist_event *e);
void sim_history_free(struct sim_history *h);

struct sim_verdict {
	unsigned int checked;        /* enum sim_checker bits that ran */
	unsigned int violated;       /* bits that failed */
	char first[1024];            /* the first counterexample, empty when none */
	size_t first_event;          /* index into the history of the event it is about (0 when none) */
};

/* Runs the selected checkers over the history.  correct[n] marks the nodes
 * whose behaviour the properties speak about.  Fills v; returns the number
 * of violated properties. */
int sim_check(const struct sim_history *h, uint32_t n, const bool *correct, unsigned int checkers,
	      struct sim_verdict *v);
/* Name of one checker bit ("validity", ...). */
const char *sim_checker_name(unsigned int bit);
/* Writes the history events around index i (radius before and after). */
void sim_history_print_around(FILE *out, const struct sim_history *h, size_t i, size_t radius);

/* ---- memkv.c: the in-memory ordered store (kv "memory") ---- */

struct sim_memkv;
struct sim_memkv *sim_memkv_new(void);
void sim_memkv_free(struct sim_memkv *m);
/* Same contracts as the env kv ops (weft/proto.h). */
int sim_memkv_get(struct sim_memkv *m, const void *key, size_t klen, const void **val, size_t *vlen);
int sim_memkv_put(struct sim_memkv *m, const void *key, size_t klen, const void *val, size_t vlen);
int sim_memkv_del(struct sim_memkv *m, const void *key, size_t klen);
int sim_memkv_scan(struct sim_memkv *m, const void *from, size_t flen, const void *to, size_t tlen,
		   weft_env_scan_fn fn, void *arg);

/* ---- engine.c: one run of a scenario with one seed ---- */

struct sim_run_opts {
	FILE *trace;        /* NDJSON event trace, or NULL */
	bool per_node;      /* include per-node counters in the report */
	bool verbose;       /* protocol log lines to stderr */
};

struct sim_run_result {
	int violations;           /* properties violated */
	bool refused;             /* the scenario could not run (message in err) */
	struct sim_verdict verdict;
	uint64_t events;          /* events processed */
};

/* Runs sc with seed; appends one JSON document (one line) to out.  On a
 * violation prints the counterexample and the events around it to stderr.
 * 0, or a negative code with a message in err when the run cannot start. */
int sim_run(const struct sim_scenario *sc, uint64_t seed, const struct sim_run_opts *opts, FILE *out,
	    struct sim_run_result *res, char *err, size_t errlen);

#endif
