---------------------------- MODULE MCDurableRaft ----------------------------
(***************************************************************************)
(* DurableRaft with the explorer's bounds (spec/config.go, InBounds) as a  *)
(* state constraint, so that TLC and `raftspec explore` search the same    *)
(* graph: a successor outside the bounds is generated and checked against *)
(* the invariants but neither counted as distinct nor explored.            *)
(* No symmetry: the Go explorer does not use it either.                    *)
(***************************************************************************)
EXTENDS DurableRaft

CONSTANTS MaxTerm, MaxLog, MaxDup, MaxMsgs
CONSTANT Without   \* SubSpec: steps never taken, as raftspec -without (below)

\* The messages held by persistence windows count as messages.
RECURSIVE HeldCount(_)
HeldCount(S) ==
    IF S = {} THEN 0
    ELSE LET i == CHOOSE x \in S : TRUE
         IN Cardinality(DOMAIN held[i]) + HeldCount(S \ {i})

Bound ==
    /\ \A i \in Server : currentTerm[i] <= MaxTerm /\ Len(log[i]) <= MaxLog
    /\ \A m \in DOMAIN messages : messages[m] <= MaxDup
    /\ \A i \in Server : \A m \in DOMAIN held[i] : held[i][m] <= MaxDup
    /\ Cardinality(DOMAIN messages) + HeldCount(Server) <= MaxMsgs

-----------------------------------------------------------------------------
(* The sub-model of raftspec explore -without LIST: Next without the steps *)
(* Without names, "Action" for every server or "Action@k" for server sk's  *)
(* (the step's i; a message action's is m.mdest).  Every behaviour of      *)
(* SubSpec is one of Spec.  Only the actions below can be named; Receive's *)
(* handlers cannot.  Spec itself ignores Without.                          *)

Allowed(a, i) == a \notin Without /\ (a \o "@" \o ToString(Idx(i))) \notin Without

SubNext ==
    /\ \/ \E i \in Server : Allowed("Restart", i) /\ Restart(i)
       \/ \E i \in Server : Allowed("Crash", i) /\ Crash(i)
       \/ \E i \in Server : Allowed("Corrupt", i) /\ Corrupt(i)
       \/ \E i \in Server : Allowed("Flush", i) /\ Flush(i)
       \/ \E i \in Server : Allowed("PowerLoss", i) /\ PowerLoss(i)
       \/ \E i \in Server : Allowed("Wipe", i) /\ Wipe(i)
       \/ \E i, j \in Server : Allowed("AnswerFirstBoot", i) /\ AnswerFirstBoot(i, j)
       \/ \E i \in Server : Allowed("ConfirmFirstBoot", i) /\ ConfirmFirstBoot(i)
       \/ \E i \in Server : Allowed("Timeout", i) /\ Timeout(i)
       \/ \E i, j \in Server : Allowed("RequestVote", i) /\ RequestVote(i, j)
       \/ \E i \in Server : Allowed("BecomeLeader", i) /\ BecomeLeader(i)
       \/ \E i \in Server, v \in Value : Allowed("ClientRequest", i) /\ ClientRequest(i, v)
       \/ \E i \in Server : Allowed("ChangeConfig", i) /\ ChangeConfig(i)
       \/ \E i \in Server : Allowed("AdvanceCommitIndex", i) /\ AdvanceCommitIndex(i)
       \/ \E i, j \in Server : Allowed("AppendEntries", i) /\ AppendEntries(i, j)
       \/ \E i, j \in Server : Allowed("RequestRepair", i) /\ RequestRepair(i, j)
       \* the production actions (issue 18: the production repair's sub-model)
       \/ \E i \in Server : Allowed("FlushTo", i) /\ FlushTo(i)
       \/ \E i \in Server : Allowed("StepDown", i) /\ StepDown(i)
       \/ \E i \in Server : Allowed("Persist", i) /\ Persist(i)
       \/ \E i \in Server : Allowed("CrashFromSnapshot", i) /\ CrashFromSnapshot(i)
       \/ \E i \in Server : Allowed("CorruptFromSnapshot", i) /\ CorruptFromSnapshot(i)
       \/ \E i, j \in Server : Allowed("SendSnapshot", i) /\
              \E k \in 1..commitIndex[i] : SendSnapshot(i, j, k)
       \/ \E i, j \in Server : Allowed("SendAppendEntries", i) /\
              \E prev \in 0..Len(log[i]) :
                  \E n \in 0..(Len(log[i]) - prev) : SendAppendEntries(i, j, prev, n)
       \/ \E m \in DOMAIN messages : Receive(m)
       \/ \E m \in DOMAIN messages : Allowed("DuplicateMessage", m.mdest) /\ DuplicateMessage(m)
       \/ \E m \in DOMAIN messages : Allowed("DropMessage", m.mdest) /\ DropMessage(m)
    /\ RecordLogs

SubSpec == Init /\ [][SubNext]_vars

=============================================================================
