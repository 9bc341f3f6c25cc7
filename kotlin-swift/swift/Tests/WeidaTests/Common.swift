// Shared scaffolding, as python/tests/conftest.py and the Kotlin tests' Common.kt: one test body
// per behaviour, run over every transport (QUIC, in process, AF_UNIX). Test names are the
// Python tests' (`test_…`), so the same behaviour has the same name in every language.
import Foundation
import XCTest

@testable import Weida

let transports = ["quic", "inproc", "unix"]

private let counter = Counter()

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        n += 1
        return n
    }
}

/// A bind address on `transport` that no other test uses.
func bindAddress(_ transport: String) -> String {
    let n = Int(getpid()) * 1_000_000 + counter.next()
    switch transport {
    case "quic":
        return "weida://127.0.0.1:0"
    case "inproc":
        return "weida+inproc://test-\(n)"
    default:
        let dir = NSTemporaryDirectory() + "weida-swift-tests"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return "weida+unix://\(dir)/s\(n).sock"
    }
}

/// `n` bytes of a recognisable pattern (byte i is i % 251), made a block at a time: a byte at a
/// time, a debug build takes seconds for the 16 MiB the cancel tests send.
func payload(_ n: Int) -> Data {
    let block = Data((0..<251).map { UInt8($0) })
    var d = Data(capacity: n + block.count)
    while d.count < n { d.append(block) }
    return d.prefix(n)
}

func bytes(_ s: String) -> Data { Data(s.utf8) }

func text(_ d: Data) -> String { String(decoding: d, as: UTF8.self) }

/// A bound runtime with its listener, and a dialling runtime that never redials.
struct Pair {
    let server: Runtime
    let listener: Listener
    let client: Runtime
}

struct Deadline: Error {}

struct NothingThrown: Error {}

/// Resumes a continuation once, whichever of its racers comes first.
private final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false

    /// Whether this call was the first.
    func first() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if done { return false }
        done = true
        return true
    }
}

/// `body` with a deadline, so a hang fails instead of stalling the run: past it, the test fails
/// with `Deadline` at once and `body`'s task is cancelled. It is not awaited: a call whose
/// cancellation did not reach the core (what the cancel tests check) would keep it waiting.
func within(_ seconds: Double = 30, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (k: CheckedContinuation<Void, Error>) in
        let once = Once()
        let work = Task {
            do {
                try await body()
                if once.first() { k.resume() }
            } catch {
                if once.first() { k.resume(throwing: error) }
            }
        }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            if once.first() {
                work.cancel()
                k.resume(throwing: Deadline())
            }
        }
    }
}

/// A pair on `transport` for `body`, shut down after it.
func withPair(_ transport: String, _ body: @escaping @Sendable (Pair) async throws -> Void) async throws {
    try await within {
        let server = try runtime()
        let listener = try await server.bind(bindAddress(transport))
        let client = try runtime(reconnect: never)
        defer {
            client.shutdown()
            server.shutdown()
        }
        try await body(Pair(server: server, listener: listener, client: client))
    }
}

/// `body` on every transport, each named in a failure.
func onEveryTransport(
    _ ts: [String] = transports, file: StaticString = #filePath, line: UInt = #line,
    _ body: @escaping @Sendable (String, Pair) async throws -> Void
) async throws {
    for t in ts {
        do {
            try await withPair(t) { try await body(t, $0) }
        } catch {
            XCTFail("on \(t): \(error)", file: file, line: line)
        }
    }
}

/// What `body` threw, checked to be the `WeidaError` case `is` recognises.
@discardableResult
func raised<T>(
    _ what: String, file: StaticString = #filePath, line: UInt = #line,
    _ body: () async throws -> T, is matches: (WeidaError) -> Bool
) async throws -> WeidaError {
    do {
        _ = try await body()
    } catch let e as WeidaError {
        XCTAssertTrue(matches(e), "expected \(what), got \(e)", file: file, line: line)
        return e
    }
    XCTFail("expected \(what), nothing was thrown", file: file, line: line)
    throw NothingThrown()
}

/// The `WeidaError` case a code's name makes: `CONNECTION_LOST` is `.ConnectionLost`.
func caseName(_ code: String) -> String {
    code.lowercased().split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
}

/// The case `e` is, by name (its Mirror's one child).
func caseName(of e: WeidaError) -> String? { Mirror(reflecting: e).children.first?.label }

/// What `body` threw, checked to be the case the code's name makes, with that `code`:
/// `try await raised("UNTRUSTED") { … }`.
@discardableResult
func raised<T>(
    _ code: String, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> T
) async throws -> WeidaError {
    try await raised(code, file: file, line: line, body, is: { $0.code == code && caseName(of: $0) == caseName(code) })
}
