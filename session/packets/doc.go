// Package packets is the seam between the session package's raw packets
// (session.Packet: an id and its payload bytes) and gophertunnel's typed
// packets (minecraft/protocol/packet). Codec decodes what a client sends and
// encodes what a server writes, with the shield item runtime ID the item
// stack layout depends on; Adapt turns a TypedHandler into a
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
// allocated.
//
// # Protocols
//
// A Codec lays packets out for one network protocol (Codec.Protocol); Write
// and Adapter use the session's, so each player's packets are encoded for
// the protocol its client spoke. gophertunnel v1.62.0's structures are the
// layout of BaseProtocol (2193); each other protocol is a delta over the
// one before it, in a file of its own (v2225.go): the packets whose layout
// changed, as a marshal that adds the new fields around the older layout,
// leaves out the removed ones, or lays the packet out anew. A delta may
// also refuse a packet it does not translate (ErrUnsupported) rather than
// send or read it in the wrong layout; 2225's refuses none. Protocols
// lists them all; it matches session.Protocols.
//
// Adding the next protocol starts with one command, which lists the
// packets whose layout differs between two versions of npm minecraft-data
// (node testdata/diff.js ../../integration/js/node_modules 1.26.60
// 1.26.70, after npm ci --prefix integration/js); then one file, vNNNN.go,
// with a delta that registers itself and carries each of them, its version
// in session/protocols.go, a step in testdata/golden.js and a case for
// each packet in golden_test.go: golden.js makes the golden bytes from
// minecraft-data's protocol.json (go test -run TestGolden -args -update).
//
// A handler of typed packets:
//
//	type chat struct {
//		packets.NopTypedHandler
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
