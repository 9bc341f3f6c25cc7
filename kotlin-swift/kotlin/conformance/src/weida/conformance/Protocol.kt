// The protocol's vocabulary (conformance/README.md, "Errors", "Bodies"): bodies made from
// their specs and reported as summaries, errors read off the binding's exception, peers,
// metadata, and the checked reading of a request's arguments.
package weida.conformance

import java.nio.ByteBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.StandardCharsets
import java.security.MessageDigest
import weida.uniffi.Message
import weida.uniffi.MetaEntry
import weida.uniffi.Peer
import weida.uniffi.WeidaException

typealias Obj = Map<String, Any?>

/** A request this agent cannot carry out (AGENT_BAD_REQUEST, never expected by a scenario). */
class BadRequest(message: String) : Exception(message)

/**
 * An op, or a mode of one, that the Kotlin binding does not export (AGENT_UNSUPPORTED). The
 * runner skips the cell with the reason agents.json gives for `what`, and only for the `what`s
 * listed there: anything else answered so fails the cell.
 */
class Unsupported(val what: String, message: String) : Exception(message)

/** The longest body whose text a summary carries. */
const val TEXT_IN_SUMMARY = 1024

fun makeBody(spec: Any?): ByteArray {
    if (spec !is Map<*, *>) throw BadRequest("a body is an object")
    spec["text"]?.let { return (it as? String ?: throw BadRequest("body.text is a string")).toByteArray() }
    spec["hex"]?.let { h ->
        if (h !is String || h.length % 2 != 0) throw BadRequest("body.hex is an even-length string")
        return ByteArray(h.length / 2) { i ->
            h.substring(2 * i, 2 * i + 2).toIntOrNull(16)?.toByte() ?: throw BadRequest("body.hex is not hex")
        }
    }
    val size = nonNegative(spec["size"], "body.size") ?: throw BadRequest("a body has text, hex, or size and pattern")
    val offset = nonNegative(spec["offset"], "body.offset") ?: 0L
    return when (val pattern = spec["pattern"] ?: "seq") {
        "zero" -> ByteArray(size.toInt())
        "seq" -> ByteArray(size.toInt()) { i -> ((offset + i) % 251).toByte() }
        else -> throw BadRequest("unknown body pattern $pattern")
    }
}

/** A running summary of a body read in parts. */
class Tally {
    private val hash = MessageDigest.getInstance("SHA-256")
    private var size = 0L
    private val head = java.io.ByteArrayOutputStream()

    fun add(chunk: ByteArray) {
        hash.update(chunk)
        size += chunk.size
        if (head.size() <= TEXT_IN_SUMMARY) {
            head.write(chunk, 0, minOf(chunk.size, TEXT_IN_SUMMARY + 1 - head.size()))
        }
    }

    fun summary(): Obj {
        val out = linkedMapOf<String, Any?>("size" to size, "sha256" to hex(hash.digest()))
        if (size <= TEXT_IN_SUMMARY) utf8(head.toByteArray())?.let { out["text"] = it }
        return out
    }
}

fun summary(body: ByteArray): Obj = Tally().also { it.add(body) }.summary()

fun hex(b: ByteArray): String = b.joinToString("") { "%02x".format(it) }

/** The bytes as text if they are valid UTF-8, else null (a lenient decode would invent text). */
fun utf8(b: ByteArray): String? = try {
    StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(b)).toString()
} catch (e: CharacterCodingException) {
    null
}

/**
 * `{"code", "message", "definite", ...}`. The generated exception is one class per code, each
 * with the same fields but no common property for them, hence the one `when`.
 */
fun errorJson(e: WeidaException): Obj {
    val (code, description, definite, fields) = when (e) {
        is WeidaException.NotConnected -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.ConnectionLost -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Indeterminate -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Untrusted -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.UnknownEndpoint -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Unsupported -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Rejected -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Canceled -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.LimitExceeded -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Timeout -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.InvalidAddress -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.NegotiationFailed -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Protocol -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.InvalidConfig -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.InvalidFilter -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Closed -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Io -> Parts(e.code, e.description, e.definite, e.fields)
        is WeidaException.Unreachable -> Parts(e.code, e.description, e.definite, e.fields)
        // The binding's own codes (a call aborted, a handle busy, a panic) have no core fields.
        is WeidaException.Aborted -> Parts(e.code, e.description, true, emptyMap())
        is WeidaException.Busy -> Parts(e.code, e.description, true, emptyMap())
        is WeidaException.Panic -> Parts(e.code, e.description, true, emptyMap())
    }
    val out = linkedMapOf<String, Any?>("code" to code, "message" to description, "definite" to definite)
    when (e) {
        is WeidaException.ConnectionLost, is WeidaException.Indeterminate -> out["loss_cause"] = fields["lossCause"]
        is WeidaException.UnknownEndpoint -> out["path"] = fields["path"]
        is WeidaException.Untrusted -> {
            out["fingerprint"] = fields["fingerprint"]
            out["expected"] = fields["expected"]
        }
        else -> {}
    }
    return out
}

private data class Parts(val code: String, val description: String, val definite: Boolean, val fields: Map<String, String?>)

fun peerJson(p: Peer?): Obj? = when (p) {
    null -> null
    is Peer.Key -> mapOf("kind" to "key", "fingerprint" to p.fingerprint)
    is Peer.Local -> mapOf("kind" to "local", "uid" to p.uid, "gid" to p.gid, "pid" to p.pid)
}

/** Text values as strings, others as `{"hex": …}`; the last of repeated names. */
fun metadataJson(pairs: List<MetaEntry>): Obj {
    val out = linkedMapOf<String, Any?>()
    for (m in pairs) out[m.name] = utf8(m.value) ?: mapOf("hex" to hex(m.value))
    return out
}

fun messageJson(m: Message): Obj = linkedMapOf(
    "path" to m.path,
    "metadata" to metadataJson(m.metadata),
    "peer" to peerJson(m.peer),
    "body" to summary(m.body),
)

/** A copy a subscriber received: `messageJson` with `topic`, `sequence` and `gap`. */
fun copyJson(m: Message): Obj = messageJson(m) + mapOf("topic" to m.topic, "sequence" to m.sequence, "gap" to m.gap)

// --- arguments ---------------------------------------------------------------------------------

fun nonNegative(v: Any?, what: String): Long? = when {
    v == null -> null
    v is Long && v >= 0 -> v
    else -> throw BadRequest("$what is a non-negative integer")
}

fun Obj.str(key: String): String = this[key] as? String ?: throw BadRequest("missing string argument '$key'")

fun Obj.long(key: String): Long? = nonNegative(this[key], "argument '$key'")

fun Obj.bool(key: String, default: Boolean): Boolean = when (val v = this[key]) {
    null -> default
    is Boolean -> v
    else -> throw BadRequest("argument '$key' is a boolean")
}

fun Obj.body(): ByteArray = makeBody(this["body"])

fun Obj.metadata(): Map<String, ByteArray> {
    val m = this["metadata"] ?: return emptyMap()
    if (m !is Map<*, *> || !m.values.all { it is String }) throw BadRequest("metadata is an object of strings")
    return m.entries.associate { (k, v) -> k.toString() to (v as String).toByteArray() }
}
