// Redial and PeerEvents (python/tests/test_reconnect.py: the same names).
package weida

import kotlinx.coroutines.flow.first
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.PeerEvents

/** A runtime that redials at once and briefly, with no jitter. */
fun redialling() = runtime(reconnect = mapOf("initialMs" to 20, "maxMs" to 100, "jitter" to false))

/** The next event of `kind`, skipping only those of `between`. */
suspend fun PeerEvents.until(kind: String, between: Set<String>) =
    asFlow().first { e ->
        check(e.kind == kind || e.kind in between) { "unexpected $e" }
        e.kind == kind
    }

class ReconnectTest {
    @ParameterizedTest
    @ValueSource(strings = ["unix", "inproc"])
    fun a_pusher_whose_server_restarts_delivers_again_with_no_second_connect(transport: String) = test {
        val bind = bindAddress(transport)
        val server = runtime()
        var puller = server.bind(bind).puller("/jobs")
        redialling().use { client ->
            val pusher = client.pusher()
            val events = pusher.events()
            pusher.connect(puller.address())
            assertEquals("connected", events.next()!!.kind)
            pusher.send("one".toByteArray())
            assertArrayEquals("one".toByteArray(), puller.recv().body)
            server.closeAndWait()
            val lost = events.next()!!
            assertEquals("lost" to puller.address(), lost.kind to lost.url)
            val retrying = events.next()!!
            assertEquals("retrying" to 1u, retrying.kind to retrying.attempt)
            assertEquals(if (transport == "inproc") 0.0 else 20.0, retrying.delayMs)
            assertEquals(0u, pusher.peerCount())
            runtime().use { second ->
                puller = second.bind(bind).puller("/jobs")
                val e = events.until("connected", setOf("retrying"))
                assertEquals(puller.address(), e.url)
                assertEquals(1u, pusher.peerCount())
                pusher.send("two".toByteArray())
                assertArrayEquals("two".toByteArray(), puller.recv().body)
                second.shutdown()
            }
            client.shutdown()
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["unix", "inproc"])
    fun never_reports_connection_lost_as_before(transport: String) = test {
        val bind = bindAddress(transport)
        val server = runtime()
        val puller = server.bind(bind).puller("/jobs")
        redialling().use { client ->
            val pusher = client.pusher(endpointOptions(reconnect = never))
            val events = pusher.events()
            pusher.connect(puller.address())
            server.closeAndWait()
            events.until("lost", setOf("connected"))
            assertEquals("gave_up", events.next()!!.kind)
            raised<weida.uniffi.WeidaException.ConnectionLost> { pusher.send("x".toByteArray()) }
            client.shutdown()
        }
    }
}
