"""The READMEs' quick starts run as printed (issue 17).

A program in a README is a file of the repository: the line before its fence names it,
``<!-- example: python/examples/echo_service.py -->``, and the block is that file to the byte.
These tests check every such block in the READMEs and docs/ (the Rust and Node ones too: the Node
ones run in node/test/readme.test.mjs), then run the Python and the Rust quick starts as a reader
would: the service in one process, the client in another, in a fresh directory. The Rust
examples are the binaries ``./dev python`` builds next to the Rust peer (``WEIDA_PEER_BIN``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import weida

REPO = Path(__file__).resolve().parent.parent.parent
READMES = ["README.md", "core/README.md", "python/README.md", "node/README.md", "cli/README.md"]
DOCUMENTS = READMES + sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))
MARKER = re.compile(r"^<!-- example: (\S+) -->\n```(\w+)\n(.*?)^```$", re.M | re.S)
PROGRAM = re.compile(r"^```(python|rust|ts|js)$")
TIMEOUT = 60


def marked_blocks() -> list[tuple[str, str, str]]:
    """(document, example file, block) for every marked block."""
    return [
        (doc, m.group(1), m.group(3))
        for doc in DOCUMENTS
        for m in MARKER.finditer((REPO / doc).read_text())
    ]


def test_every_marked_block_is_its_example_file() -> None:
    blocks = marked_blocks()
    assert {"python/examples/echo_service.py", "python/examples/echo_client.py"} <= {
        f for _, f, _ in blocks
    }
    for doc, file, block in blocks:
        path = REPO / file
        assert path.is_file(), f"{doc} names {file}, which does not exist"
        assert block == path.read_text(), f"{doc}: the block marked {file} is not that file"


@pytest.mark.parametrize("readme", READMES)
def test_every_program_in_a_readme_is_an_example_file(readme: str) -> None:
    """A block at the margin in a program's language is marked; an indented one (inside a list
    item) is a fragment, and its text names the example it comes from."""
    lines = (REPO / readme).read_text().splitlines()
    for i, line in enumerate(lines):
        if PROGRAM.match(line):
            assert i > 0 and lines[i - 1].startswith("<!-- example: "), (
                f"{readme}:{i + 1}: a program block without its example file"
            )


def program(language: str, name: str) -> list[str]:
    """How to run the quick start's `name` (echo_service, echo_client) in `language`."""
    if language == "python":
        return [sys.executable, str(REPO / f"python/examples/{name}.py")]
    peer = os.environ.get("WEIDA_PEER_BIN")
    if not peer:
        pytest.skip("the Rust examples are built by ./dev python (set WEIDA_PEER_BIN)")
    return [str(Path(peer).parent / name)]


LANGUAGES = ["python", "rust"]


class Service:
    """The quick start's echo_service in `language`, started in `cwd` with `bind`; `address`
    is its first line of output."""

    def __init__(self, cwd: Path, bind: str, language: str = "python") -> None:
        self.proc = subprocess.Popen(
            [*program(language, "echo_service"), bind],
            cwd=cwd,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.address = self.proc.stdout.readline().strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=TIMEOUT)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@contextmanager
def service(cwd: Path, bind: str, language: str = "python") -> Iterator[Service]:
    s = Service(cwd, bind, language)
    try:
        yield s
    finally:
        s.stop()


def client(address: str, cwd: Path, language: str = "python") -> str:
    """The quick start's echo_client's output in `language`; it must exit 0."""
    return subprocess.run(
        [*program(language, "echo_client"), address],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    ).stdout


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_quick_start_runs_as_printed(tmp_path: Path, language: str) -> None:
    with service(tmp_path, "weida://127.0.0.1:0", language) as s:
        assert re.fullmatch(r"weida://sha256:[0-9a-f]{64}@127\.0\.0\.1:\d+/echo", s.address)
        # The pin is the key the service keeps in ./echo-identity, owner-only.
        keys = tmp_path / "echo-identity"
        assert weida.Address(s.address).pin == weida.Identity.load(keys).fingerprint
        assert (keys.stat().st_mode & 0o777, (keys / "key.pem").stat().st_mode & 0o777) == (
            0o700,
            0o600,
        )
        said = "b'hello'\n" if language == "python" else "hello\n"
        assert client(s.address, tmp_path, language) == said


def test_the_service_keeps_its_address_across_a_restart(tmp_path: Path) -> None:
    with service(tmp_path, "weida://127.0.0.1:0") as s:
        first = s.address
    port = first.rsplit(":", 1)[1].split("/")[0]
    with service(tmp_path, f"weida://127.0.0.1:{port}") as s:
        assert s.address == first
        assert client(first, tmp_path) == "b'hello'\n"
