package reliability

import (
	"testing"
	"time"
)

// t0 is the fixed start time of the state-machine tests.
var t0 = time.Unix(1_700_000_000, 0)

// ccEvent is one input to a congestion controller in TestCongestion.
type ccEvent struct {
	op     string // "sent", "acked", "lost" or "timeout"
	size   int
	sentAt time.Duration // offset from t0 of the datagram's send time
	now    time.Duration // offset from t0 of the event
}

func TestCongestion(t *testing.T) {
	const mtu = 1000
	ms := time.Millisecond
	acks := func(n int, sentAt time.Duration) []ccEvent {
		var ev []ccEvent
		for range n {
			ev = append(ev, ccEvent{op: "sent", size: mtu}, ccEvent{op: "acked", size: mtu, sentAt: sentAt})
		}
		return ev
	}
	cases := []struct {
		name       string
		ssthresh   int // initial ssthresh if non-zero
		cwnd       int // initial cwnd if non-zero
		events     []ccEvent
		wantCwnd   int
		wantThresh int
		wantFlight int
		recovering bool
	}{
		{name: "initial", wantCwnd: initialWindow * mtu, wantThresh: MaxInFlight * mtu},
		{name: "in flight", events: []ccEvent{{op: "sent", size: mtu}, {op: "sent", size: 500}}, wantCwnd: 32000, wantThresh: MaxInFlight * mtu, wantFlight: 1500},
		// Slow start: every acked byte adds a byte, doubling per RTT.
		{name: "slow start", events: acks(32, 0), wantCwnd: 64000, wantThresh: MaxInFlight * mtu},
		{name: "slow start capped", events: acks(3000, 0), wantCwnd: MaxInFlight * mtu, wantThresh: MaxInFlight * mtu},
		// Avoidance: mtu·size/cwnd per ACK, about one datagram per window.
		{name: "avoidance one ack", ssthresh: 32000, events: acks(1, 0), wantCwnd: 32031, wantThresh: 32000},
		// 9 ACKs add 31 (cwnd below 32259), 23 add 30: about one datagram.
		{name: "avoidance one window", ssthresh: 32000, events: acks(32, 0), wantCwnd: 32000 + 9*31 + 23*30, wantThresh: 32000},
		{name: "avoidance small datagram", ssthresh: 32000, events: []ccEvent{{op: "sent", size: 10}, {op: "acked", size: 10}}, wantCwnd: 32001, wantThresh: 32000},
		// Loss: ×0.7 and ssthresh follows.
		{name: "loss", events: []ccEvent{{op: "sent", size: mtu}, {op: "lost", size: mtu, now: 10 * ms}}, wantCwnd: 22400, wantThresh: 22400, recovering: true},
		{name: "loss once per recovery", events: []ccEvent{
			{op: "sent", size: mtu}, {op: "sent", size: mtu}, {op: "sent", size: mtu},
			{op: "lost", size: mtu, sentAt: 0, now: 10 * ms},
			{op: "lost", size: mtu, sentAt: 5 * ms, now: 20 * ms},  // sent before the reduction: same event
			{op: "lost", size: mtu, sentAt: 10 * ms, now: 30 * ms}, // sent at the reduction: same event
		}, wantCwnd: 22400, wantThresh: 22400, recovering: true},
		{name: "loss after recovery", events: []ccEvent{
			{op: "sent", size: mtu}, {op: "sent", size: mtu},
			{op: "lost", size: mtu, sentAt: 0, now: 10 * ms},
			{op: "lost", size: mtu, sentAt: 15 * ms, now: 30 * ms},
		}, wantCwnd: 15680, wantThresh: 15680, recovering: true},
		{name: "no growth in recovery", events: []ccEvent{
			{op: "sent", size: mtu}, {op: "sent", size: mtu},
			{op: "lost", size: mtu, sentAt: 0, now: 10 * ms},
			{op: "acked", size: mtu, sentAt: 5 * ms},
		}, wantCwnd: 22400, wantThresh: 22400, recovering: true},
		{name: "recovery ends", events: []ccEvent{
			{op: "sent", size: mtu}, {op: "sent", size: mtu},
			{op: "lost", size: mtu, sentAt: 0, now: 10 * ms},
			{op: "acked", size: mtu, sentAt: 11 * ms},
		}, wantCwnd: 22400 + 1000*1000/22400, wantThresh: 22400},
		{name: "loss floor", cwnd: 9000, events: []ccEvent{{op: "sent", size: mtu}, {op: "lost", size: mtu, now: ms}}, wantCwnd: minWindow * mtu, wantThresh: minWindow * mtu, recovering: true},
		// Timeout: halved, at least the minimum.
		{name: "timeout", events: []ccEvent{{op: "timeout", now: ms}}, wantCwnd: 16000, wantThresh: 16000, recovering: true},
		{name: "timeouts floor", events: []ccEvent{{op: "timeout", now: ms}, {op: "timeout", now: 2 * ms}, {op: "timeout", now: 3 * ms}}, wantCwnd: minWindow * mtu, wantThresh: minWindow * mtu, recovering: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCongestion(mtu, MaxInFlight)
			if tc.name != "initial" {
				// The table's numbers start from a 32-datagram window.
				c.cwnd = 32 * mtu
			}
			if tc.ssthresh != 0 {
				c.ssthresh = tc.ssthresh
			}
			if tc.cwnd != 0 {
				c.cwnd = tc.cwnd
			}
			for _, e := range tc.events {
				switch e.op {
				case "sent":
					c.onSent(e.size)
				case "acked":
					c.onAcked(e.size, t0.Add(e.sentAt))
				case "lost":
					c.onLost(e.size, t0.Add(e.sentAt), t0.Add(e.now))
				case "timeout":
					c.onTimeout(t0.Add(e.now))
				}
			}
			if c.cwnd != tc.wantCwnd {
				t.Errorf("cwnd: got %v, want %v", c.cwnd, tc.wantCwnd)
			}
			if c.ssthresh != tc.wantThresh {
				t.Errorf("ssthresh: got %v, want %v", c.ssthresh, tc.wantThresh)
			}
			if c.inFlight != tc.wantFlight {
				t.Errorf("inFlight: got %v, want %v", c.inFlight, tc.wantFlight)
			}
			if c.recovering != tc.recovering {
				t.Errorf("recovering: got %v, want %v", c.recovering, tc.recovering)
			}
		})
	}
}

func TestCongestionCanSend(t *testing.T) {
	cases := []struct {
		name     string
		cwnd     int
		inFlight int
		size     int
		want     bool
	}{
		{"empty window always sends", 1000, 0, 5000, true},
		{"fits", 10000, 9000, 1000, true},
		{"does not fit", 10000, 9001, 1000, false},
		{"full", 10000, 10000, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := congestion{cwnd: tc.cwnd, inFlight: tc.inFlight}
			if got := c.canSend(tc.size); got != tc.want {
				t.Errorf("canSend(%d): got %v, want %v", tc.size, got, tc.want)
			}
		})
	}
}
