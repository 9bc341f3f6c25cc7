// @ts-check
// An endpoint's own bounds: `maxCollectedBody`, `endpointQueue` and `sendTimeoutMs` given when
// it is made apply to it alone (core/tests/endpoint_options.rs has the same names).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as weida from 'weida'
import { bindAddress, onEveryTransport, pair, payload, rejection, runtime, TIMEOUT } from './helpers.mjs'

onEveryTransport('a_pullers_max_collected_body_is_its_own', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx, { limits: { maxCollectedBody: 1000 } })
  const small = listener.puller('/small', { maxCollectedBody: 100 })
  const plain = listener.puller('/plain')
  const large = listener.puller('/large', { maxCollectedBody: 2 ** 20 })
  const [toSmall, toPlain, toLarge] = [client.pusher(), client.pusher(), client.pusher()]
  await toSmall.connect(small.address)
  await toPlain.connect(plain.address)
  await toLarge.connect(large.address)
  await toSmall.send(payload(101))
  const e = /** @type {any} */ (await rejection(small.recv()))
  assert.ok(e instanceof weida.LimitExceeded, String(e))
  assert.equal(e.limit, 'max_collected_body')
  assert.ok(e.message.includes('max_collected_body 100 '), e.message)
  await toPlain.send(payload(101))
  assert.equal((await plain.recv()).body.length, 101)
  for (const n of [4 << 10, 200 << 10]) {
    await toLarge.send(payload(n))
    assert.deepEqual((await large.recv()).body, payload(n))
  }
})

onEveryTransport('a_requesters_and_a_repliers_max_collected_body_are_their_own', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const echo = listener.replier('/echo')
  const strict = listener.replier('/strict', { maxCollectedBody: 10 })
  const small = client.requester({ maxCollectedBody: 10 })
  await small.connect(echo.address)
  const echoing = (async () => {
    const ex = await echo.accept()
    // The requester stops a reply above its bound: the reply may fail here, LIMIT_EXCEEDED.
    await ex.reply(await ex.takeBody()).catch((e) => assert.ok(e instanceof weida.LimitExceeded, String(e)))
  })()
  assert.ok((await rejection(small.request(payload(11)))) instanceof weida.LimitExceeded)
  await echoing
  const plain = client.requester()
  await plain.connect(strict.address)
  const asking = rejection(plain.request(payload(11)))
  const ex = await strict.accept()
  assert.ok((await rejection(ex.takeBody())) instanceof weida.LimitExceeded)
  ex.cancel()
  assert.ok((await asking) instanceof weida.WeidaError)
})

onEveryTransport('a_pushers_send_timeout_is_its_own', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx, { limits: { maxConcurrentUniStreams: 1, maxLocalStreams: 1 } })
  const puller = listener.puller('/jobs')
  const holder = client.pusher()
  await holder.connect(puller.address)
  const held = await holder.open() // the one stream the listener allows, unfinished
  const bounded = client.pusher({ sendTimeoutMs: 200 })
  await bounded.connect(puller.address)
  const e = await rejection(bounded.open())
  assert.ok(e instanceof weida.Timeout, String(e))
  held.cancel()
})

test('an_endpoint_option_is_checked_and_named', { timeout: TIMEOUT }, async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind(bindAddress('inproc'))
  assert.throws(() => listener.puller('/jobs', { endpointQueue: 0 }), (e) => e instanceof weida.InvalidConfig && /endpointQueue|endpoint_queue/.test(String(e)))
  // @ts-expect-error: not an endpoint option
  assert.throws(() => rt.pusher({ idleTimeoutMs: 1 }), (e) => e instanceof weida.InvalidConfig && /idleTimeoutMs/.test(String(e)))
  assert.throws(() => rt.requester({ sendTimeoutMs: -1 }), (e) => e instanceof weida.InvalidConfig && /sendTimeoutMs/.test(String(e)))
  listener.puller('/jobs') // the refused endpoint took no path
})
