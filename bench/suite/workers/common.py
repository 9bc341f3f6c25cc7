"""What every Python worker of the benchmark suite shares: the command line, the meters, the
percentiles and the one JSON line a worker prints (bench/README.md, "The suite").

A worker runs one case on loopback and prints one JSON line on stdout: the parameters, then
either the figures or {"error": ...}. Its exit status is 0 only when the case produced figures.

`--role both` (the default) runs both ends in this process. `--role bind` and `--role dial
--address ADDR` run one end each, in two processes (bench/README.md, "Two processes"): the
bind side prints `ADDRESS <dialable address>` first; the measuring side (the receiver of
Push/Pull, the requester of Req/Rep, each subscriber of Pub/Sub) prints `WINDOW start` and
`WINDOW end` as its window opens and closes, so run.py can read every process's CPU time
then; the other side runs until it is terminated (or its lifetime bound, `lifetime`).
A Pub/Sub subscriber prints `READY` once it receives and waits for a line on stdin before
its warmup, so that every subscriber process of a row measures the same span of time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

PATTERNS = ("push_pull", "req_rep", "pub_sub")


def parse(
    system: str, transports: tuple[str, ...], variants: tuple[str, ...] = ("default",)
) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=f"benchmark suite worker: {system}")
    ap.add_argument("--pattern", choices=PATTERNS, required=True)
    ap.add_argument("--transport", choices=transports, required=True)
    ap.add_argument("--size", type=int, default=64, help="body bytes")
    ap.add_argument("--width", type=int, default=1, help="subscribers (pub_sub)")
    ap.add_argument("--secs", type=float, default=1.0, help="measured window, seconds")
    ap.add_argument("--warmup", type=float, default=0.3, help="warmup before the window, seconds")
    ap.add_argument("--variant", choices=variants, default=variants[0])
    ap.add_argument(
        "--role", choices=ROLES, default="both", help="both ends here, or one end of two processes"
    )
    ap.add_argument("--address", help="what --role dial dials (the bind side's ADDRESS line)")
    a = ap.parse_args()
    if (a.role == "dial") != (a.address is not None):
        ap.error("--address goes with --role dial, and only with it")
    a.system = system
    if a.role != "both":
        global _markers
        _markers = True
        # The side that runs until terminated cannot outlive its bound if run.py dies: SIGALRM's
        # default action ends the process.
        signal.alarm(int(lifetime(a)) + 1)
    return a


ROLES = ("both", "bind", "dial")
_markers = False


def lifetime(a: argparse.Namespace) -> float:
    """How long a process of a two-process row may live: its peer's stall limit and setup."""
    return a.warmup + 4 * a.secs + 30


def announce(address: str) -> None:
    """The bind side's first line: what the dial side dials."""
    print(f"ADDRESS {address}", flush=True)


def marker(what: str) -> None:
    """`WINDOW start` / `WINDOW end`, when this process measures one end of two."""
    if _markers:
        print(f"WINDOW {what}", flush=True)


def gate() -> None:
    """A Pub/Sub subscriber of two processes: READY, then wait for run.py's go (a line)."""
    print("READY", flush=True)
    if not sys.stdin.readline():
        raise RuntimeError("stdin closed before the go")


def run(
    a: argparse.Namespace, cases: dict[str, Callable[[argparse.Namespace], dict[str, Any]]]
) -> int:
    """Runs the case `a` names, prints its JSON line and returns the exit status."""
    line: dict[str, Any] = {
        "system": a.system,
        "language": "python",
        "variant": a.variant,
        "pattern": a.pattern,
        "transport": a.transport,
        "size": a.size,
        "width": a.width,
        "secs": a.secs,
        "warmup": a.warmup,
        "role": a.role,
    }
    status = 0
    case = cases.get(a.pattern)
    if case is None:
        line["error"] = f"{a.system} has no {a.pattern} case"
        status = 1
    else:
        try:
            line.update(case(a))
        except Exception as e:  # reported as the row's error, not a crash of the suite
            traceback.print_exc(file=sys.stderr)
            line["error"] = f"{type(e).__name__}: {e}"
            status = 1
    print(json.dumps(line), flush=True)
    return status


def stride(size: int) -> int:
    """How many messages between clock readings: every one from 64 KiB, every 64th below."""
    return max(1, min(64, 65536 // max(1, size)))


class Meter:
    """Counts messages received whole; the rate is the messages between the first clock reading
    after the warmup and the first reading past the window, over the time between them (the
    same method as bench/src/meter.rs)."""

    def __init__(self, warmup: float, secs: float, size: int) -> None:
        self.warmup, self.secs, self.stride = warmup, secs, stride(size)
        self.created = time.perf_counter()
        self.n = 0
        self.start: tuple[float, int] | None = None
        self.end: tuple[float, int] | None = None

    def tick(self, k: int = 1) -> bool:
        """`k` more messages received; true once the window is over."""
        before = self.n
        self.n += k
        if self.n // self.stride == before // self.stride:
            return False
        now = time.perf_counter()
        if self.start is None:
            if now - self.created >= self.warmup:
                self.start = (now, self.n)
                marker("start")
            return False
        if now - self.start[0] >= self.secs:
            self.end = (now, self.n)
            marker("end")
            return True
        return False

    def result(self, size: int, copies: bool = False) -> dict[str, Any]:
        if self.start is None or self.end is None:
            raise RuntimeError("no complete window")
        (t0, n0), (t1, n1) = self.start, self.end
        return rate_result(n1 - n0, t1 - t0, size, copies)


def rate_result(messages: int, seconds: float, size: int, copies: bool = False) -> dict[str, Any]:
    if messages <= 0:
        raise RuntimeError("stalled: nothing received in the window")
    rate = messages / seconds
    key = "copies_per_s" if copies else "msgs_per_s"
    return {"messages": messages, "seconds": seconds, key: rate, "mb_per_s": rate * size / 1e6}


def sample_rate(
    count: Callable[[], int], warmup: float, secs: float, size: int, copies: bool = False
) -> dict[str, Any]:
    """A rate read from outside the receiving code: the counter at the end of the warmup and
    after the window (for receivers that are callbacks on other threads)."""
    time.sleep(warmup)
    t0, n0 = time.perf_counter(), count()
    marker("start")
    time.sleep(secs)
    t1, n1 = time.perf_counter(), count()
    marker("end")
    return rate_result(n1 - n0, t1 - t0, size, copies)


class Recorder:
    """Round trips recorded after the warmup until the window is over (bench/src/meter.rs)."""

    def __init__(self, warmup: float, secs: float) -> None:
        self.warmup, self.secs = warmup, secs
        self.created = time.perf_counter()
        self.start: float | None = None
        self.samples: list[float] = []

    def record(self, began: float) -> bool:
        now = time.perf_counter()
        if self.start is None:
            if now - self.created >= self.warmup:
                self.start = now
                marker("start")
            return False
        self.samples.append(now - began)
        if now - self.start >= self.secs:
            marker("end")
            return True
        return False

    def result(self) -> dict[str, Any]:
        return latency_result(self.samples)


def latency_result(samples: list[float]) -> dict[str, Any]:
    """p50 and p99 in microseconds, nearest rank."""
    if not samples:
        raise RuntimeError("no samples")
    s = sorted(samples)

    def at(q: float) -> float:
        i = min(max(math.ceil(len(s) * q), 1), len(s)) - 1
        return s[i] * 1e6

    return {"p50_us": at(0.50), "p99_us": at(0.99), "samples": len(s)}


def body(size: int) -> bytes:
    return bytes(i % 251 for i in range(size))


_tmp: str | None = None


def tmp_path(name: str) -> str:
    """A path in this worker's own temporary directory (AF_UNIX and ipc endpoints)."""
    global _tmp
    if _tmp is None:
        _tmp = tempfile.mkdtemp(prefix="weida-suite-")
    return os.path.join(_tmp, name)


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port free on 127.0.0.1 right now, for systems that cannot bind port 0 and report it."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def deadline(a: argparse.Namespace) -> float:
    """When a case is declared stalled: as bench/src/meter.rs `Window::limit`."""
    return time.perf_counter() + a.warmup + 4 * a.secs + 10


def check(got: int, size: int) -> None:
    if got != size:
        raise RuntimeError(f"received {got} bytes, sent {size}")
