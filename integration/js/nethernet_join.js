// Joins a Basalt server over NetherNet with npm nethernet (PrismarineJS)
// on werift, a WebRTC stack of its own, signalling over HTTP as a client
// does: node nethernet_join.js HOST:PORT COUNT. Prints one JSON line:
// {"joins": [ms, ...]} with -1 for a join that did not connect in 10 s.
const { Client, SignalType, SignalStructure } = require('nethernet')

const [addr, count] = [process.argv[2], Number(process.argv[3] || 3)]
const serverID = 12345n

function join () {
  const c = new Client(serverID, '127.0.0.1', { webrtcBackend: 'werift' })
  const start = Date.now()
  return new Promise((resolve) => {
    const timer = setTimeout(() => { c.close(); resolve(-1) }, 10000)
    c.signalHandler = async (sig) => {
      if (sig.type !== SignalType.ConnectRequest) return // candidates: the answer has the server's, the offer suffices
      try {
        const resp = await fetch(`http://${addr}/v1/join/${c.networkId}`, {
          method: 'POST', body: sig.data, headers: { 'Content-Type': 'application/sdp' }
        })
        const body = await resp.text()
        if (resp.status !== 200) {
          console.error(`offer refused: ${resp.status} ${body}`)
          return
        }
        c.handleSignal(new SignalStructure(SignalType.ConnectResponse, sig.connectionId, body, serverID))
      } catch (err) {
        console.error(`signal: ${err.message}`)
      }
    }
    c.on('connected', () => {
      clearTimeout(timer)
      const took = Date.now() - start
      c.close()
      resolve(took)
    })
    c.on('error', (err) => console.error(`client: ${err.message}`))
    c.connect()
  })
}

;(async () => {
  const joins = []
  for (let i = 0; i < count; i++) joins.push(await join())
  console.log(JSON.stringify({ joins }))
  process.exit(0)
})()
