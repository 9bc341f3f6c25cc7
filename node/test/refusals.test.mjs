// @ts-check
// Refusals (core/tests/refusals.rs, PATTERNS §1.6), with 2 MiB payloads: beyond the stream
// window, so the refusal cannot lose the race to the transport receipt.

import assert from 'node:assert/strict'
import { LimitExceeded, Rejected, UnknownEndpoint, Unsupported, withPath } from 'weida'
import { keep, onEveryTransport, pair, payload, rejection, serve } from './helpers.mjs'

const BIG = 2 << 20

onEveryTransport('push_to_an_unknown_path_is_reported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  keep(ctx, listener.puller('/jobs'))
  const pusher = client.pusher()
  await pusher.connect(withPath(listener.address, '/nowhere'))
  const e = await rejection(pusher.send(payload(BIG)))
  assert.ok(e instanceof UnknownEndpoint, String(e))
  assert.equal(e.path, '/nowhere')
})

onEveryTransport('push_to_rep_path_is_unsupported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  keep(ctx, listener.replier('/rpc'))
  const pusher = client.pusher()
  await pusher.connect(withPath(listener.address, '/rpc'))
  await assert.rejects(pusher.send(payload(BIG)), Unsupported)
})

onEveryTransport('unknown_endpoint_is_reported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const req = client.requester()
  await req.connect(withPath(listener.address, '/nowhere'))
  const e = await rejection(req.request(payload(BIG)))
  assert.ok(e instanceof UnknownEndpoint, String(e))
  assert.equal(e.path, '/nowhere')
  // Small requests are refused the same way: an exchange's ERROR needs no race.
  await assert.rejects(req.request('x'), { code: 'ERR_WEIDA_UNKNOWN_ENDPOINT' })
})

onEveryTransport('request_to_pull_path_is_unsupported', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  keep(ctx, listener.puller('/jobs'))
  const req = client.requester()
  await req.connect(withPath(listener.address, '/jobs'))
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
