package raknet

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// stunMessage returns a STUN message of type typ with attrs (already
// padded) after its header.
func stunMessage(typ uint16, attrs []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(len(attrs)))
	b = binary.BigEndian.AppendUint32(b, stunCookie)
	b = append(b, "0123456789ab"...) // transaction ID
	return append(b, attrs...)
}

func TestIsForeign(t *testing.T) {
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: 7}).Append(nil)
	// A ping whose timestamp puts the cookie at bytes 4-7 and a STUN-like
	// length at bytes 2-3.
	trick := (&wire.UnconnectedPing{Time: int64(0x0000_0010_2112A442) << 8, ClientGUID: 7}).Append(nil)
	if binary.BigEndian.Uint32(trick[4:8]) != stunCookie {
		t.Fatalf("trick ping % x lacks the cookie", trick)
	}
	trickPadded := append(bytes.Clone(trick), 0, 0, 0) // 36 bytes: length 16 fits
	binary.BigEndian.PutUint16(trickPadded[2:4], 16)
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"STUN binding request", stunMessage(0x0001, nil), true},
		{"STUN binding success (0x01 like a ping)", stunMessage(0x0101, []byte{0, 0x20, 0, 8, 0, 1, 0x12, 0x34, 1, 2, 3, 4}), true},
		{"STUN with a bad length", stunMessage(0x0001, []byte{1, 2, 3})[:22], false},
		{"STUN without the cookie", append([]byte{0, 1, 0, 0, 1, 2, 3, 4}, make([]byte, 12)...), false},
		{"DTLS ClientHello", append([]byte{22, 0xfe, 0xfd}, make([]byte, 40)...), true},
		{"DTLS application data", append([]byte{23, 0xfe, 0xfd}, make([]byte, 20)...), true},
		{"DTLS-range byte, not DTLS", append([]byte{22, 0x03, 0x03}, make([]byte, 20)...), false},
		{"truncated DTLS", []byte{22, 0xfe, 0xfd}, false},
		{"RakNet ping", ping, false},
		{"RakNet ping with the cookie in its timestamp", trick, false},
		{"padded ping with cookie and a fitting length", trickPadded, false},
		{"OpenConnectionRequest1", append([]byte{0x05}, wire.Magic[:]...), false},
		{"OpenConnectionRequest2", append([]byte{0x07}, wire.Magic[:]...), false},
		{"RakNet datagram", []byte{0x84, 0, 0, 0, 0x40, 0, 8}, false},
		{"query", []byte{0xfe, 0xfd, 9, 0, 0, 0, 1}, false},
		{"empty", nil, false},
	} {
		if got := IsForeign(tc.b); got != tc.want {
			t.Errorf("%s: IsForeign = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func FuzzIsForeign(f *testing.F) {
	f.Add(stunMessage(1, nil))
	f.Add((&wire.UnconnectedPing{Time: 1}).Append(nil))
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		got := IsForeign(b)
		if len(b) > 0 && (b[0]&0x80 != 0 || b[0] == 0x05 || b[0] == 0x07) && got {
			t.Fatalf("RakNet's % x taken for foreign", b)
		}
		if len(b) >= 25 && (b[0] == 0x01 || b[0] == 0x02) && [16]byte(b[9:25]) == wire.Magic && got {
			t.Fatalf("a ping % x taken for foreign", b)
		}
	})
}

// foreignRecorder is a ListenConfig.Foreign that keeps what it gets.
type foreignRecorder struct {
	mu   sync.Mutex
	got  [][]byte
	from []netip.AddrPort
}

func (f *foreignRecorder) take(b []byte, from netip.AddrPort) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, bytes.Clone(b))
	f.from = append(f.from, from)
}

func (f *foreignRecorder) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

// STUN and DTLS go to the hook, pings are still answered, and
// WriteForeign answers from the listener's socket.
func TestForeignHook(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		var f foreignRecorder
		l := s.listen(ListenConfig{Foreign: f.take})
		r := s.raw(l.Addr())
		stun := stunMessage(0x0001, nil)
		r.send(stun)
		r.send(append([]byte{22, 0xfe, 0xfd}, make([]byte, 20)...))
		r.send((&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil))
		r.expect(wire.IDUnconnectedPong, time.Second)
		synctest.Wait()
		if n := f.count(); n != 2 {
			t.Fatalf("got %d foreign datagrams, want 2", n)
		}
		f.mu.Lock()
		if !bytes.Equal(f.got[0], stun) || f.from[0] != key(r.pc.LocalAddr().(*net.UDPAddr).AddrPort()) {
			t.Errorf("got % x from %v", f.got[0], f.from[0])
		}
		from := f.from[0]
		f.mu.Unlock()
		if err := l.WriteForeign([]byte("answer"), from); err != nil {
			t.Fatal(err)
		}
		if b := r.read(time.Second); string(b) != "answer" {
			t.Errorf("read %q, want the foreign answer", b)
		}
		if st := l.Stats(); st.Dropped != 0 || st.Pings != 1 {
			t.Errorf("stats: %d dropped, %d pings; want 0, 1", st.Dropped, st.Pings)
		}
	})
}

// The classification runs on every datagram the listener reads when
// NetherNet shares the socket.
func BenchmarkIsForeign(b *testing.B) {
	dgram := []byte{0x84, 0, 0, 0, 0x40, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8}
	ping := (&wire.UnconnectedPing{Time: 1}).Append(nil)
	stun := stunMessage(0x0001, nil)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if IsForeign(dgram) || IsForeign(ping) {
			n++
		}
		if IsForeign(stun) {
			n--
		}
	}
	_ = n
}
