// Command basalt runs a Minecraft Bedrock server skeleton on Basalt's own
// RakNet transport.
//
// Usage:
//
//	go run . [-config config.toml]
//
// It writes the default configuration if the file is missing, loads it and
// serves until SIGINT or SIGTERM (or the console's stop), then tells every
// player the server is closing and exits. A second signal during shutdown
// exits at once. SIGHUP rereads the allowlist and ban files. Commands typed
// on standard input (help lists them) run unless it is /dev/null.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/basaltmc/basalt/server"
	"github.com/rs/zerolog"
)

func main() {
	path := flag.String("config", "config.toml", "path of the configuration file (created if missing)")
	flag.Parse()
	if err := run(*path); err != nil {
		fmt.Fprintf(os.Stderr, "basalt: %v\n", err)
		os.Exit(1)
	}
}

func run(path string) error {
	uc, err := server.LoadConfig(path)
	if err != nil {
		return err
	}
	log := newLogger(uc.Log.Format, uc.Log.Level)
	conf, err := uc.Config(&log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore default handling: a second Ctrl-C kills
	}()
	srv := conf.New()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			_ = srv.Reload() // it logs what happened
		}
	}()
	if server.ConsoleInput(os.Stdin) {
		go func() { _ = srv.RunConsole(os.Stdin, stop) }() // stop: as Ctrl-C
	}
	return srv.Run(ctx)
}

// newLogger returns the logger the configuration asks for: human-readable
// lines or JSON on stderr, at the given level (both checked by LoadConfig, so
// the level parses).
func newLogger(format, level string) zerolog.Logger {
	var w io.Writer = os.Stderr
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}
	}
	lvl, _ := zerolog.ParseLevel(level)
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}
