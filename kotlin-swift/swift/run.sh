#!/usr/bin/env bash
# The Swift package's tests (kotlin-swift/README.md, "Swift"): `swift test` in a Debian trixie
# chroot, whose `swiftlang` 6.0.3 runs the library cargo built on the host.
#
#   kotlin-swift/swift/run.sh [path/to/libweida_uniffi.so [swift test options, e.g. --filter X]]
#   kotlin-swift/swift/run.sh --setup      only makes the chroot (nothing is built or run)
#   kotlin-swift/swift/run.sh --agent [path/to/libweida_uniffi.so]
#                                          builds the conformance agent instead (release, linked
#                                          against the release library by default; agent.sh runs it)
#   kotlin-swift/swift/run.sh --bench [path/to/libweida_uniffi.so]
#                                          the same for the benchmark suite's worker
#                                          (bench-worker.sh runs it; bench/README.md, "The Swift rows")
#
# ./dev swift builds the library, checks the generated files for drift, then runs this. Without
# an argument it takes the newer of the cargo target dir's debug and release builds.
#
# The chroot is made once, under ${CARGO_TARGET_DIR:-target}/swift-root (debootstrap, then
# `swiftlang libc6-dev` from trixie: about 540 MB to download, 2.6 GB on disk, a minute or two),
# and reused. Each run bind-mounts /proc, /sys, /dev, /dev/pts and kotlin-swift/ into it, copies
# the library to /opt/weida/lib and the Rust example peer (CrossTests; from WEIDA_PEER_BIN, or
# the cargo target dir's debug/examples/peer) to /opt/weida/bin, runs `swift test --disable-swift-testing` (its build in
# swift-root/build, kept for the next run), prints `swift: N passed, M failed`, and unmounts
# whatever it mounted however it ends. Needs root (chroot, mount; run by a user with
# password-less sudo, it runs itself again through sudo) and, the first time, the network; installs debootstrap with apt-get where it is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
root="$target/swift-root"
mirror="${WEIDA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

args=("$@") # as given, for the sudo below
setup_only=""
agent=""  # the release product to build instead of running the tests
case "${1:-}" in
    --setup) setup_only=1 ;;
    --agent) agent=WeidaConformanceAgent; shift ;;
    --bench) agent=WeidaBenchWorker; shift ;;
esac
lib="${1:-}"
[ $# = 0 ] || shift
if [ -n "$setup_only" ]; then
    :
elif [ -n "$agent" ] && [ -z "$lib" ]; then
    # The library the agent runs with (agent.sh), the one the other agents' release builds match;
    # the benchmark worker's too (bench-worker.sh), the one the suite's other rows load.
    lib="$target/release/libweida_uniffi.so"
elif [ -z "$lib" ]; then
    for l in "$target/debug/libweida_uniffi.so" "$target/release/libweida_uniffi.so"; do
        if [ -f "$l" ] && { [ -z "$lib" ] || [ "$l" -nt "$lib" ]; }; then lib="$l"; fi
    done
fi
[ -n "$setup_only" ] || { [ -n "$lib" ] && [ -f "$lib" ]; } || {
    echo "no libweida_uniffi.so (cargo build -p weida-uniffi, or ./dev swift)" >&2
    exit 1
}
# Root makes and enters the chroot. A user with password-less sudo (a GitHub-hosted runner, whose
# workflow runs ./dev conformance as a user) gets it through sudo, the environment kept.
if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then
        exec sudo -n --preserve-env "$0" "${args[@]}"
    fi
    echo "run.sh needs root (or password-less sudo): it makes and enters a chroot" >&2
    exit 1
fi

# What this run mounted, innermost last; the trap unmounts it in reverse, so an rm -rf of the
# chroot can never reach the host's /dev, /proc or /sys through a mount left behind.
mounted=()
unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
    done
    mounted=()
}
trap unmount_all EXIT
trap 'unmount_all; exit 130' INT TERM

mount_bind() { # source, mount point inside the chroot
    mkdir -p "$root$2"
    if mountpoint -q "$root$2"; then return; fi
    mount --bind "$1" "$root$2"
    mounted+=("$root$2")
}

# Nothing may be mounted under the chroot before it is deleted.
still_mounted() { grep -q " $root/" /proc/self/mounts; }

make_root() {
    if [ -f "$root/.weida-ready" ]; then return; fi
    command -v debootstrap >/dev/null 2>&1 || {
        apt-get update -q && apt-get install -y -q --no-install-recommends debootstrap
    }
    if [ -e "$root" ]; then
        # A chroot left half-made by an interrupted run: start again.
        if still_mounted; then
            echo "$root has something mounted in it; unmount it before it is remade" >&2
            exit 1
        fi
        rm -rf "$root"
    fi
    echo "swift: making the trixie chroot in $root (debootstrap, then swiftlang libc6-dev)"
    debootstrap --variant=minbase trixie "$root" "$mirror" >"$target/swift-debootstrap.log" 2>&1 || {
        tail -20 "$target/swift-debootstrap.log" >&2
        exit 1
    }
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mount_bind /proc /proc
    mount_bind /sys /sys
    mount_bind /dev /dev
    mount_bind /dev/pts /dev/pts
    # libc6-dev is required: swiftlang only recommends it, and without it the C standard library
    # is not found.
    chroot "$root" env DEBIAN_FRONTEND=noninteractive bash -c \
        'apt-get update -q && apt-get install -y -q --no-install-recommends swiftlang libc6-dev && apt-get clean' \
        >"$target/swift-apt.log" 2>&1 || {
        tail -20 "$target/swift-apt.log" >&2
        exit 1
    }
    touch "$root/.weida-ready"
}

make_root
if [ -n "$setup_only" ]; then exit 0; fi
mount_bind /proc /proc
mount_bind /sys /sys
mount_bind /dev /dev
mount_bind /dev/pts /dev/pts
mount_bind "$repo/kotlin-swift" /src/kotlin-swift
mkdir -p "$root/opt/weida/lib" "$root/opt/weida/bin" "$root/tmp"
cp "$lib" "$root/opt/weida/lib/libweida_uniffi.so"

if [ -n "$agent" ]; then
    # The conformance agent or the benchmark worker: a release build (the matrix's 2 MiB bodies
    # are hashed in Swift; the worker is measured), in the same scratch path as the tests,
    # linked against the library by name only: agent.sh and bench-worker.sh give the loader the
    # library's folder on the host.
    chroot "$root" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        TMPDIR=/tmp LANG=C.UTF-8 bash -c '
            cd /src/kotlin-swift/swift &&
            swift build -c release --product "$1" --scratch-path /build \
                -Xlinker -L/opt/weida/lib' swift-build "$agent"
    echo "swift: $root/build/release/$agent is built"
    exit 0
fi

# The Rust peer CrossTests talks to (cargo build -p weida --example peer: the dev profile's,
# whichever library the tests load).
peer="${WEIDA_PEER_BIN:-$target/debug/examples/peer}"
rm -f "$root/opt/weida/bin/peer"
if [ -x "$peer" ]; then cp "$peer" "$root/opt/weida/bin/peer"; fi

log="$target/swift-test.log"
status=0
# Swift's task pool as an app gets it, several threads at once. It was held to one thread
# (LIBDISPATCH_COOPERATIVE_POOL_STRICT=1) while a flaky failure with the wide pool was
# unexplained; its three causes were core races, the last fixed 2026-12-04 (kotlin-swift/README.md,
# "Known gaps"). WEIDA_SWIFT_POOL=one holds it to one thread again, to tell a race from a bug.
strict=0
[ "${WEIDA_SWIFT_POOL:-}" = one ] && strict=1
chroot "$root" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    TMPDIR=/tmp LANG=C.UTF-8 WEIDA_PEER_BIN=/opt/weida/bin/peer \
    LIBDISPATCH_COOPERATIVE_POOL_STRICT=$strict bash -c '
        cd /src/kotlin-swift/swift &&
        swift test --disable-swift-testing --scratch-path /build \
            -Xlinker -L/opt/weida/lib -Xlinker -rpath -Xlinker /opt/weida/lib "$@"' swift-test "$@" 2>&1 \
    | tee "$log" || status=$?

# XCTest's last "Executed N tests, with M failures" line is the whole run's.
summary="$(grep -E '^[[:space:]]*Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -1 || true)"
if [ -n "$summary" ]; then
    n="$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$summary")"
    f="$(sed -E 's/.*with ([0-9]+) failures?.*/\1/' <<<"$summary")"
    # A test counts as failed once, however many of its assertions failed.
    failed="$(grep -cE "^Test Case '.*' failed" "$log" || true)"
    echo "swift: $((n - failed)) passed, $failed failed"
    [ "$f" = 0 ] || status=1
else
    echo "swift: 0 passed, 0 failed (the package did not build: see above, or $log)"
    status=1
fi
exit "$status"
