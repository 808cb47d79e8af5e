package proxy_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/proxy"
)

// testSeed returns the seed for a randomised test and logs it, so a
// failure replays with BASALT_PROXY_SEED=<seed>.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed, err := proxy.Seed()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d", seed)
	return seed
}

func TestSeedFromEnv(t *testing.T) {
	tests := []struct {
		env     string
		want    uint64
		wantErr bool
	}{
		{env: "1234", want: 1234},
		{env: "0x10", want: 16},
		{env: "18446744073709551615", want: 1<<64 - 1},
		{env: "-1", wantErr: true},
		{env: "seed", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(proxy.SeedEnv, tc.env)
			got, err := proxy.Seed()
			if tc.wantErr {
				if err == nil {
					t.Errorf("got %d, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v, want %d, nil", got, err, tc.want)
			}
		})
	}
}

// sample calls each RandomLoss function n times, in a fixed order.
func sample(seed uint64, n int, loss, dupRate float64, delay,
	jitter time.Duration,
) (drops, dups []bool, delays []time.Duration) {
	drop, dup, delayFn := proxy.RandomLoss(seed, loss, dupRate, delay, jitter)
	for i := range n {
		d := proxy.Direction(i % 2)
		drops = append(drops, drop(d, nil))
		dups = append(dups, dup(d, nil))
		delays = append(delays, delayFn(d, nil))
	}
	return drops, dups, delays
}

func TestRandomLossReplays(t *testing.T) {
	seed := testSeed(t)
	const (
		n      = 1000
		delay  = 10 * time.Millisecond
		jitter = 5 * time.Millisecond
	)
	d1, u1, l1 := sample(seed, n, 0.3, 0.2, delay, jitter)
	d2, u2, l2 := sample(seed, n, 0.3, 0.2, delay, jitter)
	if !slices.Equal(d1, d2) || !slices.Equal(u1, u2) || !slices.Equal(l1, l2) {
		t.Errorf("same seed %d: got different sequences, want identical", seed)
	}
	d3, _, _ := sample(seed+1, n, 0.3, 0.2, delay, jitter)
	if slices.Equal(d1, d3) {
		t.Errorf("seeds %d and %d: got identical drops, want different",
			seed, seed+1)
	}
}

func TestRandomLossRates(t *testing.T) {
	seed := testSeed(t)
	const n = 10000
	count := func(bs []bool) int {
		c := 0
		for _, b := range bs {
			if b {
				c++
			}
		}
		return c
	}
	tests := []struct {
		name          string
		loss, dupRate float64
		// Bounds sit more than eight standard deviations out, so no
		// seed fails them in practice.
		minDrop, maxDrop, minDup, maxDup int
	}{
		{"none", 0, 0, 0, 0, 0, 0},
		{"all", 1, 1, n, n, n, n},
		{"some", 0.1, 0.25, 750, 1250, 2100, 2900},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			drops, dups, _ := sample(seed, n, tc.loss, tc.dupRate, 0, 0)
			if got := count(drops); got < tc.minDrop || got > tc.maxDrop {
				t.Errorf("drops: got %d of %d, want %d..%d",
					got, n, tc.minDrop, tc.maxDrop)
			}
			if got := count(dups); got < tc.minDup || got > tc.maxDup {
				t.Errorf("dups: got %d of %d, want %d..%d",
					got, n, tc.minDup, tc.maxDup)
			}
		})
	}
}

func TestRandomLossDelayBounds(t *testing.T) {
	seed := testSeed(t)
	const n = 2000
	const ms = time.Millisecond
	tests := []struct {
		name          string
		delay, jitter time.Duration
		lo, hi        time.Duration
	}{
		{"fixed", 7 * ms, 0, 7 * ms, 7 * ms},
		{"jitter", 10 * ms, 4 * ms, 6 * ms, 14 * ms},
		{"clamped", 1 * ms, 5 * ms, 0, 6 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, delays := sample(seed, n, 0, 0, tc.delay, tc.jitter)
			for i, d := range delays {
				if d < tc.lo || d > tc.hi {
					t.Fatalf("delay %d: got %v, want %v..%v",
						i, d, tc.lo, tc.hi)
				}
			}
			if tc.jitter > 0 && slices.Min(delays) == slices.Max(delays) {
				t.Errorf("got constant delay %v, want jitter", delays[0])
			}
		})
	}
}

func TestRandomLossPanicsOnBadInput(t *testing.T) {
	tests := []struct {
		name          string
		loss, dupRate float64
		delay, jitter time.Duration
	}{
		{"loss above 1", 1.5, 0, 0, 0},
		{"negative dup", 0, -0.1, 0, 0},
		{"NaN loss", math.NaN(), 0, 0, 0},
		{"negative delay", 0, 0, -time.Second, 0},
		{"negative jitter", 0, 0, 0, -time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("got no panic, want one")
				}
			}()
			proxy.RandomLoss(1, tc.loss, tc.dupRate, tc.delay, tc.jitter)
		})
	}
}

// TestRandomLossEndToEnd runs seeded loss, duplication and jittered delay
// in both directions and checks that every datagram is accounted for.
func TestRandomLossEndToEnd(t *testing.T) {
	seed := testSeed(t)
	drop, dup, delay := proxy.RandomLoss(seed, 0.2, 0.1,
		5*time.Millisecond, 5*time.Millisecond)
	s := newEchoServer(t, "127.0.0.1:0")
	p := newProxy(t, s, proxy.Opts{
		DropPacket:      drop,
		DuplicatePacket: dup,
		DelayPacket:     delay,
	})
	c := dial(t, p)

	const n = 200
	for i := range n {
		send(t, c, []byte{byte(i)})
		if i%10 == 9 {
			// Keep socket buffers shallow: the proxy reads these ten
			// before more are sent.
			eventually(func() bool { return p.Stats(proxy.Incoming).Received == uint64(i+1) })
		}
	}

	// Every datagram the proxy read was dropped or forwarded (twice if
	// duplicated), the server echoed what arrived, and the client got
	// what the proxy forwarded back.
	var got [][]byte
	settled := func() bool {
		in, out := p.Stats(proxy.Incoming), p.Stats(proxy.Outgoing)
		got = append(got, recvExtra(c)...)
		return in.Received == n &&
			in.Forwarded == in.Received-in.Dropped+in.Duplicated &&
			uint64(s.received()) == in.Forwarded &&
			out.Received == in.Forwarded &&
			out.Forwarded == out.Received-out.Dropped+out.Duplicated &&
			uint64(len(got)) == out.Forwarded
	}
	eventually(settled)
	if !settled() {
		t.Fatalf("unsettled: incoming %+v, outgoing %+v, server %d, client %d",
			p.Stats(proxy.Incoming), p.Stats(proxy.Outgoing), s.received(),
			len(got))
	}
	in, out := p.Stats(proxy.Incoming), p.Stats(proxy.Outgoing)
	t.Logf("incoming %+v", in)
	t.Logf("outgoing %+v", out)
	for _, st := range []proxy.Stats{in, out} {
		if st.Dropped == 0 || st.Dropped == st.Received {
			t.Errorf("Dropped: got %d of %d, want some but not all",
				st.Dropped, st.Received)
		}
		if st.Delayed == 0 {
			t.Errorf("Delayed: got 0 of %d, want some", st.Received)
		}
	}
	inversions := 0
	for i := 1; i < len(got); i++ {
		if got[i][0] < got[i-1][0] {
			inversions++
		}
	}
	t.Logf("client saw %d datagrams, %d out of order", len(got), inversions)
}
