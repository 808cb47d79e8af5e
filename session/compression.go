package session

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/snappy"
)

// compressionID is the byte after 0xfe in every batch once NetworkSettings has
// been sent (protocol 649+).
type compressionID byte

const (
	// compressionFlate is raw DEFLATE (RFC 1951, no zlib header), which
	// Mojang calls "ZLib".
	compressionFlate compressionID = 0x00
	// compressionSnappy is the Snappy block format. gophertunnel notes it
	// crashes devices without AVX2, so Basalt only reads it.
	compressionSnappy compressionID = 0x01
	// compressionNone marks a batch sent uncompressed, typically one under
	// the announced threshold.
	compressionNone compressionID = 0xff
)

// String returns the algorithm's name.
func (c compressionID) String() string {
	switch c {
	case compressionFlate:
		return "deflate"
	case compressionSnappy:
		return "snappy"
	case compressionNone:
		return "none"
	}
	return fmt.Sprintf("compressionID(%#02x)", byte(c))
}

const (
	// flateLevel matches gophertunnel's encoder.
	flateLevel = 6
	// minInflateBuffer is the first buffer size inflate grows to.
	minInflateBuffer = 4 << 10
)

// Flate state is large (hundreds of KiB for a writer), so it is pooled across
// sessions rather than kept per session: thousands of idle sessions hold none.
// Each pooled value owns the reader or writer the flate state is bound to, so
// nothing in a pool points into a Session and a closed one can be collected.
var (
	inflaters = sync.Pool{New: func() any {
		f := new(inflater)
		f.r = flate.NewReader(&f.br)
		return f
	}}
	deflaters = sync.Pool{New: func() any {
		f := new(deflater)
		w, err := flate.NewWriter(&f.aw, flateLevel)
		if err != nil {
			panic(err) // flateLevel is a valid constant.
		}
		f.w = w
		return f
	}}
)

// inflater is a pooled flate reader and the source it reads from.
type inflater struct {
	r  io.ReadCloser // reads from br
	br bytes.Reader
}

// deflater is a pooled flate writer and the sink it writes to.
type deflater struct {
	w  *flate.Writer // writes to aw
	aw appendWriter
}

// appendWriter is an io.Writer that appends to b, so a flate.Writer can
// compress straight into a reused output buffer.
type appendWriter struct{ b []byte }

// Write appends p to w.b.
func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// inflate decompresses the raw DEFLATE stream src into dst[:0] and returns
// the result and the bytes the stream produced, refused or not. It asks the
// decompressor for at most limit+1 bytes in all, growing dst only as output
// actually arrives, so a stream that expands beyond limit is refused having
// inflated and allocated about limit bytes, never its full expansion. The
// flate state is pooled, so steady state allocates nothing.
func inflate(dst, src []byte, limit int) (out []byte, n int, err error) {
	f := inflaters.Get().(*inflater)
	defer inflaters.Put(f)
	f.br.Reset(src)
	defer f.br.Reset(nil) // the pooled reader must not pin src
	if err := f.r.(flate.Resetter).Reset(&f.br, nil); err != nil {
		return dst[:0], 0, fmt.Errorf("inflate: %w", err)
	}
	limit = max(limit, 0)
	out = dst[:0]
	for {
		if len(out) == cap(out) {
			grow := min(max(2*cap(out), minInflateBuffer), limit+1)
			out = slices.Grow(out, grow-len(out))
		}
		// Never ask for more than limit+1 in all, whatever capacity the
		// buffer has: the decompressor works only as far as it is read.
		k, err := f.r.Read(out[len(out):min(cap(out), limit+1)])
		out = out[:len(out)+k]
		if len(out) > limit {
			return out[:0], len(out), fmt.Errorf("inflate: %w (%d bytes)", ErrTooLarge, limit)
		}
		if err == io.EOF {
			return out, len(out), nil
		}
		if err != nil {
			return out[:0], len(out), fmt.Errorf("inflate: %w", err)
		}
	}
}

// deflate appends the raw DEFLATE compression of src to dst. The flate state
// is pooled, so steady state allocates nothing.
func deflate(dst, src []byte) ([]byte, error) {
	f := deflaters.Get().(*deflater)
	defer deflaters.Put(f)
	f.aw.b = dst
	defer func() { f.aw.b = nil }() // the pooled writer must not pin dst
	f.w.Reset(&f.aw)
	if _, err := f.w.Write(src); err != nil {
		return dst, fmt.Errorf("deflate: %w", err)
	}
	if err := f.w.Close(); err != nil {
		return dst, fmt.Errorf("deflate: %w", err)
	}
	return f.aw.b, nil
}

// unsnappy decodes the Snappy block src into dst's storage. The block states
// its decoded length up front, which is checked against limit before any
// allocation.
func unsnappy(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("unsnappy: %w", err)
	}
	if n > limit {
		return dst, fmt.Errorf("unsnappy: %w (%d bytes)", ErrTooLarge, limit)
	}
	out, err := snappy.Decode(dst[:0], src)
	if err != nil {
		return dst, fmt.Errorf("unsnappy: %w", err)
	}
	return out, nil
}
