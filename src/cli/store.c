/* store.c - weft-cli's storage commands (docs/storage.md), the client side
 * of the daemon's store.* RPC methods:
 *
 *   weft-cli store put FILE [--mode random|convergent] [--k K] [--avg BYTES]
 *                           [--name NAME] [--quiet]
 *   weft-cli store get ID|CAPABILITY OUT [--offset A] [--length L] [--quiet]
 *   weft-cli store ls | stat ID | rm ID | grant ID --offset A --length L
 *   weft-cli store audit [--count C] | repair [ID] | gc
 *
 * Here: parsing a store command line into one RPC call (method and named
 * params), and drawing the progress of put and get from the daemon's
 * "store.progress" notifications.  main.c connects, makes the call and
 * prints the result.  The daemon opens FILE and OUT itself, so both are
 * sent as absolute paths: FILE through realpath(), OUT as the realpath of
 * its directory plus its name.
 *
 * Progress goes to stderr: on a terminal one line redrawn in place (at
 * most ten times a second) and finished with a newline; otherwise a plain
 * line at most once a second, and the last state when the call ends.  The
 * rate is the bytes done over the wall time since the call started
 * (monotonic clock); the ETA follows from the rate. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/json.h"

#include "cli.h"

#define CAP_PREFIX "weft-grant:"
#define MAX_K 255 /* Reed-Solomon over GF(2^8): at most 255 shares */
#define TTY_REDRAW_S 0.1
#define PLAIN_EVERY_S 1.0
#define BAR_MAX 40
#define BAR_MIN 10

const char weft_cli_store_help[] =
	"usage: " WEFT_CLI_STORE_USAGE("       ") "\n"
	"\n"
	"Global options (--datadir DIR | --socket PATH, --timeout SECONDS) go before\n"
	"`store`, as for any method.  Each command is one call of the daemon's store.*\n"
	"RPC method of the same name; the result prints as JSON on stdout.\n"
	"\n"
	"  put FILE           store FILE (encrypted, erasure-coded across the\n"
	"                     committee); prints its id and an owner capability\n"
	"    --mode M         random (default) or convergent encryption\n"
	"    --k K            shares needed to rebuild a chunk, 1 to 255\n"
	"    --avg BYTES      average chunk size\n"
	"    --name NAME      a name kept in the manifest\n"
	"  get ID|CAP OUT     fetch a file by id (yours) or by a capability\n"
	"                     (weft-grant:...) into OUT\n"
	"    --offset A       start at byte A\n"
	"    --length L       fetch L bytes\n"
	"  ls                 list the stored files\n"
	"  stat ID            one file's manifest and placement\n"
	"  rm ID              forget a file; its chunks go to garbage collection\n"
	"  grant ID --offset A --length L\n"
	"                     a capability for bytes [A, A+L) of the file\n"
	"  audit [--count C]  ask C random shares for storage proofs\n"
	"  repair [ID]        rebuild missing shares (of one file, or of all)\n"
	"  gc                 free the chunks no file references\n"
	"\n"
	"ID is 64 hex digits (an optional 0x is ignored).  FILE and OUT are sent as\n"
	"absolute paths: the daemon itself reads FILE and writes OUT.  Numbers are\n"
	"decimal integers with an optional suffix K, M, G, T (or KiB, MiB, GiB, TiB:\n"
	"powers of 1024) or KB, MB, GB, TB (powers of 1000).\n"
	"\n"
	"put and get show their progress on stderr (a bar on a terminal, otherwise a\n"
	"line at most once a second; --quiet, -q: none) and wait for the daemon\n"
	"without a time limit unless --timeout is given; the other commands time\n"
	"out after 30 seconds by default.\n"
	"\n"
	"Exit status as for any method: 0 success, 1 the daemon returned an error,\n"
	"2 usage error (also for a FILE that cannot be resolved or an OUT whose\n"
	"directory does not exist), 3 cannot connect, 4 timed out, 5 bad reply.\n";

/* ---- numbers and ids ---- */

int weft_cli_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{"", 1},
		{"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
		{"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000000ull},
		{"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000000000ull},
		{"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
	};
	uint64_t v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return WEFT_EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return WEFT_EINVAL;
		v = v * 10 + d;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix) != 0)
			continue;
		if (v > (uint64_t)INT64_MAX / units[i].mult)
			return WEFT_EINVAL;
		*out = v * units[i].mult;
		return 0;
	}
	return WEFT_EINVAL;
}

int weft_cli_store_parse_id(const char *s, char id[WEFT_CLI_STORE_ID_HEX + 1])
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (strlen(s) != WEFT_CLI_STORE_ID_HEX)
		return WEFT_EINVAL;
	for (size_t i = 0; i < WEFT_CLI_STORE_ID_HEX; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return WEFT_EINVAL;
		id[i] = c;
	}
	id[WEFT_CLI_STORE_ID_HEX] = '\0';
	return 0;
}

/* ---- progress formatting ---- */

/* Bytes in binary units: "512 B", "481.2 MiB". */
static void fmt_size(char *buf, size_t len, uint64_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)n;
	unsigned u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", n);
		return;
	}
	while (u + 1 < sizeof(units) / sizeof(units[0]) && v >= 1023.95) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* Bytes per second in decimal units: "950 B/s", "212.4 MB/s". */
static void fmt_rate(char *buf, size_t len, double r)
{
	static const char *const units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
	unsigned u = 0;

	if (r < 999.5) {
		snprintf(buf, len, "%.0f B/s", r < 0 ? 0.0 : r);
		return;
	}
	while (u + 1 < sizeof(units) / sizeof(units[0]) && r >= 999.95) {
		r /= 1000;
		u++;
	}
	snprintf(buf, len, "%.1f %s", r, units[u]);
}

/* "M:SS", "H:MM:SS", or "--:--" when unknown (secs < 0) or beyond 99 h. */
static void fmt_eta(char *buf, size_t len, double secs)
{
	if (secs < 0 || secs >= 100.0 * 3600) {
		snprintf(buf, len, "--:--");
		return;
	}
	unsigned s = (unsigned)(secs + 0.5);
	if (s >= 3600)
		snprintf(buf, len, "%u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%u:%02u", s / 60, s % 60);
}

static double rate_of(uint64_t bytes, double elapsed)
{
	return elapsed > 0 ? (double)bytes / elapsed : 0;
}

/* Rounded whole percent, 100 only when done. */
static unsigned percent_of(uint64_t bytes, uint64_t total)
{
	if (bytes >= total)
		return 100;
	unsigned p = (unsigned)((double)bytes * 100.0 / (double)total + 0.5);
	return p > 99 ? 99 : p;
}

size_t weft_cli_progress_bar(char *buf, size_t len, const char *op, uint64_t bytes, uint64_t total,
			     double elapsed, int width)
{
	char done[32], all[32], rate[32], eta[32], rest[160], bar[BAR_MAX + 1];
	double r = rate_of(bytes, elapsed);
	int head = (int)strlen(op) < 4 ? 5 : (int)strlen(op) + 1; /* "%-4s " */
	size_t n;

	if (len == 0)
		return 0;
	fmt_size(done, sizeof(done), bytes);
	fmt_rate(rate, sizeof(rate), r);
	if (total == 0) {
		/* Unknown size: no bar, no percent, no ETA. */
		snprintf(rest, sizeof(rest), "%s  %s", done, rate);
		snprintf(buf, len, "%-4s %s", op, rest);
	} else {
		double left = bytes >= total ? 0 : r > 0 ? (double)(total - bytes) / r : -1;
		fmt_size(all, sizeof(all), total);
		fmt_eta(eta, sizeof(eta), left);
		snprintf(rest, sizeof(rest), "%3u%%  %s / %s  %s  ETA %s", percent_of(bytes, total), done, all,
			 rate, eta);
		/* What is left of the line for the bar, "[" and "] " around it. */
		int avail = width > 0 ? width - 1 - head - 3 - (int)strlen(rest) : BAR_MAX;
		if (avail >= BAR_MIN) {
			int w = avail > BAR_MAX ? BAR_MAX : avail;
			int fill = bytes >= total ? w : (int)((double)bytes * w / (double)total);
			if (fill > w)
				fill = w;
			for (int i = 0; i < w; i++)
				bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
			bar[w] = '\0';
			snprintf(buf, len, "%-4s [%s] %s", op, bar, rest);
		} else {
			snprintf(buf, len, "%-4s %s", op, rest);
		}
	}
	n = strlen(buf);
	if (width > 1 && n > (size_t)width - 1) {
		n = (size_t)width - 1;
		buf[n] = '\0';
	}
	return n;
}

size_t weft_cli_progress_line(char *buf, size_t len, const char *op, uint64_t bytes, uint64_t total,
			      double elapsed)
{
	char rate[32];

	if (len == 0)
		return 0;
	fmt_rate(rate, sizeof(rate), rate_of(bytes, elapsed));
	if (total == 0)
		snprintf(buf, len, "%s %" PRIu64 " bytes %s", op, bytes, rate);
	else
		snprintf(buf, len, "%s %u%% %" PRIu64 "/%" PRIu64 " bytes %s", op, percent_of(bytes, total), bytes,
			 total, rate);
	return strlen(buf);
}

/* ---- progress state ---- */

double weft_cli_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int weft_cli_terminal_width(FILE *f)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (cols) {
		char *end;
		long v = strtol(cols, &end, 10);
		if (end != cols && *end == '\0' && v > 0 && v < 10000)
			return (int)v;
	}
	return 80;
}

void weft_cli_progress_init(struct weft_cli_progress *p, FILE *out, bool tty, int width, const char *op,
			    double start)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->tty = tty;
	p->width = width;
	p->start = start;
	p->last_shown = start;
	snprintf(p->op, sizeof(p->op), "%s", op);
}

/* Shows the latest state: redraws the terminal line, or prints a line. */
static void show(struct weft_cli_progress *p, double now)
{
	char line[512];
	double elapsed = p->at - p->start;

	if (p->tty) {
		int width = p->width > 0 ? p->width : weft_cli_terminal_width(p->out);
		size_t n = weft_cli_progress_bar(line, sizeof(line), p->op, p->bytes, p->total, elapsed, width);
		size_t pad = p->drawn > n ? p->drawn - n : 0;
		if (width > 1 && n + pad > (size_t)width - 1)
			pad = n < (size_t)width - 1 ? (size_t)width - 1 - n : 0;
		fprintf(p->out, "\r%s%*s", line, (int)pad, "");
		p->drawn = n;
	} else {
		weft_cli_progress_line(line, sizeof(line), p->op, p->bytes, p->total, elapsed);
		fprintf(p->out, "%s\n", line);
	}
	fflush(p->out);
	p->shown = true;
	p->last_shown = now;
}

void weft_cli_progress_update(struct weft_cli_progress *p, const char *op, uint64_t bytes, uint64_t total,
			      double now)
{
	if (op && op[0])
		snprintf(p->op, sizeof(p->op), "%s", op);
	p->bytes = bytes;
	p->total = total;
	p->at = now;
	p->seen = true;
	p->shown = false;
	if (now - p->last_shown >= (p->tty ? TTY_REDRAW_S : PLAIN_EVERY_S))
		show(p, now);
}

void weft_cli_progress_finish(struct weft_cli_progress *p, double now)
{
	if (!p->seen || p->finished)
		return;
	if (!p->shown)
		show(p, now);
	if (p->tty) {
		fputc('\n', p->out);
		fflush(p->out);
	}
	p->finished = true;
}

/* A non-negative integer member of a notification, or 0. */
static uint64_t uint_member(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

void weft_cli_progress_notify(const char *method, json_t *params, void *arg)
{
	struct weft_cli_progress *p = arg;
	json_t *m = json_is_array(params) ? json_array_get(params, 0) : params;

	if (strcmp(method, WEFT_CLI_STORE_PROGRESS_METHOD) != 0 || !json_is_object(m))
		return;
	json_t *op = json_object_get(m, "op");
	weft_cli_progress_update(p, json_is_string(op) ? json_string_value(op) : NULL, uint_member(m, "bytes"),
				 uint_member(m, "total"), weft_cli_monotonic());
}

/* ---- the command line ---- */

enum sub_opt {
	O_MODE = 1 << 0,
	O_K = 1 << 1,
	O_AVG = 1 << 2,
	O_NAME = 1 << 3,
	O_OFFSET = 1 << 4,
	O_LENGTH = 1 << 5,
	O_COUNT = 1 << 6,
	O_QUIET = 1 << 7,
};

struct sub {
	const char *name;
	unsigned opts;       /* the options it takes */
	int min_args, max_args;
	const char *usage;   /* its synopsis, for messages */
};

static const struct sub subs[] = {
	{"put", O_MODE | O_K | O_AVG | O_NAME | O_QUIET, 1, 1,
	 "weft-cli store put FILE [--mode random|convergent] [--k K] [--avg BYTES] [--name NAME] [--quiet]"},
	{"get", O_OFFSET | O_LENGTH | O_QUIET, 2, 2,
	 "weft-cli store get ID|CAPABILITY OUT [--offset A] [--length L] [--quiet]"},
	{"ls", 0, 0, 0, "weft-cli store ls"},
	{"stat", 0, 1, 1, "weft-cli store stat ID"},
	{"rm", 0, 1, 1, "weft-cli store rm ID"},
	{"grant", O_OFFSET | O_LENGTH, 1, 1, "weft-cli store grant ID --offset A --length L"},
	{"audit", O_COUNT, 0, 0, "weft-cli store audit [--count C]"},
	{"repair", 0, 0, 1, "weft-cli store repair [ID]"},
	{"gc", 0, 0, 0, "weft-cli store gc"},
};

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return WEFT_EINVAL;
}

static void set_new(json_t *map, const char *key, json_t *v)
{
	if (!v || json_object_set_new(map, key, v) < 0)
		abort();
}

/* A string member that must be valid UTF-8 (JSON cannot carry others). */
static int set_str(json_t *map, const char *key, const char *s, const char *what, const char *sub, char *err,
		   size_t errlen)
{
	json_t *v = json_string(s);

	if (!v)
		return fail(err, errlen, "store %s: %s is not valid UTF-8", sub, what);
	set_new(map, key, v);
	return 0;
}

static int set_id(json_t *map, const char *arg, const struct sub *sub, char *err, size_t errlen)
{
	char id[WEFT_CLI_STORE_ID_HEX + 1];

	if (weft_cli_store_parse_id(arg, id) < 0) {
		if (strncmp(arg, CAP_PREFIX, strlen(CAP_PREFIX)) == 0)
			return fail(err, errlen, "store %s: wants a file id, not a capability (only get takes one)",
				    sub->name);
		return fail(err, errlen, "store %s: '%s' is not a file id (64 hex digits)", sub->name, arg);
	}
	set_new(map, "id", json_string(id));
	return 0;
}

/* FILE through realpath(): it must exist and not be a directory. */
static int set_file(json_t *map, const char *arg, char *err, size_t errlen)
{
	struct stat st;
	char *abs;

	if (arg[0] == '\0')
		return fail(err, errlen, "store put: FILE is empty");
	abs = realpath(arg, NULL);
	if (!abs)
		return fail(err, errlen, "store put: %s: %s", arg, strerror(errno));
	if (stat(abs, &st) == 0 && S_ISDIR(st.st_mode)) {
		free(abs);
		return fail(err, errlen, "store put: %s is a directory, not a file", arg);
	}
	int rc = set_str(map, "path", abs, "FILE's absolute path", "put", err, errlen);
	free(abs);
	return rc;
}

/* OUT as the realpath of its directory (which must exist) plus its name. */
static int set_out(json_t *map, const char *arg, char *err, size_t errlen)
{
	const char *slash = strrchr(arg, '/');
	const char *base = slash ? slash + 1 : arg;
	char *dir, *rdir, *abs;
	struct stat st;
	int rc;

	if (arg[0] == '\0')
		return fail(err, errlen, "store get: OUT is empty");
	if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return fail(err, errlen, "store get: OUT '%s' must name a file, not a directory", arg);
	if (!slash)
		dir = strdup(".");
	else if (slash == arg)
		dir = strdup("/");
	else
		dir = strndup(arg, (size_t)(slash - arg));
	if (!dir)
		abort();
	rdir = realpath(dir, NULL);
	if (!rdir) {
		rc = fail(err, errlen, "store get: OUT's directory %s: %s", dir, strerror(errno));
		free(dir);
		return rc;
	}
	free(dir);
	if (stat(rdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(rdir);
		return fail(err, errlen, "store get: OUT's directory in '%s' is not a directory", arg);
	}
	size_t n = strlen(rdir) + 1 + strlen(base) + 1;
	abs = malloc(n);
	if (!abs)
		abort();
	snprintf(abs, n, "%s%s%s", rdir, strcmp(rdir, "/") == 0 ? "" : "/", base);
	free(rdir);
	if (stat(abs, &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = fail(err, errlen, "store get: OUT %s is a directory; name a file in it", abs);
		free(abs);
		return rc;
	}
	rc = set_str(map, "out", abs, "OUT's absolute path", "get", err, errlen);
	free(abs);
	return rc;
}

static int option_error(const struct sub *sub, int opt, char **argv, char *err, size_t errlen)
{
	if (opt == ':')
		return fail(err, errlen, "store %s: option '%s' needs an argument", sub->name, argv[optind - 1]);
	if (optopt == 0 || strncmp(argv[optind - 1], "--", 2) == 0)
		return fail(err, errlen, "store %s: unknown or ambiguous option '%s'", sub->name, argv[optind - 1]);
	return fail(err, errlen, "store %s: unknown option '-%c'", sub->name, optopt);
}

const char *weft_cli_store_usage_of(const char *name)
{
	for (size_t i = 0; name && i < sizeof(subs) / sizeof(subs[0]); i++)
		if (strcmp(subs[i].name, name) == 0)
			return subs[i].usage;
	return NULL;
}

/* The option values of one command line. */
struct opt_values {
	unsigned seen;           /* enum sub_opt bits */
	const char *mode, *name;
	uint64_t k, avg, offset, length, count;
};

static int parse_opts(struct weft_cli_store *s, const struct sub *sub, int argc, char **argv,
		      struct opt_values *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, O_MODE},
		{"k", required_argument, NULL, O_K},
		{"avg", required_argument, NULL, O_AVG},
		{"name", required_argument, NULL, O_NAME},
		{"offset", required_argument, NULL, O_OFFSET},
		{"length", required_argument, NULL, O_LENGTH},
		{"count", required_argument, NULL, O_COUNT},
		{"quiet", no_argument, NULL, O_QUIET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char name[32];
	int opt, idx;

	optind = 0;
	opterr = 0;
	/* Options may come before, between or after the arguments ("--" ends
	 * them, for a FILE that starts with '-'). */
	while ((idx = -1, opt = getopt_long(argc, argv, ":hq", longopts, &idx)) != -1) {
		if (opt == 'h') {
			s->help = true;
			return 0;
		}
		if (opt == 'q')
			opt = O_QUIET;
		if (opt == ':' || opt == '?')
			return option_error(sub, opt, argv, err, errlen);
		if (idx >= 0)
			snprintf(name, sizeof(name), "--%s", longopts[idx].name);
		else
			snprintf(name, sizeof(name), "-%c", opt == O_QUIET ? 'q' : '?');
		if (!(sub->opts & (unsigned)opt))
			return fail(err, errlen, "store %s takes no option '%s'", sub->name, name);
		if ((o->seen & (unsigned)opt) && opt != O_QUIET)
			return fail(err, errlen, "store %s: option '%s' given twice", sub->name, name);
		o->seen |= (unsigned)opt;
		switch ((enum sub_opt)opt) {
		case O_MODE:
			if (strcmp(optarg, "random") != 0 && strcmp(optarg, "convergent") != 0)
				return fail(err, errlen, "store %s: --mode wants random or convergent, not '%s'",
					    sub->name, optarg);
			o->mode = optarg;
			break;
		case O_K:
			if (weft_cli_parse_size(optarg, &o->k) < 0 || o->k < 1 || o->k > MAX_K)
				return fail(err, errlen, "store %s: --k wants a number of shares from 1 to %d, not '%s'",
					    sub->name, MAX_K, optarg);
			break;
		case O_AVG:
			if (weft_cli_parse_size(optarg, &o->avg) < 0 || o->avg < 1)
				return fail(err, errlen, "store %s: --avg wants a chunk size in bytes (like 1048576 "
					    "or 1M), not '%s'", sub->name, optarg);
			break;
		case O_NAME:
			if (optarg[0] == '\0')
				return fail(err, errlen, "store %s: --name wants a name, not ''", sub->name);
			if (!weft_utf8_valid(optarg, strlen(optarg)))
				return fail(err, errlen, "store %s: --name is not valid UTF-8", sub->name);
			o->name = optarg;
			break;
		case O_OFFSET:
			if (weft_cli_parse_size(optarg, &o->offset) < 0)
				return fail(err, errlen, "store %s: --offset wants a number of bytes (like 4096 or 4K), "
					    "not '%s'", sub->name, optarg);
			break;
		case O_LENGTH:
			if (weft_cli_parse_size(optarg, &o->length) < 0)
				return fail(err, errlen, "store %s: --length wants a number of bytes (like 4096 or 4K), "
					    "not '%s'", sub->name, optarg);
			break;
		case O_COUNT:
			if (weft_cli_parse_size(optarg, &o->count) < 0 || o->count < 1)
				return fail(err, errlen, "store %s: --count wants a positive number, not '%s'",
					    sub->name, optarg);
			break;
		case O_QUIET:
			s->progress = false;
			break;
		}
	}
	if (strcmp(sub->name, "grant") == 0 && !(o->seen & O_OFFSET))
		return fail(err, errlen, "store grant: --offset A is required");
	if (strcmp(sub->name, "grant") == 0 && !(o->seen & O_LENGTH))
		return fail(err, errlen, "store grant: --length L is required");
	return 0;
}

/* The file argument of get: a capability or an id. */
static int set_source(json_t *map, const char *arg, const struct sub *sub, char *err, size_t errlen)
{
	char id[WEFT_CLI_STORE_ID_HEX + 1];

	if (strncmp(arg, CAP_PREFIX, strlen(CAP_PREFIX)) == 0) {
		if (arg[strlen(CAP_PREFIX)] == '\0')
			return fail(err, errlen, "store get: the capability '%s' is empty", arg);
		return set_str(map, "capability", arg, "the capability", "get", err, errlen);
	}
	if (weft_cli_store_parse_id(arg, id) < 0)
		return fail(err, errlen, "store get: '%s' is neither a file id (64 hex digits) nor a capability "
			    "(" CAP_PREFIX "...)", arg);
	return set_id(map, arg, sub, err, errlen);
}

/* Parses the options and arguments of sub into s->params. */
static int parse_sub(struct weft_cli_store *s, const struct sub *sub, int argc, char **argv, char *err,
		     size_t errlen)
{
	struct opt_values o = {0};
	int rc = parse_opts(s, sub, argc, argv, &o, err, errlen);

	if (rc < 0 || s->help)
		return rc;

	int nargs = argc - optind;
	char **args = argv + optind;
	if (nargs < sub->min_args) {
		const char *what = strcmp(sub->name, "put") == 0 ? "FILE"
				   : strcmp(sub->name, "get") != 0 ? "ID"
				   : nargs == 0 ? "ID or CAPABILITY, and OUT" : "OUT";
		return fail(err, errlen, "store %s: %s missing", sub->name, what);
	}
	if (nargs > sub->max_args)
		return fail(err, errlen, "store %s: unexpected argument '%s'", sub->name, args[sub->max_args]);

	/* The arguments first, then the options in a fixed order. */
	json_t *map = json_array_get(s->params, 0);
	if (strcmp(sub->name, "put") == 0)
		rc = set_file(map, args[0], err, errlen);
	else if (strcmp(sub->name, "get") == 0)
		rc = set_source(map, args[0], sub, err, errlen);
	else if (nargs == 1)
		rc = set_id(map, args[0], sub, err, errlen);
	if (rc == 0 && strcmp(sub->name, "get") == 0)
		rc = set_out(map, args[1], err, errlen);
	if (rc < 0)
		return rc;
	if (o.mode)
		set_new(map, "mode", json_string(o.mode));
	if (o.seen & O_K)
		set_new(map, "k", json_integer((json_int_t)o.k));
	if (o.seen & O_AVG)
		set_new(map, "avg", json_integer((json_int_t)o.avg));
	if (o.name)
		set_new(map, "name", json_string(o.name));
	if (o.seen & O_OFFSET)
		set_new(map, "offset", json_integer((json_int_t)o.offset));
	if (o.seen & O_LENGTH)
		set_new(map, "length", json_integer((json_int_t)o.length));
	if (o.seen & O_COUNT)
		set_new(map, "count", json_integer((json_int_t)o.count));
	if (s->progress)
		set_new(map, "progress", json_true());
	return 0;
}

int weft_cli_store_parse(struct weft_cli_store *s, int argc, char **argv, char *err, size_t errlen)
{
	const struct sub *sub = NULL;

	memset(s, 0, sizeof(*s));
	if (errlen > 0)
		err[0] = '\0';
	if (argc < 1)
		return fail(err, errlen, "store: no command given (put, get, ls, stat, rm, grant, audit, repair, gc)");
	if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "help") == 0) {
		s->help = true;
		return 0;
	}
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (strcmp(subs[i].name, argv[0]) == 0)
			sub = &subs[i];
	if (!sub)
		return fail(err, errlen, "store: unknown command '%s' (put, get, ls, stat, rm, grant, audit, repair, "
			    "gc)", argv[0]);
	s->sub = sub->name;
	snprintf(s->method, sizeof(s->method), "store.%s", sub->name);
	s->transfer = strcmp(sub->name, "put") == 0 || strcmp(sub->name, "get") == 0;
	s->progress = s->transfer;
	s->params = json_array();
	if (!s->params || json_array_append_new(s->params, json_object()) < 0)
		abort();
	int rc = parse_sub(s, sub, argc, argv, err, errlen);
	if (rc < 0 || s->help) {
		json_decref(s->params);
		s->params = NULL;
		s->progress = false;
	}
	return rc;
}

void weft_cli_store_free(struct weft_cli_store *s)
{
	json_decref(s->params);
	s->params = NULL;
}
