#!/bin/sh
# The Kotlin conformance agent (conformance/agents.json runs this from the repository root):
# one `java -cp` over what `./dev kotlin` built, the classes Maven compiled with the tests and
# the jars it wrote to kotlin-build/conformance.classpath, with the release libweida_uniffi.so.
# exec, so the runner's SIGKILL reaches the JVM itself.
T="${CARGO_TARGET_DIR:-target}"
B="$T/kotlin-build"
CLASSES="$B/classes:$B/test-classes"
set -- # the archive's JVM option, if any (sh has no arrays; the script takes no arguments)
# WEIDA_KOTLIN_AGENT_CDS: a folder holding those classes as two jars and the class-data archive
# of an agent that ran a cell (./dev's conformance_matrix makes it, from the classes of that
# build, before the matrix). Loading the classes from the archive takes about 0.17 s of CPU off
# each of the matrix's six hundred agent starts. The JDK archives classes from jars only, and
# refuses (a warning, then it runs without) an archive whose jars changed since.
if [ -n "${WEIDA_KOTLIN_AGENT_CDS:-}" ]; then
    CLASSES="$WEIDA_KOTLIN_AGENT_CDS/classes.jar:$WEIDA_KOTLIN_AGENT_CDS/test-classes.jar"
    if [ -n "${WEIDA_KOTLIN_AGENT_CDS_DUMP:-}" ]; then
        set -- "-XX:ArchiveClassesAtExit=$WEIDA_KOTLIN_AGENT_CDS/agent.jsa"
    else
        set -- "-XX:SharedArchiveFile=$WEIDA_KOTLIN_AGENT_CDS/agent.jsa"
    fi
fi
# A short-lived JVM: the client compiler alone and the serial collector start fastest, and a
# matrix starts hundreds of agents. The JVM's own warnings go to stderr (the agent's log): its
# stdout is the control protocol's, where a line that is not JSON fails the cell.
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -Xlog:disable \
    -Xlog:all=warning:stderr "$@" \
    -Djna.library.path="$T/release" \
    -cp "$CLASSES:$(cat "$B/conformance.classpath")" \
    weida.conformance.MainKt
