/* cli.h - the internal interface of weft-cli, shared by its files and by
 * tests: command-line parameter
 * parsing (args.c), a small blocking msgpack-RPC client for the daemon's
 * Unix socket (rpc_client.c), the local commands that need no daemon
 * (local.c: keygen, genesis; ledger.c: ledger-keygen) and the client side
 * of ledger.transfer, which signs before it calls the daemon (ledger.c).
 *
 * Everything except main.c is built into libweft-cli.a, which the tests
 * link; integration tests call a running weftd with weft_cli_call() (one
 * shot) or keep a connection with weft_cli_connect()/weft_cli_conn_call().
 *
 * JSON values are jansson json_t.  Functions that hand out a json_t give the
 * caller a new reference: json_decref() it when done.  Functions return 0 or
 * a negative WEFT_E* code (weft/err.h). */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "weft/json.h"
#include "weft/mp.h"

/* The largest frame the client accepts from the server. */
#define WEFT_CLI_MAX_FRAME ((size_t)64 << 20)

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

/* ---- rpc_client.c: the msgpack-RPC client ---- */

struct weft_cli_conn; /* one connection to the daemon's RPC socket */

/* Called for each notification [2, method, params] read while waiting for a
 * reply.  method and params are valid only during the call; the callback
 * must not use the connection. */
typedef void (*weft_cli_notify_fn)(const char *method, json_t *params, void *arg);

/* Connects to the Unix stream socket at path.  timeout_ms bounds the connect
 * (<= 0: no limit).  Returns 0 and a connection in *out (free it with
 * weft_cli_conn_close), or a negative code with *out = NULL: WEFT_EINVAL (the
 * path is too long for a socket address), WEFT_ETIMEDOUT, or the code of the
 * failed system call (weft_err_from_errno).  When sys_errno is not NULL it
 * receives the errno of the failure (ENAMETOOLONG for a long path, ETIMEDOUT
 * for a timeout) so that the caller can print strerror(). */
int weft_cli_connect(struct weft_cli_conn **out, const char *path, int timeout_ms, int *sys_errno);

/* Closes the socket and frees the connection (accepts NULL). */
void weft_cli_conn_close(struct weft_cli_conn *c);

/* Sets (or clears, with fn NULL) the notification callback; without one,
 * notifications are skipped. */
void weft_cli_conn_set_notify(struct weft_cli_conn *c, weft_cli_notify_fn fn, void *arg);

/* Sends [0, msgid, method, params] and waits for [1, msgid, error, result],
 * skipping notifications (handed to the callback) and replies to other
 * msgids (late replies to an earlier call that timed out).  params must be a
 * JSON array (NULL means []); it is not consumed.  timeout_ms bounds the
 * whole exchange, send and receive (<= 0: no limit).
 *
 * Returns 0 when the reply arrived: then exactly one of *result and *error is
 * a new reference and the other is NULL.  *error is the server's error value
 * as JSON (normally {"code": N, "message": "..."}); *result is the result
 * (JSON null when the server sent nil for both).  Otherwise returns, with
 * both NULL:
 *   WEFT_EINVAL     method NULL or params not an array; the connection stays
 *                   usable
 *   WEFT_ETOOBIG    params nest too deep for a request; stays usable
 *   WEFT_ETIMEDOUT  no reply in time; the connection stays usable (a late
 *                   reply is skipped by the next call)
 *   WEFT_ECLOSED    the server closed the connection before replying
 *   WEFT_EPROTO     the server sent something that is not a valid frame or
 *                   message, or a frame over WEFT_CLI_MAX_FRAME
 *   other negative  a failed system call (weft_err_from_errno)
 * After ECLOSED, EPROTO or a system call failure the connection is dead:
 * further calls return WEFT_ESTATE.  weft_cli_conn_errmsg() describes the
 * last failure. */
int weft_cli_conn_call(struct weft_cli_conn *c, const char *method, const json_t *params,
		       int timeout_ms, json_t **result, json_t **error);

/* A one-line description of the last failure on c ("" when none); valid
 * until the next call on c. */
const char *weft_cli_conn_errmsg(const struct weft_cli_conn *c);

/* One-shot: connect to socket_path, call method, close.  Same returns as
 * weft_cli_connect() and weft_cli_conn_call(); timeout_ms bounds the connect
 * and the exchange each. */
int weft_cli_call(const char *socket_path, const char *method, const json_t *params, int timeout_ms,
		  json_t **result, json_t **error);

/* ---- local.c: commands that run without a daemon ---- */

/* Their usage lines, shared by main.c's help and local.c's messages;
 * INDENT is as many spaces as the text printed before the first line
 * ("usage: " -> "       "), so that genesis's second line lines up. */
#define WEFT_CLI_KEYGEN_USAGE "weft-cli keygen [--out FILE]"
#define WEFT_CLI_GENESIS_USAGE(INDENT)                                          \
	"weft-cli genesis --nodes N --out DIR [--base-port P] [--host H]\n"     \
	INDENT "                 [--protocol NAME] [--chain-id ID] [--force]\n"  \
	INDENT "                 [--fund ACCOUNT=AMOUNT ...]"

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

#endif
