"""The subset of JSON Schema (2020-12) that conformance/schema/scenario.schema.json uses,
checked with the standard library only, so the runner needs nothing but python3.

Keywords: type, enum, const, properties, required, additionalProperties, items, minItems,
minLength, minimum, pattern, oneOf, anyOf, allOf, if/then, $ref (local "#/$defs/..."),
description/title/$schema/$id/$comment/examples (ignored). An unknown keyword is an error, so the
schema cannot silently say more than is checked.
"""

from __future__ import annotations

import re
from typing import Any

_IGNORED = {"description", "title", "$schema", "$id", "$comment", "examples", "$defs", "default"}
_KNOWN = _IGNORED | {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items",
    "minItems", "minLength", "minimum", "pattern", "oneOf", "anyOf", "allOf", "if", "then", "$ref",
}

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class Validator:
    def __init__(self, schema: dict):
        self.root = schema

    def errors(self, value: Any) -> list[str]:
        out: list[str] = []
        self._check(self.root, value, "$", out)
        return out

    def _resolve(self, ref: str) -> dict:
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref is supported, not {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def _check(self, s: Any, v: Any, at: str, out: list[str]) -> None:
        if s is True:
            return
        if s is False:
            out.append(f"{at}: not allowed here")
            return
        unknown = set(s) - _KNOWN
        if unknown:
            raise ValueError(f"schema keyword(s) not supported by schema_check: {sorted(unknown)}")
        if "$ref" in s:
            self._check(self._resolve(s["$ref"]), v, at, out)
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if not any(_TYPES[t](v) for t in types):
                out.append(f"{at}: expected {' or '.join(types)}, got {type(v).__name__} {_short(v)}")
                return
        if "const" in s and v != s["const"]:
            out.append(f"{at}: expected {s['const']!r}, got {_short(v)}")
        if "enum" in s and v not in s["enum"]:
            out.append(f"{at}: {_short(v)} is not one of {s['enum']}")
        if isinstance(v, str):
            if "minLength" in s and len(v) < s["minLength"]:
                out.append(f"{at}: shorter than {s['minLength']}")
            if "pattern" in s and not re.search(s["pattern"], v):
                out.append(f"{at}: {v!r} does not match {s['pattern']!r}")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if "minimum" in s and v < s["minimum"]:
                out.append(f"{at}: {v} is below {s['minimum']}")
        if isinstance(v, list):
            if "minItems" in s and len(v) < s["minItems"]:
                out.append(f"{at}: fewer than {s['minItems']} items")
            if "items" in s:
                for i, item in enumerate(v):
                    self._check(s["items"], item, f"{at}[{i}]", out)
        if isinstance(v, dict):
            for k in s.get("required", []):
                if k not in v:
                    out.append(f"{at}: missing {k!r}")
            props = s.get("properties", {})
            for k, item in v.items():
                if k in props:
                    self._check(props[k], item, f"{at}.{k}", out)
                elif "additionalProperties" in s:
                    self._check(s["additionalProperties"], item, f"{at}.{k}", out)
        for sub in s.get("allOf", []):
            self._check(sub, v, at, out)
        if "anyOf" in s:
            branches = [self._sub(b, v, at) for b in s["anyOf"]]
            if all(branches):
                out.extend(min(branches, key=len))
        if "oneOf" in s:
            branches = [self._sub(b, v, at) for b in s["oneOf"]]
            passing = sum(1 for b in branches if not b)
            if passing == 0:
                # The branch that came closest says the most useful thing.
                out.extend(min(branches, key=len))
            elif passing > 1:
                out.append(f"{at}: matches {passing} of oneOf's branches, not exactly one")
        if "if" in s and not self._sub(s["if"], v, at):
            if "then" in s:
                self._check(s["then"], v, at, out)

    def _sub(self, s: Any, v: Any, at: str) -> list[str]:
        out: list[str] = []
        self._check(s, v, at, out)
        return out


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."
