/* tests/fuzz/scenario.c - libFuzzer target for weft-sim's scenario files
 * (src/sim/scenario.c; "a scenario file is untrusted input"): the input
 * is the file, loaded with sim_scenario_load (through an in-memory file)
 * and, up to its first NUL, parsed with sim_scenario_parse.  abort()s when
 * the two disagree on input without a NUL, when a refusal has no message,
 * or when an accepted scenario breaks what sim.h promises (n in
 * 1..SIM_MAX_NODES, f < n, node indices below n, start before stop).
 *
 * An accepted scenario with n <= 7 then runs one seed through the engine
 * (sim_run), cut down to a run of milliseconds (at most 200 ms of virtual
 * time, 8 requests of at most 4 KiB per workload line, the in-memory
 * store, the fast signatures): what the parser lets through must not
 * crash the engine.
 *
 * With WEFT_FUZZ_SEEDS=DIR it copies the scenarios of tests/sim (run from
 * the top of the tree) to DIR and exits. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "lib/fuzzfile.h"
#include "lib/protofuzz.h"
#include "weft/crypto.h"
#include "weft/err.h"

static FILE *devnull;

static void copy_dir(const char *from, const char *to, const char *prefix)
{
	DIR *d = opendir(from);
	struct dirent *e;
	pf_check(d != NULL, "tests/sim (run from the top of the tree)");
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		char path[4096], name[512], buf[65536];
		snprintf(path, sizeof(path), "%s/%s", from, e->d_name);
		snprintf(name, sizeof(name), "%s%s", prefix, e->d_name);
		FILE *f = fopen(path, "rb");
		pf_check(f != NULL, "open a scenario");
		size_t len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		pf_write_file(to, name, buf, len);
	}
	closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pf_check(weft_crypto_init() == 0, "crypto init");
	if (getenv("WEFT_FUZZ_SEEDS")) {
		copy_dir("tests/sim", getenv("WEFT_FUZZ_SEEDS"), "");
		copy_dir("tests/sim/examples", getenv("WEFT_FUZZ_SEEDS"), "example-");
		exit(0);
	}
	devnull = fopen("/dev/null", "w");
	pf_check(devnull != NULL, "/dev/null");
	return 0;
}

static void check_nodes(const struct sim_scenario *sc, const uint32_t *nodes, uint32_t n, const char *what)
{
	for (uint32_t i = 0; i < n; i++)
		pf_check(nodes[i] < sc->n, what);
}

static void check(const struct sim_scenario *sc)
{
	pf_check(sc->n >= 1 && sc->n <= SIM_MAX_NODES && sc->f < sc->n, "n and f");
	pf_check(sc->protocol != NULL, "a protocol");
	pf_check(sc->params == NULL || pf_one_value(sc->params, sc->plen), "params: one msgpack value");
	for (size_t i = 0; i < sc->nfaults; i++) {
		const struct sim_fault *f = &sc->faults[i];
		check_nodes(sc, f->nodes, f->nnodes, "fault nodes below n");
		check_nodes(sc, f->peers, f->npeers, "fault peers below n");
		for (uint32_t g = 0; g < f->ngroups; g++)
			check_nodes(sc, f->groups[g], f->group_len[g], "partition groups below n");
		pf_check(f->start_us <= f->stop_us, "a fault starts before it stops");
		pf_check(f->params == NULL || pf_one_value(f->params, f->plen), "adversary params: one value");
	}
	for (size_t i = 0; i < sc->nwork; i++)
		check_nodes(sc, sc->work[i].nodes, sc->work[i].nnodes, "workload nodes below n");
	if (sc->net.directed)
		for (uint32_t i = 0; i < sc->n; i++)
			check_nodes(sc, sc->net.out[i], sc->net.out_len[i], "topology below n");
	bool *faulty = calloc(sc->n, sizeof(bool));
	pf_check(faulty != NULL, "calloc");
	pf_check(sim_scenario_faulty(sc, faulty) <= sc->n, "faulty count");
	free(faulty);
}

/* Cuts an accepted scenario down to a run of milliseconds: at most 200 ms
 * of virtual time, 8 requests a workload line of at most 4 KiB.  False
 * when it is too big to run at all (n > 7). */
static bool shrink(struct sim_scenario *sc)
{
	if (sc->n > 7)
		return false;
	if (sc->duration_us > 200000)
		sc->duration_us = 200000;
	for (size_t i = 0; i < sc->nwork; i++) {
		if (sc->work[i].count > 8)
			sc->work[i].count = 8;
		if (sc->work[i].size > 4096)
			sc->work[i].size = 4096;
	}
	sc->kv = SIM_KV_MEMORY;
	sc->signatures = SIM_SIG_FAST;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_scenario sc, sc2;
	char err[1024] = "", err2[1024] = "";
	int rc = sim_scenario_load(&sc, ff_input_path(data, size), err, sizeof(err));
	pf_check(rc == 0 || err[0] != '\0', "a refusal says why");

	char *text = ff_input_text(data, size);
	int rc2 = sim_scenario_parse(&sc2, text, "scenario.json", err2, sizeof(err2));
	free(text);
	if (memchr(data, 0, size) == NULL)
		pf_check((rc == 0) == (rc2 == 0), "load and parse agree");
	if (rc2 == 0)
		sim_scenario_free(&sc2);
	if (rc != 0)
		return 0;
	check(&sc);
	if (shrink(&sc)) {
		struct sim_run_opts opts = {0};
		struct sim_run_result res;
		sim_run(&sc, sc.nseeds ? sc.seeds[0] : 1, &opts, devnull, &res, err, sizeof(err));
	}
	sim_scenario_free(&sc);
	return 0;
}
