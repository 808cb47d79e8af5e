// Package server ties the RakNet and NetherNet listeners, the live MOTD and
// the Bedrock sessions together: a Server owns the listeners (IPv4, IPv6,
// the LAN discovery ports and NetherNet), a GUID kept across restarts, the
// session registry, the player limit and the shutdown.
//
// Configuration flows from config.toml (package config: UserConfig, Load)
// to runtime values (UserConfig.Config gives a Config, nested as the file
// is) to a Server (Config.New, which gives every zero field its default;
// the zero value is the safe choice: online mode, encrypted):
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
// the encryption handshake unless Config.EncryptionDisabled); the server
// then gives the player a slot and calls the configured NewHandler for its
// handler. A handler that panics or fails ends its own session only. On
// Close (or when Run's context ends) every session is disconnected with the
// shutdown message, and the server waits a bounded time for the clients to
// acknowledge it.
//
// The package keeps the lifecycle (lifecycle.go), one file per transport
// (transport_raknet.go, transport_nethernet.go), the session registry
// (registry.go) and admission (online.go, tracker.go). Other jobs have
// rooms of their own: config (config.toml), access (the allowlist and ban
// list), console (the operator's commands), monitor (the HTTP side:
// metrics, status, health), query (the Query protocol) and nethernet.
package server
