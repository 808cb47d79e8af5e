package packets_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/basaltmc/basalt/session/packets/packetstest"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// wait bounds every wait on the session under test.
const wait = 5 * time.Second

// recorder is a typed handler that sends what it gets on a channel.
type recorder struct {
	packets.NopTypedHandler
	got    chan packet.Packet
	closed chan error
}

func newRecorder() *recorder {
	return &recorder{got: make(chan packet.Packet, 16), closed: make(chan error, 2)}
}

func (r *recorder) HandlePacket(_ *session.Session, pk packet.Packet) error {
	r.got <- pk
	return nil
}

func (r *recorder) HandleClose(_ *session.Session, err error) { r.closed <- err }

func (r *recorder) next(t *testing.T) packet.Packet {
	t.Helper()
	select {
	case pk := <-r.got:
		return pk
	case <-time.After(wait):
		t.Fatal("handler got no packet")
		return nil
	}
}

// rawRecorder also sees packets raw, and takes those with id rawID.
type rawRecorder struct {
	*recorder
	raw chan session.Packet
}

const rawID = 0x3f0

func (r rawRecorder) HandleRawPacket(_ *session.Session, p session.Packet) (bool, error) {
	if p.ID != rawID {
		return false, nil
	}
	p.Payload = append([]byte(nil), p.Payload...)
	r.raw <- p
	return true, nil
}

// lenient skips packets that do not decode.
type lenient struct {
	*recorder
	errs chan error
}

func (l lenient) HandleDecodeError(_ *session.Session, _ session.Packet, err error) error {
	l.errs <- err
	return nil
}

// serve runs a session over a Pipe whose handler is h adapted, with the
// packets in greet written from NewHandler, and logs a client in. It
// returns the client and the channel Run's error arrives on.
func serve(t *testing.T, h packets.TypedHandler, greet ...packet.Packet) (*packetstest.Client, <-chan error) {
	t.Helper()
	c, ran, _ := serveLogged(t, h, nil, greet...)
	return c, ran
}

// serveLogged is serve with the session's log going to log, and the session
// returned too.
func serveLogged(t *testing.T, h packets.TypedHandler, log *zerolog.Logger, greet ...packet.Packet) (*packetstest.Client, <-chan error, *session.Session) {
	t.Helper()
	server, client := packetstest.Pipe()
	codec := packets.Codec{}
	s := session.New(server, session.Config{
		Log: log,
		NewHandler: func(s *session.Session) (session.Handler, error) {
			for _, pk := range greet {
				if err := codec.Write(s, pk); err != nil {
					return nil, err
				}
			}
			return packets.Adapt(h, codec), nil
		},
	})
	ran := make(chan error, 1)
	go func() { ran <- s.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = s.Close()
		<-s.Done()
	})
	c, err := packetstest.Login(client, "Steve", wait)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return c, ran, s
}

// serverPackets are packets a server writes, for the client to read back.
func serverPackets() []packet.Packet {
	return []packet.Packet{
		&packet.PlayStatus{Status: packet.PlayStatusPlayerSpawn},
		&packet.Text{TextType: packet.TextTypeRaw, Message: "Welcome, Steve!", XUID: "", PlatformChatID: ""},
		&packet.Text{TextType: packet.TextTypeChat, SourceName: "Alex", Message: "hi"},
	}
}

// clientPackets are packets a client sends, for the handler to get typed.
func clientPackets() []packet.Packet {
	return []packet.Packet{
		&packet.Text{TextType: packet.TextTypeChat, SourceName: "Steve", Message: "hello there"},
		&packet.SetLocalPlayerAsInitialised{EntityRuntimeID: 7},
		&packet.RequestChunkRadius{ChunkRadius: 12, MaxChunkRadius: 16},
		&packet.CommandRequest{
			CommandLine:   "/list",
			CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer, UUID: uuid.New()},
			Version:       "latest",
		},
	}
}

func TestRoundTripThroughSession(t *testing.T) {
	rec := newRecorder()
	c, _ := serve(t, rec, serverPackets()...)
	for _, want := range serverPackets() {
		got, err := c.Expect(wait, func(packet.Packet) bool { return true })
		if err != nil {
			t.Fatalf("client read: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("client got %#v, want %#v", got, want)
		}
	}
	for _, want := range clientPackets() {
		if err := c.WritePacket(want); err != nil {
			t.Fatalf("client write %T: %v", want, err)
		}
		if got := rec.next(t); !reflect.DeepEqual(got, want) {
			t.Errorf("handler got %#v, want %#v", got, want)
		}
	}
}

func TestRawPacketsGetThrough(t *testing.T) {
	rec := rawRecorder{recorder: newRecorder(), raw: make(chan session.Packet, 4)}
	c, ran := serve(t, rec)
	// An id the packet library does not know, handled raw; then a packet
	// that decodes, which the raw handler lets by.
	if err := c.WriteRaw([]byte{0xf0, 0x07, 0xca, 0xfe}); err != nil {
		t.Fatal(err)
	}
	if err := c.WritePacket(&packet.RequestChunkRadius{ChunkRadius: 4, MaxChunkRadius: 4}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-rec.raw:
		if p.ID != rawID || string(p.Payload) != "\xca\xfe" {
			t.Errorf("raw handler got %#x % x, want %#x ca fe", p.ID, p.Payload, rawID)
		}
	case <-time.After(wait):
		t.Fatal("raw handler got nothing")
	}
	if pk, ok := rec.next(t).(*packet.RequestChunkRadius); !ok || pk.ChunkRadius != 4 {
		t.Errorf("typed handler got %#v, want RequestChunkRadius 4", pk)
	}
	select {
	case err := <-ran:
		t.Fatalf("session ended: %v", err)
	default:
	}
}

// TestUndecodablePacketIsSkipped checks that a packet the codec cannot read
// does not end the session: it is counted, logged once per ID at debug
// level, and the packets after it reach the handler.
func TestUndecodablePacketIsSkipped(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want error
	}{
		// Header 0x3f0: no such packet.
		{"unknown", []byte{0xf0, 0x07, 1, 2}, packets.ErrUnknownPacket},
		// PlayStatus, which only a server sends: the client pool lacks it.
		{"server-only", []byte{byte(packet.IDPlayStatus), 0, 0, 0, 3}, packets.ErrUnknownPacket},
		// RequestChunkRadius whose varint never ends.
		{"malformed", []byte{byte(packet.IDRequestChunkRadius), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, packets.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			log := zerolog.New(&logs).Level(zerolog.DebugLevel)
			rec := newRecorder()
			c, ran, s := serveLogged(t, rec, &log)
			// Twice: counted twice, logged once.
			for range 2 {
				if err := c.WriteRaw(tc.raw); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.WritePacket(&packet.RequestChunkRadius{ChunkRadius: 2, MaxChunkRadius: 2}); err != nil {
				t.Fatal(err)
			}
			if _, ok := rec.next(t).(*packet.RequestChunkRadius); !ok {
				t.Error("the packet after the skipped ones did not arrive")
			}
			if got := s.Stats().PacketsSkipped; got != 2 {
				t.Errorf("PacketsSkipped: got %d, want 2", got)
			}
			if got := strings.Count(logs.String(), `"message":"packet skipped"`); got != 1 {
				t.Errorf("got %d \"packet skipped\" lines, want 1:\n%s", got, logs.String())
			}
			if !strings.Contains(logs.String(), tc.want.Error()) {
				t.Errorf("log does not say %q:\n%s", tc.want, logs.String())
			}
			select {
			case err := <-ran:
				t.Fatalf("session ended: %v", err)
			case err := <-rec.closed:
				t.Fatalf("HandleClose called: %v", err)
			default:
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the session's goroutine to log to
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestDecodeErrorHandlerSkips(t *testing.T) {
	rec := lenient{recorder: newRecorder(), errs: make(chan error, 4)}
	c, ran := serve(t, rec)
	if err := c.WriteRaw([]byte{byte(packet.IDText), 0, 0, 0xee}); err != nil {
		t.Fatal(err)
	}
	if err := c.WritePacket(&packet.RequestChunkRadius{ChunkRadius: 2, MaxChunkRadius: 2}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-rec.errs:
		if !errors.Is(err, packets.ErrMalformed) {
			t.Errorf("got %v, want ErrMalformed", err)
		}
	case <-time.After(wait):
		t.Fatal("HandleDecodeError not called")
	}
	if _, ok := rec.next(t).(*packet.RequestChunkRadius); !ok {
		t.Error("the packet after a skipped one did not arrive")
	}
	select {
	case err := <-ran:
		t.Fatalf("session ended: %v", err)
	default:
	}
}
