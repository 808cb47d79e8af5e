package auth_test

import (
	"os"
	"testing"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// TestMain fails the run if any test left a goroutine of Basalt's behind:
// a Verifier's fetch loop outliving its Close, say.
func TestMain(m *testing.M) { os.Exit(leaktest.Main(m)) }
