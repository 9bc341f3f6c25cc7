// kotlin-swift/README.md's job service, as it stands there (QuickStartTest checks they are the same).
package weida.readme.jobs

import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import weida.*
import weida.uniffi.Service

fun main() = runBlocking {
    runtime().use { rt ->
        val listener = rt.bind("weida://127.0.0.1:0")
        val dead = listener.puller("/dead") // where a job goes after its fifth attempt
        val jobs = Service(rt).queue(listener, "/jobs", concurrency = 4, maxAttempts = 5, deadLetter = dead.address())
        val report = Channel<String>(Channel.UNLIMITED)
        val serving = launch {
            jobs.serve { job ->
                val body = String(job.message().body)
                when {
                    body == "poison" -> throw IllegalArgumentException("cannot parse it") // a failure: logged, then a retry
                    body == "flaky" && job.attempt() < 3u -> Outcome.RetryAfter(50.milliseconds * job.attempt().toInt())
                    else -> Outcome.Done.also { report.send("done $body attempt ${job.attempt()}") }
                }
            }
        }
        val letters = launch {
            dead.messages().collect { report.send("dead ${String(it.body)} after ${String(it.meta("weida-attempt")!!)}") }
        }
        val pusher = rt.pusher()
        pusher.connect(jobs.address()!!)
        for (body in listOf("ok", "flaky", "poison")) pusher.send(body.toByteArray())
        repeat(3) { println(report.receive()) } // two done, one dead letter
        println("stopped ${jobs.stop(10.seconds)}") // the handlers in flight finish first
        serving.join()
        letters.cancel()
        rt.shutdown()
    }
}
