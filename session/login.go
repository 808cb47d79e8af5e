package session

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/google/uuid"
)

// Identity is who a client says it is, read from its Login packet.
// ParseLogin verifies nothing: it does not check the JWT signatures or ask
// Xbox Live, so anyone can claim any name or XUID. Only when
// Config.VerifyLogin checked the Login (Verified is true) are the name, XUID,
// UUID and key proven; the client data never is. An Identity is a plain
// value; ClientData.Raw is shared by its copies and must not be modified.
type Identity struct {
	// DisplayName is the player's name (Xbox gamertag for online players).
	DisplayName string
	// XUID is the player's Xbox user id in decimal, empty for offline
	// players.
	XUID string
	// UUID is the player's identity UUID; the zero UUID when the login
	// carried none and no XUID to derive one from.
	UUID uuid.UUID
	// Protocol is the client's network protocol version, as its Login
	// states it.
	Protocol int32
	// IdentityPublicKey is the client's public key as the Login carries
	// it: base64 of a PKIX DER P-384 key, from the multiplayer token's cpk
	// claim or else the identityPublicKey of the chain's last JWT that has
	// one. The encryption handshake runs against it. Empty if the Login
	// carried none.
	IdentityPublicKey string
	// ClientData is what the client-data JWT of the Login says about the
	// client: device, version, language, skin. The client sets all of it
	// freely.
	ClientData ClientData
	// Verified reports that Config.VerifyLogin proved DisplayName, XUID,
	// UUID and IdentityPublicKey (online mode). ParseLogin leaves it false.
	Verified bool
}

// ClientData holds the common fields of a Login's client-data JWT, named
// as gophertunnel's login.ClientData names them, and the whole claims raw.
type ClientData struct {
	// DeviceOS is the client's platform.
	DeviceOS DeviceOS
	// DeviceModel is the device's model name, e.g. "iPhone14,2".
	DeviceModel string
	// DeviceID is an identifier of the device, in a form that depends on
	// the platform.
	DeviceID string
	// GameVersion is the client's game version, e.g. "1.26.50".
	GameVersion string
	// LanguageCode is the client's language, e.g. "en_US".
	LanguageCode string
	// ServerAddress is the address the player typed to join, host:port.
	ServerAddress string
	// SkinID identifies the player's skin.
	SkinID string
	// ThirdPartyName is the name shown to other players on some
	// platforms; usually the display name.
	ThirdPartyName string
	// PlatformOnlineID is the player's id on the platform's own network
	// (PSN, Nintendo), empty elsewhere.
	PlatformOnlineID string
	// ClientRandomID is a number the client picks at install time.
	ClientRandomID int64
	// CurrentInputMode is the input mode in use (1 mouse and keyboard,
	// 2 touch, 3 gamepad, 4 motion controller).
	CurrentInputMode int
	// DefaultInputMode is the platform's default input mode.
	DefaultInputMode int
	// GUIScale is the interface scale the player chose.
	GUIScale int
	// UIProfile is 0 for the classic interface, 1 for pocket.
	UIProfile int
	// Raw is the JSON of all the claims, skin included (often hundreds of
	// KiB), for fields not listed above.
	Raw json.RawMessage
}

// DeviceOS is the platform a client runs on, as its client data reports
// it.
type DeviceOS int32

// Platforms, numbered as Mojang and gophertunnel v1.62.0 number them.
const (
	DeviceUnknown   DeviceOS = -1
	DeviceAndroid   DeviceOS = 1
	DeviceIOS       DeviceOS = 2
	DeviceOSX       DeviceOS = 3
	DeviceFireOS    DeviceOS = 4
	DeviceGearVR    DeviceOS = 5
	DeviceHololens  DeviceOS = 6
	DeviceWin10     DeviceOS = 7
	DeviceWin32     DeviceOS = 8
	DeviceDedicated DeviceOS = 9
	DeviceTVOS      DeviceOS = 10
	DeviceOrbis     DeviceOS = 11 // PlayStation
	DeviceNX        DeviceOS = 12 // Nintendo Switch
	DeviceXBOX      DeviceOS = 13
	DeviceWP        DeviceOS = 14 // Windows Phone
	DeviceLinux     DeviceOS = 15
)

// String returns the platform's name.
func (d DeviceOS) String() string {
	names := [...]string{"Unknown", "", "Android", "iOS", "macOS", "FireOS", "GearVR", "HoloLens",
		"Windows", "Win32", "Dedicated", "tvOS", "PlayStation", "Switch", "Xbox", "WindowsPhone", "Linux"}
	if i := int(d) + 1; i >= 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("DeviceOS(%d)", int32(d))
}

// Limits on the parts of a Login packet. The whole packet is already capped
// by the batch's decompressed size.
const (
	// maxLoginJSONSize caps the chain/certificate JSON. Real ones are a few
	// KiB: three JWTs and a token.
	maxLoginJSONSize = 256 << 10
	// maxChainLength caps the JWTs in the chain; real chains hold 1 or 3.
	maxChainLength = 8
	// maxDisplayNameSize caps a display name in bytes. Gamertags are at most
	// 16 characters; 64 bytes leaves room for multi-byte offline names.
	maxDisplayNameSize = 64
	// maxXUIDSize caps an XUID: a decimal int64 has at most 19 digits.
	maxXUIDSize = 20
)

// errNoDisplayName reports a login that names no player anywhere.
var errNoDisplayName = errors.New("no display name in chain, token or client data")

// login is the Login packet (0x01):
//
//	client protocol     int32 BE (superseded by RequestNetworkSettings)
//	connection request  varuint32 length | bytes
type login struct {
	ClientProtocol    int32
	ConnectionRequest []byte
}

// Append appends the packet's fields to b.
func (m *login) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(m.ClientProtocol))
	b = appendVaruint32(b, uint32(len(m.ConnectionRequest)))
	return append(b, m.ConnectionRequest...)
}

// Decode reads the packet's fields from b and returns the bytes consumed.
// ConnectionRequest aliases b.
func (m *login) Decode(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("decode LOGIN: %w", io.ErrUnexpectedEOF)
	}
	protocol := int32(binary.BigEndian.Uint32(b))
	l, n, err := readVaruint32(b[4:])
	if err != nil {
		return 0, fmt.Errorf("decode LOGIN: request length: %w", err)
	}
	off := 4 + n
	if uint64(l) > uint64(len(b)-off) {
		return 0, fmt.Errorf("decode LOGIN: request length %d exceeds remaining %d: %w",
			l, len(b)-off, io.ErrUnexpectedEOF)
	}
	end := off + int(l)
	m.ClientProtocol, m.ConnectionRequest = protocol, b[off:end:end]
	return end, nil
}

// connectionRequest is the body of a Login packet's connection request:
//
//	int32 LE length | chain JSON | int32 LE length | client-data JWT
//
// The JSON is either {"AuthenticationType":N,"Certificate":"{\"chain\":[…]}",
// "Token":"…"} (1.21.90+) or the older {"chain":[…]}.
type connectionRequest struct {
	AuthenticationType int
	Chain              []string
	Token              string
	ClientData         string
}

// decode parses the request r, bounding every length before using it.
func (c *connectionRequest) decode(r []byte) error {
	chainJSON, r, err := readLEBytes(r, maxLoginJSONSize)
	if err != nil {
		return fmt.Errorf("chain JSON: %w", err)
	}
	clientData, r, err := readLEBytes(r, len(r))
	if err != nil {
		return fmt.Errorf("client data: %w", err)
	}
	if len(r) != 0 {
		return fmt.Errorf("%d trailing bytes", len(r))
	}
	var outer struct {
		AuthenticationType int      `json:"AuthenticationType"`
		Certificate        string   `json:"Certificate"`
		Chain              []string `json:"chain"`
		Token              string   `json:"Token"`
	}
	if err := json.Unmarshal(chainJSON, &outer); err != nil {
		return fmt.Errorf("chain JSON: %w", err)
	}
	chain := outer.Chain
	if outer.Certificate != "" {
		var cert struct {
			Chain []string `json:"chain"`
		}
		if err := json.Unmarshal([]byte(outer.Certificate), &cert); err != nil {
			return fmt.Errorf("certificate: %w", err)
		}
		chain = cert.Chain
	}
	if len(chain) > maxChainLength {
		return fmt.Errorf("chain of %d JWTs exceeds %d", len(chain), maxChainLength)
	}
	*c = connectionRequest{AuthenticationType: outer.AuthenticationType, Chain: chain,
		Token: outer.Token, ClientData: string(clientData)}
	return nil
}

// readLEBytes reads an int32 LE length and that many bytes from the front of
// b, refusing negative lengths and lengths above max or the input left.
func readLEBytes(b []byte, max int) (v, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, io.ErrUnexpectedEOF
	}
	l := int64(int32(binary.LittleEndian.Uint32(b)))
	b = b[4:]
	switch {
	case l < 0:
		return nil, nil, fmt.Errorf("negative length %d", l)
	case l > int64(max):
		return nil, nil, fmt.Errorf("length %d exceeds %d", l, max)
	case l > int64(len(b)):
		return nil, nil, fmt.Errorf("length %d exceeds remaining %d: %w", l, len(b), io.ErrUnexpectedEOF)
	}
	return b[:l], b[l:], nil
}

// clientDataClaims are the fields of the client-data JWT the session reads,
// which the client is free to set.
type clientDataClaims struct {
	DisplayName      string   `json:"DisplayName"`
	DeviceOS         DeviceOS `json:"DeviceOS"`
	DeviceModel      string   `json:"DeviceModel"`
	DeviceID         string   `json:"DeviceId"`
	GameVersion      string   `json:"GameVersion"`
	LanguageCode     string   `json:"LanguageCode"`
	ServerAddress    string   `json:"ServerAddress"`
	SkinID           string   `json:"SkinId"`
	ThirdPartyName   string   `json:"ThirdPartyName"`
	PlatformOnlineID string   `json:"PlatformOnlineId"`
	ClientRandomID   int64    `json:"ClientRandomId"`
	CurrentInputMode int      `json:"CurrentInputMode"`
	DefaultInputMode int      `json:"DefaultInputMode"`
	GUIScale         int      `json:"GuiScale"`
	UIProfile        int      `json:"UIProfile"`
}

// ParseLogin reads the player's identity from the payload of a Login packet
// (the bytes after its header) without verifying any signature. The name,
// XUID and UUID come from the first of these that names a player: the
// extraData claim of the chain's JWTs (last first), the multiplayer token
// (xname, xid, leguuid), then the client-data JWT (ThirdPartyName or
// DisplayName). A missing UUID is derived from the XUID as gophertunnel does.
// The identity public key comes from the token's cpk claim, or else the
// chain's last identityPublicKey. Client data that is missing or not a JWT
// leaves ClientData empty. ParseLogin bounds every length and size it reads
// and never panics; it is safe for concurrent use.
func ParseLogin(payload []byte) (Identity, error) {
	id, _, err := parseLogin(payload)
	return id, err
}

// parseLogin is ParseLogin, also returning the connection request the
// identity was read from.
func parseLogin(payload []byte) (Identity, connectionRequest, error) {
	id, req, err := parseLoginPayload(payload)
	if err != nil {
		return Identity{}, connectionRequest{}, fmt.Errorf("parse login: %w", err)
	}
	return id, req, nil
}

// parseLoginPayload does the work of parseLogin; its errors do not say
// "parse login".
func parseLoginPayload(payload []byte) (Identity, connectionRequest, error) {
	var pk login
	n, err := pk.Decode(payload)
	if err != nil {
		return Identity{}, connectionRequest{}, err
	}
	if n != len(payload) {
		return Identity{}, connectionRequest{}, fmt.Errorf("%d trailing bytes", len(payload)-n)
	}
	var req connectionRequest
	if err := req.decode(pk.ConnectionRequest); err != nil {
		return Identity{}, connectionRequest{}, fmt.Errorf("connection request: %w", err)
	}
	var cd clientDataClaims
	raw, cdOK := jwtPayload(req.ClientData)
	if cdOK && json.Unmarshal(raw, &cd) != nil {
		cdOK = false
	}
	name, xuid, ident := req.identity(cd, cdOK)
	if name == "" {
		return Identity{}, connectionRequest{}, errNoDisplayName
	}
	if err := validateDisplayName(name); err != nil {
		return Identity{}, connectionRequest{}, err
	}
	if err := validateXUID(xuid); err != nil {
		return Identity{}, connectionRequest{}, err
	}
	id := Identity{DisplayName: name, XUID: xuid, Protocol: pk.ClientProtocol, IdentityPublicKey: req.publicKey()}
	if cdOK {
		id.ClientData = ClientData{
			DeviceOS: cd.DeviceOS, DeviceModel: cd.DeviceModel, DeviceID: cd.DeviceID,
			GameVersion: cd.GameVersion, LanguageCode: cd.LanguageCode,
			ServerAddress: cd.ServerAddress, SkinID: cd.SkinID,
			ThirdPartyName: cd.ThirdPartyName, PlatformOnlineID: cd.PlatformOnlineID,
			ClientRandomID: cd.ClientRandomID, CurrentInputMode: cd.CurrentInputMode,
			DefaultInputMode: cd.DefaultInputMode, GUIScale: cd.GUIScale, UIProfile: cd.UIProfile,
			Raw: raw,
		}
	}
	switch {
	case ident != "":
		u, err := uuid.Parse(ident)
		if err != nil {
			return Identity{}, connectionRequest{}, fmt.Errorf("identity: %w", err)
		}
		id.UUID = u
	case xuid != "":
		id.UUID = UUIDFromXUID(xuid)
	}
	return id, req, nil
}

// identity returns the first player identity the request's JWTs carry; cd
// is the client data, if ok.
func (c *connectionRequest) identity(cd clientDataClaims, ok bool) (name, xuid, ident string) {
	for i := len(c.Chain) - 1; i >= 0; i-- {
		var cl ChainClaims
		if jwtClaims(c.Chain[i], &cl) && cl.ExtraData.DisplayName != "" {
			return cl.ExtraData.DisplayName, cl.ExtraData.XUID, cl.ExtraData.Identity
		}
	}
	var tok TokenClaims
	if jwtClaims(c.Token, &tok) && tok.XName != "" {
		return tok.XName, tok.XID, tok.LegUUID
	}
	if ok {
		if cd.ThirdPartyName != "" {
			return cd.ThirdPartyName, "", ""
		}
		return cd.DisplayName, "", ""
	}
	return "", "", ""
}

// publicKey returns the client's identity public key as the request
// carries it: the token's cpk, as gophertunnel prefers it, or else the
// identityPublicKey of the last chain JWT that has one.
func (c *connectionRequest) publicKey() string {
	var tok TokenClaims
	if jwtClaims(c.Token, &tok) && tok.CPK != "" {
		return tok.CPK
	}
	for i := len(c.Chain) - 1; i >= 0; i-- {
		var cl ChainClaims
		if jwtClaims(c.Chain[i], &cl) && cl.IdentityPublicKey != "" {
			return cl.IdentityPublicKey
		}
	}
	return ""
}

// jwtClaims decodes the payload (middle part) of the compact JWT tok into v
// and reports whether it could. The signature is not checked. Padding and
// the standard base64 alphabet are tolerated, as clients differ.
func jwtClaims(tok string, v any) bool {
	b, ok := jwtPayload(tok)
	return ok && json.Unmarshal(b, v) == nil
}

// jwtPayload returns the decoded payload (middle part) of the compact JWT
// tok, not checking the signature, and whether it could be decoded.
func jwtPayload(tok string) ([]byte, bool) {
	first := strings.IndexByte(tok, '.')
	if first < 0 {
		return nil, false
	}
	rest := tok[first+1:]
	last := strings.IndexByte(rest, '.')
	if last < 0 {
		return nil, false
	}
	seg := strings.TrimRight(rest[:last], "=")
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(seg); err != nil {
			return nil, false
		}
	}
	return b, true
}

// validateDisplayName refuses names that are too long or carry control
// characters, since the name ends up in messages and logs. encoding/json has
// already made it valid UTF-8.
func validateDisplayName(name string) error {
	if len(name) > maxDisplayNameSize {
		return fmt.Errorf("display name of %d bytes exceeds %d", len(name), maxDisplayNameSize)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("display name %q has control characters", name)
	}
	return nil
}

// validateXUID refuses an XUID that is not a short decimal number.
func validateXUID(xuid string) error {
	if len(xuid) > maxXUIDSize {
		return fmt.Errorf("XUID of %d bytes exceeds %d", len(xuid), maxXUIDSize)
	}
	for i := range len(xuid) {
		if xuid[i] < '0' || xuid[i] > '9' {
			return fmt.Errorf("XUID %q is not decimal", xuid)
		}
	}
	return nil
}
