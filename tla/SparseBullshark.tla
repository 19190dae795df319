--------------------------- MODULE SparseBullshark ---------------------------
(***************************************************************************)
(* weft's DAG consensus (protocols/dag: dag.c, graph.c, vertex.c;          *)
(* docs/protocols/sparse-dag.md): a Bullshark-style round DAG with sparse  *)
(* references, "dense anchors" and weak links, and its commit rule.        *)
(*                                                                         *)
(*   n >= 3f+1 nodes (the host takes f = (n-1) div 3); the round quorum   *)
(*   is n - f (d->quorum, dag_init), 2f+1 when n = 3f+1.  Rounds 0, 1, 2,  *)
(*   ...; each node makes one vertex per round, disseminated by reliable   *)
(*   broadcast.  A vertex of round r > 0 references vertices of round r-1  *)
(*   (strong references) and, with weak links (weak_max > 0), up to        *)
(*   weak_max older vertices, of rounds <= r-2 (weak references).          *)
(*   anchors: even rounds, leader(r) = (r / 2) mod n (dag_leader).         *)
(*   honest vertex of round r (dag_try_advance, make_vertex, sample_refs), *)
(*   made once it holds n-f vertices of round r-1, its own included:       *)
(*     sparse, non-anchor: D of the round r-1 vertices it holds (all if    *)
(*       it holds at most D), plus its own round r-1 vertex, plus the      *)
(*       round r-1 anchor if it holds it: at most D+2;                     *)
(*     anchor ("dense anchors"), and every vertex in dense mode: every     *)
(*       round r-1 vertex it holds (at least n-f);                         *)
(*     weak references (weak_refs): the vertices of rounds <= r-2 it       *)
(*       holds that no vertex it holds references and that no anchor       *)
(*       ordered yet ("orphans"), oldest first, up to weak_max.            *)
(*   validation (ref_bounds in dag_vertex_decode): n-f .. n references     *)
(*     for an anchor (DenseAnchors) and for every vertex in dense mode;    *)
(*     min(D, n-f) .. D+2 for the other vertices of sparse mode; at most   *)
(*     weak_max distinct weak references, to rounds <= r-2.                *)
(*   insertion (dag_accept, insert): a vertex is inserted once all its     *)
(*     parents, strong AND weak, are (params.unsafe = "weak_nowait": its   *)
(*     strong parents only).                                               *)
(*   commit (insert, try_commit): the anchor A of round r is committed     *)
(*     directly by a node whose local DAG has Q vertices of round r+1      *)
(*     referencing A strongly (Q = 2f+1 sparse, f+1 dense, whatever n     *)
(*     is); then for rr = r-2, r-4, ... down to the last committed anchor  *)
(*     round + 2, anchor(rr) is committed too when the local DAG has it    *)
(*     and a strong path from the current anchor to it (path), and it      *)
(*     becomes current.                                                    *)
(*     Weak references play no part in commits.  Committed anchors are     *)
(*     output oldest first; each one's causal history along strong and     *)
(*     weak references, not yet ordered, is appended to the log sorted by  *)
(*     (round, author) (order_anchor, history, by_round_author).           *)
(*                                                                         *)
(* THE ABSTRACTION (the argument in full is in tla/README.md).             *)
(*                                                                         *)
(* 1. One global DAG.  Reliable broadcast gives each (author, round) slot  *)
(*    at most one vertex, the same at every node, so a vertex is its slot: *)
(*    made[a] is the set of rounds where a has a vertex, refs[a][r] the    *)
(*    round r-1 authors that (a, r) references strongly and weak[a][r] the *)
(*    <<author, round>> vertices it references weakly.                     *)
(*                                                                         *)
(* 2. No per-node local DAG.  A local DAG is a downward-closed subset of   *)
(*    the made vertices (a vertex waits for all its parents, strong and    *)
(*    weak).  Whether there is a path between two vertices does not depend *)
(*    on who looks (with both ends in the local DAG, the whole path is),   *)
(*    and the votes a node sees for an anchor are some of those that       *)
(*    exist.  So a node can commit anchor r directly exactly when Q votes  *)
(*    for it exist (it may have waited for them all), and what the walk    *)
(*    back adds depends only on the DAG, not on the time.  Commit(i, r)    *)
(*    therefore lets honest i commit, at any time, any anchor round above  *)
(*    its last one that has Q votes: every order in which a node may       *)
(*    receive vertices and check anchors is covered.  Likewise the set H   *)
(*    of round r-1 vertices an honest node holds when it moves on is any   *)
(*    set of n-f or more existing ones, its own among them.  And the       *)
(*    causal history of an anchor is the same in every local DAG that      *)
(*    holds the anchor, so the log is a function of the committed anchor   *)
(*    sequence and the global DAG (Log below).                             *)
(*                                                                         *)
(* 3. Canonical order.  References, strong and weak, go to lower rounds    *)
(*    only, so the order in which vertices are made matters only through   *)
(*    "a reference must exist": the DAG is built round by round (round r+1 *)
(*    opens when every honest node has its round r vertex; a Byzantine     *)
(*    vertex of round r is made before that or never).  Every DAG of an    *)
(*    asynchronous run is built this way with the same references; a       *)
(*    vertex that reached the others late (the reason for weak links) is   *)
(*    made in its round here and nobody references it strongly.  An honest *)
(*    vertex missing from a run (a slow node, or the end of the run) is    *)
(*    covered by the run where it exists and nobody references it: honest  *)
(*    nodes make every round here, which only adds choices.                *)
(*                                                                         *)
(* 4. reach[a][r] is the set of anchor rounds whose anchor (a, r) has a    *)
(*    STRONG path to (itself included), kept as a variable.  The models'   *)
(*    VIEW (View, WeakView below) keeps what the future and the properties *)
(*    depend on, so TLC merges DAGs that differ only in references that no *)
(*    longer matter.                                                       *)
(*                                                                         *)
(* WEAK LINKS.  weak_refs picks an honest node's weak references among the *)
(* vertices it holds; here an honest node may weak-reference ANY set of at *)
(* most WeakMax existing vertices of rounds <= r-2 (it may have received   *)
(* any of them): a superset of the orphan rule, so what holds here holds   *)
(* for the rule.  Byzantine authors do the same.  Weak references never    *)
(* enter reach (votes and paths are strong), so the commit rule and its    *)
(* lemma (AnchorPaths) are untouched: they change the logs only, and by    *)
(* point 2 in the same way at every node.  Point 2 needs the wait for weak *)
(* parents, though, and one global DAG cannot show what goes wrong         *)
(* without it; hence point 5.                                              *)
(*                                                                         *)
(* 5. What a committing node lacks.  Without the wait (weak_nowait) a      *)
(*    local DAG is closed along strong references only, and history()      *)
(*    skips parents that are not inserted, so a node that inserted a       *)
(*    vertex before its weak parent orders an anchor's history without     *)
(*    that parent.  Commit(i, r) therefore chooses a set M of vertices of  *)
(*    the anchor's history that i lacks at that moment (and with them      *)
(*    StrongUp(M), the vertices whose strong history meets M), and i       *)
(*    orders what stays reachable; logs[i] is i's own log, appended at     *)
(*    each commit.  M must lie outside the closure of what i surely        *)
(*    holds: the anchor, its ordered vertices, its own vertices and their  *)
(*    weak parents, and (checked) Q votes for the anchor; and i's past     *)
(*    must fit: for each of its own vertices some set H of n-f round r-1   *)
(*    vertices it held then (from which sample_refs drew its references),  *)
(*    and for each anchor it committed directly Q votes, all outside       *)
(*    StrongUp(M).  With the wait the closure of the anchor is its whole   *)
(*    history, so M is empty and logs[i] = Log(i), the global function     *)
(*    (LogIsGlobal, checked).  Without it (WeakWait <- WeakNoWait) TLC     *)
(*    finds a fork of the logs; the run it reports is a real one           *)
(*    (tla/README.md).                                                     *)
(*                                                                         *)
(* Byzantine authors make a vertex at any round, or none, referencing any  *)
(* existing round r-1 vertices and, weakly, any existing older ones,       *)
(* subject only to validation (one vertex per slot: reliable broadcast).   *)
(* An invalid vertex, or one referencing a slot that never fills, kills or *)
(* blocks its slot in the C code, which is the same as no vertex.          *)
(*                                                                         *)
(* THE BYZANTINE SET (byz) is chosen in Init from ByzChoices and then      *)
(* fixed: AnyF (every set of F nodes) leaves the positions to TLC, a       *)
(* singleton fixes one.  Positions matter (leaders rotate), so every      *)
(* safety model covers every position, in one model or split over several *)
(* (tla/README.md).                                                        *)
(*                                                                         *)
(* REDUCTIONS (switches the .cfg files set; each is justified next to its  *)
(* definition and loses no violation of the properties checked): honest    *)
(* vertices of a round in author order (HonestByAuthor), or all vertices   *)
(* of rounds > 0 in author order when commits wait for the end of the DAG  *)
(* (AuthorOrder with CommitTime <- AtEnd); commits by the two lowest       *)
(* honest nodes only (TwoHonest); weak references only on vertices that    *)
(* can be ordered (WeakCarrierOrderable); and TLC's VIEW (point 4).        *)
(*                                                                         *)
(* PROPERTIES (definitions at the end): AnchorsConsistent and              *)
(* LogsConsistent (the committed anchors and the ordered logs of any two   *)
(* honest nodes are prefixes of one another), NoDoubleOrder (no vertex     *)
(* twice in an honest log), LogIsGlobal (with weak links: each node's log  *)
(* is the global function Log), AnchorPaths (the lemma of the commit       *)
(* rule), ReachSound and TypeOK (checks of the spec itself).               *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, Sequences, TLC

CONSTANTS
    N,            \* number of nodes; nodes are 0 .. N-1
    F,            \* fault bound, N >= 3F+1 (the host takes f = (n-1) div 3)
    ByzChoices,   \* the sets of Byzantine authors a run may start with
    MaxRound,     \* rounds 0 .. MaxRound
    D,            \* sparse references per vertex (besides own + anchor)
    Dense,        \* TRUE: dense mode (every vertex >= n-f references)
    DenseAnchors  \* TRUE: anchors must reference >= n-f (validation)

Node == 0 .. N - 1
Round == 0 .. MaxRound
Vertex == Node \X Round    \* a vertex is its slot <<author, round>>

ASSUME /\ N \in Nat /\ F \in Nat /\ N >= 3 * F + 1
       /\ ByzChoices # {} /\ \A B \in ByzChoices : B \subseteq Node /\ Cardinality(B) <= F
       /\ MaxRound \in Nat /\ D \in Nat \ {0}
       /\ Dense \in BOOLEAN /\ DenseAnchors \in BOOLEAN

(* The round quorum d->quorum = n - f (dag_init): the round r-1 vertices  *)
(* a node holds before it moves on (advance_wait), and the fewest          *)
(* references validation allows a dense vertex (ref_bounds).  It is 2f+1   *)
(* when n = 3f+1; any two sets of n - f nodes share at least f+1.  A      *)
(* teeth model with n = 5 replaces it by a hard-coded 2f+1                 *)
(* (QuorumHardCoded), the bug that, per docs/protocols/sparse-dag.md,      *)
(* forked weft-sim with n = 5.                                             *)
Quorum == N - F
QuorumHardCoded == 2 * F + 1
(* The least number of references ref_bounds accepts for a DenseRefs       *)
(* vertex (an anchor; every vertex in dense mode): the round quorum. A     *)
(* teeth model lowers it to f+1 (DenseRefsMin <- DenseRefsMinTooLow), the  *)
(* bug of a ref_bounds that sets *lo = f + 1 for them: honest anchors      *)
(* still reference all they hold, but a Byzantine anchor may reference     *)
(* only f+1.                                                               *)
DenseRefsMin == Quorum
DenseRefsMinTooLow == F + 1
(* Commit votes needed (d->commit_quorum): 2f+1 in sparse mode, f+1 in     *)
(* dense mode, whatever n is.  A teeth model overrides it in its .cfg.     *)
CommitQuorum == IF Dense THEN F + 1 ELSE 2 * F + 1
CommitQuorumTooLow == F + 1     \* sparse with f+1 commit votes: broken

(* Weak links, overridden in the .cfg of the models that have them (the    *)
(* older models keep weak_max = 0, which leaves them as they were):        *)
(*   WeakMax   weak_max, the weak references a vertex may carry;           *)
(*   WeakWait  a vertex waits for its weak parents before it is inserted   *)
(*             (WeakNoWait: params.unsafe = "weak_nowait", broken).        *)
WeakMax == 0
WeakMaxOne == 1
WeakWait == TRUE
WeakNoWait == FALSE

ASSUME WeakMax \in Nat /\ WeakWait \in BOOLEAN

IsAnchorRound(r) == r % 2 = 0
Leader(r) == (r \div 2) % N
AnchorRound == {r \in Round : IsAnchorRound(r)}

VARIABLES
    byz,        \* the Byzantine authors, chosen in Init from ByzChoices, then fixed
    rnd,        \* the round being built (canonical order, see above)
    made,       \* made[a]: the rounds at which author a has a vertex
    refs,       \* refs[a][r]: the round r-1 authors that vertex (a, r) references
    weak,       \* weak[a][r]: the vertices <<b, q>>, q <= r-2, that (a, r) references weakly
    reach,      \* reach[a][r]: the anchor rounds whose anchor (a, r) has a strong path to
    committed,  \* committed[i]: the anchor rounds honest i committed, oldest first
    logs        \* logs[i]: the vertices honest i ordered, in order (weak links only)

vars == <<byz, rnd, made, refs, weak, reach, committed, logs>>

(* The honest nodes of this run.  Only they commit; committed[b] and      *)
(* logs[b] of a Byzantine b stay empty and no property reads them.        *)
Honest == Node \ byz

(* Any F nodes: the ByzChoices of the models that leave the Byzantine     *)
(* positions to TLC.  Exactly F is enough: the properties speak of one    *)
(* or two honest nodes, and a run with fewer Byzantine nodes is a run of   *)
(* F of them where the extra ones, chosen outside the one or two nodes a   *)
(* property names (N >= F+2), behave honestly (a Byzantine author may      *)
(* make every vertex an honest one may, at the same points).               *)
AnyF == {B \in SUBSET Node : Cardinality(B) = F}

TypeOK ==
    /\ byz \in ByzChoices
    /\ rnd \in Round
    /\ made \in [Node -> SUBSET Round]
    /\ refs \in [Node -> [Round -> SUBSET Node]]
    /\ weak \in [Node -> [Round -> SUBSET Vertex]]
    /\ \A a \in Node, r \in Round :
          /\ Cardinality(weak[a][r]) <= WeakMax
          /\ \A w \in weak[a][r] : w[2] <= r - 2 /\ w[2] \in made[w[1]]
    /\ reach \in [Node -> [Round -> SUBSET AnchorRound]]
    /\ committed \in [Node -> Seq(AnchorRound)]
    /\ logs \in [Node -> Seq(Vertex)]

(* The Byzantine set is any one of ByzChoices (all F-sets, AnyF, or one    *)
(* position per model).  Round 0: every honest node has its genesis vertex *)
(* (no references); a Byzantine node makes its own, or not, like any      *)
(* other vertex.                                                           *)
Init ==
    /\ byz \in ByzChoices
    /\ rnd = 0
    /\ made = [a \in Node |-> IF a \in Honest THEN {0} ELSE {}]
    /\ refs = [a \in Node |-> [r \in Round |-> {}]]
    /\ weak = [a \in Node |-> [r \in Round |-> {}]]
    /\ reach = [a \in Node |-> [r \in Round |->
                   IF r = 0 /\ a = Leader(0) /\ a \in Honest THEN {0} ELSE {}]]
    /\ committed = [i \in Node |-> <<>>]
    /\ logs = [i \in Node |-> <<>>]

(* The authors with a vertex at round r. *)
Exists(r) == {a \in Node : r \in made[a]}

(* Every vertex made so far. *)
AllMade == {v \in Vertex : v[2] \in made[v[1]]}

(* Vertices that must reference at least n-f vertices of round r-1: the   *)
(* anchors (unless DenseAnchors is off: params.unsafe = "sparse_anchors")  *)
(* and, in dense mode, all of them.                                        *)
DenseRefs(a, r) == Dense \/ (DenseAnchors /\ IsAnchorRound(r) /\ a = Leader(r))

Min(x, y) == IF x <= y THEN x ELSE y

(* dag_vertex_decode's bounds (ref_bounds): none in round 0; n-f .. n for  *)
(* DenseRefs; min(D, n-f) .. min(D+2, n) for the other vertices of sparse  *)
(* mode.  References are distinct authors (a set).                         *)
Valid(a, r, R) ==
    IF r = 0 THEN R = {}
    ELSE IF DenseRefs(a, r) THEN Cardinality(R) >= DenseRefsMin
    ELSE Min(D, Quorum) <= Cardinality(R) /\ Cardinality(R) <= Min(D + 2, N)

(* ... and for weak references: at most weak_max, distinct (a set), each   *)
(* to a round <= r-2.                                                      *)
ValidWeak(r, W) == Cardinality(W) <= WeakMax /\ \A w \in W : w[2] <= r - 2

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

(* The sets H of round r-1 vertices honest i may hold when dag_try_advance *)
(* lets it move on: n-f or more existing ones, its own among them.         *)
HeldChoices(i, r) ==
    {H \in SUBSET Exists(r - 1) : (MustHoldOwn => i \in H) /\ Cardinality(H) >= Quorum}

HonestRefs(i, r) == UNION {HonestRefsHeld(i, r, H) : H \in HeldChoices(i, r)}

ByzRefs(a, r) == {R \in SUBSET Exists(r - 1) : Valid(a, r, R)}

(* The last anchor round that can be committed (its votes are in round     *)
(* r+1 <= MaxRound), and the vertices that can be in a committed anchor's  *)
(* history: those of the rounds below it, and that anchor.                 *)
LastAnchor == CHOOSE r \in AnchorRound : r + 1 \in Round /\ r + 3 \notin Round
Orderable == {v \in Vertex : v[2] < LastAnchor \/ v = <<Leader(LastAnchor), LastAnchor>>}

(* Which vertices carry weak references: all (the protocol), or, as a      *)
(* reduction in the weak-link models (WeakCarrier <-                       *)
(* WeakCarrierOrderable), only those that can be in a committed anchor's   *)
(* history.  With the wait for weak parents nothing else reads the weak    *)
(* references of the others (they change no reach, and no committed        *)
(* history holds those vertices), so the reduction loses no behaviour of   *)
(* the anchors and logs.                                                   *)
WeakCarrier(a, r) == TRUE
WeakCarrierOrderable(a, r) == <<a, r>> \in Orderable

(* The sets of at most k elements of S. *)
RECURSIVE UpTo(_, _)
UpTo(S, k) ==
    IF k = 0 THEN {{}}
    ELSE LET T == UpTo(S, k - 1) IN T \cup {t \cup {x} : t \in T, x \in S}

(* The weak references a vertex of round r may carry: at most WeakMax      *)
(* existing vertices of rounds <= r-2, for Byzantine and honest authors    *)
(* alike.  For an honest author this is a superset of weak_refs's choice   *)
(* (the orphans it holds, oldest first), so what holds here holds there.   *)
WeakChoices(a, r) ==
    IF WeakMax = 0 \/ ~WeakCarrier(a, r) THEN {{}}
    ELSE UpTo({v \in AllMade : v[2] <= r - 2}, WeakMax)

(* The order of the vertices within a round: any (the older models), or,   *)
(* as a reduction in the weak-link models (InRoundOrder <-                 *)
(* HonestByAuthor), honest authors in author order, Byzantine ones at any  *)
(* point.  A round's vertices reference lower rounds only, so the order    *)
(* changes no DAG; a commit reads the round being built only through the   *)
(* votes, and whether Q votes exist, or which Q a node holds, is the same  *)
(* once the honest authors before them made theirs.  So the reduction      *)
(* loses no committed sequence or log, and the invariants, monotone in     *)
(* the DAG of a round, fail in a state it keeps if they fail at all.       *)
InRoundOrder(a, r) == TRUE
HonestByAuthor(a, r) == a \in Honest => \A b \in Honest : b < a => r \in made[b]

(* The reduction of the models whose commits wait for the end of the DAG   *)
(* (CommitTime <- AtEnd below): every author of rounds > 0 in author       *)
(* order, a Byzantine one at its turn or never (InRoundOrder <-            *)
(* AuthorOrder). With no commit during the build, what happens in a round  *)
(* matters only through the round's final set of vertices: the references  *)
(* of a round r vertex are drawn from round r-1 (and, weakly, lower        *)
(* rounds), all closed when round r opens, and a Byzantine vertex of round *)
(* r may be made at any point of round r, so at its author's turn. Every   *)
(* final DAG is built this way, and the invariants read during the build   *)
(* (AnchorPaths, ReachSound, TypeOK) are monotone in the DAG or hold of    *)
(* each vertex as it is made. Round 0 is exempt (the honest genesis        *)
(* vertices are made in Init; a Byzantine one comes while round 0 is       *)
(* open).                                                                  *)
AuthorOrder(a, r) ==
    r = 0 \/ (/\ \A b \in Honest : b < a => r \in made[b]
              /\ \A b \in Node : b > a => r \notin made[b])

(* When an honest node may commit: at any time (the protocol), or, as a    *)
(* reduction of the models without weak links or with the wait for weak    *)
(* parents (CommitTime <- AtEnd), once every honest node has made its last *)
(* vertex (a Byzantine one may still come).  Nothing in the DAG depends on *)
(* commits, and Commit(i, r) enabled at some point stays enabled and       *)
(* commits the same chain later: its votes only grow, LastCommitted(i) is  *)
(* i's own, and its walk back reads anchors of rounds below r, all fixed   *)
(* once round r+1 is open (a round is closed when the next one opens).  So *)
(* every sequence of commits of a run is also a sequence of commits at its *)
(* end, with the same results, and AnchorsConsistent, LogsConsistent and   *)
(* NoDoubleOrder, which read the committed sequences and the histories of  *)
(* the committed anchors (fixed once made), fail in some run only if they  *)
(* fail at the end of some run.  Not for weak_nowait: there what a node    *)
(* lacks at a commit depends on when it commits.                           *)
CommitTime == TRUE
AtEnd == rnd = MaxRound /\ \A h \in Honest : MaxRound \in made[h]

(* The honest nodes that commit: all (the protocol), or, as a reduction    *)
(* of the same models (Committers <- TwoHonest), the two lowest.  A commit *)
(* of node i depends on i only through committed[i] (without weak links,   *)
(* or with the wait for weak parents, a node's log is Log(i), a function   *)
(* of committed[i]), and each property speaks of one node or of a pair, so *)
(* a violation by any two honest nodes is one by these two, making the     *)
(* same commits.  The others keep empty sequences, which every property    *)
(* accepts.                                                                *)
Committers == Honest
TwoHonest == {i \in Honest : Cardinality({j \in Honest : j < i}) < 2}

(* Whether a may make its round r vertex now (canonical order): in the    *)
(* round being built, or opening the next one once every honest node has  *)
(* its vertex in this one.                                                 *)
MayMake(a, r) ==
    /\ r \in Round
    /\ r \notin made[a]
    /\ \/ r = rnd
       \/ r = rnd + 1 /\ \A h \in Honest : rnd \in made[h]
    /\ a \in Honest => r - 1 \in made[a]      \* never true for r = 0: made at Init
    /\ InRoundOrder(a, r)

(* make_vertex (honest) or a Byzantine vertex: (a, r) with references R. *)
Choices(a, r) == IF a \in Honest THEN HonestRefs(a, r) ELSE ByzRefs(a, r)

Make(a, r, R, W) ==
    /\ MayMake(a, r)
    /\ R \in Choices(a, r)
    /\ Valid(a, r, R)
    /\ ValidWeak(r, W)
    /\ rnd' = r
    /\ made' = [made EXCEPT ![a] = @ \cup {r}]
    /\ refs' = [refs EXCEPT ![a][r] = R]
    /\ weak' = [weak EXCEPT ![a][r] = W]
    /\ reach' = [reach EXCEPT ![a][r] =
                    (IF IsAnchorRound(r) /\ a = Leader(r) THEN {r} ELSE {})
                    \cup UNION {reach[b][r - 1] : b \in (IF r = 0 THEN {} ELSE R)}]
    /\ UNCHANGED <<byz, committed, logs>>

-----------------------------------------------------------------------------
(* Histories.  The parents of a set of vertices, along strong references   *)
(* and (withWeak) weak ones; the downward closure of a set; the vertices   *)
(* reachable from a set in a local DAG that lacks the vertices lack,       *)
(* without entering the set done (history() in graph.c: inserted parents  *)
(* that are not ordered yet).                                              *)

Parents(S, withWeak) ==
    UNION {{<<b, v[2] - 1>> : b \in refs[v[1]][v[2]]}
           \cup (IF withWeak THEN weak[v[1]][v[2]] ELSE {}) : v \in S}

RECURSIVE Down(_, _, _)
Down(front, acc, withWeak) ==
    IF front = {} THEN acc
    ELSE LET nacc == acc \cup front
         IN Down(Parents(front, withWeak) \ nacc, nacc, withWeak)

(* What a node holds once it holds S: insertion waits for the strong       *)
(* parents, and for the weak ones too unless weak_nowait.                  *)
Closure(S) == Down(S, {}, WeakWait)

(* The vertices whose strong history meets M: a node that lacks M lacks    *)
(* them too (strong parents are always waited for).                        *)
StrongUp(M) == IF M = {} THEN {} ELSE {v \in AllMade : Down({v}, {}, FALSE) \cap M # {}}

RECURSIVE Reachable(_, _, _, _)
Reachable(front, acc, lack, done) ==
    IF front = {} THEN acc
    ELSE LET nacc == acc \cup front
         IN Reachable(Parents(front, TRUE) \ (lack \cup done \cup nacc), nacc, lack, done)

(* The causal history of the anchor of round c in the global DAG. *)
Hist(c) == Reachable({<<Leader(c), c>>}, {}, {}, {})

-----------------------------------------------------------------------------
(* Commit (insert counting votes, try_commit) and ordering (order_anchor). *)

LastCommitted(i) ==
    IF committed[i] = <<>> THEN -2 ELSE committed[i][Len(committed[i])]

(* The vertices of round r+1 that reference the anchor of round r. *)
Votes(r) == {a \in Exists(r + 1) : r \in reach[a][r + 1]}

AnchorExists(r) == r \in made[Leader(r)]

(* A strong path from the anchor of round c to the anchor of round rr. *)
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

(* Every vertex in (round, author) order (by_round_author): position k    *)
(* holds <<(k-1) % N, (k-1) \div N>>.  S in that order is the subsequence  *)
(* of the vertices in S.                                                   *)
AllInOrder == [k \in 1 .. N * (MaxRound + 1) |-> <<(k - 1) % N, (k - 1) \div N>>]
Sorted(S) == SelectSeq(AllInOrder, LAMBDA v : v \in S)

Range(s) == {s[k] : k \in 1 .. Len(s)}

(* history() follows a parent only when it is not ordered yet             *)
(* (!p->ordered).  A teeth model drops that test (SkipOrdered <-           *)
(* OrderAgain): each anchor then orders its whole causal history, the      *)
(* part earlier anchors ordered included, which NoDoubleOrder must catch.  *)
SkipOrdered == TRUE
OrderAgain == FALSE

(* The anchors of rounds seq, oldest first, ordered by a node that lacks  *)
(* the vertices lack, after the vertices done: each one's history in the   *)
(* node's local DAG, minus what was ordered, sorted (order_anchor:         *)
(* history, then qsort by_round_author, then order_vertex, which sets      *)
(* v->ordered).                                                            *)
RECURSIVE OrderIn(_, _, _)
OrderIn(seq, lack, done) ==
    IF seq = <<>> THEN <<>>
    ELSE LET new == Reachable({<<Leader(Head(seq)), Head(seq)>>}, {}, lack,
                              IF SkipOrdered THEN done ELSE {})
         IN Sorted(new) \o OrderIn(Tail(seq), lack, done \cup new)

(* WHAT A COMMITTING NODE MAY LACK (point 5 above).  Honest i commits the  *)
(* anchor A of round r holding A and a set V of Q votes for it.  It may    *)
(* lack vertices of A's history (the set M, and with them StrongUp(M))     *)
(* only where its local DAG allows: not in the closure of what it holds    *)
(* for sure -- A, V, what it ordered, its own vertices and their weak      *)
(* parents (it held them when it referenced them) -- and consistently      *)
(* with its past: for each of its own vertices some set H of n-f round     *)
(* r-1 vertices it may have held then, and for each anchor it committed    *)
(* directly some Q votes, all outside StrongUp(M).  With the wait for weak *)
(* parents the closure of A is its whole history, so M is empty and the    *)
(* node orders Log(i); without it M can hold weakly referenced vertices.   *)
VoteSets(r) == {V \in SUBSET {<<a, r + 1>> : a \in Votes(r)} : Cardinality(V) = CommitQuorum}

Pinned(i) ==
    Range(logs[i]) \cup {<<i, q>> : q \in made[i]} \cup UNION {weak[i][q] : q \in made[i]}

PastFits(i, Out) ==
    /\ \A q \in made[i] \ {0} :
          \E H \in HeldChoices(i, q) :
             /\ refs[i][q] \in HonestRefsHeld(i, q, H)
             /\ \A b \in H : <<b, q - 1>> \notin Out
    /\ \A k \in 1 .. Len(committed[i]) :
          DirectlyCommittable(committed[i][k]) =>
             \E V \in VoteSets(committed[i][k]) : V \cap Out = {}

LackChoices(i, r) ==
    IF WeakWait THEN {{}}
    ELSE {M \in SUBSET (Hist(r) \ Closure(Pinned(i) \cup {<<Leader(r), r>>})) :
             M = {} \/ PastFits(i, StrongUp(M))}

(* Honest i commits the anchor of round r directly, with the earlier ones  *)
(* its walk back finds, and orders their histories in its local DAG.       *)
Commit(i, r) ==
    /\ CommitTime
    /\ r > LastCommitted(i)
    /\ DirectlyCommittable(r)
    /\ LET chain == Walk(r, r - 2, LastCommitted(i) + 2) \o <<r>> IN
       \E M \in LackChoices(i, r) :
         \E V \in IF M = {} THEN {{}} ELSE VoteSets(r) :
           /\ V \cap StrongUp(M) = {}
           /\ logs' = IF WeakMax = 0 THEN logs
                      ELSE [logs EXCEPT ![i] = @ \o OrderIn(chain, StrongUp(M), Range(@))]
           /\ committed' = [committed EXCEPT ![i] = @ \o chain]
    /\ UNCHANGED <<byz, rnd, made, refs, weak, reach>>

Next ==
    \/ \E a \in Node, r \in Round :
         MayMake(a, r) /\ \E R \in Choices(a, r), W \in WeakChoices(a, r) : Make(a, r, R, W)
    \/ \E i \in Committers, r \in AnchorRound : Commit(i, r)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The log as a function of the committed anchors and the global DAG       *)
(* (point 2): what every node's log is when local DAGs are downward        *)
(* closed.                                                                 *)
Log(i) == OrderIn(committed[i], {}, {})

(* The log of honest i: with weak links, logs[i], ordered at each commit   *)
(* from what i holds; without (the older models), Log(i), which is what    *)
(* logs[i] would be there (point 2) and cheaper to compute on the states   *)
(* TLC keeps than at every commit.                                         *)
NodeLog(i) == IF WeakMax = 0 THEN Log(i) ELSE logs[i]

IsPrefix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, 1, Len(s)) = s

-----------------------------------------------------------------------------
(* Properties. *)

AnchorsConsistent ==
    \A i, j \in Honest :
        IsPrefix(committed[i], committed[j]) \/ IsPrefix(committed[j], committed[i])

LogsConsistent ==
    LET L == [i \in Honest |-> NodeLog(i)]
    IN \A i, j \in Honest : IsPrefix(L[i], L[j]) \/ IsPrefix(L[j], L[i])

(* No vertex is ordered twice: each honest node's log lists every vertex  *)
(* at most once (order_vertex runs once per vertex: history() skips the    *)
(* ordered ones).  Transactions are not modelled; dedup.c's committed      *)
(* index is a second guard for them (within dedup_rounds), not for         *)
(* vertices.                                                               *)
NoDoubleOrder ==
    \A i \in Honest : LET s == NodeLog(i) IN Cardinality(Range(s)) = Len(s)

(* Each node's log, ordered from its local DAG, is the global one. *)
LogIsGlobal == \A i \in Honest : NodeLog(i) = Log(i)

(* reach is what its name says (checked against refs). *)
RECURSIVE Reaches(_, _, _, _)
Reaches(S, r, b, rr) ==   \* some round r author in S has a strong path to (b, rr)
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

(* What TLC fingerprints (VIEW in the .cfg): the Byzantine set, the round  *)
(* being built, the vertices of that round and the one below (the only     *)
(* ones new vertices can reference strongly) with their reach, the         *)
(* existing anchors with their reach and vote counts, capped at Q (all     *)
(* that commits look at: the votes only grow, and only whether there are Q *)
(* of them matters), and the SET of committed sequences (Commit(i, r)      *)
(* depends on i only through committed[i], so which honest node holds      *)
(* which sequence does not matter). Two states with the same View have the *)
(* same futures as far as these go, so merging them loses no behaviour of  *)
(* the committed sequences, and AnchorsConsistent and AnchorPaths are      *)
(* functions of the View. LogsConsistent, NoDoubleOrder, LogIsGlobal,      *)
(* ReachSound and TypeOK are checked on the states TLC keeps; with the     *)
(* wait for weak parents LogsConsistent follows from AnchorsConsistent     *)
(* anyway (each log is Log(i), a function of the anchor sequence and the   *)
(* DAG, and the log of a prefix is a prefix of the log), and NoDoubleOrder *)
(* holds of OrderIn by construction unless the ordered filter is off (then *)
(* every state where a node committed two anchors whose histories meet     *)
(* breaks it, kept or not). Weak references are not in the View: they      *)
(* change no reach, so with weak links the View classes are those without. *)
View ==
    <<byz, rnd,
      [r \in {rr \in Round : rr = rnd \/ rr + 1 = rnd} |-> [a \in Exists(r) |-> reach[a][r]]],
      [r \in {rr \in AnchorRound : AnchorExists(rr)} |->
          <<reach[Leader(r)][r],
            IF r + 1 \in Round THEN Min(Cardinality(Votes(r)), CommitQuorum) ELSE 0>>],
      {committed[i] : i \in Honest}>>

(* The VIEW of the weak-link models.  With weak links a log depends on     *)
(* histories, not only on reach, so: View, the history of every existing   *)
(* anchor, the history of every vertex a future orderable vertex may still *)
(* reference (strongly: the two top rounds; weakly: rounds <= the last     *)
(* committable anchor round - 2), and the set of <<anchors, log>> pairs of *)
(* the honest nodes.  With the wait for weak parents everything Commit     *)
(* and the properties read is a function of it, so merging loses nothing.  *)
FutureParents ==
    IF \A v \in Orderable : v[2] < rnd \/ v \in AllMade THEN {}
    ELSE {v \in AllMade : v[2] < LastAnchor /\ (v[2] + 1 >= rnd \/ v[2] <= LastAnchor - 2)}
WeakView ==
    <<View,
      [r \in {rr \in AnchorRound : AnchorExists(rr)} |-> Hist(r)],
      [v \in FutureParents |-> Down({v}, {}, TRUE)],
      {<<committed[i], logs[i]>> : i \in Honest}>>
=============================================================================
