"""The benchmark suite's rows and cases: every system it runs, on which transports, with which
patterns, and what a measurement is (bench/README.md, "The suite"). run.py, processes.py and
plots.py share them.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

SUITE = Path(__file__).resolve().parent
ROOT = SUITE.parent.parent
SIZES = (64, 1024, 64 * 1024, 1 << 20)
REQ_SIZE = 64
PUBSUB = ((1, 64), (64, 64), (1, 1024), (64, 1024))  # (width, size)
# Two processes: a subscriber is a process, so 16 of them, not 64 (issue 18's target row).
PUBSUB_TWO = ((1, 64), (16, 64), (1, 1024), (16, 1024))
FAMILY = {"quic": "QUIC", "tcp": "TCP", "unix": "AF_UNIX", "ipc": "AF_UNIX", "inproc": "in process"}
FAMILIES = ("QUIC", "TCP", "AF_UNIX", "in process")
# The substrate each family is divided by, and the weida transport a family is compared with.
CEILING = {
    "QUIC": "quinn-long",
    "TCP": "framed-tcp",
    "AF_UNIX": "framed-unix",
    "in process": "tokio-mpsc",
}
CEILING_TRANSPORT = {"QUIC": "quic", "TCP": "tcp", "AF_UNIX": "unix", "in process": "inproc"}
WEIDA_TRANSPORT = {"QUIC": "quic", "TCP": "quic", "AF_UNIX": "unix", "in process": "inproc"}
WEIDA_OF = {
    "rust": "weida",
    "python": "weida-py",
    "node": "weida-node",
    "kotlin": "weida-kotlin",
    "swift": "weida-swift",
}


@dataclasses.dataclass(frozen=True)
class System:
    key: str
    language: str  # rust | python | node | kotlin | swift
    kind: str  # substrate | weida | other
    transports: tuple[str, ...]
    patterns: tuple[str, ...]
    # worker file (python, node), main class (kotlin: bench/suite/kotlin), launcher (swift: from
    # the repository root)
    program: str = ""
    variant: str | None = None
    rust: tuple[str, ...] = ()  # weida-bench --system arguments ("{t}" is the transport)
    sizes: tuple[int, ...] = SIZES  # Push/Pull sizes


PP, RR, PS = "push_pull", "req_rep", "pub_sub"
SWIFT_LAUNCHER = "kotlin-swift/swift/bench-worker.sh"
ZMQ, WEIDA = ("tcp", "ipc", "inproc"), ("quic", "unix", "inproc")
SMALL = (64, 1024)
SYSTEMS: tuple[System, ...] = (
    # The bare substrate, the ceilings: weida-bench --one (bench/src/one.rs).
    System("quinn-stream", "rust", "substrate", ("quic",), (PP, RR),
           rust=("--system", "substrate", "--transport", "quic")),
    System("quinn-long", "rust", "substrate", ("quic",), (PP, RR), rust=("--system", "quinn-long")),
    System("framed-tcp", "rust", "substrate", ("tcp",), (PP, RR), rust=("--system", "tcp")),
    System("framed-unix", "rust", "substrate", ("unix",), (PP, RR),
           rust=("--system", "substrate", "--transport", "unix")),
    System("tokio-mpsc", "rust", "substrate", ("inproc",), (PP, RR),
           rust=("--system", "substrate", "--transport", "inproc")),
    # weida.
    System("weida", "rust", "weida", WEIDA, (PP, RR, PS),
           rust=("--system", "weida", "--transport", "{t}")),
    System("weida-py", "python", "weida", WEIDA, (PP, RR, PS), "workers/weida_worker.py", "single"),
    System("weida-py batch", "python", "weida", WEIDA, (PP,), "workers/weida_worker.py", "batch",
           sizes=SMALL),
    System("weida-node", "node", "weida", WEIDA, (PP, RR, PS), "node/weida_worker.mjs", "await"),
    System("weida-node window", "node", "weida", WEIDA, (PP,), "node/weida_worker.mjs", "window",
           sizes=SMALL),
    System("weida-node batch", "node", "weida", WEIDA, (PP,), "node/weida_worker.mjs", "batch",
           sizes=SMALL),
    # bench/suite/kotlin/src/weida/bench/Worker.kt, on the JVM (run.py: KOTLIN_BUILD).
    System("weida-kotlin", "kotlin", "weida", WEIDA, (PP, RR), "weida.bench.WorkerKt", "await"),
    System("weida-kotlin batch", "kotlin", "weida", WEIDA, (PP,), "weida.bench.WorkerKt", "batch",
           sizes=SMALL),
    # kotlin-swift/swift/Sources/WeidaBenchWorker, built in the Swift chroot (run.py: SWIFT_WORKER).
    System("weida-swift", "swift", "weida", WEIDA, (PP, RR), SWIFT_LAUNCHER, "await"),
    System("weida-swift batch", "swift", "weida", WEIDA, (PP,), SWIFT_LAUNCHER, "batch",
           sizes=SMALL),
    # The others.
    System("pyzmq", "python", "other", ZMQ, (PP, RR, PS), "workers/pyzmq_worker.py", "sync"),
    System("pyzmq asyncio", "python", "other", ZMQ, (PP,), "workers/pyzmq_worker.py", "asyncio"),
    System("zeromq.js", "node", "other", ZMQ, (PP, RR, PS), "node/zeromq_worker.mjs"),
    System("pynng", "python", "other", ZMQ, (PP, RR, PS), "workers/pynng_worker.py"),
    System("zenoh", "python", "other", ("tcp", "quic", "unix"), (PP, RR, PS),
           "workers/zenoh_worker.py"),
)  # fmt: skip
# What each row runs, for the report's legend.
WHAT = {
    "quinn-stream": "raw quinn, a uni stream per message (a bidi stream per request): "
    "weida's design on bare quinn",
    "quinn-long": "raw quinn, one long stream of u32-length-prefixed frames (Push/Pull: gathered "
    "into 64 KiB writes)",
    "framed-tcp": "one tokio TcpStream (Nagle off), u32-length-prefixed frames",
    "framed-unix": "one tokio UnixStream, u32-length-prefixed frames",
    "tokio-mpsc": "a tokio mpsc::channel<Bytes>(256) (mpsc + oneshot for Req/Rep)",
    "weida": "weida's Rust core: Pusher.send / Puller.recv, Requester.request / Replier (echo)",
    "weida-py": "weida's Python binding (asyncio), one await per send and per receive",
    "weida-py batch": "weida's Python binding, send_many / recv_many of 256",
    "weida-node": "weida's Node binding, one await per send and per receive",
    "weida-node window": "weida's Node binding, 64 sends and 64 receives in flight",
    "weida-node batch": "weida's Node binding, sendMany / recvMany of 256",
    "weida-kotlin": "weida's Kotlin binding (coroutines on one thread, JVM), one suspend call per "
    "send and per receive",
    "weida-kotlin batch": "weida's Kotlin binding, sendMany / recvMany of 256",
    "weida-swift": "weida's Swift binding (async tasks; the pool held to one thread with both "
    "ends in one process), one await per send and per receive",
    "weida-swift batch": "weida's Swift binding, sendMany / recvBatch of 256",
    "pyzmq": "pyzmq (libzmq), blocking API, the sending side on a thread",
    "pyzmq asyncio": "pyzmq's zmq.asyncio on one event loop",
    "zeromq.js": "zeromq.js v6 (libzmq), await send / for await",
    "pynng": "pynng (NNG), blocking API, the sending side on a thread",
    "zenoh": "zenoh-python, peer sessions: put/subscriber (BLOCK), querier/queryable, "
    "publisher (DROP)",
}
# Systems without the two-process mode, and why (bench/README.md, "Two processes"). In-process
# transports are one-process only by nature.
NO_TWO_PROCESS = {
    "tokio-mpsc": "an in-process channel",
}
# The smoke run's two-process rows: the Rust core, one Python and one Node system, and the
# reference each is compared with, every pattern once.
SMOKE_TWO = ("weida", "weida-py", "weida-node", "pyzmq", "zeromq.js")
# Rows the smoke run (./dev test) leaves out of both tables: the Kotlin worker needs a JVM and
# Maven's build, the Swift worker the Swift chroot (root) and its build, which setup.sh
# --reuse-builds does not make, and CI's time is tight.
NO_SMOKE = frozenset(s.key for s in SYSTEMS if s.language in ("kotlin", "swift"))
# A system without a Pub/Sub row yet, shown as "not yet" in the overview.
BY_KEY = {s.key: s for s in SYSTEMS}
NO_PUBSUB_YET: set[str] = {"weida-kotlin", "weida-swift"}


@dataclasses.dataclass(frozen=True)
class Case:
    pattern: str
    size: int
    width: int = 1

    def name(self) -> str:
        if self.pattern == PS:
            return f"pub_sub {size_name(self.size)} ×{self.width}"
        return f"{self.pattern} {size_name(self.size)}"


@dataclasses.dataclass(frozen=True)
class Job:
    case: Case
    system: System
    transport: str
    procs: int = 1  # 2: the ends in separate processes


def size_name(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def target_dir() -> Path:
    t = Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    return t if t.is_absolute() else ROOT / t


Summary = dict[str, float]  # median, min, max, n


@dataclasses.dataclass
class Row:
    case: Case
    system: System
    transport: str
    value: Summary | None  # msgs/s, copies/s, or p50
    p99: Summary | None
    vs_weida: Summary | None  # weida ÷ this, paired per rep
    vs_ceiling: Summary | None  # this ÷ the family's ceiling
    vs_stream: Summary | None  # this ÷ quinn-stream (QUIC rows)
    errors: list[str]
    # Two processes: µs of CPU per message (per round trip, per copy) and cores busy, per side.
    cpu: dict[str, Summary | None] = dataclasses.field(default_factory=dict)
