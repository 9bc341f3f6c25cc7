#!/bin/sh
# The benchmark suite's Swift worker (bench/README.md, "The Swift rows"; bench/suite/run.py runs
# this with the worker's options): the release build `run.sh --bench` made in the trixie chroot,
# run on the host, not in the chroot, through the chroot's own dynamic loader with the chroot's
# Swift runtime, Foundation and C libraries and the host's release libweida_uniffi.so (the one
# the Kotlin worker loads), as agent.sh runs the conformance agent. exec, so that the process
# run.py started is the worker itself: its /proc/<pid>/stat CPU readings are the worker's, and
# its SIGTERM reaches it. Paths from this script's folder, since run.py starts workers in
# bench/suite.
here="$(cd "$(dirname "$0")" && pwd)"
T="${CARGO_TARGET_DIR:-target}"
case "$T" in /*) ;; *) T="$here/../../$T" ;; esac
R="$T/swift-root"
# Swift's task pool: with both ends in this one process (`--role both`, the default), held to
# one thread at a time, so that its sending and its receiving task take turns as the other
# bindings' workers do on one event loop or one coroutine thread. As one end of two (`--role
# bind` or `dial`, the headline rows) it runs one task, and the pool as it comes, as an
# application runs it, whatever the caller's environment says (held there too, the 1 KiB
# batched rows ran about a tenth slower and some one-await rows faster:
# bench/results/2026-12-06-held-bodies, "Swift's task pool"). (It was first held for a redial
# hang with the pool as it comes, since found to be a core race and fixed: kotlin-swift/README.md,
# "Known gaps". The tests and the conformance agent run with the pool as it comes.) The role is
# read as the worker reads it: `--role X` or `--role=X`, the last one given.
role=both
prev=
for a in "$@"; do
    if [ "$prev" = --role ]; then role=$a; fi
    case $a in --role=*) role=${a#--role=} ;; esac
    prev=$a
done
if [ "$role" = both ]; then
    LIBDISPATCH_COOPERATIVE_POOL_STRICT=1
    export LIBDISPATCH_COOPERATIVE_POOL_STRICT
else
    unset LIBDISPATCH_COOPERATIVE_POOL_STRICT
fi
exec "$R/lib64/ld-linux-x86-64.so.2" \
    --library-path "$R/usr/lib/swift/linux:$R/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu:$T/release" \
    "$R/build/release/WeidaBenchWorker" "$@"
