// Command basalt runs a Minecraft Bedrock server skeleton on Basalt's own
// RakNet transport.
//
// Usage:
//
//	basalt [-config FILE] [-version]
//
// It writes the commented default configuration to FILE (config.toml) if
// the file is missing, loads it and serves until SIGINT or SIGTERM (or the
// console's stop), then tells every player the server is closing and
// exits. A second signal during shutdown exits at once. SIGHUP rereads the
// allowlist and ban files. Commands typed on standard input (help lists
// them) run unless it is /dev/null.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/config"
	"github.com/basaltmc/basalt/server/console"
)

const usage = `Usage: basalt [-config FILE] [-version]

Basalt is a Minecraft Bedrock server skeleton: it answers LAN discovery and
server-list pings, logs players in and hands them to a handler (by default
one that tells them there is no world yet). It reads FILE, first writing
the commented default configuration there if it is missing, and serves
until SIGINT (Ctrl-C) or SIGTERM. SIGHUP rereads the allowlist and ban
files; commands typed on standard input (help lists them) run.

Flags:
`

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0) // -h: the flag package printed the usage
	case errors.Is(err, errFlags):
		os.Exit(2) // the flag package printed the error and the usage
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "basalt: %v\n", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "basalt: %v\n", err)
		os.Exit(1)
	}
}

// errFlags and errUsage mark a command line that cannot be run; the flag
// package has already said why for errFlags.
var errFlags, errUsage = errors.New("bad flags"), errors.New("run basalt -h for usage")

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("basalt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	path := fs.String("config", "config.toml", "configuration `FILE`, written with the defaults if missing")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errFlags
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: flags go before any other argument, and basalt takes no other (%w)", fs.Arg(0), errUsage)
	}
	bi := server.ReadBuildInfo()
	if *version {
		_, err := fmt.Fprintln(stdout, "basalt", bi)
		return err
	}
	uc, err := config.Load(*path)
	if err != nil {
		return err
	}
	log, logFile, err := uc.Logger()
	if err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	defer logFile.Close()
	log.Info().Stringer("version", bi).Str("config", *path).Msg("starting basalt")
	conf, err := uc.Config(log)
	if err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // restore default handling: a second signal kills
	srv := conf.New()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			_ = srv.Reload() // it logs what happened
		}
	}()
	if console.Input(os.Stdin) {
		go func() { _ = srv.RunConsole(os.Stdin, stop) }() // stop: as Ctrl-C
	}
	if err := srv.Run(ctx); err != nil {
		// A listener that cannot open names its key and line: the file
		// makes that a place to look.
		return fmt.Errorf("%s: %w", *path, err)
	}
	return nil
}
