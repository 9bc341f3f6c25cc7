// The Kotlin agent of the conformance suite (conformance/README.md, "The agent protocol"):
// reads one JSON request per line on standard input, carries it out with the Kotlin binding's
// public API and writes one JSON response per line on standard output, with the events of
// bound endpoints in between. Each request runs in a coroutine of its own, so a request awaiting
// a reply never blocks the next. Started by kotlin-swift/kotlin/conformance/agent.sh.
package weida.conformance

import java.io.BufferedReader
import java.io.FileDescriptor
import java.io.FileOutputStream
import java.io.InputStreamReader
import java.io.PrintStream
import java.util.concurrent.Executors
import kotlin.coroutines.cancellation.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import weida.uniffi.WeidaException

/** Responses and events, one line each, written from the agent's thread only. */
class Out {
    private val stream = PrintStream(FileOutputStream(FileDescriptor.out), false, Charsets.UTF_8)

    fun line(obj: Obj) {
        stream.print(Json.write(obj) + "\n")
        stream.flush()
    }

    fun event(name: String, handle: String, fields: Obj = emptyMap()) =
        line(linkedMapOf<String, Any?>("event" to name, "handle" to handle) + fields)

    fun eventError(name: String, handle: String, e: WeidaException) = event(name, handle, mapOf("error" to errorJson(e)))
}

private fun failure(code: String, message: String) = mapOf("code" to code, "message" to message)

suspend fun answer(agent: Agent, request: Obj) {
    val id = request["id"]
    val error: Obj = try {
        val op = request["op"] as? String ?: throw BadRequest("a request has a string op")
        val args = (request["args"] ?: emptyMap<String, Any?>()) as? Map<*, *> ?: throw BadRequest("args is an object")
        @Suppress("UNCHECKED_CAST")
        val result = agent.run(op, args as Obj)
        agent.out.line(mapOf("id" to id, "ok" to true, "result" to result))
        return
    } catch (e: WeidaException) {
        errorJson(e)
    } catch (e: BadRequest) {
        failure("AGENT_BAD_REQUEST", e.message ?: "")
    } catch (e: Unsupported) {
        failure("AGENT_UNSUPPORTED", e.message ?: "") + mapOf("unsupported" to e.what)
    } catch (e: CancellationException) {
        // The binding cancelled the call instead of raising a weida error (the agent never
        // cancels a request before it exits).
        System.err.println("agent: ${request["op"]}: the binding's call was cancelled")
        failure("AGENT_BAD_REQUEST", "the binding's call was cancelled")
    } catch (e: Exception) {
        // Not a weida error and not a malformed request: a bug, of this agent or the binding.
        // Answered (so the cell fails at this step, not at a timeout) and logged in full.
        System.err.println("agent: ${request["op"]} raised:")
        e.printStackTrace()
        failure("AGENT_BAD_REQUEST", "unexpected $e")
    }
    agent.out.line(mapOf("id" to id, "ok" to false, "error" to error))
}

fun main() {
    // One thread for every op and background coroutine, as the Python agent's event loop: the
    // binding's calls suspend rather than block it.
    val thread = Executors.newSingleThreadExecutor { r -> Thread(r, "agent").apply { isDaemon = true } }
    val scope = CoroutineScope(SupervisorJob() + thread.asCoroutineDispatcher())
    val out = Out()
    val agent = Agent(out, scope)
    val input = BufferedReader(InputStreamReader(System.`in`, Charsets.UTF_8))
    while (true) {
        val line = input.readLine() ?: break // standard input closed: the runner is done
        if (line.isBlank()) continue
        val request = try {
            Json.parse(line) as? Map<*, *> ?: throw IllegalArgumentException("not an object")
        } catch (e: IllegalArgumentException) {
            scope.launch { out.line(mapOf("id" to null, "ok" to false, "error" to failure("AGENT_BAD_REQUEST", "not JSON: ${e.message}"))) }
            continue
        }
        @Suppress("UNCHECKED_CAST")
        scope.launch { answer(agent, request as Obj) }
    }
    runBlocking { scope.launch { agent.shutdownAll() }.join() }
    // Every line written so far is flushed (each one is); the background coroutines may still be
    // awaiting the closed runtimes, which nobody waits for now: leave at once, status 0.
    System.err.flush()
    Runtime.getRuntime().halt(0)
}
