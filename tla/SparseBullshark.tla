--------------------------- MODULE SparseBullshark ---------------------------
(***************************************************************************)
(* weft's DAG consensus (protocols/dag: dag.c, graph.c, vertex.c;          *)
(* docs/protocols/sparse-dag.md): a Bullshark-style round DAG with sparse  *)
(* references and "dense anchors", and its commit rule.                    *)
(*                                                                         *)
(*   n = 3f+1 nodes; rounds 0, 1, 2, ...; each node makes one vertex per   *)
(*   round, disseminated by reliable broadcast.  A vertex of round r > 0   *)
(*   references vertices of round r-1 only.                                *)
(*   anchors: even rounds, leader(r) = (r / 2) mod n (dag_leader).         *)
(*   honest vertex of round r (dag_try_advance, make_vertex, sample_refs), *)
(*   made once it holds 2f+1 vertices of round r-1, its own included:      *)
(*     sparse, non-anchor: D of the round r-1 vertices it holds (all if    *)
(*       it holds at most D), plus its own round r-1 vertex, plus the      *)
(*       round r-1 anchor if it holds it: at most D+2;                     *)
(*     anchor ("dense anchors"), and every vertex in dense mode: every     *)
(*       round r-1 vertex it holds (at least 2f+1).                        *)
(*   validation (ref_bounds in dag_vertex_decode): 2f+1 .. n references    *)
(*     for an anchor (DenseAnchors) and for every vertex in dense mode;    *)
(*     min(D, 2f+1) .. D+2 for the other vertices of sparse mode.          *)
(*   commit (insert, try_commit): the anchor A of round r is committed     *)
(*     directly by a node whose local DAG has Q vertices of round r+1      *)
(*     referencing A (Q = 2f+1 sparse, f+1 dense); then for rr = r-2, r-4, *)
(*     ... down to the last committed anchor round + 2, anchor(rr) is      *)
(*     committed too when the local DAG has it and a path from the current *)
(*     anchor to it (path), and it becomes current.  Committed anchors are *)
(*     output oldest first; each one's causal history not yet ordered is   *)
(*     appended to the log sorted by (round, author) (order_anchor,        *)
(*     history, by_round_author).                                          *)
(*                                                                         *)
(* THE ABSTRACTION (the argument in full is in tla/README.md).             *)
(*                                                                         *)
(* 1. One global DAG.  Reliable broadcast gives each (author, round) slot  *)
(*    at most one vertex, the same at every node, so a vertex is its slot: *)
(*    made[a] is the set of rounds where a has a vertex and refs[a][r] the *)
(*    round r-1 authors that (a, r) references.                            *)
(*                                                                         *)
(* 2. No per-node local DAG.  A local DAG is a downward-closed subset of   *)
(*    the made vertices.  Whether there is a path between two vertices     *)
(*    does not depend on who looks (with both ends in the local DAG, the   *)
(*    whole path is), and the votes a node sees for an anchor are some of  *)
(*    those that exist.  So a node can commit anchor r directly exactly    *)
(*    when Q votes for it exist (it may have waited for them all), and     *)
(*    what the walk back adds depends only on the DAG, not on the time.    *)
(*    Commit(i, r) therefore lets honest i commit, at any time, any anchor *)
(*    round above its last one that has Q votes: every order in which a    *)
(*    node may receive vertices and check anchors is covered.  Likewise    *)
(*    the set H of round r-1 vertices an honest node holds when it moves   *)
(*    on is any set of 2f+1 or more existing ones, its own among them.     *)
(*                                                                         *)
(* 3. Canonical order.  References go one round down only, so the order    *)
(*    in which vertices are made matters only through "a reference must    *)
(*    exist": the DAG is built round by round (round r+1 opens when every  *)
(*    honest node has its round r vertex; a Byzantine vertex of round r is *)
(*    made before that or never).  Every DAG of an asynchronous run is     *)
(*    built this way with the same references.  An honest vertex missing   *)
(*    from a run (a slow node, or the end of the run) is covered by the    *)
(*    run where it exists and nobody references it: honest nodes make      *)
(*    every round here, which only adds choices.                           *)
(*                                                                         *)
(* 4. reach[a][r] is the set of anchor rounds whose anchor (a, r) has a    *)
(*    path to (itself included), kept as a variable.  The models' VIEW     *)
(*    (View below) keeps what the future and the properties depend on, so  *)
(*    TLC merges DAGs that differ only in references that no longer        *)
(*    matter.                                                              *)
(*                                                                         *)
(* Byzantine authors make a vertex at any round, or none, referencing any  *)
(* existing round r-1 vertices, subject only to validation (one vertex per *)
(* slot: reliable broadcast).  An invalid vertex kills its slot in the C   *)
(* code, which is the same as no vertex.                                   *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, Sequences, TLC

CONSTANTS
    N,            \* number of nodes; nodes are 0 .. N-1
    F,            \* fault bound, N = 3F+1
    Byz,          \* the Byzantine authors, a subset of 0 .. N-1
    MaxRound,     \* rounds 0 .. MaxRound
    D,            \* sparse references per vertex (besides own + anchor)
    Dense,        \* TRUE: dense mode (every vertex >= 2f+1 references)
    DenseAnchors  \* TRUE: anchors must reference >= 2f+1 (validation)

Node == 0 .. N - 1
Honest == Node \ Byz
Round == 0 .. MaxRound

ASSUME /\ N \in Nat /\ F \in Nat /\ N >= 3 * F + 1
       /\ Byz \subseteq Node
       /\ MaxRound \in Nat /\ D \in Nat \ {0}
       /\ Dense \in BOOLEAN /\ DenseAnchors \in BOOLEAN

Quorum == 2 * F + 1
(* Commit votes needed: 2f+1 in sparse mode, f+1 in dense mode.  A teeth  *)
(* model overrides it in its .cfg.                                         *)
CommitQuorum == IF Dense THEN F + 1 ELSE 2 * F + 1
CommitQuorumTooLow == F + 1     \* sparse with f+1 commit votes: broken

IsAnchorRound(r) == r % 2 = 0
Leader(r) == (r \div 2) % N
AnchorRound == {r \in Round : IsAnchorRound(r)}

VARIABLES
    rnd,        \* the round being built (canonical order, see above)
    made,       \* made[a]: the rounds at which author a has a vertex
    refs,       \* refs[a][r]: the round r-1 authors that vertex (a, r) references
    reach,      \* reach[a][r]: the anchor rounds whose anchor (a, r) has a path to
    committed   \* committed[i]: the anchor rounds honest i committed, oldest first

vars == <<rnd, made, refs, reach, committed>>

TypeOK ==
    /\ rnd \in Round
    /\ made \in [Node -> SUBSET Round]
    /\ refs \in [Node -> [Round -> SUBSET Node]]
    /\ reach \in [Node -> [Round -> SUBSET AnchorRound]]
    /\ committed \in [Honest -> Seq(AnchorRound)]

(* Round 0: every honest node has its genesis vertex (no references); a   *)
(* Byzantine node makes its own, or not, like any other vertex.           *)
Init ==
    /\ rnd = 0
    /\ made = [a \in Node |-> IF a \in Honest THEN {0} ELSE {}]
    /\ refs = [a \in Node |-> [r \in Round |-> {}]]
    /\ reach = [a \in Node |-> [r \in Round |-> IF r = 0 /\ a = Leader(0) THEN {0} ELSE {}]]
    /\ committed = [i \in Honest |-> <<>>]

(* The authors with a vertex at round r. *)
Exists(r) == {a \in Node : r \in made[a]}

(* Vertices that must reference at least 2f+1 vertices of round r-1: the  *)
(* anchors (unless DenseAnchors is off: params.unsafe = "sparse_anchors")  *)
(* and, in dense mode, all of them.                                        *)
DenseRefs(a, r) == Dense \/ (DenseAnchors /\ IsAnchorRound(r) /\ a = Leader(r))

Min(x, y) == IF x <= y THEN x ELSE y

(* dag_vertex_decode's bounds (ref_bounds): none in round 0; 2f+1 .. n for *)
(* DenseRefs; min(D, 2f+1) .. min(D+2, n) for the other vertices of sparse *)
(* mode.  References are distinct authors (a set).                         *)
Valid(a, r, R) ==
    IF r = 0 THEN R = {}
    ELSE IF DenseRefs(a, r) THEN Cardinality(R) >= Quorum
    ELSE Min(D, Quorum) <= Cardinality(R) /\ Cardinality(R) <= Min(D + 2, N)

(* Whether an honest node holds its own round r-1 vertex when it makes    *)
(* its round r vertex.  dag_try_advance waits for it (the chain the       *)
(* safety argument needs), but only for 4 x timeout_ms; OwnMayBeLate lets *)
(* it move on without it (a model that shows why the wait matters).       *)
MustHoldOwn == TRUE
OwnMayBeLate == FALSE

(* sample_refs at honest i for round r, holding the round r-1 vertices H: *)
(* all of them for DenseRefs or when it holds at most D; otherwise D of   *)
(* them (any D: the C code draws them at random) plus its own and the     *)
(* round r-1 anchor, each when held.                                      *)
HonestRefsHeld(i, r, H) ==
    IF DenseRefs(i, r) \/ Cardinality(H) <= D
      THEN {H}
      ELSE LET extra == (H \cap {i}) \cup
                        (IF IsAnchorRound(r - 1) THEN H \cap {Leader(r - 1)} ELSE {})
           IN {S \cup extra : S \in {S \in SUBSET H : Cardinality(S) = D}}

(* ... over every set H it may hold when dag_try_advance lets it move on: *)
(* 2f+1 or more existing round r-1 vertices, its own among them.           *)
HonestRefs(i, r) ==
    UNION {HonestRefsHeld(i, r, H) :
             H \in {H \in SUBSET Exists(r - 1) :
                      (MustHoldOwn => i \in H) /\ Cardinality(H) >= Quorum}}

ByzRefs(a, r) == {R \in SUBSET Exists(r - 1) : Valid(a, r, R)}

(* Whether a may make its round r vertex now (canonical order): in the    *)
(* round being built, or opening the next one once every honest node has  *)
(* its vertex in this one.                                                 *)
MayMake(a, r) ==
    /\ r \in Round
    /\ r \notin made[a]
    /\ \/ r = rnd
       \/ r = rnd + 1 /\ \A h \in Honest : rnd \in made[h]
    /\ a \in Honest => r - 1 \in made[a]      \* never true for r = 0: made at Init

(* make_vertex (honest) or a Byzantine vertex: (a, r) with references R. *)
Choices(a, r) == IF a \in Honest THEN HonestRefs(a, r) ELSE ByzRefs(a, r)

Make(a, r, R) ==
    /\ MayMake(a, r)
    /\ R \in Choices(a, r)
    /\ Valid(a, r, R)
    /\ rnd' = r
    /\ made' = [made EXCEPT ![a] = @ \cup {r}]
    /\ refs' = [refs EXCEPT ![a][r] = R]
    /\ reach' = [reach EXCEPT ![a][r] =
                    (IF IsAnchorRound(r) /\ a = Leader(r) THEN {r} ELSE {})
                    \cup UNION {reach[b][r - 1] : b \in (IF r = 0 THEN {} ELSE R)}]
    /\ UNCHANGED committed

-----------------------------------------------------------------------------
(* Commit (insert counting votes, try_commit). *)

LastCommitted(i) ==
    IF committed[i] = <<>> THEN -2 ELSE committed[i][Len(committed[i])]

(* The vertices of round r+1 that reference the anchor of round r. *)
Votes(r) == {a \in Exists(r + 1) : r \in reach[a][r + 1]}

AnchorExists(r) == r \in made[Leader(r)]

(* A path from the anchor of round c to the anchor of round rr. *)
AnchorPath(c, rr) == rr \in reach[Leader(c)][c]

(* The walk back from the anchor of round c over rounds rr, rr-2, ..., s: *)
(* the anchors committed indirectly, oldest first.                         *)
RECURSIVE Walk(_, _, _)
Walk(c, rr, s) ==
    IF rr < s THEN <<>>
    ELSE IF AnchorExists(rr) /\ AnchorPath(c, rr)
           THEN Walk(rr, rr - 2, s) \o <<rr>>
           ELSE Walk(c, rr - 2, s)

DirectlyCommittable(r) ==
    /\ r \in AnchorRound /\ r + 1 \in Round
    /\ AnchorExists(r)
    /\ Cardinality(Votes(r)) >= CommitQuorum

Commit(i, r) ==
    /\ r > LastCommitted(i)
    /\ DirectlyCommittable(r)
    /\ committed' = [committed EXCEPT ![i] = @ \o Walk(r, r - 2, LastCommitted(i) + 2) \o <<r>>]
    /\ UNCHANGED <<rnd, made, refs, reach>>

Next ==
    \/ \E a \in Node, r \in Round : MayMake(a, r) /\ \E R \in Choices(a, r) : Make(a, r, R)
    \/ \E i \in Honest, r \in AnchorRound : Commit(i, r)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The ordered log (order_anchor), from the committed anchors: the        *)
(* causal history of a vertex is the same in every local DAG that holds   *)
(* it (one vertex per slot, local DAGs downward closed).                   *)

(* The causal history of the round r authors S (themselves included). *)
RECURSIVE HistFrom(_, _)
HistFrom(S, r) ==
    IF S = {} THEN {}
    ELSE {<<b, r>> : b \in S} \cup
         (IF r = 0 THEN {} ELSE HistFrom(UNION {refs[b][r] : b \in S}, r - 1))

(* (round, author) order. *)
Before(v, w) == v[2] < w[2] \/ (v[2] = w[2] /\ v[1] < w[1])

RECURSIVE Sorted(_)
Sorted(S) ==
    IF S = {} THEN <<>>
    ELSE LET m == CHOOSE v \in S : \A w \in S : v = w \/ Before(v, w)
         IN <<m>> \o Sorted(S \ {m})

RECURSIVE LogOf(_, _)
LogOf(seq, done) ==   \* done: the vertices ordered already
    IF seq = <<>> THEN <<>>
    ELSE LET new == HistFrom({Leader(Head(seq))}, Head(seq)) \ done
         IN Sorted(new) \o LogOf(Tail(seq), done \cup new)

Log(i) == LogOf(committed[i], {})

IsPrefix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, 1, Len(s)) = s

-----------------------------------------------------------------------------
(* Properties. *)

AnchorsConsistent ==
    \A i, j \in Honest :
        IsPrefix(committed[i], committed[j]) \/ IsPrefix(committed[j], committed[i])

LogsConsistent ==
    LET L == {Log(i) : i \in Honest} IN
    \A s, t \in L : IsPrefix(s, t) \/ IsPrefix(t, s)

(* reach is what its name says (checked against refs). *)
RECURSIVE Reaches(_, _, _, _)
Reaches(S, r, b, rr) ==   \* some round r author in S has a path to (b, rr)
    IF r = rr THEN b \in S
    ELSE IF S = {} THEN FALSE
    ELSE Reaches(UNION {refs[x][r] : x \in S}, r - 1, b, rr)
ReachSound ==
    \A a \in Node, r \in Round : r \in made[a] =>
        reach[a][r] = {rr \in AnchorRound : rr <= r /\ AnchorExists(rr)
                                         /\ Reaches({a}, r, Leader(rr), rr)}

(* The lemma behind the commit rule (tla/README.md): once Q votes for the *)
(* anchor of round r exist (so an honest node may commit it directly),    *)
(* every anchor vertex at a round >= r+2 has a path to it.                *)
AnchorPaths ==
    \A r \in AnchorRound : DirectlyCommittable(r) =>
        \A r2 \in AnchorRound : (r2 >= r + 2 /\ AnchorExists(r2)) => AnchorPath(r2, r)

(* What TLC fingerprints (VIEW in the .cfg): the round being built, the    *)
(* vertices of that round and the one below (the only ones new vertices    *)
(* can reference) with their reach, the existing anchors with their reach  *)
(* and vote counts (all that commits look at), and the SET of committed    *)
(* sequences (Commit(i, r) depends on i only through committed[i], so      *)
(* which honest node holds which sequence does not matter).  Two states    *)
(* with the same View have the same futures as far as these go, so merging *)
(* them loses no behaviour of the committed sequences, and                 *)
(* AnchorsConsistent and AnchorPaths are functions of the View.            *)
(* LogsConsistent, ReachSound and TypeOK are checked on the states TLC     *)
(* keeps; LogsConsistent follows from AnchorsConsistent anyway (LogOf is a *)
(* function of the anchor sequence and the DAG, and the log of a prefix is *)
(* a prefix of the log).                                                   *)
View ==
    <<rnd,
      [r \in {rr \in Round : rr = rnd \/ rr + 1 = rnd} |-> [a \in Exists(r) |-> reach[a][r]]],
      [r \in {rr \in AnchorRound : AnchorExists(rr)} |->
          <<reach[Leader(r)][r], IF r + 1 \in Round THEN Cardinality(Votes(r)) ELSE 0>>],
      {committed[i] : i \in Honest}>>
=============================================================================
