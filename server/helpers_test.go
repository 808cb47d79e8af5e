package server

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/internal/servertest"
	"github.com/basaltmc/basalt/session"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 5 * time.Second

// startServer starts a server for c on a loopback port (IPv4 unless c sets
// addresses) and closes it when the test ends. The server is in offline mode
// unless c points online mode at a local issuer (c.Auth.DiscoveryURL): no
// test reaches the real authentication service.
func startServer(t *testing.T, c Config) *Server {
	t.Helper()
	if c.Network.AddressV4 == "" && c.Network.AddressV6 == "" {
		c.Network.AddressV4 = "127.0.0.1:0"
	}
	offline(&c)
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// offline puts c in offline mode unless it points online mode at a local
// issuer, and turns encryption off: the hand-written client of these
// tests speaks the pre-game protocol in the clear. Encryption itself is
// tested with gophertunnel's client (encryption_test.go).
func offline(c *Config) {
	if c.Auth.DiscoveryURL == "" {
		c.AuthenticationDisabled = true
	}
	c.EncryptionDisabled = true
}

// gameAddr returns the address of srv's first game listener.
func gameAddr(t *testing.T, srv *Server) string {
	t.Helper()
	as := srv.Addrs()
	if len(as) == 0 {
		t.Fatal("server has no game listener")
	}
	return as[0].String()
}

// ping returns the MOTD the server at addr answers with.
func ping(t *testing.T, addr string) motd.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := raknet.Dialer{}.PingContext(ctx, addr)
	if err != nil {
		t.Fatalf("ping %s: %v", addr, err)
	}
	st, err := motd.Parse(b)
	if err != nil {
		t.Fatalf("parse MOTD %q: %v", b, err)
	}
	return st
}

// waitFor polls cond until it holds, failing the test after testTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	servertest.WaitFor(t, what, testTimeout, cond)
}

// syncBuffer is the log sink of the package's tests.
type syncBuffer = servertest.SyncBuffer

// client is a hand-rolled Bedrock client over a raknet.Conn: it writes and
// reads 0xfe batches without compression (enough for handlers that never
// send NetworkSettings) and understands the compression id byte once it has
// seen NetworkSettings.
type client struct {
	t          *testing.T
	conn       *raknet.Conn
	compressed bool
	pending    []packet
	probes     uint64 // probes sent, numbering the next one
}

// packet is one game packet a client read.
type packet struct {
	id      uint32
	payload []byte
}

// dial connects a client to addr, closing it when the test ends.
func dial(t *testing.T, addr string, d raknet.Dialer) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := d.DialContext(ctx, addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{t: t, conn: c}
}

// send writes one batch holding the packet id with payload.
func (c *client) send(id uint32, payload []byte) {
	c.t.Helper()
	b := []byte{0xfe}
	if c.compressed {
		b = append(b, 0xff)
	}
	pk := binary.AppendUvarint(nil, uint64(id))
	pk = append(pk, payload...)
	b = binary.AppendUvarint(b, uint64(len(pk)))
	b = append(b, pk...)
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("write batch: %v", err)
	}
}

// next returns the next packet the server sent, or the error that ended
// the connection.
func (c *client) next() (packet, error) {
	for len(c.pending) == 0 {
		_ = c.conn.SetReadDeadline(time.Now().Add(testTimeout))
		b, err := c.conn.ReadPacket()
		if err != nil {
			return packet{}, err
		}
		pks, err := decodeBatch(b, c.compressed)
		if err != nil {
			c.t.Fatalf("decode batch % x: %v", b, err)
		}
		c.pending = pks
	}
	p := c.pending[0]
	c.pending = c.pending[1:]
	if p.id == session.IDNetworkSettings {
		c.compressed = true
	}
	return p, nil
}

// expect returns the next packet, failing unless it has the id.
func (c *client) expect(id uint32) packet {
	c.t.Helper()
	p, err := c.next()
	if err != nil {
		c.t.Fatalf("reading packet %#x: %v", id, err)
	}
	if p.id != id {
		c.t.Fatalf("got packet %#x (% x), want %#x", p.id, p.payload, id)
	}
	return p
}

// sync sends a probe and waits for its echo. A session handles its
// client's packets one at a time, in order, so once the echo is back every
// packet c sent before it has been handled, the server's bookkeeping for
// it (a Login's player slot) included. The session's handler must echo
// probeID as holdHandler does.
func (c *client) sync() {
	c.t.Helper()
	c.probes++
	want := binary.AppendUvarint(nil, c.probes)
	c.send(probeID, want)
	if p := c.expect(probeID); !bytes.Equal(p.payload, want) {
		c.t.Fatalf("probe echo: got % x, want % x", p.payload, want)
	}
}

// expectClosed fails unless the server closes the connection without
// sending another packet.
func (c *client) expectClosed() {
	c.t.Helper()
	p, err := c.next()
	if err == nil {
		c.t.Fatalf("got packet %#x, want the connection closed", p.id)
	}
	if !errors.Is(err, net.ErrClosed) {
		c.t.Fatalf("got %v, want the connection closed", err)
	}
}

// decodeBatch splits a 0xfe batch into packets, by hand: 0xfe, then a
// compression id if compressed (0xff none, 0x00 raw DEFLATE), then
// varuint32-length-prefixed packets whose varuint32 header holds the id in
// its low 10 bits.
func decodeBatch(b []byte, compressed bool) ([]packet, error) {
	if len(b) == 0 || b[0] != 0xfe {
		return nil, errors.New("not a 0xfe batch")
	}
	b = b[1:]
	if compressed {
		if len(b) == 0 {
			return nil, io.ErrUnexpectedEOF
		}
		switch b[0] {
		case 0xff:
			b = b[1:]
		case 0x00:
			var err error
			if b, err = io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(b[1:])), 1<<20)); err != nil {
				return nil, fmt.Errorf("inflate: %w", err)
			}
		default:
			return nil, fmt.Errorf("compression id %#x", b[0])
		}
	}
	var pks []packet
	for len(b) > 0 {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, errors.New("bad packet length")
		}
		pk := b[n : n+int(l)]
		b = b[n+int(l):]
		h, m := binary.Uvarint(pk)
		if m <= 0 {
			return nil, errors.New("bad packet header")
		}
		pks = append(pks, packet{id: uint32(h) & 0x3ff, payload: pk[m:]})
	}
	return pks, nil
}

// disconnectMsg decodes a Disconnect payload: zigzag varint32 reason, hide
// bool, then message and filtered message strings.
func disconnectMsg(t *testing.T, payload []byte) (session.DisconnectReason, string) {
	t.Helper()
	reason, n := binary.Varint(payload)
	if n <= 0 || len(payload) < n+1 {
		t.Fatalf("bad Disconnect % x", payload)
	}
	rest := payload[n+1:]
	if payload[n] != 0 {
		return session.DisconnectReason(reason), ""
	}
	l, m := binary.Uvarint(rest)
	if m <= 0 || l > uint64(len(rest)-m) {
		t.Fatalf("bad Disconnect message % x", payload)
	}
	return session.DisconnectReason(reason), string(rest[m : m+int(l)])
}

// probeID is the packet a logged-in client sends to sync with its session,
// and holdHandler echoes. Bedrock gives no packet this id (they run to
// about 0x140).
const probeID = 0x3fe

// holdHandler keeps every session open and ignores every packet but
// probeID, which it echoes at once, so a session stays a player once the
// server has admitted it and a client can sync with it.
type holdHandler struct{ session.NopHandler }

// newHold is the NewHandler of holdHandler.
func newHold(*session.Session) (session.Handler, error) { return holdHandler{}, nil }

// negotiate sends RequestNetworkSettings for the current protocol and reads
// NetworkSettings: the session is running once it returns.
func (c *client) negotiate() {
	c.t.Helper()
	c.send(session.IDRequestNetworkSettings, binary.BigEndian.AppendUint32(nil, uint32(session.CurrentProtocol)))
	c.expect(session.IDNetworkSettings)
}

// sendLogin negotiates (unless c has already) and sends an unencrypted
// Login naming name, as an offline client does.
func (c *client) sendLogin(name string) {
	c.t.Helper()
	if !c.compressed {
		c.negotiate()
	}
	jwt := func(claims string) string {
		enc := base64.RawURLEncoding
		return enc.EncodeToString([]byte(`{"alg":"ES384"}`)) + "." + enc.EncodeToString([]byte(claims)) + ".c2ln"
	}
	chain := `{"chain":["` + jwt(`{"extraData":{"displayName":"`+name+`"}}`) + `"]}`
	clientData := jwt(`{"DeviceOS":7}`)
	var req []byte
	req = binary.LittleEndian.AppendUint32(req, uint32(len(chain)))
	req = append(req, chain...)
	req = binary.LittleEndian.AppendUint32(req, uint32(len(clientData)))
	req = append(req, clientData...)
	pk := binary.BigEndian.AppendUint32(nil, uint32(session.CurrentProtocol))
	pk = binary.AppendUvarint(pk, uint64(len(req)))
	c.send(session.IDLogin, append(pk, req...))
}

// login logs in as name and reads PlayStatus LoginSuccess: the server has
// admitted the player once it returns.
func (c *client) login(name string) {
	c.t.Helper()
	c.sendLogin(name)
	if p := c.expect(session.IDPlayStatus); !bytes.Equal(p.payload, []byte{0, 0, 0, 0}) {
		c.t.Fatalf("got PlayStatus % x, want LoginSuccess", p.payload)
	}
}

// HandlePacket echoes a probeID packet and ignores every other.
func (holdHandler) HandlePacket(s *session.Session, p session.Packet) error {
	if p.ID != probeID {
		return nil
	}
	if err := s.WritePacket(probeID, p.Payload); err != nil {
		return err
	}
	return s.Flush()
}
