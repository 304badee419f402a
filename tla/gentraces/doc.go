// Command gentraces writes tla/traces/: example traces from spec/ (witnesses,
// bug counterexamples, simulation walks) and tla/traces/mutated/, traces both
// spec/ and TLC must reject. Run it from tla/ through `go generate ./tla`
// after a change to spec/.
package main
