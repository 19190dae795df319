--------------------------- MODULE ChannelSettle ---------------------------
(***************************************************************************)
(* The ledger's payment-channel settlement (docs/ledger.md "Channels",     *)
(* docs/protocols/channels.md), as protocols/ledger/state.c executes it:   *)
(* ONE channel (hyperedge) of the members Member, each depositing Deposit. *)
(*                                                                         *)
(* Off the ledger the members sign roots: a version and a balance vector   *)
(* (the frontier is opaque to the ledger and left out).  An honest member  *)
(* signs exactly one root per version, in order (version = the last it     *)
(* signed + 1), and only a conserved one (adding up to the deposits).  A   *)
(* Byzantine member signs anything, but nobody forges an honest member's   *)
(* signature, so a root is "all-signed" exactly when every honest member   *)
(* signed it.  A member *holds* an all-signed root once it has everyone's  *)
(* signatures: the Byzantine members may withhold theirs from it (Deliver  *)
(* is not forced), and a root posted on the ledger carries all of them.    *)
(* Root 0 is the deposits, all-signed and held by every member before the  *)
(* open is signed (see README: without it, a member's exit needs everyone).*)
(* A member signs a cooperative close of its newest held root with none    *)
(* newer in flight; it is then CLOSING: its own balance is frozen (roots   *)
(* it still signs pay it what the close does), and it signs the close      *)
(* again at each newer root it holds.  closeSig keeps every close signed:  *)
(* each stays valid on the ledger.  (The C: protocols/channel/channel.c,   *)
(* on_root_ask / maybe_build_root, root_adopt, sign_close, on_ledger.)     *)
(*                                                                         *)
(* Which members are Byzantine (at most MaxByz) and which honest ones are  *)
(* offline (at most MaxOffline) is chosen in Init: every choice is         *)
(* checked, and the members are symmetric (no role in these rules).        *)
(*                                                                         *)
(* The ledger is an ordered sequence of transactions; each one is a        *)
(* height.  Open, cooperative Close, Commit (unilateral close), Dispute    *)
(* and Settle execute with the checks of state.c, in its order; a          *)
(* transaction that state.c rejects changes nothing but the height, like   *)
(* any transaction about something else: both are Tick.  Anyone may submit *)
(* any of them: the Byzantine members know every honest signature, so any  *)
(* all-signed root or close can be posted by someone at any time.          *)
(*                                                                         *)
(* An honest member is online (it watches the ledger) or offline (it       *)
(* signed, then stopped watching).  An online member whose newest held     *)
(* root is newer than the posted one submits a dispute with it; the        *)
(* ordering assumption (FairOrder) is that the ledger orders that dispute, *)
(* or a dispute of an even newer root, at most Delay heights after the     *)
(* commit: until then anything else may be ordered before it.              *)
(*                                                                         *)
(* Broken switches the ledger to a deliberately wrong rule (teeth models): *)
(*   "none"                     state.c as it is                           *)
(*   "dispute_after_deadline"   no too_late check on disputes              *)
(*   "dispute_same_version"     stale_root only below the posted version   *)
(*   "dispute_any_version"      no stale_root check at all                 *)
(*   "settle_early"             no too_early check on settle               *)
(*   "close_not_conserved"      no not_conserved check on a close          *)
(*   "close_replay"             no channel_closed check on a close         *)
(*   "commit_one_sig"           a commit needs only the submitter's        *)
(*                              signature (a Byzantine member's root)      *)
(*   "sign_after_close"         (off the ledger) a member that signed a    *)
(*                              cooperative close signs later roots that   *)
(*                              pay it more: see Sign                      *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Member,      \* the members, model values (deposits are equal: symmetric)
    Deposit,     \* each member's deposit; its account holds exactly that before the open
    MaxByz,      \* at most this many members are Byzantine (which ones: chosen in Init)
    MaxOffline,  \* at most this many honest members are offline (chosen in Init)
    MaxVersion,  \* the highest root version the honest members sign
    Challenge,   \* params.channel_challenge: a commit at height h settles at h + Challenge
    Delay,       \* an online member's dispute is ordered by commit height + Delay
    MaxHeight,   \* the ledger's length (a model bound)
    Broken       \* "none", or one of the broken rules above

ASSUME Deposit \in Nat \ {0} /\ MaxByz \in Nat /\ MaxOffline \in Nat
ASSUME MaxVersion \in Nat /\ Challenge \in Nat /\ Delay \in Nat \ {0} /\ MaxHeight \in Nat
ASSUME Broken \in {"none", "dispute_after_deadline", "dispute_same_version",
                   "dispute_any_version", "settle_early", "close_not_conserved",
                   "close_replay", "commit_one_sig", "sign_after_close"}

VARIABLES
    byz,       \* the Byzantine members (fixed in Init)
    offline,   \* the honest members that do not watch the ledger (fixed in Init)
    sig,       \* sig[m]: the roots honest m signed, sig[m][v+1] the balance vector of version v
    hv,        \* hv[m]: the newest version whose root honest m holds with every signature
    closeSig,  \* closeSig[m]: every cooperative close vector honest m signed (CLOSING once one)
    height,    \* the ledger height: transactions executed
    status,    \* the channel record: "none" (no open yet), "open", "closing", "closed"
    posted,    \* while closing: the posted root [ver, vec]
    deadline,  \* while closing: the settling height (st.deadline)
    postedAt,  \* while closing: the height of the commit or dispute that posted it
    bal,       \* the members' ledger account balances
    paid       \* how many times the channel paid out

vars == <<byz, offline, sig, hv, closeSig, height, status, posted, deadline, postedAt, bal, paid>>
offVars == <<byz, offline, sig, hv, closeSig>>
ledgerVars == <<height, status, posted, deadline, postedAt, bal, paid>>

Perms == Permutations(Member)

----------------------------------------------------------------------------
(* Balance vectors and roots. *)

RECURSIVE SumOver(_, _)
SumOver(f, S) == IF S = {} THEN 0
                 ELSE LET x == CHOOSE y \in S : TRUE IN f[x] + SumOver(f, S \ {x})
Sum(f) == SumOver(f, Member)

Total == Deposit * Cardinality(Member)
Vec == [Member -> 0..Total]                 \* any balance vector (a Byzantine coalition signs any)
Conserved == {w \in Vec : Sum(w) = Total}   \* what an honest member signs
DepositVec == [m \in Member |-> Deposit]    \* root 0
\* The vectors honest members sign: every conserved one, or (to keep the
\* three-member model small: cfg "SignVecs <- Extremes") root 0's and those
\* giving everything to one member; both sets are symmetric in the members.
SignVecs == Conserved
Extremes == {DepositVec} \cup {[m \in Member |-> IF m = x THEN Total ELSE 0] : x \in Member}
Root == [ver : 0..MaxVersion, vec : Vec]
NoRoot == [ver |-> 0, vec |-> [m \in Member |-> 0]]

Honest == Member \ byz
Online == Honest \ offline

\* Honest m signed root r (one root per version: the one it signed).
SignedBy(m, r) == r.ver < Len(sig[m]) /\ sig[m][r.ver + 1] = r.vec
\* Every member's signature exists: the honest ones signed it, the
\* Byzantine ones sign anything.
AllSigned(r) == \A m \in Honest : SignedBy(m, r)
\* The all-signed roots (anyone can post them: see the header).
AllSignedRoots ==
    IF Honest = {} THEN Root
    ELSE LET h == CHOOSE m \in Honest : TRUE
         IN {r \in {[ver |-> v, vec |-> sig[h][v + 1]] : v \in 0..Len(sig[h]) - 1} : AllSigned(r)}
\* The roots a commit can carry: all-signed, or (broken) signed by a Byzantine submitter alone.
CommitRoots ==
    IF Broken = "commit_one_sig" /\ byz # {} THEN {r \in Root : Sum(r.vec) = Total}
    ELSE AllSignedRoots
\* The all-signed cooperative close vectors.
CloseSigned(w) == \A m \in Honest : w \in closeSig[m]
CloseVecs ==
    IF Honest = {} THEN Vec
    ELSE {w \in UNION {closeSig[m] : m \in Honest} : CloseSigned(w)}

NewestHeld(m) == [ver |-> hv[m], vec |-> sig[m][hv[m] + 1]]

----------------------------------------------------------------------------
(* The ordering assumption. *)

h1 == height + 1   \* the height the next transaction executes at ("l->height + 1")

\* Online m has a dispute to get ordered: the posted root is older than its
\* newest held root, and a dispute at the next height is still in the period.
Pending(m) == status = "closing" /\ posted.ver < hv[m] /\ h1 < deadline

\* The next transaction may be ordered unless it would pass the height by
\* which an online member's pending dispute must be ordered; only a dispute
\* with that member's newest root or a newer one (dv: the dispute's
\* version, -1 for any other transaction) may take that height.
FairOrder(dv) ==
    \A m \in Online : Pending(m) => (h1 < deadline - Challenge + Delay \/ dv >= hv[m])

----------------------------------------------------------------------------
(* Execution: the outcome of each transaction, the checks in state.c's order. *)

\* channel_open_execute (the members' signatures and keys: the members sign
\* the open once they hold root 0; the id is the channel's).
OpenOutcome ==
    IF status # "none" THEN "channel_exists"
    ELSE IF \E m \in Member : bal[m] < Deposit THEN "insufficient_funds"
    ELSE "applied"

\* channel_close_execute
CloseOutcome(w) ==
    IF status = "none" THEN "channel_unknown"
    ELSE IF status = "closed" /\ Broken # "close_replay" THEN "channel_closed"
    ELSE IF Sum(w) # Total /\ Broken # "close_not_conserved" THEN "not_conserved"
    ELSE IF ~CloseSigned(w) /\ Honest # {} THEN "bad_signature"
    ELSE "applied"

\* posted_root: what commit and dispute share.
RootOutcome(r) ==
    IF status = "none" THEN "channel_unknown"
    ELSE IF status = "closed" THEN "channel_closed"
    ELSE IF Sum(r.vec) # Total THEN "not_conserved"
    ELSE IF ~AllSigned(r) /\ Broken # "commit_one_sig" THEN "bad_signature"
    ELSE "applied"

\* channel_commit_execute
CommitOutcome(r) ==
    IF RootOutcome(r) # "applied" THEN RootOutcome(r)
    ELSE IF status = "closing" THEN "already_closing"
    ELSE "applied"

\* channel_dispute_execute
Stale(r) ==
    CASE Broken = "dispute_same_version" -> r.ver < posted.ver
      [] Broken = "dispute_any_version"  -> FALSE
      [] OTHER                           -> r.ver <= posted.ver
DisputeOutcome(r) ==
    IF RootOutcome(r) # "applied" THEN RootOutcome(r)
    ELSE IF status # "closing" THEN "not_closing"
    ELSE IF Stale(r) THEN "stale_root"
    ELSE IF h1 >= deadline /\ Broken # "dispute_after_deadline" THEN "too_late"
    ELSE "applied"

\* channel_settle_execute
SettleOutcome ==
    IF status = "none" THEN "channel_unknown"
    ELSE IF status # "closing" THEN "not_closing"
    ELSE IF h1 < deadline /\ Broken # "settle_early" THEN "too_early"
    ELSE "applied"

\* Every transaction: one height.  Applied channel transactions are the
\* actions below; everything else is Tick.
Order(dv) == height < MaxHeight /\ FairOrder(dv) /\ height' = h1

\* pay_out: each member's account grows by its balance; the channel closes.
PayOut(w) ==
    /\ bal' = [m \in Member |-> bal[m] + w[m]]
    /\ paid' = paid + 1
    /\ status' = "closed"

\* The honest members watch the ledger: a posted root they signed carries
\* every signature, so they hold it from then on.
Learn(r) == [m \in Member |-> IF m \in Honest /\ SignedBy(m, r) /\ r.ver > hv[m] THEN r.ver ELSE hv[m]]

OpenTx ==
    /\ OpenOutcome = "applied"
    /\ Order(-1)
    /\ bal' = [m \in Member |-> bal[m] - Deposit]
    /\ status' = "open"
    /\ UNCHANGED <<posted, deadline, postedAt, paid>>
    /\ UNCHANGED offVars

CloseTx(w) ==
    /\ CloseOutcome(w) = "applied"
    /\ Order(-1)
    /\ PayOut(w)
    /\ UNCHANGED <<posted, deadline, postedAt>>
    /\ UNCHANGED offVars

CommitTx(r) ==
    /\ CommitOutcome(r) = "applied"
    /\ Order(-1)
    /\ status' = "closing"
    /\ posted' = r
    /\ deadline' = h1 + Challenge
    /\ postedAt' = h1
    /\ hv' = Learn(r)
    /\ UNCHANGED <<bal, paid>>
    /\ UNCHANGED <<byz, offline, sig, closeSig>>

DisputeTx(r) ==
    /\ DisputeOutcome(r) = "applied"
    /\ Order(r.ver)
    /\ posted' = r
    /\ postedAt' = h1
    /\ hv' = Learn(r)
    /\ UNCHANGED <<status, deadline, bal, paid>>
    /\ UNCHANGED <<byz, offline, sig, closeSig>>

SettleTx ==
    /\ SettleOutcome = "applied"
    /\ Order(-1)
    /\ PayOut(posted.vec)
    /\ UNCHANGED <<posted, deadline, postedAt>>
    /\ UNCHANGED offVars

\* Any other transaction, or a rejected one.  Only while closing: elsewhere
\* a transaction that changes nothing here only shifts every later height
\* by one, and every rule compares heights with the commit's.
Tick ==
    /\ status = "closing"
    /\ Order(-1)
    /\ UNCHANGED <<status, posted, deadline, postedAt, bal, paid>>
    /\ UNCHANGED offVars

----------------------------------------------------------------------------
(* Off the ledger (while the channel is open on it). *)

\* Honest m signs the next version's root, a conserved vector (the payments
\* it agreed to).  Once it signed a cooperative close it is CLOSING: it
\* makes and takes no payment, so the roots it still signs (the C lets it:
\* roots_allowed, to move the close to a newer root) pay it exactly what
\* its close does.  Broken "sign_after_close": any vector, as a closing
\* member that applies a payment to itself finalized late would sign
\* (ChannelPay.tla, LateFinal).
CloseBal(m) == (CHOOSE w \in closeSig[m] : TRUE)[m]
Sign(m, w) ==
    /\ m \in Honest
    /\ status = "open"
    /\ (closeSig[m] # {} /\ Broken # "sign_after_close") => w[m] = CloseBal(m)
    /\ Len(sig[m]) <= MaxVersion
    /\ sig' = [sig EXCEPT ![m] = Append(@, w)]
    /\ UNCHANGED <<byz, offline, hv, closeSig>>
    /\ UNCHANGED ledgerVars

\* Honest m receives the last signatures of an all-signed root it signed.
Deliver(m, v) ==
    /\ m \in Honest
    /\ status = "open"
    /\ hv[m] < v /\ v < Len(sig[m])
    /\ AllSigned([ver |-> v, vec |-> sig[m][v + 1]])
    /\ hv' = [hv EXCEPT ![m] = v]
    /\ UNCHANGED <<byz, offline, sig, closeSig>>
    /\ UNCHANGED ledgerVars

\* Honest m signs a cooperative close paying its newest held root, when it
\* has no newer root in flight (unsettled() in the C).  It signs again at
\* each newer root it comes to hold (root_adopt, on_close_ask); every
\* signature stays valid on the ledger, so closeSig keeps them all.
SignClose(m) ==
    /\ m \in Honest
    /\ status \in {"open", "closing"}
    /\ Len(sig[m]) = hv[m] + 1
    /\ sig[m][hv[m] + 1] \notin closeSig[m]
    /\ closeSig' = [closeSig EXCEPT ![m] = @ \cup {sig[m][hv[m] + 1]}]
    /\ UNCHANGED <<byz, offline, sig, hv>>
    /\ UNCHANGED ledgerVars

----------------------------------------------------------------------------

Init ==
    /\ byz \in {S \in SUBSET Member : Cardinality(S) <= MaxByz}
    /\ offline \in {S \in SUBSET (Member \ byz) : Cardinality(S) <= MaxOffline}
    /\ sig = [m \in Member |-> <<DepositVec>>]
    /\ hv = [m \in Member |-> 0]
    /\ closeSig = [m \in Member |-> {}]
    /\ height = 0
    /\ status = "none"
    /\ posted = NoRoot
    /\ deadline = 0
    /\ postedAt = 0
    /\ bal = [m \in Member |-> Deposit]
    /\ paid = 0

Next ==
    \/ OpenTx
    \/ \E w \in CloseVecs : CloseTx(w)
    \/ \E r \in CommitRoots : CommitTx(r)
    \/ \E r \in AllSignedRoots : DisputeTx(r)
    \/ SettleTx
    \/ Tick
    \/ \E m \in Member, w \in SignVecs : Sign(m, w)
    \/ \E m \in Member, v \in 1..MaxVersion : Deliver(m, v)
    \/ \E m \in Member : SignClose(m)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
(* Properties. *)

TypeOK ==
    /\ byz \subseteq Member /\ offline \subseteq Member \ byz
    /\ \A m \in Member : sig[m] \in Seq(Conserved) /\ 1 <= Len(sig[m]) /\ Len(sig[m]) <= MaxVersion + 1
    /\ \A m \in Member : hv[m] \in 0..Len(sig[m]) - 1
    /\ \A m \in Member : closeSig[m] \subseteq Conserved
    /\ height \in 0..MaxHeight
    /\ status \in {"none", "open", "closing", "closed"}
    /\ posted \in Root \cup {NoRoot}
    /\ deadline \in Nat /\ postedAt \in Nat
    /\ bal \in [Member -> Nat]
    /\ paid \in Nat

\* What the channel still holds.
Locked == IF status \in {"open", "closing"} THEN Total ELSE 0

\* Balance conservation: the members' accounts plus the locked deposits are
\* what the members held before (nothing is created or lost).
Conservation == Sum(bal) + Locked = Total

\* No double payout: the channel pays at most once.
NoDoublePayout == paid <= 1

\* What the channel paid member m: its account held exactly its deposit
\* before the open, and nothing but the channel moves it here.
Payout(m) == bal[m]

\* The key property: an honest member that stays online ends (closed by a
\* cooperative close or a settle) with at least what the newest root it
\* holds (with every signature) gives it.
HonestOnlineSafe ==
    status = "closed" => \A m \in Online : Payout(m) >= NewestHeld(m).vec[m]

\* Every honest member, online or not, is paid what some root or close it
\* signed gives it: nobody is paid by a vector it did not sign.
HonestConsented ==
    status = "closed" =>
        \A m \in Honest :
            \E w \in {sig[m][k] : k \in 1..Len(sig[m])} \cup closeSig[m] : Payout(m) = w[m]

\* Finality: the posted root was posted before the settling height, so from
\* that height on everyone knows what settle will pay.
PostedWithinPeriod == status = "closing" => postedAt < deadline

\* Too strong (a model shows it fails): "the newest root it SIGNED" rather
\* than the newest it holds.  A Byzantine member that withholds its
\* signature keeps that root from ever being all-signed.
NaiveNewestSigned ==
    status = "closed" => \A m \in Online : Payout(m) >= sig[m][Len(sig[m])][m]

=============================================================================
