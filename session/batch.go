package session

import (
	"fmt"
	"io"
)

// A batch is how game packets travel inside a transport message:
//
//	0xfe | [compression id u8, after NetworkSettings] | payload
//	payload (after decompression) = repeat { varuint32 length | packet }
//	packet = varuint32 header (id | sender<<10 | target<<12) | fields
const (
	// batchHeader opens every batch.
	batchHeader byte = 0xfe
	// maxPacketsPerBatch is gophertunnel's server-side cap on packets per
	// batch.
	maxPacketsPerBatch = 812
	// maxPendingSize is how much framed packet data a session buffers before
	// it flushes early. A batch of several packets stays within about this
	// size, but one packet is never split, so a single packet larger than the
	// client's own decompression cap still yields a batch the client refuses.
	maxPendingSize = 1 << 20
	// maxRetainedBuffer is the largest buffer a codec keeps between batches;
	// a bigger one is dropped after use so an idle session holds little.
	maxRetainedBuffer = 1 << 20
)

// DefaultMaxDecompressedSize is the largest decompressed batch a session
// accepts unless Config says otherwise: 16 MiB, as gophertunnel allows, since
// logins with large skins run to several MiB.
const DefaultMaxDecompressedSize = 16 << 20

// batchDecoder splits incoming batches into packets. It is owned by one
// goroutine. The packets it returns alias the input batch or its scratch
// buffer and stay valid until the next decode or release.
type batchDecoder struct {
	// maxSize caps the decompressed payload of a batch.
	maxSize int
	// compressed reports whether batches carry a compression id byte, which
	// they do once NetworkSettings has been sent.
	compressed bool

	buf     []byte
	packets []Packet
}

// decode validates batch b as a whole and returns its packets. An error means
// none of the batch's packets should be handled.
func (d *batchDecoder) decode(b []byte) ([]Packet, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("decode batch: %w", io.ErrUnexpectedEOF)
	}
	if b[0] != batchHeader {
		return nil, fmt.Errorf("decode batch: header %#02x, want %#02x", b[0], batchHeader)
	}
	data := b[1:]
	if d.compressed {
		if len(data) == 0 {
			return nil, fmt.Errorf("decode batch: compression id: %w", io.ErrUnexpectedEOF)
		}
		var err error
		switch id := compressionID(data[0]); id {
		case compressionNone:
			data = data[1:]
		case compressionFlate:
			d.buf, err = inflate(d.buf, data[1:], d.maxSize)
			data = d.buf
		case compressionSnappy:
			d.buf, err = unsnappy(d.buf, data[1:], d.maxSize)
			data = d.buf
		default:
			return nil, fmt.Errorf("decode batch: unknown compression id %#02x", byte(id))
		}
		if err != nil {
			return nil, fmt.Errorf("decode batch: %w", err)
		}
	}
	if len(data) > d.maxSize {
		return nil, fmt.Errorf("decode batch: %w (%d bytes)", errTooLarge, d.maxSize)
	}
	return d.split(data)
}

// split frames the decompressed payload into packets.
func (d *batchDecoder) split(data []byte) ([]Packet, error) {
	pks := d.packets[:0]
	for len(data) > 0 {
		l, n, err := readVaruint32(data)
		if err != nil {
			return nil, fmt.Errorf("decode batch: packet %d length: %w", len(pks), err)
		}
		data = data[n:]
		if l == 0 {
			return nil, fmt.Errorf("decode batch: packet %d is empty", len(pks))
		}
		if uint64(l) > uint64(len(data)) {
			return nil, fmt.Errorf("decode batch: packet %d length %d exceeds remaining %d: %w",
				len(pks), l, len(data), io.ErrUnexpectedEOF)
		}
		if len(pks) == maxPacketsPerBatch {
			return nil, fmt.Errorf("decode batch: more than %d packets", maxPacketsPerBatch)
		}
		// The full slice expression stops a handler that appends to a
		// payload from overwriting the next packet.
		pk := data[:l:l]
		data = data[l:]
		h, n, err := readVaruint32(pk)
		if err != nil {
			return nil, fmt.Errorf("decode batch: packet %d header: %w", len(pks), err)
		}
		id, sender, target := parseHeader(h)
		pks = append(pks, Packet{ID: id, Sender: sender, Target: target, Payload: pk[n:]})
	}
	d.packets = pks
	return pks, nil
}

// release drops references into the last batch and frees an oversized
// scratch buffer, once its packets have been handled.
func (d *batchDecoder) release() {
	clear(d.packets)
	d.packets = d.packets[:0]
	if cap(d.buf) > maxRetainedBuffer {
		d.buf = nil
	}
}

// batchEncoder collects outgoing packets and encodes them as one batch. It
// must be guarded by its owner's lock.
type batchEncoder struct {
	// compressed reports whether batches carry a compression id byte.
	compressed bool
	// threshold is the smallest payload that is compressed, with DEFLATE
	// (Snappy is only read: see compressionSnappy); 0 disables compression
	// (the id byte is then always 0xff).
	threshold int

	pending []byte // framed packets: varuint32 length | header | payload
	count   int    // packets in pending
	out     []byte
}

// add frames p onto the pending batch. The caller validates p and keeps count
// under maxPacketsPerBatch.
func (e *batchEncoder) add(p Packet) {
	h := p.header()
	e.pending = appendVaruint32(e.pending, uint32(varuint32Len(h)+len(p.Payload)))
	e.pending = appendVaruint32(e.pending, h)
	e.pending = append(e.pending, p.Payload...)
	e.count++
}

// encode turns the pending packets into one batch and empties the pending
// list. The result is valid until the next encode or release.
func (e *batchEncoder) encode() ([]byte, error) {
	out := append(e.out[:0], batchHeader)
	var err error
	switch {
	case !e.compressed:
		out = append(out, e.pending...)
	case e.threshold == 0 || len(e.pending) < e.threshold:
		out = append(out, byte(compressionNone))
		out = append(out, e.pending...)
	default:
		out, err = deflate(append(out, byte(compressionFlate)), e.pending)
	}
	e.out = out
	e.pending = e.pending[:0]
	e.count = 0
	if err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	return out, nil
}

// release frees oversized buffers once a batch has been written.
func (e *batchEncoder) release() {
	if cap(e.out) > maxRetainedBuffer {
		e.out = nil
	}
	if cap(e.pending) > maxRetainedBuffer {
		e.pending = nil
	}
}
