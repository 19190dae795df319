/* testutil.h - helpers shared by weft's TAP tests: temporary directories,
 * running programs and capturing their output, starting and stopping real
 * weftd processes, and raw Unix-socket I/O with timeouts. */
#ifndef WEFT_TESTUTIL_H
#define WEFT_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A fresh directory under $TMPDIR (or /tmp); caller frees the string and
 * removes the tree with tu_rmtree. */
char *tu_tmpdir(const char *tag);
void tu_rmtree(const char *path);
/* dir/name, malloc'd (the caller frees it). */
char *tu_path(const char *dir, const char *name);
/* Path of a built program: $WEFT_BIN/name (default build/bin/name). */
char *tu_bin(const char *name);
/* Writes text to path (mode 0644); aborts on failure. */
void tu_write_file(const char *path, const char *text);
/* Reads a whole file into a NUL-terminated malloc'd string, or NULL. */
char *tu_read_file(const char *path);

struct tu_run {
	int status;      /* exit code, or 128+signal */
	char *out;       /* stdout, NUL-terminated */
	char *err;       /* stderr, NUL-terminated */
};
/* Runs argv (argv[0] a path) to completion within timeout_ms, as user uid
 * when uid >= 0 (tests run as root in CI).  Frees nothing of argv. */
int tu_run(struct tu_run *r, char *const argv[], int timeout_ms, int uid);
void tu_run_free(struct tu_run *r);

/* Starts weftd --datadir dir [extra args] in the background (stderr to
 * dir/../<basename>.stderr) and waits until its RPC socket answers a
 * connect.  Returns the pid, or -1 (diagnostics printed). */
pid_t tu_weftd_start(const char *dir, const char *const *extra);
/* SIGTERM, then waits up to timeout_ms; returns the exit status or -1. */
int tu_weftd_stop(pid_t pid, int timeout_ms);
/* Waits for pid to exit within timeout_ms; exit status, 128+signal, or -1. */
int tu_wait(pid_t pid, int timeout_ms);

/* Connects to a Unix socket; fd or -1. */
/* A listening Unix stream socket at path (a stale one is replaced), or -1. */
int tu_unix_listen(const char *path);
int tu_unix_connect(const char *path);
/* Writes all bytes; 0 or -1. */
int tu_send_all(int fd, const void *buf, size_t len);
/* Reads up to cap bytes, waiting at most timeout_ms for the first byte and
 * then until idle for 100 ms.  Returns bytes read; 0 means EOF (closed), -1
 * timeout with nothing read. */
long tu_recv(int fd, void *buf, size_t cap, int timeout_ms);
/* True when the peer closed the connection within timeout_ms (reads and
 * discards anything sent before the close). */
bool tu_wait_closed(int fd, int timeout_ms);
/* Resident set size of pid in KiB, or -1. */
long tu_rss_kib(pid_t pid);
/* User + system CPU seconds pid has used, or -1. */
double tu_cpu_seconds(pid_t pid);

/* A base port p such that 127.0.0.1:p .. p+count-1 can all be bound (TCP)
 * right now, chosen at random (seeded from the pid and the clock) in
 * 20000..32000, below Linux's ephemeral range, so that tests running in
 * parallel rarely collide; retries other bases.  -1 when none is found. */
int tu_port_base(int count);
/* Connects a TCP socket to host:port (an IPv4 literal) within timeout_ms;
 * fd (blocking) or -1. */
int tu_tcp_connect(const char *host, int port, int timeout_ms);
/* Number of lines of the file at path that contain needle (0 when the file
 * is missing). */
int tu_file_count(const char *path, const char *needle);
/* Number of entries of the directory dir whose name starts with prefix, or
 * -1 when dir cannot be read. */
int tu_dir_count(const char *dir, const char *prefix);

#endif
