#!/usr/bin/env bash
# Installs what the benchmark suite runs, from the package registries; safe to run again (what is
# already there is kept, and cargo, maturin and npm rebuild only what changed).
#
#   bench/suite/setup.sh                  everything: venv, npm packages, the Rust workers, the
#                                         weida wheel, the weida Node addon, the Kotlin
#                                         worker (when java and mvn are there) and the Swift
#                                         worker (as root, when the Swift chroot is there)
#   bench/suite/setup.sh --reuse-builds   the same, but installs the wheel ./dev python built
#                                         ($TARGET/wheels-py) and keeps the Node addon ./dev node
#                                         built, when they are there (./dev test uses this); the
#                                         Kotlin and Swift workers only if already built (the
#                                         smoke run has no Kotlin or Swift rows)
#
# Where: the venv is ${CARGO_TARGET_DIR:-target}/bench-venv, the wheel goes to
# $TARGET/wheels-bench, zeromq.js to bench/suite/node/node_modules, the Kotlin worker's classes
# and classpath to $TARGET/kotlin-bench-build (Maven's repository: $TARGET/m2, ./dev kotlin's),
# the Swift worker to $TARGET/swift-root/build/release/WeidaBenchWorker (./dev swift's chroot).
set -euo pipefail
cd "$(dirname "$0")/../.."

reuse=0
case "${1:-}" in
    --reuse-builds) reuse=1 ;;
    "") ;;
    *) sed -n '2,19p' "$0"; exit 2 ;;
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
if [ "$reuse" = 1 ] && [ -x "$TARGET/release/weida-bench" ]; then
    # ./dev test built it with its other release binaries: a build of this one package alone
    # would resolve weida's features anew and compile the core again.
    echo "reusing $TARGET/release/weida-bench"
else
    cargo build -q --release -p weida-bench
fi

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

step "weida's Kotlin worker (cargo build --release -p weida-uniffi; mvn compile in bench/suite/kotlin)"
kbuild="$TARGET/kotlin-bench-build"
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    echo "skipped: java 17+ and mvn are not installed (./dev setup); the weida-kotlin rows cannot run"
elif [ "$reuse" = 1 ]; then
    if [ -f "$kbuild/worker.classpath" ] && [ -f "$TARGET/release/libweida_uniffi.so" ]; then
        echo "reusing $kbuild"
    else
        echo "skipped: not built (bench/suite/setup.sh without --reuse-builds builds it)"
    fi
else
    cargo build -q --locked --release -p weida-uniffi
    # Maven's Kotlin compile takes a while: only when the worker, its pom or the binding's
    # sources changed since the last build.
    stamp="$kbuild/.built"
    if [ -f "$stamp" ] && [ -f "$kbuild/worker.classpath" ] && [ -z "$(find bench/suite/kotlin/pom.xml \
            bench/suite/kotlin/src kotlin-swift/kotlin/src/main -newer "$stamp" -print -quit)" ]; then
        echo "up to date: $kbuild"
    else
        (cd bench/suite/kotlin && mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$TARGET/m2" \
            -Dweida.build.directory="$kbuild" compile dependency:build-classpath \
            -DincludeScope=runtime -Dmdep.outputFile="$kbuild/worker.classpath")
        echo  # Maven's -q still prints colour resets with no newline
        touch "$stamp"
    fi
fi

step "weida's Swift worker (cargo build --release -p weida-uniffi; kotlin-swift/swift/run.sh --bench)"
sworker="$TARGET/swift-root/build/release/WeidaBenchWorker"
if [ "$reuse" = 1 ]; then
    if [ -x "$sworker" ] && [ -f "$TARGET/release/libweida_uniffi.so" ]; then
        echo "reusing $sworker"
    else
        echo "skipped: not built (bench/suite/setup.sh without --reuse-builds builds it)"
    fi
elif [ "$(id -u)" != 0 ] && ! sudo -n true 2>/dev/null; then
    echo "skipped: the Swift worker is built in a chroot, which needs root (or password-less sudo); the weida-swift rows cannot run"
elif [ ! -f "$TARGET/swift-root/.weida-ready" ]; then
    # Making the chroot downloads about 540 MB: left to ./dev swift (or run.sh --setup).
    echo "skipped: no Swift chroot in $TARGET/swift-root (./dev swift, or kotlin-swift/swift/run.sh --setup, makes it); the weida-swift rows cannot run"
else
    cargo build -q --locked --release -p weida-uniffi
    # swift build is incremental: a second run with nothing changed only links again.
    kotlin-swift/swift/run.sh --bench "$TARGET/release/libweida_uniffi.so"
fi
echo "bench-suite setup: ready ($VENV/bin/python bench/suite/run.py)"
