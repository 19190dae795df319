/* store_chain.c - the chunk pipeline's chain limit on one core (issue 15),
 * driven by tests/bench/store_chain.sh.
 *
 *   store_chain [--mib N] [--chunk-kib K] [--passes P] [--cpu C]
 *
 * Over N MiB (default 256) of random data in memory, in one thread (pinned
 * to CPU C when given), each stage of the put pipeline alone, P passes
 * (default 2) over all of the data:
 *   cdc     FastCDC (storage/cdc.c) with the default parameters (avg 1 MiB)
 *           and a random key, weft_cdc_update over the whole buffer;
 *   aead    crypto_aead_xchacha20poly1305_ietf_encrypt of each K KiB chunk
 *           (default 1024) into one output buffer, a fresh nonce per chunk;
 *   merkle  weft_merkle_root (storage/merkle.c: BLAKE2b-256 over 4 KiB
 *           blocks) of each K KiB chunk;
 * then "chain_limit", 1 / (1/cdc + 1/aead + 1/merkle): what one core could
 * do running the three one after the other with nothing else, and
 * "pipeline", the three in sequence as the put path runs them: each
 * CDC chunk encrypted, then its ciphertext (and tag) Merkle-rooted while
 * still in cache.
 *
 * One line of JSON per measurement on stdout: bytes, seconds, MB/s (10^6
 * bytes) by the wall clock and per CPU second of this thread
 * (CLOCK_THREAD_CPUTIME_ID), and "others", how many cores processes outside
 * the benchmark kept busy meanwhile (from /proc/stat), since their load on
 * a shared machine, not the code, can set a wall-clock result. */
#include <getopt.h>
#include <sched.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft/crypto.h"
#include "weft/merkle.h"
#include "weft/store_cdc.h"

#define MiB ((size_t)1 << 20)

struct rate {
	double bytes, wall, cpu, others;
};

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds the whole machine has been busy (everything but idle and
 * iowait), from /proc/stat; -1 when it cannot be read. */
static double host_busy_s(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	if (f == NULL)
		return -1;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		       &v[6], &v[7]);
	fclose(f);
	if (n != 8)
		return -1;
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

struct timer {
	double wall, cpu, busy;
};

static void timer_start(struct timer *t)
{
	t->busy = host_busy_s();
	t->cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
	t->wall = clock_s(CLOCK_MONOTONIC);
}

static struct rate timer_stop(const struct timer *t, double bytes)
{
	struct rate r = { bytes, clock_s(CLOCK_MONOTONIC) - t->wall, clock_s(CLOCK_THREAD_CPUTIME_ID) - t->cpu, -1 };
	double busy = host_busy_s();
	if (t->busy >= 0 && busy >= 0 && r.wall > 0) {
		r.others = (busy - t->busy - r.cpu) / r.wall;
		if (r.others < 0)
			r.others = 0;
	}
	return r;
}

static void print_rate(const char *what, struct rate r, const char *extra)
{
	printf("{\"measure\":\"%s\",\"bytes\":%.0f,\"seconds\":%.3f,\"mb_per_s\":%.1f,\"cpu_s\":%.3f,"
	       "\"mb_per_cpu_s\":%.1f,\"others\":%.2f%s}\n",
	       what, r.bytes, r.wall, r.bytes / r.wall / 1e6, r.cpu, r.cpu > 0 ? r.bytes / r.cpu / 1e6 : 0, r.others,
	       extra);
	fflush(stdout);
}

/* 1 / sum(1 / rate) of the three stages, by the wall clock and per CPU second. */
static void print_chain(const struct rate *s, size_t n)
{
	double wall = 0, cpu = 0;
	for (size_t i = 0; i < n; i++) {
		wall += s[i].wall / s[i].bytes;
		cpu += s[i].cpu / s[i].bytes;
	}
	printf("{\"measure\":\"chain_limit\",\"mb_per_s\":%.1f,\"mb_per_cpu_s\":%.1f}\n", 1 / wall / 1e6,
	       1 / cpu / 1e6);
	fflush(stdout);
}

/* Keeps the compiler from dropping work whose result nobody reads. */
static volatile uint8_t sink;

int main(int argc, char **argv)
{
	size_t mib = 256, chunk = MiB;
	int passes = 2, cpu = -1, opt;
	static const struct option longopts[] = {
		{ "mib", required_argument, NULL, 'm' },   { "chunk-kib", required_argument, NULL, 'k' },
		{ "passes", required_argument, NULL, 'p' }, { "cpu", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			mib = strtoul(optarg, NULL, 10);
			break;
		case 'k':
			chunk = strtoul(optarg, NULL, 10) * 1024;
			break;
		case 'p':
			passes = atoi(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: store_chain [--mib N] [--chunk-kib K] [--passes P] [--cpu C]\n");
			return 2;
		}
	}
	if (mib == 0 || chunk == 0 || passes < 1 || weft_crypto_init() != 0)
		return 2;
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0) {
			perror("sched_setaffinity");
			return 1;
		}
	}

	size_t len = mib * MiB;
	struct weft_cdc_params params = { 0, 0, 0 };
	weft_cdc_params_check(&params);
	size_t outmax = (params.max > chunk ? params.max : chunk) + crypto_aead_xchacha20poly1305_ietf_ABYTES;
	uint8_t *data = malloc(len), *out = malloc(outmax);
	uint8_t key[32], nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES] = { 0 }, root[WEFT_MERKLE_HASH];
	if (data == NULL || out == NULL)
		return 1;
	randombytes_buf(data, len);
	memset(out, 0, outmax);
	randombytes_buf(key, sizeof(key));
	struct weft_cdc *cdc;
	if (weft_cdc_new(&cdc, key, NULL) != 0)
		return 1;

	struct rate stage[3];
	struct timer t;
	double total = (double)len * passes;
	size_t chunks = 0;
	char extra[96];

	/* CDC alone. */
	timer_start(&t);
	for (int p = 0; p < passes; p++) {
		struct weft_cdc_state s = { 0 };
		size_t off = 0;
		while (off < len) {
			bool cut;
			off += weft_cdc_update(cdc, &s, data + off, len - off, &cut);
			chunks += cut;
		}
		chunks += weft_cdc_finish(&s) > 0;
	}
	stage[0] = timer_stop(&t, total);
	snprintf(extra, sizeof(extra), ",\"chunks\":%zu,\"mean_chunk\":%.0f", chunks / passes,
		 (double)len * passes / (double)chunks);
	print_rate("cdc", stage[0], extra);

	/* AEAD alone, fixed-size chunks. */
	uint64_t ctr = 0;
	timer_start(&t);
	for (int p = 0; p < passes; p++) {
		for (size_t off = 0; off < len; off += chunk) {
			size_t n = len - off < chunk ? len - off : chunk;
			unsigned long long clen;
			memcpy(nonce, &ctr, sizeof(ctr));
			ctr++;
			crypto_aead_xchacha20poly1305_ietf_encrypt(out, &clen, data + off, n, NULL, 0, NULL, nonce, key);
			sink ^= out[clen - 1];
		}
	}
	stage[1] = timer_stop(&t, total);
	snprintf(extra, sizeof(extra), ",\"chunk\":%zu", chunk);
	print_rate("aead", stage[1], extra);

	/* Merkle alone, fixed-size chunks. */
	timer_start(&t);
	for (int p = 0; p < passes; p++) {
		for (size_t off = 0; off < len; off += chunk) {
			size_t n = len - off < chunk ? len - off : chunk;
			weft_merkle_root(root, data + off, n);
			sink ^= root[0];
		}
	}
	stage[2] = timer_stop(&t, total);
	print_rate("merkle", stage[2], extra);
	print_chain(stage, 3);

	/* The three in sequence, chunk by chunk, as the put path runs them. */
	timer_start(&t);
	for (int p = 0; p < passes; p++) {
		struct weft_cdc_state s = { 0 };
		size_t off = 0, start = 0;
		while (start < len) {
			bool cut = false;
			if (off < len)
				off += weft_cdc_update(cdc, &s, data + off, len - off, &cut);
			if (!cut && off < len)
				continue;
			if (!cut)
				weft_cdc_finish(&s);
			unsigned long long clen;
			memcpy(nonce, &ctr, sizeof(ctr));
			ctr++;
			crypto_aead_xchacha20poly1305_ietf_encrypt(out, &clen, data + start, off - start, NULL, 0, NULL,
								   nonce, key);
			weft_merkle_root(root, out, (size_t)clen);
			sink ^= root[0];
			start = off;
		}
	}
	print_rate("pipeline", timer_stop(&t, total), "");

	weft_cdc_free(cdc);
	free(out);
	free(data);
	return 0;
}
