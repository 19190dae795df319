---------------------------- MODULE ChannelPay ----------------------------
(***************************************************************************)
(* weft's OFF-LEDGER multi-party channel protocol (issue 16, COALESCE      *)
(* style; include/weft/channel.h, protocols/channel/channel.c and          *)
(* paydag.c, which follow the fixes of the findings in tla/README.md): ONE *)
(* channel (hyperedge) of the members Member, each depositing Deposit.     *)
(* The ledger side (commit, dispute, settle, cooperative close) is         *)
(* ChannelSettle.tla; here settlement is abstracted (SettleOutcomes).      *)
(*                                                                         *)
(* Payments.  The sender j makes (j, seq, prev, refs, to, amount): seq is  *)
(* j's previous seq + 1 and prev that payment (its hash), so the payments  *)
(* of one sender form a chain.  refs name, per other member k, a seq s of  *)
(* k's chain: j counts as incoming every payment to j in k's chain up to   *)
(* s (refs only grow).  The receiver checks, from the payments it holds,   *)
(* that prev is j's chain head, that it holds every referenced payment,    *)
(* and that deposit_j + counted incoming - outgoing on j's chain covers    *)
(* the amount; then it consents and inserts the payment; the sender sends  *)
(* the finalized payment to every member, which checks it again and        *)
(* inserts it.  A member holds a payment only with its prev and its refs   *)
(* (its holdings are downward closed), and never two of one (sender, seq). *)
(*                                                                         *)
(* Roots.  A proposer picks a cut (a head per chain: the frontier); every  *)
(* member checks that it holds the cut's payments, that the cut extends    *)
(* the previous root's cut, recomputes balances = deposits + incoming -    *)
(* outgoing over the payments in the cut, and signs (version, balances,    *)
(* frontier), at most one root per version.  A root counts once ALL        *)
(* members signed it; a member keeps the latest all-signed root it holds.  *)
(* Root 0 (the deposits) is signed by all and held by every member before  *)
(* the open goes to the ledger.                                            *)
(*                                                                         *)
(* NByz members are Byzantine, any NByz of them (chosen in Init), up to    *)
(* N - 1: the protocol claims safety for every honest member whatever all  *)
(* the others do.  A Byzantine member signs anything (payments that        *)
(* equivocate, any refs, any root, any consent, another Byzantine member's *)
(* payment), withholds its signatures, and proposes any cut to anyone, but *)
(* cannot forge an honest signature.  Which members they are does not      *)
(* matter beyond their number: the members are symmetric (equal deposits,  *)
(* no role in the spec; the C's one role, the opener that proposes roots,  *)
(* is covered because a Byzantine proposal may be any cut, an honest       *)
(* opener's included).                                                     *)
(*                                                                         *)
(* Switches (cfg constants):                                               *)
(*   CutCheck   what a member checks of a proposed cut besides the above:  *)
(*     "as_designed"  nothing more (the protocol as written)               *)
(*     "closed"       the cut is closed under refs: every ref (k, s) of a  *)
(*                    payment in the cut has s <= the cut's seq for k      *)
(*     "nonneg"       every recomputed balance is >= 0                     *)
(*   RootRule   which version a member signs and what the cut must extend: *)
(*     "next"         version = held + 1 (the root after the all-signed    *)
(*                    root it holds), extending that root's cut            *)
(*     "skip_held"    any version above every version it signed,           *)
(*                    extending the all-signed root it holds               *)
(*     "skip_signed"  any version above every version it signed,           *)
(*                    extending the last root it SIGNED (all-signed or not)*)
(*   Broken     a deliberately wrong rule (teeth models):                  *)
(*     "none"                                                              *)
(*     "recv_own_only" (a) a member checks the sender's balance counting   *)
(*                    only the outgoing payments to the payment's receiver *)
(*                    (the ones it consented itself): no chain check       *)
(*     "two_roots"    (b) a member may sign two roots of one version       *)
(*     "open_early"   (c) the open goes to the ledger before root 0 is     *)
(*                    all-signed and held by every member                  *)
(*     "n_minus_1"    (d) a root counts with N - 1 signatures              *)
(*   LateFinal  TRUE: as coded, a member that signed a cooperative close   *)
(*     (CLOSING) still applies a payment to it that a Byzantine payer      *)
(*     finalizes late, with a consent the member gave before it closed and *)
(*     forgot (3 x channel_pay_timeout_ms); FALSE: a CLOSING member        *)
(*     applies no payment to itself (one fix of finding 5)                 *)
(*   FrozenClose  TRUE: as coded (moves_closed_balance), a CLOSING member  *)
(*     signs and proposes no root that moves its own balance from its     *)
(*     held root's (the other fix of finding 5, the one the C code has);   *)
(*     FALSE: the C code before (ChannelPayLateFinal)                      *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Member,      \* the members, model values (equal deposits: symmetric)
    Deposit,     \* each member's deposit
    NByz,        \* how many members are Byzantine, 0..N-1 (which: chosen in Init)
    MaxSeq,      \* the longest payment chain per member (a model bound)
    MaxAmt,      \* amounts are 1..MaxAmt (0 is malformed: weft_channel_payment_read)
    MaxVersion,  \* the highest root version signed (a model bound)
    CutCheck,    \* "as_designed", "closed" or "nonneg" (above)
    RootRule,    \* "next", "skip_held" or "skip_signed" (above)
    Broken,      \* "none" or one of the broken rules above
    LateFinal,   \* TRUE: as coded; FALSE: a fix (above)
    FrozenClose  \* TRUE: as coded; FALSE: the C code before (above)

ASSUME Deposit \in Nat \ {0} /\ MaxSeq \in Nat \ {0}
ASSUME MaxAmt \in Nat \ {0} /\ MaxVersion \in Nat \ {0}
ASSUME CutCheck \in {"as_designed", "closed", "nonneg"}
ASSUME RootRule \in {"next", "skip_held", "skip_signed"}
ASSUME Broken \in {"none", "recv_own_only", "two_roots", "open_early", "n_minus_1"}
ASSUME LateFinal \in BOOLEAN /\ FrozenClose \in BOOLEAN
\* At least one honest member (else nothing to protect); under broken (d)
\* two, so that a root counting with N - 1 signatures still has an honest
\* signer (SignedRoots).
ASSUME NByz \in 0..Cardinality(Member) - IF Broken = "n_minus_1" THEN 2 ELSE 1

VARIABLES
    byz,       \* the Byzantine members (fixed in Init)
    dag,       \* dag[m]: the payments honest m holds (its copy of the DAG)
    rsig,      \* rsig[m]: the roots honest m signed, records [ver, cut, bal]
    held,      \* held[m]: the latest all-signed root honest m holds, or NoRoot
    rprop,     \* the roots honest proposers proposed (only without a Byzantine member)
    closeSig,  \* closeSig[m]: every cooperative close vector honest m signed (it is CLOSING once one)
    status     \* the channel on the ledger: "none" (not opened yet) or "open"

vars == <<byz, dag, rsig, held, rprop, closeSig, status>>

Perms == Permutations(Member)
N == Cardinality(Member)
Total == Deposit * N
Honest == Member \ byz

\* The finalized payments (the sender's signature and the receiver's
\* consent) that an honest member holds, which any member can fetch: its
\* honest receiver's, or its honest sender's when a Byzantine member
\* consented.  A payment between two Byzantine members reaches an honest
\* member only when one of them shows it (ByzPay), then it is here.
Fin == UNION {dag[m] : m \in Honest}

----------------------------------------------------------------------------
(* Payments, chains, cuts. *)

(* A payment is a record [from, seq, prev, refs, to, amt]: prev is <<>> for *)
(* seq 1, else <<the previous payment of from>> (the record stands for its  *)
(* hash: the "prev" field of struct weft_channel_payment); refs is a        *)
(* function Member -> seq (0: no ref; refs[from] = 0), the wire's ascending *)
(* [(member, seq)...] list.  Records compare by content, as hashes do.      *)

RECURSIVE ChainOf(_)
\* The payments of the chain ending at head h (<<>>: the empty chain).
ChainOf(h) == IF h = <<>> THEN {} ELSE {h[1]} \cup ChainOf(h[1].prev)

RECURSIVE SumAmt(_)
SumAmt(S) == IF S = {} THEN 0
             ELSE LET p == CHOOSE q \in S : TRUE IN p.amt + SumAmt(S \ {p})

RECURSIVE SumOver(_, _)
SumOver(f, S) == IF S = {} THEN 0
                 ELSE LET x == CHOOSE y \in S : TRUE IN f[x] + SumOver(f, S \ {x})
Sum(f) == SumOver(f, Member)

\* k's chain in a set of payments V (an honest member's DAG has one payment
\* per (sender, seq), 1..HeadSeq): its head and the head's seq.
FromIn(V, k) == {p \in V : p.from = k}
HeadSeq(V, k) == IF FromIn(V, k) = {} THEN 0
                 ELSE (CHOOSE p \in FromIn(V, k) : \A q \in FromIn(V, k) : q.seq <= p.seq).seq
ChainHead(V, k) == IF FromIn(V, k) = {} THEN <<>>
              ELSE <<CHOOSE p \in FromIn(V, k) : p.seq = HeadSeq(V, k)>>

\* A cut: a head per chain (the frontier: weft_channel_frontier hashes the
\* (seq, head hash) pairs).  Its payments are the chains below the heads.
EmptyCut == [k \in Member |-> <<>>]
CutSeq(c, k) == IF c[k] = <<>> THEN 0 ELSE c[k][1].seq
CutPays(c) == UNION {ChainOf(c[k]) : k \in Member}
\* balances = deposits + incoming - outgoing over the payments in the cut
Bal(c) == LET P == CutPays(c)
          IN [m \in Member |-> Deposit + SumAmt({p \in P : p.to = m})
                                       - SumAmt({p \in P : p.from = m})]
\* c2 extends c1: every chain of c1 is a prefix of c2's (same heads' hashes).
Extends(c2, c1) == \A k \in Member : IF c1[k] = <<>> THEN TRUE ELSE c1[k][1] \in ChainOf(c2[k])
\* The cut of every head in V.
HeadsCut(V) == [k \in Member |-> ChainHead(V, k)]

\* A root: version, cut (the frontier) and the balances recomputed from it
\* (kept in the record only so that TLC computes them once).
MkRoot(v, c) == [ver |-> v, cut |-> c, bal |-> Bal(c)]
Root0 == MkRoot(0, EmptyCut)
NoRoot == [ver |-> -1, cut |-> EmptyCut, bal |-> [k \in Member |-> Deposit]]

\* The cut of V at the seqs s (s[k] <= k's head seq in V).
CutAt(V, s) == [k \in Member |->
                  IF s[k] = 0 THEN <<>>
                  ELSE <<CHOOSE p \in V : p.from = k /\ p.seq = s[k]>>]

----------------------------------------------------------------------------
(* Validation of one payment p against the payments V a member holds       *)
(* (the receiver's check before it consents, and every member's re-check   *)
(* before it inserts a finalized payment). *)

\* Incoming counted on p's chain: the payments to p.from in each other
\* chain up to p's ref (refs only grow, so the refs of p cover its chain's).
Counted(V, p) == SumAmt({q \in V : q.to = p.from /\ q.seq <= p.refs[q.from]})
\* Outgoing on p's chain, p included.  Broken (a): only the payments to
\* p's receiver, the ones the receiver consented itself.
Outgoing(p, own) ==
    SumAmt({q \in ChainOf(<<p>>) : ~own \/ q.to = p.to})

\* own: the checker applies the broken rule (a) (honest senders check their
\* own payments with the full rule: they know their chain).
ValidIn(V, p, own) ==
    /\ p.from # p.to
    /\ p.amt \in 1..MaxAmt
    \* prev is j's chain head (so V holds no other payment of this seq)
    /\ p.seq = HeadSeq(V, p.from) + 1
    /\ p.prev = ChainHead(V, p.from)
    \* V holds every referenced payment; refs only grow
    /\ p.refs[p.from] = 0
    /\ \A k \in Member \ {p.from} : p.refs[k] <= HeadSeq(V, k)
    /\ IF p.prev = <<>> THEN TRUE ELSE \A k \in Member : p.refs[k] >= p.prev[1].refs[k]
    \* deposit + counted incoming - outgoing (p included) >= 0
    /\ Deposit + Counted(V, p) >= Outgoing(p, own)

RecvOwn == Broken = "recv_own_only"

----------------------------------------------------------------------------
(* Roots. *)

\* A root counts: all N signed it.  The Byzantine member signs anything, so
\* this is "every honest member signed it".  Broken (d): N - 1 signatures.
AllSigned(r) ==
    IF Broken = "n_minus_1"
    THEN Cardinality({m \in Honest : r \in rsig[m]}) + Cardinality(byz) >= N - 1
    ELSE \A m \in Honest : r \in rsig[m]

\* The roots that count.  Some honest member signed each: a root needs
\* all N signatures and at least one member is honest (under broken (d),
\* N - 1 signatures and at least two honest members: ASSUME above).
SignedRoots == UNION {rsig[m] : m \in Honest}
AllSignedRoots == {r \in SignedRoots : AllSigned(r)}

\* The newest root honest m signed (all-signed or not).
MaxSigned(m) == CHOOSE r \in rsig[m] : \A q \in rsig[m] : q.ver <= r.ver
OneRoot(m, v) == Broken = "two_roots" \/ ~\E q \in rsig[m] : q.ver = v

\* The versions honest m may sign (RootRule), and the cut the new one must
\* extend ("the previous root").
VersionOK(m, v) ==
    /\ held[m] # NoRoot
    /\ IF RootRule = "next"
       THEN v = held[m].ver + 1 /\ OneRoot(m, v)
       ELSE v > MaxSigned(m).ver
PrevCut(m) == IF RootRule = "skip_signed" THEN MaxSigned(m).cut ELSE held[m].cut
NextVersion(m) == IF RootRule = "next" THEN held[m].ver + 1 ELSE MaxSigned(m).ver + 1

\* The extra check on a cut (CutCheck).
CutOK(c) ==
    CASE CutCheck = "closed" ->
            \A p \in CutPays(c) : \A k \in Member : p.refs[k] <= CutSeq(c, k)
      [] CutCheck = "nonneg" -> \A k \in Member : Bal(c)[k] >= 0
      [] OTHER -> TRUE

\* The cuts honest m may be asked to sign.  A Byzantine proposer sends any
\* cut made of payments m holds (any other fails m's first check) and
\* extending the previous root (any other fails the second); that covers
\* every honest proposal too.  Without a Byzantine member: what honest
\* proposers proposed.
CutChoices(m, v) ==
    IF byz # {}
    THEN {CutAt(dag[m], s) :
            s \in {t \in [Member -> 0..MaxSeq] :
                     \A k \in Member : CutSeq(PrevCut(m), k) <= t[k] /\ t[k] <= HeadSeq(dag[m], k)}}
    ELSE {r.cut : r \in {q \in rprop : q.ver = v}}

\* The ledger accepts a root only with balances it can encode (uint64) that
\* add up to the deposits (state.c conserved(): a "negative" balance wraps,
\* the sum overflows: not_conserved).
Postable(r) == \A k \in Member : r.bal[k] >= 0

----------------------------------------------------------------------------
(* Actions. *)

\* The open is executed on the ledger.  Correct: every honest member holds
\* the all-signed root 0 first (it signs the open only then).  Broken (c):
\* the open goes first; the Byzantine member may withhold its root-0
\* signature for ever.
\* C: root0_done -> sign_open (after root 0 is all-signed and persisted),
\* maybe_submit_open; the ledger's channel_open_execute.
Open ==
    /\ status = "none"
    /\ Broken = "open_early" \/ \A m \in Honest : held[m] # NoRoot
    /\ status' = "open"
    /\ UNCHANGED <<byz, dag, rsig, held, rprop, closeSig>>

\* Honest j pays r the amount a.  j makes the next payment of its chain,
\* refs naming every chain head it holds, only if its own check passes
\* (with the full rule: it knows its chain); an honest receiver checks it
\* (ValidIn, with the rule of the model), consents and inserts it; the
\* consent goes back to j, which inserts it too.  A Byzantine receiver
\* consents (or never does: then nothing happened that an honest member
\* sees, which is this step not taken).  The sender's and the receiver's
\* steps are one action: between them only the receiver sees the proposal,
\* and no check of it depends on anything but the payment and the
\* payments it names, which the receiver holds for ever once it holds them.
\* C: chan_propose (payer ACTIVE), on_propose (paydag_tail_check; receiver
\* ACTIVE, else "closing"), on_consent -> finalize_ready -> finalize.
Pay(j, r, a) ==
    LET p == [from |-> j, seq |-> HeadSeq(dag[j], j) + 1, prev |-> ChainHead(dag[j], j),
              refs |-> [k \in Member |-> IF k = j THEN 0 ELSE HeadSeq(dag[j], k)],
              to |-> r, amt |-> a]
    IN
    /\ status = "open"
    /\ j \in Honest /\ j # r
    /\ closeSig[j] = {}
    /\ p.seq <= MaxSeq
    /\ ValidIn(dag[j], p, FALSE)
    /\ IF r \in Honest
       THEN /\ closeSig[r] = {}
            /\ ValidIn(dag[r], p, RecvOwn)
            /\ dag' = [dag EXCEPT ![j] = @ \cup {p}, ![r] = @ \cup {p}]
       ELSE dag' = [dag EXCEPT ![j] = @ \cup {p}]
    /\ UNCHANGED <<byz, rsig, held, rprop, closeSig, status>>

\* Byzantine b makes any payment and shows it to honest r: to r itself (r
\* checks it, consents and inserts it), or to another Byzantine member
\* (which consents to anything; r checks it and inserts it as a finalized
\* payment).  Any amount, any refs, extending whatever branch of b's chain
\* r holds (b equivocates at will: two members may get different payments
\* of one seq).  A payment of b to another honest member needs that
\* member's consent: it is this action with r that member, then Receive.
\* A CLOSING r consents to nothing (on_propose: "closing"), but it still
\* takes finalized payments between others (take_final), and, as coded
\* (LateFinal), one to itself that b finalizes late with a consent r gave
\* while it was ACTIVE and forgot (the tick, 3 x channel_pay_timeout_ms):
\* take_final checks no status, received_here reports
\* "received_after_close".  (The consent was checked against r's DAG of
\* then; checking the payment against r's DAG now, as take_final does,
\* allows at least every such payment whose checks still pass.)
ByzPayments(b, r) ==
    {[from |-> b, seq |-> HeadSeq(dag[r], b) + 1, prev |-> ChainHead(dag[r], b),
      refs |-> f, to |-> t, amt |-> a] :
        f \in {g \in [Member -> 0..MaxSeq] : g[b] = 0},
        t \in ({r} \cup byz) \ {b},
        a \in 1..MaxAmt}
\* C (the honest side): on_propose for a payment to r, take_final otherwise.
ByzPay(b, r) ==
    /\ status = "open"
    /\ b \in byz /\ r \in Honest
    /\ HeadSeq(dag[r], b) < MaxSeq
    /\ \E p \in ByzPayments(b, r) :
        /\ p.to = r => (closeSig[r] = {} \/ LateFinal)
        /\ ValidIn(dag[r], p, RecvOwn)
        /\ dag' = [dag EXCEPT ![r] = @ \cup {p}]
    /\ UNCHANGED <<byz, rsig, held, rprop, closeSig, status>>

\* Honest m receives (or fetches) a finalized payment, checks it again and
\* inserts it.  One of the same (sender, seq) as a payment it holds fails
\* the prev check (evidence of equivocation; not inserted).  A CLOSING
\* member still does (take_final checks no status): payments to it are
\* not among them, since each needed its consent and it holds them all.
\* C: on_final / on_pays -> take_final (paydag_check, paydag_apply).
Receive(m, p) ==
    /\ status = "open"
    /\ m \in Honest
    /\ p \notin dag[m]
    /\ ValidIn(dag[m], p, RecvOwn)
    /\ dag' = [dag EXCEPT ![m] = @ \cup {p}]
    /\ UNCHANGED <<byz, rsig, held, rprop, closeSig, status>>

\* FrozenClose: a CLOSING member signs no root that moves its own balance
\* from its held root's, which its close pays (every close it signed pays
\* it the same, since every root it signed since pays it the same).
\* C: moves_closed_balance in on_root_ask and maybe_build_root.
BalanceKept(m, r) ==
    (FrozenClose /\ closeSig[m] # {}) => r.bal[m] = held[m].bal[m]

\* Honest p proposes the next root: the heads it holds (a cut closed under
\* refs, since its holdings are), and signs it at once (only in models
\* without a Byzantine member; with one, CutChoices covers this).  So an
\* honest proposer proposes at most one root per version, like any other
\* root it signs.
\* C: maybe_build_root (the opener's node), root_check, sign_ours.
ProposeRoot(p) ==
    LET r == MkRoot(NextVersion(p), HeadsCut(dag[p]))
    IN
    /\ status = "open"
    /\ byz = {}
    /\ p \in Honest
    /\ r.ver <= MaxVersion
    /\ VersionOK(p, r.ver)
    /\ Extends(r.cut, PrevCut(p))
    /\ CutOK(r.cut)
    /\ r \notin rsig[p]
    /\ BalanceKept(p, r)
    /\ rprop' = rprop \cup {r}
    /\ rsig' = [rsig EXCEPT ![p] = @ \cup {r}]
    /\ UNCHANGED <<byz, dag, held, closeSig, status>>

\* Honest m signs the root (v, c): the version rule (RootRule; at most one
\* root per version unless broken (b)); it holds the cut's payments (the
\* heads, hence the same chains: the frontier); the cut extends the
\* previous root's cut; CutCheck; the balances are recomputed from the cut
\* (MkRoot).  A CLOSING member still signs roots (roots_allowed: a
\* cooperative close in progress, so that it can move to a newer root),
\* but none that moves its own balance (BalanceKept).
\* C: on_root_ask (behind, signed_another, root_check: cut_behind,
\* conflict, paydag_balances_at -> overspend), allowed by roots_allowed.
SignRoot(m, v, c) ==
    /\ status = "open"
    /\ m \in Honest
    /\ VersionOK(m, v)
    /\ \A k \in Member : IF c[k] = <<>> THEN TRUE ELSE c[k][1] \in dag[m]
    /\ Extends(c, PrevCut(m))
    /\ CutOK(c)
    /\ MkRoot(v, c) \notin rsig[m]
    /\ BalanceKept(m, MkRoot(v, c))
    /\ rsig' = [rsig EXCEPT ![m] = @ \cup {MkRoot(v, c)}]
    /\ UNCHANGED <<byz, dag, held, rprop, closeSig, status>>

\* Honest m gets the last signatures of a root it signed: it holds it
\* all-signed now, and keeps it if it is newer than the one it holds.  The
\* Byzantine member may withhold its signature from anyone (never forced).
\* C: on_root_sigs -> root_collect, on_root_all -> root_adopt.
Learn(m, r) ==
    /\ status \in {"none", "open"}
    /\ m \in Honest
    /\ r \in rsig[m]
    /\ r.ver > held[m].ver
    /\ AllSigned(r)
    /\ held' = [held EXCEPT ![m] = r]
    /\ UNCHANGED <<byz, dag, rsig, rprop, closeSig, status>>

\* Honest m signs the cooperative close: its latest all-signed root's
\* balances, only if it holds no payment beyond that root (unsettled()).
\* It is CLOSING from then on: it makes and consents to no payment.  A
\* newer root completed meanwhile makes it sign the close again at that
\* root (root_adopt, on_close_ask): the older signatures stay valid on the
\* ledger, so closeSig keeps them all.
\* C: sign_close from cmd_close, on_close_ask or root_adopt, each only when
\* unsettled() is NULL (no unrooted payment, none in flight, no consent
\* outstanding).
SignClose(m) ==
    /\ status = "open"
    /\ m \in Honest
    /\ held[m] # NoRoot
    /\ dag[m] = CutPays(held[m].cut)
    /\ held[m].bal \notin closeSig[m]
    /\ closeSig' = [closeSig EXCEPT ![m] = @ \cup {held[m].bal}]
    /\ UNCHANGED <<byz, dag, rsig, held, rprop, status>>

\* Closing.  Each way the channel can close is a terminal step that
\* changes nothing off the ledger, so instead of taking it the invariants
\* check every way it could close in every state (Payouts): the same
\* behaviours, without the terminal states.
\*
\* Cooperative close (channel_close_execute): every member signed the
\* vector, at some time (the Byzantine members sign anything); the ledger
\* pays it.
CloseOutcomes ==
    IF Honest = {} THEN {}
    ELSE {w \in UNION {closeSig[m] : m \in Honest} :
            /\ \A m \in Honest : w \in closeSig[m]
            /\ \A k \in Member : w[k] >= 0}

\* Unilateral close, abstracted (ChannelSettle.tla checks the ledger rules
\* that give this): every honest member posts the latest all-signed root it
\* holds (commit or dispute, in time), the Byzantine member posts any
\* all-signed root or none; the ledger accepts only postable roots, and
\* the settled root is one of the highest version posted (of two of one
\* version, whichever was posted first: a dispute needs a higher version).
\* With nothing posted nobody can get the deposits out: "locked", paying
\* nothing (the Byzantine member may post a root later, or never).
Locked == [k \in Member |-> 0]
SettleOutcomes ==
    LET hp == {held[m] : m \in {h \in Honest : held[h] # NoRoot}}
        byzChoices == IF byz = {} THEN {{}}
                      ELSE {{}} \cup {{r} : r \in AllSignedRoots}
        Settled(bp) ==
            LET posted == {r \in hp \cup bp : Postable(r)}
            IN IF posted = {} THEN {Locked}
               ELSE {s.bal : s \in {q \in posted : \A o \in posted : o.ver <= q.ver}}
    IN UNION {Settled(bp) : bp \in byzChoices}

\* What the channel can pay the members if it closes now (once it is open).
Payouts == IF status = "open" THEN CloseOutcomes \cup SettleOutcomes ELSE {}

----------------------------------------------------------------------------

Init ==
    /\ byz \in {S \in SUBSET Member : Cardinality(S) = NByz}
    /\ dag = [m \in Member |-> {}]
    \* every member signs root 0 (the deposits) before anything else
    /\ rsig = [m \in Member |-> {Root0}]
    /\ held = [m \in Member |-> NoRoot]
    /\ rprop = {}
    /\ closeSig = [m \in Member |-> {}]
    /\ status = "none"

Next ==
    \/ Open
    \/ \E j, r \in Member, a \in 1..MaxAmt : Pay(j, r, a)
    \/ \E b, r \in Member : ByzPay(b, r)
    \/ \E m \in Member, p \in Fin : Receive(m, p)
    \/ \E m \in Member : ProposeRoot(m)
    \/ \E m \in Honest, v \in 1..MaxVersion :
         VersionOK(m, v) /\ \E c \in CutChoices(m, v) : SignRoot(m, v, c)
    \/ \E m \in Member : \E r \in rsig[m] : Learn(m, r)
    \/ \E m \in Member : SignClose(m)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
(* Properties (invariants). *)

TypeOK ==
    /\ byz \subseteq Member
    /\ status \in {"none", "open"}
    /\ \A m \in Honest : held[m] = NoRoot \/ held[m] \in rsig[m]
    /\ \A m \in Honest : \A r \in rsig[m] : r.ver \in 0..MaxVersion /\ r.bal = Bal(r.cut)

\* Balance conservation: every all-signed root's balances add up to the
\* deposits, and so does every payout (a locked channel pays nothing).
Conservation ==
    /\ \A r \in AllSignedRoots : Sum(r.bal) = Total
    /\ \A w \in Payouts \ {Locked} : Sum(w) = Total

\* Every balance of every all-signed root is >= 0.
NonNegative == \A r \in AllSignedRoots : \A k \in Member : r.bal[k] >= 0

\* No double spend: (1) in every all-signed root, every sender's outgoing
\* is at most its deposit + its incoming in that root; (2) no two
\* all-signed roots hold different payments of one (sender, seq); (3) no
\* honest member holds two payments of one (sender, seq).
NoDoubleSpend ==
    /\ \A r \in AllSignedRoots :
         LET P == CutPays(r.cut)
         IN \A k \in Member :
              SumAmt({p \in P : p.from = k}) <= Deposit + SumAmt({p \in P : p.to = k})
    /\ LET P == UNION {CutPays(r.cut) : r \in AllSignedRoots}
       IN \A p1, p2 \in P : (p1.from = p2.from /\ p1.seq = p2.seq) => p1 = p2
    /\ \A m \in Honest : \A p1, p2 \in dag[m] :
         (p1.from = p2.from /\ p1.seq = p2.seq) => p1 = p2

\* One all-signed root per version, and the all-signed roots are totally
\* ordered: a higher version's cut extends a lower one's.
OneRootPerVersion ==
    \A r1, r2 \in AllSignedRoots : r1.ver = r2.ver => r1 = r2
RootsExtend ==
    \A r1, r2 \in AllSignedRoots : r1.ver < r2.ver => Extends(r2.cut, r1.cut)

\* What honest m is owed: its balance in the latest all-signed root it
\* holds (before it holds one: its deposit), less what it paid itself after
\* that root (its own payments beyond the root's cut; an honest member's
\* payments are one chain, all in its own DAG).
Owed(m) == held[m].bal[m]
PaidSince(m) == SumAmt({p \in dag[m] : p.from = m /\ p.seq > CutSeq(held[m].cut, m)})

\* The key property: a member who stays online never loses funds that an
\* all-signed root gave it.
HonestNoLoss ==
    \A w \in Payouts : \A m \in Honest : w[m] + PaidSince(m) >= Owed(m)

\* An honest member can always exit: once the channel is open on the
\* ledger, it holds an all-signed root to post.
ExitPossible == status = "open" => \A m \in Honest : held[m] # NoRoot

\* (Liveness, stated as invariants.)  Two honest members signed different
\* roots of version v: a split version.  NoSplitVersion says it never
\* happens (a model shows it does); SplitIsFinal says that then no honest
\* member ever holds a root of version v or later (holds under RootRule
\* "next": the version can never be all-signed, and nobody signs v + 1
\* before it holds v; rsig only grows, so the split stays).
SplitAt(v) ==
    \E m1, m2 \in Honest : \E r1 \in rsig[m1], r2 \in rsig[m2] :
        r1.ver = v /\ r2.ver = v /\ r1 # r2
NoSplitVersion == \A v \in 1..MaxVersion : ~SplitAt(v)
SplitIsFinal ==
    \A v \in 1..MaxVersion : SplitAt(v) => \A m \in Honest : held[m].ver < v

=============================================================================
