// @ts-check
// zeromq.js v6 worker of the benchmark suite: Push/Pull, Request/Reply and Publisher/Subscriber
// over tcp, ipc and inproc, both ends in this Node process (libzmq's I/O thread does the
// sockets; every await is on the one JS thread).
//
//   node zeromq_worker.mjs --pattern push_pull --transport tcp --size 64 [--secs 1 --warmup 0.3]
//
// The idiomatic loops: `await push.send(body)` (resolves once libzmq queued it, so sending is
// already pipelined up to the high-water mark) and `for await` on the receiving socket.
//
// Two processes (--role bind / dial, common.mjs): Pull, Reply and Publisher bind; Push,
// Request and each Subscriber connect.

import * as zmq from 'zeromq'
import { Meter, Recorder, announce, body, check, gate, now, parse, run, tmpPath, yieldToLoop } from './common.mjs'

let seq = 0
/** @param {string} transport */
const endpoint = (transport) =>
  transport === 'tcp' ? 'tcp://127.0.0.1:*' : transport === 'ipc' ? `ipc://${tmpPath(`z${seq++}.ipc`)}` : `inproc://suite-${seq++}`

/**
 * One end of two processes: the `--role` side of `a.pattern`.
 * @param {import('./common.mjs').Args} a
 */
async function alone(a) {
  const data = body(a.size)
  if (a.role === 'bind') {
    if (a.pattern === 'req_rep') {
      const rep = new zmq.Reply({ linger: 0 })
      await rep.bind(endpoint(a.transport))
      announce(/** @type {string} */ (rep.lastEndpoint))
      for await (const [m] of rep) await rep.send(m)
      throw new Error('the replier ended')
    }
    if (a.pattern === 'pub_sub') {
      const pub = new zmq.Publisher({ linger: 0 })
      await pub.bind(endpoint(a.transport))
      announce(/** @type {string} */ (pub.lastEndpoint))
      for (let n = 1; ; n++) {
        await pub.send(data)
        if (n % 32 === 0) await yieldToLoop()
      }
    }
    const pull = new zmq.Pull({ linger: 0 })
    await pull.bind(endpoint(a.transport))
    announce(/** @type {string} */ (pull.lastEndpoint))
    /** @type {Meter | undefined} */
    let meter
    for await (const [m] of pull) {
      check(m.length, a.size)
      if (!meter) meter = new Meter(a)
      else if (meter.tick()) break
    }
    pull.close()
    return /** @type {Meter} */ (meter).result()
  }
  if (a.pattern === 'push_pull') {
    const push = new zmq.Push({ linger: 0 })
    push.connect(a.address)
    for (;;) await push.send(data)
  }
  if (a.pattern === 'req_rep') {
    const req = new zmq.Request({ linger: 0 })
    req.connect(a.address)
    const rec = new Recorder(a)
    for (;;) {
      const began = now()
      await req.send(data)
      const [m] = await req.receive()
      check(m.length, a.size)
      if (rec.record(began)) {
        req.close()
        return rec.result()
      }
    }
  }
  const s = new zmq.Subscriber({ linger: 0 })
  s.connect(a.address)
  s.subscribe()
  await s.receive()
  await gate()
  const meter = new Meter(a)
  for await (const [m] of s) {
    check(m.length, a.size)
    if (meter.tick()) break
  }
  s.close()
  return meter.result(true)
}

/** @param {import('./common.mjs').Args} a */
async function pushPull(a) {
  if (a.role !== 'both') return alone(a)
  const pull = new zmq.Pull({ linger: 0 })
  const push = new zmq.Push({ linger: 0 })
  try {
    await pull.bind(endpoint(a.transport))
    push.connect(/** @type {string} */ (pull.lastEndpoint))
    const data = body(a.size)
    let stop = false
    const sending = (async () => {
      while (!stop) await push.send(data)
    })().catch(() => {})
    const meter = new Meter(a)
    for await (const [m] of pull) {
      check(m.length, a.size)
      if (meter.tick()) break
    }
    stop = true
    push.close() // a send waiting at the high-water mark rejects, and the loop ends
    await sending
    return meter.result()
  } finally {
    push.close()
    pull.close()
  }
}

/** @param {import('./common.mjs').Args} a */
async function reqRep(a) {
  if (a.role !== 'both') return alone(a)
  const rep = new zmq.Reply({ linger: 0 })
  const req = new zmq.Request({ linger: 0 })
  try {
    await rep.bind(endpoint(a.transport))
    req.connect(/** @type {string} */ (rep.lastEndpoint))
    const serving = (async () => {
      for await (const [m] of rep) await rep.send(m)
    })().catch(() => {})
    const data = body(a.size)
    const rec = new Recorder(a)
    for (;;) {
      const began = now()
      await req.send(data)
      const [m] = await req.receive()
      check(m.length, a.size)
      if (rec.record(began)) break
    }
    rep.close()
    await serving
    return rec.result()
  } finally {
    req.close()
    rep.close()
  }
}

/**
 * Publisher to `width` Subscribers (each subscribed to everything); copies received per
 * second, summed over the subscribers. A Publisher drops for a subscriber whose queue is full,
 * so `send` never waits and a plain send loop would keep the event loop from ever running the
 * receivers: the publisher yields to the loop every 32 sends.
 * @param {import('./common.mjs').Args} a
 */
async function pubSub(a) {
  if (a.role !== 'both') return alone(a)
  const pub = new zmq.Publisher({ linger: 0 })
  /** @type {zmq.Subscriber[]} */
  const subs = []
  try {
    await pub.bind(endpoint(a.transport))
    for (let i = 0; i < a.width; i++) {
      const s = new zmq.Subscriber({ linger: 0 })
      s.connect(/** @type {string} */ (pub.lastEndpoint))
      s.subscribe()
      subs.push(s)
    }
    const data = body(a.size)
    const meter = new Meter(a)
    const joined = new Set()
    let measuring = false
    /** @type {(v?: unknown) => void} */
    let finished = () => {}
    const done = new Promise((resolve) => (finished = resolve))
    const receivers = subs.map((s, i) =>
      (async () => {
        for await (const [m] of s) {
          check(m.length, a.size)
          if (!measuring) joined.add(i)
          else if (meter.tick()) finished()
        }
      })().catch(() => {}),
    )
    const joinLimit = now() + 10
    while (joined.size < a.width) {
      if (now() > joinLimit) throw new Error(`only ${joined.size} of ${a.width} subscribers joined`)
      await pub.send(data)
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
    measuring = true
    let stop = false
    const sending = (async () => {
      for (let n = 1; !stop; n++) {
        await pub.send(data)
        if (n % 32 === 0) await yieldToLoop()
      }
    })()
    await done
    stop = true
    await sending
    for (const s of subs) s.close()
    await Promise.all(receivers)
    return meter.result(true)
  } finally {
    for (const s of subs) s.close()
    pub.close()
  }
}

const a = parse(['tcp', 'ipc', 'inproc'])
await run('zeromq.js', a, { push_pull: pushPull, req_rep: reqRep, pub_sub: pubSub })
