package query

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testResponder returns a Responder over a fixed status that counts the
// calls to Status.
func testResponder(calls *int) *Responder {
	return &Responder{
		Tokens: NewTokens(secret, 0),
		Status: func() Status {
			*calls++
			return Status{HostName: "Basalt", Version: "1.26.50", Engine: "Basalt", Map: "w",
				NumPlayers: 1, MaxPlayers: 20, HostIP: "0.0.0.0", HostPort: 19132, Players: []string{"Steve"}}
		},
	}
}

// handshake runs a handshake through r and returns the token, parsed from
// the decimal as a client does.
func handshake(t *testing.T, r *Responder, now time.Time) uint32 {
	t.Helper()
	req := (&Request{Type: TypeHandshake, SessionID: 0x01020304}).Append(nil)
	reply, err := r.Answer(nil, req, client, now)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if len(reply) < 7 || reply[0] != 9 || binary.BigEndian.Uint32(reply[1:5]) != 0x01020304 || reply[len(reply)-1] != 0 {
		t.Fatalf("handshake reply % x", reply)
	}
	if len(reply) > 16 {
		t.Errorf("handshake reply of %d bytes for a 7-byte request, want at most 16", len(reply))
	}
	tok, err := strconv.ParseInt(string(reply[5:len(reply)-1]), 10, 32)
	if err != nil {
		t.Fatalf("token %q: %v", reply[5:], err)
	}
	return uint32(tok)
}

func TestResponder(t *testing.T) {
	var calls int
	r := testResponder(&calls)
	tok := handshake(t, r, t0)
	if calls != 0 {
		t.Errorf("handshake called Status %d times, want 0", calls)
	}
	basic, err := r.Answer([]byte("x"), (&Request{Type: TypeStat, SessionID: 9, Token: tok}).Append(nil), client, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := "x\x00\x00\x00\x00\x09Basalt\x00SMP\x00w\x001\x0020\x00\xbc\x4a0.0.0.0\x00"; string(basic) != want {
		t.Errorf("basic stat: got %q, want %q", basic, want)
	}
	full, err := r.Answer(nil, (&Request{Type: TypeStat, SessionID: 9, Token: tok, Full: true}).Append(nil), client, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(full, []byte("\x00\x00\x00\x00\x09splitnum\x00\x80\x00hostname\x00Basalt\x00")) ||
		!bytes.HasSuffix(full, []byte("\x01player_\x00\x00Steve\x00\x00")) {
		t.Errorf("full stat: got %q", full)
	}
	if calls != 2 {
		t.Errorf("Status called %d times for two stats, want 2", calls)
	}
}

// A stat request gets nothing with a token that expired, belongs to
// another address, or was never issued; Status is not even asked, and dst
// comes back as it was.
func TestResponderRefuses(t *testing.T) {
	var calls int
	r := testResponder(&calls)
	tok := handshake(t, r, t0)
	other := netip.AddrPortFrom(client.Addr().Next(), client.Port())
	cases := []struct {
		name string
		from netip.AddrPort
		tok  uint32
		at   time.Duration
	}{
		{"expired", client, tok, 2 * DefaultTokenPeriod},
		{"other address", other, tok, 0},
		{"other port", netip.AddrPortFrom(client.Addr(), client.Port()+1), tok, 0},
		{"forged", client, tok ^ 0x100, 0},
	}
	for _, tc := range cases {
		for _, full := range []bool{false, true} {
			req := (&Request{Type: TypeStat, Token: tc.tok, Full: full}).Append(nil)
			dst := []byte("kept")
			got, err := r.Answer(dst, req, tc.from, t0.Add(tc.at))
			if !errors.Is(err, ErrBadToken) || string(got) != "kept" {
				t.Errorf("%s (full %v): got %q, %v, want %q, ErrBadToken", tc.name, full, got, err, "kept")
			}
		}
	}
	if calls != 0 {
		t.Errorf("Status called %d times for refused requests, want 0", calls)
	}
	// Malformed requests are refused the same way.
	for _, b := range [][]byte{nil, {0xfe, 0xfd, 0x09}, {0x01, 2, 3, 4, 5, 6, 7}, {0xfe, 0xfd, 0x05, 0, 0, 0, 0}} {
		if got, err := r.Answer([]byte("kept"), b, client, t0); err == nil || string(got) != "kept" {
			t.Errorf("% x: got %q, %v, want an error", b, got, err)
		}
	}
}

// Refusing a request and answering a handshake allocate nothing: a flood
// of either costs no garbage.
func TestResponderAllocs(t *testing.T) {
	var calls int
	r := testResponder(&calls)
	dst := make([]byte, 0, 64)
	cases := map[string][]byte{
		"handshake": (&Request{Type: TypeHandshake, SessionID: 1}).Append(nil),
		"bad token": (&Request{Type: TypeStat, Token: 12345}).Append(nil),
		"malformed": {0xfe, 0xfd, 0x00, 1},
	}
	for name, req := range cases {
		if n := testing.AllocsPerRun(200, func() { _, _ = r.Answer(dst[:0], req, client, t0) }); n != 0 {
			t.Errorf("%s: got %v allocations, want 0", name, n)
		}
	}
}

func BenchmarkAnswer(b *testing.B) {
	var calls int
	r := testResponder(&calls)
	dst := make([]byte, 0, 1500)
	tok := r.Tokens.Issue(client, t0)
	for _, bc := range []struct {
		name string
		req  Request
	}{
		{"handshake", Request{Type: TypeHandshake, SessionID: 1}},
		{"bad_token", Request{Type: TypeStat, Token: tok ^ 2}},
		{"basic_stat", Request{Type: TypeStat, Token: tok}},
		{"full_stat", Request{Type: TypeStat, Token: tok, Full: true}},
	} {
		req := bc.req.Append(nil)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = r.Answer(dst[:0], req, client, t0)
			}
		})
	}
}

// FuzzQuery feeds arbitrary datagrams to the decoder and the responder:
// neither panics, a decoded request encodes to a datagram that decodes to
// the same request, and no reply is larger than its bound (a handshake
// reply at most 16 bytes, a full stat at most MaxFullStat).
func FuzzQuery(f *testing.F) {
	tk := NewTokens(secret, 0)
	f.Add((&Request{Type: TypeHandshake, SessionID: 0x0f0f0f0f}).Append(nil))
	f.Add((&Request{Type: TypeStat, SessionID: 1, Token: tk.Issue(client, t0)}).Append(nil))
	f.Add((&Request{Type: TypeStat, SessionID: 1, Token: tk.Issue(client, t0), Full: true}).Append(nil))
	f.Add([]byte{0xfe, 0xfd, 0x00, 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0xfe, 0xfd})
	names := make([]string, 500)
	for i := range names {
		names[i] = strings.Repeat("n", i%40)
	}
	r := &Responder{Tokens: tk, Status: func() Status {
		return Status{HostName: "Basalt", NumPlayers: len(names), Players: names}
	}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Request
		n, err := q.Decode(b)
		if err == nil {
			if n != len(b) {
				t.Fatalf("took %d of %d bytes", n, len(b))
			}
			var again Request
			if _, err := again.Decode(q.Append(nil)); err != nil || again != q {
				t.Fatalf("re-encoded %+v decodes to %+v, %v", q, again, err)
			}
		}
		reply, err := r.Answer(nil, b, client, t0)
		switch {
		case err != nil && len(reply) != 0:
			t.Fatalf("refused with a reply % x", reply)
		case err == nil && q.Type == TypeHandshake && len(reply) > 16:
			t.Fatalf("handshake reply of %d bytes", len(reply))
		case len(reply) > MaxFullStat:
			t.Fatalf("reply of %d bytes", len(reply))
		}
	})
}
