"""One cell of the matrix: a scenario, a language per role, a transport. The cell runs its
scenario's steps in order, each bounded by a timeout, and fails at the first step whose outcome
is not the expected one."""

from __future__ import annotations

import json
import os
import re
import socket
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agents import AgentError, AgentProcess, AgentSpec
from scenarios import (
    HANDLE_ARGS, MissingVariable, Scenario, expect_errors, match, substitute,
)

# What a successful result must carry, per op: an agent that acknowledges an op without doing
# it cannot make these up (the bodies are checked by size and SHA-256 by the steps themselves).
RESULT_FIELDS = {
    "runtime": ("fingerprint",),
    "bind": ("address",),
    "replier": ("address",),
    "respondent": ("address",),
    "bus": ("address",),
    "bound_subscriber": ("address",),
    "bound_pusher": ("address",),
    "acceptor": ("address",),
    "puller": ("address",),
    "service_queue": ("address",),
    "service_counters": ("handled", "retried", "dead_lettered", "dropped", "failed"),
    "connect": ("peer_count",),
    "disconnect": ("removed",),
    "peer_count": ("peer_count",),
    "request": ("body", "metadata", "path", "peer"),
    "survey": ("respondents", "answered", "errors", "late"),
    "reply_body": ("body", "metadata", "path", "peer"),
    "recv": ("body", "metadata", "path", "peer"),
    "drain": ("delivered", "outstanding"),
    "write": ("written",),
    "counters": ("streams_opened", "streams_accepted", "streams_refused", "bytes_sent",
                 "bytes_received", "connections_dialled", "connections_accepted",
                 "receipts_delivered", "receipts_failed", "copies_published", "lane_messages_sent",
                 "lane_messages_received", "lane_messages_lost"),
}
# Ops that create a handle named by args.name: their result is kept under that name.
CREATES = ("runtime", "bind", "replier", "respondent", "acceptor", "puller", "requester", "surveyor",
           "pusher", "peer", "publisher", "subscriber", "bus", "dialing_publisher",
           "bound_subscriber", "pair", "bound_pusher", "dialing_puller", "service_queue")
_SHA = re.compile(r"^[0-9a-f]{64}$")


class StepFailure(Exception):
    pass


class CellSkipped(Exception):
    """An agent answered AGENT_UNSUPPORTED for an op its registry entry lists as unsupported:
    the cell cannot be run with it, and is skipped with the registry's reason."""


@dataclass
class Cell:
    scenario: Scenario
    agents: tuple[str, ...]  # the agent of each role, in the scenario's role order
    transport: str
    index: int
    status: str = ""  # pass, fail, skip, xfail, xpass
    reason: str = ""
    known: str | None = None  # a known failure's stated reason
    duration: float = 0.0
    logs: list[str] = field(default_factory=list)

    @property
    def combo(self) -> str:
        return ">".join(self.agents)

    @property
    def id(self) -> str:
        return f"{self.scenario.name} [{self.combo} @ {self.transport}]"


_handed_out: set[int] = set()
_handed_out_lock = threading.Lock()


def free_udp_port() -> int:
    """A UDP port free now on the loopback (the kernel's pick, released at once), never one
    this run handed out before: cells may run at once (`--jobs`), and a kept port is bound
    again later by the role that restarts."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        with _handed_out_lock:
            if port not in _handed_out:
                _handed_out.add(port)
                return port


def bind_address(
    transport: str, slot: str, tmp: str, cell_index: int, keep: bool = False
) -> str:
    """Where `${bind.<slot>}` binds. Over QUIC any free port, or with `keep` (a scenario that
    restarts a role, which binds again at the address its peers dial) one chosen now and kept:
    the AF_UNIX path and the in-process name are kept already."""
    if transport == "quic":
        return f"weida://127.0.0.1:{free_udp_port() if keep else 0}"
    if transport == "unix":
        return f"weida+unix://{tmp}/{slot}.sock"
    if transport == "inproc":
        return f"weida+inproc://cell{cell_index}-{slot}"
    raise MissingVariable(f"${{bind.{slot}}} on a scenario that binds nothing (transport 'none')")


def describe(step: dict) -> str:
    if "op" in step:
        return (f"{step['role']} {step['op']}" + (f" x{step['repeat']}" if "repeat" in step else "")
                + (f" (async {step['async']})" if "async" in step else ""))
    if "await" in step:
        return f"await {step['await']}"
    if "wait" in step:
        w = step["wait"]
        return f"{step['role']} wait {w.get('count', 1)}x {w['event']}" + (f" on {w['handle']}" if "handle" in w else "")
    if "count" in step:
        c = step["count"]
        return f"{step['role']} count {c['event']}" + (f" on {c['handle']}" if "handle" in c else "") + f" == {step['equals']}"
    if "kill" in step:
        return f"kill {step['role']}"
    if "restart" in step:
        return f"restart {step['role']}"
    if "steps" in step:
        return f"block of {len(step['steps'])} x{step['repeat']}"
    return json.dumps(step)


def shape_errors(op: str, args: dict, result: Any) -> list[str]:
    if not isinstance(result, dict):
        return [f"the result of {op} is not an object"]
    out = [f"the result of {op} lacks {k!r}" for k in RESULT_FIELDS.get(op, ()) if k not in result]
    if op == "finish" and args.get("delivered") and result.get("delivered") is not True:
        out.append("finish with delivered: true did not report delivered: true")
    body = result.get("body")
    if "body" in RESULT_FIELDS.get(op, ()) and body is not None:
        if not (isinstance(body, dict) and isinstance(body.get("size"), int)
                and isinstance(body.get("sha256"), str) and _SHA.match(body["sha256"])):
            out.append(f"the body of {op}'s result is not a summary {{size, sha256}}: {body!r}")
    return out


def event_pred(role: str, f: dict):
    handle = f"{role}/{f['handle']}" if "handle" in f else None
    want = f.get("match", {})

    def pred(e: dict) -> bool:
        if e.get("event") != f["event"]:
            return False
        h = e.get("handle", "")
        if handle is not None and h != handle:
            return False
        if handle is None and not h.startswith(role + "/"):
            return False
        return not match(want, e)
    return pred


def run_cell(cell: Cell, specs: dict[str, AgentSpec], root: str, log_dir: str,
             step_timeout: float) -> tuple[str, str]:
    """Runs the cell; ("pass" | "fail" | "skip", why it failed or was skipped)."""
    sc = cell.scenario
    tmp = tempfile.mkdtemp(prefix="wc", dir="/tmp")  # short: a socket path has 107 bytes
    procs: dict[str, AgentProcess] = {}
    everyone: list[AgentProcess] = []
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{sc.name}-{cell.combo}-{cell.transport}")
    try:
        passed, why = _run_steps(cell, specs, root, log_dir, step_timeout, tmp, procs, everyone, safe)
        status = "pass" if passed else "fail"
    except CellSkipped as e:
        status, why = "skip", str(e)
    finally:
        problems = []
        for p in everyone:
            if p.killed:
                continue
            rc = p.close()
            if rc != 0:
                problems.append(f"{p.label} exited with status {rc} when its input closed")
            if p.problems:
                problems.append(f"{p.label}: protocol violation: {p.problems[0]}")
        shutil.rmtree(tmp, ignore_errors=True)
    if problems:
        why = "; ".join(([why] if why and status == "fail" else []) + problems)
        status = "fail"
    return status, why


def _run_steps(cell: Cell, specs: dict[str, AgentSpec], root: str, log_dir: str,
               step_timeout: float, tmp: str, procs: dict[str, AgentProcess],
               everyone: list[AgentProcess], safe: str) -> tuple[bool, str]:
    sc = cell.scenario
    try:
        slots = set(re.findall(r"\$\{bind\.([A-Za-z0-9_]+)\}", json.dumps(sc.data)))
        vars: dict[str, Any] = {
            "bind": {
                s: bind_address(
                    cell.transport, s, tmp, cell.index, cell.scenario.needs_own_processes()
                )
                for s in slots
            },
            "tmp": tmp, "uid": os.getuid(), "gid": os.getgid(), "transport": cell.transport,
        }

        def start(role: str, agent: str, generation: int) -> AgentProcess:
            log = os.path.join(log_dir, f"{safe}-{role}-{generation}.log")
            cell.logs.append(log)
            p = AgentProcess(specs[agent], root, log, f"{role} ({agent})")
            everyone.append(p)
            p.hello(step_timeout)
            return p

        if cell.transport == "inproc":
            # In-process addresses do not cross processes: every role in one agent.
            shared = start("+".join(sc.roles), cell.agents[0], 0)
            for role in sc.roles:
                procs[role] = shared
        else:
            for role, agent in zip(sc.roles, cell.agents):
                procs[role] = start(role, agent, 0)
        for role in sc.roles:
            vars[role] = {"pid": procs[role].pid}
        restarts = 0
        pending: dict[str, tuple[AgentProcess, int, str, dict]] = {}

        for n, step in enumerate(sc.steps, 1):
            if "transports" in step and cell.transport not in step["transports"]:
                continue
            inner = n
            try:
                for i in range(step.get("repeat", 1)):
                    vars["i"] = i
                    # A block's steps run in turn on each pass; an op step repeats alone.
                    for inner, part in enumerate(step.get("steps", [step]), 1):
                        if "transports" in part and cell.transport not in part["transports"]:
                            continue
                        deadline = time.monotonic() + part.get("timeout_s", step.get("timeout_s", step_timeout))
                        _step(part, n, procs, vars, pending, deadline)
                if "kill" in step:
                    procs[step["role"]].kill()
                elif "restart" in step:
                    role = step["role"]
                    procs[role].kill()
                    restarts += 1
                    procs[role] = start(role, cell.agents[sc.roles.index(role)], restarts)
                    vars[role]["pid"] = procs[role].pid
            except (AgentError, MissingVariable, StepFailure) as e:
                which = f", run {vars['i'] + 1} of {step['repeat']}" if "repeat" in step else ""
                if "steps" in step:
                    part = step["steps"][inner - 1]
                    return False, f"step {n}.{inner} ({describe(part)}{which}): {e}"
                return False, f"step {n} ({describe(step)}{which}): {e}"
        return True, ""
    except (AgentError, MissingVariable) as e:
        return False, f"setup: {e}"


def _step(step: dict, n: int, procs: dict[str, AgentProcess], vars: dict,
          pending: dict, deadline: float) -> None:
    if "op" in step:
        role, op = step["role"], step["op"]
        args = substitute(step["args"], vars)
        for k in HANDLE_ARGS:
            if isinstance(args.get(k), str):
                args[k] = f"{role}/{args[k]}"
        proc = procs[role]
        rid = proc.send(op, args)
        if "async" in step:
            pending[step["async"]] = (proc, rid, op, args, role)
            return
        resp = proc.response(rid, deadline, f"waiting for the response to {op}")
        _check(proc, op, args, resp, step.get("expect"), vars)
        label = step.get("as") or (step["args"].get("name") if op in CREATES else None)
        if label and resp.get("ok"):
            vars[role][label] = resp["result"]
    elif "await" in step:
        proc, rid, op, args, role = pending.pop(step["await"])
        resp = proc.response(rid, deadline, f"awaiting {step['await']} ({op})")
        _check(proc, op, args, resp, step.get("expect"), vars)
        if "as" in step and resp.get("ok"):
            vars[role][step["as"]] = resp["result"]
    elif "wait" in step:
        role, w = step["role"], substitute(step["wait"], vars)
        count = w.get("count", 1)
        ev = procs[role].wait_events(event_pred(role, w), count, deadline,
                                     f"waiting for {count}x {w['event']} event(s)"
                                     + (f" on {w['handle']}" if "handle" in w else ""))
        if "as" in step:
            vars[role][step["as"]] = ev
    elif "count" in step:
        role, c = step["role"], substitute(step["count"], vars)
        got = procs[role].count_events(event_pred(role, c))
        if got != step["equals"]:
            raise StepFailure(f"{got} {c['event']} event(s), expected {step['equals']}")


def _unsupported(proc: AgentProcess, op: str, resp: dict) -> None:
    """Skips the cell for an AGENT_UNSUPPORTED answer the agent's registry entry allows (its
    `unsupported` names the op, or `op:mode`, with the reason); fails it for any other."""
    error = resp.get("error") or {}
    if resp.get("ok") or error.get("code") != "AGENT_UNSUPPORTED":
        return
    what = error.get("unsupported")
    reason = proc.spec.unsupported.get(what) if isinstance(what, str) else None
    if reason is None or what.split(":")[0] != op:
        raise StepFailure(f"AGENT_UNSUPPORTED for {what!r}, which agents.json does not list as "
                          f"unsupported by {proc.spec.name} ({error.get('message')})")
    raise CellSkipped(f"{proc.spec.name} does not support {what}: {reason}")


def _check(proc: AgentProcess, op: str, args: dict, resp: dict, expect: dict | None, vars: dict) -> None:
    _unsupported(proc, op, resp)
    expect = substitute(expect, vars) if expect else None
    errs = expect_errors(expect, resp)
    if not errs and resp.get("ok"):
        errs = shape_errors(op, args, resp.get("result"))
    if not errs and not resp.get("ok"):
        code = (resp.get("error") or {}).get("code")
        if not isinstance(code, str):
            errs = ["an error without a code"]
    if errs:
        raise StepFailure("; ".join(errs))
