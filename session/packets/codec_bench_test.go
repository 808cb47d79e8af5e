package packets

import (
	"fmt"
	"testing"

	"github.com/basaltmc/basalt/session"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// BenchmarkDecode measures decoding the packets a client sends most: chat,
// and PlayerAuthInput, which comes every tick and which a RawHandler can
// skip.
func BenchmarkDecode(b *testing.B) {
	for _, pk := range []packet.Packet{
		&packet.Text{TextType: packet.TextTypeChat, SourceName: "Steve", Message: "hello there"},
		&packet.PlayerAuthInput{InputMode: packet.InputModeTouch, PlayMode: packet.PlayModeNormal},
	} {
		payload, err := Codec{}.Append(nil, pk)
		if err != nil {
			b.Fatal(err)
		}
		p := session.Packet{ID: pk.ID(), Payload: payload}
		// Both protocols: 2225 decodes PlayerAuthInput through its delta.
		for _, proto := range Protocols() {
			c := Codec{Protocol: proto}
			b.Run(fmt.Sprintf("%s/%d", packetName(pk), proto), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(payload)))
				for b.Loop() {
					if _, err := c.Decode(p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAppend measures encoding a chat line into a reused buffer.
func BenchmarkAppend(b *testing.B) {
	pk := &packet.Text{TextType: packet.TextTypeRaw, Message: "Steve joined the lobby"}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = (Codec{}).Append(buf[:0], pk); err != nil {
			b.Fatal(err)
		}
	}
}

func packetName(pk packet.Packet) string {
	switch pk.(type) {
	case *packet.Text:
		return "Text"
	case *packet.PlayerAuthInput:
		return "PlayerAuthInput"
	}
	return "other"
}
