package reliability

import (
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Layer is one connection's reliability layer. It is not safe for
// concurrent use; the connection serialises calls to it.
//
// The send side is a send queue (messages split into frames), a packer
// (frames into datagrams), the sent-datagram handler (ACKs, RTT, loss and
// resends, over the in-flight history) with its congestion window, and a
// pacer. The receive side is a tracker of datagram numbers (duplicates
// and ACKs), a NACK queue, admission (the receive limits, with pulls of
// refused datagrams), a silence prober and the receiver proper (dedup,
// reassembly, ordering, delivery).
type Layer struct {
	cfg Config

	q    sendQueue
	pack packer
	sent sentHandler
	pace pacer

	recv   receivedTracker
	nacks  nackQueue
	adm    admission
	probe  prober
	rcv    receiver
	charge charge   // what rcv holds, reserved from cfg.Budget
	ackBuf wire.Ack // scratch for ACK and NACK encoding and decoding
	frames []wire.Frame

	stats Stats // counters kept here rather than by a part
}

// New returns a Layer for a connection established at now.
func New(cfg Config, now time.Time) *Layer {
	if cfg.MaxDatagram < wire.DatagramHeaderSize+wire.MaxFrameHeaderSize+1 {
		panic("reliability: Config needs MaxDatagram")
	}
	cfg.fill()
	send := absBase + uint64(cfg.InitialSend)
	recv := absBase + uint64(cfg.InitialRecv)
	return &Layer{
		cfg:    cfg,
		q:      newSendQueue(&cfg, send),
		pack:   packer{maxDatagram: cfg.MaxDatagram},
		sent:   sentHandler{hist: newSentHistory(send), cc: newCongestion(cfg.MaxDatagram, MaxInFlight), nacks: newNackBudget(now)},
		pace:   newPacer(cfg.MaxDatagram, now),
		recv:   newReceivedTracker(recv, cfg.AckDelay),
		nacks:  newNackQueue(),
		probe:  newProber(),
		rcv:    newReceiver(&cfg, recv),
		charge: charge{b: cfg.Budget},
	}
}

// Stats returns the layer's counters.
func (l *Layer) Stats() Stats {
	s := l.stats
	s.MessagesSent = l.q.messages
	s.FramesResent = l.pack.resent
	s.DatagramsLost = l.sent.lost
	s.BadAcks, s.NacksIgnored = l.sent.badAcks, l.sent.nacksIgnored
	s.AcksSent, s.NacksSent = l.recv.sent, l.nacks.sent
	s.DuplicateDatagrams, s.DuplicateFrames = l.recv.dups, l.rcv.dupFrames
	s.MessagesDelivered = l.rcv.delivered
	s.DataSpan = l.recv.high - (absBase + uint64(l.cfg.InitialRecv))
	s.Held, s.HeldBytes = l.rcv.held.msgs, l.rcv.held.bytes
	s.Reserved, s.BudgetRefused = l.charge.reserved, l.charge.refused
	r := &l.sent.rtt
	s.SRTT, s.RTTVar, s.MinRTT, s.RTO = r.srtt, r.rttvar, r.minRTT, r.rto()
	s.Window, s.InFlight, s.Buffered = l.sent.cc.cwnd, l.sent.cc.inFlight, l.q.buffered
	return s
}

// RTT returns the smoothed round-trip time, zero before the first sample.
func (l *Layer) RTT() time.Duration { return l.sent.rtt.srtt }

// Buffered returns the bytes of messages not yet acknowledged (queued,
// in flight or awaiting resend).
func (l *Layer) Buffered() int { return l.q.buffered }

// Next returns the next message the layer delivered, in delivery order,
// and whether there was one. HandleDatagram and Consumed deliver; take
// what they delivered before the datagram handled is reused. Every
// message delivered is held for the application, counted against
// MaxHeldMessages and MaxHeldBytes (and Config.Budget), until it is given
// back: with Consumed once the application read it, or with Release at
// once if the application does not keep it (a control message).
func (l *Layer) Next() (msg []byte, owned, ok bool) {
	d, ok := l.rcv.take()
	return d.msg, d.owned, ok
}

// Receipt is the fate of a message sent with a ...WithAckReceipt
// reliability: ID is the id Send returned, Acked whether the peer
// acknowledged it (false: an unreliable one was lost).
type Receipt struct {
	ID    uint32
	Acked bool
}

// Receipts returns the receipts learned since the last call, in the order
// learned, and forgets them. HandleDatagram (an ACK or NACK) and
// AppendDatagram (a retransmission timeout) learn them; take them after
// those, every time, since those not taken pile up. The slice is valid
// until the next call into the layer.
func (l *Layer) Receipts() []Receipt {
	r := l.q.receipts
	l.q.receipts = r[:0]
	return r
}

// Consumed tells the layer the application took one held message of size
// bytes. It may deliver messages that were waiting for room (see Next)
// and makes refused datagrams due to be pulled (NACKed) again: call
// AppendDatagram, or arm the timer from NextDeadline, after it.
func (l *Layer) Consumed(now time.Time, size int) {
	l.rcv.consumed(size)
	l.adm.consumed(now)
	if l.charge.b != nil {
		l.charge.trim(l.rcv.holds())
	}
}

// Release gives back at once the room of a delivered message of size
// bytes the application does not keep: it is as if the message had never
// been held. It may deliver messages that were waiting for that room (see
// Next).
func (l *Layer) Release(size int) {
	l.rcv.consumed(size)
	if l.charge.b != nil {
		l.charge.trim(l.rcv.holds())
	}
}

// Close gives back to Config.Budget everything the layer holds for the
// peer and drops it: the messages in reassembly and the ordering queues,
// and the count of those held by the application, which Consumed no
// longer releases. Call it once the connection has ended; any frame
// handled after it is refused.
func (l *Layer) Close() {
	l.rcv.close()
	l.adm.close()
	if l.charge.b != nil {
		l.charge.close()
	}
}

// AckNow makes pending ACKs due at once instead of after the ACK delay,
// e.g. before a connection goes away.
func (l *Layer) AckNow() { l.recv.ackNow() }

// MaxUnsplit returns the largest message of reliability r sent in one frame.
func (l *Layer) MaxUnsplit(r wire.Reliability) int { return l.q.maxUnsplit(r) }

// Send queues message p (copied) with reliability r on an ordering channel.
// For the WithAckReceipt reliabilities it returns the receipt id that
// Receipts later reports with the message's fate. A message larger than one frame is split; an
// unreliable one that must be split is sent reliably, as RakNet does.
func (l *Layer) Send(p []byte, r wire.Reliability, channel uint8) (uint32, error) {
	return l.q.push(p, r, channel)
}

// HandleDatagram processes one received datagram: data, ACK or NACK, and
// delivers the messages it completes, in order (see Next). An error means
// the datagram (or, for a limit hit by one frame, that frame) was
// dropped; frames before it were processed. A frame over a receive limit,
// the room of the messages held and Config.Budget included, is refused:
// its datagram is not acknowledged, and is NACKed once there is room
// (backpressure, not loss); the error then wraps ErrHeldFull or ErrBudget
// for those two. An ACK or NACK whose records are not sorted, disjoint
// and within the datagrams sent is dropped whole.
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
		if err := l.sent.onAck(now, &l.ackBuf, &l.q); err != nil {
			l.stats.Errors++
			return err
		}
		if l.ackBuf.NACK {
			l.stats.NacksReceived++
		}
		return nil
	}
	var h wire.DatagramHeader
	n, err := h.Decode(b)
	if err != nil {
		l.stats.Errors++
		return err
	}
	// The number comes first: a duplicate is acknowledged again, or
	// dropped when too old to tell, without decoding its frames.
	abs := l.recv.number(h.Number)
	if l.recv.duplicate(abs, now) {
		l.probe.arrived(now)
		return nil
	}
	// Validate every frame before accepting the datagram, so a malformed
	// one is dropped whole and never acknowledged.
	frames := l.frames[:0]
	for rest := b[n:]; len(rest) > 0; {
		var f wire.Frame
		k, err := f.Decode(rest)
		if err != nil {
			l.stats.Errors++
			clear(frames)
			return err
		}
		frames = append(frames, f)
		rest = rest[k:]
	}
	l.frames = frames[:0]
	defer clear(frames)
	l.probe.arrived(now)
	l.stats.DataReceived++
	if high := l.recv.advance(abs); abs >= high {
		l.nacks.gap(high, abs, now, nackDelay(l.sent.rtt.rttvar))
	} else {
		l.nacks.arrived(abs)
	}
	var refused, firstErr error
	refusedAt := 0
	for i := range frames {
		f := &frames[i]
		err := l.adm.admit(&l.rcv, f)
		if err == nil && l.charge.b != nil {
			err = l.reserve(f)
		}
		if err != nil {
			if refused == nil {
				refused, refusedAt = err, i
			}
			continue
		}
		if err := l.rcv.handleFrame(f, now); err != nil {
			l.stats.Errors++
			if firstErr == nil {
				firstErr = err
			}
		}
		if l.charge.b != nil {
			l.charge.trim(l.rcv.holds())
		}
	}
	if refused != nil {
		// A frame over a receive limit was not kept, so the datagram is
		// not acknowledged: the sender resends its frames later and the
		// ones handled now are then deduplicated. Backpressure, not loss.
		l.stats.Errors++
		l.adm.refuse(now, abs, &frames[refusedAt], refused, &l.rcv)
		return refused
	}
	l.recv.accept(abs, now)
	return firstErr
}

// reserve takes from the budget what handling admitted frame f may add to
// what the layer holds, leaving room for the messages the channels wait
// for if f's message waits too.
func (l *Layer) reserve(f *wire.Frame) error {
	n, waits := l.rcv.need(f)
	if n == 0 {
		return nil
	}
	keep := 0
	if waits {
		keep = l.rcv.keep(n, l.cfg.MaxDatagram)
	}
	if !l.charge.reserve(n, keep) {
		return errRefuseBudget
	}
	return nil
}

// waiting reports whether received data waits for something missing: a
// message in reassembly or behind a gap in an ordering queue, or refused
// datagrams to ask for again.
func (l *Layer) waiting() bool { return l.rcv.waiting() || l.adm.waiting() }

// AppendDatagram appends the next datagram to send to b and returns it, or
// returns nil when nothing may be sent now. Call it until it returns nil.
func (l *Layer) AppendDatagram(b []byte, now time.Time) []byte {
	l.onTimers(now)
	if len(l.adm.pulls) > 0 {
		l.adm.pull(now, &l.rcv, &l.nacks, l.cfg.MaxDatagram, &l.charge)
	}
	if srtt := l.sent.rtt.smoothed(); l.waiting() && l.probe.due(now, srtt) {
		l.probe.fire(now, srtt, l.recv.high)
	}
	if l.nacks.pending() {
		if d, ok := l.nacks.appendDue(b, now, l.cfg.MaxDatagram, &l.ackBuf); ok {
			return l.countSent(d)
		}
	}
	if !l.probe.set.empty() {
		// Probes repeat on their own backoff.
		return l.countSent(l.nacks.appendNack(b, &l.probe.set, nackRepeats, now, l.cfg.MaxDatagram, &l.ackBuf))
	}
	if l.recv.due(now) {
		return l.countSent(l.recv.appendAck(b, now, l.cfg.MaxDatagram, &l.ackBuf))
	}
	if l.dataAllowed() && l.paced(now) {
		return l.countSent(l.appendData(b, now))
	}
	// Pending ACKs also leave early, right after a data datagram that left
	// now, when the peer's datagrams are sparse: they would follow in a
	// moment anyway, and sending them together saves the connection a
	// wake-up (an answered ping costs one pass, not two). The data goes
	// first, so an answer is not held up by the ACK. While the peer's
	// datagrams come faster than the ACK delay (an ACK left within it),
	// they wait for their deadline or the count instead: one ACK then
	// covers many of the peer's datagrams, where leaving with every reply
	// would double the datagrams of a request/response exchange.
	if !l.recv.acks.empty() && !l.pack.lastSend.IsZero() && now.Equal(l.pack.lastSend) && !l.recv.dense(now) {
		return l.countSent(l.recv.appendAck(b, now, l.cfg.MaxDatagram, &l.ackBuf))
	}
	return nil
}

func (l *Layer) countSent(b []byte) []byte {
	l.stats.DatagramsSent++
	l.stats.BytesSent += uint64(len(b))
	return b
}

// dataAllowed reports whether a data datagram may leave but for the
// pacer: frames wait, and the in-flight span, the congestion window and
// (for new frames) the send windows have room.
func (l *Layer) dataAllowed() bool {
	return l.q.hasData() && (l.q.resend.len() > 0 || l.q.canSendNew()) && l.sent.canSend(l.cfg.MaxDatagram)
}

// pacingRate returns the pacer's rate now, in bytes per second, and
// brings its budget up to date.
func (l *Layer) pacingRate(now time.Time) float64 {
	rate := pacingRate(l.sent.cc.cwnd, l.sent.rtt.smoothed())
	l.pace.refill(now, rate)
	return rate
}

// paced reports whether the pacer lets a datagram leave now.
func (l *Layer) paced(now time.Time) bool {
	l.pacingRate(now)
	return l.pace.canSend(l.cfg.MaxDatagram)
}

// appendData packs resent frames, then new ones, into one datagram.
func (l *Layer) appendData(b []byte, now time.Time) []byte {
	n, s := l.sent.hist.add()
	start := len(b)
	b = l.pack.pack(b, now, n, s, &l.q)
	size := len(b) - start
	l.sent.sent(s, size, now)
	l.pace.onSent(size)
	return b
}

// onTimers runs the timeouts due at now: retransmission, the trim of an
// idle send queue and split expiry.
func (l *Layer) onTimers(now time.Time) {
	if l.sent.hist.span() > 0 {
		l.sent.onTimers(now, &l.q)
	}
	if l.q.buffered != 0 || !l.q.idleSince.IsZero() {
		l.q.trimIdle(now)
	}
	if !l.rcv.asm.oldestNext.IsZero() {
		if n := l.rcv.asm.expire(now); n > 0 {
			l.stats.Errors += uint64(n)
			if l.charge.b != nil {
				l.charge.trim(l.rcv.holds())
			}
		}
	}
}

// NextDeadline returns when the layer next needs AppendDatagram called
// without new input: an ACK or NACK to send, a retransmission timeout, a
// pacing slot, a pull, a probe or a split expiry. It returns the zero
// time when nothing is due.
func (l *Layer) NextDeadline(now time.Time) time.Time {
	if !l.recv.acks.empty() && l.recv.count >= ackNowThreshold {
		return now
	}
	// Each part is asked only if it may have something due.
	var d deadline
	if l.nacks.pending() {
		l.nacks.deadline(&d)
	}
	l.adm.deadline(&d)
	if l.waiting() {
		l.probe.deadline(&d, l.sent.rtt.smoothed())
	}
	if !l.recv.acks.empty() {
		d.add(l.recv.deadline(now))
	}
	if l.sent.hist.span() > 0 {
		d.add(l.sent.rtoDeadline())
	}
	if l.dataAllowed() {
		d.add(l.pace.next(l.cfg.MaxDatagram, l.pacingRate(now)))
	}
	if !l.rcv.asm.oldestNext.IsZero() {
		d.add(l.rcv.asm.oldestNext)
	}
	return d.t
}

// AppendFinal appends to b a datagram carrying msg unreliably, whatever
// the congestion window, the pacer and the queues allow: the goodbye of a
// connection that gives up, which nothing will resend and which must not
// wait behind data the peer never acknowledged. Nothing is to be sent
// after it.
func (l *Layer) AppendFinal(b, msg []byte) []byte {
	n, s := l.sent.hist.add()
	s.inFlight, s.frames = false, s.frames[:0]
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: u24(n)}
	f := wire.Frame{Reliability: wire.Unreliable, Payload: msg}
	return l.countSent(f.Append(h.Append(b)))
}
