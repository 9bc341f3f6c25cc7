// BUS (python/tests/test_bus.py, core/tests/bus.rs: the same names): every member's message
// reaches every other member, never itself, over every transport.
package weida

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.Bus
import weida.uniffi.Runtime

class BusTest {
    /** `n` members, each in a runtime of its own, connected to each other, for `body`. */
    private fun members(transport: String, n: Int, body: suspend (List<Bus>) -> Unit) = test {
        val runtimes = (0 until n).map { runtime(reconnect = never) }
        try {
            val ms = runtimes.map { rt -> rt.bus(rt.bind(bindAddress(transport)), "/bus") }
            for (a in ms) for (b in ms) if (a !== b) a.connect(b.address())
            body(ms)
        } finally {
            runtimes.forEach(Runtime::shutdown)
            runtimes.forEach(Runtime::close)
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun every_member_sees_every_other_members_message(transport: String) = members(transport, 3) { ms ->
        val names = listOf("a", "b", "c")
        ms.forEachIndexed { i, m -> assertEquals(2u, m.send(names[i].toByteArray())) }
        ms.forEachIndexed { i, m ->
            val got = listOf(String(m.recv().body), String(m.recv().body)).sorted()
            assertEquals(names.filter { it != names[i] }, got)
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_sender_never_receives_its_own_message(transport: String) = members(transport, 2) { (a, b) ->
        for (i in 0 until 10) a.send("a$i".toByteArray())
        b.send("from b".toByteArray())
        assertEquals("from b", String(a.recv().body))
        assertNull(a.tryRecv())
        for (i in 0 until 10) assertEquals("a$i", String(b.recv().body))
    }
}
