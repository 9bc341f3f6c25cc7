// The handler runtime from Kotlin (docs/SERVICES.md; python/tests/test_service.py has the same
// names): the outcomes, the attempt header, the limit and the dead letter, a registration
// without an address refused, a Rep handler's reply, and serve's concurrency and stop.
package weida

import java.util.Collections
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.TimeSource
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.launch
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.Service
import weida.uniffi.ServiceSettings
import weida.uniffi.WeidaException
import weida.uniffi.fetched
import weida.uniffi.orphans
import weida.uniffi.waitFetched

class ServiceTest {
    private fun Map<String, ULong>.of(vararg names: String) = names.map { this[it]!!.toLong() }

    @Test
    fun ack_and_drop_raise_unsupported_and_count_as_processed_and_dropped() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs")
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        for (body in listOf("a", "b", "c")) pusher.send(body.toByteArray())
        for (outcome in listOf(Outcome.Ack, Outcome.Drop, Outcome.Done)) {
            val job = reg.next()
            assertThrows<WeidaException.Unsupported> { job.ack() }
            assertThrows<WeidaException.Unsupported> { job.discard() }
            job.finish(outcome)
            assertThrows<WeidaException.Closed> { job.finish(Outcome.Done) } // an outcome is given once
        }
        assertEquals(listOf(2L, 1L, 0L, 0L), reg.counters().of("handled", "dropped", "retried", "inFlight"))
        pusher.send("one more".toByteArray())
        val job = reg.next()
        assertThrows<WeidaException.InvalidConfig> { job.finish("later", null, null) }
        job.finish(Outcome.Done)
        reg.stop()
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun retry_with_max_attempts_copies_until_the_limit_then_dead_letters(transport: String) = withPair(transport) { p ->
        val dead = p.listener.puller("/dead")
        val reg = Service(p.server).queue(p.listener, "/jobs", maxAttempts = 3, deadLetter = dead.address())
        val seen = Collections.synchronizedList(mutableListOf<kotlin.Pair<String, UInt>>())
        val serving = launch {
            reg.serve { job ->
                seen.add(String(job.message().body) to job.attempt())
                Outcome.Retry
            }
        }
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        pusher.send("job".toByteArray(), mapOf("trace" to "t-1".toByteArray()))
        val letter = dead.recv()
        assertArrayEquals("job".toByteArray(), letter.body)
        assertArrayEquals("t-1".toByteArray(), letter.meta("trace"))
        assertArrayEquals("3".toByteArray(), letter.meta("weida-attempt"))
        assertEquals(listOf("job" to 1u, "job" to 2u, "job" to 3u), seen.toList())
        assertEquals(mapOf("unfinished" to 0uL, "copiesDropped" to 0uL), reg.stop())
        serving.join()
        assertEquals(listOf(2L, 1L, 0L), reg.counters().of("retried", "deadLettered", "handled"))
    }

    @Test
    fun each_kind_of_registration_sends_its_copies_where_it_should() = withPair("quic") { p ->
        val retries = p.listener.puller("/retries")
        val service = Service(p.client)
        // A bound fan-out: its copy comes back to its own path alone, under its topic.
        val fan = Service(p.server).fanOut(p.listener, "/events", listOf("orders.#"), maxAttempts = 2)
        val publisher = p.client.publisher()
        publisher.connect(fan.address()!!)
        assertEquals(1u, publisher.publish("orders.new", "o1".toByteArray()))
        val first = fan.next()
        assertEquals(1u to "orders.new", first.attempt() to first.message().topic)
        first.finish(Outcome.Retry)
        val again = fan.next()
        assertEquals(Triple("o1", 2u, "orders.new"), Triple(String(again.message().body), again.attempt(), again.message().topic))
        again.finish(Outcome.Done)
        // A puller dialling a bound pusher: its copy goes to retryTo.
        val work = p.listener.pusher("/work")
        val pulling = service.pulling(work.address(), retryTo = retries.address())
        work.send("w1".toByteArray())
        pulling.next().finish(Outcome.RetryAfter(Duration.ZERO))
        val copy = retries.recv()
        assertEquals("w1" to "2", String(copy.body) to String(copy.meta("weida-attempt")!!))
        // A subscriber dialling a bound publisher: what its filters hold, copied to retryTo with
        // its topic in a header.
        val events = p.listener.publisher("/feed")
        val subscribing = service.subscribing(events.address(), listOf("orders.#"), retryTo = retries.address(), maxAttempts = 3)
        assertEquals(1u, events.subscriberCount())
        assertEquals(0u, events.publish("billing.paid", "b1".toByteArray()))
        assertEquals(1u, events.publish("orders.paid", "o2".toByteArray()))
        val job = subscribing.next()
        assertEquals("o2" to "orders.paid", String(job.message().body) to job.message().topic)
        job.finish(Outcome.Retry)
        val copied = retries.recv()
        assertEquals(
            Triple("o2", "2", "orders.paid"),
            Triple(String(copied.body), String(copied.meta("weida-attempt")!!), String(copied.meta("weida-topic")!!)),
        )
        assertEquals(null to null, pulling.address() to subscribing.address())
        raised<WeidaException.InvalidConfig> { service.subscribing(events.address(), listOf("orders.#"), retryTo = null) }
        for (r in listOf(fan, pulling, subscribing)) r.stop()
    }

    @Test
    fun retry_without_a_limit_redelivers_nothing_and_a_failure_is_counted() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs")
        val calls = mutableListOf<String>()
        val warnings = mutableListOf<String>()
        val last = CompletableDeferred<Unit>()
        val serving = launch {
            reg.serve(onWarning = { warnings.add(it) }) { job ->
                val body = String(job.message().body)
                calls.add(body)
                if (body == "last") last.complete(Unit)
                if (body == "fail") throw IllegalStateException("no disk")
                if (body == "again") Outcome.Retry else Outcome.Done
            }
        }
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        for (body in listOf("again", "fail", "last")) pusher.send(body.toByteArray())
        last.await()
        reg.stop() // after the last handler started: the stop waits for it
        serving.join()
        assertEquals(listOf("again", "fail", "last"), calls)
        // The failure goes to onWarning, with its path and reason.
        assertEquals(1, warnings.size, warnings.toString())
        assertTrue("path=/jobs" in warnings[0] && "reason=IllegalStateException: no disk" in warnings[0], warnings[0])
        assertEquals(listOf(1L, 2L, 1L, 0L), reg.counters().of("handled", "dropped", "failed", "retried"))
    }

    @Test
    fun a_refused_outcome_is_a_failure_and_serve_goes_on() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs", maxAttempts = 2)
        val warnings = mutableListOf<String>()
        val retried = CompletableDeferred<Unit>()
        val last = CompletableDeferred<Unit>()
        val serving = launch {
            reg.serve(onWarning = { warnings.add(it) }) { job ->
                when {
                    String(job.message().body) == "last" -> last.complete(Unit)
                    job.attempt() == 2u -> retried.complete(Unit)
                    // Refused by the core: a failure, retried as declared.
                    else -> return@serve Outcome.RetryAfter((-1).milliseconds)
                }
                Outcome.Done
            }
        }
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        pusher.send("refused".toByteArray())
        retried.await()
        pusher.send("last".toByteArray())
        last.await()
        reg.stop()
        serving.join()
        assertEquals(1, warnings.size, warnings.toString())
        assertTrue("path=/jobs" in warnings[0] && "reason=the outcome was refused" in warnings[0], warnings[0])
        assertEquals(listOf(1L, 1L, 2L, 0L), reg.counters().of("failed", "retried", "handled", "inFlight"))
    }

    @Test
    fun a_job_the_handler_finished_itself_is_not_finished_twice() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs")
        val warnings = mutableListOf<String>()
        val last = CompletableDeferred<Unit>()
        val serving = launch {
            reg.serve(onWarning = { warnings.add(it) }) { job ->
                if (String(job.message().body) == "last") {
                    last.complete(Unit)
                } else {
                    job.finish(Outcome.Done) // the pull API; serve then leaves the job as it is
                }
                Outcome.Done
            }
        }
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        for (body in listOf("first", "last")) pusher.send(body.toByteArray())
        last.await()
        reg.stop()
        serving.join()
        assertEquals(listOf<String>(), warnings)
        assertEquals(listOf(2L, 0L, 0L, 0L), reg.counters().of("handled", "failed", "dropped", "inFlight"))
    }

    // The thread is held until the I/O thread has taken the job for the pending next: the
    // coroutine sees its cancellation first, then the job, which goes back (weida-ffi's
    // next_call), the same attempt, nothing counted.
    @Test
    fun a_next_cancelled_as_its_job_arrives_loses_nothing() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs")
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        for (i in 0 until 10) {
            val pending = async(start = CoroutineStart.UNDISPATCHED) { reg.next() }
            val fetched = fetched()
            val orphans = orphans()
            val sent = launch(start = CoroutineStart.UNDISPATCHED) { pusher.send("$i".toByteArray()) }
            assertTrue(waitFetched(fetched + 1u, 10_000u))
            pending.cancel()
            assertEquals(null, pending.orNullIfCancelled())
            sent.join()
            val job = reg.next()
            assertEquals("$i" to 1u, String(job.message().body) to job.attempt())
            job.finish(Outcome.Done)
            assertEquals(orphans + 1u, orphans(), "the job came back: the race ran")
        }
        assertEquals(listOf(10L, 0L, 0L, 0L), reg.counters().of("handled", "failed", "dropped", "inFlight"))
        reg.stop()
    }

    @Test
    fun retry_after_waits_then_the_copy_is_the_next_attempt() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs")
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        pusher.send("later".toByteArray())
        val job = reg.next()
        val finished = TimeSource.Monotonic.markNow()
        job.finish(Outcome.RetryAfter(200.milliseconds))
        assertEquals(1uL, reg.counters()["delayed"])
        val copy = reg.next()
        assertTrue(finished.elapsedNow() >= 200.milliseconds, finished.elapsedNow().toString())
        assertEquals("later" to 2u, String(copy.message().body) to copy.attempt())
        copy.finish(Outcome.Done)
        reg.stop()
    }

    @Test
    fun a_registration_without_an_address_is_refused_at_start() = withPair("quic") { p ->
        val service = Service(p.server)
        val address = p.listener.address()
        val rep = raised<WeidaException.InvalidConfig> { service.replying(p.listener, "/rpc", retryTo = null) }
        assertTrue("retry_to" in rep.description, rep.description)
        val pulling = raised<WeidaException.InvalidConfig> { service.pulling("$address/work", retryTo = null) }
        assertTrue("retry_to" in pulling.description, pulling.description)
        val own = raised<WeidaException.InvalidConfig> {
            service.queue(p.listener, "/jobs", ServiceSettings(retryTo = "$address/elsewhere"))
        }
        assertTrue("own path" in own.description, own.description)
        val loop = raised<WeidaException.InvalidConfig> {
            service.queue(p.listener, "/jobs", deadLetter = "$address/jobs")
        }
        assertTrue("come back" in loop.description, loop.description)
        // Nothing stayed bound.
        p.listener.replier("/rpc")
        p.listener.puller("/jobs")
    }

    @Test
    fun a_rep_handler_replies_with_what_it_returns_and_a_retry_is_refused() = withPair("quic") { p ->
        val retries = p.listener.puller("/retries")
        val reg = Service(p.server).replying(p.listener, "/rpc", retryTo = retries.address(), maxAttempts = 2)
        val serving = launch {
            reg.serve { job ->
                when (val body = String(job.message().body)) {
                    "later" -> Outcome.RetryAfter(Duration.ZERO)
                    "drop" -> Outcome.Drop
                    "ack" -> Outcome.Ack
                    else -> Outcome.Reply(body.uppercase().toByteArray())
                }
            }
        }
        val req = p.client.requester()
        req.connect("${p.listener.address()}/rpc")
        assertArrayEquals("PING".toByteArray(), req.request("ping".toByteArray()))
        assertArrayEquals(ByteArray(0), req.request("ack".toByteArray()))
        val retried = raised<WeidaException.Rejected> { req.request("later".toByteArray()) }
        assertTrue("retried" in retried.description, retried.description)
        val copy = retries.recv()
        assertEquals("later" to "2", String(copy.body) to String(copy.meta("weida-attempt")!!))
        val dropped = raised<WeidaException.Rejected> { req.request("drop".toByteArray()) }
        assertTrue("dropped" in dropped.description, dropped.description)
        reg.stop()
        serving.join()
    }

    @Test
    fun concurrency_runs_that_many_handlers_at_once_and_a_stop_waits_for_them() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs", concurrency = 3)
        var running = 0
        var most = 0
        val gate = CompletableDeferred<Unit>()
        val three = CompletableDeferred<Unit>()
        // The test's one thread runs every handler: the counts need no lock.
        val serving = launch {
            reg.serve { _ ->
                running += 1
                most = maxOf(most, running)
                if (running == 3) three.complete(Unit)
                gate.await()
                running -= 1
                Outcome.Done
            }
        }
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        for (i in 0 until 8) pusher.send("m$i".toByteArray())
        three.await()
        assertEquals(3uL, reg.counters()["inFlight"])
        val stopping = async { reg.stop() } // the stop waits for the three in flight
        yield()
        assertFalse(stopping.isCompleted)
        gate.complete(Unit)
        assertEquals(mapOf("unfinished" to 0uL, "copiesDropped" to 0uL), stopping.await())
        serving.join()
        assertEquals(3, most)
        assertEquals(3uL, reg.counters()["handled"])
    }
    // Kotlin's own (Python's serve does the same for a cancelled asyncio task): the handlers of a
    // cancelled serve are cancelled, and each job is then a failure, retried as declared; the
    // copy is the next job even if serve's own `next`, cancelled with it, took it as it ended
    // (weida-ffi's `next_call` hands it back).
    @Test
    fun a_cancelled_serve_fails_its_jobs_in_flight_and_they_are_retried_as_declared() = withPair("quic") { p ->
        val reg = Service(p.server).queue(p.listener, "/jobs", maxAttempts = 2)
        val warnings = mutableListOf<String>()
        val started = CompletableDeferred<Unit>()
        val serving = launch {
            reg.serve(onWarning = { warnings.add(it) }) { _ ->
                started.complete(Unit)
                awaitCancellation()
            }
        }
        val pusher = p.client.pusher()
        pusher.connect(reg.address()!!)
        pusher.send("slow".toByteArray())
        started.await()
        serving.cancelAndJoin()
        assertTrue(warnings.any { "attempt=1 reason=the handler was cancelled" in it }, warnings.toString())
        val copy = reg.next()
        assertEquals("slow" to 2u, String(copy.message().body) to copy.attempt())
        copy.finish(Outcome.Done)
        assertEquals(listOf(1L, 1L, 1L, 0L), reg.counters().of("failed", "retried", "handled", "inFlight"))
        reg.stop()
    }
}
