--------------------------- MODULE TraceDurableRaft ---------------------------
(***************************************************************************)
(* Trace validation: does a trace in the trace/ format (docs/trace-format  *)
(* .md), written by spec/ or impl/, describe a behaviour of DurableRaft?   *)
(*                                                                         *)
(* TLC reads the trace with Json's ndJsonDeserialize.  Line 0 is an Init   *)
(* event whose config fixes the constants (profile, servers, values,       *)
(* crashes, corruptions, bugs).  Each later line names one action of       *)
(* DurableRaft with its parameters and choices; TLC takes that action,     *)
(* with those parameters, from every state the trace so far can be in,    *)
(* and keeps the successors whose post-state of the node agrees with every *)
(* field the line logs.  The variable l is the next line to match, so the  *)
(* states at depth d of the search are exactly those that explain lines    *)
(* 0..d-1; the trace is accepted when the search reaches depth Len(Trace)  *)
(* (the POSTCONDITION TraceMatched), i.e. when the last line was matched.  *)
(*                                                                         *)
(* The trace leaves out the history field mlog of messages: a message      *)
(* action may take any message of the bag that agrees with the logged one  *)
(* on every other field, and TLC keeps every such choice.                  *)
(*                                                                         *)
(* Mapping of trace fields to the spec (a missing optional field is not    *)
(* compared):                                                              *)
(*                                                                         *)
(*  | trace field                  | spec                                 |*)
(*  |------------------------------|--------------------------------------|*)
(*  | config.profile               | Profile                              |*)
(*  | config.servers = N           | Server = {"s1", .., "sN"}            |*)
(*  | config.names (version 2)     | Server = the set of the names        |*)
(*  | config.values = V            | Value = 1..V                         |*)
(*  | config.crashes / corruptions | Crashes / Corruptions (default 0)    |*)
(*  | config.bugs "a,b" (Go order) | Bugs = {"a", "b"}                    |*)
(*  | config.production            | Production (default FALSE)           |*)
(*  | config.powerLosses           | PowerLosses (default 0)              |*)
(*  | config.repair                | Repair (default FALSE)               |*)
(*  | config.wipes                 | Wipes (default 0)                    |*)
(*  | config.markedVotes           | MarkedVotes (default FALSE)          |*)
(*  | seq                          | l - 1                                |*)
(*  | action                       | the operator of the same name        |*)
(*  | node                         | i (m.mdest for message actions)      |*)
(*  | peer                         | j of RequestVote, AppendEntries,     |*)
(*  |                              |   SendAppendEntries, SendSnapshot,   |*)
(*  |                              |   RequestRepair, AnswerFirstBoot     |*)
(*  | msg (all fields but mlog)    | m \in DOMAIN messages, mlog ignored  |*)
(*  | msg.mprefix (runs)           | m.mentries of InstallSnapshotRequest |*)
(*  |                              |   (SendAppendEntries: the message    |*)
(*  |                              |   sent, which fixes prev and n)      |*)
(*  |                              |   and of RepairResponse              |*)
(*  | msg.mlastLogTerm, Index      | a RepairResponse logged by its tip   |*)
(*  |   (RepairResponse, impl/)    |   (no mprefix): any answer m of the  |*)
(*  |                              |   bag with LastTerm(m.mentries),     |*)
(*  |                              |   Len(m.mentries) equal to them      |*)
(*  | branch                       | the HandleAppendEntriesRequest or    |*)
(*  |                              |   HandleAppendEntriesBatch           |*)
(*  |                              |   disjunct (reject, return-to-       |*)
(*  |                              |   follower, already-done, conflict,  |*)
(*  |                              |   append, durable-prefix); any when  |*)
(*  |                              |   absent                             |*)
(*  |                              |   (HandleRepairResponse, production: |*)
(*  |                              |   conflict or append is a take)      |*)
(*  | value                        | v of ClientRequest(i, v)             |*)
(*  | cut                          | k of CrashTo / CorruptTo (the image  |*)
(*  |                              |   and learnedCommit: any that fit),  |*)
(*  |                              |   of CrashToCommit / CorruptToCommit |*)
(*  |                              |   for the FromSnapshot forms         |*)
(*  |                              |   (FlushToKeeping: any k if absent)  |*)
(*  |                              |   and of PowerLossTo                 |*)
(*  | state.currentTerm            | currentTerm'[i]                      |*)
(*  | state.state                  | state'[i]                            |*)
(*  | state.votedFor ("Nil", "sK") | votedFor'[i]                         |*)
(*  | state.log [{term, value}]    | log'[i] (version 1)                  |*)
(*  | state.logKeep, logAppend     | log'[i] = SubSeq(loggedLog[i], 1,    |*)
(*  |   [{term, values: [v..]}]    |   logKeep) \o the runs' entries      |*)
(*  |                              |   (version 2; loggedLog[i] is the    |*)
(*  |                              |   log node i logged last)            |*)
(*  | state.commitIndex            | commitIndex'[i]                      |*)
(*  | state.votesResponded [..]    | votesResponded'[i] (as a set)        |*)
(*  | state.votesGranted [..]      | votesGranted'[i] (as a set)          |*)
(*  | state.nextIndex {sK: n}      | nextIndex'[i]                        |*)
(*  | state.matchIndex {sK: n}     | matchIndex'[i]                       |*)
(*  | state.durableLen             | durableLen'[i]                       |*)
(*  | state.learnedCommit          | learnedCommit'[i]                    |*)
(*  | state.verdict                | verdict'[i] ("CLEAN", "TRUNCATED")   |*)
(*  | state.truncatedAtTerm        | truncatedAtTerm'[i]                  |*)
(*  | (not logged)                 | elections, allLogs, voterLog, mlog,  |*)
(*  |                              |   committed: rebuilt by the spec     |*)
(*                                                                         *)
(* Version 2 logs a node's log as a change since the node's previous     *)
(* line with a state; the variable loggedLog holds each node's log as it  *)
(* was logged last, so TLC rebuilds the logs itself, independently of Go. *)
(* Version 1 lines (whole logs) are read as before.  TLC's integers are   *)
(* 32-bit: traces for TLC keep their terms and indexes below 2^31.        *)
(*                                                                         *)
(* The trace file is trace.ndjson in TLC's working directory: TLC 2.20's  *)
(* standard modules have no IOEnv (that is CommunityModules' IOUtils), so *)
(* tla/tlc.sh runs TLC in a scratch directory holding a copy of the trace *)
(* under that name.                                                        *)
(***************************************************************************)
EXTENDS DurableRaft, Json, TLC, Sequences, Naturals

TraceFile == "trace.ndjson"

Trace == TLCEval(ndJsonDeserialize(TraceFile))

ASSUME Len(Trace) >= 1 /\ Trace[1].action = "Init"

Field(r, f, default) == IF f \in DOMAIN r THEN r[f] ELSE default

TraceConfig == Trace[1].config

RECURSIVE JoinNames(_)
JoinNames(seq) ==
    IF seq = <<>> THEN ""
    ELSE IF Len(seq) = 1 THEN Head(seq)
    ELSE Head(seq) \o "," \o JoinNames(Tail(seq))

\* Constants taken from line 0 (substituted for DurableRaft's in the .cfg).
TraceProfile     == TraceConfig.profile
TraceServer      == IF "names" \in DOMAIN TraceConfig
                    THEN {TraceConfig.names[k] : k \in DOMAIN TraceConfig.names}
                    ELSE {"s" \o ToString(k) : k \in 1..TraceConfig.servers}
TraceValue       == 1..TraceConfig.values
TraceCrashes     == Field(TraceConfig, "crashes", 0)
TraceCorruptions == Field(TraceConfig, "corruptions", 0)
TraceProduction  == Field(TraceConfig, "production", FALSE)
\* config.bugs lists the switches comma-separated in spec/config.go's order
\* (as Go's Bug.String writes them); an unknown name fails the CHOOSE.
TraceBugs ==
    LET written == Field(TraceConfig, "bugs", "")
        names   == BugNames \o MembershipBugSeq \o RepairBugSeq \o WipeBugSeq
    IN CHOOSE b \in SUBSET {names[k] : k \in DOMAIN names} :
           JoinNames(SelectSeq(names, LAMBDA n : n \in b)) = written
TraceMembership  == Field(TraceConfig, "membership", FALSE)
TraceInitVoters  == Field(TraceConfig, "initVoters", 0)
TracePowerLosses == Field(TraceConfig, "powerLosses", 0)
TraceRepair      == Field(TraceConfig, "repair", FALSE)
TraceWipes       == Field(TraceConfig, "wipes", 0)
TraceMarkedVotes == Field(TraceConfig, "markedVotes", FALSE)

-----------------------------------------------------------------------------

VARIABLE l          \* the index in Trace of the next line to match
VARIABLE loggedLog  \* each node's log as the trace logged it last

traceVars == <<vars, l, loggedLog>>

Event == Trace[l]

ToSet(seq) == {seq[k] : k \in DOMAIN seq}

\* The entries of a version 2 run list.
RECURSIVE RunEntries(_)
RunEntries(runs) ==
    IF runs = <<>> THEN <<>>
    ELSE LET r == Head(runs)
         IN [k \in 1..Len(r.values) |-> [term |-> r.term, value |-> r.values[k]]]
              \o RunEntries(Tail(runs))

\* The log a line's state logs for node i: whole (version 1), or as a
\* change of the node's previous logged log (version 2).
LoggedLogOf(i, s) ==
    IF "logKeep" \in DOMAIN s
    THEN SubSeq(loggedLog[i], 1, s.logKeep) \o RunEntries(Field(s, "logAppend", <<>>))
    ELSE Field(s, "log", <<>>)

\* A logged message as the spec's record: an InstallSnapshotRequest logs
\* its prefix as runs (mprefix), the spec holds it in mentries.
\* A RequestVoteResponse logs mambiguous only when true (power losses).
SpecMessage(t) ==
    CASE t.mtype = InstallSnapshotRequest ->
            [mtype |-> t.mtype, mterm |-> t.mterm, mentries |-> RunEntries(t.mprefix),
             mleaderCommit |-> t.mleaderCommit, msource |-> t.msource, mdest |-> t.mdest]
      [] t.mtype = RepairResponse ->   \* repair: the peer's durable log as runs
            [mtype |-> t.mtype, mterm |-> t.mterm, mentries |-> RunEntries(t.mprefix),
             msource |-> t.msource, mdest |-> t.mdest]
      [] t.mtype = RequestVoteResponse ->
            [mtype |-> t.mtype, mterm |-> t.mterm, mvoteGranted |-> t.mvoteGranted,
             msource |-> t.msource, mdest |-> t.mdest,
             mambiguous |-> Field(t, "mambiguous", FALSE)]
      [] OTHER -> t

\* repair: an impl trace logs a repair answer by its tip (mlastLogTerm,
\* mlastLogIndex >= 1, no mprefix): its requester is told only the tip and
\* a range (spec/tracerepair.go).
RepairTipOnly(t) ==
    t.mtype = RepairResponse /\ "mprefix" \notin DOMAIN t /\ Field(t, "mlastLogIndex", 0) > 0

\* Message m of the bag is the one the line logs: equal but for mlog (a
\* repair answer logged by its tip: every answer of that type, term,
\* source, destination and tip).
IsLoggedMessage(m) ==
    IF RepairTipOnly(Event.msg)
    THEN /\ m.mtype = RepairResponse
         /\ m.mterm = Event.msg.mterm
         /\ m.msource = Event.msg.msource
         /\ m.mdest = Event.msg.mdest
         /\ Len(m.mentries) = Event.msg.mlastLogIndex
         /\ LastTerm(m.mentries) = Event.msg.mlastLogTerm
    ELSE [f \in DOMAIN m \ {"mlog"} |-> m[f]] = SpecMessage(Event.msg)

\* The post-state of node i agrees with every field the line logs.
LoggedStateMatches(i) ==
    "state" \in DOMAIN Event =>
        LET s == Event.state
            Logs(f) == f \in DOMAIN s
        IN /\ Logs("currentTerm")     => currentTerm'[i] = s.currentTerm
           /\ Logs("state")           => state'[i] = s.state
           /\ Logs("votedFor")        => votedFor'[i] = s.votedFor
           /\ log'[i] = LoggedLogOf(i, s)
           /\ Logs("commitIndex")     => commitIndex'[i] = s.commitIndex
           /\ Logs("votesResponded")  => votesResponded'[i] = ToSet(s.votesResponded)
           /\ Logs("votesGranted")    => votesGranted'[i] = ToSet(s.votesGranted)
           /\ Logs("nextIndex")       => nextIndex'[i] = s.nextIndex
           /\ Logs("matchIndex")      => matchIndex'[i] = s.matchIndex
           /\ Logs("durableLen")      => durableLen'[i] = s.durableLen
           /\ Logs("learnedCommit")   => learnedCommit'[i] = s.learnedCommit
           /\ Logs("verdict")         => verdict'[i] = s.verdict
           /\ Logs("truncatedAtTerm") => truncatedAtTerm'[i] = s.truncatedAtTerm

MessageActions ==
    {"UpdateTerm", "HandleRequestVoteRequest", "HandleRequestVoteResponse",
     "HandleAppendEntriesRequest", "HandleAppendEntriesResponse",
     "DropStaleResponse", "DuplicateMessage", "DropMessage",
     "HandleAppendEntriesBatch", "HandleAppendEntriesResponseMax", "InstallSnapshot",
     "HandleRepairRequest", "HandleRepairResponse"}

\* The handler the line names, applied to bag message m.
MessageStep(a, m) ==
    LET i == m.mdest
        j == m.msource
    IN CASE a = "UpdateTerm" -> UpdateTerm(i, j, m)
         [] a = "HandleRequestVoteRequest" ->
                /\ m.mtype = RequestVoteRequest
                /\ HandleRequestVoteRequest(i, j, m)
         [] a = "HandleRequestVoteResponse" ->
                /\ m.mtype = RequestVoteResponse
                /\ HandleRequestVoteResponse(i, j, m)
         [] a = "HandleAppendEntriesRequest" ->
                /\ m.mtype = AppendEntriesRequest
                /\ RaftHandles(m)
                /\ IF "branch" \in DOMAIN Event
                   THEN /\ Event.branch \in AppendEntriesBranches
                        /\ HandleAppendEntriesRequestBranch(i, j, m, Event.branch)
                   ELSE HandleAppendEntriesRequest(i, j, m)
         [] a = "HandleAppendEntriesBatch" ->
                IF "branch" \in DOMAIN Event
                THEN /\ Event.branch \in BatchBranches
                     /\ HandleAppendEntriesBatchBranch(i, j, m, Event.branch)
                ELSE HandleAppendEntriesBatch(i, j, m)
         [] a = "HandleAppendEntriesResponseMax" -> HandleAppendEntriesResponseMax(i, j, m)
         [] a = "HandleAppendEntriesResponse" ->
                /\ m.mtype = AppendEntriesResponse
                /\ HandleAppendEntriesResponse(i, j, m)
         [] a = "DropStaleResponse" ->
                /\ m.mtype \in {RequestVoteResponse, AppendEntriesResponse}
                /\ DropStaleResponse(i, j, m)
         [] a = "InstallSnapshot" -> InstallSnapshot(i, j, m)
         [] a = "HandleRepairRequest" -> HandleRepairRequest(i, j, m)
         \* production: a logged branch is a take (the answer stays), conflict
         \* (the log cut) or append (the log extended); none is any step.
         [] a = "HandleRepairResponse" ->
                /\ HandleRepairResponse(i, j, m)
                /\ "branch" \in DOMAIN Event =>
                       /\ messages' = messages
                       /\ CASE Event.branch = "conflict" -> Len(log'[i]) < Len(log[i])
                            [] Event.branch = "append"   -> Len(log'[i]) > Len(log[i])
                            [] OTHER                     -> FALSE
         [] a = "DuplicateMessage" -> DuplicateMessage(m)
         [] a = "DropMessage" -> DropMessage(m)

\* The action the line names, with its parameters and choices.
LoggedStep(i) ==
    LET a == Event.action
    IN CASE a = "Restart"            -> Restart(i)
         [] a = "Timeout"            -> Timeout(i)
         [] a = "RequestVote"        -> Event.peer \in Server /\ RequestVote(i, Event.peer)
         [] a = "BecomeLeader"       -> BecomeLeader(i)
         [] a = "ClientRequest"      -> Event.value \in Value /\ ClientRequest(i, Event.value)
         [] a = "ChangeConfig"       -> ChangeConfig(i) /\ log'[i][Len(log'[i])].value = Event.value
         [] a = "AdvanceCommitIndex" -> AdvanceCommitIndex(i)
         [] a = "AppendEntries"      -> Event.peer \in Server /\ AppendEntries(i, Event.peer)
         [] a = "Flush"              -> Flush(i)
         [] a = "Crash"              -> \E d \in DiskImages(i), c \in RestartLearned(i) :
                                            /\ Event.cut \in d.durable..Len(d.log)
                                            /\ CrashTo(i, d, Event.cut, c)
         [] a = "Corrupt"            -> \E d \in CorruptImages(i), c \in RestartLearned(i) :
                                            CorruptTo(i, d, Event.cut, c)
         [] a = "Persist"            -> Persist(i)
         [] a = "PowerLoss"          -> PowerLossTo(i, Event.cut)
         [] a = "CrashFromSnapshot"  -> \E d \in DiskImages(i), c \in RestartLearned(i) :
                                            /\ IsProduction
                                            /\ Event.cut \in d.durable..Len(d.log)
                                            /\ \E cc \in 1..Min({commitIndex[i], Event.cut}) :
                                                   CrashToCommit(i, d, Event.cut, c, cc)
         [] a = "CorruptFromSnapshot" -> \E d \in CorruptImages(i), c \in RestartLearned(i) :
                                            /\ IsProduction
                                            /\ \E cc \in 1..Min({commitIndex[i], Event.cut}) :
                                                   CorruptToCommit(i, d, Event.cut, c, cc)
         [] a = "SendSnapshot"       ->
                LET sent == SpecMessage(Event.msg)
                    k    == Len(sent.mentries)
                IN /\ Event.peer \in Server
                   /\ SendSnapshot(i, Event.peer, k)
                   /\ LET m == SnapshotMessage(i, Event.peer, k)
                      IN [f \in DOMAIN m \ {"mlog"} |-> m[f]] = sent
         [] a = "SendAppendEntries"  ->
                LET prev == Event.msg.mprevLogIndex
                    n    == Len(Event.msg.mentries)
                IN /\ Event.peer \in Server
                   /\ SendAppendEntries(i, Event.peer, prev, n)
                   /\ LET sent == AppendEntriesRange(i, Event.peer, prev, n)
                      IN [f \in DOMAIN sent \ {"mlog"} |-> sent[f]] = Event.msg
         [] a = "FlushTo"            ->
                IF "cut" \in DOMAIN Event THEN FlushToKeeping(i, Event.cut) ELSE FlushTo(i)
         [] a = "StepDown"           -> StepDown(i)
         \* issue 18: repair from peers (spec/repair.go) and wipes (spec/wipe.go)
         [] a = "RequestRepair"      -> Event.peer \in Server /\ RequestRepair(i, Event.peer)
         [] a = "Wipe"               -> Wipe(i)
         [] a = "AnswerFirstBoot"    -> Event.peer \in Server /\ AnswerFirstBoot(i, Event.peer)
         [] a = "ConfirmFirstBoot"   -> ConfirmFirstBoot(i)
         [] a \in MessageActions     ->
                \E m \in DOMAIN messages :
                    /\ m.mdest = i
                    /\ IsLoggedMessage(m)
                    /\ MessageStep(a, m)
         [] OTHER -> FALSE

TraceInit ==
    /\ Init
    /\ l = 2
    /\ loggedLog = [i \in Server |-> <<>>]

TraceNext ==
    /\ l <= Len(Trace)
    /\ Event.seq = l - 1
    /\ Event.node \in Server
    /\ ("state" \in DOMAIN Event /\ "logKeep" \in DOMAIN Event.state) =>
           Event.state.logKeep <= Len(loggedLog[Event.node])
    /\ LoggedStep(Event.node)
    /\ RecordLogs
    /\ LoggedStateMatches(Event.node)
    /\ loggedLog' = IF "state" \in DOMAIN Event
                    THEN [loggedLog EXCEPT ![Event.node] = log'[Event.node]]
                    ELSE loggedLog
    /\ l' = l + 1

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

-----------------------------------------------------------------------------

\* POSTCONDITION: the search reached depth Len(Trace), so some behaviour of
\* the spec explains every line.  Otherwise print the first line none does.
TraceMatched ==
    LET d == TLCGet("stats").diameter
    IN IF d >= Len(Trace) THEN TRUE
       ELSE PrintT(<<"TraceMatched: no spec step explains line", d, Trace[d + 1]>>)
            /\ FALSE

=============================================================================
