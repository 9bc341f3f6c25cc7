// Streamed transfers (python/tests/test_patterns.py, core/tests/patterns.rs: the same names): a
// message written in parts and finished, with its receipt, and a streamed request and its reply.
import Foundation
import XCTest

@testable import Weida

final class StreamTests: XCTestCase {
    func test_push_pull_delivers_every_message_and_a_streamed_one_with_its_receipt() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let t = try await pusher.open(meta: ["k": bytes("v")])
            try await t.write(body: bytes("part1-"))
            try await t.write(body: bytes("part2"))
            try await t.finish().delivered()
            let m = try await puller.recv()
            XCTAssertEqual(text(m.body), "part1-part2")
            XCTAssertEqual(m.meta("k"), bytes("v"))
        }
    }

    func test_a_streamed_request_is_answered_as_it_is_written() async throws {
        try await onEveryTransport { _, p in
            let replier = try p.listener.replier("/echo")
            let req = try p.client.requester()
            try await req.connect(replier.address())
            let serving = Task {
                let ex = try await replier.accept()
                try await ex.reply(try await ex.takeBody())
            }
            let opened = try await req.open(meta: nil)
            try await opened.transfer.write(body: payload(300_000))
            _ = try await opened.transfer.finish()
            let answer = try await opened.reply.body()
            XCTAssertEqual(answer.body.count, 300_000)
            _ = try await serving.value
        }
    }
}
