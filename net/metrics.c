/* metrics.c - the Prometheus /metrics endpoint on libevent's evhttp, and
 * host:port parsing shared with the peer transport's configuration. */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"
#include "weft/log.h"
#include "weft/metrics.h"
#include "weft/util.h"

struct weft_metrics {
	struct evhttp *http;
	weft_metrics_render_fn render;
	void *ctx;
};

int weft_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *colon;
	size_t hl;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			return WEFT_EINVAL;
		hl = (size_t)(close - s - 1);
		s++;
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return WEFT_EINVAL;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen)
		return WEFT_EINVAL;
	uint64_t p;
	if (weft_parse_u64(colon + 1, &p) < 0 || p == 0 || p > 65535)
		return WEFT_EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	*port = (uint16_t)p;
	return 0;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct weft_metrics *m = arg;
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, "only GET");
		return;
	}
	struct evbuffer *out = evbuffer_new();
	if (out == NULL)
		abort();
	m->render(m->ctx, out);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	evhttp_send_error(req, 404, "try /metrics");
}

int weft_metrics_start(struct weft_metrics **out, struct event_base *base, const char *host, uint16_t port,
		       weft_metrics_render_fn render, void *ctx)
{
	struct weft_metrics *m = calloc(1, sizeof(*m));
	if (m == NULL)
		abort();
	m->render = render;
	m->ctx = ctx;
	m->http = evhttp_new(base);
	if (m->http == NULL)
		abort();
	evhttp_set_max_headers_size(m->http, 8192);
	evhttp_set_max_body_size(m->http, 0);
	evhttp_set_timeout(m->http, 10);
	evhttp_set_cb(m->http, "/metrics", on_request, m);
	evhttp_set_gencb(m->http, on_other, m);
	if (evhttp_bind_socket(m->http, host, port) != 0) {
		weft_error("metrics.listen", "addr=%s:%u err=\"cannot bind\"", host, port);
		weft_metrics_stop(m);
		return WEFT_EIO;
	}
	weft_info("metrics.listen", "addr=%s:%u path=/metrics", host, port);
	*out = m;
	return 0;
}

void weft_metrics_stop(struct weft_metrics *m)
{
	if (m == NULL)
		return;
	evhttp_free(m->http);
	free(m);
}
