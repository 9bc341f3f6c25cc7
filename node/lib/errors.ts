// The error classes: one per core error code (docs/BINDINGS.md, "Errors"), all under
// WeidaError. The addon maps every core error in one Rust function (src/error.rs, `to_js`) and
// constructs it as the class registered here for its `code`, then sets its fields.

import * as native from '../native.cjs'

/** Why a connection ended (`err.cause` of ConnectionLost and Indeterminate). */
export type LossCause = 'idle_timeout' | 'peer_closed' | 'locally_closed' | 'reset' | 'transport_error'

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

/**
 * Every error weida reports. `code` is stable (`ERR_WEIDA_<CODE>`, the core's code names);
 * `definite` is false only for {@link Indeterminate}: the request reached the peer whole and its
 * reply was lost, so the peer may or may not have acted on it.
 */
export class WeidaError extends Error {
  declare code: WeidaErrorCode
  declare definite: boolean
  constructor(message: string) {
    super(message)
    this.name = new.target.name
  }
}

/** The endpoint was never connected to any address. */
export class NotConnected extends WeidaError {}
/** The connection ended before the operation succeeded; `cause` says why. */
export class ConnectionLost extends WeidaError {
  declare cause: LossCause
}
/** Sent whole, reply lost: neither a success nor a definite failure. Do not blindly retry. */
export class Indeterminate extends WeidaError {
  declare cause: LossCause
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
/** The endpoint at that path cannot serve this kind of stream or request. */
export class Unsupported extends WeidaError {}
/** The peer's application refused; the message is its reason. */
export class Rejected extends WeidaError {}
/** The transfer was cancelled (by either side) before it completed. */
export class Canceled extends WeidaError {}
/** A configured bound was exceeded. */
export class LimitExceeded extends WeidaError {}
/** `sendTimeoutMs` (or another deadline) passed. */
export class Timeout extends WeidaError {}
/** The address could not be parsed; the message says which part. */
export class InvalidAddress extends WeidaError {}
/** The peers' guarantee sets or versions do not meet. */
export class NegotiationFailed extends WeidaError {}
/** The peer sent bytes that violate the wire protocol. */
export class ProtocolError extends WeidaError {}
/** A configuration was refused before any traffic. */
export class InvalidConfig extends WeidaError {}
/** A Pub/Sub filter or topic is malformed (refused, never widened); the message says where. */
export class InvalidFilter extends WeidaError {}
/** The runtime, listener or endpoint was closed or is draining. */
export class Closed extends WeidaError {}
/** An operating-system error. */
export class IoError extends WeidaError {}

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
} as const satisfies Record<WeidaErrorCode, typeof WeidaError>

native.registerErrorClasses({ ...errorClasses, ABORT_ERR: AbortError })
