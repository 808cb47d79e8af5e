'use strict'
// Makes the golden bytes of each change protocol 2225 made to a packet
// protocol 2193 had, from npm minecraft-data's protocol.json files (through
// bedrock-protocol's serializer, both pinned in integration/js's lock file).
//
// Input on stdin, a JSON array of cases, each the packet as Basalt encodes
// it at 2193, header included:
//   [{"name": "start_game", "2193": "0b..."}]
// The 2193 bytes are read with minecraft-data's bedrock/1.26.51 layout (which
// must consume them all and write them back the same), the fields 2225 added
// are set to their neutral values, and the packet is written with
// bedrock/1.26.60's layout. Output on stdout: the cases with "2225" added.
//
// Usage: node golden.js NODE_MODULES < cases.json

const path = require('path')
const modules = process.argv[2]
const { createSerializer, createDeserializer } = require(path.join(modules, 'bedrock-protocol/src/transforms/serializer'))

// The fields 2225 added, by packet, with the values Basalt writes.
const added = {
  start_game: { editor_level_migration_version: 'legacy' },
  level_chunk: { client_biome_update: false },
  add_player: { passenger_of_block: undefined },
  add_entity: { passenger_of_block: undefined },
  animate: { hand: 'main_hand' }
}

const from = { ser: createSerializer('1.26.51'), de: createDeserializer('1.26.51') }
const to = createSerializer('1.26.60')

const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'))
for (const c of cases) {
  const buf = Buffer.from(c['2193'], 'hex')
  const { data, metadata } = from.de.parsePacketBuffer(buf)
  if (data.name !== c.name) throw new Error(`${c.name}: read as ${data.name}`)
  if (metadata.size !== buf.length) throw new Error(`${c.name}: 1.26.51 read ${metadata.size} of ${buf.length} bytes`)
  const again = from.ser.createPacketBuffer(data)
  if (!again.equals(buf)) throw new Error(`${c.name}: 1.26.51 writes it back as ${again.toString('hex')}`)
  const params = { ...data.params, ...(added[c.name] || {}) }
  c['2225'] = to.createPacketBuffer({ name: c.name, params }).toString('hex')
}
process.stdout.write(JSON.stringify(cases, null, 1) + '\n')
