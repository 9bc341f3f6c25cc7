#!/bin/bash
# ROUNDS rounds (default 4) of every row below, each free to run anywhere and each with its
# receiver held to CPU 0 and its sender to CPU 1; the order of the two turned each round.
#   bench/results/2026-12-06-placement/rounds.sh > rounds.log     (from the repository's root)
here=$(dirname "$0")
for r in $(seq "${ROUNDS:-4}"); do
    for kind in core core-multi swift kotlin; do
        for tr in unix quic; do
            for size in ${SIZES:-1024}; do
                if [ $((r % 2)) = 1 ]; then order="any held"; else order="held any"; fi
                for o in $order; do
                    if [ $o = held ]; then
                        BIND_CPUS=0 DIAL_CPUS=1 python3 "$here/pair.py" $kind $tr $size "${SECS:-3}"
                    else
                        python3 "$here/pair.py" $kind $tr $size "${SECS:-3}"
                    fi | sed "s/^/round $r /"
                done
            done
        done
    done
done
