// Pub/Sub the other way round (python/tests/test_collector.py, core/tests/collector.rs: the same
// names): dialling publishers feed a bound subscriber, a collector, which keeps what its filters
// select, over every transport.
package weida

import kotlinx.coroutines.flow.first
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.Runtime
import weida.uniffi.WeidaException

class CollectorTest {
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
    fun two_dialling_publishers_feed_one_collector(transport: String) = runtimes(3) { (rc, ra, rb) ->
        val collector = rc.bind(bindAddress(transport)).subscriber("/logs")
        collector.subscribe("logs.#")
        val a = ra.publisher()
        val b = rb.publisher()
        for (p in listOf(a, b)) {
            p.connect(collector.address())
            assertEquals(1u, p.peerCount())
        }
        for (i in 0 until 20) {
            assertEquals(1u, a.publish("logs.a", "a$i".toByteArray()))
            assertEquals(1u, b.publish("logs.b.x", "b$i".toByteArray(), mapOf("n" to "$i".toByteArray())))
        }
        val got = HashMap<String, weida.uniffi.Message>()
        while (got.size < 40) {
            val m = collector.recv()
            got[String(m.body)] = m
        }
        assertEquals("logs.a", got["a3"]!!.topic)
        assertEquals("logs.b.x", got["b7"]!!.topic)
        assertEquals("7", String(got["b7"]!!.meta("n")!!))
        assertEquals(0uL, collector.discarded())
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_collector_keeps_what_its_filters_select_and_counts_the_rest(transport: String) = runtimes(2) { (rc, rp) ->
        val collector = rc.bind(bindAddress(transport)).subscriber("/logs")
        collector.subscribe("logs.*.error")
        assertEquals(listOf("logs.*.error"), collector.filters())
        val p = rp.publisher()
        p.connect(collector.address())
        for (topic in listOf("logs.web.info", "logs.db.error", "metrics.web.error", "logs.web.error")) {
            p.publish(topic, topic.toByteArray())
        }
        val kept = listOf(String(collector.recv().body), String(collector.recv().body)).sorted()
        assertEquals(listOf("logs.db.error", "logs.web.error"), kept)
        assertTrue(collector.unsubscribe("logs.*.error"))
        assertFalse(collector.unsubscribe("logs.*.error"))
        assertThrows<WeidaException.InvalidFilter> { collector.subscribe("logs.**") }
        assertThrows<WeidaException.InvalidFilter> { p.publish("bad..topic", "x".toByteArray()) }
        collector.subscribe("end")
        p.publish("end", "end".toByteArray())
        assertEquals("end", String(collector.messages().first().body))
    }
}
