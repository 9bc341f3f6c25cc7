// The background behaviours of bound endpoints (conformance/README.md, "Background behaviours
// and events"): each endpoint serves in a coroutine of its own, each exchange in another, and
// says what happened as events.
package weida.conformance

import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.first
import weida.chunks
import weida.recv
import weida.reply
import weida.takeBody
import weida.uniffi.Acceptor
import weida.uniffi.Exchange
import weida.uniffi.Incoming
import weida.uniffi.IncomingTransfer
import weida.uniffi.Puller
import weida.uniffi.Replier
import weida.uniffi.Subscriber
import weida.uniffi.WeidaException

/** A flag a coroutine can wait for: set by a subscriber's connect, cleared once it has no peer. */
class Flag {
    private val state = MutableStateFlow(false)
    fun set() { state.value = true }
    fun clear() { state.value = false }
    suspend fun await() { state.first { it } }
}

class Background(private val agent: Agent) {
    private val out get() = agent.out

    suspend fun serveReplier(replier: Replier, handle: String, mode: String, reason: String) {
        while (true) {
            val ex = try {
                replier.accept(null)
            } catch (e: WeidaException) {
                out.eventError("closed", handle, e)
                return
            }
            out.event("accepted", handle, mapOf("path" to ex.path(), "metadata" to metadataJson(ex.metadata()), "peer" to peerJson(ex.peer())))
            agent.spawn("an exchange of $handle") { exchange(ex, handle, mode, reason) }
        }
    }

    /** An acceptor: each exchange answered in `mode` as a replier's, each one-way stream read as
     * a `stream` puller's; `accepted` for both. */
    suspend fun serveAcceptor(acceptor: Acceptor, handle: String, mode: String, reason: String) {
        while (true) {
            val incoming = try {
                acceptor.accept(null)
            } catch (e: WeidaException) {
                out.eventError("closed", handle, e)
                return
            }
            when (incoming) {
                is Incoming.Exchange -> {
                    val ex = incoming.exchange
                    out.event("accepted", handle, mapOf("path" to ex.path(), "metadata" to metadataJson(ex.metadata()), "peer" to peerJson(ex.peer())))
                    agent.spawn("an exchange of $handle") { exchange(ex, handle, mode, reason) }
                }
                is Incoming.Stream -> {
                    val t = incoming.transfer
                    out.event("accepted", handle, metaJson(t))
                    agent.spawn("a transfer to $handle") { t.use { readTransfer(it, handle) } }
                }
            }
        }
    }

    /** Answers `ex` in `mode`, then closes it: a Kotlin handle is freed by `close`, not by the
     * garbage collector, and an exchange left open would keep its requester waiting. Only a
     * `hold` keeps it. */
    private suspend fun exchange(ex: Exchange, handle: String, mode: String, reason: String) {
        try {
            answer(ex, handle, mode, reason)
        } finally {
            if (mode != "hold") ex.close()
        }
    }

    private suspend fun answer(ex: Exchange, handle: String, mode: String, reason: String) {
        if (mode == "reject") {
            try {
                ex.reject(reason, null)
                out.event("rejected", handle)
            } catch (e: WeidaException) {
                out.eventError("reply_failed", handle, e)
            }
            return
        }
        if (mode == "stream_echo") {
            streamEcho(ex, handle)
            return
        }
        val meta = ex.metadata()
        val body = try {
            ex.takeBody()
        } catch (e: WeidaException) {
            out.eventError("request_failed", handle, e)
            return
        }
        out.event("request", handle, mapOf("body" to summary(body), "metadata" to metadataJson(meta)))
        when (mode) {
            "echo" -> try {
                ex.reply(body, meta.associate { it.name to it.value }, null)
                out.event("replied", handle)
            } catch (e: WeidaException) {
                out.eventError("reply_failed", handle, e)
            }
            "hold" -> agent.held.add(ex) // kept, never answered
            "drop" -> {
                ex.close() // dropped unanswered, now (closing twice is harmless)
                out.event("dropped", handle)
            }
        }
    }

    /** Reads the request chunk by chunk, then writes the same chunks back through `openReply`
     * (which takes the whole exchange, so the request is read to its end first). */
    private suspend fun streamEcho(ex: Exchange, handle: String) {
        val meta = ex.metadata()
        val tally = Tally()
        val chunks = mutableListOf<ByteArray>()
        while (true) {
            val c = (try {
                ex.readChunk()
            } catch (e: WeidaException) {
                out.eventError("request_failed", handle, e)
                return
            }) ?: break
            if (chunks.isEmpty()) out.event("receiving", handle, mapOf("size" to c.size))
            tally.add(c)
            chunks += c
        }
        out.event("request", handle, mapOf("body" to tally.summary(), "metadata" to metadataJson(meta)))
        try {
            ex.openReply(meta.associate { it.name to it.value }).use { reply ->
                for (c in chunks) reply.write(c)
                reply.finish().close()
            }
        } catch (e: WeidaException) {
            out.eventError("reply_failed", handle, e)
            return
        }
        out.event("replied", handle)
    }

    suspend fun servePuller(puller: Puller, handle: String) = receiveEach(handle) { puller.recv() }

    /** A `stream` puller: each message accepted as a stream (`accepted`), then read in chunks
     * in a coroutine of its own (`receiving` at the first chunk, `received` at the end), until
     * `closed`. */
    suspend fun servePullerStreams(puller: Puller, handle: String) {
        while (true) {
            val t = try {
                puller.accept()
            } catch (e: WeidaException) {
                out.eventError("closed", handle, e)
                return
            }
            out.event("accepted", handle, metaJson(t))
            agent.spawn("a transfer to $handle") { t.use { readTransfer(it, handle) } }
        }
    }

    private suspend fun readTransfer(t: IncomingTransfer, handle: String) {
        val tally = Tally()
        var first = true
        while (true) {
            val c = (try {
                t.readChunk()
            } catch (e: WeidaException) {
                out.eventError("receive_failed", handle, e)
                return
            }) ?: break
            if (first) {
                first = false
                out.event("receiving", handle, mapOf("size" to c.size))
            }
            tally.add(c)
        }
        out.event("received", handle, metaJson(t) + mapOf("body" to tally.summary()))
    }

    private fun metaJson(t: IncomingTransfer): Obj =
        linkedMapOf("path" to t.path(), "metadata" to metadataJson(t.metadata()), "peer" to peerJson(t.peer()))

    /** Any endpoint's receiving, as a `recv` puller's (a pair's, a dialling puller's). */
    suspend fun receive(handle: String, recv: suspend () -> weida.uniffi.Message) = receiveEach(handle, recv)

    /** A bus member's receiving, as a `recv` puller's. */
    suspend fun serveBus(bus: weida.uniffi.Bus, handle: String) = receiveEach(handle) { bus.recv() }

    /** A collector: each message kept a `received` event with its topic, until `closed`. */
    suspend fun serveCollector(c: weida.uniffi.BoundSubscriber, handle: String) {
        while (true) {
            val m = try {
                c.recv()
            } catch (e: WeidaException.Closed) {
                out.eventError("closed", handle, e)
                return
            } catch (e: WeidaException) {
                out.eventError("receive_failed", handle, e)
                continue
            }
            out.event("received", handle, copyJson(m))
        }
    }

    /** `recv` in a loop: `received` per message (with its sequence and gap under PerProducer
     * ordering, PATTERNS §1.7, else null), `receive_failed` for one that failed, `closed` at the
     * end. */
    private suspend fun receiveEach(handle: String, recv: suspend () -> weida.uniffi.Message) {
        while (true) {
            val m = try {
                recv()
            } catch (e: WeidaException.Closed) {
                out.eventError("closed", handle, e)
                return
            } catch (e: WeidaException) {
                out.eventError("receive_failed", handle, e)
                continue
            }
            out.event("received", handle, messageJson(m) + mapOf("sequence" to m.sequence, "gap" to m.gap))
        }
    }

    /** A subscriber's `recv` raises at once before any connect (NOT_CONNECTED) and after every
     * connection ended (CONNECTION_LOST): such an error is reported once, then the loop waits
     * for the next successful connect instead of spinning. */
    suspend fun serveSubscriber(sub: Subscriber, handle: String) {
        val connected = agent.connected.getValue(sub)
        while (true) {
            connected.await()
            val m = try {
                sub.recv()
            } catch (e: WeidaException.Closed) {
                out.eventError("closed", handle, e)
                return
            } catch (e: WeidaException) {
                if ((e is WeidaException.NotConnected || e is WeidaException.ConnectionLost) && sub.peerCount() == 0u) {
                    connected.clear()
                }
                out.eventError("receive_failed", handle, e)
                continue
            }
            out.event("received", handle, copyJson(m))
        }
    }
}
