package motd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxEncodedLen is the largest encoded status, in bytes. Stock RakNet asserts
// that the offline ping response is shorter than 400 bytes
// (RakPeer::SetOfflinePingResponse), and a pong is never fragmented, so
// Encode keeps the whole string at or below this length.
const MaxEncodedLen = 399

// MinFields is the number of fields Parse requires: edition, server name,
// protocol, version, players and max players. Everything after them is
// optional, because older servers send only fields 0-8.
const MinFields = 6

// Replacements Encode writes for the two characters a name must not carry:
// ';' separates fields, and some parsers treat '\' as an escape.
const (
	semicolonReplacement = ','
	backslashReplacement = '/'
)

// Edition is the first MOTD field: which flavour of Bedrock the server runs.
type Edition string

// The editions a Bedrock client understands.
const (
	// EditionBedrock is Minecraft: Bedrock Edition.
	EditionBedrock Edition = "MCPE"
	// EditionEducation is Minecraft: Education Edition.
	EditionEducation Edition = "MCEE"
)

// String returns the edition as it appears on the wire.
func (e Edition) String() string { return string(e) }

// ErrTooLong reports that the fields Encode may not shorten (everything but
// the two names) already exceed MaxEncodedLen, or, from Validate, that the
// names would have to be truncated to fit.
var ErrTooLong = errors.New("status longer than 399 bytes")

// Status is one Bedrock MOTD: the semicolon-separated string a server returns
// in its unconnected pong,
//
//	edition;name;protocol;version;players;max;guid;level;mode;1;port4;port6;extra…;
//
// Fields are listed in wire order. The zero value encodes but is not a useful
// MOTD: set at least Edition, ServerName, Protocol, Version, MaxPlayers,
// ServerGUID, GameMode, GameModeNumeric (1) and the ports. A Status is a plain
// value; its methods never modify it, so it is safe for concurrent use as long
// as nobody writes to it (or to Extra's backing array) at the same time.
type Status struct {
	// Edition is field 0, EditionBedrock or EditionEducation.
	Edition Edition
	// ServerName is field 1, the first MOTD line shown in the server list.
	// Minecraft colour codes (§) are allowed.
	ServerName string
	// Protocol is field 2, the network protocol the server speaks.
	Protocol int
	// Version is field 3, the game version in network form, e.g. "1.26.50".
	Version string
	// Players is field 4, the number of players online.
	Players int
	// MaxPlayers is field 5, the player limit.
	MaxPlayers int
	// ServerGUID is field 6, printed as unsigned decimal. It must equal the
	// GUID in the pong header; servers holding an int64 RakNet GUID keep it
	// non-negative so both print the same.
	ServerGUID uint64
	// LevelName is field 7, the second MOTD line (the world or sub-name).
	LevelName string
	// GameMode is field 8, e.g. "Survival". Clients ignore it but expect it.
	GameMode string
	// GameModeNumeric is field 9. Bedrock Dedicated Server sends 1, and so
	// should every server: some parsers read it as "not Nintendo-limited".
	GameModeNumeric int
	// PortV4 is field 10, the IPv4 port clients connect to.
	PortV4 uint16
	// PortV6 is field 11, the IPv6 port clients connect to.
	PortV6 uint16
	// Extra holds fields 12 onwards, kept opaque so they survive a
	// Parse/Encode round trip. Current servers send a single "0", so a server
	// sets Extra to []string{"0"}; nil encodes nothing after PortV6.
	Extra []string
}

// FieldError reports a problem with one field of a status, found by Parse
// (a number that does not parse) or by Validate.
type FieldError struct {
	// Index is the field's position in the MOTD, counting from 0; fields in
	// Extra count on from 12.
	Index int
	// Field is the name of the Status field, e.g. "Protocol" or "Extra".
	Field string
	// Err says what is wrong.
	Err error
}

// Error returns a message naming the field and its position.
func (e *FieldError) Error() string {
	return fmt.Sprintf("field %d (%s): %v", e.Index, e.Field, e.Err)
}

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// fieldNames lists the fixed fields in wire order.
var fieldNames = [...]string{
	"Edition", "ServerName", "Protocol", "Version", "Players", "MaxPlayers",
	"ServerGUID", "LevelName", "GameMode", "GameModeNumeric", "PortV4",
	"PortV6",
}

// Encode returns the status as a semicolon-separated string ending in ';'.
// It is AppendEncode on a fresh buffer; see there for sanitising, truncation
// and the one error it can return.
func (s Status) Encode() ([]byte, error) {
	// 12 separators, and at most 20 digits for each of the 7 numbers.
	n := 12 + 7*20 + len(s.Edition) + len(s.ServerName) + len(s.Version) + len(s.LevelName) + len(s.GameMode)
	for _, x := range s.Extra {
		n += len(x) + 1
	}
	return s.AppendEncode(make([]byte, 0, min(n, MaxEncodedLen)))
}

// AppendEncode appends the encoded status to b and returns the extended
// buffer. Every text field is sanitised so nothing can break the wire: ';'
// becomes ',', '\' becomes '/', and control characters and invalid UTF-8 are
// dropped. If the result would be longer than MaxEncodedLen, ServerName and
// LevelName are truncated on a UTF-8 boundary until it fits; only when the
// other fields alone are too long does AppendEncode fail, with an error
// wrapping ErrTooLong, and then b is returned unchanged.
func (s Status) AppendEncode(b []byte) ([]byte, error) {
	start := len(b)
	b = s.appendFields(b, -1, -1)
	n := len(b) - start
	if n <= MaxEncodedLen {
		return b, nil
	}
	name, level := sanitisedLen(s.ServerName), sanitisedLen(s.LevelName)
	fixed := n - name - level
	if fixed > MaxEncodedLen {
		return b[:start], fmt.Errorf("encode MOTD: fields other than the names take %d bytes: %w", fixed, ErrTooLong)
	}
	name, level = shareBudget(MaxEncodedLen-fixed, name, level)
	return s.appendFields(b[:start], name, level), nil
}

// shareBudget splits budget bytes between two names of length a and b that
// together exceed it: each gets half, and a name shorter than its half gives
// the rest to the other.
func shareBudget(budget, a, b int) (int, int) {
	half := budget / 2
	switch {
	case a <= budget-half:
		return a, budget - a
	case b <= half:
		return budget - b, b
	default:
		return budget - half, half
	}
}

// appendFields appends every field, the names cut to nameMax and levelMax
// bytes (negative means no limit).
func (s Status) appendFields(b []byte, nameMax, levelMax int) []byte {
	b = appendSanitised(b, string(s.Edition), -1)
	b = append(b, ';')
	b = appendSanitised(b, s.ServerName, nameMax)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(s.Protocol), 10)
	b = append(b, ';')
	b = appendSanitised(b, s.Version, -1)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(s.Players), 10)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(s.MaxPlayers), 10)
	b = append(b, ';')
	b = strconv.AppendUint(b, s.ServerGUID, 10)
	b = append(b, ';')
	b = appendSanitised(b, s.LevelName, levelMax)
	b = append(b, ';')
	b = appendSanitised(b, s.GameMode, -1)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(s.GameModeNumeric), 10)
	b = append(b, ';')
	b = strconv.AppendUint(b, uint64(s.PortV4), 10)
	b = append(b, ';')
	b = strconv.AppendUint(b, uint64(s.PortV6), 10)
	b = append(b, ';')
	for _, x := range s.Extra {
		b = appendSanitised(b, x, -1)
		b = append(b, ';')
	}
	return b
}

// sanitise returns the rune Encode writes for r, found at byte i of s, or -1
// to drop it.
func sanitise(s string, i int, r rune) rune {
	switch {
	case r == ';':
		return semicolonReplacement
	case r == '\\':
		return backslashReplacement
	case unicode.IsControl(r):
		return -1
	case r == utf8.RuneError:
		if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
			return -1 // an invalid byte, not a real U+FFFD
		}
	}
	return r
}

// appendSanitised appends s, sanitised, to b, writing at most limit bytes
// (negative means no limit) and never splitting a rune.
func appendSanitised(b []byte, s string, limit int) []byte {
	n := 0
	for i, r := range s {
		if r = sanitise(s, i, r); r < 0 {
			continue
		}
		size := utf8.RuneLen(r)
		if limit >= 0 && n+size > limit {
			break
		}
		b = utf8.AppendRune(b, r)
		n += size
	}
	return b
}

// sanitisedLen returns the length appendSanitised(nil, s, -1) would have.
func sanitisedLen(s string) int {
	n := 0
	for i, r := range s {
		if r = sanitise(s, i, r); r >= 0 {
			n += utf8.RuneLen(r)
		}
	}
	return n
}

// Parse decodes a MOTD string. It is tolerant: the trailing ';' may be
// missing, fields after MaxPlayers may be missing (they stay zero), fields
// after PortV6 are kept in Extra, and a negative ServerGUID (printed by
// servers that format a signed GUID) is read as its two's-complement
// unsigned value. It fails, with an error naming the field, when fewer than
// MinFields fields are present or a number does not parse. Text fields are
// returned as received, unsanitised. Parse never panics.
func Parse(b []byte) (Status, error) {
	var s Status
	fields := split(string(b))
	if len(fields) < MinFields {
		return Status{}, fmt.Errorf("parse MOTD: got %d fields, want at least %d", len(fields), MinFields)
	}
	for i, f := range fields {
		var err error
		switch i {
		case 0:
			s.Edition = Edition(f)
		case 1:
			s.ServerName = f
		case 2:
			s.Protocol, err = strconv.Atoi(f)
		case 3:
			s.Version = f
		case 4:
			s.Players, err = strconv.Atoi(f)
		case 5:
			s.MaxPlayers, err = strconv.Atoi(f)
		case 6:
			s.ServerGUID, err = parseGUID(f)
		case 7:
			s.LevelName = f
		case 8:
			s.GameMode = f
		case 9:
			s.GameModeNumeric, err = strconv.Atoi(f)
		case 10:
			s.PortV4, err = parsePort(f)
		case 11:
			s.PortV6, err = parsePort(f)
		default:
			s.Extra = fields[12:]
		}
		if err != nil {
			if ne, ok := errors.AsType[*strconv.NumError](err); ok {
				err = ne.Err
			}
			return Status{}, fmt.Errorf("parse MOTD: %w", &FieldError{
				Index: i,
				Field: fieldNames[i],
				Err:   fmt.Errorf("%.40q: %w", f, err),
			})
		}
		if i >= 12 {
			break
		}
	}
	return s, nil
}

// split cuts s at every ';', dropping the empty field after a trailing ';'.
// The fields share s's memory.
func split(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, ";")
	return strings.Split(s, ";")
}

// parseGUID reads an unsigned decimal GUID, accepting a negative one as the
// two's-complement value of an int64.
func parseGUID(f string) (uint64, error) {
	if len(f) > 0 && f[0] == '-' {
		v, err := strconv.ParseInt(f, 10, 64)
		return uint64(v), err
	}
	return strconv.ParseUint(f, 10, 64)
}

// parsePort reads a port number.
func parsePort(f string) (uint16, error) {
	v, err := strconv.ParseUint(f, 10, 16)
	return uint16(v), err
}

// Validate reports every problem Encode would have to paper over or a client
// would reject, as *FieldError values (joined with errors.Join) that name the
// field: an Edition other than MCPE or MCEE; a text field (names, Version,
// GameMode, Extra) containing ';', '\', a control character or invalid
// UTF-8; an empty Version or GameMode; a negative Protocol, Players,
// MaxPlayers or GameModeNumeric. If the names would have to be truncated to
// keep the status within MaxEncodedLen, the result also wraps ErrTooLong.
// Players above MaxPlayers is allowed. A nil result means Encode writes every
// field exactly as given.
func (s Status) Validate() error {
	var errs []error
	add := func(i int, err error) {
		name := "Extra"
		if i < len(fieldNames) {
			name = fieldNames[i]
		}
		errs = append(errs, &FieldError{Index: i, Field: name, Err: err})
	}
	if s.Edition != EditionBedrock && s.Edition != EditionEducation {
		add(0, fmt.Errorf("%.40q is not %q or %q", s.Edition, EditionBedrock, EditionEducation))
	}
	text := []struct {
		i        int
		v        string
		nonEmpty bool
	}{{1, s.ServerName, false}, {3, s.Version, true}, {7, s.LevelName, false}, {8, s.GameMode, true}}
	for _, t := range text {
		if t.nonEmpty && t.v == "" {
			add(t.i, errors.New("is empty"))
		} else if err := checkText(t.v); err != nil {
			add(t.i, err)
		}
	}
	for j, x := range s.Extra {
		if err := checkText(x); err != nil {
			add(12+j, err)
		}
	}
	nums := []struct {
		i int
		v int
	}{{2, s.Protocol}, {4, s.Players}, {5, s.MaxPlayers}, {9, s.GameModeNumeric}}
	for _, n := range nums {
		if n.v < 0 {
			add(n.i, fmt.Errorf("%d is negative", n.v))
		}
	}
	if n := len(s.appendFields(nil, -1, -1)); n > MaxEncodedLen {
		errs = append(errs, fmt.Errorf("encoded status is %d bytes, so Encode would truncate ServerName and LevelName: %w", n, ErrTooLong))
	}
	return errors.Join(errs...)
}

// checkText reports the first character in v that Encode would change,
// using sanitise itself so the two cannot disagree.
func checkText(v string) error {
	for i, r := range v {
		switch {
		case sanitise(v, i, r) == r:
			continue
		case r == utf8.RuneError: // sanitise keeps a real U+FFFD
			return fmt.Errorf("invalid UTF-8 at byte %d", i)
		default:
			return fmt.Errorf("contains %q at byte %d", r, i)
		}
	}
	return nil
}
