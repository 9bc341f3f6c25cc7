"""The polyglot demo (``./dev demo``): five processes in three languages on loopback.

    python demo/run.py --weida target/release/weida

A Python price service (Req/Rep) and a Python worker (Push/Pull) bind loopback with ephemeral
keys; a Node shop asks the prices and pushes jobs; the Rust CLI publishes price ticks
(``weida pub``) and subscribes to part of them (``weida sub 'prices.*.eur'``). Every address
carries the sha256 pin of the key that binds it, so each side trusts the other by that pin;
addresses travel from the READY lines to the next process's arguments and environment.

Each line a process prints is shown with its role and language. At the end the demo checks what
every side saw against what the others say they did, prints a summary, and exits 1 if anything
is missing. Stdlib only; the Python roles run with this interpreter, which must have the weida
wheel installed (``./dev demo`` uses the venv it builds), and the Node role with ``node``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The demo must end by itself; this bounds it when a side hangs.
DEADLINE_SECS = 60.0
JOBS = 5
FILTER = "prices.*.eur"
PIN = re.compile(r"sha256:([0-9a-f]{8})[0-9a-f]{56}")


def ticks() -> list[tuple[str, str]]:
    """The ticks ``weida pub`` publishes: two rounds of three coins in two currencies, and one
    deeper topic that ``prices.*.eur`` must not select (``*`` is exactly one segment)."""
    base = {"btc": 64210, "eth": 3120, "sol": 142}
    out = []
    for round_ in range(2):
        for coin, eur in base.items():
            out.append((f"prices.{coin}.eur", str(eur + 7 * round_)))
            out.append((f"prices.{coin}.usd", str(round(eur * 1.08) + 7 * round_)))
        if round_ == 0:
            out.append(("prices.btc.eur.depth", "12.5"))
    return out


def selects(flt: str, topic: str) -> bool:
    """The segment grammar, for the expectation: ``*`` one segment, a last ``#`` any number."""
    f, t = flt.split("."), topic.split(".")
    if f[-1] == "#":
        f = f[:-1]
        return len(t) >= len(f) and all(a in ("*", b) for a, b in zip(f, t, strict=False))
    return len(f) == len(t) and all(a in ("*", b) for a, b in zip(f, t, strict=True))


# Every line on stdout is "<who> | <what>", who right-aligned to the longest label.
WIDTH = len("price service (python)")
PRINTING = threading.Lock()


def say(who: str, text: str, warn: bool = False) -> None:
    """One line for people, a pin shortened to its first 8 hex digits (the checks use it whole)."""
    text = PIN.sub(lambda m: f"sha256:{m.group(1)}…", text)
    with PRINTING:
        print(f"{who:>{WIDTH}} {'!' if warn else '|'} {text}", flush=True)


class Role:
    """One process of the demo: its output shown as it comes, kept for the checks."""

    def __init__(
        self,
        name: str,
        lang: str,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        keep_stdin: bool = False,
        show: Callable[[str], str] | None = None,
    ) -> None:
        self.label = f"{name} ({lang})"
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.show = show
        self.proc = subprocess.Popen(
            list(argv),
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdin=subprocess.PIPE if (stdin is not None or keep_stdin) else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if stdin is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(stdin)
            if not keep_stdin:
                self.proc.stdin.close()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True),
        ]
        for t in self.readers:
            t.start()

    def _read(self, pipe: IO[bytes], out: bool) -> None:
        for raw in pipe:
            line = raw.decode(errors="replace").rstrip("\n")
            (self.stdout if out else self.stderr).append(line)
            if out:
                self.lines.put(line)
            shown = self.show(line) if (out and self.show) else line
            if shown is not None and not line.startswith(("READY ", "RESULT ")):
                warn = not out and line.startswith(("error", "warning", "Traceback"))
                say(self.label, shown, warn)
        if out:
            self.lines.put(None)

    def ready(self, until: float) -> str:
        """The address of its READY line (its first line), waiting at most until ``until``."""
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, until - time.monotonic()))
            except queue.Empty:
                raise Failed(f"{self.label} printed no READY line in time") from None
            if line is None:
                raise Failed(f"{self.label} exited before it was ready: {self.tail()}")
            if line.startswith("READY "):
                return line.removeprefix("READY ")

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def wait(self, until: float) -> int:
        try:
            code = self.proc.wait(timeout=max(0.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise Failed(f"{self.label} did not finish in time") from None
        for t in self.readers:
            t.join(timeout=5)
        return code

    def result(self) -> dict[str, Any]:
        for line in self.stdout:
            if line.startswith("RESULT "):
                value: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
                return value
        raise Failed(f"{self.label} printed no RESULT line: {self.tail()}")

    def tail(self) -> str:
        return " / ".join(self.stderr[-5:]) or "(nothing on stderr)"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Failed(Exception):
    """A side did not do what the demo needs to go on."""


def finish(roles: list[Role], serving: list[Role], until: float) -> dict[str, int]:
    """Waits for ``roles`` to exit by themselves while ``serving`` stay up. A role that fails,
    or a service that exits early, ends the demo at once rather than at the deadline."""
    codes: dict[str, int] = {}
    while len(codes) < len(roles):
        for r in roles:
            code = r.proc.poll()
            if code is not None and r.label not in codes:
                codes[r.label] = r.wait(until)
                if code != 0:
                    raise Failed(f"{r.label} exited with status {code}: {r.tail()}")
        for r in serving:
            if r.proc.poll() is not None:
                raise Failed(f"{r.label} exited before the others were done: {r.tail()}")
        if time.monotonic() > until:
            late = [r.label for r in roles if r.label not in codes]
            raise Failed(f"{', '.join(late)} did not finish within {DEADLINE_SECS:.0f} s")
        time.sleep(0.02)
    return codes


def show_tick(line: str) -> str:
    """A ``weida sub --format json`` line, for people."""
    try:
        m = json.loads(line)
        return (
            f"{m['topic']} {m['body']}  (sequence {m.get('sequence')}, gap {m.get('gap')}, "
            f"from {m['peer']['fingerprint']})"
        )
    except (ValueError, KeyError, TypeError):
        return line


@dataclass
class Seen:
    """The roles once they all exited by themselves, and the address the ticker bound."""

    prices: Role
    worker: Role
    ticker: Role
    shop: Role
    subscriber: Role
    ticks_at: str


class Demo:
    """The demo's processes, started in order, and what they printed."""

    def __init__(self, weida: str, node: str, until: float) -> None:
        self.weida, self.node, self.until = weida, node, until
        self.roles: list[Role] = []

    def start(self, *args: Any, **kwargs: Any) -> Role:
        role = Role(*args, **kwargs)
        self.roles.append(role)
        return role

    def run(self) -> Seen:
        py = [sys.executable, "-u"]
        # The services first: their READY lines carry the pinned addresses the others dial.
        prices = self.start(
            "price service", "python", [*py, str(HERE / "price_service.py")], keep_stdin=True
        )
        worker = self.start(
            "worker", "python", [*py, str(HERE / "worker.py"), str(JOBS)], keep_stdin=True
        )
        ticker = self.start(
            "ticker",
            "rust cli",
            [self.weida, "pub", "weida://127.0.0.1:0/ticks", *PUB_OPTIONS],
            stdin="".join(f"{t} {b}\n" for t, b in ticks()).encode(),
        )
        prices_at, jobs_at, ticks_at = (r.ready(self.until) for r in (prices, worker, ticker))
        for to, address in (("shop", prices_at), ("shop", jobs_at), ("subscriber", ticks_at)):
            if PIN.search(address) is None:
                raise Failed(f"{address} carries no sha256 pin")
            say("demo", f"{address} -> {to}")
        shop = self.start(
            "shop",
            "node",
            [self.node, str(HERE / "shop.mjs")],
            env={"DEMO_PRICES": prices_at, "DEMO_JOBS": jobs_at, "DEMO_JOB_COUNT": str(JOBS)},
        )
        subscriber = self.start(
            "subscriber",
            "rust cli",
            [self.weida, "sub", ticks_at, FILTER, *SUB_OPTIONS, "--count", str(len(selected()))],
            show=show_tick,
        )
        finish([shop, subscriber, ticker], serving=[prices, worker], until=self.until)
        # Every reply and receipt is in: the services can go.
        for r in (prices, worker):
            r.close_stdin()
        finish([prices, worker], serving=[], until=self.until)
        return Seen(prices, worker, ticker, shop, subscriber, ticks_at)

    def stop(self) -> None:
        for r in self.roles:
            r.kill()


PUB_OPTIONS = "--keyed --ready -v --wait-subscribers 1 --timeout 20".split()
SUB_OPTIONS = "--ordering reassemble --format json --ready --timeout 20".split()


def selected() -> list[tuple[str, str]]:
    return [(t, b) for t, b in ticks() if selects(FILTER, t)]


def check_prices(prices: Role, shop: Role) -> tuple[bool, str]:
    served, bought = prices.result(), shop.result()
    answered = [(a["coin"], a["outcome"]) for a in served["answered"]]
    seen = [(a["coin"], a["outcome"]) for a in bought["asked"]]
    same_text = all(
        s["text"] == b["text"] if s["outcome"] == "price" else s["text"] in b["text"]
        for s, b in zip(served["answered"], bought["asked"], strict=False)
    )
    from_service = all(
        b["peer"] == served["fingerprint"] for b in bought["asked"] if b["outcome"] == "price"
    )
    by_shop = {a["peer"] for a in served["answered"]} == {bought["fingerprint"]}
    n_price = sum(o == "price" for _, o in seen)
    ok = bool(seen) and answered == seen and same_text and from_service and by_shop
    return ok, (
        f"node asked {len(seen)} prices; the python price service answered each ({n_price} "
        f"prices, {len(seen) - n_price} rejected); node saw every answer come from the "
        "service's pinned key, and python saw node's key ask"
    ) + ("" if ok else f" (node saw {bought['asked']}; python answered {served['answered']})")


def check_jobs(worker: Role, shop: Role) -> tuple[bool, str]:
    got, sent = worker.result(), shop.result()
    received = sorted(int(j["job"]) for j in got["received"])
    delivered = sorted(int(j) for j in sent["delivered"])
    from_shop = {j["peer"] for j in got["received"]} == {sent["fingerprint"]}
    want = list(range(1, JOBS + 1))
    ok = received == want and delivered == want and from_shop
    return ok, (
        f"node pushed {JOBS} jobs, each receipt delivered; the python worker received "
        f"{len(received)} of them, each from node's key"
    ) + ("" if ok else f" (delivered {delivered}, received {got['received']})")


def check_subscriber(subscriber: Role, ticks_at: str) -> tuple[bool, str]:
    lines = [json.loads(line) for line in subscriber.stdout if line.startswith("{")]
    received = [(m["topic"], m["body"]) for m in lines]
    in_order = [m.get("sequence") for m in lines] == list(range(1, len(lines) + 1))
    no_gap = all(m.get("gap") == 0 for m in lines)
    pin = PIN.search(ticks_at)
    from_ticker = {m["peer"]["fingerprint"] for m in lines} == {pin and pin.group(0)}
    ok = received == selected() and in_order and no_gap and from_ticker
    return ok, (
        f"the rust subscriber got exactly the {len(selected())} of {len(ticks())} ticks "
        f"{FILTER!r} selects, in order, without a gap, from the ticker's pinned key"
    ) + ("" if ok else f" (it printed {subscriber.stdout})")


def check_ticker(ticker: Role) -> tuple[bool, str]:
    queued: dict[str, list[int]] = {}
    for line in ticker.stderr:
        m = re.match(r"published (\S+) \(.*\): (\d+) cop", line)
        if m:
            queued.setdefault(m.group(1), []).append(int(m.group(2)))
    wanted: dict[str, list[int]] = {}
    for t, _ in ticks():
        wanted.setdefault(t, []).append(1 if selects(FILTER, t) else 0)
    summary = ticker.stderr[-1] if ticker.stderr else ""
    ok = queued == wanted and "none dropped" in summary
    return ok, (
        "the rust publisher queued one copy per selected tick and none for the "
        f"{len(ticks()) - len(selected())} others; none dropped"
    ) + ("" if ok else f" (copies by topic: {queued}; {summary!r})")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--weida", required=True, help="the weida CLI binary (release build)")
    parser.add_argument("--node", default="node", help="the node executable")
    args = parser.parse_args()
    started = time.monotonic()
    demo = Demo(args.weida, args.node, started + DEADLINE_SECS)
    say(
        "demo",
        "five processes, three languages, QUIC on loopback; each binds with a new key, and "
        "every address pins it (sha256), so each side trusts the other by that pin",
    )
    checks: list[tuple[bool, str]] = []
    try:
        seen = demo.run()
        checks.append((True, f"all {len(demo.roles)} processes exited 0"))
        checks.append(check_prices(seen.prices, seen.shop))
        checks.append(check_jobs(seen.worker, seen.shop))
        checks.append(check_subscriber(seen.subscriber, seen.ticks_at))
        checks.append(check_ticker(seen.ticker))
    except Failed as e:
        checks.append((False, str(e)))
    finally:
        demo.stop()
    elapsed = time.monotonic() - started
    print("\nsummary")
    for ok, text in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {text}")
    passed = all(ok for ok, _ in checks)
    print(f"demo {'passed' if passed else 'FAILED'} in {elapsed:.1f} s")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
