// Redial and PeerEvents (python/tests/test_reconnect.py and the Kotlin ReconnectTest: the same
// names).
import Foundation
import XCTest

@testable import Weida

/// A runtime that redials at once and briefly, with no jitter.
func redialling() throws -> Runtime {
    try runtime(reconnect: ["initialMs": 20, "maxMs": 100, "jitter": false])
}

extension PeerEvents {
    /// The next event of `kind`, skipping only those of `between`.
    func until(_ kind: String, between: Set<String>) async throws -> PeerEvent {
        for await e in self {
            XCTAssertTrue(e.kind == kind || between.contains(e.kind), "unexpected \(e)")
            if e.kind == kind { return e }
        }
        throw Deadline()
    }
}

final class ReconnectTests: XCTestCase {
    func test_a_pusher_whose_server_restarts_delivers_again_with_no_second_connect() async throws {
        for transport in ["unix", "inproc"] {
            try await within {
                let bind = bindAddress(transport)
                let server = try runtime()
                var puller = try await server.bind(bind).puller("/jobs")
                let client = try redialling()
                defer { client.shutdown() }
                let pusher = try client.pusher()
                let events = try pusher.events()
                try await pusher.connect(puller.address())
                let first = await events.next()?.kind
                XCTAssertEqual(first, "connected")
                try await pusher.send(bytes("one"))
                let one = text(try await puller.recv().body)
                XCTAssertEqual(one, "one")
                await server.closeAndWait()
                let afterClose = await events.next()
                let lost = try XCTUnwrap(afterClose)
                XCTAssertEqual([lost.kind, lost.url], ["lost", puller.address()])
                let afterLoss = await events.next()
                let retrying = try XCTUnwrap(afterLoss)
                XCTAssertEqual(retrying.kind, "retrying")
                XCTAssertEqual(retrying.attempt, 1)
                XCTAssertEqual(retrying.delayMs, transport == "inproc" ? 0.0 : 20.0)
                XCTAssertEqual(try pusher.peerCount(), 0)
                let second = try runtime()
                defer { second.shutdown() }
                puller = try await second.bind(bind).puller("/jobs")
                let e = try await events.until("connected", between: ["retrying"])
                XCTAssertEqual(e.url, puller.address())
                XCTAssertEqual(try pusher.peerCount(), 1)
                try await pusher.send(bytes("two"))
                let two = text(try await puller.recv().body)
                XCTAssertEqual(two, "two")
            }
        }
    }

    func test_never_reports_connection_lost_as_before() async throws {
        for transport in ["unix", "inproc"] {
            try await within {
                let server = try runtime()
                let puller = try await server.bind(bindAddress(transport)).puller("/jobs")
                let client = try redialling()
                defer { client.shutdown() }
                let pusher = try client.pusher(endpointOptions(reconnect: never))
                let events = try pusher.events()
                try await pusher.connect(puller.address())
                await server.closeAndWait()
                _ = try await events.until("lost", between: ["connected"])
                let afterLost = await events.next()?.kind
                XCTAssertEqual(afterLost, "gave_up")
                try await raised("CONNECTION_LOST") { try await pusher.send(bytes("x")) }
            }
        }
    }
}
