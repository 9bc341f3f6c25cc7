"""pyzmq (libzmq) worker of the benchmark suite: PUSH/PULL, REQ/REP and PUB/SUB over tcp, ipc
and inproc, both ends in this process.

Variant "sync" (the default) is pyzmq's blocking API with the sending side on a thread, as a
threaded pyzmq program has it; variant "asyncio" (Push/Pull only) is zmq.asyncio on one event
loop, the shape of weida's asyncio API. Bodies of 64 KiB and more are sent and received with
copy=False, as pyzmq's documentation recommends for large messages.

Two processes (--role bind / dial, common.py): PULL, REP and PUB bind; PUSH, REQ and each SUB
dial. In its own process the sending side needs no thread: it is the whole program.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from typing import Any

import common
import zmq
import zmq.asyncio

TIMEOUT_MS = 100
ZERO_COPY = 65536


def endpoint(transport: str, name: str) -> str:
    if transport == "tcp":
        return "tcp://127.0.0.1:*"
    if transport == "ipc":
        return f"ipc://{common.tmp_path(name + '.ipc')}"
    return f"inproc://{name}"


def bound(
    ctx: zmq.Context[Any], kind: int, transport: str, name: str
) -> tuple[zmq.Socket[Any], str]:
    s = ctx.socket(kind)
    s.linger = 0
    s.bind(endpoint(transport, name))
    return s, s.getsockopt_string(zmq.LAST_ENDPOINT)


def alone(a: argparse.Namespace) -> dict[str, Any]:
    """One end of two processes: the `--role` side of `a.pattern`."""
    if a.variant == "asyncio":
        return asyncio.run(asyncio.wait_for(alone_asyncio(a), common.lifetime(a)))
    ctx = zmq.Context()
    data = common.body(a.size)
    copy = a.size < ZERO_COPY
    try:
        if a.role == "bind":
            kind = {"push_pull": zmq.PULL, "req_rep": zmq.REP, "pub_sub": zmq.PUB}[a.pattern]
            s, addr = bound(ctx, kind, a.transport, a.pattern)
            common.announce(addr)
            if a.pattern == "pub_sub":
                while True:
                    s.send(data)
            if a.pattern == "req_rep":
                while True:
                    s.send(s.recv())
            s.rcvtimeo = int(common.lifetime(a) * 1000)
            common.check(len(s.recv(copy=copy)), a.size)
            meter = common.Meter(a.warmup, a.secs, a.size)
            while True:
                m = s.recv(copy=copy)
                common.check(len(m) if copy else len(m.bytes), a.size)
                if meter.tick():
                    return meter.result(a.size)
        kind = {"push_pull": zmq.PUSH, "req_rep": zmq.REQ, "pub_sub": zmq.SUB}[a.pattern]
        s = ctx.socket(kind)
        s.linger = 0
        s.rcvtimeo = int(common.lifetime(a) * 1000)
        if a.pattern == "pub_sub":
            s.setsockopt(zmq.SUBSCRIBE, b"")
        s.connect(a.address)
        if a.pattern == "push_pull":
            while True:
                s.send(data, copy=copy)
        if a.pattern == "req_rep":
            rec = common.Recorder(a.warmup, a.secs)
            while True:
                began = time.perf_counter()
                s.send(data)
                common.check(len(s.recv()), a.size)
                if rec.record(began):
                    return rec.result()
        common.check(len(s.recv()), a.size)  # joined
        common.gate()
        meter = common.Meter(a.warmup, a.secs, a.size)
        while True:
            common.check(len(s.recv()), a.size)
            if meter.tick():
                return meter.result(a.size, copies=True)
    finally:
        ctx.destroy(linger=0)


async def alone_asyncio(a: argparse.Namespace) -> dict[str, Any]:
    """zmq.asyncio Push/Pull, one end of two processes."""
    ctx = zmq.asyncio.Context()
    data = common.body(a.size)
    copy = a.size < ZERO_COPY
    try:
        if a.role == "bind":
            pull = ctx.socket(zmq.PULL)
            pull.linger = 0
            pull.bind(endpoint(a.transport, "ppa"))
            common.announce(pull.getsockopt_string(zmq.LAST_ENDPOINT))
            await pull.recv(copy=copy)
            meter = common.Meter(a.warmup, a.secs, a.size)
            while True:
                m = await pull.recv(copy=copy)
                common.check(len(m) if copy else len(m.bytes), a.size)
                if meter.tick():
                    return meter.result(a.size)
        push = ctx.socket(zmq.PUSH)
        push.linger = 0
        push.connect(a.address)
        while True:
            await push.send(data, copy=copy)
    finally:
        ctx.destroy(linger=0)


def push_pull(a: argparse.Namespace) -> dict[str, Any]:
    if a.role != "both":
        return alone(a)
    if a.variant == "asyncio":
        return asyncio.run(push_pull_asyncio(a))
    ctx = zmq.Context()
    pull, addr = bound(ctx, zmq.PULL, a.transport, "pp")
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    push.sndtimeo = TIMEOUT_MS
    push.connect(addr)
    pull.rcvtimeo = int((a.warmup + 4 * a.secs + 10) * 1000)
    data = common.body(a.size)
    copy = a.size < ZERO_COPY
    stop = threading.Event()

    def sender() -> None:
        while not stop.is_set():
            try:
                push.send(data, copy=copy)
            except zmq.Again:
                pass

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    meter = common.Meter(a.warmup, a.secs, a.size)
    try:
        while True:
            m = pull.recv(copy=copy)
            common.check(len(m) if copy else len(m.bytes), a.size)
            if meter.tick():
                return meter.result(a.size)
    finally:
        stop.set()
        t.join(5)
        push.close()
        pull.close()
        ctx.term()


async def push_pull_asyncio(a: argparse.Namespace) -> dict[str, Any]:
    ctx = zmq.asyncio.Context()
    pull = ctx.socket(zmq.PULL)
    pull.linger = 0
    pull.bind(endpoint(a.transport, "ppa"))
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    push.connect(pull.getsockopt_string(zmq.LAST_ENDPOINT))
    data = common.body(a.size)
    copy = a.size < ZERO_COPY

    async def sender() -> None:
        while True:
            await push.send(data, copy=copy)

    task = asyncio.ensure_future(sender())
    meter = common.Meter(a.warmup, a.secs, a.size)

    async def receive() -> dict[str, Any]:
        while True:
            m = await pull.recv(copy=copy)
            common.check(len(m) if copy else len(m.bytes), a.size)
            if meter.tick():
                return meter.result(a.size)

    try:
        return await asyncio.wait_for(receive(), a.warmup + 4 * a.secs + 10)
    finally:
        task.cancel()
        push.close()
        pull.close()
        ctx.term()


def req_rep(a: argparse.Namespace) -> dict[str, Any]:
    if a.role != "both":
        return alone(a)
    ctx = zmq.Context()
    rep, addr = bound(ctx, zmq.REP, a.transport, "rr")
    rep.rcvtimeo = TIMEOUT_MS
    req = ctx.socket(zmq.REQ)
    req.linger = 0
    req.rcvtimeo = 10_000
    req.connect(addr)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                m = rep.recv()
            except zmq.Again:
                continue
            rep.send(m)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    data = common.body(a.size)
    rec = common.Recorder(a.warmup, a.secs)
    try:
        while True:
            began = time.perf_counter()
            req.send(data)
            common.check(len(req.recv()), a.size)
            if rec.record(began):
                return rec.result()
    finally:
        stop.set()
        t.join(5)
        req.close()
        rep.close()
        ctx.term()


def pub_sub(a: argparse.Namespace) -> dict[str, Any]:
    """PUB to `width` SUB sockets (each subscribed to everything); copies received per second,
    summed over the subscribers. PUB drops for a subscriber whose queue (the default high-water
    mark, 1000) is full, so this counts what arrives, not what was offered."""
    if a.role != "both":
        return alone(a)
    ctx = zmq.Context()
    pub, addr = bound(ctx, zmq.PUB, a.transport, "ps")
    pub.sndtimeo = TIMEOUT_MS
    subs = []
    for _ in range(a.width):
        s = ctx.socket(zmq.SUB)
        s.linger = 0
        s.setsockopt(zmq.SUBSCRIBE, b"")
        s.connect(addr)
        subs.append(s)
    poller = zmq.Poller()
    for s in subs:
        poller.register(s, zmq.POLLIN)
    data = common.body(a.size)
    # Slow joiners: publish until every subscriber has received something.
    joined: set[int] = set()
    limit = time.perf_counter() + 10
    while len(joined) < a.width:
        if time.perf_counter() > limit:
            raise RuntimeError(f"only {len(joined)} of {a.width} subscribers joined")
        pub.send(data)
        for s, _ in poller.poll(1):
            while True:
                try:
                    s.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
            joined.add(subs.index(s))
    stop = threading.Event()

    def sender() -> None:
        while not stop.is_set():
            try:
                pub.send(data)
            except zmq.Again:
                pass

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    meter = common.Meter(a.warmup, a.secs, a.size)
    limit = common.deadline(a)
    try:
        while True:
            if time.perf_counter() > limit:
                raise RuntimeError("stalled")
            for s, _ in poller.poll(100):
                while True:
                    try:
                        m = s.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    common.check(len(m), a.size)
                    if meter.tick():
                        return meter.result(a.size, copies=True)
    finally:
        stop.set()
        t.join(5)
        for s in subs:
            s.close()
        pub.close()
        ctx.term()


if __name__ == "__main__":
    args = common.parse("pyzmq", ("tcp", "ipc", "inproc"), ("sync", "asyncio"))
    cases = {"push_pull": push_pull, "req_rep": req_rep, "pub_sub": pub_sub}
    if args.variant == "asyncio":  # measured for Push/Pull only
        cases = {"push_pull": push_pull}
    sys.exit(common.run(args, cases))
