/* log.c - unit tests for include/weft/log.h: the line format (ISO-8601 UTC
 * timestamp ending in Z, level, event, fields, newline), level filtering and
 * parsing, truncation of very long lines, reopening after a rename (what
 * logrotate does before SIGHUP), a failed weft_log_open that leaves the
 * previous destination in use, and rate-limited call sites (a flood of
 * 100,000 lines writes a handful, and the next window reports the count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/err.h"
#include "weft/log.h"

static char *tmp;

static int count_lines(const char *s)
{
	int n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

static bool is_digits(const char *s, int n)
{
	for (int i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Checks "YYYY-MM-DDTHH:MM:SS.mmmZ" at the start of s and that it is within
 * a minute of now. */
static bool timestamp_ok(const char *s)
{
	if (strlen(s) < 24 || !is_digits(s, 4) || s[4] != '-' || !is_digits(s + 5, 2) || s[7] != '-' ||
	    !is_digits(s + 8, 2) || s[10] != 'T' || !is_digits(s + 11, 2) || s[13] != ':' || !is_digits(s + 14, 2) ||
	    s[16] != ':' || !is_digits(s + 17, 2) || s[19] != '.' || !is_digits(s + 20, 3) || s[23] != 'Z')
		return false;
	struct tm tm = {0};
	tm.tm_year = atoi(s) - 1900;
	tm.tm_mon = atoi(s + 5) - 1;
	tm.tm_mday = atoi(s + 8);
	tm.tm_hour = atoi(s + 11);
	tm.tm_min = atoi(s + 14);
	tm.tm_sec = atoi(s + 17);
	time_t t = timegm(&tm);
	time_t now = time(NULL);
	return t <= now + 60 && t >= now - 60;
}

static void test_format(void)
{
	char *path = tu_path(tmp, "format.log");
	is_int(weft_log_open(path), 0, "weft_log_open to a new file");
	struct stat st;
	ok(stat(path, &st) == 0 && S_ISREG(st.st_mode), "log file created");
	ok((st.st_mode & 0007) == 0, "log file is not world-accessible (%o)", (unsigned)(st.st_mode & 0777));
	weft_log_set_level(WEFT_LOG_INFO);
	is_int(weft_log_get_level(), WEFT_LOG_INFO, "level set to info");
	weft_info("test.event", "a=%d b=\"%s\"", 42, "x y");
	char *text = tu_read_file(path);
	ok(text != NULL, "log file readable");
	text = text ? text : strdup("");
	is_int(count_lines(text), 1, "one event, one line");
	ok(timestamp_ok(text), "line starts with an ISO-8601 UTC timestamp ending in Z, near now (%.30s)", text);
	ok(strlen(text) > 24 && text[24] == ' ', "timestamp followed by a space");
	is_str(strlen(text) > 25 ? text + 25 : "", "info test.event a=42 b=\"x y\"\n",
	       "then level, event, fields and a newline");
	free(text);

	/* Every level's name appears as written. */
	weft_log_set_level(WEFT_LOG_DEBUG);
	weft_debug("ev.d", "k=1");
	weft_warn("ev.w", "k=2");
	weft_error("ev.e", "k=3");
	weft_log(WEFT_LOG_INFO, "ev.i", "%s", "");
	text = tu_read_file(path);
	ok(text && strstr(text, " debug ev.d k=1\n") && strstr(text, " warn ev.w k=2\n") &&
		   strstr(text, " error ev.e k=3\n"),
	   "debug, warn and error lines have their level names");
	ok(text && strstr(text, " info ev.i \n"), "an event with no fields still ends in a newline");
	is_int(count_lines(text), 5, "five events, five lines");
	free(text);
	free(path);
}

static void test_levels(void)
{
	char *path = tu_path(tmp, "levels.log");
	is_int(weft_log_open(path), 0, "open levels.log");
	weft_log_set_level(WEFT_LOG_INFO);
	weft_debug("lvl.debug", "x=1");
	weft_info("lvl.info", "x=2");
	weft_warn("lvl.warn", "x=3");
	weft_log_set_level(WEFT_LOG_ERROR);
	weft_info("lvl.info2", "x=4");
	weft_warn("lvl.warn2", "x=5");
	weft_error("lvl.error2", "x=6");
	char *text = tu_read_file(path);
	ok(text && !strstr(text, "lvl.debug"), "debug suppressed at info");
	ok(text && strstr(text, "lvl.info ") && strstr(text, "lvl.warn "), "info and warn pass at info");
	ok(text && !strstr(text, "lvl.info2") && !strstr(text, "lvl.warn2"), "info and warn suppressed at error");
	ok(text && strstr(text, "lvl.error2"), "error passes at error");
	is_int(count_lines(text), 3, "three lines written");
	free(text);
	weft_log_set_level(WEFT_LOG_INFO);
	free(path);

	static const struct {
		const char *name;
		enum weft_log_level level;
	} names[] = {
		{"debug", WEFT_LOG_DEBUG},
		{"info", WEFT_LOG_INFO},
		{"warn", WEFT_LOG_WARN},
		{"error", WEFT_LOG_ERROR},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		enum weft_log_level l = (enum weft_log_level)99;
		int rc = weft_log_level_parse(names[i].name, &l);
		ok(rc == 0 && l == names[i].level, "level_parse('%s')", names[i].name);
		is_str(weft_log_level_name(names[i].level), names[i].name, "level_name of %s", names[i].name);
	}
	static const char *const bad[] = {"verbose", "", "INFO", "warning", "info ", "err"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum weft_log_level l = WEFT_LOG_WARN;
		int rc = weft_log_level_parse(bad[i], &l);
		ok(rc == WEFT_EINVAL && l == WEFT_LOG_WARN, "level_parse('%s') is WEFT_EINVAL, out untouched",
		   bad[i]);
	}
}

static void test_long(void)
{
	char *path = tu_path(tmp, "long.log");
	is_int(weft_log_open(path), 0, "open long.log");
	size_t big = 10 * 1024;
	char *val = malloc(big + 1);
	memset(val, 'v', big);
	val[big] = '\0';
	weft_info("long.event", "data=%s", val);
	weft_info("after.long", "ok=1");
	char *text = tu_read_file(path);
	is_int(count_lines(text), 2, "a 10 KB message is one line (and the next event another)");
	char *nl = text ? strchr(text, '\n') : NULL;
	ok(nl && (size_t)(nl - text) < big, "the long line is truncated (%ld bytes)", nl ? (long)(nl - text) : -1L);
	ok(text && strstr(text, " info long.event data=vvv") == text + 24, "the truncated line keeps its prefix");
	ok(nl && strncmp(nl + 1 + 24, " info after.long ok=1\n", 22) == 0,
	   "the next line starts on a line of its own");
	ok(text && text[strlen(text) - 1] == '\n', "the file ends in a newline");
	free(text);
	free(val);
	free(path);

	/* A long event name (over the line buffer) must not write out of
	 * bounds either: run it in a child so a crash is a failure, not an
	 * abort of this program. */
	path = tu_path(tmp, "longevent.log");
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		if (weft_log_open(path) != 0)
			_exit(3);
		char *ev = malloc(4000), *v = malloc(8000);
		memset(ev, 'e', 3999);
		ev[3999] = '\0';
		memset(v, 'v', 7999);
		v[7999] = '\0';
		weft_info(ev, "data=%s", v);
		weft_info("after", "ok=1");
		free(ev);
		free(v);
		weft_log_close();
		_exit(0);
	}
	int st = tu_wait(pid, 10000);
	is_int(st, 0, "a 4000-byte event name with 8 KB of fields: the logger survives (status %d)", st);
	text = tu_read_file(path);
	is_int(count_lines(text), 2, "long event name: one line each");
	ok(text && strstr(text, " info after ok=1\n"), "long event name: the next event is logged whole");
	free(text);
	free(path);
}

/* Child helpers: exit 0 when the call returned a negative code, 1 when it
 * returned 0, 2 when it returned a positive value, 3 on a setup failure. */
static int rc_status(int rc)
{
	return rc < 0 ? 0 : rc == 0 ? 1 : 2;
}

static const char *child_rc_name(int st)
{
	switch (st) {
	case 0: return "negative";
	case 1: return "returned 0";
	case 2: return "returned a positive value";
	case 3: return "setup failed";
	}
	return "crashed or timed out";
}

static int child_failed_open(const char *path)
{
	if (weft_log_open(path) != 0)
		return 3;
	int rc = weft_log_open("/nonexistent-dir/x.log");
	weft_info("after.failed.open", "n=5");
	return rc_status(rc);
}

static int child_failed_reopen(const char *dir)
{
	char *file;
	if (asprintf(&file, "%s/x.log", dir) < 0 || weft_log_open(file) != 0)
		return 3;
	unlink(file);
	rmdir(dir);
	int rc = weft_log_reopen();
	weft_info("after.failed.reopen", "n=6");
	printf("stdout still works\n");
	fflush(stdout);
	free(file);
	return rc_status(rc);
}

/* Runs fn(arg) in a child with stdout redirected to out; its exit status. */
static int run_child(int (*fn)(const char *), const char *arg, const char *out)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		FILE *f = fopen(out, "w");
		if (f == NULL || dup2(fileno(f), 1) < 0)
			_exit(3);
		fclose(f);
		_exit(fn(arg));
	}
	return tu_wait(pid, 10000);
}

static void test_reopen(void)
{
	char *path = tu_path(tmp, "rotate.log"), *rotated = tu_path(tmp, "rotate.log.1");
	is_int(weft_log_open(path), 0, "open rotate.log");
	weft_info("before.rotate", "n=1");
	ok(rename(path, rotated) == 0, "rename rotate.log to rotate.log.1");
	weft_info("between", "n=2"); /* still the old (renamed) file */
	is_int(weft_log_reopen(), 0, "weft_log_reopen");
	struct stat st;
	ok(stat(path, &st) == 0, "a new file exists at the original path");
	weft_info("after.rotate", "n=3");
	char *old = tu_read_file(rotated), *cur = tu_read_file(path);
	ok(old && strstr(old, "before.rotate") && strstr(old, "between"), "rotated file has the earlier lines");
	ok(old && !strstr(old, "after.rotate"), "rotated file has nothing after the reopen");
	ok(cur && strstr(cur, "after.rotate") && !strstr(cur, "before.rotate"),
	   "new file at the original path gets the next lines");
	is_int(count_lines(cur), 1, "new file has exactly one line");
	free(old);
	free(cur);

	/* Reopen without a rename appends to the same file. */
	is_int(weft_log_reopen(), 0, "reopen again without a rename");
	weft_info("after.second", "n=4");
	cur = tu_read_file(path);
	is_int(count_lines(cur), 2, "reopen without rename appends");
	free(cur);

	/* A failed open keeps the previous destination.  Run in a child with
	 * stdout sent to a file, so that a logger that wrongly writes to fd 1
	 * cannot corrupt this program's TAP output. */
	char *out = tu_path(tmp, "child.stdout");
	int rc = run_child(child_failed_open, path, out);
	is_int(rc, 0, "weft_log_open(/nonexistent-dir/x.log) is a negative code (child: %s)", child_rc_name(rc));
	cur = tu_read_file(path);
	ok(cur && strstr(cur, "after.failed.open"), "after the failed open, logging goes on to the previous file");
	free(cur);
	cur = tu_read_file(out);
	ok(cur && !strstr(cur, "after.failed.open"), "and nothing is logged to stdout");
	free(cur);

	/* Reopen when the directory has vanished fails and keeps the old fd. */
	char *sub = tu_path(tmp, "sub");
	mkdir(sub, 0700);
	rc = run_child(child_failed_reopen, sub, out);
	is_int(rc, 0, "reopen after the log's directory is removed is a negative code (child: %s)",
	       child_rc_name(rc));
	cur = tu_read_file(out);
	ok(cur && strstr(cur, "stdout still works\n") && !strstr(cur, "after.failed.reopen"),
	   "a failed reopen leaves stdout alone and logs nothing there");
	free(cur);
	free(sub);
	free(out);

	/* Back to stderr: the file gets nothing more. */
	is_int(weft_log_open(path), 0, "open rotate.log again");
	is_int(weft_log_open("-"), 0, "weft_log_open(\"-\") switches to stderr");
	is_int(weft_log_reopen(), 0, "reopen with stderr is a no-op");
	char *errfile = tu_path(tmp, "stderr.txt");
	fflush(stderr);
	int saved = dup(2);
	FILE *ef = fopen(errfile, "w");
	if (saved < 0 || ef == NULL || dup2(fileno(ef), 2) < 0)
		abort();
	weft_info("to.stderr", "n=7");
	dup2(saved, 2);
	close(saved);
	fclose(ef);
	cur = tu_read_file(path);
	ok(cur && !strstr(cur, "to.stderr"), "after '-' nothing goes to the file");
	free(cur);
	cur = tu_read_file(errfile);
	ok(cur && strstr(cur, " info to.stderr n=7\n"), "after '-' lines go to stderr");
	free(cur);
	free(errfile);
	weft_log_close();
	weft_log_close(); /* twice is fine */
	free(path);
	free(rotated);
}

static void flood_site(int i)
{
	weft_log_ratelimited(3, WEFT_LOG_WARN, "flood.site", "i=%d", i);
}

static void test_ratelimit(void)
{
	char *path = tu_path(tmp, "limit.log");
	is_int(weft_log_open(path), 0, "open limit.log");
	struct weft_log_limit l;
	weft_log_limit_init(&l, 5);
	for (int i = 0; i < 100000; i++)
		weft_log_limited(&l, WEFT_LOG_WARN, "flood.refused", "addr=10.0.0.%d", i % 256);
	char *text = tu_read_file(path);
	is_int(count_lines(text), 5, "100,000 rate-limited lines: 5 written in the window");
	free(text);
	is_int((long long)l.suppressed, 99995, "the other 99,995 are counted");
	l.window_start_ms -= WEFT_LOG_LIMIT_WINDOW_MS + 1; /* a minute later */
	weft_log_limited(&l, WEFT_LOG_WARN, "flood.refused", "addr=10.0.0.1");
	text = tu_read_file(path);
	ok(text && strstr(text, "addr=10.0.0.1 suppressed=99995 "), "the next window's first line carries suppressed=99995");
	is_int(count_lines(text), 6, "six lines in all");
	free(text);
	for (int i = 0; i < 50; i++)
		weft_log_limited(&l, WEFT_LOG_WARN, "flood.refused", "again");
	weft_log_limit_flush(&l);
	text = tu_read_file(path);
	ok(text && strstr(text, "flood.refused suppressed=46 "), "flush reports what is still suppressed (46)");
	free(text);
	weft_log_set_level(WEFT_LOG_ERROR);
	weft_log_limited(&l, WEFT_LOG_WARN, "flood.refused", "below the level");
	is_int((long long)l.suppressed, 0, "lines below the log level are neither written nor counted");
	weft_log_set_level(WEFT_LOG_INFO);
	for (int i = 0; i < 1000; i++)
		flood_site(i);
	text = tu_read_file(path);
	int site = 0;
	for (const char *p = text; p && (p = strstr(p, "flood.site")) != NULL; p++)
		site++;
	is_int(site, 3, "a weft_log_ratelimited(3, ...) call site writes 3 of 1,000");
	free(text);
	free(path);
}

int main(void)
{
	tmp = tu_tmpdir("log");
	test_format();
	test_levels();
	test_long();
	test_reopen();
	test_ratelimit();
	weft_log_close();
	tu_rmtree(tmp);
	free(tmp);
	return done_testing();
}
