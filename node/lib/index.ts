// The idiomatic layer over the addon (native.cjs, generated from src/*.rs): options objects,
// AbortSignal, async iterators, Symbol.asyncDispose, Web Streams. It converts and forwards;
// behaviour lives in the Rust core.
//
// Lifetime (what keeps the process alive): only a pending call. A runtime, a listener or a
// connection alone does not hold Node's event loop open (the I/O runs on the addon's own
// thread), so there is nothing to `unref`: a script whose calls have all settled exits, and a
// server stays up while it awaits `recv`/`accept` (as `for await` does). Closing (or aborting)
// settles what is pending, so a program that closes what it opened exits on its own. A `send`
// resolves when the message is queued, not delivered: `await runtime.drain(ms)` before exiting.

import * as native from '../native.cjs'
import { AbortError, Closed, type LossCause, WeidaError } from './errors.js'

export * from './errors.js'
export type { Counters, Dropped, EndpointOptions, IncomingMeta, PeerInfo, ReconnectOptions } from '../native.cjs'
export { Identity, Trust, withPath, withPin, withoutPath } from '../native.cjs'

type IncomingMeta = native.IncomingMeta

/** A body: a string (sent as UTF-8) or any Uint8Array (a Buffer is one), sent without a copy when large. */
export type Body = string | Uint8Array
/** Metadata to send: names to values, kept in this order. */
export type MetadataInit = Record<string, string | Uint8Array>
/** Per-connection bounds; an absent field keeps the core's default (docs in core `Limits`). */
export type Limits = native.LimitsOptions
/**
 * The ordering level a runtime requires of what it receives (core `Ordering`): `'detect'`
 * numbers a subscriber's copies per publisher and a puller's messages per pusher connection,
 * and reports gaps (`meta.sequence`, `meta.gap`); `'reassemble'` also holds a subscriber's
 * out-of-order copies, up to `limits.maxReorderHold`. A runtime that requires an ordering its
 * peer's pattern cannot honour refuses it with `NegotiationFailed` (a pusher offers detect, a
 * requester none: docs/PATTERNS.md §1.7).
 */
export type Ordering = 'none' | 'detect' | 'reassemble'

/** What every call that waits accepts. */
export interface CallOptions {
  /** Aborting rejects the call with an {@link AbortError} and cancels it in the core. */
  signal?: AbortSignal
}

export interface RuntimeOptions {
  /** The key this runtime presents. Default: an ephemeral one. */
  identity?: native.Identity
  /** Whom a dialled peer must be. Default: only what the address pins. */
  trust?: native.Trust
  limits?: Limits
  /** Whether dialling presents `identity` (default true) or stays anonymous. */
  presentIdentity?: boolean
  /** How long `open`/`send`/`request` may wait for a stream slot before ERR_WEIDA_TIMEOUT. Default (or null): unbounded. */
  sendTimeoutMs?: number | null
  /** The UDP socket buffer size asked of the kernel, in bytes. Default 4 MiB. */
  udpBuffer?: number
  /** The ordering level this runtime requires of what it receives. Default `'none'`. */
  ordering?: Ordering
  /**
   * The largest body `send`/`publish` write as a frame on a message lane (one long-lived stream
   * for many small messages) when the peer offers lanes. 0 turns lanes off. Default 16 KiB.
   */
  laneMaxMessage?: number
  /**
   * How a dialling endpoint redials an address whose connection was lost: by default with
   * backoff from 100 ms to 30 s, forever; `{ giveUpAfterAttempts: 0 }` never redials (the next
   * operation then fails with the loss).
   */
  reconnect?: native.ReconnectOptions
  /** Messages a pusher's outbox holds while no peer is live. Default 1000; 0: none. */
  outboxMessages?: number
  /** Body bytes a pusher's outbox holds. Default 8 MiB; a larger body is refused at the call. */
  outboxBytes?: number
  /** What a pusher's `send` does at a full outbox: `'block'` (default), `'drop'` (counted) or `'reject'`. */
  outboxFull?: 'block' | 'drop' | 'reject'
}

/** What `connect` accepts. */
export interface ConnectOptions extends CallOptions {
  /**
   * `true` (the default): resolves once the first dial succeeded, and rejects if it fails.
   * `false`: records the address at once and dials it in the background (connect-before-bind:
   * the listener may come later; `events()` says how it goes). Until it is live, a pusher's
   * `send` fills its outbox and `open`/`request` wait.
   */
  wait?: boolean
}

/** One transition of one address of a dialling endpoint, by `kind`. */
export type PeerEvent =
  | { kind: 'connected'; url: string; fingerprint?: string }
  | { kind: 'lost' | 'gave_up'; url: string; cause: LossCause; reason: string }
  | { kind: 'retrying'; url: string; attempt: number; delayMs: number }
  | { kind: 'missed'; url: ''; missed: number }

/**
 * A dialling endpoint's events from the moment `events()` was called: `for await (const e of
 * pusher.events())`. The iteration ends when the endpoint is gone. Reading them is optional;
 * a reader that falls behind gets a `missed` event saying by how many.
 */
export class PeerEvents implements AsyncIterable<PeerEvent> {
  readonly #n: native.PeerEvents

  /** @internal */
  constructor(n: native.PeerEvents) {
    this.#n = n
  }

  /** The next event, or null once the endpoint is gone. */
  async next(options: CallOptions = {}): Promise<PeerEvent | null> {
    const e = await call(options.signal, (c) => this.#n.next(c))
    return e === null ? null : (e as unknown as PeerEvent)
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<PeerEvent, void, undefined> {
    for (;;) {
      const e = await this.next()
      if (e === null) return
      yield e
    }
  }
}

export interface BindOptions extends CallOptions {
  /** A client must present a key this trust accepts. */
  requireClient?: native.Trust
}

/** What a drain achieved. */
export interface Drained {
  delivered: bigint
  outstanding: bigint
  /** Messages the pushers' outboxes still held at the deadline, never written. */
  unsent: bigint
}

/** A whole received message: its body, and what arrived with it (made on first read of `meta`). */
export class Message {
  readonly body: Buffer
  // The batch's metadata and this message's index in it, until `meta` is first read.
  #metas: native.Metas | undefined
  #index: number
  #meta: IncomingMeta | undefined

  /** @internal */
  constructor(body: Buffer, metas: native.Metas, index: number) {
    this.body = body
    this.#metas = metas
    this.#index = index
  }

  get meta(): IncomingMeta {
    if (this.#meta === undefined) {
      this.#meta = this.#metas!.get(this.#index)
      this.#metas = undefined
    }
    return this.#meta
  }
}

native.registerMessageClass(Message)

/** Runs a native call with an optional AbortSignal tied to a native Cancel. */
function call<T>(signal: AbortSignal | undefined, run: (c: native.Cancel | undefined) => Promise<T>): Promise<T> {
  if (signal === undefined) return run(undefined)
  if (signal.aborted) return Promise.reject(new AbortError(undefined, { cause: signal.reason }))
  const cancel = new native.Cancel()
  const onAbort = (): void => cancel.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  return run(cancel).then(
    (v) => {
      signal.removeEventListener('abort', onAbort)
      return v
    },
    (e: unknown) => {
      signal.removeEventListener('abort', onAbort)
      if (e instanceof AbortError) e.cause = signal.reason
      throw e
    },
  )
}

/**
 * How many operations in a row may complete at once (a send onto a lane with room, a message
 * already queued) before one takes the waiting path, which yields to the event loop: a loop
 * that always finds work ready runs as microtasks, and would otherwise starve timers and I/O.
 * The number is weida-ffi's, for every language; the synchronous paths below count against it
 * here because they never enter the addon's calls, which count their own.
 */
const READY_STREAK = native.READY_STREAK

/**
 * Runs `ready` (a synchronous attempt: a value, or null when it must wait) unless the streak
 * is spent or the signal already aborted, and `wait` otherwise. A synchronous throw becomes
 * the rejection, as the waiting path would report it.
 */
class Streak {
  #n = 0

  run<T>(signal: AbortSignal | undefined, ready: () => T | null, wait: () => Promise<T>): Promise<T> {
    if (this.#n < READY_STREAK && signal?.aborted !== true) {
      let v: T | null
      try {
        v = ready()
      } catch (e) {
        return Promise.reject(e)
      }
      if (v !== null) {
        this.#n++
        return Promise.resolve(v)
      }
    }
    this.#n = 0
    return wait()
  }
}

/**
 * How many messages one call takes from the addon: every one ready, up to this many. A call
 * across the boundary, and a wakeup from the I/O thread when it had to wait, then serve up to
 * this many receives instead of one (docs/BINDINGS.md, "Receiving in batches").
 */
const BATCH = 64

/** An error a receive met, kept in its place among the messages taken before and after it. */
class Failed {
  constructor(readonly error: unknown) {}
}

/** The native receive pair a puller and a subscriber share. */
interface NativeReceiver {
  take(max: number): native.Batch | null
  recvBatch(max: number, cancel?: native.Cancel | null): Promise<native.Batch>
}

/** Resolves on the event loop's next check phase, after timers and I/O had their turn. */
const giveWay = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** A receive waiting for the inbox: `take` runs once it holds something. */
interface Waiter {
  take: () => unknown
  resolve: (v: never) => void
  reject: (e: unknown) => void
  max: number
}

/**
 * The receives of a puller or a subscriber. Messages cross from the addon in batches, and are
 * handed out one per `recv`, in the order received. What a batch holds belongs to the
 * endpoint, not to the call that fetched it: it is the endpoint's queue continued on this
 * side, so a receive aborted, or an iteration stopped, loses nothing, and after `close()`
 * it is still handed out before ERR_WEIDA_CLOSED. Receives that must wait queue here, in call
 * order, behind one wait in the addon; a batch that arrives serves as many of them as it holds.
 */
class Inbox {
  readonly #n: NativeReceiver
  #items: (Message | Failed)[] = []
  #head = 0
  #streak = 0
  readonly #waiters: Waiter[] = []
  /** The wait in the addon, while one is pending. */
  #fetch: native.Cancel | undefined

  constructor(n: NativeReceiver) {
    this.#n = n
  }

  /** Messages (and errors) taken from the addon and not yet handed out. */
  get size(): number {
    return this.#items.length - this.#head
  }

  #push([metas, count, packed, bodies]: native.Batch): void {
    if (packed !== null) {
      const ends = packed.length - 4 * count
      let start = 0
      for (let i = 0; i < count; i++) {
        const end = packed.readUInt32LE(ends + 4 * i)
        this.#items.push(new Message(packed.subarray(start, end), metas, i))
        start = end
      }
    } else {
      for (let i = 0; i < count; i++) this.#items.push(new Message(bodies![i], metas, i))
    }
  }

  /** The next item; throws it if it is an error. Only when `size > 0`. */
  #shift(): Message {
    const item = this.#items[this.#head++]
    if (this.#head === this.#items.length) {
      this.#items.length = 0
      this.#head = 0
    } else if (this.#head >= BATCH && 2 * this.#head >= this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
    if (item instanceof Failed) throw item.error
    return item
  }

  /**
   * Takes what the addon has ready, if nothing is held; false if nothing is there either. Not
   * while a wait in the addon is pending: one aborted as its batch arrived hands that batch
   * back to the endpoint when it settles here, and a take before that would overtake it.
   */
  #fill(): boolean {
    if (this.size > 0) return true
    if (this.#fetch !== undefined) return false
    const b = this.#n.take(BATCH)
    if (b === null) return false
    this.#push(b)
    return true
  }

  tryRecv(): Message | null {
    return this.#fill() ? this.#shift() : null
  }

  recv(signal: AbortSignal | undefined): Promise<Message> {
    return this.#take(signal, (m) => m)
  }

  /**
   * `recv` in the shape the iteration protocol wants: `{value, done: false}`, or done once the
   * endpoint is closed. A ready message costs one resolved promise, as `recv`'s does, where an
   * async generator around `recv` costs several turns of the microtask queue per message
   * (profiled: ~14 % of the JS thread on a 64-byte Push/Pull).
   */
  step(signal: AbortSignal | undefined): Promise<IteratorResult<Message, undefined>> {
    return this.#take(signal, (value): IteratorResult<Message, undefined> => ({ value, done: false }), ended)
  }

  /**
   * The next message, as `wrap` makes it. `ended`, when given, maps a failure (only on the
   * paths that fail, so a ready message costs no promise more).
   */
  #take<T>(signal: AbortSignal | undefined, wrap: (m: Message) => T, ended?: (e: unknown) => T): Promise<T> {
    if (signal?.aborted === true) return Promise.reject(new AbortError(undefined, { cause: signal.reason }))
    if (this.#streak >= READY_STREAK) {
      // A loop that always finds a message ready runs as microtasks: give way now and then.
      // Queued as a waiter first, so that a receive called meanwhile waits behind this one
      // (taking before it gave way, a later call got the earlier message:
      // cancel.test.mjs `concurrent_receives_get_messages_in_call_order_when_one_gives_way`).
      this.#streak = 0
      const waited = this.#wait(signal, BATCH, () => wrap(this.#shift()), true)
      return ended === undefined ? waited : waited.catch(ended)
    }
    if (this.#waiters.length === 0) {
      try {
        if (this.#fill()) {
          this.#streak++
          return Promise.resolve(wrap(this.#shift()))
        }
      } catch (e) {
        const failed = Promise.reject(e)
        return ended === undefined ? failed : failed.catch(ended)
      }
    }
    this.#streak = 0
    const waited = this.#wait(signal, BATCH, () => wrap(this.#shift()))
    return ended === undefined ? waited : waited.catch(ended)
  }

  recvMany(max: number, signal: AbortSignal | undefined): Promise<Message[]> {
    if (signal?.aborted === true) return Promise.reject(new AbortError(undefined, { cause: signal.reason }))
    if (!Number.isInteger(max) || max < 0) {
      // The addon's validation, and its error.
      return call(signal, (c) => this.#n.recvBatch(max, c)).then(() => [])
    }
    if (max === 0) return Promise.resolve([])
    if (this.#waiters.length === 0) {
      try {
        if (this.#fill()) return Promise.resolve(this.#upTo(max))
      } catch (e) {
        return Promise.reject(e)
      }
    }
    return this.#wait(signal, max, () => this.#upTo(max))
  }

  /** Up to `max` held messages; stops before an error, which the next receive throws. */
  #upTo(max: number): Message[] {
    const out: Message[] = []
    while (out.length < max && this.size > 0) {
      if (out.length > 0 && this.#items[this.#head] instanceof Failed) break
      out.push(this.#shift())
    }
    return out
  }

  /**
   * Queues a receive until the inbox holds something for it; `giveWayFirst`: serves the queue only
   * once the event loop had a turn (another call may serve it sooner).
   */
  #wait<T>(signal: AbortSignal | undefined, max: number, take: () => T, giveWayFirst = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const w: Waiter = { take, resolve: resolve as (v: never) => void, reject, max }
      if (signal !== undefined) {
        const onAbort = (): void => {
          const i = this.#waiters.indexOf(w)
          if (i < 0) return
          this.#waiters.splice(i, 1)
          reject(new AbortError(undefined, { cause: signal.reason }))
          // Nobody left to wait for: end the wait in the addon (what it took goes back).
          if (this.#waiters.length === 0) this.#fetch?.cancel()
        }
        signal.addEventListener('abort', onAbort, { once: true })
        w.resolve = (v: never) => {
          signal.removeEventListener('abort', onAbort)
          resolve(v)
        }
        w.reject = (e: unknown) => {
          signal.removeEventListener('abort', onAbort)
          reject(e)
        }
      }
      this.#waiters.push(w)
      if (giveWayFirst) void giveWay().then(() => this.#serve())
      else this.#serve()
    })
  }

  /** Hands what is held to the waiting receives, in call order, and waits in the addon for more while any is left. */
  #serve(): void {
    while (this.#waiters.length > 0 && this.size > 0) {
      const w = this.#waiters.shift()!
      let v: unknown
      try {
        v = w.take()
      } catch (e) {
        w.reject(e)
        continue
      }
      w.resolve(v as never)
    }
    if (this.#waiters.length === 0 || this.#fetch !== undefined) return
    const cancel = new native.Cancel()
    this.#fetch = cancel
    this.#n.recvBatch(Math.max(BATCH, this.#waiters[0].max), cancel).then(
      (b) => {
        this.#fetch = undefined
        this.#push(b)
        this.#serve()
      },
      (e: unknown) => {
        this.#fetch = undefined
        // Aborted because every waiter left: anything it took went back to the endpoint.
        if (!(e instanceof AbortError)) this.#items.push(new Failed(e))
        this.#serve()
      },
    )
  }
}

const asyncDispose: typeof Symbol.asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')

/** The largest body `sendMany` packs (the addon copies smaller bodies anyway). */
const PACK_BODY_MAX = 16 * 1024

/**
 * The bodies of a `sendMany` in one `Buffer`, laid out as a receive batch is (weida-ffi's packed
 * layout, core/ffi/src/packed.rs, read back by its `unpack`): back to back, zeros to a multiple
 * of 4, then each body's end offset as a u32 LE.
 * One value crosses the boundary instead of an array the addon reads element by element, and
 * the addon makes each body a slice of one copy (profiled: the per-element reads and copies
 * were ~30 % of the JS thread in a batched 64-byte Push/Pull). Null when there is nothing to
 * gain or a body is not a small string or Uint8Array: the addon then takes the array as it is
 * (and reports a body of the wrong type).
 */
function pack(bodies: readonly Body[]): Buffer | null {
  const n = bodies.length
  if (n < 2) return null
  let total = 0
  for (const b of bodies) {
    const len = typeof b === 'string' ? Buffer.byteLength(b) : b instanceof Uint8Array ? b.byteLength : -1
    if (len < 0 || len > PACK_BODY_MAX) return null
    total += len
  }
  const endsAt = (total + 3) & ~3
  const out = Buffer.allocUnsafe(endsAt + 4 * n)
  let at = 0
  for (let i = 0; i < n; i++) {
    const b = bodies[i]!
    if (typeof b === 'string') {
      at += out.write(b, at)
    } else {
      out.set(b, at)
      at += b.byteLength
    }
    out.writeUInt32LE(at, endsAt + 4 * i)
  }
  out.fill(0, at, endsAt)
  return out
}

const DONE: IteratorResult<never, undefined> = Object.freeze({ value: undefined, done: true })

/** A receive that met ERR_WEIDA_CLOSED: the end of the iteration. Other errors are thrown. */
function ended(e: unknown): IteratorResult<never, undefined> {
  if (e instanceof Closed) return DONE
  throw e
}

/**
 * Messages until the endpoint is closed, as an iterator object over `Inbox.step` rather than
 * an async generator (see `step`). After `return()` (a `break` out of `for await`) it is done
 * and receives nothing more.
 */
class Messages implements AsyncIterableIterator<Message> {
  readonly #inbox: Inbox
  readonly #signal: AbortSignal | undefined
  #done = false

  constructor(inbox: Inbox, signal: AbortSignal | undefined) {
    this.#inbox = inbox
    this.#signal = signal
  }

  next(): Promise<IteratorResult<Message, undefined>> {
    if (this.#done) return Promise.resolve(DONE)
    return this.#inbox.step(this.#signal)
  }

  return(): Promise<IteratorResult<Message, undefined>> {
    this.#done = true
    return Promise.resolve(DONE)
  }

  [Symbol.asyncIterator](): Messages {
    return this
  }
}

/** Receives until the endpoint is closed: ERR_WEIDA_CLOSED ends the iteration, other errors are thrown. */
async function* until<T>(next: () => Promise<T>): AsyncGenerator<T, void, undefined> {
  for (;;) {
    let item: T
    try {
      item = await next()
    } catch (e) {
      if (e instanceof Closed) return
      throw e
    }
    yield item
  }
}

/** The process-wide entry point: binds listeners, makes the dialling endpoints. */
export class Runtime {
  readonly #n: native.Runtime

  constructor(options: RuntimeOptions = {}) {
    this.#n = new native.Runtime(options)
  }

  /** @internal The addon's runtime, for {@link Service}. */
  get _native(): native.Runtime {
    return this.#n
  }

  /** The `sha256:…` fingerprint of the key this runtime presents. */
  get fingerprint(): string {
    return this.#n.fingerprint
  }

  /** Binds `address` without a path (`weida://127.0.0.1:0`, `weida+unix:///tmp/s.sock`, `weida+inproc://name`). */
  async bind(address: string, options: BindOptions = {}): Promise<Listener> {
    const l = await call(options.signal, (c) => this.#n.bind(address, options.requireClient, c))
    return new Listener(l)
  }

  /** A pusher; `sendTimeoutMs` of its own if given. */
  pusher(options?: native.EndpointOptions): Pusher {
    return new Pusher(this.#n.pusher(options))
  }

  /** A requester; `sendTimeoutMs` and `maxCollectedBody` (replies) of its own if given. */
  requester(options?: native.EndpointOptions): Requester {
    return new Requester(this.#n.requester(options))
  }

  /** A raw peer; `sendTimeoutMs` of its own if given. */
  peer(options?: native.EndpointOptions): Peer {
    return new Peer(this.#n.peer(options))
  }

  /** A subscriber: connect it to publishers, then subscribe; `maxCollectedBody` and `endpointQueue` of its own if given. */
  subscriber(options?: native.EndpointOptions): Subscriber {
    return new Subscriber(this.#n.subscriber(options))
  }

  /** A bus member bound at `path` on `listener` (this runtime's): `connect` it to the other members; `endpointQueue` (copies per member) and `maxCollectedBody` of its own if given. */
  bus(listener: Listener, path: string, options?: native.EndpointOptions): Bus {
    return new Bus(this.#n.bus(listener._native, path, options))
  }

  /** A puller that dials bound pushers ({@link Listener.pusher}): `connect`, then `recv`; `maxCollectedBody` and `endpointQueue` of its own if given. */
  puller(options?: native.EndpointOptions): DialingPuller {
    return new DialingPuller(this.#n.puller(options))
  }

  /** A dialling pair: `connect` it to a bound pair ({@link Listener.pair}); a pusher's options for what it sends, a puller's for what it receives. */
  pair(options?: native.EndpointOptions): Pair {
    return new Pair(this.#n.pair(options))
  }

  /** A publisher that dials collectors ({@link Listener.subscriber}): `connect`, then `publish`; `endpointQueue` (copies per collector) of its own if given. */
  publisher(options?: native.EndpointOptions): DialingPublisher {
    return new DialingPublisher(this.#n.publisher(options))
  }

  /** A surveyor: `connect` it to respondents, then `survey(body, deadlineMs)`; `maxCollectedBody` (answers) of its own if given. */
  surveyor(options?: native.EndpointOptions): Surveyor {
    return new Surveyor(this.#n.surveyor(options))
  }

  /** Stops admitting work, gives finished transfers until `deadlineMs` to reach the peer, then closes everything. */
  drain(deadlineMs: number): Promise<Drained> {
    return this.#n.drain(deadlineMs)
  }

  /** Closes every connection and listener now: pending calls reject (ERR_WEIDA_CLOSED, or a loss). */
  shutdown(): void {
    this.#n.shutdown()
  }

  /**
   * Closes every connection and listener now, as {@link Runtime.shutdown} does, and resolves
   * once the closes have been sent (at most a second): a process that exits next leaves its
   * peers knowing at once, not at their idle timeout.
   */
  close(): Promise<void> {
    return this.#n.close()
  }

  /** The counters, as BigInts. */
  counters(): native.Counters {
    return this.#n.counters()
  }

  async [asyncDispose](): Promise<void> {
    await this.close()
  }
}

/** A bound address; endpoints are registered on it by path. */
export class Listener {
  readonly #n: native.Listener

  /** @internal */
  constructor(n: native.Listener) {
    this.#n = n
  }

  /** @internal The addon's listener, for {@link Runtime.bus}. */
  get _native(): native.Listener {
    return this.#n
  }

  /** The bound address: over QUIC with its real port and the `sha256:` pin of its key. */
  get address(): string {
    return this.#n.address
  }

  /** Binds a puller at `path`; `maxCollectedBody` and `endpointQueue` of its own if given. */
  puller(path: string, options?: native.EndpointOptions): Puller {
    return new Puller(this.#n.puller(path, options))
  }

  /** Binds a replier at `path`; `maxCollectedBody` and `endpointQueue` of its own if given. */
  replier(path: string, options?: native.EndpointOptions): Replier {
    return new Replier(this.#n.replier(path, options))
  }

  /** Binds a respondent at `path`: a {@link Replier} by another name (surveys arrive as exchanges, each answered once). */
  respondent(path: string, options?: native.EndpointOptions): Replier {
    return new Replier(this.#n.respondent(path, options))
  }

  /** Binds a raw acceptor at `path`; `maxCollectedBody` and `endpointQueue` of its own if given. */
  acceptor(path: string, options?: native.EndpointOptions): Acceptor {
    return new Acceptor(this.#n.acceptor(path, options))
  }

  /** Binds a publisher at `path`; `endpointQueue` (copies queued per subscriber) of its own if given. */
  publisher(path: string, options?: native.EndpointOptions): Publisher {
    return new Publisher(this.#n.publisher(path, options))
  }

  /** Binds a pusher at `path`: the pullers that connect share its messages, round-robin; `sendTimeoutMs` (a send waits for a puller) of its own if given. */
  pusher(path: string, options?: native.EndpointOptions): BoundPusher {
    return new BoundPusher(this.#n.pusher(path, options))
  }

  /** Binds a pair at `path`: one dialling pair at a time claims it; `sendTimeoutMs` (a send waits for a peer), `maxCollectedBody` and `endpointQueue` of its own if given. */
  pair(path: string, options?: native.EndpointOptions): Pair {
    return new Pair(this.#n.pair(path, options))
  }

  /** Binds a collector at `path`: dialling publishers feed it; `maxCollectedBody` and `endpointQueue` of its own if given. */
  subscriber(path: string, options?: native.EndpointOptions): BoundSubscriber {
    return new BoundSubscriber(this.#n.subscriber(path, options))
  }

  /**
   * The connections it accepts from now on: `connected` (`url` where the connection comes from:
   * a QUIC peer's UDP address, `unix` or `inproc`; `fingerprint` the key it presented) and `lost`
   * (`cause`): `for await (const e of listener.events())`.
   */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /** Stops accepting connections, closes those it accepted, and ends its endpoints' receivers. */
  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/** Sends messages to pullers, one stream each, round-robin per message. */
export class Pusher {
  readonly #n: native.Pusher
  readonly #streak = new Streak()

  /** @internal */
  constructor(n: native.Pusher) {
    this.#n = n
  }

  /** Dials `address` (with its path) and adds it to the round-robin. */
  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  /** Removes `address`; true if it was connected. */
  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  /** Live connections. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up: `for await (const e of endpoint.events())`. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /**
   * Sends a whole message; resolves once it is queued (it then arrives with no local handle).
   * A small body toward a peer with a lane that has room is queued at once, without a round
   * trip to the I/O thread.
   */
  send(body: Body, meta?: MetadataInit, options: CallOptions = {}): Promise<void> {
    return this.#streak.run(
      options.signal,
      () => (meta == null && this.#n.trySend(body) ? undefined : null),
      () => call(options.signal, (c) => this.#n.send(body, meta, c)),
    )
  }

  /**
   * Sends a whole message only if that can be done now (a small body on an open lane with room):
   * true, sent as `send` would have; false, nothing was sent. Throws what `send` would reject with.
   */
  trySend(body: Body): boolean {
    return this.#n.trySend(body)
  }

  /**
   * Sends each body as its own message, in order, in one call; the first failure rejects, and
   * its `sent` says how many bodies were sent before it.
   */
  sendMany(bodies: Body[], options: CallOptions = {}): Promise<void> {
    const packed = pack(bodies)
    return call(options.signal, (c) =>
      packed === null ? this.#n.sendMany(bodies, c) : this.#n.sendPacked(packed, bodies.length, c),
    )
  }

  /** Opens a streamed message. `signal` governs the whole transfer: aborting it cancels the transfer. */
  async open(meta?: MetadataInit, options: CallOptions = {}): Promise<OutgoingTransfer> {
    const t = await call(options.signal, (c) => this.#n.open(meta, c))
    return new OutgoingTransfer(t, options.signal)
  }

  /** Lets go of the pusher: later calls reject with ERR_WEIDA_CLOSED; pending ones run on. */
  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/** Receives pushed messages at a bound path. `for await (const msg of puller)` runs until it is closed. */
export class Puller implements AsyncIterable<Message> {
  readonly #n: native.Puller
  readonly #inbox: Inbox

  /** @internal */
  constructor(n: native.Puller) {
    this.#n = n
    this.#inbox = new Inbox(n)
  }

  /** The address to dial this puller at. */
  get address(): string {
    return this.#n.address
  }

  /**
   * The next whole message. A message its sender cancelled rejects with ERR_WEIDA_CANCELED, and
   * the puller goes on. Aborting it loses nothing: a message that arrived as it was aborted goes
   * back to the puller for the next receive.
   */
  recv(options: CallOptions = {}): Promise<Message> {
    return this.#inbox.recv(options.signal)
  }

  /** The next message if one is ready now, else null; throws what `recv` would reject with at once. */
  tryRecv(): Message | null {
    return this.#inbox.tryRecv()
  }

  /**
   * Up to `max` whole messages in one call: waits for the first, then takes those ready. An
   * error met after the first rejects the next receive, so nothing is lost.
   */
  recvMany(max: number, options: CallOptions = {}): Promise<Message[]> {
    return this.#inbox.recvMany(max, options.signal)
  }

  /**
   * The next message as a stream, for bodies read in parts: the next one no receive has taken
   * (`recv` takes whole messages in batches, and those it holds are handed out by `recv`).
   */
  async accept(options: CallOptions = {}): Promise<IncomingTransfer> {
    return new IncomingTransfer(await call(options.signal, (c) => this.#n.accept(c)))
  }

  /** Unbinds the path: messages already queued are still handed out, then receiving ends. */
  close(): void {
    this.#n.close()
  }

  /** Messages until the puller is closed; `signal` aborts the wait for the next one. */
  messages(options: CallOptions = {}): AsyncIterableIterator<Message> {
    return new Messages(this.#inbox, options.signal)
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this.messages()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/** Sends requests and awaits replies, round-robin over connected repliers. */
export class Requester {
  readonly #n: native.Requester

  /** @internal */
  constructor(n: native.Requester) {
    this.#n = n
  }

  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up: `for await (const e of endpoint.events())`. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /**
   * Sends `body` and resolves with the reply body. A reply lost after the request was sent
   * whole rejects with {@link Indeterminate}; aborting cancels the exchange (the replier sees Canceled).
   */
  request(body: Body, meta?: MetadataInit, options: CallOptions = {}): Promise<Buffer> {
    return call(options.signal, (c) => this.#n.request(body, meta, c))
  }

  /** {@link Requester.request}, resolving with the whole reply (its metadata too). */
  requestWith(body: Body, meta?: MetadataInit, options: CallOptions = {}): Promise<Message> {
    return call(options.signal, (c) => this.#n.requestWith(body, meta, c) as Promise<Message>)
  }

  /** Opens a streamed request; read the reply concurrently when the request is large. */
  async open(meta?: MetadataInit, options: CallOptions = {}): Promise<[OutgoingTransfer, PendingReply]> {
    const [t, r] = await call(options.signal, (c) => this.#n.open(meta, c))
    return [new OutgoingTransfer(t, options.signal), new PendingReply(r, options.signal)]
  }

  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * A bus member (docs/PATTERNS.md §6.3): `send` reaches every member it connected (one shared
 * copy each; a slow member's copies are dropped and counted), `for await (const m of member)`
 * receives what the others send. A member never receives its own message.
 */
export class Bus implements AsyncIterable<Message> {
  readonly #n: native.Bus
  readonly #inbox: Inbox

  /** @internal */
  constructor(n: native.Bus) {
    this.#n = n
    this.#inbox = new Inbox(n)
  }

  /** The address other members connect to. */
  get address(): string {
    return this.#n.address
  }

  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  /** Members connected and live. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up, for the members this one connected. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /** Queues a copy for every live member connected; resolves with how many. A body above `limits.subscriberBufferBytes` rejects with {@link LimitExceeded}. */
  send(body: Body, meta?: MetadataInit, options: CallOptions = {}): Promise<number> {
    return call(options.signal, (c) => this.#n.send(body, meta, c))
  }

  /** The next message another member sent. */
  recv(options: CallOptions = {}): Promise<Message> {
    return this.#inbox.recv(options.signal)
  }

  /** The next message if one is ready now, else null. */
  tryRecv(): Message | null {
    return this.#inbox.tryRecv()
  }

  /** Up to `max` messages: waits for the first, then takes those ready. */
  recvMany(max: number, options: CallOptions = {}): Promise<Message[]> {
    return this.#inbox.recvMany(max, options.signal)
  }

  /** Copies dropped, by cause (`queueFull`, `byteBudget`, `deadSubscriber`) and their `total`. */
  dropped(): native.Dropped {
    return this.#n.dropped()
  }

  /** Unbinds the path and leaves every member. */
  close(): void {
    this.#n.close()
  }

  /** Messages until the member is closed. */
  messages(options: CallOptions = {}): AsyncIterableIterator<Message> {
    return new Messages(this.#inbox, options.signal)
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this.messages()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * A pusher bound at a path (docs/PATTERNS.md §3.1): the pullers that connect to it share its
 * messages, round-robin per message; one that connects later gets its share from then on.
 */
export class BoundPusher {
  readonly #n: native.BoundPusher

  /** @internal */
  constructor(n: native.BoundPusher) {
    this.#n = n
  }

  /** The address pullers connect to. */
  get address(): string {
    return this.#n.address
  }

  /** Pullers connected now. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Sends a whole message to the next puller; waits for one, bounded by `sendTimeoutMs`. */
  send(body: Body, meta?: MetadataInit, options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.send(body, meta, c))
  }

  /** Opens a streamed message to the next puller. `signal` governs the whole transfer. */
  async open(meta?: MetadataInit, options: CallOptions = {}): Promise<OutgoingTransfer> {
    const t = await call(options.signal, (c) => this.#n.open(meta, c))
    return new OutgoingTransfer(t, options.signal)
  }

  /** Unbinds the path; later sends reject with ERR_WEIDA_CLOSED. */
  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/** A puller that dials bound pushers (docs/PATTERNS.md §3.1) and receives its share of their messages. */
export class DialingPuller implements AsyncIterable<Message> {
  readonly #n: native.DialingPuller
  readonly #inbox: Inbox

  /** @internal */
  constructor(n: native.DialingPuller) {
    this.#n = n
    this.#inbox = new Inbox(n)
  }

  /** Connects to a bound pusher's address and claims a share of its messages. */
  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  /** Leaves a bound pusher; true if it was connected. */
  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  /** Bound pushers connected and live. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up, for the addresses this puller connected. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /** The next message. */
  recv(options: CallOptions = {}): Promise<Message> {
    return this.#inbox.recv(options.signal)
  }

  /** The next message if one is ready now, else null. */
  tryRecv(): Message | null {
    return this.#inbox.tryRecv()
  }

  /** Up to `max` messages: waits for the first, then takes those ready. */
  recvMany(max: number, options: CallOptions = {}): Promise<Message[]> {
    return this.#inbox.recvMany(max, options.signal)
  }

  /** The next message as a stream, read in parts. */
  async accept(options: CallOptions = {}): Promise<IncomingTransfer> {
    return new IncomingTransfer(await call(options.signal, (c) => this.#n.accept(c)))
  }

  /** Leaves every bound pusher; what was received is still handed out, then ERR_WEIDA_CLOSED. */
  close(): void {
    this.#n.close()
  }

  /** Messages until the puller is closed. */
  messages(options: CallOptions = {}): AsyncIterableIterator<Message> {
    return new Messages(this.#inbox, options.signal)
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this.messages()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * One end of a PAIR (docs/PATTERNS.md §6.1), dialling or bound, with the same calls: `send`
 * reaches the other end, `for await (const m of pair)` receives what it sends. A bound pair
 * takes one peer at a time: a second is refused with {@link LimitExceeded}, and the first keeps
 * working.
 */
export class Pair implements AsyncIterable<Message> {
  readonly #n: native.Pair
  readonly #inbox: Inbox

  /** @internal */
  constructor(n: native.Pair) {
    this.#n = n
    this.#inbox = new Inbox(n)
  }

  /** The address a dialling pair connects to (a bound pair's); null when dialling. */
  get address(): string | null {
    return this.#n.address ?? null
  }

  /** Connects a dialling pair to the bound pair at `address` and claims it. */
  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  /** Leaves the bound pair; true if it was connected. */
  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  /** 1 while the other end is there, else 0. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up, for a dialling pair's address (a bound pair's connections are its listener's events). */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /** Sends a whole message to the other end; a bound pair waits for a peer, bounded by `sendTimeoutMs`. */
  send(body: Body, meta?: MetadataInit, options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.send(body, meta, c))
  }

  /** Opens a streamed message to the other end. `signal` governs the whole transfer: aborting it cancels the transfer. */
  async open(meta?: MetadataInit, options: CallOptions = {}): Promise<OutgoingTransfer> {
    const t = await call(options.signal, (c) => this.#n.open(meta, c))
    return new OutgoingTransfer(t, options.signal)
  }

  /** The next message from the other end. */
  recv(options: CallOptions = {}): Promise<Message> {
    return this.#inbox.recv(options.signal)
  }

  /** The next message if one is ready now, else null. */
  tryRecv(): Message | null {
    return this.#inbox.tryRecv()
  }

  /** Up to `max` messages: waits for the first, then takes those ready. */
  recvMany(max: number, options: CallOptions = {}): Promise<Message[]> {
    return this.#inbox.recvMany(max, options.signal)
  }

  /** The next message as a stream, read in parts. */
  async accept(options: CallOptions = {}): Promise<IncomingTransfer> {
    return new IncomingTransfer(await call(options.signal, (c) => this.#n.accept(c)))
  }

  /** A bound pair unbinds its path; a dialling pair leaves its peer. */
  close(): void {
    this.#n.close()
  }

  /** Messages until the pair is closed. */
  messages(options: CallOptions = {}): AsyncIterableIterator<Message> {
    return new Messages(this.#inbox, options.signal)
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this.messages()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * A publisher that dials its subscribers, collectors (docs/PATTERNS.md §4.4): each one
 * connected gets a copy of every message, whatever the topic (the collector filters); a slow
 * one's copies are dropped and counted.
 */
export class DialingPublisher {
  readonly #n: native.DialingPublisher

  /** @internal */
  constructor(n: native.DialingPublisher) {
    this.#n = n
  }

  /** Dials a collector's address (with its path). */
  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  /** Leaves a collector; true if it was connected. */
  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  /** Collectors connected and live. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up, for the collectors this one connected. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /**
   * Queues a copy for every live collector connected; returns how many. Never waits. Throws
   * {@link LimitExceeded} for a body above `limits.subscriberBufferBytes`, {@link InvalidFilter}
   * for a malformed topic.
   */
  publish(topic: string, body: Body, meta?: MetadataInit): number {
    return this.#n.publish(topic, body, meta)
  }

  /** Copies dropped, by cause (`queueFull`, `byteBudget`, `deadSubscriber`) and their `total`. */
  dropped(): native.Dropped {
    return this.#n.dropped()
  }

  /** Leaves every collector. */
  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * A subscriber bound at a path that dialling publishers feed, a collector (docs/PATTERNS.md
 * §4.4). It keeps what its filters select when it receives it, and counts the rest in
 * `discarded`; with no filter it keeps nothing.
 */
export class BoundSubscriber implements AsyncIterable<Message> {
  readonly #n: native.BoundSubscriber
  readonly #inbox: Inbox

  /** @internal */
  constructor(n: native.BoundSubscriber) {
    this.#n = n
    this.#inbox = new Inbox(n)
  }

  /** The address publishers dial. */
  get address(): string {
    return this.#n.address
  }

  /** Adds `filter` here, at once. Throws {@link InvalidFilter}. */
  subscribe(filter: string): void {
    this.#n.subscribe(filter)
  }

  /** Removes one entry of `filter`; false if it was not held. */
  unsubscribe(filter: string): boolean {
    return this.#n.unsubscribe(filter)
  }

  /** The filters held, in the order given. */
  get filters(): string[] {
    return this.#n.filters
  }

  /** Messages that arrived and that no filter selected. */
  get discarded(): bigint {
    return this.#n.discarded
  }

  /** The next selected message. */
  recv(options: CallOptions = {}): Promise<Message> {
    return this.#inbox.recv(options.signal)
  }

  /** The next selected message if one is ready now, else null. */
  tryRecv(): Message | null {
    return this.#inbox.tryRecv()
  }

  /** Up to `max` selected messages: waits for the first, then takes those ready. */
  recvMany(max: number, options: CallOptions = {}): Promise<Message[]> {
    return this.#inbox.recvMany(max, options.signal)
  }

  /** Unbinds the path: what is queued is still received, then `Closed`. */
  close(): void {
    this.#n.close()
  }

  /** Messages until the collector is closed. */
  messages(options: CallOptions = {}): AsyncIterableIterator<Message> {
    return new Messages(this.#inbox, options.signal)
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this.messages()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/** Asks every connected respondent the same question (docs/PATTERNS.md §6). */
export class Surveyor {
  readonly #n: native.Surveyor

  /** @internal */
  constructor(n: native.Surveyor) {
    this.#n = n
  }

  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  /** Live connections: the respondents the next survey asks. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up: `for await (const e of endpoint.events())`. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /**
   * Asks every live respondent `body`; resolves with the run of their answers once each was
   * asked or `deadlineMs` passed. No respondent is an empty run, never NotConnected.
   */
  async survey(body: Body, deadlineMs: number, meta?: MetadataInit, options: CallOptions = {}): Promise<SurveyRun> {
    return new SurveyRun(await call(options.signal, (c) => this.#n.survey(body, deadlineMs, meta, c)))
  }

  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * A survey's answers until its deadline: `for await (const answer of run)`, each a
 * {@link Message} or the {@link WeidaError} of a respondent that refused or failed (yielded,
 * not thrown: one respondent's failure ends nothing). A run garbage-collected ends the
 * exchanges still open.
 */
export class SurveyRun implements AsyncIterable<Message | WeidaError> {
  readonly #n: native.SurveyRun

  /** @internal */
  constructor(n: native.SurveyRun) {
    this.#n = n
  }

  /** The next answer, or null once every respondent answered or the deadline passed. */
  async answer(options: CallOptions = {}): Promise<Message | WeidaError | null> {
    return (await call(options.signal, (c) => this.#n.next(c))) as Message | WeidaError | null
  }

  /** How many respondents were asked. */
  get respondents(): number {
    return this.#n.respondents
  }

  /** Answers that arrived after the deadline: counted, not delivered. */
  get late(): number {
    return this.#n.late
  }

  /** The deadline has passed. */
  get expired(): boolean {
    return this.#n.expired
  }

  /** Resolves once every asked respondent's exchange has ended (answered, failed, or late and counted in {@link SurveyRun.late}). */
  settled(options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.settled(c))
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Message | WeidaError, void, undefined> {
    for (;;) {
      const a = await this.answer()
      if (a === null) return
      yield a
    }
  }
}

/** Answers requests at a bound path. `for await (const ex of replier)` runs until it is closed. */
export class Replier implements AsyncIterable<Exchange> {
  readonly #n: native.Replier

  /** @internal */
  constructor(n: native.Replier) {
    this.#n = n
  }

  get address(): string {
    return this.#n.address
  }

  async accept(options: CallOptions = {}): Promise<Exchange> {
    return new Exchange(await call(options.signal, (c) => this.#n.accept(c)))
  }

  close(): void {
    this.#n.close()
  }

  exchanges(options: CallOptions = {}): AsyncGenerator<Exchange, void, undefined> {
    return until(() => this.accept(options))
  }

  [Symbol.asyncIterator](): AsyncGenerator<Exchange, void, undefined> {
    return this.exchanges()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/** Opens raw streams to acceptors: one-way transfers and exchanges. */
export class Peer {
  readonly #n: native.Peer

  /** @internal */
  constructor(n: native.Peer) {
    this.#n = n
  }

  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up: `for await (const e of endpoint.events())`. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /** Opens a one-way stream. `signal` governs the whole transfer. */
  async open(meta?: MetadataInit, options: CallOptions = {}): Promise<OutgoingTransfer> {
    const t = await call(options.signal, (c) => this.#n.open(meta, c))
    return new OutgoingTransfer(t, options.signal)
  }

  /** Opens an exchange: a request stream and its reply. */
  async exchange(meta?: MetadataInit, options: CallOptions = {}): Promise<[OutgoingTransfer, PendingReply]> {
    const [t, r] = await call(options.signal, (c) => this.#n.exchange(meta, c))
    return [new OutgoingTransfer(t, options.signal), new PendingReply(r, options.signal)]
  }

  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/** An incoming stream or exchange, as an {@link Acceptor} hands them out (tell them apart by `kind`). */
export type Incoming = IncomingTransfer | Exchange

/** Receives both stream kinds at a bound path. */
export class Acceptor implements AsyncIterable<Incoming> {
  readonly #n: native.Acceptor

  /** @internal */
  constructor(n: native.Acceptor) {
    this.#n = n
  }

  get address(): string {
    return this.#n.address
  }

  async accept(options: CallOptions = {}): Promise<Incoming> {
    const i = await call(options.signal, (c) => this.#n.accept(c))
    return i instanceof native.Exchange ? new Exchange(i) : new IncomingTransfer(i)
  }

  close(): void {
    this.#n.close()
  }

  incoming(options: CallOptions = {}): AsyncGenerator<Incoming, void, undefined> {
    return until(() => this.accept(options))
  }

  [Symbol.asyncIterator](): AsyncGenerator<Incoming, void, undefined> {
    return this.incoming()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * Publishes messages by topic to the subscribers whose filters select it. `publish` never
 * waits: a subscriber that cannot take a copy loses it, counted by cause in `dropped()`.
 */
export class Publisher {
  readonly #n: native.Publisher

  /** @internal */
  constructor(n: native.Publisher) {
    this.#n = n
  }

  /** The address subscribers dial. */
  get address(): string {
    return this.#n.address
  }

  /**
   * Queues `body` for every subscriber whose filters select `topic`; returns how many copies
   * were queued. Throws {@link LimitExceeded} for a body above `limits.subscriberBufferBytes`
   * (stream it with {@link Publisher.open}) and {@link InvalidFilter} for a malformed topic.
   */
  publish(topic: string, body: Body): number {
    return this.#n.publish(topic, body)
  }

  /** Opens a streamed message to the subscribers whose filters select `topic` now. */
  open(topic: string): FanOut {
    return new FanOut(this.#n.open(topic))
  }

  /** Copies dropped since the publisher was bound, by cause (bigint each, and `total`). */
  dropped(): native.Dropped {
    return this.#n.dropped()
  }

  /** Copies of `topic` dropped, by cause. */
  droppedOn(topic: string): native.Dropped {
    return this.#n.droppedOn(topic)
  }

  /** Subscribers connected now (with at least one filter). */
  get subscriberCount(): number {
    return this.#n.subscriberCount
  }

  /** @internal Resolves once `subscriberCount === n`, the copies of one that went counted. */
  _untilSubscribers(n: number): Promise<void> {
    return this.#n._untilSubscribers(n)
  }

  /** Unbinds the path and ends every subscription. */
  close(): void {
    this.#n.close()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * A message streamed to every subscriber matched at {@link Publisher.open}: `write` chunks
 * (each at most `limits.subscriberBufferBytes`), then `finish`, or `cancel` (subscribers never
 * see part of a message). Garbage-collected unfinished, it is cancelled.
 */
export class FanOut {
  readonly #n: native.FanOut

  /** @internal */
  constructor(n: native.FanOut) {
    this.#n = n
  }

  /** Copies still attached (not dropped). */
  get copies(): number {
    return this.#n.copies
  }

  /**
   * Hands `chunk` to every attached copy, first waiting up to `limits.fanoutWaitMs` for a slow
   * subscriber's backlog to make room; a copy still full then is dropped. Resolves with the
   * copies still attached. Aborting it cancels the message, as {@link FanOut.cancel} does (its
   * caller cannot know whether the chunk went), so no subscriber gets it with a chunk missing.
   */
  write(chunk: Body, options: CallOptions = {}): Promise<number> {
    return call(options.signal, (c) => this.#n.write(chunk, c))
  }

  /** {@link FanOut.write} without waiting: a copy with no room for `chunk` is dropped at once. */
  writeNow(chunk: Body): number {
    return this.#n.writeNow(chunk)
  }

  /** Ends the message for every attached copy; returns how many were still attached. */
  finish(): number {
    return this.#n.finish()
  }

  /** Cancels every copy: subscribers discard what they received of it. A no-op once finished. */
  cancel(): void {
    this.#n.cancel()
  }

  /** Cancels the message unless it was finished. */
  async [asyncDispose](): Promise<void> {
    this.cancel()
  }
}

/**
 * Receives the messages of the publishers it connects to whose topics its filters select
 * (segments separated by `.`, `*` one whole segment, a trailing `#` any number).
 * `for await (const msg of sub)` runs until it is closed.
 */
export class Subscriber implements AsyncIterable<Message> {
  readonly #n: native.Subscriber
  readonly #inbox: Inbox

  /** @internal */
  constructor(n: native.Subscriber) {
    this.#n = n
    this.#inbox = new Inbox(n)
  }

  /** Dials the publisher at `address` (with its path) and installs every filter held there. */
  connect(address: string, options: ConnectOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.connect(address, options.wait ?? true, c))
  }

  /** Closes the connection to `address`; true if it was connected. */
  disconnect(address: string): boolean {
    return this.#n.disconnect(address)
  }

  /** Live connections. */
  get peerCount(): number {
    return this.#n.peerCount
  }

  /** Connected, lost, retrying, gave up: `for await (const e of endpoint.events())`. */
  events(): PeerEvents {
    return new PeerEvents(this.#n.events())
  }

  /**
   * Adds `filter`; resolves once every connected publisher installed it, so a message published
   * after that is selected. A malformed filter rejects with {@link InvalidFilter}, a publisher's
   * refusal with its error (the filter is then installed nowhere). Aborting it may leave the
   * filter installed at some publishers: {@link Subscriber.unsubscribe} removes it.
   */
  subscribe(filter: string, options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.subscribe(filter, c))
  }

  /** Removes one entry of `filter`; false if it was not held. Resolves once every connected publisher removed it. */
  unsubscribe(filter: string, options: CallOptions = {}): Promise<boolean> {
    return call(options.signal, (c) => this.#n.unsubscribe(filter, c))
  }

  /** The filters held, in the order given. */
  get filters(): string[] {
    return this.#n.filters
  }

  /**
   * The next message: `meta.topic`, and under a runtime's `ordering` `meta.sequence` and
   * `meta.gap` (copies missed before it). ERR_WEIDA_NOT_CONNECTED before any connect,
   * ERR_WEIDA_CONNECTION_LOST once every connection ended and nothing is queued. Aborting it
   * loses nothing: a message that arrived as it was aborted goes back for the next receive.
   */
  recv(options: CallOptions = {}): Promise<Message> {
    return this.#inbox.recv(options.signal)
  }

  /** The next message if one is ready now, else null; throws what `recv` would reject with at once. */
  tryRecv(): Message | null {
    return this.#inbox.tryRecv()
  }

  /** Up to `max` messages in one call: waits for the first, then takes those queued. */
  recvMany(max: number, options: CallOptions = {}): Promise<Message[]> {
    return this.#inbox.recvMany(max, options.signal)
  }

  /** Messages received and waiting for `recv`. */
  get queued(): number {
    return this.#n.queued + this.#inbox.size
  }

  /** @internal Resolves once `queued >= n` (a test's event to await instead of polling). */
  _untilQueued(n: number): Promise<void> {
    return this.#n._untilQueued(Math.max(0, n - this.#inbox.size))
  }

  /** Closes every connection: receiving returns what is queued, then ends (ERR_WEIDA_CLOSED). */
  close(): void {
    this.#n.close()
  }

  /** Messages until the subscriber is closed; `signal` aborts the wait for the next one. */
  messages(options: CallOptions = {}): AsyncIterableIterator<Message> {
    return new Messages(this.#inbox, options.signal)
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this.messages()
  }

  async [asyncDispose](): Promise<void> {
    this.close()
  }
}

/**
 * An outgoing stream: `write` at your own pace, then `finish` (a commitment: the payload then
 * arrives with no local handle) or `cancel` (the reader sees ERR_WEIDA_CANCELED, never a
 * complete payload). The signal it was opened with cancels it; an aborted write cancels it too.
 * A transfer garbage-collected unfinished is cancelled.
 */
export class OutgoingTransfer {
  readonly #n: native.OutgoingTransfer
  readonly #signal: AbortSignal | undefined
  readonly #onAbort: () => void
  #writable: WritableStream<Body> | undefined

  /** @internal */
  constructor(n: native.OutgoingTransfer, signal?: AbortSignal) {
    this.#n = n
    this.#signal = signal
    this.#onAbort = () => n.cancel()
    signal?.addEventListener('abort', this.#onAbort, { once: true })
  }

  #release(): void {
    this.#signal?.removeEventListener('abort', this.#onAbort)
  }

  /** Writes all of `body`; waits while the peer's window is full (backpressure). */
  write(body: Body, options: CallOptions = {}): Promise<void> {
    return call(options.signal ?? this.#signal, (c) => this.#n.write(body, c))
  }

  /** Writes several buffers in order, as one write where the transport allows. */
  writeChunks(chunks: Body[], options: CallOptions = {}): Promise<void> {
    return call(options.signal ?? this.#signal, (c) => this.#n.writeChunks(chunks, c))
  }

  /** Queues the FIN; the {@link Delivery} reports the transport receipt and is free to ignore. */
  async finish(options: CallOptions = {}): Promise<Delivery> {
    try {
      return new Delivery(await call(options.signal ?? this.#signal, (c) => this.#n.finish(c)))
    } finally {
      this.#release()
    }
  }

  /** Abandons the transfer: the reader sees ERR_WEIDA_CANCELED; pending writes reject with it. */
  cancel(): void {
    this.#release()
    this.#n.cancel()
  }

  /** The transfer as a Web WritableStream: close() finishes it, abort() cancels it. */
  get writable(): WritableStream<Body> {
    this.#writable ??= new WritableStream<Body>({
      write: (chunk) => this.write(chunk),
      close: async () => {
        await this.finish()
      },
      abort: () => this.cancel(),
    })
    return this.#writable
  }

  /** Cancels the transfer unless it was finished. */
  async [asyncDispose](): Promise<void> {
    this.cancel()
  }
}

/** The transport receipt of a finished transfer. */
export class Delivery {
  readonly #n: native.Delivery

  /** @internal */
  constructor(n: native.Delivery) {
    this.#n = n
  }

  /** Resolves when the peer's transport holds every byte and the FIN (not when its application read it). */
  delivered(options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.delivered(c))
  }
}

/** An incoming one-way stream (or a reply's body): read it in chunks, iterate it, or collect it. */
export class IncomingTransfer implements AsyncIterable<Buffer> {
  readonly kind = 'stream' as const
  readonly #n: native.IncomingTransfer
  #meta: IncomingMeta | undefined
  #readable: ReadableStream<Buffer> | undefined

  /** @internal */
  constructor(n: native.IncomingTransfer) {
    this.#n = n
  }

  /** What arrived with the stream. */
  get meta(): IncomingMeta {
    this.#meta ??= this.#n.meta
    return this.#meta
  }

  /** The next chunk, `null` after the writer's FIN. A cancelled stream rejects (ERR_WEIDA_CANCELED), never ends early. */
  readChunk(options: CallOptions = {}): Promise<Buffer | null> {
    return call(options.signal, (c) => this.#n.readChunk(c))
  }

  /** The whole body, refusing one above `max` bytes (ERR_WEIDA_LIMIT_EXCEEDED). */
  collect(max: number, options: CallOptions = {}): Promise<Buffer> {
    return call(options.signal, (c) => this.#n.collect(max, c))
  }

  /** The chunks until the writer's FIN. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer, void, undefined> {
    for (let chunk = await this.readChunk(); chunk !== null; chunk = await this.readChunk()) yield chunk
  }

  /** The transfer as a Web ReadableStream of its chunks. */
  get readable(): ReadableStream<Buffer> {
    this.#readable ??= new ReadableStream<Buffer>({
      pull: async (controller) => {
        const chunk = await this.readChunk()
        if (chunk === null) controller.close()
        else controller.enqueue(chunk)
      },
    })
    return this.#readable
  }
}

/** An incoming exchange: the request, and the reply this side owes. Unanswered, the requester sees ERR_WEIDA_CANCELED. */
export class Exchange implements AsyncIterable<Buffer> {
  readonly kind = 'exchange' as const
  readonly #n: native.Exchange
  #meta: IncomingMeta | undefined

  /** @internal */
  constructor(n: native.Exchange) {
    this.#n = n
  }

  /** What arrived with the request. */
  get meta(): IncomingMeta {
    this.#meta ??= this.#n.meta
    return this.#meta
  }

  /** The request's next chunk, `null` at its end (the reply may be written before it ends). */
  readChunk(options: CallOptions = {}): Promise<Buffer | null> {
    return call(options.signal, (c) => this.#n.readChunk(c))
  }

  /** The whole request body, bounded by `limits.maxCollectedBody`. */
  takeBody(options: CallOptions = {}): Promise<Buffer> {
    return call(options.signal, (c) => this.#n.takeBody(c))
  }

  /** The request's chunks until its end. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer, void, undefined> {
    for (let chunk = await this.readChunk(); chunk !== null; chunk = await this.readChunk()) yield chunk
  }

  /** Replies with `body` and metadata, and finishes the reply. */
  reply(body: Body, meta?: MetadataInit, options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.reply(body, meta, c))
  }

  /** Opens the reply as a stream, for a reply written in parts. */
  async openReply(meta?: MetadataInit, options: CallOptions = {}): Promise<OutgoingTransfer> {
    return new OutgoingTransfer(await call(options.signal, (c) => this.#n.openReply(meta, c)), options.signal)
  }

  /** Answers REJECTED: the requester's call rejects with {@link Rejected} and this reason. */
  reject(reason: string, options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.reject(reason, c))
  }

  /** Abandons the exchange unanswered: the requester sees ERR_WEIDA_CANCELED. */
  cancel(): void {
    this.#n.cancel()
  }

  /** Answers with an error code (`'REJECTED'`, `'UNSUPPORTED'`, `'LIMIT_EXCEEDED'`, ...) and a message. */
  fail(code: string, message: string, options: CallOptions = {}): Promise<void> {
    return call(options.signal, (c) => this.#n.fail(code, message, c))
  }
}

/** The reply half of an exchange this side opened. */
export class PendingReply {
  readonly #n: native.PendingReply
  readonly #signal: AbortSignal | undefined

  /** @internal */
  constructor(n: native.PendingReply, signal?: AbortSignal) {
    this.#n = n
    this.#signal = signal
  }

  /** The reply's start: its metadata and a streamed body; the peer's error rejects here. */
  async reply(options: CallOptions = {}): Promise<IncomingTransfer> {
    return new IncomingTransfer(await call(options.signal ?? this.#signal, (c) => this.#n.reply(c)))
  }

  /** The whole reply, bounded by `limits.maxCollectedBody`. */
  body(options: CallOptions = {}): Promise<Message> {
    return call(options.signal ?? this.#signal, (c) => this.#n.body(c) as Promise<Message>)
  }
}

// Services: handlers on endpoints (docs/SERVICES.md). What each outcome does is the core's
// (weida-ffi's service module); here a handler's Promise is awaited and what it resolved with
// or threw is passed back.

export type { ServiceCounters, Stopped } from '../native.cjs'

/** What a handler says happened to a message: returned or thrown, either is the same. */
export class Outcome extends Error {
  readonly outcome: 'ack' | 'retry' | 'retry_after' | 'drop'
  readonly delay: number | undefined

  constructor(outcome: 'ack' | 'retry' | 'retry_after' | 'drop', delay?: number) {
    super(delay === undefined ? outcome : `${outcome}(${delay})`)
    this.name = 'Outcome'
    this.outcome = outcome
    this.delay = delay
  }
}

/** Processed; nothing is completed on a brokerless hop (`Unsupported` is logged once). */
export const ack = (): Outcome => new Outcome('ack')
/** Gone, counted dropped. */
export const drop = (): Outcome => new Outcome('drop')
/** With no `maxAttempts` or `deadLetter`: gone (at most once); with one, a copy at once. */
export const retry = (): Outcome => new Outcome('retry')
/** A copy after `seconds`, waited in this process: a crash before then loses it. */
export const retryAfter = (seconds: number): Outcome => new Outcome('retry_after', seconds)

/** A registration's settings: `retryTo` is required for `pulling`, `subscribing` and `replying`. */
export interface ServiceSettings {
  concurrency?: number
  maxAttempts?: number
  deadLetter?: string
  retryTo?: string
}

/** What a handler's result names: an outcome's name, delay and body; undefined if none. */
function named(result: unknown): [string, number | undefined, Body | undefined] | undefined {
  if (result instanceof Outcome) return [result.outcome, result.delay, undefined]
  if (result === undefined || result === null) return ['done', undefined, undefined]
  if (typeof result === 'string' || result instanceof Uint8Array) return ['reply', undefined, result]
  return undefined
}

const unnamed = (result: unknown): string =>
  `the handler resolved with ${typeof result}, not undefined, bytes or an outcome`

/** A thrown value as a failure's reason. */
const reason = (e: unknown): string => (e instanceof Error ? `${e.name}: ${e.message}` : String(e))

/** One message handed to a handler. */
export class Job {
  readonly #n: native.Job

  /** @internal */
  constructor(n: native.Job) {
    this.#n = n
  }

  get message(): Message {
    return this.#n.message() as Message
  }

  /** 1 for a first delivery; n for the copy a retry made of attempt n - 1. */
  get attempt(): number {
    return this.#n.attempt
  }

  /** Throws `Unsupported`, always: a brokerless hop has nothing to acknowledge. */
  ack(): void {
    this.#n.ack()
  }

  /** Throws `Unsupported`, always: a brokerless hop has nothing to discard. */
  discard(): void {
    this.#n.discard()
  }

  /**
   * Gives the outcome (the pull API; {@link Registration.serve} does this for a handler):
   * undefined (done), a string or bytes (a Rep path's reply) or an {@link Outcome}. Throws
   * `Closed` if it was given already.
   */
  finish(result: unknown): void {
    const n = named(result)
    if (n) this.#n.finish(...n)
    else this.#n.fail(unnamed(result))
  }

  /** The handler threw `e`: an {@link Outcome} is that outcome, anything else a failure. */
  fail(e: unknown): void {
    if (e instanceof Outcome) this.finish(e)
    else this.#n.fail(reason(e))
  }

  /**
   * What the handler resolved with, for {@link Registration.serve}: an outcome the core
   * refuses is a failure, and a job the handler finished itself is left as it is (weida-ffi's
   * `Job::conclude`). Never throws; the registration's warnings since.
   * @internal
   */
  _concluded(result: unknown): string[] {
    const n = named(result)
    return n ? this.#n.conclude(...n) : this.#n.concludeFailed(unnamed(result))
  }

  /** What the handler threw, for {@link Registration.serve}, as `_concluded`. @internal */
  _thrown(e: unknown): string[] {
    return e instanceof Outcome ? this._concluded(e) : this.#n.concludeFailed(reason(e))
  }
}

/** Options of {@link Registration.serve}. */
export interface ServeOptions {
  /** Where the runtime's warnings go (default: `process.emitWarning` as `WeidaServiceWarning`). */
  onWarning?: (warning: string) => void
}

/** A handler: resolves with undefined, a reply (Rep) or an outcome, or throws. */
export type Handler = (job: Job) => Promise<Outcome | Body | undefined | void>

/** One endpoint read for a handler. */
export class Registration {
  readonly #n: native.Registration

  /** @internal */
  constructor(n: native.Registration) {
    this.#n = n
  }

  /** The next job; rejects `Closed` once stopping. Cancel-safe. */
  async next(options: CallOptions = {}): Promise<Job> {
    return new Job(await call(options.signal, (c) => this.#n.next(c)))
  }

  counters(): native.ServiceCounters {
    return this.#n.counters()
  }

  /** A bound queue's or fan-out's own address, else null. */
  get address(): string | null {
    return this.#n.address ?? null
  }

  /** Where copies go. */
  get retryAddress(): string {
    return this.#n.retryAddress
  }

  /**
   * The warnings logged since the last call, oldest first (the newest 256 are kept): a failure
   * with its peer, path, attempt and reason; `Unsupported` once; a message dropped at its
   * limit; a copy not sent. {@link Registration.serve} hands them to its `onWarning`.
   */
  takeWarnings(): string[] {
    return this.#n.takeWarnings()
  }

  /** Takes nothing more, waits up to `deadline` seconds for handlers in flight, then closes. */
  stop(deadline = 30): Promise<native.Stopped> {
    return this.#n.stop(deadline)
  }

  /**
   * Runs `handler` on every job until the registration stops (its `concurrency` bounds the
   * handlers at once); resolves once stopping and the handlers it started are done. Each job
   * is finished with what its handler resolved with or failed with what it threw; an outcome
   * the core refuses (a negative delay) is a failure, and a job the handler finished itself
   * is left as it is.
   */
  async serve(handler: Handler, options: ServeOptions = {}): Promise<void> {
    const onWarning = options.onWarning ?? ((w: string) => process.emitWarning(w, 'WeidaServiceWarning'))
    const log = (warnings: string[]): void => {
      for (const w of warnings) onWarning(`${this.address ?? this.retryAddress}: ${w}`)
    }
    const running = new Set<Promise<void>>()
    for (;;) {
      let job: Job
      try {
        job = await this.next()
      } catch (e) {
        if (e instanceof Closed) break
        if (e instanceof WeidaError) continue // one message the endpoint could not take whole
        throw e
      }
      const p = handler(job)
        .then(
          (r) => job._concluded(r),
          (e: unknown) => job._thrown(e),
        )
        .then(log)
      running.add(p)
      void p.finally(() => running.delete(p))
    }
    await Promise.allSettled(running)
    log(this.takeWarnings())
  }
}

/** Registrations of handlers on one runtime's endpoints. */
export class Service {
  readonly #n: native.Service

  constructor(runtime: Runtime) {
    this.#n = new native.Service(runtime._native)
  }

  /** A queue: binds a Pull path; copies go to it. */
  async queue(listener: Listener, path: string, settings: ServiceSettings = {}): Promise<Registration> {
    return new Registration(await this.#n.queue(listener._native, path, settings))
  }

  /** A fan-out: binds a Sub path holding `filters`; copies come back to it alone. */
  async fanOut(listener: Listener, path: string, filters: string[], settings: ServiceSettings = {}): Promise<Registration> {
    return new Registration(await this.#n.fanOut(listener._native, path, filters, settings))
  }

  /** A puller dialling a bound pusher; `retryTo` is required. */
  async pulling(address: string, settings: ServiceSettings = {}): Promise<Registration> {
    return new Registration(await this.#n.pulling(address, settings))
  }

  /** A subscriber dialling a bound publisher, holding `filters`; `retryTo` is required. */
  async subscribing(address: string, filters: string[], settings: ServiceSettings = {}): Promise<Registration> {
    return new Registration(await this.#n.subscribing(address, filters, settings))
  }

  /** A Rep path: a string or bytes resolved is the reply; `retryTo` is required. */
  async replying(listener: Listener, path: string, settings: ServiceSettings = {}): Promise<Registration> {
    return new Registration(await this.#n.replying(listener._native, path, settings))
  }
}
