#!/bin/bash
# A/B of two builds (release weida-bench and libweida_uniffi.so, copied into $AB/<variant>/),
# swapped into the target directory before each run, the order of the variants turned each
# round; the Kotlin and Swift workers load the library swapped in.
#   AB=/tmp/ab bench/results/2026-12-06-placement/ab.sh old new > ab.log   (from the repository's root)
# An even ROUNDS leaves the first variant swapped in; copy the build you want back after.
# Not bench/suite/ab.py: that compares two checkouts with both ends in one process and has no
# Kotlin or Swift rows; this swaps the release library into one checkout, for two-process rows.
here=$(dirname "$0")
tgt=${CARGO_TARGET_DIR:-target}
cases=${CASES:-"core:unix:1024 core:quic:1024 core:unix:64 core-multi:unix:1024 swift:unix:1024 swift:quic:1024 swift:unix:64 kotlin:unix:1024 kotlin:quic:1024 kotlin:unix:64"}
for r in $(seq "${ROUNDS:-4}"); do
    if [ $((r % 2)) = 1 ]; then order="$1 $2"; else order="$2 $1"; fi
    for v in $order; do
        cp --remove-destination "$AB/$v/weida-bench" "$AB/$v/libweida_uniffi.so" "$tgt/release/"
        for c in $cases; do
            IFS=: read -r kind tr size <<< "$c"
            python3 "$here/pair.py" "$kind" "$tr" "$size" "${SECS:-3}" | sed "s/^/$v $r /"
        done
    done
done
