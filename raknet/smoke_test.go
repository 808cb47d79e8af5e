package raknet

import (
	"bytes"
	"context"
	"testing"
	"time"
)

func TestSmokeDialListen(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.PongData([]byte("MCPE;test;"))
	pong, err := Ping(context.Background(), l.Addr().String())
	if err != nil || string(pong) != "MCPE;test;" {
		t.Fatalf("ping: %q %v", pong, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d Dialer
	c, err := d.DialContext(ctx, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.AcceptConn()
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 1024, 100 << 10, 1 << 20} {
		msg := bytes.Repeat([]byte{0xfe, 1, 2, 3}, size/4+1)[:size]
		msg[0] = 0xfe
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadPacket()
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("size %d: got %d bytes, err %v", size, len(got), err)
		}
		if _, err := s.Write(msg); err != nil {
			t.Fatal(err)
		}
		got, err = c.ReadPacket()
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("size %d back: got %d bytes, err %v", size, len(got), err)
		}
	}
	t.Logf("client %+v", c.Stats())
	c.Close()
	if _, err := s.ReadPacket(); err == nil {
		t.Fatal("read after peer close succeeded")
	} else {
		t.Log(err)
	}
}
