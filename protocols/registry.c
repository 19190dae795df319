/* registry.c - the table of every protocol weft can run, by name. */
#include <string.h>

#include "weft/proto.h"

extern const struct weft_proto_ops weft_proto_beb;
extern const struct weft_proto_ops weft_proto_seq;
extern const struct weft_proto_ops weft_proto_bracha;
extern const struct weft_proto_ops weft_proto_amortized;
extern const struct weft_proto_ops weft_proto_coded;
extern const struct weft_proto_ops weft_proto_echo;
extern const struct weft_proto_ops weft_proto_node;

const struct weft_proto_ops *const weft_protocols[] = {
	&weft_proto_beb,
	&weft_proto_seq,
	&weft_proto_bracha,
	&weft_proto_amortized,
	&weft_proto_coded,
	&weft_proto_echo,
	&weft_proto_node,
	NULL,
};

/* Other names genesis files use: "dag" is the node stack (DAG consensus
 * with the ledger) it has always meant. */
static const struct {
	const char *name;
	const struct weft_proto_ops *ops;
} aliases[] = {
	{"dag", &weft_proto_node},
};

const struct weft_proto_ops *weft_proto_find(const char *name)
{
	for (size_t i = 0; weft_protocols[i]; i++)
		if (strcmp(weft_protocols[i]->name, name) == 0)
			return weft_protocols[i];
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcmp(aliases[i].name, name) == 0)
			return aliases[i].ops;
	return NULL;
}
