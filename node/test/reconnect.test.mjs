// @ts-check
// A dialled address outlives its connection (core/tests/reconnect.rs has the same names): an
// endpoint whose peer restarts delivers again with no second connect, says so as PeerEvents,
// and `{ giveUpAfterAttempts: 0 }` is the behaviour before redial. The restart keeps the
// address: the same AF_UNIX path or in-process name (the core's tests restart QUIC behind a
// relay).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as weida from 'weida'
import { bindAddress, onTransports, runtime, TIMEOUT } from './helpers.mjs'

/** @type {import('./helpers.mjs').Transport[]} */
const RESTARTABLE = ['unix', 'inproc']
const FAST = { initialMs: 20, maxMs: 100, jitter: false }

/**
 * Reads events up to the first of `kind`; every one before it must be of `between`.
 * @param {weida.PeerEvents} events @param {string} kind @param {string[]} between
 */
async function until(events, kind, between) {
  for (;;) {
    const e = await events.next()
    assert.ok(e !== null, 'the endpoint is alive')
    if (e.kind === kind) return e
    assert.ok(between.includes(e.kind), `unexpected ${JSON.stringify(e)} before ${kind}`)
  }
}


onTransports('a_pusher_whose_server_restarts_delivers_again_with_no_second_connect', RESTARTABLE, async (t, ctx) => {
  const bind = bindAddress(t)
  const server = new weida.Runtime()
  const puller = (await server.bind(bind)).puller('/jobs')
  const client = runtime(ctx, { reconnect: FAST })
  const pusher = client.pusher()
  const events = pusher.events()
  await pusher.connect(puller.address)
  assert.equal((await events.next())?.kind, 'connected')
  await pusher.send('one')
  assert.equal((await puller.recv()).body.toString(), 'one')
  await server.close()
  const lost = await events.next()
  assert.deepEqual([lost?.kind, lost?.url], ['lost', puller.address])
  const retrying = /** @type {any} */ (await events.next())
  assert.deepEqual([retrying.kind, retrying.attempt, retrying.delayMs], ['retrying', 1, t === 'inproc' ? 0 : 20])
  assert.equal(pusher.peerCount, 0)
  const second = runtime(ctx)
  const again = (await second.bind(bind)).puller('/jobs')
  await until(events, 'connected', ['retrying'])
  assert.equal(pusher.peerCount, 1)
  await pusher.send('two')
  assert.equal((await again.recv()).body.toString(), 'two')
})

onTransports('never_reports_connection_lost_as_before', RESTARTABLE, async (t, ctx) => {
  const server = new weida.Runtime()
  const puller = (await server.bind(bindAddress(t))).puller('/jobs')
  const client = runtime(ctx, { reconnect: FAST })
  const pusher = client.pusher({ reconnect: { giveUpAfterAttempts: 0 } })
  const events = pusher.events()
  await pusher.connect(puller.address)
  await server.close()
  await until(events, 'lost', ['connected'])
  assert.equal((await events.next())?.kind, 'gave_up')
  await assert.rejects(pusher.open(), weida.ConnectionLost)
})

// In process too: the name is bound again a moment before the path, and a redial in that gap is
// refused by the path check (PROTOCOL §3.1.5) and retried, so the waiting open goes out only
// once the path is bound, never into the refusal race.
onTransports('a_transfer_opened_during_the_outage_completes_on_the_redialled_connection', RESTARTABLE, async (t, ctx) => {
  const bind = bindAddress(t)
  const server = new weida.Runtime()
  const first = (await server.bind(bind)).puller('/jobs') // kept: a dropped endpoint unbinds
  const client = runtime(ctx, { reconnect: FAST })
  const pusher = client.pusher()
  const events = pusher.events()
  await pusher.connect(first.address)
  await server.close()
  await until(events, 'retrying', ['connected', 'lost'])
  const opening = (async () => {
    const transfer = await pusher.open() // waits for the redial: every slot is down
    await transfer.write('during')
    await transfer.finish()
  })()
  const second = runtime(ctx)
  const puller = (await second.bind(bind)).puller('/jobs')
  assert.equal((await puller.recv()).body.toString(), 'during')
  await opening
})

onTransports('a_subscriber_hears_the_next_publish_after_its_publisher_restarts_with_every_filter', RESTARTABLE, async (t, ctx) => {
  const bind = bindAddress(t)
  const server = new weida.Runtime()
  const publisher = (await server.bind(bind)).publisher('/feed')
  const client = runtime(ctx, { reconnect: FAST })
  const sub = client.subscriber()
  const events = sub.events()
  await sub.connect(publisher.address)
  await sub.subscribe('a.#')
  assert.equal(publisher.publish('a.1', '1'), 1)
  assert.equal((await sub.recv()).meta.topic, 'a.1')
  await server.close()
  await until(events, 'retrying', ['connected', 'lost'])
  await sub.subscribe('b.#') // during the outage: installed when the redial is up
  const second = runtime(ctx)
  const again = (await second.bind(bind)).publisher('/feed')
  await until(events, 'connected', ['retrying'])
  assert.equal(again.publish('b.2', '2'), 1)
  assert.equal(again.publish('a.3', '3'), 1)
  assert.equal((await sub.recv()).meta.topic, 'b.2')
  assert.equal((await sub.recv()).meta.topic, 'a.3')
})

onTransports('a_redial_to_a_listener_that_no_longer_serves_the_path_gives_up_with_unknown_endpoint', RESTARTABLE, async (t, ctx) => {
  const bind = bindAddress(t)
  const server = new weida.Runtime()
  const first = (await server.bind(bind)).puller('/jobs') // kept: a dropped endpoint unbinds
  const client = runtime(ctx, { reconnect: { ...FAST, giveUpAfterMs: 1000 } })
  const pusher = client.pusher()
  const events = pusher.events()
  await pusher.connect(first.address)
  await server.close()
  await until(events, 'lost', ['connected'])
  const second = runtime(ctx)
  const other = (await second.bind(bind)).puller('/other') // back, without /jobs
  const gaveUp = /** @type {any} */ (await until(events, 'gave_up', ['retrying']))
  assert.deepEqual([gaveUp.url, gaveUp.cause], [first.address, 'unknown_endpoint'])
  await assert.rejects(pusher.send('gone'), weida.ConnectionLost)
  assert.ok(other.address.endsWith('/other'))
})

test('a_lagging_event_reader_is_told_how_many_it_missed', { timeout: TIMEOUT }, async (ctx) => {
  const server = new weida.Runtime()
  const first = (await server.bind(bindAddress('unix'))).puller('/jobs') // kept: a dropped endpoint unbinds
  const client = runtime(ctx, { reconnect: { initialMs: 1, maxMs: 1, jitter: false } })
  const pusher = client.pusher()
  const keepingUp = pusher.events()
  const lagging = pusher.events()
  await pusher.connect(first.address)
  await server.close()
  // A missing socket is refused at once: a retry every millisecond (this reader may fall
  // behind too on a loaded machine: it is told so, and reads on).
  for (let i = 0; i < 100; i++) await until(keepingUp, 'retrying', ['connected', 'lost', 'missed'])
  const missed = /** @type {any} */ (await lagging.next())
  assert.equal(missed.kind, 'missed')
  assert.ok(missed.missed >= 36, String(missed.missed))
})

test('a_reconnect_policy_is_checked_and_named', { timeout: TIMEOUT }, () => {
  assert.throws(
    () => new weida.Runtime({ reconnect: { giveUpAfterAttempts: 1, giveUpAfterMs: 1 } }),
    (e) => e instanceof weida.InvalidConfig && /giveUpAfterAttempts/.test(String(e)),
  )
  assert.throws(
    () => new weida.Runtime({ reconnect: { initialMs: -1 } }),
    (e) => e instanceof weida.InvalidConfig && /initialMs/.test(String(e)),
  )
})
