// BUS (python/tests/test_bus.py, core/tests/bus.rs: the same names): every member's message
// reaches every other member, never itself, over every transport.
import Foundation
import XCTest

@testable import Weida

final class BusTests: XCTestCase {
    /// `n` members, each in a runtime of its own, connected to each other, for `body`.
    private func members(_ n: Int, _ body: @escaping @Sendable ([Bus]) async throws -> Void) async throws {
        for t in transports {
            do {
                try await within {
                    let runtimes = try (0..<n).map { _ in try runtime(reconnect: never) }
                    defer { runtimes.forEach { $0.shutdown() } }
                    var ms: [Bus] = []
                    for rt in runtimes { ms.append(try rt.bus(try await rt.bind(bindAddress(t)), "/bus")) }
                    for a in ms { for b in ms where a !== b { try await a.connect(b.address()) } }
                    try await body(ms)
                }
            } catch {
                XCTFail("on \(t): \(error)")
            }
        }
    }

    func test_every_member_sees_every_other_members_message() async throws {
        try await members(3) { ms in
            let names = ["a", "b", "c"]
            for (i, m) in ms.enumerated() {
                let queued = try await m.send(bytes(names[i]))
                XCTAssertEqual(queued, 2)
            }
            for (i, m) in ms.enumerated() {
                let (x, y) = (try await m.recv(), try await m.recv())
                XCTAssertEqual([text(x.body), text(y.body)].sorted(), names.filter { $0 != names[i] })
            }
        }
    }

    func test_a_sender_never_receives_its_own_message() async throws {
        try await members(2) { ms in
            let (a, b) = (ms[0], ms[1])
            for i in 0..<10 { try await a.send(bytes("a\(i)")) }
            try await b.send(bytes("from b"))
            let first = try await a.recv()
            XCTAssertEqual(text(first.body), "from b")
            XCTAssertNil(try a.tryRecv())
            for i in 0..<10 {
                let m = try await b.recv()
                XCTAssertEqual(text(m.body), "a\(i)")
            }
        }
    }
}
