package server

import (
	"context"
	"slices"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/tlsauth"
	"github.com/durableraft/durableraft/impl/transport"
)

// StatusBody is /v1/status: the replica's status (the core's role, term,
// fence and why), why the node will not serve when it will not, the WAL's
// recovery and progress, the counters, and the test switches in force.
type StatusBody struct {
	ID         uint64 `json:"id"`
	ClusterID  string `json:"cluster_id"`
	Role       string `json:"role"`
	Term       uint64 `json:"term"`
	Vote       uint64 `json:"vote"`
	Leader     uint64 `json:"leader"`
	LeaderAddr string `json:"leader_addr,omitempty"`
	// Voters and Learners are the configuration in force (the latest in
	// the log, committed or not: docs/membership.md).
	Voters   []raft.NodeID `json:"voters"`
	Learners []raft.NodeID `json:"learners,omitempty"`
	// NotServing says why this node will not serve requests ("" when it
	// will): a failed WAL, a fence and its reason, no known leader.
	NotServing string `json:"not_serving,omitempty"`

	Commit        uint64 `json:"commit"`
	Applied       uint64 `json:"applied"`
	Durable       uint64 `json:"durable"`
	Last          uint64 `json:"last"`
	LearnedCommit uint64 `json:"learned_commit"`

	Verdict         string `json:"verdict"`
	Fence           string `json:"fence"`
	FenceRow        string `json:"fence_row,omitempty"`
	FenceWhy        string `json:"fence_why,omitempty"`
	TruncatedAtTerm uint64 `json:"truncated_at_term,omitempty"`
	WALFailed       bool   `json:"wal_failed"`
	HardStateLost   bool   `json:"hard_state_lost"`
	// FirstBoot: UNCONFIRMED, CONFIRMED or WIPED (firstboot.go).
	FirstBoot string `json:"first_boot"`
	Failure   string `json:"failure,omitempty"`
	Holding   bool   `json:"holding"`
	Queued    int    `json:"queued"`
	Pending   int    `json:"pending"`

	Recovery  RecoveryBody                        `json:"recovery"`
	Snapshot  SnapshotBody                        `json:"snapshot"`
	WAL       WALBody                             `json:"wal"`
	Progress  map[raft.NodeID]raft.ProgressStatus `json:"progress,omitempty"`
	KV        KVStatus                            `json:"kv"`
	Replica   map[string]uint64                   `json:"replica_stats"`
	Transport transport.StatsSnapshot             `json:"transport"`
	Peers     []transport.PeerStatus              `json:"peers"`
	Server    map[string]uint64                   `json:"server_stats"`
	Testing   TestingBody                         `json:"testing"`
	// StateCheck is the cross-replica state check (statecheck.go).
	StateCheck StateCheckBody `json:"state_check"`
	// TLS is the credentials in use (absent without TLS); Insecure says
	// the node was told to listen beyond loopback without TLS.
	TLS      *tlsauth.Status `json:"tls,omitempty"`
	Insecure bool            `json:"insecure,omitempty"`
}

// RecoveryBody is what the WAL's recovery found at this boot.
type RecoveryBody struct {
	Verdict          string `json:"verdict"`
	Case             string `json:"case"`
	Reason           string `json:"reason,omitempty"`
	FirstIndex       uint64 `json:"first_index"`
	LastIndex        uint64 `json:"last_index"`
	HardStateVerdict string `json:"hard_state_verdict"`
	FirstBoot        bool   `json:"first_boot"`
}

// SnapshotBody is the newest snapshot, the log's first index (what
// compaction left), the boot's snapshot row and the counters.
type SnapshotBody struct {
	Index      uint64            `json:"index"`
	Term       uint64            `json:"term"`
	FirstIndex uint64            `json:"first_index"`
	BootRow    string            `json:"boot_row,omitempty"`
	Stats      map[string]uint64 `json:"stats"`
}

func snapshotStats(s replica.SnapshotStats) map[string]uint64 {
	return map[string]uint64{"made": s.Made, "make_failed": s.MakeFailed, "installed": s.Installed, "compactions": s.Compactions,
		"chunks_sent": s.ChunksSent, "chunks_received": s.ChunksReceived, "chunks_refused": s.ChunksRefused, "resends": s.Resends,
		"transfers_started": s.TransfersStarted, "transfers_done": s.TransfersDone, "transfers_failed": s.TransfersFailed,
		"transfer_restarts": s.TransferRestarts, "verify_failed": s.VerifyFailed, "quarantined": s.Quarantined,
		"bytes_sent": s.BytesSent, "bytes_received": s.BytesReceived}
}

// WALBody is the WAL's progress.
type WALBody struct {
	DurableIndex uint64 `json:"durable_index"`
	DurableTerm  uint64 `json:"durable_term"`
	Synced       uint64 `json:"synced"`
	Syncs        uint64 `json:"syncs"`
	Records      uint64 `json:"records_synced"`
}

// TestingBody says which test-only switches are on (a benchmark refuses
// to run with any).
type TestingBody struct {
	LossyFS      bool   `json:"lossy_fs"`
	FailSyncFile string `json:"fail_sync_file,omitempty"`
	CoreBugs     string `json:"core_bugs,omitempty"`
	ReplicaBugs  string `json:"replica_bugs,omitempty"`
	NoPreVote    bool   `json:"no_pre_vote,omitempty"`
	DivergeAt    uint64 `json:"diverge_at,omitempty"`
}

// notServing says why st will not serve, "" when it will.
func notServing(st replica.Status) string {
	switch {
	case st.Failure != "":
		return "the WAL failed: " + st.Failure
	case st.WALFailed:
		return "the WAL failed"
	case st.StateFenced != "":
		return "fenced: STATE DIVERGED: " + st.StateFenced
	case st.Fence != raft.OutcomeEligible:
		why := "fenced: " + st.Fence.String()
		if st.FenceRow != "" {
			why += " (row " + st.FenceRow + ")"
		}
		if st.FenceWhy != "" {
			why += ": " + st.FenceWhy
		}
		return why
	case st.Lead == raft.None:
		return "no leader known"
	}
	return ""
}

func (n *Node) status(ctx context.Context) (StatusBody, error) {
	st, err := n.run.Status(ctx)
	if err != nil {
		return StatusBody{}, err
	}
	rs := n.rep.Stats()
	ws := n.w.Stats()
	b := StatusBody{
		ID: uint64(n.cfg.ID), ClusterID: n.cluster.IDHex, Role: st.Role.String(), Term: st.HardState.Term, Vote: uint64(st.HardState.Vote),
		Leader: uint64(st.Lead), NotServing: notServing(st), Voters: st.Voters, Learners: st.Learners,
		Commit: st.Commit, Applied: st.AppliedIndex, Durable: st.Durable, Last: st.Last, LearnedCommit: st.HardState.LearnedCommit,
		Verdict: st.Verdict, Fence: st.Fence.String(), FenceRow: st.FenceRow, FenceWhy: st.FenceWhy,
		TruncatedAtTerm: st.HardState.TruncatedAtTerm, WALFailed: st.WALFailed, HardStateLost: st.HardStateLost, Failure: st.Failure,
		Holding: st.Holding, Queued: st.Queued, Pending: st.Pending, FirstBoot: raft.FirstBootState(n.firstBootState.Load()).String(),
		Recovery: RecoveryBody{Verdict: n.rec.Verdict.String(), Case: n.rec.Case, Reason: n.rec.Reason, FirstIndex: n.rec.IndexFirst,
			LastIndex: n.rec.IndexLast, HardStateVerdict: n.rec.HardStateVerdict.String(), FirstBoot: n.firstBoot},
		Snapshot: SnapshotBody{Index: st.Snapshot.Index, Term: st.Snapshot.Term, FirstIndex: n.w.FirstIndex(), BootRow: st.SnapshotBoot,
			Stats: snapshotStats(st.Snapshots)},
		WAL:      WALBody{DurableIndex: st.WAL.DurableIndex, DurableTerm: st.WAL.DurableTerm, Synced: st.WAL.Synced, Syncs: ws.Syncs, Records: ws.RecordsSynced},
		Progress: st.Progress, KV: n.sm.status(),
		Replica: map[string]uint64{
			"events": rs.Events.Load(), "messages_received": rs.MessagesReceived.Load(), "messages_sent": rs.MessagesSent.Load(),
			"messages_dropped": rs.MessagesDropped.Load(), "messages_invalid": rs.MessagesInvalid.Load(),
			"records_refused": rs.RecordsRefused.Load(), "chain_mismatches": rs.ChainMismatches.Load(),
			"local_corruptions": rs.LocalCorruptions.Load(), "records_appended_shipped": rs.RecordsAppendedShipped.Load(),
			"proposals": rs.Proposals.Load(), "proposal_batches": rs.ProposalBatches.Load(), "proposals_refused": rs.ProposalsRefused.Load(), "proposals_lost": rs.ProposalsLost.Load(),
			"reads": rs.Reads.Load(), "read_rounds": rs.ReadRounds.Load(), "holds": rs.Holds.Load(),
			"truncation_syncs": rs.TruncationSyncs.Load(), "wal_failures": rs.WALFailures.Load(), "alerts": rs.Alerts.Load(),
			"leader_elections": rs.LeaderElections.Load(), "applied": rs.Applied.Load(), "votes_granted": rs.VotesGranted.Load(),
		},
		Transport: n.tr.Stats().Snapshot(), Peers: n.tr.Peers(),
		Server: map[string]uint64{
			"requests": n.stats.Requests.Load(), "writes": n.stats.Writes.Load(), "reads": n.stats.Reads.Load(),
			"stale_reads": n.stats.StaleReads.Load(), "forwarded": n.stats.Forwarded.Load(), "redirected": n.stats.Redirected.Load(),
			"bad_requests": n.stats.BadRequests.Load(), "definite_errors": n.stats.Definite.Load(), "unknown_outcomes": n.stats.Unknown.Load(),
			"idle_noops": n.stats.IdleNoops.Load(), "pipe_connections": n.stats.PipeConns.Load(), "pipe_bad_frames": n.stats.PipeBadFrames.Load(),
			"tls_handshakes_failed": n.stats.TLSHandshakesFailed.Load(), "auth_refused": n.stats.AuthRefused.Load(),
		},
		Testing: TestingBody{LossyFS: n.cfg.TestingLossyFS, FailSyncFile: n.cfg.TestingFailSyncFile, CoreBugs: n.cfg.TestingCoreBugs.String(), ReplicaBugs: n.cfg.TestingReplicaBugs.String(), NoPreVote: n.cfg.TestingNoPreVote, DivergeAt: n.cfg.TestingDivergeAt},
	}
	if st.Lead != raft.None {
		b.LeaderAddr = n.tr.ClientAddr(st.Lead)
	}
	b.StateCheck = n.stateCheckStatus()
	if n.cfg.TLS != nil {
		ts := n.cfg.TLS.Status()
		b.TLS = &ts
	}
	b.Insecure = n.cfg.TLS == nil && n.cfg.Insecure
	return b, nil
}

// Member is one entry of /v1/members.
type Member struct {
	ID         uint64 `json:"id"`
	PeerAddr   string `json:"peer_addr"`
	ClientAddr string `json:"client_addr,omitempty"`
	Self       bool   `json:"self"`
	Leader     bool   `json:"leader"`
	Connected  bool   `json:"connected"`
	Learner    bool   `json:"learner"` // a member that does not vote yet (else a voter)
}

func (n *Node) members(ctx context.Context) ([]Member, error) {
	st, err := n.run.Status(ctx)
	if err != nil {
		return nil, err
	}
	peers := map[raft.NodeID]transport.PeerStatus{}
	for _, p := range n.tr.Peers() {
		peers[p.ID] = p
	}
	var out []Member
	for _, id := range memberIDs(raft.Membership{Voters: st.Voters, Learners: st.Learners}) {
		m := Member{ID: uint64(id), PeerAddr: n.memberAddr(id), ClientAddr: n.tr.ClientAddr(id), Self: id == n.cfg.ID,
			Leader: id == st.Lead, Connected: id == n.cfg.ID || peers[id].Connected, Learner: slices.Contains(st.Learners, id)}
		out = append(out, m)
	}
	return out, nil
}
