package reliability

import (
	"errors"
	"time"
)

// Errors returned by Send.
var (
	ErrMessageTooLarge = errors.New("message exceeds the maximum message size")
	ErrSendBufferFull  = errors.New("send buffer full")
	ErrInvalidChannel  = errors.New("order channel out of range")
	ErrReliability     = errors.New("invalid reliability")
	ErrEmptyMessage    = errors.New("empty message")
)

// Config configures a Layer. Zero values take the defaults in limits.go.
type Config struct {
	// MaxDatagram is the largest UDP payload to send: the negotiated MTU
	// minus the IP and UDP headers. Required.
	MaxDatagram int

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

	// MaxHeldMessages and MaxHeldBytes bound the messages delivered and
	// kept but not yet Consumed (the connection's read queue). Defaults
	// DefaultMaxHeldMessages and DefaultMaxHeldBytes. A message that does
	// not fit waits, in its ordering queue or unacknowledged at the
	// sender, except that one message is always delivered when nothing
	// is held, however large.
	MaxHeldMessages, MaxHeldBytes int

	// Budget, if set, is charged for every byte the layer holds for the
	// peer: fragments in reassembly (a message its estimated size from
	// its first fragment on), messages in ordering queues and messages
	// delivered and kept (held) until Consumed. Reserve is called before
	// the bytes are held; false refuses the frame like any receive limit
	// (its datagram is not acknowledged and it is pulled again later, on
	// the pull interval, since room may free up beyond this layer), never
	// a lost message. Release returns bytes when they are freed, and
	// Close returns the rest. The per-connection limits above apply as
	// well.
	Budget Budget

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
	def(&c.MaxHeldMessages, DefaultMaxHeldMessages)
	def(&c.MaxHeldBytes, DefaultMaxHeldBytes)
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
	NacksReceived                    uint64 // NACK datagrams accepted
	DuplicateDatagrams               uint64
	DuplicateFrames                  uint64
	Errors                           uint64 // datagrams or frames refused
	SRTT, RTTVar, MinRTT, RTO        time.Duration
	Window, InFlight                 int // congestion window and bytes in flight
	Buffered                         int // bytes held until acknowledged
	Held, HeldBytes                  int // messages and bytes delivered, not yet given back (Consumed, Release)

	// BadAcks counts ACKs and NACKs dropped whole, also counted in
	// Errors: records unsorted, overlapping or naming datagrams not sent.
	BadAcks uint64
	// NacksIgnored counts datagrams NACKed beyond the NACK budget
	// (maxNACKedPerSecond) and so left to their RTO.
	NacksIgnored uint64
	// Reserved is the bytes reserved from Config.Budget, BudgetRefused
	// the frames it refused (also counted in Errors, once per datagram).
	Reserved      int
	BudgetRefused uint64
	// DataReceived counts the distinct data datagrams that arrived, and
	// DataSpan the datagram numbers up to the highest of them: the
	// difference is what the peer sent that never arrived (or not yet).
	DataReceived, DataSpan uint64
}
