package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/auth/authtest"
	"github.com/sandertv/gophertunnel/minecraft"
)

// onlineServer starts a server in online mode against a local issuer and
// waits until it has the issuer's keys.
func onlineServer(t *testing.T, c server.Config) string {
	t.Helper()
	is := authtest.NewIssuer()
	t.Cleanup(is.Close)
	c.Auth = is.Config()
	srv, addr := bedrockServer(t, c)
	if !eventually(bedrockTimeout, srv.OnlineModeReady) {
		t.Fatal("the server did not fetch the local issuer's keys")
	}
	return addr
}

// gophertunnel's offline client, which signs its own token, is refused in
// online mode with the anchors' message, through the encrypted session as
// a real client would meet it; with online mode off it is let in.
func TestOnlineModeRefusesGophertunnelOffline(t *testing.T) {
	const gate = "Offline {player} got in."
	for _, online := range []bool{true, false} {
		t.Run(map[bool]string{true: "online", false: "offline"}[online], func(t *testing.T) {
			c := server.Config{DisconnectMessage: gate}
			var addr string
			if online {
				addr = onlineServer(t, c)
			} else {
				_, addr = bedrockServer(t, c)
			}
			err := bedrockDial(t, addr, "Steve")
			var de minecraft.DisconnectError
			if !errors.As(err, &de) {
				t.Fatalf("got %v (%T), want a minecraft.DisconnectError", err, err)
			}
			want := "Offline Steve got in."
			if online {
				want = auth.NotSignedInMessage
			}
			if string(de) != want {
				t.Errorf("got %q, want %q", de, want)
			}
		})
	}
}

// bedrock-protocol's offline client likewise.
func TestOnlineModeRefusesPrismarineOffline(t *testing.T) {
	node := needNode(t)
	const gate = "Offline {player} got in."
	c := jsClients[2] // raknet-native, the C++ RakNet
	for _, online := range []bool{true, false} {
		t.Run(map[bool]string{true: "online", false: "offline"}[online], func(t *testing.T) {
			conf := server.Config{DisconnectMessage: gate, Shutdown: server.ShutdownConfig{Timeout: jsShutdownTimeout}}
			var addr string
			if online {
				addr = onlineServer(t, conf)
			} else {
				_, addr = bedrockServer(t, conf)
			}
			res := runJS(t, node, addr, c.args("Alex")...)
			want := "Offline Alex got in."
			if online {
				want = auth.NotSignedInMessage
			}
			if res.Event != "kick" || res.Message != want {
				t.Errorf("got %s %q (error %q), want kick %q", res.Event, res.Message, res.Error, want)
			}
		})
	}
}

// An IP or CIDR ban applies to the address a trusted proxy's PROXY header
// names, not to the proxy's: a client behind the proxy claimed to be in
// the banned prefix is refused with the ban's reason, one claimed outside
// it gets in.
func TestIPBanThroughProxyProtocol(t *testing.T) {
	const gate = "In, {player}."
	srv, _ := bedrockServer(t, server.Config{
		DisconnectMessage:  gate,
		EncryptionDisabled: true,
		Network: server.NetworkConfig{
			ProxyProtocol:  true,
			TrustedProxies: []netip.Prefix{netip.PrefixFrom(proxyIP, 32)},
		},
		Access: access.Config{
			Bans: []server.Ban{{IP: "198.51.100.0/24", Reason: "abuse"}},
		},
	})
	banned := netip.MustParseAddr("198.51.100.7")
	free := netip.MustParseAddr("203.0.113.9")
	for _, tc := range []struct {
		claimed netip.Addr
		want    string
	}{
		{banned, server.BannedMessage + " Reason: abuse"},
		{free, "In, Steve."},
	} {
		t.Run(tc.claimed.String(), func(t *testing.T) {
			f := startForwarder(t, srv.Addrs()[0], proxyIP, everyDatagram, func(real netip.AddrPort) netip.AddrPort {
				return netip.AddrPortFrom(tc.claimed, real.Port())
			})
			if got := loginMessage(t, f.addr(), "Steve"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if st := srv.Stats(); st.Banned != 1 {
		t.Errorf("got %+v, want one Banned", st)
	}
}

// loginMessage logs in at addr over Basalt's own RakNet dialer as an
// offline client named name, without encryption, and returns the message
// of the Disconnect the server answers with.
func loginMessage(t *testing.T, addr, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bedrockTimeout)
	defer cancel()
	c, err := raknet.Dialer{}.DialContext(ctx, addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	write := func(compressed bool, id uint32, payload []byte) {
		b := []byte{0xfe}
		if compressed {
			b = append(b, 0xff)
		}
		pk := append(binary.AppendUvarint(nil, uint64(id)), payload...)
		b = append(binary.AppendUvarint(b, uint64(len(pk))), pk...)
		if _, err := c.Write(b); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	// read returns the packets of the next batch.
	read := func(compressed bool) map[uint32][]byte {
		_ = c.SetReadDeadline(time.Now().Add(bedrockTimeout))
		b, err := c.ReadPacket()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if len(b) < 2 || b[0] != 0xfe || (compressed && b[1] != 0xff) {
			t.Fatalf("unexpected batch % x", b)
		}
		b = b[1:]
		if compressed {
			b = b[1:]
		}
		pks := make(map[uint32][]byte)
		for len(b) > 0 {
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				t.Fatalf("bad packet length in % x", b)
			}
			pk := b[n : n+int(l)]
			b = b[n+int(l):]
			h, m := binary.Uvarint(pk)
			if m <= 0 {
				t.Fatalf("bad packet header in % x", pk)
			}
			pks[uint32(h)&0x3ff] = pk[m:]
		}
		return pks
	}
	write(false, session.IDRequestNetworkSettings, binary.BigEndian.AppendUint32(nil, uint32(session.CurrentProtocol)))
	if _, ok := read(false)[session.IDNetworkSettings]; !ok {
		t.Fatal("no NetworkSettings")
	}
	p := authtest.NewPlayer(name, "")
	write(true, session.IDLogin, authtest.LoginPayload(session.CurrentProtocol, session.LoginRequest{
		AuthenticationType: session.AuthenticationSelfSigned,
		Chain:              authtest.SelfSignedChain(p),
		ClientData:         authtest.ClientData(p.Key, nil),
	}))
	var payload []byte
	for payload == nil {
		payload = read(true)[session.IDDisconnect] // after LoginSuccess, if let in
	}
	// Disconnect: zigzag varint32 reason, bool hide, string message.
	_, n := binary.Varint(payload)
	if n <= 0 || len(payload) < n+1 {
		t.Fatalf("bad Disconnect % x", payload)
	}
	rest := payload[n+1:]
	l, m := binary.Uvarint(rest)
	if m <= 0 || l > uint64(len(rest)-m) {
		t.Fatalf("bad Disconnect message % x", payload)
	}
	return string(rest[m : m+int(l)])
}
