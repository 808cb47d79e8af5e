'use strict'
// Lists the packets whose layout differs between two Bedrock versions of
// npm minecraft-data, from their protocol.json: the packets of the newer
// version that are new, those that are gone, and those whose fields,
// followed through every named type they use, are not the same. For each
// changed packet it names the types that changed in it. A delta file
// (vNNNN.go) carries every changed packet; golden_test.go tests each.
//
// Usage: node diff.js NODE_MODULES FROM_VERSION TO_VERSION
//   e.g. node diff.js ../../../integration/js/node_modules 1.26.51 1.26.60

const path = require('path')
const [modules, fromVersion, toVersion] = process.argv.slice(2)
if (!modules || !fromVersion || !toVersion) {
  console.error('usage: node diff.js NODE_MODULES FROM_VERSION TO_VERSION')
  process.exit(2)
}
const data = (v) => require(path.join(modules, 'minecraft-data/minecraft-data/data/bedrock', v, 'protocol.json'))
const from = data(fromVersion).types
const to = data(toVersion).types

// expand returns t with every named type replaced by its definition, once
// per path (a type that contains itself is left named).
function expand (types, t, seen = new Set()) {
  if (typeof t === 'string') {
    if (types[t] === undefined || types[t] === 'native' || seen.has(t)) return t
    return expand(types, types[t], new Set([...seen, t]))
  }
  if (Array.isArray(t)) return t.map((x) => expand(types, x, seen))
  if (t && typeof t === 'object') {
    const o = {}
    for (const k of Object.keys(t)) o[k] = expand(types, t[k], seen)
    return o
  }
  return t
}

// named returns the named types t uses, through every level.
function named (types, t, out = new Set()) {
  if (typeof t === 'string') {
    if (types[t] !== undefined && types[t] !== 'native' && !out.has(t)) {
      out.add(t)
      named(types, types[t], out)
    }
  } else if (Array.isArray(t)) {
    t.forEach((x) => named(types, x, out))
  } else if (t && typeof t === 'object') {
    Object.values(t).forEach((x) => named(types, x, out))
  }
  return out
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b)
const packets = (types) => Object.keys(types).filter((k) => k.startsWith('packet_')).sort()

// ids maps packet names to their IDs, from the mcpe_packet mapper.
function ids (types) {
  const m = {}
  const mapper = JSON.stringify(types.mcpe_packet).match(/"mappings":(\{[^}]*\})/)
  for (const [id, name] of Object.entries(JSON.parse(mapper[1]))) m[name] = Number(id)
  return m
}
const fromIDs = ids(from)
const toIDs = ids(to)

const out = { from: fromVersion, to: toVersion, changed: [], added: [], removed: [] }
for (const p of packets(to)) {
  const name = p.slice('packet_'.length)
  if (from[p] === undefined) {
    out.added.push({ name, id: toIDs[name] })
    continue
  }
  if (same(expand(from, from[p]), expand(to, to[p])) && fromIDs[name] === toIDs[name]) continue
  // The types that changed: used by the packet in the newer version and
  // defined differently (or not at all) in the older.
  const types = [...named(to, to[p])].filter((t) => !same(expand(from, t), expand(to, t))).sort()
  const own = !same(from[p], to[p])
  out.changed.push({ name, id: toIDs[name], fields: own, types })
}
for (const p of packets(from)) {
  if (to[p] === undefined) out.removed.push(p.slice('packet_'.length))
}
process.stdout.write(JSON.stringify(out, null, 1) + '\n')
