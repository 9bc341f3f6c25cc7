// Services: handlers on endpoints (docs/SERVICES.md), over the generated `Service`,
// `Registration` and `ServiceJob` (kotlin-swift/uniffi/src/service.rs; Python's `Job`, renamed in
// uniffi.toml because kotlinx.coroutines has a `Job`). What each outcome does is the
// core's (weida-ffi's service module, which names them); here a handler's `Outcome` is
// converted to its name, and what it threw is passed back as a failure.
@file:JvmName("Services")

package weida

import java.util.logging.Logger
import kotlin.coroutines.cancellation.CancellationException
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlin.time.DurationUnit
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import weida.uniffi.ServiceJob
import weida.uniffi.Listener
import weida.uniffi.Registration
import weida.uniffi.Service
import weida.uniffi.ServiceSettings
import weida.uniffi.WeidaException

/** What a handler says happened to its message (docs/SERVICES.md §2). */
sealed class Outcome {
    /** Processed (on a Rep path: an empty reply). */
    data object Done : Outcome()

    /** Processed; on a Rep path, `body` is the reply. */
    class Reply(val body: ByteArray) : Outcome()

    /** Processed; nothing is completed on a brokerless hop (`Unsupported` is logged once). */
    data object Ack : Outcome()

    /** With no `maxAttempts` or `deadLetter`: gone (at most once); with one, a copy at once. */
    data object Retry : Outcome()

    /** A copy after `delay`, waited in this process: a crash before then loses it. */
    data class RetryAfter(val delay: Duration) : Outcome()

    /** Gone, counted dropped. */
    data object Drop : Outcome()
}

/** A handler: the outcome of one job; a thrown exception is a failure (counted, then a retry). */
typealias Handler = suspend (ServiceJob) -> Outcome

private fun settings(concurrency: Int?, maxAttempts: Int?, deadLetter: String?, retryTo: String?) =
    ServiceSettings(concurrency?.toUInt(), maxAttempts?.toUInt(), deadLetter, retryTo)

/** A queue: binds a Pull path on `listener`; copies go to it. */
suspend fun Service.queue(
    listener: Listener,
    path: String,
    concurrency: Int? = null,
    maxAttempts: Int? = null,
    deadLetter: String? = null,
): Registration = queue(listener, path, settings(concurrency, maxAttempts, deadLetter, null))

/** A fan-out: binds a Sub path holding `filters`; copies come back to it alone. */
suspend fun Service.fanOut(
    listener: Listener,
    path: String,
    filters: List<String>,
    concurrency: Int? = null,
    maxAttempts: Int? = null,
    deadLetter: String? = null,
): Registration = fanOut(listener, path, filters, settings(concurrency, maxAttempts, deadLetter, null))

/** A puller dialling the bound pusher at `address`; copies go to `retryTo`. */
suspend fun Service.pulling(
    address: String,
    retryTo: String?,
    concurrency: Int? = null,
    maxAttempts: Int? = null,
    deadLetter: String? = null,
): Registration = pulling(address, settings(concurrency, maxAttempts, deadLetter, retryTo))

/** A subscriber dialling the bound publisher at `address`, holding `filters`; copies go to
 * `retryTo`, their topic in `weida-topic`. */
suspend fun Service.subscribing(
    address: String,
    filters: List<String>,
    retryTo: String?,
    concurrency: Int? = null,
    maxAttempts: Int? = null,
    deadLetter: String? = null,
): Registration = subscribing(address, filters, settings(concurrency, maxAttempts, deadLetter, retryTo))

/** A Rep path: a `Reply`'s body is the reply; copies go to `retryTo`. */
suspend fun Service.replying(
    listener: Listener,
    path: String,
    retryTo: String?,
    concurrency: Int? = null,
    maxAttempts: Int? = null,
    deadLetter: String? = null,
): Registration = replying(listener, path, settings(concurrency, maxAttempts, deadLetter, retryTo))

/** Gives `outcome` (the pull API; `serve` does this for a handler); `Closed` if one was given. */
fun ServiceJob.finish(outcome: Outcome) = when (outcome) {
    Outcome.Done -> finish("done", null, null)
    is Outcome.Reply -> finish("reply", null, outcome.body)
    Outcome.Ack -> finish("ack", null, null)
    Outcome.Retry -> finish("retry", null, null)
    is Outcome.RetryAfter -> finish("retry_after", outcome.delay.toDouble(DurationUnit.MILLISECONDS), null)
    Outcome.Drop -> finish("drop", null, null)
}

/** The handler failed with `e`: logged with its class and message, counted, then a retry. */
fun ServiceJob.fail(e: Throwable) = fail("${e::class.simpleName}: ${e.message}")

/** Takes nothing more, waits up to `deadline` for the handlers in flight and copies due, then
 * closes: `unfinished`, `copiesDropped`. */
suspend fun Registration.stop(deadline: Duration = 30.seconds): Map<String, ULong> =
    stop(deadline.toDouble(DurationUnit.MILLISECONDS))

/** Where the runtime's warnings go by default: the `weida.service` logger. */
val serviceLogger: Logger = Logger.getLogger("weida.service")

/**
 * Runs `handler` on every job until the registration stops, up to its `concurrency` at once
 * (`next` waits for a free slot), each job finished once with what the handler returned, or
 * failed with what it threw; after each, the warnings go to `onWarning`. Returns once the
 * registration is stopping and the handlers it started are done. Cancelled, it cancels its
 * handlers, each then a failure (retried as declared); call `stop` to end it instead.
 */
suspend fun Registration.serve(
    onWarning: (String) -> Unit = { serviceLogger.warning(it) },
    handler: Handler,
) {
    val warn = {
        for (w in takeWarnings()) onWarning("${address() ?: retryAddress()}: $w")
    }
    try {
        coroutineScope {
            while (true) {
                val job = try {
                    next(null)
                } catch (e: WeidaException.Closed) {
                    break
                } catch (e: WeidaException) {
                    continue // one message the endpoint could not take whole; the next goes on
                }
                launch { handle(job, handler, warn) }
            }
        }
    } finally {
        warn()
    }
}

private suspend fun handle(job: ServiceJob, handler: Handler, warn: () -> Unit) = job.use {
    try {
        val outcome = try {
            handler(job)
        } catch (e: CancellationException) {
            given { job.fail("the handler was cancelled") }
            throw e
        } catch (e: Exception) {
            given { job.fail(e) }
            return@use
        }
        given {
            try {
                job.finish(outcome)
            } catch (e: WeidaException.InvalidConfig) {
                job.fail(e) // an outcome the core refuses (a negative delay) is a failure
            }
        }
    } finally {
        warn()
    }
}

/** Gives a job's outcome, unless the handler gave it itself (the pull API): then it is `Closed`. */
private inline fun given(give: () -> Unit) {
    try {
        give()
    } catch (e: WeidaException.Closed) {
        // Given once already.
    }
}
