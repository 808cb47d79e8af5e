package session

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// A batch is how game packets travel inside a transport message:
//
//	0xfe | [compression id u8, after NetworkSettings] | payload
//	payload (after decompression) = repeat { varuint32 length | packet }
//	packet = varuint32 header (id | sender<<10 | target<<12) | fields
//
// Once encryption is on, everything after the 0xfe, compression id
// included, is encrypted with an 8-byte checksum appended (see
// encryption.go): 0xfe | AES-CTR(compression id | payload | checksum).
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
	// maxRetainedInflateBuffer is the largest decompression buffer a
	// batchDecoder keeps: a client's batches in play are small, and the
	// one that inflates to tens of KiB (the Login, with its skin) would
	// otherwise stay allocated for the whole session.
	maxRetainedInflateBuffer = 16 << 10
)

// Caps on the decompressed size of an incoming batch, unless Config says
// otherwise. A batch over the cap in force ends its session.
const (
	// DefaultMaxDecompressedSize is the cap once the player has logged in:
	// 16 MiB, as gophertunnel allows, for the largest packets a player
	// sends (a skin change carries the same skin as the Login).
	DefaultMaxDecompressedSize = 16 << 20
	// DefaultMaxPreLoginSize is the cap before the player has logged in,
	// when the only large packet a client sends is the Login, whose client
	// data carries the skin, its geometry and animations, base64-encoded
	// twice. With an elaborate skin that runs well past a few hundred KiB:
	// PocketMine-MP refused real skins at a 2 MiB cap (its issues 3733,
	// Glub Glub headwear, and 5472) until it raised the cap to 8 MiB
	// (b77193b, 2024), and a macOS client's Login decompressed to
	// 2,172,295 bytes (Pumpkin issue 2204). 4 MiB leaves room for twice the
	// largest Login on record while cutting what a connection that has
	// proven nothing can make the server inflate to a quarter of
	// DefaultMaxDecompressedSize.
	DefaultMaxPreLoginSize = 4 << 20
)

// ErrTooLarge is wrapped by the error Run returns when the client sent a
// batch that decompresses beyond the cap in force (Config.MaxPreLoginSize
// before the player has logged in, Config.MaxDecompressedSize after).
// Decompression stops at the cap: the rest of the batch is never inflated.
var ErrTooLarge = errors.New("decompressed size exceeds limit")

// ErrDecompressionBudget is wrapped by the error Run returns when the client
// sent compressed batches faster than the session's decompression budget
// allows (see decompressRate). Decompression stops when the budget runs out.
var ErrDecompressionBudget = errors.New("decompression budget exceeded")

// batchDecoder splits incoming batches into packets. It is owned by one
// goroutine. The packets it returns alias the input batch or its scratch
// buffer and stay valid until the next decode or release.
type batchDecoder struct {
	// maxSize caps the decompressed payload of a batch.
	maxSize int
	// compressed reports whether batches carry a compression id byte, which
	// they do once NetworkSettings has been sent.
	compressed bool
	// framed reports whether the transport delimits batches itself, so
	// they carry no 0xfe header (Transport.Framed).
	framed bool
	// budget limits the bytes inflated per second; its zero value, no
	// limit.
	budget tokenBucket
	// now returns the time the budget is reckoned at; nil means time.Now.
	// Tests set a fixed clock.
	now func() time.Time
	// inflated counts the bytes decompression has produced, those of
	// refused batches included.
	inflated int64
	// crypt, once set, decrypts every batch and checks its checksum before
	// anything else looks at it.
	crypt *crypt
	// size is the decompressed size of the last batch decoded.
	size int

	buf     []byte
	packets []Packet
}

// clock returns the decoder's idea of the time.
func (d *batchDecoder) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// decode validates batch b as a whole and returns its packets. An error means
// none of the batch's packets should be handled.
func (d *batchDecoder) decode(b []byte) ([]Packet, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("decode batch: %w", io.ErrUnexpectedEOF)
	}
	data := b
	if !d.framed {
		if b[0] != batchHeader {
			return nil, fmt.Errorf("decode batch: header %#02x, want %#02x", b[0], batchHeader)
		}
		data = b[1:]
	}
	if d.crypt != nil {
		// Decrypted in place: the session owns the batch (see Conn).
		var err error
		if data, err = d.crypt.open(data); err != nil {
			return nil, fmt.Errorf("decode batch: %w", err)
		}
	}
	if d.compressed {
		if len(data) == 0 {
			return nil, fmt.Errorf("decode batch: compression id: %w", io.ErrUnexpectedEOF)
		}
		id := compressionID(data[0])
		if id == compressionNone {
			data = data[1:]
		} else {
			var err error
			if data, err = d.decompress(id, data[1:]); err != nil {
				return nil, fmt.Errorf("decode batch: %w", err)
			}
		}
	}
	if len(data) > d.maxSize {
		return nil, fmt.Errorf("decode batch: %w (%d bytes)", ErrTooLarge, d.maxSize)
	}
	d.size = len(data)
	return d.split(data)
}

// decompress decompresses src with the algorithm id into the scratch
// buffer, within the size cap and what is left of the budget, and charges
// the budget for the output.
func (d *batchDecoder) decompress(id compressionID, src []byte) ([]byte, error) {
	now := d.clock()
	limit, budgeted := d.maxSize, false
	if left := d.budget.available(now); left < limit {
		limit, budgeted = left, true
	}
	var n int
	var err error
	switch id {
	case compressionFlate:
		d.buf, n, err = inflate(d.buf, src, limit)
	case compressionSnappy:
		d.buf, err = unsnappy(d.buf, src, limit)
		n = len(d.buf)
		if err != nil {
			n = 0 // refused from its stated length, before decoding
		}
	default:
		return nil, fmt.Errorf("unknown compression id %#02x", byte(id))
	}
	d.inflated += int64(n)
	d.budget.take(n, now)
	if budgeted && errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("%w (%d bytes left)", ErrDecompressionBudget, limit)
	}
	if err != nil {
		return nil, err
	}
	return d.buf, nil
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
	if cap(d.buf) > maxRetainedInflateBuffer {
		d.buf = nil
	}
}

// batchEncoder collects outgoing packets and encodes them as one batch. It
// must be guarded by its owner's lock.
type batchEncoder struct {
	// compressed reports whether batches carry a compression id byte.
	compressed bool
	// framed reports whether the transport delimits batches itself, so
	// they carry no 0xfe header (Transport.Framed).
	framed bool
	// threshold is the smallest payload that is compressed, with DEFLATE
	// (Snappy is only read: see compressionSnappy); 0 disables compression
	// (the id byte is then always 0xff).
	threshold int
	// crypt, once set, appends the checksum to every batch and encrypts it.
	crypt *crypt

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
	out := e.out[:0]
	if !e.framed {
		out = append(out, batchHeader)
	}
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
	e.pending = e.pending[:0]
	e.count = 0
	if err != nil {
		e.out = out
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	if e.crypt != nil {
		if e.framed {
			out = e.crypt.sealFrom(out, 0)
		} else {
			out = e.crypt.seal(out)
		}
	}
	e.out = out
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
