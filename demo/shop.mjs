// @ts-check
// The demo's shop, in Node: a requester asking the Python price service what coins cost, and a
// pusher handing jobs to the Python worker, each with its transport receipt.
//
// Started by demo/run.py (`./dev demo`) with DEMO_PRICES and DEMO_JOBS, the services' pinned
// addresses (weida://sha256:…@127.0.0.1:port/path), and DEMO_JOB_COUNT. It dials with an
// ephemeral key, prints what it sees, then `RESULT <json>`. It imports the package built in
// node/ (dist/), as `import … from 'weida'` would once installed.

import { Rejected, Runtime, WeidaError } from '../node/dist/index.js'

/** @param {string} line */
const say = (line) => console.log(line)

/** @param {string} name */
function env(name) {
  const v = process.env[name]
  if (v === undefined) throw new Error(`${name} is not set: demo/run.py starts this script`)
  return v
}

const rt = new Runtime() // an ephemeral key; the services see it as this process
say(`dialling as ${rt.fingerprint}`)

const requester = rt.requester()
await requester.connect(env('DEMO_PRICES')) // the pin in the address decides who may answer
const pusher = rt.pusher()
await pusher.connect(env('DEMO_JOBS'))

/** @type {{coin: string, outcome: string, text: string, peer: string | null}[]} */
const asked = []
for (const coin of ['btc', 'eth', 'doge', 'sol']) {
  try {
    const reply = await requester.requestWith(coin)
    const peer = reply.meta.peer?.kind === 'key' ? reply.meta.peer.fingerprint : null
    asked.push({ coin, outcome: 'price', text: reply.body.toString(), peer })
    say(`${coin} costs ${reply.body.toString()} (answered by ${peer})`)
  } catch (e) {
    // The replier's refusal is a definite answer, typed, with its reason.
    if (!(e instanceof Rejected)) throw e
    asked.push({ coin, outcome: 'rejected', text: e.message, peer: null })
    say(`${coin}: ${e.code}: ${e.message}`)
  }
}

/** @type {string[]} */
const delivered = []
const jobs = Number(env('DEMO_JOB_COUNT'))
const work = ['resize', 'encode', 'index', 'thumbnail', 'archive']
for (let i = 1; i <= jobs; i++) {
  const upload = await pusher.open({ job: String(i) })
  await upload.write(`${work[(i - 1) % work.length]} photo-${i}.jpg`)
  try {
    // Resolves once the worker's transport holds the whole job (PATTERNS §1.3).
    await (await upload.finish()).delivered()
    delivered.push(String(i))
    say(`job ${i} delivered to the worker's transport`)
  } catch (e) {
    if (!(e instanceof WeidaError)) throw e
    say(`job ${i} not delivered: ${e.code}: ${e.message}`)
  }
}

const drained = await rt.drain(5_000)
say(`drained: ${drained.outstanding} outstanding`)
say(`RESULT ${JSON.stringify({ fingerprint: rt.fingerprint, asked, delivered })}`)
await rt.close()
