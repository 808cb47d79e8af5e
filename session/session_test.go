package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/rs/zerolog"
)

// recordingHandler wraps a Handler and counts its calls.
type recordingHandler struct {
	Handler
	closes   atomic.Int32
	closeErr atomic.Pointer[error]
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

// handlerOf returns a NewHandler that returns h.
func handlerOf(h Handler) func(*Session) (Handler, error) {
	return func(*Session) (Handler, error) { return h, nil }
}

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
	leaktest.Check(t)
	s, c, done := start(t, context.Background(), Config{NewHandler: Gate("Bye {player}, come back {player}!")})

	c.send(unhex(t, "fe 06 c1 01 00 00 08 b1")) // RequestNetworkSettings(2225)
	if got, want := c.next(t), unhex(t, "fe 0c 8f 01 00 02 00 00 00 00 00 00 00 00"); !bytes.Equal(got, want) {
		t.Fatalf("NetworkSettings: got % x, want % x", got, want)
	}
	if got := s.Protocol(); got != CurrentProtocol {
		t.Errorf("Protocol: got %d, want %d", got, CurrentProtocol)
	}
	// Ignored packets change nothing.
	c.send(clientBatch(t, plain, Packet{ID: IDClientCacheStatus, Payload: []byte{0}}, Packet{ID: 0x3fe}))

	login := clientBatch(t, deflated, Packet{ID: IDLogin, Payload: steveLogin(t)})
	if login[1] != 0x00 {
		t.Fatalf("login batch: got compression id %#02x, want 0x00", login[1])
	}
	c.send(login)
	// LoginSuccess and the gate's Disconnect leave in one batch.
	want := unhex(t, "fe ff 05 02 00 00 00 00 20 05 6e 00 1b")
	want = append(append(want, "Bye Steve, come back Steve!"...), 0)
	if got := c.next(t); !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
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
	if id.IdentityPublicKey != testClientKeyB64(t) {
		t.Errorf("IdentityPublicKey: got %q, want Steve's key", id.IdentityPublicKey)
	}
	if cd := id.ClientData; cd.DeviceOS != DeviceWin10 || cd.DeviceModel != "Test PC" || cd.LanguageCode != "en_GB" {
		t.Errorf("ClientData: got %+v, want Win10, Test PC, en_GB", cd)
	}
}

// TestGateFlowMessage checks the gate's message reaches the client after
// LoginSuccess, whether given or the default.
func TestGateFlowMessage(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"zero Config", Config{}, strings.ReplaceAll(DefaultGateMessage, PlayerPlaceholder, "Steve")},
		{"Gate with empty message", Config{NewHandler: Gate("")}, strings.ReplaceAll(DefaultGateMessage, PlayerPlaceholder, "Steve")},
		{"Gate", Config{NewHandler: Gate("Bye {player}, come back {player}!")}, "Bye Steve, come back Steve!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, done := start(t, context.Background(), tc.cfg)
			c.login(t)
			c.expectDisconnect(t, true, DisconnectReasonKicked, tc.want)
			if err := wait(t, done); err != nil {
				t.Errorf("Run: got %v, want nil", err)
			}
		})
	}
}

// TestEncryptedLogin runs the whole login with encryption against
// gophertunnel's batch codec: the ServerToClientHandshake leaves
// unencrypted, the client's answer and everything after are encrypted both
// ways, and the gate's Disconnect arrives decrypted.
func TestEncryptedLogin(t *testing.T) {
	leaktest.Check(t)
	s, c, done := start(t, context.Background(), Config{NewHandler: Gate("Hi {player}"), Encryption: true})
	p := newPlayer(t, c)
	p.login(true)
	p.expectDisconnect(DisconnectReasonKicked, "Hi Steve")
	if err := wait(t, done); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
	c.waitClosed(t)
	st := s.Stats()
	// In: RequestNetworkSettings, Login, ClientToServerHandshake. Out:
	// NetworkSettings, ServerToClientHandshake, LoginSuccess+Disconnect.
	if st.BatchesIn != 3 || st.PacketsIn != 3 || st.BatchesOut != 3 || st.PacketsOut != 4 {
		t.Errorf("Stats: got %+v, want 3 batches and packets in, 3 batches and 4 packets out", st)
	}
	if st.BytesIn == 0 || st.BytesOut == 0 || st.WireBytesIn == 0 {
		t.Errorf("Stats: got %+v, want bytes counted both ways", st)
	}
}

// TestEncryptedSession checks a logged-in encrypted session carries game
// packets both ways, several batches each, with the server's key.
func TestEncryptedSession(t *testing.T) {
	leaktest.Check(t)
	key, err := newTestServerKey()
	if err != nil {
		t.Fatal(err)
	}
	s, c, done := start(t, context.Background(), Config{NewHandler: handlerOf(echo), Encryption: true, ServerKey: key})
	p := newPlayer(t, c)
	p.login(true)
	for i := range 5 {
		payload := bytes.Repeat([]byte{byte(i)}, 100*i+1) // some over the threshold
		p.send(Packet{ID: 0x42, Payload: payload}, Packet{ID: 0x43, Payload: []byte{byte(i)}})
		if got := p.expect(0x42); !bytes.Equal(got.Payload, payload) {
			t.Fatalf("echo %d: got % x, want % x", i, got.Payload, payload)
		}
		p.expect(0x43)
	}
	s.Close()
	if err := wait(t, done); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

// TestBadChecksumEndsOnlyItsSession corrupts one byte of an encrypted
// batch: that session ends (ErrChecksum), quietly, and another goes on.
func TestBadChecksumEndsOnlyItsSession(t *testing.T) {
	leaktest.Check(t)
	for _, at := range []string{"payload", "checksum", "shorter than a checksum"} {
		t.Run(at, func(t *testing.T) {
			h := &recordingHandler{Handler: echo}
			bad, badConn, badDone := start(t, context.Background(), Config{NewHandler: handlerOf(h), Encryption: true})
			_, goodConn, goodDone := start(t, context.Background(), Config{NewHandler: handlerOf(echo), Encryption: true})
			pb, pg := newPlayer(t, badConn), newPlayer(t, goodConn)
			pb.login(true)
			pg.login(true)

			// Damage the bad client's next batch.
			pb.tamper = func(b []byte) []byte {
				switch at {
				case "payload":
					b[2] ^= 1
				case "checksum":
					b[len(b)-1] ^= 0x80
				default:
					b = b[:5]
				}
				return b
			}
			pb.send(Packet{ID: 0x42, Payload: []byte("hello")})
			err := wait(t, badDone)
			if !errors.Is(err, ErrChecksum) {
				t.Errorf("Run: got %v, want %v", err, ErrChecksum)
			}
			badConn.waitClosed(t)
			badConn.noMoreWrites(t)
			if bad.Stats().BatchesIn != 3 {
				t.Errorf("got %d batches in, want the 3 of the login", bad.Stats().BatchesIn)
			}
			if e := h.closeErr.Load(); h.closes.Load() != 1 || e == nil || !errors.Is(*e, ErrChecksum) {
				t.Errorf("HandleClose: got %d calls, want 1 with %v", h.closes.Load(), ErrChecksum)
			}

			pg.send(Packet{ID: 0x42, Payload: []byte("still here")})
			if got := pg.expect(0x42); string(got.Payload) != "still here" {
				t.Errorf("other session: got %q, want the echo", got.Payload)
			}
			goodConn.Close()
			wait(t, goodDone)
		})
	}
}

// TestEncryptionRefusals checks logins the handshake cannot serve are
// refused with "Invalid login." before any key is agreed.
func TestEncryptionRefusals(t *testing.T) {
	leaktest.Check(t)
	chain := func(key string) []byte {
		return loginPayload(CurrentProtocol, newFormChain(t, []string{fakeJWT(t, map[string]any{
			"identityPublicKey": key, "extraData": map[string]any{"displayName": "Steve"}})}, ""), "")
	}
	for _, tc := range []struct {
		name  string
		login []byte
	}{
		{"no key", chain("")},
		{"not base64", chain("!!!")},
		{"not a key", chain("AAAA")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, done := start(t, context.Background(), Config{Encryption: true})
			c.negotiate(t)
			c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: tc.login}))
			c.expectDisconnect(t, true, DisconnectReasonInvalidPlayer, invalidLoginMessage)
			err := wait(t, done)
			if _, ok := errors.AsType[*DisconnectError](err); !ok || !strings.Contains(err.Error(), "identity public key") {
				t.Errorf("Run: got %v, want a DisconnectError about the identity public key", err)
			}
		})
	}
}

func TestProtocolMismatch(t *testing.T) {
	leaktest.Check(t)
	tests := []struct {
		name     string
		accepted []int32
		protocol string
		want     string
	}{
		{"older client", nil, "00 00 08 79", "fe 05 02 00 00 00 01"},
		// Each side of the known range (2193 to 2225 today: 2192 and 2226),
		// so that adding a protocol moves the edges with it.
		{"just older than known", nil, beHex(KnownProtocols()[0] - 1), "fe 05 02 00 00 00 01"},
		{"just newer than known", nil, beHex(KnownProtocols()[len(KnownProtocols())-1] + 1), "fe 05 02 00 00 00 02"},
		{"newer than accepted", []int32{2193}, "00 00 08 b1", "fe 05 02 00 00 00 02"},
		{"between accepted", []int32{2169, 2193}, "00 00 08 80", "fe 05 02 00 00 00 01"},
		{"older than all accepted", []int32{2169, 2193}, "00 00 03 e8", "fe 05 02 00 00 00 01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c, done := start(t, context.Background(), Config{AcceptedProtocols: tc.accepted})
			c.send(append(unhex(t, "fe 06 c1 01"), unhex(t, tc.protocol)...))
			if got, want := c.next(t), unhex(t, tc.want); !bytes.Equal(got, want) {
				t.Errorf("got % x, want % x", got, want)
			}
			c.waitClosed(t)
			if err := wait(t, done); err == nil || !strings.Contains(err.Error(), "refused client protocol") {
				t.Errorf("Run: got %v, want the refused protocol", err)
			}
		})
	}
}

// beHex is p as the big-endian hex RequestNetworkSettings carries.
func beHex(p int32) string {
	return fmt.Sprintf("%02x %02x %02x %02x", byte(p>>24), byte(p>>16), byte(p>>8), byte(p))
}

// TestProtocolCheckedAtLogin checks the Login's own protocol: one not
// accepted gets the PlayStatus, one accepted but not the one negotiated is
// an invalid login.
func TestProtocolCheckedAtLogin(t *testing.T) {
	leaktest.Check(t)
	login := func(protocol int32) []byte {
		return loginPayload(protocol, newFormChain(t, []string{fakeJWT(t, map[string]any{
			"extraData": map[string]any{"displayName": "Steve"}})}, ""), "")
	}
	t.Run("not accepted", func(t *testing.T) {
		_, c, done := start(t, context.Background(), Config{})
		c.negotiate(t)
		c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: login(2169)}))
		if got, want := c.next(t), unhex(t, "fe ff 05 02 00 00 00 01"); !bytes.Equal(got, want) {
			t.Errorf("got % x, want % x", got, want)
		}
		wait(t, done)
	})
	t.Run("accepted but not negotiated", func(t *testing.T) {
		_, c, done := start(t, context.Background(), Config{AcceptedProtocols: []int32{2169, CurrentProtocol}})
		c.negotiate(t)
		c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: login(2169)}))
		c.expectDisconnect(t, true, DisconnectReasonInvalidPlayer, invalidLoginMessage)
		wait(t, done)
	})
}

func TestAcceptsListedProtocol(t *testing.T) {
	leaktest.Check(t)
	s, c, done := start(t, context.Background(), Config{
		AcceptedProtocols: []int32{2169, CurrentProtocol}, CompressionThreshold: 1})
	c.send(unhex(t, "fe 06 c1 01 00 00 08 79"))
	if got, want := c.next(t), unhex(t, "fe 0c 8f 01 01 00 00 00 00 00 00 00 00 00"); !bytes.Equal(got, want) {
		t.Errorf("got % x, want % x", got, want)
	}
	if got := s.Protocol(); got != 2169 {
		t.Errorf("Protocol: got %d, want 2169", got)
	}
	s.Close()
	if err := wait(t, done); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

func TestPreLoginProtocolErrors(t *testing.T) {
	leaktest.Check(t)
	rns := unhex(t, "fe 06 c1 01 00 00 08 b1")
	login := clientBatch(t, plain, Packet{ID: IDLogin, Payload: steveLogin(t)})
	tests := []struct {
		name       string
		encryption bool
		batches    [][]byte
		want       string
	}{
		{"login before network settings", false,
			[][]byte{clientBatch(t, preSettings, Packet{ID: IDLogin, Payload: steveLogin(t)})},
			"login: before network settings"},
		{"network settings twice", false,
			[][]byte{rns, clientBatch(t, plain, Packet{ID: IDRequestNetworkSettings, Payload: []byte{0, 0, 8, 0x91}})},
			"sent twice"},
		{"short request", false, [][]byte{unhex(t, "fe 03 c1 01 00")}, "unexpected EOF"},
		{"uncompressed batch after settings", false, [][]byte{rns, rns}, "decode batch"},
		{"handshake without encryption", false,
			[][]byte{rns, clientBatch(t, plain, Packet{ID: IDClientToServerHandshake})}, "unexpected"},
		{"handshake in the Login's batch", true,
			[][]byte{rns, clientBatch(t, plain, Packet{ID: IDLogin, Payload: steveLogin(t)}, Packet{ID: IDClientToServerHandshake})},
			"not encrypted"},
		{"plain batch after the handshake", true, [][]byte{rns, login, login}, "checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c, done := start(t, context.Background(), Config{Encryption: tc.encryption})
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

func TestInvalidLogin(t *testing.T) {
	leaktest.Check(t)
	_, c, done := start(t, context.Background(), Config{})
	c.negotiate(t)
	c.send(clientBatch(t, deflated, Packet{ID: IDLogin, Payload: loginPayload(CurrentProtocol, "{}", "")}))
	c.expectDisconnect(t, true, DisconnectReasonInvalidPlayer, invalidLoginMessage)
	err := wait(t, done)
	if de, ok := errors.AsType[*DisconnectError](err); !ok || de.Reason != DisconnectReasonInvalidPlayer {
		t.Errorf("Run: got %v, want a DisconnectError with %v", err, DisconnectReasonInvalidPlayer)
	}
}

// TestKick checks a *DisconnectError from NewHandler or a handler, wrapped
// or not, reaches the client with its reason and message after what was
// written, and that Run's error wraps it.
func TestKick(t *testing.T) {
	leaktest.Check(t)
	notAllowed := &DisconnectError{Reason: DisconnectReasonNotAllowed, Message: "Not on the list."}
	tests := []struct {
		name       string
		newHandler func(*Session) (Handler, error)
		packet     bool // send a packet after login
		want       *DisconnectError
	}{
		{"NewHandler", func(s *Session) (Handler, error) {
			_ = s.WritePacket(0x42, []byte("first"))
			return nil, Kick("Banned.")
		}, false, &DisconnectError{Reason: DisconnectReasonKicked, Message: "Banned."}},
		{"NewHandler wrapped", func(s *Session) (Handler, error) {
			_ = s.WritePacket(0x42, []byte("first"))
			return nil, errors.Join(errors.New("whitelist"), notAllowed)
		}, false, notAllowed},
		{"HandlePacket", handlerOf(funcHandler{packet: func(s *Session, p Packet) error {
			_ = s.WritePacket(0x42, []byte("first"))
			return Kick("Bye.")
		}}), true, &DisconnectError{Reason: DisconnectReasonKicked, Message: "Bye."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, c, done := start(t, context.Background(), Config{NewHandler: tc.newHandler, Encryption: true})
			p := newPlayer(t, c)
			p.login(true)
			if tc.packet {
				p.send(Packet{ID: 0x10})
			}
			if got := p.expect(0x42); string(got.Payload) != "first" {
				t.Errorf("got %q, want the packet written before the kick", got.Payload)
			}
			p.expectDisconnect(tc.want.Reason, tc.want.Message)
			err := wait(t, done)
			if de, ok := errors.AsType[*DisconnectError](err); !ok || *de != *tc.want {
				t.Errorf("Run: got %v, want it to wrap %v", err, tc.want)
			}
			c.waitClosed(t)
			c.noMoreWrites(t)
		})
	}
}

// TestPanicEndsOnlyItsSession checks a panic in NewHandler, HandlePacket or
// PreLogin ends that session with ErrHandlerPanic while another goes on.
func TestPanicEndsOnlyItsSession(t *testing.T) {
	leaktest.Check(t)
	boom := &recordingHandler{Handler: funcHandler{packet: func(*Session, Packet) error { panic("boom") }}}
	tests := []struct {
		name   string
		cfg    Config
		packet bool
		closes int32 // HandleClose calls of boom
	}{
		{"NewHandler", Config{NewHandler: func(*Session) (Handler, error) { panic("boom") }}, false, 0},
		{"HandlePacket", Config{NewHandler: handlerOf(boom)}, true, 1},
		{"PreLogin", Config{PreLogin: func(*Session, Packet) error { panic("boom") }}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			boom.closes.Store(0)
			_, bad, badDone := start(t, context.Background(), tc.cfg)
			_, good, goodDone := start(t, context.Background(), Config{NewHandler: handlerOf(echo)})
			good.login(t)
			if tc.name == "PreLogin" {
				bad.send(unhex(t, "fe 06 c1 01 00 00 08 91"))
			} else {
				bad.login(t)
			}
			if tc.packet {
				bad.send(clientBatch(t, plain, Packet{ID: 0x42}))
			}
			err := wait(t, badDone)
			if !errors.Is(err, ErrHandlerPanic) || !strings.Contains(err.Error(), "boom") {
				t.Errorf("Run: got %v, want %v mentioning boom", err, ErrHandlerPanic)
			}
			bad.waitClosed(t)
			if got := boom.closes.Load(); got != tc.closes {
				t.Errorf("HandleClose: got %d calls, want %d", got, tc.closes)
			}
			good.send(clientBatch(t, plain, Packet{ID: 0x43, Payload: []byte("still here")}))
			if pks := clientDecode(t, good.next(t), true); len(pks) != 1 || string(pks[0].Payload) != "still here" {
				t.Errorf("echo: got %+v, want the packet back", pks)
			}
			good.Close()
			if err := wait(t, goodDone); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Run after peer close: got %v, want %v", err, net.ErrClosed)
			}
		})
	}
}

// TestPreLogin checks PreLogin sees every packet before the login, raw and
// in order, and none after; its error ends the session.
func TestPreLogin(t *testing.T) {
	leaktest.Check(t)
	var mu sync.Mutex
	var seen []uint32
	record := func(s *Session, p Packet) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p.ID)
		if _, ok := s.Identity(); ok {
			t.Errorf("PreLogin %#x: Identity set before the login completed", p.ID)
		}
		return nil
	}
	s, c, done := start(t, context.Background(), Config{NewHandler: handlerOf(echo), Encryption: true, PreLogin: record})
	p := newPlayer(t, c)
	p.negotiate()
	p.send(Packet{ID: IDPacketViolationWarning, Payload: []byte{1}}, Packet{ID: IDLogin, Payload: steveLogin(t)})
	var hs serverToClientHandshake
	if _, err := hs.Decode(p.expect(IDServerToClientHandshake).Payload); err != nil {
		t.Fatal(err)
	}
	key := p.clientKey(string(hs.JWT))
	p.enc.EnableEncryption(key)
	p.dec.EnableEncryption(key)
	p.send(Packet{ID: IDClientToServerHandshake})
	p.expect(IDPlayStatus)
	p.send(Packet{ID: 0x42})
	p.expect(0x42)
	if id, ok := s.Identity(); !ok || id.DisplayName != "Steve" {
		t.Errorf("Identity after login: got %+v, %v; want Steve", id, ok)
	}
	s.Close()
	wait(t, done)
	want := []uint32{IDRequestNetworkSettings, IDPacketViolationWarning, IDLogin, IDClientToServerHandshake}
	if !slices.Equal(seen, want) {
		t.Errorf("PreLogin saw %#x, want %#x", seen, want)
	}

	t.Run("error", func(t *testing.T) {
		_, c, done := start(t, context.Background(), Config{PreLogin: func(s *Session, p Packet) error {
			if p.ID == IDLogin {
				return Kick("No logins today.")
			}
			return nil
		}})
		c.negotiate(t)
		c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: steveLogin(t)}))
		c.expectDisconnect(t, true, DisconnectReasonKicked, "No logins today.")
		if err := wait(t, done); !strings.Contains(err.Error(), "pre-login 0x1") {
			t.Errorf("Run: got %v, want the PreLogin error", err)
		}
	})
}

func TestSessionEndings(t *testing.T) {
	leaktest.Check(t)
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
		{"packet error", funcHandler{packet: func(*Session, Packet) error { return errPacket }},
			func(_ *Session, c *fakeConn, _ context.CancelCauseFunc) {
				c.send(clientBatch(t, plain, Packet{ID: 7}))
			}, errPacket, "handle packet 0x7"},
		{"bad batch", NopHandler{}, func(_ *Session, c *fakeConn, _ context.CancelCauseFunc) {
			c.send([]byte{0xfe, 0xff, 0x01, 0x00, 0x00})
		}, nil, "empty"},
		{"close panics", closePanicHandler{}, func(s *Session, _ *fakeConn, _ context.CancelCauseFunc) { s.Close() }, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			h := &recordingHandler{Handler: tc.handler}
			s, c, done := start(t, ctx, Config{NewHandler: handlerOf(h)})
			c.login(t)
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
			select {
			case <-s.Done():
			default:
				t.Error("Done: still open after Run returned")
			}
			if got := h.closes.Load(); got != 1 {
				t.Errorf("HandleClose: got %d calls, want 1", got)
			}
			if e := h.closeErr.Load(); e != nil && *e != err {
				t.Errorf("HandleClose: got %v, want Run's %v", *e, err)
			}
			if err := s.WritePacket(1, nil); !errors.Is(err, net.ErrClosed) {
				t.Errorf("WritePacket after end: got %v, want %v", err, net.ErrClosed)
			}
			if ctxErr := context.Cause(s.Context()); ctxErr == nil || err != nil && ctxErr != err {
				t.Errorf("Context cause: got %v, want Run's %v or context.Canceled", ctxErr, err)
			}
		})
	}
}

type closePanicHandler struct{ NopHandler }

func (closePanicHandler) HandleClose(*Session, error) { panic("close") }

// TestSessionEndsBeforeLogin checks a session that ends before its player
// logged in calls no NewHandler and no HandleClose.
func TestSessionEndsBeforeLogin(t *testing.T) {
	leaktest.Check(t)
	called := false
	s, c, done := start(t, context.Background(), Config{NewHandler: func(*Session) (Handler, error) {
		called = true
		return NopHandler{}, nil
	}})
	c.negotiate(t)
	s.Close()
	if err := wait(t, done); err != nil || called {
		t.Errorf("Run: got %v with NewHandler called %v, want nil and not called", err, called)
	}
}

func TestSessionClosedErrors(t *testing.T) {
	leaktest.Check(t)
	c := newFakeConn()
	s := New(c, Config{})
	if err := s.WritePacket(IDPlayStatus, []byte{0, 0, 0, 0}); err != nil {
		t.Fatalf("WritePacket: got %v, want nil", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: got %v, want nil", err)
	}
	for name, err := range map[string]error{
		"WritePacket": s.WritePacket(1, nil),
		"Flush":       s.Flush(),
		"Disconnect":  s.Disconnect("late"),
	} {
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s: got %v, want %v", name, err, net.ErrClosed)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	// Run on a closed session flushes what was buffered before the Close
	// and closes the conn.
	if err := s.Run(context.Background()); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
	if got, want := c.next(t), unhex(t, "fe 05 02 00 00 00 00"); !bytes.Equal(got, want) {
		t.Errorf("got % x, want % x", got, want)
	}
	c.waitClosed(t)
}

func TestSessionWritePacketInvalid(t *testing.T) {
	s := New(newFakeConn(), Config{})
	defer s.Close()
	if err := s.WritePacket(0x400, nil); err == nil {
		t.Errorf("id 0x400: got nil, want error")
	}
}

func TestSessionRunTwicePanics(t *testing.T) {
	leaktest.Check(t)
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

func TestNewPanicsOnWrongCurve(t *testing.T) {
	key, err := newTestKey(t, "P-256")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("New with a P-256 key: got no panic, want one")
		}
	}()
	New(newFakeConn(), Config{ServerKey: key})
}

// TestSessionConcurrentClose races Close, Disconnect, writes, flushes and
// context cancellation (run it with -race), then checks the ending: Run
// returns with no error of its own, everything after refuses, and what
// reached the client is every writer's packets in order with none skipped
// or repeated, then at most one Disconnect, last.
func TestSessionConcurrentClose(t *testing.T) {
	leaktest.Check(t)
	const writers, perWriter = 4, 50
	for round := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		s, c, done := start(t, ctx, Config{NewHandler: handlerOf(echo), FlushInterval: time.Millisecond})
		c.login(t)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				for j := range perWriter {
					if s.WritePacket(uint32(0x100+i), []byte{byte(j)}) != nil {
						return
					}
					if j%10 == 0 {
						s.Flush()
					}
				}
			})
		}
		wg.Go(func() { c.send(clientBatch(t, plain, Packet{ID: 9})) })
		wg.Go(func() { s.Disconnect("bye") })
		wg.Go(func() { s.Close() })
		wg.Go(func() { _ = s.Stats(); _, _ = s.NetStats(); _ = s.Protocol() })
		wg.Go(cancel)
		wg.Wait()
		err := wait(t, done)
		c.waitClosed(t)
		cancel()

		// Every ending here is this side's own.
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("round %d: Run: got %v, want nil or context.Canceled", round, err)
		}
		if err := s.WritePacket(0x100, []byte{0}); !errors.Is(err, net.ErrClosed) {
			t.Errorf("round %d: WritePacket after the end: got %v, want net.ErrClosed", round, err)
		}
		if err := s.Flush(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("round %d: Flush after the end: got %v, want net.ErrClosed", round, err)
		}
		if err := s.Disconnect("again"); !errors.Is(err, net.ErrClosed) {
			t.Errorf("round %d: Disconnect after the end: got %v, want net.ErrClosed", round, err)
		}
		c.mu.Lock()
		closes := c.closeCalls
		c.mu.Unlock()
		if closes != 1 {
			t.Errorf("round %d: Conn closed %d times, want 1", round, closes)
		}

		// What the client got.
		var pks []Packet
		for _, b := range c.unread {
			pks = append(pks, clientDecode(t, b, true)...)
		}
	drain:
		for {
			select {
			case b := <-c.out:
				pks = append(pks, clientDecode(t, b, true)...)
			default:
				break drain
			}
		}
		next := make(map[uint32]int) // each writer's next packet
		for k, p := range pks {
			switch {
			case p.ID == IDDisconnect:
				if k != len(pks)-1 || !bytes.Contains(p.Payload, []byte("bye")) {
					t.Errorf("round %d: Disconnect %q as packet %d of %d, want one saying bye, last", round, p.Payload, k+1, len(pks))
				}
			case p.ID >= 0x100 && p.ID < 0x100+writers:
				if want := next[p.ID]; len(p.Payload) != 1 || int(p.Payload[0]) != want {
					t.Errorf("round %d: writer %d: got packet % x, want %d", round, p.ID-0x100, p.Payload, want)
				}
				next[p.ID]++
			case p.ID == 9:
			default:
				t.Errorf("round %d: got packet %#x, want none", round, p.ID)
			}
		}
	}
}

// TestSessionFlushInterval checks buffered packets wait for the flush
// interval, in fake time.
func TestSessionFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 30 * time.Millisecond
		c := newFakeConn()
		// No login deadline: the session must stay idle for an hour.
		s := New(c, Config{FlushInterval: interval, LoginTimeout: -1})
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
	if st := s.Stats(); st.BatchesOut != 2 || st.PacketsOut != maxPacketsPerBatch+1 {
		t.Errorf("Stats: got %+v, want 2 batches and %d packets out", st, maxPacketsPerBatch+1)
	}
	s.Close()
}

// TestSessionEnableCompression checks what is buffered before compression
// is switched on leaves in the old format, and what follows in the new.
func TestSessionEnableCompression(t *testing.T) {
	c := newFakeConn()
	s := New(c, Config{})
	defer s.Close()
	s.WritePacket(IDNetworkSettings, []byte{1})
	if err := s.enableCompression(8); err != nil {
		t.Fatal(err)
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
		t.Errorf("Identity before login: got ok, want not")
	}
	if got := s.Protocol(); got != 0 {
		t.Errorf("Protocol before RequestNetworkSettings: got %d, want 0", got)
	}
	if got, want := s.RemoteAddr().String(), "127.0.0.1:19132"; got != want {
		t.Errorf("RemoteAddr: got %v, want %v", got, want)
	}
	if s.Log() == nil {
		t.Errorf("Log: got nil, want a logger")
	}
	if _, ok := s.NetStats(); ok {
		t.Errorf("NetStats of a conn without them: got ok, want not")
	}
}

// statsConn is a fakeConn that reports NetStats.
type statsConn struct{ *fakeConn }

func (statsConn) NetStats() NetStats { return NetStats{RTT: 42 * time.Millisecond, Resends: 3} }

func TestSessionNetStats(t *testing.T) {
	s := New(statsConn{newFakeConn()}, Config{})
	defer s.Close()
	if got, ok := s.NetStats(); !ok || got.RTT != 42*time.Millisecond || got.Resends != 3 {
		t.Errorf("got %+v, %v; want the conn's", got, ok)
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
	benchmarkDispatch(b, nil)
}

// BenchmarkSessionDispatchEncrypted is BenchmarkSessionDispatch with the
// batch encrypted, as every batch of an encrypted session is.
func BenchmarkSessionDispatchEncrypted(b *testing.B) {
	benchmarkDispatch(b, &[32]byte{1, 2, 3})
}

func benchmarkDispatch(b *testing.B, key *[32]byte) {
	c := newFakeConn()
	c.in = make(chan []byte) // hand each batch over synchronously
	s := New(c, Config{LoginTimeout: -1})
	s.phase, s.loggedIn, s.handler = phasePlaying, true, NopHandler{}
	// A clock that jumps a second per batch keeps the decompression budget
	// full: this measures dispatch, not the limit.
	var clk time.Time
	s.dec.now = func() time.Time { clk = clk.Add(time.Second); return clk }
	var sealer *crypt
	if key != nil {
		s.dec.crypt, sealer = newCrypt(*key), newCrypt(*key)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	plainBatch := clientBatch(b, deflated, benchPackets()...)
	// Two buffers in turn: once the send of one batch completes, the
	// session is done with the batch before it, whose buffer is refilled.
	var bufs [2][]byte
	for i := range bufs {
		bufs[i] = make([]byte, 0, len(plainBatch)+checksumSize)
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		batch := append(bufs[i%2][:0], plainBatch...)
		if sealer != nil {
			batch = sealer.seal(batch)
		}
		c.in <- batch
		i++
	}
	s.Close()
	<-done
}

// TestSessionPreLoginCap checks the cap before login: issue 9's bomb
// right after RequestNetworkSettings is refused once it has inflated one
// byte past the cap, as is a Login just over it, while a Login as large as
// the largest on record gets in.
func TestSessionPreLoginCap(t *testing.T) {
	leaktest.Check(t)
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
				c.expectLoginSuccess(t)
				c.expectDisconnect(t, true, DisconnectReasonKicked, strings.ReplaceAll(DefaultGateMessage, PlayerPlaceholder, "Steve"))
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
	leaktest.Check(t)
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
		{"after login: over the pre-login cap", true, []step{{0, maxSize}}, nil},
		{"after login: over the batch cap", true, []step{{0, maxSize + 1}}, ErrTooLarge},
		{"after login: two full batches 1/64 s apart", true, []step{{0, maxSize}, {time.Second / 64, maxSize}}, ErrDecompressionBudget},
		{"after login: two full batches 1/32 s apart", true, []step{{0, maxSize}, {time.Second / 32, maxSize}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeConn()
			s := New(c, Config{NewHandler: newHolder, MaxPreLoginSize: preLogin, MaxDecompressedSize: maxSize})
			var at atomic.Int64 // since t0; read by Run's goroutine
			s.dec.now = func() time.Time { return t0.Add(time.Duration(at.Load())) }
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background()) }()
			if tc.login {
				c.login(t)
			} else {
				c.negotiate(t)
			}
			for i, st := range tc.steps {
				at.Store(int64(st.at))
				c.send(sizedBatch(t, st.size))
				if i < len(tc.steps)-1 || tc.want == nil {
					if tc.login {
						c.sync(t)
					}
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
				s := New(c, Config{NewHandler: newHolder, LoginTimeout: tc.timeout})
				done := make(chan error, 1)
				go func() { done <- s.Run(context.Background()) }()
				if tc.loginAt > 0 {
					time.Sleep(tc.loginAt)
					c.login(t)
				}
				if tc.endsAt == 0 {
					time.Sleep(time.Hour)
					synctest.Wait()
					if s.isClosing() || len(c.out) != 0 {
						t.Fatalf("after an hour: got closed %v and %d batches, want open and none", s.isClosing(), len(c.out))
					}
					s.Close()
					if err := <-done; err != nil {
						t.Errorf("Run: got %v, want nil", err)
					}
					return
				}
				time.Sleep(tc.endsAt - time.Nanosecond)
				synctest.Wait()
				if s.isClosing() || len(c.out) != 0 {
					t.Fatalf("just before the deadline: got closed %v and %d batches, want open and none", s.isClosing(), len(c.out))
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
	leaktest.Check(t)
	invalid := clientBatch(t, deflated, Packet{ID: IDLogin, Payload: loginPayload(CurrentProtocol, "{}", "")})
	for _, tc := range []struct {
		name  string
		login bool
		want  int32
	}{
		{"no login", false, 0},
		{"a valid login", true, 1},
		{"an invalid login", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &promotingConn{fakeConn: newFakeConn()}
			s := New(c, Config{NewHandler: newHolder})
			done := make(chan error, 1)
			go func() { done <- s.Run(context.Background()) }()
			switch {
			case tc.login:
				c.login(t)
				c.sync(t)
				s.Close()
			case tc.name == "no login":
				c.negotiate(t)
				s.Close()
			default:
				c.negotiate(t)
				c.send(invalid)
				c.expectDisconnect(t, true, DisconnectReasonInvalidPlayer, invalidLoginMessage)
			}
			wait(t, done)
			if got := c.promotes.Load(); got != tc.want {
				t.Errorf("got %d promotions, want %d", got, tc.want)
			}
		})
	}
}

// TestProtocolRefusalLog checks that a refused protocol is logged at info
// with the client's protocol and address, and that the lines are limited.
func TestProtocolRefusalLog(t *testing.T) {
	// Other tests' refusals count against the same process-wide limit.
	protocolRefusals.mu.Lock()
	protocolRefusals.start, protocolRefusals.n = time.Now(), 0
	protocolRefusals.mu.Unlock()
	var out bytes.Buffer
	log := zerolog.New(&out).Level(zerolog.InfoLevel)
	_, c, done := start(t, context.Background(), Config{Log: &log})
	c.send(unhex(t, "fe 06 c1 01 00 00 08 79"))
	c.next(t)
	c.waitClosed(t)
	_ = wait(t, done)
	for _, want := range []string{`"raddr":`, `"protocol":2169`, `"status":"LoginFailed_ClientOld"`, `"message":"refused client protocol"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, out.String())
		}
	}
}

func TestLogLimiter(t *testing.T) {
	l := logLimiter{burst: 2, interval: time.Second}
	t0 := time.Unix(1000, 0)
	for i := range 2 {
		if ok, n := l.allow(t0); !ok || n != 0 {
			t.Fatalf("line %d: got %v, %d suppressed; want through, 0", i, ok, n)
		}
	}
	for range 3 {
		if ok, _ := l.allow(t0.Add(999 * time.Millisecond)); ok {
			t.Fatal("line past the burst let through")
		}
	}
	if ok, n := l.allow(t0.Add(time.Second)); !ok || n != 3 {
		t.Errorf("next interval: got %v, %d suppressed; want through, 3", ok, n)
	}
	if ok, n := l.allow(t0.Add(time.Second)); !ok || n != 0 {
		t.Errorf("second line: got %v, %d suppressed; want through, 0", ok, n)
	}
}

// TestKnownProtocolsAccepted checks that a session with the default
// configuration lets in every protocol this build knows, and records it.
func TestKnownProtocolsAccepted(t *testing.T) {
	leaktest.Check(t)
	for _, v := range Protocols() {
		s, c, done := start(t, context.Background(), Config{})
		c.send(append(unhex(t, "fe 06 c1 01"), byte(v.Protocol>>24), byte(v.Protocol>>16), byte(v.Protocol>>8), byte(v.Protocol)))
		if got := c.next(t); len(got) < 3 || got[2] != byte(IDNetworkSettings) {
			t.Errorf("protocol %d: got % x, want NetworkSettings", v.Protocol, got)
		}
		if s.Protocol() != v.Protocol || s.Version() != v {
			t.Errorf("protocol %d: session records %d, %+v", v.Protocol, s.Protocol(), s.Version())
		}
		_ = s.Close()
		_ = wait(t, done)
	}
}
