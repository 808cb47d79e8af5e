'use strict'
// A bedrock-protocol client that joins a Bedrock server offline and prints
// what the server told it as one JSON line on stdout:
//
//   {"event":"kick","message":"..."}       the server's Disconnect packet
//   {"event":"play_status","status":"..."} a PlayStatus (e.g. login_failed)
//   {"event":"error","error":"..."}        the client gave up
//
// Usage: node client.js <backend> <host> <port> <username> <version>
//
// backend is bedrock-protocol's raknetBackend: jsp-raknet, raknet-native
// (the C++ RakNet) or raknet-node (rust-raknet). version is the game
// version whose protocol number the client sends, e.g. 1.26.51.

require('./raknet_native').preload()

const bedrock = require('bedrock-protocol')

const [backend, host, port, username, version] = process.argv.slice(2)
if (!version) {
  console.error('usage: node client.js <backend> <host> <port> <username> <version>')
  process.exit(2)
}

let done = false
function finish (result) {
  if (done) return
  done = true
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

const client = bedrock.createClient({
  host,
  port: Number(port),
  username,
  version,
  offline: true,
  skipPing: true,
  raknetBackend: backend,
  connectTimeout: 8000,
  conLog: (...args) => console.error(...args)
})
client.on('kick', (p) => finish({ event: 'kick', message: p.message }))
client.on('play_status', (p) => finish({ event: 'play_status', status: p.status }))
client.on('error', (e) => finish({ event: 'error', error: String(e && e.message ? e.message : e) }))
client.on('close', () => finish({ event: 'error', error: 'connection closed' }))
