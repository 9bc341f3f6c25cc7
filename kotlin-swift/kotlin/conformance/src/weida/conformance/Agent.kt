// The agent's handles and ops (conformance/README.md, "Ops"), each with the Kotlin binding's
// public API as a user calls it. Every op and every coroutine runs on the agent's one thread
// (Main.kt), so the tables need no locks. The Python agent (python/conformance/agent.py) is the
// model, op by op.
package weida.conformance

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.launch
import weida.Outcome
import weida.answers
import weida.bind
import weida.queue
import weida.recv
import weida.recvMany
import weida.sendMany
import weida.runtime
import weida.serve
import weida.uniffi.BoundPusher
import weida.uniffi.BoundSubscriber
import weida.uniffi.Bus
import weida.uniffi.DialingPublisher
import weida.uniffi.DialingPuller
import weida.uniffi.Exchange
import weida.uniffi.FanOut
import weida.uniffi.Identity
import weida.uniffi.Listener
import weida.uniffi.OutgoingTransfer
import weida.uniffi.PendingReply
import weida.uniffi.PeerEvents
import weida.uniffi.RawPeer
import weida.uniffi.Pair
import weida.uniffi.Publisher
import weida.uniffi.Registration
import weida.uniffi.Puller
import weida.uniffi.Pusher
import weida.uniffi.Requester
import weida.uniffi.Runtime
import weida.uniffi.Service
import weida.uniffi.Subscriber
import weida.uniffi.Surveyor

const val PROTOCOL = 1

class Agent(val out: Out, val scope: CoroutineScope) {
    private val names = HashSet<String>() // every handle name in use: never reused in one agent
    private val runtimes = HashMap<String, Runtime>()
    private val listeners = HashMap<String, Listener>()
    private val dialling = HashMap<String, Any>() // Requester, Pusher or Subscriber
    private val events = HashMap<String, PeerEvents>() // read from the endpoint's making on
    private val pullers = HashMap<String, Puller>() // pullers in manual mode, for `recv`
    private val publishers = HashMap<String, Publisher>()
    private val collectors = HashMap<String, BoundSubscriber>() // bound subscribers
    private val transfers = HashMap<String, OutgoingTransfer>() // streamed transfers being written
    private val replies = HashMap<String, PendingReply>() // the replies of streamed requests
    private val fanouts = HashMap<String, FanOut>() // streamed publishes being written
    private val receiving = HashMap<String, Subscriber>() // subscribers in manual mode
    private val services = HashMap<String, Registration>() // handler registrations, for service_counters
    internal val held = ArrayList<Exchange>() // exchanges a `hold` replier keeps, unanswered
    internal val connected = HashMap<Subscriber, Flag>() // set by a connect: a `recv` loop waits
    private val background = Background(this)

    /** Runs `what` in the background; a failure that is not the protocol's is logged. */
    fun spawn(what: String, body: suspend () -> Unit) {
        scope.launch {
            try {
                body()
            } catch (e: Exception) {
                System.err.println("agent: $what failed unexpectedly: $e")
                e.printStackTrace()
            }
        }
    }

    fun shutdownAll() = runtimes.values.forEach { it.shutdown() }

    // handles

    /** Checks that an op may create a handle named `name` (before it creates anything). */
    private fun free(name: String): String {
        if (name.isEmpty() || name in names) throw BadRequest("handle name '$name' is empty or taken")
        return name
    }

    private fun claim(name: String) {
        free(name)
        names.add(name)
    }

    private fun <T> get(table: Map<String, T>, kind: String, args: Obj, key: String): T {
        val name = args.str(key)
        return table[name] ?: throw BadRequest("no $kind named '$name'")
    }

    private fun runtime(args: Obj) = get(runtimes, "runtime", args, "runtime")
    private fun listener(args: Obj) = get(listeners, "listener", args, "listener")
    private fun endpoint(args: Obj) = get(dialling, "requester, pusher or subscriber", args, "endpoint")
    private fun publisher(args: Obj) = get(publishers, "publisher", args, "endpoint")
    private fun subscriberOf(args: Obj, key: String) =
        get(dialling, "subscriber", args, key) as? Subscriber ?: throw BadRequest("'${args[key]}' is not a subscriber")

    suspend fun run(op: String, args: Obj): Obj = when (op) {
        "hello" -> mapOf("protocol" to PROTOCOL, "language" to "kotlin", "agent" to "kotlin-swift/kotlin/conformance", "weida" to VERSION)
        "runtime" -> opRuntime(args)
        "bind" -> opBind(args)
        "close" -> listener(args).closeListener().let { emptyMap() }
        "shutdown" -> runtime(args).shutdown().let { emptyMap() }
        "drain" -> {
            val ms = args.long("deadline_ms") ?: throw BadRequest("drain needs deadline_ms")
            val d = runtime(args).drain(ms.toDouble(), null)
            mapOf("delivered" to d.delivered, "outstanding" to d.outstanding, "unsent" to d.unsent)
        }
        "counters" -> runtime(args).counters().mapKeys { snake(it.key) }
        "replier" -> opReplier(args) { l, path, o -> l.replier(path, o) }
        "acceptor" -> opAcceptor(args)
        "peer" -> dialler(args) { rt, o -> rt.peer(o) }
        "respondent" -> opReplier(args) { l, path, o -> l.respondent(path, o) }
        "surveyor" -> dialler(args) { rt, o -> rt.surveyor(o) }
        "survey" -> opSurvey(args)
        "bus" -> opBus(args)
        "dialing_publisher" -> dialler(args) { rt, o -> rt.publisher(o) }
        "bound_subscriber" -> opCollector(args)
        "pair" -> opPair(args)
        "bound_pusher" -> {
            val name = free(args.str("name"))
            val p = listener(args).pusher(args.str("path"), endpointOptionsArg(args))
            claim(name)
            dialling[name] = p
            mapOf("address" to p.address())
        }
        "dialing_puller" -> {
            val rt = runtime(args)
            val name = free(args.str("name"))
            val p = rt.puller(endpointOptionsArg(args))
            claim(name)
            dialling[name] = p
            events[name] = p.events()
            spawn("dialling puller $name") { background.receive(name) { p.recv() } }
            emptyMap()
        }
        "puller" -> opPuller(args)
        "requester" -> dialler(args) { rt, o -> rt.requester(o) }
        "pusher" -> dialler(args) { rt, o -> rt.pusher(o) }
        "connect" -> opConnect(args)
        "event" -> opEvent(args)
        "disconnect" -> mapOf("removed" to disconnect(endpoint(args), args.str("address")))
        "peer_count" -> mapOf("peer_count" to peerCount(endpoint(args)))
        "request" -> {
            val r = endpoint(args) as? Requester ?: throw BadRequest("request needs a requester")
            messageJson(r.requestWith(args.body(), args.metadata(), null))
        }
        "send" -> when (val p = endpoint(args)) {
            is Bus -> mapOf("queued" to p.send(args.body(), args.metadata(), null))
            is Pusher -> p.send(args.body(), args.metadata(), null).let { emptyMap() }
            is Pair -> p.send(args.body(), args.metadata(), null).let { emptyMap() }
            is BoundPusher -> p.send(args.body(), args.metadata(), null).let { emptyMap() }
            else -> throw BadRequest("send needs a pusher, a bus member or a pair")
        }
        "try_send" -> {
            val p = endpoint(args) as? Pusher ?: throw BadRequest("try_send needs a pusher")
            mapOf("sent" to p.trySend(args.body()))
        }
        "send_many" -> {
            val p = endpoint(args) as? Pusher ?: throw BadRequest("send_many needs a pusher")
            val specs = args["bodies"] as? List<*> ?: throw BadRequest("send_many needs a list of bodies")
            val bodies = specs.map { makeBody(it) }
            p.sendMany(bodies)
            mapOf("sent" to bodies.size)
        }
        "recv" -> messageJson(get(pullers, "manual puller", args, "puller").recv())
        "recv_many" -> {
            val p = get(pullers, "manual puller", args, "puller")
            val count = args.long("count") ?: throw BadRequest("recv_many needs a count")
            val most = maxOf(args.long("max") ?: 64L, 1L)
            // Batches until `count`, each at most what is left: none taken beyond it.
            val messages = ArrayList<Any?>()
            var batches = 0
            while (messages.size < count) {
                val batch = p.recvMany(minOf(most, count - messages.size).toInt())
                batches += 1
                batch.mapTo(messages) { messageJson(it) }
            }
            mapOf("messages" to messages, "batches" to batches)
        }
        "open" -> opOpen(args)
        "write" -> opWrite(args)
        "finish" -> {
            val delivery = takeTransfer(args).second.finish(null)
            if (args.bool("delivered", false)) delivery.delivered(null).let { mapOf("delivered" to true) } else emptyMap()
        }
        "cancel" -> takeTransfer(args).second.cancelTransfer().let { emptyMap() }
        "reply_body" -> {
            val name = args.str("reply")
            val reply = replies.remove(name) ?: throw BadRequest("no pending reply named '$name'")
            messageJson(reply.body(null))
        }
        "publisher" -> opPublisher(args)
        "subscriber" -> opSubscriber(args)
        "subscribe" -> when (val c = collectors[args.str("endpoint")]) {
            null -> subscriberOf(args, "endpoint").subscribe(args.str("filter"), null).let { emptyMap() }
            else -> c.subscribe(args.str("filter")).let { emptyMap() }
        }
        "unsubscribe" -> when (val c = collectors[args.str("endpoint")]) {
            null -> mapOf("removed" to subscriberOf(args, "endpoint").unsubscribe(args.str("filter"), null))
            else -> mapOf("removed" to c.unsubscribe(args.str("filter")))
        }
        "receive" -> copyJson(get(receiving, "manual subscriber", args, "subscriber").recv())
        "queued" -> mapOf("queued" to subscriberOf(args, "subscriber").queued())
        "publish" -> when (val d = dialling[args.str("endpoint")]) {
            is DialingPublisher -> mapOf("queued" to d.publish(args.str("topic"), args.body(), null))
            else -> mapOf("queued" to publisher(args).publish(args.str("topic"), args.body()))
        }
        "dropped" -> opDropped(args)
        "fanout" -> {
            val p = publisher(args)
            val name = free(args.str("fanout"))
            val fan = p.open(args.str("topic"))
            claim(name)
            fanouts[name] = fan
            mapOf("copies" to fan.copies())
        }
        "fanout_write" -> opFanOutWrite(args)
        "fanout_finish" -> {
            val (_, fan) = takeFanOut(args)
            mapOf("copies" to fan.finish())
        }
        "subscriber_count" -> mapOf("subscriber_count" to publisher(args).subscriberCount())
        "service_queue" -> opServiceQueue(args)
        "service_counters" -> get(services, "service", args, "endpoint").counters().let { c ->
            listOf("handled", "retried", "deadLettered", "dropped", "failed").associate { snake(it) to c[it] }
        }
        in UNEXPORTED -> throw Unsupported(op, "the Kotlin binding exports no ${UNEXPORTED[op]}")
        else -> throw BadRequest("unknown op '$op'")
    }

    private suspend fun opRuntime(args: Obj): Obj {
        val name = free(args.str("name"))
        val identity = args["identity"]?.let {
            val dir = (it as? Map<*, *>)?.get("dir") as? String
                ?: throw BadRequest("identity is {\"dir\": path} or absent (ephemeral)")
            Identity.loadOrCreate(dir)
        }
        val trust = if ("trust" in args) trustArg(args["trust"]) else null
        val options = linkedMapOf<String, Any?>("presentIdentity" to args.bool("present_identity", true))
        args.long("send_timeout_ms")?.let { options["sendTimeoutMs"] = it }
        val ordering = args["ordering"] ?: "none"
        if (ordering !in listOf("none", "detect", "reassemble")) throw BadRequest("unknown ordering $ordering")
        options["ordering"] = ordering
        args.long("lane_max_message")?.let { options["laneMaxMessage"] = it }
        val rt = runtime(identity, trust, limitsArg(args["limits"]), reconnectArg(args["reconnect"]), options)
        claim(name)
        runtimes[name] = rt
        return mapOf("fingerprint" to rt.fingerprint())
    }

    private suspend fun opBind(args: Obj): Obj {
        val rt = runtime(args)
        val name = free(args.str("name"))
        val address = args.str("address")
        val listener = args["require_client"]?.let { rt.bind(address, trustArg(it)) } ?: rt.bind(address)
        claim(name)
        listeners[name] = listener
        // A listener's connections are events too: `event` reads them by its name.
        events[name] = listener.events()
        return mapOf("address" to listener.address())
    }

    /** A pusher opens a one-way stream, a requester a request with its `reply`. */
    private suspend fun opOpen(args: Obj): Obj {
        val meta = args.metadata()
        val ep = endpoint(args)
        val tname = free(args.str("transfer"))
        when (ep) {
            is Pusher -> {
                val t = ep.open(meta, null)
                claim(tname)
                transfers[tname] = t
            }
            is Requester -> {
                val rname = free(args.str("reply"))
                val opened = ep.open(meta, null)
                claim(tname)
                claim(rname)
                transfers[tname] = opened.transfer
                replies[rname] = opened.reply
            }
            // A peer opens a one-way stream, or with `reply` an exchange.
            is RawPeer -> if (args["reply"] == null) {
                val t = ep.open(meta, null)
                claim(tname)
                transfers[tname] = t
            } else {
                val rname = free(args.str("reply"))
                val opened = ep.exchange(meta, null)
                claim(tname)
                claim(rname)
                transfers[tname] = opened.transfer
                replies[rname] = opened.reply
            }
            else -> throw BadRequest("open needs a pusher, a requester or a peer")
        }
        return emptyMap()
    }

    private suspend fun opWrite(args: Obj): Obj {
        val body = args.body()
        val chunk = maxOf(args.long("chunk") ?: 65536L, 1L).toInt()
        val (name, t) = takeTransfer(args)
        try {
            var at = 0
            while (at < body.size) {
                t.write(body.copyOfRange(at, minOf(at + chunk, body.size)), null)
                at += chunk
            }
        } finally {
            // Kept after a failed write too, so a scenario can still cancel it.
            transfers[name] = t
        }
        return mapOf("written" to body.size)
    }

    /** Writes `body` to the fan-out `chunk` bytes at a time, with `write` (which may wait) or
     * `writeNow`; the copies attached after the last write. */
    private suspend fun opFanOutWrite(args: Obj): Obj {
        val body = args.body()
        val chunk = maxOf(args.long("chunk") ?: 65536L, 1L).toInt()
        val now = args.bool("now", false)
        val (name, fan) = takeFanOut(args)
        try {
            var at = 0
            while (at < body.size) {
                val part = body.copyOfRange(at, minOf(at + chunk, body.size))
                if (now) fan.writeNow(part) else fan.write(part)
                at += chunk
            }
        } finally {
            fanouts[name] = fan
        }
        return mapOf("copies" to fan.copies())
    }

    private fun takeFanOut(args: Obj): kotlin.Pair<String, FanOut> {
        val name = args.str("fanout")
        val f = fanouts.remove(name) ?: throw BadRequest("no fan-out named '$name'")
        return name to f
    }

    private fun takeTransfer(args: Obj): kotlin.Pair<String, OutgoingTransfer> {
        val name = args.str("transfer")
        val t = transfers.remove(name) ?: throw BadRequest("no transfer named '$name'")
        return name to t
    }

    /** Asks, then reads every answer until the run ends: how many were asked, answered, the
     * codes of those that failed (sorted), and the late count. */
    private suspend fun opSurvey(args: Obj): Obj {
        val s = endpoint(args) as? Surveyor ?: throw BadRequest("survey needs a surveyor")
        val deadline = (args["deadline_ms"] as? Number)?.toDouble() ?: throw BadRequest("deadline_ms is a number")
        val run = s.survey(args.body(), deadline, args.metadata(), null)
        var answered = 0
        val errors = ArrayList<String>()
        run.answers().collect { a ->
            a.fold({ answered++ }, { e -> errors.add((errorJson(e as weida.uniffi.WeidaException))["code"] as String) })
        }
        return mapOf("respondents" to run.respondents(), "answered" to answered, "errors" to errors.sorted(), "late" to run.late())
    }

    /** A collector: received as a subscriber's copies are, from its binding on. */
    /** A pair: bound with `listener` and `path`, else dialling through `runtime`; received as a
     * `recv` puller is, from its making on. */
    private fun opPair(args: Obj): Obj {
        val name = free(args.str("name"))
        val p = if ("listener" in args) {
            listener(args).pair(args.str("path"), endpointOptionsArg(args))
        } else {
            runtime(args).pair(endpointOptionsArg(args))
        }
        claim(name)
        dialling[name] = p
        val address = p.address()
        if (address == null) events[name] = p.events()
        spawn("pair $name") { background.receive(name) { p.recv() } }
        return if (address == null) emptyMap() else mapOf("address" to address)
    }

    private fun opCollector(args: Obj): Obj {
        val listener = listener(args)
        val name = free(args.str("name"))
        val c = listener.subscriber(args.str("path"), endpointOptionsArg(args))
        claim(name)
        collectors[name] = c
        spawn("collector $name") { background.serveCollector(c, name) }
        return mapOf("address" to c.address())
    }

    /** A bus member: dialling (`connect`, `send`) and bound, received as a `recv` puller is. */
    private fun opBus(args: Obj): Obj {
        val rt = runtime(args)
        val listener = listener(args)
        val name = free(args.str("name"))
        val bus = rt.bus(listener, args.str("path"), endpointOptionsArg(args))
        claim(name)
        dialling[name] = bus
        events[name] = bus.events()
        spawn("bus $name") { background.serveBus(bus, name) }
        return mapOf("address" to bus.address())
    }

    private fun opReplier(args: Obj, make: (Listener, String, weida.uniffi.EndpointOptions?) -> weida.uniffi.Replier): Obj {
        val listener = listener(args)
        val name = free(args.str("name"))
        val mode = args.str("mode")
        when (mode) {
            "echo", "stream_echo", "hold", "reject", "drop" -> {}
            else -> throw BadRequest("unknown replier mode '$mode'")
        }
        val reason = args["reason"] as? String ?: "rejected"
        val replier = make(listener, args.str("path"), endpointOptionsArg(args))
        claim(name)
        spawn("replier $name") { background.serveReplier(replier, name, mode, reason) }
        return mapOf("address" to replier.address())
    }

    /** An acceptor: each exchange answered in `mode` as a replier's, each one-way stream read as
     * a `stream` puller's. */
    private fun opAcceptor(args: Obj): Obj {
        val listener = listener(args)
        val name = free(args.str("name"))
        val mode = args.str("mode")
        when (mode) {
            "echo", "stream_echo", "hold", "reject", "drop" -> {}
            else -> throw BadRequest("unknown acceptor mode '$mode'")
        }
        val reason = args["reason"] as? String ?: "rejected"
        val acceptor = listener.acceptor(args.str("path"), endpointOptionsArg(args))
        claim(name)
        spawn("acceptor $name") { background.serveAcceptor(acceptor, name, mode, reason) }
        return mapOf("address" to acceptor.address())
    }

    private fun opPuller(args: Obj): Obj {
        val listener = listener(args)
        val name = free(args.str("name"))
        val mode = args.str("mode")
        when (mode) {
            "recv", "stream", "manual" -> {}
            else -> throw BadRequest("unknown puller mode '$mode'")
        }
        val puller = listener.puller(args.str("path"), endpointOptionsArg(args))
        claim(name)
        when (mode) {
            "manual" -> pullers[name] = puller
            "stream" -> spawn("puller $name") { background.servePullerStreams(puller, name) }
            else -> spawn("puller $name") { background.servePuller(puller, name) }
        }
        return mapOf("address" to puller.address())
    }

    private fun dialler(args: Obj, make: (Runtime, weida.uniffi.EndpointOptions) -> Any): Obj {
        val rt = runtime(args)
        val name = free(args.str("name"))
        val ep = make(rt, endpointOptionsArg(args))
        dialling[name] = ep
        events[name] = eventsOf(ep)
        claim(name)
        return emptyMap()
    }

    private suspend fun opConnect(args: Obj): Obj {
        val ep = endpoint(args)
        val wait = args["wait"] ?: true
        if (wait !is Boolean) throw BadRequest("wait is true or false")
        val address = args.str("address")
        when (ep) {
            is Requester -> ep.connect(address, wait, null)
            is Surveyor -> ep.connect(address, wait, null)
            is Bus -> ep.connect(address, wait, null)
            is DialingPublisher -> ep.connect(address, wait, null)
            is Pair -> ep.connect(address, wait, null)
            is DialingPuller -> ep.connect(address, wait, null)
            is BoundPusher -> throw BadRequest("a bound pusher does not dial")
            is Pusher -> ep.connect(address, wait, null)
            is RawPeer -> ep.connect(address, wait, null)
            is Subscriber -> {
                ep.connect(address, wait, null)
                connected[ep]?.set()
            }
        }
        return mapOf("peer_count" to peerCount(ep))
    }

    private suspend fun opEvent(args: Obj): Obj {
        val name = args.str("endpoint")
        val ev = events[name] ?: throw BadRequest("no dialling endpoint or listener named '$name'")
        val kind = args.str("kind")
        val between = (args["between"] as? List<*>) ?: emptyList<Any?>()
        while (true) {
            val e = ev.next(null) ?: throw BadRequest("the endpoint is gone")
            val out = linkedMapOf<String, Any?>("kind" to e.kind)
            if (e.kind == "missed") out["missed"] = e.missed else out["url"] = e.url
            if (e.kind == "connected") out["fingerprint"] = e.fingerprint
            if (e.kind == "lost" || e.kind == "gave_up") out["cause"] = e.cause
            if (e.kind == "retrying") {
                out["attempt"] = e.attempt
                out["delay_ms"] = Math.round(e.delayMs ?: 0.0)
            }
            if (e.kind == kind) return out
            if (e.kind !in between) throw BadRequest("unexpected event ${Json.write(out)} before $kind")
        }
    }

    private fun opPublisher(args: Obj): Obj {
        val listener = listener(args)
        val name = free(args.str("name"))
        val p = listener.publisher(args.str("path"), null)
        claim(name)
        publishers[name] = p
        return mapOf("address" to p.address())
    }

    private fun opSubscriber(args: Obj): Obj {
        val rt = runtime(args)
        val name = free(args.str("name"))
        val mode = args.str("mode")
        if (mode != "recv" && mode != "manual") throw BadRequest("unknown subscriber mode '$mode'")
        val sub = rt.subscriber(null)
        claim(name)
        dialling[name] = sub
        events[name] = sub.events()
        if (mode == "manual") {
            receiving[name] = sub
        } else {
            connected[sub] = Flag()
            spawn("subscriber $name") { background.serveSubscriber(sub, name) }
        }
        return emptyMap()
    }

    /** A queue registration whose handler emits `handled` (body, attempt, path) for each job and
     * retries the bodies `retry` lists (their text), else is done. */
    private suspend fun opServiceQueue(args: Obj): Obj {
        val name = free(args.str("name"))
        val again = (args["retry"] as? List<*> ?: emptyList<Any>()).map { it.toString() }.toSet()
        val deadLetter = args["dead_letter"]?.let { it as? String ?: throw BadRequest("dead_letter is a string") }
        val reg = Service(runtime(args)).queue(
            listener(args),
            args.str("path"),
            concurrency = args.long("concurrency")?.toInt(),
            maxAttempts = args.long("max_attempts")?.toInt(),
            deadLetter = deadLetter,
        )
        claim(name)
        services[name] = reg
        spawn("service $name") {
            reg.serve { job ->
                val m = job.message()
                out.event("handled", name, messageJson(m) + mapOf("attempt" to job.attempt().toLong()))
                if (String(m.body) in again) Outcome.Retry else Outcome.Done
            }
        }
        return mapOf("address" to reg.address())
    }

    private fun opDropped(args: Obj): Obj {
        val dp = dialling[args.str("endpoint")] as? DialingPublisher
        if (args["topic"] != null && dp != null) throw BadRequest("a dialling publisher counts no drops per topic")
        val topic = args["topic"]
        if (topic != null && topic !is String) throw BadRequest("topic is a string")
        val d = dp?.dropped() ?: publisher(args).let { if (topic is String) it.droppedOn(topic) else it.dropped() }
        return mapOf(
            "queue_full" to d.queueFull, "byte_budget" to d.byteBudget, "reverse_pool_empty" to d.reversePoolEmpty,
            "dead_subscriber" to d.deadSubscriber, "refused" to d.refused, "total" to d.total,
        )
    }

    companion object {
        /** The ops whose API the binding does not export, with what is missing. */
        val UNEXPORTED = emptyMap<String, String>()

        /** The binding's version from its jar's manifest; the agent runs from classes, which have none. */
        val VERSION: String = Runtime::class.java.`package`?.implementationVersion ?: "unknown"
    }
}

private fun eventsOf(ep: Any): PeerEvents = when (ep) {
    is Requester -> ep.events()
    is Surveyor -> ep.events()
    is Pusher -> ep.events()
    is RawPeer -> ep.events()
    is Subscriber -> ep.events()
    is DialingPublisher -> ep.events()
    else -> throw IllegalStateException("not a dialling endpoint")
}

private fun peerCount(ep: Any): UInt = when (ep) {
    is Requester -> ep.peerCount()
    is Surveyor -> ep.peerCount()
    is Bus -> ep.peerCount()
    is DialingPublisher -> ep.peerCount()
    is Pair -> ep.peerCount()
    is DialingPuller -> ep.peerCount()
    is BoundPusher -> ep.peerCount()
    is Pusher -> ep.peerCount()
    is RawPeer -> ep.peerCount()
    is Subscriber -> ep.peerCount()
    else -> throw IllegalStateException("not a dialling endpoint")
}

private fun disconnect(ep: Any, address: String): Boolean = when (ep) {
    is Requester -> ep.disconnect(address)
    is Surveyor -> ep.disconnect(address)
    is Bus -> ep.disconnect(address)
    is DialingPublisher -> ep.disconnect(address)
    is Pair -> ep.disconnect(address)
    is DialingPuller -> ep.disconnect(address)
    is Pusher -> ep.disconnect(address)
    is RawPeer -> ep.disconnect(address)
    is Subscriber -> ep.disconnect(address)
    else -> throw IllegalStateException("not a dialling endpoint")
}
