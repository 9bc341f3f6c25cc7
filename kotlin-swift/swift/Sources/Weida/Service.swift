// Services: handlers on endpoints (docs/SERVICES.md), over the generated `Service`,
// `Registration` and `Job` (kotlin-swift/uniffi/src/service.rs). What each outcome does is the
// core's (weida-ffi's service module, which names them); here a handler's `Outcome` is
// converted to its name, and what it threw is passed back as a failure. Every wait is cancelled
// in the core by its task's cancellation, as in Weida.swift (`cancellable`).
import Foundation

/// What a handler says happened to its message (docs/SERVICES.md §2).
public enum Outcome: Sendable {
    /// Processed (on a Rep path: an empty reply).
    case done
    /// Processed; on a Rep path, the reply.
    case reply(Data)
    /// Processed; nothing is completed on a brokerless hop (`Unsupported` is logged once).
    case ack
    /// With no `maxAttempts` or `deadLetter`: gone (at most once); with one, a copy at once.
    case retry
    /// A copy after this many seconds, waited in this process: a crash before then loses it.
    case retryAfter(TimeInterval)
    /// Gone, counted dropped.
    case drop
}

/// A handler: the outcome of one job; what it throws is a failure (counted, then a retry).
public typealias Handler = @Sendable (Job) async throws -> Outcome

private func settings(
    _ concurrency: UInt32?, _ maxAttempts: UInt32?, _ deadLetter: String?, _ retryTo: String?
) -> ServiceSettings {
    ServiceSettings(concurrency: concurrency, maxAttempts: maxAttempts, deadLetter: deadLetter, retryTo: retryTo)
}

extension Service {
    /// A queue: binds a Pull path on `listener`; copies go to it.
    public func queue(
        _ listener: Listener, _ path: String,
        concurrency: UInt32? = nil, maxAttempts: UInt32? = nil, deadLetter: String? = nil
    ) async throws -> Registration {
        let s = settings(concurrency, maxAttempts, deadLetter, nil)
        return try await cancellable { try await queue(listener: listener, path: path, settings: s, cancel: $0) }
    }

    /// A fan-out: binds a Sub path holding `filters`; copies come back to it alone.
    public func fanOut(
        _ listener: Listener, _ path: String, filters: [String],
        concurrency: UInt32? = nil, maxAttempts: UInt32? = nil, deadLetter: String? = nil
    ) async throws -> Registration {
        let s = settings(concurrency, maxAttempts, deadLetter, nil)
        return try await cancellable {
            try await fanOut(listener: listener, path: path, filters: filters, settings: s, cancel: $0)
        }
    }

    /// A puller dialling the bound pusher at `address`; copies go to `retryTo`.
    public func pulling(
        _ address: String, retryTo: String?,
        concurrency: UInt32? = nil, maxAttempts: UInt32? = nil, deadLetter: String? = nil
    ) async throws -> Registration {
        let s = settings(concurrency, maxAttempts, deadLetter, retryTo)
        return try await cancellable { try await pulling(address: address, settings: s, cancel: $0) }
    }

    /// A subscriber dialling the bound publisher at `address`, holding `filters`; copies go to
    /// `retryTo`, their topic in `weida-topic`.
    public func subscribing(
        _ address: String, filters: [String], retryTo: String?,
        concurrency: UInt32? = nil, maxAttempts: UInt32? = nil, deadLetter: String? = nil
    ) async throws -> Registration {
        let s = settings(concurrency, maxAttempts, deadLetter, retryTo)
        return try await cancellable {
            try await subscribing(address: address, filters: filters, settings: s, cancel: $0)
        }
    }

    /// A Rep path: a `.reply`'s data is the reply; copies go to `retryTo`.
    public func replying(
        _ listener: Listener, _ path: String, retryTo: String?,
        concurrency: UInt32? = nil, maxAttempts: UInt32? = nil, deadLetter: String? = nil
    ) async throws -> Registration {
        let s = settings(concurrency, maxAttempts, deadLetter, retryTo)
        return try await cancellable { try await replying(listener: listener, path: path, settings: s, cancel: $0) }
    }
}

extension Outcome {
    /// The outcome as it crosses: its name, a delay in milliseconds, a reply's body.
    fileprivate var named: (name: String, delayMs: Double?, body: Data?) {
        switch self {
        case .done: return ("done", nil, nil)
        case let .reply(body): return ("reply", nil, body)
        case .ack: return ("ack", nil, nil)
        case .retry: return ("retry", nil, nil)
        case let .retryAfter(seconds): return ("retry_after", seconds * 1000, nil)
        case .drop: return ("drop", nil, nil)
        }
    }
}

private func reason(_ error: Error) -> String { "\(type(of: error)): \(error)" }

extension Job {
    /// Gives `outcome` (the pull API; `serve` does this for a handler); `Closed` if one was given.
    public func finish(_ outcome: Outcome) throws {
        let n = outcome.named
        try finish(outcome: n.name, delayMs: n.delayMs, body: n.body)
    }

    /// The handler failed with `error`: logged with its type and text, counted, then a retry.
    public func fail(_ error: Error) throws {
        try fail(reason: reason(error))
    }
}

/// Where the runtime's warnings go by default: standard error, as `weida.service: …`.
public let printWarning: @Sendable (String) -> Void = { w in
    FileHandle.standardError.write(Data("weida.service: \(w)\n".utf8))
}

extension Registration {
    /// The next job, once fewer than `concurrency` are unfinished; `Closed` once stopping.
    public func next() async throws -> Job {
        try await cancellable { try await next(cancel: $0) }
    }

    /// Takes nothing more, waits up to `deadline` seconds for the handlers in flight and copies
    /// due, then closes: `unfinished`, `copiesDropped`. Not cancel-safe: it runs to its end.
    public func stop(deadline: TimeInterval = 30) async throws -> [String: UInt64] {
        try await stop(deadlineMs: deadline * 1000)
    }

    /// Runs `handler` on every job until the registration stops, up to its `concurrency` at once
    /// (`next` waits for a free slot), each job finished with what the handler returned, or
    /// failed with what it threw; an outcome the core refuses (a negative delay) is a failure,
    /// and a job the handler finished itself is left as it is (weida-ffi's `Job::conclude`).
    /// After each, the warnings go to `onWarning`. Returns once the registration is stopping
    /// and the handlers it started are done. A cancelled task cancels its handlers (each job
    /// then a failure, retried as declared) and throws `CancellationError` once they are done;
    /// call `stop` to end it instead.
    public func serve(
        onWarning: @escaping @Sendable (String) -> Void = printWarning, _ handler: @escaping Handler
    ) async throws {
        let log: @Sendable ([String]) -> Void = { [self] warnings in
            for w in warnings { onWarning("\(address() ?? retryAddress()): \(w)") }
        }
        defer { log(takeWarnings()) }
        await withTaskGroup(of: Void.self) { group in
            while true {
                let job: Job
                do {
                    job = try await next()
                } catch WeidaError.Closed {
                    break
                } catch is CancellationError {
                    break
                } catch {
                    continue  // one message the endpoint could not take whole; the next goes on
                }
                group.addTask { await handle(job, handler, log) }
            }
        }
        try Task.checkCancellation()
    }
}

private func handle(_ job: Job, _ handler: Handler, _ log: ([String]) -> Void) async {
    let outcome: Outcome
    do {
        outcome = try await handler(job)
    } catch is CancellationError {
        log(job.concludeFailed(reason: "the handler was cancelled"))
        return
    } catch {
        log(job.concludeFailed(reason: reason(error)))
        return
    }
    let n = outcome.named
    log(job.conclude(outcome: n.name, delayMs: n.delayMs, body: n.body))
}
