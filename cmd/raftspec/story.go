package main

import (
	"errors"
	"io"
)

func storyCommand(args []string, stdout, stderr io.Writer) error { return errors.New("todo") }
