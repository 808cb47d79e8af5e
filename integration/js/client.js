'use strict'
// A bedrock-protocol client that joins a Bedrock server offline and prints
// how that ended as one JSON line on stdout, with what bedrock-protocol
// logged on the way:
//
//   {"event":"kick","message":"...","log":[...]}  the server's Disconnect
//   {"event":"play_status","status":"...",...}    a failed login's PlayStatus
//   {"event":"error","error":"...",...}           the client gave up
//   {"event":"exit","log":[...]}                  it stopped without a word
//
// With --lobby it stays after spawning and prints, as they happen,
//
//   {"event":"spawn"}                              PlayStatus PlayerSpawn
//   {"event":"text","message":"..."}               each Text the server sends
//
// and sends each line it reads on stdin as a chat message (a line starting
// with '/' is a command, as the game sends it), until the server
// disconnects it: the last line is then the kick as above. Two lines are
// not chat:
//
//   !play   sends what a player does in its first seconds: opens the
//           inventory (interact), swings an arm (animate) and clicks on
//           itself (inventory_transaction item_use_on_entity); then prints
//           {"event":"played"}
//   !leave  leaves as a player does, with the client's own Disconnect
//           ("Client leaving"); then prints {"event":"left"}
//
// Usage:
//   node client.js --backend=B --host=H --port=P --username=U --protocol=N
//                  [--raknet=V] [--timeout=MS] [--lobby]
//
// backend is bedrock-protocol's raknetBackend: jsp-raknet, raknet-native
// (the C++ RakNet) or raknet-node (rust-raknet). protocol is the Bedrock
// network protocol to speak; the game version is looked up from it. raknet
// is the RakNet protocol raknet-native offers in OpenConnectionRequest1;
// without it bedrock-protocol picks 11 for game versions from 1.19.30 on
// (src/rak.js, RakNativeClient). jsp-raknet and rust-raknet always offer
// 10 and take no such option. timeout is bedrock-protocol's connectTimeout
// in milliseconds (default 8000).

require('./raknet_native').preload()

const { parseArgs } = require('util')
const bedrock = require('bedrock-protocol')
const { Versions } = require('bedrock-protocol/src/options')

const { values: opt } = parseArgs({
  options: {
    backend: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    username: { type: 'string', default: 'Steve' },
    protocol: { type: 'string' },
    raknet: { type: 'string' },
    timeout: { type: 'string', default: '8000' },
    lobby: { type: 'boolean', default: false }
  }
})

function usage (msg) {
  console.error(msg)
  process.exit(2)
}

if (!opt.backend || !opt.port || !opt.protocol) {
  usage('usage: node client.js --backend=B --port=P --protocol=N [--host=H] [--username=U] [--raknet=V] [--timeout=MS]')
}
const version = Object.keys(Versions).find((v) => Versions[v] === Number(opt.protocol))
if (!version) {
  usage(`bedrock-protocol knows no game version with protocol ${opt.protocol}`)
}

if (opt.raknet) {
  if (opt.backend !== 'raknet-native') {
    usage(`${opt.backend} offers a fixed RakNet protocol`)
  }
  // bedrock-protocol takes Client from the module's exports each time a
  // client starts (src/rak.js setBackend), so a subclass put there is used.
  const native = require('raknet-native')
  const Client = native.Client
  native.Client = class extends Client {
    constructor (host, port, options) {
      super(host, port, { ...options, protocolVersion: Number(opt.raknet) })
    }
  }
}

const log = []
let done = false
// closeGraceMs is how long the client keeps running after its result, so
// the RakNet close bedrock-protocol starts on a kick (and the ACKs the
// server waits for) reach the server before the process ends.
const closeGraceMs = 300

function finish (result) {
  if (done) return
  done = true
  // stdout is a pipe, which Node writes synchronously on Linux, so the
  // line is out even when this runs in the exit handler.
  process.stdout.write(JSON.stringify({ ...result, log }) + '\n')
  setTimeout(() => process.exit(0), closeGraceMs).unref()
}
process.on('exit', () => finish({ event: 'exit' }))
// raknet-node rejects its connect promise without a handler when the
// server refuses the RakNet protocol.
process.on('unhandledRejection', (e) => finish({ event: 'error', error: String(e) }))

const client = bedrock.createClient({
  host: opt.host,
  port: Number(opt.port),
  username: opt.username,
  version,
  offline: true,
  // The ping would pick the game version from the server's MOTD, and fall
  // back to bedrock-protocol's own when it does not know that one.
  skipPing: true,
  raknetBackend: opt.backend,
  connectTimeout: Number(opt.timeout),
  conLog: (...args) => log.push(args.join(' '))
})
// Not the kick and play_status events: bedrock-protocol handles a game
// packet on the next tick (Client onEncapsulated) but a RakNet disconnect
// at once, and the close removes every listener. When raknet-native hands
// over the Disconnect packet and the DisconnectionNotification in one
// batch, the kick event goes to nobody. These methods are still called.
const onDisconnectRequest = client.onDisconnectRequest.bind(client)
client.onDisconnectRequest = (p) => {
  finish({ event: 'kick', message: p.message })
  onDisconnectRequest(p)
}
const onPlayStatus = client.onPlayStatus.bind(client)
client.onPlayStatus = (p) => {
  // login_success and player_spawn are the two a join goes through.
  if (p.status !== 'login_success' && p.status !== 'player_spawn') finish({ event: 'play_status', status: p.status })
  onPlayStatus(p)
}
client.on('error', (e) => finish({ event: 'error', error: String(e && e.message ? e.message : e) }))

// emit prints one event line at once.
function emit (event) {
  if (!done) process.stdout.write(JSON.stringify(event) + '\n')
}

if (opt.lobby) {
  client.on('spawn', () => emit({ event: 'spawn' }))
  client.on('text', (p) => emit({ event: 'text', message: p.message }))
  require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === '!play') {
      play()
      emit({ event: 'played' })
      return
    }
    if (line === '!leave') {
      client.disconnect('Client leaving')
      finish({ event: 'left' })
      return
    }
    client.queue('text', {
      needs_translation: false,
      category: 'authored',
      type: 'chat',
      source_name: opt.username,
      message: line,
      xuid: '',
      platform_chat_id: '',
      has_filtered_message: false
    })
  })
}

// play sends what a player does first: the inventory, a swing, a click on
// itself. Each field is set for every protocol client.js speaks; a field
// one protocol lacks (animate's hand before 2225) is not written.
function play () {
  const self = client.entityId
  const pos = { x: 0.5, y: 65.62, z: 0.5 }
  client.queue('interact', { action_id: 'open_inventory', target_entity_id: self, has_position: false })
  client.queue('animate', { action_id: 'swing_arm', runtime_entity_id: self, data: 0, has_swing_source: false, hand: 'main_hand' })
  const air = { network_id: 0, count: 0, metadata: 0, has_stack_id: false, block_runtime_id: 0, extra: { has_nbt: false, can_place_on: [], can_destroy: [] } }
  client.queue('inventory_transaction', {
    transaction: {
      legacy: { legacy_request_id: 0 },
      transaction_type: 'item_use_on_entity',
      actions: [],
      transaction_data: {
        entity_runtime_id: self,
        action_type: 'interact',
        hotbar_slot: 0,
        hand: 'main_hand',
        held_item: air,
        player_pos: pos,
        click_pos: { x: 0, y: 0, z: 0 }
      }
    }
  })
}
