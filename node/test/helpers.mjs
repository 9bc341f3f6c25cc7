// @ts-check
// Shared test scaffolding, as core/tests/common/mod.rs: one body per behaviour, run over every
// transport, with what a test opens closed after it (so the test process can exit).

import dgram from 'node:dgram'
import { createRequire } from 'node:module'
import { mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { Runtime } from 'weida'

/** @typedef {'quic' | 'inproc' | 'unix'} Transport */
/** @typedef {import('node:test').TestContext} TestContext */

/** @type {Transport[]} */
export const transports = ['quic', 'inproc', 'unix']

/** A test fails instead of hanging past this (a hang is a bug, never a pass). */
export const TIMEOUT = 60_000

let counter = 0

/** A bind address on `t` no other test uses. @param {Transport} t */
export function bindAddress(t) {
  const n = `${process.pid}-${counter++}`
  switch (t) {
    case 'quic':
      return 'weida://127.0.0.1:0'
    case 'inproc':
      return `weida+inproc://node-test-${n}`
    case 'unix': {
      const dir = join(tmpdir(), 'weida-node-tests')
      mkdirSync(dir, { recursive: true })
      return `weida+unix://${join(dir, `s${n}.sock`)}`
    }
  }
}

/**
 * A runtime closed when the test ends.
 * @param {TestContext} ctx
 * @param {import('weida').RuntimeOptions} [options]
 */
export function runtime(ctx, options) {
  const rt = new Runtime(options)
  ctx.after(() => rt.close())
  return rt
}

/**
 * A bound runtime and a dialling one, both with `options`, closed when the test ends.
 * @param {Transport} t
 * @param {TestContext} ctx
 * @param {import('weida').RuntimeOptions} [options]
 */
export async function pair(t, ctx, options) {
  const server = runtime(ctx, options)
  const listener = await server.bind(bindAddress(t))
  // The dialling runtime does not redial: the tests written before redial existed assert what
  // a loss does under `{ giveUpAfterAttempts: 0 }` (the behaviour before it);
  // reconnect.test.mjs asserts the default, which redials.
  const client = runtime(ctx, { reconnect: { giveUpAfterAttempts: 0 }, ...options })
  return { server, listener, client }
}

/** `n` bytes of a recognisable pattern. @param {number} n */
export function payload(n) {
  const b = Buffer.allocUnsafe(n)
  for (let i = 0; i < n; i++) b[i] = i % 251
  return b
}

/**
 * The value of metadata `name`, if present.
 * @param {import('weida').IncomingMeta} meta
 * @param {string} name
 */
export function metaGet(meta, name) {
  return meta.metadata.find(([k]) => k === name)?.[1]
}

/**
 * One test per transport, named like the core's (`name` › `quic`, ...).
 * @param {string} name
 * @param {(t: Transport, ctx: TestContext) => Promise<void>} body
 */
export function onEveryTransport(name, body) {
  describe(name, () => {
    for (const t of transports) test(t, { timeout: TIMEOUT }, (ctx) => body(t, ctx))
  })
}

/**
 * One test per transport of `ts`, named like the core's (`name` › `unix`, ...).
 * @param {string} name
 * @param {Transport[]} ts
 * @param {(t: Transport, ctx: TestContext) => Promise<void>} body
 */
export function onTransports(name, ts, body) {
  describe(name, () => {
    for (const t of ts) test(t, { timeout: TIMEOUT }, (ctx) => body(t, ctx))
  })
}

/**
 * Runs `loop` in the background; a failure other than the endpoint closing fails the test.
 * @param {TestContext} ctx
 * @param {() => Promise<void>} loop
 */
export function serve(ctx, loop) {
  /** @type {unknown} */
  let failure
  const done = loop().catch((e) => {
    failure = e
  })
  ctx.after(async () => {
    await done
    if (failure !== undefined) throw failure
  })
}

/** A promise and its resolver. @template T */
export function deferred() {
  /** @type {(v: T) => void} */
  let resolve = () => {}
  /** @type {Promise<T>} */
  const promise = new Promise((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/**
 * A UDP relay between a QUIC client and server that can be frozen: frozen, it drops every
 * packet both ways, as a network gone silent (core/tests/common Relay).
 * @param {string} serverAddress a QUIC listener's address
 */
export async function relay(serverAddress) {
  const m = /@([\d.]+):(\d+)/.exec(serverAddress)
  if (!m) throw new Error(`not a QUIC address: ${serverAddress}`)
  const [, host, port] = m
  const front = dgram.createSocket('udp4')
  const back = dgram.createSocket('udp4')
  await new Promise((r) => front.bind(0, '127.0.0.1', () => r(undefined)))
  await new Promise((r) => back.bind(0, '127.0.0.1', () => r(undefined)))
  let frozen = false
  /** @type {dgram.RemoteInfo | undefined} */
  let client
  front.on('message', (msg, from) => {
    client = from
    if (!frozen) back.send(msg, Number(port), host)
  })
  back.on('message', (msg) => {
    if (client && !frozen) front.send(msg, client.port, client.address)
  })
  const relayPort = front.address().port
  return {
    /** `address` (of the same listener, with pin and path) pointed at the relay. @param {string} address */
    addressFor: (address) => address.replace(/@[\d.]+:\d+/, `@127.0.0.1:${relayPort}`),
    freeze: () => {
      frozen = true
    },
    close: () => {
      front.close()
      back.close()
    },
  }
}

/**
 * The error `p` rejects with; fails the test if it resolves.
 * @param {Promise<unknown>} p
 * @returns {Promise<unknown>}
 */
export async function rejection(p) {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected a rejection, got a value')
}

/**
 * Keeps `endpoints` referenced until the test ends: an endpoint object garbage-collected is
 * unbound (as a dropped one is in Rust), so one used only for its address must be kept.
 * @param {TestContext} ctx
 * @param {...unknown} endpoints
 */
export function keep(ctx, ...endpoints) {
  ctx.after(() => {
    endpoints.length = 0
  })
}

/**
 * The addon itself, for the internal probes a race test reads (weida-ffi's `probe`): how many
 * receives finished on the I/O thread (`_fetched`, `_waitFetched`) and how many values came
 * back because their call was aborted as they arrived (`_orphans`).
 * @type {typeof import('../native.cjs')}
 */
export const native = createRequire(import.meta.url)('../native.cjs')
