/* ledger.c - weft-cli's ledger commands (docs/ledger.md):
 *
 *   weft-cli ledger-keygen [--out FILE]
 *       a fresh secp256k1 secret key in FILE (default ./ledger.key, mode
 *       0600), never overwriting a file; prints the account (x-only public
 *       key) it controls;
 *   weft-cli [--datadir DIR | --socket PATH] ledger.transfer to=HEX
 *            amount=N [key=FILE] [nonce=N]
 *       signs a transfer on this side with the key in FILE and hands it to
 *       the daemon (main.c drives the RPC calls with the helpers below).
 *
 * Key file: one line "weft-secp256k1-secret <64 hex digits>\n", mode 0600;
 * a file readable by group or others is refused.  The secret lives in
 * sodium_malloc memory from the moment it is read or generated and is wiped
 * when freed.  Signing draws its auxiliary randomness from libsodium.
 *
 * The RPC client sends JSON params, which cannot carry msgpack binaries, so
 * the signed transaction goes to ledger.transfer as a hex string "tx_hex". */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"
#include "weft/util.h"

#include "cli.h"

#define KEYFILE_TAG "weft-secp256k1-secret "
#define KEYFILE_LEN (sizeof(KEYFILE_TAG) - 1 + 2 * WEFT_LEDGER_SECKEY_LEN + 1)

static const char keygen_help[] =
	"usage: " WEFT_CLI_LEDGER_KEYGEN_USAGE "\n"
	"\n"
	"Generates a new secp256k1 secret key for a ledger account and writes it to\n"
	"FILE (default " WEFT_CLI_LEDGER_KEY_FILE ") with mode 0600.  An existing FILE is never\n"
	"overwritten.  Prints {\"key\": FILE, \"account\": HEX}, the account being the\n"
	"key's x-only public key (fund it with weft-cli genesis --fund HEX=AMOUNT).\n";

/* ---- parsing ---- */

int weft_cli_parse_account(const char *s, uint8_t key[WEFT_LEDGER_KEY_LEN])
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (weft_hex_decode(key, WEFT_LEDGER_KEY_LEN, s, strlen(s)) < 0 || weft_ledger_pubkey_check(key) < 0)
		return WEFT_EINVAL;
	return 0;
}

/* ---- key files ---- */

int weft_cli_ledger_key_create(const char *path, uint8_t account[WEFT_LEDGER_KEY_LEN])
{
	uint8_t *sk = sodium_malloc(WEFT_LEDGER_SECKEY_LEN);
	char *text = sodium_malloc(KEYFILE_LEN + 1);
	int rc = 0, fd;

	if (!sk || !text)
		abort();
	do
		randombytes_buf(sk, WEFT_LEDGER_SECKEY_LEN);
	while (weft_ledger_pubkey(sk, account) < 0); /* invalid with probability 2^-128 */
	memcpy(text, KEYFILE_TAG, sizeof(KEYFILE_TAG) - 1);
	weft_hex_encode(text + sizeof(KEYFILE_TAG) - 1, sk, WEFT_LEDGER_SECKEY_LEN);
	text[KEYFILE_LEN - 1] = '\n';
	sodium_free(sk);

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = errno == EEXIST ? WEFT_EEXIST : weft_err_from_errno(errno);
		sodium_free(text);
		return rc;
	}
	errno = 0;
	if (fchmod(fd, 0600) < 0 || write(fd, text, KEYFILE_LEN) != (ssize_t)KEYFILE_LEN || fsync(fd) < 0)
		rc = weft_err_from_errno(errno ? errno : ENOSPC);
	if (close(fd) < 0 && rc == 0)
		rc = weft_err_from_errno(errno);
	if (rc < 0)
		unlink(path);
	sodium_free(text);
	return rc;
}

int weft_cli_ledger_key_load(const char *path, uint8_t **seckey)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*seckey = NULL;
	if (fd < 0)
		return errno == ENOENT ? WEFT_NOTFOUND : weft_err_from_errno(errno);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
		close(fd);
		return WEFT_EPERM;
	}
	char *text = sodium_malloc(KEYFILE_LEN + 1);
	uint8_t *sk = sodium_malloc(WEFT_LEDGER_SECKEY_LEN);
	uint8_t pk[WEFT_LEDGER_KEY_LEN];
	if (!text || !sk)
		abort();
	ssize_t n = read(fd, text, KEYFILE_LEN + 1);
	close(fd);
	size_t tag = sizeof(KEYFILE_TAG) - 1;
	int rc = WEFT_EDECODE;
	if (n == (ssize_t)KEYFILE_LEN && memcmp(text, KEYFILE_TAG, tag) == 0 && text[KEYFILE_LEN - 1] == '\n' &&
	    weft_hex_decode(sk, WEFT_LEDGER_SECKEY_LEN, text + tag, 2 * WEFT_LEDGER_SECKEY_LEN) == 0 &&
	    weft_ledger_pubkey(sk, pk) == 0) {
		*seckey = sk;
		rc = 0;
	} else {
		sodium_free(sk);
	}
	sodium_free(text);
	return rc;
}

/* "PATH: PROBLEM" for a key file that cannot be used. */
static void describe_key_error(char *err, size_t errlen, const char *path, int rc)
{
	switch (rc) {
	case WEFT_NOTFOUND:
		snprintf(err, errlen, "key file %s does not exist (create one with weft-cli ledger-keygen, or "
			 "give key=FILE)", path);
		break;
	case WEFT_EPERM:
		snprintf(err, errlen, "key file %s is not a regular file readable only by its owner (chmod 600 "
			 "it)", path);
		break;
	case WEFT_EDECODE:
		snprintf(err, errlen, "%s is not a ledger key file (weft-cli ledger-keygen writes them)", path);
		break;
	default:
		snprintf(err, errlen, "key file %s: %s", path, weft_strerror(rc));
		break;
	}
}

/* ---- ledger-keygen ---- */

int weft_cli_ledger_keygen_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"out", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = WEFT_CLI_LEDGER_KEY_FILE, *usage = WEFT_CLI_LEDGER_KEYGEN_USAGE;
	uint8_t account[WEFT_LEDGER_KEY_LEN];
	char hex[2 * WEFT_LEDGER_KEY_LEN + 1];
	int opt;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(keygen_help, stdout);
			return 0;
		case ':':
			fprintf(stderr, "weft-cli: ledger-keygen: option '%s' needs an argument\nusage: %s\n",
				argv[optind - 1], usage);
			return 2;
		default:
			fprintf(stderr, "weft-cli: ledger-keygen: unknown option '%s'\nusage: %s\n", argv[optind - 1],
				usage);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "weft-cli: ledger-keygen: unexpected argument '%s'\nusage: %s\n", argv[optind], usage);
		return 2;
	}
	if (out[0] == '\0') {
		fprintf(stderr, "weft-cli: ledger-keygen: --out wants a file name, not ''\nusage: %s\n", usage);
		return 2;
	}
	if (weft_crypto_init() < 0) {
		fputs("weft-cli: ledger-keygen: cannot initialise libsodium\n", stderr);
		return 1;
	}
	int rc = weft_cli_ledger_key_create(out, account);
	if (rc == WEFT_EEXIST) {
		fprintf(stderr, "weft-cli: ledger-keygen: %s already exists; not overwriting it (remove it or choose "
			"another --out)\n", out);
		return 1;
	}
	if (rc < 0) {
		fprintf(stderr, "weft-cli: ledger-keygen: %s: %s\n", out, weft_strerror(rc));
		return 1;
	}

	weft_hex_encode(hex, account, WEFT_LEDGER_KEY_LEN);
	json_t *file = json_string(out), *res = json_object();
	if (!res)
		abort();
	/* A FILE that is not valid UTF-8 shows as hex, like binary results. */
	json_object_set_new(res, "key", file ? file : weft_json_hex_string(out, strlen(out)));
	json_object_set_new(res, "account", json_string(hex));
	char *text = json_dumps(res, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(res);
	if (!text)
		abort();
	int bad = puts(text) == EOF || fflush(stdout) == EOF;
	free(text);
	if (bad) {
		fprintf(stderr, "weft-cli: ledger-keygen: writing the result: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* ---- ledger.transfer ---- */

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return WEFT_EINVAL;
}

/* Parses the key=value arguments into t (the key file not yet loaded). */
static int parse_transfer_args(struct weft_cli_transfer *t, int argc, char *const argv[], char *err,
			       size_t errlen)
{
	bool has_to = false, has_amount = false, has_key = false;

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '='), *v = eq ? eq + 1 : NULL;
		size_t klen = eq ? (size_t)(eq - arg) : 0;
		bool *seen;

		if (!eq)
			return fail(err, errlen, "ledger.transfer: argument '%s' is not key=value", arg);
		if (klen == 2 && memcmp(arg, "to", 2) == 0)
			seen = &has_to;
		else if (klen == 6 && memcmp(arg, "amount", 6) == 0)
			seen = &has_amount;
		else if (klen == 3 && memcmp(arg, "key", 3) == 0)
			seen = &has_key;
		else if (klen == 5 && memcmp(arg, "nonce", 5) == 0)
			seen = &t->has_nonce;
		else
			return fail(err, errlen, "ledger.transfer: unknown parameter '%.*s' (to, amount, key, nonce)",
				    (int)klen, arg);
		if (*seen)
			return fail(err, errlen, "ledger.transfer: %.*s is given more than once", (int)klen, arg);
		*seen = true;
		if (seen == &has_to && weft_cli_parse_account(v, t->to) < 0)
			return fail(err, errlen, "ledger.transfer: to wants an account (64 hex digits of an x-only "
				    "public key), not '%s'", v);
		if (seen == &has_amount && (weft_parse_u64(v, &t->amount) < 0 || t->amount == 0))
			return fail(err, errlen, "ledger.transfer: amount wants a number from 1 to "
				    "18446744073709551615, not '%s'", v);
		if (seen == &t->has_nonce && weft_parse_u64(v, &t->nonce) < 0)
			return fail(err, errlen, "ledger.transfer: nonce wants a number from 0 to "
				    "18446744073709551615, not '%s'", v);
		if (seen == &has_key && v[0] == '\0')
			return fail(err, errlen, "ledger.transfer: key wants a file name, not ''");
		if (seen == &has_key)
			t->key_file = v;
	}
	if (!has_to)
		return fail(err, errlen, "ledger.transfer: to=ACCOUNT is required");
	if (!has_amount)
		return fail(err, errlen, "ledger.transfer: amount=N is required");
	return 0;
}

int weft_cli_transfer_init(struct weft_cli_transfer *t, int argc, char *const argv[], char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->key_file = WEFT_CLI_LEDGER_KEY_FILE;
	if (errlen > 0)
		err[0] = '\0';
	int rc = parse_transfer_args(t, argc, argv, err, errlen);
	if (rc < 0)
		return rc;
	if (weft_crypto_init() < 0) {
		snprintf(err, errlen, "ledger.transfer: cannot initialise libsodium");
		return WEFT_EIO;
	}
	rc = weft_cli_ledger_key_load(t->key_file, &t->seckey);
	if (rc != 0) {
		describe_key_error(err, errlen, t->key_file, rc);
		return rc < 0 ? rc : WEFT_ENOENT;
	}
	if (weft_ledger_pubkey(t->seckey, t->from) < 0)
		abort(); /* weft_cli_ledger_key_load checked it */
	return 0;
}

json_t *weft_cli_transfer_balance_params(const struct weft_cli_transfer *t)
{
	char hex[2 * WEFT_LEDGER_KEY_LEN + 1];

	weft_hex_encode(hex, t->from, WEFT_LEDGER_KEY_LEN);
	json_t *p = json_pack("[{s:s}]", "account", hex);
	if (!p)
		abort();
	return p;
}

int weft_cli_transfer_set_nonce(struct weft_cli_transfer *t, const json_t *balance, char *err, size_t errlen)
{
	json_t *n = json_is_object(balance) ? json_object_get(balance, "nonce") : NULL;

	/* The CLI shows integers above 2^63 - 1 as decimal strings. */
	if (json_is_integer(n) && json_integer_value(n) >= 0) {
		t->nonce = (uint64_t)json_integer_value(n);
		return 0;
	}
	if (json_is_string(n) && weft_parse_u64(json_string_value(n), &t->nonce) == 0)
		return 0;
	snprintf(err, errlen, "ledger.balance: the reply has no \"nonce\" (a number >= 0)");
	return WEFT_EPROTO;
}

json_t *weft_cli_transfer_params(struct weft_cli_transfer *t)
{
	struct weft_ledger_transfer tx = {.amount = t->amount, .nonce = t->nonce};
	uint8_t aux[32];
	struct weft_mpw w;

	memcpy(tx.to, t->to, WEFT_LEDGER_KEY_LEN);
	randombytes_buf(aux, sizeof(aux));
	if (weft_ledger_transfer_sign(&tx, t->seckey, aux) < 0)
		abort(); /* the key was checked when it was loaded */
	weft_mpw_init(&w);
	weft_ledger_transfer_encode(&tx, &w);
	char *hex = malloc(2 * w.len + 1);
	if (!hex)
		abort();
	weft_hex_encode(hex, w.buf, w.len);
	weft_mpw_free(&w);
	json_t *p = json_pack("[{s:s}]", "tx_hex", hex);
	free(hex);
	if (!p)
		abort();
	return p;
}

void weft_cli_transfer_free(struct weft_cli_transfer *t)
{
	sodium_free(t->seckey); /* wipes; accepts NULL */
	memset(t, 0, sizeof(*t));
}
