"""Scenarios: loading and checking them against the schema, the `${...}` templates, derived
addresses, and the matching rules of `expect` (conformance/README.md §Scenarios)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any

from schema_check import Validator

TRANSPORTS = ("quic", "unix", "inproc")
# Step arguments whose values are handle names: the runner qualifies them with the role
# ("server/rt"), so roles sharing one agent process never share a handle.
HANDLE_ARGS = ("name", "runtime", "listener", "endpoint", "transfer", "reply", "puller", "subscriber", "fanout")


class ScenarioError(Exception):
    """A scenario that is malformed: a bug of the suite, not of an agent."""


@dataclass
class Scenario:
    name: str
    path: str
    data: dict

    @property
    def roles(self) -> list[str]:
        return self.data["roles"]

    @property
    def transports(self) -> list[str]:
        return self.data["transports"]

    @property
    def steps(self) -> list[dict]:
        return self.data["steps"]

    @property
    def all_steps(self) -> list[dict]:
        """Every step, a block's own steps in its place (once each, not per repeat)."""
        return flat(self.steps)

    def needs_own_processes(self) -> bool:
        return any("kill" in s or "restart" in s for s in self.steps)


def flat(steps: list[dict]) -> list[dict]:
    return [inner for s in steps for inner in s.get("steps", [s])]


def numbered(steps: list[dict]) -> list[tuple[str, dict]]:
    """Each step with its number as failures name it: a block is `n`, its steps `n.1`, `n.2`…"""
    out = []
    for i, s in enumerate(steps, 1):
        out.append((str(i), s))
        out.extend((f"{i}.{j}", inner) for j, inner in enumerate(s.get("steps", []), 1))
    return out


def load_all(scenario_dir: str, schema_path: str) -> list[Scenario]:
    with open(schema_path) as f:
        validator = Validator(json.load(f))
    out = []
    problems = []
    for fn in sorted(os.listdir(scenario_dir)):
        if not fn.endswith(".json"):
            continue
        path = os.path.join(scenario_dir, fn)
        try:
            with open(path) as f:
                data = json.load(f)
        except ValueError as e:
            problems.append(f"{fn}: not JSON: {e}")
            continue
        errs = validator.errors(data)
        errs += semantic_errors(data, fn)
        if errs:
            problems.extend(f"{fn}: {e}" for e in errs)
            continue
        out.append(Scenario(data["name"], path, data))
    if problems:
        raise ScenarioError("invalid scenarios:\n  " + "\n  ".join(problems))
    return out


def semantic_errors(data: dict, fn: str) -> list[str]:
    """What the schema cannot say."""
    errs = []
    if data.get("name") + ".json" != fn:
        errs.append(f"name {data.get('name')!r} is not the file name")
    roles = data.get("roles", [])
    if len(set(roles)) != len(roles):
        errs.append("roles repeat")
    transports = data.get("transports", [])
    if "none" in transports and len(transports) > 1:
        errs.append("'none' is a transport of its own")
    kills = any("kill" in s or "restart" in s for s in data.get("steps", []))
    if kills and "inproc" in transports:
        errs.append("kill and restart need each role in its own process; inproc roles share one")
    labels: set[str] = set()
    for where, s in numbered(data.get("steps", [])):
        if "role" in s and s["role"] not in roles:
            errs.append(f"step {where}: role {s['role']!r} is not one of {roles}")
        if "async" in s:
            if "expect" in s:
                errs.append(f"step {where}: an async step's expect goes on its await step")
            labels.add(s["async"])
        if "await" in s and s["await"] not in labels:
            errs.append(f"step {where}: awaits {s['await']!r}, which no earlier step started")
        for t in s.get("transports", []):
            if t not in transports:
                errs.append(f"step {where}: transport {t!r} is not one the scenario runs on")
        if "steps" in s:
            # A block runs again from its top: a label it starts must be collected inside it.
            started = {x["async"] for x in s["steps"] if "async" in x}
            awaited = {x["await"] for x in s["steps"] if "await" in x}
            if started - awaited:
                errs.append(f"step {where}: a block must await what it starts: {sorted(started - awaited)}")
            if any("repeat" in x for x in s["steps"]):
                errs.append(f"step {where}: a block's steps do not repeat on their own (the block does)")
    if not any(_checks_something(s) for s in flat(data.get("steps", []))):
        errs.append("no step checks anything an agent must do (an expect, a wait or a count)")
    return errs


def _checks_something(s: dict) -> bool:
    return "wait" in s or "count" in s or "expect" in s


# --- templates -----------------------------------------------------------------------------

_TEMPLATE = re.compile(r"\$\{([^}]+)\}")


class MissingVariable(Exception):
    pass


def lookup(vars: dict, dotted: str) -> Any:
    node: Any = vars
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise MissingVariable(f"${{{dotted}}} is not defined (no {part!r})")
    return node


def substitute(value: Any, vars: dict) -> Any:
    """Replaces `${a.b.c}` in every string; a string that is one template keeps the value's type."""
    if isinstance(value, str):
        m = _TEMPLATE.fullmatch(value)
        if m:
            return lookup(vars, m.group(1))
        return _TEMPLATE.sub(lambda m: str(lookup(vars, m.group(1))), value)
    if isinstance(value, list):
        return [substitute(v, vars) for v in value]
    if isinstance(value, dict):
        out = {k: substitute(v, vars) for k, v in value.items()}
        if "$address" in out:
            return derive_address(out)
        return out
    return value


def split_address(addr: str) -> tuple[str, str, str | None, str | None]:
    """(scheme, authority without pin, pin, path) of a weida address, as PROTOCOL.md §2.1 writes it."""
    scheme, sep, rest = addr.partition("://")
    if not sep:
        raise MissingVariable(f"{addr!r} is not a weida address")
    if scheme == "weida+unix":
        sock, sep, path_rest = rest.partition("//")
        return scheme, sock, None, ("/" + path_rest) if sep else None
    pin = None
    if scheme == "weida" and rest.startswith("sha256:") and "@" in rest:
        pin, _, rest = rest.partition("@")
    slash = rest.find("/")
    if slash < 0:
        return scheme, rest, pin, None
    return scheme, rest[:slash], pin, rest[slash:]


def join_address(scheme: str, authority: str, pin: str | None, path: str | None) -> str:
    a = f"{scheme}://" + (f"{pin}@" if pin else "") + authority
    if path is None:
        return a
    if scheme == "weida+unix":
        return a + "/" + path  # the socket, "//", then the path without its leading "/"
    return a + path


def derive_address(spec: dict) -> str:
    """`{"$address": a, "path": p, "pin": f}`: `a` with its path and/or pin replaced (null removes)."""
    scheme, authority, pin, path = split_address(spec["$address"])
    if "path" in spec:
        path = spec["path"]
    if "pin" in spec:
        pin = spec["pin"]
    return join_address(scheme, authority, pin, path)


# --- bodies and matching -------------------------------------------------------------------

def body_bytes(spec: dict) -> bytes:
    if "text" in spec:
        return spec["text"].encode()
    if "hex" in spec:
        return bytes.fromhex(spec["hex"])
    size, offset = spec["size"], spec.get("offset", 0)
    if spec.get("pattern", "seq") == "zero":
        return bytes(size)
    period = bytes(range(251))
    start = offset % 251
    reps = (size + start) // 251 + 1
    return (period * reps)[start:start + size]


def body_summary(spec: dict) -> dict:
    b = body_bytes(spec)
    return {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()}


def match(expected: Any, actual: Any, at: str = "") -> list[str]:
    """Mismatches of `actual` against `expected`: objects match on the keys they name, a `body`
    spec by size and SHA-256, `{"$one_of": [...]}` any of its values, `{"$contains": s}` a
    string containing s, `{"$at_least": n}` a number no smaller than n, `{"$absent": true}` a
    missing or null field; the rest by equality."""
    if isinstance(expected, dict):
        if "$at_least" in expected:
            n = expected["$at_least"]
            if isinstance(actual, int) and not isinstance(actual, bool) and actual >= n:
                return []
            return [f"{at or 'value'}: {_show(actual)} is not a number of at least {n}"]
        if "$one_of" in expected:
            options = expected["$one_of"]
            if any(not match(o, actual, at) for o in options):
                return []
            return [f"{at or 'value'}: {_show(actual)} is none of {_show(options)}"]
        if "$contains" in expected:
            if isinstance(actual, str) and expected["$contains"] in actual:
                return []
            return [f"{at or 'value'}: {_show(actual)} does not contain {expected['$contains']!r}"]
        if not isinstance(actual, dict):
            return [f"{at or 'value'}: expected an object, got {_show(actual)}"]
        out = []
        for k, v in expected.items():
            where = f"{at}.{k}" if at else k
            if k == "body" and isinstance(v, dict) and "$one_of" not in v:
                v = body_summary(v)
            elif k == "body" and isinstance(v, dict):
                v = {"$one_of": [body_summary(o) for o in v["$one_of"]]}
            if v is None or (isinstance(v, dict) and v.get("$absent") is True):
                if actual.get(k) is not None:
                    out.append(f"{where}: expected null or absent, got {_show(actual.get(k))}")
                continue
            if k not in actual:
                out.append(f"{where}: missing (expected {_show(v)})")
                continue
            out.extend(match(v, actual[k], where))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{at or 'value'}: expected {_show(expected)}, got {_show(actual)}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out.extend(match(e, a, f"{at}[{i}]"))
        return out
    if expected != actual or _kind(expected) != _kind(actual):
        return [f"{at or 'value'}: expected {_show(expected)}, got {_show(actual)}"]
    return []


def _kind(v: Any) -> str:
    """Equality across kinds is not a match (True == 1 in Python); 1 and 1.0 are one kind."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def _show(v: Any) -> str:
    s = json.dumps(v, sort_keys=True) if not isinstance(v, str) else repr(v)
    return s if len(s) <= 160 else s[:157] + "..."


def expect_errors(expect: dict | None, response: dict) -> list[str]:
    """Mismatches of one response against a step's `expect` (absent: it must succeed)."""
    expect = expect or {}
    if "any_of" in expect:
        tries = [expect_errors(e, response) for e in expect["any_of"]]
        if any(not t for t in tries):
            return []
        return ["none of any_of matched: " + " | ".join("; ".join(t) for t in tries)]
    if "error" in expect:
        if response.get("ok") is True:
            return [f"expected error {_show(expect['error'])}, the op succeeded with {_show(response.get('result'))}"]
        err = response.get("error")
        if not isinstance(err, dict):
            return [f"a failed response without an error object: {_show(response)}"]
        want = expect["error"]
        if isinstance(want, str):
            want = {"code": want}
        return match(want, err, "error")
    if response.get("ok") is not True:
        return [f"failed: {_show(response.get('error'))}"]
    result = response.get("result")
    if not isinstance(result, dict):
        return [f"a successful response without a result object: {_show(response)}"]
    return match(expect.get("result", {}), result, "result")
