/* brb_bracha.c - unit tests of Bracha's broadcast and the BRB core through a
 * recording env: thresholds, votes counted once, equivocating senders,
 * hostile messages rejected (and counted) without a reply, persistence of
 * votes and deliveries across a restart, and catch-up. */
#include <stdlib.h>
#include <string.h>

#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/err.h"
#include "weft/mp.h"

extern const struct weft_proto_ops weft_proto_bracha;

static struct fake_env fe;
static void *state;

static void boot(void)
{
	state = calloc(1, weft_proto_bracha.state_size);
	if (weft_proto_bracha.init(state, &fe.env, NULL, 0) != 0 || weft_proto_bracha.start(state) != 0)
		abort();
}

static void shutdown_node(void)
{
	weft_proto_bracha.destroy(state);
	free(state);
}

/* [1, type, sender, seq, payload] */
static int feed(uint32_t from, uint64_t type, uint32_t sender, uint64_t seq, const char *payload)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 5);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, type);
	weft_mpw_uint(&w, sender);
	weft_mpw_uint(&w, seq);
	weft_mpw_bin(&w, payload, strlen(payload));
	int rc = weft_proto_bracha.on_message(state, from, w.buf, w.len);
	weft_mpw_free(&w);
	return rc;
}

static int feed_raw(uint32_t from, const void *bytes, size_t len)
{
	return weft_proto_bracha.on_message(state, from, bytes, len);
}

/* Our broadcast in flight when we crash, whose SEND reached nobody: after
 * the restart it is reopened and its SEND goes out again (the payload was
 * not kept once, and the DAG above waited for its own vertex forever). */
static void test_own_restart(void)
{
	struct fake_env env;
	fake_env_init(&env, 0, 4);
	void *st = calloc(1, weft_proto_bracha.state_size);
	is_int(weft_proto_bracha.init(st, &env.env, NULL, 0), 0, "own restart: init");
	is_int(weft_proto_bracha.on_request(st, (const uint8_t *)"z", 1, NULL), 0, "own restart: a broadcast");
	weft_proto_bracha.destroy(st);
	memset(st, 0, weft_proto_bracha.state_size);
	fake_env_clear(&env);
	is_int(weft_proto_bracha.init(st, &env.env, NULL, 0), 0, "own restart: init again on the same store");
	weft_proto_bracha.start(st);
	env.now_us += 2000 * 1000;
	weft_proto_bracha.on_timer(st, UINT64_C(1) << 40);
	const struct fake_sent *s = fake_env_last(&env, "bracha.send");
	ok(s && s->to == -1 && s->len > 0 && s->data[s->len - 1] == 'z',
	   "own restart: the broadcast in flight is reopened, its SEND multicast again");
	weft_proto_bracha.destroy(st);
	free(st);
	fake_env_free(&env);
}

int main(void)
{
	weft_crypto_init();
	test_own_restart();
	fake_env_init(&fe, 1, 4); /* we are node 1 of 4, f = 1 */
	boot();

	/* The normal path. */
	is_int(feed(0, 0, 0, 0, "hello"), 0, "SEND from its sender accepted");
	is_int((long long)fake_env_count(&fe, "bracha.echo"), 1, "first SEND: ECHO multicast");
	is_int(feed(0, 0, 0, 0, "other"), 0, "a second, different SEND (equivocation) is ignored");
	is_int((long long)fake_env_count(&fe, "bracha.echo"), 1, "and not echoed");
	is_int(feed(2, 1, 0, 0, "hello"), 0, "ECHO from node 2");
	is_int((long long)fake_env_count(&fe, "bracha.ready"), 0, "2 echoes: no READY yet (quorum 3)");
	is_int(feed(2, 1, 0, 0, "hello"), 0, "the same ECHO again");
	is_int((long long)fake_env_count(&fe, "bracha.ready"), 0, "a repeated vote is counted once");
	is_int(feed(3, 1, 0, 0, "hello"), 0, "ECHO from node 3");
	is_int((long long)fake_env_count(&fe, "bracha.ready"), 1, "ceil((n+f+1)/2) = 3 echoes: READY");
	is_int(feed(0, 2, 0, 0, "hello"), 0, "READY from node 0");
	is_int((long long)fe.ndeliveries, 0, "2 readies: not delivered (needs 2f+1 = 3)");
	is_int(feed(2, 2, 0, 0, "hello"), 0, "READY from node 2");
	ok(fe.ndeliveries == 1 && fe.deliveries[0].origin == 0 && fe.deliveries[0].seq == 0 &&
		   fe.deliveries[0].len == 5 && memcmp(fe.deliveries[0].data, "hello", 5) == 0,
	   "2f+1 readies: delivered (0, 0) = hello");
	is_int(feed(3, 2, 0, 0, "hello"), 0, "a READY after delivery is ignored");
	is_int((long long)fe.ndeliveries, 1, "delivered once");

	/* READY amplification: f+1 = 2 READYs make us READY without echoes. */
	fake_env_clear(&fe);
	feed(2, 2, 3, 0, "amp");
	is_int((long long)fake_env_count(&fe, "bracha.ready"), 0, "one READY: no amplification");
	feed(3, 2, 3, 0, "amp");
	is_int((long long)fake_env_count(&fe, "bracha.ready"), 1, "f+1 READYs: READY");
	feed(0, 2, 3, 0, "amp");
	is_int((long long)fe.ndeliveries, 1, "and 2f+1 (ours included): delivered");

	/* Hostile input: rejected with a negative code and no reply. */
	fake_env_clear(&fe);
	ok(feed(2, 0, 0, 1, "x") < 0, "SEND for node 0 from node 2: rejected (wrong sender)");
	ok(feed(2, 1, 9, 0, "x") < 0, "sender index beyond n: rejected");
	ok(feed(2, 7, 0, 1, "x") < 0, "unknown message type: rejected");
	ok(feed(2, 1, 0, 65, "x") < 0, "seq beyond the window (delivered below 1, window 64): rejected");
	ok(feed_raw(2, "\x95\x02\x01\x00\x01\xc4\x01x", 8) < 0, "version 2: rejected");
	ok(feed_raw(2, "\x94\x01\x01\x00\x01", 5) < 0, "too few fields: rejected");
	ok(feed_raw(2, "\x95\x01\x01\x00\x01\xc6\xff\xff\xff\xff", 10) < 0, "bin header declaring 4 GiB: rejected");
	ok(feed_raw(2, "\x95\x01\x01\x00\x01\xa1x", 7) < 0, "payload as str, not bin: rejected");
	ok(feed_raw(2, "\xc1", 1) < 0, "garbage: rejected");
	ok(feed_raw(2, "", 0) < 0, "empty: rejected");
	is_int((long long)fe.nsent, 0, "no reply to any hostile message");

	/* Persistence: we echoed (2, 5) = "a"; after a restart a different SEND is not echoed. */
	fake_env_clear(&fe);
	feed(2, 0, 2, 5, "a");
	is_int((long long)fake_env_count(&fe, "bracha.echo"), 1, "echo (2, 5) = a");
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	feed(2, 0, 2, 5, "b");
	is_int((long long)fake_env_count(&fe, "bracha.echo"), 0,
	       "after a restart, a SEND contradicting our persisted ECHO is not echoed");
	feed(2, 0, 2, 5, "a");
	is_int((long long)fake_env_count(&fe, "bracha.echo"), 1, "the same SEND is echoed again (idempotent)");
	is_int(feed(0, 2, 0, 0, "hello"), 0, "a READY for an instance delivered before the restart");
	is_int((long long)fe.ndeliveries, 0, "is ignored: the delivery was persisted");

	/* Catch-up: a peer behind us gets DELIVERED; f+1 reports deliver a missed instance. */
	fake_env_clear(&fe);
	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_mpw_array(&w, 5);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 16);
	weft_mpw_uint(&w, 2);
	weft_mpw_uint(&w, 0);
	weft_mpw_array(&w, 4);
	for (int i = 0; i < 4; i++) { /* per sender [low, delivered bitmap of the window] */
		weft_mpw_array(&w, 2);
		weft_mpw_uint(&w, 0);
		weft_mpw_bin(&w, "\0\0\0\0\0\0\0\0", 8);
	}
	fe.now_us += 1000000; /* our delivery is old enough not to be merely in flight */
	is_int(feed_raw(2, w.buf, w.len), 0, "STATUS from node 2, behind on sender 0");
	const struct fake_sent *s = fake_env_last(&fe, "brb.delivered");
	ok(s && s->to == 2, "we offer node 2 what we delivered from sender 0");
	s = fake_env_last(&fe, "bracha.ready");
	ok(s && s->to == 2, "and repeat our READY to it (it may have lost the votes)");
	weft_mpw_reset(&w);
	weft_mpw_array(&w, 6);
	weft_mpw_uint(&w, 1);
	weft_mpw_uint(&w, 17);
	weft_mpw_uint(&w, 3);
	weft_mpw_uint(&w, 1);
	weft_mpw_bool(&w, false);
	weft_mpw_bin(&w, "missed", 6);
	feed_raw(0, w.buf, w.len);
	is_int((long long)fe.ndeliveries, 0, "one DELIVERED report: not enough");
	feed_raw(0, w.buf, w.len);
	is_int((long long)fe.ndeliveries, 0, "the same peer twice: counted once");
	feed_raw(2, w.buf, w.len);
	ok(fe.ndeliveries == 1 && fe.deliveries[0].origin == 3 && fe.deliveries[0].seq == 1 &&
		   memcmp(fe.deliveries[0].data, "missed", 6) == 0,
	   "f+1 matching reports: delivered (3, 1) by catch-up");
	weft_mpw_free(&w);

	/* Broadcasting ourselves. */
	fake_env_clear(&fe);
	struct weft_mpw reply;
	weft_mpw_init(&reply);
	is_int(weft_proto_bracha.on_request(state, (const uint8_t *)"mine", 4, &reply), 0, "broadcast accepted");
	ok(fake_env_count(&fe, "bracha.send") == 1 && fake_env_count(&fe, "bracha.echo") == 1,
	   "our broadcast: SEND and our own ECHO multicast");
	weft_mpw_free(&reply);
	uint8_t *big = calloc(1, (4 << 20) + 1);
	is_int(weft_proto_bracha.on_request(state, big, (4 << 20) + 1, NULL), WEFT_ETOOBIG,
	       "a payload over max_payload is refused");
	free(big);

	shutdown_node();
	fake_env_free(&fe);
	return done_testing();
}
