module github.com/durableraft/durableraft

go 1.26.8

require github.com/google/go-cmp v0.7.0

require pgregory.net/rapid v1.3.0

require github.com/anishathalye/porcupine v1.3.1
