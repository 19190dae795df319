/* log.c - the process log: one line per event with a UTC timestamp, the
 * level, the event name and caller-formatted key=value fields.  Each line is
 * written with a single write(2) so concurrent processes sharing a file do
 * not interleave within a line. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/log.h"

static int log_fd = 2;
static char *log_path;
static enum weft_log_level log_level = WEFT_LOG_INFO;

static const char *const level_names[] = {
	[WEFT_LOG_DEBUG] = "debug",
	[WEFT_LOG_INFO] = "info",
	[WEFT_LOG_WARN] = "warn",
	[WEFT_LOG_ERROR] = "error",
};

static int open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		return weft_err_from_errno(errno);
	return fd;
}

int weft_log_open(const char *path)
{
	if (path == NULL || path[0] == '\0' || strcmp(path, "-") == 0) {
		weft_log_close();
		return 0;
	}
	int fd = open_file(path);
	if (fd < 0)
		return fd;
	weft_log_close();
	log_fd = fd;
	log_path = strdup(path);
	if (log_path == NULL)
		abort();
	return 0;
}

int weft_log_reopen(void)
{
	if (log_path == NULL)
		return 0;
	int fd = open_file(log_path);
	if (fd < 0)
		return fd;
	dup2(fd, log_fd);
	close(fd);
	return 0;
}

void weft_log_close(void)
{
	if (log_fd > 2)
		close(log_fd);
	log_fd = 2;
	free(log_path);
	log_path = NULL;
}

void weft_log_set_level(enum weft_log_level level)
{
	log_level = level;
}

enum weft_log_level weft_log_get_level(void)
{
	return log_level;
}

int weft_log_level_parse(const char *s, enum weft_log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum weft_log_level)i;
			return 0;
		}
	}
	return WEFT_EINVAL;
}

const char *weft_log_level_name(enum weft_log_level level)
{
	return level_names[level];
}

/* Formats and writes one line; suffix (may be NULL) ends it. */
static void log_line(enum weft_log_level level, const char *event, const char *suffix, const char *fmt, va_list ap)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			 ts.tv_nsec / 1000000, level_names[level], event);
	if (n < 0 || (size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2; /* a huge event name: keep what fits */
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2; /* truncated: keep the line whole */
	if (suffix) {
		size_t sl = strlen(suffix);
		if (len + sl > sizeof(line) - 2)
			len = sizeof(line) - 2 - sl;
		memcpy(line + len, suffix, sl);
		len += sl;
	}
	line[len++] = '\n';
	ssize_t w;
	do
		w = write(log_fd, line, len);
	while (w < 0 && errno == EINTR);
}

void weft_log(enum weft_log_level level, const char *event, const char *fmt, ...)
{
	if (level < log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	log_line(level, event, NULL, fmt, ap);
	va_end(ap);
}

/* ---- rate-limited call sites ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void weft_log_limit_init(struct weft_log_limit *l, unsigned int per_window)
{
	memset(l, 0, sizeof(*l));
	l->per_window = per_window ? per_window : 1;
}

void weft_log_limited(struct weft_log_limit *l, enum weft_log_level level, const char *event, const char *fmt, ...)
{
	if (level < log_level)
		return;
	uint64_t now = mono_ms();
	if (l->per_window == 0)
		l->per_window = 1; /* a zeroed static limit */
	if (l->written == 0 || now - l->window_start_ms >= WEFT_LOG_LIMIT_WINDOW_MS) {
		l->window_start_ms = now;
		l->written = 0;
	}
	if (l->written >= l->per_window) {
		l->suppressed++;
		return;
	}
	l->written++;
	char suffix[96] = "";
	if (l->suppressed)
		snprintf(suffix, sizeof(suffix), " suppressed=%llu (similar lines not logged in the last %u s)",
			 (unsigned long long)l->suppressed, WEFT_LOG_LIMIT_WINDOW_MS / 1000);
	l->suppressed = 0;
	va_list ap;
	va_start(ap, fmt);
	log_line(level, event, suffix[0] ? suffix : NULL, fmt, ap);
	va_end(ap);
	if (l->written == l->per_window)
		l->last_event = event;
}

void weft_log_limit_flush(struct weft_log_limit *l)
{
	if (l->suppressed && l->last_event)
		weft_log(WEFT_LOG_INFO, l->last_event, "suppressed=%llu (similar lines not logged before this)",
			 (unsigned long long)l->suppressed);
	l->suppressed = 0;
}
