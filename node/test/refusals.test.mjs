// @ts-check
// Refusals (core/tests/refusals.rs, PATTERNS §1.6), with 2 MiB payloads: beyond the stream
// window, so the refusal cannot lose the race to the transport receipt.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { LimitExceeded, NotConnected, Rejected, UnknownEndpoint, Unreachable, Unsupported, withPath } from 'weida'
import { keep, onEveryTransport, pair, payload, rejection, runtime, serve, TIMEOUT } from './helpers.mjs'

const BIG = 2 << 20

// `connect` asks the listener whether the path is bound to an endpoint that takes what this one
// opens (PROTOCOL §3.1.5): nothing is sent into a mistyped path and lost.
onEveryTransport('connect_to_an_unbound_path_or_a_path_of_another_pattern_fails_at_connect', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  keep(ctx, listener.puller('/jobs'), listener.replier('/rpc'), listener.acceptor('/raw'), listener.publisher('/prices'))
  const pusher = client.pusher()
  const requester = client.requester()
  const peer = client.peer()
  for (const endpoint of [pusher, requester, peer]) {
    const e = await rejection(endpoint.connect(withPath(listener.address, '/nowhere')))
    assert.ok(e instanceof UnknownEndpoint, String(e))
    assert.equal(e.path, '/nowhere')
    assert.equal(e.definite, true)
  }
  for (const [endpoint, path] of /** @type {const} */ ([[pusher, '/rpc'], [pusher, '/prices'], [requester, '/jobs'], [peer, '/prices']])) {
    await assert.rejects(endpoint.connect(withPath(listener.address, path)), Unsupported)
  }
  // No slot was made: the endpoints are not connected, and nothing was sent.
  assert.equal(pusher.peerCount, 0)
  await assert.rejects(pusher.send('lost?'), NotConnected)
  assert.equal(client.counters().streamsOpened, 0n)
  // Compatible pairs connect (PATTERNS §5).
  await pusher.connect(withPath(listener.address, '/jobs'))
  await pusher.connect(withPath(listener.address, '/raw'))
  await requester.connect(withPath(listener.address, '/rpc'))
  await requester.connect(withPath(listener.address, '/raw'))
  for (const path of ['/jobs', '/rpc', '/raw']) await peer.connect(withPath(listener.address, path))
  assert.deepEqual([pusher.peerCount, requester.peerCount, peer.peerCount], [2, 2, 3])
})

// The refusals below reach a path that passed the check at connect and was unbound (or bound to
// another pattern) after it: the refusal race of PATTERNS §1.6 is left to exactly this case.

onEveryTransport('push_to_an_unknown_path_is_reported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  keep(ctx, listener.puller('/jobs'))
  const gone = listener.puller('/nowhere')
  const pusher = client.pusher()
  await pusher.connect(withPath(listener.address, '/nowhere'))
  gone.close()
  const e = await rejection(pusher.send(payload(BIG)))
  assert.ok(e instanceof UnknownEndpoint, String(e))
  assert.equal(e.path, '/nowhere')
})

onEveryTransport('push_to_rep_path_is_unsupported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const before = listener.puller('/rpc')
  const pusher = client.pusher()
  await pusher.connect(withPath(listener.address, '/rpc'))
  before.close()
  keep(ctx, listener.replier('/rpc'))
  await assert.rejects(pusher.send(payload(BIG)), Unsupported)
})

onEveryTransport('unknown_endpoint_is_reported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const gone = listener.replier('/nowhere')
  const req = client.requester()
  await req.connect(withPath(listener.address, '/nowhere'))
  gone.close()
  const e = await rejection(req.request(payload(BIG)))
  assert.ok(e instanceof UnknownEndpoint, String(e))
  assert.equal(e.path, '/nowhere')
  // Small requests are refused the same way: an exchange's ERROR needs no race.
  await assert.rejects(req.request('x'), { code: 'ERR_WEIDA_UNKNOWN_ENDPOINT' })
})

onEveryTransport('request_to_pull_path_is_unsupported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const before = listener.replier('/jobs')
  const req = client.requester()
  await req.connect(withPath(listener.address, '/jobs'))
  before.close()
  keep(ctx, listener.puller('/jobs'))
  const e = await rejection(req.request(payload(BIG)))
  assert.ok(e instanceof Unsupported, String(e))
  assert.equal(e.definite, true)
})

onEveryTransport('a_replier_rejection_reaches_the_requester_with_its_reason', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const replier = listener.replier('/guarded')
  serve(ctx, async () => {
    const ex = await replier.accept()
    await ex.reject('not on a weekend')
  })
  const req = client.requester()
  await req.connect(replier.address)
  const e = await rejection(req.request('x'))
  assert.ok(e instanceof Rejected, String(e))
  assert.match(e.message, /not on a weekend/)
})

onEveryTransport('a_header_above_the_peers_limit_is_refused_before_sending', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await assert.rejects(pusher.send('body', { blob: 'x'.repeat(16 * 1024) }), LimitExceeded)
  // Nothing was sent, and the pusher still works.
  await pusher.send('after')
  assert.equal((await puller.recv()).body.toString(), 'after')
})

onEveryTransport('a_body_above_max_collected_body_is_limit_exceeded_and_the_puller_goes_on', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx, { limits: { maxCollectedBody: 1000 } })
  const puller = listener.puller('/jobs')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  await pusher.send(payload(1001))
  await pusher.send(payload(1000))
  const outcomes = []
  for (let i = 0; i < 2; i++) {
    outcomes.push(
      await puller.recv().then(
        (m) => `ok ${m.body.length}`,
        (e) => String(e.code),
      ),
    )
  }
  outcomes.sort()
  assert.deepEqual(outcomes, ['ERR_WEIDA_LIMIT_EXCEEDED', 'ok 1000'])
})

test('a_listener_refuses_connections_beyond_max_connections_and_serves_those_it_holds', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx, { limits: { maxConnections: 1 } })
  const replier = (await server.bind('weida://127.0.0.1:0')).replier('/echo')
  void (async () => {
    for (;;) {
      const ex = await replier.accept().catch(() => null)
      if (ex === null) return
      await ex.reply(await ex.takeBody())
    }
  })()
  const held = runtime(ctx).requester()
  await held.connect(replier.address)
  await assert.rejects(
    runtime(ctx).requester().connect(replier.address),
    (e) => e instanceof Unreachable && /max_connections/.test(String(e)),
  )
  assert.equal((await held.request('still served')).toString(), 'still served')
})
