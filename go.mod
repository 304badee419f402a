module github.com/durableraft/durableraft

go 1.26.8
