package nethernet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	gonn "github.com/df-mc/go-nethernet"
)

// identityPEMType is the PEM block type of the identity key file.
const identityPEMType = "EC PRIVATE KEY"

// LoadIdentityKey returns the server's NetherNet identity, the P-384 key
// whose public half clients see in every answer (and, over plain HTTP, are
// asked once to trust). It reads the PEM (SEC 1) key at path, or, when the
// file does not exist, makes a new key and writes it there with mode 0600,
// so the key, and the player's trust in it, outlives restarts. It reports
// whether it created the file. A file that exists but does not hold a
// P-384 key is an error, never replaced.
func LoadIdentityKey(path string) (key *ecdsa.PrivateKey, created bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key, err := parseIdentityKey(b)
		if err != nil {
			return nil, false, fmt.Errorf("identity key %s: %w", path, err)
		}
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: identityPEMType, Bytes: der})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it first: use theirs.
		return LoadIdentityKey(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	return key, true, nil
}

// parseIdentityKey reads a PEM SEC 1 P-384 private key.
func parseIdentityKey(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != identityPEMType {
		return nil, errors.New("no " + identityPEMType + " PEM block")
	}
	key, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	if key.Curve != elliptic.P384() {
		return nil, errors.New("not a P-384 key")
	}
	return key, nil
}

// identityLifetime is how long one issued server identity is handed out:
// go-nethernet's tokens last a minute, and a client checks the token's
// expiry when the answer arrives.
const identityLifetime = 30 * time.Second

// identityCache issues the server identity every answer carries (a
// self-signed ES384 token naming key), signing a new token at most every
// identityLifetime instead of once per offer.
type identityCache struct {
	key *ecdsa.PrivateKey

	mu     sync.Mutex
	cur    *gonn.Identity
	issued time.Time
}

// issue is go-nethernet's ListenConfig.IssueServerIdentity.
func (c *identityCache) issue(context.Context) (*gonn.Identity, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.cur != nil && now.Sub(c.issued) < identityLifetime && !now.Before(c.issued) {
		return c.cur, nil
	}
	id, err := gonn.GenerateServerIdentity(c.key, "self")
	if err != nil {
		return nil, err
	}
	c.cur, c.issued = id, now
	return id, nil
}
