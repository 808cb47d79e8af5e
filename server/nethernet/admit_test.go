package nethernet

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/stun/v3"
)

// testAdmission is admission with small limits: 4 negotiations in all,
// 2 per source (8 per prefix), 3 offers per source per second.
func testAdmission(trusted ...string) (*admission, *counters) {
	var st counters
	c := admitConfig{max: 4, answering: 1, perSource: 2, ratePerSource: 3, proofWindow: time.Second,
		timeout: 5 * time.Second, answerWait: time.Second, maxTrackedAddrs: 64}
	if len(trusted) > 0 {
		c.trusted = func(a netip.Addr) bool {
			for _, t := range trusted {
				if a == netip.MustParseAddr(t) {
					return true
				}
			}
			return false
		}
	}
	return newAdmission(c, &st), &st
}

// answerSDP is the part of an answer admission reads.
func answerSDP(ufrag, pwd string) string {
	return "v=0\r\na=ice-ufrag:" + ufrag + "\r\na=ice-pwd:" + pwd + "\r\n"
}

// Each rule of admission, from a fixed start.
func TestAdmissionRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a4 := netip.MustParseAddr("192.0.2.1")
	type step struct {
		addr string
		want refusal
	}
	for _, tc := range []struct {
		name    string
		trusted []string
		steps   []step
	}{
		{"per source", nil, []step{{"192.0.2.1", refusedNone}, {"192.0.2.1", refusedNone}, {"192.0.2.1", refusedSourceBusy}, {"192.0.2.2", refusedNone}}},
		{"global cap with nothing to evict", nil, []step{{"192.0.2.1", refusedNone}, {"198.51.100.1", refusedNone}, {"203.0.113.1", refusedNone}, {"10.0.0.1", refusedNone}, {"10.1.0.1", refusedBusy}}},
		{"IPv6 /64 is one source", nil, []step{{"2001:db8::1", refusedNone}, {"2001:db8::2", refusedNone}, {"2001:db8::ffff:1", refusedSourceBusy}, {"2001:db8:0:1::1", refusedNone}}},
		{"trusted proxy has no source cap", []string{"192.0.2.1"}, []step{{"192.0.2.1", refusedNone}, {"192.0.2.1", refusedNone}, {"192.0.2.1", refusedNone}, {"192.0.2.1", refusedNone}, {"192.0.2.1", refusedBusy}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := testAdmission(tc.trusted...)
			for i, s := range tc.steps {
				tk, why := a.admit(netip.MustParseAddr(s.addr), t0)
				if why != s.want {
					t.Fatalf("offer %d from %s: %v, want %v", i, s.addr, why, s.want)
				}
				if (tk != nil) != (s.want == refusedNone) {
					t.Fatalf("offer %d: ticket %v with refusal %v", i, tk, why)
				}
			}
		})
	}

	// The per-prefix cap: four sources of one /24 fill it (2 each, 8 in
	// all, over the global 4 here, so raise it).
	t.Run("per prefix", func(t *testing.T) {
		a, _ := testAdmission()
		a.conf.max = 100
		for i := range 4 {
			for range 2 {
				if _, why := a.admit(netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}), t0); why != refusedNone {
					t.Fatalf("source %d: %v", i, why)
				}
			}
		}
		if _, why := a.admit(netip.MustParseAddr("192.0.2.99"), t0); why != refusedSourceBusy {
			t.Errorf("a fifth source of a full /24: %v, want source_busy", why)
		}
		if _, why := a.admit(netip.MustParseAddr("192.0.3.1"), t0); why != refusedNone {
			t.Errorf("the next /24: %v", why)
		}
	})

	t.Run("rate per source and prefix", func(t *testing.T) {
		a, st := testAdmission()
		for i := range 3 {
			if !a.allowRate(a4, t0.Add(time.Duration(i)*time.Millisecond)) {
				t.Fatalf("offer %d refused", i)
			}
		}
		if a.allowRate(a4, t0.Add(10*time.Millisecond)) {
			t.Error("a fourth offer in a second allowed")
		}
		if !a.allowRate(a4, t0.Add(time.Second)) {
			t.Error("the next second's offer refused")
		}
		// Twelve a second per /24: four sources use it up.
		a2, _ := testAdmission()
		n := 0
		for i := range 6 {
			for range 3 {
				if a2.allowRate(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), t0) {
					n++
				}
			}
		}
		if n != 3*prefixFactor {
			t.Errorf("%d offers of one /24 in a second, want %d", n, 3*prefixFactor)
		}
		if st.rateLimited.Load() != 1 {
			t.Errorf("rate_limited = %d, want 1", st.rateLimited.Load())
		}
		tr, _ := testAdmission("192.0.2.1")
		for i := range 100 {
			if !tr.allowRate(a4, t0) {
				t.Fatalf("trusted proxy's offer %d rate-limited", i)
			}
		}
	})
}

// A slot frees the moment its negotiation ends, in success or failure:
// a source at its cap gets a new one at once.
func TestAdmissionReleaseFreesAtOnce(t *testing.T) {
	a, _ := testAdmission()
	t0 := time.Unix(1000, 0)
	src := netip.MustParseAddr("192.0.2.1")
	var held []*ticket
	for range 2 {
		tk, _ := a.admit(src, t0)
		held = append(held, tk)
	}
	if _, why := a.admit(src, t0); why != refusedSourceBusy {
		t.Fatalf("third: %v", why)
	}
	// One fails before its answer, one completes.
	held[0].bind(connKey{"1", 1})
	a.failed(connKey{"1", 1})
	held[1].bind(connKey{"1", 2})
	a.answered(connKey{"1", 2}, answerSDP("u2", "p2"))
	_, done := a.connContext(context.Background(), connKey{"1", 2})
	done()
	if s, p, all := a.heldBy(src); s != 0 || p != 0 || all != 0 {
		t.Fatalf("held %d/%d/%d after both ended, want none", s, p, all)
	}
	for range 2 {
		if _, why := a.admit(src, t0); why != refusedNone {
			t.Fatalf("after release: %v", why)
		}
	}
	held[1].release() // twice is harmless
	if _, _, all := a.heldBy(src); all != 2 {
		t.Errorf("held %d after a second release, want 2", all)
	}
}

// stunRequest returns a binding request with USERNAME user, signed with
// pwd.
func stunRequest(t testing.TB, user, pwd string) []byte {
	t.Helper()
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.NewUsername(user),
		stun.NewShortTermIntegrity(pwd), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// An answered negotiation whose client sends no valid ICE check within
// the proof window is torn down and its slot freed; one that does keeps
// its slot for the rest of its time. A check signed with the wrong
// password proves nothing.
func TestAdmissionProof(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, st := testAdmission()
		src := netip.MustParseAddr("192.0.2.1")
		pc := &proofConn{a: a}
		start := func(id uint64, ufrag string) context.Context {
			tk, why := a.admit(src, time.Now())
			if tk == nil {
				t.Fatalf("admit: %v", why)
			}
			key := connKey{"9", id}
			tk.bind(key)
			a.answered(key, answerSDP(ufrag, "pwd-"+ufrag))
			ctx, done := a.connContext(context.Background(), key)
			go func() { <-ctx.Done(); done() }()
			return ctx
		}
		silent := start(1, "silent")
		honest := start(2, "honest")
		pc.observe(stunRequest(t, "silent:x", "wrong"), nil) // a forged check
		pc.observe(stunRequest(t, "honest:x", "pwd-honest"), nil)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if silent.Err() == nil {
			t.Error("a negotiation with no valid ICE check outlived the proof window")
		}
		if honest.Err() != nil {
			t.Error("a proven negotiation was torn down")
		}
		if st.unproven.Load() != 1 || st.proven.Load() != 1 {
			t.Errorf("unproven %d proven %d, want 1 and 1", st.unproven.Load(), st.proven.Load())
		}
		if s, _, _ := a.heldBy(src); s != 1 {
			t.Errorf("%d slots held, want the proven one's", s)
		}
		time.Sleep(5 * time.Second) // past the negotiation's whole time
		synctest.Wait()
		if honest.Err() == nil {
			t.Error("a proven negotiation outlived its time")
		}
		if s, _, all := a.heldBy(src); s != 0 || all != 0 {
			t.Errorf("%d/%d held at the end", s, all)
		}
	})
}

// With the cap full, the oldest answered negotiation whose client has
// not proved its address gives up its place to a new offer; proven ones
// and ones still being answered never do.
func TestAdmissionEvictsOldestUnproven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, st := testAdmission()
		pc := &proofConn{a: a}
		var ctxs []context.Context
		for i := range 4 {
			tk, _ := a.admit(netip.AddrFrom4([4]byte{10, 0, byte(i), 1}), time.Now())
			key := connKey{"9", uint64(i)}
			tk.bind(key)
			if i == 3 {
				continue // still being answered
			}
			ufrag := fmt.Sprint("u", i)
			a.answered(key, answerSDP(ufrag, "p"))
			ctx, done := a.connContext(context.Background(), key)
			defer done()
			ctxs = append(ctxs, ctx)
			if i == 0 {
				pc.observe(stunRequest(t, ufrag+":c", "p"), nil)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, why := a.admit(netip.MustParseAddr("192.0.2.50"), time.Now()); why != refusedNone {
			t.Fatalf("a new offer with the cap full of unproven peers: %v", why)
		}
		synctest.Wait()
		if ctxs[0].Err() != nil || ctxs[1].Err() == nil || ctxs[2].Err() != nil {
			t.Errorf("torn down: proven %v, oldest unproven %v, newer unproven %v; want only the oldest unproven",
				ctxs[0].Err(), ctxs[1].Err(), ctxs[2].Err())
		}
		if _, why := a.admit(netip.MustParseAddr("192.0.2.51"), time.Now()); why != refusedNone {
			t.Fatalf("second new offer: %v", why)
		}
		if _, why := a.admit(netip.MustParseAddr("192.0.2.52"), time.Now()); why != refusedBusy {
			t.Fatalf("with only proven and unanswered left: %v, want busy", why)
		}
		if st.unproven.Load() != 2 {
			t.Errorf("unproven = %d, want 2", st.unproven.Load())
		}
	})
}

// Offers of one source wait for an answering turn at most
// waitingPerSource at a time; a turn comes back when an offer is answered.
func TestAdmissionTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := testAdmission()
		a.conf.max, a.conf.perSource = 100, 100
		first, _ := a.admit(netip.MustParseAddr("192.0.2.1"), time.Now())
		first.bind(connKey{"1", 1})
		if !first.wait(context.Background()) {
			t.Fatal("the first offer got no turn")
		}
		got := make(chan bool, waitingPerSource+1)
		for i := range waitingPerSource + 1 {
			tk, _ := a.admit(netip.MustParseAddr("192.0.2.2"), time.Now())
			tk.bind(connKey{"2", uint64(i)})
			go func() { got <- tk.wait(context.Background()) }()
		}
		synctest.Wait()
		select {
		case ok := <-got:
			if ok {
				t.Fatal("a turn given while the one turn is held")
			}
		default:
			t.Fatal("a source's offer past waitingPerSource was not refused at once")
		}
		a.answered(connKey{"1", 1}, answerSDP("a", "b"))
		synctest.Wait()
		if ok := <-got; !ok {
			t.Error("the turn was not given on after an answer")
		}
		time.Sleep(2 * time.Second) // the others' wait runs out
		synctest.Wait()
		for range waitingPerSource - 1 {
			if ok := <-got; ok {
				t.Error("a turn given while held")
			}
		}
	})
}

func TestSTUNBindingUfrag(t *testing.T) {
	valid := stunRequest(t, "ours:theirs", "pw")
	if u, ok := stunBindingUfrag(valid); !ok || string(u) != "ours" {
		t.Fatalf("ufrag = %q, %v", u, ok)
	}
	if !stunIntegrityValid(valid, "pw") || stunIntegrityValid(valid, "other") || stunIntegrityValid(valid, "") {
		t.Error("integrity check wrong")
	}
	for i := range len(valid) {
		if _, ok := stunBindingUfrag(valid[:i]); ok {
			t.Errorf("a %d-byte prefix parsed", i)
		}
	}
	resp, _ := stun.Build(stun.TransactionID, stun.BindingSuccess, stun.NewUsername("ours:theirs"))
	if _, ok := stunBindingUfrag(resp.Raw); ok {
		t.Error("a binding response taken for a request")
	}
	noColon, _ := stun.Build(stun.TransactionID, stun.BindingRequest, stun.NewUsername("ours"))
	if _, ok := stunBindingUfrag(noColon.Raw); ok {
		t.Error("a USERNAME without a colon parsed")
	}
}

func BenchmarkSTUNObserve(b *testing.B) {
	a, _ := testAdmission()
	pc := &proofConn{a: a}
	m := stunRequest(b, "ufrag:peer", "pw")
	b.ReportAllocs()
	for b.Loop() {
		pc.observe(m, nil)
	}
}

// Hostile datagrams on the ICE socket: parsing never panics, and a
// USERNAME it returns lies within the datagram.
func FuzzSTUNBindingUfrag(f *testing.F) {
	m, _ := stun.Build(stun.TransactionID, stun.BindingRequest, stun.NewUsername("a:b"),
		stun.NewShortTermIntegrity("p"), stun.Fingerprint)
	f.Add(m.Raw)
	f.Add([]byte{0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42})
	f.Fuzz(func(t *testing.T, b []byte) {
		if u, ok := stunBindingUfrag(b); ok && (len(u) == 0 || len(u) > len(b)) {
			t.Fatalf("ufrag %q of a %d-byte datagram", u, len(b))
		}
		_ = stunIntegrityValid(b, "p")
	})
}

// A peer connection with no admitted negotiation behind it (its request
// gave up before the answer came) is torn down at once.
func TestAdmissionUnknownPeerTornDown(t *testing.T) {
	a, st := testAdmission()
	ctx, done := a.connContext(context.Background(), connKey{"1", 99})
	defer done()
	if ctx.Err() == nil {
		t.Error("a peer of no admitted negotiation was let start")
	}
	if _, _, all := a.heldBy(netip.MustParseAddr("192.0.2.1")); all != 0 || st.inFlight.Load() != 0 {
		t.Errorf("%d held", all)
	}
}
