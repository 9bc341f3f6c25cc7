// @ts-check
// Pub/Sub the other way round (core/tests/collector.rs, docs/PATTERNS.md §4.4): dialling
// publishers feed a bound subscriber, a collector, which keeps what its filters select.

import assert from 'node:assert/strict'
import { InvalidFilter, LimitExceeded, Unsupported } from 'weida'
import { bindAddress, metaGet, onEveryTransport, payload, rejection, runtime } from './helpers.mjs'

onEveryTransport('two_dialling_publishers_feed_one_collector', async (t, ctx) => {
  const collector = (await runtime(ctx).bind(bindAddress(t))).subscriber('/logs')
  collector.subscribe('logs.#')
  const a = runtime(ctx).publisher()
  const b = runtime(ctx).publisher()
  for (const p of [a, b]) {
    await p.connect(collector.address)
    assert.equal(p.peerCount, 1)
  }
  for (let i = 0; i < 20; i++) {
    assert.equal(a.publish('logs.a', `a${i}`), 1)
    assert.equal(b.publish('logs.b.x', `b${i}`, { n: `${i}` }), 1)
  }
  /** @type {Map<string, import('weida').Message>} */
  const got = new Map()
  while (got.size < 40) {
    const m = await collector.recv()
    got.set(m.body.toString(), m)
  }
  assert.equal(got.get('a3')?.meta.topic, 'logs.a')
  assert.equal(got.get('b7')?.meta.topic, 'logs.b.x')
  const b7 = got.get('b7')
  assert.ok(b7)
  assert.equal(metaGet(b7.meta, 'n')?.toString(), '7')
  assert.equal(collector.discarded, 0n)
  assert.equal(a.dropped().total + b.dropped().total, 0n)
})

onEveryTransport('a_collector_keeps_what_its_filters_select_and_counts_the_rest', async (t, ctx) => {
  const collector = (await runtime(ctx).bind(bindAddress(t))).subscriber('/logs')
  collector.subscribe('logs.*.error')
  assert.deepEqual(collector.filters, ['logs.*.error'])
  const p = runtime(ctx).publisher()
  await p.connect(collector.address)
  for (const topic of ['logs.web.info', 'logs.db.error', 'metrics.web.error', 'logs.web.error']) {
    p.publish(topic, topic)
  }
  const kept = [(await collector.recv()).body.toString(), (await collector.recv()).body.toString()]
  assert.deepEqual(kept.sort(), ['logs.db.error', 'logs.web.error'])
  assert.equal(collector.unsubscribe('logs.*.error'), true)
  assert.equal(collector.unsubscribe('logs.*.error'), false)
  assert.throws(() => collector.subscribe('logs.**'), InvalidFilter)
  assert.throws(() => p.publish('bad..topic', 'x'), InvalidFilter)
  collector.subscribe('end')
  p.publish('end', 'end')
  for await (const m of collector) {
    assert.equal(m.body.toString(), 'end')
    break
  }
})

onEveryTransport('what_a_dialling_publisher_cannot_send_is_refused_to_it', async (t, ctx) => {
  const p = runtime(ctx, { limits: { subscriberBufferBytes: 1000 } }).publisher()
  assert.equal(p.publish('t', 'alone'), 0)
  const listener = await runtime(ctx).bind(bindAddress(t))
  const collector = listener.subscriber('/logs')
  collector.subscribe('t')
  await p.connect(collector.address)
  assert.throws(() => p.publish('t', payload(2000)), LimitExceeded)
  assert.equal(p.dropped().total, 0n)
  const rpc = listener.replier('/rpc')
  assert.ok((await rejection(p.connect(rpc.address))) instanceof Unsupported)
  assert.equal(p.publish('t', 'fits'), 1)
  assert.equal((await collector.recv()).body.toString(), 'fits')
})
