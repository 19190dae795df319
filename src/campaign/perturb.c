/* perturb.c - applying and healing one schedule step on the docker
 * testnet, as CometBFT's runner perturbs nodes and Jepsen's nemeses cut
 * networks:
 *
 *   crash, crash_recover (kill)  docker kill -s KILL; crash_recover's heal
 *                                is docker start (the node restarts on its
 *                                store: lose none)
 *   restart                      docker stop -t 10 (SIGTERM), then start
 *   pause                        docker pause, then unpause
 *   disconnect                   docker network disconnect, then connect
 *                                again at the node's address
 *   partition                    iptables DROP rules, in each cut node's
 *                                network namespace (nsenter from the host),
 *                                for the addresses it may not reach; the
 *                                heal deletes exactly those rules
 *   omission, loss, delay,       a rule of the node's transport fault layer
 *   corrupt, duplicate, reorder  (fault.set, docs/rpc.md), removed by
 *                                fault.clear; it also expires by itself a
 *                                little after the step's end
 *
 * The manifest's words and keys are the simulator's (omission's send and
 * receive are the transport's out and in; delay and corrupt act on what
 * the node sends, as in weft-sim). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"
#include "weft/util.h"

#include "campaign.h"

#define RULE_SLACK_MS 5000 /* a transport rule outlives its step's end by this much */

void campaign_perturb_init(struct campaign_perturb *p, struct campaign_testnet *t, const struct campaign_manifest *m)
{
	p->t = t;
	p->m = m;
	p->rule = weft_xcalloc(m->nsteps * m->n + 1, sizeof(*p->rule));
}

void campaign_perturb_free(struct campaign_perturb *p)
{
	free(p->rule);
	p->rule = NULL;
}

/* The pid of node i's container (its network namespace), or 0. */
static long container_pid(struct campaign_testnet *t, uint32_t i)
{
	char *argv[] = {"docker", "inspect", "-f", "{{.State.Pid}}", t->container[i], NULL};
	char *out;
	long pid = campaign_exec(argv, 30, false, t->log, &out) == 0 ? strtol(out, NULL, 10) : 0;
	free(out);
	return pid;
}

/* Adds (op "-A") or deletes ("-D") node a's rules against every node it
 * may not reach during the partition step s. */
static int partition_rules(struct campaign_perturb *p, const struct campaign_step *s, uint32_t a, const char *op,
			   char *err, size_t errlen)
{
	struct campaign_testnet *t = p->t;
	long pid = container_pid(t, a);
	char target[32];

	if (pid <= 0) {
		snprintf(err, errlen, "node %u: container %s is not running (no network namespace)", a, t->container[a]);
		return WEFT_EIO;
	}
	snprintf(target, sizeof(target), "%ld", pid);
	for (uint32_t b = 0; b < p->m->n; b++) {
		if (campaign_talk(s, a, b))
			continue;
		for (int out = 0; out < 2; out++) {
			char *argv[] = {"nsenter", "-t", target, "-n", "iptables", "-w", (char *)op,
					out ? "OUTPUT" : "INPUT", out ? "-d" : "-s", t->ip[b], "-j", "DROP", NULL};
			char *msg;
			int st = campaign_exec(argv, 30, false, t->log, &msg);
			if (st != 0) {
				msg[strcspn(msg, "\n")] = '\0';
				snprintf(err, errlen, "node %u: iptables %s %s %s failed (%d): %s", a, op, argv[7], t->ip[b], st,
					 msg);
				free(msg);
				return WEFT_EIO;
			}
			free(msg);
		}
	}
	return 0;
}

/* The fault.set parameters of a transport step. */
static json_t *rule_params(const struct campaign_step *s)
{
	static const char *const dirs[] = {[CAMPAIGN_SEND] = "out", [CAMPAIGN_RECEIVE] = "in", [CAMPAIGN_BOTH] = "both"};
	const char *action = weft_fault_name(s->fault), *direction = dirs[s->direction];
	json_t *r = json_object();

	switch (s->fault) {
	case WEFT_FAULT_LOSS: /* the testnet's lossy link: omission with a probability */
		action = "omission";
		break;
	case WEFT_FAULT_DELAY:
		json_object_set_new(r, "delay_ms", json_integer(s->delay_ms));
		json_object_set_new(r, "jitter_ms", json_integer(s->jitter_ms));
		direction = "out";
		break;
	case WEFT_FAULT_CORRUPT:
		direction = "out";
		break;
	case WEFT_FAULT_REORDER:
		json_object_set_new(r, "delay_ms", json_integer(s->max_ms));
		break;
	case WEFT_FAULT_OMISSION:
	case WEFT_FAULT_DUPLICATE:
	case WEFT_FAULT_CRASH:
	case WEFT_FAULT_CRASH_RECOVER:
	case WEFT_FAULT_PARTITION:
	case WEFT_FAULT_EQUIVOCATE:
	case WEFT_FAULT_TWINS:
	case WEFT_FAULT_ADVERSARY:
	case WEFT_FAULT_CUT:
	case WEFT_FAULT_SKEW:
	case WEFT_FAULT_PAUSE:
	case WEFT_FAULT_RESTART:
	case WEFT_FAULT_DISCONNECT: break;
	}
	json_object_set_new(r, "action", json_string(action));
	json_object_set_new(r, "direction", json_string(direction));
	if (s->probability < 1)
		json_object_set_new(r, "probability", json_real(s->probability));
	if (s->peers) {
		json_t *peers = json_array();
		for (uint32_t i = 0; i < CAMPAIGN_MAX_NODES; i++)
			if (s->peers & (1u << i))
				json_array_append_new(peers, json_integer(i));
		json_object_set_new(r, "peers", peers);
	}
	if (isfinite(s->end_s))
		json_object_set_new(r, "duration_ms",
				    json_integer((json_int_t)((s->end_s - s->at_s) * 1000) + RULE_SLACK_MS));
	return r;
}

static int apply_node(struct campaign_perturb *p, size_t k, uint32_t i, char *err, size_t errlen)
{
	const struct campaign_step *s = &p->m->steps[k];
	struct campaign_testnet *t = p->t;

	switch (s->fault) {
	case WEFT_FAULT_CRASH:
	case WEFT_FAULT_CRASH_RECOVER:
		return campaign_docker(t, err, errlen, "kill", "-s", "KILL", t->container[i], NULL);
	case WEFT_FAULT_RESTART:
		return campaign_docker(t, err, errlen, "stop", "-t", "10", t->container[i], NULL);
	case WEFT_FAULT_PAUSE:
		return campaign_docker(t, err, errlen, "pause", t->container[i], NULL);
	case WEFT_FAULT_DISCONNECT:
		return campaign_docker(t, err, errlen, "network", "disconnect", t->network, t->container[i], NULL);
	case WEFT_FAULT_PARTITION:
		return partition_rules(p, s, i, "-A", err, errlen);
	case WEFT_FAULT_OMISSION:
	case WEFT_FAULT_LOSS:
	case WEFT_FAULT_DELAY:
	case WEFT_FAULT_CORRUPT:
	case WEFT_FAULT_DUPLICATE:
	case WEFT_FAULT_REORDER: {
		json_t *params = rule_params(s), *res = NULL;
		int rc = campaign_rpc(t, i, "fault.set", params, 5000, &res, err, errlen);
		if (rc == 0)
			p->rule[k * p->m->n + i] = (uint64_t)json_integer_value(json_object_get(res, "id"));
		if (t->log) {
			char *text = json_dumps(params, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
			fprintf(t->log, "[%8.2f] node %u: fault.set %s\n", campaign_now(), i, text);
			if (rc == 0)
				fprintf(t->log, "-> id %" PRIu64 "\n", p->rule[k * p->m->n + i]);
			else
				fprintf(t->log, "-> %s\n", err);
			fflush(t->log);
			free(text);
		}
		json_decref(params);
		json_decref(res);
		return rc;
	}
	case WEFT_FAULT_EQUIVOCATE:
	case WEFT_FAULT_TWINS:
	case WEFT_FAULT_ADVERSARY:
	case WEFT_FAULT_CUT:
	case WEFT_FAULT_SKEW: break; /* refused by the manifest parser */
	}
	snprintf(err, errlen, "%s cannot run on a testnet", weft_fault_name(s->fault));
	return WEFT_EUNSUPPORTED;
}

static int heal_node(struct campaign_perturb *p, size_t k, uint32_t i, char *err, size_t errlen)
{
	const struct campaign_step *s = &p->m->steps[k];
	struct campaign_testnet *t = p->t;

	switch (s->fault) {
	case WEFT_FAULT_CRASH:
		return 0;
	case WEFT_FAULT_CRASH_RECOVER:
	case WEFT_FAULT_RESTART:
		return campaign_docker(t, err, errlen, "start", t->container[i], NULL);
	case WEFT_FAULT_PAUSE:
		return campaign_docker(t, err, errlen, "unpause", t->container[i], NULL);
	case WEFT_FAULT_DISCONNECT:
		return campaign_docker(t, err, errlen, "network", "connect", "--ip", t->ip[i], t->network, t->container[i],
				       NULL);
	case WEFT_FAULT_PARTITION:
		return partition_rules(p, s, i, "-D", err, errlen);
	case WEFT_FAULT_OMISSION:
	case WEFT_FAULT_LOSS:
	case WEFT_FAULT_DELAY:
	case WEFT_FAULT_CORRUPT:
	case WEFT_FAULT_DUPLICATE:
	case WEFT_FAULT_REORDER: {
		uint64_t id = p->rule[k * p->m->n + i];
		json_t *params = json_pack("{s:I}", "id", (json_int_t)id), *res = NULL;
		char why[256];
		/* A rule that expired by itself is healed already. */
		int rc = id ? campaign_rpc(t, i, "fault.clear", params, 5000, &res, why, sizeof(why)) : 0;
		if (id && t->log) {
			fprintf(t->log, "[%8.2f] node %u: fault.clear id %" PRIu64 "\n-> %s\n", campaign_now(), i, id,
				rc == 0 ? "0" : why);
			fflush(t->log);
		}
		p->rule[k * p->m->n + i] = 0;
		json_decref(params);
		json_decref(res);
		return 0;
	}
	case WEFT_FAULT_EQUIVOCATE:
	case WEFT_FAULT_TWINS:
	case WEFT_FAULT_ADVERSARY:
	case WEFT_FAULT_CUT:
	case WEFT_FAULT_SKEW: break;
	}
	snprintf(err, errlen, "%s cannot run on a testnet", weft_fault_name(s->fault));
	return WEFT_EUNSUPPORTED;
}

int campaign_perturb_apply(struct campaign_perturb *p, size_t k, char *err, size_t errlen)
{
	uint32_t nodes = campaign_step_nodes(&p->m->steps[k], p->m->n);
	for (uint32_t i = 0; i < p->m->n; i++) {
		int rc = (nodes & (1u << i)) ? apply_node(p, k, i, err, errlen) : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

int campaign_perturb_heal(struct campaign_perturb *p, size_t k, char *err, size_t errlen)
{
	uint32_t nodes = campaign_step_nodes(&p->m->steps[k], p->m->n);
	for (uint32_t i = 0; i < p->m->n; i++) {
		int rc = (nodes & (1u << i)) ? heal_node(p, k, i, err, errlen) : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}
