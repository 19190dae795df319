/* cli_store.c - TAP tests of weft-cli's store commands (src/cli/store.c):
 * number and id parsing, command lines to store.* calls (absolute paths,
 * usage errors), the progress bar and line formatting, the progress
 * display's throttling, and weft-cli itself (when built: $WEFT_BIN) against
 * a fake daemon forked on a socket in a temporary directory, which answers
 * store.put and store.get with store.progress notifications. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "weft/err.h"
#include "weft/mp.h"

#include "../../src/cli/cli.h"
#include "../lib/testutil.h"
#include "../tap.h"

#define ID_A "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define ID_A_UPPER "00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF"

static char *tmp;          /* a temporary directory for files and the socket */
static char *tmp_real;     /* its realpath */
static char *file_path;    /* tmp/data.bin, 1000 bytes */

/* Compact, order-preserving JSON text of v (static buffer). */
static const char *jtext(const json_t *v)
{
	static char buf[4096];
	char *s;

	if (!v)
		return "(NULL)";
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
	snprintf(buf, sizeof(buf), "%s", s ? s : "(dump failed)");
	free(s);
	return buf;
}

/* ---- numbers and ids ---- */

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 12345;
	int rc = weft_cli_parse_size(s, &v);
	ok(rc == 0 && v == want, "size '%s' = %llu", s, (unsigned long long)want);
	if (rc != 0 || v != want)
		diag("rc %d, got %llu", rc, (unsigned long long)v);
}

static void size_bad(const char *s)
{
	uint64_t v = 12345;
	is_int(weft_cli_parse_size(s, &v), WEFT_EINVAL, "size '%s' refused", s);
}

static void test_sizes(void)
{
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("4K", 4096);
	size_ok("4KiB", 4096);
	size_ok("4KB", 4000);
	size_ok("3M", 3u << 20);
	size_ok("3MiB", 3u << 20);
	size_ok("3MB", 3000000);
	size_ok("2G", 2ull << 30);
	size_ok("2GiB", 2ull << 30);
	size_ok("2GB", 2000000000ull);
	size_ok("1T", 1ull << 40);
	size_ok("9223372036854775807", INT64_MAX);
	size_bad("");
	size_bad("-1");
	size_bad("+1");
	size_bad(" 1");
	size_bad("1 ");
	size_bad("1.5M");
	size_bad("0x10");
	size_bad("K");
	size_bad("12Q");
	size_bad("1k");
	size_bad("1KIB");
	size_bad("9223372036854775808");
	size_bad("99999999999999999999999");
	size_bad("8589934592G");
}

static void test_ids(void)
{
	char id[WEFT_CLI_STORE_ID_HEX + 1];

	ok(weft_cli_store_parse_id(ID_A, id) == 0 && strcmp(id, ID_A) == 0, "id: 64 hex digits");
	ok(weft_cli_store_parse_id(ID_A_UPPER, id) == 0 && strcmp(id, ID_A) == 0, "id: upper case, lowered");
	ok(weft_cli_store_parse_id("0x" ID_A, id) == 0 && strcmp(id, ID_A) == 0, "id: 0x prefix");
	is_int(weft_cli_store_parse_id(ID_A "0", id), WEFT_EINVAL, "id: 65 digits refused");
	is_int(weft_cli_store_parse_id(&ID_A[1], id), WEFT_EINVAL, "id: 63 digits refused");
	is_int(weft_cli_store_parse_id("", id), WEFT_EINVAL, "id: empty refused");
	is_int(weft_cli_store_parse_id("0x", id), WEFT_EINVAL, "id: bare 0x refused");
	is_int(weft_cli_store_parse_id("g0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", id),
	       WEFT_EINVAL, "id: non-hex refused");
}

/* ---- command lines ---- */

/* Parses "store ARGS..." (a NULL-terminated list) and compares the call. */
static void parse_ok(const char *want_method, const char *want_params, bool want_progress, const char *name, ...)
{
	char *argv[32], err[512];
	struct weft_cli_store st;
	va_list ap;
	int argc = 0;

	va_start(ap, name);
	for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 31;)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	int rc = weft_cli_store_parse(&st, argc, argv, err, sizeof(err));
	if (!ok(rc == 0 && !st.help, "%s: parses", name)) {
		diag("rc %d: %s", rc, err);
		skip(3, "not parsed");
		return;
	}
	is_str(st.method, want_method, "%s: method", name);
	is_str(jtext(st.params), want_params, "%s: params", name);
	ok(st.progress == want_progress, "%s: progress %s", name, want_progress ? "on" : "off");
	weft_cli_store_free(&st);
}

/* Parses and expects a usage error whose message contains needle. */
static void parse_bad(const char *needle, const char *name, ...)
{
	char *argv[32], err[512];
	struct weft_cli_store st;
	va_list ap;
	int argc = 0;

	va_start(ap, name);
	for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 31;)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	strcpy(err, "(untouched)");
	int rc = weft_cli_store_parse(&st, argc, argv, err, sizeof(err));
	is_int(rc, WEFT_EINVAL, "%s: refused", name);
	if (!ok(strstr(err, needle) != NULL, "%s: says '%s'", name, needle))
		diag("message: %s", err);
	if (rc == 0)
		weft_cli_store_free(&st);
}

static void test_parse(void)
{
	char want[2048], rel[PATH_MAX], out_rel[PATH_MAX];
	char cwd[PATH_MAX];

	snprintf(want, sizeof(want), "[{\"path\":\"%s/data.bin\",\"progress\":true}]", tmp_real);
	parse_ok("store.put", want, true, "put FILE", "put", file_path, NULL);

	/* A path with ".." and "." resolves; options after the file. */
	snprintf(rel, sizeof(rel), "%s/./../%s/data.bin", tmp, strrchr(tmp, '/') + 1);
	snprintf(want, sizeof(want),
		 "[{\"path\":\"%s/data.bin\",\"mode\":\"convergent\",\"k\":3,\"avg\":1048576,\"name\":\"báck up\","
		 "\"progress\":true}]", tmp_real);
	parse_ok("store.put", want, true, "put with every option", "put", rel, "--mode", "convergent", "--k", "3",
		 "--avg", "1M", "--name", "báck up", NULL);
	snprintf(want, sizeof(want), "[{\"path\":\"%s/data.bin\",\"mode\":\"random\",\"avg\":65536}]", tmp_real);
	parse_ok("store.put", want, false, "put --quiet, options first", "put", "--quiet", "--mode=random",
		 "--avg", "64KiB", "-q", file_path, NULL);
	snprintf(want, sizeof(want), "[{\"path\":\"%s/-odd\",\"progress\":true}]", tmp_real);
	{
		char odd[PATH_MAX];
		snprintf(odd, sizeof(odd), "%s/-odd", tmp);
		tu_write_file(odd, "x");
	}
	if (!getcwd(cwd, sizeof(cwd)) || chdir(tmp) != 0)
		diag("cannot chdir to %s", tmp);
	parse_ok("store.put", want, true, "put -- -odd (relative, after --)", "put", "--", "-odd", NULL);

	/* get: by id into a relative OUT, by capability with a range. */
	snprintf(want, sizeof(want), "[{\"id\":\"%s\",\"out\":\"%s/copy.bin\",\"progress\":true}]", ID_A, tmp_real);
	parse_ok("store.get", want, true, "get ID OUT (relative)", "get", "0x" ID_A_UPPER, "copy.bin", NULL);
	snprintf(want, sizeof(want), "[{\"id\":\"%s\",\"out\":\"%s/copy.bin\",\"progress\":true}]", ID_A, tmp_real);
	parse_ok("store.get", want, true, "get ID ./OUT", "get", ID_A, "./copy.bin", NULL);
	if (chdir(cwd) != 0)
		diag("cannot chdir back to %s", cwd);
	snprintf(out_rel, sizeof(out_rel), "%s/../%s/piece", tmp, strrchr(tmp, '/') + 1);
	snprintf(want, sizeof(want),
		 "[{\"capability\":\"weft-grant:abc\",\"out\":\"%s/piece\",\"offset\":4096,\"length\":10,"
		 "\"progress\":true}]", tmp_real);
	parse_ok("store.get", want, true, "get CAP OUT --offset --length", "get", "weft-grant:abc", out_rel,
		 "--offset", "4K", "--length", "10", NULL);
	snprintf(want, sizeof(want), "[{\"id\":\"%s\",\"out\":\"/x\"}]", ID_A);
	parse_ok("store.get", want, false, "get into /", "get", ID_A, "/x", "-q", NULL);

	parse_ok("store.ls", "[{}]", false, "ls", "ls", NULL);
	parse_ok("store.stat", "[{\"id\":\"" ID_A "\"}]", false, "stat ID", "stat", ID_A, NULL);
	parse_ok("store.rm", "[{\"id\":\"" ID_A "\"}]", false, "rm ID", "rm", ID_A_UPPER, NULL);
	parse_ok("store.grant", "[{\"id\":\"" ID_A "\",\"offset\":0,\"length\":1048576}]", false, "grant",
		 "grant", "--length", "1MiB", ID_A, "--offset", "0", NULL);
	parse_ok("store.audit", "[{}]", false, "audit", "audit", NULL);
	parse_ok("store.audit", "[{\"count\":20}]", false, "audit --count", "audit", "--count", "20", NULL);
	parse_ok("store.repair", "[{}]", false, "repair", "repair", NULL);
	parse_ok("store.repair", "[{\"id\":\"" ID_A "\"}]", false, "repair ID", "repair", ID_A, NULL);
	parse_ok("store.gc", "[{}]", false, "gc", "gc", NULL);

	{
		char *argv[] = {"put", "--help", NULL}, err[256];
		struct weft_cli_store st;
		ok(weft_cli_store_parse(&st, 2, argv, err, sizeof(err)) == 0 && st.help && !st.params,
		   "put --help: help, no call");
		char *argv2[] = {"--help", NULL};
		ok(weft_cli_store_parse(&st, 1, argv2, err, sizeof(err)) == 0 && st.help, "--help: help");
	}
	ok(strstr(weft_cli_store_help, "store put FILE") != NULL, "help text has the synopsis");
	is_str(weft_cli_store_usage_of("stat"), "weft-cli store stat ID", "usage of stat");
	ok(weft_cli_store_usage_of("frob") == NULL, "usage of an unknown command: NULL");
}

static void test_parse_errors(void)
{
	char missing[PATH_MAX], dir_out[PATH_MAX];

	snprintf(missing, sizeof(missing), "%s/no-such-file", tmp);
	snprintf(dir_out, sizeof(dir_out), "%s/no-such-dir/out", tmp);

	parse_bad("no command given", "no command", NULL);
	parse_bad("unknown command 'frob'", "unknown command", "frob", NULL);
	parse_bad("FILE missing", "put without FILE", "put", NULL);
	parse_bad("unexpected argument 'b'", "put with two files", "put", file_path, "b", NULL);
	parse_bad("No such file", "put a missing FILE", "put", missing, NULL);
	parse_bad("is a directory", "put a directory", "put", tmp, NULL);
	parse_bad("--mode wants random or convergent, not 'fast'", "bad --mode", "put", file_path, "--mode", "fast",
		  NULL);
	parse_bad("--k wants a number of shares from 1 to 255, not '0'", "--k 0", "put", file_path, "--k", "0", NULL);
	parse_bad("--k wants", "--k 256", "put", file_path, "--k", "256", NULL);
	parse_bad("--k wants", "--k x", "put", file_path, "--k", "x", NULL);
	parse_bad("--avg wants a chunk size", "--avg 1.5M", "put", file_path, "--avg", "1.5M", NULL);
	parse_bad("--avg wants", "--avg 0", "put", file_path, "--avg", "0", NULL);
	parse_bad("--name wants a name", "--name ''", "put", file_path, "--name", "", NULL);
	parse_bad("--name is not valid UTF-8", "--name latin-1", "put", file_path, "--name", "caf\xe9", NULL);
	parse_bad("option '--mode' given twice", "--mode twice", "put", file_path, "--mode", "random", "--mode",
		  "random", NULL);
	parse_bad("option '--mode' needs an argument", "--mode without value", "put", file_path, "--mode", NULL);
	parse_bad("unknown or ambiguous option '--bogus'", "unknown long option", "put", file_path, "--bogus", NULL);
	parse_bad("unknown option '-x'", "unknown short option", "put", file_path, "-x", NULL);
	parse_bad("store put takes no option '--offset'", "put --offset", "put", file_path, "--offset", "1", NULL);

	parse_bad("ID or CAPABILITY, and OUT missing", "get without arguments", "get", NULL);
	parse_bad("OUT missing", "get without OUT", "get", ID_A, NULL);
	parse_bad("neither a file id (64 hex digits) nor a capability", "get a bad id", "get", "abc", "out", NULL);
	parse_bad("neither a file id", "get a 63-digit id", "get", &ID_A[1], "out", NULL);
	parse_bad("the capability 'weft-grant:' is empty", "get an empty capability", "get", "weft-grant:", "out",
		  NULL);
	parse_bad("No such file", "get into a missing directory", "get", ID_A, dir_out, NULL);
	parse_bad("must name a file", "get into DIR/", "get", ID_A, "out/", NULL);
	parse_bad("must name a file", "get into ..", "get", ID_A, "..", NULL);
	parse_bad("is a directory", "get into an existing directory", "get", ID_A, tmp, NULL);
	parse_bad("--offset wants a number", "get --offset -1", "get", ID_A, "out", "--offset", "-1", NULL);
	parse_bad("--length wants a number", "get --length 1e6", "get", ID_A, "out", "--length", "1e6", NULL);
	parse_bad("store get takes no option '--k'", "get --k", "get", ID_A, "out", "--k", "2", NULL);

	parse_bad("store ls takes no option '--count'", "ls --count", "ls", "--count", "2", NULL);
	parse_bad("unexpected argument 'x'", "ls x", "ls", "x", NULL);
	parse_bad("store stat: ID missing", "stat without ID", "stat", NULL);
	parse_bad("'xyz' is not a file id (64 hex digits)", "stat a bad id", "stat", "xyz", NULL);
	parse_bad("wants a file id, not a capability", "rm a capability", "rm", "weft-grant:abc", NULL);
	parse_bad("store grant: ID missing", "grant without ID", "grant", "--offset", "0", "--length", "1", NULL);
	parse_bad("--offset A is required", "grant without --offset", "grant", ID_A, "--length", "1", NULL);
	parse_bad("--length L is required", "grant without --length", "grant", ID_A, "--offset", "0", NULL);
	parse_bad("--count wants a positive number, not '0'", "audit --count 0", "audit", "--count", "0", NULL);
	parse_bad("unexpected argument", "audit x", "audit", "x", NULL);
	parse_bad("unexpected argument '" ID_A "'", "repair two ids", "repair", ID_A, ID_A, NULL);
	parse_bad("is not a file id", "repair a bad id", "repair", "zz", NULL);
	parse_bad("store gc takes no option '-q'", "gc -q", "gc", "-q", NULL);
}

/* ---- progress formatting ---- */

static void test_format(void)
{
	char buf[512];
	size_t n;

	/* 504563712 of 1 GiB in 2.375 s: 212.4 MB/s, 2.7 s to go. */
	n = weft_cli_progress_line(buf, sizeof(buf), "put", 504563712, 1073741824, 2.375);
	is_str(buf, "put 47% 504563712/1073741824 bytes 212.4 MB/s", "line: mid-way");
	is_int((long long)n, (long long)strlen(buf), "line: length returned");
	weft_cli_progress_line(buf, sizeof(buf), "get", 0, 1000, 0);
	is_str(buf, "get 0% 0/1000 bytes 0 B/s", "line: nothing yet");
	weft_cli_progress_line(buf, sizeof(buf), "get", 999, 1000, 1);
	is_str(buf, "get 99% 999/1000 bytes 999 B/s", "line: 99.9%% is not 100%%");
	weft_cli_progress_line(buf, sizeof(buf), "put", 1000, 1000, 0.5);
	is_str(buf, "put 100% 1000/1000 bytes 2.0 kB/s", "line: done");
	weft_cli_progress_line(buf, sizeof(buf), "put", 5000000000ull, 0, 2);
	is_str(buf, "put 5000000000 bytes 2.5 GB/s", "line: unknown total");

	n = weft_cli_progress_bar(buf, sizeof(buf), "put", 504563712, 1073741824, 2.375, 80);
	is_str(buf, "put  [===========>            ]  47%  481.2 MiB / 1.0 GiB  212.4 MB/s  ETA 0:03",
	       "bar: 80 columns");
	is_int((long long)n, 79, "bar: 79 columns used");
	weft_cli_progress_bar(buf, sizeof(buf), "put", 504563712, 1073741824, 2.375, 0);
	is_str(buf, "put  [==================>                     ]  47%  481.2 MiB / 1.0 GiB  212.4 MB/s  ETA 0:03",
	       "bar: no width limit: 40 columns of bar");
	weft_cli_progress_bar(buf, sizeof(buf), "put", 504563712, 1073741824, 2.375, 60);
	is_str(buf, "put   47%  481.2 MiB / 1.0 GiB  212.4 MB/s  ETA 0:03", "bar: narrow terminal: no bar");
	n = weft_cli_progress_bar(buf, sizeof(buf), "put", 504563712, 1073741824, 2.375, 30);
	is_str(buf, "put   47%  481.2 MiB / 1.0 Gi", "bar: very narrow: cut at width - 1");
	is_int((long long)n, 29, "bar: very narrow: 29 columns");
	weft_cli_progress_bar(buf, sizeof(buf), "get", 0, 3000, 0, 70);
	is_str(buf, "get  [>                       ]   0%  0 B / 2.9 KiB  0 B/s  ETA --:--", "bar: start");
	weft_cli_progress_bar(buf, sizeof(buf), "get", 3000, 3000, 1.5, 70);
	is_str(buf, "get  [==================] 100%  2.9 KiB / 2.9 KiB  2.0 kB/s  ETA 0:00", "bar: done");
	weft_cli_progress_bar(buf, sizeof(buf), "get", 1ull << 30, 0, 4, 80);
	is_str(buf, "get  1.0 GiB  268.4 MB/s", "bar: unknown total");
	weft_cli_progress_bar(buf, sizeof(buf), "put", 1, 10ull << 40, 100, 100);
	ok(strstr(buf, "ETA --:--") != NULL, "bar: ETA beyond 99 h unknown (%s)", buf);
	weft_cli_progress_bar(buf, sizeof(buf), "put", 100ull << 20, 400ull << 20, 10, 100);
	ok(strstr(buf, "100.0 MiB / 400.0 MiB  10.5 MB/s  ETA 0:30") != NULL, "bar: ETA 0:30 (%s)", buf);
	weft_cli_progress_bar(buf, sizeof(buf), "put", 1ull << 30, 100ull << 30, 100, 120);
	ok(strstr(buf, "ETA 2:45:00") != NULL, "bar: ETA in hours (%s)", buf);
	weft_cli_progress_bar(buf, sizeof(buf), "put", 1048525, 2ull << 20, 1, 100);
	ok(strstr(buf, " 1.0 MiB / 2.0 MiB") != NULL, "bar: 1023.95 KiB shows as 1.0 MiB (%s)", buf);
	weft_cli_progress_bar(buf, sizeof(buf), "put", 1048524, 2ull << 20, 1, 100);
	ok(strstr(buf, " 1023.9 KiB / 2.0 MiB") != NULL, "bar: 1023.949 KiB shows as 1023.9 KiB (%s)", buf);

	bool fits = true;
	for (int w = 2; w <= 200; w++) {
		uint64_t cases[][2] = {{0, 1}, {1, 3}, {123456789, 987654321}, {7, 0}, {UINT64_MAX / 3, UINT64_MAX / 2}};
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			n = weft_cli_progress_bar(buf, sizeof(buf), "put", cases[i][0], cases[i][1], 3.3, w);
			if (n > (size_t)w - 1 || n != strlen(buf)) {
				fits = false;
				diag("width %d: %zu columns: %s", w, n, buf);
			}
		}
	}
	ok(fits, "bar: never wider than width - 1, for widths 2..200");
	n = weft_cli_progress_bar(buf, 10, "put", 5, 10, 1, 200);
	ok(n == 9 && strlen(buf) == 9, "bar: cut to the buffer");
}

/* ---- the progress display ---- */

static char *mem;
static size_t memlen;

static void test_display(void)
{
	struct weft_cli_progress p;
	FILE *f;

	/* Not a terminal: a line at most once a second, and the last state. */
	f = open_memstream(&mem, &memlen);
	weft_cli_progress_init(&p, f, false, 0, "put", 100.0);
	weft_cli_progress_update(&p, NULL, 0, 1000, 100.1);
	weft_cli_progress_update(&p, NULL, 100, 1000, 100.6);
	weft_cli_progress_update(&p, NULL, 300, 1000, 101.5);   /* shown: 1.5 s after the start */
	weft_cli_progress_update(&p, NULL, 400, 1000, 102.0);
	weft_cli_progress_update(&p, NULL, 700, 1000, 102.6);   /* shown: 1.1 s after the last */
	weft_cli_progress_update(&p, NULL, 1000, 1000, 103.0);
	fflush(f);
	is_str(mem, "put 30% 300/1000 bytes 200 B/s\nput 70% 700/1000 bytes 269 B/s\n", "plain: throttled to 1/s");
	weft_cli_progress_finish(&p, 103.2);
	weft_cli_progress_finish(&p, 103.3);
	fclose(f);
	is_str(mem,
	       "put 30% 300/1000 bytes 200 B/s\nput 70% 700/1000 bytes 269 B/s\nput 100% 1000/1000 bytes 333 B/s\n",
	       "plain: the last state at the end, once");
	free(mem);

	/* The last state already shown is not repeated. */
	f = open_memstream(&mem, &memlen);
	weft_cli_progress_init(&p, f, false, 0, "get", 0);
	weft_cli_progress_update(&p, NULL, 10, 10, 2);
	weft_cli_progress_finish(&p, 3);
	fclose(f);
	is_str(mem, "get 100% 10/10 bytes 5 B/s\n", "plain: shown state not repeated");
	free(mem);

	/* No notification: nothing at all. */
	f = open_memstream(&mem, &memlen);
	weft_cli_progress_init(&p, f, true, 80, "put", 0);
	weft_cli_progress_finish(&p, 5);
	fclose(f);
	is_int((long long)memlen, 0, "no notification: no output");
	free(mem);

	/* A terminal: redrawn in place (10/s at most), padded over a longer
	 * line, finished with a newline. */
	f = open_memstream(&mem, &memlen);
	weft_cli_progress_init(&p, f, true, 60, "put", 0);
	weft_cli_progress_update(&p, "put", 0, 0, 0.05);          /* too soon */
	weft_cli_progress_update(&p, NULL, 1ull << 30, 0, 0.5);   /* "put  1.0 GiB  2.1 GB/s" */
	weft_cli_progress_update(&p, NULL, 1ull << 30, 0, 0.55);  /* too soon */
	weft_cli_progress_update(&p, NULL, 500, 0, 1.0);          /* shorter: padded */
	weft_cli_progress_finish(&p, 1.2);
	fclose(f);
	is_str(mem, "\rput  1.0 GiB  2.1 GB/s\rput  500 B  500 B/s   \n", "tty: redraws, pads, ends the line");
	free(mem);

	/* op from the notification; the unshown last state drawn at the end. */
	f = open_memstream(&mem, &memlen);
	weft_cli_progress_init(&p, f, true, 60, "put", 0);
	weft_cli_progress_update(&p, "get", 5, 0, 0.01);
	weft_cli_progress_finish(&p, 0.02);
	fclose(f);
	is_str(mem, "\rget  5 B  500 B/s\n", "tty: op from the notification, drawn at the end");
	free(mem);

	/* The notification callback. */
	f = open_memstream(&mem, &memlen);
	weft_cli_progress_init(&p, f, false, 0, "put", weft_cli_monotonic() - 10);
	json_t *params = json_pack("[{s:s, s:I, s:I, s:I, s:I}]", "op", "get", "bytes", (json_int_t)250, "total",
				   (json_int_t)1000, "chunks", (json_int_t)1, "chunks_total", (json_int_t)4);
	weft_cli_progress_notify("other.method", params, &p);
	ok(!p.seen, "notify: other methods ignored");
	weft_cli_progress_notify("store.progress", json_array_get(params, 0), &p);
	ok(p.seen && p.bytes == 250 && p.total == 1000 && strcmp(p.op, "get") == 0, "notify: a bare map works");
	p.seen = false;
	weft_cli_progress_notify("store.progress", params, &p);
	ok(p.seen && p.bytes == 250 && p.total == 1000, "notify: [map] works");
	json_decref(params);
	params = json_pack("[s]", "junk");
	p.seen = false;
	weft_cli_progress_notify("store.progress", params, &p);
	ok(!p.seen, "notify: params without a map ignored");
	json_decref(params);
	fclose(f);
	if (!ok(mem && strncmp(mem, "get 25% 250/1000 bytes ", 23) == 0, "notify: the state is shown"))
		diag("shown: %s", mem ? mem : "(nothing)");
	free(mem);
}

/* ---- weft-cli against a fake daemon ---- */

static char sock_path[PATH_MAX];
static pid_t server_pid = -1;

static void write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void notify(int fd, const char *op, uint64_t bytes, uint64_t total)
{
	struct weft_mpw w;

	weft_mpw_init(&w);
	weft_mpw_array(&w, 3);
	weft_mpw_uint(&w, 2);
	weft_mpw_str(&w, "store.progress");
	weft_mpw_array(&w, 1);
	weft_mpw_map(&w, 5);
	weft_mpw_str(&w, "op");
	weft_mpw_str(&w, op);
	weft_mpw_str(&w, "bytes");
	weft_mpw_uint(&w, bytes);
	weft_mpw_str(&w, "total");
	weft_mpw_uint(&w, total);
	weft_mpw_str(&w, "chunks");
	weft_mpw_uint(&w, bytes / 100);
	weft_mpw_str(&w, "chunks_total");
	weft_mpw_uint(&w, total / 100);
	write_all(fd, w.buf, w.len);
	weft_mpw_free(&w);
}

/* Answers one request: store.put and store.get with progress, anything
 * else with {"method": M, "params": P}. */
static void serve_request(int fd, const uint8_t *frame, size_t len)
{
	struct weft_mp_reader r;
	struct weft_mpw w;
	uint32_t n, mlen;
	uint64_t type, msgid;
	const char *m;
	char method[64];

	weft_mp_reader_init(&r, frame, len);
	weft_mp_read_array(&r, &n);
	weft_mp_read_uint(&r, &type);
	weft_mp_read_uint(&r, &msgid);
	weft_mp_read_str(&r, &m, &mlen);
	if (r.err || n != 4 || type != 0 || mlen >= sizeof(method))
		return;
	memcpy(method, m, mlen);
	method[mlen] = '\0';

	weft_mpw_init(&w);
	weft_mpw_array(&w, 4);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, msgid);
	if (strcmp(method, "store.put") == 0) {
		notify(fd, "put", 0, 1000);
		usleep(1200 * 1000);
		notify(fd, "put", 500, 1000);
		notify(fd, "put", 1000, 1000);
	} else if (strcmp(method, "store.get") == 0) {
		notify(fd, "get", 100, 1000);
		weft_mpw_map(&w, 2);
		weft_mpw_str(&w, "code");
		weft_mpw_int(&w, -32000);
		weft_mpw_str(&w, "message");
		weft_mpw_str(&w, "no such file");
		weft_mpw_nil(&w);
		write_all(fd, w.buf, w.len);
		weft_mpw_free(&w);
		return;
	}
	weft_mpw_nil(&w);
	weft_mpw_map(&w, 2);
	weft_mpw_str(&w, "method");
	weft_mpw_str(&w, method);
	weft_mpw_str(&w, "params");
	weft_mpw_raw(&w, r.p, weft_mp_remaining(&r));
	write_all(fd, w.buf, w.len);
	weft_mpw_free(&w);
}

static void serve(int lfd)
{
	static uint8_t buf[1 << 16];
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			_exit(1);
		size_t len = 0, flen;
		for (;;) {
			ssize_t k = read(fd, buf + len, sizeof(buf) - len);
			if (k <= 0)
				break;
			len += (size_t)k;
			if (weft_mp_frame_len(buf, len, sizeof(buf), &flen) == 0) {
				serve_request(fd, buf, flen);
				break;
			}
		}
		close(fd);
	}
}

static int start_server(void)
{
	snprintf(sock_path, sizeof(sock_path), "%s/rpc.sock", tmp);
	int lfd = tu_unix_listen(sock_path);
	if (lfd < 0)
		return -1;
	fflush(stdout);
	server_pid = fork();
	if (server_pid < 0)
		return -1;
	if (server_pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		serve(lfd);
		_exit(0);
	}
	close(lfd);
	return 0;
}

static void stop_server(void)
{
	if (server_pid > 0) {
		kill(server_pid, SIGTERM);
		waitpid(server_pid, NULL, 0);
		server_pid = -1;
	}
	unlink(sock_path);
}

/* Runs weft-cli with the NULL-terminated arguments. */
static void run_cli(struct tu_run *r, const char *cli, ...)
{
	char *argv[32];
	va_list ap;
	int argc = 0;

	argv[argc++] = (char *)cli;
	va_start(ap, cli);
	for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 31;)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	tu_run(r, argv, 20000, -1);
}

/* Usage errors exit 2 before anything touches the (missing) socket. */
static void cli_usage(const char *cli, const char *needle, const char *name, ...)
{
	char *argv[32];
	struct tu_run r;
	va_list ap;
	int argc = 0;

	argv[argc++] = (char *)cli;
	argv[argc++] = "--socket";
	argv[argc++] = "/nonexistent/weft-cli-store-test.sock";
	va_start(ap, name);
	for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 31;)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	tu_run(&r, argv, 20000, -1);
	is_int(r.status, 2, "weft-cli %s: exit 2", name);
	if (!ok(strstr(r.err, needle) != NULL && r.out[0] == '\0', "weft-cli %s: says '%s'", name, needle))
		diag("stdout: %s\nstderr: %s", r.out, r.err);
	tu_run_free(&r);
}

static void test_cli(void)
{
	char *cli = tu_bin("weft-cli");
	char want[PATH_MAX + 64], out_path[PATH_MAX];
	struct tu_run r;

	if (access(cli, X_OK) != 0) {
		skip(1, "weft-cli not built (%s)", cli);
		free(cli);
		return;
	}
	run_cli(&r, cli, "store", "--help", NULL);
	if (r.status != 0 || !strstr(r.out, "store put FILE")) {
		skip(1, "%s has no store command (an older build)", cli);
		tu_run_free(&r);
		free(cli);
		return;
	}
	tu_run_free(&r);
	ok(1, "weft-cli store --help");

	cli_usage(cli, "no command given", "store", "store", NULL);
	cli_usage(cli, "FILE missing", "store put", "store", "put", NULL);
	cli_usage(cli, "--mode wants random or convergent", "store put --mode x", "store", "put", file_path,
		  "--mode", "x", NULL);
	cli_usage(cli, "--avg wants", "store put --avg 12X", "store", "put", file_path, "--avg", "12X", NULL);
	cli_usage(cli, "is not a file id", "store stat (bad id)", "store", "stat", "1234", NULL);
	cli_usage(cli, "neither a file id", "store get (bad id)", "store", "get", "1234", "out", NULL);
	cli_usage(cli, "--length L is required", "store grant without --length", "store", "grant", ID_A,
		  "--offset", "0", NULL);
	cli_usage(cli, "give either --datadir or --socket", "--datadir and --socket", "--datadir", "x", "store",
		  "ls", NULL);
	/* A good command line does reach for the socket: exit 3. */
	run_cli(&r, cli, "--socket", "/nonexistent/weft-cli-store-test.sock", "store", "ls", NULL);
	is_int(r.status, 3, "weft-cli store ls, no daemon: exit 3");
	tu_run_free(&r);

	if (start_server() < 0) {
		diag("cannot start the fake daemon: %s", strerror(errno));
		skip(9, "no fake daemon");
		free(cli);
		return;
	}

	/* put: progress lines on stderr (not a terminal), the result on stdout. */
	run_cli(&r, cli, "--socket", sock_path, "store", "put", file_path, "--k", "2", NULL);
	is_int(r.status, 0, "put: exit 0");
	json_t *res = json_loads(r.out, 0, NULL);
	snprintf(want, sizeof(want), "[{\"path\":\"%s/data.bin\",\"k\":2,\"progress\":true}]", tmp_real);
	is_str(jtext(json_object_get(res, "params")), want, "put: absolute path, options, progress asked");
	json_decref(res);
	const char *nl = strchr(r.err, '\n');
	if (!ok(strncmp(r.err, "put 50% 500/1000 bytes ", 23) == 0 && nl &&
			strncmp(nl + 1, "put 100% 1000/1000 bytes ", 25) == 0 && strchr(nl + 1, '\n') &&
			strchr(nl + 1, '\n')[1] == '\0',
		"put: two progress lines: the first after 1 s, the last at the end"))
		diag("stderr: %s", r.err);
	tu_run_free(&r);

	/* --quiet: no progress asked, none shown (the fake sends it anyway). */
	run_cli(&r, cli, "--socket", sock_path, "store", "put", "-q", file_path, NULL);
	is_int(r.status, 0, "put -q: exit 0");
	ok(r.err[0] == '\0' && strstr(r.out, "\"progress\"") == NULL, "put -q: quiet, progress not asked");
	tu_run_free(&r);

	/* get failing: the progress line ends before the error message. */
	snprintf(out_path, sizeof(out_path), "%s/copy", tmp);
	run_cli(&r, cli, "--socket", sock_path, "store", "get", ID_A, out_path, NULL);
	is_int(r.status, 1, "get, daemon error: exit 1");
	if (!ok(strncmp(r.err, "get 10% 100/1000 bytes ", 23) == 0 &&
			strstr(r.err, "\nweft-cli: store.get: no such file (code -32000)\n") != NULL,
		"get: progress line, then the error on its own line"))
		diag("stderr: %s", r.err);
	tu_run_free(&r);

	/* --timeout applies to put when given. */
	run_cli(&r, cli, "--socket", sock_path, "--timeout", "0.3", "store", "put", file_path, NULL);
	is_int(r.status, 4, "put --timeout 0.3 against a slow daemon: exit 4");
	tu_run_free(&r);

	/* Other commands: the call and its params. */
	run_cli(&r, cli, "--socket", sock_path, "store", "grant", ID_A, "--offset", "1K", "--length", "2K", NULL);
	res = json_loads(r.out, 0, NULL);
	is_int(r.status, 0, "grant: exit 0");
	is_str(jtext(res), "{\"method\":\"store.grant\",\"params\":[{\"id\":\"" ID_A
			   "\",\"offset\":1024,\"length\":2048}]}",
	       "grant: store.grant with the id and the range");
	json_decref(res);
	tu_run_free(&r);

	stop_server();
	free(cli);
}

int main(void)
{
	tmp = tu_tmpdir("cli-store");
	tmp_real = realpath(tmp, NULL);
	file_path = tu_path(tmp, "data.bin");
	{
		char data[1001];
		memset(data, 'x', 1000);
		data[1000] = '\0';
		tu_write_file(file_path, data);
	}

	test_sizes();
	test_ids();
	test_parse();
	test_parse_errors();
	test_format();
	test_display();
	test_cli();

	tu_rmtree(tmp);
	free(tmp);
	free(tmp_real);
	free(file_path);
	return done_testing();
}
