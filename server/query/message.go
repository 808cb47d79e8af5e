package query

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The layout below follows PocketMine-MP, which answers Query on its game
// port (pmmp/PocketMine-MP src/network/query/QueryHandler.php and
// QueryInfo.php), and the protocol description at wiki.vg/Query. Requests
// are
//
//	fe fd | type u8 | session id i32 BE | payload
//
// and replies drop the two magic bytes:
//
//	type u8 | session id i32 BE | payload
//
// Handshake (type 9): the request has no payload (7 bytes in all); the
// reply's payload is the challenge token in ASCII decimal and a NUL
// (QueryHandler: getTokenString(...) . "\x00").
//
// Stat (type 0): the request's payload is the token as i32 BE, then for a
// full stat 4 bytes of padding (wiki.vg: "padded to 8 bytes. Sending 0x00
// 0x00 0x00 0x00 at the end works"); QueryHandler tells the two apart by
// those 4 bytes (strlen($remaining) === 4).

// Message types, the byte after the magic.
const (
	// TypeStat asks for a basic or a full stat.
	TypeStat Type = 0x00
	// TypeHandshake asks for a challenge token.
	TypeHandshake Type = 0x09
)

// Request sizes, magic included. Known clients send exactly these (wiki.vg;
// mcstatus, xPaw's MinecraftQuery, craftping); PocketMine and the vanilla
// Java server take any other length as a basic stat, but a decoder with
// one shape per message is easier to hold to, and nothing legitimate is
// lost.
const (
	HandshakeSize = 7
	BasicStatSize = 11
	FullStatSize  = 15
)

// Magic0 and Magic1 begin every request.
const Magic0, Magic1 = 0xfe, 0xfd

// MaxFullStat bounds a full stat reply in bytes. Player names that would
// take it past this are left out of the list (numplayers still counts
// them): 4096 is what common clients read (xPaw's MinecraftQuery reads
// 4096 bytes), and it keeps a reply to three IP fragments.
const MaxFullStat = 4096

// Type is a message type.
type Type byte

// String returns the type's name.
func (t Type) String() string {
	switch t {
	case TypeStat:
		return "stat"
	case TypeHandshake:
		return "handshake"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Decoding errors. They are values made once, so refusing a datagram
// allocates nothing.
var (
	// ErrNotQuery is returned for a datagram that does not begin with
	// the magic fe fd.
	ErrNotQuery = errors.New("decode query request: no fe fd magic")
	// ErrUnknownType is returned for a type other than handshake and
	// stat.
	ErrUnknownType = errors.New("decode query request: unknown type")

	errTruncated = fmt.Errorf("decode query request: %w", io.ErrUnexpectedEOF)
	errLength    = errors.New("decode query request: size fits no message of its type")
)

// Request is a decoded request.
type Request struct {
	// Type is TypeHandshake or TypeStat.
	Type Type
	// SessionID is echoed in the reply. PocketMine echoes all 32 bits
	// (Binary::writeInt($sessionID)), and so do we. The vanilla Java server
	// keeps only the low 4 bits of each byte, so clients such as mcstatus
	// and mc-query mask theirs with 0x0F0F0F0F (wiki.vg); they get back
	// exactly what they sent either way.
	SessionID uint32
	// Token is the challenge token of a stat request, as the client sent
	// it: the decimal of the handshake reply packed as an i32 BE.
	Token uint32
	// Full is set for a full stat request.
	Full bool
}

// Decode decodes a request and returns the bytes it took, all of b. It
// never allocates.
func (r *Request) Decode(b []byte) (int, error) {
	if len(b) >= 2 && (b[0] != Magic0 || b[1] != Magic1) {
		return 0, ErrNotQuery
	}
	if len(b) < HandshakeSize {
		return 0, errTruncated
	}
	*r = Request{Type: Type(b[2]), SessionID: binary.BigEndian.Uint32(b[3:7])}
	switch r.Type {
	case TypeHandshake:
		if len(b) != HandshakeSize {
			return 0, errLength
		}
	case TypeStat:
		switch len(b) {
		case BasicStatSize:
		case FullStatSize:
			r.Full = true
		default:
			if len(b) < BasicStatSize {
				return 0, errTruncated
			}
			return 0, errLength
		}
		r.Token = binary.BigEndian.Uint32(b[7:11])
	default:
		return 0, ErrUnknownType
	}
	return len(b), nil
}

// Append appends the request, as a client sends it, to b. A full stat
// is padded with four zero bytes, as wiki.vg and mcstatus do.
func (r *Request) Append(b []byte) []byte {
	b = append(b, Magic0, Magic1, byte(r.Type))
	b = binary.BigEndian.AppendUint32(b, r.SessionID)
	if r.Type == TypeStat {
		b = binary.BigEndian.AppendUint32(b, r.Token)
		if r.Full {
			b = append(b, 0, 0, 0, 0)
		}
	}
	return b
}

// AppendHandshake appends the reply to a handshake to b: type 9, the
// session id, and the token in ASCII decimal with a NUL (QueryHandler.php
// handle, case HANDSHAKE). A token below 2^31 reads the same to clients
// that parse it as signed and as unsigned. The reply is 7 to 16 bytes for a
// 7-byte request.
func AppendHandshake(b []byte, sessionID, token uint32) []byte {
	b = append(b, byte(TypeHandshake))
	b = binary.BigEndian.AppendUint32(b, sessionID)
	b = strconv.AppendUint(b, uint64(token), 10)
	return append(b, 0)
}

// Status is what a stat reply says about the server. The zero value is
// valid; empty fields are sent empty, except those whose doc names a
// default.
type Status struct {
	// HostName is the server name (PocketMine sends its MOTD).
	HostName string
	// GameType is "SMP" (survival or adventure) or "CMP" (creative or
	// spectator), as PocketMine's QueryInfo decides it; empty means "SMP".
	GameType string
	// GameID is the full stat's game_id; empty means "MINECRAFTPE"
	// (QueryInfo::GAME_ID).
	GameID string
	// Version is the game version, "1.26.50".
	Version string
	// Engine is the full stat's server_engine, "Basalt".
	Engine string
	// Plugins is the full stat's plugins value. PocketMine sends the
	// engine, then ": " and "name version" pairs joined with "; " when it
	// has plugins; empty means Engine.
	Plugins string
	// Map is the world name.
	Map string
	// NumPlayers and MaxPlayers are the players online and the limit.
	NumPlayers, MaxPlayers int
	// Whitelist is sent as "on" or "off".
	Whitelist bool
	// HostIP and HostPort are where the server listens (PocketMine sends
	// its server-ip setting, "0.0.0.0" by default, and its port).
	HostIP   string
	HostPort uint16
	// Players are the names of the players online, in the full stat.
	Players []string
}

// AppendBasicStat appends the reply to a basic stat to b: type 0, the
// session id, then hostname, gametype, map, numplayers and maxplayers as
// NUL-terminated strings, the port as a u16 little-endian (the one
// little-endian field of the protocol: QueryInfo getShortQuery uses
// Binary::writeLShort, craftping reads readUInt16LE), and the host IP with
// a NUL.
func AppendBasicStat(b []byte, sessionID uint32, st *Status) []byte {
	b = append(b, byte(TypeStat))
	b = binary.BigEndian.AppendUint32(b, sessionID)
	b = appendCString(b, st.HostName)
	b = appendCString(b, or(st.GameType, "SMP"))
	b = appendCString(b, st.Map)
	b = append(strconv.AppendInt(b, int64(st.NumPlayers), 10), 0)
	b = append(strconv.AppendInt(b, int64(st.MaxPlayers), 10), 0)
	b = binary.LittleEndian.AppendUint16(b, st.HostPort)
	return appendCString(b, st.HostIP)
}

// Full stat framing (QueryInfo getLongQuery; craftping FullStatResponse
// START_PADDING 73706C69746E756D008000 and PLAYERS_PADDING
// 01706C617965725F0000): the key/value section opens with the pair
// splitnum = 0x80, and ends with an empty key, after which come
// "\x01player_\x00\x00", the names each with a NUL, and a NUL.
const (
	fullStatStart   = "splitnum\x00\x80\x00"
	fullStatPlayers = "\x00\x01player_\x00\x00"
)

// AppendFullStat appends the reply to a full stat to b: type 0, the
// session id, then the key/value pairs in PocketMine's order (hostname,
// gametype, game_id, version, server_engine, plugins, map, numplayers,
// maxplayers, whitelist, hostip, hostport) and the player list. Names that
// would take the reply past MaxFullStat are left out.
func AppendFullStat(b []byte, sessionID uint32, st *Status) []byte {
	start := len(b)
	b = append(b, byte(TypeStat))
	b = binary.BigEndian.AppendUint32(b, sessionID)
	b = append(b, fullStatStart...)
	kv := func(k, v string) {
		b = append(append(b, k...), 0)
		b = appendCString(b, v)
	}
	kv("hostname", st.HostName)
	kv("gametype", or(st.GameType, "SMP"))
	kv("game_id", or(st.GameID, "MINECRAFTPE"))
	kv("version", st.Version)
	kv("server_engine", st.Engine)
	kv("plugins", or(st.Plugins, st.Engine))
	kv("map", st.Map)
	b = append(b, "numplayers\x00"...)
	b = append(strconv.AppendInt(b, int64(st.NumPlayers), 10), 0)
	b = append(b, "maxplayers\x00"...)
	b = append(strconv.AppendInt(b, int64(st.MaxPlayers), 10), 0)
	if st.Whitelist {
		kv("whitelist", "on")
	} else {
		kv("whitelist", "off")
	}
	kv("hostip", st.HostIP)
	b = append(b, "hostport\x00"...)
	b = append(strconv.AppendUint(b, uint64(st.HostPort), 10), 0)
	b = append(b, fullStatPlayers...)
	for _, name := range st.Players {
		// The name, its NUL and the final NUL must fit.
		if len(b)-start+len(name)+2 > MaxFullStat {
			break
		}
		b = appendCString(b, name)
	}
	return append(b, 0)
}

// appendCString appends s without its NUL bytes, which would end the
// field early and shift every later one, and a NUL.
func appendCString(b []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			break
		}
		b = append(b, s[:i]...)
		s = s[i+1:]
	}
	return append(append(b, s...), 0)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
