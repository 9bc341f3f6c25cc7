// Across processes: a Swift peer and the Rust core's example peer (core/examples/peer.rs), over
// QUIC with the pin its address carries and over AF_UNIX (the Kotlin CrossTest, node's
// cross.test.mjs and python/tests/test_processes.py: the same names with the language's).
// run.sh copies the peer into the chroot and names it in WEIDA_PEER_BIN.
import Foundation
import XCTest

@testable import Weida

/// The Rust peer: prints `READY <address>` and runs until its stdin closes.
final class RustPeer: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var lines: AsyncStream<String>.Iterator
    private(set) var address = ""

    init(bind: String) throws {
        let bin = try XCTUnwrap(ProcessInfo.processInfo.environment["WEIDA_PEER_BIN"], "WEIDA_PEER_BIN (run.sh sets it)")
        process.executableURL = URL(fileURLWithPath: bin)
        process.arguments = [bind]
        process.standardInput = input
        process.standardOutput = output
        // Its lines, read on a thread of their own: a blocking read must not hold one of the
        // few threads Swift's tasks run on.
        let (stream, sink) = AsyncStream<String>.makeStream()
        lines = stream.makeAsyncIterator()
        let reading = output.fileHandleForReading
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = reading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let nl = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    sink.yield(String(decoding: pending[pending.startIndex..<nl], as: UTF8.self))
                    pending = Data(pending[(nl + 1)...])
                }
            }
            sink.finish()
        }
        try process.run()
    }

    /// Waits for `READY` and keeps the address it names.
    func ready() async throws {
        let line = try await self.line()
        XCTAssertTrue(line.hasPrefix("READY "), line)
        address = String(line.dropFirst("READY ".count))
    }

    func line() async throws -> String {
        guard let l = await lines.next() else { throw PeerEnded() }
        return l
    }

    func send(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    func close() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

struct PeerEnded: Error {}

private func bindFor(_ transport: String) -> String {
    transport == "quic"
        ? "weida://127.0.0.1:0"
        : "weida+unix://\(NSTemporaryDirectory())weida-swift-rust-\(getpid()).sock"
}

private func hex(_ d: Data) -> String { d.map { String(format: "%02x", $0) }.joined() }

final class CrossTests: XCTestCase {
    func test_a_swift_peer_talks_to_a_rust_peer() async throws {
        for transport in ["quic", "unix"] {
            try await within {
                let child = try RustPeer(bind: bindFor(transport))
                defer { child.close() }
                try await child.ready()
                let rt = try runtime()
                defer { rt.shutdown() }
                let req = try rt.requester()
                try await req.connect(addressWithPath(address: child.address, path: "/echo"))
                let m = try await req.requestWith(bytes("from swift"), meta: ["a": bytes("1")])
                XCTAssertEqual(text(m.body), "from swift")
                XCTAssertEqual(m.meta("a"), bytes("1"))
                let pusher = try rt.pusher()
                try await pusher.connect(addressWithPath(address: child.address, path: "/jobs"))
                let body = Data((0..<20).map { UInt8($0) })
                try await pusher.send(body)
                let small = try await child.line()
                XCTAssertEqual(small, "JOB 20 \(hex(body.prefix(16)))")
                let big = payload(256_000)
                try await pusher.send(big)
                let large = try await child.line()
                XCTAssertEqual(large, "JOB \(big.count) \(hex(big.prefix(16)))")
                let drained = try await rt.drain(10_000)
                XCTAssertEqual(drained.outstanding, 0)
            }
        }
    }

    func test_a_swift_subscriber_receives_from_the_rust_publisher() async throws {
        for transport in ["quic", "unix"] {
            try await within {
                let child = try RustPeer(bind: bindFor(transport))
                defer { child.close() }
                try await child.ready()
                let rt = try runtime(options: ["ordering": "detect"])
                defer { rt.shutdown() }
                let sub = try rt.subscriber()
                try await sub.connect(addressWithPath(address: child.address, path: "/feed"))
                try await sub.subscribe("sensors.*.temp")
                for (topic, value) in [("sensors.hall.temp", "21.5"), ("sensors.hall.rh", "40")] {
                    try child.send("PUB \(topic) \(value)")
                    let published = try await child.line()
                    XCTAssertEqual(published, "PUBLISHED \(topic.hasSuffix("temp") ? 1 : 0)")
                }
                let m = try await sub.recv()
                XCTAssertEqual([m.topic, text(m.body), m.path], ["sensors.hall.temp", "21.5", "/feed"])
                XCTAssertEqual(m.sequence, 1)
                XCTAssertEqual(m.gap, 0)
                let removed = try await sub.unsubscribe("sensors.*.temp")
                XCTAssertTrue(removed)
                try child.send("PUB sensors.hall.temp 22")
                let none = try await child.line()
                XCTAssertEqual(none, "PUBLISHED 0")
            }
        }
    }
}
