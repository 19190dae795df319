/* main.c - weft-service: sell a command as a service on a node's atomic
 * service channels (docs/asc.md).
 *
 *   weft-service (--datadir DIR | --socket PATH) NAME -- COMMAND [ARG...]
 *
 * Each request's payload goes to COMMAND's standard input; what it writes
 * on its standard output is the result the client pays for. */
#include <stdio.h>
#include <string.h>

#include "service.h"

static int usage(void)
{
	fprintf(stderr, "usage: weft-service (--datadir DIR | --socket PATH) NAME -- COMMAND [ARG...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	char sock[4096];
	const char *name = NULL;
	int i = 1;
	sock[0] = '\0';
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--datadir") == 0 && i + 1 < argc)
			snprintf(sock, sizeof(sock), "%s/rpc.sock", argv[++i]);
		else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
			snprintf(sock, sizeof(sock), "%s", argv[++i]);
		else if (argv[i][0] != '-' && name == NULL)
			name = argv[i];
		else
			return usage();
	}
	if (sock[0] == '\0' || name == NULL || i + 1 >= argc)
		return usage();
	return weft_service_run(sock, name, argv + i + 1);
}
