// kotlin-swift/README.md's Swift job service, as it stands there (QuickStartTests checks they are the same).

import Foundation
import Weida

/// A job that cannot be parsed: thrown, it is a failure (logged, then a retry).
struct Unparsable: Error {}

func jobsService() async throws {
    let rt = try runtime()
    defer { rt.shutdown() }
    let listener = try await rt.bind("weida://127.0.0.1:0")
    let dead = try listener.puller("/dead")  // where a job goes after its fifth attempt
    let jobs = try await Service(runtime: rt).queue(
        listener, "/jobs", concurrency: 4, maxAttempts: 5, deadLetter: dead.address())
    let (report, line) = AsyncStream.makeStream(of: String.self)
    let serving = Task {
        try await jobs.serve { job in
            let body = String(decoding: job.message().body, as: UTF8.self)
            if body == "poison" { throw Unparsable() }
            if body == "flaky" && job.attempt() < 3 { return .retryAfter(0.05 * Double(job.attempt())) }
            line.yield("done \(body) attempt \(job.attempt())")
            return .done
        }
    }
    let letters = Task {
        for try await m in dead.messages() {
            let attempts = String(decoding: m.meta("weida-attempt") ?? Data(), as: UTF8.self)
            line.yield("dead \(String(decoding: m.body, as: UTF8.self)) after \(attempts)")
        }
    }
    let pusher = try rt.pusher()
    try await pusher.connect(jobs.address()!)
    for body in ["ok", "flaky", "poison"] { try await pusher.send(Data(body.utf8)) }
    for await l in report.prefix(3) { print(l) }  // two done, one dead letter
    print("stopped", try await jobs.stop(deadline: 10))  // the handlers in flight finish first
    try await serving.value
    letters.cancel()
}
