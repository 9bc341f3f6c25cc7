"""The benchmark suite: weida (Rust core, Python, Node, Kotlin and Swift bindings) next to ZeroMQ
(pyzmq, zeromq.js), NNG (pynng) and Zenoh (zenoh-python), and the bare substrate (raw quinn,
framed tcp and AF_UNIX, a tokio channel), in one run on loopback (bench/README.md, "The suite").

    ./dev bench-suite [--smoke] [--reps N] [--secs S] [--only SYSTEM[/PATTERN]] ...

Two tables. The headline: every case with its two ends in separate processes (sender and
receiver, requester and replier, publisher and one process per subscriber), `--role bind` and
`--role dial` of the same worker, with each process's CPU time per message read from
/proc/<pid>/stat at the measuring side's `WINDOW start` / `WINDOW end` lines. The secondary: one
worker process with both ends in it (`--role both`). A worker prints one JSON line with its
result. `--processes 1` or `2` runs one table only. The run goes repetition after repetition,
every case and system inside each, so drift on a shared machine falls on every system alike.
Output: results.md, results.json and PNG plots in bench/results/<date>/ (or --out). Stdlib and
matplotlib only; run it with the suite's venv (bench/suite/setup.sh makes it).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plots import plots
from processes import measure_two
from systems import (
    BY_KEY,
    CEILING,
    CEILING_TRANSPORT,
    FAMILIES,
    FAMILY,
    NO_PUBSUB_YET,
    NO_SMOKE,
    NO_TWO_PROCESS,
    PP,
    PS,
    PUBSUB,
    PUBSUB_TWO,
    REQ_SIZE,
    ROOT,
    RR,
    SIZES,
    SMOKE_TWO,
    SUITE,
    SYSTEMS,
    WEIDA_OF,
    WEIDA_TRANSPORT,
    WHAT,
    Case,
    Job,
    Row,
    Summary,
    System,
    size_name,
    target_dir,
)


def cases(smoke: bool, procs: int = 1) -> list[Case]:
    if smoke:
        return [Case(PP, 1024), Case(RR, REQ_SIZE), Case(PS, 64, 2)]
    ps = PUBSUB_TWO if procs == 2 else PUBSUB
    return [Case(PP, s) for s in SIZES] + [Case(RR, REQ_SIZE)] + [Case(PS, s, w) for w, s in ps]


def selected(s: System, pattern: str, only: list[str]) -> bool:
    if not only:
        return True
    for o in only:
        sys_part, _, pat = o.partition("/")
        if sys_part in ("*", s.key) and pat in ("", pattern):
            return True
    return False


def plan(a: argparse.Namespace) -> list[Job]:
    """The two-process jobs first (the headline), then the one-process ones."""
    jobs = []
    for procs in (2, 1):
        if a.processes not in (None, procs):
            continue
        for c in cases(a.smoke, procs):
            for s in SYSTEMS:
                if c.pattern not in s.patterns or not selected(s, c.pattern, a.only):
                    continue
                if a.smoke and s.key in NO_SMOKE:
                    continue
                if c.pattern == PP and c.size not in s.sizes and not a.smoke:
                    continue
                if a.size and c.pattern != RR and c.size not in a.size:
                    continue
                transports = s.transports
                if procs == 2:
                    if s.key in NO_TWO_PROCESS or (a.smoke and s.key not in SMOKE_TWO):
                        continue
                    transports = tuple(t for t in transports if t != "inproc")
                # The smoke run: every system and transport once for Push/Pull (two processes:
                # the first transport), the first transport for the rest.
                if a.smoke and (c.pattern != PP or procs == 2):
                    transports = transports[:1]
                jobs += [Job(c, s, t, procs) for t in transports]
    return jobs


def argv(j: Job, a: argparse.Namespace, role: str = "both", address: str = "") -> list[str]:
    window = ["--secs", str(a.secs), "--warmup", str(a.warmup)]
    if role != "both":
        window += ["--role", role]
    if address:
        window += ["--address", address]
    s = j.system
    if s.language == "rust":
        rust = [x.replace("{t}", j.transport) for x in s.rust]
        if j.case.pattern == PS:
            rust += ["--width", str(j.case.width)]
        return [
            str(a.bench_bin),
            "--one",
            "--bench",
            j.case.pattern,
            "--size",
            str(j.case.size),
            *rust,
            *window,
        ]
    common = ["--pattern", j.case.pattern, "--transport", j.transport, "--size", str(j.case.size)]
    common += ["--width", str(j.case.width), *window]
    if s.variant:
        common += ["--variant", s.variant]
    if s.language == "python":
        return [sys.executable, str(SUITE / s.program), *common]
    if s.language == "kotlin":
        return [*kotlin_java(), s.program, *common]
    if s.language == "swift":
        return [str(ROOT / s.program), *common]
    return ["node", str(SUITE / s.program), *common]


KOTLIN_BUILD = "kotlin-bench-build"  # under the target dir: classes/ and worker.classpath


def kotlin_java() -> list[str]:
    """The JVM that runs the Kotlin worker: the classes setup.sh compiled from bench/suite/kotlin
    (the worker with the binding's sources), the jars Maven listed, and the release
    libweida_uniffi.so through JNA. `java` itself, no script between, so /proc/<pid>/stat is the
    JVM's and run.py's SIGTERM reaches it."""
    build = target_dir() / KOTLIN_BUILD
    try:
        jars = (build / "worker.classpath").read_text().strip()
    except OSError:
        jars = f"<{build / 'worker.classpath'}: run bench/suite/setup.sh>"
    lib = target_dir() / "release"
    return ["java", f"-Djna.library.path={lib}", "-cp", f"{build / 'classes'}:{jars}"]


def kotlin_missing() -> str | None:
    """What the Kotlin rows lack, if setup.sh has not built them."""
    for need in (
        target_dir() / KOTLIN_BUILD / "worker.classpath",
        target_dir() / "release" / "libweida_uniffi.so",
    ):
        if not need.exists():
            return str(need)
    return None


# The Swift worker's build, under the target dir: kotlin-swift/swift/run.sh --bench makes it in
# the chroot, and the launcher (SWIFT_LAUNCHER in systems.py) execs the chroot's dynamic loader
# on it, so the process run.py starts is the worker (/proc/<pid>/stat, SIGTERM).
SWIFT_WORKER = "swift-root/build/release/WeidaBenchWorker"
SWIFT_LOADER = "swift-root/lib64/ld-linux-x86-64.so.2"


def swift_missing() -> str | None:
    """What the Swift rows lack, if setup.sh has not built them."""
    for need in (
        target_dir() / SWIFT_LOADER,
        target_dir() / SWIFT_WORKER,
        target_dir() / "release" / "libweida_uniffi.so",
    ):
        if not need.exists():
            return str(need)
    return None


def swift_version() -> str:
    """The chroot's swiftlang package, from its dpkg database (nothing is run in the chroot)."""
    admin = target_dir() / "swift-root" / "var" / "lib" / "dpkg"
    if not admin.is_dir():
        return "not installed"
    v = sh(["dpkg-query", f"--admindir={admin}", "-W", "-f", "${Version}", "swiftlang"])
    return f"swiftlang {v} (trixie chroot)" if v and v != "unknown" else "unknown"


def measure(j: Job, a: argparse.Namespace) -> dict[str, Any]:
    """Runs one worker; its JSON line, or an error."""
    cmd = argv(j, a)
    limit = a.warmup + 4 * a.secs + 40
    began = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="weida-row-")
    env = {**os.environ, "TMPDIR": tmp}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, cwd=SUITE, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"worker killed after {limit:.0f} s", "cmd": shlex.join(cmd)}
    except OSError as e:
        return {"error": f"cannot start the worker: {e}", "cmd": shlex.join(cmd)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.perf_counter() - began
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return {
            "error": f"exit {p.returncode}, no result: {' | '.join(tail)}",
            "cmd": shlex.join(cmd),
        }
    r: dict[str, Any] = json.loads(lines[-1])
    if p.returncode != 0 and "error" not in r:
        r["error"] = f"exit {p.returncode}"
    if "error" in r:
        r["stderr_tail"] = p.stderr.strip().splitlines()[-5:]
    r["wall_s"] = wall
    r["cmd"] = shlex.join(cmd)
    return r


def figure(r: dict[str, Any], pattern: str) -> str:
    if "error" in r:
        return f"FAILED {r['error']}"
    if pattern == RR:
        return f"p50 {r['p50_us']:.1f} µs p99 {r['p99_us']:.1f} µs" + cpu_figure(r)
    key = "copies_per_s" if pattern == PS else "msgs_per_s"
    return f"{si(r[key])} {'copies' if pattern == PS else 'msgs'}/s" + cpu_figure(r)


def cpu_figure(r: dict[str, Any]) -> str:
    if "cpu_us_bind" not in r:
        return ""
    return f" (CPU µs/msg bind {r['cpu_us_bind']:.2f}, dial {r['cpu_us_dial']:.2f})"


# ---------------------------------------------------------------- the machine and versions


def sh(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=30, cwd=cwd
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "kernel": f"{platform.system()} {platform.release()}",
        "cpu": cpu,
        "memory": sh(["sh", "-c", "free -h | awk '/Mem:/ {print $2}'"]),
        "loadavg_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "hostname": platform.node(),
    }


def pkg(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cargo_lock(name: str) -> str:
    try:
        text = (ROOT / "Cargo.lock").read_text()
    except OSError:
        return "unknown"
    blocks = text.split("[[package]]")
    found = [b for b in blocks if f'name = "{name}"\n' in b]
    return ", ".join(b.split('version = "')[1].split('"')[0] for b in found) or "unknown"


def pom_version(prop: str) -> str:
    try:
        text = (SUITE / "kotlin" / "pom.xml").read_text()
    except OSError:
        return "unknown"
    return text.partition(f"<{prop}>")[2].partition("<")[0] or "unknown"


def versions() -> dict[str, str]:
    py = sys.executable
    node_dir = SUITE / "node"
    zjs = sh(
        ["node", "-e", "const z=require('zeromq/package.json');console.log(z.version)"], node_dir
    )
    libzmq_js = sh(
        [
            "node",
            "--input-type=module",
            "-e",
            "import * as z from 'zeromq'; console.log(z.version)",
        ],
        node_dir,
    )
    return {
        "weida": cargo_lock("weida"),
        "git commit": sh(["git", "-C", str(ROOT), "describe", "--always", "--dirty"]),
        "rustc": sh(["rustc", "--version"]),
        "quinn": cargo_lock("quinn"),
        "quinn-proto": cargo_lock("quinn-proto"),
        "rustls": cargo_lock("rustls"),
        "tokio": cargo_lock("tokio"),
        "python": platform.python_version(),
        "weida (Python wheel)": pkg("weida"),
        "pyzmq": pkg("pyzmq"),
        "libzmq (pyzmq)": sh([py, "-c", "import zmq; print(zmq.zmq_version())"]),
        "pynng": pkg("pynng"),
        "eclipse-zenoh": pkg("eclipse-zenoh"),
        "matplotlib": pkg("matplotlib"),
        "node": sh(["node", "--version"]),
        "java": sh(["sh", "-c", "java -version 2>&1 | head -1"]),
        "kotlin (the worker's pom)": pom_version("kotlin.version"),
        "swift": swift_version(),
        "uniffi": cargo_lock("uniffi"),
        "zeromq.js": zjs,
        "libzmq (zeromq.js)": libzmq_js,
        "openssl (zenoh's quic certificate)": sh(["openssl", "version"]),
    }


# ---------------------------------------------------------------- summaries


def si(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e4:
        return f"{v / 1e3:.1f}k"
    if v >= 1e3:
        return f"{v / 1e3:.2f}k"
    return f"{v:.0f}"


def fixed(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def ratio(v: float) -> str:
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3f}" if v >= 0.01 else f"{v:.4f}"


def summary(values: list[float | None]) -> Summary | None:
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return {"median": statistics.median(v), "min": v[0], "max": v[-1], "n": len(v)}


def paired(a: list[float | None], b: list[float | None]) -> list[float | None]:
    return [x / y if x is not None and y else None for x, y in zip(a, b, strict=True)]


Series = dict[tuple[Case, str, str], list[float | None]]  # (case, system, transport) -> per rep


def series(records: list[dict[str, Any]], reps: int, metric: str) -> Series:
    out: Series = {}
    for r in records:
        k = (r["_case"], r["_system"], r["_transport"])
        out.setdefault(k, [None] * reps)
        if "error" not in r and metric in r:
            out[k][r["_rep"]] = float(r[metric])
    return out


def metric_of(pattern: str) -> str:
    return {PP: "msgs_per_s", PS: "copies_per_s", RR: "p50_us"}[pattern]


CPU_METRICS = ("cpu_us_bind", "cpu_us_dial", "cores_bind", "cores_dial")


def rows(records: list[dict[str, Any]], jobs: list[Job], reps: int) -> list[Row]:
    main = {p: series(records, reps, metric_of(p)) for p in (PP, RR, PS)}
    p99 = series(records, reps, "p99_us")
    cpus = {m: series(records, reps, m) for m in CPU_METRICS}
    out = []
    seen = set()
    for j in jobs:
        key = (j.case, j.system.key, j.transport)
        if key in seen:
            continue
        seen.add(key)
        mine = main[j.case.pattern].setdefault(key, [None] * reps)
        fam = FAMILY[j.transport]

        def against(other: tuple[str, str], weida_first: bool, j: Job = j) -> Summary | None:
            """Per-rep ratios of this row and `other` (system, transport) in the same case."""
            them = main[j.case.pattern].get((j.case, *other))
            if them is None or other[0] == j.system.key:
                return None
            mine = main[j.case.pattern][(j.case, j.system.key, j.transport)]
            return summary(paired(them, mine) if weida_first else paired(mine, them))

        weida = (WEIDA_OF[j.system.language], WEIDA_TRANSPORT[fam])
        vs_weida = against(weida, True) if j.system.kind == "other" else None
        vs_ceiling = against((CEILING[fam], CEILING_TRANSPORT[fam]), False)
        on_quic = fam == "QUIC" and j.system.kind != "substrate"
        vs_stream = against(("quinn-stream", "quic"), False) if on_quic else None
        errors = [
            str(r["error"])
            for r in records
            if (r["_case"], r["_system"], r["_transport"]) == key and "error" in r
        ]
        cpu = {m: summary(cpus[m].get(key, [None] * reps)) for m in CPU_METRICS}
        out.append(
            Row(
                j.case,
                j.system,
                j.transport,
                summary(mine),
                summary(p99.get(key, [None] * reps)) if j.case.pattern == RR else None,
                vs_weida,
                vs_ceiling,
                vs_stream,
                errors,
                cpu,
            )
        )
    order = {k: i for i, k in enumerate(s.key for s in SYSTEMS)}
    out.sort(key=lambda r: (FAMILIES.index(FAMILY[r.transport]), order[r.system.key], r.transport))
    return out


# ---------------------------------------------------------------- the report


def cell(s: Summary | None, f: Callable[[float], str]) -> tuple[str, str]:
    if s is None:
        return "failed", ""
    return f(s["median"]), f"{f(s['min'])}–{f(s['max'])}"


def rcell(s: Summary | None) -> str:
    if s is None:
        return ""
    return f"{ratio(s['median'])} [{ratio(s['min'])}–{ratio(s['max'])}]"


def label(r: Row) -> str:
    return f"{r.system.key}" if r.system.kind != "weida" else f"**{r.system.key}**"


LEGEND = """\
Two tables. **Two processes** (the headline): the two ends of a case in separate processes on
loopback, as services run (sender and receiver, requester and replier, a publisher and one
process per subscriber; copies/s is the sum over the subscriber processes); in-process
transports have no such row. **One process** (secondary): one worker process with both ends of
the case in it. A cell is the median over the repetitions, with the min–max range beside it.
Ratios are taken only within a table. Ratios are computed per
repetition from measurements taken in the same repetition, then summarized the same way.

- **weida ÷ this**: weida's row of the same language and case on the matching transport (QUIC
  for QUIC and TCP rows, AF_UNIX for ipc/unix rows, in process for in-process rows) divided by
  this row. For msgs/s and copies/s **below 1 means weida is slower**; for latency **above 1
  means weida is slower**.
- **÷ ceiling**: this row divided by the bare substrate of its transport family: raw quinn with
  one long framed stream (QUIC), a framed tokio TcpStream (TCP), a framed tokio UnixStream
  (AF_UNIX), a tokio mpsc (in process). **÷ quinn stream/msg**: a QUIC row divided by raw quinn
  with a stream per message, weida's own design on bare quinn.
- **CPU** (two processes): the CPU time (user + system, every thread) each side's processes
  spent between the measuring side's window opening and closing, read from /proc/<pid>/stat
  (10 ms ticks), divided by the messages (round trips, copies) of that span: µs of CPU per
  message; **cores** is that CPU time over the span (1.00 = one core busy all the time, a
  busy-spinning side shows here).
- Bold rows are weida. The workers, what each system's pattern maps to, and how to reproduce:
  bench/README.md; what the numbers mean: docs/PERFORMANCE.md."""


TABLES = {
    2: "Two processes (the headline)",
    1: "One process, both ends in it (secondary)",
}
# Which side each CPU column is, by pattern: (first, second) of "first / second".
SIDES = {
    PP: (("dial", "bind"), "sender / receiver", "µs/msg"),
    RR: (("dial", "bind"), "requester / replier", "µs/round trip"),
    PS: (("bind", "dial"), "publisher / subscribers", "µs/copy"),
}


def cpu_cells(r: Row) -> str:
    (first, second), _, _ = SIDES[r.case.pattern]

    def one(m: str, f: Callable[[float], str]) -> str:
        s = r.cpu.get(m)
        return f(s["median"]) if s else "?"

    us = f"{one('cpu_us_' + first, fixed)} / {one('cpu_us_' + second, fixed)}"
    cores = f"{one('cores_' + first, ratio)} / {one('cores_' + second, ratio)}"
    return f" {us} | {cores} |"


def cpu_header(pattern: str) -> tuple[str, str]:
    _, who, unit = SIDES[pattern]
    return f" CPU {unit}, {who} | cores, {who} |", "---:|---:|"


def markdown(meta: dict[str, Any], tables: list[tuple[int, list[Row]]], jobs: list[Job]) -> str:
    out = [f"# weida benchmark suite, {meta['date']}", ""]
    if meta["settings"]["smoke"]:
        out += ["**A smoke run: it proves the harness works. These are not numbers to quote.**", ""]
    m, v, st = meta["machine"], meta["versions"], meta["settings"]
    out += [
        f"- command: `{meta['command']}`",
        f"- machine: {m['nproc']} cores, {m['kernel']}, {m['cpu']}, {m['memory']} memory; "
        f"load average at start {m['loadavg_at_start']}, at end {meta['loadavg_at_end']}",
        f"- settings: {st['reps']} repetition(s), {st['secs']} s measured after {st['warmup']} s "
        f"warmup per measurement; {meta['measurements']} worker runs in "
        f"{meta['elapsed_s'] / 60:.1f} min",
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        "",
        *LEGEND.splitlines(),
        "",
    ]
    for procs, table in tables:
        out += ["", f"## {TABLES[procs]}", ""]
        out += detail(table, procs)
    failed = [(procs, r) for procs, table in tables for r in table if r.errors]
    if failed:
        out += ["", "## Failures", ""]
        for procs, r in failed:
            errors = "; ".join(sorted(set(r.errors)))
            where = "two processes" if procs == 2 else "one process"
            out.append(f"- {where}: {r.case.name()} {r.system.key} {r.transport}: {errors}")
    out += ["", "## Systems", "", "| system | language | what the row runs |", "|---|---|---|"]
    used = {j.system.key for j in jobs}
    out += [f"| {s.key} | {s.language} | {WHAT[s.key]} |" for s in SYSTEMS if s.key in used]
    no = [f"{k} ({why})" for k, why in NO_TWO_PROCESS.items() if k in used]
    if no and any(j.procs == 2 for j in jobs):
        out += ["", "Without a two-process row: " + "; ".join(no) + "; every in-process row."]
    out += ["", "Plots: " + ", ".join(f"[{p}]({p})" for p in meta.get("plots", [])), ""]
    return "\n".join(out)


def detail(table: list[Row], procs: int) -> list[str]:
    out = ["### Overview (medians)", ""]
    out += overview(table)
    for pattern, title in (
        (PP, "Push/Pull throughput"),
        (RR, "Req/Rep latency"),
        (PS, "Pub/Sub fan-out"),
    ):
        case_list = sorted(
            {r.case for r in table if r.case.pattern == pattern}, key=lambda c: (c.size, c.width)
        )
        for c in case_list:
            out += ["", f"### {title}: {c.name()}" + (" (two processes)" if procs == 2 else ""), ""]
            if pattern == PS:
                out += [
                    f"{c.width} subscriber(s), each subscribed to everything; copies/s is the "
                    "messages received per second summed over the subscribers.",
                    "",
                ]
            sel = [r for r in table if r.case == c]
            ch, cs = cpu_header(pattern) if procs == 2 else ("", "")
            if pattern == RR:
                out += [
                    "| system | lang | transport | p50 µs | p50 range | p99 µs | p99 range "
                    "| weida ÷ this (p50) | ÷ ceiling (p50) | ÷ quinn stream/msg (p50) |" + ch,
                    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|" + cs,
                ]
                for r in sel:
                    a, ar = cell(r.value, fixed)
                    b, br = cell(r.p99, fixed)
                    out.append(
                        f"| {label(r)} | {r.system.language} | {r.transport} "
                        f"| {a} | {ar} | {b} | {br} | "
                        f"{rcell(r.vs_weida)} | {rcell(r.vs_ceiling)} | {rcell(r.vs_stream)} |"
                        + (cpu_cells(r) if procs == 2 else "")
                    )
            elif pattern == PS:
                out += [
                    "| system | lang | transport | copies/s | range | MB/s | per subscriber "
                    "| weida ÷ this |" + ch,
                    "|---|---|---|---:|---:|---:|---:|---:|" + cs,
                ]
                for r in sel:
                    a, ar = cell(r.value, si)
                    mb = fixed(r.value["median"] * c.size / 1e6) if r.value else ""
                    each = si(r.value["median"] / c.width) if r.value else ""
                    out.append(
                        f"| {label(r)} | {r.system.language} | {r.transport} "
                        f"| {a} | {ar} | {mb} | {each} | {rcell(r.vs_weida)} |"
                        + (cpu_cells(r) if procs == 2 else "")
                    )
            else:
                out += [
                    "| system | lang | transport | msgs/s | range | MB/s | weida ÷ this "
                    "| ÷ ceiling | ÷ quinn stream/msg |" + ch,
                    "|---|---|---|---:|---:|---:|---:|---:|---:|" + cs,
                ]
                for r in sel:
                    a, ar = cell(r.value, si)
                    mb = fixed(r.value["median"] * c.size / 1e6) if r.value else ""
                    out.append(
                        f"| {label(r)} | {r.system.language} | {r.transport} "
                        f"| {a} | {ar} | {mb} | "
                        f"{rcell(r.vs_weida)} | {rcell(r.vs_ceiling)} | {rcell(r.vs_stream)} |"
                        + (cpu_cells(r) if procs == 2 else "")
                    )
    return out


def overview(table: list[Row]) -> list[str]:
    cols: list[tuple[Case, str]] = [(Case(PP, s), f"P/P {size_name(s)} msgs/s") for s in SIZES]
    cols += [
        (Case(PP, 1 << 20), "P/P 1 MiB MB/s"),
        (Case(RR, REQ_SIZE), "R/R p50 µs"),
        (Case(RR, REQ_SIZE), "R/R p99 µs"),
    ]
    cols += [
        (Case(PS, s, w), f"P/S {size_name(s)} ×{w} copies/s")
        for w, s in sorted(dict.fromkeys(PUBSUB + PUBSUB_TWO), key=lambda x: (x[1], x[0]))
    ]
    present = {r.case for r in table}
    cols = [c for c in cols if c[0] in present]
    by = {(r.case, r.system.key, r.transport): r for r in table}
    keys = []
    for r in table:
        k = (r.system.key, r.transport)
        if k not in keys:
            keys.append(k)
    keys.sort(key=lambda k: (FAMILIES.index(FAMILY[k[1]]), [s.key for s in SYSTEMS].index(k[0])))
    out = ["| system | transport | " + " | ".join(c[1] for c in cols) + " |"]
    out.append("|---|---|" + "---:|" * len(cols))
    for sk, t in keys:
        cells = []
        for c, name in cols:
            r = by.get((c, sk, t))
            if r is None:
                cells.append("not yet" if c.pattern == PS and sk in NO_PUBSUB_YET else "–")
            elif name.endswith("MB/s"):
                cells.append(fixed(r.value["median"] * c.size / 1e6) if r.value else "failed")
            elif name.endswith("p99 µs"):
                cells.append(fixed(r.p99["median"]) if r.p99 else "failed")
            elif c.pattern == RR:
                cells.append(fixed(r.value["median"]) if r.value else "failed")
            else:
                cells.append(si(r.value["median"]) if r.value else "failed")
        name = f"**{sk}**" if BY_KEY[sk].kind == "weida" else sk
        out.append(f"| {name} | {t} | " + " | ".join(cells) + " |")
    return out


# ---------------------------------------------------------------- main


def write(
    meta: dict[str, Any], records: list[dict[str, Any]], jobs: list[Job], reps: int, out: Path
) -> None:
    """results.md, results.json and the plots in `out`, from the measurements. The headline
    table's plots have the plain names; with both tables, the one-process plots are prefixed
    one_process_."""
    tables = []
    meta["plots"] = []
    for procs in (2, 1):
        mine = [j for j in jobs if j.procs == procs]
        if not mine:
            continue
        table = rows([r for r in records if r.get("_procs", 1) == procs], mine, reps)
        title = f"{meta['date']}, {meta['machine']['nproc']} cores"
        title += ", two processes" if procs == 2 else ", one process"
        title += ", smoke run" if meta["settings"]["smoke"] else ""
        prefix = "one_process_" if procs == 1 and tables else ""
        meta["plots"] += plots(table, out, title, prefix)
        tables.append((procs, table))
    md = markdown(meta, tables, jobs)
    (out / "results.md").write_text(md)
    doc = {
        **meta,
        "records": [
            {k: v for k, v in r.items() if not k.startswith("_")}
            | {
                "rep": r["_rep"],
                "row": r["_system"],
                "pattern": r["_case"].pattern,
                "size": r["_case"].size,
                "width": r["_case"].width,
                "transport": r["_transport"],
                "processes": r.get("_procs", 1),
            }
            for r in records
        ],
        "rows": [
            {
                "processes": procs,
                "pattern": r.case.pattern,
                "size": r.case.size,
                "width": r.case.width,
                "system": r.system.key,
                "language": r.system.language,
                "transport": r.transport,
                "family": FAMILY[r.transport],
                "value": r.value,
                "p99_us": r.p99,
                "weida_over_this": r.vs_weida,
                "this_over_ceiling": r.vs_ceiling,
                "this_over_quinn_stream": r.vs_stream,
                "errors": r.errors,
                "cpu": r.cpu,
            }
            for procs, table in tables
            for r in table
        ],
    }
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(md)
    print(
        f"\nwrote {out}/results.md, results.json, {', '.join(meta['plots'])} "
        f"({meta['measurements']} worker runs in {meta['elapsed_s']:.0f} s)"
    )


def rerender(path: Path) -> int:
    """--from-json: the report of a committed run again, with this file's report code."""
    doc = json.loads(path.read_text())
    meta = {k: v for k, v in doc.items() if k not in ("records", "rows", "plots")}
    records, jobs, seen = [], [], set()
    for r in doc["records"]:
        case = Case(r["pattern"], int(r["size"]), int(r.get("width", 1)))
        procs = int(r.get("processes", 1))
        key = (case, r["row"], r["transport"], procs)
        r = {**r, "_case": case, "_system": r["row"], "_transport": r["transport"]}
        r["_rep"], r["_procs"] = r["rep"], procs
        records.append(r)
        if key not in seen:
            seen.add(key)
            jobs.append(Job(case, BY_KEY[r["row"]], r["transport"], procs))
    write(meta, records, jobs, int(meta["settings"]["reps"]), path.parent)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--smoke", action="store_true", help="tiny windows, 1 rep, a few cases (CI; < 2 min)"
    )
    ap.add_argument("--reps", type=int, help="repetitions (default 3; smoke 1)")
    ap.add_argument(
        "--secs", type=float, help="measured window per measurement, s (default 1; smoke 0.1)"
    )
    ap.add_argument(
        "--warmup", type=float, help="warmup per measurement, s (default 0.3; smoke 0.05)"
    )
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="SYSTEM[/PATTERN]",
        help="only these rows, e.g. pyzmq, zenoh/pub_sub, '*/req_rep' (repeatable)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        help="output directory (default bench/results/<date>; smoke: under the target dir)",
    )
    ap.add_argument(
        "--size",
        type=int,
        action="append",
        default=[],
        metavar="BYTES",
        help="only Push/Pull and Pub/Sub cases of this body size (repeatable; Req/Rep is 64 B)",
    )
    ap.add_argument(
        "--processes",
        type=int,
        choices=(1, 2),
        help="only the two-process table (2) or the one-process table (1); default both",
    )
    ap.add_argument("--bench-bin", type=Path, default=target_dir() / "release" / "weida-bench")
    ap.add_argument(
        "--list", action="store_true", help="print the planned worker commands and exit"
    )
    ap.add_argument(
        "--from-json",
        type=Path,
        metavar="RESULTS_JSON",
        help="measure nothing: write results.md and the plots again from a results.json",
    )
    a = ap.parse_args()
    if a.from_json:
        return rerender(a.from_json)
    a.reps = a.reps or (1 if a.smoke else 3)
    a.secs = a.secs or (0.1 if a.smoke else 1.0)
    a.warmup = a.warmup if a.warmup is not None else (0.05 if a.smoke else 0.3)
    for o in a.only:
        if o.partition("/")[0] not in ("*", *BY_KEY):
            ap.error(f"--only: no system {o.partition('/')[0]!r}; systems: {', '.join(BY_KEY)}")
    jobs = plan(a)
    if a.list:
        for j in jobs:
            if j.procs == 2:
                n = j.case.width if j.case.pattern == PS else 1
                dial = shlex.join(argv(j, a, "dial", "ADDRESS"))
                print(f"{shlex.join(argv(j, a, 'bind'))} & {n} × {dial}")
            else:
                print(shlex.join(argv(j, a)))
        return 0
    if not jobs:
        ap.error("--only selected nothing")
    missing = kotlin_missing() if any(j.system.language == "kotlin" for j in jobs) else None
    if missing:
        ap.error(f"the Kotlin rows need {missing}: run bench/suite/setup.sh (java 17+ and mvn)")
    missing = swift_missing() if any(j.system.language == "swift" for j in jobs) else None
    if missing:
        ap.error(
            f"the Swift rows need {missing}: run bench/suite/setup.sh as root, after ./dev swift "
            "(or kotlin-swift/swift/run.sh --setup) made the chroot"
        )
    today = datetime.date.today().isoformat()
    out = a.out or (
        target_dir() / "bench-suite-smoke" if a.smoke else ROOT / "bench" / "results" / today
    )
    out.mkdir(parents=True, exist_ok=True)
    command = (
        "./dev bench-suite " + shlex.join(sys.argv[1:])
        if os.environ.get("WEIDA_DEV")
        else shlex.join([sys.executable, *sys.argv])
    )
    meta: dict[str, Any] = {
        "date": today,
        "command": command.strip(),
        "machine": machine(),
        "versions": versions(),
        "settings": {
            "smoke": a.smoke,
            "reps": a.reps,
            "secs": a.secs,
            "warmup": a.warmup,
            "only": a.only,
            "size": a.size,
            "processes": a.processes or "both",
        },
    }
    print(f"# weida benchmark suite, {today}")
    print(f"command: {meta['command']}")
    print("machine: " + json.dumps(meta["machine"]))
    print("versions: " + json.dumps(meta["versions"]))
    total = len(jobs) * a.reps
    print(
        f"{len(jobs)} measurements × {a.reps} rep(s) = {total} worker runs, "
        f"{a.secs} s + {a.warmup} s warmup each",
        flush=True,
    )
    records: list[dict[str, Any]] = []
    began = time.perf_counter()
    for rep in range(a.reps):
        for j in jobs:
            r = measure_two(j, a, argv) if j.procs == 2 else measure(j, a)
            r.update(_case=j.case, _system=j.system.key, _transport=j.transport, _rep=rep)
            r["_procs"] = j.procs
            records.append(r)
            where = "2p" if j.procs == 2 else "1p"
            print(
                f"[{len(records):>4}/{total} {time.perf_counter() - began:6.0f}s] rep {rep + 1} "
                f"{where} {j.case.name():<20} {j.system.key} {j.transport}: "
                f"{figure(r, j.case.pattern)}",
                file=sys.stderr,
                flush=True,
            )
    meta["elapsed_s"] = time.perf_counter() - began
    meta["loadavg_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    meta["measurements"] = len(records)
    write(meta, records, jobs, a.reps, out)
    failures = [r for r in records if "error" in r]
    if failures:
        print(
            f"bench-suite: {len(failures)} of {len(records)} worker runs failed (see Failures)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
