// Pub/Sub the other way round (python/tests/test_collector.py, core/tests/collector.rs: the same
// names): dialling publishers feed a bound subscriber, a collector, which keeps what its filters
// select, over every transport.
import Foundation
import XCTest

@testable import Weida

final class CollectorTests: XCTestCase {
    /// `n` runtimes, for `body`, on every transport.
    private func runtimes(_ n: Int, _ body: @escaping @Sendable (String, [Runtime]) async throws -> Void) async throws {
        for t in transports {
            do {
                try await within {
                    let rts = try (0..<n).map { _ in try runtime(reconnect: never) }
                    defer { rts.forEach { $0.shutdown() } }
                    try await body(t, rts)
                }
            } catch {
                XCTFail("on \(t): \(error)")
            }
        }
    }

    func test_two_dialling_publishers_feed_one_collector() async throws {
        try await runtimes(3) { t, rts in
            let collector = try await rts[0].bind(bindAddress(t)).subscriber("/logs")
            try collector.subscribe("logs.#")
            let (a, b) = (try rts[1].publisher(), try rts[2].publisher())
            for p in [a, b] {
                try await p.connect(collector.address())
                XCTAssertEqual(p.peerCount(), 1)
            }
            for i in 0..<20 {
                XCTAssertEqual(try a.publish("logs.a", bytes("a\(i)")), 1)
                XCTAssertEqual(try b.publish("logs.b.x", bytes("b\(i)")), 1)
            }
            var got: [String: Message] = [:]
            while got.count < 40 {
                let m = try await collector.recv()
                got[text(m.body)] = m
            }
            XCTAssertEqual(got["a3"]?.topic, "logs.a")
            XCTAssertEqual(got["b7"]?.topic, "logs.b.x")
            XCTAssertEqual(collector.discarded(), 0)
        }
    }

    func test_a_collector_keeps_what_its_filters_select_and_counts_the_rest() async throws {
        try await runtimes(2) { t, rts in
            let collector = try await rts[0].bind(bindAddress(t)).subscriber("/logs")
            try collector.subscribe("logs.*.error")
            XCTAssertEqual(collector.filters(), ["logs.*.error"])
            let p = try rts[1].publisher()
            try await p.connect(collector.address())
            for topic in ["logs.web.info", "logs.db.error", "metrics.web.error", "logs.web.error"] {
                try p.publish(topic, bytes(topic))
            }
            let (x, y) = (try await collector.recv(), try await collector.recv())
            XCTAssertEqual([text(x.body), text(y.body)].sorted(), ["logs.db.error", "logs.web.error"])
            XCTAssertTrue(try collector.unsubscribe("logs.*.error"))
            XCTAssertFalse(try collector.unsubscribe("logs.*.error"))
            XCTAssertThrowsError(try collector.subscribe("logs.**")) { e in
                XCTAssertEqual((e as? WeidaError)?.code, "INVALID_FILTER")
            }
            try collector.subscribe("end")
            try p.publish("end", bytes("end"))
            for try await m in collector.messages() {
                XCTAssertEqual(text(m.body), "end")
                break
            }
        }
    }
}
