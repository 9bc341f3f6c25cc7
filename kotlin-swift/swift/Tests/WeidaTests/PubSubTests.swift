// Streamed publishing (python/tests/test_pubsub.py: the same names): a message written to many
// subscribers in parts through a `FanOut`, and one cancelled, which no subscriber ever sees.
import Foundation
import XCTest

@testable import Weida

final class PubSubTests: XCTestCase {
    func test_a_streamed_publish_carries_a_payload_no_publish_could_take() async throws {
        for transport in transports {
            do {
                try await within {
                    let limits: Options = ["subscriberBufferBytes": 65_536]
                    let server = try runtime(limits: limits)
                    let listener = try await server.bind(bindAddress(transport))
                    let client = try runtime(limits: limits, reconnect: never)
                    defer {
                        client.shutdown()
                        server.shutdown()
                    }
                    let publisher = try listener.publisher("/video")
                    let a = try client.subscriber()
                    try await a.connect(publisher.address())
                    try await a.subscribe("frames.#")
                    let b = try client.subscriber()
                    try await b.connect(publisher.address())
                    try await b.subscribe("frames.hd")
                    // 1.25 MiB: twenty times the byte budget, which publish refuses.
                    let body = payload(40 * 32 * 1024)
                    try await raised("LIMIT_EXCEEDED") { try publisher.publish("frames.hd", body) }
                    let fan = try publisher.open("frames.hd")
                    XCTAssertEqual(fan.copies(), 2)
                    let ma = Task { try await a.recv() }
                    let mb = Task { try await b.recv() }
                    for at in stride(from: 0, to: body.count, by: 32 * 1024) {
                        let copies = try await fan.write(body.subdata(in: at..<(at + 32 * 1024)))
                        XCTAssertEqual(copies, 2)
                    }
                    XCTAssertEqual(try fan.finish(), 2)
                    XCTAssertEqual(fan.copies(), 2)
                    XCTAssertFalse(fan.isOpen())
                    for m in [try await ma.value, try await mb.value] {
                        XCTAssertEqual(m.topic, "frames.hd")
                        XCTAssertEqual(m.body, body, "byte-exact")
                    }
                    XCTAssertEqual(publisher.dropped().total, 0)
                    XCTAssertEqual(publisher.droppedOn("frames.hd").total, 0)
                }
            } catch {
                XCTFail("on \(transport): \(error)")
            }
        }
    }

    func test_a_fanout_cancelled_is_never_seen() async throws {
        try await onEveryTransport { _, p in
            let publisher = try p.listener.publisher("/feed")
            let sub = try p.client.subscriber()
            try await sub.connect(publisher.address())
            try await sub.subscribe("t")
            let fan = try publisher.open("t")
            XCTAssertTrue(fan.isOpen())
            XCTAssertEqual(try fan.writeNow(bytes("half a message")), 1)
            fan.cancel()
            XCTAssertEqual(fan.copies(), 0)
            XCTAssertFalse(fan.isOpen())
            try await raised("CANCELED") { try fan.writeNow(bytes("late")) }
            try await raised("CANCELED") { try fan.finish() }
            let f = try publisher.open("t")
            try await f.write(bytes("all "))
            try f.writeNow(bytes("of it"))
            XCTAssertEqual(try f.finish(), 1)
            try await raised("CLOSED") { try f.finish() }
            let m = try await sub.recv()
            XCTAssertEqual(text(m.body), "all of it")
            XCTAssertEqual(publisher.dropped().total, 0)
        }
    }
}
