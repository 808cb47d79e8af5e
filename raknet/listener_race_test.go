package raknet

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// testReaders holds the reader each open listener's handle uses
// (*Listener → handler).
var testReaders sync.Map

// handle hands a datagram to l as one more socket's reader would: one of
// its own per listener, kept from call to call (its flows, its refusal
// summary), beside those of l's sockets. Calls for one listener must not
// overlap.
func (l *Listener) handle(b []byte, from netip.AddrPort, now time.Time) {
	h, ok := testReaders.Load(l)
	if !ok {
		// Forget the readers of closed listeners, so they can go.
		testReaders.Range(func(k, _ any) bool {
			select {
			case <-k.(*Listener).done:
				testReaders.Delete(k)
			default:
			}
			return true
		})
		h, _ = testReaders.LoadOrStore(l, l.newReader())
	}
	h.(handler)(b, from, now)
}

// TestListenerSocketsQueryProxyRace runs a listener with two sockets, so
// two readers, and sends what both handle without any ordering between
// them: Query datagrams from many sources, and datagrams without a header
// from a trusted proxy, which belong to the flow its first datagram's
// header opened. Every reply must be the answer to its own request, for
// the client that sent it; under -race, the readers must share no scratch
// state (reply buffer, refusal summary, flows).
func TestListenerSocketsQueryProxyRace(t *testing.T) {
	leaktest.Check(t)
	const clients, proxies, rounds = 12, 6, 40
	hook := func(dst, req []byte, from netip.AddrPort, _ time.Time) ([]byte, error) {
		// Long enough that two readers writing one buffer at once are
		// likely to overlap, and checked byte for byte by the sender.
		dst = append(dst, req...)
		dst = append(dst, from.String()...)
		return append(dst, bytes.Repeat([]byte{'.'}, 200)...), nil
	}
	l := listenTest(t, ListenConfig{
		Sockets: 2, Query: hook, OfflineRate: -1, OfflineBytes: -1,
		ProxyProtocol: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	server := l.Addr().(*net.UDPAddr).AddrPort()

	// exchange sends each request in turn from pc and checks its reply,
	// resending a request whose reply was lost.
	request := func(id, i int) []byte { return fmt.Appendf([]byte{queryMagic0, queryMagic1}, "%d/%d;", id, i) }
	exchange := func(pc net.PacketConn, client netip.AddrPort, first []byte, id int) error {
		buf := make([]byte, 2048)
		for i := range rounds {
			req := request(id, i)
			want := append(append(append([]byte(nil), req...), client.String()...), bytes.Repeat([]byte{'.'}, 200)...)
			out := req
			if i == 0 && first != nil {
				out = first
			}
			got := false
			for try := 0; try < 5 && !got; try++ {
				if _, err := pc.WriteTo(out, net.UDPAddrFromAddrPort(server)); err != nil {
					return err
				}
				_ = pc.SetReadDeadline(time.Now().Add(time.Second))
				for {
					n, _, err := pc.ReadFrom(buf)
					if err != nil {
						break // resend
					}
					if bytes.Equal(buf[:n], want) {
						got = true
						break
					}
					if !bytes.HasPrefix(buf[:n], req[:2]) || bytes.Contains(buf[:n], req) {
						return fmt.Errorf("sender %d round %d: got reply %q, want %q", id, i, buf[:n], want)
					}
					// A late reply to an earlier, resent request.
				}
			}
			if !got {
				return fmt.Errorf("sender %d round %d: no reply", id, i)
			}
		}
		return nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, clients+proxies)
	for i := range clients {
		// Sources all over 127/8, so the kernel spreads them over both
		// sockets.
		pc, err := net.ListenPacket("udp4", fmt.Sprintf("127.%d.%d.%d:0", 1+i%3, i, 2+i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		from := pc.LocalAddr().(*net.UDPAddr).AddrPort()
		wg.Go(func() { errs <- exchange(pc, from, nil, i) })
	}
	for i := range proxies {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		// The header goes on the first datagram only, as frp sends them.
		client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i)}), uint16(40000+i))
		first := proxied(t, client, request(clients+i, 0))
		wg.Go(func() { errs <- exchange(pc, client, first, clients+i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if st := l.Stats(); st.QueryAnswered < (clients+proxies)*rounds || st.ProxyNoFlow != 0 {
		t.Errorf("got %d queries answered, %d without a flow; want at least %d and 0", st.QueryAnswered, st.ProxyNoFlow, (clients+proxies)*rounds)
	}
}
