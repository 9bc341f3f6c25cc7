package weida

import com.sun.jna.Callback
import com.sun.jna.CallbackThreadInitializer
import com.sun.jna.Native
import java.nio.Buffer
import java.nio.ByteBuffer
import java.util.Collections
import java.util.WeakHashMap
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicLong
import kotlin.coroutines.resume
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine
import weida.uniffi.BoundSubscriber
import weida.uniffi.Bus
import weida.uniffi.DialingPuller
import weida.uniffi.Exchange
import weida.uniffi.FfiConverterByteArray
import weida.uniffi.FfiConverterTypeWeidaError
import weida.uniffi.Message
import weida.uniffi.Packed
import weida.uniffi.Pair
import weida.uniffi.Puller
import weida.uniffi.Pusher
import weida.uniffi.Replier
import weida.uniffi.Requester
import weida.uniffi.Subscriber
import weida.uniffi.UniffiLib
import weida.uniffi.UniffiWithHandle

/**
 * JNA's direct mapping of the fast lane's C functions (kotlin-swift/uniffi/src/fast.rs): longs,
 * ints, a `ByteArray` and a direct `ByteBuffer`, so that a call allocates no JNA `Structure`.
 */
internal object FastLib {
    init {
        // The library the generated bindings load, by the same name and override.
        Native.register(
            FastLib::class.java,
            System.getProperty("uniffi.component.weida_uniffi.libraryOverride") ?: "weida_uniffi",
        )
    }

    external fun weida_fast_lane(handle: Long, kind: Int): Long
    external fun weida_fast_lane_free(lane: Long)
    external fun weida_fast_send_ready(lane: Long, body: ByteArray, len: Int, out: ByteBuffer, cap: Int): Int
    external fun weida_fast_kept(out: ByteBuffer, cap: Int): Int
    external fun weida_fast_take_ready(lane: Long, max: Int, out: ByteBuffer, cap: Int): Int

    // Waiting calls (kotlin-swift/uniffi/src/fast_wait.rs).
    external fun weida_fast_on_wake(wake: Wake): Int
    external fun weida_fast_wait_recv(lane: Long, max: Int, token: Long): Long
    external fun weida_fast_wait_request(lane: Long, body: ByteArray, len: Int, token: Long): Long
    external fun weida_fast_wait_accept(lane: Long, token: Long): Long
    external fun weida_fast_wait_send_packed(lane: Long, packed: ByteBuffer, len: Int, count: Int, token: Long): Long
    external fun weida_fast_wait_take_body(exchange: Long, token: Long): Long
    external fun weida_fast_wait_reply(exchange: Long, body: ByteArray, len: Int, token: Long): Long
    external fun weida_fast_wait_take(wait: Long, out: ByteBuffer, cap: Int): Int
    external fun weida_fast_wait_free(wait: Long)

    /** What the I/O thread calls when a waiting call ends, with the caller's token. */
    interface Wake : Callback {
        fun invoke(token: Long)
    }
}

/**
 * The coroutines waiting on the fast lane, by token, and the one callback that wakes them:
 * set once per process, kept here for its life, its thread kept attached to the JVM between
 * wake-ups as UniFFI's continuation callback's is (Weida.kt `ioThreadStaysAttached`).
 */
internal object Waits {
    val waiting = ConcurrentHashMap<Long, CancellableContinuation<Unit>>()
    private val tokens = AtomicLong()

    fun token() = tokens.incrementAndGet()

    private val wake = object : FastLib.Wake {
        override fun invoke(token: Long) {
            // Whoever removes the token resumes it: here, or the caller when it finished at
            // once. A cancelled coroutine ignores it.
            waiting.remove(token)?.resume(Unit)
        }
    }

    /** Whether this class's callback is the process's: false if another copy of this library's
     * classes set one first (another class loader), and its waits then take UniFFI's calls. */
    val on: Boolean = run {
        Native.setCallbackThreadInitializer(wake, CallbackThreadInitializer(true, false, "weida-io"))
        FastLib.weida_fast_on_wake(wake) == 0
    }
}

/**
 * One endpoint's fast lane (docs/PERFORMANCE.md, "Kotlin's fast lane", "Kotlin's waiting calls
 * on the fast lane"): `sendReady` and `takeReady`, which finish at once, and the calls that may
 * wait (a receive, `sendMany`, a request, an accept, an accepted exchange's `takeBody` and
 * `reply`, through [waitFor]), without JNA's per-call structures. It answers as those UniFFI
 * calls do, errors included, and where it cannot (an endpoint destroyed, an unexpected panic)
 * it says so and the caller takes the UniFFI call, which reports what happened. Made once per
 * endpoint, held weakly by it, freed by UniFFI's cleaner once neither is reachable; it keeps no
 * endpoint alive. Plain Java 8 and Android APIs only, as the generated bindings use.
 */
internal class FastLane private constructor(private val lane: Long) {
    // Written after each native call: `this`, and so the lane, stays reachable until the call
    // returned (what `Reference.reachabilityFence` does, which Android has only from API 28).
    @Volatile private var last = 0

    /** `sendReady(body)`: 0 queued, 1 not now (the waiting `send` follows), 2 yield first; a
     * failure is thrown as the UniFFI call throws it. */
    fun send(body: ByteArray): Int {
        val buf = BUFFER.get()
        val r = FastLib.weida_fast_send_ready(lane, body, body.size, buf, buf.capacity())
        last = r
        if (r >= 0) {
            if (r == 0) sent.incrementAndGet()
            return r
        }
        if (buf.get(0).toInt() == FAILED) throw FfiConverterTypeWeidaError.read(view(buf, -r))
        // The error did not fit: kept on the Rust side for this thread's next call.
        val big = ByteBuffer.allocateDirect(-r)
        val n = FastLib.weida_fast_kept(big, big.capacity())
        check(n > 0) { "weida: a send's error was lost on its way" }
        throw FfiConverterTypeWeidaError.read(view(big, n))
    }

    /**
     * `takeReady(max)`'s messages: null when nothing is ready, none to yield first; a receive's
     * error is thrown as the UniFFI call throws it. `orElse` answers when the lane cannot.
     */
    fun take(max: UInt, orElse: (UInt) -> Packed?): List<Message>? =
        readAnswer(answered, { b -> FastLib.weida_fast_take_ready(lane, max.toInt(), b, b.capacity()).also { last = it } },
            { orElse(max)?.messages() }) { v -> packedMessages(v) }

    /**
     * `sendMany(bodies)`: false when the lane cannot (take the UniFFI call), or for a batch
     * above KEPT_BUFFER packed. A failure is thrown as the UniFFI call throws it, its `sent`
     * field with it. The bodies are packed into this thread's direct send buffer, which JNA
     * hands to Rust as it is and Rust copies at once, so the buffer is free again when the
     * call has started.
     */
    suspend fun sendMany(bodies: List<ByteArray>): Boolean {
        val size = packedSize(bodies)
        // A batch above KEPT_BUFFER takes the UniFFI call, on the heap: a direct buffer of its
        // own for each would be freed only by the collector.
        if (!Waits.on || size > KEPT_BUFFER) return false
        var buf = SEND_BUFFER.get()
        if (buf.capacity() < size) {
            buf = ByteBuffer.allocateDirect(size)
            SEND_BUFFER.set(buf)
        }
        packInto(buf, bodies)
        return waitFor({ t -> FastLib.weida_fast_wait_send_packed(lane, buf, size, bodies.size, t).also { last = it.toInt() } }) { true }
            ?: false
    }

    /** A receive of up to `max` messages that waits; null when the lane cannot (take the UniFFI
     * calls). Cancelled, it loses nothing: what it took goes back to the front of the queue. */
    suspend fun waitMessages(max: UInt): List<Message>? =
        waitFor({ t -> FastLib.weida_fast_wait_recv(lane, max.toInt(), t).also { last = it.toInt() } }) { v ->
            packedMessages(v)
        }

    /** `request(body)`'s reply body; null when the lane cannot. Cancelled, the request is reset. */
    suspend fun request(body: ByteArray): ByteArray? =
        waitFor({ t -> FastLib.weida_fast_wait_request(lane, body, body.size, t).also { last = it.toInt() } }) { v ->
            FfiConverterByteArray.read(v)
        }

    /** `accept()`'s exchange, one whose own calls take the lane too; null when the lane cannot. */
    suspend fun accept(): Exchange? =
        waitFor({ t -> FastLib.weida_fast_wait_accept(lane, t).also { last = it.toInt() } }) { v ->
            // The handle UniFFI's converter would lift (`FfiConverterTypeExchange.read`).
            FastExchange(v.getLong())
        }

    private class Free(private val lane: Long) : Runnable {
        override fun run() = FastLib.weida_fast_lane_free(lane)
    }

    companion object {
        /**
         * A waiting call through the lane (fast_wait.rs): `start(token)` starts it, the I/O
         * thread's callback wakes this coroutine with the token when it ends (unless it finished at
         * once, the wait's low bit), and `read` reads its answer. Null when it could not start.
         * However this ends, the wait is freed: a call still running is cancelled, an answer not
         * taken goes back where it came from.
         */
        internal suspend fun <T> waitFor(start: (Long) -> Long, read: (ByteBuffer) -> T): T? {
            if (!Waits.on) return null
            val token = Waits.token()
            var wait = 0L
            try {
                suspendCancellableCoroutine<Unit> { c ->
                    Waits.waiting[token] = c
                    wait = start(token)
                    if ((wait == 0L || wait and 1L != 0L) && Waits.waiting.remove(token) != null) c.resume(Unit)
                }
                if (wait == 0L) return null
                return answer(wait, read)
            } finally {
                Waits.waiting.remove(token)
                if (wait != 0L) FastLib.weida_fast_wait_free(wait)
            }
        }

        /** The answer of an ended wait, read as `takeReady`'s is. */
        fun <T> answer(wait: Long, read: (ByteBuffer) -> T): T =
            readAnswer(waited, { b -> FastLib.weida_fast_wait_take(wait, b, b.capacity()) },
                { throw IllegalStateException("weida: a waiting call's answer was lost") }, read)

        /**
         * An answer through this thread's buffer, as fast.rs writes one: `call(buf)` writes it and
         * returns its size (below 0: the lane cannot, `orElse` answers). Tag 0 (or 3, a batch cut
         * to the buffer: this thread's next buffer is twice as large, up to KEPT_BUFFER) is read
         * by `read`, tag 1 is the error thrown as the UniFFI call throws it, both counted in
         * `counter`; tag 2 says the answer, one message or an error larger than the buffer, was
         * kept whole for a buffer that holds it, and `call` runs again with one.
         */
        private inline fun <T> readAnswer(counter: AtomicLong, call: (ByteBuffer) -> Int, orElse: () -> T, read: (ByteBuffer) -> T): T {
            var buf = BUFFER.get()
            while (true) {
                val n = call(buf)
                if (n < 0) return orElse()
                when (buf.get(0).toInt()) {
                    TAKEN, TAKEN_CUT -> {
                        counter.incrementAndGet()
                        val v = read(view(buf, n))
                        if (buf.get(0).toInt() == TAKEN_CUT && buf.capacity() < KEPT_BUFFER) {
                            BUFFER.set(ByteBuffer.allocateDirect(minOf(2 * buf.capacity(), KEPT_BUFFER)))
                        }
                        return v
                    }
                    FAILED -> {
                        counter.incrementAndGet()
                        throw FfiConverterTypeWeidaError.read(view(buf, n))
                    }
                    else -> {
                        buf = ByteBuffer.allocateDirect(if (n > KEPT_BUFFER) n else maxOf(n, 2 * buf.capacity()))
                        if (buf.capacity() <= KEPT_BUFFER) BUFFER.set(buf)
                    }
                }
            }
        }

        /** `takeBody()` of an exchange a lane accepted; null when it cannot (take the UniFFI call). */
        suspend fun takeBody(x: FastExchange): ByteArray? =
            waitFor({ t -> x.lend { h -> FastLib.weida_fast_wait_take_body(h, t) } ?: 0L }) { v ->
                FfiConverterByteArray.read(v)
            }

        /** `reply(body)` of an exchange a lane accepted: false when it cannot. */
        suspend fun reply(x: FastExchange, body: ByteArray): Boolean =
            waitFor({ t -> x.lend { h -> FastLib.weida_fast_wait_reply(h, body, body.size, t) } ?: 0L }) { true } ?: false

        private const val TAKEN = 0
        private const val FAILED = 1
        private const val TAKEN_CUT = 3

        /** The size of a thread's buffer at first, and the most a thread keeps after growing. */
        private const val FIRST_BUFFER = 64 * 1024
        private const val KEPT_BUFFER = 4 * 1024 * 1024
        private val BUFFER = ThreadLocal.withInitial { ByteBuffer.allocateDirect(FIRST_BUFFER) }

        /** A thread's buffer for `sendMany`'s packed bodies, grown to the largest batch up to
         * KEPT_BUFFER (a larger batch takes the UniFFI call). */
        private val SEND_BUFFER = ThreadLocal.withInitial { ByteBuffer.allocateDirect(FIRST_BUFFER) }

        /** The answer in `buf` after its tag byte: `n` bytes in all, big-endian as UniFFI's. */
        private fun view(buf: ByteBuffer, n: Int): ByteBuffer {
            val v = buf.duplicate()
            // Through `Buffer`: its `position` and `limit` return `Buffer` on older Androids.
            (v as Buffer).limit(n)
            (v as Buffer).position(1)
            return v
        }

        private val lanes = Collections.synchronizedMap(WeakHashMap<Any, FastLane>())

        /** `takeReady`'s messages (none: yield first; null: nothing is ready) through `lane`, or
         * through `orElse` (the UniFFI call) without one. */
        fun take(lane: FastLane?, max: UInt, orElse: (UInt) -> Packed?): List<Message>? =
            if (lane != null) lane.take(max, orElse) else orElse(max)?.messages()

        /** Sends the fast lane queued, and takes it answered (a message, nothing, or an
         * error): a test's evidence that the lane was used. */
        internal val sent = AtomicLong()
        internal val answered = AtomicLong()
        internal val waited = AtomicLong()

        // The kinds are fast.rs's `weida_fast_lane`'s. A destroyed endpoint has no lane: the
        // UniFFI call says so (its Rust object may outlive it while a call still holds it).
        fun of(p: Pusher) = lane(p, p.uniffiIsDestroyed, 0) { f -> p.callWithHandle(f) }
        fun of(p: Puller) = lane(p, p.uniffiIsDestroyed, 1) { f -> p.callWithHandle(f) }
        fun of(s: Subscriber) = lane(s, s.uniffiIsDestroyed, 2) { f -> s.callWithHandle(f) }
        fun of(p: DialingPuller) = lane(p, p.uniffiIsDestroyed, 3) { f -> p.callWithHandle(f) }
        fun of(s: BoundSubscriber) = lane(s, s.uniffiIsDestroyed, 4) { f -> s.callWithHandle(f) }
        fun of(p: Pair) = lane(p, p.uniffiIsDestroyed, 5) { f -> p.callWithHandle(f) }
        fun of(b: Bus) = lane(b, b.uniffiIsDestroyed, 6) { f -> b.callWithHandle(f) }
        fun of(r: Requester) = lane(r, r.uniffiIsDestroyed, 7) { f -> r.callWithHandle(f) }
        fun of(r: Replier) = lane(r, r.uniffiIsDestroyed, 8) { f -> r.callWithHandle(f) }

        private inline fun lane(o: Any, destroyed: Boolean, kind: Int, withHandle: ((Long) -> Long) -> Long): FastLane? =
            if (destroyed) null else lanes[o] ?: make(o, kind, withHandle)

        private inline fun make(o: Any, kind: Int, withHandle: ((Long) -> Long) -> Long): FastLane? {
            // An endpoint destroyed meanwhile has no lane: the UniFFI call says so.
            val ptr = try {
                withHandle { h -> FastLib.weida_fast_lane(h, kind) }
            } catch (e: IllegalStateException) {
                return null
            }
            if (ptr == 0L) return null
            val lane = FastLane(ptr)
            UniffiLib.CLEANER.register(lane, Free(ptr))
            // Two threads may make one each for the same endpoint: the first kept wins, the
            // other is freed by the cleaner.
            return lanes.putIfAbsent(o, lane) ?: lane
        }
    }
}

/**
 * An exchange the fast lane accepted: an `Exchange` as UniFFI's converter makes one, whose
 * `takeBody()` and `reply(body)` (Weida.kt) lend its handle to the lane's C functions instead of
 * a UniFFI call, which clones the handle first, with its call status, on every call. The handle
 * stays valid while it is lent: `destroy()` (and `close()`) frees it once no lent call runs.
 */
internal class FastExchange(handle: Long) : Exchange(UniffiWithHandle, handle) {
    // 1 until destroy(), plus one for each call the handle is lent to: the handle is freed at 0.
    private val holds = AtomicLong(1)
    private val destroyed = AtomicBoolean(false)

    /** `block(handle)`, the handle kept from being freed until it returns; null once destroyed. */
    fun <R> lend(block: (Long) -> R): R? {
        while (true) {
            val c = holds.get()
            if (c == 0L) return null
            if (holds.compareAndSet(c, c + 1)) break
        }
        try {
            return block(handle)
        } finally {
            release()
        }
    }

    override fun destroy() {
        if (destroyed.compareAndSet(false, true)) release()
    }

    private fun release() {
        if (holds.decrementAndGet() == 0L) super.destroy()
    }
}
