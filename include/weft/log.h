/* log.h - one line per event: timestamp, level, event name, key=value fields.
 *
 *   2026-11-21T05:35:01.123Z info rpc.listen path=/d/rpc.sock clients=0
 *
 * Logs go to stderr until weft_log_open() names a file; weft_log_reopen()
 * reopens that file (SIGHUP, for logrotate).  Values that may hold spaces
 * should be quoted by the caller ("%s" inside double quotes). */
#ifndef WEFT_LOG_H
#define WEFT_LOG_H

#include <stdint.h>

enum weft_log_level {
	WEFT_LOG_DEBUG,
	WEFT_LOG_INFO,
	WEFT_LOG_WARN,
	WEFT_LOG_ERROR,
};

/* path NULL or "" or "-" means stderr.  0 or a negative weft code. */
int weft_log_open(const char *path);
int weft_log_reopen(void);
void weft_log_close(void);
void weft_log_set_level(enum weft_log_level level);
enum weft_log_level weft_log_get_level(void);
/* Parses "debug", "info", "warn", "error".  0 or WEFT_EINVAL. */
int weft_log_level_parse(const char *s, enum weft_log_level *out);
const char *weft_log_level_name(enum weft_log_level level);

void weft_log(enum weft_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Rate limit for one log call site that a remote party can trigger (a
 * refused connection, a malformed frame), as Tor's ratelim_t: at most
 * per_window lines per WEFT_LOG_LIMIT_WINDOW_MS; the rest are counted, and
 * the next line written carries "suppressed=N".  A zeroed struct allows
 * one line per window.  Not thread-safe (the daemon is one event loop). */
#define WEFT_LOG_LIMIT_WINDOW_MS 60000u
struct weft_log_limit {
	uint64_t window_start_ms;
	unsigned int per_window;
	unsigned int written;     /* lines written in this window */
	uint64_t suppressed;      /* lines dropped since the last one written */
	const char *last_event;   /* for weft_log_limit_flush */
};
void weft_log_limit_init(struct weft_log_limit *l, unsigned int per_window);
void weft_log_limited(struct weft_log_limit *l, enum weft_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Logs how many lines are still suppressed, if any (at shutdown). */
void weft_log_limit_flush(struct weft_log_limit *l);
/* A call site with its own static limit of per_window lines a minute. */
#define weft_log_ratelimited(lines, level, ev, ...)                                 \
	do {                                                                               \
		static struct weft_log_limit weft_log_limit_site_ = {.per_window = (lines)}; \
		weft_log_limited(&weft_log_limit_site_, level, ev, __VA_ARGS__);                \
	} while (0)

#define weft_debug(ev, ...) weft_log(WEFT_LOG_DEBUG, ev, __VA_ARGS__)
#define weft_info(ev, ...) weft_log(WEFT_LOG_INFO, ev, __VA_ARGS__)
#define weft_warn(ev, ...) weft_log(WEFT_LOG_WARN, ev, __VA_ARGS__)
#define weft_error(ev, ...) weft_log(WEFT_LOG_ERROR, ev, __VA_ARGS__)

#endif
