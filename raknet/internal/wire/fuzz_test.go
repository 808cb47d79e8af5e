package wire

import (
	"reflect"
	"slices"
	"testing"
)

// maxUDPPayload is the largest payload a UDP datagram carries without IPv6
// jumbograms. Larger fuzz inputs cannot come off the network.
const maxUDPPayload = 65535 - 8

// offlineMessage returns the decoder for an offline message id, or nil.
func offlineMessage(id byte) codec {
	switch id {
	case IDUnconnectedPing, IDUnconnectedPingOpenConnections:
		return &UnconnectedPing{}
	case IDUnconnectedPong:
		return &UnconnectedPong{}
	case IDOpenConnectionRequest1:
		return &OpenConnectionRequest1{}
	case IDOpenConnectionReply1:
		return &OpenConnectionReply1{}
	case IDOpenConnectionRequest2:
		return &OpenConnectionRequest2{}
	case IDOpenConnectionReply2:
		return &OpenConnectionReply2{}
	case IDIncompatibleProtocolVersion:
		return &IncompatibleProtocolVersion{}
	}
	if IsNotice(id) {
		return &Notice{}
	}
	return nil
}

// connectedMessage returns the decoder for a connected message id, or nil.
func connectedMessage(id byte) codec {
	switch id {
	case IDConnectedPing:
		return &ConnectedPing{}
	case IDConnectedPong:
		return &ConnectedPong{}
	case IDConnectionRequest:
		return &ConnectionRequest{}
	case IDConnectionRequestAccepted:
		return &ConnectionRequestAccepted{}
	case IDNewIncomingConnection:
		return &NewIncomingConnection{}
	case IDDisconnectionNotification:
		return &DisconnectionNotification{}
	}
	return nil
}

// addMessageSeeds adds the encodings of every table message whose first
// byte keep accepts.
func addMessageSeeds(f *testing.F, keep func(id byte) bool) {
	for _, tc := range append(strictMessages(), lenientMessages()...) {
		if b := tc.msg.Append(nil); keep(b[0]) {
			f.Add(b)
		}
	}
}

// checkMessageStable is the shared property of FuzzOffline and
// FuzzConnected: a message that decodes re-encodes to at most slack bytes
// more than it consumed (the lenient decoders fill in a missing tail), and
// the re-encoding decodes completely to the same value.
func checkMessageStable(t *testing.T, b []byte, m codec, slack int) {
	n, err := m.Decode(b)
	if err != nil {
		if n != 0 {
			t.Fatalf("failed Decode consumed: got %v, want 0", n)
		}
		return
	}
	if n <= 0 || n > len(b) {
		t.Fatalf("Decode consumed: got %v, want 1..%v", n, len(b))
	}
	enc := m.Append(nil)
	if len(enc) > n+slack {
		t.Fatalf("re-encoded size: got %v, want at most %v", len(enc), n+slack)
	}
	again := fresh(m)
	n2, err := again.Decode(enc)
	if err != nil {
		t.Fatalf("re-Decode(% x): got error %v, want nil", enc, err)
	}
	if n2 != len(enc) {
		t.Fatalf("re-Decode consumed: got %v, want %v", n2, len(enc))
	}
	if got, want := activeFields(again), activeFields(m); !reflect.DeepEqual(got, want) {
		t.Fatalf("re-Decode: got %+v, want %+v", got, want)
	}
}

func FuzzOffline(f *testing.F) {
	addMessageSeeds(f, func(id byte) bool { return offlineMessage(id) != nil })
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || len(b) > maxUDPPayload {
			return
		}
		m := offlineMessage(b[0])
		if m == nil {
			return
		}
		// A pong with a bad length prefix keeps the prefix in its data.
		checkMessageStable(t, b, m, 2)
	})
}

func FuzzConnected(f *testing.F) {
	addMessageSeeds(f, func(id byte) bool { return connectedMessage(id) != nil })
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || len(b) > maxUDPPayload {
			return
		}
		m := connectedMessage(b[0])
		if m == nil {
			return
		}
		// A pong without its pong time gains 8 bytes, a connection
		// request without its security byte gains 1.
		checkMessageStable(t, b, m, 8)
	})
}

// checkFrameStable checks that a decoded frame re-encodes to exactly the
// bytes it consumed, and decodes back to itself.
func checkFrameStable(t *testing.T, fr *Frame, n int) {
	t.Helper()
	if len(fr.Payload) == 0 || len(fr.Payload) > n {
		t.Fatalf("payload: got %v bytes, want 1..%v", len(fr.Payload), n)
	}
	enc := fr.Append(nil)
	if len(enc) != n {
		t.Fatalf("re-encoded size: got %v, want %v", len(enc), n)
	}
	var again Frame
	n2, err := again.Decode(enc)
	if err != nil || n2 != n {
		t.Fatalf("re-Decode(% x): got %v, %v, want %v, nil", enc, n2, err, n)
	}
	if !reflect.DeepEqual(again, *fr) {
		t.Fatalf("re-Decode: got %+v, want %+v", again, *fr)
	}
}

func FuzzFrame(f *testing.F) {
	for _, tc := range goldenFrames() {
		f.Add(tc.frame.Append(nil))
	}
	// The largest frame, followed by another as in a datagram.
	big := (&Frame{Reliability: ReliableOrdered, Payload: make([]byte, MaxFramePayload)}).Append(nil)
	f.Add((&Frame{Payload: []byte{1}}).Append(big))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxUDPPayload {
			return
		}
		var fr Frame
		n, err := fr.Decode(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("failed Decode consumed: got %v, want 0", n)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("Decode consumed: got %v, want 1..%v", n, len(b))
		}
		checkFrameStable(t, &fr, n)
	})
}

func FuzzDatagram(f *testing.F) {
	_, _, mtu := mtuDatagram(f)
	f.Add(mtu)
	h := DatagramHeader{Flags: 0x84, Number: 7}
	var frames []Frame
	for _, tc := range goldenFrames() {
		frames = append(frames, tc.frame)
		frames[len(frames)-1].Reliability = tc.frame.Reliability.Wire()
	}
	f.Add(appendDatagram(nil, h, frames))
	f.Add(appendDatagram(nil, DatagramHeader{Flags: 0x8c, Number: MaxUint24}, frames[:1]))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxUDPPayload {
			return
		}
		h, frames, err := decodeDatagram(b)
		if err != nil {
			return
		}
		// Bounded work: every frame takes at least 4 bytes.
		if limit := (len(b) - DatagramHeaderSize) / 4; len(frames) > limit {
			t.Fatalf("frames: got %v, want at most %v", len(frames), limit)
		}
		enc := appendDatagram(nil, h, frames)
		if len(enc) != len(b) {
			t.Fatalf("re-encoded size: got %v, want %v", len(enc), len(b))
		}
		h2, frames2, err := decodeDatagram(enc)
		if err != nil {
			t.Fatalf("re-decode: got error %v, want nil", err)
		}
		if h2 != h || !reflect.DeepEqual(frames2, frames) {
			t.Fatalf("re-decode: got %+v %+v, want %+v %+v", h2, frames2, h, frames)
		}
	})
}

func FuzzACK(f *testing.F) {
	for _, a := range []Ack{
		{Ranges: []AckRange{{7, 7}}},
		{NACK: true, Ranges: []AckRange{{7, 9}}},
		{Ranges: []AckRange{{3, 3}, {0xfffffe, 1}, {9, 10}}},
		{NACK: true, Ranges: []AckRange{{MaxUint24, 0}}},
		ack100(),
		{},
	} {
		f.Add(a.Append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxUDPPayload {
			return
		}
		var a Ack
		n, err := a.Decode(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("failed Decode consumed: got %v, want 0", n)
			}
			return
		}
		if n < ackHeaderSize || n > len(b) {
			t.Fatalf("Decode consumed: got %v, want %v..%v", n, ackHeaderSize, len(b))
		}
		// Bounded work: the caps hold for what a caller will iterate.
		if len(a.Ranges) > MaxAckRecords {
			t.Fatalf("ranges: got %v, want at most %v", len(a.Ranges), MaxAckRecords)
		}
		var total uint64
		for _, r := range a.Ranges {
			total += uint64(r.Len())
		}
		if total > MaxAckNumbers {
			t.Fatalf("numbers named: got %v, want at most %v", total, MaxAckNumbers)
		}
		enc, k := a.AppendLimit(nil, 0)
		if k != len(a.Ranges) {
			t.Fatalf("ranges re-encoded: got %v, want %v", k, len(a.Ranges))
		}
		if len(enc) > n {
			t.Fatalf("re-encoded size: got %v, want at most %v", len(enc), n)
		}
		var again Ack
		n2, err := again.Decode(enc)
		if err != nil || n2 != len(enc) {
			t.Fatalf("re-Decode(% x): got %v, %v, want %v, nil", enc, n2, err, len(enc))
		}
		if again.NACK != a.NACK || !slices.Equal(again.Ranges, a.Ranges) {
			t.Fatalf("re-Decode: got %+v, want %+v", again, a)
		}
	})
}
