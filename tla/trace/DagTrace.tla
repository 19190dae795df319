------------------------------ MODULE DagTrace ------------------------------
(***************************************************************************)
(* Trace validation of weft's DAG consensus (protocols/dag) against        *)
(* SparseBullshark.tla, after Cirstea, Kuppe, Merz et al., "Validating     *)
(* traces of distributed programs against TLA+ specifications" (2024);     *)
(* the Bracha twin is BrachaTrace.tla (README.md next to this file).       *)
(*                                                                         *)
(* dag2tla.py reads a run's log events -- "dag.insert" (graph.c,           *)
(* log_insert: a vertex a node inserted, with its strong and weak          *)
(* references), "dag.order" (order_vertex) and "dag.commit" (order_anchor) *)
(* -- and writes the module DagTraceLog: SparseBullshark's parameters by  *)
(* name (N, F, the Byzantine set Byz and ByzChoices = {Byz}, D, Dense,     *)
(* DenseAnchors, and MaxRound, the highest round any honest node           *)
(* inserted), TWeakMax (weak_max), TCommitQuorum, and TraceLog, a sequence *)
(* of records e:                                                           *)
(*                                                                         *)
(*   e.k = "vertex"   vertex (e.a, e.r) with strong references e.refs (the *)
(*          authors of round e.r - 1) and weak references e.weak (a set   *)
(*          of <<author, round>>), as every honest node that inserted it   *)
(*          logged it (the converter rejects a trace in which two honest   *)
(*          nodes logged different references for one slot: reliable      *)
(*          broadcast gives a slot one vertex);                            *)
(*   e.k = "genesis"  the round 0 vertex of an honest e.a, which the spec  *)
(*          makes in Init: it must have no references;                     *)
(*   e.k = "fill"     honest e.a's vertex of round e.r < MaxRound that no  *)
(*          honest node inserted (a slow node, a broadcast still in flight *)
(*          at the end of the run): the spec's canonical order makes every *)
(*          honest vertex of a round before the next round opens (header   *)
(*          of SparseBullshark.tla, point 3), so the behaviour has it, and *)
(*          nobody references it; its references are chosen below;        *)
(*   e.k = "commit"   one call of try_commit (graph.c) at honest node e.i: *)
(*          the anchors it committed, oldest first (e.chain, one           *)
(*          "dag.commit" each), and for each of them the vertices ordered  *)
(*          as its history (e.segs[k], the "dag.order" lines before the    *)
(*          k-th "dag.commit"), in the order logged.                       *)
(*                                                                         *)
(* The log lists the vertex records in round order, each round's sorted by *)
(* author (Byzantine vertices and fillers included), then the commit       *)
(* records of each honest node in that node's order, node after node.      *)
(* That is the canonical order of the spec (its header, point 3): the DAG  *)
(* is built round by round, and a commit, which reads only the DAG and the *)
(* node's own committed sequence and log, may wait until the DAG is built: *)
(* once an anchor has Q votes it keeps them (votes are never taken back),  *)
(* and the walk back and the histories read only vertices below the anchor *)
(* that exist when it is committed.  So the run of the C code is a         *)
(* behaviour of SparseBullshark iff this reordering of it is; which node   *)
(* commits first does not matter (Commit(i, r) reads i's own state only).  *)
(*                                                                         *)
(* Each step of TraceNext takes the l-th record as one step of             *)
(* SparseBullshark's Next:                                                 *)
(*   vertex:  the Make disjunct of Next with a, r, R, W fixed to the       *)
(*            record's: MayMake(a, r); R \in Choices(a, r), i.e. for an    *)
(*            honest author HonestRefs (some set H of 2f+1 or more round   *)
(*            r-1 vertices, its own among them, from which sample_refs     *)
(*            takes all, or D plus its own and the round r-1 anchor), for  *)
(*            a Byzantine one ByzRefs; Valid(a, r, R) (ref_bounds);        *)
(*            ValidWeak(r, W); and W \in WeakChoices(a, r), written as     *)
(*            WeakOK below so that TLC does not enumerate WeakChoices;     *)
(*   fill:    Make(a, r, R, {}) with R the first (TLC's CHOOSE) of         *)
(*            HonestRefs(a, r) that does not vote for the round r-1 anchor *)
(*            when there is one, so that a filler adds a vote only when no *)
(*            honest choice avoids it (its author is that anchor's leader, *)
(*            or fewer than n-f other round r-1 vertices exist); as such   *)
(*            a vote could make up for a vote missing in the run,          *)
(*            dag2tla.py then counts, itself, the votes the run's vertices *)
(*            give every anchor a node committed directly;                 *)
(*   genesis: no spec step (Init made the vertex): a stuttering step;      *)
(*   commit:  Commit(i, r) with r the last anchor of e.chain (committed    *)
(*            directly: Q votes exist, DirectlyCommittable), and the       *)
(*            spec's choices must be the logged ones: committed[i] grows   *)
(*            by exactly e.chain (the walk back, Walk, found exactly the   *)
(*            anchors the C code did), the node's log grows by exactly the *)
(*            concatenation of e.segs, and e.segs[k] is exactly what the   *)
(*            spec orders for the k-th anchor (OrderIn of that anchor,     *)
(*            after what was ordered before: its history not yet ordered,  *)
(*            sorted by (round, author)).                                  *)
(* Nothing else happens between two records.                               *)
(*                                                                         *)
(* Acceptance as in BrachaTrace: the trace is a behaviour iff a state with *)
(* l = Len(TraceLog) + 1 is reachable, i.e. iff TLC reports the invariant  *)
(* TraceNotMatched violated; otherwise the depth D of the state graph     *)
(* names TraceLog[D], the first record no behaviour matching the records  *)
(* before it can take.  Every step is deterministic (the record fixes the *)
(* vertex, CHOOSE the filler, and with the wait for weak parents Commit    *)
(* has one outcome), so TLC explores one behaviour: Len(TraceLog) + 1      *)
(* distinct states.                                                        *)
(*                                                                         *)
(* What this module depends on in SparseBullshark.tla: its constants are  *)
(* among N, F, Byz or ByzChoices, MaxRound, D, Dense, DenseAnchors; its    *)
(* variables are rnd, made, refs, weak, reach, committed, logs, and        *)
(* possibly byz (chosen in Init, then fixed); the definitions WeakMax and  *)
(* CommitQuorum (overridden in the cfg: WeakMax by the run's weak_max,     *)
(* CommitQuorum by f+1 for unsafe = commit_f1), Node, Round, Honest,       *)
(* IsAnchorRound, Leader, AllMade, Valid, ValidWeak, WeakCarrier,          *)
(* HonestRefs, Choices, MayMake, Make, Commit, OrderIn, Range, IsPrefix,   *)
(* NodeLog (= logs[i] with weak links, Log(i) = OrderIn(committed[i], {},  *)
(* {}) without: see NextLog), LastCommitted, Walk, Init, and the property  *)
(* AnchorsConsistent (LogsConsistent and NoDoubleOrder are checked on      *)
(* tlog, the same logs, with the spec's formulas).                         *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC, DagTraceLog

VARIABLES rnd, made, refs, weak, reach, committed, logs,
          byz,  \* the Byzantine set: SparseBullshark's variable chosen in Init
                \* from ByzChoices, or (with a constant Byz) fixed here
          l,    \* the index of the next record of TraceLog to match
          tlog  \* tlog[i]: the vertices honest i ordered in the records matched

(* Every parameter is substituted by the definition of the same name in   *)
(* DagTraceLog: N, F, MaxRound, D, Dense, DenseAnchors, and the Byzantine *)
(* set both as Byz (a constant set) and as ByzChoices = {Byz} (the sets    *)
(* Init may choose the variable byz from), so that this module works with  *)
(* either form of the spec; a variable byz the spec does not have is this  *)
(* module's own and never changes.                                         *)
B == INSTANCE SparseBullshark

specVars == <<rnd, made, refs, weak, reach, committed, logs, byz>>
traceVars == <<rnd, made, refs, weak, reach, committed, logs, byz, l, tlog>>

(* W \in B!WeakChoices(a, r), without enumerating it: WeakChoices is the   *)
(* sets of at most WeakMax made vertices of rounds <= r-2 (UpTo), or {{}}. *)
WeakOK(a, r, W) ==
    IF B!WeakMax = 0 \/ ~B!WeakCarrier(a, r) THEN W = {}
    ELSE /\ Cardinality(W) <= B!WeakMax
         /\ \A w \in W : w \in B!AllMade /\ w[2] <= r - 2

(* The references of a filler: honest choices that do not vote for the    *)
(* round r-1 anchor, if there are any, else all honest choices.            *)
FillChoices(a, r) ==
    LET all == B!HonestRefs(a, r)
        quiet == {R \in all : ~(B!IsAnchorRound(r - 1) /\ B!Leader(r - 1) \in R)}
    IN  IF quiet # {} THEN quiet ELSE all

Vertex(e) ==
    LET a == e.a
        r == e.r
    IN  CASE e.k = "genesis" ->
                 /\ a \in B!Honest /\ r = 0 /\ 0 \in made[a]
                 /\ e.refs = {} /\ e.weak = {}
                 /\ UNCHANGED specVars
          [] e.k = "fill" ->
                 /\ a \in B!Honest
                 /\ B!MayMake(a, r)
                 /\ FillChoices(a, r) # {}
                 /\ B!Make(a, r, CHOOSE R \in FillChoices(a, r) : TRUE, {})
          [] e.k = "vertex" ->
                 /\ B!MayMake(a, r)
                 /\ WeakOK(a, r, e.weak)
                 /\ B!Make(a, r, e.refs, e.weak)      \* checks R \in Choices, Valid, ValidWeak
          [] OTHER -> FALSE

Flat(segs) == LET f[k \in 0 .. Len(segs)] == IF k = 0 THEN <<>> ELSE f[k - 1] \o segs[k]
              IN  f[Len(segs)]

(* THE NODE'S LOG.  tlog[i] is the concatenation of the segs of i's       *)
(* records matched so far, and each commit step checks that it is the      *)
(* spec's log, B!NodeLog(i), in the next state; so tlog[i] = B!NodeLog(i)  *)
(* in every state, and the steps use tlog[i] for the log before the step.  *)
(* B!NodeLog(i) is logs[i] with weak links and Log(i) = OrderIn(           *)
(* committed[i], {}, {}) without; the latter is a recomputation from       *)
(* scratch, too slow on long traces (quadratic in the anchors; and priming *)
(* it makes TLC evaluate OrderIn's recursion in a primed context, where it *)
(* caches no argument: exponential), so NextLog writes its next value as   *)
(* tlog[i] \o OrderIn(chain, {}, Range(tlog[i])): OrderIn over a sequence  *)
(* s \o t is OrderIn over s, then over t after what s ordered (its         *)
(* definition: done grows by exactly what each anchor orders), which is    *)
(* also what Commit appends to logs[i] with weak links (M = {}).  And      *)
(* TraceLogIsSpecLog checks tlog[i] = B!NodeLog(i) in full at the end.     *)
NextLog(i, chain) ==
    IF B!WeakMax = 0 THEN tlog[i] \o B!OrderIn(chain, {}, B!Range(tlog[i])) ELSE logs'[i]

CommitStep(e) ==
    LET i == e.i
        chain == e.chain
        old == tlog[i]
    IN  /\ i \in B!Honest
        /\ chain # <<>> /\ Len(e.segs) = Len(chain)
        /\ B!Commit(i, chain[Len(chain)])
        /\ committed'[i] = committed[i] \o chain
        /\ \A k \in 1 .. Len(chain) :
              e.segs[k] = B!OrderIn(<<chain[k]>>, {},
                                    B!Range(old) \cup UNION {B!Range(e.segs[m]) : m \in 1 .. k - 1})
        /\ NextLog(i, chain) = old \o Flat(e.segs)
        /\ tlog' = [tlog EXCEPT ![i] = old \o Flat(e.segs)]

TraceInit == B!Init /\ byz = Byz /\ l = 1 /\ tlog = [i \in B!Honest |-> <<>>]

(* The record is bound by \E, not LET, so that it is a constant inside    *)
(* the primed expressions of CommitStep (a LET would prime l with it).     *)
TraceNext ==
    /\ l <= Len(TraceLog)
    /\ \E e \in {TraceLog[l]} :
         IF e.k = "commit" THEN CommitStep(e) ELSE Vertex(e) /\ UNCHANGED tlog
    /\ UNCHANGED byz
    /\ l' = l + 1

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

(* Violated iff the whole log was matched: the counterexample TLC prints   *)
(* is the behaviour of SparseBullshark that the trace is.                  *)
TraceMatched == l = Len(TraceLog) + 1
TraceNotMatched == ~TraceMatched

(* The spec's safety properties, along the trace (they hold in every spec  *)
(* state; with more than f Byzantine nodes they can fail, and TLC then     *)
(* stops with that violation).                                             *)
TraceAnchorsConsistent == B!AnchorsConsistent
(* B!LogsConsistent, on tlog (= B!NodeLog, see NextLog): cheap. *)
TraceLogsConsistent ==
    \A i, j \in B!Honest : B!IsPrefix(tlog[i], tlog[j]) \/ B!IsPrefix(tlog[j], tlog[i])

(* No vertex twice in an honest log (the spec's NoDoubleOrder), on tlog.  *)
TraceNoDoubleOrder ==
    \A i \in B!Honest : Cardinality(B!Range(tlog[i])) = Len(tlog[i])

(* The guard of NextLog's rewriting: at the end, the logs are the spec's. *)
TraceLogIsSpecLog ==
    l = Len(TraceLog) + 1 => \A i \in B!Honest : tlog[i] = B!NodeLog(i)

-----------------------------------------------------------------------------
(* Diagnostics (validate-dag.sh prints them for the record a rejected      *)
(* trace stops at, through ALIAS in a second run): what the spec says      *)
(* about record l in the state reached before it.                          *)
VertexDiag(e) ==
    LET a == e.a
        r == e.r
    IN  [record |-> e,
         round_being_built |-> rnd,
         may_make |-> B!MayMake(a, r),
         refs_allowed |-> e.k # "vertex" \/ e.refs \in B!Choices(a, r),
         refs_valid |-> e.k # "vertex" \/ B!Valid(a, r, e.refs),
         weak_valid |-> e.k # "vertex" \/ (B!ValidWeak(r, e.weak) /\ WeakOK(a, r, e.weak)),
         round_before |-> IF r = 0 THEN {} ELSE {b \in B!Node : r - 1 \in made[b]},
         own_before |-> r = 0 \/ r - 1 \in made[a]]

CommitDiag(e) ==
    LET i == e.i
        r == e.chain[Len(e.chain)]
        walk == B!Walk(r, r - 2, B!LastCommitted(i) + 2) \o <<r>>
    IN  [record |-> e,
         committed_before |-> committed[i],
         votes_for_anchor |-> IF r + 1 \in B!Round
                                THEN {a \in B!Node : r + 1 \in made[a] /\ r \in reach[a][r + 1]}
                                ELSE {},
         commit_quorum |-> B!CommitQuorum,
         anchor_exists |-> r \in made[B!Leader(r)],
         spec_chain |-> walk,
         spec_order |-> B!OrderIn(walk, {}, B!Range(tlog[i]))]

Diag ==
    IF l > Len(TraceLog) THEN [matched |-> TRUE]
    ELSE IF TraceLog[l].k = "commit" THEN CommitDiag(TraceLog[l])
    ELSE VertexDiag(TraceLog[l])

DiagAlias == [l |-> l, next_record |-> Diag]

(* What TLC prints of each state of the behaviour that matches a trace     *)
(* (ALIAS in the cfg): the states are large, and their DAG and logs are    *)
(* the trace's.                                                            *)
ShortAlias == [l |-> l, rnd |-> rnd,
               anchors_committed |-> [i \in B!Honest |-> Len(committed[i])]]
=============================================================================
