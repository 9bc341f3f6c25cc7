// A Pub/Sub round trip over QUIC with the weida a user installed: packaging/check.sh runs it in an
// empty folder outside the repository, where `weida` and its platform package came from their
// tarballs.
//
//   node roundtrip.mjs

import assert from 'node:assert/strict'
import { Runtime } from 'weida'

const exchange = new Runtime()
const listener = await exchange.bind('weida://127.0.0.1:0')
const prices = listener.publisher('/prices')
const desk = new Runtime()
const eur = desk.subscriber()
await eur.connect(prices.address) // pins the exchange's key
await eur.subscribe('prices.*.eur') // installed at the publisher once this resolves
assert.equal(prices.publish('prices.btc.usd', '45000'), 0, 'no filter takes it')
assert.equal(prices.publish('prices.btc.eur', '42000'), 1, 'one subscriber takes it')
const msg = await eur.recv({ signal: AbortSignal.timeout(10_000) })
assert.equal(msg.meta.topic, 'prices.btc.eur')
assert.equal(msg.body.toString(), '42000')
console.log(`pubsub round trip: ${msg.meta.topic} = ${msg.body} (weida from ${import.meta.resolve('weida')})`)
await desk.close()
await exchange.close()
