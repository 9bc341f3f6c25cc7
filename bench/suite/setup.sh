#!/usr/bin/env bash
# Installs what the benchmark suite runs, from the package registries; safe to run again (what is
# already there is kept, and cargo, maturin and npm rebuild only what changed).
#
#   bench/suite/setup.sh                  everything: venv, npm packages, the Rust workers, the
#                                         weida wheel and the weida Node addon
#   bench/suite/setup.sh --reuse-builds   the same, but installs the wheel ./dev python built
#                                         ($TARGET/wheels-py) and keeps the Node addon ./dev node
#                                         built, when they are there (./dev test uses this)
#
# Where: the venv is ${CARGO_TARGET_DIR:-target}/bench-venv, the wheel goes to
# $TARGET/wheels-bench, zeromq.js to bench/suite/node/node_modules.
set -euo pipefail
cd "$(dirname "$0")/../.."

reuse=0
case "${1:-}" in
    --reuse-builds) reuse=1 ;;
    "") ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
esac

TARGET="${CARGO_TARGET_DIR:-target}"
case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
VENV="$TARGET/bench-venv"
step() { printf '\n==> bench-suite setup: %s\n' "$*"; }

step "python venv ($VENV) with pyzmq, pynng, eclipse-zenoh, matplotlib"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
fi
"$VENV/bin/python" -m pip install -q -r bench/suite/requirements.txt

step "zeromq.js (npm ci in bench/suite/node)"
# npm ci empties node_modules first; skip it when the installed tree is from this lock file.
stamp=bench/suite/node/node_modules/.suite-lock
if ! cmp -s bench/suite/node/package-lock.json "$stamp" 2>/dev/null; then
    (cd bench/suite/node && npm ci --no-audit --no-fund)
    cp bench/suite/node/package-lock.json "$stamp"
fi

step "the Rust workers (cargo build --release -p weida-bench)"
cargo build -q --release -p weida-bench

step "weida's Python wheel"
wheels=("$TARGET"/wheels-py/weida-*.whl)
if [ "$reuse" = 1 ] && [ -f "${wheels[0]}" ]; then
    echo "reusing ${wheels[0]}"
else
    rm -rf "$TARGET/wheels-bench"
    (cd python && "$VENV/bin/maturin" build --release --quiet -o "$TARGET/wheels-bench")
    wheels=("$TARGET"/wheels-bench/weida-*.whl)
fi
"$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "${wheels[0]}"

step "weida's Node addon (node/: npm ci, npm run build)"
if [ "$reuse" = 1 ] && [ -f node/dist/index.js ] && ls node/*.node >/dev/null 2>&1; then
    echo "reusing node/dist and $(ls node/*.node)"
else
    (cd node && npm ci --no-audit --no-fund && npm run --silent build)
fi
echo "bench-suite setup: ready ($VENV/bin/python bench/suite/run.py)"
