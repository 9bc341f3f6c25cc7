#!/bin/sh
# The Kotlin conformance agent (conformance/agents.json runs this from the repository root):
# one `java -cp` over what `./dev kotlin` built, the classes Maven compiled with the tests and
# the jars it wrote to kotlin-build/conformance.classpath, with the release libweida_uniffi.so.
# exec, so the runner's SIGKILL reaches the JVM itself.
T="${CARGO_TARGET_DIR:-target}"
B="$T/kotlin-build"
# A short-lived JVM: the client compiler alone and the serial collector start fastest, and a
# matrix starts hundreds of agents.
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto \
    -Djna.library.path="$T/release" \
    -cp "$B/classes:$B/test-classes:$(cat "$B/conformance.classpath")" \
    weida.conformance.MainKt
