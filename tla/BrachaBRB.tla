------------------------------ MODULE BrachaBRB ------------------------------
(***************************************************************************)
(* Bracha's Byzantine reliable broadcast (1987) as weft implements it in   *)
(* protocols/brb/bracha.c on top of protocols/brb/core.c, for ONE instance *)
(* (sender, seq).                                                          *)
(*                                                                         *)
(*   sender:  SEND(m) to all                       (bracha_on_request)     *)
(*   on the first SEND(m) from the sender:  ECHO(m) to all        (echo)   *)
(*   on EchoQuorum ECHO(m) or ReadyQuorum READY(m): READY(m), once (ready) *)
(*   on DeliverQuorum READY(m):             deliver m       (try_deliver)  *)
(*                                                                         *)
(* with EchoQuorum = ceil((N+F+1)/2), ReadyQuorum = F+1 and DeliverQuorum  *)
(* = 2F+1, the values brb_core_init computes.                              *)
(*                                                                         *)
(* State.  For every honest node i the spec keeps i's two tallies exactly  *)
(* as struct brb_tally does: echo[i][j] / ready[i][j] is the ECHO / READY  *)
(* vote of voter j that i has counted (Nil: none yet).  One vote per voter *)
(* per kind: brb_tally_add ignores a voter's second vote, whatever value   *)
(* it names, so a counted vote never changes.  i's own votes live in the   *)
(* same tallies (echo[i][i], ready[i][i]), as echo() and ready() add them  *)
(* with brb_tally_add(c, ..., c->self, ...); "echoed" and "readied" of     *)
(* struct bracha_inst are echo[i][i] # Nil and ready[i][i] # Nil.          *)
(*                                                                         *)
(* Faults.  The Byzantine nodes are the variable byz, chosen in Init among *)
(* ByzSets (the models use AllByzSets: every set of F nodes, with or       *)
(* without the sender) and never changed, so one model covers an honest    *)
(* and a Byzantine sender.  The per-node variables range over all of Node; *)
(* the entries of Byzantine nodes stay at their initial values.            *)
(*                                                                         *)
(* Network.  Links are authenticated and, for messages between honest     *)
(* nodes, reliable; a message is never forged or altered.  An honest node  *)
(* j multicasts exactly its own votes, so "ECHO(v) from j is in flight to  *)
(* i" is echo[j][j] = v and needs no message set; it stays receivable      *)
(* until i counts it.  A Byzantine node may send anything at any time:     *)
(* every ECHO(v) and READY(v) from it, for every v in Value, is always     *)
(* available to every honest node, and a Byzantine sender may SEND any     *)
(* value to any node (different values to different nodes, several to the *)
(* same node).  Since each receiver counts one vote per Byzantine voter    *)
(* per kind and chooses freely when (and whether) to take one, this covers *)
(* every behaviour of an equivocating, delaying or silent Byzantine node.  *)
(* A non-sender cannot SEND: bracha_on_message rejects a SEND whose link   *)
(* sender is not the instance's sender.                                    *)
(*                                                                         *)
(* Steps.  Each action is one callback of the C code, atomic as the host   *)
(* runs it: count the input, then check_thresholds (READY, then deliver).  *)
(* After delivery brb_inst_get answers "already delivered" for the         *)
(* instance, so a node that delivered ignores every further message.       *)
(* Deliveries are counted (ndel), so a second one breaks Integrity.        *)
(*                                                                         *)
(* Abstracted away (tla/README.md, "BrachaBRB", has the argument): payload *)
(* bytes (a value is its digest; every vote carries its payload, so the    *)
(* candidate ready() and try_deliver() look up is always there); the core's*)
(* DELIVERED catch-up and peer_lacks (Totality holds without them, and     *)
(* with them a node only delivers on f+1 matching reports, one honest);    *)
(* restarts (EchoBRB models the persisted-vote checks they rely on);       *)
(* message loss and resends (reliable links between honest nodes); other   *)
(* instances and the window.                                               *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Node,     \* the committee (model values); N = |Node|
    F,        \* fault bound the thresholds are computed for (c->f)
    Sender,   \* the instance's sender, in Node
    Value,    \* the payloads (abstracted: a payload is its digest)
    Nil,      \* "no vote", a model value not in Value
    ByzSets,  \* the sets the Byzantine nodes are chosen from (AllByzSets)
    MaxRestarts \* how many crash-recoveries of honest nodes (0: none)

N == Cardinality(Node)

(* Every set of exactly F nodes: the sender Byzantine or not. *)
AllByzSets == {B \in SUBSET Node : Cardinality(B) = F}

ASSUME /\ F \in Nat /\ N >= 3 * F + 1
       /\ Sender \in Node
       /\ Nil \notin Value
       /\ \A B \in ByzSets : B \subseteq Node /\ Cardinality(B) <= F
       /\ MaxRestarts \in Nat

(* Thresholds of brb_core_init (protocols/brb/core.c).  The teeth models *)
(* override one of them in their .cfg with a deliberately wrong value.   *)
EchoQuorum    == (N + F + 2) \div 2        \* ceil((n + f + 1) / 2)
ReadyQuorum   == F + 1                     \* READY amplification
DeliverQuorum == 2 * F + 1

(* The mutations of the teeth models (BrachaBroken*.cfg), each a bug the *)
(* C code could have; the spec's defaults are the C code.                *)
ReadyQuorumTooLow    == F                  \* amplify after f READYs
EchoQuorumTooLow     == F + 1              \* a "quorum" of f+1 echoes
DeliverQuorumTooHigh == N                  \* wait for every node's READY

(* echo() and ready() consult the persisted vote (brb_vote_get) before    *)
(* voting; NoVoteCheck: they do not, so a restarted node votes for        *)
(* whatever comes first.                                                  *)
CheckVote   == TRUE
NoVoteCheck == FALSE

(* brb_deliver records the seq in the delivered set, so brb_inst_get      *)
(* ignores later input; NeverClose: it does not, the instance keeps       *)
(* taking input with its state.                                           *)
CloseOnDeliver == TRUE
NeverClose     == FALSE

(* The values an honest sender may be asked to broadcast.  Any value; a *)
(* liveness model may fix one in its .cfg: values are symmetric, so no   *)
(* generality is lost, and the state space halves.                       *)
BroadcastValue == Value

VARIABLES
    byz,    \* the Byzantine nodes (chosen in Init, constant afterwards)
    echo,   \* echo[i][j]: ECHO vote of j counted by honest i, or Nil
    ready,  \* ready[i][j]: READY vote of j counted by honest i, or Nil
    esent,  \* esent[i]: the values honest i ever said ECHO for (kv vote)
    rsent,  \* rsent[i]: the values honest i ever said READY for (kv vote)
    dlv,    \* dlv[i]: the values honest i delivered (the upcall)
    ndel,   \* ndel[i]: how many times honest i delivered (2: "2 or more")
    crashes \* how many crash-recoveries happened (at most MaxRestarts)

vars == <<byz, echo, ready, esent, rsent, dlv, ndel, crashes>>

Honest == Node \ byz
Vote == Value \cup {Nil}
NilRow == [j \in Node |-> Nil]

TypeOK ==
    /\ byz \in ByzSets
    /\ echo \in [Node -> [Node -> Vote]]
    /\ ready \in [Node -> [Node -> Vote]]
    /\ esent \in [Node -> SUBSET Value]
    /\ rsent \in [Node -> SUBSET Value]
    /\ dlv \in [Node -> SUBSET Value]
    /\ ndel \in [Node -> 0..2]
    /\ crashes \in 0..MaxRestarts

Init ==
    /\ byz \in ByzSets
    /\ echo = [i \in Node |-> NilRow]
    /\ ready = [i \in Node |-> NilRow]
    /\ esent = [i \in Node |-> {}]
    /\ rsent = [i \in Node |-> {}]
    /\ dlv = [i \in Node |-> {}]
    /\ ndel = [i \in Node |-> 0]
    /\ crashes = 0

(* brb_tally_count: votes for v in one tally row. *)
Count(row, v) == Cardinality({j \in Node : row[j] = v})

(* Is this message available to i?  From an honest node: a vote it cast   *)
(* (it multicast it, and resends it).  From a Byzantine node: any value.  *)
(* An honest sender's SEND is its own ECHO.                               *)
SendAvail(v)     == Sender \in byz \/ v \in esent[Sender]
EchoAvail(j, v)  == j \in byz \/ v \in esent[j]
ReadyAvail(j, v) == j \in byz \/ v \in rsent[j]

(* An honest node handles input only while the instance is open. *)
Open(i) == ~CloseOnDeliver \/ ndel[i] = 0

(* A vote i may cast now for v: never against its persisted one. *)
MayVote(sent, v) == CheckVote => sent \subseteq {v}

(***************************************************************************)
(* check_thresholds(c, i) after i's tallies became e (echo) and r (ready). *)
(* ready(): if i has not said READY in this run (r[i] = Nil), READY(d) for *)
(* a digest d with an echo quorum or, failing that, one with ReadyQuorum   *)
(* READYs, unless i said READY for another digest before a restart; i's    *)
(* READY is added to its own tally.  try_deliver(): deliver a digest with  *)
(* DeliverQuorum READYs.  The C code takes the first such digest in tally  *)
(* order (order of first arrival); the spec lets it be any of them, a      *)
(* superset of the C behaviours (in correct runs there is only one).       *)
(***************************************************************************)
ReadyChoices(i, e, r) ==
    LET EQ   == {v \in Value : Count(e, v) >= EchoQuorum}
        RQ   == {v \in Value : Count(r, v) >= ReadyQuorum}
        Cand == IF r[i] # Nil THEN {} ELSE IF EQ # {} THEN EQ ELSE RQ
        Ok   == {v \in Cand : MayVote(rsent[i], v)}
    IN IF Ok = {} THEN {r} ELSE {[r EXCEPT ![i] = v] : v \in Ok}

CheckThresholds(i, e, r) ==
    \E r2 \in ReadyChoices(i, e, r) :
        LET DQ == {v \in Value : Count(r2, v) >= DeliverQuorum} IN
        /\ echo' = [echo EXCEPT ![i] = e]
        /\ ready' = [ready EXCEPT ![i] = r2]
        /\ rsent' = [rsent EXCEPT ![i] = @ \cup (IF r2[i] # Nil THEN {r2[i]} ELSE {})]
        /\ IF DQ = {}
             THEN UNCHANGED <<dlv, ndel>>
             ELSE \E d \in DQ :
                    /\ dlv' = [dlv EXCEPT ![i] = @ \cup {d}]
                    /\ ndel' = [ndel EXCEPT ![i] = IF @ < 2 THEN @ + 1 ELSE 2]

(* echo(): ECHO(v) unless i echoed already in this run (first SEND only), *)
(* or echoed another value before a restart (brb_vote_get); brb_vote_put, *)
(* i's echo counted in its own tally, then check_thresholds.              *)
DoEcho(i, v) ==
    /\ echo[i][i] = Nil
    /\ MayVote(esent[i], v)
    /\ esent' = [esent EXCEPT ![i] = @ \cup {v}]
    /\ CheckThresholds(i, [echo[i] EXCEPT ![i] = v], ready[i])

(* bracha_on_request at an honest sender: SEND(v) to all, then echo().   *)
(* One instance: the sender's first request (brb_own_begin gives each     *)
(* request a new seq).                                                   *)
Broadcast(v) ==
    /\ Sender \in Honest
    /\ Open(Sender)
    /\ esent[Sender] = {}
    /\ DoEcho(Sender, v)
    /\ UNCHANGED <<byz, crashes>>

(* bracha_on_message, type SEND, at an honest non-sender i. *)
RecvSend(i, v) ==
    /\ i \in Honest
    /\ i # Sender
    /\ Open(i)
    /\ SendAvail(v)
    /\ DoEcho(i, v)
    /\ UNCHANGED <<byz, crashes>>

(* bracha_on_message, type ECHO from j: brb_tally_add, then           *)
(* check_thresholds unless j's ECHO was counted already (a repeat or an *)
(* equivocation: the C code returns, nothing changes).                 *)
RecvEcho(i, j, v) ==
    /\ i \in Honest
    /\ j # i
    /\ Open(i)
    /\ echo[i][j] = Nil
    /\ EchoAvail(j, v)
    /\ CheckThresholds(i, [echo[i] EXCEPT ![j] = v], ready[i])
    /\ UNCHANGED <<byz, esent, crashes>>

(* bracha_on_message, type READY from j: likewise. *)
RecvReady(i, j, v) ==
    /\ i \in Honest
    /\ j # i
    /\ Open(i)
    /\ ready[i][j] = Nil
    /\ ReadyAvail(j, v)
    /\ CheckThresholds(i, echo[i], [ready[i] EXCEPT ![j] = v])
    /\ UNCHANGED <<byz, esent, crashes>>

(* A crash and recovery of honest i before it delivered (at most        *)
(* MaxRestarts in a behaviour, to bound the model): the tallies and      *)
(* the echoed/readied flags are lost, the persisted votes kept.  The      *)
(* sender's restore_own reopens its broadcast with its payload and its    *)
(* own ECHO counted (its SEND and ECHO go out again on the resend timer,  *)
(* the same values).  A delivered instance stays closed.                  *)
Restart(i) ==
    /\ crashes < MaxRestarts
    /\ crashes' = crashes + 1
    /\ i \in Honest
    /\ Open(i)
    /\ echo' = [echo EXCEPT ![i] =
                  IF i = Sender /\ esent[i] # {}
                    THEN [NilRow EXCEPT ![i] = CHOOSE v \in esent[i] : TRUE]
                    ELSE NilRow]
    /\ ready' = [ready EXCEPT ![i] = NilRow]
    /\ UNCHANGED <<byz, esent, rsent, dlv, ndel>>

Next ==
    \/ \E v \in BroadcastValue : Broadcast(v)
    \/ \E i \in Node, v \in Value :
          \/ RecvSend(i, v)
          \/ \E j \in Node : RecvEcho(i, j, v) \/ RecvReady(i, j, v)
    \/ \E i \in Node : Restart(i)

(***************************************************************************)
(* Fairness: honest steps that stay enabled are eventually taken, so every *)
(* message between honest nodes is eventually received (links that         *)
(* eventually deliver, which weft's resends provide).  Nothing forces the  *)
(* sender to broadcast, anyone to take a Byzantine message, or a restart. *)
(*                                                                         *)
(* HonestFairness is WF of each honest receipt (i from j, per kind), the   *)
(* plain statement.  Fairness, which the models use, is WF of their        *)
(* disjunction; the two are equivalent here because, without restarts,    *)
(* every non-stuttering step fills a tally slot, so a behaviour has        *)
(* finitely many of them: a receipt enabled forever and never taken would  *)
(* keep the disjunction enabled forever, which WF turns into infinitely    *)
(* many steps.  The single condition is much cheaper for TLC.              *)
(***************************************************************************)
RecvFromHonest(i, j) ==
    \E v \in Value :
        \/ j = Sender /\ RecvSend(i, v)
        \/ RecvEcho(i, j, v)
        \/ RecvReady(i, j, v)

HonestReceive == \E i, j \in Honest : RecvFromHonest(i, j)

HonestFairness ==
    \A i, j \in Node :
        /\ WF_vars(i \notin byz /\ j \notin byz /\
                   \E v \in Value : j = Sender /\ RecvSend(i, v))
        /\ WF_vars(i \notin byz /\ j \notin byz /\ \E v \in Value : RecvEcho(i, j, v))
        /\ WF_vars(i \notin byz /\ j \notin byz /\ \E v \in Value : RecvReady(i, j, v))

Fairness == WF_vars(HonestReceive)

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Properties (names as in weft's scenario oracle). *)

(* No two honest nodes deliver different values. *)
Agreement ==
    \A i, j \in Honest : \A v \in dlv[i], w \in dlv[j] : v = w

(* At most one delivery per node; with an honest sender, only what it     *)
(* broadcast (its SEND is its own ECHO).                                  *)
Integrity ==
    \A i \in Honest :
        /\ ndel[i] <= 1
        /\ Sender \in Honest => dlv[i] \subseteq esent[Sender]

(* The lemmas of docs/protocols/bracha.md, checked as invariants too.    *)
(* An honest node votes at most one value per kind, across restarts.     *)
VoteOnce ==
    \A i \in Honest : Cardinality(esent[i]) <= 1 /\ Cardinality(rsent[i]) <= 1
(* No two values both reach the echo quorum at honest nodes. *)
EchoQuorumUnique ==
    \A i, j \in Honest : \A v, w \in Value :
        (Count(echo[i], v) >= EchoQuorum /\ Count(echo[j], w) >= EchoQuorum) => v = w
(* All honest READYs name the same value. *)
HonestReadyUnique ==
    \A i, j \in Honest : \A v \in rsent[i], w \in rsent[j] : v = w

(* An honest sender's broadcast is delivered by every honest node (its    *)
(* ECHO, esent[Sender], never changes once set).                          *)
Validity ==
    \A v \in Value :
        (Sender \notin byz /\ v \in esent[Sender]) ~>
            (\A i \in Node \ byz : v \in dlv[i])

(* If one honest node delivers, every honest node delivers (the value is *)
(* the same one by Agreement).                                           *)
Totality ==
    (\E i \in Node \ byz : dlv[i] # {}) ~> (\A i \in Node \ byz : dlv[i] # {})

(***************************************************************************)
(* The same two properties as invariants, checked in the safety models     *)
(* (with symmetry, under every choice of byz, where the liveness check     *)
(* proper would be too big).  Without restarts every non-stuttering step   *)
(* fills a tally slot, so every behaviour takes finitely many steps and    *)
(* then stutters forever in some state s; under Fairness, s is Quiescent   *)
(* (no receipt of an honest message is enabled), and every reachable       *)
(* Quiescent state ends such a fair behaviour.  The premises and           *)
(* conclusions below are stable (votes, deliveries and byz are never       *)
(* undone), so Validity (Totality) holds of FairSpec without restarts iff  *)
(* ValidityAtQuiescence (TotalityAtQuiescence) is an invariant of Spec     *)
(* without restarts.  A model with restarts checks them over a superset    *)
(* of those states.                                                        *)
(*                                                                         *)
(* Quiescent is ~ENABLED HonestReceive with the guards spelled out (Idle), *)
(* which TLC evaluates much faster; QuiescentSound checks that they agree. *)
(***************************************************************************)
CanRecv(i) ==
    /\ Open(i)
    /\ \/ Sender \in Honest /\ i # Sender /\ echo[i][i] = Nil
          /\ \E v \in esent[Sender] : MayVote(esent[i], v)
       \/ \E j \in Honest \ {i} :
            \/ echo[i][j] = Nil /\ esent[j] # {}
            \/ ready[i][j] = Nil /\ rsent[j] # {}

Idle == ~\E i \in Honest : CanRecv(i)

QuiescentSound == Idle = ~ENABLED HonestReceive

Quiescent == Idle

ValidityAtQuiescence ==
    (Quiescent /\ Sender \in Honest) =>
        \A i \in Honest : esent[Sender] \subseteq dlv[i]

TotalityAtQuiescence ==
    (Quiescent /\ \E i \in Honest : dlv[i] # {}) =>
        \A i \in Honest : dlv[i] # {}

(* Symmetry, for the safety models only (TLC's liveness checking is not   *)
(* sound under symmetry): values are interchangeable, and so are the       *)
(* non-senders (byz is a variable, permuted with them).                    *)
Symmetry == Permutations(Value) \cup Permutations(Node \ {Sender})
=============================================================================
