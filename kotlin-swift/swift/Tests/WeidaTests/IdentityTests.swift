// Key pinning (python/tests/test_identity.py and the Kotlin IdentityTest: the same names).
import Foundation
import XCTest

@testable import Weida

final class IdentityTests: XCTestCase {
    func test_a_pinned_address_connects_and_each_side_sees_the_others_key() async throws {
        try await within {
            let server = try runtime()
            let client = try runtime()
            defer {
                client.shutdown()
                server.shutdown()
            }
            let listener = try await server.bind("weida://127.0.0.1:0")
            let puller = try listener.puller("/a")
            XCTAssertTrue(puller.address().hasPrefix("weida://\(server.fingerprint())@"), puller.address())
            let pusher = try client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(bytes("hi"))
            guard case let .key(fingerprint)? = try await puller.recv().peer else {
                return XCTFail("not a key")
            }
            XCTAssertEqual(fingerprint, client.fingerprint())
        }
    }

    func test_a_wrong_pin_is_untrusted_and_names_what_answered() async throws {
        try await within {
            let server = try runtime()
            defer { server.shutdown() }
            let puller = try await server.bind("weida://127.0.0.1:0").puller("/a")
            let other = Identity.ephemeral().fingerprint()
            let wrong = try addressWithPin(address: puller.address(), fingerprint: other)
            let client = try runtime()
            defer { client.shutdown() }
            let e = try await raised("UNTRUSTED") { try await client.pusher().connect(wrong) }
            XCTAssertEqual(e.fields["fingerprint"], server.fingerprint())
            XCTAssertEqual(e.fields["expected"], other)
        }
    }

    func test_an_address_without_a_pin_is_untrusted_by_default_and_pinned_trust_accepts_it() async throws {
        try await within {
            let server = try runtime()
            defer { server.shutdown() }
            let listener = try await server.bind("weida://127.0.0.1:0")
            let puller = try listener.puller("/a")
            let bare = "weida://127.0.0.1:\(listener.address().split(separator: ":").last!)/a"
            let client = try runtime()
            defer { client.shutdown() }
            let e = try await raised("UNTRUSTED") { try await client.pusher().connect(bare) }
            XCTAssertNil(e.fields["expected"] ?? nil)
            XCTAssertTrue(e.description.contains(server.fingerprint()), e.description)
            for trust in [try Trust.pinned(fingerprints: [server.fingerprint()]), Trust.unverified()] {
                let trusting = try runtime(trust: trust)
                defer { trusting.shutdown() }
                try await trusting.pusher().connect(bare)
            }
            _ = puller
        }
    }

    func test_require_client_admits_a_pinned_client_and_refuses_others() async throws {
        try await within {
            let server = try runtime()
            let good = try runtime()
            let stranger = try runtime()
            let anonymous = try runtime(options: ["presentIdentity": false])
            defer { for rt in [server, good, stranger, anonymous] { rt.shutdown() } }
            let listener = try await server.bind(
                "weida://127.0.0.1:0", requireClient: try Trust.pinned(fingerprints: [good.fingerprint()]))
            let replier = try listener.replier("/a")
            let req = try good.requester()
            try await req.connect(replier.address())
            let serving = Task {
                let ex = try await replier.accept()
                try await ex.reply(try await ex.takeBody())
            }
            let answer = text(try await req.request(bytes("ok")))
            XCTAssertEqual(answer, "ok")
            try await serving.value
            for refused in [stranger, anonymous] {
                do {
                    let r = try refused.requester()
                    try await r.connect(replier.address())
                    _ = try await r.request(bytes("x"))
                    XCTFail("a client the listener does not trust was served")
                } catch let e as WeidaError {
                    XCTAssertTrue(["CONNECTION_LOST", "UNTRUSTED"].contains(e.code), "\(e)")
                }
            }
        }
    }

    func test_an_anonymous_client_has_no_peer_identity() async throws {
        try await within {
            let server = try runtime()
            let client = try runtime(options: ["presentIdentity": false])
            defer {
                client.shutdown()
                server.shutdown()
            }
            let puller = try await server.bind("weida://127.0.0.1:0").puller("/a")
            let pusher = try client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(bytes("x"))
            let peer = try await puller.recv().peer
            XCTAssertNil(peer)
        }
    }

    func test_in_process_peers_have_no_identity() async throws {
        try await withPair("inproc") { p in
            let puller = try p.listener.puller("/a")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(bytes("x"))
            let peer = try await puller.recv().peer
            XCTAssertNil(peer)
        }
    }

    func test_a_unix_peer_presents_the_principal_the_kernel_proved() async throws {
        try await withPair("unix") { p in
            let puller = try p.listener.puller("/a")
            let pusher = try p.client.pusher()
            try await pusher.connect(puller.address())
            try await pusher.send(bytes("x"))
            guard case let .local(_, _, pid)? = try await puller.recv().peer else {
                return XCTFail("not a local peer")
            }
            XCTAssertEqual(pid, getpid())
        }
    }

    func test_malformed_pem_and_fingerprints_are_refused() async throws {
        try await raised("INVALID_CONFIG") { try Identity.fromPem(certChainPem: "not pem", keyPem: "not pem") }
        try await raised("INVALID_ADDRESS") { try Trust.pinned(fingerprints: ["sha256:nothex"]) }
        try await raised("INVALID_CONFIG") { try Trust.anchorsPem(pem: "nothing") }
    }

    func test_an_identity_is_made_again_from_the_pem_files_it_saves() throws {
        let dir = NSTemporaryDirectory() + "weida-swift-pem-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = Identity.ephemeral()
        try first.save(dir: dir)
        let cert = try String(contentsOfFile: dir + "/cert.pem", encoding: .utf8)
        let key = try String(contentsOfFile: dir + "/key.pem", encoding: .utf8)
        let again = try Identity.fromPem(certChainPem: cert, keyPem: key)
        XCTAssertEqual(first.fingerprint(), again.fingerprint())
        // A certificate is an anchor, as PEM or as DER.
        _ = try Trust.anchorsPem(pem: cert)
        let body = cert.components(separatedBy: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try XCTUnwrap(Data(base64Encoded: body))
        _ = Trust.anchors(caDers: [der])
        _ = Trust.address().withAnchorDer(der: der)
    }

    func test_trust_and_addresses_are_built_from_their_parts() async throws {
        try await within {
            let server = try runtime()
            defer { server.shutdown() }
            let listener = try await server.bind(bindAddress("quic"))
            let address = listener.address()
            XCTAssertEqual(try addressPin(address: address), server.fingerprint())
            XCTAssertNil(try addressPath(address: address))
            let withPath = try addressWithPath(address: address, path: "/jobs")
            XCTAssertEqual(try addressPath(address: withPath), "/jobs")
            XCTAssertEqual(try addressWithoutPath(address: withPath), address)
            let fp = Identity.ephemeral().fingerprint()
            XCTAssertEqual(try Trust.address().withPin(fingerprint: fp).pins(), [fp])
            try await raised("INVALID_ADDRESS") { try Trust.address().withPin(fingerprint: "sha256:nothex") }
        }
    }
}
