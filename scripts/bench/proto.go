package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The bench wire format, carried as RakNet messages. Every message starts
// with 0xfe, the Bedrock game packet ID, so that either RakNet
// implementation passes it to the application.
//
//	data: fe | seq u32 BE | filler byte(seq+i) for i = 5 .. size-1
//	SYN:  fe 53 59 4e                       ("\xfeSYN", exactly 4 bytes)
//	ACK:  fe 41 43 4b | packets u64 BE | bytes u64 BE
const (
	headerByte = 0xfe
	// minDataSize is the smallest data packet: the header and the sequence.
	minDataSize = 5
	ackSize     = 4 + 8 + 8
)

var (
	synPacket = []byte{0xfe, 'S', 'Y', 'N'}
	ackPrefix = []byte{0xfe, 'A', 'C', 'K'}
)

// appendData appends data packet seq of size bytes to b.
func appendData(b []byte, seq uint32, size int) []byte {
	b = append(b, headerByte)
	b = binary.BigEndian.AppendUint32(b, seq)
	for i := minDataSize; i < size; i++ {
		b = append(b, byte(seq+uint32(i)))
	}
	return b
}

// checkData reports how p differs from data packet want of size bytes.
func checkData(p []byte, want uint32, size int) error {
	if len(p) != size {
		return fmt.Errorf("packet %d: got %d bytes, want %d", want, len(p), size)
	}
	if p[0] != headerByte {
		return fmt.Errorf("packet %d: got header %#x, want %#x", want, p[0], headerByte)
	}
	if seq := binary.BigEndian.Uint32(p[1:]); seq != want {
		return fmt.Errorf("out of order: got packet %d, want %d", seq, want)
	}
	for i := minDataSize; i < size; i++ {
		if p[i] != byte(want+uint32(i)) {
			return fmt.Errorf("packet %d: byte %d is %#x, want %#x", want, i, p[i], byte(want+uint32(i)))
		}
	}
	return nil
}

// isSYN reports whether p is the sink's counter request.
func isSYN(p []byte) bool { return bytes.Equal(p, synPacket) }

// appendACK appends the sink's answer to a SYN.
func appendACK(b []byte, packets, n uint64) []byte {
	b = append(b, ackPrefix...)
	b = binary.BigEndian.AppendUint64(b, packets)
	return binary.BigEndian.AppendUint64(b, n)
}

// parseACK decodes the sink's answer to a SYN.
func parseACK(p []byte) (packets, n uint64, err error) {
	if len(p) != ackSize || !bytes.Equal(p[:4], ackPrefix) {
		return 0, 0, errors.New("parse ACK: not an ACK packet")
	}
	return binary.BigEndian.Uint64(p[4:]), binary.BigEndian.Uint64(p[12:]), nil
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted, or 0 if it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// latencies summarises a set of round-trip or dial times.
type latencies struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

func summarise(d []time.Duration) latencies {
	s := slices.Clone(d)
	slices.Sort(s)
	l := latencies{N: len(s), P50: percentile(s, 50), P90: percentile(s, 90), P99: percentile(s, 99)}
	if len(s) > 0 {
		l.Max = s[len(s)-1]
	}
	return l
}

func (l latencies) String() string {
	return fmt.Sprintf("n=%d p50=%v p90=%v p99=%v max=%v", l.N, l.P50, l.P90, l.P99, l.Max)
}
