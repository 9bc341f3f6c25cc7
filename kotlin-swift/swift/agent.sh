#!/bin/sh
# The Swift conformance agent (conformance/agents.json runs this from the repository root): the
# release build `run.sh --agent` made in the trixie chroot, run on the host, not in the chroot,
# so that it shares the host's /tmp (AF_UNIX socket paths) and loopback with the other agents.
# The chroot's own dynamic loader runs it, with the chroot's Swift runtime, Foundation and C
# libraries, and the host's release libweida_uniffi.so (the one the Kotlin agent loads). exec,
# so the runner's SIGKILL reaches the agent itself.
T="${CARGO_TARGET_DIR:-target}"
R="$T/swift-root"
# The task pool held to one thread, as run.sh holds it for `swift test`, for the same reason:
# the redial test that hung with several threads making first polls is not explained yet
# (kotlin-swift/README.md, "Known gaps").
LIBDISPATCH_COOPERATIVE_POOL_STRICT=1
export LIBDISPATCH_COOPERATIVE_POOL_STRICT
exec "$R/lib64/ld-linux-x86-64.so.2" \
    --library-path "$R/usr/lib/swift/linux:$R/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu:$T/release" \
    "$R/build/release/WeidaConformanceAgent"
