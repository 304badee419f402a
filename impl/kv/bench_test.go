package kv_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
)

// The Apply benchmarks report allocations per applied entry (a 100-byte
// value): the copy of the value the store keeps, the encoded result, and for
// a new key its map entry.
func BenchmarkApply(b *testing.B) {
	value := bytes.Repeat([]byte("v"), 100)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte("key-" + itoa(uint64(i)))
	}
	run := func(b *testing.B, st *kv.Store, data func(i int) []byte) {
		b.ReportAllocs()
		b.ResetTimer()
		base := st.AppliedIndex()
		for i := range b.N {
			st.Apply(base+uint64(i)+1, 1, data(i))
		}
	}
	enc := func(c kv.Command) []byte {
		d, err := c.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	b.Run("put-existing-key", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		data := enc(kv.Put(keys[0], value))
		run(b, st, func(int) []byte { return data })
	})
	b.Run("put-1024-keys", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		datas := make([][]byte, len(keys))
		for i, key := range keys {
			datas[i] = enc(kv.Put(key, value))
		}
		run(b, st, func(i int) []byte { return datas[i%len(datas)] })
	})
	b.Run("put-new-key", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		data := enc(kv.Put([]byte("k-0000000000000000"), value))
		run(b, st, func(i int) []byte {
			binary.LittleEndian.PutUint64(data[40:], uint64(i)) // the key's last 8 bytes
			return data
		})
	})
	b.Run("cas-revision-hit", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		st.ApplyCommand(1, 1, kv.Put(keys[0], value))
		data := enc(kv.CASRevision(keys[0], 1, value))
		run(b, st, func(i int) []byte {
			binary.LittleEndian.PutUint64(data[38+len(keys[0]):], uint64(i)+1) // expect the previous entry's revision
			return data
		})
	})
	b.Run("cas-mismatch", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		st.ApplyCommand(1, 1, kv.Put(keys[0], value))
		data := enc(kv.CASValue(keys[0], []byte("other"), value))
		run(b, st, func(int) []byte { return data })
	})
	b.Run("session-put", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		st.ApplyCommand(1, 1, kv.Register(1000))
		data := enc(kv.Put(keys[0], value).InSession(1, 1, 1))
		run(b, st, func(i int) []byte {
			seq := uint64(i) + 1
			binary.LittleEndian.PutUint64(data[18:], seq)            // seq
			binary.LittleEndian.PutUint64(data[26:], max(1, seq-64)) // 64 requests in flight
			return data
		})
	})
	b.Run("session-retry", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		st.ApplyCommand(1, 1, kv.Register(1000))
		data := enc(kv.Put(keys[0], value).InSession(1, 1, 1))
		st.Apply(2, 1, data)
		run(b, st, func(int) []byte { return data })
	})
	b.Run("bad-command", func(b *testing.B) {
		st := kv.NewStore(kv.Options{})
		data := []byte("not a command at all, but long enough")
		run(b, st, func(int) []byte { return data })
	})
}

// BenchmarkApplyCommand is the typed path: no encoding of the command or
// the result.
func BenchmarkApplyCommand(b *testing.B) {
	st := kv.NewStore(kv.Options{})
	c := kv.Put([]byte("key"), bytes.Repeat([]byte("v"), 100))
	b.ReportAllocs()
	for i := range b.N {
		st.ApplyCommand(uint64(i)+1, 1, c)
	}
}

func BenchmarkGet(b *testing.B) {
	st := kv.NewStore(kv.Options{})
	st.ApplyCommand(1, 1, kv.Put([]byte("key"), []byte("value")))
	key := []byte("key")
	b.ReportAllocs()
	for range b.N {
		if _, _, found := st.Get(key); !found {
			b.Fatal("absent")
		}
	}
}

func BenchmarkDecodeCommand(b *testing.B) {
	data, _ := kv.Put([]byte("key"), bytes.Repeat([]byte("v"), 100)).InSession(1, 2, 1).Marshal()
	b.ReportAllocs()
	for range b.N {
		if _, err := kv.DecodeCommand(data); err != nil {
			b.Fatal(err)
		}
	}
}

// bigStore: 10,000 keys of 1 KiB and 100 sessions with 10 kept answers each.
func bigStore() *kv.Store {
	st := kv.NewStore(kv.Options{})
	value := bytes.Repeat([]byte("v"), 1024)
	for s := range 100 {
		st.ApplyCommand(st.AppliedIndex()+1, 1, kv.Register(100000))
		for seq := range 10 {
			st.ApplyCommand(st.AppliedIndex()+1, 1, kv.Put([]byte("s"+itoa(uint64(s))), value).InSession(uint64(s*11+1), uint64(seq+1), 1))
		}
	}
	for i := range 10000 {
		st.ApplyCommand(st.AppliedIndex()+1, 1, kv.Put([]byte("key-"+itoa(uint64(i))), value))
	}
	return st
}

func BenchmarkSnapshot(b *testing.B) {
	st := bigStore()
	var buf bytes.Buffer
	_ = st.Snapshot(&buf)
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := st.Snapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestore(b *testing.B) {
	var buf bytes.Buffer
	_ = bigStore().Snapshot(&buf)
	snap := buf.Bytes()
	b.SetBytes(int64(len(snap)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := kv.NewStore(kv.Options{}).Restore(bytes.NewReader(snap)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify is the from-scratch pass (hash and invariants).
func BenchmarkVerify(b *testing.B) {
	st := bigStore()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := st.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}

// manyKeysStore: 100,000 keys of 100 bytes, as raftbench leaves a store
// after a few seconds of writes to distinct keys.
func manyKeysStore() *kv.Store {
	st := kv.NewStore(kv.Options{})
	value := bytes.Repeat([]byte("v"), 100)
	for i := range 100000 {
		st.ApplyCommand(st.AppliedIndex()+1, 1, kv.Put([]byte("pipelined-256-r1-"+itoa(uint64(i%256))+"-"+itoa(uint64(i/256))), value))
	}
	return st
}

// BenchmarkClone is what a snapshot costs the replica's own goroutine
// (replica.Snapshotter: the copy is made there, written on another).
func BenchmarkClone(b *testing.B) {
	st := manyKeysStore()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_ = st.Clone()
	}
}

// BenchmarkSnapshotManyKeys is the snapshot job's work for that store.
func BenchmarkSnapshotManyKeys(b *testing.B) {
	st := manyKeysStore()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := st.Snapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
