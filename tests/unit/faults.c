/* faults.c - unit tests for include/weft/faults.h: the one vocabulary of
 * fault words (names, old aliases, where each runs) and its parser's
 * answers and messages for each place, weft-campaign's schedules included. */
#include <string.h>

#include "../tap.h"
#include "weft/err.h"
#include "weft/faults.h"

static int parse(const char *w, unsigned where, enum weft_fault *f, char *err, size_t len)
{
	return weft_fault_parse(w, strlen(w), where, f, err, len);
}

int main(void)
{
	enum weft_fault f;
	char err[256];
	char list[160];

	ok(parse("omission", WEFT_FAULT_IN_SIM, &f, err, sizeof err) == 0 && f == WEFT_FAULT_OMISSION,
	   "omission runs in the simulator");
	ok(parse("drop", WEFT_FAULT_IN_TRANSPORT, &f, err, sizeof err) == 0 && f == WEFT_FAULT_OMISSION,
	   "drop (the transport's old word) is omission");
	ok(parse("silent", WEFT_FAULT_IN_DAEMON, &f, err, sizeof err) == 0 && f == WEFT_FAULT_OMISSION,
	   "silent (--byzantine's old word) is omission");
	ok(parse("drop", WEFT_FAULT_IN_SIM, &f, err, sizeof err) == 0 && f == WEFT_FAULT_OMISSION,
	   "an alias works everywhere its fault runs");
	is_int(parse("crash", WEFT_FAULT_IN_TRANSPORT, &f, err, sizeof err), WEFT_EUNSUPPORTED,
	       "crash is not a transport rule");
	ok(f == WEFT_FAULT_CRASH && strstr(err, "'crash' is a weft-sim fault") && strstr(err, "kill or restart"),
	   "... and the message says where it runs (%s)", err);
	is_int(parse("duplicate", WEFT_FAULT_IN_SIM, &f, err, sizeof err), WEFT_EUNSUPPORTED,
	       "duplicate is not a simulator fault kind");
	ok(strstr(err, "in weft-sim, a network setting") != NULL, "... it is a network setting there (%s)", err);
	is_int(parse("equivocate", WEFT_FAULT_IN_DAEMON, &f, err, sizeof err), 0, "equivocate runs in weftd");
	is_int(parse("twins", WEFT_FAULT_IN_DAEMON, &f, err, sizeof err), WEFT_EUNSUPPORTED, "twins does not");
	ok(parse("loss", WEFT_FAULT_IN_SIM, &f, err, sizeof err) == 0 && f == WEFT_FAULT_LOSS &&
		   parse("cut", WEFT_FAULT_IN_SIM, &f, err, sizeof err) == 0 && f == WEFT_FAULT_CUT &&
		   parse("skew", WEFT_FAULT_IN_SIM, &f, err, sizeof err) == 0 && f == WEFT_FAULT_SKEW,
	   "loss, cut and skew run in the simulator");
	is_int(parse("loss", WEFT_FAULT_IN_TRANSPORT, &f, err, sizeof err), WEFT_EUNSUPPORTED, "loss is not a transport rule");
	ok(strstr(err, "a transport omission rule with a probability") != NULL, "... omission with a probability is (%s)",
	   err);
	is_int(parse("cut", WEFT_FAULT_IN_TRANSPORT, &f, err, sizeof err), WEFT_EUNSUPPORTED, "nor is cut");
	ok(strstr(err, "the transport's partition cuts both directions") != NULL, "... its partition is symmetric (%s)",
	   err);
	is_int(parse("skew", WEFT_FAULT_IN_DAEMON, &f, err, sizeof err), WEFT_EUNSUPPORTED, "skew is not a host behaviour");
	is_int(parse("crsh", WEFT_FAULT_IN_SIM, &f, err, sizeof err), WEFT_NOTFOUND, "a misspelt word is unknown");
	ok(strstr(err, "unknown fault 'crsh' (expected one of crash, crash_recover, omission") != NULL,
	   "... with the place's words (%s)", err);
	is_int(weft_fault_parse("omissionX", 8, WEFT_FAULT_IN_SIM, &f, NULL, 0), 0,
	       "the length bounds the word (not NUL-terminated input)");
	is_int(weft_fault_parse("", 0, WEFT_FAULT_IN_SIM, &f, err, sizeof err), WEFT_NOTFOUND, "the empty word");
	weft_fault_names(WEFT_FAULT_IN_SIM, list, sizeof list);
	is_str(list, "crash, crash_recover, omission, delay, partition, corrupt, equivocate, twins, adversary, loss, cut, skew",
	       "the simulator's words");
	weft_fault_names(WEFT_FAULT_IN_TRANSPORT, list, sizeof list);
	is_str(list, "omission, delay, partition, corrupt, duplicate, reorder", "the transport's words");
	weft_fault_names(WEFT_FAULT_IN_DAEMON, list, sizeof list);
	is_str(list, "omission, corrupt, equivocate", "weftd --byzantine's words");
	weft_fault_names(WEFT_FAULT_IN_DOCKER, list, sizeof list);
	is_str(list, "crash, crash_recover, omission, delay, partition, corrupt, loss, duplicate, reorder, pause, restart, "
		     "disconnect",
	       "a weft-campaign schedule's words");
	ok(parse("kill", WEFT_FAULT_IN_DOCKER, &f, err, sizeof err) == 0 && f == WEFT_FAULT_CRASH_RECOVER,
	   "kill (CometBFT's and Jepsen's word) is crash_recover");
	is_int(parse("pause", WEFT_FAULT_IN_SIM, &f, err, sizeof err), WEFT_EUNSUPPORTED, "pause is not a simulator fault");
	ok(f == WEFT_FAULT_PAUSE && strstr(err, "a weft-campaign step on a docker testnet") &&
		   strstr(err, "crash_recover or partition come closest"),
	   "... the message says where it runs and what comes closest in weft-sim (%s)", err);
	is_int(parse("twins", WEFT_FAULT_IN_DOCKER, &f, err, sizeof err), WEFT_EUNSUPPORTED,
	       "twins is not a weft-campaign step");
	ok(strstr(err, "not a fault of a weft-campaign schedule") != NULL, "... the message names the place (%s)", err);
	is_int(parse("restart", WEFT_FAULT_IN_TRANSPORT, &f, err, sizeof err), WEFT_EUNSUPPORTED,
	       "restart is not a transport rule");
	weft_fault_names(WEFT_FAULT_IN_SIM, list, 10);
	ok(strlen(list) < 10, "a short buffer is never overrun (%s)", list);
	for (int i = 0; i < WEFT_FAULT_COUNT; i++) {
		const char *name = weft_fault_name((enum weft_fault)i);
		unsigned all = WEFT_FAULT_IN_SIM | WEFT_FAULT_IN_TRANSPORT | WEFT_FAULT_IN_DAEMON | WEFT_FAULT_IN_DOCKER;
		if (!ok(parse(name, all, &f, NULL, 0) == 0 && f == (enum weft_fault)i, "%s parses back to itself", name))
			break;
	}
	return done_testing();
}
