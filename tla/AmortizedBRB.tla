---------------------------- MODULE AmortizedBRB ----------------------------
(***************************************************************************)
(* The amortized multi-shot Byzantine reliable broadcast as weft           *)
(* implements it in protocols/brb/amortized.c on top of                    *)
(* protocols/brb/core.c (docs/protocols/brb-amortized.md), for ONE         *)
(* sender's stream of instances 0 .. NInst-1.                              *)
(*                                                                         *)
(*   sender:  PROPOSE(k, m) to all                (amortized_on_request)   *)
(*   on the first PROPOSE(k, m):  ECHO(k, digest(m)), queued; at the end   *)
(*            of the instant (the tick) VOTE(k, echo, READY of the         *)
(*            earliest earlier instance decided and not yet announced)     *)
(*                                                  (on_propose, tick)     *)
(*   on EchoQuorum ECHO(d) or ReadyQuorum READY(d) for k: READY(k, d),     *)
(*            once; announced on the next VOTE of the stream, or after     *)
(*            flush_ms in a standalone VOTE(k+1, nil, READY(k, d))         *)
(*                                          (check_thresholds, ready,      *)
(*                                           pending_add, flush)           *)
(*   on OptimisticQuorum (= n) ECHO(d):   deliver d  (optimistic path)     *)
(*   on DeliverQuorum (= 2f+1) READY(d):  deliver d  (fallback path)       *)
(*   missing the payload of the digest to deliver: PULL it from a node     *)
(*            that echoed d (none: that readied d); accept a PAYLOAD only  *)
(*            if its digest is d          (try_deliver, pull_next,         *)
(*                                         handle_pull, handle_payload)    *)
(*                                                                         *)
(* Faults.  The Byzantine nodes are the variable byz, chosen in Init among *)
(* ByzSets (AllByzSets: every set of F nodes, with or without the sender)  *)
(* and never changed.  The per-node variables range over all of Node; the  *)
(* entries of Byzantine nodes stay at their initial values.                *)
(*                                                                         *)
(* A payload is abstracted to its digest (a value; no collisions), so a    *)
(* node "holds the payload of d" when its data field is d.                 *)
(*                                                                         *)
(* State of an honest node i.  For each instance k, st[i][k] is what the   *)
(* open struct am_inst keeps: the ECHO and READY tallies (e, r: voter ->   *)
(* digest or Nil, one vote per voter per kind as brb_tally_add, i's own    *)
(* votes included), the payload i holds (data), the digest a quorum named  *)
(* (tgt, "targeted"), what i delivered (del) and how many times (nd,      *)
(* saturating at 2, so that a second delivery is visible).  Delivery frees *)
(* the instance (brb_deliver), so the tallies, data and target are reset   *)
(* and only del and nd remain: the spec forgets exactly what the C code    *)
(* forgets, which also merges states.  What outlives the instance is kept  *)
(* apart:                                                                  *)
(* i's own votes myEcho / myReady (persisted with brb_vote_put; kv "E" for *)
(* delivered instances) and the stream's announcement state: voted[i] (the *)
(* instances whose VOTE went out), ride[i][k] (the instance whose READY    *)
(* rode on VOTE(k), or Nil) and flushed[i] (READYs sent standalone).  The  *)
(* READYs decided and not yet announced (struct am_stream.pending) and the *)
(* VOTEs waiting for the tick (am_stream.due) follow from these.           *)
(*                                                                         *)
(* Network.  Links are authenticated and, between honest nodes, reliable.  *)
(* An honest node's messages are determined by its state: VOTE(k) of j is  *)
(* <<myEcho[j][k], READY(ride[j][k], myReady[j][ride[j][k]])>> once k is   *)
(* in voted[j]; a standalone READY(k) once k is in flushed[j]; the honest  *)
(* sender's PROPOSE(k) is its own echo myEcho[Sender][k].  Each stays      *)
(* receivable until the receiver has counted it.  A receiver handles an    *)
(* honest VOTE in one callback (handle_vote): the echo part for k, then    *)
(* the READY part for ride[j][k], each ignored when its instance is        *)
(* delivered or the voter was counted already.  A Byzantine node may send  *)
(* anything: any ECHO and any READY for any instance and digest (a VOTE    *)
(* with both parts is the two parts received back to back), any PROPOSE if *)
(* it is the sender (several, different ones to different nodes), and any  *)
(* PAYLOAD (only one matching the target is accepted).                     *)
(*                                                                         *)
(* Resends (if Resend, as coded).  Every resend_ms the core's resend hook  *)
(* sends an open instance's VOTE(k) again (its ride is whatever READY is   *)
(* pending then, or none) and a standalone READY for every instance the   *)
(* node readied; peer_lacks replays, for a delivered instance, an          *)
(* echo-only VOTE(k) and a standalone READY(k) to a peer that lacks it.    *)
(* So an honest j's READY(k) can reach anyone standalone once j readied k  *)
(* (RecvStandalone), and its ECHO(k) alone once its VOTE(k) went out       *)
(* (RecvEchoOnly); what a resent VOTE carries beyond that is one of these  *)
(* two, received back to back.  The READYs a resent VOTE takes with it     *)
(* leave the stream's pending set (ResendAnnounce).                        *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Node,       \* the committee (model values); N = |Node|
    F,          \* fault bound of the thresholds (c->f)
    Sender,     \* the stream's sender, in Node
    Value,      \* payloads (= their digests)
    Nil,        \* "none", a model value not in Value
    NInst,      \* number of instances of the stream: seqs 0 .. NInst-1
    Optimistic, \* the `optimistic` parameter (TRUE: the n-echo path is on)
    Flush,      \* TRUE: a pending READY is flushed standalone (flush_ms)
    Resend,     \* TRUE: resends and peer_lacks replays (as coded)
    ByzSets     \* the sets the Byzantine nodes are chosen from (AllByzSets)

N == Cardinality(Node)
Inst == 0 .. NInst - 1

(* Every set of exactly F nodes: the sender Byzantine or not. *)
AllByzSets == {B \in SUBSET Node : Cardinality(B) = F}

ASSUME /\ F \in Nat /\ N >= 3 * F + 1
       /\ Sender \in Node
       /\ \A B \in ByzSets : B \subseteq Node /\ Cardinality(B) <= F
       /\ Nil \notin Value
       /\ NInst \in Nat \ {0}
       /\ Optimistic \in BOOLEAN /\ Flush \in BOOLEAN /\ Resend \in BOOLEAN

(* Thresholds: brb_core_init (core.c) and try_deliver (amortized.c).  The *)
(* teeth models override one of them in their .cfg.                        *)
EchoQuorum       == (N + F + 2) \div 2     \* ceil((n + f + 1) / 2)
ReadyQuorum      == F + 1                  \* READY amplification
DeliverQuorum    == 2 * F + 1              \* fallback delivery
OptimisticQuorum == N                      \* brb_tally_reached(ECHO, c->n)

\* Broken thresholds of the teeth models (AmortizedBroken*.cfg).
ReadyQuorumTooLow      == F                \* amplify after f READYs
OptimisticQuorumTooLow == 2 * F + 1        \* "optimistic" on 2f+1 echoes

(* brb_deliver records the seq in the delivered set and frees the        *)
(* instance, so brb_inst_get ignores later input; NeverClose: it does     *)
(* neither, the instance keeps taking input with its state.               *)
CloseOnDeliver == TRUE
NeverClose     == FALSE

(* The values an honest sender may broadcast (a liveness model may fix   *)
(* one: values are symmetric).                                            *)
BroadcastValue == Value

VARIABLES
    byz,      \* the Byzantine nodes (chosen in Init, constant afterwards)
    st,       \* st[i][k]: honest i's instance k (tallies, data, target, delivered)
    myEcho,   \* myEcho[i][k]: i's ECHO digest for k, or Nil (persisted vote)
    myReady,  \* myReady[i][k]: i's READY digest for k, or Nil (persisted vote)
    voted,    \* voted[i]: instances whose VOTE i has multicast (tick)
    ride,     \* ride[i][k]: the instance whose READY rode on i's VOTE(k), or Nil
    flushed   \* flushed[i]: instances whose READY i sent standalone (flush)

vars == <<byz, st, myEcho, myReady, voted, ride, flushed>>

Honest == Node \ byz
Vote == Value \cup {Nil}
NilRow == [j \in Node |-> Nil]
Fresh == [e |-> NilRow, r |-> NilRow, data |-> Nil, tgt |-> Nil, del |-> {}, nd |-> 0]

TypeOK ==
    /\ byz \in ByzSets
    /\ st \in [Node -> [Inst -> [e : [Node -> Vote], r : [Node -> Vote],
                                 data : Vote, tgt : Vote, del : SUBSET Value,
                                 nd : 0..2]]]
    /\ myEcho \in [Node -> [Inst -> Vote]]
    /\ myReady \in [Node -> [Inst -> Vote]]
    /\ voted \in [Node -> SUBSET Inst]
    /\ ride \in [Node -> [Inst -> Inst \cup {Nil}]]
    /\ flushed \in [Node -> SUBSET Inst]

Init ==
    /\ byz \in ByzSets
    /\ st = [i \in Node |-> [k \in Inst |-> Fresh]]
    /\ myEcho = [i \in Node |-> [k \in Inst |-> Nil]]
    /\ myReady = [i \in Node |-> [k \in Inst |-> Nil]]
    /\ voted = [i \in Node |-> {}]
    /\ ride = [i \in Node |-> [k \in Inst |-> Nil]]
    /\ flushed = [i \in Node |-> {}]

(* The digests a Byzantine node may vote (ECHO or READY) for instance k:   *)
(* any.  Models that need a smaller Byzantine node to fit replace this     *)
(* with HelpfulByzVote (with an honest sender: the sender's digest or      *)
(* nothing; it still withholds, delays and picks its receivers, and lets   *)
(* the optimistic path fire) or SilentByzVote (nothing).  A vote for       *)
(* another digest only fills the voter's slot, which under correct         *)
(* thresholds acts as silence; the one-instance safety models check that   *)
(* with a Byzantine node that votes anything.                              *)
ByzVote(k) == Value
HelpfulByzVote(k) ==
    IF Sender \in Honest /\ myEcho[Sender][k] # Nil THEN {myEcho[Sender][k]} ELSE {}
SilentByzVote(k) == {}

Min(S) == CHOOSE x \in S : \A y \in S : x <= y

(* brb_tally_count *)
Count(row, v) == Cardinality({j \in Node : row[j] = v})

(* The instance is open: brb_inst_get returns it (not delivered). *)
Open(s) == ~CloseOnDeliver \/ s.nd = 0

(* The stream's announcement state (struct am_stream). *)
Announced(i, k) == k \in flushed[i] \/ \E k2 \in voted[i] : ride[i][k2] = k
Pending(i) == {k \in Inst : myReady[i][k] # Nil /\ ~Announced(i, k)}
Due(i) == {k \in Inst : myEcho[i][k] # Nil /\ k \notin voted[i]}

(***************************************************************************)
(* The per-instance steps of one callback, as operators on the instance    *)
(* record s of honest i and i's READY mr for it; each returns the set of   *)
(* possible <<s', mr'>> (more than one only where the C code takes the     *)
(* first qualifying digest in tally order: the spec allows any, a superset *)
(* of the C behaviours; in correct runs there is only one).                *)
(***************************************************************************)

(* brb_deliver: the upcall, counted, then the instance is freed. *)
Deliver(s, d) ==
    LET nd == IF s.nd < 2 THEN s.nd + 1 ELSE 2 IN
    IF CloseOnDeliver THEN [Fresh EXCEPT !.del = s.del \cup {d}, !.nd = nd]
    ELSE [s EXCEPT !.del = @ \cup {d}, !.nd = nd]

(* The part of try_deliver after a target is set: deliver when we hold the *)
(* payload; else drop the payload we hold (nobody will deliver it) and     *)
(* pull (pulling is "targeted and data = Nil").                            *)
Settle(s) == IF s.data = s.tgt THEN Deliver(s, s.tgt) ELSE [s EXCEPT !.data = Nil]

(* try_deliver: once untargeted, target the digest with OptimisticQuorum  *)
(* echoes (if the optimistic path is on), else one with DeliverQuorum      *)
(* READYs; then Settle.                                                    *)
TryDeliver(s) ==
    IF s.tgt # Nil THEN {Settle(s)}
    ELSE LET OQ == IF Optimistic THEN {v \in Value : Count(s.e, v) >= OptimisticQuorum} ELSE {}
             DQ == {v \in Value : Count(s.r, v) >= DeliverQuorum}
             T  == IF OQ # {} THEN OQ ELSE DQ
         IN IF T = {} THEN {s} ELSE {Settle([s EXCEPT !.tgt = d]) : d \in T}

(* check_thresholds: ready() for a digest with an echo quorum, else one    *)
(* with ReadyQuorum READYs (once: mr = Nil), counting i's own READY and    *)
(* making it pending (pending_add); then try_deliver.                      *)
CheckThresholds(i, s, mr) ==
    LET EQ   == {v \in Value : Count(s.e, v) >= EchoQuorum}
        RQ   == {v \in Value : Count(s.r, v) >= ReadyQuorum}
        Cand == IF mr # Nil THEN {} ELSE IF EQ # {} THEN EQ ELSE RQ
        R    == IF Cand = {} THEN {<<s, mr>>}
                ELSE {<<[s EXCEPT !.r[i] = v], v>> : v \in Cand}
    IN UNION {{<<s2, p[2]>> : s2 \in TryDeliver(p[1])} : p \in R}

(* Sets instance k (and, when k2 # Nil, instance k2) of honest i from the *)
(* pairs a (b) and leaves the other variables of the stream alone.        *)
Update(i, k, a, k2, b) ==
    /\ st' = [st EXCEPT ![i] = [x \in Inst |-> IF x = k THEN a[1]
                                               ELSE IF x = k2 THEN b[1] ELSE st[i][x]]]
    /\ myReady' = [myReady EXCEPT ![i] = [x \in Inst |-> IF x = k THEN a[2]
                                               ELSE IF x = k2 THEN b[2] ELSE myReady[i][x]]]

(* Counting one ECHO / READY of voter j for instance k at i, then         *)
(* check_thresholds (count_vote returns 0 for a counted voter: nothing).  *)
EchoSteps(i, k, j, v) ==
    CheckThresholds(i, [st[i][k] EXCEPT !.e[j] = v], myReady[i][k])
ReadySteps(i, k, j, v) ==
    CheckThresholds(i, [st[i][k] EXCEPT !.r[j] = v], myReady[i][k])

(***************************************************************************)
(* on_propose at honest i for PROPOSE(k, v) (amortized_on_message, type    *)
(* PROPOSE, from == sender checked; at the honest sender the same code     *)
(* runs from amortized_on_request).  First PROPOSE: keep the payload       *)
(* (unless a different target is set), persist and count the ECHO, queue   *)
(* the VOTE for the tick (vote_later: Due), check_thresholds.  A later one *)
(* only supplies a missing payload that can be delivered.                  *)
(***************************************************************************)
(* Whether PROPOSE(k, v) changes anything at i (else on_propose returns). *)
CanPropose(i, k, v) ==
    LET s == st[i][k] IN
    /\ Open(s)
    /\ \/ myEcho[i][k] = Nil
       \/ /\ (IF s.tgt # Nil THEN v = s.tgt ELSE v = myEcho[i][k])
          /\ s.data = Nil

OnPropose(i, k, v) ==
    LET s == st[i][k] IN
    /\ CanPropose(i, k, v)
    /\ IF myEcho[i][k] = Nil
         THEN LET s1 == IF s.tgt = Nil \/ v = s.tgt THEN [s EXCEPT !.data = v] ELSE s
              IN /\ myEcho' = [myEcho EXCEPT ![i][k] = v]
                 /\ \E a \in CheckThresholds(i, [s1 EXCEPT !.e[i] = v], myReady[i][k]) :
                        Update(i, k, a, Nil, a)
         ELSE /\ \E s2 \in TryDeliver([s EXCEPT !.data = v]) :
                    Update(i, k, <<s2, myReady[i][k]>>, Nil, <<s2, myReady[i][k]>>)
              /\ UNCHANGED myEcho
    /\ UNCHANGED <<byz, voted, ride, flushed>>

(* amortized_on_request at an honest sender: its next seq (brb_own_begin  *)
(* allocates them in order), keep_data, send_propose, on_propose.         *)
NextSeq == Min({k \in Inst : myEcho[Sender][k] = Nil})

Broadcast(v) ==
    /\ Sender \in Honest
    /\ \E k \in Inst : myEcho[Sender][k] = Nil
    /\ OnPropose(Sender, NextSeq, v)

HonestProposeAvail(i, k) ==
    /\ i # Sender
    /\ Sender \in Honest
    /\ myEcho[Sender][k] # Nil

RecvPropose(i, k) ==
    /\ i \in Honest
    /\ HonestProposeAvail(i, k)
    /\ OnPropose(i, k, myEcho[Sender][k])

ByzPropose(i, k, v) ==
    /\ i \in Honest
    /\ Sender \in byz
    /\ i # Sender
    /\ OnPropose(i, k, v)

(***************************************************************************)
(* tick(): the queued VOTEs of the stream go out in seq order, each        *)
(* carrying the earliest pending READY below its seq (send_vote,           *)
(* pending_take).  Rides(D, P) is the ride of each VOTE of D.              *)
(***************************************************************************)
RECURSIVE Rides(_, _)
Rides(D, P) ==
    IF D = {} THEN [x \in {} |-> Nil]
    ELSE LET k     == Min(D)
             below == {p \in P : p < k}
             t     == IF below = {} THEN Nil ELSE Min(below)
         IN (k :> t) @@ Rides(D \ {k}, P \ {t})

Tick(i) ==
    /\ Due(i) # {}
    /\ LET R == Rides(Due(i), Pending(i)) IN
       ride' = [ride EXCEPT ![i] = [k \in Inst |-> IF k \in DOMAIN R THEN R[k] ELSE ride[i][k]]]
    /\ voted' = [voted EXCEPT ![i] = @ \cup Due(i)]
    /\ UNCHANGED <<byz, st, myEcho, myReady, flushed>>

(* flush(): the flush timer (armed while a READY is pending) fires: every *)
(* pending READY goes out in a standalone VOTE(k+1, nil, READY(k, d)).    *)
DoFlush(i) ==
    /\ Flush
    /\ Pending(i) # {}
    /\ flushed' = [flushed EXCEPT ![i] = @ \cup Pending(i)]
    /\ UNCHANGED <<byz, st, myEcho, myReady, voted, ride>>

(* A resend (Resend): the VOTEs the resend hook sends again take pending   *)
(* READYs with them (send_vote's pending_take), some of them or all: those *)
(* are announced, the others stay pending.  (Any honest node's READY may   *)
(* reach anyone standalone anyway: StandaloneSent.)  Not a fair step: the  *)
(* timer only decides when READYs leave, which DoFlush also does.          *)
ResendAnnounce(i) ==
    /\ Resend
    /\ \E S \in SUBSET Pending(i) :
          /\ S # {}
          /\ flushed' = [flushed EXCEPT ![i] = @ \cup S]
    /\ UNCHANGED <<byz, st, myEcho, myReady, voted, ride>>

(***************************************************************************)
(* handle_vote at honest i for honest j's VOTE(k): the echo part for k,    *)
(* then the READY part for ride[j][k]; each part counts only when its      *)
(* instance is open at i and j's vote of that kind is not counted yet.     *)
(* The step is enabled only when some part counts (else it is a no-op).    *)
(***************************************************************************)
NewEchoPart(i, j, k) == Open(st[i][k]) /\ st[i][k].e[j] = Nil
NewReadyPart(i, j, k) ==
    ride[j][k] # Nil /\ Open(st[i][ride[j][k]]) /\ st[i][ride[j][k]].r[j] = Nil
CanRecvVote(i, j, k) ==
    j # i /\ k \in voted[j] /\ (NewEchoPart(i, j, k) \/ NewReadyPart(i, j, k))

RecvVote(i, j, k) ==
    /\ CanRecvVote(i, j, k)
    /\ LET k2   == ride[j][k]
           newE == NewEchoPart(i, j, k)
           newR == NewReadyPart(i, j, k)
           Same(x) == {<<st[i][x], myReady[i][x]>>}
       IN /\ \E a \in (IF newE THEN EchoSteps(i, k, j, myEcho[j][k]) ELSE Same(k)) :
             \E b \in (IF newR THEN ReadySteps(i, k2, j, myReady[j][k2]) ELSE {a}) :
                Update(i, k, a, IF newR THEN k2 ELSE Nil, b)
    /\ UNCHANGED <<byz, myEcho, voted, ride, flushed>>

(* handle_vote for honest j's echo-only VOTE(k) (a resend without a ride, *)
(* a peer_lacks replay): the echo part alone.                            *)
RecvEchoOnly(i, j, k) ==
    /\ Resend
    /\ j # i /\ k \in voted[j] /\ NewEchoPart(i, j, k)
    /\ \E a \in EchoSteps(i, k, j, myEcho[j][k]) : Update(i, k, a, Nil, a)
    /\ UNCHANGED <<byz, myEcho, voted, ride, flushed>>

(* handle_vote for honest j's standalone VOTE(k+1, nil, READY(k, d)):     *)
(* flushed, or (Resend) resent or replayed once j readied k.             *)
StandaloneSent(j, k) == k \in flushed[j] \/ (Resend /\ myReady[j][k] # Nil)
CanRecvStandalone(i, j, k) ==
    j # i /\ StandaloneSent(j, k) /\ Open(st[i][k]) /\ st[i][k].r[j] = Nil

RecvStandalone(i, j, k) ==
    /\ CanRecvStandalone(i, j, k)
    /\ \E a \in ReadySteps(i, k, j, myReady[j][k]) : Update(i, k, a, Nil, a)
    /\ UNCHANGED <<byz, myEcho, voted, ride, flushed>>

(* handle_vote for a Byzantine j's ECHO / READY part. *)
ByzEcho(i, j, k, v) ==
    /\ j \in byz
    /\ Open(st[i][k])
    /\ st[i][k].e[j] = Nil
    /\ \E a \in EchoSteps(i, k, j, v) : Update(i, k, a, Nil, a)
    /\ UNCHANGED <<byz, myEcho, voted, ride, flushed>>

ByzReady(i, j, k, v) ==
    /\ j \in byz
    /\ Open(st[i][k])
    /\ st[i][k].r[j] = Nil
    /\ \E a \in ReadySteps(i, k, j, v) : Update(i, k, a, Nil, a)
    /\ UNCHANGED <<byz, myEcho, voted, ride, flushed>>

(***************************************************************************)
(* Pulls.  pull_next asks, one at a time, the nodes i counted as echoing   *)
(* the target (none besides i: those that readied it), from a rotating     *)
(* cursor, the next one every pull_ms; so any of them may be the one that  *)
(* answers.  handle_pull at an honest j answers when it holds the payload: *)
(* the open instance's data, or the payload the core retains after         *)
(* delivery.  A Byzantine j may answer (with the right payload: any other  *)
(* is rejected by handle_payload) or not.  handle_payload keeps the        *)
(* payload and try_deliver delivers.  PULL and PAYLOAD are one step here.  *)
(***************************************************************************)
PullFrom(i, s) ==
    LET E == {j \in Node \ {i} : s.e[j] = s.tgt}
    IN IF E # {} THEN E ELSE {j \in Node \ {i} : s.r[j] = s.tgt}

Serves(j, k, d) ==
    \/ j \in byz
    \/ j \in Honest /\ (st[j][k].data = d \/ d \in st[j][k].del)

CanPull(i, k, j) ==
    LET s == st[i][k] IN
    /\ Open(s)
    /\ s.tgt # Nil /\ s.data = Nil
    /\ j \in PullFrom(i, s)
    /\ Serves(j, k, s.tgt)

Pull(i, k, j) ==
    /\ CanPull(i, k, j)
    /\ st' = [st EXCEPT ![i][k] = Deliver(st[i][k], st[i][k].tgt)]
    /\ UNCHANGED <<byz, myEcho, myReady, voted, ride, flushed>>

(***************************************************************************)
(* Steps of honest nodes that take input from honest nodes, or timers.     *)
(***************************************************************************)
HonestStep(i) ==
    \/ Tick(i)
    \/ DoFlush(i)
    \/ \E k \in Inst :
          \/ RecvPropose(i, k)
          \/ \E j \in Honest :
                \/ RecvVote(i, j, k) \/ RecvEchoOnly(i, j, k)
                \/ RecvStandalone(i, j, k) \/ Pull(i, k, j)

ByzInput(i) ==
    \E k \in Inst :
        \/ \E v \in Value : ByzPropose(i, k, v)
        \/ \E j \in byz :
              \/ \E v \in ByzVote(k) : ByzEcho(i, j, k, v) \/ ByzReady(i, j, k, v)
              \/ Pull(i, k, j)

Next ==
    \/ \E v \in BroadcastValue : Broadcast(v)
    \/ \E i \in Honest : HonestStep(i) \/ ByzInput(i) \/ ResendAnnounce(i)

(***************************************************************************)
(* Fairness: honest steps that stay enabled are eventually taken (links    *)
(* between honest nodes eventually deliver, timers fire).  Nothing forces  *)
(* the sender to broadcast or anyone to take a Byzantine message.  As in   *)
(* BrachaBRB, WF of the disjunction is equivalent to WF of each step:      *)
(* every non-stuttering step fills a tally slot, an own vote, data, an     *)
(* announcement, or delivers (after which the instance takes no input),    *)
(* so every behaviour has finitely many non-stuttering steps.              *)
(***************************************************************************)
HonestNext == \E i \in Honest : HonestStep(i)
Fairness == WF_vars(HonestNext)

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Properties, per instance. *)

Delivered(i, k) == st[i][k].del

Agreement ==
    \A k \in Inst : \A i, j \in Honest :
        \A v \in Delivered(i, k), w \in Delivered(j, k) : v = w

(* At most one delivery per instance; with an honest sender only what it *)
(* broadcast in that instance (its PROPOSE is its own echo).             *)
Integrity ==
    \A k \in Inst : \A i \in Honest :
        /\ st[i][k].nd <= 1
        /\ Sender \in Honest => Delivered(i, k) \subseteq {myEcho[Sender][k]}

(* The lemmas of docs/protocols/brb-amortized.md: one digest per echo    *)
(* quorum (in the open tallies), and all honest READYs of an instance    *)
(* agree.                                                                *)
EchoQuorumUnique ==
    \A k \in Inst : \A i, j \in Honest : \A v, w \in Value :
        (Count(st[i][k].e, v) >= EchoQuorum /\ Count(st[j][k].e, w) >= EchoQuorum) => v = w
HonestReadyUnique ==
    \A k \in Inst : \A i, j \in Honest :
        (myReady[i][k] # Nil /\ myReady[j][k] # Nil) => myReady[i][k] = myReady[j][k]

Validity ==
    \A k \in Inst, v \in Value :
        (Sender \notin byz /\ myEcho[Sender][k] = v) ~>
            (\A i \in Node \ byz : v \in Delivered(i, k))

Totality ==
    \A k \in Inst :
        (\E i \in Node \ byz : Delivered(i, k) # {}) ~>
            (\A i \in Node \ byz : Delivered(i, k) # {})

(* The quiescence forms (see BrachaBRB): behaviours are finite, so under  *)
(* Fairness every behaviour ends stuttering in a state where no honest    *)
(* step is enabled, and every such reachable state ends a fair behaviour; *)
(* premises and conclusions are stable.                                   *)
Quiescent == ~ENABLED HonestNext

(* The same, spelled out from the guards of the honest steps (every step  *)
(* is enabled exactly when its guard holds: CheckThresholds and           *)
(* TryDeliver never return the empty set).  Much cheaper for TLC than     *)
(* ENABLED; QuiescentSound checks the two agree.                          *)
HonestCanStep(i) ==
    \/ Due(i) # {}
    \/ Flush /\ Pending(i) # {}
    \/ \E k \in Inst :
          \/ HonestProposeAvail(i, k) /\ CanPropose(i, k, myEcho[Sender][k])
          \/ \E j \in Honest :   \* (RecvEchoOnly is enabled only where RecvVote is)
                CanRecvVote(i, j, k) \/ CanRecvStandalone(i, j, k) \/ CanPull(i, k, j)
Idle == ~\E i \in Honest : HonestCanStep(i)
QuiescentSound == Quiescent = Idle

ValidityAtQuiescence ==
    (Idle /\ Sender \in Honest) =>
        \A k \in Inst : myEcho[Sender][k] # Nil =>
            \A i \in Honest : myEcho[Sender][k] \in Delivered(i, k)

TotalityAtQuiescence ==
    Idle =>
        \A k \in Inst : (\E i \in Honest : Delivered(i, k) # {}) =>
            \A i \in Honest : Delivered(i, k) # {}

(* Symmetry for the safety models: values and non-senders (byz is a     *)
(* variable, permuted with them).  Instances are not symmetric (READYs    *)
(* ride on later ones).                                                  *)
Symmetry == Permutations(Value) \cup Permutations(Node \ {Sender})
=============================================================================
