#!/usr/bin/env python3
"""trace2tla.py - turn a weft-sim --trace NDJSON trace of a Bracha BRB run
into a TLA+ trace for BrachaTrace.tla (trace validation against
tla/BrachaBRB.tla), and tamper with traces to show that TLC rejects them.

    trace2tla.py convert --scenario S.json --trace T.ndjson --out DIR [--instance SENDER:SEQ]
        writes DIR/BrachaTraceLog.tla, DIR/BrachaTrace.cfg, DIR/steps.json
    trace2tla.py tamper --mode digest|early|forge|revote --scenario S.json IN.ndjson OUT.ndjson
    trace2tla.py describe DIR/steps.json K
        prints record K of the log (1-based) with the trace lines it came from
    trace2tla.py merge [--byzantine I,J] --out OUT.ndjson NODE.ndjson...
        merges the per-node traces of weftd --trace into one trace

Python 3 standard library only.  See README.md next to this file.  The
other converters (echo2tla.py, amortized2tla.py, coded2tla.py, dag2tla.py)
import from here what every converter shares: the scenario and NDJSON
readers, the step grouping, the msgpack readers, the TLA+ writers (the
log module, its cfg, steps.json), the record describer and the command
line (convert, describe, tamper).

How the trace becomes records.  weft-sim writes `recv` when it hands a
message to a node, then runs the node's callback, whose multicasts (`send`)
and delivery (`deliver`) follow in the trace before the next event starts.
A step is one `request`, `recv`, `timer`, `start` or `command` line with the `send`, `drop`,
`deliver`, `reject` and `fault corrupt` lines after it; it is one callback of
the protocol, which is what one action of BrachaBRB.tla models.  Steps of
Byzantine nodes (the scenario's faulty nodes) are dropped: the spec does not
model their state and lets them send anything.  Every step of an honest node
becomes one record (see BrachaTrace.tla for the fields).

Values.  The spec abstracts a payload to its digest.  With the message bytes
in the trace (`data`, weft-sim --trace-data or weftd --trace) every
Bracha message is decoded ([1, type, sender, seq, payload], msgpack) and its
value is the first 8 bytes of the BLAKE2b-256 digest of its payload, in hex:
the same string as the digest of `deliver` events.  Without `data` the
values of messages are unknown ("?", TLC tries all of them): the known
values are those of `deliver` (and `request`) events, plus |Honest| + 1
anonymous values (model values, interchangeable: TLC uses symmetry).
"""
import argparse
import hashlib
import json
import os
import sys

KINDS = {"bracha.send": "send", "bracha.echo": "echo", "bracha.ready": "ready"}
TYPES = {0: "send", 1: "echo", 2: "ready"}
BYZ_FAULTS = {"crash", "omission", "corrupt", "equivocate", "twins", "adversary"}
STARTERS = {"request", "recv", "timer", "start", "command"}


class Unsupported(Exception):
    """The trace shows something BrachaBRB.tla does not model."""


def dier(prog):
    """A converter's die(msg, code=2): says "prog: msg" on stderr and exits
    with code."""
    def die(msg, code=2):
        print(prog + ": " + msg, file=sys.stderr)
        sys.exit(code)
    return die


die = dier("trace2tla")


# ---- scenario and trace ----

def read_scenario(path, protocol, spec, restarts=True):
    """n, f, the Byzantine nodes and the JSON of a weft-sim scenario of
    `protocol`, refusing what spec (its name, for messages) does not model:
    n < 3f+1, more than f faulty nodes, and a crash_recover that loses the
    store (or, with restarts False, any crash_recover)."""
    with open(path) as fh:
        sc = json.load(fh)
    n = sc["n"]
    f = sc.get("f", (n - 1) // 3)
    if sc.get("protocol") != protocol:
        raise Unsupported("scenario protocol is %r, not %s" % (sc.get("protocol"), protocol))
    if n < 3 * f + 1:
        raise Unsupported("n = %d < 3f+1 with f = %d: %s assumes n >= 3f+1" % (n, f, spec))
    byz = set()
    for flt in sc.get("faults", []):
        kind = flt["kind"]
        if kind in BYZ_FAULTS:
            byz.update(flt["nodes"])
        elif kind == "crash_recover" and not restarts:
            raise Unsupported("crash_recover faults: %s has no restarts" % spec)
        elif kind == "crash_recover" and flt.get("lose", "none") != "none":
            # Restart keeps the store (the persisted votes); a node that
            # loses it is a new node, outside the fault model.
            raise Unsupported("crash_recover with lose = %r: %s's Restart keeps the store" % (flt["lose"], spec))
    if len(byz) > f:
        raise Unsupported("%d faulty nodes with f = %d (expect_violation): the spec assumes at most f"
                          % (len(byz), f))
    return {"n": n, "f": f, "byz": sorted(byz), "json": sc}


def load_scenario(path):
    sc = read_scenario(path, "bracha", "BrachaBRB.tla")
    return {"n": sc["n"], "f": sc["f"], "byz": sc["byz"]}


def load_trace(path):
    lines = []
    with open(path) as fh:
        for no, text in enumerate(fh, 1):
            text = text.strip()
            if not text:
                continue
            try:
                ev = json.loads(text)
            except ValueError as exc:
                raise Unsupported("%s:%d: not JSON (%s)" % (path, no, exc))
            if not isinstance(ev, dict) or "ev" not in ev:
                raise Unsupported("%s:%d: not a trace event" % (path, no))
            lines.append((no, text, ev))
    return lines


def group_steps(lines):
    """Splits the trace into steps: a starter event and what follows it."""
    steps, cur = [], None
    for no, text, ev in lines:
        kind = ev["ev"]
        if kind in STARTERS or (kind == "fault" and ev.get("fault") in ("crash", "recover")):
            cur = {"start": (no, text, ev), "rest": []}
            steps.append(cur)
        elif cur is None:
            raise Unsupported("line %d: %s event before any request, recv or timer" % (no, kind))
        else:
            cur["rest"].append((no, text, ev))
    return steps


def step_node(ev):
    return ev.get("node", ev.get("from"))


# ---- msgpack (what weft's messages use) ----

def mp_array(b, i):
    c = b[i]
    if 0x90 <= c <= 0x9F:
        return c & 0x0F, i + 1
    if c == 0xDC:
        return int.from_bytes(b[i + 1:i + 3], "big"), i + 3
    if c == 0xDD:
        return int.from_bytes(b[i + 1:i + 5], "big"), i + 5
    raise ValueError("not an array")


def mp_uint(b, i):
    c = b[i]
    if c <= 0x7F:
        return c, i + 1
    width = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}.get(c)
    if width is None or i + 1 + width > len(b):
        raise ValueError("not a uint")
    return int.from_bytes(b[i + 1:i + 1 + width], "big"), i + 1 + width


def mp_bin(b, i):
    width = {0xC4: 1, 0xC5: 2, 0xC6: 4}.get(b[i])
    if width is None:
        raise ValueError("not a bin")
    ln = int.from_bytes(b[i + 1:i + 1 + width], "big")
    start = i + 1 + width
    if start + ln > len(b):
        raise ValueError("bin too short")
    return b[start:start + ln], start + ln


def brb_header(hexdata):
    """The header every BRB message starts with, an array [1, type, sender,
    seq, ...]: (bytes, its length, type, sender, seq, offset of the next
    field), or None when the message has none."""
    try:
        b = bytes.fromhex(hexdata)
        count, i = mp_array(b, 0)
        version, i = mp_uint(b, i)
        typ, i = mp_uint(b, i)
        sender, i = mp_uint(b, i)
        seq, i = mp_uint(b, i)
    except (ValueError, IndexError):
        return None
    return (b, count, typ, sender, seq, i) if version == 1 else None


def mp_report(b, i):
    """The fields of the core's catch-up report DELIVERED after its header:
    (invalid, payload, offset after them)."""
    if b[i] not in (0xC2, 0xC3):
        raise ValueError("not a bool")
    payload, j = mp_bin(b, i + 1)
    return b[i] == 0xC3, payload, j


def value_of(payload):
    return hashlib.blake2b(payload, digest_size=32).hexdigest()[:16]


def decode(hexdata):
    """A Bracha message as bracha_on_message reads it: (type, sender, seq,
    value), or None when the C code would reject it as undecodable."""
    try:
        b = bytes.fromhex(hexdata)
        if not b or b[0] != 0x95:  # fixarray of 5
            return None
        version, i = mp_uint(b, 1)
        typ, i = mp_uint(b, i)
        sender, i = mp_uint(b, i)
        seq, i = mp_uint(b, i)
        payload, i = mp_bin(b, i)
        if version != 1 or typ > 2 or i != len(b):
            return None
        return typ, sender, seq, value_of(payload)
    except (ValueError, IndexError):
        return None


def header(hexdata):
    """(type, sender, seq) of any BRB message (a fixarray of 4 to 15), or
    None."""
    h = brb_header(hexdata)
    if h is None or not 0x94 <= h[0][0] <= 0x9F:
        return None
    return h[2:5]


# ---- conversion ----

def has_data(lines):
    return any("data" in ev for _, _, ev in lines if ev["ev"] in ("send", "recv"))


def one(vals):
    """What a record says a node sent of one kind in a step: "none", the
    value, or "!conflict" (matches nothing) for two different ones."""
    if not vals:
        return "none"
    return vals.pop() if len(vals) == 1 else "!conflict"


def request_instance(st, node):
    """The instance a request step started: (node, seq) of its SEND."""
    for _, _, r in st["rest"]:
        if r["ev"] == "send" and r["from"] == node and "data" in r:
            d = decode(r["data"])
            if d and d[0] == 0 and d[1] == node:
                return node, d[2]
    raise Unsupported("line %d: request of node %d sends no decodable Bracha SEND" % (st["start"][0], node))


def find_instance(steps, exact):
    """The instance under test: the first request's (sender, seq)."""
    for st in steps:
        ev = st["start"][2]
        if ev["ev"] == "request":
            return request_instance(st, ev["node"]) if exact else (ev["node"], 0)
    raise Unsupported("no request in the trace: nothing was broadcast")


def convert(sc, lines, instance=None):
    n, f, byz = sc["n"], sc["f"], set(sc["byz"])
    exact = has_data(lines)
    steps = group_steps(lines)
    sender, seq = instance if instance else find_instance(steps, exact)
    if not exact:
        reqs = [st["start"][0] for st in steps if st["start"][2]["ev"] == "request"]
        if len(reqs) > 1:
            raise Unsupported("%d requests (lines %s): without message data (weft-sim --trace-data) "
                              "only a single broadcast can be told apart" % (len(reqs), reqs))
    values = set()
    records, sources = [], []
    restarts = 0
    for st in steps:
        no, text, ev = st["start"]
        node = step_node(ev)
        if node in byz:
            continue
        rec = {"k": "noop", "i": node, "j": node, "v": "?", "echo": "none", "ready": "none",
               "dlv": "none", "line": no}
        if ev["ev"] == "fault":
            # An honest node's crash (of a crash_recover): Restart, memory
            # lost, votes kept; its recovery is a no-op, and the start step
            # after it (restore_own) an ordinary step.
            if ev["fault"] == "crash":
                rec["k"] = "restart"
                restarts += 1
            records.append(rec)
            sources.append([no] + [rno for rno, _, _ in st["rest"]])
            continue
        rejected = any(r["ev"] == "reject" for _, _, r in st["rest"])
        if ev["ev"] == "request":
            if not exact or request_instance(st, node) == (sender, seq):
                rec["k"] = "request"
                if "digest" in ev:
                    rec["v"] = ev["digest"]
        elif ev["ev"] == "recv":
            rec["j"] = ev["from"]
            kind = KINDS.get(ev["kind"])
            if ev["kind"] == "?" and exact:
                # A Byzantine node's message the merge found no send for
                # (an equivocating twin's): named by its type.
                h = header(ev["data"])
                kind = TYPES.get(h[0]) if h else None
            if kind is None:
                # brb.status, brb.delivered: catch-up, not modelled.  It is
                # harmless unless it makes the node deliver (checked below).
                pass
            elif rejected:
                pass  # the C code rejected the message: no effect
            elif exact:
                d = decode(ev["data"])
                if d is None:
                    raise Unsupported("line %d: undecodable %s that the node did not reject" % (no, ev["kind"]))
                typ, isender, iseq, val = d
                if (isender, iseq) == (sender, seq):
                    rec["k"], rec["v"] = TYPES[typ], val
            else:
                rec["k"] = kind
        sent = {"echo": set(), "ready": set()}
        for rno, _, r in st["rest"]:
            if r["ev"] == "send":
                kind = KINDS.get(r["kind"])
                if kind is None:
                    continue
                if r["from"] != node:
                    raise Unsupported("line %d: a send of node %d inside a step of node %d" % (rno, r["from"], node))
                val = "?"
                if exact:
                    d = decode(r["data"])
                    if d is None or (d[1], d[2]) != (sender, seq):
                        continue
                    val = d[3]
                    kind = TYPES[d[0]]
                if kind == "send":
                    # An honest node SENDs only as the sender, the value it
                    # echoes (bracha_on_request, resend).
                    if node != sender:
                        val = "!conflict"
                    kind = "echo"
                sent[kind].add(val)
            elif r["ev"] == "deliver":
                if r["node"] != node:
                    raise Unsupported("line %d: a delivery of node %d inside a step of node %d" % (rno, r["node"], node))
                if (r["origin"], r["seq"]) != (sender, seq) and exact:
                    continue
                if r.get("invalid"):
                    raise Unsupported("line %d: an invalid delivery (Bracha never makes one)" % rno)
                if ev["ev"] == "recv" and ev["kind"] == "brb.delivered":
                    raise Unsupported("line %d: node %d delivered through catch-up (brb.delivered), "
                                      "which BrachaBRB.tla does not model" % (rno, node))
                rec["dlv"] = r["digest"]
        for kind in ("echo", "ready"):
            rec[kind] = one(sent[kind])
        if exact and rec["k"] == "request" and rec["v"] == "?" and rec["echo"] not in ("none", "!conflict"):
            rec["v"] = rec["echo"]
        for key in ("v", "echo", "ready", "dlv"):
            if rec[key] not in ("?", "none", "!conflict"):
                values.add(rec[key])
        records.append(rec)
        sources.append([no] + [rno for rno, _, _ in st["rest"]])
    # Partial mode: |Honest| + 1 anonymous values are enough for every run
    # the exact check accepts to be accepted here too (README.md, "Partial
    # mode"): honest nodes echo at most |Honest| values, and every value no
    # honest node echoed can be one spare value, which reaches no quorum.
    anon = [] if exact else ["anon%d" % k for k in range(1, n - len(byz) + 2)]
    return {
        "n": n, "f": f, "byz": sorted(byz), "sender": sender, "seq": seq, "exact": exact,
        "values": sorted(values), "anon": anon, "records": records, "sources": sources,
        "restarts": restarts,
    }


# ---- the TLA+ log and steps.json (every converter's) ----

def tla_str(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def node_name(k):
    """Node k of the simulator is the string "nk" in TLA+ (so that TLC prints
    a function of the honest nodes as one, not as a sequence)."""
    return tla_str("n%d" % k)


def tla_set(xs):
    return "{" + ", ".join(xs) + "}"


def tla_seq(xs):
    return "<<" + ", ".join(xs) + ">>"


def committee_defs(conv):
    """The committee of a BRB trace module: TNode, TF, TSender, TByz."""
    return ["TNode == %s" % tla_set(node_name(k) for k in range(conv["n"])),
            "TF == %d" % conv["f"],
            "TSender == %s" % node_name(conv["sender"]),
            "TByz == %s" % tla_set(node_name(b) for b in conv["byz"])]


def write_trace_module(outdir, spec, prog, trace_path, notes, extends, defs, recs,
                       constants=("Nil = Nil",), cfg_extra=(),
                       invariants=("TraceTypeOK", "TraceSafe", "TraceNotMatched")):
    """Writes the log the trace spec `spec` extends, DIR/<spec>Log.tla (the
    notes as comments, EXTENDS extends, the definitions defs, a list of
    lines, and TraceLog, the TLA+ records recs), and its model DIR/<spec>.cfg
    (TraceInit, TraceNext, the constants, cfg_extra, the invariants); prog
    is the converter that wrote them."""
    os.makedirs(outdir, exist_ok=True)
    out = [(" MODULE %sLog " % spec).center(79, "-"),
           "(* Generated by tla/trace/%s.py from %s; do not edit. *)" % (prog, os.path.basename(trace_path))]
    out += ["(* %s *)" % note for note in notes]
    out += ["EXTENDS " + extends, ""] + defs
    out += ["", "TraceLog == <<", ",\n".join("  " + r for r in recs), ">>", "=" * 80]
    with open(os.path.join(outdir, spec + "Log.tla"), "w") as fh:
        fh.write("\n".join(out) + "\n")
    cfg = ["\\* Generated by tla/trace/%s.py." % prog, "INIT TraceInit", "NEXT TraceNext", "CONSTANTS"]
    cfg += ["    " + c for c in constants] + list(cfg_extra)
    cfg += ["INVARIANTS"] + ["    " + inv for inv in invariants]
    with open(os.path.join(outdir, spec + ".cfg"), "w") as fh:
        fh.write("\n".join(cfg) + "\n")


def write_steps(outdir, trace_path, lines, records, sources, **extra):
    """Writes DIR/steps.json, which `describe` and the validators read: each
    record with the trace lines it came from (sources: their numbers), and
    the fields extra."""
    byline = {no: text for no, text, _ in lines}
    steps = [{"record": rec, "lines": [[no, byline[no]] for no in src]} for rec, src in zip(records, sources)]
    with open(os.path.join(outdir, "steps.json"), "w") as fh:
        json.dump(dict({"trace": trace_path, "steps": steps, "trace_lines": len(lines)}, **extra), fh, indent=1)


def describe_step(steps_path, k, describe, die=die, most=None):
    """Prints record k (1-based) of a converter's steps.json, described by
    describe(record), with the trace lines it came from (more than `most`
    of them: the first most - 2) (every converter's `describe` command)."""
    with open(steps_path) as fh:
        data = json.load(fh)
    steps = data["steps"]
    if not 1 <= k <= len(steps):
        die("record %d out of range 1..%d" % (k, len(steps)))
    st = steps[k - 1]
    rec = st["record"]
    at = " (trace line %d)" % rec["line"] if "line" in rec else ""
    print("record %d of %d%s: %s" % (k, len(steps), at, describe(rec)))
    shown = st["lines"] if most is None or len(st["lines"]) <= most else st["lines"][:most - 2]
    for no, text in shown:
        print("    %s:%d: %s" % (os.path.basename(data["trace"]), no, text))
    if len(st["lines"]) > len(shown):
        print("    ... %d more lines" % (len(st["lines"]) - len(shown)))


# ---- the command line (every converter's) ----

def instance_of(args):
    """The instance `convert --instance SENDER:SEQ` names: (sender, seq), or
    None without it."""
    if not args.instance:
        return None
    s, q = args.instance.split(":")
    return int(s), int(q)


def load_and_convert(args, die, code, load_scenario, convert, pick=None):
    """A `convert` command's scenario and trace, converted by
    convert(scenario, lines[, pick(args)]): (scenario, lines, conversion).
    A trace showing what the spec does not model ends it: "unsupported:
    ..." and exit status code."""
    try:
        sc = load_scenario(args.scenario)
        lines = load_trace(args.trace)
        conv = convert(sc, lines, pick(args)) if pick else convert(sc, lines)
    except Unsupported as exc:
        die("unsupported: %s" % exc, code)
    return sc, lines, conv


def command_line(doc, spec, cmd_convert, describe, cmd_tamper, modes, instance=True, **describe_opts):
    """A converter's command line: convert (--scenario, --trace, --out and,
    with instance, --instance SENDER:SEQ) writing <spec>Log.tla, <spec>.cfg
    and steps.json; describe STEPS K (describe_step with the record
    describer describe and describe_opts); tamper (--mode, one of modes,
    --scenario, IN, OUT).  Returns the parser, its subparsers and the
    convert and tamper parsers, for the converter's own options and
    commands."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="NDJSON trace -> %sLog.tla, %s.cfg, steps.json" % (spec, spec))
    c.add_argument("--scenario", required=True)
    c.add_argument("--trace", required=True)
    c.add_argument("--out", required=True)
    if instance:
        c.add_argument("--instance", help="SENDER:SEQ (default: the first request's)")
    c.set_defaults(fn=cmd_convert)
    d = sub.add_parser("describe", help="print record K of a converted trace")
    d.add_argument("steps")
    d.add_argument("k", type=int)
    d.set_defaults(fn=lambda args: describe_step(args.steps, args.k, describe, **describe_opts))
    t = sub.add_parser("tamper", help="write a tampered copy of a trace")
    t.add_argument("--mode", choices=modes, required=True)
    t.add_argument("--scenario", required=True)
    t.add_argument("input")
    t.add_argument("output")
    t.set_defaults(fn=cmd_tamper)
    return ap, sub, c, t


def run_command(ap, die, prefix=""):
    """Runs the command the arguments name; a trace showing what the spec
    does not model (Unsupported) ends it with exit status 2."""
    args = ap.parse_args()
    try:
        args.fn(args)
    except Unsupported as exc:
        die(prefix + str(exc))


# ---- Bracha's TLA+ log ----

def write_module(conv, trace_path, outdir):
    recs = []
    for r in conv["records"]:
        recs.append("[k |-> %s, i |-> %s, j |-> %s, v |-> %s, echo |-> %s, ready |-> %s, dlv |-> %s, line |-> %d]"
                    % (tla_str(r["k"]), node_name(r["i"]), node_name(r["j"]), tla_str(r["v"]), tla_str(r["echo"]),
                       tla_str(r["ready"]), tla_str(r["dlv"]), r["line"]))
    mode = ("exact: message bytes in the trace" if conv["exact"]
            else "partial: no message bytes (weft-sim without --trace-data); message values are \"?\"")
    defs = ["CONSTANT TAnon   \\* anonymous values (model values; empty in exact mode)", ""]
    defs += committee_defs(conv)
    defs += ["TKnown == %s" % tla_set(tla_str(v) for v in conv["values"]),
             "TValue == TKnown \\cup TAnon",
             "TMaxRestarts == %d   \\* the crashes of honest nodes in the trace" % conv["restarts"]]
    write_trace_module(outdir, "BrachaTrace", "trace2tla", trace_path,
                       ["Mode: %s." % mode,
                        "Instance (sender %d, seq %d); %d records." % (conv["sender"], conv["seq"], len(recs))],
                       "Naturals, Sequences", defs, recs,
                       constants=["Nil = Nil", "TAnon = %s" % tla_set(conv["anon"])],
                       cfg_extra=["SYMMETRY AnonSymmetry"] if conv["anon"] else [])


def cmd_convert(args):
    _, lines, conv = load_and_convert(args, die, 3, load_scenario, convert, instance_of)
    write_module(conv, args.trace, args.out)
    write_steps(args.out, args.trace, lines, conv["records"], conv["sources"], exact=conv["exact"])
    print("trace2tla: %d trace lines -> %d records (%s mode), instance (%d, %d), values %s%s"
          % (len(lines), len(conv["records"]), "exact" if conv["exact"] else "partial",
             conv["sender"], conv["seq"], ", ".join(conv["values"]) or "-",
             (" + %d anonymous" % len(conv["anon"])) if conv["anon"] else ""))


def describe_record(rec):
    who = "node %d" % rec["i"]
    if rec["k"] == "request":
        what = "%s broadcasts %s" % (who, rec["v"])
    elif rec["k"] == "noop":
        what = "%s: a step with no effect on the instance" % who
    elif rec["k"] == "restart":
        what = "%s crashes (and later recovers from its store)" % who
    else:
        what = "%s receives %s(%s) from node %d" % (who, rec["k"].upper(), rec["v"], rec["j"])
    eff = []
    if rec["echo"] != "none":
        eff.append("sends ECHO(%s)" % rec["echo"])
    if rec["ready"] != "none":
        eff.append("sends READY(%s)" % rec["ready"])
    if rec["dlv"] != "none":
        eff.append("delivers %s" % rec["dlv"])
    return what + ("; then " + ", ".join(eff) if eff else "; nothing else")


# ---- merging the per-node traces of weftd --trace ----

def cmd_merge(args):
    """One trace in a causal order from the nodes' own traces.

    Every node writes its steps in its own order, each stamped with the
    host's monotonic clock at the step's start, which the processes of one
    host share.  A message is traced as sent inside its sender's step and
    leaves after that step is stored; its receipt starts the receiver's
    step later.  So ordering the steps by their start times (each file's
    order kept) puts every send before its receipt.  weftd does not know
    the kind of a message it receives: the merge takes it from the send
    the receipt matches (sender, receiver and bytes), which also checks
    the order.  A receipt no send matches is an error, unless it comes
    from a node listed as Byzantine (an equivocating twin's messages are
    not traced): its kind is then "?" and the converter reads the type.
    """
    byz = set(int(x) for x in args.byzantine.split(",") if x != "") if args.byzantine else set()
    steps = []
    for fi, path in enumerate(args.traces):
        lines = load_trace(path)
        last = None
        for si, st in enumerate(group_steps(lines)):
            t = st["start"][2].get("t")
            if not isinstance(t, int):
                raise Unsupported("%s:%d: no time stamp" % (path, st["start"][0]))
            if last is not None and t < last:
                raise Unsupported("%s:%d: time goes backwards" % (path, st["start"][0]))
            last = t
            steps.append((t, fi, si, path, st))
    steps.sort(key=lambda x: x[:3])
    pending = {}
    out, matched, unmatched = [], 0, 0
    for _, _, _, path, st in steps:
        no, text, ev = st["start"]
        if ev["ev"] == "recv":
            key = (ev["from"], ev["node"], ev.get("data"))
            queue = pending.get(key)
            if queue:
                ev["kind"] = queue.pop(0)
                matched += 1
            elif ev["from"] in byz:
                ev["kind"] = "?"
                unmatched += 1
            else:
                raise Unsupported("%s:%d: node %d received %d bytes from node %d that it had not sent before "
                                  "(in the merged order)" % (path, no, ev["node"], ev.get("bytes", -1), ev["from"]))
            text = dump(ev)
        out.append(text)
        for _, rtext, r in st["rest"]:
            if r["ev"] == "send":
                pending.setdefault((r["from"], r["to"], r.get("data")), []).append(r["kind"])
            out.append(rtext)
    with open(args.out, "w") as fh:
        fh.write("\n".join(out) + "\n")
    print("trace2tla: merged %d traces: %d steps, %d lines; %d receipts matched to their sends%s"
          % (len(args.traces), len(steps), len(out), matched,
             ", %d from Byzantine nodes unmatched" % unmatched if unmatched else ""))


# ---- tampering ----

def dump(ev):
    """A trace event as weft writes it, one compact JSON line."""
    return json.dumps(ev, separators=(",", ":"))


def tamper_input(path):
    """The trace to tamper with: its lines, out (their texts, to change;
    None drops a line) and idx (trace line number -> index in out)."""
    lines = load_trace(path)
    return lines, [text for _, text, _ in lines], {no: k for k, (no, _, _) in enumerate(lines)}


def write_trace(path, out):
    with open(path, "w") as fh:
        fh.write("\n".join(x for x in out if x is not None) + "\n")


def cmd_tamper(args):
    sc = load_scenario(args.scenario)
    byz = set(sc["byz"])
    lines, out, idx = tamper_input(args.input)
    steps = group_steps(lines)
    dels = [(no, ev) for no, _, ev in lines if ev["ev"] == "deliver" and ev["node"] not in byz]
    if not dels:
        die("tamper: no delivery at an honest node to tamper with")
    if args.mode == "digest":
        # One honest delivery names another value: the payload of a message
        # that carries a different digest if the trace has one, else a
        # made-up digest.
        no, ev = dels[0]
        other = None
        for _, _, e in lines:
            if e["ev"] == "send" and "data" in e:
                d = decode(e["data"])
                if d and d[3] != ev["digest"]:
                    other = d[3]
                    break
        other = other or ("%016x" % (int(ev["digest"], 16) ^ 0xFF))
        ev2 = dict(ev, digest=other)
        out[idx[no]] = dump(ev2)
        print("tamper: line %d: node %d delivers %s instead of %s" % (no, ev["node"], other, ev["digest"]))
    elif args.mode == "early":
        # An honest node delivers right after the first READY it receives,
        # before it can hold 2f+1 of them.
        for no, ev in dels:
            node, target = ev["node"], None
            for st in steps:
                sno, _, sev = st["start"]
                if sno > no:
                    break
                if sev["ev"] == "recv" and sev["node"] == node and sev["kind"] == "bracha.ready":
                    target = st
                    break
            if target is not None and no not in [r[0] for r in target["rest"]]:
                break
        else:
            die("tamper: no honest node receives a READY before the step in which it delivers")
        last = target["rest"][-1][0] if target["rest"] else target["start"][0]
        out.pop(idx[no])
        moved = dict(ev, t=lines[idx[last]][2]["t"])
        out.insert(idx[last] + 1, dump(moved))
        print("tamper: line %d: node %d's delivery moved to right after line %d, the step of its first READY "
              "receipt" % (no, node, last))
    elif args.mode == "forge":
        # An honest node's ECHO arrives with another payload: a message the
        # honest node never sent (needs message data).
        hit = None
        for no, _, ev in lines:
            if (ev["ev"] == "recv" and ev["node"] not in byz and ev["from"] not in byz
                    and ev["kind"] == "bracha.echo" and "data" in ev):
                hit = (no, ev)
                break
        if hit is None:
            die("tamper: forge needs message data (weft-sim --trace-data) and an ECHO between honest nodes")
        no, ev = hit
        b = bytearray(bytes.fromhex(ev["data"]))
        b[-1] ^= 0x01  # the last payload byte
        ev2 = dict(ev, data=b.hex())
        out[idx[no]] = dump(ev2)
        print("tamper: line %d: node %d receives from honest node %d an ECHO whose payload differs "
              "from the one it echoed" % (no, ev["node"], ev["from"]))
    elif args.mode == "revote":
        # A restarted honest node takes the sender's OTHER payload (an
        # equivocating sender's SEND to someone else) and echoes it: a vote
        # against the one it persisted before the crash (brb_vote_get
        # forbids it).  Needs message data, an equivocating sender and a
        # crash_recover of an honest node that echoes after recovering.
        crashed = {ev["node"] for _, _, ev in lines
                   if ev["ev"] == "fault" and ev["fault"] == "recover" and ev["node"] not in byz}
        payloads = {}
        for _, _, ev in lines:
            if ev["ev"] == "send" and ev["kind"] == "bracha.send" and "data" in ev:
                d = decode(ev["data"])
                if d:
                    payloads.setdefault(d[3], ev["data"])
        hit = None
        for st in steps:
            sno, _, sev = st["start"]
            if (sev["ev"] == "recv" and sev["node"] in crashed and sev["kind"] == "bracha.send" and "data" in sev
                    and any(r["ev"] == "send" and r["kind"] == "bracha.echo" for _, _, r in st["rest"])
                    and any(e["ev"] == "fault" and e["fault"] == "recover" and e["node"] == sev["node"]
                            for no2, _, e in lines if no2 < sno)):
                hit = st
                break
        mine = decode(hit["start"][2]["data"]) if hit else None
        others = [v for v in payloads if mine and v != mine[3]]
        if hit is None or not others:
            die("tamper: revote needs message data, a SEND of another payload and an honest node that "
                "echoes a SEND after a crash_recover")
        other = payloads[others[0]]
        sno, _, sev = hit["start"]
        out[idx[sno]] = dump(dict(sev, data=other))
        echo_data = other[:4] + "01" + other[6:]  # [1, type, ...]: the type byte after 0x95 0x01
        for rno, _, r in hit["rest"]:
            if r["ev"] == "send" and r["kind"] == "bracha.echo":
                out[idx[rno]] = dump(dict(r, data=echo_data))
        print("tamper: line %d: node %d, restarted, takes the SEND of %s and echoes it, against the ECHO of %s it "
              "persisted before" % (sno, sev["node"], others[0], mine[3]))
    write_trace(args.output, out)


def main():
    ap, sub, _, _ = command_line(__doc__, "BrachaTrace", cmd_convert, describe_record, cmd_tamper,
                                 ("digest", "early", "forge", "revote"))
    m = sub.add_parser("merge", help="merge the per-node traces of weftd --trace")
    m.add_argument("--byzantine", help="I,J: nodes whose receipts may match no traced send")
    m.add_argument("--out", required=True)
    m.add_argument("traces", nargs="+")
    m.set_defaults(fn=cmd_merge)
    run_command(ap, die)


if __name__ == "__main__":
    main()
