------------------------------ MODULE AscRound ------------------------------
(***************************************************************************)
(* ONE round of an atomic service channel (A402 without a TEE;             *)
(* docs/protocols/asc.md) as protocols/channel/asc.c (the round) and       *)
(* protocols/ledger/asc.c (asc.claim, asc.refund, asc.close) implement it: *)
(* a client pays a provider a price for a result, and the provider is paid *)
(* only by revealing t, the key of the result.  The open is done: the      *)
(* deposit is locked on the ledger.                                        *)
(*                                                                         *)
(* The round.  The client sends REQUEST (price).  The provider picks t,    *)
(* T = t.G, encrypts the result under a key from t and pre-signs the paid  *)
(* state m (the price moved from the client to the provider, point T)      *)
(* under T: OFFER.  The client pre-verifies and signs m: ACCEPT.  The      *)
(* provider adapts its pre-signature with t (a full signature of m: it can *)
(* now claim) and sends t: REVEAL.  The client adapts too and decrypts.    *)
(* On the ledger, asc.claim pays m to the provider before the expiry, only *)
(* with the client's signature of m and a t with t.G = T, and carries t    *)
(* (the client's node reads it from the executed claim and finishes the    *)
(* round); asc.refund gives the client the whole deposit from the expiry   *)
(* on; asc.close pays a CLOSED state both signed.  Each needs an open      *)
(* channel and closes it.                                                  *)
(*                                                                         *)
(* t is abstract: the k-th REQUEST of the round (a client may give a       *)
(* request up before it signed and ask again under the same seq) is        *)
(* answered with the secret k, in the state m_k.  offered holds the k      *)
(* whose m_k the provider pre-signed, reveals the t it sent, cSigned the k *)
(* whose m_k the client signed.  Nobody forges a signature or computes t   *)
(* from T.  Refusals (bad price, service errors), the evidence, the        *)
(* encryption and several rounds are not modelled.                         *)
(*                                                                         *)
(* At most one party is Byzantine; which one (none, the client or the      *)
(* provider) is chosen in Init, so a model with MaxByz = 1 checks all      *)
(* three positions (both Byzantine: nobody is left to protect).  A         *)
(* Byzantine provider offers any request (the honest client takes only the *)
(* offer of its current request: a state that is not exactly the expected  *)
(* one, or a pre-signature that does not verify, is refused, a no-op       *)
(* here), reveals any t at any time or never, claims any state with or     *)
(* without t (the ledger refuses what it must), signs any close, crashes.  *)
(* A Byzantine client sends any requests, signs any offer or none,         *)
(* withholds or delays its ACCEPT, refunds whenever the ledger takes it,   *)
(* signs any close, keeps the other side's close signature and uses it     *)
(* later, goes offline; it knows every t sent to it or published.          *)
(*                                                                         *)
(* Closes.  An honest node signs the CLOSED state of its latest state,     *)
(* only with no round in progress (R_NONE), either asking (cmd_close,      *)
(* while ACTIVE) or answering the other side's signature of the same state *)
(* (on_close_ask); either way its status becomes CLOSING, in which it      *)
(* takes no new request (cmd_request, on_request) and signs no offer       *)
(* (on_offer) or reveal (on_accept).  Close signatures are kept as what    *)
(* happened (cClose, pClose: the amounts to the provider of the CLOSED     *)
(* states each honest side signed): a signature, once out, can be used at  *)
(* any later time, whatever its signer did since.  A restart (CRestart,    *)
(* PRestart) loses a CLOSING the node kept in memory only.                 *)
(*                                                                         *)
(* Time.  now is the height the next ledger transaction executes at        *)
(* (l->height + 1 in the C): a claim needs now < Expiry, a refund          *)
(* now >= Expiry.  Delta is channel_lock_delta: the honest provider takes  *)
(* a request only if now + Delta < Expiry (on_request, "expiring").  The   *)
(* synchrony assumption (ClaimLands): a claim the honest provider can make *)
(* from a height h with h + Delta < Expiry lands before the expiry; Tick   *)
(* never reaches the expiry before it does.                                *)
(*                                                                         *)
(* Switches (cfg constants):                                               *)
(*   AcceptRule  what the honest provider does with the ACCEPT of its      *)
(*     offer:                                                              *)
(*     "as_coded"  adapts and REVEALs at once (on_accept before the        *)
(*                 AscRoundLateAccept finding: no check of the height or   *)
(*                 of the channel's status)                                *)
(*     "checked"   only while ACTIVE (the channel open, no close signed)   *)
(*                 and now + Delta < Expiry; else it ignores it and t      *)
(*                 stays secret (on_accept as coded now)                   *)
(*   BrokenNonceReuse  teeth: the provider's pre-signatures of two         *)
(*     different states share a nonce: whoever holds both computes the     *)
(*     provider's key and forges its signature of any state (a close       *)
(*     paying it nothing)                                                  *)
(*   BrokenClaimNoSecret  teeth: the ledger does not check a claim's t (no *)
(*     bad_secret): a claim pays with any t or none                        *)
(*   AskerClosingInMemory  what an honest node that ASKS a cooperative     *)
(*     close (cmd_close) keeps of its CLOSING:                             *)
(*     TRUE   the C code before: memory only (cmd_close called no         *)
(*            save_meta); after a restart the channel was ACTIVE again,    *)
(*            while the close signature was already out                    *)
(*     FALSE  as coded: persisted (save_meta) before the signature leaves, *)
(*            as on_close_ask does for the side that answers               *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS
    Deposit,              \* the client's deposit, locked by asc.open (the open is done in Init)
    Prices,               \* the prices a request may carry (1..Deposit: cmd_request, on_request)
    MaxReq,               \* the most REQUESTs in the round (given up, asked again; a model bound)
    Expiry,               \* the channel's expiry height (asc.open's height + 1 + timeout)
    Delta,                \* channel_lock_delta, in heights
    MaxByz,               \* 0: both honest; 1: one party, either, may be Byzantine (chosen in Init)
    AcceptRule,           \* "as_coded" or "checked" (above)
    AskerClosingInMemory, \* TRUE the C code before, FALSE as coded (above)
    BrokenNonceReuse,     \* teeth: pre-signatures share a nonce (above)
    BrokenClaimNoSecret   \* teeth: the ledger does not check a claim's t (above)

ASSUME Deposit \in Nat \ {0} /\ Prices \subseteq 1..Deposit /\ Prices # {}
ASSUME MaxReq \in Nat \ {0} /\ Expiry \in Nat \ {0} /\ Delta \in Nat \ {0}
ASSUME MaxByz \in 0..1
ASSUME AcceptRule \in {"as_coded", "checked"} /\ AskerClosingInMemory \in BOOLEAN
ASSUME BrokenNonceReuse \in BOOLEAN /\ BrokenClaimNoSecret \in BOOLEAN

Req == 1..MaxReq      \* request k; its secret t is k too
NoT == 0              \* "no t", or a t that is not the state's (a claim's t field)

VARIABLES
    byz,        \* the Byzantine party: {}, {"client"} or {"provider"} (fixed in Init)
    now,        \* the height the next ledger transaction executes at
    reqPrice,   \* reqPrice[k]: the price of the client's request k, 0 before it is sent
    cReq,       \* the client's newest request (0: none yet)
    cPhase,     \* the honest client's round: "idle", "requested", "accepted", "done"
    cSigned,    \* the k whose paid state m_k the client signed (ACCEPT sent)
    cKnows,     \* the t the honest client's node holds (it adapted and decrypted)
    offered,    \* the k whose m_k the provider pre-signed under T_k (OFFER sent)
    pPhase,     \* the honest provider's round: "idle", "offered", "done" (holds the signature)
    pReq,       \* the request of the honest provider's round
    pGotAt,     \* the height at which the honest provider took the client's signature
    reveals,    \* the t the provider sent in a REVEAL
    cClose,     \* the honest client's close signatures: the amounts to the provider of the CLOSED states it signed
    pClose,     \* the same for the honest provider
    cClosing,   \* the honest client's status CLOSING: "no" (ACTIVE), "mem" (in memory only), "disk" (persisted)
    pClosing,   \* the same for the honest provider
    chan,       \* the ledger's record of the channel: "open" or "closed"
    paidP,      \* what the ledger paid the provider out of the channel
    paidC,      \* what the ledger paid the client back out of the channel
    published,  \* the t field of the executed claim (NoT: no claim, or a claim without a valid t)
    settled,    \* how the channel was paid out: [by |-> "none", "claim", "close" or "refund",
                \*   k |-> the request whose state was claimed, else 0]
    payouts     \* how many times the ledger paid the channel out

vars == <<byz, now, reqPrice, cReq, cPhase, cSigned, cKnows, offered, pPhase, pReq, pGotAt,
          reveals, cClose, pClose, cClosing, pClosing, chan, paidP, paidC, published, settled, payouts>>
clientVars == <<reqPrice, cReq, cPhase, cSigned, cKnows, cClose, cClosing>>
providerVars == <<offered, pPhase, pReq, pGotAt, reveals, pClose, pClosing>>
ledgerVars == <<chan, paidP, paidC, published, settled, payouts>>

ByzClient == "client" \in byz
ByzProvider == "provider" \in byz

TypeOK ==
    /\ byz \in {{}, {"client"}, {"provider"}}
    /\ now \in 0..Expiry
    /\ reqPrice \in [Req -> {0} \cup Prices]
    /\ cReq \in 0..MaxReq
    /\ cPhase \in {"idle", "requested", "accepted", "done"}
    /\ cSigned \subseteq Req /\ cKnows \subseteq Req
    /\ offered \subseteq Req /\ reveals \subseteq Req
    /\ pPhase \in {"idle", "offered", "done"}
    /\ pReq \in 0..MaxReq /\ pGotAt \in 0..Expiry
    /\ cClose \subseteq 0..Deposit /\ pClose \subseteq 0..Deposit
    /\ cClosing \in {"no", "mem", "disk"} /\ pClosing \in {"no", "mem", "disk"}
    /\ chan \in {"open", "closed"}
    /\ paidP \in 0..Deposit /\ paidC \in 0..Deposit
    /\ published \in {NoT} \cup Req
    /\ settled \in [by : {"none", "claim", "close", "refund"}, k : 0..MaxReq]
    /\ payouts \in Nat

\* The price of request k (0 for "no request").
Price(k) == IF k \in Req THEN reqPrice[k] ELSE 0

\* What the client knows of t: the honest client's node what it holds; a
\* Byzantine client everything sent to it or published.
ClientHas == IF ByzClient THEN reveals \cup ({published} \ {NoT}) ELSE cKnows

\* Nonce reuse: two pre-signatures of different states under one nonce
\* give away the provider's key (s1 - s2 = (e1 - e2) x).
KeyLeaked == BrokenNonceReuse /\ Cardinality(offered) >= 2

Init ==
    /\ byz \in {S \in SUBSET {"client", "provider"} : Cardinality(S) <= MaxByz}
    /\ now = 0
    /\ reqPrice = [k \in Req |-> 0]
    /\ cReq = 0
    /\ cPhase = "idle"
    /\ cSigned = {}
    /\ cKnows = {}
    /\ offered = {}
    /\ pPhase = "idle"
    /\ pReq = 0
    /\ pGotAt = 0
    /\ reveals = {}
    /\ cClose = {} /\ pClose = {}
    /\ cClosing = "no" /\ pClosing = "no"
    /\ chan = "open"
    /\ paidP = 0
    /\ paidC = 0
    /\ published = NoT
    /\ settled = [by |-> "none", k |-> 0]
    /\ payouts = 0

----------------------------------------------------------------------------
(* The ledger (honest): protocols/ledger/asc.c. *)

\* pay_out: the channel closes, the provider gets toP, the client the rest.
PayOut(toP, by, k) ==
    /\ chan' = "closed"
    /\ paidP' = toP
    /\ paidC' = Deposit - toP
    /\ settled' = [by |-> by, k |-> k]
    /\ payouts' = payouts + 1

\* asc.claim of m_k with the t field t, submitted by the provider
\* (final_execute, claim): open, before the expiry, the client's signature
\* of m_k (the provider's own it can always make: a plain signature with
\* its key does, no adapting needed), t.G = T_k (bad_secret otherwise);
\* the claim carries t.
Claim(k, t) ==
    /\ chan = "open"
    /\ now < Expiry
    /\ k \in cSigned
    /\ t = k \/ BrokenClaimNoSecret
    /\ PayOut(Price(k), "claim", k)
    /\ published' = t
    /\ UNCHANGED <<byz, now, clientVars, providerVars>>

\* asc.refund (submitted by the client): open, from the expiry on, the
\* whole deposit back.  Before the expiry the ledger refuses it (too_early):
\* nothing changes.
Refund ==
    /\ chan = "open"
    /\ now >= Expiry
    /\ PayOut(0, "refund", 0)
    /\ UNCHANGED <<byz, now, published, clientVars, providerVars>>

\* Who signed the CLOSED state paying the provider a: an honest side if it
\* ever did (cClose, pClose: a signature once out stays usable), a
\* Byzantine one always, and the provider's signature also when the
\* Byzantine client has its key (BrokenNonceReuse).
ClientSignedClose(a) == ByzClient \/ a \in cClose
ProviderSignedClose(a) == ByzProvider \/ a \in pClose \/ (ByzClient /\ KeyLeaked)

\* asc.close (final_execute, close): open, a CLOSED state signed by both
\* (no expiry check, and no check of its seq against anything).
Close(a) ==
    /\ chan = "open"
    /\ ClientSignedClose(a)
    /\ ProviderSignedClose(a)
    /\ PayOut(a, "close", 0)
    /\ UNCHANGED <<byz, now, published, clientVars, providerVars>>

\* The honest provider holds the client's signature of its state, taken at
\* a height with Delta to spare: its claim lands before the expiry.
ClaimLands ==
    /\ ~ByzProvider
    /\ chan = "open"
    /\ pPhase = "done"
    /\ pGotAt + Delta < Expiry

\* A height passes (transactions of others).  Not to the expiry while the
\* honest provider's claim is still to land (the synchrony assumption).
Tick ==
    /\ now < Expiry
    /\ ~(ClaimLands /\ now + 1 = Expiry)
    /\ now' = now + 1
    /\ UNCHANGED <<byz, clientVars, providerVars, ledgerVars>>

\* The CLOSING status an honest side gets from signing a close: asking
\* (cmd_close) persists it (save_meta) before the signature leaves, or,
\* as the C code did before (AskerClosingInMemory), keeps it in memory
\* only; answering (on_close_ask, the other side's signature of the same
\* state verified) persists it.
ClosingAfter(otherSigned) ==
    IF AskerClosingInMemory
    THEN {"mem"} \cup (IF otherSigned THEN {"disk"} ELSE {})
    ELSE {"disk"}

----------------------------------------------------------------------------
(* The honest client (protocols/channel/asc.c, the client's node). *)

\* cmd_request: a new request for the next seq, price <= its free balance,
\* only while the channel is ACTIVE (not CLOSING).
CRequest(p) ==
    /\ ~ByzClient
    /\ cPhase = "idle"
    /\ cClosing = "no"
    /\ cReq < MaxReq
    /\ chan = "open"
    /\ reqPrice' = [reqPrice EXCEPT ![cReq + 1] = p]
    /\ cReq' = cReq + 1
    /\ cPhase' = "requested"
    /\ UNCHANGED <<byz, now, cSigned, cKnows, cClose, cClosing, providerVars, ledgerVars>>

\* tick_one: a request with nothing signed is given up after
\* channel_pay_timeout_ms (it may ask again).
CGiveUp ==
    /\ ~ByzClient
    /\ cPhase = "requested"
    /\ cPhase' = "idle"
    /\ UNCHANGED <<byz, now, reqPrice, cReq, cSigned, cKnows, cClose, cClosing, providerVars, ledgerVars>>

\* on_offer: the offer of its current request (exactly the state paid the
\* price more, pre-signature verified), while ACTIVE: signs m_k, ACCEPT.
CAccept ==
    /\ ~ByzClient
    /\ cPhase = "requested"
    /\ cClosing = "no"
    /\ cReq \in offered
    /\ cSigned' = cSigned \cup {cReq}
    /\ cPhase' = "accepted"
    /\ UNCHANGED <<byz, now, reqPrice, cReq, cKnows, cClose, cClosing, providerVars, ledgerVars>>

\* on_reveal -> finish_with: t of the accepted round (t.G = T checked).
CReveal ==
    /\ ~ByzClient
    /\ cPhase = "accepted"
    /\ cReq \in reveals
    /\ cKnows' = cKnows \cup {cReq}
    /\ cPhase' = "done"
    /\ UNCHANGED <<byz, now, reqPrice, cReq, cSigned, cClose, cClosing, providerVars, ledgerVars>>

\* asc_on_ledger -> finish_with: an executed claim of the accepted round;
\* its t field is used if t.G = T.
CReadClaim ==
    /\ ~ByzClient
    /\ cPhase = "accepted"
    /\ settled = [by |-> "claim", k |-> cReq]
    /\ published = cReq
    /\ cKnows' = cKnows \cup {cReq}
    /\ cPhase' = "done"
    /\ UNCHANGED <<byz, now, reqPrice, cReq, cSigned, cClose, cClosing, providerVars, ledgerVars>>

\* tick_one: from the expiry on, the refund.
CRefund == ~ByzClient /\ Refund

\* cmd_close (ask: ACTIVE) or on_close_ask (answer the provider's signature
\* of the same state): with no round in progress (R_NONE), the CLOSED
\* state of its latest, which pays the provider the price only once the
\* client holds t (same_state refuses any other).
CSignClose ==
    LET a == IF cPhase = "done" THEN Price(cReq) ELSE 0
        answer == ProviderSignedClose(a)
    IN
    /\ ~ByzClient
    /\ chan = "open"
    /\ cPhase \in {"idle", "done"}
    /\ cClosing = "no" \/ answer
    /\ cClose' = cClose \cup {a}
    /\ cClosing' \in (IF cClosing = "disk" THEN {"disk"} ELSE ClosingAfter(answer))
    /\ UNCHANGED <<byz, now, reqPrice, cReq, cPhase, cSigned, cKnows, providerVars, ledgerVars>>

----------------------------------------------------------------------------
(* The Byzantine client. *)

BRequest(p) ==
    /\ ByzClient
    /\ cReq < MaxReq
    /\ reqPrice' = [reqPrice EXCEPT ![cReq + 1] = p]
    /\ cReq' = cReq + 1
    /\ UNCHANGED <<byz, now, cPhase, cSigned, cKnows, cClose, cClosing, providerVars, ledgerVars>>

BSign(k) ==
    /\ ByzClient
    /\ k \in offered \ cSigned
    /\ cSigned' = cSigned \cup {k}
    /\ UNCHANGED <<byz, now, reqPrice, cReq, cPhase, cKnows, cClose, cClosing, providerVars, ledgerVars>>

BRefund == ByzClient /\ Refund

----------------------------------------------------------------------------
(* The honest provider (protocols/channel/asc.c, the provider's node). *)

\* on_request + respond: the newest request (links are ordered: an older one
\* never arrives after it; a new request of the same seq replaces a round
\* nothing of which is signed), while ACTIVE ("not_open" otherwise),
\* unless it is expiring: t_k, OFFER.
PRequest ==
    /\ ~ByzProvider
    /\ pPhase \in {"idle", "offered"}
    /\ pClosing = "no"
    /\ cReq > pReq
    /\ chan = "open"
    /\ now + Delta < Expiry
    /\ offered' = offered \cup {cReq}
    /\ pReq' = cReq
    /\ pPhase' = "offered"
    /\ UNCHANGED <<byz, now, pGotAt, reveals, pClose, pClosing, clientVars, ledgerVars>>

\* on_accept: the client's signature of its offered state: adapts, the
\* round is done (it can claim), REVEAL t.  "checked": only while ACTIVE
\* (the ledger's channel open, and no close signed) with Delta to spare.
PAccept ==
    /\ ~ByzProvider
    /\ pPhase = "offered"
    /\ pReq \in cSigned
    /\ AcceptRule = "as_coded" \/ (chan = "open" /\ pClosing = "no" /\ now + Delta < Expiry)
    /\ pPhase' = "done"
    /\ pGotAt' = now
    /\ reveals' = reveals \cup {pReq}
    /\ UNCHANGED <<byz, now, offered, pReq, pClose, pClosing, clientVars, ledgerVars>>

\* tick_one: the claim of its latest paid state, with its t.
PClaim ==
    /\ ~ByzProvider
    /\ pPhase = "done"
    /\ Claim(pReq, pReq)

\* cmd_close or on_close_ask, as CSignClose: with no round in progress
\* (R_NONE: nothing offered yet, or the round done), the CLOSED state of
\* its latest (paying 0, or the price once it holds the signature).
PSignClose ==
    LET a == IF pPhase = "done" THEN Price(pReq) ELSE 0
        answer == ClientSignedClose(a)
    IN
    /\ ~ByzProvider
    /\ chan = "open"
    /\ pPhase \in {"idle", "done"}
    /\ pClosing = "no" \/ answer
    /\ pClose' = pClose \cup {a}
    /\ pClosing' \in (IF pClosing = "disk" THEN {"disk"} ELSE ClosingAfter(answer))
    /\ UNCHANGED <<byz, now, offered, pPhase, pReq, pGotAt, reveals, clientVars, ledgerVars>>

\* A restart of an honest node (asc_restore): what it persisted is back,
\* a CLOSING kept in memory only is lost (the channel is ACTIVE again);
\* its close signature, already sent, is not.
CRestart ==
    /\ ~ByzClient
    /\ cClosing = "mem"
    /\ cClosing' = "no"
    /\ UNCHANGED <<byz, now, reqPrice, cReq, cPhase, cSigned, cKnows, cClose, providerVars, ledgerVars>>
PRestart ==
    /\ ~ByzProvider
    /\ pClosing = "mem"
    /\ pClosing' = "no"
    /\ UNCHANGED <<byz, now, offered, pPhase, pReq, pGotAt, reveals, pClose, clientVars, ledgerVars>>

----------------------------------------------------------------------------
(* The Byzantine provider. *)

BOffer(k) ==
    /\ ByzProvider
    /\ k \in 1..cReq
    /\ offered' = offered \cup {k}
    /\ UNCHANGED <<byz, now, pPhase, pReq, pGotAt, reveals, pClose, pClosing, clientVars, ledgerVars>>

BReveal(k) ==
    /\ ByzProvider
    /\ k \in offered
    /\ reveals' = reveals \cup {k}
    /\ UNCHANGED <<byz, now, offered, pPhase, pReq, pGotAt, pClose, pClosing, clientVars, ledgerVars>>

\* Any claim, with t or without; the ledger refuses one without the
\* client's signature or (unless broken) without t.
BClaim(k, t) ==
    /\ ByzProvider
    /\ Claim(k, t)

----------------------------------------------------------------------------

Next ==
    \/ Tick
    \/ CRefund \/ BRefund
    \/ \E a \in 0..Deposit : Close(a)
    \/ \E p \in Prices : CRequest(p) \/ BRequest(p)
    \/ CGiveUp \/ CAccept \/ CReveal \/ CReadClaim \/ CSignClose \/ CRestart
    \/ \E k \in Req : BSign(k) \/ BOffer(k) \/ BReveal(k) \/ \E t \in {NoT, k} : BClaim(k, t)
    \/ PRequest \/ PAccept \/ PClaim \/ PSignClose \/ PRestart

Spec == Init /\ [][Next]_vars

\* Weak fairness of every honest step (an honest action is never enabled
\* when its party is Byzantine, so its WF is then trivially true) and of
\* the clock.  Requests, giving up, close signatures, closes and restarts
\* are choices: not forced.
Fairness ==
    /\ WF_vars(Tick)
    /\ WF_vars(CAccept) /\ WF_vars(CReveal) /\ WF_vars(CReadClaim) /\ WF_vars(CRefund)
    /\ WF_vars(PRequest) /\ WF_vars(PAccept) /\ WF_vars(PClaim)

FairSpec == Spec /\ Fairness

----------------------------------------------------------------------------
(* Safety. *)

Locked == IF chan = "open" THEN Deposit ELSE 0

\* Nothing is created or lost: paid out + locked = the deposit.
Conservation ==
    /\ paidP + paidC + Locked = Deposit
    /\ (chan = "open") = (payouts = 0)

\* A claim pays only a state the client signed.
NoClaimWithoutSig ==
    settled.by = "claim" => settled.k \in cSigned

\* The ledger pays the channel out once; the honest client signs one state
\* in the round and pays exactly its price or nothing.
ClientPaysOnlyOnce ==
    /\ payouts <= 1
    /\ ~ByzClient =>
         /\ Cardinality(cSigned) <= 1
         /\ paidP = 0 \/ \E k \in cSigned : paidP = Price(k)

\* Payment => t public: the provider is paid only for a state whose t the
\* honest client holds or the ledger published in the claim that paid it.
PaidOnlyIfTPublic ==
    ~ByzClient =>
        (paidP > 0 =>
            \E k \in cSigned :
                /\ paidP <= Price(k)
                /\ \/ k \in cKnows
                   \/ settled = [by |-> "claim", k |-> k] /\ published = k)

\* t => the client signed (the converse): the client, honest or not, gets
\* a t only once it signed the state that pays for it.
TOnlyIfSigned ==
    ClientHas \subseteq cSigned

\* The honest provider never loses a result: once a t of its is out
\* (revealed, or known to the client), a paid-out channel paid its price.
ProviderNoLoss ==
    ~ByzProvider =>
        \A k \in reveals \cup ClientHas :
            chan = "closed" => paidP >= Price(k)

\* The same, before the pay-out: once a t of its is out, the honest
\* provider is paid, or holds the client's signature of that state in time
\* to claim it (ClaimLands).
PaidOrClaimable ==
    ~ByzProvider =>
        \A k \in reveals \cup ClientHas :
            IF chan = "open" THEN ClaimLands /\ pReq = k ELSE paidP >= Price(k)

----------------------------------------------------------------------------
(* Liveness (under FairSpec). *)

\* An honest provider that took the client's signature in time is paid
\* its price (claim, or a cooperative close).
ProviderPaid ==
    ClaimLands ~> (chan = "closed" /\ paidP = Price(pReq))

\* Payment => the honest client eventually holds t (from a REVEAL or read
\* from the claim).
ClientLearnsT ==
    (~ByzClient /\ paidP > 0) ~> (cSigned \subseteq cKnows)

\* An honest client that signed gets the result or its whole deposit back.
ClientResultOrRefund ==
    (~ByzClient /\ cPhase = "accepted") ~> (cPhase = "done" \/ (chan = "closed" /\ paidP = 0))

\* Both honest: a signature the provider takes in time completes the round
\* on both sides.
RoundCompletes ==
    (~ByzClient /\ ClaimLands) ~> (cPhase = "done" /\ chan = "closed" /\ paidP = Price(cReq))
=============================================================================
