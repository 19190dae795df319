------------------------------ MODULE EchoTrace ------------------------------
(***************************************************************************)
(* Trace validation of weft's signed echo broadcast against EchoBRB.tla,   *)
(* as BrachaTrace.tla does for Bracha (tla/trace/README.md).               *)
(*                                                                         *)
(* echo2tla.py turns a trace of the C code (weft-sim --trace --trace-data, *)
(* or the merged traces of weftd --trace) into the module EchoTraceLog:    *)
(* the committee, f, the sender, the Byzantine nodes, the values, and      *)
(* TraceLog, one record per step of an honest node (steps of Byzantine     *)
(* nodes are not logged: the spec lets them do anything).  A record e:     *)
(*                                                                         *)
(*   e.k    the step: "request" (echo_on_request at the sender), "send" /  *)
(*          "echo" / "final" (echo_on_message of that message of the       *)
(*          instance), "delivered" (a catch-up DELIVERED report of the     *)
(*          instance), "restart" (the node crashed: memory lost, kv kept), *)
(*          "noop" (anything else: a timer, a STATUS, a message of another *)
(*          instance, a message the C code rejected)                      *)
(*   e.i    the node taking the step ("n1" is node 1); e.j the link sender *)
(*   e.v    the value the message carries: the SEND's payload digest, the *)
(*          FINAL's digest, the DELIVERED payload's digest; for an ECHO    *)
(*          "ok" (the sender verified it and went on) or "!bad" (rejected  *)
(*          as a bad signature)                                            *)
(*   e.cs   the signers a received FINAL's certificate lists               *)
(*   e.sig  the ECHO node i sent in the step: "none", the digest its       *)
(*          signature is over when a certificate an honest node accepted   *)
(*          lists it, else "?"                                             *)
(*   e.snd, e.fin, e.rep   the SEND / FINAL / DELIVERED report node i sent *)
(*          for the instance in the step: "none" or the value (the FINAL's *)
(*          certificate signers in e.fcs); "!conflict" (matches nothing)   *)
(*          when it sent two different ones, or one it may never send      *)
(*   e.dlv  the value node i delivered in the step, or "none"              *)
(*   e.line the line of the NDJSON trace the step starts at                *)
(*                                                                         *)
(* Each step of TraceNext consumes the l-th record, either as the spec     *)
(* action it names (the whole callback), whose visible effects must be     *)
(* what the trace shows, or, when the C code ignores the input, as a       *)
(* stuttering step of EchoBRB in which the node may only resend what it    *)
(* already has (its signature, the sender's SEND and FINAL, DELIVERED      *)
(* reports of what it delivered).  The trace is a behaviour of EchoBRB iff *)
(* a state with l = Len(TraceLog) + 1 is reachable, i.e. iff TLC reports   *)
(* the invariant TraceNotMatched violated; otherwise the depth D of TLC's  *)
(* state graph says that TraceLog[D] is the first record no behaviour      *)
(* matching the ones before it can take.                                   *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC, EchoTraceLog

CONSTANT Nil    \* a model value, as in EchoBRB

VARIABLES byz, data, vote, sigs, got, cert, cu, dlv, ndel,
          l     \* the index of the next record of TraceLog to match

(* The scenario fixes the Byzantine nodes; crash-recover and catch-up are *)
(* part of what the C code may do.                                        *)
E == INSTANCE EchoBRB WITH Node <- TNode, F <- TF, Sender <- TSender,
                           Value <- TValue, ByzSets <- {TByz},
                           Restarts <- TRUE, CatchUp <- TRUE

specVars == <<byz, data, vote, sigs, got, cert, cu, dlv, ndel>>
traceVars == <<byz, data, vote, sigs, got, cert, cu, dlv, ndel, l>>

(* The values a logged value may stand for ("?": any). *)
Val(x) == IF x = "?" THEN TValue ELSE {x}

(* A certificate the C code accepted (on_final verified every signature  *)
(* and counted at least echo_quorum distinct signers): its honest signers *)
(* really signed its digest.  From an honest sender it is the one it made *)
(* (certify() lists the signers of its tally, which stops growing then).  *)
CertOK(e) ==
    IF TSender \in byz
      THEN /\ Cardinality(e.cs) >= E!CertQuorum
           /\ \A j \in e.cs : j \in byz \/ <<j, e.v>> \in sigs
      ELSE e.cs = got

(* The spec action of the record. *)
Act(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request"   -> \E v \in Val(e.v) : i = TSender /\ E!Broadcast(v)
          [] e.k = "send"      -> j = TSender /\ E!RecvSend(i, e.v)
          [] e.k = "echo"      -> i = TSender /\ e.v = "ok" /\ E!RecvEcho(j)
          [] e.k = "final"     -> j = TSender /\ CertOK(e) /\ E!RecvFinal(i, e.v)
          [] e.k = "delivered" -> E!RecvDelivered(i, j, e.v)
          [] e.k = "restart"   -> E!Restart(i)
          [] OTHER             -> FALSE

(* When the C code ignores the input (the receiver's state decides, not   *)
(* what was sent): brb_inst_get answers "delivered" (~Open); on_send: a    *)
(* certified node takes only the certified payload, an uncertified one     *)
(* only its first SEND, and never one against its persisted vote; on_echo: *)
(* certified, or the signer counted already (tally_has); on_final: a      *)
(* certificate held already; on_delivered: the peer's report counted       *)
(* already.  A rejected message is a "noop" record; an ECHO rejected for   *)
(* its signature is checked below (BadEchoOK).                             *)
Ignored(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request"   -> FALSE
          [] e.k = "send"      -> \/ ~E!Open(i)
                                  \/ cert[i] # Nil /\ e.v # cert[i]
                                  \/ cert[i] = Nil /\ data[i] # Nil
                                  \/ cert[i] = Nil /\ vote[i] \notin {Nil, e.v}
          [] e.k = "echo"      -> \/ ~E!Open(i) \/ cert[i] # Nil \/ j \in got
                                  \/ e.v = "!bad"
          [] e.k = "final"     -> ~E!Open(i) \/ cert[i] # Nil
          [] e.k = "delivered" -> ~E!Open(i) \/ cu[i][j] # Nil
          [] e.k = "restart"   -> ~E!Open(i)
          [] OTHER             -> TRUE

(* The honest sender rejected an ECHO from j as a bad signature: j did    *)
(* not sign the sender's digest, so j is Byzantine or signed another one.  *)
BadEchoOK(e) ==
    e.k = "echo" /\ e.v = "!bad" =>
        \/ e.j \in byz
        \/ \E d \in TValue \ {data[e.i]} : <<e.j, d>> \in sigs

(* What the node may (re)send in any step: its own signature (resend,     *)
(* after a restart the same one again), as the sender its payload (resend, *)
(* answer_late_echo) and its certificate (answer_late_echo), and          *)
(* DELIVERED reports of what it delivered (catch-up offers).              *)
KeptSig(e) == e.sig = "none" \/ \E x \in Val(e.sig) : <<e.i, x>> \in sigs
KeptSnd(e) == e.snd = "none" \/ (e.i = TSender /\ data[e.i] = e.snd)
KeptFin(e) == e.fin = "none" \/ (e.i = TSender /\ cert[e.i] = e.fin /\ e.fcs = got)
KeptRep(e) == e.rep = "none" \/ e.rep \in dlv[e.i]

Stutter(e) ==
    /\ UNCHANGED specVars
    /\ BadEchoOK(e)
    /\ KeptSig(e) /\ KeptSnd(e) /\ KeptFin(e) /\ KeptRep(e)
    /\ e.dlv = "none"

(* The visible effects of an action step must be the logged ones.         *)
(* ECHO: sent iff node i signed in the step (on_send's echo(): no          *)
(*   certificate, no payload before, one after), over the payload it took. *)
(* SEND: the sender's request multicasts it; no other action step sends   *)
(*   one.  FINAL: sent iff the sender certified in the step, with its      *)
(*   tally as the certificate.  Delivery: iff i delivered, that value.     *)
Signed(i) == i # TSender /\ cert[i] = Nil /\ data[i] = Nil /\ data'[i] # Nil
Certified(i) == i = TSender /\ cert[i] = Nil /\ cert'[i] # Nil

Effects(e) ==
    LET i == e.i IN
    /\ IF e.sig = "none" THEN ~Signed(i)
       ELSE Signed(i) /\ data'[i] \in Val(e.sig)
    /\ IF e.snd = "none" THEN e.k # "request"
       ELSE e.k = "request" /\ data'[i] = e.snd
    /\ IF e.fin = "none" THEN ~Certified(i)
       ELSE Certified(i) /\ cert'[i] = e.fin /\ e.fcs = got'
    /\ KeptRep(e)
    /\ IF e.dlv = "none"
         THEN ndel'[i] = ndel[i]
         ELSE ndel'[i] = ndel[i] + 1 /\ e.dlv \in dlv'[i]

TraceInit == E!Init /\ l = 1

TraceNext ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         IF Ignored(e) THEN Stutter(e) ELSE Act(e) /\ Effects(e)
    /\ l' = l + 1

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

(* Violated iff the whole log was matched: the counterexample TLC prints   *)
(* is the behaviour of EchoBRB that the trace is.                          *)
TraceMatched == l = Len(TraceLog) + 1
TraceNotMatched == ~TraceMatched

(* Sanity: every state of a matching behaviour is a state of the spec. *)
TraceTypeOK == E!TypeOK /\ l \in 1..Len(TraceLog) + 1

(* The safety properties of the spec along the trace. *)
TraceSafe == E!Agreement /\ E!Integrity /\ E!SignOnce /\ E!CertValid
=============================================================================
