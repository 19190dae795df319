/* brb_compare.c - the BRB measurements of issue 5, side by side in one run
 * on the deterministic simulator: for each protocol, n and payload size, one
 * broadcast by an honest node under a constant 10 ms link latency, with
 * the catch-up interval beyond the run so that only the protocol's own
 * messages count (catch-up costs n^2 small STATUS messages every
 * resend_ms, whatever the load); reports
 * messages and bytes on the wire per delivered message, their ratio to
 * n|m|, and latency in milliseconds and in rounds (latency / 10 ms).  Then
 * the amortized protocol's steady state (a stream of broadcasts) and its
 * fallback path (a sender that omits one node, which must pull).
 * Output: a markdown table on stdout and gnuplot data in the file argv[1]. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "weft/crypto.h"

struct result {
	double msgs, bytes, p50, max;
	long long pulls, optimistic, fallback;
	int violations;
};

static int measure(const char *scenario, struct result *r)
{
	struct sim_scenario sc;
	char err[512];
	if (sim_scenario_parse(&sc, scenario, "bench", err, sizeof(err)) != 0) {
		fprintf(stderr, "scenario: %s\n", err);
		return -1;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct sim_run_result res;
	int rc = sim_run(&sc, 1, &(struct sim_run_opts){0}, out, &res, err, sizeof(err));
	fclose(out);
	if (rc != 0) {
		fprintf(stderr, "run: %s\n", err);
		free(buf);
		sim_scenario_free(&sc);
		return -1;
	}
	json_t *doc = json_loads(buf, 0, NULL);
	json_t *m = json_object_get(doc, "messages"), *lat = json_object_get(doc, "latency_ms"),
	       *mt = json_object_get(doc, "metrics");
	double requests = (double)json_integer_value(json_object_get(doc, "requests"));
	r->msgs = (double)json_integer_value(json_object_get(m, "sent")) / requests;
	r->bytes = (double)json_integer_value(json_object_get(m, "bytes")) / requests;
	r->p50 = json_number_value(json_object_get(lat, "p50"));
	r->max = json_number_value(json_object_get(lat, "max"));
	r->pulls = json_integer_value(json_object_get(mt, "amortized.pulls"));
	r->optimistic = json_integer_value(json_object_get(mt, "amortized.optimistic"));
	r->fallback = json_integer_value(json_object_get(mt, "amortized.fallback"));
	r->violations = res.violations;
	json_decref(doc);
	free(buf);
	sim_scenario_free(&sc);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const protocols[] = {"bracha", "echo", "coded", "amortized"};
	static const unsigned ns[] = {4, 16, 64, 128};
	static const unsigned sizes[] = {1024, 65536, 1048576};
	FILE *dat = argc > 1 ? fopen(argv[1], "w") : NULL;
	weft_crypto_init();
	printf("| protocol | n | \\|m\\| | messages / delivery | bytes / delivery | bytes / (n\\|m\\|) | "
	       "latency p50 (ms) | latency max (ms) | rounds (max / 10 ms) |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
			if (dat)
				fprintf(dat, "%u %u", sizes[z], ns[k]);
			for (size_t p = 0; p < sizeof(protocols) / sizeof(protocols[0]); p++) {
				char sc[1024];
				snprintf(sc, sizeof(sc),
					 "{\"n\":%u,\"protocol\":\"%s\",\"kv\":\"memory\",\"signatures\":\"ed25519\","
					 "\"params\":{\"max_payload\":2097152,\"resend_ms\":60000},"
					 "\"network\":{\"latency\":{\"dist\":\"constant\",\"ms\":10}},"
					 "\"workload\":[{\"node\":0,\"at_ms\":0,\"size\":%u}],\"duration_ms\":1000,"
					 "\"checkers\":[\"validity\",\"agreement\",\"integrity\",\"totality\"]}",
					 ns[k], protocols[p], sizes[z]);
				struct result r;
				if (measure(sc, &r) != 0)
					return 1;
				double nm = (double)ns[k] * sizes[z];
				printf("| %s | %u | %u | %.0f | %.0f | %.2f | %.1f | %.1f | %.1f |%s\n", protocols[p], ns[k],
				       sizes[z], r.msgs, r.bytes, r.bytes / nm, r.p50, r.max, r.max / 10.0,
				       r.violations ? " VIOLATION" : "");
				if (dat)
					fprintf(dat, " %.4f", r.bytes / nm);
				fflush(stdout);
			}
			if (dat)
				fprintf(dat, "\n");
		}
	}
	if (dat)
		fclose(dat);

	/* Amortized in steady state, and its fallback path. */
	printf("\n| amortized scenario | latency p50 (ms) | rounds (p50 / 10 ms) | optimistic | fallback | pulls |\n");
	printf("|---|---|---|---|---|---|\n");
	static const char *const shapes[][2] = {
		{"stream of 20 broadcasts from node 0, every 10 ms, n = 16, 64 KiB",
		 "\"workload\":[{\"nodes\":[0],\"every_ms\":10,\"count\":20,\"size\":65536}]"},
		{"same, node 0 omits node 5 (node 5 must pull)",
		 "\"workload\":[{\"nodes\":[0],\"every_ms\":10,\"count\":20,\"size\":65536}],"
		 "\"faults\":[{\"kind\":\"omission\",\"nodes\":[0],\"peers\":[5],\"direction\":\"send\"}],"
		 "\"expect_violation\":true"},
	};
	for (size_t s = 0; s < 2; s++) {
		char sc[1024];
		snprintf(sc, sizeof(sc),
			 "{\"n\":16,\"protocol\":\"amortized\",\"kv\":\"memory\","
			 "\"network\":{\"latency\":{\"dist\":\"constant\",\"ms\":10}},%s,\"duration_ms\":5000,"
			 "\"checkers\":[\"agreement\",\"integrity\",\"totality\"]}",
			 shapes[s][1]);
		struct result r;
		if (measure(sc, &r) != 0)
			return 1;
		printf("| %s | %.1f | %.1f | %lld | %lld | %lld |%s\n", shapes[s][0], r.p50, r.p50 / 10.0, r.optimistic,
		       r.fallback, r.pulls, r.violations ? " VIOLATION" : "");
	}
	return 0;
}
