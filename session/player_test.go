package session

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	gtlogin "github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// player is a test client over a fakeConn whose batches are encoded,
// compressed and encrypted by gophertunnel's packet.Encoder and Decoder,
// not by the session's own codec, and whose side of the handshake is
// written here from the protocol's description: it checks the session
// against an implementation it shares no code with.
type player struct {
	t     *testing.T
	c     *fakeConn
	enc   *packet.Encoder
	dec   *packet.Decoder
	queue []Packet
	// tamper, if set, changes each batch before it is sent.
	tamper func(b []byte) []byte
}

// playerWriter hands each batch gophertunnel encodes to the session.
type playerWriter struct{ p *player }

func (w playerWriter) Write(b []byte) (int, error) {
	b = bytes.Clone(b)
	if w.p.tamper != nil {
		b = w.p.tamper(b)
	}
	w.p.c.send(b)
	return len(b), nil
}

// connReader hands gophertunnel each batch the session wrote.
type connReader struct {
	t *testing.T
	c *fakeConn
}

func (r connReader) ReadPacket() ([]byte, error) { return r.c.next(r.t), nil }

// Read is never called: gophertunnel reads a PacketReader with ReadPacket.
func (r connReader) Read([]byte) (int, error) { return 0, errors.ErrUnsupported }

func newPlayer(t *testing.T, c *fakeConn) *player {
	p := &player{t: t, c: c, dec: packet.NewDecoder(connReader{t, c})}
	p.enc = packet.NewEncoder(playerWriter{p})
	return p
}

// newTestServerKey returns a new P-384 key.
func newTestServerKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P384(), crand.Reader)
}

// newTestKey returns a new key on the named curve.
func newTestKey(t *testing.T, curve string) (*ecdsa.PrivateKey, error) {
	t.Helper()
	c := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384()}[curve]
	return ecdsa.GenerateKey(c, crand.Reader)
}

// send writes pks as one batch.
func (p *player) send(pks ...Packet) {
	p.t.Helper()
	var frames [][]byte
	for _, pk := range pks {
		b := binary.AppendUvarint(nil, uint64(pk.header()))
		frames = append(frames, append(b, pk.Payload...))
	}
	if err := p.enc.Encode(frames); err != nil {
		p.t.Fatalf("encode: %v", err)
	}
}

// recv returns the next packet the session sent.
func (p *player) recv() Packet {
	p.t.Helper()
	for len(p.queue) == 0 {
		frames, err := p.dec.Decode()
		if err != nil {
			p.t.Fatalf("decode: %v", err)
		}
		for _, f := range frames {
			h, n := binary.Uvarint(f)
			if n <= 0 {
				p.t.Fatalf("bad header in % x", f)
			}
			id, sender, target := parseHeader(uint32(h))
			p.queue = append(p.queue, Packet{ID: id, Sender: sender, Target: target, Payload: f[n:]})
		}
	}
	pk := p.queue[0]
	p.queue = p.queue[1:]
	return pk
}

// expect returns the next packet, failing unless it has the id.
func (p *player) expect(id uint32) Packet {
	p.t.Helper()
	pk := p.recv()
	if pk.ID != id {
		p.t.Fatalf("got packet %#x (% x), want %#x", pk.ID, pk.Payload, id)
	}
	return pk
}

// expectDisconnect fails unless the next packet is a Disconnect with reason
// and message.
func (p *player) expectDisconnect(reason DisconnectReason, message string) {
	p.t.Helper()
	var dc disconnect
	if _, err := dc.Decode(p.expect(IDDisconnect).Payload); err != nil {
		p.t.Fatalf("decode Disconnect: %v", err)
	}
	if want := (disconnect{Reason: reason, Message: message}); dc != want {
		p.t.Errorf("got %+v, want %+v", dc, want)
	}
}

// negotiate sends RequestNetworkSettings and switches compression on as
// the NetworkSettings answer says.
func (p *player) negotiate() {
	p.t.Helper()
	rns := requestNetworkSettings{ClientProtocol: CurrentProtocol}
	p.send(Packet{ID: IDRequestNetworkSettings, Payload: rns.Append(nil)})
	var ns networkSettings
	if _, err := ns.Decode(p.expect(IDNetworkSettings).Payload); err != nil {
		p.t.Fatal(err)
	}
	p.enc.EnableCompression(packet.FlateCompression, int(ns.CompressionThreshold))
	p.dec.EnableCompression(packet.FlateCompression, DefaultMaxDecompressedSize)
}

// login logs Steve in, with the encryption handshake if encrypted, up to
// PlayStatus LoginSuccess. It returns the key the handshake agreed on.
func (p *player) login(encrypted bool) [32]byte {
	p.t.Helper()
	p.negotiate()
	p.send(Packet{ID: IDLogin, Payload: steveLogin(p.t)})
	var key [32]byte
	if encrypted {
		var hs serverToClientHandshake
		if _, err := hs.Decode(p.expect(IDServerToClientHandshake).Payload); err != nil {
			p.t.Fatal(err)
		}
		key = p.clientKey(string(hs.JWT))
		p.enc.EnableEncryption(key)
		p.dec.EnableEncryption(key)
		p.send(Packet{ID: IDClientToServerHandshake})
	}
	if ps := p.expect(IDPlayStatus); !bytes.Equal(ps.Payload, []byte{0, 0, 0, 0}) {
		p.t.Fatalf("got PlayStatus % x, want LoginSuccess", ps.Payload)
	}
	return key
}

// clientKey checks the ServerToClientHandshake JWT as a client does and
// derives the key from the client's side: ECDH of the client key and the
// server key from x5u, hashed after the salt.
func (p *player) clientKey(jwt string) [32]byte {
	p.t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		p.t.Fatalf("JWT %q: got %d parts, want 3", jwt, len(parts))
	}
	seg := func(i int) []byte {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			p.t.Fatalf("JWT part %d: %v", i, err)
		}
		return b
	}
	var header struct {
		Alg string `json:"alg"`
		X5U string `json:"x5u"`
	}
	if err := json.Unmarshal(seg(0), &header); err != nil || header.Alg != "ES384" {
		p.t.Fatalf("JWT header %s: got alg %q (%v), want ES384", seg(0), header.Alg, err)
	}
	var pub ecdsa.PublicKey
	if err := gtlogin.ParsePublicKey(header.X5U, &pub); err != nil {
		p.t.Fatalf("x5u: %v", err)
	}
	digest := sha512.Sum384([]byte(parts[0] + "." + parts[1]))
	sig := seg(2)
	if len(sig) != 96 || !ecdsa.Verify(&pub, digest[:], new(big.Int).SetBytes(sig[:48]), new(big.Int).SetBytes(sig[48:])) {
		p.t.Fatalf("JWT signature of %d bytes does not verify with x5u", len(sig))
	}
	var claims struct {
		Salt string `json:"salt"`
	}
	if err := json.Unmarshal(seg(1), &claims); err != nil {
		p.t.Fatal(err)
	}
	salt, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(claims.Salt, "="))
	if err != nil || len(salt) != 16 {
		p.t.Fatalf("salt %q: got %d bytes (%v), want 16", claims.Salt, len(salt), err)
	}
	priv, err := testClientKey().ECDH()
	if err != nil {
		p.t.Fatal(err)
	}
	spub, err := pub.ECDH()
	if err != nil {
		p.t.Fatal(err)
	}
	secret, err := priv.ECDH(spub)
	if err != nil {
		p.t.Fatal(err)
	}
	return sha256.Sum256(append(salt, secret...))
}
