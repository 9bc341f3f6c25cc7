"""What the isolation scripts share: where the built binaries are, a child process spoken to a
line at a time, and its resident set read from /proc once it has settled."""

from __future__ import annotations

import os
import resource
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
# The CLI (cargo build --release -p weida-cli) and the venv with the binding (./dev python).
WEIDA_BIN = os.path.join(TARGET, "release", "weida")
PYTHON = os.path.join(TARGET, "py-venv", "bin", "python")


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def steady(pid: int) -> int:
    """The resident set once five samples 100 ms apart agree within 1 %: a measurement's
    settling rule, not synchronisation of anything a test asserts."""
    last: list[int] = []
    while True:
        last = [*last, rss_kib(pid)][-5:]
        if len(last) == 5 and max(last) - min(last) <= max(last) // 100:
            return max(last)
        time.sleep(0.1)


def say(p: subprocess.Popen[str], line: str) -> str:
    """Writes `line` to the child and returns the line it answers with."""
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(line + "\n")
    p.stdin.flush()
    return p.stdout.readline().strip()


def child(script: str, *args: str) -> subprocess.Popen[str]:
    """`script` run by the venv's Python, spoken to on its stdin and stdout."""
    return subprocess.Popen(
        [PYTHON, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def raise_fd_limit(want: int) -> None:
    """Raises this process's descriptor limit (which its children inherit) toward `want`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
