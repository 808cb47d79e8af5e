package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/nethernet"
	"github.com/rs/zerolog"
)

// loadCookieSecret sets c.CookieSecret and c.CookieSecretFile from the
// secret file at path (relative to dir), creating it if it is missing; an
// empty path leaves both unset.
func loadCookieSecret(c *server.Config, path, dir string, log *zerolog.Logger) error {
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	_, statErr := os.Stat(path)
	secret, err := server.LoadOrCreateCookieSecret(path)
	if err != nil {
		return server.FileError("network.cookie_secret_file", err, "")
	}
	c.Network.CookieSecret, c.Network.CookieSecretFile = secret, path
	if errors.Is(statErr, fs.ErrNotExist) {
		log.Info().Str("path", path).Msg("created cookie secret file")
	} else if fi, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		log.Warn().Str("path", path).Stringer("mode", fi.Mode().Perm()).
			Msg("cookie secret file is readable by other users; whoever reads it can forge cookies and query tokens (chmod 600 it)")
	}
	return nil
}

// loadNetherNet resolves the NetherNet files of uc into c: the TLS files
// against the config file's directory, the identity file against the
// GUID file's, loading (or creating) the identity key.
func loadNetherNet(c *server.Config, uc UserConfig, log *zerolog.Logger) error {
	n := uc.Network
	resolve := func(path, dir string) string {
		if path == "" || filepath.IsAbs(path) {
			return path
		}
		return filepath.Join(dir, path)
	}
	c.NetherNet.TLSCert = resolve(n.NetherNetTLSCert, uc.dir)
	c.NetherNet.TLSKey = resolve(n.NetherNetTLSKey, uc.dir)
	if !n.NetherNet || n.NetherNetIDFile == "" {
		return nil
	}
	c.NetherNet.IdentityFile = resolve(n.NetherNetIDFile, filepath.Dir(c.GUIDFile))
	key, created, err := nethernet.LoadIdentityKey(c.NetherNet.IdentityFile)
	if err != nil {
		return server.FileError("network.nethernet_identity_file", err,
			"delete the file to make a new key (players who trusted the old one are asked again), or set network.nethernet_identity_file to the right file")
	}
	c.NetherNet.IdentityKey = key
	if created {
		log.Info().Str("path", c.NetherNet.IdentityFile).Msg("created NetherNet identity key file")
	}
	return nil
}
