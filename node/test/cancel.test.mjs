// @ts-check
// Cancel (core/tests/cancel.rs, PATTERNS §1.5): the reader never observes a cancelled transfer
// as complete, on every transport; and AbortSignal, which drops the Rust future of a call.

import assert from 'node:assert/strict'
import { AbortError, Canceled, ConnectionLost } from 'weida'
import { native, onEveryTransport, pair, payload, rejection, serve } from './helpers.mjs'

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
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  // Bodies of 20 000 bytes: above the bound under which a small message may share one stream
  // with others (the core's message lanes), so each is a stream of its own.
  const big = (/** @type {number} */ n) => Buffer.alloc(20_000, n)
  for (const body of [big(1), big(2)]) {
    const ac = new AbortController()
    const pending = puller.recv({ signal: ac.signal })
    const [fetched, orphans] = [native._fetched(), native._orphans()]
    // Not awaited: the JS thread must not run its event loop (where the receive could settle)
    // before the abort; the send goes on on the I/O thread.
    const sent = pusher.send(body)
    // Block the JS thread until the pending receive has taken the message on the I/O thread:
    // the abort then lands before the receive's promise can settle here, so the binding hands
    // the message back.
    assert.ok(native._waitFetched(fetched + 1, 10_000), 'the message never arrived')
    ac.abort()
    const rejected = rejection(pending)
    await sent
    const e = await rejected
    assert.ok(e instanceof AbortError, String(e))
    const m = await puller.recv({ signal: AbortSignal.timeout(5_000) })
    assert.ok(m.body.equals(body), 'the next receive gets it')
    assert.equal(native._orphans(), orphans + 1, 'the message came back: the race ran')
  }
  // recvMany the same way.
  const ac = new AbortController()
  const pending = puller.recvMany(10, { signal: ac.signal })
  const [fetched, orphans] = [native._fetched(), native._orphans()]
  const sent = pusher.sendMany([big(3), big(4), big(5)])
  assert.ok(native._waitFetched(fetched + 1, 10_000), 'the messages never arrived')
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
  assert.equal(native._orphans(), orphans + 1, 'what it took came back: the race ran')
})

onEveryTransport('concurrent_receives_get_messages_in_call_order_when_one_gives_way', async (t, ctx) => {
  // A receive that finds the ready streak spent gives way to the event loop before it takes.
  // A receive called after it must still get the later message: receives are served in call
  // order. (It took synchronously, ahead of the one giving way, and got the earlier message.)
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const n = 300
  const b = Buffer.alloc(4)
  for (let i = 0; i < n; i++) {
    b.writeUInt32BE(i)
    await pusher.send(b)
  }
  /** @type {number[]} */
  const got = []
  while (got.length < n) {
    const pairOf = await Promise.all([puller.recv(), puller.recv()])
    for (const m of pairOf) got.push(m.body.readUInt32BE(0))
  }
  assert.deepEqual(got, Array.from({ length: n }, (_, i) => i))
})

onEveryTransport('receives_raced_and_cancelled_keep_the_order', async (t, ctx) => {
  // A new user's race: two receives, the first to settle wins, the other is aborted. A message
  // the loser had taken as it was aborted goes back to the endpoint, and must be the next one
  // any receive takes: the messages come out in the order they were sent.
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const n = 20_000
  const sending = (async () => {
    const b = Buffer.alloc(4)
    for (let i = 0; i < n; i++) {
      b.writeUInt32BE(i)
      await pusher.send(b)
    }
  })()
  /** @type {number[]} */
  const got = []
  while (got.length < n) {
    const acs = [new AbortController(), new AbortController()]
    const recvs = acs.map((ac) => puller.recv({ signal: ac.signal }))
    const winner = await Promise.race(recvs.map((p, i) => p.then(() => i)))
    acs[1 - winner].abort()
    // Both may have settled: the one called first holds the earlier message.
    for (const r of await Promise.allSettled(recvs)) {
      if (r.status === 'fulfilled') got.push(r.value.body.readUInt32BE(0))
      else assert.ok(r.reason instanceof AbortError, String(r.reason))
    }
  }
  await sending
  const outOfOrder = got.flatMap((v, i) => (i > 0 && v !== got[i - 1] + 1 ? [[got[i - 1], v]] : []))
  assert.deepEqual(outOfOrder, [], 'out of order')
  assert.equal(got.length, n)
})
