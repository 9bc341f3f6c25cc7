// PerProducer ordering outside Pub/Sub (python/tests/test_ordering.py, core/tests/ordering.rs:
// the same names): a puller or a pair whose runtime requires detect gets each message numbered
// with the gap before it, and a level a pattern cannot honour is refused, never downgraded.
import Foundation
import XCTest

@testable import Weida

final class OrderingTests: XCTestCase {
    /// A bound runtime with `limits` and `ordering`, and a plain dialling one, for `body`.
    private func onEveryTransport(
        limits: Options = [:], ordering: String,
        _ body: @escaping @Sendable (Listener, Runtime) async throws -> Void
    ) async throws {
        for t in transports {
            do {
                try await within {
                    let server = try runtime(limits: limits, options: ["ordering": .name(value: ordering)])
                    let client = try runtime(reconnect: never)
                    defer {
                        client.shutdown()
                        server.shutdown()
                    }
                    try await body(try await server.bind(bindAddress(t)), client)
                }
            } catch {
                XCTFail("on \(t): \(error)")
            }
        }
    }

    func test_a_puller_that_requires_ordering_gets_every_message_numbered() async throws {
        try await onEveryTransport(ordering: "detect") { listener, client in
            let puller = try listener.puller("/jobs")
            let pusher = try client.pusher()
            try await pusher.connect(puller.address())
            // Small bodies (a lane's frames) and large ones (a stream each), one at a time.
            for i in 0..<12 {
                let body = i % 4 == 3 ? payload(40_000) : payload(10 + i)
                try await pusher.send(body)
                let m = try await puller.recv()
                XCTAssertEqual(m.sequence, UInt64(i + 1))
                XCTAssertEqual(m.gap, 0)
                XCTAssertEqual(m.body, body)
            }
        }
    }

    func test_a_refused_push_shows_up_as_a_gap() async throws {
        try await onEveryTransport(limits: ["maxCollectedBody": 1000], ordering: "detect") { listener, client in
            let puller = try listener.puller("/jobs")
            let pusher = try client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(payload(100))
            let first = try await puller.recv()
            XCTAssertEqual([first.sequence, first.gap], [1, 0])
            // Number 2 is above the puller's maxCollectedBody: its receive fails.
            try await pusher.send(payload(2000))
            try await raised("LIMIT_EXCEEDED") { try await puller.recv() }
            try await pusher.send(payload(100))
            let third = try await puller.recv()
            XCTAssertEqual([third.sequence, third.gap], [3, 1])
        }
    }

    func test_a_level_a_pattern_cannot_honour_is_refused_not_downgraded() async throws {
        try await onEveryTransport(ordering: "reassemble") { listener, client in
            let puller = try listener.puller("/jobs")
            let replier = try listener.replier("/echo")
            let pair = try listener.pair("/chat")
            // A pusher and a dialling pair offer detect only; a requester offers no ordering.
            try await raised("NEGOTIATION_FAILED") { try await client.pusher().connect(puller.address()) }
            try await raised("NEGOTIATION_FAILED") { try await client.requester().connect(replier.address()) }
            try await raised("NEGOTIATION_FAILED") { try await client.pair().connect(pair.address()!) }
        }
    }

    func test_a_pair_refused_above_its_peers_limit_is_a_gap() async throws {
        for t in transports {
            do {
                try await within {
                    let limits: Options = ["maxCollectedBody": 1000]
                    let detect: Options = ["ordering": .name(value: "detect")]
                    let server = try runtime(limits: limits, options: detect)
                    let client = try runtime(limits: limits, reconnect: never, options: detect)
                    defer {
                        client.shutdown()
                        server.shutdown()
                    }
                    let bound = try await server.bind(bindAddress(t)).pair("/chat")
                    let dialling = try client.pair()
                    try await dialling.connect(bound.address()!)
                    // Both ways: the dialling pair numbers per connection, the bound pair per
                    // claim.
                    for (sender, receiver) in [(dialling, bound), (bound, dialling)] {
                        try await sender.send(payload(100))
                        let first = try await receiver.recv()
                        XCTAssertEqual([first.sequence, first.gap], [1, 0])
                        // Number 2 is above the receiver's maxCollectedBody; the send may itself
                        // be refused before its FIN is queued (the refusal race, PATTERNS §1.6).
                        do {
                            try await sender.send(payload(2000))
                        } catch let e as WeidaError where e.code == "LIMIT_EXCEEDED" {}
                        try await raised("LIMIT_EXCEEDED") { try await receiver.recv() }
                        try await sender.send(payload(100))
                        let third = try await receiver.recv()
                        XCTAssertEqual([third.sequence, third.gap], [3, 1])
                    }
                }
            } catch {
                XCTFail("on \(t): \(error)")
            }
        }
    }
}
