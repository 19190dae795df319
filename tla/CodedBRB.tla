------------------------------- MODULE CodedBRB -------------------------------
(***************************************************************************)
(* The erasure-coded Byzantine reliable broadcast (Cachin-Tessaro AVID,    *)
(* HoneyBadgerBFT's RBC) as weft implements it in protocols/brb/coded.c on *)
(* top of protocols/brb/core.c, for ONE instance (sender, seq):            *)
(*                                                                         *)
(*   sender:  encode m into n fragments, root r = Merkle(fragments);      *)
(*            VAL(r, j, fragment j, proof j) to every node j, ECHO its own *)
(*                                          (coded_on_request, echo_own)   *)
(*   on the first VAL(r) for us with a valid proof:                        *)
(*            ECHO(r, self, our fragment, proof) to all            (echo)  *)
(*   on EchoQuorum ECHO(r) or ReadyQuorum READY(r): READY(r), once (ready) *)
(*   on DeliverQuorum READY(r) and K valid fragments of r: decode,         *)
(*            re-encode, recompute the root; deliver the message when it   *)
(*            is r, else the "invalid" verdict     (try_deliver,           *)
(*                                                  deliver_root)          *)
(*   catch-up (core.c): deliver the outcome CatchUpQuorum = f+1 distinct   *)
(*            peers reported in DELIVERED                (on_delivered)    *)
(*                                                                         *)
(* with EchoQuorum = ceil((N+F+1)/2), ReadyQuorum = F+1, DeliverQuorum =   *)
(* 2F+1 (brb_core_init) and K = F+1 data fragments (coded_init_mode).      *)
(*                                                                         *)
(* The erasure code and the Merkle tree.  A root is a commitment to n      *)
(* leaves (BLAKE2b with 0x00/0x01 prefixes: collision resistant, so a      *)
(* fragment with a valid proof for index j under r IS the committed leaf   *)
(* j of r).  Roots are of two kinds:                                       *)
(*   - v in Value: the root of the canonical codeword of payload v (framing *)
(*     u32 length || v || zero padding, k data fragments, n - k parity).  *)
(*     Any K of its leaves decode to v (the Cauchy code is MDS), and       *)
(*     re-encoding v gives the same leaves, the same root: verdict v.      *)
(*     Anyone who knows v can compute it.                                  *)
(*   - b in BadRoot: a commitment to n leaves that are not the canonical  *)
(*     codeword of anything (garbage, mixed lengths, a bad length field,   *)
(*     non-zero padding: coded.c's strategies).  Whatever K leaves a node  *)
(*     decodes, the canonical encoding of the result is not the committed  *)
(*     leaf set, so its root differs: verdict Invalid, for every subset.   *)
(*     A mixed-lengths root ("mixed" in add_fragment) ends in Invalid      *)
(*     directly; a bad root is also what a Byzantine non-sender can build. *)
(* So a node's verdict is Verdict(r) of the root alone (docs/protocols/    *)
(* coded.md, "The invalid verdict").  The spec does not build that in: a   *)
(* node decodes ANY K of the fragments it stored (the C code takes the     *)
(* first K by index, which the spec cannot order) and the outcome comes    *)
(* from what those fragments are (DecodeDeliver), so the teeth models can  *)
(* show what breaks without the re-encoding check, without the proof       *)
(* check, or with the fragments of several roots pooled.                   *)
(*                                                                         *)
(* Faults.  The Byzantine nodes are the variable byz, chosen in Init among *)
(* ByzSets (the models use AllByzSets: every set of F nodes, with or       *)
(* without the sender) and never changed, so one model covers an honest    *)
(* and a Byzantine sender.  All per-node variables range over all of Node; *)
(* the entries of Byzantine nodes stay at their initial values.            *)
(*                                                                         *)
(* State of an honest node i (struct coded_inst, its tallies and kv):      *)
(*   echo[i][j]  the ECHO of voter j that i counted: its root, Nil: none   *)
(*               (base.tally[BRB_VOTE_ECHO]; brb_tally_add counts one      *)
(*               vote per voter, whatever root it names).  Every counted   *)
(*               ECHO brought j's leaf of that root (add_fragment right    *)
(*               after the tally; index == from is checked), so the        *)
(*               fragments i holds of root r are {j : echo[i][j] = r}      *)
(*               (rf->have, rf->nvalid).  i's own ECHO is echo[i][i]       *)
(*               ("echoed").                                               *)
(*   ready[i][j] the READY of voter j that i counted (tally READY); i's    *)
(*               own is ready[i][i] ("readied").                           *)
(*   esent[i], rsent[i]  the roots i ever said ECHO / READY for: its       *)
(*               persisted votes (brb_vote_put, kv "v"), which survive a   *)
(*               restart, and the messages it sent (they stay out).        *)
(*   cu[i][j]    the DELIVERED report of peer j that i counted (the core's *)
(*               BRB_VOTE_CATCHUP tally): an outcome, Nil: none.           *)
(*   dlv[i], ndel[i]  the outcomes i delivered (a value or Invalid: the    *)
(*               upcall with invalid = true) and HOW MANY TIMES it         *)
(*               delivered (saturating at 2, so that a second delivery is  *)
(*               visible and the state space stays finite).               *)
(*   fake[i]     voters whose counted ECHO carried a fragment that is not  *)
(*               their committed leaf: always {} unless the proof check is *)
(*               mutated away (NoProofCheck).                             *)
(* Once i delivered, brb_deliver frees the instance (inst_free): its       *)
(* tallies, fragments and flags are gone (Free), only its votes (kv, and   *)
(* the "L" record peer_lacks answers from) and its delivery remain.        *)
(* Global:                                                                 *)
(*   garble      what the K leaves of a bad root decode to, per leaf set   *)
(*               (a function of the leaves, chosen when first decoded):    *)
(*               used only without the re-encoding check (NoReencode).    *)
(*   crashes     how many crash-recoveries happened (at most MaxRestarts). *)
(*                                                                         *)
(* Network.  Links are authenticated and, between honest nodes, reliable.  *)
(* An honest node's messages are determined by its state, so no message    *)
(* set is needed: the honest sender's VAL to j is j's leaf of its root     *)
(* (esent[Sender]); honest j's ECHO(r) and READY(r) are r in esent[j],     *)
(* rsent[j]; its DELIVERED report is what it delivered.  Each stays        *)
(* receivable forever (resend while open; after delivery peer_lacks from   *)
(* the "L" record and the core's offer); a receipt that would change       *)
(* nothing is not a step.  Byzantine nodes may send anything they can      *)
(* make: a Byzantine sender a VAL for any root to anyone (different ones   *)
(* to different nodes); any Byzantine voter an ECHO for any root with its  *)
(* own leaf (a proof for an index other than its own is rejected:          *)
(* index == from), a READY for any root and a DELIVERED report of any      *)
(* outcome.  A VAL from a non-sender, or for an index other than the       *)
(* receiver's, is rejected (coded_on_message), as is any malformed         *)
(* message or a fragment whose proof fails: no-ops, not modelled.  A       *)
(* receiver takes a Byzantine VAL whenever it likes, and Byzantine votes   *)
(* and reports in the steps where they make it act (ByzVotes, ByzReports: *)
(* no loss of generality, argued there).                                   *)
(*                                                                         *)
(* Steps.  Each action is one callback of the C code, atomic as the host   *)
(* runs it: count the input, then check_thresholds (READY, then            *)
(* try_deliver).  After delivery brb_inst_get answers "already delivered"  *)
(* (the delivered seqset), so a delivered node ignores every further input *)
(* for the instance (Open).                                                *)
(*                                                                         *)
(* Restarts (at most MaxRestarts in a behaviour): an honest node that has  *)
(* not delivered may crash and recover.  It keeps what the C code persists *)
(* -- its ECHO vote with its fragment and proof and its READY vote (kv     *)
(* "v"; inst_restore puts both back, counted as its own votes, its         *)
(* fragment among the fragments), and for the sender its payload (kv "M": *)
(* restore_own re-encodes it, same fragments, same root) -- and loses what *)
(* lives in memory: the others' votes and fragments, the catch-up tally.   *)
(* Before the fix the fragment was lost with the memory (NoEchoRestore):   *)
(* if the sender never sent the VAL again the node had to decode from the  *)
(* others' (CodedBrokenEchoRestore).  A delivered instance stays closed    *)
(* (the seqset is persisted).                                              *)
(*                                                                         *)
(* Abstracted away (tla/README.md, "CodedBRB", has the argument for each): *)
(* payload, fragment and hash bytes (above); the framing checks and length *)
(* bounds (properties of the committed leaves: a bad root); other          *)
(* instances, the window, the "L" record's bound and the retained          *)
(* payloads; message loss and the resends that repair it (reliable links  *)
(* between honest nodes instead: every message an honest node sent stays  *)
(* receivable, also by a receiver that crashed since -- a superset for     *)
(* safety, optimistic for liveness after a crash); a restart that loses    *)
(* the store.                                                              *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Node,     \* the committee (model values); N = |Node|
    F,        \* fault bound the thresholds are computed for (c->f)
    Sender,   \* the instance's sender, in Node
    Value,    \* payloads; v in Value is also the root of v's codeword
    BadRoot,  \* roots over leaves that are not a codeword (model values)
    Nil,      \* "none", a model value
    Invalid,  \* the invalid verdict (brb_deliver(..., invalid = true))
    ByzSets,  \* the sets the Byzantine nodes are chosen from (AllByzSets)
    MaxRestarts, \* how many crash-recoveries of honest nodes (0: none)
    CatchUp   \* TRUE: the core's DELIVERED catch-up (RecvDelivered)

N == Cardinality(Node)

(* Every set of exactly F nodes: the sender Byzantine or not. *)
AllByzSets == {B \in SUBSET Node : Cardinality(B) = F}

Root    == Value \cup BadRoot
Outcome == Value \cup {Invalid}

ASSUME /\ F \in Nat /\ N >= 3 * F + 1
       /\ Sender \in Node
       /\ Value \cap BadRoot = {}
       /\ Nil \notin Root \cup {Invalid} /\ Invalid \notin Root
       /\ \A B \in ByzSets : B \subseteq Node /\ Cardinality(B) <= F
       /\ MaxRestarts \in Nat /\ CatchUp \in BOOLEAN

(* The verdict every K genuine leaves of root r give after the re-encoding *)
(* check: the value for a codeword root, Invalid for a bad one.            *)
Verdict(r) == IF r \in Value THEN r ELSE Invalid

(* Thresholds of brb_core_init (core.c) and coded_init_mode (cd->k).  A    *)
(* teeth model overrides one of them in its .cfg with a wrong value.       *)
EchoQuorum    == (N + F + 2) \div 2        \* ceil((n + f + 1) / 2)
ReadyQuorum   == F + 1                     \* READY amplification
DeliverQuorum == 2 * F + 1
K             == F + 1                     \* fragments needed to decode
CatchUpQuorum == F + 1                     \* on_delivered: ready_quorum

(* The mutations of the teeth models (CodedBroken*.cfg), each a bug the    *)
(* C code could have; the spec's defaults are the C code.                  *)
EchoQuorumTooLow     == F + 1      \* c->echo_quorum = f + 1
EchoQuorumHardCoded  == 2 * F + 1  \* 2f + 1: right only when n = 3f + 1
ReadyQuorumTooLow    == F          \* amplify after f READYs
KTooHigh             == 2 * F + 1  \* try_deliver: nvalid >= deliver_quorum
CatchUpQuorumTooLow  == F          \* on_delivered trusts f reports

(* The persisted votes are read back (brb_vote_get): echo() and ready()   *)
(* check them before voting, and inst_restore restores them after a      *)
(* restart.  NoVoteCheck: none of these reads happens, so a restarted     *)
(* node votes for whatever comes first.                                   *)
CheckVote   == TRUE
NoVoteCheck == FALSE

(* brb_deliver records the seq in the delivered set (and frees the       *)
(* instance), so brb_inst_get ignores later input; NeverClose: it does    *)
(* not, the instance keeps taking input with its state.                   *)
CloseOnDeliver == TRUE
NeverClose     == FALSE

(* coded_on_message verifies every VAL's and ECHO's fragment against its *)
(* root (brb_merkle_verify); NoProofCheck: an ECHO's proof is not checked *)
(* (a Byzantine voter's ECHO may carry any bytes as its fragment).        *)
CheckProof   == TRUE
NoProofCheck == FALSE

(* deliver_root re-encodes the decoded message and compares the root;     *)
(* NoReencode: it delivers what the K fragments decode to.                *)
Reencode   == TRUE
NoReencode == FALSE

(* Fragments are kept per root (struct root_frags) and try_deliver counts *)
(* and decodes those of the READY root; PooledFragments: one fragment    *)
(* store per instance, filled by every counted ECHO whatever its root.   *)
FragmentsPerRoot == TRUE
PooledFragments  == FALSE

(* inst_restore puts a restarted node's persisted ECHO back -- the vote   *)
(* with its fragment and proof (brb_vote_put_extra) -- as it does its     *)
(* READY; NoEchoRestore: the READY only, the code before the fix (the     *)
(* fragment lived in memory; a VAL for the same root was echoed again and  *)
(* the sender's resend timer re-echoed its own: ResendOwn).               *)
RestoreEcho   == TRUE
NoEchoRestore == FALSE

(* The values an honest sender may be asked to broadcast; a liveness    *)
(* model may fix one (values are symmetric).                            *)
BroadcastValue == Value

VARIABLES
    byz,    \* the Byzantine nodes (chosen in Init, constant afterwards)
    echo,   \* echo[i][j]: root of j's ECHO counted by honest i, or Nil
    ready,  \* ready[i][j]: root of j's READY counted by honest i, or Nil
    esent,  \* esent[i]: the roots honest i ever said ECHO for (kv vote)
    rsent,  \* rsent[i]: the roots honest i ever said READY for (kv vote)
    cu,     \* cu[i][j]: the DELIVERED report of j counted by i, or Nil
    dlv,    \* dlv[i]: the outcomes honest i delivered
    ndel,   \* ndel[i]: how many times honest i delivered (2: "2 or more")
    fake,   \* fake[i]: voters whose counted fragment was not their leaf
    garble, \* garble[b][S]: what leaves S of bad root b decode to, or Nil
    crashes \* how many crash-recoveries happened (at most MaxRestarts)

vars == <<byz, echo, ready, esent, rsent, cu, dlv, ndel, fake, garble, crashes>>

Honest == Node \ byz
RootVote == Root \cup {Nil}
NilRow == [j \in Node |-> Nil]

(* The leaf sets a node can decode from: K distinct leaves. *)
KSets == {S \in SUBSET Node : Cardinality(S) = K}
NoGarble == [b \in BadRoot |-> [S \in KSets |-> Nil]]

TypeOK ==
    /\ byz \in ByzSets
    /\ echo \in [Node -> [Node -> RootVote]]
    /\ ready \in [Node -> [Node -> RootVote]]
    /\ esent \in [Node -> SUBSET Root]
    /\ rsent \in [Node -> SUBSET Root]
    /\ cu \in [Node -> [Node -> Outcome \cup {Nil}]]
    /\ dlv \in [Node -> SUBSET Outcome]
    /\ ndel \in [Node -> 0..2]
    /\ fake \in [Node -> SUBSET Node]
    /\ garble \in [BadRoot -> [KSets -> Outcome \cup {Nil}]]
    /\ crashes \in 0..MaxRestarts

Init ==
    /\ byz \in ByzSets
    /\ echo = [i \in Node |-> NilRow]
    /\ ready = [i \in Node |-> NilRow]
    /\ esent = [i \in Node |-> {}]
    /\ rsent = [i \in Node |-> {}]
    /\ cu = [i \in Node |-> NilRow]
    /\ dlv = [i \in Node |-> {}]
    /\ ndel = [i \in Node |-> 0]
    /\ fake = [i \in Node |-> {}]
    /\ garble = NoGarble
    /\ crashes = 0

(* brb_tally_count: votes for x in one tally row. *)
Count(row, x) == Cardinality({j \in Node : row[j] = x})

(* brb_inst_get: input for a delivered instance is ignored. *)
Open(i) == ~CloseOnDeliver \/ ndel[i] = 0

(* A vote i may cast now for r: never against its persisted one. *)
MayVote(sent, r) == CheckVote => sent \subseteq {r}

(* brb_deliver: the upcall, counted. *)
Deliver(i, o) ==
    /\ dlv' = [dlv EXCEPT ![i] = @ \cup {o}]
    /\ ndel' = [ndel EXCEPT ![i] = IF @ < 2 THEN @ + 1 ELSE 2]

(* Is this message available?  From an honest node: what its state says *)
(* it sent.  From a Byzantine node: anything it can make.               *)
SendAvail(r)      == Sender \in byz \/ r \in esent[Sender]

(***************************************************************************)
(* try_deliver for root d, with echo row e and fake set fk: the voters    *)
(* whose fragments i holds for d (rf->have; pooled: every counted ECHO),  *)
(* the K-leaf sets it may decode from, and what a set S decodes to.       *)
(***************************************************************************)
Holders(e, d) ==
    IF FragmentsPerRoot THEN {j \in Node : e[j] = d}
                        ELSE {j \in Node : e[j] # Nil}

DecodeSets(e, d) == {S \in SUBSET Holders(e, d) : Cardinality(S) = K}

(* S holds only committed leaves of d. *)
Genuine(e, fk, d, S) == \A j \in S : e[j] = d /\ j \notin fk

(***************************************************************************)
(* deliver_root: decode S, re-encode, compare the root.  Genuine leaves of *)
(* a codeword root decode to its value and re-encode to the same root.     *)
(* Anything else -- genuine leaves of a bad root, or a leaf that is not d's *)
(* -- decodes to bytes whose canonical codeword is not d's leaf set: the   *)
(* root differs, Invalid.  Without the re-encoding check (NoReencode) a     *)
(* bad root's leaves S decode to garble[d][S]: any outcome (a message, or  *)
(* a framing failure), chosen once per leaf set, the same for every node   *)
(* that decodes from S.                                                    *)
(***************************************************************************)
DecodeDeliver(i, e, fk, d, S) ==
    IF Genuine(e, fk, d, S) /\ d \in Value
      THEN Deliver(i, d) /\ UNCHANGED garble
    ELSE IF Reencode
      THEN Deliver(i, Invalid) /\ UNCHANGED garble
    ELSE IF Genuine(e, fk, d, S) /\ garble[d][S] # Nil
      THEN Deliver(i, garble[d][S]) /\ UNCHANGED garble
    ELSE IF Genuine(e, fk, d, S)
      THEN \E o \in Outcome :
             /\ Deliver(i, o)
             /\ garble' = [garble EXCEPT ![d][S] = o]
    ELSE \E o \in Outcome : Deliver(i, o) /\ UNCHANGED garble

(***************************************************************************)
(* check_thresholds(c, i) after i's tallies became e (echo) and r (ready)  *)
(* and its fake set fk.  ready(): if i has not said READY (r[i] = Nil),    *)
(* READY(d) for a root d with an echo quorum or, failing that, one with    *)
(* ReadyQuorum READYs, unless i said READY for another root before a       *)
(* restart; i's READY is added to its own tally.  try_deliver(): a root    *)
(* with DeliverQuorum READYs and K fragments is decoded and the outcome    *)
(* delivered (finish, brb_deliver).  The C code takes the first such root  *)
(* in tally order and the first K fragments by index; the spec lets them   *)
(* be any, a superset of the C behaviours (in correct runs there is one    *)
(* root, and the outcome does not depend on the leaves).                   *)
(***************************************************************************)
ReadyChoices(i, e, r) ==
    LET EQ   == {x \in Root : Count(e, x) >= EchoQuorum}
        RQ   == {x \in Root : Count(r, x) >= ReadyQuorum}
        Cand == IF r[i] # Nil THEN {} ELSE IF EQ # {} THEN EQ ELSE RQ
        Ok   == {x \in Cand : MayVote(rsent[i], x)}
    IN IF Ok = {} THEN {r} ELSE {[r EXCEPT ![i] = x] : x \in Ok}

(* What i keeps of the instance after a step: its tallies e, r, fake set  *)
(* fk and catch-up tally c; or nothing once it delivered: brb_deliver      *)
(* frees the instance (inst_free, inst_clear: tallies, fragments, flags),  *)
(* unless the mutation NeverClose keeps it.                                *)
Keep(i, e, r, fk, c) ==
    /\ echo' = [echo EXCEPT ![i] = e]
    /\ ready' = [ready EXCEPT ![i] = r]
    /\ fake' = [fake EXCEPT ![i] = fk]
    /\ cu' = [cu EXCEPT ![i] = c]

Free(i, e, r, fk, c) ==
    IF CloseOnDeliver THEN Keep(i, NilRow, NilRow, {}, NilRow)
                      ELSE Keep(i, e, r, fk, c)

CheckThresholds(i, e, r, fk) ==
    \E r2 \in ReadyChoices(i, e, r) :
        LET DQ == {d \in Root : Count(r2, d) >= DeliverQuorum
                                /\ Cardinality(Holders(e, d)) >= K} IN
        /\ rsent' = [rsent EXCEPT ![i] =
                        @ \cup (IF r2[i] # Nil THEN {r2[i]} ELSE {})]
        /\ IF DQ = {}
             THEN /\ Keep(i, e, r2, fk, cu[i])
                  /\ UNCHANGED <<dlv, ndel, garble>>
             ELSE /\ Free(i, e, r2, fk, cu[i])
                  /\ \E d \in DQ : \E S \in DecodeSets(e, d) :
                        DecodeDeliver(i, e, fk, d, S)

(* echo(): ECHO(d) with i's leaf unless i echoed in this run (first VAL    *)
(* only), or echoed another root before a restart (brb_vote_get:          *)
(* val_conflicts); brb_vote_put, i's ECHO and fragment counted in its own  *)
(* tally (add_fragment), then check_thresholds.                           *)
DoEcho(i, d) ==
    /\ echo[i][i] = Nil
    /\ MayVote(esent[i], d)
    /\ esent' = [esent EXCEPT ![i] = @ \cup {d}]
    /\ CheckThresholds(i, [echo[i] EXCEPT ![i] = d], ready[i], fake[i])

(* coded_on_request at an honest sender: kv "M", own_broadcast (the       *)
(* codeword of v, whose root is v), send_vals, echo_own.  One instance:    *)
(* the sender's first request (brb_own_begin gives each a new seq).        *)
Broadcast(v) ==
    /\ Sender \in Honest
    /\ Open(Sender)
    /\ esent[Sender] = {}
    /\ DoEcho(Sender, v)
    /\ UNCHANGED <<byz, crashes>>

(* After a restart the sender's resend timer finds its reopened broadcast  *)
(* not echoed (restore_own re-encoded kv "M"): resend -> echo_own.  Only  *)
(* with NoEchoRestore (or an ECHO vote persisted without its fragment, by *)
(* the code before the fix): the restored ECHO counts as echoed.          *)
ResendOwn ==
    /\ Sender \in Honest
    /\ Open(Sender)
    /\ \E d \in esent[Sender] : DoEcho(Sender, d)
    /\ UNCHANGED <<byz, crashes>>

(* coded_on_message, type VAL (from == sender, index == self, proof       *)
(* verified) at an honest non-sender i: echo().                           *)
RecvVal(i, d) ==
    /\ i \in Honest
    /\ i # Sender
    /\ Open(i)
    /\ SendAvail(d)
    /\ DoEcho(i, d)
    /\ UNCHANGED <<byz, crashes>>

(* coded_on_message, type ECHO from j (index == from, proof verified):    *)
(* brb_tally_add, add_fragment, check_thresholds.  Only while j's ECHO is  *)
(* not counted yet (brb_tally_add: one vote per voter; a repeat or a       *)
(* second root is ignored).  From an honest j only the root it echoed;     *)
(* from a Byzantine one any root (with its own leaf of it).  These are the *)
(* callbacks as the C code runs them (the trace validation takes them      *)
(* so); the model checking schedules them as below (RecvEcho, ByzVotes).   *)
RecvEchoFrom(i, j, d) ==
    /\ i \in Honest
    /\ j # i
    /\ Open(i)
    /\ echo[i][j] = Nil
    /\ j \in byz \/ d \in esent[j]
    /\ CheckThresholds(i, [echo[i] EXCEPT ![j] = d], ready[i], fake[i])
    /\ UNCHANGED <<byz, esent, crashes>>

(* coded_on_message, type READY from j: likewise. *)
RecvReadyFrom(i, j, d) ==
    /\ i \in Honest
    /\ j # i
    /\ Open(i)
    /\ ready[i][j] = Nil
    /\ j \in byz \/ d \in rsent[j]
    /\ CheckThresholds(i, echo[i], [ready[i] EXCEPT ![j] = d], fake[i])
    /\ UNCHANGED <<byz, esent, crashes>>

(* brb_core_on_message, type DELIVERED from j: on_delivered.  One report   *)
(* per peer (brb_tally_add on BRB_VOTE_CATCHUP, the payload's digest or    *)
(* the invalid digest); at CatchUpQuorum matching reports i delivers the   *)
(* reported outcome (brb_deliver directly, not through coded's finish).   *)
(* An honest peer reports what it delivered (offer); a Byzantine one       *)
(* anything.                                                               *)
CatchUpStep(i, c) ==
    \E o \in Outcome :
        /\ Count(c, o) >= CatchUpQuorum
        /\ Deliver(i, o)
        /\ Free(i, echo[i], ready[i], fake[i], c)

RecvDeliveredFrom(i, j, o) ==
    /\ CatchUp
    /\ i \in Honest
    /\ j # i
    /\ Open(i)
    /\ cu[i][j] = Nil
    /\ j \in byz \/ o \in dlv[j]
    /\ LET c == [cu[i] EXCEPT ![j] = o] IN
       IF \E x \in Outcome : Count(c, x) >= CatchUpQuorum
         THEN CatchUpStep(i, c)
         ELSE Keep(i, echo[i], ready[i], fake[i], c) /\ UNCHANGED <<dlv, ndel>>
    /\ UNCHANGED <<byz, esent, rsent, garble, crashes>>

(***************************************************************************)
(* Receipts of honest votes, as the models schedule them.  Pending(row, i, *)
(* sent, x): the honest voters whose vote x (x in sent[j]) i has not       *)
(* counted in that tally row.  An honest voter votes one root per kind     *)
(* (VoteOnce), so for i it does not matter WHICH of them it counts next,   *)
(* only that one more vote for x is counted: the models take them in a     *)
(* fixed order (First), which leaves the counts, and so View, as any order *)
(* would (see View below).                                                 *)
(***************************************************************************)
Pending(row, i, sent, x) == {j \in Honest \ {i} : row[j] = Nil /\ x \in sent[j]}
First(P) == IF P = {} THEN Nil ELSE CHOOSE j \in P : TRUE

RecvEcho(i, j, d) ==
    /\ j = First(Pending(echo[i], i, esent, d))
    /\ RecvEchoFrom(i, j, d)

RecvReady(i, j, d) ==
    /\ j = First(Pending(ready[i], i, rsent, d))
    /\ RecvReadyFrom(i, j, d)

RecvDelivered(i, j, o) ==
    /\ j = First(Pending(cu[i], i, dlv, o))
    /\ RecvDeliveredFrom(i, j, o)

(***************************************************************************)
(* Byzantine input at honest i: ECHOes (each with the voter's leaf of its  *)
(* root; with NoProofCheck possibly other bytes), READYs and DELIVERED     *)
(* reports, any roots and outcomes, from Byzantine voters whose vote of    *)
(* that kind i has not counted.  Taken only in a step where it makes i act *)
(* -- say READY or deliver -- ("decisive"); several votes may be counted   *)
(* in one such step, then check_thresholds (or on_delivered) runs once.    *)
(* This loses no behaviour that matters: a Byzantine vote counted without  *)
(* effect only fills its voter's slot at i (which the voter could as well  *)
(* leave empty and never use) and adds to a count that matters only when a *)
(* later step crosses a threshold with it -- and the vote can be taken     *)
(* right after that step instead, with the same result.  Agreement,        *)
(* Integrity, Validity, Totality and the vote lemmas depend only on votes  *)
(* and deliveries, and quiescence only on honest messages, so they are the *)
(* same on the reduced state space (tla/README.md, "CodedBRB", has the     *)
(* argument); a Byzantine VAL is always taken (it makes i ECHO).           *)
(***************************************************************************)
ByzSlots(row) == {j \in byz : row[j] = Nil}

(* Partial functions: a root (outcome) for each voter in some set B. *)
Votes(B, X) == UNION {[C -> X] : C \in SUBSET B}

(* row with g's entries over it (EXCEPT, one voter at a time). *)
RECURSIVE Override(_, _, _)
Override(row, g, D) ==
    IF D = {} THEN row
    ELSE LET b == CHOOSE x \in D : TRUE
         IN Override([row EXCEPT ![b] = g[b]], g, D \ {b})

Decisive(i) == rsent'[i] # rsent[i] \/ ndel'[i] # ndel[i] \/ dlv'[i] # dlv[i]

ByzVotes(i) ==
    /\ i \in Honest
    /\ Open(i)
    /\ \E E \in Votes(ByzSlots(echo[i]), Root),
         R \in Votes(ByzSlots(ready[i]), Root) :
       \E bog \in (IF CheckProof THEN {{}} ELSE SUBSET DOMAIN E) :
          /\ DOMAIN E \cup DOMAIN R # {}
          /\ CheckThresholds(i, Override(echo[i], E, DOMAIN E),
                                Override(ready[i], R, DOMAIN R),
                                fake[i] \cup bog)
          /\ Decisive(i)
    /\ UNCHANGED <<byz, esent, crashes>>

ByzReports(i) ==
    /\ CatchUp
    /\ i \in Honest
    /\ Open(i)
    /\ \E B \in SUBSET ByzSlots(cu[i]) \ {{}}, o \in Outcome :
          CatchUpStep(i, Override(cu[i], [j \in B |-> o], B))
    /\ UNCHANGED <<byz, esent, rsent, garble, crashes>>

(* A crash and recovery of honest i before it delivered: memory lost, kv  *)
(* kept.  inst_restore puts back the persisted ECHO (with its fragment)   *)
(* and READY, each counted as i's own vote in its tally.                  *)
Restart(i) ==
    /\ crashes < MaxRestarts
    /\ crashes' = crashes + 1
    /\ i \in Honest
    /\ Open(i)
    /\ echo' = [echo EXCEPT ![i] =
                   IF esent[i] = {} \/ ~CheckVote \/ ~RestoreEcho THEN NilRow
                   ELSE [NilRow EXCEPT ![i] = CHOOSE d \in esent[i] : TRUE]]
    /\ ready' = [ready EXCEPT ![i] =
                   IF rsent[i] = {} \/ ~CheckVote THEN NilRow
                   ELSE [NilRow EXCEPT ![i] = CHOOSE d \in rsent[i] : TRUE]]
    /\ cu' = [cu EXCEPT ![i] = NilRow]
    /\ fake' = [fake EXCEPT ![i] = {}]
    /\ UNCHANGED <<byz, esent, rsent, dlv, ndel, garble>>

Next ==
    \/ \E v \in BroadcastValue : Broadcast(v)
    \/ ResendOwn
    \/ \E i \in Node, d \in Root :
          \/ RecvVal(i, d)
          \/ \E j \in Node : RecvEcho(i, j, d) \/ RecvReady(i, j, d)
    \/ \E i, j \in Node, o \in Outcome : RecvDelivered(i, j, o)
    \/ \E i \in Node : ByzVotes(i) \/ ByzReports(i) \/ Restart(i)

(***************************************************************************)
(* Fairness: every message between honest nodes is eventually received     *)
(* (links that eventually deliver; weft gets there with the resend timer   *)
(* -- VALs, ECHO, READY of open instances -- and, after delivery,           *)
(* peer_lacks answering from the "L" record and the core's DELIVERED        *)
(* offers).  Nothing forces the sender to broadcast, anyone to take a      *)
(* Byzantine message, or a restart.  HonestStep is a receipt by an honest  *)
(* node of an honest node's message, or the sender's re-echo after a       *)
(* restart (its resend timer).  As in BrachaBRB, WF of the disjunction is  *)
(* equivalent to WF of each receipt: without restarts every step fills a   *)
(* slot that is never emptied (a tally or catch-up entry, or a delivery    *)
(* that closes the instance), so every behaviour has finitely many         *)
(* non-stuttering steps.                                                   *)
(***************************************************************************)
HonestStep ==
    \E i \in Honest :
        \/ Sender \in Honest /\ \E d \in Root : RecvVal(i, d)
        \/ i = Sender /\ ResendOwn
        \/ \E j \in Honest, d \in Root : RecvEcho(i, j, d) \/ RecvReady(i, j, d)
        \/ \E j \in Honest, o \in Outcome : RecvDelivered(i, j, o)

Fairness == WF_vars(HonestStep)

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Properties (names as in weft's scenario oracle). *)

(* No two honest nodes deliver different outcomes (a value, or Invalid). *)
Agreement ==
    \A i, j \in Honest : \A o \in dlv[i], p \in dlv[j] : o = p

(* At most one delivery per node; with an honest sender, only what it     *)
(* broadcast (esent[Sender]: its root, which is its value), never Invalid. *)
Integrity ==
    \A i \in Honest :
        /\ ndel[i] <= 1
        /\ Sender \in Honest => dlv[i] \subseteq esent[Sender]

(* The lemmas of docs/protocols/coded.md ("Why it is safe and live").     *)
(* An honest node votes at most one root per kind, across restarts.       *)
VoteOnce ==
    \A i \in Honest : Cardinality(esent[i]) <= 1 /\ Cardinality(rsent[i]) <= 1
(* No two roots both reach the echo quorum at honest nodes. *)
EchoQuorumUnique ==
    \A i, j \in Honest : \A x, y \in Root :
        (Count(echo[i], x) >= EchoQuorum /\ Count(echo[j], y) >= EchoQuorum)
            => x = y
(* All honest READYs name the same root. *)
HonestReadyUnique ==
    \A i, j \in Honest : \A x \in rsent[i], y \in rsent[j] : x = y
(* A root an honest node said READY for has K honest ECHOes out, each with *)
(* a distinct leaf: every honest node can collect K fragments of it.      *)
ReadyHasFragments ==
    \A i \in Honest : \A x \in rsent[i] :
        Cardinality({j \in Honest : x \in esent[j]}) >= K
(* Every honest delivery is the verdict of a root honest nodes readied.   *)
DeliveredVerdict ==
    \A i \in Honest : \A o \in dlv[i] :
        \E j \in Honest : \E x \in rsent[j] : Verdict(x) = o

(* An honest sender's broadcast is delivered by every honest node. *)
Validity ==
    \A v \in Value :
        (Sender \notin byz /\ v \in esent[Sender]) ~>
            (\A i \in Node \ byz : v \in dlv[i])

(* If one honest node delivers, every honest node delivers (the same      *)
(* outcome, by Agreement).                                                 *)
Totality ==
    (\E i \in Node \ byz : dlv[i] # {}) ~> (\A i \in Node \ byz : dlv[i] # {})

(***************************************************************************)
(* The liveness properties as invariants, checked in the safety models     *)
(* (with symmetry, under every choice of byz).  Without restarts every     *)
(* behaviour takes finitely many steps and then stutters in a state s; it  *)
(* is fair iff s is Quiescent (no HonestStep enabled), and every reachable *)
(* Quiescent state ends such a fair behaviour.  The premises and           *)
(* conclusions are stable (esent, deliveries and byz never change back),   *)
(* so Validity (Totality) holds of FairSpec without restarts iff its       *)
(* AtQuiescence form is an invariant of Spec without restarts.  A model    *)
(* with restarts checks the invariants over a superset of those states     *)
(* (every quiescent state reached with crashes on the way, too).           *)
(*                                                                         *)
(* Quiescent is ~ENABLED HonestStep with the guards of the honest steps    *)
(* spelled out (Idle), which TLC evaluates much faster than ENABLED;       *)
(* QuiescentSound checks that the two agree (CodedSafe, CodedSafeCatchUp). *)
(***************************************************************************)
CanRecvVal(i) ==
    /\ Sender \in Honest /\ i # Sender /\ Open(i) /\ echo[i][i] = Nil
    /\ \E d \in esent[Sender] : MayVote(esent[i], d)
CanResendOwn(i) ==
    /\ i = Sender /\ Sender \in Honest /\ Open(i) /\ echo[i][i] = Nil
    /\ \E d \in esent[i] : MayVote(esent[i], d)
CanRecvEcho(i) ==
    Open(i) /\ \E j \in Honest \ {i} : echo[i][j] = Nil /\ esent[j] # {}
CanRecvReady(i) ==
    Open(i) /\ \E j \in Honest \ {i} : ready[i][j] = Nil /\ rsent[j] # {}
CanRecvDelivered(i) ==
    CatchUp /\ Open(i) /\ \E j \in Honest \ {i} : cu[i][j] = Nil /\ dlv[j] # {}

Idle ==
    ~\E i \in Honest :
        \/ CanRecvVal(i) \/ CanResendOwn(i)
        \/ CanRecvEcho(i) \/ CanRecvReady(i) \/ CanRecvDelivered(i)

QuiescentSound == Idle = ~ENABLED HonestStep

Quiescent == Idle

ValidityAtQuiescence ==
    (Quiescent /\ Sender \in Honest) =>
        \A i \in Honest : esent[Sender] \subseteq dlv[i]

TotalityAtQuiescence ==
    (Quiescent /\ \E i \in Honest : dlv[i] # {}) =>
        \A i \in Honest : dlv[i] # {}

(***************************************************************************)
(* View (for the models whose mutations keep honest votes single: every   *)
(* correct model): two states that differ only in WHICH honest voters'    *)
(* votes of a root a node counted, not how many, have the same future and *)
(* the same properties, since an honest voter votes one root per kind     *)
(* (VoteOnce) and the outcome of decoding does not depend on the leaves   *)
(* taken.  TLC explores one of them; the receipts of honest votes in a     *)
(* fixed order (First) leave it the same.  The models with NoVoteCheck,    *)
(* NoReencode, NoProofCheck or PooledFragments do not use it.             *)
(***************************************************************************)
HCount(row, i, x) == Cardinality({j \in Honest \ {i} : row[j] = x})

NodeView(i) ==
    <<echo[i][i], ready[i][i],
      [j \in byz |-> <<echo[i][j], ready[i][j], cu[i][j]>>],
      [x \in Root |-> <<HCount(echo[i], i, x), HCount(ready[i], i, x)>>],
      [o \in Outcome |-> HCount(cu[i], i, o)]>>

View == <<byz, esent, rsent, dlv, ndel, fake, garble, crashes,
          [i \in Node |-> NodeView(i)]>>

(* Symmetry, for the safety models only (TLC's liveness checking is not   *)
(* sound under symmetry): values are interchangeable, so are bad roots,    *)
(* and so are the non-senders (byz is a variable, permuted with them).     *)
Symmetry == Permutations(Value) \cup Permutations(BadRoot)
                \cup Permutations(Node \ {Sender})
=============================================================================
