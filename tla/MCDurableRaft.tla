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

=============================================================================
