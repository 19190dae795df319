#!/usr/bin/env python3
"""amortized2tla.py - turn a trace of weft's amortized multi-shot BRB
(protocols/brb/amortized.c; weft-sim --trace --trace-data, or weftd
--trace merged with trace2tla.py merge) into a TLA+ trace for
AmortizedTrace.tla (trace validation against tla/AmortizedBRB.tla), and
tamper with traces to show that TLC rejects them.

    amortized2tla.py convert --scenario S.json --trace T.ndjson --out DIR [--sender N]
        writes DIR/AmortizedTraceLog.tla, DIR/AmortizedTrace.cfg, DIR/steps.json
    amortized2tla.py tamper --mode digest|early|ride|double|forge|resend --scenario S.json IN.ndjson OUT.ndjson
    amortized2tla.py describe DIR/steps.json K
        prints record K of the log (1-based) with the trace lines it came from
Per-node weftd traces are merged with `trace2tla.py merge` (the same for
every protocol).

Python 3 standard library only; the NDJSON reader, the step grouping, the
msgpack helpers, the TLA+ writers and the command line are trace2tla.py's.  See README.md next to this file.

The stream.  AmortizedBRB.tla models ONE sender's stream of instances
0 .. NInst-1.  The sender is the node of the first request (--sender to
pick another); NInst is one more than the highest seq of that stream that
an honest node sent anything about (PROPOSE, VOTE, a READY riding or
standalone, PULL, PAYLOAD, a catch-up report) or delivered.  Messages of
other streams, and Byzantine votes for seqs from NInst on (no honest node
acted on them, and at most f Byzantine votes reach no threshold), are
no-ops.

Steps.  As for Bracha: one `request`, `recv`, `timer`, `start`, `command`
line with the `send`, `drop`, `deliver`, `reject` lines after it is one
callback of the C code.  Every step of an honest node becomes one record
(AmortizedTrace.tla has the fields), except that a received VOTE is split
into its parts when the spec has no single message for it: a Byzantine
VOTE, and an honest VOTE(k) that is not the one the voter's tick sent (a
resend with another READY riding, or none; a peer_lacks replay with the
echo alone).  With an echo and a READY it becomes two records, the echo
part then the READY part (the spec takes such a VOTE as its two parts
received back to back; handle_vote counts the echo part first), the
step's effects split by instance.  Steps of Byzantine nodes are dropped.
The record kinds follow the spec's actions:

    request  Broadcast          amortized_on_request at the sender
    propose  RecvPropose / ByzPropose
    vote     RecvVote (an honest VOTE as its tick sent it, or a resend of
             it) / RecvStandalone (a standalone READY: flushed, resent or
             replayed)
    echo, ready     RecvEchoOnly / RecvStandalone (the parts of any other
             honest VOTE)
    becho, bready   ByzEcho / ByzReady (the parts of a Byzantine VOTE)
    payload  Pull               handle_payload (the PULL that asked for it
                                is an effect of an earlier step, checked there)
    tick     Tick               the stream's zero-delay vote tick
    flush    DoFlush            the stream's flush timer (flush_ms)
    resend   DoFlush / a stuttering step   the core's catch-up timer:
                                STATUS and the resend hook (DoFlush when
                                its VOTEs took READYs from the pending ones)
    noop     a stuttering step  start, PULL (handle_pull: its PAYLOAD is
                                checked), STATUS (peer_lacks replays are
                                checked), DELIVERED, the pull timer, other
                                streams, rejected input

Every VOTE an honest node sends, to honest and Byzantine nodes alike, is in
its record and checked there (AmortizedTrace.tla, Effects): a tick's and a
flush's are the spec's; a resend's are the node's echo of an open instance
it voted, with a READY it readied riding or none, and standalone READYs of
open instances it readied; a replay's, its echo alone or its standalone
READY of a delivered instance.

Values.  A payload is named by the first 8 bytes of its BLAKE2b-256 digest,
in hex (the string of `deliver` and `request` events); a VOTE or PULL
carries the 32-byte digest itself, named by its first 8 bytes.

Exact mode only: the trace must carry the message bytes (weft-sim
--trace-data; weftd --trace always does).  Not modelled, reported as
unsupported (exit 2): restarts (crash_recover, a failed commit in weftd),
deliveries through the core's catch-up (brb.delivered), invalid
deliveries, a VOTE rejected beyond the window (its other part may have
counted), more than f faulty nodes.  Checked but rejected by TLC: a
resend step whose VOTEs take some but not all of the node's pending READYs
(pending_take in send_vote): AmortizedBRB.tla announces pending READYs all
at once (DoFlush) and has no step that announces only some of them.
"""
import hashlib
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace2tla import (Unsupported, brb_header, command_line, committee_defs, dier, dump, group_steps,  # noqa: E402
                       has_data, load_and_convert, mp_array, mp_bin, mp_report, mp_uint, node_name,
                       read_scenario, run_command, step_node, tamper_input, tla_seq, tla_set, tla_str,
                       value_of, write_steps, write_trace, write_trace_module)

T_PROPOSE, T_VOTE, T_PULL, T_PAYLOAD, T_STATUS, T_DELIVERED = 0, 1, 2, 3, 16, 17
TIMER_TICK = 1 << 33
TIMER_CATCHUP = 1 << 40  # the core's STATUS and resend timer (BRB_TIMER_BASE + 0)
TOOBIG_ERR = "exceeds the size limit"  # weft_strerror(WEFT_ETOOBIG): beyond the window
NONE = "none"


die = dier("amortized2tla")


# ---- scenario ----

def load_scenario(path):
    sc = read_scenario(path, "amortized", "AmortizedBRB.tla", restarts=False)
    params = sc["json"].get("params", {}) or {}
    optimistic = int(params.get("optimistic", 1)) != 0
    return {"n": sc["n"], "f": sc["f"], "byz": sc["byz"], "optimistic": optimistic}


# ---- the messages of amortized and of the core's catch-up ----

# The full digests of the payloads the trace carries, and their names.
PAYLOADS = {"full": set(), "names": set()}


def index_payloads(lines):
    """Notes the digest of every payload a message of the trace carries
    (PROPOSE, PAYLOAD, DELIVERED), so that digest_name can tell them apart
    from digests that only share their first 8 bytes."""
    for _, _, ev in lines:
        if ev["ev"] in ("send", "recv") and "data" in ev:
            m = decode(ev["data"])
            if m and m["ok"] and "full" in m:
                PAYLOADS["full"].add(m["full"])
                PAYLOADS["names"].add(m["value"])


def digest_name(d):
    """The name of a 32-byte digest a message carries: its first 8 bytes in
    hex, as deliveries name payloads, unless a payload of the trace has
    another digest with those first 8 bytes (a digest bit-flipped past
    them, by a corrupt fault): then all 32 bytes."""
    short = d[:8].hex()
    if d not in PAYLOADS["full"] and short in PAYLOADS["names"]:
        return d.hex()
    return short


def opt_digest(b, i):
    """A bin 32 (its name, digest_name) or nil (None)."""
    if b[i] == 0xC0:
        return None, i + 1
    d, i = mp_bin(b, i)
    if len(d) != 32:
        raise ValueError("not a digest")
    return digest_name(d), i


def decode(hexdata):
    """A BRB message of the amortized protocol or the core as the C code
    reads it: a dict with type, sender, seq and the fields, "ok" False when
    the C code rejects it (malformed, or a VOTE breaking the VOTE rules),
    or None when it is not a BRB message at all."""
    h = brb_header(hexdata)
    if h is None:
        return None
    b, count, typ, sender, seq, i = h
    m = {"type": typ, "sender": sender, "seq": seq, "ok": False}
    try:
        if typ in (T_PROPOSE, T_PAYLOAD) and count == 5:
            payload, i = mp_bin(b, i)
            m["value"] = value_of(payload)
            m["full"] = hashlib.blake2b(payload, digest_size=32).digest()
        elif typ == T_VOTE and count == 7:
            if b[i] != 0xC0:
                m["echo_raw"] = mp_bin(b, i)[0]
            echo, i = opt_digest(b, i)
            if b[i] == 0xC0:
                rf, i = None, i + 1
            else:
                rf, i = mp_uint(b, i)
            rd, i = opt_digest(b, i)
            m.update(echo=echo, rf=rf, rd=rd)
            # handle_vote's rules: both READY fields or neither; not empty;
            # a READY rides only on a later seq; standalone: seq = rf + 1.
            if (rf is None) != (rd is None) or (echo is None and rf is None):
                return m
            if rf is not None and (rf >= seq or (echo is None and seq != rf + 1)):
                return m
        elif typ == T_PULL and count == 5:
            d, i = opt_digest(b, i)
            if d is None:
                return m
            m["value"] = d
        elif typ == T_DELIVERED and count == 6:
            invalid, payload, i = mp_report(b, i)
            m["value"] = "invalid" if invalid else value_of(payload)
            if not invalid:
                m["full"] = hashlib.blake2b(payload, digest_size=32).digest()
        elif typ == T_STATUS:
            m["ok"] = True
            return m  # changes nothing in the spec
        else:
            return m
        m["ok"] = i == len(b)
        return m
    except (ValueError, IndexError):
        return m


# ---- conversion ----

def find_sender(steps):
    for st in steps:
        ev = st["start"][2]
        if ev["ev"] == "request":
            return ev["node"]
    raise Unsupported("no request in the trace: nothing was broadcast")


def stream_seqs(m, sender):
    """The seqs of the stream a decoded message is about."""
    if m is None or not m["ok"] or m["sender"] != sender:
        return []
    t = m["type"]
    if t == T_VOTE:
        out = [m["seq"]] if m["echo"] is not None else []
        return out + ([m["rf"]] if m["rf"] is not None else [])
    if t in (T_PROPOSE, T_PAYLOAD, T_PULL, T_DELIVERED):
        return [m["seq"]]
    return []


def count_ninst(steps, byz, sender):
    top = -1
    for st in steps:
        node = step_node(st["start"][2])
        if node in byz:
            continue
        for _, _, r in st["rest"]:
            if r["ev"] == "send" and "data" in r:
                for q in stream_seqs(decode(r["data"]), sender):
                    top = max(top, q)
            elif r["ev"] == "deliver" and r["origin"] == sender:
                top = max(top, r["seq"])
    return top + 1


def vote_tuple(m):
    return (m["seq"] if m["echo"] is not None else m["rf"] + 1, m["echo"] or NONE,
            -1 if m["rf"] is None else m["rf"], m["rd"] or NONE)


def blank(node, no):
    return {"k": "noop", "i": node, "j": node, "q": -1, "v": NONE, "rq": -1, "rv": NONE,
            "prop": [], "votes": [], "pulls": [], "pays": [], "reps": [], "dlv": [], "line": no}


def convert(sc, lines, sender=None):
    n, f, byz = sc["n"], sc["f"], set(sc["byz"])
    if not has_data(lines):
        raise Unsupported("the trace has no message bytes: run weft-sim with --trace-data "
                          "(amortized traces are checked in exact mode only)")
    index_payloads(lines)
    steps = group_steps(lines)
    if sender is None:
        sender = find_sender(steps)
    if not 0 <= sender < n:
        raise Unsupported("sender %d is not a node of the committee" % sender)
    ninst = count_ninst(steps, byz, sender)
    if ninst == 0:
        raise Unsupported("no honest node did anything in the stream of node %d" % sender)
    announced = {}  # (honest node, vote seq) -> its tick VOTE(seq), as vote_tuple
    values = set()
    records, sources = [], []
    for st in steps:
        no, text, ev = st["start"]
        node = step_node(ev)
        if node in byz:
            continue
        if ev["ev"] == "fault":
            raise Unsupported("line %d: %s of honest node %d (a restart: AmortizedBRB.tla has none)"
                              % (no, ev.get("fault"), node))
        src = [no] + [rno for rno, _, _ in st["rest"]]
        rec = blank(node, no)
        recs = [rec]
        rejects = [r for _, _, r in st["rest"] if r["ev"] == "reject"]
        if ev["ev"] == "request":
            # A request the C code refused (window full, too big) sends no
            # PROPOSE: a no-op.
            for _, _, r in st["rest"]:
                if node == sender and r["ev"] == "send" and "data" in r:
                    m = decode(r["data"])
                    if m and m["ok"] and m["type"] == T_PROPOSE and m["sender"] == sender:
                        rec.update(k="request", q=m["seq"], v=ev.get("digest", m["value"]))
        elif ev["ev"] == "timer":
            tid = ev.get("id")
            if tid == TIMER_TICK + sender:
                rec["k"] = "tick"
            elif tid == sender:
                rec["k"] = "flush"
            elif tid == TIMER_CATCHUP:
                rec["k"] = "resend"
        elif ev["ev"] == "recv":
            j = ev["from"]
            rec["j"] = j
            m = decode(ev["data"]) if "data" in ev else None
            if m is None:
                if not rejects:
                    raise Unsupported("line %d: node %d accepted a message this script cannot decode" % (no, node))
            elif not m["ok"]:
                if not rejects:
                    raise Unsupported("line %d: node %d accepted a message the C code rejects" % (no, node))
            elif rejects and m["type"] == T_VOTE and rejects[0].get("err") == TOOBIG_ERR:
                raise Unsupported("line %d: a VOTE rejected beyond the window (its other part may have "
                                  "counted): not modelled" % no)
            elif rejects:
                pass  # rejected: no effect
            elif m["sender"] != sender:
                pass  # another stream
            elif m["type"] == T_PROPOSE:
                if j == m["sender"] and m["seq"] < ninst:
                    rec.update(k="propose", q=m["seq"], v=m["value"])
            elif m["type"] == T_PAYLOAD:
                if m["seq"] < ninst:
                    rec.update(k="payload", q=m["seq"], v=m["value"])
            elif m["type"] == T_VOTE:
                vt = vote_tuple(m)
                parts = []
                if j not in byz and (m["echo"] is None or announced.get((j, m["seq"])) == vt):
                    # A standalone READY (flushed, resent or replayed), or
                    # the VOTE the voter's tick sent (or a resend that
                    # repeats it): RecvStandalone / RecvVote.
                    rec.update(k="vote", q=vt[0], v=vt[1], rq=vt[2], rv=vt[3])
                else:
                    # A Byzantine VOTE, or an honest one its tick did not
                    # send (a resend with another READY riding or none, a
                    # peer_lacks replay): its echo part, then its READY part.
                    hon = j not in byz
                    if m["echo"] is not None and m["seq"] < ninst:
                        parts.append(("echo" if hon else "becho", m["seq"], m["echo"]))
                    if m["rf"] is not None and m["rf"] < ninst:
                        parts.append(("ready" if hon else "bready", m["rf"], m["rd"]))
                    for x, (kind, q, v) in enumerate(parts):
                        r = rec if x == 0 else blank(node, no)
                        r.update(k=kind, j=j, q=q, v=v)
                        if x:
                            recs.append(r)
            elif m["type"] == T_DELIVERED:
                if any(r["ev"] == "deliver" for _, _, r in st["rest"]):
                    raise Unsupported("line %d: node %d delivered through the core's catch-up "
                                      "(brb.delivered), which AmortizedBRB.tla does not model" % (no, node))
        # The step's effects.
        eff = []  # (seq, field, item)
        dl = {}
        for rno, _, r in st["rest"]:
            if r["ev"] == "send":
                if r["from"] != node:
                    raise Unsupported("line %d: a send of node %d inside a step of node %d" % (rno, r["from"], node))
                m = decode(r.get("data", ""))
                if m is None or not m["ok"] or m["sender"] != sender:
                    continue
                t = m["type"]
                if t == T_PROPOSE:
                    eff.append((m["seq"], "prop", (m["seq"], m["value"])))
                elif t == T_VOTE:
                    # Every VOTE is checked (AmortizedTrace.tla, Effects):
                    # the tick's and the flush's, resends, replays, to
                    # honest and Byzantine nodes alike.
                    vt = vote_tuple(m)
                    if rec["k"] == "tick" and vt[1] != NONE:
                        announced.setdefault((node, vt[0]), vt)
                    eff.append((vt[0] if vt[1] != NONE else vt[2], "votes", vt))
                elif t == T_PULL:
                    eff.append((m["seq"], "pulls", (m["seq"], m["value"], r["to"])))
                elif t == T_PAYLOAD:
                    eff.append((m["seq"], "pays", (m["seq"], m["value"])))
                elif t == T_DELIVERED:
                    eff.append((m["seq"], "reps", (m["seq"], m["value"])))
            elif r["ev"] == "deliver":
                if r["node"] != node:
                    raise Unsupported("line %d: a delivery of node %d inside a step of node %d"
                                      % (rno, r["node"], node))
                if r["origin"] != sender:
                    continue
                if r.get("invalid"):
                    raise Unsupported("line %d: an invalid delivery (the amortized BRB never makes one)" % rno)
                q = r["seq"]
                eff.append((q, "dlv", (q, "!twice" if q in dl else r["digest"])))
                dl[q] = True
        for q, field, item in eff:
            target = rec
            if len(recs) == 2 and q == recs[1]["q"] and q != recs[0]["q"]:
                target = recs[1]
            if item not in target[field]:
                target[field].append(item)
        for r in recs:
            for key in ("v", "rv"):
                if r[key] not in (NONE, "?"):
                    values.add(r[key])
            for field in ("prop", "pays", "reps", "dlv"):
                values.update(x[1] for x in r[field] if x[1] != "!twice")
            values.update(x[1] for x in r["pulls"])
            for vt in r["votes"]:
                values.update(x for x in (vt[1], vt[3]) if x != NONE)
            records.append(r)
            sources.append(src)
    if sender not in byz and not any(r["k"] == "request" for r in records):
        raise Unsupported("the honest sender %d's requests are not in the trace" % sender)
    return {"n": n, "f": f, "byz": sorted(byz), "sender": sender, "ninst": ninst,
            "optimistic": sc["optimistic"], "values": sorted(values), "records": records,
            "sources": sources}


def rec_tla(r):
    def tset(items, fmt):
        return tla_set(tla_seq(fmt(x)) for x in sorted(items, key=str))
    return ("[k |-> %s, i |-> %s, j |-> %s, q |-> %d, v |-> %s, rq |-> %d, rv |-> %s, prop |-> %s, votes |-> %s, "
            "pulls |-> %s, pays |-> %s, reps |-> %s, dlv |-> %s, line |-> %d]"
            % (tla_str(r["k"]), node_name(r["i"]), node_name(r["j"]), r["q"], tla_str(r["v"]), r["rq"],
               tla_str(r["rv"]),
               tset(r["prop"], lambda x: (str(x[0]), tla_str(x[1]))),
               tset(r["votes"], lambda x: (str(x[0]), tla_str(x[1]), str(x[2]), tla_str(x[3]))),
               tset(r["pulls"], lambda x: (str(x[0]), tla_str(x[1]), node_name(x[2]))),
               tset(r["pays"], lambda x: (str(x[0]), tla_str(x[1]))),
               tset(r["reps"], lambda x: (str(x[0]), tla_str(x[1]))),
               tset(r["dlv"], lambda x: (str(x[0]), tla_str(x[1]))),
               r["line"]))


def write_module(conv, trace_path, outdir):
    write_trace_module(outdir, "AmortizedTrace", "amortized2tla", trace_path,
                       ["The stream of sender %d, instances 0..%d; %d records." % (conv["sender"], conv["ninst"] - 1,
                                                                                len(conv["records"]))],
                       "Integers, Sequences",
                       committee_defs(conv) + ["TValue == %s" % tla_set(tla_str(v) for v in conv["values"]),
                                               "TNInst == %d" % conv["ninst"],
                                               "TOptimistic == %s" % ("TRUE" if conv["optimistic"] else "FALSE")],
                       [rec_tla(r) for r in conv["records"]])


def cmd_convert(args):
    _, lines, conv = load_and_convert(args, die, 2, load_scenario, convert, lambda a: a.sender)
    write_module(conv, args.trace, args.out)
    write_steps(args.out, args.trace, lines, conv["records"], conv["sources"])
    kinds = {}
    for r in conv["records"]:
        kinds[r["k"]] = kinds.get(r["k"], 0) + 1
    print("amortized2tla: %d trace lines -> %d records (%s), stream of node %d, %d instances, values %s"
          % (len(lines), len(conv["records"]), ", ".join("%d %s" % (kinds[k], k) for k in sorted(kinds)),
             conv["sender"], conv["ninst"], ", ".join(conv["values"]) or "-"))


def describe_vote(vt):
    q, e, rq, rv = vt
    if e == NONE:
        return "standalone READY(%d, %s)" % (rq, rv)
    return "VOTE(%d, echo %s%s)" % (q, e, ", READY(%d, %s)" % (rq, rv) if rq >= 0 else "")


def describe_record(rec):
    who = "node %d" % rec["i"]
    k = rec["k"]
    if k == "request":
        what = "%s broadcasts %s as instance %d" % (who, rec["v"], rec["q"])
    elif k == "noop":
        what = "%s: a step with no effect on the stream (or one the C code ignores)" % who
    elif k == "tick":
        what = "%s: the vote tick of the stream" % who
    elif k == "flush":
        what = "%s: the flush timer of the stream" % who
    elif k == "resend":
        what = "%s: the core's resend timer (STATUS, and the resend hook for its open instances)" % who
    elif k == "propose":
        what = "%s receives PROPOSE(%d, %s) from node %d" % (who, rec["q"], rec["v"], rec["j"])
    elif k == "payload":
        what = "%s receives PAYLOAD(%d, %s) from node %d" % (who, rec["q"], rec["v"], rec["j"])
    elif k == "vote":
        what = "%s receives %s from node %d" % (who, describe_vote((rec["q"], rec["v"], rec["rq"], rec["rv"])),
                                                 rec["j"])
    elif k in ("becho", "echo"):
        what = "%s receives the echo part ECHO(%d, %s) of %s node %d's VOTE" % (
            who, rec["q"], rec["v"], "Byzantine" if k == "becho" else "honest", rec["j"])
        if k == "echo":
            what += " (a resend or a replay: RecvEchoOnly)"
    else:
        what = "%s receives the READY part READY(%d, %s) of %s node %d's VOTE" % (
            who, rec["q"], rec["v"], "Byzantine" if k == "bready" else "honest", rec["j"])
        if k == "ready":
            what += " (riding on a resent VOTE: RecvStandalone)"
    eff = []
    eff += ["sends PROPOSE(%d, %s)" % tuple(x) for x in rec["prop"]]
    eff += ["sends " + describe_vote(tuple(x)) for x in rec["votes"]]
    eff += ["sends PULL(%d, %s) to node %d" % tuple(x) for x in rec["pulls"]]
    eff += ["sends PAYLOAD(%d, %s)" % tuple(x) for x in rec["pays"]]
    eff += ["offers DELIVERED(%d, %s)" % tuple(x) for x in rec["reps"]]
    eff += ["delivers %s in instance %d" % (x[1], x[0]) for x in rec["dlv"]]
    return what + ("; then " + ", ".join(eff) if eff else "; nothing else")


# ---- tampering ----

def mp_uint_bytes(x):
    """x as a msgpack uint, in its shortest form (as weft_mpw_uint)."""
    if x <= 0x7F:
        return bytes([x])
    for tag, width in ((0xCC, 1), (0xCD, 2), (0xCE, 4), (0xCF, 8)):
        if x < 1 << (8 * width):
            return bytes([tag]) + x.to_bytes(width, "big")
    raise ValueError("uint too large")


def rewrite_copies(lines, out, idx, sender_node, hexdata, new, after):
    """Changes every send of hexdata by sender_node and every receipt of it
    from that node, from line `after` on.  Returns how many."""
    changed = 0
    for lno, _, lev in lines:
        if lno < after or lev.get("data") != hexdata:
            continue
        if (lev["ev"] == "send" and lev["from"] == sender_node) or (lev["ev"] == "recv" and lev["from"] == sender_node):
            out[idx[lno]] = dump(dict(lev, data=new, bytes=len(new) // 2))
            changed += 1
    return changed


def cmd_tamper(args):
    sc = load_scenario(args.scenario)
    byz = set(sc["byz"])
    lines, out, idx = tamper_input(args.input)
    index_payloads(lines)
    steps = group_steps(lines)
    sender = args.sender if args.sender is not None else find_sender(steps)
    dels = [(no, ev) for no, _, ev in lines
            if ev["ev"] == "deliver" and ev["node"] not in byz and ev["origin"] == sender]
    mode = args.mode
    if mode in ("digest", "early", "double") and not dels:
        die("tamper: no delivery of the stream of node %d at an honest node to tamper with" % sender)
    step_of = {}
    for st in steps:
        for rno, _, _ in st["rest"]:
            step_of[rno] = st
    if mode == "digest":
        # An honest node delivers another digest: the instance's other
        # payload if the trace has one (an equivocating sender's), else a
        # made-up one.
        no, ev = dels[0]
        other = None
        for _, _, e in lines:
            if e["ev"] == "send" and "data" in e:
                m = decode(e["data"])
                if (m and m["ok"] and m["type"] == T_PROPOSE and (m["sender"], m["seq"]) == (sender, ev["seq"])
                        and m["value"] != ev["digest"]):
                    other = m["value"]
                    break
        other = other or ("%016x" % (int(ev["digest"], 16) ^ 0xFF))
        out[idx[no]] = dump(dict(ev, digest=other))
        print("tamper: line %d: node %d delivers %s instead of %s in instance %d"
              % (no, ev["node"], other, ev["digest"], ev["seq"]))
    elif mode == "early":
        # An honest node delivers in the step of the first VOTE it accepts
        # for the instance, long before n ECHOs or 2f+1 READYs.
        hit = None
        for no, ev in dels:
            node, q = ev["node"], ev["seq"]
            for st in steps:
                sno, _, sev = st["start"]
                if sno >= step_of[no]["start"][0]:
                    break
                if sev["ev"] != "recv" or sev["node"] != node or "data" not in sev:
                    continue
                m = decode(sev["data"])
                if (m and m["ok"] and m["type"] == T_VOTE and m["sender"] == sender and m["echo"] is not None
                        and m["seq"] == q and not any(r["ev"] == "reject" for _, _, r in st["rest"])):
                    hit = (no, ev, st)
                    break
            if hit:
                break
        if hit is None:
            die("tamper: no honest node accepts a VOTE of an instance before the step it delivers it in")
        no, ev, st = hit
        last = st["rest"][-1][0] if st["rest"] else st["start"][0]
        out.pop(idx[no])
        out.insert(idx[last] + 1, dump(dict(ev, t=lines[idx[last]][2]["t"])))
        print("tamper: line %d: node %d's delivery of instance %d moved to right after line %d, the step of its "
              "first VOTE receipt for it" % (no, ev["node"], ev["seq"], last))
    elif mode == "double":
        # An honest node delivers an instance a second time, in its next
        # step after the delivery.
        no, ev = dels[0]
        node = ev["node"]
        later = [st for st in steps if st["start"][0] > no and step_node(st["start"][2]) == node
                 and st["start"][2]["ev"] != "fault"]
        if not later:
            die("tamper: node %d takes no step after its delivery of line %d" % (node, no))
        st = later[0]
        last = st["rest"][-1][0] if st["rest"] else st["start"][0]
        out.insert(idx[last] + 1, dump(dict(ev, t=lines[idx[last]][2]["t"])))
        print("tamper: line %d: node %d delivers instance %d (%s) again in its next step (after line %d)"
              % (no, node, ev["seq"], ev["digest"], last))
    elif mode == "ride":
        # An honest node's VOTE(k) carries READY(k-1) before the node
        # decided it: its tick takes a READY that was never pending.
        hit = None
        readied = set()  # (node, seq): the node announced its READY for seq
        for st in steps:
            sno, _, sev = st["start"]
            node = step_node(sev)
            if node in byz:
                continue
            for rno, _, r in st["rest"]:
                if r["ev"] != "send" or "data" not in r:
                    continue
                m = decode(r["data"])
                if not (m and m["ok"] and m["type"] == T_VOTE and m["sender"] == sender):
                    continue
                if m["rf"] is not None:
                    readied.add((node, m["rf"]))
                elif (hit is None and sev["ev"] == "timer" and m["echo"] is not None and m["seq"] >= 1
                      and (node, m["seq"] - 1) not in readied):
                    hit = (sno, node, m)
        if hit is None:
            die("tamper: no honest tick VOTE(k), k >= 1, sent before the node announced READY(k-1)")
        sno, node, m = hit
        digest = next((ev["digest"] for _, ev in dels if ev["seq"] == m["seq"] - 1), None)
        st = next(s for s in steps if s["start"][0] == sno)
        changed, done = 0, set()
        for rno, _, r in st["rest"]:
            if r["ev"] != "send" or "data" not in r or r["data"] in done:
                continue
            done.add(r["data"])
            m2 = decode(r["data"])
            if not (m2 and m2["ok"] and m2["type"] == T_VOTE and m2["seq"] == m["seq"] and m2["rf"] is None):
                continue
            b = bytes.fromhex(r["data"])
            full = None
            # The 32-byte digest of READY(k-1): that of an honest VOTE(k-1)
            # echoing the digest delivered there.
            for _, _, e in lines:
                if e["ev"] == "send" and "data" in e and e["from"] not in byz:
                    m3 = decode(e["data"])
                    if (m3 and m3["ok"] and m3["type"] == T_VOTE and m3["sender"] == sender
                            and m3["seq"] == m["seq"] - 1 and m3["echo"] is not None
                            and (digest is None or m3["echo"] == digest)):
                        full = m3["echo_raw"]
                        break
            if full is None:
                die("tamper: no digest of instance %d to ride on" % (m["seq"] - 1))
            assert b[-2:] == b"\xc0\xc0" and b[0] == 0x97
            if m["seq"] - 1 > 0x7F:
                die("tamper: ride handles seqs below 128 only")
            nb = b[:-2] + bytes([m["seq"] - 1]) + b"\xc4\x20" + full
            new = nb.hex()
            changed += rewrite_copies(lines, out, idx, node, r["data"], new, rno)
        print("tamper: line %d: node %d's tick VOTE(%d) carries READY(%d) it never decided (%d lines changed)"
              % (sno, node, m["seq"], m["seq"] - 1, changed))
    elif mode == "resend":
        # An honest node's resend step sends a standalone READY(k) for an
        # open instance it has not readied: one whose VOTE(k) it resends
        # (the echo alone) without the standalone READY(k) that the resend
        # hook sends for every readied instance.  The READY names the
        # node's echo digest and goes to every node the VOTE(k) went to.
        hit = None
        for st in steps:
            sno, _, sev = st["start"]
            node = step_node(sev)
            if node in byz or sev["ev"] != "timer" or sev.get("id") != TIMER_CATCHUP:
                continue
            votes, standalone = {}, set()
            for rno, _, r in st["rest"]:
                if r["ev"] != "send" or "data" not in r:
                    continue
                m = decode(r["data"])
                if not (m and m["ok"] and m["type"] == T_VOTE and m["sender"] == sender):
                    continue
                if m["echo"] is None:
                    standalone.add(m["rf"])
                else:
                    votes.setdefault(m["seq"], []).append((rno, r, m))
            for q in sorted(votes):
                if q not in standalone:
                    hit = (st, node, q, votes[q])
                    break
            if hit:
                break
        if hit is None:
            die("tamper: no resend step of an honest node that resends a VOTE(k) without READY(k)")
        st, node, q, sends = hit
        body = bytes([0x97, 0x01, 0x01]) + mp_uint_bytes(sender) + mp_uint_bytes(q + 1) + b"\xc0" + \
            mp_uint_bytes(q) + b"\xc4\x20" + sends[0][2]["echo_raw"]
        new = body.hex()
        last = st["rest"][-1][0]
        extra = [dump(dict(r, data=new, bytes=len(body))) for _, r, _ in sends]
        out[idx[last]] = "\n".join([out[idx[last]]] + extra)
        print("tamper: line %d: node %d's resend step also sends a standalone READY(%d, %s), an instance it has not "
              "readied (%d lines added after line %d)" % (st["start"][0], node, q, sends[0][2]["echo"], len(extra),
                                                          last))
    elif mode == "forge":
        # An honest node receives from an honest node a VOTE whose echo
        # names another digest than the one the voter echoed.
        hit = None
        for no, _, ev in lines:
            if (ev["ev"] == "recv" and ev["node"] not in byz and ev["from"] not in byz and "data" in ev):
                m = decode(ev["data"])
                if m and m["ok"] and m["type"] == T_VOTE and m["sender"] == sender and m["echo"] is not None:
                    hit = (no, ev)
                    break
        if hit is None:
            die("tamper: no VOTE between honest nodes")
        no, ev = hit
        b = bytearray(bytes.fromhex(ev["data"]))
        _, i = mp_array(b, 0)
        for _ in range(4):
            _, i = mp_uint(b, i)
        b[i + 2] ^= 0x01  # c4 20 <echo digest>
        out[idx[no]] = dump(dict(ev, data=b.hex()))
        print("tamper: line %d: node %d receives from honest node %d a VOTE whose echo names another digest "
              "than the one it echoed" % (no, ev["node"], ev["from"]))
    write_trace(args.output, out)


MODES = ("digest", "early", "ride", "double", "forge", "resend")


def main():
    ap, _, c, t = command_line(__doc__, "AmortizedTrace", cmd_convert, describe_record, cmd_tamper, MODES,
                               instance=False)
    c.add_argument("--sender", type=int, help="the stream's sender (default: the first request's node)")
    t.add_argument("--sender", type=int)
    run_command(ap, die)


if __name__ == "__main__":
    main()
