'use strict'
// Makes the golden bytes of each change a protocol made to a packet the
// protocol before it had, from npm minecraft-data's protocol.json files
// (through bedrock-protocol's serializer, both pinned in integration/js's
// lock file).
//
// Input on stdin, a JSON array of cases, each a packet as Basalt encodes it
// at the base protocol, header included:
//   [{"name": "start_game", "bytes": {"2193": "0b..."}}]
// For each step below, in order, the bytes of the protocol before are read
// with that protocol's minecraft-data layout (which must consume them all
// and write them back the same), the fields the step added are set to the
// values Basalt writes, and the packet is written with the next protocol's
// layout. Output on stdout: the cases with the bytes of every protocol.
//
// Adding a protocol is one more step.
//
// Usage: node golden.js NODE_MODULES < cases.json

const path = require('path')
const modules = process.argv[2]
const { createSerializer, createDeserializer } = require(path.join(modules, 'bedrock-protocol/src/transforms/serializer'))

const steps = [
  {
    from: { protocol: '2193', version: '1.26.51' },
    to: { protocol: '2225', version: '1.26.60' },
    // The fields 2225 added, by packet, with the values Basalt writes.
    added: {
      start_game: { editor_level_migration_version: 'legacy' },
      level_chunk: { client_biome_update: false },
      add_player: { passenger_of_block: undefined },
      add_entity: { passenger_of_block: undefined },
      animate: { hand: 'main_hand' }
    }
  }
]

const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'))
for (const step of steps) {
  const ser = createSerializer(step.from.version)
  const de = createDeserializer(step.from.version)
  const to = createSerializer(step.to.version)
  for (const c of cases) {
    const buf = Buffer.from(c.bytes[step.from.protocol], 'hex')
    const { data, metadata } = de.parsePacketBuffer(buf)
    const at = `${c.name} at ${step.from.version}`
    if (data.name !== c.name) throw new Error(`${at}: read as ${data.name}`)
    if (metadata.size !== buf.length) throw new Error(`${at}: read ${metadata.size} of ${buf.length} bytes`)
    const again = ser.createPacketBuffer(data)
    if (!again.equals(buf)) throw new Error(`${at}: written back as ${again.toString('hex')}`)
    const params = { ...data.params, ...(step.added[c.name] || {}) }
    c.bytes[step.to.protocol] = to.createPacketBuffer({ name: c.name, params }).toString('hex')
  }
}
process.stdout.write(JSON.stringify(cases, null, 1) + '\n')
