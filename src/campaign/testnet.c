/* testnet.c - the campaign's docker testnet, through tools/docker-testnet.sh
 * (gen, up, down, clean) and the facts its gen writes to DIR/testnet.env:
 * each node's container, address and data directory, whose rpc.sock the
 * runner calls from the host with the RPC client (weft/rpc_client.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "weft/err.h"
#include "weft/rpc_client.h"
#include "weft/util.h"

#include "campaign.h"

#define PROJECT "weft-campaign"
/* Apart from the default testnet's, so that a campaign never meets it. */
#define SUBNET "172.30.0.0/24"
#define METRICS_PORT "9300"
#define DEDUP_ROUNDS "dedup_rounds=1000000"

/* Runs the tool with args (NULL-terminated); 0 or WEFT_EIO with the end
 * of its output in err. */
static int tool(struct campaign_testnet *t, double timeout_s, bool uninterruptible, char *err, size_t errlen,
		char *const *args)
{
	char *argv[96] = {"sh", t->tool};
	size_t k = 2;
	for (size_t i = 0; args[i] && k < 95; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	char *out;
	int st = campaign_exec(argv, timeout_s, uninterruptible, t->log, &out);
	if (st != 0) {
		size_t len = strlen(out);
		const char *tail = len > 600 ? out + len - 600 : out;
		snprintf(err, errlen, "%s %s failed (%d): %s", t->tool, args[0], st, tail);
	}
	free(out);
	return st == 0 ? 0 : WEFT_EIO;
}

int campaign_docker(struct campaign_testnet *t, char *err, size_t errlen, ...)
{
	char *argv[32] = {"docker"};
	size_t k = 1;
	va_list ap;
	va_start(ap, errlen);
	for (char *a; k < 31 && (a = va_arg(ap, char *));)
		argv[k++] = a;
	va_end(ap);
	argv[k] = NULL;
	char *out;
	int st = campaign_exec(argv, 60, false, t->log, &out);
	if (st != 0) {
		out[strcspn(out, "\n")] = '\0';
		snprintf(err, errlen, "docker %s %s failed (%d): %s", argv[1], k > 2 ? argv[k - 1] : "", st, out);
	}
	free(out);
	return st == 0 ? 0 : WEFT_EIO;
}

/* KEY=value lines; a value may be double-quoted. */
static char *env_get(const char *env, const char *key)
{
	size_t klen = strlen(key);
	for (const char *line = env; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != '\0')) {
		if (strncmp(line, key, klen) != 0 || line[klen] != '=')
			continue;
		const char *v = line + klen + 1;
		size_t len = strcspn(v, "\n");
		if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
			v++;
			len -= 2;
		}
		char *s = weft_xmalloc(len + 1);
		memcpy(s, v, len);
		s[len] = '\0';
		return s;
	}
	return NULL;
}

int campaign_testnet_open(struct campaign_testnet *t, const char *toolpath, const char *dir, FILE *log, char *err,
			  size_t errlen)
{
	char path[4096], key[32];

	memset(t, 0, sizeof(*t));
	t->tool = weft_xstrdup(toolpath);
	t->dir = weft_xstrdup(dir);
	t->log = log;
	snprintf(path, sizeof(path), "%s/testnet.env", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot be read (was the testnet generated?)", path);
		return WEFT_EIO;
	}
	char *env = weft_xmalloc(1 << 16);
	size_t len = fread(env, 1, (1 << 16) - 1, f);
	env[len] = '\0';
	fclose(f);
	char *n = env_get(env, "N");
	t->n = n ? (uint32_t)atoi(n) : 0;
	free(n);
	t->network = env_get(env, "NETWORK");
	int rc = 0;
	if (t->n < 1 || t->n > CAMPAIGN_MAX_NODES || !t->network) {
		snprintf(err, errlen, "%s: no N (1 to %d) or NETWORK", path, CAMPAIGN_MAX_NODES);
		rc = WEFT_EIO;
	}
	for (uint32_t i = 0; i < t->n && rc == 0; i++) {
		snprintf(key, sizeof(key), "NODE%u_IP", i);
		t->ip[i] = env_get(env, key);
		snprintf(key, sizeof(key), "NODE%u_CONTAINER", i);
		t->container[i] = env_get(env, key);
		snprintf(key, sizeof(key), "NODE%u_DATADIR", i);
		char *datadir = env_get(env, key);
		if (!t->ip[i] || !t->container[i] || !datadir) {
			snprintf(err, errlen, "%s: node %u's IP, CONTAINER or DATADIR is missing", path, i);
			rc = WEFT_EIO;
		} else {
			t->socket[i] = weft_xmalloc(strlen(datadir) + 10);
			sprintf(t->socket[i], "%s/rpc.sock", datadir);
			if (strlen(t->socket[i]) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
				snprintf(err, errlen, "%s: too long for a Unix socket: choose a shorter --out", t->socket[i]);
				rc = WEFT_EINVAL;
			}
		}
		free(datadir);
	}
	free(env);
	return rc;
}

int campaign_testnet_gen(struct campaign_testnet *t, const struct campaign_manifest *m, const char *toolpath,
			 const char *dir, const char *image, FILE *log, char *err, size_t errlen)
{
	char *args[96], nodes[16], d[16], byz[CAMPAIGN_MAX_NODES][96], params[64][160];
	size_t k = 0, np = 0;
	struct campaign_testnet tmp = {.tool = (char *)toolpath, .log = log};

	snprintf(nodes, sizeof(nodes), "%u", m->n);
	args[k++] = "gen";
	args[k++] = "--dir";
	args[k++] = (char *)dir;
	args[k++] = "--nodes";
	args[k++] = nodes;
	args[k++] = "--project";
	args[k++] = PROJECT;
	args[k++] = "--subnet";
	args[k++] = SUBNET;
	args[k++] = "--metrics-port";
	args[k++] = METRICS_PORT;
	args[k++] = "--protocol";
	args[k++] = m->protocol;
	if (m->brb) {
		args[k++] = "--brb";
		args[k++] = m->brb;
	}
	if (m->mode) {
		args[k++] = "--mode";
		args[k++] = m->mode;
	}
	if (m->d) {
		snprintf(d, sizeof(d), "%u", m->d);
		args[k++] = "--d";
		args[k++] = d;
	}
	if (image) {
		args[k++] = "--image";
		args[k++] = (char *)image;
	}
	for (uint32_t i = 0; i < m->n; i++)
		if (m->byzantine & (1u << i)) {
			snprintf(byz[i], sizeof(byz[i]), "%u=%s", i, m->strategy[i]);
			args[k++] = "--byzantine";
			args[k++] = byz[i];
		}
	/* tx.status answers for what was committed within dedup_rounds:
	 * every acknowledged transaction must stay in view for the checks. */
	if (!m->params || !json_object_get(m->params, "dedup_rounds")) {
		args[k++] = "--param";
		args[k++] = DEDUP_ROUNDS;
	}
	const char *key;
	json_t *val;
	json_object_foreach(m->params, key, val) {
		if (np == 64 || k > 90)
			break;
		char *v = json_is_string(val) ? weft_xstrdup(json_string_value(val)) : json_dumps(val, JSON_ENCODE_ANY);
		snprintf(params[np], sizeof(params[np]), "%s=%s", key, v);
		free(v);
		args[k++] = "--param";
		args[k++] = params[np++];
	}
	args[k] = NULL;
	int rc = tool(&tmp, 120, false, err, errlen, args);
	if (rc < 0)
		return rc;
	return campaign_testnet_open(t, toolpath, dir, log, err, errlen);
}

int campaign_testnet_up(struct campaign_testnet *t, char *err, size_t errlen)
{
	char *args[] = {"up", "--dir", t->dir, "--timeout", "90", NULL};
	return tool(t, 150, false, err, errlen, args);
}

/* Whether containers, networks or volumes of the campaign's project are
 * still there (or docker cannot say). */
static bool project_left(FILE *log)
{
	static const char *const kinds[][3] = {{"ps", "-aq", NULL}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}};
	bool left = false;
	for (size_t k = 0; k < 3 && !left; k++) {
		char *argv[8] = {"docker", (char *)kinds[k][0], (char *)kinds[k][1]}, *out;
		size_t a = 3;
		if (kinds[k][2])
			argv[a++] = (char *)kinds[k][2];
		argv[a++] = "--filter";
		argv[a++] = "label=org.weft.testnet=" PROJECT;
		argv[a] = NULL;
		left = campaign_exec(argv, 30, true, log, &out) != 0 || out[strspn(out, " \n")] != '\0';
		free(out);
	}
	return left;
}

int campaign_testnet_down(struct campaign_testnet *t, char *err, size_t errlen)
{
	char *down[] = {"down", "--dir", t->dir, NULL};
	char *clean[] = {"clean", NULL};

	tool(t, 120, true, err, errlen, down);
	/* What down left of ours (a container it no longer knew) goes with
	 * clean, which removes every weft testnet: only then. */
	if (project_left(t->log))
		tool(t, 120, true, err, errlen, clean);
	if (!project_left(t->log))
		return 0;
	snprintf(err, errlen,
		 "containers, networks or volumes labelled org.weft.testnet=" PROJECT " are still there (docker ps -a, "
		 "docker network ls, docker volume ls)");
	return WEFT_EIO;
}

void campaign_testnet_logs(struct campaign_testnet *t, const char *dir)
{
	for (uint32_t i = 0; i < t->n; i++) {
		char path[4096], *out;
		char *argv[] = {"docker", "logs", "-t", t->container[i], NULL};
		snprintf(path, sizeof(path), "%s/node%u.log", dir, i);
		campaign_exec(argv, 60, true, NULL, &out);
		FILE *f = fopen(path, "w");
		if (f) {
			fputs(out, f);
			fclose(f);
		}
		free(out);
	}
}

bool campaign_docker_available(const char *toolpath, FILE *log, char **why)
{
	char *path = weft_xmalloc(strlen(toolpath) + 32);
	strcpy(path, toolpath);
	char *slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "docker-available.sh");
	char *argv[] = {"sh", path, NULL};
	bool ok = campaign_exec(argv, 60, false, log, why) == 0;
	(*why)[strcspn(*why, "\n")] = '\0';
	free(path);
	return ok;
}

bool campaign_testnet_leftovers(FILE *log, char **which)
{
	char *argv[] = {"docker", "ps", "-a", "--filter", "label=org.weft.testnet", "--format", "{{.Names}}", NULL};
	int st = campaign_exec(argv, 30, true, log, which);
	for (char *p = *which; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return st != 0 || (*which)[strspn(*which, " ")] != '\0';
}

void campaign_testnet_free(struct campaign_testnet *t)
{
	free(t->tool);
	free(t->dir);
	free(t->network);
	for (uint32_t i = 0; i < CAMPAIGN_MAX_NODES; i++) {
		free(t->ip[i]);
		free(t->container[i]);
		free(t->socket[i]);
	}
	memset(t, 0, sizeof(*t));
}

int campaign_rpc(const struct campaign_testnet *t, uint32_t i, const char *method, json_t *named, int timeout_ms,
		 json_t **result, char *err, size_t errlen)
{
	json_t *params = named ? json_pack("[O]", named) : json_array(), *error = NULL;
	int rc = weft_rpc_client_call_once(t->socket[i], method, params, timeout_ms, result, &error);
	json_decref(params);
	if (rc < 0) {
		snprintf(err, errlen, "node %u: %s: %s", i, method, weft_strerror(rc));
		return rc;
	}
	if (error) {
		const char *msg = json_string_value(json_object_get(error, "message"));
		snprintf(err, errlen, "node %u: %s: %s", i, method, msg ? msg : "error");
		json_decref(error);
		return WEFT_EIO;
	}
	return 0;
}
