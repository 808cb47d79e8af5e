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
//
// # Adding a protocol
//
// Basalt speaks every protocol it knows at once: 2193 (1.26.50–1.26.52) and
// 2225 (1.26.60–1.26.66). `server.accepted_protocols` lists all of them by
// default and the MOTD advertises the newest. Each session records its
// client's protocol (`Session.Protocol`, `Session.Version`) and every typed
// packet is laid out for it. A client older than the oldest accepted gets
// "Outdated client!", one newer than the newest "Outdated server!"; each
// refusal is logged at info with the protocol and address (at most 5 lines
// per 10 s).
//
// gophertunnel v1.62.0's packet structures are the layout of 2193. Each later
// protocol is a delta over the one before it, in one file of
// `session/packets` (`v2225.go`): the packets whose layout changed, as the new
// fields around the older layout, and the packets changed in ways Basalt does
// not translate, which are refused (`packets.ErrUnsupported`) rather than
// sent in the wrong layout. To add the next protocol (1.26.70 is 2259):
//
//  1. Diff npm `minecraft-data`'s `bedrock/<old>/protocol.json` and
//     `bedrock/<new>/protocol.json` (bump it in `integration/js/package.json`,
//     `npm install --prefix integration/js`), and CloudburstMC/Protocol's
//     `*_v<new>` serializers.
//  2. Write `session/packets/v<new>.go`: a `delta` with the changed packets and
//     the unsupported ones, registered in its `init`, like `v2225.go`.
//  3. Add `{Protocol: <new>, Name: "<version>"}` to `session/protocols.go`.
//  4. Add a step with the new fields to `session/packets/testdata/golden.js`,
//     add the changed packets to `goldenPackets` in `golden_test.go`, and
//     regenerate the golden bytes from minecraft-data:
//     `go test ./session/packets -run 'TestGolden$' -args -update`. The tests
//     then check every protocol's bytes against the file and against
//     minecraft-data afresh.
//
// Nothing else changes: the interop tests (`integration/prismarine_test.go`)
// run bedrock-protocol at every protocol in `session.KnownProtocols`, in the
// lobby and at the gate, over each RakNet backend, and the refusal tests move
// their edges to one below the oldest and one above the newest, once the
// bumped minecraft-data knows the new version.
package packets
