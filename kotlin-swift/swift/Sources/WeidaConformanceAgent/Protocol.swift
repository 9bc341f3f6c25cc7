// The protocol's vocabulary (conformance/README.md, "Errors", "Bodies"): bodies made from their
// specs and reported as summaries, errors read off the binding's `WeidaError`, peers, metadata,
// and the checked reading of a request's arguments.
import Foundation
import Weida

/// A request this agent cannot carry out (AGENT_BAD_REQUEST, never expected by a scenario).
struct BadRequest: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// The longest body whose text a summary carries.
let textInSummary = 1024

func makeBody(_ spec: JSON?) throws -> Data {
    guard let spec = spec?.object else { throw BadRequest("a body is an object") }
    if let t = spec["text"] {
        guard let s = t.string else { throw BadRequest("body.text is a string") }
        return Data(s.utf8)
    }
    if let h = spec["hex"] {
        guard let s = h.string, s.count % 2 == 0 else { throw BadRequest("body.hex is an even-length string") }
        var out = Data(capacity: s.count / 2)
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            guard let b = UInt8(s[i..<j], radix: 16) else { throw BadRequest("body.hex is not hex") }
            out.append(b)
            i = j
        }
        return out
    }
    guard let size = try nonNegative(spec["size"], "body.size") else {
        throw BadRequest("a body has text, hex, or size and pattern")
    }
    let offset = try nonNegative(spec["offset"], "body.offset") ?? 0
    switch spec["pattern"] ?? "seq" {
    case "zero":
        return Data(count: Int(size))
    case "seq":
        return Data((0..<size).map { UInt8((offset + $0) % 251) })
    case let other:
        throw BadRequest("unknown body pattern \(other)")
    }
}

/// A running summary of a body read in parts.
struct Tally {
    private var hash = SHA256()
    private var size = 0
    private var head = Data()

    mutating func add(_ chunk: Data) {
        hash.update(chunk)
        size += chunk.count
        if head.count <= textInSummary {
            head.append(chunk.prefix(textInSummary + 1 - head.count))
        }
    }

    mutating func summary() -> JSON {
        var out: Obj = ["size": .count(size), "sha256": .string(hex(hash.finish()))]
        if size <= textInSummary, let t = utf8(head) { out["text"] = .string(t) }
        return .object(out)
    }
}

func summary(_ body: Data) -> JSON {
    var t = Tally()
    t.add(body)
    return t.summary()
}

func hex<C: Sequence>(_ bytes: C) -> String where C.Element == UInt8 {
    let digits = Array("0123456789abcdef")
    var s = ""
    for b in bytes {
        s.append(digits[Int(b >> 4)])
        s.append(digits[Int(b & 15)])
    }
    return s
}

/// The bytes as text if they are valid UTF-8, else nil (a lenient decode would invent text).
func utf8(_ b: Data) -> String? { String(validating: b, as: UTF8.self) }

/// `{"code", "message", "definite", ...}`, from the fields `WeidaError` carries (Weida.swift).
func errorJSON(_ e: WeidaError) -> Obj {
    var out: Obj = ["code": .string(e.code), "message": .string(e.description), "definite": .bool(e.definite)]
    let field = { (name: String) -> JSON in .text(e.fields[name] ?? nil) }
    switch e {
    case .ConnectionLost, .Indeterminate:
        out["loss_cause"] = field("lossCause")
    case .UnknownEndpoint:
        out["path"] = field("path")
    case .Untrusted:
        out["fingerprint"] = field("fingerprint")
        out["expected"] = field("expected")
    default:
        break
    }
    return out
}

func peerJSON(_ p: Peer?) -> JSON {
    switch p {
    case nil: return .null
    case let .key(fingerprint): return ["kind": "key", "fingerprint": .string(fingerprint)]
    case let .local(uid, gid, pid): return ["kind": "local", "uid": .count(uid), "gid": .count(gid), "pid": .count(pid)]
    }
}

/// Text values as strings, others as `{"hex": …}`; the last of repeated names.
func metadataJSON(_ entries: [MetaEntry]) -> JSON {
    var out: Obj = [:]
    for m in entries { out[m.name] = utf8(m.value).map { .string($0) } ?? ["hex": .string(hex(m.value))] }
    return .object(out)
}

func messageJSON(_ m: Message) -> Obj {
    ["path": .string(m.path), "metadata": metadataJSON(m.metadata), "peer": peerJSON(m.peer), "body": summary(m.body)]
}

/// A message `recvBatch` took, as `messageJSON` reports a `Message`: its fields read from the
/// view, its body copied out of the batch's buffer (`BodyView.data`).
func viewJSON(_ v: MessageView) -> Obj {
    ["path": .string(v.path), "metadata": metadataJSON(v.metadata), "peer": peerJSON(v.peer), "body": summary(v.body.data)]
}

/// A message with its place in its producer's sequence (null unless the runtime requires
/// ordering).
func sequencedJSON(_ m: Message) -> Obj {
    messageJSON(m).merging(["sequence": .count(m.sequence), "gap": .count(m.gap)])
}

/// A copy a subscriber received: `messageJSON` with `topic`, `sequence` and `gap`.
func copyJSON(_ m: Message) -> Obj { sequencedJSON(m).merging(["topic": .text(m.topic)]) }

// MARK: Arguments

func nonNegative(_ v: JSON?, _ what: String) throws -> Int64? {
    switch v {
    case nil, .null?: return nil
    case let .int(i)? where i >= 0: return i
    default: throw BadRequest("\(what) is a non-negative integer")
    }
}

extension Dictionary where Key == String, Value == JSON {
    func str(_ key: String) throws -> String {
        guard let s = self[key]?.string else { throw BadRequest("missing string argument '\(key)'") }
        return s
    }

    func long(_ key: String) throws -> Int64? { try nonNegative(self[key], "argument '\(key)'") }

    func bool(_ key: String, _ otherwise: Bool) throws -> Bool {
        switch self[key] {
        case nil, .null?: return otherwise
        case let .bool(b)?: return b
        default: throw BadRequest("argument '\(key)' is a boolean")
        }
    }

    /// A number of milliseconds, whole or not.
    func number(_ key: String) throws -> Double {
        switch self[key] {
        case let .int(i)?: return Double(i)
        case let .double(d)?: return d
        default: throw BadRequest("\(key) is a number")
        }
    }

    func body() throws -> Data { try makeBody(self["body"]) }

    func metadata() throws -> Meta {
        guard let m = self["metadata"], m != .null else { return [:] }
        guard let o = m.object else { throw BadRequest("metadata is an object of strings") }
        return try o.mapValues { v in
            guard let s = v.string else { throw BadRequest("metadata is an object of strings") }
            return Data(s.utf8)
        }
    }
}
