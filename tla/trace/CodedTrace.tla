------------------------------ MODULE CodedTrace ------------------------------
(***************************************************************************)
(* Trace validation of weft's erasure-coded reliable broadcast against     *)
(* CodedBRB.tla, as EchoTrace.tla does for the echo broadcast              *)
(* (tla/trace/README.md, "Erasure-coded broadcast").                        *)
(*                                                                         *)
(* coded2tla.py turns a trace of the C code (weft-sim --trace              *)
(* --trace-data, or the merged traces of weftd --trace) into the module    *)
(* CodedTraceLog: the committee, f, the sender, the Byzantine nodes, the   *)
(* roots -- a codeword root named by its payload's digest (TValue), any    *)
(* other by "b" or "u" and its first bytes (TBadRoot) -- and TraceLog, one *)
(* record per step of an honest node (steps of Byzantine nodes are not     *)
(* logged: the spec lets them do anything).  A record e:                    *)
(*                                                                         *)
(*   e.k    the step: "request" (coded_on_request at the sender), "val" /  *)
(*          "echo" / "ready" (coded_on_message of that message of the      *)
(*          instance, accepted), "delivered" (a catch-up DELIVERED report  *)
(*          of the instance), "timer" (the resend timer), "restart" (the   *)
(*          node crashed: memory lost, kv kept), "noop" (anything else: a  *)
(*          STATUS, a message of another instance, one the C code          *)
(*          rejected)                                                      *)
(*   e.i    the node taking the step ("n1" is node 1); e.j the link sender *)
(*   e.r    the root the VAL, ECHO or READY names; the outcome a DELIVERED *)
(*          report carries (a value, or "invalid"); the request's payload  *)
(*   e.vs, e.es, e.rs   the root of the VALs / the ECHO / the READY node i  *)
(*          sent for the instance in the step (resends included): "none"  *)
(*          or a root; "!conflict" (matches nothing) when it sent two      *)
(*          different ones, a VAL as a non-sender, or an ECHO carrying     *)
(*          another node's leaf                                            *)
(*   e.rep  the DELIVERED report it sent (catch-up offer), or "none"       *)
(*   e.dlv  the outcome node i delivered in the step, or "none"            *)
(*   e.line the line of the NDJSON trace the step starts at                *)
(*                                                                         *)
(* Each step of TraceNext consumes the l-th record, either as the spec     *)
(* action it names (the whole callback: RecvEchoFrom and not the models'   *)
(* scheduled RecvEcho or ByzVotes -- here any voter, honest or not, and    *)
(* any order, as the trace says), whose visible effects must be what the   *)
(* trace shows, or, when the C code ignores the input, as a stuttering     *)
(* step of CodedBRB in which the node may only resend what it has (its     *)
(* VALs as the sender, its ECHO and READY, DELIVERED reports of what it    *)
(* delivered).  The trace is a behaviour of CodedBRB iff a state with      *)
(* l = Len(TraceLog) + 1 is reachable, i.e. iff TLC reports the invariant  *)
(* TraceNotMatched violated; otherwise the depth D of TLC's state graph    *)
(* says that TraceLog[D] is the first record no behaviour matching the     *)
(* ones before it can take.                                                *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC, CodedTraceLog

CONSTANT Nil    \* a model value, as in CodedBRB

VARIABLES byz, echo, ready, esent, rsent, cu, dlv, ndel, fake, garble, crashes,
          l     \* the index of the next record of TraceLog to match

(* The scenario fixes the Byzantine nodes; crash-recover and catch-up are *)
(* part of what the C code may do.                                        *)
C == INSTANCE CodedBRB WITH Node <- TNode, F <- TF, Sender <- TSender,
                            Value <- TValue, BadRoot <- TBadRoot,
                            Invalid <- TInvalid, ByzSets <- {TByz},
                            MaxRestarts <- TRestarts, CatchUp <- TRUE

specVars == <<byz, echo, ready, esent, rsent, cu, dlv, ndel, fake, garble,
              crashes>>
traceVars == <<specVars, l>>

(* The sender's resend timer re-echoes its broadcast after a restart      *)
(* (resend -> echo_own, with its VALs) when it is open, holds its payload  *)
(* (kv "M", restore_own) and has not echoed in this run.                   *)
ReEchoes(e) ==
    /\ e.k = "timer" /\ e.i = TSender /\ TSender \notin byz
    /\ C!Open(e.i) /\ echo[e.i][e.i] = Nil /\ esent[e.i] # {}
    /\ e.es # "none"

(* The spec action of the record. *)
Act(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request"   -> i = TSender /\ e.r \in TValue /\ C!Broadcast(e.r)
          [] e.k = "val"       -> j = TSender /\ C!RecvVal(i, e.r)
          [] e.k = "echo"      -> C!RecvEchoFrom(i, j, e.r)
          [] e.k = "ready"     -> C!RecvReadyFrom(i, j, e.r)
          [] e.k = "delivered" -> C!RecvDeliveredFrom(i, j, e.r)
          [] e.k = "restart"   -> C!Restart(i)
          [] e.k = "timer"     -> C!ResendOwn
          [] OTHER             -> FALSE

(* When the C code ignores the input (the receiver's state decides, not   *)
(* what was sent): brb_inst_get answers "delivered" (~Open); echo(): an    *)
(* ECHO sent already in this run, or a persisted ECHO for another root     *)
(* (val_conflicts); brb_tally_add: the voter's vote of that kind counted   *)
(* already; on_delivered: the peer's report counted already; a timer that  *)
(* does not re-echo; a crash of a delivered node.  A rejected message is a *)
(* "noop" record.                                                          *)
Ignored(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request"   -> FALSE
          [] e.k = "val"       -> \/ ~C!Open(i)
                                  \/ echo[i][i] # Nil
                                  \/ ~C!MayVote(esent[i], e.r)
          [] e.k = "echo"      -> ~C!Open(i) \/ echo[i][j] # Nil
          [] e.k = "ready"     -> ~C!Open(i) \/ ready[i][j] # Nil
          [] e.k = "delivered" -> ~C!Open(i) \/ cu[i][j] # Nil
          [] e.k = "restart"   -> ~C!Open(i)
          [] e.k = "timer"     -> ~ReEchoes(e)
          [] OTHER             -> TRUE

(* What the node may (re)send in any step: as the sender its VALs          *)
(* (resend), its ECHO and READY (resend while open; peer_lacks from the    *)
(* "L" record after delivery), DELIVERED reports of what it delivered      *)
(* (offer).                                                                *)
KeptVal(e) == e.vs = "none" \/ (e.i = TSender /\ e.vs \in esent[e.i])
KeptEcho(e) == e.es = "none" \/ e.es \in esent[e.i]
KeptReady(e) == e.rs = "none" \/ e.rs \in rsent[e.i]
KeptRep(e) == e.rep = "none" \/ e.rep \in dlv[e.i]

Stutter(e) ==
    /\ UNCHANGED specVars
    /\ KeptVal(e) /\ KeptEcho(e) /\ KeptReady(e) /\ KeptRep(e)
    /\ e.dlv = "none"

(* The visible effects of an action step must be the logged ones.         *)
(* VALs and ECHO: the request sends the VALs of its root and its ECHO; a  *)
(*   VAL taken makes the node ECHO that root; the sender's re-echo sends   *)
(*   its VALs and its ECHO again; no other action step sends either.      *)
(* READY: sent iff the node said READY for a new root in the step          *)
(*   (ready(); a restarted node's READY is restored, not sent again).     *)
(* Delivery: iff the node delivered, that outcome.                        *)
Effects(e) ==
    LET i == e.i IN
    /\ CASE e.k = "request" -> e.vs = e.r /\ e.es = e.r
         [] e.k = "val"     -> e.vs = "none" /\ e.es = e.r
         [] e.k = "timer"   -> e.vs \in esent[i] /\ e.es \in esent[i]
         [] OTHER           -> e.vs = "none" /\ e.es = "none"
    /\ IF rsent'[i] = rsent[i] THEN e.rs = "none"
       ELSE e.rs \in rsent'[i] \ rsent[i]
    /\ KeptRep(e)
    /\ IF e.dlv = "none"
         THEN ndel'[i] = ndel[i]
         ELSE ndel'[i] = ndel[i] + 1 /\ e.dlv \in dlv'[i]

TraceInit == C!Init /\ l = 1

TraceNext ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         IF Ignored(e) THEN Stutter(e) ELSE Act(e) /\ Effects(e)
    /\ l' = l + 1

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

(* Violated iff the whole log was matched: the counterexample TLC prints   *)
(* is the behaviour of CodedBRB that the trace is.                         *)
TraceMatched == l = Len(TraceLog) + 1
TraceNotMatched == ~TraceMatched

(* Sanity: every state of a matching behaviour is a state of the spec. *)
TraceTypeOK == C!TypeOK /\ l \in 1..Len(TraceLog) + 1

(* The safety properties and lemmas of the spec along the trace. *)
TraceSafe == /\ C!Agreement /\ C!Integrity /\ C!VoteOnce
             /\ C!HonestReadyUnique /\ C!ReadyHasFragments /\ C!DeliveredVerdict
=============================================================================
