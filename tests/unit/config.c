/* config.c - unit tests for weftd's configuration (src/lib/config.c through
 * include/weft/config.h): the defaults, loading a file over them, size
 * suffixes, every kind of error message (file, line, section, key, range),
 * the missing-file result, and --describe-config output that loads back to
 * the defaults.  Run under `make SAN=1` it also checks that
 * weft_config_free leaves nothing behind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/testutil.h"
#include "../tap.h"
#include "weft/config.h"
#include "weft/err.h"

static char *tmp;

/* Writes text to tmp/name and returns the path (caller frees). */
static char *conf_file(const char *name, const char *text)
{
	char *path;
	if (asprintf(&path, "%s/%s", tmp, name) < 0)
		abort();
	tu_write_file(path, text);
	return path;
}

/* True when every needle (NULL-terminated list) occurs in hay. */
static bool has_all(const char *hay, const char *const *needles)
{
	for (int i = 0; needles[i]; i++)
		if (strstr(hay, needles[i]) == NULL)
			return false;
	return true;
}

/* Loads text (written to tmp/name) over the defaults; returns the code and
 * leaves the message in err. */
static int load_text(const char *name, const char *text, char *err, size_t errlen, char **pathp)
{
	struct weft_config cfg;
	weft_config_defaults(&cfg);
	char *path = conf_file(name, text);
	err[0] = '\0';
	int rc = weft_config_load(&cfg, path, err, errlen);
	weft_config_free(&cfg);
	if (pathp)
		*pathp = path;
	else
		free(path);
	return rc;
}

static void test_defaults(void)
{
	struct weft_config cfg;
	memset(&cfg, 0xa5, sizeof(cfg));
	weft_config_defaults(&cfg);
	is_int(cfg.log_level, WEFT_LOG_INFO, "default log level is info");
	ok(cfg.log_file == NULL || strcmp(cfg.log_file, "-") == 0, "default log file is stderr (%s)",
	   cfg.log_file ? cfg.log_file : "NULL");
	is_int((long long)cfg.db_map_size, 1LL << 30, "default db.map_size is 1 GiB");
	ok(!cfg.db_no_sync, "default db.no_sync is false");
	is_int((long long)cfg.rpc_max_frame, 1LL << 20, "default rpc.max_frame is 1 MiB");
	is_int((long long)cfg.rpc_max_clients, 64, "default rpc.max_clients is 64");
	is_int((long long)cfg.rpc_partial_timeout_ms, 10000, "default rpc.partial_timeout_ms is 10000");
	weft_config_free(&cfg);
	ok(cfg.log_file == NULL, "weft_config_free clears the string fields");
	weft_config_free(&cfg); /* twice is harmless */
}

static void test_load_valid(void)
{
	struct weft_config cfg;
	char err[512] = "";
	weft_config_defaults(&cfg);
	char *path = conf_file("valid.conf",
			       "; a comment\n"
			       "# another comment\n"
			       "[log]\n"
			       "file = /var/log/weftd.log\n"
			       "level = debug\n"
			       "\n"
			       "[db]\n"
			       "map_size = 2GiB\n"
			       "no_sync = true\n"
			       "[rpc]\n"
			       "max_frame = 64KiB\n"
			       "max_clients = 7\n"
			       "partial_timeout_ms   =   250  \n");
	is_int(weft_config_load(&cfg, path, err, sizeof(err)), 0, "valid file loads (%s)", err);
	is_str(cfg.log_file, "/var/log/weftd.log", "log.file overridden");
	is_int(cfg.log_level, WEFT_LOG_DEBUG, "log.level overridden");
	is_int((long long)cfg.db_map_size, 2LL << 30, "db.map_size overridden (2GiB)");
	ok(cfg.db_no_sync, "db.no_sync overridden");
	is_int((long long)cfg.rpc_max_frame, 64 << 10, "rpc.max_frame overridden (64KiB)");
	is_int((long long)cfg.rpc_max_clients, 7, "rpc.max_clients overridden");
	is_int((long long)cfg.rpc_partial_timeout_ms, 250, "rpc.partial_timeout_ms overridden, blanks trimmed");
	free(path);

	/* A second file loads over the first: only the keys it names change,
	 * and a string set twice frees the old value (ASan checks). */
	path = conf_file("partial.conf", "[log]\nfile = other.log\n[db]\nno_sync = no\n");
	is_int(weft_config_load(&cfg, path, err, sizeof(err)), 0, "second file loads over the first (%s)", err);
	is_str(cfg.log_file, "other.log", "log.file replaced");
	ok(!cfg.db_no_sync, "db.no_sync = no is false");
	is_int(cfg.log_level, WEFT_LOG_DEBUG, "keys not named keep their previous value");
	is_int((long long)cfg.rpc_max_clients, 7, "keys not named keep their previous value (rpc)");
	free(path);

	/* Other boolean spellings and log levels. */
	path = conf_file("bools.conf", "[db]\nno_sync = 1\n[log]\nlevel = error\n");
	is_int(weft_config_load(&cfg, path, err, sizeof(err)), 0, "no_sync = 1 loads (%s)", err);
	ok(cfg.db_no_sync, "no_sync = 1 is true");
	is_int(cfg.log_level, WEFT_LOG_ERROR, "level = error");
	free(path);

	/* An empty file changes nothing. */
	path = conf_file("empty.conf", "");
	is_int(weft_config_load(&cfg, path, err, sizeof(err)), 0, "empty file loads");
	is_int(cfg.log_level, WEFT_LOG_ERROR, "empty file changes nothing");
	free(path);
	weft_config_free(&cfg);

	/* weft_config_set, the programmatic form of one line. */
	weft_config_defaults(&cfg);
	is_int(weft_config_set(&cfg, "rpc", "max_frame", "2MiB", err, sizeof(err)), 0, "config_set rpc.max_frame");
	is_int((long long)cfg.rpc_max_frame, 2LL << 20, "config_set applied");
	is_int(weft_config_set(&cfg, "rpc", "nope", "1", err, sizeof(err)), WEFT_ECONFIG,
	       "config_set of an unknown key: WEFT_ECONFIG");
	ok(strstr(err, "nope") && strstr(err, "[rpc]"), "config_set message names key and section (%s)", err);
	is_int(weft_config_set(&cfg, "log", "file", "a.log", NULL, 0), 0, "config_set with no err buffer");
	is_int(weft_config_set(&cfg, "db", "map_size", "bad", NULL, 0), WEFT_ECONFIG,
	       "config_set error with no err buffer does not crash");
	weft_config_free(&cfg);
}

static void test_sizes(void)
{
	static const struct {
		const char *s;
		uint64_t want;
	} good[] = {
		{"0", 0},
		{"4096", 4096},
		{"64KiB", 64ULL << 10},
		{"64k", 64ULL << 10},
		{"64K", 64ULL << 10},
		{"1M", 1ULL << 20},
		{"3MiB", 3ULL << 20},
		{"2GiB", 2ULL << 30},
		{"2G", 2ULL << 30},
		{"1T", 1ULL << 40},
		{"1TiB", 1ULL << 40},
		{"512B", 512},
		{"16777215T", 16777215ULL << 40},
		{"18446744073709551615", UINT64_MAX},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 12345;
		int rc = weft_parse_size(good[i].s, &v);
		ok(rc == 0 && v == good[i].want, "parse_size('%s') = %llu (rc %d, got %llu)", good[i].s,
		   (unsigned long long)good[i].want, rc, (unsigned long long)v);
	}
	static const char *const bad[] = {
		"12X", "", "-1", "+1", " 1", "1 MiB", "1.5G", "MiB", "1Mi", "1mib", "0x10",
		"99999999999T", "16777216T", "18446744073709551616", "1GiBx",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 777;
		int rc = weft_parse_size(bad[i], &v);
		ok(rc == WEFT_EINVAL && v == 777, "parse_size('%s') is WEFT_EINVAL and leaves out alone (rc %d)",
		   bad[i], rc);
	}
}

static void test_errors(void)
{
	char err[512], *path, want[600];

	/* Unknown key. */
	int rc = load_text("unknown.conf", "[rpc]\nmax_frame = 2MiB\n\nmax_fram = 1\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "unknown key: WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:4:", path);
	ok(has_all(err, (const char *[]){want, "max_fram", "[rpc]", NULL}),
	   "unknown key: message has FILE:LINE:, the key and the section (%s)", err);
	ok(strncmp(err, want, strlen(want)) == 0, "unknown key: message starts with FILE:LINE:");
	free(path);

	/* Unknown section. */
	rc = load_text("section.conf", "[rcp]\nmax_frame = 2MiB\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "unknown section: WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:2:", path);
	ok(has_all(err, (const char *[]){want, "max_frame", "[rcp]", NULL}),
	   "unknown section: message names file:line, key and section (%s)", err);
	free(path);

	/* A key before any section. */
	rc = load_text("nosection.conf", "max_frame = 2MiB\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "key outside any section: WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:1:", path);
	ok(has_all(err, (const char *[]){want, "max_frame", NULL}),
	   "key outside any section: message names file:line and key (%s)", err);
	free(path);

	/* Bad number. */
	rc = load_text("badnum.conf", "[rpc]\nmax_clients = twelve\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "bad number: WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:2:", path);
	ok(has_all(err, (const char *[]){want, "[rpc]", "max_clients", "twelve", NULL}),
	   "bad number: message names file, line, section, key and value (%s)", err);
	free(path);

	rc = load_text("negnum.conf", "[rpc]\nmax_clients = -5\n", err, sizeof(err), NULL);
	ok(rc == WEFT_ECONFIG && strstr(err, "max_clients"), "negative number refused (%s)", err);
	rc = load_text("trailnum.conf", "[rpc]\nmax_clients = 5x\n", err, sizeof(err), NULL);
	ok(rc == WEFT_ECONFIG && strstr(err, "max_clients"), "number with trailing junk refused (%s)", err);
	rc = load_text("emptynum.conf", "[rpc]\nmax_clients =\n", err, sizeof(err), NULL);
	ok(rc == WEFT_ECONFIG && strstr(err, "max_clients"), "empty number refused (%s)", err);

	/* Bad size. */
	rc = load_text("badsize.conf", "[log]\nlevel = warn\n[db]\nmap_size = 12X\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "bad size: WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:4:", path);
	ok(has_all(err, (const char *[]){want, "[db]", "map_size", "12X", NULL}),
	   "bad size: message names file, line, section, key and value (%s)", err);
	free(path);

	/* Out of range, both ends. */
	rc = load_text("range.conf", "[rpc]\nmax_clients = 0\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "out of range (low): WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:2:", path);
	ok(has_all(err, (const char *[]){want, "max_clients", "range", "1", "4096", NULL}),
	   "out of range (low): message gives file:line, key and the range (%s)", err);
	free(path);
	rc = load_text("range2.conf", "[rpc]\nmax_frame = 1GiB\n", err, sizeof(err), NULL);
	ok(rc == WEFT_ECONFIG && has_all(err, (const char *[]){"max_frame", "range", NULL}),
	   "out of range (high): message names key and range (%s)", err);
	rc = load_text("range3.conf", "[db]\nmap_size = 2T\n", err, sizeof(err), NULL);
	ok(rc == WEFT_ECONFIG && has_all(err, (const char *[]){"map_size", "range", NULL}),
	   "db.map_size over 1 TiB is out of range (%s)", err);
	rc = load_text("range4.conf", "[rpc]\nmax_clients = 4096\nmax_frame = 1024\n", err, sizeof(err), NULL);
	is_int(rc, 0, "values at the bounds are accepted (%s)", err);

	/* Bad bool. */
	rc = load_text("bool.conf", "[db]\nno_sync = maybe\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "bad bool: WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:2:", path);
	ok(has_all(err, (const char *[]){want, "no_sync", "maybe", "bool", NULL}),
	   "bad bool: message names file:line, key, value and says boolean (%s)", err);
	free(path);

	/* Bad log level. */
	rc = load_text("level.conf", "[log]\nlevel = verbose\n", err, sizeof(err), &path);
	is_int(rc, WEFT_ECONFIG, "bad log level: WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:2:", path);
	ok(has_all(err, (const char *[]){want, "level", "verbose", "debug", NULL}),
	   "bad log level: message names file:line, key, value and the choices (%s)", err);
	free(path);

	/* Syntax errors. */
	rc = load_text("syntax.conf", "[rpc]\nmax_frame = 2MiB\nthis line has no equals sign\n", err, sizeof(err),
		       &path);
	is_int(rc, WEFT_ECONFIG, "line without '=': WEFT_ECONFIG");
	snprintf(want, sizeof(want), "%s:3: syntax error", path);
	ok(strncmp(err, want, strlen(want)) == 0, "line without '=': 'FILE:LINE: syntax error' (%s)", err);
	free(path);
	rc = load_text("syntax2.conf", "[rpc\nmax_frame = 2MiB\n", err, sizeof(err), &path);
	snprintf(want, sizeof(want), "%s:1: syntax error", path);
	ok(rc == WEFT_ECONFIG && strncmp(err, want, strlen(want)) == 0, "unclosed section header: syntax error (%s)",
	   err);
	free(path);

	/* Two errors: the message must describe the first one, at its line. */
	rc = load_text("two.conf", "[rpc]\ngarbage line\nbogus_key = 1\n", err, sizeof(err), &path);
	snprintf(want, sizeof(want), "%s:2: syntax error", path);
	ok(rc == WEFT_ECONFIG && strncmp(err, want, strlen(want)) == 0,
	   "syntax error then unknown key: the message reports the first error at its line (%s)", err);
	free(path);
	rc = load_text("two2.conf", "[rpc]\nbogus_key = 1\nmax_clients = zero\n", err, sizeof(err), &path);
	snprintf(want, sizeof(want), "%s:2:", path);
	ok(rc == WEFT_ECONFIG && strncmp(err, want, strlen(want)) == 0 && strstr(err, "bogus_key"),
	   "unknown key then bad number: the message reports the first (%s)", err);
	free(path);

	/* Missing file. */
	struct weft_config cfg;
	weft_config_defaults(&cfg);
	char *missing;
	if (asprintf(&missing, "%s/no-such-dir/weft.conf", tmp) < 0)
		abort();
	err[0] = '\0';
	is_int(weft_config_load(&cfg, missing, err, sizeof(err)), WEFT_NOTFOUND, "missing file: WEFT_NOTFOUND");
	ok(strstr(err, missing) != NULL, "missing file: message has the path (%s)", err);
	is_int((long long)cfg.rpc_max_frame, 1LL << 20, "missing file: values untouched");
	free(missing);

	/* A directory is not a configuration file. */
	err[0] = '\0';
	rc = weft_config_load(&cfg, tmp, err, sizeof(err));
	ok(rc == WEFT_ECONFIG && strstr(err, tmp) != NULL,
	   "a directory given as the config file is an error naming it (rc %d, '%s')", rc, err);
	weft_config_free(&cfg);
}

static void test_describe(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	weft_config_describe(f);
	fclose(f);
	ok(len > 0, "describe writes something");
	ok(has_all(buf, (const char *[]){"[log]", "[db]", "[rpc]", NULL}), "describe has [log], [db] and [rpc]");
	ok(has_all(buf, (const char *[]){"file", "level", "map_size", "no_sync", "max_frame", "max_clients",
					 "partial_timeout_ms", NULL}),
	   "describe names every key");
	ok(strstr(buf, "\n#") != NULL, "describe has help comments");

	char *path = conf_file("describe.conf", buf);
	struct weft_config cfg, def;
	char err[512] = "";
	weft_config_defaults(&def);
	/* Start from values that differ from every default. */
	weft_config_defaults(&cfg);
	is_int(weft_config_set(&cfg, "log", "file", "x.log", err, sizeof(err)), 0, "set log.file");
	cfg.log_level = WEFT_LOG_ERROR;
	cfg.db_map_size = 5 << 20;
	cfg.db_no_sync = true;
	cfg.rpc_max_frame = 2048;
	cfg.rpc_max_clients = 3;
	cfg.rpc_partial_timeout_ms = 101;
	is_int(weft_config_load(&cfg, path, err, sizeof(err)), 0, "describe output loads back (%s)", err);
	ok((cfg.log_file == NULL && def.log_file == NULL) ||
		   (cfg.log_file && def.log_file && strcmp(cfg.log_file, def.log_file) == 0),
	   "describe: log.file back to the default");
	is_int(cfg.log_level, def.log_level, "describe: log.level back to the default");
	is_int((long long)cfg.db_map_size, (long long)def.db_map_size, "describe: db.map_size default");
	is_int(cfg.db_no_sync, def.db_no_sync, "describe: db.no_sync default");
	is_int((long long)cfg.rpc_max_frame, (long long)def.rpc_max_frame, "describe: rpc.max_frame default");
	is_int((long long)cfg.rpc_max_clients, (long long)def.rpc_max_clients,
	       "describe: rpc.max_clients default");
	is_int((long long)cfg.rpc_partial_timeout_ms, (long long)def.rpc_partial_timeout_ms,
	       "describe: rpc.partial_timeout_ms default");
	weft_config_free(&cfg);
	weft_config_free(&def);
	free(path);
	free(buf);
}

int main(void)
{
	tmp = tu_tmpdir("config");
	test_defaults();
	test_load_valid();
	test_sizes();
	test_errors();
	test_describe();
	tu_rmtree(tmp);
	free(tmp);
	return done_testing();
}
