/* config.h - weftd's INI configuration: one table of keys with types,
 * bounds, defaults and help (src/lib/config.c), loaded through inih.
 *
 * Errors name the file, the line and the key:
 *   weft.conf:12: unknown key 'max_fram' in section [rpc]
 *   weft.conf:3: [db] map_size: '12X' is not a size (use e.g. 512MiB)
 * Sizes accept k/M/G/T and KiB/MiB/GiB/TiB suffixes (both powers of 1024). */
#ifndef WEFT_CONFIG_H
#define WEFT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft/log.h"

struct weft_config {
	/* [node] */
	char *node_genesis;             /* genesis file (relative: to the data dir); NULL: one-node committee */
	char *node_listen;              /* host:port to listen on; NULL/empty: our genesis address */
	/* [net] */
	uint64_t net_max_frame;         /* largest protocol message */
	uint64_t net_queue_hwm;         /* per-peer queued bytes that signal backpressure */
	uint64_t net_queue_max;         /* per-peer queued bytes beyond which messages are dropped */
	uint64_t net_handshake_timeout_ms;
	uint64_t net_idle_timeout_ms;
	uint64_t net_keepalive_ms;
	uint64_t net_reconnect_min_ms;
	uint64_t net_reconnect_max_ms;
	/* [fault] */
	bool fault_enabled;
	/* [metrics] */
	char *metrics_listen;           /* host:port for the Prometheus endpoint; NULL/empty: off */
	/* [log] */
	char *log_file;                 /* NULL or "-": stderr */
	enum weft_log_level log_level;
	/* [db] */
	uint64_t db_map_size;
	bool db_no_sync;
	/* [store] */
	uint64_t store_map_size;
	uint64_t store_gc_delay_ms;
	/* [rpc] */
	uint64_t rpc_max_frame;
	uint64_t rpc_max_clients;
	uint64_t rpc_partial_timeout_ms;
	uint64_t rpc_idle_timeout_ms;
	uint64_t rpc_max_outbuf;
	uint64_t rpc_subscriber_lag_ms;
};

/* Fills cfg with the defaults of every key. */
void weft_config_defaults(struct weft_config *cfg);
/* Loads path over the current values.  0, or WEFT_ECONFIG with a message
 * (file, line, key, problem) in err; WEFT_NOTFOUND when path does not exist. */
int weft_config_load(struct weft_config *cfg, const char *path, char *err, size_t errlen);
/* Sets one key from a string, as a config line would ("rpc", "max_frame", "2MiB"). */
int weft_config_set(struct weft_config *cfg, const char *section, const char *key, const char *value,
		    char *err, size_t errlen);
/* Writes every key with its type, default and help, as a commented INI file. */
void weft_config_describe(FILE *out);
void weft_config_free(struct weft_config *cfg);

/* Parses a size such as "4096", "64KiB", "1G": a number as weft_parse_u64
 * reads it (no sign, space or leading zero), then an optional unit.  0, or
 * WEFT_EINVAL with *out untouched. */
int weft_parse_size(const char *s, uint64_t *out);

#endif
