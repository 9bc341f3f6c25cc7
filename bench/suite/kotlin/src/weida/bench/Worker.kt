// weida's Kotlin binding, worker of the benchmark suite (bench/README.md, "The suite"):
// Push/Pull and Req/Rep over QUIC (weida://127.0.0.1), AF_UNIX and in process, with the command
// line, the lines and the JSON result of bench/suite/workers/common.py and node/common.mjs, and
// the cases of node/weida_worker.mjs (no Pub/Sub). Built by bench/suite/setup.sh (pom.xml next
// to src/); run.py starts it as
//
//   java -Djna.library.path=target/release -cp CLASSES:JARS weida.bench.WorkerKt \
//       --pattern push_pull --transport quic --size 64 [--variant await|batch] [--role bind|dial]
//
// Variant "await" (the default): one suspend call per send and per receive, `pusher.send(body)`
// and `puller.recv()` (what `puller.messages()` collects), `requester.request(body)`. Variant
// "batch" (Push/Pull only): `pusher.sendMany(bodies)` of 256 and `puller.recvMany(256)`, as the
// Python and Node workers' "batch".
//
// Every coroutine runs on one thread, runBlocking's event loop on the main thread, as the Node
// and Python workers run on their one event loop; the binding's completions arrive from the
// core's threads and are resumed there. Both ends in one process (`--role both`): a server
// runtime and a client runtime. Two processes (`--role bind` / `dial`): the bind side has the
// puller or the replier and prints `ADDRESS`, the dial side the pusher or the requester; the
// measuring side (the puller, the requester) prints `WINDOW start` / `WINDOW end`, the
// puller's window opening after its first message; the other side runs until it is
// terminated, or until its lifetime (warmup + 4 × window + 30 s) is over.
package weida.bench

import java.io.File
import java.io.FileDescriptor
import java.io.FileOutputStream
import java.io.PrintStream
import kotlin.system.exitProcess
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import weida.accept
import weida.bind
import weida.connect
import weida.puller
import weida.pusher
import weida.recv
import weida.recvMany
import weida.replier
import weida.reply
import weida.request
import weida.requester
import weida.runtime
import weida.send
import weida.sendMany
import weida.takeBody
import weida.uniffi.Puller
import weida.uniffi.Runtime

const val SYSTEM = "weida-kotlin"
const val BATCH = 256
val PATTERNS = listOf("push_pull", "req_rep", "pub_sub")
val TRANSPORTS = listOf("quic", "unix", "inproc")
val VARIANTS = listOf("await", "batch")
val ROLES = listOf("both", "bind", "dial")

class Usage(message: String) : Exception(message)

class Args(
    val pattern: String,
    val transport: String,
    val size: Int,
    val width: Int,
    val secs: Double,
    val warmup: Double,
    val variant: String,
    val role: String,
    val address: String?,
) {
    /** How long a process of a two-process row may live: its peer's stall limit and setup. */
    val lifetime get() = warmup + 4 * secs + 30

    /** When a case with both ends here is declared stalled (bench/src/meter.rs `Window::limit`). */
    val stallLimit get() = warmup + 4 * secs + 10
}

fun parse(argv: Array<String>): Args {
    val v = mutableMapOf(
        "size" to "64", "width" to "1", "secs" to "1", "warmup" to "0.3", "variant" to VARIANTS[0],
        "role" to "both",
    )
    val known = setOf("pattern", "transport", "size", "width", "secs", "warmup", "variant", "role", "address")
    var i = 0
    while (i < argv.size) {
        val arg = argv[i++]
        if (!arg.startsWith("--")) throw Usage("unexpected argument $arg")
        val (name, value) = if ("=" in arg) {
            arg.substring(2).substringBefore('=') to arg.substringAfter('=')
        } else {
            if (i >= argv.size) throw Usage("$arg needs a value")
            arg.substring(2) to argv[i++]
        }
        if (name !in known) throw Usage("unknown option --$name")
        v[name] = value
    }
    fun choice(name: String, of: List<String>): String {
        val x = v[name] ?: throw Usage("--$name is required")
        if (x !in of) throw Usage("--$name is one of ${of.joinToString(", ")}, not $x")
        return x
    }
    fun number(name: String): Double = v[name]!!.toDoubleOrNull() ?: throw Usage("--$name is a number")
    val a = Args(
        pattern = choice("pattern", PATTERNS),
        transport = choice("transport", TRANSPORTS),
        size = v["size"]!!.toIntOrNull() ?: throw Usage("--size is a whole number"),
        width = v["width"]!!.toIntOrNull() ?: throw Usage("--width is a whole number"),
        secs = number("secs"),
        warmup = number("warmup"),
        variant = choice("variant", VARIANTS),
        role = choice("role", ROLES),
        address = v["address"],
    )
    if ((a.role == "dial") != (a.address != null)) throw Usage("--address goes with --role dial, and only with it")
    return a
}

// ------------------------------------------------------------------ the lines a worker prints

private val out = PrintStream(FileOutputStream(FileDescriptor.out), false, Charsets.UTF_8)
private var markers = false
private var printed = false

/** One line on stdout, flushed at once (run.py reads them as they come). */
fun line(s: String) = synchronized(out) {
    out.print(s + "\n")
    out.flush()
}

/** The bind side's first line: what the dial side dials. */
fun announce(address: String) = line("ADDRESS $address")

/** `WINDOW start` / `WINDOW end`, when this process measures one end of two. */
fun marker(what: String) {
    if (markers) line("WINDOW $what")
}

/** The JSON result line, once: the parameters, then the figures or the error. */
fun result(a: Args, figures: Map<String, Any>): Unit = synchronized(out) {
    if (printed) return
    printed = true
    val all = linkedMapOf<String, Any>(
        "system" to SYSTEM, "language" to "kotlin", "variant" to a.variant, "pattern" to a.pattern,
        "transport" to a.transport, "size" to a.size, "width" to a.width, "secs" to a.secs,
        "warmup" to a.warmup, "role" to a.role,
    )
    all.putAll(figures)
    line(all.entries.joinToString(",", "{", "}") { (k, x) -> "${json(k)}:${json(x)}" })
}

fun json(x: Any): String = when (x) {
    is String -> buildString {
        append('"')
        for (c in x) {
            when {
                c == '"' -> append("\\\"")
                c == '\\' -> append("\\\\")
                c == '\n' -> append("\\n")
                c < ' ' -> append(String.format("\\u%04x", c.code))
                else -> append(c)
            }
        }
        append('"')
    }
    is Double -> if (x.isFinite()) x.toString() else "null"
    else -> x.toString()
}

// ------------------------------------------------------------------ the meters (common.py)

fun now() = System.nanoTime() / 1e9

/** How many messages between clock readings: every one from 64 KiB, every 64th below. */
fun stride(size: Int) = maxOf(1, minOf(64, 65536 / maxOf(1, size)))

/** Counts messages received whole; see bench/suite/workers/common.py Meter. */
class Meter(private val a: Args) {
    private val stride = stride(a.size)
    private val created = now()
    private var n = 0L
    private var start: kotlin.Pair<Double, Long>? = null
    private var end: kotlin.Pair<Double, Long>? = null

    /** `k` more messages received; true once the window is over. */
    fun tick(k: Int = 1): Boolean {
        val before = n
        n += k
        if (end != null) return true
        if (n / stride == before / stride) return false
        val t = now()
        val s = start
        if (s == null) {
            if (t - created >= a.warmup) {
                start = t to n
                marker("start")
            }
            return false
        }
        if (t - s.first >= a.secs) {
            end = t to n
            marker("end")
            return true
        }
        return false
    }

    fun result(): Map<String, Any> {
        val (t0, n0) = start ?: throw IllegalStateException("no complete window")
        val (t1, n1) = end ?: throw IllegalStateException("no complete window")
        val messages = n1 - n0
        if (messages <= 0) throw IllegalStateException("stalled: nothing received in the window")
        val seconds = t1 - t0
        val rate = messages / seconds
        return linkedMapOf("messages" to messages, "seconds" to seconds, "msgs_per_s" to rate, "mb_per_s" to rate * a.size / 1e6)
    }
}

/** Round trips recorded after the warmup until the window is over. */
class Recorder(private val a: Args) {
    private val created = now()
    private var start: Double? = null
    private var samples = DoubleArray(1 shl 16)
    private var count = 0

    fun record(began: Double): Boolean {
        val t = now()
        val s = start
        if (s == null) {
            if (t - created >= a.warmup) {
                start = t
                marker("start")
            }
            return false
        }
        if (count == samples.size) samples = samples.copyOf(count * 2)
        samples[count++] = t - began
        if (t - s < a.secs) return false
        marker("end")
        return true
    }

    /** p50 and p99 in microseconds, nearest rank. */
    fun result(): Map<String, Any> {
        if (count == 0) throw IllegalStateException("no samples")
        val s = samples.copyOf(count).also { it.sort() }
        fun at(q: Double) = s[minOf(maxOf(Math.ceil(count * q).toInt(), 1), count) - 1] * 1e6
        return linkedMapOf("p50_us" to at(0.50), "p99_us" to at(0.99), "samples" to count)
    }
}

fun body(size: Int) = ByteArray(size) { (it % 251).toByte() }

/** One receive (a batch of up to [BATCH], or one message), each body's size checked: how many. */
suspend fun received(puller: Puller, batch: Boolean, size: Int): Int =
    if (batch) {
        val ms = puller.recvMany(BATCH)
        for (m in ms) check(m.body.size, size)
        ms.size
    } else {
        check(puller.recv().body.size, size)
        1
    }

fun check(got: Int, size: Int) {
    if (got != size) throw IllegalStateException("received $got bytes, sent $size")
}

private val tmp: File by lazy {
    val base = File(System.getenv("TMPDIR") ?: System.getProperty("java.io.tmpdir"))
    kotlin.io.path.createTempDirectory(base.toPath(), "weida-suite-").toFile()
}

fun bindAddress(transport: String) = when (transport) {
    "quic" -> "weida://127.0.0.1:0"
    "unix" -> "weida+unix://${File(tmp, "w.sock").path}"
    else -> "weida+inproc://suite-${ProcessHandle.current().pid()}"
}

/** Ends a runtime as the Node worker's `rt.close()` does: every connection closed, then freed. */
fun Runtime.end() {
    shutdown()
    close()
}

// ------------------------------------------------------------------ the cases

/** Push/Pull with both ends in this process: the pusher sends back to back while this
 * coroutine receives. */
suspend fun pushPull(a: Args): Map<String, Any> {
    if (a.role == "bind") return pullAlone(a)
    if (a.role == "dial") pushAlone(a)
    val server = runtime()
    val client = runtime()
    try {
        val listener = server.bind(bindAddress(a.transport))
        val puller = listener.puller("/p")
        val pusher = client.pusher()
        pusher.connect(puller.address())
        val data = body(a.size)
        val bodies = List(BATCH) { data }
        val batch = a.variant == "batch"
        val meter = Meter(a)
        return coroutineScope {
            val sending = launch {
                while (true) {
                    if (batch) pusher.sendMany(bodies) else pusher.send(data)
                }
            }
            try {
                while (true) {
                    val k = received(puller, batch, a.size)
                    if (meter.tick(k)) break
                }
            } finally {
                sending.cancel()
            }
            meter.result()
        }
    } finally {
        client.end()
        server.end()
    }
}

/** The receiving process: binds, announces, counts from its first message. */
suspend fun pullAlone(a: Args): Map<String, Any> {
    val server = runtime()
    try {
        val listener = server.bind(bindAddress(a.transport))
        val puller = listener.puller("/p")
        announce(puller.address())
        val batch = a.variant == "batch"
        var meter: Meter? = null
        while (true) {
            val k = received(puller, batch, a.size)
            val m = meter
            if (m == null) meter = Meter(a) else if (m.tick(k)) return m.result()
        }
    } finally {
        server.end()
    }
}

/** The sending process: sends until terminated. */
suspend fun pushAlone(a: Args): Nothing {
    val client = runtime()
    try {
        val pusher = client.pusher()
        pusher.connect(a.address!!)
        val data = body(a.size)
        val bodies = List(BATCH) { data }
        while (true) {
            if (a.variant == "batch") pusher.sendMany(bodies) else pusher.send(data)
        }
    } finally {
        client.end()
    }
}

/** Req/Rep with both ends in this process: one request outstanding, the replier echoes. */
suspend fun reqRep(a: Args): Map<String, Any> {
    if (a.role == "bind") replyAlone(a)
    if (a.role == "dial") return requestAlone(a)
    val server = runtime()
    val client = runtime()
    try {
        val listener = server.bind(bindAddress(a.transport))
        val replier = listener.replier("/r")
        return coroutineScope {
            val serving = launch {
                while (true) replier.accept().use { ex -> ex.reply(ex.takeBody()) }
            }
            try {
                val req = client.requester()
                req.connect(replier.address())
                requests(a, req)
            } finally {
                serving.cancel()
            }
        }
    } finally {
        client.end()
        server.end()
    }
}

suspend fun requests(a: Args, req: weida.uniffi.Requester): Map<String, Any> {
    val data = body(a.size)
    val rec = Recorder(a)
    while (true) {
        val began = now()
        check(req.request(data).size, a.size)
        if (rec.record(began)) return rec.result()
    }
}

/** The replying process: echoes until terminated. */
suspend fun replyAlone(a: Args): Nothing {
    val server = runtime()
    try {
        val listener = server.bind(bindAddress(a.transport))
        val replier = listener.replier("/r")
        announce(replier.address())
        while (true) replier.accept().use { ex -> ex.reply(ex.takeBody()) }
    } finally {
        server.end()
    }
}

/** The requesting process: measures, then prints its result. */
suspend fun requestAlone(a: Args): Map<String, Any> {
    val client = runtime()
    try {
        val req = client.requester()
        req.connect(a.address!!)
        return requests(a, req)
    } finally {
        client.end()
    }
}

// ------------------------------------------------------------------ main

/** The cases this worker has for `a.variant`: "batch" is Push/Pull only. */
fun cases(a: Args): Map<String, suspend (Args) -> Map<String, Any>> =
    if (a.variant == "await") mapOf("push_pull" to ::pushPull, "req_rep" to ::reqRep) else mapOf("push_pull" to ::pushPull)

fun main(argv: Array<String>) {
    val a = try {
        parse(argv)
    } catch (e: Usage) {
        System.err.println("benchmark suite worker: $SYSTEM: ${e.message}")
        System.err.println(
            "usage: --pattern push_pull|req_rep --transport quic|unix|inproc [--size N] [--secs S] " +
                "[--warmup S] [--variant await|batch] [--role both|bind|dial] [--address ADDR]",
        )
        exitProcess(2)
    }
    markers = a.role != "both"
    // The bound on this process: both ends here, the stall limit; one end of two, its lifetime
    // (the side that runs until terminated must not outlive a killed run.py). A daemon thread,
    // so a call stuck in native code cannot hold it off.
    val limit = if (a.role == "both") a.stallLimit else a.lifetime
    Thread {
        Thread.sleep((limit * 1000).toLong())
        result(a, mapOf("error" to "stalled: no progress within the time limit"))
        java.lang.Runtime.getRuntime().halt(1)
    }.apply { isDaemon = true; name = "lifetime" }.start()
    var status = 0
    val figures: Map<String, Any> = try {
        val case = cases(a)[a.pattern] ?: throw Usage("$SYSTEM has no ${a.pattern} case")
        runBlocking { case(a) }
    } catch (e: Throwable) {
        if (e !is Usage) e.printStackTrace()
        status = 1
        mapOf("error" to if (e is Usage) e.message!! else "${e::class.simpleName}: ${e.message}")
    }
    result(a, figures)
    exitProcess(status)
}
