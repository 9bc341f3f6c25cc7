"""A two-process row of the benchmark suite (bench/README.md, "Two processes"): the bind side,
then the dial side (one process per subscriber of Pub/Sub) with the address the bind side
printed; the measuring side's result, and every process's CPU time between the measuring
side's WINDOW lines, read from /proc/<pid>/stat; every process terminated at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from systems import PP, PS, SUITE, Job


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process, every thread of it, from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Worker:
    """One process of a two-process row; its stdout lines go to a queue as they come."""

    def __init__(
        self, i: int, role: str, cmd: list[str], lines: queue.Queue[Any], gate: bool, tmp: str
    ):
        self.i, self.role, self.cmd = i, role, cmd
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(
            cmd,
            cwd=SUITE,
            env={**os.environ, "TMPDIR": tmp},
            stdin=subprocess.PIPE if gate else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        self.result: dict[str, Any] | None = None
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()

    def _read(self, lines: queue.Queue[Any]) -> None:
        assert self.p.stdout is not None
        for ln in self.p.stdout:
            lines.put((self.i, ln.rstrip("\n")))
        lines.put((self.i, None))

    def tail(self) -> list[str]:
        self.stderr.seek(0)
        return self.stderr.read().strip().splitlines()[-5:]

    def go(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write("go\n")
        self.p.stdin.flush()


def stop(workers: list[Worker], bound: float = 3.0) -> None:
    """SIGTERM to every process still running, SIGKILL to any left after `bound` seconds."""
    for w in workers:
        if w.p.poll() is None:
            w.p.send_signal(signal.SIGTERM)
    limit = time.monotonic() + bound
    for w in workers:
        try:
            w.p.wait(max(0.0, limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            w.p.kill()
            w.p.wait()
        w.stderr.close()


GRACE = 3.0


def measure_two(j: Job, a: argparse.Namespace, argv: Callable[..., list[str]]) -> dict[str, Any]:
    """Runs a two-process row: the bind side, then the dial side (one process per subscriber
    for Pub/Sub) with the address the bind side printed. The measuring side's result, and
    the CPU time of every process between the measuring side's WINDOW lines."""
    limit = a.warmup + 4 * a.secs + 40
    began = time.perf_counter()
    deadline = time.monotonic() + limit
    lines: queue.Queue[Any] = queue.Queue()
    workers: list[Worker] = []
    pattern = j.case.pattern
    # The row's processes make their sockets and files here (TMPDIR); removed after the row, as
    # a terminated process cannot remove its own.
    tmp = tempfile.mkdtemp(prefix="weida-row-")
    cmd = shlex.join(argv(j, a, "bind"))

    # The other side failing: the row fails only if the measuring side does not finish within
    # GRACE s (it may be this side seeing its peer close once the window is over, read first).
    other: tuple[float, str, Worker] | None = None

    def next_line() -> tuple[int, str | None]:
        left = min(deadline, other[0] if other else deadline) - time.monotonic()
        if left <= 0:
            raise TimeoutError
        item: tuple[int, str | None] = lines.get(timeout=left)
        return item

    def fail(why: str, w: Worker | None = None) -> dict[str, Any]:
        r: dict[str, Any] = {"error": why, "cmd": cmd}
        if w is not None:
            r["stderr_tail"] = w.tail()
        return r

    try:
        try:
            workers.append(Worker(0, "bind", argv(j, a, "bind"), lines, False, tmp))
            address = ""
            while not address:
                i, ln = next_line()
                if ln is None:
                    return fail("the bind side ended before its ADDRESS line", workers[0])
                if ln.startswith("{"):
                    return fail(f"the bind side: {json.loads(ln).get('error', ln)}", workers[0])
                if ln.startswith("ADDRESS "):
                    address = ln.removeprefix("ADDRESS ")
            dial = argv(j, a, "dial", address)
            cmd += " & " + shlex.join(dial)
            n = j.case.width if pattern == PS else 1
            for k in range(n):
                workers.append(Worker(k + 1, "dial", dial, lines, pattern == PS, tmp))
        except OSError as e:
            return fail(f"cannot start a worker: {e}")
        measuring = [workers[0]] if pattern == PP else workers[1:]
        ready: set[int] = set()
        marks: dict[str, tuple[float, list[float | None]]] = {}
        while any(w.result is None for w in measuring):
            try:
                i, ln = next_line()
            except (TimeoutError, queue.Empty):
                if other is not None:
                    return fail(other[1], other[2])
                return fail(f"killed after {limit:.0f} s")
            w = workers[i]
            if w not in measuring and (ln is None or ln.startswith("{")):
                if other is None and "end" not in marks:
                    why = json.loads(ln).get("error", ln) if ln else "ended with no result"
                    other = (time.monotonic() + GRACE, f"the {w.role} side: {why}", w)
                continue
            if ln is None:
                if w.result is None:
                    return fail(f"the {w.role} side (process {i}) ended with no result", w)
            elif ln == "READY":
                ready.add(i)
                if len(ready) == len(measuring):
                    for m in measuring:
                        m.go()
            elif ln.startswith("WINDOW ") and w is measuring[0]:
                marks[ln.split()[1]] = (
                    time.perf_counter(),
                    [cpu_seconds(x.p.pid) for x in workers],
                )
            elif ln.startswith("{"):
                w.result = json.loads(ln)
                if "error" in w.result:
                    return fail(f"the {w.role} side: {w.result['error']}", w)
    finally:
        stop(workers)
        shutil.rmtree(tmp, ignore_errors=True)
    results = [w.result for w in measuring if w.result is not None]
    r: dict[str, Any] = dict(results[0])
    if pattern == PS:
        r["copies_per_s"] = sum(x["copies_per_s"] for x in results)
        r["messages"] = sum(x["messages"] for x in results)
        r["mb_per_s"] = sum(x["mb_per_s"] for x in results)
        r["per_subscriber"] = [x["copies_per_s"] for x in results]
    r.update(role="two processes", processes=len(workers), wall_s=time.perf_counter() - began)
    r["cmd"] = cmd
    if "start" in marks and "end" in marks:
        (t0, c0), (t1, c1) = marks["start"], marks["end"]
        window = t1 - t0
        rate = r.get("msgs_per_s") or r.get("copies_per_s") or r.get("samples", 0) / window
        r["cpu"] = {"window_s": window}
        for side in ("bind", "dial"):
            spent = [
                e - s
                for w, s, e in zip(workers, c0, c1, strict=True)
                if w.role == side and s is not None and e is not None
            ]
            cpu = sum(spent)
            r["cpu"][side] = {"cpu_s": cpu, "cores": cpu / window}
            if rate and window > 0:
                r["cpu"][side]["us_per_msg"] = cpu / (rate * window) * 1e6
                r[f"cpu_us_{side}"] = r["cpu"][side]["us_per_msg"]
            r[f"cores_{side}"] = cpu / window
    return r
