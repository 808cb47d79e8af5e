package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/basaltmc/basalt/server"
	"github.com/pelletier/go-toml/v2/unstable"
)

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
		if ke, ok := errors.AsType[*server.KeyError](e); ok {
			ke.Locate(uc.lines)
		}
	}
	if len(errs) == 1 {
		return err
	}
	// In the file's order, keys left at their default last.
	slices.SortStableFunc(errs, func(a, b error) int { return cmpLine(lineOf(a), lineOf(b)) })
	return errors.Join(errs...)
}

// lineOf returns the line of err if it is a KeyError with one, else 0.
func lineOf(err error) int {
	if ke, ok := errors.AsType[*server.KeyError](err); ok {
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

// keyError reports a problem with one config key.
func keyError(key, format string, args ...any) error {
	return &server.KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}
