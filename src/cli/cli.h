/* cli.h - the internal interface of weft-cli, shared by its files and by
 * tests: command-line parameter parsing (args.c), the local commands that
 * need no daemon (local.c: keygen, genesis; ledger.c: ledger-keygen) and
 * the client side of ledger.transfer, which signs before it calls the
 * daemon (ledger.c), and the store commands with their progress display
 * (store.c).  The RPC client itself is weft/rpc_client.h.
 *
 * Everything except main.c is built into libweft-cli.a, which the tests
 * link.
 *
 * JSON values are jansson json_t.  Functions that hand out a json_t give the
 * caller a new reference: json_decref() it when done.  Functions return 0 or
 * a negative WEFT_E* code (weft/err.h). */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "weft/json.h"
#include "weft/mp.h"

/* ---- args.c: command-line parameters ---- */

/* Builds the RPC params array from the arguments that follow METHOD:
 *   no arguments                -> []
 *   one argument starting '{'   -> [ that JSON object ]   (named params)
 *   one argument starting '['   -> that JSON array         (positional)
 *   otherwise all key=value     -> [ {key: value, ...} ]   in argument order
 * A value is taken as JSON when it parses as any JSON value (42, -1.5, true,
 * null, "quoted", {...}, [...]), otherwise as a plain string (so k=abc and
 * k= give "abc" and "").  An argument without '=', an empty key, a repeated
 * key, text that is not valid UTF-8, or a '{'/'[' argument that is not valid
 * JSON fail with WEFT_EINVAL and a one-line reason in err (always
 * NUL-terminated when errlen > 0).  On success *params is a new reference. */
int weft_cli_parse_params(int argc, char *const argv[], json_t **params, char *err, size_t errlen);

/* ---- local.c: commands that run without a daemon ---- */

/* Their usage lines, shared by main.c's help and local.c's messages;
 * INDENT is as many spaces as the text printed before the first line
 * ("usage: " -> "       "), so that genesis's second line lines up. */
#define WEFT_CLI_KEYGEN_USAGE "weft-cli keygen [--out FILE]"
#define WEFT_CLI_GENESIS_USAGE(INDENT)                                          \
	"weft-cli genesis --nodes N --out DIR [--base-port P] [--host H]\n"     \
	INDENT "                 [--protocol NAME] [--chain-id ID] [--force]\n"  \
	INDENT "                 [--fund ACCOUNT=AMOUNT ...] [--param KEY=VALUE ...]"

/* True when name is a command weft-cli runs itself: "keygen", "genesis",
 * "ledger-keygen". */
bool weft_cli_is_local(const char *name);

/* Runs the local command argv[0] with its options argv[1..argc): prints the
 * JSON result on stdout, problems on stderr ("weft-cli: COMMAND: ...").
 * Returns the exit status: 0 done, 1 failed (an I/O error or a refusal to
 * overwrite; the message names the path), 2 usage error (the message names
 * the option).  Uses getopt_long (resets optind); argv may be permuted. */
int weft_cli_local_main(int argc, char **argv);

/* ---- ledger.c: ledger keys and transfers (docs/ledger.md) ---- */

#define WEFT_CLI_LEDGER_KEYGEN_USAGE "weft-cli ledger-keygen [--out FILE]"
#define WEFT_CLI_TRANSFER_USAGE "weft-cli ledger.transfer to=ACCOUNT amount=N [key=FILE] [nonce=N]"
#define WEFT_CLI_TRANSFER_METHOD "ledger.transfer"
#define WEFT_CLI_LEDGER_KEY_FILE "./ledger.key"

/* An account: 64 hex digits (optionally after "0x") of a valid x-only
 * public key.  0 or WEFT_EINVAL. */
int weft_cli_parse_account(const char *s, uint8_t key[32]);

/* Key files hold one line "weft-secp256k1-secret <64 hex digits>\n".
 * Creates path with mode 0600 holding a fresh secret key and gives its
 * account: 0, WEFT_EEXIST (never replaces a file) or an I/O code.  Needs
 * weft_crypto_init(). */
int weft_cli_ledger_key_create(const char *path, uint8_t account[32]);
/* Loads a key file: 0 and *seckey (32 bytes in sodium_malloc memory: the
 * caller sodium_free()s it), WEFT_NOTFOUND, WEFT_EPERM (not a regular file,
 * or readable by group or others), WEFT_EDECODE (not a valid key file) or
 * an I/O code.  Needs weft_crypto_init(). */
int weft_cli_ledger_key_load(const char *path, uint8_t **seckey);

/* ledger-keygen (local.c dispatches to it): exit status 0, 1 (the file
 * exists or cannot be written) or 2 (usage). */
int weft_cli_ledger_keygen_main(int argc, char **argv);

/* One ledger.transfer invocation.  main.c: weft_cli_transfer_init (before
 * connecting), then unless has_nonce the RPC ledger.balance with
 * weft_cli_transfer_balance_params and weft_cli_transfer_set_nonce on its
 * result, then the RPC ledger.transfer with weft_cli_transfer_params. */
struct weft_cli_transfer {
	uint8_t to[32];
	uint64_t amount;
	uint64_t nonce;
	bool has_nonce;          /* nonce=N given */
	const char *key_file;    /* points into argv, or the default */
	uint8_t *seckey;         /* sodium_malloc'd */
	uint8_t from[32];        /* the account of seckey */
};

/* Parses the arguments after METHOD (to=, amount=, key=, nonce=) and loads
 * the key file.  0; WEFT_EINVAL for a usage error; another negative code
 * when the key file cannot be used.  err (NUL-terminated when errlen > 0)
 * says why, naming the parameter or the file.  On failure nothing needs
 * freeing. */
int weft_cli_transfer_init(struct weft_cli_transfer *t, int argc, char *const argv[], char *err, size_t errlen);
/* [{"account": HEX}]: a new reference. */
json_t *weft_cli_transfer_balance_params(const struct weft_cli_transfer *t);
/* Takes the next nonce from ledger.balance's result {account, balance,
 * nonce}: 0, or WEFT_EPROTO with a message in err. */
int weft_cli_transfer_set_nonce(struct weft_cli_transfer *t, const json_t *balance, char *err, size_t errlen);
/* Signs the transfer (fresh aux randomness) and returns the ledger.transfer
 * params [{"tx_hex": HEX of the encoded transaction}]: a new reference. */
json_t *weft_cli_transfer_params(struct weft_cli_transfer *t);
/* Wipes and frees the secret key. */
void weft_cli_transfer_free(struct weft_cli_transfer *t);

/* ---- store.c: weft-cli store ... (docs/storage.md) ---- */

#define WEFT_CLI_STORE_COMMAND "store"
#define WEFT_CLI_STORE_PROGRESS_METHOD "store.progress"
#define WEFT_CLI_STORE_ID_HEX 64
#define WEFT_CLI_STORE_USAGE(INDENT)                                                         \
	"weft-cli store put FILE [--mode random|convergent] [--k K] [--avg BYTES]\n"          \
	INDENT "                   [--name NAME] [--quiet]\n"                                 \
	INDENT "weft-cli store get ID|CAPABILITY OUT [--offset A] [--length L] [--quiet]\n"  \
	INDENT "weft-cli store ls | stat ID | rm ID | grant ID --offset A --length L\n"      \
	INDENT "weft-cli store audit [--count C] | repair [ID] | gc"

/* weft-cli store --help: the whole text. */
extern const char weft_cli_store_help[];
/* The synopsis of one store command ("put", ...), or NULL for another name:
 * a static string. */
const char *weft_cli_store_usage_of(const char *name);

/* A byte count or number: decimal digits and an optional suffix K M G T,
 * KiB MiB GiB TiB (powers of 1024) or KB MB GB TB (powers of 1000); at most
 * INT64_MAX (what a JSON integer carries).  0 or WEFT_EINVAL. */
int weft_cli_parse_size(const char *s, uint64_t *out);
/* A file id: 64 hex digits, optionally after "0x" (weft-cli prints binary
 * ids that way).  0 and the lowercase digits in id, or WEFT_EINVAL. */
int weft_cli_store_parse_id(const char *s, char id[WEFT_CLI_STORE_ID_HEX + 1]);

/* One store command line, as the RPC call it makes. */
struct weft_cli_store {
	const char *sub;        /* "put", "get", ... (static) */
	char method[16];        /* "store.put", ... */
	json_t *params;         /* [{named params}]: owned, weft_cli_store_free */
	bool transfer;          /* put or get: may take minutes (no default timeout) */
	bool progress;          /* asks for store.progress notifications */
	bool help;              /* --help: print weft_cli_store_help; no call */
};

/* Parses the arguments after "store" (argv[0] is the command: put, get,
 * ...; argv may be permuted, getopt_long's optind is reset).  Resolves FILE
 * and OUT to absolute paths (which needs FILE and OUT's directory to exist)
 * and checks ids, numbers and options; contacts nothing.  0 (a call in *s,
 * or s->help), or WEFT_EINVAL with a message in err ("store put: ...",
 * NUL-terminated when errlen > 0) and nothing to free. */
int weft_cli_store_parse(struct weft_cli_store *s, int argc, char **argv, char *err, size_t errlen);
void weft_cli_store_free(struct weft_cli_store *s);

/* Progress, pure formatting.  elapsed is seconds since the call started;
 * total 0 means unknown (no bar, percent or ETA).  Both write a
 * NUL-terminated line without a newline into buf and return its length.
 *   bar:  "put  [=========>          ]  47%  481.2 MiB / 1.0 GiB  212.4 MB/s  ETA 0:03"
 *         at most width - 1 columns (width <= 0: no limit); the bar takes
 *         what the text leaves, 10 to 40 columns, or is left out;
 *   line: "put 47% 504563712/1073741824 bytes 212.4 MB/s". */
size_t weft_cli_progress_bar(char *buf, size_t len, const char *op, uint64_t bytes, uint64_t total,
			     double elapsed, int width);
size_t weft_cli_progress_line(char *buf, size_t len, const char *op, uint64_t bytes, uint64_t total,
			      double elapsed);

/* Progress display state for one call. */
struct weft_cli_progress {
	FILE *out;
	bool tty;               /* redraw one line in place, else print lines */
	int width;              /* terminal columns; 0: ask the terminal */
	double start;           /* monotonic seconds when the call started */
	double last_shown;      /* when a state was last drawn or printed */
	double at;              /* when the latest state arrived */
	char op[8];
	uint64_t bytes, total;  /* the latest state */
	bool seen;              /* a state arrived */
	bool shown;             /* the latest state is on display */
	bool finished;
	size_t drawn;           /* tty: length of the line on screen */
};

/* Seconds on CLOCK_MONOTONIC. */
double weft_cli_monotonic(void);
/* Columns of the terminal f is on (else $COLUMNS, else 80). */
int weft_cli_terminal_width(FILE *f);
void weft_cli_progress_init(struct weft_cli_progress *p, FILE *out, bool tty, int width, const char *op,
			    double start);
/* A new state at time now (op NULL or "": unchanged).  Shows it when the
 * last display is old enough: 0.1 s on a tty, 1 s otherwise. */
void weft_cli_progress_update(struct weft_cli_progress *p, const char *op, uint64_t bytes, uint64_t total,
			      double now);
/* Ends the display: shows the latest state if it is not yet shown and, on
 * a tty, ends the line.  Nothing when no state arrived; idempotent. */
void weft_cli_progress_finish(struct weft_cli_progress *p, double now);
/* A weft_rpc_client_notify_fn (arg: the struct weft_cli_progress): takes
 * "store.progress" notifications, params [{op, bytes, total, ...}] (or the
 * map alone), ignores anything else. */
void weft_cli_progress_notify(const char *method, json_t *params, void *arg);

#endif
