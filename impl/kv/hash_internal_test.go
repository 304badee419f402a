package kv

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// For random states: a copy of the state in which one key's value (one
// byte) or revision differs, or one key is missing, hashes differently,
// while its own incremental and from-scratch hashes agree.
func TestHashDiffersOnOneKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := NewStore(Options{})
		n := rapid.IntRange(1, 30).Draw(t, "keys")
		for i := range n {
			key := []byte{byte('a' + i%26), byte(i)}
			value := rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "value")
			st.ApplyCommand(st.AppliedIndex()+1, 1, Put(key, value))
			if rapid.Bool().Draw(t, "gap") {
				st.ApplyCommand(st.AppliedIndex()+1, 1, Noop())
			}
		}
		var snap bytes.Buffer
		if err := st.Snapshot(&snap); err != nil {
			t.Fatal(err)
		}
		other := NewStore(Options{})
		if err := other.Restore(&snap); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, p := range other.sortedItems() {
			keys = append(keys, p.key)
		}
		key := rapid.SampledFrom(keys).Draw(t, "key")
		it := other.items[key]
		value, rev := bytes.Clone(it.value), it.revision
		switch rapid.IntRange(0, 2).Draw(t, "change") {
		case 0:
			if len(value) == 0 {
				value = []byte{0}
			} else {
				value[rapid.IntRange(0, len(value)-1).Draw(t, "at")] ^= byte(rapid.IntRange(1, 255).Draw(t, "flip"))
			}
		case 1:
			if rev > 1 && rapid.Bool().Draw(t, "down") {
				rev--
			} else if rev < other.appliedIndex {
				rev++
			} else {
				rev--
			}
			if rev == 0 {
				rev = 1
				value = append(value, 0)
			}
		case 2:
			other.remove([]byte(key), it)
			value = nil
		}
		if value != nil {
			other.set([]byte(key), it, true, value, rev)
		}
		if err := other.Verify(); err != nil {
			t.Fatal(err)
		}
		if other.Hash() == st.Hash() {
			t.Fatalf("key %q changed, hash still %016x", key, st.Hash())
		}
	})
}
