// @ts-check
// Lifecycle and backpressure (core/tests/lifecycle.rs, PATTERNS §1.1, §1.4, §1.8, GUARANTEES §5).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Canceled, Closed, ConnectionLost, Indeterminate, InvalidAddress, InvalidConfig, NotConnected, Runtime, Timeout, Unsupported, UnknownEndpoint, withPath } from 'weida'
import { bindAddress, deferred, keep, onEveryTransport, pair, payload, rejection, relay, runtime, serve, TIMEOUT } from './helpers.mjs'

onEveryTransport('a_finished_transfer_needs_no_local_handle_to_arrive', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  {
    const pusher = client.pusher()
    await pusher.connect(puller.address)
    for (let i = 0; i < 20; i++) await pusher.send(Buffer.alloc(4096, i))
    // The pusher goes away here; its messages do not need it.
    pusher.close()
  }
  const got = []
  for (let i = 0; i < 20; i++) got.push((await puller.recv()).body[0])
  got.sort((a, b) => a - b)
  assert.deepEqual(
    got,
    Array.from({ length: 20 }, (_, i) => i),
  )
})

onEveryTransport('a_finished_transfer_that_shutdown_cuts_short_arrives_under_drain', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  for (let i = 0; i < 50; i++) await pusher.send(Buffer.alloc(1024, 7))
  const reader = (async () => {
    let n = 0
    while (n < 50) {
      assert.equal((await puller.recv()).body.length, 1024)
      n++
    }
    return n
  })()
  const deadline = 30_000
  const started = Date.now()
  const drained = await client.drain(deadline)
  assert.equal(drained.outstanding, 0n)
  assert.equal(drained.delivered, 50n)
  // Everything the drain let finish arrived; it ended when the peer had taken it all.
  assert.equal(await reader, 50)
  assert.ok(Date.now() - started < deadline)
  await assert.rejects(pusher.send('late'), Closed)
})

onEveryTransport('counters_count_streams_bytes_and_lane_messages', async (t, ctx) => {
  const { server, listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.sendMany([Buffer.from('abc'), Buffer.from('de')])
  for (let i = 0; i < 2; i++) await puller.recv()
  const c = client.counters()
  // Both small messages went as frames on one message lane.
  assert.deepEqual(
    [c.streamsOpened, c.bytesSent, c.connectionsDialled, c.laneMessagesSent, c.laneMessagesLost],
    [1n, 5n, 1n, 2n, 0n],
  )
  const s = server.counters()
  assert.deepEqual([s.bytesReceived, s.laneMessagesReceived, s.connectionsAccepted], [5n, 2n, 1n])
})

test('an_expired_drain_reports_what_is_outstanding', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind('weida://127.0.0.1:0')
  const puller = listener.puller('/jobs')
  keep(ctx, puller)
  const r = await relay(puller.address)
  ctx.after(() => r.close())
  const client = runtime(ctx)
  const pusher = client.pusher()
  await pusher.connect(r.addressFor(puller.address))
  const tr = await pusher.open()
  await (await tr.finish()).delivered()
  r.freeze()
  for (let i = 0; i < 5; i++) await pusher.send('into the void')
  const drained = await client.drain(300)
  assert.equal(drained.outstanding, 5n)
  assert.equal(drained.delivered, 0n)
})

onEveryTransport('the_stream_budget_is_backpressure_not_an_error', async (t, ctx) => {
  const limits = { maxConcurrentUniStreams: 2, maxLocalStreams: 2 }
  const server = runtime(ctx, { limits })
  const listener = await server.bind(bindAddress(t))
  const puller = listener.puller('/jobs')
  // A stream per message (lanes off): with lanes, small sends share one stream, and their
  // backpressure is the lane's queue and window.
  // sendTimeoutMs also bounds d's wait for the slot the read frees: long enough for a loaded
  // machine (the peer's stream credit must come back).
  const client = runtime(ctx, { limits, sendTimeoutMs: 1000, laneMaxMessage: 0 })
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  // Two transfers hold the two slots while nobody reads them.
  await pusher.send('a')
  await pusher.send('b')
  // The third waits in open (it does not fail) until sendTimeoutMs bounds the wait.
  await assert.rejects(pusher.send('c'), Timeout)
  // Reading one frees one slot, and the next send goes through.
  const first = await puller.recv()
  // The slot comes back when the peer's stream credit does; a send that times out first sent
  // nothing, and is tried again.
  for (;;) {
    try {
      await pusher.send('d')
      break
    } catch (e) {
      if (!(e instanceof Timeout)) throw e
    }
  }
  const rest = [first.body.toString(), (await puller.recv()).body.toString(), (await puller.recv()).body.toString()]
  rest.sort()
  assert.deepEqual(rest, ['a', 'b', 'd'])
})

onEveryTransport('a_reply_lost_after_the_request_fin_is_indeterminate', async (t, ctx) => {
  const { server, listener, client } = await pair(t, ctx)
  const replier = listener.replier('/charge')
  /** @type {{ promise: Promise<Buffer>, resolve: (b: Buffer) => void }} */
  const seen = deferred()
  serve(ctx, async () => {
    const ex = await replier.accept()
    // The replier acts and never answers.
    seen.resolve(await ex.takeBody())
  })
  const req = client.requester()
  await req.connect(withPath(listener.address, '/charge'))
  const pending = rejection(req.request('card 42'))
  assert.equal((await seen.promise).toString(), 'card 42')
  server.shutdown()
  const e = await pending
  assert.ok(e instanceof Indeterminate, String(e))
  assert.equal(e.code, 'ERR_WEIDA_INDETERMINATE')
  assert.equal(e.definite, false)
  assert.ok(['peer_closed', 'reset', 'locally_closed'].includes(e.lossCause), e.lossCause)
})

onEveryTransport('a_loss_before_the_request_fin_is_connection_lost', async (t, ctx) => {
  const { server, listener, client } = await pair(t, ctx)
  const replier = listener.replier('/upload')
  const req = client.requester()
  await req.connect(replier.address)
  const [body, reply] = await req.open()
  await body.write('first part')
  await replier.accept()
  server.shutdown()
  const e = await rejection(reply.body())
  assert.ok(e instanceof ConnectionLost, String(e))
  assert.equal(e.definite, true)
})

test('idle_timeout_reports_loss_with_its_cause', { timeout: TIMEOUT }, async (ctx) => {
  // Keep-alives hold the connections up however slowly the setup below runs on a loaded
  // machine; once the relay freezes they are dropped too, and the idle timeout fires.
  const limits = { idleTimeoutMs: 3000, keepAliveMs: 300 }
  const { listener, client } = await pair('quic', ctx, { limits })
  const replier = listener.replier('/slow')
  const puller = listener.puller('/jobs')
  keep(ctx, puller)
  const r = await relay(listener.address)
  ctx.after(() => r.close())
  const req = client.requester()
  await req.connect(r.addressFor(replier.address))
  const pusher = client.pusher()
  await pusher.connect(r.addressFor(puller.address))
  const unfinished = await pusher.open()
  await unfinished.write('never finished')
  const pending = rejection(req.request('hold on'))
  const ex = await replier.accept()
  // The network goes silent: no close, no reset, just nothing.
  r.freeze()
  const e = await pending
  assert.ok(e instanceof Indeterminate, String(e))
  assert.equal(e.lossCause, 'idle_timeout')
  // Its connection idles out too: the receipt of what it had sent reports the loss.
  const w = await rejection(unfinished.finish().then((d) => d.delivered()))
  assert.ok(w instanceof ConnectionLost, String(w))
  assert.equal(w.lossCause, 'idle_timeout')
  ex.cancel()
})

onEveryTransport('a_peer_that_goes_away_is_reported_as_connection_loss', async (t, ctx) => {
  const { server, listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.send('one')
  assert.equal((await puller.recv()).body.toString(), 'one')
  server.shutdown()
  puller.close()
  listener.close()
  // The loss is learned (at once in process, at the next open over a socket) and named.
  let e
  for (;;) {
    try {
      await pusher.send('two')
    } catch (err) {
      e = err
      break
    }
  }
  assert.ok(e instanceof ConnectionLost, String(e))
  assert.equal(e.lossCause, 'peer_closed')
  assert.equal(pusher.peerCount, 0)
})

test('an_endpoint_never_connected_is_not_connected', { timeout: TIMEOUT }, async (ctx) => {
  const rt = runtime(ctx)
  await assert.rejects(rt.pusher().send('x'), NotConnected)
  await assert.rejects(rt.requester().request('x'), NotConnected)
})

test('configurations_that_cannot_be_honoured_are_refused', { timeout: TIMEOUT }, async (ctx) => {
  assert.throws(() => new Runtime({ limits: { endpointQueue: 0 } }), InvalidConfig)
  assert.throws(() => new Runtime({ limits: { sendWindow: -1 } }), InvalidConfig)
  // Below QUIC's 1200-byte minimum datagram.
  assert.throws(
    () => new Runtime({ limits: { maxUdpPayload: 1199 } }),
    (e) => e instanceof InvalidConfig && /max_udp_payload/.test(e.message),
  )
  const rt = runtime(ctx)
  await assert.rejects(rt.bind('weida+pipe://name'), Unsupported)
  await assert.rejects(rt.bind('weida://127.0.0.1:0/path'), InvalidAddress)
})

onEveryTransport('closing_an_endpoint_unbinds_its_path_and_ends_its_receivers', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  // Connected while the path is bound: a connect after the close would be refused at once by
  // the path check (PROTOCOL §3.1.5); what is sent later meets the unbound path.
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const waiting = puller.recv()
  puller.close()
  // A receiver waiting on the empty queue ends, and so does every later one, and iteration.
  await assert.rejects(waiting, Closed)
  await assert.rejects(puller.recv(), Closed)
  for await (const m of puller) assert.fail(`a closed puller yielded ${m.body}`)
  // The path is unbound: a message sent there is refused...
  await assert.rejects(pusher.send(payload(2 << 20)), UnknownEndpoint)
  // ... and may be bound again.
  const again = listener.puller('/jobs')
  await pusher.send('again')
  assert.equal((await again.recv()).body.toString(), 'again')
  // Repliers and acceptors close the same way.
  const replier = listener.replier('/rpc')
  replier.close()
  await assert.rejects(replier.accept(), Closed)
  const acceptor = listener.acceptor('/raw')
  acceptor.close()
  await assert.rejects(acceptor.accept(), Closed)
  // A closed dialling endpoint refuses further calls.
  pusher.close()
  await assert.rejects(pusher.send('x'), Closed)
  assert.throws(() => pusher.disconnect(puller.address), Closed)
})

test('a_bad_option_is_invalid_config_naming_it', () => {
  // One table checks every option, in every language: ERR_WEIDA_INVALID_CONFIG naming the
  // option as the caller spelled it (python/tests/test_lifecycle.py the same, in snake_case
  // and seconds).
  /** @type {Array<[() => unknown, string]>} */
  const bad = [
    [() => new Runtime({ limits: { endpointQueue: -1 } }), 'endpointQueue'],
    [() => new Runtime({ limits: { endpointQueue: 1.5 } }), 'endpointQueue'],
    [() => new Runtime({ limits: { idleTimeoutMs: -1 } }), 'idleTimeoutMs'],
    [() => new Runtime({ limits: { idleTimeoutMs: Number.NaN } }), 'idleTimeoutMs'],
    [() => new Runtime({ limits: /** @type {any} */ ({ maxFilters: true }) }), 'maxFilters'],
    [() => new Runtime({ limits: /** @type {any} */ ({ sendWindow: '1' }) }), 'sendWindow'],
    [() => new Runtime({ limits: /** @type {any} */ ({ nonsense: 1 }) }), 'nonsense'],
    // The core's own check of a value, the same error.
    [() => new Runtime({ limits: { endpointQueue: 0 } }), 'endpoint_queue'],
    [() => new Runtime({ ordering: /** @type {any} */ ('total') }), 'ordering'],
    [() => new Runtime({ sendTimeoutMs: -1 }), 'sendTimeoutMs'],
    [() => new Runtime({ udpBuffer: -5 }), 'udpBuffer'],
    [() => new Runtime({ laneMaxMessage: 2 ** 64 }), 'laneMaxMessage'],
  ]
  for (const [make, named] of bad) {
    assert.throws(make, (e) => e instanceof InvalidConfig && e.message.includes(named), named)
  }
  // null is the default, except where it turns something off.
  new Runtime({ limits: { keepAliveMs: null }, sendTimeoutMs: null }).close()
})

test('udp_buffer_is_a_runtime_option', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx, { udpBuffer: 1 << 20 })
  const client = runtime(ctx, { udpBuffer: 256 * 1024 })
  const listener = await server.bind('weida://127.0.0.1:0')
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.send('over a UDP socket of the size asked')
  assert.equal((await puller.recv()).body.toString(), 'over a UDP socket of the size asked')
})

test('counters_name_every_core_counter', (ctx) => {
  const c = runtime(ctx).counters()
  assert.deepEqual(Object.keys(c).sort(), [
    'bytesReceived',
    'bytesSent',
    'connectionsAccepted',
    'connectionsDialled',
    'copiesPublished',
    'laneMessagesLost',
    'laneMessagesReceived',
    'laneMessagesSent',
    'outboxAbandoned',
    'outboxDropped',
    'outboxQueued',
    'outboxWritten',
    'receiptsDelivered',
    'receiptsFailed',
    'streamsAccepted',
    'streamsOpened',
    'streamsRefused',
  ])
  assert.ok(Object.values(c).every((v) => v === 0n))
})

onEveryTransport('close_resolves_once_closed_and_the_peer_learns_of_the_end', async (t, ctx) => {
  // close() closes as shutdown() does, and resolves once the closes have been sent (core:
  // lifecycle.rs a_runtime_closed_before_its_process_exits_tells_its_peer_at_once).
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const held = await pusher.open()
  await held.write('half')
  const incoming = await puller.accept()
  assert.equal((await incoming.readChunk())?.toString(), 'half')
  await client.close()
  const e = await rejection((async () => {
    while ((await incoming.readChunk()) !== null) {
      // read to the end, which the close cuts short
    }
  })())
  assert.ok(e instanceof ConnectionLost || e instanceof Canceled, String(e))
  const after = await rejection(pusher.send('after'))
  assert.ok(after instanceof Closed, String(after))
  await client.close()
})

onEveryTransport('a_listener_reports_each_connection_and_how_it_ended', async (t, ctx) => {
  // Listener.events(): connected, with where the connection comes from (a QUIC peer's UDP
  // address, else the transport's name) and the key it presented; lost, with its cause, once the
  // dialler closes (core/tests/listener_events.rs has the same name).
  const { listener, client } = await pair(t, ctx)
  const events = listener.events()
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.send('one')
  assert.equal((await puller.recv()).body.toString(), 'one')
  const connected = await events.next()
  assert.ok(connected !== null && connected.kind === 'connected', JSON.stringify(connected))
  if (t === 'quic') {
    assert.match(connected.url, /^127\.0\.0\.1:\d+$/)
    assert.equal(connected.fingerprint, client.fingerprint)
  } else {
    assert.equal(connected.url, t)
    assert.equal(connected.fingerprint, undefined)
  }
  await client.close()
  const lost = await events.next()
  assert.ok(lost !== null && lost.kind === 'lost', JSON.stringify(lost))
  assert.equal(lost.url, connected.url)
  assert.equal(lost.cause, 'peer_closed')
})
