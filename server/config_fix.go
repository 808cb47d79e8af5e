package server

import (
	"errors"
	"io/fs"
	"syscall"
)

// fileError reports a file that key names and that could not be used, with
// the fix: for a file that could not be read, created or written, what to
// do about its path or permissions; for one that was read but does not
// hold what it should, contentFix, or nothing when err already says how
// to fix it ("" for contentFix).
func fileError(key string, err error, contentFix string) error {
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
