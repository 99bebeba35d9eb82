#!/bin/sh
# The installed C++ package: `cmake --install` into a fresh prefix puts the
# headers, the libraries and tilejitConfig.cmake (+ version file) there, and
# tests/check/consumer, a project outside the tree, finds it with
# find_package(tilejit), builds and loads a checkpoint through it.
# Usage: install.sh BUILD_DIR CMAKE GENERATOR CXX CHECKPOINT_DIR
set -eu
build=$1 cmake=$2 generator=$3 cxx=$4 checkpoint=$5
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { cat "$work/log" 2>/dev/null; echo "install.sh: $*" >&2; exit 1; }
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/log" 2>&1 || fail "cmake --install failed"
for f in lib/cmake/tilejit/tilejitConfig.cmake lib/cmake/tilejit/tilejitConfigVersion.cmake \
    lib/cmake/tilejit/tilejitTargets.cmake lib/libTilejitModels.a lib/libTilejitBuilder.a \
    include/tilejit/models/nemotron_h/NemotronH.h include/tilejit/runtime/Jit.h \
    include/tilejit/Dialect/Tile/IR/TileOps.h.inc; do
  [ -f "$work/prefix/$f" ] || fail "not installed: $f"
done
"$cmake" -S "$here/consumer" -B "$work/consumer" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/log" 2>&1 ||
  fail "configuring the consumer with find_package(tilejit) failed"
"$cmake" --build "$work/consumer" >"$work/log" 2>&1 || fail "building the consumer failed"
out=$("$work/consumer/consumer" "$checkpoint") || fail "the consumer failed: $out"
echo "$out"
[ "$out" = "Mamba layers: 0 2 4 7 9" ] || fail "expected 'Mamba layers: 0 2 4 7 9'"
