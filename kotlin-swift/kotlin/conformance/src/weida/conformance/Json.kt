// JSON for the agent protocol's lines, small enough to read in one sitting: the binding has no
// JSON dependency and the agent should not give it one. Values are Map<String, Any?>,
// List<Any?>, String, Long, Double, Boolean and null.
package weida.conformance

object Json {
    fun parse(text: String): Any? {
        val p = Parser(text)
        val v = p.value()
        p.space()
        if (p.at < text.length) throw IllegalArgumentException("trailing characters at ${p.at}")
        return v
    }

    fun write(v: Any?): String = StringBuilder().also { write(v, it) }.toString()

    private fun write(v: Any?, out: StringBuilder) {
        when (v) {
            null -> out.append("null")
            is String -> string(v, out)
            is Boolean -> out.append(v)
            is Int, is Long -> out.append(v)
            is UInt -> out.append(v.toLong())
            is ULong -> out.append(v.toString())
            is Double -> if (v == Math.rint(v) && Math.abs(v) < 1e15) out.append(v.toLong()) else out.append(v)
            is Map<*, *> -> {
                out.append('{')
                var first = true
                for ((k, x) in v) {
                    if (!first) out.append(',')
                    first = false
                    string(k.toString(), out)
                    out.append(':')
                    write(x, out)
                }
                out.append('}')
            }
            is List<*> -> {
                out.append('[')
                v.forEachIndexed { i, x ->
                    if (i > 0) out.append(',')
                    write(x, out)
                }
                out.append(']')
            }
            else -> throw IllegalArgumentException("not a JSON value: ${v::class}")
        }
    }

    private fun string(s: String, out: StringBuilder) {
        out.append('"')
        for (c in s) {
            when {
                c == '"' -> out.append("\\\"")
                c == '\\' -> out.append("\\\\")
                c == '\n' -> out.append("\\n")
                c == '\r' -> out.append("\\r")
                c == '\t' -> out.append("\\t")
                c < ' ' -> out.append(String.format("\\u%04x", c.code))
                else -> out.append(c)
            }
        }
        out.append('"')
    }

    private class Parser(val s: String) {
        var at = 0

        fun space() {
            while (at < s.length && s[at].isWhitespace()) at++
        }

        fun fail(what: String): Nothing = throw IllegalArgumentException("$what at $at")

        fun value(): Any? {
            space()
            if (at >= s.length) fail("a value expected")
            return when (s[at]) {
                '{' -> obj()
                '[' -> list()
                '"' -> str()
                't' -> word("true", true)
                'f' -> word("false", false)
                'n' -> word("null", null)
                else -> number()
            }
        }

        fun word(w: String, v: Any?): Any? {
            if (!s.startsWith(w, at)) fail("unknown word")
            at += w.length
            return v
        }

        fun obj(): Map<String, Any?> {
            val out = LinkedHashMap<String, Any?>()
            at++
            space()
            if (s.getOrNull(at) == '}') return out.also { at++ }
            while (true) {
                space()
                if (s.getOrNull(at) != '"') fail("a key expected")
                val k = str()
                space()
                if (s.getOrNull(at) != ':') fail("':' expected")
                at++
                out[k] = value()
                space()
                when (s.getOrNull(at)) {
                    ',' -> at++
                    '}' -> return out.also { at++ }
                    else -> fail("',' or '}' expected")
                }
            }
        }

        fun list(): List<Any?> {
            val out = ArrayList<Any?>()
            at++
            space()
            if (s.getOrNull(at) == ']') return out.also { at++ }
            while (true) {
                out.add(value())
                space()
                when (s.getOrNull(at)) {
                    ',' -> at++
                    ']' -> return out.also { at++ }
                    else -> fail("',' or ']' expected")
                }
            }
        }

        fun str(): String {
            val out = StringBuilder()
            at++
            while (true) {
                if (at >= s.length) fail("unterminated string")
                val c = s[at++]
                when (c) {
                    '"' -> return out.toString()
                    '\\' -> {
                        val e = s.getOrNull(at++) ?: fail("unterminated escape")
                        when (e) {
                            'n' -> out.append('\n')
                            't' -> out.append('\t')
                            'r' -> out.append('\r')
                            'b' -> out.append('\b')
                            'f' -> out.append('\u000c')
                            'u' -> {
                                if (at + 4 > s.length) fail("short \\u escape")
                                out.append(s.substring(at, at + 4).toInt(16).toChar())
                                at += 4
                            }
                            else -> out.append(e)
                        }
                    }
                    else -> out.append(c)
                }
            }
        }

        fun number(): Any {
            val start = at
            while (at < s.length && (s[at].isDigit() || s[at] in "+-.eE")) at++
            val t = s.substring(start, at)
            if (t.isEmpty()) fail("a value expected")
            return t.toLongOrNull() ?: t.toDoubleOrNull() ?: fail("not a number: $t")
        }
    }
}
