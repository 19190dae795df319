/* exec.c - weft-campaign's child processes (docker, docker-compose, the
 * testnet tool, nsenter) and its clock.  A child runs in its own process
 * group: the terminal's Ctrl-C reaches only weft-campaign, whose handler
 * sets campaign_interrupted; the runner then kills what is running (unless
 * it is the teardown) and tears the testnet down itself.  Output is read
 * through a pipe with poll(), so a deadline and an interrupt are noticed
 * while a child runs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/util.h"

#include "campaign.h"

volatile int campaign_interrupted;

static struct timespec clock_start;

double campaign_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (clock_start.tv_sec == 0 && clock_start.tv_nsec == 0)
		clock_start = ts;
	return (double)(ts.tv_sec - clock_start.tv_sec) + (double)(ts.tv_nsec - clock_start.tv_nsec) / 1e9;
}

void campaign_clock_reset(void)
{
	clock_gettime(CLOCK_MONOTONIC, &clock_start);
}

bool campaign_sleep_until(double t)
{
	for (;;) {
		if (campaign_interrupted)
			return false;
		double left = t - campaign_now();
		if (left <= 0)
			return true;
		if (left > 0.1)
			left = 0.1;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(left * 1e9)};
		nanosleep(&ts, NULL);
	}
}

/* Appends len bytes to the growing string *buf. */
static void append(char **buf, size_t *len, const char *data, size_t n)
{
	*buf = weft_xrealloc(*buf, *len + n + 1, 1);
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

int campaign_exec(char *const argv[], double timeout_s, bool uninterruptible, FILE *log, char **out)
{
	int fds[2];
	char *buf = NULL;
	size_t len = 0;
	double deadline = campaign_now() + timeout_s;
	int status = -1;

	append(&buf, &len, "", 0);
	if (pipe2(fds, O_CLOEXEC) < 0) {
		append(&buf, &len, "pipe failed", 11);
		goto done;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		append(&buf, &len, "fork failed", 11);
		goto done;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* as the child does: whichever runs first */
	close(fds[1]);
	bool killed = false;
	for (;;) {
		char chunk[4096];
		struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
		int r = poll(&pfd, 1, 100);
		if (r > 0) {
			ssize_t n = read(fds[0], chunk, sizeof(chunk));
			if (n > 0) {
				append(&buf, &len, chunk, (size_t)n);
				continue;
			}
			if (n == 0 || errno != EINTR)
				break;
		}
		if (!killed && (campaign_now() > deadline || (campaign_interrupted && !uninterruptible))) {
			const char *why = campaign_now() > deadline ? "\n(killed: no end in time)\n" : "\n(killed: interrupted)\n";
			append(&buf, &len, why, strlen(why));
			kill(-pid, SIGKILL);
			killed = true;
		}
	}
	close(fds[0]);
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	status = killed ? -1 : WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
done:
	if (log) {
		fprintf(log, "[%8.2f]", campaign_now());
		for (size_t i = 0; argv[i]; i++)
			fprintf(log, " %s", argv[i]);
		fprintf(log, "\n%s%s-> %d\n", buf, len && buf[len - 1] != '\n' ? "\n" : "", status);
		fflush(log);
	}
	if (out)
		*out = buf;
	else
		free(buf);
	return status;
}
