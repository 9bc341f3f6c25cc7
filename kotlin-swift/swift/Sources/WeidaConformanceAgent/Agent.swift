// The agent's handles and ops (conformance/README.md, "Ops"), each with the Swift binding's
// public API (the `Weida` module's idiomatic layer) as a user calls it. The agent is an actor:
// every op and background task runs on it, interleaving only where one awaits, as the Kotlin
// agent's coroutines share one thread, so the tables need no locks. The Kotlin agent
// (kotlin-swift/kotlin/conformance) is the model, op by op.
import Foundation
import Weida

let protocolVersion = 1

actor Agent {
    let out: Out
    private var names = Set<String>()  // every handle name in use: never reused in one agent
    private var runtimes: [String: Runtime] = [:]
    private var listeners: [String: Listener] = [:]
    private var dialling: [String: AnyObject] = [:]  // the endpoints `connect`, `send` and the rest name
    private var events: [String: PeerEvents] = [:]  // read from the endpoint's making on
    private var pullers: [String: Puller] = [:]  // pullers in manual mode, for `recv`
    private var publishers: [String: Publisher] = [:]
    private var collectors: [String: BoundSubscriber] = [:]  // bound subscribers
    private var transfers: [String: OutgoingTransfer] = [:]  // streamed transfers being written
    private var replies: [String: PendingReply] = [:]  // the replies of streamed requests
    private var fanouts: [String: FanOut] = [:]  // streamed publishes being written
    private var receiving: [String: Subscriber] = [:]  // subscribers in manual mode
    private var services: [String: Registration] = [:]  // handler registrations, for service_counters
    var held: [Exchange] = []  // exchanges a `hold` replier keeps, unanswered
    var connected: [ObjectIdentifier: Flag] = [:]  // set by a subscriber's connect: its loop waits

    init(out: Out) { self.out = out }

    /// Runs `body` in the background, on this actor; a failure that is not the protocol's is
    /// logged.
    func spawn(_ what: String, _ body: @escaping @Sendable () async throws -> Void) {
        Task {
            do {
                try await body()
            } catch {
                log("\(what) failed unexpectedly: \(error)")
            }
        }
    }

    func shutdownAll() { for rt in runtimes.values { rt.shutdown() } }

    // MARK: Handles

    /// Checks that an op may create a handle named `name` (before it creates anything).
    private func free(_ name: String) throws -> String {
        if name.isEmpty || names.contains(name) { throw BadRequest("handle name '\(name)' is empty or taken") }
        return name
    }

    private func claim(_ name: String) throws {
        _ = try free(name)
        names.insert(name)
    }

    private func get<T>(_ table: [String: T], _ kind: String, _ args: Obj, _ key: String) throws -> T {
        let name = try args.str(key)
        guard let v = table[name] else { throw BadRequest("no \(kind) named '\(name)'") }
        return v
    }

    private func runtime(_ args: Obj) throws -> Runtime { try get(runtimes, "runtime", args, "runtime") }
    private func listener(_ args: Obj) throws -> Listener { try get(listeners, "listener", args, "listener") }
    private func endpoint(_ args: Obj) throws -> AnyObject { try get(dialling, "dialling endpoint", args, "endpoint") }
    private func publisher(_ args: Obj) throws -> Publisher { try get(publishers, "publisher", args, "endpoint") }

    private func subscriber(_ args: Obj, _ key: String) throws -> Subscriber {
        guard let s = try get(dialling, "subscriber", args, key) as? Subscriber else {
            throw BadRequest("'\(args[key] ?? nil)' is not a subscriber")
        }
        return s
    }

    // MARK: Ops

    func run(_ op: String, _ args: Obj) async throws -> Obj {
        switch op {
        case "hello":
            // The binding exports no version of its own (the Kotlin agent's, run from classes,
            // has none either).
            return ["protocol": .count(protocolVersion), "language": "swift",
                    "agent": "kotlin-swift/swift/Sources/WeidaConformanceAgent", "weida": "unknown"]
        case "runtime": return try opRuntime(args)
        case "bind": return try await opBind(args)
        case "close":
            try listener(args).closeListener()
            return [:]
        case "shutdown":
            try runtime(args).shutdown()
            return [:]
        case "drain":
            guard let ms = try args.long("deadline_ms") else { throw BadRequest("drain needs deadline_ms") }
            let d = try await runtime(args).drain(Double(ms))
            return ["delivered": .count(d.delivered), "outstanding": .count(d.outstanding), "unsent": .count(d.unsent)]
        case "counters":
            return Dictionary(uniqueKeysWithValues: try runtime(args).counters().map { (snake($0.key), .count($0.value)) })
        case "replier": return try opReplier(args) { l, path, o in try l.replier(path, o) }
        case "respondent": return try opReplier(args) { l, path, o in try l.respondent(path, o) }
        case "acceptor": return try opAcceptor(args)
        case "peer": return try dialler(args) { rt, o in try rt.peer(o) }
        case "surveyor": return try dialler(args) { rt, o in try rt.surveyor(o) }
        case "requester": return try dialler(args) { rt, o in try rt.requester(o) }
        case "pusher": return try dialler(args) { rt, o in try rt.pusher(o) }
        case "dialing_publisher": return try dialler(args) { rt, o in try rt.publisher(o) }
        case "survey": return try await opSurvey(args)
        case "bus": return try opBus(args)
        case "bound_subscriber": return try opCollector(args)
        case "pair": return try opPair(args)
        case "bound_pusher":
            let name = try free(args.str("name"))
            let p = try listener(args).pusher(args.str("path"), endpointOptionsArg(args))
            try claim(name)
            dialling[name] = p
            return ["address": .string(p.address())]
        case "dialing_puller":
            let rt = try runtime(args)
            let name = try free(args.str("name"))
            let p = try rt.puller(endpointOptionsArg(args))
            try claim(name)
            dialling[name] = p
            events[name] = p.events()
            spawn("dialling puller \(name)") { await self.receiveEach(name) { try await p.recv() } }
            return [:]
        case "puller": return try opPuller(args)
        case "connect": return try await opConnect(args)
        case "event": return try await opEvent(args)
        case "disconnect":
            return ["removed": .bool(try disconnect(endpoint(args), args.str("address")))]
        case "peer_count":
            return ["peer_count": .count(try peerCount(endpoint(args)))]
        case "request":
            guard let r = try endpoint(args) as? Requester else { throw BadRequest("request needs a requester") }
            return messageJSON(try await r.requestWith(args.body(), meta: args.metadata()))
        case "send": return try await opSend(args)
        case "try_send":
            guard let p = try endpoint(args) as? Pusher else { throw BadRequest("try_send needs a pusher") }
            return ["sent": .bool(try p.trySend(args.body()))]
        case "send_many":
            guard let p = try endpoint(args) as? Pusher else { throw BadRequest("send_many needs a pusher") }
            guard case let .array(specs)? = args["bodies"] else { throw BadRequest("send_many needs a list of bodies") }
            let bodies = try specs.map { try makeBody($0) }
            try await p.sendMany(bodies)
            return ["sent": .count(UInt64(bodies.count))]
        case "recv":
            return messageJSON(try await get(pullers, "manual puller", args, "puller").recv())
        case "recv_many":
            // Swift's batched receive whose bodies share the batch's buffer (`recvBatch`):
            // batches until `count`, each at most what is left, none taken beyond it.
            let p = try get(pullers, "manual puller", args, "puller")
            guard let count = try args.long("count") else { throw BadRequest("recv_many needs a count") }
            let most = Swift.max(try args.long("max") ?? 64, 1)
            var messages: [JSON] = []
            var batches: UInt64 = 0
            while messages.count < count {
                let batch = try await p.recvBatch(Int(Swift.min(most, count - Int64(messages.count))))
                batches += 1
                messages += batch.map { .object(viewJSON($0)) }
            }
            return ["messages": .array(messages), "batches": .count(batches)]
        case "open": return try await opOpen(args)
        case "write": return try await opWrite(args)
        case "finish":
            let (_, t) = try takeTransfer(args)
            let delivery = try await t.finish()
            guard try args.bool("delivered", false) else { return [:] }
            // Delivery has no wrapper in Weida.swift: the generated call, never cancelled.
            try await delivery.delivered(cancel: nil)
            return ["delivered": true]
        case "cancel":
            try takeTransfer(args).1.cancelTransfer()
            return [:]
        case "reply_body":
            let name = try args.str("reply")
            guard let reply = replies.removeValue(forKey: name) else { throw BadRequest("no pending reply named '\(name)'") }
            return messageJSON(try await reply.body(cancel: nil))
        case "publisher":
            let l = try listener(args)
            let name = try free(args.str("name"))
            let p = try l.publisher(args.str("path"))
            try claim(name)
            publishers[name] = p
            return ["address": .string(p.address())]
        case "subscriber": return try opSubscriber(args)
        case "subscribe":
            let filter = try args.str("filter")
            if let c = collectors[try args.str("endpoint")] {
                try c.subscribe(filter)
            } else {
                try await subscriber(args, "endpoint").subscribe(filter)
            }
            return [:]
        case "unsubscribe":
            let filter = try args.str("filter")
            if let c = collectors[try args.str("endpoint")] { return ["removed": .bool(try c.unsubscribe(filter))] }
            return ["removed": .bool(try await subscriber(args, "endpoint").unsubscribe(filter))]
        case "receive":
            return copyJSON(try await get(receiving, "manual subscriber", args, "subscriber").recv())
        case "queued":
            return ["queued": .count(try subscriber(args, "subscriber").queued())]
        case "publish":
            if let d = dialling[try args.str("endpoint")] as? DialingPublisher {
                return ["queued": .count(try d.publish(args.str("topic"), args.body()))]
            }
            return ["queued": .count(try publisher(args).publish(args.str("topic"), args.body()))]
        case "dropped": return try opDropped(args)
        case "fanout":
            let p = try publisher(args)
            let name = try free(args.str("fanout"))
            let fan = try p.open(args.str("topic"))
            try claim(name)
            fanouts[name] = fan
            return ["copies": .count(fan.copies())]
        case "fanout_write": return try await opFanOutWrite(args)
        case "fanout_finish":
            return ["copies": .count(try takeFanOut(args).1.finish())]
        case "subscriber_count":
            return ["subscriber_count": .count(try publisher(args).subscriberCount())]
        case "service_queue": return try await opServiceQueue(args)
        case "service_counters":
            let c = try get(services, "service", args, "endpoint").counters()
            return Dictionary(uniqueKeysWithValues: ["handled", "retried", "deadLettered", "dropped", "failed"].map {
                (snake($0), JSON.count(c[$0]))
            })
        default:
            throw BadRequest("unknown op '\(op)'")
        }
    }

    private func opRuntime(_ args: Obj) throws -> Obj {
        let name = try free(args.str("name"))
        var identity: Identity?
        if let v = args["identity"] {
            guard let dir = v.object?["dir"]?.string else {
                throw BadRequest("identity is {\"dir\": path} or absent (ephemeral)")
            }
            identity = try Identity.loadOrCreate(dir: dir)
        }
        let trust = try args["trust"].map { try trustArg($0) }
        var options: Options = ["presentIdentity": .flag(value: try args.bool("present_identity", true))]
        if let ms = try args.long("send_timeout_ms") { options["sendTimeoutMs"] = .whole(value: ms) }
        let ordering = args["ordering"] ?? "none"
        guard let o = ordering.string, ["none", "detect", "reassemble"].contains(o) else {
            throw BadRequest("unknown ordering \(ordering)")
        }
        options["ordering"] = .name(value: o)
        if let n = try args.long("lane_max_message") { options["laneMaxMessage"] = .whole(value: n) }
        let rt = try Weida.runtime(
            identity: identity, trust: trust, limits: limitsArg(args["limits"]),
            reconnect: reconnectArg(args["reconnect"]), options: options)
        try claim(name)
        runtimes[name] = rt
        return ["fingerprint": .string(rt.fingerprint())]
    }

    private func opBind(_ args: Obj) async throws -> Obj {
        let rt = try runtime(args)
        let name = try free(args.str("name"))
        let address = try args.str("address")
        let l = try await rt.bind(address, requireClient: args["require_client"].map { try trustArg($0) })
        try claim(name)
        listeners[name] = l
        // A listener's connections are events too: `event` reads them by its name.
        events[name] = l.events()
        return ["address": .string(l.address())]
    }

    private func opSend(_ args: Obj) async throws -> Obj {
        let body = try args.body()
        let meta = try args.metadata()
        switch try endpoint(args) {
        case let p as Bus: return ["queued": .count(try await p.send(body, meta: meta))]
        case let p as Pusher: try await p.send(body, meta: meta)
        case let p as Pair: try await p.send(body, meta: meta)
        case let p as BoundPusher: try await p.send(body, meta: meta)
        default: throw BadRequest("send needs a pusher, a bus member or a pair")
        }
        return [:]
    }

    /// A pusher opens a one-way stream, a requester a request with its `reply`, a peer either
    /// (a `reply` makes it an exchange). Pusher and Requester `open` have no wrapper in
    /// Weida.swift: the generated calls, never cancelled.
    private func opOpen(_ args: Obj) async throws -> Obj {
        let meta = try args.metadata()
        let ep = try endpoint(args)
        let tname = try free(args.str("transfer"))
        let exchange: OpenedRequest
        switch ep {
        case let p as Pusher:
            let t = try await p.open(meta: meta, cancel: nil)
            try claim(tname)
            transfers[tname] = t
            return [:]
        case let p as RawPeer where args["reply"] == nil:
            let t = try await p.open(meta)
            try claim(tname)
            transfers[tname] = t
            return [:]
        case let r as Requester:
            _ = try free(args.str("reply"))
            exchange = try await r.open(meta: meta, cancel: nil)
        case let p as RawPeer:
            _ = try free(args.str("reply"))
            exchange = try await p.exchange(meta)
        default:
            throw BadRequest("open needs a pusher, a requester or a peer")
        }
        let rname = try args.str("reply")
        try claim(tname)
        try claim(rname)
        transfers[tname] = exchange.transfer
        replies[rname] = exchange.reply
        return [:]
    }

    private func opWrite(_ args: Obj) async throws -> Obj {
        let body = try args.body()
        let chunk = Int(max(try args.long("chunk") ?? 65536, 1))
        let (name, t) = try takeTransfer(args)
        // Kept after a failed write too, so a scenario can still cancel it.
        defer { transfers[name] = t }
        var at = 0
        while at < body.count {
            try await t.write(body.subdata(in: at..<min(at + chunk, body.count)))
            at += chunk
        }
        return ["written": .count(body.count)]
    }

    /// Writes `body` to the fan-out `chunk` bytes at a time, with `write` (which may wait) or
    /// `writeNow`; the copies attached after the last write.
    private func opFanOutWrite(_ args: Obj) async throws -> Obj {
        let body = try args.body()
        let chunk = Int(max(try args.long("chunk") ?? 65536, 1))
        let now = try args.bool("now", false)
        let (name, fan) = try takeFanOut(args)
        defer { fanouts[name] = fan }
        var at = 0
        while at < body.count {
            let part = body.subdata(in: at..<min(at + chunk, body.count))
            if now { try fan.writeNow(part) } else { try await fan.write(part) }
            at += chunk
        }
        return ["copies": .count(fan.copies())]
    }

    private func takeFanOut(_ args: Obj) throws -> (String, FanOut) {
        let name = try args.str("fanout")
        guard let f = fanouts.removeValue(forKey: name) else { throw BadRequest("no fan-out named '\(name)'") }
        return (name, f)
    }

    private func takeTransfer(_ args: Obj) throws -> (String, OutgoingTransfer) {
        let name = try args.str("transfer")
        guard let t = transfers.removeValue(forKey: name) else { throw BadRequest("no transfer named '\(name)'") }
        return (name, t)
    }

    /// Asks, then reads every answer until the run ends: how many were asked, answered, the
    /// codes of those that failed (sorted), and the late count.
    private func opSurvey(_ args: Obj) async throws -> Obj {
        guard let s = try endpoint(args) as? Surveyor else { throw BadRequest("survey needs a surveyor") }
        let run = try await s.survey(args.body(), deadlineMs: args.number("deadline_ms"), meta: args.metadata())
        var answered = 0
        var errors: [String] = []
        for await a in run.answers() {
            switch a {
            case .success: answered += 1
            case let .failure(e): errors.append(e.code)
            }
        }
        return ["respondents": .count(run.respondents()), "answered": .count(answered),
                "errors": .array(errors.sorted().map { .string($0) }), "late": .count(run.late())]
    }

    /// A pair: bound with `listener` and `path`, else dialling through `runtime`; received as a
    /// `recv` puller is, from its making on.
    private func opPair(_ args: Obj) throws -> Obj {
        let name = try free(args.str("name"))
        let p = args["listener"] != nil
            ? try listener(args).pair(args.str("path"), endpointOptionsArg(args))
            : try runtime(args).pair(endpointOptionsArg(args))
        try claim(name)
        dialling[name] = p
        let address = p.address()
        if address == nil { events[name] = try p.events() }
        spawn("pair \(name)") { await self.receiveEach(name) { try await p.recv() } }
        return address.map { ["address": .string($0)] } ?? [:]
    }

    /// A collector: received as a subscriber's copies are, from its binding on.
    private func opCollector(_ args: Obj) throws -> Obj {
        let l = try listener(args)
        let name = try free(args.str("name"))
        let c = try l.subscriber(args.str("path"), endpointOptionsArg(args))
        try claim(name)
        collectors[name] = c
        spawn("collector \(name)") { await self.serveCollector(c, name) }
        return ["address": .string(c.address())]
    }

    /// A bus member: dialling (`connect`, `send`) and bound, received as a `recv` puller is.
    private func opBus(_ args: Obj) throws -> Obj {
        let rt = try runtime(args)
        let l = try listener(args)
        let name = try free(args.str("name"))
        let bus = try rt.bus(l, args.str("path"), endpointOptionsArg(args))
        try claim(name)
        dialling[name] = bus
        events[name] = bus.events()
        spawn("bus \(name)") { await self.receiveEach(name) { try await bus.recv() } }
        return ["address": .string(bus.address())]
    }

    private func mode(_ args: Obj, _ kind: String, _ modes: [String]) throws -> String {
        let m = try args.str("mode")
        guard modes.contains(m) else { throw BadRequest("unknown \(kind) mode '\(m)'") }
        return m
    }

    private static let replierModes = ["echo", "stream_echo", "hold", "reject", "drop"]

    private func opReplier(_ args: Obj, _ make: (Listener, String, EndpointOptions) throws -> Replier) throws -> Obj {
        let l = try listener(args)
        let name = try free(args.str("name"))
        let mode = try mode(args, "replier", Agent.replierModes)
        let reason = args["reason"]?.string ?? "rejected"
        let replier = try make(l, args.str("path"), endpointOptionsArg(args))
        try claim(name)
        spawn("replier \(name)") { await self.serveReplier(replier, name, mode, reason) }
        return ["address": .string(replier.address())]
    }

    /// An acceptor: each exchange answered in `mode` as a replier's, each one-way stream read as
    /// a `stream` puller's.
    private func opAcceptor(_ args: Obj) throws -> Obj {
        let l = try listener(args)
        let name = try free(args.str("name"))
        let mode = try mode(args, "acceptor", Agent.replierModes)
        let reason = args["reason"]?.string ?? "rejected"
        let acceptor = try l.acceptor(args.str("path"), endpointOptionsArg(args))
        try claim(name)
        spawn("acceptor \(name)") { await self.serveAcceptor(acceptor, name, mode, reason) }
        return ["address": .string(acceptor.address())]
    }

    private func opPuller(_ args: Obj) throws -> Obj {
        let l = try listener(args)
        let name = try free(args.str("name"))
        let mode = try mode(args, "puller", ["recv", "stream", "manual"])
        let puller = try l.puller(args.str("path"), endpointOptionsArg(args))
        try claim(name)
        switch mode {
        case "manual": pullers[name] = puller
        case "stream": spawn("puller \(name)") { await self.servePullerStreams(puller, name) }
        default: spawn("puller \(name)") { await self.receiveEach(name) { try await puller.recv() } }
        }
        return ["address": .string(puller.address())]
    }

    private func dialler(_ args: Obj, _ make: (Runtime, EndpointOptions) throws -> AnyObject) throws -> Obj {
        let rt = try runtime(args)
        let name = try free(args.str("name"))
        let ep = try make(rt, endpointOptionsArg(args))
        let ev = try eventsOf(ep)
        try claim(name)
        dialling[name] = ep
        events[name] = ev
        return [:]
    }

    private func opConnect(_ args: Obj) async throws -> Obj {
        let ep = try endpoint(args)
        let wait: Bool
        switch args["wait"] {
        case nil: wait = true
        case let .bool(b)?: wait = b
        default: throw BadRequest("wait is true or false")
        }
        let address = try args.str("address")
        switch ep {
        case let e as Requester: try await e.connect(address, wait: wait)
        case let e as Surveyor: try await e.connect(address, wait: wait)
        case let e as Bus: try await e.connect(address, wait: wait)
        case let e as DialingPublisher: try await e.connect(address, wait: wait)
        case let e as Pair: try await e.connect(address, wait: wait)
        case let e as DialingPuller: try await e.connect(address, wait: wait)
        case let e as Pusher: try await e.connect(address, wait: wait)
        case let e as RawPeer: try await e.connect(address, wait: wait)
        case let e as Subscriber:
            try await e.connect(address, wait: wait)
            await connected[ObjectIdentifier(e)]?.set()
        default: throw BadRequest("a bound pusher does not dial")
        }
        return ["peer_count": .count(try peerCount(ep))]
    }

    private func opEvent(_ args: Obj) async throws -> Obj {
        let name = try args.str("endpoint")
        guard let ev = events[name] else { throw BadRequest("no dialling endpoint or listener named '\(name)'") }
        let kind = try args.str("kind")
        let between = (args["between"]?.array ?? []).compactMap { $0.string }
        while true {
            guard let e = await ev.next() else { throw BadRequest("the endpoint is gone") }
            var out: Obj = ["kind": .string(e.kind)]
            if e.kind == "missed" { out["missed"] = .count(e.missed) } else { out["url"] = .string(e.url) }
            if e.kind == "connected" { out["fingerprint"] = .text(e.fingerprint) }
            if e.kind == "lost" || e.kind == "gave_up" { out["cause"] = .text(e.cause) }
            if e.kind == "retrying" {
                out["attempt"] = .count(e.attempt)
                out["delay_ms"] = .int(Int64((e.delayMs ?? 0).rounded()))
            }
            if e.kind == kind { return out }
            if !between.contains(e.kind) { throw BadRequest("unexpected event \(out) before \(kind)") }
        }
    }

    private func opSubscriber(_ args: Obj) throws -> Obj {
        let rt = try runtime(args)
        let name = try free(args.str("name"))
        let mode = try mode(args, "subscriber", ["recv", "manual"])
        let sub = try rt.subscriber()
        try claim(name)
        dialling[name] = sub
        events[name] = sub.events()
        if mode == "manual" {
            receiving[name] = sub
        } else {
            let flag = Flag()
            connected[ObjectIdentifier(sub)] = flag
            spawn("subscriber \(name)") { await self.serveSubscriber(sub, flag, name) }
        }
        return [:]
    }

    /// A queue registration whose handler emits `handled` (body, attempt, path) for each job and
    /// retries the bodies `retry` lists (their text), else is done.
    private func opServiceQueue(_ args: Obj) async throws -> Obj {
        let name = try free(args.str("name"))
        let again = Set((args["retry"]?.array ?? []).compactMap { $0.string })
        var deadLetter: String?
        if let d = args["dead_letter"], d != .null {
            guard let s = d.string else { throw BadRequest("dead_letter is a string") }
            deadLetter = s
        }
        let reg = try await Service(runtime: runtime(args)).queue(
            listener(args), args.str("path"),
            concurrency: try args.long("concurrency").map { UInt32($0) },
            maxAttempts: try args.long("max_attempts").map { UInt32($0) },
            deadLetter: deadLetter)
        try claim(name)
        services[name] = reg
        let out = self.out
        spawn("service \(name)") {
            try await reg.serve { job in
                let m = job.message()
                out.event("handled", name, messageJSON(m).merging(["attempt": .count(job.attempt())]))
                return again.contains(String(decoding: m.body, as: UTF8.self)) ? .retry : .done
            }
        }
        return ["address": .text(reg.address())]
    }

    private func opDropped(_ args: Obj) throws -> Obj {
        let dp = dialling[try args.str("endpoint")] as? DialingPublisher
        let topic = args["topic"] ?? .null
        if topic != .null && dp != nil { throw BadRequest("a dialling publisher counts no drops per topic") }
        if topic != .null && topic.string == nil { throw BadRequest("topic is a string") }
        let d: Dropped
        if let dp = dp {
            d = dp.dropped()
        } else if let t = topic.string {
            d = try publisher(args).droppedOn(t)
        } else {
            d = try publisher(args).dropped()
        }
        return ["queue_full": .count(d.queueFull), "byte_budget": .count(d.byteBudget),
                "reverse_pool_empty": .count(d.reversePoolEmpty), "dead_subscriber": .count(d.deadSubscriber),
                "refused": .count(d.refused), "total": .count(d.total)]
    }
}

private func eventsOf(_ ep: AnyObject) throws -> PeerEvents {
    switch ep {
    case let e as Requester: return try e.events()
    case let e as Surveyor: return try e.events()
    case let e as Pusher: return try e.events()
    case let e as RawPeer: return try e.events()
    case let e as Subscriber: return e.events()
    case let e as DialingPublisher: return e.events()
    default: throw BadRequest("not a dialling endpoint")
    }
}

private func peerCount(_ ep: AnyObject) throws -> UInt32 {
    switch ep {
    case let e as Requester: return try e.peerCount()
    case let e as Surveyor: return try e.peerCount()
    case let e as Bus: return e.peerCount()
    case let e as DialingPublisher: return e.peerCount()
    case let e as Pair: return e.peerCount()
    case let e as DialingPuller: return e.peerCount()
    case let e as BoundPusher: return e.peerCount()
    case let e as Pusher: return try e.peerCount()
    case let e as RawPeer: return try e.peerCount()
    case let e as Subscriber: return e.peerCount()
    default: throw BadRequest("not a dialling endpoint")
    }
}

private func disconnect(_ ep: AnyObject, _ address: String) throws -> Bool {
    switch ep {
    case let e as Requester: return try e.disconnect(address)
    case let e as Surveyor: return try e.disconnect(address)
    case let e as Bus: return try e.disconnect(address)
    case let e as DialingPublisher: return try e.disconnect(address)
    case let e as Pair: return try e.disconnect(address)
    case let e as DialingPuller: return try e.disconnect(address)
    case let e as Pusher: return try e.disconnect(address)
    case let e as RawPeer: return try e.disconnect(address)
    case let e as Subscriber: return try e.disconnect(address)
    default: throw BadRequest("not a dialling endpoint")
    }
}
