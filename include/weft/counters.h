/* counters.h - a small table of named counters (protocol metrics), shared by
 * the daemon's host and the simulator.  Names are static strings; lookups
 * compare the pointer first, then the text. */
#ifndef WEFT_COUNTERS_H
#define WEFT_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

struct weft_counter {
	const char *name;
	int64_t value;
};

struct weft_counters {
	struct weft_counter *v;
	size_t n, cap;
};

void weft_counters_add(struct weft_counters *c, const char *name, int64_t delta);
/* Orders the counters by name (for deterministic output). */
void weft_counters_sort(struct weft_counters *c);
void weft_counters_free(struct weft_counters *c);

#endif
