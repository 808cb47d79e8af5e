package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
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

// keyError reports a problem with one config key.
func keyError(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// keyLines returns the line on which the TOML document data sets each key,
// by its dotted name ("server.max_players"). A document that does not
// parse gives what was read before the error.
func keyLines(data []byte) map[string]int {
	lines := make(map[string]int)
	p := unstable.Parser{}
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(n.Key())
		case unstable.KeyValue:
			key := strings.Join(append(append([]string(nil), table...), keyParts(n.Key())...), ".")
			lines[key] = p.Shape(n.Raw).Start.Line
		}
	}
	return lines
}

// keyParts returns the parts of a dotted key.
func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// withLines sets the Line of every KeyError in err (a single error or an
// errors.Join of them) to the line of the file uc was loaded from that set
// the key, taking the first key named that the file sets; an index ("[2]")
// after a key is looked up as the key. It returns err.
func (uc UserConfig) withLines(err error) error {
	if err == nil || uc.lines == nil {
		return err
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if ke, ok := errors.AsType[*KeyError](e); ok {
			ke.Line = uc.keyLine(ke.Key)
		}
	}
	if len(errs) == 1 {
		return err
	}
	// In the file's order, keys left at their default last.
	slices.SortStableFunc(errs, func(a, b error) int { return cmpLine(lineOf(a), lineOf(b)) })
	return errors.Join(errs...)
}

// keyLine returns the line of the file uc was loaded from that set key, or
// the first of several keys ("a, b") that the file sets; an index ("[2]")
// after a key is looked up as the key. 0 means none.
func (uc UserConfig) keyLine(key string) int { return keyLine(uc.lines, key) }

// keyLine returns the line lines gives key, as UserConfig.keyLine.
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
	if err == nil || c.lines == nil {
		return err
	}
	switch e := err.(type) {
	case *KeyError:
		e.Line = keyLine(c.lines, e.Key)
	case *listenError:
		e.line = keyLine(c.lines, e.key)
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

// lineOf returns the line of err if it is a KeyError with one, else 0.
func lineOf(err error) int {
	if ke, ok := errors.AsType[*KeyError](err); ok {
		return ke.Line
	}
	return 0
}

// cmpLine orders lines ascending with 0 (unknown) last.
func cmpLine(a, b int) int {
	switch {
	case a == b:
		return 0
	case a == 0:
		return 1
	case b == 0:
		return -1
	}
	return a - b
}
