package reliability

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Defaults and hard limits. Every structure fed by the peer is bounded by
// one of these; the send side keeps within what common peers accept
// (go-raknet drops a connection whose datagram or ordering window spans
// more than 2048 numbers, and refuses more than 512 fragments).
const (
	DefaultMaxMessageSize      = 8 << 20
	DefaultMaxSendBuffer       = 16 << 20
	DefaultMaxSplitCount       = 8192
	DefaultMaxConcurrentSplits = 1024
	DefaultMaxSplitBytes       = 32 << 20
	DefaultSplitTimeout        = 30 * time.Second
	DefaultMaxOrderQueue       = 1 << 16
	DefaultMaxOrderBytes       = 32 << 20
	DefaultReliableWindow      = 1 << 16
	DefaultAckDelay            = 5 * time.Millisecond

	// MaxInFlight is the most datagrams in flight (the span from the oldest
	// unacknowledged datagram number to the next one). Like
	// sendReliableWindow, it stays below the 2048 that go-raknet allows
	// between its oldest missing number and its newest before it drops
	// the connection, and above what one 100 ms ACK tick of small
	// messages needs.
	MaxInFlight = 2000
	// sendReliableWindow is the most reliable indexes in flight; it also
	// bounds the span of order indexes a receiver must queue.
	sendReliableWindow = 2000
	// datagramWindowSpan is how many datagram numbers are tracked for
	// duplicate detection.
	datagramWindowSpan = 4096
	// ackNowThreshold is the count of received datagrams that forces an
	// ACK before the delay runs out.
	ackNowThreshold = 32
	// maxAckIntervals bounds the pending ACK and NACK sets.
	maxAckIntervals = 512
	// minNACKDelay and maxNACKDelay bound how long a gap waits for
	// reordered datagrams before it is NACKed.
	minNACKDelay = 4 * time.Millisecond
	maxNACKDelay = 20 * time.Millisecond
	// maxNACKGap is the largest gap NACKed at once; larger gaps are left to
	// the sender's timeout. A run of datagrams lost together (a full
	// socket buffer) can be long; a NACK names a run in one record, and
	// one NACK can name this many.
	maxNACKGap = maxAckNumbersSent
	// A NACK is repeated nackRepeats times, renackDelay after it, then
	// twice and four times that after each repeat.
	nackRepeats = 3
	renackDelay = 25 * time.Millisecond
	// nackNowIntervals is how many separate gaps make NACKs leave at once
	// rather than after the reordering allowance, so heavy loss is
	// reported before the set fills and drops gaps.
	nackNowIntervals = 64
	// smallFrameBuffer is the buffer size given to frames of small
	// messages.
	smallFrameBuffer = 256
	// idleFreeFrames is how many recycled frames a Layer keeps once all it
	// sent was acknowledged idleTrimAfter ago.
	idleFreeFrames = 2
	idleTrimAfter  = time.Second
	// freeFrameCap bounds the recycled frames a Layer keeps: as many as
	// may be in flight, so a steady stream reuses every frame an ACK
	// frees (an idle Layer trims to idleFreeFrames).
	freeFrameCap = sendReliableWindow
	// maxSendSplits is the most split messages partly sent at once, below
	// the 16 in progress that go-raknet and our receiver accept.
	maxSendSplits = 8
	// minReorderWindow is the least time an unacknowledged datagram older
	// than an acknowledged one is given before it is deemed lost.
	minReorderWindow = 2 * time.Millisecond
)

// Errors returned by Send.
var (
	ErrMessageTooLarge = errors.New("message exceeds the maximum message size")
	ErrSendBufferFull  = errors.New("send buffer full")
	ErrInvalidChannel  = errors.New("order channel out of range")
	ErrReliability     = errors.New("invalid reliability")
	ErrEmptyMessage    = errors.New("empty message")
)

// Config configures a Layer. Zero values take the defaults above.
type Config struct {
	// MaxDatagram is the largest UDP payload to send: the negotiated MTU
	// minus the IP and UDP headers. Required.
	MaxDatagram int
	// Deliver receives every message in delivery order. The slice is valid
	// only during the call. Required.
	Deliver func(msg []byte)
	// Receipt, if set, learns the fate of messages sent with an
	// ...WithAckReceipt reliability: acked, or lost for the unreliable one.
	Receipt func(id uint32, acked bool)

	MaxMessageSize      int
	MaxSendBuffer       int
	MaxSplitCount       int
	MaxConcurrentSplits int
	MaxSplitBytes       int
	SplitTimeout        time.Duration
	MaxOrderQueue       int
	MaxOrderBytes       int
	ReliableWindow      int
	AckDelay            time.Duration

	// Initial values of the send-side counters (datagram number, reliable
	// index, order and sequence indexes) and of the matching receive-side
	// expectations. Zero in production; tests start them near 2^24 so
	// every index wraps.
	InitialSend, InitialRecv uint32
}

func (c *Config) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxMessageSize, DefaultMaxMessageSize)
	def(&c.MaxSendBuffer, DefaultMaxSendBuffer)
	def(&c.MaxSplitCount, DefaultMaxSplitCount)
	def(&c.MaxConcurrentSplits, DefaultMaxConcurrentSplits)
	def(&c.MaxSplitBytes, DefaultMaxSplitBytes)
	def(&c.MaxOrderQueue, DefaultMaxOrderQueue)
	def(&c.MaxOrderBytes, DefaultMaxOrderBytes)
	def(&c.ReliableWindow, DefaultReliableWindow)
	if c.SplitTimeout <= 0 {
		c.SplitTimeout = DefaultSplitTimeout
	}
	if c.AckDelay <= 0 {
		c.AckDelay = DefaultAckDelay
	}
}

// Stats are a Layer's counters.
type Stats struct {
	DatagramsSent, DatagramsReceived uint64
	BytesSent, BytesReceived         uint64
	MessagesSent, MessagesDelivered  uint64
	FramesResent                     uint64
	DatagramsLost                    uint64 // NACKed, timed out or skipped
	AcksSent, NacksSent              uint64
	DuplicateDatagrams               uint64
	DuplicateFrames                  uint64
	Errors                           uint64 // datagrams or frames refused
	SRTT, RTTVar, MinRTT, RTO        time.Duration
	Window, InFlight                 int // congestion window and bytes in flight
	Buffered                         int // bytes held until acknowledged
}

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

// sentDatagram is a slot of the in-flight ring.
type sentDatagram struct {
	inFlight bool
	retrans  bool
	size     int
	sentAt   time.Time
	frames   []frameRef
}

// Layer is one connection's reliability layer. It is not safe for
// concurrent use; the connection serialises calls to it.
type Layer struct {
	cfg       Config
	chunkSize int // largest frame payload

	// Send side.
	pending, resend  fifo
	free             []*outFrame
	buffered         int
	sendNext         uint64 // next datagram number
	sendOldest       uint64 // oldest datagram that may be in flight
	sent             []sentDatagram
	relNext          uint64
	relAcked         seqWindow
	sendIdx          []sendIndexes // per ordering channel, created on first use
	splitID          uint16
	splitsActive     int       // split messages partly sent and not fully acked
	idleSince        time.Time // when everything sent was last acknowledged
	receiptID        uint32
	rtt              rttStats
	cc               congestion
	pace             pacer
	lastSend         time.Time
	lastSendContinue bool

	// Receive side.
	dgramWin  seqWindow
	dgramHigh uint64 // highest datagram number received + 1
	acks      intervalSet
	nacks     intervalSet
	ackFirst  time.Time // when the oldest pending ACK arrived
	nackAt    time.Time // when pending NACKs are due
	// renacks[i] holds what NACKs named, to be named again at renackAt[i]
	// and then moved to renacks[i+1]: a lost NACK would otherwise leave
	// the gap to the sender's timeout, which for some senders grows to
	// seconds. A sender ignores a NACK of what it already resent.
	renacks  [nackRepeats]intervalSet
	renackAt [nackRepeats]time.Time
	// pulls holds datagrams refused for a limit that frees up as messages
	// are delivered. They are NACKed once there is room, nearest to
	// delivery first: some senders otherwise resend only on a timeout
	// that grows to seconds.
	pulls  []refusal
	pullAt time.Time // when pulls may next be NACKed
	// While something waits for a missing datagram, a silence longer than
	// probeWait after lastArrival sends a NACK of the numbers the peer
	// uses next: a lost datagram that nothing followed leaves no gap to
	// NACK, and some senders resend it only on a slow timeout. A sender
	// ignores a NACK of numbers it has not used. probeWait doubles with
	// each probe until a datagram arrives.
	lastArrival time.Time
	probeWait   time.Duration
	probes      intervalSet // a probe's NACK, sent once
	// ackRepeat holds the ranges of the last ACK, sent again with the
	// next; ackFresh is scratch space.
	ackRepeat, ackFresh []interval
	ackCount            int
	relWin              seqWindow
	order               orderChannels
	asm                 assembler
	ackBuf              wire.Ack
	frameBuf            []wire.Frame

	stats Stats
}

// New returns a Layer for a connection established at now.
func New(cfg Config, now time.Time) *Layer {
	if cfg.MaxDatagram < wire.DatagramHeaderSize+wire.MaxFrameHeaderSize+1 || cfg.Deliver == nil {
		panic("reliability: Config needs MaxDatagram and Deliver")
	}
	cfg.fill()
	send := absBase + uint64(cfg.InitialSend)
	recv := absBase + uint64(cfg.InitialRecv)
	l := &Layer{
		cfg:        cfg,
		chunkSize:  cfg.MaxDatagram - wire.DatagramHeaderSize - 3,
		sendNext:   send,
		sendOldest: send,
		sent:       make([]sentDatagram, 4),
		relNext:    send,
		relAcked:   newSeqWindow(send, sendReliableWindow*2),
		cc:         newCongestion(cfg.MaxDatagram, MaxInFlight),
		pace:       newPacer(cfg.MaxDatagram, now),
		dgramWin:   newSeqWindow(recv, datagramWindowSpan),
		dgramHigh:  recv,
		acks:       intervalSet{max: maxAckIntervals},
		nacks:      intervalSet{max: maxAckIntervals},
		relWin:     newSeqWindow(recv, cfg.ReliableWindow),
		order:      orderChannels{maxQueue: cfg.MaxOrderQueue, maxBytes: cfg.MaxOrderBytes},
		asm: assembler{
			maxCount: uint32(cfg.MaxSplitCount),
			maxConc:  cfg.MaxConcurrentSplits,
			maxBytes: cfg.MaxSplitBytes,
			timeout:  cfg.SplitTimeout,
			maxPart:  cfg.MaxDatagram - wire.DatagramHeaderSize,
		},
	}
	l.order.start = recv
	for i := range l.renacks {
		l.renacks[i].max = maxAckIntervals
	}
	l.probes.max = 1
	return l
}

// Stats returns the layer's counters.
func (l *Layer) Stats() Stats {
	s := l.stats
	s.SRTT, s.RTTVar, s.MinRTT, s.RTO = l.rtt.srtt, l.rtt.rttvar, l.rtt.minRTT, l.rtt.rto()
	s.Window, s.InFlight, s.Buffered = l.cc.cwnd, l.cc.inFlight, l.buffered
	return s
}

// RTT returns the smoothed round-trip time, zero before the first sample.
func (l *Layer) RTT() time.Duration { return l.rtt.srtt }

// Buffered returns the bytes of messages not yet acknowledged (queued,
// in flight or awaiting resend).
func (l *Layer) Buffered() int { return l.buffered }

// Idle reports whether nothing is queued, in flight or awaiting an ACK
// from us.
func (l *Layer) Idle() bool {
	return l.buffered == 0 && l.pending.len() == 0 && l.resend.len() == 0 && l.acks.empty() && l.nacks.empty()
}

// AckNow makes pending ACKs due at once instead of after the ACK delay,
// e.g. before a connection goes away.
func (l *Layer) AckNow() {
	if !l.acks.empty() {
		l.ackCount = max(l.ackCount, ackNowThreshold)
	}
}

// MaxUnsplit returns the largest message of reliability r sent in one frame.
func (l *Layer) MaxUnsplit(r wire.Reliability) int {
	return l.cfg.MaxDatagram - wire.DatagramHeaderSize - wire.FrameHeaderSize(r, false)
}

// ---- Send side ----

// Send queues message p (copied) with reliability r on an ordering channel.
// For the WithAckReceipt reliabilities it returns the receipt id later
// passed to Config.Receipt. A message larger than one frame is split; an
// unreliable one that must be split is sent reliably, as RakNet does.
func (l *Layer) Send(now time.Time, p []byte, r wire.Reliability, channel uint8) (uint32, error) {
	switch {
	case !r.Valid():
		return 0, fmt.Errorf("%w: %d", ErrReliability, r)
	case channel >= wire.NumOrderChannels:
		return 0, fmt.Errorf("%w: %d", ErrInvalidChannel, channel)
	case len(p) == 0:
		return 0, ErrEmptyMessage
	case len(p) > l.cfg.MaxMessageSize:
		return 0, fmt.Errorf("%w: %d > %d bytes", ErrMessageTooLarge, len(p), l.cfg.MaxMessageSize)
	case l.buffered > 0 && l.buffered+len(p) > l.cfg.MaxSendBuffer:
		return 0, ErrSendBufferFull
	}
	split := len(p) > l.MaxUnsplit(r)
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
		l.receiptID++
		id = l.receiptID
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
		idx := l.indexes(channel)
		tmpl.OrderIndex = u24(idx.order)
		tmpl.SequenceIndex = u24(idx.seq)
		idx.seq++
	} else if r.Ordered() {
		idx := l.indexes(channel)
		tmpl.OrderIndex = u24(idx.order)
		idx.order++
	} else {
		tmpl.OrderChannel = 0
	}
	l.stats.MessagesSent++
	if !split {
		l.queue(tmpl, p, rc)
		return id, nil
	}
	size := l.cfg.MaxDatagram - wire.DatagramHeaderSize - wire.FrameHeaderSize(r, true)
	count := (len(p) + size - 1) / size
	tmpl.Split, tmpl.SplitCount, tmpl.SplitID = true, uint32(count), l.splitID
	l.splitID++
	for i := range count {
		tmpl.SplitIndex = uint32(i)
		l.queue(tmpl, p[i*size:min(len(p), (i+1)*size)], rc)
	}
	return id, nil
}

// sendIndexes are one ordering channel's next order and sequence indexes.
type sendIndexes struct{ order, seq uint64 }

// indexes returns channel's send indexes, creating them on first use.
func (l *Layer) indexes(channel uint8) *sendIndexes {
	for len(l.sendIdx) <= int(channel) {
		start := absBase + uint64(l.cfg.InitialSend)
		l.sendIdx = append(l.sendIdx, sendIndexes{start, start})
	}
	return &l.sendIdx[channel]
}

// queue adds one frame to the pending queue.
func (l *Layer) queue(tmpl wire.Frame, p []byte, rc *message) {
	var f *outFrame
	if n := len(l.free); n > 0 {
		f = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		f = &outFrame{}
	}
	if cap(f.buf) < len(p) {
		// Small messages get small buffers, so a quiet connection does not
		// hold MTU-sized ones; a frame that once carried a large payload
		// keeps its buffer for the next.
		size := l.chunkSize
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
	l.buffered += len(p)
	l.pending.push(frameRef{f, f.gen})
}

// release returns a frame to the free list, invalidating references.
func (l *Layer) release(f *outFrame) {
	l.buffered -= len(f.buf)
	f.gen++
	f.msg = nil
	if len(l.free) < freeFrameCap {
		l.free = append(l.free, f)
	}
}

// slot returns the ring slot of absolute datagram number n.
func (l *Layer) slot(n uint64) *sentDatagram { return &l.sent[n&uint64(len(l.sent)-1)] }

// hasData reports whether frames wait to be sent.
func (l *Layer) hasData() bool { return l.resend.len() > 0 || l.pending.len() > 0 }

// AppendDatagram appends the next datagram to send to b and returns it, or
// returns nil when nothing may be sent now. Call it until it returns nil.
func (l *Layer) AppendDatagram(b []byte, now time.Time) []byte {
	l.onTimers(now)
	l.pullRefused(now)
	l.probe(now)
	if !l.nacks.empty() && !now.Before(l.nackAt) {
		return l.appendNack(b, &l.nacks, 0, now)
	}
	for i := range l.renacks {
		if !l.renacks[i].empty() && !now.Before(l.renackAt[i]) {
			return l.appendNack(b, &l.renacks[i], i+1, now)
		}
	}
	if !l.probes.empty() {
		// Probes repeat on their own backoff.
		return l.appendNack(b, &l.probes, nackRepeats, now)
	}
	ackDue := l.ackCount >= ackNowThreshold || !now.Before(l.ackFirst.Add(l.cfg.AckDelay))
	if !l.acks.empty() && ackDue {
		return l.appendAck(b, now)
	}
	if l.hasData() && l.canSendData(now) {
		return l.countSent(l.appendData(b, now))
	}
	// Pending ACKs also leave early, right after a data datagram that left
	// now: they would follow in a moment anyway, and sending them together
	// saves the connection a wake-up (an answered ping costs one pass, not
	// two). The data goes first, so an answer is not held up by the ACK.
	if !l.acks.empty() && !l.lastSend.IsZero() && now.Equal(l.lastSend) {
		return l.appendAck(b, now)
	}
	return nil
}

// appendAck appends an ACK of the pending datagram numbers.
func (l *Layer) appendAck(b []byte, now time.Time) []byte {
	// Every range is acknowledged twice, in this ACK and the next, so one
	// lost ACK does not make the peer resend what arrived. The peer
	// ignores numbers it already saw acknowledged.
	l.ackFresh = append(l.ackFresh[:0], l.acks.iv...)
	for _, iv := range l.ackRepeat {
		l.acks.addRange(iv.lo, iv.hi)
	}
	l.ackRepeat = append(l.ackRepeat[:0], l.ackFresh...)
	b = l.acks.appendAck(b, false, l.cfg.MaxDatagram, &l.ackBuf, nil)
	l.stats.AcksSent++
	if l.acks.empty() {
		l.ackCount = 0
	} else {
		l.ackFirst = now
	}
	return l.countSent(b)
}

// appendNack appends a NACK of what set holds and hands what it named to
// repeat number next.
func (l *Layer) appendNack(b []byte, set *intervalSet, next int, now time.Time) []byte {
	l.stats.NacksSent++
	var written *intervalSet
	if next < nackRepeats {
		written = &l.renacks[next]
		if written.empty() {
			l.renackAt[next] = now.Add(renackDelay << next)
		}
	}
	return l.countSent(set.appendAck(b, true, l.cfg.MaxDatagram, &l.ackBuf, written))
}

func (l *Layer) countSent(b []byte) []byte {
	l.stats.DatagramsSent++
	l.stats.BytesSent += uint64(len(b))
	return b
}

// canSendData checks the in-flight span, the window and the pacer.
func (l *Layer) canSendData(now time.Time) bool {
	if l.sendNext-l.sendOldest >= MaxInFlight {
		return false
	}
	if l.resend.len() == 0 && !l.canSendNew() {
		return false
	}
	if !l.cc.canSend(l.cfg.MaxDatagram) {
		return false
	}
	l.pace.refill(now, pacingRate(l.cc.cwnd, l.rtt.smoothed()))
	return l.pace.canSend(l.cfg.MaxDatagram)
}

// canSendNew reports whether the head of the pending queue may be sent:
// a new reliable frame needs room in the reliable window.
func (l *Layer) canSendNew() bool {
	ref, ok := l.pending.peek()
	if !ok {
		return false
	}
	if m := ref.f.msg; m != nil && m.split && !m.started && l.splitsActive >= maxSendSplits {
		return false
	}
	return !ref.f.frame.Reliability.Reliable() || l.relNext-l.relAcked.base < sendReliableWindow
}

// appendData packs resent frames, then new ones, into one datagram.
func (l *Layer) appendData(b []byte, now time.Time) []byte {
	n := l.sendNext
	if n-l.sendOldest >= uint64(len(l.sent)) {
		l.growSent()
	}
	s := l.slot(n)
	s.frames = s.frames[:0]
	s.retrans = false
	start := len(b)
	flags := wire.FlagValid | wire.FlagNeedsBAndAS
	if l.lastSendContinue && now.Equal(l.lastSend) {
		flags |= wire.FlagContinuousSend
	}
	h := wire.DatagramHeader{Flags: flags, Number: u24(n)}
	b = h.Append(b)
	room := l.cfg.MaxDatagram - wire.DatagramHeaderSize
	for l.resend.len() > 0 {
		ref, _ := l.resend.peek()
		if !ref.live() {
			l.resend.pop()
			continue
		}
		size := ref.f.frame.Size()
		if size > room {
			break
		}
		l.resend.pop()
		room -= size
		b = ref.f.frame.Append(b)
		ref.f.dgram = n
		s.frames = append(s.frames, ref)
		s.retrans = true
		l.stats.FramesResent++
	}
	for l.pending.len() > 0 && l.canSendNew() {
		ref, _ := l.pending.peek()
		f := ref.f
		size := f.frame.Size()
		if size > room {
			break
		}
		l.pending.pop()
		room -= size
		if m := f.msg; m != nil && m.split && !m.started {
			m.started = true
			l.splitsActive++
		}
		if f.frame.Reliability.Reliable() {
			f.relIndex, f.assigned = l.relNext, true
			f.frame.ReliableIndex = u24(l.relNext)
			l.relNext++
		}
		b = f.frame.Append(b)
		if f.frame.Reliability.Reliable() || f.msg != nil {
			f.dgram = n
			s.frames = append(s.frames, ref)
		} else {
			l.release(f)
		}
	}
	size := len(b) - start
	s.inFlight, s.size, s.sentAt = true, size, now
	l.sendNext++
	l.cc.onSent(size)
	l.pace.onSent(size)
	l.lastSendContinue = l.hasData()
	l.lastSend = now
	return b
}

// growSent doubles the in-flight ring, keeping slots at their numbers.
func (l *Layer) growSent() {
	ring := make([]sentDatagram, len(l.sent)*2)
	for n := l.sendOldest; n < l.sendNext; n++ {
		ring[n&uint64(len(ring)-1)] = *l.slot(n)
	}
	l.sent = ring
}

// onTimers runs the timeouts due at now: retransmission and split expiry.
func (l *Layer) onTimers(now time.Time) {
	if l.sendOldest < l.sendNext {
		rto := l.rtt.rto()
		timedOut := false
		for n := l.sendOldest; n < l.sendNext; n++ {
			s := l.slot(n)
			if !s.inFlight {
				continue
			}
			if now.Before(s.sentAt.Add(rto)) {
				break
			}
			l.lose(n, s, now, false)
			timedOut = true
		}
		if timedOut {
			l.rtt.onTimeout()
			l.cc.onTimeout(now)
		}
		l.advanceOldest()
	}
	if l.buffered != 0 {
		l.idleSince = time.Time{}
	} else if !l.idleSince.IsZero() && now.Sub(l.idleSince) >= idleTrimAfter && len(l.free) > idleFreeFrames {
		// Everything was acknowledged a while ago: a quiet connection
		// keeps only a few recycled frames, not the ones a burst left.
		clear(l.free[idleFreeFrames:])
		l.free = l.free[:idleFreeFrames]
	}
	if n := l.asm.expire(now); n > 0 {
		l.stats.Errors += uint64(n)
	}
}

// NextDeadline returns when the layer next needs AppendDatagram called
// without new input: an ACK to flush, a retransmission timeout, a pacing
// slot or a split expiry. It returns the zero time when nothing is due.
func (l *Layer) NextDeadline(now time.Time) time.Time {
	var d time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if !l.acks.empty() && l.ackCount >= ackNowThreshold {
		return now
	}
	if !l.nacks.empty() {
		earliest(l.nackAt)
	}
	for i := range l.renacks {
		if !l.renacks[i].empty() {
			earliest(l.renackAt[i])
		}
	}
	if len(l.pulls) > 0 {
		earliest(l.pullAt)
	}
	if l.waiting() {
		earliest(l.lastArrival.Add(l.probeDelay()))
	}
	if !l.acks.empty() {
		earliest(l.ackFirst.Add(l.cfg.AckDelay))
	}
	for n := l.sendOldest; n < l.sendNext; n++ {
		if s := l.slot(n); s.inFlight {
			earliest(s.sentAt.Add(l.rtt.rto()))
			break
		}
	}
	if l.hasData() && l.sendNext-l.sendOldest < MaxInFlight && (l.resend.len() > 0 || l.canSendNew()) && l.cc.canSend(l.cfg.MaxDatagram) {
		rate := pacingRate(l.cc.cwnd, l.rtt.smoothed())
		l.pace.refill(now, rate)
		earliest(l.pace.next(l.cfg.MaxDatagram, rate))
	}
	earliest(l.asm.oldestNext)
	return d
}

// lose handles datagram n as lost: its reliable frames that are still
// carried by it go to the resend queue, unreliable receipts report loss.
func (l *Layer) lose(n uint64, s *sentDatagram, now time.Time, congestionEvent bool) {
	l.stats.DatagramsLost++
	for _, ref := range s.frames {
		if !ref.live() || ref.f.dgram != n {
			continue
		}
		f := ref.f
		f.dgram = 0
		if f.frame.Reliability.Reliable() {
			l.resend.push(ref)
			continue
		}
		if f.msg != nil && f.msg.id != 0 && l.cfg.Receipt != nil {
			l.cfg.Receipt(f.msg.id, false)
		}
		l.release(f)
	}
	s.frames = s.frames[:0]
	s.inFlight = false
	if congestionEvent {
		l.cc.onLost(s.size, s.sentAt, now)
	} else {
		l.cc.onTimedOut(s.size)
	}
}

// ack handles datagram n as delivered.
func (l *Layer) ack(n uint64, s *sentDatagram, now time.Time) {
	// Datagram numbers are never reused, so an ACK of any datagram proves
	// the path works and ends the backoff; RTT samples come only from
	// datagrams without resent frames (Karn's rule), taken per ACK in
	// handleAck.
	l.rtt.backoff = 0
	for _, ref := range s.frames {
		if !ref.live() {
			continue
		}
		f := ref.f
		if f.assigned {
			_, _ = l.relAcked.mark(f.relIndex)
		}
		if m := f.msg; m != nil {
			m.remaining--
			if m.remaining == 0 {
				if m.split {
					l.splitsActive--
				}
				if m.id != 0 && l.cfg.Receipt != nil {
					l.cfg.Receipt(m.id, true)
				}
			}
		}
		l.release(f)
	}
	s.frames = s.frames[:0]
	s.inFlight = false
	l.cc.onAcked(s.size, s.sentAt)
}

func (l *Layer) advanceOldest() {
	for l.sendOldest < l.sendNext && !l.slot(l.sendOldest).inFlight {
		l.sendOldest++
	}
}

// handleAck processes an ACK or NACK.
func (l *Layer) handleAck(now time.Time, a *wire.Ack) {
	if l.sendOldest == l.sendNext {
		return
	}
	ref := l.sendNext - 1
	var largest uint64
	var newest, oldest time.Duration
	sampled := false
	for _, r := range a.Ranges {
		lo := unwrap(ref, r.Start)
		hi := lo + uint64(r.Len()) - 1
		lo, hi = max(lo, l.sendOldest), min(hi, l.sendNext-1)
		for n := lo; n <= hi && lo <= hi; n++ {
			s := l.slot(n)
			if !s.inFlight {
				continue
			}
			if a.NACK {
				l.lose(n, s, now, true)
				continue
			}
			if !s.retrans {
				sample := now.Sub(s.sentAt)
				if !sampled || sample < newest {
					newest = sample
				}
				oldest = max(oldest, sample)
				sampled = true
			}
			l.ack(n, s, now)
			largest = max(largest, n)
		}
	}
	if sampled {
		// One sample per ACK, from the newest datagram it names, as QUIC
		// does: a peer that acknowledges a whole tick's worth at once
		// must not outweigh one that acknowledges each datagram. The
		// oldest one bounds how long the peer may hold an ACK back.
		l.rtt.update(newest)
		l.rtt.notePeak(oldest)
	}
	if !a.NACK && largest != 0 {
		// Fast resend: an older datagram still unacknowledged when a later
		// one was acked is lost once it has been out clearly longer than a
		// round trip. Time, not a count of later datagrams, is the test:
		// a burst reordered by a few milliseconds of jitter overtakes many
		// datagrams at once and is not lost.
		srtt := l.rtt.smoothed()
		threshold := now.Add(-max(srtt*9/8, srtt+2*l.rtt.rttvar, minReorderWindow))
		for n := l.sendOldest; n < largest; n++ {
			s := l.slot(n)
			if !s.inFlight {
				continue
			}
			if !s.sentAt.Before(threshold) {
				break // numbered in send order: the rest are younger
			}
			l.lose(n, s, now, true)
		}
	}
	l.advanceOldest()
	if l.buffered == 0 && l.idleSince.IsZero() {
		l.idleSince = now
	}
}

// ---- Receive side ----

// HandleDatagram processes one received datagram: data, ACK or NACK. An
// error means the datagram (or, for a limit hit by one frame, that frame)
// was dropped; frames before it were processed.
func (l *Layer) HandleDatagram(now time.Time, b []byte) error {
	l.stats.DatagramsReceived++
	l.stats.BytesReceived += uint64(len(b))
	if len(b) == 0 || b[0]&wire.FlagValid == 0 {
		l.stats.Errors++
		return errNotConnected
	}
	if b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
		if _, err := l.ackBuf.Decode(b); err != nil {
			l.stats.Errors++
			return err
		}
		l.handleAck(now, &l.ackBuf)
		return nil
	}
	var h wire.DatagramHeader
	n, err := h.Decode(b)
	if err != nil {
		l.stats.Errors++
		return err
	}
	// Validate every frame before accepting the datagram, so a malformed
	// one is dropped whole and never acknowledged.
	frames := l.frameBuf[:0]
	for rest := b[n:]; len(rest) > 0; {
		var f wire.Frame
		k, err := f.Decode(rest)
		if err != nil {
			l.stats.Errors++
			return err
		}
		frames = append(frames, f)
		rest = rest[k:]
	}
	l.frameBuf = frames[:0]
	defer clear(frames)
	abs := unwrap(l.dgramHigh, h.Number)
	l.lastArrival, l.probeWait = now, 0
	if abs+datagramWindowSpan <= l.dgramHigh {
		// Older than the window: it cannot be told apart from a duplicate,
		// so it is dropped unacknowledged and its reliable frames come
		// again in a resend. (Numbers the window slid past without seeing
		// read as duplicates; a sender keeps at most MaxInFlight datagrams
		// in flight, far fewer than the window, so it gave up on those
		// long ago and an ACK of them is ignored.)
		l.stats.DuplicateDatagrams++
		return nil
	}
	// Any jump ahead is taken: datagram numbers only feed the ACK and NACK
	// sets and the duplicate window, which slides. (A jump of 2^23 or
	// more reads as old, above.) Refusing jumps would wedge a connection
	// whose peer lost a long run of datagrams.
	l.dgramWin.slide(abs)
	if l.dgramWin.seen(abs) {
		l.addAck(abs, now)
		l.stats.DuplicateDatagrams++
		return nil
	}
	if abs >= l.dgramHigh {
		if gap := abs - l.dgramHigh; gap > 0 && gap <= maxNACKGap {
			if l.nacks.empty() {
				l.nackAt = now.Add(l.nackDelay())
			}
			l.nacks.addRange(l.dgramHigh, abs-1)
			if len(l.nacks.iv) >= nackNowIntervals {
				l.nackAt = now
			}
		}
		l.dgramHigh = abs + 1
	} else {
		l.nacks.remove(abs)
		for i := range l.renacks {
			l.renacks[i].remove(abs)
		}
	}
	var refused, firstErr error
	refusedAt := 0
	for i := range frames {
		f := &frames[i]
		if err := l.admit(f); err != nil {
			if refused == nil {
				refused, refusedAt = err, i
			}
			continue
		}
		if err := l.handleFrame(f, now); err != nil {
			l.stats.Errors++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if refused != nil {
		// A frame over a receive limit was not kept, so the datagram is
		// not acknowledged: the sender resends its frames later and the
		// ones handled now are then deduplicated. Backpressure, not loss.
		l.stats.Errors++
		if refused != errRefuseSplitCount {
			if len(l.pulls) == maxPulls {
				// Keep the refusals nearest to delivery.
				l.sortPulls()
				l.pulls = l.pulls[:maxPulls*3/4]
			}
			f := &frames[refusedAt]
			r := refusal{num: abs, size: len(f.Payload)}
			if f.Split {
				r.size = l.asm.estimate(f)
			}
			if f.Reliability.Ordered() && !f.Reliability.Sequenced() {
				r.ordered, r.channel = true, f.OrderChannel
				r.order = unwrap(l.order.get(f.OrderChannel).expected, f.OrderIndex)
			}
			if len(l.pulls) == 0 {
				l.pullAt = now.Add(pullInterval)
			}
			l.pulls = append(l.pulls, r)
		}
		return refused
	}
	_, _ = l.dgramWin.mark(abs) // slide made room
	l.addAck(abs, now)
	return firstErr
}

// errNotConnected is returned for a datagram without the valid flag.
var errNotConnected = errors.New("handle datagram: not a connected datagram")

// Refusals from admit. They are values, not built per frame: a peer that
// ignores flow control can cause millions of them.
var (
	errRefuseReliable   = fmt.Errorf("handle datagram: reliable index: %w", errTooFarAhead)
	errRefuseSplitCount = fmt.Errorf("handle datagram: %w", errSplitCount)
	errRefuseSplitConc  = fmt.Errorf("handle datagram: %w", errSplitConc)
	errRefuseSplitBytes = fmt.Errorf("handle datagram: %w", errSplitBytes)
)

// admit checks one frame against the receive limits before anything is
// recorded, against the state left by the frames handled before it.
func (l *Layer) admit(f *wire.Frame) error {
	if f.Reliability.Reliable() {
		idx := unwrap(l.relWin.base, f.ReliableIndex)
		if !l.relWin.canHold(idx) {
			return errRefuseReliable
		}
		if l.relWin.seen(idx) {
			return nil
		}
	}
	// A message that waits behind a missing one on its ordering channel
	// is held to tighter limits than the one the channel waits for, so a
	// queue full of messages from ahead always leaves room for that one,
	// whose delivery drains the queue.
	waits := f.Reliability.Ordered() && !f.Reliability.Sequenced() && l.order.waits(f.OrderChannel, f.OrderIndex)
	if !f.Split {
		if waits {
			return l.order.admit(f.OrderChannel, f.OrderIndex, len(f.Payload), l.asm.committed)
		}
		return nil
	}
	if f.SplitCount > l.asm.maxCount {
		return errRefuseSplitCount
	}
	if l.asm.find(f.SplitID) != nil {
		// A message in progress was given room to complete when its
		// first fragment came: only the hard limit applies to the rest.
		if l.asm.bytes+len(f.Payload) > l.asm.maxBytes {
			return errRefuseSplitBytes
		}
		return nil
	}
	// A new message must have room to complete, so it is charged its
	// whole estimated size up front. Room taken by messages that cannot
	// complete would wedge the queue behind them.
	est := l.asm.estimate(f)
	maxConc, maxBytes := l.asm.maxConc, l.asm.maxBytes
	if waits {
		maxConc -= l.asm.reserveSlots()
		maxBytes -= l.asm.reserveBytes()
	}
	if len(l.asm.list) >= maxConc {
		return errRefuseSplitConc
	}
	if l.asm.committed+est > maxBytes {
		return errRefuseSplitBytes
	}
	if waits {
		// The whole message will need a place in the ordering queue when
		// it completes ahead of its turn.
		return l.order.admit(f.OrderChannel, f.OrderIndex, est, l.asm.committed)
	}
	return nil
}

// refusal is a datagram refused for a receive limit that frees up.
type refusal struct {
	num     uint64 // absolute datagram number
	order   uint64 // absolute order index of its refused frame, if ordered
	size    int    // the room its frame's message needs
	channel uint8
	ordered bool
}

const (
	// maxPulls bounds the refusals remembered; the farthest from delivery
	// are forgotten first and left to the sender's timeout.
	maxPulls = 4096
	// pullInterval is how often refused datagrams are asked for again,
	// and pullBatch how many at most each time beyond those the ordering
	// channels wait for: a sender that ignores flow control is not
	// invited into a resend storm.
	pullInterval = 10 * time.Millisecond
	pullBatch    = 256
)

// room returns how many bytes of messages that wait in an ordering queue
// the receive limits can still take.
func (l *Layer) room() int {
	return min(l.order.maxBytes-l.order.bytes-l.asm.committed, l.asm.maxBytes-l.asm.reserveBytes()-l.asm.committed)
}

// distance returns how far r's frame is from delivery: 0 for the message
// its channel waits for and for unordered frames.
func (l *Layer) distance(r *refusal) uint64 {
	if !r.ordered {
		return 0
	}
	return r.order - min(r.order, l.order.get(r.channel).expected)
}

// sortPulls sorts the refusals nearest to delivery first.
func (l *Layer) sortPulls() {
	slices.SortFunc(l.pulls, func(a, b refusal) int { return cmp.Compare(l.distance(&a), l.distance(&b)) })
}

// pullRefused NACKs refused datagrams once there is room for them: those
// whose frame its channel waits for always, then the nearest to delivery,
// as many as the room takes and at most pullBatch.
func (l *Layer) pullRefused(now time.Time) {
	if len(l.pulls) == 0 || now.Before(l.pullAt) {
		return
	}
	l.pullAt = now.Add(pullInterval)
	room := l.room()
	pulled := false
	if room < l.cfg.MaxDatagram {
		// No room: only what the channels wait for, found without
		// sorting, which a full connection would otherwise pay for every
		// interval.
		k := 0
		for _, r := range l.pulls {
			if l.distance(&r) == 0 {
				l.nacks.add(r.num)
				pulled = true
				continue
			}
			l.pulls[k] = r
			k++
		}
		l.pulls = l.pulls[:k]
	} else {
		l.sortPulls()
		n := 0
		for ; n < len(l.pulls); n++ {
			r := &l.pulls[n]
			if l.distance(r) > 0 {
				// Fragments of one message are neighbours here: its
				// room is counted once.
				if n == 0 || !r.ordered || r.order != l.pulls[n-1].order || r.channel != l.pulls[n-1].channel {
					room -= r.size
				}
				if room < 0 || n >= pullBatch {
					break
				}
			}
			l.nacks.add(r.num)
		}
		l.pulls = l.pulls[:copy(l.pulls, l.pulls[n:])]
		pulled = n > 0
	}
	if len(l.pulls) == 0 && cap(l.pulls) > 64 {
		l.pulls = nil
	}
	if pulled {
		l.nackAt = now
	}
}

const (
	// probeSpan is how many numbers past the highest received a probe
	// names: the tail a sender's last burst may have lost.
	probeSpan = 256
	// maxProbeWait bounds the backoff between probes.
	maxProbeWait = time.Second
)

// waiting reports whether received data waits for something missing: a
// message in reassembly or behind a gap in an ordering queue, or refused
// datagrams to ask for again.
func (l *Layer) waiting() bool {
	if len(l.asm.list) > 0 || len(l.pulls) > 0 {
		return true
	}
	for i := range l.order.ch {
		if l.order.ch[i].queued > 0 {
			return true
		}
	}
	return false
}

// probeDelay is how long after the last arrival the next probe is due:
// twice the smoothed RTT (longer before a sample), at least 50 ms, then
// doubling.
func (l *Layer) probeDelay() time.Duration {
	if l.probeWait == 0 {
		return max(50*time.Millisecond, 2*l.rtt.smoothed())
	}
	return l.probeWait
}

// probe NACKs the numbers the peer uses next when a wait has gone silent.
func (l *Layer) probe(now time.Time) {
	if l.lastArrival.IsZero() || !l.waiting() {
		return
	}
	wait := l.probeDelay()
	if now.Before(l.lastArrival.Add(wait)) {
		return
	}
	l.probes.addRange(l.dgramHigh, l.dgramHigh+probeSpan-1)
	l.probeWait = min(2*wait, maxProbeWait)
	l.lastArrival = now
}

// nackDelay is how long a gap may stay open before it is NACKed: long
// enough that mild reordering does not cause a resend (and a window cut),
// short against any RTO.
func (l *Layer) nackDelay() time.Duration {
	return min(max(minNACKDelay, l.rtt.rttvar), maxNACKDelay)
}

func (l *Layer) addAck(abs uint64, now time.Time) {
	if l.acks.empty() {
		l.ackFirst = now
	}
	l.acks.add(abs)
	l.ackCount++
}

// handleFrame runs one frame through dedup, reassembly and ordering.
func (l *Layer) handleFrame(f *wire.Frame, now time.Time) error {
	r := f.Reliability
	if r.Reliable() {
		idx := unwrap(l.relWin.base, f.ReliableIndex)
		fresh, err := l.relWin.mark(idx)
		if err != nil {
			return fmt.Errorf("handle frame: reliable index %d: %w", f.ReliableIndex, err)
		}
		if !fresh {
			l.stats.DuplicateFrames++
			return nil
		}
	}
	if f.Split {
		whole, err := l.asm.add(f, now)
		if err != nil || whole == nil {
			return err
		}
		f = whole
	}
	switch {
	case r.Sequenced():
		if l.order.sequenced(f.OrderChannel, f.OrderIndex, f.SequenceIndex) {
			l.deliver(f.Payload)
		}
		return nil
	case r.Ordered():
		return l.order.ordered(f.OrderChannel, f.OrderIndex, f.Payload, l.deliver)
	}
	l.deliver(f.Payload)
	return nil
}

func (l *Layer) deliver(p []byte) {
	l.stats.MessagesDelivered++
	l.cfg.Deliver(p)
}

// fifo is a queue of frame references backed by a ring.
type fifo struct {
	buf        []frameRef
	head, size int
}

func (q *fifo) len() int { return q.size }

func (q *fifo) push(r frameRef) {
	if q.size == len(q.buf) {
		buf := make([]frameRef, max(16, 2*len(q.buf)))
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
	if q.size == 0 && len(q.buf) > 1024 {
		q.buf, q.head = nil, 0
	}
}
