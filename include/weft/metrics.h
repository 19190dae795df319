/* metrics.h - the Prometheus text endpoint: GET /metrics on an HTTP port
 * (libevent evhttp), off unless configured.  The owner renders the text. */
#ifndef WEFT_METRICS_H
#define WEFT_METRICS_H

#include <stdint.h>

struct event_base;
struct evbuffer;
struct weft_metrics;

/* Renders the exposition text into out. */
typedef void (*weft_metrics_render_fn)(void *ctx, struct evbuffer *out);

/* Serves http://host:port/metrics.  0, or a negative code with a log line. */
int weft_metrics_start(struct weft_metrics **out, struct event_base *base, const char *host, uint16_t port,
		       weft_metrics_render_fn render, void *ctx);
void weft_metrics_stop(struct weft_metrics *m); /* accepts NULL */

/* Splits "host:port" or "[v6]:port"; host is written to buf.  0 or WEFT_EINVAL. */
int weft_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port);

#endif
