// Error codes and fields (python/tests/test_errors.py, test_lifecycle.py, test_refusals.py and
// the Kotlin ErrorsTest: the same names).
import Foundation
import XCTest

@testable import Weida

/// `listener`'s address with the endpoint path `path`.
func at(_ listener: Listener, _ path: String) throws -> String {
    try addressWithPath(address: listener.address(), path: path)
}

final class ErrorsTests: XCTestCase {
    func test_the_error_raised_carries_code_and_message() async throws {
        try await within {
            let rt = try runtime()
            defer { rt.shutdown() }
            let e = try await raised("INVALID_ADDRESS") { try await rt.bind("nonsense://x") }
            XCTAssertEqual(e.code, "INVALID_ADDRESS")
            XCTAssertFalse(e.description.isEmpty)
            XCTAssertTrue(e.definite)
        }
    }

    // One case per core code, named as the code (`CONNECTION_LOST` is `.ConnectionLost`), and
    // the binding's own Aborted, Busy and Panic: every case the generated converter reads (as
    // UniFFI lays an error out: the case's number from 1, then its fields), by name.
    func test_one_class_per_core_code_under_the_base_error() throws {
        var cases: [String] = []
        for variant in Int32(1)... {
            var bytes: [UInt8] = []
            func int32(_ v: Int32) { bytes += withUnsafeBytes(of: v.bigEndian, Array.init) }
            func string(_ s: String) { int32(Int32(s.utf8.count)); bytes += Array(s.utf8) }
            int32(variant)
            string("CODE")
            string("description")
            bytes.append(1)  // definite
            int32(0)  // no fields
            var buf = (data: Data(bytes), offset: 0)
            guard let e = try? FfiConverterTypeWeidaError.read(from: &buf) else { break }
            cases.append(try XCTUnwrap(caseName(of: e)))
        }
        for code in errorCodes() {
            XCTAssertTrue(cases.contains(caseName(code)), "\(code) has a WeidaError.\(caseName(code))")
        }
        XCTAssertEqual(cases.count, errorCodes().count + 3, "and Aborted, Busy, Panic: \(cases)")
        XCTAssertEqual(Array(cases.suffix(3)), ["Aborted", "Busy", "Panic"])
    }

    func test_errors_carry_their_fields_by_the_same_names_everywhere() async throws {
        try await within {
            let rt = try runtime()
            defer { rt.shutdown() }
            let a = try await raised("INVALID_ADDRESS") { try await rt.bind("weida://127.0.0.1:0/path") }
            XCTAssertEqual(Set(a.fields.keys), ["part", "reason"])
            XCTAssertEqual(a.fields["part"], "path")
            let f = try await raised("INVALID_FILTER") { try await rt.subscriber().subscribe("a..b") }
            XCTAssertEqual(Set(f.fields.keys), ["what", "text", "reason"])
            XCTAssertEqual(f.fields["what"], "filter")
            XCTAssertEqual(f.fields["text"], "a..b")
            let taken = try await rt.bind("weida://127.0.0.1:0")
            let port = taken.address().split(separator: ":").last!
            let io = try await raised("IO") { try await rt.bind("weida://127.0.0.1:\(port)") }
            XCTAssertEqual(Set(io.fields.keys), ["errno"])
            XCTAssertNotNil(io.fields["errno"] ?? nil)
            let listener = try await rt.bind(bindAddress("inproc"))
            let replier = try listener.replier("/x")
            let req = try rt.requester()
            try await req.connect(replier.address())
            let asking = Task { try await req.request(bytes("q")) }
            try await replier.accept().reject("not today")
            let r = try await raised("REJECTED") { try await asking.value }
            XCTAssertEqual(r.fields, ["reason": "not today"])
            let big = ["blob": Data(repeating: UInt8(ascii: "x"), count: 20_000)]
            let l = try await raised("LIMIT_EXCEEDED") { try await req.request(bytes("x"), meta: big) }
            XCTAssertEqual(l.fields["limit"], "max_header_size")
            XCTAssertEqual(Set(l.fields.keys), ["limit", "detail"])
        }
    }

    func test_fail_closed_is_going_away_on_the_wire() async throws {
        try await within {
            let server = try runtime()
            let client = try runtime()
            defer {
                client.shutdown()
                server.shutdown()
            }
            let listener = try await server.bind(bindAddress("inproc"))
            let replier = try listener.replier("/x")
            let req = try client.requester()
            try await req.connect(replier.address())
            func answered(_ code: String) async throws -> Task<Data, Error> {
                let asking = Task { try await req.request(bytes("q")) }
                try await replier.accept().fail(code, "said so")
                return asking
            }
            let lost = try await raised("CONNECTION_LOST") { try await answered("CLOSED").value }
            XCTAssertEqual(lost.fields["lossCause"], "peer_closed")
            let rejected = try await raised("REJECTED") { try await answered("TIMEOUT").value }
            XCTAssertEqual(rejected.fields["reason"], "said so")
            let unsupported = try await raised("UNSUPPORTED") { try await answered("UNSUPPORTED").value }
            XCTAssertEqual(unsupported.fields["reason"], "said so")
            // A name that is no code is the caller's InvalidConfig; the exchange is still owed.
            let asking = Task { try await req.request(bytes("q")) }
            let ex = try await replier.accept()
            let e = try await raised("INVALID_CONFIG") { try await ex.fail("NOT_A_CODE", "x") }
            XCTAssertTrue(e.description.contains("NOT_A_CODE"), e.description)
            ex.cancel()
            try await raised("CANCELED") { try await asking.value }
        }
    }

    func test_an_endpoint_never_connected_is_not_connected() async throws {
        try await within {
            let rt = try runtime()
            defer { rt.shutdown() }
            let e = try await raised("NOT_CONNECTED") { try await rt.requester().request(bytes("x")) }
            XCTAssertTrue(e.fields.isEmpty)
        }
    }

    func test_a_bad_option_is_invalid_config_naming_it() async throws {
        let e = try await raised("INVALID_CONFIG") { try runtime(limits: ["idleTimeoutMs": "soon"]) }
        XCTAssertTrue(e.description.contains("idleTimeoutMs"), e.description)
        let n = try await raised("INVALID_CONFIG") { try runtime(limits: ["noSuchLimit": 1]) }
        XCTAssertTrue(n.description.contains("noSuchLimit"), n.description)
        let rt = try runtime(limits: ["idleTimeoutMs": 500, "keepAliveMs": .off])
        defer { rt.shutdown() }
        try await raised("INVALID_CONFIG") { try rt.pusher(endpointOptions(["outboxFull": "sometimes"])) }
    }

    func test_a_closed_endpoint_or_consumed_handle_is_closed() async throws {
        try await withPair("inproc") { p in
            let replier = try p.listener.replier("/x")
            let req = try p.client.requester()
            try await req.connect(replier.address())
            req.closeEndpoint()
            try await raised("CLOSED") { try await req.request(bytes("x")) }
            let again = try p.client.requester()
            try await again.connect(replier.address())
            let asking = Task { try await again.request(bytes("q")) }
            let ex = try await replier.accept()
            try await ex.reply(bytes("a"))
            try await raised("CLOSED") { try await ex.reply(bytes("b")) }
            let answer = text(try await asking.value)
            XCTAssertEqual(answer, "a")
        }
    }

    // Refusals at connect (test_refusals.py: the same name): an unbound path is
    // UnknownEndpoint naming it, a path of another pattern Unsupported, on every transport.
    func test_connect_to_an_unbound_path_or_a_path_of_another_pattern_fails_at_connect() async throws {
        try await onEveryTransport { _, p in
            let kept = [
                try p.listener.puller("/jobs") as AnyObject,
                try p.listener.replier("/rpc"),
                try p.listener.publisher("/prices"),
            ]
            let pusher = try p.client.pusher()
            let requester = try p.client.requester()
            for e in [
                try await raised("UNKNOWN_ENDPOINT") { try await pusher.connect(at(p.listener, "/nowhere")) },
                try await raised("UNKNOWN_ENDPOINT") { try await requester.connect(at(p.listener, "/nowhere")) },
            ] {
                XCTAssertEqual(e.fields["path"], "/nowhere")
                XCTAssertTrue(e.definite)
            }
            try await raised("UNSUPPORTED") { try await pusher.connect(at(p.listener, "/rpc")) }
            try await raised("UNSUPPORTED") { try await pusher.connect(at(p.listener, "/prices")) }
            try await raised("UNSUPPORTED") { try await requester.connect(at(p.listener, "/jobs")) }
            // No slot was made: the pusher is not connected, and nothing was sent.
            XCTAssertEqual(try pusher.peerCount(), 0)
            try await raised("NOT_CONNECTED") { try await pusher.send(bytes("lost?")) }
            XCTAssertEqual(p.client.counters()["streamsOpened"], 0)
            try await pusher.connect(at(p.listener, "/jobs"))
            try await requester.connect(at(p.listener, "/rpc"))
            XCTAssertEqual(kept.count, 3)
        }
    }

    // A request to a path that passed the check at connect and was bound to a puller after it
    // (test_refusals.py: the same name; 2 MiB, beyond the stream window, so the refusal cannot
    // lose the race to the transport receipt).
    func test_request_to_pull_path_is_unsupported() async throws {
        try await onEveryTransport { _, p in
            let before = try p.listener.replier("/jobs")
            let req = try p.client.requester()
            try await req.connect(at(p.listener, "/jobs"))
            before.closeEndpoint()
            let puller = try p.listener.puller("/jobs")
            let e = try await raised("UNSUPPORTED") { try await req.request(payload(2 << 20)) }
            XCTAssertTrue(e.definite)
            _ = puller
        }
    }

    func test_unknown_endpoint_is_reported() async throws {
        try await onEveryTransport { _, p in
            let gone = try p.listener.replier("/nowhere")
            let req = try p.client.requester()
            try await req.connect(at(p.listener, "/nowhere"))
            gone.closeEndpoint()
            let e = try await raised("UNKNOWN_ENDPOINT") { try await req.request(payload(2 << 20)) }
            XCTAssertEqual(e.fields["path"], "/nowhere")
            try await raised("UNKNOWN_ENDPOINT") { try await req.request(bytes("x")) }
        }
    }
}
