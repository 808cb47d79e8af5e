package config

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"gopkg.in/natefinch/lumberjack.v2"
)

// maxLogFileMiB bounds log.file_max_mib: 10 GiB per file.
const maxLogFileMiB = 10 << 10

// Logger returns the logger the [log] table asks for, and a Closer that
// closes its file (a no-op without log.file). Lines of log.level and above
// are written in log.format to log.file, rotated by lumberjack at
// log.file_max_mib keeping log.file_backups old files, or to standard error
// when log.file is empty. Console lines are coloured only when they go to a
// terminal. Basalt writes every duration as a Go duration string ("1.5s").
// A log.file that cannot be opened is an error naming the key, found here
// rather than at the first line written.
func (uc UserConfig) Logger() (*zerolog.Logger, io.Closer, error) {
	fd := os.Stderr.Fd()
	return uc.logger(os.Stderr, isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd))
}

// logger is Logger writing to stderr, which is a terminal if terminal.
func (uc UserConfig) logger(stderr io.Writer, terminal bool) (*zerolog.Logger, io.Closer, error) {
	lvl, err := zerolog.ParseLevel(uc.Log.Level)
	if err != nil || !slices.Contains(logLevels, uc.Log.Level) {
		return nil, nil, uc.withLines(keyError("log.level", "%q is not a level; set it to one of trace, debug, info, warn, error", uc.Log.Level))
	}
	var (
		w          io.Writer = stderr
		closer     io.Closer = nopCloser{}
		timeFormat           = time.TimeOnly
	)
	if uc.Log.File != "" {
		path := uc.resolve(uc.Log.File)
		// lumberjack opens the file at the first write; open it now so
		// a bad path is reported before the server starts. Its directory
		// is created, as lumberjack (and BDS, PocketMine) would.
		err := os.MkdirAll(filepath.Dir(path), 0o755)
		var f *os.File
		if err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		}
		if err != nil {
			return nil, nil, uc.withLines(keyError("log.file", "%v; fix the path or its directory's permissions, or set log.file = \"\" to log to standard error", err))
		}
		_ = f.Close()
		lj := &lumberjack.Logger{
			Filename:   path,
			MaxSize:    uc.Log.FileMaxMiB, // lumberjack's megabytes are MiB
			MaxBackups: uc.Log.FileBackups,
			LocalTime:  true,
		}
		w, closer, terminal = lj, lj, false
		timeFormat = time.DateTime
	}
	if uc.Log.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, NoColor: !terminal, TimeFormat: timeFormat}
	}
	l := zerolog.New(w).Level(lvl).With().Timestamp().Logger()
	return &l, closer, nil
}

// nopCloser is the Closer of a logger without a file.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }
