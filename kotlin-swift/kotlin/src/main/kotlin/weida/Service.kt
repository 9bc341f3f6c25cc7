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

/** An outcome as it crosses: its name, a delay in milliseconds, a reply's body. */
private class Named(val name: String, val delayMs: Double? = null, val body: ByteArray? = null)

private fun Outcome.named() = when (this) {
    Outcome.Done -> Named("done")
    is Outcome.Reply -> Named("reply", body = body)
    Outcome.Ack -> Named("ack")
    Outcome.Retry -> Named("retry")
    is Outcome.RetryAfter -> Named("retry_after", delay.toDouble(DurationUnit.MILLISECONDS))
    Outcome.Drop -> Named("drop")
}

private fun reason(e: Throwable) = "${e::class.simpleName}: ${e.message}"

/** Gives `outcome` (the pull API; `serve` does this for a handler); `Closed` if one was given. */
fun ServiceJob.finish(outcome: Outcome) = outcome.named().let { finish(it.name, it.delayMs, it.body) }

/** The handler failed with `e`: logged with its class and message, counted, then a retry. */
fun ServiceJob.fail(e: Throwable) = fail(reason(e))

/** Takes nothing more, waits up to `deadline` for the handlers in flight and copies due, then
 * closes: `unfinished`, `copiesDropped`. */
suspend fun Registration.stop(deadline: Duration = 30.seconds): Map<String, ULong> =
    stop(deadline.toDouble(DurationUnit.MILLISECONDS))

/** Where the runtime's warnings go by default: the `weida.service` logger. */
val serviceLogger: Logger = Logger.getLogger("weida.service")

/**
 * Runs `handler` on every job until the registration stops, up to its `concurrency` at once
 * (`next` waits for a free slot), each job finished with what the handler returned, or failed
 * with what it threw; an outcome the core refuses (a negative delay) is a failure, and a job
 * the handler finished itself is left as it is (weida-ffi's `Job::conclude`). After each, the
 * warnings go to `onWarning`. Returns once the registration is stopping and the handlers it
 * started are done. Cancelled, it cancels its handlers, each then a failure (retried as
 * declared); call `stop` to end it instead.
 */
suspend fun Registration.serve(
    onWarning: (String) -> Unit = { serviceLogger.warning(it) },
    handler: Handler,
) {
    val log = { warnings: List<String> ->
        for (w in warnings) onWarning("${address() ?: retryAddress()}: $w")
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
                launch { handle(job, handler, log) }
            }
        }
    } finally {
        log(takeWarnings())
    }
}

private suspend fun handle(job: ServiceJob, handler: Handler, log: (List<String>) -> Unit) = job.use {
    val outcome = try {
        handler(job)
    } catch (e: CancellationException) {
        log(job.concludeFailed("the handler was cancelled"))
        throw e
    } catch (e: Exception) {
        log(job.concludeFailed(reason(e)))
        return@use
    }
    val named = outcome.named()
    log(job.conclude(named.name, named.delayMs, named.body))
}
