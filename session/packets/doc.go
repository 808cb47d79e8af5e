// Package packets is the seam between the session package's raw packets
// (session.Packet: an id and its payload bytes) and gophertunnel's typed
// packets (minecraft/protocol/packet). Codec decodes what a client sends and
// encodes what a server writes, with the shield item runtime ID the item
// stack layout depends on; Adapt turns a Handler of typed packets into a
// session.Handler, letting packets through raw first to a RawHandler.
//
// The adapter lives outside the session package on purpose. The session
// runs the pre-game protocol with its own small codecs and depends on no
// packet library, so a proxy, a gate or a tool that only moves bytes builds
// without gophertunnel and pays nothing for decoding: no pool lookups, no
// reflection-heavy readers, no allocation per packet. A handler that wants
// typed packets imports this package and pays for exactly the packets it
// decodes; a RawHandler can skip the rest (a client sends PlayerAuthInput
// every tick).
//
// Network input is hostile. gophertunnel's readers panic on bad input, so
// Decode recovers, as gophertunnel's own Conn does, and returns an error
// wrapping ErrMalformed; every length is checked against the bytes left in
// the payload, and slices against the library's limits, before anything is
// allocated. The packets are laid out for protocol.CurrentProtocol, the
// protocol the session accepts by default; a session that accepts other
// protocols must not hand their packets to a Codec.
//
// A handler of typed packets:
//
//	type chat struct {
//		packets.NopHandler
//		codec packets.Codec
//	}
//
//	func (c *chat) HandlePacket(s *session.Session, pk packet.Packet) error {
//		if t, ok := pk.(*packet.Text); ok {
//			return c.codec.Write(s, &packet.Text{
//				TextType: packet.TextTypeRaw,
//				Message:  "You said: " + t.Message,
//			})
//		}
//		return nil
//	}
//
//	cfg := session.Config{
//		NewHandler: func(s *session.Session) (session.Handler, error) {
//			c := &chat{}
//			return packets.Adapt(c, c.codec), nil
//		},
//	}
package packets
