package console

import (
	"os"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server/access"
)

func TestParseBanDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30m", 30 * time.Minute, true},
		{"12h", 12 * time.Hour, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"0d", 0, false},
		{"-1h", 0, false},
		{"griefing", 0, false},
		{"d", 0, false},
		{"99999999d", 0, false},
	} {
		if got, ok := parseBanDuration(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("%q: got %v, %v, want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for in, want := range map[string]access.Ban{
		"203.0.113.7": {IP: "203.0.113.7"}, "2001:db8::/32": {IP: "2001:db8::/32"},
		"2535400000000001": {XUID: "2535400000000001"}, "Steve": {Name: "Steve"},
	} {
		if got := banTarget(in); got != want {
			t.Errorf("banTarget(%q): got %+v, want %+v", in, got, want)
		}
	}
}

func TestInput(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if Input(null) {
		t.Error("Input(/dev/null) = true, want false")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !Input(r) {
		t.Error("Input(a pipe) = false, want true")
	}
	_ = r.Close()
	if Input(r) {
		t.Error("Input(a closed file) = true, want false")
	}
}
