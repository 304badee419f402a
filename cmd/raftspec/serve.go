package main

import (
	"errors"
	"io"
)

func serveCommand(args []string, stdout, stderr io.Writer) error { return errors.New("todo") }
