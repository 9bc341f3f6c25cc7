// kotlin-swift/README.md's quick start, as it stands there (QuickStartTest checks they are the same).
package weida.readme

import kotlinx.coroutines.flow.take
import kotlinx.coroutines.runBlocking
import weida.*

fun main() = runBlocking {
    runtime().use { server ->
        runtime().use { client ->
            val listener = server.bind("weida://127.0.0.1:0")
            val puller = listener.puller("/jobs")
            val pusher = client.pusher()
            pusher.connect(puller.address())        // the address pins the server's key
            pusher.send("hello".toByteArray())
            puller.messages().take(1).collect { println(String(it.body)) }
            client.shutdown(); server.shutdown()
        }
    }
}
