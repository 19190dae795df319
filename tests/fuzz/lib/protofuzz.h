/* protofuzz.h - the driver shared by the protocol fuzz targets
 * (tests/fuzz/proto_*.c): one protocol instance, node 0 of a committee of
 * four (f = 1), on the recording host of tests/lib/fakeenv.c, fed a script
 * of peer messages, timer firings, clock steps, requests, queries and
 * restarts taken from the fuzz input.
 *
 * Input: a flags byte, then records  op, len (2 bytes, big-endian), payload
 * (len bytes, clipped to what is left).
 *   flags bit 0      lenient signatures: any signature by a peer verifies
 *                    (ours still must be ours), so that mutated signed
 *                    messages get past verification
 *   flags >> 1       picks the parameter set (modulo the target's count)
 *   op 0x00-0xbf     the payload is a message from peer 1 + op % 3
 *   op 0xc0-0xcf     fire armed timer payload[0] % armed (the first when
 *                    the payload is empty; none armed: 100 ms pass); the
 *                    clock moves to its deadline first
 *   op 0xd0-0xdf     the clock moves on by the payload's first 4 bytes
 *                    (big-endian microseconds)
 *   op 0xe0-0xef     on_request(payload); for a target with commands,
 *                    0xe8-0xef are command(what = the target's
 *                    commands[payload[0] % count], arg = payload[1..])
 *                    instead (nothing when the payload is empty)
 *   op 0xf0-0xf7     query(what = the target's names[payload[0] % count],
 *                    arg = payload[1..]); nothing when there are no names
 *   op 0xf8-0xff     restart: destroy, init from the kv the node wrote
 *                    (must succeed), start
 *
 * Signatures use a keyed BLAKE2b-512 stand-in (cheap; the fuzzer cannot
 * forge it either), so the seeds carry valid signatures and mutations of
 * the unsigned parts stay meaningful.  Beyond ASan/UBSan/LSan, the driver
 * abort()s when an info, request or query reply is not one complete
 * msgpack value, when a message the node sends is not one (targets that
 * set msgpack_sends), when one (origin, seq) is delivered twice (targets
 * that set unique_deliveries), or when init fails on a restart.
 *
 * Seeds: with WEFT_FUZZ_SEEDS=DIR in the environment, pf_initialize runs
 * four honest nodes over a lossless zero-latency network for every
 * parameter set, records what node 0 experiences as an input of the
 * format above, writes DIR/CONFIG-SCRIPT files and exits.  Scripts: a,
 * node 1 makes its requests; b, every node does; c, as b, with node 0
 * restarting after the fifth message it received; d, as b, with node 0
 * cut off from the others for a while (half the horizon unless the target
 * says) and catching up after (catch-up by DELIVERED, range fetch).  Each
 * runs until the horizon (virtual time) or the size limit, whichever
 * comes first.  A target with a command seed writer has its nodes make
 * commands too (node 1 only in script a): phase 0 at time 0 after the
 * requests, phase p > 0 once the network is quiet at or after p times
 * seed_phase_us (before any timer due later).
 *
 * Wallets: a target that sets wallet_host gets a host that offers
 * WEFT_WALLET_SERVICE and WEFT_EVENT_SERVICE (weft/channel.h): node i
 * hosts the keys for which wallet_host says i; signatures are the keyed
 * BLAKE2b-512 stand-in pf_wallet_sign (lenient: any signature by a key
 * hosted elsewhere verifies); the event sink checks that every event is
 * one msgpack value.  No ledger service.
 *
 * Share service: a target that sets share_service gets a host that offers
 * WEFT_SHARE_SERVICE (weft/store_proto.h) through env->ops->service: an
 * in-memory share store per node (shares by (CID, index) with their root,
 * references by file tag; dropping a file's last reference to a CID frees
 * its shares at once), kept across restarts, fresh for every input.
 *
 * env random: the fake env's (every byte 0x5a), so that nonces in recorded
 * replies stay valid; a target that sets varied_random gets requests
 * shorter than 32 bytes (choices, not nonces) from a per-node counter
 * instead (splitmix64, restarted for every input).
 *
 * WEFT_FUZZ_VERBOSE=1 prints the instance's info (as JSON) and the number
 * of deliveries at the end of each input: run the target on one file to
 * see how far a seed or a reproducer gets. */
#ifndef WEFT_PROTOFUZZ_H
#define WEFT_PROTOFUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/mp.h"
#include "weft/proto.h"

#define PF_N 4

struct pf_target {
	const struct weft_proto_ops *ops;
	unsigned int nconfigs;
	/* Writes parameter set cfg (a msgpack map) into w; names it in *name. */
	void (*params)(unsigned int cfg, struct weft_mpw *w, const char **name);
	/* Seed writer: the k-th request node makes in a seed script (0 when it
	 * makes no more); written into w. */
	bool (*request)(unsigned int cfg, uint32_t node, unsigned int k, struct weft_mpw *w);
	/* Optional seed writer: records to append to every script (queries). */
	void (*seed_tail)(unsigned int cfg, struct weft_mpw *rec);
	const char *const *queries;   /* NULL-terminated, or NULL */
	bool unique_deliveries;
	bool msgpack_sends;
	int send_channel;             /* > 0: a message starting with this byte is
				       * a child's (channel tag, then msgpack) */
	uint64_t seed_horizon_us;     /* seed scripts run this long (virtual time) */
	size_t seed_max;              /* and stop recording past this many bytes */
	size_t seed_max_long;         /* the same for the scripts in long_scripts */
	const char *long_scripts;     /* ("b" when NULL) */
	const char *scripts;          /* which scripts to write ("abc" when NULL) */
	/* Optional: the scripts for one parameter set (overrides scripts). */
	const char *(*scripts_for)(unsigned int cfg);
	uint64_t seed_cut_us;         /* script d's cut lasts this long (0: half the horizon) */
	/* Optional: messages to node 0 that script d loses after the cut
	 * heals (to steer the seed to one way of catching up). */
	bool (*seed_drop)(const uint8_t *msg, size_t len);
	/* Optional: the host offers the in-memory share service. */
	bool share_service;
	/* Optional: the host offers wallets and an event sink (see above):
	 * the node hosting key, or -1. */
	int (*wallet_host)(const uint8_t key[32]);
	/* Optional: short random requests vary (see env random above). */
	bool varied_random;
	/* Optional: command names (NULL-terminated) for ops 0xe8-0xef. */
	const char *const *commands;
	/* Optional seed writer: the k-th command node makes in phase (false
	 * when it makes no more): the index of its name in commands into
	 * *what, its argument (msgpack) into w. */
	bool (*seed_command)(unsigned int cfg, uint32_t node, unsigned int phase, unsigned int k, unsigned int *what,
			     struct weft_mpw *w);
	unsigned int seed_phases;     /* phases 0..seed_phases-1 */
	uint64_t seed_phase_us;       /* phase p runs at p * seed_phase_us at the earliest */
};

/* Call from LLVMFuzzerInitialize: crypto set-up; writes seeds and exits
 * when WEFT_FUZZ_SEEDS is set. */
void pf_initialize(const struct pf_target *t);
/* Call from LLVMFuzzerTestOneInput. */
void pf_run(const struct pf_target *t, const uint8_t *data, size_t size);

/* The libFuzzer entry points of a target file whose pf_target is T. */
#define PF_FUZZ_TARGET(T)                                                    \
	int LLVMFuzzerInitialize(int *argc, char ***argv)                    \
	{                                                                    \
		pf_initialize(&(T));                                         \
		return 0;                                                    \
	}                                                                    \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)         \
	{                                                                    \
		pf_run(&(T), data, size);                                    \
		return 0;                                                    \
	}

/* A bare host for targets that drive protocol internals or the ledger
 * directly: node 0 of 4 with the stand-in signatures (lenient as given), a
 * fresh kv and clock.  The same env on every call (reset each time). */
struct weft_env *pf_env(bool lenient);

/* Stand-in signatures, shared with targets that build signed input. */
void pf_sign(uint32_t signer, const void *msg, size_t len, uint8_t sig[WEFT_SIGNATURE_LEN]);
/* The wallets' stand-in signature of msg by key (targets with wallet_host). */
void pf_wallet_sign(const uint8_t key[32], const uint8_t msg[32], uint8_t sig[64]);
/* Appends one record (op, 2-byte length, payload) to a script. */
void pf_record_op(struct weft_mpw *rec, uint8_t op, const void *p, size_t len);
/* Writes a seed file DIR/name (aborts on I/O errors). */
void pf_write_file(const char *dir, const char *name, const void *data, size_t len);
/* abort() unless cond: the driver's property checks. */
void pf_check(bool cond, const char *what);
/* Test ledger key i: secret key 0...0i (32 bytes) into sk and its x-only
 * public key into pk (either may be NULL). */
void pf_ledger_key(unsigned int i, uint8_t *sk, uint8_t *pk);
/* True when buf is exactly one complete msgpack value. */
bool pf_one_value(const uint8_t *buf, size_t len);

/* The BRB targets' parameter sets (2) and requests (two payloads a node). */
void pf_brb_params(unsigned int cfg, struct weft_mpw *w, const char **name);
bool pf_brb_request(unsigned int cfg, uint32_t node, unsigned int k, struct weft_mpw *w);

/* What every target file defines for libFuzzer. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A BRB of the core family (echo, bracha, coded, amortized): the same
 * parameter sets, requests and checks for each; OPS is its ops table. */
#define PF_BRB_FUZZ_TARGET(OPS)                                              \
	extern const struct weft_proto_ops OPS;                              \
	static const struct pf_target brb_target = {                         \
		.ops = &(OPS),                                               \
		.nconfigs = 2,                                               \
		.params = pf_brb_params,                                     \
		.request = pf_brb_request,                                   \
		.unique_deliveries = true,                                   \
		.msgpack_sends = true,                                       \
		.seed_horizon_us = 1000000,                                  \
		.seed_max = 3000,                                            \
		.scripts = "abcd",                                           \
	};                                                                   \
	PF_FUZZ_TARGET(brb_target)

#endif
