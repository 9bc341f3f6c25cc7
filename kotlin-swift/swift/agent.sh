#!/bin/sh
# The Swift conformance agent (conformance/agents.json runs this from the repository root): the
# release build `run.sh --agent` made in the trixie chroot, run on the host, not in the chroot,
# so that it shares the host's /tmp (AF_UNIX socket paths) and loopback with the other agents.
# The chroot's own dynamic loader runs it, with the chroot's Swift runtime, Foundation and C
# libraries, and the host's release libweida_uniffi.so (the one the Kotlin agent loads). exec,
# so the runner's SIGKILL reaches the agent itself.
T="${CARGO_TARGET_DIR:-target}"
R="$T/swift-root"
# Swift's task pool as it comes, as run.sh runs the tests (it was held to one thread while a
# redial hang was unexplained: a core race, fixed; kotlin-swift/README.md, "Known gaps").
exec "$R/lib64/ld-linux-x86-64.so.2" \
    --library-path "$R/usr/lib/swift/linux:$R/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu:$T/release" \
    "$R/build/release/WeidaConformanceAgent"
