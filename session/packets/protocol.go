package packets

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// BaseProtocol is the protocol whose layout gophertunnel's packet
// structures have, so that a Codec for it marshals packets as the library
// does: 2193, Minecraft 1.26.50, the layout of gophertunnel v1.62.0
// (minecraft/protocol/info.go). Every other protocol is a delta over
// another, leading from the base up (v2225.go) or down. It is a number of
// ours rather than gophertunnel's CurrentProtocol, so a dependency bump
// cannot change what a protocol's bytes are: TestBaseProtocol fails, with
// what to do, the day gophertunnel moves.
const BaseProtocol int32 = 2193

// ErrUnsupported is wrapped by the error a Codec returns for a packet whose
// layout changed at a protocol in a way this build does not translate (a
// new field of a nested type, a renumbered enum), so that it is never
// sent or read in another layout. No delta of this build refuses a packet.
var ErrUnsupported = errors.New("packet not supported at this protocol")

// ErrUnknownProtocol is wrapped by the error a Codec returns for a protocol
// that is neither BaseProtocol nor one with a delta that leads to it.
var ErrUnknownProtocol = errors.New("unknown protocol")

// A delta is how one protocol's packets differ from another's, the one it
// is laid over: a protocol's delta leads from the protocol before it (up
// from the base) or after it (down from the base). Each protocol other
// than BaseProtocol has one, in a file of its own (v2225.go), registered
// by that file's init function.
type delta struct {
	// protocol is the protocol the delta leads to.
	protocol int32
	// from is the protocol it is laid over; zero means BaseProtocol.
	from int32
	// packets holds the packets whose layout changed, by ID: each marshals
	// pk with io, calling prev where the previous protocol's fields go,
	// before or after the fields it adds, or not at all for a packet it
	// lays out anew. It works for reading and writing alike, as
	// gophertunnel's Marshal methods do.
	packets map[uint32]func(pk packet.Packet, io protocol.IO, prev func(protocol.IO))
	// unsupported lists the packets whose layout changed and that this
	// build does not translate, each with what changed.
	unsupported map[uint32]string
}

// deltas are the registered deltas, in the order registered.
var deltas []*delta

// register adds d to the deltas. It is called from init functions only,
// and checks nothing: a delta that leads nowhere, or a protocol with two,
// is an error TestDeltas reports and chain refuses, not a panic at start.
func register(d *delta) {
	deltas = append(deltas, d)
}

// chains maps each protocol a delta leads to onto the deltas that lead
// there from BaseProtocol, in order; a protocol whose deltas do not reach
// the base is left out. It is built once, after every init function.
var chains = sync.OnceValue(buildChains)

// buildChains builds chains' map from deltas.
func buildChains() map[int32][]*delta {
	byProtocol := make(map[int32]*delta, len(deltas))
	for _, d := range deltas {
		if _, dup := byProtocol[d.protocol]; !dup {
			byProtocol[d.protocol] = d
		}
	}
	m := make(map[int32][]*delta, len(deltas))
	for p := range byProtocol {
		var ds []*delta
		for at := p; at != BaseProtocol; {
			d, ok := byProtocol[at]
			if !ok || len(ds) > len(byProtocol) { // no delta, or a cycle
				ds = nil
				break
			}
			ds = append(ds, d)
			at = cmp.Or(d.from, BaseProtocol)
		}
		if ds != nil {
			slices.Reverse(ds)
			m[p] = ds
		}
	}
	return m
}

// Protocols returns every protocol a Codec speaks, oldest first: BaseProtocol
// and each protocol with deltas that lead to it from the base.
func Protocols() []int32 {
	ps := []int32{BaseProtocol}
	for p := range chains() {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// chain returns the deltas that lead from BaseProtocol to p.
func chain(p int32) ([]*delta, error) {
	if p == 0 || p == BaseProtocol {
		return nil, nil
	}
	ds, ok := chains()[p]
	if !ok {
		return nil, fmt.Errorf("protocol %d: %w", p, ErrUnknownProtocol)
	}
	return ds, nil
}

// marshaler returns the function that marshals pk at the end of ds.
func marshaler(ds []*delta, pk packet.Packet) (func(protocol.IO), error) {
	id := pk.ID()
	for i := len(ds) - 1; i >= 0; i-- {
		if what, ok := ds[i].unsupported[id]; ok {
			return nil, fmt.Errorf("%T at protocol %d (%s): %w", pk, ds[i].protocol, what, ErrUnsupported)
		}
		if f, ok := ds[i].packets[id]; ok {
			prev, err := marshaler(ds[:i], pk)
			if err != nil {
				return nil, err
			}
			return func(io protocol.IO) { f(pk, io, prev) }, nil
		}
	}
	return pk.Marshal, nil
}

// hook is a protocol.IO that runs do just before the field at ptr is
// marshalled, or in its place when skip is set, to read or write a field a
// later protocol put there or to leave out one it took away. Only the
// kinds of field deltas hook are hooked; a delta whose field is never
// reached panics, which Codec turns into an error, rather than silently
// leaving the change out.
type hook struct {
	protocol.IO
	ptr   any
	do    func(protocol.IO)
	skip  bool
	fired bool
}

// before marshals with m, running do just before the field at ptr.
func before(io protocol.IO, ptr any, do func(protocol.IO), m func(protocol.IO)) {
	runHook(&hook{IO: io, ptr: ptr, do: do}, m)
}

// instead marshals with m, running do (nil: nothing) in place of the field
// at ptr.
func instead(io protocol.IO, ptr any, do func(protocol.IO), m func(protocol.IO)) {
	runHook(&hook{IO: io, ptr: ptr, do: do, skip: true}, m)
}

func runHook(h *hook, m func(protocol.IO)) {
	m(asReader(h.IO, h))
	if !h.fired {
		panic(fmt.Sprintf("delta: field %T was not marshalled", h.ptr))
	}
}

// at runs the hook if x is its field, and reports whether the field's own
// marshal is to be skipped.
func (h *hook) at(x any) bool {
	if x != h.ptr || h.fired {
		return false
	}
	h.fired = true
	if h.do != nil {
		h.do(h.IO)
	}
	return h.skip
}

// Varint32 hooks int32 fields written as varint32.
func (h *hook) Varint32(x *int32) {
	if !h.at(x) {
		h.IO.Varint32(x)
	}
}

// String hooks string fields.
func (h *hook) String(x *string) {
	if !h.at(x) {
		h.IO.String(x)
	}
}

// ItemInstance hooks item instance fields.
func (h *hook) ItemInstance(x *protocol.ItemInstance) {
	if !h.at(x) {
		h.IO.ItemInstance(x)
	}
}

// sliceLimiter is what gophertunnel's slice helpers (protocol.SliceOfLen)
// look for in an IO to tell reading from writing: a reader checks the
// length and allocates the slice.
type sliceLimiter interface {
	SliceLength(value, max uint32)
}

// reading reports whether io reads.
func reading(io protocol.IO) bool {
	_, ok := io.(sliceLimiter)
	return ok
}

// asReader returns w, an IO wrapping inner, made to look like a reader to
// gophertunnel's slice helpers if inner is one.
func asReader(inner, w protocol.IO) protocol.IO {
	if l, ok := inner.(sliceLimiter); ok {
		return readWrapper{IO: w, l: l}
	}
	return w
}

// readWrapper is a wrapping IO over a reader, which it must still look
// like.
type readWrapper struct {
	protocol.IO
	l sliceLimiter
}

// SliceLength checks a slice length, as the reader does.
func (r readWrapper) SliceLength(value, max uint32) { r.l.SliceLength(value, max) }
