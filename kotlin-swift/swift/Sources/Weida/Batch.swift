// A received batch whose bodies share buffers (`recvBatch`), beside `recvMany`'s `Data` per
// body. At 64 B a `Data` of its own is two allocations a message (its storage object and its
// bytes), which were the larger part of the Swift batched receiver's CPU above the core's; a
// slice of one `Data` for the batch would cost nothing, but keeps the batch's indices, so that
// `body[0]` traps for every body but the first (docs/PERFORMANCE.md, "Swift's batch of views").
// A `BodyView` is indexed from 0, as a `Data` of its own is, and costs one reference; the bodies
// beside it share its buffer up to 64 KiB, as a Node batch's `Buffer` views do, so that a kept
// view keeps at most that much of its batch alive.
import Foundation

/// Bodies of one received batch (a run of them, at most `viewShareMax` bytes unless one body
/// alone is larger: `viewsOf`), copied once into one allocation; freed when the last
/// `BodyView` of it goes. Immutable once made.
final class BatchStorage: @unchecked Sendable {
    let base: UnsafeMutablePointer<UInt8>
    /// How many bytes it holds.
    let count: Int

    init(copying b: UnsafeRawBufferPointer) {
        count = b.count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(b.count, 1), alignment: 8)
        base = raw.bindMemory(to: UInt8.self, capacity: Swift.max(b.count, 1))
        if let from = b.baseAddress { raw.copyMemory(from: from, byteCount: b.count) }
    }

    deinit { base.deallocate() }
}

/// A message body received by `recvBatch`: bytes indexed from 0 (`body[0]` is its first byte),
/// a view of a buffer it shares with the bodies beside it in its batch (at most 64 KiB of them
/// unless it alone is larger), which it keeps alive, copying nothing. It reads as
/// bytes do in Foundation (`DataProtocol`, `ContiguousBytes`: `String(decoding: body, as:
/// UTF8.self)`, `body.withUnsafeBytes`, `JSONDecoder().decode(T.self, from: body.data)`);
/// `Data(body)` or `body.data` copies it out, which lets the shared buffer go.
///
/// ```swift
/// for m in try await puller.recvBatch(256) {
///     let first = m.body.first            // no copy
///     store(m.body.data)                  // a copy, its own
/// }
/// ```
public struct BodyView: DataProtocol, ContiguousBytes, Hashable, Sendable, CustomStringConvertible {
    let storage: BatchStorage
    let start: Int
    /// The number of bytes.
    public let count: Int

    init(_ storage: BatchStorage, _ start: Int, _ count: Int) {
        self.storage = storage
        self.start = start
        self.count = count
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(i: Int) -> UInt8 {
        precondition(i >= 0 && i < count, "BodyView index out of range")
        return storage.base[start + i]
    }

    public var regions: CollectionOfOne<BodyView> { CollectionOfOne(self) }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage.base + start, count: count))
    }

    public func withContiguousStorageIfAvailable<R>(
        _ body: (UnsafeBufferPointer<UInt8>) throws -> R
    ) rethrows -> R? {
        try body(UnsafeBufferPointer(start: storage.base + start, count: count))
    }

    /// The bytes, copied into a `Data` of their own.
    public var data: Data { withUnsafeBytes { Data($0) } }

    public static func == (a: BodyView, b: BodyView) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }

    public func hash(into h: inout Hasher) {
        h.combine(count)
        withUnsafeBytes { h.combine(bytes: $0) }
    }

    public var description: String { "\(count) bytes" }
}

/// A message received by `recvBatch`: a `Message` whose body is a `BodyView` (`message` copies
/// it into a `Message`).
public struct MessageView: Sendable {
    public let body: BodyView
    let origin: Origin
    /// Under PerProducer ordering (a subscriber's copies, a puller's messages): the sequence
    /// number, and how many were missed.
    public let sequence: UInt64?
    public let gap: UInt64?

    init(body: BodyView, origin: Origin, sequence: UInt64?, gap: UInt64?) {
        self.body = body
        self.origin = origin
        self.sequence = sequence
        self.gap = gap
    }

    /// Application metadata, in order.
    public var metadata: [MetaEntry] { origin.metadata }
    /// The endpoint path it was addressed to.
    public var path: String { origin.path }
    /// The peer (nil in process, or for an anonymous QUIC client).
    public var peer: Peer? { origin.peer }
    /// Pub/Sub: the topic.
    public var topic: String? { origin.topic }

    /// The message's metadata value `name`, if it came with one.
    public func meta(_ name: String) -> Data? { origin.metadata.first { $0.name == name }?.value }

    /// The same message with its body copied into a `Data` of its own.
    public var message: Message {
        Message(body: body.data, metadata: metadata, path: path, peer: peer, topic: topic,
                sequence: sequence, gap: gap)
    }
}
