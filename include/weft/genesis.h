/* genesis.h - the committee's genesis file: who the n nodes are (Ed25519
 * keys and addresses), which protocol they run with which parameters, and
 * (for the dag protocol) the initial ledger allocations in
 * params.balances (docs/ledger.md).  JSON, shared by every node:
 *
 *   {
 *     "chain_id": "weft-local",
 *     "protocol": "beb",
 *     "params": { ... protocol parameters ... },
 *     "nodes": [
 *       {"name": "node0", "key": "<64 hex digits>", "address": "127.0.0.1:7100"},
 *       ...
 *     ]
 *   }
 *
 * Errors name the file and the JSON path: "genesis.json: $.nodes[2].key:
 * expected 64 hex digits".  n = number of nodes (1..1024), f = (n-1)/3;
 * keys and addresses must be distinct. */
#ifndef WEFT_GENESIS_H
#define WEFT_GENESIS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/crypto.h"

struct weft_genesis_node {
	char *name;
	uint8_t pk[WEFT_PK_LEN];
	char *host;       /* as written: an IPv4/IPv6 literal or a host name */
	uint16_t port;
};

struct weft_genesis {
	char *chain_id;
	char *protocol;
	uint8_t *params;  /* msgpack map of "params", or NULL */
	size_t plen;
	uint32_t n, f;
	struct weft_genesis_node *nodes;
};

/* 0, or WEFT_EINVAL with "FILE: $.path: problem" in err (WEFT_NOTFOUND when
 * the file does not exist). */
int weft_genesis_load(struct weft_genesis *g, const char *path, char *err, size_t errlen);
int weft_genesis_parse(struct weft_genesis *g, const char *json, const char *name, char *err, size_t errlen);
void weft_genesis_free(struct weft_genesis *g);
/* Index of the node with key pk, or -1. */
int weft_genesis_index(const struct weft_genesis *g, const uint8_t pk[WEFT_PK_LEN]);
/* Writes g as pretty JSON to path, mode 0644, atomically
 * (weft_write_file_atomic).  0, WEFT_EINVAL when g would not load back, or
 * the write's error code (path unchanged). */
int weft_genesis_write(const struct weft_genesis *g, const char *path);

#endif
