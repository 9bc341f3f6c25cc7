"""The agent registry (conformance/agents.json) and one running agent process speaking the
control protocol of conformance/README.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

PROTOCOL = 1


class AgentError(Exception):
    """The agent broke the protocol, died, or did not answer in time."""


@dataclass
class AgentSpec:
    name: str
    language: str
    command: list[str]
    requires: list[str]
    required: bool
    note: str
    env: dict[str, str] = field(default_factory=dict)
    # What the agent may answer AGENT_UNSUPPORTED for (an op, or `op:mode`), each with the
    # reason its cells are skipped: a missing export of its binding, named.
    unsupported: dict[str, str] = field(default_factory=dict)
    # None: the agent plays every role against every agent, on every transport. Else it shares
    # a cell only with the agents named, each on its transports ("*": all), and has a cell to
    # itself (every role its own) only where it names itself (the matrix shape, README.md).
    pairs_with: dict[str, str | list[str]] | None = None

    def unavailable(self, root: str) -> str | None:
        """Why this agent cannot run here, or None when it can."""
        for path in self.requires:
            if not os.path.exists(os.path.join(root, path)):
                why = f"{self.name} agent not available: {path} does not exist"
                return f"{why} ({self.note})" if self.note else why
        exe = self.command[0]
        if os.sep in exe:
            if not os.path.exists(os.path.join(root, exe)):
                why = f"{self.name} agent not available: {exe} does not exist"
                return f"{why} ({self.note})" if self.note else why
        elif shutil.which(exe) is None:
            return f"{self.name} agent not available: {exe} is not on PATH"
        return None


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(s: str) -> str:
    """`${VAR}` and `${VAR:-default}` from the environment, so a registry line can follow
    CARGO_TARGET_DIR."""
    return _VAR.sub(lambda m: os.environ.get(m.group(1)) or (m.group(2) or ""), s)


def load_registry(path: str) -> list[AgentSpec]:
    with open(path) as f:
        data = json.load(f)
    specs = []
    for a in data["agents"]:
        specs.append(AgentSpec(
            name=a["name"],
            language=a.get("language", a["name"]),
            command=[expand_env(c) for c in a["command"]],
            requires=[expand_env(r) for r in a.get("requires", [])],
            required=bool(a.get("required", False)),
            note=a.get("note", ""),
            env={k: expand_env(v) for k, v in a.get("env", {}).items()},
            unsupported=dict(a.get("unsupported", {})),
            pairs_with=a.get("pairs_with"),
        ))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: agent names repeat: {names}")
    for s in specs:
        if not all(isinstance(r, str) and r for r in s.unsupported.values()):
            raise ValueError(f"{path}: {s.name}: every unsupported op needs its reason")
        for partner, transports in (s.pairs_with or {}).items():
            if partner not in names:
                raise ValueError(f"{path}: {s.name} pairs with {partner!r}, which is not in the registry")
            if transports != "*" and not (isinstance(transports, list) and transports):
                raise ValueError(f"{path}: {s.name} pairs with {partner!r} on \"*\" or a list of transports")
    return specs


def allowed(combo: tuple[str, ...], transport: str, specs: dict[str, AgentSpec]) -> bool:
    """Whether a combination of agents (one per role) on `transport` is a cell of the matrix:
    an agent with `pairs_with` shares it only with the agents it names, on their transports,
    and has it to itself only where it names itself."""
    for name in set(combo):
        pairs = specs[name].pairs_with
        if pairs is None:
            continue
        partners = {o for o in combo if o != name} or {name}
        for o in partners:
            transports = pairs.get(o)
            if transports is None or (transports != "*" and transport not in transports):
                return False
    return True


class AgentProcess:
    """One agent process: requests out on stdin, responses and events in from stdout, read by a
    thread so that a pending request never blocks reading the next line."""

    def __init__(self, spec: AgentSpec, root: str, log_path: str, label: str):
        self.spec = spec
        self.label = label
        self.log_path = log_path
        self._log = open(log_path, "ab")
        env = dict(os.environ)
        env.update(spec.env)
        cmd = list(spec.command)
        if os.sep in cmd[0] and not os.path.isabs(cmd[0]):
            cmd[0] = os.path.join(root, cmd[0])
        self.proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, bufsize=0)
        self.pid = self.proc.pid
        self._cond = threading.Condition()
        self._responses: dict[int, dict] = {}
        self.events: list[dict] = []
        self.problems: list[str] = []
        self.exited = False
        self.killed = False
        self._next_id = 1
        self._reader = threading.Thread(target=self._read, name=f"agent-{label}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            with self._cond:
                try:
                    msg = json.loads(line)
                    if not isinstance(msg, dict):
                        raise ValueError("not an object")
                except ValueError as e:
                    self.problems.append(f"a line that is not a JSON object ({e}): {line[:200]}")
                    self._cond.notify_all()
                    continue
                if "event" in msg:
                    if not isinstance(msg.get("handle"), str):
                        self.problems.append(f"an event without a handle: {line[:200]}")
                    self.events.append(msg)
                elif "id" in msg and "ok" in msg:
                    i = msg["id"]
                    if i in self._responses or not isinstance(i, int) or i >= self._next_id:
                        self.problems.append(f"a response to no pending request: {line[:200]}")
                    else:
                        self._responses[i] = msg
                else:
                    self.problems.append(f"a line that is neither a response nor an event: {line[:200]}")
                self._cond.notify_all()
        with self._cond:
            self.exited = True
            self._cond.notify_all()

    def send(self, op: str, args: dict) -> int:
        with self._cond:
            i = self._next_id
            self._next_id += 1
        line = json.dumps({"id": i, "op": op, "args": args}) + "\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise AgentError(f"{self.label}: cannot write to the agent ({e}){self._exit_note()}")
        return i

    def _exit_note(self) -> str:
        rc = self.proc.poll()
        return "" if rc is None else f"; it exited with status {rc}"

    def _wait(self, ready: Callable[[], Any], deadline: float, what: str) -> Any:
        with self._cond:
            while True:
                if self.problems:
                    raise AgentError(f"{self.label}: protocol violation: {self.problems[0]}")
                r = ready()
                if r is not None:
                    return r
                if self.exited:
                    self.proc.wait()
                    raise AgentError(f"{self.label}: the agent exited (status {self.proc.returncode}) while {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentError(f"{self.label}: timed out while {what}")
                self._cond.wait(left)

    def response(self, i: int, deadline: float, what: str) -> dict:
        return self._wait(lambda: self._responses.pop(i, None), deadline, what)

    def call(self, op: str, args: dict, timeout: float) -> dict:
        i = self.send(op, args)
        return self.response(i, time.monotonic() + timeout, f"waiting for the response to {op}")

    def wait_events(self, pred: Callable[[dict], bool], count: int, deadline: float, what: str) -> dict:
        def ready() -> dict | None:
            seen = [e for e in self.events if pred(e)]
            return seen[count - 1] if len(seen) >= count else None
        return self._wait(ready, deadline, what)

    def count_events(self, pred: Callable[[dict], bool]) -> int:
        with self._cond:
            if self.problems:
                raise AgentError(f"{self.label}: protocol violation: {self.problems[0]}")
            return sum(1 for e in self.events if pred(e))

    def hello(self, timeout: float) -> dict:
        r = self.call("hello", {}, timeout)
        if not r.get("ok"):
            raise AgentError(f"{self.label}: hello failed: {r.get('error')}")
        res = r.get("result") or {}
        if res.get("protocol") != PROTOCOL:
            raise AgentError(f"{self.label}: speaks protocol {res.get('protocol')!r}, the runner {PROTOCOL}")
        return res

    def kill(self) -> None:
        self.killed = True
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._reader.join(timeout=5)

    def close(self, grace: float = 15.0) -> int | None:
        """Closes stdin (the agent's cue to exit) and waits; kills it after `grace` seconds.

        Generous: the Node agent exits when its event loop empties (the package's lifetime rule,
        kept under test), which on a loaded machine can take seconds; a clean exit costs none."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        self._log.close()
        return self.proc.returncode

    def stderr_tail(self, lines: int = 15) -> str:
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])
