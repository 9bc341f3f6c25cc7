#!/usr/bin/env python3
"""The redial benchmarks: a pusher and its puller in separate processes, the puller killed and
started again at the same address (bench/README.md, "Redial and the outbox").

    python3 bench/redial/run.py [--reps 7] [--outage 1.0] [--spread 0] [--n 1000 --n 100000]
                                [--only rebind|drain] [--quic] [--json out.json]

Two tables, every row's median with its min-max over the repetitions, the systems interleaved
repetition by repetition so that drift on a shared machine falls on all alike:

- rebind: the pusher sends one 64-byte message every millisecond; its puller is killed
  (SIGKILL), and `--outage` seconds after the kill a new puller process binds the same address
  and times its bind's return to its first received message (in its own clock). weida over
  AF_UNIX with three redial policies (default: 100 ms doubling to 30 s, jittered; doubling: the
  same without jitter; constant: every 100 ms), pyzmq PUSH/PULL over ipc and tcp with libzmq's
  defaults (ZMQ_RECONNECT_IVL 100 ms, no backoff).
- drain: N 64-byte messages sent back to back to a live puller (the receiver times its first to
  its last: the live rate), then the puller is killed, the pusher is told of the loss, sends N
  more (into weida's outbox / libzmq's pipe; each returns at once) and a new puller binds and
  times its first to its last of them: the drain rate. For N above 1000 weida's outbox and
  libzmq's high-water mark are raised to N.

weida's ends are `target/release/weida-redial` (bench/src/redial.rs: `cargo build --release -p
weida-bench`); pyzmq's are `bench/redial/pyzmq_redial.py`, run with --python (default: the
suite's venv, target/bench-venv/bin/python, which bench/suite/setup.sh makes). Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REBIND = (
    ("weida unix, default policy", "weida", "unix", "default"),
    ("weida unix, 100 ms doubling, no jitter", "weida", "unix", "doubling"),
    ("weida unix, every 100 ms, no jitter", "weida", "unix", "constant"),
    ("pyzmq ipc, ZMQ_RECONNECT_IVL 100 ms", "pyzmq", "ipc", None),
    ("pyzmq tcp, ZMQ_RECONNECT_IVL 100 ms", "pyzmq", "tcp", None),
)
# --quic: a killed QUIC puller is learned of only at the idle timeout (30 s), so these take
# about 31 s a repetition.
REBIND_QUIC = (("weida quic, every 100 ms, no jitter", "weida", "quic", "constant"),)
DRAIN = (
    ("weida unix", "weida", "unix"),
    ("pyzmq ipc", "pyzmq", "ipc"),
)


class Proc:
    """A child process that speaks one JSON line at a time on stdout."""

    def __init__(self, cmd: list[str]) -> None:
        self.cmd = cmd
        self.p = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for raw in self.p.stdout:
            if raw.startswith("{"):
                self.lines.put(json.loads(raw))
        self.lines.put({"event": "exit"})

    def tell(self, command: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()

    def expect(self, event: str, timeout: float, kind: str | None = None) -> dict[str, Any]:
        """The next line of `event` (and peer `kind`); lines before it are kept in `seen`."""
        limit = time.monotonic() + timeout
        while True:
            left = limit - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"no {event} {kind or ''} in {timeout} s from {self.name()}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if line["event"] in ("error", "exit"):
                err = line.get("error") or self.stderr_tail()
                raise RuntimeError(f"{self.name()}: {err}")
            if line["event"] == event and (kind is None or line.get("kind") == kind):
                return line

    def drain_seen(self) -> list[dict[str, Any]]:
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return self.seen

    def name(self) -> str:
        return " ".join(Path(c).name for c in self.cmd[:3])

    def stderr_tail(self) -> str:
        if self.p.poll() is None:
            return "(running)"
        assert self.p.stderr is not None
        return " | ".join(self.p.stderr.read().strip().splitlines()[-3:])

    def kill(self) -> float:
        """SIGKILL; returns the wall time of the kill."""
        at = time.time()
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)
        return at


class Place:
    """A fresh address for one measurement, and the commands of each end."""

    def __init__(self, a: argparse.Namespace, system: str, transport: str) -> None:
        self.a, self.system = a, system
        d = tempfile.mkdtemp(prefix="weida-redial-")
        self.identity: str | None = None
        if transport == "unix":
            self.bind = f"weida+unix://{d}/s.sock"
            self.dial = self.bind + "//jobs"
        elif transport == "quic":
            # The same UDP port and key for every puller process; the address the pusher dials
            # (with the key's fingerprint) is the first puller's.
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            self.bind = f"weida://127.0.0.1:{port}"
            self.dial = ""
            self.identity = f"{d}/identity"
        elif transport == "ipc":
            self.bind = self.dial = f"ipc://{d}/s.ipc"
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            self.bind = self.dial = f"tcp://127.0.0.1:{port}"

    def program(self) -> list[str]:
        if self.system == "weida":
            return [str(self.a.weida)]
        return [self.a.python, str(ROOT / "bench/redial/pyzmq_redial.py")]

    def puller(self, mode: str, n: int = 1) -> Proc:
        """A puller process started and ready: it binds on `tell("bind")`."""
        cmd = [*self.program(), "puller", "--addr", self.bind, "--mode", mode, "--n", str(n)]
        if self.identity:
            cmd += ["--identity", self.identity]
        p = Proc(cmd)
        p.expect("ready", 10)
        return p

    def pusher(self, policy: str | None, n: int = 1000) -> Proc:
        cmd = [*self.program(), "pusher", "--addr", self.dial]
        if self.system == "weida":
            cmd += ["--policy", policy or "default"]
            if n > 1000:
                cmd += ["--outbox-messages", str(n)]
        elif n > 1000:
            cmd += ["--hwm", str(n)]
        return Proc(cmd)


def rebind(
    a: argparse.Namespace, system: str, transport: str, policy: str | None, outage: float
) -> dict:
    place = Place(a, system, transport)
    procs: list[Proc] = []
    try:
        first = place.puller("first")
        procs.append(first)
        first.tell("bind")
        place.dial = place.dial or first.expect("bound", 10)["address"]
        pusher = place.pusher(policy)
        procs.append(pusher)
        pusher.tell("connect")
        pusher.expect("connected", 10)
        pusher.tell("tick 1")
        first.expect("first", 10)
        time.sleep(0.2)
        second = place.puller("first")
        procs.append(second)
        killed = first.kill()
        time.sleep(max(0.0, killed + outage - time.time()))
        second.tell("bind")
        bound = second.expect("bound", 10)
        got = second.expect("first", 90)
        retries = [
            e
            for e in pusher.drain_seen()
            if e.get("kind") == "retrying" and killed <= e["wall"] <= bound["wall"]
        ]
        return {
            "bind_to_first_ms": got["bind_to_first_ms"],
            "outage_s": bound["wall"] - killed,
            "retries_in_outage": len(retries),
            "last_delay_ms": retries[-1].get("delay_ms") if retries else None,
            "pusher": shlex.join(pusher.cmd),
        }
    finally:
        for p in reversed(procs):
            p.kill()


def drain(a: argparse.Namespace, system: str, transport: str, n: int) -> dict:
    place = Place(a, system, transport)
    procs: list[Proc] = []
    try:
        live = place.puller("count", n)
        procs.append(live)
        live.tell("bind")
        live.expect("bound", 10)
        pusher = place.pusher(None, n)
        procs.append(pusher)
        pusher.tell("connect")
        pusher.expect("connected", 10)
        if system == "pyzmq":  # connect returns before the connection is up
            pusher.expect("peer", 10, "connected")
        pusher.tell(f"burst {n}")
        sent_live = pusher.expect("sent", 120)
        got_live = live.expect("received", 120)
        live.kill()
        pusher.expect("peer", 20, "lost")
        if system == "weida":
            pusher.expect("peer", 20, "retrying")
        pusher.tell(f"burst {n}")
        queued = pusher.expect("sent", 120)
        again = place.puller("count", n)
        procs.append(again)
        again.tell("bind")
        again.expect("bound", 10)
        got = again.expect("received", 120)
        return {
            "live_msgs_per_s": got_live["msgs_per_s"],
            "drain_msgs_per_s": got["msgs_per_s"],
            "ratio": got["msgs_per_s"] / got_live["msgs_per_s"],
            "queue_secs": queued["secs"],
            "live_send_secs": sent_live["secs"],
            "bind_to_first_ms": got["bind_to_first_ms"],
            "pusher": shlex.join(pusher.cmd),
        }
    finally:
        for p in reversed(procs):
            p.kill()


def summary(values: list[float], fmt: str = ",.1f") -> str:
    if not values:
        return "failed"
    med = statistics.median(values)
    return f"{med:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--outage", type=float, default=1.0, help="seconds from kill to restart")
    ap.add_argument(
        "--spread",
        type=float,
        default=0.0,
        help="add to each repetition's outage a uniform draw from [0, SPREAD) s, the same for "
        "every system of the repetition (a fixed outage puts every rebind at one phase of a "
        "fixed redial schedule)",
    )
    ap.add_argument("--n", type=int, action="append", help="drain sizes (default 1000, 100000)")
    ap.add_argument("--seed", type=int, default=1, help="of the outage draws")
    ap.add_argument("--quic", action="store_true", help="add weida over QUIC to the rebind rows")
    ap.add_argument("--only", choices=("rebind", "drain"))
    ap.add_argument("--weida", type=Path, default=ROOT / "target/release/weida-redial")
    ap.add_argument("--python", default=str(ROOT / "target/bench-venv/bin/python"))
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    sizes = a.n or [1000, 100_000]
    began = time.time()
    print(f"# {shlex.join([sys.executable, *sys.argv])}")
    print(f"# nproc {os.cpu_count()}, {os.uname().release}, load at start {os.getloadavg()[0]:.2f}")
    rebinds = REBIND + (REBIND_QUIC if a.quic else ())
    rb: dict[str, list[dict]] = {r[0]: [] for r in rebinds}
    dr: dict[str, list[dict]] = {f"{r[0]}, N={n}": [] for r in DRAIN for n in sizes}
    failed = 0
    draws = random.Random(a.seed)
    for rep in range(a.reps):
        outage = a.outage + draws.uniform(0, a.spread)
        for label, system, transport, policy in rebinds if a.only != "drain" else ():
            try:
                r = rebind(a, system, transport, policy, outage)
            except Exception as e:  # a failed measurement is reported, and fails the run
                r = {"error": str(e)}
                failed += 1
            rb[label].append(r)
            print(f"rep {rep + 1} rebind {label}: {r}", file=sys.stderr, flush=True)
        for label, system, transport in DRAIN if a.only != "rebind" else ():
            for n in sizes:
                try:
                    r = drain(a, system, transport, n)
                except Exception as e:
                    r = {"error": str(e)}
                    failed += 1
                dr[f"{label}, N={n}"].append(r)
                print(f"rep {rep + 1} drain {label} N={n}: {r}", file=sys.stderr, flush=True)

    def ok(rs: list[dict], key: str) -> list[float]:
        return [r[key] for r in rs if "error" not in r]

    if a.only != "drain":
        spread = f" + [0, {a.spread}) s" if a.spread else ""
        print(
            f"\n## Rebind to first delivery, outage {a.outage} s{spread} "
            f"({a.reps} reps; median (min-max))\n"
        )
        print("| system | bind → first message, ms | outage (kill → bind), s | redials in it |")
        print("| --- | ---: | ---: | ---: |")
        for label, rs in rb.items():
            print(
                f"| {label} | {summary(ok(rs, 'bind_to_first_ms'))} | "
                f"{summary(ok(rs, 'outage_s'), '.3f')} | "
                f"{summary(ok(rs, 'retries_in_outage'), '.0f')} |"
            )
    if a.only != "rebind":
        print(f"\n## Drain after an outage, 64 B ({a.reps} reps; median (min-max))\n")
        print(
            "| system | live msgs/s | drain msgs/s | drain ÷ live | "
            "N live sends, ms | N sends during outage, ms |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for label, rs in dr.items():
            queue_ms = [v * 1e3 for v in ok(rs, "queue_secs")]
            live_ms = [v * 1e3 for v in ok(rs, "live_send_secs")]
            ratios = ok(rs, "ratio")
            ratio = "failed"
            if ratios:
                ratio = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
            print(
                f"| {label} | {summary(ok(rs, 'live_msgs_per_s'), ',.0f')} | "
                f"{summary(ok(rs, 'drain_msgs_per_s'), ',.0f')} | "
                f"{ratio} | {summary(live_ms)} | {summary(queue_ms)} |"
            )
    print(
        f"\n# {time.time() - began:.0f} s in all; load at end {os.getloadavg()[0]:.2f}; "
        f"{failed} failed"
    )
    if a.json:
        a.json.write_text(json.dumps({"rebind": rb, "drain": dr}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
