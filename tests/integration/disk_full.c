/* disk_full.c - integration test of a real weftd (a one-node DAG
 * committee) whose data directory lives on a small tmpfs that we fill up
 * (issue 11 item 2: a failed commit must leave memory as the store is):
 *   - while the disk is full, submissions are refused with a clear error,
 *     status and /metrics say the node is paused, the log says why;
 *   - nothing refused is ever committed, everything accepted is, exactly
 *     once, including across a restart;
 *   - when space returns the node resumes by itself (rounds advance, new
 *     transactions commit), with no restart;
 *   - a node killed while the disk is full starts again on the full disk,
 *     pauses, and resumes when space returns.
 * Needs root (mount); skipped with the reason otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "../lib/testutil.h"
#include "../tap.h"

#define MAX_REFUSED 64
#define MAX_ACCEPTED 4096

static char *cli_bin, *dir, *filler;

static long now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return tv.tv_sec * 1000L + tv.tv_usec / 1000;
}

/* weft-cli --datadir DIR args...: parsed JSON on success, else NULL with
 * the first line of stderr in err (if given). */
static json_t *cli(char *err, size_t errlen, const char *method, ...)
{
	const char *argv[12] = {cli_bin, "--datadir", dir, method};
	int n = 4;
	va_list ap;
	va_start(ap, method);
	const char *a;
	while (n < 11 && (a = va_arg(ap, const char *)) != NULL)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	struct tu_run r;
	tu_run(&r, (char *const *)argv, 10000, -1);
	json_t *j = r.status == 0 ? json_loads(r.out, 0, NULL) : NULL;
	if (err && errlen) {
		r.err[strcspn(r.err, "\n")] = '\0';
		snprintf(err, errlen, "%s", r.err);
	}
	tu_run_free(&r);
	return j;
}

static long long dag_field(const char *field)
{
	json_t *j = cli(NULL, 0, "dag.info", NULL);
	long long v = j ? json_integer_value(json_object_get(j, field)) : -1;
	json_decref(j);
	return v;
}

static const char *store_state(char *buf, size_t len)
{
	json_t *j = cli(NULL, 0, "status", NULL);
	const char *s = json_string_value(json_object_get(json_object_get(j, "store"), "state"));
	snprintf(buf, len, "%s", s ? s : "?");
	json_decref(j);
	return buf;
}

static bool wait_store(const char *want, int timeout_ms)
{
	char buf[32];
	long deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		if (strcmp(store_state(buf, sizeof(buf)), want) == 0)
			return true;
		usleep(100000);
	}
	return false;
}

/* Submits data=text; 1 accepted, 0 refused (err filled), -1 other failure. */
static int submit(const char *text, char *err, size_t errlen, char digest[65])
{
	char data[128];
	snprintf(data, sizeof(data), "data=%s", text);
	json_t *j = cli(err, errlen, "tx.submit", data, NULL);
	if (j == NULL)
		return strstr(err, "not stored") ? 0 : -1;
	const char *d = json_string_value(json_object_get(j, "digest"));
	snprintf(digest, 65, "%s", d ? d : "");
	json_decref(j);
	return 1;
}

static const char *status_of(const char *digest, char *buf, size_t len)
{
	char arg[96];
	snprintf(arg, sizeof(arg), "digest=%.64s", digest);
	json_t *j = cli(NULL, 0, "tx.status", arg, NULL);
	const char *s = json_string_value(json_object_get(j, "status"));
	snprintf(buf, len, "%s", s ? s : "?");
	json_decref(j);
	return buf;
}

/* Fills the filesystem with a file of zeros until it refuses more. */
static long long fill_disk(void)
{
	int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	static char chunk[64 * 1024];
	long long total = 0;
	ssize_t w;
	if (fd < 0)
		return -1;
	while ((w = write(fd, chunk, sizeof(chunk))) > 0)
		total += w;
	/* The last partial block. */
	while ((w = write(fd, chunk, 512)) > 0)
		total += w;
	fsync(fd);
	close(fd);
	return total;
}

static bool wait_committed(long long want, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		if (dag_field("committed_txs") >= want)
			return true;
		usleep(100000);
	}
	return false;
}

static bool rounds_advance(int timeout_ms)
{
	long long r0 = dag_field("committed_round");
	long deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		usleep(200000);
		if (dag_field("committed_round") > r0 + 2)
			return true;
	}
	return false;
}

int main(void)
{
	char *tmp = tu_tmpdir("diskfull");
	char *mnt, *net, *log;
	if (asprintf(&mnt, "%s/mnt", tmp) < 0 || asprintf(&net, "%s/net", mnt) < 0 ||
	    asprintf(&filler, "%s/filler", mnt) < 0)
		abort();
	mkdir(mnt, 0700);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=12m") != 0) {
		int e = errno;
		tu_rmtree(tmp);
		skip_all("cannot mount a 12 MiB tmpfs for the data directory (needs root): %s", strerror(e));
	}
	cli_bin = tu_bin("weft-cli");
	int base = tu_port_base(1);
	char port[16];
	snprintf(port, sizeof(port), "%d", base);
	char *gen[] = {cli_bin, "genesis", "--nodes", "1", "--out", net, "--base-port", port, "--protocol", "dag", NULL};
	struct tu_run r;
	tu_run(&r, gen, 20000, -1);
	ok(r.status == 0, "genesis of a one-node DAG committee on a 12 MiB tmpfs");
	tu_run_free(&r);
	if (asprintf(&dir, "%s/node0", net) < 0 || asprintf(&log, "%s/weftd.log", dir) < 0)
		abort();

	pid_t pid = tu_weftd_start(dir, NULL);
	ok(pid > 0, "weftd starts");
	char err[512], digest[65], buf[64];
	static char accepted[MAX_ACCEPTED][65], refused[MAX_REFUSED][32]; /* digests; refused: the data */
	int naccepted = 0, nrefused = 0;
	for (int i = 0; i < 20; i++) {
		char text[32];
		snprintf(text, sizeof(text), "before-%d", i);
		if (submit(text, err, sizeof(err), accepted[naccepted]) == 1)
			naccepted++;
	}
	is_int(naccepted, 20, "20 transactions accepted before the disk fills");
	ok(wait_committed(20, 10000), "... and committed");

	/* Fill the disk, then submit until the node refuses. */
	long long filled = fill_disk();
	ok(filled > 0, "filled the tmpfs (%lld bytes of filler)", filled);
	int others = 0;
	for (int i = 0; i < 3000 && nrefused < 10; i++) {
		char text[32];
		snprintf(text, sizeof(text), "during-%d", i);
		int rc = submit(text, err, sizeof(err), digest);
		if (rc == 1 && naccepted < MAX_ACCEPTED) {
			memcpy(accepted[naccepted++], digest, 65);
		} else if (rc == 0) {
			snprintf(refused[nrefused++], sizeof(refused[0]), "%s", text);
		} else {
			others++;
		}
	}
	ok(nrefused == 10, "on a full disk submissions are refused (%d refused, %d accepted in all, %d other errors)",
	   nrefused, naccepted, others);
	ok(strstr(err, "not stored") && strstr(err, "paused"), "the refusal says nothing was stored and why (%s)", err);
	ok(wait_store("paused", 5000), "status: store.state is paused");
	json_t *st = cli(NULL, 0, "status", NULL);
	const char *advice = json_string_value(json_object_get(json_object_get(st, "store"), "advice"));
	ok(advice && strstr(advice, "free space"), "status: store.advice says what to do (%s)", advice ? advice : "none");
	json_decref(st);
	ok(tu_file_count(log, "host.paused") >= 1, "the log says the node paused, once per pause");
	ok(kill(pid, 0) == 0, "the daemon keeps running on a full disk");

	/* Space returns: the node resumes by itself. */
	unlink(filler);
	ok(wait_store("ok", 10000), "space freed: store.state back to ok with no restart");
	ok(tu_file_count(log, "host.resumed") >= 1, "the log says the node resumed");
	ok(rounds_advance(10000), "rounds advance again");
	long long want = naccepted;
	ok(wait_committed(want, 15000), "every accepted transaction is committed (%lld of %d)",
	   dag_field("committed_txs"), naccepted);
	int not_committed = 0;
	for (int i = 0; i < naccepted; i++)
		not_committed += strcmp(status_of(accepted[i], buf, sizeof(buf)), "committed") != 0;
	is_int(not_committed, 0, "tx.status: every accepted transaction committed");
	/* Refused ones: resubmitting them now is accepted as new, proving they
	 * were neither committed nor kept in the mempool. */
	int fresh = 0;
	for (int i = 0; i < nrefused; i++) {
		json_t *j;
		char data[96];
		snprintf(data, sizeof(data), "data=%.31s", refused[i]);
		j = cli(err, sizeof(err), "tx.submit", data, NULL);
		fresh += j && json_is_false(json_object_get(j, "duplicate"));
		if (j) {
			const char *d = json_string_value(json_object_get(j, "digest"));
			if (d && naccepted < MAX_ACCEPTED)
				snprintf(accepted[naccepted++], 65, "%s", d);
		}
		json_decref(j);
	}
	is_int(fresh, nrefused, "every refused transaction was unknown to the node (not committed, not pending)");
	ok(wait_committed(naccepted, 15000), "... and, submitted again, commits");
	long long committed = dag_field("committed_txs");
	is_int(committed, naccepted, "committed_txs counts each accepted transaction once (%lld)", committed);

	/* Restart: nothing reappears, nothing commits twice. */
	is_int(tu_weftd_stop(pid, 10000), 0, "weftd stops cleanly");
	pid = tu_weftd_start(dir, NULL);
	ok(pid > 0, "weftd restarts");
	ok(rounds_advance(10000), "after the restart rounds advance");
	is_int(dag_field("mempool_txs"), 0, "after the restart the mempool is empty (nothing committed came back)");
	is_int(dag_field("committed_txs"), committed, "after the restart committed_txs is unchanged");

	/* Killed while the disk is full, started again on the full disk. */
	ok(fill_disk() > 0, "filled the disk again");
	ok(wait_store("paused", 15000), "the node pauses on its own writes");
	kill(pid, SIGKILL);
	tu_wait(pid, 5000);
	pid = tu_weftd_start(dir, NULL);
	ok(pid > 0, "weftd starts on a full disk after kill -9");
	usleep(1500000);
	ok(kill(pid, 0) == 0, "... and keeps running");
	unlink(filler);
	ok(wait_store("ok", 10000), "space freed: the restarted node resumes");
	ok(rounds_advance(10000), "... and rounds advance");
	if (submit("after-all", err, sizeof(err), digest) == 1)
		naccepted++;
	ok(wait_committed(committed + 1, 15000), "a new transaction commits");
	is_int(dag_field("committed_txs"), committed + 1, "nothing committed twice through it all");

	tu_weftd_stop(pid, 10000);
	umount2(mnt, MNT_DETACH);
	tu_rmtree(tmp);
	free(tmp), free(mnt), free(net), free(log), free(dir), free(filler), free(cli_bin);
	return done_testing();
}
