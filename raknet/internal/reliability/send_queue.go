package reliability

import (
	"fmt"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// outFrame is a frame waiting to be sent or acknowledged. Frames are
// recycled; gen changes on every reuse so stale references are ignored.
type outFrame struct {
	frame    wire.Frame
	buf      []byte
	gen      uint32
	relIndex uint64   // absolute reliable index, once assigned
	assigned bool     // relIndex is set
	dgram    uint64   // datagram carrying it now (absolute), 0 if none
	msg      *message // shared by a split message's fragments; nil if neither split nor receipted
}

type frameRef struct {
	f   *outFrame
	gen uint32
}

func (r frameRef) live() bool { return r.f.gen == r.gen }

// message tracks a split or receipted message until all its frames are
// acknowledged.
type message struct {
	id        uint32 // receipt id, 0 without receipt
	remaining int    // frames not yet acknowledged
	split     bool
	started   bool // a fragment has been sent
}

// sendIndexes are one ordering channel's next order and sequence indexes.
type sendIndexes struct{ order, seq uint64 }

// sendQueue holds every frame from Send until it is acknowledged: split
// into frames on the way in, queued (new ones in pending, lost ones in
// resend), and recycled once acknowledged. It owns the two windows that
// decide whether a new frame may leave: the reliable indexes in flight
// and the split messages partly sent.
type sendQueue struct {
	maxDatagram int
	chunkSize   int // buffer size of a frame of a large message
	maxMessage  int
	maxBuffer   int
	start       uint64 // first index of every counter

	pending   fifo
	resend    resendQueue
	free      []*outFrame
	buffered  int           // bytes of frames not yet acknowledged
	idx       []sendIndexes // per ordering channel, created on first use
	splitID   uint16
	receiptID uint32
	receipts  []Receipt // fates learned, not yet taken (Layer.Receipts)
	messages  uint64    // messages accepted
	idleSince time.Time // when everything sent was last acknowledged

	relNext      uint64    // next reliable index
	relAcked     seqWindow // reliable indexes acknowledged
	splitsActive int       // split messages partly sent and not fully acked
}

func newSendQueue(cfg *Config, start uint64) sendQueue {
	return sendQueue{
		maxDatagram: cfg.MaxDatagram,
		chunkSize:   cfg.MaxDatagram - wire.DatagramHeaderSize - 3,
		maxMessage:  cfg.MaxMessageSize,
		maxBuffer:   cfg.MaxSendBuffer,
		start:       start,
		relNext:     start,
		relAcked:    newSeqWindow(start, sendReliableWindow*2),
	}
}

// maxUnsplit returns the largest message of reliability r sent in one
// frame.
func (q *sendQueue) maxUnsplit(r wire.Reliability) int {
	return q.maxDatagram - wire.DatagramHeaderSize - wire.FrameHeaderSize(r, false)
}

// push queues message p (copied), split into frames if it does not fit
// one; see Layer.Send.
func (q *sendQueue) push(p []byte, r wire.Reliability, channel uint8) (uint32, error) {
	switch {
	case !r.Valid():
		return 0, fmt.Errorf("%w: %d", ErrReliability, r)
	case channel >= wire.NumOrderChannels:
		return 0, fmt.Errorf("%w: %d", ErrInvalidChannel, channel)
	case len(p) == 0:
		return 0, ErrEmptyMessage
	case len(p) > q.maxMessage:
		return 0, fmt.Errorf("%w: %d > %d bytes", ErrMessageTooLarge, len(p), q.maxMessage)
	case q.buffered > 0 && q.buffered+len(p) > q.maxBuffer:
		return 0, ErrSendBufferFull
	}
	split := len(p) > q.maxUnsplit(r)
	if split {
		switch r {
		case wire.Unreliable:
			r = wire.Reliable
		case wire.UnreliableSequenced:
			r = wire.ReliableSequenced
		case wire.UnreliableWithAckReceipt:
			r = wire.ReliableWithAckReceipt
		}
	}
	var rc *message
	var id uint32
	if r.AckReceipt() {
		q.receiptID++
		id = q.receiptID
		rc = &message{id: id}
	}
	if split {
		if rc == nil {
			rc = &message{}
		}
		rc.split = true
	}
	tmpl := wire.Frame{Reliability: r.Wire(), OrderChannel: channel}
	if r.Sequenced() {
		idx := q.indexes(channel)
		tmpl.OrderIndex = u24(idx.order)
		tmpl.SequenceIndex = u24(idx.seq)
		idx.seq++
	} else if r.Ordered() {
		idx := q.indexes(channel)
		tmpl.OrderIndex = u24(idx.order)
		idx.order++
	} else {
		tmpl.OrderChannel = 0
	}
	q.messages++
	if !split {
		q.queue(tmpl, p, rc)
		return id, nil
	}
	size := q.maxDatagram - wire.DatagramHeaderSize - wire.FrameHeaderSize(r, true)
	count := (len(p) + size - 1) / size
	tmpl.Split, tmpl.SplitCount, tmpl.SplitID = true, uint32(count), q.splitID
	q.splitID++
	for i := range count {
		tmpl.SplitIndex = uint32(i)
		q.queue(tmpl, p[i*size:min(len(p), (i+1)*size)], rc)
	}
	return id, nil
}

// indexes returns channel's send indexes, creating them on first use.
func (q *sendQueue) indexes(channel uint8) *sendIndexes {
	for len(q.idx) <= int(channel) {
		q.idx = append(q.idx, sendIndexes{q.start, q.start})
	}
	return &q.idx[channel]
}

// queue adds one frame to the pending queue.
func (q *sendQueue) queue(tmpl wire.Frame, p []byte, rc *message) {
	var f *outFrame
	if n := len(q.free); n > 0 {
		f = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		f = &outFrame{}
	}
	if cap(f.buf) < len(p) {
		// Small messages get small buffers, so a quiet connection does not
		// hold MTU-sized ones; a frame that once carried a large payload
		// keeps its buffer for the next.
		size := q.chunkSize
		if len(p) <= smallFrameBuffer {
			size = smallFrameBuffer
		}
		f.buf = make([]byte, 0, size)
	}
	f.frame = tmpl
	f.buf = append(f.buf[:0], p...)
	f.frame.Payload = f.buf
	f.assigned, f.dgram, f.msg = false, 0, rc
	if rc != nil {
		rc.remaining++
	}
	q.buffered += len(p)
	q.pending.push(frameRef{f, f.gen})
}

// release returns a frame to the free list, invalidating references.
func (q *sendQueue) release(f *outFrame) {
	q.buffered -= len(f.buf)
	f.gen++
	f.msg = nil
	if len(q.free) < freeFrameCap {
		q.free = append(q.free, f)
	}
}

// hasData reports whether frames wait to be sent. Resend entries of
// frames acknowledged meanwhile (a late ACK) are dropped from the head
// first, so they never make an empty datagram.
func (q *sendQueue) hasData() bool {
	for q.resend.len() > 0 {
		if ref, _ := q.resend.peek(); ref.live() {
			break
		}
		q.resend.pop()
	}
	return q.resend.len() > 0 || q.pending.len() > 0
}

// canSendNew reports whether the head of the pending queue may be sent:
// a new reliable frame needs room in the reliable window, the first
// fragment of a split message room among the splits in progress.
func (q *sendQueue) canSendNew() bool {
	ref, ok := q.pending.peek()
	if !ok {
		return false
	}
	if m := ref.f.msg; m != nil && m.split && !m.started && q.splitsActive >= maxSendSplits {
		return false
	}
	return !ref.f.frame.Reliability.Reliable() || q.relNext-q.relAcked.base < sendReliableWindow
}

// take readies the head of the pending queue, already popped, for the
// datagram being packed: a split message counts as started and a
// reliable frame gets its reliable index.
func (q *sendQueue) take(f *outFrame) {
	if m := f.msg; m != nil && m.split && !m.started {
		m.started = true
		q.splitsActive++
	}
	if f.frame.Reliability.Reliable() {
		f.relIndex, f.assigned = q.relNext, true
		f.frame.ReliableIndex = u24(q.relNext)
		q.relNext++
	}
}

// acked handles a frame whose datagram was acknowledged.
func (q *sendQueue) acked(f *outFrame) {
	if f.assigned {
		_, _ = q.relAcked.mark(f.relIndex)
	}
	if m := f.msg; m != nil {
		m.remaining--
		if m.remaining == 0 {
			if m.split {
				q.splitsActive--
			}
			if m.id != 0 {
				q.receipts = append(q.receipts, Receipt{ID: m.id, Acked: true})
			}
		}
	}
	q.release(f)
}

// lost handles a frame whose datagram was lost: a reliable one is queued
// for resend, an unreliable one is dropped and its receipt reports the
// loss.
func (q *sendQueue) lost(ref frameRef) {
	f := ref.f
	f.dgram = 0
	if f.frame.Reliability.Reliable() {
		q.resend.push(ref)
		return
	}
	if f.msg != nil && f.msg.id != 0 {
		q.receipts = append(q.receipts, Receipt{ID: f.msg.id})
	}
	q.release(f)
}

// noteIdle records when everything sent was acknowledged.
func (q *sendQueue) noteIdle(now time.Time) {
	if q.buffered == 0 && q.idleSince.IsZero() {
		q.idleSince = now
	}
}

// trimIdle lets go of recycled frames once everything sent was
// acknowledged idleTrimAfter ago: a quiet connection keeps only a few,
// not the ones a burst left.
func (q *sendQueue) trimIdle(now time.Time) {
	if q.buffered != 0 {
		q.idleSince = time.Time{}
	} else if !q.idleSince.IsZero() && now.Sub(q.idleSince) >= idleTrimAfter && len(q.free) > idleFreeFrames {
		clear(q.free[idleFreeFrames:])
		q.free = q.free[:idleFreeFrames]
	}
}

// resendQueue holds the frames to resend, lowest reliable index first: a
// min-heap. The receiver's reliable window and its ordering channels wait
// for the oldest frame missing, so that one leaves first, whatever the
// order in which frames were deemed lost. In a FIFO, a sender that timed
// out a whole window (a reader that stopped, then resumed) queues the
// frames a receiver asks for next, by NACK, behind thousands of others,
// which a window shrunk by the timeouts takes many round trips to send.
//
// Each entry keeps the index it was queued with: a frame acknowledged
// meanwhile (a late ACK) is recycled and may get a new index, and its
// stale entry, dropped when it reaches the top, must not move.
type resendQueue struct{ h []resendEntry }

type resendEntry struct {
	ref frameRef
	rel uint64 // the frame's absolute reliable index when queued
}

func (q *resendQueue) len() int { return len(q.h) }

// push queues ref, whose frame has a reliable index.
func (q *resendQueue) push(ref frameRef) {
	q.h = append(q.h, resendEntry{ref, ref.f.relIndex})
	h := q.h
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].rel <= h[i].rel {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

// peek returns the frame with the lowest reliable index.
func (q *resendQueue) peek() (frameRef, bool) {
	if len(q.h) == 0 {
		return frameRef{}, false
	}
	return q.h[0].ref, true
}

// pop removes the frame peek returns.
func (q *resendQueue) pop() {
	h := q.h
	n := len(h) - 1
	h[0] = h[n]
	h[n] = resendEntry{}
	h = h[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].rel < h[c].rel {
			c++
		}
		if h[i].rel <= h[c].rel {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	q.h = h
	if n == 0 && cap(h) > maxIdleFifo {
		q.h = nil
	}
}

// fifo is a queue of frame references backed by a ring.
type fifo struct {
	buf        []frameRef
	head, size int
}

func (q *fifo) len() int { return q.size }

func (q *fifo) push(r frameRef) {
	if q.size == len(q.buf) {
		buf := make([]frameRef, max(minFifo, 2*len(q.buf)))
		for i := range q.size {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = r
	q.size++
}

func (q *fifo) peek() (frameRef, bool) {
	if q.size == 0 {
		return frameRef{}, false
	}
	return q.buf[q.head], true
}

func (q *fifo) pop() {
	q.buf[q.head] = frameRef{}
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	if q.size == 0 && len(q.buf) > maxIdleFifo {
		q.buf, q.head = nil, 0
	}
}
