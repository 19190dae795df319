/* local.c - weft-cli's local commands, which run without a daemon:
 *
 *   weft-cli keygen [--out FILE]
 *       a fresh Ed25519 identity in FILE (default ./identity.key, mode 0600),
 *       never overwriting an existing file;
 *   weft-cli genesis --nodes N --out DIR [--base-port P] [--host H]
 *                    [--protocol NAME] [--chain-id ID] [--force]
 *                    [--fund ACCOUNT=AMOUNT ...] [--param KEY=VALUE ...]
 *       a local testnet: DIR/node<i>/ (mode 0700) with identity.key and
 *       weft.conf for each node i, and DIR/genesis.json naming them all
 *       (node i listens on H:P+i; or, when H holds the placeholder "{i}",
 *       on H with "{i}" replaced by i, port P, as containers named node0,
 *       node1, ... do), the protocol's params (--param) and the ledger's
 *       initial balances (--fund, params.balances).
 *
 * ledger-keygen lives in ledger.c; weft_cli_local_main dispatches to it.
 *
 * Both print their result as JSON on stdout.  Exit status 0 on success, 1
 * when a file cannot be written or would be overwritten (the message names
 * the path), 2 for a usage error (the message names the option).  Option
 * values that end up in genesis.json (--chain-id, --protocol, each node's
 * --host) are checked by the genesis parser itself, before anything is
 * created, so the command never writes a file that weftd would refuse.
 * --param values are free-form: the protocol checks them when weftd
 * starts (docs/protocols/sparse-dag.md lists the DAG's). */
#include <dirent.h>
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

#include <jansson.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/genesis.h"
#include "weft/json.h"
#include "weft/util.h"

#include "cli.h"

enum local_status {
	LOCAL_OK = 0,
	LOCAL_FAIL = 1,
	LOCAL_USAGE = 2,
};

#define DEFAULT_KEY_FILE "./identity.key"
#define DEFAULT_BASE_PORT 7100
#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PROTOCOL "beb"
#define DEFAULT_CHAIN_ID "weft-local"
#define MAX_NODES 1024

static const char keygen_help[] =
	"usage: " WEFT_CLI_KEYGEN_USAGE "\n"
	"\n"
	"Generates a new Ed25519 node identity and writes it to FILE (default\n"
	DEFAULT_KEY_FILE ") with mode 0600.  An existing FILE is never overwritten.\n"
	"Prints {\"public_key\": HEX, \"file\": FILE}.\n";

static const char genesis_help[] =
	"usage: " WEFT_CLI_GENESIS_USAGE("       ") "\n"
	"\n"
	"Writes a local testnet of N nodes into DIR: for each node i (0..N-1) a data\n"
	"directory DIR/node<i> (mode 0700) holding a fresh identity.key and a\n"
	"weft.conf that points at ../genesis.json and enables the fault layer, and\n"
	"DIR/genesis.json listing every node's key and address H:P+i (or, when H\n"
	"holds {i}, H with {i} replaced by i and port P), and the protocol's params.\n"
	"Start node i with: weftd --datadir DIR/node<i>\n"
	"\n"
	"Options:\n"
	"  --nodes N          committee size, 1 to 1024 (required)\n"
	"  --out DIR          where to write; created if missing, refused when it\n"
	"                     exists and is not empty, unless --force\n"
	"  --base-port P      node i listens on port P+i (default 7100); on port P\n"
	"                     when --host holds {i}\n"
	"  --host H           the nodes' host: an IPv4 literal, a host name or an\n"
	"                     IPv6 literal (default " DEFAULT_HOST "); every {i} in it\n"
	"                     is replaced by the node's index, so that 'node{i}'\n"
	"                     names node0, node1, ... (one host per node, as in a\n"
	"                     container network) and all of them use port P\n"
	"  --protocol NAME    the protocol the committee runs (default " DEFAULT_PROTOCOL ")\n"
	"  --chain-id ID      [A-Za-z0-9._-], 1 to 64 characters (default " DEFAULT_CHAIN_ID ")\n"
	"  --force            write into a non-empty DIR, replacing the keys,\n"
	"                     weft.conf files and genesis.json found there\n"
	"  --fund ACCOUNT=AMOUNT\n"
	"                     give the ledger account ACCOUNT (64 hex digits of an\n"
	"                     x-only public key, see weft-cli ledger-keygen) AMOUNT\n"
	"                     (1 to 18446744073709551615) at genesis; repeatable,\n"
	"                     once per account; written to params.balances\n"
	"  --param KEY=VALUE  set params.KEY, read by the protocol (for dag: mode,\n"
	"                     d, brb, timeout_ms, ...; docs/protocols/sparse-dag.md);\n"
	"                     VALUE is taken as JSON when it parses (2, true,\n"
	"                     \"x\", [1,2], {\"a\":1}), else as a string (coded);\n"
	"                     KEY is letters, digits, '_', '-', '.'; repeatable,\n"
	"                     once per KEY; not balances together with --fund\n"
	"\n"
	"Prints {\"genesis\": PATH, \"nodes\": [{\"name\", \"datadir\", \"key\",\n"
	"\"address\"}, ...]}.  Exit status: 0 done, 1 a file could not be written,\n"
	"2 usage error.\n";

static const char weft_conf_fmt[] =
	"# weft.conf for node%u, written by weft-cli genesis\n"
	"[node]\n"
	"genesis = ../genesis.json\n"
	"[log]\n"
	"file = weftd.log\n"
	"[fault]\n"
	"# the runtime fault layer (fault.set / fault.clear / fault.list RPCs); testnets enable it\n"
	"enabled = true\n";

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

/* Prints "weft-cli: CMD: MESSAGE" and the command's usage; returns 2. */
__attribute__((format(printf, 3, 4))) static int usage_error(const char *cmd, const char *usage, const char *fmt,
							      ...)
{
	va_list ap;

	fprintf(stderr, "weft-cli: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: %s\n", usage);
	return LOCAL_USAGE;
}

/* Prints "weft-cli: CMD: MESSAGE"; returns 1. */
__attribute__((format(printf, 2, 3))) static int failure(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "weft-cli: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return LOCAL_FAIL;
}

/* Prints v as indented JSON on stdout and releases it. */
static int print_json(const char *cmd, json_t *v)
{
	char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(v);
	if (!text)
		abort();
	int bad = fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF;
	free(text);
	if (fflush(stdout) == EOF || bad)
		return failure(cmd, "writing the result: %s", strerror(errno));
	return LOCAL_OK;
}

/* Common getopt error cases; returns the usage status. */
static int option_error(const char *cmd, const char *usage, int opt, char **argv)
{
	if (opt == ':')
		return usage_error(cmd, usage, "option '%s' needs an argument", argv[optind - 1]);
	if (optopt == 0 || strncmp(argv[optind - 1], "--", 2) == 0)
		return usage_error(cmd, usage, "unknown or ambiguous option '%s'", argv[optind - 1]);
	return usage_error(cmd, usage, "unknown option '-%c'", optopt);
}

/* ---- keygen ---- */

static int cmd_keygen(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"out", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "keygen", *out = DEFAULT_KEY_FILE;
	char hex[2 * WEFT_PK_LEN + 1];
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
			return LOCAL_OK;
		default:
			return option_error(cmd, WEFT_CLI_KEYGEN_USAGE, opt, argv);
		}
	}
	if (optind < argc)
		return usage_error(cmd, WEFT_CLI_KEYGEN_USAGE, "unexpected argument '%s'", argv[optind]);
	if (out[0] == '\0')
		return usage_error(cmd, WEFT_CLI_KEYGEN_USAGE, "--out wants a file name, not ''");
	if (weft_crypto_init() < 0)
		return failure(cmd, "cannot initialise libsodium");

	/* Claim the name first, so that neither an existing file nor one
	 * created concurrently is ever replaced; the save renames over it. */
	int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		return failure(cmd, "%s already exists; not overwriting it (remove it or choose another --out)",
			       out);
	if (fd < 0)
		return failure(cmd, "%s: %s", out, strerror(errno));
	close(fd);

	struct weft_identity *id = weft_identity_generate();
	int rc = weft_identity_save(id, out);
	weft_hex_encode(hex, id->pk, WEFT_PK_LEN);
	weft_identity_free(id);
	if (rc < 0) {
		unlink(out);
		return failure(cmd, "%s: %s", out, weft_strerror(rc));
	}

	json_t *res = json_object();
	if (!res)
		abort();
	json_object_set_new(res, "public_key", json_string(hex));
	/* A FILE that is not valid UTF-8 shows as hex, like binary results. */
	json_t *file = json_string(out);
	json_object_set_new(res, "file", file ? file : weft_json_hex_string(out, strlen(out)));
	return print_json(cmd, res);
}

/* ---- genesis ---- */

#define HOST_PLACEHOLDER "{i}"

struct genesis_opts {
	unsigned long nodes;    /* 0: not given */
	unsigned long base_port;
	const char *host, *protocol, *chain_id, *out;
	bool force;
	bool templated;         /* host holds HOST_PLACEHOLDER */
	json_t *balances;       /* --fund: lower-case hex -> amount, or NULL */
	json_t *params;         /* --param: KEY -> value, or NULL */
};

/* A decimal number as weft_parse_u64 reads it (no sign, space or leading
 * zero), at most max; false otherwise. */
static bool parse_number(const char *s, unsigned long max, unsigned long *out)
{
	uint64_t v;

	if (weft_parse_u64(s, &v) < 0 || v > max)
		return false;
	*out = (unsigned long)v;
	return true;
}

/* Adds one --fund ACCOUNT=AMOUNT to o->balances.  0, or a usage error. */
static int add_fund(const char *cmd, const char *usage, struct genesis_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	uint8_t key[32];
	uint64_t amount;
	char hex[67]; /* "0x" and 64 digits */

	if (!eq || eq - arg > 66)
		return usage_error(cmd, usage, "--fund wants ACCOUNT=AMOUNT, not '%s'", arg);
	memcpy(hex, arg, (size_t)(eq - arg));
	hex[eq - arg] = '\0';
	if (weft_cli_parse_account(hex, key) < 0)
		return usage_error(cmd, usage, "--fund '%s': ACCOUNT must be 64 hex digits of an x-only public key",
				   arg);
	if (weft_parse_u64(eq + 1, &amount) < 0 || amount == 0)
		return usage_error(cmd, usage, "--fund '%s': AMOUNT must be a number from 1 to 18446744073709551615",
				   arg);
	weft_hex_encode(hex, key, sizeof(key));
	if (!o->balances && !(o->balances = json_object()))
		abort();
	if (json_object_get(o->balances, hex))
		return usage_error(cmd, usage, "--fund '%s': account %s is funded twice", arg, hex);
	/* JSON integers stop at 2^63 - 1; the ledger reads larger amounts
	 * from decimal strings. */
	json_t *v = amount <= INT64_MAX ? json_integer((json_int_t)amount) : json_string(eq + 1);
	if (!v || json_object_set_new(o->balances, hex, v) < 0)
		abort();
	return 0;
}

/* Adds one --param KEY=VALUE to o->params.  0, or a usage error. */
static int add_param(const char *cmd, const char *usage, struct genesis_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char err[256];
	json_t *pair;

	if (!eq)
		return usage_error(cmd, usage, "--param wants KEY=VALUE, not '%s'", arg);
	size_t klen = (size_t)(eq - arg);
	if (klen == 0)
		return usage_error(cmd, usage, "--param '%s': KEY is empty", arg);
	if (strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != klen)
		return usage_error(cmd, usage, "--param '%s': KEY must be letters, digits, '_', '-' or '.'", arg);
	if (o->params && json_object_getn(o->params, arg, klen))
		return usage_error(cmd, usage, "--param '%s': KEY %.*s is given twice", arg, (int)klen, arg);
	/* The same reading of VALUE as weft-cli's METHOD key=value. */
	char *const one[] = {(char *)arg};
	if (weft_cli_parse_params(1, one, &pair, err, sizeof(err)) < 0)
		return usage_error(cmd, usage, "--param: %s", err);
	if (!o->params && !(o->params = json_object()))
		abort();
	json_t *v = json_object_getn(json_array_get(pair, 0), arg, klen);
	if (!v || json_object_setn(o->params, arg, klen, v) < 0)
		abort(); /* the pair just parsed holds KEY */
	json_decref(pair);
	return 0;
}

/* --param and --fund together, as the msgpack map genesis.params, in
 * *params / *plen (NULL when there are none; caller frees).  0, or a usage
 * error. */
static int build_params(const char *cmd, const char *usage, const struct genesis_opts *o, uint8_t **params,
			size_t *plen)
{
	json_t *all;
	struct weft_mpw w;

	*params = NULL;
	*plen = 0;
	if (o->balances && o->params && json_object_get(o->params, "balances"))
		return usage_error(cmd, usage,
				   "--param balances=... and --fund both set params.balances; give only one of them");
	if (!o->balances && !o->params)
		return 0;
	all = o->params ? json_copy(o->params) : json_object();
	if (!all || (o->balances && json_object_set(all, "balances", o->balances) < 0))
		abort();
	weft_mpw_init(&w);
	int rc = weft_json_to_mp(&w, all, 0);
	json_decref(all);
	if (rc < 0) {
		weft_mpw_free(&w);
		return usage_error(cmd, usage, "--param: the params nest deeper than %d levels or hold a value "
				   "msgpack cannot (%s)", WEFT_MP_MAX_DEPTH, weft_strerror(rc));
	}
	*params = weft_mpw_steal(&w, plen);
	return 0;
}

/* The host of node i: o->host with every HOST_PLACEHOLDER replaced by i.
 * Caller frees. */
static char *host_of(const struct genesis_opts *o, unsigned long i)
{
	const char *s = o->host, *p;
	size_t n = 0, cap = strlen(o->host) + 1;
	char *out;

	for (p = s; (p = strstr(p, HOST_PLACEHOLDER)) != NULL; p += strlen(HOST_PLACEHOLDER))
		cap += 20;
	if (!(out = malloc(cap)))
		abort();
	while ((p = strstr(s, HOST_PLACEHOLDER)) != NULL) {
		memcpy(out + n, s, (size_t)(p - s));
		n += (size_t)(p - s);
		n += (size_t)snprintf(out + n, cap - n, "%lu", i);
		s = p + strlen(HOST_PLACEHOLDER);
	}
	memcpy(out + n, s, strlen(s) + 1);
	return out;
}

/* True when every '{' and '}' of host belongs to a HOST_PLACEHOLDER. */
static bool placeholders_ok(const char *host)
{
	for (const char *p = host; *p; p++) {
		if (strncmp(p, HOST_PLACEHOLDER, strlen(HOST_PLACEHOLDER)) == 0)
			p += strlen(HOST_PLACEHOLDER) - 1;
		else if (*p == '{' || *p == '}')
			return false;
	}
	return true;
}

/* "H:P", with brackets around an IPv6 literal given without them. */
static char *address_of(const char *host, unsigned long port)
{
	if (strchr(host, ':') && host[0] != '[')
		return xasprintf("[%s]:%lu", host, port);
	return xasprintf("%s:%lu", host, port);
}

/* Runs a one-node genesis document through the genesis parser.  0 and, when
 * hostp is not NULL, the parsed host (without brackets; caller frees) in
 * *hostp; or WEFT_EINVAL with the parser's message, less its "NAME: $.path: "
 * prefix, in why. */
static int check_values(const char *chain_id, const char *protocol, const char *address, char **hostp, char *why,
			size_t whylen)
{
	static const char zero_key[] = "0000000000000000000000000000000000000000000000000000000000000000";
	struct weft_genesis g;
	char err[512];
	json_t *doc = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "chain_id", chain_id, "protocol", protocol,
				"nodes", "name", "node0", "key", zero_key, "address", address);

	if (!doc) {
		snprintf(why, whylen, "not valid UTF-8");
		return WEFT_EINVAL;
	}
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		abort();
	int rc = weft_genesis_parse(&g, text, "option", err, sizeof(err));
	free(text);
	if (rc < 0) {
		const char *msg = err, *p = strstr(err, ": $");
		if (p && (p = strstr(p + 3, ": ")))
			msg = p + 2;
		snprintf(why, whylen, "%s", msg);
		return rc;
	}
	if (hostp)
		*hostp = strdup(g.nodes[0].host);
	weft_genesis_free(&g);
	if (hostp && !*hostp)
		abort();
	return 0;
}

/* Parses the options into o and checks them: 0 with each node's host
 * (without brackets) in the new array *hosts_out (o->nodes entries; caller
 * frees them and it) and genesis.params in *params / *plen (see
 * build_params); -1 after --help; or a usage error.  The caller releases
 * o->balances and o->params in every case. */
static int parse_genesis_opts(int argc, char **argv, struct genesis_opts *o, char ***hosts_out, uint8_t **params,
			      size_t *plen)
{
	static const struct option longopts[] = {
		{"nodes", required_argument, NULL, 'n'},
		{"out", required_argument, NULL, 'o'},
		{"base-port", required_argument, NULL, 'p'},
		{"host", required_argument, NULL, 'H'},
		{"protocol", required_argument, NULL, 'P'},
		{"chain-id", required_argument, NULL, 'c'},
		{"force", no_argument, NULL, 'f'},
		{"fund", required_argument, NULL, 'F'},
		{"param", required_argument, NULL, 'K'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "genesis", *usage = WEFT_CLI_GENESIS_USAGE("       ");
	char why[512];
	int opt, rc;

	*o = (struct genesis_opts){0, DEFAULT_BASE_PORT, DEFAULT_HOST, DEFAULT_PROTOCOL, DEFAULT_CHAIN_ID, NULL,
				   false, false, NULL, NULL};
	*hosts_out = NULL;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (!parse_number(optarg, MAX_NODES, &o->nodes) || o->nodes < 1)
				return usage_error(cmd, usage, "--nodes wants a number of nodes from 1 to %d, not '%s'",
						   MAX_NODES, optarg);
			break;
		case 'o':
			if (optarg[0] == '\0')
				return usage_error(cmd, usage, "--out wants a directory, not ''");
			o->out = optarg;
			break;
		case 'p':
			if (!parse_number(optarg, 65535, &o->base_port) || o->base_port < 1)
				return usage_error(cmd, usage, "--base-port wants a port from 1 to 65535, not '%s'",
						   optarg);
			break;
		case 'H':
			o->host = optarg;
			break;
		case 'P':
			o->protocol = optarg;
			break;
		case 'c':
			o->chain_id = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'F':
			rc = add_fund(cmd, usage, o, optarg);
			if (rc != 0)
				return rc;
			break;
		case 'K':
			rc = add_param(cmd, usage, o, optarg);
			if (rc != 0)
				return rc;
			break;
		case 'h':
			fputs(genesis_help, stdout);
			return -1;
		default:
			return option_error(cmd, usage, opt, argv);
		}
	}
	if (optind < argc)
		return usage_error(cmd, usage, "unexpected argument '%s'", argv[optind]);
	if (o->nodes == 0)
		return usage_error(cmd, usage, "--nodes N is required");
	if (!o->out)
		return usage_error(cmd, usage, "--out DIR is required");
	if (!placeholders_ok(o->host))
		return usage_error(cmd, usage, "--host '%s': a '{' or '}' that is not part of the placeholder %s",
				   o->host, HOST_PLACEHOLDER);
	o->templated = strstr(o->host, HOST_PLACEHOLDER) != NULL;
	if (!o->templated && o->base_port + o->nodes - 1 > 65535)
		return usage_error(cmd, usage,
				   "--base-port %lu leaves no room for %lu nodes: the last would listen on port %lu, "
				   "above 65535", o->base_port, o->nodes, o->base_port + o->nodes - 1);

	/* The parser's own rules, one option at a time so that the message
	 * names the option. */
	if (check_values(o->chain_id, DEFAULT_PROTOCOL, "127.0.0.1:1", NULL, why, sizeof(why)) < 0)
		return usage_error(cmd, usage, "--chain-id '%s': %s", o->chain_id, why);
	if (check_values(DEFAULT_CHAIN_ID, o->protocol, "127.0.0.1:1", NULL, why, sizeof(why)) < 0)
		return usage_error(cmd, usage, "--protocol '%s': %s", o->protocol, why);
	char **hosts = calloc(o->nodes, sizeof(*hosts));
	if (!hosts)
		abort();
	rc = 0;
	for (unsigned long i = 0; i < o->nodes && rc == 0; i++) {
		char *host = host_of(o, i), *addr = address_of(host, o->base_port);
		rc = check_values(DEFAULT_CHAIN_ID, DEFAULT_PROTOCOL, addr, &hosts[i], why, sizeof(why));
		if (rc < 0 && o->templated)
			rc = usage_error(cmd, usage, "--host '%s' gives node %lu the host '%s': %s", o->host, i, host,
					 why);
		else if (rc < 0)
			rc = usage_error(cmd, usage, "--host '%s': %s", o->host, why);
		free(host);
		free(addr);
	}
	if (rc == 0)
		rc = build_params(cmd, usage, o, params, plen);
	if (rc == 0) {
		*hosts_out = hosts;
		return 0;
	}
	for (unsigned long i = 0; i < o->nodes; i++)
		free(hosts[i]);
	free(hosts);
	return rc;
}

/* mkdir -p with mode for the directories it creates.  0 or -1 with errno. */
static int mkdir_p(const char *path, mode_t mode)
{
	char *p = strdup(path);
	int rc = 0;

	if (!p)
		abort();
	for (char *s = p + 1; rc == 0; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			rc = -1;
		*s = c;
		if (c == '\0')
			break;
	}
	if (rc == 0) {
		struct stat st;
		if (stat(path, &st) < 0)
			rc = -1;
		else if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			rc = -1;
		}
	}
	free(p);
	return rc;
}

/* 1 when dir has no entries, 0 when it has some, -1 with errno. */
static int dir_is_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int empty = 1;

	if (!d)
		return -1;
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			empty = 0;
			break;
		}
	}
	if (!e && errno != 0)
		empty = -1;
	int saved = errno;
	closedir(d);
	errno = saved;
	return empty;
}

/* Creates DIR, or accepts it when it is empty or --force is given. */
static int prepare_out_dir(const char *cmd, const char *dir, bool force)
{
	struct stat st;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return failure(cmd, "%s exists and is not a directory", dir);
		int empty = dir_is_empty(dir);
		if (empty < 0)
			return failure(cmd, "%s: %s", dir, strerror(errno));
		if (!empty && !force)
			return failure(cmd, "%s exists and is not empty; use --force to write into it anyway", dir);
		return LOCAL_OK;
	}
	if (errno != ENOENT)
		return failure(cmd, "%s: %s", dir, strerror(errno));
	if (mkdir_p(dir, 0755) < 0)
		return failure(cmd, "cannot create %s: %s", dir, strerror(errno));
	return LOCAL_OK;
}

/* Creates DIR/node<i> with its key and weft.conf; fills node. */
static int write_node(const char *cmd, const char *dir, unsigned i, bool force, struct weft_genesis_node *node,
		      char **datadir_out)
{
	char *datadir = xasprintf("%s/node%u", dir, i);
	char *key = NULL, *conf = NULL, *text = NULL;
	struct stat st;
	int status = LOCAL_OK, rc;

	*datadir_out = datadir;
	if (mkdir(datadir, 0700) < 0) {
		int e = errno;
		if (e != EEXIST || !force)
			return failure(cmd, "cannot create %s: %s", datadir, strerror(e));
		if (stat(datadir, &st) < 0 || !S_ISDIR(st.st_mode))
			return failure(cmd, "cannot create %s: it exists and is not a directory", datadir);
	}
	/* The mode asked of mkdir passes through the umask; a data dir
	 * holds a secret key, so set it exactly. */
	if (chmod(datadir, 0700) < 0)
		return failure(cmd, "%s: %s", datadir, strerror(errno));

	key = xasprintf("%s/identity.key", datadir);
	struct weft_identity *id = weft_identity_generate();
	memcpy(node->pk, id->pk, WEFT_PK_LEN);
	rc = weft_identity_save(id, key);
	weft_identity_free(id);
	if (rc < 0) {
		status = failure(cmd, "%s: %s", key, weft_strerror(rc));
		goto out;
	}

	conf = xasprintf("%s/weft.conf", datadir);
	text = xasprintf(weft_conf_fmt, i);
	rc = weft_write_file_atomic(conf, text, strlen(text), 0644);
	if (rc < 0)
		status = failure(cmd, "%s: %s", conf, weft_strerror(rc));
out:
	free(key);
	free(conf);
	free(text);
	return status;
}

/* DIR without trailing slashes ("/" stays "/"); caller frees. */
static char *trim_dir(const char *dir)
{
	char *d = strdup(dir);
	size_t n = strlen(dir);

	if (!d)
		abort();
	while (n > 1 && d[n - 1] == '/')
		d[--n] = '\0';
	return d;
}

static int cmd_genesis(int argc, char **argv)
{
	const char *cmd = "genesis";
	struct genesis_opts o;
	struct weft_genesis g = {0};
	char **datadirs = NULL, **hosts = NULL;
	char *dir = NULL, *gpath = NULL;
	char hex[2 * WEFT_PK_LEN + 1];
	int status, rc;

	status = parse_genesis_opts(argc, argv, &o, &hosts, &g.params, &g.plen);
	json_decref(o.balances);
	json_decref(o.params);
	if (status != 0)
		return status < 0 ? LOCAL_OK /* --help */ : status;
	if (weft_crypto_init() < 0) {
		status = failure(cmd, "cannot initialise libsodium");
		goto out;
	}

	dir = trim_dir(o.out);
	status = prepare_out_dir(cmd, dir, o.force);
	if (status != LOCAL_OK)
		goto out;

	/* g borrows chain id, protocol and hosts; names are its own. */
	g.chain_id = (char *)o.chain_id;
	g.protocol = (char *)o.protocol;
	g.n = (uint32_t)o.nodes;
	g.f = (g.n - 1) / 3;
	g.nodes = calloc(g.n, sizeof(*g.nodes));
	datadirs = calloc(g.n, sizeof(*datadirs));
	if (!g.nodes || !datadirs)
		abort();
	for (unsigned i = 0; i < g.n; i++) {
		struct weft_genesis_node *n = &g.nodes[i];
		n->name = xasprintf("node%u", i);
		n->host = hosts[i];
		n->port = (uint16_t)(o.templated ? o.base_port : o.base_port + i);
		status = write_node(cmd, dir, i, o.force, n, &datadirs[i]);
		if (status != LOCAL_OK)
			goto out;
	}

	gpath = xasprintf("%s/genesis.json", dir);
	rc = weft_genesis_write(&g, gpath);
	if (rc < 0) {
		status = failure(cmd, "%s: %s", gpath, weft_strerror(rc));
		goto out;
	}

	json_t *nodes = json_array(), *res;
	if (!nodes)
		abort();
	for (unsigned i = 0; i < g.n; i++) {
		char *addr = address_of(hosts[i], g.nodes[i].port);
		weft_hex_encode(hex, g.nodes[i].pk, WEFT_PK_LEN);
		json_t *n = json_pack("{s:s, s:s, s:s, s:s}", "name", g.nodes[i].name, "datadir", datadirs[i],
				      "key", hex, "address", addr);
		free(addr);
		if (!n || json_array_append_new(nodes, n) < 0) {
			json_decref(nodes);
			status = failure(cmd, "the output directory's name is not valid UTF-8");
			goto out;
		}
	}
	res = json_pack("{s:s, s:o}", "genesis", gpath, "nodes", nodes);
	if (!res) {
		status = failure(cmd, "the output directory's name is not valid UTF-8");
		goto out;
	}
	status = print_json(cmd, res);
out:
	if (g.nodes) {
		for (unsigned i = 0; i < g.n; i++) {
			free(g.nodes[i].name);
			free(datadirs[i]);
		}
	}
	free(g.nodes);
	free(g.params);
	for (unsigned long i = 0; i < o.nodes; i++)
		free(hosts[i]);
	free(hosts);
	free(datadirs);
	free(gpath);
	free(dir);
	return status;
}

/* ---- dispatch ---- */

bool weft_cli_is_local(const char *name)
{
	return strcmp(name, "keygen") == 0 || strcmp(name, "genesis") == 0 || strcmp(name, "ledger-keygen") == 0;
}

int weft_cli_local_main(int argc, char **argv)
{
	if (strcmp(argv[0], "keygen") == 0)
		return cmd_keygen(argc, argv);
	if (strcmp(argv[0], "genesis") == 0)
		return cmd_genesis(argc, argv);
	if (strcmp(argv[0], "ledger-keygen") == 0)
		return weft_cli_ledger_keygen_main(argc, argv);
	fprintf(stderr, "weft-cli: %s is not a local command\n", argv[0]);
	return LOCAL_USAGE;
}
