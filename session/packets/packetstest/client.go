package packetstest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/google/uuid"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// Client is a bare Bedrock client over an End, built from gophertunnel's
// batch encoder and decoder and its packet types: it logs in offline and
// then sends and reads whatever packets a test asks for, with none of the
// join sequence gophertunnel's own client insists on. It has no
// encryption. A Client is for one goroutine at a time.
type Client struct {
	conn    *End
	enc     *packet.Encoder
	dec     *packet.Decoder
	pool    packet.Pool
	pending [][]byte
	// ShieldID is the shield item runtime ID used to read and write item
	// stacks; 0 until a test sets it.
	ShieldID int32
	// Protocol is the network protocol the client speaks, and reads and
	// writes packets in.
	Protocol int32
}

// codec returns the client's codec.
func (c *Client) codec() packets.Codec {
	return packets.Codec{ShieldID: c.ShieldID, Protocol: c.Protocol}
}

// Login logs in over conn as name at packets.BaseProtocol; see
// LoginProtocol.
func Login(conn *End, name string, timeout time.Duration) (*Client, error) {
	return LoginProtocol(conn, name, packets.BaseProtocol, timeout)
}

// LoginProtocol logs in over conn as name, speaking network protocol p, one
// of packets.Protocols: RequestNetworkSettings, NetworkSettings
// (compression on from then), Login with an offline, self-signed token,
// and PlayStatus LoginSuccess. It fails if the server answers anything
// else first or nothing by timeout.
func LoginProtocol(conn *End, name string, p int32, timeout time.Duration) (*Client, error) {
	c := &Client{
		Protocol: p,
		conn:     conn,
		enc:      packet.NewEncoder(conn),
		dec:      packet.NewDecoder(conn),
		pool:     packet.NewServerPool(),
	}
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	defer conn.SetReadDeadline(time.Time{})

	if err := c.WritePacket(&packet.RequestNetworkSettings{ClientProtocol: p}); err != nil {
		return nil, err
	}
	pk, err := c.ReadPacket()
	if err != nil {
		return nil, fmt.Errorf("read NetworkSettings: %w", err)
	}
	settings, ok := pk.(*packet.NetworkSettings)
	if !ok {
		return nil, fmt.Errorf("got %T, want NetworkSettings", pk)
	}
	compression, ok := packet.CompressionByID(settings.CompressionAlgorithm)
	if !ok {
		return nil, fmt.Errorf("unknown compression %d", settings.CompressionAlgorithm)
	}
	c.enc.EnableCompression(compression, int(settings.CompressionThreshold))
	c.dec.EnableCompression(compression, math.MaxInt32)

	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, err
	}
	id := login.IdentityData{DisplayName: name, Identity: uuid.NewString()}
	data := login.ClientData{
		GameVersion:      protocol.CurrentVersion,
		LanguageCode:     "en_GB",
		ServerAddress:    "127.0.0.1:19132",
		ThirdPartyName:   name,
		DeviceOS:         protocol.DeviceAndroid,
		DefaultInputMode: packet.InputModeTouch,
		CurrentInputMode: packet.InputModeTouch,
	}
	request := login.EncodeOffline(id, data, key, false)
	if err := c.WritePacket(&packet.Login{ClientProtocol: p, ConnectionRequest: request}); err != nil {
		return nil, err
	}
	pk, err = c.ReadPacket()
	if err != nil {
		return nil, fmt.Errorf("read PlayStatus: %w", err)
	}
	if ps, ok := pk.(*packet.PlayStatus); !ok || ps.Status != packet.PlayStatusLoginSuccess {
		return nil, fmt.Errorf("got %#v, want PlayStatus LoginSuccess", pk)
	}
	return c, nil
}

// WritePacket encodes pk and sends it as a batch of its own.
func (c *Client) WritePacket(pk packet.Packet) (err error) {
	var buf bytes.Buffer
	h := packet.Header{PacketID: pk.ID()}
	if err := h.Write(&buf); err != nil {
		return err
	}
	b, err := c.codec().Append(buf.Bytes(), pk)
	if err != nil {
		return err
	}
	return c.WriteRaw(b)
}

// WriteRaw sends one packet, header and payload, as a batch of its own.
func (c *Client) WriteRaw(b []byte) error {
	return c.enc.Encode([][]byte{b})
}

// ReadPacket returns the next packet the server sent, decoded with
// gophertunnel's server pool; an id it does not know comes as a
// *packet.Unknown. It waits up to the End's read deadline.
func (c *Client) ReadPacket() (pk packet.Packet, err error) {
	for len(c.pending) == 0 {
		if c.pending, err = c.dec.Decode(); err != nil {
			return nil, err
		}
	}
	b := c.pending[0]
	c.pending = c.pending[1:]
	buf := bytes.NewBuffer(b)
	var h packet.Header
	if err := h.Read(buf); err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	if _, ok := c.pool[h.PacketID]; !ok {
		return &packet.Unknown{PacketID: h.PacketID, Payload: buf.Bytes()}, nil
	}
	return c.codec().DecodeWith(c.pool, session.Packet{ID: h.PacketID, Payload: buf.Bytes()})
}

// ErrTimeout is returned by Expect when the packet did not come in time.
var ErrTimeout = errors.New("packetstest: packet did not arrive in time")

// Expect reads packets until one satisfies match, for up to timeout, and
// returns it; packets before it are skipped.
func (c *Client) Expect(timeout time.Duration, match func(packet.Packet) bool) (packet.Packet, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
	defer c.conn.SetReadDeadline(time.Time{})
	for {
		pk, err := c.ReadPacket()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, ErrTimeout
			}
			return nil, err
		}
		if match(pk) {
			return pk, nil
		}
	}
}

// Close closes the client's End.
func (c *Client) Close() error { return c.conn.Close() }
