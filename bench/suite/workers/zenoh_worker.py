"""Zenoh (eclipse-zenoh, zenoh-python) worker of the benchmark suite, both ends in this process:
two or more sessions in peer mode, one listening on an explicit endpoint and the others
connecting to it, with multicast scouting and gossip off, so the messages cross the named
link (tcp, quic with a self-signed certificate, unixsock-stream) and nothing else. Shared
memory is turned off: by default zenoh would carry bodies above 3 KiB between two processes of
one machine through it, and these rows measure the link.

What each pattern maps to (Zenoh has no work queue and no request socket):
- push_pull: a Publisher with CongestionControl.BLOCK (so nothing is dropped) and one
  Subscriber whose callback counts; "push/pull-like", one producer, one consumer.
- req_rep: a Querier's get() answered by a Queryable that replies with the query's payload;
  one query outstanding, the round trip until the reply channel closes.
- pub_sub: a Publisher with the default CongestionControl.DROP, and `width` subscriber
  sessions, each connected to the publisher's, each with a Subscriber whose callback counts.

Two processes (--role bind / dial, common.py): the listening session is the subscriber of
push_pull, the queryable of req_rep and the publisher of pub_sub; the connecting session the
other end (one process per subscriber of pub_sub). Over quic the ADDRESS line carries the
endpoint and the bind side's certificate, which the dial side trusts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import common
import zenoh

KEY = "bench/suite"


def certificate() -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key (openssl), for the quic link."""
    key, cert = common.tmp_path("key.pem"), common.tmp_path("cert.pem")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            key,
            "-out",
            cert,
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ],
        check=True,
        capture_output=True,
    )
    return key, cert


def endpoint(transport: str) -> str:
    if transport == "tcp":
        return f"tcp/127.0.0.1:{common.free_port()}"
    if transport == "quic":
        return f"quic/127.0.0.1:{common.free_port(socket.SOCK_DGRAM)}"
    return f"unixsock-stream/{common.tmp_path('z.sock')}"


def config(listen: list[str], connect: list[str], tls: tuple[str, str] | None) -> zenoh.Config:
    c = zenoh.Config()
    settings: dict[str, Any] = {
        "mode": "peer",
        "listen/endpoints": listen,
        "connect/endpoints": connect,
        "scouting/multicast/enabled": False,
        "scouting/gossip/enabled": False,
        "transport/shared_memory/enabled": False,
    }
    if tls is not None:
        key, cert = tls
        settings["transport/link/tls/listen_private_key"] = key
        settings["transport/link/tls/listen_certificate"] = cert
        settings["transport/link/tls/root_ca_certificate"] = cert
    for k, v in settings.items():
        c.insert_json5(k, json.dumps(v))
    return c


class Sessions:
    """One listening session and `n` sessions connected to it."""

    def __init__(self, transport: str, n: int) -> None:
        tls = certificate() if transport == "quic" else None
        ep = endpoint(transport)
        self.server = zenoh.open(config([ep], [], tls))
        self.clients = [zenoh.open(config([], [ep], tls)) for _ in range(n)]

    def close(self) -> None:
        for s in self.clients:
            s.close()
        self.server.close()


class Count:
    """A counter callbacks on zenoh's threads can bump without a lock: next() on an
    itertools.count is atomic under the GIL."""

    def __init__(self) -> None:
        self._c = itertools.count()
        self._reads = 0

    def bump(self, _sample: object = None) -> None:
        next(self._c)

    def value(self) -> int:
        self._reads += 1
        return next(self._c) - (self._reads - 1)


def wait_for(pred: Any, what: str, secs: float = 10) -> None:
    limit = time.perf_counter() + secs
    while not pred():
        if time.perf_counter() > limit:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)


def flow(
    a: argparse.Namespace, width: int, congestion: zenoh.CongestionControl, copies: bool
) -> dict[str, Any]:
    """A publisher on the listening session, `width` subscribing sessions; the rate of samples
    received, counted in the subscribers' callbacks and read before and after the window."""
    ss = Sessions(a.transport, width)
    try:
        counts = [Count() for _ in range(width)]
        size = a.size
        subs = []
        for s, c in zip(ss.clients, counts, strict=True):

            def on_sample(sample: zenoh.Sample, bump: Any = c.bump) -> None:
                if len(sample.payload) != size:
                    raise RuntimeError(f"received {len(sample.payload)} bytes, sent {size}")
                bump()

            subs.append(s.declare_subscriber(KEY, on_sample))
        pub = ss.server.declare_publisher(KEY, congestion_control=congestion)
        data = zenoh.ZBytes(common.body(a.size))
        # Until every subscriber's interest has reached the publisher.
        limit = time.perf_counter() + 10
        while not all(c.value() > 0 for c in counts):
            if time.perf_counter() > limit:
                raise RuntimeError("subscribers did not join")
            pub.put(data)
            time.sleep(0.001)
        stop = threading.Event()

        def sender() -> None:
            while not stop.is_set():
                pub.put(data)

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        try:
            return common.sample_rate(
                lambda: sum(c.value() for c in counts), a.warmup, a.secs, a.size, copies
            )
        finally:
            stop.set()
            t.join(5)
            pub.undeclare()
            for sub in subs:
                sub.undeclare()
    finally:
        ss.close()


def alone(a: argparse.Namespace) -> dict[str, Any]:
    """One end of two processes: the `--role` side of `a.pattern`."""
    size = a.size
    data = zenoh.ZBytes(common.body(size))
    if a.role == "bind":
        tls = certificate() if a.transport == "quic" else None
        ep = endpoint(a.transport)
        session = zenoh.open(config([ep], [], tls))
        common.announce(f"{ep} {tls[1]}" if tls else ep)
    else:
        ep, _, cert = a.address.partition(" ")
        tls = (os.path.join(os.path.dirname(cert), "key.pem"), cert) if cert else None
        session = zenoh.open(config([], [ep], tls))
    try:
        if (a.role, a.pattern) == ("bind", "req_rep"):
            session.declare_queryable(
                KEY, lambda q: q.reply(KEY, q.payload if q.payload is not None else b"")
            )
            time.sleep(common.lifetime(a))
            raise RuntimeError("lifetime over")
        if (a.role, a.pattern) in (("dial", "push_pull"), ("bind", "pub_sub")):
            cc = zenoh.CongestionControl
            pub = session.declare_publisher(
                KEY, congestion_control=cc.BLOCK if a.pattern == "push_pull" else cc.DROP
            )
            while True:
                pub.put(data)
        if a.pattern == "req_rep":
            querier = session.declare_querier(KEY, timeout=10)

            def ask() -> int:
                n = 0
                for reply in querier.get(payload=data):
                    if reply.ok is None:
                        raise RuntimeError(f"error reply: {reply.err}")
                    n = len(reply.ok.payload)
                return n

            wait_for(lambda: ask() == size, "the queryable")
            rec = common.Recorder(a.warmup, a.secs)
            while True:
                began = time.perf_counter()
                common.check(ask(), size)
                if rec.record(began):
                    return rec.result()
        # The receiving side: push_pull's bound subscriber, or one pub_sub subscriber.
        c = Count()

        def on_sample(sample: zenoh.Sample) -> None:
            if len(sample.payload) != size:
                raise RuntimeError(f"received {len(sample.payload)} bytes, sent {size}")
            c.bump()

        session.declare_subscriber(KEY, on_sample)
        wait_for(lambda: c.value() > 0, "the first sample", common.lifetime(a))
        if a.pattern == "pub_sub":
            common.gate()
        copies = a.pattern == "pub_sub"
        return common.sample_rate(c.value, a.warmup, a.secs, size, copies)
    finally:
        session.close()


def push_pull(a: argparse.Namespace) -> dict[str, Any]:
    if a.role != "both":
        return alone(a)
    return flow(a, 1, zenoh.CongestionControl.BLOCK, copies=False)


def pub_sub(a: argparse.Namespace) -> dict[str, Any]:
    if a.role != "both":
        return alone(a)
    return flow(a, a.width, zenoh.CongestionControl.DROP, copies=True)


def req_rep(a: argparse.Namespace) -> dict[str, Any]:
    if a.role != "both":
        return alone(a)
    ss = Sessions(a.transport, 1)
    try:

        def on_query(q: zenoh.Query) -> None:
            q.reply(KEY, q.payload if q.payload is not None else b"")

        queryable = ss.server.declare_queryable(KEY, on_query)
        querier = ss.clients[0].declare_querier(KEY, timeout=10)
        data = zenoh.ZBytes(common.body(a.size))

        def ask() -> int:
            n = 0
            for reply in querier.get(payload=data):
                if reply.ok is None:
                    raise RuntimeError(f"error reply: {reply.err}")
                n = len(reply.ok.payload)
            return n

        # Until the queryable's declaration has reached the querier.
        wait_for(lambda: ask() == a.size, "the queryable")
        rec = common.Recorder(a.warmup, a.secs)
        while True:
            began = time.perf_counter()
            common.check(ask(), a.size)
            if rec.record(began):
                break
        querier.undeclare()
        queryable.undeclare()
        return rec.result()
    finally:
        ss.close()


if __name__ == "__main__":
    os.environ.setdefault("RUST_LOG", "error")
    args = common.parse("zenoh", ("tcp", "quic", "unix"))
    sys.exit(common.run(args, {"push_pull": push_pull, "req_rep": req_rep, "pub_sub": pub_sub}))
