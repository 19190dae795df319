/* channels.h - weftd's payment channel layer (channels.c): the wallets it
 * hosts for the channel service, the service's events, and the wallet.*
 * and channel.* RPC methods (docs/rpc.md, docs/channels.md). */
#ifndef WEFT_DAEMON_CHANNELS_H
#define WEFT_DAEMON_CHANNELS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/rpc.h"

struct weft_node;
struct weft_channels;
struct weft_wallet_service;

/* Loads DATADIR/wallets (how many wallets were made) and derives their
 * keys from the node identity.  0 and *out, or an error printed to stderr. */
int weft_channels_open(struct weft_channels **out, struct weft_node *node);
/* Fails the calls still waiting; wipes the keys.  Accepts NULL. */
void weft_channels_close(struct weft_channels *ch);
const struct weft_wallet_service *weft_channels_wallets(struct weft_channels *ch);
/* The host's event callback (weft_host_opts.on_event); arg is ch. */
void weft_channels_on_event(void *arg, const uint8_t *event, size_t len);

/* The wallet.* and channel.* methods; their ctx is the struct weft_node. */
extern const struct weft_rpc_method weft_channels_methods[];
extern const size_t weft_channels_nmethods;

#endif
