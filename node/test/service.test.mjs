// @ts-check
// The handler runtime from Node (docs/SERVICES.md; core/tests/service.rs holds every row of seed
// 002's tables): handlers returning Promises, outcomes returned or thrown, the attempt header,
// the limit and the dead letter, a registration without an address refused, concurrency, stop.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { AbortError, Closed, InvalidConfig, Rejected, Service, Unsupported, ack, drop, retry, retryAfter } from 'weida'
import { bindAddress, deferred, metaGet, native, onEveryTransport, rejection, runtime } from './helpers.mjs'

test('ack_and_drop_throw_unsupported_and_count_as_processed_and_dropped', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const reg = await new Service(rt).queue(listener, '/jobs')
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  for (const body of ['a', 'b', 'c']) await pusher.send(body)
  for (const outcome of [ack(), drop(), undefined]) {
    const job = await reg.next()
    assert.throws(() => job.ack(), Unsupported)
    assert.throws(() => job.discard(), Unsupported)
    job.finish(outcome)
    assert.throws(() => job.finish(undefined), Closed) // an outcome is given once
  }
  const c = reg.counters()
  assert.deepEqual([c.handled, c.dropped, c.retried, c.inFlight], [2n, 1n, 0n, 0n])
})

onEveryTransport('retry_with_max_attempts_copies_until_the_limit_then_dead_letters', async (t, ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind(bindAddress(t))
  const dead = listener.puller('/dead')
  const reg = await new Service(rt).queue(listener, '/jobs', { maxAttempts: 3, deadLetter: dead.address })
  /** @type {[string, number][]} */
  const seen = []
  const served = reg.serve(async (job) => {
    seen.push([job.message.body.toString(), job.attempt])
    throw retry()
  })
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  await pusher.send('job', { trace: 't-1' })
  const letter = await dead.recv()
  assert.equal(letter.body.toString(), 'job')
  assert.equal(metaGet(letter.meta, 'trace')?.toString(), 't-1')
  assert.equal(metaGet(letter.meta, 'weida-attempt')?.toString(), '3')
  assert.deepEqual(seen, [['job', 1], ['job', 2], ['job', 3]])
  assert.deepEqual(await reg.stop(5), { unfinished: 0n, copiesDropped: 0n })
  await served
  const c = reg.counters()
  assert.deepEqual([c.retried, c.deadLettered, c.handled], [2n, 1n, 0n])
})

test('each_kind_of_registration_sends_its_copies_where_it_should', async (ctx) => {
  const server = runtime(ctx)
  const client = runtime(ctx)
  const listener = await server.bind('weida://127.0.0.1:0')
  const retries = listener.puller('/retries')
  const service = new Service(client)
  // A bound fan-out: its copy comes back to its own path alone, under its topic.
  const fan = await new Service(server).fanOut(listener, '/events', ['orders.#'], { maxAttempts: 2 })
  const publisher = client.publisher()
  await publisher.connect(fan.address ?? '')
  assert.equal(publisher.publish('orders.new', 'o1'), 1)
  const first = await fan.next()
  assert.deepEqual([first.attempt, first.message.meta.topic], [1, 'orders.new'])
  first.finish(retry())
  const again = await fan.next()
  assert.deepEqual([again.message.body.toString(), again.attempt, again.message.meta.topic], ['o1', 2, 'orders.new'])
  again.finish(undefined)
  // A puller dialling a bound pusher: its copy goes to retryTo.
  const work = listener.pusher('/work')
  const pulling = await service.pulling(work.address, { retryTo: retries.address })
  await work.send('w1')
  ;(await pulling.next()).finish(retryAfter(0))
  let copy = await retries.recv()
  assert.deepEqual([copy.body.toString(), metaGet(copy.meta, 'weida-attempt')?.toString()], ['w1', '2'])
  // A subscriber dialling a bound publisher: what its filters hold, copied to retryTo with its
  // topic in a header.
  const events = listener.publisher('/feed')
  const subscribing = await service.subscribing(events.address, ['orders.#'], { retryTo: retries.address, maxAttempts: 3 })
  assert.equal(events.subscriberCount, 1)
  assert.equal(events.publish('billing.paid', 'b1'), 0)
  assert.equal(events.publish('orders.paid', 'o2'), 1)
  const job = await subscribing.next()
  assert.deepEqual([job.message.body.toString(), job.message.meta.topic], ['o2', 'orders.paid'])
  job.finish(retry())
  copy = await retries.recv()
  assert.deepEqual(
    ['weida-attempt', 'weida-topic'].map((h) => metaGet(copy.meta, h)?.toString()),
    ['2', 'orders.paid'],
  )
  assert.deepEqual([pulling.address, subscribing.address], [null, null])
  await assert.rejects(service.subscribing(events.address, ['orders.#']), InvalidConfig) // no retryTo
})

test('a_next_cancelled_as_its_job_arrives_loses_nothing', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const reg = await new Service(rt).queue(listener, '/jobs')
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  for (let i = 0; i < 10; i++) {
    const ac = new AbortController()
    const pending = reg.next({ signal: ac.signal })
    const [fetched, orphans] = [native._fetched(), native._orphans()]
    // Not awaited: the JS thread must not run its loop before the abort.
    const sent = pusher.send(String(i))
    // Held until the I/O thread has taken the job for the pending next: the abort lands
    // before its promise can settle here, so the binding hands the job back.
    assert.ok(native._waitFetched(fetched + 1, 10_000), 'the job never arrived')
    ac.abort()
    const rejected = rejection(pending)
    await sent
    assert.ok((await rejected) instanceof AbortError)
    const job = await reg.next({ signal: AbortSignal.timeout(5_000) })
    assert.deepEqual([job.message.body.toString(), job.attempt], [String(i), 1])
    job.finish(undefined)
    assert.equal(native._orphans(), orphans + 1, 'the job came back: the race ran')
  }
  const c = reg.counters()
  assert.deepEqual([c.handled, c.failed, c.dropped, c.inFlight], [10n, 0n, 0n, 0n])
})

test('retry_without_a_limit_redelivers_nothing_and_a_failure_is_counted', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const reg = await new Service(rt).queue(listener, '/jobs')
  /** @type {string[]} */
  const calls = []
  const last = deferred()
  /** @type {string[]} */
  const warnings = []
  const served = reg.serve(
    async (job) => {
      const body = job.message.body.toString()
      calls.push(body)
      if (body === 'fail') throw new Error('no disk')
      if (body === 'last') last.resolve(undefined)
      return body === 'again' ? retry() : undefined
    },
    { onWarning: (w) => warnings.push(w) },
  )
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  for (const body of ['again', 'fail', 'last']) await pusher.send(body)
  await last.promise
  await reg.stop(5) // waits for the last handler, in flight
  await served
  assert.deepEqual(calls, ['again', 'fail', 'last'])
  // The failure reaches onWarning with its path and reason.
  assert.equal(warnings.length, 1, String(warnings))
  assert.match(warnings[0], /path=\/jobs .*reason=Error: no disk/)
  const c = reg.counters()
  assert.deepEqual([c.handled, c.dropped, c.failed, c.retried], [1n, 2n, 1n, 0n])
})

test('a_refused_outcome_is_a_failure_and_serve_goes_on', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const reg = await new Service(rt).queue(listener, '/jobs', { maxAttempts: 2 })
  const retried = deferred()
  const last = deferred()
  /** @type {string[]} */
  const warnings = []
  const served = reg.serve(
    async (job) => {
      if (job.message.body.toString() === 'last') last.resolve(undefined)
      else if (job.attempt === 2) retried.resolve(undefined)
      else return retryAfter(-1) // refused by the core: a failure, retried as declared
    },
    { onWarning: (w) => warnings.push(w) },
  )
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  await pusher.send('refused')
  await retried.promise
  await pusher.send('last')
  await last.promise
  await reg.stop(5)
  await served
  assert.equal(warnings.length, 1, String(warnings))
  assert.match(warnings[0], /path=\/jobs .*reason=the outcome was refused/)
  const c = reg.counters()
  assert.deepEqual([c.failed, c.retried, c.handled, c.inFlight], [1n, 1n, 2n, 0n])
})

test('a_job_the_handler_finished_itself_is_not_finished_twice', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const reg = await new Service(rt).queue(listener, '/jobs')
  const last = deferred()
  /** @type {string[]} */
  const warnings = []
  const served = reg.serve(
    async (job) => {
      if (job.message.body.toString() === 'last') last.resolve(undefined)
      else job.finish(undefined) // the pull API; serve then leaves the job as it is
    },
    { onWarning: (w) => warnings.push(w) },
  )
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  for (const body of ['first', 'last']) await pusher.send(body)
  await last.promise
  await reg.stop(5)
  await served
  assert.deepEqual(warnings, [])
  const c = reg.counters()
  assert.deepEqual([c.handled, c.failed, c.dropped, c.inFlight], [2n, 0n, 0n, 0n])
})

test('retry_after_waits_then_the_copy_is_the_next_attempt', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const reg = await new Service(rt).queue(listener, '/jobs')
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  await pusher.send('later')
  const job = await reg.next()
  const finished = performance.now()
  job.finish(retryAfter(0.2))
  assert.equal(reg.counters().delayed, 1n)
  const copy = await reg.next()
  assert.ok(performance.now() - finished >= 200)
  assert.deepEqual([copy.message.body.toString(), copy.attempt], ['later', 2])
  copy.finish(undefined)
})

test('a_registration_without_an_address_is_refused_at_start', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const service = new Service(rt)
  assert.ok((await rejection(service.replying(listener, '/rpc'))) instanceof InvalidConfig)
  assert.ok((await rejection(service.pulling(`${listener.address}/work`))) instanceof InvalidConfig)
  const own = await rejection(service.queue(listener, '/jobs', { deadLetter: `${listener.address}/jobs` }))
  assert.ok(own instanceof InvalidConfig && /come back/.test(own.message), String(own))
  listener.replier('/rpc') // nothing stayed bound
  listener.puller('/jobs')
})

test('a_rep_handler_replies_with_what_it_resolves_and_a_retry_is_refused', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const retries = listener.puller('/retries')
  const reg = await new Service(rt).replying(listener, '/rpc', { retryTo: retries.address, maxAttempts: 2 })
  const served = reg.serve(async (job) => {
    const body = job.message.body.toString()
    if (body === 'later') throw retryAfter(0)
    if (body === 'drop') return drop()
    return body.toUpperCase()
  })
  const req = rt.requester()
  await req.connect(`${listener.address}/rpc`)
  assert.equal((await req.request('ping')).toString(), 'PING')
  const refused = await rejection(req.request('later'))
  assert.ok(refused instanceof Rejected && /retried/.test(refused.message), String(refused))
  const copy = await retries.recv()
  assert.equal(metaGet(copy.meta, 'weida-attempt')?.toString(), '2')
  const dropped = await rejection(req.request('drop'))
  assert.ok(dropped instanceof Rejected && /dropped/.test(dropped.message), String(dropped))
  await reg.stop(5)
  await served
})

test('concurrency_runs_that_many_handlers_at_once_and_a_stop_waits_for_them', async (ctx) => {
  const rt = runtime(ctx)
  const listener = await rt.bind('weida://127.0.0.1:0')
  const reg = await new Service(rt).queue(listener, '/jobs', { concurrency: 3 })
  let running = 0
  let most = 0
  const gate = deferred()
  const three = deferred()
  const served = reg.serve(async () => {
    running += 1
    most = Math.max(most, running)
    if (running === 3) three.resolve(undefined)
    await gate.promise
    running -= 1
  })
  const pusher = rt.pusher()
  await pusher.connect(reg.address ?? '')
  for (let i = 0; i < 8; i++) await pusher.send(`m${i}`)
  await three.promise
  assert.equal(reg.counters().inFlight, 3n)
  const stopping = reg.stop(30)
  gate.resolve(undefined)
  assert.deepEqual(await stopping, { unfinished: 0n, copiesDropped: 0n })
  await served
  assert.equal(most, 3)
  assert.equal(reg.counters().handled, 3n)
})

test('the_example_service_retries_dead_letters_and_stops_on_sigint', async (ctx) => {
  const example = fileURLToPath(new URL('../dist/examples/jobs_service.js', import.meta.url))
  const child = spawn(process.execPath, [example], { stdio: ['ignore', 'pipe', 'pipe'] })
  ctx.after(() => child.kill('SIGKILL'))
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const line = async () => (await lines.next()).value
  const ready = (await line()).split(' ')
  assert.equal(ready[0], 'READY')
  const rt = runtime(ctx)
  const pusher = rt.pusher()
  await pusher.connect(ready[1])
  for (const body of ['ok', 'flaky', 'poison']) await pusher.send(body)
  const got = new Set([await line(), await line(), await line()])
  assert.deepEqual(got, new Set(['done ok attempt 1', 'done flaky attempt 3', 'dead poison after 5']))
  child.kill('SIGINT')
  assert.equal(await line(), 'stopped unfinished=0 copiesDropped=0')
  const [code] = await once(child, 'exit')
  assert.equal(code, 0)
})
