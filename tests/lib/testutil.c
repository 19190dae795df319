/* testutil.c - helpers for weft's TAP tests (see testutil.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *xasprintf(const char *fmt, const char *a, const char *b)
{
	char *s;
	if (asprintf(&s, fmt, a, b) < 0)
		abort();
	return s;
}

char *tu_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *t = xasprintf("%s/weft-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	if (mkdtemp(t) == NULL)
		abort();
	chmod(t, 0755);
	return t;
}

void tu_rmtree(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char *p = xasprintf("%s/%s", path, e->d_name);
			struct stat st;
			if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
				tu_rmtree(p);
			else
				unlink(p);
			free(p);
		}
		closedir(d);
	}
	rmdir(path);
}

char *tu_bin(const char *name)
{
	const char *dir = getenv("WEFT_BIN");
	return xasprintf("%s/%s", dir && *dir ? dir : "build/bin", name);
}

void tu_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

char *tu_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len < 2)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (buf == NULL)
		abort();
	buf[len] = '\0';
	return buf;
}

int tu_wait(pid_t pid, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0 || now_ms() > deadline)
			return -1;
		usleep(5000);
	}
}

/* Appends what is readable on fd to *buf. Returns false at EOF. */
static bool drain(int fd, char **buf, size_t *len)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));
	if (n <= 0)
		return n < 0 && errno == EINTR;
	*buf = realloc(*buf, *len + (size_t)n + 1);
	if (*buf == NULL)
		abort();
	memcpy(*buf + *len, tmp, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
	return true;
}

int tu_run(struct tu_run *r, char *const argv[], int timeout_ms, int uid)
{
	int out[2], err[2];
	memset(r, 0, sizeof(*r));
	if (pipe(out) != 0 || pipe(err) != 0)
		abort();
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		if (uid >= 0 && (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0))
			_exit(126);
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	size_t olen = 0, elen = 0;
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	bool oopen = true, eopen = true;
	long deadline = now_ms() + timeout_ms;
	while (oopen || eopen) {
		struct pollfd p[2] = {{oopen ? out[0] : -1, POLLIN, 0}, {eopen ? err[0] : -1, POLLIN, 0}};
		long left = deadline - now_ms();
		if (left <= 0 || poll(p, 2, (int)left) <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		if (p[0].revents)
			oopen = drain(out[0], &r->out, &olen);
		if (p[1].revents)
			eopen = drain(err[0], &r->err, &elen);
	}
	close(out[0]);
	close(err[0]);
	long left = deadline - now_ms();
	r->status = tu_wait(pid, left > 100 ? (int)left : 100);
	if (r->status < 0) {
		kill(pid, SIGKILL);
		r->status = tu_wait(pid, 1000);
	}
	return r->status;
}

void tu_run_free(struct tu_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

int tu_unix_listen(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	strcpy(sun.sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 || listen(fd, 8) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int tu_unix_connect(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	strcpy(sun.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

pid_t tu_weftd_start(const char *dir, const char *const *extra)
{
	char *bin = tu_bin("weftd");
	char *errpath = xasprintf("%s%s", dir, ".stderr");
	const char *argv[32] = {bin, "--datadir", dir};
	int argc = 3;
	for (int i = 0; extra && extra[i] && argc < 30; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	char *sock = xasprintf("%s/%s", dir, "rpc.sock");
	long deadline = now_ms() + 10000;
	int fd = -1;
	while (now_ms() < deadline) {
		if ((fd = tu_unix_connect(sock)) >= 0)
			break;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			pid = -1;
			break;
		}
		usleep(10000);
	}
	if (fd >= 0) {
		close(fd);
	} else {
		char *log = tu_read_file(errpath);
		fprintf(stderr, "# weftd in %s did not start:\n%s\n", dir, log ? log : "");
		free(log);
		if (pid > 0)
			kill(pid, SIGKILL), tu_wait(pid, 1000);
		pid = -1;
	}
	free(sock);
	free(errpath);
	free(bin);
	return pid;
}

int tu_weftd_stop(pid_t pid, int timeout_ms)
{
	if (pid <= 0)
		return -1;
	kill(pid, SIGTERM);
	int st = tu_wait(pid, timeout_ms);
	if (st < 0) {
		kill(pid, SIGKILL);
		tu_wait(pid, 1000);
	}
	return st;
}

int tu_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

long tu_recv(int fd, void *buf, size_t cap, int timeout_ms)
{
	size_t got = 0;
	int wait = timeout_ms;
	while (got < cap) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, wait) <= 0)
			break;
		ssize_t n = recv(fd, (char *)buf + got, cap - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got ? (long)got : (n == 0 ? 0 : -1);
		got += (size_t)n;
		wait = 100;
	}
	return got ? (long)got : -1;
}

bool tu_wait_closed(int fd, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	char buf[4096];
	for (;;) {
		long left = deadline - now_ms();
		if (left <= 0)
			return false;
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, (int)left) <= 0)
			return false;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return true;
	}
}

char *tu_path(const char *dir, const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

long tu_rss_kib(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	char *s = tu_read_file(path);
	if (s == NULL)
		return -1;
	char *p = strstr(s, "VmRSS:");
	long kib = p ? strtol(p + 6, NULL, 10) : -1;
	free(s);
	return kib;
}

double tu_cpu_seconds(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char *s = tu_read_file(path), *p = s ? strrchr(s, ')') : NULL;
	unsigned long ut = 0, st = 0;
	/* After ") ": state ppid pgrp session tty tpgid flags minflt cminflt
	 * majflt cmajflt utime stime. */
	bool got = p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2;
	free(s);
	return got ? (double)(ut + st) / (double)sysconf(_SC_CLK_TCK) : -1;
}

/* True when 127.0.0.1:port can be bound (and is released again). */
static bool port_free(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(fd);
	return ok;
}

int tu_port_base(int count)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned int seed = (unsigned int)getpid() * 2654435761u ^ (unsigned int)ts.tv_nsec;
	const int lo = 20000, hi = 32000;
	if (count < 1 || count > hi - lo)
		return -1;
	for (int attempt = 0; attempt < 200; attempt++) {
		int base = lo + (int)(rand_r(&seed) % (unsigned int)(hi - lo - count));
		int i = 0;
		while (i < count && port_free(base + i))
			i++;
		if (i == count)
			return base;
	}
	return -1;
}

int tu_tcp_connect(const char *host, int port, int timeout_ms)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		if (errno != EINPROGRESS) {
			close(fd);
			return -1;
		}
		struct pollfd p = {fd, POLLOUT, 0};
		int err = 0;
		socklen_t len = sizeof(err);
		if (poll(&p, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
			close(fd);
			return -1;
		}
	}
	int flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

int tu_file_count(const char *path, const char *needle)
{
	char *s = tu_read_file(path);
	int n = 0;
	for (char *line = s; line && *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = '\0';
		n += strstr(line, needle) != NULL;
		line = end ? end + 1 : NULL;
	}
	free(s);
	return n;
}

int tu_dir_count(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t plen = strlen(prefix);
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, plen) == 0;
	closedir(d);
	return n;
}
