// Command basalt runs a Minecraft Bedrock server skeleton on Basalt's own
// RakNet transport.
//
// Usage:
//
//	go run . [-config config.toml]
//
// It writes the default configuration if the file is missing, loads it and
// serves until SIGINT or SIGTERM, then tells every player the server is
// closing and exits. A second signal during shutdown exits at once.
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
	return conf.New().Run(ctx)
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
