// A runtime step's configuration and an endpoint's `options`, in the binding's spelling: the
// protocol's snake_case names are Kotlin's camelCase ones (`idle_timeout_ms` is `idleTimeoutMs`,
// docs/BINDINGS.md), so a name converts mechanically and the binding checks it.
package weida.conformance

import weida.endpointOptions
import weida.never
import weida.uniffi.EndpointOptions
import weida.uniffi.Trust

fun camel(snake: String): String =
    snake.split('_').mapIndexed { i, w -> if (i == 0) w else w.replaceFirstChar { it.uppercase() } }.joinToString("")

fun snake(camel: String): String = camel.replace(Regex("([A-Z])")) { "_" + it.value.lowercase() }

/** `"address"`, `"unverified"` or `{"pinned": ["sha256:…", …]}`. */
fun trustArg(v: Any?): Trust = when {
    v == "address" -> Trust.address()
    v == "unverified" -> Trust.unverified()
    v is Map<*, *> && v["pinned"] is List<*> -> {
        val pins = v["pinned"] as List<*>
        if (!pins.all { it is String }) throw BadRequest("a pin is a string")
        Trust.pinned(pins.map { it as String })
    }
    else -> throw BadRequest("unknown trust $v")
}

/** An object of option values by their protocol names, renamed; null (off) stays null. */
private fun named(v: Any?, what: String): Map<String, Any?> {
    if (v !is Map<*, *>) throw BadRequest("$what is an object")
    return v.entries.associate { (k, x) ->
        when (x) {
            null, is Long, is Boolean, is String -> camel(k.toString()) to x
            else -> throw BadRequest("$what.$k is a number, a flag, a name or null")
        }
    }
}

/** `limits` by name (`idle_timeout_ms`, `keep_alive_ms: null`, …). */
fun limitsArg(v: Any?): Map<String, Any?> = if (v == null) emptyMap() else named(v, "limits")

/** A `reconnect` policy; absent, no redial (the scenarios written before redial assert it). */
fun reconnectArg(v: Any?): Map<String, Any?> = if (v == null) never else named(v, "reconnect")

/** The step's `options`: an endpoint's own bounds, and its own `reconnect` if given. */
fun endpointOptionsArg(args: Obj): EndpointOptions {
    val v = args["options"] ?: return endpointOptions()
    val o = named((v as? Map<*, *>)?.filterKeys { it != "reconnect" }, "options")
    val reconnect = (v as Map<*, *>)["reconnect"]?.let { named(it, "options.reconnect") }
    return endpointOptions(o, reconnect)
}
