#!/usr/bin/env python3
"""Every test the documents cite exists: a claim names the test that defends it, and a renamed or
removed test must not leave the claim pointing at nothing.

    python3 docs/citations.py      (./dev test runs it)

A citation is `file.rs: test_name` (a test in core/tests/file.rs, or generated there by
`on_every_transport!`, or a unit test in a core/src or core/ffi/src file of that name, which is
also cited with its path, `core/src/ordering.rs: name`) or `file.rs (unit): test_name`; or a
binding's test, a path then the name in backticks: `python/tests/test_x.py `test_name``,
`node/test/x.test.mjs `name`` (Python's `test_` prefix may be left off when one name is cited
for both languages: `python/tests/test_x.py and node/test/x.test.mjs `name``). The documents are
docs/ (decisions included), the READMEs, and the scenarios' `defended_by`. Prints each citation
that names no test and exits 1 if there is one.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CITATION = re.compile(r"\b([a-z_]+\.rs)( \(unit\))?:\s+([a-z][a-z0-9_]{5,})")
# The docs explain the form with this placeholder.
PLACEHOLDER = ("file.rs", "test_name")
TEST_FN = re.compile(r"\bfn\s+([a-z0-9_]+)\s*[<(]")
# A binding's test: one path, or a Python and a Node one joined by "and", then `name`. A README
# under python/ or node/ may cite its own tests without the directory (`tests/...`, `test/...`).
BINDING_FILE = r"(?:python/)?tests/test_[a-z0-9_]+\.py|(?:node/)?test/[a-z]+\.test\.mjs"
BINDING = re.compile(rf"({BINDING_FILE})(?:,?\s+and\s+({BINDING_FILE}))?\)?:?\s+`([a-z][a-z0-9_]{{5,}})`")
GENERATED = re.compile(r"on_every_transport!\(\s*([a-z0-9_]+)\s*,")


def defined(path: str) -> set[str]:
    with open(path) as f:
        text = f.read()
    return set(TEST_FN.findall(text)) | set(GENERATED.findall(text))


def tests() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Names per file: integration tests (core/tests) and unit tests (core/src)."""
    integration = {os.path.basename(p): defined(p) for p in glob.glob(f"{ROOT}/core/tests/*.rs")}
    unit: dict[str, set[str]] = {}
    for p in glob.glob(f"{ROOT}/core/src/**/*.rs", recursive=True) + glob.glob(
        f"{ROOT}/core/ffi/src/**/*.rs", recursive=True
    ):
        unit.setdefault(os.path.basename(p), set()).update(defined(p))
    return integration, unit


def documents() -> list[tuple[str, str]]:
    """(path, text) of every document that cites tests."""
    paths = glob.glob(f"{ROOT}/docs/**/*.md", recursive=True)
    paths += [
        f"{ROOT}/{p}"
        for p in (
            "README.md",
            "conformance/README.md",
            "python/README.md",
            "node/README.md",
            "bench/README.md",
        )
    ]
    out = []
    for p in paths:
        if os.path.exists(p):
            with open(p) as f:
                out.append((p, f.read()))
    for p in sorted(glob.glob(f"{ROOT}/conformance/scenarios/*.json")):
        with open(p) as f:
            out.append((p, "\n".join(json.load(f).get("defended_by", []))))
    return out


def binding_test(doc: str, file: str, name: str) -> bool:
    """Whether the Python or Node test file `file` (as `doc` cites it) defines `name`."""
    if not file.startswith(("python/", "node/")):
        file = ("python/" if file.startswith("tests/") else "node/") + file
    path = os.path.join(ROOT, file)
    if not os.path.exists(path):
        return False
    with open(path) as f:
        text = f.read()
    if file.endswith(".py"):
        return re.search(rf"\bdef (test_)?{name}\(", text) is not None
    return re.search(rf"['`]{name}[ '`]", text) is not None


def broken() -> list[str]:
    integration, unit = tests()
    out = []
    for path, text in documents():
        for first, second, name in BINDING.findall(text):
            for file in (first, second):
                if file and not binding_test(path, file, name):
                    out.append(f"{os.path.relpath(path, ROOT)}: {file} `{name}`")
        for file, is_unit, name in CITATION.findall(text):
            if (file, name) == PLACEHOLDER:
                continue
            # Without "(unit)", a file under core/src is cited by its path or name alone.
            names = unit.get(file, set())
            if not is_unit:
                names = names | integration.get(file, set())
            if name not in names:
                where = os.path.relpath(path, ROOT)
                out.append(f"{where}: {file}{is_unit}: {name} names no test")
    return sorted(set(out))


def main() -> int:
    bad = broken()
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"{len(bad)} citation(s) name no test", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
