package wire

import (
	"errors"
	"io"
	"testing"
)

func TestUint24Add(t *testing.T) {
	tests := []struct {
		name string
		u    Uint24
		n    uint32
		want Uint24
	}{
		{"zero", 5, 0, 5},
		{"small", 5, 3, 8},
		{"to max", MaxUint24 - 1, 1, MaxUint24},
		{"wrap", MaxUint24, 1, 0},
		{"wrap further", MaxUint24 - 2, 10, 7},
		{"full turn", 1234, 1 << 24, 1234},
		{"large n", 0, 1<<32 - 1, MaxUint24},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.Add(tc.n); got != tc.want {
				t.Errorf("%v.Add(%v): got %v, want %v", tc.u, tc.n, got, tc.want)
			}
			if tc.n == 1 {
				if got := tc.u.Inc(); got != tc.want {
					t.Errorf("%v.Inc(): got %v, want %v", tc.u, got, tc.want)
				}
			}
		})
	}
}

func TestUint24Inc(t *testing.T) {
	tests := []struct {
		name string
		u    Uint24
		want Uint24
	}{
		{"zero", 0, 1},
		{"middle", 1 << 23, 1<<23 + 1},
		{"wrap", MaxUint24, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.Inc(); got != tc.want {
				t.Errorf("%v.Inc(): got %v, want %v", tc.u, got, tc.want)
			}
		})
	}
}

func TestUint24Compare(t *testing.T) {
	const half = 1 << 23
	tests := []struct {
		name     string
		u, v     Uint24
		distance uint32
		diff     int32
		before   bool // u.Before(v)
		after    bool // u.After(v)
	}{
		{"equal", 7, 7, 0, 0, false, false},
		{"equal at max", MaxUint24, MaxUint24, 0, 0, false, false},
		{"one ahead", 7, 8, 1, 1, true, false},
		{"one behind", 8, 7, 1<<24 - 1, -1, false, true},
		{"across wrap", MaxUint24, 0, 1, 1, true, false},
		{"across wrap behind", 0, MaxUint24, 1<<24 - 1, -1, false, true},
		{"across wrap far", MaxUint24 - 9, 10, 20, 20, true, false},
		{"just inside horizon", 0, half - 1, half - 1, half - 1, true, false},
		// At exactly 2^23 the distance is 2^23 both ways: neither number
		// is newer, and Diff reads it as -2^23.
		{"at horizon", 0, half, half, -half, false, false},
		{"past horizon", 0, half + 1, half + 1, -(half - 1), false, true},
		{"horizon across wrap", half + 5, 4, half - 1, half - 1, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.Distance(tc.v); got != tc.distance {
				t.Errorf("%v.Distance(%v): got %v, want %v", tc.u, tc.v, got, tc.distance)
			}
			if got := tc.u.Diff(tc.v); got != tc.diff {
				t.Errorf("%v.Diff(%v): got %v, want %v", tc.u, tc.v, got, tc.diff)
			}
			if got := tc.u.Before(tc.v); got != tc.before {
				t.Errorf("%v.Before(%v): got %v, want %v", tc.u, tc.v, got, tc.before)
			}
			if got := tc.u.After(tc.v); got != tc.after {
				t.Errorf("%v.After(%v): got %v, want %v", tc.u, tc.v, got, tc.after)
			}
			if got, want := tc.u.Add(tc.u.Distance(tc.v)), tc.v; got != want {
				t.Errorf("u.Add(u.Distance(v)): got %v, want %v", got, want)
			}
		})
	}
}

func TestUint24Bytes(t *testing.T) {
	tests := []struct {
		name string
		u    Uint24
		hex  string
	}{
		{"zero", 0, "00 00 00"},
		{"seven", 7, "07 00 00"},
		{"little endian", 0x030201, "01 02 03"},
		{"max", MaxUint24, "ff ff ff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if got := AppendUint24([]byte{0xaa}, tc.u); string(got) != string(append([]byte{0xaa}, want...)) {
				t.Errorf("AppendUint24: got % x, want aa % x", got, want)
			}
			got, err := ReadUint24(append(want, 0xee))
			if err != nil || got != tc.u {
				t.Errorf("ReadUint24: got %v, %v, want %v, nil", got, err, tc.u)
			}
			for k := range 3 {
				if _, err := ReadUint24(want[:k]); !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("ReadUint24(first %d bytes): got error %v, want %v", k, err, io.ErrUnexpectedEOF)
				}
			}
		})
	}
}
