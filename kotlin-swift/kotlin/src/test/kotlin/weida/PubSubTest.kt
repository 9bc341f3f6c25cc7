// Streamed publishing (python/tests/test_pubsub.py: the same names): a message written to many
// subscribers in parts through a `FanOut`, and one cancelled, which no subscriber ever sees.
package weida

import kotlinx.coroutines.async
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.WeidaException

class PubSubTest {
    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_streamed_publish_carries_a_payload_no_publish_could_take(transport: String) = test {
        val limits = mapOf("subscriberBufferBytes" to 64 * 1024)
        val server = runtime(limits = limits)
        val listener = server.bind(bindAddress(transport))
        Pair(server, listener, runtime(limits = limits, reconnect = never)).use { p ->
            val publisher = p.listener.publisher("/video")
            val a = p.client.subscriber()
            a.connect(publisher.address())
            a.subscribe("frames.#")
            val b = p.client.subscriber()
            b.connect(publisher.address())
            b.subscribe("frames.hd")
            // 1.25 MiB: twenty times the byte budget, which publish refuses.
            val body = payload(40 * 32 * 1024)
            raised<WeidaException.LimitExceeded> { publisher.publish("frames.hd", body) }
            val fan = publisher.open("frames.hd")
            assertEquals(2u, fan.copies())
            val ma = async { a.recv() }
            val mb = async { b.recv() }
            for (at in body.indices step 32 * 1024) {
                assertEquals(2u, fan.write(body.copyOfRange(at, at + 32 * 1024)))
            }
            assertEquals(2u, fan.finish())
            assertEquals(2u, fan.copies())
            assertFalse(fan.isOpen())
            for (m in listOf(ma.await(), mb.await())) {
                assertEquals("frames.hd", m.topic)
                assertArrayEquals(body, m.body, "byte-exact")
            }
            assertEquals(0UL, publisher.dropped().total)
            assertEquals(0UL, publisher.droppedOn("frames.hd").total)
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_fanout_cancelled_is_never_seen(transport: String) = withPair(transport) { p ->
        val publisher = p.listener.publisher("/feed")
        val sub = p.client.subscriber()
        sub.connect(publisher.address())
        sub.subscribe("t")
        val fan = publisher.open("t")
        assertTrue(fan.isOpen())
        assertEquals(1u, fan.writeNow("half a message".toByteArray()))
        fan.cancel()
        assertEquals(0u, fan.copies())
        assertFalse(fan.isOpen())
        raised<WeidaException.Canceled> { fan.writeNow("late".toByteArray()) }
        raised<WeidaException.Canceled> { fan.finish() }
        val f = publisher.open("t")
        f.write("all ".toByteArray())
        f.writeNow("of it".toByteArray())
        assertEquals(1u, f.finish())
        raised<WeidaException.Closed> { f.finish() }
        assertArrayEquals("all of it".toByteArray(), sub.recv().body)
        assertEquals(0UL, publisher.dropped().total)
    }
}
