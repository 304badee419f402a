package server

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
)

// The first-boot record (impl/raft's firstboot.go, docs/membership.md "A
// wiped member"): firstboot.json in the data directory says whether this
// directory's first boot was confirmed by the other voters. It is written
// before cluster.json at a first boot, so that a data directory that has
// a cluster.json and no firstboot.json is one made before the record
// existed (confirmed: it has been a member all along), never a wiped one
// caught between the two writes.
//
// A node that joins a running cluster (--join) is not asked to confirm
// its first boot: its peers are past theirs, so the rule would find every
// joiner wiped. It is recorded CONFIRMED; a member that joined, was
// wiped and restarted with --join under its old id is not recognised yet
// (docs/membership.md says so).

const firstBootFile = "firstboot.json"

type firstBootJSON struct {
	Incarnation string            `json:"incarnation"` // 16 hex digits
	State       string            `json:"state"`       // UNCONFIRMED, CONFIRMED or WIPED
	Known       map[string]string `json:"known,omitempty"`
	LostTo      uint64            `json:"lost_to,omitempty"`
}

func newIncarnation() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand never fails on a supported OS
		}
		if x := binary.LittleEndian.Uint64(b[:]); x != 0 {
			return x
		}
	}
}

// prepareFirstBoot writes an UNCONFIRMED record when dir has no
// cluster.json yet and the node bootstraps (not --join).
func prepareFirstBoot(dir string, join *Join) error {
	if _, err := os.Stat(filepath.Join(dir, clusterFile)); !errors.Is(err, os.ErrNotExist) {
		return err // nil: not a first boot
	}
	state := raft.FirstBootUnconfirmed
	if join != nil {
		state = raft.FirstBootConfirmed
	}
	return storeFirstBoot(dir, raft.FirstBoot{Incarnation: newIncarnation(), State: state})
}

// loadFirstBoot reads dir's record; a data directory from before the
// record is CONFIRMED (and gets one).
func loadFirstBoot(dir string) (*raft.FirstBoot, error) {
	path := filepath.Join(dir, firstBootFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		f := raft.FirstBoot{Incarnation: newIncarnation(), State: raft.FirstBootConfirmed}
		return &f, storeFirstBoot(dir, f)
	}
	if err != nil {
		return nil, err
	}
	f, err := decodeFirstBoot(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func decodeFirstBoot(b []byte) (*raft.FirstBoot, error) {
	var j firstBootJSON
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return nil, err
	}
	inc, err := strconv.ParseUint(j.Incarnation, 16, 64)
	if err != nil || inc == 0 || len(j.Incarnation) != 16 {
		return nil, fmt.Errorf("bad incarnation %q", j.Incarnation)
	}
	f := &raft.FirstBoot{Incarnation: inc, LostTo: raft.NodeID(j.LostTo)}
	for s := raft.FirstBootUnconfirmed; s <= raft.FirstBootLost; s++ {
		if s.String() == j.State {
			f.State = s
		}
	}
	if f.State == 0 {
		return nil, fmt.Errorf("bad state %q", j.State)
	}
	for id, x := range j.Known {
		n, err1 := strconv.ParseUint(id, 10, 64)
		v, err2 := strconv.ParseUint(x, 16, 64)
		if err1 != nil || err2 != nil || n == 0 {
			return nil, fmt.Errorf("bad known incarnation %q=%q", id, x)
		}
		if f.Known == nil {
			f.Known = map[raft.NodeID]uint64{}
		}
		f.Known[raft.NodeID(n)] = v
	}
	return f, nil
}

func storeFirstBoot(dir string, f raft.FirstBoot) error {
	j := firstBootJSON{Incarnation: fmt.Sprintf("%016x", f.Incarnation), State: f.State.String(), LostTo: uint64(f.LostTo)}
	for id, x := range f.Known {
		if j.Known == nil {
			j.Known = map[string]string{}
		}
		j.Known[strconv.FormatUint(uint64(id), 10)] = fmt.Sprintf("%016x", x)
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return writeFileDurably(filepath.Join(dir, firstBootFile), append(b, '\n'))
}

// firstBootChanged is replica.Config.OnFirstBoot: the record made durable,
// and said once in the log.
func (n *Node) firstBootChanged(f raft.FirstBoot) error {
	if err := storeFirstBoot(n.cfg.DataDir, f); err != nil {
		return fmt.Errorf("first boot record: %w", err)
	}
	n.firstBootState.Store(uint32(f.State))
	switch f.State {
	case raft.FirstBootConfirmed:
		n.log.Info("server: first boot confirmed by every other voter", "incarnation", fmt.Sprintf("%016x", f.Incarnation), "voters_known", len(f.Known))
	case raft.FirstBootLost:
		n.log.Error("server: WIPED: this member's data directory was wiped and it restarted under its old id; it will never vote or campaign: "+
			"remove it (raftctl members remove ID) and add a new member under a new id",
			"told_by", uint64(f.LostTo), "incarnation", fmt.Sprintf("%016x", f.Incarnation))
	}
	return nil
}

// logFirstBoot says at boot where the record stands, when it is not
// confirmed.
func logFirstBoot(log *slog.Logger, f *raft.FirstBoot) {
	switch f.State {
	case raft.FirstBootUnconfirmed:
		log.Warn("server: first boot UNCONFIRMED: no vote and no campaign until every other voter confirms that the cluster is new or knows this data directory",
			"incarnation", fmt.Sprintf("%016x", f.Incarnation))
	case raft.FirstBootLost:
		log.Error("server: WIPED (recorded): this member's data directory was wiped and it restarted under its old id; it never votes or campaigns: replace it under a new id",
			"told_by", uint64(f.LostTo))
	}
}

// ErrForceNewClusterUnconfirmed: --force-new-cluster without its
// confirmation; the error says what may be lost and how to confirm.
var ErrForceNewClusterUnconfirmed = errors.New("server: --force-new-cluster is not confirmed")

// checkForceNewCluster is the guided recovery's gate: it states what the
// recovery may lose, from what this node's WAL holds, and refuses unless
// the operator typed this cluster's and node's ids; confirmed, it logs
// the statement and what it does.
func (n *Node) checkForceNewCluster(rec *wal.Recovery) error {
	if !n.cfg.ForceNewCluster {
		return nil
	}
	want := fmt.Sprintf("%s/%d", n.cluster.IDHex, n.cfg.ID)
	others := make([]string, 0, len(n.cluster.Members))
	for _, id := range sortedIDs(n.cluster.Members) {
		if id != n.cfg.ID {
			others = append(others, strconv.FormatUint(uint64(id), 10))
		}
	}
	statement := fmt.Sprintf("FORCE NEW CLUSTER makes node %d the only voter of cluster %s and removes every other member (initial: %s; and any added since), for good: "+
		"its log (last index %d, term %d, learned commit %d, verdict %s) becomes the cluster's. MAY BE LOST: every write acknowledged by the old quorum that this log lacks "+
		"(anything past index %d another member may hold); MAY BE RESURRECTED: entries of this log never committed before (committed now). "+
		"The removed members must never be started again with their data; new members join under new ids",
		n.cfg.ID, n.cluster.IDHex, strings.Join(others, ","), rec.IndexLast, rec.HardState.Term, rec.HardState.Commit, rec.Verdict, rec.IndexLast)
	if n.cfg.ForceNewClusterConfirm != want {
		return fmt.Errorf("%w: %s. To proceed, run again with --force-new-cluster-confirm %s", ErrForceNewClusterUnconfirmed, statement, want)
	}
	n.log.Warn("server: "+statement, "confirmed", want)
	n.log.Warn("server: FORCE NEW CLUSTER: appending a configuration entry in a new term with this node the only voter; remove --force-new-cluster from the command line once it is up",
		"index", rec.IndexLast+1)
	return nil
}
