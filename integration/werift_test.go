package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// weriftJoins is how many times the werift client joins.
const weriftJoins = 3

// A NetherNet client on an independent WebRTC stack (npm nethernet on
// werift, which starts its DTLS side only once its own ICE has completed)
// joins, each time without waiting for a resent DTLS flight: the answer
// lets the client start the handshake (a=setup:passive). With the server
// starting it, pion's first ClientHello went unanswered and every join
// took a second more.
func TestNetherNetWerift(t *testing.T) {
	node := needNode(t)
	_, _, nnAddr := netherNetServer(t, "lobby")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "nethernet_join.js", strings.TrimPrefix(nnAddr, "http://"), strconv.Itoa(weriftJoins))
	cmd.Dir = jsDir
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node nethernet_join.js: %v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	}
	var res struct {
		Joins []int `json:"joins"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		t.Fatalf("result: %v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("werift joins (ms): %v", res.Joins)
	if len(res.Joins) != weriftJoins {
		t.Fatalf("%d joins reported, want %d", len(res.Joins), weriftJoins)
	}
	for i, ms := range res.Joins {
		switch {
		case ms < 0:
			t.Errorf("join %d did not connect\nstderr: %s", i, stderr.Bytes())
		case !raceEnabled && ms >= 900:
			// A resent DTLS flight waits a second; a join without one
			// takes a tenth of that.
			t.Errorf("join %d took %d ms: it waited for a resent DTLS flight", i, ms)
		}
	}
}
