// @ts-check
// Push/Pull the other way round (core/tests/bound_push.rs, docs/PATTERNS.md §3.1): a pusher that
// binds deals round-robin to the pullers that dialled it, over every transport.

import assert from 'node:assert/strict'
import { Closed, Timeout, Unsupported } from 'weida'
import { bindAddress, onEveryTransport, rejection, runtime } from './helpers.mjs'

onEveryTransport('workers_that_connect_before_and_after_the_first_send_each_get_their_share', async (t, ctx) => {
  const jobs = (await runtime(ctx).bind(bindAddress(t))).pusher('/jobs')
  const a = runtime(ctx).puller()
  await a.connect(jobs.address)
  assert.equal(jobs.peerCount, 1)
  for (let i = 0; i < 4; i++) await jobs.send(`job ${i}`)
  for (let i = 0; i < 4; i++) assert.equal((await a.recv()).body.toString(), `job ${i}`)
  const b = runtime(ctx).puller()
  await b.connect(jobs.address)
  assert.equal(jobs.peerCount, 2)
  for (let i = 4; i < 14; i++) await jobs.send(`job ${i}`)
  const got = []
  for (let i = 0; i < 5; i++) got.push((await a.recv()).body.toString(), (await b.recv()).body.toString())
  assert.deepEqual(got.sort(), Array.from({ length: 10 }, (_, i) => `job ${i + 4}`).sort())
  assert.equal(a.tryRecv(), null)
  assert.equal(b.tryRecv(), null)
})

onEveryTransport('a_bound_pushers_send_waits_for_a_puller_bounded_by_send_timeout', async (t, ctx) => {
  const listener = await runtime(ctx).bind(bindAddress(t))
  const lonely = listener.pusher('/alone', { sendTimeoutMs: 50 })
  assert.ok((await rejection(lonely.send('nobody'))) instanceof Timeout)
  const jobs = listener.pusher('/jobs')
  const worker = runtime(ctx).puller()
  await Promise.all([jobs.send('first'), worker.connect(jobs.address)])
  for await (const m of worker) {
    assert.equal(m.body.toString(), 'first')
    break
  }
  jobs.close()
  assert.ok((await rejection(jobs.send('after'))) instanceof Closed)
})

onEveryTransport('what_is_not_a_bound_pusher_takes_no_puller', async (t, ctx) => {
  const listener = await runtime(ctx).bind(bindAddress(t))
  const puller = listener.puller('/pull')
  const jobs = listener.pusher('/jobs')
  const client = runtime(ctx)
  assert.ok((await rejection(client.puller().connect(puller.address))) instanceof Unsupported)
  assert.ok((await rejection(client.pusher().connect(jobs.address))) instanceof Unsupported)
})
