package raknet

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/reliability"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// A datagram that begins 0xFE (valid, ACK and NACK bits all set), or any
// other byte with both the ACK and the NACK bit, is refused by every
// RakNet decoder and by a connection's reliability layer: the query magic
// never begins a datagram the listener accepts.
func TestQueryMagicIsNoRakNet(t *testing.T) {
	for first := range 256 {
		if first&int(wire.FlagACK|wire.FlagNACK) != int(wire.FlagACK|wire.FlagNACK) {
			continue
		}
		b := []byte{byte(first), 0xfd, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01}
		var h wire.DatagramHeader
		if _, err := h.Decode(b); err == nil {
			t.Errorf("%#02x: decoded as a data datagram", first)
		}
		var a wire.Ack
		if _, err := a.Decode(b); err == nil {
			t.Errorf("%#02x: decoded as an ACK or NACK", first)
		}
		layer := reliability.New(reliability.Config{MaxDatagram: 1400}, time.Now())
		if err := layer.HandleDatagram(time.Now(), b); err == nil {
			t.Errorf("%#02x: accepted by the reliability layer", first)
		}
	}
}

// queryRecorder is a ListenConfig.Query that records its requests and
// answers each with "re:" and the request, or with err if set.
type queryRecorder struct {
	mu   sync.Mutex
	reqs [][]byte
	from []netip.AddrPort
	err  error
}

func (q *queryRecorder) answer(dst, req []byte, from netip.AddrPort, now time.Time) ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reqs = append(q.reqs, bytes.Clone(req))
	q.from = append(q.from, from)
	if q.err != nil {
		return dst, q.err
	}
	return append(append(dst, "re:"...), req...), nil
}

func (q *queryRecorder) calls() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.reqs)
}

var queryReq = []byte{0xfe, 0xfd, 0x09, 0x00, 0x00, 0x00, 0x01}

func TestQueryHook(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		var q queryRecorder
		l := s.listen(ListenConfig{Query: q.answer})
		r := s.raw(l.Addr())
		r.send(queryReq)
		got := r.read(time.Second)
		if want := append([]byte("re:"), queryReq...); !bytes.Equal(got, want) {
			t.Fatalf("reply: got % x, want % x", got, want)
		}
		if st := l.Stats(); st.QueryAnswered != 1 || st.Dropped != 0 {
			t.Errorf("stats: got %d answered, %d dropped, want 1, 0", st.QueryAnswered, st.Dropped)
		}
		if q.from[0] != key(r.pc.LocalAddr().(*net.UDPAddr).AddrPort()) {
			t.Errorf("from: got %v, want %v", q.from[0], r.pc.LocalAddr())
		}
		// A refused request gets no reply and is counted as dropped.
		q.mu.Lock()
		q.err = errors.New("bad token")
		q.mu.Unlock()
		r.send(queryReq)
		waitUntil(t, "the refusal counted", func() bool { return l.Stats().Dropped == 1 })
		if b := r.read(50 * time.Millisecond); b != nil {
			t.Errorf("refused request answered with % x", b)
		}
		// Pings still work, and a datagram that begins fe but not fe fd is not
		// a query.
		r.send([]byte{0xfe, 0xfe, 0x09, 0, 0, 0, 1})
		ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
		r.send(ping.Append(nil))
		r.expect(wire.IDUnconnectedPong, time.Second)
		if n := q.calls(); n != 2 {
			t.Errorf("Query called %d times, want 2", n)
		}
	})
}

// Without a Query hook, fe fd datagrams are dropped unanswered.
func TestQueryWithoutHook(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		r := s.raw(l.Addr())
		r.send(queryReq)
		waitUntil(t, "the datagram dropped", func() bool { return l.Stats().Dropped == 1 })
		if b := r.read(50 * time.Millisecond); b != nil {
			t.Errorf("got % x, want no reply", b)
		}
	})
}

// A query from the address of a connection goes to the hook, never to the
// connection.
func TestQueryFromConnection(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		for _, hook := range []bool{true, false} {
			var q queryRecorder
			lc := ListenConfig{}
			if hook {
				lc.Query = q.answer
			}
			l := s.listen(lc)
			r := s.raw(l.Addr())
			r.open(1400, -1)
			l.mu.RLock()
			p := l.conns[key(r.pc.LocalAddr().(*net.UDPAddr).AddrPort())]
			l.mu.RUnlock()
			if p == nil {
				t.Fatal("no connection after the handshake")
			}
			c := p.c
			before := c.Stats().DatagramsReceived
			r.send(queryReq)
			if hook {
				r.read(time.Second)
				if got := c.Stats().DatagramsReceived; got != before {
					t.Errorf("with a hook: the connection received %d datagrams, want %d", got, before)
				}
				if q.calls() != 1 {
					t.Errorf("with a hook: Query called %d times, want 1", q.calls())
				}
				continue
			}
			// Without one, the connection gets it and its layer refuses it.
			waitUntil(t, "the connection to see the datagram", func() bool { return c.Stats().DatagramsReceived > before })
		}
	})
}

// Queries pay the per-prefix offline rate and the offline reply bytes.
func TestQueryLimits(t *testing.T) {
	var q queryRecorder
	l := listenTest(t, ListenConfig{ListenPacket: sinkListen, Query: q.answer, OfflineRate: 1})
	from := netip.MustParseAddrPort("127.0.7.1:4000")
	now := time.Now()
	for range 10 {
		l.handle(queryReq, from, now)
	}
	// A burst of twice the rate.
	if n := q.calls(); n != 2 {
		t.Errorf("rate 1: Query called %d times for 10 requests, want 2", n)
	}
	if st := l.Stats(); st.RateLimited != 8 {
		t.Errorf("rate 1: got %d rate-limited, want 8", st.RateLimited)
	}

	// Replies past the byte limit are not sent.
	big := func(dst, req []byte, from netip.AddrPort, now time.Time) ([]byte, error) {
		return append(dst, bytes.Repeat([]byte{'x'}, 2000)...), nil
	}
	l = listenTest(t, ListenConfig{ListenPacket: sinkListen, Query: big, OfflineRate: -1, OfflineBytes: 4000})
	for range 10 {
		l.handle(queryReq, from, now)
	}
	// The burst is one MTU's worth or a quarter second's, whichever is
	// more: 1492 bytes here, less than one reply.
	if st := l.Stats(); st.QueryAnswered != 0 || st.RateLimited != 10 {
		t.Errorf("bytes: got %d answered, %d rate-limited, want 0, 10", st.QueryAnswered, st.RateLimited)
	}
}

// Refusing a query allocates nothing: rate-limited, or refused by the hook.
func TestQueryRefusalAllocs(t *testing.T) {
	from := netip.MustParseAddrPort("127.0.7.1:4000")
	refuse := errors.New("refused")
	hook := func(dst, req []byte, from netip.AddrPort, now time.Time) ([]byte, error) { return dst, refuse }
	l := listenTest(t, ListenConfig{ListenPacket: sinkListen, Query: hook, OfflineRate: -1})
	before := l.Stats().Dropped
	if n := testing.AllocsPerRun(200, func() { l.handle(queryReq, from, time.Now()) }); n != 0 {
		t.Errorf("refused by the hook: got %v allocations, want 0", n)
	}
	if l.Stats().Dropped == before {
		t.Error("refused by the hook: not counted")
	}
	l = listenTest(t, ListenConfig{ListenPacket: sinkListen, Query: hook, OfflineRate: 1})
	for range 10 {
		l.handle(queryReq, from, time.Now())
	}
	before = l.Stats().RateLimited
	if n := testing.AllocsPerRun(200, func() { l.handle(queryReq, from, time.Now()) }); n != 0 {
		t.Errorf("rate-limited: got %v allocations, want 0", n)
	}
	if l.Stats().RateLimited == before {
		t.Error("rate-limited: not counted")
	}
}

func BenchmarkQueryRefusal(b *testing.B) {
	from := netip.MustParseAddrPort("127.0.7.1:4000")
	refuse := errors.New("refused")
	hook := func(dst, req []byte, from netip.AddrPort, now time.Time) ([]byte, error) { return dst, refuse }
	for _, bc := range []struct {
		name string
		rate int
	}{{"refused_by_hook", -1}, {"rate_limited", 1}} {
		l, err := ListenConfig{Query: hook, OfflineRate: bc.rate}.Listen("127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			now := time.Now()
			for b.Loop() {
				l.handle(queryReq, from, now)
			}
		})
		_ = l.Close()
	}
}

// Listeners that share a cookie secret accept each other's cookies;
// listeners with different secrets do not.
func TestCookieSecret(t *testing.T) {
	secret := []byte("a shared secret of 32 bytes.....")
	other := []byte("another secret of 32 bytes......")
	cases := []struct {
		name   string
		a, b   []byte
		accept bool
	}{
		{"same secret", secret, secret, true},
		{"different secrets", secret, other, false},
		{"random secrets", nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				la := s.listen(ListenConfig{CookieSecret: tc.a})
				lb := s.listen(ListenConfig{CookieSecret: tc.b})
				r := s.raw(la.Addr())
				r.send(r.request1(11, 1400))
				var m wire.OpenConnectionReply1
				if _, err := m.Decode(r.expect(wire.IDOpenConnectionReply1, time.Second)); err != nil {
					t.Fatal(err)
				}
				if !m.Security {
					t.Fatal("Reply1 carries no cookie")
				}
				r.cookie, r.hasCookie = m.Cookie, true
				// Request2 reaches the other listener, as through a load
				// balancer that sent Request1 elsewhere.
				r.server = key(lb.Addr().(*net.UDPAddr).AddrPort())
				r.send(r.request2(1400, -1))
				if tc.accept {
					r.expect(wire.IDOpenConnectionReply2, time.Second)
					return
				}
				waitUntil(t, "the cookie refused", func() bool { return lb.Stats().CookieFailures == 1 })
				if st := lb.Stats(); st.Handshakes != 0 {
					t.Errorf("got %d handshakes, want 0", st.Handshakes)
				}
			})
		})
	}
}

func TestCookieSecretTooShort(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		_, err := ListenConfig{CookieSecret: []byte("short"), ListenPacket: s.n.ListenPacket}.Listen("127.0.0.1:0")
		if !errors.Is(err, errShortCookieSecret) {
			t.Errorf("got %v, want an error for a short secret", err)
		}
		l := s.listen(ListenConfig{CookieSecret: bytes.Repeat([]byte{1}, MinCookieSecret)})
		if l == nil {
			t.Error("a secret of MinCookieSecret bytes refused")
		}
	})
}
