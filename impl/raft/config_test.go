package raft

import (
	"testing"

	"github.com/durableraft/durableraft/trace"
)

type discardSink struct{}

func (discardSink) Event(trace.Event) {}

// TestConfigValidation: NewNode refuses each bad configuration with an error,
// one field at a time, and accepts the boundary just inside each limit.
func TestConfigValidation(t *testing.T) {
	ok := func(c *Config) {}
	if _, err := NewNode(testConfig(1, NewMemoryStorage()), Boot{}); err != nil {
		t.Fatalf("the base configuration: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(c *Config)
		valid bool
	}{
		{"base", ok, true},
		{"ID 0", func(c *Config) { c.ID = None }, false},
		{"ID not a voter", func(c *Config) { c.ID = 4 }, false},
		{"election tick equal to heartbeat tick", func(c *Config) { c.ElectionTick, c.HeartbeatTick = 3, 3 }, false},
		{"election tick below heartbeat tick", func(c *Config) { c.ElectionTick, c.HeartbeatTick = 2, 3 }, false},
		{"election tick one above heartbeat tick", func(c *Config) { c.ElectionTick, c.HeartbeatTick = 4, 3 }, true},
		{"no Rand", func(c *Config) { c.Rand = nil }, false},
		{"no Storage", func(c *Config) { c.Storage = nil }, false},
		{"LeaseRead without CheckQuorum", func(c *Config) { c.LeaseRead, c.CheckQuorum = true, false }, false},
		{"LeaseRead with CheckQuorum", func(c *Config) { c.LeaseRead, c.CheckQuorum = true, true }, true},
		{"repeated voter", func(c *Config) { c.Voters = []NodeID{1, 2, 2} }, false},
		{"voter 0", func(c *Config) { c.Voters = []NodeID{1, 0, 3} }, false},
		{"entries beyond the wire", func(c *Config) { c.MsgEntriesMax = WireEntriesMax + 1 }, false},
		{"entries at the wire's limit", func(c *Config) { c.MsgEntriesMax = WireEntriesMax }, true},
		{"bytes beyond the wire", func(c *Config) { c.MsgBytesMax = WireBytesMax + 1 }, false},
		{"bytes at the wire's limit", func(c *Config) { c.MsgBytesMax, c.EntryBytesMax = WireBytesMax, WireBytesMax }, true},
		{"entry above the message bound", func(c *Config) { c.MsgBytesMax, c.EntryBytesMax = 4096, 4097 }, false},
		{"entry at the message bound", func(c *Config) { c.MsgBytesMax, c.EntryBytesMax = 4096, 4096 }, true},
		{"negative entries per message", func(c *Config) { c.MsgEntriesMax = -1 }, false},
		{"negative inflight messages", func(c *Config) { c.InflightMsgsMax = -1 }, false},
		{"negative pending acks", func(c *Config) { c.PendingAcksMax = -1 }, false},
		{"one entry per message", func(c *Config) { c.MsgEntriesMax = 1 }, true},
		{"one inflight message", func(c *Config) { c.InflightMsgsMax = 1 }, true},
		{"one pending ack", func(c *Config) { c.PendingAcksMax = 1 }, true},
		{"heartbeat tick 0 after the defaults", func(c *Config) { c.HeartbeatTick = -1 }, false},
		{"heartbeat tick 1", func(c *Config) { c.ElectionTick, c.HeartbeatTick = 2, 1 }, true},
		{"joining, not among the voters", func(c *Config) { c.ID, c.Joining = 4, true }, true},
		{"joining, among the voters", func(c *Config) { c.Joining = true }, false},
		{"traced under the default names", func(c *Config) { c.Trace = discardSink{} }, true},
		{"traced, two nodes of one name", func(c *Config) { c.Trace, c.TraceNames = discardSink{}, map[NodeID]string{1: "a", 2: "a"} }, false},
		{"untraced: the names are not looked at", func(c *Config) { c.TraceNames = map[NodeID]string{1: "a", 2: "a"} }, true},
	} {
		c := testConfig(1, NewMemoryStorage())
		tc.edit(&c)
		if _, err := NewNode(c, Boot{}); (err == nil) != tc.valid {
			t.Errorf("%s: err %v, want valid %v", tc.name, err, tc.valid)
		}
	}
}
