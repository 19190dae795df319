/* docker_testnet_args.c - tools/docker-testnet.sh refuses bad options before
 * it writes or starts anything (issue 14's bad input): N out of range, more
 * Byzantine nodes than f, a Byzantine index out of range or given twice, an
 * unknown option, DAG parameters for another protocol.  Each gives exit
 * status 2, a message naming the option, and no directory.  Needs no docker:
 * the checks run first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/testutil.h"
#include "../tap.h"

struct bad_case {
	const char *args[8];
	const char *names; /* the message must contain this */
};

static const struct bad_case cases[] = {
	{{"--nodes", "0"}, "--nodes"},
	{{"--nodes", "65"}, "--nodes"},
	{{"--nodes", "four"}, "--nodes"},
	{{"--nodes", "4", "--byzantine", "1=bad_refs", "--byzantine", "2=bad_refs"}, "f = 1"},
	{{"--nodes", "4", "--byzantine", "4=bad_refs"}, "--byzantine"},
	{{"--nodes", "7", "--byzantine", "1=bad_refs", "--byzantine", "1=withhold"}, "--byzantine"},
	{{"--nodes", "4", "--frob", "1"}, "--frob"},
	{{"--nodes", "4", "--protocol", "bracha", "--d", "2"}, "--d"},
};

int main(void)
{
	size_t ncases = sizeof(cases) / sizeof(cases[0]);
	plan((int)(3 * ncases));
	char *tmp = tu_tmpdir("docker-args");
	char *dir = tu_path(tmp, "net");
	char script[1024];
	const char *src = getenv("WEFT_SRC");
	snprintf(script, sizeof(script), "%s/tools/docker-testnet.sh", src ? src : ".");
	for (size_t i = 0; i < ncases; i++) {
		char *argv[16] = {"/bin/sh", script, "gen", "--dir", dir};
		int argc = 5;
		for (int k = 0; cases[i].args[k]; k++)
			argv[argc++] = (char *)cases[i].args[k];
		argv[argc] = NULL;
		struct tu_run r;
		is_int(tu_run(&r, argv, 10000, -1), 2, "case %zu: exit status 2", i);
		ok(r.err && strstr(r.err, cases[i].names), "case %zu: the message names %s (%s)", i, cases[i].names,
		   r.err ? strtok(r.err, "\n") : "");
		struct stat st;
		ok(stat(dir, &st) != 0, "case %zu: nothing written", i);
		tu_run_free(&r);
	}
	tu_rmtree(tmp);
	free(dir);
	free(tmp);
	return done_testing();
}
