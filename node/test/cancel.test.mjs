// @ts-check
// Cancel (core/tests/cancel.rs, PATTERNS §1.5): the reader never observes a cancelled transfer
// as complete, on every transport; and AbortSignal, which drops the Rust future of a call.

import assert from 'node:assert/strict'
import { AbortError, Canceled, ConnectionLost } from 'weida'
import { onEveryTransport, pair, payload, rejection, serve } from './helpers.mjs'

/**
 * Reads `incoming` to its end; resolves with the error that ended it.
 * @param {{ readChunk(): Promise<Buffer | null> }} incoming
 */
async function readToError(incoming) {
  for (;;) {
    let chunk
    try {
      chunk = await incoming.readChunk()
    } catch (e) {
      return e
    }
    assert.notEqual(chunk, null, 'a cancelled transfer read as complete')
  }
}

onEveryTransport('push_cancel_mid_transfer_is_canceled_at_the_reader', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const tr = await pusher.open()
  await tr.write(payload(100_000))
  const incoming = await puller.accept()
  // The reader has the first bytes before the cancel; they stay read.
  const first = await incoming.readChunk()
  assert.ok(first && first.length > 0)
  tr.cancel()
  const e = await readToError(incoming)
  assert.ok(e instanceof Canceled, String(e))
  assert.equal(e.code, 'ERR_WEIDA_CANCELED')
  // The puller goes on.
  await pusher.send('next')
  assert.equal((await puller.recv()).body.toString(), 'next')
})

onEveryTransport('a_transfer_cancelled_before_dispatch_is_never_a_message', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const tr = await pusher.open()
  await tr.write('half a frame')
  tr.cancel()
  await pusher.send('next')
  // Either never dispatched (its reset overtook its header) or reported as Canceled; never a message.
  let canceled = 0
  for (;;) {
    try {
      const m = await puller.recv()
      assert.equal(m.body.toString(), 'next')
      break
    } catch (e) {
      assert.ok(e instanceof Canceled, String(e))
      canceled++
    }
  }
  assert.ok(canceled <= 1)
})

onEveryTransport('a_cancelled_request_is_canceled_at_the_replier', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const replier = listener.replier('/rpc')
  const req = client.requester()
  await req.connect(replier.address)
  const [body] = await req.open()
  await body.write('partial request')
  const ex = await replier.accept()
  body.cancel()
  await assert.rejects(ex.takeBody(), Canceled)
})

onEveryTransport('an_exchange_dropped_without_an_answer_is_canceled_for_the_requester', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const replier = listener.replier('/rpc')
  serve(ctx, async () => {
    const ex = await replier.accept()
    await ex.takeBody()
    ex.cancel() // walks away without answering
  })
  const req = client.requester()
  await req.connect(replier.address)
  await assert.rejects(req.request('q'), { code: 'ERR_WEIDA_CANCELED' })
})

onEveryTransport('aborting_a_pending_recv_rejects_with_an_abort_error', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const ac = new AbortController()
  const pending = puller.recv({ signal: ac.signal })
  ac.abort()
  const e = await rejection(pending)
  assert.ok(e instanceof AbortError, String(e))
  assert.equal(e.name, 'AbortError')
  assert.equal(e.code, 'ABORT_ERR')
  assert.equal(e.cause, ac.signal.reason)
  // An already aborted signal rejects at once; the puller goes on (recv is cancel-safe).
  await assert.rejects(puller.recv({ signal: ac.signal }), AbortError)
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.send('after')
  assert.equal((await puller.recv()).body.toString(), 'after')
})

onEveryTransport('aborting_a_streamed_open_is_canceled_at_the_peer', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const ac = new AbortController()
  const tr = await pusher.open({}, { signal: ac.signal })
  await tr.write(payload(100_000))
  const incoming = await puller.accept()
  assert.ok(await incoming.readChunk())
  ac.abort()
  const e = await readToError(incoming)
  assert.ok(e instanceof Canceled, String(e))
  assert.equal(e.code, 'ERR_WEIDA_CANCELED')
  // The transfer is gone: a later write rejects with the signal's AbortError.
  await assert.rejects(tr.write('late'), AbortError)
})

onEveryTransport('aborting_a_pending_write_cancels_the_transfer', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const tr = await pusher.open()
  await tr.write('head')
  const incoming = await puller.accept()
  // Nobody reads, so a write beyond the stream window waits (backpressure) until aborted.
  const ac = new AbortController()
  const writing = tr.write(payload(8 << 20), { signal: ac.signal })
  ac.abort()
  await assert.rejects(writing, AbortError)
  const e = await readToError(incoming)
  if (t === 'unix') {
    // A local socket write cut mid-chunk breaks the stream's framing, so the core closes that
    // stream's socket (core/src/transport/unix.rs, `flush`): the reader sees a loss, never EOF.
    assert.ok(e instanceof Canceled || e instanceof ConnectionLost, String(e))
  } else {
    assert.ok(e instanceof Canceled, String(e))
  }
})

onEveryTransport('aborting_a_streamed_request_is_canceled_at_the_replier', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const replier = listener.replier('/rpc')
  const req = client.requester()
  await req.connect(replier.address)
  const ac = new AbortController()
  const [body, reply] = await req.open({}, { signal: ac.signal })
  await body.write('partial request')
  const ex = await replier.accept()
  const waiting = reply.body()
  ac.abort()
  await assert.rejects(waiting, AbortError)
  await assert.rejects(ex.takeBody(), Canceled)
})

onEveryTransport('an_aborted_puller_recv_loses_nothing', async (t, ctx) => {
  const { server, listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const cell = new Int32Array(new SharedArrayBuffer(4))
  // Bodies of 20 000 bytes: above the bound under which a small message may share one stream
  // with others (the core's message lanes), so each is a stream `streamsAccepted` counts.
  const big = (/** @type {number} */ n) => Buffer.alloc(20_000, n)
  for (const body of [big(1), big(2)]) {
    const accepted = server.counters().streamsAccepted
    const ac = new AbortController()
    const pending = puller.recv({ signal: ac.signal })
    // Not awaited: the JS thread must not run its event loop (where the receive could settle)
    // before the abort; the send goes on on the I/O thread.
    const sent = pusher.send(body)
    // Block the JS thread until the message reached the puller (the pending receive takes it on
    // the I/O thread), and a little longer: the abort then lands after the message and before
    // the receive's promise can settle here, so the binding hands the message back.
    const deadline = Date.now() + 10_000
    while (server.counters().streamsAccepted === accepted) {
      assert.ok(Date.now() < deadline, 'the message never arrived')
      Atomics.wait(cell, 0, 0, 1)
    }
    Atomics.wait(cell, 0, 0, 50)
    ac.abort()
    const rejected = rejection(pending)
    await sent
    const e = await rejected
    assert.ok(e instanceof AbortError, String(e))
    const m = await puller.recv({ signal: AbortSignal.timeout(5_000) })
    assert.ok(m.body.equals(body), 'the next receive gets it')
  }
  // recvMany the same way.
  const accepted = server.counters().streamsAccepted
  const ac = new AbortController()
  const pending = puller.recvMany(10, { signal: ac.signal })
  const sent = pusher.sendMany([big(3), big(4), big(5)])
  const deadline = Date.now() + 10_000
  while (server.counters().streamsAccepted < accepted + 3n) {
    assert.ok(Date.now() < deadline, 'the messages never arrived')
    Atomics.wait(cell, 0, 0, 1)
  }
  Atomics.wait(cell, 0, 0, 50)
  ac.abort()
  const rejected = assert.rejects(pending, AbortError)
  await sent
  await rejected
  /** @type {number[]} */
  const got = []
  while (got.length < 3) got.push(...(await puller.recvMany(10, { signal: AbortSignal.timeout(5_000) })).map((m) => m.body[0]))
  assert.deepEqual(
    got.sort((a, b) => a - b),
    [3, 4, 5],
  )
})
