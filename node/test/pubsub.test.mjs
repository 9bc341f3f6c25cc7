// @ts-check
// Pub/Sub (core/tests/pubsub.rs, PATTERNS §4, §4.1): filters end to end, isolation of a slow
// subscriber, drops by cause, PerProducer ordering with gaps, the streamed fan-out, the reverse
// pool of the local socket transport; and what only a binding can get wrong: an aborted receive
// loses nothing, `for await`, `recvMany`. Each test runs over every transport it applies to.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AbortError, InvalidFilter, LimitExceeded, NotConnected, Unsupported, UnknownEndpoint, withPath } from 'weida'
import { bindAddress, keep, native, onEveryTransport, pair, payload, rejection, runtime, TIMEOUT } from './helpers.mjs'

/**
 * Receives until `n` messages arrived.
 * @param {import('weida').Subscriber} sub @param {number} n
 */
async function take(sub, n) {
  const out = []
  while (out.length < n) out.push(await sub.recv())
  return out
}

/**
 * Waits until `sub` holds at least `n` messages: the event the core raises as each arrives
 * (`Subscriber::until_queued`), not a poll.
 * @param {import('weida').Subscriber} sub @param {number} n
 */
const queued = (sub, n) => /** @type {any} */ (sub)._untilQueued(n)

/**
 * Blocks the JS thread (the addon's I/O thread runs on) until the I/O thread has finished a
 * receive after `fetched` (weida-ffi's probe): what it took is on its way, but no promise can
 * settle here meanwhile.
 * @param {number} fetched
 */
function blockUntilFetched(fetched) {
  assert.ok(native._waitFetched(fetched + 1, 10_000), 'the receive never took it')
}

/**
 * The sequence and gap of each message, as numbers.
 * @param {import('weida').Message[]} ms
 */
function seqGap(ms) {
  return ms.map((m) => [Number(m.meta.sequence), Number(m.meta.gap)])
}

/**
 * A publisher at `/feed` and a subscriber of the client runtime connected to it, holding
 * `filters` (each installed at the publisher when this resolves).
 * @param {import('./helpers.mjs').Transport} t @param {import('node:test').TestContext} ctx
 * @param {...string} filters
 */
async function feed(t, ctx, ...filters) {
  const { listener, client } = await pair(t, ctx)
  const publisher = listener.publisher('/feed')
  const sub = client.subscriber()
  await sub.connect(publisher.address)
  for (const f of filters) await sub.subscribe(f)
  return { listener, client, publisher, sub }
}

onEveryTransport('subscribe_filters_topics_by_segment', async (t, ctx) => {
  const { publisher, sub } = await feed(t, ctx, 'sensors.*.temp', 'alerts.#')
  /** @type {[string, boolean][]} (topic, selected): the grammar's table, end to end. */
  const table = [
    ['sensors.kitchen.temp', true],
    ['sensors.temp', false],
    ['sensors.kitchen.temperature', false],
    ['sensors.kitchen.temp.max', false],
    ['alerts', true],
    ['alerts.fire.kitchen', true],
    ['alertsx', false],
    ['other', false],
  ]
  const expected = []
  for (const [i, [topic, selected]] of table.entries()) {
    assert.equal(publisher.publish(topic, `${i}`), selected ? 1 : 0, topic)
    if (selected) expected.push(topic)
  }
  const got = await take(sub, expected.length)
  assert.deepEqual(got.map((m) => m.meta.topic).sort(), expected.sort())
  for (const m of got) {
    assert.equal(m.meta.path, '/feed')
    assert.equal(m.meta.gap, null, 'no ordering required: no gap')
    if (t === 'quic') assert.equal(m.meta.peer?.kind, 'key')
    if (t === 'unix') assert.equal(m.meta.peer?.kind, 'local')
    if (t === 'inproc') assert.equal(m.meta.peer, null)
  }
  assert.equal(publisher.dropped().total, 0n)
})

onEveryTransport('unsubscribe_stops_delivery_once_it_returns', async (t, ctx) => {
  const { publisher, sub } = await feed(t, ctx, 'a.#', 'b')
  assert.equal(publisher.publish('a.x', '1'), 1)
  assert.equal(await sub.unsubscribe('a.#'), true)
  assert.equal(await sub.unsubscribe('a.#'), false, 'no longer held')
  assert.equal(publisher.publish('a.x', '2'), 0)
  publisher.publish('b', '3')
  // "1" may or may not have been delivered before the unsubscribe; "2" never is.
  for (;;) {
    const body = (await sub.recv()).body.toString()
    assert.notEqual(body, '2')
    if (body === '3') break
  }
  assert.deepEqual(sub.filters, ['b'])
})

onEveryTransport('a_filter_given_before_connect_is_installed_by_connect', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const publisher = listener.publisher('/feed')
  const sub = client.subscriber()
  await assert.rejects(sub.recv(), NotConnected)
  await sub.subscribe('x')
  await sub.connect(publisher.address)
  assert.equal(publisher.subscriberCount, 1)
  assert.equal(publisher.publish('x', 'hello'), 1)
  assert.equal((await sub.recv()).body.toString(), 'hello')
})

onEveryTransport('refusals_are_typed', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx, { limits: { maxFilters: 2 } })
  const publisher = listener.publisher('/feed')
  const puller = listener.puller('/jobs')
  keep(ctx, puller)
  // A malformed filter is refused locally, never widened.
  const sub = client.subscriber()
  for (const bad of ['', 'a..b', 'a.#.b', 'a*', '#x']) {
    const e = /** @type {any} */ (await rejection(sub.subscribe(bad)))
    assert.ok(e instanceof InvalidFilter, `${JSON.stringify(bad)}: ${e}`)
    assert.equal(e.code, 'ERR_WEIDA_INVALID_FILTER')
  }
  // Nothing bound there / not a publisher.
  const unknown = client.subscriber()
  await unknown.subscribe('x')
  const e = /** @type {any} */ (await rejection(unknown.connect(withPath(listener.address, '/nothing'))))
  assert.ok(e instanceof UnknownEndpoint, String(e))
  assert.equal(e.path, '/nothing')
  await assert.rejects(unknown.connect(puller.address), Unsupported)
  // maxFilters.
  await sub.connect(publisher.address)
  await sub.subscribe('a')
  await sub.subscribe('b')
  await assert.rejects(sub.subscribe('c'), LimitExceeded)
  assert.deepEqual(sub.filters, ['a', 'b'])
  // The publisher: a malformed topic, a body above the byte budget (thrown: publish never waits).
  assert.throws(() => publisher.publish('a.', 'x'), InvalidFilter)
  assert.throws(() => publisher.publish('a', payload((1 << 20) + 1)), LimitExceeded)
  assert.throws(() => publisher.open('a.#'), InvalidFilter)
  assert.equal(publisher.dropped().total, 0n, 'a refusal is not a drop')
})

onEveryTransport('a_publisher_path_refuses_inbound_transfers', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const publisher = listener.publisher('/feed')
  const pusher = client.pusher()
  // The path check at connect says so at once (PROTOCOL §3.1.5) ...
  await assert.rejects(pusher.connect(publisher.address), Unsupported)
  // ... and a publisher bound after the check refuses the transfer itself.
  const before = listener.puller('/later')
  await pusher.connect(before.address)
  before.close()
  keep(ctx, listener.publisher('/later'))
  // 2 MiB: beyond the stream window, so the refusal (not the receipt) decides the outcome.
  await assert.rejects(pusher.send(payload(2 << 20)), Unsupported)
})

onEveryTransport('slow_subscriber_drops_not_blocks', async (t, ctx) => {
  // Small windows, so a stalled subscriber's streams (or a lane, where the core has them) fill
  // them soon.
  const limits = {
    endpointQueue: 4,
    maxConcurrentUniStreams: 4,
    maxParkedReverse: 2,
    streamReceiveWindow: 16 * 1024,
    connectionReceiveWindow: 32 * 1024,
  }
  const { listener, client } = await pair(t, ctx, { limits })
  const publisher = listener.publisher('/feed')
  const fast = client.subscriber()
  await fast.connect(publisher.address)
  await fast.subscribe('t')
  const slow = client.subscriber()
  await slow.connect(publisher.address)
  await slow.subscribe('t')
  const n = 300
  for (let i = 0; i < n; i++) {
    // Never blocks (publish is synchronous), whatever the stalled subscriber does; paced by the fast one.
    const body = `${i}:`.padEnd(512, '.')
    assert.ok(publisher.publish('t', body) >= 1)
    assert.equal((await fast.recv()).body.toString(), body)
  }
  const stalled = publisher.droppedOn('t')
  assert.ok(stalled.total > 0n, JSON.stringify(stalled, (_, v) => (typeof v === 'bigint' ? Number(v) : v)))
  assert.equal(stalled.deadSubscriber, 0n)
  // Now the stalled one reads: what it gets and what was dropped add up to every copy. A drop
  // on the writer's side (an empty reverse pool) has no event to wait on: each receive gives up
  // after a tick to look again (and an aborted receive loses nothing).
  let received = 0n
  while (received + publisher.droppedOn('t').total < BigInt(n)) {
    try {
      await slow.recv({ signal: AbortSignal.timeout(10) })
      received++
    } catch (e) {
      if (!(e instanceof AbortError)) throw e
    }
  }
  assert.equal(received + publisher.droppedOn('t').total, BigInt(n))
  assert.ok(received >= 4n, `the stalled subscriber still got its queue: ${received}`)
})

onEveryTransport('a_dropped_copy_shows_up_as_a_gap', async (t, ctx) => {
  // The core's test drops at the publisher's byte budget, which is deterministic on its
  // current-thread runtime only. Here the subscriber refuses a copy above its own
  // maxCollectedBody: a number it never delivers, whatever the threads do.
  const server = runtime(ctx)
  const listener = await server.bind(bindAddress(t))
  const client = runtime(ctx, { ordering: 'detect', limits: { maxCollectedBody: 1000 } })
  const publisher = listener.publisher('/feed')
  const sub = client.subscriber()
  await sub.connect(publisher.address)
  await sub.subscribe('t')
  assert.equal(publisher.publish('t', payload(100)), 1)
  assert.deepEqual(seqGap(await take(sub, 1)), [[1, 0]])
  assert.equal(publisher.publish('t', payload(2000)), 1)
  assert.equal(publisher.publish('t', payload(100)), 1)
  const [third] = await take(sub, 1)
  assert.deepEqual(seqGap([third]), [[3, 1]])
  assert.equal(third.body.length, 100)
  assert.equal(typeof third.meta.sequence, 'bigint')
})

onEveryTransport('a_full_hold_reports_the_drop_it_was_waiting_for', async (t, ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind(bindAddress(t))
  const client = runtime(ctx, { ordering: 'reassemble', limits: { maxCollectedBody: 1000, maxReorderHold: 1 } })
  const publisher = listener.publisher('/feed')
  const sub = client.subscriber()
  await sub.connect(publisher.address)
  await sub.subscribe('t')
  publisher.publish('t', payload(100)) // 1
  assert.deepEqual(seqGap(await take(sub, 1)), [[1, 0]])
  publisher.publish('t', payload(2000)) // 2: refused by the subscriber
  publisher.publish('t', payload(100)) // 3
  publisher.publish('t', payload(100)) // 4
  // 3 waits for 2; the next held copy passes the hold of 1, which releases 3 with the gap it
  // was waiting for.
  assert.deepEqual(seqGap(await take(sub, 2)), [
    [3, 1],
    [4, 0],
  ])
})

onEveryTransport('a_subscriber_that_requires_ordering_negotiates_it', async (t, ctx) => {
  // The publisher's runtime requires nothing; it offers every level it implements.
  const { listener } = await pair(t, ctx)
  const publisher = listener.publisher('/feed')
  const sub = runtime(ctx, { ordering: 'reassemble' }).subscriber()
  await sub.connect(publisher.address)
  await sub.subscribe('#')
  for (let i = 0; i < 20; i++) {
    publisher.publish('x.y', `${i}`)
    const m = await sub.recv()
    assert.equal(m.meta.sequence, BigInt(i + 1))
    assert.equal(m.meta.gap, 0n)
    assert.equal(m.body.toString(), `${i}`)
  }
})

onEveryTransport('a_streamed_publish_carries_a_payload_no_publish_could_take', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx, { limits: { subscriberBufferBytes: 64 * 1024 } })
  const publisher = listener.publisher('/video')
  const a = client.subscriber()
  await a.connect(publisher.address)
  await a.subscribe('frames.#')
  const b = client.subscriber()
  await b.connect(publisher.address)
  await b.subscribe('frames.hd')
  // 1.25 MiB: twenty times the byte budget, which `publish` refuses.
  const body = payload(40 * 32 * 1024)
  assert.throws(() => publisher.publish('frames.hd', body), LimitExceeded)
  const f = publisher.open('frames.hd')
  assert.equal(f.copies, 2)
  const receiving = Promise.all([a.recv(), b.recv()])
  for (let at = 0; at < body.length; at += 32 * 1024) {
    assert.equal(await f.write(body.subarray(at, at + 32 * 1024)), 2)
  }
  assert.equal(f.finish(), 2)
  assert.equal(f.copies, 2)
  for (const m of await receiving) {
    assert.equal(m.meta.topic, 'frames.hd')
    assert.equal(m.body.length, body.length)
    assert.ok(m.body.equals(body), 'byte-exact')
  }
  assert.equal(publisher.dropped().total, 0n)
  // Finished, the fan-out is spent.
  assert.throws(() => f.writeNow('late'), { code: 'ERR_WEIDA_CLOSED' })
})

onEveryTransport('a_streamed_publish_keeps_the_reader_when_another_stalls', async (t, ctx) => {
  const limits = {
    subscriberBufferBytes: 64 * 1024,
    endpointQueue: 1,
    streamReceiveWindow: 64 * 1024,
    connectionReceiveWindow: 128 * 1024,
    maxConcurrentUniStreams: 4,
    // The reader must find room within it too: long enough for a loaded machine.
    fanoutWaitMs: 3000,
  }
  const { listener, client } = await pair(t, ctx, { limits })
  const publisher = listener.publisher('/video')
  const reader = client.subscriber()
  await reader.connect(publisher.address)
  await reader.subscribe('f')
  const stalled = client.subscriber()
  await stalled.connect(publisher.address)
  await stalled.subscribe('f')
  // The stalled subscriber's queue is full (it never reads from here on).
  publisher.publish('f', 'first')
  assert.equal((await reader.recv()).body.toString(), 'first')
  await queued(stalled, 1)
  const body = payload(4 << 20)
  const f = publisher.open('f')
  assert.equal(f.copies, 2)
  const receiving = reader.recv()
  for (let at = 0; at < body.length; at += 32 * 1024) await f.write(body.subarray(at, at + 32 * 1024))
  assert.equal(f.finish(), 1, 'the stalled copy was dropped, the reader kept')
  assert.ok((await receiving).body.equals(body), 'the reading subscriber got the whole payload')
  assert.equal(publisher.droppedOn('f').byteBudget, 1n)
  // The stalled subscriber never sees a fragment: what it has is the first message only.
  assert.equal((await stalled.recv()).body.toString(), 'first')
  assert.equal(stalled.queued, 0)
})

onEveryTransport('a_cancelled_fanout_is_never_a_message', async (t, ctx) => {
  const { publisher, sub } = await feed(t, ctx, 't')
  const f = publisher.open('t')
  assert.equal(f.writeNow('half a message'), 1)
  f.cancel()
  assert.equal(f.copies, 0)
  assert.throws(() => f.finish(), { code: 'ERR_WEIDA_CANCELED' })
  publisher.publish('t', 'whole')
  assert.equal((await sub.recv()).body.toString(), 'whole')
})

test('a_local_subscriber_that_parks_nothing_is_refused_at_subscribe', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind(bindAddress('unix'))
  const publisher = listener.publisher('/feed')
  const sub = runtime(ctx, { limits: { maxParkedReverse: 0 } }).subscriber()
  await sub.connect(publisher.address)
  await assert.rejects(sub.subscribe('t'), Unsupported)
  assert.deepEqual(sub.filters, [])
  assert.equal(publisher.subscriberCount, 0)
})

onEveryTransport('an_aborted_recv_loses_nothing', async (t, ctx) => {
  const { publisher, sub } = await feed(t, ctx, 't')
  for (const body of ['first', 'second']) {
    const ac = new AbortController()
    const pending = sub.recv({ signal: ac.signal })
    const [fetched, orphans] = [native._fetched(), native._orphans()]
    assert.equal(publisher.publish('t', body), 1)
    // The copy arrives and the pending receive takes it on the I/O thread; the abort lands
    // before its promise can settle here, so the binding hands the copy back.
    blockUntilFetched(fetched)
    ac.abort()
    const e = await rejection(pending)
    assert.ok(e instanceof AbortError, String(e))
    assert.equal(/** @type {AbortError} */ (e).cause, ac.signal.reason)
    const m = await sub.recv({ signal: AbortSignal.timeout(5_000) })
    assert.equal(m.body.toString(), body, 'the next receive gets it')
    assert.equal(m.meta.topic, 't')
    assert.equal(native._orphans(), orphans + 1, 'the copy came back: the race ran')
  }
  // recvMany the same way.
  const ac = new AbortController()
  const pending = sub.recvMany(10, { signal: ac.signal })
  const [fetched, orphans] = [native._fetched(), native._orphans()]
  for (const body of ['a', 'b', 'c']) publisher.publish('t', body)
  blockUntilFetched(fetched)
  ac.abort()
  await assert.rejects(pending, AbortError)
  const got = []
  while (got.length < 3) got.push(...(await sub.recvMany(10, { signal: AbortSignal.timeout(5_000) })))
  assert.deepEqual(
    got.map((m) => m.body.toString()),
    ['a', 'b', 'c'],
  )
  assert.equal(native._orphans(), orphans + 1, 'what it took came back: the race ran')
})

onEveryTransport('for_await_receives_until_the_subscriber_closes', async (t, ctx) => {
  const { publisher, sub } = await feed(t, ctx, 'news.#')
  for (const topic of ['news.a', 'sport', 'news.b', 'news.c']) publisher.publish(topic, topic)
  const seen = []
  for await (const m of sub) {
    seen.push(m.meta.topic)
    if (seen.length === 3) sub.close() // ends the loop once the queue is taken
  }
  assert.deepEqual(seen.sort(), ['news.a', 'news.b', 'news.c'])
  await assert.rejects(sub.recv(), { code: 'ERR_WEIDA_CLOSED' })
})

onEveryTransport('recv_many_takes_what_is_queued_up_to_max', async (t, ctx) => {
  const { publisher, sub } = await feed(t, ctx, 't')
  for (let i = 0; i < 5; i++) publisher.publish('t', `${i}`)
  await queued(sub, 5)
  const first = await sub.recvMany(3)
  assert.deepEqual(
    first.map((m) => m.body.toString()),
    ['0', '1', '2'],
  )
  const rest = await sub.recvMany(10)
  assert.deepEqual(
    rest.map((m) => m.body.toString()),
    ['3', '4'],
  )
  assert.equal(rest[0].meta.topic, 't')
  // It waits for the first; after close it returns what is queued, then CLOSED.
  const waiting = sub.recvMany(10)
  publisher.publish('t', 'late')
  assert.deepEqual(
    (await waiting).map((m) => m.body.toString()),
    ['late'],
  )
  publisher.publish('t', 'queued')
  await queued(sub, 1)
  sub.close()
  assert.equal((await sub.recvMany(10))[0].body.toString(), 'queued')
  await assert.rejects(sub.recvMany(10), { code: 'ERR_WEIDA_CLOSED' })
})

onEveryTransport('try_recv_takes_what_is_ready_without_waiting', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const publisher = listener.publisher('/feed')
  const sub = client.subscriber()
  assert.throws(() => sub.tryRecv(), { code: 'ERR_WEIDA_NOT_CONNECTED' })
  await sub.connect(publisher.address)
  await sub.subscribe('a.#')
  assert.equal(sub.tryRecv(), null)
  // No more than the parked reverse connections over AF_UNIX (one copy each).
  for (let i = 0; i < 5; i++) publisher.publish('a.b', Buffer.from([i]))
  const got = []
  while (got.length < 5) {
    const m = sub.tryRecv() ?? (await sub.recv())
    assert.equal(m.meta.topic, 'a.b')
    got.push(m.body[0])
  }
  assert.deepEqual(got, [0, 1, 2, 3, 4])
  assert.equal(sub.tryRecv(), null)
  sub.close()
  assert.throws(() => sub.tryRecv(), { code: 'ERR_WEIDA_CLOSED' })
})

onEveryTransport('messages_taken_in_a_batch_are_handed_out_in_order_and_a_stopped_loop_loses_none', async (t, ctx) => {
  const { publisher, sub } = await feed(t, ctx, 't.#')
  // Each copy's topic names its index, so a body or a meta taken from the wrong slot of a
  // batch shows; index 5 is empty.
  const body = (/** @type {number} */ i) => (i === 5 ? '' : `${i}:`.padEnd(1 + (i % 7) * 9, 'x'))
  // One at a time, each queued before the next: a burst may outrun a transport's stream
  // budget, and a copy that finds no room is dropped (PATTERNS §4).
  for (let i = 0; i < 30; i++) {
    publisher.publish(`t.${i}`, body(i))
    await queued(sub, i + 1)
  }
  /** @type {number[]} */
  const seen = []
  /** @param {import('weida').Message} m */
  const check = (m) => {
    const i = Number(m.meta.topic?.slice(2))
    assert.equal(m.body.toString(), body(i), `body of ${i}`)
    seen.push(i)
  }
  // The first receive takes every queued copy across in one batch; breaking out of the loop
  // leaves the rest with the subscriber, counted in `queued`.
  for await (const m of sub) {
    check(m)
    if (seen.length === 3) break
  }
  assert.equal(sub.queued, 27)
  // An iteration abandoned without return() holds nothing either.
  const it = sub.messages()
  check(/** @type {import('weida').Message} */ ((await it.next()).value))
  const m = sub.tryRecv()
  assert.ok(m !== null)
  check(m)
  for (const m of await sub.recvMany(100)) check(m)
  assert.deepEqual(
    seen,
    Array.from({ length: 30 }, (_, i) => i),
  )
  assert.equal(sub.queued, 0)
  // Bodies too large to pack into one Buffer cross one Buffer each.
  const big = [payload(40_000), payload(50_000), payload(3)]
  for (const [i, b] of big.entries()) {
    publisher.publish('t.big', b)
    await queued(sub, i + 1)
  }
  const got = await sub.recvMany(10)
  assert.equal(got.length, 3)
  got.forEach((m, i) => assert.ok(m.body.equals(big[i]), `big ${i}`))
})

for (const how of ['abort', 'cancel']) {
  onEveryTransport(`a_pending_fanout_write_cancelled_cancels_the_message (${how})`, async (t, ctx) => {
    const limits = {
      subscriberBufferBytes: 64 * 1024,
      endpointQueue: 1,
      streamReceiveWindow: 64 * 1024,
      connectionReceiveWindow: 128 * 1024,
      fanoutWaitMs: 60_000,
    }
    const { listener, client } = await pair(t, ctx, { limits })
    const publisher = listener.publisher('/video')
    const reader = client.subscriber()
    await reader.connect(publisher.address)
    await reader.subscribe('f')
    const stalled = client.subscriber()
    await stalled.connect(publisher.address)
    await stalled.subscribe('f')
    publisher.publish('f', 'first')
    assert.equal((await reader.recv()).body.toString(), 'first')
    await queued(stalled, 1)
    const fan = publisher.open('f')
    // Write until a write waits for the stalled subscriber's room (fanoutWaitMs: a minute). A
    // write with room finishes at once on the I/O thread; a second tells them apart however
    // loaded the machine (python/tests/test_pubsub.py the same).
    const ac = new AbortController()
    /** @type {Promise<number> | undefined} */
    let pending
    for (let i = 0; i < 64 && pending === undefined; i++) {
      const w = fan.write(payload(32 * 1024), { signal: ac.signal })
      const waited = await Promise.race([w.then(() => false), new Promise((r) => setTimeout(() => r(true), 1000))])
      if (waited) pending = w
    }
    assert.ok(pending !== undefined, 'no write ever waited')
    // A synchronous call while the write holds the fan-out: the binding's own error, with a code.
    assert.throws(() => fan.writeNow('x'), { code: 'ERR_WEIDA_BUSY' })
    if (how === 'abort') {
      ac.abort()
      await assert.rejects(pending, AbortError)
    } else {
      fan.cancel()
      await assert.rejects(pending, { code: 'ERR_WEIDA_CANCELED' })
    }
    assert.equal(fan.copies, 0)
    await assert.rejects(fan.write('late'), { code: 'ERR_WEIDA_CANCELED' })
    assert.throws(() => fan.finish(), { code: 'ERR_WEIDA_CANCELED' })
    // Neither subscriber ever sees the message: the next one is what comes after it.
    publisher.publish('f', 'after')
    assert.equal((await reader.recv()).body.toString(), 'after')
    assert.deepEqual(
      (await take(stalled, 2)).map((m) => m.body.toString()),
      ['first', 'after'],
    )
  })
}
