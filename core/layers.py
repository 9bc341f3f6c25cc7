#!/usr/bin/env python3
"""The shape of core/src, checked (docs/ARCHITECTURE.md §1):

1. A layer imports only the layers below it:
       wire < security < transport < connection < runtime < patterns < service
   The foundation modules (lib.rs, error.rs, config.rs, address.rs) are below all of them and any
   layer may use them. Every `crate::…` path in code counts (a `use` or a path in an expression),
   and so does a `super::…` path that leaves its folder; a name `lib.rs` re-exports
   (`crate::Publisher`) counts as the layer it comes from.
2. The foundation modules name no layer, except the plain value types a configuration, an
   address or an error carries, listed one by one in FOUNDATION_MAY_NAME below.
3. quinn is named only inside transport/.
4. Every `pub async fn` (and every `pub fn` that returns `impl Future`) says in its doc whether
   it is cancel-safe: a sentence with "Cancel-safe" or "Not cancel-safe".

Code under `#[cfg(test)]` is not checked: a unit test may drive a layer through the ones above
it (security/tls.rs's verifiers are judged over a real QUIC handshake); the rule keeps the
library's own dependencies one-way. Comments and string literals are not code.

    python3 core/layers.py               check core/src (./dev test runs it)
    python3 core/layers.py --root DIR    check DIR (a tree laid out as core/src)
    python3 core/layers.py --self-test   check a fake tree with known faults, and a clean one

Prints each fault as `file:line: what` and exits 1 if there is one.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile

LAYERS = ["wire", "security", "transport", "connection", "runtime", "patterns", "service"]
FOUNDATION = {"lib", "error", "config", "address"}
RANK = {name: i for i, name in enumerate(LAYERS)}

# What a foundation module may name of a layer: the value types it carries, and why.
FOUNDATION_MAY_NAME = {
    ("error.rs", "crate::security::fingerprint::Fingerprint"): "Untrusted names the key it refused",
    ("error.rs", "crate::filter::FilterError"): "InvalidFilter carries the grammar's error",
    ("config.rs", "crate::security::identity::Identity"): "RuntimeConfig holds the identity",
    ("config.rs", "crate::security::trust::Trust"): "RuntimeConfig holds the trust terms",
    ("config.rs", "crate::wire::GuaranteeSet"): "RuntimeConfig holds the required guarantees",
    ("address.rs", "crate::security::fingerprint::Fingerprint"): "an address may pin a key",
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text: str) -> str:
    """The text with comments, string literals and char literals blanked (newlines kept, so
    line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        two = text[i : i + 2]
        if two == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text[j : j + 2] == "/*":
                    depth, j = depth + 1, j + 2
                elif text[j : j + 2] == "*/":
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text[i + 1 : i + 2] == '"'):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}'); a lifetime ('a) is left alone.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def closing_brace(code: str, at: int) -> int:
    """The offset of the `}` that closes the `{` at `at` (the end of `code` if none does)."""
    depth, j = 0, at
    while j < len(code):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return j


def without_tests(code: str) -> str:
    """`code` with every item under `#[cfg(test)]` blanked (a `mod tests { … }`, a `use`)."""
    out = list(code)
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        j = m.end()
        # The item runs to its `;` or to the end of its first `{ … }` block.
        while j < len(code) and code[j] not in ";{":
            j += 1
        if j < len(code) and code[j] == "{":
            j = closing_brace(code, j)
        for k in range(m.start(), min(j + 1, len(code))):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def module_path(rel: str) -> list[str]:
    """The module path of a file under core/src: `connection/dispatch.rs` → [connection,
    dispatch]; `connection/mod.rs` → [connection]; `lib.rs` → []."""
    parts = rel[: -len(".rs")].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts == ["lib"]:
        return []
    return parts


def layer_of_module(path: list[str]) -> str | None:
    if not path:
        return "foundation"
    if path[0] in RANK:
        return path[0]
    if path[0] in FOUNDATION:
        return "foundation"
    return None


def reexports(root: str) -> dict[str, list[str]]:
    """What lib.rs re-exports, by the name it exports: the module path it comes from."""
    with open(os.path.join(root, "lib.rs")) as f:
        code = without_tests(strip(f.read()))
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"\bpub\s+use\s+([^;]+);", code):
        for full in expand_use(m.group(1)):
            segs = [s.strip() for s in full.split("::")]
            name = segs[-1]
            if " as " in name:
                name = name.split(" as ")[1].strip()
            out[name] = segs
    return out


def expand_use(tree: str) -> list[str]:
    """The paths of a use tree: `a::{b, c::{d, e as f}}` → a::b, a::c::d, a::c::e as f."""
    tree = " ".join(tree.split())
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    out = []
    for it in items:
        it = it.strip()
        if not it:
            continue
        for sub in expand_use(it):
            out.append(prefix + sub if sub != "self" else prefix.rstrip(":"))
    return out


def blocks(code: str, opening: str) -> list[tuple[int, int, str]]:
    """Spans (start, end, first group or "") of the `{ … }` blocks that `opening` (a pattern
    ending at the block's `{`) opens."""
    spans = []
    for m in re.finditer(opening, code):
        end = closing_brace(code, m.end() - 1)
        spans.append((m.start(), end, m.group(1) if m.groups() else ""))
    return spans


def inline_modules(code: str) -> list[tuple[int, int, str]]:
    """Spans (start, end, name) of the `mod name { … }` blocks in a file."""
    return blocks(code, rf"\bmod\s+({IDENT})\s*\{{")


def resolve(segs: list[str], here: list[str], exported: dict[str, list[str]]) -> list[str] | None:
    """The absolute module path a path starting with `crate` or `super` names."""
    if segs[0] == "crate":
        rest = segs[1:]
    else:
        base = list(here)
        while segs and segs[0] == "super":
            if not base:
                return None
            base.pop()
            segs = segs[1:]
        rest = base + segs
    if rest and layer_of_module(rest[:1]) is None and rest[0] in exported:
        rest = exported[rest[0]] + rest[1:]
    return rest


def paths_in(code: str) -> list[tuple[int, str]]:
    """(offset, path) of every `crate::…` and `super::…` path, use trees expanded."""
    found = []
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        tree = m.group(1)
        if re.match(r"\s*(crate|super)\b", tree):
            for p in expand_use(tree):
                found.append((m.start(), p.split(" as ")[0].strip()))
    uses = [(m.start(), m.end()) for m in re.finditer(r"\buse\s+[^;]+;", code)]
    for m in re.finditer(rf"\b(?:crate|super)(?:\s*::\s*(?:{IDENT}|\{{))+", code):
        if any(a <= m.start() < b for a, b in uses):
            continue
        found.append((m.start(), re.sub(r"\s", "", m.group(0)).rstrip(":{")))
    return found


def check(root: str) -> list[str]:
    faults: list[str] = []
    exported = reexports(root)
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            with open(full) as f:
                raw = f.read()
            code = without_tests(strip(raw))
            file_mod = module_path(rel)
            layer = layer_of_module(file_mod)
            where = lambda off: f"{os.path.join('core/src', rel)}:{raw.count(chr(10), 0, off) + 1}"
            if layer is None:
                faults.append(f"{where(0)}: a file outside the layers ({', '.join(LAYERS)}) "
                              "and the foundation modules")
                continue
            if rel == "lib.rs":
                continue  # the root declares and re-exports every layer
            spans = inline_modules(code)
            for off, path in paths_in(code):
                here = file_mod + [n for a, b, n in spans if a < off < b]
                segs = [s for s in path.split("::") if s]
                target = resolve(segs, here, exported)
                if target is None:
                    faults.append(f"{where(off)}: `{path}` leaves the crate")
                    continue
                to = layer_of_module(target[:1])
                if to is None:
                    faults.append(f"{where(off)}: `{path}` names `{target[0]}`, which is neither "
                                  "a layer nor a foundation module nor a re-export of lib.rs")
                    continue
                if layer == "foundation":
                    if to == "foundation":
                        continue
                    absolute = "crate::" + "::".join(target)
                    if any(rel == f and (absolute == p or "crate::" + "::".join(segs[1:]) == p
                                         or path == p)
                           for f, p in FOUNDATION_MAY_NAME):
                        continue
                    faults.append(f"{where(off)}: the foundation module {rel} names `{path}` "
                                  f"({to}); it may name only the value types of "
                                  "FOUNDATION_MAY_NAME")
                    continue
                if to != "foundation" and RANK[to] > RANK[layer]:
                    faults.append(f"{where(off)}: {layer} imports `{path}` ({to}), a higher "
                                  f"layer ({' < '.join(LAYERS)})")
            if layer != "transport":
                for m in re.finditer(r"\bquinn\s*::", code):
                    faults.append(f"{where(m.start())}: quinn is named outside transport/")
            faults += cancel_safety(raw, code, where)
    return faults


def cancel_safety(raw: str, code: str, where) -> list[str]:
    """Every `pub async fn` and `pub fn … -> impl Future` outside tests says whether it is
    cancel-safe in its doc comment."""
    faults = []
    lines = raw.split("\n")
    # The methods of a public trait are public without `pub`.
    in_pub_trait = [(a, b) for a, b, _ in blocks(code, rf"\bpub\s+trait\s+{IDENT}[^{{;]*\{{")]
    pattern = re.compile(rf"\b(?:pub\s+)?(async\s+fn|fn)\s+({IDENT})[^{{;]*")
    for m in pattern.finditer(code):
        public = code[max(0, m.start() - 4) : m.start()] == "pub " or re.match(r"pub\s", m.group(0))
        if not public and not any(a < m.start() < b for a, b in in_pub_trait):
            continue
        if m.group(1) == "fn" and not re.search(r"->\s*impl\s+(std::future::)?Future", m.group(0)):
            continue
        line = raw.count("\n", 0, m.start())
        doc = []
        i = line - 1
        while i >= 0:
            s = lines[i].strip()
            if s.startswith("///"):
                doc.append(s[3:])
            elif s.startswith("#[") or s == "":
                if s == "" and doc:
                    break
            else:
                break
            i -= 1
        text = " ".join(d.strip() for d in reversed(doc))
        if not re.search(r"\b(Cancel-safe|Not cancel-safe)\b", text):
            faults.append(f"{where(m.start())}: `{m.group(2)}` is async and its doc does not say "
                          "whether it is cancel-safe (\"Cancel-safe: …\" or \"Not cancel-safe: …\")")
    return faults


def self_test() -> int:
    """Runs the check on a fake tree with one fault of each kind, then on the same tree
    corrected: the first must name every fault, the second none."""
    clean = {
        "lib.rs": "mod address;\nmod error;\nmod wire;\nmod transport;\nmod runtime;\n"
                  "mod patterns;\npub use patterns::Publisher;\npub use error::Error;\n",
        "error.rs": "pub struct Error;\n",
        "address.rs": "use crate::error::Error;\n",
        "wire/mod.rs": "use crate::error::Error;\npub struct Code;\n",
        "transport/mod.rs": "//! uses crate::runtime::Pool in a comment only\n"
                            "use crate::wire::Code;\nuse super::wire;\n"
                            "pub(crate) mod quic;\n"
                            "/// Cancel-safe: nothing is taken until it returns.\n"
                            "pub async fn read() {}\n"
                            "const S: &str = \"crate::patterns::Publisher\";\n"
                            "#[cfg(test)]\nmod tests {\n    use crate::runtime::Pool;\n"
                            "    fn t() { let _ = quinn::VarInt::from_u32(0); }\n}\n",
        "transport/quic.rs": "fn f(_: quinn::Endpoint) {}\nuse super::super::wire::Code;\n",
        "runtime/mod.rs": "use crate::transport::read;\npub struct Pool;\n",
        "patterns/mod.rs": "use crate::runtime::Pool;\npub struct Publisher;\n"
                           "/// Not cancel-safe: a dropped send leaves a prefix written.\n"
                           "pub fn send(&self) -> impl std::future::Future<Output = ()> + '_ "
                           "{ async {} }\n",
    }
    faulty = dict(clean)
    faulty["transport/mod.rs"] = clean["transport/mod.rs"].replace(
        "use super::wire;\n", "use super::wire;\nuse crate::runtime::Pool;\n")
    faulty["wire/mod.rs"] += "fn f(_: crate::Publisher) {}\n"
    faulty["transport/quic.rs"] += "use super::super::patterns::{Publisher, self};\n"
    faulty["runtime/mod.rs"] += "fn g(_: quinn::Connection) {}\n"
    faulty["error.rs"] += "use crate::transport::read;\n"
    faulty["patterns/mod.rs"] += ("/// Sends.\npub async fn send_now() {}\n"
                                  "pub trait Receiving {\n    /// The next one.\n"
                                  "    fn recv(&self) -> impl Future<Output = ()>;\n}\n")
    faulty["stray.rs"] = "pub fn stray() {}\n"
    expected = [
        "core/src/transport/mod.rs:4: transport imports `crate::runtime::Pool` (runtime)",
        "core/src/wire/mod.rs:3: wire imports `crate::Publisher` (patterns)",
        "core/src/transport/quic.rs:3: transport imports `super::super::patterns::Publisher` "
        "(patterns)",
        "core/src/transport/quic.rs:3: transport imports `super::super::patterns` (patterns)",
        "core/src/runtime/mod.rs:3: quinn is named outside transport/",
        "core/src/error.rs:2: the foundation module error.rs names `crate::transport::read`",
        "core/src/patterns/mod.rs:6: `send_now` is async and its doc does not say",
        "core/src/patterns/mod.rs:9: `recv` is async and its doc does not say",
        "core/src/stray.rs:1: a file outside the layers",
    ]
    ok = True
    for name, tree, want in (("clean", clean, []), ("faulty", faulty, expected)):
        with tempfile.TemporaryDirectory() as d:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write(text)
            got = check(d)
        missing = [w for w in want if not any(g.startswith(w) for g in got)]
        extra = [g for g in got if not any(g.startswith(w) for w in want)]
        for line in got:
            print(f"  {name}: {line}")
        if missing or extra:
            ok = False
            for w in missing:
                print(f"self-test ({name}): expected a fault starting `{w}`", file=sys.stderr)
            for g in extra:
                print(f"self-test ({name}): unexpected fault `{g}`", file=sys.stderr)
    print("self-test: " + ("every fault found, the clean tree passes" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if "--self-test" in argv:
        return self_test()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src")
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    faults = check(root)
    for line in faults:
        print(line)
    if faults:
        print(f"{len(faults)} fault(s) in the layers of {root} (docs/ARCHITECTURE.md §1)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
