// @ts-check
// Every error code: each core ErrorCode reaches JS as its own class under WeidaError, with a
// stable `code`, `definite`, and its fields (docs/BINDINGS.md, "Errors"; mapped once in
// src/error.rs).

import assert from 'node:assert/strict'
import dgram from 'node:dgram'
import { test } from 'node:test'
import * as weida from 'weida'
import { bindAddress, deferred, keep, pair, rejection, runtime, serve, TIMEOUT } from './helpers.mjs'

const { Runtime, WeidaError, errorClasses, withPath, withPin } = weida

/**
 * An error that `code` must produce, made by `make`.
 * @typedef {{ code: weida.WeidaErrorCode, make: (ctx: import('node:test').TestContext) => Promise<unknown>, check?: (e: any) => void }} Case
 */

/**
 * A requester connected to a replier at `path` whose exchanges `answer` handles.
 * @param {import('node:test').TestContext} ctx
 * @param {(ex: weida.Exchange) => Promise<void>} answer
 */
async function answered(ctx, answer) {
  const { listener, client } = await pair('inproc', ctx)
  const replier = listener.replier('/x')
  serve(ctx, async () => {
    for await (const ex of replier) await answer(ex)
  })
  const req = client.requester()
  await req.connect(replier.address)
  return req
}

/** @type {Case[]} */
const cases = [
  { code: 'ERR_WEIDA_NOT_CONNECTED', make: async (ctx) => rejection(runtime(ctx).pusher().send('x')) },
  {
    code: 'ERR_WEIDA_CONNECTION_LOST',
    make: async (ctx) => {
      const { server, listener, client } = await pair('inproc', ctx)
      const replier = listener.replier('/x')
      const req = client.requester()
      await req.connect(replier.address)
      const [body, reply] = await req.open()
      await body.write('part')
      await replier.accept()
      server.shutdown()
      return rejection(reply.body())
    },
    check: (e) => assert.ok(['peer_closed', 'reset', 'locally_closed'].includes(e.lossCause), e.lossCause),
  },
  {
    code: 'ERR_WEIDA_INDETERMINATE',
    make: async (ctx) => {
      const { server, listener, client } = await pair('inproc', ctx)
      const replier = listener.replier('/x')
      /** @type {{ promise: Promise<void>, resolve: (v: void) => void }} */
      const taken = deferred()
      serve(ctx, async () => {
        const ex = await replier.accept()
        await ex.takeBody()
        taken.resolve()
      })
      const req = client.requester()
      await req.connect(replier.address)
      const pending = rejection(req.request('q'))
      await taken.promise
      server.shutdown()
      return pending
    },
    check: (e) => {
      assert.equal(e.definite, false)
      assert.equal(typeof e.lossCause, 'string')
    },
  },
  {
    code: 'ERR_WEIDA_UNTRUSTED',
    make: async (ctx) => {
      const server = runtime(ctx)
      const listener = await server.bind('weida://127.0.0.1:0')
      // Held to the end: a listener the garbage collector takes closes, and the dial would
      // then time out instead of meeting the wrong key.
      keep(ctx, listener)
      keep(ctx, listener.acceptor('/a'))
      const other = weida.Identity.ephemeral().fingerprint
      return rejection(runtime(ctx).peer().connect(withPath(withPin(listener.address, other), '/a')))
    },
    check: (e) => {
      assert.match(e.fingerprint, /^sha256:[0-9a-f]{64}$/)
      assert.match(e.expected, /^sha256:[0-9a-f]{64}$/)
    },
  },
  {
    code: 'ERR_WEIDA_UNKNOWN_ENDPOINT',
    make: async (ctx) => {
      const { listener, client } = await pair('inproc', ctx)
      // The path check refuses the connect itself (PROTOCOL §3.1.5).
      return rejection(client.requester().connect(withPath(listener.address, '/nowhere')))
    },
    check: (e) => assert.equal(e.path, '/nowhere'),
  },
  { code: 'ERR_WEIDA_UNSUPPORTED', make: async (ctx) => rejection(runtime(ctx).bind('weida+pipe://name')) },
  {
    code: 'ERR_WEIDA_REJECTED',
    make: async (ctx) => rejection((await answered(ctx, (ex) => ex.reject('no'))).request('x')),
  },
  {
    code: 'ERR_WEIDA_CANCELED',
    make: async (ctx) => rejection((await answered(ctx, async (ex) => ex.cancel())).request('x')),
  },
  {
    code: 'ERR_WEIDA_LIMIT_EXCEEDED',
    make: async (ctx) => {
      const { listener, client } = await pair('inproc', ctx)
      const puller = listener.puller('/jobs')
      keep(ctx, puller)
      const pusher = client.pusher()
      await pusher.connect(puller.address)
      return rejection(pusher.send('x', { blob: 'x'.repeat(20_000) }))
    },
  },
  {
    code: 'ERR_WEIDA_TIMEOUT',
    make: async (ctx) => {
      const limits = { maxConcurrentUniStreams: 1, maxLocalStreams: 1 }
      const server = runtime(ctx, { limits })
      const listener = await server.bind(bindAddress('inproc'))
      const puller = listener.puller('/jobs')
      keep(ctx, puller)
      // A stream per message: the stream slot is what runs out.
      // Long enough that the first send, which has a slot, never meets it on a loaded machine.
      const pusher = runtime(ctx, { limits, sendTimeoutMs: 500, laneMaxMessage: 0 }).pusher()
      await pusher.connect(puller.address)
      await pusher.send('holds the only slot')
      return rejection(pusher.send('waits'))
    },
  },
  { code: 'ERR_WEIDA_INVALID_ADDRESS', make: async (ctx) => rejection(runtime(ctx).pusher().connect('http://nope')) },
  {
    code: 'ERR_WEIDA_NEGOTIATION_FAILED',
    make: async (ctx) => rejection((await answered(ctx, (ex) => ex.fail('NEGOTIATION_FAILED', 'no common set'))).request('x')),
  },
  {
    code: 'ERR_WEIDA_PROTOCOL',
    make: async (ctx) => rejection((await answered(ctx, (ex) => ex.fail('ERR_WEIDA_PROTOCOL', 'bad bytes'))).request('x')),
  },
  {
    code: 'ERR_WEIDA_INVALID_CONFIG',
    make: async () => {
      try {
        new Runtime({ limits: { endpointQueue: 0 } })
      } catch (e) {
        return e
      }
      throw new Error('no error')
    },
  },
  {
    code: 'ERR_WEIDA_INVALID_FILTER',
    make: async (ctx) => rejection(runtime(ctx).subscriber().subscribe('a..b')),
  },
  {
    code: 'ERR_WEIDA_CLOSED',
    make: async (ctx) => {
      const { listener } = await pair('inproc', ctx)
      const puller = listener.puller('/jobs')
      puller.close()
      return rejection(puller.recv())
    },
  },
  {
    code: 'ERR_WEIDA_UNREACHABLE',
    make: async (ctx) => rejection(runtime(ctx).pusher().connect(`${bindAddress('inproc')}/jobs`)),
  },
  {
    code: 'ERR_WEIDA_IO',
    make: async (ctx) => {
      const rt = runtime(ctx)
      const taken = await rt.bind('weida://127.0.0.1:0')
      const port = /:(\d+)$/.exec(taken.address)?.[1]
      return rejection(rt.bind(`weida://127.0.0.1:${port}`))
    },
  },
]

test('every_error_code_has_its_class_and_fields', { timeout: TIMEOUT }, async (ctx) => {
  assert.deepEqual(cases.map((c) => c.code).sort(), Object.keys(errorClasses).sort())
  for (const c of cases) {
    await ctx.test(c.code, async (sub) => {
      const e = /** @type {any} */ (await c.make(sub))
      const cls = errorClasses[c.code]
      assert.ok(e instanceof cls, `${c.code}: ${e}`)
      assert.ok(e instanceof WeidaError)
      assert.ok(e instanceof Error)
      assert.equal(e.code, c.code)
      assert.equal(e.name, cls.name)
      assert.equal(e.definite, c.code !== 'ERR_WEIDA_INDETERMINATE')
      assert.equal(typeof e.message, 'string')
      assert.ok(e.message.length > 0)
      assert.equal(typeof e.stack, 'string')
      c.check?.(e)
    })
  }
})

test('indeterminate_is_not_a_definite_failure_class', () => {
  // Python keeps Indeterminate apart from the definite failures; here every class is a sibling
  // under WeidaError, and `definite` tells them apart.
  assert.ok(!(weida.Indeterminate.prototype instanceof weida.ConnectionLost))
  assert.ok(weida.Indeterminate.prototype instanceof WeidaError)
})

test('an_unknown_error_code_cannot_be_answered', { timeout: TIMEOUT }, async (ctx) => {
  const { listener, client } = await pair('inproc', ctx)
  const replier = listener.replier('/x')
  const req = client.requester()
  await req.connect(replier.address)
  const asking = rejection(req.request('x'))
  const ex = await replier.accept()
  await assert.rejects(ex.fail('NOT_A_CODE', 'x'), weida.InvalidConfig)
  ex.cancel()
  assert.ok((await asking) instanceof weida.Canceled)
})

// The fields each code's error carries, in every language (python/tests/test_errors.py has the
// same table in snake_case): weida-ffi sets them from the core's `Error::fields`.
const FIELDS = {
  ERR_WEIDA_CONNECTION_LOST: ['lossCause'],
  ERR_WEIDA_INDETERMINATE: ['lossCause'],
  ERR_WEIDA_UNTRUSTED: ['fingerprint', 'expected'],
  ERR_WEIDA_UNKNOWN_ENDPOINT: ['path'],
  ERR_WEIDA_UNSUPPORTED: ['reason'],
  ERR_WEIDA_REJECTED: ['reason'],
  ERR_WEIDA_LIMIT_EXCEEDED: ['limit', 'detail'],
  ERR_WEIDA_INVALID_ADDRESS: ['part', 'reason'],
  ERR_WEIDA_INVALID_FILTER: ['what', 'text', 'reason'],
  ERR_WEIDA_IO: ['errno'],
  ERR_WEIDA_TIMEOUT: ['lossCause'],
  ERR_WEIDA_UNREACHABLE: ['address', 'why'],
}

/** The fields an error carries: its own properties beyond what every error has. @param {any} e */
const fields = (e) =>
  Object.keys(e)
    .filter((k) => !['code', 'definite', 'name', 'message', 'stack'].includes(k))
    .sort()

test('the_loss_cause_is_named_by_the_core', { timeout: TIMEOUT }, async (ctx) => {
  // The core names every cause (there is no binding's own "unknown" name): these five.
  assert.deepEqual(weida.lossCauses(), ['idle_timeout', 'peer_closed', 'locally_closed', 'reset', 'transport_error', 'peer_changed', 'dial_failed', 'unknown_endpoint'])
  const { server, listener, client } = await pair('inproc', ctx)
  const replier = listener.replier('/x')
  const req = client.requester()
  await req.connect(replier.address)
  const [body, reply] = await req.open()
  await body.write('part')
  const held = await replier.accept() // unanswered but alive: its loss is the connection's
  server.shutdown()
  const e = /** @type {any} */ (await rejection(reply.body()))
  assert.ok(e instanceof weida.ConnectionLost, String(e))
  assert.ok(weida.lossCauses().includes(e.lossCause), e.lossCause)
  // `cause` stays the standard Error.cause: the loss cause is not there.
  assert.equal(e.cause, undefined)
  assert.deepEqual(fields(e), ['lossCause'])
  held.cancel()
})

test('errors_carry_their_fields_by_the_same_names_everywhere', { timeout: TIMEOUT }, async (ctx) => {
  const rt = runtime(ctx)
  /** @param {unknown} e @param {weida.WeidaErrorCode} code */
  const check = (e, code) => {
    const err = /** @type {any} */ (e)
    assert.equal(err.code, code, String(e))
    assert.deepEqual(fields(err), [...(/** @type {Record<string, string[]>} */ (FIELDS)[code] ?? [])].sort(), code)
    return err
  }
  assert.equal(check(await rejection(rt.bind('weida://127.0.0.1:0/path')), 'ERR_WEIDA_INVALID_ADDRESS').part, 'path')
  const f = check(await rejection(rt.subscriber().subscribe('a..b')), 'ERR_WEIDA_INVALID_FILTER')
  assert.deepEqual([f.what, f.text], ['filter', 'a..b'])
  const taken = await rt.bind('weida://127.0.0.1:0')
  const port = /:(\d+)$/.exec(taken.address)?.[1]
  assert.equal(typeof check(await rejection(rt.bind(`weida://127.0.0.1:${port}`)), 'ERR_WEIDA_IO').errno, 'number')
  const listener = await rt.bind(bindAddress('inproc'))
  const replier = listener.replier('/x')
  const req = rt.requester()
  await req.connect(replier.address)
  const asking = rejection(req.request('q'))
  await (await replier.accept()).reject('not today')
  assert.equal(check(await asking, 'ERR_WEIDA_REJECTED').reason, 'not today')
  const big = check(await rejection(req.request('x', { blob: 'x'.repeat(20_000) })), 'ERR_WEIDA_LIMIT_EXCEEDED')
  assert.equal(big.limit, 'max_header_size')
})

test('fail_closed_is_going_away_on_the_wire', { timeout: TIMEOUT }, async (ctx) => {
  const { listener, client } = await pair('inproc', ctx)
  const replier = listener.replier('/x')
  const req = client.requester()
  await req.connect(replier.address)
  /** @param {string} code */
  const answered = async (code) => {
    const asking = rejection(req.request('q'))
    await (await replier.accept()).fail(code, 'said so')
    return /** @type {any} */ (await asking)
  }
  // CLOSED goes as GOING_AWAY: the requester's connection is going away.
  const closed = await answered('CLOSED')
  assert.ok(closed instanceof weida.ConnectionLost, String(closed))
  assert.equal(closed.lossCause, 'peer_closed')
  // A code with no wire code of its own goes as INTERNAL_ERROR, read as Rejected with the message.
  const timeout = await answered('ERR_WEIDA_TIMEOUT')
  assert.ok(timeout instanceof weida.Rejected, String(timeout))
  assert.equal(timeout.reason, 'said so')
  const unsupported = await answered('UNSUPPORTED')
  assert.ok(unsupported instanceof weida.Unsupported, String(unsupported))
  assert.equal(unsupported.reason, 'said so')
})

test('every_error_carries_a_code', { timeout: TIMEOUT }, async (ctx) => {
  // The binding's own failures too: an abort, a FanOut used while a write holds it, a bad
  // argument the addon refuses.
  const { listener, client } = await pair('inproc', ctx)
  const publisher = listener.publisher('/feed')
  const sub = client.subscriber()
  await sub.connect(publisher.address)
  await sub.subscribe('t')
  const ac = new AbortController()
  const pending = rejection(sub.recv({ signal: ac.signal }))
  ac.abort()
  assert.equal(/** @type {any} */ (await pending).code, 'ABORT_ERR')
  assert.equal(/** @type {any} */ (await rejection(sub.recvMany(-1))).code, 'ERR_WEIDA_INVALID_CONFIG')
  assert.throws(() => new Runtime({ limits: { endpointQueue: -1 } }), { code: 'ERR_WEIDA_INVALID_CONFIG' })
})

test('a_dial_nobody_answers_is_unreachable_naming_the_address', { timeout: TIMEOUT }, async (ctx) => {
  // Over QUIC a port where a socket reads nothing is reported at connectTimeoutMs; a name with
  // nothing bound is refused at once. Both name where the dial went.
  const rt = runtime(ctx, { limits: { connectTimeoutMs: 300 } })
  const blackHole = dgram.createSocket('udp4')
  await new Promise((resolve) => blackHole.bind(0, '127.0.0.1', () => resolve(undefined)))
  ctx.after(() => blackHole.close())
  const at = `127.0.0.1:${blackHole.address().port}`
  const e = /** @type {any} */ (await rejection(rt.pusher().connect(`weida://${at}/jobs`)))
  assert.ok(e instanceof weida.Unreachable, String(e))
  assert.deepEqual([e.address, e.why], [at, 'no_answer'])
  assert.ok(e.message.includes(`no weida listener answered at ${at} within 300 ms (connect_timeout)`), e.message)
  const r = /** @type {any} */ (await rejection(rt.requester().connect(`${bindAddress('inproc')}/x`)))
  assert.ok(r instanceof weida.Unreachable && r.why === 'refused', String(r))
  assert.ok(r.message.startsWith('unreachable: nothing listens at in-process name'), r.message)
})
