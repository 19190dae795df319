--------------------------- MODULE BullsharkLiveness --------------------------
(***************************************************************************)
(* Liveness of weft's DAG consensus (protocols/dag: dag.c, graph.c,        *)
(* vertex.c; docs/protocols/sparse-dag.md) under eventual synchrony: once  *)
(* the network is synchronous, every anchor of an honest leader is         *)
(* committed and every honest vertex is ordered within a bound of rounds.  *)
(* SparseBullshark.tla checks safety on one global DAG built round by      *)
(* round; it drops time, so it cannot say "eventually".  This module keeps *)
(* time, the waiting rule of dag_try_advance, and the local DAG.           *)
(*                                                                         *)
(* TIME.  A global clock of ticks (now); one tick is one message delay     *)
(* after GST.  Every vertex gets one arrival tick (arr) when it is made:   *)
(*   made at t >= GST: t+1 .. t+Delta (the models: Delta = 1);             *)
(*   made at t <  GST: PreAny: any tick up to GST + Delta; PreFixed: t+1   *)
(*     .. t+Delta, except the vertices of a Slow node, which take          *)
(*     SlowDelay ticks (at most until GST + Delta).                        *)
(* The arrival tick is the same at every honest node, the author included  *)
(* (its own vertex comes back through the BRB child like any other).  So   *)
(* all honest nodes hold the same local DAG at a tick (ins); what tells    *)
(* them apart is their own progress (next, entered).                       *)
(*                                                                         *)
(* ONE TICK (Tick), as the C code runs it:                                 *)
(*   1. the vertices due by now are inserted, each once all its parents,   *)
(*      strong and weak, are (dag_accept, insert in graph.c; ins, InsUpTo);*)
(*      votes are counted and anchors committed and ordered (insert's      *)
(*      R->votes, try_commit, dag_path, order_anchor, history: cmt, ord);  *)
(*   2. every honest node whose advance_wait (dag.c) returns 0 makes its    *)
(*      next vertex at once (dag_try_advance runs after every callback and *)
(*      on the timer advance_wait sets): CanAdvance is advance_wait --      *)
(*        P->inserted >= quorum (2f+1) in round r-1,                       *)
(*        its own round r-1 vertex inserted (always: own_from = 0 here),   *)
(*        then "behind" (f+1 authors above r+1: Behind) goes,              *)
(*        else anchor_ok (r-1 even: the anchor of r-1 inserted; r-1 odd:   *)
(*        the anchor of r-2 absent, or commit_quorum votes in r-1, or      *)
(*        inserted - votes > n - commit_quorum: AnchorOK),                 *)
(*        else waited >= timeout_ms since its previous vertex              *)
(*        (entered_us: entered; Timeout ticks);                            *)
(*      round_min_ms is taken as at most one tick, which a node needs      *)
(*      anyway to get its own vertex back, so pacing never binds here;     *)
(*      make_vertex: strong references sample_refs (SampleChoices: all     *)
(*      held round r-1 vertices for its anchor or when it holds at most D; *)
(*      else D of them plus its own and the round r-1 anchor when held),   *)
(*      weak references weak_refs (WeakRefs, exact: the inserted vertices  *)
(*      of rounds <= r-2 that no inserted vertex references and that are   *)
(*      not ordered, by (round, author), at most weak_max = WeakMax).      *)
(* One vertex per node per tick: the next needs the previous one back.     *)
(*                                                                         *)
(* BYZANTINE NODES (Byz).  A Byzantine vertex must pass dag_vertex_decode  *)
(* (ref_bounds: ValidRefs; references to existing vertices).  Byzantine    *)
(* author b decides its rounds in order; once it can make its round r      *)
(* vertex it makes it at once ("eager": arriving next tick, ByzMake),      *)
(* never (ByzSkip), or "in step" (ByzWait, then in Tick: in the tick where *)
(* the first honest node makes round r, with what that node holds).  Its   *)
(* strong references come from what the honest nodes hold plus its own     *)
(* round r-1 vertex (a chain made in one tick: the racer below).  What a   *)
(* Byzantine vertex changes for the honest nodes' waiting and for the      *)
(* direct commit rule is its round, its arrival and whether it votes for   *)
(* the round r-1 anchor (CanAdvance and DC read nothing else of it), so    *)
(* ByzRefsCanon offers one valid set of fewest references that votes and  *)
(* one that does not.  Weak references: none, or (ByzWeakAdopt, slow       *)
(* models) one orphan of the slow node, which it thereby takes out of the  *)
(* honest nodes' orphan sets.  What this leaves out -- a Byzantine vertex  *)
(* made between "eager" and "in step" or later, other reference sets,      *)
(* sending a vertex to some honest nodes earlier than to others -- is a    *)
(* restriction of the adversary, not a loss-free abstraction.              *)
(*                                                                         *)
(* HONEST SAMPLES.  SampleAny is sample_refs's random draw as a free       *)
(* choice.  The models use SampleCanon, one fixed draw that avoids the     *)
(* slow and the Byzantine authors (it takes fast honest ones first): the   *)
(* draw decides no vote (the round r-1 anchor is always added when held)   *)
(* and nothing CanAdvance reads, so AnchorCommit, which asks for DIRECT    *)
(* commits, is the same for every draw; for AllOrdered the fixed draw is   *)
(* the one that leaves the slow node's vertices unreferenced longest, but  *)
(* it is one draw, not all of them.                                        *)
(*                                                                         *)
(* COMMITS.  cmt is the chain try_commit outputs from the highest anchor   *)
(* with commit_quorum votes in the local DAG, walking back along strong    *)
(* paths (CommittedIn, Walk).  Commits only happen where the Q-th vote is  *)
(* inserted, and the walk stops at the last committed anchor; that the     *)
(* chain from the highest one contains every earlier commit is the safety  *)
(* lemma SparseBullshark.tla checks (AnchorPaths, AnchorsConsistent).  ord *)
(* is the union of the committed anchors' histories along strong and weak  *)
(* references: insertion waits for weak parents, so the history is the    *)
(* same at every node (no weak_nowait here).                               *)
(*                                                                         *)
(* PROPERTIES (bounded, checked as invariants over a horizon of MaxRound   *)
(* rounds and MaxTick ticks; i ranges over the honest nodes not in Slow):  *)
(*   AnchorCommit: the anchor of every round r >= LiveFrom whose leader is *)
(*     honest and not Slow is committed DIRECTLY (commit_quorum votes) by  *)
(*     the time i has made round r + K1;                                   *)
(*   AllOrdered: every honest vertex v -- the slow node's included -- is   *)
(*     ordered by the time i has made round seen(v) + K2, where seen(v) is *)
(*     the highest round the honest nodes had made when v was inserted.    *)
(*                                                                         *)
(* MODELS (tla/README.md): BullsharkLive and BullsharkLiveSlow hold; the    *)
(* broken BullsharkLiveBrokenNoWait (no anchor wait) violates AnchorCommit *)
(* and BullsharkLiveBrokenNoWeak (weak_max = 0, a node slow before GST)    *)
(* violates AllOrdered.  BullsharkLiveBrokenRacer is the C code before it  *)
(* counted f+1 authors for "behind", with D = 1: a Byzantine chain of      *)
(* one-reference vertices raises d->highest at every honest node, "behind" *)
(* then skips the anchor wait everywhere, and an honest anchor one round   *)
(* late is never voted for (AnchorCommit fails); BullsharkLiveRacer, the   *)
(* same run against the C code now, holds.                                 *)
(*                                                                         *)
(* Not modelled: transactions, signatures, the BRB child (each slot holds  *)
(* at most one vertex, delivered to all honest nodes at once), range       *)
(* fetches and sync, garbage collection (gc_depth is far above these       *)
(* rounds), restarts, dense mode, n other than 3f+1.                       *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, TLC

CONSTANTS
    N,          \* nodes 0 .. N-1
    F,          \* fault bound (N = 3F+1)
    Byz,        \* the Byzantine nodes
    Slow,       \* honest nodes slow before GST (their anchors are not due)
    MaxRound,   \* honest nodes make rounds 0 .. MaxRound
    MaxTick,    \* the horizon of the clock
    D,          \* params.d: sampled strong references
    WeakMax,    \* params.weak_max (0: no weak links)
    Timeout,    \* params.timeout_ms, in ticks
    GST,        \* the tick from which delays are bounded by Delta
    Delta,      \* the delay bound after GST, in ticks
    SlowDelay,  \* the delay of a Slow node's vertices before GST
    LiveFrom,   \* the first anchor round AnchorCommit asks for
    K1, K2      \* the bounds of AnchorCommit and AllOrdered, in rounds

ASSUME /\ N = 3 * F + 1 /\ Byz \subseteq 0 .. N - 1 /\ Cardinality(Byz) <= F
       /\ Slow \subseteq (0 .. N - 1) \ Byz
       /\ D \in Nat \ {0} /\ WeakMax \in Nat /\ Timeout \in Nat \ {0}
       /\ GST \in Nat /\ Delta \in Nat \ {0} /\ SlowDelay \in Nat \ {0}

Node == 0 .. N - 1
Honest == Node \ Byz
Fast == Honest \ Slow
Round == 0 .. MaxRound
Vertex == Node \X Round
Quorum == N - F                 \* d->quorum
CommitQuorum == 2 * F + 1       \* d->commit_quorum, sparse mode
IsAnchorRound(r) == r % 2 = 0
Leader(r) == (r \div 2) % N     \* dag_leader
AnchorRound == {r \in Round : IsAnchorRound(r)}
Anchor(r) == <<Leader(r), r>>
Max(S) == CHOOSE x \in S : \A y \in S : y <= x
Min(x, y) == IF x <= y THEN x ELSE y

(* advance_wait's anchor and vote conditions; a broken model drops them    *)
(* (NoAnchorWait: a node moves on as soon as it holds 2f+1 of round r-1,   *)
(* its own included).                                                      *)
AnchorWait == TRUE
NoAnchorWait == FALSE

VARIABLES
    now,      \* the clock
    made,     \* made[a]: the rounds where a has a vertex (one per slot: the BRB)
    refs,     \* refs[a][r]: the round r-1 authors (a, r) references strongly
    weak,     \* weak[a][r]: the <<author, round>> vertices it references weakly
    arr,      \* arr[a][r]: the tick (a, r) reaches the honest nodes
    next,     \* next[i]: d->next_round of honest i
    entered,  \* entered[i]: the tick of i's latest vertex (d->entered_us)
    bnext,    \* bnext[b]: the next round Byzantine b decides
    bwait,    \* bwait[b]: b makes that round in step with the honest nodes
    ins,      \* the vertices inserted at the honest nodes (the local DAG)
    cmt,      \* the anchor rounds committed (a function of ins)
    ord,      \* the vertices ordered (a function of cmt)
    seen      \* seen[a][r]: the highest round made when (a, r) was inserted
vars == <<now, made, refs, weak, arr, next, entered, bnext, bwait, ins, cmt, ord, seen>>

Exists(r) == {a \in Node : r \in made[a]}
AllMade == {v \in Vertex : v[2] \in made[v[1]]}

(* Before GST: PreDelays (any delay up to GST + Delta, or none beyond     *)
(* Delta), and a slow node's vertices take SlowDelay ticks (capped at      *)
(* GST + Delta).  From GST on: 1 .. Delta for every honest vertex.         *)
PreAny(t) == 1 .. (GST + Delta - t)
PreFixed(t) == 1 .. Delta
PreDelays(t) == PreAny(t)
ArrChoices(a, t) ==
    IF t >= GST THEN {t + d : d \in 1 .. Delta}
    ELSE IF a \in Slow THEN {Min(t + SlowDelay, GST + Delta)}
    ELSE {t + d : d \in PreDelays(t)}
Delays(a, t) == {x - t : x \in ArrChoices(a, t)}

(* The local DAG at tick t: a vertex is inserted once it has arrived and   *)
(* every parent, strong and weak, is inserted (dag_accept, insert).        *)
RECURSIVE InsUpTo(_, _, _, _, _, _)
InsUpTo(r, t, mk, rf, wk, ar) ==
    IF r < 0 THEN {}
    ELSE LET below == InsUpTo(r - 1, t, mk, rf, wk, ar)
         IN below \cup
            {<<a, r>> : a \in {a \in Node :
                /\ r \in mk[a]
                /\ ar[a][r] <= t
                /\ \A b \in rf[a][r] : <<b, r - 1>> \in below
                /\ wk[a][r] \subseteq below}}

StrongPar(S, rf) == UNION {{<<b, v[2] - 1>> : b \in rf[v[1]][v[2]]} : v \in S}
AllPar(S, rf, wk) == StrongPar(S, rf) \cup UNION {wk[v[1]][v[2]] : v \in S}

RECURSIVE DownS(_, _, _)
DownS(front, acc, rf) ==
    IF front = {} THEN acc
    ELSE LET nacc == acc \cup front IN DownS(StrongPar(front, rf) \ nacc, nacc, rf)
RECURSIVE DownW(_, _, _, _)
DownW(front, acc, rf, wk) ==
    IF front = {} THEN acc
    ELSE LET nacc == acc \cup front IN DownW(AllPar(front, rf, wk) \ nacc, nacc, rf, wk)

(* Directly committable: commit_quorum inserted round r+1 vertices         *)
(* reference the anchor of round r (insert's R->votes, then try_commit).   *)
DC(r, I, rf) ==
    /\ r + 1 <= MaxRound
    /\ Anchor(r) \in I
    /\ Cardinality({a \in Node : <<a, r + 1>> \in I /\ Leader(r) \in rf[a][r + 1]}) >= CommitQuorum

(* try_commit's walk back from anchor cur along strong paths (dag_path). *)
RECURSIVE Walk(_, _, _, _)
Walk(cur, rr, I, rf) ==
    IF rr < 0 THEN {}
    ELSE IF Anchor(rr) \in I /\ Anchor(rr) \in DownS({cur}, {}, rf)
           THEN {rr} \cup Walk(Anchor(rr), rr - 2, I, rf)
           ELSE Walk(cur, rr - 2, I, rf)

CommittedIn(I, rf) ==
    LET T == {r \in AnchorRound : DC(r, I, rf)}
    IN IF T = {} THEN {} ELSE LET c == Max(T) IN {c} \cup Walk(Anchor(c), c - 2, I, rf)

(* order_anchor / history: the committed anchors' histories along strong  *)
(* and weak references.                                                    *)
OrderedIn(C, rf, wk) == DownW({Anchor(c) : c \in C}, {}, rf, wk)

Key(v) == v[2] * N + v[1]
RECURSIVE FirstK(_, _)
FirstK(S, k) ==
    IF k = 0 \/ S = {} THEN {}
    ELSE LET m == CHOOSE v \in S : \A w \in S : Key(v) <= Key(w)
         IN {m} \cup FirstK(S \ {m}, k - 1)

(* weak_refs (dag.c) for a vertex of round r. *)
WeakRefs(r) ==
    LET referenced == AllPar(ins, refs, weak)
        orphans == {v \in ins : v[2] <= r - 2 /\ v \notin referenced /\ v \notin ord}
    IN FirstK(orphans, WeakMax)

Held(p) == {a \in Node : <<a, p>> \in ins}

(* sample_refs (dag.c) at honest i for round r: the random draw as a free  *)
(* choice (SampleAny), or one fixed draw (SampleCanon, see the header).    *)
SampleAny(i, r) ==
    LET H == Held(r - 1)
    IN IF (IsAnchorRound(r) /\ Leader(r) = i) \/ Cardinality(H) <= D THEN {H}
       ELSE LET extra == (H \cap {i}) \cup
                         (IF IsAnchorRound(r - 1) THEN H \cap {Leader(r - 1)} ELSE {})
            IN {S \cup extra : S \in {S \in SUBSET H : Cardinality(S) = D}}

(* Preference order for the canonical choices: fast honest authors first, *)
(* then slow ones, then Byzantine ones (lowest id first in each class).   *)
Pref(a) == (IF a \in Fast THEN 0 ELSE IF a \in Slow THEN N ELSE 2 * N) + a
PrefList == [k \in 1 .. N |-> CHOOSE a \in Node :
                Cardinality({b \in Node : Pref(b) < Pref(a)}) = k - 1]
RECURSIVE Scan(_, _, _)
Scan(H, k, j) ==
    IF k <= 0 \/ j > N THEN {}
    ELSE IF PrefList[j] \in H THEN {PrefList[j]} \cup Scan(H, k - 1, j + 1)
    ELSE Scan(H, k, j + 1)
Lowest(H, k) == Scan(H, k, 1)

SampleCanon(i, r) ==
    LET H == Held(r - 1)
    IN IF (IsAnchorRound(r) /\ Leader(r) = i) \/ Cardinality(H) <= D THEN {H}
       ELSE {Lowest(H, D) \cup (H \cap {i}) \cup
             (IF IsAnchorRound(r - 1) THEN H \cap {Leader(r - 1)} ELSE {})}

SampleChoices(i, r) == SampleAny(i, r)

(* "The committee is already ahead of us" (advance_wait's behind): f+1    *)
(* authors have an inserted vertex above r+1 (dag_authors_above), so one   *)
(* of them is honest.  The mutation BehindHighest is the C code before:    *)
(* d->highest > r+1, which one Byzantine vertex can raise.                 *)
BehindFPlus1(r) == Cardinality({a \in Node : \E v \in ins : v[1] = a /\ v[2] > r + 1}) >= F + 1
BehindHighest(r) == \E v \in ins : v[2] > r + 1
Behind(r) == BehindFPlus1(r)

AnchorOK(p, H) ==
    IF ~AnchorWait THEN TRUE
    ELSE IF IsAnchorRound(p) THEN Leader(p) \in H
    ELSE LET q == p - 1
             v == Cardinality({b \in H : Leader(q) \in refs[b][p]})
         IN \/ Anchor(q) \notin ins
            \/ v >= CommitQuorum
            \/ Cardinality(H) - v > N - CommitQuorum

(* advance_wait(d, next[i]) = 0 (dag.c). *)
CanAdvance(i) ==
    LET r == next[i]
        H == Held(r - 1)
    IN /\ r <= MaxRound
       /\ Cardinality(H) >= Quorum
       /\ i \in H
       /\ \/ Behind(r)
          \/ AnchorOK(r - 1, H)
          \/ now - entered[i] >= Timeout

Choices(i) == {<<R, d>> : R \in SampleChoices(i, next[i]), d \in Delays(i, now)}

(* The joint choices of the nodes in S: one element of CH[i] each. *)
RECURSIVE JC(_, _)
JC(S, CH) == IF S = {} THEN {<<>>}
             ELSE LET i == CHOOSE x \in S : TRUE
                  IN {(i :> c) @@ g : c \in CH[i], g \in JC(S \ {i}, CH)}

(* ref_bounds in dag_vertex_decode (vertex.c), sparse mode, dense anchors. *)
ValidRefs(b, r, R) ==
    IF r = 0 THEN R = {}
    ELSE IF IsAnchorRound(r) /\ Leader(r) = b THEN Cardinality(R) >= Quorum
    ELSE Min(D, Quorum) <= Cardinality(R) /\ Cardinality(R) <= Min(D + 2, N)

(* Byzantine weak references: none, or (ByzWeakAdopt) one orphan of a     *)
(* slow node, which then no longer counts as an orphan at the honest nodes *)
(* (its "referenced" flag is set when the Byzantine vertex is inserted).   *)
ByzWeakNone(r) == {{}}
ByzWeakAdopt(r) ==
    {{}} \cup {{v} : v \in {v \in ins : v[1] \in Slow /\ v[2] <= r - 2
                                      /\ v \notin AllPar(ins, refs, weak) /\ v \notin ord}}
ByzWeakChoices(r) == ByzWeakNone(r)

ByzPool(b, r) == IF r = 0 THEN {} ELSE Held(r - 1) \cup (Exists(r - 1) \cap {b})
ByzRefsAny(b, r) == {R \in SUBSET ByzPool(b, r) : ValidRefs(b, r, R)}
(* One valid set of fewest references that votes for the round r-1 anchor *)
(* and one that does not (each when there is one); one set otherwise.     *)
ByzRefsCanon(b, r) ==
    LET pool == ByzPool(b, r)
        lo == Min(D, Quorum)
        L == Leader(r - 1)
    IN IF r = 0 THEN {{}}
       ELSE IF IsAnchorRound(r) /\ Leader(r) = b
         THEN IF Cardinality(pool) >= Quorum THEN {Lowest(pool, Quorum)} ELSE {}
       ELSE IF ~IsAnchorRound(r - 1)
         THEN IF Cardinality(pool) >= lo THEN {Lowest(pool, lo)} ELSE {}
       ELSE (IF L \in pool /\ Cardinality(pool) >= lo
               THEN {{L} \cup Lowest(pool \ {L}, lo - 1)} ELSE {})
            \cup
            (IF Cardinality(pool \ {L}) >= lo THEN {Lowest(pool \ {L}, lo)} ELSE {})
ByzRefChoices(b, r) == ByzRefsAny(b, r)

ByzReady(b) == bnext[b] <= MaxRound /\ ByzRefChoices(b, bnext[b]) # {}

(* Byzantine author b decides its vertices in round order.  Once it can    *)
(* make its round bnext[b] vertex it makes it at once ("eager", arriving   *)
(* next tick), stays silent in that round for good, or, if no honest node  *)
(* has made that round yet, waits to make it "in step", in the tick where  *)
(* the first honest node makes its vertex of that round (see Tick).        *)
ByzMake(b) ==
    /\ now < MaxTick
    /\ \E i \in Honest : next[i] <= MaxRound
    /\ ByzReady(b) /\ ~bwait[b]
    /\ LET r == bnext[b] IN
       \E R \in ByzRefChoices(b, r), W \in ByzWeakChoices(r) :
        /\ made' = [made EXCEPT ![b] = @ \cup {r}]
        /\ refs' = [refs EXCEPT ![b][r] = R]
        /\ weak' = [weak EXCEPT ![b][r] = W]
        /\ arr' = [arr EXCEPT ![b][r] = now + 1]
        /\ bnext' = [bnext EXCEPT ![b] = r + 1]
    /\ UNCHANGED <<now, next, entered, bwait, ins, cmt, ord, seen>>

ByzSkip(b) ==
    /\ now < MaxTick
    /\ \E i \in Honest : next[i] <= MaxRound
    /\ ByzReady(b) /\ ~bwait[b]
    /\ bnext' = [bnext EXCEPT ![b] = @ + 1]
    /\ UNCHANGED <<now, made, refs, weak, arr, next, entered, bwait, ins, cmt, ord, seen>>

ByzWait(b) ==
    /\ now < MaxTick
    /\ \E i \in Honest : next[i] <= MaxRound
    /\ ByzReady(b) /\ ~bwait[b]
    /\ \A i \in Honest : next[i] <= bnext[b]
    /\ bwait' = [bwait EXCEPT ![b] = TRUE]
    /\ UNCHANGED <<now, made, refs, weak, arr, next, entered, bnext, ins, cmt, ord, seen>>

(* The Byzantine options in step: silent, or a vertex (R, W). *)
Skip == <<"skip">>
ByzStepChoices(b) ==
    {Skip} \cup {<<R, W>> : R \in ByzRefChoices(b, bnext[b]), W \in ByzWeakChoices(bnext[b])}

(* Tick 0: every honest node has made its genesis vertex (round 0, no     *)
(* references), arriving as ArrChoices says; the Byzantine node decides    *)
(* its own like any other round.                                           *)
Init ==
    /\ now = 0
    /\ made = [a \in Node |-> IF a \in Honest THEN {0} ELSE {}]
    /\ refs = [a \in Node |-> [r \in Round |-> {}]]
    /\ weak = [a \in Node |-> [r \in Round |-> {}]]
    /\ \E t \in [Honest -> UNION {ArrChoices(a, 0) : a \in Honest}] :
          /\ \A a \in Honest : t[a] \in ArrChoices(a, 0)
          /\ arr = [a \in Node |-> [r \in Round |-> IF r = 0 /\ a \in Honest THEN t[a] ELSE -1]]
    /\ next = [i \in Honest |-> 1]
    /\ entered = [i \in Honest |-> 0]
    /\ bnext = [b \in Byz |-> 0]
    /\ bwait = [b \in Byz |-> FALSE]
    /\ ins = {}
    /\ cmt = {}
    /\ ord = {}
    /\ seen = [a \in Node |-> [r \in Round |-> -1]]

(* One tick: the honest nodes that may advance (A) make their vertices,     *)
(* each with its sample and arrival tick (c) and weak_refs (W); a          *)
(* Byzantine node waiting to move in step makes (or skips) the same round  *)
(* when the first honest node makes it; then the clock moves on, and the   *)
(* vertices due are inserted, committed and ordered.  Tick waits for the   *)
(* Byzantine decisions that are due (ByzReady and not waiting).            *)
Tick ==
    /\ now < MaxTick
    /\ \E i \in Honest : next[i] <= MaxRound
    /\ \A b \in Byz : ~ByzReady(b) \/ bwait[b]
    /\ \E A \in {{i \in Honest : CanAdvance(i)}} :
       \E W \in {[i \in A |-> WeakRefs(next[i])]} :
       \E CH \in {[i \in A |-> Choices(i)]} :
       \E c \in JC(A, CH) :
       \E BI \in {{b \in Byz : bwait[b] /\ \E i \in A : next[i] = bnext[b]}} :
       \E bc \in [BI -> UNION {ByzStepChoices(b) : b \in BI}] :
          LET BM == {b \in BI : bc[b] # Skip}
              Mk(a) == a \in A \/ a \in BM
              Rd(a) == IF a \in A THEN next[a] ELSE bnext[a]
          IN
          /\ \A b \in BI : bc[b] \in ByzStepChoices(b)
          /\ made' = [a \in Node |-> IF Mk(a) THEN made[a] \cup {Rd(a)} ELSE made[a]]
          /\ refs' = [a \in Node |-> IF a \in A THEN [refs[a] EXCEPT ![next[a]] = c[a][1]]
                                    ELSE IF a \in BM THEN [refs[a] EXCEPT ![bnext[a]] = bc[a][1]]
                                    ELSE refs[a]]
          /\ weak' = [a \in Node |-> IF a \in A THEN [weak[a] EXCEPT ![next[a]] = W[a]]
                                    ELSE IF a \in BM THEN [weak[a] EXCEPT ![bnext[a]] = bc[a][2]]
                                    ELSE weak[a]]
          /\ arr' = [a \in Node |-> IF a \in A THEN [arr[a] EXCEPT ![next[a]] = now + c[a][2]]
                                   ELSE IF a \in BM THEN [arr[a] EXCEPT ![bnext[a]] = now + 1]
                                   ELSE arr[a]]
          /\ next' = [i \in Honest |-> IF i \in A THEN next[i] + 1 ELSE next[i]]
          /\ entered' = [i \in Honest |-> IF i \in A THEN now ELSE entered[i]]
          /\ bnext' = [b \in Byz |-> IF b \in BI THEN bnext[b] + 1 ELSE bnext[b]]
          /\ bwait' = [b \in Byz |-> IF b \in BI THEN FALSE ELSE bwait[b]]
    /\ now' = now + 1
    /\ ins' = InsUpTo(MaxRound, now + 1, made', refs', weak', arr')
    /\ cmt' = CommittedIn(ins', refs')
    /\ ord' = IF cmt' = cmt THEN ord ELSE OrderedIn(cmt', refs', weak')
    /\ LET top == Max({next'[i] - 1 : i \in Fast}) IN
       seen' = [a \in Node |-> [r \in Round |->
                   IF <<a, r>> \in ins' /\ <<a, r>> \notin ins THEN top ELSE seen[a][r]]]

Next == Tick \/ \E b \in Byz : ByzMake(b) \/ ByzSkip(b) \/ ByzWait(b)
Spec == Init /\ [][Next]_vars

(* What TLC fingerprints: the state less what is a function of the rest    *)
(* (ins, cmt, ord), with the arrival tick of a vertex already inserted and *)
(* the time a node has waited beyond Timeout forgotten (the future reads   *)
(* only "arrived by now" and "waited >= Timeout").                         *)
View ==
    <<now, made, refs, weak,
      [a \in Node |-> [r \in Round |-> IF arr[a][r] <= now THEN -1 ELSE arr[a][r]]],
      next, [i \in Honest |-> Min(now - entered[i], Timeout)], bnext, bwait, seen>>

(* The anchors AnchorCommit asks for: rounds >= LiveFrom, leader honest    *)
(* and not slow before GST (such a leader may still be further behind than *)
(* one timeout covers).                                                    *)
DueAnchors == {r \in AnchorRound : r >= LiveFrom /\ Leader(r) \in Fast}

(* Once honest i (not slow) has made round r + K1, the anchor of r is       *)
(* committed, directly: 2f+1 inserted votes.                               *)
AnchorCommit ==
    \A r \in DueAnchors : \A i \in Fast : next[i] > r + K1 => r \in cmt /\ DC(r, ins, refs)

(* Every honest vertex inserted when the honest nodes had made round s is   *)
(* ordered once honest i (not slow) has made round s + K2.                 *)
AllOrdered ==
    \A a \in Honest, s \in Round :
        <<a, s>> \in ins =>
            \A i \in Fast : next[i] - 1 >= seen[a][s] + K2 => <<a, s>> \in ord
=============================================================================
