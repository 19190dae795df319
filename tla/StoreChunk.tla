----------------------------- MODULE StoreChunk -----------------------------
(***************************************************************************)
(* The storage service of weft (protocols/store: store.c, audit.c,         *)
(* adversary.c; docs/protocols/store.md, docs/storage.md) for ONE chunk:   *)
(* placement of its n coded shares (PUT / ACK), the holders' checks,       *)
(* retrieval, storage proofs, audits and repair, and, in the drop models,  *)
(* a second file that shares the chunk, the drop of the first and GC.      *)
(*                                                                         *)
(* THE CHUNK.  Its blob is coded into n shares, one per node, any K of     *)
(* which rebuild it (weft_rs_encode; share j lives on node (CID + j) mod   *)
(* n: a bijection, so a node IS its share index here).  Values are         *)
(* abstracted to what the checks can tell apart (hashes do not collide):   *)
(*   records  "R"  the placer's record [tag, k, n, len, r_0..r_n-1], whose *)
(*                 SR the manifest carries: the coding of the blob;        *)
(*            "X"  any other record for the same CID (another k, other     *)
(*                 roots): made by a Byzantine node (FakeRecords), or by   *)
(*                 a rebuild that decoded junk (the RebuildUnverified      *)
(*                 teeth);                                                 *)
(*   bytes    "R" / "X"  the bytes whose Merkle root is that record's r_i  *)
(*                 for this node's index; "J" bytes whose root is in no    *)
(*                 record (junk).                                          *)
(* A share check (on_put, on_share, send_share, store_on_chal) compares    *)
(* the bytes' root with a record's r_j: bytes b match record r iff b = r.  *)
(* K valid "R" shares decode to the blob, so a reader that takes only      *)
(* shares checked against SR returns the placer's blob; the daemon's       *)
(* check of the blob against the CID is not needed for that here.          *)
(*                                                                         *)
(* Faults.  byz (chosen in Init among ByzSets, the models use AllByzSets:  *)
(* every set of F nodes, with or without the placer) may: acknowledge a    *)
(* PUT without storing (RecvAck from byz), keep or drop its share (bk),    *)
(* serve junk (refused by every check), answer a challenge with a proof    *)
(* only when it can produce its share (it kept it, or K valid shares are   *)
(* there to rebuild it from: docs/protocols/store.md, "What a proof        *)
(* shows"), or with a signed junk proof, or not at all; send any holder a  *)
(* PUT (with or without the repair flag) carrying the real record with     *)
(* junk bytes, or -- with FakeRecords -- a consistent record "X" of its    *)
(* own; a Byzantine placer sends whatever PUTs it likes.  Honest nodes may *)
(* crash and recover (Crashes): durable are the share store (shares and    *)
(* references, committed first) and kv (records), in that order: the host  *)
(* commits the share store's step, then the kv transaction, then lets the  *)
(* step's messages go (host.c flush), so a crash may fall between the two  *)
(* commits (torn receipts: the share kept, the record and the ACK not).    *)
(* Lost: the placement (struct place), convictions (s->convicted), fetches *)
(* in flight.  An honest node may lose its disk (Wipe, at most MaxWipes    *)
(* times; those count as faults: see the ASSUME).                          *)
(*                                                                         *)
(* ACTIONS -> C.                                                           *)
(*   Put(t)       the daemon's store.place of the chunk for file t (tag t) *)
(*                (storage.c put_place_batch -> cmd_place): with a record  *)
(*                of the CID already kept here, "deduplicated": ref under  *)
(*                t, done (DedupOnRecord: the C code); else                *)
(*                store_start_place: keep_share of the own share, PUT to   *)
(*                every other holder.  A file is put again (Retry) after   *)
(*                its put failed ("put the file again to resume": journal  *)
(*                resume; the same CID in convergent mode).                *)
(*   RecvPut      on_put of the placer's PUT at holder h: record check     *)
(*                (same_coding), root check, keep_share (ref, share put,   *)
(*                record_put), ACK; with torn, a crash between the share   *)
(*                store's commit and kv's.                                 *)
(*   RecvAck      on_ack -> place_check_done: done at max(store_ack, k)    *)
(*                acknowledgements, the own share counted.                 *)
(*   Fail         resend_places after MAX_TRIES, or the job giving up.     *)
(*   ByzPut       a Byzantine node's PUT, received by on_put.              *)
(*   Audit        challenge (audit_pick, store_audit_now / repair_record)  *)
(*                answered by store_on_chal (PROOF under its own record,   *)
(*                NOPROOF without a record or share, a damaged share       *)
(*                dropped first), checked by store_on_proof /              *)
(*                store_on_noproof, settle(): a failed proof convicts, a   *)
(*                NOPROOF starts store_rebuild: a fetch with the auditor's *)
(*                record, K good shares, decode, store_code, same_coding,  *)
(*                store_start_place with the repair flag to the holder.    *)
(*                The rebuild's fetch is taken at one instant (below).     *)
(*   RecvRepair   on_put of a repair PUT (replaces other bytes).           *)
(*   AuditByz     an audit of a Byzantine holder that answers a junk proof *)
(*                (only a state change when the check is broken).          *)
(*   ReadWrong    a read (cmd_fetch: fetch_own, fetch_more, on_share,      *)
(*                fetch_finish) that decodes a share that is not the       *)
(*                placer's: possible only with the trust_shares teeth.     *)
(*   DropFile, RecvDrop, GC   cmd_drop / on_drop -> apply_drop (unref of   *)
(*                the file's tag on every node), the chunk store's GC      *)
(*                (weft_store_gc_step: a CID no file references loses its  *)
(*                shares; the record "R" cid in kv stays).                 *)
(*                                                                         *)
(* Abstracted (tla/README.md, "StoreChunk", has the argument for each):    *)
(* bytes, hashes, signatures (unforgeable: an honest node's PROOF,         *)
(* NOPROOF, ACK and DROP cannot be made by others); the block index and    *)
(* Merkle path of a proof (a proof passes iff the prover's record is the   *)
(* auditor's and it holds the share); time (timeouts, grace period,        *)
(* REPAIR_PACE_US, FORGET_US, rate limits: a timeout is always possible,   *)
(* and is a no-op or Fail); message loss (never receiving); the order in   *)
(* which a fetch asks holders (it ends when K good shares came or all      *)
(* answered: the same outcomes whatever the order); manifests (the         *)
(* manifest carries SR = record "R").                                      *)
(*                                                                         *)
(* FINDINGS (the C code fails these; tla/README.md, "StoreChunk", has the  *)
(* traces and the C lines):                                                *)
(*   1. cmd_place counts a chunk placed when this node keeps a record of   *)
(*      it, and records are kept at the start of a placement and outlive   *)
(*      GC: a put resumed after a failed placement, or a put after the     *)
(*      chunk was dropped and collected, is done with at most one share    *)
(*      (StoreFindDedupRetry, StoreFindDedupDrop: Durability).             *)
(*   2. The first record a holder sees wins, from anyone: a Byzantine      *)
(*      node's record makes honest holders refuse the placer's PUTs, and   *)
(*      honest auditors convict honest holders (StoreFindFakeRecord:       *)
(*      HonestNeverConvicted; StoreFindFakeRecordLive:                     *)
(*      PlaceDoneAtQuiescence).                                            *)
(*   3. on_put acknowledges a share the share store holds other bytes of   *)
(*      (EEXIST without the repair flag), without keeping it or a record   *)
(*      (StoreFindEexistAck: Durability).                                  *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Node,         \* the committee (model values); N = |Node|
    F,            \* the fault bound (env->f)
    K,            \* the chunk's k (store_k: f + 1 by default; a put's k)
    Placer,       \* the node whose daemon puts the file(s), in Node
    Nil,          \* "none", a model value
    ByzSets,      \* the sets byz is chosen from (AllByzSets)
    Crashes,      \* TRUE: honest nodes crash and recover (torn steps too)
    Audits,       \* TRUE: scheduled audits (store_audit_ms > 0) and repair
    MaxWipes,     \* how many times honest nodes may lose their disk
    Retry,        \* TRUE: the daemon puts a failed file again
    FakeRecords,  \* TRUE: Byzantine nodes PUT records of their own ("X")
    Drops         \* TRUE: file t2 shares the chunk; t1 is dropped; GC

N == Cardinality(Node)

(* Every set of exactly F nodes, the placer's included.                    *)
AllByzSets == {B \in SUBSET Node : Cardinality(B) = F}
(* The same without the placer (the finding models: an honest placer's     *)
(* file is the one hurt).                                                  *)
NonPlacerByzSets == {B \in AllByzSets : Placer \notin B}

(* store_ack (s->need, default n - f) and the teeth's values.              *)
Need == N - F
NeedTooLow == N - 2 * F       \* an acknowledgement quorum of n - 2f
NeedAll == N                  \* wait for every holder
(* place_check_done: "fewer than k holders could not rebuild it".          *)
Quorum == IF Need > K THEN Need ELSE K
(* cmd_place takes any k <= n (docs/storage.md: durable when               *)
(* k <= n - 2f); the teeth takes the smallest k beyond that.               *)
KTooLarge == N - 2 * F + 1

(* Wipes are faults: with w of them the margin n - 2f - k must cover       *)
(* them (docs/protocols/store.md, "Durability"; docs/storage.md's          *)
(* table).  Teeth models override K or Need, so the check is on the        *)
(* defaults.                                                               *)
ASSUME /\ F \in Nat /\ N >= 3 * F + 1
       /\ K \in 1..N
       /\ Placer \in Node
       /\ Nil \notin {"R", "X", "J"}
       /\ \A B \in ByzSets : B \subseteq Node /\ Cardinality(B) <= F
       /\ MaxWipes \in Nat
       /\ MaxWipes = 0 \/ MaxWipes + K + 2 * F <= N
       /\ {Crashes, Audits, Retry, FakeRecords, Drops} \subseteq BOOLEAN

(***************************************************************************)
(* Switches: the spec's defaults are the C code; a teeth model overrides   *)
(* one with the broken value, a fix model with the fixed one.              *)
(***************************************************************************)
(* on_put: weft_merkle_root(data) == rec.roots[j].                         *)
PutChecksRoot == TRUE
NoPutRootCheck == FALSE
(* on_share: the record's SR is the manifest's, the bytes' root r_j        *)
(* (TrustShares: params.store_unsafe = "trust_shares").                    *)
ReaderChecksRoot == TRUE
TrustShares == FALSE
(* store_on_proof: root, index and Merkle path checked against the         *)
(* auditor's record.                                                       *)
ProofChecked == TRUE
ProofUnchecked == FALSE
(* store_on_noproof: a signed admission, settled as missing (not           *)
(* evidence).                                                              *)
NoproofConvicts == FALSE
NoproofEvidence == TRUE
(* settle(missing) -> store_rebuild.                                       *)
SettleRebuilds == TRUE
SettleIgnores == FALSE
(* The rebuild takes only shares that match the auditor's record           *)
(* (on_share with roots known), and fetch_finish compares the recoded      *)
(* roots with the record (same_coding).  RebuildUnverified: neither.       *)
RebuildVerified == TRUE
RebuildUnverified == FALSE
(* on_put answers WEFT_EEXIST when the share store holds other bytes (the  *)
(* C code, since finding 3).  EexistAckedBefore: it acknowledged (ACK 0),  *)
(* as the C code did ("if (rc == WEFT_EEXIST && !repair) rc = 0").         *)
EexistAcked == FALSE
EexistAckedBefore == TRUE
(* cmd_place always places (PUTs to every holder, which answer a share   *)
(* they hold with an ACK at once): the C code since finding 1's fix.      *)
(* DedupOnRecordBefore: a record of the CID held here means "placed", the *)
(* C code before.                                                          *)
DedupOnRecord == FALSE
DedupOnRecordBefore == TRUE
(* ACK [cid, j, code, tag] names the file: on_ack counts it only for the   *)
(* placement of the file whose PUT it answers (the C code since the fix).  *)
(* AckUntagged: ACK [cid, j, code], counted for any file's placement of    *)
(* the chunk (the C code before).                                          *)
AckNamesFile == TRUE
AckUntagged == FALSE

Tags == {"t1", "t2"}     \* t1 is put first; t2 (Drops) shares the chunk
Recs == {"R", "X"}
Bytes == {"R", "X", "J"}

VARIABLES
    byz,     \* the Byzantine nodes (chosen in Init, constant afterwards)
    rec,     \* rec[i]: the record i keeps in kv ("R" cid): "R", "X", Nil
    sh,      \* sh[i]: the bytes of i's share in its share store, or Nil
    refs,    \* refs[i]: the tags i references the chunk under (Drops)
    up,      \* up[i]: FALSE while i is crashed
    pst,     \* the placer's placement (struct place): "idle", "pending"
    ptag,    \* the file whose placement is (or was last) pending
    acked,   \* the placement's acked set (memory)
    sent,    \* the files whose PUTs the honest placer sent (in flight)
    ackd,    \* <<h, t>>: honest h answered ACK 0 to a PUT of file t
    tried,   \* the files the daemon began to put
    fdone,   \* the files whose put finished (journal: the chunk placed)
    fdrop,   \* the owner dropped file t1
    dap,     \* the nodes that applied the drop
    rep,     \* rep[h]: the records of repair PUTs in flight to h
    conv,    \* <<a, h>>: honest a convicted honest h (memory)
    hollow,  \* an audit passed a holder that could not produce its share
    bk,      \* the Byzantine nodes that kept their share
    wrong,   \* a read decoded a blob other than the placer's
    nw       \* wipes so far

vars == <<byz, rec, sh, refs, up, pst, ptag, acked, sent, ackd, tried, fdone,
          fdrop, dap, rep, conv, hollow, bk, wrong, nw>>

Honest == Node \ byz
HonestPlacer == Placer \notin byz

TypeOK ==
    /\ byz \in ByzSets
    /\ rec \in [Node -> Recs \cup {Nil}]
    /\ sh \in [Node -> Bytes \cup {Nil}]
    /\ refs \in [Node -> SUBSET Tags]
    /\ up \in [Node -> BOOLEAN]
    /\ pst \in {"idle", "pending"}
    /\ ptag \in Tags
    /\ acked \subseteq Node
    /\ sent \subseteq Tags
    /\ ackd \subseteq Node \X Tags
    /\ tried \subseteq Tags /\ fdone \subseteq Tags
    /\ fdrop \in BOOLEAN /\ dap \subseteq Node
    /\ rep \in [Node -> SUBSET Recs]
    /\ conv \subseteq Node \X Node
    /\ hollow \in BOOLEAN /\ wrong \in BOOLEAN
    /\ bk \subseteq Node
    /\ nw \in 0..MaxWipes

Init ==
    /\ byz \in ByzSets
    /\ rec = [i \in Node |-> Nil]
    /\ sh = [i \in Node |-> Nil]
    /\ refs = [i \in Node |-> {}]
    /\ up = [i \in Node |-> TRUE]
    /\ pst = "idle"
    /\ ptag = "t1"
    /\ acked = {}
    /\ sent = {}
    /\ ackd = {}
    /\ tried = {}
    /\ fdone = {}
    /\ fdrop = FALSE
    /\ dap = {}
    /\ rep = [i \in Node |-> {}]
    /\ conv = {}
    /\ hollow = FALSE
    /\ bk = {}
    /\ wrong = FALSE
    /\ nw = 0

(* Holder i keeps a share a reader (or a rebuild) takes: the manifest's    *)
(* record and the bytes it names.                                          *)
Valid(i) == rec[i] = "R" /\ sh[i] = "R"
ValidUp == {i \in Honest : up[i] /\ Valid(i)}

(* The files that must stay readable: put, and not dropped.                *)
Live == fdone \ (IF fdrop THEN {"t1"} ELSE {})

(* A Byzantine node learns the CID and the record from its own PUT.        *)
KnowsCid(b) == b = Placer \/ sent # {}
(* It can produce its share of record "R" if it is the placer, kept it,    *)
(* or can rebuild it from K good shares (a holder may fetch instead of     *)
(* store: docs/protocols/store.md, "What a proof shows").  A record "X"    *)
(* is its own making.                                                      *)
ByzServes(b, r) ==
    IF r = "R" THEN b = Placer \/ b \in bk \/ Cardinality(ValidUp) >= K
    ELSE FakeRecords /\ KnowsCid(b)

(***************************************************************************)
(* on_put at honest h of a PUT [record r, bytes b, tag t, repair rp]:      *)
(* refused unless the bytes' root is r's r_h (PutChecksRoot) and h keeps   *)
(* no other record (same_coding: "a chunk keeps the coding it was first    *)
(* placed with"); then keep_share: ref under t, the share store's put      *)
(* (a new share, the same bytes again, or -- with the repair flag --       *)
(* other bytes replaced; other bytes without it: WEFT_EEXIST), and         *)
(* record_put only if the put succeeded.  ACK 0 if the put succeeded, or   *)
(* on EEXIST without the repair flag (EexistAcked).                        *)
(***************************************************************************)
PutOK(h, r, b) == (b = r \/ ~PutChecksRoot) /\ rec[h] \in {Nil, r}
Stores(h, b, rp) == sh[h] = Nil \/ sh[h] = b \/ rp
Keeps(h, r, b, rp) == PutOK(h, r, b) /\ Stores(h, b, rp)
AckZero(h, r, b, rp) == PutOK(h, r, b) /\ (Stores(h, b, rp) \/ EexistAcked)

(* The memory a crash (or a wipe, a torn step) loses.                      *)
LoseMemory(h) ==
    /\ pst' = IF h = Placer THEN "idle" ELSE pst
    /\ acked' = IF h = Placer THEN {} ELSE acked
    /\ conv' = {c \in conv : c[1] # h}

(* The receipt itself; torn: the host crashed after the share store's      *)
(* commit, before kv's (record) and before the ACK left.                   *)
Receive(h, r, b, t, rp, fromPlacer, torn) ==
    /\ h \in Honest /\ up[h]
    /\ sh' = [sh EXCEPT ![h] = IF Keeps(h, r, b, rp) THEN b ELSE @]
    /\ refs' = IF Drops /\ PutOK(h, r, b)
                 THEN [refs EXCEPT ![h] = @ \cup {t}] ELSE refs
    /\ IF torn
         THEN /\ Crashes
              /\ <<sh', refs'>> # <<sh, refs>>
              /\ up' = [up EXCEPT ![h] = FALSE]
              /\ LoseMemory(h)
              /\ UNCHANGED <<rec, ackd>>
         ELSE /\ rec' = [rec EXCEPT ![h] = IF Keeps(h, r, b, rp) THEN r ELSE @]
              /\ ackd' = IF fromPlacer /\ AckZero(h, r, b, rp)
                           THEN ackd \cup {<<h, t>>} ELSE ackd
              /\ UNCHANGED <<up, pst, acked, conv>>

(* Placement done (place_check_done): the daemon polls it and journals     *)
(* the chunk (put_poll); the placement is forgotten.                       *)
AfterAck(a) ==
    IF Cardinality(a) >= Quorum
      THEN /\ pst' = "idle" /\ acked' = {}
           /\ fdone' = fdone \cup {ptag}
      ELSE /\ pst' = "pending" /\ acked' = a
           /\ UNCHANGED fdone

(***************************************************************************)
(* The daemon puts file t (t2 only in the drop models, after t1 is done):  *)
(* cmd_place.  With DedupOnRecord, a record of the CID kept here (its own  *)
(* share's, from any earlier placement, finished or not) makes it a        *)
(* dedup: ref under t here, done.  Otherwise store_start_place: the own    *)
(* share and record (keep_share; other bytes in the share store fail the   *)
(* command), PUT [record with tag t] to every other holder.                *)
(***************************************************************************)
Put(t) ==
    /\ HonestPlacer /\ up[Placer] /\ pst = "idle"
    /\ t \notin fdone
    /\ t = "t1" \/ (Drops /\ "t1" \in fdone)
    /\ t \notin tried \/ Retry
    /\ tried' = tried \cup {t}
    /\ IF DedupOnRecord /\ rec[Placer] # Nil
         THEN /\ refs' = IF Drops THEN [refs EXCEPT ![Placer] = @ \cup {t}]
                                  ELSE refs
              /\ fdone' = fdone \cup {t}
              /\ UNCHANGED <<rec, sh, pst, ptag, acked, sent>>
         ELSE /\ sh[Placer] \in {Nil, "R"}
              /\ sh' = [sh EXCEPT ![Placer] = "R"]
              /\ rec' = [rec EXCEPT ![Placer] = "R"]
              /\ refs' = IF Drops THEN [refs EXCEPT ![Placer] = @ \cup {t}]
                                  ELSE refs
              /\ sent' = sent \cup {t}
              /\ ptag' = t
              /\ AfterAck({Placer})
    /\ UNCHANGED <<byz, up, ackd, fdrop, dap, rep, conv, hollow, bk, wrong, nw>>

(* The command's step torn (Crashes): the own share kept, the record not,  *)
(* no PUT left (they are held until kv commits), the job gone.             *)
PutTorn(t) ==
    /\ Crashes /\ HonestPlacer /\ up[Placer] /\ pst = "idle"
    /\ t \notin fdone
    /\ t = "t1" \/ (Drops /\ "t1" \in fdone)
    /\ t \notin tried \/ Retry
    /\ ~(DedupOnRecord /\ rec[Placer] # Nil)
    /\ sh[Placer] = Nil
    /\ tried' = tried \cup {t}
    /\ sh' = [sh EXCEPT ![Placer] = "R"]
    /\ refs' = IF Drops THEN [refs EXCEPT ![Placer] = @ \cup {t}] ELSE refs
    /\ up' = [up EXCEPT ![Placer] = FALSE]
    /\ LoseMemory(Placer)
    /\ UNCHANGED <<byz, rec, ptag, sent, ackd, fdone, fdrop, dap, rep, hollow,
                   bk, wrong, nw>>

(* on_put of the honest placer's PUT for file t (sent once, resent while   *)
(* pending; one in flight may arrive late, or never).                      *)
RecvPut(h, t, torn) ==
    /\ h # Placer /\ t \in sent
    /\ Receive(h, "R", "R", t, FALSE, TRUE, torn)
    /\ UNCHANGED <<byz, ptag, sent, tried, fdone, fdrop, dap, rep, hollow,
                   bk, wrong, nw>>
    /\ vars' # vars

(* on_ack: an ACK 0 from the holder of the index (its own), in targets.    *)
(* The ACK names the CID and index, not the file: any earlier ACK of this  *)
(* holder counts (with AckTagged, only one that answered this file).       *)
(* A Byzantine holder acknowledges whatever it did.                        *)
AckAvail(h) ==
    IF AckNamesFile THEN <<h, ptag>> \in ackd
                    ELSE \E t \in Tags : <<h, t>> \in ackd
RecvAck(h) ==
    /\ pst = "pending" /\ up[Placer]
    /\ h # Placer /\ h \notin acked
    /\ h \in byz \/ AckAvail(h)
    /\ AfterAck(acked \cup {h})
    /\ UNCHANGED <<byz, rec, sh, refs, up, ptag, sent, ackd, tried, fdrop,
                   dap, rep, conv, hollow, bk, wrong, nw>>

(* resend_places: MAX_TRIES without the quorum; or the job gave up.        *)
Fail ==
    /\ pst = "pending"
    /\ pst' = "idle" /\ acked' = {}
    /\ UNCHANGED <<byz, rec, sh, refs, up, ptag, sent, ackd, tried, fdone,
                   fdrop, dap, rep, conv, hollow, bk, wrong, nw>>

Crash(h) ==
    /\ Crashes /\ h \in Honest /\ up[h]
    /\ up' = [up EXCEPT ![h] = FALSE]
    /\ LoseMemory(h)
    /\ UNCHANGED <<byz, rec, sh, refs, ptag, sent, ackd, tried, fdone, fdrop,
                   dap, rep, hollow, bk, wrong, nw>>

Recover(h) ==
    /\ h \in Honest /\ ~up[h]
    /\ up' = [up EXCEPT ![h] = TRUE]
    /\ UNCHANGED <<byz, rec, sh, refs, pst, ptag, acked, sent, ackd, tried,
                   fdone, fdrop, dap, rep, conv, hollow, bk, wrong, nw>>

(* An honest node comes back with an empty disk: no share, no reference,   *)
(* no record (weft-sim "lose": "store").                                   *)
Wipe(h) ==
    /\ nw < MaxWipes /\ h \in Honest /\ up[h]
    /\ rec[h] # Nil \/ sh[h] # Nil
    /\ rec' = [rec EXCEPT ![h] = Nil]
    /\ sh' = [sh EXCEPT ![h] = Nil]
    /\ refs' = [refs EXCEPT ![h] = {}]
    /\ nw' = nw + 1
    /\ LoseMemory(h)
    /\ UNCHANGED <<byz, up, ptag, sent, ackd, tried, fdone, fdrop, dap, rep,
                   hollow, bk, wrong>>

(***************************************************************************)
(* A Byzantine node's PUT to honest h (on_put does not ask who sends):     *)
(* the placer's record with junk bytes (refused unless the root check is   *)
(* broken); a Byzantine placer's genuine share; with FakeRecords a         *)
(* record "X" of its own with bytes that match it.  Any repair flag; a     *)
(* receipt may be torn.  A Byzantine non-placer sending the genuine share  *)
(* of another holder (after rebuilding the blob) is left out: it is what   *)
(* RecvPut does, minus the ACK.                                            *)
(***************************************************************************)
ByzPut(b, h, r, bb, rp, torn) ==
    /\ b \in byz /\ h # b /\ KnowsCid(b)
    /\ \/ r = "R" /\ bb = "R" /\ b = Placer
       \/ r = "R" /\ bb = "J"
       \/ FakeRecords /\ r = "X" /\ bb = "X"
    /\ Receive(h, r, bb, "t1", rp, FALSE, torn)
    /\ UNCHANGED <<byz, ptag, sent, tried, fdone, fdrop, dap, rep, hollow,
                   bk, wrong, nw>>
    /\ vars' # vars

(* A Byzantine holder keeps its share, or drops it.                        *)
ByzKeep(b) ==
    /\ Audits /\ b \in byz /\ b # Placer /\ sent # {} /\ b \notin bk
    /\ bk' = bk \cup {b}
    /\ UNCHANGED <<byz, rec, sh, refs, up, pst, ptag, acked, sent, ackd, tried,
                   fdone, fdrop, dap, rep, conv, hollow, wrong, nw>>
ByzDrop(b) ==
    /\ b \in bk
    /\ bk' = bk \ {b}
    /\ UNCHANGED <<byz, rec, sh, refs, up, pst, ptag, acked, sent, ackd, tried,
                   fdone, fdrop, dap, rep, conv, hollow, wrong, nw>>

(***************************************************************************)
(* Audits.  Honest a, holding a record, challenges honest h (a random      *)
(* other holder not convicted by a).  store_on_chal at h: without a        *)
(* record or a share, NOPROOF; a share that does not match h's record is   *)
(* dropped, NOPROOF; else a PROOF under h's record, which a's checks pass  *)
(* iff it is a's record (root, index and block count come from a's         *)
(* record: another k or other roots fail).  A failed proof: evidence,      *)
(* a convicts h.  NOPROOF: settle(missing) -> store_rebuild: a fetch with  *)
(* a's record (its own share first, then the other holders; a share        *)
(* counts only if it matches a's record), decode, store_code,              *)
(* same_coding, then a repair PUT to h.  The fetch is taken at one         *)
(* instant: Servers are the holders that serve a matching share now        *)
(* (helped: with the Byzantine nodes that choose to serve one).  A         *)
(* rebuild that fails changes nothing (rebuilds_failed), so it is no       *)
(* step.  A timeout (h down) changes nothing either.                       *)
(***************************************************************************)
Noproof(h) == rec[h] = Nil \/ sh[h] # rec[h]
Damaged(h) == rec[h] # Nil /\ sh[h] \notin {Nil, rec[h]}
Servers(r, helped) ==
    {i \in Honest : up[i] /\ rec[i] = r /\ sh[i] = r}
    \cup (IF helped THEN {b \in byz : ByzServes(b, r)} ELSE {})
(* What a rebuild by a can place.  RebuildUnverified: Byzantine junk is    *)
(* taken among the K, decodes to another blob, and its coding ("X") is     *)
(* placed.                                                                 *)
RebuildRecs(a, helped) ==
    (IF Cardinality(Servers(rec[a], helped)) >= K THEN {rec[a]} ELSE {})
    \cup (IF /\ ~RebuildVerified /\ helped /\ byz # {}
             /\ Cardinality(Servers(rec[a], FALSE)) + Cardinality(byz) >= K
            THEN {"X"} ELSE {})

Audit(a, h, helped) ==
    /\ Audits
    /\ a \in Honest /\ h \in Honest /\ a # h
    /\ up[a] /\ up[h] /\ rec[a] # Nil
    /\ <<a, h>> \notin conv
    /\ IF Noproof(h)
         THEN /\ sh' = IF Damaged(h) THEN [sh EXCEPT ![h] = Nil] ELSE sh
              /\ conv' = IF NoproofConvicts THEN conv \cup {<<a, h>>} ELSE conv
              /\ IF SettleRebuilds /\ RebuildRecs(a, helped) # {}
                   THEN \E r \in RebuildRecs(a, helped) :
                          rep' = [rep EXCEPT ![h] = @ \cup {r}]
                   ELSE UNCHANGED rep
         ELSE /\ rec[h] # rec[a]
              /\ conv' = conv \cup {<<a, h>>}
              /\ UNCHANGED <<sh, rep>>
    /\ UNCHANGED <<byz, rec, refs, up, pst, ptag, acked, sent, ackd, tried,
                   fdone, fdrop, dap, hollow, bk, wrong, nw>>
    /\ vars' # vars

(* A Byzantine holder that cannot produce its share answers a signed junk  *)
(* proof; it passes only if the auditor does not check it.                 *)
AuditByz(a, b) ==
    /\ Audits
    /\ a \in Honest /\ b \in byz /\ up[a] /\ rec[a] # Nil
    /\ ~ProofChecked
    /\ ~ByzServes(b, rec[a])
    /\ ~hollow
    /\ hollow' = TRUE
    /\ UNCHANGED <<byz, rec, sh, refs, up, pst, ptag, acked, sent, ackd,
                   tried, fdone, fdrop, dap, rep, conv, bk, wrong, nw>>

(* on_put of a repair PUT [a's record, the rebuilt bytes, repair flag].    *)
RecvRepair(h, r) ==
    /\ r \in rep[h]
    /\ rep' = [rep EXCEPT ![h] = @ \ {r}]
    /\ Receive(h, r, r, "t1", TRUE, FALSE, FALSE)
    /\ UNCHANGED <<byz, ptag, sent, tried, fdone, fdrop, dap, hollow, bk,
                   wrong, nw>>

(* A read by honest r decodes a share that is not the placer's: it takes   *)
(* a Byzantine holder's junk under the manifest's record, which only the   *)
(* trust_shares variant does (any share of the right length).              *)
ReadWrong(r) ==
    /\ r \in Honest /\ up[r] /\ ~wrong
    /\ ~ReaderChecksRoot
    /\ \E b \in byz : KnowsCid(b)
    /\ Cardinality(ValidUp) + Cardinality({b \in byz : KnowsCid(b)}) >= K
    /\ wrong' = TRUE
    /\ UNCHANGED <<byz, rec, sh, refs, up, pst, ptag, acked, sent, ackd,
                   tried, fdone, fdrop, dap, rep, conv, hollow, bk, nw>>

(* The owner drops file t1: cmd_drop applies it here and multicasts DROP   *)
(* (signed by the owner: nobody else can make one).                        *)
DropFile ==
    /\ Drops /\ HonestPlacer /\ up[Placer]
    /\ "t1" \in fdone /\ ~fdrop
    /\ fdrop' = TRUE
    /\ refs' = [refs EXCEPT ![Placer] = @ \ {"t1"}]
    /\ dap' = {Placer}
    /\ UNCHANGED <<byz, rec, sh, up, pst, ptag, acked, sent, ackd, tried,
                   fdone, rep, conv, hollow, bk, wrong, nw>>

RecvDrop(h) ==
    /\ fdrop /\ h \in Honest /\ up[h] /\ h \notin dap
    /\ refs' = [refs EXCEPT ![h] = @ \ {"t1"}]
    /\ dap' = dap \cup {h}
    /\ UNCHANGED <<byz, rec, sh, up, pst, ptag, acked, sent, ackd, tried,
                   fdone, fdrop, rep, conv, hollow, bk, wrong, nw>>

(* weft_store_gc_step: a CID no file references loses its shares (after    *)
(* gc_delay_ms); the record in kv stays.                                   *)
GC(h) ==
    /\ Drops /\ h \in Honest /\ up[h]
    /\ refs[h] = {} /\ sh[h] # Nil
    /\ sh' = [sh EXCEPT ![h] = Nil]
    /\ UNCHANGED <<byz, rec, refs, up, pst, ptag, acked, sent, ackd, tried,
                   fdone, fdrop, dap, rep, conv, hollow, bk, wrong, nw>>

Next ==
    \/ \E t \in Tags : Put(t) \/ PutTorn(t)
    \/ \E h \in Node, t \in Tags, torn \in BOOLEAN : RecvPut(h, t, torn)
    \/ \E h \in Node : RecvAck(h)
    \/ Fail
    \/ \E h \in Node : Crash(h) \/ Recover(h) \/ Wipe(h)
    \/ \E b, h \in Node, r \in Recs, bb \in Bytes, rp, torn \in BOOLEAN :
           ByzPut(b, h, r, bb, rp, torn)
    \/ \E b \in Node : ByzKeep(b) \/ ByzDrop(b)
    \/ \E a, h \in Node, helped \in BOOLEAN : Audit(a, h, helped)
    \/ \E a, b \in Node : AuditByz(a, b)
    \/ \E h \in Node, r \in Recs : RecvRepair(h, r)
    \/ \E r \in Node : ReadWrong(r)
    \/ DropFile
    \/ \E h \in Node : RecvDrop(h) \/ GC(h)

(***************************************************************************)
(* Fairness: what honest nodes do by themselves.  The placer's PUTs reach  *)
(* honest holders while it is placing (resent every store_timeout_ms; a    *)
(* PUT still in flight after it is done may be lost: no fairness); ACKs    *)
(* of honest holders reach a placer that is placing; audits happen         *)
(* (store_audit_ms > 0; each holder is eventually picked) and a rebuild    *)
(* from honest shares goes through; repair PUTs arrive; crashed nodes      *)
(* recover.  Nothing forces a put, a failure, a crash, a wipe, a drop, GC  *)
(* or any Byzantine step (Byzantine help in a rebuild included).           *)
(* WF of the disjunction is equivalent to WF of each disjunct in the       *)
(* liveness models (no crashes, no retries, at most MaxWipes wipes):       *)
(* every step there changes a state that only changes back finitely        *)
(* often (a share or record set, an ACK counted, a repair PUT sent at      *)
(* most once per missing share and wipe), so every behaviour has finitely  *)
(* many non-stuttering steps.                                              *)
(***************************************************************************)
HonestStep ==
    \/ pst = "pending" /\ \E h \in Honest : RecvPut(h, ptag, FALSE)
    \/ \E h \in Honest : RecvAck(h)
    \/ \E a, h \in Node : Audit(a, h, FALSE)
    \/ \E h \in Honest, r \in Recs : RecvRepair(h, r)
    \/ \E h \in Node : Recover(h)

Fairness == WF_vars(HonestStep)

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Properties.                                                             *)

(* Retrieval integrity: a read returns the placer's blob or an error.      *)
ReadIntegrity == ~wrong

(* Durability: while a file that holds the chunk is put and not dropped,   *)
(* at least K honest holders keep a share a reader takes (so the chunk     *)
(* can be rebuilt, and an honest reader gets it once they are up).         *)
Durability ==
    HonestPlacer /\ Live # {} =>
        Cardinality({h \in Honest : Valid(h)}) >= K

(* Lemmas.  An honest holder's share matches its record; honest holders    *)
(* keep no record but the manifest's (without FakeRecords).                *)
HonestSharesValid ==
    \A h \in Honest : rec[h] # Nil /\ sh[h] # Nil => sh[h] = rec[h]
RecordsAgree == \A h \in Honest : rec[h] \in {Nil, "R"}

(* Audit soundness: no honest node is convicted by an honest one; no       *)
(* holder passes an audit without being able to produce its share.         *)
HonestNeverConvicted == conv = {}
NoHollowPass == ~hollow

(***************************************************************************)
(* Liveness.  Quiescent: no step of FairSpec's fairness is enabled (no     *)
(* honest node can act on anything, every honest node is up).  In the      *)
(* liveness models every behaviour takes finitely many steps (above), so   *)
(* a behaviour is fair iff it ends in a Quiescent state, and every         *)
(* reachable Quiescent state ends one.  The premises and conclusions       *)
(* below hold from some point on iff they hold at the end, so each         *)
(* temporal property holds of FairSpec iff its AtQuiescence form is an     *)
(* invariant of Spec (with the same constants).  The safety models check   *)
(* the AtQuiescence forms with crashes and retries on too, over more       *)
(* states; the quiescence test does not depend on them.                    *)
(***************************************************************************)
Quiescent == ~ENABLED HonestStep

(* Placement finishes with at most f faulty nodes: it never hangs.         *)
PlaceDoneAtQuiescence == Quiescent /\ HonestPlacer => pst # "pending"

(* Every honest holder ends up with its share: a missing or lost share is  *)
(* repaired (with audits on).                                              *)
AllHeldAtQuiescence ==
    Audits /\ Quiescent /\ HonestPlacer /\ Live # {} =>
        \A h \in Honest : Valid(h)

(* A read by an honest reader succeeds: K good shares are served.          *)
ReadableAtQuiescence ==
    Quiescent /\ HonestPlacer /\ Live # {} => Cardinality(ValidUp) >= K

(* The temporal forms (liveness models, FairSpec).                         *)
PlaceLive == [](pst = "pending" /\ HonestPlacer => <>(pst # "pending"))
Repaired ==
    \A h \in Node :
        (h \notin byz /\ HonestPlacer /\ Live # {} /\ ~Valid(h)) ~> Valid(h)
ReadLive ==
    (HonestPlacer /\ Live # {}) ~> (Cardinality(ValidUp) >= K)

(* Witnesses (must be violated: the models reach what they claim to     *)
(* cover).  A holder that lost its disk after the put got its share back; *)
(* a holder that never acknowledged the placer's PUT (it was lost, or the *)
(* placement was done without it) holds the share, by repair.             *)
NoWipeRepaired ==
    ~(nw > 0 /\ HonestPlacer /\ Live # {} /\ \A h \in Honest : Valid(h))
NoUnackedRepaired ==
    ~(/\ HonestPlacer /\ Live # {}
      /\ \E h \in Honest \ {Placer} :
            Valid(h) /\ \A t \in Tags : <<h, t>> \notin ackd)

(* Symmetry, for the safety models only: the nodes other than the placer   *)
(* are interchangeable (byz is a variable, permuted with them).            *)
Symmetry == Permutations(Node \ {Placer})
=============================================================================
