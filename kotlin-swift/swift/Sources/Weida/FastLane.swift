// The fast lane (kotlin-swift/uniffi/src/fast.rs, fast_wait.rs): a receive, `sendMany`, a
// request, a replier's accept and an accepted exchange's `takeBody` and `reply` through C functions of numbers and a buffer this layer owns, instead of UniFFI's
// calls. It converts and nothing more: each C function calls what the UniFFI export calls and
// answers in UniFFI's encoding behind a tag byte, so a value or an error reads as through the
// export (errors through the generated converter).
//
// Why, for Swift (docs/PERFORMANCE.md, "Swift's fast lane"): through UniFFI a batch crossed
// as a `RustBuffer` that Swift lifted into a `Packed` record, its three blobs each copied into
// an `[UInt8]` and then a `Data`, and `sendMany`'s packed bodies were written into an
// `[UInt8]` and copied again into a `RustBuffer`: at 1 KiB × 256, each a fresh allocation of
// a quarter of a megabyte, whose pages the kernel faulted in again batch after batch (a
// quarter of the sending process's samples in a profile). On the lane a batch is written by
// Rust straight into a buffer this layer keeps and reuses, and read there in place; a packed
// send is written into a kept buffer that Rust copies once. A waiting call has no future that
// Swift polls through UniFFI, and no `Received` or `Cancellation` object: Rust polls it once
// on the caller's thread and otherwise runs it on the I/O thread, which calls one C callback
// with a token when it ends.
import Foundation
import weida_fastFFI
#if canImport(weida_uniffiFFI)
import weida_uniffiFFI
#endif

/// One endpoint's lane: made once per endpoint (`FastLane.of`), held by the lanes' table (until
/// a sweep after its endpoint is gone) and by each call running on it; it holds the endpoint's Rust object
/// weakly, so it keeps no endpoint alive. Once that object is gone the lane answers "cannot"
/// and the caller takes the UniFFI call, which says what happened.
final class FastLane: @unchecked Sendable {
    private let lane: UInt64

    private init(_ lane: UInt64) { self.lane = lane }

    deinit { weida_fast_lane_free(lane) }

    /// The kinds of fast.rs's `weida_fast_lane`.
    enum Kind: Int32 {
        case pusher = 0, puller, subscriber, dialingPuller, boundSubscriber, pair, bus, requester, replier
    }

    /// `takeReady(max)`'s messages through the lane, read by `decode`: nil when nothing is
    /// ready, none to yield first; a receive's error is thrown as the UniFFI call throws it.
    /// `orElse` (the UniFFI call) answers when the lane cannot.
    func take<T>(_ max: Int, orElse: (UInt32) throws -> Packed?, as decode: Decode<T>) throws -> [T]? {
        // `max` as the UniFFI call takes it (a u32: a negative one traps there too), its bits
        // as the C function's i32.
        let bits = Int32(bitPattern: UInt32(max))
        return try Answers.read(
            counting: .answered,
            { out, cap in weida_fast_take_ready(lane, bits, out, cap) },
            orElse: { try orElse(UInt32(max))?.decoded(decode) },
            { packedBatch($0, as: decode) }
        )
    }

    /// A receive of up to `max` messages that waits, read by `decode`; nil when the lane cannot
    /// (take the UniFFI calls). Cancelled, it throws `CancellationError` and loses nothing: what
    /// it took goes back to the front of the queue.
    func wait<T>(_ max: Int, as decode: Decode<T>) async throws -> [T]? {
        let bits = Int32(bitPattern: UInt32(max))
        return try await Waits.wait({ t in weida_fast_wait_recv(lane, bits, t) }) { v in
            packedBatch(v, as: decode) ?? []
        }
    }

    /// `request(body)`'s reply body; nil when the lane cannot. Cancelled, the request is reset.
    func request(_ body: Data) async throws -> Data? {
        try await Waits.wait({ t in
            withBytes(body) { at, n in weida_fast_wait_request(lane, at, n, t) }
        }, blob)
    }

    /// `accept()`'s exchange; nil when the lane cannot. Its `takeBody()` and `reply(body)` take
    /// the lane too (`takeBody(_:)`, `reply(_:_:)`).
    func accept() async throws -> Exchange? {
        try await Waits.wait({ t in weida_fast_wait_accept(lane, t) }) { v in
            // The handle UniFFI's converter would read (`FfiConverterTypeExchange.read`).
            try FfiConverterTypeExchange.lift(UInt64(bigEndian: v.loadUnaligned(as: UInt64.self)))
        }
    }

    /// `x.takeBody()` through the lane; nil when it cannot (take the UniFFI call).
    static func takeBody(_ x: Exchange) async throws -> Data? {
        try await Waits.wait({ t in lend(x) { h in weida_fast_wait_take_body(h, t) } }, blob)
    }

    /// `x.reply(body)` through the lane: false when it cannot (take the UniFFI call).
    static func reply(_ x: Exchange, _ body: Data) async throws -> Bool {
        try await Waits.wait({ t in
            lend(x) { h in withBytes(body) { at, n in weida_fast_wait_reply(h, at, n, t) } }
        }) { _ in true } ?? false
    }

    /// `start(handle)` with a handle of `x` that stays valid until it returns: a clone, freed
    /// after. The call it starts holds the exchange itself.
    private static func lend(_ x: Exchange, _ start: (UInt64) -> Int64) -> Int64 {
        let h = x.uniffiCloneHandle()
        defer {
            var status = RustCallStatus()
            uniffi_weida_uniffi_fn_free_exchange(h, &status)
        }
        return start(h)
    }

    /// `sendMany(bodies)`: false when the lane cannot (take the UniFFI call), or for a batch
    /// above `Answers.kept` packed. A failure is thrown as the UniFFI call throws it, its `sent`
    /// field with it. The bodies are packed into a kept buffer, which Rust copies when the call
    /// starts, so it is free again before the call waits.
    func sendMany(_ bodies: [Data]) async throws -> Bool {
        let size = packedSize(bodies)
        guard size <= Answers.kept, Int32(exactly: bodies.count) != nil else { return false }
        let sent: Bool? = try await Waits.wait({ t in
            Answers.withBuffer(size) { buf in
                packInto(buf, bodies)
                return weida_fast_wait_send_packed(
                    lane, buf.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(size), Int32(bodies.count), t)
            }
        }) { _ in true }
        return sent ?? false
    }

    // MARK: The lanes' table

    /// The lane of `endpoint`, made the first time: nil if it cannot be made.
    static func of(_ endpoint: AnyObject, _ kind: Kind, handle: () -> UInt64) -> FastLane? {
        let id = ObjectIdentifier(endpoint)
        table.lock()
        defer { table.unlock() }
        if let e = lanes[id], e.endpoint === endpoint { return e.lane }
        // An endpoint gone leaves its entry (a new one may have its address): swept here.
        lanes = lanes.filter { $0.value.endpoint != nil }
        let raw = weida_fast_lane(handle(), kind.rawValue)
        guard raw != 0 else { return nil }
        let lane = FastLane(raw)
        lanes[id] = Entry(endpoint: endpoint, lane: lane)
        return lane
    }

    private struct Entry {
        weak var endpoint: AnyObject?
        let lane: FastLane
    }

    private static let table = NSLock()
    private static var lanes: [ObjectIdentifier: Entry] = [:]
}

/// `call` with `body`'s bytes and their count; 0 (the lane cannot: take the UniFFI call) for a
/// body above 2 GiB, which an i32 does not count.
private func withBytes(_ body: Data, _ call: (UnsafePointer<UInt8>?, Int32) -> Int64) -> Int64 {
    guard let n = Int32(exactly: body.count) else { return 0 }
    return body.withUnsafeBytes { b in call(b.bindMemory(to: UInt8.self).baseAddress, n) }
}

/// A body as UniFFI writes a `Blob`: its length (i32, big-endian) and its bytes.
private func blob(_ v: UnsafeRawBufferPointer) -> Data {
    Data(UnsafeRawBufferPointer(rebasing: v[4...]))
}

/// How many answers the lanes gave: a test's evidence that a call took one.
final class LaneCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0

    static let answered = LaneCounter()
    static let waited = LaneCounter()

    func add() {
        lock.lock()
        n += 1
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return n
    }
}

// MARK: Answers

/// The buffers answers are written into and packed sends are packed into, and the reading of
/// an answer.
enum Answers {
    static let first = 64 * 1024
    /// The largest buffer kept for the next call; a larger answer gets one of its own.
    static let kept = 4 * 1024 * 1024

    private static let lock = NSLock()
    private static var free: [UnsafeMutableRawBufferPointer] = []
    /// The size a receive's buffer starts at: doubled (up to `kept`) each time a batch was cut
    /// to the buffer, as Kotlin's thread buffer is.
    private static var preferred = first

    /// `body` with a buffer of at least `size` bytes (at least `preferred`), kept for the next
    /// call if it is at most `kept`.
    static func withBuffer<T>(_ size: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> T) rethrows -> T {
        let buf = take(size)
        defer { give(buf) }
        return try body(buf)
    }

    private static func take(_ size: Int) -> UnsafeMutableRawBufferPointer {
        lock.lock()
        // Buffers kept before `preferred` grew are no use any more: freed, so that they do not
        // hold the places of larger ones.
        free.removeAll { b in
            if b.count < preferred { b.deallocate() }
            return b.count < preferred
        }
        let size = Swift.max(size, preferred)
        if let i = free.lastIndex(where: { $0.count >= size }) {
            let b = free.remove(at: i)
            lock.unlock()
            return b
        }
        lock.unlock()
        return .allocate(byteCount: size, alignment: 16)
    }

    private static func give(_ buf: UnsafeMutableRawBufferPointer) {
        lock.lock()
        // As many as the tasks that called at once, each at most `kept`: a few in practice.
        if buf.count <= kept && buf.count >= preferred && free.count < 16 {
            free.append(buf)
            lock.unlock()
        } else {
            lock.unlock()
            buf.deallocate()
        }
    }

    private static func grow() {
        lock.lock()
        preferred = Swift.min(2 * preferred, kept)
        lock.unlock()
    }

    static let taken: UInt8 = 0
    static let failed: UInt8 = 1
    static let cut: UInt8 = 3

    private enum Step<T> {
        case done(T)
        case again(Int)
        case cannot
    }

    /// An answer as fast.rs writes one: `call(out, cap)` writes it and returns its size (below
    /// 0: the lane cannot, `orElse` answers). Tag 0 (or 3, a batch cut to the buffer: later
    /// calls bring one twice as large, up to `kept`) is read by `read` in place, tag 1 is the
    /// error thrown as the UniFFI call throws it, both counted in `counter`; tag 2 says the
    /// answer, one message or an error larger than the buffer, was kept whole for a buffer
    /// that holds it, and `call` runs again with one.
    static func read<T>(
        counting counter: LaneCounter,
        _ call: (UnsafeMutablePointer<UInt8>, Int32) -> Int32,
        orElse: () throws -> T,
        _ read: (UnsafeRawBufferPointer) throws -> T
    ) throws -> T {
        var size = 0
        while true {
            let step: Step<T> = try withBuffer(size) { buf in
                let n = Int(call(buf.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(clamping: buf.count)))
                if n < 0 { return .cannot }
                let tag = buf[0]
                switch tag {
                case taken, cut:
                    counter.add()
                    if tag == cut { grow() }
                    return .done(try read(UnsafeRawBufferPointer(rebasing: buf[1..<n])))
                case failed:
                    counter.add()
                    var reader = (data: Data(UnsafeRawBufferPointer(rebasing: buf[1..<n])), offset: 0)
                    throw try FfiConverterTypeWeidaError.read(from: &reader)
                default:
                    return .again(Swift.max(n, 2 * buf.count))
                }
            }
            switch step {
            case .done(let v): return v
            case .cannot: return try orElse()
            case .again(let n): size = n
            }
        }
    }
}

// MARK: Waits

/// The calls waiting on the lanes, by token, and the one callback that wakes them, set once per
/// process (fast_wait.rs describes the protocol).
enum Waits {
    private static let lock = NSLock()
    private static var waiting: [Int64: Parked] = [:]
    private static var tokens: Int64 = 0

    /// Whether this layer's callback is the process's: false if another copy of this library
    /// set one first, and waits then take UniFFI's calls.
    static let on: Bool = weida_fast_on_wake(wake) == 0

    /// What the I/O thread calls when a waiting call ends. A token no longer waiting (its task
    /// was cancelled, or the call finished at once) is ignored.
    private static let wake: @convention(c) (Int64) -> Void = { token in forget(token)?.end() }

    /// A new token, for `p`.
    private static func register(_ p: Parked) -> Int64 {
        lock.lock()
        defer { lock.unlock() }
        tokens += 1
        waiting[tokens] = p
        return tokens
    }

    /// What waited on `token`, no longer waiting.
    private static func forget(_ token: Int64) -> Parked? {
        lock.lock()
        defer { lock.unlock() }
        return waiting.removeValue(forKey: token)
    }

    /// One waiting call's task: resumed once, by the wake or by its cancellation, whichever
    /// comes first, and at once if that came before it parked.
    private final class Parked: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<Void, Never>?
        private var ended = false

        func park(_ c: CheckedContinuation<Void, Never>) {
            lock.lock()
            if ended {
                lock.unlock()
                c.resume()
                return
            }
            continuation = c
            lock.unlock()
        }

        func end() {
            lock.lock()
            ended = true
            let c = continuation
            continuation = nil
            lock.unlock()
            c?.resume()
        }
    }

    /// A waiting call through a lane: `start(token)` starts it and returns its wait (0: it could
    /// not start, nil is returned and the caller takes the UniFFI call; the low bit: it finished
    /// at once). The I/O thread's callback wakes this task with the token when it ends, and
    /// `read` reads its answer in place. However this ends the wait is freed: cancelled while it
    /// runs, the call is cancelled in the core (a request reset, a receive's messages given
    /// back) and this throws `CancellationError`; a call that finished first answers.
    static func wait<T>(_ start: (Int64) -> Int64, _ read: (UnsafeRawBufferPointer) throws -> T) async throws -> T? {
        guard on else { return nil }
        let parked = Parked()
        let token = register(parked)
        let w = start(token)
        defer { if w != 0 { weida_fast_wait_free(w) } }
        if w == 0 || w & 1 != 0 {
            _ = forget(token)
            if w == 0 { return nil }
        } else {
            await withTaskCancellationHandler {
                await withCheckedContinuation { parked.park($0) }
            } onCancel: {
                _ = forget(token)
                parked.end()
            }
        }
        var code: Int32 = 0
        return try Answers.read(counting: .waited, { out, cap in
            code = weida_fast_wait_take(w, out, cap)
            return code
        }, orElse: {
            // Still running: its task was cancelled first. Else its answer could not be
            // encoded (a panic in Rust), which UniFFI's call reports as an internal error too.
            if code == running { throw CancellationError() }
            throw LostAnswer()
        }, read)
    }

    /// fast_wait.rs's `RUNNING`.
    private static let running: Int32 = -2
}

/// A waiting call's answer that Rust could not encode (a panic there): what UniFFI's call
/// reports as its internal error `rustPanic`.
struct LostAnswer: Error, CustomStringConvertible {
    var description: String { "weida: a waiting call's answer was lost (a panic in Rust encoding it)" }
}

// MARK: Each endpoint's lane

/// An endpoint with a lane: its kind, and its UniFFI handle to make the lane from.
protocol LaneOwner: AnyObject {
    static var laneKind: FastLane.Kind { get }
    func uniffiCloneHandle() -> UInt64
}

extension LaneOwner {
    var lane: FastLane? { FastLane.of(self, Self.laneKind) { uniffiCloneHandle() } }
}

extension Pusher: LaneOwner { static var laneKind: FastLane.Kind { .pusher } }
extension Puller: LaneOwner { static var laneKind: FastLane.Kind { .puller } }
extension Subscriber: LaneOwner { static var laneKind: FastLane.Kind { .subscriber } }
extension DialingPuller: LaneOwner { static var laneKind: FastLane.Kind { .dialingPuller } }
extension BoundSubscriber: LaneOwner { static var laneKind: FastLane.Kind { .boundSubscriber } }
extension Pair: LaneOwner { static var laneKind: FastLane.Kind { .pair } }
extension Bus: LaneOwner { static var laneKind: FastLane.Kind { .bus } }
extension Requester: LaneOwner { static var laneKind: FastLane.Kind { .requester } }
extension Replier: LaneOwner { static var laneKind: FastLane.Kind { .replier } }
