package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
)

// noopServe is the no-op server: PUT /v1/kv/{key...} as raftd's HTTP API
// serves it — the body read under the same limit, the kv command built and
// encoded, the JSON answer with its ETag and X-Raftd-Index headers, on a
// server with raftd's settings — acknowledged at once, without consensus
// or disk. Its throughput is what the HTTP stack alone allows here.
func noopServe(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: raftbench noop-serve 127.0.0.1:PORT")
		return 2
	}
	l, err := net.Listen("tcp", args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "raftbench noop-serve:", err)
		return 1
	}
	var index atomic.Uint64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/kv/{key...}", func(w http.ResponseWriter, r *http.Request) {
		key := []byte(r.PathValue("key"))
		if r.Method != http.MethodPut || len(key) == 0 || len(key) > kv.KeyBytesMax {
			http.Error(w, `{"code":"bad_request"}`, http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, kv.ValueBytesMax))
		if err != nil {
			http.Error(w, `{"code":"bad_request"}`, http.StatusBadRequest)
			return
		}
		c := kv.Put(key, body)
		c.TimeMs = uint64(time.Now().UnixMilli())
		if _, err := c.Marshal(); err != nil {
			http.Error(w, `{"code":"bad_request"}`, http.StatusBadRequest)
			return
		}
		i := index.Add(1)
		b, _ := json.MarshalIndent(struct {
			Revision uint64 `json:"revision,omitempty"`
			Index    uint64 `json:"index"`
		}{i, i}, "", "  ")
		w.Header().Set("X-Raftd-Index", strconv.FormatUint(i, 10))
		w.Header().Set("ETag", `"`+strconv.FormatUint(i, 10)+`"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(b, '\n'))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: log.New(os.Stderr, "noop: ", 0)}
	fmt.Println("noop: serving", l.Addr().String())
	if err := srv.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "raftbench noop-serve:", err)
		return 1
	}
	return 0
}
