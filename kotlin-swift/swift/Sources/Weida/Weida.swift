// The idiomatic Swift layer over the UniFFI-generated code (weida_uniffi.swift, checked for
// drift by `./dev swift`). It converts and nothing more:
//
// - every wait is an `async throws` function that a cancelled task cancels in the core. UniFFI's
//   Swift code awaits a Rust future to its end whatever happens to the task, so each call here
//   that takes UniFFI's path makes a `Cancellation`, passes it to the generated call and fires it from
//   `withTaskCancellationHandler`: weida-ffi then ends the call as a dropped future would (a
//   send being written is reset, a receive loses nothing), and the call throws
//   `CancellationError` (or returns what it had already finished with). A send that can
//   finish now is one synchronous FFI call instead (`sendReady`); receives, `sendMany`,
//   requests, a replier's accept and an exchange's `takeBody` and `reply` take the fast lane
//   (FastLane.swift), whose waits a cancelled task ends the same way;
// - receiving is an `AsyncSequence`: `puller.messages()`, `subscriber.messages()`,
//   `replier.exchanges()`, `for await e in endpoint.events()`;
// - errors are the generated `WeidaError`, one case per core code, with `code`, `description`,
//   `definite` and `fields` by the camelCase names the other bindings use;
// - options are given by name as Node spells them (camelCase, durations in ms), each value a
//   literal: `runtime(limits: ["idleTimeoutMs": 500, "keepAliveMs": .off], reconnect: never)`.
//
// Names are Kotlin's (docs/BINDINGS.md, the Swift column), with Swift's argument labels.
import Foundation

/// Metadata given with a message: a value by name.
public typealias Meta = [String: Data]

// MARK: Options

extension OptionValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(integerLiteral value: Int64) { self = .whole(value: value) }
    public init(floatLiteral value: Double) { self = .number(value: value) }
    public init(stringLiteral value: String) { self = .name(value: value) }
    public init(booleanLiteral value: Bool) { self = .flag(value: value) }
}

/// Options by name (`["idleTimeoutMs": 500, "ordering": "detect", "keepAliveMs": .off]`).
public typealias Options = [String: OptionValue]

/// A redial policy that never redials: `runtime(reconnect: never)`.
public let never: Options = ["giveUpAfterAttempts": 0]

/// A runtime: option names in camelCase and durations in milliseconds, as Node spells them;
/// weida-ffi's tables check them (a bad one is `WeidaError.InvalidConfig` naming it).
public func runtime(
    identity: Identity? = nil,
    trust: Trust? = nil,
    limits: Options = [:],
    reconnect: Options? = nil,
    options: Options = [:]
) throws -> Runtime {
    try Runtime(options: RuntimeOptions(
        identity: identity, trust: trust, limits: limits, reconnect: reconnect, options: options
    ))
}

/// An endpoint's options (`maxCollectedBody`, `endpointQueue`, `sendTimeoutMs`, `outbox…`) and
/// its own redial policy.
public func endpointOptions(_ options: Options = [:], reconnect: Options? = nil) -> EndpointOptions {
    EndpointOptions(options: options, reconnect: reconnect)
}

// MARK: Cancellation

/// `call` with a `Cancellation` fired when the task is cancelled. A call it ended throws
/// `CancellationError`; a call that finished first returns its value.
func cancellable<T>(_ call: (Cancellation) async throws -> T) async throws -> T {
    let c = Cancellation()
    do {
        return try await withTaskCancellationHandler {
            try await call(c)
        } onCancel: {
            c.cancel()
        }
    } catch WeidaError.Aborted {
        throw CancellationError()
    }
}

/// A receive of up to `max` messages (at least one): those ready now in one FFI call with no
/// Rust future (`takeReady`), else the waiting receive. Both take the endpoint's fast lane
/// (FastLane.swift), the batch written by Rust into a buffer this layer keeps and read there in
/// place; where the lane cannot, the UniFFI calls: `takeReady`, and the waiting receive into a
/// `Received`, which gives back what it took if the task is cancelled (its deinit). Every READY_STREAK (64) operations in a row
/// that finished at once on a thread, `takeReady` answers an empty batch and this yields
/// (`Task.yield()`) before the waiting receive, as Kotlin's does, so that a stream of ready
/// messages gives other tasks turns: the waiting receive alone does not suspend the task when
/// its future finishes before UniFFI's code parks it. Not shown by a test: `Task.yield()` does
/// not always give way (docs/BINDINGS.md, Threading). Either way the batch comes packed,
/// the bodies end to end and the path, peer and topic once for the messages that share them
/// (kotlin-swift/uniffi/src/packed.rs), not as a record per message: lifting those records
/// took most of a batched receive's time (docs/PERFORMANCE.md, "Swift"). A task already
/// cancelled throws `CancellationError` before it takes anything.
func receive<T>(
    _ max: Int,
    lane: FastLane?,
    ready: (UInt32) throws -> Packed?,
    received: () -> Received,
    into: @escaping (UInt32, Received, Cancellation?) async throws -> Void,
    as decode: Decode<T>
) async throws -> [T] {
    try Task.checkCancellation()
    if let lane {
        if let now = try lane.take(max, orElse: ready, as: decode) {
            if !now.isEmpty { return now }
            await Task.yield()
        }
        if let got = try await lane.wait(max, as: decode) { return got }
    } else if let now = try ready(UInt32(max)) {
        if now.count != 0 { return now.decoded(decode) }
        await Task.yield()
    }
    let r = received()
    try await cancellable { try await into(UInt32(max), r, $0) }
    return r.takePacked().decoded(decode)
}

/// `bodies` in weida-ffi's packed layout (core/ffi/src/packed.rs): end to end, zeros to a
/// multiple of 4, then each body's end as a little-endian u32.
func packed(_ bodies: [Data]) -> Data {
    var out = Data(count: packedSize(bodies))
    out.withUnsafeMutableBytes { packInto($0, bodies) }
    return out
}

/// The size of `bodies` packed.
func packedSize(_ bodies: [Data]) -> Int {
    let total = bodies.reduce(0) { $0 + $1.count }
    return ((total + 3) & ~3) + 4 * bodies.count
}

/// `bodies` packed at the start of `dst`, which holds at least `packedSize(bodies)` bytes.
func packInto(_ dst: UnsafeMutableRawBufferPointer, _ bodies: [Data]) {
    let total = bodies.reduce(0) { $0 + $1.count }
    let endsAt = (total + 3) & ~3
    var at = 0
    for (i, b) in bodies.enumerated() {
        b.withUnsafeBytes { (src: UnsafeRawBufferPointer) in
            if let from = src.baseAddress {
                (dst.baseAddress! + at).copyMemory(from: from, byteCount: src.count)
            }
        }
        at += b.count
        dst.storeBytes(of: UInt32(at).littleEndian, toByteOffset: endsAt + 4 * i, as: UInt32.self)
    }
    // The padding is zeros, as Rust's packing writes it (a kept buffer holds older bytes).
    for p in total..<endsAt { dst[p] = 0 }
}

/// What messages of a packed batch share (`Packed.origins` in kotlin-swift/uniffi/src/packed.rs);
/// a class, so that a `MessageView` holds its origin with one reference.
final class Origin: Sendable {
    let metadata: [MetaEntry]
    let path: String
    let peer: Peer?
    let topic: String?

    init(metadata: [MetaEntry], path: String, peer: Peer?, topic: String?) {
        self.metadata = metadata
        self.path = path
        self.peer = peer
        self.topic = topic
    }

    /// Every origin in `o`, in order.
    static func all(_ o: UnsafeRawBufferPointer) -> [Origin] {
        var at = 0
        func u32() -> UInt32 {
            defer { at += 4 }
            return UInt32(bigEndian: o.loadUnaligned(fromByteOffset: at, as: UInt32.self))
        }
        func u8() -> UInt8 {
            defer { at += 1 }
            return o[at]
        }
        func bytes() -> UnsafeRawBufferPointer {
            let n = Int(u32())
            defer { at += n }
            return UnsafeRawBufferPointer(rebasing: o[at..<at + n])
        }
        func string() -> String { String(decoding: bytes(), as: UTF8.self) }
        var out: [Origin] = []
        while at < o.count {
            let path = string()
            var peer: Peer?
            switch u8() {
            case 1: peer = .key(fingerprint: string())
            case 2: peer = .local(uid: u32(), gid: u32(), pid: Int32(bitPattern: u32()))
            default: peer = nil
            }
            let topic = u8() == 1 ? string() : nil
            let entries = Int(u32())
            var metadata: [MetaEntry] = []
            metadata.reserveCapacity(entries)
            for _ in 0..<entries {
                let name = string()
                metadata.append(MetaEntry(name: name, value: Data(bytes())))
            }
            out.append(Origin(metadata: metadata, path: path, peer: peer, topic: topic))
        }
        return out
    }
}

extension Packed {
    /// The messages of a packed batch, in order (`messagesOf`).
    func messages() -> [Message] { decoded(messagesOf) }

    /// The packed batch read by `decode`.
    func decoded<T>(_ decode: Decode<T>) -> [T] {
        bodies.withUnsafeBytes { b in
            index.withUnsafeBytes { ix in
                origins.withUnsafeBytes { o in decode(Int(count), b, ix, o) }
            }
        }
    }
}

/// How a receive reads a packed batch: its count, then its bodies, index and origins, in place
/// (`messagesOf`: `[Message]`, `viewsOf`: `[MessageView]`).
typealias Decode<T> = (Int, UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> [T]

/// The messages of an `Option<Packed>` as UniFFI encodes it, read in place (the fast lane's
/// answer): nil for None. The layout is the record's, field by field: the option's tag, the
/// count (u32), then `bodies`, `index` and `origins`, each an i32 length and its bytes, all
/// big-endian (kotlin-swift/uniffi/src/packed.rs `write_some`; PatternsTests reads a batch
/// both ways).
func packedMessages(_ v: UnsafeRawBufferPointer) -> [Message]? { packedBatch(v, as: messagesOf) }

/// `packedMessages`, read by `decode`.
func packedBatch<T>(_ v: UnsafeRawBufferPointer, as decode: Decode<T>) -> [T]? {
    if v[0] == 0 { return nil }
    var at = 1
    func u32() -> Int {
        defer { at += 4 }
        return Int(UInt32(bigEndian: v.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
    }
    func blob() -> UnsafeRawBufferPointer {
        let n = u32()
        defer { at += n }
        return UnsafeRawBufferPointer(rebasing: v[at..<at + n])
    }
    let count = u32()
    let bodies = blob()
    let index = blob()
    return decode(count, bodies, index, blob())
}

/// The `n` messages of a packed batch, in order, each body a `Data` of its own. The bodies are
/// in weida-ffi's packed layout (end to end, zeros to a multiple of 4, then each body's end as
/// a little-endian u32: core/ffi/src/packed.rs), the index and the origins beside them
/// big-endian (kotlin-swift/uniffi/src/packed.rs).
func messagesOf(_ n: Int, bodies b: UnsafeRawBufferPointer, index ix: UnsafeRawBufferPointer,
                origins o: UnsafeRawBufferPointer) -> [Message] {
    walk(n, bodies: b, index: ix, origins: o) { at, end, o, sequence, gap in
        // `b` is never empty here: it holds at least this message's end.
        Message(
            body: Data(bytes: b.baseAddress! + at, count: end - at), metadata: o.metadata,
            path: o.path, peer: o.peer, topic: o.topic, sequence: sequence, gap: gap)
    }
}

/// The `n` messages of a packed batch (`messagesOf`'s layout), in order, as views: the bodies
/// copied once into buffers that the bodies refer to (`BodyView`), each buffer a run of
/// consecutive bodies of at most `viewShareMax` bytes in all (a larger body alone), so that a
/// view the application keeps keeps at most that much of its batch alive.
func viewsOf(_ n: Int, bodies b: UnsafeRawBufferPointer, index ix: UnsafeRawBufferPointer,
             origins o: UnsafeRawBufferPointer) -> [MessageView] {
    if n == 0 { return [] }
    let endsAt = b.count - 4 * n
    func end(_ m: Int) -> Int {
        Int(UInt32(littleEndian: b.loadUnaligned(fromByteOffset: endsAt + 4 * m, as: UInt32.self)))
    }
    var m = 0 // the message `walk` is making
    var storage: BatchStorage?
    var from = 0, to = 0 // the part of `b` that `storage` holds
    return walk(n, bodies: b, index: ix, origins: o) { at, last, o, sequence, gap in
        defer { m += 1 }
        if storage == nil || last > to {
            // A new buffer from this body: it and those after it while they fit.
            var k = m + 1
            to = last
            while k < n, end(k) - at <= viewShareMax {
                to = end(k)
                k += 1
            }
            from = at
            storage = BatchStorage(copying: UnsafeRawBufferPointer(rebasing: b[from..<to]))
        }
        return MessageView(body: BodyView(storage!, at - from, last - at), origin: o, sequence: sequence, gap: gap)
    }
}

/// The most bytes of bodies one `recvBatch` buffer holds unless one body alone is larger:
/// weida-ffi's `ONE_BUFFER_MAX`, what a kept Node `Buffer` view can hold of its batch.
let viewShareMax = 64 * 1024

/// Each of the `n` messages of a packed batch made by `make` from its body's start and end in
/// `b`, its origin, sequence and gap, in order.
@inline(__always)
func walk<T>(_ n: Int, bodies b: UnsafeRawBufferPointer, index ix: UnsafeRawBufferPointer,
             origins o: UnsafeRawBufferPointer,
             _ make: (Int, Int, Origin, UInt64?, UInt64?) -> T) -> [T] {
    let origins = Origin.all(o)
    // Read in place through raw pointers: a `Data` subscript or `[UInt8](index)` per byte
    // was a generic call each (docs/PERFORMANCE.md, "Swift").
    var out: [T] = []
    out.reserveCapacity(n)
    let endsAt = b.count - 4 * n
    var at = 0
    var i = 0
    func be64() -> UInt64 {
        defer { i += 8 }
        return UInt64(bigEndian: ix.loadUnaligned(fromByteOffset: i, as: UInt64.self))
    }
    for m in 0..<n {
        let end = Int(UInt32(littleEndian: b.loadUnaligned(
            fromByteOffset: endsAt + 4 * m, as: UInt32.self)))
        let o = origins[Int(UInt16(bigEndian: ix.loadUnaligned(fromByteOffset: i, as: UInt16.self)))]
        let flags = ix[i + 2]
        i += 3
        let sequence = flags & 1 != 0 ? be64() : nil
        let gap = flags & 2 != 0 ? be64() : nil
        out.append(make(at, end, o, sequence, gap))
        at = end
    }
    return out
}

// MARK: Runtime and Listener

extension Runtime {
    /// Binds `address` (no path); `requireClient` makes a client key from it mandatory.
    public func bind(_ address: String, requireClient: Trust? = nil) async throws -> Listener {
        try await cancellable { try await bind(address: address, requireClient: requireClient, cancel: $0) }
    }

    public func pusher(_ options: EndpointOptions? = nil) throws -> Pusher { try pusher(options: options) }
    public func requester(_ options: EndpointOptions? = nil) throws -> Requester { try requester(options: options) }
    public func subscriber(_ options: EndpointOptions? = nil) throws -> Subscriber { try subscriber(options: options) }
    public func surveyor(_ options: EndpointOptions? = nil) throws -> Surveyor { try surveyor(options: options) }
    /// A publisher that dials collectors (`Listener.subscriber`).
    public func publisher(_ options: EndpointOptions? = nil) throws -> DialingPublisher { try publisher(options: options) }
    /// A dialling pair: `connect` it to a bound pair (`Listener.pair`).
    public func pair(_ options: EndpointOptions? = nil) throws -> Pair { try pair(options: options) }
    /// A puller that dials bound pushers (`Listener.pusher`).
    public func puller(_ options: EndpointOptions? = nil) throws -> DialingPuller { try puller(options: options) }
    /// A raw dialling endpoint (core `Peer`): `connect` it to acceptors, then `open` or
    /// `exchange`.
    public func peer(_ options: EndpointOptions? = nil) throws -> RawPeer { try peer(options: options) }

    /// A bus member bound at `path` on `listener` (this runtime's).
    public func bus(_ listener: Listener, _ path: String, _ options: EndpointOptions? = nil) throws -> Bus {
        try bus(listener: listener, path: path, options: options)
    }

    /// Stops admitting work, writes out the pushers' outboxes, gives finished transfers until
    /// `deadlineMs` to reach the peer's transport, then closes everything.
    public func drain(_ deadlineMs: Double) async throws -> Drained {
        try await cancellable { try await drain(deadlineMs: deadlineMs, cancel: $0) }
    }
}

extension Listener {
    public func puller(_ path: String, _ options: EndpointOptions? = nil) throws -> Puller {
        try puller(path: path, options: options)
    }

    public func replier(_ path: String, _ options: EndpointOptions? = nil) throws -> Replier {
        try replier(path: path, options: options)
    }

    /// A respondent: a `Replier` by another name (surveys arrive as exchanges).
    public func respondent(_ path: String, _ options: EndpointOptions? = nil) throws -> Replier {
        try respondent(path: path, options: options)
    }

    public func publisher(_ path: String, _ options: EndpointOptions? = nil) throws -> Publisher {
        try publisher(path: path, options: options)
    }

    /// A collector bound at `path`: dialling publishers feed it.
    /// A pair bound at `path`: one dialling pair at a time claims it.
    public func pair(_ path: String, _ options: EndpointOptions? = nil) throws -> Pair {
        try pair(path: path, options: options)
    }

    /// A pusher bound at `path`: the pullers that connect share its messages, round-robin.
    public func pusher(_ path: String, _ options: EndpointOptions? = nil) throws -> BoundPusher {
        try pusher(path: path, options: options)
    }

    public func subscriber(_ path: String, _ options: EndpointOptions? = nil) throws -> BoundSubscriber {
        try subscriber(path: path, options: options)
    }

    /// An acceptor bound at `path`: one-way transfers and exchanges (`Incoming`).
    public func acceptor(_ path: String, _ options: EndpointOptions? = nil) throws -> Acceptor {
        try acceptor(path: path, options: options)
    }
}

// MARK: Push/Pull

extension Pusher {
    /// Connects to `address`: waits for the first dial, or (`wait: false`) records it and dials
    /// in the background (connect-before-bind).
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Sends `body` as one message. Cancelled, the transfer is reset: the reader sees Canceled.
    /// Without metadata, a body its peer's lane has room for is queued in one FFI call with no
    /// Rust future (`sendReady`); otherwise the waiting `send`, after a `Task.yield()` every
    /// READY_STREAK (64) operations in a row that finished at once, as receives do (`receive`).
    /// A task already cancelled throws `CancellationError` and sends nothing.
    public func send(_ body: Data, meta: Meta? = nil) async throws {
        try Task.checkCancellation()
        if meta == nil {
            switch try sendReady(body: body) {
            case 0: return
            case 2: await Task.yield()
            default: break
            }
        }
        try await cancellable { try await send(body: body, meta: meta, cancel: $0) }
    }

    /// Sends each body as its own message, in order; a failure's `fields["sent"]` says how many
    /// were sent. The bodies cross packed (`packed`), one value instead of a list that UniFFI
    /// writes and Rust lifts body by body: on the fast lane, packed into a buffer this layer
    /// keeps (FastLane.swift); where the lane cannot, as one `Data` through UniFFI.
    public func sendMany(_ bodies: [Data]) async throws {
        try Task.checkCancellation()
        if let lane, try await lane.sendMany(bodies) { return }
        let all = packed(bodies)
        let count = UInt32(bodies.count)
        try await cancellable { try await sendPacked(packed: all, count: count, cancel: $0) }
    }

    /// Queues `body` at once if there is room: true; false if there is none.
    public func trySend(_ body: Data) throws -> Bool { try trySend(body: body) }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

extension Puller {
    /// The next message. Cancelled, it loses nothing: what it took goes back to the queue.
    public func recv() async throws -> Message {
        try await recvMany(1)[0]
    }

    /// Up to `max` messages (at least one).
    public func recvMany(_ max: Int) async throws -> [Message] {
        try await receive(max, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: messagesOf)
    }

    /// Up to `max` messages (at least one; `max` as `recvMany` takes it), as `recvMany` takes
    /// them, each body a view of a buffer shared with the bodies beside it in the batch
    /// (`BodyView`, Batch.swift) instead of a `Data` of its own. Cancelled, it loses nothing.
    public func recvBatch(_ max: Int) async throws -> [MessageView] {
        try await receive(max, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: viewsOf)
    }

    /// Every message, until the endpoint ends (`Closed` ends the sequence; another error is
    /// thrown).
    public func messages() -> AsyncThrowingStream<Message, Error> { untilClosed { try await self.recv() } }

    /// The next message as a stream (`IncomingTransfer`), for a body read in parts: the next one
    /// no receive has taken.
    public func accept() async throws -> IncomingTransfer {
        try await cancellable { try await accept(cancel: $0) }
    }

    /// Every message as a stream, until the puller ends.
    public func transfers() -> AsyncThrowingStream<IncomingTransfer, Error> {
        untilClosed { try await self.accept() }
    }
}

// MARK: Streams

extension OutgoingTransfer {
    /// Writes all of `body`; waits while the peer's window is full. Cancelled, the transfer is
    /// cancelled.
    public func write(_ body: Data) async throws {
        try await cancellable { try await write(body: body, cancel: $0) }
    }

    /// Writes each chunk in order, as one `write` each. Cancelled, the transfer is cancelled.
    public func writeChunks(_ chunks: [Data]) async throws {
        try await cancellable { try await writeChunks(chunks: chunks, cancel: $0) }
    }

    /// Queues the FIN; the `Delivery` tells when the peer's transport holds it all.
    @discardableResult
    public func finish() async throws -> Delivery {
        try await cancellable { try await finish(cancel: $0) }
    }
}

extension IncomingTransfer {
    /// The next chunk, nil after the writer's FIN; a cancelled stream throws `Canceled`, never
    /// ends short. Cancel-safe.
    public func readChunk() async throws -> Data? {
        try await cancellable { try await readChunk(cancel: $0) }
    }

    /// The whole body, refusing one above `max` bytes (`LimitExceeded`, the writer stopped).
    public func collect(_ max: UInt64) async throws -> Data {
        try await cancellable { try await collect(max: max, cancel: $0) }
    }

    /// The chunks, until the writer's FIN: `for try await c in t.chunks()`.
    public func chunks() -> AsyncThrowingStream<Data, Error> {
        AsyncThrowingStream(unfolding: { try await self.readChunk() })
    }

    /// The stream's metadata value `name`, if it came with one.
    public func meta(_ name: String) -> Data? {
        metadata().first { $0.name == name }?.value
    }
}

extension PendingReply {
    /// The reply's start: what came with it and its body as a stream.
    public func reply() async throws -> IncomingTransfer {
        try await cancellable { try await reply(cancel: $0) }
    }
}

// MARK: Req/Rep

extension Requester {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Sends `body` and returns the reply's body. Cancelled, the request is reset: the replier
    /// sees Canceled. Without metadata it takes the fast lane (FastLane.swift).
    public func request(_ body: Data, meta: Meta? = nil) async throws -> Data {
        try Task.checkCancellation()
        if meta == nil, let lane, let reply = try await lane.request(body) { return reply }
        return try await cancellable { try await request(body: body, meta: meta, cancel: $0) }
    }

    /// As `request`, the whole reply with what came with it.
    public func requestWith(_ body: Data, meta: Meta? = nil) async throws -> Message {
        try await cancellable { try await requestWith(body: body, meta: meta, cancel: $0) }
    }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

// MARK: Bus

extension Bus {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Queues a copy for every live member connected; how many.
    @discardableResult
    public func send(_ body: Data, meta: Meta? = nil) async throws -> UInt32 {
        try await cancellable { try await send(body: body, meta: meta, cancel: $0) }
    }

    /// The next message another member sent. Cancelled, it loses nothing.
    public func recv() async throws -> Message {
        try await receive(1, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: messagesOf)[0]
    }

    /// Every message, until the member is closed.
    public func messages() -> AsyncThrowingStream<Message, Error> { untilClosed { try await self.recv() } }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

// MARK: Pub/Sub the other way round

extension DialingPublisher {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Queues a copy for every live collector connected; how many. Never waits.
    @discardableResult
    public func publish(_ topic: String, _ body: Data, meta: Meta? = nil) throws -> UInt32 {
        try publish(topic: topic, body: body, meta: meta)
    }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

extension Pair {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Sends a whole message to the other end; a bound pair waits for a peer.
    public func send(_ body: Data, meta: Meta? = nil) async throws {
        try await cancellable { try await send(body: body, meta: meta, cancel: $0) }
    }

    /// The next message from the other end. Cancelled, it loses nothing.
    public func recv() async throws -> Message {
        try await receive(1, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: messagesOf)[0]
    }

    /// Every message, until the pair is closed.
    public func messages() -> AsyncThrowingStream<Message, Error> { untilClosed { try await self.recv() } }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

extension BoundPusher {
    /// Sends a whole message to the next puller; waits for one, bounded by `sendTimeoutMs`.
    public func send(_ body: Data, meta: Meta? = nil) async throws {
        try await cancellable { try await send(body: body, meta: meta, cancel: $0) }
    }
}

extension DialingPuller {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// The next message. Cancelled, it loses nothing.
    public func recv() async throws -> Message {
        try await receive(1, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: messagesOf)[0]
    }

    /// Every message, until the puller is closed.
    public func messages() -> AsyncThrowingStream<Message, Error> { untilClosed { try await self.recv() } }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

extension BoundSubscriber {
    /// Adds `filter` here, at once.
    public func subscribe(_ filter: String) throws { try subscribe(filter: filter) }

    /// Removes one entry of `filter`; false if it was not held.
    public func unsubscribe(_ filter: String) throws -> Bool { try unsubscribe(filter: filter) }

    /// The next selected message. Cancelled, it loses nothing.
    public func recv() async throws -> Message {
        try await receive(1, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: messagesOf)[0]
    }

    /// Every selected message, until the collector is closed.
    public func messages() -> AsyncThrowingStream<Message, Error> { untilClosed { try await self.recv() } }
}

// MARK: Survey

extension Surveyor {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Asks every live respondent `body`; the run of their answers until `deadlineMs`. No
    /// respondent is an empty run.
    public func survey(_ body: Data, deadlineMs: Double, meta: Meta? = nil) async throws -> SurveyRun {
        try await cancellable { try await survey(body: body, deadlineMs: deadlineMs, meta: meta, cancel: $0) }
    }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

extension SurveyRun {
    /// The next answer; nil once every respondent answered or the deadline passed. A respondent
    /// that refused or failed is thrown as its error, and the next call goes on with the others.
    public func answer() async throws -> Message? {
        try await cancellable { try await next(cancel: $0) }
    }

    /// Every answer until the run ends, a respondent's failure as a `.failure` element (one
    /// failure ends nothing); a cancelled task's iteration ends.
    public func answers() -> AsyncStream<Result<Message, WeidaError>> {
        AsyncStream(unfolding: {
            do {
                guard let m = try await self.answer() else { return nil }
                return .success(m)
            } catch let e as WeidaError {
                if case .Aborted = e { return nil }
                return .failure(e)
            } catch {
                return nil
            }
        })
    }
}

extension Replier {
    /// The next exchange. Cancelled just as an exchange arrives, that exchange is dropped and
    /// its requester sees Canceled.
    public func accept() async throws -> Exchange {
        try Task.checkCancellation()
        if let lane, let x = try await lane.accept() { return x }
        return try await cancellable { try await accept(cancel: $0) }
    }

    /// Every exchange, until the replier ends.
    public func exchanges() -> AsyncThrowingStream<Exchange, Error> { untilClosed { try await self.accept() } }
}

extension Exchange {
    /// The whole request body, bounded by `max` (default `maxCollectedBody`).
    public func takeBody(_ max: UInt64? = nil) async throws -> Data {
        try Task.checkCancellation()
        if max == nil, let body = try await FastLane.takeBody(self) { return body }
        return try await cancellable { try await takeBody(max: max, cancel: $0) }
    }

    /// Replies with `body` (and metadata) and finishes the reply.
    public func reply(_ body: Data, meta: Meta? = nil) async throws {
        try Task.checkCancellation()
        if meta == nil, try await FastLane.reply(self, body) { return }
        try await cancellable { try await reply(body: body, meta: meta, cancel: $0) }
    }

    /// The request's next chunk, nil at its end (the reply may start before). Cancel-safe.
    public func readChunk() async throws -> Data? {
        try await cancellable { try await readChunk(cancel: $0) }
    }

    /// The request's chunks, until its end.
    public func chunks() -> AsyncThrowingStream<Data, Error> {
        AsyncThrowingStream(unfolding: { try await self.readChunk() })
    }

    /// Opens the reply as a stream, for a reply written in parts (`write`, then `finish`).
    public func openReply() async throws -> OutgoingTransfer {
        try await cancellable { try await openReply(meta: nil, cancel: $0) }
    }

    /// As `openReply()`, the reply with `meta`.
    public func openReply(_ meta: Meta) async throws -> OutgoingTransfer {
        try await cancellable { try await openReply(meta: meta, cancel: $0) }
    }

    /// Answers REJECTED with `reason`.
    public func reject(_ reason: String) async throws {
        try await cancellable { try await reject(reason: reason, cancel: $0) }
    }

    /// Answers with the error `code` names (`TIMEOUT`, `CLOSED`, …) and `message`.
    public func fail(_ code: String, _ message: String) async throws {
        try await cancellable { try await fail(code: code, message: message, cancel: $0) }
    }
}

// MARK: Raw streams

extension RawPeer {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Opens a one-way stream: `write` it in parts, then `finish`.
    public func open() async throws -> OutgoingTransfer {
        try await cancellable { try await open(meta: nil, cancel: $0) }
    }

    public func open(_ meta: Meta) async throws -> OutgoingTransfer {
        try await cancellable { try await open(meta: meta, cancel: $0) }
    }

    /// Opens an exchange: its request's transfer, and its reply.
    public func exchange() async throws -> OpenedRequest {
        try await cancellable { try await exchange(meta: nil, cancel: $0) }
    }

    public func exchange(_ meta: Meta) async throws -> OpenedRequest {
        try await cancellable { try await exchange(meta: meta, cancel: $0) }
    }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

extension Acceptor {
    /// The next stream: `.stream(transfer:)` or `.exchange(exchange:)`. Cancel-safe.
    public func accept() async throws -> Incoming {
        try await cancellable { try await accept(cancel: $0) }
    }

    /// Every stream, until the acceptor ends.
    public func incoming() -> AsyncThrowingStream<Incoming, Error> { untilClosed { try await self.accept() } }
}

// MARK: Pub/Sub

extension Publisher {
    /// Queues a copy of `body` for every subscriber whose filters select `topic`; how many.
    /// Never waits.
    public func publish(_ topic: String, _ body: Data) throws -> UInt32 {
        try publish(topic: topic, body: body)
    }

    /// Returns once `n` subscribers are attached.
    public func untilSubscribers(_ n: UInt32) async throws {
        try await cancellable { try await untilSubscribers(n: n, cancel: $0) }
    }

    /// What was dropped of the copies published on `topic` (a topic name, not a filter).
    public func droppedOn(_ topic: String) -> Dropped { droppedOn(topic: topic) }

    /// Opens a streamed message (`FanOut`) to the subscribers whose filters select `topic` now.
    /// Never waits.
    public func `open`(_ topic: String) throws -> FanOut { try `open`(topic: topic) }
}

extension FanOut {
    /// Hands `chunk` to every attached copy, first waiting up to `fanoutWaitMs` for those with
    /// no room (still full then, they are dropped); the copies still attached. Cancelled, the
    /// message is cancelled: no subscriber gets it with a chunk missing.
    @discardableResult
    public func write(_ chunk: Data) async throws -> UInt32 {
        try await cancellable { try await write(chunk: chunk, cancel: $0) }
    }

    /// Hands `chunk` to every attached copy without waiting (one with no room is dropped); the
    /// copies still attached.
    @discardableResult
    public func writeNow(_ chunk: Data) throws -> UInt32 { try writeNow(chunk: chunk) }
}

extension Subscriber {
    public func connect(_ address: String, wait: Bool = true) async throws {
        try await cancellable { try await connect(address: address, wait: wait, cancel: $0) }
    }

    /// Adds `filter` (segments split by `.`, `*` one, `#` the rest); returns once every
    /// connected publisher has it.
    public func subscribe(_ filter: String) async throws {
        try await cancellable { try await subscribe(filter: filter, cancel: $0) }
    }

    /// Removes `filter`; true if it was there. No copy it selected arrives after it returns.
    public func unsubscribe(_ filter: String) async throws -> Bool {
        try await cancellable { try await unsubscribe(filter: filter, cancel: $0) }
    }

    /// The next message. Cancelled, it loses nothing.
    public func recv() async throws -> Message {
        try await recvMany(1)[0]
    }

    public func recvMany(_ max: Int) async throws -> [Message] {
        try await receive(max, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: messagesOf)
    }

    /// `recvMany`, each body a view of a buffer shared with its neighbours (`Puller.recvBatch`).
    public func recvBatch(_ max: Int) async throws -> [MessageView] {
        try await receive(max, lane: lane, ready: self.takeReady(max:), received: self.received, into: self.recvInto(max:into:cancel:), as: viewsOf)
    }

    public func messages() -> AsyncThrowingStream<Message, Error> { untilClosed { try await self.recv() } }

    public func disconnect(_ address: String) throws -> Bool { try disconnect(address: address) }
}

// MARK: Receiving as an AsyncSequence

/// Every element `next` gives, until the endpoint ends: `Closed` ends the sequence, another
/// error is thrown, and a cancelled task's iteration throws `CancellationError`, losing
/// nothing (a receive cancelled hands back what it took).
private func untilClosed<T>(_ next: @escaping () async throws -> T) -> AsyncThrowingStream<T, Error> {
    AsyncThrowingStream(unfolding: {
        do {
            return try await next()
        } catch WeidaError.Closed {
            return nil
        }
    })
}

/// Every event, until the endpoint is gone: `for await e in pusher.events()`. A cancelled
/// task's iteration ends.
extension PeerEvents: AsyncSequence {
    public typealias Element = PeerEvent

    public struct AsyncIterator: AsyncIteratorProtocol {
        let events: PeerEvents

        public mutating func next() async -> PeerEvent? { await events.nextEvent() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: self) }

    /// The next event; nil once the endpoint is gone (or the task was cancelled).
    public func next() async -> PeerEvent? { await nextEvent() }

    fileprivate func nextEvent() async -> PeerEvent? {
        let c = Cancellation()
        return await withTaskCancellationHandler {
            await next(cancel: c)
        } onCancel: {
            c.cancel()
        }
    }
}

// MARK: Messages and errors

extension Message {
    /// The message's metadata value `name`, if it came with one.
    public func meta(_ name: String) -> Data? {
        metadata.first { $0.name == name }?.value
    }
}

extension WeidaError {
    /// The code's name (`CONNECTION_LOST`, or `ABORTED`, `BUSY`, `PANIC` for the binding's own).
    public var code: String { parts.code }

    /// The error's message.
    public var description: String { parts.description }

    /// Whether the failure is definite (false only for `Indeterminate`).
    public var definite: Bool { parts.definite }

    /// The error's fields by their camelCase names (`lossCause`, `fingerprint`, `expected`,
    /// `path`, `limit`, `detail`, `part`, `reason`, `what`, `text`, `errno`, `sent`); a field
    /// known to be absent is nil.
    public var fields: [String: String?] { parts.fields }

    private var parts: (code: String, description: String, definite: Bool, fields: [String: String?]) {
        switch self {
        case let .NotConnected(c, d, f, x), let .ConnectionLost(c, d, f, x),
            let .Indeterminate(c, d, f, x), let .Untrusted(c, d, f, x),
            let .UnknownEndpoint(c, d, f, x), let .Unsupported(c, d, f, x),
            let .Rejected(c, d, f, x), let .Canceled(c, d, f, x),
            let .LimitExceeded(c, d, f, x), let .Timeout(c, d, f, x),
            let .InvalidAddress(c, d, f, x), let .NegotiationFailed(c, d, f, x),
            let .Protocol(c, d, f, x), let .InvalidConfig(c, d, f, x),
            let .InvalidFilter(c, d, f, x), let .Closed(c, d, f, x),
            let .Io(c, d, f, x), let .Unreachable(c, d, f, x):
            return (c, d, f, x)
        case let .Aborted(c, d), let .Busy(c, d), let .Panic(c, d):
            return (c, d, true, [:])
        }
    }
}
