"""PAIR, SURVEY and BUS, weida's Python binding against pynng (NNG's pair1, surveyor0/respondent0
and bus0), every member or respondent a process of its own (bench/README.md, "PAIR, SURVEY and
BUS").

    python bench/suite/patterns6.py --reps 5   # every pattern, system and transport pair

pair: one process binds a pair and receives; another dials it and sends 64-byte messages for the
measured seconds (one `await send` each for weida, a blocking `send` for pynng), then an end
marker. Reported: messages per second, receiver-timed from the first message to the marker.

survey: 16 respondent processes bind; one surveyor process dials them all and asks a 64-byte
question; a round ends when all 16 answered (deadline 1 s). Reported: the median and p99 round
time over the rounds of a repetition, and the rounds whose answers were not all in.
bus: 8 member processes, each bound and dialling the 7 others (a mesh); each sends 64-byte
messages for the measured seconds and counts what it receives. Reported: copies received per
second, all members together, and the copies each system reports dropped.

Each repetition runs both systems one after the other on the same transport pair (QUIC vs tcp,
AF_UNIX vs ipc); medians over repetitions. The run prints one JSON object per measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

Q = b"q" * 64


def nng_address(transport: str, tmp: str, n: int) -> str:
    if transport == "ipc":
        return f"ipc://{tmp}/m{n}.ipc"
    return "tcp://127.0.0.1:0"


def nng_listen(sock: Any, addr: str) -> str:
    listener = sock.listen(addr)
    if addr.startswith("tcp://"):
        return f"tcp://127.0.0.1:{str(listener.local_address).rsplit(':', 1)[1]}"
    return addr


def line(s: str) -> None:
    sys.stdout.write(s + "\n")
    sys.stdout.flush()


# --- one process of a run ----------------------------------------------------------------------


END = b"E"


async def weida_member(a: argparse.Namespace) -> None:
    import weida

    async with weida.Runtime() as rt:
        bind = (
            "weida://127.0.0.1:0" if a.transport == "quic" else f"weida+unix://{a.tmp}/w{a.n}.sock"
        )
        if a.pattern == "pair_dial":
            p = rt.pair()
            await p.connect(sys.stdin.readline().strip())
            line("CONNECTED")
            sys.stdin.readline()  # GO
            start, sent = time.monotonic(), 0
            while time.monotonic() - start < a.secs:
                await p.send(Q)
                sent += 1
            await p.send(END)
            line(json.dumps({"sent": sent}))
            sys.stdin.readline()  # the receiver has its result: the connection may go
            return
        listener = await rt.bind(bind)
        if a.pattern == "pair_bound":
            p = listener.pair("/pair")
            line(f"READY {p.address}")
            got, first = 0, 0.0
            while True:
                ms = await p.recv_many(256)
                if not got:
                    first = time.perf_counter()
                got += len(ms)
                if ms[-1].body == END:
                    break
            line(json.dumps({"received": got - 1, "secs": time.perf_counter() - first}))
            return
        if a.pattern == "respondent":
            r = listener.respondent("/r")
            line(f"READY {r.address}")
            async for ex in r:
                await ex.take_body()
                await ex.reply(Q)
            return
        if a.pattern == "surveyor":
            s = rt.surveyor()
            for addr in sys.stdin.readline().split():
                await s.connect(addr)
            rounds, missed = [], 0
            end = time.monotonic() + a.secs
            while time.monotonic() < end:
                t0 = time.perf_counter()
                run = await s.survey(Q, 1.0)
                n = sum([1 async for x in run if isinstance(x, weida.Message)])
                rounds.append(time.perf_counter() - t0)
                missed += n != a.respondents
            line(json.dumps({"rounds": rounds, "missed": missed}))
            return
        bus = rt.bus(listener, "/bus")
        line(f"READY {bus.address}")
        for addr in sys.stdin.readline().split():
            if addr != bus.address:
                await bus.connect(addr)
        line("CONNECTED")
        sys.stdin.readline()  # GO
        got = 0

        async def receive() -> None:
            nonlocal got
            while True:
                got += len(await bus.recv_many(256))

        task = asyncio.create_task(receive())
        start = time.monotonic()
        while time.monotonic() - start < a.secs:
            await bus.send(Q)
        elapsed = time.monotonic() - start
        # What is in flight when sending stops is counted by whoever got it before the end.
        await asyncio.sleep(0.2)
        task.cancel()
        line(json.dumps({"received": got, "secs": elapsed, "dropped": bus.dropped().total}))


def nng_member(a: argparse.Namespace) -> None:
    import pynng

    addr = nng_address(a.transport, a.tmp, a.n)
    if a.pattern == "pair_dial":
        with pynng.Pair1() as p:
            p.dial(sys.stdin.readline().strip(), block=True)
            line("CONNECTED")
            sys.stdin.readline()
            start, sent = time.monotonic(), 0
            while time.monotonic() - start < a.secs:
                p.send(Q)
                sent += 1
            p.send(END)
            line(json.dumps({"sent": sent}))
            sys.stdin.readline()
        return
    if a.pattern == "pair_bound":
        with pynng.Pair1() as p:
            line(f"READY {nng_listen(p, addr)}")
            got, first = 0, 0.0
            while True:
                m = p.recv()
                if not got:
                    first = time.perf_counter()
                got += 1
                if m == END:
                    break
            line(json.dumps({"received": got - 1, "secs": time.perf_counter() - first}))
        return
    if a.pattern == "respondent":
        with pynng.Respondent0() as r:
            line(f"READY {nng_listen(r, addr)}")
            while True:
                r.recv()
                r.send(Q)
    if a.pattern == "surveyor":
        with pynng.Surveyor0(survey_time=1000, recv_timeout=1000) as s:
            for x in sys.stdin.readline().split():
                s.dial(x, block=True)
            rounds, missed = [], 0
            end = time.monotonic() + a.secs
            while time.monotonic() < end:
                t0 = time.perf_counter()
                s.send(Q)
                n = 0
                while n < a.respondents:
                    try:
                        s.recv()
                    except pynng.Timeout:
                        break
                    n += 1
                rounds.append(time.perf_counter() - t0)
                missed += n != a.respondents
            line(json.dumps({"rounds": rounds, "missed": missed}))
        return
    import threading

    with pynng.Bus0(recv_timeout=200) as b:
        me = nng_listen(b, addr)
        line(f"READY {me}")
        for x in sys.stdin.readline().split():
            if x != me:
                b.dial(x, block=True)
        line("CONNECTED")
        sys.stdin.readline()
        got = 0
        stop = threading.Event()

        def receive() -> None:
            nonlocal got
            while not stop.is_set():
                try:
                    b.recv()
                    got += 1
                except pynng.Timeout:
                    pass

        t = threading.Thread(target=receive)
        t.start()
        start = time.monotonic()
        while time.monotonic() - start < a.secs:
            b.send(Q)
        elapsed = time.monotonic() - start
        time.sleep(0.2)
        stop.set()
        t.join()
        line(json.dumps({"received": got, "secs": elapsed, "dropped": None}))


# --- the coordinator ---------------------------------------------------------------------------


def spawn(system: str, pattern: str, transport: str, tmp: str, n: int, a: argparse.Namespace):
    if system == "weida" and pattern == "respondent" and a.rust_respondents:
        # The profile's control (--rust-respondents): the respondent with no binding crossing,
        # weida's CLI answering each question from the Rust runtime itself.
        bind = (
            "weida://127.0.0.1:0/r" if transport == "quic" else f"weida+unix://{tmp}/w{n}.sock//r"
        )
        cli = os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "weida")
        cmd = [cli, "respond", bind, "--echo", "--ready"]
        return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    args = [sys.executable, __file__, "--role", pattern, "--system", system, "--transport",
            transport, "--tmp", tmp, "--n", str(n), "--secs", str(a.secs),
            "--respondents", str(a.respondents)]  # fmt: skip
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ready(p: subprocess.Popen[str]) -> str:
    assert p.stdout is not None
    got = p.stdout.readline().split()
    if got[:1] != ["READY"]:
        raise RuntimeError(f"a member said {got!r}")
    return got[1]


def say(p: subprocess.Popen[str], text: str) -> None:
    assert p.stdin is not None
    p.stdin.write(text + "\n")
    p.stdin.flush()


def result(p: subprocess.Popen[str]) -> dict[str, Any]:
    assert p.stdout is not None
    out = p.stdout.readline()
    if not out:
        raise RuntimeError("a process ended without a result")
    return json.loads(out)


def survey(system: str, transport: str, a: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        rs = [spawn(system, "respondent", transport, tmp, i, a) for i in range(a.respondents)]
        try:
            addrs = [ready(p) for p in rs]
            if system == "weida" and a.rust_respondents:
                # `weida respond` prints each question: drained, so a full pipe never stalls it.
                for p in rs:
                    threading.Thread(target=p.stdout.read, daemon=True).start()  # type: ignore[union-attr]
            s = spawn(system, "surveyor", transport, tmp, 99, a)
            say(s, " ".join(addrs))
            r = result(s)
            s.wait()
        finally:
            for p in rs:
                p.kill()
                p.wait()
    rounds = sorted(r["rounds"])
    return {
        "rounds": len(rounds),
        "p50_ms": statistics.median(rounds) * 1e3,
        "p99_ms": rounds[int(len(rounds) * 0.99)] * 1e3,
        "missed": r["missed"],
    }


def pair(system: str, transport: str, a: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        bound = spawn(system, "pair_bound", transport, tmp, 0, a)
        dial = None
        try:
            addr = ready(bound)
            dial = spawn(system, "pair_dial", transport, tmp, 1, a)
            say(dial, addr)
            assert dial.stdout is not None and dial.stdout.readline().strip() == "CONNECTED"
            say(dial, "GO")
            sent = result(dial)["sent"]
            r = result(bound)
            say(dial, "DONE")
            dial.wait()
        finally:
            for p in (bound, dial):
                if p is not None:
                    p.kill()
                    p.wait()
    return {"msgs_per_s": r["received"] / r["secs"], "sent": sent, "received": r["received"]}


def bus(system: str, transport: str, a: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ms = [spawn(system, "member", transport, tmp, i, a) for i in range(a.members)]
        try:
            addrs = [ready(p) for p in ms]
            for p in ms:
                say(p, " ".join(addrs))
            for p in ms:
                assert p.stdout is not None and p.stdout.readline().strip() == "CONNECTED"
            for p in ms:
                say(p, "GO")
            rs = [result(p) for p in ms]
        finally:
            for p in ms:
                p.kill()
                p.wait()
    secs = statistics.mean(r["secs"] for r in rs)
    dropped = [r["dropped"] for r in rs if r["dropped"] is not None]
    return {
        "copies_per_s": sum(r["received"] for r in rs) / secs,
        "dropped": sum(dropped) if dropped else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    roles = ("respondent", "surveyor", "member", "pair_bound", "pair_dial")
    ap.add_argument("--role", choices=roles)
    ap.add_argument("--system", choices=("weida", "pynng"))
    ap.add_argument("--transport", default="quic")
    ap.add_argument("--tmp", default="")
    ap.add_argument("--n", type=int, default=0)
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--respondents", type=int, default=16)
    ap.add_argument("--members", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pattern", choices=("pair", "survey", "bus"), action="append")
    ap.add_argument("--rust-respondents", action="store_true",
                    help="weida's respondents are `weida respond --echo` (target/release/weida): "
                    "the survey with no binding crossing at the respondents")  # fmt: skip
    a = ap.parse_args()
    if a.role is not None:
        a.pattern = a.role
        if a.system == "weida":
            asyncio.run(weida_member(a))
        else:
            nng_member(a)
        return 0
    pairs = (("quic", "tcp"), ("unix", "ipc"))
    for pattern in a.pattern or ["pair", "survey", "bus"]:
        run = {"pair": pair, "survey": survey, "bus": bus}[pattern]
        for weida_t, nng_t in pairs:
            got: dict[str, list[dict[str, Any]]] = {"weida": [], "pynng": []}
            for _ in range(a.reps):
                got["weida"].append(run("weida", weida_t, a))
                got["pynng"].append(run("pynng", nng_t, a))
            for system, rows in got.items():
                keys = [k for k in rows[0] if rows[0][k] is not None]
                median = {k: statistics.median(r[k] for r in rows) for k in keys}
                t = weida_t if system == "weida" else nng_t
                print(json.dumps({"pattern": pattern, "system": system, "transport": t,
                                  "reps": a.reps, "median": median, "runs": rows}))  # fmt: skip
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
