package access

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/basaltmc/basalt/server/internal/file"
)

// DefaultPollInterval is how often the allowlist and ban files are
// checked for changes.
const DefaultPollInterval = 2 * time.Second

// maxFileSize caps the allowlist and ban files: a million entries is far
// beyond any server, and a file that size is a mistake.
const maxFileSize = 64 << 20

// listFile is one of the files the access lists live in.
type listFile struct {
	path    string
	modTime time.Time // of the version last read or written
	size    int64
}

// changed reports whether the file differs from the version last read or
// written.
func (f *listFile) changed() bool {
	fi, err := os.Stat(f.path)
	if err != nil {
		return false // a file removed keeps the lists as they are
	}
	return !fi.ModTime().Equal(f.modTime) || fi.Size() != f.size
}

// stamp records the file's current version as seen.
func (f *listFile) stamp() {
	if fi, err := os.Stat(f.path); err == nil {
		f.modTime, f.size = fi.ModTime(), fi.Size()
	}
}

// readList reads the JSON array at f into out, creating the file holding
// "[]" if it is missing.
func (f *listFile) readList(out any) error {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		if werr := file.CreateNew(f.path, []byte("[]\n"), 0o644); werr != nil && !errors.Is(werr, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", f.path, werr)
		}
		data, err = []byte("[]"), nil
	}
	if err != nil {
		return err
	}
	if len(data) > maxFileSize {
		return fmt.Errorf("%s: %d bytes exceeds %d", f.path, len(data), maxFileSize)
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
func (f *listFile) writeList(v any) error {
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

// HasFiles reports whether either list is kept in a file.
func (a *Lists) HasFiles() bool { return a.allowF.path != "" || a.bansF.path != "" }

// LoadAllowlist reads the allowlist file, keeping the list in force if it
// cannot. No file configured keeps the list in memory only.
func (a *Lists) LoadAllowlist() error {
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

// LoadBans reads the ban file, keeping the list in force if it cannot.
func (a *Lists) LoadBans() error {
	if a.bansF.path == "" {
		return nil
	}
	var l []Ban
	if err := a.bansF.readList(&l); err != nil {
		return fmt.Errorf("bans: %w", err)
	}
	for i, b := range l {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("bans: %s: entry %d: %w", a.bansF.path, i, err)
		}
	}
	a.mu.Lock()
	a.bans = l
	a.bansF.stamp()
	a.mu.Unlock()
	return nil
}

// SaveAllowlist writes the allowlist to its file, if it has one.
func (a *Lists) SaveAllowlist() error {
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

// SaveBans writes the ban list to its file, if it has one, leaving out
// bans that have expired.
func (a *Lists) SaveBans() error {
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

// Changed reports which of the files differ from the versions last read
// or written.
func (a *Lists) Changed() (allowlist, bans bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.allowF.path != "" && a.allowF.changed(), a.bansF.path != "" && a.bansF.changed()
}

// Stamp records the files' current versions as seen, so that a version
// that does not parse is reported once, not at every poll.
func (a *Lists) Stamp() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allowF.stamp()
	a.bansF.stamp()
}
