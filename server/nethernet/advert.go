package nethernet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Layouts of the advertisement a server sends in answer to a LAN discovery
// request. The first byte of the payload names the layout; a client reads
// one layout and ignores the others, so the server sends the one current
// clients read.
const (
	// AdvertVersion4 is the layout older clients read: u8-length strings,
	// a u8 game mode and little-endian int32 player counts.
	AdvertVersion4 uint8 = 4
	// AdvertVersion7 is the layout Bedrock Dedicated Server 1.26.51 sends
	// and 1.26.6x clients read: varint-length strings, the protocol and
	// game version, zigzag32 counts and the authentication flags.
	AdvertVersion7 uint8 = 7
)

// ConnectionTypeLANSignaling is the advertisement's connection type for
// NetherNet signalled over the LAN discovery socket, the only kind a LAN
// list entry joins through; Bedrock Dedicated Server sends it.
const ConnectionTypeLANSignaling int32 = 4

// Bounds of a decoded advertisement.
const (
	// maxAdvertString bounds each string of a layout 7 advertisement, in
	// bytes. The payload travels hex-encoded in a discovery packet of at
	// most 65535 bytes; four strings of this size still fit.
	maxAdvertString = 4096
	// maxAdvertString4 is layout 4's bound, set by its u8 length.
	maxAdvertString4 = 0xff
)

// Default trailer of layout 4, which PrismarineJS bedrock-protocol fills
// in when a sender leaves the bytes out. Their meaning is unknown.
const (
	advertTrailer4a = 4
	advertTrailer4b = 8
)

// Errors returned by Advertisement.Decode besides io.ErrUnexpectedEOF.
var (
	errAdvertVersion  = errors.New("unsupported layout")
	errAdvertVarint   = errors.New("varint exceeds 32 bits")
	errAdvertString   = errors.New("string exceeds limit")
	errAdvertTrailing = errors.New("trailing bytes")
)

// Advertisement is the server data a NetherNet server sends in answer to a
// LAN discovery request: go-nethernet's discovery.ResponsePacket carries
// it as ApplicationData (hex-encoded on the wire by the packet itself),
// and a client shows it as a LAN list entry.
//
// Layout 7, as sent by Bedrock Dedicated Server 1.26.51.1 (PrismarineJS
// bedrock-protocol docs/nethernet-advertisements.md and the fixture in
// test/nethernetAdvertisement.test.js):
//
//	u8 7 | string motd | zigzag32 protocol | string gameVersion |
//	string levelName | zigzag32 playerCount | zigzag32 playersMax |
//	zigzag32 gamemodeId | bool isEditorWorld | bool hardcore |
//	bool acceptsOnlineAuth | bool acceptsSelfSignedAuth | string nonce |
//	zigzag32 connectionType
//
// where a string is a varuint32 byte length and UTF-8 bytes, zigzag32 is a
// varuint32 holding (v << 1) ^ (v >> 31), and bool is one byte.
//
// Layout 4:
//
//	u8 4 | u8-length motd | u8-length levelName | u8 gamemodeId |
//	int32 LE playerCount | int32 LE playersMax |
//	[bool isEditorWorld | bool hardcore | u8 | u8]
//
// whose four trailing bytes a sender may leave off from the end; Decode
// fills in false, false, 4, 8 as PrismarineJS does.
//
// Layout 6 (go-nethernet's discovery.ServerData) differs from 7: no
// protocol or game version, game mode before int32 LE counts, and a
// transport layer before the connection type. Advertisement does not
// read it.
//
// The zero value encodes as an empty layout 7 advertisement. An
// Advertisement is a plain value: copy it freely, and do not share one
// between goroutines while one of them decodes into it.
type Advertisement struct {
	// Version is the layout, AdvertVersion7 or AdvertVersion4. Zero
	// encodes as AdvertVersion7; Decode always sets it.
	Version uint8
	// MOTD is the server name, shown under the level name.
	MOTD string
	// Protocol is the network protocol number. Layout 7 only.
	Protocol int32
	// GameVersion is the game version, such as "1.26.51". Layout 7 only.
	GameVersion string
	// LevelName is the world name, the entry's title.
	LevelName string
	// PlayerCount is the number of players online.
	PlayerCount int32
	// MaxPlayers is the number of players the server admits.
	MaxPlayers int32
	// GameMode is the default game mode (see GameModeID). Layout 4 keeps
	// its low eight bits.
	GameMode int32
	// EditorWorld marks an Editor project, which only clients in Editor
	// mode list.
	EditorWorld bool
	// Hardcore marks a hardcore world.
	Hardcore bool
	// AcceptsOnlineAuth says the server takes Xbox-signed logins.
	// Layout 7 only.
	AcceptsOnlineAuth bool
	// AcceptsSelfSignedAuth says the server takes self-signed logins.
	// Layout 7 only.
	AcceptsSelfSignedAuth bool
	// Nonce is a random string the host makes; a joining client echoes
	// it in its login's client data. Layout 7 only.
	Nonce string
	// ConnectionType is how a client reaches the server;
	// ConnectionTypeLANSignaling for a LAN entry. Layout 7 only.
	ConnectionType int32
	// Trailer4 holds the two bytes of unknown meaning that end layout 4.
	// Decode sets them to 4 and 8 when the sender leaves them off.
	Trailer4 [2]uint8
}

// version is the layout a encodes as.
func (a *Advertisement) version() uint8 {
	if a.Version == 0 {
		return AdvertVersion7
	}
	return a.Version
}

// Append appends the encoding of a. A string longer than its layout
// allows is cut at a UTF-8 boundary so the result always decodes. A
// Version other than 0, 4 or 7 is a programmer error (MarshalBinary
// returns it as an error instead).
func (a *Advertisement) Append(b []byte) []byte {
	switch v := a.version(); v {
	case AdvertVersion7:
		b = append(b, v)
		b = appendAdvertString(b, a.MOTD)
		b = appendZigzag32(b, a.Protocol)
		b = appendAdvertString(b, a.GameVersion)
		b = appendAdvertString(b, a.LevelName)
		b = appendZigzag32(b, a.PlayerCount)
		b = appendZigzag32(b, a.MaxPlayers)
		b = appendZigzag32(b, a.GameMode)
		b = appendBool(b, a.EditorWorld)
		b = appendBool(b, a.Hardcore)
		b = appendBool(b, a.AcceptsOnlineAuth)
		b = appendBool(b, a.AcceptsSelfSignedAuth)
		b = appendAdvertString(b, a.Nonce)
		return appendZigzag32(b, a.ConnectionType)
	case AdvertVersion4:
		b = append(b, v)
		b = appendAdvertString4(b, a.MOTD)
		b = appendAdvertString4(b, a.LevelName)
		b = append(b, uint8(a.GameMode))
		b = binary.LittleEndian.AppendUint32(b, uint32(a.PlayerCount))
		b = binary.LittleEndian.AppendUint32(b, uint32(a.MaxPlayers))
		b = appendBool(b, a.EditorWorld)
		b = appendBool(b, a.Hardcore)
		return append(b, a.Trailer4[0], a.Trailer4[1])
	default:
		panic(fmt.Sprintf("nethernet: advertisement layout %d is not 4 or 7", v))
	}
}

// MarshalBinary returns the encoding of a, or an error if its Version is
// not 0, 4 or 7.
func (a *Advertisement) MarshalBinary() ([]byte, error) {
	if v := a.version(); v != AdvertVersion7 && v != AdvertVersion4 {
		return nil, fmt.Errorf("encode NetherNet advertisement: %w %d", errAdvertVersion, v)
	}
	return a.Append(nil), nil
}

// Decode decodes an advertisement of layout 4 or 7 from the start of b
// and returns the bytes it consumed; bytes after the last field are left
// for the caller. Strings are copied out of b. A truncated advertisement
// yields io.ErrUnexpectedEOF; on error a is left partly written and n is 0.
func (a *Advertisement) Decode(b []byte) (n int, err error) {
	r := advertReader{b: b}
	*a = Advertisement{Version: r.u8()}
	switch a.Version {
	case AdvertVersion7:
		a.MOTD = r.str()
		a.Protocol = r.zigzag32()
		a.GameVersion = r.str()
		a.LevelName = r.str()
		a.PlayerCount = r.zigzag32()
		a.MaxPlayers = r.zigzag32()
		a.GameMode = r.zigzag32()
		a.EditorWorld = r.bool()
		a.Hardcore = r.bool()
		a.AcceptsOnlineAuth = r.bool()
		a.AcceptsSelfSignedAuth = r.bool()
		a.Nonce = r.str()
		a.ConnectionType = r.zigzag32()
	case AdvertVersion4:
		a.MOTD = r.str4()
		a.LevelName = r.str4()
		a.GameMode = int32(r.u8())
		a.PlayerCount = r.i32le()
		a.MaxPlayers = r.i32le()
		// Any suffix of the trailer may be missing.
		a.Trailer4 = [2]uint8{advertTrailer4a, advertTrailer4b}
		if r.err == nil && r.remaining() > 0 {
			a.EditorWorld = r.bool()
		}
		if r.err == nil && r.remaining() > 0 {
			a.Hardcore = r.bool()
		}
		for i := range a.Trailer4 {
			if r.err == nil && r.remaining() > 0 {
				a.Trailer4[i] = r.u8()
			}
		}
	default:
		if r.err == nil {
			r.err = fmt.Errorf("%w %d", errAdvertVersion, a.Version)
		}
	}
	if r.err != nil {
		return 0, fmt.Errorf("decode NetherNet advertisement: %w", r.err)
	}
	return r.off, nil
}

// UnmarshalBinary decodes b, which must hold exactly one advertisement.
func (a *Advertisement) UnmarshalBinary(b []byte) error {
	n, err := a.Decode(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("decode NetherNet advertisement: %w: %d", errAdvertTrailing, len(b)-n)
	}
	return nil
}

// GameModeID returns the advertisement's game mode for a game type name
// as the RakNet MOTD spells it ("Survival", "creative", ...), case
// insensitive; a name it does not know is survival, 0. The numbers are
// the protocol's GameType values.
func GameModeID(gameType string) int32 {
	switch strings.ToLower(gameType) {
	case "creative":
		return 1
	case "adventure":
		return 2
	case "spectator":
		return 6
	}
	return 0
}

// appendAdvertString appends s with a varuint32 length, cut to
// maxAdvertString bytes.
func appendAdvertString(b []byte, s string) []byte {
	s = cutUTF8(s, maxAdvertString)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendAdvertString4 appends s with a u8 length, cut to 255 bytes.
func appendAdvertString4(b []byte, s string) []byte {
	s = cutUTF8(s, maxAdvertString4)
	return append(append(b, uint8(len(s))), s...)
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// appendZigzag32 appends v as a zigzag-encoded varuint32.
func appendZigzag32(b []byte, v int32) []byte {
	return binary.AppendUvarint(b, uint64(uint32(v<<1)^uint32(v>>31)))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// advertReader is a bounds-checked cursor over an advertisement. The first
// failed read sets err and every later read returns a zero value, so
// Decode reads every field and checks err once.
type advertReader struct {
	b   []byte
	off int
	err error
}

func (r *advertReader) remaining() int { return len(r.b) - r.off }

// need reports whether n more bytes can be read, setting err if not.
func (r *advertReader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || r.remaining() < n {
		r.err = io.ErrUnexpectedEOF
		return false
	}
	return true
}

func (r *advertReader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

// bool reads one byte; any value but zero is true, as the game reads it.
func (r *advertReader) bool() bool { return r.u8() != 0 }

func (r *advertReader) i32le() int32 {
	if !r.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return int32(v)
}

// varuint32 reads at most five bytes; a value past 32 bits is an error.
func (r *advertReader) varuint32() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if i == 4 && c > 0x0f {
			r.err = errAdvertVarint
			return 0
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	return v // not reached: the fifth byte has no continuation bit
}

func (r *advertReader) zigzag32() int32 {
	u := r.varuint32()
	return int32(u>>1) ^ -int32(u&1)
}

// str reads a varuint32-length string of at most maxAdvertString bytes.
func (r *advertReader) str() string {
	n := r.varuint32()
	if r.err != nil {
		return ""
	}
	if n > maxAdvertString {
		r.err = errAdvertString
		return ""
	}
	return r.bytes(int(n))
}

// str4 reads a u8-length string.
func (r *advertReader) str4() string {
	return r.bytes(int(r.u8()))
}

func (r *advertReader) bytes(n int) string {
	if !r.need(n) {
		return ""
	}
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}
