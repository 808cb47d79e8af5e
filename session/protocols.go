package session

import "slices"

// Version is one Bedrock network protocol this build speaks, with the
// Minecraft version string that goes with it.
type Version struct {
	// Protocol is the network protocol number a client sends in
	// RequestNetworkSettings and Login.
	Protocol int32
	// Name is the version string a server advertises for it in its MOTD,
	// and sends as the game version in StartGame.
	Name string
}

// protocols lists every protocol this build speaks, oldest first. One of
// them, session/packets' BaseProtocol (2193), is the layout of the packet
// structures of the gophertunnel version this build uses; each other one
// is a delta over its neighbour in session/packets (v2225.go for 2225),
// up or down from the base. The numbers are
// Mojang's: bedrock-protocol-docs release tags, and npm minecraft-data
// 3.119.0's bedrock/1.26.51 and bedrock/1.26.60 version.json.
//
// To add a protocol, append it here and add its delta file and golden tests
// to session/packets; README.md says how.
var protocols = []Version{
	{Protocol: 2193, Name: "1.26.50"}, // 1.26.50 – 1.26.52
	{Protocol: 2225, Name: "1.26.60"}, // 1.26.60 – 1.26.66
}

// CurrentProtocol is the newest Bedrock network protocol this build speaks,
// the one a server advertises by default: 2225, Minecraft 1.26.60.
const CurrentProtocol int32 = 2225

// CurrentVersion is the Minecraft version string that goes with
// CurrentProtocol, as a server advertises it in its MOTD.
const CurrentVersion = "1.26.60"

// Protocols returns every protocol this build speaks, oldest first. A
// session accepts all of them unless Config.AcceptedProtocols says
// otherwise.
func Protocols() []Version {
	return slices.Clone(protocols)
}

// KnownProtocols returns the numbers of Protocols, oldest first.
func KnownProtocols() []int32 {
	ps := make([]int32, len(protocols))
	for i, v := range protocols {
		ps[i] = v.Protocol
	}
	return ps
}

// LookupProtocol returns the version of protocol p, and whether this build
// speaks it.
func LookupProtocol(p int32) (Version, bool) {
	i := slices.IndexFunc(protocols, func(v Version) bool { return v.Protocol == p })
	if i < 0 {
		return Version{}, false
	}
	return protocols[i], true
}

// Version returns the version of the client's protocol, once
// RequestNetworkSettings has been accepted; before that, the zero Version.
func (s *Session) Version() Version {
	v, _ := LookupProtocol(s.Protocol())
	return v
}
