----------------------------- MODULE DurableRaft -----------------------------
(***************************************************************************)
(* The protocol of spec/ (the Go executable specification) in TLA+.        *)
(*                                                                         *)
(* Profile "raft" is Ongaro's raft.tla (2014): the same variables, the     *)
(* same actions under the same names, the same message records, so that    *)
(* TLC reaches exactly the states raft.tla reaches.  Profile "durable"     *)
(* adds the durability extensions of this project: an acknowledgment      *)
(* means the entry is fdatasync'd on a majority.  Each extension can be    *)
(* switched off by naming its bug in the constant Bugs, with the names     *)
(* that `raftspec -bug` takes.                                             *)
(*                                                                         *)
(* Every operator below is one Go function in spec/ with the same name;    *)
(* docs/tla.md has the table.  Written afresh for this project, keeping    *)
(* raft.tla's action structure and names (raft.tla itself is CC BY 4.0,   *)
(* Diego Ongaro).                                                          *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences, TLC

CONSTANTS
    Server,       \* the servers, e.g. {"s1", "s2", "s3"}
    Value,        \* the client values, e.g. 1..1
    Profile,      \* "raft" or "durable"
    Bugs,         \* a subset of BugNames: fixes switched off (durable only)
    Crashes,      \* durable: Crash steps a behaviour may take in all
    Corruptions,  \* durable: Corrupt steps a behaviour may take in all
    Production,   \* durable: TRUE adds the production core's actions
    Membership,   \* TRUE: configurations in the log, ChangeConfig (docs/membership.md)
    InitVoters,   \* membership: servers s1..sN are the initial voters (0: all)
    PowerLosses   \* durable, without Production and Membership: PowerLoss steps in all

\* Reserved values.  Strings, so that a trace's JSON maps onto them as is.
Nil       == "Nil"
Follower  == "Follower"
Candidate == "Candidate"
Leader    == "Leader"
RequestVoteRequest    == "RequestVoteRequest"
RequestVoteResponse   == "RequestVoteResponse"
AppendEntriesRequest  == "AppendEntriesRequest"
AppendEntriesResponse == "AppendEntriesResponse"
InstallSnapshotRequest == "InstallSnapshotRequest"  \* production: a snapshot offered
Clean     == "CLEAN"
Truncated == "TRUNCATED"
Ambiguous == "AMBIGUOUS"   \* power losses: a damaged last batch nothing vouches for

\* The switches of spec/config.go, in the order of its Bug bits.
BugNames == <<"self-counts-appended", "follower-acks-appended",
              "candidate-advertises-learned", "candidate-advertises-appended",
              "no-voter-learned-floor", "no-promotion-fence",
              "truncated-member-votes", "release-at-leader-commit",
              "truncation-not-synced", "mark-after-cut",
              "learned-commit-unclamped", "ambiguous-tail-clean",
              "ambiguous-withholds-vote">>

\* The membership switches (spec/config.go), of either profile.
MembershipBugSeq   == <<"config-before-own-term-commit", "config-while-uncommitted">>
MembershipBugNames == {MembershipBugSeq[k] : k \in DOMAIN MembershipBugSeq}

\* Issue 18: the repair of a TRUNCATED member from its peers (spec/repair.go)
\* and the wiped-member rule (spec/wipe.go), each behind its constant;
\* their switches, in spec/config.go's order (after the membership ones).
CONSTANTS
    Repair,       \* durable, without Membership and PowerLosses: RequestRepair and its answers
    Wipes         \* without Production, Membership and PowerLosses: Wipe steps in all
RepairBugSeq   == <<"repair-votes-early", "repair-ignores-term">>
WipeBugSeq     == <<"wiped-votes", "wipe-confirm-quorum">>
RepairBugNames == {RepairBugSeq[k] : k \in DOMAIN RepairBugSeq}
WipeBugNames   == {WipeBugSeq[k] : k \in DOMAIN WipeBugSeq}
ASSUME /\ Repair \in BOOLEAN
       /\ Repair => Profile = "durable" /\ ~Membership /\ PowerLosses = 0
       /\ ~Repair => Bugs \cap RepairBugNames = {}
       /\ Wipes \in Nat
       /\ Wipes > 0 => ~Production /\ ~Membership /\ PowerLosses = 0
       /\ Wipes = 0 => Bugs \cap WipeBugNames = {}

ASSUME /\ Profile \in {"raft", "durable"}
       /\ Bugs \subseteq {BugNames[k] : k \in DOMAIN BugNames} \cup MembershipBugNames
                   \cup RepairBugNames \cup WipeBugNames
       /\ Profile = "raft" => (Bugs \subseteq MembershipBugNames \cup WipeBugNames
                                /\ Crashes = 0 /\ Corruptions = 0)
       /\ Membership \in BOOLEAN
       /\ ~Membership => Bugs \cap MembershipBugNames = {} /\ InitVoters = 0
       /\ Production \in BOOLEAN
       /\ Production => Profile = "durable"
       /\ "mark-after-cut" \in Bugs => Production
       /\ "learned-commit-unclamped" \in Bugs => Production
       /\ PowerLosses \in Nat
       /\ PowerLosses > 0 => Profile = "durable" /\ ~Production /\ ~Membership
       /\ "ambiguous-tail-clean" \in Bugs => PowerLosses > 0
       /\ "ambiguous-withholds-vote" \in Bugs => PowerLosses > 0
       /\ Nil \notin Server

IsDurable    == Profile = "durable"
IsProduction == IsDurable /\ Production
Has(bug)  == bug \in Bugs

-----------------------------------------------------------------------------
(* Variables of raft.tla *)

VARIABLE messages      \* the network: a bag, message -> number of copies
VARIABLE elections     \* history: one record per BecomeLeader
VARIABLE allLogs       \* history: every log any server has had
VARIABLE currentTerm, state, votedFor
VARIABLE log, commitIndex
VARIABLE votesResponded, votesGranted, voterLog   \* voterLog is history
VARIABLE nextIndex, matchIndex

(* Variables of profile durable; constant in profile raft *)

VARIABLE durableLen        \* length of the fdatasync'd prefix of log[i]
VARIABLE learnedCommit     \* highest commit index i has learned (durable)
VARIABLE verdict           \* recovery verdict: CLEAN or TRUNCATED (durable)
VARIABLE truncatedAtTerm   \* currentTerm[i] when the corruption happened
VARIABLE committed         \* history: [index, term, cterm] of committed entries
VARIABLE crashesLeft, corruptionsLeft   \* the environment's budgets
VARIABLE staleLog          \* truncation-not-synced: the durable log before a
                           \* truncation no flush has synced yet (<<>>: none);
                           \* production: the base of i's persistence window

(* Variables of the production profile's persistence window; constant    *)
(* otherwise (spec/window.go).                                            *)

VARIABLE staleDurable      \* the durable length of staleLog[i]
VARIABLE persisted         \* the durable copy of i's hard state
VARIABLE held              \* messages i sent in its window: a bag per server

(* Variables of power losses (spec/power.go); constant without them.       *)

VARIABLE batchStart        \* durableLen[i] before i's last Flush: the last synced
                           \* batch is the entries after it, up to durableLen[i]
VARIABLE votesAmbiguous    \* the grants of votesGranted[i] from AMBIGUOUS voters
VARIABLE damaged           \* history (the budget): members whose last synced batch
                           \* a power loss damaged, until repaired
VARIABLE powerLossesLeft   \* the budget of PowerLoss steps

(* Variables of issue 18 (spec/repair.go, spec/wipe.go); constant without  *)
(* Repair and Wipes.                                                       *)

VARIABLE repairFrom        \* repair: the peers whose answers TRUNCATED i has counted (volatile)
VARIABLE repairs           \* repair, history: [server, term, log] of every release by peers
VARIABLE wipesLeft         \* wipes: the budget of Wipe steps
VARIABLE wiped             \* wipes, history (the budget): the servers ever wiped
VARIABLE unconfirmed       \* wipes: the members whose first boot is not confirmed (durable)
VARIABLE lost              \* wipes: the members found wiped, for good (durable)
VARIABLE answered          \* wipes: the yes answers unconfirmed i has collected
VARIABLE known             \* wipes: the incarnations j was confirmed with (durable)

serverVars    == <<currentTerm, state, votedFor>>
logVars       == <<log, commitIndex>>
candidateVars == <<votesResponded, votesGranted, voterLog, votesAmbiguous>>
leaderVars    == <<nextIndex, matchIndex, elections>>
repairVars    == <<repairFrom, repairs>>
wipeVars      == <<wipesLeft, wiped, unconfirmed, lost, answered, known>>
durableVars   == <<durableLen, learnedCommit, verdict, truncatedAtTerm,
                   committed, crashesLeft, corruptionsLeft, batchStart, damaged,
                   powerLossesLeft, repairVars, wipeVars>>
windowVars    == <<staleLog, staleDurable, persisted, held>>
vars == <<messages, allLogs, serverVars, candidateVars, leaderVars, logVars,
          durableVars, windowVars>>

-----------------------------------------------------------------------------
(* Helpers *)

Quorum == {q \in SUBSET Server : Cardinality(q) * 2 > Cardinality(Server)}

-----------------------------------------------------------------------------
(* Membership (spec/membership.go, docs/membership.md).  A configuration  *)
(* is a log entry whose value is ConfigValueBase plus its code, the sum   *)
(* of d(k) * 3^(k-1) over the servers s1..s5 (d: 0 not a member, 1        *)
(* learner, 2 voter), so that logs compare as they do without membership. *)
(* A server uses the latest configuration of its log, committed or not.   *)
(* Without Membership none of these operators is evaluated.               *)

ServerName == <<"s1", "s2", "s3", "s4", "s5">>
Idx(s) == CHOOSE k \in 1..5 : ServerName[k] = s
ConfigValueBase == 13
IsConfigValue(v) == v >= ConfigValueBase

Digit(v, k) == ((v - ConfigValueBase) \div (3 ^ (k - 1))) % 3
DecodeConfig(v) == [voters   |-> {s \in Server : Digit(v, Idx(s)) = 2},
                    learners |-> {s \in Server : Digit(v, Idx(s)) = 1}]
RECURSIVE CodeFrom(_, _)
CodeFrom(k, c) ==
    IF k > 5 THEN 0
    ELSE (CASE ServerName[k] \in c.voters   -> 2
            [] ServerName[k] \in c.learners -> 1
            [] OTHER                        -> 0) * (3 ^ (k - 1)) + CodeFrom(k + 1, c)
ConfigValue(c) == ConfigValueBase + CodeFrom(1, c)

InitConfig ==
    [voters   |-> IF ~Membership \/ InitVoters = 0 THEN Server
                  ELSE {s \in Server : Idx(s) <= InitVoters},
     learners |-> {}]

ConfigIndexes(xlog) == {k \in 1..Len(xlog) : IsConfigValue(xlog[k].value)}
LastConfigIndex(xlog) ==
    IF ConfigIndexes(xlog) = {} THEN 0
    ELSE CHOOSE k \in ConfigIndexes(xlog) : \A x \in ConfigIndexes(xlog) : x <= k
ConfigOf(xlog) ==
    IF Membership /\ LastConfigIndex(xlog) > 0
    THEN DecodeConfig(xlog[LastConfigIndex(xlog)].value)
    ELSE InitConfig

\* Every configuration of the state: the initial one, each server's, and
\* each committed entry's (Corrupt never makes the TRUNCATED a quorum of one).
ConfigsPresent ==
    {InitConfig} \cup {ConfigOf(log[j]) : j \in Server} \cup {c.config : c \in committed}

IsQuorumOf(c, q) == Cardinality(q \cap c.voters) * 2 > Cardinality(c.voters)
\* The quorum a server with log xlog counts.
IsQuorumIn(xlog, q) == IF Membership THEN IsQuorumOf(ConfigOf(xlog), q) ELSE q \in Quorum
Members(c) == c.voters \cup c.learners

\* The single-server changes of c: a non-member becomes a learner, a
\* learner a voter or nothing, a voter nothing (one voter remains).
NextConfigs(c) ==
    {[voters |-> c.voters \ {j}, learners |-> c.learners] :
        j \in {x \in c.voters : Cardinality(c.voters) > 1}}
    \cup {[voters |-> c.voters \cup {j}, learners |-> c.learners \ {j}] : j \in c.learners}
    \cup {[voters |-> c.voters, learners |-> c.learners \ {j}] : j \in c.learners}
    \cup {[voters |-> c.voters, learners |-> c.learners \cup {j}] :
            j \in Server \ Members(c)}

LastTerm(xlog) == IF Len(xlog) = 0 THEN 0 ELSE xlog[Len(xlog)].term

Min(s) == CHOOSE x \in s : \A y \in s : x <= y
Max(s) == CHOOSE x \in s : \A y \in s : x >= y

\* The bag: one more, one less copy of m.
WithMessage(m, msgs) ==
    IF m \in DOMAIN msgs THEN [msgs EXCEPT ![m] = @ + 1]
                         ELSE msgs @@ (m :> 1)
WithoutMessage(m, msgs) ==
    IF m \in DOMAIN msgs
    THEN IF msgs[m] <= 1 THEN [x \in DOMAIN msgs \ {m} |-> msgs[x]]
                         ELSE [msgs EXCEPT ![m] = @ - 1]
    ELSE msgs

Send(m)    == messages' = WithMessage(m, messages)
Discard(m) == messages' = WithoutMessage(m, messages)
Reply(response, request) ==
    messages' = WithoutMessage(request, WithMessage(response, messages))

IsPrefix(p, s) == Len(p) <= Len(s) /\ SubSeq(s, 1, Len(p)) = p

EmptyBag == [m \in {} |-> 0]

\* The union of two bags.
BagSum(a, b) ==
    [m \in DOMAIN a \cup DOMAIN b |->
        (IF m \in DOMAIN a THEN a[m] ELSE 0) + (IF m \in DOMAIN b THEN b[m] ELSE 0)]

\* With truncation-not-synced (without the production actions), a
\* truncation that removes durable entries leaves the durable log it had on
\* disk until the next flush; only the first one since the last flush
\* changes what is on disk.
KeepStaleLog(i) ==
    /\ IF /\ Has("truncation-not-synced")
          /\ staleLog[i] = <<>>
          /\ durableLen'[i] < durableLen[i]
       THEN staleLog' = [staleLog EXCEPT ![i] = SubSeq(log[i], 1, durableLen[i])]
       ELSE UNCHANGED staleLog
    /\ UNCHANGED staleDurable

-----------------------------------------------------------------------------
(* The persistence window of the production profile (spec/window.go).     *)

\* i's hard state, before and after the step.
HardState(i)     == [currentTerm |-> currentTerm[i], votedFor |-> votedFor[i],
                     truncatedAtTerm |-> truncatedAtTerm[i]]
HardStateNext(i) == [currentTerm |-> currentTerm'[i], votedFor |-> votedFor'[i],
                     truncatedAtTerm |-> truncatedAtTerm'[i]]

HardStateDirty(i) == IsProduction /\ HardState(i) /= persisted[i]

\* The window is open while the hard state or (but with
\* truncation-not-synced) a truncation is not durable.  (Written as a
\* negation: TLC would branch on a disjunction in an action's guard and
\* generate the successor twice when both hold.)
WindowOpen(i) ==
    ~(/\ ~HardStateDirty(i)
      /\ ~(IsProduction /\ ~Has("truncation-not-synced") /\ staleLog[i] /= <<>>))

\* The window (or a pending truncation) has a base log: staleLog[i], empty
\* or not when the hard state is dirty.
BasePresent(i) == HardStateDirty(i) \/ staleLog[i] /= <<>>

\* A step of i that changes its hard state or truncates its log opens its
\* window, with the log before the step as the base.  (After the
\* conjuncts that set log'[i] and the hard state.)
OpenWindow(i) ==
    IF /\ IsProduction
       /\ ~BasePresent(i)
       /\ HardStateNext(i) /= persisted[i] \/ ~IsPrefix(log[i], log'[i])
    THEN /\ staleLog'     = [staleLog EXCEPT ![i] = log[i]]
         /\ staleDurable' = [staleDurable EXCEPT ![i] = durableLen[i]]
    ELSE UNCHANGED <<staleLog, staleDurable>>

\* A message that depends on its sender's open window (as the step leaves
\* the hard state) waits in held[msource]: a vote request or response, an
\* AppendEntries response, not to the sender itself.
HeldFor(m) ==
    /\ IsProduction
    /\ m.mdest /= m.msource
    /\ m.mtype /= AppendEntriesRequest
    /\ \/ HardStateNext(m.msource) /= persisted[m.msource]
       \/ ~Has("truncation-not-synced") /\ staleLog[m.msource] /= <<>>

\* Send, or hold.  (After the conjuncts that set the hard state.)
Post(m) ==
    IF HeldFor(m)
    THEN /\ held' = [held EXCEPT ![m.msource] = WithMessage(m, @)]
         /\ UNCHANGED messages
    ELSE /\ Send(m)
         /\ UNCHANGED held

\* Reply, with the response posted.
PostReply(response, request) ==
    IF HeldFor(response)
    THEN /\ held'     = [held EXCEPT ![response.msource] = WithMessage(response, @)]
         /\ messages' = WithoutMessage(request, messages)
    ELSE /\ Reply(response, request)
         /\ UNCHANGED held

-----------------------------------------------------------------------------
(* Issue 18: what the repair from peers (spec/repair.go) and the wiped-    *)
(* member rule (spec/wipe.go) share with the actions above.  Without       *)
(* Repair and Wipes none of it changes a state.                            *)

RepairRequest  == "RepairRequest"    \* repair: a TRUNCATED member asks for a durable log
RepairResponse == "RepairResponse"   \* repair: a CLEAN peer's durable log

\* wipes: i may neither vote nor campaign nor acknowledge: its first boot is
\* unconfirmed, or it was found wiped (spec passive).
Passive(i) == Wipes > 0 /\ (i \in unconfirmed \/ i \in lost)

\* wipes: term 1, no vote, an empty log (spec pristine).
Pristine(j) == currentTerm[j] = 1 /\ votedFor[j] = Nil /\ Len(log[j]) = 0

\* HandleAppendEntriesRequest at a passive member (spec passiveAppend): the
\* request is consumed, nothing else changes.
PassiveAppend(i, j, m) ==
    /\ m.mterm <= currentTerm[i]
    /\ Discard(m)
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars, windowVars>>

\* Init's part (spec initWipe): every member at its first boot is
\* unconfirmed (none with wiped-votes).
InitRepairWipe ==
    /\ repairFrom  = [i \in Server |-> {}]
    /\ repairs     = {}
    /\ wipesLeft   = Wipes
    /\ wiped       = {}
    /\ unconfirmed = IF Wipes > 0 /\ ~Has("wiped-votes") THEN Server ELSE {}
    /\ lost        = {}
    /\ answered    = [i \in Server |-> {}]
    /\ known       = [i \in Server |-> {}]

-----------------------------------------------------------------------------
(* Initial state *)

Init ==
    /\ messages        = [m \in {} |-> 0]
    /\ elections       = {}
    /\ allLogs         = {}
    /\ currentTerm     = [i \in Server |-> 1]
    /\ state           = [i \in Server |-> Follower]
    /\ votedFor        = [i \in Server |-> Nil]
    /\ log             = [i \in Server |-> <<>>]
    /\ commitIndex     = [i \in Server |-> 0]
    /\ votesResponded  = [i \in Server |-> {}]
    /\ votesGranted    = [i \in Server |-> {}]
    /\ voterLog        = [i \in Server |-> [j \in {} |-> <<>>]]
    /\ nextIndex       = [i \in Server |-> [j \in Server |-> 1]]
    /\ matchIndex      = [i \in Server |-> [j \in Server |-> 0]]
    /\ durableLen      = [i \in Server |-> 0]
    /\ learnedCommit   = [i \in Server |-> 0]
    /\ verdict         = [i \in Server |-> Clean]
    /\ truncatedAtTerm = [i \in Server |-> 0]
    /\ committed       = {}
    /\ crashesLeft     = IF IsDurable THEN Crashes ELSE 0
    /\ corruptionsLeft = IF IsDurable THEN Corruptions ELSE 0
    /\ staleLog        = [i \in Server |-> <<>>]
    /\ staleDurable    = [i \in Server |-> 0]
    /\ persisted       = [i \in Server |-> [currentTerm |-> 1, votedFor |-> Nil,
                                             truncatedAtTerm |-> 0]]
    /\ held            = [i \in Server |-> EmptyBag]
    /\ batchStart      = [i \in Server |-> 0]
    /\ votesAmbiguous  = [i \in Server |-> {}]
    /\ damaged         = {}
    /\ powerLossesLeft = PowerLosses
    /\ InitRepairWipe

-----------------------------------------------------------------------------
(* Actions of raft.tla, with the durable profile's changes marked.         *)

\* What Restart, Crash and Corrupt all do: the volatile state is lost; the
\* commit index comes back as c (0, or a snapshot's index: production).
ResetVolatileTo(i, c) ==
    /\ state'          = [state EXCEPT ![i] = Follower]
    /\ votesResponded' = [votesResponded EXCEPT ![i] = {}]
    /\ votesGranted'   = [votesGranted EXCEPT ![i] = {}]
    /\ votesAmbiguous' = [votesAmbiguous EXCEPT ![i] = {}]
    /\ voterLog'       = [voterLog EXCEPT ![i] = [j \in {} |-> <<>>]]
    /\ nextIndex'      = [nextIndex EXCEPT ![i] = [j \in Server |-> 1]]
    /\ matchIndex'     = [matchIndex EXCEPT ![i] = [j \in Server |-> 0]]
    /\ commitIndex'    = [commitIndex EXCEPT ![i] = c]

ResetVolatile(i) == ResetVolatileTo(i, 0)

\* Server i comes back from stable storage with its term, vote and log.
\* Profile raft only: profile durable has Crash instead.
Restart(i) ==
    /\ ~IsDurable
    /\ ResetVolatile(i)
    /\ UNCHANGED <<messages, currentTerm, votedFor, log, elections, durableVars,
                   windowVars>>

\* Server i's election timer fires: it stands for the next term.
Timeout(i) ==
    /\ state[i] \in {Follower, Candidate}
    /\ Membership => i \in ConfigOf(log[i]).voters    \* a learner does not stand
    /\ ~Passive(i)                                     \* wipes: unconfirmed or lost
    /\ state'          = [state EXCEPT ![i] = Candidate]
    /\ currentTerm'    = [currentTerm EXCEPT ![i] = @ + 1]
    /\ votedFor'       = [votedFor EXCEPT ![i] = Nil]
    /\ votesResponded' = [votesResponded EXCEPT ![i] = {}]
    /\ votesGranted'   = [votesGranted EXCEPT ![i] = {}]
    /\ votesAmbiguous' = [votesAmbiguous EXCEPT ![i] = {}]
    /\ voterLog'       = [voterLog EXCEPT ![i] = [j \in {} |-> <<>>]]
    /\ UNCHANGED <<messages, leaderVars, logVars, durableVars, persisted, held>>
    /\ OpenWindow(i)

\* The log a server puts forward in an election, and compares a candidate's
\* with.  durable: only the fdatasync'd prefix, which survives a crash.
AdvertisedLog(i) ==
    IF IsDurable THEN SubSeq(log[i], 1, durableLen[i]) ELSE log[i]

\* Candidate i asks j (possibly itself) for its vote.
\* durable: it advertises its durable tip; two bugs advertise more.
RequestVote(i, j) ==
    LET adv       == AdvertisedLog(i)
        lastTerm  == IF IsDurable /\ Has("candidate-advertises-appended")
                     THEN LastTerm(log[i]) ELSE LastTerm(adv)
        lastIndex == CASE IsDurable /\ Has("candidate-advertises-appended")
                              -> Len(log[i])
                       [] IsDurable /\ Has("candidate-advertises-learned")
                              -> Max({Len(adv), learnedCommit[i]})
                       [] OTHER -> Len(adv)
    IN /\ state[i] = Candidate
       /\ j \notin votesResponded[i]
       /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars,
                      staleLog, staleDurable, persisted>>
       /\ Post([mtype         |-> RequestVoteRequest,
                mterm         |-> currentTerm[i],
                mlastLogTerm  |-> lastTerm,
                mlastLogIndex |-> lastIndex,
                msource       |-> i,
                mdest         |-> j])

\* Leader i sends j the entry at nextIndex[i][j] (or none) and its log as
\* history field mlog.  durable: mleaderCommit carries commitIndex[i]
\* before the clamp; the record has no such field in profile raft.
AppendEntries(i, j) ==
    /\ i /= j
    /\ state[i] = Leader
    /\ Membership => j \in Members(ConfigOf(log[i]))
    /\ LET prevLogIndex == nextIndex[i][j] - 1
           prevLogTerm  == IF prevLogIndex > 0 THEN log[i][prevLogIndex].term ELSE 0
           lastEntry    == Min({Len(log[i]), nextIndex[i][j]})
           entries      == SubSeq(log[i], nextIndex[i][j], lastEntry)
           commit       == Min({commitIndex[i], lastEntry})
       IN Send(IF IsDurable
               THEN [mtype          |-> AppendEntriesRequest,
                     mterm          |-> currentTerm[i],
                     mprevLogIndex  |-> prevLogIndex,
                     mprevLogTerm   |-> prevLogTerm,
                     mentries       |-> entries,
                     mlog           |-> log[i],
                     mcommitIndex   |-> commit,
                     mleaderCommit  |-> commitIndex[i],
                     msource        |-> i,
                     mdest          |-> j]
               ELSE [mtype          |-> AppendEntriesRequest,
                     mterm          |-> currentTerm[i],
                     mprevLogIndex  |-> prevLogIndex,
                     mprevLogTerm   |-> prevLogTerm,
                     mentries       |-> entries,
                     mlog           |-> log[i],
                     mcommitIndex   |-> commit,
                     msource        |-> i,
                     mdest          |-> j])
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars, windowVars>>

\* Marked votes (spec -marked-votes, issue 10 item 2, docs/durable-raft.md):
\* every voter that is not CLEAN, TRUNCATED too, grants marked (with
\* truncated-member-votes a TRUNCATED grant is unmarked), and a candidate
\* that is not CLEAN passes the fence's verdict half, so it leads only by a
\* unanimous election (ElectedBy), then CLEAN.  An operator, not a CONSTANT,
\* so that the configs without it need not name it: a config turns it on
\* with CONSTANT MarkedVotes = TRUE (a trace with MarkedVotes <- ...).
MarkedVotes == FALSE
MarkedVoter(i) ==
    IF MarkedVotes /\ verdict[i] = Truncated THEN ~Has("truncated-member-votes")
                                              ELSE verdict[i] = Ambiguous

\* durable: the promotion fence.  A TRUNCATED member (but with MarkedVotes),
\* or one whose durable log is shorter than what it learned as committed,
\* may not lead.  (An AMBIGUOUS one leads only by a unanimous election,
\* ElectedBy.)
\* (An IF, not a disjunction: TLC would take both disjuncts where both
\* hold, generating the successor twice, which the explorer does not.)
PromotionFenceOpen(i) ==
    (IF MarkedVotes THEN TRUE ELSE verdict[i] /= Truncated) /\ durableLen[i] >= learnedCommit[i]

\* power losses (spec/power.go): the marked grants count only towards a
\* unanimous election: of every server, with membership of every voter of
\* ConfigOf(xlog).
\* (An IF again: at 3 servers both can hold.)
ElectedBy(xlog, votes, ambiguous) ==
    IF IsQuorumIn(xlog, votes \ ambiguous) THEN TRUE
    ELSE ambiguous /= {} /\ IF Membership THEN ConfigOf(xlog).voters \subseteq votes
                                          ELSE votes = Server

\* Candidate i has a quorum of votes and becomes leader.  power losses: an
\* AMBIGUOUS candidate elected (unanimously) is repaired.
BecomeLeader(i) ==
    /\ state[i] = Candidate
    /\ IsQuorumIn(log[i], votesGranted[i])
    /\ votesAmbiguous[i] /= {} => ElectedBy(log[i], votesGranted[i], votesAmbiguous[i])
    /\ IsDurable /\ ~Has("no-promotion-fence") => PromotionFenceOpen(i)
    /\ IF verdict[i] = Ambiguous \/ (MarkedVotes /\ verdict[i] /= Clean)
       THEN /\ verdict'         = [verdict EXCEPT ![i] = Clean]
            /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = 0]
            /\ damaged'         = damaged \ {i}
       ELSE UNCHANGED <<verdict, truncatedAtTerm, damaged>>
    /\ state'      = [state EXCEPT ![i] = Leader]
    /\ nextIndex'  = [nextIndex EXCEPT ![i] = [j \in Server |-> Len(log[i]) + 1]]
    /\ matchIndex' = [matchIndex EXCEPT ![i] = [j \in Server |-> 0]]
    /\ elections'  = elections \cup {[eterm     |-> currentTerm[i],
                                      eleader   |-> i,
                                      elog      |-> log[i],
                                      evotes    |-> votesGranted[i],
                                      evoterLog |-> voterLog[i]]}
    /\ UNCHANGED <<messages, currentTerm, votedFor, candidateVars, logVars, durableLen,
                   learnedCommit, committed, crashesLeft, corruptionsLeft, batchStart,
                   powerLossesLeft, windowVars, repairVars, wipeVars>>

\* Leader i appends client value v to its log (not yet durable).
ClientRequest(i, v) ==
    /\ state[i] = Leader
    /\ log' = [log EXCEPT ![i] = Append(@, [term |-> currentTerm[i], value |-> v])]
    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, commitIndex,
                   durableVars, persisted, held>>
    /\ OpenWindow(i)

\* membership: leader i appends a configuration that changes one server,
\* effective at once; only when its previous change is committed and it has
\* committed an entry of its own term (the fix of the 2015 single-server
\* bug).  Its commit index covers an entry of its term exactly when the
\* entry at commitIndex[i] is one (terms never decrease along a log).
ChangeConfig(i) ==
    /\ Membership
    /\ state[i] = Leader
    /\ ~Has("config-while-uncommitted") => LastConfigIndex(log[i]) <= commitIndex[i]
    /\ ~Has("config-before-own-term-commit") =>
           /\ 0 < commitIndex[i] /\ commitIndex[i] <= Len(log[i])
           /\ log[i][commitIndex[i]].term = currentTerm[i]
    /\ \E c \in NextConfigs(ConfigOf(log[i])) :
           log' = [log EXCEPT ![i] = Append(@, [term  |-> currentTerm[i],
                                               value |-> ConfigValue(c)])]
    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, commitIndex,
                   durableVars, persisted, held>>
    /\ OpenWindow(i)

\* committed grows by the entries 1..commit of xlog not recorded yet, each
\* with the term t in which a leader's commit index first covered it.
\* membership: also the configuration the leader counted its quorum in.
CommittedRecord(x, t, cterm, c) ==
    IF Membership THEN [index |-> x, term |-> t, cterm |-> cterm, config |-> c]
                  ELSE [index |-> x, term |-> t, cterm |-> cterm]
RecordCommitted(xlog, commit, t, cf) ==
    committed \cup
        {CommittedRecord(x, xlog[x].term, t, cf) :
            x \in {y \in 1..commit :
                      ~\E c \in committed : c.index = y /\ c.term = xlog[y].term}}

\* Leader i moves its commit index to the highest index a quorum holds,
\* when that entry is of its own term.
\* durable: i counts itself only up to durableLen[i]; learnedCommit[i]
\* follows commitIndex[i] up; committed records what the commit covers.
AdvanceCommitIndex(i) ==
    /\ state[i] = Leader
    /\ LET selfCounts(index) ==
               ~IsDurable \/ Has("self-counts-appended") \/ durableLen[i] >= index
           Agree(index) == (IF selfCounts(index) THEN {i} ELSE {})
                               \cup {k \in Server : matchIndex[i][k] >= index}
           agreeIndexes == {index \in 1..Len(log[i]) : IsQuorumIn(log[i], Agree(index))}
           newCommitIndex ==
               IF /\ agreeIndexes /= {}
                  /\ log[i][Max(agreeIndexes)].term = currentTerm[i]
               THEN Max(agreeIndexes)
               ELSE commitIndex[i]
       IN /\ commitIndex' = [commitIndex EXCEPT ![i] = newCommitIndex]
          /\ IF IsDurable
             THEN /\ learnedCommit' = [learnedCommit EXCEPT ![i] =
                                           Max({@, newCommitIndex})]
                  /\ committed' = RecordCommitted(log[i], newCommitIndex, currentTerm[i],
                                                   ConfigOf(log[i]))
             ELSE UNCHANGED <<learnedCommit, committed>>
    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, log,
                   durableLen, verdict, truncatedAtTerm, crashesLeft, corruptionsLeft,
                   batchStart, damaged, powerLossesLeft, windowVars, repairVars, wipeVars>>

-----------------------------------------------------------------------------
(* Message handlers: i is the recipient, j the sender, m the message.      *)

\* Server i answers j's vote request (m.mterm <= currentTerm[i]).
\* durable: logOk compares with i's durable log; i grants no vote to a
\* candidate whose advertised index is below what i learned as committed
\* (the voter's floor), nor while its own verdict is TRUNCATED.
HandleRequestVoteRequest(i, j, m) ==
    LET mine  == AdvertisedLog(i)
        logOk == \/ m.mlastLogTerm > LastTerm(mine)
                 \/ /\ m.mlastLogTerm = LastTerm(mine)
                    /\ m.mlastLogIndex >= Len(mine)
        floorOk   == IsDurable /\ ~Has("no-voter-learned-floor")
                        => m.mlastLogIndex >= learnedCommit[i]
        verdictOk == /\ IsDurable /\ ~Has("truncated-member-votes") /\ ~MarkedVotes
                            => verdict[i] /= Truncated
                     /\ Has("ambiguous-withholds-vote") => verdict[i] /= Ambiguous
        grant == /\ m.mterm = currentTerm[i]
                 /\ logOk
                 /\ votedFor[i] \in {Nil, j}
                 /\ floorOk
                 /\ verdictOk
                 /\ ~Passive(i)       \* wipes: unconfirmed or lost
    IN /\ m.mterm <= currentTerm[i]
       /\ \/ grant  /\ votedFor' = [votedFor EXCEPT ![i] = j]
          \/ ~grant /\ UNCHANGED votedFor
       /\ UNCHANGED <<state, currentTerm, candidateVars, leaderVars, logVars,
                      durableVars, persisted>>
       /\ OpenWindow(i)
       /\ PostReply([mtype        |-> RequestVoteResponse,
                     mterm        |-> currentTerm[i],
                     mvoteGranted |-> grant,
                     mlog         |-> log[i],
                     msource      |-> i,
                     mdest        |-> j,
                     mambiguous   |-> grant /\ MarkedVoter(i)],
                    m)

\* Server i counts j's answer to its vote request of this term.  power
\* losses: an AMBIGUOUS voter's grant also joins votesAmbiguous[i].
HandleRequestVoteResponse(i, j, m) ==
    /\ m.mterm = currentTerm[i]
    /\ votesResponded' = [votesResponded EXCEPT ![i] = @ \cup {j}]
    /\ votesAmbiguous' = IF m.mvoteGranted /\ m.mambiguous
                         THEN [votesAmbiguous EXCEPT ![i] = @ \cup {j}]
                         ELSE votesAmbiguous
    /\ \/ /\ m.mvoteGranted
          /\ votesGranted' = [votesGranted EXCEPT ![i] = @ \cup {j}]
          /\ voterLog'     = [voterLog EXCEPT ![i] = @ @@ (j :> m.mlog)]
       \/ /\ ~m.mvoteGranted
          /\ UNCHANGED <<votesGranted, voterLog>>
    /\ Discard(m)
    /\ UNCHANGED <<serverVars, leaderVars, logVars, durableVars, windowVars>>

\* What i learns as committed from the AppendEntries request m it accepts
\* (already-done).  production: clamped to what the message proves, the
\* last index i now durably holds matching the leader (issue 10 item 5);
\* unclamped, one bad mleaderCommit fences i and raises its voter floor for
\* ever (spec learnedFrom, -bug learned-commit-unclamped).
LearnedFrom(m) ==
    IF IsProduction /\ ~Has("learned-commit-unclamped")
    THEN Min({m.mleaderCommit, m.mprevLogIndex + Len(m.mentries)})
    ELSE m.mleaderCommit

\* durable: the rule that repairs a TRUNCATED member i as it accepts m: the
\* leader's term is newer than the corruption and i now durably holds an
\* entry of that term which the leader has committed.
FenceReleases(i, m) ==
    LET c       == m.mleaderCommit
        matched == m.mprevLogIndex + Len(m.mentries)
    IN IF Has("release-at-leader-commit")
       THEN c <= matched
       ELSE /\ m.mterm > truncatedAtTerm[i]
            /\ 1 <= c /\ c <= matched
            /\ log[i][c].term = m.mterm

\* The disjuncts of raft.tla's HandleAppendEntriesRequest, one operator
\* each so that a trace's "branch" names one.  Each assumes
\* m.mterm <= currentTerm[i].
AppendEntriesLogOk(i, m) ==
    \/ m.mprevLogIndex = 0
    \/ /\ m.mprevLogIndex > 0
       /\ m.mprevLogIndex <= Len(log[i])
       /\ m.mprevLogTerm = log[i][m.mprevLogIndex].term

\* reject: stale term, or i is a follower whose log does not match.
RejectAppendEntriesRequest(i, j, m) ==
    /\ \/ m.mterm < currentTerm[i]
       \/ /\ m.mterm = currentTerm[i]
          /\ state[i] = Follower
          /\ ~AppendEntriesLogOk(i, m)
    /\ UNCHANGED <<serverVars, logVars, durableVars, staleLog, staleDurable, persisted>>
    /\ PostReply([mtype       |-> AppendEntriesResponse,
                  mterm       |-> currentTerm[i],
                  msuccess    |-> FALSE,
                  mmatchIndex |-> 0,
                  msource     |-> i,
                  mdest       |-> j],
                 m)

\* return-to-follower: a candidate hears from this term's leader.
ReturnToFollowerState(i, j, m) ==
    /\ m.mterm = currentTerm[i]
    /\ state[i] = Candidate
    /\ state' = [state EXCEPT ![i] = Follower]
    /\ UNCHANGED <<currentTerm, votedFor, logVars, messages, durableVars, windowVars>>

\* The accepting disjuncts share this guard.
AcceptsAppendEntries(i, m) ==
    /\ m.mterm = currentTerm[i]
    /\ state[i] = Follower
    /\ AppendEntriesLogOk(i, m)

\* already-done: i holds the entries; it replies success and takes the
\* commit index.  durable: only once they are durable (until a Flush(i)
\* the message waits in the bag); i learns mleaderCommit and may be
\* repaired (FenceReleases).
AlreadyDoneAppendEntriesRequest(i, j, m) ==
    LET index   == m.mprevLogIndex + 1
        matched == m.mprevLogIndex + Len(m.mentries)
    IN /\ AcceptsAppendEntries(i, m)
       /\ \/ m.mentries = <<>>
          \/ /\ m.mentries /= <<>>
             /\ Len(log[i]) >= index
             /\ log[i][index].term = m.mentries[1].term
       /\ IsDurable /\ ~Has("follower-acks-appended") => durableLen[i] >= matched
       /\ commitIndex' = [commitIndex EXCEPT ![i] = m.mcommitIndex]
       /\ IF IsDurable
          THEN /\ learnedCommit' = [learnedCommit EXCEPT ![i] = Max({@, LearnedFrom(m)})]
               /\ IF verdict[i] /= Clean /\ FenceReleases(i, m)   \* TRUNCATED or AMBIGUOUS
                  THEN /\ verdict'         = [verdict EXCEPT ![i] = Clean]
                       /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = 0]
                       /\ damaged'         = damaged \ {i}
                       /\ repairFrom'      = [repairFrom EXCEPT ![i] = {}]
                  ELSE UNCHANGED <<verdict, truncatedAtTerm, damaged, repairFrom>>
          ELSE UNCHANGED <<learnedCommit, verdict, truncatedAtTerm, damaged, repairFrom>>
       /\ UNCHANGED <<serverVars, log, durableLen, committed, crashesLeft, corruptionsLeft,
                      batchStart, powerLossesLeft, persisted, repairs, wipeVars>>
       /\ OpenWindow(i)
       /\ PostReply([mtype       |-> AppendEntriesResponse,
                     mterm       |-> currentTerm[i],
                     msuccess    |-> TRUE,
                     mmatchIndex |-> matched,
                     msource     |-> i,
                     mdest       |-> j],
                    m)

\* conflict: i's entry at the index differs; it drops its last entry (the
\* message stays).  durable: the durable prefix shrinks with the log.
ConflictAppendEntriesRequest(i, j, m) ==
    LET index == m.mprevLogIndex + 1
    IN /\ AcceptsAppendEntries(i, m)
       /\ m.mentries /= <<>>
       /\ Len(log[i]) >= index
       /\ log[i][index].term /= m.mentries[1].term
       /\ log' = [log EXCEPT ![i] = SubSeq(@, 1, Len(@) - 1)]
       /\ IF IsDurable
          THEN durableLen' = [durableLen EXCEPT ![i] = Min({@, Len(log[i]) - 1})]
          ELSE UNCHANGED durableLen
       /\ batchStart' = [batchStart EXCEPT ![i] = Min({@, durableLen'[i]})]
       /\ UNCHANGED <<serverVars, commitIndex, messages, learnedCommit, verdict,
                      truncatedAtTerm, committed, crashesLeft, corruptionsLeft,
                      damaged, powerLossesLeft, persisted, held, repairVars, wipeVars>>
       /\ IF IsProduction THEN OpenWindow(i) ELSE KeepStaleLog(i)

\* append: i's log ends at mprevLogIndex; it appends the entry (the message
\* stays, and is answered once received again).
AppendAppendEntriesRequest(i, j, m) ==
    /\ AcceptsAppendEntries(i, m)
    /\ m.mentries /= <<>>
    /\ Len(log[i]) = m.mprevLogIndex
    /\ log' = [log EXCEPT ![i] = Append(@, m.mentries[1])]
    /\ UNCHANGED <<serverVars, commitIndex, messages, durableVars, persisted, held>>
    /\ OpenWindow(i)

\* The branch names of the trace format.
AppendEntriesBranches ==
    {"reject", "return-to-follower", "already-done", "conflict", "append"}

HandleAppendEntriesRequestBranch(i, j, m, branch) ==
    /\ m.mterm <= currentTerm[i]
    /\ CASE branch = "reject"             -> RejectAppendEntriesRequest(i, j, m)
         [] branch = "return-to-follower" -> ReturnToFollowerState(i, j, m)
         [] branch = "already-done"       -> AlreadyDoneAppendEntriesRequest(i, j, m)
         [] branch = "conflict"           -> ConflictAppendEntriesRequest(i, j, m)
         [] branch = "append"             -> AppendAppendEntriesRequest(i, j, m)
    /\ UNCHANGED <<candidateVars, leaderVars>>

\* Server i handles j's AppendEntries request (m.mterm <= currentTerm[i]).
\* wipes: a passive member consumes it, nothing else changes (PassiveAppend).
HandleAppendEntriesRequest(i, j, m) ==
    IF Passive(i) THEN PassiveAppend(i, j, m)
    ELSE \E branch \in AppendEntriesBranches : HandleAppendEntriesRequestBranch(i, j, m, branch)

\* Leader i learns how far j's log matches its own (or that it does not).
HandleAppendEntriesResponse(i, j, m) ==
    /\ m.mterm = currentTerm[i]
    /\ \/ /\ m.msuccess
          /\ nextIndex'  = [nextIndex  EXCEPT ![i][j] = m.mmatchIndex + 1]
          /\ matchIndex' = [matchIndex EXCEPT ![i][j] = m.mmatchIndex]
       \/ /\ ~m.msuccess
          /\ nextIndex' = [nextIndex EXCEPT ![i][j] = Max({@ - 1, 1})]
          /\ UNCHANGED matchIndex
    /\ Discard(m)
    /\ UNCHANGED <<serverVars, candidateVars, logVars, elections, durableVars, windowVars>>

\* A message of a newer term moves i to that term as a follower first; the
\* message stays to be handled.
UpdateTerm(i, j, m) ==
    /\ m.mterm > currentTerm[i]
    /\ currentTerm' = [currentTerm EXCEPT ![i] = m.mterm]
    /\ state'       = [state       EXCEPT ![i] = Follower]
    /\ votedFor'    = [votedFor    EXCEPT ![i] = Nil]
    /\ UNCHANGED <<messages, candidateVars, leaderVars, logVars, durableVars, persisted, held>>
    /\ OpenWindow(i)

\* A response of an older term is thrown away.
DropStaleResponse(i, j, m) ==
    /\ m.mterm < currentTerm[i]
    /\ Discard(m)
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars, windowVars>>

\* The network copies a message.
DuplicateMessage(m) ==
    /\ Send(m)
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars, windowVars>>

\* The network loses a message.
DropMessage(m) ==
    /\ Discard(m)
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars, windowVars>>

-----------------------------------------------------------------------------
(* Actions of profile durable only.                                        *)

\* Group commit: one fdatasync makes all of log[i] durable.
\* A pending truncation (staleLog, truncation-not-synced only) is also
\* something to sync.  (Written as a negated conjunction: TLC would branch on
\* a disjunction and generate the successor twice when both hold.)
\* production: not while i's persistence window is open (the driver
\* reports no progress to a node it holds).
Flush(i) ==
    /\ IsDurable
    /\ ~(durableLen[i] = Len(log[i]) /\ staleLog[i] = <<>>)
    /\ ~WindowOpen(i)
    /\ durableLen'   = [durableLen EXCEPT ![i] = Len(log[i])]
    /\ batchStart'   = IF PowerLosses > 0 THEN [batchStart EXCEPT ![i] = durableLen[i]]
                       ELSE batchStart   \* the batch this flush syncs (power losses)
    /\ staleLog'     = [staleLog EXCEPT ![i] = <<>>]
    /\ staleDurable' = [staleDurable EXCEPT ![i] = 0]
    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, logVars,
                   learnedCommit, verdict, truncatedAtTerm, committed,
                   crashesLeft, corruptionsLeft, damaged, powerLossesLeft, persisted, held,
                   repairVars, wipeVars>>

\* Persist(i), production: i's window ends.  Its hard state and truncation
\* are durable, and the messages it held leave.  (With
\* truncation-not-synced a truncation stays pending until a flush.)
Persist(i) ==
    /\ IsProduction
    /\ WindowOpen(i)
    /\ persisted' = [persisted EXCEPT ![i] = HardState(i)]
    /\ messages'  = BagSum(messages, held[i])
    /\ held'      = [held EXCEPT ![i] = EmptyBag]
    /\ IF ~Has("truncation-not-synced") \/ IsPrefix(staleLog[i], log[i])
       THEN /\ staleLog'     = [staleLog EXCEPT ![i] = <<>>]
            /\ staleDurable' = [staleDurable EXCEPT ![i] = 0]
       ELSE UNCHANGED <<staleLog, staleDurable>>
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars>>

\* What a restart of i may find on its disk: a hard state, a log, and how
\* much of that log is durable (every prefix from there may survive).
\* Without the production actions: the hard state and log[i], and with
\* truncation-not-synced the stale durable log whole.  In the production
\* profile, inside a window: the old hard state with the window's base
\* (nothing of the window reached the disk), the new one with the base (the
\* hard state did, the truncation did not; left out where the log extends
\* the base), or the new one with log[i].
Image(hs, xlog, d) == [hs |-> hs, log |-> xlog, durable |-> d]

DiskImages(i) ==
    LET cur  == Image(HardState(i), log[i], durableLen[i])
        base == Image(HardState(i), staleLog[i], staleDurable[i])
        old  == Image(persisted[i], staleLog[i], staleDurable[i])
    IN IF ~IsProduction
       THEN {cur} \cup (IF staleLog[i] /= <<>>
                        THEN {Image(HardState(i), staleLog[i], Len(staleLog[i]))}
                        ELSE {})
       ELSE IF ~BasePresent(i) THEN {cur}
       ELSE (IF HardStateDirty(i) THEN {old} ELSE {})
            \cup (IF ~IsPrefix(staleLog[i], log[i]) \/ durableLen[i] > staleDurable[i]
                  THEN {base} ELSE {})
            \cup {cur}

\* What a restart brings back of learnedCommit[i]: all of it, as durable
\* hard state; in the production profile any lower value (the runtime writes
\* it only with the next hard state, on a term or vote change).
RestartLearned(i) == IF IsProduction THEN 0..learnedCommit[i] ELSE {learnedCommit[i]}

\* What every restart of i does: the volatile state is lost, the disk
\* image d comes back with k entries, learnedCommit c and commit index cc
\* (0, or a snapshot's index: CrashFromSnapshot, CorruptFromSnapshot).
RestartedTo(i, d, k, c, cc) ==
    /\ ResetVolatileTo(i, cc)
    /\ log'           = [log EXCEPT ![i] = SubSeq(d.log, 1, k)]
    /\ durableLen'    = [durableLen EXCEPT ![i] = k]
    /\ learnedCommit' = [learnedCommit EXCEPT ![i] = c]
    /\ currentTerm'   = [currentTerm EXCEPT ![i] = d.hs.currentTerm]
    /\ votedFor'      = [votedFor EXCEPT ![i] = d.hs.votedFor]
    /\ held'          = [held EXCEPT ![i] = EmptyBag]
    /\ repairFrom'    = [repairFrom EXCEPT ![i] = {}]   \* repair: volatile

Restarted(i, d, k, c) == RestartedTo(i, d, k, c, 0)

\* batchStart'[i] after a restart that keeps k entries, all vouched for
\* (Open rewrites the last batch and seals it): k, or 0 without power losses.
BatchStartAt(k) == IF PowerLosses > 0 THEN k ELSE 0

\* Crash of server i: its disk is one of DiskImages(i), of which the
\* first k entries survive, k at least the durable length: unsynced
\* writes may survive in full, in part or not at all, and what survives is
\* durable after recovery.
CrashToCommit(i, d, k, c, cc) ==
    /\ IsDurable
    /\ crashesLeft > 0
    /\ RestartedTo(i, d, k, c, cc)
    /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = d.hs.truncatedAtTerm]
    /\ verdict'         = [verdict EXCEPT ![i] =   \* AMBIGUOUS is as sticky as TRUNCATED
                               IF d.hs.truncatedAtTerm = 0 THEN Clean
                               ELSE IF @ = Ambiguous THEN Ambiguous ELSE Truncated]
    /\ batchStart'      = [batchStart EXCEPT ![i] = BatchStartAt(k)]
    /\ persisted'       = IF IsProduction THEN [persisted EXCEPT ![i] = d.hs] ELSE persisted
    /\ staleLog'        = [staleLog EXCEPT ![i] = <<>>]
    /\ staleDurable'    = [staleDurable EXCEPT ![i] = 0]
    /\ crashesLeft'     = crashesLeft - 1
    /\ UNCHANGED <<messages, elections, committed, corruptionsLeft, damaged, powerLossesLeft,
                   repairs, wipeVars>>

CrashTo(i, d, k, c) == CrashToCommit(i, d, k, c, 0)

Crash(i) ==
    \E d \in DiskImages(i) : \E k \in d.durable..Len(d.log) :
        \E c \in RestartLearned(i) : CrashTo(i, d, k, c)

\* The images a corruption may cut: without the production actions only
\* log[i] (a stale log is not durable).
CorruptImages(i) ==
    IF IsProduction THEN DiskImages(i) ELSE {Image(HardState(i), log[i], durableLen[i])}

\* A restart whose recovery finds i's log damaged inside its durable prefix:
\* the log is cut to k < d.durable entries and the verdict becomes
\* TRUNCATED.  Fewer than a quorum are ever TRUNCATED at once.
\* production: the mark is durable with the cut (wal.Open writes it
\* first); with mark-after-cut only at i's next Persist, the cut log being
\* the window's base.
\* cc is the commit index it comes back with: 0, or (CorruptFromSnapshot) a
\* snapshot's index, where the cut may also keep the whole durable prefix.
CorruptToCommit(i, d, k, c, cc) ==
    LET mark     == d.hs.currentTerm
        markLate == IsProduction /\ Has("mark-after-cut") /\ d.hs.truncatedAtTerm /= mark
    IN /\ IsDurable
       /\ corruptionsLeft > 0
       /\ Cardinality({s \in Server : verdict[s] = Truncated} \cup damaged \cup wiped \cup {i}) * 2
              <= Cardinality(Server)
       /\ Membership =>
              \A cf \in ConfigsPresent :
                  ~IsQuorumOf(cf, {s \in Server : verdict[s] = Truncated} \cup {i})
       /\ k \in (IF cc = 0 THEN 0..(d.durable - 1) ELSE 1..d.durable)
       /\ RestartedTo(i, d, k, c, cc)
       /\ verdict'         = [verdict EXCEPT ![i] = Truncated]
       /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = mark]
       /\ batchStart'      = [batchStart EXCEPT ![i] = BatchStartAt(k)]
       /\ persisted'       = CASE ~IsProduction          -> persisted
                               [] Has("mark-after-cut") -> [persisted EXCEPT ![i] = d.hs]
                               [] OTHER -> [persisted EXCEPT ![i] =
                                               [d.hs EXCEPT !.truncatedAtTerm = mark]]
       /\ staleLog'        = [staleLog EXCEPT ![i] =
                                 IF markLate THEN SubSeq(d.log, 1, k) ELSE <<>>]
       /\ staleDurable'    = [staleDurable EXCEPT ![i] = IF markLate THEN k ELSE 0]
       /\ corruptionsLeft' = corruptionsLeft - 1
       /\ UNCHANGED <<messages, elections, committed, crashesLeft, damaged, powerLossesLeft,
                      repairs, wipeVars>>

CorruptTo(i, d, k, c) == CorruptToCommit(i, d, k, c, 0)

Corrupt(i) ==
    \E d \in CorruptImages(i) : \E k \in 0..(d.durable - 1) :
        \E c \in RestartLearned(i) : CorruptTo(i, d, k, c)

\* Power losses (spec/power.go, issue 10 item 2): i reboots after a power
\* cut, and recovery finds its last batch damaged with nothing behind it
\* that vouches for it: either a write torn before its fdatasync (k =
\* durableLen[i]: nothing durable lost) or its last synced batch, possibly
\* acknowledged, damaged at rest (k = batchStart[i]), which only fewer than
\* a quorum of the members may have, damaged or TRUNCATED and not yet
\* repaired.  The bytes cannot tell the two apart: the verdict is AMBIGUOUS
\* either way (ambiguous-tail-clean: the verdict stays, CLEAN boots CLEAN).
\* Everything kept is vouched for after Open: batchStart' = k.
PowerLossTo(i, k) ==
    /\ PowerLosses > 0
    /\ powerLossesLeft > 0
    /\ \/ /\ k = durableLen[i]
          /\ UNCHANGED damaged
       \/ /\ k = batchStart[i]
          /\ k < durableLen[i]
          /\ Cardinality(damaged \cup {s \in Server : verdict[s] = Truncated} \cup {i}) * 2
                 <= Cardinality(Server)
          /\ damaged' = damaged \cup {i}
    /\ ResetVolatile(i)
    /\ log'             = [log EXCEPT ![i] = SubSeq(@, 1, k)]
    /\ durableLen'      = [durableLen EXCEPT ![i] = k]
    /\ batchStart'      = [batchStart EXCEPT ![i] = k]
    /\ IF Has("ambiguous-tail-clean")
       THEN UNCHANGED <<verdict, truncatedAtTerm>>
       ELSE /\ verdict'         = [verdict EXCEPT ![i] = IF @ = Truncated THEN Truncated
                                                       ELSE Ambiguous]
            /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = currentTerm[i]]
    /\ staleLog'        = [staleLog EXCEPT ![i] = <<>>]
    /\ powerLossesLeft' = powerLossesLeft - 1
    /\ UNCHANGED <<messages, elections, currentTerm, votedFor, learnedCommit, committed,
                   crashesLeft, corruptionsLeft, staleDurable, persisted, held,
                   repairVars, wipeVars>>

PowerLoss(i) == \E k \in {durableLen[i], batchStart[i]} : PowerLossTo(i, k)

-----------------------------------------------------------------------------
(* Actions of the production core (spec/production.go), in profile durable *)
(* with Production = TRUE.  Each generalises an action above               *)
(* (SendAppendEntries: AppendEntries; HandleAppendEntriesBatch:            *)
(* HandleAppendEntriesRequest; HandleAppendEntriesResponseMax:             *)
(* HandleAppendEntriesResponse; FlushTo: Flush) or is new (StepDown, and   *)
(* Persist above, which ends the persistence window).                      *)

\* The AppendEntries request for entries prev+1..prev+n of leader i's log.
AppendEntriesRange(i, j, prev, n) ==
    [mtype          |-> AppendEntriesRequest,
     mterm          |-> currentTerm[i],
     mprevLogIndex  |-> prev,
     mprevLogTerm   |-> IF prev > 0 THEN log[i][prev].term ELSE 0,
     mentries       |-> SubSeq(log[i], prev + 1, prev + n),
     mlog           |-> log[i],
     mcommitIndex   |-> Min({commitIndex[i], prev + n}),
     mleaderCommit  |-> commitIndex[i],
     msource        |-> i,
     mdest          |-> j]

\* Leader i sends j any range of its log: batches, pipelining, fast
\* back-off, heartbeats (n = 0).  nextIndex is not read.
SendAppendEntries(i, j, prev, n) ==
    /\ IsProduction
    /\ i /= j
    /\ state[i] = Leader
    /\ Membership => j \in Members(ConfigOf(log[i]))
    /\ prev \in 0..Len(log[i])
    /\ n \in 0..(Len(log[i]) - prev)
    /\ Send(AppendEntriesRange(i, j, prev, n))
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars, windowVars>>

\* The first position k of m.mentries whose index i holds with another
\* term, or 0.
BatchConflict(i, m) ==
    LET ks == {k \in 1..Len(m.mentries) :
                  /\ m.mprevLogIndex + k <= Len(log[i])
                  /\ log[i][m.mprevLogIndex + k].term /= m.mentries[k].term}
    IN IF ks = {} THEN 0 ELSE Min(ks)

\* Without a conflict: how many of m.mentries i already holds.
BatchPresent(i, m) == Min({Len(m.mentries), Len(log[i]) - m.mprevLogIndex})

\* conflict: truncate at the first conflicting entry (the message stays).
BatchConflictAppendEntriesRequest(i, j, m) ==
    LET keep == m.mprevLogIndex + BatchConflict(i, m) - 1
    IN /\ AcceptsAppendEntries(i, m)
       /\ BatchConflict(i, m) > 0
       /\ log'        = [log EXCEPT ![i] = SubSeq(@, 1, keep)]
       /\ durableLen' = [durableLen EXCEPT ![i] = Min({@, keep})]
       /\ UNCHANGED <<serverVars, commitIndex, messages, learnedCommit, verdict,
                      truncatedAtTerm, committed, crashesLeft, corruptionsLeft,
                      batchStart, damaged, powerLossesLeft, persisted, held,
                      repairVars, wipeVars>>
       /\ OpenWindow(i)

\* append: no conflict, the log ends inside the message's range; append
\* the missing suffix at once (the message stays).
BatchAppendAppendEntriesRequest(i, j, m) ==
    /\ AcceptsAppendEntries(i, m)
    /\ BatchConflict(i, m) = 0
    /\ BatchPresent(i, m) < Len(m.mentries)
    /\ log' = [log EXCEPT ![i] =
                  @ \o SubSeq(m.mentries, BatchPresent(i, m) + 1, Len(m.mentries))]
    /\ UNCHANGED <<serverVars, commitIndex, messages, durableVars, persisted, held>>
    /\ OpenWindow(i)

\* already-done: every entry is held, and durable; commitIndex only grows.
BatchAlreadyDoneAppendEntriesRequest(i, j, m) ==
    LET matched == m.mprevLogIndex + Len(m.mentries)
    IN /\ AcceptsAppendEntries(i, m)
       /\ BatchConflict(i, m) = 0
       /\ BatchPresent(i, m) = Len(m.mentries)
       /\ ~Has("follower-acks-appended") => durableLen[i] >= matched
       /\ commitIndex'   = [commitIndex EXCEPT ![i] = Max({@, m.mcommitIndex})]
       /\ learnedCommit' = [learnedCommit EXCEPT ![i] = Max({@, LearnedFrom(m)})]
       /\ IF verdict[i] /= Clean /\ FenceReleases(i, m)
          THEN /\ verdict'         = [verdict EXCEPT ![i] = Clean]
               /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = 0]
               /\ damaged'         = damaged \ {i}
               /\ repairFrom'      = [repairFrom EXCEPT ![i] = {}]
          ELSE UNCHANGED <<verdict, truncatedAtTerm, damaged, repairFrom>>
       /\ UNCHANGED <<serverVars, log, durableLen, committed, crashesLeft, corruptionsLeft,
                      batchStart, powerLossesLeft, persisted, repairs, wipeVars>>
       /\ OpenWindow(i)
       /\ PostReply([mtype       |-> AppendEntriesResponse,
                     mterm       |-> currentTerm[i],
                     msuccess    |-> TRUE,
                     mmatchIndex |-> matched,
                     msource     |-> i,
                     mdest       |-> j],
                    m)

\* durable-prefix: a heartbeat whose mprevLogIndex i holds (and matches)
\* beyond its durable log is answered at once with durableLen[i], a prefix
\* of the leader's log by Log Matching; it teaches nothing else.
BatchDurablePrefixAppendEntriesRequest(i, j, m) ==
    /\ AcceptsAppendEntries(i, m)
    /\ m.mentries = <<>>
    /\ ~Has("follower-acks-appended")
    /\ durableLen[i] < m.mprevLogIndex
    /\ UNCHANGED <<serverVars, logVars, durableVars, staleLog, staleDurable, persisted>>
    /\ PostReply([mtype       |-> AppendEntriesResponse,
                  mterm       |-> currentTerm[i],
                  msuccess    |-> TRUE,
                  mmatchIndex |-> durableLen[i],
                  msource     |-> i,
                  mdest       |-> j],
                 m)

\* The branches of the production handler.
BatchBranches == AppendEntriesBranches \cup {"durable-prefix"}

HandleAppendEntriesBatchBranch(i, j, m, branch) ==
    /\ IsProduction
    /\ m.mtype = AppendEntriesRequest
    /\ m.mterm <= currentTerm[i]
    /\ CASE branch = "reject"             -> RejectAppendEntriesRequest(i, j, m)
         [] branch = "return-to-follower" -> ReturnToFollowerState(i, j, m)
         [] branch = "already-done"       -> BatchAlreadyDoneAppendEntriesRequest(i, j, m)
         [] branch = "conflict"           -> BatchConflictAppendEntriesRequest(i, j, m)
         [] branch = "append"             -> BatchAppendAppendEntriesRequest(i, j, m)
         [] branch = "durable-prefix"     -> BatchDurablePrefixAppendEntriesRequest(i, j, m)
    /\ UNCHANGED <<candidateVars, leaderVars>>

\* Server i handles j's AppendEntries request of any number of entries.
HandleAppendEntriesBatch(i, j, m) ==
    \E branch \in BatchBranches : HandleAppendEntriesBatchBranch(i, j, m, branch)

\* Leader i learns j's match; matchIndex only grows, and nextIndex stays
\* above it.
HandleAppendEntriesResponseMax(i, j, m) ==
    /\ IsProduction
    /\ m.mtype = AppendEntriesResponse
    /\ m.mterm = currentTerm[i]
    /\ \/ /\ m.msuccess
          /\ matchIndex' = [matchIndex EXCEPT ![i][j] = Max({@, m.mmatchIndex})]
          /\ nextIndex'  = [nextIndex EXCEPT ![i][j] = Max({@, m.mmatchIndex + 1})]
       \/ /\ ~m.msuccess
          /\ nextIndex' = [nextIndex EXCEPT ![i][j] = Max({@ - 1, 1})]
          /\ UNCHANGED matchIndex
    /\ Discard(m)
    /\ UNCHANGED <<serverVars, candidateVars, logVars, elections, durableVars, windowVars>>

\* A partial group commit: the fdatasync covers the first k entries only,
\* durableLen[i] < k < Len(log[i]) (k = Len(log[i]) is Flush); like Flush,
\* not while i's window is open.
FlushToKeeping(i, k) ==
    /\ IsProduction
    /\ ~WindowOpen(i)
    /\ k \in (durableLen[i] + 1)..(Len(log[i]) - 1)
    /\ durableLen'   = [durableLen EXCEPT ![i] = k]
    /\ staleLog'     = [staleLog EXCEPT ![i] = <<>>]  \* a pending truncation is synced first
    /\ staleDurable' = [staleDurable EXCEPT ![i] = 0]
    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, logVars,
                   learnedCommit, verdict, truncatedAtTerm, committed,
                   crashesLeft, corruptionsLeft, batchStart, damaged, powerLossesLeft, persisted, held,
                   repairVars, wipeVars>>

FlushTo(i) == \E k \in (durableLen[i] + 1)..(Len(log[i]) - 1) : FlushToKeeping(i, k)

\* A leader or candidate becomes a follower in its own term (check-quorum,
\* a failed WAL, back to pre-vote); votedFor stays.
StepDown(i) ==
    /\ IsProduction
    /\ state[i] \in {Leader, Candidate}
    /\ state' = [state EXCEPT ![i] = Follower]
    /\ UNCHANGED <<messages, currentTerm, votedFor, candidateVars, leaderVars,
                   logVars, durableVars, windowVars>>

-----------------------------------------------------------------------------
(* Snapshots (spec/snapshot.go), production actions too.  Compaction is no *)
(* action: the log the spec keeps stays whole (a stutter step).            *)

\* The snapshot leader i offers j: the prefix of its log up to k.
SnapshotMessage(i, j, k) ==
    [mtype         |-> InstallSnapshotRequest,
     mterm         |-> currentTerm[i],
     mentries      |-> SubSeq(log[i], 1, k),
     mleaderCommit |-> commitIndex[i],
     mlog          |-> log[i],
     msource       |-> i,
     mdest         |-> j]

\* Leader i offers j a snapshot of a prefix its commit index covers.
SendSnapshot(i, j, k) ==
    /\ IsProduction
    /\ i /= j
    /\ state[i] = Leader
    /\ Membership => j \in Members(ConfigOf(log[i]))
    /\ k \in 1..commitIndex[i]
    /\ Send(SnapshotMessage(i, j, k))
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars, windowVars>>

\* Follower i, whose log lacks the snapshot's last entry and whose commit
\* index is below it, takes the prefix: committed and durable.  The offer
\* stays in the bag (the leader's driver may hand it over again); only
\* DropMessage ends it.
InstallSnapshot(i, j, m) ==
    LET k == Len(m.mentries)
    IN /\ IsProduction
       /\ m.mtype = InstallSnapshotRequest
       /\ m.mterm = currentTerm[i]
       /\ state[i] = Follower
       /\ k > commitIndex[i]
       /\ k >= 1
       /\ ~(k <= Len(log[i]) /\ log[i][k].term = m.mentries[k].term)
       /\ log'           = [log EXCEPT ![i] = m.mentries]
       /\ durableLen'    = [durableLen EXCEPT ![i] = k]
       /\ commitIndex'   = [commitIndex EXCEPT ![i] = k]
       /\ learnedCommit' = [learnedCommit EXCEPT ![i] =
                               Max({@, IF Has("learned-commit-unclamped") THEN m.mleaderCommit
                                       ELSE Min({m.mleaderCommit, k})})]
       \* The snapshot is durable: no window opens; an open one keeps the
       \* installed log as its base.
       /\ staleLog'      = [staleLog EXCEPT ![i] = IF BasePresent(i) THEN m.mentries ELSE <<>>]
       /\ staleDurable'  = [staleDurable EXCEPT ![i] = IF BasePresent(i) THEN k ELSE 0]
       /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, verdict,
                      truncatedAtTerm, committed, crashesLeft, corruptionsLeft,
                      batchStart, damaged, powerLossesLeft, persisted, held,
                      repairVars, wipeVars>>

\* Crash (and Corrupt) with the commit index back as a snapshot's index cc:
\* 1 <= cc <= Min({commitIndex[i], k}) for the k entries kept.
CrashFromSnapshot(i) ==
    /\ IsProduction
    /\ \E d \in DiskImages(i) : \E k \in d.durable..Len(d.log) :
          \E c \in RestartLearned(i) : \E cc \in 1..Min({commitIndex[i], k}) :
              CrashToCommit(i, d, k, c, cc)

\* A corruption the snapshot repairs may keep the whole durable prefix.
CorruptFromSnapshot(i) ==
    /\ IsProduction
    /\ \E d \in CorruptImages(i) : \E k \in 1..d.durable :
          \E c \in RestartLearned(i) : \E cc \in 1..Min({commitIndex[i], k}) :
              CorruptToCommit(i, d, k, c, cc)

-----------------------------------------------------------------------------
(* Repair of a TRUNCATED member from its peers, without a leader (issue 18, *)
(* spec/repair.go, spec/repairprod.go, docs/repair.md): Repair = TRUE.      *)

\* The durable variables but repair's and the wipes'.
diskVars == <<durableLen, learnedCommit, verdict, truncatedAtTerm, committed,
              crashesLeft, corruptionsLeft, batchStart, damaged, powerLossesLeft>>

\* Raft's order on logs, strict (spec moreUpToDate).
MoreUpToDate(a, b) ==
    \/ LastTerm(a) > LastTerm(b)
    \/ LastTerm(a) = LastTerm(b) /\ Len(a) > Len(b)

\* A TRUNCATED i asks peer j for its durable log, once in a term newer than
\* its corruption's (repair-ignores-term: in any term).  (The guard is a
\* negated conjunction: TLC would branch on a disjunction.)
RequestRepair(i, j) ==
    /\ Repair
    /\ i /= j
    /\ verdict[i] = Truncated
    /\ j \notin repairFrom[i]
    /\ ~(currentTerm[i] <= truncatedAtTerm[i] /\ ~Has("repair-ignores-term"))
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars,
                   staleLog, staleDurable, persisted>>
    /\ Post([mtype   |-> RepairRequest,
             mterm   |-> currentTerm[i],
             msource |-> i,
             mdest   |-> j])

\* Peer i answers j's request (m.mterm <= currentTerm[i]): a CLEAN i with its
\* term and durable log; a member that is not CLEAN says nothing.
HandleRepairRequest(i, j, m) ==
    /\ m.mtype = RepairRequest
    /\ m.mterm <= currentTerm[i]
    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, durableVars,
                   staleLog, staleDurable, persisted>>
    /\ IF verdict[i] = Clean
       THEN PostReply([mtype    |-> RepairResponse,
                       mterm    |-> currentTerm[i],
                       mentries |-> SubSeq(log[i], 1, durableLen[i]),
                       msource  |-> i,
                       mdest    |-> j],
                      m)
       ELSE /\ Discard(m)
            /\ UNCHANGED held

\* An answer i counts: i is TRUNCATED and the answer was given in a term
\* newer than its corruption's (repair-ignores-term: any term).
RepairCounts(i, m) ==
    /\ verdict[i] = Truncated
    /\ ~(m.mterm <= truncatedAtTerm[i] /\ ~Has("repair-ignores-term"))

\* The peers from release their member: the servers not counted are not a
\* quorum (repair-votes-early: any one answer) (spec repairedBy).
RepairedBy(from) ==
    IF Has("repair-votes-early") THEN from /= {}
    ELSE Cardinality(Server \ from) * 2 <= Cardinality(Server)

\* j's answer is counted, after log'[i] and durableLen'[i] are set (spec
\* countRepair): i is released once the peers counted meet every quorum.
CountRepair(i, j) ==
    LET from == repairFrom[i] \cup {j}
    IN IF ~RepairedBy(from)
       THEN /\ repairFrom' = [repairFrom EXCEPT ![i] = from]
            /\ UNCHANGED <<verdict, truncatedAtTerm, damaged, repairs>>
       ELSE /\ repairs'         = repairs \cup {[server |-> i, term |-> truncatedAtTerm[i],
                                                 log    |-> SubSeq(log'[i], 1, durableLen'[i])]}
            /\ verdict'         = [verdict EXCEPT ![i] = Clean]
            /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = 0]
            /\ damaged'         = damaged \ {i}
            /\ repairFrom'      = [repairFrom EXCEPT ![i] = {}]

\* production (spec takeRepair): i takes the range prev+1..last of the
\* answer's log P whose entry prev matches log[i] (or prev = 0), as
\* HandleAppendEntriesBatch's conflict or append disjunct would; the
\* answer stays in the bag.  A range already in log[i] is no step.
TakeRepairRange(i, m, prev, last) ==
    LET P        == m.mentries
        ks       == {k \in 1..(last - prev) :
                        /\ prev + k <= Len(log[i])
                        /\ log[i][prev + k].term /= P[prev + k].term}
        conflict == IF ks = {} THEN 0 ELSE Min(ks)
        present  == Min({last, Len(log[i])}) - prev
    IN /\ IF prev = 0 THEN TRUE
          ELSE prev <= Len(log[i]) /\ log[i][prev].term = P[prev].term
       /\ IF conflict > 0
          THEN /\ log'        = [log EXCEPT ![i] = SubSeq(@, 1, prev + conflict - 1)]
               /\ durableLen' = [durableLen EXCEPT ![i] = Min({@, prev + conflict - 1})]
          ELSE /\ present < last - prev
               /\ log'        = [log EXCEPT ![i] = @ \o SubSeq(P, prev + present + 1, last)]
               /\ UNCHANGED durableLen
       /\ UNCHANGED <<messages, verdict, truncatedAtTerm, damaged, repairVars>>
       /\ OpenWindow(i)

TakeRepair(i, m) ==
    \E prev \in 0..(Len(m.mentries) - 1) : \E last \in (prev + 1)..Len(m.mentries) :
        TakeRepairRange(i, m, prev, last)

\* The TRUNCATED member i takes in peer j's answer (m.mterm <= currentTerm[i]):
\* if it counts and its log is more up-to-date than i's durable log, i takes
\* it, durably; then it counts j.  production: the take is a step of its
\* own (TakeRepair; the answer stays), the count comes once i's durable log
\* is as up-to-date as the answer's.
HandleRepairResponse(i, j, m) ==
    LET take == MoreUpToDate(m.mentries, SubSeq(log[i], 1, durableLen[i]))
    IN /\ m.mtype = RepairResponse
       /\ m.mterm <= currentTerm[i]
       /\ UNCHANGED <<serverVars, candidateVars, leaderVars, commitIndex, learnedCommit,
                      committed, crashesLeft, corruptionsLeft, batchStart, powerLossesLeft,
                      wipeVars, persisted, held>>
       /\ IF ~RepairCounts(i, m)
          THEN /\ Discard(m)
               /\ UNCHANGED <<log, durableLen, verdict, truncatedAtTerm, damaged, repairVars,
                              staleLog, staleDurable>>
          ELSE IF take /\ IsProduction
          THEN TakeRepair(i, m)
          ELSE /\ Discard(m)
               /\ log'        = [log EXCEPT ![i] = IF take THEN m.mentries ELSE @]
               /\ durableLen' = [durableLen EXCEPT ![i] = IF take THEN Len(m.mentries) ELSE @]
               /\ CountRepair(i, j)
               /\ IF IsProduction THEN OpenWindow(i)
                  ELSE /\ staleLog' = IF take THEN [staleLog EXCEPT ![i] = <<>>] ELSE staleLog
                       /\ UNCHANGED staleDurable

-----------------------------------------------------------------------------
(* Wiped members and the confirmation of a first boot (issue 18,           *)
(* spec/wipe.go, docs/membership.md): Wipes > 0.                           *)

\* Server i's data directory is emptied and it restarts under its old id:
\* term 1, no vote, an empty log, as a first boot; its messages to itself
\* go with it.  The wiped and the TRUNCATED members, i among them, are never
\* a quorum.  Unconfirmed (wiped-votes: an ordinary member at once).
Wipe(i) ==
    /\ wipesLeft > 0
    /\ Cardinality(wiped \cup {s \in Server : verdict[s] = Truncated} \cup {i}) * 2
           <= Cardinality(Server)
    /\ messages' = [m \in {x \in DOMAIN messages : x.msource /= i \/ x.mdest /= i} |->
                       messages[m]]
    /\ ResetVolatile(i)
    /\ repairFrom'      = [repairFrom EXCEPT ![i] = {}]
    /\ currentTerm'     = [currentTerm EXCEPT ![i] = 1]
    /\ votedFor'        = [votedFor EXCEPT ![i] = Nil]
    /\ log'             = [log EXCEPT ![i] = <<>>]
    /\ staleLog'        = [staleLog EXCEPT ![i] = <<>>]
    /\ durableLen'      = [durableLen EXCEPT ![i] = 0]
    /\ learnedCommit'   = [learnedCommit EXCEPT ![i] = 0]
    /\ staleDurable'    = [staleDurable EXCEPT ![i] = 0]
    /\ verdict'         = [verdict EXCEPT ![i] = Clean]
    /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = 0]
    /\ wipesLeft'       = wipesLeft - 1
    /\ wiped'           = wiped \cup {i}
    /\ IF Has("wiped-votes")
       THEN UNCHANGED <<unconfirmed, lost, answered, known>>
       ELSE /\ unconfirmed' = unconfirmed \cup {i}
            /\ lost'        = lost \ {i}
            /\ answered'    = [k \in Server |-> IF k = i THEN {} ELSE answered[k] \ {i}]
            /\ known'       = [k \in Server |-> IF k = i THEN {} ELSE known[k] \ {i}]
    /\ UNCHANGED <<elections, committed, crashesLeft, corruptionsLeft, batchStart, damaged,
                   powerLossesLeft, persisted, held, repairs>>

\* j's answer to unconfirmed i, read at a moment of j's choosing: yes when j
\* is pristine, unconfirmed itself, or knows this incarnation of i (i
\* collects it); else no: i is lost.
AnswerFirstBoot(i, j) ==
    /\ i /= j
    /\ i \in unconfirmed
    /\ j \notin answered[i]
    /\ IF Pristine(j) \/ j \in unconfirmed \/ i \in known[j]
       THEN /\ answered' = [answered EXCEPT ![i] = @ \cup {j}]
            /\ UNCHANGED <<unconfirmed, lost>>
       ELSE /\ lost'        = lost \cup {i}
            /\ unconfirmed' = unconfirmed \ {i}
            /\ answered'    = [answered EXCEPT ![i] = {}]
    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, logVars, diskVars,
                   repairVars, wipesLeft, wiped, known, windowVars>>

\* i's first boot is confirmed once every other member said yes
\* (wipe-confirm-quorum: a quorum of the servers, i not counted).
ConfirmFirstBoot(i) ==
    /\ i \in unconfirmed
    /\ ~(/\ answered[i] /= Server \ {i}
         /\ ~(Has("wipe-confirm-quorum") /\ Cardinality(answered[i]) * 2 > Cardinality(Server)))
    /\ unconfirmed' = unconfirmed \ {i}
    /\ known'       = [known EXCEPT ![i] = answered[i]]
    /\ answered'    = [answered EXCEPT ![i] = {}]
    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, logVars, diskVars,
                   repairVars, wipesLeft, wiped, lost, windowVars>>

-----------------------------------------------------------------------------
(* Receive: every handler of a message (raft.tla's, and production's).  *)

\* production: an AppendEntries request of more than one entry is for
\* HandleAppendEntriesBatch only (raft.tla's handler looks at its first
\* entry alone).
RaftHandles(m) == ~(IsProduction /\ Len(m.mentries) > 1)

\* Server m.mdest takes message m from the network.
Receive(m) ==
    LET i == m.mdest
        j == m.msource
    IN \/ UpdateTerm(i, j, m)
       \/ /\ m.mtype = RequestVoteRequest
          /\ HandleRequestVoteRequest(i, j, m)
       \/ /\ m.mtype = RequestVoteResponse
          /\ \/ DropStaleResponse(i, j, m)
             \/ HandleRequestVoteResponse(i, j, m)
       \/ /\ m.mtype = AppendEntriesRequest
          /\ RaftHandles(m)
          /\ HandleAppendEntriesRequest(i, j, m)
       \/ /\ m.mtype = AppendEntriesResponse
          /\ \/ DropStaleResponse(i, j, m)
             \/ HandleAppendEntriesResponse(i, j, m)
       \* production: the handlers of production.go, beside raft.tla's.
       \/ /\ IsProduction
          /\ m.mtype = AppendEntriesRequest
          /\ HandleAppendEntriesBatch(i, j, m)
       \/ /\ IsProduction
          /\ m.mtype = AppendEntriesResponse
          /\ HandleAppendEntriesResponseMax(i, j, m)
       \/ /\ IsProduction
          /\ m.mtype = InstallSnapshotRequest
          /\ InstallSnapshot(i, j, m)
       \* repair (spec/repair.go): a peer's answer, and its take and count.
       \/ /\ m.mtype = RepairRequest
          /\ HandleRepairRequest(i, j, m)
       \/ /\ m.mtype = RepairResponse
          /\ HandleRepairResponse(i, j, m)

-----------------------------------------------------------------------------
(* The next-state relation *)

\* History: every log that any server had before the step.
RecordLogs == allLogs' = allLogs \cup {log[i] : i \in Server}

Next ==
    /\ \/ \E i \in Server : Restart(i)
       \/ \E i \in Server : Crash(i)
       \/ \E i \in Server : Corrupt(i)
       \/ \E i \in Server : Flush(i)
       \/ \E i \in Server : PowerLoss(i)
       \/ \E i \in Server : Wipe(i)
       \/ \E i, j \in Server : AnswerFirstBoot(i, j)
       \/ \E i \in Server : ConfirmFirstBoot(i)
       \/ \E i \in Server : Timeout(i)
       \/ \E i, j \in Server : RequestVote(i, j)
       \/ \E i \in Server : BecomeLeader(i)
       \/ \E i \in Server, v \in Value : ClientRequest(i, v)
       \/ \E i \in Server : ChangeConfig(i)
       \/ \E i \in Server : AdvanceCommitIndex(i)
       \/ \E i, j \in Server : AppendEntries(i, j)
       \/ \E i \in Server : FlushTo(i)
       \/ \E i \in Server : StepDown(i)
       \/ \E i \in Server : Persist(i)
       \/ \E i \in Server : CrashFromSnapshot(i)
       \/ \E i \in Server : CorruptFromSnapshot(i)
       \/ \E i, j \in Server : \E k \in 1..commitIndex[i] : SendSnapshot(i, j, k)
       \/ \E i, j \in Server : \E prev \in 0..Len(log[i]) :
              \E n \in 0..(Len(log[i]) - prev) : SendAppendEntries(i, j, prev, n)
       \/ \E i, j \in Server : RequestRepair(i, j)
       \/ \E m \in DOMAIN messages : Receive(m)
       \/ \E m \in DOMAIN messages : DuplicateMessage(m)
       \/ \E m \in DOMAIN messages : DropMessage(m)
    /\ RecordLogs

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants: spec/invariants.go, same names.                             *)

\* Issue 18: repair's and the wipes' variables.
TypeOKRepairWipe ==
    /\ \A i \in Server :
        /\ repairFrom[i] \subseteq Server \ {i}
        /\ repairFrom[i] /= {} => verdict[i] = Truncated
        /\ answered[i] \subseteq Server \ {i}
        /\ known[i] \subseteq Server \ {i}
    /\ \A r \in repairs : r.server \in Server
    /\ wipesLeft \in 0..Wipes
    /\ wiped \subseteq Server /\ unconfirmed \subseteq Server /\ lost \subseteq Server
    /\ unconfirmed \cap lost = {}

\* Adapted: the shape of every variable (Go's TypeOK checks the canonical
\* form of its encoding instead, which TLC does not need).
TypeOK ==
    /\ \A m \in DOMAIN messages : messages[m] \in Nat \ {0}
    /\ \A i \in Server :
        /\ currentTerm[i] \in Nat \ {0}
        /\ state[i] \in {Follower, Candidate, Leader}
        /\ votedFor[i] \in Server \cup {Nil}
        /\ commitIndex[i] \in Nat
        /\ votesGranted[i] \subseteq votesResponded[i]
        /\ votesResponded[i] \subseteq Server
        /\ durableLen[i] \in 0..Len(log[i])
        /\ learnedCommit[i] \in Nat
        /\ verdict[i] \in {Clean, Truncated, Ambiguous}
        /\ batchStart[i] \in 0..durableLen[i]
        /\ votesAmbiguous[i] \subseteq votesGranted[i]
        /\ (verdict[i] = Clean) <=> (truncatedAtTerm[i] = 0)
        /\ ~IsProduction /\ staleLog[i] /= <<>> =>
               /\ Has("truncation-not-synced")
               /\ Len(staleLog[i]) > durableLen[i]
        /\ staleDurable[i] \in 0..Len(staleLog[i])
        /\ \A m \in DOMAIN held[i] : m.msource = i /\ held[i][m] \in Nat \ {0}
    /\ crashesLeft \in Nat /\ corruptionsLeft \in Nat /\ powerLossesLeft \in Nat
    /\ damaged \subseteq Server
    /\ TypeOKRepairWipe

\* At most one leader per term.
ElectionSafety ==
    \A e1, e2 \in elections : e1.eterm = e2.eterm => e1.eleader = e2.eleader

\* Two logs that share an entry (index and term) share everything up to it,
\* over all logs ever in the system.
LogsMatch(l1, l2) ==
    \A n \in 1..Min({Len(l1), Len(l2)}) :
        l1[n].term = l2[n].term => SubSeq(l1, 1, n) = SubSeq(l2, 1, n)

LogMatching ==
    LET logs == allLogs \cup {log[i] : i \in Server}
    IN \A l1, l2 \in logs : LogsMatch(l1, l2)

\* No server's commit index reaches past its log (Go reports that under
\* both LeaderCompleteness and StateMachineSafety).
CommitWithinLog == \A i \in Server : commitIndex[i] <= Len(log[i])

\* A leader of a later term than a server's holds what that server has
\* committed.
LeaderCompleteness ==
    /\ CommitWithinLog
    /\ \A i \in Server, e \in elections :
          e.eterm > currentTerm[i] =>
              IsPrefix(SubSeq(log[i], 1, commitIndex[i]), e.elog)

\* Servers never disagree on a committed entry.
StateMachineSafety ==
    /\ CommitWithinLog
    /\ \A i, j \in Server :
          \A n \in 1..Min({commitIndex[i], commitIndex[j]}) : log[i][n] = log[j][n]

HoldsDurably(s, index, t) ==
    /\ index >= 1
    /\ durableLen[s] >= index
    /\ log[s][index].term = t

HasEntry(xlog, index, t) ==
    index >= 1 /\ Len(xlog) >= index /\ xlog[index].term = t

\* durable: every committed entry is in the durable log of a quorum, where
\* TRUNCATED members (not yet repaired) count as holders.
\* membership: a quorum of the configuration it was committed in.
CommittedIsDurable ==
    \A c \in committed :
        LET holders == {s \in Server : HoldsDurably(s, c.index, c.term)}
                           \cup {s \in Server : verdict[s] = Truncated}
                           \cup {s \in damaged : verdict[s] = Ambiguous}
                           \cup wiped   \* wipes: a wiped member lost its copy, as a TRUNCATED one
        IN IF Membership THEN IsQuorumOf(c.config, holders) ELSE holders \in Quorum

\* durable: a committed entry stays in some durable log, and every leader
\* of a later term has it.
NoAckedLoss ==
    \A c \in committed :
        /\ \E s \in Server : HoldsDurably(s, c.index, c.term)
        /\ \A e \in elections :
              e.eterm > c.cterm => HasEntry(e.elog, c.index, c.term)
        /\ \A s \in Server :
              state[s] = Leader /\ currentTerm[s] > c.cterm =>
                  HasEntry(log[s], c.index, c.term)

\* production: a snapshot offered carries committed entries only.
SnapshotCommitted ==
    \A m \in DOMAIN messages :
        m.mtype = InstallSnapshotRequest =>
            \A k \in 1..Len(m.mentries) :
                \E c \in committed : c.index = k /\ c.term = m.mentries[k].term

\* repair: a member released by repair from its peers was released with a
\* durable log that holds every entry committed in a term in which its lost
\* acknowledgments may have counted (no newer than its corruption's).
RepairCovers ==
    \A r \in repairs, c \in committed :
        c.cterm <= r.term => HasEntry(r.log, c.index, c.term)

\* membership: no two disjoint quorums decide.  Every leader was elected by
\* a quorum of its configuration's voters of which some voter held, when it
\* voted, every entry committed before the leader's term.
QuorumOverlap ==
    \A i \in Server, e \in elections :
        (/\ e.eterm > currentTerm[i]
         /\ 0 < commitIndex[i] /\ commitIndex[i] <= Len(log[i])
         /\ DOMAIN e.evoterLog /= {}) =>
            \E v \in DOMAIN e.evoterLog \cap ConfigOf(e.elog).voters :
                IsPrefix(SubSeq(log[i], 1, commitIndex[i]), e.evoterLog[v])

=============================================================================
