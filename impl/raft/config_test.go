package raft

import "testing"

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
	} {
		c := testConfig(1, NewMemoryStorage())
		tc.edit(&c)
		if _, err := NewNode(c, Boot{}); (err == nil) != tc.valid {
			t.Errorf("%s: err %v, want valid %v", tc.name, err, tc.valid)
		}
	}
}
