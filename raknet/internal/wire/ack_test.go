package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"slices"
	"testing"
)

func TestAckGolden(t *testing.T) {
	tests := []struct {
		name string
		ack  Ack
		hex  string
	}{
		{"ACK of 7", Ack{Ranges: []AckRange{{7, 7}}}, "c0 | 00 01 | 01 07 00 00"},
		{"NACK 7-9", Ack{NACK: true, Ranges: []AckRange{{7, 9}}}, "a0 | 00 01 | 00 07 00 00 09 00 00"},
		{"empty", Ack{}, "c0 | 00 00"},
		{
			"mixed", Ack{Ranges: []AckRange{{0, 0}, {2, 0x00f203}, {0x123456, 0x123456}}},
			"c0 | 00 03 | 01 00 00 00 | 00 02 00 00 03 f2 00 | 01 56 34 12",
		},
		// Ranges across the 2^24 wrap are two records on the wire.
		{"wrap range", Ack{Ranges: []AckRange{{0xfffffe, 1}}}, "c0 | 00 02 | 00 fe ff ff ff ff ff | 00 00 00 00 01 00 00"},
		{"wrap singles", Ack{NACK: true, Ranges: []AckRange{{MaxUint24, 0}}}, "a0 | 00 02 | 01 ff ff ff | 01 00 00 00"},
		{"wrap single then range", Ack{Ranges: []AckRange{{MaxUint24, 5}}}, "c0 | 00 02 | 01 ff ff ff | 00 00 00 00 05 00 00"},
		{"wrap range then single", Ack{Ranges: []AckRange{{0xfffff0, 0}}}, "c0 | 00 02 | 00 f0 ff ff ff ff ff | 01 00 00 00"},
		{
			"wrap between others", Ack{Ranges: []AckRange{{3, 3}, {0xfffffe, 1}, {9, 10}}},
			"c0 | 00 04 | 01 03 00 00 | 00 fe ff ff ff ff ff | 00 00 00 00 01 00 00 | 00 09 00 00 0a 00 00",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, &tc.ack, unhex(t, tc.hex))
		})
	}
}

// TestAckNotJoined checks that only a record ending at 2^24-1 followed by
// one starting at 0 is joined.
func TestAckNotJoined(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want []AckRange
	}{
		{"low half first", "c0 | 00 02 | 00 00 00 00 01 00 00 | 00 fe ff ff ff ff ff", []AckRange{{0, 1}, {0xfffffe, MaxUint24}}},
		{"gap before 0", "c0 | 00 02 | 01 fe ff ff | 01 00 00 00", []AckRange{{0xfffffe, 0xfffffe}, {0, 0}}},
		{"gap after max", "c0 | 00 02 | 01 ff ff ff | 01 01 00 00", []AckRange{{MaxUint24, MaxUint24}, {1, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Ack
			if _, err := a.Decode(unhex(t, tc.hex)); err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(a.Ranges, tc.want) {
				t.Errorf("Decode: got %v, want %v", a.Ranges, tc.want)
			}
		})
	}
}

func TestAckRangeLen(t *testing.T) {
	tests := []struct {
		name string
		r    AckRange
		want uint32
	}{
		{"single", AckRange{7, 7}, 1},
		{"three", AckRange{7, 9}, 3},
		{"across wrap", AckRange{MaxUint24, 0}, 2},
		{"whole space", AckRange{0, MaxUint24}, 1 << 24},
		{"reversed reads as nearly all", AckRange{9, 7}, 1<<24 - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Len(); got != tc.want {
				t.Errorf("%v.Len(): got %v, want %v", tc.r, got, tc.want)
			}
		})
	}
}

func TestAckTruncated(t *testing.T) {
	tests := []struct {
		name string
		ack  Ack
	}{
		{"single", Ack{Ranges: []AckRange{{7, 7}}}},
		{"range", Ack{NACK: true, Ranges: []AckRange{{7, 9}}}},
		{"wrap", Ack{Ranges: []AckRange{{3, 3}, {0xfffffe, 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkTruncated(t, &tc.ack, tc.ack.Append(nil), io.ErrUnexpectedEOF)
		})
	}
}

func TestAckBadFlags(t *testing.T) {
	for _, flags := range []byte{0x00, 0x40, 0x20, 0x80, 0x84, 0xe0, 0x60} {
		var a Ack
		if _, err := a.Decode([]byte{flags, 0, 0}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%#02x): got error %v, want %v", flags, err, ErrInvalid)
		}
	}
}

func TestAckAppendLimit(t *testing.T) {
	ranges := func(n int) []AckRange { // n 7-byte range records
		rs := make([]AckRange, n)
		for i := range rs {
			rs[i] = AckRange{Uint24(10 * i), Uint24(10*i + 2)}
		}
		return rs
	}
	singles := func(n int) []AckRange { // n 4-byte single records
		rs := make([]AckRange, n)
		for i := range rs {
			rs[i] = AckRange{Uint24(2 * i), Uint24(2 * i)}
		}
		return rs
	}
	wrap := []AckRange{{5, 5}, {0xfffffe, 1}, {9, 9}} // 4 + 14 + 4 bytes
	tests := []struct {
		name   string
		ranges []AckRange
		limit  int
		want   int
		size   int
	}{
		{"no limit", ranges(5), 0, 5, 3 + 5*7},
		{"exact fit", ranges(5), 3 + 3*7, 3, 3 + 3*7},
		{"one byte short", ranges(5), 3 + 3*7 - 1, 2, 3 + 2*7},
		{"singles", singles(20), 3 + 10*4, 10, 3 + 10*4},
		{"limit above all", ranges(5), 1000, 5, 3 + 5*7},
		{"first range always written", ranges(5), 1, 1, 3 + 7},
		{"wrap range does not fit", wrap, 3 + 4 + 13, 1, 3 + 4},
		{"wrap range fits", wrap, 3 + 4 + 14, 2, 3 + 4 + 14},
		{"empty", nil, 10, 0, 3},
		{"mtu", ranges(400), 1400, (1400 - 3) / 7, 3 + (1400-3)/7*7},
		// Decode refuses more than MaxAckNumbers numbers, so the writer
		// stops before them.
		{"numbers cap", []AckRange{{0, MaxAckNumbers/2 - 1}, {MaxAckNumbers, MaxAckNumbers + MaxAckNumbers/2 - 1}, {1 << 20, 1 << 20}}, 0, 2, 3 + 2*7},
		{"numbers cap, one over", []AckRange{{0, MaxAckNumbers/2 - 1}, {MaxAckNumbers, MaxAckNumbers + MaxAckNumbers/2}}, 0, 1, 3 + 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Ack{Ranges: tc.ranges}
			prefix := []byte{0xaa, 0xbb, 0xcc}
			b, n := a.AppendLimit(append([]byte(nil), prefix...), tc.limit)
			if string(b[:3]) != string(prefix) {
				t.Fatalf("AppendLimit clobbered the buffer: got % x, want % x", b[:3], prefix)
			}
			b = b[3:]
			if n != tc.want {
				t.Errorf("ranges written: got %v, want %v", n, tc.want)
			}
			if len(b) != tc.size {
				t.Errorf("bytes written: got %v, want %v", len(b), tc.size)
			}
			if tc.limit > 3+7 && len(b) > tc.limit {
				t.Errorf("bytes written: got %v, want at most %v", len(b), tc.limit)
			}
			var got Ack
			if _, err := got.Decode(b); err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if !slices.Equal(got.Ranges, tc.ranges[:n]) {
				t.Errorf("Decode: got %v, want %v", got.Ranges, tc.ranges[:n])
			}
		})
	}
}

// ackRecords encodes raw records: each is {start, end}; start == end is
// written as a single record.
func ackRecords(count int, recs ...[2]Uint24) []byte {
	b := binary.BigEndian.AppendUint16([]byte{0xc0}, uint16(count))
	for _, r := range recs {
		b = appendRecord(b, r[0], r[1])
	}
	return b
}

func TestAckCaps(t *testing.T) {
	many := make([][2]Uint24, MaxAckRecords)
	for i := range many {
		many[i] = [2]Uint24{Uint24(i), Uint24(i)}
	}
	tests := []struct {
		name string
		b    []byte
		want error // nil means it decodes
	}{
		{"MaxAckRecords records", ackRecords(MaxAckRecords, many...), nil},
		{"MaxAckRecords+1 records", ackRecords(MaxAckRecords+1, append(many, [2]Uint24{0, 0})...), ErrTooMany},
		{"record count 0xffff with no records", ackRecords(0xffff), ErrTooMany},
		{"record count beyond the bytes", ackRecords(100, [2]Uint24{1, 1}), io.ErrUnexpectedEOF},
		{"whole 2^24 space", ackRecords(1, [2]Uint24{0, MaxUint24}), ErrTooMany},
		{"MaxAckNumbers in one range", ackRecords(1, [2]Uint24{0, MaxAckNumbers - 1}), nil},
		{"MaxAckNumbers+1 in one range", ackRecords(1, [2]Uint24{0, MaxAckNumbers}), ErrTooMany},
		{"reversed range", ackRecords(1, [2]Uint24{9, 7}), ErrInvalid},
		{"reversed by one", ackRecords(1, [2]Uint24{1, 0}), ErrInvalid},
		// A range across the wrap must come as two records.
		{"one record across the wrap", ackRecords(1, [2]Uint24{0xfffffe, 1}), ErrInvalid},
		{"MaxAckNumbers in total", ackRecords(2, [2]Uint24{0, 0x7fff}, [2]Uint24{0x10000, 0x17fff}), nil},
		{"MaxAckNumbers+1 in total", ackRecords(2, [2]Uint24{0, 0x7fff}, [2]Uint24{0x10000, 0x18000}), ErrTooMany},
		{"total across wrap halves", ackRecords(2, [2]Uint24{0xff8000, MaxUint24}, [2]Uint24{0, 0x8000}), ErrTooMany},
		{"repeated ranges counted", ackRecords(3, [2]Uint24{0, 0x7fff}, [2]Uint24{0, 0x7fff}, [2]Uint24{0, 0}), ErrTooMany},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Ack
			n, err := a.Decode(tc.b)
			if tc.want == nil {
				if err != nil || n != len(tc.b) {
					t.Errorf("Decode: got %v, %v, want %v, nil", n, err, len(tc.b))
				}
				return
			}
			if !errors.Is(err, tc.want) || n != 0 {
				t.Errorf("Decode: got %v, %v, want 0, %v", n, err, tc.want)
			}
		})
	}
}

// TestAckReencode checks that a decoded Ack re-encodes to every one of its
// ranges, even at the record cap, and never to more bytes than it came in.
func TestAckReencode(t *testing.T) {
	singles := make([][2]Uint24, MaxAckRecords)
	for i := range singles {
		singles[i] = [2]Uint24{Uint24(2 * i), Uint24(2 * i)}
	}
	wraps := make([][2]Uint24, 0, MaxAckRecords)
	for len(wraps) < MaxAckRecords {
		wraps = append(wraps, [2]Uint24{MaxUint24, MaxUint24}, [2]Uint24{0, 0})
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"MaxAckRecords singles", ackRecords(MaxAckRecords, singles...)},
		{"MaxAckRecords joined halves", ackRecords(MaxAckRecords, wraps...)},
		{"ranges of one", ackRecords(2, [2]Uint24{4, 4}, [2]Uint24{6, 6})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var first, second Ack
			if _, err := first.Decode(tc.b); err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			enc, n := first.AppendLimit(nil, 0)
			if n != len(first.Ranges) {
				t.Errorf("ranges written: got %v, want %v", n, len(first.Ranges))
			}
			if len(enc) > len(tc.b) {
				t.Errorf("re-encoded size: got %v, want at most %v", len(enc), len(tc.b))
			}
			if _, err := second.Decode(enc); err != nil {
				t.Fatalf("re-Decode: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(second, first) {
				t.Errorf("re-Decode: got %d ranges, want %d", len(second.Ranges), len(first.Ranges))
			}
		})
	}
}

// ack100 returns an ACK of 100 range records.
func ack100() Ack {
	a := Ack{Ranges: make([]AckRange, 100)}
	for i := range a.Ranges {
		a.Ranges[i] = AckRange{Uint24(1000 + 5*i), Uint24(1000 + 5*i + 2)}
	}
	return a
}

func TestAckDecodeAllocs(t *testing.T) {
	src := ack100()
	b := src.Append(nil)
	var a Ack
	if _, err := a.Decode(b); err != nil { // grow Ranges once
		t.Fatalf("Decode: got error %v, want nil", err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := a.Decode(b); err != nil {
			t.Fatalf("Decode: got error %v, want nil", err)
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per decode into a reused Ack: got %v, want %v", allocs, 0)
	}
	if !reflect.DeepEqual(a, src) {
		t.Errorf("Decode: got %+v, want %+v", a, src)
	}
}

func BenchmarkAckDecode(b *testing.B) {
	src := ack100()
	buf := src.Append(nil)
	var a Ack
	a.Ranges = make([]AckRange, 0, len(src.Ranges))
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAckAppend(b *testing.B) {
	a := ack100()
	buf := make([]byte, 0, 1500)
	b.SetBytes(int64(3 + 7*len(a.Ranges)))
	b.ReportAllocs()
	for b.Loop() {
		buf = a.Append(buf[:0])
	}
}
