"""The Python agent of the conformance suite (conformance/README.md, "The agent protocol").

Reads one JSON request per line on standard input, carries it out with weida's public API and
writes one JSON response per line on standard output, with events for the background work of
bound endpoints in between. Every request runs in a task of its own, so a request awaiting a
reply never blocks reading the next line. The Rust agent (conformance/rust-agent/src) is the
reference: each op and each background behaviour here mirrors it.

Run from the repository root by the runner, with the venv ``./dev test`` builds:

    target/py-venv/bin/python python/conformance/agent.py

Standard error is for logs; the agent exits 0 once standard input closes.

A subscriber in ``recv`` mode receives only while it has been connected: ``recv`` raises at once
before any connect (NOT_CONNECTED) and after every connection ended (CONNECTION_LOST), so the
background loop reports such an error once as ``receive_failed`` and then waits for the next
successful ``connect`` instead of spinning.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import weida

if TYPE_CHECKING:
    from weida._weida import _EndpointOptions as EndpointOptions

PROTOCOL = 1
TEXT_IN_SUMMARY = 1024
"""The longest body whose text a summary carries."""
SEQ_PERIOD = bytes(range(251))
"""One period of the ``seq`` pattern: byte i is (offset + i) mod 251."""

Json = dict[str, Any]
Dialling = (
    weida.Requester
    | weida.Pusher
    | weida.Subscriber
    | weida.Peer
    | weida.Surveyor
    | weida.Bus
    | weida.DialingPublisher
    | weida.Pair
    | weida.DialingPuller
)
ORDERINGS = ("none", "detect", "reassemble")


class BadRequest(Exception):
    """A request this agent cannot carry out (AGENT_BAD_REQUEST, never expected by a scenario)."""


# --- bodies (README §Bodies) ---------------------------------------------------------------


def make_body(spec: Any) -> bytes:
    """The bytes a body spec names: ``{"text"}``, ``{"hex"}`` or ``{"size", "pattern"?,
    "offset"?}`` (seq: byte i is (offset + i) mod 251)."""
    if not isinstance(spec, dict):
        raise BadRequest("a body is an object")
    if "text" in spec:
        if not isinstance(spec["text"], str):
            raise BadRequest("body.text is a string")
        return spec["text"].encode()
    if "hex" in spec:
        if not isinstance(spec["hex"], str):
            raise BadRequest("body.hex is a string")
        try:
            return bytes.fromhex(spec["hex"])
        except ValueError as e:
            raise BadRequest(f"body.hex is not hex: {e}") from None
    size = non_negative(spec.get("size"), "body.size")
    if size is None:
        raise BadRequest("a body has text, hex, or size and pattern")
    offset = non_negative(spec.get("offset"), "body.offset") or 0
    pattern = spec.get("pattern", "seq")
    if pattern == "zero":
        return bytes(size)
    if pattern == "seq":
        start = offset % 251
        return (SEQ_PERIOD * ((start + size) // 251 + 1))[start : start + size]
    raise BadRequest(f"unknown body pattern {pattern!r}")


class Tally:
    """A running summary of a body read in chunks."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.size = 0
        self.head = bytearray()

    def add(self, chunk: bytes) -> None:
        self.hash.update(chunk)
        self.size += len(chunk)
        if len(self.head) <= TEXT_IN_SUMMARY:
            self.head += chunk[: TEXT_IN_SUMMARY + 1 - len(self.head)]

    def summary(self) -> Json:
        out: Json = {"size": self.size, "sha256": self.hash.hexdigest()}
        if self.size <= TEXT_IN_SUMMARY:
            try:
                out["text"] = self.head.decode()
            except UnicodeDecodeError:
                pass
        return out


def summary(body: bytes) -> Json:
    """How a received body is reported: size, SHA-256 and, when short UTF-8, its text."""
    t = Tally()
    t.add(body)
    return t.summary()


# --- the protocol's vocabulary (README §Errors, §Bodies) -----------------------------------


def error_json(e: weida.WeidaError) -> Json:
    """``{"code", "message", "definite", ...}``, read off the exception's attributes."""
    out: Json = {"code": e.code, "message": e.message, "definite": e.definite}
    if isinstance(e, (weida.ConnectionLost, weida.Indeterminate)):
        out["loss_cause"] = e.loss_cause
    elif isinstance(e, weida.UnknownEndpoint):
        out["path"] = e.path
    elif isinstance(e, weida.Untrusted):
        out["fingerprint"] = e.fingerprint
        out["expected"] = e.expected
    return out


def peer_json(peer: weida.PeerKey | weida.PeerLocal | None) -> Json | None:
    if peer is None:
        return None
    if isinstance(peer, weida.PeerKey):
        return {"kind": "key", "fingerprint": peer.fingerprint}
    if isinstance(peer, weida.PeerLocal):
        return {"kind": "local", "uid": peer.uid, "gid": peer.gid, "pid": peer.pid}
    return {"kind": "other", "text": str(peer)}


def metadata_json(pairs: list[tuple[str, bytes]]) -> Json:
    """Text values as strings, others as ``{"hex": ...}``; the last of repeated names."""
    out: Json = {}
    for name, value in pairs:
        try:
            out[name] = value.decode()
        except UnicodeDecodeError:
            out[name] = {"hex": value.hex()}
    return out


def meta_fields(meta: weida.IncomingMeta) -> Json:
    return {
        "path": meta.path,
        "metadata": metadata_json(meta.metadata),
        "peer": peer_json(meta.peer),
    }


def message_json(m: weida.Message) -> Json:
    return {**meta_fields(m.meta), "body": summary(m.body)}


def copy_json(m: weida.Message) -> Json:
    """A message a subscriber received: ``message_json`` with ``topic``, ``sequence`` and
    ``gap`` (null when absent)."""
    meta = m.meta
    return {**message_json(m), "topic": meta.topic, "sequence": meta.sequence, "gap": meta.gap}


# --- arguments -----------------------------------------------------------------------------


def str_arg(args: Json, key: str) -> str:
    v = args.get(key)
    if not isinstance(v, str):
        raise BadRequest(f"missing string argument {key!r}")
    return v


def non_negative(v: Any, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise BadRequest(f"{what} is a non-negative integer")
    return v


def int_arg(args: Json, key: str) -> int | None:
    return non_negative(args.get(key), f"argument {key!r}")


def bool_arg(args: Json, key: str, default: bool) -> bool:
    v = args.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise BadRequest(f"argument {key!r} is a boolean")
    return v


def metadata_arg(args: Json) -> dict[str, str]:
    m = args.get("metadata")
    if m is None:
        return {}
    if not isinstance(m, dict) or not all(isinstance(v, str) for v in m.values()):
        raise BadRequest("metadata is an object of strings")
    return dict(m)


def body_arg(args: Json) -> bytes:
    return make_body(args.get("body"))


def trust_arg(v: Any) -> weida.Trust:
    """``"address"``, ``"unverified"`` or ``{"pinned": ["sha256:…", …]}``."""
    if v == "address":
        return weida.Trust.address()
    if v == "unverified":
        return weida.Trust.unverified()
    if isinstance(v, dict) and isinstance(v.get("pinned"), list):
        if not all(isinstance(p, str) for p in v["pinned"]):
            raise BadRequest("a pin is a string")
        return weida.Trust.pinned(v["pinned"])
    raise BadRequest(f"unknown trust {v!r}")


LIMIT_NAMES = (
    "stream_receive_window",
    "connection_receive_window",
    "send_window",
    "max_concurrent_uni_streams",
    "max_concurrent_bidi_streams",
    "max_local_streams",
    "endpoint_queue",
    "peer_share",
    "max_header_size",
    "max_collected_body",
    "subscriber_buffer_bytes",
    "max_reorder_hold",
    "max_parked_reverse",
    "max_filters",
    "max_udp_payload",
    "max_connections",
    "max_local_peer_connections",
)


def endpoint_options(args: Json) -> EndpointOptions:
    """The step's `options` (an endpoint's own bounds) as keyword arguments."""
    v = args.get("options") or {}
    if not isinstance(v, dict):
        raise BadRequest("options is an object")
    out: EndpointOptions = {}
    for k, val in v.items():
        if k == "max_collected_body":
            n = non_negative(val, f"options.{k}")
            if n is not None:
                out["max_collected_body"] = n
        elif k == "endpoint_queue":
            n = non_negative(val, f"options.{k}")
            if n is not None:
                out["endpoint_queue"] = n
        elif k == "send_timeout_ms":
            ms = non_negative(val, f"options.{k}")
            out["send_timeout"] = None if ms is None else ms / 1000
        elif k in ("outbox_messages", "outbox_bytes"):
            n = non_negative(val, f"options.{k}")
            if n is not None:
                out[k] = n  # type: ignore[literal-required]
        elif k == "reconnect":
            out["reconnect"] = reconnect_arg(val)
        elif k == "outbox_full":
            if val not in ("block", "drop", "reject"):
                raise BadRequest("options.outbox_full is block, drop or reject")
            out["outbox_full"] = val
        else:
            raise BadRequest(f"unknown endpoint option {k!r}")
    return out


def reconnect_arg(v: Any) -> weida.ReconnectPolicy:
    """A runtime step's `reconnect`; absent, the runtime does not redial (the scenarios written
    before redial assert that behaviour)."""
    if v is None:
        return weida.ReconnectPolicy.never()
    if not isinstance(v, dict):
        raise BadRequest("reconnect is an object")
    kw: dict[str, Any] = {}
    for k, val in v.items():
        if k in ("initial_ms", "max_ms", "give_up_after_ms"):
            ms = non_negative(val, f"reconnect.{k}")
            kw[k.removesuffix("_ms")] = None if ms is None else ms / 1000
        elif k == "give_up_after_attempts":
            kw[k] = non_negative(val, f"reconnect.{k}")
        elif k == "jitter":
            if not isinstance(val, bool):
                raise BadRequest("reconnect.jitter is a boolean")
            kw[k] = val
        else:
            raise BadRequest(f"unknown reconnect option {k!r}")
    return weida.ReconnectPolicy(**kw)


def limits_arg(v: Any) -> weida.Limits | None:
    """``weida.Limits`` from ``{"idle_timeout_ms": …, "keep_alive_ms": null, …}``."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise BadRequest("limits is an object")
    kw: dict[str, Any] = {}
    for k, val in v.items():
        if k in LIMIT_NAMES:
            kw[k] = non_negative(val, f"limits.{k}")
        elif k == "idle_timeout_ms":
            kw["idle_timeout"] = (non_negative(val, f"limits.{k}") or 0) / 1000
        elif k == "keep_alive_ms":
            ms = non_negative(val, f"limits.{k}")
            kw["keep_alive"] = None if ms is None else ms / 1000
        elif k in (
            "fanout_wait_ms",
            "header_timeout_ms",
            "body_idle_timeout_ms",
            "connect_timeout_ms",
        ):
            kw[k.removesuffix("_ms")] = (non_negative(val, f"limits.{k}") or 0) / 1000
        else:
            raise BadRequest(f"unknown limit {k!r}")
    return weida.Limits(**kw)


# --- output --------------------------------------------------------------------------------


class Out:
    """Responses and events, one line each. Written from the event loop's thread only, so lines
    never interleave."""

    def __init__(self) -> None:
        self.stream = sys.stdout

    def line(self, obj: Json) -> None:
        try:
            self.stream.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self.stream.flush()
        except (BrokenPipeError, OSError):
            pass  # the runner is gone; nothing to tell it

    def event(self, name: str, handle: str, **fields: Any) -> None:
        self.line({"event": name, "handle": handle, **fields})

    def event_error(self, name: str, handle: str, e: weida.WeidaError) -> None:
        self.event(name, handle, error=error_json(e))


# --- the agent -----------------------------------------------------------------------------


class Agent:
    def __init__(self, out: Out) -> None:
        self.out = out
        self.names: set[str] = set()  # every handle name in use: never reused in one agent
        self.runtimes: dict[str, weida.Runtime] = {}
        self.listeners: dict[str, weida.Listener] = {}
        self.dialling: dict[str, Dialling] = {}
        self.collectors: dict[str, weida.BoundSubscriber] = {}
        self.bound_pushers: dict[str, weida.BoundPusher] = {}
        # Each dialling endpoint's events, read from its making on (the `event` op).
        self.events: dict[str, weida.PeerEvents] = {}
        self.pullers: dict[str, weida.Puller] = {}  # pullers in manual mode, for the recv op
        self.transfers: dict[str, weida.OutgoingTransfer] = {}
        self.replies: dict[str, weida.PendingReply] = {}
        self.held: list[weida.Exchange] = []  # exchanges a `hold` replier keeps, unanswered
        self.publishers: dict[str, weida.Publisher] = {}
        self.fanouts: dict[str, weida.FanOut] = {}
        self.receiving: dict[str, weida.Subscriber] = {}  # subscribers in manual mode
        # Set by a successful connect: a `recv` mode subscriber's loop waits for it.
        self.connected: dict[weida.Subscriber, asyncio.Event] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.services: dict[str, weida.service.Registration] = {}  # for service_counters

    def spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        """Runs a background task, keeping a reference so it is not collected midway."""

        async def guarded() -> None:
            try:
                await coro
            except Exception:
                print(f"agent: {what} failed unexpectedly:", file=sys.stderr)
                traceback.print_exc(file=sys.stderr)

        task = asyncio.ensure_future(guarded())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def shutdown_all(self) -> None:
        for rt in self.runtimes.values():
            rt.shutdown()

    # handles

    def free(self, name: str) -> str:
        """Checks that an op may create a handle named ``name`` (before it creates anything)."""
        if not name or name in self.names:
            raise BadRequest(f"handle name {name!r} is empty or taken")
        return name

    def claim(self, name: str) -> None:
        self.free(name)
        self.names.add(name)

    def _get(self, table: dict[str, Any], kind: str, args: Json, key: str) -> Any:
        name = str_arg(args, key)
        if name not in table:
            raise BadRequest(f"no {kind} named {name!r} (or it is in use by another op)")
        return table[name]

    def runtime(self, args: Json) -> weida.Runtime:
        rt: weida.Runtime = self._get(self.runtimes, "runtime", args, "runtime")
        return rt

    def listener(self, args: Json) -> weida.Listener:
        li: weida.Listener = self._get(self.listeners, "listener", args, "listener")
        return li

    def endpoint(self, args: Json) -> Dialling:
        kinds = "requester, pusher, subscriber or peer"
        d: Dialling = self._get(self.dialling, kinds, args, "endpoint")
        return d

    def subscriber_of(self, args: Json, key: str) -> weida.Subscriber:
        s = self._get(self.dialling, "subscriber", args, key)
        if not isinstance(s, weida.Subscriber):
            raise BadRequest(f"{args[key]!r} is not a subscriber")
        return s

    def publisher(self, args: Json) -> weida.Publisher:
        p: weida.Publisher = self._get(self.publishers, "publisher", args, "endpoint")
        return p

    def take_transfer(self, args: Json) -> tuple[str, weida.OutgoingTransfer]:
        t: weida.OutgoingTransfer = self._get(self.transfers, "transfer", args, "transfer")
        name = str_arg(args, "transfer")
        del self.transfers[name]
        return name, t

    # ops

    async def run(self, op: str, args: Json) -> Json:
        handler: Callable[[Json], Awaitable[Json]] | None = getattr(self, f"op_{op}", None)
        if handler is None:
            raise BadRequest(f"unknown op {op!r}")
        return await handler(args)

    async def op_hello(self, args: Json) -> Json:
        return {
            "protocol": PROTOCOL,
            "language": "python",
            "agent": "python/conformance/agent.py",
            "weida": weida.__version__,
        }

    async def op_runtime(self, args: Json) -> Json:
        name = self.free(str_arg(args, "name"))
        identity = args.get("identity")
        kw: dict[str, Any] = {}
        if identity is not None:
            if not isinstance(identity, dict) or not isinstance(identity.get("dir"), str):
                raise BadRequest('identity is {"dir": path} or absent (ephemeral)')
            kw["identity"] = weida.Identity.load_or_create(identity["dir"])
        if "trust" in args:
            kw["trust"] = trust_arg(args["trust"])
        kw["present_identity"] = bool_arg(args, "present_identity", True)
        limits = limits_arg(args.get("limits"))
        if limits is not None:
            kw["limits"] = limits
        ms = int_arg(args, "send_timeout_ms")
        if ms is not None:
            kw["send_timeout"] = ms / 1000
        ordering = args.get("ordering", "none")
        if ordering not in ORDERINGS:
            raise BadRequest(f"ordering is one of {ORDERINGS}, not {ordering!r}")
        kw["ordering"] = ordering
        lanes = int_arg(args, "lane_max_message")
        if lanes is not None:
            kw["lane_max_message"] = lanes
        kw["reconnect"] = reconnect_arg(args.get("reconnect"))
        rt = weida.Runtime(**kw)
        self.claim(name)
        self.runtimes[name] = rt
        return {"fingerprint": rt.fingerprint}

    async def op_bind(self, args: Json) -> Json:
        rt = self.runtime(args)
        name = self.free(str_arg(args, "name"))
        address = str_arg(args, "address")
        require_client = args.get("require_client")
        if require_client is None:
            listener = await rt.bind(address)
        else:
            listener = await rt.bind(address, require_client=trust_arg(require_client))
        self.claim(name)
        self.listeners[name] = listener
        # A listener's connections are events too (PATTERNS §1.8): `event` reads them by its name.
        self.events[name] = listener.events()
        return {"address": listener.address}

    async def op_close(self, args: Json) -> Json:
        self.listener(args).close()
        return {}

    async def op_shutdown(self, args: Json) -> Json:
        self.runtime(args).shutdown()
        return {}

    async def op_drain(self, args: Json) -> Json:
        rt = self.runtime(args)
        ms = int_arg(args, "deadline_ms")
        if ms is None:
            raise BadRequest("drain needs deadline_ms")
        d = await rt.drain(ms / 1000)
        return {"delivered": d.delivered, "outstanding": d.outstanding, "unsent": d.unsent}

    async def op_counters(self, args: Json) -> Json:
        c = self.runtime(args).counters()
        return {
            "streams_opened": c.streams_opened,
            "streams_accepted": c.streams_accepted,
            "streams_refused": c.streams_refused,
            "bytes_sent": c.bytes_sent,
            "bytes_received": c.bytes_received,
            "connections_dialled": c.connections_dialled,
            "connections_accepted": c.connections_accepted,
            "receipts_delivered": c.receipts_delivered,
            "receipts_failed": c.receipts_failed,
            "copies_published": c.copies_published,
            "lane_messages_sent": c.lane_messages_sent,
            "lane_messages_received": c.lane_messages_received,
            "lane_messages_lost": c.lane_messages_lost,
            "outbox_queued": c.outbox_queued,
            "outbox_written": c.outbox_written,
            "outbox_dropped": c.outbox_dropped,
            "outbox_abandoned": c.outbox_abandoned,
        }

    async def op_replier(self, args: Json) -> Json:
        return self.answering(args, "replier")

    async def op_acceptor(self, args: Json) -> Json:
        return self.answering(args, "acceptor")

    async def op_respondent(self, args: Json) -> Json:
        return self.answering(args, "respondent")

    def answering(self, args: Json, kind: str) -> Json:
        """A replier or an acceptor, served in the background in a replier's mode."""
        listener = self.listener(args)
        name = self.free(str_arg(args, "name"))
        mode = str_arg(args, "mode")
        if mode not in ("echo", "stream_echo", "hold", "reject", "drop"):
            raise BadRequest(f"unknown {kind} mode {mode!r}")
        reason = args.get("reason")
        reason = reason if isinstance(reason, str) else "rejected"
        path = str_arg(args, "path")
        opts = endpoint_options(args)
        endpoint = (
            listener.acceptor(path, **opts)
            if kind == "acceptor"
            else listener.respondent(path, **opts)
            if kind == "respondent"
            else listener.replier(path, **opts)
        )
        self.claim(name)
        self.spawn(self.serve_answering(endpoint, name, mode, reason), f"{kind} {name}")
        return {"address": endpoint.address}

    async def op_puller(self, args: Json) -> Json:
        listener = self.listener(args)
        name = self.free(str_arg(args, "name"))
        mode = str_arg(args, "mode")
        if mode not in ("recv", "stream", "manual"):
            raise BadRequest(f"unknown puller mode {mode!r}")
        puller = listener.puller(str_arg(args, "path"), **endpoint_options(args))
        self.claim(name)
        if mode == "manual":
            self.pullers[name] = puller
        else:
            self.spawn(self.serve_puller(puller, name, mode), f"puller {name}")
        return {"address": puller.address}

    async def op_requester(self, args: Json) -> Json:
        return self.dialler(args, lambda rt, o: rt.requester(**o))

    async def op_surveyor(self, args: Json) -> Json:
        return self.dialler(args, lambda rt, o: rt.surveyor(**o))

    async def op_pusher(self, args: Json) -> Json:
        return self.dialler(args, lambda rt, o: rt.pusher(**o))

    async def op_peer(self, args: Json) -> Json:
        return self.dialler(args, lambda rt, o: rt.peer(**o))

    def dialler(
        self, args: Json, make: Callable[[weida.Runtime, EndpointOptions], Dialling]
    ) -> Json:
        rt = self.runtime(args)
        name = self.free(str_arg(args, "name"))
        ep = make(rt, endpoint_options(args))
        self.dialling[name] = ep
        self.events[name] = ep.events()
        self.claim(name)
        return {}

    async def op_connect(self, args: Json) -> Json:
        ep = self.endpoint(args)
        wait = args.get("wait", True)
        if not isinstance(wait, bool):
            raise BadRequest("wait is true or false")
        await ep.connect(str_arg(args, "address"), wait=wait)
        if isinstance(ep, weida.Subscriber) and ep in self.connected:
            self.connected[ep].set()
        return {"peer_count": ep.peer_count}

    async def op_event(self, args: Json) -> Json:
        name = str_arg(args, "endpoint")
        events = self.events.get(name)
        if events is None:
            raise BadRequest(f"no dialling endpoint or listener named {name!r}")
        kind = str_arg(args, "kind")
        between = args.get("between") or []
        while True:
            try:
                e = await events.next()
            except StopAsyncIteration:
                raise BadRequest("the endpoint is gone") from None
            out: Json = {"kind": e.kind}
            if e.kind == "missed":
                out["missed"] = e.missed
            else:
                out["url"] = e.url
            if e.kind == "connected":
                out["fingerprint"] = e.fingerprint
            if e.kind in ("lost", "gave_up"):
                out["cause"] = e.cause
            if e.kind == "retrying":
                out["attempt"] = e.attempt
                out["delay_ms"] = round((e.delay or 0) * 1000)
            if e.kind == kind:
                return out
            if e.kind not in between:
                raise BadRequest(f"unexpected event {out} before {kind}")

    async def op_disconnect(self, args: Json) -> Json:
        ep = self.endpoint(args)
        return {"removed": ep.disconnect(str_arg(args, "address"))}

    async def op_peer_count(self, args: Json) -> Json:
        bound = self.bound_pushers.get(str_arg(args, "endpoint"))
        if bound is not None:
            return {"peer_count": bound.peer_count}
        return {"peer_count": self.endpoint(args).peer_count}

    async def op_request(self, args: Json) -> Json:
        r = self.endpoint(args)
        if not isinstance(r, weida.Requester):
            raise BadRequest("request needs a requester")
        body, meta = body_arg(args), metadata_arg(args)
        return message_json(await r.request_with(body, meta))

    async def op_survey(self, args: Json) -> Json:
        """Asks, then reads every answer until the run ends: how many were asked, answered,
        and the codes of those that failed (sorted), and the late count."""
        s = self.endpoint(args)
        if not isinstance(s, weida.Surveyor):
            raise BadRequest("survey needs a surveyor")
        deadline = args.get("deadline_ms")
        if not isinstance(deadline, int | float) or isinstance(deadline, bool):
            raise BadRequest("deadline_ms is a number")
        run = await s.survey(body_arg(args), deadline / 1000, metadata_arg(args))
        answered, errors = 0, []
        async for a in run:
            if isinstance(a, weida.WeidaError):
                errors.append(a.code)
            else:
                answered += 1
        return {
            "respondents": run.respondents,
            "answered": answered,
            "errors": sorted(errors),
            "late": run.late,
        }

    async def op_send(self, args: Json) -> Json:
        bound = self.bound_pushers.get(str_arg(args, "endpoint"))
        if bound is not None:
            await bound.send(body_arg(args), metadata_arg(args))
            return {}
        p = self.endpoint(args)
        body, meta = body_arg(args), metadata_arg(args)
        if isinstance(p, weida.Bus):
            return {"queued": await p.send(body, meta)}
        if not isinstance(p, weida.Pusher | weida.Pair):
            raise BadRequest("send needs a pusher, a bus member or a pair")
        await p.send(body, meta)
        return {}

    async def op_bus(self, args: Json) -> Json:
        """A bus member: dialling (``connect``, ``send``) and bound, received as a ``recv``
        puller is."""
        rt, listener = self.runtime(args), self.listener(args)
        name = self.free(str_arg(args, "name"))
        bus = rt.bus(listener, str_arg(args, "path"), **endpoint_options(args))
        self.dialling[name] = bus
        self.events[name] = bus.events()
        self.claim(name)
        self.spawn(self.serve_puller(bus, name, "recv"), f"bus {name}")
        return {"address": bus.address}

    async def op_try_send(self, args: Json) -> Json:
        p = self.endpoint(args)
        if not isinstance(p, weida.Pusher):
            raise BadRequest("try_send needs a pusher")
        return {"sent": p.try_send(body_arg(args))}

    async def op_send_many(self, args: Json) -> Json:
        p = self.endpoint(args)
        if not isinstance(p, weida.Pusher):
            raise BadRequest("send_many needs a pusher")
        specs = args.get("bodies")
        if not isinstance(specs, list):
            raise BadRequest("send_many needs a list of bodies")
        bodies = [make_body(b) for b in specs]
        await p.send_many(bodies)
        return {"sent": len(bodies)}

    async def op_open(self, args: Json) -> Json:
        meta = metadata_arg(args)
        ep = self.endpoint(args)
        if not isinstance(ep, weida.Pusher | weida.Requester | weida.Peer):
            raise BadRequest("open needs a pusher, a requester or a peer")
        tname = self.free(str_arg(args, "transfer"))
        # A peer opens a one-way stream, or with `reply` an exchange.
        if isinstance(ep, weida.Pusher) or (isinstance(ep, weida.Peer) and "reply" not in args):
            t = await ep.open(meta)
            self.claim(tname)
            self.transfers[tname] = t
        else:
            rname = self.free(str_arg(args, "reply"))
            t, reply = await (ep.exchange(meta) if isinstance(ep, weida.Peer) else ep.open(meta))
            self.claim(tname)
            self.claim(rname)
            self.transfers[tname] = t
            self.replies[rname] = reply
        return {}

    async def op_write(self, args: Json) -> Json:
        body = body_arg(args)
        chunk = max(int_arg(args, "chunk") or 65536, 1)
        name, t = self.take_transfer(args)
        try:
            for at in range(0, len(body), chunk):
                await t.write(body[at : at + chunk])
        finally:
            # Kept after a failed write too, so a scenario can still cancel it.
            self.transfers[name] = t
        return {"written": len(body)}

    async def op_finish(self, args: Json) -> Json:
        delivered = bool_arg(args, "delivered", False)
        _, t = self.take_transfer(args)
        delivery = await t.finish()
        if delivered:
            await delivery.delivered()
            return {"delivered": True}
        return {}

    async def op_cancel(self, args: Json) -> Json:
        _, t = self.take_transfer(args)
        t.cancel()
        return {}

    async def op_reply_body(self, args: Json) -> Json:
        reply: weida.PendingReply = self._get(self.replies, "pending reply", args, "reply")
        del self.replies[str_arg(args, "reply")]
        return message_json(await reply.body())

    async def op_recv(self, args: Json) -> Json:
        p: weida.Puller = self._get(self.pullers, "manual puller", args, "puller")
        return message_json(await p.recv())

    async def op_recv_many(self, args: Json) -> Json:
        p: weida.Puller = self._get(self.pullers, "manual puller", args, "puller")
        count = int_arg(args, "count")
        if count is None:
            raise BadRequest("recv_many needs a count")
        given = int_arg(args, "max")
        most = max(64 if given is None else given, 1)
        # Batches until `count`, each at most what is left: none taken beyond it.
        messages: list[Json] = []
        batches = 0
        while len(messages) < count:
            batch = await p.recv_many(min(most, count - len(messages)))
            batches += 1
            messages.extend(message_json(m) for m in batch)
        return {"messages": messages, "batches": batches}

    # Pub/Sub

    async def op_publisher(self, args: Json) -> Json:
        listener = self.listener(args)
        name = self.free(str_arg(args, "name"))
        publisher = listener.publisher(str_arg(args, "path"))
        self.claim(name)
        self.publishers[name] = publisher
        return {"address": publisher.address}

    async def op_subscriber(self, args: Json) -> Json:
        rt = self.runtime(args)
        name = self.free(str_arg(args, "name"))
        mode = str_arg(args, "mode")
        if mode not in ("recv", "manual"):
            raise BadRequest(f"unknown subscriber mode {mode!r}")
        sub = rt.subscriber()
        self.claim(name)
        self.dialling[name] = sub
        self.events[name] = sub.events()
        if mode == "manual":
            self.receiving[name] = sub
        else:
            self.connected[sub] = asyncio.Event()
            self.spawn(self.serve_subscriber(sub, name), f"subscriber {name}")
        return {}

    async def op_pair(self, args: Json) -> Json:
        """A pair: bound with ``listener`` and ``path``, else dialling through ``runtime``;
        received as a ``recv`` puller is, from its making on."""
        name = self.free(str_arg(args, "name"))
        if "listener" in args:
            p = self.listener(args).pair(str_arg(args, "path"), **endpoint_options(args))
        else:
            p = self.runtime(args).pair(**endpoint_options(args))
        self.claim(name)
        self.dialling[name] = p
        if p.address is None:
            self.events[name] = p.events()
        self.spawn(self.serve_puller(p, name, "recv"), f"pair {name}")
        return {} if p.address is None else {"address": p.address}

    async def op_bound_pusher(self, args: Json) -> Json:
        """A pusher bound at ``path``: it deals to the dialling pullers that claimed it."""
        name = self.free(str_arg(args, "name"))
        p = self.listener(args).pusher(str_arg(args, "path"), **endpoint_options(args))
        self.claim(name)
        self.bound_pushers[name] = p
        return {"address": p.address}

    async def op_service_queue(self, args: Json) -> Json:
        """A queue registration whose handler emits ``handled`` (body, attempt, path) for each
        job and retries the bodies ``retry`` lists (their text), else is done."""
        name = self.free(str_arg(args, "name"))
        retry = {str(b) for b in args.get("retry", [])}
        reg = await weida.service.Service(self.runtime(args)).queue(
            self.listener(args),
            str_arg(args, "path"),
            max_attempts=int_arg(args, "max_attempts"),
            concurrency=int_arg(args, "concurrency"),
            dead_letter=args.get("dead_letter"),
        )
        self.claim(name)
        self.services[name] = reg
        out = self.out

        async def handle(job: weida.service.Job) -> weida.service.Outcome | None:
            m = job.message
            out.event("handled", name, **message_json(m), attempt=job.attempt)
            return weida.service.retry() if m.body.decode(errors="replace") in retry else None

        self.spawn(weida.service.serve(reg, handle), f"service {name}")
        return {"address": reg.address}

    async def op_service_counters(self, args: Json) -> Json:
        c = self.services[str_arg(args, "endpoint")].counters
        return {k: c[k] for k in ("handled", "retried", "dead_lettered", "dropped", "failed")}

    async def op_dialing_puller(self, args: Json) -> Json:
        """A puller that dials bound pushers, received as a ``recv`` puller is."""
        name = self.free(str_arg(args, "name"))
        p = self.runtime(args).puller(**endpoint_options(args))
        self.claim(name)
        self.dialling[name] = p
        self.events[name] = p.events()
        self.spawn(self.serve_puller(p, name, "recv"), f"dialling puller {name}")
        return {}

    async def op_dialing_publisher(self, args: Json) -> Json:
        """A publisher that dials bound subscribers (collectors)."""
        rt = self.runtime(args)
        name = self.free(str_arg(args, "name"))
        p = rt.publisher(**endpoint_options(args))
        self.claim(name)
        self.dialling[name] = p
        self.events[name] = p.events()
        return {}

    async def op_bound_subscriber(self, args: Json) -> Json:
        """A collector, received as a subscriber's copies are, from its binding on."""
        listener = self.listener(args)
        name = self.free(str_arg(args, "name"))
        c = listener.subscriber(str_arg(args, "path"), **endpoint_options(args))
        self.claim(name)
        self.collectors[name] = c
        self.spawn(self.serve_collector(c, name), f"collector {name}")
        return {"address": c.address}

    async def op_subscribe(self, args: Json) -> Json:
        c = self.collectors.get(str_arg(args, "endpoint"))
        if c is not None:
            c.subscribe(str_arg(args, "filter"))
            return {}
        await self.subscriber_of(args, "endpoint").subscribe(str_arg(args, "filter"))
        return {}

    async def op_unsubscribe(self, args: Json) -> Json:
        c = self.collectors.get(str_arg(args, "endpoint"))
        if c is not None:
            return {"removed": c.unsubscribe(str_arg(args, "filter"))}
        sub = self.subscriber_of(args, "endpoint")
        return {"removed": await sub.unsubscribe(str_arg(args, "filter"))}

    async def op_receive(self, args: Json) -> Json:
        sub: weida.Subscriber = self._get(self.receiving, "manual subscriber", args, "subscriber")
        return copy_json(await sub.recv())

    async def op_queued(self, args: Json) -> Json:
        return {"queued": self.subscriber_of(args, "subscriber").queued}

    async def op_publish(self, args: Json) -> Json:
        d = self.dialling.get(str_arg(args, "endpoint"))
        if isinstance(d, weida.DialingPublisher):
            return {"queued": d.publish(str_arg(args, "topic"), body_arg(args))}
        p = self.publisher(args)
        return {"queued": p.publish(str_arg(args, "topic"), body_arg(args))}

    async def op_dropped(self, args: Json) -> Json:
        topic = args.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise BadRequest("topic is a string or absent")
        dp = self.dialling.get(str_arg(args, "endpoint"))
        if isinstance(dp, weida.DialingPublisher):
            if topic is not None:
                raise BadRequest("a dialling publisher counts no drops per topic")
            d = dp.dropped()
        else:
            p = self.publisher(args)
            d = p.dropped() if topic is None else p.dropped_on(topic)
        return {
            "queue_full": d.queue_full,
            "byte_budget": d.byte_budget,
            "reverse_pool_empty": d.reverse_pool_empty,
            "dead_subscriber": d.dead_subscriber,
            "refused": d.refused,
            "total": d.total,
        }

    async def op_subscriber_count(self, args: Json) -> Json:
        return {"subscriber_count": self.publisher(args).subscriber_count}

    async def op_fanout(self, args: Json) -> Json:
        p = self.publisher(args)
        name = self.free(str_arg(args, "fanout"))
        fan = p.open(str_arg(args, "topic"))
        self.claim(name)
        self.fanouts[name] = fan
        return {"copies": fan.copies}

    def take_fanout(self, args: Json) -> tuple[str, weida.FanOut]:
        fan: weida.FanOut = self._get(self.fanouts, "fan-out", args, "fanout")
        name = str_arg(args, "fanout")
        del self.fanouts[name]
        return name, fan

    async def op_fanout_write(self, args: Json) -> Json:
        body = body_arg(args)
        chunk = max(int_arg(args, "chunk") or 65536, 1)
        now = bool_arg(args, "now", False)
        name, fan = self.take_fanout(args)
        try:
            for at in range(0, len(body), chunk):
                if now:
                    fan.write_now(body[at : at + chunk])
                else:
                    await fan.write(body[at : at + chunk])
        finally:
            self.fanouts[name] = fan
        return {"copies": fan.copies}

    async def op_fanout_finish(self, args: Json) -> Json:
        _, fan = self.take_fanout(args)
        return {"copies": fan.finish()}

    # background behaviours (README §Background behaviours and events)

    async def serve_answering(
        self, endpoint: weida.Replier | weida.Acceptor, handle: str, mode: str, reason: str
    ) -> None:
        """Answers each exchange in `mode`; reads each one-way stream (an acceptor's) as a
        `stream` puller does."""
        while True:
            try:
                incoming = await endpoint.accept()
            except weida.WeidaError as e:
                self.out.event_error("closed", handle, e)
                return
            self.out.event("accepted", handle, **meta_fields(incoming.meta))
            if isinstance(incoming, weida.Exchange):
                work = self.exchange(incoming, handle, mode, reason)
                self.spawn(work, f"an exchange of {handle}")
            else:
                self.spawn(self.read_transfer(incoming, handle), f"a transfer to {handle}")
            # The task owns it now: a `drop` must be the last reference going.
            del incoming

    async def exchange(self, ex: weida.Exchange, handle: str, mode: str, reason: str) -> None:
        out = self.out
        if mode == "reject":
            try:
                await ex.reject(reason)
            except weida.WeidaError as e:
                out.event_error("reply_failed", handle, e)
            else:
                out.event("rejected", handle)
            return
        if mode == "stream_echo":
            await self.stream_echo(ex, handle)
            return
        meta = ex.meta.metadata
        try:
            body = await ex.take_body()
        except weida.WeidaError as e:
            out.event_error("request_failed", handle, e)
            return
        out.event("request", handle, body=summary(body), metadata=metadata_json(meta))
        if mode == "echo":
            try:
                await ex.reply(body, meta)
            except weida.WeidaError as e:
                out.event_error("reply_failed", handle, e)
            else:
                out.event("replied", handle)
        elif mode == "hold":
            self.held.append(ex)  # kept, never answered
        elif mode == "drop":
            del ex  # the last reference: the exchange is dropped unanswered
            out.event("dropped", handle)

    async def stream_echo(self, ex: weida.Exchange, handle: str) -> None:
        """Reads the request chunk by chunk, then writes the same chunks back through
        ``open_reply`` (which takes the whole exchange, so the request is read to its end first)."""
        out = self.out
        meta = ex.meta.metadata
        tally = Tally()
        chunks: list[bytes] = []
        while True:
            try:
                c = await ex.read_chunk()
            except weida.WeidaError as e:
                out.event_error("request_failed", handle, e)
                return
            if c is None:
                break
            if not chunks:
                out.event("receiving", handle, size=len(c))
            tally.add(c)
            chunks.append(c)
        out.event("request", handle, body=tally.summary(), metadata=metadata_json(meta))
        try:
            reply = await ex.open_reply(meta)
            for c in chunks:
                await reply.write(c)
            await reply.finish()
        except weida.WeidaError as e:
            out.event_error("reply_failed", handle, e)
        else:
            out.event("replied", handle)

    async def serve_puller(
        self,
        puller: weida.Puller | weida.Bus | weida.Pair | weida.DialingPuller,
        handle: str,
        mode: str,
    ) -> None:
        out = self.out
        while True:
            if mode == "recv":
                try:
                    m = await puller.recv()
                except weida.Closed as e:
                    out.event_error("closed", handle, e)
                    return
                except weida.WeidaError as e:
                    out.event_error("receive_failed", handle, e)
                    continue
                # With the sequence and gap under PerProducer ordering (PATTERNS §1.7), else null.
                out.event(
                    "received", handle, **message_json(m), sequence=m.meta.sequence, gap=m.meta.gap
                )
            else:
                assert isinstance(puller, weida.Puller), "a bus is read in recv mode"
                try:
                    t = await puller.accept()
                except weida.WeidaError as e:
                    out.event_error("closed", handle, e)
                    return
                out.event("accepted", handle, **meta_fields(t.meta))
                self.spawn(self.read_transfer(t, handle), f"a transfer to {handle}")
                del t

    async def serve_collector(self, c: weida.BoundSubscriber, handle: str) -> None:
        """A ``received`` event per message kept, with its topic, until the collector closes."""
        while True:
            try:
                m = await c.recv()
            except weida.Closed as e:
                self.out.event_error("closed", handle, e)
                return
            except weida.WeidaError as e:
                self.out.event_error("receive_failed", handle, e)
                continue
            self.out.event("received", handle, **copy_json(m))

    async def serve_subscriber(self, sub: weida.Subscriber, handle: str) -> None:
        out = self.out
        connected = self.connected[sub]
        while True:
            await connected.wait()
            try:
                m = await sub.recv()
            except weida.Closed as e:
                out.event_error("closed", handle, e)
                return
            except (weida.NotConnected, weida.ConnectionLost) as e:
                # Raised at once until the next connect (module docstring).
                if sub.peer_count == 0:
                    connected.clear()
                out.event_error("receive_failed", handle, e)
                continue
            except weida.WeidaError as e:
                out.event_error("receive_failed", handle, e)
                continue
            out.event("received", handle, **copy_json(m))

    async def read_transfer(self, t: weida.IncomingTransfer, handle: str) -> None:
        tally = Tally()
        first = True
        while True:
            try:
                c = await t.read_chunk()
            except weida.WeidaError as e:
                self.out.event_error("receive_failed", handle, e)
                return
            if c is None:
                break
            if first:
                first = False
                self.out.event("receiving", handle, size=len(c))
            tally.add(c)
        self.out.event("received", handle, **meta_fields(t.meta), body=tally.summary())


# --- the loop over standard input ----------------------------------------------------------


async def answer(agent: Agent, request: Json) -> None:
    rid = request.get("id")
    op = request.get("op")
    args = request.get("args", {})
    try:
        if not isinstance(op, str):
            raise BadRequest("a request has a string op")
        if not isinstance(args, dict):
            raise BadRequest("args is an object")
        result = await agent.run(op, args)
        response: Json = {"id": rid, "ok": True, "result": result}
    except weida.WeidaError as e:
        response = {"id": rid, "ok": False, "error": error_json(e)}
    except BadRequest as e:
        response = {
            "id": rid,
            "ok": False,
            "error": {"code": "AGENT_BAD_REQUEST", "message": str(e)},
        }
    except (ValueError, TypeError, OverflowError) as e:
        # The binding refused an argument before doing anything: a malformed request.
        response = {
            "id": rid,
            "ok": False,
            "error": {"code": "AGENT_BAD_REQUEST", "message": f"{type(e).__name__}: {e}"},
        }
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and getattr(task, "cancelling", lambda: 0)():
            raise  # this agent is cancelling the task (it never does before it exits)
        # The binding cancelled the future it returned instead of raising a weida error.
        print(f"agent: {op}: the binding's future was cancelled", file=sys.stderr)
        response = {
            "id": rid,
            "ok": False,
            "error": {"code": "AGENT_BAD_REQUEST", "message": "the binding's future was cancelled"},
        }
    except Exception as e:
        # Not a weida error and not a malformed request: a bug, of this agent or the binding.
        # Answered (so the cell fails at this step, not at a timeout) and logged in full.
        print(f"agent: {op} raised {type(e).__name__}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        response = {
            "id": rid,
            "ok": False,
            "error": {
                "code": "AGENT_BAD_REQUEST",
                "message": f"unexpected {type(e).__name__}: {e}",
            },
        }
    agent.out.line(response)


async def stdin_lines() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def main() -> None:
    out = Out()
    agent = Agent(out)
    reader = await stdin_lines()
    while True:
        try:
            raw = await reader.readline()
        except ValueError as e:  # a line above the reader's limit
            out.line(
                {"id": None, "ok": False, "error": {"code": "AGENT_BAD_REQUEST", "message": str(e)}}
            )
            continue
        if not raw:
            break  # standard input closed: the runner is done with this agent
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError as e:
            out.line(
                {
                    "id": None,
                    "ok": False,
                    "error": {"code": "AGENT_BAD_REQUEST", "message": f"not JSON: {e}"},
                }
            )
            continue
        agent.spawn(answer(agent, request), f"request {request.get('id')!r}")
    agent.shutdown_all()
    # Everything written so far is flushed (each line is); the background tasks may still be
    # awaiting the closed runtimes, which nobody waits for now: leave at once, status 0.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
