#!/usr/bin/env bash
# Builds every package a user installs and installs each as a user would, in a folder outside the
# repository (mktemp -d), then runs the READMEs' quick start and a Pub/Sub round trip there
# (docs/PACKAGING.md says what each part checks and why).
#
#   packaging/check.sh [--reuse] [crates] [python] [npm]     (no part named: all three)
#
#   crates  cargo publish --dry-run of weida and weida-cli; their .crate files, unpacked outside
#           the repository: the docs build as docs.rs builds them, the doctests and examples
#           compile, the README's programs (its example files) run, and weida-cli builds and serves
#   python  the sdist, built by pip in a clean venv (maturin and the Rust crates from the sdist
#           alone), the abi3 wheel through `twine check`, each installed in a clean venv and run
#   npm     the `weida` package and one package per target built here (node/package.json's
#           napi.targets), packed and installed into an empty folder, then run there
#
# --reuse takes the wheel and the Node addon that ./dev test's python and node steps built
# instead of building them again (./dev test passes it); the sdist is always built from source.
# The packages land in target/packages/ (crates/, python/, npm/). Needs cargo, python3 and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
TARGET="${CARGO_TARGET_DIR:-target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
OUT="$TARGET/packages"

# What every manifest must agree with: the workspace's version and repository URL (the latter a
# placeholder until the project has a public home: docs/PACKAGING.md).
workspace() {
    python3 -c 'import sys, tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"][sys.argv[1]])' "$1"
}
VERSION="$(workspace version)"

REUSE=0
PARTS=()
for arg in "$@"; do
    case "$arg" in
        --reuse) REUSE=1 ;;
        crates | python | npm) PARTS+=("$arg") ;;
        *) sed -n '2,18p' "$0" >&2; exit 2 ;;
    esac
done
[ ${#PARTS[@]} -gt 0 ] || PARTS=(crates python npm)

# Nothing of the repository around the installs: each part works in a folder of its own here.
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

step() { printf '\n==> packaging: %s\n' "$*"; }

# A local run may check work in progress; CI packages only what is committed.
DIRTY=()
[ -n "${CI:-}" ] || DIRTY=(--allow-dirty)

check_crates() {
    # One target directory for every build below, kept between runs: the unpacked crates build
    # with the default dev profile (without debug info, which nothing here reads).
    export CARGO_TARGET_DIR="$OUT/cargo-target" CARGO_PROFILE_DEV_DEBUG=false
    step "cargo publish --dry-run --no-verify -p weida -p weida-cli (what crates.io checks of both; the steps below build each as packaged)"
    # cargo packages weida-cli against the packaged weida through a local registry, and takes a
    # registry crate of a given version for immutable: it unpacks it once, under
    # $CARGO_HOME/registry/src/-<hash>/, and reuses it. Without this, the weida an earlier run
    # packaged could stand in for this one (seen here when cargo still verified: weida-cli
    # checked against a weida without a newer ErrorCode variant).
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/weida-"$VERSION" \
        "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/weida-cli-"$VERSION"
    [ ! -d "$CARGO_TARGET_DIR" ] || cargo clean -q -p weida -p weida-cli
    # --no-verify: cargo's own verification compiles each packaged crate where it packed it, and
    # the steps below compile them again where they are unpacked, as a user's build would (docs,
    # doctests, examples, the README's programs, weida-cli against the packaged weida); the
    # verification added about a minute of CI's time (docs/PACKAGING.md: the one thing only it
    # checked).
    cargo publish --dry-run --no-verify --locked "${DIRTY[@]}" -p weida -p weida-cli
    cargo package --no-verify --locked "${DIRTY[@]}" -p weida -p weida-cli
    rm -rf "$OUT/crates" && mkdir -p "$OUT/crates"
    cp "$CARGO_TARGET_DIR"/package/weida-$VERSION.crate "$CARGO_TARGET_DIR"/package/weida-cli-$VERSION.crate "$OUT/crates/"

    local dir="$SCRATCH/crates"
    mkdir -p "$dir"
    for c in "$OUT"/crates/*.crate; do tar -xzf "$c" -C "$dir"; done
    (
        cd "$dir/weida-$VERSION"
        step "crates: the docs as docs.rs builds them, from the unpacked crate (warnings are errors)"
        RUSTDOCFLAGS="--cfg docsrs -D warnings" cargo doc -q --locked --no-deps
        step "crates: the doctests and the examples, from the unpacked crate"
        cargo test -q --locked --doc
        cargo build -q --locked --examples
    )
    step "crates: the crate's README: each program is an example file, built against the unpacked crate and run"
    # Each block is marked with the example file it is (`<!-- example: core/examples/X.rs -->`),
    # and must be the unpacked crate's examples/X.rs to the byte; each builds as a program of a
    # project that depends on the unpacked crate, with the crate's Cargo.lock, as a user's would.
    mkdir -p "$dir/readme/src/bin"
    cat >"$dir/readme/Cargo.toml" <<TOML
[package]
name = "readme-blocks"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
weida = { path = "../weida-$VERSION" }
tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
TOML
    cp "$dir/weida-$VERSION/Cargo.lock" "$dir/readme/"
    python3 - "$dir/weida-$VERSION" "$dir/readme/src/bin" <<'PY'
import re, sys
crate, bins = sys.argv[1:]
marked = re.findall(r"^<!-- example: core/(examples/\w+\.rs) -->\n```rust\n(.*?)^```$",
                    open(f"{crate}/README.md").read(), re.M | re.S)
programs = re.findall(r"^```rust$", open(f"{crate}/README.md").read(), re.M)
assert marked and len(marked) == len(programs), "a Rust block of the crate's README is no example file"
for path, block in marked:
    assert open(f"{crate}/{path}").read() == block, f"the README's block marked {path} is not that file"
    open(f"{bins}/{path.rsplit('/', 1)[1]}", "w").write(block)
print(f"{len(marked)} blocks, each its example file: {', '.join(p for p, _ in marked)}")
PY
    (cd "$dir/readme" && cargo build -q)
    run_quickstart "$dir" "$CARGO_TARGET_DIR/debug/echo_service" "$CARGO_TARGET_DIR/debug/echo_client"
    echo "-- pubsub"
    (cd "$dir" && timeout 60 "$CARGO_TARGET_DIR/debug/pubsub") | tee "$dir/pubsub.out"
    grep -q '^1 copy: 42000$' "$dir/pubsub.out"
    step "crates: weida-cli from its unpacked crate, against the unpacked weida; a request over QUIC"
    # Not --locked: the patch moves weida's entry in the crate's lock file; the rest stays.
    (cd "$dir/weida-cli-$VERSION" &&
        cargo build -q --config "patch.crates-io.weida.path='$dir/weida-$VERSION'")
    cli_roundtrip "$CARGO_TARGET_DIR/debug/weida"
    unset CARGO_TARGET_DIR CARGO_PROFILE_DEV_DEBUG
}

# The first weida:// address a serving process (PID) wrote to LOG, within 30 s; else the process
# is stopped and the check fails with what it wrote.
printed_address() {
    local log="$1" pid="$2" address=""
    for _ in $(seq 300); do
        address="$(grep -m1 -o 'weida://[^ ]*' "$log" || true)"
        [ -n "$address" ] && { echo "$address"; return; }
        sleep 0.1
    done
    cat "$log" >&2
    kill "$pid"
    echo "no address printed within 30 s" >&2
    exit 1
}

# `weida rep` answers with a command, `weida req` dials the address it printed (pinned key).
cli_roundtrip() {
    local weida="$1" log="$SCRATCH/rep.log" address="" reply
    "$weida" --version
    "$weida" rep weida://127.0.0.1:0/upper --exec 'tr a-z A-Z' >"$log" 2>&1 &
    local rep=$!
    address="$(printed_address "$log" "$rep")"
    reply="$(timeout 30 "$weida" req "$address" hello)"
    kill "$rep"; wait "$rep" 2>/dev/null || true
    [ "$reply" = HELLO ] || { echo "weida req got '$reply', not HELLO" >&2; exit 1; }
    echo "weida req $address hello -> $reply"
}


# The quick start the READMEs print (README.md, python/README.md, node/README.md and the crate's
# core/README.md mark each program `<!-- example: FILE -->`): a service and its client,
# echo_service and echo_client, in each language. Their paths, failing if a README no longer
# marks them, so a renamed quick start is not left unchecked.
quickstart_files() {
    local dir="$1" ext="$2" f
    for f in echo_service echo_client; do
        grep -qx -- "<!-- example: $dir/$f.$ext -->" README.md ./*/README.md || {
            echo "no README marks $dir/$f.$ext as its quick start" >&2
            exit 1
        }
        echo "$dir/$f.$ext"
    done
}

# The quick start run as a reader runs it, in DIR (a fresh folder, where the service keeps its
# key): the service, bound to a free port, in the background, its first line the address that
# pins its key; then the client with that address, which must exit 0 having printed the echo.
run_quickstart() {
    local dir="$1" service="$2" client="$3" log="$1/service.out" address="" out pid
    # shellcheck disable=SC2086 # a command and its arguments
    (cd "$dir" && exec $service weida://127.0.0.1:0 >"$log" 2>&1) &
    pid=$!
    address="$(printed_address "$log" "$pid")"
    # shellcheck disable=SC2086
    out="$(cd "$dir" && timeout 60 $client "$address")" || { kill "$pid"; echo "$client failed" >&2; exit 1; }
    kill "$pid"; wait "$pid" 2>/dev/null || true
    case "$out" in
        *hello*) echo "-- quick start: ${service##*/} printed $address; ${client##*/} got: $out" ;;
        *) echo "${client##*/} printed '$out', not the echo of hello" >&2; exit 1 ;;
    esac
}

check_python() {
    local tools="$TARGET/packaging-venv" dist="$OUT/python" run="$SCRATCH/python"
    [ -x "$tools/bin/twine" ] || { python3 -m venv "$tools" && "$tools/bin/python" -m pip install -q --upgrade pip; }
    "$tools/bin/python" -m pip install -q "maturin>=1.9.4,<2" twine
    rm -rf "$dist" && mkdir -p "$dist" "$run"

    step "python: the sdist (maturin sdist): the binding's crate with weida and weida-ffi, Cargo.lock"
    (cd python && "$tools/bin/maturin" sdist -o "$dist")
    if [ "$REUSE" = 1 ] && compgen -G "$TARGET/wheels-py/weida-*.whl" >/dev/null; then
        step "python: the abi3 wheel ./dev python built (maturin build --locked --release)"
        cp "$TARGET"/wheels-py/weida-*.whl "$dist/"
    else
        step "python: the abi3 wheel (maturin build --locked --release)"
        (cd python && "$tools/bin/maturin" build --locked --release --quiet -o "$dist")
    fi
    step "python: twine check --strict, and what a user looks for in the metadata"
    "$tools/bin/twine" check --strict "$dist"/*
    python3 - "$dist" "$(workspace repository)" "$VERSION" <<'PY'
import glob, sys, tarfile, zipfile
dist, repository, version = sys.argv[1:]
wheels, sdists = glob.glob(f"{dist}/weida-{version}-*.whl"), glob.glob(f"{dist}/weida-{version}.tar.gz")
if len(wheels) != 1 or len(sdists) != 1:
    sys.exit(f"packaging: python: no wheel and sdist of weida {version} (Cargo.toml's) in {dist}")
(wheel,), (sdist,) = wheels, sdists
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    so = next(n for n in names if n.endswith(".so"))
    so_size = z.getinfo(so).file_size
fields = [line.split(": ", 1) for line in meta.split("\n\n", 1)[0].splitlines()]
def values(key): return [v for k, v in fields if k == key]
problems = []
for key in ("Summary", "License-Expression", "Requires-Python", "Keywords", "Description-Content-Type"):
    if not values(key): problems.append(f"no {key}")
if sorted(values("License-File")) != ["LICENSE-APACHE", "LICENSE-MIT"]: problems.append(f"License-File: {values('License-File')}")
if "Pub/Sub" not in "".join(values("Summary")): problems.append("the summary omits Pub/Sub")
for classifier in ("Typing :: Typed", "Framework :: AsyncIO", "Development Status :: 3 - Alpha"):
    if classifier not in values("Classifier"): problems.append(f"no classifier {classifier}")
if f"Repository, {repository}" not in values("Project-URL"): problems.append(f"no Project-URL Repository, {repository}")
for needed in ("weida/py.typed", "weida/_weida.pyi", "weida/__init__.py"):
    if needed not in names: problems.append(f"the wheel lacks {needed}")
for lic in ("LICENSE-APACHE", "LICENSE-MIT"):
    if not any(n.endswith(f".dist-info/licenses/{lic}") for n in names): problems.append(f"the wheel lacks {lic}")
if so_size > 20 * 2**20: problems.append(f"{so} is {so_size >> 20} MiB: not stripped ([tool.maturin] strip)")
with tarfile.open(sdist) as t:
    members = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
for needed in ("Cargo.lock", "Cargo.toml", "pyproject.toml", "core/Cargo.toml", "core/src/lib.rs",
               "core/ffi/Cargo.toml", "core/ffi/src/lib.rs", "python/Cargo.toml", "weida/py.typed",
               "LICENSE-APACHE", "LICENSE-MIT"):
    if needed not in members: problems.append(f"the sdist lacks {needed}")
for p in problems: print(f"packaging: python: {p}", file=sys.stderr)
if problems: sys.exit(1)
print(f"{wheel.rsplit('/', 1)[1]}: {len(values('Classifier'))} classifiers, {so} {so_size >> 20} MiB; sdist: {len(members)} files")
PY

    local examples=()
    mapfile -t examples < <(quickstart_files python/examples py)
    cp "${examples[@]}" packaging/roundtrip.py "$run/"
    local venv
    for kind in wheel sdist; do
        venv="$SCRATCH/venv-$kind"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip
        if [ "$kind" = wheel ]; then
            step "python: the wheel into a clean venv, outside the repository"
            "$venv/bin/python" -m pip install -q "$dist/weida-$VERSION"-*.whl
        else
            # pip builds the sdist as a user's would: maturin from PyPI in an isolated build
            # environment, cargo on PATH, the crates from the sdist. Their crates.io dependencies
            # are compiled once per machine: the cargo target directory the wheel's build filled
            # holds them (the same versions, by the sdist's Cargo.lock); the sdist's own crates
            # are compiled from its sources, whose paths are new.
            step "python: the sdist, built by pip install in a clean venv outside the repository"
            (cd "$run" && CARGO_TARGET_DIR="$TARGET" "$venv/bin/python" -m pip install -q "$dist/weida-$VERSION.tar.gz")
        fi
        (
            cd "$run"
            "$venv/bin/python" - "$venv" <<'PY'
import sys, weida
assert weida.__file__.startswith(sys.argv[1]), f"weida imported from {weida.__file__}"
PY
            run_quickstart "$PWD" "$venv/bin/python echo_service.py" "$venv/bin/python echo_client.py"
            echo "-- python roundtrip.py"
            timeout 60 "$venv/bin/python" roundtrip.py
            if [ "$kind" = wheel ]; then
                step "python: mypy --strict on the quick start against the installed package (py.typed)"
                "$venv/bin/python" -m pip install -q mypy
                "$venv/bin/mypy" --strict --no-incremental "${examples[@]##*/}" roundtrip.py
            fi
        )
    done
}

check_npm() {
    local napi="$ROOT/node/node_modules/.bin/napi" stage="$OUT/npm-stage" dist="$OUT/npm" app="$SCRATCH/npm"
    if [ "$REUSE" = 0 ] || [ ! -d node/dist ] || [ ! -x "$napi" ]; then
        step "npm: npm ci, napi build --platform --release, tsc (node/)"
        (cd node && npm ci --no-audit --no-fund && npm run --silent build)
    fi
    rm -rf "$stage" "$dist" && mkdir -p "$stage/weida/dist" "$stage/addons" "$dist" "$app"

    step "npm: the packages: weida, and one per target of napi.targets (napi create-npm-dirs, napi artifacts)"
    cp node/package.json node/README.md node/native.cjs node/native.d.cts LICENSE LICENSE-APACHE LICENSE-MIT "$stage/weida/"
    cp node/dist/*.js node/dist/*.d.ts "$stage/weida/dist/"
    (cd "$stage/weida" && "$napi" create-npm-dirs --npm-dir npm)
    local platform addon
    for platform in "$stage"/weida/npm/*/; do
        addon="$(node -p 'require(process.argv[1]).main' "$platform/package.json")"
        [ -f "node/$addon" ] || { echo "napi.targets names $(basename "$platform") but node/$addon was not built here" >&2; exit 1; }
        # The release profile keeps debug info for profiling (55 MB); a user gets it stripped.
        strip -o "$stage/addons/$addon" "node/$addon"
        cp LICENSE LICENSE-APACHE LICENSE-MIT "$platform"
    done
    # It puts each addon in its platform package, and a copy beside the loader for a local run
    # that the `files` list leaves out of the weida package (checked below).
    "$napi" artifacts --cwd "$stage/weida" --output-dir ../addons --npm-dir npm
    # What `napi pre-publish` writes at publish time: `weida` depends on every platform package,
    # optionally, at its own version, and npm installs the one whose os, cpu and libc match.
    node - "$stage/weida" "$(workspace repository)" "$VERSION" <<'JS'
const fs = require('node:fs')
const path = require('node:path')
const [root, repository, version] = process.argv.slice(2)
const file = path.join(root, 'package.json')
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'))
if (pkg.repository.url !== repository) throw new Error(`node/package.json names ${pkg.repository.url}, Cargo.toml ${repository}`)
if (pkg.version !== version) throw new Error(`node/package.json is version ${pkg.version}, Cargo.toml ${version}`)
pkg.optionalDependencies = {}
for (const dir of fs.readdirSync(path.join(root, 'npm'))) {
  const platform = JSON.parse(fs.readFileSync(path.join(root, 'npm', dir, 'package.json'), 'utf8'))
  platform.files.push('LICENSE', 'LICENSE-APACHE', 'LICENSE-MIT')
  fs.writeFileSync(path.join(root, 'npm', dir, 'package.json'), JSON.stringify(platform, null, 2) + '\n')
  pkg.optionalDependencies[platform.name] = pkg.version
}
delete pkg.scripts.prepublishOnly
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n')
console.log(`weida@${pkg.version} optionalDependencies: ${JSON.stringify(pkg.optionalDependencies)}`)
JS
    for p in "$stage"/weida/npm/*/ "$stage/weida"; do
        (cd "$p" && npm pack --silent --pack-destination "$dist" >/dev/null)
    done
    ls -l "$dist"
    if tar -tzf "$dist/weida-$VERSION.tgz" | grep '\.node$'; then
        echo "the weida package carries an addon: the platform packages are there for that" >&2; exit 1
    fi

    step "npm: install the tarballs into an empty folder outside the repository, and run there"
    # The platform packages come in as weida's optional dependencies, as from the registry: the
    # overrides only say where each tarball is. Platform packages not built here are not on the
    # registry either; npm skips them, as it skips those of other platforms.
    cp "$dist"/*.tgz "$app/"
    node - "$app" "$VERSION" <<'JS'
const fs = require('node:fs')
const path = require('node:path')
const [app, version] = process.argv.slice(2)
const main = `weida-${version}.tgz`
const pkg = { private: true, type: 'module', dependencies: { weida: `file:${main}` }, overrides: {} }
for (const t of fs.readdirSync(app)) {
  if (t.endsWith(`-${version}.tgz`) && t !== main) pkg.overrides[t.slice(0, -`-${version}.tgz`.length)] = `file:${t}`
}
fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
JS
    local examples=() scripts=() f
    mapfile -t examples < <(quickstart_files node/examples ts)
    for f in "${examples[@]}"; do
        case "$f" in
            *.ts) f="node/dist/examples/$(basename "$f" .ts).js" ;; # as tsc compiled it
        esac
        cp "$f" "$app/"
        scripts+=("$(basename "$f")") # echo_service.js, echo_client.js
    done
    cp packaging/roundtrip.mjs "$app/"
    (
        cd "$app"
        npm install --no-audit --no-fund
        npm ls --all
        # The addon that loaded is the platform package's, under node_modules.
        node --input-type=module -e "
            import { createRequire } from 'node:module'
            const require = createRequire(import.meta.url)
            await import('weida')
            const addon = Object.keys(require.cache).find((f) => f.endsWith('.node'))
            if (!addon || !addon.startsWith(process.cwd() + '/node_modules/weida-')) throw new Error('addon: ' + addon)
            console.log('the addon loaded from ' + addon)"
        run_quickstart "$PWD" "node ${scripts[0]}" "node ${scripts[1]}"
        echo "-- node roundtrip.mjs"
        timeout 60 node roundtrip.mjs
    )
}

for part in "${PARTS[@]}"; do
    start=$SECONDS
    "check_$part"
    printf '==> packaging: %s passed in %d s\n' "$part" $((SECONDS - start))
done
