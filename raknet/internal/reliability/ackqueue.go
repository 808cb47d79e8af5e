package reliability

import "github.com/basaltmc/basalt/raknet/internal/wire"

// interval is an inclusive run of absolute numbers.
type interval struct{ lo, hi uint64 }

// intervalSet is a sorted set of disjoint, non-adjacent intervals with a
// cap on how many it holds; when full, the oldest interval is dropped (its
// numbers will be resent by the peer's timeout, so nothing is lost).
type intervalSet struct {
	iv  []interval
	max int
}

// add inserts n, merging neighbours.
func (s *intervalSet) add(n uint64) { s.addRange(n, n) }

// addRange inserts [lo, hi].
func (s *intervalSet) addRange(lo, hi uint64) {
	iv := s.iv
	// Fast path: in-order arrival extends or follows the last interval.
	if k := len(iv); k == 0 || lo > iv[k-1].hi+1 {
		s.iv = append(iv, interval{lo, hi})
		s.trim()
		return
	} else if lo >= iv[k-1].lo {
		iv[k-1].hi = max(iv[k-1].hi, hi)
		return
	}
	// Find the first interval whose end reaches lo-1.
	i := 0
	for i < len(iv) && iv[i].hi+1 < lo {
		i++
	}
	j := i
	for j < len(iv) && iv[j].lo <= hi+1 {
		lo = min(lo, iv[j].lo)
		hi = max(hi, iv[j].hi)
		j++
	}
	switch {
	case i == j:
		iv = append(iv, interval{})
		copy(iv[i+1:], iv[i:])
		iv[i] = interval{lo, hi}
	default:
		iv[i] = interval{lo, hi}
		iv = append(iv[:i+1], iv[j:]...)
	}
	s.iv = iv
	s.trim()
}

// remove deletes n if present.
func (s *intervalSet) remove(n uint64) {
	for i, v := range s.iv {
		if n < v.lo {
			return
		}
		if n > v.hi {
			continue
		}
		switch {
		case v.lo == v.hi:
			s.iv = append(s.iv[:i], s.iv[i+1:]...)
		case n == v.lo:
			s.iv[i].lo++
		case n == v.hi:
			s.iv[i].hi--
		default:
			s.iv = append(s.iv, interval{})
			copy(s.iv[i+2:], s.iv[i+1:])
			s.iv[i].hi = n - 1
			s.iv[i+1] = interval{n + 1, v.hi}
			s.trim()
		}
		return
	}
}

func (s *intervalSet) trim() {
	if s.max > 0 && len(s.iv) > s.max {
		n := copy(s.iv, s.iv[len(s.iv)-s.max:])
		s.iv = s.iv[:n]
	}
}

func (s *intervalSet) empty() bool { return len(s.iv) == 0 }

// appendAck writes up to limit bytes and maxAckNumbersSent numbers of the
// set as an ACK or NACK and removes what it wrote, adding it to written if
// that is not nil. scratch is reused for the wire ranges.
func (s *intervalSet) appendAck(b []byte, nack bool, limit int, scratch *wire.Ack, written *intervalSet) []byte {
	scratch.NACK = nack
	scratch.Ranges = scratch.Ranges[:0]
	budget := uint64(maxAckNumbersSent)
	cut := false // the last range takes only part of its interval
	for _, v := range s.iv {
		// A single wire range names at most 2^24-1 numbers; ours are far
		// smaller because the receive window bounds them.
		hi := v.hi
		if hi-v.lo >= budget {
			hi, cut = v.lo+budget-1, true
		}
		scratch.Ranges = append(scratch.Ranges, wire.AckRange{Start: u24(v.lo), End: u24(hi)})
		budget -= hi - v.lo + 1
		if budget == 0 {
			break
		}
	}
	b, n := scratch.AppendLimit(b, limit)
	if written != nil {
		for i, r := range scratch.Ranges[:n] {
			lo := s.iv[i].lo
			written.addRange(lo, lo+uint64(r.Len())-1)
		}
	}
	if cut && n == len(scratch.Ranges) {
		// Keep the part of the last interval that was not written.
		n--
		s.iv[n].lo += uint64(scratch.Ranges[n].Len())
	}
	k := copy(s.iv, s.iv[n:])
	s.iv = s.iv[:k]
	return b
}
