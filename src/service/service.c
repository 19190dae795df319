/* service.c - weft-service's work (main.c parses the command line): sell
 * a command as a service over a node's atomic service channels.  It
 * registers NAME on the daemon's RPC socket (service.register), and for
 * each service.request notification runs the command with the request's
 * payload on its standard input, then answers service.respond with what
 * the command wrote on its standard output (at most 256 KiB), or an error
 * when it failed.  The daemon encrypts the result and is paid for it
 * atomically (docs/asc.md). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "service.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/rpc_client.h"

#define RESULT_MAX (256u << 10)
#define QUEUE_MAX 64

struct request {
	char channel[65];
	long long seq;
	char *payload;
	size_t plen;
};

struct queue {
	struct request q[QUEUE_MAX];
	size_t n;
};

/* Notifications arrive while waiting on the listening connection: queued,
 * answered on the other one (a callback must not use its connection). */
static void on_notify(const char *method, json_t *params, void *arg)
{
	struct queue *qu = arg;
	json_t *p = json_array_get(params, 0);
	if (strcmp(method, "service.request") != 0 || !json_is_object(p) || qu->n == QUEUE_MAX)
		return;
	const char *ch = json_string_value(json_object_get(p, "channel"));
	const char *text = json_string_value(json_object_get(p, "payload"));
	const char *hex = json_string_value(json_object_get(p, "payload_hex"));
	if (ch == NULL || strlen(ch) != 64)
		return;
	struct request *r = &qu->q[qu->n];
	memset(r, 0, sizeof(*r));
	memcpy(r->channel, ch, 65);
	r->seq = json_integer_value(json_object_get(p, "seq"));
	if (text) {
		r->plen = strlen(text);
		r->payload = strdup(text);
	} else if (hex) {
		r->plen = strlen(hex) / 2;
		r->payload = malloc(r->plen + 1);
		if (r->payload && weft_hex_decode((uint8_t *)r->payload, r->plen, hex, strlen(hex)) != 0)
			r->plen = 0;
	} else {
		r->payload = strdup("");
	}
	if (r->payload == NULL)
		abort();
	qu->n++;
}

/* Runs argv with in on its stdin; its stdout in *out (up to RESULT_MAX).
 * 0 when it exited 0. */
static int run(char *const argv[], const char *in, size_t ilen, char **out, size_t *olen)
{
	int to[2], from[2];
	if (pipe(to) != 0 || pipe(from) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]), close(to[1]), close(from[0]), close(from[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	*out = malloc(RESULT_MAX + 1);
	if (*out == NULL)
		abort();
	*olen = 0;
	size_t sent = 0;
	bool too_big = false;
	struct pollfd fds[2] = {{to[1], POLLOUT, 0}, {from[0], POLLIN, 0}};
	if (ilen == 0)
		close(to[1]), fds[0].fd = -1;
	while (fds[1].fd >= 0) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[0].fd >= 0 && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(to[1], in + sent, ilen - sent);
			if (w > 0)
				sent += (size_t)w;
			if (w <= 0 || sent == ilen)
				close(to[1]), fds[0].fd = -1;
		}
		if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[4096];
			ssize_t r = read(from[0], buf, sizeof(buf));
			if (r <= 0) {
				close(from[0]);
				fds[1].fd = -1;
			} else if (*olen + (size_t)r > RESULT_MAX) {
				too_big = true;
			} else {
				memcpy(*out + *olen, buf, (size_t)r);
				*olen += (size_t)r;
			}
		}
	}
	if (fds[0].fd >= 0)
		close(to[1]);
	int status = 0;
	waitpid(pid, &status, 0);
	return !too_big && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void respond(struct weft_rpc_client *c, const struct request *r, char *const argv[])
{
	char *out = NULL;
	size_t olen = 0;
	json_t *params;
	if (run(argv, r->payload, r->plen, &out, &olen) == 0) {
		char *hex = malloc(2 * olen + 1);
		if (hex == NULL)
			abort();
		weft_hex_encode(hex, (const uint8_t *)out, olen);
		params = json_pack("[{s:s,s:I,s:s}]", "channel", r->channel, "seq", (json_int_t)r->seq, "result_hex", hex);
		free(hex);
	} else {
		params = json_pack("[{s:s,s:I,s:s}]", "channel", r->channel, "seq", (json_int_t)r->seq, "error",
				   "the service's command failed");
	}
	free(out);
	json_t *res = NULL, *err = NULL;
	if (weft_rpc_client_call(c, "service.respond", params, 10000, &res, &err) != 0 || err) {
		char *e = err ? json_dumps(err, JSON_COMPACT) : NULL;
		fprintf(stderr, "weft-service: service.respond seq %lld: %s\n", r->seq, e ? e : weft_rpc_client_errmsg(c));
		free(e);
	}
	json_decref(params), json_decref(res), json_decref(err);
}

int weft_service_run(const char *socket, const char *name, char *const argv[])
{
	struct weft_rpc_client *listen = NULL, *answer = NULL;
	static struct queue qu;
	json_t *res = NULL, *err = NULL;
	signal(SIGPIPE, SIG_IGN);
	if (weft_rpc_client_connect(&listen, socket, 5000, NULL) != 0 ||
	    weft_rpc_client_connect(&answer, socket, 5000, NULL) != 0) {
		fprintf(stderr, "weft-service: cannot connect to %s\n", socket);
		weft_rpc_client_close(listen);
		return 1;
	}
	weft_rpc_client_set_notify(listen, on_notify, &qu);
	json_t *params = json_pack("[{s:s}]", "name", name);
	int rc = weft_rpc_client_call(listen, "service.register", params, 5000, &res, &err);
	json_decref(params);
	if (rc != 0 || err) {
		char *e = err ? json_dumps(err, JSON_COMPACT) : NULL;
		fprintf(stderr, "weft-service: service.register: %s\n", e ? e : weft_rpc_client_errmsg(listen));
		free(e);
		json_decref(err);
		weft_rpc_client_close(listen), weft_rpc_client_close(answer);
		return 1;
	}
	json_decref(res);
	printf("weft-service: selling %s\n", name);
	fflush(stdout);
	for (;;) {
		rc = weft_rpc_client_listen_any(listen, 1000);
		for (size_t i = 0; i < qu.n; i++) {
			respond(answer, &qu.q[i], argv);
			free(qu.q[i].payload);
		}
		qu.n = 0;
		if (rc != 0 && rc != WEFT_ETIMEDOUT)
			break;
	}
	fprintf(stderr, "weft-service: the daemon closed the connection\n");
	weft_rpc_client_close(listen), weft_rpc_client_close(answer);
	return 0;
}
