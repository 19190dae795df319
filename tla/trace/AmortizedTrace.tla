---------------------------- MODULE AmortizedTrace ----------------------------
(***************************************************************************)
(* Trace validation of weft's amortized multi-shot BRB                     *)
(* (protocols/brb/amortized.c) against AmortizedBRB.tla, as               *)
(* BrachaTrace.tla and EchoTrace.tla do for Bracha and the echo broadcast  *)
(* (tla/trace/README.md).                                                  *)
(*                                                                         *)
(* amortized2tla.py turns a trace of the C code (weft-sim --trace          *)
(* --trace-data, or the merged traces of weftd --trace) into the module    *)
(* AmortizedTraceLog: the committee, f, the stream's sender, the Byzantine *)
(* nodes, the values, the number of instances TNInst, the optimistic       *)
(* parameter, and TraceLog, one record per step of an honest node (steps  *)
(* of Byzantine nodes are not logged: the spec lets them do anything).  A  *)
(* record e:                                                               *)
(*                                                                         *)
(*   e.k    the step: "request" (amortized_on_request at the sender),      *)
(*          "propose" (a PROPOSE of the stream), "vote" (an honest node's   *)
(*          VOTE as its tick sent it, or its standalone READY when e.v =   *)
(*          "none": flushed, resent or replayed), "echo" / "ready" (the    *)
(*          echo / READY part of an honest VOTE its tick did not send: a   *)
(*          resend with another READY riding or none, a replay), "becho" / *)
(*          "bready" (the same for a Byzantine VOTE; two records for a     *)
(*          VOTE with both parts), "payload" (a PAYLOAD), "tick" (the      *)
(*          stream's vote tick), "flush" (the stream's flush timer),       *)
(*          "resend" (the core's catch-up timer: STATUS and the resend     *)
(*          hook), "noop" (anything else: start, a PULL, STATUS (with the  *)
(*          replays of peer_lacks), DELIVERED, the pull timer, other       *)
(*          streams, rejected input)                                       *)
(*   e.i    the node taking the step ("n1" is node 1); e.j the link sender *)
(*   e.q, e.v   the instance and the digest the input is about: the       *)
(*          PROPOSE's or PAYLOAD's seq and payload digest, a VOTE's seq    *)
(*          and echo ("none": standalone), a part's instance and digest,   *)
(*          the request's seq and payload                                  *)
(*   e.rq, e.rv   a VOTE's READY: the instance it is for and its digest   *)
(*          (-1 and "none": no READY)                                      *)
(*   e.prop, e.votes, e.pulls, e.pays, e.reps   what node i sent in the     *)
(*          step, for the stream: PROPOSE <<q, v>>; VOTE <<q, echo, rq,    *)
(*          rv>> (a standalone READY(rq, rv) is <<rq+1, "none", rq, rv>>); *)
(*          PULL <<q, digest, to>>; PAYLOAD <<q, v>>; the core's catch-up  *)
(*          DELIVERED <<q, v>>                                             *)
(*   e.dlv  what node i delivered in the step: <<q, v>> ("!twice": it     *)
(*          delivered q twice in the step)                                 *)
(*   e.line the line of the NDJSON trace the step starts at                *)
(*                                                                         *)
(* Each step of TraceNext consumes the l-th record, either as the spec     *)
(* action it names (the whole callback), whose visible effects must be     *)
(* what the trace shows, or, when the C code ignores the input, as a       *)
(* stuttering step of AmortizedBRB in which the node may only send again  *)
(* what the spec says it has sent or holds.  The trace is a behaviour of   *)
(* AmortizedBRB iff a state with l = Len(TraceLog) + 1 is reachable, i.e.  *)
(* iff TLC reports the invariant TraceNotMatched violated; otherwise the   *)
(* depth D of TLC's state graph says that TraceLog[D] is the first record  *)
(* no behaviour matching the ones before it can take.                      *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC, AmortizedTraceLog

CONSTANT Nil    \* a model value, as in AmortizedBRB

VARIABLES byz, st, myEcho, myReady, voted, ride, flushed,
          l     \* the index of the next record of TraceLog to match

(* The scenario fixes the Byzantine nodes; a pending READY is always       *)
(* flushed in the end (flush_ms, 0 included); the core resends.            *)
A == INSTANCE AmortizedBRB WITH Node <- TNode, F <- TF, Sender <- TSender,
                                Value <- TValue, NInst <- TNInst,
                                Optimistic <- TOptimistic, Flush <- TRUE,
                                Resend <- TRUE, ByzSets <- {TByz}

specVars == <<byz, st, myEcho, myReady, voted, ride, flushed>>
traceVars == <<byz, st, myEcho, myReady, voted, ride, flushed, l>>

(***************************************************************************)
(* The messages of honest node j's tick and flush, in the records' form:   *)
(* its VOTE(k) for every k it voted (the echo, and the READY that rode on  *)
(* it: ride[j][k]) and a standalone READY(p) for every p it flushed.  Once *)
(* there, a message never changes (votes are persisted and a ride is       *)
(* fixed), so the ones a tick or flush makes are Msgs' \ Msgs.             *)
(***************************************************************************)
VoteOf(ec, rd, mr, j, k) ==
    <<k, ec[j][k], IF rd[j][k] = Nil THEN -1 ELSE rd[j][k],
                   IF rd[j][k] = Nil THEN "none" ELSE mr[j][rd[j][k]]>>
Msgs(vt, rd, ec, mr, fl, j) ==
    {VoteOf(ec, rd, mr, j, k) : k \in vt[j]} \cup {<<p + 1, "none", p, mr[j][p]>> : p \in fl[j]}
Sent(j) == Msgs(voted, ride, myEcho, myReady, flushed, j)
SentNext(j) == Msgs(voted', ride', myEcho', myReady', flushed', j)

Inst == 0 .. TNInst - 1

(***************************************************************************)
(* What node i may send outside its tick and flush (records' form).        *)
(* resend (the core's catch-up timer runs the resend hook for every open   *)
(* instance k): VOTE(k) with its echo, once voted, carrying a READY p < k  *)
(* it readied (pending_take: the earliest pending one; see ResendRides)    *)
(* or none, and a standalone READY(k) once readied.  peer_lacks (on a      *)
(* peer's STATUS) replays, for a delivered instance k, VOTE(k) with the    *)
(* echo alone and a standalone READY(k).  Neither step changes a vote.     *)
(***************************************************************************)
Resent(i, m) ==
    IF m[2] = "none"
    THEN /\ m[3] \in Inst /\ m[1] = m[3] + 1
         /\ A!Open(st[i][m[3]]) /\ myReady[i][m[3]] = m[4]
    ELSE /\ m[1] \in voted[i] /\ A!Open(st[i][m[1]]) /\ myEcho[i][m[1]] = m[2]
         /\ \/ m[3] = -1
            \/ m[3] \in Inst /\ m[3] < m[1] /\ myReady[i][m[3]] = m[4]
Replayed(i, m) ==
    IF m[2] = "none"
    THEN /\ m[3] \in Inst /\ m[1] = m[3] + 1
         /\ st[i][m[3]].nd > 0 /\ myReady[i][m[3]] = m[4]
    ELSE /\ m[1] \in voted[i] /\ st[i][m[1]].nd > 0 /\ myEcho[i][m[1]] = m[2] /\ m[3] = -1

(* The READYs a resend step's VOTEs carry: pending_take took them from the *)
(* stream's pending READYs, so they are announced from then on: the step   *)
(* is the spec's ResendAnnounce of exactly those (some or all of the       *)
(* pending ones), and a stuttering step when it took none.                 *)
ResendRides(e) == {m[3] : m \in {x \in e.votes : x[2] # "none" /\ x[3] # -1}}

(* The C code's handle_vote counts a part when its instance is open and   *)
(* the voter's vote of that kind is not counted yet (count_vote).          *)
EchoNew(i, j, k) == k \in Inst /\ A!Open(st[i][k]) /\ st[i][k].e[j] = Nil
ReadyNew(i, j, k) == k \in Inst /\ A!Open(st[i][k]) /\ st[i][k].r[j] = Nil

(* The spec action of the record. *)
Act(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request" -> /\ i = TSender
                                /\ A!Broadcast(e.v)
                                /\ e.q = A!NextSeq
          [] e.k = "propose" -> /\ j = TSender
                                /\ IF TSender \in byz THEN A!ByzPropose(i, e.q, e.v)
                                   ELSE e.v = myEcho[TSender][e.q] /\ A!RecvPropose(i, e.q)
          [] e.k = "vote"    -> IF e.v = "none"
                                  THEN /\ e.rq \in Inst /\ myReady[j][e.rq] = e.rv
                                       /\ A!RecvStandalone(i, j, e.rq)
                                  ELSE /\ e.q \in voted[j]
                                       /\ VoteOf(myEcho, ride, myReady, j, e.q) = <<e.q, e.v, e.rq, e.rv>>
                                       /\ A!RecvVote(i, j, e.q)
          [] e.k = "echo"    -> myEcho[j][e.q] = e.v /\ A!RecvEchoOnly(i, j, e.q)
          [] e.k = "ready"   -> myReady[j][e.q] = e.v /\ A!RecvStandalone(i, j, e.q)
          [] e.k = "becho"   -> A!ByzEcho(i, j, e.q, e.v)
          [] e.k = "bready"  -> A!ByzReady(i, j, e.q, e.v)
          [] e.k = "payload" -> /\ e.v = st[i][e.q].tgt
                                /\ IF j \in byz THEN \E j2 \in TNode : A!Pull(i, e.q, j2)
                                   ELSE A!Pull(i, e.q, j)
          [] e.k = "tick"    -> A!Tick(i)
          [] e.k = "flush"   -> A!DoFlush(i)
          [] e.k = "resend"  -> A!ResendAnnounce(i) /\ flushed'[i] \ flushed[i] = ResendRides(e)
          [] OTHER           -> FALSE

(* When the C code ignores the input (the receiver's state decides, not   *)
(* what was sent): on_propose returns (CanPropose: the instance delivered, *)
(* or a repeat that supplies no payload it can deliver); neither part of a *)
(* VOTE counts (for a part record: that part); handle_payload: delivered,  *)
(* not targeted, or the payload held already; the tick with nothing due,   *)
(* the flush with nothing pending, the resend with no READY riding.  A     *)
(* PAYLOAD with another digest than the target is rejected by the C code:  *)
(* a "noop" record.                                                        *)
Ignored(e) ==
    LET i == e.i
        j == e.j
    IN  CASE e.k = "request" -> FALSE
          [] e.k = "propose" -> ~A!CanPropose(i, e.q, e.v)
          [] e.k = "vote"    -> /\ ~(e.v # "none" /\ EchoNew(i, j, e.q))
                                /\ ~(e.rq # -1 /\ ReadyNew(i, j, e.rq))
          [] e.k \in {"becho", "echo"}  -> ~EchoNew(i, j, e.q)
          [] e.k \in {"bready", "ready"} -> ~ReadyNew(i, j, e.q)
          [] e.k = "payload" -> \/ ~A!Open(st[i][e.q]) \/ st[i][e.q].tgt = Nil
                                \/ st[i][e.q].data = st[i][e.q].tgt
          [] e.k = "tick"    -> A!Due(i) = {}
          [] e.k = "flush"   -> A!Pending(i) = {}
          [] e.k = "resend"  -> ResendRides(e) = {}
          [] OTHER           -> TRUE

(***************************************************************************)
(* The visible effects of a step, in the state after it (for a stuttering  *)
(* step the same as before):                                              *)
(*   VOTEs: every message of i's tick and flush the spec says i has after  *)
(*     the step that it did not have before (the tick's VOTEs with their   *)
(*     rides, the flush's standalone READYs) is sent in the step, and      *)
(*     every VOTE sent is one: in a tick or flush step, one of those; in   *)
(*     a resend step, Resent; in a step on other input (STATUS), Replayed; *)
(*     in a resend step (ResendAnnounce), the READYs it announces are the  *)
(*     ones riding on its VOTEs (Act);                                     *)
(*   PROPOSE: only the sender, its echo (= its payload) of that seq, and a *)
(*     new echo of the sender (its broadcast) is proposed in the step;     *)
(*   PULL(q, d) to t: i targets d in q, holds no payload, and t is one it  *)
(*     may pull from (PullFrom: an echoer of d, else a readier);           *)
(*   PAYLOAD(q, v) and DELIVERED(q, v): i holds v or delivered it;         *)
(*   deliveries: i delivered in q in the step iff the spec's counter nd    *)
(*     grew, and the value is the one the spec delivered.                  *)
(***************************************************************************)
NewEcho(k) == myEcho[TSender][k] = Nil /\ myEcho'[TSender][k] # Nil

VoteOK(e, m) ==
    CASE e.k \in {"tick", "flush"} -> m \in SentNext(e.i)
      [] e.k = "resend"            -> Resent(e.i, m)
      [] e.k = "noop"              -> Replayed(e.i, m)
      [] OTHER                     -> FALSE

Effects(e) ==
    LET i == e.i IN
    /\ \A m \in e.votes : VoteOK(e, m)
    /\ e.k # "resend" => SentNext(i) \ Sent(i) \subseteq e.votes
    /\ \A m \in e.prop : i = TSender /\ m[1] \in Inst /\ myEcho'[i][m[1]] = m[2]
    /\ i = TSender => \A k \in Inst : NewEcho(k) => <<k, myEcho'[i][k]>> \in e.prop
    /\ \A m \in e.pulls :
          /\ m[1] \in Inst
          /\ LET s == st'[i][m[1]] IN
               A!Open(s) /\ s.tgt = m[2] /\ s.data = Nil /\ m[3] \in A!PullFrom(i, s)
    /\ \A m \in e.pays : m[1] \in Inst /\ (st'[i][m[1]].data = m[2] \/ m[2] \in st'[i][m[1]].del)
    /\ \A m \in e.reps : m[1] \in Inst /\ m[2] \in st'[i][m[1]].del
    /\ \A m \in e.dlv : m[1] \in Inst
    /\ \A k \in Inst :
          LET d == {m[2] : m \in {x \in e.dlv : x[1] = k}} IN
          IF d = {} THEN st'[i][k].nd = st[i][k].nd
          ELSE /\ st'[i][k].nd = st[i][k].nd + 1
               /\ d \subseteq st'[i][k].del

Stutter(e) == UNCHANGED specVars /\ Effects(e)

TraceInit == A!Init /\ l = 1

TraceNext ==
    /\ l <= Len(TraceLog)
    /\ LET e == TraceLog[l] IN
         IF Ignored(e) THEN Stutter(e) ELSE Act(e) /\ Effects(e)
    /\ l' = l + 1

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

(* Violated iff the whole log was matched: the counterexample TLC prints   *)
(* is the behaviour of AmortizedBRB that the trace is.                     *)
TraceMatched == l = Len(TraceLog) + 1
TraceNotMatched == ~TraceMatched

(* Sanity: every state of a matching behaviour is a state of the spec. *)
TraceTypeOK == A!TypeOK /\ l \in 1..Len(TraceLog) + 1

(* The spec's EchoQuorumUnique, restated for speed: it quantifies over two *)
(* values of Value for every pair of honest nodes and instance, which for   *)
(* a long stream (20 instances, 40 values) costs TLC most of its time.  A  *)
(* value with an echo quorum is in the tally, so it is enough to look at   *)
(* the values the honest tallies hold: at most one of them has a quorum.   *)
TallyValues(k) == {st[i][k].e[j] : i \in TNode \ byz, j \in TNode} \ {Nil}
EchoQuorumUniqueT ==
    \A k \in Inst :
        Cardinality({v \in TallyValues(k) :
                        \E i \in TNode \ byz : A!Count(st[i][k].e, v) >= A!EchoQuorum}) <= 1

(* The safety properties of the spec along the trace. *)
TraceSafe == A!Agreement /\ A!Integrity /\ EchoQuorumUniqueT /\ A!HonestReadyUnique
=============================================================================
