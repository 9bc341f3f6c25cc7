// @ts-check
// One body per pattern over every transport (core/tests/patterns.rs, PATTERNS §2, §3, §5).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { LimitExceeded, Timeout, withPath } from 'weida'
import { bindAddress, keep, metaGet, onEveryTransport, pair, payload, rejection, runtime, serve, TIMEOUT } from './helpers.mjs'

onEveryTransport('req_rep_echoes_small_and_large_bodies_with_metadata', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const replier = listener.replier('/echo')
  serve(ctx, async () => {
    for await (const ex of replier) {
      const body = await ex.takeBody()
      await ex.reply(body, { tag: metaGet(ex.meta, 'tag') ?? '' })
    }
  })
  const req = client.requester()
  await req.connect(withPath(listener.address, '/echo'))
  assert.equal((await req.request('ping')).toString(), 'ping')
  const big = payload(3 << 20)
  const m = await req.requestWith(big, { tag: 't1' })
  assert.equal(m.body.length, 3 << 20)
  assert.ok(m.body.equals(big))
  assert.equal(metaGet(m.meta, 'tag')?.toString(), 't1')
})

onEveryTransport('push_pull_delivers_every_message_and_a_streamed_one_with_its_receipt', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  for (let i = 0; i < 100; i++) {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(i)
    await pusher.send(b)
  }
  const seen = []
  for (let i = 0; i < 100; i++) {
    const m = await puller.recv()
    assert.equal(m.meta.path, '/jobs')
    seen.push(m.body.readUInt32BE())
  }
  seen.sort((a, b) => a - b)
  assert.deepEqual(
    seen,
    Array.from({ length: 100 }, (_, i) => i),
  )
  // A streamed message with a receipt.
  const tr = await pusher.open({ k: 'v' })
  await tr.write('part1-')
  await tr.write(Buffer.from('part2'))
  const delivery = await tr.finish()
  await delivery.delivered()
  const m = await puller.recv()
  assert.equal(m.body.toString(), 'part1-part2')
  assert.equal(metaGet(m.meta, 'k')?.toString(), 'v')
})

onEveryTransport('acceptor_receives_both_stream_kinds', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const acceptor = listener.acceptor('/raw')
  const peer = client.peer()
  await peer.connect(acceptor.address)
  const oneWay = await peer.open()
  await oneWay.write('one-way')
  await oneWay.finish()
  const [req, reply] = await peer.exchange()
  await req.write('question')
  await req.finish()
  const kinds = []
  for (let i = 0; i < 2; i++) {
    const incoming = await acceptor.accept()
    if (incoming.kind === 'stream') {
      assert.equal((await incoming.collect(1 << 20)).toString(), 'one-way')
    } else {
      assert.equal((await incoming.takeBody()).toString(), 'question')
      await incoming.reply('answer')
    }
    kinds.push(incoming.kind)
  }
  kinds.sort()
  assert.deepEqual(kinds, ['exchange', 'stream'])
  assert.equal((await reply.body()).body.toString(), 'answer')
})

onEveryTransport('a_large_body_streams_through_web_streams_and_async_iteration', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/files')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const body = payload(5 << 20)
  const sending = (async () => {
    const tr = await pusher.open({ name: 'f' })
    const source = new ReadableStream({
      start(c) {
        for (let at = 0; at < body.length; at += 256 << 10) c.enqueue(body.subarray(at, at + (256 << 10)))
        c.close()
      },
    })
    await source.pipeTo(tr.writable)
  })()
  const incoming = await puller.accept()
  /** @type {Buffer[]} */
  const parts = []
  for await (const chunk of incoming.readable) parts.push(chunk)
  await sending
  assert.ok(Buffer.concat(parts).equals(body))
  // The same over an async iterator, and sendMany's messages in order of arrival.
  await pusher.sendMany(['a', Buffer.from('b'), new Uint8Array([99])])
  const got = []
  for (let i = 0; i < 3; i++) {
    const t = await puller.accept()
    const chunks = []
    for await (const c of t) chunks.push(c)
    got.push(Buffer.concat(chunks).toString())
  }
  assert.deepEqual(got.sort(), ['a', 'b', 'c'])
})

onEveryTransport('send_many_and_recv_many_move_every_message_in_batches', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.sendMany(
    Array.from({ length: 200 }, (_, i) => {
      const b = Buffer.alloc(4)
      b.writeUInt32BE(i)
      return b
    }),
  )
  /** @type {number[]} */
  const seen = []
  while (seen.length < 200) {
    const batch = await puller.recvMany(64)
    assert.ok(batch.length >= 1 && batch.length <= 64, `${batch.length}`)
    seen.push(...batch.map((m) => m.body.readUInt32BE()))
  }
  seen.sort((a, b) => a - b)
  assert.deepEqual(
    seen,
    Array.from({ length: 200 }, (_, i) => i),
  )
})

onEveryTransport('send_many_packs_small_bodies_and_each_arrives_whole', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  // Packed in one buffer (lib/index.ts pack): strings of any width, empty bodies, a view into
  // a larger buffer, lengths that leave every padding; then a batch with a body above the
  // packing bound, which goes as an array.
  const view = Buffer.from('..view..').subarray(2, 6)
  const small = ['', 'é', 'abc', view, new Uint8Array([1, 2, 3, 4, 5]), '', '日本']
  const large = [Buffer.alloc(20_000, 7), 'after']
  await pusher.sendMany(small)
  await pusher.sendMany(large)
  const want = [...small, ...large].map((b) => Buffer.from(typeof b === 'string' ? Buffer.from(b) : b))
  const got = []
  while (got.length < want.length) got.push(...(await puller.recvMany(16)).map((m) => m.body))
  const key = (/** @type {Buffer} */ b) => b.toString('hex')
  assert.deepEqual(got.map(key).sort(), want.map(key).sort())
})

onEveryTransport('an_error_inside_a_batch_is_returned_by_the_next_receive', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx, { limits: { maxCollectedBody: 1000 } })
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.sendMany([payload(10), payload(1001), payload(20), payload(30)])
  // Whatever the batches, every message and the one refusal come out exactly once.
  /** @type {number[]} */
  const bodies = []
  /** @type {string[]} */
  const errors = []
  while (bodies.length + errors.length < 4) {
    try {
      bodies.push(...(await puller.recvMany(10)).map((m) => m.body.length))
    } catch (e) {
      if (!(e instanceof LimitExceeded)) throw e
      errors.push(e.code)
    }
  }
  assert.deepEqual(
    bodies.sort((a, b) => a - b),
    [10, 20, 30],
  )
  assert.deepEqual(errors, ['ERR_WEIDA_LIMIT_EXCEEDED'])
})

onEveryTransport('try_send_queues_at_once_or_returns_false_and_try_recv_takes_what_is_ready', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  // Nothing connected: what send would reject with, thrown.
  assert.throws(() => pusher.trySend('x'), { code: 'ERR_WEIDA_NOT_CONNECTED' })
  await pusher.connect(puller.address)
  assert.equal(puller.tryRecv(), null)
  let atOnce = 0
  for (let i = 0; i < 50; i++) {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(i)
    if (pusher.trySend(b)) atOnce++
    else await pusher.send(b)
  }
  // The runtime offers lanes by default: a lane with room takes a small body at once.
  assert.ok(atOnce > 0, `${atOnce}`)
  // A body larger than a lane takes is not sent.
  assert.equal(pusher.trySend(payload(64 * 1024)), false)
  const seen = []
  while (seen.length < 50) {
    const m = puller.tryRecv() ?? (await puller.recv())
    seen.push(m.body.readUInt32BE())
  }
  // One lane: in order.
  assert.deepEqual(
    seen,
    Array.from({ length: 50 }, (_, i) => i),
  )
  assert.equal(puller.tryRecv(), null)
  puller.close()
  assert.throws(() => puller.tryRecv(), { code: 'ERR_WEIDA_CLOSED' })
  await assert.rejects(puller.recv(), { code: 'ERR_WEIDA_CLOSED' })
})

onEveryTransport('send_and_recv_complete_at_once_when_ready_yet_yield_to_the_event_loop', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  // A timer set now must fire while a loop keeps finding messages ready: the ready path
  // gives way to the event loop every so often.
  let fired = false
  const timer = setTimeout(() => {
    fired = true
  }, 0)
  let sent = 0
  let received = 0
  while (!fired) {
    await pusher.send('m')
    sent++
    const m = puller.tryRecv()
    if (m !== null) received++
    assert.ok(sent < 1_000_000, 'the timer never fired')
  }
  clearTimeout(timer)
  while (received < sent) {
    await puller.recv()
    received++
  }
  assert.equal(puller.tryRecv(), null)
})

onEveryTransport('receives_waiting_together_are_served_in_call_order_from_each_batch', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  // 32 receives wait before anything is sent; one batch from the addon may hold many
  // messages, and every waiting receive must get one of them, not wait for more.
  const waiting = Array.from({ length: 32 }, () => puller.recv())
  await pusher.sendMany(
    Array.from({ length: 40 }, (_, i) => {
      const b = Buffer.alloc(4)
      b.writeUInt32BE(i)
      return b
    }),
  )
  const first = (await Promise.all(waiting)).map((m) => m.body.readUInt32BE())
  // One lane, so in order, and the receives in the order they were called.
  assert.deepEqual(
    first,
    Array.from({ length: 32 }, (_, i) => i),
  )
  const rest = []
  while (rest.length < 8) rest.push(...(await puller.recvMany(64)).map((m) => m.body.readUInt32BE()))
  assert.deepEqual(
    rest,
    Array.from({ length: 8 }, (_, i) => 32 + i),
  )
})

test('send_many_says_how_many_were_sent', { timeout: TIMEOUT }, async (ctx) => {
  // One stream slot, taken by the first body (nobody reads): the second waits for one and times
  // out. The error says one was sent (python/tests/test_patterns.py the same).
  const limits = { maxConcurrentUniStreams: 1, maxLocalStreams: 1 }
  const server = runtime(ctx, { limits })
  const listener = await server.bind(bindAddress('inproc'))
  const puller = listener.puller('/jobs')
  keep(ctx, puller)
  const pusher = runtime(ctx, { limits, sendTimeoutMs: 500, laneMaxMessage: 0 }).pusher()
  await pusher.connect(puller.address)
  const e = await rejection(pusher.sendMany(['takes the only slot', 'waits', 'never tried']))
  assert.ok(e instanceof Timeout, String(e))
  assert.equal(e.sent, 1)
})
