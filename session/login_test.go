package session

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestParseLogin(t *testing.T) {
	steveUUID := uuid.MustParse("0b8ea5e2-7c8e-4a41-a3c5-9a6f7ad8d3b1")
	extra := func(name, xuid, id string) string {
		return fakeJWT(t, map[string]any{"extraData": map[string]any{
			"displayName": name, "XUID": xuid, "identity": id,
		}})
	}
	clientData := fakeJWT(t, map[string]any{"ThirdPartyName": "Alex", "SkinData": "AAAA"})
	token := fakeJWT(t, map[string]any{"xname": "Tokenized", "xid": "2535400000000002", "cpk": "key"})
	legacy := func(chain ...string) string {
		b, _ := json.Marshal(map[string]any{"chain": chain})
		return string(b)
	}
	tests := []struct {
		name    string
		payload []byte
		want    Identity
	}{
		{"new form, Xbox chain", steveLogin(t),
			Identity{DisplayName: "Steve", XUID: "2535400000000001", UUID: steveUUID, Protocol: CurrentProtocol}},
		{"legacy form, self-signed chain",
			loginPayload(2169, legacy(extra("Offline", "", steveUUID.String())), clientData),
			Identity{DisplayName: "Offline", UUID: steveUUID, Protocol: 2169}},
		{"empty chain element and a token, as gophertunnel sends",
			loginPayload(CurrentProtocol, newFormChain(t, []string{""}, token), clientData),
			Identity{DisplayName: "Tokenized", XUID: "2535400000000002",
				UUID: UUIDFromXUID("2535400000000002"), Protocol: CurrentProtocol}},
		{"token with leguuid",
			loginPayload(CurrentProtocol, newFormChain(t, nil, fakeJWT(t, map[string]any{
				"xname": "Guest", "leguuid": steveUUID.String()})), clientData),
			Identity{DisplayName: "Guest", UUID: steveUUID, Protocol: CurrentProtocol}},
		{"client data fallback",
			loginPayload(CurrentProtocol, newFormChain(t, []string{"garbage", "a.b.c"}, ""), clientData),
			Identity{DisplayName: "Alex", Protocol: CurrentProtocol}},
		{"client data DisplayName",
			loginPayload(CurrentProtocol, legacy(), fakeJWT(t, map[string]any{"DisplayName": "Dee"})),
			Identity{DisplayName: "Dee", Protocol: CurrentProtocol}},
		{"chain wins over token",
			loginPayload(CurrentProtocol, newFormChain(t, []string{extra("Chain", "", "")}, token), clientData),
			Identity{DisplayName: "Chain", Protocol: CurrentProtocol}},
		{"padded and standard base64",
			loginPayload(CurrentProtocol, legacy(stdPaddedJWT(t, map[string]any{"extraData": map[string]any{
				"displayName": "Pad~?>", "XUID": "1"}})), ""),
			Identity{DisplayName: "Pad~?>", XUID: "1", UUID: UUIDFromXUID("1"), Protocol: CurrentProtocol}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLogin(tc.payload)
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			got.ClientData, got.IdentityPublicKey = ClientData{}, ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// stdPaddedJWT encodes the claims with the standard alphabet and padding,
// which some clients have been seen to send.
func stdPaddedJWT(t *testing.T, claims any) string {
	t.Helper()
	body, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return "e30=." + base64.StdEncoding.EncodeToString(body) + ".c2ln"
}

func TestUUIDFromXUID(t *testing.T) {
	// The MD5 of "pocket-auth-1-xuid:2535400000000001" with version 3 and
	// RFC 4122 variant bits, as gophertunnel v1.62.0 computes it (checked
	// with Python's hashlib).
	got := UUIDFromXUID("2535400000000001")
	if got.Version() != 3 || got.Variant() != uuid.RFC4122 {
		t.Errorf("got version %d variant %v, want 3 RFC4122", got.Version(), got.Variant())
	}
	if want := uuid.MustParse("058728db-7a88-3a63-af82-7174a02a2e35"); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseLoginRefuses(t *testing.T) {
	extra := func(name, xuid, id string) string {
		b, _ := json.Marshal(map[string]any{"chain": []string{fakeJWT(t, map[string]any{"extraData": map[string]any{
			"displayName": name, "XUID": xuid, "identity": id,
		}})}})
		return string(b)
	}
	tooMany := make([]string, maxChainLength+1)
	for i := range tooMany {
		tooMany[i] = "a.e30.c"
	}
	okChain := extra("Steve", "", "")
	withLen := func(chainLen int32, rest string) []byte {
		req := binary.LittleEndian.AppendUint32(nil, uint32(chainLen))
		req = append(req, rest...)
		b := binary.BigEndian.AppendUint32(nil, uint32(CurrentProtocol))
		b = binary.AppendUvarint(b, uint64(len(req)))
		return append(b, req...)
	}
	tests := []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "unexpected EOF"},
		{"request longer than packet", unhex(t, "00 00 08 91 05 00"), "exceeds remaining"},
		{"negative chain length", withLen(-1, ""), "negative length"},
		{"chain longer than request", withLen(100, "{}"), "exceeds remaining"},
		{"chain JSON over the cap", withLen(maxLoginJSONSize+1, ""), "exceeds"},
		{"no client data length", withLen(2, "{}"), "client data"},
		{"trailing bytes", append(loginPayload(CurrentProtocol, okChain, ""), 0), "trailing"},
		{"not JSON", loginPayload(CurrentProtocol, "nope", ""), "chain JSON"},
		{"certificate not JSON", loginPayload(CurrentProtocol, `{"Certificate":"{"}`, ""), "certificate"},
		{"chain too long", loginPayload(CurrentProtocol, newFormChain(t, tooMany, ""), ""), "exceeds 8"},
		{"no name anywhere", loginPayload(CurrentProtocol, `{"chain":[]}`, "x.e30.y"), "no display name"},
		{"name too long", loginPayload(CurrentProtocol, extra(strings.Repeat("n", 65), "", ""), ""), "exceeds 64"},
		{"name with newline", loginPayload(CurrentProtocol, extra("a\nb", "", ""), ""), "control"},
		{"XUID not decimal", loginPayload(CurrentProtocol, extra("Steve", "12ab", ""), ""), "not decimal"},
		{"XUID too long", loginPayload(CurrentProtocol, extra("Steve", strings.Repeat("1", 21), ""), ""), "exceeds 20"},
		{"bad identity UUID", loginPayload(CurrentProtocol, extra("Steve", "", "not-a-uuid"), ""), "identity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := ParseLogin(tc.payload)
			if err == nil {
				t.Fatalf("got %+v, nil; want error containing %q", id, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func FuzzParseLogin(f *testing.F) {
	f.Add(steveLogin(f))
	f.Add(loginPayload(2169, `{"chain":["a.eyJleHRyYURhdGEiOnsiZGlzcGxheU5hbWUiOiJTIn19.c"]}`, ""))
	f.Add(loginPayload(CurrentProtocol, newFormChain(f, []string{""},
		fakeJWT(f, map[string]any{"xname": "T", "xid": "1"})), "a.eyJUaGlyZFBhcnR5TmFtZSI6IkEifQ.b"))
	f.Add(loginPayload(CurrentProtocol, `{"Certificate":"{\"chain\":[]}"}`, "x.e30.y"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		id, err := ParseLogin(payload)
		if err != nil {
			return
		}
		if id.DisplayName == "" || len(id.DisplayName) > maxDisplayNameSize {
			t.Errorf("got display name %q, want 1 to %d bytes", id.DisplayName, maxDisplayNameSize)
		}
		if validateXUID(id.XUID) != nil {
			t.Errorf("got XUID %q, want a short decimal", id.XUID)
		}
		if id.Protocol != int32(binary.BigEndian.Uint32(payload)) {
			t.Errorf("got protocol %d, want the payload's first four bytes", id.Protocol)
		}
	})
}
