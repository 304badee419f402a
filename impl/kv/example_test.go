package kv_test

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/kv"
)

// A client with a session writes, its answer is lost, it retries: the retry
// gets the first answer and the write is applied once.
func Example() {
	st := kv.NewStore(kv.Options{})
	apply := func(c kv.Command) kv.Result {
		data, err := c.Marshal() // what the proposer puts in the entry
		if err != nil {
			panic(err)
		}
		res, _ := kv.DecodeResult(st.Apply(st.AppliedIndex()+1, 1, data))
		return res
	}
	session := apply(kv.Register(10_000).At(1_000)).Index
	put := kv.CASRevision([]byte("k"), 0, []byte("v")).InSession(session, 1, 1)
	fmt.Println(apply(put.At(1_001)))
	fmt.Println(apply(put.At(1_002))) // the retry: the first answer, from entry 2
	value, revision, _ := st.Get([]byte("k"))
	fmt.Printf("%s@%d\n", value, revision)
	fmt.Println(apply(kv.Noop().At(20_000)))                                   // time passes: the session expires
	fmt.Println(apply(put.At(20_001)))                                         // a retry now is refused, not re-executed
	fmt.Println(apply(kv.CASRevision([]byte("k"), 0, []byte("w")).At(20_002))) // a write without a session
	// Output:
	// ok index=2 rev=2
	// ok index=2 rev=2
	// v@2
	// ok index=4
	// session-expired index=5
	// mismatch index=6 rev=2
}
