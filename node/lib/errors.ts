// The error classes: one per core error code (docs/BINDINGS.md, "Errors"), all under
// WeidaError. The addon maps every failure in one Rust function (src/error.rs, `to_js`) and
// constructs it as the class registered here for its `code`, then sets every field the core
// error carries, by the same names as Python's in camelCase (weida-ffi's `Fail::fields`).

import * as native from '../native.cjs'

/**
 * Why a connection ended (`err.lossCause` of ConnectionLost and Indeterminate), as the core names
 * it (`lossCauses()` lists them); `err.cause` stays the standard `Error.cause`.
 */
export type LossCause =
  | 'idle_timeout'
  | 'peer_closed'
  | 'locally_closed'
  | 'reset'
  | 'transport_error'
  | 'peer_changed'
  | 'dial_failed'
  | 'unknown_endpoint'

/** Every loss cause, as the core names them. */
export const lossCauses = (): LossCause[] => native.lossCauses() as LossCause[]

/** Every `code` a WeidaError can carry. */
export type WeidaErrorCode =
  | 'ERR_WEIDA_NOT_CONNECTED'
  | 'ERR_WEIDA_CONNECTION_LOST'
  | 'ERR_WEIDA_INDETERMINATE'
  | 'ERR_WEIDA_UNTRUSTED'
  | 'ERR_WEIDA_UNKNOWN_ENDPOINT'
  | 'ERR_WEIDA_UNSUPPORTED'
  | 'ERR_WEIDA_REJECTED'
  | 'ERR_WEIDA_CANCELED'
  | 'ERR_WEIDA_LIMIT_EXCEEDED'
  | 'ERR_WEIDA_TIMEOUT'
  | 'ERR_WEIDA_INVALID_ADDRESS'
  | 'ERR_WEIDA_NEGOTIATION_FAILED'
  | 'ERR_WEIDA_PROTOCOL'
  | 'ERR_WEIDA_INVALID_CONFIG'
  | 'ERR_WEIDA_INVALID_FILTER'
  | 'ERR_WEIDA_CLOSED'
  | 'ERR_WEIDA_IO'
  | 'ERR_WEIDA_UNREACHABLE'

/**
 * Every error weida reports. `code` is stable (`ERR_WEIDA_<CODE>`, the core's code names);
 * `definite` is false only for {@link Indeterminate}: the request reached the peer whole and its
 * reply was lost, so the peer may or may not have acted on it.
 */
export class WeidaError extends Error {
  declare code: WeidaErrorCode
  declare definite: boolean
  /** Set only on a rejection of `Pusher.sendMany`: how many bodies were sent before it. */
  declare sent?: number
  constructor(message: string) {
    super(message)
    this.name = new.target.name
  }
}

/** The endpoint was never connected to any address. */
export class NotConnected extends WeidaError {}
/** The connection ended before the operation succeeded; `lossCause` says why. */
export class ConnectionLost extends WeidaError {
  declare lossCause: LossCause
}
/** Sent whole, reply lost: neither a success nor a definite failure. Do not blindly retry. */
export class Indeterminate extends WeidaError {
  declare lossCause: LossCause
}
/** The peer presented a key outside the configured trust. */
export class Untrusted extends WeidaError {
  /** The `sha256:…` fingerprint that answered. */
  declare fingerprint: string
  /** The pin the address named, or null. */
  declare expected: string | null
}
/** Nothing is bound at that path. */
export class UnknownEndpoint extends WeidaError {
  declare path: string
}
/** The endpoint at that path cannot serve this kind of stream or request; `reason` says why. */
export class Unsupported extends WeidaError {
  declare reason: string
}
/** The peer's application refused; `reason` is what it said. */
export class Rejected extends WeidaError {
  declare reason: string
}
/** The transfer was cancelled (by either side) before it completed. */
export class Canceled extends WeidaError {}
/**
 * A configured bound was exceeded: `limit` names it (`max_header_size`, `max_collected_body`,
 * `remote`, `byte_budget`, `queue`, `max_filters`), `detail` says what exceeded it.
 */
export class LimitExceeded extends WeidaError {
  declare limit: string
  declare detail: string
}
/** `sendTimeoutMs` (or another deadline) passed. */
export class Timeout extends WeidaError {
  /** The last loss when it was a wait for a redial (every connection down); else null. */
  declare lossCause: LossCause | null
}
/** The address could not be parsed; `part` says which part, `reason` why. */
export class InvalidAddress extends WeidaError {
  declare part: string
  declare reason: string
}
/** The peers' guarantee sets or versions do not meet. */
export class NegotiationFailed extends WeidaError {}
/** The peer sent bytes that violate the wire protocol. */
export class ProtocolError extends WeidaError {}
/** A configuration was refused before any traffic. */
export class InvalidConfig extends WeidaError {}
/**
 * A Pub/Sub filter or topic is malformed (refused, never widened): `what` is `'filter'` or
 * `'topic'`, `text` the text as given, `reason` why.
 */
export class InvalidFilter extends WeidaError {
  declare what: string
  declare text: string
  declare reason: string
}
/** The runtime, listener or endpoint was closed or is draining. */
export class Closed extends WeidaError {}
/** An operating-system error; `errno` is its number, or null. */
export class IoError extends WeidaError {
  declare errno: number | null
}
/**
 * A dial found no weida listener, and nothing was sent. `address` is where the dial went
 * (`host:port`, the socket, the in-process name); `why` is `'no_answer'` (nothing answered
 * within `connectTimeoutMs`, 5000 by default: over QUIC a port where nothing listens says
 * nothing) or `'refused'` (no socket file, nothing accepting on it, nothing bound at the name).
 */
export class Unreachable extends WeidaError {
  declare address: string
  declare why: 'no_answer' | 'refused'
}

/**
 * What a call rejects with when its AbortSignal fires (Node's own shape: `name` AbortError,
 * `code` ABORT_ERR, `cause` the signal's reason).
 */
export class AbortError extends Error {
  declare code: 'ABORT_ERR'
  constructor(message = 'the operation was aborted', options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'AbortError'
    this.code = 'ABORT_ERR'
  }
}

/** The class of each code. */
export const errorClasses = {
  ERR_WEIDA_NOT_CONNECTED: NotConnected,
  ERR_WEIDA_CONNECTION_LOST: ConnectionLost,
  ERR_WEIDA_INDETERMINATE: Indeterminate,
  ERR_WEIDA_UNTRUSTED: Untrusted,
  ERR_WEIDA_UNKNOWN_ENDPOINT: UnknownEndpoint,
  ERR_WEIDA_UNSUPPORTED: Unsupported,
  ERR_WEIDA_REJECTED: Rejected,
  ERR_WEIDA_CANCELED: Canceled,
  ERR_WEIDA_LIMIT_EXCEEDED: LimitExceeded,
  ERR_WEIDA_TIMEOUT: Timeout,
  ERR_WEIDA_INVALID_ADDRESS: InvalidAddress,
  ERR_WEIDA_NEGOTIATION_FAILED: NegotiationFailed,
  ERR_WEIDA_PROTOCOL: ProtocolError,
  ERR_WEIDA_INVALID_CONFIG: InvalidConfig,
  ERR_WEIDA_INVALID_FILTER: InvalidFilter,
  ERR_WEIDA_CLOSED: Closed,
  ERR_WEIDA_IO: IoError,
  ERR_WEIDA_UNREACHABLE: Unreachable,
} as const satisfies Record<WeidaErrorCode, typeof WeidaError>

native.registerErrorClasses({ ...errorClasses, ABORT_ERR: AbortError })
