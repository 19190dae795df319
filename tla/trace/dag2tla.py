#!/usr/bin/env python3
"""dag2tla.py - turn a trace of weft's DAG consensus (weft-sim --trace, or
weftd --trace merged with trace2tla.py merge) into a TLA+ trace for
DagTrace.tla (trace validation against tla/SparseBullshark.tla), and tamper
with traces to show that TLC rejects them.

    dag2tla.py convert --scenario S.json --trace T.ndjson --out DIR
        writes DIR/DagTraceLog.tla, DIR/DagTrace.cfg, DIR/steps.json
    dag2tla.py tamper --mode dup|order|votes|weak|walk|fork --scenario S.json IN.ndjson OUT.ndjson
    dag2tla.py describe DIR/steps.json K
        prints record K of the log (1-based) with the trace lines it came from

Python 3 standard library only; the NDJSON reader, the TLA+ writers and
the command line are trace2tla.py's.  See README.md next to this file.

What is read.  Only the protocol's log events of honest nodes (a node is
Byzantine when a scenario fault makes it faulty, as for trace2tla.py):
  dag.insert  "round=R author=A refs=a,b weak=q:b,..."  (graph.c, log_insert)
  dag.order   "round=R author=A anchor=AR txs=K"         (order_vertex)
  dag.commit  "round=AR anchors=K txs=T"                (order_anchor)
Messages, timers and deliveries are not needed: the spec abstracts the
transport away (reliable broadcast gives each slot one vertex).

The global DAG is the union of what honest nodes inserted; two honest nodes
that logged different references for one slot contradict reliable
broadcast and the trace is rejected here (exit 1), as is a node that
inserted a vertex before one of its parents (the local DAG must be
downward closed: dag_accept waits for every parent) or that logged a
dag.order of one anchor inside another anchor's commit.

Commits.  try_commit (graph.c) is called only from insert, right after the
dag.insert of the vote that completed a quorum, and orders its chain
(dag.order lines, then dag.commit, per anchor) without inserting anything
else; so a node's dag.order / dag.commit lines between two of its
dag.insert lines are one call of try_commit: one Commit(i, r) of the spec.

Exit status: 0 converted; 1 the trace is rejected by the checks above
("trace rejected: ..." on stdout); 2 usage or tool errors, and traces
that show what the spec does not model ("dag2tla: unsupported: ..."):
restarts (a node inserting a slot twice: vertices restored from kv;
crash_recover faults), snapshot state-sync, rejoining or skipping rounds
(dag.rejoin, dag.jump, dag.skip), the unsafe option weak_nowait, a vertex
whose parent no honest node inserted (collected below the GC floor), and
a commit whose history reaches below the ordering floor (order_floor:
gc_depth below the previous committed anchor), which the spec does not
have.
"""
import itertools
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace2tla import (Unsupported, command_line, dier, dump, load_and_convert, run_command, tamper_input,  # noqa: E402
                       tla_seq, tla_set, write_steps, write_trace, write_trace_module)

BYZ_FAULTS = {"crash", "omission", "corrupt", "equivocate", "twins", "adversary"}
# Log events that show what SparseBullshark.tla does not model.
UNSUPPORTED_EVENTS = {
    "dag.jump": "its rounds fell below the GC floor and it jumped ahead",
    "dag.skip": "it skipped rounds (its broadcast sequence was ahead)",
    "dag.rejoin": "it rejoined on an empty store, skipping rounds",
    "state.synced": "it installed a snapshot (state sync)",
    "dag.snapshot": "it fetched a snapshot (state sync)",
}


class Rejected(Exception):
    """The trace contradicts the protocol before TLC is needed."""


die = dier("dag2tla")


# ---- scenario ----

def load_scenario(path):
    with open(path) as fh:
        sc = json.load(fh)
    n = sc["n"]
    f = sc.get("f", (n - 1) // 3)
    if sc.get("protocol") not in ("dag", "dag.consensus"):
        raise Unsupported("scenario protocol is %r, not dag" % sc.get("protocol"))
    if n < 3 * f + 1:
        raise Unsupported("n = %d < 3f+1 with f = %d: SparseBullshark.tla assumes n >= 3f+1" % (n, f))
    byz = set()
    for flt in sc.get("faults", []):
        kind = flt["kind"]
        if kind in BYZ_FAULTS:
            byz.update(flt["nodes"])
        elif kind == "crash_recover":
            raise Unsupported("crash_recover faults: the spec has no restart (a restarted node restores "
                              "its DAG from kv and does not commit during the restore)")
    if len(byz) > f:
        raise Unsupported("%d faulty nodes, more than f = %d: the spec assumes at most f Byzantine ones"
                          % (len(byz), f))
    p = sc.get("params", {}) or {}
    mode = p.get("mode", "sparse")
    if mode not in ("sparse", "dense"):
        raise Unsupported("params.mode %r" % mode)
    unsafe = p.get("unsafe")
    if unsafe not in (None, "sparse_anchors", "commit_f1"):
        raise Unsupported("params.unsafe = %r: the spec's model of a node lacking weak parents "
                          "(WeakNoWait) depends on when it commits, which the canonical replay "
                          "does not keep" % unsafe if unsafe == "weak_nowait" else
                          "params.unsafe = %r" % unsafe)
    return {
        "n": n, "f": f, "byz": sorted(byz),
        "dense": mode == "dense",
        "d": int(p.get("d", 10)),
        "weak_max": int(p.get("weak_max", n)),
        "gc_depth": int(p.get("gc_depth", 200)),
        "unsafe": unsafe,
    }


# ---- the protocol's log events ----

def parse_msg(msg):
    out = {}
    for tok in msg.split():
        if "=" not in tok:
            raise ValueError("no key=value: %r" % tok)
        k, v = tok.split("=", 1)
        out[k] = v
    return out


def parse_event(no, ev):
    """(kind, fields) of a dag.insert / dag.order / dag.commit log line."""
    msg = ev.get("msg", "")
    if len(msg) >= 511:  # weft-sim's env_log formats into 512 bytes
        raise Unsupported("line %d: the log message may be cut short (%d bytes)" % (no, len(msg)))
    try:
        kv = parse_msg(msg)
        if ev["event"] == "dag.insert":
            refs = frozenset(int(x) for x in kv["refs"].split(",") if x != "")
            weak = set()
            for w in kv["weak"].split(","):
                if w != "":
                    q, b = w.split(":")
                    weak.add((int(b), int(q)))  # <<author, round>>, as the spec's Vertex
            return {"round": int(kv["round"]), "author": int(kv["author"]), "refs": refs,
                    "weak": frozenset(weak)}
        if ev["event"] == "dag.order":
            return {"round": int(kv["round"]), "author": int(kv["author"]), "anchor": int(kv["anchor"])}
        return {"round": int(kv["round"]), "anchors": int(kv["anchors"])}
    except (KeyError, ValueError) as exc:
        raise Unsupported("line %d: cannot read %s %r (%s)" % (no, ev["event"], msg, exc))


def read_run(sc, lines):
    """The global DAG and each honest node's commits.

    Returns dag: {(author, round): {"refs", "weak", "lines": [(node, no)]}},
    and per honest node a list of chains, each {"chain": [anchor rounds],
    "segs": [[(author, round)...] per anchor], "lines": [no...]}."""
    n, byz = sc["n"], set(sc["byz"])
    honest = [i for i in range(n) if i not in byz]
    dag = {}
    inserted = {i: {} for i in honest}       # node -> {(a, r): line}
    chains = {i: [] for i in honest}
    cur = {i: None for i in honest}           # the chain being read (after the last insert)
    seg = {i: [] for i in honest}             # dag.order lines not yet closed by a dag.commit
    count = {i: 0 for i in honest}
    committed_max = {i: -1 for i in honest}
    for no, _, ev in lines:
        if ev.get("ev") == "fault" and ev.get("fault") in ("crash", "recover") and ev.get("node") in honest:
            raise Unsupported("line %d: node %d %s: the spec has no restart" % (no, ev["node"], ev["fault"]))
        if ev.get("ev") != "log":
            continue
        node, event = ev.get("node"), ev.get("event")
        if node not in inserted:
            continue  # a Byzantine node's own view: not checked
        if event in UNSUPPORTED_EVENTS:
            raise Unsupported("line %d: node %d logged %s (%s): %s" % (no, node, event, ev.get("msg", ""),
                                                                      UNSUPPORTED_EVENTS[event]))
        if event not in ("dag.insert", "dag.order", "dag.commit"):
            continue
        x = parse_event(no, ev)
        if event == "dag.insert":
            if seg[node]:
                raise Rejected("line %d: node %d inserted a vertex between dag.order and dag.commit "
                               "(line %d)" % (no, node, seg[node][0][0]))
            cur[node] = None
            slot = (x["author"], x["round"])
            if not 0 <= x["author"] < n or any(not 0 <= a < n for a in x["refs"] | {b for b, _ in x["weak"]}):
                raise Rejected("line %d: node %d inserted %s naming a node outside the committee"
                               % (no, node, fmt_v(slot)))
            if slot in inserted[node]:
                raise Unsupported("line %d: node %d inserted %s a second time (line %d): a restart restoring "
                                  "its DAG from kv, which the spec does not model"
                                  % (no, node, fmt_v(slot), inserted[node][slot]))
            gc_floor = committed_max[node] - sc["gc_depth"]
            for p in parents(slot, x["refs"], x["weak"]):
                if p not in inserted[node] and p[1] >= gc_floor:
                    raise Rejected("line %d: node %d inserted %s before its parent %s (a local DAG must be "
                                   "downward closed: dag_accept waits for every parent)"
                                   % (no, node, fmt_v(slot), fmt_v(p)))
            inserted[node][slot] = no
            have = dag.get(slot)
            if have is None:
                dag[slot] = {"refs": x["refs"], "weak": x["weak"], "lines": [(node, no)]}
            elif (have["refs"], have["weak"]) != (x["refs"], x["weak"]):
                n0, l0 = have["lines"][0]
                raise Rejected("line %d: node %d inserted %s with references %s, node %d with %s at line %d: "
                               "two vertices for one slot (reliable broadcast gives a slot one vertex)"
                               % (no, node, fmt_v(slot), fmt_refs(x), n0, fmt_refs(have), l0))
            else:
                have["lines"].append((node, no))
        elif event == "dag.order":
            seg[node].append((no, (x["author"], x["round"]), x["anchor"]))
        else:
            if cur[node] is None:
                cur[node] = {"chain": [], "segs": [], "lines": []}
                chains[node].append(cur[node])
            count[node] += 1
            if x["anchors"] != count[node]:
                raise Unsupported("line %d: node %d's commit count is %d where its trace shows %d: it committed "
                                  "before the trace began (a restart or a snapshot)" % (no, node, x["anchors"],
                                                                                     count[node]))
            for ono, v, anchor in seg[node]:
                if anchor != x["round"]:
                    raise Rejected("line %d: node %d ordered %s as part of anchor %d's history, but the anchor "
                                   "committed next (line %d) is %d" % (ono, node, fmt_v(v), anchor, no, x["round"]))
            cur[node]["chain"].append(x["round"])
            cur[node]["segs"].append([v for _, v, _ in seg[node]])
            cur[node]["lines"] += [ono for ono, _, _ in seg[node]] + [no]
            committed_max[node] = x["round"]
            seg[node] = []
    for i in honest:
        if seg[i]:
            raise Unsupported("line %d: node %d's trace ends between dag.order and dag.commit" % (seg[i][-1][0], i))
    for slot, v in dag.items():
        for p in parents(slot, v["refs"], v["weak"]):
            if p not in dag:
                raise Unsupported("%s references %s, which no honest node inserted (collected below the GC "
                                  "floor?): the global DAG is incomplete" % (fmt_v(slot), fmt_v(p)))
    return dag, chains


def parents(slot, refs, weak):
    a, r = slot
    return [(b, r - 1) for b in sorted(refs)] + sorted(weak)


def fmt_v(v):
    return "(round %d, author %d)" % (v[1], v[0])


def fmt_refs(x):
    return "{%s} weak {%s}" % (",".join(str(a) for a in sorted(x["refs"])),
                               ",".join("%d:%d" % (q, b) for b, q in sorted(x["weak"], key=lambda w: (w[1], w[0]))))


# ---- ordering, as graph.c does it (for the GC-floor check) ----

def history(dag, anchor, done):
    """The causal history of anchor along strong and weak references, minus done."""
    seen, todo = {anchor}, [anchor]
    while todo:
        v = todo.pop()
        x = dag[v]
        for p in parents(v, x["refs"], x["weak"]):
            if p not in seen and p not in done and p in dag:
                seen.add(p)
                todo.append(p)
    return seen


def check_gc_floor(sc, dag, chains):
    """order_floor: a node orders from round committed_round - gc_depth up;
    the spec has no floor.  Unsupported when the floor cut a history."""
    for i, cs in chains.items():
        done, last = set(), None
        for c in cs:
            for anchor_round, segment in zip(c["chain"], c["segs"]):
                leader = (anchor_round // 2) % sc["n"]
                floor = last - sc["gc_depth"] if last is not None and last > sc["gc_depth"] else 0
                if floor > 0 and (leader, anchor_round) in dag:
                    below = [v for v in history(dag, (leader, anchor_round), done) if v[1] < floor]
                    if below:
                        raise Unsupported("node %d committed anchor %d with history below its ordering floor %d "
                                          "(gc_depth %d), e.g. %s: the spec has no floor"
                                          % (i, anchor_round, floor, sc["gc_depth"], fmt_v(min(below))))
                done.update(segment)
                last = anchor_round


# ---- the honest reference rule (sample_refs), for tampering ----

def honest_refs_ok(sc, exists_prev, a, r, R):
    """R is a set sample_refs could have chosen at honest a for round r
    holding some H of exists_prev (SparseBullshark's HonestRefs)."""
    n, q, d = sc["n"], sc["n"] - sc["f"], sc["d"]  # d->quorum = n - f (dag_init)
    dense = sc["dense"] or (sc["unsafe"] != "sparse_anchors" and r % 2 == 0 and (r // 2) % n == a)
    others = sorted(exists_prev - {a})
    if a not in exists_prev:
        return False
    for k in range(len(others) + 1):
        for rest in itertools.combinations(others, k):
            H = set(rest) | {a}
            if len(H) < q:
                continue
            if dense or len(H) <= d:
                if R == H:
                    return True
                continue
            extra = {a} | ({(r - 1) // 2 % n} & H if (r - 1) % 2 == 0 else set())
            if R <= H and any(set(S) | extra == R for S in itertools.combinations(sorted(H), d)):
                return True
    return False


def valid_refs(sc, a, r, R):
    n, q, d = sc["n"], sc["n"] - sc["f"], sc["d"]
    if r == 0:
        return not R
    dense = sc["dense"] or (sc["unsafe"] != "sparse_anchors" and r % 2 == 0 and (r // 2) % n == a)
    if dense:
        return len(R) >= q
    return min(d, q) <= len(R) <= min(d + 2, n)


# ---- the TLA+ log ----

def tla_v(v):
    return "<<%d, %d>>" % v


def build_records(sc, dag, chains):
    n, byz = sc["n"], set(sc["byz"])
    honest = [i for i in range(n) if i not in byz]
    max_round = max(r for _, r in dag) if dag else 0
    recs, fills = [], 0
    for r in range(max_round + 1):
        for a in range(n):
            v = dag.get((a, r))
            if v is not None:
                kind = "genesis" if r == 0 and a in honest else "vertex"
                recs.append({"k": kind, "a": a, "r": r, "refs": sorted(v["refs"]), "weak": sorted(v["weak"]),
                             "lines": [no for _, no in v["lines"]]})
            elif a in honest and 0 < r < max_round:
                recs.append({"k": "fill", "a": a, "r": r, "refs": [], "weak": [], "lines": []})
                fills += 1
    for i in honest:
        for c in chains[i]:
            recs.append({"k": "commit", "i": i, "chain": c["chain"], "segs": c["segs"], "lines": c["lines"]})
    return recs, max_round, fills


def check_filler_votes(sc, dag, chains, recs):
    """A filler votes for the round r-1 anchor only when no honest choice
    avoids it (FillChoices in DagTrace.tla): when its author is that
    anchor's leader (its vertex references its own previous one), or when
    fewer than n-f (the round quorum) other round r-1 vertices exist.  Such a vote could let
    TLC accept a direct commit that had fewer than Q votes in the run, so
    here the votes for every anchor a node committed directly (the last of
    a try_commit chain) are counted among the vertices honest nodes
    inserted: the C code counts only vertices it inserted (insert)."""
    n, q = sc["n"], sc["n"] - sc["f"]  # the round quorum (2f+1 when n = 3f+1)
    cq = sc["f"] + 1 if sc["dense"] or sc["unsafe"] == "commit_f1" else 2 * sc["f"] + 1
    exists = {}
    for rec in recs:
        if rec["k"] in ("vertex", "genesis", "fill"):
            exists.setdefault(rec["r"], set()).add(rec["a"])
    for i in range(n):
        if i not in sc["byz"]:
            exists.setdefault(0, set()).add(i)
    direct = {}
    for i, cs in chains.items():
        for c in cs:
            direct.setdefault(c["chain"][-1], i)
    for rec in recs:
        if rec["k"] != "fill" or rec["r"] % 2 == 0:
            continue
        a, r = rec["a"], rec["r"]
        leader = ((r - 1) // 2) % n
        if leader not in exists.get(r - 1, ()) or (r - 1) not in direct:
            continue
        if a != leader and len(exists[r - 1] - {leader}) >= q:
            continue
        votes = sorted(b for (b, rr), x in dag.items() if rr == r and leader in x["refs"])
        if len(votes) < cq:
            raise Rejected("node %d committed anchor %d directly, but only %d vertices any honest node inserted "
                           "reference it (%s), fewer than %d" % (direct[r - 1], r - 1, len(votes),
                                                                 ",".join(map(str, votes)) or "none", cq))


def rec_tla(rec):
    if rec["k"] == "commit":
        return ("[k |-> \"commit\", a |-> 0, r |-> 0, refs |-> {}, weak |-> {}, i |-> %d, chain |-> %s, "
                "segs |-> %s, line |-> %d]"
                % (rec["i"], tla_seq(str(x) for x in rec["chain"]),
                   tla_seq(tla_seq(tla_v(tuple(v)) for v in s) for s in rec["segs"]),
                   rec["lines"][0] if rec["lines"] else 0))
    return ("[k |-> \"%s\", a |-> %d, r |-> %d, refs |-> %s, weak |-> %s, i |-> 0, chain |-> <<>>, "
            "segs |-> <<>>, line |-> %d]"
            % (rec["k"], rec["a"], rec["r"], tla_set(str(x) for x in rec["refs"]),
               tla_set(tla_v(tuple(w)) for w in rec["weak"]), rec["lines"][0] if rec["lines"] else 0))


def write_module(sc, recs, max_round, trace_path, outdir, note):
    defs = ["(* The parameters of SparseBullshark, by name (DagTrace instances it with *)",
            "(* implicit substitution); the Byzantine set as a constant set and as the *)",
            "(* set of the sets a variable may be chosen from. *)",
            "N == %d" % sc["n"],
            "F == %d" % sc["f"],
            "Byz == %s" % tla_set(str(b) for b in sc["byz"]),
            "ByzChoices == {Byz}",
            "MaxRound == %d" % max_round,
            "D == %d" % sc["d"],
            "Dense == %s" % ("TRUE" if sc["dense"] else "FALSE"),
            "DenseAnchors == %s" % ("FALSE" if sc["unsafe"] == "sparse_anchors" else "TRUE"),
            "",
            "(* Definitions of SparseBullshark the cfg overrides with these. *)",
            "TWeakMax == %d" % sc["weak_max"],
            "TCommitQuorum == %d  \\* commit_quorum (dag_init)" %
            (sc["f"] + 1 if sc["dense"] or sc["unsafe"] == "commit_f1" else 2 * sc["f"] + 1)]
    # WeakMax is a definition of SparseBullshark (0 unless a model overrides
    # it); the run's weak_max replaces it.  commit_f1 lowers CommitQuorum as
    # the broken model BullsharkBrokenQuorum does.
    constants = ["WeakMax <- [SparseBullshark] TWeakMax"]
    if sc["unsafe"] == "commit_f1":
        constants.append("CommitQuorum <- [SparseBullshark] TCommitQuorum")
    write_trace_module(outdir, "DagTrace", "dag2tla", trace_path, [note], "Naturals, Sequences", defs,
                       [rec_tla(r) for r in recs], constants=constants,
                       invariants=("TraceAnchorsConsistent", "TraceLogsConsistent", "TraceNoDoubleOrder",
                                   "TraceLogIsSpecLog", "TraceNotMatched"))


def convert(sc, lines):
    """The records of a DAG trace: (records, max_round, fillers)."""
    dag, chains = read_run(sc, lines)
    if not dag:
        raise Unsupported("no dag.insert event of an honest node: not a DAG trace, or one without log events")
    check_gc_floor(sc, dag, chains)
    recs, max_round, fills = build_records(sc, dag, chains)
    check_filler_votes(sc, dag, chains, recs)
    return recs, max_round, fills


def cmd_convert(args):
    try:
        sc, lines, (recs, max_round, fills) = load_and_convert(args, die, 2, load_scenario, convert)
    except Rejected as exc:
        print("trace rejected: %s" % exc)
        sys.exit(1)
    ncommits = sum(1 for r in recs if r["k"] == "commit")
    nanchors = sum(len(r["chain"]) for r in recs if r["k"] == "commit")
    nvert = sum(1 for r in recs if r["k"] in ("vertex", "genesis"))
    note = ("%d vertices (rounds 0..%d), %d filler%s, %d commits (%d anchors) of honest nodes %s; n = %d, f = %d, "
            "Byzantine %s, %s, d = %d, weak_max = %d%s"
            % (nvert, max_round, fills, "" if fills == 1 else "s", ncommits, nanchors,
               ",".join(str(i) for i in range(sc["n"]) if i not in sc["byz"]), sc["n"], sc["f"],
               "{%s}" % ",".join(str(b) for b in sc["byz"]), "dense" if sc["dense"] else "sparse", sc["d"],
               sc["weak_max"], ", unsafe = " + sc["unsafe"] if sc["unsafe"] else ""))
    write_module(sc, recs, max_round, args.trace, args.out, note)
    write_steps(args.out, args.trace, lines, recs, [r["lines"] for r in recs])
    print("dag2tla: %d trace lines -> %d records: %s" % (len(lines), len(recs), note))


# ---- describing a record ----

def describe_record(rec):
    if rec["k"] == "commit":
        parts = []
        for a, s in zip(rec["chain"], rec["segs"]):
            parts.append("anchor %d ordering %s" % (a, " ".join("%d:%d" % (v[1], v[0]) for v in s) or "nothing"))
        return "node %d commits %s" % (rec["i"], "; then ".join(parts)) + "  (round:author)"
    what = {"vertex": "vertex", "genesis": "genesis vertex",
            "fill": "filler (no honest node inserted it; an honest vertex nobody references)"}[rec["k"]]
    s = "%s (round %d, author %d)" % (what, rec["r"], rec["a"])
    if rec["k"] != "fill":
        s += " refs {%s} weak {%s}" % (",".join(str(x) for x in rec["refs"]),
                                       ",".join("%d:%d" % (w[1], w[0])
                                                for w in sorted(rec["weak"], key=lambda w: (w[1], w[0]))))
        s += " (weak: round:author)" if rec["weak"] else ""
        s += ", inserted at %d node(s)" % len(rec["lines"])
    return s


# ---- tampering ----

def cmd_tamper(args):
    try:
        sc = load_scenario(args.scenario)
        lines, out, pos = tamper_input(args.input)
        dag, chains = read_run(sc, lines)
    except (Unsupported, Rejected) as exc:
        die("tamper: the trace is not usable: %s" % exc)
    byz = set(sc["byz"])
    honest = [i for i in range(sc["n"]) if i not in byz]
    ev_at = {no: ev for no, _, ev in lines}

    def set_line(no, ev):
        out[pos[no]] = dump(ev)

    def insert_msg(slot, refs, weak):
        return "round=%d author=%d refs=%s weak=%s" % (
            slot[1], slot[0], ",".join(str(a) for a in sorted(refs)),
            ",".join("%d:%d" % (q, b) for b, q in sorted(weak, key=lambda w: (w[1], w[0]))))

    def rewrite_slot(slot, refs, weak):
        for _, no in dag[slot]["lines"]:
            set_line(no, dict(ev_at[no], msg=insert_msg(slot, refs, weak)))

    exists = {}
    for a, r in dag:
        exists.setdefault(r, set()).add(a)
    mode = args.mode
    if mode == "dup":
        # A node orders, in a later commit, a vertex it ordered before.
        for i in honest:
            if len(chains[i]) >= 2 and chains[i][0]["segs"][0]:
                break
        else:
            die("tamper: no honest node committed twice")
        v = chains[i][0]["segs"][0][0]
        c2 = chains[i][1]
        first = c2["lines"][0]
        ev = dict(ev_at[first], event="dag.order",
                  msg="round=%d author=%d anchor=%d txs=0" % (v[1], v[0], c2["chain"][0]))
        out.insert(pos[first], dump(ev))
        print("tamper: line %d: node %d orders %s again, as part of anchor %d's history (it ordered it for "
              "anchor %d)" % (first, i, fmt_v(v), c2["chain"][0], chains[i][0]["chain"][0]))
    elif mode == "order":
        # A node orders an anchor's history out of (round, author) order.
        hit = None
        for i in honest:
            for c in chains[i]:
                k = 0
                for anchor, s in zip(c["chain"], c["segs"]):
                    if len(s) >= 2:
                        hit = (i, c["lines"][k], c["lines"][k + 1], s[0], s[1], anchor)
                        break
                    k += len(s) + 1
                if hit:
                    break
            if hit:
                break
        if hit is None:
            die("tamper: no commit orders two vertices")
        i, l1, l2, v1, v2, anchor = hit
        out[pos[l1]], out[pos[l2]] = out[pos[l2]], out[pos[l1]]
        print("tamper: lines %d, %d: node %d orders %s before %s in anchor %d's history"
              % (l1, l2, i, fmt_v(v2), fmt_v(v1), anchor))
    elif mode == "votes":
        # An anchor committed without 2f+1 (dense: f+1) votes: the
        # references of enough of its voters to it are dropped, at every
        # node, keeping each voter valid (Valid, and for an honest author
        # the honest reference rule), so that only the commit can fail.
        q = sc["f"] + 1 if sc["dense"] or sc["unsafe"] == "commit_f1" else 2 * sc["f"] + 1
        done = None
        for i in honest:
            for c in chains[i]:
                r = c["chain"][-1]
                leader = (r // 2) % sc["n"]
                voters = sorted(a for a in exists.get(r + 1, ()) if leader in dag[(a, r + 1)]["refs"])
                need = len(voters) - q + 1
                ok = []
                for a in voters:
                    if a == leader:
                        continue
                    R = set(dag[(a, r + 1)]["refs"]) - {leader}
                    if not valid_refs(sc, a, r + 1, R):
                        continue
                    if a not in byz and not honest_refs_ok(sc, exists.get(r, set()), a, r + 1, R):
                        continue
                    ok.append(a)
                if need <= len(ok):
                    done = (i, r, leader, ok[:need], len(voters))
                    break
            if done:
                break
        if done is None:
            die("tamper: no directly committed anchor whose votes can be dropped below the quorum validly")
        i, r, leader, drop, nv = done
        for a in drop:
            x = dag[(a, r + 1)]
            rewrite_slot((a, r + 1), set(x["refs"]) - {leader}, x["weak"])
        print("tamper: the vertices of round %d by %s no longer reference anchor %d (author %d) at any node: "
              "%d votes left of %d, quorum %d; node %d commits it directly"
              % (r + 1, ",".join(str(a) for a in drop), r, leader, nv - len(drop), nv, q, i))
    elif mode == "weak":
        # A weak reference to round r - 1 (validation allows rounds <= r-2).
        for (a, r) in sorted(dag, key=lambda v: (v[1], v[0])):
            x = dag[(a, r)]
            if r >= 2 and a not in byz and len(x["weak"]) < max(sc["weak_max"], 1) and x["refs"]:
                break
        else:
            die("tamper: no vertex of round >= 2 to add a weak reference to")
        b = min(x["refs"])
        rewrite_slot((a, r), x["refs"], set(x["weak"]) | {(b, r - 1)})
        print("tamper: vertex (round %d, author %d) gets a weak reference to (round %d, author %d), at every node"
              % (r, a, r - 1, b))
    elif mode == "walk":
        # The walk back misses an anchor: a node commits a chain without
        # its oldest anchor, whose history it orders as part of the next
        # anchor's (the anchor's dag.commit line dropped, its dag.order
        # lines named after the next anchor, the node's later commit counts
        # one less).
        for i in honest:
            hit = next((c for c in chains[i] if len(c["chain"]) >= 2), None)
            if hit:
                break
        else:
            die("tamper: no commit with a walk back (a chain of two anchors or more)")
        c = hit
        first, second = c["chain"][0], c["chain"][1]
        drop = c["lines"][len(c["segs"][0])]
        for no in c["lines"][:len(c["segs"][0])]:
            ev = ev_at[no]
            set_line(no, dict(ev, msg=ev["msg"].replace("anchor=%d " % first, "anchor=%d " % second)))
        for no, _, ev in lines:
            if (no > drop and ev.get("ev") == "log" and ev.get("node") == i
                    and ev.get("event") == "dag.commit"):
                kv = parse_msg(ev["msg"])
                set_line(no, dict(ev, msg=ev["msg"].replace("anchors=%s " % kv["anchors"],
                                                            "anchors=%d " % (int(kv["anchors"]) - 1))))
        out[pos[drop]] = None
        print("tamper: line %d: node %d's walk back from anchor %d misses anchor %d: it orders anchor %d's "
              "history as part of anchor %d's" % (drop, i, c["chain"][-1], first, first, second))
    elif mode == "fork":
        # One honest node inserts another vertex for a slot than the others
        # (reliable broadcast broken).
        for (a, r) in sorted(dag, key=lambda v: (v[1], v[0])):
            x = dag[(a, r)]
            if r >= 1 and len(x["lines"]) >= 2 and len(x["refs"]) >= 2:
                break
        else:
            die("tamper: no vertex inserted by two honest nodes")
        node, no = x["lines"][-1]
        R = set(x["refs"]) - {max(x["refs"])}
        set_line(no, dict(ev_at[no], msg=insert_msg((a, r), R, x["weak"])))
        print("tamper: line %d: node %d inserts (round %d, author %d) with references {%s} where node %d has {%s}"
              % (no, node, r, a, ",".join(map(str, sorted(R))), x["lines"][0][0],
                 ",".join(map(str, sorted(x["refs"])))))
    write_trace(args.output, out)


def main():
    ap, _, _, _ = command_line(__doc__, "DagTrace", cmd_convert, describe_record, cmd_tamper,
                               ("dup", "order", "votes", "weak", "walk", "fork"), instance=False, die=die, most=12)
    run_command(ap, die, "unsupported: ")


if __name__ == "__main__":
    main()
