/* campaign.h - the internal interface of weft-campaign, the fault-injection
 * campaign runner for docker testnets (docs/campaigns.md), shared by its
 * files and by tests/unit/campaign_*.c, which link libweft-campaign.a:
 *
 *   manifest.c  a campaign manifest (JSON) parsed and checked into struct
 *               campaign_manifest, and its weft-sim scenario equivalent
 *   generate.c  seeded random manifests (CometBFT's generator, Jepsen's
 *               nemeses)
 *   exec.c      running docker and the testnet tool as child processes
 *   testnet.c   the testnet: tools/docker-testnet.sh and its testnet.env
 *   perturb.c   applying and healing one schedule step
 *   load.c      the transaction load (tx.submit) and what it acknowledged
 *   sample.c    every node's dag.info and status, once a second
 *   check.c     the checks on the honest nodes after the run
 *   run.c       the stages, in order, with teardown on any exit
 *   report.c    the markdown report and its gnuplot charts
 *
 * Node sets are bit masks (bit i: node i): a committee has at most
 * CAMPAIGN_MAX_NODES = 32 nodes.  Times in a manifest are seconds from the
 * start of the load.  Functions return 0 or a negative WEFT_E* code unless
 * they say otherwise. */
#ifndef WEFT_CAMPAIGN_H
#define WEFT_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "weft/faults.h"

#define CAMPAIGN_MIN_NODES 4
#define CAMPAIGN_MAX_NODES 32

/* weft-campaign's exit statuses. */
enum campaign_exit {
	CAMPAIGN_PASS = 0,  /* every check passed */
	CAMPAIGN_FAIL = 1,  /* a check failed */
	CAMPAIGN_BAD = 2,   /* a bad manifest or command line: nothing started */
	CAMPAIGN_INFRA = 3, /* docker or the testnet failed, or the run was interrupted */
};

/* ---- manifest.c ---- */

/* omission and loss: which of the node's messages (the simulator's words;
 * the transport's out, in and both). */
enum campaign_dir {
	CAMPAIGN_SEND,
	CAMPAIGN_RECEIVE,
	CAMPAIGN_BOTH,
};

/* One schedule step: a fault applied at at_s and healed at end_s, or a heal
 * step ending an earlier step that has an id. */
struct campaign_step {
	bool is_heal;
	int heals;                  /* a heal step: the index of the step it ends */
	enum weft_fault fault;      /* not a heal step: the vocabulary's word */
	char *id;                   /* NULL, or the name a heal step uses */
	double at_s;
	double end_s;               /* when it is healed (a restart without for_s: at_s); a crash: never (INFINITY) */
	double for_s;               /* 0 when not given */
	uint32_t nodes;             /* the nodes it acts on (a partition: 0) */
	uint32_t groups[CAMPAIGN_MAX_NODES]; /* partition: nodes talk when a group holds both */
	uint32_t ngroups;
	uint32_t peers;             /* the peers a transport rule applies to (0: every peer) */
	enum campaign_dir direction;
	double probability;         /* transport rules: 1 unless given */
	uint32_t delay_ms, jitter_ms, max_ms;
};

struct campaign_manifest {
	char *name;
	uint32_t n, f;
	char *protocol;             /* "dag" */
	char *brb, *mode;           /* NULL: the genesis default */
	uint32_t d;                 /* 0: the genesis default */
	json_t *params;             /* more genesis params (object), or NULL */
	uint32_t byzantine;         /* nodes */
	char *strategy[CAMPAIGN_MAX_NODES]; /* the strategy of each Byzantine node */
	double rate;                /* transactions per second, over all load nodes */
	uint32_t load_from;         /* the nodes transactions go to */
	uint32_t tx_size;           /* bytes per transaction */
	double duration_s;          /* how long the load runs; the schedule lies within */
	double recover_s;           /* progress resumes this soon after each heal */
	struct campaign_step *steps;
	size_t nsteps;
	json_t *doc;                /* the manifest as read */
};

/* Parses a manifest (src names it in messages).  0, or WEFT_EINVAL with err
 * saying "SRC: $.json.path: what is wrong".  On success the caller owns *m
 * (campaign_manifest_free); on failure *m holds nothing to free.  doc is
 * not consumed (m->doc takes its own reference). */
int campaign_manifest_parse(struct campaign_manifest *m, json_t *doc, const char *src, char *err, size_t errlen);
/* Reads and parses the file at path (its base name without .json is the
 * default name). */
int campaign_manifest_load(struct campaign_manifest *m, const char *path, char *err, size_t errlen);
void campaign_manifest_free(struct campaign_manifest *m);
/* Whether nodes a and b can talk during the partition step s (nodes in no
 * group form one more group). */
bool campaign_talk(const struct campaign_step *s, uint32_t a, uint32_t b);
/* The nodes step s acts on in an n-node committee: a partition's are those
 * with a link cut. */
uint32_t campaign_step_nodes(const struct campaign_step *s, uint32_t n);
/* The nodes that are not honest for the whole run: Byzantine or crashed. */
uint32_t campaign_faulty(const struct campaign_manifest *m);
/* The fault words of the schedule, "crash_recover, partition" (each once):
 * a new string. */
char *campaign_fault_words(const struct campaign_manifest *m);
/* The weft-sim scenario closest to the campaign (docs/campaigns.md, "Replay
 * in weft-sim"): a new reference.  Steps the simulator lacks become their
 * nearest fault; *notes (a new string "a; b", or NULL) says which. */
json_t *campaign_sim_scenario(const struct campaign_manifest *m, char **notes);

/* ---- generate.c ---- */

/* The index-th manifest of seed: the same seed, index, nodes and duration
 * give the same manifest (a new reference) whatever else was drawn before. */
json_t *campaign_generate(uint64_t seed, uint32_t index, uint32_t nodes, double duration_s);

/* ---- exec.c ---- */

/* Set by SIGINT and SIGTERM (run.c installs the handlers). */
extern volatile int campaign_interrupted;

/* Runs argv[0] (found on PATH) with argv, its stdout and stderr together
 * into *out (a new string, when out is not NULL) and appended with the
 * command line to log (when not NULL).  The child runs in its own process
 * group, so that a Ctrl-C reaches only weft-campaign, which decides.  It is
 * killed after timeout_s, and at once on campaign_interrupted unless
 * uninterruptible.  Returns the exit status, 128 + signal, or -1 when it
 * could not be started or was killed (*out says why). */
int campaign_exec(char *const argv[], double timeout_s, bool uninterruptible, FILE *log, char **out);
/* Sleeps until the campaign clock reads t (seconds) or an interrupt; false
 * on an interrupt. */
bool campaign_sleep_until(double t);
/* Seconds on the campaign clock: CLOCK_MONOTONIC since the last
 * campaign_clock_reset() (the start of the load), or since the first call. */
double campaign_now(void);
void campaign_clock_reset(void);

/* ---- testnet.c ---- */

struct campaign_testnet {
	char *tool;                 /* tools/docker-testnet.sh */
	char *dir;                  /* absolute */
	char *network;
	uint32_t n;
	char *ip[CAMPAIGN_MAX_NODES];
	char *container[CAMPAIGN_MAX_NODES];
	char *socket[CAMPAIGN_MAX_NODES]; /* the node's RPC socket on the host */
	FILE *log;                  /* every command, for OUT/commands.log */
};

/* Generates the testnet of m into dir with the tool and reads its
 * testnet.env.  err says what failed. */
int campaign_testnet_gen(struct campaign_testnet *t, const struct campaign_manifest *m, const char *tool,
			 const char *dir, const char *image, FILE *log, char *err, size_t errlen);
/* Reads dir/testnet.env of a testnet generated earlier. */
int campaign_testnet_open(struct campaign_testnet *t, const char *tool, const char *dir, FILE *log, char *err,
			  size_t errlen);
/* up (and wait for every link); down (never interrupted), then clean when
 * anything labelled with the campaign's project is left (clean removes
 * every weft testnet); and each node's docker logs into dir/node<i>.log. */
int campaign_testnet_up(struct campaign_testnet *t, char *err, size_t errlen);
int campaign_testnet_down(struct campaign_testnet *t, char *err, size_t errlen);
void campaign_testnet_logs(struct campaign_testnet *t, const char *dir);
/* Whether docker can run a testnet: tools/docker-available.sh beside the
 * tool (its message in *why, a new string). */
bool campaign_docker_available(const char *tool, FILE *log, char **why);
/* Whether containers of an earlier weft testnet are still there (their
 * names in *which, a new string). */
bool campaign_testnet_leftovers(FILE *log, char **which);
void campaign_testnet_free(struct campaign_testnet *t);
/* Runs `docker ARGS...` (NULL-terminated) against the testnet, logging it:
 * 0, or WEFT_EIO with the command's output in err. */
int campaign_docker(struct campaign_testnet *t, char *err, size_t errlen, ...) __attribute__((sentinel));
/* One RPC call to node i (a new reference in *result): 0, or a negative
 * code with err saying what failed (the server's error message included). */
int campaign_rpc(const struct campaign_testnet *t, uint32_t i, const char *method, json_t *named, int timeout_ms,
		 json_t **result, char *err, size_t errlen);

/* ---- perturb.c ---- */

/* What is being done to the testnet: each step's transport rule ids, for
 * its heal. */
struct campaign_perturb {
	struct campaign_testnet *t;
	const struct campaign_manifest *m;
	uint64_t *rule;             /* [nsteps * n]: fault.set ids (0: none) */
};

void campaign_perturb_init(struct campaign_perturb *p, struct campaign_testnet *t, const struct campaign_manifest *m);
void campaign_perturb_free(struct campaign_perturb *p);
/* Applies step k / heals it.  0, or WEFT_EIO with err when docker or the
 * node refused. */
int campaign_perturb_apply(struct campaign_perturb *p, size_t k, char *err, size_t errlen);
int campaign_perturb_heal(struct campaign_perturb *p, size_t k, char *err, size_t errlen);

/* ---- load.c ---- */

enum campaign_tx_state {
	CAMPAIGN_TX_ACKED,          /* tx.submit answered with a digest */
	CAMPAIGN_TX_REFUSED,        /* an error answer (a full mempool, a store that is full) */
	CAMPAIGN_TX_UNKNOWN,        /* no answer (a node down or frozen): it may have been taken */
};

struct campaign_tx {
	uint8_t digest[32];
	uint32_t node;              /* where it was submitted */
	enum campaign_tx_state state;
	bool wrong_digest;          /* acknowledged under another digest than its BLAKE2b-256 */
	double sent_s, acked_s;
};

struct campaign_load;

/* Starts one thread per load node submitting unique transactions at its
 * share of m->rate (clock: campaign_now()). */
struct campaign_load *campaign_load_start(const struct campaign_manifest *m, const struct campaign_testnet *t);
/* Stops the threads and gives every transaction submitted (*txs, a new
 * array the caller frees, of *ntxs). */
void campaign_load_stop(struct campaign_load *l, struct campaign_tx **txs, size_t *ntxs);

/* ---- sample.c ---- */

struct campaign_sample {
	double t;                   /* campaign clock */
	uint32_t node;
	bool up;                    /* dag.info answered */
	uint64_t committed_txs, committed_anchors, round, ledger_height, mempool_txs, duplicates_skipped;
	int64_t committed_round;    /* -1 before the first commit */
	uint32_t peers;             /* links up (status) */
	char order_hash[65], ledger_hash[65];
};

struct campaign_sampler;

/* Starts one thread per node sampling it each second, keeping the samples
 * (under the sampler's lock) and writing each as a line of tsv (after a
 * header line: the columns of struct campaign_sample). */
struct campaign_sampler *campaign_sampler_start(const struct campaign_testnet *t, FILE *tsv);
/* The samples so far (a copy the caller frees). */
void campaign_sampler_get(struct campaign_sampler *s, struct campaign_sample **out, size_t *n);
void campaign_sampler_stop(struct campaign_sampler *s);

/* ---- check.c ---- */

/* When each step was applied and healed (campaign clock; NAN: not done). */
struct campaign_window {
	double applied, healed;
};

/* Everything the checks judge. */
struct campaign_history {
	const struct campaign_manifest *m;
	const struct campaign_testnet *t;
	struct campaign_window *windows;    /* [m->nsteps] */
	struct campaign_tx *txs;
	size_t ntxs;
	struct campaign_sample *samples;
	size_t nsamples;
};

/* The outcome, for checks.json, summary.txt and the report. */
struct campaign_result {
	json_t *checks;             /* [{name, pass, detail}] */
	bool pass;
	uint64_t acknowledged, committed, violations;
	double recover_p50, recover_max; /* seconds; NAN when nothing healed */
};

/* Runs the checks (querying the nodes for tx.status) into r. */
void campaign_check(const struct campaign_history *h, struct campaign_result *r);
void campaign_result_free(struct campaign_result *r);

/* ---- run.c ---- */

struct campaign_opts {
	const char *out;            /* the campaign's directory */
	const char *tool;           /* the testnet tool */
	const char *image;          /* NULL: the tool's default */
	int last_stage;             /* run up to this stage (CAMPAIGN_STAGE_*) */
};

enum campaign_stage {
	CAMPAIGN_STAGE_SETUP,
	CAMPAIGN_STAGE_START,
	CAMPAIGN_STAGE_LOAD,
	CAMPAIGN_STAGE_PERTURB,
	CAMPAIGN_STAGE_HEAL,
	CAMPAIGN_STAGE_WAIT,
	CAMPAIGN_STAGE_CHECK,
	CAMPAIGN_STAGE_STOP,
};

/* "setup" ... "stop": 0 and *out, or WEFT_EINVAL. */
int campaign_stage_parse(const char *s, int *out);
/* Runs the campaign's stages (docs/campaigns.md) and returns its exit
 * status; its one summary line goes into line (when not NULL). */
int campaign_run(const struct campaign_manifest *m, const struct campaign_opts *o, char *line, size_t linelen);
/* The header line of the summary table (static). */
const char *campaign_summary_header(void);
/* Tears down the testnet generated into OUT/testnet earlier (--stage stop). */
int campaign_stop_only(const struct campaign_opts *o);

/* ---- report.c ---- */

/* Writes the markdown report of the campaign directories to md (or into
 * the marked section of the file into) and their charts into images. */
int campaign_report(char *const dirs[], int ndirs, const char *into, const char *images);

#endif
