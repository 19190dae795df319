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
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Node,   \* the committee (model values); N = |Node|
    F,      \* fault bound the thresholds are computed for (c->f)
    Sender, \* the instance's sender, in Node
    Byz,    \* the Byzantine nodes, a subset of Node
    Value,  \* the payloads (abstracted: a payload is its digest)
    Nil     \* "no vote", a model value not in Value

N == Cardinality(Node)
Honest == Node \ Byz

ASSUME /\ F \in Nat /\ N >= 3 * F + 1
       /\ Sender \in Node
       /\ Byz \subseteq Node
       /\ Nil \notin Value

(* Thresholds of brb_core_init (protocols/brb/core.c).  The teeth models *)
(* override one of them in their .cfg with a deliberately wrong value.   *)
EchoQuorum    == (N + F + 2) \div 2        \* ceil((n + f + 1) / 2)
ReadyQuorum   == F + 1                     \* READY amplification
DeliverQuorum == 2 * F + 1

\* Broken thresholds used by the teeth models (see BrachaBroken*.cfg).
ReadyQuorumTooLow == F                     \* amplify after f READYs
EchoQuorumTooLow  == F + 1                 \* a "quorum" of f+1 echoes
DeliverQuorumTooHigh == N                  \* wait for every node's READY

(* The values an honest sender may be asked to broadcast.  Any value; a *)
(* liveness model may fix one in its .cfg: values are symmetric, so no   *)
(* generality is lost, and the state space halves.                       *)
BroadcastValue == Value

VARIABLES
    echo,       \* echo[i][j]: ECHO vote of j counted by honest i, or Nil
    ready,      \* ready[i][j]: READY vote of j counted by honest i, or Nil
    delivered   \* delivered[i]: the values honest i delivered (the upcall)

vars == <<echo, ready, delivered>>

Vote == Value \cup {Nil}

TypeOK ==
    /\ echo \in [Honest -> [Node -> Vote]]
    /\ ready \in [Honest -> [Node -> Vote]]
    /\ delivered \in [Honest -> SUBSET Value]

Init ==
    /\ echo = [i \in Honest |-> [j \in Node |-> Nil]]
    /\ ready = [i \in Honest |-> [j \in Node |-> Nil]]
    /\ delivered = [i \in Honest |-> {}]

(* brb_tally_count: votes for v in one tally row. *)
Count(row, v) == Cardinality({j \in Node : row[j] = v})

(* Is this message available to i?  From an honest node: the node's own  *)
(* vote (it multicast it).  From a Byzantine node: any value.            *)
SendAvail(v)     == IF Sender \in Byz THEN TRUE ELSE echo[Sender][Sender] = v
EchoAvail(j, v)  == IF j \in Byz THEN TRUE ELSE echo[j][j] = v
ReadyAvail(j, v) == IF j \in Byz THEN TRUE ELSE ready[j][j] = v

(* An honest node handles input only while the instance is open. *)
Open(i) == delivered[i] = {}

(***************************************************************************)
(* check_thresholds(c, i) after i's tallies became e (echo) and r (ready). *)
(* ready(): if i has not said READY, READY(d) for a digest d with an echo  *)
(* quorum or, failing that, one with ReadyQuorum READYs; i's READY is      *)
(* added to its own tally.  try_deliver(): deliver a digest with           *)
(* DeliverQuorum READYs.  The C code takes the first such digest in tally  *)
(* order (order of first arrival); the spec lets it be any of them, a      *)
(* superset of the C behaviours (in correct runs there is only one).       *)
(***************************************************************************)
ReadyChoices(i, e, r) ==
    LET EQ   == {v \in Value : Count(e, v) >= EchoQuorum}
        RQ   == {v \in Value : Count(r, v) >= ReadyQuorum}
        Cand == IF r[i] # Nil THEN {} ELSE IF EQ # {} THEN EQ ELSE RQ
    IN IF Cand = {} THEN {r} ELSE {[r EXCEPT ![i] = v] : v \in Cand}

CheckThresholds(i, e, r) ==
    \E r2 \in ReadyChoices(i, e, r) :
        LET DQ == {v \in Value : Count(r2, v) >= DeliverQuorum} IN
        /\ echo' = [echo EXCEPT ![i] = e]
        /\ ready' = [ready EXCEPT ![i] = r2]
        /\ IF DQ = {}
             THEN UNCHANGED delivered
             ELSE \E d \in DQ : delivered' = [delivered EXCEPT ![i] = @ \cup {d}]

(* echo(): ECHO(v) unless i echoed already (first SEND only); i's echo is *)
(* counted in its own tally, then check_thresholds.                       *)
DoEcho(i, v) ==
    /\ echo[i][i] = Nil
    /\ CheckThresholds(i, [echo[i] EXCEPT ![i] = v], ready[i])

(* bracha_on_request at an honest sender: SEND(v) to all, then echo(). *)
Broadcast(v) ==
    /\ Sender \in Honest
    /\ Open(Sender)
    /\ DoEcho(Sender, v)

(* bracha_on_message, type SEND, at an honest non-sender i. *)
RecvSend(i, v) ==
    /\ i # Sender
    /\ Open(i)
    /\ SendAvail(v)
    /\ DoEcho(i, v)

(* bracha_on_message, type ECHO from j: brb_tally_add, then           *)
(* check_thresholds unless j's ECHO was counted already (a repeat or an *)
(* equivocation: the C code returns, nothing changes).                 *)
RecvEcho(i, j, v) ==
    /\ j # i
    /\ Open(i)
    /\ echo[i][j] = Nil
    /\ EchoAvail(j, v)
    /\ CheckThresholds(i, [echo[i] EXCEPT ![j] = v], ready[i])

(* bracha_on_message, type READY from j: likewise. *)
RecvReady(i, j, v) ==
    /\ j # i
    /\ Open(i)
    /\ ready[i][j] = Nil
    /\ ReadyAvail(j, v)
    /\ CheckThresholds(i, echo[i], [ready[i] EXCEPT ![j] = v])

Next ==
    \/ \E v \in BroadcastValue : Broadcast(v)
    \/ \E i \in Honest, v \in Value :
          \/ RecvSend(i, v)
          \/ \E j \in Node : RecvEcho(i, j, v) \/ RecvReady(i, j, v)

(***************************************************************************)
(* Fairness: honest steps that stay enabled are eventually taken, so every *)
(* message between honest nodes is eventually received (links that         *)
(* eventually deliver, which weft's resends provide).  Nothing forces the  *)
(* sender to broadcast, nor anyone to take a Byzantine message.            *)
(*                                                                         *)
(* HonestFairness is WF of each honest receipt (i from j, per kind), the   *)
(* plain statement.  Fairness, which the models use, is WF of their        *)
(* disjunction; the two are equivalent here because every non-stuttering   *)
(* step fills a tally slot, so a behaviour has finitely many of them: a    *)
(* receipt enabled forever and never taken would keep the disjunction      *)
(* enabled forever, which WF turns into infinitely many steps.  The single *)
(* condition is much cheaper for TLC (one ENABLED per state, not 14).      *)
(***************************************************************************)
RecvFromHonest(i, j) ==
    \E v \in Value :
        \/ j = Sender /\ RecvSend(i, v)
        \/ RecvEcho(i, j, v)
        \/ RecvReady(i, j, v)

HonestReceive == \E i, j \in Honest : RecvFromHonest(i, j)

HonestFairness ==
    \A i, j \in Honest :
        /\ WF_vars(\E v \in Value : j = Sender /\ RecvSend(i, v))
        /\ WF_vars(\E v \in Value : RecvEcho(i, j, v))
        /\ WF_vars(\E v \in Value : RecvReady(i, j, v))

Fairness == WF_vars(HonestReceive)

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Properties (names as in weft's scenario oracle). *)

(* No two honest nodes deliver different values. *)
Agreement ==
    \A i, j \in Honest : \A v \in delivered[i], w \in delivered[j] : v = w

(* At most one delivery per node; with an honest sender, only what it     *)
(* broadcast (its SEND is its own ECHO, echo[Sender][Sender]).            *)
Integrity ==
    \A i \in Honest :
        /\ Cardinality(delivered[i]) <= 1
        /\ Sender \in Honest => delivered[i] \subseteq {echo[Sender][Sender]}

(* The lemmas of docs/protocols/bracha.md, checked as invariants too. *)
(* No two values both reach the echo quorum at honest nodes.          *)
EchoQuorumUnique ==
    \A i, j \in Honest : \A v, w \in Value :
        (Count(echo[i], v) >= EchoQuorum /\ Count(echo[j], w) >= EchoQuorum) => v = w
(* All honest READYs name the same value. *)
HonestReadyUnique ==
    \A i, j \in Honest :
        (ready[i][i] # Nil /\ ready[j][j] # Nil) => ready[i][i] = ready[j][j]

(* An honest sender's broadcast is delivered by every honest node (the   *)
(* sender's vote echo[Sender][Sender] never changes once set).           *)
Validity ==
    Sender \in Honest =>
        ((echo[Sender][Sender] # Nil) ~>
            (\A i \in Honest : echo[Sender][Sender] \in delivered[i]))

(* If one honest node delivers, every honest node delivers (the value is *)
(* the same one by Agreement).                                           *)
Totality ==
    (\E i \in Honest : delivered[i] # {}) ~> (\A i \in Honest : delivered[i] # {})

(***************************************************************************)
(* The same two properties as invariants, checked in the safety models     *)
(* (with symmetry, and under a Byzantine sender, where the liveness check  *)
(* proper would be too big).  Every non-stuttering step fills a tally      *)
(* slot, so every behaviour takes finitely many steps and then stutters    *)
(* forever in some state s; under Fairness, s is Quiescent (no receipt of  *)
(* an honest message is enabled), and every reachable Quiescent state ends *)
(* such a fair behaviour.  The premises and conclusions below are stable   *)
(* (votes and deliveries are never undone), so Validity (Totality) holds   *)
(* of FairSpec iff ValidityAtQuiescence (TotalityAtQuiescence) is an       *)
(* invariant of Spec.                                                      *)
(***************************************************************************)
Quiescent == ~ENABLED HonestReceive

ValidityAtQuiescence ==
    (Quiescent /\ Sender \in Honest /\ echo[Sender][Sender] # Nil) =>
        \A i \in Honest : echo[Sender][Sender] \in delivered[i]

TotalityAtQuiescence ==
    (Quiescent /\ \E i \in Honest : delivered[i] # {}) =>
        \A i \in Honest : delivered[i] # {}

(* Symmetry, for the safety models only (TLC's liveness checking is not *)
(* sound under symmetry): values are interchangeable, and so are the     *)
(* honest non-senders and the Byzantine non-senders among themselves.   *)
(* TLC uses the group these permutations generate.                      *)
Symmetry ==
    Permutations(Value) \cup Permutations(Honest \ {Sender})
        \cup Permutations(Byz \ {Sender})
=============================================================================
