#!/usr/bin/env python3
"""coded2tla.py - turn a trace of weft's erasure-coded reliable broadcast
(weft-sim --trace --trace-data, or weftd --trace merged with trace2tla.py
merge) into a TLA+ trace for CodedTrace.tla (trace validation against
tla/CodedBRB.tla), and tamper with traces to show that TLC rejects them.

    coded2tla.py convert --scenario S.json --trace T.ndjson --out DIR [--instance SENDER:SEQ]
        writes DIR/CodedTraceLog.tla, DIR/CodedTrace.cfg, DIR/steps.json
    coded2tla.py tamper --mode digest|early|echo|ready --scenario S.json IN.ndjson OUT.ndjson
    coded2tla.py describe DIR/steps.json K
        prints record K of the log (1-based) with the trace lines it came from
    coded2tla.py roots --scenario S.json --trace T.ndjson
        prints every root of the first instance with what its leaves are

Python 3 standard library only; the NDJSON reader, the step grouping, the
msgpack helpers, the TLA+ writers, the command line and the per-node merge
are trace2tla.py's.  See README.md
next to this file, "Erasure-coded broadcast".

Steps.  As for Bracha: one `request`, `recv`, `timer`, `start`, `command`
line (or a `fault` crash / recover) with the `send`, `drop`, `deliver`,
`reject` lines after it is one callback of the C code, one action of
CodedBRB.tla.  Every step of an honest node becomes one record (see
CodedTrace.tla for the fields); steps of Byzantine nodes are dropped.

Roots and values.  CodedBRB.tla names a codeword root by its payload: the
root of the canonical encoding of payload v IS the value v.  So this script
classifies every root the trace shows, as deliver_root does: it collects
the leaves the messages carry (a VAL or ECHO an honest node accepted, or
one an honest node sent), and with k of them decodes (the Cauchy
Reed-Solomon code of protocols/erasure.c over GF(2^8), polynomial 0x11d),
checks the framing (length field, frag_len, max_payload), re-encodes
canonically and rebuilds the Merkle tree (BLAKE2b-256, 0x00 / 0x01
prefixes, zero pad nodes).  A root that comes back is the value named by
its payload's digest (the first 8 bytes of BLAKE2b-256, in hex: the string
of `request` and `deliver` events); any other is a bad root, named "b" and
the first 8 bytes of the root (verdict "invalid"); a root with fewer than
k known leaves is "u" and its bytes (nobody honest can have delivered it;
the spec treats it as a bad root, which constrains nothing).

Exact mode only: the trace must carry the message bytes (weft-sim
--trace-data; weftd --trace always does).  Not modelled, reported as
unsupported (exit 2): a crash_recover that loses the store (the node's
votes may be lost), scenarios with more than f faulty nodes.
"""
import hashlib
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace2tla import (Unsupported, brb_header, command_line, committee_defs, dier, dump, group_steps,  # noqa: E402
                       has_data, instance_of, load_and_convert, load_trace, mp_array, mp_bin, mp_report,
                       mp_uint, node_name, one, read_scenario, run_command, step_node, tamper_input, tla_set,
                       tla_str, value_of, write_steps, write_trace, write_trace_module)

T_VAL, T_ECHO, T_READY, T_STATUS, T_DELIVERED = 0, 1, 2, 16, 17
NAMES = {T_VAL: "VAL", T_ECHO: "ECHO", T_READY: "READY", T_DELIVERED: "DELIVERED"}
INVALID = "invalid"  # the outcome of an invalid verdict (CodedBRB's Invalid)
MAX_PAYLOAD = 4 << 20  # the core's default max_payload


die = dier("coded2tla")


# ---- scenario ----

def load_scenario(path):
    sc = read_scenario(path, "coded", "CodedBRB.tla")
    restarts = sum(len(flt["nodes"]) for flt in sc["json"].get("faults", []) if flt["kind"] == "crash_recover")
    params = sc["json"].get("params", {}) or {}
    return {"n": sc["n"], "f": sc["f"], "byz": sc["byz"], "restarts": restarts,
            "max_payload": params.get("max_payload", MAX_PAYLOAD)}


# ---- the messages of coded and of the core's catch-up ----

def decode(hexdata):
    """A BRB message of coded or of the core's catch-up, as the C code reads
    it: a dict with type, sender, seq and the fields, or None when it does
    not decode (the C code rejects it)."""
    h = brb_header(hexdata)
    if h is None:
        return None
    b, count, typ, sender, seq, i = h
    try:
        m = {"type": typ, "sender": sender, "seq": seq}
        if typ in (T_VAL, T_ECHO) and count == 8:
            root, i = mp_bin(b, i)
            index, i = mp_uint(b, i)
            frag, i = mp_bin(b, i)
            depth, i = mp_array(b, i)
            proof = []
            for _ in range(depth):
                h, i = mp_bin(b, i)
                proof.append(h)
            if len(root) != 32 or any(len(h) != 32 for h in proof):
                return None
            m.update(root=root, index=index, frag=frag, proof=proof)
        elif typ == T_READY and count == 5:
            root, i = mp_bin(b, i)
            if len(root) != 32:
                return None
            m["root"] = root
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


# ---- GF(2^8), the Cauchy Reed-Solomon code, the Merkle tree ----

EXP = [0] * 512
LOG = [0] * 256
_x = 1
for _e in range(255):
    EXP[_e] = _x
    LOG[_x] = _e
    _x <<= 1
    if _x & 0x100:
        _x ^= 0x11D
for _e in range(255, 512):
    EXP[_e] = EXP[_e - 255]


def gf_mul(a, b):
    return 0 if a == 0 or b == 0 else EXP[LOG[a] + LOG[b]]


def gf_inv(a):
    return EXP[255 - LOG[a]]


def code_matrix(n, k):
    """gf_gen_cauchy1_matrix(a, n, k): the identity, then 1 / (i ^ j)."""
    rows = [[1 if c == r else 0 for c in range(k)] for r in range(k)]
    rows += [[gf_inv(r ^ c) for c in range(k)] for r in range(k, n)]
    return rows


def mat_inv(m):
    """Inverse of a k x k matrix over GF(2^8) (Gauss-Jordan), or None."""
    k = len(m)
    a = [row[:] + [1 if c == r else 0 for c in range(k)] for r, row in enumerate(m)]
    for col in range(k):
        piv = next((r for r in range(col, k) if a[r][col]), None)
        if piv is None:
            return None
        a[col], a[piv] = a[piv], a[col]
        inv = gf_inv(a[col][col])
        a[col] = [gf_mul(x, inv) for x in a[col]]
        for r in range(k):
            if r != col and a[r][col]:
                f = a[r][col]
                a[r] = [x ^ gf_mul(f, y) for x, y in zip(a[r], a[col])]
    return [row[k:] for row in a]


def combine(coefs, frags, fl):
    out = bytearray(fl)
    for c, frag in zip(coefs, frags):
        if c:
            for p in range(fl):
                if frag[p]:
                    out[p] ^= gf_mul(c, frag[p])
    return bytes(out)


def frag_len_for(length, k):
    return max(1, (4 + length + k - 1) // k)


def encode(payload, n, k):
    """The canonical codeword of payload: n fragments (coded.c's encode)."""
    fl = frag_len_for(len(payload), k)
    buf = len(payload).to_bytes(4, "big") + payload
    buf += bytes(k * fl - len(buf))
    data = [buf[j * fl:(j + 1) * fl] for j in range(k)]
    mat = code_matrix(n, k)
    return data + [combine(mat[r], data, fl) for r in range(k, n)]


def h(*parts):
    return hashlib.blake2b(b"".join(parts), digest_size=32).digest()


def merkle_root(leaves):
    level = [h(b"\x00", leaf) for leaf in leaves]
    while len(level) > 1:
        if len(level) % 2:
            level.append(bytes(32))
        level = [h(b"\x01", level[p], level[p + 1]) for p in range(0, len(level), 2)]
    return level[0]


def classify(root, leaves, n, k, max_payload):
    """What deliver_root concludes from root's leaves (index -> bytes): the
    payload's value name, INVALID, or None when fewer than k are known."""
    if len(leaves) < k:
        return None
    if len(set(len(x) for x in leaves.values())) > 1:
        return INVALID  # mixed lengths: not a codeword whatever one decodes
    idx = sorted(leaves)[:k]
    fl = len(leaves[idx[0]])
    mat = code_matrix(n, k)
    inv = mat_inv([mat[j] for j in idx])
    if inv is None:
        return INVALID  # not reached: every k rows of a Cauchy matrix are independent
    frags = [leaves[j] for j in idx]
    data = b"".join(combine(inv[r], frags, fl) for r in range(k))
    length = int.from_bytes(data[:4], "big")
    if length > k * fl - 4 or length > max_payload or frag_len_for(length, k) != fl:
        return INVALID
    payload = data[4:4 + length]
    if merkle_root(encode(payload, n, k)) != root:
        return INVALID
    return value_of(payload)


# ---- conversion ----

def find_instance(steps):
    """The instance under test: (node, seq) of the first request's VAL."""
    for st in steps:
        no, _, ev = st["start"]
        if ev["ev"] != "request":
            continue
        for _, _, r in st["rest"]:
            if r["ev"] == "send" and r["from"] == ev["node"] and "data" in r:
                m = decode(r["data"])
                if m and m["type"] in (T_VAL, T_ECHO) and m["sender"] == ev["node"]:
                    return ev["node"], m["seq"]
        raise Unsupported("line %d: the request of node %d sends no decodable VAL or ECHO" % (no, ev["node"]))
    raise Unsupported("no request in the trace: nothing was broadcast")


def root_leaves(steps, byz, inst):
    """root bytes -> {index: leaf}: the leaves honest nodes accepted (a VAL
    or ECHO received without a rejection: its proof verified) or sent."""
    leaves = {}

    def note(m):
        leaves.setdefault(m["root"], {}).setdefault(m["index"], m["frag"])

    for st in steps:
        _, _, ev = st["start"]
        node = step_node(ev)
        if node in byz:
            continue
        rejected = any(r["ev"] == "reject" for _, _, r in st["rest"])
        if ev["ev"] == "recv" and not rejected and "data" in ev:
            m = decode(ev["data"])
            if m and m["type"] in (T_VAL, T_ECHO) and (m["sender"], m["seq"]) == inst:
                note(m)
        for _, _, r in st["rest"]:
            if r["ev"] == "send" and r.get("from") == node and "data" in r:
                m = decode(r["data"])
                if m and m["type"] in (T_VAL, T_ECHO) and (m["sender"], m["seq"]) == inst:
                    note(m)
    return leaves


def root_names(steps, byz, inst, n, f, max_payload):
    """root bytes -> its name in the TLA+ trace (see the module comment)."""
    names = {}
    for root, lv in root_leaves(steps, byz, inst).items():
        verdict = classify(root, lv, n, f + 1, max_payload)
        if verdict is None:
            names[root] = "u" + root[:8].hex()
        elif verdict == INVALID:
            names[root] = "b" + root[:8].hex()
        else:
            names[root] = verdict
    return names


def convert(sc, lines, instance=None):
    n, f, byz = sc["n"], sc["f"], set(sc["byz"])
    if not has_data(lines):
        raise Unsupported("the trace has no message bytes: run weft-sim with --trace-data "
                          "(coded traces are checked in exact mode only)")
    steps = group_steps(lines)
    inst = tuple(instance) if instance else find_instance(steps)
    sender, seq = inst
    names = root_names(steps, byz, inst, n, f, sc["max_payload"])

    def rname(root):
        if root not in names:  # a root no honest node accepted a leaf of
            names[root] = "u" + root[:8].hex()
        return names[root]

    records, sources = [], []
    crashes = 0
    for st in steps:
        no, _, ev = st["start"]
        node = step_node(ev)
        if node in byz:
            continue
        rec = {"k": "noop", "i": node, "j": node, "r": "?", "es": "none", "rs": "none", "vs": "none",
               "rep": "none", "dlv": "none", "line": no}
        rejects = [r for _, _, r in st["rest"] if r["ev"] == "reject"]
        if ev["ev"] == "fault":
            if ev.get("fault") == "crash":
                rec["k"] = "restart"
                crashes += 1
        elif ev["ev"] == "request":
            mine = None
            for _, _, r in st["rest"]:
                if r["ev"] == "send" and "data" in r:
                    m = decode(r["data"])
                    if m and m["type"] in (T_VAL, T_ECHO):
                        mine = (m["sender"], m["seq"])
            if mine == inst:
                rec["k"] = "request"
                rec["r"] = ev.get("digest", "?")
        elif ev["ev"] == "timer":
            rec["k"] = "timer"
        elif ev["ev"] == "recv":
            rec["j"] = ev["from"]
            m = decode(ev["data"]) if "data" in ev else None
            if m is not None and (m["sender"], m["seq"]) == inst and m["type"] != T_STATUS and not rejects:
                typ = m["type"]
                if typ == T_VAL:
                    rec["k"], rec["r"] = "val", rname(m["root"])
                elif typ == T_ECHO:
                    rec["k"], rec["r"] = "echo", rname(m["root"])
                elif typ == T_READY:
                    rec["k"], rec["r"] = "ready", rname(m["root"])
                elif typ == T_DELIVERED:
                    rec["k"], rec["r"] = "delivered", m["value"]
            elif m is None and not rejects:
                raise Unsupported("line %d: node %d accepted a message this script cannot decode" % (no, node))
        sent = {"es": set(), "rs": set(), "vs": set(), "rep": set()}
        for rno, _, r in st["rest"]:
            if r["ev"] == "send":
                if r["from"] != node:
                    raise Unsupported("line %d: a send of node %d inside a step of node %d" % (rno, r["from"], node))
                m = decode(r.get("data", ""))
                if m is None or (m["sender"], m["seq"]) != inst:
                    continue
                typ = m["type"]
                if typ == T_VAL:
                    # Only the sender sends VALs, node index its leaf.
                    ok = node == sender and m["index"] == r["to"]
                    sent["vs"].add(rname(m["root"]) if ok else "!conflict")
                elif typ == T_ECHO:
                    # A node echoes its own leaf only.
                    sent["es"].add(rname(m["root"]) if m["index"] == node else "!conflict")
                elif typ == T_READY:
                    sent["rs"].add(rname(m["root"]))
                elif typ == T_DELIVERED:
                    sent["rep"].add(m["value"])
            elif r["ev"] == "deliver":
                if r["node"] != node:
                    raise Unsupported("line %d: a delivery of node %d inside a step of node %d"
                                      % (rno, r["node"], node))
                if (r["origin"], r["seq"]) != inst:
                    continue
                rec["dlv"] = INVALID if r.get("invalid") else r["digest"]
        for key in sent:
            rec[key] = one(sent[key])
        records.append(rec)
        sources.append([no] + [rno for rno, _, _ in st["rest"]])
    if not any(r["k"] == "request" for r in records) and sender not in byz:
        raise Unsupported("instance (%d, %d): its honest sender's request is not in the trace" % inst)
    # The values: every codeword root, every value named anywhere; the bad
    # (and unknown) roots.
    values, bad = set(), set()
    for nm in names.values():
        (bad if nm[0] in "bu" and len(nm) == 17 else values).add(nm)
    for rec in records:
        for key in ("r", "es", "rs", "vs", "rep", "dlv"):
            x = rec[key]
            if x not in ("?", "none", "!conflict", INVALID) and x not in bad:
                values.add(x)
    return {"n": n, "f": f, "byz": sorted(byz), "sender": sender, "seq": seq, "restarts": crashes,
            "values": sorted(values), "bad": sorted(bad), "records": records, "sources": sources,
            "names": {k.hex(): v for k, v in names.items()}}


def rec_tla(r):
    return ("[k |-> %s, i |-> %s, j |-> %s, r |-> %s, es |-> %s, rs |-> %s, vs |-> %s, rep |-> %s, "
            "dlv |-> %s, line |-> %d]"
            % (tla_str(r["k"]), node_name(r["i"]), node_name(r["j"]), tla_str(r["r"]), tla_str(r["es"]),
               tla_str(r["rs"]), tla_str(r["vs"]), tla_str(r["rep"]), tla_str(r["dlv"]), r["line"]))


def write_module(conv, trace_path, outdir):
    write_trace_module(outdir, "CodedTrace", "coded2tla", trace_path,
                       ["Instance (sender %d, seq %d); %d records." % (conv["sender"], conv["seq"],
                                                                     len(conv["records"]))],
                       "Naturals, Sequences",
                       committee_defs(conv) + ["TValue == %s" % tla_set(tla_str(v) for v in conv["values"]),
                                               "TBadRoot == %s" % tla_set(tla_str(v) for v in conv["bad"]),
                                               "TInvalid == %s" % tla_str(INVALID),
                                               "TRestarts == %d" % conv["restarts"]],
                       [rec_tla(r) for r in conv["records"]])


def cmd_convert(args):
    _, lines, conv = load_and_convert(args, die, 3, load_scenario, convert, instance_of)
    write_module(conv, args.trace, args.out)
    write_steps(args.out, args.trace, lines, conv["records"], conv["sources"], roots=conv["names"])
    print("coded2tla: %d trace lines -> %d records, instance (%d, %d), values %s, bad roots %s"
          % (len(lines), len(conv["records"]), conv["sender"], conv["seq"], ", ".join(conv["values"]) or "-",
             ", ".join(conv["bad"]) or "-"))


def cmd_roots(args):
    try:
        sc = load_scenario(args.scenario)
        lines = load_trace(args.trace)
        steps = group_steps(lines)
        inst = find_instance(steps)
    except Unsupported as exc:
        die("unsupported: %s" % exc, 3)
    byz = set(sc["byz"])
    for root, lv in root_leaves(steps, byz, inst).items():
        verdict = classify(root, lv, sc["n"], sc["f"] + 1, sc["max_payload"])
        print("root %s: leaves %s known: %s" % (root.hex()[:16], sorted(lv),
                                                "too few to decode" if verdict is None else
                                                "not a codeword (invalid)" if verdict == INVALID else
                                                "the codeword of payload %s" % verdict))


def describe_record(rec):
    who = "node %d" % rec["i"]
    k = rec["k"]
    if k == "request":
        what = "%s broadcasts %s" % (who, rec["r"])
    elif k == "noop":
        what = "%s: a step with no effect on the instance" % who
    elif k == "timer":
        what = "%s: its resend timer" % who
    elif k == "restart":
        what = "%s crashes (and later recovers from its store)" % who
    else:
        what = "%s receives %s(%s) from node %d" % (who, k.upper(), rec["r"], rec["j"])
    eff = []
    if rec["vs"] != "none":
        eff.append("sends VALs of %s" % rec["vs"])
    if rec["es"] != "none":
        eff.append("sends ECHO(%s)" % rec["es"])
    if rec["rs"] != "none":
        eff.append("sends READY(%s)" % rec["rs"])
    if rec["rep"] != "none":
        eff.append("reports DELIVERED(%s)" % rec["rep"])
    if rec["dlv"] != "none":
        eff.append("delivers %s" % rec["dlv"])
    return what + ("; then " + ", ".join(eff) if eff else "; nothing else")


# ---- tampering ----

def honest_deliveries(lines, byz, inst):
    return [(no, ev) for no, _, ev in lines
            if ev["ev"] == "deliver" and ev["node"] not in byz and (ev["origin"], ev["seq"]) == inst]


def rewrite_root(b, new_root):
    """msg bytes [1, type, sender, seq, root(bin 32), ...] with another root."""
    _, i = mp_array(b, 0)
    for _ in range(4):
        _, i = mp_uint(b, i)
    out = bytearray(b)
    out[i + 2:i + 34] = new_root  # c4 20 <root>
    return bytes(out)


def cmd_tamper(args):
    sc = load_scenario(args.scenario)
    byz = set(sc["byz"])
    lines, out, idx = tamper_input(args.input)
    steps = group_steps(lines)
    inst = find_instance(steps)
    dels = honest_deliveries(lines, byz, inst)
    mode = args.mode
    if mode in ("digest", "early") and not dels:
        die("tamper: no delivery of instance (%d, %d) at an honest node to tamper with" % inst)
    if mode == "digest":
        # An honest node delivers another outcome than the one its root
        # gives: the invalid verdict for a message, a message for invalid.
        no, ev = dels[0]
        if ev.get("invalid"):
            new = dict(ev, invalid=False, digest="%016x" % 0x5EED)
            said = "a message"
        else:
            new = dict(ev, invalid=True)
            new.pop("digest", None)
            said = "the invalid verdict"
        out[idx[no]] = dump(new)
        print("tamper: line %d: node %d delivers %s instead of %s" % (
            no, ev["node"], said, "invalid" if ev.get("invalid") else ev["digest"]))
    elif mode == "early":
        # An honest node delivers in the step of its first receipt of the
        # instance, long before it holds 2f+1 READYs and k fragments.
        hit = None
        for no, ev in dels:
            node = ev["node"]
            for st in steps:
                sno, _, sev = st["start"]
                if sno >= no:
                    break
                if sev["ev"] == "recv" and sev["node"] == node and "data" in sev:
                    m = decode(sev["data"])
                    if m and m["type"] in (T_VAL, T_ECHO, T_READY) and (m["sender"], m["seq"]) == inst:
                        hit = (no, ev, st)
                        break
            if hit:
                break
        if hit is None:
            die("tamper: no honest node receives a vote of the instance before it delivers")
        no, ev, st = hit
        last = st["rest"][-1][0] if st["rest"] else st["start"][0]
        out.pop(idx[no])
        out.insert(idx[last] + 1, dump(dict(ev, t=lines[idx[last]][2]["t"])))
        print("tamper: line %d: node %d's delivery moved to right after line %d, the step of its first "
              "receipt of the instance" % (no, ev["node"], last))
    elif mode in ("echo", "ready"):
        # An honest non-sender's ECHO (READY) names another root than the
        # one it took from the sender's VAL (that reached its quorum): every
        # copy of that message, sent and received, changes alike.
        typ = T_ECHO if mode == "echo" else T_READY
        hit = None
        for no, _, ev in lines:
            if (ev["ev"] == "send" and ev["from"] not in byz and ev["from"] != inst[0] and "data" in ev):
                m = decode(ev["data"])
                if m and m["type"] == typ and (m["sender"], m["seq"]) == inst:
                    hit = (no, ev, m)
                    break
        if hit is None:
            die("tamper: no %s from an honest non-sender" % NAMES[typ])
        no, ev, m = hit
        new_root = bytes(x ^ 0x5A for x in m["root"])
        b = bytes.fromhex(ev["data"])
        nb = rewrite_root(b, new_root).hex()
        changed = 0
        for lno, _, lev in lines:  # its sends and their receipts (a READY does not name its voter)
            if lev["ev"] in ("send", "recv") and lev.get("from") == ev["from"] and lev.get("data") == ev["data"]:
                out[idx[lno]] = dump(dict(lev, data=nb))
                changed += 1
        print("tamper: line %d (and %d more copies): honest node %d's %s names a root it never took"
              % (no, changed - 1, ev["from"], NAMES[typ]))
    write_trace(args.output, out)


MODES = ("digest", "early", "echo", "ready")


def main():
    ap, sub, _, _ = command_line(__doc__, "CodedTrace", cmd_convert, describe_record, cmd_tamper, MODES)
    r = sub.add_parser("roots", help="classify the roots of the first instance")
    r.add_argument("--scenario", required=True)
    r.add_argument("--trace", required=True)
    r.set_defaults(fn=cmd_roots)
    run_command(ap, die)


if __name__ == "__main__":
    main()
