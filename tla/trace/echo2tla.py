#!/usr/bin/env python3
"""echo2tla.py - turn a trace of weft's signed echo broadcast (weft-sim
--trace --trace-data, or weftd --trace merged with trace2tla.py merge) into
a TLA+ trace for EchoTrace.tla (trace validation against tla/EchoBRB.tla),
and tamper with traces to show that TLC rejects them.

    echo2tla.py convert --scenario S.json --trace T.ndjson --out DIR [--instance SENDER:SEQ]
        writes DIR/EchoTraceLog.tla, DIR/EchoTrace.cfg, DIR/steps.json
    echo2tla.py tamper --mode digest|early|sign|report --scenario S.json IN.ndjson OUT.ndjson
    echo2tla.py describe DIR/steps.json K
        prints record K of the log (1-based) with the trace lines it came from
Per-node weftd traces are merged with `trace2tla.py merge` (the same for
every protocol).

Python 3 standard library only; the NDJSON reader, the step grouping, the
msgpack helpers, the TLA+ writers and the command line are trace2tla.py's.  See README.md next to this file.

Steps.  As for Bracha: one `request`, `recv`, `timer`, `start`, `command`
line (or a `fault` crash / recover) with the `send`, `drop`, `deliver`,
`reject` lines after it is one callback of the C code, one action of
EchoBRB.tla.  Every step of an honest node becomes one record (see
EchoTrace.tla for the fields); steps of Byzantine nodes are dropped.

Values.  A payload is named by the first 8 bytes of its BLAKE2b-256 digest,
in hex: the string of `deliver` and `request` events.  SEND and DELIVERED
carry the payload; FINAL carries the digest itself.  An ECHO carries only
a signature, which this script cannot verify (no Ed25519 in the standard
library): what it signed is known from the certificates honest nodes
accepted (a FINAL an honest node received without rejecting it, or one an
honest sender made), which list (signer, signature) pairs for a digest;
an ECHO no such certificate lists has the value "?" (the spec's: the node
signs the payload it took).  At the honest sender, an ECHO it accepted is
"ok" and one it rejected as a bad signature is "!bad".

Exact mode only: the trace must carry the message bytes (weft-sim
--trace-data; weftd --trace always does).  Not modelled, reported as
unsupported (exit 2): a crash_recover that loses the store or the last
step (the node's vote may be lost), invalid deliveries, scenarios with
more than f faulty nodes.  A crash_recover that loses nothing is the
spec's Restart.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace2tla import (Unsupported, brb_header, command_line, committee_defs, dier, dump, group_steps,  # noqa: E402
                       has_data, instance_of, load_and_convert, mp_array, mp_bin, mp_report, mp_uint,
                       node_name, one, read_scenario, run_command, step_node, tamper_input, tla_set, tla_str,
                       value_of, write_steps, write_trace, write_trace_module)

T_SEND, T_ECHO, T_FINAL, T_STATUS, T_DELIVERED = 0, 1, 2, 16, 17
NAMES = {T_SEND: "SEND", T_ECHO: "ECHO", T_FINAL: "FINAL", T_DELIVERED: "DELIVERED"}
CRYPTO_ERR = "cryptographic check failed"  # weft_strerror(WEFT_ECRYPTO)
INVALID = "invalid"  # the value of an invalid-verdict DELIVERED report


die = dier("echo2tla")


# ---- scenario ----

def load_scenario(path):
    sc = read_scenario(path, "echo", "EchoBRB.tla")
    return {"n": sc["n"], "f": sc["f"], "byz": sc["byz"]}


# ---- the messages of echo and of the core's catch-up ----

def decode(hexdata):
    """A BRB message of the echo protocol or the core's catch-up, as the C
    code reads it: a dict with type, sender, seq and the fields, or None
    when it does not decode (the C code rejects it)."""
    h = brb_header(hexdata)
    if h is None:
        return None
    b, count, typ, sender, seq, i = h
    try:
        m = {"type": typ, "sender": sender, "seq": seq}
        if typ == T_SEND and count == 5:
            payload, i = mp_bin(b, i)
            m["value"] = value_of(payload)
        elif typ == T_ECHO and count == 5:
            sig, i = mp_bin(b, i)
            m["sig"] = sig.hex()
        elif typ == T_FINAL and count == 6:
            digest, i = mp_bin(b, i)
            if len(digest) != 32:
                return None
            m["value"] = digest[:8].hex()
            k, i = mp_array(b, i)
            cert = []
            for _ in range(k):
                two, i = mp_array(b, i)
                if two != 2:
                    return None
                signer, i = mp_uint(b, i)
                sig, i = mp_bin(b, i)
                cert.append((signer, sig.hex()))
            m["cert"] = cert
        elif typ == T_DELIVERED and count == 6:
            invalid, payload, i = mp_report(b, i)
            m["value"] = INVALID if invalid else value_of(payload)
        elif typ == T_STATUS:
            return m  # not needed: a STATUS changes nothing in the spec
        else:
            return None
        if i != len(b):
            return None
        return m
    except (ValueError, IndexError):
        return None


# ---- conversion ----

def find_instance(steps):
    """The instance under test: (node, seq) of the first request's SEND."""
    for st in steps:
        no, _, ev = st["start"]
        if ev["ev"] != "request":
            continue
        for _, _, r in st["rest"]:
            if r["ev"] == "send" and r["from"] == ev["node"] and "data" in r:
                m = decode(r["data"])
                if m and m["type"] == T_SEND and m["sender"] == ev["node"]:
                    return ev["node"], m["seq"]
        raise Unsupported("line %d: the request of node %d sends no decodable SEND" % (no, ev["node"]))
    raise Unsupported("no request in the trace: nothing was broadcast")


def signed_digests(steps, byz, inst):
    """signature (signer, hex) -> the digests certificates honest nodes
    accepted (or an honest sender made) say it is over."""
    known = {}

    def note(m):
        for signer, sig in m["cert"]:
            known.setdefault((signer, sig), set()).add(m["value"])

    for st in steps:
        no, _, ev = st["start"]
        node = step_node(ev)
        if node in byz:
            continue
        rejected = any(r["ev"] == "reject" for _, _, r in st["rest"])
        if ev["ev"] == "recv" and not rejected and "data" in ev:
            m = decode(ev["data"])
            if m and m["type"] == T_FINAL and (m["sender"], m["seq"]) == inst:
                note(m)
        for _, _, r in st["rest"]:
            if r["ev"] == "send" and "data" in r and r["from"] == node:
                m = decode(r["data"])
                if m and m["type"] == T_FINAL and (m["sender"], m["seq"]) == inst and node == inst[0]:
                    note(m)
    return known


def convert(sc, lines, instance=None):
    n, f, byz = sc["n"], sc["f"], set(sc["byz"])
    if not has_data(lines):
        raise Unsupported("the trace has no message bytes: run weft-sim with --trace-data "
                          "(echo traces are checked in exact mode only)")
    steps = group_steps(lines)
    inst = tuple(instance) if instance else find_instance(steps)
    sender, seq = inst
    known = signed_digests(steps, byz, inst)
    values = set()
    records, sources = [], []
    for st in steps:
        no, text, ev = st["start"]
        node = step_node(ev)
        if node in byz:
            continue
        rec = {"k": "noop", "i": node, "j": node, "v": "?", "cs": [], "sig": "none", "snd": "none",
               "fin": "none", "fcs": [], "rep": "none", "dlv": "none", "line": no}
        rejects = [r for _, _, r in st["rest"] if r["ev"] == "reject"]
        if ev["ev"] == "fault":
            if ev.get("fault") == "crash":
                rec["k"] = "restart"
        elif ev["ev"] == "request":
            mine = None
            for _, _, r in st["rest"]:
                if r["ev"] == "send" and "data" in r:
                    m = decode(r["data"])
                    if m and m["type"] == T_SEND:
                        mine = (m["sender"], m["seq"])
            if mine == inst:
                rec["k"] = "request"
                rec["v"] = ev.get("digest", "?")
        elif ev["ev"] == "recv":
            rec["j"] = ev["from"]
            m = decode(ev["data"]) if "data" in ev else None
            if m is not None and (m["sender"], m["seq"]) == inst and m["type"] != T_STATUS:
                typ = m["type"]
                if rejects:
                    # The C code rejected it: no effect, except that an ECHO
                    # the sender found badly signed says what its signer did.
                    if typ == T_ECHO and node == sender and rejects[0].get("err") == CRYPTO_ERR:
                        rec["k"], rec["v"] = "echo", "!bad"
                elif typ == T_SEND:
                    rec["k"], rec["v"] = "send", m["value"]
                elif typ == T_ECHO:
                    if node == sender:
                        rec["k"], rec["v"] = "echo", "ok"
                    else:
                        raise Unsupported("line %d: node %d accepted an ECHO for an instance it is not the "
                                          "sender of" % (no, node))
                elif typ == T_FINAL:
                    rec["k"], rec["v"] = "final", m["value"]
                    rec["cs"] = sorted(set(s for s, _ in m["cert"]))
                    if any(s >= n for s in rec["cs"]):
                        raise Unsupported("line %d: a certificate an honest node accepted names an unknown "
                                          "signer" % no)
                elif typ == T_DELIVERED:
                    rec["k"], rec["v"] = "delivered", m["value"]
            elif m is None and not rejects:
                raise Unsupported("line %d: node %d accepted a message this script cannot decode" % (no, node))
        sent = {"sig": set(), "snd": set(), "fin": set(), "rep": set()}
        for rno, _, r in st["rest"]:
            if r["ev"] == "send":
                if r["from"] != node:
                    raise Unsupported("line %d: a send of node %d inside a step of node %d" % (rno, r["from"], node))
                m = decode(r.get("data", ""))
                if m is None or (m["sender"], m["seq"]) != inst:
                    continue
                typ = m["type"]
                if typ == T_SEND:
                    # Only the sender sends SEND (echo_on_request, resend,
                    # answer_late_echo).
                    sent["snd"].add(m["value"] if node == sender else "!conflict")
                elif typ == T_ECHO:
                    ds = known.get((node, m["sig"]), set())
                    if node == sender or r["to"] != sender:
                        sent["sig"].add("!conflict")  # the sender sends no ECHO; an ECHO goes to the sender
                    elif len(ds) > 1:
                        sent["sig"].add("!conflict")  # certificates for two digests list it
                    else:
                        sent["sig"].add(ds.pop() if ds else "?")
                elif typ == T_FINAL:
                    sent["fin"].add(m["value"] if node == sender else "!conflict")
                    rec["fcs"] = sorted(set(s for s, _ in m["cert"]))
                elif typ == T_DELIVERED:
                    sent["rep"].add(m["value"])
            elif r["ev"] == "deliver":
                if r["node"] != node:
                    raise Unsupported("line %d: a delivery of node %d inside a step of node %d"
                                      % (rno, r["node"], node))
                if (r["origin"], r["seq"]) != inst:
                    continue
                if r.get("invalid"):
                    raise Unsupported("line %d: an invalid delivery (the echo broadcast never makes one)" % rno)
                rec["dlv"] = r["digest"]
        for key in sent:
            vals = sent[key]
            if key == "sig" and "?" in vals and len(vals) > 1:
                vals.discard("?")  # the same signature sent twice, once known
            rec[key] = one(vals)
        for key in ("v", "sig", "snd", "fin", "rep", "dlv"):
            if rec[key] not in ("?", "none", "!conflict", "!bad", "ok"):
                values.add(rec[key])
        records.append(rec)
        sources.append([no] + [rno for rno, _, _ in st["rest"]])
    if not any(r["k"] == "request" for r in records) and sender not in byz:
        raise Unsupported("instance (%d, %d): its honest sender's request is not in the trace" % inst)
    return {"n": n, "f": f, "byz": sorted(byz), "sender": sender, "seq": seq,
            "values": sorted(values), "records": records, "sources": sources}


def rec_tla(r):
    return ("[k |-> %s, i |-> %s, j |-> %s, v |-> %s, cs |-> %s, sig |-> %s, snd |-> %s, fin |-> %s, "
            "fcs |-> %s, rep |-> %s, dlv |-> %s, line |-> %d]"
            % (tla_str(r["k"]), node_name(r["i"]), node_name(r["j"]), tla_str(r["v"]),
               tla_set(node_name(s) for s in r["cs"]), tla_str(r["sig"]), tla_str(r["snd"]),
               tla_str(r["fin"]), tla_set(node_name(s) for s in r["fcs"]), tla_str(r["rep"]),
               tla_str(r["dlv"]), r["line"]))


def write_module(conv, trace_path, outdir):
    write_trace_module(outdir, "EchoTrace", "echo2tla", trace_path,
                       ["Instance (sender %d, seq %d); %d records." % (conv["sender"], conv["seq"],
                                                                     len(conv["records"]))],
                       "Naturals, Sequences",
                       committee_defs(conv) + ["TValue == %s" % tla_set(tla_str(v) for v in conv["values"])],
                       [rec_tla(r) for r in conv["records"]])


def cmd_convert(args):
    _, lines, conv = load_and_convert(args, die, 3, load_scenario, convert, instance_of)
    write_module(conv, args.trace, args.out)
    write_steps(args.out, args.trace, lines, conv["records"], conv["sources"])
    print("echo2tla: %d trace lines -> %d records, instance (%d, %d), values %s"
          % (len(lines), len(conv["records"]), conv["sender"], conv["seq"], ", ".join(conv["values"]) or "-"))


def describe_record(rec):
    who = "node %d" % rec["i"]
    k = rec["k"]
    if k == "request":
        what = "%s broadcasts %s" % (who, rec["v"])
    elif k == "noop":
        what = "%s: a step with no effect on the instance" % who
    elif k == "restart":
        what = "%s crashes (and later recovers from its store)" % who
    elif k == "echo":
        what = "%s receives ECHO from node %d (%s)" % (
            who, rec["j"], "a bad signature, rejected" if rec["v"] == "!bad" else "signature accepted")
    elif k == "final":
        what = "%s receives FINAL(%s) from node %d, signers %s" % (
            who, rec["v"], rec["j"], ",".join(str(s) for s in rec["cs"]))
    else:
        what = "%s receives %s(%s) from node %d" % (who, k.upper(), rec["v"], rec["j"])
    eff = []
    if rec["snd"] != "none":
        eff.append("sends SEND(%s)" % rec["snd"])
    if rec["sig"] != "none":
        eff.append("sends ECHO (%s)" % (
            "signed over a digest no accepted certificate shows" if rec["sig"] == "?" else
            "certificates show its signature over two digests" if rec["sig"] == "!conflict" else
            "signed over %s, as a certificate shows" % rec["sig"]))
    if rec["fin"] != "none":
        eff.append("sends FINAL(%s), signers %s" % (rec["fin"], ",".join(str(s) for s in rec["fcs"])))
    if rec["rep"] != "none":
        eff.append("reports DELIVERED(%s)" % rec["rep"])
    if rec["dlv"] != "none":
        eff.append("delivers %s" % rec["dlv"])
    return what + ("; then " + ", ".join(eff) if eff else "; nothing else")


# ---- tampering ----

def cmd_tamper(args):
    sc = load_scenario(args.scenario)
    byz = set(sc["byz"])
    lines, out, idx = tamper_input(args.input)
    steps = group_steps(lines)
    inst = find_instance(steps)
    dels = [(no, ev) for no, _, ev in lines
            if ev["ev"] == "deliver" and ev["node"] not in byz and (ev["origin"], ev["seq"]) == inst]
    if not dels:
        die("tamper: no delivery of instance (%d, %d) at an honest node to tamper with" % inst)
    mode = args.mode
    if mode == "digest":
        # An honest node delivers a digest that no certificate names: the
        # instance's other payload if the trace has one (an equivocating
        # sender's), else a made-up one.
        no, ev = dels[0]
        other = None
        for _, _, e in lines:
            if e["ev"] == "send" and "data" in e:
                m = decode(e["data"])
                if (m and m["type"] == T_SEND and (m["sender"], m["seq"]) == inst
                        and m["value"] != ev["digest"]):
                    other = m["value"]
                    break
        other = other or ("%016x" % (int(ev["digest"], 16) ^ 0xFF))
        out[idx[no]] = dump(dict(ev, digest=other))
        print("tamper: line %d: node %d delivers %s instead of %s" % (no, ev["node"], other, ev["digest"]))
    elif mode == "early":
        # An honest node delivers in the step of its SEND receipt, before
        # the FINAL that made it deliver arrived.
        hit = None
        for no, ev in dels:
            node = ev["node"]
            step = next(st for st in steps if no in [r[0] for r in st["rest"]])
            m = decode(step["start"][2].get("data", "")) if step["start"][2]["ev"] == "recv" else None
            if not m or m["type"] != T_FINAL:
                continue
            for st in steps:
                sno, _, sev = st["start"]
                if sno >= step["start"][0]:
                    break
                if sev["ev"] == "recv" and sev["node"] == node and "data" in sev:
                    sm = decode(sev["data"])
                    if sm and sm["type"] == T_SEND and (sm["sender"], sm["seq"]) == inst:
                        hit = (no, ev, st)
                        break
            if hit:
                break
        if hit is None:
            die("tamper: no honest node receives the SEND before the FINAL it delivers on")
        no, ev, st = hit
        last = st["rest"][-1][0] if st["rest"] else st["start"][0]
        out.pop(idx[no])
        out.insert(idx[last] + 1, dump(dict(ev, t=lines[idx[last]][2]["t"])))
        print("tamper: line %d: node %d's delivery moved to right after line %d, the step of its SEND "
              "receipt, before the FINAL" % (no, ev["node"], last))
    elif mode == "sign":
        # A certificate an honest node accepts names another digest: its
        # honest signers' signatures are then over that digest, which is
        # not the payload they took (their ECHO signed another digest).
        hit = None
        for no, _, ev in lines:
            if ev["ev"] == "recv" and ev["node"] not in byz and "data" in ev:
                m = decode(ev["data"])
                if (m and m["type"] == T_FINAL and (m["sender"], m["seq"]) == inst
                        and any(s not in byz and s != inst[0] for s, _ in m["cert"])):
                    hit = (no, ev)
                    break
        if hit is None:
            die("tamper: no FINAL with an honest non-sender signer reaches an honest node")
        no, ev = hit
        b = bytearray(bytes.fromhex(ev["data"]))
        # [1, 2, sender, seq, digest(bin 32), cert]: the digest follows
        # the header; flip its first byte.
        _, i = mp_array(b, 0)
        for _ in range(4):
            _, i = mp_uint(b, i)
        b[i + 2] ^= 0x01  # c4 20 <digest>
        # Every copy of that FINAL (its sends, its other receipts) changes
        # alike, so the trace says consistently what the signatures are over.
        changed = 0
        for lno, _, lev in lines:
            if lev["ev"] in ("send", "recv") and lev.get("data") == ev["data"]:
                out[idx[lno]] = dump(dict(lev, data=b.hex()))
                changed += 1
        print("tamper: line %d (and %d more copies): node %d accepts a FINAL whose certificate is over another "
              "digest: its honest signers signed another payload than the SEND they took"
              % (no, changed - 1, ev["node"]))
    elif mode == "report":
        # An honest node's catch-up report (DELIVERED) carries another
        # payload than the one it delivered.
        hit = None
        for no, _, ev in lines:
            if ev["ev"] == "send" and ev["from"] not in byz and "data" in ev:
                m = decode(ev["data"])
                if m and m["type"] == T_DELIVERED and (m["sender"], m["seq"]) == inst and m["value"] != INVALID:
                    hit = (no, ev)
                    break
        if hit is None:
            die("tamper: no DELIVERED report from an honest node (no catch-up in this run)")
        no, ev = hit
        b = bytearray(bytes.fromhex(ev["data"]))
        b[-1] ^= 0x01  # the payload is the last field
        new = b.hex()
        out[idx[no]] = dump(dict(ev, data=new))
        for rno, _, rev in lines:  # and its receipt, which carries the same bytes
            if (rno > no and rev["ev"] == "recv" and rev["from"] == ev["from"] and rev["node"] == ev["to"]
                    and rev.get("data") == ev["data"]):
                out[idx[rno]] = dump(dict(rev, data=new))
                break
        print("tamper: line %d: honest node %d reports DELIVERED with another payload than the one it "
              "delivered" % (no, ev["from"]))
    write_trace(args.output, out)


MODES = ("digest", "early", "sign", "report")


def main():
    ap, _, _, _ = command_line(__doc__, "EchoTrace", cmd_convert, describe_record, cmd_tamper, MODES)
    run_command(ap, die)


if __name__ == "__main__":
    main()
