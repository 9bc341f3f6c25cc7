// Cancellation: a cancelled task cancels the Rust operation (python/tests/test_cancel.py and the
// Kotlin CancelTest: the same names; "asyncio" there is the Swift task here). Swift's task
// cancellation does not reach a Rust future by itself: the layer fires a `Cancellation` from
// `withTaskCancellationHandler` (Sources/Weida/Weida.swift), and these tests fail without it
// (a cancelled receive or request would wait for ever, past `within`'s deadline).
import Foundation
import XCTest

@testable import Weida

/// What `task` gave, or nil if it threw `CancellationError`.
func orNilIfCancelled<T>(_ task: Task<T, Error>) async throws -> T? {
    do {
        return try await task.value
    } catch is CancellationError {
        return nil
    }
}

/// A task running `body`, returned once it has started (it runs `body` right after).
func started<T>(_ body: @escaping @Sendable () async throws -> T) async -> Task<T, Error> {
    let (running, signal) = AsyncStream<Void>.makeStream()
    let task = Task {
        signal.yield()
        return try await body()
    }
    for await _ in running { break }
    return task
}

final class CancelTests: XCTestCase {
    func test_an_asyncio_cancelled_request_is_canceled_at_the_replier() async throws {
        try await onEveryTransport { _, p in
            let replier = try p.listener.replier("/rpc")
            let req = try p.client.requester()
            try await req.connect(replier.address())
            let pending = Task { try await req.request(payload(64)) }
            // Accepted: the request is under way in the core.
            let ex = try await replier.accept()
            pending.cancel()
            let outcome = try await orNilIfCancelled(pending)
            XCTAssertNil(outcome, "the request ended by the cancellation")
            // The replier sees Canceled: answering a request nobody waits for any more with a
            // reply too large to be buffered whole.
            try await raised("CANCELED") {
                _ = try await ex.takeBody()
                try await ex.reply(payload(16 * 1024 * 1024))
            }
            // The requester is still usable.
            let again = Task { try await req.request(bytes("again")) }
            let next = try await replier.accept()
            try await next.reply(try await next.takeBody())
            let answer = text(try await again.value)
            XCTAssertEqual(answer, "again")
        }
    }

    func test_an_asyncio_cancelled_write_cancels_the_transfer_at_the_reader() async throws {
        try await onEveryTransport { _, p in
            // A send too large to be written at once, cancelled: the reader never sees a short
            // payload (the transfer cut short is Canceled, or it had arrived whole); the next
            // message arrives whole.
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let big = 8 * 1024 * 1024
            let sending = await started { try await pusher.send(payload(big)) }
            sending.cancel()
            _ = try await orNilIfCancelled(sending)
            try await pusher.send(bytes("after"))
            while true {
                let m: Message
                do {
                    m = try await puller.recv()
                } catch WeidaError.Canceled {
                    continue
                }
                if m.body.count == big { continue }
                XCTAssertEqual(text(m.body), "after")
                break
            }
        }
    }

    func test_an_asyncio_cancelled_recv_loses_nothing() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            // Receives waiting for nothing, cancelled: each ends.
            for _ in 0..<10 {
                let waiting = await started { try await puller.recv() }
                waiting.cancel()
                let outcome = try await orNilIfCancelled(waiting)
                XCTAssertNil(outcome)
            }
            // Receives raced with arrivals and cancelled: every message still arrives, in order.
            let n = 200
            let sending = Task { for i in 0..<n { try await pusher.send(bytes("m\(i)")) } }
            var got: [String] = []
            var i = 0
            while got.count < n {
                let r = Task { try await puller.recv() }
                if i % 2 == 0 { r.cancel() }
                i += 1
                if let m = try await orNilIfCancelled(r) { got.append(text(m.body)) }
            }
            try await sending.value
            XCTAssertEqual(got, (0..<n).map { "m\($0)" })
            XCTAssertGreaterThanOrEqual(orphans(), 0)
        }
    }

    func test_a_cancelled_subscriber_recv_loses_nothing() async throws {
        try await onEveryTransport { _, p in
            let publisher = try p.listener.publisher("/t")
            let sub = try p.client.subscriber()
            try await sub.subscribe("x")
            try await sub.connect(publisher.address())
            try await publisher.untilSubscribers(1)
            let waiting = await started { try await sub.recv() }
            waiting.cancel()
            let outcome = try await orNilIfCancelled(waiting)
            XCTAssertNil(outcome)
            // Receives raced with arrivals, every third cancelled. One copy in flight at a time:
            // a burst to a subscriber over AF_UNIX may be dropped by design (reverse_pool_empty,
            // test_pubsub.py: test_an_empty_reverse_pool_drops_and_the_subscription_survives).
            var got: [String] = []
            var published = 0
            var i = 0
            while got.count < 10 {
                let r = Task { try await sub.recv() }
                if published == got.count {
                    XCTAssertEqual(try publisher.publish("x", bytes("c\(published)")), 1)
                    published += 1
                }
                if i % 3 == 0 { r.cancel() }
                i += 1
                if let m = try await orNilIfCancelled(r) { got.append(text(m.body)) }
            }
            XCTAssertEqual(got, (0..<10).map { "c\($0)" })
            XCTAssertEqual(publisher.dropped().total, 0)
        }
    }

    // Cancelling the task that iterates an endpoint's events ends its iteration (the wait in
    // the core is cancelled); the endpoint's events are still there for the next reader.
    func test_a_cancelled_events_iteration_ends() async throws {
        try await onEveryTransport(["inproc"]) { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            let events = try pusher.events()
            let reading = await started { () -> [String] in
                var kinds: [String] = []
                for await e in events { kinds.append(e.kind) }
                return kinds
            }
            reading.cancel()
            let kinds = try await reading.value
            XCTAssertEqual(kinds, [])
            try await pusher.connect(puller.address())
            let first = await events.next()?.kind
            XCTAssertEqual(first, "connected")
        }
    }
}
