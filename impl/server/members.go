package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal"
)

// Membership changes at the server (docs/membership.md, docs/raftd.md):
// POST /v1/members asks the leader for one single-server change.
//
// The address book. A member's peer address travels with its change, in
// the replicated state: before the configuration entry that adds a
// learner, the leader commits a kv put of the reserved key
// peerKeyPrefix+id with the learner's peer address. Every member applies
// it in log order (and a snapshot carries it, as any key), so every
// member, a later leader or a node restarted from a snapshot included,
// knows the address of every member added after bootstrap, and no member
// depends on a local file another member wrote. The initial members'
// addresses stay in cluster.json. Clients cannot write keys under
// reservedKeyPrefix (refused, bad_request); they may read them.

// reservedKeyPrefix: keys the server writes, never a client.
const reservedKeyPrefix = "\x00raftd/"

// peerKeyPrefix + decimal id: a member's peer address.
const peerKeyPrefix = reservedKeyPrefix + "peer/"

func peerKey(id raft.NodeID) []byte {
	return []byte(peerKeyPrefix + strconv.FormatUint(uint64(id), 10))
}

// parsePeerKey returns the id of a peer address key.
func parsePeerKey(key []byte) (raft.NodeID, bool) {
	s, ok := strings.CutPrefix(string(key), peerKeyPrefix)
	if !ok {
		return raft.None, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 || strconv.FormatUint(id, 10) != s {
		return raft.None, false
	}
	return raft.NodeID(id), true
}

// reservedKey reports whether a client may not write key.
func reservedKey(key []byte) bool { return bytes.HasPrefix(key, []byte(reservedKeyPrefix)) }

func reservedKeyError(key []byte) *Error {
	return errorf(CodeBadRequest, "key %q: keys beginning with %q are the server's (the member address book)", key, reservedKeyPrefix)
}

// checkPeerAddr validates a peer address from outside: host:port, a port
// in 1..65535.
func checkPeerAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("peer address %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if host == "" || err != nil || p == 0 {
		return fmt.Errorf("peer address %q: want host:port with a port in 1..65535", addr)
	}
	return nil
}

// peerAddrLearned is the machine's report of a peer address key applied
// (or restored from a snapshot), on the replica's goroutine or in its
// boot: the transport accepts and reaches id from now on.
func (n *Node) peerAddrLearned(id raft.NodeID, addr string) {
	if id == n.cfg.ID || checkPeerAddr(addr) != nil {
		return
	}
	n.bookMu.Lock()
	if _, ok := n.book[id]; !ok {
		n.book[id] = addr
	}
	n.bookMu.Unlock()
	if n.tr.SetAddress(id, addr) {
		if m := n.membership.Load(); m != nil {
			n.tr.SetPeers(n.peerSet(*m))
		}
	}
}

// logBookScan reads the peer address puts of the local log (every entry
// the WAL holds, committed or not), the last per id: the boot's address
// book for the members its configuration names before it has applied
// their puts (membershipChanged). A restarted member applies nothing until
// a leader tells it the commit, and a leader added after bootstrap can do
// that only once this member can answer it, which needs its address: CI
// found the two unable to reach each other, for ever. Taken only for an id
// that a configuration in force names: the put of an id's address is
// committed before the entry that adds it is appended, so a log holding
// that entry holds the committed put before it (one put per id: the leader
// refuses an id its book has), while a put the log holds without the entry
// may be uncommitted, and a later leader may give that id another address.
func logBookScan(w *wal.WAL) (map[raft.NodeID]string, error) {
	book := map[raft.NodeID]string{}
	for lo, hi := w.FirstIndex(), w.LastIndex()+1; lo < hi; {
		es, err := w.Entries(lo, hi, 4<<20)
		if err != nil {
			return nil, fmt.Errorf("server: reading the log for peer addresses at %d: %w", lo, err)
		}
		for _, e := range es {
			if !bytes.Contains(e.Data, []byte(peerKeyPrefix)) {
				continue
			}
			if c, err := kv.DecodeCommand(e.Data); err == nil && c.Op == kv.OpPut {
				if id, ok := parsePeerKey(c.Key); ok && checkPeerAddr(string(c.Value)) == nil {
					book[id] = string(c.Value)
				}
			}
		}
		lo = es[len(es)-1].Index + 1
	}
	return book, nil
}

// peerSet is who the transport sends to under configuration m: its
// members; and while this node is neither one of them nor removed (it
// joins, and its log does not have the entry adding it yet), every node
// of the address book too, since the leader that adds it need not be an initial voter and the
// node must answer it.
func (n *Node) peerSet(m raft.Membership) []raft.NodeID {
	ids := memberIDs(m)
	if slices.Contains(ids, n.cfg.ID) || slices.Contains(m.Removed, n.cfg.ID) {
		return ids // a member; or removed: it answers nobody new
	}
	for id := range n.cluster.Members {
		ids = append(ids, id)
	}
	n.bookMu.Lock()
	for id := range n.book {
		ids = append(ids, id)
	}
	n.bookMu.Unlock()
	slices.Sort(ids)
	return slices.Compact(ids)
}

// peerAddr is id's peer address in the address book ("" if unknown).
func (n *Node) peerAddr(id raft.NodeID) string {
	n.bookMu.Lock()
	defer n.bookMu.Unlock()
	return n.book[id]
}

// inForce is the configuration in force, as the replica last reported it.
func (n *Node) inForce() raft.Membership {
	if m := n.membership.Load(); m != nil {
		return *m
	}
	return raft.Membership{Voters: n.cluster.voters()}
}

// memberIDs: the voters and learners of m, in id order.
func memberIDs(m raft.Membership) []raft.NodeID {
	ids := append(slices.Clone(m.Voters), m.Learners...)
	slices.Sort(ids)
	return ids
}

// ChangeRequest is the body of POST /v1/members.
type ChangeRequest struct {
	// Op is "add" (a new id, as a learner, with its PeerAddr), "promote"
	// (a learner that has caught up, to voter) or "remove".
	Op       string `json:"op"`
	ID       uint64 `json:"id"`
	PeerAddr string `json:"peer_addr,omitempty"`
}

var changeOps = map[string]raft.ConfChangeKind{"add": raft.ConfAddLearner, "promote": raft.ConfPromote, "remove": raft.ConfRemove}

// DecodeChange decodes a change request strictly: one JSON object of
// known fields, nothing after it, at most 4 KiB; op one of changeOps, a
// positive id, and a valid peer address exactly for "add".
func DecodeChange(b []byte) (ChangeRequest, raft.ConfChange, error) {
	if len(b) > 4<<10 {
		return ChangeRequest{}, raft.ConfChange{}, fmt.Errorf("body of %d bytes over 4 KiB", len(b))
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var cr ChangeRequest
	if err := d.Decode(&cr); err != nil {
		return cr, raft.ConfChange{}, fmt.Errorf("bad JSON: %w", err)
	}
	if d.More() {
		return cr, raft.ConfChange{}, errors.New("bad JSON: data after the object")
	}
	kind, ok := changeOps[cr.Op]
	switch {
	case !ok:
		return cr, raft.ConfChange{}, fmt.Errorf("op %q: want add, promote or remove", cr.Op)
	case cr.ID == 0:
		return cr, raft.ConfChange{}, errors.New("id 0: node ids are positive")
	case kind == raft.ConfAddLearner:
		if err := checkPeerAddr(cr.PeerAddr); err != nil {
			return cr, raft.ConfChange{}, err
		}
	case cr.PeerAddr != "":
		return cr, raft.ConfChange{}, fmt.Errorf("op %q takes no peer_addr", cr.Op)
	}
	return cr, raft.ConfChange{Kind: kind, ID: raft.NodeID(cr.ID)}, nil
}

// ChangeBody is the answer of an applied change: the configuration entry's
// index, the configuration now in force, and for an add what the new node
// needs to join (raftd --join).
type ChangeBody struct {
	Op       string    `json:"op"`
	ID       uint64    `json:"id"`
	Index    uint64    `json:"index"`
	Voters   []uint64  `json:"voters"`
	Learners []uint64  `json:"learners"`
	Join     *JoinInfo `json:"join,omitempty"`
}

// JoinInfo is what a node needs to join the cluster (raftd --join):
// the cluster id, its initial voters (the configuration of an empty log)
// and every member's peer address, the new node's included.
type JoinInfo struct {
	ClusterID     string   `json:"cluster_id"`
	InitialVoters []uint64 `json:"initial_voters"`
	Peers         string   `json:"peers"`
}

// changeRefusals: the core's typed refusals, each with its error code.
var changeRefusals = []struct {
	err  error
	code string
}{
	{raft.ErrConfigPending, CodeConfigPending},
	{raft.ErrConfigOwnTerm, CodeConfigOwnTerm},
	{raft.ErrLearnerBehind, CodeLearnerBehind},
	{raft.ErrRemovedID, CodeRemovedID},
	{raft.ErrMember, CodeChangeInvalid},
	{raft.ErrNotMember, CodeChangeInvalid},
	{raft.ErrNotLearner, CodeChangeInvalid},
	{raft.ErrLastVoter, CodeChangeInvalid},
}

// changeFailure maps a change's failure to a client error.
func changeFailure(err error) *Error {
	if errors.Is(err, replica.ErrChangeRefused) {
		for _, r := range changeRefusals {
			if errors.Is(err, r.err) {
				return errorf(r.code, "%v", err)
			}
		}
	}
	return proposeFailure(err, true)
}

// handleChange serves POST /v1/members (an admin's): a follower forwards
// it to the leader; the leader checks it against the configuration in
// force, for an add first commits the new member's peer address, then
// hands the change to the replica and answers once its entry is applied.
func (n *Node) handleChange(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		n.fail(w, errorf(CodeTooLarge, "body: %v", err))
		return
	}
	cr, ch, err := DecodeChange(body)
	if err != nil {
		n.fail(w, errorf(CodeBadRequest, "%v", err))
		return
	}
	ctx, cancel := n.requestContext(r)
	defer cancel()
	st, err := n.run.Status(ctx)
	if err != nil {
		n.fail(w, errorf(CodeBusy, "status: %v", err))
		return
	}
	if st.Role != raft.RoleLeader {
		e := &Error{Code: CodeNotLeader, Message: "not the leader", Leader: st.Lead}
		if !n.redirectOrForward(w, r, body, e) {
			n.fail(w, e)
		}
		return
	}
	res, e := n.change(ctx, cr, ch)
	who := "-"
	if a, ok := accessOf(r.Context()); ok {
		who = a.who
	}
	n.noteChange(cr, res, e, who)
	if e != nil {
		n.fail(w, e)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// change runs one change on the leader.
func (n *Node) change(ctx context.Context, cr ChangeRequest, ch raft.ConfChange) (ChangeBody, *Error) {
	if ch.Kind == raft.ConfAddLearner {
		if e := n.recordPeerAddr(ctx, ch.ID, cr.PeerAddr); e != nil {
			return ChangeBody{}, e
		}
	}
	done := make(chan replica.Result, 1)
	req := &replica.ChangeRequest{Change: ch, Done: func(r replica.Result) { done <- r }}
	if err := n.run.Submit(replica.Event{Kind: replica.EventChangeConfig, Change: req}); err != nil {
		return ChangeBody{}, proposeFailure(err, false)
	}
	var res replica.Result
	select {
	case res = <-done:
	case <-ctx.Done():
		return ChangeBody{}, errorf(CodeUnknown, "no answer within the request's time: the change may be in the log (%v); see GET /v1/members", ctx.Err())
	case <-n.runDone:
		return ChangeBody{}, errorf(CodeUnknown, "the node stopped before the answer: the change may be in the log")
	}
	if res.Err != nil {
		return ChangeBody{}, changeFailure(res.Err)
	}
	m := n.inForce()
	out := ChangeBody{Op: cr.Op, ID: cr.ID, Index: res.Index, Voters: ids64(m.Voters), Learners: ids64(m.Learners)}
	if ch.Kind == raft.ConfAddLearner {
		out.Join = n.joinInfo(m)
	}
	return out, nil
}

// recordPeerAddr commits id's peer address before its add. It refuses an
// id the address book or the configuration already has (ids are never
// reused, and an address once committed is the member's for good).
func (n *Node) recordPeerAddr(ctx context.Context, id raft.NodeID, addr string) *Error {
	m := n.inForce()
	switch {
	case slices.Contains(m.Removed, id):
		return errorf(CodeRemovedID, "node %d was removed: ids are never reused", id)
	case slices.Contains(m.Voters, id) || slices.Contains(m.Learners, id):
		return errorf(CodeChangeInvalid, "node %d is already a member", id)
	}
	if old := n.peerAddr(id); old != "" || n.cluster.Members[id] != "" {
		if old == "" {
			old = n.cluster.Members[id]
		}
		if old != addr {
			return errorf(CodeChangeInvalid, "node %d's peer address is already %s in the address book (ids are never reused)", id, old)
		}
		return nil // a retry of an add whose address is committed
	}
	_, _, e := n.write(ctx, kv.Put(peerKey(id), []byte(addr)))
	if e != nil {
		e.Message = fmt.Sprintf("committing node %d's peer address: %s", id, e.Message)
	}
	return e
}

// joinInfo is what a node needs to join the cluster of configuration m.
func (n *Node) joinInfo(m raft.Membership) *JoinInfo {
	peers := map[raft.NodeID]string{}
	for _, id := range memberIDs(m) {
		if a := n.memberAddr(id); a != "" {
			peers[id] = a
		}
	}
	return &JoinInfo{ClusterID: n.cluster.IDHex, InitialVoters: ids64(n.cluster.voters()), Peers: FormatPeers(peers)}
}

// memberAddr is id's peer address: cluster.json's, else the address book's.
func (n *Node) memberAddr(id raft.NodeID) string {
	if a, ok := n.cluster.Members[id]; ok {
		return a
	}
	return n.peerAddr(id)
}

// noteChange logs a change once (INFO if applied, WARN if not) and counts
// it by op and outcome (the error code, or "applied").
func (n *Node) noteChange(cr ChangeRequest, res ChangeBody, e *Error, who string) {
	if e != nil {
		n.metrics.changes.WithLabelValues(cr.Op, e.Code).Inc()
		n.log.Warn("server: membership change not made", "op", cr.Op, "id", cr.ID, "peer_addr", cr.PeerAddr, "code", e.Code,
			"err", e.Message, "by", who)
		return
	}
	n.metrics.changes.WithLabelValues(cr.Op, "applied").Inc()
	n.log.Info("server: membership change applied", "op", cr.Op, "id", cr.ID, "peer_addr", cr.PeerAddr, "index", res.Index,
		"voters", fmt.Sprint(res.Voters), "learners", fmt.Sprint(res.Learners), "by", who)
}

func ids64(ids []raft.NodeID) []uint64 {
	out := make([]uint64, len(ids))
	for k, id := range ids {
		out[k] = uint64(id)
	}
	return out
}
