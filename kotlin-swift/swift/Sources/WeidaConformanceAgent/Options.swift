// A runtime step's configuration and an endpoint's `options`, in the binding's spelling: the
// protocol's snake_case names are the camelCase ones the Swift layer takes (`idle_timeout_ms` is
// `idleTimeoutMs`, docs/BINDINGS.md), so a name converts mechanically and weida-ffi checks it.
import Weida

func camel(_ snake: String) -> String {
    let words = snake.split(separator: "_", omittingEmptySubsequences: false)
    return words.enumerated().map { i, w in i == 0 ? String(w) : w.prefix(1).uppercased() + w.dropFirst() }.joined()
}

func snake(_ camel: String) -> String {
    camel.map { $0.isUppercase ? "_" + $0.lowercased() : String($0) }.joined()
}

/// `"address"`, `"unverified"` or `{"pinned": ["sha256:…", …]}`.
func trustArg(_ v: JSON?) throws -> Trust {
    switch v {
    case "address"?: return Trust.address()
    case "unverified"?: return Trust.unverified()
    case let .object(o)? where o["pinned"]?.array != nil:
        let pins = o["pinned"]!.array!
        guard pins.allSatisfy({ $0.string != nil }) else { throw BadRequest("a pin is a string") }
        return try Trust.pinned(fingerprints: pins.map { $0.string! })
    default:
        throw BadRequest("unknown trust \(String(describing: v))")
    }
}

/// An object of option values by their protocol names, renamed; null (off) is `.off`.
private func named(_ v: JSON?, _ what: String) throws -> Options {
    guard let o = v?.object else { throw BadRequest("\(what) is an object") }
    var out: Options = [:]
    for (k, x) in o {
        switch x {
        case .null: out[camel(k)] = .off
        case let .int(i): out[camel(k)] = .whole(value: i)
        case let .bool(b): out[camel(k)] = .flag(value: b)
        case let .string(s): out[camel(k)] = .name(value: s)
        default: throw BadRequest("\(what).\(k) is a number, a flag, a name or null")
        }
    }
    return out
}

/// `limits` by name (`idle_timeout_ms`, `keep_alive_ms: null`, …).
func limitsArg(_ v: JSON?) throws -> Options { v == nil ? [:] : try named(v, "limits") }

/// A `reconnect` policy; absent, no redial (the scenarios written before redial assert it).
func reconnectArg(_ v: JSON?) throws -> Options { v == nil ? never : try named(v, "reconnect") }

/// The step's `options`: an endpoint's own bounds, and its own `reconnect` if given.
func endpointOptionsArg(_ args: Obj) throws -> EndpointOptions {
    guard let v = args["options"] else { return endpointOptions() }
    guard var o = v.object else { throw BadRequest("options is an object") }
    let reconnect = try o.removeValue(forKey: "reconnect").map { try named($0, "options.reconnect") }
    return endpointOptions(try named(.object(o), "options"), reconnect: reconnect)
}
