#!/usr/bin/env bash
# Smoke test: build Basalt and, for each built-in handler (server.handler
# "gate", then "lobby"), start it with a throwaway configuration (offline
# mode, since the join tool is not signed in to Xbox Live) on a free
# loopback port, wait until it answers a ping, print its MOTD, join it with
# gophertunnel's client (the gate must disconnect the player with a message
# naming them; the lobby must spawn them, greet them and answer /list), then
# stop it with SIGINT and check it shut down cleanly. Exits non-zero on any
# failure.
#
# Usage: scripts/check-server.sh
#
# integration/check_server_test.go runs it (when bash is present), so the
# README's smoke test is part of `go test ./...`.
#
# The server and the tools are built first and the binaries run (rather
# than `go run`), so the PID signalled is the server's own.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
# Stopped from outside (a test's timeout, Ctrl-C), exit through cleanup so
# the server started below does not outlive the script.
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
	echo "check-server: $*" >&2
	if [ -f "$tmp/server.log" ]; then
		echo "--- server log" >&2
		cat "$tmp/server.log" >&2
	fi
	exit 1
}

# The join tool dials a server as "Checker" and prints what the player
# meets: the gate's disconnect message, or the lobby's greeting and its
# answer to /list. It is built from the module, like the server.
mkdir "$tmp/join.src"
cat >"$tmp/join.src/main.go" <<'GO'
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

func main() {
	if err := join(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "join:", err)
		os.Exit(1)
	}
}

func join(handler, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Checker"}}
	conn, err := d.DialContext(ctx, "raknet", addr)
	if handler == "gate" {
		var de minecraft.DisconnectError
		if !errors.As(err, &de) || !strings.Contains(string(de), "Checker") {
			return fmt.Errorf("got %v, want the gate's disconnect naming the player", err)
		}
		fmt.Printf("disconnected: %q\n", string(de))
		return nil
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.DoSpawnContext(ctx); err != nil {
		return err
	}
	fmt.Println("spawned")
	text := func(substr string) (string, error) {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			pk, err := conn.ReadPacket()
			if err != nil {
				return "", fmt.Errorf("waiting for %q: %w", substr, err)
			}
			if t, ok := pk.(*packet.Text); ok && strings.Contains(t.Message, substr) {
				return t.Message, nil
			}
		}
	}
	greeting, err := text("Checker")
	if err != nil {
		return err
	}
	fmt.Printf("greeting: %q\n", greeting)
	if err := conn.WritePacket(&packet.CommandRequest{CommandLine: "/list"}); err != nil {
		return err
	}
	list, err := text("in the lobby: Checker")
	if err != nil {
		return err
	}
	fmt.Printf("/list: %q\n", list)
	return nil
}
GO

echo "== build"
go build -o "$tmp/basalt" .
go build -o "$tmp/ping" ./scripts/ping
go build -o "$tmp/join" "$tmp/join.src/main.go"

for handler in gate lobby; do
	echo "== handler $handler"
	# Port 0: the system picks a free port, and the server logs which.
	cat >"$tmp/config.toml" <<EOF
[network]
address_v4 = "127.0.0.1:0"
address_v6 = ""
lan_discovery = false

[server]
name = "Basalt check"
handler = "$handler"
# The join tool logs in offline, as bots and test tools do: online mode
# would refuse it ("You must be signed in to Xbox Live to join.").
online_mode = false

[log]
format = "json"
EOF

	echo "== start"
	"$tmp/basalt" -config "$tmp/config.toml" >"$tmp/server.log" 2>&1 &
	pid=$!

	addr=""
	for _ in $(seq 100); do
		addr=$(grep -o '"addrs":\["[^"]*"' "$tmp/server.log" 2>/dev/null | head -n 1 | sed 's/.*\["//; s/"$//' || true)
		[ -n "$addr" ] && break
		kill -0 "$pid" 2>/dev/null || fail "server exited before listening"
		sleep 0.1
	done
	[ -n "$addr" ] || fail "server did not log its address within 10 s"
	echo "listening on $addr"

	echo "== ping"
	ok=""
	for _ in $(seq 10); do
		if "$tmp/ping" -timeout 1s "$addr"; then
			ok=1
			break
		fi
		sleep 0.2
	done
	[ -n "$ok" ] || fail "no answer to pings at $addr"

	echo "== join"
	"$tmp/join" "$handler" "$addr" || fail "joining the $handler failed"

	echo "== stop"
	kill -INT "$pid"
	# A clean stop tells every player and exits at once; wait at most 10 s
	# rather than for ever, so a server that hangs fails the check.
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && fail "server still running 10 s after SIGINT"
	status=0
	wait "$pid" || status=$?
	pid=""
	[ "$status" -eq 0 ] || fail "server exited with status $status after SIGINT"
	grep -q '"message":"server closed"' "$tmp/server.log" || fail "no \"server closed\" line in the log"
done
echo "ok"
