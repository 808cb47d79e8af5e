package session

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// framedConn is a fakeConn behind a transport that frames and encrypts
// itself, as NetherNet does: the session must write batches without the
// 0xfe header and read them without it. The test client keeps framing
// with the helpers of a RakNet client, so framedConn strips the 0xfe the
// client puts in front and adds one to what the session writes: a header
// the session added anyway would reach the client doubled and fail
// clientDecode.
type framedConn struct {
	*fakeConn
	key *ecdsa.PublicKey
}

func (c *framedConn) ReadPacket() ([]byte, error) {
	b, err := c.fakeConn.ReadPacket()
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[0] != 0xfe {
		return nil, errors.New("test client batch without 0xfe")
	}
	return b[1:], nil
}

func (c *framedConn) Write(b []byte) (int, error) {
	if _, err := c.fakeConn.Write(append([]byte{0xfe}, b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (c *framedConn) Transport() Transport {
	return Transport{Name: "nethernet", Framed: true, Secure: true, PublicKey: c.key}
}

// runFramed starts a session with encryption asked for over a framedConn
// that proved key, and returns the conn and Run's result.
func runFramed(t *testing.T, key *ecdsa.PublicKey) (*framedConn, <-chan error, *Session) {
	t.Helper()
	c := &framedConn{fakeConn: newFakeConn(), key: key}
	s := New(c, Config{NewHandler: newHolder, Encryption: true})
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	return c, done, s
}

func TestFramedSecureTransportLogsInWithoutHeaderOrEncryption(t *testing.T) {
	leaktest.Check(t)
	c, done, s := runFramed(t, &testClientKey().PublicKey)
	if got := s.Transport(); got.Name != "nethernet" || !got.Framed || !got.Secure {
		t.Errorf("Transport() = %+v", got)
	}
	// With Config.Encryption on, a RakNet session would answer the Login
	// with ServerToClientHandshake; over a secure transport it is logged
	// in at once.
	c.login(t)
	c.sync(t)
	_ = s.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestLoginNotBoundToTransportKeyIsRefused(t *testing.T) {
	leaktest.Check(t)
	other, err := ecdsa.GenerateKey(elliptic.P384(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, done, s := runFramed(t, &other.PublicKey)
	c.negotiate(t)
	c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: steveLogin(t)}))
	c.expectDisconnect(t, true, DisconnectReasonNotAuthenticated, notAuthenticatedMessage)
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotAuthenticated) {
			t.Fatalf("Run = %v, want ErrNotAuthenticated", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("session did not end")
	}
	if _, ok := s.Identity(); ok {
		t.Error("a refused login has an identity")
	}
}

func TestLoginWithoutKeyOverProvenTransportIsRefused(t *testing.T) {
	leaktest.Check(t)
	c, done, _ := runFramed(t, &testClientKey().PublicKey)
	c.negotiate(t)
	// Steve's chain, with no identityPublicKey anywhere.
	chain := []string{fakeJWT(t, map[string]any{"extraData": map[string]any{
		"displayName": "Steve", "identity": "0b8ea5e2-7c8e-4a41-a3c5-9a6f7ad8d3b1",
	}})}
	cd := fakeJWT(t, map[string]any{"ThirdPartyName": "Steve"})
	login := loginPayload(CurrentProtocol, newFormChain(t, chain, ""), cd)
	c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: login}))
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotAuthenticated) {
			t.Fatalf("Run = %v, want ErrNotAuthenticated", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("session did not end")
	}
}

func TestTransportWithoutProvenKeyLogsIn(t *testing.T) {
	leaktest.Check(t)
	c, done, s := runFramed(t, nil)
	c.login(t)
	c.sync(t)
	_ = s.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestPlainConnIsRakNet(t *testing.T) {
	s := New(newFakeConn(), Config{})
	if got := s.Transport(); got != (Transport{Name: "raknet"}) {
		t.Errorf("Transport() = %+v, want raknet's zero value", got)
	}
}

func TestKeyMatches(t *testing.T) {
	want := &testClientKey().PublicKey
	if err := keyMatches(testClientKeyB64(t), want); err != nil {
		t.Errorf("same key: %v", err)
	}
	for _, bad := range []string{"", "!!!", "AAAA", testClientKeyB64(t)[:40]} {
		if err := keyMatches(bad, want); err == nil {
			t.Errorf("keyMatches(%q) = nil", bad)
		}
	}
}
