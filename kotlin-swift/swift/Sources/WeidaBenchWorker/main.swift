// The worker's process: the command line, a bound on its life, the case in a detached task, the
// result line and the exit status (0 only with figures, 1 for a failure, 2 for a bad command
// line), as the Kotlin worker's main.
//
// Every task runs on Swift's cooperative pool. With both ends in this process (`--role both`)
// bench-worker.sh holds it to one thread at a time (LIBDISPATCH_COOPERATIVE_POOL_STRICT=1; its
// comment says why), so the sending and the receiving task take turns, as the Kotlin worker's
// coroutines on runBlocking's thread and the Python and Node workers' on their event loop; as
// one end of two, the process runs one task on the pool as it comes. The binding's completions
// arrive from the core's threads. (A profile saw the held pool hand the turn between two
// threads, never running both at once: docs/PERFORMANCE.md, "Swift (2026-12-03)".)
import Foundation

let args: Args
do {
    args = try parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    let message = (error as? Usage)?.message ?? "\(error)"
    FileHandle.standardError.write(Data("""
        benchmark suite worker: \(systemName): \(message)
        usage: --pattern push_pull|req_rep --transport quic|unix|inproc [--size N] [--secs S] \
        [--warmup S] [--variant await|batch] [--role both|bind|dial] [--address ADDR]

        """.utf8))
    exit(2)
}
report.markers = args.role != "both"

// The bound on this process: both ends here, the stall limit; one end of two, its lifetime (the
// side that runs until terminated must not outlive a killed run.py). A thread of its own, so a
// call stuck in native code or a busy task pool cannot hold it off.
let limit = args.role == "both" ? args.stallLimit : args.lifetime
Thread.detachNewThread {
    Thread.sleep(forTimeInterval: limit)
    report.result(args, [("error", .string("stalled: no progress within the time limit"))])
    _exit(1)
}

// Detached, so the case runs on the task pool and not on the main thread, which waits here for
// its outcome.
let outcome = Outcome()
Task.detached {
    do {
        outcome.set(0, try await run(args))
    } catch let e as Usage {
        outcome.set(1, [("error", .string(e.message))])
    } catch {
        FileHandle.standardError.write(Data("benchmark suite worker: \(systemName): \(error)\n".utf8))
        outcome.set(1, [("error", .string(describe(error)))])
    }
}
let (status, figures) = outcome.wait()
report.result(args, figures)
exit(status)
