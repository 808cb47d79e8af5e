package session

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/md5"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// The identity a Login carries, as both the session (which reads it
// unverified) and session/auth (which verifies it) decode it.

// ChainClaims are the identity claims of a Login's chain JWT: the key it
// certifies and, in the last JWT of an Xbox chain (or the only one of a
// self-signed chain), extraData naming the player.
type ChainClaims struct {
	IdentityPublicKey string `json:"identityPublicKey"`
	ExtraData         struct {
		DisplayName string `json:"displayName"`
		XUID        string `json:"XUID"`
		Identity    string `json:"identity"`
	} `json:"extraData"`
}

// TokenClaims are the identity claims of the multiplayer token that
// 1.26.10+ clients send beside the chain: gamertag, XUID, legacy UUID and
// the client's public key (cpk).
type TokenClaims struct {
	XName   string `json:"xname"`
	XID     string `json:"xid"`
	LegUUID string `json:"leguuid"`
	CPK     string `json:"cpk"`
}

// ParsePublicKey parses a public key as Logins carry it: base64 (standard
// alphabet, padding optional, as clients differ) of a PKIX DER P-384 ECDSA
// key.
func ParsePublicKey(b64 string) (*ecdsa.PublicKey, error) {
	if b64 == "" {
		return nil, errors.New("no identity public key")
	}
	der, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		if der, err = base64.RawStdEncoding.DecodeString(b64); err != nil {
			return nil, fmt.Errorf("identity public key: %w", err)
		}
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("identity public key: %w", err)
	}
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok || k.Curve != elliptic.P384() {
		return nil, errors.New("identity public key is not a P-384 ECDSA key")
	}
	return k, nil
}

// MarshalPublicKey returns key as Logins carry it: base64 (standard
// alphabet) of its PKIX DER form; "" if key cannot be marshalled.
func MarshalPublicKey(key *ecdsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(der)
}

// UUIDFromXUID derives the identity UUID of a player from its XUID: an MD5
// (version 3) UUID of "pocket-auth-1-xuid:" + XUID, as gophertunnel derives
// it for logins that carry only the multiplayer token.
func UUIDFromXUID(xuid string) uuid.UUID {
	h := md5.New()
	h.Write([]byte("pocket-auth-1-xuid:"))
	h.Write([]byte(xuid))
	var id uuid.UUID
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x30 // version 3
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}
