/* faults.c - the table of fault words and its parser (see weft/faults.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "weft/err.h"
#include "weft/faults.h"

#define SIM WEFT_FAULT_IN_SIM
#define NET WEFT_FAULT_IN_TRANSPORT
#define DAEMON WEFT_FAULT_IN_DAEMON
#define DOCKER WEFT_FAULT_IN_DOCKER

static const struct {
	const char *name;
	const char *aliases[2]; /* older words, still accepted */
	unsigned where;
} words[WEFT_FAULT_COUNT] = {
	[WEFT_FAULT_CRASH] = {"crash", {NULL, NULL}, SIM | DOCKER},
	/* "kill": CometBFT's and Jepsen's word for kill -9, then start */
	[WEFT_FAULT_CRASH_RECOVER] = {"crash_recover", {"kill", NULL}, SIM | DOCKER},
	[WEFT_FAULT_OMISSION] = {"omission", {"drop", "silent"}, SIM | NET | DAEMON | DOCKER},
	[WEFT_FAULT_DELAY] = {"delay", {NULL, NULL}, SIM | NET | DOCKER},
	[WEFT_FAULT_PARTITION] = {"partition", {NULL, NULL}, SIM | NET | DOCKER},
	[WEFT_FAULT_CORRUPT] = {"corrupt", {NULL, NULL}, SIM | NET | DAEMON | DOCKER},
	[WEFT_FAULT_EQUIVOCATE] = {"equivocate", {NULL, NULL}, SIM | DAEMON},
	[WEFT_FAULT_TWINS] = {"twins", {NULL, NULL}, SIM},
	[WEFT_FAULT_ADVERSARY] = {"adversary", {NULL, NULL}, SIM},
	[WEFT_FAULT_LOSS] = {"loss", {NULL, NULL}, SIM | DOCKER},
	[WEFT_FAULT_CUT] = {"cut", {NULL, NULL}, SIM},
	[WEFT_FAULT_SKEW] = {"skew", {NULL, NULL}, SIM},
	[WEFT_FAULT_DUPLICATE] = {"duplicate", {NULL, NULL}, NET | DOCKER},
	[WEFT_FAULT_REORDER] = {"reorder", {NULL, NULL}, NET | DOCKER},
	[WEFT_FAULT_PAUSE] = {"pause", {NULL, NULL}, DOCKER},
	[WEFT_FAULT_RESTART] = {"restart", {NULL, NULL}, DOCKER},
	[WEFT_FAULT_DISCONNECT] = {"disconnect", {NULL, NULL}, DOCKER},
};

static const char *place(unsigned where)
{
	return where == SIM      ? "weft-sim"
	       : where == NET    ? "the transport fault layer"
	       : where == DOCKER ? "a weft-campaign schedule"
				 : "weftd --byzantine";
}

/* Where a fault the place lacks does run, for the error message. */
static const char *elsewhere(enum weft_fault f)
{
	switch (f) {
	case WEFT_FAULT_DUPLICATE:
	case WEFT_FAULT_REORDER:
		return "a transport rule (fault.set) and, in weft-sim, a network setting (network.duplicate, "
		       "network.reorder)";
	case WEFT_FAULT_CRASH:
	case WEFT_FAULT_CRASH_RECOVER:
		return "a weft-sim fault and a weft-campaign step; on a testnet, kill or restart the daemon";
	case WEFT_FAULT_TWINS:
	case WEFT_FAULT_SKEW: return "a weft-sim fault";
	case WEFT_FAULT_LOSS:
		return "a weft-sim fault and a weft-campaign step; on a testnet, a transport omission rule with a "
		       "probability";
	case WEFT_FAULT_CUT: return "a weft-sim fault; the transport's partition cuts both directions";
	case WEFT_FAULT_ADVERSARY: return "a weft-sim fault; weftd --byzantine takes the strategy's name";
	case WEFT_FAULT_EQUIVOCATE: return "a weft-sim fault and weftd --byzantine";
	case WEFT_FAULT_OMISSION:
	case WEFT_FAULT_DELAY:
	case WEFT_FAULT_PARTITION:
	case WEFT_FAULT_CORRUPT: return "a weft-sim fault, a transport rule and a weft-campaign step";
	case WEFT_FAULT_PAUSE:
	case WEFT_FAULT_RESTART:
	case WEFT_FAULT_DISCONNECT:
		return "a weft-campaign step on a docker testnet (in weft-sim, crash_recover or partition come "
		       "closest)";
	}
	return "";
}

static bool is(const char *name, const char *word, size_t len)
{
	return name && strlen(name) == len && memcmp(name, word, len) == 0;
}

void weft_fault_names(unsigned where, char *buf, size_t cap)
{
	size_t o = 0;
	if (cap)
		buf[0] = '\0';
	for (int f = 0; f < WEFT_FAULT_COUNT && o < cap; f++)
		if (words[f].where & where)
			o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", words[f].name);
}

int weft_fault_parse(const char *word, size_t len, unsigned where, enum weft_fault *out, char *err, size_t errlen)
{
	char list[160];
	weft_fault_names(where, list, sizeof(list));
	for (int f = 0; f < WEFT_FAULT_COUNT; f++) {
		if (!is(words[f].name, word, len) && !is(words[f].aliases[0], word, len) &&
		    !is(words[f].aliases[1], word, len))
			continue;
		*out = (enum weft_fault)f;
		if (words[f].where & where)
			return 0;
		if (err && errlen)
			snprintf(err, errlen, "'%s' is %s, not a fault of %s (there: %s)", words[f].name,
				 elsewhere((enum weft_fault)f), place(where), list);
		return WEFT_EUNSUPPORTED;
	}
	if (err && errlen)
		snprintf(err, errlen, "unknown fault '%.*s' (expected one of %s)", (int)(len > 40 ? 40 : len), word, list);
	return WEFT_NOTFOUND;
}

const char *weft_fault_name(enum weft_fault f)
{
	return f < WEFT_FAULT_COUNT ? words[f].name : "?";
}
