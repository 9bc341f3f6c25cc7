// Streamed transfers (python/tests/test_patterns.py, test_cancel.py, core/tests/patterns.rs: the
// same names): a message written in parts and finished, with its receipt, one accepted and read
// in parts, a streamed request and its reply, read and written in parts, and raw streams (a
// peer's one-way transfer and exchange, which an acceptor takes both).
package weida

import kotlinx.coroutines.flow.fold
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.Incoming
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

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun an_accepted_transfer_is_read_in_chunks_with_what_came_with_it(transport: String) = withPair(transport) { p ->
        val puller = p.listener.puller("/jobs")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        val t = pusher.open(mapOf("k" to "v".toByteArray()))
        t.write(payload(200_000))
        t.finish()
        val incoming = puller.accept()
        assertEquals("/jobs", incoming.path())
        assertArrayEquals("v".toByteArray(), incoming.meta("k"))
        assertNull(incoming.topic())
        val got = incoming.chunks().fold(java.io.ByteArrayOutputStream()) { acc, c -> acc.apply { write(c) } }
        assertArrayEquals(payload(200_000), got.toByteArray())
        assertNull(incoming.readChunk(), "still null after the end")
        // A whole message next, taken by accept and collected.
        pusher.send("next".toByteArray())
        assertArrayEquals("next".toByteArray(), puller.accept().collect(1000uL))
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun push_cancel_mid_transfer_is_canceled_at_the_reader(transport: String) = withPair(transport) { p ->
        val puller = p.listener.puller("/jobs")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        val t = pusher.open(null)
        t.write(payload(100_000))
        val incoming = puller.accept()
        assertNotNull(incoming.readChunk())
        t.cancelTransfer()
        raised<WeidaException.Canceled> { incoming.chunks().toList() }
        pusher.send("next".toByteArray())
        assertArrayEquals("next".toByteArray(), puller.recv().body)
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_streamed_reply_and_chunked_reads(transport: String) = withPair(transport) { p ->
        val replier = p.listener.replier("/stream")
        val serving = launch {
            replier.accept().use { ex ->
                val chunks = ex.chunks().toList()
                assertEquals(200_000, chunks.sumOf { it.size })
                val out = ex.openReply(mapOf("parts" to "${chunks.size}".toByteArray()))
                out.writeChunks(listOf(ByteArray(10) { 'x'.code.toByte() }, ByteArray(10) { 'y'.code.toByte() }))
                out.write(ByteArray(10) { 'z'.code.toByte() })
                out.finish()
            }
        }
        val req = p.client.requester()
        req.connect(replier.address())
        val opened = req.open(null)
        opened.transfer.write(payload(200_000))
        opened.transfer.finish()
        val reply = opened.reply.reply()
        assertTrue(reply.meta("parts") != null)
        val got = reply.chunks().toList().fold(ByteArray(0)) { a, c -> a + c }
        assertEquals("x".repeat(10) + "y".repeat(10) + "z".repeat(10), String(got))
        serving.join()
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun acceptor_receives_both_stream_kinds(transport: String) = withPair(transport) { p ->
        val acceptor = p.listener.acceptor("/raw")
        val peer = p.client.peer()
        peer.connect(acceptor.address())
        assertEquals(1u, peer.peerCount())
        val oneWay = peer.open(mapOf("kind" to "stream".toByteArray()))
        oneWay.write("one-way".toByteArray())
        oneWay.finish()
        val ex = peer.exchange()
        ex.transfer.write("question".toByteArray())
        ex.transfer.finish()
        val kinds = mutableListOf<String>()
        for (incoming in acceptor.incoming().take(2).toList()) {
            when (incoming) {
                is Incoming.Stream -> {
                    assertEquals("/raw", incoming.transfer.path())
                    assertArrayEquals("stream".toByteArray(), incoming.transfer.meta("kind"))
                    assertArrayEquals("one-way".toByteArray(), incoming.transfer.collect(1uL shl 20))
                    kinds += "stream"
                }
                is Incoming.Exchange -> {
                    assertArrayEquals("question".toByteArray(), incoming.exchange.takeBody())
                    incoming.exchange.reply("answer".toByteArray())
                    kinds += "exchange"
                }
            }
        }
        assertEquals(listOf("exchange", "stream"), kinds.sorted())
        assertArrayEquals("answer".toByteArray(), ex.reply.body().body)
        acceptor.closeEndpoint()
        raised<WeidaException.Closed> { acceptor.accept() }
        peer.closeEndpoint()
        raised<WeidaException.Closed> { peer.open() }
    }
}
