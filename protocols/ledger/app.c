/* app.c - the ledger as the application of the ordered stream (weft/app.h):
 * admission runs the stateless checks of the kind that claims a
 * transaction (weft_ledger_precheck), every ordered transaction is executed
 * (weft_ledger_apply), and the ledger answers its own questions
 * (ledger.balance, ledger.channel) and describes itself (ledger_hash,
 * ledger_height). */
#include <string.h>

#include "weft/crypto.h"
#include "weft/err.h"
#include "weft/ledger.h"

static int app_admit(void *ctx, const uint8_t *tx, size_t len, const char **why)
{
	enum weft_ledger_outcome o;
	int rc = weft_ledger_precheck(tx, len, &o);
	if (rc == WEFT_NOTFOUND)
		return 0; /* opaque data */
	*why = weft_ledger_outcome_name(o);
	return rc;
}

static int app_apply(void *ctx, uint64_t position, const uint8_t *tx, size_t len, const uint8_t digest[32],
		     uint8_t *outcome)
{
	enum weft_ledger_outcome o = WEFT_LEDGER_OPAQUE;
	int rc = weft_ledger_apply(ctx, tx, len, digest, &o);
	*outcome = (uint8_t)o;
	return rc;
}

static int app_end_batch(void *ctx)
{
	return weft_ledger_end_batch(ctx);
}

static const char *app_outcome_name(uint8_t outcome)
{
	return weft_ledger_outcome_name((enum weft_ledger_outcome)outcome);
}

/* ledger.transfer: only a transfer, and one that passes the stateless checks. */
static int transfer_only(const uint8_t *tx, size_t len, const char **why)
{
	enum weft_ledger_outcome o;
	int rc = weft_ledger_transfer_precheck(tx, len, &o);
	if (rc == WEFT_NOTFOUND)
		*why = "tx is not a ledger transfer";
	else if (rc < 0)
		*why = weft_ledger_outcome_name(o);
	return rc == WEFT_NOTFOUND ? WEFT_EINVAL : rc;
}

const struct weft_proto_method weft_ledger_methods[] = {
	{"ledger.balance", WEFT_METHOD_QUERY, "account", "account=HEX",
	 "{account, exists, balance, nonce (the next one)} after the transactions this node executed", NULL},
	{"ledger.channel", WEFT_METHOD_QUERY, "id", "id=HEX",
	 "{id, exists, status, members, locked[, posted_version, settles_at_height, posted_balances]} of a "
	 "channel on the ledger (docs/ledger.md, Channels)",
	 NULL},
	{"ledger.transfer", WEFT_METHOD_SUBMIT, "tx", "tx=BYTES | tx_hex=HEX",
	 "submit a signed transfer (weft-cli ledger.transfer builds and signs it); returns {digest, duplicate}",
	 transfer_only},
	{NULL, 0, NULL, NULL, NULL, NULL},
};

static int app_reload(void *ctx)
{
	return weft_ledger_reload(ctx);
}

void weft_ledger_app(struct weft_ledger *l, struct weft_app *app)
{
	*app = (struct weft_app){
		.ctx = l,
		.admit = app_admit,
		.apply = app_apply,
		.end_batch = app_end_batch,
		.outcome_name = app_outcome_name,
		.state_prefixes = WEFT_LEDGER_STATE_PREFIXES,
		.reload = app_reload,
	};
}

/* ledger.channel: the record of a channel id. */
static int query_channel(struct weft_ledger *l, const uint8_t id[32], struct weft_mpw *reply)
{
	static const char *const status[] = {"none", "open", "closed", "closing"};
	struct weft_ledger_channel_state st;
	int rc = weft_ledger_channel(l, id, &st);
	if (rc < 0)
		return rc;
	bool exists = rc == 0, closing = exists && st.status == WEFT_LEDGER_CH_CLOSING;
	char hex[2 * WEFT_LEDGER_KEY_LEN + 1];
	weft_hex_encode(hex, id, 32);
	weft_mpw_map(reply, closing ? 9 : 5);
	weft_mpw_str(reply, "id");
	weft_mpw_str(reply, hex);
	weft_mpw_str(reply, "exists");
	weft_mpw_bool(reply, exists);
	weft_mpw_str(reply, "status");
	weft_mpw_str(reply, status[exists ? st.status : 0]);
	weft_mpw_str(reply, "members");
	weft_mpw_array(reply, exists ? st.n : 0);
	for (uint32_t i = 0; exists && i < st.n; i++) {
		weft_hex_encode(hex, st.member[i], WEFT_LEDGER_KEY_LEN);
		weft_mpw_str(reply, hex);
	}
	weft_mpw_str(reply, "locked");
	weft_mpw_uint(reply, exists && st.status != WEFT_LEDGER_CH_CLOSED ? st.total : 0);
	if (closing) {
		weft_mpw_str(reply, "posted_version");
		weft_mpw_uint(reply, st.version);
		weft_mpw_str(reply, "settles_at_height");
		weft_mpw_uint(reply, st.deadline);
		weft_mpw_str(reply, "posted_balances");
		weft_mpw_array(reply, st.n);
		for (uint32_t i = 0; i < st.n; i++)
			weft_mpw_uint(reply, st.balance[i]);
		weft_mpw_str(reply, "posted_locks");
		weft_mpw_array(reply, st.nlocks);
		for (uint32_t i = 0; i < st.nlocks; i++) {
			const struct weft_ledger_channel_lock *k = &st.lock[i];
			weft_mpw_map(reply, 6);
			weft_mpw_str(reply, "payer");
			weft_mpw_uint(reply, k->payer);
			weft_mpw_str(reply, "payee");
			weft_mpw_uint(reply, k->payee);
			weft_mpw_str(reply, "amount");
			weft_mpw_uint(reply, k->amount);
			weft_hex_encode(hex, k->hash, 32);
			weft_mpw_str(reply, "hash");
			weft_mpw_str(reply, hex);
			weft_mpw_str(reply, "expiry");
			weft_mpw_uint(reply, k->expiry);
			weft_mpw_str(reply, "claimed");
			weft_mpw_bool(reply, st.claimed[i]);
		}
	}
	return 0;
}

int weft_ledger_query(struct weft_ledger *l, const char *what, const uint8_t *arg, size_t alen, struct weft_mpw *reply)
{
	bool channel = strcmp(what, "ledger.channel") == 0;
	if (!channel && strcmp(what, "ledger.balance") != 0)
		return WEFT_NOTFOUND;
	uint8_t key[WEFT_LEDGER_KEY_LEN];
	struct weft_mp_reader r;
	weft_mp_reader_init(&r, arg, alen);
	if (arg == NULL || weft_mp_read_bin_fixed(&r, key, sizeof(key)) || weft_mp_remaining(&r))
		return WEFT_EINVAL;
	if (channel)
		return query_channel(l, key, reply);
	uint64_t balance = 0, nonce = 0;
	int rc = weft_ledger_account(l, key, &balance, &nonce);
	if (rc < 0)
		return rc;
	char hex[2 * WEFT_LEDGER_KEY_LEN + 1];
	weft_hex_encode(hex, key, sizeof(key));
	weft_mpw_map(reply, 4);
	weft_mpw_str(reply, "account");
	weft_mpw_str(reply, hex);
	weft_mpw_str(reply, "exists");
	weft_mpw_bool(reply, rc == 0);
	weft_mpw_str(reply, "balance");
	weft_mpw_uint(reply, balance);
	weft_mpw_str(reply, "nonce");
	weft_mpw_uint(reply, nonce);
	return 0;
}

uint32_t weft_ledger_info_fields(const struct weft_ledger *l, struct weft_mpw *w)
{
	char hex[2 * 32 + 1];
	weft_hex_encode(hex, l->hash, sizeof(l->hash));
	weft_mpw_str(w, "ledger_hash");
	weft_mpw_str(w, hex);
	weft_mpw_str(w, "ledger_height");
	weft_mpw_uint(w, l->height);
	return 2;
}
