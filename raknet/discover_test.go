package raknet

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
)

// Discover lists every listener that answers, once each, sorted by
// address, with its round trip, and ignores targets that do not answer.
func TestDiscover(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		a := s.listen(ListenConfig{})
		a.PongData([]byte("server a"))
		b := s.listen(ListenConfig{})
		b.PongData([]byte("server b"))
		gone := s.listen(ListenConfig{})
		goneAddr := gone.Addr().String()
		_ = gone.Close()
		const delay = 3 * time.Millisecond
		s.n.SetConditions(simnet.Conditions{Delay: delay})
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		pongs, err := s.dialer(Dialer{}).Discover(ctx, a.Addr().String(), b.Addr().String(), goneAddr, a.Addr().String())
		if err != nil {
			t.Fatalf("discover: %v", err)
		}
		if len(pongs) != 2 {
			t.Fatalf("got %d answers (%v), want 2", len(pongs), pongs)
		}
		byGUID := map[int64]string{a.ID(): "server a", b.ID(): "server b"}
		for i, p := range pongs {
			if want, ok := byGUID[p.GUID]; !ok || string(p.Data) != want {
				t.Errorf("answer %d: GUID %d data %q, want one of the listeners", i, p.GUID, p.Data)
			}
			if p.RTT != 2*delay {
				t.Errorf("answer %d: RTT %v, want %v", i, p.RTT, 2*delay)
			}
			if i > 0 && pongs[i-1].Addr.Compare(p.Addr) >= 0 {
				t.Errorf("answers not sorted by address: %v", pongs)
			}
		}
		if _, err := s.dialer(Dialer{}).Discover(ctx); err == nil {
			t.Error("no targets: got no error")
		}
	})
}

func TestPingPong(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		l.PongData([]byte("MCPE;x;"))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		p, err := s.dialer(Dialer{}).PingPong(ctx, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if p.GUID != l.ID() || string(p.Data) != "MCPE;x;" || p.Addr.String() != l.Addr().String() {
			t.Errorf("got %+v, want GUID %d, data MCPE;x; from %v", p, l.ID(), l.Addr())
		}
		_ = l.Close()
		ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err = s.dialer(Dialer{}).PingPong(ctx, l.Addr().String())
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "ping" || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("closed listener: got %v, want a ping OpError wrapping the deadline", err)
		}
	})
}

// PongData larger than a pong can carry is a programmer error.
func TestPongDataTooLargePanics(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		defer func() {
			if recover() == nil {
				t.Error("oversized pong data: no panic")
			}
		}()
		l.PongData(make([]byte, 1<<16))
	})
}
