'use strict'
// Compiles bedrock-protocol's packet readers and writers for the game
// versions of the given network protocols into node_modules/bedrock-protocol/data/<version>/, where
// bedrock-protocol looks for them first (src/transforms/serializer.js,
// createProtocol), as its own tools/compileProtocol.js does. Without them
// every client compiles minecraft-data's protocol.json at start, which
// takes seconds of CPU. It is a cache: delete node_modules to drop it.
//
// Usage: node precompile.js PROTOCOL...

const fs = require('fs')
const path = require('path')
const { ProtoDefCompiler } = require('protodef').Compiler
const mcData = require('minecraft-data')
const { Versions } = require('bedrock-protocol/src/options')

const root = path.dirname(require.resolve('bedrock-protocol/package.json'))
for (const protocol of process.argv.slice(2)) {
  const version = Object.keys(Versions).find((v) => Versions[v] === Number(protocol))
  if (!version) {
    console.error(`bedrock-protocol knows no game version with protocol ${protocol}`)
    process.exit(2)
  }
  const dir = path.join(root, 'data', version)
  if (fs.existsSync(path.join(dir, 'size.js'))) continue
  const compiler = new ProtoDefCompiler()
  compiler.addTypes(require(path.join(root, 'src/datatypes/compiler-minecraft')))
  compiler.addTypesToCompile(mcData('bedrock_' + version).protocol.types)
  fs.mkdirSync(dir, { recursive: true })
  // Written under temporary names and renamed, so a client never loads
  // half a file.
  for (const [name, c] of [['read', compiler.readCompiler], ['write', compiler.writeCompiler], ['size', compiler.sizeOfCompiler]]) {
    const tmp = path.join(dir, name + '.js.' + process.pid)
    fs.writeFileSync(tmp, 'module.exports = ' + c.generate().replace('() =>', 'native =>'))
    fs.renameSync(tmp, path.join(dir, name + '.js'))
  }
}
