package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultAccessPollInterval is how often the allowlist and ban files are
// checked for changes.
const DefaultAccessPollInterval = 2 * time.Second

// maxAccessFileSize caps the allowlist and ban files: a million entries
// is far beyond any server, and a file that size is a mistake.
const maxAccessFileSize = 64 << 20

// accessFile is one of the files the access lists live in.
type accessFile struct {
	path    string
	modTime time.Time // of the version last read or written
	size    int64
}

// changed reports whether the file differs from the version last read or
// written.
func (f *accessFile) changed() bool {
	fi, err := os.Stat(f.path)
	if err != nil {
		return false // a file removed keeps the lists as they are
	}
	return !fi.ModTime().Equal(f.modTime) || fi.Size() != f.size
}

// stamp records the file's current version as seen.
func (f *accessFile) stamp() {
	if fi, err := os.Stat(f.path); err == nil {
		f.modTime, f.size = fi.ModTime(), fi.Size()
	}
}

// readList reads the JSON array at f into out, creating the file holding
// "[]" if it is missing.
func (f *accessFile) readList(out any) error {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		if werr := writeNew(f.path, []byte("[]\n"), 0o644); werr != nil && !errors.Is(werr, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", f.path, werr)
		}
		data, err = []byte("[]"), nil
	}
	if err != nil {
		return err
	}
	if len(data) > maxAccessFileSize {
		return fmt.Errorf("%s: %d bytes exceeds %d", f.path, len(data), maxAccessFileSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("[]")
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}

// writeList writes v as indented JSON to f, through a temporary file
// renamed over it so that a reader never sees half a file.
func (f *accessFile) writeList(v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	f.stamp()
	return nil
}

// loadAllow reads the allowlist file, keeping the list in force if it
// cannot. No file configured keeps the list in memory only.
func (a *access) loadAllow() error {
	if a.allowF.path == "" {
		return nil
	}
	var l []AllowlistEntry
	if err := a.allowF.readList(&l); err != nil {
		return fmt.Errorf("allowlist: %w", err)
	}
	for i, e := range l {
		if e.Name == "" && e.XUID == "" {
			return fmt.Errorf("allowlist: %s: entry %d names no player", a.allowF.path, i)
		}
	}
	a.mu.Lock()
	a.allow = l
	a.allowF.stamp()
	a.mu.Unlock()
	return nil
}

// loadBans reads the ban file, keeping the list in force if it cannot.
func (a *access) loadBans() error {
	if a.bansF.path == "" {
		return nil
	}
	var l []Ban
	if err := a.bansF.readList(&l); err != nil {
		return fmt.Errorf("bans: %w", err)
	}
	for i, b := range l {
		if err := b.validate(); err != nil {
			return fmt.Errorf("bans: %s: entry %d: %w", a.bansF.path, i, err)
		}
	}
	a.mu.Lock()
	a.bans = l
	a.bansF.stamp()
	a.mu.Unlock()
	return nil
}

// saveAllow writes the allowlist to its file, if it has one.
func (a *access) saveAllow() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.allowF.path == "" {
		return nil
	}
	l := a.allow
	if l == nil {
		l = []AllowlistEntry{}
	}
	return a.allowF.writeList(l)
}

// saveBans writes the ban list to its file, if it has one, leaving out
// bans that have expired.
func (a *access) saveBans() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bansF.path == "" {
		return nil
	}
	now := time.Now()
	l := []Ban{}
	for _, b := range a.bans {
		if b.Expires.IsZero() || now.Before(b.Expires) {
			l = append(l, b)
		}
	}
	return a.bansF.writeList(l)
}

// Reload reads the allowlist and ban files again and disconnects the
// players online they no longer admit. A file that does not parse keeps
// its list as it was, and the error says why. The server reloads on its
// own when a file changes; main reloads on SIGHUP too.
func (srv *Server) Reload() error {
	err := srv.loadAccess()
	if err != nil {
		srv.log.Error().Err(err).Msg("reload: keeping the lists in force")
	} else {
		srv.log.Info().Msg("reloaded the allowlist and ban list")
	}
	srv.enforceAccess()
	return err
}

// watchAccess reloads a list whose file changed, every interval, until
// done is closed.
func (srv *Server) watchAccess(interval time.Duration, done <-chan struct{}) {
	defer srv.loops.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		a := &srv.access
		a.mu.Lock()
		allow, bans := a.allowF.path != "" && a.allowF.changed(), a.bansF.path != "" && a.bansF.changed()
		a.mu.Unlock()
		if !allow && !bans {
			continue
		}
		var err error
		if allow {
			err = allowlistError(a.loadAllow())
		}
		if bans {
			err = errors.Join(err, bansError(a.loadBans()))
		}
		err = srv.conf.locate(err)
		if err != nil {
			// Stamp the bad version, so it is reported once, not every
			// interval.
			a.mu.Lock()
			a.allowF.stamp()
			a.bansF.stamp()
			a.mu.Unlock()
			srv.log.Error().Err(err).Msg("a changed access file does not parse; keeping the lists in force")
			continue
		}
		srv.log.Info().Bool("allowlist", allow).Bool("bans", bans).Msg("reloaded changed access files")
		srv.enforceAccess()
	}
}
