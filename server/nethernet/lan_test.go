package nethernet

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/discovery"
)

// lanClient is go-nethernet's discovery listener as a client uses it,
// asking at 127.255.255.255 (loopback only) on port.
func lanClient(t *testing.T, port int) *discovery.Listener {
	t.Helper()
	c, err := discovery.ListenConfig{
		NetworkID:        42,
		BroadcastAddress: &net.UDPAddr{IP: net.IPv4(127, 255, 255, 255), Port: port},
		Log:              quietSlog,
	}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// LAN discovery over loopback finds the server under its GUID with the
// live status, and a client joins from the LAN list over LAN signalling.
func TestLANDiscoveryAndJoin(t *testing.T) {
	defer checkGoroutines(t)()
	const guid = 0x1234_5678_9abc
	l := listenTest(t, Config{
		// Only a socket on the wildcard address receives what is sent to
		// 127.255.255.255.
		LANAddr:        "0.0.0.0:0",
		NetworkID:      guid,
		AllowAnonymous: true,
		Status: func() Status {
			return Status{Name: "Basalt", Level: "L", Players: 2, MaxPlayers: 20, GameType: "Creative"}
		},
	})
	if l.LANAddr() == nil {
		t.Fatal("no LAN discovery")
	}
	c := lanClient(t, l.LANAddr().(*net.UDPAddr).Port)
	defer c.Close()
	var data []byte
	deadline := time.Now().Add(10 * time.Second)
	for data == nil {
		if time.Now().After(deadline) {
			t.Fatal("the server was not discovered")
		}
		time.Sleep(50 * time.Millisecond)
		data = c.Responses()[guid]
	}
	var sd discovery.ServerData
	if err := sd.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if sd.ServerName != "Basalt" || sd.LevelName != "L" || sd.PlayerCount != 2 || sd.MaxPlayerCount != 20 ||
		sd.GameType != discovery.GameTypeCreative || sd.TransportLayer != discovery.TransportLayerNetherNet {
		t.Errorf("server data %+v", sd)
	}

	// Join from the list: signals over the discovery socket.
	d := gonn.Dialer{API: loopbackAPI(), Log: quietSlog}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cc, err := d.DialContext(ctx, strconv.FormatUint(guid, 10), c)
	if err != nil {
		t.Fatalf("LAN join: %v", err)
	}
	sc := accept(t, l)
	if _, err := cc.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if b, err := sc.ReadPacket(); err != nil || string(b) != "hi" {
		t.Fatalf("ReadPacket = %q, %v", b, err)
	}
	_ = cc.Close()
	_ = sc.Close()
	_ = c.Close()
	_ = l.Close()
}
