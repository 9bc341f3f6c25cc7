// Shared scaffolding, as python/tests/conftest.py: one test body per behaviour, run over every
// transport (QUIC, in process, AF_UNIX).
package weida

import java.io.File
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.withTimeout
import weida.uniffi.Listener
import weida.uniffi.Runtime

private val unique = AtomicInteger()

/** A bind address on `transport` that no other test uses. */
fun bindAddress(transport: String): String {
    val n = ProcessHandle.current().pid() * 1_000_000 + unique.incrementAndGet()
    return when (transport) {
        "quic" -> "weida://127.0.0.1:0"
        "inproc" -> "weida+inproc://test-$n"
        else -> {
            val d = File(System.getProperty("java.io.tmpdir"), "weida-kt-tests").apply { mkdirs() }
            "weida+unix://${d.path}/s$n.sock"
        }
    }
}

/** `n` bytes of a recognisable pattern. */
fun payload(n: Int) = ByteArray(n) { (it % 251).toByte() }

/** A bound runtime with its listener, and a dialling runtime that never redials. */
class Pair(val server: Runtime, val listener: Listener, val client: Runtime) : AutoCloseable {
    override fun close() {
        client.shutdown()
        server.shutdown()
        listener.close()
        client.close()
        server.close()
    }
}

suspend fun makePair(transport: String): Pair {
    val server = runtime()
    val listener = server.bind(bindAddress(transport))
    return Pair(server, listener, runtime(reconnect = never))
}

/** A test body with a deadline, so a hang fails instead of stalling the run. */
fun test(body: suspend CoroutineScope.() -> Unit) = runBlocking { withTimeout(30_000) { body() } }

/** A pair on `transport` for `body`, shut down after it. */
fun withPair(transport: String, body: suspend CoroutineScope.(Pair) -> Unit) = test {
    makePair(transport).use { body(it) }
}

/** What `d` gave, or null if it was cancelled (only `d`: a cancellation of the test itself, its
 * timeout, goes on up). */
suspend fun <T> kotlinx.coroutines.Deferred<T>.orNullIfCancelled(): T? = try {
    await()
} catch (e: kotlinx.coroutines.CancellationException) {
    kotlinx.coroutines.currentCoroutineContext().ensureActive()
    if (!isCancelled) throw e
    null
}
