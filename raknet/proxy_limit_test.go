package raknet

import (
	"bytes"
	"context"
	"net/netip"
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

// A balancer without PROXY headers: its players share its address. A
// trusted proxy's own address is never limited per IP, so all its players
// get in; any other address is limited as one client.
func TestTrustedProxyNotLimitedPerIP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []netip.Prefix
		limited bool
	}{
		{"trusted balancer", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/24")}, false},
		{"mapped prefix", []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.1/128")}, false},
		{"another address", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, true},
		{"none", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				var buf syncBuffer
				log := zerolog.New(&buf)
				l := s.listen(ListenConfig{TrustedProxies: tc.trusted, MaxConnectionsPerIP: 1, Log: &log})
				s.dial(Dialer{}, l)
				accepted := 0
				for range 3 {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					c, err := s.dialer(Dialer{}).DialContext(ctx, l.Addr().String())
					cancel()
					if err == nil {
						accepted++
						defer c.Close()
					}
				}
				st := l.Stats()
				if tc.limited && (accepted != 0 || st.PerIPLimited < 3) {
					t.Errorf("%d more connections from one IP accepted, %d refused per IP; want none and 3", accepted, st.PerIPLimited)
				}
				if !tc.limited && (accepted != 3 || st.PerIPLimited != 0) {
					t.Errorf("a trusted proxy got %d of 3 more connections, %d refused per IP", accepted, st.PerIPLimited)
				}
			})
		})
	}
}
