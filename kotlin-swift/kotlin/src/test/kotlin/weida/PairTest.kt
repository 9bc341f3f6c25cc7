// PAIR and a pusher that binds (python/tests/test_pair.py and test_bound_push.py,
// core/tests/pair.rs and bound_push.rs: the same names), over every transport.
package weida

import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.first
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.Runtime
import weida.uniffi.WeidaException

class PairTest {
    private fun runtimes(n: Int, body: suspend (List<Runtime>) -> Unit) = test {
        val rts = (0 until n).map { runtime(reconnect = never) }
        try {
            body(rts)
        } finally {
            rts.forEach(Runtime::shutdown)
            rts.forEach(Runtime::close)
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun both_directions_carry_transfers_concurrently(transport: String) = runtimes(2) { (server, client) ->
        val bound = server.bind(bindAddress(transport)).pair("/chat")
        val dialling = client.pair()
        assertNull(dialling.address())
        dialling.connect(bound.address()!!)
        assertEquals(1u, dialling.peerCount())
        val bodies = (0 until 10).map { "m$it" }
        coroutineScope {
            val a = async { bodies.forEach { dialling.send(it.toByteArray()) } }
            val b = async { bodies.forEach { bound.send(it.toByteArray()) } }
            a.await()
            b.await()
        }
        val atBound = (bodies.indices).map { String(bound.recv().body) }
        assertEquals(bodies.sorted(), atBound.sorted())
        val atDialling = (bodies.indices).map { String(dialling.recv().body) }
        assertEquals(bodies.sorted(), atDialling.sorted())
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_second_connection_is_refused_and_the_first_keeps_working(transport: String) = runtimes(3) { (server, a, b) ->
        val bound = server.bind(bindAddress(transport)).pair("/chat")
        val first = a.pair()
        first.connect(bound.address()!!)
        val e = assertThrows<WeidaException.LimitExceeded> { b.pair().connect(bound.address()!!) }
        assertEquals("peers", e.fields["limit"])
        first.send("still here".toByteArray())
        assertEquals("still here", String(bound.recv().body))
        bound.send("and you".toByteArray())
        assertEquals("and you", String(first.messages().first().body))
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun workers_that_connect_before_and_after_the_first_send_each_get_their_share(transport: String) =
        runtimes(3) { (server, ra, rb) ->
            val jobs = server.bind(bindAddress(transport)).pusher("/jobs")
            val a = ra.puller()
            a.connect(jobs.address())
            for (i in 0 until 4) jobs.send("job $i".toByteArray())
            for (i in 0 until 4) assertEquals("job $i", String(a.recv().body))
            val b = rb.puller()
            b.connect(jobs.address())
            assertEquals(2u, jobs.peerCount())
            for (i in 4 until 14) jobs.send("job $i".toByteArray())
            val got = (0 until 5).flatMap { listOf(String(a.recv().body), String(b.recv().body)) }
            assertEquals((4 until 14).map { "job $it" }.sorted(), got.sorted())
        }
}
