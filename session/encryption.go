package session

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
)

// Bedrock's encryption, as gophertunnel v1.62.0 implements it
// (minecraft/conn.go enableEncryption and encryptionKey;
// protocol/packet/encoder.go, decoder.go and encryption.go) and BDS speaks:
//
//   - After Login the server sends ServerToClientHandshake, a JWT signed
//     with ES384 by the server's P-384 key, whose header's x5u is that key
//     (base64 of its PKIX DER) and whose claims hold "salt", 16 random bytes
//     in base64. That batch leaves unencrypted; every later one is
//     encrypted, in both directions.
//   - key = SHA-256(salt || ECDH(server key, client key)), where the client
//     key is the identity public key its Login carried.
//   - Each direction runs AES-256-CTR from IV = key[:12] || 00 00 00 02,
//     one keystream across all its batches.
//   - An encrypted batch is 0xfe || AES-CTR(body || checksum): body is what
//     follows 0xfe in a plain batch (the compression id and the payload,
//     compressed or not), and checksum = SHA-256(counter as u64 LE || body
//     || key)[:8], counter being the batches this direction has sent
//     before, from 0.
const (
	// saltSize is the size of the handshake's salt.
	saltSize = 16
	// checksumSize is the size of a batch's checksum.
	checksumSize = 8
	// p384CoordSize is the size of one P-384 coordinate, and of r and s in
	// an ES384 signature.
	p384CoordSize = 48
)

// ErrChecksum is wrapped by the error Run returns when an encrypted batch
// from the client did not carry the checksum its contents and position
// call for: the stream is corrupt or forged, and the session ends.
var ErrChecksum = errors.New("batch checksum mismatch")

// crypt is one direction of a session's encryption: the AES-CTR keystream
// and the batch counter. It is owned by one goroutine (or guarded by its
// owner's lock) and allocates nothing per batch.
type crypt struct {
	key     [32]byte
	stream  cipher.Stream
	counter uint64
	h       hash.Hash
	// ctr and sum are scratch space, kept here so that hashing them does
	// not make them escape.
	ctr [8]byte
	sum [sha256.Size]byte
}

// newCrypt returns the state of one direction for key.
func newCrypt(key [32]byte) *crypt {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	var iv [aes.BlockSize]byte
	copy(iv[:12], key[:12])
	iv[15] = 2
	return &crypt{key: key, stream: cipher.NewCTR(block, iv[:]), h: sha256.New()}
}

// checksum returns the checksum of body as the batch numbered c.counter.
func (c *crypt) checksum(body []byte) []byte {
	binary.LittleEndian.PutUint64(c.ctr[:], c.counter)
	c.h.Reset()
	c.h.Write(c.ctr[:])
	c.h.Write(body)
	c.h.Write(c.key[:])
	return c.h.Sum(c.sum[:0])[:checksumSize]
}

// seal appends body's checksum to batch (0xfe || body) and encrypts
// everything after the 0xfe in place, returning the extended batch.
func (c *crypt) seal(batch []byte) []byte {
	return c.sealFrom(batch, 1)
}

// sealFrom is seal for a batch whose encrypted part starts at off: 1 after
// the 0xfe header, 0 over a transport that frames batches itself.
func (c *crypt) sealFrom(batch []byte, off int) []byte {
	batch = append(batch, c.checksum(batch[off:])...)
	c.counter++
	c.stream.XORKeyStream(batch[off:], batch[off:])
	return batch
}

// open decrypts b (what follows a batch's 0xfe) in place, checks its
// checksum and returns the body without it. An error ends the session:
// the keystream has moved on and cannot be rewound.
func (c *crypt) open(b []byte) ([]byte, error) {
	c.stream.XORKeyStream(b, b)
	if len(b) < checksumSize {
		c.counter++
		return nil, fmt.Errorf("%w: batch of %d bytes has no room for one", ErrChecksum, len(b))
	}
	body, got := b[:len(b)-checksumSize], b[len(b)-checksumSize:]
	want := c.checksum(body)
	c.counter++
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return nil, fmt.Errorf("%w (batch %d)", ErrChecksum, c.counter-1)
	}
	return body, nil
}

// processKey is the server key of sessions whose Config has none: made
// the first time a session needs it and shared by every session after.
var processKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("session: generate server key: %v", err)) // crypto/rand does not fail
	}
	return k
})

// parseClientKey parses a Login's identity public key: base64 (standard
// alphabet, padding optional) of a PKIX DER P-384 key.
func parseClientKey(b64 string) (*ecdh.PublicKey, error) {
	ek, err := ParsePublicKey(b64)
	if err != nil {
		return nil, err
	}
	k, err := ek.ECDH()
	if err != nil {
		return nil, fmt.Errorf("identity public key: %w", err)
	}
	return k, nil
}

// sharedKey returns the encryption key of a session: SHA-256 of the salt
// and the ECDH secret of the server key and the client key.
func sharedKey(server *ecdsa.PrivateKey, client *ecdh.PublicKey, salt []byte) ([32]byte, error) {
	priv, err := server.ECDH()
	if err != nil {
		return [32]byte{}, fmt.Errorf("server key: %w", err)
	}
	secret, err := priv.ECDH(client)
	if err != nil {
		return [32]byte{}, fmt.Errorf("ECDH: %w", err)
	}
	h := sha256.New()
	h.Write(salt)
	h.Write(secret)
	var key [32]byte
	h.Sum(key[:0])
	return key, nil
}

// handshakeJWT returns the compact JWT of a ServerToClientHandshake:
// header {"alg":"ES384","x5u":<server key>}, claims {"salt":<salt>}, both
// base64 with padding as BDS and PocketMine-MP send them, signed with key.
func handshakeJWT(key *ecdsa.PrivateKey, salt []byte, random io.Reader) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("server key: %w", err)
	}
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		X5U string `json:"x5u"`
	}{"ES384", base64.StdEncoding.EncodeToString(der)})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(struct {
		Salt string `json:"salt"`
	}{base64.StdEncoding.EncodeToString(salt)})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	digest := sha512.Sum384([]byte(signed))
	r, s, err := ecdsa.Sign(random, key, digest[:])
	if err != nil {
		return "", fmt.Errorf("sign handshake: %w", err)
	}
	// JWS (RFC 7518 §3.4) signs with r || s, each left-padded to the
	// coordinate size, not with ASN.1.
	var sig [2 * p384CoordSize]byte
	r.FillBytes(sig[:p384CoordSize])
	s.FillBytes(sig[p384CoordSize:])
	return signed + "." + enc.EncodeToString(sig[:]), nil
}

// serverToClientHandshake is the ServerToClientHandshake packet (0x03):
//
//	JWT  varuint32 length | bytes
type serverToClientHandshake struct {
	JWT []byte
}

// Append appends the packet's fields to b.
func (m *serverToClientHandshake) Append(b []byte) []byte {
	b = appendVaruint32(b, uint32(len(m.JWT)))
	return append(b, m.JWT...)
}

// Decode reads the packet's fields from b and returns the bytes consumed.
// JWT aliases b.
func (m *serverToClientHandshake) Decode(b []byte) (int, error) {
	l, n, err := readVaruint32(b)
	if err != nil {
		return 0, fmt.Errorf("decode SERVER_TO_CLIENT_HANDSHAKE: JWT length: %w", err)
	}
	if uint64(l) > uint64(len(b)-n) {
		return 0, fmt.Errorf("decode SERVER_TO_CLIENT_HANDSHAKE: JWT length %d exceeds remaining %d: %w",
			l, len(b)-n, io.ErrUnexpectedEOF)
	}
	end := n + int(l)
	m.JWT = b[n:end:end]
	return end, nil
}
