package packets

import (
	"errors"
	"slices"
	"testing"

	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// TestBaseProtocol fails the day gophertunnel's packet structures are laid
// out for another protocol than BaseProtocol, with what to do about it.
func TestBaseProtocol(t *testing.T) {
	if protocol.CurrentProtocol == BaseProtocol {
		return
	}
	t.Fatalf(`gophertunnel's packet structures are now laid out for protocol %d, and BaseProtocol is %d.
To move the base (nothing panics meanwhile, but every protocol's bytes are wrong until then):
 1. Set BaseProtocol to %[1]d.
 2. If %[1]d has a delta (v%[1]d.go), it led up from the old base: turn it into a delta for %[2]d
    that leads down from %[1]d (delta.from %[1]d), each marshal undoing its change: a field it added
    is left out, one it removed is put back. Name the file v%[2]d.go.
 3. Deltas of other protocols that led from %[2]d lead from their neighbour as before; check each
    with node testdata/diff.js against the new base's minecraft-data version.
 4. Keep session/protocols.go's list; fix its doc and this package's (doc.go, v*.go) where they
    name gophertunnel's version and base.
 5. go test -run TestGolden -args -update, and check golden.json's diff: only the base's bytes
    may change, and only where gophertunnel's structures did.`, protocol.CurrentProtocol, BaseProtocol)
}

// TestDeltas checks that each registered delta leads to the base, that no
// protocol has two, and that none is for the base itself.
func TestDeltas(t *testing.T) {
	seen := map[int32]bool{}
	for _, d := range deltas {
		if d.protocol == BaseProtocol {
			t.Errorf("a delta leads to the base protocol %d", d.protocol)
		}
		if seen[d.protocol] {
			t.Errorf("protocol %d has two deltas", d.protocol)
		}
		seen[d.protocol] = true
		if _, err := chain(d.protocol); err != nil {
			t.Errorf("protocol %d: its deltas do not lead to the base %d: %v", d.protocol, BaseProtocol, err)
		}
	}
}

// TestChain checks the chains deltas make, up from the base and down, and
// that a chain that does not reach the base is refused, not a panic.
func TestChain(t *testing.T) {
	saved := deltas
	t.Cleanup(func() { deltas = saved })
	up := &delta{protocol: BaseProtocol + 10}
	upper := &delta{protocol: BaseProtocol + 20, from: BaseProtocol + 10}
	down := &delta{protocol: BaseProtocol - 10, from: BaseProtocol}
	stray := &delta{protocol: 7, from: 5}
	loop1 := &delta{protocol: 8, from: 9}
	loop2 := &delta{protocol: 9, from: 8}
	deltas = []*delta{upper, up, down, stray, loop1, loop2}
	built := buildChains()
	tests := []struct {
		protocol int32
		want     []*delta
	}{
		{BaseProtocol + 10, []*delta{up}},
		{BaseProtocol + 20, []*delta{up, upper}},
		{BaseProtocol - 10, []*delta{down}},
		{7, nil},
		{8, nil},
	}
	for _, tc := range tests {
		got, ok := built[tc.protocol]
		if tc.want == nil {
			if ok {
				t.Errorf("protocol %d: got chain %v, want none", tc.protocol, got)
			}
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("protocol %d: got %v, want %v", tc.protocol, got, tc.want)
		}
	}
}

// TestUnknownProtocolRefused checks that a protocol without deltas gives
// ErrUnknownProtocol both ways.
func TestUnknownProtocolRefused(t *testing.T) {
	c := Codec{Protocol: 2226}
	if _, err := c.Append(nil, &packet.Text{TextType: packet.TextTypeRaw, Message: "x"}); !errors.Is(err, ErrUnknownProtocol) {
		t.Errorf("append: got %v, want ErrUnknownProtocol", err)
	}
	if _, err := c.Decode(sessionPacket(packet.IDText, []byte{0})); !errors.Is(err, ErrUnknownProtocol) {
		t.Errorf("decode: got %v, want ErrUnknownProtocol", err)
	}
}
