// @ts-check
// The Node benchmark: weida (QUIC, AF_UNIX, in process) next to zeromq.js v6 (tcp, ipc,
// inproc) in the same run, same process shape: sender and receiver in one Node process.
//
//   Push/Pull: messages/s at 64 B and 1 KiB, N messages, the receiver counting them all.
//     "await each": the idiomatic loop (await every send; for await on the receiver).
//     "window 64":  64 sends and 64 receives in flight (weida only; zeromq.js queues
//                   sends itself up to its high-water mark, so its idiomatic loop is already
//                   pipelined).
//   Req/Rep: round-trip latency at 64 B, one request at a time, p50 and p99.
//
//   node bench/bench.mjs [--quick]     (after `npm run build`; `npm ci --prefix bench` for zeromq)

import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Runtime } from '../dist/index.js'

const quick = process.argv.includes('--quick')
const N = quick ? 2_000 : 100_000
const RR = quick ? 500 : 10_000
const WARM = quick ? 100 : 1_000
const WINDOW = 64

/** @type {any} */
let zmq
try {
  zmq = createRequire(import.meta.url)('zeromq')
} catch {
  zmq = undefined
}

const now = () => process.hrtime.bigint()
let seq = 0
const sock = () => join(tmpdir(), `weida-bench-${process.pid}-${seq++}`)

/**
 * A weida pair on `transport`: a puller or replier bound, a pusher or requester connected.
 * @param {'quic' | 'unix' | 'inproc'} transport
 */
async function weidaPair(transport) {
  const server = new Runtime()
  const client = new Runtime()
  const address =
    transport === 'quic' ? 'weida://127.0.0.1:0' : transport === 'unix' ? `weida+unix://${sock()}.sock` : `weida+inproc://bench-${seq++}`
  const listener = await server.bind(address)
  return {
    listener,
    client,
    close: () => {
      client.close()
      server.close()
    },
  }
}

/**
 * Sends `n` bodies and counts them received; returns messages/s.
 * @param {'quic' | 'unix' | 'inproc'} transport
 * @param {number} size
 * @param {'await' | 'window'} mode
 */
async function weidaPushPull(transport, size, mode) {
  const { listener, client, close } = await weidaPair(transport)
  const puller = listener.puller('/bench')
  const pusher = client.pusher()
  await pusher.connect(puller.address)
  const body = Buffer.alloc(size, 7)
  /** @param {number} n */
  const run = async (n) => {
    const receiving =
      mode === 'await'
        ? (async () => {
            let got = 0
            for await (const _ of puller) if (++got === n) return
          })()
        : inFlight(n, () => puller.recv())
    if (mode === 'await') for (let i = 0; i < n; i++) await pusher.send(body)
    else await inFlight(n, () => pusher.send(body))
    await receiving
  }
  await run(WARM)
  const t0 = now()
  await run(N)
  const rate = N / (Number(now() - t0) / 1e9)
  close()
  return rate
}

/**
 * Runs `n` calls of `f` with WINDOW in flight.
 * @param {number} n
 * @param {() => Promise<unknown>} f
 */
async function inFlight(n, f) {
  let started = 0
  const lane = async () => {
    while (started < n) {
      started++
      await f()
    }
  }
  await Promise.all(Array.from({ length: WINDOW }, lane))
}

/** @param {bigint[]} samples */
function percentiles(samples) {
  const s = samples.map(Number).sort((a, b) => a - b)
  const at = (/** @type {number} */ p) => s[Math.min(s.length - 1, Math.floor(p * s.length))] / 1000
  return { p50: at(0.5), p99: at(0.99) }
}

/** @param {'quic' | 'unix' | 'inproc'} transport */
async function weidaReqRep(transport) {
  const { listener, client, close } = await weidaPair(transport)
  const replier = listener.replier('/bench')
  const serving = (async () => {
    for await (const ex of replier) await ex.reply(await ex.takeBody())
  })()
  const req = client.requester()
  await req.connect(replier.address)
  const body = Buffer.alloc(64, 7)
  for (let i = 0; i < WARM; i++) await req.request(body)
  /** @type {bigint[]} */
  const samples = []
  for (let i = 0; i < RR; i++) {
    const t0 = now()
    await req.request(body)
    samples.push(now() - t0)
  }
  close()
  await serving
  return percentiles(samples)
}

/** @param {'tcp' | 'ipc' | 'inproc'} transport */
function zmqEndpoint(transport) {
  return transport === 'tcp' ? 'tcp://127.0.0.1:*' : transport === 'ipc' ? `ipc://${sock()}.ipc` : `inproc://bench-${seq++}`
}

/**
 * @param {'tcp' | 'ipc' | 'inproc'} transport
 * @param {number} size
 */
async function zmqPushPull(transport, size) {
  const push = new zmq.Push()
  const pull = new zmq.Pull()
  await pull.bind(zmqEndpoint(transport))
  push.connect(pull.lastEndpoint)
  const body = Buffer.alloc(size, 7)
  /** @param {number} n */
  const run = async (n) => {
    const receiving = (async () => {
      let got = 0
      for await (const _ of pull) if (++got === n) return
    })()
    for (let i = 0; i < n; i++) await push.send(body)
    await receiving
  }
  await run(WARM)
  const t0 = now()
  await run(N)
  const rate = N / (Number(now() - t0) / 1e9)
  push.close()
  pull.close()
  return rate
}

/** @param {'tcp' | 'ipc' | 'inproc'} transport */
async function zmqReqRep(transport) {
  const rep = new zmq.Reply()
  const req = new zmq.Request()
  await rep.bind(zmqEndpoint(transport))
  req.connect(rep.lastEndpoint)
  const serving = (async () => {
    try {
      for await (const [m] of rep) await rep.send(m)
    } catch {
      // closed
    }
  })()
  const body = Buffer.alloc(64, 7)
  const ask = async () => {
    await req.send(body)
    await req.receive()
  }
  for (let i = 0; i < WARM; i++) await ask()
  /** @type {bigint[]} */
  const samples = []
  for (let i = 0; i < RR; i++) {
    const t0 = now()
    await ask()
    samples.push(now() - t0)
  }
  req.close()
  rep.close()
  await serving
  return percentiles(samples)
}

const fmt = (/** @type {number} */ r) => Math.round(r).toLocaleString('en-US')
const us = (/** @type {number} */ v) => v.toFixed(1)

console.log(`# weida (Node binding) next to zeromq.js ${zmq ? 'v6' : '(not installed: weida rows only)'}`)
console.log(`node ${process.version}, ${N} messages per push/pull row, ${RR} requests per req/rep row${quick ? ' (--quick)' : ''}\n`)
console.log('| library | transport | mode | push/pull 64 B msg/s | push/pull 1 KiB msg/s | req/rep 64 B p50 µs | p99 µs |')
console.log('|---|---|---|---:|---:|---:|---:|')
for (const t of /** @type {const} */ (['quic', 'unix', 'inproc'])) {
  const rr = await weidaReqRep(t)
  console.log(
    `| weida | ${t} | await each | ${fmt(await weidaPushPull(t, 64, 'await'))} | ${fmt(await weidaPushPull(t, 1024, 'await'))} | ${us(rr.p50)} | ${us(rr.p99)} |`,
  )
  console.log(`| weida | ${t} | window ${WINDOW} | ${fmt(await weidaPushPull(t, 64, 'window'))} | ${fmt(await weidaPushPull(t, 1024, 'window'))} | | |`)
}
if (zmq) {
  for (const t of /** @type {const} */ (['tcp', 'ipc', 'inproc'])) {
    const rr = await zmqReqRep(t)
    console.log(`| zeromq.js | ${t} | await each | ${fmt(await zmqPushPull(t, 64))} | ${fmt(await zmqPushPull(t, 1024))} | ${us(rr.p50)} | ${us(rr.p99)} |`)
  }
}
