package clienttest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client"
)

// Key is the key PutKeys writes for i: "k-%05d".
func Key(i int) []byte { return []byte(fmt.Sprintf("k-%05d", i)) }

// PutKeys puts Key(i) = value(i) for i in from..to-1 through the Go client
// at eps, workers clients at a time (each its own client and connection,
// each request with a 20 s timeout), and fails the test on the first error.
func PutKeys(t testing.TB, eps []string, logger *slog.Logger, from, to, workers int, value func(i int) []byte) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.New(client.Config{Endpoints: eps, Logger: logger, RequestTimeout: 20 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := from + w; i < to; i += workers {
				if _, err := c.Put(context.Background(), Key(i), value(i)); err != nil {
					errs <- fmt.Errorf("put %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
