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

// The outbox. A redial goes live only once the path is bound again (the path check), so a
// restart's bind and its endpoint's registration may be separate steps, as here.

/**
 * A pusher whose only server is down (its redial is retrying), and the way to bring the
 * server back at the same address.
 * @param {import('node:test').TestContext} ctx @param {weida.Runtime} client
 * @param {import('weida').EndpointOptions} [options]
 */
async function outage(ctx, client, options, t = /** @type {import('./helpers.mjs').Transport} */ ('unix')) {
  const bind = bindAddress(t)
  const server = new weida.Runtime()
  const first = (await server.bind(bind)).puller('/jobs') // kept: a dropped endpoint unbinds
  const pusher = client.pusher(options)
  const events = pusher.events()
  await pusher.connect(first.address)
  await server.close()
  await until(events, 'retrying', ['connected', 'lost'])
  const restart = async () => (await runtime(ctx).bind(bind)).puller('/jobs')
  return { pusher, events, restart, first }
}

/** @param {weida.Puller} puller @param {number} n */
async function bodies(puller, n) {
  const got = []
  for (let i = 0; i < n; i++) got.push((await puller.recv()).body.toString())
  return got
}

onTransports('a_hundred_sends_during_an_outage_arrive_in_order_after_it', RESTARTABLE, async (t, ctx) => {
  const client = runtime(ctx, { reconnect: FAST })
  const o = await outage(ctx, client, undefined, t)
  const sent = Array.from({ length: 100 }, (_, i) => `m${String(i).padStart(3, '0')}`)
  for (const m of sent) await o.pusher.send(m) // resolves at once: the body is the outbox's
  let c = client.counters()
  assert.deepEqual([c.outboxQueued, c.outboxWritten], [100n, 0n])
  const puller = await o.restart()
  assert.deepEqual(await bodies(puller, 100), sent) // in order: one lane carries them
  await o.pusher.send('after')
  assert.deepEqual(await bodies(puller, 1), ['after'])
  c = client.counters()
  assert.deepEqual([c.outboxWritten, c.outboxAbandoned], [100n, 0n])
})

test('the_fourth_send_at_a_bound_of_three_blocks_until_the_drain_starts', { timeout: TIMEOUT }, async (ctx) => {
  const client = runtime(ctx, { reconnect: FAST })
  const o = await outage(ctx, client, { outboxMessages: 3 })
  for (let i = 0; i < 3; i++) await o.pusher.send(`m${i}`)
  let returned = false
  const fourth = o.pusher.send('m3').then(() => { returned = true })
  // Full and no peer: it waits (the core's test shows it pending deterministically).
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal(returned, false)
  const puller = await o.restart()
  await fourth
  assert.deepEqual(await bodies(puller, 4), ['m0', 'm1', 'm2', 'm3'])
})

test('a_drop_outbox_counts_what_it_discarded', { timeout: TIMEOUT }, async (ctx) => {
  const client = runtime(ctx, { reconnect: FAST })
  const o = await outage(ctx, client, { outboxMessages: 3, outboxFull: 'drop' })
  for (let i = 0; i < 5; i++) await o.pusher.send(`m${i}`)
  const c = client.counters()
  assert.deepEqual([c.outboxQueued, c.outboxDropped], [3n, 2n])
  const puller = await o.restart()
  assert.deepEqual(await bodies(puller, 3), ['m0', 'm1', 'm2'])
})

test('a_reject_outbox_and_a_body_larger_than_the_outbox_fail_by_name', { timeout: TIMEOUT }, async (ctx) => {
  const client = runtime(ctx, { reconnect: FAST })
  const o = await outage(ctx, client, { outboxMessages: 2, outboxBytes: 1024, outboxFull: 'reject' })
  await o.pusher.send('m0')
  await o.pusher.send('m1')
  await assert.rejects(o.pusher.send('m2'), (e) => e instanceof weida.LimitExceeded && e.limit === 'outbox_messages')
  await assert.rejects(
    o.pusher.send(Buffer.alloc(2048)),
    (e) => e instanceof weida.LimitExceeded && e.limit === 'outbox_bytes' && /outboxBytes|outbox_bytes/.test(String(e)),
  )
  assert.throws(
    // @ts-expect-error: not one of the three
    () => client.pusher({ outboxFull: 'sometimes' }),
    (e) => e instanceof weida.InvalidConfig && /outboxFull/.test(String(e)),
  )
})

test('a_body_written_before_the_restart_arrives_once', { timeout: TIMEOUT }, async (ctx) => {
  const bind = bindAddress('unix')
  const server = new weida.Runtime()
  const first = (await server.bind(bind)).puller('/jobs')
  const client = runtime(ctx, { reconnect: FAST })
  const pusher = client.pusher()
  const events = pusher.events()
  await pusher.connect(first.address)
  const before = Array.from({ length: 10 }, (_, i) => `m${i}`)
  for (const m of before) await pusher.send(m)
  assert.deepEqual(await bodies(first, 10), before)
  await server.close()
  await until(events, 'retrying', ['connected', 'lost'])
  const puller = (await runtime(ctx).bind(bind)).puller('/jobs')
  await until(events, 'connected', ['retrying'])
  const after = Array.from({ length: 10 }, (_, i) => `m${i + 10}`)
  for (const m of after) await pusher.send(m)
  // The new server hears what was sent after the restart, and nothing before it.
  assert.deepEqual(await bodies(puller, 10), after)
  assert.equal(client.counters().outboxQueued, 0n)
})

onTransports('connect_before_bind_delivers_once_the_listener_appears', RESTARTABLE, async (t, ctx) => {
  const bind = bindAddress(t)
  const address = weida.withPath(bind, '/jobs')
  const client = runtime(ctx, { reconnect: FAST })
  const pusher = client.pusher()
  const events = pusher.events()
  await assert.rejects(pusher.connect(address), weida.Unreachable) // waits for the first dial
  await pusher.connect(address, { wait: false }) // recorded; dialled in the background
  assert.equal(pusher.peerCount, 0)
  await pusher.send('early')
  const puller = (await runtime(ctx).bind(bind)).puller('/jobs')
  const e = await until(events, 'connected', ['retrying'])
  assert.equal(e.url, address)
  assert.deepEqual(await bodies(puller, 1), ['early'])
  assert.equal(pusher.peerCount, 1)
})

test('a_drain_writes_out_the_outbox_first', { timeout: TIMEOUT }, async (ctx) => {
  const bind = bindAddress('unix')
  const client = new weida.Runtime({ reconnect: FAST })
  const pusher = client.pusher()
  await pusher.connect(weida.withPath(bind, '/jobs'), { wait: false })
  await pusher.send('early') // nothing is bound yet: the outbox's
  const nowhere = client.pusher()
  await nowhere.connect(weida.withPath(bindAddress('unix'), '/jobs'), { wait: false })
  await nowhere.send('never')
  const puller = (await runtime(ctx).bind(bind)).puller('/jobs')
  const drained = await client.drain(1500)
  assert.equal(drained.unsent, 1n)
  const c = client.counters()
  assert.deepEqual([c.outboxWritten, c.outboxAbandoned], [1n, 1n])
  assert.deepEqual(await bodies(puller, 1), ['early'])
  await assert.rejects(pusher.send('late'), weida.Closed)
})

test('a_subscriber_connected_before_its_publisher_binds_hears_it_with_its_filters', { timeout: TIMEOUT }, async (ctx) => {
  const bind = bindAddress('unix')
  const client = runtime(ctx, { reconnect: FAST })
  const sub = client.subscriber()
  const events = sub.events()
  await sub.connect(weida.withPath(bind, '/feed'), { wait: false })
  await sub.subscribe('a.#') // held, and installed before the slot counts as live
  assert.equal(sub.peerCount, 0)
  const publisher = (await runtime(ctx).bind(bind)).publisher('/feed')
  await until(events, 'connected', ['retrying'])
  assert.equal(publisher.publish('b.0', '0'), 0)
  assert.equal(publisher.publish('a.1', '1'), 1)
  assert.equal((await sub.recv()).meta.topic, 'a.1')
  assert.equal(sub.peerCount, 1)
})

onTransports('open_waits_for_a_redial_at_most_send_timeout', RESTARTABLE, async (t, ctx) => {
  const server = new weida.Runtime()
  const first = (await server.bind(bindAddress(t))).puller('/jobs') // kept: a dropped endpoint unbinds
  const client = runtime(ctx, { reconnect: FAST })
  const pusher = client.pusher({ sendTimeoutMs: 200 })
  const events = pusher.events()
  await pusher.connect(first.address)
  await server.close()
  await until(events, 'lost', ['connected'])
  // It says what it waited out: the last loss of the endpoint's connections.
  await assert.rejects(pusher.open(), (e) => e instanceof weida.Timeout && e.lossCause !== null)
  await assert.rejects(client.pusher().open(), weida.NotConnected) // never connected: told so at once
})

// A drain's GOAWAY has the listener close the connection, which the dialler sees as the peer's
// close; that loss is the drain's doing, so the slot gives up with no retry.
onTransports('a_drained_runtime_does_not_redial', ['quic', 'unix', 'inproc'], async (t, ctx) => {
  const server = runtime(ctx)
  const puller = (await server.bind(bindAddress(t))).puller('/jobs')
  const client = runtime(ctx, { reconnect: FAST })
  const pusher = client.pusher()
  const events = pusher.events()
  await pusher.connect(puller.address)
  await pusher.send('one')
  assert.equal((await puller.recv()).body.toString(), 'one')
  await client.drain(5000)
  const gaveUp = /** @type {any} */ (await until(events, 'gave_up', ['connected', 'lost']))
  assert.equal(gaveUp.cause, 'locally_closed')
  assert.equal(pusher.peerCount, 0)
})
