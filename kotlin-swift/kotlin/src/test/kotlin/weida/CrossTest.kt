// Across processes: a Kotlin peer and the Rust core's example peer (core/examples/peer.rs), over
// QUIC with the pin its address carries and over AF_UNIX (node/test/cross.test.mjs and
// python/tests/test_processes.py, the same names with the language's).
package weida

import java.io.BufferedReader
import java.io.File
import java.io.InputStreamReader
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.addressWithPath

/** The Rust peer: prints `READY <address>` and runs until its stdin closes. */
class RustPeer(bind: String) : AutoCloseable {
    private val proc = ProcessBuilder(System.getProperty("weida.peer.bin"), bind)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start()
    private val out = BufferedReader(InputStreamReader(proc.inputStream))
    val address: String

    init {
        val ready = out.readLine() ?: error("the Rust peer ended before READY")
        check(ready.startsWith("READY ")) { ready }
        address = ready.removePrefix("READY ")
    }

    suspend fun line(): String = withContext(Dispatchers.IO) { out.readLine() ?: error("the Rust peer ended") }

    fun send(line: String) {
        proc.outputStream.write("$line\n".toByteArray())
        proc.outputStream.flush()
    }

    override fun close() {
        proc.outputStream.close()
        if (!proc.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) proc.destroyForcibly()
    }
}

private fun bindFor(transport: String) = if (transport == "quic") {
    "weida://127.0.0.1:0"
} else {
    "weida+unix://${File(System.getProperty("java.io.tmpdir"), "weida-kt-rust-${ProcessHandle.current().pid()}.sock")}"
}

private fun hex(b: ByteArray) = b.joinToString("") { "%02x".format(it) }

class CrossTest {
    @ParameterizedTest
    @ValueSource(strings = ["quic", "unix"])
    fun a_kotlin_peer_talks_to_a_rust_peer(transport: String) = test {
        RustPeer(bindFor(transport)).use { child ->
            runtime().use { rt ->
                val req = rt.requester()
                req.connect(addressWithPath(child.address, "/echo"))
                val m = req.requestWith("from kotlin".toByteArray(), mapOf("a" to "1".toByteArray()))
                assertEquals("from kotlin", String(m.body))
                assertArrayEquals("1".toByteArray(), m.meta("a"))
                val pusher = rt.pusher()
                pusher.connect(addressWithPath(child.address, "/jobs"))
                val body = ByteArray(20) { it.toByte() }
                pusher.send(body)
                assertEquals("JOB 20 ${hex(body.copyOf(16))}", child.line())
                val big = ByteArray(256_000) { (it % 256).toByte() }
                pusher.send(big)
                assertEquals("JOB ${big.size} ${hex(big.copyOf(16))}", child.line())
                assertEquals(0UL, rt.drain(10_000.0).outstanding)
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "unix"])
    fun a_kotlin_subscriber_receives_from_the_rust_publisher(transport: String) = test {
        RustPeer(bindFor(transport)).use { child ->
            runtime(options = mapOf("ordering" to "detect")).use { rt ->
                val sub = rt.subscriber()
                sub.connect(addressWithPath(child.address, "/feed"))
                sub.subscribe("sensors.*.temp")
                for ((topic, text) in listOf("sensors.hall.temp" to "21.5", "sensors.hall.rh" to "40")) {
                    child.send("PUB $topic $text")
                    assertEquals("PUBLISHED ${if (topic.endsWith("temp")) 1 else 0}", child.line())
                }
                val m = sub.recv()
                assertEquals(Triple("sensors.hall.temp", "21.5", "/feed"), Triple(m.topic, String(m.body), m.path))
                assertEquals(1UL to 0UL, m.sequence to m.gap)
                assertEquals(true, sub.unsubscribe("sensors.*.temp"))
                child.send("PUB sensors.hall.temp 22")
                assertEquals("PUBLISHED 0", child.line())
                rt.shutdown()
            }
        }
    }
}
