// Package server ties the RakNet listeners, the live MOTD and the Bedrock
// sessions together: a Server owns the listeners (IPv4, IPv6 and the LAN
// discovery ports), a GUID kept across restarts, the session registry, the
// player limit and the shutdown.
//
// Configuration flows from config.toml (package config: UserConfig, Load)
// to runtime values (UserConfig.Config gives a Config) to a Server
// (Config.New, which gives every zero field its default):
//
//	uc, err := config.Load("config.toml") // written if missing
//	if err != nil { ... }
//	conf, err := uc.Config(&log)
//	if err != nil { ... }
//	conf.NewHandler = newPlayer // optional: nil is session.Gate
//	err = conf.New().Run(ctx)   // serves until ctx ends, then shuts down
//
// Every accepted connection runs a session.Session in its own goroutine,
// which logs the player in (network settings, protocol check, Login, with
// the encryption handshake unless Config.EncryptionDisabled); the server then gives the
// player a slot and calls the configured NewHandler for its handler. A
// handler that panics or fails ends its own session only. On Close (or when
// Run's context ends) every session is disconnected with the shutdown
// message, and the server waits a bounded time for the clients to
// acknowledge it.
package server
