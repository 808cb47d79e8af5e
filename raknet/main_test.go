package raknet

import (
	"os"
	"testing"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// TestMain fails the run if any test left a goroutine of raknet behind;
// tests that start connections also call leaktest.Check to be named.
func TestMain(m *testing.M) { os.Exit(leaktest.Main(m)) }
