/* cli.h - the internal interface of weft-cli, shared by its files and by
 * tests: command-line parameter parsing (args.c), the local commands that
 * need no daemon (local.c: keygen, genesis; ledger.c: ledger-keygen) and
 * the client side of ledger.transfer, which signs before it calls the
 * daemon (ledger.c).  The RPC client itself is weft/rpc_client.h.
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

#endif
