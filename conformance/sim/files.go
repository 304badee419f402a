package sim

import (
	"bufio"
	"encoding/json"
	"io"
	"os"

	"github.com/anishathalye/porcupine"
)

// WriteTrace writes the run's trace as ndjson (the format of
// docs/trace-format.md: raftspec check-trace reads it).
func (s *Sim) WriteTrace(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for k := range s.Events {
		b, err := json.Marshal(&s.Events[k])
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WriteFiles writes a run's trace, history and porcupine's visualization of
// the history (each path may be empty: not written). The visualization is
// of v.Info, or of a fresh check when the run stopped before porcupine ran.
func WriteFiles(s *Sim, v Verdict, tracePath, historyPath, htmlPath string) error {
	write := func(path string, f func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		out, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := f(out); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
	if err := write(tracePath, s.WriteTrace); err != nil {
		return err
	}
	if err := write(historyPath, func(w io.Writer) error { return WriteHistory(w, s.history) }); err != nil {
		return err
	}
	if htmlPath == "" {
		return nil
	}
	info := v.Info
	if v.Linearizable == "" {
		_, info = CheckLinearizable(s.history, PorcupineTimeout)
	}
	return porcupine.VisualizePath(KVModel, info, htmlPath)
}
