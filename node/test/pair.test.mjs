// @ts-check
// PAIR (core/tests/pair.rs, docs/PATTERNS.md §6.1): one bound pair and one dialling pair, each
// sending to the other on one connection, over every transport; a second peer is refused and
// the first keeps working; a peer that goes away leaves the bound pair claimable.

import assert from 'node:assert/strict'
import { InvalidConfig, LimitExceeded, Timeout, Unsupported } from 'weida'
import { bindAddress, metaGet, onEveryTransport, payload, rejection, runtime } from './helpers.mjs'

onEveryTransport('both_directions_carry_transfers_concurrently', async (t, ctx) => {
  const bound = (await runtime(ctx).bind(bindAddress(t))).pair('/chat')
  const dialling = runtime(ctx).pair()
  assert.equal(dialling.address, null)
  await dialling.connect(/** @type {string} */ (bound.address))
  assert.equal(dialling.peerCount, 1)
  const bodies = Array.from({ length: 20 }, (_, i) => payload(i % 5 === 4 ? 300_000 + i : 10 + i))
  /** @param {import('weida').Pair} p */
  const sendAll = async (p) => {
    for (const b of bodies) await p.send(b)
  }
  await Promise.all([sendAll(dialling), sendAll(bound)])
  const want = bodies.map((b) => Buffer.from(b).toString('hex')).sort()
  const atBound = []
  const atDialling = []
  for (let i = 0; i < bodies.length; i++) {
    atBound.push((await bound.recv()).body.toString('hex'))
    const m = await dialling.recv()
    assert.equal(m.meta.path, '/chat')
    atDialling.push(m.body.toString('hex'))
  }
  assert.deepEqual(atBound.sort(), want)
  assert.deepEqual(atDialling.sort(), want)
})

onEveryTransport('a_second_connection_is_refused_and_the_first_keeps_working', async (t, ctx) => {
  const bound = (await runtime(ctx).bind(bindAddress(t))).pair('/chat')
  const address = /** @type {string} */ (bound.address)
  const first = runtime(ctx).pair()
  await first.connect(address)
  const other = runtime(ctx)
  const second = other.pair()
  assert.ok((await rejection(second.connect(address))) instanceof LimitExceeded)
  assert.equal(second.peerCount, 0)
  assert.ok((await rejection(other.pusher().connect(address))) instanceof Unsupported)
  await first.send('still here')
  assert.equal((await bound.recv()).body.toString(), 'still here')
  await bound.send('and you', { k: 'v' })
  const m = await first.recv()
  assert.equal(m.body.toString(), 'and you')
  assert.equal(metaGet(m.meta, 'k')?.toString(), 'v')
})

onEveryTransport('a_bound_pairs_send_waits_for_a_peer_bounded_by_send_timeout', async (t, ctx) => {
  const listener = await runtime(ctx).bind(bindAddress(t))
  const lonely = listener.pair('/alone', { sendTimeoutMs: 50 })
  assert.ok((await rejection(lonely.send('nobody'))) instanceof Timeout)
  const bound = listener.pair('/chat')
  const dialling = runtime(ctx).pair()
  await Promise.all([bound.send('first'), dialling.connect(/** @type {string} */ (bound.address))])
  for await (const m of dialling) {
    assert.equal(m.body.toString(), 'first')
    break
  }
})

onEveryTransport('what_is_not_a_pair_takes_no_claim', async (t, ctx) => {
  const listener = await runtime(ctx).bind(bindAddress(t))
  const puller = listener.puller('/jobs')
  const dialling = runtime(ctx).pair()
  assert.ok((await rejection(dialling.connect(puller.address))) instanceof Unsupported)
  const bound = listener.pair('/chat')
  assert.ok((await rejection(bound.connect(puller.address))) instanceof InvalidConfig)
  assert.throws(() => bound.events(), InvalidConfig)
})
