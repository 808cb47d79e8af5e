package server

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// KeyError is a problem with the value of one configuration key, or of
// several named together ("network.address_v4, network.address_v6"). Line
// is the line of the file that set the key, 0 when it was not read from a
// file or the file left the key at its default.
type KeyError struct {
	Key  string
	Line int
	Msg  string
}

// Error names the line, when known, and the key before the message.
func (e *KeyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Key, e.Msg)
	}
	return e.Key + ": " + e.Msg
}

// Locate sets e.Line to the line lines gives e.Key (a key's dotted name
// to the line of the file that set it), or to the first of several keys
// ("a, b") that it has; an index ("[2]") after a key is looked up as the
// key. A key lines does not have leaves Line 0.
func (e *KeyError) Locate(lines map[string]int) { e.Line = keyLine(lines, e.Key) }

// keyError reports a problem with one config key.
func keyError(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// keyLine returns the line lines gives key, as KeyError.Locate does.
func keyLine(lines map[string]int, key string) int {
	for k := range strings.SplitSeq(key, ", ") {
		k, _, _ = strings.Cut(k, "[")
		if line, ok := lines[k]; ok {
			return line
		}
	}
	return 0
}

// locate sets, in every error about a key within err (wrapped or joined
// at any depth), the line of the configuration file that set the key, so
// that errors found once the server runs, such as a listener's address
// that cannot be bound or an allowlist file that does not parse, point at
// it too. It must run before err is wrapped with fmt.Errorf, which renders
// the message at once. It returns err.
func (c *Config) locate(err error) error {
	if err == nil || c.KeyLines == nil {
		return err
	}
	switch e := err.(type) {
	case *KeyError:
		e.Locate(c.KeyLines)
	case *listenError:
		e.line = keyLine(c.KeyLines, e.key)
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			c.locate(e)
		}
	case interface{ Unwrap() error }:
		c.locate(u.Unwrap())
	}
	return err
}

// FileError reports a file that key names and that could not be used, with
// the fix: for a file that could not be read, created or written, what to
// do about its path or permissions; for one that was read but does not
// hold what it should, contentFix, or nothing when err already says how
// to fix it ("" for contentFix).
func FileError(key string, err error, contentFix string) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		var fix string
		switch {
		case errors.Is(err, fs.ErrPermission):
			fix = "give the user the server runs as access to it and its directory, or set " + key + " to a path that user can write"
		case errors.Is(err, syscall.EISDIR):
			fix = "set " + key + " to the path of a file, not of a directory"
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			fix = "create its directory, or set " + key + " to a path in one that exists"
		default:
			fix = "fix the file or its directory, or set " + key + " to another path"
		}
		return keyError(key, "%v; %s", err, fix)
	}
	if contentFix == "" {
		return keyError(key, "%v", err)
	}
	return keyError(key, "%v; %s", err, contentFix)
}
