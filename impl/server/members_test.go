package server

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
)

func TestDecodeChange(t *testing.T) {
	for _, c := range []struct {
		body string
		want raft.ConfChange
		err  string
	}{
		{`{"op":"add","id":4,"peer_addr":"127.0.0.1:7004"}`, raft.ConfChange{Kind: raft.ConfAddLearner, ID: 4}, ""},
		{`{"op":"promote","id":4}`, raft.ConfChange{Kind: raft.ConfPromote, ID: 4}, ""},
		{`{"op":"remove","id":2}`, raft.ConfChange{Kind: raft.ConfRemove, ID: 2}, ""},
		{`{"op":"add","id":4}`, raft.ConfChange{}, "peer address"},
		{`{"op":"add","id":4,"peer_addr":"nohost"}`, raft.ConfChange{}, "peer address"},
		{`{"op":"add","id":4,"peer_addr":"h:0"}`, raft.ConfChange{}, "port in 1..65535"},
		{`{"op":"add","id":4,"peer_addr":":7004"}`, raft.ConfChange{}, "port in 1..65535"},
		{`{"op":"promote","id":4,"peer_addr":"h:1"}`, raft.ConfChange{}, "takes no peer_addr"},
		{`{"op":"remove","id":0}`, raft.ConfChange{}, "id 0"},
		{`{"op":"join","id":4}`, raft.ConfChange{}, "want add, promote or remove"},
		{`{"op":"remove","id":2,"x":1}`, raft.ConfChange{}, "unknown field"},
		{`{"op":"remove","id":2}{}`, raft.ConfChange{}, "data after"},
		{`{"op":"remove","id":-1}`, raft.ConfChange{}, "bad JSON"},
		{strings.Repeat(" ", 5000), raft.ConfChange{}, "over 4 KiB"},
	} {
		_, got, err := DecodeChange([]byte(c.body))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%.40s: error %v, want one with %q", c.body, err, c.err)
		case c.err == "" && got != c.want:
			t.Errorf("%s: %+v, want %+v", c.body, got, c.want)
		}
	}
}

func FuzzDecodeChange(f *testing.F) {
	f.Add([]byte(`{"op":"add","id":4,"peer_addr":"127.0.0.1:7004"}`))
	f.Add([]byte(`{"op":"remove","id":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cr, ch, err := DecodeChange(b)
		if err != nil {
			return
		}
		if ch.ID == 0 || uint64(ch.ID) != cr.ID || (ch.Kind == raft.ConfAddLearner) != (cr.PeerAddr != "") {
			t.Fatalf("%q decoded to %+v %+v", b, cr, ch)
		}
		if ch.Kind == raft.ConfAddLearner && checkPeerAddr(cr.PeerAddr) != nil {
			t.Fatalf("%q: a bad peer address taken", b)
		}
	})
}

func TestPeerKey(t *testing.T) {
	for id := raft.NodeID(1); id < 1000; id += 37 {
		if got, ok := parsePeerKey(peerKey(id)); !ok || got != id {
			t.Fatalf("peer key of %d: %d %v", id, got, ok)
		}
	}
	for _, k := range []string{"k", peerKeyPrefix, peerKeyPrefix + "0", peerKeyPrefix + "01", peerKeyPrefix + "x", reservedKeyPrefix + "other/1"} {
		if _, ok := parsePeerKey([]byte(k)); ok {
			t.Errorf("%q parsed as a peer key", k)
		}
	}
}

// changeMembers posts a change to node at and decodes the answer (or the
// error's code).
func changeMembers(t *testing.T, tc *testCluster, at raft.NodeID, body string) (ChangeBody, string) {
	t.Helper()
	r := do(t, "POST", tc.url(at, "/v1/members"), body)
	if r.status != 200 {
		var e errorBody
		if err := json.Unmarshal([]byte(r.body), &e); err != nil {
			t.Fatalf("POST /v1/members %s: %d %s", body, r.status, r.body)
		}
		return ChangeBody{}, e.Code
	}
	var cb ChangeBody
	if err := json.Unmarshal([]byte(r.body), &cb); err != nil {
		t.Fatal(err)
	}
	return cb, ""
}

// changeEventually retries a change refused for a transient reason
// (learner_behind, config_pending, config_own_term, no leader) for up
// to 20 s.
func changeEventually(t *testing.T, tc *testCluster, body string) ChangeBody {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cb, code := changeMembers(t, tc, tc.leader(), body)
		if code == "" {
			return cb
		}
		if !slices.Contains([]string{CodeLearnerBehind, CodeConfigPending, CodeConfigOwnTerm, CodeNotLeader, CodeNoLeader}, code) ||
			time.Now().After(deadline) {
			t.Fatalf("%s: %s", body, code)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a bound
	}
}

// TestMembershipChanges: raftd's membership API on a 3-node cluster, in
// this process. Node 4 is added through a follower (forwarded to the
// leader), its address committed first; it joins with the answer's join
// values, stays a learner that never votes, catches up, and is promoted;
// every member's status, /v1/members and state check then count it. The
// refusals are the core's typed errors as codes: an id already a member,
// a learner not there, a removed id reused; a client cannot write the
// address book. A restarted member learns node 4's address from its log;
// each change is logged once and counted.
func TestMembershipChanges(t *testing.T) {
	logs := newLogCapture()
	tc := newTestCluster(t, 3, func(c *Config) {
		c.StateCheckEvery, c.StateCheckInterval, c.Logger = 20, 100*time.Millisecond, logs.logger(c.ID)
	})
	lead := tc.leader()
	follower := lead%3 + 1
	writeKeys(t, tc, 0, 50, 10)

	peer4 := listenAt(t, "127.0.0.1:0") // node 4's peer listener, held until it starts
	addr4 := peer4.Addr().String()
	tc.mu.Lock()
	tc.held[addr4] = peer4
	tc.mu.Unlock()
	cb, code := changeMembers(t, tc, follower, fmt.Sprintf(`{"op":"add","id":4,"peer_addr":%q}`, addr4))
	if code != "" {
		t.Fatalf("add 4: %s", code)
	}
	if !slices.Equal(cb.Learners, []uint64{4}) || len(cb.Voters) != 3 || cb.Join == nil || cb.Join.ClusterID != tc.nodes[lead].cluster.IDHex {
		t.Fatalf("add 4 answered %+v", cb)
	}
	if !strings.Contains(cb.Join.Peers, "4="+addr4) {
		t.Fatalf("join peers %q lack node 4", cb.Join.Peers)
	}
	if _, code := changeMembers(t, tc, lead, fmt.Sprintf(`{"op":"add","id":4,"peer_addr":%q}`, addr4)); code != CodeChangeInvalid {
		t.Fatalf("add 4 again: %q", code)
	}
	if _, code := changeMembers(t, tc, lead, `{"op":"promote","id":5}`); code != CodeChangeInvalid {
		t.Fatalf("promote 5 (no such learner): %q", code)
	}
	if r := do(t, "PUT", tc.url(lead, "/v1/kv/%00raftd%2Fpeer%2F9"), "127.0.0.1:1"); r.status != 400 || !strings.Contains(r.body, "the server's") {
		t.Fatalf("a client writing the address book: %d %s", r.status, r.body)
	}

	j, err := ParseJoin(cb.Join.ClusterID, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(cb.Join.InitialVoters)), ","), "[]"))
	if err != nil {
		t.Fatal(err)
	}
	peers, err := ParsePeers(cb.Join.Peers)
	if err != nil {
		t.Fatal(err)
	}
	delete(peers, 4)
	joinAt(t, tc, 4, addr4, peers, j)
	writeKeys(t, tc, 50, 100, 10)
	waitFor(t, func() bool {
		st := statusOf(t, tc, 4)
		return st.Applied >= statusOf(t, tc, lead).Commit && slices.Equal(st.Learners, []raft.NodeID{4})
	})
	if st := statusOf(t, tc, 4); st.Vote != 0 || st.Role != raft.RoleFollower.String() {
		t.Fatalf("the learner voted or campaigned: %+v", st)
	}
	cb = changeEventually(t, tc, `{"op":"promote","id":4}`)
	if len(cb.Voters) != 4 || len(cb.Learners) != 0 {
		t.Fatalf("promote 4 answered %+v", cb)
	}
	for _, id := range []raft.NodeID{1, 2, 3, 4} {
		waitFor(t, func() bool { return len(statusOf(t, tc, id).Voters) == 4 })
	}
	var ms []Member
	if err := json.Unmarshal([]byte(do(t, "GET", tc.url(follower, "/v1/members"), "").body), &ms); err != nil || len(ms) != 4 ||
		ms[3].ID != 4 || ms[3].PeerAddr != addr4 || ms[3].Learner {
		t.Fatalf("/v1/members: %v %+v", err, ms)
	}

	// Remove a follower other than 4, then try its id again.
	other := raft.NodeID(1)
	for other == tc.leader() || other == 4 {
		other++
	}
	changeEventually(t, tc, fmt.Sprintf(`{"op":"remove","id":%d}`, other))
	// Each change applied is logged once, by the leader that made it, and
	// counted there.
	var applied []string
	var counted float64
	for _, id := range []raft.NodeID{1, 2, 3, 4} {
		for _, l := range logs.lines(t, id, "server: membership change applied") {
			applied = append(applied, fmt.Sprintf("%v %v", l["op"], l["id"]))
		}
		fams := scrape(t, tc.url(id, "/metrics"))
		for _, op := range []string{"add", "promote", "remove"} {
			if f, ok := fams["durableraft_membership_changes_total"]; ok {
				for _, m := range f.Metric {
					if len(m.Label) == 2 && m.Label[0].GetValue() == op && m.Label[1].GetValue() == "applied" {
						counted += m.Counter.GetValue()
					}
				}
			}
		}
	}
	slices.Sort(applied)
	if want := []string{"add 4", "promote 4", fmt.Sprintf("remove %d", other)}; !slices.Equal(applied, want) || counted != 3 {
		t.Fatalf("changes logged %v (want %v), counted %v (want 3)", applied, want, counted)
	}
	tc.stop(other)
	if _, code := changeMembers(t, tc, tc.leader(), fmt.Sprintf(`{"op":"add","id":%d,"peer_addr":"127.0.0.1:1"}`, other)); code != CodeRemovedID {
		t.Fatalf("re-adding the removed %d: %q", other, code)
	}

	// A restarted member knows 4's address only from its log (cluster.json
	// does not have it), and only once it applies the entry: with 4
	// leading, it must let 4 in before it knows where 4 is (CI once found
	// it refusing 4's handshake, neither able to reach the other), then
	// reach 4 itself, and the cluster goes on.
	if r := do(t, "POST", tc.url(tc.leader(), "/v1/transfer"), `{"to":4}`); r.status != 200 {
		t.Fatalf("transfer to 4: %d %s", r.status, r.body)
	}
	waitFor(t, func() bool { return tc.leader() == 4 })
	restart := raft.NodeID(1)
	for restart == other || restart == 4 {
		restart++
	}
	tc.stop(restart)
	tc.start(restart)
	writeKeys(t, tc, 100, 150, 10)
	deadline := time.Now().Add(30 * time.Second)
	for connected := false; !connected; {
		st := statusOf(t, tc, restart)
		for _, p := range st.Peers {
			connected = connected || (p.ID == 4 && p.Connected)
		}
		if !connected && time.Now().After(deadline) {
			t.Fatalf("restarted node %d not connected to 4 within 30 s: applied %d, voters %v, peers %+v", restart, st.Applied, st.Voters, st.Peers)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a bound
	}
	// It took 4's address from its own log at boot, before applying the
	// put (it applies nothing before 4 tells it the commit, and 4 could not
	// without its replies: CI found the two stuck under -race).
	if ls := logs.lines(t, restart, "server: peer addresses taken from the local log"); len(ls) != 1 || ls[0]["ids"] != "[4]" {
		t.Fatalf("node %d's boot took %v from its log, want one line for [4]", restart, ls)
	}
	// Node 4 leads; node 5 joins: its leader is not an initial voter, so
	// the joining node must answer a node its empty log does not name.
	if tc.leader() != 4 {
		if r := do(t, "POST", tc.url(tc.leader(), "/v1/transfer"), `{"to":4}`); r.status != 200 {
			t.Fatalf("transfer to 4: %d %s", r.status, r.body)
		}
	}
	waitFor(t, func() bool { return tc.leader() == 4 })
	peer5 := listenAt(t, "127.0.0.1:0")
	addr5 := peer5.Addr().String()
	tc.mu.Lock()
	tc.held[addr5] = peer5
	tc.mu.Unlock()
	cb = changeEventually(t, tc, fmt.Sprintf(`{"op":"add","id":5,"peer_addr":%q}`, addr5))
	if peers, err = ParsePeers(cb.Join.Peers); err != nil {
		t.Fatal(err)
	}
	delete(peers, 5)
	joinAt(t, tc, 5, addr5, peers, j)
	changeEventually(t, tc, `{"op":"promote","id":5}`)
	waitFor(t, func() bool { return len(statusOf(t, tc, 5).Voters) == 4 })

	// The state check counts the configuration in force: 4 members now, the
	// removed one not asked.
	waitFor(t, func() bool {
		st := statusOf(t, tc, 4).StateCheck
		return st.Matches > 0 && !st.Diverged
	})
}

// joinAt is tc.join with a chosen peer address.
func joinAt(t *testing.T, tc *testCluster, id raft.NodeID, peerAddr string, peers map[raft.NodeID]string, j *Join) *Node {
	t.Helper()
	c := listenAt(t, "127.0.0.1:0")
	tc.mu.Lock()
	tc.dirs[id] = filepath.Join(t.TempDir(), fmt.Sprint(id))
	tc.clients[id] = c.Addr().String()
	tc.held[c.Addr().String()] = c
	tc.mu.Unlock()
	all := map[raft.NodeID]string{id: peerAddr}
	for k, v := range peers {
		all[k] = v
	}
	cfg := Config{ID: id, DataDir: tc.dirs[id], ClientAddr: tc.clients[id], PeerAddr: peerAddr, InitialPeers: all, Join: j,
		Logger: testLogger(), TickInterval: testTick, Listen: func(addr string) (net.Listener, error) { return tc.listen(addr), nil }}
	if tc.edit != nil {
		tc.edit(&cfg)
	}
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	tc.mu.Lock()
	tc.nodes[id] = n
	tc.mu.Unlock()
	return n
}

// TestRestampRefusesReservedKeys: a pipelined client's command on the
// address book is refused before it costs a log entry; other keys pass.
func TestRestampRefusesReservedKeys(t *testing.T) {
	for _, c := range []struct {
		cmd  kv.Command
		code string
	}{
		{kv.Put(peerKey(9), []byte("127.0.0.1:1")), CodeBadRequest},
		{kv.Delete([]byte(reservedKeyPrefix + "x")), CodeBadRequest},
		{kv.CASRevision(peerKey(4), 0, []byte("h:1")), CodeBadRequest},
		{kv.Put([]byte("raftd/peer/9"), []byte("v")), ""},
		{kv.Noop(), ""},
	} {
		data, err := c.cmd.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		e := restamp(data)
		if (e == nil) != (c.code == "") || (e != nil && e.Code != c.code) {
			t.Errorf("%v: %v, want %q", c.cmd, e, c.code)
		}
	}
}
