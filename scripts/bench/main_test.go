package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the bench's child servers when a test starts one: they
// are this binary run with the command's arguments.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "player-server" {
		if err := cmdPlayerServer(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "bench player-server: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
