// Streamed transfers (python/tests/test_patterns.py, core/tests/patterns.rs: the same names): a
// message written in parts and finished, with its receipt, and a streamed request and its reply.
package weida

import kotlinx.coroutines.launch
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.WeidaException

class StreamTest {
    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun push_pull_delivers_every_message_and_a_streamed_one_with_its_receipt(transport: String) = withPair(transport) { p ->
        val puller = p.listener.puller("/jobs")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        val t = pusher.open(mapOf("k" to "v".toByteArray()))
        t.write("part1-".toByteArray())
        t.write("part2".toByteArray())
        t.finish().delivered()
        val m = puller.recv()
        assertArrayEquals("part1-part2".toByteArray(), m.body)
        assertArrayEquals("v".toByteArray(), m.meta("k"))
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_cancelled_streamed_push_fails_every_later_write(transport: String) = withPair(transport) { p ->
        val puller = p.listener.puller("/jobs")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        val t = pusher.open(null)
        t.write(payload(1000))
        t.cancelTransfer()
        raised<WeidaException.Canceled> { t.write(payload(10)) }
        raised<WeidaException.Canceled> { t.finish() }
        // The puller goes on: what it sees of the cancelled one (Canceled, or nothing when the
        // reset came before its header) comes before the next message.
        pusher.send("next".toByteArray())
        var m: weida.uniffi.Message? = null
        while (m == null) {
            m = try { puller.recv() } catch (e: WeidaException.Canceled) { null }
        }
        assertArrayEquals("next".toByteArray(), m.body)
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_streamed_request_is_answered_as_it_is_written(transport: String) = withPair(transport) { p ->
        val replier = p.listener.replier("/echo")
        val req = p.client.requester()
        req.connect(replier.address())
        val serving = launch {
            val ex = replier.accept(null)
            ex.reply(ex.takeBody(), null)
        }
        val opened = req.open(null)
        opened.transfer.write(payload(300_000))
        opened.transfer.finish()
        assertEquals(300_000, opened.reply.body().body.size)
        serving.join()
    }
}
