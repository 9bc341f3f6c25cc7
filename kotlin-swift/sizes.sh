#!/bin/bash
# The release library's size for the host target under the profile settings docs/MOBILE.md
# compares, each build in a target directory of its own (a few minutes each on 2 cores):
#   kotlin-swift/sizes.sh            prints one line per setting: as built, stripped, gzip -9
set -eu
cd "$(dirname "$0")/.."
base=${CARGO_TARGET_DIR:-target}
run() {
    name=$1; shift
    dir=$base/size-$name
    env "$@" CARGO_TARGET_DIR="$dir" cargo build -q --locked --release -p weida-uniffi
    so=$dir/release/libweida_uniffi.so
    strip -o "$dir/stripped.so" "$so"
    echo "$name: $(stat -c %s "$so") bytes as built, $(stat -c %s "$dir/stripped.so") stripped, $(gzip -9 -c "$dir/stripped.so" | wc -c) gzip -9 of stripped"
}
run release
run lto CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
run lto-z CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_OPT_LEVEL=z
run lto-z-abort CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_OPT_LEVEL=z CARGO_PROFILE_RELEASE_PANIC=abort
