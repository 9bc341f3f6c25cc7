#!/usr/bin/env python3
"""Every test the documents cite exists: a claim names the test that defends it, and a renamed or
removed test must not leave the claim pointing at nothing.

    python3 docs/citations.py             (./dev test and ./dev lint run it)
    python3 docs/citations.py --self-test

A citation is `file: test_name`, where `file` is a test file's name or the end of its path:

- Rust: `lifecycle.rs: name` (an integration test in core/tests, or one that
  `on_every_transport!` generates there), `ordering.rs (unit): name` (a unit test in a source
  file), `wire/lane.rs (unit): name` when two source files share a name;
- Python: `test_pubsub.py: test_name` (python/tests);
- Node: `pubsub.test.mjs: name` (node/test: a `test(...)`, an `onEveryTransport(...)` or an
  `onTransports(...)`);
- the packages: `check.sh: check_npm` (a `check_` function of packaging/check.sh, run by
  `./dev package` and `./dev test`);
- Kotlin and Swift, by test class: `PatternsTest `name`` (a JUnit `@Test` or `@ParameterizedTest`
  function of kotlin-swift/kotlin/src/test/**/PatternsTest.kt), `PatternsTests `test_name``
  (an XCTest `func test_…` of kotlin-swift/swift/Tests/**/PatternsTests.swift).

Tests are keyed by their file's path, never by its name alone: a citation whose file name matches
two test files in the document's scope is ambiguous and must give more of the path. Only real
tests count: a Rust function under `#[test]`, `#[tokio::test]` or in `proptest!`, or a module
`on_every_transport!` generates; a Python `test_` function in a test file; a Node `test` or
`onEveryTransport` name; a `check_` function of a packaging script; a Kotlin function under a
JUnit test annotation; a Swift `test…` method. A helper function of the same name does not make a
citation true.

The documents are docs/ (decisions included), the READMEs, and the conformance scenarios'
`defended_by`. A document cites the tests of its own part first (cli/README.md: cli/; the
Python and Node READMEs: their tests), then the core's. Prints each citation that names no test
and exits 1 if there is one.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = r"([a-z][a-z0-9_]{5,})"
CITATION = re.compile(
    r"(?<![\w/.-])((?:[\w-]+/)*(?:[\w-]+\.rs|test_\w+\.py|[\w-]+\.test\.mjs|[\w-]+\.sh))( \(unit\))?:\s+`?"
    + NAME
)
# Kotlin and Swift tests are cited by their class: `CancelTest `name``, `CancelTests `test_name``.
CLASS_CITATION = re.compile(r"(?<![\w/.-])([A-Z][A-Za-z0-9]*Tests?)\s+`" + NAME + "`")
# The docs explain the form with these placeholders.
PLACEHOLDERS = {("file.rs", "test_name"), ("test_pubsub.py", "test_name")}

RUST_ATTR = re.compile(r"#\[(?:tokio::)?test\b[^\]]*\]")
RUST_FN = re.compile(r"\bfn\s+([a-z0-9_]+)\s*[<(]")
RUST_GENERATED = re.compile(r"on_every_transport!\(\s*([a-z0-9_]+)\s*,")
PY_TEST = re.compile(r"^\s*(?:async\s+)?def\s+(test_[a-z0-9_]+)\s*\(", re.M)
NODE_TEST = re.compile(r"\b(?:test|onEveryTransport|onTransports)\(\s*(['`])([^'`]+)\1")
SHELL_CHECK = re.compile(r"^(check_[a-z0-9_]+)\(\)\s*\{", re.M)
KOTLIN_TEST = re.compile(
    r"@(?:Test|ParameterizedTest|org\.junit\.jupiter\.api\.Test)\b[^\n]*\n"
    r"(?:[ \t]*@[^\n]*\n)*[ \t]*fun\s+([a-z][a-z0-9_]*)\s*\("
)
SWIFT_TEST = re.compile(r"^[ \t]*(?:(?:public|internal|@MainActor)\s+)*func\s+(test[a-z0-9_]*)\s*\(", re.M)


def rust_tests(text: str) -> set[str]:
    """Functions under a test attribute (proptest's `#[test]` included), and generated modules."""
    out = set(RUST_GENERATED.findall(text))
    for attr in RUST_ATTR.finditer(text):
        # The next `fn` after the attribute, past any other attributes and doc comments.
        m = RUST_FN.search(text, attr.end())
        if m is not None:
            out.add(m.group(1))
    return out


def node_tests(text: str) -> set[str]:
    """Test names; a template literal's `${...}` parts stand for any text. A family named
    `stem (${case})` is also cited by its stem, as a parametrized Python test is by its name."""
    out = set()
    for _, name in NODE_TEST.findall(text):
        name = re.sub(r"\$\{[^}]*\}", "*", name)
        out.add(name)
        family = re.fullmatch(r"(\w+) \(\*\)", name)
        if family:
            out.add(family.group(1))
    return out


# Folders no test or document lives in, skipped whole: build output (a cargo target dir holds
# the Swift tests' chroot, kotlin-swift/swift/run.sh), installed packages, git's own.
SKIPPED = {"target", "node_modules", ".git", ".build", "__pycache__"}


def source_files(root: str) -> list[str]:
    """Every file under `root` outside the skipped folders, as paths relative to it."""
    out = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIPPED and not x.startswith("target-")]
        rel = os.path.relpath(d, root)
        out += [n if rel == "." else os.path.join(rel, n) for n in names]
    return out


def pattern(glob_pattern: str) -> re.Pattern[str]:
    """A glob pattern (`*` within a folder, `**/` any folders) as a regular expression."""
    out = ""
    for part in re.split(r"(\*\*/|\*)", glob_pattern):
        out += {"**/": "(?:.*/)?", "*": "[^/]*"}.get(part, re.escape(part))
    return re.compile(out + r"\Z")


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def test_files(root: str) -> dict[str, tuple[str, set[str]]]:
    """Every test file: relative path -> (kind, test names). Kind is "integration" (a Rust
    tests/ file, a Python or Node test file) or "unit" (a Rust source file)."""
    files: dict[str, tuple[str, set[str]]] = {}

    every = source_files(root)

    def add(glob_pattern: str, kind: str, parse) -> None:  # type: ignore[no-untyped-def]
        wanted = pattern(glob_pattern)
        for rel in every:
            if not wanted.match(rel):
                continue
            names = parse(read(os.path.join(root, rel)))
            if names:
                files[rel] = (kind, names)

    add("*/tests/**/*.rs", "integration", rust_tests)
    add("*/**/src/**/*.rs", "unit", rust_tests)
    add("**/test_*.py", "integration", lambda t: set(PY_TEST.findall(t)))
    add("node/test/*.test.mjs", "integration", node_tests)
    add("packaging/*.sh", "integration", lambda t: set(SHELL_CHECK.findall(t)))
    add("kotlin-swift/kotlin/src/test/**/*.kt", "class", lambda t: set(KOTLIN_TEST.findall(t)))
    add("kotlin-swift/swift/Tests/**/*.swift", "class", lambda t: set(SWIFT_TEST.findall(t)))
    return files


def resolve_class(
    files: dict[str, tuple[str, set[str]]], cls: str
) -> tuple[str | None, str | None]:
    """The one Kotlin or Swift test file a class citation names, or (None, why)."""
    found = [
        p
        for p, (kind, _) in files.items()
        if kind == "class" and os.path.splitext(os.path.basename(p))[0] == cls
    ]
    if len(found) > 1:
        return None, f"is ambiguous ({', '.join(sorted(found))})"
    if not found:
        return None, "is no Kotlin or Swift test class"
    return found[0], None


def scope(document: str) -> list[str]:
    """Path prefixes a document's citations resolve in, most specific first."""
    first = document.split("/", 1)[0]
    if first in ("cli", "python", "node", "bench", "conformance") and "/" in document:
        return [first + "/", "core/", ""]
    return ["core/", ""]


def resolve(
    files: dict[str, tuple[str, set[str]]], document: str, cited: str, unit: bool
) -> tuple[str | None, str | None]:
    """The one test file a citation names, or (None, why)."""
    for prefix in scope(document):
        found = [
            p
            for p, (kind, _) in files.items()
            if p.startswith(prefix)
            and kind != "class"
            and (p == cited or p.endswith("/" + cited))
            and (kind == "unit" or not unit)
        ]
        if not found:
            continue
        # Without "(unit)" an integration test file is meant first (core/tests/pubsub.rs, not
        # the source file of the same name).
        if not unit:
            integration = [p for p in found if files[p][0] == "integration"]
            found = integration or found
        if len(found) > 1:
            return None, f"is ambiguous ({', '.join(sorted(found))}): give more of its path"
        return found[0], None
    return None, "is no test file"


def matches(name: str, names: set[str]) -> bool:
    if name in names:
        return True
    return any("*" in n and re.fullmatch(re.escape(n).replace(r"\*", ".*"), name) for n in names)


def documents(root: str) -> list[tuple[str, str]]:
    """(relative path, text) of every document that cites tests."""
    kinds = [pattern(p) for p in ("docs/**/*.md", "*.md", "*/README.md", "*/*/README.md")]
    out = []
    for rel in sorted(source_files(root)):
        if any(k.match(rel) for k in kinds):
            out.append((rel, read(os.path.join(root, rel))))
    for p in sorted(glob.glob(os.path.join(root, "conformance/scenarios/*.json"))):
        out.append((os.path.relpath(p, root), "\n".join(json.loads(read(p)).get("defended_by", []))))
    return out


def broken(root: str) -> tuple[list[str], int]:
    files = test_files(root)
    out = []
    count = 0
    for where, text in documents(root):
        for cited, is_unit, name in CITATION.findall(text):
            if (os.path.basename(cited), name) in PLACEHOLDERS:
                continue
            count += 1
            path, why = resolve(files, where, cited, bool(is_unit))
            if path is None:
                out.append(f"{where}: {cited}{is_unit}: {name}: the file {why}")
            elif not matches(name, files[path][1]):
                out.append(f"{where}: {cited}{is_unit}: {name} names no test in {path}")
        for cls, name in CLASS_CITATION.findall(text):
            count += 1
            path, why = resolve_class(files, cls)
            if path is None:
                out.append(f"{where}: {cls} `{name}`: the class {why}")
            elif name not in files[path][1]:
                out.append(f"{where}: {cls} `{name}` names no test in {path}")
    return sorted(set(out)), count


def self_test() -> int:
    """A tree with a collision (two lane.rs), a helper that is not a test, and each language."""
    import tempfile

    tree = {
        "core/src/lane.rs": "#[test]\nfn writer_batches() {}\n",
        "core/src/wire/lane.rs": "#[cfg(test)]\nmod t {\n    #[test]\n    fn frames_decode() {}\n}\n",
        "core/tests/pool.rs": "fn helper_only() {}\non_every_transport!(shared_by_endpoints, body);\n",
        "python/tests/test_pubsub.py": "async def test_filters_work(pair):\n    pass\n",
        "node/test/pubsub.test.mjs": "onEveryTransport('filters_work', async () => {})\n"
        "test(`talks_over_${t}`, () => {})\n"
        "onEveryTransport(`drops_nothing (${how})`, () => {})\n",
        "packaging/check.sh": "quickstarts() {\n}\ncheck_installs() {\n}\n",
        "kotlin-swift/kotlin/src/test/kotlin/weida/CancelTest.kt": "class CancelTest {\n"
        "    @ParameterizedTest\n    @ValueSource(strings = [\"quic\"])\n"
        "    fun a_recv_loses_nothing(t: String) = test {}\n    fun helper_fn() {}\n}\n",
        "kotlin-swift/swift/Tests/WeidaTests/CancelTests.swift": "final class CancelTests: XCTestCase {\n"
        "    func test_a_recv_loses_nothing() async throws {}\n    func started() {}\n}\n",
        "docs/GOOD.md": "`pool.rs: shared_by_endpoints`, `wire/lane.rs (unit): frames_decode`, "
        "`core/src/lane.rs (unit): writer_batches`, `test_pubsub.py: test_filters_work`, "
        "`pubsub.test.mjs: filters_work`, `pubsub.test.mjs: talks_over_quic`, "
        "`pubsub.test.mjs: drops_nothing`, `check.sh: check_installs`, "
        "CancelTest `a_recv_loses_nothing`, CancelTests `test_a_recv_loses_nothing`\n",
        "docs/BAD.md": "`lane.rs (unit): frames_decode` `pool.rs: helper_only` "
        "`test_pubsub.py: test_missing` `nothing.rs: something` `check.sh: quickstarts` "
        "CancelTest `helper_fn` CancelTests `started_at` NoSuchTest `anything`\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        bad, count = broken(root)
    good = [b for b in bad if b.startswith("docs/GOOD.md")]
    expected = [
        "is ambiguous",
        "helper_only names no test",
        "test_missing names no test",
        "is no test file",
        "quickstarts names no test",
        "CancelTest `helper_fn` names no test",
        "CancelTests `started_at` names no test",
        "is no Kotlin or Swift test class",
    ]
    ok = not good and count == 18 and all(any(e in b for b in bad) for e in expected) and len(bad) == 8
    if not ok:
        print(f"citations self-test failed: {count} citations, {bad}", file=sys.stderr)
        return 1
    print("citations self-test: ok")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    bad, count = broken(ROOT)
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"{len(bad)} of {count} citation(s) name no test", file=sys.stderr)
        return 1
    print(f"{count} citations, each names a test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
