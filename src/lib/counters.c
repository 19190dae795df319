/* counters.c - named counters (weft/counters.h). */
#include <stdlib.h>
#include <string.h>

#include "weft/counters.h"

void weft_counters_add(struct weft_counters *c, const char *name, int64_t delta)
{
	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].name == name || strcmp(c->v[i].name, name) == 0) {
			c->v[i].value += delta;
			return;
		}
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		if (c->v == NULL)
			abort();
	}
	c->v[c->n++] = (struct weft_counter){name, delta};
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct weft_counter *)a)->name, ((const struct weft_counter *)b)->name);
}

void weft_counters_sort(struct weft_counters *c)
{
	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), by_name);
}

void weft_counters_free(struct weft_counters *c)
{
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}
