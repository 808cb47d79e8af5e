package access

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/basaltmc/basalt/server/internal/file"
)

// DefaultPollInterval is how often the allowlist and ban files are
// checked for changes.
const DefaultPollInterval = 2 * time.Second

// maxFileSize caps the allowlist and ban files: a million entries is far
// beyond any server, and a file that size is a mistake.
const maxFileSize = 64 << 20

// listFile is one of the files the access lists live in. Its mu orders
// the reads and writes of the file, so a version written is never older
// than one read or written before it; it is taken before Lists.mu, never
// while holding it, so that no login waits for the disk.
type listFile struct {
	path string

	mu      sync.Mutex
	modTime time.Time // of the version last read or written
	size    int64
	// unparsed is set while the version on disk is one that did not
	// parse: a hand edit under way, which no write overwrites.
	unparsed bool
	// learned holds the XUIDs Admit learned and no write has saved yet,
	// by name in lower case; guarded by Lists.mu.
	learned map[string]string
	// testHookWrite, if set, runs in writeList before the rename.
	testHookWrite func()
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
	if err == nil && f.testHookWrite != nil {
		f.testHookWrite()
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

// learn records that the entry named name learned xuid, to be saved by
// the next write, and reports whether there is a file to save it in.
// Lists.mu is held.
func (f *listFile) learn(name, xuid string) bool {
	if f.path == "" {
		return false
	}
	if f.learned == nil {
		f.learned = make(map[string]string)
	}
	f.learned[strings.ToLower(name)] = xuid
	return true
}

// forget drops the learned XUIDs saved, those of saved that are still
// the ones learned. Lists.mu is held.
func (f *listFile) forget(saved map[string]string) {
	for k, v := range saved {
		if f.learned[k] == v {
			delete(f.learned, k)
		}
	}
}

// learnedXUID returns the XUID learned for an entry named name with none,
// "" if there is none. Lists.mu is held.
func (f *listFile) learnedXUID(name, xuid string) string {
	if xuid != "" || name == "" {
		return xuid
	}
	return f.learned[strings.ToLower(name)]
}

// HasFiles reports whether either list is kept in a file.
func (a *Lists) HasFiles() bool { return a.allowF.path != "" || a.bansF.path != "" }

// readAllowlist reads and checks the allowlist file. a.allowF.mu is held.
func (a *Lists) readAllowlist() ([]AllowlistEntry, error) {
	var l []AllowlistEntry
	if err := a.allowF.readList(&l); err != nil {
		return nil, fmt.Errorf("allowlist: %w", err)
	}
	for i, e := range l {
		if e.Name == "" && e.XUID == "" {
			return nil, fmt.Errorf("allowlist: %s: entry %d names no player", a.allowF.path, i)
		}
	}
	return l, nil
}

// readBans reads and checks the ban file. a.bansF.mu is held.
func (a *Lists) readBans() ([]Ban, error) {
	var l []Ban
	if err := a.bansF.readList(&l); err != nil {
		return nil, fmt.Errorf("bans: %w", err)
	}
	for i, b := range l {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("bans: %s: entry %d: %w", a.bansF.path, i, err)
		}
	}
	return l, nil
}

// setAllowlist puts l in force, with the XUIDs learned and not yet saved.
// a.mu is held.
func (a *Lists) setAllowlist(l []AllowlistEntry) {
	for i := range l {
		l[i].XUID = a.allowF.learnedXUID(l[i].Name, l[i].XUID)
	}
	a.allow = l
}

// setBans puts l in force, with the XUIDs learned and not yet saved.
// a.mu is held.
func (a *Lists) setBans(l []Ban) {
	for i := range l {
		l[i].XUID = a.bansF.learnedXUID(l[i].Name, l[i].XUID)
	}
	a.bans = l
}

// LoadAllowlist reads the allowlist file, keeping the list in force if it
// cannot. No file configured keeps the list in memory only. XUIDs learned
// and not yet saved are kept.
func (a *Lists) LoadAllowlist() error { return load(a, &a.allowF, a.readAllowlist, a.setAllowlist) }

// LoadBans reads the ban file, keeping the list in force if it cannot.
// XUIDs learned and not yet saved are kept.
func (a *Lists) LoadBans() error { return load(a, &a.bansF, a.readBans, a.setBans) }

// load is LoadAllowlist and LoadBans: it reads f with read and puts what
// it holds in force with set.
func load[T any](a *Lists, f *listFile, read func() ([]T, error), set func([]T)) error {
	if f.path == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := read()
	f.unparsed = err != nil
	if err != nil {
		return err
	}
	f.stamp()
	a.mu.Lock()
	set(l)
	a.mu.Unlock()
	return nil
}

// updateAllowlist applies op (nil for none) to the allowlist and writes
// it to its file (see update).
func (a *Lists) updateAllowlist(op func([]AllowlistEntry) ([]AllowlistEntry, bool)) error {
	return update(a, &a.allowF, &a.allow, a.readAllowlist, a.setAllowlist, slices.Clone, op)
}

// updateBans applies op (nil for none) to the ban list and writes it to
// its file, leaving out bans that have expired (see update).
func (a *Lists) updateBans(op func([]Ban) ([]Ban, bool)) error {
	unexpired := func(bans []Ban) []Ban {
		now := time.Now()
		l := []Ban{}
		for _, b := range bans {
			if b.Expires.IsZero() || now.Before(b.Expires) {
				l = append(l, b)
			}
		}
		return l
	}
	return update(a, &a.bansF, &a.bans, a.readBans, a.setBans, unexpired, op)
}

// update applies op (nil for none) to *list, the list f holds, and writes
// what keep copies of it to f, if it has a path, unless op reports no
// change and no learned XUID waits to be saved. A file changed on disk
// since it was last read or written is read first with read and put in
// force with set, and op applied to what it holds, so a hand edit the
// poll has not seen yet survives; one that does not parse is not
// overwritten, and the error says why. The file is written after a.mu is
// released.
func update[T any](a *Lists, f *listFile, list *[]T, read func() ([]T, error), set func([]T),
	keep func([]T) []T, op func([]T) ([]T, bool)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var fresh []T
	var readErr error
	reread := false
	if f.path != "" && (f.changed() || f.unparsed) {
		fresh, readErr = read()
		reread, f.unparsed = readErr == nil, readErr != nil
	}
	a.mu.Lock()
	if reread {
		set(fresh)
	}
	write := op == nil || len(f.learned) > 0
	if op != nil {
		var changed bool
		*list, changed = op(*list)
		write = write || changed
	}
	l := keep(*list)
	saved := maps.Clone(f.learned)
	a.mu.Unlock()
	if f.path == "" || !write {
		return nil
	}
	if readErr != nil {
		return fmt.Errorf("not saved over the file, changed on disk: %w", readErr)
	}
	if l == nil {
		l = []T{} // [], not null
	}
	if err := f.writeList(l); err != nil {
		return err
	}
	a.mu.Lock()
	f.forget(saved)
	a.mu.Unlock()
	return nil
}

// SaveAllowlist writes the allowlist to its file, if it has one (see
// update for a file changed on disk).
func (a *Lists) SaveAllowlist() error { return a.updateAllowlist(nil) }

// SaveBans writes the ban list to its file, if it has one, leaving out
// bans that have expired (see update for a file changed on disk).
func (a *Lists) SaveBans() error { return a.updateBans(nil) }

// Learned returns a channel that receives a value when Admit has learned
// an XUID that SaveLearned has yet to write. Admit never writes a file
// itself, so that no login waits for the disk.
func (a *Lists) Learned() <-chan struct{} { return a.learnedC }

// SaveLearned writes the files whose lists learned an XUID since they
// were last written.
func (a *Lists) SaveLearned() error {
	a.mu.Lock()
	allow, bans := len(a.allowF.learned) > 0, len(a.bansF.learned) > 0
	a.mu.Unlock()
	var err error
	if allow {
		err = a.SaveAllowlist()
	}
	if bans {
		err = errors.Join(err, a.SaveBans())
	}
	return err
}

// Changed reports which of the files differ from the versions last read
// or written.
func (a *Lists) Changed() (allowlist, bans bool) {
	return a.allowF.isChanged(), a.bansF.isChanged()
}

// isChanged is changed for a file that may have no path, taking f.mu.
func (f *listFile) isChanged() bool {
	if f.path == "" {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed()
}

// Stamp records the files' current versions as seen, so that a version
// that does not parse is reported once, not at every poll.
func (a *Lists) Stamp() {
	for _, f := range []*listFile{&a.allowF, &a.bansF} {
		f.mu.Lock()
		f.stamp()
		f.mu.Unlock()
	}
}
