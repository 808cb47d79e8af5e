package session

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recordingHandler wraps a Handler and counts its calls.
type recordingHandler struct {
	Handler
	opens, closes atomic.Int32
	closeErr      atomic.Pointer[error]
}

func (h *recordingHandler) HandleOpen(s *Session) error {
	h.opens.Add(1)
	return h.Handler.HandleOpen(s)
}

func (h *recordingHandler) HandleClose(s *Session, err error) {
	h.closes.Add(1)
	h.closeErr.Store(&err)
	h.Handler.HandleClose(s, err)
}

// funcHandler handles packets with a function.
type funcHandler struct {
	NopHandler
	packet func(s *Session, p Packet) error
}

func (h funcHandler) HandlePacket(s *Session, p Packet) error { return h.packet(s, p) }

// echo writes every packet back and flushes.
var echo = funcHandler{packet: func(s *Session, p Packet) error {
	if err := s.WritePacket(p.ID, p.Payload); err != nil {
		return err
	}
	return s.Flush()
}}

// start runs a session over a new fake conn and returns both and a channel
// that yields Run's result.
func start(t *testing.T, ctx context.Context, cfg Config) (*Session, *fakeConn, <-chan error) {
	t.Helper()
	c := newFakeConn()
	s := New(c, cfg)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return s, c, done
}

// wait returns Run's result, failing after 5 s.
func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s")
		return nil
	}
}

func TestGateFlow(t *testing.T) {
	defer checkGoroutines(t)()
	h := &recordingHandler{Handler: GateHandler{Message: "Bye {player}, come back {player}!"}}
	s, c, done := start(t, context.Background(), Config{Handler: h})

	c.send(unhex(t, "fe 06 c1 01 00 00 08 91")) // RequestNetworkSettings(2193)
	if got, want := c.next(t), unhex(t, "fe 0c 8f 01 00 02 00 00 00 00 00 00 00 00"); !bytes.Equal(got, want) {
		t.Fatalf("NetworkSettings: got % x, want % x", got, want)
	}
	// Ignored packets change nothing.
	c.send(clientBatch(t, plain, Packet{ID: IDClientCacheStatus, Payload: []byte{0}}, Packet{ID: 0x3fe}))

	login := clientBatch(t, deflated, Packet{ID: IDLogin, Payload: steveLogin(t)})
	if login[1] != 0x00 {
		t.Fatalf("login batch: got compression id %#02x, want 0x00", login[1])
	}
	c.send(login)
	b := c.next(t)
	pks := clientDecode(t, b, true)
	if len(pks) != 1 || pks[0].ID != IDDisconnect {
		t.Fatalf("got %+v, want one Disconnect", pks)
	}
	var dc disconnect
	if _, err := dc.Decode(pks[0].Payload); err != nil {
		t.Fatalf("decode Disconnect: %v", err)
	}
	want := disconnect{Reason: DisconnectReasonKicked, Message: "Bye Steve, come back Steve!"}
	if dc != want {
		t.Errorf("got %+v, want %+v", dc, want)
	}
	c.waitClosed(t)
	if err := wait(t, done); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
	c.noMoreWrites(t)
	id, ok := s.Identity()
	if !ok || id.DisplayName != "Steve" || id.XUID != "2535400000000001" || id.Protocol != CurrentProtocol {
		t.Errorf("Identity: got %+v, %v; want Steve", id, ok)
	}
	if o, cl := h.opens.Load(), h.closes.Load(); o != 1 || cl != 1 {
		t.Errorf("got %d opens and %d closes, want 1 and 1", o, cl)
	}
}

// TestGateFlowDefaultMessage checks the zero Config runs the gate with its
// default message, compressing a Disconnect over the threshold.
func TestGateFlowDefaultMessage(t *testing.T) {
	defer checkGoroutines(t)()
	_, c, done := start(t, context.Background(), Config{})
	c.send(clientBatch(t, preSettings, Packet{ID: IDRequestNetworkSettings, Payload: []byte{0, 0, 0x08, 0x91}}))
	c.next(t)
	c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: steveLogin(t)}))
	var dc disconnect
	if _, err := dc.Decode(clientDecode(t, c.next(t), true)[0].Payload); err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(DefaultGateMessage, "{player}", "Steve"); dc.Message != want {
		t.Errorf("got %q, want %q", dc.Message, want)
	}
	if err := wait(t, done); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

func TestGateProtocolMismatch(t *testing.T) {
	defer checkGoroutines(t)()
	tests := []struct {
		name     string
		accepted []int32
		protocol string
		want     string
	}{
		{"older client", nil, "00 00 08 79", "fe 05 02 00 00 00 01"},
		{"newer client", nil, "00 00 08 92", "fe 05 02 00 00 00 02"},
		{"between accepted", []int32{2169, 2193}, "00 00 08 80", "fe 05 02 00 00 00 01"},
		{"older than all accepted", []int32{2169, 2193}, "00 00 03 e8", "fe 05 02 00 00 00 01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c, done := start(t, context.Background(), Config{Handler: GateHandler{AcceptedProtocols: tc.accepted}})
			c.send(append(unhex(t, "fe 06 c1 01"), unhex(t, tc.protocol)...))
			if got, want := c.next(t), unhex(t, tc.want); !bytes.Equal(got, want) {
				t.Errorf("got % x, want % x", got, want)
			}
			c.waitClosed(t)
			if err := wait(t, done); err != nil {
				t.Errorf("Run: got %v, want nil", err)
			}
		})
	}
}

func TestGateAcceptsListedProtocol(t *testing.T) {
	defer checkGoroutines(t)()
	s, c, done := start(t, context.Background(), Config{Handler: GateHandler{
		AcceptedProtocols: []int32{2169, CurrentProtocol}, CompressionThreshold: 1}})
	c.send(unhex(t, "fe 06 c1 01 00 00 08 79"))
	if got, want := c.next(t), unhex(t, "fe 0c 8f 01 01 00 00 00 00 00 00 00 00 00"); !bytes.Equal(got, want) {
		t.Errorf("got % x, want % x", got, want)
	}
	s.Close()
	if err := wait(t, done); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

func TestGateProtocolErrors(t *testing.T) {
	defer checkGoroutines(t)()
	rns := unhex(t, "fe 06 c1 01 00 00 08 91")
	tests := []struct {
		name    string
		batches [][]byte
		want    string
	}{
		{"login before network settings",
			[][]byte{clientBatch(t, preSettings, Packet{ID: IDLogin, Payload: steveLogin(t)})},
			"login: before network settings"},
		{"network settings twice",
			[][]byte{rns, clientBatch(t, plain, Packet{ID: IDRequestNetworkSettings, Payload: []byte{0, 0, 8, 0x91}})},
			"sent twice"},
		{"short request", [][]byte{unhex(t, "fe 03 c1 01 00")}, "unexpected EOF"},
		{"uncompressed batch after settings", [][]byte{rns, rns}, "decode batch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c, done := start(t, context.Background(), Config{})
			for _, b := range tc.batches {
				c.send(b)
			}
			err := wait(t, done)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: got %v, want error containing %q", err, tc.want)
			}
			c.waitClosed(t)
		})
	}
}

func TestGateInvalidLogin(t *testing.T) {
	defer checkGoroutines(t)()
	_, c, done := start(t, context.Background(), Config{})
	c.send(unhex(t, "fe 06 c1 01 00 00 08 91"))
	c.next(t)
	c.send(clientBatch(t, deflated, Packet{ID: IDLogin, Payload: loginPayload(CurrentProtocol, "{}", "")}))
	var dc disconnect
	if _, err := dc.Decode(clientDecode(t, c.next(t), true)[0].Payload); err != nil {
		t.Fatal(err)
	}
	if dc.Reason != DisconnectReasonInvalidPlayer {
		t.Errorf("got reason %v, want %v", dc.Reason, DisconnectReasonInvalidPlayer)
	}
	// The session was closed on purpose: Run reports no error.
	if err := wait(t, done); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

func TestHandlerPanicEndsOnlyItsSession(t *testing.T) {
	defer checkGoroutines(t)()
	boom := funcHandler{packet: func(*Session, Packet) error { panic("boom") }}
	hb := &recordingHandler{Handler: boom}
	_, bad, badDone := start(t, context.Background(), Config{Handler: hb})
	_, good, goodDone := start(t, context.Background(), Config{Handler: echo})

	bad.send(clientBatch(t, preSettings, Packet{ID: 0x42}))
	err := wait(t, badDone)
	if !errors.Is(err, ErrHandlerPanic) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Run: got %v, want %v mentioning boom", err, ErrHandlerPanic)
	}
	bad.waitClosed(t)
	if e := hb.closeErr.Load(); hb.closes.Load() != 1 || e == nil || !errors.Is(*e, ErrHandlerPanic) {
		t.Errorf("HandleClose: got %d calls, want 1 with %v", hb.closes.Load(), ErrHandlerPanic)
	}

	good.send(clientBatch(t, preSettings, Packet{ID: 0x43, Payload: []byte("still here")}))
	pks := clientDecode(t, good.next(t), false)
	if len(pks) != 1 || string(pks[0].Payload) != "still here" {
		t.Errorf("echo: got %+v, want the packet back", pks)
	}
	good.Close()
	if err := wait(t, goodDone); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Run after peer close: got %v, want %v", err, net.ErrClosed)
	}
}

func TestSessionEndings(t *testing.T) {
	defer checkGoroutines(t)()
	errOpen := errors.New("no thanks")
	errPacket := errors.New("bad packet")
	cause := errors.New("shutting down")
	tests := []struct {
		name    string
		handler Handler
		act     func(s *Session, c *fakeConn, cancel context.CancelCauseFunc)
		want    error  // errors.Is target; nil means Run returns nil
		wantMsg string // substring, when want is not enough
	}{
		{"Close", NopHandler{}, func(s *Session, _ *fakeConn, _ context.CancelCauseFunc) { s.Close() }, nil, ""},
		{"Disconnect", NopHandler{}, func(s *Session, _ *fakeConn, _ context.CancelCauseFunc) { s.Disconnect("bye") }, nil, ""},
		{"context cancelled", NopHandler{}, func(_ *Session, _ *fakeConn, cancel context.CancelCauseFunc) { cancel(cause) }, cause, ""},
		{"peer closed", NopHandler{}, func(_ *Session, c *fakeConn, _ context.CancelCauseFunc) { c.Close() }, net.ErrClosed, "read batch"},
		{"open error", openErrHandler{err: errOpen}, func(*Session, *fakeConn, context.CancelCauseFunc) {}, errOpen, "handle open"},
		{"open panic", openPanicHandler{}, func(*Session, *fakeConn, context.CancelCauseFunc) {}, ErrHandlerPanic, "handle open"},
		{"packet error", funcHandler{packet: func(*Session, Packet) error { return errPacket }},
			func(_ *Session, c *fakeConn, _ context.CancelCauseFunc) {
				c.send(clientBatch(t, preSettings, Packet{ID: 7}))
			}, errPacket, "handle packet 0x7"},
		{"bad batch", NopHandler{}, func(_ *Session, c *fakeConn, _ context.CancelCauseFunc) {
			c.send([]byte{0xfe, 0x02, 0x01, 0x00, 0x00})
		}, nil, "empty"},
		{"close panics", closePanicHandler{}, func(s *Session, _ *fakeConn, _ context.CancelCauseFunc) { s.Close() }, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			h := &recordingHandler{Handler: tc.handler}
			s, c, done := start(t, ctx, Config{Handler: h})
			tc.act(s, c, cancel)
			err := wait(t, done)
			switch {
			case tc.want == nil && tc.wantMsg == "" && err != nil:
				t.Errorf("Run: got %v, want nil", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("Run: got %v, want %v", err, tc.want)
			case tc.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tc.wantMsg)):
				t.Errorf("Run: got %v, want error containing %q", err, tc.wantMsg)
			}
			c.waitClosed(t)
			if got := h.closes.Load(); got != 1 {
				t.Errorf("HandleClose: got %d calls, want 1", got)
			}
			if e := h.closeErr.Load(); e != nil && *e != err {
				t.Errorf("HandleClose: got %v, want Run's %v", *e, err)
			}
			if err := s.WritePacket(1, nil); !errors.Is(err, net.ErrClosed) {
				t.Errorf("WritePacket after end: got %v, want %v", err, net.ErrClosed)
			}
		})
	}
}

type openErrHandler struct {
	NopHandler
	err error
}

func (h openErrHandler) HandleOpen(*Session) error { return h.err }

type openPanicHandler struct{ NopHandler }

func (openPanicHandler) HandleOpen(*Session) error { panic("open") }

type closePanicHandler struct{ NopHandler }

func (closePanicHandler) HandleClose(*Session, error) { panic("close") }

func TestSessionClosedErrors(t *testing.T) {
	defer checkGoroutines(t)()
	c := newFakeConn()
	s := New(c, Config{})
	if err := s.WritePacket(IDPlayStatus, []byte{0, 0, 0, 0}); err != nil {
		t.Fatalf("WritePacket: got %v, want nil", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: got %v, want nil", err)
	}
	// Close flushed what was buffered before closing the conn.
	if got, want := c.next(t), unhex(t, "fe 05 02 00 00 00 00"); !bytes.Equal(got, want) {
		t.Errorf("got % x, want % x", got, want)
	}
	for name, err := range map[string]error{
		"WritePacket":       s.WritePacket(1, nil),
		"Flush":             s.Flush(),
		"Disconnect":        s.Disconnect("late"),
		"EnableCompression": s.EnableCompression(1),
	} {
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s: got %v, want %v", name, err, net.ErrClosed)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	// Run on a closed session still opens and closes the handler once.
	h := &recordingHandler{Handler: NopHandler{}}
	s2 := New(newFakeConn(), Config{Handler: h})
	s2.Close()
	if err := s2.Run(context.Background()); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
	if o, cl := h.opens.Load(), h.closes.Load(); o != 1 || cl != 1 {
		t.Errorf("got %d opens and %d closes, want 1 and 1", o, cl)
	}
}

func TestSessionWritePacketInvalid(t *testing.T) {
	s := New(newFakeConn(), Config{})
	defer s.Close()
	if err := s.WritePacket(0x400, nil); err == nil {
		t.Errorf("id 0x400: got nil, want error")
	}
}

func TestSessionRunTwicePanics(t *testing.T) {
	defer checkGoroutines(t)()
	s := New(newFakeConn(), Config{})
	s.Close()
	s.Run(context.Background())
	defer func() {
		if recover() == nil {
			t.Errorf("second Run: got no panic, want one")
		}
	}()
	s.Run(context.Background())
}

// TestSessionConcurrentClose races Close, Disconnect, writes, flushes and
// context cancellation; run it with -race.
func TestSessionConcurrentClose(t *testing.T) {
	defer checkGoroutines(t)()
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		s, c, done := start(t, ctx, Config{Handler: echo, FlushInterval: time.Millisecond})
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				for j := range 50 {
					if s.WritePacket(uint32(i+1), []byte{byte(j)}) != nil {
						return
					}
					if j%10 == 0 {
						s.Flush()
					}
				}
			})
		}
		wg.Go(func() { c.send(clientBatch(t, preSettings, Packet{ID: 9})) })
		wg.Go(func() { s.Disconnect("bye") })
		wg.Go(func() { s.Close() })
		wg.Go(cancel)
		wg.Wait()
		wait(t, done)
		c.waitClosed(t)
		cancel()
	}
}

// TestSessionFlushInterval checks buffered packets wait for the flush
// interval, in fake time.
func TestSessionFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 30 * time.Millisecond
		c := newFakeConn()
		// No login deadline: the session must stay idle for an hour.
		s := New(c, Config{Handler: NopHandler{}, FlushInterval: interval, LoginTimeout: -1})
		done := make(chan error, 1)
		go func() { done <- s.Run(context.Background()) }()

		s.WritePacket(0x10, []byte{1})
		time.Sleep(interval / 2)
		s.WritePacket(0x11, []byte{2})
		synctest.Wait()
		if n := len(c.out); n != 0 {
			t.Fatalf("before the interval: got %d batches, want 0", n)
		}
		time.Sleep(interval / 2)
		synctest.Wait()
		if n := len(c.out); n != 1 {
			t.Fatalf("after the interval: got %d batches, want 1", n)
		}
		if pks := clientDecode(t, <-c.out, false); len(pks) != 2 {
			t.Errorf("got %d packets in the batch, want 2", len(pks))
		}
		// An idle session sends nothing, however long it waits.
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(c.out); n != 0 {
			t.Errorf("idle: got %d batches, want 0", n)
		}
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	})
}

// TestSessionFlushSplits checks a batch never carries more than 812 packets.
func TestSessionFlushSplits(t *testing.T) {
	c := newFakeConn()
	s := New(c, Config{})
	for range maxPacketsPerBatch + 1 {
		if err := s.WritePacket(1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	first, second := clientDecode(t, c.next(t), false), clientDecode(t, c.next(t), false)
	if len(first) != maxPacketsPerBatch || len(second) != 1 {
		t.Errorf("got batches of %d and %d packets, want %d and 1", len(first), len(second), maxPacketsPerBatch)
	}
	s.Close()
}

// TestSessionEnableCompression checks what is buffered before
// EnableCompression leaves in the old format, and what follows in the new.
func TestSessionEnableCompression(t *testing.T) {
	c := newFakeConn()
	s := New(c, Config{})
	defer s.Close()
	s.WritePacket(IDNetworkSettings, []byte{1})
	if err := s.EnableCompression(8); err != nil {
		t.Fatal(err)
	}
	if !s.CompressionEnabled() {
		t.Errorf("CompressionEnabled: got false, want true")
	}
	s.WritePacket(1, []byte{2})
	s.Flush()
	s.WritePacket(1, bytes.Repeat([]byte{3}, 20))
	s.Flush()
	for _, want := range []string{"fe 03 8f 01 01", "fe ff 02 01 02"} {
		if got := c.next(t); !bytes.Equal(got, unhex(t, want)) {
			t.Errorf("got % x, want %s", got, want)
		}
	}
	if got := c.next(t); got[1] != 0x00 {
		t.Errorf("batch over the threshold: got id %#02x, want 0x00", got[1])
	}
}

func TestSessionIdentityAndAddr(t *testing.T) {
	c := newFakeConn()
	s := New(c, Config{})
	defer s.Close()
	if _, ok := s.Identity(); ok {
		t.Errorf("Identity before SetIdentity: got ok, want not")
	}
	s.SetIdentity(Identity{DisplayName: "Steve"})
	if id, ok := s.Identity(); !ok || id.DisplayName != "Steve" {
		t.Errorf("got %+v, %v; want Steve, true", id, ok)
	}
	if got, want := s.RemoteAddr().String(), "127.0.0.1:19132"; got != want {
		t.Errorf("RemoteAddr: got %v, want %v", got, want)
	}
	if s.Log() == nil {
		t.Errorf("Log: got nil, want a logger")
	}
}

// TestSessionFlushSplitsBySize checks buffered data past maxPendingSize is
// sent early rather than growing one batch without bound.
func TestSessionFlushSplitsBySize(t *testing.T) {
	c := newFakeConn()
	s := New(c, Config{})
	defer s.Close()
	big := make([]byte, maxPendingSize*3/4)
	s.WritePacket(1, big)
	s.WritePacket(2, big)
	if got := clientDecode(t, c.next(t), false); len(got) != 1 || got[0].ID != 1 {
		t.Errorf("early batch: got %d packets, want packet 1 alone", len(got))
	}
	s.Flush()
	if got := clientDecode(t, c.next(t), false); len(got) != 1 || got[0].ID != 2 {
		t.Errorf("flushed batch: got %d packets, want packet 2 alone", len(got))
	}
}

// BenchmarkSessionDispatch measures the steady-state cost of one incoming
// compressed batch, from ReadPacket to the handler.
func BenchmarkSessionDispatch(b *testing.B) {
	c := newFakeConn()
	c.in = make(chan []byte) // hand each batch over synchronously
	s := New(c, Config{Handler: NopHandler{}, LoginTimeout: -1})
	s.EnableCompression(1)
	s.SetIdentity(Identity{})
	// A clock that jumps a second per batch keeps the decompression budget
	// full: this measures dispatch, not the limit.
	var clk time.Time
	s.dec.now = func() time.Time { clk = clk.Add(time.Second); return clk }
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	batch := clientBatch(b, deflated, benchPackets()...)
	b.ReportAllocs()
	for b.Loop() {
		c.in <- batch
	}
	s.Close()
	<-done
}

// TestSessionPreLoginCap checks the cap before login: issue 9's bomb
// right after RequestNetworkSettings is refused once it has inflated one
// byte past the cap, as is a Login just over it, while a Login as large as
// the largest on record gets in.
func TestSessionPreLoginCap(t *testing.T) {
	defer checkGoroutines(t)()
	tests := []struct {
		name  string
		batch []byte
		ok    bool
	}{
		{"16 KiB inflating to 16 MiB", issueBomb(t), false},
		{"Login of 2,172,295 bytes", clientBatch(t, deflated, bigLogin(t, 2172295)), true},
		{"Login over the cap", clientBatch(t, deflated, bigLogin(t, DefaultMaxPreLoginSize)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, c, done := start(t, context.Background(), Config{})
			c.negotiate(t)
			c.send(tc.batch)
			err := wait(t, done)
			c.waitClosed(t)
			if tc.ok {
				c.expectDisconnect(t, true, DisconnectReasonKicked, GateHandler{}.message("Steve"))
				if err != nil {
					t.Errorf("Run: got %v, want nil", err)
				}
				if _, ok := s.Identity(); !ok {
					t.Error("got no identity, want Steve logged in")
				}
				return
			}
			c.expectDisconnect(t, true, DisconnectReasonBadPacket, preLoginTooLargeMessage)
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("Run: got %v, want %v", err, ErrTooLarge)
			}
			if got, want := s.dec.inflated, int64(DefaultMaxPreLoginSize)+1; got != want {
				t.Errorf("inflated %d bytes, want %d", got, want)
			}
		})
	}
}

// TestSessionDecompressionBudget checks the budget before and after login at
// fixed times: 64 KiB/s with a burst of the pre-login cap before, 32 MiB/s
// with a burst of the batch cap after.
func TestSessionDecompressionBudget(t *testing.T) {
	defer checkGoroutines(t)()
	const preLogin, maxSize = 256 << 10, 1 << 20
	type step struct {
		at   time.Duration // since t0
		size int           // decompressed size of a batch of zeros
	}
	tests := []struct {
		name  string
		login bool // log in before the steps
		steps []step
		want  error // for the last step; the others pass
	}{
		{"before login: over the pre-login cap", false, []step{{0, preLogin + 1}}, ErrTooLarge},
		{"before login: the burst, then more at once", false, []step{{0, preLogin}, {0, 64 << 10}}, ErrDecompressionBudget},
		{"before login: refilled at 64 KiB/s", false, []step{{0, preLogin}, {time.Second, 64 << 10}}, nil},
		{"after login: over the pre-login cap", true, []step{{0, maxSize}}, nil},
		{"after login: over the batch cap", true, []step{{0, maxSize + 1}}, ErrTooLarge},
		{"after login: two full batches 1/64 s apart", true, []step{{0, maxSize}, {time.Second / 64, maxSize}}, ErrDecompressionBudget},
		{"after login: two full batches 1/32 s apart", true, []step{{0, maxSize}, {time.Second / 32, maxSize}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeConn()
			s := New(c, Config{Handler: holder{}, MaxPreLoginSize: preLogin, MaxDecompressedSize: maxSize})
			var at atomic.Int64 // since t0; read by Run's goroutine
			s.dec.now = func() time.Time { return t0.Add(time.Duration(at.Load())) }
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background()) }()
			c.negotiate(t)
			if tc.login {
				c.send(clientBatch(t, deflated, Packet{ID: IDLogin, Payload: steveLogin(t)}))
			}
			for i, st := range tc.steps {
				at.Store(int64(st.at))
				c.send(sizedBatch(t, st.size))
				if i < len(tc.steps)-1 || tc.want == nil {
					c.sync(t)
				}
			}
			if tc.want == nil {
				s.Close()
				if err := wait(t, done); err != nil {
					t.Errorf("Run: got %v, want nil", err)
				}
				return
			}
			msg := budgetMessage
			switch {
			case tc.want == ErrTooLarge && tc.login:
				msg = tooLargeMessage
			case tc.want == ErrTooLarge:
				msg = preLoginTooLargeMessage
			}
			c.expectDisconnect(t, true, DisconnectReasonBadPacket, msg)
			if err := wait(t, done); !errors.Is(err, tc.want) {
				t.Errorf("Run: got %v, want %v", err, tc.want)
			}
			c.waitClosed(t)
		})
	}
}

// TestSessionLoginDeadline checks, in fake time, that a session whose
// player has not logged in by the deadline is sent a Disconnect and closed,
// and that logging in stops the deadline.
func TestSessionLoginDeadline(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration // Config.LoginTimeout
		loginAt time.Duration // 0: never
		endsAt  time.Duration // 0: never
	}{
		{"default deadline", 0, 0, DefaultLoginTimeout},
		{"configured deadline", 3 * time.Second, 0, 3 * time.Second},
		{"logged in a second before", 0, DefaultLoginTimeout - time.Second, 0},
		{"no deadline", -1, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newFakeConn()
				s := New(c, Config{Handler: NopHandler{}, LoginTimeout: tc.timeout})
				done := make(chan error, 1)
				go func() { done <- s.Run(context.Background()) }()
				if tc.loginAt > 0 {
					time.Sleep(tc.loginAt)
					s.SetIdentity(Identity{DisplayName: "Steve"})
				}
				if tc.endsAt == 0 {
					time.Sleep(time.Hour)
					synctest.Wait()
					if s.isClosed() || len(c.out) != 0 {
						t.Fatalf("after an hour: got closed %v and %d batches, want open and none", s.isClosed(), len(c.out))
					}
					s.Close()
					if err := <-done; err != nil {
						t.Errorf("Run: got %v, want nil", err)
					}
					return
				}
				time.Sleep(tc.endsAt - time.Nanosecond)
				synctest.Wait()
				if s.isClosed() || len(c.out) != 0 {
					t.Fatalf("just before the deadline: got closed %v and %d batches, want open and none", s.isClosed(), len(c.out))
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				c.expectDisconnect(t, false, DisconnectReasonTimeout, loginTimeoutMessage)
				if err := <-done; !errors.Is(err, ErrLoginTimeout) {
					t.Errorf("Run: got %v, want %v", err, ErrLoginTimeout)
				}
				select {
				case <-c.closed:
				default:
					t.Error("conn not closed")
				}
			})
		})
	}
}

// TestSessionPromote checks the Conn is promoted once, when a player logs
// in, and never for a Login refused or before one.
func TestSessionPromote(t *testing.T) {
	defer checkGoroutines(t)()
	login := clientBatch(t, deflated, Packet{ID: IDLogin, Payload: steveLogin(t)})
	invalid := clientBatch(t, deflated, Packet{ID: IDLogin, Payload: loginPayload(CurrentProtocol, "{}", "")})
	tests := []struct {
		name    string
		batches [][]byte
		want    int32
	}{
		{"no login", nil, 0},
		{"a valid login", [][]byte{login}, 1},
		{"two valid logins", [][]byte{login, login}, 1},
		{"an invalid login", [][]byte{invalid}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &promotingConn{fakeConn: newFakeConn()}
			s := New(c, Config{Handler: holder{}})
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background()) }()
			c.negotiate(t)
			if got := c.promotes.Load(); got != 0 {
				t.Fatalf("after network settings: got %d promotions, want 0", got)
			}
			for _, b := range tc.batches {
				c.send(b)
			}
			if tc.batches != nil && bytes.Equal(tc.batches[0], invalid) {
				c.expectDisconnect(t, true, DisconnectReasonInvalidPlayer, "Invalid login.")
			} else {
				c.sync(t)
				s.Close()
			}
			wait(t, done)
			if got := c.promotes.Load(); got != tc.want {
				t.Errorf("got %d promotions, want %d", got, tc.want)
			}
		})
	}
}
