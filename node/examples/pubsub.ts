// Pub/Sub: a publisher sends by topic and never waits; each subscriber says what it wants with
// filters by segment (`*` one whole segment, a trailing `#` any number). A subscriber that
// cannot keep up loses copies, counted by cause at the publisher, and never slows the others.
//
//   npm run build && node dist/examples/pubsub.js

import { Runtime } from 'weida'

const exchange = new Runtime()
const listener = await exchange.bind('weida://127.0.0.1:0')
const prices = listener.publisher('/prices')

// 'reassemble': copies are numbered per publisher and handed out in order, gaps reported.
const desk = new Runtime({ ordering: 'reassemble' })
const eur = desk.subscriber()
await eur.connect(prices.address) // weida://sha256:…@127.0.0.1:port/prices
await eur.subscribe('prices.*.eur') // installed at the publisher once this resolves
const audit = desk.subscriber()
await audit.connect(prices.address)
await audit.subscribe('prices.#')

for (const [topic, price] of [
  ['prices.btc.eur', '42000'],
  ['prices.btc.usd', '45000'],
  ['prices.eth.eur', '2100'],
]) {
  console.log(`${topic}: ${prices.publish(topic, price)} copies`) // never waits
}

for (let i = 0; i < 2; i++) {
  const m = await eur.recv()
  console.log(`eur ${m.meta.topic} = ${m.body.toString()} (#${m.meta.sequence}, gap ${m.meta.gap})`)
}
const seen: string[] = []
for (const m of await audit.recvMany(3)) seen.push(m.meta.topic ?? '')
while (seen.length < 3) seen.push((await audit.recv()).meta.topic ?? '')
console.log(`audit: ${seen.join(', ')}`)

// A payload of any size streams to every subscriber matched when it is opened.
const report = prices.open('prices.report')
for (const part of ['closing ', 'report']) await report.write(part)
console.log(`report: sent to ${report.finish()} subscriber(s)`)
console.log(`audit got: ${(await audit.recv()).body.toString()}`)

const dropped = prices.dropped()
console.log(`dropped: ${dropped.total} (queue full ${dropped.queueFull}, byte budget ${dropped.byteBudget})`)
desk.close()
exchange.close()
