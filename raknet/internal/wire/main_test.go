package wire_test

import (
	"os"
	"testing"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// TestMain fails the run if any test left a goroutine of Basalt's or go-raknet's behind.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, leaktest.Module, "github.com/sandertv/go-raknet"))
}
