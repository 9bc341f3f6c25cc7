#!/usr/bin/env python3
"""A broken agent made from a good one, for the runner's self-test: it runs the agent given on
its command line and forwards every request to it, except those whose op is named in the
environment variable SKIP_OPS (comma-separated). Those it acknowledges itself with a plausible
made-up result (lying_agent.py's) without the agent ever seeing them: an agent that ignores one
kind of step. The runner must fail it (conformance/runner/test_runner.py).

    SKIP_OPS=send skipping_proxy.py target/release/weida-conformance-agent
"""

import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lying_agent import made_up  # noqa: E402

SKIP = {s for s in os.environ.get("SKIP_OPS", "").split(",") if s}

out_lock = threading.Lock()


def emit(line: str) -> None:
    with out_lock:
        sys.stdout.write(line if line.endswith("\n") else line + "\n")
        sys.stdout.flush()


def die_with_the_proxy() -> None:
    # A kill step kills the proxy with SIGKILL: the agent must die with it (Linux prctl
    # PR_SET_PDEATHSIG), not shut down cleanly when its input closes, or the kill is no kill.
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, 9)


agent = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                         preexec_fn=die_with_the_proxy)


def relay() -> None:
    assert agent.stdout is not None
    for line in agent.stdout:
        emit(line)


threading.Thread(target=relay, daemon=True).start()
assert agent.stdin is not None
for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    if req.get("op") in SKIP:
        emit(json.dumps({"id": req["id"], "ok": True, "result": made_up(req["op"], req.get("args") or {})}))
        continue
    agent.stdin.write(line if line.endswith("\n") else line + "\n")
    agent.stdin.flush()
agent.stdin.close()
sys.exit(agent.wait())
