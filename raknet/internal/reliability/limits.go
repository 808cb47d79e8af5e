package reliability

import "time"

// Every bound of the layer, in one place. The receive side bounds every
// structure the peer feeds; the send side keeps within what common peers
// accept: go-raknet drops a connection whose datagram or ordering window
// spans more than 2048 numbers, refuses more than 512 fragments per
// message and more than 16 split messages in progress.

// Defaults of the Config limits, taken when a field is zero.
const (
	// DefaultMaxMessageSize bounds a message given to Send: 8 MiB is far
	// above any Bedrock packet (a chunk batch is well under 1 MiB).
	DefaultMaxMessageSize = 8 << 20
	// DefaultMaxSendBuffer bounds the bytes queued, in flight or awaiting
	// resend, so a peer that stops acknowledging cannot make us hold
	// more.
	DefaultMaxSendBuffer = 16 << 20
	// DefaultMaxSplitCount is the most fragments a received message may
	// announce; its part slots are charged up front.
	DefaultMaxSplitCount = 8192
	// DefaultMaxConcurrentSplits is the most split messages in
	// reassembly at once.
	DefaultMaxConcurrentSplits = 1024
	// DefaultMaxSplitBytes bounds the bytes held for reassembly.
	DefaultMaxSplitBytes = 32 << 20
	// DefaultSplitTimeout drops a partial message that got no new
	// fragment for this long.
	DefaultSplitTimeout = 30 * time.Second
	// DefaultMaxOrderQueue is how far ahead of the next message an
	// ordered one may be queued, per channel. A sender without congestion
	// control (go-raknet) puts whole bursts ahead of a lost message;
	// refusing them sends it into a resend storm.
	DefaultMaxOrderQueue = 1 << 16
	// DefaultMaxOrderBytes bounds the bytes held by the ordering queues,
	// their ring slots included.
	DefaultMaxOrderBytes = 32 << 20
	// DefaultReliableWindow is how far ahead of the oldest missing one a
	// reliable index is taken.
	DefaultReliableWindow = 1 << 16
	// DefaultAckDelay is how long a received datagram waits for others to
	// share its ACK.
	DefaultAckDelay = 5 * time.Millisecond
	// DefaultMaxHeldMessages and DefaultMaxHeldBytes bound the messages
	// delivered and kept but not yet consumed: the connection's read
	// queue, whose room is the only flow control RakNet has.
	DefaultMaxHeldMessages = 16384
	DefaultMaxHeldBytes    = 64 << 20
)

// Send side.
const (
	// MaxInFlight is the most datagrams in flight (the span from the
	// oldest unacknowledged datagram number to the next one). Like
	// sendReliableWindow, it stays below the 2048 that go-raknet allows
	// between its oldest missing number and its newest before it drops
	// the connection, and above what one 100 ms ACK tick of small
	// messages needs.
	MaxInFlight = 2000
	// sendReliableWindow is the most reliable indexes in flight; it also
	// bounds the span of order indexes a receiver must queue (go-raknet's
	// 2048 again).
	sendReliableWindow = 2000
	// maxSendSplits is the most split messages partly sent at once, below
	// the 16 in progress that go-raknet and our receiver accept.
	maxSendSplits = 8
	// smallFrameBuffer is the buffer size given to frames of small
	// messages, so a quiet connection does not hold MTU-sized ones.
	smallFrameBuffer = 256
	// freeFrameCap bounds the recycled frames a Layer keeps: as many as
	// may be in flight, so a steady stream reuses every frame an ACK
	// frees (an idle Layer trims to idleFreeFrames).
	freeFrameCap = sendReliableWindow
	// idleFreeFrames is how many recycled frames a Layer keeps once all
	// it sent was acknowledged idleTrimAfter ago.
	idleFreeFrames = 2
	idleTrimAfter  = time.Second
	// initialSentSlots is the in-flight ring's first size; it doubles as
	// needed up to MaxInFlight.
	initialSentSlots = 4
	// minFifo is the smallest ring a frame queue grows to, and
	// maxIdleFifo the largest a drained one keeps.
	minFifo     = 4
	maxIdleFifo = 1024
	// minReorderWindow is the least time an unacknowledged datagram
	// older than an acknowledged one is given before it is deemed lost.
	minReorderWindow = 2 * time.Millisecond
	// maxAckNumbersSent is the most datagram numbers one ACK or NACK
	// names: go-raknet refuses a whole ACK or NACK naming more than 8192.
	maxAckNumbersSent = 8192
	// ackSpan is how far below the next datagram number a received ACK
	// may reach: a receiver of ours acknowledges any number its datagram
	// window still tracks (a duplicate is acknowledged again), and the
	// newest it has seen is behind our next by what is in flight.
	// Anything older, or never sent, drops the whole ACK. (A NACK may
	// name any number sent: see sentHistory.check.)
	ackSpan = datagramWindowSpan + MaxInFlight
	// maxNACKedPerSecond bounds the datagrams a peer's NACKs make us
	// resend, per second, as oomph's go-raknet fork does with the same
	// 512: a NACK costs its sender a few bytes per number, the resend a
	// datagram's worth of ours, so NACKs without a budget amplify and keep
	// the window collapsing. A NACK beyond the budget is ignored; the RTO
	// still recovers a datagram that was lost. nackBurst is how many may
	// be NACKed at once: a second's worth, a quarter of the largest window.
	maxNACKedPerSecond = 512
	nackBurst          = maxNACKedPerSecond
)

// Timeouts (RFC 6298 with RakNet's numbers). RakNet datagram numbers are
// never reused, so every ACK identifies one transmission; samples are
// still only taken from datagrams that carried no resent frames, and the
// backed-off RTO is kept until such a sample arrives (Karn's rule).
const (
	// InitialRTO is the RTO before the first sample.
	InitialRTO = 300 * time.Millisecond
	// MinRTO and MaxRTO bound the RTO: the floor keeps a LAN's jitter
	// from causing spurious resends, the ceiling keeps a recovering path
	// from waiting seconds per resend.
	MinRTO = 40 * time.Millisecond
	MaxRTO = 3 * time.Second
	// rtoGranularity is the smallest variance term the RTO adds.
	rtoGranularity = 5 * time.Millisecond
)

// Congestion window and pacing, in datagrams of the connection's MTU.
const (
	initialWindow = 64
	minWindow     = 8
	// pacingBurst is how many datagrams may leave back to back.
	pacingBurst = 16
	// minPacingDelay is the shortest wait the pacer asks for, so a timer
	// is not armed for microseconds.
	minPacingDelay = time.Millisecond
)

// Receive side: datagram tracking, ACKs and NACKs.
const (
	// datagramWindowSpan is how many datagram numbers are tracked for
	// duplicate detection: twice what a sender keeps in flight.
	datagramWindowSpan = 4096
	// ackNowThreshold is the count of received datagrams that forces an
	// ACK before the delay runs out.
	ackNowThreshold = 32
	// maxAckIntervals bounds the pending ACK and NACK sets; a scattered
	// storm of numbers drops the oldest intervals, which the peer's
	// timeout then covers.
	maxAckIntervals = 512
	// minNACKDelay and maxNACKDelay bound how long a gap waits for
	// reordered datagrams before it is NACKed.
	minNACKDelay = 4 * time.Millisecond
	maxNACKDelay = 20 * time.Millisecond
	// maxNACKGap is the largest gap NACKed at once; larger gaps are left
	// to the sender's timeout. A run of datagrams lost together (a full
	// socket buffer) can be long; a NACK names a run in one record, and
	// one NACK can name this many.
	maxNACKGap = maxAckNumbersSent
	// A NACK is repeated nackRepeats times, renackDelay after it, then
	// twice and four times that after each repeat.
	nackRepeats = 3
	renackDelay = 25 * time.Millisecond
	// nackNowIntervals is how many separate gaps make NACKs leave at
	// once rather than after the reordering allowance, so heavy loss is
	// reported before the set fills and drops gaps.
	nackNowIntervals = 64
)

// Receive side: admission, pulls and probes.
const (
	// maxPulls bounds the refusals remembered; the farthest from
	// delivery are forgotten first and left to the sender's timeout.
	maxPulls = 4096
	// maxIdlePulls is the largest refusal list kept once it is empty.
	maxIdlePulls = 64
	// pullInterval is how often refused datagrams are asked for again,
	// and pullBatch how many at most each time beyond those the ordering
	// channels wait for: a sender that ignores flow control is not
	// invited into a resend storm.
	pullInterval = 10 * time.Millisecond
	pullBatch    = 256
	// maxBudgetPullWait is the longest a refusal for the budget waits
	// between tries while the budget has room for none: tries double
	// their interval up to it, so a connection whose peer overflows its
	// share is not woken a hundred times a second while the listener is
	// full, and is asked again soon enough once room frees up.
	maxBudgetPullWait = 8 * pullInterval
	// probeSpan is how many numbers past the highest received a probe
	// names: the tail a sender's last burst may have lost.
	probeSpan = 256
	// minProbeDelay is the least silence before a probe; maxProbeWait
	// bounds the backoff between probes.
	minProbeDelay = 50 * time.Millisecond
	maxProbeWait  = time.Second
)

// Receive side: reassembly and ordering.
const (
	// partOverhead charges the slice header of every announced part so an
	// announced count costs memory up front.
	partOverhead = 24
	// idleAssemblies is how many messages in progress the list and map
	// may have grown to and still be kept once empty.
	idleAssemblies = 16
	// slotSize is the memory one ordering ring slot takes, charged
	// against MaxOrderBytes.
	slotSize = 24
	// minOrderRing is the smallest ordering ring a channel allocates.
	minOrderRing = 8
	// maxDirectSplit is the largest split message reassembled straight
	// into one buffer, allocated whole on its first fragment. A larger
	// one is kept fragment by fragment, as it arrives: one datagram must
	// not make the receiver allocate (and zero) much more than it
	// carries, whatever was reserved for the message.
	maxDirectSplit = 64 << 10
)
