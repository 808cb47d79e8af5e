package session

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	gtlogin "github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// countingKey returns the key 00 01 02 … 1f.
func countingKey() [32]byte {
	var key [32]byte
	for i := range key {
		key[i] = byte(i)
	}
	return key
}

// TestCryptGolden checks the first two encrypted batches of a direction
// against bytes gophertunnel v1.62.0's packet.Encoder produced with the
// same key (counting bytes), for PlayStatus LoginSuccess then packet 0x42
// "hi", both below the compression threshold: 0xfe, then AES-CTR over the
// compression id, the packets and the 8-byte checksum.
func TestCryptGolden(t *testing.T) {
	key := countingKey()
	e := batchEncoder{compressed: true, threshold: 1 << 20, crypt: newCrypt(key)}
	d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true, crypt: newCrypt(key)}
	for i, tc := range []struct {
		packet Packet
		want   string
	}{
		{Packet{ID: IDPlayStatus, Payload: []byte{0, 0, 0, 0}}, "fe b8 07 d4 1b c5 e5 c2 4a 61 e8 5f 72 01 d7 77"},
		{Packet{ID: 0x42, Payload: []byte("hi")}, "fe 92 80 94 ef 5d 49 64 a6 5b ea 59 29 d8"},
	} {
		e.add(tc.packet)
		got, err := e.encode()
		if err != nil {
			t.Fatal(err)
		}
		if want := unhex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("batch %d: got % x, want % x", i, got, want)
		}
		pks, err := d.decode(bytes.Clone(got))
		if err != nil || !packetsEqual(pks, []Packet{tc.packet}) {
			t.Errorf("batch %d: decoded %+v, %v; want the packet back", i, pks, err)
		}
	}
}

// TestChecksumGolden checks the checksum on its own: SHA-256 of the
// counter (u64 LE), the body and the key, first 8 bytes. The want values
// are the plaintext tails of TestCryptGolden's batches, which gophertunnel
// computed.
func TestChecksumGolden(t *testing.T) {
	c := newCrypt(countingKey())
	sum0 := bytes.Clone(c.checksum(unhex(t, "ff 05 02 00 00 00 00")))
	c.counter = 1
	sum1 := bytes.Clone(c.checksum(unhex(t, "ff 03 42 68 69")))
	// Decrypting gophertunnel's batches with a fresh keystream yields the
	// bodies followed by these checksums.
	d := newCrypt(countingKey())
	b0 := unhex(t, "b8 07 d4 1b c5 e5 c2 4a 61 e8 5f 72 01 d7 77")
	b1 := unhex(t, "92 80 94 ef 5d 49 64 a6 5b ea 59 29 d8")
	d.stream.XORKeyStream(b0, b0)
	d.stream.XORKeyStream(b1, b1)
	if !bytes.Equal(b0[7:], sum0) || !bytes.Equal(b1[5:], sum1) {
		t.Errorf("checksums: got % x and % x, want % x and % x", sum0, sum1, b0[7:], b1[5:])
	}
	if !bytes.Equal(b0[:7], unhex(t, "ff 05 02 00 00 00 00")) || !bytes.Equal(b1[:5], unhex(t, "ff 03 42 68 69")) {
		t.Errorf("bodies: got % x and % x", b0[:7], b1[:5])
	}
}

// sliceWriter collects each batch written to it.
type sliceWriter struct{ out [][]byte }

func (w *sliceWriter) Write(b []byte) (int, error) {
	w.out = append(w.out, bytes.Clone(b))
	return len(b), nil
}

// sliceReader hands gophertunnel one batch at a time.
type sliceReader struct{ in [][]byte }

func (r *sliceReader) ReadPacket() ([]byte, error) {
	b := r.in[0]
	r.in = r.in[1:]
	return b, nil
}

func (r *sliceReader) Read([]byte) (int, error) { return 0, errors.ErrUnsupported }

// TestCryptInterop runs many batches, compressed and not, each way between
// the session's codec and gophertunnel's: each decodes what the other
// encoded, so counters, keystreams, checksums and the order of compression
// and encryption agree over a whole stream.
func TestCryptInterop(t *testing.T) {
	key := [32]byte{0xba, 0x5a, 0x17}
	pks := testPackets()
	frames := func(pks []Packet) [][]byte {
		var out [][]byte
		for _, p := range pks {
			out = append(out, append(appendVaruint32(nil, p.header()), p.Payload...))
		}
		return out
	}

	t.Run("session to gophertunnel", func(t *testing.T) {
		e := batchEncoder{compressed: true, threshold: 256, crypt: newCrypt(key)}
		r := &sliceReader{}
		for i := range 20 {
			for _, p := range pks[:1+i%len(pks)] {
				e.add(p)
			}
			b, err := e.encode()
			if err != nil {
				t.Fatal(err)
			}
			r.in = append(r.in, bytes.Clone(b))
		}
		d := packet.NewDecoder(r)
		d.EnableCompression(packet.FlateCompression, DefaultMaxDecompressedSize)
		d.EnableEncryption(key)
		for i := range 20 {
			got, err := d.Decode()
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			if want := frames(pks[:1+i%len(pks)]); !slicesOfBytesEqual(got, want) {
				t.Fatalf("batch %d: got %d packets, want %d equal ones", i, len(got), len(want))
			}
		}
	})

	t.Run("gophertunnel to session", func(t *testing.T) {
		w := &sliceWriter{}
		e := packet.NewEncoder(w)
		e.EnableCompression(packet.FlateCompression, 256)
		e.EnableEncryption(key)
		for i := range 20 {
			if err := e.Encode(frames(pks[:1+i%len(pks)])); err != nil {
				t.Fatal(err)
			}
		}
		d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true, crypt: newCrypt(key)}
		for i, b := range w.out {
			got, err := d.decode(b)
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			if want := pks[:1+i%len(pks)]; !packetsEqual(got, want) {
				t.Fatalf("batch %d: got %d packets, want %d equal ones", i, len(got), len(want))
			}
			d.release()
		}
	})
}

func slicesOfBytesEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestCryptOpenRefuses checks a damaged, replayed, reordered or short batch
// is refused with ErrChecksum, and never panics.
func TestCryptOpenRefuses(t *testing.T) {
	key := countingKey()
	seal := func(n int) [][]byte {
		c := newCrypt(key)
		var out [][]byte
		for i := range n {
			out = append(out, c.seal([]byte{0xfe, 0xff, 0x02, 0x42, byte(i)}))
		}
		return out
	}
	tests := []struct {
		name    string
		batches func() [][]byte // the last must be refused
	}{
		{"bit flipped in the body", func() [][]byte { b := seal(1); b[0][2] ^= 4; return b }},
		{"bit flipped in the checksum", func() [][]byte { b := seal(1); b[0][len(b[0])-1] ^= 4; return b }},
		{"replayed", func() [][]byte { b := seal(1); return [][]byte{b[0], bytes.Clone(b[0])} }},
		{"reordered", func() [][]byte { b := seal(2); return [][]byte{b[1]} }},
		{"shorter than a checksum", func() [][]byte { return [][]byte{{0xfe, 1, 2, 3}} }},
		{"only the header", func() [][]byte { return [][]byte{{0xfe}} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := batchDecoder{maxSize: DefaultMaxDecompressedSize, compressed: true, crypt: newCrypt(key)}
			bs := tc.batches()
			for i, b := range bs {
				_, err := d.decode(b)
				if i < len(bs)-1 {
					if err != nil {
						t.Fatalf("batch %d: %v", i, err)
					}
					continue
				}
				if !errors.Is(err, ErrChecksum) && !(len(b) == 1 && err != nil) {
					t.Errorf("got %v, want %v", err, ErrChecksum)
				}
			}
		})
	}
}

// TestCryptAllocs checks sealing and opening allocate nothing per batch.
func TestCryptAllocs(t *testing.T) {
	seal, open := newCrypt(countingKey()), newCrypt(countingKey())
	buf := make([]byte, 0, 1024)
	body := bytes.Repeat([]byte{7}, 900)
	n := testing.AllocsPerRun(100, func() {
		b := seal.seal(append(append(buf[:0], 0xfe), body...))
		if _, err := open.open(b[1:]); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("got %v allocs per batch, want 0", n)
	}
}

func FuzzCryptOpen(f *testing.F) {
	f.Add([]byte{})
	f.Add(unhex(f, "b8 07 d4 1b c5 e5 c2 4a 61 e8 5f 72 01 d7 77"))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := newCrypt(countingKey()).open(b)
		if err == nil && len(body) != len(b)-checksumSize {
			t.Errorf("got a body of %d bytes from %d, want %d", len(body), len(b), len(b)-checksumSize)
		}
		if err != nil && !errors.Is(err, ErrChecksum) {
			t.Errorf("got %v, want nil or %v", err, ErrChecksum)
		}
	})
}

// fixedKeys returns the server and client keys of the golden handshake:
// private scalars 01 02 … 30 and 64 65 … 93.
func fixedKeys(t *testing.T) (*ecdsa.PrivateKey, *ecdh.PrivateKey) {
	t.Helper()
	var sk, ck [48]byte
	for i := range sk {
		sk[i], ck[i] = byte(i+1), byte(100+i)
	}
	spriv, err := ecdh.P384().NewPrivateKey(sk[:])
	if err != nil {
		t.Fatal(err)
	}
	cpriv, err := ecdh.P384().NewPrivateKey(ck[:])
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(spriv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.ParsePKCS8PrivateKey(pkcs8)
	if err != nil {
		t.Fatal(err)
	}
	server, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		t.Fatalf("got a %T, want an ECDSA key", k)
	}
	return server, cpriv
}

// TestSharedKeyGolden checks the key derivation with fixed keys and salt:
// the server side (server key, client's identity public key as a Login
// carries it) gives the key the client side (client key, server key) gives,
// SHA-256(salt || ECDH secret), recorded here.
func TestSharedKeyGolden(t *testing.T) {
	server, client := fixedKeys(t)
	pkix, err := x509.MarshalPKIXPublicKey(client.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := parseClientKey(base64.StdEncoding.EncodeToString(pkix))
	if err != nil {
		t.Fatal(err)
	}
	salt := []byte("0123456789abcdef")
	got, err := sharedKey(server, pub, salt)
	if err != nil {
		t.Fatal(err)
	}
	const want = "adab77eb7f6d9476c7cfa33ac49a5b358251e73f736e7d359a99b30308f1aa4f"
	if g := hex.EncodeToString(got[:]); g != want {
		t.Errorf("got %s, want %s", g, want)
	}
	spub, err := server.PublicKey.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := client.ECDH(spub)
	if err != nil {
		t.Fatal(err)
	}
	if other := sha256.Sum256(append(salt, secret...)); other != got {
		t.Errorf("client side: got %x, want %x", other, got)
	}
}

// TestHandshakeJWT checks the ServerToClientHandshake token: ES384 header
// whose x5u gophertunnel parses as the server key, the salt in the claims,
// and an r || s signature that verifies.
func TestHandshakeJWT(t *testing.T) {
	server, _ := fixedKeys(t)
	salt := []byte("0123456789abcdef")
	tok, err := handshakeJWT(server, salt, crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("got %d parts, want 3", len(parts))
	}
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("part %q: %v", s, err)
		}
		return b
	}
	var header map[string]string
	if err := json.Unmarshal(dec(parts[0]), &header); err != nil {
		t.Fatal(err)
	}
	if len(header) != 2 || header["alg"] != "ES384" {
		t.Errorf("header: got %v, want alg ES384 and x5u", header)
	}
	var x5u ecdsa.PublicKey
	if err := gtlogin.ParsePublicKey(header["x5u"], &x5u); err != nil {
		t.Fatalf("x5u: %v", err)
	}
	if !x5u.Equal(&server.PublicKey) {
		t.Error("x5u: got another key than the server's")
	}
	if got, want := string(dec(parts[1])), `{"salt":"MDEyMzQ1Njc4OWFiY2RlZg=="}`; got != want {
		t.Errorf("claims: got %s, want %s", got, want)
	}
	sig := dec(parts[2])
	digest := sha512.Sum384([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 96 || !ecdsa.Verify(&x5u, digest[:], new(big.Int).SetBytes(sig[:48]), new(big.Int).SetBytes(sig[48:])) {
		t.Errorf("signature of %d bytes does not verify", len(sig))
	}
}

func TestServerToClientHandshakeCodec(t *testing.T) {
	testCodec(t, serverToClientHandshake{JWT: []byte("a.b.c")}, "05 61 2e 62 2e 63")
}

func TestParseClientKeyRefuses(t *testing.T) {
	p256, err := newTestKey(t, "P-256")
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&p256.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"", "!!", "AAAA", base64.StdEncoding.EncodeToString(der)} {
		if _, err := parseClientKey(k); err == nil {
			t.Errorf("%q: got nil, want an error", k)
		}
	}
}
