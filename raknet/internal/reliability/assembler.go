package reliability

import (
	"errors"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// assembly collects the fragments of one split message. RakNet senders
// cut a message into fragments of one size but the last, which is no
// larger: each fragment is copied straight to its place in one buffer,
// which becomes the message, so reassembly copies every byte once. The
// buffer is allocated when the first fragment that is not the last comes
// (until then a last fragment that came first waits in last), and only
// if its size fits what the message was committed and maxDirectSplit; a
// larger message, and one whose fragment breaks the layout, is kept in
// parts, one slice per fragment, joined at the end.
type assembly struct {
	id       uint16
	count    uint32
	received uint32
	have     []uint64   // bit i: fragment i arrived
	have1    [1]uint64  // have's words for up to 64 fragments
	buf      []byte     // the message, fragment i at i*size
	size     int        // the size of every fragment but the last; 0 until known
	lastLen  int        // the last fragment's size once it is in buf, else -1
	last     []byte     // the last fragment, while size is unknown
	parts    [][]byte   // the fragments, once the layout broke; nil before
	bytes    int        // held: received fragments and a slot per part
	est      int        // bytes when complete, estimated from the first fragment
	started  time.Time  // when the latest new fragment arrived
	idx      int        // position in assembler.list
	header   wire.Frame // ordering fields shared by every fragment
}

// has reports whether fragment i arrived.
func (m *assembly) has(i uint32) bool { return m.have[i/64]&(1<<(i%64)) != 0 }

// completedBy reports whether fragment f completes m.
func (m *assembly) completedBy(f *wire.Frame) bool {
	return f.SplitCount == m.count && m.received+1 == m.count && !m.has(f.SplitIndex)
}

// store copies the payload of fragment i, not yet received, into m.
func (m *assembly) store(i uint32, p []byte) {
	m.have[i/64] |= 1 << (i % 64)
	if m.parts != nil {
		m.parts[i] = append([]byte(nil), p...)
		return
	}
	lastIdx := m.count - 1
	if i < lastIdx && m.size == 0 {
		// Room for every fragment as large as this one, the last as
		// large as it is if it came.
		need := int(m.count) * len(p)
		if m.last != nil {
			need += len(m.last) - len(p)
		}
		if len(p) == 0 || need > m.est || need > maxDirectSplit {
			m.split()
			m.parts[i] = append([]byte(nil), p...)
			return
		}
		m.size = len(p)
		m.buf = make([]byte, need)
		if m.last != nil {
			l := m.last
			m.last = nil
			if !m.place(lastIdx, l) {
				m.split()
				m.parts[lastIdx] = l
				m.parts[i] = append([]byte(nil), p...)
				return
			}
		}
	}
	if m.size == 0 {
		// The last fragment, first: its place is not known yet.
		m.last = append([]byte(nil), p...)
		return
	}
	if !m.place(i, p) {
		m.split()
		m.parts[i] = append([]byte(nil), p...)
	}
}

// place copies fragment i to its place in buf and reports whether it
// fits the layout.
func (m *assembly) place(i uint32, p []byte) bool {
	if i < m.count-1 {
		if len(p) != m.size {
			return false
		}
	} else {
		if len(p) > m.size {
			return false
		}
		m.lastLen = len(p)
	}
	copy(m.buf[int(i)*m.size:int(i)*m.size+len(p)], p)
	return true
}

// split moves the fragments received so far from buf to parts.
func (m *assembly) split() {
	m.parts = make([][]byte, m.count)
	for i := range m.count {
		if !m.has(i) {
			continue
		}
		switch {
		case i == m.count-1 && m.last != nil:
			m.parts[i] = m.last
		case i == m.count-1 && m.lastLen >= 0:
			m.parts[i] = append([]byte(nil), m.buf[int(i)*m.size:int(i)*m.size+m.lastLen]...)
		case m.buf != nil:
			m.parts[i] = append([]byte(nil), m.buf[int(i)*m.size:int(i+1)*m.size]...)
		}
	}
	m.buf, m.last = nil, nil
}

// message returns the whole message once every fragment arrived.
func (m *assembly) message() []byte {
	if m.parts == nil {
		if m.size == 0 {
			return m.last // a message of one fragment
		}
		return m.buf[:int(m.count-1)*m.size+m.lastLen]
	}
	size := 0
	for _, p := range m.parts {
		size += len(p)
	}
	msg := make([]byte, 0, size)
	for _, p := range m.parts {
		msg = append(msg, p...)
	}
	return msg
}

// sizeWith returns the size of m completed by fragment f.
func (m *assembly) sizeWith(f *wire.Frame) int {
	return m.bytes - int(m.count)*partOverhead + len(f.Payload)
}

// share returns what m counts for in the assembler's committed bytes.
func (m *assembly) share() int { return max(m.est, m.bytes) }

// assembler reassembles split messages with caps on the split count, the
// number of messages in progress and the bytes held, and drops partial
// messages older than a timeout.
type assembler struct {
	list  []*assembly
	byID  map[uint16]*assembly // the same messages, by split id
	peak  int                  // most messages in progress since the map was made
	bytes int                  // held by every message in progress
	// committed is what the messages in progress will hold when
	// complete: each one's estimate, or what it holds if more.
	committed int
	maxCount  uint32
	maxConc   int
	maxBytes  int
	timeout   time.Duration
	maxPart   int // the largest fragment payload a datagram can carry
	// oldestNext is no later than the earliest expiry, zero when empty.
	// Progress only moves expiries later, so it is corrected by expire,
	// not on every fragment.
	oldestNext time.Time
}

var (
	errSplitCount = errors.New("split count exceeds limit")
	errSplitConc  = errors.New("too many split messages in progress")
	errSplitBytes = errors.New("split messages exceed the reassembly byte limit")
	errSplitShape = errors.New("split fragment disagrees with its message")
)

// add stores fragment f (whose payload is copied) and returns the whole
// message, and true, when f completed it. The returned frame's Payload is
// owned by the caller. The limits on the split count, the messages in progress and the
// bytes held are admission's to check, before anything of the datagram is
// recorded: add is only given fragments admitted.
func (a *assembler) add(f *wire.Frame, now time.Time) (wire.Frame, bool, error) {
	m := a.find(f.SplitID)
	if m == nil {
		cost := int(f.SplitCount) * partOverhead
		m = &assembly{id: f.SplitID, count: f.SplitCount, lastLen: -1, bytes: cost, started: now, header: *f}
		if f.SplitCount <= 64 {
			m.have = m.have1[:]
		} else {
			m.have = make([]uint64, (f.SplitCount+63)/64)
		}
		m.est = a.estimate(f)
		m.header.Payload = nil
		a.bytes += cost
		a.committed += max(m.est, m.bytes)
		m.idx = len(a.list)
		a.list = append(a.list, m)
		if a.byID == nil {
			a.byID = make(map[uint16]*assembly)
		}
		a.byID[m.id] = m
		a.peak = max(a.peak, len(a.list))
		if t := now.Add(a.timeout); a.oldestNext.IsZero() || t.Before(a.oldestNext) {
			a.oldestNext = t
		}
	}
	if f.SplitCount != m.count {
		return wire.Frame{}, false, errSplitShape
	}
	if m.has(f.SplitIndex) {
		return wire.Frame{}, false, nil // duplicate fragment: never completes twice
	}
	m.store(f.SplitIndex, f.Payload)
	a.committed -= max(m.est, m.bytes)
	m.bytes += len(f.Payload)
	a.committed += max(m.est, m.bytes)
	a.bytes += len(f.Payload)
	m.received++
	if m.received < m.count {
		// The timeout runs from the latest progress, not the first
		// fragment: reliable fragments are acknowledged as they arrive,
		// so expiring a message that is still arriving (a large one on a
		// slow or lossy link) would lose it for good.
		m.started = now
		return wire.Frame{}, false, nil
	}
	msg := m.message()
	a.remove(m)
	out := m.header
	out.Split = false
	out.Payload = msg
	return out, true, nil
}

// estimate returns the bytes the message f is a fragment of will hold
// when complete: every fragment as large as f, or, when f is the last one
// (often shorter), every other as large as a datagram can carry.
func (a *assembler) estimate(f *wire.Frame) int {
	part := len(f.Payload)
	if f.SplitIndex == f.SplitCount-1 && f.SplitCount > 1 {
		return int(f.SplitCount-1)*(max(part, a.maxPart)+partOverhead) + part + partOverhead
	}
	return int(f.SplitCount) * (part + partOverhead)
}

// reserveSlots is how many of the messages in progress are kept for the
// messages ordering channels wait for: an eighth, at least one.
func (a *assembler) reserveSlots() int { return max(1, a.maxConc/8) }

// reserveBytes is how much of the byte limit is kept for the messages
// ordering channels wait for: a quarter.
func (a *assembler) reserveBytes() int { return a.maxBytes / 4 }

// find returns the message in progress with split id, or nil.
func (a *assembler) find(id uint16) *assembly { return a.byID[id] }

// remove drops m, moving the last message into its place.
func (a *assembler) remove(m *assembly) {
	last := a.list[len(a.list)-1]
	a.list[m.idx], last.idx = last, m.idx
	a.list[len(a.list)-1] = nil
	a.list = a.list[:len(a.list)-1]
	delete(a.byID, m.id)
	if len(a.list) == 0 {
		a.oldestNext = time.Time{}
		if a.peak > idleAssemblies {
			// The burst is over: give back what it grew.
			a.list, a.byID, a.peak = nil, nil, 0
		}
	}
	a.bytes -= m.bytes
	a.committed -= max(m.est, m.bytes)
}

// expire drops partial messages that received no new fragment for the
// timeout and returns how many it dropped.
func (a *assembler) expire(now time.Time) int {
	if a.oldestNext.IsZero() || now.Before(a.oldestNext) {
		return 0
	}
	n := 0
	var next time.Time
	for i := 0; i < len(a.list); {
		m := a.list[i]
		t := m.started.Add(a.timeout)
		if !now.Before(t) {
			a.remove(m) // the last moves to i
			n++
			continue
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
		i++
	}
	a.oldestNext = next
	return n
}
