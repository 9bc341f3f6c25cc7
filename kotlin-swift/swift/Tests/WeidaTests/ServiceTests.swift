// The handler runtime from Swift (docs/SERVICES.md; python/tests/test_service.py and the Kotlin
// ServiceTest have the same names): the outcomes, the attempt header, the limit and the dead
// letter, a registration without an address refused, a Rep handler's reply, and serve's
// concurrency and stop.
import Foundation
import XCTest

@testable import Weida

/// A value shared between a test and its handlers, which run on other threads.
private final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var v: T

    init(_ v: T) { self.v = v }

    var value: T {
        lock.lock()
        defer { lock.unlock() }
        return v
    }

    @discardableResult
    func update<R>(_ f: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return f(&v)
    }
}

/// An event: `wait()` returns once `fire()` was called.
private actor Signal {
    private var fired = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func fire() {
        fired = true
        for w in waiters { w.resume() }
        waiters = []
    }

    func wait() async {
        if fired { return }
        await withCheckedContinuation { waiters.append($0) }
    }
}

/// A handler's failure, as Python's `ValueError("no disk")`.
private struct NoDisk: Error, CustomStringConvertible {
    var description: String { "no disk" }
}

private func counts(_ c: [String: UInt64], _ names: String...) -> [UInt64] { names.map { c[$0]! } }

final class ServiceTests: XCTestCase {
    func test_ack_and_drop_raise_unsupported_and_count_as_processed_and_dropped() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            for body in ["a", "b", "c"] { try await pusher.send(bytes(body)) }
            for outcome in [Outcome.ack, .drop, .done] {
                let job = try await reg.next()
                try await raised("UNSUPPORTED") { try job.ack() }
                try await raised("UNSUPPORTED") { try job.discard() }
                try job.finish(outcome)
                try await raised("CLOSED") { try job.finish(.done) }  // an outcome is given once
            }
            XCTAssertEqual(counts(reg.counters(), "handled", "dropped", "retried", "inFlight"), [2, 1, 0, 0])
            try await pusher.send(bytes("one more"))
            let job = try await reg.next()
            try await raised("INVALID_CONFIG") { try job.finish(outcome: "later", delayMs: nil, body: nil) }
            try job.finish(.done)
            _ = try await reg.stop()
        }
    }

    func test_retry_with_max_attempts_copies_until_the_limit_then_dead_letters() async throws {
        try await onEveryTransport { _, p in
            let dead = try p.listener.puller("/dead")
            let reg = try await Service(runtime: p.server).queue(
                p.listener, "/jobs", maxAttempts: 3, deadLetter: dead.address())
            let seen = Locked<[String]>([])
            let serving = Task {
                try await reg.serve { job in
                    seen.update { $0.append("\(text(job.message().body)) \(job.attempt())") }
                    return .retry
                }
            }
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            try await pusher.send(bytes("job"), meta: ["trace": bytes("t-1")])
            let letter = try await dead.recv()
            XCTAssertEqual(letter.body, bytes("job"))
            XCTAssertEqual(letter.meta("trace"), bytes("t-1"))
            XCTAssertEqual(letter.meta("weida-attempt"), bytes("3"))
            XCTAssertEqual(seen.value, ["job 1", "job 2", "job 3"])
            let report = try await reg.stop()
            XCTAssertEqual(report, ["unfinished": 0, "copiesDropped": 0])
            try await serving.value
            XCTAssertEqual(counts(reg.counters(), "retried", "deadLettered", "handled"), [2, 1, 0])
        }
    }

    func test_each_kind_of_registration_sends_its_copies_where_it_should() async throws {
        try await withPair("quic") { p in
            let retries = try p.listener.puller("/retries")
            let service = Service(runtime: p.client)
            // A bound fan-out: its copy comes back to its own path alone, under its topic.
            let fan = try await Service(runtime: p.server).fanOut(
                p.listener, "/events", filters: ["orders.#"], maxAttempts: 2)
            let publisher = try p.client.publisher()
            try await publisher.connect(fan.address()!)
            XCTAssertEqual(try publisher.publish("orders.new", bytes("o1")), 1)
            let first = try await fan.next()
            XCTAssertEqual(first.attempt(), 1)
            XCTAssertEqual(first.message().topic, "orders.new")
            try first.finish(.retry)
            let again = try await fan.next()
            XCTAssertEqual(text(again.message().body), "o1")
            XCTAssertEqual(again.attempt(), 2)
            XCTAssertEqual(again.message().topic, "orders.new")
            try again.finish(.done)
            // A puller dialling a bound pusher: its copy goes to retryTo.
            let work = try p.listener.pusher("/work")
            let pulling = try await service.pulling(work.address(), retryTo: retries.address())
            try await work.send(bytes("w1"))
            try await pulling.next().finish(.retryAfter(0))
            let copy = try await retries.recv()
            XCTAssertEqual(text(copy.body), "w1")
            XCTAssertEqual(copy.meta("weida-attempt"), bytes("2"))
            // A subscriber dialling a bound publisher: what its filters hold, copied to retryTo
            // with its topic in a header.
            let events = try p.listener.publisher("/feed")
            let subscribing = try await service.subscribing(
                events.address(), filters: ["orders.#"], retryTo: retries.address(), maxAttempts: 3)
            XCTAssertEqual(events.subscriberCount(), 1)
            XCTAssertEqual(try events.publish("billing.paid", bytes("b1")), 0)
            XCTAssertEqual(try events.publish("orders.paid", bytes("o2")), 1)
            let job = try await subscribing.next()
            XCTAssertEqual(text(job.message().body), "o2")
            XCTAssertEqual(job.message().topic, "orders.paid")
            try job.finish(.retry)
            let copied = try await retries.recv()
            XCTAssertEqual(text(copied.body), "o2")
            XCTAssertEqual(copied.meta("weida-attempt"), bytes("2"))
            XCTAssertEqual(copied.meta("weida-topic"), bytes("orders.paid"))
            XCTAssertNil(pulling.address())
            XCTAssertNil(subscribing.address())
            try await raised("INVALID_CONFIG") {
                try await service.subscribing(events.address(), filters: ["orders.#"], retryTo: nil)
            }
            for r in [fan, pulling, subscribing] { _ = try await r.stop() }
        }
    }

    func test_retry_without_a_limit_redelivers_nothing_and_a_failure_is_counted() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs")
            let calls = Locked<[String]>([])
            let warnings = Locked<[String]>([])
            let last = Signal()
            let serving = Task {
                try await reg.serve(onWarning: { w in warnings.update { $0.append(w) } }) { job in
                    let body = text(job.message().body)
                    calls.update { $0.append(body) }
                    if body == "last" { await last.fire() }
                    if body == "fail" { throw NoDisk() }
                    return body == "again" ? .retry : .done
                }
            }
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            for body in ["again", "fail", "last"] { try await pusher.send(bytes(body)) }
            await last.wait()
            _ = try await reg.stop()  // after the last handler started: the stop waits for it
            try await serving.value
            XCTAssertEqual(calls.value, ["again", "fail", "last"])
            // The failure goes to onWarning, with its path and reason.
            let w = warnings.value
            XCTAssertEqual(w.count, 1, "\(w)")
            XCTAssertTrue(w.first?.contains("path=/jobs") == true, "\(w)")
            XCTAssertTrue(w.first?.contains("reason=NoDisk: no disk") == true, "\(w)")
            XCTAssertEqual(counts(reg.counters(), "handled", "dropped", "failed", "retried"), [1, 2, 1, 0])
        }
    }

    func test_a_refused_outcome_is_a_failure_and_serve_goes_on() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs", maxAttempts: 2)
            let warnings = Locked<[String]>([])
            let retried = Signal()
            let last = Signal()
            let serving = Task {
                try await reg.serve(onWarning: { w in warnings.update { $0.append(w) } }) { job in
                    if text(job.message().body) == "last" {
                        await last.fire()
                    } else if job.attempt() == 2 {
                        await retried.fire()
                    } else {
                        return .retryAfter(-1)  // refused by the core: a failure, retried as declared
                    }
                    return .done
                }
            }
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            try await pusher.send(bytes("refused"))
            await retried.wait()
            try await pusher.send(bytes("last"))
            await last.wait()
            _ = try await reg.stop()
            try await serving.value
            let w = warnings.value
            XCTAssertEqual(w.count, 1, "\(w)")
            XCTAssertTrue(w.first?.contains("path=/jobs") == true, "\(w)")
            XCTAssertTrue(w.first?.contains("reason=the outcome was refused") == true, "\(w)")
            XCTAssertEqual(counts(reg.counters(), "failed", "retried", "handled", "inFlight"), [1, 1, 2, 0])
        }
    }

    func test_a_job_the_handler_finished_itself_is_not_finished_twice() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs")
            let warnings = Locked<[String]>([])
            let last = Signal()
            let serving = Task {
                try await reg.serve(onWarning: { w in warnings.update { $0.append(w) } }) { job in
                    if text(job.message().body) == "last" {
                        await last.fire()
                    } else {
                        try job.finish(.done)  // the pull API; serve then leaves the job as it is
                    }
                    return .done
                }
            }
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            for body in ["first", "last"] { try await pusher.send(bytes(body)) }
            await last.wait()
            _ = try await reg.stop()
            try await serving.value
            XCTAssertEqual(warnings.value, [])
            XCTAssertEqual(counts(reg.counters(), "handled", "failed", "dropped", "inFlight"), [2, 0, 0, 0])
        }
    }

    // Nexts raced with arrivals, every other one cancelled: a job taken for a cancelled next
    // goes back (weida-ffi's next_call), so every job arrives, in order, at its first attempt,
    // nothing counted failed (as CancelTests races receives).
    func test_a_next_cancelled_as_its_job_arrives_loses_nothing() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            let n = 100
            let sending = Task { for i in 0..<n { try await pusher.send(bytes("m\(i)")) } }
            var got: [String] = []
            var i = 0
            while got.count < n {
                let r = Task { try await reg.next() }
                if i % 2 == 0 { r.cancel() }
                i += 1
                if let job = try await orNilIfCancelled(r) {
                    XCTAssertEqual(job.attempt(), 1)
                    got.append(text(job.message().body))
                    try job.finish(.done)
                }
            }
            try await sending.value
            XCTAssertEqual(got, (0..<n).map { "m\($0)" })
            XCTAssertEqual(
                counts(reg.counters(), "handled", "failed", "dropped", "inFlight"), [UInt64(n), 0, 0, 0])
            _ = try await reg.stop()
        }
    }

    func test_retry_after_waits_then_the_copy_is_the_next_attempt() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            try await pusher.send(bytes("later"))
            let job = try await reg.next()
            let finished = Date()
            try job.finish(.retryAfter(0.2))
            XCTAssertEqual(reg.counters()["delayed"], 1)
            let copy = try await reg.next()
            XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(finished), 0.2)
            XCTAssertEqual(text(copy.message().body), "later")
            XCTAssertEqual(copy.attempt(), 2)
            try copy.finish(.done)
            _ = try await reg.stop()
        }
    }

    func test_a_registration_without_an_address_is_refused_at_start() async throws {
        try await withPair("quic") { p in
            let service = Service(runtime: p.server)
            let address = p.listener.address()
            let rep = try await raised("INVALID_CONFIG") { try await service.replying(p.listener, "/rpc", retryTo: nil) }
            XCTAssertTrue(rep.description.contains("retry_to"), rep.description)
            let pulling = try await raised("INVALID_CONFIG") { try await service.pulling("\(address)/work", retryTo: nil) }
            XCTAssertTrue(pulling.description.contains("retry_to"), pulling.description)
            let own = try await raised("INVALID_CONFIG") {
                try await service.queue(
                    listener: p.listener, path: "/jobs", settings: ServiceSettings(retryTo: "\(address)/elsewhere"))
            }
            XCTAssertTrue(own.description.contains("own path"), own.description)
            let loop = try await raised("INVALID_CONFIG") {
                try await service.queue(p.listener, "/jobs", deadLetter: "\(address)/jobs")
            }
            XCTAssertTrue(loop.description.contains("come back"), loop.description)
            // Nothing stayed bound.
            _ = try p.listener.replier("/rpc")
            _ = try p.listener.puller("/jobs")
        }
    }

    func test_a_rep_handler_replies_with_what_it_returns_and_a_retry_is_refused() async throws {
        try await withPair("quic") { p in
            let retries = try p.listener.puller("/retries")
            let reg = try await Service(runtime: p.server).replying(
                p.listener, "/rpc", retryTo: retries.address(), maxAttempts: 2)
            let serving = Task {
                try await reg.serve { job in
                    switch text(job.message().body) {
                    case "later": return .retryAfter(0)
                    case "drop": return .drop
                    case "ack": return .ack
                    case let body: return .reply(bytes(body.uppercased()))
                    }
                }
            }
            let req = try p.client.requester()
            try await req.connect("\(p.listener.address())/rpc")
            let ping = try await req.request(bytes("ping"))
            XCTAssertEqual(ping, bytes("PING"))
            let acked = try await req.request(bytes("ack"))
            XCTAssertEqual(acked, Data())
            let retried = try await raised("REJECTED") { try await req.request(bytes("later")) }
            XCTAssertTrue(retried.description.contains("retried"), retried.description)
            let copy = try await retries.recv()
            XCTAssertEqual(text(copy.body), "later")
            XCTAssertEqual(copy.meta("weida-attempt"), bytes("2"))
            let dropped = try await raised("REJECTED") { try await req.request(bytes("drop")) }
            XCTAssertTrue(dropped.description.contains("dropped"), dropped.description)
            _ = try await reg.stop()
            try await serving.value
        }
    }

    func test_concurrency_runs_that_many_handlers_at_once_and_a_stop_waits_for_them() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs", concurrency: 3)
            let running = Locked((now: 0, most: 0))
            let gate = Signal()
            let three = Signal()
            let serving = Task {
                try await reg.serve { _ in
                    let now = running.update { r -> Int in
                        r.now += 1
                        r.most = max(r.most, r.now)
                        return r.now
                    }
                    if now == 3 { await three.fire() }
                    await gate.wait()
                    running.update { $0.now -= 1 }
                    return .done
                }
            }
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            for i in 0..<8 { try await pusher.send(bytes("m\(i)")) }
            await three.wait()
            XCTAssertEqual(reg.counters()["inFlight"], 3)
            let stopped = Locked(false)
            let stopping = Task {
                let report = try await reg.stop()  // the stop waits for the three in flight
                stopped.update { $0 = true }
                return report
            }
            await Task.yield()
            XCTAssertFalse(stopped.value)
            await gate.fire()
            let report = try await stopping.value
            XCTAssertEqual(report, ["unfinished": 0, "copiesDropped": 0])
            try await serving.value
            XCTAssertEqual(running.value.most, 3)
            XCTAssertEqual(reg.counters()["handled"], 3)
        }
    }
    // Swift's own, as Kotlin's ServiceTest: the handlers of a cancelled serve are cancelled, each
    // job is then a failure, retried as declared, and serve throws CancellationError; the copy is
    // the next job even if serve's own cancelled `next` took it as it ended.
    func test_a_cancelled_serve_fails_its_jobs_in_flight_and_they_are_retried_as_declared() async throws {
        try await withPair("quic") { p in
            let reg = try await Service(runtime: p.server).queue(p.listener, "/jobs", maxAttempts: 2)
            let warnings = Locked<[String]>([])
            let started = Signal()
            let serving = Task {
                try await reg.serve(onWarning: { w in warnings.update { $0.append(w) } }) { _ in
                    await started.fire()
                    try await Task.sleep(nanoseconds: 60_000_000_000)
                    return .done
                }
            }
            let pusher = try p.client.pusher()
            try await pusher.connect(reg.address()!)
            try await pusher.send(bytes("slow"))
            await started.wait()
            serving.cancel()
            do {
                try await serving.value
                XCTFail("a cancelled serve returned")
            } catch is CancellationError {}
            let w = warnings.value
            XCTAssertTrue(w.contains { $0.contains("attempt=1 reason=the handler was cancelled") }, "\(w)")
            let copy = try await reg.next()
            XCTAssertEqual(text(copy.message().body), "slow")
            XCTAssertEqual(copy.attempt(), 2)
            try copy.finish(.done)
            XCTAssertEqual(counts(reg.counters(), "failed", "retried", "handled", "inFlight"), [1, 1, 1, 0])
            _ = try await reg.stop()
        }
    }
}
