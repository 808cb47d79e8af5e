package wire

import (
	"errors"
	"fmt"
)

// Errors returned by decoders besides io.ErrUnexpectedEOF.
var (
	// ErrBadMagic is returned when an offline message lacks the magic.
	ErrBadMagic = errors.New("offline message magic mismatch")
	// ErrUnexpectedID is returned when a message starts with another ID.
	ErrUnexpectedID = errors.New("unexpected message id")
	// ErrInvalid is returned for a field whose value the layout forbids.
	ErrInvalid = errors.New("invalid field")
	// ErrTooMany is returned when a count exceeds a hard cap.
	ErrTooMany = errors.New("count exceeds limit")
)

// decodeErr wraps err with the name of the message being decoded.
func decodeErr(name string, err error) error {
	return fmt.Errorf("decode %s: %w", name, err)
}

// checkID verifies that b starts with id.
func checkID(b []byte, id byte) error {
	if len(b) < 1 {
		return errUnexpectedEOF
	}
	if b[0] != id {
		return ErrUnexpectedID
	}
	return nil
}
