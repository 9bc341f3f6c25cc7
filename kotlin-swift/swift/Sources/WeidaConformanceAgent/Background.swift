// The background behaviours of bound endpoints (conformance/README.md, "Background behaviours
// and events"): each endpoint serves in a task of its own, each exchange in another, and says
// what happened as events.
import Foundation
import Weida

/// A flag a task can wait for: set by a subscriber's connect, cleared once it has no peer.
actor Flag {
    private var isSet = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func set() {
        isSet = true
        for w in waiting { w.resume() }
        waiting = []
    }

    func clear() { isSet = false }

    func wait() async {
        if isSet { return }
        await withCheckedContinuation { waiting.append($0) }
    }
}

extension Agent {
    func serveReplier(_ replier: Replier, _ handle: String, _ mode: String, _ reason: String) async {
        while true {
            let ex: Exchange
            do {
                ex = try await replier.accept()
            } catch {
                closed(handle, error)
                return
            }
            out.event("accepted", handle, ["path": .string(ex.path()), "metadata": metadataJSON(ex.metadata()), "peer": peerJSON(ex.peer())])
            spawn("an exchange of \(handle)") { await self.answer(ex, handle, mode, reason) }
        }
    }

    /// An acceptor: each exchange answered in `mode` as a replier's, each one-way stream read as
    /// a `stream` puller's; `accepted` for both.
    func serveAcceptor(_ acceptor: Acceptor, _ handle: String, _ mode: String, _ reason: String) async {
        while true {
            let incoming: Incoming
            do {
                incoming = try await acceptor.accept()
            } catch {
                closed(handle, error)
                return
            }
            switch incoming {
            case let .exchange(ex):
                out.event("accepted", handle, ["path": .string(ex.path()), "metadata": metadataJSON(ex.metadata()), "peer": peerJSON(ex.peer())])
                spawn("an exchange of \(handle)") { await self.answer(ex, handle, mode, reason) }
            case let .stream(t):
                out.event("accepted", handle, transferJSON(t))
                spawn("a transfer to \(handle)") { await self.readTransfer(t, handle) }
            }
        }
    }

    /// Answers `ex` in `mode`. The exchange is freed when the last reference goes, at the end of
    /// this task, so one left unanswered (its body failed) does not keep its requester waiting;
    /// only a `hold` keeps it.
    private func answer(_ ex: Exchange, _ handle: String, _ mode: String, _ reason: String) async {
        if mode == "reject" {
            do {
                try await ex.reject(reason)
                out.event("rejected", handle)
            } catch {
                failed("reply_failed", handle, error)
            }
            return
        }
        if mode == "stream_echo" {
            await streamEcho(ex, handle)
            return
        }
        let meta = ex.metadata()
        let body: Data
        do {
            body = try await ex.takeBody()
        } catch {
            failed("request_failed", handle, error)
            return
        }
        out.event("request", handle, ["body": summary(body), "metadata": metadataJSON(meta)])
        switch mode {
        case "echo":
            do {
                try await ex.reply(body, meta: Dictionary(meta.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }))
                out.event("replied", handle)
            } catch {
                failed("reply_failed", handle, error)
            }
        case "hold":
            held.append(ex)  // kept, never answered
        default:  // drop
            ex.cancel()  // abandoned unanswered, now: the requester sees Canceled
            out.event("dropped", handle)
        }
    }

    /// Reads the request chunk by chunk, then writes the same chunks back through `openReply`
    /// (which takes the whole exchange, so the request is read to its end first).
    private func streamEcho(_ ex: Exchange, _ handle: String) async {
        let meta = ex.metadata()
        var tally = Tally()
        var chunks: [Data] = []
        do {
            while let c = try await ex.readChunk() {
                if chunks.isEmpty { out.event("receiving", handle, ["size": .count(c.count)]) }
                tally.add(c)
                chunks.append(c)
            }
        } catch {
            failed("request_failed", handle, error)
            return
        }
        out.event("request", handle, ["body": tally.summary(), "metadata": metadataJSON(meta)])
        do {
            let reply = try await ex.openReply(Dictionary(meta.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }))
            for c in chunks { try await reply.write(c) }
            try await reply.finish()
        } catch {
            failed("reply_failed", handle, error)
            return
        }
        out.event("replied", handle)
    }

    /// A `stream` puller: each message accepted as a stream (`accepted`), then read in chunks
    /// in a task of its own (`receiving` at the first chunk, `received` at the end), until
    /// `closed`.
    func servePullerStreams(_ puller: Puller, _ handle: String) async {
        while true {
            let t: IncomingTransfer
            do {
                t = try await puller.accept()
            } catch {
                closed(handle, error)
                return
            }
            out.event("accepted", handle, transferJSON(t))
            spawn("a transfer to \(handle)") { await self.readTransfer(t, handle) }
        }
    }

    private func readTransfer(_ t: IncomingTransfer, _ handle: String) async {
        var tally = Tally()
        var first = true
        do {
            while let c = try await t.readChunk() {
                if first {
                    first = false
                    out.event("receiving", handle, ["size": .count(c.count)])
                }
                tally.add(c)
            }
        } catch {
            failed("receive_failed", handle, error)
            return
        }
        out.event("received", handle, transferJSON(t).merging(["body": tally.summary()]))
    }

    /// A collector: each message kept a `received` event with its topic, until `closed`.
    func serveCollector(_ c: BoundSubscriber, _ handle: String) async {
        await receiveEach(handle, as: copyJSON) { try await c.recv() }
    }

    /// `recv` in a loop: `received` per message (with its sequence and gap under PerProducer
    /// ordering, PATTERNS §1.7, else null), `receive_failed` for one that failed, `closed` at the
    /// end. Any endpoint's receiving, as a `recv` puller's (a pair's, a bus member's, a dialling
    /// puller's; a collector's with its topic, `as: copyJSON`).
    func receiveEach(
        _ handle: String, as json: (Message) -> Obj = sequencedJSON, _ recv: () async throws -> Message
    ) async {
        while true {
            do {
                out.event("received", handle, json(try await recv()))
            } catch let e as WeidaError {
                if case .Closed = e {
                    closed(handle, e)
                    return
                }
                failed("receive_failed", handle, e)
            } catch {
                closed(handle, error)
                return
            }
        }
    }

    /// A subscriber's `recv` throws at once before any connect (NOT_CONNECTED) and after every
    /// connection ended (CONNECTION_LOST): such an error is reported once, then the loop waits
    /// for the next successful connect instead of spinning.
    func serveSubscriber(_ sub: Subscriber, _ connected: Flag, _ handle: String) async {
        while true {
            await connected.wait()
            do {
                out.event("received", handle, copyJSON(try await sub.recv()))
            } catch let e as WeidaError {
                switch e {
                case .Closed:
                    closed(handle, e)
                    return
                case .NotConnected, .ConnectionLost:
                    if sub.peerCount() == 0 { await connected.clear() }
                default:
                    break
                }
                failed("receive_failed", handle, e)
            } catch {
                closed(handle, error)
                return
            }
        }
    }

    /// An endpoint's loop ended: `closed` with the error that ended it.
    private func closed(_ handle: String, _ error: Error) {
        if let e = error as? WeidaError {
            out.event("closed", handle, ["error": .object(errorJSON(e))])
        } else {
            log("\(handle): its loop ended with \(error)")
        }
    }

    /// The event `name` with the weida error; any other error is logged.
    private func failed(_ name: String, _ handle: String, _ error: Error) {
        guard let e = error as? WeidaError else {
            log("\(handle): \(name) with \(error)")
            return
        }
        out.event(name, handle, ["error": .object(errorJSON(e))])
    }
}

private func transferJSON(_ t: IncomingTransfer) -> Obj {
    ["path": .string(t.path()), "metadata": metadataJSON(t.metadata()), "peer": peerJSON(t.peer())]
}
