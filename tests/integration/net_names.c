/* net_names.c - integration test of peers named by host name, with real
 * weftd: a committee whose genesis names its nodes "localhost" connects
 * (the name is looked up asynchronously, through the hosts file); a node
 * whose peer's name does not resolve logs why, retries, and keeps answering
 * RPC; and so does a node whose name server never answers (run in its own
 * mount namespace with a resolv.conf naming a UDP socket of this test that
 * reads nothing, when unshare(1) may: a look-up must never block the event
 * loop). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/rpcutil.h"
#include "../lib/testutil.h"
#include "../tap.h"

static char *tmp;
static pid_t pids[2] = {-1, -1};

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void cleanup(void)
{
	for (int i = 0; i < 2; i++)
		if (pids[i] > 0)
			tu_weftd_stop(pids[i], 5000);
	if (tmp)
		tu_rmtree(tmp);
}

/* The number of connected peers node dir reports, or -1. */
static int connected(const char *dir)
{
	char *cli = tu_bin("weft-cli");
	char *const argv[] = {cli, "--datadir", (char *)dir, "--timeout", "2", "status", NULL};
	struct tu_run r;
	int n = -1;
	if (tu_run(&r, argv, 5000, -1) == 0 && r.status == 0) {
		const char *p = strstr(r.out, "\"connected\":");
		if (p)
			n = atoi(p + strlen("\"connected\":"));
	}
	tu_run_free(&r);
	free(cli);
	return n;
}

/* Polls status on sock for ms milliseconds: true when every call was
 * answered; *slowest gets the longest one. */
static bool keeps_serving(const char *sock, long ms, long *slowest)
{
	*slowest = 0;
	for (long end = now_ms() + ms; now_ms() < end;) {
		long t0 = now_ms();
		bool serving = tu_rpc_still_serving(sock);
		if (now_ms() - t0 > *slowest)
			*slowest = now_ms() - t0;
		if (!serving)
			return false;
		usleep(50 * 1000);
	}
	return true;
}

/* A name server that never answers: a UDP socket on 127.0.0.77:53 that
 * nobody reads (queries to it are neither answered nor refused).  The
 * socket, or -1 when port 53 cannot be bound here. */
static int dead_name_server(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
	inet_pton(AF_INET, "127.0.0.77", &a.sin_addr);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Starts weftd on dir in a new mount namespace where /etc/resolv.conf names
 * only dead_name_server().  The pid, or -1 when unshare or mount is not
 * permitted here. */
static pid_t start_with_dead_resolver(const char *dir)
{
	char *rc = tu_path(tmp, "resolv.conf"), *weftd = tu_bin("weftd"), *script;
	tu_write_file(rc, "nameserver 127.0.0.77\n");
	if (asprintf(&script, "mount --bind '%s' /etc/resolv.conf || exit 77; exec '%s' --datadir '%s' 2>>'%s/stderr'",
		     rc, weftd, dir, dir) < 0)
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		execlp("unshare", "unshare", "-m", "sh", "-c", script, (char *)NULL);
		_exit(77);
	}
	free(script);
	free(weftd);
	free(rc);
	char *sock = tu_path(dir, "rpc.sock");
	for (long end = now_ms() + 5000; pid > 0 && now_ms() < end; usleep(50 * 1000)) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pid = -1;   /* unshare or mount refused, or weftd failed */
			break;
		}
		if (access(sock, F_OK) == 0)
			break;
	}
	free(sock);
	return pid;
}

static bool genesis(int port)
{
	char *cli = tu_bin("weft-cli");
	char portarg[16];
	snprintf(portarg, sizeof(portarg), "%d", port);
	char *const argv[] = {cli, "genesis", "--nodes", "2", "--out", tmp, "--host", "localhost",
			      "--base-port", portarg, "--protocol", "beb", "--force", NULL};
	struct tu_run r;
	bool good = tu_run(&r, argv, 10000, -1) == 0 && r.status == 0;
	if (!good)
		diag("genesis: %s", r.err ? r.err : "");
	tu_run_free(&r);
	free(cli);
	return good;
}

int main(void)
{
	plan(5);
	tmp = tu_tmpdir("net-names");
	atexit(cleanup);
	int port = tu_port_base(2);
	if (port < 0 || !genesis(port))
		return done_testing();
	char *dir0 = tu_path(tmp, "node0"), *dir1 = tu_path(tmp, "node1");

	pids[0] = tu_weftd_start(dir0, NULL);
	pids[1] = tu_weftd_start(dir1, NULL);
	long deadline = now_ms() + 10000;
	while (now_ms() < deadline && (connected(dir0) != 1 || connected(dir1) != 1))
		usleep(100 * 1000);
	ok(connected(dir0) == 1 && connected(dir1) == 1, "nodes named localhost in the genesis connect");
	tu_weftd_stop(pids[0], 5000);
	tu_weftd_stop(pids[1], 5000);
	pids[0] = pids[1] = -1;

	/* Rename node 1 to a name no resolver knows (.invalid, RFC 6761). */
	char *gpath = tu_path(tmp, "genesis.json");
	char *g = tu_read_file(gpath), old[64];
	snprintf(old, sizeof(old), "localhost:%d", port + 1);
	char *at = g ? strstr(g, old) : NULL;
	ok(at != NULL, "genesis names node 1 %s", old);
	if (at) {
		char *renamed;
		if (asprintf(&renamed, "%.*sweft-no-such-host.invalid:%d%s", (int)(at - g), g, port + 1,
			     at + strlen(old)) < 0)
			abort();
		tu_write_file(gpath, renamed);
		free(renamed);
	}
	pids[0] = tu_weftd_start(dir0, NULL);
	char *sock = tu_path(dir0, "rpc.sock");
	long slowest;
	bool serving = keeps_serving(sock, 3000, &slowest);
	ok(serving && slowest < 1000, "the node answers status while its peer's name does not resolve (slowest %ld ms)",
	   slowest);
	char *log = tu_path(dir0, "weftd.log");
	ok(tu_file_count(log, "weft-no-such-host.invalid") >= 1, "the failed look-up is logged with the name");
	tu_weftd_stop(pids[0], 5000);

	/* The same node, with a name server that never answers: glibc's
	 * getaddrinfo would wait 10 s per look-up (5 s, twice). */
	int dns = dead_name_server();
	pids[0] = dns >= 0 ? start_with_dead_resolver(dir0) : -1;
	if (pids[0] < 0) {
		skip(1, "port 53 or unshare -m with a bind mount is not permitted here");
	} else {
		serving = keeps_serving(sock, 4000, &slowest);
		ok(serving && slowest < 1000,
		   "with a name server that never answers the node still answers status (slowest %ld ms)", slowest);
	}
	if (dns >= 0)
		close(dns);
	free(log);
	free(sock);
	free(g);
	free(gpath);
	free(dir0);
	free(dir1);
	return done_testing();
}
