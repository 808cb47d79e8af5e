package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// init names the interop suites this run will skip for want of the
// programs they drive, in one line at the start rather than one t.Skip per
// test, which only go test -v shows.
func init() {
	var skipped []string
	if _, err := exec.LookPath("node"); err != nil {
		skipped = append(skipped, "the bedrock-protocol suites (TestPrismarine*: install Node.js 20 and npm)")
	}
	_, binErr := exec.LookPath("nginx")
	if _, err := os.Stat("/usr/sbin/nginx"); binErr != nil && err != nil {
		skipped = append(skipped, "the nginx load-balancer test (apt-get install nginx libnginx-mod-stream)")
	} else if _, err := os.Stat(nginxModule); err != nil {
		skipped = append(skipped, "the nginx load-balancer test (apt-get install libnginx-mod-stream)")
	}
	if len(skipped) > 0 && os.Getenv("CI") != "true" {
		fmt.Fprintln(os.Stderr, "integration: skipping "+strings.Join(skipped, " and "))
	}
}
