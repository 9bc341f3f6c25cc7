// Cancellation: a cancelled coroutine cancels the Rust operation (python/tests/test_cancel.py:
// the same names; "asyncio" there is the coroutine here).
package weida

import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.WeidaException
import weida.uniffi.orphans

class CancelTest {
    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun an_asyncio_cancelled_request_is_canceled_at_the_replier(transport: String) = withPair(transport) { p ->
        val replier = p.listener.replier("/rpc")
        val req = p.client.requester()
        req.connect(replier.address())
        val pending = launch(start = CoroutineStart.UNDISPATCHED) { req.request(payload(64)) }
        val ex = replier.accept()
        pending.cancelAndJoin()
        // The replier sees Canceled: answering a request nobody waits for any more with a
        // reply too large to be buffered whole.
        raised<WeidaException.Canceled> {
            ex.takeBody()
            ex.reply(payload(16 * 1024 * 1024))
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun an_asyncio_cancelled_write_cancels_the_transfer_at_the_reader(transport: String) = withPair(transport) { p ->
        // A send too large to be written at once, cancelled: the reader never sees a short
        // payload (the transfer cut short is Canceled, or it had arrived whole); the next
        // message arrives whole.
        val puller = p.listener.puller("/jobs")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        val big = 8 * 1024 * 1024
        val sending = launch(start = CoroutineStart.UNDISPATCHED) { pusher.send(payload(big)) }
        sending.cancelAndJoin()
        pusher.send("after".toByteArray())
        while (true) {
            val m = try {
                puller.recv()
            } catch (e: WeidaException.Canceled) {
                continue
            }
            if (m.body.size == big) continue
            assertArrayEquals("after".toByteArray(), m.body)
            break
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun an_asyncio_cancelled_recv_loses_nothing(transport: String) = withPair(transport) { p ->
        val puller = p.listener.puller("/jobs")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        // Receives waiting for nothing, cancelled.
        repeat(10) {
            val waiting = launch(start = CoroutineStart.UNDISPATCHED) { puller.recv() }
            waiting.cancelAndJoin()
        }
        // Receives raced with arrivals and cancelled: every message still arrives, in order.
        val n = 200
        val sending = launch { for (i in 0 until n) pusher.send("m$i".toByteArray()) }
        val got = mutableListOf<String>()
        var i = 0
        while (got.size < n) {
            val r = async(start = CoroutineStart.UNDISPATCHED) { puller.recv() }
            if (i++ % 2 == 0) r.cancel()
            r.orNullIfCancelled()?.let { got += String(it.body) }
        }
        sending.join()
        assertEquals((0 until n).map { "m$it" }, got)
        assertTrue(orphans() >= 0UL)
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_cancelled_subscriber_recv_loses_nothing(transport: String) = withPair(transport) { p ->
        val publisher = p.listener.publisher("/t")
        val sub = p.client.subscriber()
        sub.subscribe("x")
        sub.connect(publisher.address())
        publisher.untilSubscribers(1u)
        val waiting = launch(start = CoroutineStart.UNDISPATCHED) { sub.recv() }
        waiting.cancelAndJoin()
        // Receives raced with arrivals, every third cancelled. One copy in flight at a time: a
        // burst to a subscriber over AF_UNIX may be dropped by design (reverse_pool_empty,
        // test_pubsub.py: test_an_empty_reverse_pool_drops_and_the_subscription_survives).
        val got = mutableListOf<String>()
        var published = 0
        var i = 0
        while (got.size < 10) {
            val r = async(start = CoroutineStart.UNDISPATCHED) { sub.recv() }
            if (published == got.size) {
                assertEquals(1u, publisher.publish("x", "c$published".toByteArray()))
                published++
            }
            if (i++ % 3 == 0) r.cancel()
            r.orNullIfCancelled()?.let { got += String(it.body) }
        }
        assertEquals((0 until 10).map { "c$it" }, got)
        assertEquals(0UL, publisher.dropped().total)
    }
}
