/* tests/fuzz/config.c - libFuzzer target for weftd's INI configuration
 * (src/lib/config.c through inih): the input is the file, loaded with
 * weft_config_load over the defaults (through an in-memory file).
 * abort()s when a refusal is not WEFT_ECONFIG with a message naming the
 * file, or when an accepted file leaves a value outside its key's bounds.
 * The input, split at its first two NUL or newline bytes into section,
 * key and value, also goes to weft_config_set, and its first line to
 * weft_parse_size.
 *
 * With WEFT_FUZZ_SEEDS=DIR it writes a few valid files and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fuzzfile.h"
#include "lib/protofuzz.h"
#include "weft/config.h"
#include "weft/err.h"

static const char *const seeds[][2] = {
	{"node", "# a node\n[node]\ngenesis = ../genesis.json\nlisten = 127.0.0.1:7100\n\n[log]\nfile = -\n"
		 "level = debug\n"},
	{"sizes", "[net]\nmax_frame = 4MiB\nqueue_hwm = 32M\nqueue_max = 1G\n[db]\nmap_size = 1TiB\nno_sync = true\n"
		  "[rpc]\nmax_frame = 1024\nmax_outbuf = 64KiB\n"},
	{"everything", "[node]\ngenesis=g.json\n[net]\nhandshake_timeout_ms = 100\nidle_timeout_ms=500\n"
		       "keepalive_ms = 100\nreconnect_min_ms = 10\nreconnect_max_ms = 3600000\n[fault]\nenabled = yes\n"
		       "[metrics]\nlisten = [::1]:9100\n[rpc]\nmax_clients = 4096\npartial_timeout_ms = 100\n"
		       "idle_timeout_ms = 86400000\n; comment\n"},
	{"set", "rpc\nmax_frame\n2MiB"},
};

static void write_seeds(const char *dir)
{
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		pf_write_file(dir, seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (getenv("WEFT_FUZZ_SEEDS"))
		write_seeds(getenv("WEFT_FUZZ_SEEDS"));
	return 0;
}

/* The bounds of the table in src/lib/config.c. */
static void check_bounds(const struct weft_config *c)
{
	pf_check(c->net_max_frame >= 1024 && c->net_max_frame <= 256 << 20, "net.max_frame");
	pf_check(c->net_queue_hwm >= 64 << 10 && c->net_queue_hwm <= (uint64_t)16 << 30, "net.queue_hwm");
	pf_check(c->net_queue_max >= 64 << 10 && c->net_queue_max <= (uint64_t)64 << 30, "net.queue_max");
	pf_check(c->net_handshake_timeout_ms >= 100 && c->net_handshake_timeout_ms <= 600000, "net.handshake_timeout_ms");
	pf_check(c->net_idle_timeout_ms >= 500 && c->net_idle_timeout_ms <= 3600000, "net.idle_timeout_ms");
	pf_check(c->net_keepalive_ms >= 100 && c->net_keepalive_ms <= 600000, "net.keepalive_ms");
	pf_check(c->net_reconnect_min_ms >= 10 && c->net_reconnect_min_ms <= 600000, "net.reconnect_min_ms");
	pf_check(c->net_reconnect_max_ms >= 10 && c->net_reconnect_max_ms <= 3600000, "net.reconnect_max_ms");
	pf_check(c->db_map_size >= 1 << 20 && c->db_map_size <= (uint64_t)1 << 40, "db.map_size");
	pf_check(c->rpc_max_frame >= 1024 && c->rpc_max_frame <= 64 << 20, "rpc.max_frame");
	pf_check(c->rpc_max_clients >= 1 && c->rpc_max_clients <= 4096, "rpc.max_clients");
	pf_check(c->rpc_partial_timeout_ms >= 100 && c->rpc_partial_timeout_ms <= 3600000, "rpc.partial_timeout_ms");
	pf_check(c->rpc_idle_timeout_ms >= 100 && c->rpc_idle_timeout_ms <= 86400000, "rpc.idle_timeout_ms");
	pf_check(c->rpc_max_outbuf >= 64 << 10 && c->rpc_max_outbuf <= (uint64_t)1 << 32, "rpc.max_outbuf");
	pf_check(c->log_level == WEFT_LOG_DEBUG || c->log_level == WEFT_LOG_INFO || c->log_level == WEFT_LOG_WARN ||
			 c->log_level == WEFT_LOG_ERROR,
		 "log.level");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct weft_config cfg;
	char err[512] = "";
	const char *path = ff_input_path(data, size);
	weft_config_defaults(&cfg);
	check_bounds(&cfg);
	int rc = weft_config_load(&cfg, path, err, sizeof(err));
	pf_check(rc == 0 || (rc == WEFT_ECONFIG && strncmp(err, path, strlen(path)) == 0),
		 "a refusal is WEFT_ECONFIG naming the file");
	check_bounds(&cfg);
	weft_config_free(&cfg);

	/* section NUL|LF key NUL|LF value */
	char *text = ff_input_text(data, size), *part[3] = {NULL, NULL, NULL};
	part[0] = text;
	size_t k = 1;
	for (size_t i = 0; i < size && k < 3; i++)
		if (text[i] == '\0' || text[i] == '\n') {
			text[i] = '\0';
			part[k++] = text + i + 1;
		}
	uint64_t v;
	if (weft_parse_size(part[0], &v) == 0)
		pf_check(part[0][0] >= '0' && part[0][0] <= '9', "a size starts with a digit");
	if (k == 3) {
		weft_config_defaults(&cfg);
		rc = weft_config_set(&cfg, part[0], part[1], part[2], err, sizeof(err));
		pf_check(rc == 0 || (rc < 0 && err[0] != '\0'), "weft_config_set: 0 or a message");
		check_bounds(&cfg);
		weft_config_free(&cfg);
	}
	free(text);
	return 0;
}
