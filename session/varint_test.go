package session

import (
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
)

func TestVaruint32(t *testing.T) {
	tests := []struct {
		v    uint32
		want string
	}{
		{0, "00"},
		{1, "01"},
		{0x7f, "7f"},
		{0x80, "80 01"},
		{0x8f, "8f 01"},
		{0xc1, "c1 01"},
		{0x3fff, "ff 7f"},
		{0x4000, "80 80 01"},
		{math.MaxUint32, "ff ff ff ff 0f"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.v), func(t *testing.T) {
			want := unhex(t, tc.want)
			got := appendVaruint32(nil, tc.v)
			if string(got) != string(want) {
				t.Errorf("append: got % x, want % x", got, want)
			}
			if n := varuint32Len(tc.v); n != len(want) {
				t.Errorf("len: got %d, want %d", n, len(want))
			}
			v, n, err := readVaruint32(append(want, 0xaa))
			if v != tc.v || n != len(want) || err != nil {
				t.Errorf("read: got %d, %d, %v; want %d, %d, nil", v, n, err, tc.v, len(want))
			}
			for i := range len(want) {
				if _, _, err := readVaruint32(want[:i]); !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("prefix %d: got %v, want %v", i, err, io.ErrUnexpectedEOF)
				}
			}
		})
	}
}

func TestVaruint32Overflow(t *testing.T) {
	for _, s := range []string{"ff ff ff ff 10", "80 80 80 80 80 00", "ff ff ff ff ff"} {
		if _, _, err := readVaruint32(unhex(t, s)); !errors.Is(err, errVarintOverflow) {
			t.Errorf("% s: got %v, want %v", s, err, errVarintOverflow)
		}
	}
}

func TestVarint32(t *testing.T) {
	tests := []struct {
		v    int32
		want string
	}{
		{0, "00"},
		{-1, "01"},
		{1, "02"},
		{55, "6e"},
		{-64, "7f"},
		{64, "80 01"},
		{math.MaxInt32, "fe ff ff ff 0f"},
		{math.MinInt32, "ff ff ff ff 0f"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.v), func(t *testing.T) {
			want := unhex(t, tc.want)
			if got := appendVarint32(nil, tc.v); string(got) != string(want) {
				t.Errorf("append: got % x, want % x", got, want)
			}
			if v, n, err := readVarint32(want); v != tc.v || n != len(want) || err != nil {
				t.Errorf("read: got %d, %d, %v; want %d, %d, nil", v, n, err, tc.v, len(want))
			}
		})
	}
}

func TestReadString(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		err  error
	}{
		{"empty", "00", "", nil},
		{"hello", "05 48 65 6c 6c 6f", "Hello", nil},
		{"short", "05 48 65", "", io.ErrUnexpectedEOF},
		{"huge length", "ff ff ff ff 0f 00", "", io.ErrUnexpectedEOF},
		{"overflow", "ff ff ff ff 7f", "", errVarintOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := readString(unhex(t, tc.in))
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
