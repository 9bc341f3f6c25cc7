// The agent protocol's lines as values (conformance/README.md, "The agent protocol"). Decoded
// and encoded by Foundation's JSONDecoder and JSONEncoder through Codable, which keep a
// boolean apart from a number (JSONSerialization gives both as NSNumber on Linux).
import Foundation

enum JSON: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSON].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSON].self))
        }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case let .bool(b): try c.encode(b)
        case let .int(i): try c.encode(i)
        case let .double(d): try c.encode(d)
        case let .string(s): try c.encode(s)
        case let .array(a): try c.encode(a)
        case let .object(o): try c.encode(o)
        }
    }

    /// An unsigned count or counter: every one the binding gives fits in 63 bits.
    static func count<T: BinaryInteger>(_ v: T) -> JSON { .int(Int64(v)) }

    static func text(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }

    static func count<T: BinaryInteger>(_ v: T?) -> JSON { v.map { .int(Int64($0)) } ?? .null }

    var string: String? { if case let .string(s) = self { return s }; return nil }
    var object: [String: JSON]? { if case let .object(o) = self { return o }; return nil }
    var array: [JSON]? { if case let .array(a) = self { return a }; return nil }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByNilLiteral, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int64) { self = .int(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(nilLiteral: ()) { self = .null }
    init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
}

typealias Obj = [String: JSON]

extension Dictionary where Key == String, Value == JSON {
    /// This object with `other`'s fields added (`other` wins).
    func merging(_ other: Obj) -> Obj { merging(other, uniquingKeysWith: { _, new in new }) }
}
