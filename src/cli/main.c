/* main.c - weft-cli, the command-line client of weftd's local RPC socket.
 *
 *   weft-cli [--datadir DIR | --socket PATH] [--timeout SECONDS] METHOD [PARAMS]
 *   weft-cli [--datadir DIR | --socket PATH] [--timeout SECONDS] store COMMAND ...
 *   weft-cli keygen | genesis | ledger-keygen [OPTIONS]
 *
 * Parses the options, turns the remaining arguments into msgpack-RPC params
 * (args.c), makes one call (weft/rpc_client.h) and prints the result as indented
 * JSON.  Exit statuses: 0 success, 1 the daemon returned an error, 2 usage
 * error, 3 cannot connect or talk to the socket, 4 timed out, 5 malformed
 * or missing reply.  The local commands keygen and genesis (local.c) are
 * dispatched before anything touches the socket; they exit 0, 1 (a file
 * could not be written) or 2 (usage error).  METHOD ledger.transfer is
 * signed here (ledger.c): its key=value arguments are the transfer's, the
 * next nonce comes from a ledger.balance call unless nonce= is given, and
 * the signed transaction goes to the daemon's ledger.transfer.  `store
 * COMMAND ...` (store.c) parses into one store.* call; put and get show the
 * daemon's progress notifications on stderr and, unless --timeout is given,
 * wait without a time limit.  A METHOD ending in .subscribe prints its
 * result, then each notification as one JSON line {method, params} until
 * the daemon closes the connection (or for --timeout seconds). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/rpc_client.h"

#include "cli.h"

enum exit_status {
	EXIT_OK = 0,
	EXIT_RPC_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_CONNECT = 3,
	EXIT_TIMEOUT = 4,
	EXIT_BAD_REPLY = 5,
};

#define DEFAULT_DATADIR "./weft-data"
#define DEFAULT_TIMEOUT_S 30.0

static const char short_usage[] =
	"usage: weft-cli [--datadir DIR | --socket PATH] [--timeout SECONDS] METHOD [PARAMS]\n"
	"       " WEFT_CLI_KEYGEN_USAGE "\n"
	"       " WEFT_CLI_GENESIS_USAGE("       ") "\n"
	"       " WEFT_CLI_LEDGER_KEYGEN_USAGE "\n"
	"       " WEFT_CLI_TRANSFER_USAGE "\n"
	"       " WEFT_CLI_STORE_USAGE("       ") "\n"
	"       PARAMS: key=value ... | '{\"key\": value, ...}' | '[value, ...]'\n"
	"       weft-cli help lists the daemon's methods; weft-cli --help explains more\n";

static const char long_usage[] =
	"usage: weft-cli [--datadir DIR | --socket PATH] [--timeout SECONDS] METHOD [PARAMS]\n"
	"       " WEFT_CLI_KEYGEN_USAGE "\n"
	"       " WEFT_CLI_GENESIS_USAGE("       ") "\n"
	"       " WEFT_CLI_LEDGER_KEYGEN_USAGE "\n"
	"       " WEFT_CLI_TRANSFER_USAGE "\n"
	"       " WEFT_CLI_STORE_USAGE("       ") "\n"
	"\n"
	"Calls METHOD on a running weftd through its local RPC socket and prints the\n"
	"result as JSON.  `weft-cli help` asks the daemon for its list of methods.\n"
	"\n"
	"Options:\n"
	"  --datadir DIR      the node's data directory; the socket is DIR/rpc.sock\n"
	"                     (default " DEFAULT_DATADIR ")\n"
	"  --socket PATH      the RPC socket itself (instead of --datadir)\n"
	"  --timeout SECONDS  give up after this long (default 30, but none for store\n"
	"                     put and get; 0 waits forever)\n"
	"  -h, --help         show this help\n"
	"\n"
	"PARAMS:\n"
	"  (none)             no parameters\n"
	"  key=value ...      named parameters; a value that parses as JSON is sent\n"
	"                     as that value (42, -1.5, true, null, \"text\", [1,2],\n"
	"                     {\"a\":1}), anything else as a plain string\n"
	"  '{...}'            one JSON object: named parameters\n"
	"  '[...]'            one JSON array: positional parameters\n"
	"\n"
	"Output: binary values print as \"0x\"-prefixed hex, integers above\n"
	"9223372036854775807 as decimal strings.\n"
	"\n"
	"Exit status: 0 success, 1 the daemon returned an error, 2 usage error,\n"
	"3 cannot connect, 4 timed out, 5 malformed or missing reply.\n"
	"\n"
	"Local commands (no daemon needed; `weft-cli COMMAND --help` for details):\n"
	"  keygen             write a new Ed25519 node identity to FILE (default\n"
	"                     ./identity.key, mode 0600); never overwrites a file\n"
	"  genesis            write a local testnet into DIR: DIR/node<i>/ with\n"
	"                     identity.key and weft.conf for each of the N nodes,\n"
	"                     and DIR/genesis.json (node i at H:P+i, or at H:P\n"
	"                     with {i} in H replaced by i; defaults P 7100,\n"
	"                     H 127.0.0.1, protocol beb, chain id weft-local);\n"
	"                     refuses a non-empty DIR without --force;\n"
	"                     --fund ACCOUNT=AMOUNT sets ledger balances,\n"
	"                     --param KEY=VALUE the protocol's params\n"
	"  ledger-keygen      write a new secp256k1 ledger key to FILE (default\n"
	"                     " WEFT_CLI_LEDGER_KEY_FILE ", mode 0600) and print its account\n"
	"  They print JSON and exit 0 done, 1 a file could not be written or\n"
	"  would be overwritten, 2 usage error.\n"
	"\n"
	"ledger.transfer (signed here, then sent to the daemon):\n"
	"  to=ACCOUNT         the recipient's account, 64 hex digits\n"
	"  amount=N           1 to 18446744073709551615\n"
	"  key=FILE           the sender's key (default " WEFT_CLI_LEDGER_KEY_FILE ")\n"
	"  nonce=N            the sender's next nonce (default: asked of the daemon\n"
	"                     with ledger.balance)\n"
	"  An unusable key file is a usage error (exit 2).\n"
	"\n"
	"store (the daemon's store.* methods; `weft-cli store --help` for details):\n"
	"  put FILE           store a file; get ID|CAPABILITY OUT fetches one\n"
	"  ls, stat ID, rm ID, grant ID --offset A --length L, audit, repair, gc\n"
	"  put and get show progress on stderr (--quiet: none).  FILE and OUT are\n"
	"  sent as absolute paths; the daemon reads and writes them itself.\n";

__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("weft-cli: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fputs(short_usage, stderr);
	exit(EXIT_USAGE);
}

/* SECONDS: a non-negative decimal number, fractions allowed. */
static int parse_timeout(const char *s, int *timeout_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0 || v > INT_MAX / 1000)
		return WEFT_EINVAL;
	if (v == 0) {
		*timeout_ms = 0;
		return 0;
	}
	double ms = ceil(v * 1000.0);
	*timeout_ms = ms < 1 ? 1 : (int)ms;
	return 0;
}

static char *socket_path_for(const char *datadir)
{
	size_t n = strlen(datadir);
	const char *sep = n > 0 && datadir[n - 1] == '/' ? "" : "/";
	size_t len = n + strlen(sep) + sizeof("rpc.sock");
	char *p = malloc(len);

	if (!p)
		abort();
	snprintf(p, len, "%s%srpc.sock", datadir, sep);
	return p;
}

/* Prints the daemon's error reply: "weft-cli: METHOD: MESSAGE (code N)". */
static void print_rpc_error(const char *method, json_t *err)
{
	json_t *msg = json_is_object(err) ? json_object_get(err, "message") : NULL;
	json_t *code = json_is_object(err) ? json_object_get(err, "code") : NULL;
	char *text = NULL;
	const char *m;

	if (json_is_string(msg)) {
		m = json_string_value(msg);
	} else if (!msg && json_is_string(err)) {
		m = json_string_value(err);
	} else {
		/* Not the usual {code, message}: show what arrived. */
		text = json_dumps(msg ? msg : err, JSON_COMPACT | JSON_ENCODE_ANY);
		m = text ? text : "(unprintable error)";
	}
	if (json_is_integer(code))
		fprintf(stderr, "weft-cli: %s: %s (code %" JSON_INTEGER_FORMAT ")\n", method, m,
			json_integer_value(code));
	else
		fprintf(stderr, "weft-cli: %s: %s\n", method, m);
	free(text);
}

static int print_result(json_t *result)
{
	char *text = json_dumps(result, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);

	if (!text) {
		fputs("weft-cli: cannot format the result as JSON\n", stderr);
		return EXIT_BAD_REPLY;
	}
	int bad = fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF;
	free(text);
	if (fflush(stdout) == EOF || bad) {
		fprintf(stderr, "weft-cli: writing the result: %s\n", strerror(errno));
		return EXIT_RPC_ERROR;
	}
	return EXIT_OK;
}

static void describe_timeout(char *buf, size_t len, int timeout_ms)
{
	snprintf(buf, len, "%g s", timeout_ms / 1000.0);
}

/* Calls method on conn and reports any failure on stderr.  EXIT_OK with a
 * new reference in *result, or the exit status of the failure.  When
 * progress is not NULL it takes the call's notifications and its display
 * is finished before any message. */
static int call_with_progress(struct weft_rpc_client *conn, const char *path, const char *method,
			      const json_t *params, int timeout_ms, struct weft_cli_progress *progress,
			      json_t **result)
{
	json_t *error = NULL;
	char tbuf[64];
	int rc, status;

	describe_timeout(tbuf, sizeof(tbuf), timeout_ms);
	if (progress)
		weft_rpc_client_set_notify(conn, weft_cli_progress_notify, progress);
	rc = weft_rpc_client_call(conn, method, params, timeout_ms, result, &error);
	if (progress) {
		weft_rpc_client_set_notify(conn, NULL, NULL);
		weft_cli_progress_finish(progress, weft_cli_monotonic());
	}
	if (rc == 0 && error) {
		print_rpc_error(method, error);
		status = EXIT_RPC_ERROR;
	} else if (rc == 0) {
		status = EXIT_OK;
	} else if (rc == WEFT_ETIMEDOUT) {
		fprintf(stderr, "weft-cli: %s: no reply from %s within %s (see --timeout; 0 waits forever)\n",
			method, path, tbuf);
		status = EXIT_TIMEOUT;
	} else if (rc == WEFT_ETOOBIG) {
		fprintf(stderr, "weft-cli: %s: %s\n", method, weft_rpc_client_errmsg(conn));
		fputs(short_usage, stderr);
		status = EXIT_USAGE;
	} else if (rc == WEFT_EPROTO || rc == WEFT_ECLOSED) {
		fprintf(stderr, "weft-cli: %s: bad reply from %s: %s\n", method, path,
			weft_rpc_client_errmsg(conn));
		status = EXIT_BAD_REPLY;
	} else {
		fprintf(stderr, "weft-cli: %s: talking to %s: %s\n", method, path, weft_rpc_client_errmsg(conn));
		status = EXIT_CONNECT;
	}
	json_decref(error);
	return status;
}

static int call(struct weft_rpc_client *conn, const char *path, const char *method, const json_t *params,
		int timeout_ms, json_t **result)
{
	return call_with_progress(conn, path, method, params, timeout_ms, NULL, result);
}

/* The params of ledger.transfer: signs the transfer t, first asking the
 * daemon for the next nonce unless it was given.  EXIT_OK and a new
 * reference in *params, or the exit status of a failure (reported). */
static int transfer_params(struct weft_rpc_client *conn, const char *path, struct weft_cli_transfer *t,
			   int timeout_ms, json_t **params)
{
	char errbuf[256];

	if (!t->has_nonce) {
		json_t *bp = weft_cli_transfer_balance_params(t), *balance = NULL;
		int status = call(conn, path, "ledger.balance", bp, timeout_ms, &balance);
		json_decref(bp);
		if (status != EXIT_OK)
			return status;
		int rc = weft_cli_transfer_set_nonce(t, balance, errbuf, sizeof(errbuf));
		json_decref(balance);
		if (rc < 0) {
			fprintf(stderr, "weft-cli: %s\n", errbuf);
			return EXIT_BAD_REPLY;
		}
	}
	*params = weft_cli_transfer_params(t);
	return EXIT_OK;
}

/* True for the methods that subscribe the connection to notifications. */
static bool is_subscription(const char *method)
{
	size_t len = strlen(method), tail = strlen(".subscribe");
	return len > tail && strcmp(method + len - tail, ".subscribe") == 0;
}

static void print_notification(const char *method, json_t *params, void *arg)
{
	(void)arg;
	json_t *line = json_pack("{s:s,s:O}", "method", method, "params", params);
	char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
	if (text) {
		puts(text);
		fflush(stdout);
	}
	free(text);
	json_decref(line);
}

/* After a *.subscribe: one JSON line per notification on stdout until the
 * daemon closes the connection, or for timeout_ms when not 0. */
static int follow(struct weft_rpc_client *conn, const char *path, int timeout_ms)
{
	weft_rpc_client_set_notify(conn, print_notification, NULL);
	int rc = weft_rpc_client_listen(conn, timeout_ms);
	if (rc == WEFT_ETIMEDOUT)
		return EXIT_OK;
	fprintf(stderr, "weft-cli: %s: %s\n", path, weft_rpc_client_errmsg(conn));
	return rc == WEFT_ECLOSED ? EXIT_OK : EXIT_CONNECT;
}

/* Connects to the socket at path, reporting a failure.  EXIT_OK and *conn,
 * or the exit status of the failure. */
static int connect_to(const char *path, int timeout_ms, struct weft_rpc_client **conn)
{
	char tbuf[64];
	int sys_errno, rc;

	describe_timeout(tbuf, sizeof(tbuf), timeout_ms);
	rc = weft_rpc_client_connect(conn, path, timeout_ms, &sys_errno);
	if (rc == WEFT_ETIMEDOUT) {
		fprintf(stderr, "weft-cli: cannot connect to %s: timed out after %s (is weftd overloaded?)\n",
			path, tbuf);
		return EXIT_TIMEOUT;
	}
	if (rc < 0) {
		fprintf(stderr, "weft-cli: cannot connect to %s: %s (is weftd running? see --datadir/--socket)\n",
			path, sys_errno ? strerror(sys_errno) : weft_strerror(rc));
		return EXIT_CONNECT;
	}
	return EXIT_OK;
}

/* weft-cli ... store COMMAND ...: argv[0] is COMMAND.  Everything is
 * checked before the socket is touched; put and get wait without a limit
 * unless --timeout was given, and show the daemon's progress on stderr. */
static int store_main(int argc, char **argv, const char *path, int timeout_ms, bool timeout_set)
{
	struct weft_cli_store st;
	struct weft_cli_progress progress;
	struct weft_rpc_client *conn = NULL;
	json_t *result = NULL;
	char errbuf[1024];
	int status;

	if (weft_cli_store_parse(&st, argc, argv, errbuf, sizeof(errbuf)) < 0) {
		const char *one = weft_cli_store_usage_of(argc > 0 ? argv[0] : NULL);
		fprintf(stderr, "weft-cli: %s\n", errbuf);
		if (one)
			fprintf(stderr, "usage: %s\n", one);
		else
			fputs("usage: " WEFT_CLI_STORE_USAGE("       ") "\n", stderr);
		fputs("       weft-cli store --help explains more\n", stderr);
		return EXIT_USAGE;
	}
	if (st.help) {
		fputs(weft_cli_store_help, stdout);
		return EXIT_OK;
	}
	if (st.transfer && !timeout_set)
		timeout_ms = 0;
	/* The connect itself is bounded even when the call is not. */
	status = connect_to(path, timeout_ms > 0 ? timeout_ms : (int)(DEFAULT_TIMEOUT_S * 1000), &conn);
	if (status == EXIT_OK) {
		weft_cli_progress_init(&progress, stderr, isatty(STDERR_FILENO), 0, st.sub, weft_cli_monotonic());
		status = call_with_progress(conn, path, st.method, st.params, timeout_ms,
					    st.progress ? &progress : NULL, &result);
	}
	if (status == EXIT_OK)
		status = print_result(result);
	weft_rpc_client_close(conn);
	json_decref(result);
	weft_cli_store_free(&st);
	return status;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "datadir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *datadir = NULL, *socket_opt = NULL;
	int timeout_ms = (int)(DEFAULT_TIMEOUT_S * 1000);
	bool timeout_set = false;
	char errbuf[512];
	int opt;

	opterr = 0;
	/* '+': stop at METHOD, so that parameters are never taken as options. */
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			datadir = optarg;
			break;
		case 's':
			socket_opt = optarg;
			break;
		case 't':
			if (parse_timeout(optarg, &timeout_ms) < 0)
				usage_error("--timeout wants a number of seconds >= 0, not '%s'", optarg);
			timeout_set = true;
			break;
		case 'h':
			fputs(long_usage, stdout);
			return EXIT_OK;
		case ':':
			usage_error("option '%s' needs an argument", argv[optind - 1]);
		case '?':
		default:
			/* glibc: optopt is 0 for an unknown long option and the
			 * option letter for an unknown short one. */
			if (optopt == 0 || strncmp(argv[optind - 1], "--", 2) == 0)
				usage_error("unknown or malformed option '%s'", argv[optind - 1]);
			usage_error("unknown option '-%c'", optopt);
		}
	}
	/* Local commands never touch the socket: run them before the RPC
	 * path, and refuse the RPC options rather than ignore them. */
	if (optind < argc && weft_cli_is_local(argv[optind])) {
		if (optind > 1)
			usage_error("%s runs locally: --datadir, --socket and --timeout do not apply", argv[optind]);
		return weft_cli_local_main(argc - optind, argv + optind);
	}
	if (datadir && socket_opt)
		usage_error("give either --datadir or --socket, not both");
	if (optind >= argc)
		usage_error("no METHOD given");

	const char *method = argv[optind];
	if (method[0] == '\0')
		usage_error("METHOD is empty");

	if (strcmp(method, WEFT_CLI_STORE_COMMAND) == 0) {
		char *store_path = socket_opt ? NULL : socket_path_for(datadir ? datadir : DEFAULT_DATADIR);
		int st = store_main(argc - optind - 1, argv + optind + 1, socket_opt ? socket_opt : store_path,
				    timeout_ms, timeout_set);
		free(store_path);
		return st;
	}

	json_t *params = NULL;
	struct weft_cli_transfer transfer;
	bool is_transfer = strcmp(method, WEFT_CLI_TRANSFER_METHOD) == 0;
	if (is_transfer) {
		int rc = weft_cli_transfer_init(&transfer, argc - optind - 1, argv + optind + 1, errbuf,
						sizeof(errbuf));
		if (rc < 0)
			usage_error("%s", errbuf);
	} else if (weft_cli_parse_params(argc - optind - 1, argv + optind + 1, &params, errbuf, sizeof(errbuf)) < 0) {
		usage_error("%s", errbuf);
	}

	char *owned_path = socket_opt ? NULL : socket_path_for(datadir ? datadir : DEFAULT_DATADIR);
	const char *path = socket_opt ? socket_opt : owned_path;
	struct weft_rpc_client *conn;
	json_t *result = NULL;
	int status;

	status = connect_to(path, timeout_ms, &conn);
	if (status != EXIT_OK)
		goto out;

	status = is_transfer ? transfer_params(conn, path, &transfer, timeout_ms, &params) : EXIT_OK;
	if (status == EXIT_OK)
		status = call(conn, path, method, params, timeout_ms, &result);
	if (status == EXIT_OK)
		status = print_result(result);
	if (status == EXIT_OK && is_subscription(method))
		status = follow(conn, path, timeout_set ? timeout_ms : 0);
	weft_rpc_client_close(conn);
out:
	if (is_transfer)
		weft_cli_transfer_free(&transfer);
	json_decref(result);
	json_decref(params);
	free(owned_path);
	return status;
}
