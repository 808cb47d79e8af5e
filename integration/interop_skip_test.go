package integration

import (
	"fmt"
	"os"
	"os/exec"
)

// init names the interop suites this run will skip for want of Node.js,
// in one line at the start rather than one t.Skip per test, which only
// go test -v shows.
func init() {
	if _, err := exec.LookPath("node"); err != nil {
		fmt.Fprintln(os.Stderr, "integration: node not found: the bedrock-protocol interop suites (TestPrismarine*, integration/prismarine_test.go) are skipped; install Node.js 20 and npm to run them")
	}
}
