#!/usr/bin/env python3
"""Every test the documents cite exists: a claim names the test that defends it, and a renamed or
removed test must not leave the claim pointing at nothing.

    python3 docs/citations.py      (./dev test runs it)

A citation is `file.rs: test_name` (a test in core/tests/file.rs, or generated there by
`on_every_transport!`, or a unit test in a core/src file of that name, which is also cited with
its path, `core/src/ordering.rs: name`) or `file.rs (unit): test_name`; the documents are
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
CITATION = re.compile(r"\b([a-z_]+\.rs)( \(unit\))?: ([a-z][a-z0-9_]{5,})")
# The docs explain the form with this placeholder.
PLACEHOLDER = ("file.rs", "test_name")
TEST_FN = re.compile(r"\bfn\s+([a-z0-9_]+)\s*[<(]")
GENERATED = re.compile(r"on_every_transport!\(\s*([a-z0-9_]+)\s*,")


def defined(path: str) -> set[str]:
    with open(path) as f:
        text = f.read()
    return set(TEST_FN.findall(text)) | set(GENERATED.findall(text))


def tests() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Names per file: integration tests (core/tests) and unit tests (core/src)."""
    integration = {os.path.basename(p): defined(p) for p in glob.glob(f"{ROOT}/core/tests/*.rs")}
    unit: dict[str, set[str]] = {}
    for p in glob.glob(f"{ROOT}/core/src/**/*.rs", recursive=True):
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


def broken() -> list[str]:
    integration, unit = tests()
    out = []
    for path, text in documents():
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
