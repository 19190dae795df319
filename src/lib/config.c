/* config.c - the table of weftd's configuration keys and the INI loader.
 *
 * Each key is one row: section, name, type, where it lives in struct
 * weft_config, bounds, default and a help line.  Defaults are applied by
 * parsing the default strings through the same code as the file, so the
 * table is the single source of truth (weftd --describe-config prints it). */
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weft/config.h"
#include "weft/err.h"
#include "weft/util.h"

enum key_type { KEY_STRING, KEY_UINT, KEY_SIZE, KEY_BOOL, KEY_LOG_LEVEL };

struct config_key {
	const char *section;
	const char *name;
	enum key_type type;
	size_t offset;
	uint64_t min, max;
	const char *def;
	const char *help;
};

#define FIELD(f) offsetof(struct weft_config, f)

static const struct config_key config_keys[] = {
	{"node", "genesis", KEY_STRING, FIELD(node_genesis), 0, 0, "",
	 "genesis file of the committee (relative paths: to the data dir); empty: a one-node committee"},
	{"node", "listen", KEY_STRING, FIELD(node_listen), 0, 0, "",
	 "host:port for peer connections; empty: this node's address in the genesis file"},
	{"net", "max_frame", KEY_SIZE, FIELD(net_max_frame), 1024, 256 << 20, "8MiB",
	 "largest protocol message a peer may send; a larger one cuts the link"},
	{"net", "queue_hwm", KEY_SIZE, FIELD(net_queue_hwm), 64 << 10, (uint64_t)16 << 30, "32MiB",
	 "bytes queued for one peer above which sends report backpressure"},
	{"net", "queue_max", KEY_SIZE, FIELD(net_queue_max), 64 << 10, (uint64_t)64 << 30, "256MiB",
	 "bytes queued for one peer above which new messages to it are dropped (and counted)"},
	{"net", "handshake_timeout_ms", KEY_UINT, FIELD(net_handshake_timeout_ms), 100, 600000, "10000",
	 "a peer that has not completed the secure handshake by then is dropped"},
	{"net", "idle_timeout_ms", KEY_UINT, FIELD(net_idle_timeout_ms), 500, 3600000, "30000",
	 "a link with no bytes received for this long (or a record left half-sent) is dropped"},
	{"net", "keepalive_ms", KEY_UINT, FIELD(net_keepalive_ms), 100, 600000, "5000",
	 "interval of keepalive pings (which also measure the round-trip time)"},
	{"net", "reconnect_min_ms", KEY_UINT, FIELD(net_reconnect_min_ms), 10, 600000, "200",
	 "first reconnect delay; doubles up to reconnect_max_ms, with jitter"},
	{"net", "reconnect_max_ms", KEY_UINT, FIELD(net_reconnect_max_ms), 10, 3600000, "10000",
	 "largest reconnect delay"},
	{"fault", "enabled", KEY_BOOL, FIELD(fault_enabled), 0, 0, "false",
	 "allow the runtime fault layer (RPC fault.set, fault.clear, fault.list)"},
	{"metrics", "listen", KEY_STRING, FIELD(metrics_listen), 0, 0, "",
	 "host:port of the Prometheus /metrics endpoint; empty: off"},
	{"log", "file", KEY_STRING, FIELD(log_file), 0, 0, "-",
	 "log file path; '-' is stderr; reopened on SIGHUP"},
	{"log", "level", KEY_LOG_LEVEL, FIELD(log_level), 0, 0, "info", "debug, info, warn or error"},
	{"db", "map_size", KEY_SIZE, FIELD(db_map_size), 1 << 20, (uint64_t)1 << 40, "1GiB",
	 "LMDB map size: the most the database may hold"},
	{"db", "no_sync", KEY_BOOL, FIELD(db_no_sync), 0, 0, "false",
	 "skip fsync on commit (faster, loses the last commits on power failure)"},
	{"store", "map_size", KEY_SIZE, FIELD(store_map_size), 16 << 20, (uint64_t)1 << 50, "64GiB",
	 "the chunk store's LMDB map size (DATADIR/chunks): the most the node's shares may take; a sparse file"},
	{"store", "gc_delay_ms", KEY_UINT, FIELD(store_gc_delay_ms), 0, (uint64_t)30 * 86400000, "600000",
	 "how long an unreferenced chunk is kept before garbage collection frees it (a new reference keeps it)"},
	{"rpc", "max_frame", KEY_SIZE, FIELD(rpc_max_frame), 1024, 64 << 20, "1MiB",
	 "largest request accepted on the RPC socket"},
	{"rpc", "max_clients", KEY_UINT, FIELD(rpc_max_clients), 1, 4096, "64",
	 "concurrent RPC connections"},
	{"rpc", "partial_timeout_ms", KEY_UINT, FIELD(rpc_partial_timeout_ms), 100, 3600000, "10000",
	 "a request still incomplete after this long closes its connection"},
	{"rpc", "idle_timeout_ms", KEY_UINT, FIELD(rpc_idle_timeout_ms), 100, 86400000, "60000",
	 "a connection with no request, reply or subscription for this long is closed"},
	{"rpc", "max_outbuf", KEY_SIZE, FIELD(rpc_max_outbuf), 64 << 10, (uint64_t)1 << 32, "16MiB",
	 "unread output after which a client stops being read; a subscriber over it is cut"},
	{"rpc", "subscriber_lag_ms", KEY_UINT, FIELD(rpc_subscriber_lag_ms), 100, 600000, "5000",
	 "a subscriber is cut only once its unread notifications also pass this long at its recent rate"},
};

#define NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))

static __attribute__((format(printf, 3, 4))) int set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return WEFT_ECONFIG;
}

int weft_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {{"", 0},	  {"k", 10},   {"K", 10},   {"KiB", 10}, {"M", 20}, {"MiB", 20},
		     {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40}, {"B", 0}};
	size_t digits = strspn(s, "0123456789");
	const char *end = s + digits;
	uint64_t v;
	if (weft_parse_u64n(s, digits, &v) < 0)
		return WEFT_EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
				return WEFT_EINVAL;
			*out = v << units[i].shift;
			return 0;
		}
	}
	return WEFT_EINVAL;
}

static int set_value(struct weft_config *cfg, const struct config_key *k, const char *value, char *err,
		     size_t errlen)
{
	void *field = (char *)cfg + k->offset;
	uint64_t u;
	switch (k->type) {
	case KEY_STRING: {
		char *copy = strdup(value);
		if (copy == NULL)
			abort();
		free(*(char **)field);
		*(char **)field = copy;
		return 0;
	}
	case KEY_UINT:
	case KEY_SIZE: {
		int rc;
		if (k->type == KEY_SIZE) {
			rc = weft_parse_size(value, &u);
		} else {
			rc = weft_parse_u64(value, &u);
		}
		if (rc)
			return set_err(err, errlen, "[%s] %s: '%s' is not a %s", k->section, k->name, value,
				       k->type == KEY_SIZE ? "size (use e.g. 512MiB)" : "non-negative integer");
		if (u < k->min || u > k->max)
			return set_err(err, errlen, "[%s] %s: %s is out of range [%llu, %llu]", k->section,
				       k->name, value, (unsigned long long)k->min, (unsigned long long)k->max);
		*(uint64_t *)field = u;
		return 0;
	}
	case KEY_BOOL:
		if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1"))
			*(bool *)field = true;
		else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0"))
			*(bool *)field = false;
		else
			return set_err(err, errlen, "[%s] %s: '%s' is not a boolean (true or false)",
				       k->section, k->name, value);
		return 0;
	case KEY_LOG_LEVEL:
		if (weft_log_level_parse(value, (enum weft_log_level *)field) != 0)
			return set_err(err, errlen, "[%s] %s: '%s' is not a log level (debug, info, warn, error)",
				       k->section, k->name, value);
		return 0;
	}
	return set_err(err, errlen, "[%s] %s: bad key type", k->section, k->name);
}

int weft_config_set(struct weft_config *cfg, const char *section, const char *key, const char *value,
		    char *err, size_t errlen)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if (strcmp(k->section, section) == 0 && strcmp(k->name, key) == 0)
			return set_value(cfg, k, value, err, errlen);
	}
	return set_err(err, errlen, "unknown key '%s' in section [%s]", key, section);
}

void weft_config_defaults(struct weft_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < NKEYS; i++) {
		/* A default that does not parse is a bug in the table above. */
		if (set_value(cfg, &config_keys[i], config_keys[i].def, NULL, 0) != 0)
			abort();
	}
}

struct load_state {
	struct weft_config *cfg;
	FILE *f;
	int line;          /* lines read so far: the line of the current entry */
	int error_line;    /* line of the first bad entry, 0 when none */
	char msg[256];
};

/* fgets for inih that counts lines, so entry errors carry their own line. */
static char *read_line(char *buf, int size, void *stream)
{
	struct load_state *st = stream;
	char *r = fgets(buf, size, st->f);
	if (r)
		st->line++;
	return r;
}

static int on_ini_entry(void *user, const char *section, const char *name, const char *value)
{
	struct load_state *st = user;
	if (st->error_line)
		return 0;
	if (weft_config_set(st->cfg, section, name, value, st->msg, sizeof(st->msg)) != 0) {
		st->error_line = st->line;
		return 0;
	}
	return 1;
}

int weft_config_load(struct weft_config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		if (errno == ENOENT) {
			set_err(err, errlen, "%s: no such file", path);
			return WEFT_NOTFOUND;
		}
		return set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
	}
	struct stat sb;
	if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
		fclose(f);
		return set_err(err, errlen, "%s: not a regular file", path);
	}
	struct load_state st = {.cfg = cfg, .f = f};
	/* inih keeps going after an error and returns the first bad line, which
	 * is a syntax error unless it is the line of our first bad entry. */
	int line = ini_parse_stream(read_line, &st, on_ini_entry, &st);
	fclose(f);
	if (line == 0)
		return 0;
	if (line < 0)
		return set_err(err, errlen, "%s: cannot read", path);
	if (st.error_line == line)
		return set_err(err, errlen, "%s:%d: %s", path, line, st.msg);
	return set_err(err, errlen, "%s:%d: syntax error (expected [section] or key = value)", path, line);
}

void weft_config_describe(FILE *out)
{
	const char *section = "";
	fprintf(out, "# weftd configuration: every key with its default.\n");
	for (size_t i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if (strcmp(section, k->section) != 0) {
			section = k->section;
			fprintf(out, "\n[%s]\n", section);
		}
		fprintf(out, "# %s\n%s = %s\n", k->help, k->name, k->def);
	}
}

void weft_config_free(struct weft_config *cfg)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (config_keys[i].type == KEY_STRING) {
			char **p = (char **)((char *)cfg + config_keys[i].offset);
			free(*p);
			*p = NULL;
		}
	}
}
