package session

import (
	"bytes"
	"compress/flate"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
)

// fakeConn is an in-memory Conn. The test plays the client: it sends batches
// with send and reads what the session wrote with next.
type fakeConn struct {
	in     chan []byte
	out    chan []byte
	closed chan struct{}
	once   sync.Once

	mu         sync.Mutex
	closeCalls int
	// unread holds batches next returns before those the session wrote.
	unread [][]byte
}

func newFakeConn() *fakeConn {
	return &fakeConn{
		in:     make(chan []byte, 16),
		out:    make(chan []byte, 1024),
		closed: make(chan struct{}),
	}
}

func (c *fakeConn) ReadPacket() ([]byte, error) {
	select {
	case <-c.closed:
		return nil, net.ErrClosed
	default:
	}
	select {
	case b := <-c.in:
		// The session decrypts in place: a test may send one slice twice.
		return bytes.Clone(b), nil
	case <-c.closed:
		return nil, net.ErrClosed
	}
}

func (c *fakeConn) Write(b []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	c.out <- bytes.Clone(b)
	return len(b), nil
}

func (c *fakeConn) Close() error {
	c.mu.Lock()
	c.closeCalls++
	c.mu.Unlock()
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *fakeConn) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19132}
}

// send delivers batch b to the session as the client.
func (c *fakeConn) send(b []byte) { c.in <- b }

// next returns the next batch the session wrote, failing after 5 s.
func (c *fakeConn) next(t *testing.T) []byte {
	t.Helper()
	if len(c.unread) > 0 {
		b := c.unread[0]
		c.unread = c.unread[1:]
		return b
	}
	select {
	case b := <-c.out:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no batch written within 5s")
		return nil
	}
}

// waitClosed fails unless the session closes the conn within 5 s.
func (c *fakeConn) waitClosed(t *testing.T) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("conn not closed within 5s")
	}
}

// noMoreWrites fails if the session wrote anything not yet read.
func (c *fakeConn) noMoreWrites(t *testing.T) {
	t.Helper()
	select {
	case b := <-c.out:
		t.Errorf("unexpected batch % x", b)
	default:
	}
}

// unhex parses space-separated hex bytes.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// The client side below is written independently of the package's codec,
// with the standard library's compress/flate (and klauspost's Snappy block
// encoder, which the session never uses), so the tests cross-check it.

// clientMode is how a test client frames a batch.
type clientMode int

const (
	preSettings clientMode = iota // 0xfe | packets
	plain                         // 0xfe 0xff | packets
	deflated                      // 0xfe 0x00 | raw DEFLATE(packets)
	snappied                      // 0xfe 0x01 | Snappy block(packets)
)

// clientBatch frames packets (each header bytes then payload, given as
// id+payload) as a client would.
func clientBatch(t testing.TB, mode clientMode, pks ...Packet) []byte {
	t.Helper()
	var payload []byte
	for _, p := range pks {
		h := binary.AppendUvarint(nil, uint64(p.ID|uint32(p.Sender)<<10|uint32(p.Target)<<12))
		payload = binary.AppendUvarint(payload, uint64(len(h)+len(p.Payload)))
		payload = append(append(payload, h...), p.Payload...)
	}
	switch mode {
	case preSettings:
		return append([]byte{0xfe}, payload...)
	case plain:
		return append([]byte{0xfe, 0xff}, payload...)
	case snappied:
		return append([]byte{0xfe, 0x01}, snappy.Encode(nil, payload)...)
	}
	var buf bytes.Buffer
	buf.Write([]byte{0xfe, 0x00})
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// clientDecode splits a batch the session wrote, as a client would.
func clientDecode(t testing.TB, b []byte, compressed bool) []Packet {
	t.Helper()
	if len(b) == 0 || b[0] != 0xfe {
		t.Fatalf("batch % x does not start with 0xfe", b)
	}
	b = b[1:]
	if compressed {
		if len(b) == 0 {
			t.Fatal("batch has no compression id")
		}
		switch b[0] {
		case 0xff:
			b = b[1:]
		case 0x00:
			var err error
			if b, err = io.ReadAll(flate.NewReader(bytes.NewReader(b[1:]))); err != nil {
				t.Fatalf("inflate: %v", err)
			}
		default:
			t.Fatalf("compression id %#02x", b[0])
		}
	}
	var pks []Packet
	for len(b) > 0 {
		l, n := binary.Uvarint(b)
		if n <= 0 || l == 0 || l > uint64(len(b)-n) {
			t.Fatalf("bad packet length in % x", b)
		}
		pk := b[n : n+int(l)]
		b = b[n+int(l):]
		h, m := binary.Uvarint(pk)
		if m <= 0 {
			t.Fatalf("bad header in % x", pk)
		}
		pks = append(pks, Packet{
			ID: uint32(h & 0x3ff), Sender: uint8(h >> 10 & 3), Target: uint8(h >> 12 & 3),
			Payload: pk[m:],
		})
	}
	return pks
}

// fakeJWT returns an unsigned compact JWT carrying claims.
func fakeJWT(t testing.TB, claims any) string {
	t.Helper()
	body, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"ES384","x5u":"fake"}`)) + "." +
		enc.EncodeToString(body) + "." + enc.EncodeToString([]byte("not a signature"))
}

// loginPayload builds a Login packet payload: protocol, then the connection
// request with the given chain JSON and client-data JWT.
func loginPayload(protocol int32, chainJSON, clientData string) []byte {
	var req []byte
	req = binary.LittleEndian.AppendUint32(req, uint32(len(chainJSON)))
	req = append(req, chainJSON...)
	req = binary.LittleEndian.AppendUint32(req, uint32(len(clientData)))
	req = append(req, clientData...)
	b := binary.BigEndian.AppendUint32(nil, uint32(protocol))
	b = binary.AppendUvarint(b, uint64(len(req)))
	return append(b, req...)
}

// newFormChain returns the 1.21.90+ login JSON: the chain as a string inside
// Certificate, beside AuthenticationType and Token.
func newFormChain(t testing.TB, chain []string, token string) string {
	t.Helper()
	cert, err := json.Marshal(map[string]any{"chain": chain})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{
		"AuthenticationType": 0, "Certificate": string(cert), "Token": token,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// steveLogin returns a Login payload of the new form whose chain names Steve.
func steveLogin(t testing.TB) []byte {
	t.Helper()
	chain := []string{
		fakeJWT(t, map[string]any{"certificateAuthority": true, "identityPublicKey": "k1"}),
		fakeJWT(t, map[string]any{"identityPublicKey": "k2"}),
		fakeJWT(t, map[string]any{"identityPublicKey": testClientKeyB64(t), "extraData": map[string]any{
			"displayName": "Steve", "XUID": "2535400000000001",
			"identity": "0b8ea5e2-7c8e-4a41-a3c5-9a6f7ad8d3b1", "titleId": "896928775",
		}}),
	}
	cd := fakeJWT(t, map[string]any{"ThirdPartyName": "NotSteve", "SkinData": strings.Repeat("A", 64),
		"DeviceOS": 7, "DeviceModel": "Test PC", "GameVersion": CurrentVersion, "LanguageCode": "en_GB"})
	return loginPayload(CurrentProtocol, newFormChain(t, chain, ""), cd)
}

// testClientKey is the P-384 key Steve's Login carries, made once.
var testClientKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P384(), crand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

// testClientKeyB64 returns testClientKey's public key as a Login carries
// it: base64 of its PKIX DER.
func testClientKeyB64(t testing.TB) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&testClientKey().PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// promotingConn is a fakeConn with the transport's Promote, which it counts.
type promotingConn struct {
	*fakeConn
	promotes atomic.Int32
}

func (c *promotingConn) Promote() { c.promotes.Add(1) }

// probeID is a packet id no Bedrock packet has (they run to about 0x140 and
// this one fits a one-byte header) that holder echoes, so a test can sync
// with its session.
const probeID = 0x7d

// holder keeps a logged-in player's session open and echoes probeID
// packets at once.
type holder struct{ NopHandler }

func (holder) HandlePacket(s *Session, p Packet) error {
	if p.ID != probeID {
		return nil
	}
	if err := s.WritePacket(probeID, p.Payload); err != nil {
		return err
	}
	return s.Flush()
}

// newHolder is the NewHandler of holder.
func newHolder(*Session) (Handler, error) { return holder{}, nil }

// negotiate sends RequestNetworkSettings for CurrentProtocol and reads the
// NetworkSettings answer, after which both sides compress.
func (c *fakeConn) negotiate(t *testing.T) {
	t.Helper()
	c.send(binary.BigEndian.AppendUint32(unhex(t, "fe 06 c1 01"), uint32(CurrentProtocol)))
	if pks := clientDecode(t, c.next(t), false); len(pks) != 1 || pks[0].ID != IDNetworkSettings {
		t.Fatalf("got %+v, want NetworkSettings", pks)
	}
}

// login negotiates, sends Steve's Login unencrypted and reads PlayStatus
// LoginSuccess, after which the session's handler sees what c sends.
func (c *fakeConn) login(t *testing.T) {
	t.Helper()
	c.negotiate(t)
	c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: steveLogin(t)}))
	c.expectLoginSuccess(t)
}

// expectLoginSuccess fails unless the next packet is PlayStatus
// LoginSuccess; the packets after it in the same batch are kept for next.
func (c *fakeConn) expectLoginSuccess(t *testing.T) {
	t.Helper()
	pks := clientDecode(t, c.next(t), true)
	if len(pks) == 0 || pks[0].ID != IDPlayStatus || !bytes.Equal(pks[0].Payload, []byte{0, 0, 0, 0}) {
		t.Fatalf("got %+v, want PlayStatus LoginSuccess first", pks)
	}
	if len(pks) > 1 {
		// Put the rest back as a batch of its own.
		c.unread = append(c.unread, clientBatch(t, plain, pks[1:]...))
	}
}

// sync sends a probe and waits for holder's echo: once it is back, every
// batch sent before it has been handled.
func (c *fakeConn) sync(t *testing.T) {
	t.Helper()
	c.send(clientBatch(t, plain, Packet{ID: probeID, Payload: []byte("sync")}))
	if pks := clientDecode(t, c.next(t), true); len(pks) != 1 || pks[0].ID != probeID {
		t.Fatalf("got %+v, want the probe back", pks)
	}
}

// expectDisconnect reads the next batch and fails unless it is a Disconnect
// with reason and message.
func (c *fakeConn) expectDisconnect(t *testing.T, compressed bool, reason DisconnectReason, message string) {
	t.Helper()
	pks := clientDecode(t, c.next(t), compressed)
	if len(pks) != 1 || pks[0].ID != IDDisconnect {
		t.Fatalf("got %+v, want one Disconnect", pks)
	}
	var dc disconnect
	if _, err := dc.Decode(pks[0].Payload); err != nil {
		t.Fatalf("decode Disconnect: %v", err)
	}
	if want := (disconnect{Reason: reason, Message: message}); dc != want {
		t.Errorf("got %+v, want %+v", dc, want)
	}
}

// bigLogin returns a Login packet for Steve whose client data carries a skin
// of n·9/16 bytes, base64-encoded inside the JWT that is base64-encoded
// again, as a client's is: the packet is a little over n bytes. The skin
// repeats a pseudo-random tile of 2304 bytes, a multiple of 9, so that both
// encodings repeat every 4 KiB and DEFLATE finds the repeats quickly.
func bigLogin(t testing.TB, n int) Packet {
	t.Helper()
	tile := make([]byte, 2304)
	_, _ = rand.NewChaCha8([32]byte{}).Read(tile)
	skin := bytes.Repeat(tile, n*9/16/len(tile)+1)[:n*9/16]
	chain := []string{fakeJWT(t, map[string]any{"extraData": map[string]any{"displayName": "Steve"}})}
	cd := fakeJWT(t, map[string]any{"SkinData": base64.StdEncoding.EncodeToString(skin)})
	return Packet{ID: IDLogin, Payload: loginPayload(CurrentProtocol, newFormChain(t, chain, ""), cd)}
}

// issueBomb returns the batch of issue 9: 16 KiB of DEFLATE inflating to
// 16 MiB of zeros, sent right after RequestNetworkSettings. It is built once.
func issueBomb(t testing.TB) []byte {
	t.Helper()
	issueBombOnce.Do(func() {
		issueBombBatch = append([]byte{0xfe, 0x00}, deflateBomb(t, 16<<20)...)
	})
	return issueBombBatch
}

var (
	issueBombOnce  sync.Once
	issueBombBatch []byte
)
