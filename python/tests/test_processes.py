"""Across processes: the examples run as scripts, a Python server and client in two processes
over QUIC with key pinning, a Python peer talking to the Rust core's example peer (and
subscribed to its publisher), uvloop, and a forked child."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import weida

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
REPO = HERE.parent.parent


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("push_pull.py", ["got job 4", "got report.csv", "outstanding: 0"]),
        ("req_rep.py", ["b'HELLO'", "failed: REJECTED", "b'AGAIN'"]),
        ("raw_streams.py", ["stream b'feed' 000000000101010102020202", "answer b'three'"]),
        (
            "pubsub.py",
            [
                "published prices.btc.usd: 0 copies",
                "eur got prices.btc.eur 42000",
                "alert alerts.exchange.down kraken",
                "alert part 0;part 1;part 2;",
                "dropped: 0",
            ],
        ),
    ],
)
def test_every_example_runs(script: str, expected: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for line in expected:
        assert line in out, out


class Child:
    """A process that prints ``READY <address>`` and runs until its stdin closes."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("READY "):
                self.address = line.split()[1]
                return
        raise AssertionError(f"{argv} exited before READY")

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Child]:
    c = Child([sys.executable, str(EXAMPLES / "service.py"), str(tmp_path / "id")])
    yield c
    c.stop()


async def test_a_server_and_a_client_in_two_processes_with_key_pinning(
    service: Child, tmp_path: Path
) -> None:
    address = weida.Address(service.address)
    # The pin the address carries is the key the service keeps on disk.
    assert address.pin == weida.Identity.load(tmp_path / "id").fingerprint
    async with weida.Runtime() as rt:
        req = rt.requester()
        await req.connect(service.address)
        m = await req.request_with(b"across processes", {"k": "v"})
        assert m.body == b"across processes" and m.meta.get("k") == b"v"
        # Pinned by trust instead of by the address: the same key is accepted ...
        bare = str(weida.Address(service.address.replace(f"{address.pin}@", "")))
        pinned = weida.Runtime(trust=weida.Trust.pinned([address.pin or ""]))
        r2 = pinned.requester()
        await r2.connect(bare)
        assert await r2.request(b"by trust") == b"by trust"
        # ... and any other pin is refused, naming the key that answered.
        with pytest.raises(weida.Untrusted) as e:
            await rt.requester().connect(
                str(address.with_pin(weida.Identity.ephemeral().fingerprint))
            )
        assert e.value.fingerprint == address.pin


def rust_peer() -> list[str]:
    built = os.environ.get("WEIDA_PEER_BIN")
    if built:
        return [built]
    if shutil.which("cargo") is None:
        pytest.skip("no cargo to build the Rust peer (set WEIDA_PEER_BIN)")
    return ["cargo", "run", "-q", "-p", "weida", "--example", "peer", "--"]


@pytest.mark.parametrize("bind", ["weida://127.0.0.1:0", "unix"])
async def test_a_python_peer_talks_to_the_rust_peer(bind: str, tmp_path: Path) -> None:
    if bind == "unix":
        bind = f"weida+unix://{tmp_path}/rust.sock"
    child = Child([*rust_peer(), bind])
    try:
        address = weida.Address(child.address)
        async with weida.Runtime() as rt:
            req = rt.requester()
            await req.connect(str(address.with_path("/echo")))
            m = await req.request_with(b"from python", [("a", b"1"), ("a", "2")])
            assert m.body == b"from python"
            assert m.meta.metadata == [("a", b"1"), ("a", b"2")]
            pusher = rt.pusher()
            await pusher.connect(str(address.with_path("/jobs")))
            await pusher.send(bytes(range(20)))
            assert await asyncio.to_thread(child.line) == f"JOB 20 {bytes(range(16)).hex()}"
            body = bytes(range(256)) * 1000
            t = await pusher.open()
            async with t:
                await t.write(body[:1000])
                await t.write(memoryview(body)[1000:])
            assert await asyncio.to_thread(child.line) == f"JOB {len(body)} {body[:16].hex()}"
            drained = await rt.drain(10)
            assert drained.outstanding == 0
    finally:
        child.stop()


@pytest.mark.parametrize("bind", ["weida://127.0.0.1:0", "unix"])
async def test_a_python_subscriber_receives_from_the_rust_publisher(
    bind: str, tmp_path: Path
) -> None:
    if bind == "unix":
        bind = f"weida+unix://{tmp_path}/rust.sock"
    child = Child([*rust_peer(), bind])
    try:
        feed = str(weida.Address(child.address).with_path("/feed"))
        async with weida.Runtime(ordering="detect") as rt:
            sub = rt.subscriber()
            await sub.connect(feed)
            await sub.subscribe("sensors.*.temp")
            for topic, text in [("sensors.hall.temp", "21.5"), ("sensors.hall.rh", "40")]:
                child.send(f"PUB {topic} {text}")
                expected = 1 if topic.endswith("temp") else 0
                assert await asyncio.to_thread(child.line) == f"PUBLISHED {expected}"
            m = await sub.recv()
            assert (m.meta.topic, m.body, m.meta.path) == ("sensors.hall.temp", b"21.5", "/feed")
            assert (m.meta.sequence, m.meta.gap) == (1, 0)
            assert await sub.unsubscribe("sensors.*.temp")
            child.send("PUB sensors.hall.temp 22")
            assert await asyncio.to_thread(child.line) == "PUBLISHED 0"
    finally:
        child.stop()


async def _round_trip() -> bytes:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        replier = listener.replier("/echo")

        async def serve() -> None:
            ex = await replier.accept()
            await ex.reply(await ex.take_body())

        task = asyncio.ensure_future(serve())
        req = rt.requester()
        await req.connect(replier.address)
        body = await req.request(b"uvloop")
        await task
        return body


def test_works_with_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop")
    assert uvloop.run(_round_trip()) == b"uvloop"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_gets_its_own_io_thread() -> None:
    assert asyncio.run(_round_trip()) == b"uvloop"  # the parent's I/O thread is running
    pid = os.fork()
    if pid == 0:
        try:
            ok = asyncio.run(asyncio.wait_for(_round_trip(), 20)) == b"uvloop"
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
