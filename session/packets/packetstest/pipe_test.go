package packetstest

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func TestPipe(t *testing.T) {
	server, client := Pipe()
	b := []byte("batch")
	if _, err := client.Write(b); err != nil {
		t.Fatal(err)
	}
	b[0] = 'X' // Write copied it
	if _, err := client.Write([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"batch", "two"} {
		got, err := server.ReadPacket()
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	if _, err := server.ReadPacket(); !errors.Is(err, io.EOF) {
		t.Errorf("read after the peer closed: got %v, want io.EOF", err)
	}
	if _, err := server.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write to a closed peer: got %v, want net.ErrClosed", err)
	}
}

func TestPipeCloseUnblocksRead(t *testing.T) {
	server, _ := Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := server.ReadPacket()
		done <- err
	}()
	_ = server.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("got %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock ReadPacket")
	}
}

func TestPipeReadDeadline(t *testing.T) {
	server, _ := Pipe()
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := server.ReadPacket(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("got %v, want os.ErrDeadlineExceeded", err)
	}
}
