/* brb_echo.c - unit tests of the signed echo broadcast (protocols/brb/echo.c)
 * through a recording env: our signed ECHO goes to the sender alone and
 * verifies; as the sender, echoes are verified and counted once until the
 * quorum makes a certificate (FINAL) and we deliver; as a receiver, only a
 * FINAL with a full, valid certificate delivers, also when it comes before
 * the payload; forged, duplicated, short or misdirected input is rejected
 * and counted; our vote survives a restart; hostile encodings are refused. */
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "../lib/fakeenv.h"
#include "../tap.h"
#include "weft/err.h"
#include "weft/mp.h"

extern const struct weft_proto_ops weft_proto_echo;

#define N 4
#define SELF 1
#define QUORUM 3 /* ceil((n + f + 1) / 2) for n = 4, f = 1 */
#define TIMER_CATCHUP (UINT64_C(1) << 40)

static struct fake_env fe;
static void *state;

static void boot(void)
{
	state = calloc(1, weft_proto_echo.state_size);
	if (weft_proto_echo.init(state, &fe.env, NULL, 0) != 0 || weft_proto_echo.start(state) != 0)
		abort();
}

static void shutdown_node(void)
{
	weft_proto_echo.destroy(state);
	free(state);
}

/* The statement an ECHO signs, written out independently of echo.c. */
static void stmt_of(uint8_t out[57], uint32_t sender, uint64_t seq, const uint8_t digest[32])
{
	memcpy(out, "weft-brb-echo", 13);
	for (int k = 0; k < 4; k++)
		out[13 + k] = (uint8_t)(sender >> (24 - 8 * k));
	for (int k = 0; k < 8; k++)
		out[17 + k] = (uint8_t)(seq >> (56 - 8 * k));
	memcpy(out + 25, digest, 32);
}

static void digest_of(uint8_t d[32], const char *payload)
{
	weft_hash(d, payload, strlen(payload));
}

/* Node j's signature over (sender, seq, digest of payload). */
static void sign_as(uint32_t j, uint32_t sender, uint64_t seq, const char *payload, uint8_t sig[64])
{
	uint8_t d[32], st[57];
	digest_of(d, payload);
	stmt_of(st, sender, seq, d);
	weft_sign(fe.ids[j], sig, st, sizeof(st));
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

static int feed_raw(uint32_t from, const void *bytes, size_t len)
{
	return weft_proto_echo.on_message(state, from, bytes, len);
}

static int feed_w(uint32_t from, struct weft_mpw *w)
{
	int rc = feed_raw(from, w->buf, w->len);
	weft_mpw_free(w);
	return rc;
}

static int feed_send(uint32_t from, uint32_t sender, uint64_t seq, const char *payload)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	header(&w, 5, 0, sender, seq);
	weft_mpw_bin(&w, payload, strlen(payload));
	return feed_w(from, &w);
}

static int feed_echo(uint32_t from, uint32_t sender, uint64_t seq, const uint8_t sig[64])
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	header(&w, 5, 1, sender, seq);
	weft_mpw_bin(&w, sig, 64);
	return feed_w(from, &w);
}

/* An ECHO from node j, signed by node `by` over payload. */
static int echo_from(uint32_t j, uint32_t by, uint32_t sender, uint64_t seq, const char *payload)
{
	uint8_t sig[64];
	sign_as(by, sender, seq, payload, sig);
	return feed_echo(j, sender, seq, sig);
}

/* Encodes FINAL(digest of `named`) with k entries: signer[e] signs
 * `signed_payload` (or the forged flag makes entry `forged` carry node
 * forged_by's signature under signer[forged]'s name). */
static void final_msg(struct weft_mpw *w, uint32_t sender, uint64_t seq, const char *named, const char *signed_payload,
		      const uint32_t *signers, uint32_t k, int forged, uint32_t forged_by)
{
	uint8_t d[32];
	digest_of(d, named);
	header(w, 6, 2, sender, seq);
	weft_mpw_bin(w, d, 32);
	weft_mpw_array(w, k);
	for (uint32_t e = 0; e < k; e++) {
		uint8_t sig[64];
		uint32_t by = (int)e == forged ? forged_by : signers[e];
		sign_as(by < N ? by : 0, sender, seq, signed_payload, sig);
		weft_mpw_array(w, 2);
		weft_mpw_uint(w, signers[e]);
		weft_mpw_bin(w, sig, 64);
	}
}

static int feed_final(uint32_t from, uint32_t sender, uint64_t seq, const char *payload, const uint32_t *signers,
		      uint32_t k)
{
	struct weft_mpw w;
	weft_mpw_init(&w);
	final_msg(&w, sender, seq, payload, payload, signers, k, -1, 0);
	return feed_w(from, &w);
}

static bool delivered(size_t idx, uint32_t origin, uint64_t seq, const char *payload)
{
	return fe.ndeliveries > idx && fe.deliveries[idx].origin == origin && fe.deliveries[idx].seq == seq &&
	       !fe.deliveries[idx].invalid && fe.deliveries[idx].len == strlen(payload) &&
	       memcmp(fe.deliveries[idx].data, payload, strlen(payload)) == 0;
}

/* One counter from the protocol's info map. */
static uint64_t info_uint(const char *key)
{
	struct weft_mpw w;
	struct weft_mp_reader r;
	uint32_t pairs;
	uint64_t val = UINT64_MAX;
	weft_mpw_init(&w);
	weft_proto_echo.info(state, &w);
	weft_mp_reader_init(&r, w.buf, w.len);
	if (weft_mp_read_map(&r, &pairs) == 0) {
		for (uint32_t p = 0; p < pairs; p++) {
			const char *k;
			uint32_t klen;
			if (weft_mp_read_str(&r, &k, &klen))
				break;
			if (klen == strlen(key) && memcmp(k, key, klen) == 0 && weft_mp_peek_type(&r) == WEFT_MP_UINT) {
				weft_mp_read_uint(&r, &val);
				break;
			}
			weft_mp_skip(&r);
		}
	}
	weft_mpw_free(&w);
	return val;
}

/* Checks a recorded ECHO: [1, 1, sender, seq, sig], sig by SELF over payload. */
static bool echo_is_valid(const struct fake_sent *s, uint32_t sender, uint64_t seq, const char *payload)
{
	struct weft_mp_reader r;
	uint32_t count, snd;
	uint64_t ver, type, sq;
	uint8_t sig[64], d[32], st[57];
	if (s == NULL)
		return false;
	weft_mp_reader_init(&r, s->data, s->len);
	if (weft_mp_read_array(&r, &count) || count != 5 || weft_mp_read_uint(&r, &ver) || ver != 1 ||
	    weft_mp_read_uint(&r, &type) || type != 1 || weft_mp_read_u32(&r, &snd) || snd != sender ||
	    weft_mp_read_uint(&r, &sq) || sq != seq || weft_mp_read_bin_fixed(&r, sig, 64) || weft_mp_remaining(&r))
		return false;
	digest_of(d, payload);
	stmt_of(st, sender, seq, d);
	return weft_verify(fe.pk[SELF], sig, st, sizeof(st)) == 0;
}

/* Checks a recorded FINAL: digest of payload, >= QUORUM distinct valid signers. */
static bool final_is_valid(const struct fake_sent *s, uint32_t sender, uint64_t seq, const char *payload)
{
	struct weft_mp_reader r;
	uint32_t count, snd, k;
	uint64_t ver, type, sq;
	uint8_t d[32], want[32], st[57];
	bool seen[N] = {false};
	if (s == NULL || s->to != -1)
		return false;
	weft_mp_reader_init(&r, s->data, s->len);
	if (weft_mp_read_array(&r, &count) || count != 6 || weft_mp_read_uint(&r, &ver) || ver != 1 ||
	    weft_mp_read_uint(&r, &type) || type != 2 || weft_mp_read_u32(&r, &snd) || snd != sender ||
	    weft_mp_read_uint(&r, &sq) || sq != seq || weft_mp_read_bin_fixed(&r, d, 32) ||
	    weft_mp_read_array(&r, &k) || k < QUORUM || k > N)
		return false;
	digest_of(want, payload);
	if (memcmp(d, want, 32) != 0)
		return false;
	stmt_of(st, sender, seq, d);
	for (uint32_t e = 0; e < k; e++) {
		uint32_t pair, signer;
		uint8_t sig[64];
		if (weft_mp_read_array(&r, &pair) || pair != 2 || weft_mp_read_u32(&r, &signer) || signer >= N ||
		    seen[signer] || weft_mp_read_bin_fixed(&r, sig, 64) || weft_verify(fe.pk[signer], sig, st, sizeof(st)))
			return false;
		seen[signer] = true;
	}
	return weft_mp_remaining(&r) == 0;
}

static void fire_resend(void)
{
	fe.now_us += 600 * 1000;
	weft_proto_echo.on_timer(state, TIMER_CATCHUP);
}

static void test_receiver(void)
{
	uint32_t s023[] = {0, 2, 3};

	is_int(feed_send(0, 0, 0, "hello"), 0, "SEND from its sender accepted");
	const struct fake_sent *e = fake_env_last(&fe, "echo.echo");
	ok(fake_env_count(&fe, "echo.echo") == 1 && e && e->to == 0, "first SEND: one ECHO, to the sender only");
	ok(echo_is_valid(e, 0, 0, "hello"), "the ECHO carries our Ed25519 signature over (0, 0, digest(hello))");
	ok(!echo_is_valid(e, 0, 0, "other") && !echo_is_valid(e, 0, 1, "hello"),
	   "and the signature binds the digest and the instance");
	is_int((long long)fake_env_count(&fe, "echo.final") + (long long)fake_env_count(&fe, "echo.send"), 0,
	       "a receiver sends nothing else");
	is_int(feed_send(0, 0, 0, "hello"), 0, "the same SEND again");
	is_int(feed_send(0, 0, 0, "other"), 0, "a second, different SEND (equivocation) is ignored");
	is_int((long long)fake_env_count(&fe, "echo.echo"), 1, "no second signature");
	is_int((long long)fe.ndeliveries, 0, "no delivery without a certificate");
	is_int(feed_final(0, 0, 0, "hello", s023, 3), 0, "FINAL with signers {0, 2, 3} over digest(hello)");
	ok(fe.ndeliveries == 1 && delivered(0, 0, 0, "hello"), "a valid certificate and the payload: delivered");
	is_int(feed_final(0, 0, 0, "hello", s023, 3), 0, "the FINAL again");
	is_int((long long)fe.ndeliveries, 1, "delivered once");

	/* Bad certificates for (0, 1) = world: none delivers, each is rejected and counted. */
	fake_env_clear(&fe);
	feed_send(0, 0, 1, "world");
	ok(echo_is_valid(fake_env_last(&fe, "echo.echo"), 0, 1, "world"), "(0, 1) = world signed");
	fake_env_clear(&fe);
	uint64_t rejected = info_uint("rejected");
	struct weft_mpw w;
	weft_mpw_init(&w);
	ok(feed_final(2, 0, 1, "world", s023, 3) < 0, "FINAL relayed by node 2, not the sender: rejected");
	final_msg(&w, 0, 1, "world", "world", s023, 3, 2, 2);
	ok(feed_w(0, &w) < 0, "FINAL with a forged signature (node 2's under node 3's name): rejected");
	weft_mpw_init(&w);
	final_msg(&w, 0, 1, "world", "world", s023, 3, 1, 1);
	ok(feed_w(0, &w) < 0, "FINAL whose entry for node 2 is signed by node 1 (us): rejected");
	uint32_t dup[] = {0, 2, 2};
	ok(feed_final(0, 0, 1, "world", dup, 3) < 0, "FINAL with a duplicate signer {0, 2, 2}: rejected");
	uint32_t dup4[] = {0, 2, 3, 2};
	ok(feed_final(0, 0, 1, "world", dup4, 4) < 0, "FINAL with 3 distinct signers and a repeat: rejected");
	ok(feed_final(0, 0, 1, "world", s023, 2) < 0, "FINAL with 2 signers (quorum 3): rejected");
	uint32_t unknown[] = {0, 2, 9};
	ok(feed_final(0, 0, 1, "world", unknown, 3) < 0, "FINAL with signer 9 (n = 4): rejected");
	uint32_t five[] = {0, 1, 2, 3, 0};
	ok(feed_final(0, 0, 1, "world", five, 5) < 0, "FINAL with more than n entries: rejected");
	weft_mpw_init(&w);
	final_msg(&w, 0, 1, "world", "other", s023, 3, -1, 0);
	ok(feed_w(0, &w) < 0, "FINAL naming digest(world) with signatures over digest(other): rejected");
	weft_mpw_init(&w);
	final_msg(&w, 0, 1, "world", "world", s023, 3, -1, 0);
	w.buf[4] = 2; /* the seq field (a fixint) */
	ok(feed_w(0, &w) < 0, "signatures made for seq 1 presented for seq 2: rejected");
	is_int((long long)fe.ndeliveries, 0, "none of them delivered");
	is_int((long long)(info_uint("rejected") - rejected), 10, "each counted in rejected");
	is_int((long long)fe.nsent, 0, "and none answered");
	uint32_t all[] = {3, 2, 1, 0};
	is_int(feed_final(0, 0, 1, "world", all, 4), 0, "FINAL with all n signers, in any order");
	ok(fe.ndeliveries == 1 && delivered(0, 0, 1, "world"), "delivered (0, 1) = world");

	/* A certificate for another payload than the one we signed. */
	fake_env_clear(&fe);
	feed_send(3, 3, 0, "ours");
	is_int(feed_final(3, 3, 0, "theirs", s023, 3), 0, "FINAL certifying a payload we did not sign or see");
	is_int((long long)fe.ndeliveries, 0, "is kept, but nothing is delivered without its payload");
	is_int(feed_send(3, 3, 0, "ours"), 0, "our payload again");
	is_int((long long)fe.ndeliveries, 0, "does not match the certificate: not delivered");
	is_int(feed_send(3, 3, 0, "theirs"), 0, "the certified payload");
	ok(fe.ndeliveries == 1 && delivered(0, 3, 0, "theirs"), "delivers the certified payload");
	weft_mpw_free(&w);
}

static void test_final_first(void)
{
	uint32_t s013[] = {0, 1, 3};
	fake_env_clear(&fe);
	is_int(feed_final(2, 2, 0, "late", s013, 3), 0, "FINAL before SEND: accepted");
	is_int((long long)fe.ndeliveries, 0, "not delivered without the payload");
	struct weft_mpw w;
	weft_mpw_init(&w);
	final_msg(&w, 2, 0, "late", "late", s013, 3, 0, 3);
	is_int(feed_w(2, &w), 0, "another FINAL for the certified instance is not verified again (even a forged one)");
	is_int(feed_send(2, 2, 0, "early"), 0, "a SEND with another payload");
	is_int((long long)fe.ndeliveries + (long long)fake_env_count(&fe, "echo.echo"), 0,
	       "is neither delivered nor signed");
	is_int(feed_send(2, 2, 0, "late"), 0, "the certified payload arrives");
	ok(fe.ndeliveries == 1 && delivered(0, 2, 0, "late"), "delivered on SEND");
	is_int((long long)fake_env_count(&fe, "echo.echo"), 0, "no echo needed once certified");
}

static void test_sender(void)
{
	struct weft_mpw reply;
	fake_env_clear(&fe);
	weft_mpw_init(&reply);
	is_int(weft_proto_echo.on_request(state, (const uint8_t *)"mine", 4, &reply), 0, "broadcast accepted");
	weft_mpw_free(&reply);
	const struct fake_sent *s = fake_env_last(&fe, "echo.send");
	ok(fake_env_count(&fe, "echo.send") == 1 && s->to == -1, "SEND multicast");
	is_int((long long)fake_env_count(&fe, "echo.echo"), 0, "our own echo stays local");
	is_int(echo_from(0, 0, SELF, 0, "mine"), 0, "ECHO from node 0");
	is_int(echo_from(0, 0, SELF, 0, "mine"), 0, "the same ECHO again");
	is_int((long long)fake_env_count(&fe, "echo.final"), 0, "ours and node 0's: 2 signers, no certificate");
	uint64_t rejected = info_uint("rejected");
	ok(echo_from(2, 3, SELF, 0, "mine") < 0, "ECHO from node 2 signed by node 3: rejected");
	ok(echo_from(2, 2, SELF, 0, "yours") < 0, "ECHO from node 2 over another digest: rejected");
	ok(echo_from(2, 2, SELF, 7, "mine") < 0, "ECHO for a seq we never broadcast: rejected");
	ok(echo_from(2, 2, 0, 0, "hello") < 0, "ECHO for node 0's broadcast sent to us: rejected");
	is_int((long long)(info_uint("rejected") - rejected), 4, "each counted");
	is_int((long long)fake_env_count(&fe, "echo.final"), 0, "the rejected echoes did not count");
	is_int(echo_from(3, 3, SELF, 0, "mine"), 0, "ECHO from node 3");
	s = fake_env_last(&fe, "echo.final");
	ok(fake_env_count(&fe, "echo.final") == 1 && final_is_valid(s, SELF, 0, "mine"),
	   "third signer: FINAL multicast with a valid certificate of 3 distinct signers");
	ok(fe.ndeliveries == 1 && delivered(0, SELF, 0, "mine"), "and we deliver our own broadcast");
	fake_env_clear(&fe);
	is_int(echo_from(2, 2, SELF, 0, "mine"), 0, "an ECHO just after we certified (it crossed our FINAL)");
	is_int((long long)fe.nsent, 0, "is not answered");
	fe.now_us += 300 * 1000;
	is_int(echo_from(2, 2, SELF, 0, "mine"), 0, "the same ECHO resent later: its signer still waits");
	s = fake_env_last(&fe, "echo.final");
	ok(fake_env_count(&fe, "echo.final") == 1 && s->to == 2 && fe.nsent == 2,
	   "is answered with our FINAL, to the late signer only (it missed the multicast)");
	const struct fake_sent *p = fake_env_last(&fe, "echo.send");
	ok(p && p->to == 2 && memcmp(p->data + p->len - 4, "mine", 4) == 0,
	   "and with our SEND, in case it lacks the payload");
	ok(final_is_valid(&(struct fake_sent){.to = -1, .data = s->data, .len = s->len}, SELF, 0, "mine"),
	   "the same certificate");
	is_int((long long)fe.ndeliveries, 0, "no second delivery");
	weft_mpw_init(&reply);
	is_int(weft_proto_echo.on_request(state, (const uint8_t *)"x", 1, &reply), 0, "next broadcast");
	weft_mpw_free(&reply);
	/* (SELF, 1) stays open for the restart test. */
	uint8_t *big = calloc(1, (4 << 20) + 1);
	is_int(weft_proto_echo.on_request(state, big, (4 << 20) + 1, NULL), WEFT_ETOOBIG,
	       "a payload over max_payload is refused");
	free(big);
}

static void test_resend_and_restart(void)
{
	fake_env_clear(&fe);
	feed_send(3, 3, 1, "pending");
	fake_env_clear(&fe);
	fire_resend();
	const struct fake_sent *e = fake_env_last(&fe, "echo.echo");
	ok(e && e->to == 3 && fake_env_count(&fe, "echo.echo") == 1 && echo_is_valid(e, 3, 1, "pending"),
	   "resend: our ECHO for (3, 1) again, to node 3 only");
	const struct fake_sent *s = fake_env_last(&fe, "echo.send");
	ok(s && s->to == -1 && fake_env_count(&fe, "echo.send") == 1, "resend: our open broadcast's SEND again");
	is_int((long long)fake_env_count(&fe, "echo.final"), 0, "no FINAL without a certificate");
	ok(fake_env_count(&fe, "brb.status") == 1, "and the core's STATUS");

	/* Receiver restart: we signed (2, 5) = a. */
	fake_env_clear(&fe);
	feed_send(2, 2, 5, "a");
	e = fake_env_last(&fe, "echo.echo");
	uint8_t first[64];
	memcpy(first, e->data + e->len - 64, 64);
	echo_from(0, 0, SELF, 1, "x"); /* one echo for our (SELF, 1) = x before the restart */
	is_int(weft_proto_echo.on_request(state, (const uint8_t *)"y", 1, NULL), 0, "broadcast (SELF, 2) = y");
	uint8_t okey[9] = {'o', 0, 0, 0, 0, 0, 0, 0, 2};
	sim_memkv_del(fe.kv, okey, sizeof(okey)); /* as if its payload record were lost */
	shutdown_node();
	boot();
	fake_env_clear(&fe);
	is_int(feed_send(2, 2, 5, "b"), 0, "after a restart, a SEND contradicting our persisted vote");
	is_int((long long)fake_env_count(&fe, "echo.echo"), 0, "is not signed");
	feed_send(2, 2, 5, "a");
	e = fake_env_last(&fe, "echo.echo");
	ok(e && fake_env_count(&fe, "echo.echo") == 1 && memcmp(e->data + e->len - 64, first, 64) == 0,
	   "the same SEND is signed again, with the same signature");
	uint32_t s023[] = {0, 2, 3};
	is_int(feed_final(0, 0, 0, "hello", s023, 3), 0, "a FINAL for an instance delivered before the restart");
	is_int((long long)fe.ndeliveries, 0, "is ignored: the delivery was persisted");
	echo_from(3, 3, SELF, 0, "mine");
	s = fake_env_last(&fe, "echo.final");
	ok(s && s->to == 3 && final_is_valid(&(struct fake_sent){.to = -1, .data = s->data, .len = s->len}, SELF, 0,
					       "mine"),
	   "our certificate survives the restart: a late ECHO still gets it");
	s = fake_env_last(&fe, "echo.send");
	ok(s && s->to == 3 && memcmp(s->data + s->len - 4, "mine", 4) == 0, "and our payload");

	/* Sender restart: (SELF, 1) = x is reopened from its persisted payload. */
	fake_env_clear(&fe);
	fire_resend();
	s = fake_env_last(&fe, "echo.send");
	ok(s && s->to == -1 && fake_env_count(&fe, "echo.send") == 1 &&
		   memcmp(s->data + s->len - 1, "x", 1) == 0,
	   "after our restart, resend multicasts our undelivered broadcast's SEND from kv");
	fake_env_clear(&fe);
	is_int(echo_from(0, 0, SELF, 1, "x"), 0, "node 0's ECHO again (counted once)");
	is_int((long long)fake_env_count(&fe, "echo.final"), 0, "ours and node 0's: no certificate yet");
	is_int(echo_from(2, 2, SELF, 1, "y") < 0, 1, "an ECHO over another digest is rejected");
	is_int(echo_from(2, 2, SELF, 1, "x"), 0, "node 2's ECHO");
	s = fake_env_last(&fe, "echo.final");
	ok(fake_env_count(&fe, "echo.final") == 1 && final_is_valid(s, SELF, 1, "x"), "FINAL with a valid certificate");
	ok(fe.ndeliveries == 1 && delivered(0, SELF, 1, "x"), "and we deliver x");

	/* (SELF, 2) = y lost its payload record, not its vote. */
	fake_env_clear(&fe);
	is_int(echo_from(0, 0, SELF, 2, "y"), 0, "node 0's ECHO for (SELF, 2)");
	is_int(echo_from(3, 3, SELF, 2, "x") < 0, 1, "an ECHO over another digest is rejected");
	is_int(echo_from(3, 3, SELF, 2, "y"), 0, "node 3's ECHO");
	s = fake_env_last(&fe, "echo.final");
	ok(fake_env_count(&fe, "echo.final") == 1 && final_is_valid(s, SELF, 2, "y"),
	   "our persisted vote checks the echoes: FINAL with a valid certificate");
	is_int((long long)fe.ndeliveries, 0, "without the payload: no delivery yet");
	fake_env_clear(&fe);
	fire_resend();
	ok(fake_env_count(&fe, "echo.final") == 1 && fake_env_count(&fe, "echo.send") == 0,
	   "resend: the FINAL again (there is no payload to resend)");
	/* Catch-up: f+1 peers report (SELF, 2) = y. */
	struct weft_mpw w;
	weft_mpw_init(&w);
	for (uint32_t j = 2; j <= 3; j++) {
		header(&w, 6, 17, SELF, 2);
		weft_mpw_bool(&w, false);
		weft_mpw_bin(&w, "y", 1);
		feed_raw(j, w.buf, w.len);
	}
	weft_mpw_free(&w);
	ok(fe.ndeliveries == 1 && delivered(0, SELF, 2, "y"), "catch-up delivers our own broadcast back to us");
	const void *v;
	size_t vlen;
	okey[8] = 1;
	is_int(sim_memkv_get(fe.kv, okey, sizeof(okey), &v, &vlen), 0,
	       "a delivered broadcast's payload record is kept (for late echoes)");
}

/* Every prefix of a valid message, and hand-made hostile encodings. */
static void test_hostile(void)
{
	fake_env_clear(&fe);
	uint32_t s023[] = {0, 2, 3};
	struct weft_mpw w;
	weft_mpw_init(&w);
	final_msg(&w, 0, 9, "p", "p", s023, 3, -1, 0);
	int bad = 0;
	for (size_t cut = 0; cut < w.len; cut++)
		bad += feed_raw(0, w.buf, cut) >= 0;
	is_int(bad, 0, "every truncation of a FINAL is rejected");
	uint8_t *more = malloc(w.len + 1);
	memcpy(more, w.buf, w.len);
	more[w.len] = 0xc0;
	ok(feed_raw(0, more, w.len + 1) < 0, "a FINAL with a trailing byte is rejected");
	free(more);
	weft_mpw_free(&w);

	uint8_t sig[65] = {0}; /* one spare byte for the oversized field */
	sign_as(2, SELF, 0, "x", sig);
	weft_mpw_init(&w);
	header(&w, 5, 1, SELF, 5);
	weft_mpw_bin(&w, sig, 64);
	bad = 0;
	for (size_t cut = 0; cut < w.len; cut++)
		bad += feed_raw(2, w.buf, cut) >= 0;
	is_int(bad, 0, "every truncation of an ECHO is rejected");

	header(&w, 5, 0, 0, 9);
	weft_mpw_strn(&w, "p", 1);
	ok(feed_raw(0, w.buf, w.len) < 0, "SEND payload as str, not bin: rejected");
	header(&w, 5, 1, SELF, 5);
	weft_mpw_bin(&w, sig, 63);
	ok(feed_raw(2, w.buf, w.len) < 0, "ECHO with a 63-byte signature: rejected");
	header(&w, 5, 1, SELF, 5);
	weft_mpw_bin(&w, sig, 65);
	ok(feed_raw(2, w.buf, w.len) < 0, "ECHO with a 65-byte signature: rejected");
	header(&w, 5, 1, SELF, 5);
	weft_mpw_strn(&w, (const char *)sig, 64);
	ok(feed_raw(2, w.buf, w.len) < 0, "ECHO signature as str: rejected");
	header(&w, 6, 2, 0, 9);
	weft_mpw_bin(&w, sig, 31);
	weft_mpw_array(&w, 0);
	ok(feed_raw(0, w.buf, w.len) < 0, "FINAL with a 31-byte digest: rejected");
	header(&w, 6, 2, 0, 9);
	weft_mpw_bin(&w, sig, 32);
	weft_mpw_map(&w, 0);
	ok(feed_raw(0, w.buf, w.len) < 0, "FINAL certificate as a map: rejected");
	header(&w, 6, 2, 0, 9);
	weft_mpw_bin(&w, sig, 32);
	weft_mpw_array(&w, 3);
	for (int e = 0; e < 3; e++) {
		weft_mpw_array(&w, 3);
		weft_mpw_uint(&w, (uint64_t)e);
		weft_mpw_bin(&w, sig, 64);
		weft_mpw_nil(&w);
	}
	ok(feed_raw(0, w.buf, w.len) < 0, "FINAL entries of 3 fields: rejected");
	header(&w, 6, 2, 0, 9);
	weft_mpw_bin(&w, sig, 32);
	weft_mpw_array(&w, 3);
	for (int e = 0; e < 3; e++) {
		weft_mpw_array(&w, 2);
		weft_mpw_int(&w, -1 - e);
		weft_mpw_bin(&w, sig, 64);
	}
	ok(feed_raw(0, w.buf, w.len) < 0, "FINAL with negative signers: rejected");
	header(&w, 6, 2, 0, 9);
	weft_mpw_bin(&w, sig, 32);
	weft_mpw_array(&w, 3);
	for (int e = 0; e < 3; e++) {
		weft_mpw_array(&w, 2);
		weft_mpw_uint(&w, UINT64_C(1) << 40);
		weft_mpw_bin(&w, sig, 64);
	}
	ok(feed_raw(0, w.buf, w.len) < 0, "FINAL with a signer that does not fit 32 bits: rejected");
	header(&w, 5, 2, 0, 9);
	weft_mpw_bin(&w, sig, 32);
	ok(feed_raw(0, w.buf, w.len) < 0, "FINAL without a certificate: rejected");
	header(&w, 6, 0, 0, 9);
	weft_mpw_bin(&w, "p", 1);
	weft_mpw_nil(&w);
	ok(feed_raw(0, w.buf, w.len) < 0, "SEND with an extra field: rejected");
	header(&w, 5, 3, 0, 9);
	weft_mpw_bin(&w, "p", 1);
	ok(feed_raw(0, w.buf, w.len) < 0, "unknown type 3: rejected");
	header(&w, 5, 0, 0, 100);
	weft_mpw_bin(&w, "p", 1);
	ok(feed_raw(0, w.buf, w.len) < 0, "SEND beyond the window: rejected");
	header(&w, 5, 0, 4, 0);
	weft_mpw_bin(&w, "p", 1);
	ok(feed_raw(0, w.buf, w.len) < 0, "sender index n: rejected");
	weft_mpw_free(&w);

	weft_mpw_init(&w);
	header(&w, 6, 2, 0, 9);
	weft_mpw_bin(&w, sig, 32);
	weft_mpw_raw(&w, "\xdd\xff\xff\xff\xff", 5);
	ok(feed_raw(0, w.buf, w.len) < 0, "FINAL declaring 2^32-1 certificate entries: rejected");
	weft_mpw_free(&w);
	static const uint8_t huge_bin[] = {0x95, 0x01, 0x00, 0x00, 0x09, 0xc6, 0xff, 0xff, 0xff, 0xff};
	ok(feed_raw(0, huge_bin, sizeof(huge_bin)) < 0, "SEND declaring a 4 GiB payload: rejected");
	static const uint8_t huge_arr[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02};
	ok(feed_raw(0, huge_arr, sizeof(huge_arr)) < 0, "a message declaring 2^32-1 fields: rejected");
	ok(feed_raw(0, "\x95\x02\x00\x00\x09\xc4\x01p", 8) < 0, "version 2: rejected");
	ok(feed_raw(0, "\xc1", 1) < 0, "garbage: rejected");
	ok(feed_raw(0, "", 0) < 0, "empty: rejected");
	uint8_t *big = malloc((4 << 20) + 16);
	weft_mpw_init(&w);
	header(&w, 5, 0, 0, 9);
	memset(big, 'z', (4 << 20) + 1);
	weft_mpw_bin(&w, big, (4 << 20) + 1);
	ok(feed_raw(0, w.buf, w.len) < 0, "SEND over max_payload: rejected");
	weft_mpw_free(&w);
	free(big);
	is_int((long long)fe.nsent + (long long)fe.ndeliveries, 0, "no reply to and no delivery from any of them");
}

/* Our FINAL and payload records are kept for the last max(retain, window) broadcasts. */
static void test_retention(void)
{
	struct fake_env keep;
	struct weft_mpw params;
	fake_env_init(&keep, 0, 4);
	weft_mpw_init(&params);
	weft_mpw_map(&params, 2);
	weft_mpw_str(&params, "window");
	weft_mpw_uint(&params, 1);
	weft_mpw_str(&params, "retain");
	weft_mpw_uint(&params, 1);
	void *st = calloc(1, weft_proto_echo.state_size);
	is_int(weft_proto_echo.init(st, &keep.env, params.buf, params.len), 0, "window 1, retain 1: init");
	for (uint64_t seq = 0; seq < 2; seq++) {
		weft_proto_echo.on_request(st, (const uint8_t *)"r", 1, NULL);
		for (uint32_t j = 1; j <= 2; j++) {
			uint8_t d[32], stmt[57], sig[64];
			struct weft_mpw w;
			digest_of(d, "r");
			stmt_of(stmt, 0, seq, d);
			weft_sign(keep.ids[j], sig, stmt, sizeof(stmt));
			weft_mpw_init(&w);
			header(&w, 5, 1, 0, seq);
			weft_mpw_bin(&w, sig, 64);
			weft_proto_echo.on_message(st, j, w.buf, w.len);
			weft_mpw_free(&w);
		}
	}
	is_int((long long)keep.ndeliveries, 2, "two broadcasts certified and delivered");
	const void *v;
	size_t vlen;
	uint8_t key[9] = {'o', 0, 0, 0, 0, 0, 0, 0, 0};
	int gone = sim_memkv_get(keep.kv, key, 9, &v, &vlen) == WEFT_NOTFOUND;
	key[0] = 'f';
	gone += sim_memkv_get(keep.kv, key, 9, &v, &vlen) == WEFT_NOTFOUND;
	key[8] = 1;
	int kept = sim_memkv_get(keep.kv, key, 9, &v, &vlen) == 0;
	key[0] = 'o';
	kept += sim_memkv_get(keep.kv, key, 9, &v, &vlen) == 0;
	ok(gone == 2 && kept == 2, "seq 0's records are dropped when seq 1 is certified; seq 1's are kept");
	weft_proto_echo.destroy(st);
	free(st);
	weft_mpw_free(&params);
	fake_env_free(&keep);
}

/* A restart after more certified broadcasts than the window: their 'o'
 * records are kept (retain) for late echoes, and the broadcast still in
 * flight, after all of them, must be reopened all the same (a restart once
 * listed only the first `window` records, the oldest, and lost it: a whole
 * committee restarted with one such broadcast stalled its DAG). */
static void test_restore_after_retained(void)
{
	struct fake_env env;
	struct weft_mpw params;
	fake_env_init(&env, 0, 4);
	weft_mpw_init(&params);
	weft_mpw_map(&params, 2);
	weft_mpw_str(&params, "window");
	weft_mpw_uint(&params, 4);
	weft_mpw_str(&params, "retain");
	weft_mpw_uint(&params, 8);
	void *st = calloc(1, weft_proto_echo.state_size);
	is_int(weft_proto_echo.init(st, &env.env, params.buf, params.len), 0, "window 4, retain 8: init");
	const uint64_t done = 12;
	for (uint64_t seq = 0; seq <= done; seq++) {
		const char *payload = seq < done ? "r" : "z";
		weft_proto_echo.on_request(st, (const uint8_t *)payload, 1, NULL);
		for (uint32_t j = 1; seq < done && j <= 2; j++) {
			uint8_t d[32], stmt[57], sig[64];
			struct weft_mpw w;
			digest_of(d, payload);
			stmt_of(stmt, 0, seq, d);
			weft_sign(env.ids[j], sig, stmt, sizeof(stmt));
			weft_mpw_init(&w);
			header(&w, 5, 1, 0, seq);
			weft_mpw_bin(&w, sig, 64);
			weft_proto_echo.on_message(st, j, w.buf, w.len);
			weft_mpw_free(&w);
		}
	}
	is_int((long long)env.ndeliveries, (long long)done, "12 broadcasts delivered, the 13th in flight");
	weft_proto_echo.destroy(st);
	memset(st, 0, weft_proto_echo.state_size);
	fake_env_clear(&env);
	is_int(weft_proto_echo.init(st, &env.env, params.buf, params.len), 0, "restart: init");
	weft_proto_echo.start(st);
	env.now_us += 2000 * 1000;
	weft_proto_echo.on_timer(st, TIMER_CATCHUP);
	const struct fake_sent *s = fake_env_last(&env, "echo.send");
	ok(s && s->to == -1 && memcmp(s->data + s->len - 1, "z", 1) == 0,
	   "after the restart the broadcast in flight is reopened: its SEND goes out again");
	weft_proto_echo.destroy(st);
	free(st);
	weft_mpw_free(&params);
	fake_env_free(&env);
}

/* n = 1: the sender is its own quorum. */
static void test_single(void)
{
	struct fake_env one;
	fake_env_init(&one, 0, 1);
	void *st = calloc(1, weft_proto_echo.state_size);
	is_int(weft_proto_echo.init(st, &one.env, NULL, 0), 0, "n = 1: init");
	is_int(weft_proto_echo.on_request(st, (const uint8_t *)"solo", 4, NULL), 0, "n = 1: broadcast");
	ok(one.ndeliveries == 1 && one.deliveries[0].len == 4 && memcmp(one.deliveries[0].data, "solo", 4) == 0,
	   "n = 1: delivered at once on our own signature");
	weft_proto_echo.destroy(st);
	free(st);
	fake_env_free(&one);
}

int main(void)
{
	weft_crypto_init();
	fake_env_init(&fe, SELF, N); /* we are node 1 of 4, f = 1 */
	boot();

	test_receiver();
	test_final_first();
	test_sender();
	test_resend_and_restart();
	test_hostile();
	test_restore_after_retained();

	struct weft_mpw w;
	weft_mpw_init(&w);
	weft_proto_echo.info(state, &w);
	struct weft_mp_reader r;
	uint32_t pairs;
	const char *k, *v;
	uint32_t kl, vl;
	weft_mp_reader_init(&r, w.buf, w.len);
	ok(weft_mp_read_map(&r, &pairs) == 0 && pairs == 9 && weft_mp_read_str(&r, &k, &kl) == 0 && kl == 8 &&
		   memcmp(k, "protocol", 8) == 0 && weft_mp_read_str(&r, &v, &vl) == 0 && vl == 4 &&
		   memcmp(v, "echo", 4) == 0,
	   "info: protocol echo and the core's counters");
	weft_mpw_free(&w);
	ok(info_uint("rejected") > 30, "info: rejected counts the hostile input");

	shutdown_node();
	fake_env_free(&fe);
	test_single();
	test_retention();
	return done_testing();
}
