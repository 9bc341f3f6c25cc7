// @ts-check
// What the Node workers of the benchmark suite share: the command line, the meters, the
// percentiles and the one JSON line a worker prints (bench/README.md, "The suite"). The same
// method as bench/src/meter.rs and bench/suite/workers/common.py.
//
// `--role both` (the default) runs both ends in this process; `--role bind` and `--role dial
// --address ADDR` one end each, in two processes, with the same lines as the Python workers:
// `ADDRESS <dialable>` first from the bind side, `WINDOW start` / `WINDOW end` from the
// measuring side, `READY` then a line on stdin to wait for (each Pub/Sub subscriber).

import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'

/**
 * @typedef {{ pattern: string, transport: string, size: number, width: number,
 *             secs: number, warmup: number, variant: string, role: string,
 *             address: string }} Args
 * @typedef {(a: Args) => Promise<Record<string, unknown>>} Case
 */

/**
 * @param {string[]} transports
 * @param {string[]} variants
 * @returns {Args}
 */
export function parse(transports, variants = ['default']) {
  const { values } = parseArgs({
    options: {
      pattern: { type: 'string' },
      transport: { type: 'string' },
      size: { type: 'string', default: '64' },
      width: { type: 'string', default: '1' },
      secs: { type: 'string', default: '1' },
      warmup: { type: 'string', default: '0.3' },
      variant: { type: 'string', default: variants[0] },
      role: { type: 'string', default: 'both' },
      address: { type: 'string', default: '' },
    },
  })
  const a = {
    pattern: String(values.pattern),
    transport: String(values.transport),
    size: Number(values.size),
    width: Number(values.width),
    secs: Number(values.secs),
    warmup: Number(values.warmup),
    variant: String(values.variant),
    role: String(values.role),
    address: String(values.address),
  }
  if (!['push_pull', 'req_rep', 'pub_sub'].includes(a.pattern)) throw new Error(`--pattern is push_pull, req_rep or pub_sub, not ${a.pattern}`)
  if (!transports.includes(a.transport)) throw new Error(`--transport is one of ${transports.join(', ')}, not ${a.transport}`)
  if (!variants.includes(a.variant)) throw new Error(`--variant is one of ${variants.join(', ')}, not ${a.variant}`)
  if (!['both', 'bind', 'dial'].includes(a.role)) throw new Error(`--role is both, bind or dial, not ${a.role}`)
  if ((a.role === 'dial') !== (a.address !== '')) throw new Error('--address goes with --role dial, and only with it')
  markers = a.role !== 'both'
  return a
}

let markers = false

/** How long a process of a two-process row may live. @param {Args} a */
export const lifetime = (a) => a.warmup + 4 * a.secs + 30

/** The bind side's first line: what the dial side dials. @param {string} address */
export function announce(address) {
  process.stdout.write(`ADDRESS ${address}\n`)
}

/** `WINDOW start` / `WINDOW end`, when this process measures one end of two. @param {string} what */
export function marker(what) {
  if (markers) process.stdout.write(`WINDOW ${what}\n`)
}

/** A Pub/Sub subscriber of two processes: READY, then wait for run.py's go (a line). */
export async function gate() {
  process.stdout.write('READY\n')
  const rl = createInterface({ input: process.stdin })
  const it = rl[Symbol.asyncIterator]()
  const first = await it.next()
  rl.close()
  if (first.done) throw new Error('stdin closed before the go')
}

/**
 * Runs the case `a` names under the stall limit, prints its JSON line and exits.
 * @param {string} system
 * @param {Args} a
 * @param {Record<string, Case>} cases
 */
export async function run(system, a, cases) {
  /** @type {Record<string, unknown>} */
  const { address: _, ...shown } = a
  const line = { system, language: 'node', ...shown }
  let status = 0
  const c = cases[a.pattern]
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  try {
    if (!c) throw new Error(`${system} has no ${a.pattern} case`)
    const limit = new Promise((_, reject) => {
      const secs = a.role === 'both' ? a.warmup + 4 * a.secs + 10 : lifetime(a)
      timer = setTimeout(() => reject(new Error('stalled: no progress within the time limit')), secs * 1000)
    })
    Object.assign(line, await Promise.race([c(a), limit]))
  } catch (e) {
    const err = /** @type {Error} */ (e)
    console.error(err.stack ?? err)
    line.error = `${err.name}: ${err.message}`
    status = 1
  }
  clearTimeout(timer)
  process.stdout.write(JSON.stringify(line) + '\n', () => process.exit(status))
}

const now = () => Number(process.hrtime.bigint()) / 1e9

/** @param {number} size */
export const stride = (size) => Math.max(1, Math.min(64, Math.floor(65536 / Math.max(1, size))))

/** Counts messages received whole; see bench/suite/workers/common.py Meter. */
export class Meter {
  /** @param {Args} a */
  constructor(a) {
    this.warmup = a.warmup
    this.secs = a.secs
    this.size = a.size
    this.stride = stride(a.size)
    this.created = now()
    this.n = 0
    /** @type {[number, number] | undefined} */
    this.start = undefined
    /** @type {[number, number] | undefined} */
    this.end = undefined
  }

  /** `k` more messages received; true once the window is over. */
  tick(k = 1) {
    const before = this.n
    this.n += k
    if (this.end) return true
    if (Math.floor(this.n / this.stride) === Math.floor(before / this.stride)) return false
    const t = now()
    if (!this.start) {
      if (t - this.created >= this.warmup) {
        this.start = [t, this.n]
        marker('start')
      }
      return false
    }
    if (t - this.start[0] >= this.secs) {
      this.end = [t, this.n]
      marker('end')
      return true
    }
    return false
  }

  /** @param {boolean} copies */
  result(copies = false) {
    if (!this.start || !this.end) throw new Error('no complete window')
    const messages = this.end[1] - this.start[1]
    const seconds = this.end[0] - this.start[0]
    const rate = messages / seconds
    return { messages, seconds, [copies ? 'copies_per_s' : 'msgs_per_s']: rate, mb_per_s: (rate * this.size) / 1e6 }
  }
}

/** Round trips recorded after the warmup until the window is over. */
export class Recorder {
  /** @param {Args} a */
  constructor(a) {
    this.warmup = a.warmup
    this.secs = a.secs
    this.created = now()
    /** @type {number | undefined} */
    this.start = undefined
    /** @type {number[]} */
    this.samples = []
  }

  /** @param {number} began */
  record(began) {
    const t = now()
    if (this.start === undefined) {
      if (t - this.created >= this.warmup) {
        this.start = t
        marker('start')
      }
      return false
    }
    this.samples.push(t - began)
    if (t - this.start < this.secs) return false
    marker('end')
    return true
  }

  result() {
    const s = this.samples.sort((x, y) => x - y)
    if (s.length === 0) throw new Error('no samples')
    const at = (/** @type {number} */ q) => s[Math.min(Math.max(Math.ceil(s.length * q), 1), s.length) - 1] * 1e6
    return { p50_us: at(0.5), p99_us: at(0.99), samples: s.length }
  }
}

export { now }

/** @param {number} size */
export function body(size) {
  const b = Buffer.alloc(size)
  for (let i = 0; i < size; i++) b[i] = i % 251
  return b
}

/** @type {string | undefined} */
let dir
/** A path in this worker's own temporary directory (AF_UNIX and ipc endpoints). @param {string} name */
export function tmpPath(name) {
  dir ??= mkdtempSync(join(tmpdir(), 'weida-suite-'))
  return join(dir, name)
}

/** @param {number} got @param {number} size */
export function check(got, size) {
  if (got !== size) throw new Error(`received ${got} bytes, sent ${size}`)
}

/** Yields to the event loop (I/O callbacks run), not only to the microtask queue. */
export const yieldToLoop = () => new Promise((resolve) => setImmediate(resolve))
