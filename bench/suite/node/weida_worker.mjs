// @ts-check
// weida's Node binding, worker of the benchmark suite: Push/Pull and Req/Rep over QUIC
// (weida://127.0.0.1), AF_UNIX and in process, a server Runtime and a client Runtime in this
// one Node process (the shape of node/bench/bench.mjs). Needs the package built:
// `cd node && npm ci && npm run build` (bench/suite/setup.sh does it).
//
//   node weida_worker.mjs --pattern push_pull --transport quic --size 64 [--variant await|window|batch]
//
// Variant "await" (the default): the idiomatic loops, `await pusher.send(body)` and
// `for await (const m of puller)`. Variant "window" (Push/Pull only): 64 sends and 64 receives
// in flight, so the binding's cross-thread wakeups overlap. Variant "batch" (Push/Pull only):
// `await pusher.sendMany(bodies)` of 256 and `await puller.recvMany(256)`, as the Python
// worker's "batch".
//
// Pub/Sub: a Publisher on the server runtime, `width` Subscribers on the client runtime, each
// subscribed to everything ("bench.#") and receiving with recvMany (256 a call). `publish`
// never waits, so the publisher publishes flat out, as the other systems' rows do, and yields
// to the event loop every 32 messages so the subscribers run; a subscriber that falls behind
// loses copies, and the rate counts the copies received.
//
// Two processes (--role bind / dial, common.mjs): the bind side has the puller, the replier or
// the publisher on its Runtime; the dial side the pusher(s), the requester or one subscriber.
// The receiver's window opens after its first message.

import { Runtime } from '../../../node/dist/index.js'
import { Meter, Recorder, announce, body, check, gate, now, parse, run, tmpPath, yieldToLoop } from './common.mjs'

const WINDOW = 64
const BATCH = 256

/** @param {string} transport */
const bindAddress = (transport) =>
  transport === 'quic' ? 'weida://127.0.0.1:0' : transport === 'unix' ? `weida+unix://${tmpPath('w.sock')}` : `weida+inproc://suite-${process.pid}`

/**
 * @template T
 * @param {string} transport
 * @param {(listener: import('../../../node/dist/index.js').Listener, client: Runtime) => Promise<T>} f
 */
async function pair(transport, f) {
  const server = new Runtime()
  const client = new Runtime()
  try {
    return await f(await server.bind(bindAddress(transport)), client)
  } finally {
    client.close()
    server.close()
  }
}

/**
 * One end of two processes: the `--role` side of `a.pattern`, on one Runtime.
 * @param {import('./common.mjs').Args} a
 */
async function alone(a) {
  const rt = new Runtime()
  try {
    const data = body(a.size)
    if (a.role === 'bind') {
      const listener = await rt.bind(bindAddress(a.transport))
      if (a.pattern === 'req_rep') {
        const replier = listener.replier('/r')
        announce(replier.address)
        for await (const ex of replier) await ex.reply(await ex.takeBody())
        throw new Error('the replier ended')
      }
      if (a.pattern === 'pub_sub') {
        const publisher = listener.publisher('/feed')
        announce(publisher.address)
        for (let n = 1; ; n++) {
          publisher.publish('bench.tick', data)
          if (n % 32 === 0) await yieldToLoop()
        }
      }
      const puller = listener.puller('/p')
      announce(puller.address)
      /** @type {Meter | undefined} */
      let meter
      const tick = (/** @type {number} */ k) => {
        if (!meter) {
          meter = new Meter(a)
          return false
        }
        return meter.tick(k)
      }
      if (a.variant === 'batch') {
        for (;;) {
          const ms = await puller.recvMany(BATCH)
          for (const m of ms) check(m.body.length, a.size)
          if (tick(ms.length)) break
        }
      } else if (a.variant === 'window') {
        await Promise.all(
          Array.from({ length: WINDOW }, async () => {
            while (!meter?.end) {
              const m = await puller.recv()
              check(m.body.length, a.size)
              tick(1)
            }
          }),
        )
      } else {
        for await (const m of puller) {
          check(m.body.length, a.size)
          if (tick(1)) break
        }
      }
      return /** @type {Meter} */ (meter).result()
    }
    if (a.pattern === 'push_pull') {
      const pusher = rt.pusher()
      await pusher.connect(a.address)
      const lanes = a.variant === 'window' ? WINDOW : 1
      const bodies = Array.from({ length: BATCH }, () => data)
      await Promise.all(
        Array.from({ length: lanes }, async () => {
          for (;;) {
            if (a.variant === 'batch') await pusher.sendMany(bodies)
            else await pusher.send(data)
          }
        }),
      )
    }
    if (a.pattern === 'req_rep') {
      const req = rt.requester()
      await req.connect(a.address)
      const rec = new Recorder(a)
      for (;;) {
        const began = now()
        check((await req.request(data)).length, a.size)
        if (rec.record(began)) return rec.result()
      }
    }
    const s = rt.subscriber()
    await s.connect(a.address)
    await s.subscribe('bench.#')
    await s.recvMany(BATCH)
    await gate()
    const meter = new Meter(a)
    for (;;) {
      const ms = await s.recvMany(BATCH)
      for (const m of ms) check(m.body.length, a.size)
      if (meter.tick(ms.length)) return meter.result(true)
    }
  } finally {
    rt.close()
  }
}

/** @param {import('./common.mjs').Args} a */
function pushPull(a) {
  if (a.role !== 'both') return alone(a)
  return pair(a.transport, async (listener, client) => {
    const puller = listener.puller('/p')
    const pusher = client.pusher()
    await pusher.connect(puller.address)
    const data = body(a.size)
    const meter = new Meter(a)
    let stop = false
    const lanes = a.variant === 'window' ? WINDOW : 1
    // Not awaited at the end: a send waiting for a stream slot the puller no longer frees
    // would never resolve; closing the runtimes ends it.
    for (let i = 0; i < lanes; i++) {
      ;(async () => {
        if (a.variant === 'batch') {
          const bodies = Array.from({ length: BATCH }, () => data)
          while (!stop) await pusher.sendMany(bodies)
        } else {
          while (!stop) await pusher.send(data)
        }
      })().catch(() => {})
    }
    if (a.variant === 'batch') {
      for (;;) {
        const ms = await puller.recvMany(BATCH)
        for (const m of ms) check(m.body.length, a.size)
        if (meter.tick(ms.length)) break
      }
    } else if (a.variant === 'window') {
      await Promise.all(
        Array.from({ length: WINDOW }, async () => {
          while (!meter.end) {
            const m = await puller.recv()
            check(m.body.length, a.size)
            meter.tick()
          }
        }),
      )
    } else {
      for await (const m of puller) {
        check(m.body.length, a.size)
        if (meter.tick()) break
      }
    }
    stop = true
    return meter.result()
  })
}

/** @param {import('./common.mjs').Args} a */
function reqRep(a) {
  if (a.role !== 'both') return alone(a)
  return pair(a.transport, async (listener, client) => {
    const replier = listener.replier('/r')
    const serving = (async () => {
      for await (const ex of replier) await ex.reply(await ex.takeBody())
    })().catch(() => {})
    const req = client.requester()
    await req.connect(replier.address)
    const data = body(a.size)
    const rec = new Recorder(a)
    for (;;) {
      const began = now()
      check((await req.request(data)).length, a.size)
      if (rec.record(began)) break
    }
    replier.close()
    await serving
    return rec.result()
  })
}

/** @param {import('./common.mjs').Args} a */
function pubSub(a) {
  if (a.role !== 'both') return alone(a)
  return pair(a.transport, async (listener, client) => {
    const publisher = listener.publisher('/feed')
    const subs = []
    for (let i = 0; i < a.width; i++) {
      const s = client.subscriber()
      await s.connect(publisher.address)
      await s.subscribe('bench.#') // installed at the publisher when it resolves
      subs.push(s)
    }
    const data = body(a.size)
    const meter = new Meter(a)
    let stop = false
    const receiving = subs.map((s) =>
      (async () => {
        while (!stop) {
          const ms = await s.recvMany(256)
          for (const m of ms) check(m.body.length, a.size)
          if (meter.tick(ms.length)) stop = true
        }
      })(),
    )
    const publishing = (async () => {
      for (let n = 1; !stop; n++) {
        publisher.publish('bench.tick', data)
        if (n % 32 === 0) await yieldToLoop()
      }
    })()
    // The first receiver to fail, or the window's end.
    await Promise.race([...receiving, publishing, new Promise((resolve) => {
      const poll = () => (stop ? resolve(undefined) : setTimeout(poll, 5))
      poll()
    })])
    stop = true
    return meter.result(true)
  })
}

const a = parse(['quic', 'unix', 'inproc'], ['await', 'window', 'batch'])
await run('weida-node', a, a.variant === 'await' ? { push_pull: pushPull, req_rep: reqRep, pub_sub: pubSub } : { push_pull: pushPull })
