// @ts-check
// The Node agent of the conformance suite (conformance/README.md, "The agent protocol"): reads
// one JSON request per line on stdin, carries it out with the package's public API (imported
// as a user imports it: `from 'weida'`), and writes one JSON response per line on stdout, with
// events for background work in between. Requests run concurrently: a request awaiting a reply
// does not hold up the next line. The reference is the Rust agent (conformance/rust-agent/src);
// this file follows it op by op.
//
//     node node/conformance/agent.mjs      (from the repository root, after the package's build)

import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { BoundPusher, Bus, DialingPublisher, DialingPuller, Exchange, Identity, Pair, Peer, Pusher, Requester, Runtime, Service, Subscriber, Surveyor, Trust, WeidaError, retry } from 'weida'

const VERSION = /** @type {{version: string}} */ (createRequire(import.meta.url)('weida/package.json')).version

// ---------------------------------------------------------------------------------------------
// The protocol's vocabulary (rust-agent/src/protocol.rs)

/** A request this agent cannot carry out: answered AGENT_BAD_REQUEST, which no scenario expects. */
class BadRequest extends Error {}

/** One line on stdout. Writes to a pipe are synchronous on Linux, so lines never interleave. */
function line(/** @type {object} */ v) {
  process.stdout.write(JSON.stringify(v) + '\n')
}

/** An event about the endpoint `handle`: `{"event": name, "handle": handle, ...fields}`. */
function event(/** @type {string} */ name, /** @type {string} */ handle, fields = {}) {
  line({ event: name, handle, ...fields })
}

function eventError(/** @type {string} */ name, /** @type {string} */ handle, /** @type {unknown} */ e) {
  event(name, handle, { error: errorJson(e) })
}

const CODE_PREFIX = 'ERR_WEIDA_'

/**
 * `{code, message, definite, ...}` with the fields docs/BINDINGS.md gives the code, read off
 * the error the binding raised (never off its message). Anything that is not a WeidaError is
 * this agent's failure to carry the request out.
 * @param {unknown} e
 */
function errorJson(e) {
  if (e instanceof BadRequest) return { code: 'AGENT_BAD_REQUEST', message: e.message }
  if (!(e instanceof WeidaError) || typeof e.code !== 'string' || !e.code.startsWith(CODE_PREFIX)) {
    const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
    return { code: 'AGENT_BAD_REQUEST', message: `not a weida error: ${what}` }
  }
  const code = e.code.slice(CODE_PREFIX.length)
  /** @type {Record<string, unknown>} */
  const m = { code, message: e.message, definite: e.definite }
  const err = /** @type {any} */ (e)
  if (code === 'CONNECTION_LOST' || code === 'INDETERMINATE') m.loss_cause = err.lossCause
  if (code === 'UNKNOWN_ENDPOINT') m.path = err.path
  if (code === 'UNTRUSTED') {
    m.fingerprint = err.fingerprint
    m.expected = err.expected ?? null
  }
  return m
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The text of `b` if it is UTF-8, else null. @param {Uint8Array} b */
function text(b) {
  try {
    return utf8.decode(b)
  } catch {
    return null
  }
}

/** @param {import('weida').PeerInfo | null | undefined} p */
function peerJson(p) {
  if (p == null) return null
  if (p.kind === 'key') return { kind: 'key', fingerprint: p.fingerprint }
  if (p.kind === 'local') return { kind: 'local', uid: p.uid, gid: p.gid, pid: p.pid }
  return { kind: 'other', text: JSON.stringify(p) }
}

/** Metadata out: text values as strings, others as `{"hex": ...}`; the last of repeated keys. @param {Array<[string, Buffer]>} m */
function metadataJson(m) {
  /** @type {Record<string, unknown>} */
  const out = {}
  for (const [k, v] of m) {
    const t = text(v)
    out[k] = t === null ? { hex: Buffer.from(v).toString('hex') } : t
  }
  return out
}

/** Metadata as the API takes it again (a reply echoes the request's). @param {Array<[string, Buffer]>} m */
function metadataInit(m) {
  return Object.fromEntries(m)
}

/** Metadata in: `{"key": "text value", ...}`. @param {Record<string, unknown>} args */
function metadataArg(args) {
  const m = args.metadata
  if (m === undefined || m === null) return {}
  if (typeof m !== 'object' || Array.isArray(m)) throw new BadRequest('metadata is an object')
  /** @type {Record<string, string>} */
  const out = {}
  for (const [k, v] of Object.entries(m)) {
    if (typeof v !== 'string') throw new BadRequest('metadata values are strings')
    out[k] = v
  }
  return out
}

/** The fields of an event about an incoming stream. @param {import('weida').IncomingMeta} meta */
function metaFields(meta) {
  return { path: meta.path, metadata: metadataJson(meta.metadata), peer: peerJson(meta.peer) }
}

/** A whole message as an op result. @param {import('weida').Message} m */
function messageJson(m) {
  return { ...metaFields(m.meta), body: summary(m.body) }
}

/** A bigint the protocol carries as a JSON number, or null. @param {bigint | null} v */
function numberOrNull(v) {
  return v === null ? null : Number(v)
}

/** A Pub/Sub copy as an op result or event: a message's fields with its topic, sequence and gap (null when absent). @param {import('weida').Message} m */
function copyJson(m) {
  return { ...messageJson(m), topic: m.meta.topic, sequence: numberOrNull(m.meta.sequence), gap: numberOrNull(m.meta.gap) }
}

/** @param {Record<string, unknown>} args @param {string} key */
function strArg(args, key) {
  const v = args[key]
  if (typeof v !== 'string') throw new BadRequest(`missing string argument ${JSON.stringify(key)}`)
  return v
}

/** @param {Record<string, unknown>} args @param {string} key @returns {number | undefined} */
function uintArg(args, key) {
  const v = args[key]
  if (v === undefined || v === null) return undefined
  if (!Number.isSafeInteger(v) || /** @type {number} */ (v) < 0) {
    throw new BadRequest(`argument ${JSON.stringify(key)} is a non-negative integer`)
  }
  return /** @type {number} */ (v)
}

/** @param {Record<string, unknown>} args @param {string} key @param {boolean} dflt */
function boolArg(args, key, dflt) {
  const v = args[key]
  if (v === undefined || v === null) return dflt
  if (typeof v !== 'boolean') throw new BadRequest(`argument ${JSON.stringify(key)} is a boolean`)
  return v
}

// ---------------------------------------------------------------------------------------------
// Bodies (rust-agent/src/body.rs): made from a spec on the sending side, reported as a summary

/** The longest body whose text a summary carries. */
const TEXT_IN_SUMMARY = 1024

/**
 * The bytes a body spec names: `{"text": s}`, `{"hex": s}` or
 * `{"size": n, "pattern": "seq"|"zero", "offset": k}` (seq: byte i is (offset + i) mod 251).
 * @param {unknown} spec
 */
function makeBody(spec) {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new BadRequest('a body is an object')
  const s = /** @type {Record<string, unknown>} */ (spec)
  if ('text' in s) {
    if (typeof s.text !== 'string') throw new BadRequest('body.text is a string')
    return Buffer.from(s.text, 'utf8')
  }
  if ('hex' in s) {
    if (typeof s.hex !== 'string') throw new BadRequest('body.hex is a string')
    if (s.hex.length % 2 !== 0) throw new BadRequest('body.hex has an odd length')
    if (!/^[0-9a-fA-F]*$/.test(s.hex)) throw new BadRequest('body.hex is not hex')
    return Buffer.from(s.hex, 'hex')
  }
  const size = uintArg(s, 'size')
  if (size === undefined) throw new BadRequest('a body has text, hex, or size and pattern')
  const offset = uintArg(s, 'offset') ?? 0
  const pattern = s.pattern ?? 'seq'
  if (pattern === 'zero') return Buffer.alloc(size)
  if (pattern !== 'seq') throw new BadRequest(`unknown body pattern ${JSON.stringify(pattern)}`)
  // One period of the pattern from the offset, repeated by fill.
  const period = Buffer.alloc(251)
  for (let i = 0; i < 251; i++) period[i] = (offset + i) % 251
  return size === 0 ? Buffer.alloc(0) : Buffer.alloc(size, period)
}

/** How a received body is reported: its size, its SHA-256 and, when short UTF-8, its text. */
class Tally {
  #hash = createHash('sha256')
  #size = 0
  /** @type {Buffer[]} */
  #head = []
  #headLen = 0

  /** @param {Uint8Array} chunk */
  add(chunk) {
    this.#hash.update(chunk)
    this.#size += chunk.length
    if (this.#headLen <= TEXT_IN_SUMMARY) {
      const room = TEXT_IN_SUMMARY + 1 - this.#headLen
      const part = Buffer.from(chunk.subarray(0, room)) // a copy: the chunk may be the addon's memory
      this.#head.push(part)
      this.#headLen += part.length
    }
  }

  summary() {
    /** @type {{size: number, sha256: string, text?: string}} */
    const m = { size: this.#size, sha256: this.#hash.digest('hex') }
    if (this.#size <= TEXT_IN_SUMMARY) {
      const t = text(Buffer.concat(this.#head))
      if (t !== null) m.text = t
    }
    return m
  }
}

/** @param {Uint8Array} body */
function summary(body) {
  const t = new Tally()
  t.add(body)
  return t.summary()
}

// ---------------------------------------------------------------------------------------------
// Background behaviours of bound endpoints (rust-agent/src/endpoints.rs)

const REPLIER_MODES = ['echo', 'stream_echo', 'hold', 'reject', 'drop']
const PULLER_MODES = ['recv', 'stream', 'manual']
const SUBSCRIBER_MODES = ['recv', 'manual']

/** Exchanges kept by `hold` mode: the replier acted and never answers. @type {Set<import('weida').Exchange>} */
const held = new Set()

/**
 * Answers each exchange in `mode` and reads each one-way stream (an acceptor's) as a `stream`
 * puller does, each in a task of its own; `closed` when accepting ends.
 * @param {import('weida').Replier | import('weida').Acceptor} endpoint @param {string} handle @param {string} mode @param {string} reason
 */
async function serveAnswering(endpoint, handle, mode, reason) {
  for (;;) {
    /** @type {import('weida').Incoming} */
    let incoming
    try {
      incoming = await endpoint.accept()
    } catch (e) {
      eventError('closed', handle, e)
      return
    }
    event('accepted', handle, metaFields(incoming.meta))
    if (incoming instanceof Exchange) void exchange(incoming, handle, mode, reason)
    else void readTransfer(incoming, handle)
  }
}

/**
 * Abandons an exchange this side is done with, unanswered: what its drop at the end of the task
 * does in the Rust agent. Left to the garbage collector, the requester would wait for a
 * collection to see CANCELED (node/README.md, "Lifetime").
 * @param {import('weida').Exchange} ex
 */
function release(ex) {
  ex.cancel()
}

/** @param {import('weida').Exchange} ex @param {string} handle @param {string} mode @param {string} reason */
async function exchange(ex, handle, mode, reason) {
  const meta = ex.meta.metadata
  if (mode === 'reject') {
    try {
      await ex.reject(reason)
      event('rejected', handle)
    } catch (e) {
      eventError('reply_failed', handle, e)
      release(ex)
    }
    return
  }
  if (mode === 'stream_echo') return streamEcho(ex, handle)
  /** @type {Buffer} */
  let body
  try {
    body = await ex.takeBody()
  } catch (e) {
    eventError('request_failed', handle, e)
    release(ex)
    return
  }
  event('request', handle, { body: summary(body), metadata: metadataJson(meta) })
  switch (mode) {
    case 'echo':
      try {
        await ex.reply(body, metadataInit(meta))
        event('replied', handle)
      } catch (e) {
        eventError('reply_failed', handle, e)
        release(ex)
      }
      break
    case 'hold':
      // Keep the exchange (a reference, so the GC never cancels it): it is never answered.
      held.add(ex)
      break
    case 'drop':
      release(ex)
      event('dropped', handle)
      break
  }
}

/**
 * Reads the request chunk by chunk, then streams the same chunks back through `openReply`.
 * @param {import('weida').Exchange} ex @param {string} handle
 */
async function streamEcho(ex, handle) {
  const meta = ex.meta.metadata
  const tally = new Tally()
  /** @type {Buffer[]} */
  const chunks = []
  try {
    for await (const c of ex) {
      if (chunks.length === 0) event('receiving', handle, { size: c.length })
      tally.add(c)
      chunks.push(c)
    }
  } catch (e) {
    eventError('request_failed', handle, e)
    release(ex)
    return
  }
  event('request', handle, { body: tally.summary(), metadata: metadataJson(meta) })
  try {
    const reply = await ex.openReply(metadataInit(meta))
    for (const c of chunks) await reply.write(c)
    await reply.finish()
    event('replied', handle)
  } catch (e) {
    eventError('reply_failed', handle, e)
    release(ex)
  }
}

/** @param {import('weida').Puller | Bus | Pair | DialingPuller} puller @param {string} handle @param {string} mode */
async function servePuller(puller, handle, mode) {
  if (mode === 'recv') {
    for (;;) {
      try {
        const m = await puller.recv()
        // With the sequence and gap under PerProducer ordering (PATTERNS §1.7), else null.
        event('received', handle, { ...messageJson(m), sequence: numberOrNull(m.meta.sequence), gap: numberOrNull(m.meta.gap) })
      } catch (e) {
        if (e instanceof WeidaError && e.code === 'ERR_WEIDA_CLOSED') {
          eventError('closed', handle, e)
          return
        }
        eventError('receive_failed', handle, e)
      }
    }
  }
  if (mode === 'stream' && !(puller instanceof Bus) && !(puller instanceof Pair) && !(puller instanceof DialingPuller)) {
    for (;;) {
      /** @type {import('weida').IncomingTransfer} */
      let t
      try {
        t = await puller.accept()
      } catch (e) {
        eventError('closed', handle, e)
        return
      }
      event('accepted', handle, metaFields(t.meta))
      void readTransfer(t, handle)
    }
  }
}

/**
 * A subscriber in `recv` mode, from its first successful connect (before it, a receive would
 * fail NOT_CONNECTED at once): `recv()` in a loop, each copy a `received` event; the loop ends
 * with `closed`, or with `receive_failed` once no publisher is left.
 * @param {import('weida').Subscriber} sub @param {string} handle
 */
async function serveSubscriber(sub, handle) {
  for (;;) {
    try {
      event('received', handle, copyJson(await sub.recv()))
    } catch (e) {
      if (e instanceof WeidaError && e.code === 'ERR_WEIDA_CLOSED') eventError('closed', handle, e)
      else eventError('receive_failed', handle, e)
      return
    }
  }
}

/**
 * A collector: each message kept a `received` event with its topic, until `closed`.
 * @param {import('weida').BoundSubscriber} c @param {string} handle
 */
async function serveCollector(c, handle) {
  for (;;) {
    try {
      event('received', handle, copyJson(await c.recv()))
    } catch (e) {
      if (e instanceof WeidaError && e.code === 'ERR_WEIDA_CLOSED') return eventError('closed', handle, e)
      eventError('receive_failed', handle, e)
    }
  }
}

/** @param {import('weida').IncomingTransfer} t @param {string} handle */
async function readTransfer(t, handle) {
  const tally = new Tally()
  let first = true
  try {
    for await (const c of t) {
      if (first) event('receiving', handle, { size: c.length })
      first = false
      tally.add(c)
    }
  } catch (e) {
    eventError('receive_failed', handle, e)
    return
  }
  event('received', handle, { ...metaFields(t.meta), body: tally.summary() })
}

// ---------------------------------------------------------------------------------------------
// The ops (rust-agent/src/ops.rs), on handles the runner names

/** Every name in use, whatever it names: a name is never reused within one agent. */
const names = new Set()
/** @type {Map<string, Runtime>} */
const runtimes = new Map()
/** @type {Map<string, import('weida').Listener>} */
const listeners = new Map()
/** Bound endpoints, kept referenced while they serve (a collected one is unbound). @type {Map<string, import('weida').Replier | import('weida').Puller | import('weida').Acceptor>} */
const bound = new Map()
/** @type {Map<string, import('weida').Requester | import('weida').Pusher | import('weida').Subscriber | Peer | import('weida').Surveyor | Bus | DialingPublisher | Pair | DialingPuller | BoundPusher>} */
const dialling = new Map()
/** Bound subscribers (collectors), for `subscribe` and `unsubscribe`. @type {Map<string, import('weida').BoundSubscriber>} */
const collectors = new Map()
/** Each dialling endpoint's events, read from its making on (the `event` op). @type {Map<string, import('weida').PeerEvents>} */
const events = new Map()
/** Subscribers in `recv` mode whose loop starts at their first connect. @type {Set<string>} */
const unserved = new Set()
/** Publishers, kept referenced (a collected one is unbound). @type {Map<string, import('weida').Publisher>} */
const publishers = new Map()
/** @type {Map<string, import('weida').FanOut>} */
const fanouts = new Map()
/** Pullers in `manual` mode, for the `recv` op. @type {Map<string, import('weida').Puller>} */
const manualPullers = new Map()
/** @type {Map<string, import('weida').OutgoingTransfer>} */
const transfers = new Map()
/** Handler registrations, for `service_counters`. @type {Map<string, import('weida').Registration>} */
const services = new Map()
/** @type {Map<string, import('weida').PendingReply>} */
const replies = new Map()

/** @param {string} kind @param {string} name */
function missing(kind, name) {
  return new BadRequest(`no ${kind} named ${JSON.stringify(name)} (or it is in use by another op)`)
}

/** @param {string} name */
function claim(name) {
  if (name === '' || names.has(name)) throw new BadRequest(`handle name ${JSON.stringify(name)} is empty or taken`)
  names.add(name)
}

/**
 * @template T
 * @param {Map<string, T>} map @param {Record<string, unknown>} args @param {string} key @param {string} kind
 */
function get(map, args, key, kind) {
  const name = strArg(args, key)
  const v = map.get(name)
  if (v === undefined) throw missing(kind, name)
  return v
}

/** @param {Record<string, unknown>} args */
function takeTransfer(args) {
  const name = strArg(args, 'transfer')
  const t = transfers.get(name)
  if (t === undefined) throw missing('transfer', name)
  transfers.delete(name)
  return /** @type {const} */ ([name, t])
}

/** `"address"`, `"unverified"` or `{"pinned": ["sha256:…", …]}`. @param {unknown} v */
function trust(v) {
  if (v === 'address') return Trust.address()
  if (v === 'unverified') return Trust.unverified()
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const pins = /** @type {Record<string, unknown>} */ (v).pinned
    if (!Array.isArray(pins)) throw new BadRequest('trust object is {"pinned": [...]}')
    if (!pins.every((p) => typeof p === 'string')) throw new BadRequest('a pin is a string')
    return Trust.pinned(pins)
  }
  throw new BadRequest(`unknown trust ${JSON.stringify(v)}`)
}

/** The protocol's limit names and the package's. */
const LIMITS = {
  stream_receive_window: 'streamReceiveWindow',
  connection_receive_window: 'connectionReceiveWindow',
  send_window: 'sendWindow',
  max_concurrent_uni_streams: 'maxConcurrentUniStreams',
  max_concurrent_bidi_streams: 'maxConcurrentBidiStreams',
  max_local_streams: 'maxLocalStreams',
  endpoint_queue: 'endpointQueue',
  peer_share: 'peerShare',
  max_header_size: 'maxHeaderSize',
  max_collected_body: 'maxCollectedBody',
  idle_timeout_ms: 'idleTimeoutMs',
  keep_alive_ms: 'keepAliveMs',
  subscriber_buffer_bytes: 'subscriberBufferBytes',
  max_reorder_hold: 'maxReorderHold',
  max_parked_reverse: 'maxParkedReverse',
  max_filters: 'maxFilters',
  fanout_wait_ms: 'fanoutWaitMs',
  header_timeout_ms: 'headerTimeoutMs',
  connect_timeout_ms: 'connectTimeoutMs',
  body_idle_timeout_ms: 'bodyIdleTimeoutMs',
  max_udp_payload: 'maxUdpPayload',
  max_connections: 'maxConnections',
  max_local_peer_connections: 'maxLocalPeerConnections',
}

/** The ordering levels a runtime may require. */
const ORDERINGS = ['none', 'detect', 'reassemble']

/** Limits from `{"idle_timeout_ms": …, "keep_alive_ms": null, …}`. @param {unknown} v */
function limits(v) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'object' || Array.isArray(v)) throw new BadRequest('limits is an object')
  /** @type {Record<string, number | null>} */
  const out = {}
  for (const [k, val] of Object.entries(v)) {
    const name = /** @type {Record<string, string>} */ (LIMITS)[k]
    if (name === undefined) throw new BadRequest(`unknown limit ${JSON.stringify(k)}`)
    if (k === 'keep_alive_ms' && val === null) {
      out[name] = null
      continue
    }
    if (!Number.isSafeInteger(val) || val < 0) throw new BadRequest(`limits.${k} is a non-negative integer`)
    out[name] = val
  }
  return /** @type {import('weida').Limits} */ (out)
}

/**
 * A runtime step's `reconnect`; absent, the runtime does not redial (the scenarios written
 * before redial assert that behaviour). @param {unknown} v
 */
function reconnect(v) {
  if (v === undefined || v === null) return { giveUpAfterAttempts: 0 }
  if (typeof v !== 'object' || Array.isArray(v)) throw new BadRequest('reconnect is an object')
  /** @type {Record<string, string>} */
  const names = { initial_ms: 'initialMs', max_ms: 'maxMs', give_up_after_ms: 'giveUpAfterMs', give_up_after_attempts: 'giveUpAfterAttempts', jitter: 'jitter' }
  /** @type {Record<string, number | boolean | null>} */
  const out = {}
  for (const [k, val] of Object.entries(v)) {
    const name = names[k]
    if (name === undefined) throw new BadRequest(`unknown reconnect option ${JSON.stringify(k)}`)
    if (k === 'jitter') {
      if (typeof val !== 'boolean') throw new BadRequest('reconnect.jitter is a boolean')
      out[name] = val
    } else if (val === null) {
      out[name] = null
    } else {
      if (!Number.isSafeInteger(val) || val < 0) throw new BadRequest(`reconnect.${k} is a non-negative integer`)
      out[name] = val
    }
  }
  return /** @type {import('weida').ReconnectOptions} */ (out)
}

/** An endpoint's own bounds from the step's `options` (`{"max_collected_body": …, "send_timeout_ms": null}`). @param {Record<string, unknown>} args */
function endpointOptions(args) {
  const v = args.options
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'object' || Array.isArray(v)) throw new BadRequest('options is an object')
  /** @type {Record<string, string>} */
  const names = {
    max_collected_body: 'maxCollectedBody',
    endpoint_queue: 'endpointQueue',
    send_timeout_ms: 'sendTimeoutMs',
    outbox_messages: 'outboxMessages',
    outbox_bytes: 'outboxBytes',
    outbox_full: 'outboxFull',
  }
  /** @type {Record<string, unknown>} */
  const out = {}
  for (const [k, val] of Object.entries(v)) {
    const name = k === 'reconnect' ? 'reconnect' : names[k]
    if (name === undefined) throw new BadRequest(`unknown endpoint option ${JSON.stringify(k)}`)
    if (k === 'send_timeout_ms' && val === null) {
      out[name] = null
      continue
    }
    if (k === 'reconnect') {
      out.reconnect = /** @type {any} */ (reconnect(val))
      continue
    }
    if (k === 'outbox_full') {
      if (!['block', 'drop', 'reject'].includes(val)) throw new BadRequest('options.outbox_full is block, drop or reject')
      out[name] = val
      continue
    }
    if (!Number.isSafeInteger(val) || val < 0) throw new BadRequest(`options.${k} is a non-negative integer`)
    out[name] = val
  }
  return /** @type {import('weida').EndpointOptions} */ (out)
}

/** A subscriber named by `args[key]`. @param {Record<string, unknown>} args @param {string} key */
function subscriber(args, key) {
  const name = strArg(args, key)
  const s = dialling.get(name)
  if (!(s instanceof Subscriber)) throw missing('subscriber', name)
  return s
}

/** The copies a publisher dropped, by cause, as the protocol spells them. @param {import('weida').Dropped} d */
function droppedJson(d) {
  return numbers(/** @type {any} */ (d), {
    queue_full: 'queueFull',
    byte_budget: 'byteBudget',
    reverse_pool_empty: 'reversePoolEmpty',
    dead_subscriber: 'deadSubscriber',
    refused: 'refused',
    total: 'total',
  })
}

/** `{"delivered": n, ...}` from bigints. @param {Record<string, bigint>} o @param {Record<string, string>} fields */
function numbers(o, fields) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const [json, js] of Object.entries(fields)) out[json] = Number(o[js])
  return out
}

/**
 * Carries out one op.
 * @param {string} op @param {Record<string, unknown>} args
 * @returns {Promise<Record<string, unknown>>}
 */
async function run(op, args) {
  switch (op) {
    case 'hello':
      return { protocol: 1, language: 'node', agent: 'node/conformance/agent.mjs', weida: VERSION }

    case 'runtime': {
      const name = strArg(args, 'name')
      /** @type {import('weida').RuntimeOptions} */
      const options = {}
      if (args.identity !== undefined && args.identity !== null) {
        const dir = /** @type {any} */ (args.identity).dir
        if (typeof dir !== 'string') throw new BadRequest('identity is {"dir": path} or absent (ephemeral)')
        options.identity = Identity.loadOrCreate(dir)
      }
      if (args.trust !== undefined) options.trust = trust(args.trust)
      options.presentIdentity = boolArg(args, 'present_identity', true)
      const l = limits(args.limits)
      if (l !== undefined) options.limits = l
      const sendTimeout = uintArg(args, 'send_timeout_ms')
      if (sendTimeout !== undefined) options.sendTimeoutMs = sendTimeout
      if (args.ordering !== undefined && args.ordering !== null) {
        const o = args.ordering
        if (typeof o !== 'string' || !ORDERINGS.includes(o)) throw new BadRequest(`unknown ordering ${JSON.stringify(o)}`)
        options.ordering = /** @type {import('weida').Ordering} */ (o)
      }
      const lanes = uintArg(args, 'lane_max_message')
      if (lanes !== undefined) options.laneMaxMessage = lanes
      options.reconnect = reconnect(args.reconnect)
      const rt = new Runtime(options)
      const fingerprint = rt.fingerprint
      try {
        claim(name)
      } catch (e) {
        rt.shutdown()
        throw e
      }
      runtimes.set(name, rt)
      return { fingerprint }
    }

    case 'bind': {
      const rt = get(runtimes, args, 'runtime', 'runtime')
      const name = strArg(args, 'name')
      const address = strArg(args, 'address')
      const requireClient = args.require_client
      const listener =
        requireClient === undefined || requireClient === null
          ? await rt.bind(address)
          : await rt.bind(address, { requireClient: trust(requireClient) })
      try {
        claim(name)
      } catch (e) {
        listener.close()
        throw e
      }
      listeners.set(name, listener)
      // A listener's connections are events too (PATTERNS §1.8): `event` reads them by its name.
      events.set(name, listener.events())
      return { address: listener.address }
    }

    case 'close':
      get(listeners, args, 'listener', 'listener').close()
      return {}

    case 'shutdown':
      get(runtimes, args, 'runtime', 'runtime').shutdown()
      return {}

    case 'drain': {
      const rt = get(runtimes, args, 'runtime', 'runtime')
      const ms = uintArg(args, 'deadline_ms')
      if (ms === undefined) throw new BadRequest('drain needs deadline_ms')
      const d = await rt.drain(ms)
      return numbers(/** @type {any} */ (d), { delivered: 'delivered', outstanding: 'outstanding', unsent: 'unsent' })
    }

    case 'counters': {
      const c = get(runtimes, args, 'runtime', 'runtime').counters()
      return numbers(/** @type {any} */ (c), {
        streams_opened: 'streamsOpened',
        streams_accepted: 'streamsAccepted',
        streams_refused: 'streamsRefused',
        bytes_sent: 'bytesSent',
        bytes_received: 'bytesReceived',
        connections_dialled: 'connectionsDialled',
        connections_accepted: 'connectionsAccepted',
        receipts_delivered: 'receiptsDelivered',
        receipts_failed: 'receiptsFailed',
        copies_published: 'copiesPublished',
        lane_messages_sent: 'laneMessagesSent',
        lane_messages_received: 'laneMessagesReceived',
        lane_messages_lost: 'laneMessagesLost',
        outbox_queued: 'outboxQueued',
        outbox_written: 'outboxWritten',
        outbox_dropped: 'outboxDropped',
        outbox_abandoned: 'outboxAbandoned',
      })
    }

    case 'replier':
    case 'respondent':
    case 'acceptor': {
      const listener = get(listeners, args, 'listener', 'listener')
      const name = strArg(args, 'name')
      const mode = strArg(args, 'mode')
      if (!REPLIER_MODES.includes(mode)) throw new BadRequest(`unknown ${op} mode ${JSON.stringify(mode)}`)
      const reason = typeof args.reason === 'string' ? args.reason : 'rejected'
      const path = strArg(args, 'path')
      const opts = endpointOptions(args)
      const endpoint =
        op === 'replier' ? listener.replier(path, opts) : op === 'respondent' ? listener.respondent(path, opts) : listener.acceptor(path, opts)
      const address = endpoint.address
      try {
        claim(name)
      } catch (e) {
        endpoint.close()
        throw e
      }
      bound.set(name, endpoint)
      void serveAnswering(endpoint, name, mode, reason)
      return { address }
    }

    case 'puller': {
      const listener = get(listeners, args, 'listener', 'listener')
      const name = strArg(args, 'name')
      const mode = strArg(args, 'mode')
      if (!PULLER_MODES.includes(mode)) throw new BadRequest(`unknown puller mode ${JSON.stringify(mode)}`)
      const puller = listener.puller(strArg(args, 'path'), endpointOptions(args))
      const address = puller.address
      try {
        claim(name)
      } catch (e) {
        puller.close()
        throw e
      }
      bound.set(name, puller)
      if (mode === 'manual') manualPullers.set(name, puller)
      else void servePuller(puller, name, mode)
      return { address }
    }

    case 'requester':
    case 'surveyor':
    case 'pusher':
    case 'peer': {
      const rt = get(runtimes, args, 'runtime', 'runtime')
      const name = strArg(args, 'name')
      claim(name)
      const opts = endpointOptions(args)
      const d =
        op === 'requester' ? rt.requester(opts) : op === 'surveyor' ? rt.surveyor(opts) : op === 'pusher' ? rt.pusher(opts) : rt.peer(opts)
      dialling.set(name, d)
      events.set(name, d.events())
      return {}
    }

    case 'connect': {
      const address = strArg(args, 'address')
      const d = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      const wait = args.wait ?? true
      if (typeof wait !== 'boolean') throw new BadRequest('wait is true or false')
      if (d instanceof BoundPusher) throw new BadRequest('a bound pusher does not dial')
      await d.connect(address, { wait })
      const name = strArg(args, 'endpoint')
      if (d instanceof Subscriber && unserved.delete(name)) void serveSubscriber(d, name)
      return { peer_count: d.peerCount }
    }

    case 'event': {
      const name = strArg(args, 'endpoint')
      const reader = events.get(name)
      if (reader === undefined) throw new BadRequest(`no dialling endpoint or listener named ${JSON.stringify(name)}`)
      const kind = strArg(args, 'kind')
      const between = Array.isArray(args.between) ? args.between : []
      for (;;) {
        const e = await reader.next()
        if (e === null) throw new BadRequest('the endpoint is gone')
        /** @type {Record<string, unknown>} */
        const out = { kind: e.kind }
        if (e.kind === 'missed') out.missed = e.missed
        else out.url = e.url
        if (e.kind === 'connected') out.fingerprint = e.fingerprint ?? null
        if (e.kind === 'lost' || e.kind === 'gave_up') out.cause = e.cause
        if (e.kind === 'retrying') Object.assign(out, { attempt: e.attempt, delay_ms: e.delayMs })
        if (e.kind === kind) return out
        if (!between.includes(e.kind)) throw new BadRequest(`unexpected event ${JSON.stringify(out)} before ${kind}`)
      }
    }

    case 'disconnect': {
      const address = strArg(args, 'address')
      const d = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      if (d instanceof BoundPusher) throw new BadRequest('a bound pusher does not dial')
      return { removed: d.disconnect(address) }
    }

    case 'peer_count':
      return { peer_count: get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer').peerCount }

    case 'request': {
      const r = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      if (!(r instanceof Requester)) throw new BadRequest('request needs a requester')
      const body = makeBody(args.body ?? null)
      return messageJson(await r.requestWith(body, metadataArg(args)))
    }

    case 'survey': {
      // Asks, then reads every answer until the run ends: how many were asked, answered, the
      // codes of those that failed (sorted), and the late count.
      const s = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      if (!(s instanceof Surveyor)) throw new BadRequest('survey needs a surveyor')
      if (typeof args.deadline_ms !== 'number') throw new BadRequest('deadline_ms is a number')
      const run = await s.survey(makeBody(args.body ?? null), args.deadline_ms, metadataArg(args))
      let answered = 0
      /** @type {string[]} */
      const errors = []
      for await (const a of run) {
        if (a instanceof WeidaError) errors.push(String(a.code).replace(/^ERR_WEIDA_/, ''))
        else answered++
      }
      return { respondents: run.respondents, answered, errors: errors.sort(), late: run.late }
    }

    case 'send': {
      const p = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      const body = makeBody(args.body ?? null)
      if (p instanceof Bus) return { queued: await p.send(body, metadataArg(args)) }
      if (!(p instanceof Pusher || p instanceof Pair || p instanceof BoundPusher)) throw new BadRequest('send needs a pusher, a bus member or a pair')
      await p.send(body, metadataArg(args))
      return {}
    }

    case 'bus': {
      // A bus member: dialling (`connect`, `send`) and bound, received as a `recv` puller is.
      const rt = get(runtimes, args, 'runtime', 'runtime')
      const listener = get(listeners, args, 'listener', 'listener')
      const name = strArg(args, 'name')
      claim(name)
      const bus = rt.bus(listener, strArg(args, 'path'), endpointOptions(args))
      dialling.set(name, bus)
      events.set(name, bus.events())
      void servePuller(bus, name, 'recv')
      return { address: bus.address }
    }

    case 'try_send': {
      const p = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      if (!(p instanceof Pusher)) throw new BadRequest('try_send needs a pusher')
      return { sent: p.trySend(makeBody(args.body ?? null)) }
    }

    case 'send_many': {
      const p = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      if (!(p instanceof Pusher)) throw new BadRequest('send_many needs a pusher')
      if (!Array.isArray(args.bodies)) throw new BadRequest('send_many needs a list of bodies')
      const bodies = args.bodies.map(makeBody)
      await p.sendMany(bodies)
      return { sent: bodies.length }
    }

    case 'open': {
      const meta = metadataArg(args)
      const tname = strArg(args, 'transfer')
      const d = get(dialling, args, 'endpoint', 'requester, pusher, subscriber or peer')
      // A peer opens a one-way stream, or with `reply` an exchange.
      if (d instanceof Pusher || (d instanceof Peer && args.reply === undefined)) {
        const t = await d.open(meta)
        claim(tname)
        transfers.set(tname, t)
      } else if (!(d instanceof Requester || d instanceof Peer)) {
        throw new BadRequest('open needs a pusher, requester or peer')
      } else {
        const rname = strArg(args, 'reply')
        const [t, reply] = await (d instanceof Peer ? d.exchange(meta) : d.open(meta))
        claim(tname)
        claim(rname)
        transfers.set(tname, t)
        replies.set(rname, reply)
      }
      return {}
    }

    case 'write': {
      const bytes = makeBody(args.body ?? null)
      const chunk = Math.max(uintArg(args, 'chunk') ?? 64 * 1024, 1)
      const [name, t] = takeTransfer(args)
      try {
        for (let at = 0; at < bytes.length; at += chunk) {
          await t.write(bytes.subarray(at, Math.min(at + chunk, bytes.length)))
        }
      } finally {
        // Kept after a failed write too, so a scenario can still cancel it.
        transfers.set(name, t)
      }
      return { written: bytes.length }
    }

    case 'finish': {
      const [, t] = takeTransfer(args)
      const delivery = await t.finish()
      if (boolArg(args, 'delivered', false)) {
        await delivery.delivered()
        return { delivered: true }
      }
      return {}
    }

    case 'cancel': {
      const [, t] = takeTransfer(args)
      t.cancel()
      return {}
    }

    case 'reply_body': {
      const name = strArg(args, 'reply')
      const reply = replies.get(name)
      if (reply === undefined) throw missing('pending reply', name)
      replies.delete(name)
      return messageJson(await reply.body())
    }

    case 'recv': {
      const p = get(manualPullers, args, 'puller', 'manual puller')
      return messageJson(await p.recv())
    }

    case 'recv_many': {
      const p = get(manualPullers, args, 'puller', 'manual puller')
      const count = uintArg(args, 'count')
      if (count === undefined || count === null) throw new BadRequest('recv_many needs a count')
      const most = Math.max(uintArg(args, 'max') ?? 64, 1)
      // Batches until `count`, each at most what is left: none taken beyond it.
      const messages = []
      let batches = 0
      while (messages.length < count) {
        const batch = await p.recvMany(Math.min(most, count - messages.length))
        batches += 1
        for (const m of batch) messages.push(messageJson(m))
      }
      return { messages, batches }
    }

    case 'publisher': {
      const listener = get(listeners, args, 'listener', 'listener')
      const name = strArg(args, 'name')
      const publisher = listener.publisher(strArg(args, 'path'))
      const address = publisher.address
      try {
        claim(name)
      } catch (e) {
        publisher.close()
        throw e
      }
      publishers.set(name, publisher)
      return { address }
    }

    case 'subscriber': {
      const rt = get(runtimes, args, 'runtime', 'runtime')
      const name = strArg(args, 'name')
      const mode = strArg(args, 'mode')
      if (!SUBSCRIBER_MODES.includes(mode)) throw new BadRequest(`unknown subscriber mode ${JSON.stringify(mode)}`)
      claim(name)
      const sub = rt.subscriber()
      dialling.set(name, sub)
      events.set(name, sub.events())
      if (mode === 'recv') unserved.add(name)
      return {}
    }

    case 'pair': {
      // A pair: bound with `listener` and `path`, else dialling through `runtime`; received as
      // a `recv` puller is, from its making on.
      const name = strArg(args, 'name')
      const p =
        args.listener === undefined
          ? get(runtimes, args, 'runtime', 'runtime').pair(endpointOptions(args))
          : get(listeners, args, 'listener', 'listener').pair(strArg(args, 'path'), endpointOptions(args))
      claim(name)
      dialling.set(name, p)
      if (p.address === null) events.set(name, p.events())
      void servePuller(p, name, 'recv')
      return p.address === null ? {} : { address: p.address }
    }

    case 'service_queue': {
      // A queue registration whose handler emits `handled` (body, attempt, path) for each job
      // and retries the bodies `retry` lists (their text), else is done.
      const name = strArg(args, 'name')
      const again = new Set(Array.isArray(args.retry) ? args.retry.map(String) : [])
      /** @type {import('weida').ServiceSettings} */
      const settings = {}
      const maxAttempts = uintArg(args, 'max_attempts')
      if (maxAttempts !== undefined) settings.maxAttempts = maxAttempts
      const concurrency = uintArg(args, 'concurrency')
      if (concurrency !== undefined) settings.concurrency = concurrency
      if (typeof args.dead_letter === 'string') settings.deadLetter = args.dead_letter
      const reg = await new Service(get(runtimes, args, 'runtime', 'runtime')).queue(
        get(listeners, args, 'listener', 'listener'),
        strArg(args, 'path'),
        settings,
      )
      claim(name)
      services.set(name, reg)
      void reg.serve(async (job) => {
        const m = job.message
        event('handled', name, { ...messageJson(m), attempt: job.attempt })
        return again.has(m.body.toString()) ? retry() : undefined
      })
      return { address: reg.address }
    }

    case 'service_counters': {
      const c = get(services, args, 'endpoint', 'service').counters()
      return {
        handled: Number(c.handled),
        retried: Number(c.retried),
        dead_lettered: Number(c.deadLettered),
        dropped: Number(c.dropped),
        failed: Number(c.failed),
      }
    }

    case 'bound_pusher': {
      // A pusher bound at `path`: it deals to the dialling pullers that claimed it.
      const name = strArg(args, 'name')
      claim(name)
      const p = get(listeners, args, 'listener', 'listener').pusher(strArg(args, 'path'), endpointOptions(args))
      dialling.set(name, p)
      return { address: p.address }
    }

    case 'dialing_puller': {
      // A puller that dials bound pushers, received as a `recv` puller is.
      const name = strArg(args, 'name')
      claim(name)
      const p = get(runtimes, args, 'runtime', 'runtime').puller(endpointOptions(args))
      dialling.set(name, p)
      events.set(name, p.events())
      void servePuller(p, name, 'recv')
      return {}
    }

    case 'dialing_publisher': {
      // A publisher that dials bound subscribers (collectors).
      const rt = get(runtimes, args, 'runtime', 'runtime')
      const name = strArg(args, 'name')
      claim(name)
      const p = rt.publisher(endpointOptions(args))
      dialling.set(name, p)
      events.set(name, p.events())
      return {}
    }

    case 'bound_subscriber': {
      // A collector, received as a subscriber's copies are, from its binding on.
      const listener = get(listeners, args, 'listener', 'listener')
      const name = strArg(args, 'name')
      claim(name)
      const c = listener.subscriber(strArg(args, 'path'), endpointOptions(args))
      collectors.set(name, c)
      void serveCollector(c, name)
      return { address: c.address }
    }

    case 'subscribe': {
      const filter = strArg(args, 'filter')
      const c = collectors.get(strArg(args, 'endpoint'))
      if (c !== undefined) {
        c.subscribe(filter)
        return {}
      }
      await subscriber(args, 'endpoint').subscribe(filter)
      return {}
    }

    case 'unsubscribe': {
      const filter = strArg(args, 'filter')
      const c = collectors.get(strArg(args, 'endpoint'))
      if (c !== undefined) return { removed: c.unsubscribe(filter) }
      return { removed: await subscriber(args, 'endpoint').unsubscribe(filter) }
    }

    case 'receive':
      return copyJson(await subscriber(args, 'subscriber').recv())

    case 'queued':
      return { queued: subscriber(args, 'subscriber').queued }

    case 'publish': {
      const d = dialling.get(strArg(args, 'endpoint'))
      if (d instanceof DialingPublisher) return { queued: d.publish(strArg(args, 'topic'), makeBody(args.body ?? null)) }
      const p = get(publishers, args, 'endpoint', 'publisher')
      const body = makeBody(args.body ?? null)
      return { queued: p.publish(strArg(args, 'topic'), body) }
    }

    case 'dropped': {
      const d = dialling.get(strArg(args, 'endpoint'))
      if (d instanceof DialingPublisher) {
        if (args.topic !== undefined && args.topic !== null) throw new BadRequest('a dialling publisher counts no drops per topic')
        return droppedJson(d.dropped())
      }
      const p = get(publishers, args, 'endpoint', 'publisher')
      const topic = args.topic
      if (topic === undefined || topic === null) return droppedJson(p.dropped())
      if (typeof topic !== 'string') throw new BadRequest('topic is a string')
      return droppedJson(p.droppedOn(topic))
    }

    case 'subscriber_count':
      return { subscriber_count: get(publishers, args, 'endpoint', 'publisher').subscriberCount }

    case 'fanout': {
      const p = get(publishers, args, 'endpoint', 'publisher')
      const name = strArg(args, 'fanout')
      const f = p.open(strArg(args, 'topic'))
      const copies = f.copies
      try {
        claim(name)
      } catch (e) {
        f.cancel()
        throw e
      }
      fanouts.set(name, f)
      return { copies }
    }

    case 'fanout_write': {
      const name = strArg(args, 'fanout')
      const bytes = makeBody(args.body ?? null)
      const chunk = Math.max(uintArg(args, 'chunk') ?? 64 * 1024, 1)
      const now = boolArg(args, 'now', false)
      const f = fanouts.get(name)
      if (f === undefined) throw missing('fan-out', name)
      fanouts.delete(name)
      try {
        let copies = f.copies
        for (let at = 0; at < bytes.length; at += chunk) {
          const c = bytes.subarray(at, Math.min(at + chunk, bytes.length))
          copies = now ? f.writeNow(c) : await f.write(c)
        }
        return { copies }
      } finally {
        // Kept after a failed write too, so a scenario can still finish it.
        fanouts.set(name, f)
      }
    }

    case 'fanout_finish': {
      const name = strArg(args, 'fanout')
      const f = fanouts.get(name)
      if (f === undefined) throw missing('fan-out', name)
      fanouts.delete(name)
      return { copies: f.finish() }
    }

    default:
      throw new BadRequest(`unknown op ${JSON.stringify(op)}`)
  }
}

// ---------------------------------------------------------------------------------------------
// The loop over standard input

/** Requests not yet answered, by id: what a slow exit names on stderr. @type {Map<unknown, string>} */
const pending = new Map()

/** @param {string} text */
async function handle(text) {
  /** @type {any} */
  let request
  try {
    request = JSON.parse(text)
  } catch (e) {
    line({ id: null, ok: false, error: { code: 'AGENT_BAD_REQUEST', message: `not JSON: ${/** @type {Error} */ (e).message}` } })
    return
  }
  const id = request?.id ?? null
  const op = typeof request?.op === 'string' ? request.op : ''
  const args = typeof request?.args === 'object' && request.args !== null ? request.args : {}
  pending.set(id, op)
  try {
    const result = await run(op, args)
    line({ id, ok: true, result })
  } catch (e) {
    line({ id, ok: false, error: errorJson(e) })
  } finally {
    pending.delete(id)
  }
}

const input = createInterface({ input: process.stdin, crlfDelay: Infinity })
input.on('line', (text) => {
  if (text.trim() !== '') void handle(text)
})
input.on('close', () => {
  // Standard input closed: the runner is done with this agent. Shutting every runtime down
  // settles every pending call, and with nothing pending Node exits on its own (the package's
  // lifetime rule, node/README.md). A process still alive later says what it waits for.
  for (const rt of runtimes.values()) rt.shutdown()
  setTimeout(() => {
    process.stderr.write(
      `agent: still running 3 s after stdin closed; unanswered: ${JSON.stringify([...pending])}; ` +
        `resources: ${JSON.stringify(process.getActiveResourcesInfo())}\n`,
    )
  }, 3000).unref()
})
