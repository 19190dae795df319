/* daemon_start.c - integration test of weftd's start-up and shutdown with
 * real processes: configuration errors (explicit and implicit weft.conf),
 * the command line, a second weftd on a locked data dir, data dirs that are
 * not writable or not directories, an identity key readable by others, an
 * LMDB database of another identity, restarts keeping the node id, SIGINT
 * and SIGHUP (log reopen after a logrotate-style rename).  Each case checks
 * the exit status (0 clean, 1 start-up failure, 2 usage or configuration
 * error) and that stderr names what went wrong. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"

#define RUN_MS 15000

static char *tmp;

static char *join(const char *a, const char *b)
{
	char *p;
	if (asprintf(&p, "%s/%s", a, b) < 0)
		abort();
	return p;
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* First line of s in a static buffer, for test names. */
static const char *first_line(const char *s)
{
	static char buf[400];
	snprintf(buf, sizeof(buf), "%s", s ? s : "");
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* Runs weftd with args (NULL-terminated) as uid (-1: ourselves), killing it
 * after timeout_ms. */
static int weftd_run_ms(struct tu_run *r, const char *const *args, int uid, int timeout_ms)
{
	char *bin = tu_bin("weftd");
	const char *argv[16] = {bin};
	int n = 1;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int st = tu_run(r, (char *const *)argv, timeout_ms, uid);
	free(bin);
	return st;
}

static int weftd_run(struct tu_run *r, const char *const *args, int uid)
{
	return weftd_run_ms(r, args, uid, RUN_MS);
}

/* weft-cli --datadir dir method; parsed stdout (or NULL) and the status. */
static json_t *cli(const char *dir, const char *method, int *status)
{
	char *bin = tu_bin("weft-cli");
	const char *argv[] = {bin, "--datadir", dir, method, NULL};
	struct tu_run r;
	*status = tu_run(&r, (char *const *)argv, 10000, -1);
	json_t *j = json_loads(r.out, 0, NULL);
	tu_run_free(&r);
	free(bin);
	return j;
}

/* The node_id from weft-cli status, malloc'd, or NULL. */
static char *node_id(const char *dir)
{
	int st;
	json_t *j = cli(dir, "status", &st);
	const char *id = json_string_value(json_object_get(j, "node_id"));
	char *copy = st == 0 && id ? strdup(id) : NULL;
	json_decref(j);
	return copy;
}

/* Starts weftd in dir and stops it with SIGTERM; true when both worked. */
static bool start_stop(const char *dir)
{
	pid_t pid = tu_weftd_start(dir, NULL);
	return pid > 0 && tu_weftd_stop(pid, 10000) == 0;
}

static void test_config_errors(void)
{
	struct tu_run r;
	char *dir = join(tmp, "cfg"), *conf = join(tmp, "bad.conf");

	tu_write_file(conf, "[rpc]\nmax_frame = 2MiB\nmax_fram = 1\n");
	weftd_run(&r, (const char *[]){"--datadir", dir, "--config", conf, NULL}, -1);
	is_int(r.status, 2, "unknown config key: weftd exits 2");
	char want[600];
	snprintf(want, sizeof(want), "%s:3:", conf);
	ok(strstr(r.err, want) && strstr(r.err, "max_fram"),
	   "unknown config key: stderr names file, line and key (%s)", first_line(r.err));
	ok(strstr(r.err, "[rpc]") != NULL, "unknown config key: stderr names the section");
	tu_run_free(&r);

	tu_write_file(conf, "[log]\nlevel = info\n[rpc]\nmax_clients = lots\n");
	weftd_run(&r, (const char *[]){"--datadir", dir, "--config", conf, NULL}, -1);
	is_int(r.status, 2, "bad number: weftd exits 2");
	snprintf(want, sizeof(want), "%s:4:", conf);
	ok(strstr(r.err, want) && strstr(r.err, "max_clients") && strstr(r.err, "lots"),
	   "bad number: stderr names file, line, key and value (%s)", first_line(r.err));
	tu_run_free(&r);

	tu_write_file(conf, "[rpc]\nmax_clients = 0\n");
	weftd_run(&r, (const char *[]){"--datadir", dir, "--config", conf, NULL}, -1);
	ok(r.status == 2 && strstr(r.err, "max_clients") && strstr(r.err, "range"),
	   "out-of-range value: exit 2 and the range (%d: %s)", r.status, first_line(r.err));
	tu_run_free(&r);

	char *missing = join(tmp, "no-such.conf");
	weftd_run(&r, (const char *[]){"--datadir", dir, "--config", missing, NULL}, -1);
	is_int(r.status, 2, "--config with a missing file: weftd exits 2");
	ok(strstr(r.err, missing) != NULL, "--config with a missing file: stderr has the path (%s)",
	   first_line(r.err));
	tu_run_free(&r);
	free(missing);

	/* DIR/weft.conf is read when present. */
	mkdir(dir, 0700);
	char *implicit = join(dir, "weft.conf");
	tu_write_file(implicit, "[db]\nbogus_key = 1\n");
	weftd_run(&r, (const char *[]){"--datadir", dir, NULL}, -1);
	is_int(r.status, 2, "bad key in DIR/weft.conf: weftd exits 2");
	snprintf(want, sizeof(want), "%s:2:", implicit);
	ok(strstr(r.err, want) && strstr(r.err, "bogus_key"),
	   "bad key in DIR/weft.conf: stderr names it, the line and the key (%s)", first_line(r.err));
	char *sock = join(dir, "rpc.sock");
	ok(!exists(sock), "nothing is served after a configuration error");
	free(sock);
	tu_run_free(&r);

	/* An explicit --config takes the place of DIR/weft.conf. */
	tu_write_file(conf, "[rpc]\nmax_clients = 1000\n");
	const char *extra[] = {"--config", conf, NULL};
	pid_t pid = tu_weftd_start(dir, extra);
	ok(pid > 0, "--config FILE is used instead of a bad DIR/weft.conf");
	is_int(tu_weftd_stop(pid, 10000), 0, "and that weftd stops cleanly");

	/* A log file in a missing directory is a start-up error, not stdout
	 * (a weftd that starts anyway is killed after 3 s). */
	tu_write_file(implicit, "[log]\nfile = /nonexistent-dir/weftd.log\n");
	weftd_run_ms(&r, (const char *[]){"--datadir", dir, NULL}, -1, 3000);
	is_int(r.status, 1, "log file in a missing directory: weftd exits 1 (status %d)", r.status);
	ok(strstr(r.err, "/nonexistent-dir/weftd.log") != NULL,
	   "log file in a missing directory: stderr names it (%s)", first_line(r.err));
	ok(strstr(r.out, "node.start") == NULL, "and nothing is logged to stdout");
	tu_run_free(&r);
	unlink(implicit);

	free(implicit);
	free(conf);
	free(dir);
}

static void test_command_line(void)
{
	struct tu_run r;
	weftd_run(&r, (const char *[]){"--help", NULL}, -1);
	is_int(r.status, 0, "weftd --help exits 0");
	ok(strstr(r.out, "--datadir") != NULL, "--help mentions --datadir");
	tu_run_free(&r);

	weftd_run(&r, (const char *[]){"--no-such-option", NULL}, -1);
	is_int(r.status, 2, "an unknown option exits 2");
	ok(strstr(r.err, "usage") != NULL, "an unknown option prints the usage on stderr");
	tu_run_free(&r);

	weftd_run(&r, (const char *[]){"extra-argument", NULL}, -1);
	ok(r.status == 2 && strstr(r.err, "extra-argument"), "an unexpected argument exits 2 naming it (%d: %s)",
	   r.status, first_line(r.err));
	tu_run_free(&r);

	weftd_run(&r, (const char *[]){"--describe-config", NULL}, -1);
	is_int(r.status, 0, "--describe-config exits 0");
	ok(strstr(r.out, "[rpc]") && strstr(r.out, "[db]") && strstr(r.out, "[log]"),
	   "--describe-config prints [rpc], [db] and [log]");
	tu_run_free(&r);

	weftd_run(&r, (const char *[]){"--version", NULL}, -1);
	ok(r.status == 0 && strncmp(r.out, "weftd ", 6) == 0, "--version exits 0 and prints 'weftd VERSION'");
	tu_run_free(&r);
}

static void test_second_instance(void)
{
	char *dir = join(tmp, "twice");
	pid_t pid = tu_weftd_start(dir, NULL);
	ok(pid > 0, "first weftd starts");
	if (pid <= 0) {
		skip(6, "first weftd did not start");
		free(dir);
		return;
	}
	struct tu_run r;
	weftd_run(&r, (const char *[]){"--datadir", dir, NULL}, -1);
	is_int(r.status, 1, "second weftd on the same data dir exits 1");
	char pidstr[32];
	snprintf(pidstr, sizeof(pidstr), "pid %ld", (long)pid);
	ok(strstr(r.err, "in use") && strstr(r.err, pidstr),
	   "second weftd: stderr says the data dir is in use by %s (%s)", pidstr, first_line(r.err));
	tu_run_free(&r);

	int st;
	json_t *j = cli(dir, "status", &st);
	is_int(st, 0, "first weftd still answers weft-cli status");
	is_int(json_integer_value(json_object_get(j, "pid")), pid, "and it is the first weftd that answers");
	json_decref(j);
	char *sock = join(dir, "rpc.sock");
	ok(exists(sock), "the first weftd's socket is still there");
	free(sock);
	is_int(tu_weftd_stop(pid, 10000), 0, "first weftd stops cleanly");
	free(dir);
}

static void test_not_writable(void)
{
	if (geteuid() != 0) {
		skip(6, "needs root to run weftd as uid 65534");
		return;
	}
	char *root = tu_tmpdir("rootowned"); /* root-owned, mode 0755 */
	chmod(root, 0755);
	char *inside = join(root, "node");
	struct tu_run r;

	weftd_run(&r, (const char *[]){"--datadir", inside, NULL}, 65534);
	is_int(r.status, 1, "data dir to be created in an unwritable dir: exit 1");
	ok(strstr(r.err, inside) && strstr(r.err, "Permission denied"),
	   "stderr names the path and says Permission denied (%s)", first_line(r.err));
	ok(!exists(inside), "nothing was created");
	tu_run_free(&r);

	weftd_run(&r, (const char *[]){"--datadir", root, NULL}, 65534);
	is_int(r.status, 1, "existing, unwritable data dir: exit 1");
	ok(strstr(r.err, root) && strstr(r.err, "Permission denied"),
	   "stderr names the path and says Permission denied (%s)", first_line(r.err));
	char *sock = join(root, "rpc.sock");
	ok(!exists(sock), "no socket was created");
	free(sock);
	tu_run_free(&r);

	tu_rmtree(root);
	free(inside);
	free(root);
}

static void test_bad_data_dirs(void)
{
	struct tu_run r;

	/* identity.key readable by others. */
	char *dir = join(tmp, "keymode"), *key = join(dir, "identity.key");
	ok(start_stop(dir), "a fresh node starts and stops (creates identity.key)");
	ok(chmod(key, 0644) == 0, "chmod 0644 identity.key");
	weftd_run(&r, (const char *[]){"--datadir", dir, NULL}, -1);
	is_int(r.status, 1, "identity.key with mode 0644: exit 1");
	ok(strstr(r.err, "chmod 600") && strstr(r.err, key), "stderr names the key and says chmod 600 (%s)",
	   first_line(r.err));
	tu_run_free(&r);
	chmod(key, 0600);
	ok(start_stop(dir), "after chmod 600 the node starts again");
	free(key);
	free(dir);

	/* A data dir that is a regular file. */
	char *file = join(tmp, "plainfile");
	tu_write_file(file, "not a directory\n");
	weftd_run(&r, (const char *[]){"--datadir", file, NULL}, -1);
	is_int(r.status, 1, "data dir that is a regular file: exit 1");
	ok(strstr(r.err, file) && strcasestr(r.err, "not a directory"),
	   "stderr names the path and says it is not a directory (%s)", first_line(r.err));
	tu_run_free(&r);
	char *text = tu_read_file(file);
	is_str(text, "not a directory\n", "the file is left as it was");
	free(text);
	free(file);
}

static void test_signals(void)
{
	/* SIGINT. */
	char *dir = join(tmp, "sigint"), *sock = join(dir, "rpc.sock");
	pid_t pid = tu_weftd_start(dir, NULL);
	ok(pid > 0 && exists(sock), "weftd started, socket present");
	if (pid > 0)
		kill(pid, SIGINT);
	is_int(pid > 0 ? tu_wait(pid, 10000) : -1, 0, "SIGINT: weftd exits 0");
	ok(!exists(sock), "SIGINT: rpc.sock removed");
	free(sock);
	free(dir);

	/* SIGHUP reopens the log after a logrotate-style rename. */
	dir = join(tmp, "sighup");
	mkdir(dir, 0700);
	char *conf = join(dir, "weft.conf"), *log = join(dir, "weftd.log"), *log1 = join(dir, "weftd.log.1");
	tu_write_file(conf, "[log]\nfile = weftd.log\n");
	pid = tu_weftd_start(dir, NULL);
	ok(pid > 0, "weftd with [log] file = weftd.log starts");
	if (pid <= 0) {
		skip(7, "weftd did not start");
		goto out;
	}
	char *text = tu_read_file(log);
	ok(text && strstr(text, "node.start"), "DIR/weftd.log (relative to the data dir) has node.start");
	free(text);
	ok(rename(log, log1) == 0, "rename weftd.log to weftd.log.1");
	kill(pid, SIGHUP);
	for (int i = 0; i < 500 && !exists(log); i++)
		usleep(10000);
	ok(exists(log), "after SIGHUP a new weftd.log exists");
	int st;
	json_t *j = cli(dir, "stop", &st);
	is_int(st, 0, "weft-cli stop");
	json_decref(j);
	is_int(tu_wait(pid, 10000), 0, "weftd exits 0 after stop");
	text = tu_read_file(log);
	ok(text && strstr(text, "node.sighup") && strstr(text, "node.stop"),
	   "new weftd.log has node.sighup and node.stop");
	free(text);
	text = tu_read_file(log1);
	ok(text && strstr(text, "node.start") && !strstr(text, "node.stop"),
	   "weftd.log.1 has node.start and not node.stop");
	free(text);
out:
	free(conf);
	free(log);
	free(log1);
	free(dir);
}

static void test_identity(void)
{
	struct tu_run r;
	char *dir = join(tmp, "restart");
	pid_t pid = tu_weftd_start(dir, NULL);
	char *id1 = pid > 0 ? node_id(dir) : NULL;
	ok(id1 && strlen(id1) == 64, "first start: node_id (%s)", id1 ? id1 : "none");
	is_int(tu_weftd_stop(pid, 10000), 0, "first run stops cleanly");
	pid = tu_weftd_start(dir, NULL);
	char *id2 = pid > 0 ? node_id(dir) : NULL;
	ok(id1 && id2 && strcmp(id1, id2) == 0, "restart keeps the node_id (%s)", id2 ? id2 : "none");
	is_int(tu_weftd_stop(pid, 10000), 0, "second run stops cleanly");

	/* Replace identity.key with another node's key. */
	char *other = join(tmp, "other"), *key = join(dir, "identity.key"), *okey = join(other, "identity.key");
	ok(start_stop(other), "another node starts and stops");
	char *mine = tu_read_file(key), *theirs = tu_read_file(okey);
	ok(mine && theirs && strcmp(mine, theirs) != 0, "the two nodes have different keys");
	if (theirs) {
		tu_write_file(key, theirs);
		chmod(key, 0600);
	}
	weftd_run(&r, (const char *[]){"--datadir", dir, NULL}, -1);
	is_int(r.status, 1, "database of another identity: exit 1");
	ok(strstr(r.err, "belongs to another") != NULL, "stderr says the database belongs to another identity (%s)",
	   first_line(r.err));
	tu_run_free(&r);
	char *sock = join(dir, "rpc.sock");
	ok(!exists(sock), "no socket served with the wrong identity");
	free(sock);

	/* The original key brings the node back. */
	if (mine) {
		tu_write_file(key, mine);
		chmod(key, 0600);
	}
	pid = tu_weftd_start(dir, NULL);
	char *id3 = pid > 0 ? node_id(dir) : NULL;
	ok(id1 && id3 && strcmp(id1, id3) == 0, "with its own key back the node starts with the same node_id");
	is_int(tu_weftd_stop(pid, 10000), 0, "and stops cleanly");

	free(id1);
	free(id2);
	free(id3);
	free(mine);
	free(theirs);
	free(key);
	free(okey);
	free(other);
	free(dir);
}

int main(void)
{
	tmp = tu_tmpdir("start");
	test_config_errors();
	test_command_line();
	test_second_instance();
	test_not_writable();
	test_bad_data_dirs();
	test_signals();
	test_identity();
	tu_rmtree(tmp);
	free(tmp);
	return done_testing();
}
