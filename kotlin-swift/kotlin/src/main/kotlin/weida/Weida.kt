// The idiomatic Kotlin layer over the UniFFI-generated weida.uniffi (weida_uniffi.kt, checked
// for drift by `./dev kotlin`). It converts and nothing more: every wait is a `suspend fun`
// (the generated ones already are; a cancelled coroutine drops the Rust future, which cancels
// the operation in the core), receiving is a `Flow`, objects are `AutoCloseable` (`use {}`),
// and errors are the generated sealed `WeidaException`, one subclass per core code.
@file:JvmName("Weida")

package weida

import com.sun.jna.CallbackThreadInitializer
import com.sun.jna.Native
import java.nio.Buffer
import java.nio.ByteBuffer
import java.nio.ByteOrder
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.yield
import weida.uniffi.Acceptor
import weida.uniffi.BoundPusher
import weida.uniffi.BoundSubscriber
import weida.uniffi.Bus
import weida.uniffi.DialingPublisher
import weida.uniffi.DialingPuller
import weida.uniffi.EndpointOptions
import weida.uniffi.Exchange
import weida.uniffi.Identity
import weida.uniffi.Incoming
import weida.uniffi.IncomingTransfer
import weida.uniffi.Message
import weida.uniffi.MetaEntry
import weida.uniffi.OptionValue
import weida.uniffi.Packed
import weida.uniffi.Peer
import weida.uniffi.PeerEvent
import weida.uniffi.Pair
import weida.uniffi.PeerEvents
import weida.uniffi.Received
import weida.uniffi.Cancellation
import weida.uniffi.RawPeer
import weida.uniffi.Puller
import weida.uniffi.Pusher
import weida.uniffi.Replier
import weida.uniffi.Requester
import weida.uniffi.Runtime
import weida.uniffi.RuntimeOptions
import weida.uniffi.Subscriber
import weida.uniffi.SurveyRun
import weida.uniffi.Surveyor
import weida.uniffi.Trust
import weida.uniffi.WeidaException

typealias Meta = Map<String, ByteArray>

/** An option's value from a Kotlin value: a whole number, a number, a name, a flag, or null (off). */
fun option(v: Any?): OptionValue = when (v) {
    null -> OptionValue.Off
    is Int -> OptionValue.Whole(v.toLong())
    is Long -> OptionValue.Whole(v)
    is Double -> OptionValue.Number(v)
    is String -> OptionValue.Name(v)
    is Boolean -> OptionValue.Flag(v)
    else -> OptionValue.Name(v.toString())
}

private fun options(m: Map<String, Any?>?) = m?.mapValues { option(it.value) }

/**
 * weida's I/O thread calls UniFFI's continuation callback when a Rust future a coroutine waits
 * on wakes. JNA attached that native thread to the JVM for each call and detached it after (a
 * `java.lang.Thread` made and torn down per wake-up): in a profile of the batched row that was
 * nearly a fifth of the I/O threads' time, and a Java thread object to collect each time
 * (docs/PERFORMANCE.md, "The Kotlin I/O thread stays attached"). Kept attached instead, as a
 * daemon named `weida-io`, so it never holds the JVM open, for the life of the process (weida's
 * I/O thread never ends; JNA detaches any other native thread as it exits). Set when this
 * file's class loads, which any function here does, `runtime()` first (PatternsTest
 * `the_io_thread_stays_attached_to_the_jvm_between_wake_ups`). JNA reads it once, when it first
 * builds the callback's native stub: a program that awaits a generated `weida.uniffi` call
 * before it calls anything here keeps JNA's attach and detach per wake-up.
 */
@Suppress("unused")
private val ioThreadStaysAttached: Unit = Native.setCallbackThreadInitializer(
    weida.uniffi.uniffiRustFutureContinuationCallbackImpl,
    CallbackThreadInitializer(true, false, "weida-io"),
)

/**
 * A runtime: `Runtime(limits = mapOf("idleTimeoutMs" to 500))`, option names in camelCase and
 * durations in milliseconds, as Node spells them (docs/BINDINGS.md, Kotlin column).
 */
fun runtime(
    identity: Identity? = null,
    trust: Trust? = null,
    limits: Map<String, Any?> = emptyMap(),
    reconnect: Map<String, Any?>? = null,
    options: Map<String, Any?> = emptyMap(),
): Runtime = Runtime(
    RuntimeOptions(identity, trust, options(limits)!!, options(reconnect), options(options)!!),
)

/** An endpoint's options (`maxCollectedBody`, `endpointQueue`, `sendTimeoutMs`, `outbox…`). */
fun endpointOptions(options: Map<String, Any?> = emptyMap(), reconnect: Map<String, Any?>? = null) =
    EndpointOptions(options(options)!!, options(reconnect))

/** A runtime that never redials: `reconnect = never`. */
val never: Map<String, Any?> = mapOf("giveUpAfterAttempts" to 0)

suspend fun Runtime.bind(address: String) = bind(address, null)
fun Runtime.pusher() = pusher(null)
fun Runtime.requester() = requester(null)
fun Runtime.subscriber() = subscriber(null)
fun Runtime.surveyor() = surveyor(null)

/** A publisher that dials collectors (`Listener.subscriber`). */
fun Runtime.publisher() = publisher(null)

/** A dialling pair: `connect` it to a bound pair (`Listener.pair`). */
fun Runtime.pair() = pair(null)

/** A puller that dials bound pushers (`Listener.pusher`). */
fun Runtime.puller() = puller(null)

/** A bus member bound at `path` on `listener` (this runtime's). */
fun Runtime.bus(listener: weida.uniffi.Listener, path: String) = bus(listener, path, null)
fun weida.uniffi.Listener.puller(path: String) = puller(path, null)
fun weida.uniffi.Listener.replier(path: String) = replier(path, null)

/** A respondent: a `Replier` by another name (surveys arrive as exchanges). */
fun weida.uniffi.Listener.respondent(path: String) = respondent(path, null)
fun weida.uniffi.Listener.publisher(path: String) = publisher(path, null)

/** A collector bound at `path`: dialling publishers feed it. */
fun weida.uniffi.Listener.subscriber(path: String) = subscriber(path, null)

/** A pair bound at `path`: one dialling pair at a time claims it. */
fun weida.uniffi.Listener.pair(path: String) = pair(path, null)

/** A pusher bound at `path`: the pullers that connect share its messages, round-robin. */
fun weida.uniffi.Listener.pusher(path: String) = pusher(path, null)

/** A raw dialling endpoint (core `Peer`): `connect` it to acceptors, then `open` or `exchange`. */
fun Runtime.peer() = peer(null)

/** An acceptor bound at `path`: one-way transfers and exchanges (`Incoming`). */
fun weida.uniffi.Listener.acceptor(path: String) = acceptor(path, null)

suspend fun Pusher.connect(address: String) = connect(address, true)
suspend fun Requester.connect(address: String) = connect(address, true)
suspend fun Subscriber.connect(address: String) = connect(address, true)
suspend fun Surveyor.connect(address: String) = connect(address, true)
suspend fun Bus.connect(address: String) = connect(address, true)
suspend fun DialingPublisher.connect(address: String) = connect(address, true)
suspend fun RawPeer.connect(address: String) = connect(address, true)

/** Queues a copy for every live collector connected; how many. Never waits. */
fun DialingPublisher.publish(topic: String, body: ByteArray): UInt = publish(topic, body, null)

/** The next selected message. Cancelled, it loses nothing. */
suspend fun BoundSubscriber.recv(): Message =
    receive(1, FastLane.of(this), this::takeReady, this::received, this::recvInto).first()

fun BoundSubscriber.messages(): Flow<Message> = untilClosed { recv() }

suspend fun Pair.connect(address: String) = connect(address, true)

/** Sends a whole message to the other end; a bound pair waits for a peer. */
suspend fun Pair.send(body: ByteArray) = send(body, null)

/** The next message from the other end. Cancelled, it loses nothing. */
suspend fun Pair.recv(): Message =
    receive(1, FastLane.of(this), this::takeReady, this::received, this::recvInto).first()

fun Pair.messages(): Flow<Message> = untilClosed { recv() }

/** Sends a whole message to the next puller; waits for one, bounded by `sendTimeoutMs`. */
suspend fun BoundPusher.send(body: ByteArray) = send(body, null)

suspend fun DialingPuller.connect(address: String) = connect(address, true)

/** The next message. Cancelled, it loses nothing. */
suspend fun DialingPuller.recv(): Message =
    receive(1, FastLane.of(this), this::takeReady, this::received, this::recvInto).first()

fun DialingPuller.messages(): Flow<Message> = untilClosed { recv() }

/** Queues a copy for every live member connected; how many. */
suspend fun Bus.send(body: ByteArray): UInt = send(body, null)

/** The next message another member sent. Cancelled, it loses nothing. */
suspend fun Bus.recv(): Message =
    receive(1, FastLane.of(this), this::takeReady, this::received, this::recvInto).first()

/**
 * Sends a whole message: queued at once in one FFI call when its peer's lane has room
 * (`sendReady`), else the waiting `send`; every READY_STREAK (64) operations in a row that
 * finished at once, it yields to the dispatcher first, as receives do.
 */
suspend fun Pusher.send(body: ByteArray) {
    when (FastLane.of(this)?.send(body) ?: sendReady(body).toInt()) {
        0 -> return
        2 -> yield()
    }
    send(body, null)
}
/**
 * Sends each body as its own message, in order, in one call; a failure's `sent` field says how
 * many were sent. The bodies cross packed ([packed]'s layout), one value instead of a list that
 * UniFFI writes and Rust lifts body by body: in a thread's direct buffer through the fast lane
 * (FastLane.kt) when the pusher has one, else in one `ByteArray`.
 */
suspend fun Pusher.sendMany(bodies: List<ByteArray>) {
    if (FastLane.of(this)?.sendMany(bodies) == true) return
    sendPacked(packed(bodies), bodies.size.toUInt(), null)
}

/**
 * `bodies` in weida-ffi's packed layout (core/ffi/src/packed.rs): end to end, zeros to a
 * multiple of 4, then each body's end as a little-endian u32. Above what a `ByteArray` holds,
 * an IllegalArgumentException (UniFFI could not carry it either).
 */
internal fun packed(bodies: List<ByteArray>): ByteArray {
    val out = ByteArray(packedSize(bodies))
    packInto(ByteBuffer.wrap(out), bodies)
    return out
}

/** The bytes `bodies` take packed ([packed]); above what a `ByteArray` holds, an
 * IllegalArgumentException. */
internal fun packedSize(bodies: List<ByteArray>): Int {
    var total = 0L
    for (b in bodies) total += b.size
    val size = ((total + 3) and 3L.inv()) + 4L * bodies.size
    require(size <= Int.MAX_VALUE - 8) { "a batch of $size bytes packed is above what a ByteArray holds" }
    return size.toInt()
}

/** Writes `bodies` packed ([packed]) at the start of `out`, which holds [packedSize] of them
 * (zeroed where the padding goes, or not: the padding is written). */
internal fun packInto(out: ByteBuffer, bodies: List<ByteArray>) {
    val ends = out.duplicate().order(ByteOrder.LITTLE_ENDIAN)
    val endsAt = packedSize(bodies) - 4 * bodies.size
    val at = out.duplicate()
    (at as Buffer).position(0)
    var end = 0
    for ((i, b) in bodies.withIndex()) {
        at.put(b)
        end += b.size
        ends.putInt(endsAt + 4 * i, end)
    }
    while (end < endsAt) at.put(end++, 0)
}

/** The reply's body. Cancelled, the request is reset and the replier sees Canceled. Through
 * the fast lane (FastLane.kt) when the requester has one. */
suspend fun Requester.request(body: ByteArray): ByteArray =
    FastLane.of(this)?.request(body) ?: request(body, null)
/** Replies with `body` and finishes the reply; through the fast lane (FastLane.kt) for an
 * exchange `Replier.accept()` took on it. */
suspend fun Exchange.reply(body: ByteArray) {
    if (this is FastExchange && FastLane.reply(this, body)) return
    reply(body, null)
}

/** The whole request body, bounded by `maxCollectedBody`; through the fast lane as `reply`. */
suspend fun Exchange.takeBody(): ByteArray =
    (if (this is FastExchange) FastLane.takeBody(this) else null) ?: takeBody(null)

/** The next message. Cancelled, it loses nothing: what it took goes back to the queue. */
suspend fun Puller.recv(): Message =
    receive(1, FastLane.of(this), this::takeReady, this::received, this::recvInto).first()

/** Up to `max` messages (at least one). */
suspend fun Puller.recvMany(max: Int): List<Message> =
    receive(max, FastLane.of(this), this::takeReady, this::received, this::recvInto)

/** The next message. Cancelled, it loses nothing. */
suspend fun Subscriber.recv(): Message =
    receive(1, FastLane.of(this), this::takeReady, this::received, this::recvInto).first()

suspend fun Subscriber.recvMany(max: Int): List<Message> =
    receive(max, FastLane.of(this), this::takeReady, this::received, this::recvInto)

/**
 * A receive of up to `max` messages (at least one): those ready now in one FFI call with no
 * future (`takeReady`), else the waiting receive. Both take the endpoint's fast lane
 * (FastLane.kt) when it has one, with no JNA structure per call; without one, `takeReady` and
 * the UniFFI calls: the waiting receive into a `Received`, which gives back what it took if
 * the coroutine is cancelled (the lane's gives it back too). Every READY_STREAK (64)
 * operations in a row that finished at once, `takeReady` answers an empty batch and this
 * yields to the dispatcher before the waiting receive, so a stream of ready messages cannot
 * starve other coroutines (PatternsTest
 * `a_stream_of_ready_messages_leaves_the_dispatcher_to_other_coroutines`). Every path brings
 * the batch packed, one record for all of it: through JNA a record per message cost more than
 * the message (docs/PERFORMANCE.md, "Kotlin").
 */
private suspend inline fun receive(
    max: Int,
    lane: FastLane?,
    noinline takeReady: (UInt) -> Packed?,
    received: () -> Received,
    crossinline into: suspend (UInt, Received, Cancellation?) -> Unit,
): List<Message> {
    val now = FastLane.take(lane, max.toUInt(), takeReady)
    if (now != null) {
        if (now.isNotEmpty()) return now
        yield()
    }
    val waited = lane?.waitMessages(max.toUInt())
    if (waited != null) return waited
    return received().use { into(max.toUInt(), it, null); it.takePacked().messages() }
}

/**
 * The messages of a packed batch, in order. The bodies are in weida-ffi's packed layout (end to
 * end, zeros to a multiple of 4, then each body's end as a little-endian u32:
 * core/ffi/src/packed.rs), the index and the origins beside them big-endian
 * (kotlin-swift/uniffi/src/packed.rs).
 */
internal fun Packed.messages(): List<Message> =
    messages(count.toInt(), ByteBuffer.wrap(bodies), 0, bodies.size, index, origins)

/**
 * The messages of a `Packed` as UniFFI writes an `Option<Packed>`, read in place from `v` (the
 * fast lane's answer: FastLane.kt), each body copied once, from `v` into its own array; null
 * for None. The layout is the record's, field by field: the option's tag, the count (u32),
 * then `bodies`, `index` and `origins`, each an i32 length and its bytes (kotlin-swift/uniffi
 * packed.rs `write_some`; PatternsTest reads every batch through here).
 */
internal fun packedMessages(v: ByteBuffer): List<Message>? {
    if (v.get().toInt() == 0) return null
    val count = v.getInt()
    val bodiesLength = v.getInt()
    val bodiesAt = v.position()
    (v as Buffer).position(bodiesAt + bodiesLength)
    val index = ByteArray(v.getInt()).also { v.get(it) }
    val origins = ByteArray(v.getInt()).also { v.get(it) }
    return messages(count, v, bodiesAt, bodiesLength, index, origins)
}

/** `n` messages whose packed bodies are the `length` bytes of `all` from `at`. */
private fun messages(n: Int, all: ByteBuffer, at: Int, length: Int, index: ByteArray, origins: ByteArray): List<Message> {
    val origin = origins(origins)
    val ix = ByteBuffer.wrap(index) // big-endian, as Rust wrote it
    val ends = all.duplicate().order(ByteOrder.LITTLE_ENDIAN)
    val src = all.duplicate()
    val endsAt = at + length - 4 * n
    val out = ArrayList<Message>(n)
    var from = at
    for (i in 0 until n) {
        val end = at + ends.getInt(endsAt + 4 * i)
        val o = origin[ix.getShort().toInt() and 0xffff]
        val flags = ix.get().toInt()
        val sequence = if (flags and 1 != 0) ix.getLong().toULong() else null
        val gap = if (flags and 2 != 0) ix.getLong().toULong() else null
        val body = ByteArray(end - from)
        (src as Buffer).position(from)
        src.get(body)
        out.add(Message(body, o.metadata, o.path, o.peer, o.topic, sequence, gap))
        from = end
    }
    return out
}

/** Every message, until the endpoint ends (`Closed` ends the flow; another error is thrown). */
fun Puller.messages(): Flow<Message> = untilClosed { recv() }

fun Subscriber.messages(): Flow<Message> = untilClosed { recv() }

fun Bus.messages(): Flow<Message> = untilClosed { recv() }

/** Every message as a stream (`IncomingTransfer`, its body read in parts), until the puller
 * ends. */
fun Puller.transfers(): Flow<IncomingTransfer> = untilClosed { accept() }

/** The stream's chunks, until the writer's FIN (a cancelled stream throws `Canceled`, never
 * ends short). */
fun IncomingTransfer.chunks(): Flow<ByteArray> = flow {
    while (true) emit(readChunk() ?: break)
}

/** The request's chunks, until its end. */
fun Exchange.chunks(): Flow<ByteArray> = flow {
    while (true) emit(readChunk() ?: break)
}

/** The stream's metadata value `name`, if it came with one. */
fun IncomingTransfer.meta(name: String): ByteArray? = metadata().firstOrNull { it.name == name }?.value

/** Every stream an acceptor takes (`Incoming.Stream` or `Incoming.Exchange`), until it ends. */
fun Acceptor.incoming(): Flow<Incoming> = untilClosed { accept() }

/** Every exchange, until the replier ends. */
fun Replier.exchanges(): Flow<Exchange> = untilClosed { accept() }

/** The next exchange, through the fast lane (FastLane.kt) when the replier has one. Cancelled
 * just as an exchange arrives, that exchange is dropped and its requester sees Canceled. */
suspend fun Replier.accept(): Exchange = FastLane.of(this)?.accept() ?: accept(null)

/** Asks every live respondent `body`; the run of their answers until `deadlineMs`. */
suspend fun Surveyor.survey(body: ByteArray, deadlineMs: Double): SurveyRun = survey(body, deadlineMs, null)

/** The next answer, or null once every respondent answered or the deadline passed; a respondent
 * that refused or failed is thrown as its error, and the next call goes on with the others. */
suspend fun SurveyRun.answer(): Message? = next(null)

/** Every answer until the run ends, a respondent's failure as a `Result.failure` (one failure
 * ends nothing). */
fun SurveyRun.answers(): Flow<Result<Message>> = flow {
    while (true) {
        val a = try {
            next(null) ?: break
        } catch (e: WeidaException) {
            emit(Result.failure(e))
            continue
        }
        emit(Result.success(a))
    }
}

/** Every event, until the endpoint is gone. */
fun PeerEvents.asFlow(): Flow<PeerEvent> = flow {
    while (true) emit(next() ?: break)
}

private fun <T> untilClosed(next: suspend () -> T): Flow<T> = flow {
    while (true) {
        val v = try {
            next()
        } catch (e: WeidaException.Closed) {
            break
        }
        emit(v)
    }
}

/** The message's metadata value `name`, if it came with one. */
fun Message.meta(name: String): ByteArray? = metadata.firstOrNull { it.name == name }?.value

/** The code's name (`CONNECTION_LOST`, or `ABORTED`, `BUSY`, `PANIC` for the binding's own). */
val WeidaException.code: String
    get() = when (this) {
        is WeidaException.NotConnected -> code
        is WeidaException.ConnectionLost -> code
        is WeidaException.Indeterminate -> code
        is WeidaException.Untrusted -> code
        is WeidaException.UnknownEndpoint -> code
        is WeidaException.Unsupported -> code
        is WeidaException.Rejected -> code
        is WeidaException.Canceled -> code
        is WeidaException.LimitExceeded -> code
        is WeidaException.Timeout -> code
        is WeidaException.InvalidAddress -> code
        is WeidaException.NegotiationFailed -> code
        is WeidaException.Protocol -> code
        is WeidaException.InvalidConfig -> code
        is WeidaException.InvalidFilter -> code
        is WeidaException.Closed -> code
        is WeidaException.Io -> code
        is WeidaException.Unreachable -> code
        is WeidaException.Aborted -> code
        is WeidaException.Busy -> code
        is WeidaException.Panic -> code
    }

/** What messages of a packed batch share (`Packed.origins` in kotlin-swift/uniffi/src/packed.rs). */
private class Origin(val metadata: List<MetaEntry>, val path: String, val peer: Peer?, val topic: String?)

/** Every origin in `all`, in order. */
private fun origins(all: ByteArray): List<Origin> {
    val o = ByteBuffer.wrap(all) // big-endian, as Rust wrote it
    fun bytes(): ByteArray = ByteArray(o.getInt()).also { o.get(it) }
    fun string(): String {
        val n = o.getInt()
        val s = String(all, o.position(), n, Charsets.UTF_8)
        o.position(o.position() + n)
        return s
    }
    val out = ArrayList<Origin>()
    while (o.hasRemaining()) {
        val path = string()
        val peer = when (o.get().toInt()) {
            1 -> Peer.Key(string())
            2 -> Peer.Local(o.getInt().toUInt(), o.getInt().toUInt(), o.getInt())
            else -> null
        }
        val topic = if (o.get().toInt() == 1) string() else null
        val metadata = List(o.getInt()) { MetaEntry(string(), bytes()) }
        out.add(Origin(metadata, path, peer, topic))
    }
    return out
}
