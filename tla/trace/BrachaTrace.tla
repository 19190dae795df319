----------------------------- MODULE BrachaTrace -----------------------------
(***************************************************************************)
(* Trace validation of weft's Bracha BRB against BrachaBRB.tla, after      *)
(* Cirstea, Kuppe, Merz et al., "Validating traces of distributed programs *)
(* against TLA+ specifications" (2024).                                    *)
(*                                                                         *)
(* trace2tla.py turns a `weft-sim --trace` NDJSON trace into the module    *)
(* BrachaTraceLog: the committee, f, the sender, the Byzantine nodes, the  *)
(* values, and TraceLog, one record per step of an honest node for the     *)
(* instance under test (steps of Byzantine nodes are not logged: the spec  *)
(* lets them do anything).  A record e says:                               *)
(*                                                                         *)
(*   e.k    what the step was: "request" (on_request at the sender),       *)
(*          "send" / "echo" / "ready" (on_message of that Bracha message), *)
(*          "restart" (a crash of a crash_recover: memory lost, kv kept),  *)
(*          "noop" (anything else: a timer, a STATUS, a message of another *)
(*          instance, a message the C code rejected, a recovery)          *)
(*   e.i    the node taking the step ("n1" is the simulator's node 1);    *)
(*          e.j the link sender of the message                             *)
(*   e.v    the value the message carries (its payload digest), or "?"    *)
(*   e.echo / e.ready   the ECHO / READY node i multicast during the step: *)
(*          "none", a value, or "?" (sent, value unknown)                  *)
(*   e.dlv  the value node i delivered during the step, or "none"          *)
(*   e.line the line of the NDJSON trace the step starts at                *)
(*                                                                         *)
(* A value "?" appears only when the trace lacks the message bytes        *)
(* (weft-sim without --trace-data): TLC then tries every value, so the    *)
(* check is weaker.                                                        *)
(*                                                                         *)
(* Each step of TraceNext consumes the l-th record, either as the spec     *)
(* action it names (Broadcast, RecvSend, RecvEcho, RecvReady: the whole    *)
(* callback, tallies, the node's own ECHO/READY and its delivery), whose   *)
(* visible effects must be what the trace shows, or, when the C code       *)
(* ignores the input (a repeated vote, a closed instance, a SEND from a    *)
(* non-sender, a rejected message), as a stuttering step of BrachaBRB in   *)
(* which the node may only resend the votes it already has.  Nothing       *)
(* else happens between two records: receipts are logged at the receiver  *)
(* (recv), and a node's receipt of its own multicast is a no-op in the C   *)
(* code and is not logged.  The trace is a behaviour of BrachaBRB iff a    *)
(* state with l = Len(TraceLog) + 1 is reachable, i.e. iff TLC reports the *)
(* invariant TraceNotMatched violated.  Otherwise the search depth D of    *)
(* TLC's state graph says that TraceLog[D] is the first record no          *)
(* behaviour matching the ones before it can take.                         *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC, BrachaTraceLog

CONSTANT Nil    \* a model value, as in BrachaBRB

VARIABLES byz, echo, ready, esent, rsent, dlv, ndel, crashes,
          l     \* the index of the next record of TraceLog to match

(* The scenario fixes the Byzantine nodes; the trace the crashes of       *)
(* honest nodes (a crash_recover that keeps the store).                    *)
B == INSTANCE BrachaBRB WITH Node <- TNode, F <- TF, Sender <- TSender,
                             Value <- TValue, ByzSets <- {TByz},
                             MaxRestarts <- TMaxRestarts

specVars == <<byz, echo, ready, esent, rsent, dlv, ndel, crashes>>
traceVars == <<byz, echo, ready, esent, rsent, dlv, ndel, crashes, l>>

(* The values a logged value may stand for. *)
Val(x) == IF x = "?" THEN TValue ELSE {x}

(* An action step: the node sent a vote of this kind in the step iff it    *)
(* cast that vote in the step (its own tally entry went from Nil to the    *)
(* value).  A value that is no value ("!conflict": two different votes of *)
(* one kind in one step) matches nothing.                                  *)
NewVote(x, old, new) ==
    IF x = "none" THEN new = old
    ELSE old = Nil /\ new \in Val(x)

(* A stuttering step: a vote sent is a resend of a vote the node cast. *)
KeptVote(x, sent) == x = "none" \/ \E v \in Val(x) : v \in sent

Effects(e) ==
    LET i == e.i IN
    /\ NewVote(e.echo, echo[i][i], echo'[i][i])
    /\ NewVote(e.ready, ready[i][i], ready'[i][i])
    /\ IF e.dlv = "none"
         THEN ndel'[i] = ndel[i]
         ELSE ndel'[i] = ndel[i] + 1 /\ \E v \in Val(e.dlv) : v \in dlv'[i]

(* The spec action of the record. *)
Act(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request" -> \E v \in Val(e.v) : i = TSender /\ B!Broadcast(v)
          [] e.k = "send"    -> \E v \in Val(e.v) : j = TSender /\ B!RecvSend(i, v)
          [] e.k = "echo"    -> \E v \in Val(e.v) : B!RecvEcho(i, j, v)
          [] e.k = "ready"   -> \E v \in Val(e.v) : B!RecvReady(i, j, v)
          [] e.k = "restart" -> B!Restart(i)
          [] OTHER           -> FALSE

(* When the C code ignores the input: bracha_on_message rejects a SEND     *)
(* whose link sender is not the instance's sender; brb_inst_get answers   *)
(* "delivered" for a closed instance (B!Open); echo() returns when the     *)
(* node echoed already; brb_tally_add ignores a voter's second vote.       *)
Ignored(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request" -> FALSE
          [] e.k = "send"    -> j # TSender \/ ~B!Open(i) \/ echo[i][i] # Nil
          [] e.k = "echo"    -> ~B!Open(i) \/ echo[i][j] # Nil
          [] e.k = "ready"   -> ~B!Open(i) \/ ready[i][j] # Nil
          [] e.k = "restart" -> ~B!Open(i)
          [] OTHER           -> TRUE

Stutter(e) ==
    /\ UNCHANGED specVars
    /\ KeptVote(e.echo, esent[e.i])
    /\ KeptVote(e.ready, rsent[e.i])
    /\ e.dlv = "none"

TraceInit == B!Init /\ l = 1

TraceNext ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         IF Ignored(e) THEN Stutter(e)
         ELSE IF e.k = "restart" THEN Act(e)   \* a crash sends nothing
         ELSE Act(e) /\ Effects(e)
    /\ l' = l + 1

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

(* Violated iff the whole log was matched: the counterexample TLC prints   *)
(* is the behaviour of BrachaBRB that the trace is.                        *)
TraceMatched == l = Len(TraceLog) + 1
TraceNotMatched == ~TraceMatched

(* Without message bytes the anonymous values are interchangeable. *)
AnonSymmetry == Permutations(TAnon)

(* Sanity: every state of a matching behaviour is a state of the spec. *)
TraceTypeOK == B!TypeOK /\ l \in 1..Len(TraceLog) + 1

(* The safety properties of the spec along the trace (they hold in every *)
(* spec state; checking them here costs nothing and guards the mapping).  *)
TraceSafe == B!Agreement /\ B!Integrity
=============================================================================
