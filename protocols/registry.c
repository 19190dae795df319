/* registry.c - the table of every protocol weft can run, by name. */
#include <string.h>

#include "weft/proto.h"

extern const struct weft_proto_ops weft_proto_beb;
extern const struct weft_proto_ops weft_proto_seq;
extern const struct weft_proto_ops weft_proto_bracha;

const struct weft_proto_ops *const weft_protocols[] = {
	&weft_proto_beb,
	&weft_proto_seq,
	&weft_proto_bracha,
	NULL,
};

const struct weft_proto_ops *weft_proto_find(const char *name)
{
	for (size_t i = 0; weft_protocols[i]; i++)
		if (strcmp(weft_protocols[i]->name, name) == 0)
			return weft_protocols[i];
	return NULL;
}
