package session

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// packetsEqual compares packets field by field.
func packetsEqual(a, b []Packet) bool {
	return slices.EqualFunc(a, b, func(x, y Packet) bool {
		return x.ID == y.ID && x.Sender == y.Sender && x.Target == y.Target && bytes.Equal(x.Payload, y.Payload)
	})
}

// clonePackets deep-copies packets out of a decoder's buffers.
func clonePackets(pks []Packet) []Packet {
	out := make([]Packet, len(pks))
	for i, p := range pks {
		p.Payload = bytes.Clone(p.Payload)
		out[i] = p
	}
	return out
}

// encodeBatch encodes pks with a fresh encoder.
func encodeBatch(t testing.TB, compressed bool, threshold int, pks ...Packet) []byte {
	t.Helper()
	e := batchEncoder{compressed: compressed, threshold: threshold}
	for _, p := range pks {
		e.add(p)
	}
	b, err := e.encode()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

func TestBatchGolden(t *testing.T) {
	ns := networkSettings{CompressionThreshold: 512, CompressionAlgorithm: compressionAlgorithmFlate}
	rns := requestNetworkSettings{ClientProtocol: 2169}
	ps := playStatus{Status: PlayStatusLoginFailedClient}
	dc := disconnect{Reason: DisconnectReasonKicked, Message: "Hello"}
	tests := []struct {
		name       string
		compressed bool
		packet     Packet
		want       string
	}{
		{"RequestNetworkSettings 2169", false,
			Packet{ID: IDRequestNetworkSettings, Payload: rns.Append(nil)},
			"fe 06 c1 01 00 00 08 79"},
		{"NetworkSettings threshold 512 deflate", false,
			Packet{ID: IDNetworkSettings, Payload: ns.Append(nil)},
			"fe 0c 8f 01 00 02 00 00 00 00 00 00 00 00"},
		{"PlayStatus client outdated", false,
			Packet{ID: IDPlayStatus, Payload: ps.Append(nil)},
			"fe 05 02 00 00 00 01"},
		{"Disconnect Kicked Hello after NetworkSettings", true,
			Packet{ID: IDDisconnect, Payload: dc.Append(nil)},
			"fe ff 0a 05 6e 00 05 48 65 6c 6c 6f 00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.want)
			got := encodeBatch(t, tc.compressed, 512, tc.packet)
			if !bytes.Equal(got, want) {
				t.Errorf("encode: got % x, want % x", got, want)
			}
			d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: tc.compressed}
			pks, err := d.decode(want)
			if err != nil {
				t.Fatalf("decode: got %v, want nil", err)
			}
			if !packetsEqual(pks, []Packet{tc.packet}) {
				t.Errorf("decode: got %+v, want %+v", pks, tc.packet)
			}
			// The test client's independent framing agrees.
			mode := preSettings
			if tc.compressed {
				mode = plain
			}
			if c := clientBatch(t, mode, tc.packet); !bytes.Equal(c, want) {
				t.Errorf("client framing: got % x, want % x", c, want)
			}
		})
	}
}

// testPackets returns a mix of packets: sub-client ids, empty, small and
// large payloads.
func testPackets() []Packet {
	big := bytes.Repeat([]byte("basalt "), 20000)
	return []Packet{
		{ID: IDLogin, Payload: []byte{1, 2, 3}},
		{ID: 0x3ff, Sender: 3, Target: 2, Payload: nil},
		{ID: IDDisconnect, Payload: big},
		{ID: 0x7f, Sender: 1, Payload: []byte("x")},
		{ID: 0x80, Target: 3, Payload: big[:300]},
	}
}

func TestBatchRoundTrip(t *testing.T) {
	tests := []struct {
		name       string
		compressed bool
		threshold  int
		wantID     int // compression id byte, -1 for none
	}{
		{"before network settings", false, 0, -1},
		{"threshold 0 never compresses", true, 0, 0xff},
		{"below threshold", true, 1 << 30, 0xff},
		{"deflate", true, 1, 0x00},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pks := testPackets()
			b := encodeBatch(t, tc.compressed, tc.threshold, pks...)
			if tc.wantID >= 0 && int(b[1]) != tc.wantID {
				t.Errorf("compression id: got %#02x, want %#02x", b[1], tc.wantID)
			}
			d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: tc.compressed}
			got, err := d.decode(b)
			if err != nil {
				t.Fatalf("decode: got %v, want nil", err)
			}
			if !packetsEqual(got, pks) {
				t.Errorf("got %d packets that differ from the %d sent", len(got), len(pks))
			}
		})
	}
}

func TestBatchThreshold(t *testing.T) {
	p := Packet{ID: 1, Payload: make([]byte, 98)} // framed: 1 length + 1 header + 98 = 100
	tests := []struct {
		threshold int
		want      byte
	}{
		{99, 0x00}, {100, 0x00}, {101, 0xff}, {0, 0xff}, {1, 0x00},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.threshold), func(t *testing.T) {
			b := encodeBatch(t, true, tc.threshold, p)
			if b[1] != tc.want {
				t.Errorf("got id %#02x, want %#02x", b[1], tc.want)
			}
		})
	}
}

// TestBatchDeflateInterop checks the DEFLATE stream against the standard
// library in both directions: it must be raw RFC 1951, with no zlib header.
func TestBatchDeflateInterop(t *testing.T) {
	pks := testPackets()
	ours := encodeBatch(t, true, 1, pks...)
	if got := clientDecode(t, ours, true); !packetsEqual(got, pks) {
		t.Errorf("stdlib inflate of our batch: got %d packets that differ", len(got))
	}
	theirs := clientBatch(t, deflated, pks...)
	d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true}
	got, err := d.decode(theirs)
	if err != nil {
		t.Fatalf("decode stdlib batch: got %v, want nil", err)
	}
	if !packetsEqual(got, pks) {
		t.Errorf("decode stdlib batch: got %d packets that differ", len(got))
	}
}

// TestDecodeBatchSnappy checks a client's Snappy batch (compression id
// 0x01), which the session reads but never writes, decodes to its packets.
func TestDecodeBatchSnappy(t *testing.T) {
	pks := testPackets()
	b := clientBatch(t, snappied, pks...)
	d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true}
	got, err := d.decode(b)
	if err != nil {
		t.Fatalf("decode: got %v, want nil", err)
	}
	if !packetsEqual(got, pks) {
		t.Errorf("got %d packets that differ from the %d sent", len(got), len(pks))
	}
}

// deflateBomb returns raw DEFLATE of n zero bytes.
func deflateBomb(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zeros))
		if _, err := w.Write(zeros[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeBatchHostile(t *testing.T) {
	const maxSize = 256 << 10
	many := make([]Packet, maxPacketsPerBatch+1)
	for i := range many {
		many[i] = Packet{ID: 1}
	}
	snappyBomb := binary.AppendUvarint([]byte{0xfe, 0x01}, 1<<31) // claims 2 GiB
	tests := []struct {
		name       string
		compressed bool
		batch      []byte
		want       string
	}{
		{"empty", false, nil, "unexpected EOF"},
		{"wrong header", false, []byte{0xfd, 0x02, 0x01, 0x00}, "header"},
		{"missing compression id", true, []byte{0xfe}, "compression id"},
		{"unknown compression id", true, []byte{0xfe, 0x02, 0x02, 0x01, 0x00}, "unknown compression id 0x02"},
		{"deflate bomb", true, append([]byte{0xfe, 0x00}, deflateBomb(t, 8*maxSize)...), "exceeds limit"},
		{"snappy bomb", true, snappyBomb, "exceeds limit"},
		{"corrupt deflate", true, []byte{0xfe, 0x00, 0xff, 0xff, 0xff}, "inflate"},
		{"truncated deflate", true, clientBatch(t, deflated, testPackets()...)[:40], "inflate"},
		{"corrupt snappy", true, []byte{0xfe, 0x01, 0x05, 0xff}, "unsnappy"},
		{"uncompressed too large", true, append([]byte{0xfe, 0xff}, make([]byte, maxSize+1)...), "exceeds limit"},
		{"length overflows varuint32", false, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0x1f}, "overflows"},
		{"length of six bytes", false, []byte{0xfe, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, "overflows"},
		{"length truncated", false, []byte{0xfe, 0x80}, "unexpected EOF"},
		{"length beyond remaining", false, []byte{0xfe, 0x05, 0x01, 0x02}, "exceeds remaining"},
		{"huge length beyond remaining", false, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}, "exceeds remaining"},
		{"zero-length packet", false, []byte{0xfe, 0x02, 0x01, 0x00, 0x00}, "empty"},
		{"header overflows", false, []byte{0xfe, 0x05, 0xff, 0xff, 0xff, 0xff, 0x7f}, "header"},
		{"header truncated", false, []byte{0xfe, 0x01, 0x80}, "header"},
		{"813 packets", false, clientBatch(t, preSettings, many...), "more than 812"},
		{"813 packets compressed", true, clientBatch(t, deflated, many...), "more than 812"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := batchDecoder{maxSize: maxSize, compressed: tc.compressed}
			pks, err := d.decode(tc.batch)
			if err == nil {
				t.Fatalf("got %d packets and nil error, want error containing %q", len(pks), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestDecodeBatchLimits(t *testing.T) {
	t.Run("812 packets", func(t *testing.T) {
		pks := make([]Packet, maxPacketsPerBatch)
		for i := range pks {
			pks[i] = Packet{ID: uint32(i % 0x400)}
		}
		d := batchDecoder{maxSize: DefaultMaxDecompressedSize}
		got, err := d.decode(clientBatch(t, preSettings, pks...))
		if err != nil || len(got) != maxPacketsPerBatch {
			t.Errorf("got %d packets, %v; want %d, nil", len(got), err, maxPacketsPerBatch)
		}
	})
	t.Run("deflate exactly at the cap", func(t *testing.T) {
		const maxSize = 64 << 10
		b := clientBatch(t, deflated, Packet{ID: 1, Payload: make([]byte, maxSize-4)})
		d := batchDecoder{maxSize: maxSize, compressed: true}
		if _, err := d.decode(b); err != nil {
			t.Errorf("at the cap: got %v, want nil", err)
		}
		b = clientBatch(t, deflated, Packet{ID: 1, Payload: make([]byte, maxSize-3)})
		if _, err := d.decode(b); !errors.Is(err, ErrTooLarge) {
			t.Errorf("one over the cap: got %v, want %v", err, ErrTooLarge)
		}
	})
	t.Run("empty batches", func(t *testing.T) {
		for _, tc := range []struct {
			compressed bool
			b          []byte
		}{{false, []byte{0xfe}}, {true, []byte{0xfe, 0xff}}} {
			d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: tc.compressed}
			if pks, err := d.decode(tc.b); err != nil || len(pks) != 0 {
				t.Errorf("% x: got %d packets, %v; want 0, nil", tc.b, len(pks), err)
			}
		}
	})
}

// TestDecodeBatchBombMemory checks a DEFLATE stream expanding 64 times past
// the cap is refused having allocated about the cap, not the expansion.
func TestDecodeBatchBombMemory(t *testing.T) {
	const maxSize = 256 << 10
	bomb := append([]byte{0xfe, 0x00}, deflateBomb(t, 64*maxSize)...)
	d := batchDecoder{maxSize: maxSize, compressed: true}
	if _, err := d.decode(bomb); !errors.Is(err, ErrTooLarge) { // warm the pools
		t.Fatalf("got %v, want %v", err, ErrTooLarge)
	}
	d = batchDecoder{maxSize: maxSize, compressed: true}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := d.decode(bomb)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want %v", err, ErrTooLarge)
	}
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*maxSize); got > limit {
		t.Errorf("allocated %d bytes refusing the bomb, want at most %d", got, limit)
	}
}

// TestDecodeBatchBombStopsAtCap checks decompression stops at the cap: issue
// 9's bomb, a 16 KiB batch inflating to 16 MiB, is refused after the
// decompressor produced exactly cap+1 bytes, whatever capacity the scratch
// buffer has from earlier batches.
func TestDecodeBatchBombStopsAtCap(t *testing.T) {
	bomb := issueBomb(t)
	for _, tc := range []struct {
		name    string
		maxSize int
		scratch int // capacity of the scratch buffer before the bomb
	}{
		{"pre-login cap", DefaultMaxPreLoginSize, 0},
		{"pre-login cap, scratch left large by a logged-in batch", DefaultMaxPreLoginSize, 8 << 20},
		{"64 KiB cap", 64 << 10, 0},
		{"logged-in cap", DefaultMaxDecompressedSize - 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := batchDecoder{maxSize: tc.maxSize, compressed: true, buf: make([]byte, 0, tc.scratch)}
			if _, err := d.decode(bomb); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("got %v, want %v", err, ErrTooLarge)
			}
			if got, want := d.inflated, int64(tc.maxSize)+1; got != want {
				t.Errorf("inflated %d bytes refusing the bomb, want %d", got, want)
			}
		})
	}
}

// TestDecodeBatchTruncated checks every strict prefix of a one-packet batch
// fails, beyond the bytes that form an empty batch.
func TestDecodeBatchTruncated(t *testing.T) {
	p := Packet{ID: IDLogin, Payload: bytes.Repeat([]byte{7}, 200)}
	tests := []struct {
		name       string
		compressed bool
		batch      []byte
		empty      int // prefix length that is a valid empty batch
	}{
		{"before network settings", false, clientBatch(t, preSettings, p), 1},
		{"uncompressed", true, clientBatch(t, plain, p), 2},
		{"deflate", true, clientBatch(t, deflated, p), -1},
		{"snappy", true, clientBatch(t, snappied, p), -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for n := range len(tc.batch) {
				if n == tc.empty {
					continue
				}
				d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: tc.compressed}
				if pks, err := d.decode(tc.batch[:n]); err == nil {
					t.Errorf("prefix %d/%d: got %d packets, want error", n, len(tc.batch), len(pks))
				}
			}
		})
	}
}

// TestDecodeBatchPayloadCapacity checks a handler appending to a payload
// cannot overwrite the next packet.
func TestDecodeBatchPayloadCapacity(t *testing.T) {
	b := clientBatch(t, preSettings, Packet{ID: 1, Payload: []byte{1}}, Packet{ID: 2, Payload: []byte{2}})
	d := batchDecoder{maxSize: DefaultMaxDecompressedSize}
	pks, err := d.decode(b)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(pks[0].Payload, 0xaa, 0xbb, 0xcc)
	if !bytes.Equal(pks[1].Payload, []byte{2}) {
		t.Errorf("got second payload % x, want 02", pks[1].Payload)
	}
}

// TestDecodeReleaseDropsLargeBuffer checks a decoder keeps its
// decompression buffer between batches of play, but not one a large batch
// (a Login) grew, which would stay allocated for the whole session.
func TestDecodeReleaseDropsLargeBuffer(t *testing.T) {
	tests := []struct {
		name string
		size int
		kept bool
	}{
		{"tick", 100, true},
		{"chat", 8 << 10, true},
		{"login", 48 << 10, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := make([]byte, tc.size)
			for i := range payload {
				payload[i] = byte(i * 7)
			}
			b := clientBatch(t, deflated, Packet{ID: 1, Payload: payload})
			d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true}
			pks, err := d.decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(pks) != 1 || !bytes.Equal(pks[0].Payload, payload) {
				t.Fatalf("got %d packets, want the one sent", len(pks))
			}
			d.release()
			if kept := d.buf != nil; kept != tc.kept {
				t.Errorf("got buffer kept %v (cap %d), want %v", kept, cap(d.buf), tc.kept)
			}
		})
	}
}

// TestBatchSteadyStateAllocs checks decoding and encoding a DEFLATE batch
// allocate nothing once the codec's buffers and the flate pools are warm.
func TestBatchSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	pks := benchPackets()
	batch := clientBatch(t, deflated, pks...)
	d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true}
	decode := func() {
		if _, err := d.decode(batch); err != nil {
			t.Fatal(err)
		}
		d.release()
	}
	e := batchEncoder{compressed: true, threshold: 1}
	encode := func() {
		for _, p := range pks {
			e.add(p)
		}
		b, err := e.encode()
		if err != nil {
			t.Fatal(err)
		}
		if b[1] != byte(compressionFlate) {
			t.Fatalf("got compression id %#02x, want %#02x", b[1], byte(compressionFlate))
		}
		e.release()
	}
	if n := testing.AllocsPerRun(100, decode); n != 0 {
		t.Errorf("decode: got %v allocs per batch, want 0", n)
	}
	if n := testing.AllocsPerRun(100, encode); n != 0 {
		t.Errorf("encode: got %v allocs per batch, want 0", n)
	}
}

func FuzzDecodeBatch(f *testing.F) {
	for _, b := range [][]byte{
		unhex(f, "fe 06 c1 01 00 00 08 79"),
		unhex(f, "fe 0c 8f 01 00 02 00 00 00 00 00 00 00 00"),
		unhex(f, "fe 05 02 00 00 00 01"),
		unhex(f, "fe ff 0a 05 6e 00 05 48 65 6c 6c 6f 00"),
		clientBatch(f, deflated, Packet{ID: IDLogin, Payload: steveLogin(f)}),
		clientBatch(f, deflated, testPackets()[:2]...),
		clientBatch(f, snappied, testPackets()[:2]...),
		clientBatch(f, plain, Packet{ID: 0x3ff, Sender: 3, Target: 3}),
	} {
		f.Add(false, b)
		f.Add(true, b)
	}
	const maxSize = 1 << 20
	f.Fuzz(func(t *testing.T, compressed bool, b []byte) {
		d := batchDecoder{maxSize: maxSize, compressed: compressed}
		pks, err := d.decode(b)
		if cap(d.buf) > 2*maxSize {
			t.Fatalf("scratch buffer grew to %d bytes, cap is %d", cap(d.buf), maxSize)
		}
		if err != nil {
			return
		}
		if len(pks) > maxPacketsPerBatch {
			t.Fatalf("got %d packets, want at most %d", len(pks), maxPacketsPerBatch)
		}
		want := clonePackets(pks)
		// Re-encoded by the session (DEFLATE once compressed) and, once
		// compressed, as a client's Snappy batch: both decode to the same
		// packets.
		reencoded := [][]byte{encodeBatch(t, compressed, 1, want...)}
		if compressed {
			reencoded = append(reencoded, clientBatch(t, snappied, want...))
		}
		for _, re := range reencoded {
			d2 := batchDecoder{maxSize: maxSize, compressed: compressed}
			got, err := d2.decode(re)
			if err != nil {
				t.Fatalf("decode re-encoded % x: got %v, want nil", re[:min(len(re), 2)], err)
			}
			if !packetsEqual(got, want) {
				t.Fatalf("decode re-encoded % x: got %+v, want %+v", re[:min(len(re), 2)], got, want)
			}
		}
	})
}

// benchBatch is a typical steady-state batch: a few dozen movement-sized
// packets.
func benchPackets() []Packet {
	pks := make([]Packet, 40)
	for i := range pks {
		pks[i] = Packet{ID: uint32(0x90 + i%8), Payload: bytes.Repeat([]byte{byte(i)}, 60+i)}
	}
	return pks
}

func BenchmarkDecodeBatch(b *testing.B) {
	for _, tc := range []struct {
		name  string
		batch []byte
	}{
		{"uncompressed", clientBatch(b, plain, benchPackets()...)},
		{"deflate", clientBatch(b, deflated, benchPackets()...)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true}
			b.SetBytes(int64(len(tc.batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(tc.batch); err != nil {
					b.Fatal(err)
				}
				d.release()
			}
		})
	}
}

// BenchmarkDecodeBomb measures refusing the 16 KiB batch of zeros that
// inflates to 16 MiB, as a logged-in player (whose cap it just passes, as
// the whole bomb cost before the pre-login cap) and before login (whose cap
// stops it a quarter of the way).
func BenchmarkDecodeBomb(b *testing.B) {
	bomb := issueBomb(b)
	for _, tc := range []struct {
		name    string
		maxSize int
	}{
		{"logged-in", DefaultMaxDecompressedSize - 1},
		{"pre-login", DefaultMaxPreLoginSize},
	} {
		b.Run(tc.name, func(b *testing.B) {
			d := batchDecoder{maxSize: tc.maxSize, compressed: true}
			b.SetBytes(int64(len(bomb)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(bomb); !errors.Is(err, ErrTooLarge) {
					b.Fatalf("got %v, want %v", err, ErrTooLarge)
				}
				d.release()
			}
		})
	}
}

func BenchmarkEncodeBatch(b *testing.B) {
	pks := benchPackets()
	for _, tc := range []struct {
		name      string
		threshold int
	}{
		{"uncompressed", 0},
		{"deflate", 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := batchEncoder{compressed: true, threshold: tc.threshold}
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range pks {
					e.add(p)
				}
				out, err := e.encode()
				if err != nil {
					b.Fatal(err)
				}
				_ = out
				e.release()
			}
		})
	}
}
