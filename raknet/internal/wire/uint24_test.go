package wire

import (
	"errors"
	"io"
	"testing"
)

func TestUint24Compare(t *testing.T) {
	const half = 1 << 23
	tests := []struct {
		name     string
		u, v     Uint24
		distance uint32
		diff     int32 // > 0: v is newer than u
	}{
		{"equal", 7, 7, 0, 0},
		{"equal at max", MaxUint24, MaxUint24, 0, 0},
		{"one ahead", 7, 8, 1, 1},
		{"one behind", 8, 7, 1<<24 - 1, -1},
		{"across wrap", MaxUint24, 0, 1, 1},
		{"across wrap behind", 0, MaxUint24, 1<<24 - 1, -1},
		{"across wrap far", MaxUint24 - 9, 10, 20, 20},
		{"just inside horizon", 0, half - 1, half - 1, half - 1},
		// At exactly 2^23 the distance is 2^23 both ways: Diff reads it
		// as -2^23, so v is never newer there.
		{"at horizon", 0, half, half, -half},
		{"past horizon", 0, half + 1, half + 1, -(half - 1)},
		{"horizon across wrap", half + 5, 4, half - 1, half - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.Distance(tc.v); got != tc.distance {
				t.Errorf("%v.Distance(%v): got %v, want %v", tc.u, tc.v, got, tc.distance)
			}
			if got := tc.u.Diff(tc.v); got != tc.diff {
				t.Errorf("%v.Diff(%v): got %v, want %v", tc.u, tc.v, got, tc.diff)
			}
			if back := tc.v.Diff(tc.u); tc.diff != -half && back != -tc.diff {
				t.Errorf("%v.Diff(%v): got %v, want %v", tc.v, tc.u, back, -tc.diff)
			}
			if got, want := (tc.u+Uint24(tc.u.Distance(tc.v)))&MaxUint24, tc.v; got != want {
				t.Errorf("u plus u.Distance(v): got %v, want %v", got, want)
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
