#!/usr/bin/env bash
# Smoke test: build and start Basalt with a throwaway configuration on a free
# loopback port, wait until it answers a ping, print its MOTD, then stop it
# with SIGINT and check it shut down cleanly. Exits non-zero on any failure.
#
# Usage: scripts/check-server.sh
#
# The server and the ping tool are built first and the binaries run (rather
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

fail() {
	echo "check-server: $*" >&2
	if [ -f "$tmp/server.log" ]; then
		echo "--- server log" >&2
		cat "$tmp/server.log" >&2
	fi
	exit 1
}

echo "== build"
go build -o "$tmp/basalt" .
go build -o "$tmp/ping" ./scripts/ping

# Port 0: the system picks a free port, and the server logs which.
cat >"$tmp/config.toml" <<'EOF'
[network]
address_v4 = "127.0.0.1:0"
address_v6 = ""
lan_discovery = false

[server]
name = "Basalt check"

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

echo "== stop"
kill -INT "$pid"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" -eq 0 ] || fail "server exited with status $status after SIGINT"
grep -q '"message":"server closed"' "$tmp/server.log" || fail "no \"server closed\" line in the log"
echo "ok"
