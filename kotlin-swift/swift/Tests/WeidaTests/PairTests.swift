// PAIR and a pusher that binds (python/tests/test_pair.py and test_bound_push.py,
// core/tests/pair.rs and bound_push.rs: the same names), over every transport.
import Foundation
import XCTest

@testable import Weida

final class PairTests: XCTestCase {
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

    func test_both_directions_carry_transfers_concurrently() async throws {
        try await runtimes(2) { t, rts in
            let bound = try await rts[0].bind(bindAddress(t)).pair("/chat")
            let dialling = try rts[1].pair()
            XCTAssertNil(dialling.address())
            try await dialling.connect(bound.address()!)
            XCTAssertEqual(dialling.peerCount(), 1)
            try await dialling.send(bytes("from the dialler"))
            try await bound.send(bytes("from the bound side"))
            let (a, b) = (try await bound.recv(), try await dialling.recv())
            XCTAssertEqual(text(a.body), "from the dialler")
            XCTAssertEqual(text(b.body), "from the bound side")
        }
    }

    func test_a_second_connection_is_refused_and_the_first_keeps_working() async throws {
        try await runtimes(3) { t, rts in
            let bound = try await rts[0].bind(bindAddress(t)).pair("/chat")
            let first = try rts[1].pair()
            try await first.connect(bound.address()!)
            do {
                try await rts[2].pair().connect(bound.address()!)
                XCTFail("a second peer was let in")
            } catch let e as WeidaError {
                XCTAssertEqual(e.code, "LIMIT_EXCEEDED")
            }
            try await first.send(bytes("still here"))
            let m = try await bound.recv()
            XCTAssertEqual(text(m.body), "still here")
        }
    }

    func test_workers_that_connect_before_and_after_the_first_send_each_get_their_share() async throws {
        try await runtimes(3) { t, rts in
            let jobs = try await rts[0].bind(bindAddress(t)).pusher("/jobs")
            let a = try rts[1].puller()
            try await a.connect(jobs.address())
            for i in 0..<2 { try await jobs.send(bytes("job \(i)")) }
            for i in 0..<2 {
                let m = try await a.recv()
                XCTAssertEqual(text(m.body), "job \(i)")
            }
            let b = try rts[2].puller()
            try await b.connect(jobs.address())
            XCTAssertEqual(jobs.peerCount(), 2)
            for i in 2..<6 { try await jobs.send(bytes("job \(i)")) }
            var got: [String] = []
            for _ in 0..<2 {
                got.append(text(try await a.recv().body))
                got.append(text(try await b.recv().body))
            }
            XCTAssertEqual(got.sorted(), (2..<6).map { "job \($0)" })
        }
    }
}
