package raknet

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// syncBuffer is a bytes.Buffer safe for the listener's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A balancer without PROXY headers: its players share its address, and
// the per-IP limit refuses the second. The listener says why, once,
// naming the two settings, when the address is a trusted proxy's, and
// says nothing of the kind for any other address.
func TestPerIPRefusalOfTrustedProxyLogged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []netip.Prefix
		want    bool
	}{
		{"trusted balancer", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/24")}, true},
		{"mapped prefix", []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.1/128")}, true},
		{"another address", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				var buf syncBuffer
				log := zerolog.New(&buf)
				l := s.listen(ListenConfig{TrustedProxies: tc.trusted, MaxConnectionsPerIP: 1, Log: &log})
				s.dial(Dialer{}, l)
				for range 3 {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					c, err := s.dialer(Dialer{}).DialContext(ctx, l.Addr().String())
					cancel()
					if err == nil {
						_ = c.Close()
						t.Fatal("second connection from one IP accepted, want it refused")
					}
				}
				if st := l.Stats(); st.PerIPLimited < 3 {
					t.Fatalf("PerIPLimited %d, want at least 3", st.PerIPLimited)
				}
				out := buf.String()
				n := strings.Count(out, "per-IP limit refused connections from a trusted proxy")
				if !tc.want {
					if n != 0 {
						t.Errorf("got %d explanations, want none:\n%s", n, out)
					}
					return
				}
				if n != 1 {
					t.Errorf("got %d explanations, want 1 (once per 10 s):\n%s", n, out)
				}
				for _, want := range []string{"network.proxy_protocol", "raknet.max_connections_per_ip", `"proxy":"127.0.0.1"`, `"level":"warn"`} {
					if !strings.Contains(out, want) {
						t.Errorf("log lacks %s:\n%s", want, out)
					}
				}
			})
		})
	}
}
