/* main.c - weftd's entry point: command line, then node open/run/close.
 * Exit codes: 0 clean stop, 1 start-up or runtime failure, 2 usage or
 * configuration error. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/version.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: weftd [--datadir DIR] [--config FILE]\n"
		"\n"
		"  --datadir DIR       data directory (default ./weft-data); created on first start\n"
		"                      with an Ed25519 identity, an LMDB database and the RPC socket\n"
		"                      DIR/rpc.sock\n"
		"  --config FILE       configuration file (default DIR/weft.conf when present)\n"
		"  --byzantine STRATEGY  misbehave on purpose, for fault-injection tests, with\n"
		"                      the simulator's words (docs/faults.md): omission (send\n"
		"                      nothing; also 'silent'), corrupt (flip a byte of every\n"
		"                      message sent), equivocate (a twin tells half the peers\n"
		"                      a different story), or any strategy the committee's\n"
		"                      protocol registers (the node stack: bad_refs)\n"
		"  --trace FILE        write a protocol trace to FILE (NDJSON, truncated at start):\n"
		"                      every step's input, the messages it sent and what it\n"
		"                      delivered, with the message bytes (docs/ops.md; for\n"
		"                      checking a run against tla/, not for production)\n"
		"  --describe-config   print every configuration key with its default and exit\n"
		"  --version           print the version and exit\n"
		"  --help              this text\n"
		"\n"
		"Talk to a running node with weft-cli --datadir DIR METHOD (weft-cli help).\n");
}

int main(int argc, char **argv)
{
	/* Storage jobs allocate and free megabyte buffers per chunk: keep them
	 * in the heap, and do not hand freed heap back to the kernel at each
	 * free (glibc's defaults would, then fault every page in again). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 128 << 20);
	static const struct option longopts[] = {
		{"datadir", required_argument, NULL, 'd'},
		{"config", required_argument, NULL, 'c'},
		{"byzantine", required_argument, NULL, 'b'},
		{"trace", required_argument, NULL, 't'},
		{"describe-config", no_argument, NULL, 'D'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct weft_node_args args = {.datadir = "weft-data"};
	const char *trace_path = NULL;
	int opt;
	while ((opt = getopt_long(argc, argv, "d:c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd': args.datadir = optarg; break;
		case 'c': args.config_path = optarg; break;
		case 'b':
			/* Not a host behaviour: a protocol strategy, checked once
			 * the genesis names the protocol. */
			if (weft_byzantine_parse(optarg, &args.byzantine) != 0)
				args.strategy = optarg;
			break;
		case 't': trace_path = optarg; break;
		case 'D': weft_config_describe(stdout); return 0;
		case 'V': printf("weftd %s\n", WEFT_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "weftd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (weft_crypto_init() != 0) {
		fprintf(stderr, "weftd: libsodium failed to initialise\n");
		return 1;
	}

	struct weft_node node = {
		.lock_fd = -1, .byzantine = args.byzantine, .strategy = args.strategy, .trace_path = trace_path};
	if (weft_node_configure(&node, &args) != 0) {
		weft_config_free(&node.cfg);
		return 2;
	}
	if (mkdir(args.datadir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "weftd: cannot create data dir %s: %s\n", args.datadir, strerror(errno));
		weft_config_free(&node.cfg);
		return 1;
	}
	node.datadir = realpath(args.datadir, NULL);
	if (node.datadir == NULL) {
		fprintf(stderr, "weftd: data dir %s: %s\n", args.datadir, strerror(errno));
		weft_config_free(&node.cfg);
		return 1;
	}
	/* A start-up failure exits 1, or the usage error's 2 it set. */
	int rc = weft_node_open(&node) == 0 ? weft_node_run(&node) : node.exit_code ? node.exit_code : 1;
	weft_node_close(&node);
	free(node.datadir);
	return rc;
}
