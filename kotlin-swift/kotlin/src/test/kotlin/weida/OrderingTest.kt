// PerProducer ordering outside Pub/Sub (python/tests/test_ordering.py, core/tests/ordering.rs:
// the same names): a puller or a pair whose runtime requires detect gets each message numbered
// with the gap before it, and a level a pattern cannot honour is refused, never downgraded.
package weida

import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.WeidaException

class OrderingTest {
    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_puller_that_requires_ordering_gets_every_message_numbered(transport: String) = test {
        runtime(options = mapOf("ordering" to "detect")).use { server ->
            runtime(reconnect = never).use { client ->
                val puller = server.bind(bindAddress(transport)).puller("/jobs")
                val pusher = client.pusher()
                pusher.connect(puller.address())
                // Small bodies (a lane's frames) and large ones (a stream each), one at a time.
                for (i in 0 until 12) {
                    val body = if (i % 4 == 3) payload(40_000) else payload(10 + i)
                    pusher.send(body)
                    val m = puller.recv()
                    assertEquals((i + 1).toULong() to 0UL, m.sequence to m.gap)
                    assertArrayEquals(body, m.body)
                }
                client.shutdown()
                server.shutdown()
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_refused_push_shows_up_as_a_gap(transport: String) = test {
        runtime(limits = mapOf("maxCollectedBody" to 1000), options = mapOf("ordering" to "detect")).use { server ->
            runtime(reconnect = never).use { client ->
                val puller = server.bind(bindAddress(transport)).puller("/jobs")
                val pusher = client.pusher()
                pusher.connect(puller.address())
                pusher.send(payload(100))
                val first = puller.recv()
                assertEquals(1UL to 0UL, first.sequence to first.gap)
                // Number 2 is above the puller's maxCollectedBody: its receive fails.
                pusher.send(payload(2000))
                raised<WeidaException.LimitExceeded> { puller.recv() }
                pusher.send(payload(100))
                val third = puller.recv()
                assertEquals(3UL to 1UL, third.sequence to third.gap)
                client.shutdown()
                server.shutdown()
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_level_a_pattern_cannot_honour_is_refused_not_downgraded(transport: String) = test {
        runtime(options = mapOf("ordering" to "reassemble")).use { server ->
            runtime(reconnect = never).use { client ->
                val listener = server.bind(bindAddress(transport))
                val puller = listener.puller("/jobs")
                val replier = listener.replier("/echo")
                val pair = listener.pair("/chat")
                // A pusher and a dialling pair offer detect only; a requester offers no ordering.
                raised<WeidaException.NegotiationFailed> { client.pusher().connect(puller.address()) }
                raised<WeidaException.NegotiationFailed> { client.requester().connect(replier.address()) }
                raised<WeidaException.NegotiationFailed> { client.pair().connect(pair.address()!!) }
                // A runtime that requires reassemble does not dial a pair: it holds nothing back.
                val bound = client.bind(bindAddress(transport)).pair("/chat")
                raised<WeidaException.NegotiationFailed> { server.pair().connect(bound.address()!!) }
                client.shutdown()
                server.shutdown()
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_pair_refused_above_its_peers_limit_is_a_gap(transport: String) = test {
        val limits = mapOf("maxCollectedBody" to 1000)
        val detect = mapOf("ordering" to "detect")
        runtime(limits = limits, options = detect).use { server ->
            runtime(limits = limits, options = detect, reconnect = never).use { client ->
                val bound = server.bind(bindAddress(transport)).pair("/chat")
                val dialling = client.pair()
                dialling.connect(bound.address()!!)
                // Both ways: the dialling pair numbers per connection, the bound pair per claim.
                for ((sender, receiver) in listOf(dialling to bound, bound to dialling)) {
                    sender.send(payload(100))
                    val first = receiver.recv()
                    assertEquals(1UL to 0UL, first.sequence to first.gap)
                    // Number 2 is above the receiver's maxCollectedBody; the send may itself be
                    // refused before its FIN is queued (the refusal race, PATTERNS §1.6).
                    try {
                        sender.send(payload(2000))
                    } catch (_: WeidaException.LimitExceeded) {
                    }
                    raised<WeidaException.LimitExceeded> { receiver.recv() }
                    sender.send(payload(100))
                    val third = receiver.recv()
                    assertEquals(3UL to 1UL, third.sequence to third.gap)
                }
                client.shutdown()
                server.shutdown()
            }
        }
    }
}
