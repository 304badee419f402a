package server

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/impl/raft"
)

// Cluster is what a node writes into its data directory at its first
// boot and reads at every later one: the cluster's id and its members'
// peer addresses at that boot. --peers is read only when there is no such
// file. A node that joined a running cluster (--join) also records the
// cluster's initial voters (the configuration of an empty log), which it
// is not one of; for a bootstrapped node they are Members. Members added
// later are in the replicated address book (members.go), not here.
type Cluster struct {
	ID            uint64                 `json:"-"`
	IDHex         string                 `json:"cluster_id"`
	Members       map[raft.NodeID]string `json:"members"` // id -> peer address
	InitialVoters []raft.NodeID          `json:"initial_voters,omitempty"`
}

// voters is the cluster's initial configuration.
func (c Cluster) voters() []raft.NodeID {
	if len(c.InitialVoters) > 0 {
		return slices.Clone(c.InitialVoters)
	}
	return sortedIDs(c.Members)
}

// Joining reports whether this node joined a running cluster: it is not
// one of the initial voters.
func (c Cluster) Joining(self raft.NodeID) bool { return !slices.Contains(c.voters(), self) }

// Join is how a new node joins a running cluster (raftd --join): the
// cluster's id and initial voters, as POST /v1/members's answer to the add
// gives them (JoinInfo); its --peers are the members' current peer
// addresses, its own included.
type Join struct {
	ClusterID     uint64
	InitialVoters []raft.NodeID
}

// ParseJoin parses the cluster id (16 hex digits) and the initial voters
// ("1,2,3").
func ParseJoin(clusterID, voters string) (*Join, error) {
	id, err := strconv.ParseUint(clusterID, 16, 64)
	if err != nil || id == 0 || len(clusterID) != 16 {
		return nil, fmt.Errorf("join: cluster id %q is not 16 hex digits", clusterID)
	}
	j := &Join{ClusterID: id}
	for _, part := range strings.Split(voters, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(part), 10, 64)
		if err != nil || v == 0 {
			return nil, fmt.Errorf("join: initial voters %q: want positive ids separated by commas", voters)
		}
		if slices.Contains(j.InitialVoters, raft.NodeID(v)) {
			return nil, fmt.Errorf("join: initial voter %d twice", v)
		}
		j.InitialVoters = append(j.InitialVoters, raft.NodeID(v))
	}
	slices.Sort(j.InitialVoters)
	return j, nil
}

const clusterFile = "cluster.json"

// ParsePeers parses "1=host:port,2=host:port,...".
func ParsePeers(s string) (map[raft.NodeID]string, error) {
	out := map[raft.NodeID]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "=")
		n, err := strconv.ParseUint(id, 10, 64)
		if !ok || err != nil || n == 0 || addr == "" {
			return nil, fmt.Errorf("peers: %q is not id=host:port with a positive id", part)
		}
		if _, dup := out[raft.NodeID(n)]; dup {
			return nil, fmt.Errorf("peers: id %d twice", n)
		}
		out[raft.NodeID(n)] = addr
	}
	if len(out) == 0 {
		return nil, errors.New("peers: empty")
	}
	return out, nil
}

// FormatPeers is ParsePeers' inverse, in id order.
func FormatPeers(m map[raft.NodeID]string) string {
	ids := sortedIDs(m)
	parts := make([]string, len(ids))
	for k, id := range ids {
		parts[k] = fmt.Sprintf("%d=%s", id, m[id])
	}
	return strings.Join(parts, ",")
}

func sortedIDs[V any](m map[raft.NodeID]V) []raft.NodeID {
	ids := make([]raft.NodeID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ClusterID derives the cluster id from the initial members and a token:
// every node bootstrapped with the same --peers (and --cluster-token) gets
// the same id, and a node of another cluster, or one bootstrapped with
// another member list, is refused at the handshake.
func ClusterID(members map[raft.NodeID]string, token string) uint64 {
	sum := sha256.Sum256([]byte("durableraft cluster\x00" + token + "\x00" + FormatPeers(members)))
	id := binary.LittleEndian.Uint64(sum[:8])
	if id == 0 {
		id = 1
	}
	return id
}

// loadOrCreateCluster reads dir's cluster file, or at the first boot
// (no file) writes one from peers (and join, for a node joining a running
// cluster): atomically (a temporary file, fsync, rename, directory fsync).
// It reports whether this was the first boot.
func loadOrCreateCluster(dir string, self raft.NodeID, peers map[raft.NodeID]string, token string, join *Join) (Cluster, bool, error) {
	path := filepath.Join(dir, clusterFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		c, err := decodeCluster(b)
		if err != nil {
			return Cluster{}, false, fmt.Errorf("%s: %w", path, err)
		}
		if _, ok := c.Members[self]; !ok {
			return Cluster{}, false, fmt.Errorf("%s: node %d is not a member (%s)", path, self, FormatPeers(c.Members))
		}
		return c, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return Cluster{}, false, err
	}
	if len(peers) == 0 {
		return Cluster{}, false, fmt.Errorf("first boot of %s: --peers is required", dir)
	}
	if _, ok := peers[self]; !ok {
		return Cluster{}, false, fmt.Errorf("first boot: node %d is not in --peers (%s)", self, FormatPeers(peers))
	}
	c := Cluster{ID: ClusterID(peers, token), Members: peers}
	if join != nil {
		if slices.Contains(join.InitialVoters, self) {
			return Cluster{}, false, fmt.Errorf("join: node %d is an initial voter (%v): it bootstraps, it does not join", self, join.InitialVoters)
		}
		c.ID, c.InitialVoters = join.ClusterID, slices.Clone(join.InitialVoters)
	}
	c.IDHex = fmt.Sprintf("%016x", c.ID)
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return Cluster{}, false, err
	}
	if err := writeFileDurably(path, append(out, '\n')); err != nil {
		return Cluster{}, false, err
	}
	return c, true, nil
}

func decodeCluster(b []byte) (Cluster, error) {
	var c Cluster
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return Cluster{}, err
	}
	id, err := strconv.ParseUint(c.IDHex, 16, 64)
	if err != nil || id == 0 || len(c.IDHex) != 16 {
		return Cluster{}, fmt.Errorf("bad cluster id %q", c.IDHex)
	}
	c.ID = id
	if len(c.Members) == 0 {
		return Cluster{}, errors.New("no members")
	}
	for id, addr := range c.Members {
		if id == 0 || addr == "" {
			return Cluster{}, fmt.Errorf("bad member %d=%q", id, addr)
		}
	}
	for k, id := range c.InitialVoters {
		if id == 0 || (k > 0 && id <= c.InitialVoters[k-1]) {
			return Cluster{}, fmt.Errorf("bad initial voters %v: positive ids in increasing order", c.InitialVoters)
		}
	}
	return c, nil
}

// writeFileDurably writes path through a temporary file, an fsync, a
// rename and an fsync of the directory.
func writeFileDurably(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
