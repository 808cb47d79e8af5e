'use strict'
// raknet-native 1.2.3 looks for its prebuilt binary only under
// prebuilds/<platform>-<kernel major>-<arch> (helpers/buildPath.js getPath)
// and ships linux-5-x64, so on any other kernel its install script tries to
// compile RakNet with cmake and require('raknet-native') throws.
// bedrock-protocol requires it at load time (src/createClient.js line 2)
// even when another backend is chosen. The binary does not depend on the
// kernel version, so preload the one for this platform and architecture
// under the module name binding.js would have exported.

const fs = require('fs')
const Module = require('module')
const path = require('path')

function preload () {
  let binding
  try {
    binding = require.resolve('raknet-native/binding.js')
  } catch {
    return // not installed: bedrock-protocol will say so
  }
  try {
    require(binding)
    return // its own lookup works here
  } catch {}
  const dir = path.join(path.dirname(binding), 'prebuilds')
  for (const name of fs.readdirSync(dir)) {
    const [platform, , arch] = name.split('-')
    if (platform !== process.platform || arch !== process.arch) continue
    const m = new Module(binding, module)
    m.filename = binding
    m.exports = require(path.join(dir, name, 'node-raknet.node'))
    m.loaded = true
    require.cache[binding] = m
    return
  }
}

module.exports = { preload }
