/* brb_amortized.c - unit tests of the amortized BRB (protocols/brb/amortized.c)
 * through a recording env: the echo on PROPOSE (sent at the end-of-instant
 * tick), a READY riding on the next instance's VOTE, the standalone flush
 * VOTE, optimistic delivery on n echoes, fallback delivery on 2f+1 READYs,
 * pulling a missing payload (a wrong PAYLOAD rejected, the right one
 * delivered), serving pulls with a rate limit, replaying votes of
 * delivered instances to a peer whose STATUS lags, persistence across a
 * restart, resends, and hostile input rejected and counted without a
 * reply. */
#include <stdlib.h>
#include <string.h>

#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/mp.h"

extern const struct weft_proto_ops weft_proto_amortized;
static const struct weft_proto_ops *P = &weft_proto_amortized;

#define TIMER_CORE (UINT64_C(1) << 40)
#define TIMER_PULL (UINT64_C(1) << 32)
#define TIMER_TICK (UINT64_C(1) << 33)
#define NIL (-1)

static struct fake_env fe;
static void *state;

static void boot(void)
{
	state = calloc(1, P->state_size);
	if (P->init(state, &fe.env, NULL, 0) != 0 || P->start(state) != 0)
		abort();
}

static void shutdown_node(void)
{
	P->destroy(state);
	free(state);
}

static void digest_of(uint8_t d[WEFT_DIGEST_LEN], const char *s)
{
	weft_hash(d, s, strlen(s));
}

static int send_bytes(uint32_t from, const struct weft_mpw *w)
{
	return P->on_message(state, from, w->buf, w->len);
}

static void header(struct weft_mpw *w, uint32_t count, uint64_t type, uint32_t sender, uint64_t seq)
{
	weft_mpw_reset(w);
	weft_mpw_array(w, count);
	weft_mpw_uint(w, 1);
	weft_mpw_uint(w, type);
	weft_mpw_uint(w, sender);
	weft_mpw_uint(w, seq);
}

/* PROPOSE (type 0) or PAYLOAD (type 3): [1, type, sender, seq, payload] */
static int feed_data(uint32_t from, uint64_t type, uint32_t sender, uint64_t seq, const char *payload)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	header(&w, 5, type, sender, seq);
	weft_mpw_bin(&w, payload, strlen(payload));
	int rc = send_bytes(from, &w);
	weft_mpw_free(&w);
	return rc;
}

/* VOTE [1, 1, sender, seq, echo, ready_for, ready_digest]: digests of the
 * given strings, NULL / NIL for nil. */
static int feed_vote(uint32_t from, uint32_t sender, uint64_t seq, const char *echo, int64_t ready_for,
		     const char *ready)
{
	struct weft_mpw w;
	uint8_t d[WEFT_DIGEST_LEN];
	weft_mpw_init(&w);
	header(&w, 7, 1, sender, seq);
	if (echo) {
		digest_of(d, echo);
		weft_mpw_bin(&w, d, sizeof(d));
	} else {
		weft_mpw_nil(&w);
	}
	if (ready_for == NIL)
		weft_mpw_nil(&w);
	else
		weft_mpw_uint(&w, (uint64_t)ready_for);
	if (ready) {
		digest_of(d, ready);
		weft_mpw_bin(&w, d, sizeof(d));
	} else {
		weft_mpw_nil(&w);
	}
	int rc = send_bytes(from, &w);
	weft_mpw_free(&w);
	return rc;
}

static int feed_pull(uint32_t from, uint32_t sender, uint64_t seq, const char *of)
{
	struct weft_mpw w;
	uint8_t d[WEFT_DIGEST_LEN];
	weft_mpw_init(&w);
	header(&w, 5, 2, sender, seq);
	digest_of(d, of);
	weft_mpw_bin(&w, d, sizeof(d));
	int rc = send_bytes(from, &w);
	weft_mpw_free(&w);
	return rc;
}

static int feed_raw(uint32_t from, const void *bytes, size_t len)
{
	return P->on_message(state, from, bytes, len);
}

/* A decoded VOTE we sent. */
struct vote {
	uint32_t sender;
	uint64_t seq;
	bool has_echo, has_ready;
	uint8_t echo[WEFT_DIGEST_LEN], ready[WEFT_DIGEST_LEN];
	uint64_t ready_for;
};

static bool decode_vote(const struct fake_sent *s, struct vote *v)
{
	struct weft_mp_reader r;
	uint32_t count;
	uint64_t version, type;
	memset(v, 0, sizeof(*v));
	if (s == NULL)
		return false;
	weft_mp_reader_init(&r, s->data, s->len);
	if (weft_mp_read_array(&r, &count) || count != 7 || weft_mp_read_uint(&r, &version) ||
	    weft_mp_read_uint(&r, &type) || type != 1 || weft_mp_read_u32(&r, &v->sender) ||
	    weft_mp_read_uint(&r, &v->seq))
		return false;
	if (weft_mp_peek_nil(&r))
		weft_mp_read_nil(&r);
	else
		v->has_echo = weft_mp_read_bin_fixed(&r, v->echo, WEFT_DIGEST_LEN) == 0;
	if (weft_mp_peek_nil(&r)) {
		weft_mp_read_nil(&r);
		weft_mp_read_nil(&r);
	} else {
		v->has_ready = weft_mp_read_uint(&r, &v->ready_for) == 0 &&
			       weft_mp_read_bin_fixed(&r, v->ready, WEFT_DIGEST_LEN) == 0;
	}
	return r.err == 0 && weft_mp_remaining(&r) == 0;
}

static bool digest_is(const uint8_t *d, const char *s)
{
	uint8_t want[WEFT_DIGEST_LEN];
	digest_of(want, s);
	return memcmp(d, want, WEFT_DIGEST_LEN) == 0;
}

/* The bin field (index 4) of the last message of a kind. */
static bool last_bin_is(const char *kind, const char *payload, int64_t to)
{
	const struct fake_sent *s = fake_env_last(&fe, kind);
	struct weft_mp_reader r;
	uint32_t count, len;
	uint64_t u;
	const uint8_t *b;
	if (s == NULL || s->to != to)
		return false;
	weft_mp_reader_init(&r, s->data, s->len);
	if (weft_mp_read_array(&r, &count) || count != 5)
		return false;
	for (int k = 0; k < 4; k++)
		weft_mp_read_uint(&r, &u);
	return weft_mp_read_bin(&r, &b, &len) == 0 && len == strlen(payload) && memcmp(b, payload, len) == 0;
}

static bool timer_armed(uint64_t id)
{
	for (size_t k = 0; k < fe.ntimers; k++)
		if (fe.timers[k] == id)
			return true;
	return false;
}

/* Fires the zero-delay vote tick of a stream, as the host would right after
 * the current input; false when it was not armed. */
static bool tick(uint32_t sender)
{
	for (size_t k = 0; k < fe.ntimers; k++) {
		if (fe.timers[k] == TIMER_TICK + sender) {
			fe.timers[k] = fe.timers[--fe.ntimers];
			P->on_timer(state, TIMER_TICK + sender);
			return true;
		}
	}
	return false;
}

/* A counter from the info map. */
static uint64_t info(const char *key)
{
	struct weft_mpw w;
	struct weft_mp_reader r;
	uint32_t count, klen;
	const char *k;
	uint64_t v = UINT64_MAX;
	weft_mpw_init(&w);
	P->info(state, &w);
	weft_mp_reader_init(&r, w.buf, w.len);
	weft_mp_read_map(&r, &count);
	for (uint32_t e = 0; e < count && !r.err; e++) {
		weft_mp_read_str(&r, &k, &klen);
		if (klen == strlen(key) && memcmp(k, key, klen) == 0 && weft_mp_peek_type(&r) == WEFT_MP_UINT)
			weft_mp_read_uint(&r, &v);
		else
			weft_mp_skip(&r);
	}
	weft_mpw_free(&w);
	return v;
}

/* STATUS [1, 16, from, 0, [[watermark, bitmap above it] per sender]]:
 * nothing delivered, except (0, 1) when has01. */
static int feed_status_bits(uint32_t from, bool has01)
{
	struct weft_mpw w;
	uint8_t bits[8] = {0};
	weft_mpw_init(&w);
	header(&w, 5, 16, from, 0);
	weft_mpw_array(&w, 4);
	for (int k = 0; k < 4; k++) {
		bits[0] = k == 0 && has01 ? 2 : 0;
		weft_mpw_array(&w, 2);
		weft_mpw_uint(&w, 0);
		weft_mpw_bin(&w, bits, sizeof(bits));
	}
	int rc = send_bytes(from, &w);
	weft_mpw_free(&w);
	return rc;
}

/* Whether we sent `to` a VOTE for (sender, seq) echoing digest(echo), or
 * (echo NULL) a standalone READY for (sender, seq) naming digest(ready). */
static int feed_status(uint32_t from)
{
	return feed_status_bits(from, false);
}

static bool sent_vote_to(int64_t to, uint32_t sender, uint64_t seq, const char *echo, const char *ready)
{
	struct vote v;
	for (size_t k = 0; k < fe.nsent; k++) {
		if (fe.sent[k].to != to || strcmp(fe.sent[k].kind, "amortized.vote") != 0 ||
		    !decode_vote(&fe.sent[k], &v) || v.sender != sender)
			continue;
		if (echo && v.seq == seq && v.has_echo && digest_is(v.echo, echo))
			return true;
		if (!echo && v.has_ready && v.ready_for == seq && digest_is(v.ready, ready))
			return true;
	}
	return false;
}

static bool delivered(size_t k, uint32_t origin, uint64_t seq, const char *data)
{
	return fe.ndeliveries > k && fe.deliveries[k].origin == origin && fe.deliveries[k].seq == seq &&
	       fe.deliveries[k].len == strlen(data) && memcmp(fe.deliveries[k].data, data, strlen(data)) == 0;
}

int main(void)
{
	struct vote v;
	weft_crypto_init();
	fake_env_init(&fe, 1, 4); /* we are node 1 of 4, f = 1: echo quorum 3, 2f+1 = 3 */
	boot();

	/* Echo on PROPOSE. */
	is_int(feed_data(0, 0, 0, 0, "hello"), 0, "PROPOSE from its sender accepted");
	is_int((long long)fake_env_count(&fe, "amortized.vote"), 0, "the VOTE waits for the end of the instant");
	ok(tick(0), "a zero-delay vote tick is armed for stream 0");
	is_int((long long)fake_env_count(&fe, "amortized.vote"), 1, "at the tick: one VOTE multicast");
	ok(decode_vote(fake_env_last(&fe, "amortized.vote"), &v) && v.sender == 0 && v.seq == 0 && v.has_echo &&
		   digest_is(v.echo, "hello") && !v.has_ready,
	   "the VOTE echoes digest(hello) and carries no READY (nothing earlier)");
	ok(fake_env_last(&fe, "amortized.vote")->to == -1, "VOTEs are multicast");
	ok(feed_data(2, 0, 0, 0, "hello") < 0, "PROPOSE for sender 0 from node 2: rejected");
	is_int(feed_data(0, 0, 0, 0, "other"), 0, "a second, different PROPOSE is ignored");
	ok(!tick(0) && fake_env_count(&fe, "amortized.vote") == 1, "and not echoed");

	/* Optimistic path: all n echoes deliver at once. */
	feed_vote(0, 0, 0, "hello", NIL, NULL);
	feed_vote(2, 0, 0, "hello", NIL, NULL);
	is_int((long long)fe.ndeliveries, 0, "3 echoes: READY decided, not delivered");
	is_int((long long)fake_env_count(&fe, "amortized.vote"), 1, "the READY waits for a ride (no message yet)");
	ok(timer_armed(0), "the flush timer of stream 0 is armed");
	feed_vote(2, 0, 0, "hello", NIL, NULL);
	is_int((long long)fe.ndeliveries, 0, "a repeated echo is counted once");
	feed_vote(3, 0, 0, "hello", NIL, NULL);
	ok(delivered(0, 0, 0, "hello"), "n = 4 echoes of one digest: delivered (0, 0) = hello");
	is_int((long long)info("optimistic"), 1, "counted as optimistic");
	is_int((long long)info("fallback"), 0, "no fallback delivery");

	/* The READY for 0 rides on the VOTE for 1. */
	is_int(feed_data(0, 0, 0, 1, "second"), 0, "PROPOSE (0, 1)");
	tick(0);
	ok(decode_vote(fake_env_last(&fe, "amortized.vote"), &v) && v.seq == 1 && v.has_echo &&
		   digest_is(v.echo, "second") && v.has_ready && v.ready_for == 0 && digest_is(v.ready, "hello"),
	   "VOTE(1) echoes digest(second) and carries READY(0, digest(hello))");
	ok(!timer_armed(0), "nothing left to flush: the flush timer is cancelled");
	is_int((long long)info("piggybacked"), 1, "counted as piggybacked");

	/* Fallback path and the standalone flush VOTE. */
	fake_env_clear(&fe);
	feed_vote(2, 0, 1, "second", NIL, NULL);
	feed_vote(3, 0, 1, "second", NIL, NULL);
	is_int((long long)fe.ndeliveries, 0, "3 of 4 echoes: READY, no optimistic delivery");
	ok(timer_armed(0), "flush timer armed for the READY of (0, 1)");
	is_int((long long)fe.nsent, 0, "no message yet");
	P->on_timer(state, 0);
	ok(decode_vote(fake_env_last(&fe, "amortized.vote"), &v) && v.seq == 2 && !v.has_echo && v.has_ready &&
		   v.ready_for == 1 && digest_is(v.ready, "second"),
	   "flush: standalone VOTE [seq 2, nil, 1, digest(second)]");
	is_int((long long)info("standalone"), 1, "counted as standalone");
	feed_vote(2, 0, 2, NULL, 1, "second");
	is_int((long long)fe.ndeliveries, 0, "2 READYs (ours included): not yet");
	feed_vote(2, 0, 2, NULL, 1, "second");
	is_int((long long)fe.ndeliveries, 0, "a repeated READY is counted once");
	feed_vote(3, 0, 2, NULL, 1, "second");
	ok(delivered(0, 0, 1, "second"), "2f+1 READYs: delivered (0, 1) = second");
	is_int((long long)info("fallback"), 1, "counted as fallback");

	/* Input of one instant: PROPOSE(3) first, then the echo completing the
	 * quorum of 2; the READY of 2 still rides on VOTE(3). */
	fake_env_clear(&fe);
	feed_data(0, 0, 0, 2, "third");
	tick(0);
	feed_data(0, 0, 0, 3, "fourth");
	feed_vote(2, 0, 2, "third", NIL, NULL);
	feed_vote(3, 0, 2, "third", NIL, NULL);
	tick(0);
	ok(decode_vote(fake_env_last(&fe, "amortized.vote"), &v) && v.seq == 3 && digest_is(v.echo, "fourth") &&
		   v.has_ready && v.ready_for == 2 && digest_is(v.ready, "third"),
	   "same instant: VOTE(3) leaves at the tick carrying READY(2)");
	is_int((long long)fake_env_count(&fe, "amortized.vote"), 2, "two VOTEs, no standalone");

	/* Pull: (2, 0) = "pulled" reaches us only as votes. */
	fake_env_clear(&fe);
	feed_vote(0, 2, 0, "pulled", NIL, NULL);
	feed_vote(3, 2, 0, "pulled", NIL, NULL);
	feed_vote(0, 2, 1, NULL, 0, "pulled");
	is_int((long long)fake_env_count(&fe, "amortized.pull"), 0, "one READY: no target yet");
	feed_vote(3, 2, 1, NULL, 0, "pulled");
	const struct fake_sent *s = fake_env_last(&fe, "amortized.pull");
	ok(s && (s->to == 0 || s->to == 3), "f+1 READYs make us READY, 2f+1 without the payload: PULL to an echoer");
	int64_t first = s ? s->to : -1;
	is_int((long long)fake_env_count(&fe, "amortized.pull"), 1, "one PULL at a time");
	uint64_t pull_timer = TIMER_PULL + 2 * 64 + 0;
	ok(timer_armed(pull_timer), "the pull timer of (2, 0) is armed");
	fe.now_us += 10000;
	P->on_timer(state, pull_timer);
	is_int((long long)fake_env_count(&fe, "amortized.pull"), 1, "a pull timer firing before pull_ms only re-arms");
	fe.now_us += 40000;
	P->on_timer(state, pull_timer);
	s = fake_env_last(&fe, "amortized.pull");
	ok(s && (s->to == 0 || s->to == 3) && s->to != first, "pull_ms later: PULL to the other echoer");
	is_int((long long)info("pulls"), 2, "two pulls counted");
	ok(feed_data((uint32_t)first, 3, 2, 0, "wrong") < 0, "a PAYLOAD whose digest is not the target: rejected");
	is_int((long long)fe.ndeliveries, 0, "and not delivered");
	is_int(feed_data((uint32_t)first, 3, 2, 0, "pulled"), 0, "the right PAYLOAD accepted");
	ok(delivered(0, 2, 0, "pulled"), "delivered (2, 0) = pulled");
	ok(!timer_armed(pull_timer), "the pull timer is cancelled at delivery");
	is_int(feed_data(3, 3, 2, 0, "pulled"), 0, "a late PAYLOAD for a delivered instance is ignored");
	is_int((long long)fe.ndeliveries, 1, "delivered once");
	is_int(feed_data(0, 3, 3, 5, "unasked"), 0, "a PAYLOAD for an instance we never opened is ignored");

	/* Serving pulls. */
	fake_env_clear(&fe);
	feed_data(3, 0, 3, 0, "served");
	is_int(feed_pull(2, 3, 0, "served"), 0, "PULL for (3, 0) from node 2");
	ok(last_bin_is("amortized.payload", "served", 2), "answered with PAYLOAD = served to node 2");
	feed_pull(2, 3, 0, "served");
	is_int((long long)fake_env_count(&fe, "amortized.payload"), 1,
	       "the same PULL at once: not answered (rate limit)");
	feed_pull(0, 3, 0, "served");
	is_int((long long)fake_env_count(&fe, "amortized.payload"), 2, "another requester is answered");
	fe.now_us += 50000;
	feed_pull(2, 3, 0, "served");
	is_int((long long)fake_env_count(&fe, "amortized.payload"), 3, "node 2 again after pull_ms: answered");
	feed_pull(2, 3, 0, "something else");
	is_int((long long)fake_env_count(&fe, "amortized.payload"), 3, "PULL for a digest we do not hold: silence");
	feed_pull(3, 0, 0, "hello");
	ok(last_bin_is("amortized.payload", "hello", 3),
	   "PULL for a delivered instance: served from the retained payload");

	/* Replaying our votes of delivered instances to a peer behind us. */
	fake_env_clear(&fe);
	feed_status(3);
	is_int((long long)fake_env_count(&fe, "amortized.vote"), 0,
	       "STATUS right after our deliveries: no replay (the votes may be in flight)");
	fe.now_us += 600000;
	is_int(feed_status(2), 0, "resend_ms later: STATUS from node 2, behind on every sender");
	ok(sent_vote_to(2, 0, 0, "hello", NULL) && sent_vote_to(2, 0, 0, NULL, "hello"),
	   "our ECHO and READY of delivered (0, 0) replayed to node 2");
	ok(sent_vote_to(2, 0, 1, "second", NULL) && sent_vote_to(2, 0, 1, NULL, "second"),
	   "and those of (0, 1)");
	ok(sent_vote_to(2, 2, 0, NULL, "pulled") && !sent_vote_to(2, 2, 0, "pulled", NULL),
	   "(2, 0): only our READY (we never echoed it)");
	ok(fake_env_last(&fe, "brb.delivered") != NULL, "the core offers DELIVERED as well");
	size_t before = fake_env_count(&fe, "amortized.vote");
	feed_status(2);
	is_int((long long)(fake_env_count(&fe, "amortized.vote") - before), 0, "a second STATUS at once: no replay");
	fake_env_clear(&fe);
	feed_status_bits(0, true);
	ok(sent_vote_to(0, 0, 0, "hello", NULL) && !sent_vote_to(0, 0, 1, "second", NULL) &&
		   !sent_vote_to(0, 0, 1, NULL, "second"),
	   "a peer whose bitmap shows (0, 1) delivered gets only the votes of (0, 0)");

	/* A READY we decided on (3, 1), and our own broadcast, then a restart. */
	feed_vote(0, 3, 2, NULL, 1, "r1");
	feed_vote(2, 3, 2, NULL, 1, "r1");
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	fake_env_clear(&fe);
	is_int(P->on_request(state, (const uint8_t *)"mine", 4, &reply), 0, "broadcast accepted");
	ok(last_bin_is("amortized.propose", "mine", -1), "our broadcast: PROPOSE multicast");
	tick(1);
	ok(decode_vote(fake_env_last(&fe, "amortized.vote"), &v) && v.sender == 1 && v.seq == 0 &&
		   digest_is(v.echo, "mine"),
	   "and our own VOTE echoing it");
	weft_mpw_free(&reply);
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	is_int(feed_data(3, 0, 3, 0, "evil"), 0, "after a restart: a PROPOSE contradicting our persisted echo");
	is_int((long long)fake_env_count(&fe, "amortized.vote"), 0, "is not echoed");
	feed_vote(0, 3, 2, NULL, 1, "r2");
	feed_vote(3, 3, 2, NULL, 1, "r2");
	ok(timer_armed(3), "the persisted READY of (3, 1) is queued again");
	P->on_timer(state, 3);
	is_int((long long)fake_env_count(&fe, "amortized.vote"), 1, "f+1 READYs for another digest: no second READY");
	ok(decode_vote(fake_env_last(&fe, "amortized.vote"), &v) && v.ready_for == 1 && digest_is(v.ready, "r1"),
	   "the READY announced after the restart is the persisted one (r1)");
	feed_vote(0, 0, 0, "hello", NIL, NULL);
	feed_vote(2, 0, 2, NULL, 1, "second");
	is_int((long long)fe.ndeliveries, 0, "votes for instances delivered before the restart are ignored");

	/* Resend: our proposal survived the restart; votes are re-sent. */
	fake_env_clear(&fe);
	feed_data(3, 0, 3, 0, "served");
	fe.now_us += 600000;
	P->on_timer(state, TIMER_CORE);
	ok(last_bin_is("amortized.propose", "mine", -1), "resend: our proposal re-multicast after the restart");
	ok(fake_env_count(&fe, "amortized.vote") >= 3, "resend: our VOTEs re-multicast");
	fake_env_clear(&fe);
	feed_pull(0, 1, 0, "mine");
	ok(last_bin_is("amortized.payload", "mine", 0), "and we can serve it");
	feed_status(3);
	ok(sent_vote_to(3, 0, 0, "hello", NULL) && sent_vote_to(3, 0, 0, NULL, "hello"),
	   "after the restart, votes of delivered instances are still replayed (persisted)");

	/* Hostile input: rejected, counted, never answered. */
	fake_env_clear(&fe);
	uint64_t rejected = info("rejected");
	struct weft_mpw w;
	uint8_t d[WEFT_DIGEST_LEN] = {0};
	weft_mpw_init(&w);
	int bad = 0;
	ok(feed_vote(2, 0, 3, "x", 3, "y") < 0, "VOTE with ready_for = seq: rejected"), bad++;
	ok(feed_vote(2, 0, 3, "x", 5, "y") < 0, "VOTE with ready_for > seq: rejected"), bad++;
	ok(feed_vote(2, 0, 5, NULL, 3, "y") < 0, "standalone VOTE with seq != ready_for + 1: rejected"), bad++;
	ok(feed_vote(2, 0, 3, "x", 2, NULL) < 0, "ready_for without a digest: rejected"), bad++;
	ok(feed_vote(2, 0, 3, "x", NIL, "y") < 0, "a ready digest without ready_for: rejected"), bad++;
	ok(feed_vote(2, 0, 3, NULL, NIL, NULL) < 0, "an empty VOTE: rejected"), bad++;
	ok(feed_vote(2, 0, 100, "x", NIL, NULL) < 0, "VOTE beyond the window: rejected"), bad++;
	ok(feed_vote(2, 2, 66, NULL, 65, "y") < 0, "READY for an instance beyond the window: rejected"), bad++;
	header(&w, 7, 1, 0, 3);
	weft_mpw_bin(&w, d, 31);
	weft_mpw_nil(&w);
	weft_mpw_nil(&w);
	ok(send_bytes(2, &w) < 0, "echo digest of 31 bytes: rejected"), bad++;
	header(&w, 7, 1, 0, 3);
	weft_mpw_strn(&w, (const char *)d, 32);
	weft_mpw_nil(&w);
	weft_mpw_nil(&w);
	ok(send_bytes(2, &w) < 0, "echo digest as str: rejected"), bad++;
	header(&w, 7, 1, 0, 3);
	weft_mpw_bin(&w, d, 32);
	weft_mpw_int(&w, -1);
	weft_mpw_bin(&w, d, 32);
	ok(send_bytes(2, &w) < 0, "negative ready_for: rejected"), bad++;
	header(&w, 6, 1, 0, 3);
	weft_mpw_bin(&w, d, 32);
	weft_mpw_nil(&w);
	ok(send_bytes(2, &w) < 0, "VOTE with 6 fields: rejected"), bad++;
	header(&w, 7, 1, 0, 3);
	weft_mpw_bin(&w, d, 32);
	weft_mpw_nil(&w);
	weft_mpw_nil(&w);
	weft_mpw_nil(&w);
	ok(send_bytes(2, &w) < 0, "trailing bytes after a VOTE: rejected"), bad++;
	header(&w, 5, 2, 0, 3);
	weft_mpw_bin(&w, d, 31);
	ok(send_bytes(2, &w) < 0, "PULL with a 31-byte digest: rejected"), bad++;
	header(&w, 5, 2, 0, 300);
	weft_mpw_bin(&w, d, 32);
	ok(send_bytes(2, &w) < 0, "PULL beyond the window: rejected"), bad++;
	uint8_t *big = calloc(1, (4 << 20) + 1);
	header(&w, 5, 0, 2, 3);
	weft_mpw_bin(&w, big, (4 << 20) + 1);
	ok(send_bytes(2, &w) < 0, "PROPOSE over max_payload: rejected"), bad++;
	header(&w, 5, 3, 2, 3);
	weft_mpw_bin(&w, big, (4 << 20) + 1);
	ok(send_bytes(0, &w) < 0, "PAYLOAD over max_payload: rejected"), bad++;
	free(big);
	ok(feed_data(2, 9, 2, 3, "x") < 0, "unknown message type: rejected"), bad++;
	ok(feed_data(2, 0, 9, 0, "x") < 0, "sender index beyond n: rejected"), bad++;
	ok(feed_data(2, 0, 2, 200, "x") < 0, "PROPOSE beyond the window: rejected"), bad++;
	ok(feed_raw(2, "\x95\x02\x00\x02\x01\xc4\x01x", 8) < 0, "version 2: rejected"), bad++;
	ok(feed_raw(2, "\x94\x01\x00\x02\x01", 5) < 0, "too few fields: rejected"), bad++;
	ok(feed_raw(2, "\x95\x01\x00\x02\x01\xc6\xff\xff\xff\xff", 10) < 0, "bin header of 4 GiB: rejected"), bad++;
	ok(feed_raw(2, "\x95\x01\x00\x02\x01\xa1x", 7) < 0, "payload as str, not bin: rejected"), bad++;
	ok(feed_raw(2, "\x97\x01\x01\x00\x03\xc0\xc0", 7) < 0, "VOTE cut short: rejected"), bad++;
	ok(feed_raw(2, "\xc1", 1) < 0, "garbage: rejected"), bad++;
	ok(feed_raw(2, "", 0) < 0, "empty: rejected"), bad++;
	weft_mpw_free(&w);
	is_int((long long)(info("rejected") - rejected), bad, "every hostile message counted in rejected");
	is_int((long long)fe.nsent, 0, "no reply to any hostile message");
	is_int((long long)fe.ndeliveries, 0, "and no delivery");

	/* Our own requests. */
	big = calloc(1, (4 << 20) + 1);
	is_int(P->on_request(state, big, (4 << 20) + 1, NULL), WEFT_ETOOBIG, "a payload over max_payload is refused");
	free(big);

	shutdown_node();
	fake_env_free(&fe);
	return done_testing();
}
