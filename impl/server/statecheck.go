package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// The cross-replica state check. Every member records its KV state hash
// at every index that is a multiple of Config.StateCheckEvery (indexes the
// logs agree on: committed entries are the same everywhere), and every
// member asks the others for theirs at its newest such index. A majority
// of the members of the configuration in force (voters and learners)
// reporting one hash decides: a member whose own hash
// differs from a majority's fences itself from voting and serving, loudly;
// the others log the odd member. A report that failed, timed out, was
// missing or was for another index never counts as a match (etcd's check
// once passed because the hash request itself failed): without a
// majority of equal hashes the check is inconclusive and decides nothing.
// A round decided without some members' reports (down, or behind: no hash
// at that index yet) asks them again for that index on each later tick
// until they answer or a newer checkpoint is there: a member that diverged
// and lags is still reported by the others, even when no write follows.

// hashReport is one member's answer for one index.
type hashReport struct {
	id   raft.NodeID
	hash uint64
	ok   bool
	err  string // why !ok
}

// checkOutcome is what one round decided.
type checkOutcome uint8

const (
	checkMatch        checkOutcome = iota + 1 // a majority has my hash
	checkOdd                                  // a majority has another hash: I diverged
	checkInconclusive                         // no majority of equal hashes (failed or missing reports)
)

var checkOutcomeNames = map[checkOutcome]string{checkMatch: "match", checkOdd: "diverged", checkInconclusive: "inconclusive"}

func (o checkOutcome) String() string { return checkOutcomeNames[o] }

// decideState decides a round: own is this member's hash, reports the
// others' (failed ones included), members the cluster's size. It returns
// the outcome, the majority's hash, and the members whose successful
// report differs from the majority's.
func decideState(own uint64, reports []hashReport, members int) (checkOutcome, uint64, []raft.NodeID) {
	quorum := members/2 + 1
	count := map[uint64]int{own: 1}
	for _, r := range reports {
		if r.ok {
			count[r.hash]++
		}
	}
	majority, found := own, count[own] >= quorum
	if !found {
		for h, c := range count {
			if c >= quorum {
				majority, found = h, true
			}
		}
	}
	if !found {
		return checkInconclusive, 0, nil
	}
	var odd []raft.NodeID
	for _, r := range reports {
		if r.ok && r.hash != majority {
			odd = append(odd, r.id)
		}
	}
	if majority != own {
		return checkOdd, majority, odd
	}
	return checkMatch, majority, odd
}

// stateCheck is the checker's state.
type stateCheck struct {
	mu      sync.Mutex
	last    uint64 // the last index decided (match or diverged)
	outcome checkOutcome
	// majority is the hash a majority had at last; missing the members
	// whose report for last was not ok (asked again: checkMissing).
	majority uint64
	missing  []raft.NodeID
	diverged atomic.Bool
	why      string
	rounds   map[checkOutcome]*atomic.Uint64
}

func newStateCheck() *stateCheck {
	return &stateCheck{rounds: map[checkOutcome]*atomic.Uint64{checkMatch: {}, checkOdd: {}, checkInconclusive: {}}}
}

// StateCheckBody is the state check's part of /v1/status.
type StateCheckBody struct {
	Every        uint64 `json:"every"`
	LastIndex    uint64 `json:"last_index"`
	Outcome      string `json:"outcome,omitempty"`
	Diverged     bool   `json:"diverged"`
	Why          string `json:"why,omitempty"`
	Matches      uint64 `json:"matches"`
	Inconclusive uint64 `json:"inconclusive"`
}

func (n *Node) stateCheckStatus() StateCheckBody {
	c := n.check
	c.mu.Lock()
	defer c.mu.Unlock()
	return StateCheckBody{Every: n.cfg.StateCheckEvery, LastIndex: c.last, Outcome: c.outcome.String(), Diverged: c.diverged.Load(),
		Why: c.why, Matches: c.rounds[checkMatch].Load(), Inconclusive: c.rounds[checkInconclusive].Load()}
}

// stateChecks runs a round every StateCheckInterval while the node serves.
func (n *Node) stateChecks() {
	tick := time.NewTicker(n.cfg.StateCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
		if !n.check.diverged.Load() {
			n.checkRound()
		}
	}
}

// checkRound checks the newest checkpoint not decided yet.
func (n *Node) checkRound() {
	cp := n.sm.lastCheckpoint()
	n.check.mu.Lock()
	last, missing := n.check.last, n.check.missing
	n.check.mu.Unlock()
	if cp.index == 0 || cp.index < last {
		return
	}
	if cp.index == last {
		n.checkMissing(last, missing)
		return
	}
	reports := n.collectReports(cp.index, memberIDs(n.inForce()))
	outcome, majority, odd := decideState(cp.hash, reports, len(memberIDs(n.inForce())))
	n.check.rounds[outcome].Add(1)
	if outcome == checkInconclusive {
		n.log.Debug("server: state check inconclusive", "index", cp.index, "reports", fmt.Sprint(reports))
		return
	}
	n.check.mu.Lock()
	n.check.last, n.check.outcome, n.check.majority, n.check.missing = cp.index, outcome, majority, notOK(reports)
	n.check.mu.Unlock()
	n.logOdd(odd, cp.index, majority)
	if outcome == checkOdd {
		why := fmt.Sprintf("my KV state hash at index %d is %s, a majority's is %s", cp.index, hex64(cp.hash), hex64(majority))
		n.check.mu.Lock()
		n.check.why = why
		n.check.mu.Unlock()
		n.check.diverged.Store(true)
		n.log.Error("server: STATE DIVERGED: fenced from voting and serving until restarted (the restart rebuilds the state from the log)",
			"index", cp.index, "hash", hex64(cp.hash), "majority_hash", hex64(majority))
		_ = n.run.Submit(replica.Event{Kind: replica.EventFenceState, Reason: why})
	}
}

// checkMissing asks the members whose report for the decided index was
// missing again, and logs those that now answer with another hash than the
// majority's; those still missing are asked on the next tick.
func (n *Node) checkMissing(index uint64, missing []raft.NodeID) {
	if len(missing) == 0 {
		return
	}
	reports := n.collectReports(index, missing)
	n.check.mu.Lock()
	if n.check.last != index {
		n.check.mu.Unlock()
		return
	}
	majority := n.check.majority
	n.check.missing = notOK(reports)
	n.check.mu.Unlock()
	var odd []raft.NodeID
	for _, r := range reports {
		if r.ok && r.hash != majority {
			odd = append(odd, r.id)
		}
	}
	n.logOdd(odd, index, majority)
}

func (n *Node) logOdd(odd []raft.NodeID, index, majority uint64) {
	for _, id := range odd {
		n.log.Error("server: STATE CHECK: a member's state differs from the majority's", "member", uint64(id), "index", index,
			"majority_hash", hex64(majority))
	}
}

// notOK is the ids of the reports that failed, sorted.
func notOK(reports []hashReport) []raft.NodeID {
	var ids []raft.NodeID
	for _, r := range reports {
		if !r.ok {
			ids = append(ids, r.id)
		}
	}
	slices.Sort(ids)
	return ids
}

// collectReports asks each of ids but this node for its hash at index.
func (n *Node) collectReports(index uint64, ids []raft.NodeID) []hashReport {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var out []hashReport
	for _, id := range ids {
		if id == n.cfg.ID {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := n.askHash(id, index)
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// askHash asks member id for its hash at index; any failure is a report
// that is not ok.
func (n *Node) askHash(id raft.NodeID, index uint64) hashReport {
	r := hashReport{id: id}
	addr := n.tr.ClientAddr(id)
	if addr == "" {
		r.err = "its client address is not known yet"
		return r
	}
	ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", n.scheme()+"://"+addr+"/v1/statehash?index="+strconv.FormatUint(index, 10), nil)
	if err != nil {
		r.err = err.Error()
		return r
	}
	// As a member passing on a reader's request (with TLS, judged by the
	// forwarder's certificate).
	req.Header.Set(headerForwarded, strconv.FormatUint(uint64(n.cfg.ID), 10))
	req.Header.Set(headerClient, "state-check")
	req.Header.Set(headerClientRole, "read")
	resp, err := n.fwd.Do(req)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer resp.Body.Close()
	var body stateHashBody
	switch {
	case resp.StatusCode != http.StatusOK:
		r.err = "HTTP " + resp.Status
	case json.NewDecoder(resp.Body).Decode(&body) != nil:
		r.err = "the answer does not decode"
	case body.Index != index:
		r.err = fmt.Sprintf("an answer for index %d", body.Index)
	default:
		h, err := strconv.ParseUint(body.Hash, 16, 64)
		if err != nil || len(body.Hash) != 16 {
			r.err = "a hash that does not parse"
			return r
		}
		r.hash, r.ok = h, true
	}
	return r
}

// stateHashBody is GET /v1/statehash?index=N.
type stateHashBody struct {
	Index uint64 `json:"index"`
	Hash  string `json:"hash"`
}

func (n *Node) handleStateHash(w http.ResponseWriter, r *http.Request) {
	index, err := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	if err != nil || index == 0 {
		n.fail(w, errorf(CodeBadRequest, "index: a positive integer"))
		return
	}
	h, ok := n.sm.checkpointAt(index)
	if !ok {
		n.fail(w, errorf(CodeNotFound, "no state hash recorded at index %d (every %d; the last %d kept)", index, n.cfg.StateCheckEvery, checkpointsMax))
		return
	}
	writeJSON(w, http.StatusOK, stateHashBody{Index: index, Hash: hex64(h)})
}
