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
    // The fields 2225 added, by packet, with the values Basalt writes;
    // a function takes the packet's fields at 1.26.51 and returns them at
    // 1.26.60, for the changes that are more than an added field. Changes
    // of an enum's numbers (item_stack_request's actions) need nothing:
    // minecraft-data writes the names with each version's numbers.
    added: {
      start_game: { editor_level_migration_version: 'legacy' },
      level_chunk: { client_biome_update: false },
      add_player: { passenger_of_block: undefined },
      add_entity: { passenger_of_block: undefined },
      animate: { hand: 'main_hand' },
      inventory_transaction: (p) => {
        p.transaction.transaction_data.hand = 'main_hand'
        return p
      },
      // play_fab_id moves from the skin to the record.
      player_list: (p) => {
        for (const r of p.records.records ?? p.records) {
          if (r.type !== 'add') continue
          r.play_fab_id = r.skin_data.play_fab_id
          delete r.skin_data.play_fab_id
        }
        return p
      },
      player_skin: (p) => {
        delete p.skin.play_fab_id
        return p
      },
      dimension_data: (p) => {
        for (const d of p.definitions) Object.assign(d, { cloud_height: 0, render_clouds: false })
        return p
      },
      // Options are absent where Basalt has nothing to write.
      serverbound_diagnostics: (p) => {
        for (const e of p.entity_diagnostics) {
          if (e.position.x === 0 && e.position.y === 0 && e.position.z === 0) e.position = undefined
          if (e.dimension === '') e.dimension = undefined
        }
        if (p.system_categories.length === 0) p.system_categories = undefined
        return p
      }
    },
    // Packets whose bytes at 1.26.51, as gophertunnel v1.62.0 writes them,
    // minecraft-data 1.26.51 describes otherwise (it reads the agent
    // capabilities of education_settings as two bools, a sound update as
    // an option, an environment attribute's ease type as an i32), so no
    // step can start from them: their fields at 1.26.60 are given here,
    // as Basalt's cases in golden_test.go set them.
    direct: {
      education_settings: {
        CodeBuilderDefaultURI: 'uri',
        CodeBuilderTitle: 'title',
        CanResizeCodeBuilder: false,
        disable_legacy_title_bar: false,
        post_process_filter: '',
        screenshot_border_path: '',
        has_agent_capabilities: true,
        agent_capabilities: { can_modify_blocks: true },
        HasOverrideURI: true,
        OverrideURI: 'override',
        HasQuiz: false,
        has_external_link_settings: false
      },
      clientbound_update_sound_data: { server_sound_handle: 42n, type: 'fade', duration: 1.5, target_volume: 0.25 },
      clientbound_attribute_layer_sync: {
        payload_type: 'update_environment',
        layer_name: 'weather',
        dimension_id: 0,
        environment_attributes: [
          { attribute_name: 'rain', payload_type: 'constant', attribute: { type: 'bool', bool_value: true, bool_operation: undefined } },
          {
            attribute_name: 'fog',
            payload_type: 'transition',
            from_attribute: { type: 'float', float_value: 0.25 },
            to_attribute: { type: 'float', float_value: 0.75 },
            total_transition_ticks: 40,
            current_transition_ticks: 10,
            ease_type: 'OutQuad',
            clock_name: ''
          }
        ]
      }
    }
  }
]

const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'))
for (const step of steps) {
  const ser = createSerializer(step.from.version)
  const de = createDeserializer(step.from.version)
  const to = createSerializer(step.to.version)
  for (const c of cases) {
    if (step.direct[c.name]) {
      c.bytes[step.to.protocol] = to.createPacketBuffer({ name: c.name, params: step.direct[c.name] }).toString('hex')
      continue
    }
    const buf = Buffer.from(c.bytes[step.from.protocol], 'hex')
    const { data, metadata } = de.parsePacketBuffer(buf)
    const at = `${c.name} at ${step.from.version}`
    if (data.name !== c.name) throw new Error(`${at}: read as ${data.name}`)
    if (metadata.size !== buf.length) throw new Error(`${at}: read ${metadata.size} of ${buf.length} bytes`)
    const again = ser.createPacketBuffer(data)
    if (!again.equals(buf)) throw new Error(`${at}: written back as ${again.toString('hex')}`)
    const add = step.added[c.name] || {}
    const params = typeof add === 'function' ? add(structuredClone(data.params)) : { ...data.params, ...add }
    c.bytes[step.to.protocol] = to.createPacketBuffer({ name: c.name, params }).toString('hex')
  }
}
process.stdout.write(JSON.stringify(cases, null, 1) + '\n')
