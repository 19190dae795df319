/* main.c - weft-campaign, the fault-injection campaign runner for docker
 * testnets (docs/campaigns.md):
 *
 *   weft-campaign run MANIFEST.json [--out DIR] [--stage STAGE] [--image IMG]
 *   weft-campaign random --seed S --count K [--nodes N] [--duration-s T] [--out DIR]
 *   weft-campaign check-manifest MANIFEST.json...
 *   weft-campaign report [--into FILE.md] [--images DIR] DIR...
 *
 * Exit status: 0 every check passed, 1 a check failed, 2 a bad manifest or
 * command line (nothing started), 3 docker or the testnet failed, or the run
 * was interrupted (the testnet is torn down either way). */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/crypto.h"
#include "weft/util.h"

#include "campaign.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: weft-campaign run MANIFEST.json [--out DIR] [--stage STAGE] [--image IMG] [--tool PATH]\n"
		"       weft-campaign random --seed S --count K [--nodes N] [--duration-s T] [--out DIR]\n"
		"                            [--image IMG] [--tool PATH]\n"
		"       weft-campaign check-manifest MANIFEST.json...\n"
		"       weft-campaign report [--into FILE.md] [--images DIR] CAMPAIGN_DIR...\n"
		"\n"
		"Runs fault-injection campaigns against a committee of weftd in docker containers\n"
		"(tools/docker-testnet.sh): a load of transactions, a schedule of faults (kill,\n"
		"pause, restart, disconnect, partition, transport faults), then checks on the honest\n"
		"nodes: equal order and ledger hashes, no acknowledged transaction lost, none\n"
		"ordered twice, progress within bounds.recover_s of each heal.  See docs/campaigns.md.\n"
		"\n"
		"  --out DIR        run: the campaign's directory (default build/campaigns/NAME);\n"
		"                   random: the batch's (default build/campaigns/random-SEED), one\n"
		"                   directory per campaign inside\n"
		"  --stage STAGE    run the stages up to STAGE (setup start load perturb heal wait\n"
		"                   check) and leave the testnet up; --stage stop only tears down the\n"
		"                   testnet an earlier --stage left in --out\n"
		"  --image IMG      the docker image (default the tool's, weft:local)\n"
		"  --tool PATH      the testnet tool (default tools/docker-testnet.sh of this tree)\n"
		"  --seed S --count K   random: draw K manifests from seed S and run them in a row\n"
		"  --nodes N        random: committee size (default 4)\n"
		"  --duration-s T   random: seconds of load per campaign (default 120)\n"
		"  --into FILE.md   report: replace the marked section of FILE.md (default: stdout)\n"
		"  --images DIR     report: where the charts go (default docs/campaigns)\n"
		"\n"
		"Exit status: 0 every check passed; 1 a check failed; 2 bad manifest or usage;\n"
		"3 docker or the testnet failed, or interrupted (the testnet is torn down).\n");
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "weft-campaign: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	usage(stderr);
	return CAMPAIGN_BAD;
}

/* tools/docker-testnet.sh next to this build (build/bin/../../tools), or
 * in the current directory. */
static char *default_tool(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(path, sizeof(path), "%s/../../tools/docker-testnet.sh", dirname(exe));
		if (access(path, R_OK) == 0)
			return realpath(path, NULL);
	}
	return weft_xstrdup("tools/docker-testnet.sh");
}

struct args {
	const char *out, *image, *into, *images;
	char *tool;
	int stage;
	bool has_seed, has_count;
	uint64_t seed, count, nodes;
	double duration;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},    {"stage", required_argument, NULL, 's'},
		{"image", required_argument, NULL, 'i'},  {"tool", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 'S'},   {"count", required_argument, NULL, 'c'},
		{"nodes", required_argument, NULL, 'n'},  {"duration-s", required_argument, NULL, 'd'},
		{"into", required_argument, NULL, 'I'},   {"images", required_argument, NULL, 'G'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	int c;
	char *end;

	a->stage = -1;
	a->nodes = 4;
	a->duration = 120;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': a->out = optarg; break;
		case 'i': a->image = optarg; break;
		case 't': free(a->tool); a->tool = weft_xstrdup(optarg); break;
		case 'I': a->into = optarg; break;
		case 'G': a->images = optarg; break;
		case 's':
			if (campaign_stage_parse(optarg, &a->stage) < 0)
				return usage_error("--stage '%s': one of setup start load perturb heal wait check stop", optarg);
			break;
		case 'S':
			if (weft_parse_u64(optarg, &a->seed) < 0)
				return usage_error("--seed '%s': a number", optarg);
			a->has_seed = true;
			break;
		case 'c':
			if (weft_parse_u64(optarg, &a->count) < 0 || a->count == 0 || a->count > 100000)
				return usage_error("--count '%s': a number from 1 to 100000", optarg);
			a->has_count = true;
			break;
		case 'n':
			if (weft_parse_u64(optarg, &a->nodes) < 0 || a->nodes < CAMPAIGN_MIN_NODES || a->nodes > CAMPAIGN_MAX_NODES)
				return usage_error("--nodes '%s': a committee of 4 to 32 nodes", optarg);
			break;
		case 'd':
			a->duration = strtod(optarg, &end);
			if (*end || !(a->duration >= 40 && a->duration <= 86400))
				return usage_error("--duration-s '%s': 40 to 86400 seconds", optarg);
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return CAMPAIGN_BAD;
		}
	}
	if (!a->tool)
		a->tool = default_tool();
	return 0;
}

static int cmd_run(int argc, char **argv, struct args *a)
{
	struct campaign_manifest m;
	char err[1024], line[512], out[4096];

	if (argc - optind != 1)
		return usage_error("run wants one MANIFEST.json");
	if (campaign_manifest_load(&m, argv[optind], err, sizeof(err)) < 0) {
		fprintf(stderr, "weft-campaign: %s\n", err);
		return CAMPAIGN_BAD;
	}
	snprintf(out, sizeof(out), "%s", a->out ? a->out : "build/campaigns/");
	if (!a->out)
		strncat(out, m.name, sizeof(out) - strlen(out) - 1);
	struct campaign_opts o = {.out = out, .tool = a->tool, .image = a->image,
				  .last_stage = a->stage < 0 ? CAMPAIGN_STAGE_STOP : a->stage};
	int status;
	if (a->stage == CAMPAIGN_STAGE_STOP) { /* only the teardown of an earlier --stage run */
		status = campaign_stop_only(&o);
	} else {
		status = campaign_run(&m, &o, line, sizeof(line));
		printf("%s%s", campaign_summary_header(), line);
	}
	campaign_manifest_free(&m);
	return status;
}

static int cmd_random(struct args *a)
{
	char base[4096], dir[4200], err[1024], line[512];
	int worst = CAMPAIGN_PASS;

	if (!a->has_seed || !a->has_count)
		return usage_error("random wants --seed S and --count K");
	snprintf(base, sizeof(base), "%s", a->out ? a->out : "");
	if (!a->out)
		snprintf(base, sizeof(base), "build/campaigns/random-%llu", (unsigned long long)a->seed);
	printf("%s", campaign_summary_header());
	fflush(stdout);
	for (uint64_t k = 0; k < a->count && !campaign_interrupted; k++) {
		struct campaign_manifest m;
		json_t *doc = campaign_generate(a->seed, (uint32_t)k, (uint32_t)a->nodes, a->duration);
		if (campaign_manifest_parse(&m, doc, "generated", err, sizeof(err)) < 0) {
			fprintf(stderr, "weft-campaign: the generator drew a bad manifest (a bug): %s\n", err);
			json_decref(doc);
			return CAMPAIGN_BAD;
		}
		json_decref(doc);
		snprintf(dir, sizeof(dir), "%s/%s", base, m.name);
		struct campaign_opts o = {.out = dir, .tool = a->tool, .image = a->image, .last_stage = CAMPAIGN_STAGE_STOP};
		int status = campaign_run(&m, &o, line, sizeof(line));
		printf("%s", line);
		fflush(stdout);
		worst = status > worst ? status : worst;
		campaign_manifest_free(&m);
	}
	return worst;
}

static int cmd_check(int argc, char **argv)
{
	int status = CAMPAIGN_PASS;
	if (optind >= argc)
		return usage_error("check-manifest wants MANIFEST.json...");
	for (int i = optind; i < argc; i++) {
		struct campaign_manifest m;
		char err[1024];
		if (campaign_manifest_load(&m, argv[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "weft-campaign: %s\n", err);
			status = CAMPAIGN_BAD;
			continue;
		}
		char *faults = campaign_fault_words(&m);
		size_t steps = 0;
		for (size_t k = 0; k < m.nsteps; k++)
			steps += !m.steps[k].is_heal;
		printf("%s: ok: %s, %u nodes (f = %u), %g s at %g tx/s, %zu steps; faults: %s\n", argv[i], m.name, m.n, m.f,
		       m.duration_s, m.rate, steps, faults);
		free(faults);
		campaign_manifest_free(&m);
	}
	return status;
}

int main(int argc, char **argv)
{
	struct args a = {0};
	int status;

	if (argc < 2) {
		usage(stderr);
		return CAMPAIGN_BAD;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (weft_crypto_init() < 0) {
		fprintf(stderr, "weft-campaign: libsodium failed to initialise\n");
		return CAMPAIGN_INFRA;
	}
	json_object_seed(0);
	const char *cmd = argv[1];
	if ((status = parse_args(argc - 1, argv + 1, &a)) != 0)
		return status;
	argc--;
	argv++;
	if (strcmp(cmd, "run") == 0)
		status = cmd_run(argc, argv, &a);
	else if (strcmp(cmd, "random") == 0)
		status = cmd_random(&a);
	else if (strcmp(cmd, "check-manifest") == 0)
		status = cmd_check(argc, argv);
	else if (strcmp(cmd, "report") == 0)
		status = optind < argc ? campaign_report(argv + optind, argc - optind, a.into,
							a.images ? a.images : "docs/campaigns")
				       : usage_error("report wants campaign directories");
	else
		status = usage_error("unknown command '%s'", cmd);
	free(a.tool);
	return status;
}
