package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/durableraft/durableraft/tla"
)

func main() {
	dir := flag.String("dir", "traces", "directory to write (its *.ndjson files are replaced)")
	flag.Parse()
	files, err := tla.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gentraces:", err)
		os.Exit(1)
	}
	if err := tla.WriteTraces(*dir, files); err != nil {
		fmt.Fprintln(os.Stderr, "gentraces:", err)
		os.Exit(1)
	}
	events, size := 0, 0
	for _, f := range files {
		size += len(f.Data)
		if f.Accept {
			events += f.Events()
		}
	}
	fmt.Printf("gentraces: %d files, %d events accepted, %d bytes in %s\n", len(files), events, size, *dir)
}
