------------------------------- MODULE EchoBRB -------------------------------
(***************************************************************************)
(* The signed echo broadcast (Reiter 1994; the consistent broadcast of     *)
(* Cachin, Kursawe, Petzold and Shoup 2001) as weft implements it in       *)
(* protocols/brb/echo.c on top of protocols/brb/core.c, for ONE instance   *)
(* (sender, seq):                                                          *)
(*                                                                         *)
(*   sender:  SEND(m) to all, signs its own echo       (echo_on_request)   *)
(*   on the first SEND(m) from the sender:  sign (sender, seq, H(m)),      *)
(*            ECHO(sig) to the sender only          (on_send, echo)        *)
(*   sender, on CertQuorum valid signatures over H(m) (its own counted):   *)
(*            FINAL(H(m), certificate) to all, deliver m                   *)
(*                                        (on_echo, collect, certify)      *)
(*   on a FINAL with a valid certificate for d, and a payload m with       *)
(*            H(m) = d, in either order: deliver m   (on_final, on_send,   *)
(*                                                    try_deliver)         *)
(*   catch-up (core.c): deliver m once CatchUpQuorum = f+1 distinct peers  *)
(*            reported DELIVERED(m)                     (on_delivered)     *)
(*                                                                         *)
(* with CertQuorum = ceil((N+F+1)/2), written (N + F + 2) \div 2 as in     *)
(* brb_core_init (c->echo_quorum).                                         *)
(*                                                                         *)
(* Faults.  The Byzantine nodes are the variable byz, chosen in Init among *)
(* ByzSets (the models use AllByzSets: every set of F nodes, with or       *)
(* without the sender) and never changed, so one model covers an honest    *)
(* and a Byzantine sender.  All per-node variables range over all of Node; *)
(* the entries of Byzantine nodes stay at their initial values and mean    *)
(* nothing.                                                                *)
(*                                                                         *)
(* State of an honest node i (struct echo_inst and the core's kv):         *)
(*   data[i]  the digest of the payload i holds (have_data, digest), Nil:  *)
(*            none.  For the sender: the payload it broadcast.             *)
(*   vote[i]  i's persisted ECHO vote (brb_vote_put, kv "v"): the digest   *)
(*            it signed; survives a restart.                               *)
(*   cert[i]  the digest of the certificate i holds (certified,            *)
(*            cert_digest), Nil: none.                                     *)
(*   cu[i][j] the DELIVERED report of peer j that i counted (the core's    *)
(*            BRB_VOTE_CATCHUP tally), Nil: none.                          *)
(*   dlv[i], ndel[i]  the values i delivered and HOW MANY TIMES it         *)
(*            delivered (the upcall; saturating at 2, so that a second     *)
(*            delivery is visible and the state space stays finite).      *)
(* and of the sender only:                                                 *)
(*   got      the signers the sender counted, its own included (its ECHO   *)
(*            tally: brb_tally_add in add_sig, voters only, since only     *)
(*            signatures over its own digest verify).                      *)
(* Global history:                                                         *)
(*   sigs     the signatures honest nodes ever made, pairs <<i, d>>        *)
(*            (sign_echo).  A signature, once made, is known to whoever    *)
(*            received it and can be shown forever; nobody can make an     *)
(*            honest node's signature it did not make (Ed25519, with the   *)
(*            domain-separated statement "weft-brb-echo" || sender || seq  *)
(*            || digest, so no replay from another instance).              *)
(*                                                                         *)
(* Network.  Links are authenticated and, between honest nodes, reliable.  *)
(* An honest node's messages are determined by its state, so no message    *)
(* set is needed: the honest sender's SEND is data[Sender], its FINAL is   *)
(* cert[Sender]; honest j's ECHO is its signature <<j, d>> in sigs (the    *)
(* honest sender counts it iff d is its own digest: on_echo verifies the  *)
(* signature over its digest and rejects anything else); honest j's       *)
(* DELIVERED report is what j delivered.  Each stays receivable forever    *)
(* (resends, late-echo answers and catch-up offers in the C code); a       *)
(* receipt that would change nothing is simply not a step.                 *)
(*                                                                         *)
(* Byzantine nodes may send anything they can make: a Byzantine sender any *)
(* SEND(v) to anyone (different ones to different nodes, any number), and  *)
(* a FINAL(d) to anyone for every d with a valid certificate:              *)
(* CertQuorum distinct signers over d, i.e. Byzantine nodes (they sign    *)
(* anything) and honest nodes that really signed d (ValidCert).  Any       *)
(* Byzantine node may send the honest sender an ECHO signed over the       *)
(* sender's digest, and anyone a DELIVERED report of any value.  A SEND or *)
(* FINAL from a non-sender is rejected (echo_on_message: from != sender),  *)
(* an ECHO at a non-sender too (sender != c->self): no-ops, not modelled.  *)
(* Each receiver takes these whenever it likes, or never, so this covers   *)
(* equivocating, delaying and silent Byzantine nodes.                      *)
(*                                                                         *)
(* Steps.  Each action is one callback of the C code, atomic as the host   *)
(* runs it.  After delivery brb_inst_get answers "already delivered" for   *)
(* the instance (the delivered seqset), so a node that delivered ignores   *)
(* every further input for it (Open).                                      *)
(*                                                                         *)
(* Restarts (if Restarts): an honest node that has not delivered may crash *)
(* and recover.  It keeps what the C code persists -- its vote (kv "v"),   *)
(* the signatures it made (they are out), and, for the sender, its payload *)
(* (kv "o", which restore_own reopens with its own signature) -- and loses *)
(* what lives in memory: the payload and certificate of a non-sender, the  *)
(* sender's collected signatures, the catch-up tally.  A delivered node's  *)
(* instance is closed and stays closed (the seqset is persisted before the *)
(* upcall), so restarting it changes nothing here.                         *)
(*                                                                         *)
(* Abstracted away (tla/README.md, "EchoBRB", has the argument for each):  *)
(* payload bytes (a value is its digest, no collisions; digest_with, a     *)
(* parent naming payloads, is not modelled); signature bytes (unforgeable, *)
(* verified exactly: a bad signature or a malformed message is a rejected  *)
(* no-op); the window, other instances, backpressure and the retained-     *)
(* payload store (catch-up offers here need only a delivery, a superset);  *)
(* message loss and the resends that repair it (reliable links between    *)
(* honest nodes instead: for safety a superset, for liveness an            *)
(* assumption); a restart that loses the store (a new node, outside the    *)
(* fault model); counters.  Catch-up is modelled (CatchUp); Totality       *)
(* without it, or for a sender that shows its FINAL to f honest nodes or   *)
(* fewer, does not hold (EchoNoTotality.cfg).                              *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Node,     \* the committee (model values); N = |Node|
    F,        \* fault bound the thresholds are computed for (c->f)
    Sender,   \* the instance's sender, in Node
    Value,    \* the payloads (abstracted: a payload is its digest)
    Nil,      \* "none", a model value not in Value
    ByzSets,  \* the sets the Byzantine nodes are chosen from (AllByzSets)
    Restarts, \* TRUE: honest nodes may crash and recover (Restart)
    CatchUp   \* TRUE: the core's DELIVERED catch-up (RecvDelivered)

N == Cardinality(Node)

(* Every set of exactly F nodes: the sender Byzantine or not. *)
AllByzSets == {B \in SUBSET Node : Cardinality(B) = F}

ASSUME /\ F \in Nat /\ N >= 3 * F + 1
       /\ Sender \in Node
       /\ Nil \notin Value
       /\ \A B \in ByzSets : B \subseteq Node /\ Cardinality(B) <= F
       /\ Restarts \in BOOLEAN /\ CatchUp \in BOOLEAN

(* Thresholds of brb_core_init (protocols/brb/core.c): c->echo_quorum,   *)
(* which certify() and on_final() use, and c->ready_quorum, which        *)
(* on_delivered() uses for catch-up.  A teeth model overrides one.       *)
CertQuorum    == (N + F + 2) \div 2        \* ceil((n + f + 1) / 2)
CatchUpQuorum == F + 1

(* The mutations of the teeth models (EchoBroken*.cfg), each a bug the C *)
(* code could have; the spec's defaults are the C code.                  *)
CertQuorumTooLow     == F + 1   \* c->echo_quorum = f + 1
CertQuorumTooHigh    == N       \* c->echo_quorum = n: wait for everyone
CatchUpQuorumTooHigh == 2 * F + 1  \* on_delivered with deliver_quorum

(* on_send consults its persisted vote (brb_vote_get) before signing;   *)
(* NoVoteCheck: it does not, so a restarted node signs whatever SEND     *)
(* comes first.                                                         *)
CheckVote   == TRUE
NoVoteCheck == FALSE

(* brb_deliver records the seq in the delivered set (and frees the      *)
(* instance), so brb_inst_get ignores later input; NeverClose: it does   *)
(* not, the instance keeps taking input with its state.                  *)
CloseOnDeliver == TRUE
NeverClose     == FALSE

(* The values an honest sender may be asked to broadcast; a liveness    *)
(* model may fix one (values are symmetric).                            *)
BroadcastValue == Value

VARIABLES
    byz,    \* the Byzantine nodes (chosen in Init, constant afterwards)
    data,   \* data[i]: digest of the payload honest i holds, or Nil
    vote,   \* vote[i]: honest i's persisted ECHO vote, or Nil
    sigs,   \* the signatures honest nodes made: pairs <<i, d>>
    got,    \* the signers the sender counted (its ECHO tally)
    cert,   \* cert[i]: digest of the certificate honest i holds, or Nil
    cu,     \* cu[i][j]: the DELIVERED report of j counted by i, or Nil
    dlv,    \* dlv[i]: the values honest i delivered
    ndel    \* ndel[i]: how many times honest i delivered (2: "2 or more")

vars == <<byz, data, vote, sigs, got, cert, cu, dlv, ndel>>

Honest == Node \ byz
Vote == Value \cup {Nil}
NilRow == [j \in Node |-> Nil]

TypeOK ==
    /\ byz \in ByzSets
    /\ data \in [Node -> Vote]
    /\ vote \in [Node -> Vote]
    /\ sigs \subseteq Node \X Value
    /\ got \subseteq Node
    /\ cert \in [Node -> Vote]
    /\ cu \in [Node -> [Node -> Vote]]
    /\ dlv \in [Node -> SUBSET Value]
    /\ ndel \in [Node -> 0..2]

Init ==
    /\ byz \in ByzSets
    /\ data = [i \in Node |-> Nil]
    /\ vote = [i \in Node |-> Nil]
    /\ sigs = {}
    /\ got = {}
    /\ cert = [i \in Node |-> Nil]
    /\ cu = [i \in Node |-> NilRow]
    /\ dlv = [i \in Node |-> {}]
    /\ ndel = [i \in Node |-> 0]

(* brb_inst_get: input for a delivered instance is ignored. *)
Open(i) == ~CloseOnDeliver \/ ndel[i] = 0

(* brb_deliver: the upcall, counted. *)
Deliver(i, v) ==
    /\ dlv' = [dlv EXCEPT ![i] = @ \cup {v}]
    /\ ndel' = [ndel EXCEPT ![i] = IF @ < 2 THEN @ + 1 ELSE 2]

(* Who can sign over d: Byzantine nodes (anything) and honest nodes that *)
(* signed d.  A certificate is CertQuorum distinct signers (on_final:    *)
(* k >= echo_quorum entries, no signer twice, every signature verified). *)
Signers(d) == {j \in Node : j \in byz \/ <<j, d>> \in sigs}
ValidCert(d) == Cardinality(Signers(d)) >= CertQuorum

(* brb_tally_count over the catch-up tally row. *)
Count(row, v) == Cardinality({j \in Node : row[j] = v})

(* Is this message available?  From an honest node: what its state says *)
(* it sent.  From a Byzantine node: anything it can make.               *)
SendAvail(v)      == IF Sender \in byz THEN TRUE ELSE data[Sender] = v
FinalAvail(d)     == IF Sender \in byz THEN ValidCert(d)
                                      ELSE cert[Sender] = d
EchoAvail(j)      == j \in byz \/ <<j, data[Sender]>> \in sigs
ReportAvail(j, v) == j \in byz \/ v \in dlv[j]

(***************************************************************************)
(* certify() after the sender's tally became g, for its payload v: with   *)
(* CertQuorum signers it makes the certificate, multicasts FINAL           *)
(* (cert[Sender] # Nil makes it available) and delivers its payload        *)
(* (try_deliver; the sender always holds it: echo_on_request and           *)
(* restore_own keep it).                                                   *)
(***************************************************************************)
Certify(g, v) ==
    /\ got' = g
    /\ IF Cardinality(g) >= CertQuorum
         THEN /\ cert' = [cert EXCEPT ![Sender] = v]
              /\ Deliver(Sender, v)
         ELSE UNCHANGED <<cert, dlv, ndel>>

(* echo_on_request at an honest sender: keep_data, kv "o", SEND to all,   *)
(* then echo(): brb_vote_put, sign_echo, collect(self) (certify: n = 1).  *)
(* One instance: the sender's first request (brb_own_begin gives each      *)
(* request a new seq).                                                    *)
Broadcast(v) ==
    /\ Sender \in Honest
    /\ Open(Sender)
    /\ data[Sender] = Nil
    /\ data' = [data EXCEPT ![Sender] = v]
    /\ vote' = [vote EXCEPT ![Sender] = v]
    /\ sigs' = sigs \cup {<<Sender, v>>}
    /\ Certify({Sender}, v)
    /\ UNCHANGED <<byz, cu>>

(***************************************************************************)
(* echo_on_message, type SEND (from == sender checked), at honest          *)
(* non-sender i: on_send.  Holding a certificate, i takes only the         *)
(* certified payload and delivers it (no echo).  Otherwise a second SEND   *)
(* is ignored (have_data), as is one contradicting i's persisted vote      *)
(* (brb_vote_get, after a restart); else i keeps the payload and echo()s:  *)
(* brb_vote_put, sign_echo, send_echo to the sender.  It cannot deliver    *)
(* there: it holds no certificate.                                        *)
(***************************************************************************)
RecvSend(i, v) ==
    /\ i \in Honest
    /\ i # Sender
    /\ Open(i)
    /\ SendAvail(v)
    /\ IF cert[i] # Nil
         THEN /\ v = cert[i]
              /\ data' = [data EXCEPT ![i] = v]
              /\ Deliver(i, v)
              /\ UNCHANGED <<vote, sigs>>
         ELSE /\ data[i] = Nil
              /\ CheckVote => vote[i] \in {Nil, v}
              /\ data' = [data EXCEPT ![i] = v]
              /\ vote' = [vote EXCEPT ![i] = v]
              /\ sigs' = sigs \cup {<<i, v>>}
              /\ UNCHANGED <<dlv, ndel>>
    /\ UNCHANGED <<byz, got, cert, cu>>

(* echo_on_message, type ECHO, at the honest sender: on_echo.  Ignored    *)
(* once certified (or delivered: answer_late_echo only resends), for a     *)
(* signer counted already (tally_has), before the broadcast (no vote:     *)
(* rejected); a signature not over the sender's digest is rejected        *)
(* (verify); else collect: add_sig (brb_tally_add), certify.              *)
RecvEcho(j) ==
    /\ Sender \in Honest
    /\ j # Sender
    /\ Open(Sender)
    /\ cert[Sender] = Nil
    /\ data[Sender] # Nil
    /\ j \notin got
    /\ EchoAvail(j)
    /\ Certify(got \cup {j}, data[Sender])
    /\ UNCHANGED <<byz, data, vote, sigs, cu>>

(* echo_on_message, type FINAL (from == sender), at honest non-sender i:  *)
(* on_final.  Ignored when i holds a certificate already; a certificate   *)
(* that does not verify is rejected; else i keeps it and try_deliver()s.  *)
RecvFinal(i, d) ==
    /\ i \in Honest
    /\ i # Sender
    /\ Open(i)
    /\ cert[i] = Nil
    /\ FinalAvail(d)
    /\ cert' = [cert EXCEPT ![i] = d]
    /\ IF data[i] = d THEN Deliver(i, d) ELSE UNCHANGED <<dlv, ndel>>
    /\ UNCHANGED <<byz, data, vote, sigs, got, cu>>

(* brb_core_on_message, type DELIVERED from j: on_delivered.  One report *)
(* per peer (brb_tally_add on BRB_VOTE_CATCHUP); at CatchUpQuorum        *)
(* matching reports i delivers the reported payload (it came with them). *)
RecvDelivered(i, j, v) ==
    /\ CatchUp
    /\ i \in Honest
    /\ j # i
    /\ Open(i)
    /\ cu[i][j] = Nil
    /\ ReportAvail(j, v)
    /\ cu' = [cu EXCEPT ![i][j] = v]
    /\ IF Count(cu'[i], v) >= CatchUpQuorum
         THEN Deliver(i, v)
         ELSE UNCHANGED <<dlv, ndel>>
    /\ UNCHANGED <<byz, data, vote, sigs, got, cert>>

(* A crash and recovery of honest i before it delivered: memory lost,    *)
(* kv kept.  The sender's restore_own (echo_start) reopens its broadcast  *)
(* from kv "o" with its own signature (add_sig): got = {Sender}.           *)
Restart(i) ==
    /\ Restarts
    /\ i \in Honest
    /\ Open(i)
    /\ IF i = Sender
         THEN /\ got' = IF data[Sender] # Nil THEN {Sender} ELSE {}
              /\ UNCHANGED <<data, cert>>
         ELSE /\ data' = [data EXCEPT ![i] = Nil]
              /\ cert' = [cert EXCEPT ![i] = Nil]
              /\ UNCHANGED got
    /\ cu' = [cu EXCEPT ![i] = NilRow]
    /\ UNCHANGED <<byz, vote, sigs, dlv, ndel>>

Next ==
    \/ \E v \in BroadcastValue : Broadcast(v)
    \/ \E i \in Node, v \in Value : RecvSend(i, v) \/ RecvFinal(i, v)
    \/ \E j \in Node : RecvEcho(j)
    \/ \E i, j \in Node, v \in Value : RecvDelivered(i, j, v)
    \/ \E i \in Node : Restart(i)

(***************************************************************************)
(* Fairness: every message between honest nodes is eventually received     *)
(* (links that eventually deliver; weft gets there with the sender's SEND  *)
(* resends, the signers' ECHO resends answered after delivery by           *)
(* answer_late_echo, and catch-up).  Nothing forces the sender to          *)
(* broadcast, anyone to take a Byzantine message, or a restart.            *)
(* HonestStep is a receipt by an honest node of an honest node's message. *)
(* As in BrachaBRB, WF of the disjunction is equivalent to WF of each      *)
(* receipt: without restarts every step fills a slot that is never        *)
(* emptied (data, got, cert, cu, or a delivery that closes the instance),  *)
(* so every behaviour has finitely many non-stuttering steps.             *)
(***************************************************************************)
HonestStep ==
    \E i \in Honest :
        \/ /\ Sender \in Honest
           /\ \E v \in Value : RecvSend(i, v) \/ RecvFinal(i, v)
        \/ i = Sender /\ \E j \in Honest : RecvEcho(j)
        \/ \E j \in Honest, v \in Value : RecvDelivered(i, j, v)

Fairness == WF_vars(HonestStep)

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Properties (names as in weft's scenario oracle). *)

(* No two honest nodes deliver different values. *)
Agreement ==
    \A i, j \in Honest : \A v \in dlv[i], w \in dlv[j] : v = w

(* At most one delivery per node; with an honest sender, only what it     *)
(* broadcast.                                                             *)
Integrity ==
    \A i \in Honest :
        /\ ndel[i] <= 1
        /\ Sender \in Honest => dlv[i] \subseteq {data[Sender]}

(* The lemmas of docs/protocols/echo.md ("Why it is safe").               *)
(* An honest node signs at most one digest per instance.                  *)
SignOnce ==
    \A i \in Honest : \A d, e \in Value :
        (<<i, d>> \in sigs /\ <<i, e>> \in sigs) => d = e
(* At most one digest can ever be certified (two echo quorums share an    *)
(* honest signer).                                                        *)
CertUnique ==
    \A d, e \in Value : (ValidCert(d) /\ ValidCert(e)) => d = e
(* Every certificate an honest node holds is a valid one. *)
CertValid ==
    \A i \in Honest : cert[i] # Nil => ValidCert(cert[i])

(* An honest sender's broadcast is delivered by every honest node (the    *)
(* sender's payload data[Sender] never changes once set).                 *)
Validity ==
    (Sender \notin byz /\ data[Sender] # Nil) ~>
        (\A i \in Node \ byz : data[Sender] \in dlv[i])

(* Totality does NOT hold (consistent broadcast): a Byzantine sender can   *)
(* show its certificate to f honest nodes or fewer; catch-up needs f+1     *)
(* reports.  What catch-up gives: once f+1 honest nodes delivered, every   *)
(* honest node does.                                                      *)
Totality ==
    (\E i \in Honest : dlv[i] # {}) ~> (\A i \in Honest : dlv[i] # {})

DeliveredBy == {i \in Honest : dlv[i] # {}}

CatchUpTotality ==
    (Cardinality(DeliveredBy) >= F + 1) ~> (\A i \in Honest : dlv[i] # {})

(***************************************************************************)
(* The liveness properties as invariants, checked in the safety models     *)
(* (with symmetry, under every choice of byz).  Without restarts every     *)
(* behaviour takes finitely many steps and then stutters in a state s; it  *)
(* is fair iff s is Quiescent (no receipt of an honest message enabled),   *)
(* and every reachable Quiescent state ends such a fair behaviour.  The    *)
(* premises and conclusions are stable (data[Sender], deliveries and byz   *)
(* never change back), so Validity (CatchUpTotality, Totality) holds of    *)
(* FairSpec without restarts iff its AtQuiescence form is an invariant of  *)
(* Spec without restarts.  The safety models check these invariants with   *)
(* restarts on, over a superset of the reachable states, so they cover     *)
(* the restart-free runs; Quiescent does not depend on restarts.           *)
(***************************************************************************)
(* Quiescent is ~ENABLED HonestStep with the guards of the honest        *)
(* receipts spelled out (Idle), which TLC evaluates much faster than       *)
(* ENABLED; QuiescentSound checks that the two agree (EchoSafe does).      *)
CanRecvSend(i) ==
    /\ Sender \in Honest /\ i # Sender /\ Open(i) /\ data[Sender] # Nil
    /\ IF cert[i] # Nil
         THEN data[Sender] = cert[i]
         ELSE data[i] = Nil /\ (CheckVote => vote[i] \in {Nil, data[Sender]})
CanRecvFinal(i) ==
    /\ Sender \in Honest /\ i # Sender /\ Open(i)
    /\ cert[i] = Nil /\ cert[Sender] # Nil
CanRecvEcho(i) ==
    /\ i = Sender /\ Sender \in Honest /\ Open(Sender)
    /\ cert[Sender] = Nil /\ data[Sender] # Nil
    /\ \E j \in Honest \ (got \cup {Sender}) : <<j, data[Sender]>> \in sigs
CanRecvDelivered(i) ==
    /\ CatchUp /\ Open(i)
    /\ \E j \in Honest \ {i} : cu[i][j] = Nil /\ dlv[j] # {}

Idle ==
    ~\E i \in Honest :
        \/ CanRecvSend(i) \/ CanRecvFinal(i)
        \/ CanRecvEcho(i) \/ CanRecvDelivered(i)

QuiescentSound == Idle = ~ENABLED HonestStep

Quiescent == Idle

ValidityAtQuiescence ==
    (Quiescent /\ Sender \in Honest /\ data[Sender] # Nil) =>
        \A i \in Honest : data[Sender] \in dlv[i]

CatchUpTotalityAtQuiescence ==
    (Quiescent /\ Cardinality(DeliveredBy) >= F + 1) =>
        \A i \in Honest : dlv[i] # {}

TotalityAtQuiescence ==
    (Quiescent /\ DeliveredBy # {}) => \A i \in Honest : dlv[i] # {}

(* Symmetry, for the safety models only (TLC's liveness checking is not   *)
(* sound under symmetry): values are interchangeable, and so are the       *)
(* non-senders (byz is a variable, permuted with them).                    *)
Symmetry == Permutations(Value) \cup Permutations(Node \ {Sender})
=============================================================================
