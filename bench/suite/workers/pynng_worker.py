"""pynng (NNG) worker of the benchmark suite: push0/pull0, req0/rep0 and pub0/sub0 over tcp,
ipc and inproc, both ends in this process, with pynng's blocking API and the sending side on a
thread (pynng releases the GIL while it waits in NNG).

Two processes (--role bind / dial, common.py): pull0, rep0 and pub0 listen; push0, req0 and
each sub0 dial. In its own process the sending side is the whole program, no thread.
"""

from __future__ import annotations

import argparse
import selectors
import sys
import threading
import time
from typing import Any

import common
import pynng

TIMEOUT_MS = 100


def listen(sock: pynng.Socket, transport: str, name: str) -> str:
    """Listens on `transport` and returns the address to dial."""
    if transport == "tcp":
        listener = sock.listen("tcp://127.0.0.1:0")
        # InAddr.port is byte-swapped in pynng 0.9; the text form is right.
        port = str(listener.local_address).rsplit(":", 1)[1]
        return f"tcp://127.0.0.1:{port}"
    addr = f"ipc://{common.tmp_path(name + '.ipc')}" if transport == "ipc" else f"inproc://{name}"
    sock.listen(addr)
    return addr


def alone(a: argparse.Namespace) -> dict[str, Any]:
    """One end of two processes: the `--role` side of `a.pattern`."""
    limit_ms = int(common.lifetime(a) * 1000)
    data = common.body(a.size)
    if a.role == "bind":
        kind = {"push_pull": pynng.Pull0, "req_rep": pynng.Rep0, "pub_sub": pynng.Pub0}
        with kind[a.pattern](recv_timeout=limit_ms) as s:
            common.announce(listen(s, a.transport, a.pattern))
            if a.pattern == "pub_sub":
                while True:
                    s.send(data)
            if a.pattern == "req_rep":
                while True:
                    s.send(s.recv())
            common.check(len(s.recv()), a.size)
            meter = common.Meter(a.warmup, a.secs, a.size)
            while True:
                common.check(len(s.recv()), a.size)
                if meter.tick():
                    return meter.result(a.size)
    kind = {"push_pull": pynng.Push0, "req_rep": pynng.Req0, "pub_sub": pynng.Sub0}
    with kind[a.pattern](recv_timeout=limit_ms) as s:
        if a.pattern == "pub_sub":
            s.subscribe(b"")
        s.dial(a.address, block=True)
        if a.pattern == "push_pull":
            while True:
                s.send(data)
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


def push_pull(a: argparse.Namespace) -> dict[str, Any]:
    if a.role != "both":
        return alone(a)
    limit_ms = int((a.warmup + 4 * a.secs + 10) * 1000)
    with pynng.Pull0(recv_timeout=limit_ms) as pull, pynng.Push0(send_timeout=TIMEOUT_MS) as push:
        addr = listen(pull, a.transport, "pp")
        push.dial(addr, block=True)
        data = common.body(a.size)
        stop = threading.Event()

        def sender() -> None:
            while not stop.is_set():
                try:
                    push.send(data)
                except pynng.Timeout:
                    pass

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        meter = common.Meter(a.warmup, a.secs, a.size)
        try:
            while True:
                common.check(len(pull.recv()), a.size)
                if meter.tick():
                    return meter.result(a.size)
        finally:
            stop.set()
            t.join(5)


def req_rep(a: argparse.Namespace) -> dict[str, Any]:
    if a.role != "both":
        return alone(a)
    with pynng.Rep0(recv_timeout=TIMEOUT_MS) as rep, pynng.Req0(recv_timeout=10_000) as req:
        addr = listen(rep, a.transport, "rr")
        req.dial(addr, block=True)
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    m = rep.recv()
                except pynng.Timeout:
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


def pub_sub(a: argparse.Namespace) -> dict[str, Any]:
    """pub0 to `width` sub0 sockets (each subscribed to everything); copies received per second,
    summed over the subscribers. pub0 drops for a subscriber whose receive queue is full. The
    subscribers are read through their receive-ready descriptors (NNG_OPT_RECVFD) and a
    selector, without a thread each."""
    if a.role != "both":
        return alone(a)
    pub = pynng.Pub0(send_timeout=TIMEOUT_MS)
    subs: list[pynng.Sub0] = []
    sel = selectors.DefaultSelector()
    try:
        addr = listen(pub, a.transport, "ps")
        for i in range(a.width):
            s = pynng.Sub0()
            s.subscribe(b"")
            s.dial(addr, block=True)
            subs.append(s)
            sel.register(s.recv_fd, selectors.EVENT_READ, i)
        data = common.body(a.size)

        def drain(i: int) -> int:
            n = 0
            while True:
                try:
                    m = subs[i].recv(block=False)
                except pynng.TryAgain:
                    return n
                common.check(len(m), a.size)
                n += 1

        joined: set[int] = set()
        limit = time.perf_counter() + 10
        while len(joined) < a.width:
            if time.perf_counter() > limit:
                raise RuntimeError(f"only {len(joined)} of {a.width} subscribers joined")
            pub.send(data)
            for key, _ in sel.select(0.001):
                if drain(key.data):
                    joined.add(key.data)
        stop = threading.Event()

        def sender() -> None:
            while not stop.is_set():
                try:
                    pub.send(data)
                except pynng.Timeout:
                    pass

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        meter = common.Meter(a.warmup, a.secs, a.size)
        limit = common.deadline(a)
        try:
            while True:
                if time.perf_counter() > limit:
                    raise RuntimeError("stalled")
                for key, _ in sel.select(0.1):
                    if meter.tick(drain(key.data)):
                        return meter.result(a.size, copies=True)
        finally:
            stop.set()
            t.join(5)
    finally:
        sel.close()
        for s in subs:
            s.close()
        pub.close()


if __name__ == "__main__":
    args = common.parse("pynng", ("tcp", "ipc", "inproc"))
    sys.exit(common.run(args, {"push_pull": push_pull, "req_rep": req_rep, "pub_sub": pub_sub}))
