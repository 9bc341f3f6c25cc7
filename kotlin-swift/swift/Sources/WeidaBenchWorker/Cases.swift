// The worker's cases, those of Worker.kt: Push/Pull and Req/Rep over QUIC (weida://127.0.0.1),
// AF_UNIX and in process, with the `Weida` module's API as a user calls it.
//
// Variant "await" (the default): one `await` per send and per receive, `pusher.send(body)` and
// `puller.recv()` (what `puller.messages()` iterates), `requester.request(body)`. Variant
// "batch" (Push/Pull only): `pusher.sendMany(bodies)` of 256 and `puller.recvBatch(256)` (the
// bodies views of buffers shared by up to 64 KiB of them, as the Node worker's `recvMany` hands
// out a batch of 64 KiB or less; Batch.swift says why), as the Kotlin, Python and Node workers'
// "batch".
//
// Both ends in one process (`--role both`): a server runtime and a client runtime, the sending
// (or replying) loop and the measuring loop two tasks of one group. Two processes (`--role bind`
// / `dial`): the bind side has the puller or the replier and prints `ADDRESS`, the dial side the
// pusher or the requester; the measuring side (the puller, the requester) prints `WINDOW start` /
// `WINDOW end`, the puller's window opening after its first message; the other side runs until
// it is terminated, or until its lifetime (main.swift) is over.
import Foundation
import Weida

func body(_ size: Int) -> Data { Data((0..<size).map { UInt8($0 % 251) }) }

func check(_ got: Int, _ size: Int) throws {
    if got != size { throw Failure("received \(got) bytes, sent \(size)") }
}

/// One receive (a batch of up to `batchSize`, or one message), each body's size checked: how
/// many.
func received(_ puller: Puller, _ batch: Bool, _ size: Int) async throws -> Int {
    if batch {
        let ms = try await puller.recvBatch(batchSize)
        for m in ms { try check(m.body.count, size) }
        return ms.count
    }
    try check(try await puller.recv().body.count, size)
    return 1
}

/// A fresh folder under `TMPDIR` (run.py gives each row its own and removes it).
func scratch() throws -> String {
    let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
    var template = Array("\(base)/weida-suite-XXXXXX".utf8CString)
    return try template.withUnsafeMutableBufferPointer { p in
        guard let made = mkdtemp(p.baseAddress!) else { throw Failure("mkdtemp under \(base) failed") }
        return String(cString: made)
    }
}

func bindAddress(_ transport: String) throws -> String {
    switch transport {
    case "quic": return "weida://127.0.0.1:0"
    case "unix": return "weida+unix://\(try scratch())/w.sock"
    default: return "weida+inproc://suite-\(getpid())"
    }
}

/// The first of `tasks` to return figures gives the case's figures; the others (a loop that
/// only ends with an error) are cancelled then. The first error ends the case.
func firstFigures(_ tasks: [@Sendable () async throws -> Figures?]) async throws -> Figures {
    try await withThrowingTaskGroup(of: Figures?.self) { group in
        for t in tasks { group.addTask(operation: t) }
        defer { group.cancelAll() }
        while let r = try await group.next() {
            if let f = r { return f }
        }
        throw Failure("no task measured")
    }
}

// MARK: Push/Pull

/// Push/Pull with both ends in this process: the pusher sends back to back while the other task
/// receives.
func pushPull(_ a: Args) async throws -> Figures {
    if a.role == "bind" { return try await pullAlone(a) }
    if a.role == "dial" { try await pushAlone(a) }
    let server = try runtime()
    let client = try runtime()
    defer {
        client.shutdown()
        server.shutdown()
    }
    let listener = try await server.bind(try bindAddress(a.transport))
    let puller = try listener.puller("/p")
    let pusher = try client.pusher()
    try await pusher.connect(puller.address())
    let data = body(a.size)
    let bodies = Array(repeating: data, count: batchSize)
    let batch = a.variant == "batch"
    let meter = Meter(a)
    return try await firstFigures([
        {
            while !Task.isCancelled {
                if batch { try await pusher.sendMany(bodies) } else { try await pusher.send(data) }
            }
            return nil
        },
        {
            while true {
                let k = try await received(puller, batch, a.size)
                if meter.tick(k) { return try meter.result() }
            }
        },
    ])
}

/// The receiving process: binds, announces, counts from its first message.
func pullAlone(_ a: Args) async throws -> Figures {
    let server = try runtime()
    defer { server.shutdown() }
    let listener = try await server.bind(try bindAddress(a.transport))
    let puller = try listener.puller("/p")
    report.announce(puller.address())
    let batch = a.variant == "batch"
    var meter: Meter?
    while true {
        let k = try await received(puller, batch, a.size)
        if let m = meter {
            if m.tick(k) { return try m.result() }
        } else {
            meter = Meter(a)
        }
    }
}

/// The sending process: sends until terminated.
func pushAlone(_ a: Args) async throws -> Never {
    let client = try runtime()
    defer { client.shutdown() }
    let pusher = try client.pusher()
    try await pusher.connect(a.address!)
    let data = body(a.size)
    let bodies = Array(repeating: data, count: batchSize)
    let batch = a.variant == "batch"
    while true {
        if batch { try await pusher.sendMany(bodies) } else { try await pusher.send(data) }
    }
}

// MARK: Req/Rep

/// Echoes every request until cancelled.
func serve(_ replier: Replier) async throws {
    while !Task.isCancelled {
        let ex = try await replier.accept()
        try await ex.reply(try await ex.takeBody())
    }
}

/// Req/Rep with both ends in this process: one request outstanding, the replier echoes.
func reqRep(_ a: Args) async throws -> Figures {
    if a.role == "bind" { try await replyAlone(a) }
    if a.role == "dial" { return try await requestAlone(a) }
    let server = try runtime()
    let client = try runtime()
    defer {
        client.shutdown()
        server.shutdown()
    }
    let listener = try await server.bind(try bindAddress(a.transport))
    let replier = try listener.replier("/r")
    let req = try client.requester()
    try await req.connect(replier.address())
    return try await firstFigures([
        {
            try await serve(replier)
            return nil
        },
        { try await requests(a, req) },
    ])
}

func requests(_ a: Args, _ req: Requester) async throws -> Figures {
    let data = body(a.size)
    let rec = Recorder(a)
    while true {
        let began = now()
        try check(try await req.request(data).count, a.size)
        if rec.record(began) { return try rec.result() }
    }
}

/// The replying process: echoes until terminated.
func replyAlone(_ a: Args) async throws -> Never {
    let server = try runtime()
    defer { server.shutdown() }
    let listener = try await server.bind(try bindAddress(a.transport))
    let replier = try listener.replier("/r")
    report.announce(replier.address())
    while true {
        let ex = try await replier.accept()
        try await ex.reply(try await ex.takeBody())
    }
}

/// The requesting process: measures, then prints its result.
func requestAlone(_ a: Args) async throws -> Figures {
    let client = try runtime()
    defer { client.shutdown() }
    let req = try client.requester()
    try await req.connect(a.address!)
    return try await requests(a, req)
}

/// The case for `a`: "batch" is Push/Pull only, and there is no Pub/Sub case yet.
func run(_ a: Args) async throws -> Figures {
    switch (a.pattern, a.variant) {
    case ("push_pull", _): return try await pushPull(a)
    case ("req_rep", "await"): return try await reqRep(a)
    default: throw Usage(message: "\(systemName) has no \(a.pattern) case")
    }
}
