------------------------------ MODULE DagSync ------------------------------
(***************************************************************************)
(* Garbage collection, catch-up and crash recovery of weft's DAG consensus *)
(* (protocols/dag: graph.c, sync.c, snapshot.c, dag.c; the protocol is in  *)
(* docs/protocols/sparse-dag.md, "Catch-up and recovery", "State sync",   *)
(* "Garbage collection").  SparseBullshark.tla checks the commit rule on  *)
(* one global DAG with no per-node state; this module takes the commit    *)
(* rule's lemma as given (see THE DAG below) and models what one honest   *)
(* node keeps LOCALLY -- its part of the DAG above its GC floor, its       *)
(* committed anchors, its floor, its in-memory "ordered" flags, what it    *)
(* persists -- through GC, falling behind, range fetch, snapshot install,  *)
(* the jump of its own rounds past the floor, and crashes.                 *)
(*                                                                         *)
(* NODES.  n = 3f+1 authors 0 .. N-1.  Obs: the honest nodes modelled in  *)
(* full (the models use one, the "observer").  Byz: Byzantine authors.    *)
(* The other honest nodes, Comm, are "the committee": ONE abstract node   *)
(* that holds every vertex the moment it is made and commits an anchor    *)
(* the moment the anchor has commit_quorum votes (insert -> try_commit    *)
(* at the Q-th vote, EagerCC), walking back as try_commit does.  Its GC   *)
(* floor, kv floor and checkpoint are functions of its committed anchors  *)
(* cc (CommFloor, CommKvFloor, CommSnapRound: dag_gc, dag_raise_floor,    *)
(* dag_snap_checkpoint), which is what an observer fetches from and       *)
(* installs snapshots from.  No correct node commits beyond it (a direct  *)
(* commit needs Q votes, which it counts first), so every correct node's  *)
(* anchors and log are prefixes of cc and RefLog(cc) (by the commit-rule  *)
(* lemma): comparing an observer with the committee is comparing it with  *)
(* every correct node.                                                     *)
(*                                                                         *)
(* THE DAG.  made[a] / refs[a][r]: one vertex per (author, round) slot,   *)
(* the same at every node (reliable broadcast; a vertex is its slot).  A  *)
(* vertex of round r > 0 references vertices of round r-1 (strong         *)
(* references only: weak_max = 0).  Anchors: even rounds, leader          *)
(* (r/2) mod n (dag_leader).  Honest vertices reference EVERY round r-1    *)
(* vertex that exists when they are made (what sample_refs does for an    *)
(* anchor and in dense mode, and one legal outcome in sparse mode with     *)
(* D >= n-2), at least 2f+1, their own included.  A Byzantine author makes *)
(* vertices in increasing rounds, may skip rounds and may be late (made    *)
(* after the next round formed, so only later vertices reference it),     *)
(* referencing every round r-1 vertex that exists then.  So DAG shapes     *)
(* vary through timing: late vertices, vertices no anchor reaches          *)
(* (orphans), anchors without enough votes, anchors committed only through *)
(* the walk back.  Arbitrary reference choices, sparse sampling and the    *)
(* lemma they must satisfy are SparseBullshark's job.                      *)
(*                                                                         *)
(* THE OBSERVER i keeps, as the C code does:                               *)
(*   h[i]         it holds every existing vertex of rounds floor[i] ..     *)
(*                h[i]-1 (its local DAG: downward closed above its floor); *)
(*   floor[i]     d->floor, the GC floor (persisted in "S");               *)
(*   kvf[i]       d->kv_floor (S): V records below it are deleted;         *)
(*   committed[i] its committed anchors (d->committed_round is the last),  *)
(*                as the ordering code holds them in memory;               *)
(*   pc[i]        the same as persisted in the "S" record;                 *)
(*   log[i]       what it ordered: one entry per ordered anchor, the set   *)
(*                of vertices its history added (order_anchor sorts them   *)
(*                by (round, author), the same at every node, so sets say  *)
(*                the same and comparing batches is at least as strict as  *)
(*                comparing the delivered streams).  Durable: the          *)
(*                application state, the committed index "E" and           *)
(*                order_hash are written in the step that orders;          *)
(*   ord[i]       the vertices in memory flagged v->ordered;               *)
(*   mk[i]        FALSE after a restart or a snapshot install until the    *)
(*                committed anchor is inserted and ordered_before marked   *)
(*                what it reaches;                                         *)
(*   snap[i]      its checkpoint (records "Q"/"P", checkpoint_round);      *)
(*   nxt[i]       d->next_round (S); ownFrom[i] d->own_from (S since state *)
(*                version 3; before, a restart set it to 0).               *)
(*                                                                         *)
(* ACTIONS -> C.                                                           *)
(*   CommStep      the committee's make_vertex for round crnd (all members *)
(*                 at once, references: every round r-1 vertex), and with  *)
(*                 every new vertex EagerCC (insert counting votes,        *)
(*                 try_commit at the Q-th).                                *)
(*   ByzMake       a Byzantine vertex (anything that passes ref_bounds:    *)
(*                 >= 2f+1 references to existing vertices).               *)
(*   ObsMake       dag_try_advance / advance_wait (round r-1 inserted with *)
(*                 2f+1 vertices, the own round r-1 vertex inserted unless *)
(*                 r-1 < own_from) and make_vertex (dag_state_save).  Only *)
(*                 with ObsProposes (the jump models); otherwise the       *)
(*                 observer's vertices come with CommStep, as if its       *)
(*                 proposing side kept up with the committee.              *)
(*   Receive       BRB deliveries of round h[i] (on_brb_deliver ->         *)
(*                 dag_vertex_decode -> dag_accept -> insert): each vertex *)
(*                 inserted, its parents being in or below the floor.  The *)
(*                 BRB delivers only rounds at or above the committee's    *)
(*                 floor: dag_raise_floor makes every peer brb_skip the    *)
(*                 instances below it.  Falling behind is the absence of   *)
(*                 Receive steps while the committee goes on.              *)
(*   Fetch         range sync of round h[i] below the committee's floor    *)
(*                 (sync_plan_now, send_fetch; on_fetch / served: from kv  *)
(*                 down to kv_floor; on_range / take_report: f+1 matching  *)
(*                 digests, bytes that hash to them; dag_accept).  The     *)
(*                 committee's reports are honest, so what is fetched is   *)
(*                 the vertex that exists.                                 *)
(*   Commit        try_commit for an anchor with Q votes held: the walk    *)
(*                 back (break at prev < d->floor or prev <=               *)
(*                 committed_round; dag_inserted; dag_path), order_anchor  *)
(*                 for each anchor oldest first (history() from the anchor *)
(*                 through inserted, unordered vertices at or above        *)
(*                 order_floor(), the previous committed round - gc_depth; *)
(*                 order_vertex sets v->ordered), dag_snap_checkpoint,     *)
(*                 dag_state_save; then settle(): dag_gc (due when an      *)
(*                 ordered anchor's round > floor + gc_depth; floor :=     *)
(*                 committed_round - gc_depth) -> dag_raise_floor (rounds  *)
(*                 below the floor leave memory with their flags; kv_floor *)
(*                 := min(checkpoint - gc_depth, floor); next_round and    *)
(*                 own_from jump to floor + 1 when next_round <= floor;    *)
(*                 dag_state_save).  The C code commits at the Q-th vote;  *)
(*                 here Commit may come any time after the votes are held, *)
(*                 or never (a node whose Q-th vote for r arrives after it *)
(*                 committed a later anchor never commits r directly).     *)
(*   MarkOrdered   insert() of the committed anchor after a restart or an  *)
(*                 install: ordered_before() flags what it reaches above   *)
(*                 order_floor().  Crash and Install do it at once when    *)
(*                 the anchor is restored from kv; Commit waits for it     *)
(*                 (any anchor committable later reaches the committed     *)
(*                 one, so the C code inserts it first).                   *)
(*   Crash         kill -9 at a step boundary and restart: dag_init        *)
(*                 (dag_state_load: S; dag_dedup_load; dag_restore_vertices *)
(*                 from the floor, with restoring set: no commits).  A     *)
(*                 step's writes are one LMDB transaction and its messages *)
(*                 leave only after it commits (docs/ops.md), so a crash   *)
(*                 loses no completed step.  Lost: v->ordered, the sync    *)
(*                 state, the vote counts (recounted).                     *)
(*   Install       state sync (dag_snap_tick: f+1 peers no longer serve    *)
(*                 the lowest round we lack; maybe_start: f+1 identical    *)
(*                 offers, one honest, so the committee's checkpoint;       *)
(*                 on_part, install(): the snapshot's ordering state and   *)
(*                 committed index, checkpoint_round, dag_raise_floor to   *)
(*                 checkpoint - gc_depth, dag_graph_reset,                 *)
(*                 dag_restore_vertices, dag_state_save).  The installed   *)
(*                 log is the committee's log up to the checkpoint (the    *)
(*                 snapshot carries its effect: application records, "E",  *)
(*                 order_hash, positions).                                 *)
(*                                                                         *)
(* THE RECEIPT ORDER, and why it loses nothing.  In the C code a node      *)
(* inserts vertices in any order in which parents come first.  Here an     *)
(* observer receives round by round, and a late vertex of a round it holds *)
(* is inserted the moment it is made.  What a node holds matters for (1)   *)
(* which anchors it can commit: Commit may be taken any time after the     *)
(* votes exist, or never, so every sequence of direct commits, at every    *)
(* point relative to GC, fetches, installs and crashes, is covered; (2)    *)
(* what ordering reaches: an anchor's history above the floor is in every  *)
(* local DAG that holds the anchor, whatever else it holds; (3) what GC    *)
(* drops and a restart restores: vertices that are not in any history the  *)
(* node will order do not change its log; (4) what it serves: the          *)
(* committee serves here.  Vertices waiting for parents, killed slots,     *)
(* STATUS, the BRB's own catch-up and the ring's capacity only decide when *)
(* things happen, which is free here.                                      *)
(*                                                                         *)
(* NOT MODELLED.  Transactions, the mempool, requeue_own, the committed    *)
(* index's skip (vertex-level NoDoubleOrder is stricter: the index would   *)
(* hide a re-ordered vertex's transactions within dedup_rounds, but not    *)
(* the positions and order_hash of a stale S, see PersistedWithLog);       *)
(* weak references (a weak parent below the floor counts as present like a *)
(* strong one, and BelowFloorSettled is the argument for both, but only    *)
(* strong ones are checked); a lost store (fresh_store, rejoin_rounds); a  *)
(* Byzantine fetch supplier (with f+1 matching reports one is honest; a    *)
(* forged vertex taken on one report would only kill, at that node, the    *)
(* slots that reference the genuine one: a liveness failure this           *)
(* round-based receipt cannot show).  gc_depth is 1 or 2 here (the C code  *)
(* takes 4 .. 100000): it enters only through floor = committed_round -    *)
(* gc_depth, order_floor() and the GC trigger, and small values reach the  *)
(* states where they matter in fewer rounds.                               *)
(*                                                                         *)
(* PROPERTIES.  End to end (over the observers and the committee):         *)
(*   AnchorsConsistent, LogsConsistent  prefixes of one another;           *)
(*   NoDoubleOrder   no vertex ordered twice by a node, across GC, fetch,  *)
(*                   install and restart;                                  *)
(*   LogIsGlobal     each observer's log is RefLog(its anchors): the       *)
(*                   histories in the global DAG cut at order_floor(), the *)
(*                   same function at every node;                          *)
(*   CatchUpSame     an observer that reached the committee's anchors      *)
(*                   (however: receipt, fetch, install) has its log.       *)
(* The assumptions the argument uses, as invariants:                       *)
(*   FloorBelowOrderFloor   the GC floor is never above order_floor() of   *)
(*                          the committed anchors (both are committed      *)
(*                          round - gc_depth);                             *)
(*   BelowFloorSettled      a vertex below a node's floor that any node    *)
(*                          orders, this node ordered (the anchors that    *)
(*                          raised its floor did): skipping it, as a       *)
(*                          parent or a late delivery, loses nothing;      *)
(*   BatchesAboveOrderFloor each ordered vertex is at or above the order   *)
(*                          floor of the anchors committed before its      *)
(*                          anchor;                                        *)
(*   FlagsMatchLog          above the order floor, the in-memory ordered   *)
(*                          flags are exactly the logged vertices (after a *)
(*                          restart or an install too);                    *)
(*   PersistedWithLog       S holds the committed anchors that go with the *)
(*                          durable log;                                   *)
(*   OwnChainGapsBelowFloor an honest node's own chain has gaps only at    *)
(*                          its floor (the jump), which step 2 of the      *)
(*                          commit-rule lemma needs above it.              *)
(* And OwnChainCanGoOn: a node can always make its next vertex once it     *)
(* holds the round below.  The C code failed it while own_from was not    *)
(* persisted (DagSyncOwnFromLost, the mutation OwnFromLostOnRestart).      *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, Sequences, TLC

CONSTANTS
    N,          \* nodes 0 .. N-1
    F,          \* fault bound, N = 3F+1
    Byz,        \* the Byzantine authors
    Obs,        \* the honest nodes modelled in full (the observers)
    MaxRound,   \* rounds 0 .. MaxRound
    GcDepth     \* gc_depth

Node == 0 .. N - 1
Honest == Node \ Byz
Comm == Honest \ Obs
Round == 0 .. MaxRound
Vertex == Node \X Round
Quorum == 2 * F + 1          \* d->quorum = n - f
CommitQuorum == 2 * F + 1    \* d->commit_quorum, sparse mode

ASSUME /\ N \in Nat /\ F \in Nat /\ N = 3 * F + 1
       /\ Byz \subseteq Node /\ Cardinality(Byz) <= F
       /\ Obs \subseteq Honest /\ Obs # {}
       /\ MaxRound \in Nat /\ GcDepth \in Nat \ {0}

(* snapshot_every: gc_depth by default, as in dag_init; the fetch models   *)
(* take 4, so that the checkpoint lags the floor and kv keeps rounds below *)
(* it (with anchors two rounds apart and snapshot_every <= 2 the           *)
(* checkpoint is always the last anchor here and kv_floor = floor).        *)
SnapEvery == GcDepth
SnapEvery4 == 4

(* Where the observers' vertices come from: their own local state          *)
(* (ObsMake, the jump models), or the committee's step.                    *)
ObsProposes == TRUE
ObsFollows == FALSE
Makers == IF ObsProposes THEN Comm ELSE Honest

(* The mutations of the teeth models (overridden with <- in their cfgs).   *)
(* FloorFromLocalRound: dag_gc takes the floor from the highest round it   *)
(*   holds, gc_depth below it, in every settle(), instead of from          *)
(*   committed_round.                                                      *)
FloorFromCommitted == TRUE
FloorFromLocalRound == FALSE
(* OrderFloorFromGcFloor: history() cuts at d->floor (as it stands, which  *)
(*   depends on when dag_gc last ran) instead of order_floor().            *)
OrderFloorFromCommitted == TRUE
OrderFloorFromGcFloor == FALSE
(* NoSaveOnCommit: try_commit does not call dag_state_save; S is written   *)
(*   by make_vertex and dag_raise_floor only.                              *)
SaveOnCommit == TRUE
NoSaveOnCommit == FALSE
(* NoMarkOnRestore: insert() does not call ordered_before() for the        *)
(*   committed anchor when it is restored or fetched again.                *)
MarkOnRestore == TRUE
NoMarkOnRestore == FALSE
(* OwnFromKept: a restart keeps own_from (S holds it).  The mutation       *)
(*   OwnFromLostOnRestart is the C code before state version 3, which lost *)
(*   it (a restart set it to 0; see OwnChainCanGoOn).                      *)
OwnFromKept == TRUE
OwnFromLostOnRestart == FALSE
(* Ghost: record events for the witness models (seen stays empty else).    *)
Ghost == FALSE
GhostOn == TRUE

Max(x, y) == IF x >= y THEN x ELSE y
Min(x, y) == IF x <= y THEN x ELSE y
Last(s) == s[Len(s)]
LastC(s) == IF s = <<>> THEN -1 ELSE Last(s)
Range(s) == {s[k] : k \in 1 .. Len(s)}

IsAnchorRound(r) == r % 2 = 0
Leader(r) == (r \div 2) % N
Anchor(r) == <<Leader(r), r>>
(* The anchor rounds that can be committed: their votes are in MaxRound.   *)
AnchorRound == {r \in Round : IsAnchorRound(r) /\ r + 1 <= MaxRound}

VARIABLES
    made,       \* made[a]: the rounds where author a has a vertex
    refs,       \* refs[a][r]: the round r-1 authors vertex (a, r) references
    crnd,       \* the committee's next round
    cc,         \* the committee's committed anchors, oldest first
    nxt,        \* nxt[i]: d->next_round of observer i (S)
    ownFrom,    \* ownFrom[i]: d->own_from (volatile)
    h,          \* h[i]: i holds the existing vertices of rounds floor[i] .. h[i]-1
    floor,      \* floor[i]: d->floor (S)
    kvf,        \* kvf[i]: d->kv_floor (S)
    committed,  \* committed[i]: the committed anchors in memory
    pc,         \* pc[i]: the committed anchors in S
    log,        \* log[i]: per ordered anchor, the vertices its history added (durable)
    ord,        \* ord[i]: the vertices in memory flagged ordered
    mk,         \* mk[i]: ordered_before has run for the committed anchor (or is not needed)
    snap,       \* snap[i]: i's checkpoint [round, c (anchors), l (log)]
    seen        \* seen[i]: ghost events (witness models)

vars == <<made, refs, crnd, cc, nxt, ownFrom, h, floor, kvf, committed, pc, log, ord, mk, snap, seen>>
obsVars == <<nxt, ownFrom, h, floor, kvf, committed, pc, log, ord, mk, snap, seen>>

NoSnap == [round |-> 0, c |-> <<>>, l |-> <<>>]

-----------------------------------------------------------------------------
(* The DAG. *)

Exists(r) == {a \in Node : r \in made[a]}
AllMade == {v \in Vertex : v[2] \in made[v[1]]}
Parents(v) == IF v[2] = 0 THEN {} ELSE {<<b, v[2] - 1>> : b \in refs[v[1]][v[2]]}

(* Everything reachable from front along references, through the vertices *)
(* in allowed only (the front itself is taken as it is).                   *)
RECURSIVE Reach(_, _, _)
Reach(front, acc, allowed) ==
    IF front = {} THEN acc
    ELSE LET nacc == acc \cup front
         IN Reach((UNION {Parents(v) : v \in front} \cap allowed) \ nacc, nacc, allowed)

AnchorMade(r) == r \in made[Leader(r)]
(* dag_path: a path from the anchor of round c to the anchor of round rr   *)
(* (it stays within rounds rr .. c, above any floor the walk allows).      *)
Path(c, rr) == Anchor(rr) \in Reach({Anchor(c)}, {}, {v \in AllMade : v[2] >= rr})
Votes(r) == {a \in Exists(r + 1) : Leader(r) \in refs[a][r + 1]}
Committable(r) == r \in AnchorRound /\ AnchorMade(r) /\ Cardinality(Votes(r)) >= CommitQuorum

(* try_commit's walk back from the anchor of round r: prev = r-2, r-4, ... *)
(* while prev >= lo (lo: max(d->floor, committed_round + 1)), taking each *)
(* anchor with a path from the last one taken; oldest first.              *)
RECURSIVE WalkFrom(_, _, _)
WalkFrom(cur, prev, lo) ==
    IF prev < lo \/ prev < 0 THEN <<>>
    ELSE IF AnchorMade(prev) /\ Path(cur, prev)
           THEN WalkFrom(prev, prev - 2, lo) \o <<prev>>
           ELSE WalkFrom(cur, prev - 2, lo)
Chain(r, lo) == WalkFrom(r, r - 2, lo) \o <<r>>
Lo(seq, fl) == Max(fl, LastC(seq) + 1)

(* order_floor(): committed_round - gc_depth (0 before any commit). *)
OF(seq) == IF seq = <<>> THEN 0 ELSE Max(0, Last(seq) - GcDepth)
(* dag_raise_floor's kv floor from a checkpoint: checkpoint - gc_depth.    *)
Keep(ck) == Max(0, ck - GcDepth)

(* THE REFERENCE LOG of a committed anchor sequence, over the global DAG:  *)
(* each anchor's history through not yet ordered vertices at or above the *)
(* order floor of the anchors before it.                                   *)
RECURSIVE RefOrder(_, _, _)
RefOrder(seq, k, done) ==
    IF k > Len(seq) THEN <<>>
    ELSE LET of == IF k = 1 THEN 0 ELSE Max(0, seq[k - 1] - GcDepth)
             new == Reach({Anchor(seq[k])}, {}, {v \in AllMade : v \notin done /\ v[2] >= of})
         IN <<new>> \o RefOrder(seq, k + 1, done \cup new)
RefLog(seq) == RefOrder(seq, 1, {})

(* dag_snap_checkpoint along a committed sequence: the round of the last   *)
(* checkpoint (0: none).                                                   *)
RECURSIVE SnapScan(_, _, _)
SnapScan(seq, k, ck) ==
    IF k > Len(seq) THEN ck
    ELSE SnapScan(seq, k + 1, IF seq[k] >= ck + SnapEvery THEN seq[k] ELSE ck)
SnapRoundOf(seq) == SnapScan(seq, 1, 0)
PrefixTo(seq, r) == SubSeq(seq, 1, CHOOSE k \in 1 .. Len(seq) : seq[k] = r)

(* The committee's floors and checkpoint (functions of cc: every commit    *)
(* past gc_depth raises the floor to committed_round - gc_depth, since     *)
(* anchors are two rounds apart).                                          *)
CommFloor == OF(cc)
CommSnapRound == SnapRoundOf(cc)
CommKvFloor == Min(Keep(CommSnapRound), CommFloor)

(* The local DAG of observer i. *)
Held(i) == {v \in AllMade : floor[i] <= v[2] /\ v[2] < h[i]}

Init ==
    /\ made = [a \in Node |-> IF a \in Honest THEN {0} ELSE {}]   \* genesis
    /\ refs = [a \in Node |-> [r \in Round |-> {}]]
    /\ crnd = 1
    /\ cc = <<>>
    /\ nxt = [i \in Obs |-> 1]
    /\ ownFrom = [i \in Obs |-> 0]
    /\ h = [i \in Obs |-> 0]
    /\ floor = [i \in Obs |-> 0]
    /\ kvf = [i \in Obs |-> 0]
    /\ committed = [i \in Obs |-> <<>>]
    /\ pc = [i \in Obs |-> <<>>]
    /\ log = [i \in Obs |-> <<>>]
    /\ ord = [i \in Obs |-> {}]
    /\ mk = [i \in Obs |-> TRUE]
    /\ snap = [i \in Obs |-> NoSnap]
    /\ seen = [i \in Obs |-> {}]

Note(i, evs) == IF Ghost THEN [seen EXCEPT ![i] = @ \cup evs] ELSE seen

-----------------------------------------------------------------------------
(* The committee and the Byzantine authors. *)

(* With every new vertex: the committee commits the anchor it made         *)
(* committable, if any (a vertex adds a vote to one anchor only), with the *)
(* walk back.  The bound variables pin the unprimed cc inside the primes.  *)
EagerCC ==
    \E lo \in {Lo(cc, CommFloor)}, last \in {LastC(cc)} :
        \/ /\ \A r \in AnchorRound : r > last => ~Committable(r)'
           /\ cc' = cc
        \/ \E r \in AnchorRound :
              /\ r > last
              /\ Committable(r)'
              /\ \A r2 \in AnchorRound : r2 > r => ~Committable(r2)'
              /\ cc' = cc \o Chain(r, lo)'

CommStep ==
    LET r == crnd IN
    /\ Makers # {}
    /\ r <= MaxRound
    /\ Cardinality(Exists(r - 1)) >= Quorum
    /\ made' = [a \in Node |-> IF a \in Makers THEN made[a] \cup {r} ELSE made[a]]
    /\ refs' = [a \in Node |-> IF a \in Makers THEN [refs[a] EXCEPT ![r] = Exists(r - 1)] ELSE refs[a]]
    /\ crnd' = r + 1
    /\ EagerCC
    /\ UNCHANGED obsVars

ByzMake(b, r) ==
    /\ r \notin made[b]
    /\ \A q \in made[b] : q < r
    /\ r = 0 \/ Cardinality(Exists(r - 1)) >= Quorum
    /\ made' = [made EXCEPT ![b] = @ \cup {r}]
    /\ refs' = [refs EXCEPT ![b][r] = IF r = 0 THEN {} ELSE Exists(r - 1)]
    /\ EagerCC
    /\ UNCHANGED crnd
    /\ UNCHANGED obsVars

-----------------------------------------------------------------------------
(* An observer. *)

ObsMake(i) ==
    LET r == nxt[i] IN
    /\ ObsProposes
    /\ 1 <= r /\ r <= MaxRound
    /\ h[i] >= r /\ r - 1 >= floor[i]            \* round r-1 is in its local DAG
    /\ Cardinality(Exists(r - 1)) >= Quorum
    /\ r - 1 < ownFrom[i] \/ r - 1 \in made[i]   \* advance_wait: own vertex unless below own_from
    /\ made' = [made EXCEPT ![i] = @ \cup {r}]
    /\ refs' = [refs EXCEPT ![i][r] = Exists(r - 1)]
    /\ nxt' = [nxt EXCEPT ![i] = r + 1]
    /\ pc' = [pc EXCEPT ![i] = committed[i]]      \* make_vertex: dag_state_save
    /\ seen' = Note(i, IF ownFrom[i] > 0 /\ r = ownFrom[i] THEN {"jumpmade"} ELSE {})
    /\ EagerCC
    /\ UNCHANGED <<crnd, ownFrom, h, floor, kvf, committed, log, ord, mk, snap>>

OrderFloorAt(i, seq) == IF OrderFloorFromCommitted THEN OF(seq) ELSE floor[i]

(* order_anchor for each anchor of the chain, oldest first.  st: the       *)
(* committed anchors c, log l, flags o and checkpoint s as they go; lag:   *)
(* some anchor of the chain had an order floor above d->floor (ghost).     *)
RECURSIVE OrderChain(_, _, _)
OrderChain(i, chain, st) ==
    IF chain = <<>> THEN st
    ELSE LET r == Head(chain)
             of == OrderFloorAt(i, st.c)
             new == Reach({Anchor(r)}, {}, {v \in Held(i) : v \notin st.o /\ v[2] >= of})
             c2 == Append(st.c, r)
             l2 == Append(st.l, new)
             s2 == IF r >= st.s.round + SnapEvery THEN [round |-> r, c |-> c2, l |-> l2] ELSE st.s
         IN OrderChain(i, Tail(chain),
                       [c |-> c2, l |-> l2, o |-> st.o \cup new, s |-> s2,
                        lag |-> st.lag \/ (st.c # <<>> /\ OF(st.c) > floor[i])])

(* ordered_before(): the history of the committed anchor (the last of seq) *)
(* above order_floor(), flagged.                                           *)
Mark(i, seq, o) ==
    o \cup Reach({Anchor(Last(seq))}, {}, {v \in Held(i) : v \notin o /\ v[2] >= OrderFloorAt(i, seq)})

(* settle() after a step: dag_gc raising the floor to target when that is  *)
(* higher (dag_raise_floor), with st the state the step left.              *)
Settle(i, target, st, hh, evs) ==
    LET nf == Max(floor[i], target)
        raised == nf > floor[i]
        jump == ObsProposes /\ raised /\ nxt[i] <= nf
        dropped == {v \in AllMade : floor[i] <= v[2] /\ v[2] < nf /\ v[2] < hh /\ v \notin st.o}
    IN /\ floor' = [floor EXCEPT ![i] = nf]
       /\ ord' = [ord EXCEPT ![i] = {v \in st.o : v[2] >= nf}]
       /\ kvf' = [kvf EXCEPT ![i] = IF raised THEN Max(@, Min(Keep(st.s.round), nf)) ELSE @]
       /\ nxt' = [nxt EXCEPT ![i] = IF jump THEN nf + 1 ELSE @]
       /\ ownFrom' = [ownFrom EXCEPT ![i] = IF jump THEN nf + 1 ELSE @]
       /\ pc' = [pc EXCEPT ![i] = IF SaveOnCommit \/ raised THEN st.c ELSE @]
       /\ seen' = Note(i, evs \cup (IF dropped # {} THEN {"dropunordered"} ELSE {})
                              \cup (IF jump THEN {"jump"} ELSE {}))

(* The floor FloorFromLocalRound raises to after a step: gc_depth below    *)
(* the highest round held.                                                 *)
LocalTarget(hh) == IF FloorFromCommitted THEN -1 ELSE hh - 1 - GcDepth

Receive(i) ==
    LET q == h[i] IN
    /\ q <= MaxRound /\ Exists(q) # {}
    /\ q >= CommFloor
    /\ h' = [h EXCEPT ![i] = q + 1]
    /\ Settle(i, LocalTarget(q + 1), [c |-> committed[i], o |-> ord[i], s |-> snap[i]], q + 1, {})
    /\ UNCHANGED <<made, refs, crnd, cc, committed, log, mk, snap>>

Fetch(i) ==
    LET q == h[i] IN
    /\ q <= MaxRound /\ Exists(q) # {}
    /\ CommKvFloor <= q /\ q < CommFloor
    /\ h' = [h EXCEPT ![i] = q + 1]
    /\ Settle(i, LocalTarget(q + 1), [c |-> committed[i], o |-> ord[i], s |-> snap[i]], q + 1, {"fetch"})
    /\ UNCHANGED <<made, refs, crnd, cc, committed, log, mk, snap>>

Commit(i, r) ==
    /\ mk[i]
    /\ r > LastC(committed[i])
    /\ Anchor(r) \in Held(i)
    /\ r + 1 < h[i]                              \* it holds round r+1: the votes
    /\ Committable(r)
    /\ LET chain == Chain(r, Lo(committed[i], floor[i]))
           st == OrderChain(i, chain, [c |-> committed[i], l |-> log[i], o |-> ord[i],
                                       s |-> snap[i], lag |-> FALSE])
           due == r > floor[i] + GcDepth           \* order_anchor: gc_due
           target == IF FloorFromCommitted THEN (IF due THEN r - GcDepth ELSE -1)
                     ELSE LocalTarget(h[i])
           evs == (IF "install" \in seen[i] THEN {"afterinstall"} ELSE {})
                  \cup (IF "restart" \in seen[i] THEN {"afterrestart"} ELSE {})
                  \cup (IF "fetch" \in seen[i] THEN {"afterfetch"} ELSE {})
                  \cup (IF st.lag THEN {"chainlag"} ELSE {})
       IN /\ committed' = [committed EXCEPT ![i] = st.c]
          /\ log' = [log EXCEPT ![i] = st.l]
          /\ snap' = [snap EXCEPT ![i] = st.s]
          /\ Settle(i, target, st, h[i], evs)
    /\ UNCHANGED <<made, refs, crnd, cc, h, mk>>

MarkOrdered(i) ==
    /\ ~mk[i]
    /\ committed[i] # <<>>
    /\ Anchor(Last(committed[i])) \in Held(i)
    /\ ord' = [ord EXCEPT ![i] = Mark(i, committed[i], @)]
    /\ mk' = [mk EXCEPT ![i] = TRUE]
    /\ UNCHANGED <<made, refs, crnd, cc, nxt, ownFrom, h, floor, kvf, committed, pc, log, snap, seen>>

Crash(i) ==
    LET s == pc[i]
        held == s # <<>> /\ Anchor(Last(s)) \in Held(i)
    IN
    /\ committed' = [committed EXCEPT ![i] = s]
    /\ ord' = [ord EXCEPT ![i] = IF MarkOnRestore /\ held THEN Mark(i, s, {}) ELSE {}]
    /\ mk' = [mk EXCEPT ![i] = ~MarkOnRestore \/ s = <<>> \/ held]
    /\ ownFrom' = [ownFrom EXCEPT ![i] = IF OwnFromKept THEN @ ELSE 0]
    /\ seen' = Note(i, IF s # <<>> THEN {"restart"} ELSE {})
    /\ UNCHANGED <<made, refs, crnd, cc, nxt, h, floor, kvf, pc, log, snap>>

Install(i) ==
    LET ck == CommSnapRound IN
    /\ ck > 0 /\ ck > LastC(committed[i])
    /\ h[i] < CommKvFloor                        \* range fetch cannot bring round h[i]
    /\ LET sc == PrefixTo(cc, ck)
           sl == RefLog(sc)
           nf == Max(floor[i], Keep(ck))
           raised == nf > floor[i]
           jump == ObsProposes /\ raised /\ nxt[i] <= nf
           hh == Max(h[i], nf)
           anchorHeld == Anchor(ck) \in {v \in AllMade : nf <= v[2] /\ v[2] < hh}
       IN /\ committed' = [committed EXCEPT ![i] = sc]
          /\ pc' = [pc EXCEPT ![i] = sc]
          /\ log' = [log EXCEPT ![i] = sl]
          /\ snap' = [snap EXCEPT ![i] = [round |-> ck, c |-> sc, l |-> sl]]
          /\ floor' = [floor EXCEPT ![i] = nf]
          /\ kvf' = [kvf EXCEPT ![i] = IF raised THEN Max(@, Min(Keep(ck), nf)) ELSE @]
          /\ nxt' = [nxt EXCEPT ![i] = IF jump THEN nf + 1 ELSE @]
          /\ ownFrom' = [ownFrom EXCEPT ![i] = IF jump THEN nf + 1 ELSE @]
          /\ h' = [h EXCEPT ![i] = hh]
          /\ ord' = [ord EXCEPT ![i] =
                        IF MarkOnRestore /\ anchorHeld
                          THEN Reach({Anchor(ck)}, {}, {v \in AllMade : nf <= v[2] /\ v[2] < hh /\ v[2] >= OF(sc)})
                          ELSE {}]
          /\ mk' = [mk EXCEPT ![i] = ~MarkOnRestore \/ anchorHeld]
          /\ seen' = Note(i, {"install"} \cup (IF jump THEN {"jump"} ELSE {}))
    /\ UNCHANGED <<made, refs, crnd, cc>>

Next ==
    \/ CommStep
    \/ \E b \in Byz, r \in Round : ByzMake(b, r)
    \/ \E i \in Obs :
          \/ ObsMake(i) \/ Receive(i) \/ Fetch(i) \/ MarkOrdered(i) \/ Crash(i) \/ Install(i)
          \/ \E r \in AnchorRound : Commit(i, r)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Properties. *)

IsPrefix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, 1, Len(s)) = s
Consistent(s, t) == IsPrefix(s, t) \/ IsPrefix(t, s)

AnchorSeqs == {committed[i] : i \in Obs} \cup {cc}
LogSeqs == {log[i] : i \in Obs} \cup {RefLog(cc)}
Logged(s) == UNION Range(s)

AnchorsConsistent == \A s, t \in AnchorSeqs : Consistent(s, t)
LogsConsistent == \A s, t \in LogSeqs : Consistent(s, t)
NoDoubleOrder ==
    \A i \in Obs : \A k, m \in 1 .. Len(log[i]) : k # m => log[i][k] \cap log[i][m] = {}
LogIsGlobal == \A i \in Obs : log[i] = RefLog(committed[i])
CatchUpSame == \A i \in Obs : committed[i] = cc => log[i] = RefLog(cc)

FloorBelowOrderFloor == \A i \in Obs : floor[i] <= OF(committed[i])
BelowFloorSettled ==
    \A i \in Obs : \A v \in UNION {Logged(s) : s \in LogSeqs} : v[2] < floor[i] => v \in Logged(log[i])
BatchesAboveOrderFloor ==
    \A i \in Obs : Len(log[i]) = Len(committed[i]) =>
        \A k \in 1 .. Len(log[i]) : \A v \in log[i][k] : v[2] >= OF(SubSeq(committed[i], 1, k - 1))
FlagsMatchLog ==
    \A i \in Obs : mk[i] =>
        \A v \in Held(i) : v[2] >= OF(committed[i]) => (v \in ord[i] <=> v \in Logged(log[i]))
PersistedWithLog == \A i \in Obs : pc[i] = committed[i]
OwnChainGapsBelowFloor ==
    \A i \in Obs : \A r \in made[i] : r > 0 => (r - 1 \in made[i] \/ r - 1 <= floor[i])

(* An observer that makes its own vertices can always make the next one   *)
(* once it holds the round below: its own vertex there exists, or the      *)
(* round is below own_from (it jumped over it).  dag_try_advance waits     *)
(* for ever otherwise (advance_wait returns UINT64_MAX).                   *)
OwnChainCanGoOn ==
    ObsProposes => \A i \in Obs : nxt[i] - 1 < ownFrom[i] \/ nxt[i] - 1 \in made[i]

TypeOK ==
    /\ made \in [Node -> SUBSET Round]
    /\ crnd \in 1 .. MaxRound + 1
    /\ cc \in Seq(Round)
    /\ \A i \in Obs :
          /\ floor[i] <= h[i] /\ h[i] <= MaxRound + 1
          /\ kvf[i] <= floor[i]
          /\ ord[i] \subseteq Held(i)
          /\ committed[i] \in Seq(Round) /\ pc[i] \in Seq(Round)
          /\ \A k \in 1 .. Len(log[i]) : log[i][k] \subseteq AllMade

(* Witnesses: each is violated in some state, which shows that the model   *)
(* reaches what it claims to cover (run with Ghost <- GhostOn).            *)
(*   NoFetchCatchUp    an observer fetched a round the committee had       *)
(*                     garbage-collected, then committed up to the         *)
(*                     committee's last anchor;                            *)
(*   NoInstallCatchUp  an observer installed a snapshot, then committed    *)
(*                     an anchor after it;                                 *)
(*   NoRestartCommit   an observer restarted with committed anchors, then  *)
(*                     committed another;                                  *)
(*   NoJumpMade        an observer's rounds jumped past its floor, and it  *)
(*                     made the vertex after the jump;                     *)
(*   NoUnorderedDrop   GC dropped a held vertex that was never ordered;    *)
(*   NoChainLag        a chain commit ordered an anchor whose order floor  *)
(*                     was above d->floor (where OrderFloorFromGcFloor     *)
(*                     differs).                                           *)
NoFetchCatchUp == ~\E i \in Obs : "afterfetch" \in seen[i] /\ committed[i] = cc
NoInstallCatchUp == ~\E i \in Obs : "afterinstall" \in seen[i]
NoRestartCommit == ~\E i \in Obs : "afterrestart" \in seen[i]
NoJumpMade == ~\E i \in Obs : "jumpmade" \in seen[i]
NoUnorderedDrop == ~\E i \in Obs : "dropunordered" \in seen[i]
NoChainLag == ~\E i \in Obs : "chainlag" \in seen[i]
=============================================================================
