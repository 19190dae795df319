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

#include "weft/channel.h"
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
	SIM_FAULT_LOSS,          /* drop sends and/or receives to/from peers with probability; stays correct */
	SIM_FAULT_CUT,           /* drop messages from any of `nodes` to any of `peers`; the reverse flows */
	SIM_FAULT_SKEW,          /* the node's clock runs at rate and jumps offset_us ahead at the start */
};

enum sim_corrupt_mode {
	SIM_CORRUPT_BITFLIP,
	SIM_CORRUPT_TRUNCATE,
};

/* What a crash_recover node's store loses at the crash. */
enum sim_lose {
	SIM_LOSE_NONE,      /* nothing: it restarts on its store as it was */
	SIM_LOSE_STORE,     /* everything: it restarts on an empty store (same identity) */
	SIM_LOSE_LAST_STEP, /* the writes of its last callback that wrote, as with a disk that did not sync */
};

enum sim_trigger_kind {
	SIM_TRIGGER_NONE,       /* the window is fixed: [start_us, stop_us) */
	SIM_TRIGGER_LOG,        /* node logs a line whose event name or message contains text */
	SIM_TRIGGER_EVENT,      /* node logs event text, its message containing `contains` (NULL: any) */
	SIM_TRIGGER_DELIVERIES, /* node makes its deliveries-th delivery */
};

/* A protocol event that starts a fault's window ("after"): the first time
 * it happens, the window becomes [then + start_us, then + stop_us). */
struct sim_trigger {
	enum sim_trigger_kind kind;
	uint32_t node;             /* whose protocol is watched */
	uint64_t deliveries;       /* DELIVERIES */
	char *text;                /* LOG: a substring; EVENT: the event name */
	char *contains;            /* EVENT: a substring of the message, or NULL */
};

struct sim_fault {
	enum sim_fault_kind kind;
	struct sim_trigger after;  /* kind NONE: times are from the run's start; else from the trigger */
	uint64_t start_us;
	uint64_t stop_us;          /* SIM_NEVER: until the end */
	uint32_t *nodes;           /* the faulty nodes (not for PARTITION); CUT: the senders */
	uint32_t nnodes;
	uint32_t *peers;           /* OMISSION, LOSS, DELAY: affected peers (0 = all); EQUIVOCATE: the twin's
				    * audience; CUT: the receivers */
	uint32_t npeers;
	bool sends, receives;      /* OMISSION, LOSS directions */
	uint64_t delay_us;         /* DELAY */
	uint64_t jitter_us;        /* DELAY: plus uniform in [0, jitter_us] per message */
	enum sim_lose lose;        /* CRASH_RECOVER */
	double rate;               /* SKEW: local clock microseconds per virtual microsecond */
	uint64_t offset_us;        /* SKEW: how far the clock jumps ahead when the window starts */
	uint32_t **groups;         /* PARTITION: groups of nodes; unlisted nodes form one more group */
	uint32_t *group_len;
	uint32_t ngroups;
	double probability;        /* CORRUPT, LOSS */
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

/* A storage workload (the node stack's storage service): node `putter`
 * places `chunks` random blobs of `size` bytes (k of n coding; 0: the
 * service's default) from start_us, every_us apart; at get_us each reader
 * fetches every chunk whose placement completed. */
struct sim_store_work {
	bool on;
	uint32_t putter;
	uint32_t chunks, size, k;
	uint64_t start_us, every_us, get_us;
	uint32_t *readers;
	uint32_t nreaders;
};

/* The payment channel workload (the node stack's channel service,
 * channels.c): one channel of `members` members, member m hosted by node
 * hosts[m], each funded with `deposit` on the genesis ledger and depositing
 * all of it; `payments` random payments in batches of `batch`, one attempt
 * every every_us from the open, a root asked after each batch; then,
 * optionally, a close by member `closer`'s node. */
enum sim_chan_close {
	SIM_CHAN_CLOSE_NONE,
	SIM_CHAN_CLOSE_COOPERATIVE,
	SIM_CHAN_CLOSE_UNILATERAL,
};

struct sim_channel_work {
	bool on;
	bool root_after_batch;
	uint32_t members;
	uint32_t hosts[WEFT_CHANNEL_MAX];  /* default: m % n */
	uint64_t deposit;
	uint64_t amount_max;               /* amounts are uniform in [1, amount_max] */
	uint32_t payments, batch;
	uint64_t start_us, every_us;
	enum sim_chan_close close;
	uint64_t close_us;                 /* SIM_NEVER: once the payments are done */
	uint32_t closer;                   /* the member whose node closes */
};

enum sim_checker {
	SIM_CHECK_VALIDITY = 1 << 0,   /* every correct origin's request is delivered by all correct nodes */
	SIM_CHECK_AGREEMENT = 1 << 1,  /* no two correct nodes deliver different data for one (origin, seq) */
	SIM_CHECK_INTEGRITY = 1 << 2,  /* at most once per (origin, seq); a correct origin's data only if requested */
	SIM_CHECK_TOTALITY = 1 << 3,   /* one correct node delivers (origin, seq) => all correct nodes do */
	SIM_CHECK_PREFIX = 1 << 4,     /* correct nodes' ordered outputs are prefixes of one another */
	SIM_CHECK_NO_DUP = 1 << 5,     /* no payload delivered twice by one node */
	SIM_CHECK_INCLUSION = 1 << 6,  /* every correct node's request is eventually output by all correct nodes */
	SIM_CHECK_INCLUSION_FRACTION = 1 << 7, /* per correct origin, the share of its settled requests output >= bound */
	SIM_CHECK_CATCH_UP = 1 << 8,   /* after the last fault window, every correct node catches up in time */
	SIM_CHECK_STATE_HASH = 1 << 9, /* nodes at equal committed_txs report equal state hashes */
	SIM_CHECK_STORE_INTEGRITY = 1 << 10,    /* no fetch of a chunk returns other bytes than were placed */
	SIM_CHECK_STORE_AVAILABILITY = 1 << 11, /* every correct reader's fetch of a placed chunk succeeds */
	/* the channel workload's (bits 12 and 13 are left free) */
	SIM_CHECK_CHANNEL_CONSERVATION = 1 << 14, /* roots conserve the deposits, nobody overspends, the ledger pays the newest root */
	SIM_CHECK_CHANNEL_PROGRESS = 1 << 15,     /* at least bounds.channel_progress_min of the payments finalized */
};
/* The checkers the engine judges beyond the history (sim_check leaves them
 * to it): the storage and channel ones. */
#define SIM_CHECK_LAST SIM_CHECK_CHANNEL_PROGRESS

/* ---- bounds: the limits some checkers judge against (the scenario's "bounds") ---- */

struct sim_bounds {
	double inclusion_min;   /* inclusion_fraction: the lowest allowed fraction (default 1) */
	uint64_t settle_us;     /* requests in the run's last settle_us are not counted; SIM_NEVER: 20% of the duration */
	uint64_t catch_up_us;   /* catch_up: how long nodes have after the last fault window; SIM_NEVER: not given */
	double channel_progress_min; /* channel_progress: the least share of the payments finalized (default 0.9) */
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
	struct sim_store_work store;
	struct sim_channel_work channel;
	uint64_t duration_us;
	uint64_t *seeds;
	size_t nseeds;
	unsigned int checkers;      /* enum sim_checker bits */
	bool expect_violation;      /* the run is meant to break a property (or to exceed f) */
	enum sim_kv_kind kv;
	enum sim_sig_kind signatures;
	struct sim_bounds bounds;
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
 * corrupt, equivocate, twins, adversary.  Crash-recover (whatever it
 * loses), delay, loss, partition, cut and skew leave a node correct.
 * Fills faulty[n]; returns the count. */
uint32_t sim_scenario_faulty(const struct sim_scenario *sc, bool *faulty);

/* ---- the history (engine.c records, checkers.c judges) ---- */

enum sim_hist_kind {
	SIM_H_REQUEST,  /* node submitted a request (payload digest) to its protocol */
	SIM_H_DELIVER,  /* node delivered (origin, seq, digest or invalid) */
	SIM_H_RESTART,  /* node restarted after a crash; wiped: with its store lost */
	SIM_H_SYNCED,   /* node installed synced state: its log goes on at seq (log "state.synced position=P") */
};

struct sim_hist_event {      /* 64 bytes: widest fields first */
	uint64_t time_us;
	uint64_t seq;         /* DELIVER; SYNCED: the position the log goes on at */
	enum sim_hist_kind kind;
	uint32_t node;
	uint32_t origin;      /* DELIVER; REQUEST: == node */
	bool invalid;         /* DELIVER: agreed "inconsistent sender" verdict */
	bool wiped;           /* RESTART: the node's store was lost */
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
	uint64_t first_time_us;      /* the virtual time of that event (catch_up: of the deadline missed) */
};

/* ---- judging a run beyond its history (checkers.c) ---- */

/* What a live correct node's protocol says about its state at the end of a
 * run: the committed_txs, order_hash and ledger_hash fields of its info
 * map, found at the top level or one map down. */
struct sim_node_state {
	bool known;                  /* the node was up and its info has committed_txs */
	uint64_t committed_txs;
	char order_hash[65];         /* as the info spells it (hex); "" when absent */
	char ledger_hash[65];
};

struct json_t;

/* Reads st from a protocol's info converted to JSON (NULL or not an
 * object: st is not known). */
void sim_node_state_read(struct sim_node_state *st, const struct json_t *info);

/* What the checkers judge besides the history's events. */
struct sim_check_input {
	uint32_t n;
	const bool *correct;                 /* correct[n]: the nodes the properties speak about; NULL: all */
	unsigned int checkers;               /* enum sim_checker bits */
	struct sim_bounds bounds;
	uint64_t duration_us;                /* the run's length */
	uint64_t faults_end_us;              /* catch_up: when the last fault window ended; SIM_NEVER: none did */
	const struct sim_node_state *states; /* state_hash: per node at the end of the run; NULL: none known */
};

/* What the checkers measured, for the run's report. */
struct sim_measures {
	uint32_t n;                  /* nodes */
	double *inclusion;           /* per node: the least share of its counted requests a correct node
				      * output (NaN: not a correct origin, or nothing counted); NULL when
				      * neither inclusion nor inclusion_fraction ran */
	double inclusion_min;        /* the least of those, NaN when none */
	uint64_t counted_before_us;  /* requests made before this time are counted */
	uint64_t catch_up_from_us;   /* when the last fault window ended; SIM_NEVER: catch_up not measured */
	uint64_t catch_up_positions; /* log positions correct nodes had output by then */
	uint64_t catch_up_worst_us;  /* the slowest correct node's catch-up time; SIM_NEVER: one had not */
};

/* Runs the selected checkers over the history.  Fills v and, when m is
 * not NULL, m (release it with sim_measures_free); returns the number of
 * violated properties. */
int sim_check(const struct sim_history *h, const struct sim_check_input *in, struct sim_verdict *v,
	      struct sim_measures *m);
void sim_measures_free(struct sim_measures *m);
/* The end of the last fault window of sc that ends (SIM_NEVER: none).  A
 * window that starts after a trigger counts from fired_us[i], when fault
 * i's trigger fired (SIM_NEVER: it did not); with fired_us NULL such
 * windows are left out. */
uint64_t sim_faults_end(const struct sim_scenario *sc, const uint64_t *fired_us);
/* Adds "checkers", "first_violation" and what m measured ("inclusion",
 * "catch_up") to a run's JSON report. */
void sim_report_checks(struct json_t *doc, const struct sim_verdict *v, const struct sim_measures *m);
/* Name of one checker bit ("validity", ...). */
const char *sim_checker_name(unsigned int bit);
/* Writes the history events around index i (radius before and after). */
void sim_history_print_around(FILE *out, const struct sim_history *h, size_t i, size_t radius);

/* ---- shares.c: a node's share store (weft/store_proto.h), the chunk
 * store (weft/store.h) in a directory of its own, on virtual time ---- */

struct sim_shares;
/* Opens lazily, in dir (created on first use). now_ms(arg) is the clock. */
struct sim_shares *sim_shares_new(const char *dir, uint64_t (*now_ms)(void *arg), void *arg);
const struct weft_share_service *sim_shares_service(struct sim_shares *sh);
/* The node lost its disk: every share and reference is gone. */
void sim_shares_wipe(struct sim_shares *sh);
/* Closes and removes the directory; accepts NULL. */
void sim_shares_free(struct sim_shares *sh);

/* ---- channels.c: the payment channel workload, its wallets and its
 * checkers ---- */

/* What the engine does for the workload: commands and queries run as one
 * step of the node's live process (WEFT_EUNSUPPORTED when it is down). */
struct sim_chan_host {
	void *ctx;
	uint64_t (*now)(void *ctx);
	bool (*up)(void *ctx, uint32_t node);
	bool (*correct)(void *ctx, uint32_t node);   /* the checkers speak about it */
	int (*command)(void *ctx, uint32_t node, const char *what, const uint8_t *arg, size_t alen,
		       struct weft_mpw *reply);
	int (*query)(void *ctx, uint32_t node, const char *what, const uint8_t *arg, size_t alen,
		     struct weft_mpw *reply);
	/* An EV_CHANNEL event with arg at virtual time at_us. */
	void (*schedule)(void *ctx, uint64_t at_us, uint64_t arg);
};

struct sim_chan;
struct sim_verdict;
/* The workload of sc.channel for one run: member keys from the seed.
 * NULL when the scenario has none. */
struct sim_chan *sim_chan_new(const struct sim_scenario *sc, uint64_t seed, const struct sim_chan_host *host);
void sim_chan_free(struct sim_chan *ch);
/* The protocol parameters with the genesis "balances" funding the members
 * (a new buffer), or NULL with a message in err (params hold balances
 * already). */
uint8_t *sim_chan_params(const struct sim_chan *ch, const uint8_t *params, size_t plen, size_t *len, char *err,
			 size_t errlen);
/* Node's wallets: the members it hosts (sign), every key (verify). */
const struct weft_wallet_service *sim_chan_wallets(struct sim_chan *ch, uint32_t node);
/* An event node's process emitted in a step that is durable now. */
void sim_chan_event(struct sim_chan *ch, uint32_t node, const uint8_t *ev, size_t len);
/* Schedules the workload's first events (after the processes booted). */
void sim_chan_start(struct sim_chan *ch);
/* An EV_CHANNEL event. */
void sim_chan_on_event(struct sim_chan *ch, uint64_t arg);
/* The channel checkers at the end of the run, over the live correct nodes
 * (correct[n]); adds what failed to v and returns how many failed. */
int sim_chan_judge(struct sim_chan *ch, const bool *correct, struct sim_verdict *v);
/* The run's "channel" report. */
struct json_t *sim_chan_report(const struct sim_chan *ch);

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
	bool trace_data;    /* trace: the message bytes (hex) on send and recv */
	bool per_node;      /* include per-node counters in the report */
	bool verbose;       /* protocol log lines to stderr */
	bool quiet;         /* no counterexample on stderr (the search's many runs) */
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

/* ---- scenario_write.c: a scenario back to JSON ---- */

/* sc as a JSON object that sim_scenario_parse reads back to an equal
 * scenario (every key written, defaults included); a new reference. */
struct json_t *sim_scenario_to_json(const struct sim_scenario *sc);
/* A scenario's JSON as file text: one top-level key per line, one fault or
 * workload line per line, each number in the shortest form that reads back
 * to the same value.  A new string the caller frees. */
char *sim_scenario_text(const struct json_t *scenario);

/* ---- search.c: adversarial search over seeds, and shrinking ---- */

/* A run fails when it does not behave as the scenario expects: a property
 * was violated, or, with expect_violation, none was. */
bool sim_run_failed(const struct sim_scenario *sc, const struct sim_run_result *res);

/* Runs sc with the seeds list[0..count), or first .. first + count - 1
 * when list is NULL, until a run fails; the runs' JSON documents go to out
 * (NULL: nowhere), what was found and the seeds per second to log.  Sets
 * *found and *seed; 0, or a negative code with a message in err when a run
 * cannot start. */
int sim_search(const struct sim_scenario *sc, const uint64_t *list, uint64_t first, uint64_t count, FILE *out,
	       FILE *log, bool *found, uint64_t *seed, char *err, size_t errlen);

/* Shrinks sc, which fails with seed, to a smaller scenario that still
 * violates the property it violated first with that seed: drops faults,
 * drops workload lines, halves workload counts and cuts the duration,
 * keeping each change only when the run still fails that way, until
 * nothing more goes.  Prints the steps taken to log.  *text is the shrunk
 * scenario's file text with "seeds": [seed] (the caller frees it); with
 * expect_violation, sc itself (a run without a violation is not shrunk).
 * 0, or a negative code with a message in err. */
int sim_shrink(const struct sim_scenario *sc, uint64_t seed, FILE *log, char **text, char *err, size_t errlen);

#endif
