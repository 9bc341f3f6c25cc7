// Streamed transfers (python/tests/test_patterns.py, test_cancel.py, core/tests/patterns.rs: the
// same names): a message written in parts and finished, with its receipt, one accepted and read
// in parts, a streamed request and its reply, read and written in parts, and raw streams (a
// peer's one-way transfer and exchange, which an acceptor takes both).
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

    func test_an_accepted_transfer_is_read_in_chunks_with_what_came_with_it() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let t = try await pusher.open(meta: ["k": bytes("v")])
            try await t.write(payload(200_000))
            try await t.finish()
            let incoming = try await puller.accept()
            XCTAssertEqual(incoming.path(), "/jobs")
            XCTAssertEqual(incoming.meta("k"), bytes("v"))
            XCTAssertNil(incoming.topic())
            var got = Data()
            for try await c in incoming.chunks() { got.append(c) }
            XCTAssertEqual(got, payload(200_000))
            let after = try await incoming.readChunk()
            XCTAssertNil(after, "still nil after the end")
            // A whole message next, taken by accept and collected.
            try await pusher.send(bytes("next"))
            let next = try await puller.accept().collect(1000)
            XCTAssertEqual(text(next), "next")
        }
    }

    func test_push_cancel_mid_transfer_is_canceled_at_the_reader() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let t = try await pusher.open(meta: nil)
            try await t.write(payload(100_000))
            let incoming = try await puller.accept()
            let first = try await incoming.readChunk()
            XCTAssertNotNil(first)
            t.cancelTransfer()
            try await raised("CANCELED") {
                for try await _ in incoming.chunks() {}
            }
            try await pusher.send(bytes("next"))
            let m = try await puller.recv()
            XCTAssertEqual(text(m.body), "next")
        }
    }

    func test_a_streamed_reply_and_chunked_reads() async throws {
        try await onEveryTransport { _, p in
            let replier = try p.listener.replier("/stream")
            let serving = Task {
                let ex = try await replier.accept()
                var chunks: [Data] = []
                for try await c in ex.chunks() { chunks.append(c) }
                XCTAssertEqual(chunks.reduce(0) { $0 + $1.count }, 200_000)
                let out = try await ex.openReply(["parts": bytes("\(chunks.count)")])
                try await out.writeChunks([
                    Data(repeating: UInt8(ascii: "x"), count: 10), Data(repeating: UInt8(ascii: "y"), count: 10),
                ])
                try await out.write(Data(repeating: UInt8(ascii: "z"), count: 10))
                try await out.finish()
            }
            let req = try p.client.requester()
            try await req.connect(replier.address())
            let opened = try await req.open(meta: nil)
            try await opened.transfer.write(payload(200_000))
            try await opened.transfer.finish()
            let reply = try await opened.reply.reply()
            XCTAssertNotNil(reply.meta("parts"))
            var got = Data()
            for try await c in reply.chunks() { got.append(c) }
            XCTAssertEqual(
                text(got),
                String(repeating: "x", count: 10) + String(repeating: "y", count: 10) + String(repeating: "z", count: 10)
            )
            _ = try await serving.value
        }
    }

    func test_acceptor_receives_both_stream_kinds() async throws {
        try await onEveryTransport { _, p in
            let acceptor = try p.listener.acceptor("/raw")
            let peer = try p.client.peer()
            try await peer.connect(acceptor.address())
            XCTAssertEqual(try peer.peerCount(), 1)
            let oneWay = try await peer.open(["kind": bytes("stream")])
            try await oneWay.write(bytes("one-way"))
            try await oneWay.finish()
            let ex = try await peer.exchange()
            try await ex.transfer.write(bytes("question"))
            try await ex.transfer.finish()
            var kinds: [String] = []
            for try await incoming in acceptor.incoming() {
                switch incoming {
                case .stream(let t):
                    XCTAssertEqual(t.path(), "/raw")
                    XCTAssertEqual(t.meta("kind"), bytes("stream"))
                    let body = try await t.collect(1 << 20)
                    XCTAssertEqual(text(body), "one-way")
                    kinds.append("stream")
                case .exchange(let x):
                    let body = try await x.takeBody()
                    XCTAssertEqual(text(body), "question")
                    try await x.reply(bytes("answer"))
                    kinds.append("exchange")
                }
                if kinds.count == 2 { break }
            }
            XCTAssertEqual(kinds.sorted(), ["exchange", "stream"])
            let answer = try await ex.reply.body()
            XCTAssertEqual(text(answer.body), "answer")
            acceptor.closeEndpoint()
            try await raised("CLOSED") { try await acceptor.accept() }
            peer.closeEndpoint()
            try await raised("CLOSED") { try await peer.open() }
        }
    }
}
