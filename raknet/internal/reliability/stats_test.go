package reliability

import (
	"testing"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// NACKs received are counted once each when acted on; ACKs and NACKs
// dropped as bad are not.
func TestNacksReceivedCounted(t *testing.T) {
	a := newTestPeer(t, Config{})
	for i := range 3 {
		mustSend(t, a.sinkLayer, t0, msg(i, 100), wire.Reliable, 0)
		if got := len(drain(a.sinkLayer, t0)); got != 1 {
			t.Fatalf("message %d: sent %d datagrams, want 1", i, got)
		}
	}
	mustHandle(t, a.sinkLayer, t0.Add(ms(10)), ackDatagram(false, wire.AckRange{Start: 0, End: 0}))
	mustHandle(t, a.sinkLayer, t0.Add(ms(11)), ackDatagram(true, wire.AckRange{Start: 1, End: 1}))
	mustHandle(t, a.sinkLayer, t0.Add(ms(12)), ackDatagram(true, wire.AckRange{Start: 2, End: 2}))
	// A NACK of numbers never sent is dropped whole, uncounted.
	if err := a.handleT(t0.Add(ms(13)), ackDatagram(true, wire.AckRange{Start: 9000, End: 9001})); err == nil {
		t.Fatal("NACK of datagrams never sent: got no error")
	}
	st := a.Stats()
	if st.NacksReceived != 2 {
		t.Errorf("NacksReceived: got %d, want 2", st.NacksReceived)
	}
	if st.DatagramsLost != 2 {
		t.Errorf("DatagramsLost: got %d, want 2", st.DatagramsLost)
	}
}

// DataReceived and DataSpan tell how many of the peer's data datagrams
// are missing: a gap counts until it is filled, a duplicate never.
func TestDataReceivedSpan(t *testing.T) {
	b := newTestPeer(t, Config{})
	check := func(what string, received, span uint64) {
		t.Helper()
		if st := b.Stats(); st.DataReceived != received || st.DataSpan != span {
			t.Errorf("%s: got %d received of %d, want %d of %d", what, st.DataReceived, st.DataSpan, received, span)
		}
	}
	check("before any", 0, 0)
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	mustHandle(t, b.sinkLayer, t0, dataDatagram(1, reliableFrame(1, []byte{1})))
	mustHandle(t, b.sinkLayer, t0, dataDatagram(4, reliableFrame(2, []byte{1})))
	check("with a gap", 3, 5)
	mustHandle(t, b.sinkLayer, t0, dataDatagram(1, reliableFrame(1, []byte{1})))
	check("after a duplicate", 3, 5)
	mustHandle(t, b.sinkLayer, t0, dataDatagram(2, reliableFrame(3, []byte{1})))
	check("a gap partly filled", 4, 5)
	// ACKs and NACKs are no data.
	_ = b.handleT(t0, ackDatagram(false, wire.AckRange{Start: 0, End: 0}))
	check("after an ACK", 4, 5)
}
