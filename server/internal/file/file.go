// Package file holds the one way Basalt's server creates the files it keeps
// beside its configuration (the config file, the GUID, the cookie secret,
// the access lists): all at once, never over a file someone else made.
package file

import "os"

// CreateNew creates path with data and permissions perm, failing with
// fs.ErrExist if it is already there. A file it could not write fully is
// removed. It is safe for concurrent use: of two callers racing to create
// one path, one wins and the other gets fs.ErrExist.
func CreateNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}
