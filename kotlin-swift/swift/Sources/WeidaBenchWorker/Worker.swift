// weida's Swift binding, worker of the benchmark suite (bench/README.md, "The Swift rows"): a
// port of the Kotlin worker (bench/suite/kotlin/src/weida/bench/Worker.kt), with its command
// line, its lines and its JSON result, so run.py treats both alike. This file: the command line,
// the lines a worker prints and the meters; Cases.swift the cases; main.swift the process.
// kotlin-swift/swift/run.sh --bench builds it in the chroot, kotlin-swift/swift/bench-worker.sh
// runs it on the host:
//
//   kotlin-swift/swift/bench-worker.sh --pattern push_pull --transport quic --size 64 \
//       [--variant await|batch] [--role bind|dial]
import Foundation
import Weida

let systemName = "weida-swift"
let batchSize = 256
let patterns = ["push_pull", "req_rep", "pub_sub"]
let transports = ["quic", "unix", "inproc"]
let variants = ["await", "batch"]
let roles = ["both", "bind", "dial"]

/// A bad command line (exit status 2), or a case this worker does not have (1).
struct Usage: Error { let message: String }

/// A measurement that cannot give a figure.
struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

struct Args: Sendable {
    var pattern = ""
    var transport = ""
    var size = 64
    var width = 1
    var secs = 1.0
    var warmup = 0.3
    var variant = variants[0]
    var role = "both"
    var address: String?

    /// How long a process of a two-process row may live: its peer's stall limit and setup.
    var lifetime: Double { warmup + 4 * secs + 30 }

    /// When a case with both ends here is declared stalled (bench/src/meter.rs `Window::limit`).
    var stallLimit: Double { warmup + 4 * secs + 10 }
}

func parse(_ argv: [String]) throws -> Args {
    var v: [String: String] = [
        "size": "64", "width": "1", "secs": "1", "warmup": "0.3", "variant": variants[0], "role": "both",
    ]
    let known: Set = ["pattern", "transport", "size", "width", "secs", "warmup", "variant", "role", "address"]
    var i = 0
    while i < argv.count {
        let arg = argv[i]
        i += 1
        guard arg.hasPrefix("--") else { throw Usage(message: "unexpected argument \(arg)") }
        let name: String
        let value: String
        if let eq = arg.firstIndex(of: "=") {
            name = String(arg[arg.index(arg.startIndex, offsetBy: 2)..<eq])
            value = String(arg[arg.index(after: eq)...])
        } else {
            guard i < argv.count else { throw Usage(message: "\(arg) needs a value") }
            name = String(arg.dropFirst(2))
            value = argv[i]
            i += 1
        }
        guard known.contains(name) else { throw Usage(message: "unknown option --\(name)") }
        v[name] = value
    }
    func choice(_ name: String, _ of: [String]) throws -> String {
        guard let x = v[name] else { throw Usage(message: "--\(name) is required") }
        guard of.contains(x) else {
            throw Usage(message: "--\(name) is one of \(of.joined(separator: ", ")), not \(x)")
        }
        return x
    }
    func whole(_ name: String) throws -> Int {
        guard let x = Int(v[name]!) else { throw Usage(message: "--\(name) is a whole number") }
        return x
    }
    func number(_ name: String) throws -> Double {
        guard let x = Double(v[name]!) else { throw Usage(message: "--\(name) is a number") }
        return x
    }
    let a = Args(
        pattern: try choice("pattern", patterns),
        transport: try choice("transport", transports),
        size: try whole("size"),
        width: try whole("width"),
        secs: try number("secs"),
        warmup: try number("warmup"),
        variant: try choice("variant", variants),
        role: try choice("role", roles),
        address: v["address"]
    )
    if (a.role == "dial") != (a.address != nil) {
        throw Usage(message: "--address goes with --role dial, and only with it")
    }
    return a
}

// MARK: The lines a worker prints

/// A value of the JSON result.
enum Value: Sendable {
    case int(Int)
    case double(Double)
    case string(String)

    var json: String {
        switch self {
        case let .int(x): return String(x)
        case let .double(x): return x.isFinite ? "\(x)" : "null"
        case let .string(x): return quoted(x)
        }
    }
}

/// A result's figures, in the order they are printed.
typealias Figures = [(String, Value)]

func quoted(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
        default: out.unicodeScalars.append(u)
        }
    }
    return out + "\""
}

/// Standard output, one whole line at a time, written at once (run.py reads the lines as they
/// come); the lifetime thread and the cases share it, hence the lock.
final class Report: @unchecked Sendable {
    private let lock = NSLock()
    private var printed = false
    /// `WINDOW start` / `WINDOW end` are printed when this process measures one end of two.
    var markers = false

    func line(_ s: String) {
        lock.lock()
        defer { lock.unlock() }
        let bytes = Array((s + "\n").utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            off += n
        }
    }

    /// The bind side's first line: what the dial side dials.
    func announce(_ address: String) { line("ADDRESS \(address)") }

    func marker(_ what: String) {
        if markers { line("WINDOW \(what)") }
    }

    /// The JSON result line, once: the parameters, then the figures or the error.
    func result(_ a: Args, _ figures: Figures) {
        lock.lock()
        if printed {
            lock.unlock()
            return
        }
        printed = true
        lock.unlock()
        var all: Figures = [("system", .string(systemName)), ("language", .string("swift"))]
        all.append(("variant", .string(a.variant)))
        all.append(("pattern", .string(a.pattern)))
        all.append(("transport", .string(a.transport)))
        all.append(("size", .int(a.size)))
        all.append(("width", .int(a.width)))
        all.append(("secs", .double(a.secs)))
        all.append(("warmup", .double(a.warmup)))
        all.append(("role", .string(a.role)))
        all += figures
        line("{" + all.map { "\(quoted($0.0)):\($0.1.json)" }.joined(separator: ",") + "}")
    }
}

let report = Report()

// MARK: The meters (bench/suite/workers/common.py)

/// Seconds on the monotonic clock.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// How many messages between clock readings: every one from 64 KiB, every 64th below.
func strideOf(_ size: Int) -> Int { max(1, min(64, 65536 / max(1, size))) }

/// Counts messages received whole; see bench/suite/workers/common.py Meter. One task uses it.
final class Meter: @unchecked Sendable {
    private let a: Args
    private let stride: Int
    private let created = now()
    private var n = 0
    private var start: (Double, Int)?
    private var end: (Double, Int)?

    init(_ a: Args) {
        self.a = a
        stride = strideOf(a.size)
    }

    /// `k` more messages received; true once the window is over.
    func tick(_ k: Int = 1) -> Bool {
        let before = n
        n += k
        if end != nil { return true }
        if n / stride == before / stride { return false }
        let t = now()
        guard let s = start else {
            if t - created >= a.warmup {
                start = (t, n)
                report.marker("start")
            }
            return false
        }
        if t - s.0 >= a.secs {
            end = (t, n)
            report.marker("end")
            return true
        }
        return false
    }

    func result() throws -> Figures {
        guard let s0 = start, let s1 = end else { throw Failure("no complete window") }
        let messages = s1.1 - s0.1
        if messages <= 0 { throw Failure("stalled: nothing received in the window") }
        let seconds = s1.0 - s0.0
        let rate = Double(messages) / seconds
        return [
            ("messages", .int(messages)), ("seconds", .double(seconds)), ("msgs_per_s", .double(rate)),
            ("mb_per_s", .double(rate * Double(a.size) / 1e6)),
        ]
    }
}

/// Round trips recorded after the warmup until the window is over. One task uses it.
final class Recorder: @unchecked Sendable {
    private let a: Args
    private let created = now()
    private var start: Double?
    private var samples: [Double] = []

    init(_ a: Args) {
        self.a = a
        samples.reserveCapacity(1 << 16)
    }

    func record(_ began: Double) -> Bool {
        let t = now()
        guard let s = start else {
            if t - created >= a.warmup {
                start = t
                report.marker("start")
            }
            return false
        }
        samples.append(t - began)
        if t - s < a.secs { return false }
        report.marker("end")
        return true
    }

    /// p50 and p99 in microseconds, nearest rank.
    func result() throws -> Figures {
        let count = samples.count
        if count == 0 { throw Failure("no samples") }
        let s = samples.sorted()
        func at(_ q: Double) -> Double { s[min(max(Int((Double(count) * q).rounded(.up)), 1), count) - 1] * 1e6 }
        return [("p50_us", .double(at(0.50))), ("p99_us", .double(at(0.99))), ("samples", .int(count))]
    }
}

/// What the case's task hands the main thread: the exit status and the figures.
final class Outcome: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var value: (Int32, Figures) = (1, [])

    func set(_ status: Int32, _ figures: Figures) {
        value = (status, figures)
        done.signal()
    }

    func wait() -> (Int32, Figures) {
        done.wait()
        return value
    }
}

/// An error as the result's `error`: a weida error's code and message, else its description.
func describe(_ error: Error) -> String {
    if let e = error as? WeidaError { return "\(e.code): \(e.description)" }
    if let e = error as? Failure { return e.description }
    return "\(type(of: error)): \(error)"
}
