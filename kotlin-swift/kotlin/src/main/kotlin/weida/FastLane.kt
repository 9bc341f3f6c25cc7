package weida

import com.sun.jna.Native
import java.lang.ref.Cleaner
import java.lang.ref.Reference
import java.nio.ByteBuffer
import java.util.Collections
import java.util.WeakHashMap
import java.util.concurrent.atomic.AtomicLong
import weida.uniffi.BoundSubscriber
import weida.uniffi.Bus
import weida.uniffi.DialingPuller
import weida.uniffi.FfiConverterOptionalTypePacked
import weida.uniffi.FfiConverterTypeWeidaError
import weida.uniffi.Packed
import weida.uniffi.Pair
import weida.uniffi.Puller
import weida.uniffi.Pusher
import weida.uniffi.Subscriber

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
    external fun weida_fast_send_ready(lane: Long, body: ByteArray, len: Int): Int
    external fun weida_fast_take_ready(lane: Long, max: Int, out: ByteBuffer, cap: Int): Int
}

/**
 * One endpoint's fast lane: `sendReady` and `takeReady` without JNA's per-call structures
 * (docs/PERFORMANCE.md, "Kotlin's fast lane"). It answers as those UniFFI calls do, and
 * where it cannot (an endpoint already gone, an unexpected panic) it says so and the caller
 * takes the UniFFI call, which reports what happened. Made once per endpoint, held weakly by
 * it, freed by a cleaner once neither is reachable; it keeps no endpoint alive.
 */
internal class FastLane private constructor(private val lane: Long) {
    /** `sendReady(body)`: 0 queued, 1 not now (the waiting `send` follows), 2 yield first. */
    fun send(body: ByteArray): Int {
        val r = FastLib.weida_fast_send_ready(lane, body, body.size)
        Reference.reachabilityFence(this)
        if (r == 0) sent.incrementAndGet()
        return r
    }

    /**
     * `takeReady(max)`: null when nothing is ready, a `Packed` of no message to yield first; a
     * receive's error is thrown as the UniFFI call throws it. `orElse` answers when the lane
     * cannot.
     */
    fun take(max: UInt, orElse: (UInt) -> Packed?): Packed? {
        var buf = BUFFER.get()
        while (true) {
            val n = FastLib.weida_fast_take_ready(lane, max.toInt(), buf, buf.capacity())
            Reference.reachabilityFence(this)
            if (n < 0) return orElse(max)
            when (buf.get(0).toInt()) {
                TAKEN -> {
                    answered.incrementAndGet()
                    return FfiConverterOptionalTypePacked.read(buf.duplicate().position(1).limit(n))
                }
                FAILED -> {
                    answered.incrementAndGet()
                    throw FfiConverterTypeWeidaError.read(buf.duplicate().position(1).limit(n))
                }
                // Kept whole on the Rust side for the next call: a buffer that holds it.
                else -> {
                    buf = ByteBuffer.allocateDirect(Integer.highestOneBit(n - 1) shl 1)
                    if (buf.capacity() <= KEPT_BUFFER) BUFFER.set(buf)
                }
            }
        }
    }

    private class Free(private val lane: Long) : Runnable {
        override fun run() = FastLib.weida_fast_lane_free(lane)
    }

    companion object {
        private const val TAKEN = 0
        private const val FAILED = 1

        /** The size of a thread's buffer at first, and the most a thread keeps after growing. */
        private const val FIRST_BUFFER = 64 * 1024
        private const val KEPT_BUFFER = 4 * 1024 * 1024
        private val BUFFER = ThreadLocal.withInitial { ByteBuffer.allocateDirect(FIRST_BUFFER) }

        private val CLEANER = Cleaner.create()
        private val lanes = Collections.synchronizedMap(WeakHashMap<Any, FastLane>())

        /** `takeReady` through `lane`, or through `orElse` (the UniFFI call) without one. */
        fun take(lane: FastLane?, max: UInt, orElse: (UInt) -> Packed?): Packed? =
            if (lane != null) lane.take(max, orElse) else orElse(max)

        /** Sends the fast lane queued, and takes it answered (a message, nothing, or an
         * error): a test's evidence that the lane was used. */
        internal val sent = AtomicLong()
        internal val answered = AtomicLong()

        // The kinds are fast.rs's `weida_fast_lane`'s.
        fun of(p: Pusher): FastLane? = lanes[p] ?: make(p, 0) { f -> p.callWithHandle(f) }
        fun of(p: Puller): FastLane? = lanes[p] ?: make(p, 1) { f -> p.callWithHandle(f) }
        fun of(s: Subscriber): FastLane? = lanes[s] ?: make(s, 2) { f -> s.callWithHandle(f) }
        fun of(p: DialingPuller): FastLane? = lanes[p] ?: make(p, 3) { f -> p.callWithHandle(f) }
        fun of(s: BoundSubscriber): FastLane? = lanes[s] ?: make(s, 4) { f -> s.callWithHandle(f) }
        fun of(p: Pair): FastLane? = lanes[p] ?: make(p, 5) { f -> p.callWithHandle(f) }
        fun of(b: Bus): FastLane? = lanes[b] ?: make(b, 6) { f -> b.callWithHandle(f) }

        private inline fun make(o: Any, kind: Int, withHandle: ((Long) -> Long) -> Long): FastLane? {
            // An endpoint already destroyed has no lane: the UniFFI call says so.
            val ptr = try {
                withHandle { h -> FastLib.weida_fast_lane(h, kind) }
            } catch (e: IllegalStateException) {
                return null
            }
            if (ptr == 0L) return null
            val lane = FastLane(ptr)
            CLEANER.register(lane, Free(ptr))
            // Two threads may make one each for the same endpoint: the first kept wins, the
            // other is freed by its cleaner.
            return lanes.putIfAbsent(o, lane) ?: lane
        }
    }
}
