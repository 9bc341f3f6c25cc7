// Error codes and fields (python/tests/test_errors.py, test_lifecycle.py: the same names).
package weida

import kotlinx.coroutines.async
import kotlinx.coroutines.CoroutineStart
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import weida.uniffi.WeidaException
import weida.uniffi.errorCodes

/** What `block` threw, checked to be a `T`. */
suspend inline fun <reified T : WeidaException> raised(noinline block: suspend () -> Any?): T {
    try {
        block()
    } catch (e: WeidaException) {
        assertTrue(e is T, "expected ${T::class.simpleName}, got $e")
        return e as T
    }
    throw AssertionError("expected ${T::class.simpleName}, nothing was thrown")
}

class ErrorsTest {
    @Test
    fun one_class_per_core_code_under_the_base_error() {
        val classes = WeidaException::class.java.declaredClasses
            .filter { WeidaException::class.java.isAssignableFrom(it) }.map { it.simpleName }.toSet()
        for (code in errorCodes()) {
            val name = code.lowercase().split('_').joinToString("") { it.replaceFirstChar(Char::uppercase) }
            assertTrue(name in classes, "$code has a WeidaException.$name")
        }
        assertEquals(errorCodes().size + 3, classes.size, "and Aborted, Busy, Panic")
    }

    @Test
    fun the_error_raised_carries_code_and_message() = test {
        runtime().use { rt ->
            val e = raised<WeidaException.InvalidAddress> { rt.bind("nonsense://x") }
            assertEquals("INVALID_ADDRESS", e.code)
            assertTrue(e.description.isNotEmpty())
            assertTrue(e.definite)
        }
    }

    @Test
    fun errors_carry_their_fields_by_the_same_names_everywhere() = test {
        runtime().use { rt ->
            val a = raised<WeidaException.InvalidAddress> { rt.bind("weida://127.0.0.1:0/path") }
            assertEquals(setOf("part", "reason"), a.fields.keys)
            assertEquals("path", a.fields["part"])
            val f = raised<WeidaException.InvalidFilter> { rt.subscriber().subscribe("a..b") }
            assertEquals(setOf("what", "text", "reason"), f.fields.keys)
            assertEquals("filter", f.fields["what"])
            assertEquals("a..b", f.fields["text"])
            val taken = rt.bind("weida://127.0.0.1:0")
            val port = taken.address().substringAfterLast(':')
            val io = raised<WeidaException.Io> { rt.bind("weida://127.0.0.1:$port") }
            assertEquals(setOf("errno"), io.fields.keys)
            assertNotNull(io.fields["errno"])
            val listener = rt.bind(bindAddress("inproc"))
            val replier = listener.replier("/x")
            val req = rt.requester()
            req.connect(replier.address())
            val asking = async { runCatching { req.request("q".toByteArray()) } }
            replier.accept().reject("not today")
            val r = asking.await().exceptionOrNull() as WeidaException.Rejected
            assertEquals(mapOf("reason" to "not today"), r.fields)
            val big = mapOf("blob" to ByteArray(20_000) { 'x'.code.toByte() })
            val l = raised<WeidaException.LimitExceeded> { req.request("x".toByteArray(), big) }
            assertEquals("max_header_size", l.fields["limit"])
            assertEquals(setOf("limit", "detail"), l.fields.keys)
            rt.shutdown()
        }
    }

    @Test
    fun fail_closed_is_going_away_on_the_wire() = test {
        runtime().use { server ->
            runtime().use { client ->
                val listener = server.bind(bindAddress("inproc"))
                val replier = listener.replier("/x")
                val req = client.requester()
                req.connect(replier.address())
                suspend fun answered(code: String): Throwable? {
                    val asking = async(start = CoroutineStart.UNDISPATCHED) {
                        runCatching { req.request("q".toByteArray()) }
                    }
                    replier.accept().fail(code, "said so")
                    return asking.await().exceptionOrNull()
                }
                val lost = answered("CLOSED") as WeidaException.ConnectionLost
                assertEquals("peer_closed", lost.fields["lossCause"])
                val rejected = answered("TIMEOUT") as WeidaException.Rejected
                assertEquals("said so", rejected.fields["reason"])
                val unsupported = answered("UNSUPPORTED") as WeidaException.Unsupported
                assertEquals("said so", unsupported.fields["reason"])
                // A name that is no code is the caller's InvalidConfig; the exchange is still owed.
                val asking = async { runCatching { req.request("q".toByteArray()) } }
                val ex = replier.accept()
                val e = raised<WeidaException.InvalidConfig> { ex.fail("NOT_A_CODE", "x") }
                assertTrue("NOT_A_CODE" in e.description)
                ex.cancel()
                assertTrue(asking.await().exceptionOrNull() is WeidaException.Canceled)
                client.shutdown()
                server.shutdown()
            }
        }
    }

    @Test
    fun an_endpoint_never_connected_is_not_connected() = test {
        runtime().use { rt ->
            val e = raised<WeidaException.NotConnected> { rt.requester().request("x".toByteArray()) }
            assertFalse(e.fields.isNotEmpty())
        }
    }

    @Test
    fun a_bad_option_is_invalid_config_naming_it() = test {
        val e = raised<WeidaException.InvalidConfig> { runtime(limits = mapOf("idleTimeoutMs" to "soon")) }
        assertTrue("idleTimeoutMs" in e.description, e.description)
        val n = raised<WeidaException.InvalidConfig> { runtime(limits = mapOf("noSuchLimit" to 1)) }
        assertTrue("noSuchLimit" in n.description, n.description)
        runtime(limits = mapOf("idleTimeoutMs" to 500, "keepAliveMs" to null)).use { rt ->
            raised<WeidaException.InvalidConfig> { rt.pusher(endpointOptions(mapOf("outboxFull" to "sometimes"))) }
        }
    }

    @Test
    fun a_closed_endpoint_or_consumed_handle_is_closed() = withPair("inproc") { p ->
        val replier = p.listener.replier("/x")
        val req = p.client.requester()
        req.connect(replier.address())
        req.closeEndpoint()
        raised<WeidaException.Closed> { req.request("x".toByteArray()) }
        val again = p.client.requester()
        again.connect(replier.address())
        val asking = async { runCatching { again.request("q".toByteArray()) } }
        val ex = replier.accept()
        ex.reply("a".toByteArray())
        raised<WeidaException.Closed> { ex.reply("b".toByteArray()) }
        assertEquals("a", String(asking.await().getOrThrow()))
    }
}
