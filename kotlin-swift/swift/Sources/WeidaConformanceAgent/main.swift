// The Swift agent of the conformance suite (conformance/README.md, "The agent protocol"): reads
// one JSON request per line on standard input, carries it out with the Swift binding's public
// API and writes one JSON response per line on standard output, with the events of bound
// endpoints in between. Each request runs in a task of its own, so a request awaiting a reply
// never blocks the next. Started by kotlin-swift/swift/agent.sh.
import Foundation
import Weida

/// Responses and events, one line each; a lock keeps lines whole whichever task writes.
final class Out: @unchecked Sendable {
    private let lock = NSLock()
    private let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }()

    func line(_ obj: Obj) {
        lock.lock()
        defer { lock.unlock() }
        do {
            var data = try encoder.encode(JSON.object(obj))
            data.append(0x0A)
            FileHandle.standardOutput.write(data)
        } catch {
            log("a line could not be encoded: \(error)")
        }
    }

    func event(_ name: String, _ handle: String, _ fields: Obj = [:]) {
        line(fields.merging(["event": .string(name), "handle": .string(handle)]))
    }
}

func log(_ s: String) {
    FileHandle.standardError.write(Data("agent: \(s)\n".utf8))
}

private func failure(_ code: String, _ message: String) -> Obj {
    ["code": .string(code), "message": .string(message)]
}

private func answer(_ agent: Agent, _ request: Obj) async {
    let id = request["id"] ?? .null
    let failed: Obj
    do {
        guard let op = request["op"]?.string else { throw BadRequest("a request has a string op") }
        let args = request["args"] ?? [:]
        guard let a = args.object else { throw BadRequest("args is an object") }
        let result = try await agent.run(op, a)
        agent.out.line(["id": id, "ok": true, "result": .object(result)])
        return
    } catch let e as WeidaError {
        failed = errorJSON(e)
    } catch let e as BadRequest {
        failed = failure("AGENT_BAD_REQUEST", e.message)
    } catch is CancellationError {
        // The binding cancelled the call instead of raising a weida error (the agent never
        // cancels a request before it exits).
        log("\(request["op"] ?? nil): the binding's call was cancelled")
        failed = failure("AGENT_BAD_REQUEST", "the binding's call was cancelled")
    } catch {
        // Not a weida error and not a malformed request: a bug, of this agent or the binding.
        // Answered (so the cell fails at this step, not at a timeout) and logged.
        log("\(request["op"] ?? nil) threw \(error)")
        failed = failure("AGENT_BAD_REQUEST", "unexpected \(error)")
    }
    agent.out.line(["id": id, "ok": false, "error": .object(failed)])
}

let out = Out()
let agent = Agent(out: out)
let (lines, feed) = AsyncStream.makeStream(of: String.self)
let finished = DispatchSemaphore(value: 0)
// Detached: the requests run on the agent actor, never on the main thread, which blocks reading
// standard input below.
Task.detached {
    let decoder = JSONDecoder()
    for await line in lines {
        guard let request = (try? decoder.decode(JSON.self, from: Data(line.utf8)))?.object else {
            out.line(["id": nil, "ok": false, "error": .object(failure("AGENT_BAD_REQUEST", "not a JSON object: \(line.prefix(200))"))])
            continue
        }
        // Started in the order the lines came, each in a task of its own so a request that
        // waits never blocks the next. Swift does not promise that the actor runs them in that
        // order, and the pool runs tasks on several threads; the protocol does not need it (a
        // scenario sends a request that depends on another only after its response).
        Task { await answer(agent, request) }
    }
    await agent.shutdownAll()
    finished.signal()
}
while let line = readLine(strippingNewline: true) {  // nil: standard input closed, the runner is done
    if !line.allSatisfy(\.isWhitespace) { feed.yield(line) }
}
feed.finish()
finished.wait()
// Every line written so far is out (each is written whole at once); the background tasks may
// still be awaiting the closed runtimes, which nobody waits for now: leave at once, status 0.
exit(0)
