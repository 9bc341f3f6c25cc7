// Every pattern over QUIC, in process and AF_UNIX (python/tests/test_patterns.py,
// test_pubsub.py, test_lifecycle.py and the Kotlin PatternsTest: the same names for the same
// behaviour).
import Foundation
import XCTest

@testable import Weida

final class PatternsTests: XCTestCase {
    // Listener.events(): connected, with where the connection comes from (a QUIC peer's UDP
    // address, else the transport's name) and the key it presented; lost, with its cause, once
    // the dialler closes.
    func test_a_listener_reports_each_connection_and_how_it_ended() async throws {
        try await onEveryTransport { transport, p in
            let events = p.listener.events()
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(bytes("one"))
            let one = text(try await puller.recv().body)
            XCTAssertEqual(one, "one")
            let first = await events.next()
            let connected = try XCTUnwrap(first)
            XCTAssertEqual(connected.kind, "connected")
            if transport == "quic" {
                XCTAssertNotNil(connected.url.range(of: #"^127\.0\.0\.1:\d+$"#, options: .regularExpression), connected.url)
                XCTAssertEqual(connected.fingerprint, p.client.fingerprint())
            } else {
                XCTAssertEqual(connected.url, transport)
                XCTAssertNil(connected.fingerprint)
            }
            await p.client.closeAndWait()
            let next = await events.next()
            let lost = try XCTUnwrap(next)
            XCTAssertEqual([lost.kind, lost.url, lost.cause], ["lost", connected.url, "peer_closed"])
        }
    }

    func test_req_rep_echoes_small_and_large_bodies_with_metadata() async throws {
        try await onEveryTransport { _, p in
            let replier = try p.listener.replier("/echo")
            let req = try p.client.requester()
            try await req.connect(replier.address())
            let serving = Task {
                var served = 0
                for try await ex in replier.exchanges() {
                    let body = try await ex.takeBody()
                    let trace = ex.metadata().first { $0.name == "trace" }?.value
                    try await ex.reply(body, meta: trace.map { ["trace": $0] })
                    served += 1
                    if served == 2 { break }
                }
            }
            let echoed = try await req.request(bytes("hi"))
            XCTAssertEqual(echoed, bytes("hi"))
            let large = payload(3 * 1024 * 1024 + 7)
            let m = try await req.requestWith(large, meta: ["trace": bytes("t-1")])
            XCTAssertEqual(m.body, large)
            XCTAssertEqual(m.meta("trace"), bytes("t-1"))
            try await serving.value
        }
    }

    func test_send_many_and_recv_many_move_every_message_in_batches() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let bodies = (0..<500).map { bytes("m\($0)") }
            try await pusher.sendMany(bodies)
            var got: [Data] = []
            while got.count < 500 {
                let batch = try await puller.recvMany(64)
                XCTAssertTrue(!batch.isEmpty && batch.count <= 64)
                got += batch.map(\.body)
            }
            XCTAssertEqual(got, bodies)
        }
    }

    // recvBatch (Batch.swift): the messages recvMany would take, each body a view of one
    // buffer for its batch. Each view must be indexed from 0 as a `Data` of its own is (a slice
    // of one `Data` would not be: `body[0]` of any body but the first would trap), read whole
    // through every way Foundation reads bytes, keep its batch's buffer alive after the batch
    // and later ones are gone, and carry what recvMany's messages carry (path, metadata). A
    // subscriber's recvBatch takes the same path (its topic, then its bodies).
    func test_recv_batch_hands_out_bodies_indexed_from_zero_that_outlive_their_batch() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let bodies = (0..<300).map { i in i % 7 == 0 ? Data() : payload(1 + (i * 37) % 301) }
                + [bytes("ab"), bytes("ba")]
            try await pusher.sendMany(bodies)
            try await pusher.send(bytes("traced"), meta: ["trace": bytes("t-1")])
            var views: [MessageView] = []
            while views.count < bodies.count + 1 {
                let batch = try await puller.recvBatch(64)
                XCTAssertTrue(!batch.isEmpty && batch.count <= 64)
                views += batch
            }
            XCTAssertEqual(views.count, bodies.count + 1)
            for (v, sent) in zip(views, bodies) {
                XCTAssertEqual(v.body.startIndex, 0)
                XCTAssertEqual(v.body.count, sent.count)
                if let first = sent.first { XCTAssertEqual(v.body[0], first) }
                XCTAssertEqual(v.body.data, sent)
                XCTAssertEqual(Data(v.body), sent)
                XCTAssertEqual(v.body.withUnsafeBytes { Data($0) }, sent)
                XCTAssertEqual(Array(v.body), Array(sent))
                XCTAssertEqual(v.message.body, sent)
                XCTAssertEqual(v.path, "/jobs")
                XCTAssertNil(v.meta("trace"))
            }
            let traced = try XCTUnwrap(views.last)
            XCTAssertEqual(text(traced.body.data), "traced")
            XCTAssertEqual(traced.meta("trace"), bytes("t-1"))
            XCTAssertEqual(traced.message.meta("trace"), bytes("t-1"))
            // Hashable and equal by the bytes: empty bodies of different places are equal, two
            // of one length but different bytes are not.
            let empties = views.filter { $0.body.isEmpty }
            XCTAssertGreaterThan(empties.count, 1)
            XCTAssertEqual(empties.first?.body, empties.last?.body)
            XCTAssertEqual(empties.first?.body.hashValue, empties.last?.body.hashValue)
            XCTAssertEqual(Set(views.dropLast().map(\.body)).count, Set(bodies).count)
            XCTAssertEqual(views[300].body.data, bytes("ab"))
            XCTAssertNotEqual(views[300].body, views[301].body)
            // Read as Foundation reads any bytes: a slice, the regions, copyBytes.
            let long = try XCTUnwrap(views.first { $0.body.count > 2 })
            let sent = bodies[try XCTUnwrap(views.firstIndex { $0.body == long.body })]
            XCTAssertEqual(Data(long.body[1...]), sent.dropFirst())
            XCTAssertEqual(long.body.regions.count, 1)
            var copied = [UInt8](repeating: 0, count: long.body.count)
            XCTAssertEqual(copied.withUnsafeMutableBytes { long.body.copyBytes(to: $0) }, sent.count)
            XCTAssertEqual(Data(copied), sent)

            let publisher = try p.listener.publisher("/feed")
            let sub = try p.client.subscriber()
            try await sub.connect(publisher.address())
            try await sub.subscribe("t")
            for i in 0..<20 { _ = try publisher.publish("t", bytes("c\(i)")) }
            var copies: [MessageView] = []
            while copies.count < 20 { copies += try await sub.recvBatch(8) }
            XCTAssertEqual(copies.map { text($0.body.data) }, (0..<20).map { "c\($0)" })
            XCTAssertEqual(Set(copies.map(\.topic)), ["t"])
        }
    }

    // A kept view keeps its buffer alive, so recvBatch's bodies share a buffer only up to
    // viewShareMax (64 KiB) in all, a larger body in one of its own (Weida.swift `viewsOf`):
    // read from a packed batch of 70 000, 10, 20, 66 000, 1 and 0 bytes, the buffers hold
    // [70 000], [10, 20], [66 000] and [1, 0], and every body reads whole.
    func test_recv_batch_shares_a_buffer_only_among_bodies_of_at_most_64_kib() throws {
        let bodies = [payload(70_000), payload(10), payload(20), payload(66_000), payload(1), Data()]
        let index = Data(bodies.flatMap { _ in [UInt8(0), 0, 0] })
        let origin = Data([0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        let p = Packed(count: UInt32(bodies.count), bodies: packed(bodies), index: index, origins: origin)
        let views = p.decoded(viewsOf)
        XCTAssertEqual(views.map { $0.body.data }, bodies)
        XCTAssertEqual(views.map(\.body.startIndex), [0, 0, 0, 0, 0, 0])
        let buffers = views.map { ObjectIdentifier($0.body.storage) }
        XCTAssertEqual(buffers[1], buffers[2])
        XCTAssertEqual(buffers[4], buffers[5])
        XCTAssertEqual(Set(buffers).count, 4)
        XCTAssertEqual(views.map(\.body.storage.count), [70_000, 30, 30, 66_000, 1, 1])
        XCTAssertEqual(Packed(count: 0, bodies: Data(), index: Data(), origins: Data()).decoded(viewsOf).count, 0)
    }

    // sendMany packs its bodies (Weida.swift `packed`, weida-ffi's layout): an empty body, bodies
    // that end off a multiple of 4 and a longer one (on the lane: at most laneMaxMessage, so the
    // order holds) each arrive whole, in order.
    func test_send_many_keeps_empty_and_unaligned_bodies_whole() async throws {
        try await onEveryTransport(["inproc"]) { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let bodies = [Data(), bytes("a"), bytes("abcde"), payload(9_999), Data()]
            try await pusher.sendMany(bodies)
            try await pusher.sendMany([])
            var got: [Data] = []
            while got.count < bodies.count { got += try await puller.recvMany(64).map(\.body) }
            XCTAssertEqual(got, bodies)
        }
    }

    // Receives, sendMany, requests, a replier's accept and the accepted exchange's takeBody and
    // reply take the fast lane (FastLane.swift; kotlin-swift/uniffi fast.rs and fast_wait.rs): a
    // receive takes what is ready in one call and otherwise waits, woken by the I/O thread's
    // callback; the others wait the same way unless they finish at once. What they answer, errors included, reads as the UniFFI calls' (CancelTests
    // runs their cancellation: the same calls, on this lane). As the Kotlin test of this name.
    func test_waiting_calls_take_the_fast_lane_and_answer_as_the_uniffi_calls() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            // The counters are the process's: other tests' calls may add to them, never take
            // away, so each check is "at least".
            let lane = { (LaneCounter.answered.value, LaneCounter.waited.value) }
            let before = lane()
            let waiting = Task { try await puller.recv() }
            // Its take found nothing (answered None, on the lane); only then is "late" sent, so
            // the receive waits on the lane.
            try await within(10) {
                while LaneCounter.answered.value == before.0 {
                    try Task.checkCancellation()
                    await Task.yield()
                }
            }
            try await pusher.send(bytes("late"))
            let late = try await waiting.value
            XCTAssertEqual(text(late.body), "late")
            let afterRecv = lane()
            XCTAssertGreaterThanOrEqual(afterRecv.1, before.1 + 1, "the receive waited on the fast lane")
            let batch = (0..<50).map { payload(1 + $0) }
            try await pusher.sendMany(batch)
            XCTAssertGreaterThanOrEqual(lane().1, afterRecv.1 + 1, "sendMany took the fast lane")
            var got: [Data] = []
            while got.count < batch.count { got += try await puller.recvMany(64).map(\.body) }
            XCTAssertEqual(got, batch)
            let replier = try p.listener.replier("/rpc")
            let requester = try p.client.requester()
            try await requester.connect(replier.address())
            let beforeRequest = lane().1
            let serving = Task {
                let ex = try await replier.accept()
                try await ex.reply(try await ex.takeBody() + bytes("!"))
            }
            let reply = try await requester.request(bytes("ping"))
            XCTAssertEqual(text(reply), "ping!")
            try await serving.value
            XCTAssertGreaterThanOrEqual(lane().1, beforeRequest + 4, "the accept, the exchange's calls and the request took the fast lane")
            let beforeError = lane()
            requester.closeEndpoint()
            try await raised("CLOSED") { _ = try await requester.request(bytes("x")) }
            XCTAssertGreaterThanOrEqual(lane().1, beforeError.1 + 1, "the request's error came through the fast lane")
            puller.closeEndpoint()
            try await raised("CLOSED") { _ = try await puller.recv() }
            XCTAssertGreaterThanOrEqual(lane().0, beforeError.0 + 1, "the receive's error came through the fast lane")
        }
    }

    // The fast lane reads a batch in place from its buffer (Weida.swift `packedMessages`, each
    // body copied once): from bytes in UniFFI's encoding of an `Option<Packed>` (here written by
    // the generated converter; Rust writes the same bytes: packed.rs
    // `a_batch_is_written_in_place_as_uniffi_writes_it`), every body, sequence number, gap
    // and origin must come out as written, and the converter must read the same record back.
    // As the Kotlin test of this name.
    func test_a_batch_read_in_place_is_the_batch_uniffis_converter_reads() throws {
        let bodies = [Data(), bytes("a"), payload(1000)]
        func be<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
        let none: [UInt8] = [0]
        let seq: [UInt8] = [1]
        let both: [UInt8] = [3]
        // The first origin, no sequence, no gap; the second, sequence 7; the second, sequence 8,
        // a gap of 2.
        let index: [[UInt8]] = [
            be(UInt16(0)), none,
            be(UInt16(1)), seq, be(UInt64(7)),
            be(UInt16(1)), both, be(UInt64(8)), be(UInt64(2)),
        ]
        // No path, peer, topic or metadata; then "/p", an AF_UNIX peer (uid 1, gid 2, pid -3),
        // topic "t" and one entry k = [9].
        let origins: [[UInt8]] = [
            be(UInt32(0)), none, none, be(UInt32(0)),
            be(UInt32(2)), Array("/p".utf8), [2], be(UInt32(1)), be(UInt32(2)), be(Int32(-3)),
            seq, be(UInt32(1)), Array("t".utf8),
            be(UInt32(1)), be(UInt32(1)), Array("k".utf8), be(UInt32(1)), [9],
        ]
        let p = Packed(count: 3, bodies: packed(bodies), index: Data(index.joined()), origins: Data(origins.joined()))
        var buf: [UInt8] = [1] // Some
        FfiConverterTypePacked.write(p, into: &buf)
        var reader = (data: Data(buf), offset: 1)
        XCTAssertEqual(try FfiConverterTypePacked.read(from: &reader), p, "the converter reads the record back")
        let inPlace = try XCTUnwrap(buf.withUnsafeBytes { packedMessages($0) })
        let read = p.messages()
        XCTAssertEqual(inPlace.count, 3)
        for (a, b) in zip(inPlace, read) {
            XCTAssertEqual(a.body, b.body)
            XCTAssertEqual(a.path, b.path)
            XCTAssertEqual(a.peer, b.peer)
            XCTAssertEqual(a.topic, b.topic)
            XCTAssertEqual(a.sequence, b.sequence)
            XCTAssertEqual(a.gap, b.gap)
            XCTAssertEqual(a.metadata.map(\.name), b.metadata.map(\.name))
            XCTAssertEqual(a.metadata.map(\.value), b.metadata.map(\.value))
        }
        XCTAssertEqual(inPlace.map(\.body), bodies)
        XCTAssertEqual(inPlace.map(\.sequence), [nil, 7, 8])
        XCTAssertEqual(inPlace.map(\.gap), [nil, nil, 2])
        XCTAssertEqual(inPlace.map(\.path), ["", "/p", "/p"])
        XCTAssertEqual(inPlace.map(\.peer), [nil, .local(uid: 1, gid: 2, pid: -3), .local(uid: 1, gid: 2, pid: -3)])
        XCTAssertEqual(inPlace.map(\.topic), [nil, "t", "t"])
        XCTAssertEqual(inPlace.map { $0.metadata.map(\.name) }, [[], ["k"], ["k"]])
        XCTAssertEqual(inPlace[2].metadata.first?.value, Data([9]))
        XCTAssertNil([UInt8(0)].withUnsafeBytes { packedMessages($0) }, "None reads as nothing")
        // recvBatch's views of the same bytes are the same messages (`MessageView.message`).
        let views = try XCTUnwrap(buf.withUnsafeBytes { packedBatch($0, as: viewsOf) })
        XCTAssertEqual(views.map(\.message), read)
        XCTAssertEqual(p.decoded(viewsOf).map(\.message), read)
    }

    // A batch crosses the FFI packed, what its messages share written once
    // (kotlin-swift/uniffi/src/packed.rs): each message must still come out with its own
    // sender, path and metadata, from two peers interleaved, with and without metadata.
    func test_a_batch_keeps_each_messages_own_peer_path_and_metadata() async throws {
        try await onEveryTransport { transport, p in
            let jobs = try p.listener.puller("/jobs")
            let other = try runtime()
            defer { other.shutdown() }
            let a = try p.client.pusher()
            let b = try other.pusher()
            try await a.connect(jobs.address())
            try await b.connect(jobs.address())
            var sent: [(String, Runtime, String?)] = []
            for i in 0..<200 {
                let (who, name, from) = i % 3 == 0 ? (b, "b", other) : (a, "a", p.client)
                let trace = i % 5 == 0 ? "t\(i)" : nil
                try await who.send(bytes("\(name)\(i)"), meta: trace.map { ["trace": bytes($0)] })
                sent.append(("\(name)\(i)", from, trace))
            }
            var got: [String: Message] = [:]
            while got.count < sent.count {
                for m in try await jobs.recvMany(64) { got[text(m.body)] = m }
            }
            for (body, from, trace) in sent {
                let m = try XCTUnwrap(got[body], body)
                XCTAssertEqual(m.path, "/jobs")
                if transport == "quic", case let .key(fingerprint) = m.peer {
                    XCTAssertEqual(fingerprint, from.fingerprint(), body)
                } else if transport == "quic" {
                    XCTFail("\(body): no key")
                }
                XCTAssertEqual(m.meta("trace").map(text), trace, body)
                XCTAssertEqual(m.metadata.count, trace == nil ? 0 : 1, body)
            }
        }
    }

    // A packed batch's origins, read as Rust writes them: the bytes of kotlin-swift/uniffi/src/
    // packed.rs's test of the same name (an AF_UNIX peer's uid, gid and a negative pid, a topic,
    // one metadata entry), then a QUIC key's origin, so that a decoder reading a field out of
    // order or at the wrong width (uid for gid, pid unsigned) fails here.
    func test_an_origin_is_its_path_peer_topic_and_metadata_end_to_end() throws {
        let local: [UInt8] = [0, 0, 0, 2, 0x2f, 0x70, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xfd]
            + [1, 0, 0, 0, 1, 0x74, 0, 0, 0, 1] + [0, 0, 0, 1, 0x6b, 0, 0, 0, 2, 0x76, 0x31]
        let key: [UInt8] = [0, 0, 0, 1, 0x71, 1, 0, 0, 0, 2, 0x61, 0x62, 0, 0, 0, 0, 0]
        // Bodies "hi", "yo!" and "z" end to end, zeros to 8, their ends (2, 5, 6) little-endian;
        // the index: origin 0, then origin 1 with a sequence number (7) and a gap (2), then
        // origin 1 with a gap (9) alone, so the two flags cannot be read for each other.
        let bodies = Data("hiyo!z".utf8) + Data([0, 0] + [2, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0])
        let index = Data([0, 0, 0, 0, 1, 3] + [0, 0, 0, 0, 0, 0, 0, 7] + [0, 0, 0, 0, 0, 0, 0, 2]
            + [0, 1, 2] + [0, 0, 0, 0, 0, 0, 0, 9])
        let ms = Packed(count: 3, bodies: bodies, index: index, origins: Data(local + key)).messages()
        guard ms.count == 3 else { return XCTFail("\(ms.count) messages, not 3") }
        let (a, b, c) = (ms[0], ms[1], ms[2])
        XCTAssertEqual(text(a.body), "hi")
        XCTAssertEqual(a.path, "/p")
        XCTAssertEqual(a.peer, .local(uid: 1, gid: 2, pid: -3))
        XCTAssertEqual(a.topic, "t")
        XCTAssertEqual(a.metadata.map(\.name), ["k"])
        XCTAssertEqual(a.metadata.first?.value, Data("v1".utf8))
        XCTAssertNil(a.sequence)
        XCTAssertNil(a.gap)
        XCTAssertEqual(text(b.body), "yo!")
        XCTAssertEqual(b.path, "q")
        XCTAssertEqual(b.peer, .key(fingerprint: "ab"))
        XCTAssertNil(b.topic)
        XCTAssertEqual(b.metadata.count, 0)
        XCTAssertEqual(b.sequence, 7)
        XCTAssertEqual(b.gap, 2)
        XCTAssertEqual(text(c.body), "z")
        XCTAssertNil(c.sequence)
        XCTAssertEqual(c.gap, 9)
    }

    // Kotlin: push_pull_delivers_every_message_in_order_as_a_flow.
    func test_push_pull_delivers_every_message_in_order_as_a_sequence() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            let received = Task {
                var got: [Message] = []
                for try await m in puller.messages() {
                    got.append(m)
                    if got.count == 100 { break }
                }
                return got
            }
            for i in 0..<100 { try await pusher.send(bytes("job \(i)")) }
            let got = try await received.value
            XCTAssertEqual(got.map { text($0.body) }, (0..<100).map { "job \($0)" })
            XCTAssertEqual(got.first?.path, "/jobs")
        }
    }

    func test_async_for_ends_when_the_listener_closes() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(bytes("one"))
            let one = text(try await puller.recv().body)
            XCTAssertEqual(one, "one")
            let rest = Task {
                var got: [String] = []
                for try await m in puller.messages() { got.append(text(m.body)) }
                return got
            }
            p.listener.closeListener()
            let received = try await rest.value
            XCTAssertEqual(received, [])
        }
    }

    func test_try_send_queues_at_once_or_returns_false_and_try_recv_takes_what_is_ready() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/jobs")
            let pusher = try p.client.pusher()
            // Nothing connected: what send would raise.
            try await raised("NOT_CONNECTED") { try pusher.trySend(bytes("x")) }
            try await pusher.connect(puller.address())
            XCTAssertNil(try puller.tryRecv())
            var atOnce = 0
            for i in 0..<50 {
                let body = bytes("\(i)")
                if try pusher.trySend(body) { atOnce += 1 } else { try await pusher.send(body) }
            }
            // The runtime offers lanes by default: a lane with room takes a small body at once.
            XCTAssertGreaterThan(atOnce, 0)
            // A body larger than a lane takes is not sent.
            XCTAssertFalse(try pusher.trySend(payload(64 * 1024)))
            var seen: [String] = []
            while seen.count < 50 {
                let m: Message
                if let ready = try puller.tryRecv() { m = ready } else { m = try await puller.recv() }
                seen.append(text(m.body))
            }
            XCTAssertEqual(seen, (0..<50).map { "\($0)" })  // one lane: in order
            XCTAssertNil(try puller.tryRecv())
            puller.closeEndpoint()
            try await raised("CLOSED") { try puller.tryRecv() }
        }
    }

    func test_subscribe_filters_topics_by_segment() async throws {
        try await onEveryTransport { transport, p in
            let publisher = try p.listener.publisher("/feed")
            let sub = try p.client.subscriber()
            try await sub.connect(publisher.address())
            try await sub.subscribe("sensors.*.temp")
            try await sub.subscribe("alerts.#")
            XCTAssertEqual(sub.filters(), ["sensors.*.temp", "alerts.#"])
            // (topic, selected): the grammar's table, end to end.
            let table: [(String, Bool)] = [
                ("sensors.kitchen.temp", true),
                ("sensors.temp", false),
                ("sensors.kitchen.temperature", false),
                ("sensors.kitchen.temp.max", false),
                ("alerts", true),
                ("alerts.fire.kitchen", true),
                ("alertsx", false),
                ("other", false),
            ]
            var expected: [String] = []
            for (i, (topic, selected)) in table.enumerated() {
                XCTAssertEqual(try publisher.publish(topic, bytes("\(i)")), selected ? 1 : 0, topic)
                if selected { expected.append(topic) }
            }
            var got: [Message] = []
            for try await m in sub.messages() {
                got.append(m)
                if got.count == expected.count { break }
            }
            XCTAssertEqual(got.compactMap(\.topic).sorted(), expected.sorted())
            for m in got {
                XCTAssertEqual(m.path, "/feed")
                XCTAssertNil(m.gap, "no ordering required: no gap")
                switch (transport, m.peer) {
                case ("quic", .key?), ("unix", .local?), ("inproc", nil): break
                default: XCTFail("\(transport): \(String(describing: m.peer))")
                }
            }
            XCTAssertEqual(publisher.dropped().total, 0)
            XCTAssertEqual(publisher.droppedOn("alerts").total, 0)
            XCTAssertEqual(publisher.subscriberCount(), 1)
            XCTAssertEqual(sub.peerCount(), 1)
            XCTAssertEqual(p.server.counters()["copiesPublished"], UInt64(expected.count))
        }
    }

    func test_unsubscribe_stops_delivery_once_it_returns() async throws {
        try await onEveryTransport { _, p in
            let publisher = try p.listener.publisher("/news")
            let sub = try p.client.subscriber()
            try await sub.connect(publisher.address())
            try await sub.subscribe("a")
            try await publisher.untilSubscribers(1)
            XCTAssertEqual(try publisher.publish("a", bytes("one")), 1)
            let one = text(try await sub.recv().body)
            XCTAssertEqual(one, "one")
            let removed = try await sub.unsubscribe("a")
            XCTAssertTrue(removed)
            let removedAgain = try await sub.unsubscribe("a")
            XCTAssertFalse(removedAgain)
            XCTAssertEqual(try publisher.publish("a", bytes("two")), 0)
            XCTAssertNil(try sub.tryRecv())
        }
    }

    func test_counters_count() async throws {
        try await onEveryTransport { _, p in
            let puller = try p.listener.puller("/c")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(payload(100))
            _ = try await puller.recv()
            let c = p.client.counters()
            XCTAssertEqual(c["connectionsDialled"], 1)
            XCTAssertGreaterThanOrEqual(c["bytesSent"] ?? 0, 100)
            XCTAssertEqual(p.server.counters()["connectionsAccepted"], 1)
            XCTAssertEqual(c.count, 17, "every core counter, by its camelCase name")
        }
    }

    func test_send_many_says_how_many_were_sent() async throws {
        // One stream slot, taken by the first body (nobody reads): the second waits for one and
        // times out. The error says one was sent.
        try await within {
            let limits: Options = ["maxConcurrentUniStreams": 1, "maxLocalStreams": 1]
            let server = try runtime(limits: limits)
            let client = try runtime(limits: limits, options: ["sendTimeoutMs": 500, "laneMaxMessage": 0])
            defer {
                client.shutdown()
                server.shutdown()
            }
            let puller = try await server.bind(bindAddress("inproc")).puller("/jobs")
            let pusher = try client.pusher()
            try await pusher.connect(puller.address())
            let e = try await raised("TIMEOUT") {
                try await pusher.sendMany(["takes the only slot", "waits", "never tried"].map(bytes))
            }
            XCTAssertEqual(e.fields["sent"], "1")
            // Kept alive through the sends (Swift may release an object after its last use): a
            // puller released mid-test unbinds /jobs and frees the stream slot.
            withExtendedLifetime(puller) {}
        }
    }
}
