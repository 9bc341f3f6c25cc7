"""pyzmq's ends of the redial benchmarks (bench/README.md, "Redial and the outbox"), one
process each, with the same command line and the same JSON lines as weida's `weida-redial`
(bench/src/redial.rs), so `run.py` drives both alike.

    pyzmq_redial.py puller --addr ipc:///tmp/x.ipc --mode first|count [--n N]
    pyzmq_redial.py pusher --addr ipc:///tmp/x.ipc [--hwm N]

PUSH connects and PULL binds, with libzmq's defaults: ZMQ_RECONNECT_IVL 100 ms,
ZMQ_RECONNECT_IVL_MAX 0 (no backoff; libzmq adds up to one interval of random jitter),
ZMQ_IMMEDIATE 0 (while the peer is away, sends queue in the pipe up to the high-water mark,
1000 by default, --hwm to raise it). Peer events come from a socket monitor:
EVENT_DISCONNECTED is "lost", EVENT_CONNECT_RETRIED "retrying" (with the interval libzmq
drew), EVENT_CONNECTED "connected".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

SIZE = 64
lock = threading.Lock()


def emit(line: dict[str, Any]) -> None:
    with lock:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def puller(a: argparse.Namespace) -> None:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.linger = 0
    emit({"event": "ready"})
    sys.stdin.readline()  # bind when told, so the outage does not include starting up
    pull.bind(a.addr)
    bound = time.perf_counter()
    emit({"event": "bound", "wall": time.time()})
    first = pull.recv()
    at_first = time.perf_counter()
    check(first)
    bind_to_first = (at_first - bound) * 1e3
    if a.mode == "count":
        for _ in range(1, a.n):
            check(pull.recv())
        secs = time.perf_counter() - at_first
        emit(
            {
                "event": "received",
                "n": a.n,
                "first_to_last_s": secs,
                "msgs_per_s": (a.n - 1) / secs,
                "bind_to_first_ms": bind_to_first,
            }
        )
    else:
        emit({"event": "first", "bind_to_first_ms": bind_to_first})
    while True:  # until killed
        pull.recv()


def check(m: bytes) -> None:
    if len(m) != SIZE:
        raise RuntimeError(f"received {len(m)} bytes, sent {SIZE}")


KINDS = {
    zmq.EVENT_CONNECTED: "connected",
    zmq.EVENT_DISCONNECTED: "lost",
    zmq.EVENT_CONNECT_RETRIED: "retrying",
}


def monitor(ctx: zmq.Context[Any], endpoint: str) -> None:
    m = ctx.socket(zmq.PAIR)
    m.connect(endpoint)
    while True:
        try:
            e = recv_monitor_message(m)
        except zmq.ContextTerminated:
            return
        kind = KINDS.get(e["event"])
        if kind is None:
            continue
        line: dict[str, Any] = {"event": "peer", "kind": kind, "wall": time.time()}
        if kind == "retrying":
            line["delay_ms"] = e["value"]
        emit(line)


def pusher(a: argparse.Namespace) -> None:
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    push.sndhwm = a.hwm
    push.sndtimeo = 100
    push.monitor("inproc://monitor", zmq.EVENT_ALL)
    threading.Thread(target=monitor, args=(ctx, "inproc://monitor"), daemon=True).start()
    body = bytes(7 for _ in range(SIZE))
    stop = threading.Event()
    ticker: threading.Thread | None = None

    def send() -> bool:
        while not stop.is_set():
            try:
                push.send(body)
                return True
            except zmq.Again:  # at the high-water mark: wait, as weida's Block outbox does
                continue
        return False

    def tick(every: float) -> None:
        due = time.perf_counter()
        while not stop.is_set():
            due += every
            if not send():
                return
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            else:
                due = time.perf_counter()

    for line in sys.stdin:
        words = line.split()
        if words == ["connect"]:
            push.connect(a.addr)
            emit({"event": "connected"})
        elif len(words) == 2 and words[0] == "burst":
            n = int(words[1])
            began = time.perf_counter()
            for _ in range(n):
                send()
            emit({"event": "sent", "n": n, "secs": time.perf_counter() - began})
        elif len(words) == 2 and words[0] == "tick":
            stop.clear()
            ticker = threading.Thread(target=tick, args=(float(words[1]) / 1e3,), daemon=True)
            ticker.start()
            emit({"event": "ticking"})
        elif words == ["stop"]:
            stop.set()
            if ticker is not None:
                ticker.join(5)
            emit({"event": "stopped"})
        elif words == ["quit"]:
            break
        else:
            emit({"event": "error", "error": f"unknown command {line.strip()}"})
    stop.set()
    sys.stdout.flush()
    os._exit(0)  # the monitor thread holds a socket: no orderly ctx.term() to wait for


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("role", choices=("puller", "pusher"))
    ap.add_argument("--addr", required=True)
    ap.add_argument("--mode", choices=("first", "count"), default="first")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--hwm", type=int, default=1000, help="ZMQ_SNDHWM of the pusher")
    a = ap.parse_args()
    try:
        puller(a) if a.role == "puller" else pusher(a)
    except Exception as e:
        emit({"event": "error", "error": f"{type(e).__name__}: {e}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
