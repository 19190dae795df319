/* coded.c - erasure-coded reliable broadcast (Cachin-Tessaro AVID /
 * HoneyBadgerBFT's RBC, the dispersal style of Das-Xiang-Ren CCS'21):
 * the sender splits its message into n Reed-Solomon fragments, any
 * k = f+1 of which rebuild it, commits to them with a Merkle root, and each
 * node relays only its own fragment.
 *
 *   sender:  VAL(root, i, fragment i, proof i) to node i (own one locally)
 *   on the first VAL(root) for us with a valid proof:
 *            ECHO(root, self, our fragment, proof) to all
 *   on ceil((n+f+1)/2) ECHO(root) or f+1 READY(root):  READY(root) to all (once)
 *   on 2f+1 READY(root) and k valid fragments of root:
 *            decode, re-encode, recompute the root; deliver the message
 *            when it matches, else the "invalid" verdict
 *
 * READY and the thresholds are Bracha's over the root, so all honest
 * deliveries name one root (Agreement).  The root binds all n fragments;
 * decoding any k of them and re-encoding either rebuilds exactly the
 * committed fragments (then every k-subset decodes to that message) or
 * does not (then no k-subset can yield a matching root), so every honest
 * node reaches the same verdict.  Costs: VAL n |m|/k, ECHO n^2 (|m|/k +
 * kappa log n): about 3n|m| at n = 3f+1.  docs/protocols/coded.md has the
 * arguments, the framing and the costs.
 *
 * Messages ([1, type, sender, seq, ...]):
 *   VAL   0  root(bin 32), index, fragment(bin), proof([bin 32 ...])
 *   ECHO  1  root(bin 32), index, fragment(bin), proof([bin 32 ...])
 *   READY 2  root(bin 32)
 *
 * Framing: u32 length (big-endian) || payload, zero-padded to k * frag_len
 * with frag_len = ceil((4 + len) / k); fragments 0..k-1 are that buffer
 * (the code is systematic: weft/erasure.h's Cauchy matrix), k..n-1 the
 * parity.
 *
 * kv, besides the core's (lower-case) keys: "M" seq(8, BE) holds the
 * payload of our own broadcast until we deliver it, so that a sender that
 * crashes and recovers can still send its VALs; "L" sender(4) seq(8) keeps
 * our votes of the last `retain` delivered instances per sender, sent
 * again to a peer whose STATUS shows it lacks them (see "after delivery").
 *
 * Strategies for the simulator's adversary fault: "inconsistent",
 * "mixed_lengths", "bad_length" (senders whose fragments are not the
 * canonical codeword of their payload; see the end of the file). */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "weft/bytes.h"
#include "merkle.h"
#include "weft/erasure.h"
#include "weft/err.h"

enum { MSG_VAL = 0, MSG_ECHO = 1, MSG_READY = 2 };

#define CODED_MAX_N WEFT_RS_MAX_N /* GF(2^8) */
#define CODED_MAX_DEPTH 8 /* ceil(log2 255) */
#define HASH BRB_MERKLE_HASH

/* The fragments seen for one root of an instance, each with a valid proof. */
struct root_frags {
	uint8_t root[HASH];
	uint32_t frag_len;   /* length of the first valid fragment */
	uint32_t nvalid;     /* distinct leaves with a valid proof */
	bool mixed;          /* two valid leaves of different lengths: not a codeword */
	uint8_t *have;       /* n flags: leaf seen */
	uint8_t **frag;      /* n fragments of frag_len bytes (NULL: absent or mixed) */
};

struct coded_inst {
	struct brb_inst base;
	struct root_frags *roots; /* at most one per ECHO voter, plus ours */
	uint32_t nroots;
	bool echoed, readied;
	uint8_t echo_root[HASH], ready_root[HASH];
	/* Our ECHO, kept for resends. */
	uint8_t *echo_frag;
	uint32_t echo_len;
	uint8_t echo_proof[CODED_MAX_DEPTH][HASH];
	/* Our own broadcast: the codeword (n * code_len bytes) and its tree;
	 * fragment n-1 is last_len bytes (code_len unless a strategy cut it). */
	uint8_t *code;
	uint32_t code_len, last_len;
	struct brb_merkle tree;
	uint8_t code_root[HASH];
};

/* What our own broadcasts look like: honest, or one of the Byzantine
 * strategies of the simulator's adversary fault (see the end of the file). */
enum coded_mode {
	MODE_HONEST,
	MODE_GARBAGE,   /* "inconsistent": the last fragment replaced, a valid root over the result */
	MODE_MIXED,     /* "mixed_lengths": the last fragment one byte short */
	MODE_BADLEN,    /* "bad_length": a true codeword whose length field is 2^32 - 1 */
};

struct coded {
	struct brb_core core;
	enum coded_mode mode;
	uint32_t k;            /* data fragments: f + 1 */
	uint32_t depth;        /* proof length: ceil(log2 n) */
	uint64_t max_frag;     /* longest fragment of a max_payload message */
	struct weft_rs rs;     /* the (n, k) Reed-Solomon code */
	/* counters */
	uint64_t invalid, bad_proofs, answered;
};

static const char *const kind_names[] = {"coded.val", "coded.echo", "coded.ready"};

static struct coded *coded_of(struct brb_core *c)
{
	return c->owner;
}

static size_t msg_key(uint8_t k[9], uint64_t seq)
{
	k[0] = 'M';
	weft_be64_put(k + 1, seq);
	return 9;
}

/* ---- the code ---- */

static uint32_t frag_len_for(const struct coded *cd, size_t len)
{
	size_t fl = (4 + len + cd->k - 1) / cd->k;
	return fl ? (uint32_t)fl : 1;
}

/* Points frag[j] at fragment j of buf (fragments of fl bytes), j < count. */
static void slice(uint8_t *buf, uint32_t fl, uint32_t count, uint8_t **frag)
{
	for (uint32_t j = 0; j < count; j++)
		frag[j] = buf + (size_t)j * fl;
}

/* Computes the n - k parity fragments of code (n fragments of fl bytes). */
static void encode_parity(const struct coded *cd, uint8_t *code, uint32_t fl)
{
	uint8_t *shares[CODED_MAX_N];
	slice(code, fl, cd->core.n, shares);
	weft_rs_encode(&cd->rs, shares, fl);
}

/* The codeword of payload: n * frag_len_for(len) bytes, malloc'd (caller frees). */
static uint8_t *encode(const struct coded *cd, const uint8_t *payload, size_t len, uint32_t *fl_out)
{
	uint32_t fl = frag_len_for(cd, len);
	uint8_t *code = calloc(cd->core.n, fl);
	if (code == NULL)
		abort();
	weft_be32_put(code, (uint32_t)len);
	if (len)
		memcpy(code + 4, payload, len);
	encode_parity(cd, code, fl);
	*fl_out = fl;
	return code;
}

static void code_root(const struct coded *cd, const uint8_t *code, uint32_t fl, uint8_t root[HASH])
{
	const uint8_t *leaves[CODED_MAX_N];
	size_t lens[CODED_MAX_N];
	for (uint32_t i = 0; i < cd->core.n; i++)
		leaves[i] = code + (size_t)i * fl, lens[i] = fl;
	brb_merkle_root_of(root, cd->core.n, leaves, lens);
}

/* Rebuilds the k data fragments (k * fl bytes into data) from the k
 * fragments frags[r] = fragment idx[r] (distinct indices < n).  0, or
 * WEFT_ESTATE when the submatrix is singular (impossible for a Cauchy code). */
static int decode_data(const struct coded *cd, const uint32_t *idx, const uint8_t *const *frags, uint32_t fl,
		       uint8_t *data)
{
	uint8_t *out[CODED_MAX_N];
	slice(data, fl, cd->k, out);
	return weft_rs_decode(&cd->rs, idx, frags, fl, out);
}

/* ---- per-root fragments ---- */

static void inst_clear(struct brb_core *c, struct brb_inst *base)
{
	struct coded_inst *i = (struct coded_inst *)base;
	for (uint32_t r = 0; r < i->nroots; r++) {
		for (uint32_t j = 0; j < c->n; j++)
			free(i->roots[r].frag[j]);
		free(i->roots[r].frag);
		free(i->roots[r].have);
	}
	free(i->roots);
	free(i->echo_frag);
	free(i->code);
	brb_merkle_free(&i->tree);
}

static struct root_frags *root_find(struct coded_inst *i, const uint8_t *root)
{
	for (uint32_t r = 0; r < i->nroots; r++)
		if (memcmp(i->roots[r].root, root, HASH) == 0)
			return &i->roots[r];
	return NULL;
}

static struct root_frags *root_get(struct brb_core *c, struct coded_inst *i, const uint8_t *root)
{
	struct root_frags *rf = root_find(i, root);
	if (rf)
		return rf;
	i->roots = realloc(i->roots, (i->nroots + 1) * sizeof(*i->roots));
	if (i->roots == NULL)
		abort();
	rf = &i->roots[i->nroots++];
	memset(rf, 0, sizeof(*rf));
	memcpy(rf->root, root, HASH);
	rf->have = calloc(c->n, 1);
	rf->frag = calloc(c->n, sizeof(*rf->frag));
	if (rf->have == NULL || rf->frag == NULL)
		abort();
	return rf;
}

/* Records leaf index of root (its proof already checked). */
static void add_fragment(struct brb_core *c, struct coded_inst *i, const uint8_t *root, uint32_t index,
			 const uint8_t *frag, uint32_t len)
{
	struct root_frags *rf = root_get(c, i, root);
	if (rf->have[index])
		return;
	rf->have[index] = 1;
	rf->nvalid++;
	if (rf->nvalid == 1)
		rf->frag_len = len;
	if (len != rf->frag_len && !rf->mixed) {
		/* Two leaves of one root with different lengths: the sender
		 * committed to something that is not a codeword.  The fragment
		 * is refused; the root can only end in the invalid verdict. */
		rf->mixed = true;
		c->rejected++;
		weft_env_metric(c->env, "coded.mixed_lengths", 1);
		for (uint32_t j = 0; j < c->n; j++) {
			free(rf->frag[j]);
			rf->frag[j] = NULL;
		}
	}
	if (rf->mixed)
		return;
	rf->frag[index] = malloc(len);
	if (rf->frag[index] == NULL)
		abort();
	memcpy(rf->frag[index], frag, len);
}

/* ---- votes ---- */

static void write_frag_msg(struct brb_core *c, int type, uint32_t sender, uint64_t seq, const uint8_t *root,
			   uint32_t index, const uint8_t *frag, uint32_t len, const uint8_t (*proof)[HASH])
{
	uint32_t depth = coded_of(c)->depth;
	brb_write_header(c, (uint64_t)type, sender, seq, 4);
	weft_mpw_bin(&c->out, root, HASH);
	weft_mpw_uint(&c->out, index);
	weft_mpw_bin(&c->out, frag, len);
	weft_mpw_array(&c->out, depth);
	for (uint32_t l = 0; l < depth; l++)
		weft_mpw_bin(&c->out, proof[l], HASH);
}

static void send_echo(struct brb_core *c, struct coded_inst *i)
{
	write_frag_msg(c, MSG_ECHO, i->base.sender, i->base.seq, i->echo_root, c->self, i->echo_frag, i->echo_len,
		       (const uint8_t(*)[HASH])i->echo_proof);
	weft_env_multicast(c->env, kind_names[MSG_ECHO], c->out.buf, c->out.len);
}

static void write_ready(struct brb_core *c, uint32_t sender, uint64_t seq, const uint8_t *root)
{
	brb_write_header(c, MSG_READY, sender, seq, 1);
	weft_mpw_bin(&c->out, root, HASH);
}

static void send_ready(struct brb_core *c, struct coded_inst *i)
{
	write_ready(c, i->base.sender, i->base.seq, i->ready_root);
	weft_env_multicast(c->env, kind_names[MSG_READY], c->out.buf, c->out.len);
}

/* Our VALs: fragment j with its proof to node j, for every other node. */
static void send_vals(struct brb_core *c, struct coded_inst *i)
{
	uint8_t proof[CODED_MAX_DEPTH][HASH];
	for (uint32_t j = 0; j < c->n; j++) {
		if (j == c->self)
			continue;
		brb_merkle_proof(&i->tree, j, proof);
		write_frag_msg(c, MSG_VAL, i->base.sender, i->base.seq, i->code_root, j,
			       i->code + (size_t)j * i->code_len, j == c->n - 1 ? i->last_len : i->code_len,
			       (const uint8_t(*)[HASH])proof);
		weft_env_send(c->env, j, kind_names[MSG_VAL], c->out.buf, c->out.len);
	}
}

/* ---- after delivery: answering peers that missed our votes ----
 *
 * The core frees an instance when it is delivered, so our ECHO and READY
 * are no longer resent.  A peer that lost them (a partition, a crash) may
 * then miss its quorums for good when fewer than f+1 honest nodes
 * delivered (the core's DELIVERED catch-up needs f+1 reports).  So at
 * delivery, on any path (brb_proto.inst_delivered: the core's catch-up
 * too), we keep our votes in kv, "L" sender(4) seq(8) ->
 *   flags(1: 1 readied, 2 echoed) || ready root || echo root || proof || fragment
 * for the last `retain` instances per sender, and when the core sees a
 * peer's STATUS lacking an instance we delivered at least resend_ms ago
 * (peer_lacks; the core bounds how often and how many), we send it our
 * ECHO and READY for that instance. */

#define LINGER_HDR (1 + 2 * HASH)

static size_t linger_key(uint8_t k[13], uint32_t sender, uint64_t seq)
{
	k[0] = 'L';
	weft_be32_put(k + 1, sender);
	weft_be64_put(k + 5, seq);
	return 13;
}

static void linger_put(struct brb_core *c, struct brb_inst *base)
{
	const struct coded_inst *i = (const struct coded_inst *)base;
	uint32_t depth = coded_of(c)->depth;
	uint8_t key[13];
	if (c->retain == 0)
		return;
	if (i->base.seq >= c->retain)
		c->env->ops->kv_del(c->env, key, linger_key(key, i->base.sender, i->base.seq - c->retain));
	if (!i->readied && !i->echoed)
		return;
	size_t flen = i->echoed ? i->echo_len : 0, len = LINGER_HDR + (size_t)depth * HASH + flen;
	uint8_t *rec = calloc(1, len);
	if (rec == NULL)
		abort();
	rec[0] = (uint8_t)(i->readied | i->echoed << 1);
	if (i->readied)
		memcpy(rec + 1, i->ready_root, HASH);
	if (i->echoed) {
		memcpy(rec + 1 + HASH, i->echo_root, HASH);
		memcpy(rec + LINGER_HDR, i->echo_proof, (size_t)depth * HASH);
		memcpy(rec + LINGER_HDR + (size_t)depth * HASH, i->echo_frag, flen);
	}
	c->env->ops->kv_put(c->env, key, linger_key(key, i->base.sender, i->base.seq), rec, len);
	free(rec);
}

/* The core saw peer's STATUS lacking (sender, seq), which we delivered at
 * least resend_ms ago: send it our ECHO and READY of that instance. */
static void peer_lacks(struct brb_core *c, uint32_t peer, uint32_t sender, uint64_t seq)
{
	struct coded *cd = coded_of(c);
	uint8_t key[13], hdr[LINGER_HDR], proof[CODED_MAX_DEPTH][HASH];
	const void *v;
	size_t vlen, fixed = LINGER_HDR + (size_t)cd->depth * HASH;
	if (c->env->ops->kv_get(c->env, key, linger_key(key, sender, seq), &v, &vlen) != 0 || vlen < fixed)
		return;
	const uint8_t *rec = v;
	uint32_t flen = (uint32_t)(vlen - fixed);
	memcpy(hdr, rec, sizeof(hdr));
	memcpy(proof, rec + LINGER_HDR, (size_t)cd->depth * HASH);
	if ((hdr[0] & 2) && flen > 0) {
		/* out is written before the next kv call, while rec is valid */
		write_frag_msg(c, MSG_ECHO, sender, seq, hdr + 1 + HASH, c->self, rec + fixed, flen,
			       (const uint8_t(*)[HASH])proof);
		weft_env_send(c->env, peer, kind_names[MSG_ECHO], c->out.buf, c->out.len);
	}
	if (hdr[0] & 1) {
		write_ready(c, sender, seq, hdr + 1);
		weft_env_send(c->env, peer, kind_names[MSG_READY], c->out.buf, c->out.len);
	}
	cd->answered++;
	weft_env_metric(c->env, "coded.answered", 1);
}

/* The end of an instance: our pending payload goes, the core delivers and
 * frees i (our votes stay for laggards: linger_put). */
static void finish(struct brb_core *c, struct coded_inst *i, const uint8_t *data, size_t len, bool invalid)
{
	struct coded *cd = coded_of(c);
	uint32_t sender = i->base.sender;
	uint64_t seq = i->base.seq;
	if (sender == c->self) {
		uint8_t key[9];
		c->env->ops->kv_del(c->env, key, msg_key(key, seq));
	}
	if (invalid) {
		cd->invalid++;
		weft_env_metric(c->env, "coded.invalid", 1);
	}
	/* a Merkle root names it, not a digest; the core calls linger_put */
	brb_deliver(c, &i->base, sender, seq, data, len, NULL, invalid);
}

/* Decodes root's fragments and delivers the message or the invalid verdict. */
static void deliver_root(struct brb_core *c, struct coded_inst *i, const struct root_frags *rf)
{
	struct coded *cd = coded_of(c);
	uint32_t sender = i->base.sender;
	uint64_t seq = i->base.seq;
	if (rf->mixed) {
		finish(c, i, NULL, 0, true);
		return;
	}
	uint32_t idx[CODED_MAX_N], fl = rf->frag_len, k = cd->k, got = 0;
	const uint8_t *frags[CODED_MAX_N];
	for (uint32_t j = 0; j < c->n && got < k; j++) {
		if (rf->frag[j]) {
			idx[got] = j;
			frags[got++] = rf->frag[j];
		}
	}
	if (got < k)
		return; /* not reached: nvalid counts stored fragments when not mixed */
	uint8_t *code = calloc(c->n, fl);
	if (code == NULL)
		abort();
	if (decode_data(cd, idx, frags, fl, code) != 0) {
		weft_env_log(c->env, WEFT_LOG_ERROR, "coded.bug", "sender=%u seq=%llu singular decoding matrix",
			     sender, (unsigned long long)seq);
		free(code);
		return;
	}
	/* Re-encode the decoded message canonically: length field, payload,
	 * zero padding, parity; the root must be the one voted for. */
	uint32_t len = weft_be32_get(code);
	size_t room = (size_t)k * fl - 4;
	bool valid = len <= room && len <= c->max_payload && frag_len_for(cd, len) == fl;
	if (valid) {
		memset(code + 4 + len, 0, room - len);
		encode_parity(cd, code, fl);
		uint8_t root[HASH];
		code_root(cd, code, fl, root);
		valid = memcmp(root, rf->root, HASH) == 0;
	}
	weft_env_metric(c->env, "coded.decoded", 1);
	finish(c, i, valid ? code + 4 : NULL, valid ? len : 0, !valid);
	free(code);
}

/* Delivers when a root has 2f+1 READYs and k valid fragments.  True when
 * the instance was delivered (and freed). */
static bool try_deliver(struct brb_core *c, struct coded_inst *i)
{
	const uint8_t *d = brb_tally_reached(&i->base.tally[BRB_VOTE_READY], c->deliver_quorum);
	const struct root_frags *rf = d ? root_find(i, d) : NULL;
	if (rf == NULL || rf->nvalid < coded_of(c)->k)
		return false;
	uint32_t sender = i->base.sender;
	uint64_t seq = i->base.seq;
	deliver_root(c, i, rf);
	return brb_is_delivered(c, sender, seq);
}

/* READY(root) unless we already sent one (this run or before a restart). */
static void ready(struct brb_core *c, struct coded_inst *i, const uint8_t *root)
{
	if (i->readied)
		return;
	uint8_t prior[HASH];
	if (brb_vote_get(c, BRB_VOTE_READY, i->base.sender, i->base.seq, prior) == 0 &&
	    memcmp(prior, root, HASH) != 0)
		return; /* we said READY for another root before a restart: never contradict it */
	brb_vote_put(c, BRB_VOTE_READY, i->base.sender, i->base.seq, root);
	i->readied = true;
	memcpy(i->ready_root, root, HASH);
	send_ready(c, i);
	brb_tally_add(c, &i->base.tally[BRB_VOTE_READY], c->self, root);
}

/* True when the instance was delivered (and freed). */
static bool check_thresholds(struct brb_core *c, struct coded_inst *i)
{
	const uint8_t *d = brb_tally_reached(&i->base.tally[BRB_VOTE_ECHO], c->echo_quorum);
	if (d == NULL)
		d = brb_tally_reached(&i->base.tally[BRB_VOTE_READY], c->ready_quorum);
	if (d)
		ready(c, i, d);
	return try_deliver(c, i);
}

/* Our ECHO of root: kept for resends, counted as our vote and fragment. */
static void keep_echo(struct brb_core *c, struct coded_inst *i, const uint8_t *root, const uint8_t *frag,
		      uint32_t len, const uint8_t (*proof)[HASH])
{
	i->echoed = true;
	memcpy(i->echo_root, root, HASH);
	i->echo_frag = malloc(len);
	if (i->echo_frag == NULL)
		abort();
	memcpy(i->echo_frag, frag, len);
	i->echo_len = len;
	memcpy(i->echo_proof, proof, (size_t)coded_of(c)->depth * HASH);
	if (brb_tally_add(c, &i->base.tally[BRB_VOTE_ECHO], c->self, root))
		add_fragment(c, i, root, c->self, frag, len);
}

/* ECHO our fragment of root (its proof checked) on the first VAL.  The
 * vote is persisted with the fragment and its proof, so that after a
 * restart inst_restore puts it back even when the sender sends nothing again
 * (our fragment may be one a peer needs to decode). */
static void echo(struct brb_core *c, struct coded_inst *i, const uint8_t *root, const uint8_t *frag, uint32_t len,
		 const uint8_t (*proof)[HASH])
{
	if (i->echoed)
		return;
	uint8_t prior[HASH];
	if (brb_vote_get(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, prior) == 0 && memcmp(prior, root, HASH) != 0) {
		weft_env_metric(c->env, "coded.val_conflicts", 1);
		return; /* the sender equivocates: we echoed another root before */
	}
	size_t plen = (size_t)coded_of(c)->depth * HASH;
	uint8_t *kept = malloc(plen + len);
	if (kept == NULL)
		abort();
	memcpy(kept, proof, plen);
	memcpy(kept + plen, frag, len);
	brb_vote_put_extra(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, root, kept, plen + len);
	free(kept);
	keep_echo(c, i, root, frag, len, proof);
	send_echo(c, i);
	check_thresholds(c, i);
}

/* Our persisted ECHO of (sender, seq), with its proof and fragment, back
 * into i.  A record without them (written before they were kept) is not
 * restored: the VAL, if it comes again, is echoed again. */
static void restore_echo(struct brb_core *c, struct coded_inst *i)
{
	struct coded *cd = coded_of(c);
	uint8_t root[HASH], proof[CODED_MAX_DEPTH][HASH];
	const uint8_t *kept;
	size_t klen, plen = (size_t)cd->depth * HASH;
	if (brb_vote_get_extra(c, BRB_VOTE_ECHO, i->base.sender, i->base.seq, root, &kept, &klen) != 0 ||
	    klen <= plen || klen - plen > cd->max_frag)
		return;
	memcpy(proof, kept, plen);
	keep_echo(c, i, root, kept + plen, (uint32_t)(klen - plen), (const uint8_t(*)[HASH])proof);
}

/* brb_proto.inst_restore: a new instance gets our persisted ECHO and READY
 * back (after a restart), so that resends repeat them and our fragment
 * counts. */
static void inst_restore(struct brb_core *c, struct brb_inst *base)
{
	struct coded_inst *i = (struct coded_inst *)base;
	restore_echo(c, i);
	if (brb_vote_get(c, BRB_VOTE_READY, base->sender, base->seq, i->ready_root) == 0) {
		i->readied = true;
		brb_tally_add(c, &base->tally[BRB_VOTE_READY], c->self, i->ready_root);
	}
}

/* Opens (sender, seq).  NULL with *why as brb_inst_get. */
static struct coded_inst *inst_open(struct brb_core *c, uint32_t sender, uint64_t seq, int *why)
{
	return (struct coded_inst *)brb_inst_get(c, sender, seq, true, why);
}

/* A Byzantine strategy's change to our codeword (deterministic, so that a
 * restart rebuilds the same fragments and root). */
static void tamper(struct coded *cd, struct coded_inst *i)
{
	uint32_t fl = i->code_len;
	uint8_t *last = i->code + (size_t)(cd->core.n - 1) * fl;
	switch (cd->mode) {
	case MODE_HONEST:
		break;
	case MODE_MIXED:
		if (fl > 1) {
			i->last_len = fl - 1;
			break;
		}
		/* a 1-byte fragment cannot be cut: garbage instead */
		/* fall through */
	case MODE_GARBAGE:
		for (uint32_t b = 0; b < fl; b++)
			last[b] ^= (uint8_t)(1 + (b * 7 + i->base.seq) % 255); /* never 0: every byte changes */
		break;
	case MODE_BADLEN:
		weft_be32_put(i->code, UINT32_MAX);
		encode_parity(cd, i->code, fl);
		break;
	}
}

/* Sets up our own broadcast of payload in instance i (codeword, tree, root). */
static void own_broadcast(struct coded *cd, struct coded_inst *i, const uint8_t *payload, size_t len)
{
	struct brb_core *c = &cd->core;
	const uint8_t *leaves[CODED_MAX_N];
	size_t lens[CODED_MAX_N];
	free(i->code);
	brb_merkle_free(&i->tree);
	i->code = encode(cd, payload, len, &i->code_len);
	i->last_len = i->code_len;
	tamper(cd, i);
	for (uint32_t j = 0; j < c->n; j++)
		leaves[j] = i->code + (size_t)j * i->code_len, lens[j] = i->code_len;
	lens[c->n - 1] = i->last_len;
	brb_merkle_build(&i->tree, c->n, leaves, lens);
	brb_merkle_root(&i->tree, i->code_root);
}

/* Our own ECHO for our own broadcast. */
static void echo_own(struct brb_core *c, struct coded_inst *i)
{
	uint8_t proof[CODED_MAX_DEPTH][HASH];
	brb_merkle_proof(&i->tree, c->self, proof);
	echo(c, i, i->code_root, i->code + (size_t)c->self * i->code_len,
	     c->self == c->n - 1 ? i->last_len : i->code_len, (const uint8_t(*)[HASH])proof);
}

static void resend(struct brb_core *c, struct brb_inst *base)
{
	struct coded_inst *i = (struct coded_inst *)base;
	if (i->code) {
		send_vals(c, i);
		if (!i->echoed) {
			echo_own(c, i); /* our ECHO vote had no fragment (an older weftd's): may deliver and free i */
			return;
		}
	}
	if (i->echoed)
		send_echo(c, i);
	if (i->readied)
		send_ready(c, i);
}

static const struct brb_proto coded_proto = {
	.inst_size = sizeof(struct coded_inst),
	.inst_clear = inst_clear,
	.resend = resend,
	.peer_lacks = peer_lacks,
	.inst_restore = inst_restore,
	.inst_delivered = linger_put,
};

/* ---- set-up ---- */

struct pending {
	uint64_t *seqs;
	uint32_t n, cap;
};

static int collect_pending(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct pending *p = arg;
	if (klen != 9)
		return 0;
	uint64_t seq = weft_be64_get((const uint8_t *)key + 1);
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 8;
		p->seqs = realloc(p->seqs, p->cap * sizeof(*p->seqs));
		if (p->seqs == NULL)
			abort();
	}
	p->seqs[p->n++] = seq;
	return 0;
}

/* After a restart: our broadcasts not yet delivered get their codeword
 * back (resend sends the VALs and our ECHO); stale entries are dropped. */
static void restore_own(struct coded *cd)
{
	struct brb_core *c = &cd->core;
	struct weft_env *env = c->env;
	struct pending p = {0};
	env->ops->kv_scan(env, "M", 1, "N", 1, collect_pending, &p);
	for (uint32_t s = 0; s < p.n; s++) {
		uint8_t key[9];
		size_t klen = msg_key(key, p.seqs[s]);
		int why;
		const void *v;
		size_t vlen;
		struct coded_inst *i = NULL;
		if (!brb_is_delivered(c, c->self, p.seqs[s]))
			i = inst_open(c, c->self, p.seqs[s], &why);
		if (i == NULL || env->ops->kv_get(env, key, klen, &v, &vlen) != 0 || vlen > c->max_payload) {
			env->ops->kv_del(env, key, klen);
			continue;
		}
		own_broadcast(cd, i, v, vlen);
	}
	free(p.seqs);
}

static int coded_init_mode(void *state, struct weft_env *env, const uint8_t *params, size_t plen,
			   enum coded_mode mode)
{
	struct coded *cd = state;
	cd->mode = mode;
	if (env->n > CODED_MAX_N) {
		weft_env_log(env, WEFT_LOG_ERROR, "coded.init", "coded needs n <= 255 (GF(2^8)) n=%u", env->n);
		return WEFT_EINVAL;
	}
	int rc = brb_core_init(&cd->core, env, params, plen, &coded_proto, cd);
	if (rc != 0)
		return rc;
	struct brb_core *c = &cd->core;
	cd->k = c->f + 1;
	cd->depth = brb_merkle_depth(c->n);
	cd->max_frag = (c->max_payload + 4 + cd->k - 1) / cd->k;
	rc = weft_rs_init(&cd->rs, c->n, cd->k);
	if (rc != 0)
		return rc; /* not reached: 1 <= f + 1 <= n <= 255; destroy frees the core */
	restore_own(cd);
	return 0;
}

static int coded_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return coded_init_mode(state, env, params, plen, MODE_HONEST);
}

static int coded_start(void *state)
{
	brb_core_start(&((struct coded *)state)->core);
	return 0;
}

static int coded_on_request(void *state, const uint8_t *req, size_t len, struct weft_mpw *reply)
{
	struct coded *cd = state;
	struct brb_core *c = &cd->core;
	uint64_t seq;
	int why = brb_own_begin(c, len, &seq);
	if (why != 0)
		return why;
	struct coded_inst *i = inst_open(c, c->self, seq, &why);
	if (i == NULL)
		return WEFT_ESTATE;
	uint8_t key[9];
	c->env->ops->kv_put(c->env, key, msg_key(key, seq), req, len);
	own_broadcast(cd, i, req, len);
	if (reply) {
		weft_mpw_map(reply, 1);
		weft_mpw_str(reply, "seq");
		weft_mpw_uint(reply, seq);
	}
	send_vals(c, i);
	echo_own(c, i); /* may deliver (n = 1) and free i */
	return 0;
}

/* Reads root, index, fragment and proof of a VAL or ECHO and checks every
 * bound: index < n, 1 <= |fragment| <= max_frag, exactly depth proof
 * hashes of 32 bytes, nothing after. */
static int read_frag_msg(struct coded *cd, struct weft_mp_reader *r, uint8_t root[HASH], uint32_t *index,
			 const uint8_t **frag, uint32_t *flen, uint8_t (*proof)[HASH])
{
	uint32_t count;
	if (weft_mp_read_bin_fixed(r, root, HASH) || weft_mp_read_u32(r, index) || weft_mp_read_bin(r, frag, flen) ||
	    weft_mp_read_array(r, &count))
		return WEFT_EDECODE;
	if (*index >= cd->core.n || count != cd->depth)
		return WEFT_EPROTO;
	if (*flen == 0 || *flen > cd->max_frag)
		return WEFT_ETOOBIG;
	for (uint32_t l = 0; l < count; l++)
		if (weft_mp_read_bin_fixed(r, proof[l], HASH))
			return WEFT_EDECODE;
	return weft_mp_remaining(r) ? WEFT_EDECODE : 0;
}

static int coded_on_message(void *state, uint32_t from, const uint8_t *msg, size_t len)
{
	struct coded *cd = state;
	struct brb_core *c = &cd->core;
	int rc = brb_core_on_message(c, from, msg, len); /* counts its own rejections */
	if (rc <= 0)
		return rc;
	struct weft_mp_reader r;
	uint32_t count, sender;
	uint64_t type, seq;
	if (brb_read_header(&r, msg, len, c->n, &count, &type, &sender, &seq) != 0 || type > MSG_READY ||
	    count != (type == MSG_READY ? 5u : 8u))
		return brb_reject(c, WEFT_EDECODE);
	uint8_t root[HASH];
	if (type == MSG_READY) {
		if (weft_mp_read_bin_fixed(&r, root, HASH) || weft_mp_remaining(&r))
			return brb_reject(c, WEFT_EDECODE);
		int why;
		struct coded_inst *i = inst_open(c, sender, seq, &why);
		if (i == NULL)
			return why == 2 ? WEFT_ETOOBIG : 0;
		if (brb_tally_add(c, &i->base.tally[BRB_VOTE_READY], from, root))
			check_thresholds(c, i);
		return 0;
	}
	uint32_t index, flen;
	const uint8_t *frag;
	uint8_t proof[CODED_MAX_DEPTH][HASH];
	rc = read_frag_msg(cd, &r, root, &index, &frag, &flen, proof);
	if (rc != 0)
		return brb_reject(c, rc);
	if (type == MSG_VAL && (from != sender || index != c->self))
		return brb_reject(c, WEFT_EPROTO); /* only the sender sends VALs, each node gets its own fragment */
	if (type == MSG_ECHO && index != from)
		return brb_reject(c, WEFT_EPROTO); /* a node echoes its own fragment only */
	int why;
	struct coded_inst *i = inst_open(c, sender, seq, &why);
	if (i == NULL)
		return why == 2 ? WEFT_ETOOBIG : 0;
	if (brb_merkle_verify(root, c->n, index, frag, flen, (const uint8_t(*)[HASH])proof, cd->depth) != 0) {
		cd->bad_proofs++;
		weft_env_metric(c->env, "coded.bad_proofs", 1);
		return brb_reject(c, WEFT_ECRYPTO);
	}
	if (type == MSG_VAL) {
		echo(c, i, root, frag, flen, (const uint8_t(*)[HASH])proof);
		return 0;
	}
	if (brb_tally_add(c, &i->base.tally[BRB_VOTE_ECHO], from, root) == 0)
		return 0; /* counted once */
	add_fragment(c, i, root, index, frag, flen);
	check_thresholds(c, i);
	return 0;
}

static void coded_on_timer(void *state, uint64_t id)
{
	brb_core_on_timer(&((struct coded *)state)->core, id);
}

static void coded_info(void *state, struct weft_mpw *w)
{
	struct coded *cd = state;
	weft_mpw_map(w, 13);
	weft_mpw_str(w, "protocol");
	weft_mpw_str(w, "coded");
	weft_mpw_str(w, "k");
	weft_mpw_uint(w, cd->k);
	weft_mpw_str(w, "invalid");
	weft_mpw_uint(w, cd->invalid);
	weft_mpw_str(w, "bad_proofs");
	weft_mpw_uint(w, cd->bad_proofs);
	weft_mpw_str(w, "answered");
	weft_mpw_uint(w, cd->answered);
	brb_core_info(&cd->core, w);
}

static void coded_destroy(void *state)
{
	struct coded *cd = state;
	brb_core_destroy(&cd->core);
	weft_rs_free(&cd->rs);
}

/* ---- Byzantine strategies (the simulator's adversary fault, weftd --byzantine) ----
 * Honest code in every respect but the fragments of our own broadcasts,
 * which commit (with valid proofs) to something that is not the canonical
 * codeword of the payload: every honest node must deliver the invalid
 * verdict for them. */

static int garbage_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return coded_init_mode(state, env, params, plen, MODE_GARBAGE);
}

static int mixed_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return coded_init_mode(state, env, params, plen, MODE_MIXED);
}

static int badlen_init(void *state, struct weft_env *env, const uint8_t *params, size_t plen)
{
	return coded_init_mode(state, env, params, plen, MODE_BADLEN);
}

static const struct weft_proto_ops garbage_ops = {
	.abi = WEFT_PROTO_ABI,
	.name = "coded/inconsistent",
	.state_size = sizeof(struct coded),
	.init = garbage_init,
	.start = coded_start,
	.on_message = coded_on_message,
	.on_timer = coded_on_timer,
	.on_request = coded_on_request,
	.info = coded_info,
	.destroy = coded_destroy,
};

static const struct weft_proto_ops mixed_ops = {
	.abi = WEFT_PROTO_ABI,
	.name = "coded/mixed_lengths",
	.state_size = sizeof(struct coded),
	.init = mixed_init,
	.start = coded_start,
	.on_message = coded_on_message,
	.on_timer = coded_on_timer,
	.on_request = coded_on_request,
	.info = coded_info,
	.destroy = coded_destroy,
};

static const struct weft_proto_ops badlen_ops = {
	.abi = WEFT_PROTO_ABI,
	.name = "coded/bad_length",
	.state_size = sizeof(struct coded),
	.init = badlen_init,
	.start = coded_start,
	.on_message = coded_on_message,
	.on_timer = coded_on_timer,
	.on_request = coded_on_request,
	.info = coded_info,
	.destroy = coded_destroy,
};

static const struct weft_proto_strategy coded_strategies[] = {
	{"inconsistent", "our broadcasts' last fragment is garbage under a valid Merkle root (not a codeword)",
	 &garbage_ops},
	{"mixed_lengths", "our broadcasts' last fragment is one byte short under a valid Merkle root", &mixed_ops},
	{"bad_length", "our broadcasts are true codewords whose length field is 2^32 - 1", &badlen_ops},
	{NULL, NULL, NULL},
};

const struct weft_proto_ops weft_proto_coded = {
	.abi = WEFT_PROTO_ABI,
	.name = "coded",
	.state_size = sizeof(struct coded),
	.init = coded_init,
	.start = coded_start,
	.on_message = coded_on_message,
	.on_timer = coded_on_timer,
	.on_request = coded_on_request,
	.info = coded_info,
	.destroy = coded_destroy,
	.strategies = coded_strategies,
};
