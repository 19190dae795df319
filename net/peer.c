/* peer.c - the peer transport (see weft/net.h): listener, dialling with
 * backoff, the secure-channel handshake, per-peer queues batched into
 * encrypted records, keepalives, timeouts, the runtime fault layer, and the
 * tie-break that keeps one link per peer pair.  Peer names are looked up
 * asynchronously (evdns), so a resolver that does not answer never stalls
 * the event loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "weft/bytes.h"
#include "weft/err.h"
#include "weft/log.h"
#include "weft/net.h"
#include "weft/netfault.h"
#include "weft/rng.h"
#include "weft/secure.h"

enum frame_type { FRAME_MSG = 0, FRAME_PING = 1, FRAME_PONG = 2 };

#define FRAME_HEADER 5                 /* u32 length || u8 type */
#define RECORD_TARGET (64 * 1024)      /* batch small messages up to this much per record */
#define SOCKET_OUT_LIMIT (1 << 20)     /* stop sealing while this much waits for the socket */
#define SOCKET_OUT_REFILL (256 << 10)  /* ... and seal more once it is down to this */
#define SOCKET_IO_CHUNK (1 << 20)      /* bytes libevent may move per write call */
#define SOCKET_READ_CHUNK (128 << 10)  /* bytes we read per readv (below glibc's mmap threshold) */
#define SOCKET_READ_BUDGET (4 << 20)   /* bytes we drain per read callback, for fairness */

struct conn {
	struct weft_net *net;
	struct bufferevent *bev;
	struct weft_sc *sc;
	struct event *timer;           /* handshake timeout, then half-sent record timeout */
	struct conn *prev, *next;
	int peer;                      /* -1 until the handshake names it */
	bool outgoing;
	bool established;
	bool timer_armed;
	char addr[64];
};

struct peer {
	struct weft_net *net;
	uint32_t index;
	struct conn *active;           /* the link in use */
	struct conn *dialing;          /* our outgoing connection, until established */
	struct evdns_getaddrinfo_request *lookup; /* the pending look-up of its name, if any */
	bool looking_up;               /* its name is being looked up */
	struct evbuffer *queue;        /* framed messages not yet sealed */
	struct event *redial;
	struct event *keepalive;
	uint32_t backoff_ms;
	bool waiting;                  /* redial timer armed */
	struct weft_net_peer_stats st;
	struct weft_log_limit disconnect_log; /* a member that keeps misbehaving floods nothing */
};

struct delayed {
	struct weft_net *net;
	struct event *ev;
	struct delayed *prev, *next;
	uint32_t peer;
	bool inbound;
	size_t len;
	uint8_t data[];
};

struct weft_net {
	struct weft_net_opts o;
	struct weft_log_limit anon_log;    /* disconnects of connections not yet tied to a peer */
	struct weft_log_limit refused_log; /* refused handshakes: anyone can cause them */
	struct evconnlistener *listener;
	struct evdns_base *dns;        /* asynchronous name lookups for dialling */
	struct event *listen_pause;    /* re-enables the listener after accept() failed */
	unsigned int pending;          /* connections still in the handshake */
	unsigned int max_pending;      /* cap: 4n + 64, at most a quarter of the descriptor limit */
	struct peer *peers;
	struct conn *conns;
	struct delayed *delayed;
	struct event *flush_ev;
	uint64_t refused;
	struct weft_rng rng;           /* redial jitter */
	struct weft_mpw rec;           /* scratch: sealed records, handshake answers */
	uint8_t *plain;                /* scratch: one decrypted record */
	size_t max_body;
};

static void conn_close(struct conn *c, const char *why, bool misbehaved);
static void peer_schedule_redial(struct weft_net *net, struct peer *p);
static void peer_flush(struct weft_net *net, struct peer *p);

/* Whether p has a link or is getting one (looking its name up or dialling). */
static bool peer_linking(const struct peer *p)
{
	return p->active || p->dialing || p->looking_up;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static struct timeval tv_ms(uint64_t ms)
{
	return (struct timeval){(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
}

static void key_hex(char out[17], const uint8_t *pk)
{
	if (pk)
		weft_hex_encode(out, pk, 8);
	else
		strcpy(out, "unknown");
}

const char *weft_net_state_name(enum weft_net_state s)
{
	switch (s) {
	case WEFT_NET_CONNECTING: return "connecting";
	case WEFT_NET_CONNECTED: return "connected";
	case WEFT_NET_BACKOFF: return "backoff";
	}
	return "unknown";
}

/* ---- queues and records ---- */

static size_t peer_queued(const struct peer *p)
{
	size_t q = evbuffer_get_length(p->queue);
	if (p->active)
		q += evbuffer_get_length(bufferevent_get_output(p->active->bev));
	return q;
}

static void frame_append(struct evbuffer *q, enum frame_type type, const void *msg, size_t len)
{
	uint8_t hdr[FRAME_HEADER];
	weft_be32_put(hdr, (uint32_t)len);
	hdr[4] = (uint8_t)type;
	evbuffer_add(q, hdr, sizeof(hdr));
	if (len)
		evbuffer_add(q, msg, len);
}

static void schedule_flush(struct weft_net *net)
{
	event_active(net->flush_ev, EV_WRITE, 0);
}

/* Bytes to seal next: whole frames, up to RECORD_TARGET (one frame may be larger). */
static size_t next_record_size(struct evbuffer *q)
{
	size_t total = evbuffer_get_length(q), take = 0;
	struct evbuffer_ptr pos;
	if (evbuffer_ptr_set(q, &pos, 0, EVBUFFER_PTR_SET) != 0)
		return 0;
	while (take < total) {
		uint8_t hdr[4];
		if (evbuffer_copyout_from(q, &pos, hdr, 4) != 4)
			break;
		size_t flen = FRAME_HEADER + (size_t)weft_be32_get(hdr);
		if (take > 0 && take + flen > RECORD_TARGET)
			break;
		take += flen;
		/* Step to the next frame from here, not from the start of the queue. */
		if (take >= RECORD_TARGET || take >= total || evbuffer_ptr_set(q, &pos, flen, EVBUFFER_PTR_ADD) != 0)
			break;
	}
	return take;
}

static void peer_flush(struct weft_net *net, struct peer *p)
{
	struct conn *c = p->active;
	if (c == NULL)
		return;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	while (evbuffer_get_length(p->queue) > 0 && evbuffer_get_length(out) < SOCKET_OUT_LIMIT) {
		size_t take = next_record_size(p->queue);
		const uint8_t *data = evbuffer_pullup(p->queue, (ev_ssize_t)take);
		weft_mpw_reset(&net->rec);
		if (weft_sc_seal(c->sc, data, take, &net->rec) != 0) {
			conn_close(c, "cannot seal (send counter exhausted)", false);
			return;
		}
		bufferevent_write(c->bev, net->rec.buf, net->rec.len);
		p->st.bytes_out += net->rec.len;
		evbuffer_drain(p->queue, take);
	}
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct weft_net *net = arg;
	for (uint32_t i = 0; i < net->o.n; i++)
		if (net->peers[i].active && evbuffer_get_length(net->peers[i].queue))
			peer_flush(net, &net->peers[i]);
}

/* Queues one protocol message (after the fault layer). */
static int enqueue(struct weft_net *net, struct peer *p, const void *msg, size_t len)
{
	if (peer_queued(p) + len + FRAME_HEADER > net->o.queue_max) {
		p->st.dropped++;
		return WEFT_ECLOSED;
	}
	frame_append(p->queue, FRAME_MSG, msg, len);
	p->st.frames_out++;
	schedule_flush(net);
	return peer_queued(p) > net->o.queue_hwm ? WEFT_EAGAIN : 0;
}

/* ---- the fault layer ---- */

static void on_delayed(evutil_socket_t fd, short what, void *arg)
{
	struct delayed *d = arg;
	struct weft_net *net = d->net;
	if (d->prev)
		d->prev->next = d->next;
	else
		net->delayed = d->next;
	if (d->next)
		d->next->prev = d->prev;
	if (d->inbound)
		net->o.on_message(net->o.ctx, d->peer, d->data, d->len);
	else
		enqueue(net, &net->peers[d->peer], d->data, d->len);
	event_free(d->ev);
	free(d);
}

static void hold(struct weft_net *net, uint32_t peer, bool inbound, const uint8_t *msg, size_t len, uint64_t us)
{
	struct delayed *d = malloc(sizeof(*d) + len);
	if (d == NULL)
		abort();
	d->net = net;
	d->peer = peer;
	d->inbound = inbound;
	d->len = len;
	memcpy(d->data, msg, len);
	d->ev = evtimer_new(net->o.base, on_delayed, d);
	d->prev = NULL;
	d->next = net->delayed;
	if (net->delayed)
		net->delayed->prev = d;
	net->delayed = d;
	struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
	evtimer_add(d->ev, &tv);
}

/* Passes one message through the fault layer in direction dir; calls
 * deliver (inbound) or enqueue (outbound) for each copy that goes on now. */
static int apply_faults(struct weft_net *net, enum weft_nf_dir dir, uint32_t peer, const uint8_t *msg, size_t len)
{
	struct weft_nf_verdict v = {.copies = 1};
	uint8_t *copy = NULL;
	int rc = 0;
	if (net->o.faults)
		weft_nf_judge(net->o.faults, dir, peer, now_us() / 1000, &v);
	if (v.drop)
		return 0;
	if (v.corrupt && len > 0) {
		copy = malloc(len);
		if (copy == NULL)
			abort();
		memcpy(copy, msg, len);
		weft_nf_corrupt(net->o.faults, copy, len);
		msg = copy;
	}
	for (unsigned int i = 0; i < v.copies; i++) {
		if (v.delay_us)
			hold(net, peer, dir == WEFT_NF_IN, msg, len, v.delay_us);
		else if (dir == WEFT_NF_IN)
			net->o.on_message(net->o.ctx, peer, msg, len);
		else
			rc = enqueue(net, &net->peers[peer], msg, len);
	}
	free(copy);
	return rc;
}

int weft_net_send(struct weft_net *net, uint32_t to, const void *msg, size_t len)
{
	if (to >= net->o.n || to == net->o.self_index)
		return WEFT_EINVAL;
	if (len > net->o.max_frame)
		return WEFT_ETOOBIG;
	return apply_faults(net, WEFT_NF_OUT, to, msg, len);
}

/* ---- inbound records ---- */

/* Handles the frames of one decrypted record.  0, or -1 after closing c. */
static int handle_frames(struct conn *c, const uint8_t *plain, size_t len)
{
	struct weft_net *net = c->net;
	struct peer *p = &net->peers[c->peer];
	size_t off = 0;
	while (off < len) {
		if (len - off < FRAME_HEADER) {
			conn_close(c, "truncated frame header", true);
			return -1;
		}
		const uint8_t *h = plain + off;
		size_t flen = weft_be32_get(h);
		uint8_t type = h[4];
		if (flen > net->o.max_frame || flen > len - off - FRAME_HEADER) {
			conn_close(c, flen > net->o.max_frame ? "message over net.max_frame" : "frame overruns its record",
				   true);
			return -1;
		}
		const uint8_t *payload = h + FRAME_HEADER;
		off += FRAME_HEADER + flen;
		switch (type) {
		case FRAME_MSG:
			p->st.frames_in++;
			apply_faults(net, WEFT_NF_IN, (uint32_t)c->peer, payload, flen);
			if (p->active != c) /* the callback may have replaced the link */
				return -1;
			break;
		case FRAME_PING:
			if (flen != 8) {
				conn_close(c, "bad ping", true);
				return -1;
			}
			frame_append(p->queue, FRAME_PONG, payload, 8);
			schedule_flush(net);
			break;
		case FRAME_PONG:
			if (flen == 8) {
				uint64_t sent = weft_be64_get(payload);
				uint64_t now = now_us();
				if (sent <= now)
					p->st.rtt_us = now - sent;
			}
			break;
		default:
			conn_close(c, "unknown frame type", true);
			return -1;
		}
	}
	return 0;
}

static void arm_conn_timer(struct conn *c, bool on, uint32_t ms)
{
	if (on && !c->timer_armed) {
		struct timeval tv = tv_ms(ms);
		evtimer_add(c->timer, &tv);
	} else if (!on && c->timer_armed) {
		evtimer_del(c->timer);
	}
	c->timer_armed = on;
}

/* ---- link life cycle ---- */

static int peer_check(void *ctx, const uint8_t pk[WEFT_PK_LEN])
{
	struct weft_net *net = ctx;
	for (uint32_t i = 0; i < net->o.n; i++)
		if (i != net->o.self_index && memcmp(net->o.keys[i], pk, WEFT_PK_LEN) == 0)
			return (int)i;
	return -1;
}

static void send_ping(struct weft_net *net, struct peer *p)
{
	uint8_t ts[8];
	weft_be64_put(ts, now_us());
	frame_append(p->queue, FRAME_PING, ts, 8);
	schedule_flush(net);
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	if (p->active)
		send_ping(p->net, p);
}

/* The handshake finished on c: attach it to its peer, or lose the tie-break
 * (then c is closed and freed, and false is returned). */
static bool conn_established(struct conn *c)
{
	struct weft_net *net = c->net;
	if (!c->outgoing)
		c->peer = weft_sc_peer_index(c->sc);
	struct peer *p = &net->peers[c->peer];
	if (p->dialing == c)
		p->dialing = NULL;
	/* Both sides keep the link dialled by the lower-indexed node. */
	bool mine_wins = (net->o.self_index < (uint32_t)c->peer) == c->outgoing;
	if (p->active) {
		if (!mine_wins) {
			conn_close(c, "duplicate link (tie-break)", false);
			return false;
		}
		struct conn *old = p->active;
		p->active = NULL;
		conn_close(old, "replaced by the tie-break winner", false);
	}
	c->established = true;
	net->pending--;
	p->active = c;
	p->st.state = WEFT_NET_CONNECTED;
	p->st.connects++;
	p->backoff_ms = net->o.reconnect_min_ms;
	if (p->waiting) {
		evtimer_del(p->redial);
		p->waiting = false;
	}
	arm_conn_timer(c, false, 0);
	struct timeval idle = tv_ms(net->o.idle_timeout_ms);
	bufferevent_set_timeouts(c->bev, &idle, NULL);
	struct timeval ka = tv_ms(net->o.keepalive_ms);
	event_add(p->keepalive, &ka);
	char hex[17];
	key_hex(hex, net->o.keys[c->peer]);
	weft_info("net.connected", "peer=%d addr=%s key=%s dir=%s", c->peer, c->addr, hex, c->outgoing ? "out" : "in");
	send_ping(net, p);
	peer_flush(net, p);
	return true;
}

/* libevent 2.1 reads at most 4 KiB per readable event, which makes a
 * 64 KiB record cost 16 trips through epoll.  Drain the socket ourselves in
 * large reads into the same input buffer.  Returns false after closing c
 * (end of stream or an error). */
static bool drain_socket(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	size_t total = 0;
	evbuffer_unfreeze(in, 0); /* a bufferevent freezes the end of its input */
	while (total < SOCKET_READ_BUDGET) {
		struct evbuffer_iovec v[2];
		int nv = evbuffer_reserve_space(in, SOCKET_READ_CHUNK, v, 2);
		if (nv <= 0)
			break;
		struct iovec iov[2];
		for (int i = 0; i < nv; i++)
			iov[i] = (struct iovec){v[i].iov_base, v[i].iov_len};
		ssize_t got = readv(fd, iov, nv);
		if (got <= 0) {
			evbuffer_commit_space(in, v, 0);
			evbuffer_freeze(in, 0);
			if (got == 0) {
				conn_close(c, "closed by peer", false);
				return false;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return true;
			char why[128];
			snprintf(why, sizeof(why), "socket error: %s", strerror(errno));
			conn_close(c, why, false);
			return false;
		}
		size_t left = (size_t)got;
		for (int i = 0; i < nv; i++) {
			size_t used = left < v[i].iov_len ? left : v[i].iov_len;
			v[i].iov_len = used;
			left -= used;
		}
		evbuffer_commit_space(in, v, nv);
		total += (size_t)got;
		if ((size_t)got < SOCKET_READ_CHUNK)
			break; /* the socket is (almost surely) empty */
	}
	evbuffer_freeze(in, 0);
	return true;
}

static void on_conn_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct weft_net *net = c->net;
	struct evbuffer *in = bufferevent_get_input(bev);
	bool progressed = false; /* a whole record was consumed in this call */
	if (c->established && !drain_socket(c))
		return;
	for (;;) {
		size_t avail = evbuffer_get_length(in);
		if (avail == 0)
			break;
		if (!c->established) {
			size_t look = avail < WEFT_SC_HEADER + WEFT_SC_MAX_HANDSHAKE + 1
					      ? avail
					      : WEFT_SC_HEADER + WEFT_SC_MAX_HANDSHAKE + 1;
			const uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)look);
			size_t consumed = 0;
			weft_mpw_reset(&net->rec);
			int rc = weft_sc_handshake(c->sc, data, look, &consumed, &net->rec);
			if (rc < 0) {
				char hex[17], why[96];
				key_hex(hex, weft_sc_peer_pk(c->sc));
				snprintf(why, sizeof(why), "handshake failed: %s", weft_strerror(rc));
				net->refused++;
				weft_log_limited(&net->refused_log, WEFT_LOG_WARN, "net.refused",
						 "addr=%s key=%s reason=\"%s\"", c->addr, hex,
						     rc == WEFT_EPERM ? "key not in the committee (or not the expected one)"
								      : weft_strerror(rc));
				conn_close(c, why, c->peer >= 0);
				return;
			}
			evbuffer_drain(in, consumed);
			if (c->peer >= 0)
				net->peers[c->peer].st.bytes_in += consumed;
			if (net->rec.len)
				bufferevent_write(bev, net->rec.buf, net->rec.len);
			if (rc == 1) {
				if (!conn_established(c))
					return; /* lost the tie-break: closed */
				continue;
			}
			if (consumed == 0)
				break;
			continue;
		}
		size_t body;
		int rc = weft_sc_record_len(evbuffer_pullup(in, avail < 4 ? (ev_ssize_t)avail : 4), avail,
					    net->max_body, &body);
		if (rc == WEFT_EAGAIN)
			break;
		if (rc != 0) {
			conn_close(c, "record over net.max_frame", true);
			return;
		}
		if (avail < WEFT_SC_HEADER + body)
			break;
		const uint8_t *data = evbuffer_pullup(in, (ev_ssize_t)(WEFT_SC_HEADER + body));
		size_t plen;
		if (weft_sc_open(c->sc, data, WEFT_SC_HEADER + body, net->plain, &plen) != 0) {
			conn_close(c, "record failed authentication (tampered, replayed or reordered)", true);
			return;
		}
		evbuffer_drain(in, WEFT_SC_HEADER + body);
		net->peers[c->peer].st.bytes_in += WEFT_SC_HEADER + body;
		progressed = true;
		if (handle_frames(c, net->plain, plen) != 0)
			return;
	}
	/* A record left half-sent must complete within the timeout: the clock
	 * starts with each new partial record, so a busy link whose reads end
	 * mid-record is never cut, while a trickling peer is. */
	if (c->established) {
		bool partial = evbuffer_get_length(in) > 0;
		if (partial && progressed)
			arm_conn_timer(c, false, 0);
		arm_conn_timer(c, partial, net->o.idle_timeout_ms);
	}
}

static void on_conn_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	if (c->established && c->peer >= 0 && c->net->peers[c->peer].active == c)
		peer_flush(c->net, &c->net->peers[c->peer]);
}

static void on_conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	if (what & BEV_EVENT_CONNECTED) {
		int one = 1;
		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		weft_mpw_reset(&c->net->rec);
		weft_sc_start(c->sc, &c->net->rec);
		bufferevent_write(bev, c->net->rec.buf, c->net->rec.len);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		conn_close(c, "silent peer (idle timeout)", true);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		conn_close(c, "closed by peer", false);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		char why[128];
		snprintf(why, sizeof(why), "socket error: %s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		conn_close(c, why, false);
	}
}

static void on_conn_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	c->timer_armed = false;
	conn_close(c, c->established ? "record left incomplete (slow or trickling peer)" : "handshake timeout", true);
}

static struct conn *conn_new(struct weft_net *net, evutil_socket_t fd, bool outgoing, int peer, const char *addr)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (c == NULL)
		abort();
	c->net = net;
	c->outgoing = outgoing;
	c->peer = peer;
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	c->bev = bufferevent_socket_new(net->o.base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(net->o.base, on_conn_timer, c);
	if (c->bev == NULL || c->timer == NULL)
		abort();
	c->sc = weft_sc_new(outgoing ? WEFT_SC_INITIATOR : WEFT_SC_RESPONDER, net->o.self,
			    outgoing ? net->o.keys[peer] : NULL, peer_check, net);
	bufferevent_setcb(c->bev, on_conn_read, on_conn_write, on_conn_event, c);
	/* Refill before the socket runs dry, and move large chunks per syscall. */
	bufferevent_setwatermark(c->bev, EV_WRITE, SOCKET_OUT_REFILL, 0);
	bufferevent_set_max_single_read(c->bev, SOCKET_IO_CHUNK);
	bufferevent_set_max_single_write(c->bev, SOCKET_IO_CHUNK);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->next = net->conns;
	if (net->conns)
		net->conns->prev = c;
	net->conns = c;
	arm_conn_timer(c, true, net->o.handshake_timeout_ms);
	net->pending++;
	return c;
}

static void conn_free(struct conn *c)
{
	struct weft_net *net = c->net;
	if (!c->established)
		net->pending--;
	if (c->prev)
		c->prev->next = c->next;
	else
		net->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	event_free(c->timer);
	bufferevent_free(c->bev);
	weft_sc_free(c->sc);
	free(c);
}

static void conn_close(struct conn *c, const char *why, bool misbehaved)
{
	struct weft_net *net = c->net;
	struct peer *p = c->peer >= 0 ? &net->peers[c->peer] : NULL;
	bool was_active = p && p->active == c;
	if (p && misbehaved)
		p->st.misbehaviour++;
	if (was_active || misbehaved)
		weft_log_limited(p ? &p->disconnect_log : &net->anon_log, WEFT_LOG_INFO, "net.disconnected",
				 "peer=%d addr=%s reason=\"%s\"", c->peer, c->addr, why);
	else
		weft_debug("net.close", "peer=%d addr=%s reason=\"%s\"", c->peer, c->addr, why);
	if (p) {
		if (was_active) {
			p->active = NULL;
			/* What the socket had not taken yet is lost with the link. */
			event_del(p->keepalive);
		}
		if (p->dialing == c)
			p->dialing = NULL;
	}
	conn_free(c);
	if (p && !peer_linking(p))
		peer_schedule_redial(net, p);
}

/* ---- dialling ---- */

/* The peer's name was looked up (asynchronously: a resolver that does not
 * answer must not stop the event loop): connect to the first address. */
static void on_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
	struct peer *p = arg;
	struct weft_net *net = p->net;
	p->looking_up = false;
	p->lookup = NULL;
	if (result == EVUTIL_EAI_CANCEL)
		return;
	const struct weft_net_peer_addr *a = &net->o.addrs[p->index];
	char addr[300];
	snprintf(addr, sizeof(addr), "%s:%u", a->host, a->port);
	if (result != 0 || res == NULL) {
		weft_warn("net.dial", "peer=%u addr=%s err=\"%s\"", p->index, addr, evutil_gai_strerror(result));
		if (res)
			evutil_freeaddrinfo(res);
		peer_schedule_redial(net, p);
		return;
	}
	if (p->active || p->dialing) {   /* the peer dialled us meanwhile */
		evutil_freeaddrinfo(res);
		return;
	}
	p->st.state = WEFT_NET_CONNECTING;
	struct conn *c = conn_new(net, -1, true, (int)p->index, addr);
	p->dialing = c;
	if (bufferevent_socket_connect(c->bev, res->ai_addr, (int)res->ai_addrlen) != 0)
		conn_close(c, "connect failed", false);
	evutil_freeaddrinfo(res);
}

static void peer_dial(struct weft_net *net, struct peer *p)
{
	const struct weft_net_peer_addr *a = &net->o.addrs[p->index];
	char port[8];
	snprintf(port, sizeof(port), "%u", a->port);
	struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	p->st.state = WEFT_NET_CONNECTING;
	/* A numeric address or a name in the hosts file is answered within the
	 * call: on_resolved has then run already and cleared looking_up. */
	p->looking_up = true;
	struct evdns_getaddrinfo_request *req = evdns_getaddrinfo(net->dns, a->host, port, &hints, on_resolved, p);
	if (p->looking_up)
		p->lookup = req;
}

static void on_redial(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	p->waiting = false;
	if (!peer_linking(p))
		peer_dial(p->net, p);
}

static void peer_schedule_redial(struct weft_net *net, struct peer *p)
{
	if (p->waiting || peer_linking(p))
		return;
	uint64_t b = p->backoff_ms ? p->backoff_ms : net->o.reconnect_min_ms;
	uint64_t delay = b / 2 + weft_rng_below(&net->rng, b / 2 + 1);
	/* The higher-indexed side dials late, so that usually only one side does. */
	if (net->o.self_index > p->index)
		delay = delay * 3 + net->o.reconnect_min_ms;
	p->backoff_ms = (uint32_t)(2 * b > net->o.reconnect_max_ms ? net->o.reconnect_max_ms : 2 * b);
	p->st.state = WEFT_NET_BACKOFF;
	p->waiting = true;
	struct timeval tv = tv_ms(delay);
	evtimer_add(p->redial, &tv);
}

/* ---- listener ---- */

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
	struct weft_net *net = arg;
	char host[INET6_ADDRSTRLEN] = "?", addr[64];
	uint16_t port = 0;
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
	}
	snprintf(addr, sizeof(addr), "%s:%u", host, port);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Unauthenticated connections are capped, so a flood cannot starve peers. */
	if (net->pending >= net->max_pending) {
		net->refused++;
		weft_log_limited(&net->refused_log, WEFT_LOG_WARN, "net.refused",
				 "addr=%s reason=\"too many connections in the handshake (%u)\"", addr, net->pending);
		evutil_closesocket(fd);
		return;
	}
	conn_new(net, fd, false, -1, addr);
}

static void on_listen_resume(evutil_socket_t fd, short what, void *arg)
{
	struct weft_net *net = arg;
	evconnlistener_enable(net->listener);
}

/* accept() failed (out of file descriptors, say): pause the listener for a
 * second instead of spinning on the same error. */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
	struct weft_net *net = arg;
	int e = EVUTIL_SOCKET_ERROR();
	weft_log_ratelimited(10, WEFT_LOG_WARN, "net.accept", "err=\"%s\" action=\"pause the listener for 1 s\"",
			     evutil_socket_error_to_string(e));
	evconnlistener_disable(l);
	struct timeval tv = {1, 0};
	evtimer_add(net->listen_pause, &tv);
}

int weft_net_start(struct weft_net **out, const struct weft_net_opts *opts)
{
	struct weft_net *net = calloc(1, sizeof(*net));
	if (net == NULL)
		abort();
	net->o = *opts;
	weft_log_limit_init(&net->anon_log, 30);
	weft_log_limit_init(&net->refused_log, 10);
	weft_rng_seed(&net->rng, now_us() ^ ((uint64_t)opts->self_index << 32));
	net->max_body = opts->max_frame + FRAME_HEADER + WEFT_SC_TAG;
	if (net->max_body < RECORD_TARGET + FRAME_HEADER + WEFT_SC_TAG)
		net->max_body = RECORD_TARGET + FRAME_HEADER + WEFT_SC_TAG;
	net->plain = malloc(net->max_body);
	net->peers = calloc(opts->n, sizeof(*net->peers));
	net->flush_ev = event_new(opts->base, -1, 0, on_flush, net);
	if (net->plain == NULL || net->peers == NULL || net->flush_ev == NULL)
		abort();
	weft_mpw_init(&net->rec);
	/* resolv.conf's name servers and the hosts file; without a readable
	 * resolv.conf, the hosts file alone. */
	net->dns = evdns_base_new(opts->base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	if (net->dns == NULL) {
		net->dns = evdns_base_new(opts->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (net->dns == NULL)
			abort();
		if (evdns_base_load_hosts(net->dns, NULL) != 0)
			weft_warn("net.dns", "no resolv.conf or hosts file: peers are reachable by address only");
	}
	struct rlimit nofile;
	net->max_pending = 4 * opts->n + 64;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
	    nofile.rlim_cur / 4 < net->max_pending)
		net->max_pending = (unsigned int)(nofile.rlim_cur / 4);
	for (uint32_t i = 0; i < opts->n; i++) {
		struct peer *p = &net->peers[i];
		p->net = net;
		p->index = i;
		weft_log_limit_init(&p->disconnect_log, 60);
		p->backoff_ms = opts->reconnect_min_ms;
		p->queue = evbuffer_new();
		p->redial = evtimer_new(opts->base, on_redial, p);
		p->keepalive = event_new(opts->base, -1, EV_PERSIST, on_keepalive, p);
		if (p->queue == NULL || p->redial == NULL || p->keepalive == NULL)
			abort();
	}

	const char *host = opts->listen_host ? opts->listen_host : opts->addrs[opts->self_index].host;
	uint16_t lport = opts->listen_host ? opts->listen_port : opts->addrs[opts->self_index].port;
	char port[8];
	snprintf(port, sizeof(port), "%u", lport);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
	int gai = getaddrinfo(host, port, &hints, &res);
	if (gai != 0) {
		weft_error("net.listen", "addr=%s:%s err=\"%s\"", host, port, gai_strerror(gai));
		weft_net_stop(net);
		return WEFT_EINVAL;
	}
	net->listener = evconnlistener_new_bind(opts->base, on_accept, net,
						LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
						res->ai_addr, (int)res->ai_addrlen);
	freeaddrinfo(res);
	if (net->listener == NULL) {
		int e = errno;
		weft_error("net.listen", "addr=%s:%s err=\"%s\"", host, port, strerror(e));
		weft_net_stop(net);
		return weft_err_from_errno(e);
	}
	evconnlistener_set_error_cb(net->listener, on_accept_error);
	net->listen_pause = evtimer_new(opts->base, on_listen_resume, net);
	if (net->listen_pause == NULL)
		abort();
	weft_info("net.listen", "addr=%s:%s peers=%u", host, port, opts->n - 1);
	/* Dial everyone: lower-indexed peers at once, the others after the grace delay. */
	for (uint32_t i = 0; i < opts->n; i++) {
		if (i == opts->self_index)
			continue;
		if (opts->self_index < i)
			peer_dial(net, &net->peers[i]);
		else
			peer_schedule_redial(net, &net->peers[i]);
	}
	*out = net;
	return 0;
}

void weft_net_stop(struct weft_net *net)
{
	if (net == NULL)
		return;
	if (net->listener)
		evconnlistener_free(net->listener);
	if (net->listen_pause)
		event_free(net->listen_pause);
	while (net->conns)
		conn_free(net->conns);
	for (uint32_t i = 0; net->peers && i < net->o.n; i++)
		if (net->peers[i].lookup)
			evdns_getaddrinfo_cancel(net->peers[i].lookup);
	if (net->dns)
		evdns_base_free(net->dns, 0);
	while (net->delayed) {
		struct delayed *d = net->delayed;
		net->delayed = d->next;
		event_free(d->ev);
		free(d);
	}
	for (uint32_t i = 0; i < net->o.n; i++) {
		struct peer *p = &net->peers[i];
		if (p->queue)
			evbuffer_free(p->queue);
		if (p->redial)
			event_free(p->redial);
		if (p->keepalive)
			event_free(p->keepalive);
	}
	if (net->flush_ev)
		event_free(net->flush_ev);
	free(net->peers);
	free(net->plain);
	weft_mpw_free(&net->rec);
	free(net);
}

int weft_net_peer_stats(const struct weft_net *net, uint32_t peer, struct weft_net_peer_stats *out)
{
	if (peer >= net->o.n || peer == net->o.self_index)
		return WEFT_EINVAL;
	const struct peer *p = &net->peers[peer];
	*out = p->st;
	out->state = p->active ? WEFT_NET_CONNECTED : p->waiting ? WEFT_NET_BACKOFF : WEFT_NET_CONNECTING;
	out->queued_bytes = peer_queued(p);
	return 0;
}

unsigned int weft_net_connected(const struct weft_net *net)
{
	unsigned int k = 0;
	for (uint32_t i = 0; i < net->o.n; i++)
		k += net->peers[i].active != NULL;
	return k;
}

uint64_t weft_net_refused(const struct weft_net *net)
{
	return net->refused;
}
