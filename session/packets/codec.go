package packets

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/basaltmc/basalt/session"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// ErrUnknownPacket is wrapped by the error Decode returns for a packet id
// that gophertunnel's client pool does not hold: a packet a client may not
// send, or one newer than the packet library.
var ErrUnknownPacket = errors.New("unknown packet id")

// ErrMalformed is wrapped by the error Decode returns for a payload that
// does not decode as its packet: truncated, with bytes left over, a length
// beyond the payload, an enum value out of range.
var ErrMalformed = errors.New("malformed packet")

// clientPool returns the packets a client may send, built once on first use
// so that packets registered by other packages' init functions are in it.
// It is only read after that, so sessions share it.
var clientPool = sync.OnceValue(packet.NewClientPool)

// maxRetainedBuffer is the largest encoding buffer kept for reuse; a bigger
// one, left by a large packet, is dropped so an idle server holds little.
const maxRetainedBuffer = 64 << 10

// buffers holds encoding buffers between writes.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// Codec decodes the packets a client sends and encodes those a server writes,
// laid out for one protocol: BaseProtocol as gophertunnel's protocol/packet
// package lays them out, a later one with that protocol's delta (v2225.go).
// Its zero value is usable: BaseProtocol, shield item runtime ID 0. A Codec
// is a plain value and safe for concurrent use.
type Codec struct {
	// ShieldID is the runtime ID of the minecraft:shield item in the
	// ItemRegistry the server sent the client. Item stacks carry extra
	// fields for that item, so it must match for any packet that holds an
	// item stack. Zero when the server sent no shield.
	ShieldID int32
	// Protocol is the network protocol the packets are laid out for, one
	// of Protocols. Zero means BaseProtocol. Write and Adapter use the
	// session's protocol instead.
	Protocol int32
}

// For returns c laid out for the protocol of the client of s.
func (c Codec) For(s *session.Session) Codec {
	c.Protocol = s.Protocol()
	return c
}

// Decode decodes a packet the client sent. An id not in gophertunnel's
// client pool gives an error wrapping ErrUnknownPacket; a payload that does
// not decode, or leaves bytes unread, one wrapping ErrMalformed; a packet
// the protocol changed in a way this build does not translate, one
// wrapping ErrUnsupported. It never panics: the packet library's readers
// panic on bad input, and Decode recovers, as gophertunnel's own Conn does.
// Lengths in the payload are checked against the bytes that remain and
// slices against the library's limits before anything is allocated for
// them. The packet does not alias p.Payload.
func (c Codec) Decode(p session.Packet) (pk packet.Packet, err error) {
	return c.DecodeWith(clientPool(), p)
}

// DecodeWith is Decode with the packets of pool: packet.NewServerPool() to
// read what a server sends, for a client or a proxy.
func (c Codec) DecodeWith(pool packet.Pool, p session.Packet) (pk packet.Packet, err error) {
	newPacket, ok := pool[p.ID]
	if !ok {
		return nil, fmt.Errorf("decode packet %#x: %w", p.ID, ErrUnknownPacket)
	}
	ds, err := chain(c.Protocol)
	if err != nil {
		return nil, fmt.Errorf("decode packet %#x: %w", p.ID, err)
	}
	pk = newPacket()
	m, err := marshaler(ds, pk)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	buf := bytes.NewBuffer(p.Payload)
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && errors.Is(e, ErrUnsupported) {
				pk, err = nil, fmt.Errorf("decode %T: %w", pk, e)
				return
			}
			pk, err = nil, fmt.Errorf("decode %T: %w: %v", pk, ErrMalformed, r)
		}
	}()
	m(protocol.NewReader(buf, c.ShieldID, true))
	if buf.Len() != 0 {
		return nil, fmt.Errorf("decode %T: %w: %d bytes left over", pk, ErrMalformed, buf.Len())
	}
	return pk, nil
}

// Append appends pk's payload, without the packet header, to b. A packet
// whose fields the library refuses to write (an empty Text message, an enum
// value out of range), or that the protocol changed in a way this build
// does not translate (ErrUnsupported), gives an error, and b unchanged.
func (c Codec) Append(b []byte, pk packet.Packet) (out []byte, err error) {
	ds, err := chain(c.Protocol)
	if err != nil {
		return b, fmt.Errorf("encode %T: %w", pk, err)
	}
	m, err := marshaler(ds, pk)
	if err != nil {
		return b, fmt.Errorf("encode: %w", err)
	}
	n := len(b)
	buf := bytes.NewBuffer(b)
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				out, err = b[:n], fmt.Errorf("encode %T: %w", pk, e)
				return
			}
			out, err = b[:n], fmt.Errorf("encode %T: %v", pk, r)
		}
	}()
	m(protocol.NewWriter(buf, c.ShieldID))
	return buf.Bytes(), nil
}

// Write encodes pk for the protocol of the client of s, whatever
// c.Protocol says, and buffers it on s for the next batch, as
// Session.WritePacket does. It is safe to call from any goroutine.
func (c Codec) Write(s *session.Session, pk packet.Packet) error {
	c = c.For(s)
	buf := buffers.Get().(*[]byte)
	b, err := c.Append((*buf)[:0], pk)
	if err == nil {
		// WritePacket copies the payload, so the buffer is free again.
		err = s.WritePacket(pk.ID(), b)
	}
	if cap(b) <= maxRetainedBuffer {
		*buf = b[:0]
		buffers.Put(buf)
	}
	return err
}
