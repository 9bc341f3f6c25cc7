// @ts-check
// PerProducer ordering outside Pub/Sub (core/tests/ordering.rs, PATTERNS §1.7, GUARANTEES §4):
// a puller whose runtime requires detect gets each pushed message numbered with the gap before
// it, and a level a pattern cannot honour is refused with NegotiationFailed, never downgraded.

import assert from 'node:assert/strict'
import { LimitExceeded, NegotiationFailed } from 'weida'
import { bindAddress, onEveryTransport, payload, rejection, runtime } from './helpers.mjs'

onEveryTransport('a_puller_that_requires_ordering_gets_every_message_numbered', async (t, ctx) => {
  const listener = await runtime(ctx, { ordering: 'detect' }).bind(bindAddress(t))
  const puller = listener.puller('/jobs')
  const pusher = runtime(ctx).pusher()
  await pusher.connect(puller.address)
  // Small bodies (a lane's frames) and large ones (a stream each), one at a time.
  for (let i = 0; i < 12; i++) {
    const body = i % 4 === 3 ? payload(40_000) : payload(10 + i)
    await pusher.send(body)
    const m = await puller.recv()
    assert.equal(m.meta.sequence, BigInt(i + 1))
    assert.equal(m.meta.gap, 0n)
    assert.deepEqual(m.body, body)
  }
})

onEveryTransport('a_refused_push_shows_up_as_a_gap', async (t, ctx) => {
  const listener = await runtime(ctx, { ordering: 'detect', limits: { maxCollectedBody: 1000 } }).bind(bindAddress(t))
  const puller = listener.puller('/jobs')
  const pusher = runtime(ctx).pusher()
  await pusher.connect(puller.address)
  await pusher.send(payload(100))
  const first = await puller.recv()
  assert.deepEqual([first.meta.sequence, first.meta.gap], [1n, 0n])
  // Number 2 is above the puller's maxCollectedBody: its receive fails.
  await pusher.send(payload(2000))
  assert.ok((await rejection(puller.recv())) instanceof LimitExceeded)
  await pusher.send(payload(100))
  const third = await puller.recv()
  assert.deepEqual([third.meta.sequence, third.meta.gap], [3n, 1n])
})

onEveryTransport('a_level_a_pattern_cannot_honour_is_refused_not_downgraded', async (t, ctx) => {
  const listener = await runtime(ctx, { ordering: 'reassemble' }).bind(bindAddress(t))
  const puller = listener.puller('/jobs')
  const replier = listener.replier('/echo')
  const client = runtime(ctx)
  const pair = listener.pair('/chat')
  // A pusher and a dialling pair offer detect only; a requester offers no ordering.
  assert.ok((await rejection(client.pusher().connect(puller.address))) instanceof NegotiationFailed)
  assert.ok((await rejection(client.requester().connect(replier.address))) instanceof NegotiationFailed)
  assert.ok((await rejection(client.pair().connect(/** @type {string} */ (pair.address)))) instanceof NegotiationFailed)
  // A runtime that requires reassemble does not dial a pair at all: it holds nothing back.
  const bound = (await runtime(ctx).bind(bindAddress(t))).pair('/chat')
  const strict = runtime(ctx, { ordering: 'reassemble' })
  assert.ok((await rejection(strict.pair().connect(/** @type {string} */ (bound.address)))) instanceof NegotiationFailed)
})

onEveryTransport('a_pair_refused_above_its_peers_limit_is_a_gap', async (t, ctx) => {
  const options = { ordering: /** @type {const} */ ('detect'), limits: { maxCollectedBody: 1000 } }
  const bound = (await runtime(ctx, options).bind(bindAddress(t))).pair('/chat')
  const dialling = runtime(ctx, options).pair()
  await dialling.connect(/** @type {string} */ (bound.address))
  // Both ways: the dialling pair numbers per connection, the bound pair per claim.
  for (const [sender, receiver] of [[dialling, bound], [bound, dialling]]) {
    await sender.send(payload(100))
    const first = await receiver.recv()
    assert.deepEqual([first.meta.sequence, first.meta.gap], [1n, 0n])
    // Number 2 is above the receiver's maxCollectedBody; the send may itself be refused before
    // its FIN is queued (the refusal race, PATTERNS §1.6).
    const e = await sender.send(payload(2000)).then(() => null, (err) => err)
    assert.ok(e === null || e instanceof LimitExceeded)
    assert.ok((await rejection(receiver.recv())) instanceof LimitExceeded)
    await sender.send(payload(100))
    const third = await receiver.recv()
    assert.deepEqual([third.meta.sequence, third.meta.gap], [3n, 1n])
  }
})
